//! Interpreter behaviour that the SCXML conformance suite showed missing,
//! each pinned by a small machine.

use std::sync::Arc;

use super::{Actor, Chart};
use crate::expr::{Event, Value};
use crate::syntax::{Syntax, parse};

fn actor(yaml: &str) -> Actor {
    let machine = parse(yaml, Syntax::Yaml).unwrap_or_else(|e| panic!("{e:?}"));
    Actor::new(Arc::new(Chart::new(machine)))
}

/// SCXML keeps `_event` bound while the states a transition leaves and
/// enters run their actions (W3C test 318).
#[test]
fn exit_and_entry_actions_see_the_event() {
    let mut actor = actor(
        "machine: m\n\
         context: { left: null, got: null }\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             exit: [ { assign: { left: 'event.type' } } ]\n    \
             on: { GO: b }\n  \
           b:\n    \
             entry: [ { assign: { got: 'event.n' } } ]\n",
    );
    let data = Value::from(&serde_json::json!({ "n": 5 }));
    let step = actor.send(&Event::new("GO", None, data));
    assert!(step.errors.is_empty(), "{:?}", step.errors);
    assert_eq!(
        actor.context_value("left"),
        Some(&Value::from(&serde_json::json!("GO")))
    );
    assert_eq!(
        actor.context_value("got"),
        Some(&Value::from(&serde_json::json!(5)))
    );
}

/// A history state without a default restores its parent's default entry
/// the first time (XState), instead of being a target that enters nothing.
#[test]
fn history_without_default_enters_the_parents_initial() {
    let text = "machine: h\ninitial: idle\nstates:\n  idle: { on: { GO: '#hist' } }\n  p:\n    initial: a\n    states:\n      a: {}\n      b: {}\n      h: { type: history, id: hist }\n";
    let machine = crate::syntax::parse(text, crate::syntax::Syntax::Yaml).unwrap();
    let mut actor = super::Actor::new(std::sync::Arc::new(super::Chart::new(machine)));
    actor.send(&crate::expr::Event::named("GO"));
    assert_eq!(actor.configuration_paths(), ["p.a"]);
}
