//! The store contract: every `Store` must pass these, run through `apply`.
//! A backend's test file provides a `Backend` (fresh stores, and more
//! connections to one) and calls `contract_tests!`.

use std::cell::Cell;
use std::collections::HashSet;
use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart};
use idemchart::runtime::{self, Dispatch, DispatchPolicy, Outcome, RuntimeError, idempotency_key};
use idemchart::store::{
    AppliedEvent, AttemptRecord, OutboxItem, OutboxStatus, ProcessRow, Store, StoreError,
    Transaction,
};
use idemchart::syntax::{self, Syntax};

pub mod api;
pub mod crash;

pub use api::Api;
use api::{apply_at, dispatch};

/// A way to reach one kind of store.
pub trait Backend: Sync {
    type S: Api + Send;
    /// A new, empty store, named by the returned handle.
    fn fresh(&self) -> String;
    /// Another connection to the store `handle` names.
    fn connect(&self, handle: &str) -> Self::S;
}

pub fn chart(text: &str) -> Arc<Chart> {
    let machine = syntax::parse(text, Syntax::Yaml).expect("test machine loads");
    Arc::new(Chart::new(machine))
}

pub fn ledger() -> Arc<Chart> {
    chart(include_str!("../data/runtime/ledger.yaml"))
}

pub fn add(id: &str, amount: i64) -> Event {
    let data = serde_json::json!({ "addId": id, "amount": amount });
    Event::new(
        "ADD",
        Some(Value::from(&serde_json::json!(id))),
        Value::from(&data),
    )
}

pub fn named(name: &str, id: &str) -> Event {
    Event::new(name, Some(Value::from(&serde_json::json!(id))), Value::Null)
}

pub const T0: u64 = 1_700_000_000_000;

/// Everything a store holds about one process, to compare before and after.
pub fn state_of<S: Store>(
    store: &mut S,
    process: &str,
) -> (Option<ProcessRow>, usize, Vec<OutboxItem>) {
    (
        store.process(process).unwrap(),
        store.applied_count(process).unwrap(),
        store.outbox(None).unwrap(),
    )
}

pub fn duplicate_answers_with_the_frozen_bytes<B: Backend>(backend: &B) {
    let chart = ledger();
    let handle = backend.fresh();
    let mut store = backend.connect(&handle);
    let first = apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    let Outcome::Applied { response, revision } = &first else {
        panic!("expected applied, got {first:?}");
    };
    assert_eq!(*revision, 1);
    // Later events change the process; the duplicate still gets the first answer.
    apply_at(&mut store, &chart, "p1", &add("b", 7), T0 + 1).unwrap();
    let expected = Outcome::Duplicate {
        response: response.clone(),
        revision: 1,
    };
    let again = apply_at(&mut store, &chart, "p1", &add("a", 5), T0 + 2).unwrap();
    assert_eq!(again, expected);
    // Another connection gets the same bytes too.
    let mut other = backend.connect(&handle);
    assert_eq!(
        apply_at(&mut other, &chart, "p1", &add("a", 5), T0 + 3).unwrap(),
        expected
    );
    let (row, applied, outbox) = state_of(&mut store, "p1");
    assert_eq!(row.unwrap().revision, 2);
    assert_eq!(applied, 2);
    assert_eq!(outbox.len(), 2);
    let value: serde_json::Value = serde_json::from_str(response).unwrap();
    assert_eq!(value["outcome"], "applied");
    assert_eq!(value["revision"], 1);
    assert_eq!(value["context"]["total"], 5);
    assert_eq!(value["configuration"], serde_json::json!(["open"]));
    assert_eq!(
        value["effects"][0]["key"],
        idempotency_key(store.secret(), "ledger", "notify", "p1", "a", 0)
    );
}

/// Issue 29: machine `fx`'s effect `notify` and machine `other`'s effect
/// `ship`, each applied to process `x1` with event id `g1`, in two stores:
/// four rows, four keys, none shared, so a receiver that deduplicates by
/// key never drops a different call. Reopened, a store reads the secret it
/// was made with: the same step gives the same key, and a redelivery after
/// the marks were purged finds its row under it and adds none.
pub fn outgoing_keys_are_the_machine_effect_and_store_own<B: Backend>(backend: &B) {
    let fx = chart(
        "machine: fx\nevents: { GO: {} }\neffects: { notify: { idempotency: key } }\ndedup: { retention: 1s }\ninitial: a\nstates:\n  a: { on: { GO: { actions: [{ effect: notify, with: { n: \"1\" } }] } } }\n  b: {}\n",
    );
    let other = chart(
        "machine: other\nevents: { GO: {} }\neffects: { ship: { idempotency: key } }\ninitial: a\nstates:\n  a: { on: { GO: { target: b, actions: [{ effect: ship, with: { n: \"101\" } }] } } }\n  b: {}\n",
    );
    let go = named("GO", "g1");
    let handles = [backend.fresh(), backend.fresh()];
    let mut keys = Vec::new();
    for handle in &handles {
        for chart in [&fx, &other] {
            // One process per machine: a process runs one machine.
            let mut store = backend.connect(handle);
            let process = format!("x1-{}", chart.machine().name);
            apply_at(&mut store, chart, &process, &go, T0).unwrap();
            let rows: Vec<OutboxItem> = store
                .outbox(None)
                .unwrap()
                .into_iter()
                .filter(|row| row.process == process)
                .collect();
            assert_eq!(rows.len(), 1, "{rows:?}");
            keys.push(rows[0].key.clone());
        }
    }
    // The same (process, event id) pair in each store: x1 of `fx` and `other`.
    let mut fx_a = backend.connect(&handles[0]);
    let mut fx_b = backend.connect(&handles[1]);
    assert_ne!(
        fx_a.secret(),
        fx_b.secret(),
        "each store makes its own secret"
    );
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(key.len(), 64);
        for other in &keys[i + 1..] {
            assert_ne!(key, other, "{keys:?}");
        }
    }
    // Shared (process, event id) across two stores, same machine and effect.
    apply_at(&mut fx_a, &fx, "x1", &go, T0).unwrap();
    apply_at(&mut fx_b, &fx, "x1", &go, T0).unwrap();
    let key_of = |store: &mut B::S| {
        store
            .outbox(None)
            .unwrap()
            .into_iter()
            .find(|row| row.process == "x1")
            .expect("x1's row")
            .key
    };
    let (a, b) = (key_of(&mut fx_a), key_of(&mut fx_b));
    assert_ne!(a, b, "two stores never share a key");
    assert_eq!(
        a,
        idempotency_key(fx_a.secret(), "fx", "notify", "x1", "g1", 0)
    );
    // Reopened: the same secret, so the same key for the same step.
    let secret = fx_a.secret().clone();
    drop(fx_a);
    let mut reopened = backend.connect(&handles[0]);
    assert_eq!(*reopened.secret(), secret, "the secret persists");
    assert_eq!(key_of(&mut reopened), a);
    let purged = api::purge(&mut reopened, &fx, T0 + 10_000).unwrap();
    assert_eq!(purged.applied, 2, "the marks of x1 and x1-fx");
    let again = apply_at(&mut reopened, &fx, "x1", &go, T0 + 10_000).unwrap();
    assert_eq!(again.kind(), "applied", "the mark is gone");
    let value: serde_json::Value = serde_json::from_str(again.response().unwrap()).unwrap();
    assert_eq!(value["effects"][0]["key"], a.as_str());
    let rows: Vec<OutboxItem> = reopened
        .outbox(None)
        .unwrap()
        .into_iter()
        .filter(|row| row.process == "x1")
        .collect();
    assert_eq!(rows.len(), 1, "the row already there stands for it");
}

pub fn key_order_in_the_payload_is_not_a_conflict<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    let reordered = Event::new(
        "ADD",
        Some(Value::from(&serde_json::json!("a"))),
        Value::from(&serde_json::json!({ "amount": 5, "addId": "a" })),
    );
    let outcome = apply_at(&mut store, &chart, "p1", &reordered, T0).unwrap();
    assert_eq!(outcome.kind(), "duplicate");
}

pub fn conflict_writes_nothing<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    let before = state_of(&mut store, "p1");
    let outcome = apply_at(&mut store, &chart, "p1", &add("a", 6), T0 + 1).unwrap();
    assert_eq!(outcome, Outcome::Conflict);
    // Another event type under the same id is a conflict as well.
    let outcome = apply_at(&mut store, &chart, "p1", &named("CLOSE", "a"), T0 + 1).unwrap();
    assert_eq!(outcome, Outcome::Conflict);
    assert_eq!(state_of(&mut store, "p1"), before);
}

pub fn an_event_without_id_writes_nothing<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    let event = Event::new("CLOSE", None, Value::Null);
    let error = apply_at(&mut store, &chart, "p1", &event, T0).unwrap_err();
    assert!(error.to_string().contains("has no id"), "{error}");
    assert_eq!(state_of(&mut store, "p1"), (None, 0, Vec::new()));
}

/// An event whose step loops until its microsteps run out is an error that
/// writes nothing: no snapshot, no mark, no outbox row. It is not frozen, so
/// a redelivery meets the same error, and the process takes other events.
pub fn an_event_that_does_not_settle_writes_nothing<B: Backend>(backend: &B) {
    let chart = chart(include_str!("../data/runtime/loop.yaml"));
    let mut store = backend.connect(&backend.fresh());
    // On a process that does not exist yet, nothing is created.
    let error = apply_at(&mut store, &chart, "p0", &named("GO", "g0"), T0).unwrap_err();
    assert!(matches!(error, RuntimeError::Unsettled { .. }), "{error}");
    assert_eq!(state_of(&mut store, "p0"), (None, 0, Vec::new()));

    apply_at(&mut store, &chart, "p1", &named("NOTA", "n1"), T0).unwrap();
    let before = state_of(&mut store, "p1");
    assert_eq!(before.2.len(), 1, "NOTA's effect is in the outbox");
    for retry in 0..2 {
        let error =
            apply_at(&mut store, &chart, "p1", &named("GO", "g1"), T0 + 1 + retry).unwrap_err();
        let RuntimeError::Unsettled { process, unsettled } = &error else {
            panic!("expected unsettled, got {error}");
        };
        assert_eq!(process, "p1");
        assert_eq!(unsettled.event.as_deref(), Some("GO"));
        assert_eq!(unsettled.limit, 500, "the machine's `limits.microsteps`");
        assert_eq!(unsettled.paths, ["b"]);
        assert_eq!(unsettled.events, ["PING"]);
        assert_eq!(state_of(&mut store, "p1"), before, "retry {retry}");
    }
    // The process still takes events that settle, at the next revision.
    let outcome = apply_at(&mut store, &chart, "p1", &named("NOTA", "n2"), T0 + 5).unwrap();
    assert_eq!(outcome.revision(), Some(2));
}

/// A timer that leads into the loop is an error too: neither `advance` nor an
/// event that fires it first writes anything.
pub fn a_timer_that_does_not_settle_writes_nothing<B: Backend>(backend: &B) {
    let chart = chart(include_str!("../data/runtime/loop.yaml"));
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &named("ESPERAR", "e1"), T0).unwrap();
    let before = state_of(&mut store, "p1");
    let error = api::advance(&mut store, &chart, "p1", T0 + 5_000).unwrap_err();
    let RuntimeError::Unsettled { unsettled, .. } = &error else {
        panic!("expected unsettled, got {error}");
    };
    assert_eq!(unsettled.event, None);
    assert_eq!(unsettled.paths, ["b"]);
    assert_eq!(state_of(&mut store, "p1"), before);
    let error = apply_at(&mut store, &chart, "p1", &named("NOTA", "n1"), T0 + 6_000).unwrap_err();
    assert!(matches!(error, RuntimeError::Unsettled { .. }), "{error}");
    assert_eq!(state_of(&mut store, "p1"), before);
}

pub fn ignored_events_are_frozen<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &named("CLOSE", "c1"), T0).unwrap();
    let ignored = apply_at(&mut store, &chart, "p1", &add("late", 5), T0 + 1).unwrap();
    let Outcome::Ignored { response, revision } = &ignored else {
        panic!("expected ignored, got {ignored:?}");
    };
    assert_eq!(*revision, 2);
    let value: serde_json::Value = serde_json::from_str(response).unwrap();
    assert_eq!(value["outcome"], "ignored");
    assert_eq!(value["context"]["total"], 0);
    // Reopened, the same delivery is still answered as it was first: ignored.
    apply_at(&mut store, &chart, "p1", &named("REOPEN", "r1"), T0 + 2).unwrap();
    let again = apply_at(&mut store, &chart, "p1", &add("late", 5), T0 + 3).unwrap();
    assert_eq!(
        again,
        Outcome::Duplicate {
            response: response.clone(),
            revision: 2
        }
    );
    let row = store.process("p1").unwrap().unwrap();
    assert_eq!(row.revision, 3);
    let state = api::inspect(&mut store, "p1").unwrap().unwrap();
    assert_eq!(state["context"]["total"], 0);
    assert_eq!(state["configuration"], serde_json::json!(["open"]));
}

pub fn outbox_keys_are_stable_and_unique<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        apply_at(&mut store, &chart, "p1", &add(id, i as i64), T0).unwrap();
        apply_at(&mut store, &chart, "p2", &add(id, i as i64), T0).unwrap();
        // Redeliveries add no rows.
        apply_at(&mut store, &chart, "p1", &add(id, i as i64), T0).unwrap();
    }
    let rows = store.outbox(None).unwrap();
    assert_eq!(rows.len(), 6);
    let keys: HashSet<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 6, "keys are unique across processes and events");
    for row in &rows {
        assert_eq!(
            row.key,
            idempotency_key(
                store.secret(),
                "ledger",
                "notify",
                &row.process,
                &row.event_id,
                row.position
            )
        );
        assert_eq!(row.key.len(), 64);
        assert_eq!(row.effect, "notify");
    }
    // Each retry presents the same key.
    let policy = DispatchPolicy {
        base_backoff_ms: 10,
        max_attempts: 3,
        ..DispatchPolicy::default()
    };
    let mut seen: Vec<(String, u64)> = Vec::new();
    let mut now = T0;
    for _ in 0..6 {
        dispatch(&mut store, &chart, now, &policy, |item| {
            seen.push((item.key.clone(), now));
            if item.process == "p2" {
                Dispatch::Done
            } else {
                Dispatch::Retry("receiver down".into())
            }
        })
        .unwrap();
        now += 1_000;
    }
    let p1_keys: HashSet<String> = rows
        .iter()
        .filter(|r| r.process == "p1")
        .map(|r| r.key.clone())
        .collect();
    for key in &p1_keys {
        let attempts = seen.iter().filter(|(k, _)| k == key).count();
        assert_eq!(attempts, 3, "three attempts, all with the same key");
    }
    let dead = store.outbox(Some(OutboxStatus::Dead)).unwrap();
    assert_eq!(dead.len(), 3);
    assert!(
        dead.iter()
            .all(|r| r.attempts == 3 && r.last_error.as_deref() == Some("receiver down"))
    );
    assert_eq!(store.outbox(Some(OutboxStatus::Done)).unwrap().len(), 3);
}

pub fn retries_back_off_exponentially<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &add("a", 1), T0).unwrap();
    let policy = DispatchPolicy {
        base_backoff_ms: 100,
        max_attempts: 10,
        ..DispatchPolicy::default()
    };
    let fail = |_: &OutboxItem| Dispatch::Retry("no".into());
    let mut expected_next = T0;
    for attempt in 1..=4u32 {
        // Not due a millisecond early.
        let early = dispatch(&mut store, &chart, expected_next - 1, &policy, fail).unwrap();
        assert_eq!(early.retried, 0, "attempt {attempt} was early");
        let report = dispatch(&mut store, &chart, expected_next, &policy, fail).unwrap();
        assert_eq!(report.retried, 1);
        let row = store.outbox(None).unwrap().remove(0);
        assert_eq!(row.attempts, attempt);
        let wait = 100 * (1u64 << (attempt - 1));
        assert_eq!(row.next_attempt_at, expected_next + wait);
        expected_next += wait;
    }
}

pub fn a_claimed_row_is_leased<B: Backend>(backend: &B) {
    let chart = ledger();
    let handle = backend.fresh();
    let mut store = backend.connect(&handle);
    apply_at(&mut store, &chart, "p1", &add("a", 1), T0).unwrap();
    // A dispatcher claims the row and dies before reporting anything.
    let claimed = store.claim_due(T0, 30_000, 10).unwrap();
    assert_eq!(claimed.len(), 1);
    // Another dispatcher does not get it while the lease runs...
    let mut other = backend.connect(&handle);
    assert!(other.claim_due(T0 + 29_999, 30_000, 10).unwrap().is_empty());
    // ...and gets it, with the same key, once the lease is over.
    let again = other.claim_due(T0 + 30_000, 30_000, 10).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].key, claimed[0].key);
    assert_eq!(again[0].status, OutboxStatus::Pending);
}

pub fn purge_uses_the_injected_clock<B: Backend>(backend: &B) {
    let chart = ledger();
    let hour = 3_600_000;
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &add("old", 1), T0).unwrap();
    apply_at(&mut store, &chart, "p1", &add("new", 2), T0 + hour / 2).unwrap();
    // Exactly at the window's end the old id is still kept.
    assert_eq!(
        api::purge(&mut store, &chart, T0 + hour).unwrap().applied,
        0
    );
    assert_eq!(
        apply_at(&mut store, &chart, "p1", &add("old", 1), T0 + hour)
            .unwrap()
            .kind(),
        "duplicate"
    );
    assert_eq!(
        api::purge(&mut store, &chart, T0 + hour + 1)
            .unwrap()
            .applied,
        1
    );
    assert_eq!(store.applied_count("p1").unwrap(), 1);
    assert_eq!(
        apply_at(&mut store, &chart, "p1", &add("new", 2), T0 + hour + 1)
            .unwrap()
            .kind(),
        "duplicate"
    );
    // Past the window only the model protects: the old id counts again.
    assert_eq!(
        apply_at(&mut store, &chart, "p1", &add("old", 1), T0 + hour + 2)
            .unwrap()
            .kind(),
        "applied"
    );
    // Its effect has the same key as the first time, so no second row.
    assert_eq!(store.outbox(None).unwrap().len(), 2);
    // A machine without `dedup.retention` keeps ids forever.
    let forever = chart_without_retention();
    let mut other = backend.connect(&backend.fresh());
    apply_at(&mut other, &forever, "q", &add("x", 1), T0).unwrap();
    assert_eq!(
        api::purge(&mut other, &forever, u64::MAX).unwrap(),
        runtime::Purged::default()
    );
    assert_eq!(other.applied_count("q").unwrap(), 1);
}

/// Settled outbox rows go with the marks, once the retention has passed
/// since they were settled; pending and dead rows stay, and a dead row can
/// be put back in the queue.
pub fn purge_keeps_pending_and_dead_rows_and_requeue_revives_dead_ones<B: Backend>(backend: &B) {
    let chart = ledger();
    let hour = 3_600_000;
    let mut store = backend.connect(&backend.fresh());
    for (id, amount) in [("done", 1), ("dead", 2), ("waiting", 3)] {
        apply_at(&mut store, &chart, "p1", &add(id, amount), T0).unwrap();
    }
    let rows = store.outbox(None).unwrap();
    let key_of = |event_id: &str| {
        rows.iter()
            .find(|r| r.event_id == event_id)
            .map(|r| r.key.clone())
            .unwrap()
    };
    let (done, dead) = (key_of("done"), key_of("dead"));
    store
        .finish_attempt(&AttemptRecord {
            key: &done,
            status: OutboxStatus::Done,
            attempts: 1,
            next_attempt_at: T0 + 10,
            last_error: None,
        })
        .unwrap();
    store
        .finish_attempt(&AttemptRecord {
            key: &dead,
            status: OutboxStatus::Dead,
            attempts: 8,
            next_attempt_at: T0 + 10,
            last_error: Some("refused"),
        })
        .unwrap();
    // Inside the window nothing goes; each row leaves a window after it was
    // written (the marks) or settled (the outbox row).
    let inside = api::purge(&mut store, &chart, T0 + hour).unwrap();
    assert_eq!(
        inside,
        runtime::Purged {
            applied: 0,
            outbox: 0,
            payloads: 0
        }
    );
    let marks = api::purge(&mut store, &chart, T0 + 10 + hour).unwrap();
    assert_eq!(
        marks,
        runtime::Purged {
            applied: 3,
            outbox: 0,
            payloads: 0
        }
    );
    let settled = api::purge(&mut store, &chart, T0 + 11 + hour).unwrap();
    assert_eq!(
        settled,
        runtime::Purged {
            applied: 0,
            outbox: 1,
            payloads: 0
        }
    );
    let left: Vec<(String, OutboxStatus)> = store
        .outbox(None)
        .unwrap()
        .into_iter()
        .map(|r| (r.event_id, r.status))
        .collect();
    assert_eq!(
        left,
        [
            ("dead".to_string(), OutboxStatus::Dead),
            ("waiting".to_string(), OutboxStatus::Pending)
        ]
    );
    // Requeue: an unknown key changes nothing; the dead row's key revives it.
    assert_eq!(store.requeue_dead(Some("no-such-key"), T0).unwrap(), 0);
    assert_eq!(store.requeue_dead(Some(&key_of("waiting")), T0).unwrap(), 0);
    let now = T0 + 2 * hour;
    assert_eq!(store.requeue_dead(None, now).unwrap(), 1);
    let revived = store.outbox(Some(OutboxStatus::Pending)).unwrap();
    let dead = revived.iter().find(|r| r.event_id == "dead").unwrap();
    assert_eq!((dead.attempts, dead.next_attempt_at), (0, now));
    assert_eq!(dead.key, key_of("dead"));
    assert_eq!(store.claim_due(now, 30_000, 10).unwrap().len(), 2);
}

fn chart_without_retention() -> Arc<Chart> {
    let text = include_str!("../data/runtime/ledger.yaml").replace("dedup:\n  retention: 1h\n", "");
    assert!(!text.contains("retention"));
    chart(&text)
}

/// A store whose first transaction reads the process one revision behind,
/// as if another writer had committed in between: the revision check must
/// fail and `apply` must start over.
/// With `crash_left` set, a transaction runs to its end and is then rolled
/// back with an error, as if the process had died before the commit. It can
/// also fail the `fail_outbox_in`-th outbox insert from now (0: none), as a
/// full disk would.
pub struct Stale<S> {
    pub inner: S,
    pub stale_left: Cell<u32>,
    pub crash_left: Cell<u32>,
    pub transactions: Cell<u32>,
    pub fail_outbox_in: Cell<u32>,
}

impl<S> Stale<S> {
    pub fn new(inner: S) -> Stale<S> {
        Stale {
            inner,
            stale_left: Cell::new(0),
            crash_left: Cell::new(0),
            transactions: Cell::new(0),
            fail_outbox_in: Cell::new(0),
        }
    }
}

struct StaleTx<'a> {
    inner: &'a mut dyn Transaction,
    stale: bool,
    fail_outbox_in: &'a Cell<u32>,
}

impl Transaction for StaleTx<'_> {
    fn applied_event(&mut self, p: &str, e: &str) -> Result<Option<AppliedEvent>, StoreError> {
        self.inner.applied_event(p, e)
    }
    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        let mut row = self.inner.process(id)?;
        if self.stale
            && let Some(row) = &mut row
        {
            row.revision -= 1;
        }
        Ok(row)
    }
    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        self.inner.insert_process(row)
    }
    fn update_process(
        &mut self,
        id: &str,
        rev: u64,
        snap: &str,
        next: Option<u64>,
    ) -> Result<bool, StoreError> {
        self.inner.update_process(id, rev, snap, next)
    }
    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        self.inner.insert_applied_event(row)
    }
    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        let left = self.fail_outbox_in.get();
        self.fail_outbox_in.set(left.saturating_sub(1));
        if left == 1 {
            return Err(StoreError::Backend("disk full".into()));
        }
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

/// Stale stores go through the sync API, whose transactions they intercept.
impl<S: Store> Api for Stale<S> {}

impl<S: Store> Store for Stale<S> {
    fn secret(&self) -> &idemchart::store::StoreSecret {
        self.inner.secret()
    }
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        self.transactions.set(self.transactions.get() + 1);
        let stale = self.stale_left.get() > 0;
        if stale {
            self.stale_left.set(self.stale_left.get() - 1);
        }
        let crash = self.crash_left.get() > 0;
        if crash {
            self.crash_left.set(self.crash_left.get() - 1);
        }
        let fail_outbox_in = &self.fail_outbox_in;
        self.inner.transaction(|tx| {
            let value = body(&mut StaleTx {
                inner: tx,
                stale,
                fail_outbox_in,
            })?;
            if crash {
                return Err(E::from(StoreError::Backend("crashed before commit".into())));
            }
            Ok(value)
        })
    }
    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.inner.process(id)
    }
    fn outbox(&mut self, s: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner.outbox(s)
    }
    fn claim_due_of(
        &mut self,
        n: u64,
        l: u64,
        c: usize,
        m: Option<&str>,
        e: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner.claim_due_of(n, l, c, m, e)
    }
    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.inner.finish_attempt(attempt)
    }
    fn due_processes(
        &mut self,
        m: &str,
        v: Option<u64>,
        n: u64,
        l: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.due_processes(m, v, n, l)
    }
    fn stale_processes(
        &mut self,
        m: &str,
        v: Option<u64>,
        a: Option<&str>,
        l: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.stale_processes(m, v, a, l)
    }
    fn purge_applied(&mut self, m: &str, b: u64) -> Result<usize, StoreError> {
        self.inner.purge_applied(m, b)
    }
    fn purge_outbox(&mut self, m: &str, b: u64) -> Result<usize, StoreError> {
        self.inner.purge_outbox(m, b)
    }
    fn requeue_dead(&mut self, k: Option<&str>, n: u64) -> Result<usize, StoreError> {
        self.inner.requeue_dead(k, n)
    }
    fn applied_count(&mut self, p: &str) -> Result<usize, StoreError> {
        self.inner.applied_count(p)
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

pub fn revision_conflicts_are_retried<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = Stale::new(backend.connect(&backend.fresh()));
    apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    store.stale_left.set(2);
    store.transactions.set(0);
    let outcome = apply_at(&mut store, &chart, "p1", &add("b", 7), T0).unwrap();
    assert_eq!(outcome.kind(), "applied");
    assert_eq!(store.transactions.get(), 3, "two lost races, then a win");
    let (row, applied, outbox) = state_of(&mut store.inner, "p1");
    assert_eq!(row.unwrap().revision, 2);
    assert_eq!(applied, 2);
    assert_eq!(outbox.len(), 2, "the lost attempts left no outbox rows");
    let state = api::inspect(&mut store.inner, "p1").unwrap().unwrap();
    assert_eq!(state["context"]["total"], 12);
}

/// The ledger at version 2, with a migration from 1 that counts in tens.
fn ledger_v2() -> Arc<Chart> {
    chart(&include_str!("../data/runtime/ledger.yaml").replace(
        "version: 1\n",
        "version: 2\nmigrations:\n  - from: 1\n    context: { count: \"context.count * 10\" }\n",
    ))
}

/// `migrate_stored` moves each process of an older version once, through
/// either API: a dry run writes nothing, a process a lazy `apply` moved
/// first is not listed, and a second run finds nothing to move.
pub fn migrate_moves_every_old_process_once<B: Backend>(backend: &B) {
    let (v1, v2) = (ledger(), ledger_v2());
    let mut store = backend.connect(&backend.fresh());
    for process in ["p1", "p2", "p3"] {
        apply_at(&mut store, &v1, process, &add("a", 5), T0).unwrap();
    }
    apply_at(&mut store, &v2, "p3", &add("b", 1), T0).unwrap();
    let before: Vec<_> = ["p1", "p2", "p3"]
        .iter()
        .map(|p| state_of(&mut store, p))
        .collect();
    let dry = api::migrate_stored(&mut store, &v2, true).unwrap();
    let names = |moved: &[runtime::Moved]| -> Vec<(String, &'static str)> {
        moved
            .iter()
            .map(|m| {
                (
                    m.process.clone(),
                    m.result.as_ref().unwrap().status.as_str(),
                )
            })
            .collect()
    };
    assert_eq!(
        names(&dry),
        [
            ("p1".to_string(), "would-migrate"),
            ("p2".to_string(), "would-migrate")
        ]
    );
    let after: Vec<_> = ["p1", "p2", "p3"]
        .iter()
        .map(|p| state_of(&mut store, p))
        .collect();
    assert_eq!(after, before, "a dry run writes nothing");
    let moved = api::migrate_stored(&mut store, &v2, false).unwrap();
    assert_eq!(
        names(&moved),
        [
            ("p1".to_string(), "migrated"),
            ("p2".to_string(), "migrated")
        ]
    );
    for process in ["p1", "p2"] {
        let row = store.process(process).unwrap().unwrap();
        assert_eq!((row.version, row.revision), (Some(2), 2), "{process}");
        let state = api::inspect(&mut store, process).unwrap().unwrap();
        assert_eq!(
            state["context"],
            serde_json::json!({ "total": 5, "count": 10 })
        );
    }
    assert!(
        api::migrate_stored(&mut store, &v2, false)
            .unwrap()
            .is_empty()
    );
    let skipped = api::migrate_process(&mut store, &v2, "p3", false)
        .unwrap()
        .unwrap();
    assert_eq!((skipped.status.as_str(), skipped.revision), ("skipped", 2));
    assert!(
        api::migrate_process(&mut store, &v2, "p9", false)
            .unwrap()
            .is_none()
    );
}

/// A move whose process another writer moved after it was read loses the
/// revision check, reads the process again, and moves it from there: it
/// never overwrites the other writer's revision.
pub fn migrate_reads_again_after_a_lost_race<B: Backend>(backend: &B) {
    let (v1, v2) = (ledger(), ledger_v2());
    let mut store = Stale::new(backend.connect(&backend.fresh()));
    apply_at(&mut store, &v1, "p1", &add("a", 5), T0).unwrap();
    apply_at(&mut store, &v1, "p1", &add("b", 2), T0).unwrap();
    store.stale_left.set(1);
    store.transactions.set(0);
    let moved = runtime::migrate_process(&mut store, &v2, "p1", false)
        .unwrap()
        .unwrap();
    assert_eq!(store.transactions.get(), 2, "one lost race, then a win");
    assert_eq!((moved.status.as_str(), moved.revision), ("migrated", 3));
    let row = store.inner.process("p1").unwrap().unwrap();
    assert_eq!((row.version, row.revision), (Some(2), 3));
    let state = api::inspect(&mut store.inner, "p1").unwrap().unwrap();
    assert_eq!(
        state["context"],
        serde_json::json!({ "total": 7, "count": 20 })
    );
}

pub fn a_process_keeps_its_machine_version<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    let v2 = self::chart(
        &include_str!("../data/runtime/ledger.yaml").replace("version: 1", "version: 2"),
    );
    let before = state_of(&mut store, "p1");
    let error = apply_at(&mut store, &v2, "p1", &add("b", 1), T0).unwrap_err();
    assert!(error.to_string().contains("p1"), "{error}");
    assert_eq!(state_of(&mut store, "p1"), before);
    // A new process starts on the new version.
    assert_eq!(
        apply_at(&mut store, &v2, "p2", &add("b", 1), T0)
            .unwrap()
            .kind(),
        "applied"
    );
    assert_eq!(store.process("p2").unwrap().unwrap().version, Some(2));
}

/// The final context of a clean replay of `events` (each id once, first
/// payload wins) on a fresh actor.
pub fn clean_replay(chart: &Arc<Chart>, events: &[Event]) -> serde_json::Value {
    let mut actor = Actor::new(Arc::clone(chart));
    let mut seen = HashSet::new();
    for event in events {
        if seen.insert(runtime::event_id(event).unwrap()) {
            actor.send(event);
        }
    }
    actor.context().to_json()
}

pub fn concurrent_senders_apply_each_event_once<B: Backend>(
    backend: &B,
    threads: usize,
    events: usize,
) {
    let chart = ledger();
    let handle = backend.fresh();
    let all: Vec<Event> = (0..events)
        .map(|i| add(&format!("e{i}"), (i % 17) as i64 + 1))
        .collect();
    let answers: Vec<Vec<(usize, Outcome)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let chart = Arc::clone(&chart);
                let all = &all;
                let handle = &handle;
                scope.spawn(move || {
                    let mut store = backend.connect(handle);
                    // Each thread has its own order: a seeded shuffle.
                    let mut order: Vec<usize> = (0..all.len()).collect();
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
                    for i in (1..order.len()).rev() {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        order.swap(i, (seed % (i as u64 + 1)) as usize);
                    }
                    order
                        .into_iter()
                        .map(|i| {
                            let outcome = apply_at(&mut store, &chart, "shared", &all[i], T0)
                                .expect("no error leaks from contention");
                            (i, outcome)
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut first: Vec<Option<String>> = vec![None; events];
    let mut applied = 0;
    for (i, outcome) in answers.iter().flatten() {
        match outcome {
            Outcome::Applied { response, .. } => {
                applied += 1;
                assert!(
                    first[*i].replace(response.clone()).is_none(),
                    "e{i} applied twice"
                );
            }
            Outcome::Duplicate { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(applied, events, "each event applied exactly once");
    for (i, outcome) in answers.iter().flatten() {
        assert_eq!(
            outcome.response(),
            first[*i].as_deref(),
            "e{i}: one frozen answer"
        );
    }
    let mut store = backend.connect(&handle);
    let state = api::inspect(&mut store, "shared").unwrap().unwrap();
    assert_eq!(state["revision"], events as u64);
    assert_eq!(state["context"], clean_replay(&chart, &all));
    assert_eq!(store.applied_count("shared").unwrap(), events);
    assert_eq!(store.outbox(None).unwrap().len(), events);
}

pub fn unknown_outcome_becomes_an_event<B: Backend>(backend: &B) {
    let chart = chart(include_str!(
        "../data/runtime/charge-with-verification.yaml"
    ));
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "o1", &named("PEDIDO", "p1"), T0).unwrap();
    let charge = store.outbox(None).unwrap().remove(0);
    assert_eq!(charge.effect, "cobrar");
    let policy = DispatchPolicy {
        unknown_events: [("cobrar".to_string(), "TIMEOUT".to_string())].into(),
        ..DispatchPolicy::default()
    };
    let report = dispatch(&mut store, &chart, T0, &policy, |_| {
        Dispatch::UnknownOutcome
    })
    .unwrap();
    assert_eq!(report.unknown, 1);
    let state = api::inspect(&mut store, "o1").unwrap().unwrap();
    assert_eq!(state["configuration"], serde_json::json!(["verificando"]));
    let rows = store.outbox(None).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].status, OutboxStatus::Unknown);
    assert_eq!(rows[1].effect, "consultarCobro");
    assert_eq!(rows[1].status, OutboxStatus::Pending);
    // The unknown row is not handed out again; the machine decides now.
    let again = dispatch(&mut store, &chart, T0 + 1, &policy, |item| {
        assert_eq!(item.effect, "consultarCobro");
        Dispatch::Done
    })
    .unwrap();
    assert_eq!(again.done, 1);
    // Reporting the same unknown outcome twice (a crash before the row was
    // marked) is a duplicate event, answered as the first.
    let event = Event::new(
        "TIMEOUT",
        Some(Value::from(&serde_json::json!(format!(
            "unknown:{}",
            charge.key
        )))),
        Value::from(&serde_json::json!({
            "key": charge.key, "effect": "cobrar", "args": null
        })),
    );
    assert_eq!(
        apply_at(&mut store, &chart, "o1", &event, T0 + 2)
            .unwrap()
            .kind(),
        "duplicate"
    );
    // Without a mapping the event is `<effect>.unknown`, here ignored and recorded.
    let ledger = ledger();
    apply_at(&mut store, &ledger, "l1", &add("a", 1), T0).unwrap();
    dispatch(
        &mut store,
        &ledger,
        T0 + 3,
        &DispatchPolicy::default(),
        |item| {
            if item.process == "l1" {
                Dispatch::UnknownOutcome
            } else {
                Dispatch::Done
            }
        },
    )
    .unwrap();
    assert_eq!(store.applied_count("l1").unwrap(), 2);
    let row = store
        .outbox(None)
        .unwrap()
        .into_iter()
        .find(|r| r.process == "l1")
        .unwrap();
    let key = row.key;
    let unknown = Event::new(
        "notify.unknown",
        Some(Value::from(&serde_json::json!(format!("unknown:{key}")))),
        Value::from(
            &serde_json::json!({ "key": key, "effect": "notify", "args": { "amount": 1 } }),
        ),
    );
    let answer = apply_at(&mut store, &ledger, "l1", &unknown, T0 + 4).unwrap();
    assert_eq!(answer.kind(), "duplicate");
    assert!(
        answer
            .response()
            .unwrap()
            .contains(r#""outcome":"ignored""#)
    );
}

pub mod invocations;
pub mod timers;

/// Declares one `#[test]` per contract function for `$backend`, each with
/// the attributes given after it (such as an `#[ignore]` for a backend that
/// needs a server).
#[macro_export]
macro_rules! contract_tests {
    ($backend:expr $(, #[$attr:meta])* $(,)?) => {
        $(#[$attr])*
        #[test]
        fn duplicate_answers_with_the_frozen_bytes() {
            runtime_contract::duplicate_answers_with_the_frozen_bytes(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn outgoing_keys_are_the_machine_effect_and_store_own() {
            runtime_contract::outgoing_keys_are_the_machine_effect_and_store_own(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn key_order_in_the_payload_is_not_a_conflict() {
            runtime_contract::key_order_in_the_payload_is_not_a_conflict(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn conflict_writes_nothing() {
            runtime_contract::conflict_writes_nothing(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_event_without_id_writes_nothing() {
            runtime_contract::an_event_without_id_writes_nothing(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_invocation_is_an_outbox_row_keyed_by_its_step() {
            runtime_contract::invocations::an_invocation_is_an_outbox_row_keyed_by_its_step(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn dispatch_answers_an_invocation_with_its_completion_once() {
            runtime_contract::invocations::dispatch_answers_an_invocation_with_its_completion_once(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_accepted_invocation_is_completed_once() {
            runtime_contract::invocations::an_accepted_invocation_is_completed_once(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_refused_invocation_takes_on_error() {
            runtime_contract::invocations::a_refused_invocation_takes_on_error(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn leaving_the_state_cancels_the_invocation() {
            runtime_contract::invocations::leaving_the_state_cancels_the_invocation(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_unknown_or_dead_invocation_is_an_error_the_machine_handles() {
            runtime_contract::invocations::an_unknown_or_dead_invocation_is_an_error_the_machine_handles(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn dispatch_takes_the_rows_of_its_machine_only() {
            runtime_contract::invocations::dispatch_takes_the_rows_of_its_machine_only(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn invocations_in_parallel_regions_complete_independently() {
            runtime_contract::invocations::invocations_in_parallel_regions_complete_independently(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_event_that_does_not_settle_writes_nothing() {
            runtime_contract::an_event_that_does_not_settle_writes_nothing(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_timer_that_does_not_settle_writes_nothing() {
            runtime_contract::a_timer_that_does_not_settle_writes_nothing(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn ignored_events_are_frozen() {
            runtime_contract::ignored_events_are_frozen(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn outbox_keys_are_stable_and_unique() {
            runtime_contract::outbox_keys_are_stable_and_unique(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn retries_back_off_exponentially() {
            runtime_contract::retries_back_off_exponentially(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_claimed_row_is_leased() {
            runtime_contract::a_claimed_row_is_leased(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn purge_uses_the_injected_clock() {
            runtime_contract::purge_uses_the_injected_clock(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn purge_keeps_pending_and_dead_rows_and_requeue_revives_dead_ones() {
            runtime_contract::purge_keeps_pending_and_dead_rows_and_requeue_revives_dead_ones(
                &$backend,
            );
        }
        $(#[$attr])*
        #[test]
        fn revision_conflicts_are_retried() {
            runtime_contract::revision_conflicts_are_retried(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn migrate_moves_every_old_process_once() {
            runtime_contract::migrate_moves_every_old_process_once(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn migrate_reads_again_after_a_lost_race() {
            runtime_contract::migrate_reads_again_after_a_lost_race(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_process_keeps_its_machine_version() {
            runtime_contract::a_process_keeps_its_machine_version(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn unknown_outcome_becomes_an_event() {
            runtime_contract::unknown_outcome_becomes_an_event(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn after_fires_at_its_due_time_and_not_before() {
            runtime_contract::timers::after_fires_at_its_due_time_and_not_before(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn leaving_a_state_cancels_its_timers() {
            runtime_contract::timers::leaving_a_state_cancels_its_timers(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn an_event_after_the_due_time_sees_the_timers_fire_first() {
            runtime_contract::timers::an_event_after_the_due_time_sees_the_timers_fire_first(
                &$backend,
            );
        }
        $(#[$attr])*
        #[test]
        fn concurrent_schedulers_fire_each_timer_once() {
            runtime_contract::timers::concurrent_schedulers_fire_each_timer_once(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn advance_writes_nothing_when_nothing_is_due() {
            runtime_contract::timers::advance_writes_nothing_when_nothing_is_due(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn timer_keys_do_not_depend_on_the_scheduler() {
            runtime_contract::timers::timer_keys_do_not_depend_on_the_scheduler(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn timer_ids_are_reserved() {
            runtime_contract::timers::timer_ids_are_reserved(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn eight_threads_deliver_the_same_events_once_each() {
            runtime_contract::concurrent_senders_apply_each_event_once(&$backend, 8, 1_000);
        }
    };
}

/// Applies `events` once to one process, and again to another with the
/// redeliveries inserted (`(at, which)`: before the `at`-th event, redeliver
/// the `which`-th event already sent, modulo): both end in the same state,
/// and every redelivery is answered with the first response.
pub fn duplicates_change_nothing<B: Backend>(
    backend: &B,
    events: &[Event],
    redeliveries: &[(usize, usize)],
) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    let mut first: std::collections::HashMap<String, String> = Default::default();
    for event in events {
        apply_at(&mut store, &chart, "clean", event, T0).unwrap();
    }
    let mut sent: Vec<&Event> = Vec::new();
    let mut redelivered_answers = Vec::new();
    for (i, event) in events.iter().enumerate() {
        for (at, which) in redeliveries {
            if *at == i && !sent.is_empty() {
                let again = sent[which % sent.len()];
                let outcome = apply_at(&mut store, &chart, "noisy", again, T0).unwrap();
                redelivered_answers.push((runtime::event_id(again).unwrap(), outcome));
            }
        }
        let outcome = apply_at(&mut store, &chart, "noisy", event, T0).unwrap();
        if let Some(response) = outcome.response() {
            first
                .entry(runtime::event_id(event).unwrap())
                .or_insert_with(|| response.to_string());
        }
        sent.push(event);
    }
    for (id, outcome) in &redelivered_answers {
        assert_eq!(outcome.kind(), "duplicate", "{id}");
        assert_eq!(
            outcome.response(),
            first.get(id).map(String::as_str),
            "{id}"
        );
    }
    let clean = api::inspect(&mut store, "clean").unwrap().unwrap();
    let noisy = api::inspect(&mut store, "noisy").unwrap().unwrap();
    assert_eq!(clean["revision"], noisy["revision"]);
    assert_eq!(clean["configuration"], noisy["configuration"]);
    assert_eq!(clean["context"], noisy["context"]);
    assert_eq!(clean["context"], clean_replay(&chart, events));
}

// ---------------------------------------------------------------------------
// `apply_batch`: many events in one transaction, each answered as `apply`
// would answer it. Declared per backend by `batch_contract_tests!`.

/// Applies `events` one by one with `apply` on one fresh store and in
/// batches cut at `cuts` (sorted positions) with `apply_batch` on another:
/// every answer is the same, byte for byte, and so is everything stored.
pub fn batch_equals_one_by_one<B: Backend>(
    backend: &B,
    events: &[(String, Event)],
    cuts: &[usize],
) {
    let chart = ledger();
    let mut single = backend.connect(&backend.fresh());
    let one_by_one: Vec<String> = events
        .iter()
        .map(|(process, event)| format!("{:?}", apply_at(&mut single, &chart, process, event, T0)))
        .collect();
    let one_by_one = keyless(&mut single, one_by_one);
    let mut batched = backend.connect(&backend.fresh());
    let mut answers = Vec::new();
    let mut start = 0;
    for end in cuts.iter().copied().chain([events.len()]) {
        let end = end.clamp(start, events.len());
        let batch = api::apply_batch_at(&mut batched, &chart, &events[start..end], T0)
            .expect("no store error");
        assert_eq!(batch.len(), end - start);
        answers.extend(batch.iter().map(|answer| format!("{answer:?}")));
        start = end;
    }
    assert_eq!(keyless(&mut batched, answers), one_by_one);
    let mut processes: Vec<&str> = events.iter().map(|(p, _)| p.as_str()).collect();
    processes.sort();
    processes.dedup();
    for process in processes {
        assert_eq!(
            single.process(process).unwrap(),
            batched.process(process).unwrap(),
            "{process}"
        );
        assert_eq!(
            single.applied_count(process).unwrap(),
            batched.applied_count(process).unwrap(),
            "{process}"
        );
    }
    let rows = |store: &mut B::S| {
        let rows = store.outbox(None).unwrap();
        keyless(store, vec![format!("{rows:?}")])
    };
    assert_eq!(rows(&mut single), rows(&mut batched));
}

/// `texts` with each outbox key of `store` written as the row it keys
/// (`KEY(process/event id/position)`): two stores have secrets of their own,
/// and so keys of their own, and this compares what they wrote apart from
/// them. Every key must be the one the derivation gives under the store's
/// secret, so nothing else is hidden.
pub fn keyless<S: Store>(store: &mut S, texts: Vec<String>) -> Vec<String> {
    let rows = store.outbox(None).unwrap();
    texts
        .into_iter()
        .map(|mut text| {
            for row in &rows {
                if row.invocation.is_none() {
                    let machine = store
                        .process(&row.process)
                        .unwrap()
                        .expect("an outbox row's process")
                        .machine;
                    assert_eq!(
                        row.key,
                        idempotency_key(
                            store.secret(),
                            &machine,
                            &row.effect,
                            &row.process,
                            &row.event_id,
                            row.position
                        )
                    );
                }
                let label = format!("KEY({}/{}/{})", row.process, row.event_id, row.position);
                text = text.replace(&row.key, &label);
            }
            text
        })
        .collect()
}

/// `batch_equals_one_by_one` on random events: ids from a small pool so
/// they recur (within a batch too), some with another payload (conflicts),
/// some without an id, spread over three processes, cut into random batches.
pub fn batch_equals_one_by_one_property<B: Backend>(backend: &B, cases: u32) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let event = (0..3usize, 0..14u32, 1..3i64).prop_map(|(process, pick, amount)| {
        let event = match pick {
            10 => named("CLOSE", "close"),
            11 => named("REOPEN", "reopen"),
            12 => Event::new("CLOSE", None, Value::Null),
            // The id of `add-0` with another amount: a conflict once `add-0` is in.
            13 => add("add-0", 100),
            _ => add(&format!("add-{pick}"), i64::from(pick) * amount),
        };
        (format!("p{process}"), event)
    });
    let strategy = (
        prop::collection::vec(event, 1..30),
        prop::collection::vec(0..30usize, 0..5),
    );
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |(events, mut cuts)| {
            cuts.sort_unstable();
            batch_equals_one_by_one(backend, &events, &cuts);
            Ok(())
        })
        .unwrap();
}

pub fn a_batch_answers_each_event_as_apply_would<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    let events = vec![
        ("p1", add("a", 5)),
        ("p2", add("a", 1)),
        // The same id twice in one batch: the second is a duplicate of the first.
        ("p1", add("a", 5)),
        // The same id with another payload: a conflict, which writes nothing.
        ("p1", add("a", 6)),
        ("p1", Event::new("CLOSE", None, Value::Null)),
        ("p1", named("CLOSE", "c1")),
        ("p1", add("late", 2)),
        ("p1", add("b", 7)),
    ];
    let answers = api::apply_batch_at(&mut store, &chart, &events, T0).unwrap();
    let kinds: Vec<&str> = answers
        .iter()
        .map(|a| a.as_ref().map_or("error", Outcome::kind))
        .collect();
    assert_eq!(
        kinds,
        [
            "applied",
            "applied",
            "duplicate",
            "conflict",
            "error",
            "applied",
            "ignored",
            "ignored"
        ]
    );
    let first = answers[0].as_ref().unwrap();
    assert_eq!(
        answers[2].as_ref().unwrap(),
        &Outcome::Duplicate {
            response: first.response().unwrap().to_string(),
            revision: 1
        }
    );
    let error = answers[4].as_ref().unwrap_err();
    assert!(error.to_string().contains("has no id"), "{error}");
    // Revisions count the recorded events of each process, as with `apply`.
    let revisions: Vec<Option<u64>> = answers
        .iter()
        .map(|a| a.as_ref().ok().and_then(Outcome::revision))
        .collect();
    assert_eq!(
        revisions,
        [
            Some(1),
            Some(1),
            Some(1),
            None,
            None,
            Some(2),
            Some(3),
            Some(4)
        ]
    );
    let (row, applied, _) = state_of(&mut store, "p1");
    assert_eq!(row.unwrap().revision, 4);
    assert_eq!(applied, 4);
    assert_eq!(store.outbox(None).unwrap().len(), 2);
    let state = api::inspect(&mut store, "p1").unwrap().unwrap();
    assert_eq!(state["context"]["total"], 5);
    assert_eq!(state["configuration"], serde_json::json!(["closed"]));
    // Sent again after the batch, each is a duplicate with the batch's answer.
    let again = apply_at(&mut store, &chart, "p1", &add("late", 2), T0 + 1).unwrap();
    assert_eq!(again.response(), answers[6].as_ref().unwrap().response());
    assert_eq!(again.kind(), "duplicate");
}

/// An id reserved for timer firings is refused in a batch with the error
/// `apply_at` gives it, and writes nothing; the rest of the batch goes on.
pub fn a_batch_refuses_a_reserved_id_as_apply_does<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    let reserved = add("timer:x", 1);
    let alone = apply_at(&mut store, &chart, "p1", &reserved, T0).unwrap_err();
    let events = vec![("p1", reserved), ("p1", add("a", 2))];
    let answers = api::apply_batch_at(&mut store, &chart, &events, T0).unwrap();
    let refused = answers[0].as_ref().unwrap_err();
    assert!(
        matches!(refused, runtime::RuntimeError::ReservedId(_)),
        "{refused}"
    );
    assert_eq!(refused.to_string(), alone.to_string());
    assert_eq!(answers[1].as_ref().map(Outcome::kind).ok(), Some("applied"));
    let (row, applied, _) = state_of(&mut store, "p1");
    assert_eq!(row.unwrap().revision, 1);
    assert_eq!(applied, 1);
}

pub fn a_batch_event_its_process_cannot_take_writes_nothing<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "old", &add("a", 5), T0).unwrap();
    let before = state_of(&mut store, "old");
    let v2 = self::chart(
        &include_str!("../data/runtime/ledger.yaml").replace("version: 1", "version: 2"),
    );
    let events = [
        ("new", add("a", 1)),
        ("old", add("b", 1)),
        ("new", add("b", 2)),
    ];
    let answers = api::apply_batch_at(&mut store, &v2, &events, T0).unwrap();
    assert_eq!(answers[0].as_ref().unwrap().kind(), "applied");
    let error = answers[1].as_ref().unwrap_err();
    assert!(error.to_string().contains("old"), "{error}");
    assert_eq!(answers[2].as_ref().unwrap().kind(), "applied");
    let (row, applied, _) = state_of(&mut store, "old");
    assert_eq!((row, applied), (before.0, before.1));
    assert_eq!(store.applied_count("new").unwrap(), 2);
}

pub fn a_store_error_rolls_the_whole_batch_back<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = Stale::new(backend.connect(&backend.fresh()));
    apply_at(&mut store, &chart, "p1", &add("a", 1), T0).unwrap();
    let before = (
        state_of(&mut store.inner, "p1"),
        state_of(&mut store.inner, "p2"),
    );
    // The third event's outbox row fails, after two events were written.
    store.fail_outbox_in.set(3);
    let events = [
        ("p1", add("b", 2)),
        ("p2", add("b", 3)),
        ("p1", add("c", 4)),
    ];
    let error = api::apply_batch_at(&mut store, &chart, &events, T0).unwrap_err();
    assert!(error.to_string().contains("disk full"), "{error}");
    let after = (
        state_of(&mut store.inner, "p1"),
        state_of(&mut store.inner, "p2"),
    );
    assert_eq!(after, before, "nothing of the batch was written");
    // Sent again, the batch goes through whole.
    let answers = api::apply_batch_at(&mut store, &chart, &events, T0).unwrap();
    assert!(
        answers
            .iter()
            .all(|a| a.as_ref().unwrap().kind() == "applied")
    );
    assert_eq!(store.inner.applied_count("p1").unwrap(), 3);
}

pub fn a_lost_race_retries_the_whole_batch<B: Backend>(backend: &B) {
    let chart = ledger();
    let mut store = Stale::new(backend.connect(&backend.fresh()));
    apply_at(&mut store, &chart, "p1", &add("a", 5), T0).unwrap();
    store.stale_left.set(1);
    store.transactions.set(0);
    // p2 is new and written first; p1's update then finds its revision moved.
    let events = [
        ("p2", add("x", 1)),
        ("p1", add("b", 7)),
        ("p1", add("c", 1)),
    ];
    let answers = api::apply_batch_at(&mut store, &chart, &events, T0).unwrap();
    assert_eq!(store.transactions.get(), 2, "one lost race, then a win");
    let revisions: Vec<u64> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().revision().unwrap())
        .collect();
    assert_eq!(revisions, [1, 2, 3]);
    assert_eq!(store.inner.applied_count("p2").unwrap(), 1);
    assert_eq!(
        store.outbox(None).unwrap().len(),
        4,
        "no rows of the lost try"
    );
    let state = api::inspect(&mut store.inner, "p1").unwrap().unwrap();
    assert_eq!(state["context"]["total"], 13);
}

/// Declares one `#[test]` per `apply_batch` contract function for `$backend`.
#[macro_export]
macro_rules! batch_contract_tests {
    ($backend:expr $(, #[$attr:meta])* $(,)?) => {
        $(#[$attr])*
        #[test]
        fn a_batch_answers_each_event_as_apply_would() {
            runtime_contract::a_batch_answers_each_event_as_apply_would(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_batch_refuses_a_reserved_id_as_apply_does() {
            runtime_contract::a_batch_refuses_a_reserved_id_as_apply_does(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_batch_event_its_process_cannot_take_writes_nothing() {
            runtime_contract::a_batch_event_its_process_cannot_take_writes_nothing(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_store_error_rolls_the_whole_batch_back() {
            runtime_contract::a_store_error_rolls_the_whole_batch_back(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_lost_race_retries_the_whole_batch() {
            runtime_contract::a_lost_race_retries_the_whole_batch(&$backend);
        }
        $(#[$attr])*
        #[test]
        fn a_batch_equals_applying_its_events_one_by_one() {
            runtime_contract::batch_equals_one_by_one_property(&$backend, 24);
        }
    };
}
