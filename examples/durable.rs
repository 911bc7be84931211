//! Throughput of `apply` on SQLite against a bare SQLite loop that does the
//! same row writes per event (look up the id, read the snapshot, update it,
//! insert the applied-event and outbox rows, in one IMMEDIATE transaction),
//! so the difference is the interpreter, the JSON and the hashing.
//!
//! Run with `cargo run --release --example durable [EVENTS]`.

use std::sync::Arc;
use std::time::Instant;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::apply_at;
use idemchart::store::{SqliteOptions, SqliteStore, Synchronous};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

const MACHINE: &str = include_str!("../tests/data/runtime/ledger.yaml");

fn add(i: usize) -> Event {
    let id = format!("e{i}");
    let data = serde_json::json!({ "addId": id, "amount": i % 17 });
    Event::new(
        "ADD",
        Some(Value::from(&serde_json::json!(id))),
        Value::from(&data),
    )
}

fn with_runtime(
    path: &std::path::Path,
    sync: Synchronous,
    events: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let machine = idemchart::syntax::parse(MACHINE, idemchart::syntax::Syntax::Yaml)
        .map_err(|d| format!("{d:?}"))?;
    let chart = Arc::new(Chart::new(machine));
    let options = SqliteOptions {
        synchronous: sync,
        ..SqliteOptions::default()
    };
    let mut store = SqliteStore::open(path, &options)?;
    let started = Instant::now();
    for i in 0..events {
        apply_at(&mut store, &chart, "bench", &add(i), 1_700_000_000_000)?;
    }
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

fn bare(
    path: &std::path::Path,
    sync: Synchronous,
    events: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let sync = if sync == Synchronous::Full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.execute_batch(
        "CREATE TABLE p (id TEXT PRIMARY KEY, snapshot TEXT, revision INTEGER);
         CREATE TABLE a (process TEXT, event_id TEXT, hash TEXT, response TEXT, revision INTEGER,
                         applied_at INTEGER, PRIMARY KEY (process, event_id));
         CREATE TABLE o (process TEXT, event_id TEXT, position INTEGER, key TEXT UNIQUE, effect TEXT,
                         args TEXT, status TEXT, attempts INTEGER, next_attempt_at INTEGER,
                         last_error TEXT, PRIMARY KEY (process, event_id, position));
         INSERT INTO p VALUES ('bench', '{}', 0);",
    )?;
    // Rows of about the size the runtime writes.
    let snapshot = "x".repeat(160);
    let response = "y".repeat(260);
    let key = "k".repeat(64);
    let started = Instant::now();
    for i in 0..events {
        let id = format!("e{i}");
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seen: Option<String> = tx
            .query_row(
                "SELECT response FROM a WHERE process = 'bench' AND event_id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()?;
        assert!(seen.is_none());
        let revision: i64 = tx.query_row("SELECT revision FROM p WHERE id = 'bench'", [], |r| {
            r.get(0)
        })?;
        tx.execute(
            "UPDATE p SET snapshot = ?1, revision = revision + 1 WHERE id = 'bench' AND revision = ?2",
            params![snapshot, revision],
        )?;
        tx.execute(
            "INSERT INTO a VALUES ('bench', ?1, ?2, ?3, ?4, 0)",
            params![id, key, response, revision + 1],
        )?;
        tx.execute(
            "INSERT INTO o VALUES ('bench', ?1, 0, ?2, 'notify', '{}', 'pending', 0, 0, NULL)",
            params![id, format!("{key}{i}")],
        )?;
        tx.commit()?;
    }
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let dir = std::env::temp_dir().join(format!("idemchart-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for (name, sync) in [("FULL", Synchronous::Full), ("NORMAL", Synchronous::Normal)] {
        let runtime = with_runtime(&dir.join(format!("rt-{name}.db")), sync, events)?;
        let loop_rate = bare(&dir.join(format!("bare-{name}.db")), sync, events)?;
        println!(
            "synchronous={name:<6} apply: {runtime:>8.0} events/s   bare SQLite loop: {loop_rate:>8.0} events/s   ({:.0}%)",
            100.0 * runtime / loop_rate
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
