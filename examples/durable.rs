//! Throughput of `apply` (one transaction per event) and `apply_batch`
//! (many events per transaction) against a bare loop on the same store that
//! writes the same rows without idemchart, grouped into the same
//! transactions: the limit the store sets here. The difference is the
//! interpreter, the JSON, the hashing and the runtime's bookkeeping.
//!
//! The bare loop runs the statements `apply` runs: look the ids up, read the
//! process rows (once per process and transaction), update them under the
//! revision check (or insert them), insert the applied-event rows and the
//! outbox rows. Its rows are the very rows the runtime writes (taken from a
//! trial run), on the same schema (created by the store), with prepared
//! statements cached as the store caches them. On SQLite it runs them one
//! row at a time, as the store does there (no round trips to save); on
//! PostgreSQL as the store does there: the reads of a batch in one
//! statement, then every write in one statement (a data-modifying `WITH`
//! part per table, each table's rows a JSON array), which the server
//! commits before it answers: two round trips, no `BEGIN` or `COMMIT`.
//!
//! Run with `cargo run --release --example durable [EVENTS] [--pg CONNECTION]`;
//! with the `postgres` feature and `--pg` (or `IDEMCHART_PG`), PostgreSQL is
//! measured too, each run in a new schema that is dropped afterwards.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{Outcome, apply_at, apply_batch_at, event_id};
use idemchart::store::{AppliedEvent, OutboxItem, SqliteOptions, SqliteStore, Store, Synchronous};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

type Error = Box<dyn std::error::Error>;

const MACHINE: &str = include_str!("../tests/data/runtime/ledger.yaml");
/// Events go to this many processes in turn, so a batch holds several
/// events of each.
const PROCESSES: usize = 10;
/// Events per transaction when batched.
const BATCH: usize = 100;
/// Runtime and bare loop alternate this many times; the best run of each
/// counts, which keeps the other load of a shared machine out of the ratio.
const ROUNDS: usize = 5;
const NOW: u64 = 1_700_000_000_000;

/// `(process, event)` pairs: event `i` goes to process `p{i % PROCESSES}`.
fn workload(events: usize) -> Vec<(String, Event)> {
    (0..events)
        .map(|i| {
            let id = format!("e{i}");
            let data = serde_json::json!({ "addId": id, "amount": i % 17 });
            let event = Event::new(
                "ADD",
                Some(Value::from(&serde_json::json!(id))),
                Value::from(&data),
            );
            (format!("p{}", i % PROCESSES), event)
        })
        .collect()
}

/// The rows the runtime writes for a workload, event by event.
struct Rows {
    machine: String,
    version: Option<u64>,
    events: Vec<(AppliedEvent, Vec<OutboxItem>)>,
    /// The last snapshot of each process, written at every update.
    snapshots: HashMap<String, String>,
}

/// Runs `work` through the runtime on a private store and reads back what
/// it wrote, for the bare loops to write the same.
fn rows_of(chart: &Arc<Chart>, work: &[(String, Event)]) -> Result<Rows, Error> {
    let mut store = SqliteStore::in_memory()?;
    for answer in apply_batch_at(&mut store, chart, work, NOW)? {
        answer?;
    }
    let mut outbox: BTreeMap<(String, String), Vec<OutboxItem>> = BTreeMap::new();
    for item in store.outbox(None)? {
        outbox
            .entry((item.process.clone(), item.event_id.clone()))
            .or_default()
            .push(item);
    }
    let mut events = Vec::with_capacity(work.len());
    for (process, event) in work {
        let id = event_id(event).ok_or("an event without id")?;
        let applied = store
            .transaction(|tx| tx.applied_event(process, &id))?
            .ok_or("an event the runtime did not record")?;
        let items = outbox.remove(&(process.clone(), id)).unwrap_or_default();
        events.push((applied, items));
    }
    let mut snapshots = HashMap::new();
    for (process, _) in work {
        if !snapshots.contains_key(process) {
            let row = store.process(process)?.ok_or("a process not stored")?;
            snapshots.insert(process.clone(), row.snapshot);
        }
    }
    let machine = chart.machine();
    Ok(Rows {
        machine: machine.name.clone(),
        version: machine.version,
        events,
        snapshots,
    })
}

/// Events per second of `apply` (`batch` 1) or `apply_batch` over `work`.
fn with_runtime<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    work: &[(String, Event)],
    batch: usize,
) -> Result<f64, Error> {
    let started = Instant::now();
    for chunk in work.chunks(batch) {
        if batch == 1 {
            let (process, event) = &chunk[0];
            check(apply_at(store, chart, process, event, NOW)?)?;
        } else {
            for answer in apply_batch_at(store, chart, chunk, NOW)? {
                check(answer?)?;
            }
        }
    }
    Ok(work.len() as f64 / started.elapsed().as_secs_f64())
}

fn check(outcome: Outcome) -> Result<(), Error> {
    match outcome {
        Outcome::Applied { .. } => Ok(()),
        other => Err(format!("expected applied, got {other:?}").into()),
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn sqlite_options(sync: Synchronous) -> SqliteOptions {
    SqliteOptions {
        synchronous: sync,
        ..SqliteOptions::default()
    }
}

/// Events per second of the bare SQLite loop writing `rows`.
fn bare_sqlite(
    path: &std::path::Path,
    sync: Synchronous,
    rows: &Rows,
    batch: usize,
) -> Result<f64, Error> {
    // The store creates the schema, so both sides write the same tables and
    // indexes; then it is closed and plain rusqlite takes over.
    drop(SqliteStore::open(path, &sqlite_options(sync))?);
    let mut conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let sync = if sync == Synchronous::Full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.pragma_update(None, "synchronous", sync)?;
    let started = Instant::now();
    for chunk in rows.events.chunks(batch) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut revisions: HashMap<&str, i64> = HashMap::new();
        for (applied, items) in chunk {
            let process = applied.process.as_str();
            let seen: Option<String> = tx
                .prepare_cached(
                    "SELECT payload_hash, response, revision, applied_at FROM applied_events
                     WHERE process = ?1 AND event_id = ?2",
                )?
                .query_row(params![process, applied.event_id], |r| r.get(0))
                .optional()?;
            assert!(seen.is_none());
            let revision = match revisions.get(process) {
                Some(revision) => Some(*revision),
                None => tx
                    .prepare_cached(
                        "SELECT id, machine, version, snapshot, revision FROM processes WHERE id = ?1",
                    )?
                    .query_row(params![process], |r| r.get::<_, i64>(4))
                    .optional()?,
            };
            let snapshot = &rows.snapshots[process];
            let written = match revision {
                Some(revision) => tx
                    .prepare_cached(
                        "UPDATE processes SET snapshot = ?1, revision = revision + 1
                         WHERE id = ?2 AND revision = ?3",
                    )?
                    .execute(params![snapshot, process, revision])?,
                None => tx
                    .prepare_cached(
                        "INSERT INTO processes (id, machine, version, snapshot, revision)
                         VALUES (?1, ?2, ?3, ?4, 1) ON CONFLICT (id) DO NOTHING",
                    )?
                    .execute(params![
                        process,
                        rows.machine,
                        rows.version.map(to_i64),
                        snapshot
                    ])?,
            };
            assert_eq!(written, 1);
            tx.prepare_cached(
                "INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                process,
                applied.event_id,
                applied.payload_hash,
                applied.response,
                to_i64(applied.revision),
                to_i64(applied.applied_at)
            ])?;
            for item in items {
                tx.prepare_cached(
                    "INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    item.process,
                    item.event_id,
                    item.position,
                    item.key,
                    item.effect,
                    item.args,
                    item.status.as_str(),
                    item.attempts,
                    to_i64(item.next_attempt_at),
                    item.last_error
                ])?;
            }
            revisions.insert(process, revision.unwrap_or(0) + 1);
        }
        tx.commit()?;
    }
    Ok(rows.events.len() as f64 / started.elapsed().as_secs_f64())
}

/// Alternates `runtime` and `bare` `ROUNDS` times and prints the best rate
/// of each and their ratio.
fn compare(
    label: &str,
    mut runtime: impl FnMut(usize) -> Result<f64, Error>,
    mut bare: impl FnMut(usize) -> Result<f64, Error>,
) -> Result<(), Error> {
    let (mut best_runtime, mut best_bare) = (0f64, 0f64);
    for round in 0..ROUNDS {
        best_runtime = best_runtime.max(runtime(round)?);
        best_bare = best_bare.max(bare(round)?);
    }
    println!(
        "{label:<52} apply {best_runtime:>7.0} events/s   bare loop {best_bare:>7.0} events/s   ratio {:.2}",
        best_runtime / best_bare
    );
    Ok(())
}

fn sqlite(chart: &Arc<Chart>, events: usize) -> Result<(), Error> {
    let dir = std::env::temp_dir().join(format!("idemchart-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for (name, sync) in [("FULL", Synchronous::Full), ("NORMAL", Synchronous::Normal)] {
        for batch in [1, BATCH] {
            // One fsync per event makes FULL slow: fewer events say as much.
            let n = if sync == Synchronous::Full && batch == 1 {
                events.min(1_000)
            } else {
                events
            };
            let work = workload(n);
            let rows = rows_of(chart, &work)?;
            let path =
                |side: &str, round: usize| dir.join(format!("{side}-{name}-{batch}-{round}.db"));
            compare(
                &format!("SQLite synchronous={name} {}", grouping(batch)),
                |round| {
                    let mut store = SqliteStore::open(path("rt", round), &sqlite_options(sync))?;
                    with_runtime(&mut store, chart, &work, batch)
                },
                |round| bare_sqlite(&path("bare", round), sync, &rows, batch),
            )?;
        }
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn grouping(batch: usize) -> String {
    if batch == 1 {
        "one event per transaction".to_string()
    } else {
        format!("{batch} events per transaction")
    }
}

#[cfg(feature = "postgres")]
mod pg {
    use super::*;
    use idemchart::store::PostgresStore;

    /// A new schema on the server `base` names; returns the connection
    /// string that uses it, and the schema's name.
    fn fresh_schema(base: &str, n: usize) -> Result<(String, String), Error> {
        let schema = format!("durable_{}_{n}", std::process::id());
        let mut admin = postgres::Client::connect(base, postgres::NoTls)?;
        admin.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
        let handle = if base.starts_with("postgres://") || base.starts_with("postgresql://") {
            let joint = if base.contains('?') { '&' } else { '?' };
            format!("{base}{joint}options=-c%20search_path%3D{schema}")
        } else {
            format!("{base} options='-c search_path={schema}'")
        };
        Ok((handle, schema))
    }

    fn drop_schema(base: &str, schema: &str) -> Result<(), Error> {
        let mut admin = postgres::Client::connect(base, postgres::NoTls)?;
        admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
        Ok(())
    }

    // The bare loop's statements: those of the store's batches (the rows
    // of each table as a JSON array of rows), written here again so that
    // no idemchart code runs in the loop.

    /// The marks already seen (kind 0) and the process rows (kind 1, with
    /// their revision) of a batch, in one statement.
    const READ: &str = "SELECT 0, a.process, CAST(0 AS BIGINT)
         FROM jsonb_array_elements(CAST(CAST($1 AS TEXT) AS JSONB)) AS wanted
         CROSS JOIN LATERAL (SELECT * FROM applied_events
         WHERE process = wanted.value->>0 AND event_id = wanted.value->>1 LIMIT 1) AS a
         UNION ALL
         SELECT 1, p.id, p.revision
         FROM jsonb_array_elements(CAST(CAST($2 AS TEXT) AS JSONB)) AS wanted
         CROSS JOIN LATERAL (SELECT * FROM processes WHERE id = wanted.value->>0 LIMIT 1) AS p";
    /// Every write of a batch, committed by the server as one statement:
    /// the process rows inserted and updated (under the revision check),
    /// the marks and the outbox rows; it answers how many process rows it
    /// wrote.
    const WRITE: &str = "WITH inserted AS (INSERT INTO processes (id, machine, version, snapshot, revision)
         SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, CAST(value->>4 AS BIGINT)
         FROM jsonb_array_elements(CAST(CAST($1 AS TEXT) AS JSONB)) WHERE true
         ON CONFLICT (id) DO NOTHING RETURNING id),
         updated AS (UPDATE processes SET snapshot = value->>1, revision = CAST(value->>3 AS BIGINT)
         FROM jsonb_array_elements(CAST(CAST($2 AS TEXT) AS JSONB))
         WHERE processes.id = value->>0 AND processes.revision = CAST(value->>2 AS BIGINT)
         AND processes.id = ANY(ARRAY(SELECT value->>0 FROM jsonb_array_elements(CAST(CAST($2 AS TEXT) AS JSONB))))
         RETURNING processes.id),
         marked AS (INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at)
         SELECT value->>0, value->>1, value->>2, value->>3, CAST(value->>4 AS BIGINT), CAST(value->>5 AS BIGINT)
         FROM jsonb_array_elements(CAST(CAST($3 AS TEXT) AS JSONB))),
         queued AS (INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at)
         SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, value->>4, value->>5, value->>6,
         CAST(value->>7 AS BIGINT), CAST(value->>8 AS BIGINT)
         FROM jsonb_array_elements(CAST(CAST($4 AS TEXT) AS JSONB)) WHERE true ON CONFLICT DO NOTHING)
         SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM updated)";

    /// Events per second of the bare PostgreSQL loop writing `rows`: per
    /// batch, the reads in one statement and the writes with their commit
    /// in one more, as the store sends them.
    fn bare(handle: &str, rows: &Rows, batch: usize) -> Result<f64, Error> {
        drop(PostgresStore::connect(handle)?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(handle, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            let (read, write) = (client.prepare(READ).await?, client.prepare(WRITE).await?);
            let started = Instant::now();
            for chunk in rows.events.chunks(batch) {
                let marks: Vec<(&str, &str)> = chunk
                    .iter()
                    .map(|(applied, _)| (applied.process.as_str(), applied.event_id.as_str()))
                    .collect();
                let mut processes: Vec<[&str; 1]> = marks.iter().map(|(p, _)| [*p]).collect();
                processes.sort_unstable();
                processes.dedup();
                let (marks, processes) = (
                    serde_json::to_string(&marks)?,
                    serde_json::to_string(&processes)?,
                );
                let read = client.query(&read, &[&marks, &processes]).await?;
                assert!(
                    read.iter().all(|row| row.get::<_, i32>(0) == 1),
                    "no mark seen"
                );
                let mut revisions: HashMap<String, (i64, i64)> = read
                    .iter()
                    .map(|row| (row.get::<_, String>(1), row.get::<_, i64>(2)))
                    .map(|(id, revision)| (id, (revision, revision)))
                    .collect();
                let (mut inserts, mut updates) = (Vec::new(), Vec::new());
                let (mut marks, mut items) = (Vec::new(), Vec::new());
                for (applied, outbox) in chunk {
                    let process = applied.process.as_str();
                    let (_, written) = revisions.entry(process.to_string()).or_insert((0, 0));
                    *written += 1;
                    marks.push((
                        process,
                        &applied.event_id,
                        &applied.payload_hash,
                        &applied.response,
                        to_i64(applied.revision),
                        to_i64(applied.applied_at),
                    ));
                    for item in outbox {
                        items.push((
                            &item.process,
                            &item.event_id,
                            item.position,
                            &item.key,
                            &item.effect,
                            &item.args,
                            item.status.as_str(),
                            item.attempts,
                            to_i64(item.next_attempt_at),
                        ));
                    }
                }
                for (process, (read, written)) in &revisions {
                    let snapshot = &rows.snapshots[process];
                    if *read == 0 {
                        let version = rows.version.map(to_i64);
                        inserts.push((process, &rows.machine, version, snapshot, *written));
                    } else {
                        updates.push((process, snapshot, *read, *written));
                    }
                }
                let (inserts, updates) = (
                    serde_json::to_string(&inserts)?,
                    serde_json::to_string(&updates)?,
                );
                let (marks, items) = (
                    serde_json::to_string(&marks)?,
                    serde_json::to_string(&items)?,
                );
                let written: i64 = client
                    .query_one(&write, &[&inserts, &updates, &marks, &items])
                    .await?
                    .get(0);
                assert_eq!(usize::try_from(written)?, revisions.len());
            }
            Ok::<f64, Error>(rows.events.len() as f64 / started.elapsed().as_secs_f64())
        })
    }

    pub fn measure(chart: &Arc<Chart>, base: &str, events: usize) -> Result<(), Error> {
        let mut schemas = Vec::new();
        let result = (|| {
            for batch in [1, BATCH] {
                // Every commit waits for the server's WAL flush.
                let n = if batch == 1 {
                    events.min(2_000)
                } else {
                    events
                };
                let work = workload(n);
                let rows = rows_of(chart, &work)?;
                // A new schema for every run, runtime and bare loop alike.
                let mut handles = Vec::new();
                for _ in 0..2 * ROUNDS {
                    let (handle, schema) = fresh_schema(base, schemas.len())?;
                    schemas.push(schema);
                    handles.push(handle);
                }
                compare(
                    &format!("PostgreSQL {}", grouping(batch)),
                    |round| {
                        let mut store = PostgresStore::connect(&handles[2 * round])?;
                        with_runtime(&mut store, chart, &work, batch)
                    },
                    |round| bare(&handles[2 * round + 1], &rows, batch),
                )?;
            }
            Ok::<(), Error>(())
        })();
        for schema in &schemas {
            drop_schema(base, schema)?;
        }
        result
    }
}

fn main() -> Result<(), Error> {
    let mut events = 20_000;
    let mut pg = std::env::var("IDEMCHART_PG").ok();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--pg" {
            pg = Some(args.next().ok_or("--pg needs a connection string")?);
        } else {
            events = arg
                .parse()
                .map_err(|_| format!("not a number of events: {arg}"))?;
        }
    }
    let machine = idemchart::syntax::parse(MACHINE, idemchart::syntax::Syntax::Yaml)
        .map_err(|d| format!("{d:?}"))?;
    let chart = Arc::new(Chart::new(machine));
    sqlite(&chart, events)?;
    match pg {
        #[cfg(feature = "postgres")]
        Some(base) => pg::measure(&chart, &base, events)?,
        #[cfg(not(feature = "postgres"))]
        Some(_) => println!("PostgreSQL: not measured, build with `--features postgres`"),
        None => println!("PostgreSQL: not measured, give `--pg CONNECTION` or set IDEMCHART_PG"),
    }
    Ok(())
}
