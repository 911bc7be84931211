//! Interpreter behaviour that a differential test against XState v5 showed
//! wrong under our own (SCXML) semantics, each pinned by its minimal machine
//! (issue 18). Every entry and exit action logs, so that a test sees which
//! states a step left and entered, and in what order.

use std::sync::Arc;

use super::{Actor, Chart};
use crate::expr::{Event, Value};
use crate::syntax::{Syntax, parse};

/// Runs `body` on a new actor of the machine twice: on the fast paths, and
/// on the general ones, which must take the same steps.
fn both(yaml: &str, body: impl Fn(&mut Actor)) {
    let machine = parse(yaml, Syntax::Yaml).unwrap_or_else(|e| panic!("{e:?}"));
    let chart = Arc::new(Chart::new(machine));
    for general in [false, true] {
        let mut actor = Actor::new(Arc::clone(&chart));
        actor.core.general = general;
        body(&mut actor);
    }
}

/// Sends `name` and returns the step's log lines.
fn send(actor: &mut Actor, name: &str) -> Vec<String> {
    let step = actor.send(&Event::named(name));
    assert!(step.errors.is_empty(), "{:?}", step.errors);
    logs(&step.logs)
}

fn logs(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| v.as_str().expect("a string log").to_string())
        .collect()
}

/// Bug 1: a transition between the regions of a parallel root leaves no
/// region inactive. The least common compound ancestor of two regions of the
/// root is outside the machine, so SCXML exits the root and re-enters it,
/// with every region.
#[test]
fn a_parallel_root_keeps_every_region() {
    both(
        "machine: m\n\
         type: parallel\n\
         entry: [ { log: '\"en:root\"' } ]\n\
         exit: [ { log: '\"ex:root\"' } ]\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n  \
           b:\n    \
             entry: [ { log: '\"en:b\"' } ]\n    \
             exit: [ { log: '\"ex:b\"' } ]\n    \
             on: { A: a }\n",
        |actor| {
            assert_eq!(actor.configuration_paths(), ["a", "b"]);
            let log = send(actor, "A");
            assert_eq!(actor.configuration_paths(), ["a", "b"]);
            assert_eq!(log, ["ex:b", "ex:a", "ex:root", "en:root", "en:a", "en:b"]);
        },
    );
}

/// Bug 2: when the machine reaches a final child of the root, the active
/// states' exit actions run, deepest first, as SCXML's exitInterpreter
/// and XState do; the configuration still shows where the machine ended.
#[test]
fn completion_runs_the_exit_actions() {
    both(
        "machine: m\n\
         exit: [ { log: '\"ex:root\"' } ]\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             exit: [ { log: '\"ex:a\"' } ]\n    \
             on: { GO: b }\n  \
           b:\n    \
             type: final\n    \
             entry: [ { log: '\"en:b\"' } ]\n    \
             exit: [ { log: '\"ex:b\"' } ]\n",
        |actor| {
            let log = send(actor, "GO");
            assert_eq!(log, ["ex:a", "en:b", "ex:b", "ex:root"]);
            assert_eq!(actor.status(), super::Status::Done);
            assert_eq!(actor.configuration_paths(), ["b"]);
            assert!(actor.send(&Event::named("GO")).ignored);
        },
    );
}

/// Bug 2, when the last region of a parallel root completes: the machine
/// is done and every active state exits.
#[test]
fn completion_of_a_parallel_root_runs_the_exit_actions() {
    both(
        "machine: m\n\
         type: parallel\n\
         states:\n  \
           p:\n    \
             initial: p1\n    \
             exit: [ { log: '\"ex:p\"' } ]\n    \
             states:\n      \
               p1: { type: final, exit: [ { log: '\"ex:p1\"' } ] }\n  \
           q:\n    \
             initial: q1\n    \
             exit: [ { log: '\"ex:q\"' } ]\n    \
             states:\n      \
               q1: { on: { GO: q2 } }\n      \
               q2: { type: final, exit: [ { log: '\"ex:q2\"' } ] }\n",
        |actor| {
            let log = send(actor, "GO");
            assert_eq!(actor.status(), super::Status::Done);
            assert_eq!(log, ["ex:q2", "ex:q", "ex:p1", "ex:p"]);
        },
    );
}

/// Bug 3: `target: <source>` without `reenter` on a compound state keeps
/// the state (our `reenter` contract, as XState v5) and resets its
/// children to their default entry.
#[test]
fn a_compound_self_target_resets_its_children() {
    both(
        "machine: m\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             initial: b\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n    \
             on:\n      \
               R: { target: a, actions: [ { log: '\"t:R\"' } ] }\n    \
             states:\n      \
               b:\n        \
                 entry: [ { log: '\"en:b\"' } ]\n        \
                 on: { N: c }\n      \
               c:\n        \
                 exit: [ { log: '\"ex:c\"' } ]\n",
        |actor| {
            send(actor, "N");
            assert_eq!(actor.configuration_paths(), ["a.c"]);
            let log = send(actor, "R");
            assert_eq!(actor.configuration_paths(), ["a.b"]);
            assert_eq!(log, ["ex:c", "t:R", "en:b"]);
        },
    );
}

/// Bug 3's atomic case is unchanged: an atomic self-target without
/// `reenter` runs its actions and leaves nothing.
#[test]
fn an_atomic_self_target_runs_only_its_actions() {
    both(
        "machine: m\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n    \
             on: { R: { target: a, actions: [ { log: '\"t:R\"' } ] } }\n",
        |actor| {
            assert_eq!(send(actor, "R"), ["t:R"]);
        },
    );
}

/// Bug 4: `reenter: false` keeps a parallel source whose targets lie inside
/// it; its regions are exited and entered again, every one of them.
#[test]
fn a_parallel_source_without_reenter_is_kept() {
    both(
        "machine: m\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             type: parallel\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n    \
             on: { B: .b }\n    \
             states:\n      \
               b:\n        \
                 initial: b1\n        \
                 exit: [ { log: '\"ex:b\"' } ]\n        \
                 entry: [ { log: '\"en:b\"' } ]\n        \
                 states:\n          \
                   b1: { on: { N: b2 } }\n          \
                   b2: {}\n      \
               c:\n        \
                 entry: [ { log: '\"en:c\"' } ]\n        \
                 exit: [ { log: '\"ex:c\"' } ]\n",
        |actor| {
            send(actor, "N");
            assert_eq!(actor.configuration_paths(), ["a.b.b2", "a.c"]);
            let log = send(actor, "B");
            assert_eq!(actor.configuration_paths(), ["a.b.b1", "a.c"]);
            assert_eq!(log, ["ex:c", "ex:b", "en:b", "en:c"]);
        },
    );
}

/// Bug 5: `reenter: true` on a handler of the root exits and re-enters the
/// root itself, running its exit and entry actions.
#[test]
fn reenter_on_the_root_reenters_it() {
    both(
        "machine: m\n\
         initial: a\n\
         entry: [ { log: '\"en:root\"' } ]\n\
         exit: [ { log: '\"ex:root\"' } ]\n\
         on: { B: { target: .a, reenter: true } }\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             on: { N: b }\n  \
           b:\n    \
             exit: [ { log: '\"ex:b\"' } ]\n",
        |actor| {
            send(actor, "N");
            let log = send(actor, "B");
            assert_eq!(actor.configuration_paths(), ["a"]);
            assert_eq!(log, ["ex:b", "ex:root", "en:root", "en:a"]);
        },
    );
}

// The differences between SCXML and XState v5 (docs/semantics.md): each
// machine runs under both profiles, which must differ as documented.

/// Runs `body` with the machine under `semantics: scxml` and under
/// `semantics: xstate`, on the fast and the general paths.
fn under(profile: &str, yaml: &str, body: impl Fn(&mut Actor)) {
    both(&format!("semantics: {profile}\n{yaml}"), body);
}

/// The transition domain: XState keeps a parallel least common ancestor.
#[test]
fn xstate_keeps_a_parallel_domain() {
    let yaml = "machine: m\n\
         type: parallel\n\
         entry: [ { log: '\"en:root\"' } ]\n\
         exit: [ { log: '\"ex:root\"' } ]\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n  \
           b:\n    \
             entry: [ { log: '\"en:b\"' } ]\n    \
             exit: [ { log: '\"ex:b\"' } ]\n    \
             on: { A: a }\n";
    under("xstate", yaml, |actor| {
        let log = send(actor, "A");
        assert_eq!(actor.configuration_paths(), ["a", "b"]);
        assert_eq!(log, ["ex:b", "ex:a", "en:a", "en:b"]);
    });
    under("scxml", yaml, |actor| {
        assert_eq!(send(actor, "A").len(), 6, "the root is left too");
    });
}

/// Selection inside a parallel state: XState looks at the parallel state's
/// own transitions only when no region handles the event.
#[test]
fn xstate_asks_the_ancestors_only_when_no_region_handles_the_event() {
    let yaml = "machine: m\n\
         initial: p\n\
         states:\n  \
           p:\n    \
             type: parallel\n    \
             on: { E: { actions: [ { log: '\"p\"' } ] } }\n    \
             states:\n      \
               x:\n        \
                 initial: x1\n        \
                 states:\n          \
                   x1: { on: { E: { target: x2, actions: [ { log: '\"x\"' } ] } } }\n          \
                   x2: {}\n      \
               y:\n        \
                 initial: y1\n        \
                 states:\n          \
                   y1: {}\n";
    under("xstate", yaml, |actor| {
        assert_eq!(send(actor, "E"), ["x"]);
        assert_eq!(send(actor, "E"), ["p"], "no region handles it now");
    });
    under("scxml", yaml, |actor| {
        assert_eq!(send(actor, "E"), ["x", "p"], "p handles it for y");
    });
}

/// Completion: XState completes a parallel state whose last region to
/// finish is itself parallel; SCXML raises `done.state` only for the final's
/// parent and a parallel grandparent.
#[test]
fn xstate_completes_nested_parallel_states() {
    let yaml = "machine: m\n\
         initial: p\n\
         states:\n  \
           p:\n    \
             type: parallel\n    \
             on: { done.state.p: fin }\n    \
             states:\n      \
               q:\n        \
                 type: parallel\n        \
                 states:\n          \
                   q1: { initial: a, states: { a: { type: final } } }\n          \
                   q2: { initial: b, states: { b: { on: { F: c } }, c: { type: final } } }\n      \
               r: { initial: r1, states: { r1: { type: final } } }\n  \
           fin: {}\n";
    under("xstate", yaml, |actor| {
        send(actor, "F");
        assert_eq!(actor.configuration_paths(), ["fin"]);
    });
    under("scxml", yaml, |actor| {
        send(actor, "F");
        assert_eq!(
            actor.configuration_paths(),
            ["p.q.q1.a", "p.q.q2.c", "p.r.r1"]
        );
    });
}

/// A target that is an ancestor's history state restoring the source
/// itself: XState enters the source again without exiting it.
#[test]
fn xstate_reenters_a_source_its_history_restores_without_exiting_it() {
    let yaml = "machine: m\n\
         initial: p\n\
         states:\n  \
           p:\n    \
             initial: a\n    \
             on: { O: out }\n    \
             states:\n      \
               a: { on: { N: b } }\n      \
               b:\n        \
                 entry: [ { log: '\"en:b\"' } ]\n        \
                 exit: [ { log: '\"ex:b\"' } ]\n        \
                 on: { H: h }\n      \
               h: { type: history }\n  \
           out: { on: { BACK: p.h } }\n";
    let setup = |actor: &mut Actor| {
        send(actor, "N");
        send(actor, "O");
        send(actor, "BACK");
        assert_eq!(actor.configuration_paths(), ["p.b"]);
    };
    under("xstate", yaml, |actor| {
        setup(actor);
        assert_eq!(send(actor, "H"), ["en:b"]);
        assert_eq!(actor.configuration_paths(), ["p.b"]);
    });
    under("scxml", yaml, |actor| {
        setup(actor);
        assert_eq!(send(actor, "H"), ["ex:b", "en:b"]);
    });
}

/// The order of eventless transitions in one microstep: XState takes them in
/// the order their states were entered, SCXML in document order. A snapshot
/// keeps the order.
#[test]
fn xstate_takes_eventless_transitions_in_entry_order() {
    let yaml = "machine: m\n\
         type: parallel\n\
         context: { go: false }\n\
         on: { GO: { actions: [ { assign: { go: 'true' } } ] } }\n\
         states:\n  \
           x:\n    \
             initial: x1\n    \
             states:\n      \
               x1:\n        \
                 on: { N: x3 }\n        \
                 always: [ { target: x2, guard: context.go, actions: [ { log: '\"x\"' } ] } ]\n      \
               x2: {}\n      \
               x3: { on: { B: x1 } }\n  \
           y:\n    \
             initial: y1\n    \
             states:\n      \
               y1:\n        \
                 always: [ { target: y2, guard: context.go, actions: [ { log: '\"y\"' } ] } ]\n      \
               y2: {}\n";
    under("xstate", yaml, |actor| {
        send(actor, "N");
        send(actor, "B");
        let restored = Actor::restore_json(Arc::clone(actor.chart()), &actor.snapshot_json())
            .expect("restores");
        assert_eq!(send(actor, "GO"), ["y", "x"]);
        let mut restored = restored;
        assert_eq!(send(&mut restored, "GO"), ["y", "x"]);
    });
    under("scxml", yaml, |actor| {
        send(actor, "N");
        send(actor, "B");
        assert_eq!(send(actor, "GO"), ["x", "y"]);
    });
}

/// A microstep that leaves the set of active states as it was keeps their
/// order under `xstate` (XState's `microstep` returns the old snapshot's
/// nodes then), and the next eventless selection follows the old order:
/// `x -> #y` exits and re-enters both regions of `q`, which a fresh entry
/// order would put after `r`. Shrunk from seed 1960 of the differential
/// test; XState logs `t6 t10 t6 t10`.
#[test]
fn xstate_keeps_the_order_when_a_microstep_changes_no_state() {
    let yaml = "machine: m\n\
         context: { n: 0 }\n\
         initial: p\n\
         states:\n  \
           p:\n    \
             type: parallel\n    \
             states:\n      \
               q:\n        \
                 type: parallel\n        \
                 states:\n          \
                   x:\n            \
                     always: [ { target: '#y', guard: 'context.n < 4', actions: [ { log: '\"t6\"' }, { assign: { n: 'context.n + 1' } } ] } ]\n          \
                   y: { id: y }\n      \
               r:\n        \
                 always: [ { guard: 'context.n < 4', actions: [ { log: '\"t10\"' }, { assign: { n: 'context.n + 1' } } ] } ]\n";
    under("xstate", yaml, |actor| {
        assert_eq!(logs(&actor.last_step().logs), ["t6", "t10", "t6", "t10"]);
    });
}

/// XState selects an event's transitions by the snapshot's value, which
/// holds one child of a compound state: the first of its active children.
/// Two are active here after `A`, where `s9`'s history target restores `s9`
/// itself while `s2 -> s7` enters `s8`; the raised `A` then finds `s8` (and
/// not `s9`'s handler), and `s2 -> s7` leaves `s8` alone. Shrunk from seed
/// 137 of the differential test; XState ends in `s4` and `s8`.
#[test]
fn xstate_selects_one_child_of_a_compound_state() {
    let yaml = "machine: m\n\
         context: { n: 0 }\n\
         initial: s1\n\
         states:\n  \
           s1:\n    \
             type: parallel\n    \
             on:\n      \
               B: { target: [ '#i9', '#i4' ], guard: 'context.n < 1', actions: [ { assign: { n: 'context.n + 1' } } ] }\n    \
             states:\n      \
               s2:\n        \
                 initial: s4\n        \
                 on:\n          \
                   C: s7.h11\n          \
                   A: { target: s7, guard: 'context.n < 3' }\n        \
                 states:\n          \
                   s4: { type: final, id: i4 }\n      \
               s7:\n        \
                 initial: s8\n        \
                 states:\n          \
                   s8: {}\n          \
                   s9:\n            \
                     id: i9\n            \
                     on:\n              \
                       A: { target: h11, guard: 'context.n < 3', actions: [ { assign: { n: 'context.n + 1' } }, { raise: A } ] }\n          \
                   h11: { type: history, id: i11 }\n";
    under("xstate", yaml, |actor| {
        for event in ["B", "C", "A"] {
            send(actor, event);
        }
        assert_eq!(actor.configuration_paths(), ["s1.s2.s4", "s1.s7.s8"]);
    });
}

/// A transition whose target is the root: XState takes the root as its
/// domain, so it exits the source and enters the root again without
/// exiting it (and its default child); with `reenter` it exits the root
/// too. SCXML exits and re-enters the root either way. XState 5.33.3 logs
/// `ex:b t en:m en:a`, then `ex:b ex:m t en:m en:a`. Shrunk from seed 248
/// of the differential test.
#[test]
fn xstate_keeps_the_root_a_transition_targets() {
    let yaml = "machine: m\n\
         id: top\n\
         initial: a\n\
         entry: [ { log: '\"en:m\"' } ]\n\
         exit: [ { log: '\"ex:m\"' } ]\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en:a\"' } ]\n    \
             exit: [ { log: '\"ex:a\"' } ]\n    \
             on: { N: b }\n  \
           b:\n    \
             entry: [ { log: '\"en:b\"' } ]\n    \
             exit: [ { log: '\"ex:b\"' } ]\n    \
             on:\n      \
               R: { target: '#top', actions: [ { log: '\"t\"' } ] }\n      \
               X: { target: '#top', reenter: true, actions: [ { log: '\"t\"' } ] }\n";
    let reentered = ["ex:b", "ex:m", "t", "en:m", "en:a"];
    under("xstate", yaml, |actor| {
        send(actor, "N");
        assert_eq!(send(actor, "R"), ["ex:b", "t", "en:m", "en:a"]);
        send(actor, "N");
        assert_eq!(send(actor, "X"), reentered);
        assert_eq!(actor.configuration_paths(), ["a"]);
    });
    under("scxml", yaml, |actor| {
        send(actor, "N");
        assert_eq!(send(actor, "R"), reentered);
    });
}

/// A history target that restores its own source, taken with a transition
/// of another region that re-enters the parallel state above both, leaves
/// the source active without its parent: the other transition exits the
/// region, and its default entry skips the region, since the source is
/// entered there already. XState selects events by its snapshot's value,
/// which adds the parent back, after the states it holds: so the source's
/// handler is taken again, after the other region's (which then enters the
/// parent, since the source is not entered yet). XState 5.33.3 logs these
/// three steps. Shrunk from seeds 73 and 297 of the differential test.
#[test]
fn xstate_selects_by_the_value_where_a_state_is_active_without_its_parent() {
    let yaml = "machine: m\n\
         initial: s5\n\
         states:\n  \
           s5:\n    \
             type: parallel\n    \
             states:\n      \
               s6:\n        \
                 initial: s7\n        \
                 entry: [ { log: '\"en:s6\"' } ]\n        \
                 exit: [ { log: '\"ex:s6\"' } ]\n        \
                 states:\n          \
                   s7:\n            \
                     entry: [ { log: '\"en:s7\"' } ]\n            \
                     exit: [ { log: '\"ex:s7\"' } ]\n            \
                     on: { A: { target: '#i8', actions: [ { log: '\"t7\"' } ] } }\n          \
                   h8: { type: history, history: deep, id: i8 }\n      \
               s9:\n        \
                 type: parallel\n        \
                 id: i9\n        \
                 entry: [ { log: '\"en:s9\"' } ]\n        \
                 exit: [ { log: '\"ex:s9\"' } ]\n        \
                 states:\n          \
                   s10:\n            \
                     entry: [ { log: '\"en:s10\"' } ]\n            \
                     exit: [ { log: '\"ex:s10\"' } ]\n            \
                     on: { A: { target: '#i9', actions: [ { log: '\"t10\"' } ] } }\n";
    under("xstate", yaml, |actor| {
        let all = ["s5.s6.s7", "s5.s9.s10"];
        assert_eq!(
            send(actor, "A"),
            [
                "ex:s10", "ex:s9", "ex:s7", "ex:s6", "t7", "t10", "en:s7", "en:s9", "en:s10"
            ]
        );
        assert_eq!(actor.configuration_paths(), all);
        assert!(!actor.is_active(actor.chart().state_by_path("s5.s6").unwrap()));
        assert_eq!(
            send(actor, "A"),
            [
                "ex:s10", "ex:s9", "ex:s7", "t10", "t7", "en:s6", "en:s7", "en:s9", "en:s10"
            ]
        );
        assert_eq!(
            send(actor, "A"),
            [
                "ex:s10", "ex:s9", "ex:s7", "ex:s6", "t7", "t10", "en:s7", "en:s9", "en:s10"
            ]
        );
        assert_eq!(actor.configuration_paths(), all);
    });
}

/// An action-only targetless `always` changes nothing XState's snapshot
/// holds, so XState takes it once after each microstep that is not its own
/// (the start, every event, even one that enables nothing, every raised
/// event), never twice in a row. Under SCXML it is taken again and again
/// until the microstep budget runs out. XState 5.33.3 logs `x` at the start,
/// `x` after `Z`, and `x x x` after `R`, which raises two events.
#[test]
fn xstate_takes_an_action_only_targetless_always_once_per_microstep() {
    let yaml = "machine: m\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             always: [ { actions: [ { log: '\"x\"' } ] } ]\n    \
             on: { R: { actions: [ { raise: Q }, { raise: Q2 } ] } }\n";
    under("xstate", yaml, |actor| {
        assert_eq!(logs(&actor.last_step().logs), ["x"]);
        assert!(actor.last_step().settled().is_ok());
        let step = actor.send(&Event::named("Z"));
        assert!(!step.ignored, "the `always` ran");
        assert_eq!(logs(&step.logs), ["x"]);
        assert_eq!(send(actor, "R"), ["x", "x", "x"]);
    });
    under("scxml", yaml, |actor| {
        assert!(actor.last_step().settled().is_err());
    });
}

/// An `assign` makes a new XState snapshot whatever it writes, so a
/// targetless `always` that assigns is selected again: it runs while its
/// guard holds, and without end when it has none (XState reports an
/// infinite loop; here the step runs out of microsteps).
#[test]
fn xstate_takes_an_assigning_targetless_always_again() {
    let guarded = "machine: m\n\
         context: { n: 0 }\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             always: [ { guard: 'context.n < 3', actions: [ { log: '\"x\"' }, { assign: { n: 'context.n + 1' } } ] } ]\n";
    under("xstate", guarded, |actor| {
        assert_eq!(logs(&actor.last_step().logs), ["x", "x", "x"]);
        assert!(actor.send(&Event::named("Z")).ignored);
    });
    let same = "machine: m\n\
         context: { n: 0 }\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             always: [ { actions: [ { assign: { n: 'context.n' } } ] } ]\n";
    under("xstate", same, |actor| {
        assert!(actor.last_step().settled().is_err());
    });
}

/// A targeted eventless transition that exits and re-enters its source
/// leaves XState's set of nodes as it was: without an `assign` it is not
/// taken again in the same macrostep either. XState 5.33.3 logs
/// `en x en` at the start and `x en` after an event that enables nothing.
#[test]
fn xstate_takes_a_reentering_always_once_when_it_changes_nothing() {
    let yaml = "machine: m\n\
         initial: a\n\
         states:\n  \
           a:\n    \
             entry: [ { log: '\"en\"' } ]\n    \
             always: [ { target: a, reenter: true, actions: [ { log: '\"x\"' } ] } ]\n";
    under("xstate", yaml, |actor| {
        assert_eq!(logs(&actor.last_step().logs), ["en", "x", "en"]);
        assert_eq!(send(actor, "Z"), ["x", "en"]);
    });
}
