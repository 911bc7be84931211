//! XState machines where they live: `createMachine` calls in JavaScript and
//! TypeScript sources, and machine configs in JSON, read into the document
//! tree that every front-end produces and lowered through the one
//! validation, with `semantics: xstate` so that the replay runs them as
//! XState runs them.
//!
//! What is read and what becomes opaque is `docs/xstate.md`; in short:
//!
//! - `scope.rs`: the files: parsing with oxc, `const` bindings, spreads and
//!   imports (followed to any depth), the `// idemchart-allow` comments,
//!   and the search for machine calls.
//! - `modules.rs`: which file an import names (relative, tsconfig `paths`
//!   and `baseUrl`, a package of the workspace), for the loader too.
//! - `eval.rs`: the partial evaluator of the repository's own helper calls
//!   and computed keys.
//! - `config.rs`: a machine config (states, transitions, invocations,
//!   context, the `meta.idemchart` facts) into a `MachineDoc`.
//! - `translate/`: guards, actions and values written as functions, into
//!   expressions where the meaning is exact (with the idioms assigns are
//!   made of: merges, sets, appends, removals, branches, inlined helpers);
//!   anything else is a host guard or host action (the linter's unknown),
//!   with a note at its place.
//! - `sources.rs`: the files of one load in one offset space, so that every
//!   span names its file.
//! - `facts.rs`: the idempotency facts of `meta.idemchart` and
//!   `idemchart.toml`, and whether the repository declares any.
//! - `types.rs`: the events' payload types where TypeScript (or a JSON
//!   schema) states them, declared as events without ids.
//!
//! A file that does not parse is an error at its line and column; anything
//! inside a machine that cannot be read is a note and an opaque part, never
//! an error for the whole file.

mod config;
pub mod edit;
mod eval;
pub mod facts;
pub(crate) mod modules;
mod scope;
mod sources;
mod translate;
mod types;

use std::collections::HashMap;
use std::path::Path;

pub use facts::Facts;
pub use sources::Sources;

use crate::diagnostic::Diagnostic;
use crate::model::Machine;
use crate::span::{SourceFile, Span};
use crate::syntax::tree::MachineDoc;

/// The XState major version a machine is written for, where the two read
/// differently (transitions external by default in v4, `cond`, the
/// arguments of implementations, the names of completion events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    V4,
    V5,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V4 => "v4",
            Version::V5 => "v5",
        }
    }
}

/// What `idemchart.toml` says about XState machines: the version where the
/// API used does not tell it, and idempotency facts by machine id.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The version of every machine whose own settings name none.
    pub version: Option<Version>,
    pub machines: HashMap<String, MachineSettings>,
}

/// The settings of one machine, by its id (`[machines.ID]`).
#[derive(Clone, Debug, Default)]
pub struct MachineSettings {
    pub xstate: Option<Version>,
    pub facts: Facts,
}

/// The kinds of files this front-end reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// `.ts .tsx .mts .cts .js .jsx .mjs .cjs`
    Script,
    /// `.json`
    Json,
}

/// The extensions of scripts, in the order in which TypeScript tries them
/// for a module name written without one.
pub(crate) const SCRIPT_EXTENSIONS: [&str; 8] =
    ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"];

impl SourceKind {
    /// The kind a file's extension names, if any.
    pub fn of_path(path: &Path) -> Option<SourceKind> {
        match path.extension()?.to_str()? {
            "json" => Some(SourceKind::Json),
            e if SCRIPT_EXTENSIONS.contains(&e) => Some(SourceKind::Script),
            _ => None,
        }
    }
}

/// Whether a file's text may hold a machine, by a look at its bytes that
/// costs far less than parsing: a script that never writes `Machine` calls
/// no `createMachine`, `Machine` or `createTestMachine`, and a JSON file
/// without `"states"` is no machine config. Directory searches skip the rest.
pub fn may_hold_machine(text: &str, kind: SourceKind) -> bool {
    match kind {
        SourceKind::Script => text.contains("Machine"),
        SourceKind::Json => text.contains("\"states\""),
    }
}

/// One machine found in a file.
#[derive(Debug)]
pub struct LoadedMachine {
    /// Its id, else the variable it is assigned to, else `FILE@LINE:COL`.
    pub name: String,
    /// The XState version it was read as; `None` for our own formats.
    pub version: Option<Version>,
    /// The model, or every load error; spans in the offset space of
    /// `Loaded::sources`.
    pub machine: Result<Machine, Vec<Diagnostic>>,
    /// What was left opaque, and why (severity note).
    pub notes: Vec<Diagnostic>,
    /// The config's object literal, where fixes add entries; `None` for our
    /// own formats and a config not written in place in the file.
    pub anchors: Option<edit::ObjectAt>,
}

/// Everything one file gave: its machines, lowered (`Loaded`) or as
/// documents (`Extracted`).
#[derive(Debug)]
pub struct FileRead<M> {
    pub sources: Sources,
    pub machines: Vec<M>,
    /// Problems of the file itself (syntax errors): no machine was read.
    pub errors: Vec<Diagnostic>,
    /// Whether the file holds something to lint: false for a script
    /// without a machine call or JSON that is not a machine config, which a
    /// directory search skips silently.
    pub is_machine_file: bool,
}

pub type Loaded = FileRead<LoadedMachine>;

impl Loaded {
    /// The file's one machine, or its errors; a file with no machine or
    /// several is an error here.
    pub fn one_machine(self) -> Result<Machine, Vec<Diagnostic>> {
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let count = self.machines.len();
        let mut machines = self.machines.into_iter();
        match (machines.next(), count) {
            (Some(only), 1) => only.machine,
            _ => Err(vec![
                crate::diagnostic::LoadError::InvalidValue {
                    message: format!(
                        "the file holds {count} XState machines where one was expected"
                    ),
                }
                .at(Span::default(), []),
            ]),
        }
    }
}

/// A machine's name, version, document before lowering, and notes.
pub type Extracted = FileRead<(String, Version, MachineDoc, Vec<Diagnostic>)>;

/// Reads every machine of a file and lowers each one. A file whose text
/// shows no machine (`may_hold_machine`) is not parsed at all.
pub fn load(file: SourceFile, settings: &Settings) -> Loaded {
    load_with(file, settings, &mut Default::default())
}

/// `load` with the run's module resolver, which keeps what it read of the
/// repository's tsconfigs and workspaces for the next file: a run over a
/// monorepo reads each package manifest once, not once a file.
pub(crate) fn load_with(
    file: SourceFile,
    settings: &Settings,
    modules: &mut modules::Modules,
) -> Loaded {
    read(file, modules, |reader| reader.machines(settings))
}

/// Reads every machine of a file into documents, without lowering them,
/// for the tests and for tools.
pub fn extract(file: SourceFile, settings: &Settings) -> Extracted {
    read(file, &mut Default::default(), |reader| {
        reader.documents(settings)
    })
}

fn read<M>(
    file: SourceFile,
    modules: &mut modules::Modules,
    machines: impl FnOnce(&mut scope::Reader) -> Vec<M>,
) -> FileRead<M> {
    let kind = SourceKind::of_path(Path::new(&file.path)).unwrap_or(SourceKind::Script);
    if !may_hold_machine(&file.text, kind) {
        return FileRead {
            sources: Sources::new(file),
            machines: Vec::new(),
            errors: Vec::new(),
            is_machine_file: false,
        };
    }
    // oxc's parser and the translation recurse per level of the files
    // they read, which their limits bound; the stack has room for those.
    crate::stack::with_stack(crate::stack::for_scripts(scope::MAX_SCRIPT_DEPTH), || {
        let allocator = oxc_allocator::Allocator::default();
        let mut reader =
            scope::Reader::with_modules(&allocator, file, kind, std::mem::take(modules));
        let machines = machines(&mut reader);
        let ((sources, errors, is_machine_file), resolver) = reader.finish_with_modules();
        *modules = resolver;
        FileRead {
            sources,
            machines,
            errors,
            is_machine_file,
        }
    })
}

pub(crate) use super::note;
pub(crate) use translate::{DataModel, JsError, View, scxml_fold, scxml_to_cel, scxml_to_json};

#[cfg(test)]
mod tests;
