use std::collections::{BTreeMap, HashSet, VecDeque};

use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use super::witness::{Witness, WitnessEnd};
use super::{Cx, Finding, Lint, Stage, analysis};
use crate::diagnostic::Label;
use crate::graph::{Edge, EventId};
use crate::model::{Action, Semantics, TransitionId, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags transitions the machine takes by itself without end: a cycle
    /// of `always` transitions and of transitions on events the machine
    /// raises on the cycle (in entry and exit actions of the states it
    /// passes, or in the cycle's own actions), through targets, default
    /// entry and ancestors, on which no guard reads a context field that
    /// the cycle's actions or entry and exit actions write, nor asks
    /// `in_state`; and a targetless `always`, or a targetless transition
    /// that raises its own event, whose guard its own actions cannot make
    /// false. Under `semantics: xstate` a targetless `always` that neither
    /// assigns nor raises or sends an event is no loop: XState takes an
    /// eventless transition again only after a microstep that changed its
    /// snapshot, so it runs once per event (`docs/semantics.md`). The witness leads into the loop and shows one turn of it; the
    /// replay confirms it when that step runs out of microsteps.
    ///
    /// ### Why is this bad?
    ///
    /// Eventless transitions and raised events are processed until none is
    /// left. If a guard that let the cycle start cannot change, the machine
    /// never reaches a stable configuration: the step stops at the
    /// interpreter's microstep budget with an error, and the event that
    /// started it is never applied.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// a: { always: b }
    /// b: { always: a }
    /// c:
    ///   entry: [ { raise: PING } ]
    ///   on: { PING: { target: c, reenter: true } }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Guard one of the moves on something the cycle changes, or let an
    /// event from outside drive one of them:
    ///
    /// ```yaml
    /// a: { always: { target: b, guard: "context.pendientes > 0" } }
    /// b:
    ///   always:
    ///     target: a
    ///     actions: [ { assign: { pendientes: "context.pendientes - 1" } } ]
    /// ```
    code: "S006",
    severity: Error,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    let mut all = Vec::new();
    for t in &m.transitions {
        raises(cx, &t.actions, &mut all);
    }
    for s in &m.states {
        raises(cx, &s.entry, &mut all);
        raises(cx, &s.exit, &mut all);
    }
    let mut raised = vec![false; cx.graph.events.len()];
    for e in all {
        raised[e.index()] = true;
    }
    // The moves that need nothing from outside once the machine makes them.
    let own: Vec<bool> = (0..m.transitions.len() as u32)
        .map(TransitionId)
        .map(|t| match m.transition(t).trigger {
            Trigger::Always => true,
            Trigger::Event(_) => cx.graph.trigger_events(t).iter().any(|e| raised[e.index()]),
            Trigger::After(_) => false,
        })
        .collect();
    let components = cx.graph.own_move_components(|t| own[t.index()]);
    // The moves inside each cycle, in document order.
    let mut cycles: BTreeMap<u32, Vec<TransitionId>> = BTreeMap::new();
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if !own[index] || !cx.transition_reachable(tid) {
            continue;
        }
        if cx.graph.targets(tid).is_empty() {
            targetless(cx, tid);
            continue;
        }
        let from = cx.graph.at(t.source).index();
        if cx
            .transition_targets(tid)
            .iter()
            .any(|n| components[n.index()] == components[from])
        {
            cycles.entry(components[from]).or_default().push(tid);
        }
    }
    for (component, transitions) in cycles {
        let states: Vec<_> = components
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == component)
            .map(|(i, _)| cx.graph.node_state(NodeIndex::new(i)))
            .collect();
        // An event drives the cycle only if the cycle raises it.
        let mut fed = Vec::new();
        for &t in &transitions {
            raises(cx, &m.transition(t).actions, &mut fed);
        }
        for &s in &states {
            raises(cx, &m.state(s).entry, &mut fed);
            raises(cx, &m.state(s).exit, &mut fed);
        }
        let transitions: Vec<TransitionId> = transitions
            .into_iter()
            .filter(|&t| {
                m.transition(t).trigger == Trigger::Always
                    || cx.graph.trigger_events(t).iter().any(|e| fed.contains(e))
            })
            .collect();
        let Some(turn) = transitions
            .iter()
            .find_map(|&t| turn_from(cx, &components, component, &transitions, t))
        else {
            continue;
        };
        let mut read = Vec::new();
        let mut in_state = false;
        let mut written = Vec::new();
        for &t in &transitions {
            let t = m.transition(t);
            if let Some(g) = &t.guard {
                in_state |= analysis::reads(g, &mut read);
            }
            analysis::writes(&t.actions, &mut written);
        }
        for &s in &states {
            analysis::writes(&m.state(s).entry, &mut written);
            analysis::writes(&m.state(s).exit, &mut written);
        }
        if in_state || read.iter().any(|f| written.contains(f)) {
            continue;
        }
        let eventless = transitions
            .iter()
            .all(|&t| m.transition(t).trigger == Trigger::Always);
        let first = m.transition(transitions[0]);
        let labels = transitions[1..]
            .iter()
            .map(|&t| Label {
                span: m.transition(t).span,
                message: "and this one, on the same cycle".into(),
            })
            .collect();
        let (message, help) = if eventless {
            (
                "these `always` transitions can cycle without end: no guard on the cycle reads anything the cycle changes",
                "guard one of them on a field the cycle changes, or let an event drive one of the moves",
            )
        } else {
            (
                "these transitions cycle without end on events the machine raises itself: no guard on the cycle reads anything the cycle changes",
                "guard one of them on a field the cycle changes, or stop raising the event on every turn",
            )
        };
        let witness = loop_witness(cx, turn);
        cx.report(Finding {
            lint: Lint::EventlessLoop,
            span: first.span,
            state: first.source,
            message: message.into(),
            labels,
            help: Some(help.into()),
            witness,
            claim: None,
            fix: None,
        });
    }
}

/// A targetless move that enables itself again: an `always`, or one whose
/// actions raise its own event; reported when nothing it does can make its
/// guard false.
fn targetless(cx: &mut Cx, tid: TransitionId) {
    let t = cx.machine.transition(tid);
    let always = t.trigger == Trigger::Always;
    if always && cx.machine.semantics == Semantics::Xstate && !renews_itself(&t.actions) {
        return;
    }
    if !always {
        let mut own = Vec::new();
        raises(cx, &t.actions, &mut own);
        if !cx.graph.trigger_events(tid).iter().any(|e| own.contains(e)) {
            return;
        }
    }
    let mut read = Vec::new();
    let in_state = t.guard.as_ref().is_some_and(|g| analysis::reads(g, &mut read));
    let mut written = Vec::new();
    analysis::writes(&t.actions, &mut written);
    if in_state || read.iter().any(|f| written.contains(f)) {
        return;
    }
    let message = if always {
        "this targetless `always` is taken again and again: nothing it does can make its guard false"
    } else {
        "this targetless transition raises its own event again and again: nothing it does can make its guard false"
    };
    let witness = loop_witness(cx, vec![tid]);
    cx.report(Finding {
        lint: Lint::EventlessLoop,
        span: t.span,
        state: t.source,
        message: message.into(),
        labels: Vec::new(),
        help: Some("guard it on a field its actions change, or give it a target".into()),
        witness,
        claim: None,
        fix: None,
    });
}

/// Whether a targetless `always` with these actions is selected again under
/// XState: an `assign` makes a new snapshot whatever it writes, and an event
/// raised or sent is processed next, after which eventless transitions are
/// selected again. A host action is XState's custom action, which changes
/// no snapshot.
fn renews_itself(actions: &[Action]) -> bool {
    actions.iter().any(|a| {
        matches!(
            a,
            Action::Assign { .. } | Action::Raise { .. } | Action::Send { delay: None, .. }
        )
    })
}

/// The events the actions raise, added to `out`.
fn raises(cx: &Cx, actions: &[Action], out: &mut Vec<EventId>) {
    for action in actions {
        if let Action::Raise { event, .. } = action
            && let Some(id) = cx.graph.events.get(&event.text)
        {
            out.push(id);
        }
    }
}

/// One turn of the cycle through `first`: `first`, then the shortest way
/// back to its source inside the component, by structure edges and the
/// cycle's own transitions; the transitions taken, in order.
fn turn_from(
    cx: &Cx,
    components: &[u32],
    component: u32,
    cycle: &[TransitionId],
    first: TransitionId,
) -> Option<Vec<TransitionId>> {
    let graph = &cx.graph.steps;
    let home = cx.graph.at(cx.machine.transition(first).source);
    let follow = |e: Edge| match e {
        Edge::Up | Edge::Default => true,
        Edge::Transition(t) => cycle.contains(&t),
        Edge::History | Edge::Sibling => false,
    };
    let mut pred: Vec<Option<EdgeIndex>> = vec![None; graph.node_count()];
    let mut seen = HashSet::new();
    let mut queue = VecDeque::new();
    for e in graph.edges(home) {
        if *e.weight() == Edge::Transition(first) && components[e.target().index()] == component {
            pred[e.target().index()] = Some(e.id());
            seen.insert(e.target());
            queue.push_back(e.target());
        }
    }
    while let Some(node) = queue.pop_front() {
        if node == home {
            // Back along the edges that reached each node, to the first
            // move out of `home`.
            let mut turn = Vec::new();
            let mut at = home;
            while let Some(e) = pred[at.index()] {
                if let Edge::Transition(t) = graph[e] {
                    turn.push(t);
                }
                at = graph.edge_endpoints(e)?.0;
                if at == home {
                    break;
                }
            }
            turn.reverse();
            return Some(turn);
        }
        for e in graph.edges(node) {
            let target = e.target();
            if follow(*e.weight())
                && components[target.index()] == component
                && seen.insert(target)
            {
                pred[target.index()] = Some(e.id());
                queue.push_back(target);
            }
        }
    }
    None
}

/// The steps into the loop (to a leaf where its first move is taken) and
/// one turn of it; `None` when no witness is short enough.
fn loop_witness(cx: &Cx, turn: Vec<TransitionId>) -> Option<Witness> {
    let (steps, _) = cx.taking(*turn.first()?, None)?;
    Some(Witness {
        steps,
        end: WitnessEnd::Loop { turn },
    })
}
