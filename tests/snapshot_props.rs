//! For random machines and event sequences, snapshot → JSON → restore →
//! continue gives exactly what continuing directly gives.

mod common;

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, Snapshot};
use proptest::prelude::*;

/// One input: an event (by index into `common::EVENTS`, with a payload key) or
/// a clock advance in milliseconds.
#[derive(Clone, Debug)]
enum Input {
    Send(usize, u8),
    Advance(u64),
    /// Answers an invocation in flight (by index, modulo how many there
    /// are), done when even, failed when odd; with no invocation in
    /// flight, the answer of one that never started.
    Complete(u8),
}

fn inputs() -> impl Strategy<Value = Vec<Input>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..common::EVENTS.len(), any::<u8>()).prop_map(|(e, k)| Input::Send(e, k % 4)),
            1 => prop_oneof![Just(400u64), Just(1_000), Just(70_000)].prop_map(Input::Advance),
            1 => any::<u8>().prop_map(Input::Complete),
        ],
        0..24,
    )
}

fn apply(actor: &mut Actor, input: &Input) -> String {
    let step = match input {
        Input::Send(e, k) => {
            let key = Value::from(format!("k{k}"));
            let data = Value::map([("k", key.clone()), ("v", Value::Int(*k as i64))]);
            actor
                .send(&Event::new(common::EVENTS[*e], Some(key), data))
                .clone()
        }
        Input::Advance(ms) => {
            let to = actor.now() + ms;
            actor.advance_to(to).clone()
        }
        Input::Complete(n) => {
            let running: Vec<String> = actor.invocations().map(|i| i.id.to_string()).collect();
            let id = match running.len() {
                0 => "charge".to_string(),
                len => running[*n as usize % len].clone(),
            };
            let (name, data) = if n % 2 == 0 {
                (
                    format!("xstate.done.actor.{id}"),
                    Value::map([("output", Value::Int(*n as i64))]),
                )
            } else {
                (
                    format!("xstate.error.actor.{id}"),
                    Value::map([("error", Value::from("failed"))]),
                )
            };
            actor.send(&Event::new(name, None, data)).clone()
        }
    };
    format!("{step:?}")
}

/// What an observer can see of an actor.
fn observe(actor: &Actor) -> String {
    let invocations: Vec<String> = actor
        .invocations()
        .map(|i| format!("{}@{:?}", i.id, i.state))
        .collect();
    format!(
        "{:?} {:?} {} {:?} {:?}",
        actor.status(),
        actor.configuration_paths(),
        actor.context(),
        actor.next_due(),
        invocations
    )
}

#[track_caller]
fn check(seed: u64, inputs: &[Input], cut: usize) {
    // A low limit keeps livelocking random machines cheap; they must restore alike too.
    let chart = Arc::new(Chart::new(common::machine(seed)).with_microstep_limit(500));
    let mut direct = Actor::new(Arc::clone(&chart));
    let mut resumed = Actor::new(Arc::clone(&chart));
    let cut = cut.min(inputs.len());
    for input in &inputs[..cut] {
        apply(&mut direct, input);
        apply(&mut resumed, input);
    }
    let json = serde_json::to_string(&resumed.snapshot()).unwrap();
    let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(
        snapshot,
        resumed.snapshot(),
        "seed {seed}: the snapshot changes through JSON"
    );
    let mut resumed = Actor::restore(Arc::clone(&chart), &snapshot).unwrap();
    assert_eq!(
        observe(&resumed),
        observe(&direct),
        "seed {seed}: restored at {cut}"
    );
    for (i, input) in inputs[cut..].iter().enumerate() {
        let a = apply(&mut direct, input);
        let b = apply(&mut resumed, input);
        assert_eq!(
            a,
            b,
            "seed {seed}: step {} ({input:?}) differs after a restore at {cut}",
            cut + i
        );
        assert_eq!(
            observe(&resumed),
            observe(&direct),
            "seed {seed}: state after step {}",
            cut + i
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn restoring_a_snapshot_changes_nothing(seed in any::<u64>(), inputs in inputs(), cut in 0usize..24) {
        check(seed, &inputs, cut);
    }
}
