//! Command-line interface: argument parsing and the subcommands.
//!
//! Exit codes: 0 when nothing is at error level, 1 when something is, 2 when the
//! command itself could not run (usage, unreadable path).

mod apply;
mod baseline;
mod history;
mod import;
mod lint;
mod migrate;
mod output;
mod run;
mod serve;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use idemchart::diagnostic::Diagnostic;
use idemchart::load::{Candidate, Resolver};
use idemchart::syntax;
use idemchart::{Machine, Severity, SourceFile};

use output::{CommandResult, Failure, errln, finish, out, out_with, outln};

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
        /// Files or directories (directories are walked past what .gitignore
        /// leaves out, hidden files and node_modules, for the machine files:
        /// YAML and JSON with a machine's top level, *.chart, *.scxml, and
        /// scripts that import XState).
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
        /// The machine to print, by name, where the file holds several.
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
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
        /// The machine to draw, by name, where the file holds several.
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
    },
    /// Print the JSON Schema of the YAML format (for editor completion).
    Schema,
    /// Convert an SCXML document or an XState machine (*.ts, *.js, *.json,
    /// ...) to a machine file, printed in either syntax.
    Import {
        file: PathBuf,
        /// The syntax to print.
        #[arg(long, value_enum, default_value_t = Format::Yaml)]
        to: Format,
        /// The XState machine to convert, by name, where the file holds several.
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
        /// Convert an SCXML document only where everything in it has a
        /// counterpart, and fail at each part that has none; without it,
        /// such parts are opaque host guards, actions and services, each
        /// with a note.
        #[arg(long)]
        strict: bool,
    },
    /// Report idempotency hazards and structural problems, with a witness
    /// event sequence for each hazard.
    Lint(lint::LintArgs),
    /// Print what changed between two versions of a machine, one change a
    /// line: `-` removed, `+` added, `~` changed. OLD is a machine file or a
    /// git revision at which NEW's path is read.
    Diff {
        /// The old version: a file, or a git revision (`HEAD~1`).
        old: String,
        /// The new version's file.
        new: PathBuf,
    },
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
    /// Serve the Language Server Protocol on standard input and output:
    /// diagnostics as you type, quick fixes, hover, navigation, completion.
    Lsp {
        /// The largest message read, in bytes; a larger one ends the
        /// connection with an error (exit 2) before anything is allocated.
        #[arg(long, default_value_t = 64 << 20)]
        max_message_bytes: usize,
    },
    #[command(flatten)]
    Durable(apply::DurableCommand),
    /// Move the stored processes of a machine onto a new version of its
    /// file, through the migrations the file declares.
    ///
    /// Every process of the machine stored at another version than
    /// `--machine`'s is moved through the migration that file declares from
    /// the process's version (`migrations: [{ from: N, ... }]`), one
    /// process per transaction. A process already at the file's version is
    /// skipped, so running it again changes nothing. Prints one JSON line
    /// per process, `{"process", "from", "to", "before", "after",
    /// "dropped", "unknown_outbox", "status", "revision", "error"}` (status
    /// `migrated`, `skipped`, `would-migrate` or `error`), then a summary
    /// on standard error. `dropped` names the timers and history the
    /// migration drops, and the pending outbox rows it cancels under
    /// `outbox: drop`; `unknown_outbox` the pending outbox rows of effects
    /// the new file neither declares nor performs, kept under `outbox:
    /// keep` (the default). Exit 1 when some process has no migration from
    /// its version (the others still move); 2 when the command cannot run.
    Migrate(migrate::MigrateArgs),
    /// Serve the machines of a directory over HTTP: events applied exactly
    /// once, timers fired, effects dispatched (`docs/serve.md`).
    Serve(serve::ServeArgs),
    #[command(flatten)]
    History(history::HistoryCommand),
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
        Command::Diff { old, new } => diff(&old, &new),
        Command::Check { paths, color } => check(&paths, color),
        Command::Fmt { to, file, machine } => fmt(&file, machine.as_deref(), to),
        Command::Graph {
            format,
            lint,
            witness,
            file,
            machine,
        } => graph(&file, machine.as_deref(), format, lint, witness),
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
        Command::Import {
            file,
            to,
            machine,
            strict,
        } => import::import(&file, to, machine.as_deref(), strict),
        Command::Durable(command) => apply::run(command),
        Command::Migrate(args) => migrate::migrate(args),
        Command::Serve(args) => serve::serve(args),
        Command::History(command) => history::run(command),
        Command::Lsp { max_message_bytes } => {
            let options = idemchart::lsp::Options {
                release_memory: Some(release_memory),
                max_message_bytes,
                ..Default::default()
            };
            idemchart::lsp::run_stdio(options)
                .map(|()| ExitCode::SUCCESS)
                .map_err(Failure::from)
        }
        Command::Schema => {
            outln(idemchart::schema::MACHINE_SCHEMA.trim_end()).map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        // A reader that stopped reading wants nothing more, an error least.
        Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Message(message)) => {
            errln(format_args!("error: {message}"));
            ExitCode::from(2)
        }
    }
}

/// `fmt`: the machine in canonical form, with the comments of its file where
/// the file is a machine file (YAML or DSL); the other formats' comments are
/// not read.
fn fmt(file: &Path, machine: Option<&str>, to: Format) -> CommandResult {
    let to = match to {
        Format::Yaml => syntax::Syntax::Yaml,
        Format::Dsl => syntax::Syntax::Dsl,
    };
    let from = syntax::Syntax::of_path(file);
    with_machine(file, machine, |machine| {
        let comments = from
            .and_then(|from| {
                let source = read(file).ok()?;
                Some(syntax::comments(&source, from, machine))
            })
            .unwrap_or_default();
        syntax::format(machine, to, &comments)
    })
}

/// `diff`: the changes from the old version to the new one, then the line
/// that counts them. A file that does not load is reported with its load
/// errors, and the command fails.
fn diff(old: &str, new: &Path) -> CommandResult {
    let Some(machine) = load_or_report(new, None)? else {
        return Ok(ExitCode::from(1));
    };
    let baseline = baseline::Baseline::parse(old);
    let Some(before) = baseline.machine_for(new)? else {
        return Err(format!(
            "{} did not exist at {old}: there is nothing to compare",
            new.display()
        )
        .into());
    };
    let changes = idemchart::lint::changes(&before, &machine);
    let mut text = String::new();
    for change in &changes {
        text.push_str(&format!("{change}\n"));
    }
    let shape = changes.iter().filter(|c| c.shape).count();
    text.push_str(&match changes.len() {
        0 => "no change".to_string(),
        n => format!(
            "{n} change{}, {shape} of them to what a stored snapshot holds",
            if n == 1 { "" } else { "s" }
        ),
    });
    outln(text)?;
    Ok(ExitCode::SUCCESS)
}

fn check(paths: &[PathBuf], color: Color) -> CommandResult {
    let config = project_config()?;
    let color = match color {
        Color::Auto => std::io::stdout().is_terminal(),
        Color::Always => true,
        Color::Never => false,
    };
    let mut resolver = Resolver::default();
    let (mut errors, mut checked, mut without_machine) = (0, 0, 0);
    let mut report = String::new();
    for candidate in candidates(paths, &config)? {
        let Some(loaded) = load_candidate(&candidate, &config, &mut resolver)? else {
            without_machine += 1;
            continue;
        };
        checked += 1;
        let mut diagnostics = loaded.errors;
        for machine in loaded.machines {
            diagnostics.extend(machine.notes);
            if let Err(load_errors) = machine.machine {
                diagnostics.extend(load_errors);
            }
        }
        errors += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        for (file, found) in loaded.sources.split(diagnostics) {
            for diagnostic in &found {
                report.push_str(&idemchart::report::render(diagnostic, &file, color));
                report.push_str("\n\n");
            }
        }
    }
    let plural = |n: usize, noun: &str| match n {
        1 => format!("{n} {noun}"),
        _ => format!("{n} {noun}s"),
    };
    report.push_str(&format!(
        "checked {}: {}",
        plural(checked, "file"),
        plural(errors, "error")
    ));
    if without_machine > 0 {
        let verb = if without_machine == 1 {
            "holds"
        } else {
            "hold"
        };
        report.push_str(&format!(
            "; {} {verb} no machine",
            plural(without_machine, "file")
        ));
    }
    let code = if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    finish(code, outln(report))
}

/// Draws one machine, with its findings when `lint` asks and the witness
/// of finding `witness` when given. A witness that cannot be drawn (no such
/// finding, or one without a witness) fails the command.
fn graph(
    path: &Path,
    name: Option<&str>,
    format: GraphFormat,
    lint: bool,
    witness: Option<usize>,
) -> CommandResult {
    use idemchart::diagram::{self, Overlay};
    let Some(machine) = load_or_report(path, name)? else {
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
            )
            .into());
        }
        let taken = idemchart::lint::witness_transitions(&machine, finding)
            .map_err(|why| format!("--witness {n}: {why}"))?;
        overlay = overlay.with_witness(&finding.witness, &taken);
    }
    out(match format {
        GraphFormat::Dot => diagram::dot_with(&machine, &overlay),
        GraphFormat::Mermaid => diagram::mermaid_with(&machine, &overlay),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Loads one machine and prints what `print` makes of it; load errors are
/// printed instead, with exit code 1.
fn with_machine(
    path: &Path,
    name: Option<&str>,
    print: impl FnOnce(&Machine) -> String,
) -> CommandResult {
    match load_or_report(path, name)? {
        Some(machine) => {
            out(print(&machine))?;
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

/// Loads one machine (the one named `name` where the file holds several),
/// or prints its load errors and gives `None`. The notes of an XState
/// machine are printed too: what the command shows of it leaves them out.
pub(crate) fn load_or_report(path: &Path, name: Option<&str>) -> Result<Option<Machine>, String> {
    // Only XState sources read settings from idemchart.toml.
    let settings = if idemchart::import::xstate::SourceKind::of_path(path).is_some() {
        project_config()?.xstate
    } else {
        Default::default()
    };
    let loaded = idemchart::load::load_machines(path, &settings, &mut Resolver::default())
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .map_err(|none| format!("{} holds no machine: {none}", path.display()))?;
    let color = std::io::stderr().is_terminal();
    let report = |diagnostics: Vec<Diagnostic>| {
        for (file, found) in loaded.sources.split(diagnostics) {
            for diagnostic in &found {
                errln(format_args!(
                    "{}\n",
                    idemchart::report::render(diagnostic, &file, color)
                ));
            }
        }
    };
    if !loaded.errors.is_empty() {
        report(loaded.errors.clone());
        return Ok(None);
    }
    let names: Vec<&str> = loaded.machines.iter().map(|m| m.name.as_str()).collect();
    let chosen = match name {
        Some(name) => loaded
            .machines
            .iter()
            .position(|m| m.name == name)
            .ok_or_else(|| {
                format!(
                    "{} holds no machine `{name}`; it holds {}",
                    path.display(),
                    list(&names)
                )
            })?,
        None if loaded.machines.len() == 1 => 0,
        None if loaded.machines.is_empty() => {
            return Err(format!("{} holds no machine", path.display()));
        }
        None => {
            return Err(format!(
                "{} holds {} machines ({}): name one with --machine",
                path.display(),
                names.len(),
                list(&names)
            ));
        }
    };
    let machine = &loaded.machines[chosen];
    report(machine.notes.clone());
    match &machine.machine {
        Ok(m) => Ok(Some(m.clone())),
        Err(errors) => {
            report(errors.clone());
            Ok(None)
        }
    }
}

/// Loads the one machine of a file to run it: as `load_or_report`, but an
/// SCXML document is imported strictly, since an opaque part has nothing
/// to run.
pub(crate) fn load_to_run(path: &Path) -> Result<Option<Machine>, String> {
    if !idemchart::import::is_scxml(path) {
        return load_or_report(path, None);
    }
    let (file, machine) = idemchart::load::load_file(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match machine {
        Ok(machine) => Ok(Some(machine)),
        Err(errors) => {
            let color = std::io::stderr().is_terminal();
            for diagnostic in &errors {
                errln(format_args!(
                    "{}\n",
                    idemchart::report::render(diagnostic, &file, color)
                ));
            }
            Ok(None)
        }
    }
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The nearest `idemchart.toml` (the current directory or an ancestor), or
/// the defaults: where to search, and what XState machines cannot say.
pub(crate) fn project_config() -> Result<idemchart::config::Config, String> {
    let here =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    match idemchart::config::Config::discover(&here) {
        Some(path) => idemchart::config::Config::load(&path, &idemchart::config::registry()),
        None => Ok(idemchart::config::Config::defaults(here)),
    }
}

/// Reads every machine of a file a run is to read
/// (`idemchart::load::load_candidate`), with the error of a file that
/// cannot be read said as the CLI says it.
pub(crate) fn load_candidate(
    candidate: &Candidate,
    config: &idemchart::config::Config,
    resolver: &mut Resolver,
) -> Result<Option<idemchart::import::xstate::Loaded>, String> {
    idemchart::load::load_candidate(candidate, &config.xstate, resolver)
        .map_err(|e| format!("cannot read {}: {e}", candidate.path.display()))
}

fn read(path: &Path) -> Result<SourceFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(SourceFile::new(path.display().to_string(), text))
}

/// The files a run over `paths` reads (`idemchart::load::discover`): files
/// as given, directories walked, within the `include` and `exclude` globs
/// of `idemchart.toml`.
pub(crate) fn candidates(
    paths: &[PathBuf],
    config: &idemchart::config::Config,
) -> Result<Vec<Candidate>, String> {
    idemchart::load::discover(paths, |path| config.searches(path)).map_err(|e| e.to_string())
}

/// Hands the pages the binary's allocator (mimalloc) holds free back to
/// the system: those of the calling thread's heap, and of the frees other
/// threads made to it.
fn release_memory() {
    // SAFETY: `mi_collect` only walks the allocator's own free lists.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
