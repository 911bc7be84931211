//! One loader above the formats: which front-end reads a file (ours,
//! `syntax::{yaml, dsl}`; SCXML's and XState's, `import::`), whether a file
//! holds a machine at all, and the walk of the directories a run is given.
//! The CLI and the language server read files through here, so that both
//! see the same machines and pass over the same other files.
//!
//! - `discover.rs`: the walk (the `ignore` crate: `.gitignore`, hidden
//!   files, `node_modules/`), and the `include`/`exclude` filter.
//! - `shape.rs`: whether a YAML or JSON text has a machine's top level.
//! - `imports.rs`: whether a script imports XState, directly or through a
//!   module of the repository that re-exports it.
//! - `file.rs`: reading a file as text, and loading one machine file.

mod discover;
mod file;
mod imports;
mod shape;

use std::path::Path;

use crate::diagnostic::{Diagnostic, LoadError};
use crate::import::xstate::{self, Loaded, LoadedMachine, Settings, SourceKind, Sources};
use crate::model::Machine;
use crate::span::{SourceFile, Span};
use crate::syntax::{self, Syntax};

pub use discover::{Candidate, WalkError, discover};
pub use file::{LoadFileError, load_file, load_path, read};
pub use imports::Resolver;

/// The front-end that reads a file, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// One of our own syntaxes: `*.yaml`, `*.yml`, `*.chart`.
    Machine(Syntax),
    /// An SCXML document, `*.scxml`.
    Scxml,
    /// A JavaScript, TypeScript or JSON source, for XState.
    Xstate(SourceKind),
}

impl FileKind {
    /// The kind a file's extension names, if any.
    pub fn of_path(path: &Path) -> Option<FileKind> {
        if let Some(syntax) = Syntax::of_path(path) {
            return Some(FileKind::Machine(syntax));
        }
        if crate::import::is_scxml(path) {
            return Some(FileKind::Scxml);
        }
        SourceKind::of_path(path).map(FileKind::Xstate)
    }
}

/// Why a file holds no machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoMachine {
    #[error("its top level has no `machine:` or `states:` key")]
    NotMachineYaml,
    #[error("its top level has no `states` key (an XState machine config) or `machine` key")]
    NotMachineJson,
    #[error("a TypeScript declaration file (`.d.ts`) holds types only")]
    Declarations,
    #[error(
        "it imports nothing from `xstate` or `@xstate/*` (a `createMachine` of another library is not XState's)"
    )]
    NoXstateImport,
    #[error(
        "no call of `createMachine`, `setup(...).createMachine`, `Machine` or `createTestMachine`, and no machine config"
    )]
    NoMachineCall,
}

impl NoMachine {
    /// The error of a file named on the command line that holds no machine,
    /// at its start.
    pub fn diagnostic(self) -> Diagnostic {
        LoadError::InvalidValue {
            message: format!("the file holds no machine: {self}"),
        }
        .at(Span::default(), [])
    }
}

/// Whether `file` (of kind `kind`) may hold a machine, by a look at its
/// text: a YAML or JSON file has a machine's top level, a script is no
/// declaration file, writes a machine call and imports XState (`resolver`
/// follows its imports). A `.chart` or `.scxml` name is a promise, kept or
/// broken with errors. What passes is read by its front-end, which may
/// still find no machine in it (`NoMachineCall`).
pub fn holds_machine(
    file: &SourceFile,
    kind: FileKind,
    resolver: &mut Resolver,
) -> Result<(), NoMachine> {
    let path = Path::new(&file.path);
    match kind {
        FileKind::Machine(Syntax::Yaml) => shape::yaml_has_machine_shape(&file.text)
            .then_some(())
            .ok_or(NoMachine::NotMachineYaml),
        FileKind::Machine(Syntax::Dsl) | FileKind::Scxml => Ok(()),
        FileKind::Xstate(SourceKind::Json) => shape::json_has_machine_shape(&file.text)
            .then_some(())
            .ok_or(NoMachine::NotMachineJson),
        FileKind::Xstate(SourceKind::Script) => {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if [".d.ts", ".d.mts", ".d.cts"]
                .iter()
                .any(|d| name.ends_with(d))
            {
                return Err(NoMachine::Declarations);
            }
            if !xstate::may_hold_machine(&file.text, SourceKind::Script) {
                return Err(NoMachine::NoMachineCall);
            }
            resolver
                .imports_xstate(path, &file.text)
                .then_some(())
                .ok_or(NoMachine::NoXstateImport)
        }
    }
}

/// Loads a machine file, choosing the front-end by its name. An XState
/// source must hold exactly one machine here (`load_machines` reads any
/// number); its notes are left out. An SCXML document is imported
/// strictly: the machine runs as it is written.
pub fn load(file: &SourceFile) -> Result<Machine, Vec<Diagnostic>> {
    match FileKind::of_path(Path::new(&file.path)) {
        Some(FileKind::Scxml) => crate::import::load_scxml(&file.text),
        Some(FileKind::Xstate(_)) => xstate::load(file.clone(), &Default::default()).one_machine(),
        Some(FileKind::Machine(syntax)) => {
            syntax::lower_tree(syntax::parse_tree(file, syntax)?, &file.text, syntax)
        }
        None => Err(vec![
            LoadError::InvalidValue {
                message: "unknown kind of machine file: name it *.yaml, *.yml or *.chart, an \
                          SCXML document (*.scxml) or an XState source (*.ts, *.js, *.json, ...)"
                    .into(),
            }
            .at(Span::default(), []),
        ]),
    }
}

/// Reads every machine of a file of kind `kind`: a YAML, DSL or SCXML file
/// holds one (an SCXML document read as written, with notes), an XState
/// source any number, read with the XState settings of `idemchart.toml`.
pub fn load_text(file: SourceFile, kind: FileKind, settings: &Settings) -> Loaded {
    load_text_with(file, kind, settings, &mut Default::default())
}

/// `load_text` with the run's module resolver (`xstate::load_with`).
fn load_text_with(
    file: SourceFile,
    kind: FileKind,
    settings: &Settings,
    modules: &mut crate::import::xstate::modules::Modules,
) -> Loaded {
    if let FileKind::Xstate(_) = kind {
        return xstate::load_with(file, settings, modules);
    }
    // An SCXML document is read as written, its opaque parts noted.
    let (machine, notes) = match kind {
        FileKind::Scxml => crate::import::load_scxml_as_written(&file),
        _ => (load(&file), Vec::new()),
    };
    one_machine(file, machine, notes)
}

/// The `Loaded` of a file of one machine (or of its load errors).
fn one_machine(
    file: SourceFile,
    machine: Result<Machine, Vec<Diagnostic>>,
    notes: Vec<Diagnostic>,
) -> Loaded {
    let name = match &machine {
        Ok(m) => m.name.clone(),
        Err(_) => Path::new(&file.path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    Loaded {
        sources: Sources::new(file),
        machines: vec![LoadedMachine {
            name,
            version: None,
            machine,
            notes,
            anchors: None,
        }],
        errors: Vec::new(),
        is_machine_file: true,
    }
}

/// Reads a file and every machine in it (`load_text`), or why it holds
/// none (`holds_machine`, or a script or JSON file in which the XState
/// front-end found no machine). A file of no kind the loader reads is
/// loaded as `load` loads it, with its error. Bytes that are not UTF-8 are
/// an error in a file that holds a machine; only a file that cannot be
/// read at all is an I/O error.
pub fn load_machines(
    path: &Path,
    settings: &Settings,
    resolver: &mut Resolver,
) -> std::io::Result<Result<Loaded, NoMachine>> {
    let (file, not_utf8) = match read(path)? {
        Ok(file) => (file, None),
        Err((file, not_utf8)) => (file, Some(not_utf8)),
    };
    let Some(kind) = FileKind::of_path(path) else {
        // `load` says what kinds of files there are.
        let machine = load(&file);
        return Ok(Ok(one_machine(file, machine, Vec::new())));
    };
    if let Err(none) = holds_machine(&file, kind, resolver) {
        return Ok(Err(none));
    }
    if let Some(not_utf8) = not_utf8 {
        return Ok(Ok(Loaded {
            sources: Sources::new(file),
            machines: Vec::new(),
            errors: vec![not_utf8],
            is_machine_file: true,
        }));
    }
    let loaded = load_text_with(file, kind, settings, resolver.modules());
    if !loaded.is_machine_file || (loaded.machines.is_empty() && loaded.errors.is_empty()) {
        return Ok(Err(NoMachine::NoMachineCall));
    }
    Ok(Ok(loaded))
}

/// Reads every machine of a file a run is to read (`load_machines`);
/// `None` for a file a directory walk found that holds no machine. A file
/// named on the command line that holds none is an error in it, which says
/// why (`NoMachine::diagnostic`).
pub fn load_candidate(
    candidate: &Candidate,
    settings: &Settings,
    resolver: &mut Resolver,
) -> std::io::Result<Option<Loaded>> {
    match load_machines(&candidate.path, settings, resolver)? {
        Ok(loaded) => Ok(Some(loaded)),
        Err(_) if !candidate.named => Ok(None),
        Err(none) => {
            let (Ok(file) | Err((file, _))) = read(&candidate.path)?;
            Ok(Some(Loaded {
                sources: Sources::new(file),
                machines: Vec::new(),
                errors: vec![none.diagnostic()],
                is_machine_file: true,
            }))
        }
    }
}
