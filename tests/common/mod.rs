//! Random machines for property tests: a seed becomes a valid machine with
//! nesting, parallel regions, history, guards (host guards among them),
//! every kind of action, delayed and eventless transitions.

#![allow(dead_code)]

use idemchart::Machine;
use idemchart::expr::{Event, Value};
use idemchart::interp::Actor;
use idemchart::model::Name;
use idemchart::span::Span;
use idemchart::syntax::tree::{
    ActionDoc, ContextDoc, DedupDoc, EffectDoc, EventDoc, ExprText, HistoryDoc, InvokeDoc,
    LimitsDoc, MachineDoc, MigrationDoc, SourceDoc, StateDoc, TransitionDoc,
};
use proptest::prelude::*;

/// A small deterministic generator (xorshift), so a failing seed reproduces.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn name(text: impl Into<String>) -> Name {
    Name {
        text: text.into(),
        span: Span::default(),
    }
}

fn expr(text: impl Into<String>) -> ExprText {
    ExprText {
        text: text.into(),
        offset: 0,
    }
}

pub const EVENTS: [&str; 4] = ["A", "B", "C", "D"];

/// The ids of the states built, for choosing targets.
struct Built {
    states: Vec<String>,
}

/// A random valid machine document.
pub fn machine_doc(seed: u64) -> MachineDoc {
    let mut rng = Rng::new(seed);
    let mut built = Built { states: Vec::new() };
    let mut root = StateDoc::default();
    let top = 1 + rng.below(4);
    let mut counter = 0;
    for _ in 0..top {
        root.states
            .push(state(&mut rng, &mut built, &mut counter, 0, None, false));
    }
    root.initial = vec![name(root.states[0].key.text.clone())];
    // Host guards draw from a generator of their own, so that the rest of
    // the machine a seed gives stays what it was before they existed (kept
    // regression seeds keep meaning what they meant).
    let mut host = Rng::new(seed ^ 0x6A09_E667_F3BC_C908);
    let guards: Vec<Name> = if host.chance(40) {
        HOST_GUARDS.iter().map(|g| name(*g)).collect()
    } else {
        Vec::new()
    };
    let mut host = (!guards.is_empty()).then_some(host);
    // The profile draws from its own generator too, for the same reason.
    let semantics = Rng::new(seed ^ 0xBB67_AE85_84CA_A73B)
        .chance(50)
        .then(|| name("xstate"));
    // Transitions come after the tree, so every state can be a target.
    add_transitions(&mut rng, &mut host, &built, &mut root);
    // Invocations draw from a generator of their own, like host guards.
    add_invocations(
        &mut Rng::new(seed ^ 0x3C6E_F372_FE94_F82B),
        &built,
        &mut root,
    );
    let mut doc = MachineDoc {
        name: Some(name(format!("m{seed}"))),
        fact_source: Default::default(),
        version: rng
            .chance(50)
            .then_some((1 + rng.below(5) as u64, Span::default())),
        description: rng.chance(30).then(|| "A random machine.".to_string()),
        semantics,
        context: vec![
            ContextDoc {
                name: name("n"),
                value: serde_json::json!(0),
            },
            ContextDoc {
                name: name("seen"),
                value: serde_json::json!([]),
            },
            ContextDoc {
                name: name("label"),
                value: serde_json::json!("x"),
            },
        ],
        sources: vec![SourceDoc {
            name: name("queue"),
            retry_horizon: Some(name("1h")),
            description: None,
        }],
        dedup: Some(DedupDoc {
            retention: Some(name("2h")),
            span: Span::default(),
        }),
        // From the seed, not the generator, so that every other choice
        // stays what it was for the seeds kept as regressions.
        history: seed.is_multiple_of(3).then(|| HistoryDoc {
            keep: Some(name("30d")),
            span: Span::default(),
        }),
        // Budgets large enough that the interpreter's property tests still
        // see these machines settle.
        limits: rng.chance(30).then(|| LimitsDoc {
            microsteps: Some((1_000 + rng.below(200_000) as u64, Span::default())),
            span: Span::default(),
        }),
        events: EVENTS
            .iter()
            .enumerate()
            .map(|(i, e)| EventDoc {
                name: name(*e),
                id_field: Some(name("k")),
                source: (i % 2 == 0).then(|| name("queue")),
                payload: (i == 0)
                    .then(|| vec![(name("k"), name("string")), (name("v"), name("integer"))]),
                description: None,
            })
            .collect(),
        effects: vec![
            EffectDoc {
                name: name("notify"),
                idempotency: Some(name("key")),
                verify: None,
                description: None,
            },
            EffectDoc {
                name: name("charge"),
                idempotency: Some(name("none")),
                verify: None,
                description: None,
            },
        ],
        guards,
        opaque: Vec::new(),
        stand_ins: Default::default(),
        migrations: Vec::new(),
        root,
    };
    doc.migrations = migrations(seed, &doc);
    doc
}

/// Migrations from the versions below the machine's, drawn from a
/// generator of their own (so the rest of a seed's machine stays what it
/// was before migrations existed): old paths made up (the old machine is
/// not known), targets among the top-level states, a context expression,
/// and the settings for timers, history and the outbox.
fn migrations(seed: u64, doc: &MachineDoc) -> Vec<MigrationDoc> {
    let mut rng = Rng::new(seed ^ 0x3C6E_F372_FE94_F82C);
    let Some((version, _)) = doc.version else {
        return Vec::new();
    };
    let targets: Vec<&str> = doc
        .root
        .states
        .iter()
        .filter(|s| s.kind.as_ref().is_none_or(|k| k.text != "history"))
        .map(|s| s.key.text.as_str())
        .collect();
    let carry = |rng: &mut Rng| match rng.below(3) {
        0 => None,
        1 => Some(name("keep")),
        _ => Some(name("drop")),
    };
    let froms: Vec<u64> = (0..version).filter(|_| rng.chance(40)).collect();
    froms
        .into_iter()
        .map(|from| MigrationDoc {
            from: Some((from, Span::default())),
            states: (0..rng.below(3))
                .map(|i| {
                    let to = targets[rng.below(targets.len())];
                    (
                        name(format!("old{i}.s{}", rng.below(9))),
                        name(to.to_string()),
                    )
                })
                .collect(),
            context: rng
                .chance(50)
                .then(|| {
                    (
                        name("n"),
                        ExprText {
                            text: "context.n + 1".into(),
                            offset: 0,
                        },
                    )
                })
                .into_iter()
                .collect(),
            timers: carry(&mut rng),
            history: carry(&mut rng),
            outbox: carry(&mut rng),
            span: Span::default(),
        })
        .collect()
}

/// The host guards a random machine may declare.
pub const HOST_GUARDS: [&str; 2] = ["ok", "ready"];

fn state(
    rng: &mut Rng,
    built: &mut Built,
    counter: &mut usize,
    depth: usize,
    parent: Option<&str>,
    in_parallel: bool,
) -> StateDoc {
    *counter += 1;
    let key = format!("s{counter}");
    let mut doc = StateDoc {
        key: name(key.clone()),
        ..StateDoc::default()
    };
    built.states.push(key.clone());
    doc.id = Some(name(key.clone()));
    let roll = rng.below(10);
    if depth < 3 && roll < 3 {
        let parallel = roll == 0 && !in_parallel;
        if parallel {
            doc.kind = Some(name("parallel"));
        }
        let n = 1 + rng.below(3);
        for _ in 0..n {
            // A parallel state's regions are compound, so each gets a child.
            let mut child = state(rng, built, counter, depth + 1, Some(&key), parallel);
            if parallel && child.states.is_empty() && child.kind.is_none() {
                let leaf = state(
                    rng,
                    built,
                    counter,
                    depth + 2,
                    Some(&child.key.text.clone()),
                    false,
                );
                child.initial = vec![name(leaf.key.text.clone())];
                child.states.push(leaf);
            }
            doc.states.push(child);
        }
        if !parallel {
            doc.initial = vec![name(doc.states[0].key.text.clone())];
            if rng.chance(30) {
                *counter += 1;
                let h = format!("s{counter}");
                built.states.push(h.clone());
                doc.states.push(StateDoc {
                    key: name(h.clone()),
                    id: Some(name(h)),
                    kind: Some(name("history")),
                    history: Some(name(if rng.chance(50) { "deep" } else { "shallow" })),
                    ..StateDoc::default()
                });
            }
        }
    } else if roll == 9 && !in_parallel && parent.is_some() {
        doc.kind = Some(name("final"));
    }
    if rng.chance(40) {
        doc.entry = actions(rng, 2);
    }
    if rng.chance(20) {
        doc.exit = actions(rng, 1);
    }
    if rng.chance(10) {
        doc.tags = vec!["tagged".into()];
    }
    doc
}

fn actions(rng: &mut Rng, most: usize) -> Vec<ActionDoc> {
    (0..rng.below(most + 1)).map(|_| action(rng)).collect()
}

fn action(rng: &mut Rng) -> ActionDoc {
    let span = Span::default();
    match rng.below(8) {
        0 => ActionDoc::Assign {
            fields: vec![(name("n"), expr("context.n + 1"))],
            span,
        },
        1 => ActionDoc::Assign {
            fields: vec![
                (name("seen"), expr("context.seen + [context.n]")),
                (name("label"), expr("\"y\"")),
            ],
            span,
        },
        2 => ActionDoc::Raise {
            event: name(*rng.pick(&EVENTS)),
            data: Vec::new(),
            span,
        },
        3 => ActionDoc::Effect {
            name: name("notify"),
            args: vec![(name("n"), expr("context.n"))],
            span,
        },
        4 => ActionDoc::Named {
            name: name("charge"),
        },
        5 => ActionDoc::Log {
            expr: expr("context.label"),
            span,
        },
        6 => ActionDoc::Send {
            event: name(*rng.pick(&EVENTS)),
            data: Vec::new(),
            delay: rng.chance(50).then(|| name("1s")),
            id: rng.chance(50).then(|| name("t1")),
            span,
        },
        _ => ActionDoc::Cancel {
            id: name("t1"),
            span,
        },
    }
}

fn add_transitions(rng: &mut Rng, host: &mut Option<Rng>, built: &Built, root: &mut StateDoc) {
    let targets: Vec<String> = built.states.iter().map(|id| format!("#{id}")).collect();
    visit(root, &mut |state| {
        if state
            .kind
            .as_ref()
            .is_some_and(|k| k.text == "history" || k.text == "final")
        {
            return;
        }
        for _ in 0..rng.below(3) {
            let mut t = TransitionDoc {
                event: Some(name(match rng.below(6) {
                    0 => "*".to_string(),
                    1 => "A B".to_string(),
                    _ => rng.pick(&EVENTS).to_string(),
                })),
                ..TransitionDoc::default()
            };
            if rng.chance(80) {
                t.targets = vec![name(rng.pick(&targets).clone())];
                t.reenter = rng.chance(20);
            }
            if rng.chance(30) {
                t.guard = Some(expr(*rng.pick(&[
                    "context.n < 5",
                    "!(context.n in context.seen)",
                    "size(context.seen) < 3",
                ])));
                if let Some(host) = host.as_mut()
                    && host.chance(50)
                {
                    t.guard = Some(expr(*host.pick(&[
                        "ok",
                        "ok && context.n < 5",
                        "!ready || size(context.seen) < 3",
                    ])));
                }
            }
            t.actions = actions(rng, 2);
            state.on.push(t);
        }
        if rng.chance(10) {
            // Eventless transitions always carry a guard that their own action makes false.
            state.always.push(TransitionDoc {
                guard: Some(expr("context.n < 2")),
                actions: vec![ActionDoc::Assign {
                    fields: vec![(name("n"), expr("context.n + 1"))],
                    span: Span::default(),
                }],
                ..TransitionDoc::default()
            });
        }
        if rng.chance(15) {
            state.after.push(TransitionDoc {
                delay: Some(name(*rng.pick(&["500ms", "2s", "1m"]))),
                targets: vec![name(rng.pick(&targets).clone())],
                ..TransitionDoc::default()
            });
        }
    });
}

/// The services a random machine invokes: a keyed effect, an effect
/// without idempotency, and a host service.
pub const SERVICES: [&str; 3] = ["notify", "charge", "lookup"];

fn add_invocations(rng: &mut Rng, built: &Built, root: &mut StateDoc) {
    let targets: Vec<String> = built.states.iter().map(|id| format!("#{id}")).collect();
    visit(root, &mut |state| {
        if state.kind.as_ref().is_some_and(|k| k.text == "history") || !rng.chance(25) {
            return;
        }
        let is_final = state.kind.as_ref().is_some_and(|k| k.text == "final");
        for i in 0..1 + rng.below(2) {
            let src = *rng.pick(&SERVICES);
            let mut invoke = InvokeDoc {
                src: Some(name(src)),
                id: (i > 0 || rng.chance(50)).then(|| name(format!("{src}{i}"))),
                ..InvokeDoc::default()
            };
            if rng.chance(50) {
                invoke.input = vec![(name("n"), expr("context.n"))];
            }
            if !is_final && rng.chance(80) {
                invoke.on_done.push(TransitionDoc {
                    targets: rng
                        .chance(70)
                        .then(|| name(rng.pick(&targets).clone()))
                        .into_iter()
                        .collect(),
                    actions: actions(rng, 1),
                    ..TransitionDoc::default()
                });
            }
            if !is_final && rng.chance(50) {
                invoke.on_error.push(TransitionDoc {
                    targets: vec![name(rng.pick(&targets).clone())],
                    ..TransitionDoc::default()
                });
            }
            state.invoke.push(invoke);
        }
    });
}

fn visit(state: &mut StateDoc, f: &mut impl FnMut(&mut StateDoc)) {
    f(state);
    for child in &mut state.states {
        visit(child, f);
    }
}

/// A random valid machine.
pub fn machine(seed: u64) -> Machine {
    idemchart::syntax::lower(machine_doc(seed))
        .unwrap_or_else(|errors| panic!("seed {seed}: {errors:#?}"))
}

// Inputs for the property tests that run random machines.

/// One input: an event (by index into `EVENTS`, with a payload key) or
/// a clock advance in milliseconds.
#[derive(Clone, Debug)]
pub enum Input {
    Send(usize, u8),
    Advance(u64),
    /// Answers an invocation in flight (by index, modulo how many there
    /// are), done when even, failed when odd; with no invocation in
    /// flight, the answer of one that never started.
    Complete(u8),
}

pub fn inputs() -> impl Strategy<Value = Vec<Input>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..EVENTS.len(), any::<u8>()).prop_map(|(e, k)| Input::Send(e, k % 4)),
            1 => prop_oneof![Just(400u64), Just(1_000), Just(70_000)].prop_map(Input::Advance),
            1 => any::<u8>().prop_map(Input::Complete),
        ],
        0..24,
    )
}

pub fn apply(actor: &mut Actor, input: &Input) -> String {
    let step = match input {
        Input::Send(e, k) => {
            let key = Value::from(format!("k{k}"));
            let data = Value::map([("k", key.clone()), ("v", Value::Int(*k as i64))]);
            actor.send(&Event::new(EVENTS[*e], Some(key), data)).clone()
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
pub fn observe(actor: &Actor) -> String {
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
