//! For random machines and event sequences, snapshot → JSON → restore →
//! continue gives exactly what continuing directly gives.

use crate::common;

use std::sync::Arc;

use common::{Input, apply, inputs, observe};
use idemchart::interp::{Actor, Chart, Snapshot};
use proptest::prelude::*;

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

/// An actor made a copy of another with `clone_from`, in the buffers of its
/// own different run (the linter's replay forks actors so), is that actor:
/// the same state and last step, and the same steps from there on.
#[track_caller]
fn check_clone_from(seed: u64, inputs: &[Input], cut: usize, other: usize) {
    let chart = Arc::new(Chart::new(common::machine(seed)).with_microstep_limit(500));
    let mut original = Actor::new(Arc::clone(&chart));
    let mut copy = Actor::new(Arc::clone(&chart));
    let cut = cut.min(inputs.len());
    for input in &inputs[..cut] {
        apply(&mut original, input);
    }
    // The copy's own run leaves other configurations and buffers behind.
    for input in inputs.iter().rev().take(other) {
        apply(&mut copy, input);
    }
    copy.clone_from(&original);
    assert_eq!(
        observe(&copy),
        observe(&original),
        "seed {seed}: cloned at {cut}"
    );
    assert_eq!(copy.last_step(), original.last_step(), "seed {seed}");
    assert_eq!(copy.fingerprint(), original.fingerprint(), "seed {seed}");
    for (i, input) in inputs[cut..].iter().enumerate() {
        let a = apply(&mut original, input);
        let b = apply(&mut copy, input);
        assert_eq!(a, b, "seed {seed}: step {} after a clone_from", cut + i);
    }
    assert_eq!(
        observe(&copy),
        observe(&original),
        "seed {seed}: at the end"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn an_actor_cloned_into_another_continues_as_the_original(
        seed in any::<u64>(),
        inputs in inputs(),
        cut in 0usize..24,
        other in 0usize..24,
    ) {
        check_clone_from(seed, &inputs, cut, other);
    }
}
