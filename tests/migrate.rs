//! Lazy migration: a process stored at an older version is moved through
//! the declared migration by the first event that touches it, in that
//! event's transaction, and refused by name where none is declared.

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, RuntimeError};
use idemchart::store::{
    AppliedEvent, AttemptRecord, OutboxItem, OutboxStatus, ProcessRow, SqliteStore, Store,
    StoreError, StoreSecret, Transaction,
};
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

/// Version 1 of a shop order for the outbox: a nudge writes a `remind`
/// row, the wait invokes `check`, and the payment writes a `ship` row.
const SHOP_V1: &str = "machine: shop\nversion: 1\neffects: { remind: {}, ship: {} }\ninitial: waiting\nstates:\n  waiting:\n    invoke: { src: checker, id: check }\n    on:\n      NUDGE: { actions: [remind] }\n      PAY: paid\n  paid:\n    entry: [ship]\n    on: { NUDGE: { actions: [remind] } }\n";

/// Version 2 has neither reminders nor the check; `OUTBOX` is its
/// migration's setting for the rows of them.
const SHOP_V2: &str = "machine: shop\nversion: 2\neffects: { ship: {} }\nmigrations: [{ from: 1OUTBOX }]\ninitial: waiting\nstates:\n  waiting:\n    on: { PAY: paid }\n  paid:\n    entry: [ship]\n";

fn shop_v2(outbox: &str) -> Arc<Chart> {
    chart(&SHOP_V2.replace("OUTBOX", outbox))
}

/// The pending rows of `process`, as `effect` names.
fn pending(store: &mut impl Store, process: &str) -> Vec<String> {
    let rows = store.outbox(Some(OutboxStatus::Pending)).unwrap();
    let rows = rows.into_iter().filter(|r| r.process == process);
    rows.map(|r| r.effect).collect()
}

fn cancelled(store: &mut impl Store, process: &str) -> Vec<String> {
    let rows = store.outbox(Some(OutboxStatus::Cancelled)).unwrap();
    let rows = rows.into_iter().filter(|r| r.process == process);
    rows.map(|r| r.effect).collect()
}

/// Processes of version 1: `o-paid` with a `remind` and a `ship` row
/// pending, `o-waiting` with a `remind` row and the `check` invocation.
fn shop_at_v1(store: &mut impl Store) {
    let v1 = chart(SHOP_V1);
    runtime::apply_at(store, &v1, "o-paid", &event("NUDGE", "n1"), 1_000).unwrap();
    runtime::apply_at(store, &v1, "o-paid", &event("PAY", "p1"), 1_001).unwrap();
    runtime::apply_at(store, &v1, "o-paid", &event("NUDGE", "n2"), 1_002).unwrap();
    runtime::apply_at(store, &v1, "o-waiting", &event("NUDGE", "n1"), 1_000).unwrap();
    assert_eq!(pending(store, "o-paid"), ["remind", "ship", "remind"]);
    assert_eq!(pending(store, "o-waiting"), ["remind", "checker"]);
    // Leaving `waiting` cancelled the check of `o-paid` already.
    assert_eq!(cancelled(store, "o-paid"), ["checker"]);
}

#[test]
fn outbox_drop_cancels_the_rows_the_new_machine_lacks_on_first_touch() {
    outbox_drop_on_first_touch(&mut SqliteStore::in_memory().unwrap());
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn postgres_outbox_drop_on_first_touch() {
    outbox_drop_on_first_touch(&mut postgres_store("outbox_drop"));
    a_lost_race_cancels_nothing(&mut postgres_store("lost_race"));
}

/// A fresh schema of the server `IDEMCHART_PG` names.
#[cfg(feature = "postgres")]
fn postgres_store(name: &str) -> idemchart::store::PostgresStore {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    let schema = format!(
        "{name}_{}_{}",
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
    idemchart::store::PostgresStore::connect(&handle).unwrap()
}

/// An event (apply) and a timer round (advance) each migrate a process
/// under `outbox: drop`: its rows of `remind` and of the `check`
/// invocation are cancelled with the write of the snapshot, its `ship` row
/// is left pending, and a dispatcher sends `ship` only. Under `keep`, the
/// default, the `remind` row stays pending.
fn outbox_drop_on_first_touch(store: &mut impl Store) {
    shop_at_v1(store);
    let v2 = shop_v2(", outbox: drop");
    runtime::apply_at(store, &v2, "o-paid", &event("NOTHING", "e1"), 2_000).unwrap();
    assert_eq!(store.process("o-paid").unwrap().unwrap().version, Some(2));
    assert_eq!(pending(store, "o-paid"), ["ship"]);
    assert_eq!(cancelled(store, "o-paid"), ["remind", "checker", "remind"]);

    let advanced = runtime::advance(store, &v2, "o-waiting", 2_000).unwrap();
    assert!(advanced.fired.is_empty());
    let row = store.process("o-waiting").unwrap().unwrap();
    assert_eq!((row.version, row.revision), (Some(2), 2));
    let invocations = &snapshot(store, "o-waiting")["invocations"];
    assert!(
        invocations.as_array().is_none_or(Vec::is_empty),
        "{invocations}"
    );
    assert_eq!(pending(store, "o-waiting"), Vec::<String>::new());
    assert_eq!(cancelled(store, "o-waiting"), ["remind", "checker"]);

    let mut sent = Vec::new();
    let policy = runtime::DispatchPolicy::default();
    runtime::dispatch(store, &v2, 3_000, &policy, |item| {
        sent.push(item.effect.clone());
        runtime::Dispatch::Done
    })
    .unwrap();
    assert_eq!(sent, ["ship"]);

    // `keep`, the default: the row of `remind` is not touched.
    let v1 = chart(SHOP_V1);
    runtime::apply_at(store, &v1, "o-kept", &event("PAY", "p1"), 1_000).unwrap();
    runtime::apply_at(store, &v1, "o-kept", &event("NUDGE", "n1"), 1_001).unwrap();
    runtime::apply_at(
        store,
        &shop_v2(""),
        "o-kept",
        &event("NOTHING", "e1"),
        2_000,
    )
    .unwrap();
    assert_eq!(store.process("o-kept").unwrap().unwrap().version, Some(2));
    assert_eq!(pending(store, "o-kept"), ["ship", "remind"]);
}

/// A store whose transactions lose the race on every process row they
/// write, for the first `losses` writes: another writer, played by the
/// transaction itself, moves the row to the next revision first, so the
/// real revision check fails and the runtime rolls the transaction back.
struct Racing<'s, S> {
    inner: &'s mut S,
    losses: u32,
}

struct RacingTx<'t> {
    inner: &'t mut dyn Transaction,
    losses: &'t mut u32,
}

impl Transaction for RacingTx<'_> {
    fn applied_event(&mut self, p: &str, e: &str) -> Result<Option<AppliedEvent>, StoreError> {
        self.inner.applied_event(p, e)
    }
    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.inner.process(id)
    }
    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        self.inner.insert_process(row)
    }
    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        if *self.losses > 0 {
            *self.losses -= 1;
            let row = self.inner.process(id)?.expect("the row read");
            assert!(
                self.inner
                    .update_process(id, revision, &row.snapshot, row.next_timer_at)?
            );
        }
        self.inner
            .update_process(id, revision, snapshot, next_timer_at)
    }
    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        self.inner.insert_applied_event(row)
    }
    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        self.inner.insert_outbox(item)
    }
    fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        self.inner.cancel_outbox(key)
    }
    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.inner.finish_attempt(attempt)
    }
    fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        self.inner.outbox_item(key)
    }
    fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner.pending_outbox(process)
    }
}

impl<S: Store> Store for Racing<'_, S> {
    fn secret(&self) -> &StoreSecret {
        self.inner.secret()
    }
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let losses = &mut self.losses;
        self.inner
            .transaction(|inner| body(&mut RacingTx { inner, losses }))
    }
    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.inner.process(id)
    }
    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner.outbox(status)
    }
    fn claim_due_of(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner
            .claim_due_of(now, lease_ms, limit, machine, effects)
    }
    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.inner.finish_attempt(attempt)
    }
    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.due_processes(machine, version, now, limit)
    }
    fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.stale_processes(machine, version, after, limit)
    }
    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.inner.purge_applied(machine, before)
    }
    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.inner.purge_outbox(machine, before)
    }
    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        self.inner.requeue_dead(key, now)
    }
    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        self.inner.applied_count(process)
    }
    fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.inner.purge_payloads(machine, before)
    }
    fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        self.inner.applied_events(process, offset, limit)
    }
}

#[test]
fn a_lost_revision_race_cancels_no_row_and_writes_no_snapshot() {
    a_lost_race_cancels_nothing(&mut SqliteStore::in_memory().unwrap());
}

/// The cancels of `outbox: drop` and the migrated snapshot are one
/// transaction: while every write of the process row loses its race, an
/// event, a timer round and `migrate_process` all give up with nothing
/// written, no row cancelled included; once a write wins after a lost
/// race, the rows are cancelled once, with it.
fn a_lost_race_cancels_nothing(store: &mut impl Store) {
    let mut racing = Racing {
        inner: store,
        losses: u32::MAX,
    };
    shop_at_v1(racing.inner);
    let before = racing.inner.outbox(None).unwrap();
    fn rows(store: &mut impl Store) -> Vec<ProcessRow> {
        ["o-paid", "o-waiting"]
            .iter()
            .map(|p| store.process(p).unwrap().unwrap())
            .collect()
    }
    let old = rows(racing.inner);
    let v2 = shop_v2(", outbox: drop");
    let lost = runtime::apply_at(&mut racing, &v2, "o-paid", &event("NOTHING", "e1"), 2_000);
    assert!(
        matches!(lost, Err(RuntimeError::Contention(..))),
        "{lost:?}"
    );
    let lost = runtime::advance(&mut racing, &v2, "o-waiting", 2_000);
    assert!(
        matches!(lost, Err(RuntimeError::Contention(..))),
        "{lost:?}"
    );
    let lost = runtime::migrate_process(&mut racing, &v2, "o-waiting", false);
    assert!(
        matches!(lost, Err(RuntimeError::Contention(..))),
        "{lost:?}"
    );
    assert_eq!(racing.inner.outbox(None).unwrap(), before);
    assert_eq!(rows(racing.inner), old);
    assert_eq!(racing.inner.applied_count("o-paid").unwrap(), 3);

    racing.losses = 1;
    let moved = runtime::migrate_process(&mut racing, &v2, "o-waiting", false)
        .unwrap()
        .unwrap();
    assert_eq!(moved.status, runtime::MoveStatus::Migrated);
    let dropped: Vec<&str> = moved.dropped.outbox.iter().map(|r| &*r.effect).collect();
    assert_eq!(dropped, ["remind", "checker"]);
    assert_eq!(moved.revision, old[1].revision + 1);
    assert_eq!(cancelled(racing.inner, "o-waiting"), ["remind", "checker"]);
    racing.losses = 1;
    runtime::apply_at(&mut racing, &v2, "o-paid", &event("NOTHING", "e1"), 2_000).unwrap();
    assert_eq!(pending(racing.inner, "o-paid"), ["ship"]);
    assert_eq!(
        cancelled(racing.inner, "o-paid"),
        ["remind", "checker", "remind"]
    );
}

/// The async API migrates on first touch through the same write: under
/// `outbox: drop` the `remind` and `check` rows of a process of version 1
/// are cancelled with its migrated snapshot.
#[tokio::test]
async fn the_async_api_cancels_what_outbox_drop_names() {
    use idemchart::runtime::nonblocking;
    use idemchart::store::{AsyncSqliteStore, AsyncStore};
    let store = AsyncSqliteStore::in_memory().await.unwrap();
    let v1 = chart(SHOP_V1);
    nonblocking::apply_at(&store, &v1, "o-1", &event("NUDGE", "n1"), 1_000)
        .await
        .unwrap();
    let v2 = shop_v2(", outbox: drop");
    nonblocking::apply_at(&store, &v2, "o-1", &event("PAY", "p1"), 2_000)
        .await
        .unwrap();
    let row = store.process("o-1").await.unwrap().unwrap();
    assert_eq!(row.version, Some(2));
    let effects = |status| {
        let store = &store;
        async move {
            let rows = store.outbox(Some(status)).await.unwrap();
            rows.into_iter().map(|r| r.effect).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        effects(OutboxStatus::Cancelled).await,
        ["remind", "checker"]
    );
    assert_eq!(effects(OutboxStatus::Pending).await, ["ship"]);
}
