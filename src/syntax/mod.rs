//! Source text → model: the YAML and DSL front-ends, their fix editors, and
//! the lowering that resolves names and checks the machine. Which front-end
//! reads a file (these, SCXML's or XState's) is `crate::load`'s to decide.

pub mod comments;
pub mod dsl;
pub(crate) mod edit;
mod lower;
pub mod tree;
pub mod yaml;

use std::path::Path;

use crate::diagnostic::Diagnostic;
use crate::model::Machine;
use crate::span::SourceFile;

pub use lower::lower;

/// The two surface syntaxes of a machine file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// `*.yaml`, `*.yml`
    Yaml,
    /// `*.chart`
    Dsl,
}

impl Syntax {
    /// The syntax a file's extension names, if any.
    pub fn of_path(path: &Path) -> Option<Syntax> {
        match path.extension()?.to_str()? {
            "yaml" | "yml" => Some(Syntax::Yaml),
            "chart" => Some(Syntax::Dsl),
            _ => None,
        }
    }
}

/// Parses and checks machine text in the given syntax.
pub fn parse(text: &str, syntax: Syntax) -> Result<Machine, Vec<Diagnostic>> {
    let doc = match syntax {
        Syntax::Yaml => yaml::parse(text),
        Syntax::Dsl => dsl::parse(text),
    }?;
    lower_tree(doc, text, syntax)
}

/// Parses a machine file's text into its document tree, names unresolved.
/// A YAML file keeps its node tree, which the fix editor of the same file
/// reads instead of parsing the text again.
pub fn parse_tree(file: &SourceFile, syntax: Syntax) -> Result<tree::MachineDoc, Vec<Diagnostic>> {
    match syntax {
        Syntax::Yaml => yaml::parse_file(file),
        Syntax::Dsl => dsl::parse(&file.text),
    }
}

/// The comments of a machine file in `syntax`, attached to the nodes of
/// `machine`, the machine read from it, for the printers
/// ([`yaml::format_with`], [`dsl::format_with`]).
pub fn comments(file: &SourceFile, syntax: Syntax, machine: &Machine) -> comments::Comments {
    let (found, keys) = match syntax {
        Syntax::Yaml => yaml::comments::find(file),
        Syntax::Dsl => dsl::comments(&file.text),
    };
    comments::Comments::attach(&file.text, found, keys, machine)
}

/// The text of `machine` in `syntax`, with `comments` where they belong.
pub fn format(machine: &Machine, syntax: Syntax, comments: &comments::Comments) -> String {
    match syntax {
        Syntax::Yaml => yaml::format_with(machine, comments),
        Syntax::Dsl => dsl::format_with(machine, comments),
    }
}

/// Lowers the tree parsed from `text` into the model, with the fixes of
/// its errors written in the file's syntax.
pub fn lower_tree(
    doc: tree::MachineDoc,
    text: &str,
    syntax: Syntax,
) -> Result<Machine, Vec<Diagnostic>> {
    lower::lower(doc).map_err(|mut errors| {
        spell_targets(&mut errors, text, syntax);
        errors
    })
}

/// Writes the suggested targets of the unknown-target fixes that lowering
/// made (lowering knows no syntax, so it suggests the bare name) in the
/// file's syntax, quoted where needed.
fn spell_targets(diagnostics: &mut [Diagnostic], text: &str, syntax: Syntax) {
    for d in diagnostics {
        let Some(fix) = d.fix.as_mut() else {
            continue;
        };
        for edit in &mut fix.edits {
            *edit = match syntax {
                Syntax::Yaml => yaml::edit::rename(text, edit.span, &edit.replacement),
                Syntax::Dsl => dsl::edit::rename_target(edit.span, &edit.replacement),
            };
        }
    }
}
