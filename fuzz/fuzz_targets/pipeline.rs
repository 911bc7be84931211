//! The whole pipeline on a machine that loads from the fuzzed YAML text:
//! lint it, start an actor, send every event it names twice, let its timers
//! fire, then snapshot and restore. The snapshot JSON must be the bytes serde
//! writes, and both restore routes must give back the same snapshot.
#![no_main]

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, Snapshot};
use idemchart::model::{EventPattern, Machine, PayloadType, Trigger};
use idemchart::syntax::{Syntax, parse};
use libfuzzer_sys::fuzz_target;

/// At most this many distinct events are sent, each twice.
const EVENTS: usize = 8;

/// A value of each declared payload type.
fn sample(ty: PayloadType) -> Value {
    match ty {
        PayloadType::String => Value::from("x"),
        PayloadType::Number => Value::Double(1.5),
        PayloadType::Integer => Value::Int(1),
        PayloadType::Boolean => Value::Bool(true),
        PayloadType::List => Value::list(vec![Value::from("x")]),
        PayloadType::Map => Value::map([("k", Value::Int(1))]),
        PayloadType::Any => Value::Null,
    }
}

/// The declared events with a payload of their declared types, then the
/// other exact names the transitions wait for, with no payload.
fn events(machine: &Machine) -> Vec<Event> {
    let mut events: Vec<Event> = machine
        .events
        .iter()
        .map(|(name, decl)| {
            let fields = decl.payload.iter().flatten();
            let data = Value::map(fields.map(|(field, f)| (field.as_str(), sample(f.ty))));
            let id = decl.id_field.as_ref().map(|_| Value::from("id-1"));
            Event::new(name.as_str(), id, data)
        })
        .collect();
    for transition in &machine.transitions {
        if let Trigger::Event(descriptor) = &transition.trigger {
            for pattern in &descriptor.patterns {
                if let EventPattern::Exact(name) = pattern
                    && !machine.events.contains_key(name)
                {
                    events.push(Event::new(name.as_str(), None, Value::map::<&str>([])));
                }
            }
        }
    }
    events.truncate(EVENTS);
    events
}

fuzz_target!(|text: &str| {
    let Ok(machine) = parse(text, Syntax::Yaml) else {
        return;
    };
    let _ = idemchart::lint::lint(&machine);
    let events = events(&machine);
    let chart = Arc::new(Chart::new(machine));
    let mut actor = Actor::new(Arc::clone(&chart));
    for event in &events {
        actor.send(event);
        actor.send(event);
    }
    for _ in 0..3 {
        match actor.next_due() {
            Some(due) => {
                actor.advance_to(due);
            }
            None => break,
        }
    }

    let snapshot = actor.snapshot();
    let json = actor.snapshot_json();
    assert_eq!(json, serde_json::to_string(&snapshot).unwrap());
    let by_codec = Actor::restore_json(Arc::clone(&chart), &json)
        .unwrap_or_else(|error| panic!("{json}: {error}"));
    assert_eq!(by_codec.snapshot(), snapshot, "{json}");
    let parsed: Snapshot = serde_json::from_str(&json).unwrap();
    let by_serde = Actor::restore(chart, &parsed).unwrap_or_else(|error| panic!("{json}: {error}"));
    assert_eq!(by_serde.snapshot(), snapshot, "{json}");
});
