//! The timer contract: `after` transitions and delayed sends of stored
//! processes fire at their due time, once, with stable keys. Time is always
//! injected; nothing sleeps.

use std::sync::{Arc, Barrier};

use idemchart::interp::{Actor, Chart};
use idemchart::runtime::{self, Outcome, firing_id, idempotency_key};
use idemchart::store::Store;

use super::api::{self, Api, advance, advance_due, apply_at};
use super::{Backend, Stale, T0, chart, ledger, named, state_of};

const MINUTE: u64 = 60_000;
const REMINDER: &str = "send:REMIND#reminder";
const EXPIRY: &str = "after:waiting[0]";

pub fn reminder() -> Arc<Chart> {
    chart(include_str!("../data/runtime/reminder.yaml"))
}

fn order<S: Api>(store: &mut S, chart: &Arc<Chart>, process: &str, at: u64) {
    let event = named("ORDER", &format!("order-{process}"));
    let outcome = apply_at(store, chart, process, &event, at).unwrap();
    assert_eq!(outcome.kind(), "applied", "{outcome:?}");
}

fn pay<S: Api>(store: &mut S, chart: &Arc<Chart>, process: &str, at: u64) -> Outcome {
    apply_at(
        store,
        chart,
        process,
        &named("PAY", &format!("pay-{process}")),
        at,
    )
    .unwrap()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("a JSON response")
}

fn inspect<S: Api>(store: &mut S, process: &str) -> serde_json::Value {
    api::inspect(store, process).unwrap().unwrap()
}

/// The process's outbox rows as (effect, event id, key).
fn outbox_of<S: Api>(store: &mut S, process: &str) -> Vec<(String, String, String)> {
    store
        .outbox(None)
        .unwrap()
        .into_iter()
        .filter(|item| item.process == process)
        .map(|item| (item.effect, item.event_id, item.key))
        .collect()
}

pub fn after_fires_at_its_due_time_and_not_before<B: Backend>(backend: &B) {
    let chart = reminder();
    let mut store = backend.connect(&backend.fresh());
    order(&mut store, &chart, "o1", T0);
    // The process started at T0 on the epoch clock: its first reminder is
    // due ten minutes later, and the row says so.
    let row = store.process("o1").unwrap().unwrap();
    assert_eq!(row.next_timer_at, Some(T0 + 10 * MINUTE));

    // A millisecond early, nothing fires and nothing is written.
    let before = state_of(&mut store, "o1");
    let early = advance(&mut store, &chart, "o1", T0 + 10 * MINUTE - 1).unwrap();
    assert!(early.fired.is_empty());
    assert_eq!(early.revision, Some(1));
    assert_eq!(early.next_timer_at, Some(T0 + 10 * MINUTE));
    assert_eq!(state_of(&mut store, "o1"), before);

    let first = advance(&mut store, &chart, "o1", T0 + 10 * MINUTE).unwrap();
    assert_eq!(first.fired.len(), 1);
    let id = firing_id(REMINDER, T0 + 10 * MINUTE, 1, 0);
    assert_eq!(first.fired[0].id, id);
    assert_eq!(first.revision, Some(2));
    assert_eq!(first.next_timer_at, Some(T0 + 20 * MINUTE));
    let response = json(&first.fired[0].response);
    assert_eq!(response["outcome"], "applied");
    assert_eq!(response["revision"], 2);
    assert_eq!(response["timer"], REMINDER);
    assert_eq!(response["due"], T0 + 10 * MINUTE);
    assert_eq!(response["context"]["reminders"], 1);
    assert_eq!(response["effects"][0]["effect"], "remind");
    assert_eq!(
        response["effects"][0]["key"],
        idempotency_key(store.secret(), "reminder", "remind", "o1", &id, 0)
    );
    assert_eq!(
        store.process("o1").unwrap().unwrap().next_timer_at,
        Some(T0 + 20 * MINUTE)
    );

    // A scheduler five minutes late fires the second reminder as of its due
    // time, so the third still counts from minute 20, not from minute 25.
    let late = advance(&mut store, &chart, "o1", T0 + 25 * MINUTE).unwrap();
    assert_eq!(late.fired.len(), 1);
    assert_eq!(
        late.fired[0].id,
        firing_id(REMINDER, T0 + 20 * MINUTE, 2, 2)
    );
    assert_eq!(late.next_timer_at, Some(T0 + 30 * MINUTE));

    // At minute 30 the expiry (scheduled before the third reminder) fires
    // first; the reminder then arrives in `expired`, which ignores it.
    let end = advance(&mut store, &chart, "o1", T0 + 30 * MINUTE).unwrap();
    let fired: Vec<(String, String)> = end
        .fired
        .iter()
        .map(|f| {
            let response = json(&f.response);
            (
                response["timer"].as_str().unwrap().to_string(),
                response["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        fired,
        [
            (EXPIRY.to_string(), "applied".to_string()),
            (REMINDER.to_string(), "ignored".to_string())
        ]
    );
    assert_eq!(end.fired[0].id, firing_id(EXPIRY, T0 + 30 * MINUTE, 3, 1));
    assert_eq!(end.revision, Some(4), "both firings in one write");
    assert_eq!(end.next_timer_at, None);
    let state = inspect(&mut store, "o1");
    assert_eq!(state["configuration"], serde_json::json!(["expired"]));
    assert_eq!(state["context"]["reminders"], 2);
    assert_eq!(store.applied_count("o1").unwrap(), 5);
    let effects: Vec<String> = outbox_of(&mut store, "o1")
        .into_iter()
        .map(|(effect, _, _)| effect)
        .collect();
    assert_eq!(effects, ["remind", "remind", "expire"]);
}

pub fn leaving_a_state_cancels_its_timers<B: Backend>(backend: &B) {
    let chart = reminder();
    let mut store = backend.connect(&backend.fresh());
    order(&mut store, &chart, "o1", T0);
    assert_eq!(pay(&mut store, &chart, "o1", T0 + MINUTE).kind(), "applied");
    // Paying cancels the reminder, and leaving `waiting` the expiry.
    assert_eq!(store.process("o1").unwrap().unwrap().next_timer_at, None);
    let before = state_of(&mut store, "o1");
    let advanced = advance(&mut store, &chart, "o1", T0 + 1_000 * MINUTE).unwrap();
    assert!(advanced.fired.is_empty());
    assert_eq!(state_of(&mut store, "o1"), before);
    let state = inspect(&mut store, "o1");
    assert_eq!(state["configuration"], serde_json::json!(["paid"]));
    assert_eq!(state["context"]["reminders"], 0);
}

pub fn an_event_after_the_due_time_sees_the_timers_fire_first<B: Backend>(backend: &B) {
    let chart = reminder();
    let mut store = backend.connect(&backend.fresh());

    // Paid at minute 15: the reminder of minute 10 fires first, then the
    // payment, in one write.
    order(&mut store, &chart, "o1", T0);
    let paid = pay(&mut store, &chart, "o1", T0 + 15 * MINUTE);
    let Outcome::Applied { response, revision } = &paid else {
        panic!("expected applied, got {paid:?}");
    };
    assert_eq!(*revision, 2);
    let response = json(response);
    assert_eq!(response["configuration"], serde_json::json!(["paid"]));
    assert_eq!(response["context"]["reminders"], 1);
    assert_eq!(store.applied_count("o1").unwrap(), 3);
    let reminded = firing_id(REMINDER, T0 + 10 * MINUTE, 1, 0);
    assert_eq!(
        outbox_of(&mut store, "o1"),
        [(
            "remind".to_string(),
            reminded.clone(),
            idempotency_key(store.secret(), "reminder", "remind", "o1", &reminded, 0)
        )]
    );

    // Paid at minute 31: the order expired at minute 30, so the payment is
    // ignored, and a redelivery gets that answer without firing anything.
    order(&mut store, &chart, "o2", T0);
    let late = pay(&mut store, &chart, "o2", T0 + 31 * MINUTE);
    assert_eq!(late.kind(), "ignored");
    let response = json(late.response().unwrap());
    assert_eq!(response["configuration"], serde_json::json!(["expired"]));
    assert_eq!(response["context"]["reminders"], 2);
    let before = state_of(&mut store, "o2");
    let again = pay(&mut store, &chart, "o2", T0 + 90 * MINUTE);
    assert_eq!(again.kind(), "duplicate");
    assert_eq!(again.response(), late.response());
    assert_eq!(state_of(&mut store, "o2"), before);
}

pub fn concurrent_schedulers_fire_each_timer_once<B: Backend>(backend: &B) {
    let chart = reminder();
    let handle = backend.fresh();
    let mut store = backend.connect(&handle);
    let processes: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
    for process in &processes {
        order(&mut store, &chart, process, T0);
    }
    let due = T0 + 10 * MINUTE;
    // Two schedulers sweep the due processes and then advance each one
    // directly, while a sender pays every other order at the due time.
    let barrier = Barrier::new(3);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut store = backend.connect(&handle);
                barrier.wait();
                for swept in advance_due(&mut store, &chart, due, 100).unwrap() {
                    swept
                        .result
                        .unwrap_or_else(|e| panic!("{}: {e}", swept.process));
                }
                for process in &processes {
                    advance(&mut store, &chart, process, due).unwrap();
                }
            });
        }
        scope.spawn(|| {
            let mut store = backend.connect(&handle);
            barrier.wait();
            for process in processes.iter().step_by(2) {
                assert_eq!(pay(&mut store, &chart, process, due).kind(), "applied");
            }
        });
    });
    let reminded = firing_id(REMINDER, due, 1, 0);
    for (i, process) in processes.iter().enumerate() {
        let state = inspect(&mut store, process);
        assert_eq!(state["context"]["reminders"], 1, "{process}: {state}");
        let paid = i % 2 == 0;
        let expected = if paid { "paid" } else { "waiting" };
        assert_eq!(state["configuration"], serde_json::json!([expected]));
        // The order, one firing, and the payment where there was one.
        let applied = 2 + usize::from(paid);
        assert_eq!(store.applied_count(process).unwrap(), applied, "{process}");
        // A payment that came first fired the reminder in its own write.
        let revision = state["revision"].as_u64().unwrap() as usize;
        assert!(
            revision == applied || paid && revision == 2,
            "{process}: {state}"
        );
        assert_eq!(
            outbox_of(&mut store, process),
            [(
                "remind".to_string(),
                reminded.clone(),
                idempotency_key(store.secret(), "reminder", "remind", process, &reminded, 0)
            )]
        );
    }
    // Nothing is due any more until minute 20.
    assert!(
        advance_due(&mut store, &chart, due, 100)
            .unwrap()
            .is_empty()
    );
}

pub fn advance_writes_nothing_when_nothing_is_due<B: Backend>(backend: &B) {
    let chart = reminder();
    let mut store = backend.connect(&backend.fresh());
    order(&mut store, &chart, "o1", T0);
    // A process without timers is never due.
    apply_at(&mut store, &ledger(), "l1", &super::add("a", 1), T0).unwrap();
    assert_eq!(store.process("l1").unwrap().unwrap().next_timer_at, None);
    assert!(
        advance_due(&mut store, &ledger(), u64::MAX, 100)
            .unwrap()
            .is_empty()
    );
    let before = (state_of(&mut store, "o1"), state_of(&mut store, "l1"));

    let ghost = advance(&mut store, &chart, "ghost", T0 + 100 * MINUTE).unwrap();
    assert!(ghost.fired.is_empty());
    assert_eq!(ghost.revision, None);
    assert_eq!(store.process("ghost").unwrap(), None);
    let started = advance(&mut store, &chart, "o1", T0).unwrap();
    assert!(started.fired.is_empty());
    assert!(
        advance_due(&mut store, &chart, T0 + 10 * MINUTE - 1, 100)
            .unwrap()
            .is_empty()
    );
    // Another version of the machine leaves these processes alone.
    let v2 = self::chart(
        &include_str!("../data/runtime/reminder.yaml").replace("version: 1", "version: 2"),
    );
    assert!(
        advance_due(&mut store, &v2, u64::MAX, 100)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        (state_of(&mut store, "o1"), state_of(&mut store, "l1")),
        before
    );

    // And when it is due, `advance_due` finds it.
    let swept = advance_due(&mut store, &chart, T0 + 10 * MINUTE, 100).unwrap();
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].process, "o1");
    assert_eq!(swept[0].result.as_ref().unwrap().fired.len(), 1);
}

pub fn timer_keys_do_not_depend_on_the_scheduler<B: Backend>(backend: &B) {
    let chart = reminder();
    let due = T0 + 10 * MINUTE;

    let id = firing_id(REMINDER, due, 1, 0);
    // Each scheduler here has a store of its own, whose secret keys its
    // rows: the answers are the same but for that key, which is shown as
    // `KEY` to compare them (and checked against the derivation below).
    let key = |store: &B::S| idempotency_key(store.secret(), "reminder", "remind", "o1", &id, 0);
    let unkeyed = |mut advanced: runtime::Advanced, key: &str| {
        for fired in &mut advanced.fired {
            assert!(fired.response.contains(key), "{}", fired.response);
            fired.response = fired.response.replace(key, "KEY");
        }
        advanced
    };
    let mut on_time = backend.connect(&backend.fresh());
    order(&mut on_time, &chart, "o1", T0);
    let expected = unkeyed(
        advance(&mut on_time, &chart, "o1", due).unwrap(),
        &key(&on_time),
    );
    assert_eq!(expected.fired.len(), 1);
    assert_eq!(expected.fired[0].id, id);

    // A scheduler that comes nine minutes late fires the same firing, with
    // the same response, byte for byte.
    let mut late = backend.connect(&backend.fresh());
    order(&mut late, &chart, "o1", T0);
    assert_eq!(
        unkeyed(
            advance(&mut late, &chart, "o1", due + 9 * MINUTE).unwrap(),
            &key(&late)
        ),
        expected
    );

    // A scheduler that dies before its commit leaves nothing; the retry,
    // which first loses a race, writes the same firing.
    let mut crashy = Stale::new(backend.connect(&backend.fresh()));
    order(&mut crashy, &chart, "o1", T0);
    let before = state_of(&mut crashy.inner, "o1");
    crashy.crash_left.set(1);
    assert!(advance(&mut crashy, &chart, "o1", due).is_err());
    assert_eq!(state_of(&mut crashy.inner, "o1"), before);
    crashy.stale_left.set(1);
    crashy.transactions.set(0);
    assert_eq!(
        unkeyed(
            advance(&mut crashy, &chart, "o1", due).unwrap(),
            &key(&crashy.inner)
        ),
        expected
    );
    assert_eq!(crashy.transactions.get(), 2, "one lost race, then a win");

    // The three are three stores, so each has keys of its own: the same
    // firing, under the same derivation, keyed by each store's secret.
    for rows in [
        outbox_of(&mut on_time, "o1"),
        outbox_of(&mut late, "o1"),
        outbox_of(&mut crashy.inner, "o1"),
    ] {
        assert_eq!(rows.len(), 1, "the first reminder's effect");
        assert_eq!((&*rows[0].0, &*rows[0].1), ("remind", &*id));
    }
    assert_eq!(outbox_of(&mut on_time, "o1")[0].2, key(&on_time));
    assert_eq!(outbox_of(&mut late, "o1")[0].2, key(&late));
    assert_eq!(outbox_of(&mut crashy.inner, "o1")[0].2, key(&crashy.inner));
}

pub fn timer_ids_are_reserved<B: Backend>(backend: &B) {
    let chart = reminder();
    let mut store = backend.connect(&backend.fresh());
    let forged = named("ORDER", &firing_id(REMINDER, T0, 0, 0));
    let error = apply_at(&mut store, &chart, "o1", &forged, T0).unwrap_err();
    assert!(error.to_string().contains("timer firings"), "{error}");
    assert_eq!(store.process("o1").unwrap(), None);
}

/// `make_legacy(handle, snapshot)` must build, in the store `handle` names,
/// the tables of the version before timers holding process `old` at revision
/// 1 with `snapshot`, and its applied event `order-old` applied at `T0`.
pub fn a_store_from_before_timers_keeps_working<B: Backend>(
    backend: &B,
    make_legacy: impl Fn(&str, &str),
) {
    let chart = reminder();
    // That version started every actor at clock 0 and never moved it.
    let mut actor = Actor::new(Arc::clone(&chart));
    actor.send(&named("ORDER", "order-old"));
    let snapshot = serde_json::to_string(&actor.snapshot()).unwrap();
    assert!(snapshot.contains(r#""due":600000"#), "{snapshot}");
    let handle = backend.fresh();
    make_legacy(&handle, &snapshot);

    // Opening it adds the column and rebases the clock to the last applied
    // event, so the reminder is due ten minutes after the order.
    let mut store = backend.connect(&handle);
    let row = store.process("old").unwrap().unwrap();
    assert_eq!(row.next_timer_at, Some(T0 + 10 * MINUTE));
    assert_eq!(row.revision, 1);
    assert!(
        advance(&mut store, &chart, "old", T0 + 10 * MINUTE - 1)
            .unwrap()
            .fired
            .is_empty()
    );
    let swept = advance_due(&mut store, &chart, T0 + 10 * MINUTE, 10).unwrap();
    assert_eq!(swept.len(), 1);
    let fired = &swept[0].result.as_ref().unwrap().fired;
    assert_eq!(fired[0].id, firing_id(REMINDER, T0 + 10 * MINUTE, 1, 0));
    assert_eq!(
        pay(&mut store, &chart, "old", T0 + 11 * MINUTE).kind(),
        "applied"
    );
    assert_eq!(
        apply_at(&mut store, &chart, "old", &named("ORDER", "order-old"), T0)
            .unwrap()
            .kind(),
        "duplicate"
    );
    let after = store.process("old").unwrap().unwrap();
    // Opening the store again changes nothing.
    let mut again = backend.connect(&handle);
    assert_eq!(again.process("old").unwrap().unwrap(), after);
    assert_eq!(
        inspect(&mut again, "old")["configuration"],
        serde_json::json!(["paid"])
    );
}
