//! Machines written in other formats, converted to the machine format.
//!
//! `scxml` reads W3C SCXML documents: everything SCXML can say that the
//! machine format can say too, and an error at the element for the rest.
//! `xstate` reads XState machines where they live, in JavaScript,
//! TypeScript and JSON: what has a meaning in the machine format is
//! translated, the rest is opaque (host guards and actions) with a note.

mod js;
pub mod scxml;
#[cfg(test)]
mod tests;
mod xml;
pub mod xstate;

use crate::diagnostic::Diagnostic;
use crate::model::Machine;

pub use scxml::import;

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
