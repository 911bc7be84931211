//! Source text → model: the YAML and DSL front-ends, and the lowering that
//! resolves names and checks the machine.

pub mod dsl;
mod file;
mod lower;
pub mod tree;
pub mod yaml;

use std::path::Path;

use crate::diagnostic::{Diagnostic, LoadError};
use crate::model::Machine;
use crate::span::{SourceFile, Span};

pub use file::{LoadFileError, load_file, load_machines, load_path, read};
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

/// Loads a machine file, choosing the syntax by its extension. An XState
/// source must hold exactly one machine here (`load_machines` reads any
/// number); its notes are left out. An SCXML document is imported
/// strictly: the machine runs as it is written.
pub fn load(file: &SourceFile) -> Result<Machine, Vec<Diagnostic>> {
    let path = Path::new(&file.path);
    if crate::import::is_scxml(path) {
        return crate::import::load_scxml(&file.text);
    }
    if crate::import::xstate::SourceKind::of_path(path).is_some() {
        return crate::import::xstate::load(file.clone(), &Default::default()).one_machine();
    }
    match Syntax::of_path(path) {
        Some(syntax) => lower_tree(parse_tree(file, syntax)?, &file.text, syntax),
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

/// Lowers the tree parsed from `text` into the model, with the fixes of
/// its errors written in the file's syntax.
pub fn lower_tree(
    doc: tree::MachineDoc,
    text: &str,
    syntax: Syntax,
) -> Result<Machine, Vec<Diagnostic>> {
    lower::lower(doc).map_err(|mut errors| {
        crate::fix::spell_targets(&mut errors, text, syntax);
        errors
    })
}
