//! Linting the machines of a file read as written (an XState source, an
//! SCXML document): each machine's findings with its notes, and the fix
//! engine's passes over an XState source of one machine. The CLI and the
//! language server both lint these files through here.

use std::sync::atomic::AtomicBool;

use crate::diagnostic::Diagnostic;
use crate::fix::{self, Outcome};
use crate::import::xstate::{self, Loaded, Settings};
use crate::span::SourceFile;

use super::Options;

/// Whether the fix engine may edit the file `loaded` was read from: it
/// holds one machine, read without errors and without following imports,
/// so that every finding lies in the file's own text.
pub fn fixable_in_place(loaded: &Loaded) -> bool {
    loaded.sources.files().count() == 1 && loaded.errors.is_empty() && loaded.machines.len() == 1
}

/// The file's load errors, and each machine's notes and findings (or its
/// load errors), sorted out by the file they fall in (a machine spread
/// over sibling modules reports in each of them). A machine all in the
/// file is linted with its text, so its findings carry their fixes.
/// Levels are the caller's to apply, per file. `None` when `cancel` was set
/// during the run.
pub fn lint_loaded(
    loaded: &Loaded,
    options: &Options,
    cancel: Option<&AtomicBool>,
) -> Option<Vec<(SourceFile, Vec<Diagnostic>)>> {
    let in_one_file = loaded.sources.files().count() == 1;
    let source = in_one_file.then(|| loaded.sources.main());
    let mut diagnostics = loaded.errors.clone();
    for machine in &loaded.machines {
        diagnostics.extend(machine.notes.iter().cloned());
        match &machine.machine {
            Ok(model) => {
                // The editor of a file of one machine, from the places its
                // reader found (as `fix::editor` would, reading it again).
                let editor = match (source, &loaded.machines[..]) {
                    (Some(file), [one]) => one
                        .anchors
                        .clone()
                        .and_then(|config| fix::xstate_editor(file, config)),
                    _ => None,
                };
                let (found, _) = super::run_with(model, source, Some(editor), options, cancel)?;
                diagnostics.extend(found)
            }
            Err(errors) => diagnostics.extend(errors.iter().cloned()),
        }
    }
    Some(loaded.sources.split(diagnostics))
}

/// `fix::fix_file` for an XState source of one machine
/// ([`fixable_in_place`]), read with `settings`: each pass lints the
/// machine with its notes, and `levels` applies the levels in force to
/// what that gives.
pub fn fix_xstate(
    file: &SourceFile,
    settings: &Settings,
    unsafe_fixes: bool,
    options: &Options,
    levels: impl Fn(Vec<Diagnostic>) -> Vec<Diagnostic>,
) -> Outcome {
    let read = |f: &SourceFile| xstate::load(f.clone(), settings);
    fix::fix_file_with(
        file,
        unsafe_fixes,
        |f| read(f).one_machine(),
        |f, machine| {
            let mut found: Vec<_> = read(f).machines.into_iter().flat_map(|m| m.notes).collect();
            found.extend(super::lint_source(machine, f, options));
            levels(found)
        },
    )
}
