//! The XState front-end on fixtures written as real XState machines
//! (`tests/xstate/fixtures/`): the extracted model (as YAML), the notes and
//! the lint findings of each machine, snapshotted.

use std::path::{Path, PathBuf};

use idemchart::SourceFile;
use idemchart::import::xstate::{self, Settings};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xstate/fixtures")
}

/// The fixture at `name`, its path relative to the repository.
fn read(name: &str) -> SourceFile {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    SourceFile::new(format!("tests/xstate/fixtures/{name}"), text)
}

/// Each machine of a file: its name, version, model as YAML, notes and
/// lint findings, one line each with file:line:col.
fn describe(name: &str) -> String {
    let loaded = xstate::load(read(name), &Settings::default());
    let mut out = String::new();
    let line = |d: &idemchart::diagnostic::Diagnostic, out: &mut String| {
        for (file, found) in loaded.sources.split(vec![d.clone()]) {
            for d in found {
                let (l, c) = file.line_col(d.span.start);
                out.push_str(&format!(
                    "{}:{l}:{c}: {}[{}] {}: {}\n",
                    file.path,
                    d.severity.as_str(),
                    d.code,
                    d.name,
                    d.message
                ));
                if !d.witness.is_empty() {
                    out.push_str(&format!(
                        "    witness: {} (confirmed: {:?})\n",
                        d.witness.join(" → "),
                        d.confirmed
                    ));
                }
            }
        }
    };
    for e in &loaded.errors {
        line(e, &mut out);
    }
    for m in &loaded.machines {
        out.push_str(&format!("== machine {} ({})\n", m.name, m.version.map_or("", |v| v.as_str())));
        for n in &m.notes {
            line(n, &mut out);
        }
        match &m.machine {
            Ok(machine) => {
                out.push_str(&idemchart::syntax::yaml::format(machine));
                out.push_str("-- lint\n");
                for d in idemchart::lint::lint(machine) {
                    line(&d, &mut out);
                }
            }
            Err(errors) => {
                out.push_str("-- does not load\n");
                for e in errors {
                    line(e, &mut out);
                }
            }
        }
    }
    out
}

#[test]
fn scratch() {
    println!("{}", describe("order-partial-charges.mjs"));
    println!("{}", describe("order-charge-ids.mjs"));
}
