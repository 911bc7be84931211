//! The safe fixes never change what a machine does: for random machines
//! with undeclared events (S005) and stale suppressions (S009), written in
//! either syntax, the machine after `--fix` runs every random event
//! sequence exactly as the machine before it: the same step, the same
//! configuration and the same context after every input.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Input, apply, inputs, observe};
use idemchart::diagnostic::Applicability;
use idemchart::fix;
use idemchart::interp::{Actor, Chart};
use idemchart::lint::{Options, lint_source};
use idemchart::span::SourceFile;
use idemchart::syntax::{self, Syntax};
use idemchart::{Diagnostic, Machine};
use proptest::prelude::*;

/// A random machine with things for the safe fixes to do: some of its
/// events left undeclared, and `allow`s that suppress nothing (a load
/// error's lint never has anything to suppress; the others may or may not).
fn machine_with_fixes(seed: u64) -> Machine {
    let mut doc = common::machine_doc(seed);
    let mut rng = common::Rng::new(seed ^ 0x3C6E_F372_FE94_F82B);
    doc.events.retain(|_| rng.chance(50));
    let lints = [
        "unknown-target",
        "deadlock-state",
        "unreachable-state",
        "self-accepting-event",
    ];
    let mut states = vec![&mut doc.root];
    while let Some(state) = states.pop() {
        if rng.chance(30) {
            let lint = *rng.pick(&lints);
            state
                .allow
                .push((name(lint), "kept from an older version".to_string()));
        }
        states.extend(state.states.iter_mut());
    }
    syntax::lower(doc).unwrap_or_else(|errors| panic!("seed {seed}: {errors:#?}"))
}

fn name(text: &str) -> idemchart::model::Name {
    idemchart::model::Name {
        text: text.to_string(),
        span: idemchart::Span::default(),
    }
}

/// The machine's text in `syntax` with its safe fixes applied, and how many
/// findings they fixed.
fn fixed(machine: &Machine, syntax: Syntax) -> (SourceFile, SourceFile, usize) {
    let (path, text) = match syntax {
        Syntax::Yaml => ("m.yaml", syntax::yaml::format(machine)),
        Syntax::Dsl => ("m.chart", syntax::dsl::format(machine)),
    };
    let file = SourceFile::new(path, text);
    let outcome = fix::fix_file(&file, false, |file, machine| {
        lint_source(machine, file, &Options::default())
    });
    assert!(outcome.reverted.is_empty(), "{:#?}", outcome.reverted);
    let after = SourceFile::new(path, outcome.text);
    (file, after, outcome.fixed)
}

/// How long one lint of a machine may take for the property to use it: the
/// replays of a few random machines in a hundred search their whole budget
/// (60,000 events), which takes a debug build the better part of a minute,
/// and the fixes lint each machine several times. What a fix does to a
/// machine does not depend on how long its lint takes.
const LINT_TIME: Duration = Duration::from_millis(1_500);

/// The machine of `seed`, when it lints within `LINT_TIME`.
fn quick_machine(seed: u64) -> Option<Machine> {
    let machine = machine_with_fixes(seed);
    let started = Instant::now();
    idemchart::lint::lint(&machine);
    (started.elapsed() < LINT_TIME).then_some(machine)
}

#[track_caller]
fn check(seed: u64, machine: Machine, inputs: &[Input]) {
    for syntax in [Syntax::Yaml, Syntax::Dsl] {
        let (before, after, _) = fixed(&machine, syntax);
        let fixed_machine = idemchart::load::load(&after).unwrap_or_else(|errors| {
            panic!(
                "seed {seed}, {syntax:?}: the fixed text does not load:\n{}\n{errors:#?}",
                after.text
            )
        });
        // Nothing safe is left to fix.
        let left: Vec<Diagnostic> = lint_source(&fixed_machine, &after, &Options::default())
            .into_iter()
            .filter(|d| {
                d.fix
                    .as_ref()
                    .is_some_and(|f| f.applicability == Applicability::Safe)
            })
            .collect();
        assert!(
            left.is_empty(),
            "seed {seed}, {syntax:?}: {left:#?}\n{}",
            after.text
        );

        let original = idemchart::load::load(&before).expect("the formatted machine loads");
        // The same low limit as the snapshot properties: livelocking random
        // machines stay cheap, and must behave alike too.
        let chart = |m: Machine| Arc::new(Chart::new(m).with_microstep_limit(500));
        let mut was = Actor::new(chart(original));
        let mut now = Actor::new(chart(fixed_machine));
        assert_eq!(
            observe(&now),
            observe(&was),
            "seed {seed}, {syntax:?}: at the start"
        );
        for (i, input) in inputs.iter().enumerate() {
            let a = apply(&mut was, input);
            let b = apply(&mut now, input);
            assert_eq!(
                b, a,
                "seed {seed}, {syntax:?}: step {i} ({input:?})\n{}",
                after.text
            );
            assert_eq!(
                observe(&now),
                observe(&was),
                "seed {seed}, {syntax:?}: after step {i} ({input:?})"
            );
        }
    }
}

proptest! {
    // Each case lints its machine several times in a debug build; 16 keep
    // the whole suite inside CI's budget (48 took this file to 227 s).
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn safe_fixes_keep_what_a_machine_does(seed in any::<u64>(), inputs in inputs()) {
        let machine = quick_machine(seed);
        prop_assume!(machine.is_some());
        check(seed, machine.unwrap(), &inputs);
    }
}

#[test]
fn the_random_machines_give_the_fixes_work() {
    // Most random machines have something to fix in both syntaxes, so the
    // property above is not vacuous.
    let machines: Vec<Machine> = (0..12).filter_map(quick_machine).collect();
    assert!(machines.len() >= 6, "{} of 12 lint quickly", machines.len());
    let with_fixes = machines
        .iter()
        .filter(|machine| {
            [Syntax::Yaml, Syntax::Dsl]
                .into_iter()
                .all(|syntax| fixed(machine, syntax).2 > 0)
        })
        .count();
    assert!(
        with_fixes * 4 >= machines.len() * 3,
        "{with_fixes} of {}",
        machines.len()
    );
}
