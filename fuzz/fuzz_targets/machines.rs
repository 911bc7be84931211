//! The whole pipeline on structured input: an `arbitrary`-generated machine
//! (nesting, parallel regions, history, guards, assigns, raises, timers,
//! invocations, declared events with ids) is written as YAML, loaded, printed
//! in both syntaxes and loaded again (the same model), linted, run on
//! generated events, timer advances and invocation answers, snapshotted and
//! restored (the same snapshot both ways), and applied durably on an
//! in-memory SQLite store where every event is delivered twice: the second
//! delivery is a duplicate with the first answer's bytes.
#![no_main]

use std::fmt::Write;
use std::sync::Arc;

use arbitrary::Arbitrary;
use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, Snapshot};
use idemchart::runtime::{self, Outcome};
use idemchart::store::SqliteStore;
use idemchart::Machine;
use idemchart::syntax::{self, Syntax, parse};
use libfuzzer_sys::fuzz_target;

const EVENTS: [&str; 4] = ["A", "B", "C", "D"];

#[derive(Arbitrary, Debug)]
struct Spec {
    states: Vec<StateSpec>,
    inputs: Vec<Input>,
}

#[derive(Arbitrary, Debug)]
struct StateSpec {
    /// Index of the parent among the states before this one; `None` (or an
    /// index past them) puts it at the top level.
    parent: Option<u8>,
    kind: Kind,
    entry: Vec<Action>,
    on: Vec<Transition>,
    after: Option<(u16, u8)>,
    invoke: Option<u8>,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum Kind {
    Atomic,
    Parallel,
    Final,
    History { deep: bool },
}

#[derive(Arbitrary, Debug)]
struct Transition {
    event: u8,
    target: Option<u8>,
    guard: Option<Guard>,
    actions: Vec<Action>,
}

#[derive(Arbitrary, Debug)]
enum Guard {
    CountBelow(u8),
    SeenKey,
    PayloadAbove(u8),
}

#[derive(Arbitrary, Debug)]
enum Action {
    Count,
    Remember,
    Raise(u8),
    Effect,
}

#[derive(Arbitrary, Debug)]
enum Input {
    Send { event: u8, key: u8 },
    Advance(u16),
    Complete { done: bool },
}

/// The machine as YAML, with state `i` named `s{i}`.
fn yaml(spec: &Spec) -> String {
    let states = &spec.states[..spec.states.len().min(24)];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); states.len() + 1];
    for (i, state) in states.iter().enumerate() {
        let parent = match state.parent {
            Some(p) if (p as usize) < i && states[p as usize].kind == Kind::Atomic => p as usize + 1,
            Some(p) if (p as usize) < i && states[p as usize].kind == Kind::Parallel => {
                p as usize + 1
            }
            _ => 0,
        };
        children[parent].push(i);
    }
    // Only a state with children may be parallel; history needs a compound
    // parent, and a top-level initial state must not be a pseudo-state.
    // At most 1,000 microsteps a call, as the linter's replays take: with
    // the default 100,000, one input whose loop appends to `seen` took
    // longer than the timeout under AddressSanitizer.
    let mut out = String::from(
        "machine: fuzzed\nlimits: { microsteps: 1000 }\ncontext: { n: 0, seen: [] }\nevents:\n",
    );
    for name in EVENTS {
        let _ = writeln!(out, "  {name}: {{ id: k, payload: {{ k: string, v: integer }} }}");
    }
    out += "effects:\n  notify: { idempotency: key }\n  charge: { idempotency: key }\n";
    // Every state that is written: all but the top-level history states.
    let targets: Vec<usize> = (0..states.len())
        .filter(|&i| !(matches!(states[i].kind, Kind::History { .. }) && children[0].contains(&i)))
        .collect();
    let layout = Layout {
        states,
        children: &children,
        targets: &targets,
    };
    write_states(&mut out, &layout, 0, 0);
    out
}

/// The tree of the states to write, and the states a transition may target.
struct Layout<'a> {
    states: &'a [StateSpec],
    children: &'a [Vec<usize>],
    targets: &'a [usize],
}

impl Layout<'_> {
    fn target(&self, pick: u8) -> usize {
        self.targets[pick as usize % self.targets.len()]
    }
}

fn write_states(out: &mut String, layout: &Layout<'_>, node: usize, depth: usize) {
    let (states, children) = (layout.states, layout.children);
    let kids: Vec<usize> = children[node]
        .iter()
        .copied()
        .filter(|&i| {
            // History and final states only where they mean something.
            !matches!(states[i].kind, Kind::History { .. }) || node != 0
        })
        .collect();
    let pad = "  ".repeat(depth);
    let Some(first) = kids
        .iter()
        .copied()
        .find(|&i| !matches!(states[i].kind, Kind::History { .. }))
    else {
        return;
    };
    let parallel_parent = node > 0 && states[node - 1].kind == Kind::Parallel;
    if !parallel_parent {
        let _ = writeln!(out, "{pad}initial: s{first}");
    }
    let _ = writeln!(out, "{pad}states:");
    for i in kids {
        let state = &states[i];
        let inner = "  ".repeat(depth + 2);
        let _ = writeln!(out, "{pad}  s{i}:");
        let has_children = children[i + 1]
            .iter()
            .any(|&c| !matches!(states[c].kind, Kind::History { .. }));
        match state.kind {
            Kind::History { deep } => {
                let kind = if deep { "deep" } else { "shallow" };
                let _ = writeln!(out, "{inner}type: history\n{inner}history: {kind}");
                continue;
            }
            Kind::Final if !has_children && !parallel_parent => {
                let _ = writeln!(out, "{inner}type: final");
                continue;
            }
            Kind::Parallel if has_children => {
                let _ = writeln!(out, "{inner}type: parallel");
            }
            _ => {}
        }
        if !state.entry.is_empty() {
            let _ = writeln!(out, "{inner}entry:");
            for action in state.entry.iter().take(3) {
                let _ = writeln!(out, "{inner}  - {}", action_text(action, false));
            }
        }
        if let Some(src) = state.invoke {
            let src = if src % 2 == 0 { "charge" } else { "notify" };
            let target = layout.target(state.on.first().and_then(|t| t.target).unwrap_or(0));
            let _ = writeln!(
                out,
                "{inner}invoke: {{ src: {src}, id: call{i}, onDone: s{target}, onError: {{ actions: [ {{ assign: {{ n: \"context.n + 1\" }} }} ] }} }}"
            );
        }
        if let Some((ms, target)) = state.after {
            let target = layout.target(target);
            let _ = writeln!(out, "{inner}after:\n{inner}  {}ms: s{target}", ms % 5_000);
        }
        if !state.on.is_empty() {
            let _ = writeln!(out, "{inner}on:");
            let mut by_event: Vec<Vec<&Transition>> = vec![Vec::new(); EVENTS.len()];
            for t in state.on.iter().take(6) {
                by_event[t.event as usize % EVENTS.len()].push(t);
            }
            for (e, transitions) in by_event.iter().enumerate() {
                if transitions.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "{inner}  {}:", EVENTS[e]);
                for t in transitions {
                    let _ = write!(out, "{inner}    - {{");
                    if let Some(target) = t.target {
                        let _ = write!(out, " target: s{},", layout.target(target));
                    }
                    match &t.guard {
                        Some(Guard::CountBelow(n)) => {
                            let _ = write!(out, " guard: \"context.n < {}\",", n % 8);
                        }
                        Some(Guard::SeenKey) => {
                            let _ = write!(out, " guard: \"!(event.k in context.seen)\",");
                        }
                        Some(Guard::PayloadAbove(n)) => {
                            let _ = write!(out, " guard: \"event.v > {}\",", n % 4);
                        }
                        None => {}
                    }
                    let _ = write!(out, " actions: [");
                    for action in t.actions.iter().take(3) {
                        write_inline_action(out, action);
                    }
                    let _ = writeln!(out, "] }}");
                }
            }
        }
        write_states(out, layout, i + 1, depth + 2);
    }
}

fn action_text(action: &Action, event: bool) -> String {
    match action {
        Action::Count => "{ assign: { n: \"context.n + 1\" } }".into(),
        Action::Remember if event => "{ assign: { seen: \"context.seen + [event.k]\" } }".into(),
        Action::Remember => "{ assign: { seen: \"context.seen + ['entry']\" } }".into(),
        Action::Raise(e) => format!("{{ raise: {} }}", EVENTS[*e as usize % EVENTS.len()]),
        Action::Effect => "{ effect: notify, with: { n: \"context.n\" } }".into(),
    }
}

fn write_inline_action(out: &mut String, action: &Action) {
    let _ = write!(out, " {},", action_text(action, true));
}

fn event(index: u8, key: u8) -> Event {
    let key = format!("k{}", key % 6);
    let data = Value::map([
        ("k", Value::from(key.as_str())),
        ("v", Value::Int(i64::from(key.len() as u8 + index % 3))),
    ]);
    Event::new(EVENTS[index as usize % EVENTS.len()], Some(Value::from(key.as_str())), data)
}

fuzz_target!(|spec: Spec| {
    if spec.states.is_empty() {
        return;
    }
    let text = yaml(&spec);
    // The generator may write what the format refuses (a target that is a
    // history state of another region, say): a load error, not a finding.
    let Ok(machine) = parse(&text, Syntax::Yaml) else {
        return;
    };
    let print = |machine: &Machine, syntax| match syntax {
        Syntax::Dsl => syntax::dsl::format(machine),
        _ => syntax::yaml::format(machine),
    };
    for syntax in [Syntax::Yaml, Syntax::Dsl] {
        let printed = print(&machine, syntax);
        let again = parse(&printed, syntax)
            .unwrap_or_else(|e| panic!("{syntax:?} print does not load:\n{printed}\n{e:?}"));
        assert_eq!(
            print(&again, Syntax::Yaml),
            print(&machine, Syntax::Yaml),
            "{syntax:?} round trip of\n{text}"
        );
    }
    let _ = idemchart::lint::lint(&machine);

    let chart = Arc::new(Chart::new(machine));
    let mut actor = Actor::new(Arc::clone(&chart));
    let mut sent = Vec::new();
    for input in spec.inputs.iter().take(16) {
        match input {
            Input::Send { event: e, key } => {
                let event = event(*e, *key);
                actor.send(&event);
                sent.push(event);
            }
            Input::Advance(ms) => {
                let to = actor.now() + u64::from(*ms);
                actor.advance_to(to);
            }
            Input::Complete { done } => {
                let Some(id) = actor.invocations().next().map(|i| i.id.to_string()) else {
                    continue;
                };
                let (name, data) = if *done {
                    (format!("xstate.done.actor.{id}"), Value::map([("output", Value::Int(1))]))
                } else {
                    (format!("xstate.error.actor.{id}"), Value::map([("error", Value::from("no"))]))
                };
                actor.send(&Event::new(name, None, data));
            }
        }
        let snapshot = actor.snapshot();
        let json = actor.snapshot_json();
        assert_eq!(json, serde_json::to_string(&snapshot).unwrap());
        let restored = Actor::restore_json(Arc::clone(&chart), &json)
            .unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(restored.snapshot(), snapshot);
        let parsed: Snapshot = serde_json::from_str(&json).unwrap();
        let by_serde = Actor::restore(Arc::clone(&chart), &parsed).unwrap();
        assert_eq!(by_serde.snapshot(), snapshot);
    }

    // Durably, every event twice: the second is a duplicate with the same
    // bytes (or both are the same error, and nothing was written).
    let mut store = SqliteStore::in_memory().unwrap();
    for (i, event) in sent.iter().enumerate() {
        let now = 1_700_000_000_000 + i as u64;
        let first = runtime::apply_at(&mut store, &chart, "p", event, now);
        let second = runtime::apply_at(&mut store, &chart, "p", event, now);
        match (first, second) {
            (Ok(first), Ok(second)) => {
                if let Outcome::Applied { response, .. } | Outcome::Ignored { response, .. } = &first {
                    assert_eq!(second.response(), Some(response.as_str()), "{text}");
                    assert_eq!(second.kind(), "duplicate");
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("first {a:?}, then {b:?}\n{text}"),
        }
    }
});
