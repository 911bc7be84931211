//! The store contract for invocations: an invocation is an outbox row keyed
//! by its step, its answer comes back as the completion event (the key its
//! event id) in the transaction that settles the row, and leaving the state
//! cancels the row.

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{Completed, Dispatch, DispatchPolicy, complete_at, invocation_key};
use idemchart::store::{OutboxItem, OutboxStatus, Store};

use super::api::{self, apply_at, dispatch};
use super::{Backend, T0, chart};

pub fn checkout() -> Arc<Chart> {
    chart(include_str!("../../machines/checkout.yaml"))
}

fn approval() -> Arc<Chart> {
    chart(include_str!("../data/runtime/approval.yaml"))
}

fn pay(request: &str, amount: i64) -> Event {
    let data = serde_json::json!({ "solicitudId": request, "pedidoId": "pe-7", "importe": amount });
    Event::new("PAGAR", Some(Value::from(request)), Value::from(&data))
}

fn cancel(request: &str) -> Event {
    let data = serde_json::json!({ "solicitudId": request });
    Event::new("CANCELAR", Some(Value::from(request)), Value::from(&data))
}

/// A completion as a host with its own dispatcher sends it.
pub fn completion(name: &str, key: &str, data: serde_json::Value) -> Event {
    Event::new(name, Some(Value::from(key)), Value::from(&data))
}

fn invocation_rows<S: Store>(store: &mut S) -> Vec<OutboxItem> {
    store
        .outbox(None)
        .unwrap()
        .into_iter()
        .filter(|row| row.invocation.is_some())
        .collect()
}

fn context_of<S: super::Api>(store: &mut S, process: &str) -> serde_json::Value {
    api::inspect(store, process).unwrap().unwrap()
}

pub fn an_invocation_is_an_outbox_row_keyed_by_its_step<B: Backend>(backend: &B) {
    let chart = checkout();
    let mut store = backend.connect(&backend.fresh());
    let first = apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0).unwrap();
    let rows = invocation_rows(&mut store);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    let key = invocation_key(
        store.secret(),
        "checkout",
        "cobrarTarjeta",
        "c1",
        "s1",
        "cobrando",
        "cobro",
    );
    assert_eq!(row.key, key);
    assert_eq!(row.invocation.as_deref(), Some("cobro"));
    assert_eq!(
        (&row.effect[..], &row.event_id[..]),
        ("cobrarTarjeta", "s1")
    );
    let args: serde_json::Value = serde_json::from_str(&row.args).unwrap();
    assert_eq!(args, serde_json::json!({ "pedido": "pe-7", "importe": 30 }));
    assert_eq!(row.status, OutboxStatus::Pending);
    // The response names the invocation and its key, for a host that
    // performs the call itself.
    let response: serde_json::Value = serde_json::from_str(first.response().unwrap()).unwrap();
    assert_eq!(
        response["invocations"],
        serde_json::json!([{ "id": "cobro", "src": "cobrarTarjeta", "key": key,
                            "input": { "pedido": "pe-7", "importe": 30 } }])
    );
    // A redelivered request is a duplicate and starts nothing more.
    let again = apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0 + 1).unwrap();
    assert_eq!(again.kind(), "duplicate");
    assert_eq!(invocation_rows(&mut store).len(), 1);
}

pub fn dispatch_answers_an_invocation_with_its_completion_once<B: Backend>(backend: &B) {
    let chart = checkout();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0).unwrap();
    let mut seen = Vec::new();
    let report = dispatch(
        &mut store,
        &chart,
        T0 + 1,
        &DispatchPolicy::default(),
        |item| {
            seen.push((item.key.clone(), item.invocation.clone()));
            Dispatch::Output(serde_json::json!({ "recibo": "R-1" }))
        },
    )
    .unwrap();
    assert_eq!(report.done, 1);
    let key = invocation_key(
        store.secret(),
        "checkout",
        "cobrarTarjeta",
        "c1",
        "s1",
        "cobrando",
        "cobro",
    );
    assert_eq!(seen, [(key.clone(), Some("cobro".to_string()))]);
    let state = context_of(&mut store, "c1");
    assert_eq!(state["configuration"], serde_json::json!(["pagado"]));
    assert_eq!(state["context"]["recibo"], "R-1");
    assert_eq!(state["revision"], 2);
    // The row is done; the receipt the completion's step sent is a row
    // keyed by the completion's id, the invocation key.
    let rows = store.outbox(None).unwrap();
    let charge = rows.iter().find(|r| r.key == key).unwrap();
    assert_eq!(charge.status, OutboxStatus::Done);
    let receipt = rows.iter().find(|r| r.effect == "enviarRecibo").unwrap();
    assert_eq!(receipt.event_id, key);
    // The same answer sent again by a host (a dispatcher that crashed after
    // the commit) is a duplicate; another answer under the key a conflict.
    let done = completion(
        "xstate.done.actor.cobro",
        &key,
        serde_json::json!({ "output": { "recibo": "R-1" } }),
    );
    let again = apply_at(&mut store, &chart, "c1", &done, T0 + 2).unwrap();
    assert_eq!(again.kind(), "duplicate");
    let other = completion(
        "xstate.done.actor.cobro",
        &key,
        serde_json::json!({ "output": { "recibo": "R-2" } }),
    );
    let conflict = apply_at(&mut store, &chart, "c1", &other, T0 + 2).unwrap();
    assert_eq!(conflict.kind(), "conflict");
    assert_eq!(context_of(&mut store, "c1")["revision"], 2);
    // Nothing is left to dispatch but the receipt.
    let mut handed = Vec::new();
    dispatch(
        &mut store,
        &chart,
        T0 + 3,
        &DispatchPolicy::default(),
        |item| {
            handed.push(item.effect.clone());
            Dispatch::Done
        },
    )
    .unwrap();
    assert_eq!(handed, ["enviarRecibo"]);
}

pub fn a_refused_invocation_takes_on_error<B: Backend>(backend: &B) {
    let chart = checkout();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0).unwrap();
    let report = dispatch(
        &mut store,
        &chart,
        T0 + 1,
        &DispatchPolicy::default(),
        |_| Dispatch::Failed(serde_json::json!({ "motivo": "fondos insuficientes" })),
    )
    .unwrap();
    assert_eq!(report.failed, 1);
    let state = context_of(&mut store, "c1");
    assert_eq!(state["configuration"], serde_json::json!(["rechazado"]));
    assert_eq!(state["context"]["motivo"], "fondos insuficientes");
    let row = invocation_rows(&mut store).remove(0);
    assert_eq!(row.status, OutboxStatus::Failed);
    assert_eq!(
        row.last_error.as_deref(),
        Some(r#"{"motivo":"fondos insuficientes"}"#)
    );
    // A new request charges again under a new key (its own step's).
    apply_at(&mut store, &chart, "c1", &pay("s2", 30), T0 + 2).unwrap();
    let rows = invocation_rows(&mut store);
    assert_eq!(rows.len(), 2);
    let second = invocation_key(
        store.secret(),
        "checkout",
        "cobrarTarjeta",
        "c1",
        "s2",
        "cobrando",
        "cobro",
    );
    assert_eq!(rows[1].key, second);
    assert_eq!(rows[1].status, OutboxStatus::Pending);
}

pub fn leaving_the_state_cancels_the_invocation<B: Backend>(backend: &B) {
    let chart = checkout();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0).unwrap();
    apply_at(&mut store, &chart, "c1", &cancel("k1"), T0 + 1).unwrap();
    let row = invocation_rows(&mut store).remove(0);
    assert_eq!(row.status, OutboxStatus::Cancelled);
    let mut handed = 0;
    let report = dispatch(
        &mut store,
        &chart,
        T0 + 2,
        &DispatchPolicy::default(),
        |_| {
            handed += 1;
            Dispatch::Done
        },
    )
    .unwrap();
    assert_eq!(
        (handed, report.done),
        (0, 0),
        "a cancelled row is never performed"
    );
    // Paying again starts a new charge; a late answer to the cancelled one,
    // under its old key, is ignored and changes nothing.
    apply_at(&mut store, &chart, "c1", &pay("s2", 40), T0 + 3).unwrap();
    let late = completion(
        "xstate.done.actor.cobro",
        &row.key,
        serde_json::json!({ "output": { "recibo": "R-old" } }),
    );
    let answer = apply_at(&mut store, &chart, "c1", &late, T0 + 4).unwrap();
    assert_eq!(answer.kind(), "ignored");
    let state = context_of(&mut store, "c1");
    assert_eq!(state["configuration"], serde_json::json!(["cobrando"]));
    assert_eq!(state["context"]["recibo"], "");
    // The new charge completes.
    let second = invocation_key(
        store.secret(),
        "checkout",
        "cobrarTarjeta",
        "c1",
        "s2",
        "cobrando",
        "cobro",
    );
    dispatch(
        &mut store,
        &chart,
        T0 + 5,
        &DispatchPolicy::default(),
        |item| {
            assert_eq!(item.key, second);
            Dispatch::Output(serde_json::json!({ "recibo": "R-2" }))
        },
    )
    .unwrap();
    assert_eq!(context_of(&mut store, "c1")["context"]["recibo"], "R-2");
}

pub fn an_unknown_or_dead_invocation_is_an_error_the_machine_handles<B: Backend>(backend: &B) {
    let chart = approval();
    let mut store = backend.connect(&backend.fresh());
    let submit = |id: &str| {
        let data = serde_json::json!({ "requestId": id, "amount": 5 });
        Event::new("SUBMIT", Some(Value::from(id)), Value::from(&data))
    };
    // The cooling-off timer enters `scoring`: the firing's step starts the
    // invocation, keyed by the firing's id.
    apply_at(&mut store, &chart, "a1", &submit("r1"), T0).unwrap();
    let advanced = api::advance(&mut store, &chart, "a1", T0 + 5_000).unwrap();
    let firing = &advanced.fired[0].id;
    let row = invocation_rows(&mut store).remove(0);
    assert_eq!(
        row.key,
        invocation_key(
            store.secret(),
            "approval",
            "scoreRisk",
            "a1",
            firing,
            "scoring",
            "risk"
        )
    );
    assert_eq!(row.event_id, *firing);
    // A timeout against the scoring service: the machine hears an error
    // that says the outcome is unknown, and goes back to draft.
    let report = dispatch(
        &mut store,
        &chart,
        T0 + 5_001,
        &DispatchPolicy::default(),
        |_| Dispatch::UnknownOutcome,
    )
    .unwrap();
    assert_eq!(report.unknown, 1);
    let state = context_of(&mut store, "a1");
    assert_eq!(state["configuration"], serde_json::json!(["draft"]));
    assert_eq!(state["context"]["motivo"], "unknown-outcome");
    // Again, and this time the service keeps failing until the row is dead.
    apply_at(&mut store, &chart, "a1", &submit("r2"), T0 + 6_000).unwrap();
    api::advance(&mut store, &chart, "a1", T0 + 11_000).unwrap();
    let policy = DispatchPolicy {
        max_attempts: 2,
        base_backoff_ms: 10,
        ..DispatchPolicy::default()
    };
    let retry = || Dispatch::Retry("503".to_string());
    let first = dispatch(&mut store, &chart, T0 + 11_001, &policy, |_| retry()).unwrap();
    assert_eq!(first.retried, 1);
    let second = dispatch(&mut store, &chart, T0 + 12_000, &policy, |_| retry()).unwrap();
    assert_eq!(second.dead, 1);
    let state = context_of(&mut store, "a1");
    assert_eq!(state["configuration"], serde_json::json!(["draft"]));
    assert_eq!(state["context"]["motivo"], "dead");
    let statuses: Vec<OutboxStatus> = invocation_rows(&mut store)
        .iter()
        .map(|row| row.status)
        .collect();
    assert_eq!(statuses, [OutboxStatus::Unknown, OutboxStatus::Dead]);
}

pub fn invocations_in_parallel_regions_complete_independently<B: Backend>(backend: &B) {
    let chart = approval();
    let mut store = backend.connect(&backend.fresh());
    let data = serde_json::json!({ "requestId": "r1", "amount": 5 });
    let submit = Event::new("SUBMIT", Some(Value::from("r1")), Value::from(&data));
    apply_at(&mut store, &chart, "a1", &submit, T0).unwrap();
    api::advance(&mut store, &chart, "a1", T0 + 5_000).unwrap();
    // The score enters the parallel review, whose budget region invokes.
    dispatch(
        &mut store,
        &chart,
        T0 + 5_001,
        &DispatchPolicy::default(),
        |item| {
            assert_eq!(item.invocation.as_deref(), Some("risk"));
            Dispatch::Output(serde_json::json!({ "score": 7 }))
        },
    )
    .unwrap();
    let rows = invocation_rows(&mut store);
    let budget = rows
        .iter()
        .find(|row| row.invocation.as_deref() == Some("budget"))
        .unwrap();
    assert_eq!(
        budget.event_id, rows[0].key,
        "started by the risk answer's step"
    );
    let approve = {
        let data = serde_json::json!({ "requestId": "m1" });
        Event::new("APPROVE", Some(Value::from("m1")), Value::from(&data))
    };
    apply_at(&mut store, &chart, "a1", &approve, T0 + 5_002).unwrap();
    dispatch(
        &mut store,
        &chart,
        T0 + 5_003,
        &DispatchPolicy::default(),
        |_| Dispatch::Done,
    )
    .unwrap();
    let state = context_of(&mut store, "a1");
    assert_eq!(state["context"]["score"], 7);
    assert_eq!(
        state["configuration"],
        serde_json::json!(["review.manager.approved", "review.budget.ok"])
    );
}

/// One step of a checkout's life, for the property test.
#[derive(Clone, Copy, Debug)]
pub enum CheckoutStep {
    Pay,
    Cancel,
    /// The gateway answers every due charge: a receipt, or a refusal.
    Answer {
        accept: bool,
    },
}

/// Random lives of a checkout, up to 16 steps.
pub fn checkout_steps() -> impl proptest::strategy::Strategy<Value = Vec<CheckoutStep>> {
    use proptest::prelude::*;
    prop::collection::vec(0..4u32, 1..16).prop_map(|picks| {
        picks
            .into_iter()
            .map(|p| match p {
                0 => CheckoutStep::Pay,
                1 => CheckoutStep::Cancel,
                2 => CheckoutStep::Answer { accept: true },
                _ => CheckoutStep::Answer { accept: false },
            })
            .collect()
    })
}

/// Runs `steps` on a clean store and on a noisy one that, before step `at`,
/// delivers again one of the requests or completions it delivered so far
/// (`redeliveries`: `(at, which)`): every redelivery is a duplicate, and
/// both stores end with the same process and the same outbox.
pub fn redelivered_completions_change_nothing<B: Backend>(
    backend: &B,
    steps: &[CheckoutStep],
    redeliveries: &[(usize, usize)],
) {
    let chart = checkout();
    let mut clean = backend.connect(&backend.fresh());
    let mut noisy = backend.connect(&backend.fresh());
    let mut sent: Vec<Event> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        for (at, which) in redeliveries {
            if *at == i && !sent.is_empty() {
                let again = &sent[which % sent.len()];
                let outcome = apply_at(&mut noisy, &chart, "c", again, T0 + i as u64).unwrap();
                assert_eq!(outcome.kind(), "duplicate", "{again:?}");
            }
        }
        let now = T0 + i as u64;
        match *step {
            CheckoutStep::Pay | CheckoutStep::Cancel => {
                let event = match step {
                    CheckoutStep::Pay => pay(&format!("s{i}"), 10 + i as i64),
                    _ => cancel(&format!("k{i}")),
                };
                let a = apply_at(&mut clean, &chart, "c", &event, now).unwrap();
                let b = apply_at(&mut noisy, &chart, "c", &event, now).unwrap();
                // The two stores key their rows each with its own secret.
                assert_eq!(
                    super::keyless(&mut clean, vec![format!("{a:?}")]),
                    super::keyless(&mut noisy, vec![format!("{b:?}")])
                );
                sent.push(event);
            }
            CheckoutStep::Answer { accept } => {
                let answer = |item: &OutboxItem| match (&item.invocation, accept) {
                    (None, _) => Dispatch::Done,
                    (Some(_), true) => Dispatch::Output(
                        serde_json::json!({ "recibo": format!("R-{}", item.event_id) }),
                    ),
                    (Some(_), false) => {
                        Dispatch::Failed(serde_json::json!({ "motivo": "rechazada" }))
                    }
                };
                let policy = DispatchPolicy::default();
                let mut answered = Vec::new();
                dispatch(&mut clean, &chart, now, &policy, answer).unwrap();
                dispatch(&mut noisy, &chart, now, &policy, |item| {
                    let dispatch = answer(item);
                    if let Some(id) = &item.invocation {
                        answered.push(match &dispatch {
                            Dispatch::Output(output) => completion(
                                &format!("xstate.done.actor.{id}"),
                                &item.key,
                                serde_json::json!({ "output": output }),
                            ),
                            Dispatch::Failed(error) => completion(
                                &format!("xstate.error.actor.{id}"),
                                &item.key,
                                serde_json::json!({ "error": error }),
                            ),
                            other => unreachable!("{other:?}"),
                        });
                    }
                    dispatch
                })
                .unwrap();
                sent.extend(answered);
            }
        }
    }
    // A life of answers only never starts the process, in either store.
    let a = api::inspect(&mut clean, "c").unwrap();
    let b = api::inspect(&mut noisy, "c").unwrap();
    assert_eq!(a, b);
    // A completion's id is its invocation's key, so the event ids of the
    // rows it wrote are store's own too: compared as the rows they name.
    let rows = |store: &mut B::S| {
        let rows: Vec<(String, u32, String, OutboxStatus)> = store
            .outbox(None)
            .unwrap()
            .into_iter()
            .map(|row| (row.event_id, row.position, row.effect, row.status))
            .collect();
        super::keyless(store, vec![format!("{rows:?}")])
    };
    assert_eq!(rows(&mut clean), rows(&mut noisy));
}

/// One store holds processes of two machines: a dispatcher answers the rows
/// of its chart's machine only, and leaves the others untouched (not
/// leased, no attempt counted) for a dispatcher with their chart.
pub fn dispatch_takes_the_rows_of_its_machine_only<B: Backend>(backend: &B) {
    let (checkout, ledger) = (checkout(), super::ledger());
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &checkout, "c1", &pay("s1", 30), T0).unwrap();
    apply_at(&mut store, &ledger, "l1", &super::add("a1", 5), T0).unwrap();
    let mut handed = Vec::new();
    let report = dispatch(
        &mut store,
        &ledger,
        T0 + 1,
        &DispatchPolicy::default(),
        |item| {
            handed.push(item.process.clone());
            Dispatch::UnknownOutcome
        },
    )
    .unwrap();
    assert_eq!((handed, report.unknown), (vec!["l1".to_string()], 1));
    let charge = invocation_rows(&mut store).remove(0);
    assert_eq!((charge.status, charge.attempts), (OutboxStatus::Pending, 0));
    assert_eq!(charge.next_attempt_at, T0, "not leased");
    // The checkout's own dispatcher answers it.
    let report = dispatch(
        &mut store,
        &checkout,
        T0 + 2,
        &DispatchPolicy::default(),
        |item| {
            assert_eq!(item.process, "c1");
            Dispatch::Output(serde_json::json!({ "recibo": "R-1" }))
        },
    )
    .unwrap();
    assert_eq!(report.done, 1);
}

/// A receiver that takes the call (`Dispatch::Accepted`) leaves the row
/// pending, to be called again after the back-off; its later answer
/// (`complete_at`) completes the process and settles the row in one
/// transaction. The same answer again is a duplicate; another is refused
/// and writes nothing; a key of no invocation of the process is unknown.
pub fn an_accepted_invocation_is_completed_once<B: Backend>(backend: &B) {
    let chart = checkout();
    let mut store = backend.connect(&backend.fresh());
    apply_at(&mut store, &chart, "c1", &pay("s1", 30), T0).unwrap();
    let policy = DispatchPolicy::default();
    let report = dispatch(&mut store, &chart, T0, &policy, |_| Dispatch::Accepted).unwrap();
    assert_eq!(report.retried, 1);
    let row = invocation_rows(&mut store).remove(0);
    assert_eq!(row.status, OutboxStatus::Pending);
    assert_eq!(row.next_attempt_at, T0 + policy.backoff(1));
    let output = serde_json::json!({ "recibo": "R-1" });
    let answer = || Dispatch::Output(output.clone());
    let done = complete_at(&mut store, &chart, "c1", &row.key, answer(), T0 + 1).unwrap();
    let Completed::Applied(outcome) = &done else {
        panic!("{done:?}");
    };
    assert_eq!(outcome.kind(), "applied");
    assert_eq!(context_of(&mut store, "c1")["context"]["recibo"], "R-1");
    assert_eq!(invocation_rows(&mut store)[0].status, OutboxStatus::Done);
    let before = super::state_of(&mut store, "c1");
    let again = complete_at(&mut store, &chart, "c1", &row.key, answer(), T0 + 2).unwrap();
    assert_eq!(
        again,
        Completed::Duplicate(idemchart::runtime::Outcome::Duplicate {
            response: outcome.response().unwrap().to_string(),
            revision: outcome.revision().unwrap(),
        })
    );
    let other = Dispatch::Failed(serde_json::json!({ "motivo": "tarde" }));
    let refused = complete_at(&mut store, &chart, "c1", &row.key, other, T0 + 3).unwrap();
    assert_eq!(refused, Completed::NotPending(OutboxStatus::Done));
    let elsewhere = complete_at(&mut store, &chart, "c2", &row.key, answer(), T0 + 4).unwrap();
    assert_eq!(elsewhere, Completed::Unknown);
    assert_eq!(super::state_of(&mut store, "c1"), before, "nothing written");
    // The dispatcher does not call the invocation again; it calls the
    // effect the completion's step started.
    let report = dispatch(&mut store, &chart, T0 + 60_000, &policy, |item| {
        assert_ne!(item.key, row.key, "the invocation is called again");
        assert_eq!(item.effect, "enviarRecibo");
        Dispatch::Done
    })
    .unwrap();
    assert_eq!(report.done, 1);
}
