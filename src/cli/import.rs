//! `idemchart import FILE.scxml --to yaml|dsl`: converts an SCXML document to
//! a machine file, printed in canonical form. As written (the default), what
//! has no counterpart is opaque, with a note; with `--strict`, it is an error
//! at its element, and nothing is printed.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use idemchart::syntax;

use super::{CommandResult, Format, read};

pub fn import(file: &Path, to: Format, machine: Option<&str>, strict: bool) -> CommandResult {
    let print = |machine: &idemchart::Machine| match to {
        Format::Yaml => syntax::yaml::format(machine),
        Format::Dsl => syntax::dsl::format(machine),
    };
    if idemchart::import::xstate::SourceKind::of_path(file).is_some() {
        return super::with_machine(file, machine, print);
    }
    // Any other file is taken for SCXML, whatever its name (`*.xml`).
    let source = read(file)?;
    let (machine, notes) = if strict {
        (idemchart::import::load_scxml(&source.text), Vec::new())
    } else {
        idemchart::import::load_scxml_as_written(&source)
    };
    let color = std::io::stderr().is_terminal();
    let report = |diagnostics: &[idemchart::diagnostic::Diagnostic]| {
        for diagnostic in diagnostics {
            super::errln(format_args!(
                "{}\n",
                idemchart::report::render(diagnostic, &source, color)
            ));
        }
    };
    report(&notes);
    match machine {
        Ok(machine) => {
            super::out(print(&machine))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            report(&errors);
            Ok(ExitCode::from(1))
        }
    }
}
