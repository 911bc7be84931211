//! Invocations: started after the entry actions, cancelled after the exit
//! actions, answered by completion events that only an invocation in
//! flight accepts.

use std::sync::Arc;

use super::{Actor, Chart, Snapshot};
use crate::expr::{Event, Value};
use crate::syntax::{Syntax, parse};

/// A checkout that charges a card while it waits, and may be cancelled.
const CHECKOUT: &str = "\
machine checkout
context { total = 0  receipt = \"\"  attempts = 0 }
effect chargeCard idempotent key
initial cart
state cart { on PAY -> charging { total = event.total } }
state charging {
  entry { attempts = context.attempts + 1  log \"enter charging\" }
  exit log \"exit charging\"
  invoke chargeCard(amount: context.total) id charge {
    done -> paid { receipt = event.output.receipt }
    error -> failed
  }
  on CANCEL -> cart
}
final paid
state failed { on RETRY -> charging }
";

fn actor(text: &str) -> Actor {
    let machine = parse(text, Syntax::Dsl).unwrap_or_else(|e| panic!("{e:?}"));
    Actor::new(Arc::new(Chart::new(machine)))
}

fn event(name: &str, data: serde_json::Value) -> Event {
    Event::new(name, None, Value::from(&data))
}

fn done(id: &str, output: serde_json::Value) -> Event {
    event(
        &format!("xstate.done.actor.{id}"),
        serde_json::json!({ "output": output }),
    )
}

#[test]
fn an_invocation_starts_after_the_entry_actions_with_its_input() {
    let mut actor = actor(CHECKOUT);
    let step = actor.send(&event("PAY", serde_json::json!({ "total": 42 })));
    assert_eq!(step.invoked.len(), 1);
    let invoked = &step.invoked[0];
    assert_eq!((&*invoked.id, &*invoked.src), ("charge", "chargeCard"));
    assert_eq!(invoked.input.to_string(), r#"{"amount": 42}"#);
    // The input saw the context as the entry actions left it.
    assert_eq!(actor.context_value("attempts"), Some(&Value::from(1)));
    let running: Vec<&str> = actor.invocations().map(|i| i.id).collect();
    assert_eq!(running, ["charge"]);

    let step = actor.send(&done("charge", serde_json::json!({ "receipt": "r-1" })));
    assert!(!step.ignored);
    // Leaving the state after completion cancels nothing.
    assert!(step.cancelled.is_empty());
    assert_eq!(actor.configuration_paths(), ["paid"]);
    assert_eq!(actor.context_value("receipt"), Some(&Value::from("r-1")));
    assert_eq!(actor.invocations().count(), 0);
}

#[test]
fn leaving_the_state_cancels_and_a_late_answer_is_ignored() {
    let mut actor = actor(CHECKOUT);
    actor.send(&event("PAY", serde_json::json!({ "total": 5 })));
    let step = actor.send(&Event::named("CANCEL"));
    let cancelled: Vec<&str> = step.cancelled.iter().map(|c| &*c.id).collect();
    assert_eq!(cancelled, ["charge"]);
    assert_eq!(actor.configuration_paths(), ["cart"]);

    let late = actor.send(&done("charge", serde_json::json!({ "receipt": "late" })));
    assert!(late.ignored);
    assert_eq!(actor.configuration_paths(), ["cart"]);
    assert_eq!(actor.context_value("receipt"), Some(&Value::from("")));
}

#[test]
fn a_completion_is_taken_once() {
    let mut actor = actor(CHECKOUT);
    actor.send(&event("PAY", serde_json::json!({ "total": 5 })));
    let error = event(
        "xstate.error.actor.charge",
        serde_json::json!({ "error": "declined" }),
    );
    assert!(!actor.send(&error).ignored);
    assert_eq!(actor.configuration_paths(), ["failed"]);
    // The retry starts a new invocation; the first one's answer came already.
    actor.send(&Event::named("RETRY"));
    assert_eq!(actor.invocations().count(), 1);
    assert!(!actor.send(&error).ignored);
    assert!(
        actor.send(&error).ignored,
        "the second answer has nothing to end"
    );
}

#[test]
fn an_unknown_or_never_started_invocation_answers_nothing() {
    let mut actor = actor(CHECKOUT);
    assert!(actor.send(&done("charge", serde_json::json!(null))).ignored);
    assert!(actor.send(&done("other", serde_json::json!(null))).ignored);
    assert_eq!(actor.configuration_paths(), ["cart"]);
}

#[test]
fn a_bound_key_tells_starts_of_the_same_invocation_apart() {
    let mut actor = actor(CHECKOUT);
    actor.send(&event("PAY", serde_json::json!({ "total": 5 })));
    actor.bind_invocation_keys(|i| format!("key-1-{}", i.id));
    actor.send(&Event::named("CANCEL"));
    let cancelled = &actor.last_step().cancelled[0];
    assert_eq!(cancelled.key.as_deref(), Some("key-1-charge"));
    actor.send(&event("PAY", serde_json::json!({ "total": 6 })));
    actor.bind_invocation_keys(|i| format!("key-2-{}", i.id));

    let mut answer = done("charge", serde_json::json!({ "receipt": "first" }));
    answer.id = Some(Value::from("key-1-charge"));
    assert!(
        actor.send(&answer).ignored,
        "the answer of the cancelled start"
    );
    answer.id = Some(Value::from("key-2-charge"));
    assert!(!actor.send(&answer).ignored);
    assert_eq!(actor.configuration_paths(), ["paid"]);
}

#[test]
fn two_invocations_of_one_state_complete_independently() {
    let mut actor = actor(
        "machine onboarding
         initial checking
         state checking {
           invoke creditBureau id credit { done -> approved }
           invoke identityCheck id identity { error -> rejected }
         }
         state approved
         state rejected",
    );
    let ids: Vec<&str> = actor.last_step().invoked.iter().map(|i| &*i.id).collect();
    assert_eq!(ids, ["credit", "identity"]);
    let step = actor.send(&done("credit", serde_json::json!({})));
    let cancelled: Vec<&str> = step.cancelled.iter().map(|c| &*c.id).collect();
    assert_eq!(cancelled, ["identity"]);
    assert_eq!(actor.configuration_paths(), ["approved"]);
    let error = event(
        "xstate.error.actor.identity",
        serde_json::json!({ "error": "x" }),
    );
    assert!(actor.send(&error).ignored);
}

#[test]
fn an_invocation_in_a_parallel_region_lives_as_long_as_its_region_state() {
    let mut actor = actor(
        "machine order
         initial order
         parallel order {
           state payment {
             initial charging
             state charging { invoke chargeCard id charge { done -> charged } }
             state charged
           }
           state shipping {
             initial packing
             state packing { on PACKED -> shipped }
             state shipped
           }
         }",
    );
    assert_eq!(actor.invocations().count(), 1);
    let step = actor.send(&Event::named("PACKED"));
    assert!(step.cancelled.is_empty() && step.invoked.is_empty());
    actor.send(&done("charge", serde_json::json!({})));
    assert_eq!(
        actor.configuration_paths(),
        ["order.payment.charged", "order.shipping.shipped"]
    );
}

#[test]
fn an_input_that_fails_fails_the_invocation() {
    let mut actor = actor(
        "machine m
         context { order = {} }
         initial a
         state a { on GO -> b }
         state b { invoke ship(to: context.order.address) id ship { error -> c { log event.error } } }
         state c",
    );
    let step = actor.send(&Event::named("GO"));
    assert!(step.invoked.is_empty());
    assert_eq!(step.errors.len(), 1);
    assert_eq!(actor.configuration_paths(), ["c"]);
    assert_eq!(actor.invocations().count(), 0);
}

#[test]
fn entered_and_left_in_one_step_is_started_and_cancelled() {
    let mut actor = actor(
        "machine m
         context { skip = true }
         initial a
         state a { on GO -> b }
         state b { invoke slow id slow  always -> c if context.skip }
         state c",
    );
    let step = actor.send(&Event::named("GO"));
    assert_eq!(step.invoked.len(), 1);
    assert_eq!(step.cancelled.len(), 1);
    assert_eq!(actor.invocations().count(), 0);
}

#[test]
fn a_restored_actor_still_takes_the_answer() {
    let mut original = actor(CHECKOUT);
    original.send(&event("PAY", serde_json::json!({ "total": 7 })));
    original.bind_invocation_keys(|_| "k".into());
    let json = original.snapshot_json();
    assert!(
        json.contains(
            r#""invocations":[{"state":"charging","id":"charge","input":{"amount":7},"key":"k"}]"#
        ),
        "{json}"
    );
    let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&snapshot).unwrap(), json);
    let chart = Arc::clone(original.chart());
    for mut restored in [
        Actor::restore(Arc::clone(&chart), &snapshot).unwrap(),
        Actor::restore_json(Arc::clone(&chart), &json).unwrap(),
    ] {
        let mut answer = done("charge", serde_json::json!({ "receipt": "r" }));
        answer.id = Some(Value::from("k"));
        assert!(!restored.send(&answer).ignored);
        assert_eq!(restored.configuration_paths(), ["paid"]);
    }
    let unknown = json.replace(r#""id":"charge""#, r#""id":"refund""#);
    let error = Actor::restore_json(chart, &unknown).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the snapshot has invocation `refund` of state `charging` in flight, which the machine does not have there"
    );
}
