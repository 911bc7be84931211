//! The interpreter's fast paths against its general ones.
//!
//! Where a step can be taken faster than the SCXML algorithm spells it out
//! (a domain known from the chart, exit sets compared as ranges of ids, a
//! microstep of targetless transitions only, an event name compared as one
//! exact string), the actor can be told to take the general path instead.
//! Here two actors of each machine, one on each path, get the same random
//! events and clock moves, and must agree on every step, configuration and
//! snapshot (one of the two at times a copy of its state alone,
//! `Actor::clone_state`). The machines are every SCXML test of the conformance suite and
//! every machine file in the repository, which between them have parallel
//! regions with conflicting transitions, history, eventless, internal and
//! delayed transitions, and raised and sent events.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Actor, Chart};
use crate::Machine;
use crate::expr::{Event, Value};
use crate::model::{EventPattern, PayloadType, Trigger};
use crate::span::SourceFile;

fn files(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, extension, found);
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
}

/// Every machine the repository holds that loads.
fn machines() -> Vec<(String, Machine)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files(&root.join("tests/data/scion"), "scxml", &mut paths);
    for dir in ["tests/data", "machines", "bench/machines"] {
        files(&root.join(dir), "yaml", &mut paths);
        files(&root.join(dir), "chart", &mut paths);
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let machine = if path.extension().is_some_and(|e| e == "scxml") {
                crate::import::load_scxml(&text).ok()?
            } else {
                crate::load::load(&SourceFile::new(path.display().to_string(), text)).ok()?
            };
            Some((path.display().to_string(), machine))
        })
        .collect()
}

/// A small deterministic generator (xorshift), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Events the machine reacts to, each with a payload of its declared fields
/// where it declares them, and one event it ignores.
fn events(machine: &Machine, rng: &mut Rng) -> Vec<Event> {
    let mut names: Vec<String> = vec!["UNHANDLED".into()];
    for transition in &machine.transitions {
        if let Trigger::Event(descriptor) = &transition.trigger {
            for pattern in &descriptor.patterns {
                match pattern {
                    EventPattern::Exact(name) => names.push(name.clone()),
                    EventPattern::Prefix(prefix) => {
                        names.push(prefix.clone());
                        names.push(format!("{prefix}.more"));
                    }
                    EventPattern::Any => names.push("ANY".into()),
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .flat_map(|name| {
            let payload = machine
                .events
                .get(&name)
                .and_then(|decl| decl.payload.as_ref());
            // A few variants of each event, so that guards on ids see both
            // new and repeated values.
            (0..3)
                .map(|_| {
                    let data = match payload {
                        Some(fields) => Value::map(fields.iter().map(|(field, f)| {
                            let n = rng.below(4) as i64;
                            let value = match f.ty {
                                PayloadType::String => Value::from(format!("v{n}")),
                                PayloadType::Number | PayloadType::Integer => Value::Int(n),
                                PayloadType::Boolean => Value::Bool(n % 2 == 0),
                                PayloadType::List => Value::list(vec![Value::Int(n)]),
                                PayloadType::Map | PayloadType::Any => Value::Null,
                            };
                            (field.as_str(), value)
                        })),
                        None => Value::Null,
                    };
                    Event::new(name.as_str(), None, data)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn assert_same(fast: &Actor, general: &Actor, what: &str) {
    assert_eq!(
        fast.last_step(),
        general.last_step(),
        "{what}: steps differ"
    );
    assert_eq!(
        fast.configuration_paths(),
        general.configuration_paths(),
        "{what}"
    );
    assert_eq!(
        fast.snapshot(),
        general.snapshot(),
        "{what}: snapshots differ"
    );
}

#[test]
fn fast_paths_take_the_steps_the_general_paths_take() {
    let steps = compare_paths(1000);
    assert!(steps > 20_000);
}

/// The fast paths skip loops that would find nothing to do, but only when
/// the microstep budget has room for those loops' checks: with a budget of
/// one to three microsteps, the error the loops raise when it runs out must
/// be the same on both paths.
#[test]
fn fast_paths_spend_the_budget_as_the_general_paths_do() {
    for limit in 1..=3 {
        compare_paths(limit);
    }
}

/// Runs every machine on both paths with `limit` microsteps per call and
/// compares them after each call; returns the number of calls compared.
fn compare_paths(limit: usize) -> usize {
    let machines = machines();
    assert!(
        machines.len() > 150,
        "only {} machines loaded",
        machines.len()
    );
    let mut steps = 0;
    for (index, (name, machine)) in machines.into_iter().enumerate() {
        let chart = Arc::new(Chart::new(machine).with_microstep_limit(limit));
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1));
        let events = events(chart.machine(), &mut rng);
        for round in 0..3 {
            let mut fast = Actor::new(Arc::clone(&chart));
            let context = chart.machine().context.values();
            let context = context.map(|f| Value::from(&f.value)).collect();
            let mut general = Actor::idle(Arc::clone(&chart), context, 0);
            general.core.general = true;
            general.start();
            assert_same(&fast, &general, &format!("{name}: start"));
            for i in 0..40 {
                let what = if rng.below(8) == 0 {
                    let to = match fast.next_due() {
                        Some(due) if rng.below(2) == 0 => due,
                        _ => fast.now() + rng.below(2000) as u64,
                    };
                    fast.advance_to(to);
                    general.advance_to(to);
                    format!("advance to {to}")
                } else {
                    let event = &events[rng.below(events.len())];
                    fast.send(event);
                    general.send(event);
                    assert_eq!(fast.last_step().event.as_ref(), Some(&event.name));
                    format!("event {}", event.name)
                };
                assert_same(
                    &fast,
                    &general,
                    &format!("{name}: round {round}, step {i}: {what}"),
                );
                steps += 1;
                // Now and then the fast actor goes on as a copy of its
                // state alone, as the linter's replay keeps them: it must
                // take the same steps from there.
                if rng.below(4) == 0 {
                    fast = fast.clone_state();
                }
            }
        }
    }
    steps
}

#[test]
fn the_general_path_is_taken_when_asked() {
    // The two paths must really differ in what they run, or the comparison
    // above would compare a path with itself: a transition from the only
    // branch of the configuration exits along it on the fast path, which
    // builds no exit set, and a targetless one runs its actions alone.
    let machine = crate::syntax::parse(
        "machine: m\ncontext: { n: 0 }\ninitial: a\nstates:\n  a:\n    on:\n      T: { actions: [ { assign: { n: \"context.n + 1\" } } ] }\n      GO: b\n  b: { on: { BACK: a } }\n",
        crate::syntax::Syntax::Yaml,
    )
    .unwrap();
    let chart = Arc::new(Chart::new(machine));
    let mut fast = Actor::new(Arc::clone(&chart));
    let mut general = Actor::new(Arc::clone(&chart));
    general.core.general = true;
    for actor in [&mut fast, &mut general] {
        for name in ["GO", "BACK"] {
            actor.send(&Event::named(name));
        }
    }
    // BACK exited `b`: only the general path went through the exit set.
    assert!(fast.core.exit_set.is_empty());
    assert!(!general.core.exit_set.is_empty());
    for actor in [&mut fast, &mut general] {
        actor.send(&Event::named("T"));
    }
    assert_same(&fast, &general, "GO, BACK, T");
    assert_eq!(fast.context_value("n"), Some(&Value::Int(1)));
    // T exited nothing: only the general path cleared the set again.
    assert!(general.core.exit_set.is_empty());
}

/// A snapshot can name two atomic states of a machine without parallel
/// regions (nothing checks that it cannot); the fast path must then select
/// as the general one does, for both states, rather than stop at the first.
#[test]
fn a_restored_configuration_with_two_leaves_selects_as_the_general_path() {
    let machine = crate::syntax::parse(
        "machine: m\ncontext: { n: 0 }\ninitial: a\nstates:\n  a:\n    on:\n      T: { actions: [ { assign: { n: \"context.n + 1\" } } ] }\n  b:\n    on:\n      T: { actions: [ { assign: { n: \"context.n + 10\" } } ] }\n      U: a\n",
        crate::syntax::Syntax::Yaml,
    )
    .unwrap();
    let chart = Arc::new(Chart::new(machine));
    let mut snapshot = Actor::new(Arc::clone(&chart)).snapshot();
    snapshot.configuration = vec!["a".into(), "b".into()];
    let mut fast = Actor::restore(Arc::clone(&chart), &snapshot).unwrap();
    let mut general = Actor::restore(Arc::clone(&chart), &snapshot).unwrap();
    general.core.general = true;
    for name in ["T", "U", "T"] {
        fast.send(&Event::named(name));
        general.send(&Event::named(name));
        assert_same(&fast, &general, name);
    }
}
