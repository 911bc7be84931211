//! The durable-runtime commands: `apply`, `advance`, `inspect`, `outbox`, `purge`.
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
#[cfg(feature = "postgres")]
use idemchart::store::PostgresStore;
use idemchart::store::{
    OutboxItem, OutboxStatus, ProcessRow, SqliteOptions, SqliteStore, Store, StoreError,
    Synchronous, Transaction,
};

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
    /// List the outbox as JSON lines. With `--dispatch`, hand each due row to
    /// standard output as a JSON line and mark it done: the reader of the
    /// output is the receiver and deduplicates by `key`.
    Outbox {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long, conflicts_with = "requeue")]
        dispatch: bool,
        /// Put dead rows back in the queue, due now with no attempts
        /// counted: the row with this key, or every dead row with `all`.
        /// Prints `{"requeued": N}`.
        #[arg(long, value_name = "KEY|all")]
        requeue: Option<String>,
    },
    /// Delete applied event ids, and outbox rows settled (done, or unknown
    /// and told to the machine), older than the machine's `dedup.retention`.
    /// Prints `{"purged": N, "outbox_purged": M}`.
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
    store: String,
    /// `PRAGMA synchronous` for SQLite: `full` (survives power loss, the
    /// default) or `normal` (survives a killed process).
    #[arg(long)]
    synchronous: Option<String>,
}

/// How long a PostgreSQL connection attempt may take when the store string
/// does not say (`connect_timeout`): an unreachable server is then an error
/// within seconds instead of after the system's TCP timeout.
#[cfg(feature = "postgres")]
const CONNECT_TIMEOUT_SECONDS: u32 = 10;

/// Either store the CLI can open. `Store::transaction` is generic, so `Store`
/// is not object safe and cannot be boxed as `dyn Store`; this enum forwards
/// each call to the store it holds, and the commands see one type.
enum AnyStore {
    Sqlite(SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(Box<PostgresStore>),
}

/// Runs `$call` on the store inside `$self`, bound to `$store`.
macro_rules! forward {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::Sqlite($store) => $call,
            #[cfg(feature = "postgres")]
            AnyStore::Postgres($store) => $call,
        }
    };
}

impl Store for AnyStore {
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        forward!(self, store => store.transaction(body))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        forward!(self, store => store.process(id))
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        forward!(self, store => store.outbox(status))
    }

    fn claim_due(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        forward!(self, store => store.claim_due(now, lease_ms, limit))
    }

    fn finish_attempt(
        &mut self,
        key: &str,
        status: OutboxStatus,
        attempts: u32,
        next_attempt_at: u64,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        forward!(self, store => store.finish_attempt(key, status, attempts, next_attempt_at, last_error))
    }

    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        forward!(self, store => store.due_processes(machine, version, now, limit))
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.purge_applied(machine, before))
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.purge_outbox(machine, before))
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.requeue_dead(key, now))
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        forward!(self, store => store.applied_count(process))
    }
}

/// A `--store` string, read but not yet opened.
#[derive(Debug, PartialEq)]
enum Address<'a> {
    Sqlite(&'a str),
    /// What the `postgres` crate connects with: a URL or `KEY=VALUE` pairs.
    Postgres(&'a str),
}

const STORE_FORMS: &str = "`sqlite:PATH`, `postgres://…` or `postgres:KEY=VALUE …`";

/// Reads a `--store` string. Errors name only its scheme, never the rest,
/// which may hold a password.
fn address(text: &str) -> Result<Address<'_>, String> {
    if let Some(path) = text.strip_prefix("sqlite:") {
        if path.is_empty() {
            return Err("`--store sqlite:` needs a path after the colon".into());
        }
        return Ok(Address::Sqlite(path));
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(Address::Postgres(text));
    }
    if let Some(params) = text.strip_prefix("postgres:") {
        if !params.contains('=') {
            return Err(
                "`--store postgres:` needs libpq `KEY=VALUE` pairs after the colon (`postgres:host=… dbname=…`), or write a `postgres://` URL".into(),
            );
        }
        return Ok(Address::Postgres(params));
    }
    Err(match text.split_once(':') {
        Some((scheme, _)) if !scheme.is_empty() => {
            format!("unknown store scheme `{scheme}`: write {STORE_FORMS}")
        }
        _ => format!("`--store` needs a scheme: write {STORE_FORMS}"),
    })
}

/// The text of a store error, without `StoreError`'s `store:` prefix, which
/// the callers' own context replaces.
fn store_message(error: StoreError) -> String {
    match error {
        StoreError::Backend(m) | StoreError::Race(m) | StoreError::Corrupt(m) => m,
    }
}

fn open(args: &StoreArgs) -> Result<AnyStore, String> {
    match address(&args.store)? {
        Address::Sqlite(path) => {
            let synchronous = match args.synchronous.as_deref() {
                None | Some("full") => Synchronous::Full,
                Some("normal") => Synchronous::Normal,
                Some(other) => {
                    return Err(format!("unknown synchronous `{other}`: full or normal"));
                }
            };
            let options = SqliteOptions {
                synchronous,
                ..SqliteOptions::default()
            };
            SqliteStore::open(Path::new(path), &options)
                .map(AnyStore::Sqlite)
                .map_err(|e| {
                    // SQLite names the file in some messages, not in others.
                    let message = store_message(e);
                    if message.contains(path) {
                        format!("cannot open the SQLite store: {message}")
                    } else {
                        format!("cannot open the SQLite store `{path}`: {message}")
                    }
                })
        }
        Address::Postgres(params) => {
            if args.synchronous.is_some() {
                return Err("`--synchronous` is for a SQLite store; PostgreSQL commits as its `synchronous_commit` setting says".into());
            }
            open_postgres(params)
        }
    }
}

#[cfg(feature = "postgres")]
fn open_postgres(params: &str) -> Result<AnyStore, String> {
    let config: postgres::Config =
        params
            .parse()
            .map_err(|e| match std::error::Error::source(&e) {
                Some(cause) => format!("bad PostgreSQL store string: {e}: {cause}"),
                None => format!("bad PostgreSQL store string: {e}"),
            })?;
    // The timeout is added in the string's own syntax, so that the store
    // connects with exactly what the user wrote plus this one setting.
    let params = if config.get_connect_timeout().is_some() {
        params.to_string()
    } else if params.contains("://") {
        let separator = if params.contains('?') { '&' } else { '?' };
        format!("{params}{separator}connect_timeout={CONNECT_TIMEOUT_SECONDS}")
    } else {
        format!("{params} connect_timeout={CONNECT_TIMEOUT_SECONDS}")
    };
    PostgresStore::connect(&params)
        .map(|store| AnyStore::Postgres(Box::new(store)))
        .map_err(|e| format!("cannot open the PostgreSQL store: {}", store_message(e)))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_params: &str) -> Result<AnyStore, String> {
    Err("this idemchart was built without PostgreSQL support: build it with the `postgres` feature (on by default) to use a `postgres` store".into())
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
            let Some(machine) = load_or_report(&machine)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Arc::new(Chart::new(machine));
            let event = parse_event(&event, &chart)?;
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let outcome = runtime::apply_at(&mut store, &chart, &process, &event, now)
                .map_err(|e| e.to_string())?;
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
        DurableCommand::Advance {
            store,
            machine,
            process,
            now,
            limit,
        } => {
            let Some(machine) = load_or_report(&machine)? else {
                return Ok(ExitCode::from(1));
            };
            let chart = Arc::new(Chart::new(machine));
            let mut store = open(&store)?;
            let now = now.unwrap_or_else(runtime::now_millis);
            let results = match process {
                Some(process) => {
                    let result = runtime::advance(&mut store, &chart, &process, now);
                    if matches!(&result, Ok(advanced) if advanced.revision.is_none()) {
                        return Err(format!("no process `{process}` in the store"));
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
                println!("{line}");
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
                    println!("{state}");
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!("no process `{process}` in the store")),
            }
        }
        DurableCommand::Outbox {
            store,
            dispatch,
            requeue,
        } => {
            let mut store = open(&store)?;
            if let Some(which) = requeue {
                let key = (which != "all").then_some(which.as_str());
                let requeued = store
                    .requeue_dead(key, runtime::now_millis())
                    .map_err(|e| e.to_string())?;
                if requeued == 0 && key.is_some() {
                    return Err(format!("no dead outbox row has the key `{which}`"));
                }
                println!("{}", serde_json::json!({ "requeued": requeued }));
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
                    println!("{}", outbox_json(&handed));
                    store
                        .finish_attempt(&handed.key, handed.status, handed.attempts, now, None)
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
            println!(
                "{}",
                serde_json::json!({ "purged": purged.applied, "outbox_purged": purged.outbox })
            );
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

#[cfg(test)]
mod tests {
    use super::{Address, address};

    #[test]
    fn store_strings_name_their_store() {
        assert_eq!(address("sqlite:a/b.db"), Ok(Address::Sqlite("a/b.db")));
        assert_eq!(
            address("postgres://u@h:5432/d"),
            Ok(Address::Postgres("postgres://u@h:5432/d"))
        );
        assert_eq!(
            address("postgresql://h/d"),
            Ok(Address::Postgres("postgresql://h/d"))
        );
        assert_eq!(
            address("postgres:host=h dbname=d"),
            Ok(Address::Postgres("host=h dbname=d"))
        );
    }

    #[test]
    fn bad_store_strings_name_the_scheme_but_not_the_rest() {
        let error = address("mysql://root:secret@h/d").unwrap_err();
        assert!(error.starts_with("unknown store scheme `mysql`"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        assert!(address("orders.db").unwrap_err().contains("needs a scheme"));
        assert!(address("sqlite:").unwrap_err().contains("needs a path"));
        assert!(address("postgres:h").unwrap_err().contains("KEY=VALUE"));
    }
}
