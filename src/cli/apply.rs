//! The durable-runtime commands: `apply`, `advance`, `inspect`, `outbox`, `purge`.
//!
//! Every answer of `apply` (applied, duplicate, conflict, ignored) exits 0:
//! each is a definite answer the sender may stop on. Exit 1 means the
//! machine does not load, or the event's step did not settle (a loop ran out
//! of microsteps): nothing was written and a retry gets the same answer.
//! Exit 2 means no answer (bad input, store unavailable); nothing was
//! written and the sender retries.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use idemchart::interp::Chart;
use idemchart::model::Completion;
use idemchart::runtime::{self, Outcome, RuntimeError};
use idemchart::store::{
    AnyStore, AttemptRecord, OutboxItem, OutboxStatus, SqliteOptions, Store, StoreAddress,
    Synchronous,
};

use super::{CommandResult, errln, load_or_report, outln};

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
        /// The present, in milliseconds since the Unix epoch (default: now):
        /// timers due by then fire before the event.
        #[arg(long)]
        now: Option<u64>,
    },
    /// Fire the timers that are due (`after`, delayed `send`): of one process
    /// with `--process`, else of every process of the machine whose next timer
    /// is due. Prints one JSON line per process:
    /// `{"process", "revision", "fired": [responses], "next_timer_at"}`.
    Advance {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        machine: PathBuf,
        #[arg(long)]
        process: Option<String>,
        /// The present, in milliseconds since the Unix epoch (default: now).
        #[arg(long)]
        now: Option<u64>,
        /// At most this many processes in one run.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
    /// Print a stored process: `{"process", "revision", "configuration", "context",
    /// "next_timer_at"}`.
    Inspect {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        process: String,
    },
    /// List the outbox as JSON lines (an invocation's row names the completion
    /// events that answer it). With `--dispatch`, hand each due row to
    /// standard output as a JSON line and mark it done: the reader of the
    /// output is the receiver, deduplicates by `key`, and answers an
    /// invocation with `apply` of its completion, `key` as the event id.
    /// With `--dispatch --handler CMD --machine FILE`, run CMD for each due
    /// row instead and deliver its answer (see `docs/runtime.md`); prints
    /// `{"done", "retried", "dead", "unknown", "failed"}`.
    Outbox {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long, conflicts_with = "requeue")]
        dispatch: bool,
        /// A shell command run for each due row, the row's JSON line on its
        /// standard input and `IDEMCHART_KEY` in its environment. Exit 0 is
        /// done (standard output, if any, is the JSON output of an
        /// invocation); 75 (EX_TEMPFAIL) is "try again later"; death by a
        /// signal is an unknown outcome; any other exit is a refusal.
        #[arg(long, requires = "dispatch", requires = "machine")]
        handler: Option<String>,
        /// The machine of the processes whose rows `--handler` dispatches.
        #[arg(long, requires = "handler")]
        machine: Option<PathBuf>,
        /// How long a claimed row stays hidden from other dispatchers.
        #[arg(long, default_value_t = 30_000, value_name = "MS")]
        lease_ms: u64,
        /// Attempts before a row is dead-lettered.
        #[arg(long, default_value_t = 8)]
        max_attempts: u32,
        /// Put dead rows back in the queue, due now with no attempts
        /// counted: the row with this key, or every dead row with `all`.
        /// Prints `{"requeued": N}`.
        #[arg(long, value_name = "KEY|all")]
        requeue: Option<String>,
    },
    /// Delete applied event ids, and outbox rows settled (done, cancelled,
    /// or unknown or failed and told to the machine), older than the machine's `dedup.retention`
    /// (or its `history.keep`, if longer), and clear the stored payloads older than `history.keep`.
    /// Prints `{"purged": N, "outbox_purged": M}`, and `"payloads_purged"`
    /// for a machine that keeps a history.
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
    /// Where the processes live: `sqlite:PATH`, a PostgreSQL URL
    /// (`postgres://USER@HOST:PORT/DB`, `postgresql://…`), or `postgres:`
    /// followed by libpq `KEY=VALUE` pairs (`postgres:host=… dbname=…`).
    #[arg(long)]
    pub(super) store: String,
    /// `PRAGMA synchronous` for SQLite: `full` (survives power loss, the
    /// default) or `normal` (survives a killed process).
    #[arg(long)]
    synchronous: Option<String>,
}

/// Opens the `--store`, with `--synchronous` for a SQLite store.
pub(crate) fn open(args: &StoreArgs) -> Result<AnyStore, String> {
    let address = StoreAddress::parse(&args.store).map_err(|e| e.to_string())?;
    if matches!(address, StoreAddress::Postgres(_)) && args.synchronous.is_some() {
        return Err("`--synchronous` is for a SQLite store; PostgreSQL commits as its `synchronous_commit` setting says".into());
    }
    address
        .open(&sqlite_options(args.synchronous.as_deref())?)
        .map_err(|e| e.to_string())
}

/// The SQLite options a `--synchronous` flag asks for.
pub(crate) fn sqlite_options(synchronous: Option<&str>) -> Result<SqliteOptions, String> {
    let synchronous = match synchronous {
        None | Some("full") => Synchronous::Full,
        Some("normal") => Synchronous::Normal,
        Some(other) => return Err(format!("unknown synchronous `{other}`: full or normal")),
    };
    Ok(SqliteOptions {
        synchronous,
        ..SqliteOptions::default()
    })
}

pub fn run(command: DurableCommand) -> CommandResult {
    match command {
        DurableCommand::Apply {
            store,
            machine,
            process,
            event,
            now,
        } => {
            let Some(machine) = load_or_report(&machine, None)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Arc::new(Chart::new(machine));
            let event = runtime::parse_event(&event, chart.machine(), None)
                .map_err(|e| format!("--event: {e}"))?;
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let outcome = match runtime::apply_at(&mut store, &chart, &process, &event, now) {
                Ok(outcome) => outcome,
                Err(RuntimeError::Unsettled { unsettled, .. }) => {
                    // A definite answer, unlike exit 2: nothing was written,
                    // and a retry meets the same loop.
                    let line = serde_json::json!({
                        "outcome": "unsettled",
                        "message": unsettled.to_string(),
                        "microsteps": unsettled.limit,
                        "states": unsettled.paths,
                        "events": unsettled.events,
                    });
                    outln(format_args!("{line}"))?;
                    errln(format_args!("error: process `{process}`: {unsettled}"));
                    return Ok(ExitCode::from(1));
                }
                Err(e) => return Err(e.to_string().into()),
            };
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
            outln(format_args!("{line}"))?;
            Ok(ExitCode::SUCCESS)
        }
        DurableCommand::Advance {
            store,
            machine,
            process,
            now,
            limit,
        } => {
            let Some(machine) = load_or_report(&machine, None)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Arc::new(Chart::new(machine));
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let results = match process {
                Some(process) => {
                    let result = runtime::advance(&mut store, &chart, &process, now);
                    if matches!(&result, Ok(advanced) if advanced.revision.is_none()) {
                        return Err(format!("no process `{process}` in the store").into());
                    }
                    vec![(process, result)]
                }
                None => runtime::advance_due(&mut store, &chart, now, limit)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .map(|due| (due.process, due.result))
                    .collect(),
            };
            // One broken process does not hide the others' answers; it makes
            // the command fail once all are printed.
            let mut failed = false;
            for (process, result) in results {
                let line = match result {
                    Ok(advanced) => serde_json::json!({
                        "process": process,
                        "revision": advanced.revision,
                        "fired": advanced
                            .fired
                            .iter()
                            .map(|f| serde_json::from_str(&f.response).unwrap_or(serde_json::Value::Null))
                            .collect::<Vec<serde_json::Value>>(),
                        "next_timer_at": advanced.next_timer_at,
                    }),
                    Err(e) => {
                        failed = true;
                        serde_json::json!({ "process": process, "error": e.to_string() })
                    }
                };
                outln(format_args!("{line}"))?;
            }
            Ok(if failed {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
        DurableCommand::Inspect { store, process } => {
            let mut store = open(&store)?;
            match runtime::inspect(&mut store, &process).map_err(|e| e.to_string())? {
                Some(mut state) => {
                    if let Some(object) = state.as_object_mut() {
                        object.shift_remove("machine");
                    }
                    outln(format_args!("{state}"))?;
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!("no process `{process}` in the store").into()),
            }
        }
        DurableCommand::Outbox {
            store,
            dispatch,
            handler,
            machine,
            lease_ms,
            max_attempts,
            requeue,
        } => {
            let mut store = open(&store)?;
            if let (Some(command), Some(machine)) = (handler, machine) {
                let Some(machine) = load_or_report(&machine, None)? else {
                    return Ok(ExitCode::from(1));
                };
                let chart = Arc::new(Chart::new(machine));
                let policy = runtime::DispatchPolicy {
                    lease_ms,
                    max_attempts,
                    ..runtime::DispatchPolicy::default()
                };
                let now = runtime::now_millis();
                let report = runtime::dispatch(&mut store, &chart, now, &policy, |item| {
                    run_handler(&command, item)
                })
                .map_err(|e| e.to_string())?;
                outln(format_args!(
                    "{}",
                    serde_json::json!({
                        "done": report.done,
                        "retried": report.retried,
                        "dead": report.dead,
                        "unknown": report.unknown,
                        "failed": report.failed,
                    })
                ))?;
                return Ok(ExitCode::SUCCESS);
            }
            if let Some(which) = requeue {
                let key = (which != "all").then_some(which.as_str());
                let requeued = store
                    .requeue_dead(key, runtime::now_millis())
                    .map_err(|e| e.to_string())?;
                if requeued == 0 && key.is_some() {
                    return Err(format!("no dead outbox row has the key `{which}`").into());
                }
                outln(format_args!(
                    "{}",
                    serde_json::json!({ "requeued": requeued })
                ))?;
                return Ok(ExitCode::SUCCESS);
            }
            if dispatch {
                let now = runtime::now_millis();
                let items = store
                    .claim_due(now, 30_000, usize::MAX >> 1)
                    .map_err(|e| e.to_string())?;
                for item in items {
                    // The line shows the row as this attempt leaves it. It is
                    // printed before the row is marked, so a crash in between
                    // hands it out again later: at least once, under one key.
                    let handed = OutboxItem {
                        status: OutboxStatus::Done,
                        attempts: item.attempts.saturating_add(1),
                        next_attempt_at: now,
                        last_error: None,
                        ..item
                    };
                    outln(format_args!("{}", outbox_json(&handed)))?;
                    let record = AttemptRecord {
                        key: &handed.key,
                        status: handed.status,
                        attempts: handed.attempts,
                        next_attempt_at: now,
                        last_error: None,
                    };
                    store.finish_attempt(&record).map_err(|e| e.to_string())?;
                }
            } else {
                for item in store.outbox(None).map_err(|e| e.to_string())? {
                    outln(format_args!("{}", outbox_json(&item)))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        DurableCommand::Purge {
            store,
            machine,
            now,
        } => {
            let Some(machine) = load_or_report(&machine, None)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Chart::new(machine);
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let purged = runtime::purge(&mut store, &chart, now).map_err(|e| e.to_string())?;
            let mut line =
                serde_json::json!({ "purged": purged.applied, "outbox_purged": purged.outbox });
            // Only a machine that keeps payloads has any to purge; the
            // line of one without stays as it was.
            if chart.machine().history.is_some() {
                line["payloads_purged"] = purged.payloads.into();
            }
            outln(format_args!("{line}"))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The exit status a `--handler` uses for "try again later" (sysexits'
/// EX_TEMPFAIL).
const TEMPORARY_FAILURE: i32 = 75;

/// Runs the `--handler` command for one row and reads its answer.
fn run_handler(command: &str, item: &OutboxItem) -> runtime::Dispatch {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("IDEMCHART_KEY", &item.key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        // Nothing ran: trying again is safe.
        Err(e) => return runtime::Dispatch::Retry(format!("cannot run the handler: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A handler that does not read its input closes the pipe early;
        // that is its business, not an error.
        let _ = writeln!(stdin, "{}", outbox_json(item));
    }
    let output = match child.wait_with_output() {
        Ok(output) => output,
        Err(e) => return runtime::Dispatch::Retry(format!("lost the handler: {e}")),
    };
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    match output.status.code() {
        Some(0) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stdout = stdout.trim();
            if stdout.is_empty() {
                runtime::Dispatch::Done
            } else {
                runtime::Dispatch::Output(
                    serde_json::from_str(stdout).unwrap_or_else(|_| serde_json::json!(stdout)),
                )
            }
        }
        Some(TEMPORARY_FAILURE) => runtime::Dispatch::Retry(if stderr.is_empty() {
            format!("the handler exited with {TEMPORARY_FAILURE}")
        } else {
            stderr
        }),
        Some(code) => {
            runtime::Dispatch::Failed(serde_json::json!({ "exit": code, "stderr": stderr }))
        }
        // Killed by a signal: it may or may not have done the work.
        None => {
            let signal = output.status.signal().unwrap_or(0);
            errln(format_args!(
                "the handler for `{}` died of signal {signal}: outcome unknown",
                item.key
            ));
            runtime::Dispatch::UnknownOutcome
        }
    }
}

/// An outbox row as a JSON line; an invocation's row also names the
/// completion events its answer is sent back as (with `key` as their id).
fn outbox_json(item: &OutboxItem) -> serde_json::Value {
    let mut line = serde_json::json!({
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
    });
    if let Some(id) = &item.invocation {
        line["invocation"] = serde_json::json!(id);
        line["completions"] = serde_json::json!({
            "done": Completion::Done.event(id),
            "error": Completion::Error.event(id),
        });
    }
    line
}
