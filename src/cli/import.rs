//! `idemchart import FILE.scxml --to yaml|dsl`: converts an SCXML document to
//! a machine file, printed in canonical form; what cannot be converted is
//! reported at its element, and nothing is printed.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use idemchart::syntax;

use super::{CommandResult, Format, read};

pub fn import(file: &Path, to: Format, machine: Option<&str>) -> CommandResult {
    if idemchart::import::xstate::SourceKind::of_path(file).is_some() {
        return super::with_machine(file, machine, |machine| match to {
            Format::Yaml => syntax::yaml::format(machine),
            Format::Dsl => syntax::dsl::format(machine),
        });
    }
    let source = read(file)?;
    match idemchart::import::load_scxml(&source.text) {
        Ok(machine) => {
            print!(
                "{}",
                match to {
                    Format::Yaml => syntax::yaml::format(&machine),
                    Format::Dsl => syntax::dsl::format(&machine),
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            let color = std::io::stderr().is_terminal();
            for diagnostic in &diagnostics {
                eprintln!(
                    "{}\n",
                    idemchart::report::render(diagnostic, &source, color)
                );
            }
            Ok(ExitCode::from(1))
        }
    }
}
