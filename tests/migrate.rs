//! Lazy migration: a process stored at an older version is moved through
//! the declared migration by the first event that touches it, in that
//! event's transaction, and refused by name where none is declared.

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, RuntimeError};
use idemchart::store::{SqliteStore, Store};
use idemchart::syntax::{Syntax, parse};

const V1: &str = "machine: order\nversion: 1\ncontext: { total: 5 }\ninitial: awaiting_payment\nstates:\n  awaiting_payment:\n    after: { 24h: expired }\n    on: { PAY: paid, TOUCH: awaiting_payment }\n  paid: {}\n  expired: {}\n";

const V2: &str = "machine: order\nversion: 2\ncontext: { total: 0, cents: 0 }\nmigrations:\n  - from: 1\n    states: { awaiting_payment: awaiting_pay }\n    context: { cents: \"context.total * 100\" }\ninitial: awaiting_pay\nstates:\n  awaiting_pay:\n    after: { 24h: expired }\n    on: { PAY: paid }\n  paid: {}\n  expired: {}\n";

const V3_FROM_2: &str = "machine: order\nversion: 3\ncontext: { total: 0, cents: 0 }\nmigrations:\n  - from: 2\n    states: { awaiting_pay: waiting }\ninitial: waiting\nstates:\n  waiting:\n    after: { 24h: expired }\n    on: { PAY: paid }\n  paid: {}\n  expired: {}\n";

fn chart(text: &str) -> Arc<Chart> {
    Arc::new(Chart::new(parse(text, Syntax::Yaml).unwrap()))
}

fn event(name: &str, id: &str) -> Event {
    Event::new(name, Some(Value::from(id)), Value::Null)
}

fn snapshot(store: &mut impl Store, id: &str) -> serde_json::Value {
    serde_json::from_str(&store.process(id).unwrap().unwrap().snapshot).unwrap()
}

#[test]
fn the_first_event_migrates_a_stored_process_and_the_version_column_follows() {
    the_first_event_migrates(&mut SqliteStore::in_memory().unwrap());
}

/// On PostgreSQL, whose `UPDATE_PROCESS` reads the version from the
/// snapshot with its own JSON functions, and whose refusal writes nothing.
#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn postgres_lazy_migration() {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    let schema = format!(
        "lazy_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    ::postgres::Client::connect(&base, ::postgres::NoTls)
        .expect("connect to PostgreSQL")
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("create schema");
    let handle = format!("{base} options='-c search_path={schema}'");
    let mut store = idemchart::store::PostgresStore::connect(&handle).unwrap();
    the_first_event_migrates(&mut store);
    a_version_without_a_migration_is_refused(&mut store);
}

fn the_first_event_migrates(store: &mut impl Store) {
    let (v1, v2) = (chart(V1), chart(V2));
    runtime::apply_at(store, &v1, "o-1", &event("TOUCH", "e1"), 1_000).unwrap();
    assert_eq!(store.process("o-1").unwrap().unwrap().version, Some(1));

    runtime::apply_at(store, &v2, "o-1", &event("PAY", "e2"), 2_000).unwrap();
    let row = store.process("o-1").unwrap().unwrap();
    assert_eq!((row.version, row.revision), (Some(2), 2));
    let after = snapshot(store, "o-1");
    assert_eq!(after["configuration"], serde_json::json!(["paid"]));
    assert_eq!(
        after["context"],
        serde_json::json!({ "total": 5, "cents": 500 })
    );
    // A process still at 1 that is never touched keeps its row and version.
    runtime::apply_at(store, &v1, "o-2", &event("TOUCH", "e3"), 1_000).unwrap();
    assert_eq!(store.process("o-2").unwrap().unwrap().version, Some(1));
}

/// The pending timer moves with its renamed state and fires on the new
/// machine at the time it was due, as it does for a process started there.
#[test]
fn a_kept_timer_fires_on_the_new_machine() {
    let (v1, v2) = (chart(V1), chart(V2));
    let mut store = SqliteStore::in_memory().unwrap();
    runtime::apply_at(&mut store, &v1, "o-1", &event("TOUCH", "e1"), 0).unwrap();
    runtime::apply_at(&mut store, &v2, "fresh", &event("NOTHING", "e1"), 0).unwrap();
    let day = 24 * 3_600 * 1_000;
    runtime::advance(&mut store, &v2, "o-1", day).unwrap();
    runtime::advance(&mut store, &v2, "fresh", day).unwrap();
    let (migrated, fresh) = (snapshot(&mut store, "o-1"), snapshot(&mut store, "fresh"));
    assert_eq!(migrated["configuration"], serde_json::json!(["expired"]));
    assert_eq!(migrated["configuration"], fresh["configuration"]);
    assert_eq!(migrated["timers"], fresh["timers"]);
}

/// The timer runner of the new machine takes the processes of a version it
/// migrates from: a kept timer fires there, a dropped one is gone with the
/// migration, which is written all the same (else the row stays due and is
/// picked at every round); a version it cannot take is left alone.
#[test]
fn the_timer_runner_migrates_the_due_processes_of_an_older_version() {
    let day = 24 * 3_600 * 1_000;
    let dropping = V2.replace(
        "    context: { cents: \"context.total * 100\" }\n",
        "    context: { cents: \"context.total * 100\" }\n    timers: drop\n",
    );
    assert_ne!(dropping, V2);
    for (v2, configuration, fired) in [(V2, "expired", 1), (dropping.as_str(), "awaiting_pay", 0)] {
        let (v1, v2, v3) = (chart(V1), chart(v2), chart(V3_FROM_2));
        let mut store = SqliteStore::in_memory().unwrap();
        runtime::apply_at(&mut store, &v1, "o-1", &event("TOUCH", "e1"), 0).unwrap();
        // Version 3 declares no migration from 1: its runner leaves o-1.
        assert!(
            runtime::advance_due(&mut store, &v3, day, 10)
                .unwrap()
                .is_empty()
        );
        let due = runtime::advance_due(&mut store, &v2, day, 10).unwrap();
        assert_eq!(due.len(), 1, "{due:?}");
        let advanced = due[0].result.as_ref().expect("advanced");
        assert_eq!(advanced.fired.len(), fired, "{advanced:?}");
        let row = store.process("o-1").unwrap().unwrap();
        assert_eq!((row.version, row.revision), (Some(2), 2));
        assert_eq!(
            snapshot(&mut store, "o-1")["configuration"],
            serde_json::json!([configuration])
        );
        // Nothing is due any more: the next round picks nothing.
        assert!(
            runtime::advance_due(&mut store, &v2, day, 10)
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn a_version_without_a_migration_is_refused_by_name_and_nothing_is_written() {
    a_version_without_a_migration_is_refused(&mut SqliteStore::in_memory().unwrap());
}

fn a_version_without_a_migration_is_refused(store: &mut impl Store) {
    let (v1, v3) = (chart(V1), chart(V3_FROM_2));
    runtime::apply_at(store, &v1, "r-1", &event("TOUCH", "e1"), 1_000).unwrap();
    let before = store.process("r-1").unwrap().unwrap();
    let error = runtime::apply_at(store, &v3, "r-1", &event("PAY", "e2"), 2_000).unwrap_err();
    assert!(matches!(error, RuntimeError::Migration(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "process r-1 runs version 1; machine order is version 3 and declares no migration from 1"
    );
    let after = store.process("r-1").unwrap().unwrap();
    assert_eq!(after, before);
    assert_eq!(store.applied_count("r-1").unwrap(), 1);
}

/// 1 → 2 → 3 across two deploys: the version-2 file moves the process to
/// 2, then the version-3 file, which declares only `from: 2`, moves it on.
#[test]
fn chained_across_deploys() {
    let (v1, v2, v3) = (chart(V1), chart(V2), chart(V3_FROM_2));
    let mut store = SqliteStore::in_memory().unwrap();
    runtime::apply_at(&mut store, &v1, "o-1", &event("TOUCH", "e1"), 1_000).unwrap();
    runtime::apply_at(&mut store, &v2, "o-1", &event("NOTHING", "e2"), 2_000).unwrap();
    runtime::apply_at(&mut store, &v3, "o-1", &event("NOTHING", "e3"), 3_000).unwrap();
    let row = store.process("o-1").unwrap().unwrap();
    assert_eq!(row.version, Some(3));
    let after = snapshot(&mut store, "o-1");
    assert_eq!(after["configuration"], serde_json::json!(["waiting"]));
    assert_eq!(
        after["context"],
        serde_json::json!({ "total": 5, "cents": 500 })
    );
}
