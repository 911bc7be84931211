//! Command-line interface: argument parsing and the subcommands.
//!
//! Exit codes: 0 when nothing is at error level, 1 when something is, 2 when the
//! command itself could not run (usage, unreadable path).

mod apply;
mod import;
mod lint;
mod run;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use idemchart::diagnostic::Diagnostic;
use idemchart::syntax::{self, Syntax};
use idemchart::{Machine, Severity, SourceFile};

#[derive(Parser)]
#[command(
    name = "idemchart",
    version,
    about = "Statecharts for backends where every event may arrive twice"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load machine files and report every load error (syntax, names, expressions).
    Check {
        /// Files or directories (directories are searched for *.yaml, *.yml and *.chart).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Colour the output: auto (on a terminal), always or never.
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
    },
    /// Print a machine in canonical form, in either syntax.
    Fmt {
        /// The syntax to print.
        #[arg(long, value_enum)]
        to: Format,
        file: PathBuf,
    },
    /// Draw a machine as a Graphviz DOT or Mermaid diagram.
    Graph {
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
        format: GraphFormat,
        /// Mark the states and transitions of each lint finding, in the
        /// colour of its severity; findings on neither are listed apart.
        #[arg(long)]
        lint: bool,
        /// Draw the witness of the Nth finding (1-based, in the order `lint`
        /// reports them) as numbered steps on the transitions it takes.
        #[arg(long, value_name = "N")]
        witness: Option<usize>,
        file: PathBuf,
    },
    /// Print the JSON Schema of the YAML format (for editor completion).
    Schema,
    /// Convert an SCXML document to a machine file, printed in either syntax.
    Import {
        file: PathBuf,
        /// The syntax to print.
        #[arg(long, value_enum, default_value_t = Format::Yaml)]
        to: Format,
    },
    /// Report idempotency hazards and structural problems, with a witness
    /// event sequence for each hazard.
    Lint(lint::LintArgs),
    /// Print the documentation of a lint, named by code or name.
    Explain {
        /// A lint code (`I001`) or name (`self-accepting-event`).
        lint: String,
    },
    /// Run a machine on JSON-lines events: `{"type": "E", "id": "...", "data": {...}}`,
    /// or `{"advance": "200ms"}` to move the virtual clock.
    Run {
        machine: PathBuf,
        /// The events file, or `-` for standard input.
        #[arg(long)]
        events: PathBuf,
        #[arg(long, value_enum, default_value_t = run::RunFormat::Json)]
        format: run::RunFormat,
        /// Continue from this snapshot instead of starting afresh.
        #[arg(long)]
        snapshot_in: Option<PathBuf>,
        /// Save the final snapshot here.
        #[arg(long)]
        snapshot_out: Option<PathBuf>,
    },
    #[command(flatten)]
    Durable(apply::DurableCommand),
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Yaml,
    Dsl,
}

#[derive(Clone, Copy, ValueEnum)]
enum GraphFormat {
    Dot,
    Mermaid,
}

pub fn main() -> ExitCode {
    // The matches are kept because `lint` needs the order of its level flags.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Lint(args) => lint::lint(&args, matches.subcommand_matches("lint")),
        Command::Explain { lint } => lint::explain(&lint),
        Command::Check { paths, color } => check(&paths, color),
        Command::Fmt { to, file } => with_machine(&file, |machine| match to {
            Format::Yaml => syntax::yaml::format(machine),
            Format::Dsl => syntax::dsl::format(machine),
        }),
        Command::Graph {
            format,
            lint,
            witness,
            file,
        } => graph(&file, format, lint, witness),
        Command::Run {
            machine,
            events,
            format,
            snapshot_in,
            snapshot_out,
        } => run::run(run::RunArgs {
            machine,
            events,
            format,
            snapshot_in,
            snapshot_out,
        }),
        Command::Import { file, to } => import::import(&file, to),
        Command::Durable(command) => apply::run(command),
        Command::Schema => {
            println!("{}", idemchart::schema::MACHINE_SCHEMA.trim_end());
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|message| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    })
}

/// A failure of the command itself, not of the machines it reads.
type CommandResult = Result<ExitCode, String>;

fn check(paths: &[PathBuf], color: Color) -> CommandResult {
    let files = machine_files(paths)?;
    let color = match color {
        Color::Auto => std::io::stderr().is_terminal(),
        Color::Always => true,
        Color::Never => false,
    };
    let mut errors = 0;
    for path in &files {
        let (file, loaded) = load_file(path)?;
        if let Err(diagnostics) = loaded {
            errors += diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            for diagnostic in &diagnostics {
                eprintln!("{}\n", idemchart::report::render(diagnostic, &file, color));
            }
        }
    }
    let noun = if files.len() == 1 { "file" } else { "files" };
    eprintln!(
        "checked {} {noun}: {errors} error{}",
        files.len(),
        if errors == 1 { "" } else { "s" }
    );
    Ok(if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Draws one machine, with its findings when `lint` asks and the witness
/// of finding `witness` when given. A witness that cannot be drawn (no such
/// finding, or one without a witness) fails the command.
fn graph(path: &Path, format: GraphFormat, lint: bool, witness: Option<usize>) -> CommandResult {
    use idemchart::diagram::{self, Overlay};
    let Some(machine) = load_or_report(path)? else {
        return Ok(ExitCode::from(1));
    };
    let findings = if lint || witness.is_some() {
        idemchart::lint::lint(&machine)
    } else {
        Vec::new()
    };
    let mut overlay = if lint {
        Overlay::findings(&machine, &findings)
    } else {
        Overlay::default()
    };
    if let Some(n) = witness {
        let finding = n
            .checked_sub(1)
            .and_then(|i| findings.get(i))
            .ok_or_else(|| {
                format!(
                    "--witness {n}: {} has {} finding{}, numbered from 1",
                    path.display(),
                    findings.len(),
                    if findings.len() == 1 { "" } else { "s" }
                )
            })?;
        if finding.witness.is_empty() {
            return Err(format!(
                "--witness {n}: finding {n} ({} {}) has no witness",
                finding.code, finding.name
            ));
        }
        let taken = idemchart::lint::witness_transitions(&machine, finding)
            .map_err(|why| format!("--witness {n}: {why}"))?;
        overlay = overlay.with_witness(&finding.witness, &taken);
    }
    print!(
        "{}",
        match format {
            GraphFormat::Dot => diagram::dot_with(&machine, &overlay),
            GraphFormat::Mermaid => diagram::mermaid_with(&machine, &overlay),
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Loads one machine and prints what `print` makes of it; load errors are
/// printed instead, with exit code 1.
fn with_machine(path: &Path, print: impl FnOnce(&Machine) -> String) -> CommandResult {
    match load_or_report(path)? {
        Some(machine) => {
            print!("{}", print(&machine));
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

/// Loads one machine, or prints its load errors and gives `None`.
fn load_or_report(path: &Path) -> Result<Option<Machine>, String> {
    let (file, loaded) = load_file(path)?;
    match loaded {
        Ok(machine) => Ok(Some(machine)),
        Err(diagnostics) => {
            let color = std::io::stderr().is_terminal();
            for diagnostic in &diagnostics {
                eprintln!("{}\n", idemchart::report::render(diagnostic, &file, color));
            }
            Ok(None)
        }
    }
}

fn read(path: &Path) -> Result<SourceFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(SourceFile::new(path.display().to_string(), text))
}

/// Reads and loads one machine file. A file that is not UTF-8 is a load
/// error like any other; only a file that cannot be read at all fails the
/// command.
fn load_file(path: &Path) -> Result<(SourceFile, Result<Machine, Vec<Diagnostic>>), String> {
    syntax::load_file(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The machine files named by `paths`: files as given, directories searched
/// recursively for `*.yaml`, `*.yml` and `*.chart`, in sorted order.
fn machine_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        let meta =
            std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            walk(&path, found)?;
        } else if Syntax::of_path(&path).is_some() {
            found.push(path);
        }
    }
    Ok(())
}
