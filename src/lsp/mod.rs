//! The language server (`idemchart lsp`) and the editor features under it.
//!
//! The features compute on our own types: an [`Analysis`] of one document's
//! text, byte offsets in, [`Span`]s and [`Edit`]s out, so they are usable
//! and testable without a client. Only `convert` (positions in UTF-8 or
//! UTF-16, diagnostics, edits) and `server` (the main loop and its
//! scheduling) know the protocol's types.
//!
//! Diagnostics are the CLI's: the same loading, the same lints with their
//! fixes, the same levels and suppressions of `idemchart.toml`.

mod code_actions;
mod completion;
mod convert;
mod hover;
mod navigation;
mod server;
mod symbols;
mod transport;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::diagnostic::{Diagnostic, LoadError};
use crate::model::Machine;
use crate::span::{SourceFile, Span};
use crate::syntax::{self, Syntax, tree::MachineDoc};

pub use code_actions::{CodeAction, allow_here, code_actions, fix_all};
pub use completion::{Completion, CompletionKind, complete};
pub use convert::PositionEncoding;
pub use hover::hover;
pub use navigation::{
    DocumentSymbol, SymbolKind, definition, prepare_rename, references, rename, symbols,
};
pub use server::{Options, run, run_stdio};
pub use symbols::{Occurrence, Symbol};

/// What kind of source a document is, which decides the features it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One of our own syntaxes: every feature.
    Machine(Syntax),
    /// An SCXML document: diagnostics, hover and navigation (its names are
    /// the model's), no edits.
    Scxml,
    /// An XState source: diagnostics with their fixes, and `allow`s.
    Xstate,
}

impl Kind {
    /// The kind a file's name says, if the server reads it.
    pub fn of_path(path: &Path) -> Option<Kind> {
        if let Some(syntax) = Syntax::of_path(path) {
            return Some(Kind::Machine(syntax));
        }
        if path.extension().is_some_and(|e| e == "scxml") {
            return Some(Kind::Scxml);
        }
        crate::import::xstate::SourceKind::of_path(path).map(|_| Kind::Xstate)
    }
}

/// One document as the features see it: its text, its tree and model where
/// they could be built, and its diagnostics.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub kind: Kind,
    pub file: SourceFile,
    /// The document tree, when the text parses (names unresolved). Shared
    /// with the analysis of the same text made before its lint ran.
    pub doc: Option<Arc<MachineDoc>>,
    /// The model, when the machine loads; shared as `doc` is.
    pub machine: Option<Arc<Machine>>,
    /// The load errors of a file that does not load, else its findings at
    /// their configured levels (the allowed ones left out), with fixes.
    pub diagnostics: Vec<Diagnostic>,
    /// The lines left out of a YAML text that does not parse (a line being
    /// written), so that `doc` and `machine` are those of the rest of the
    /// text, at its own offsets; empty when the text was read whole. Edits
    /// are not offered from such a tree.
    pub left_out: Vec<Span>,
    /// The places the tree names something, made when first asked; shared
    /// with the analysis of the same tree made before its lint ran.
    pub(crate) occurrences: symbols::OccurrenceIndex,
}

/// Analyses the text of the document at `path` with the levels of
/// `config`: what `idemchart lint` reports for the file, on this text.
/// Another thread stops it by setting `cancel` (a newer edit came): the
/// lint ends at its next check and there is no analysis.
pub fn analyze(
    path: &Path,
    text: String,
    kind: Kind,
    config: &Config,
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Analysis> {
    analyze_in_steps(path, text, kind, config, cancel, |_| {})
}

/// `analyze`, which also hands `parsed` the analysis of the text without
/// its findings (tree, model, no diagnostics) once the machine loaded and
/// before its lint starts: the lint of a large machine takes far longer
/// than its parse, and hover and navigation need only the tree and model.
/// A text that does not load has no such step (nothing slow follows).
pub fn analyze_in_steps(
    path: &Path,
    text: String,
    kind: Kind,
    config: &Config,
    cancel: &std::sync::atomic::AtomicBool,
    parsed: impl FnOnce(Analysis),
) -> Option<Analysis> {
    let file = SourceFile::new(path.display().to_string(), text);
    let options = crate::lint::Options::default();
    // Editors start the server on every YAML, JSON and script file; one
    // that holds no machine (a CI workflow, a compose file, a module that
    // imports nothing from XState) is passed over as `idemchart lint .`
    // passes over it: the server has nothing to say about it.
    let file_kind = match kind {
        Kind::Machine(syntax) => crate::load::FileKind::Machine(syntax),
        Kind::Scxml => crate::load::FileKind::Scxml,
        Kind::Xstate => crate::load::FileKind::Xstate(
            crate::import::xstate::SourceKind::of_path(path)
                .unwrap_or(crate::import::xstate::SourceKind::Script),
        ),
    };
    let mut resolver = crate::load::Resolver::default();
    if crate::load::holds_machine(&file, file_kind, &mut resolver).is_err() {
        return Some(Analysis {
            kind,
            file,
            doc: None,
            machine: None,
            diagnostics: Vec::new(),
            left_out: Vec::new(),
            occurrences: Default::default(),
        });
    }
    // What a front-end reading as written could not read, noted at its place.
    let mut notes: Vec<Diagnostic> = Vec::new();
    let (doc, loaded) = match kind {
        Kind::Machine(syntax) => match syntax::parse_tree(&file, syntax) {
            Ok(doc) => {
                let loaded = syntax::lower_tree(doc.clone(), &file.text, syntax);
                (Some(Arc::new(doc)), loaded)
            }
            Err(errors) => {
                if let Some((doc, left_out)) =
                    tree_without_broken_lines(&file, syntax, &errors, cancel)
                {
                    // Hover and navigation read the rest of the text; the
                    // diagnostics stay the text's own errors.
                    let machine = syntax::lower_tree(doc.clone(), &file.text, syntax)
                        .ok()
                        .map(Arc::new);
                    let mut file = file;
                    file.forget_derived();
                    return Some(Analysis {
                        kind,
                        file,
                        doc: Some(Arc::new(doc)),
                        machine,
                        diagnostics: errors,
                        left_out,
                        occurrences: Default::default(),
                    });
                }
                (None, Err(errors))
            }
        },
        // As `idemchart lint` reads it: as written, what cannot be imported
        // an opaque part with its note.
        Kind::Scxml => {
            let (doc, found) = crate::import::scxml::import_as_written(&file);
            notes = found;
            match doc {
                Ok(doc) => (Some(Arc::new(doc.clone())), syntax::lower(doc)),
                Err(errors) => (None, Err(errors)),
            }
        }
        Kind::Xstate => {
            let loaded = crate::import::xstate::load(file.clone(), &config.xstate);
            let diagnostics = xstate_diagnostics(&file, &loaded, config, &options, cancel)?;
            // A machine all in the file is kept, for the `allow` actions
            // that place themselves by its states.
            let machine = match crate::lint::fixable_in_place(&loaded) {
                true => loaded
                    .machines
                    .into_iter()
                    .next()
                    .and_then(|m| m.machine.ok())
                    .map(Arc::new),
                false => None,
            };
            return Some(Analysis {
                kind,
                file,
                doc: None,
                machine,
                diagnostics,
                left_out: Vec::new(),
                occurrences: Default::default(),
            });
        }
    };
    // The analysis handed on before the lint and the one after share one
    // tree and model, so they share its occurrences too.
    let occurrences = symbols::OccurrenceIndex::default();
    let (machine, diagnostics) = match loaded {
        Ok(machine) => {
            let machine = Arc::new(machine);
            // The copy of the file handed on derives nothing of its own:
            // what the lint derives (the YAML node tree its fixes read)
            // stays with this one, which forgets it below.
            let mut copy = file.clone();
            copy.forget_derived();
            parsed(Analysis {
                kind,
                file: copy,
                doc: doc.clone(),
                machine: Some(Arc::clone(&machine)),
                diagnostics: Vec::new(),
                left_out: Vec::new(),
                occurrences: occurrences.clone(),
            });
            // An SCXML document has no fix editor: its findings come
            // without fixes, as in `idemchart lint`.
            let findings =
                crate::lint::lint_source_shared(&machine, &file, &options, Some(cancel))?;
            notes.extend(findings);
            let diagnostics = config.apply(path, notes);
            (Some(machine), diagnostics)
        }
        Err(mut errors) => {
            errors.extend(notes);
            (None, errors)
        }
    };
    // The YAML node tree the lint's fixes read is not kept with the open
    // document: a later code action parses it again.
    let mut file = file;
    file.forget_derived();
    Some(Analysis {
        kind,
        file,
        doc,
        machine,
        diagnostics,
        left_out: Vec::new(),
        occurrences,
    })
}

/// The tree of a YAML text that does not parse, read with one line blanked
/// out: the line of its first error, else one of the few lines above it
/// with something on them, nearest first (a flow mapping left open breaks
/// the parse only where the text ends), else the error's line with the one
/// above. Blanks are spaces, byte for byte, so every other line keeps its
/// offsets: the tree's places are the text's own. `None` when none of these
/// parses, or `cancel` was set.
fn tree_without_broken_lines(
    file: &SourceFile,
    syntax: Syntax,
    errors: &[Diagnostic],
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<(MachineDoc, Vec<Span>)> {
    /// How many lines above the error are tried.
    const ABOVE: usize = 8;
    if syntax != Syntax::Yaml {
        return None;
    }
    let text = &file.text;
    let line_at = |at: usize| {
        let start = crate::syntax::edit::line_start(text, at);
        Span::new(start, crate::syntax::edit::line_end(text, start))
    };
    let error = line_at((errors.first()?.span.start as usize).min(text.len()));
    let mut above = Vec::new();
    let mut start = error.start as usize;
    while above.len() < ABOVE && start > 0 {
        let line = line_at(start - 1);
        start = line.start as usize;
        if !text[line.range()].trim().is_empty() {
            above.push(line);
        }
    }
    let mut tries: Vec<Vec<Span>> = vec![vec![error]];
    tries.extend(above.iter().map(|&line| vec![line]));
    tries.extend(above.first().map(|&line| vec![line, error]));
    // Each try parses the whole text: a newer edit stops the tries.
    let mut tries = tries
        .into_iter()
        .take_while(|_| !cancel.load(std::sync::atomic::Ordering::Relaxed));
    tries.find_map(|lines| {
        let mut blanked = text.clone();
        for line in &lines {
            blanked.replace_range(line.range(), &" ".repeat(line.range().len()));
        }
        let candidate = SourceFile::new(file.path.clone(), blanked);
        syntax::parse_tree(&candidate, syntax)
            .ok()
            .map(|doc| (doc, lines))
    })
}

/// The diagnostics of an XState source that fall in the file itself (a
/// machine spread over modules reports in each of them; only this one is
/// open here), with their fixes, as `idemchart lint` gives them.
fn xstate_diagnostics(
    file: &SourceFile,
    loaded: &crate::import::xstate::Loaded,
    config: &Config,
    options: &crate::lint::Options,
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Vec<Diagnostic>> {
    let mut by_file = crate::lint::lint_loaded(loaded, options, Some(cancel))?;
    if loaded.machines.is_empty() && loaded.errors.is_empty() && loaded.is_machine_file {
        by_file[0].1.push(
            LoadError::InvalidValue {
                message: "the file holds no machine".into(),
            }
            .at(Span::default(), []),
        );
    }
    Some(
        by_file
            .into_iter()
            .find(|(f, _)| f.path == file.path)
            .map(|(f, found)| config.apply(Path::new(&f.path), found))
            .unwrap_or_default(),
    )
}

/// The configuration that governs the file at `path`: the nearest
/// `idemchart.toml` in its directory or above, else the defaults; a file
/// that does not parse is an error with its message.
pub fn config_for(path: &Path) -> Result<Config, String> {
    let registry = crate::config::registry();
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    match Config::discover(&dir) {
        Some(found) => Config::load(&dir.join(found), &registry),
        None => Ok(Config::defaults(dir)),
    }
}
