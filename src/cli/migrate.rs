//! `idemchart migrate`: the stored processes of a machine moved onto a new
//! version of its file (`runtime::migrate_stored`), one JSON line each.
//!
//! Exit 0 when every process is current or moved; 1 when the machine does
//! not load or some process cannot be moved (no migration from its
//! version, or the declared one fails on it: the others still move); 2
//! when the command could not run (bad input, a store that cannot be
//! opened or read, an unknown `--process`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use idemchart::interp::Chart;
use idemchart::runtime::{self, Held, MoveStatus, Moved, ProcessMove};
use idemchart::store::{OutboxItem, StoreAddress};

use super::apply::{StoreArgs, open};
use super::output::Failure;
use super::{CommandResult, errln, load_or_report, outln};

#[derive(clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The new version of the machine file: its `migrations:` say what
    /// becomes of a process stored at each older version.
    #[arg(long)]
    machine: PathBuf,
    /// Print what would change, and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Move this process only (of any version; one already current is
    /// reported as skipped).
    #[arg(long)]
    process: Option<String>,
}

pub fn migrate(args: MigrateArgs) -> CommandResult {
    let Some(machine) = load_or_report(&args.machine, None)? else {
        return Ok(ExitCode::from(1));
    };
    let chart = Arc::new(Chart::new(machine));
    // Opening a SQLite path that does not exist would make an empty store,
    // and a mistyped path would then report nothing to migrate.
    if let Ok(StoreAddress::Sqlite(path)) = StoreAddress::parse(&args.store.store)
        && !std::path::Path::new(path).exists()
    {
        return Err(format!("no SQLite store at {path}: nothing to migrate").into());
    }
    let mut store = open(&args.store)?;
    let mut tally = Tally::default();
    match &args.process {
        Some(process) => {
            let moved = runtime::migrate_process(&mut store, &chart, process, args.dry_run);
            match moved {
                Ok(None) => return Err(format!("no process `{process}` in the store").into()),
                Ok(Some(moved)) => tally.print(Moved {
                    process: process.clone(),
                    result: Ok(moved),
                })?,
                // A process of another machine, or a corrupt row: nothing
                // to report about a move.
                Err(e) => return Err(e.to_string().into()),
            }
        }
        None => {
            let mut printed = Ok(());
            runtime::migrate_stored(&mut store, &chart, args.dry_run, |moved| {
                // Once standard output is gone, the rest is still moved
                // (each in its own transaction) but not reported.
                if printed.is_ok() {
                    printed = tally.print(moved);
                }
            })
            .map_err(|e| e.to_string())?;
            printed?;
        }
    }
    let machine = chart.machine();
    errln(tally.summary(&machine.name, machine.version, args.dry_run));
    Ok(if tally.failed > 0 {
        ExitCode::from(2)
    } else if tally.errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the lines printed so far reported.
#[derive(Default)]
struct Tally {
    migrated: usize,
    skipped: usize,
    would: usize,
    /// Processes with no migration from their version, or whose migration
    /// fails on them.
    errors: usize,
    /// Processes that could not be read or written (store, corrupt row).
    failed: usize,
}

impl Tally {
    fn print(&mut self, moved: Moved) -> Result<(), Failure> {
        let line = match moved.result {
            Ok(moved) => {
                match moved.status {
                    MoveStatus::Migrated => self.migrated += 1,
                    MoveStatus::Skipped => self.skipped += 1,
                    MoveStatus::WouldMigrate => self.would += 1,
                    MoveStatus::Error => self.errors += 1,
                }
                line(&moved)
            }
            Err(e) => {
                self.failed += 1;
                serde_json::json!({
                    "process": moved.process,
                    "status": "error",
                    "error": e.to_string(),
                })
            }
        };
        outln(format_args!("{line}"))
    }

    fn summary(&self, machine: &str, version: Option<u64>, dry_run: bool) -> String {
        let version = version.map_or_else(|| "no version".to_string(), |v| format!("version {v}"));
        let moved = if dry_run {
            format!("{} would migrate", self.would)
        } else {
            format!("{} migrated", self.migrated)
        };
        let mut text = format!(
            "migrate: machine {machine} ({version}): {moved}, {} skipped, {} error{}",
            self.skipped,
            self.errors + self.failed,
            if self.errors + self.failed == 1 {
                ""
            } else {
                "s"
            }
        );
        if dry_run {
            text.push_str("; dry run, nothing written");
        }
        text
    }
}

/// One process's JSON line.
fn line(moved: &ProcessMove) -> serde_json::Value {
    let held = |held: &Held| {
        serde_json::json!({
            "configuration": held.configuration,
            "context": held.context,
            "timers": held.timers,
        })
    };
    let rows = |items: &[OutboxItem]| -> Vec<serde_json::Value> {
        items
            .iter()
            .map(|item| {
                serde_json::json!({
                    "key": item.key,
                    "effect": item.effect,
                    "event_id": item.event_id,
                    "invocation": item.invocation,
                })
            })
            .collect()
    };
    serde_json::json!({
        "process": moved.process,
        "from": moved.from,
        "to": moved.to,
        "before": held(&moved.before),
        "after": moved.after.as_ref().map(held),
        "dropped": {
            "timers": moved.dropped.timers,
            "history": moved.dropped.history,
            "outbox": rows(&moved.dropped.outbox),
        },
        "unknown_outbox": rows(&moved.unknown_outbox),
        "status": moved.status.as_str(),
        "revision": moved.revision,
        "error": moved.error,
    })
}
