//! The store contract and the crash test, on SQLite.

mod runtime_contract;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use idemchart::expr::Event;
use idemchart::store::{SqliteOptions, SqliteStore, Synchronous};
use proptest::prelude::*;

use runtime_contract::{Api, Backend, add, named};

/// SQLite stores as files in a fresh directory under the system temp dir.
struct Sqlite {
    dir: PathBuf,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "idemchart-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

impl Backend for Sqlite {
    type S = SqliteStore;

    fn fresh(&self) -> String {
        std::fs::create_dir_all(&self.dir).expect("temp dir");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("store-{n}.db")).display().to_string()
    }

    fn connect(&self, handle: &str) -> SqliteStore {
        // NORMAL keeps the suite fast; it is safe against killed processes,
        // which is what these tests exercise (FULL is the default, checked below).
        let options = SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        };
        SqliteStore::open(handle, &options).expect("open store")
    }
}

impl Api for SqliteStore {}

fn backend() -> Sqlite {
    Sqlite {
        dir: std::env::temp_dir().join(format!("idemchart-contract-{}", std::process::id())),
    }
}

contract_tests!(backend());
batch_contract_tests!(backend());

/// The tables as the version before timers made them.
const SCHEMA_BEFORE_TIMERS: &str = "
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version INTEGER,
    snapshot TEXT NOT NULL,
    revision INTEGER NOT NULL
);
CREATE TABLE applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision INTEGER NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX applied_events_applied_at ON applied_events (applied_at);
CREATE TABLE outbox (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    effect TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT,
    PRIMARY KEY (process, event_id, position)
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
";

#[test]
fn a_store_from_before_timers_keeps_working() {
    runtime_contract::timers::a_store_from_before_timers_keeps_working(
        &backend(),
        |path, snapshot| {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute_batch(SCHEMA_BEFORE_TIMERS).unwrap();
            conn.execute(
                "INSERT INTO processes VALUES ('old', 'reminder', 1, ?1, 1)",
                [snapshot],
            )
            .unwrap();
            let payload = idemchart::runtime::payload_hash(&named("ORDER", "order-old"));
            conn.execute(
                "INSERT INTO applied_events VALUES ('old', 'order-old', ?1, '{}', 1, ?2)",
                rusqlite::params![payload, runtime_contract::T0 as i64],
            )
            .unwrap();
        },
    );
}

#[test]
fn the_defaults_are_wal_full_and_a_busy_timeout() {
    let dir = test_dir("pragmas");
    let store = SqliteStore::open(dir.join("s.db"), &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("journal_mode").unwrap(), "wal");
    assert_eq!(store.pragma("synchronous").unwrap(), "2", "FULL");
    assert_eq!(store.pragma("busy_timeout").unwrap(), "60000");
}

fn event_strategy() -> impl Strategy<Value = Vec<Event>> {
    // Ids come from a small pool so the same id recurs; an id keeps one
    // payload, as a real sender's would.
    prop::collection::vec(0..12u32, 1..24).prop_map(|picks| {
        picks
            .into_iter()
            .map(|p| match p {
                10 => named("CLOSE", &format!("close-{}", p)),
                11 => named("REOPEN", &format!("reopen-{}", p)),
                _ => add(&format!("add-{p}"), i64::from(p) + 1),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_duplicate_changes_nothing(
        events in event_strategy(),
        redeliveries in prop::collection::vec((0..24usize, 0..24usize), 0..12),
    ) {
        runtime_contract::duplicates_change_nothing(&backend(), &events, &redeliveries);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Requests and invocation completions delivered again, at any point of
    /// a checkout's life, change nothing.
    #[test]
    fn a_redelivered_completion_changes_nothing(
        steps in runtime_contract::invocations::checkout_steps(),
        redeliveries in prop::collection::vec((0..16usize, 0..32usize), 0..10),
    ) {
        runtime_contract::invocations::redelivered_completions_change_nothing(
            &backend(),
            &steps,
            &redeliveries,
        );
    }
}

/// The crash proof on a SQLite file; the file stays intact through the kills.
#[test]
fn killed_appliers_lose_nothing_and_double_nothing() {
    let backend = backend();
    let handle = backend.fresh();
    runtime_contract::crash::killed_appliers_lose_nothing_and_double_nothing(
        &backend,
        &handle,
        &format!("sqlite:{handle}"),
    );
    let store = SqliteStore::open(&handle, &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("integrity_check").unwrap(), "ok");
}

/// The dispatcher's crash proof on a SQLite file.
#[test]
fn killed_dispatchers_deliver_each_completion_once() {
    let backend = backend();
    let handle = backend.fresh();
    runtime_contract::crash::killed_dispatchers_deliver_each_completion_once(
        &backend,
        &handle,
        &format!("sqlite:{handle}"),
    );
    let store = SqliteStore::open(&handle, &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("integrity_check").unwrap(), "ok");
}

/// A store made before stores had secrets gets one when it is opened, and
/// a row already pending keeps the key it was stored with (keys are stored
/// per row, so the new derivation keys only new rows): its receiver sees
/// the same key on the retry after the upgrade as before it.
#[test]
fn a_store_from_before_secrets_gets_one_and_keeps_its_pending_keys() {
    use idemchart::runtime::{Dispatch, DispatchPolicy};
    use idemchart::store::Store;
    let path = test_dir("before-secrets").join("old.db");
    let old_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA_BEFORE_TIMERS).unwrap();
        conn.execute_batch("ALTER TABLE outbox ADD COLUMN invocation TEXT")
            .unwrap();
        let ledger = runtime_contract::ledger();
        let actor = idemchart::interp::Actor::new(std::sync::Arc::clone(&ledger));
        conn.execute(
            "INSERT INTO processes VALUES ('p1', 'ledger', NULL, ?1, 1)",
            [actor.snapshot_json()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO outbox VALUES ('p1', 'a', 0, ?1, 'notify', '{\"amount\":5}', 'pending', 1, 0, 'later', NULL)",
            [old_key],
        )
        .unwrap();
    }
    let mut store = backend().connect(&path.display().to_string());
    let secret = store.secret().clone();
    let rows = store.outbox(None).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].key, old_key);
    let mut seen = Vec::new();
    let chart = runtime_contract::ledger();
    let report = idemchart::runtime::dispatch(
        &mut store,
        &chart,
        runtime_contract::T0,
        &DispatchPolicy::default(),
        |item| {
            seen.push(item.key.clone());
            Dispatch::Done
        },
    )
    .unwrap();
    assert_eq!(report.done, 1);
    assert_eq!(seen, [old_key]);
    // Opened again, the store reads the secret it made the first time.
    drop(store);
    assert_eq!(
        *backend().connect(&path.display().to_string()).secret(),
        secret
    );
}
