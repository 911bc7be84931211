//! Machines written in other formats, converted to the machine format.
//!
//! `scxml` reads W3C SCXML documents: everything SCXML can say that the
//! machine format can say too, and an error at the element for the rest;
//! or, for the linter, the document as written, with the rest opaque.
//! `xstate` reads XState machines where they live, in JavaScript,
//! TypeScript and JSON: what has a meaning in the machine format is
//! translated, the rest is opaque (host guards and actions) with a note.

pub mod scxml;
#[cfg(test)]
mod tests;
mod xml;
pub mod xstate;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::Machine;
use crate::span::Span;

pub use scxml::{import, import_as_written};

/// Whether a file's name says it is an SCXML document (`*.scxml`).
pub fn is_scxml(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "scxml")
}

/// Imports an SCXML document and checks the machine it makes, as a machine
/// file is checked.
///
/// ```
/// let machine = idemchart::import::load_scxml(
///     r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="a">
///          <state id="a"><transition event="go" target="b"/></state>
///          <final id="b"/>
///        </scxml>"#,
/// ).unwrap();
/// assert!(machine.find_path("b").is_some());
/// ```
pub fn load_scxml(text: &str) -> Result<Machine, Vec<Diagnostic>> {
    crate::syntax::lower(import(text)?)
}

/// Imports an SCXML document as written (`import_as_written`: what the
/// machine format cannot say is opaque, with a note) and checks the
/// machine it makes: the machine or every problem, and the notes.
pub fn load_scxml_as_written(
    file: &crate::span::SourceFile,
) -> (Result<Machine, Vec<Diagnostic>>, Vec<Diagnostic>) {
    let (doc, notes) = import_as_written(file);
    (doc.and_then(crate::syntax::lower), notes)
}

/// A note: what a front-end could not read, and what it made of it (an
/// opaque host guard, action or service), at its place.
pub(crate) fn note(message: String, span: Span) -> Diagnostic {
    Diagnostic {
        code: "S011",
        name: "opaque-code",
        severity: Severity::Note,
        message,
        span,
        labels: Vec::new(),
        help: None,
        witness: Vec::new(),
        verdict: None,
        replay: None,
        fix: None,
    }
}
