//! The durable-runtime commands: `apply`, `inspect`, `outbox`, `purge`.
//!
//! Every answer of `apply` (applied, duplicate, conflict, ignored) exits 0:
//! each is a definite answer the sender may stop on. Exit 2 means no answer
//! (bad input, store unavailable); nothing was written and the sender retries.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, Outcome};
use idemchart::store::{OutboxItem, OutboxStatus, SqliteOptions, SqliteStore, Store, Synchronous};

use super::{CommandResult, load_or_report};

#[derive(Subcommand)]
pub enum DurableCommand {
    /// Apply one event to a stored process exactly once; prints
    /// `{"outcome", "revision", "response"}`.
    Apply {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        machine: PathBuf,
        #[arg(long)]
        process: String,
        /// The event as JSON: `{"type": "E", "id": "...", "data": {...}}`; the id
        /// may instead come from the payload field the event declares.
        #[arg(long)]
        event: String,
    },
    /// Print a stored process: `{"process", "revision", "configuration", "context"}`.
    Inspect {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        process: String,
    },
    /// List the outbox as JSON lines. With `--dispatch`, hand each due row to
    /// standard output as a JSON line and mark it done: the reader of the
    /// output is the receiver and deduplicates by `key`.
    Outbox {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        dispatch: bool,
    },
    /// Delete applied event ids older than the machine's `dedup.retention`.
    Purge {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        machine: PathBuf,
        /// The present, in milliseconds since the Unix epoch (default: now).
        #[arg(long)]
        now: Option<u64>,
    },
}

#[derive(clap::Args)]
pub struct StoreArgs {
    /// Where the processes live: `sqlite:PATH`.
    #[arg(long)]
    store: String,
    /// `PRAGMA synchronous` for SQLite: `full` (survives power loss) or
    /// `normal` (survives a killed process).
    #[arg(long, default_value = "full")]
    synchronous: String,
}

fn open(args: &StoreArgs) -> Result<SqliteStore, String> {
    let Some(path) = args.store.strip_prefix("sqlite:") else {
        return Err(format!(
            "unknown store `{}`: write `sqlite:PATH`",
            args.store
        ));
    };
    let synchronous = match args.synchronous.as_str() {
        "full" => Synchronous::Full,
        "normal" => Synchronous::Normal,
        other => return Err(format!("unknown synchronous `{other}`: full or normal")),
    };
    let options = SqliteOptions {
        synchronous,
        ..SqliteOptions::default()
    };
    SqliteStore::open(Path::new(path), &options).map_err(|e| e.to_string())
}

pub fn run(command: DurableCommand) -> CommandResult {
    match command {
        DurableCommand::Apply {
            store,
            machine,
            process,
            event,
        } => {
            let Some(machine) = load_or_report(&machine)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Arc::new(Chart::new(machine));
            let event = parse_event(&event, &chart)?;
            let mut store = open(&store)?;
            let outcome =
                runtime::apply(&mut store, &chart, &process, &event).map_err(|e| e.to_string())?;
            let response = match outcome.response() {
                Some(text) => serde_json::from_str(text).map_err(|e| e.to_string())?,
                None => serde_json::Value::Null,
            };
            let revision = match (&outcome, outcome.revision()) {
                (Outcome::Conflict, _) | (_, None) => store
                    .process(&process)
                    .map_err(|e| e.to_string())?
                    .map(|row| row.revision),
                (_, revision) => revision,
            };
            let line = serde_json::json!({
                "outcome": outcome.kind(),
                "revision": revision,
                "response": response,
            });
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
        DurableCommand::Inspect { store, process } => {
            let mut store = open(&store)?;
            match runtime::inspect(&mut store, &process).map_err(|e| e.to_string())? {
                Some(mut state) => {
                    if let Some(object) = state.as_object_mut() {
                        object.shift_remove("machine");
                    }
                    println!("{state}");
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!("no process `{process}` in the store")),
            }
        }
        DurableCommand::Outbox { store, dispatch } => {
            let mut store = open(&store)?;
            if dispatch {
                let now = runtime::now_millis();
                let items = store
                    .claim_due(now, 30_000, usize::MAX >> 1)
                    .map_err(|e| e.to_string())?;
                for item in items {
                    println!("{}", outbox_json(&item));
                    store
                        .finish_attempt(
                            &item.key,
                            OutboxStatus::Done,
                            item.attempts.saturating_add(1),
                            now,
                            None,
                        )
                        .map_err(|e| e.to_string())?;
                }
            } else {
                for item in store.outbox(None).map_err(|e| e.to_string())? {
                    println!("{}", outbox_json(&item));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        DurableCommand::Purge {
            store,
            machine,
            now,
        } => {
            let Some(machine) = load_or_report(&machine)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Chart::new(machine);
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let purged = runtime::purge(&mut store, &chart, now).map_err(|e| e.to_string())?;
            println!("{}", serde_json::json!({ "purged": purged }));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn outbox_json(item: &OutboxItem) -> serde_json::Value {
    serde_json::json!({
        "process": item.process,
        "event_id": item.event_id,
        "position": item.position,
        "key": item.key,
        "effect": item.effect,
        "args": serde_json::from_str::<serde_json::Value>(&item.args).unwrap_or(serde_json::Value::Null),
        "status": item.status.as_str(),
        "attempts": item.attempts,
        "next_attempt_at": item.next_attempt_at,
        "last_error": item.last_error,
    })
}

/// Reads `{"type", "id", "data"}`; errors name the column they are at.
fn parse_event(text: &str, chart: &Chart) -> Result<Event, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("--event: column {}: {e}", e.column()))?;
    let serde_json::Value::Object(object) = value else {
        return Err("--event: expected an object {\"type\": ..., \"id\": ...}".into());
    };
    if let Some(key) = object
        .keys()
        .find(|k| !["type", "id", "data"].contains(&k.as_str()))
    {
        return Err(format!(
            "--event: unknown key `{key}`: an event has `type`, `id` and `data`"
        ));
    }
    let Some(name) = object.get("type").and_then(|t| t.as_str()) else {
        return Err("--event: an event needs a string `type`".into());
    };
    let data = object.get("data").map(Value::from).unwrap_or(Value::Null);
    if data != Value::Null && data.as_map().is_none() {
        return Err("--event: `data` must be an object".into());
    }
    // The id is given, or read from the payload field the event declares.
    let id = object.get("id").map(Value::from).or_else(|| {
        let field = chart.machine().events.get(name)?.id_field.as_ref()?;
        data.get(&field.text).cloned()
    });
    Ok(Event::new(name, id, data))
}
