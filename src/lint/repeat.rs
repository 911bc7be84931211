//! What a repeated delivery meets: the handler that accepts it right after
//! the first delivery, or after a cycle back to where it was taken.
//!
//! A repeat is stopped by a handler's guard only when the first delivery
//! made that guard false for certain: an identity test `!(event.F in
//! context.S)` whose set the first delivery's transition extended with
//! `event.F`, or a flag test (`!context.done`) of a field it set to a
//! constant. Any other guard may pass. A handler that changes nothing (a
//! targetless log, a self-target without `reenter` and without actions)
//! accepts a repeat harmlessly; so does the first delivery's own
//! transition, taken again right away, when its actions are idempotent
//! assigns and logs and it leads to the same leaf.

use std::collections::HashSet;

use petgraph::graph::NodeIndex;

use super::Cx;
use super::analysis::{self, IdentityPair, Literal};
use super::witness::{Witness, WitnessEnd, WitnessStep};
use crate::graph::{Edge, EventId, Node};
use crate::model::{EventDecl, StateId, TransitionId};

/// The most nodes one search for a way back settles: a bound on the work per
/// finding, far above what a way back in a real machine needs.
const CYCLE_SEARCH_LIMIT: usize = 50_000;

/// How many two-layer searches from the start one machine gets.
pub const LAYERED_SEARCHES: usize = 200;

/// What the first delivery left for the guards of a repeat.
pub struct FirstDelivery<'a> {
    marks: &'a [IdentityPair],
    writes: &'a [(String, Literal)],
    decl: Option<&'a EventDecl>,
    /// The transition the first delivery took, when the repeat comes right
    /// after it (nothing ran in between): re-taking it with idempotent
    /// updates changes nothing.
    right_after: Option<TransitionId>,
}

/// What the lints read from one transition, computed once.
#[derive(Debug, Default)]
pub struct Facts {
    /// Identity tests among the guard's conjuncts.
    pub identity: Vec<IdentityPair>,
    /// Sets of seen ids its assigns extend.
    pub marks: Vec<IdentityPair>,
    /// Fields its assigns set to literals.
    pub writes: Vec<(String, Literal)>,
    /// Whether its actions do anything besides logging.
    pub acts: bool,
    /// Whether its actions are assigns and logs that, run again right away
    /// with the same event, leave the context as they found it, and the
    /// entry and exit actions it may re-run write none of what they read
    /// or write.
    pub idempotent: bool,
    /// The one leaf it leads to, when it leads to exactly one.
    pub lands: Option<StateId>,
}

/// The context fields that entry and exit actions write, anywhere in the
/// machine; `None` when a host action there may write any.
pub struct EntryExitWrites(Option<HashSet<String>>);

impl EntryExitWrites {
    pub fn of(machine: &crate::model::Machine) -> EntryExitWrites {
        let mut fields = Vec::new();
        for s in machine.state_ids() {
            let state = machine.state(s);
            for action in state.entry.iter().chain(&state.exit) {
                if matches!(action, crate::model::Action::Host { .. }) {
                    return EntryExitWrites(None);
                }
            }
            analysis::writes(&state.entry, &mut fields);
            analysis::writes(&state.exit, &mut fields);
        }
        EntryExitWrites(Some(fields.into_iter().collect()))
    }

    fn touch_any<'a>(&self, mut fields: impl Iterator<Item = &'a str>) -> bool {
        match &self.0 {
            None => true,
            Some(set) => fields.any(|f| set.contains(f)),
        }
    }
}

impl Facts {
    pub fn of(
        cx_graph: &crate::graph::MachineGraph,
        entry_exit: &EntryExitWrites,
        t: TransitionId,
    ) -> Facts {
        let transition = cx_graph.machine.transition(t);
        let lands = if cx_graph.targets(t).is_empty() {
            None
        } else {
            match cx_graph.leaves_after(t, false).as_slice() {
                [leaf] => Some(*leaf),
                _ => None,
            }
        };
        Facts {
            identity: transition
                .guard
                .as_ref()
                .map(analysis::identity_tests)
                .unwrap_or_default(),
            marks: analysis::marks(&transition.actions),
            writes: analysis::constant_writes(&transition.actions),
            acts: analysis::changes_anything(&transition.actions),
            idempotent: idempotent(transition, !cx_graph.targets(t).is_empty(), entry_exit),
            lands,
        }
    }
}

/// Whether the transition's actions, taken again right away with the same
/// event, change nothing. A transition with a target exits and enters
/// states on the way, whose actions run between the two; they must not
/// write a field the transition's actions read or write.
fn idempotent(
    transition: &crate::model::Transition,
    targeted: bool,
    entry_exit: &EntryExitWrites,
) -> bool {
    let updates = analysis::BlockUpdates::of(&transition.actions);
    if !updates.idempotent() {
        return false;
    }
    if !targeted {
        return true;
    }
    let mut read = Vec::new();
    for action in &transition.actions {
        if let crate::model::Action::Assign { fields, .. } = action {
            for assignment in fields.values() {
                if analysis::reads(&assignment.expr, &mut read) {
                    return false;
                }
            }
        }
    }
    !entry_exit.touch_any(updates.fields().chain(read.iter().map(String::as_str)))
}

/// The handler that accepts a repeat, in the configuration holding `leaf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acceptor {
    pub leaf: StateId,
    pub handler: TransitionId,
}

impl<'m> Cx<'m> {
    pub fn first_delivery(&self, t: TransitionId, event: EventId) -> FirstDelivery<'_> {
        let facts = &self.facts[t.index()];
        FirstDelivery {
            marks: &facts.marks,
            writes: &facts.writes,
            decl: self.decl(event),
            right_after: None,
        }
    }

    /// Whether the first delivery made `h`'s guard false for the repeat.
    pub fn blocked(&self, h: TransitionId, first: &FirstDelivery) -> bool {
        let identity = &self.facts[h.index()].identity;
        identity.iter().any(|pair| {
            analysis::is_identity_field(&pair.0, first.decl) && first.marks.contains(pair)
        }) || (!first.writes.is_empty()
            && analysis::falsified(self.machine.transition(h).guard.as_ref(), first.writes))
    }

    /// Whether taking `h` with `leaf` active changes the configuration, the
    /// context or emits something. A re-entry of the same leaf counts when
    /// it re-runs what lies inside `h`'s source (`reentered_inside`); the
    /// re-entry of the source itself is `reentry-reruns-actions`' to judge.
    /// Idempotent updates of the first delivery's transition taken again
    /// right after it do not count: they write what they wrote.
    pub fn changes(&self, h: TransitionId, leaf: StateId, first: &FirstDelivery) -> bool {
        let facts = &self.facts[h.index()];
        if facts.acts && !(facts.idempotent && first.right_after == Some(h)) {
            return true;
        }
        !self.graph.targets(h).is_empty()
            && (facts.lands != Some(leaf) || !self.reentered_inside(h, leaf).is_empty())
    }

    /// The actions that taking `h` runs again with `leaf` active, when `h`
    /// leads back to `leaf` through states inside its source: the exit set
    /// of a transition holds every active state below its domain, so `E ->
    /// .child` on an ancestor exits and re-enters an active `child`. Each
    /// with the state whose entry (`true`) or exit holds it, and what a
    /// re-run repeats.
    pub fn reentered_inside(
        &self,
        h: TransitionId,
        leaf: StateId,
    ) -> Vec<(StateId, bool, &'m crate::model::Action, String)> {
        let m = self.machine;
        let (Some(domain), source) = (self.graph.domain(h), m.transition(h).source) else {
            return Vec::new();
        };
        if self.facts[h.index()].lands != Some(leaf) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for s in std::iter::once(leaf).chain(m.ancestors(leaf)) {
            if !self.graph.is_strict_descendant(s, domain)
                || !self.graph.is_strict_descendant(s, source)
            {
                break;
            }
            let state = m.state(s);
            for (actions, entry) in [(&state.exit, false), (&state.entry, true)] {
                let updates = analysis::BlockUpdates::of(actions);
                for action in actions {
                    if let Some(what) = analysis::rerun_hazard(m, &updates, action) {
                        out.push((s, entry, action, what));
                    }
                }
            }
        }
        out
    }

    /// The first handler of the chain that accepts the repeat and changes
    /// something; `None` when an unguarded harmless one, or none, is first.
    pub fn accepting(
        &self,
        chain: impl Iterator<Item = TransitionId>,
        leaf: StateId,
        first: &FirstDelivery,
    ) -> Option<TransitionId> {
        for h in chain {
            if self.blocked(h, first) {
                continue;
            }
            if self.changes(h, leaf, first) {
                return Some(h);
            }
            // An unguarded harmless handler takes the repeat: nothing after it runs.
            self.machine.transition(h).guard.as_ref()?;
        }
        None
    }

    /// The handler that accepts a repeat of `event` right after `t` took
    /// it, in the configuration `t` leads to.
    pub fn immediate_acceptor(&self, t: TransitionId, event: EventId) -> Option<Acceptor> {
        let known = self.immediate.borrow()[t.index()]
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, a)| *a);
        if let Some(known) = known {
            return known;
        }
        let found = self.find_immediate_acceptor(t, event);
        self.immediate.borrow_mut()[t.index()].push((event, found));
        found
    }

    fn find_immediate_acceptor(&self, t: TransitionId, event: EventId) -> Option<Acceptor> {
        let first = FirstDelivery {
            right_after: Some(t),
            ..self.first_delivery(t, event)
        };
        if self.graph.targets(t).is_empty() {
            // The configuration stays; the repeat meets `t` first again
            // (the handlers before it failed their guards the first time).
            let leaf = self
                .selecting_leaf(t, Some(event))
                .unwrap_or(self.machine.transition(t).source);
            let chain = std::iter::once(t).chain(self.graph.handlers_after(t, event));
            return self
                .accepting(chain, leaf, &first)
                .map(|handler| Acceptor { leaf, handler });
        }
        let mut leaves = self.graph.leaves_after(t, false);
        let restores = self
            .graph
            .targets(t)
            .iter()
            .any(|&x| self.graph.is_history(x));
        if restores {
            leaves.extend(
                self.graph
                    .leaves_after(t, true)
                    .into_iter()
                    .filter(|&l| self.reach.reached(self.graph.at(l))),
            );
        }
        leaves.into_iter().find_map(|leaf| {
            self.accepting(self.graph.handlers(leaf, event), leaf, &first)
                .map(|handler| Acceptor { leaf, handler })
        })
    }

    /// Whether `t` lies on a cycle of the transition graph.
    pub fn on_cycle(&self, t: TransitionId) -> bool {
        let from = self.graph.at(self.machine.transition(t).source);
        self.transition_targets(t)
            .iter()
            .any(|&x| self.components[x.index()] == self.components[from.index()])
    }

    /// The nodes `t`'s edges enter.
    pub fn transition_targets(&self, t: TransitionId) -> Vec<NodeIndex> {
        let from = self.graph.at(self.machine.transition(t).source);
        self.graph
            .steps
            .edges(from)
            .filter(|e| *e.weight() == Edge::Transition(t))
            .map(|e| petgraph::visit::EdgeRef::target(&e))
            .collect()
    }

    /// The shortest continuation, inside `t`'s component of the transition
    /// graph (so that it can always come back to `t`'s source), from where
    /// `t` leads to a configuration where a late repeat of `event` is
    /// accepted again and changes something.
    pub fn cycle_back(
        &self,
        t: TransitionId,
        event: EventId,
    ) -> Option<(Vec<WitnessStep>, Acceptor)> {
        let source = self.machine.transition(t).source;
        let component = self.components[self.graph.at(source).index()];
        let starts: Vec<NodeIndex> = self
            .transition_targets(t)
            .into_iter()
            .filter(|n| self.components[n.index()] == component)
            .collect();
        if starts.is_empty() {
            return None;
        }
        let first = self.first_delivery(t, event);
        // A timer that fires once per entry of its state, fired on the way
        // to `t`, does not fire again on the way back.
        let fired: Vec<TransitionId> = self
            .taking(t, Some(event))
            .map(|(steps, _)| {
                steps
                    .iter()
                    .filter_map(|s| match s {
                        WitnessStep::After { transition, .. }
                            if self.graph.fires_once(*transition) =>
                        {
                            Some(*transition)
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let accepts_at = |node: NodeIndex| -> Option<Acceptor> {
            let Node::At(leaf) = self.graph.node(node) else {
                return None;
            };
            if !self.graph.is_leaf(leaf) {
                return None;
            }
            self.accepting(self.graph.handlers(leaf, event), leaf, &first)
                .map(|handler| Acceptor { leaf, handler })
        };
        let steps = &self.graph.steps;
        let (found, path) = self.graph.find(
            &mut self.scratch.borrow_mut(),
            &starts,
            |e, weight| {
                !matches!(weight, Edge::Transition(x) if fired.contains(&x))
                    && steps
                        .edge_endpoints(e)
                        .is_some_and(|(_, to)| self.components[to.index()] == component)
            },
            |n| accepts_at(n).is_some(),
            CYCLE_SEARCH_LIMIT,
        )?;
        let acceptor = accepts_at(found)?;
        Some((self.steps_of(&path), acceptor))
    }

    /// The witness for a repeat of `event` after `t`: the shortest way to
    /// take `t`, then the repeat, right away when the configuration `t`
    /// leads to accepts it, else after the shortest cycle back. `None` when
    /// no run takes `t` on a delivered event.
    pub fn repeat_witness(&self, t: TransitionId, event: EventId) -> Option<Witness> {
        let (mut steps, taken) = self.taking(t, Some(event))?;
        let taken = taken?;
        if self.immediate_acceptor(t, event).is_none()
            && let Some((back, _)) = self.cycle_back(t, event)
        {
            steps.extend(back);
        }
        Some(Witness {
            steps,
            end: WitnessEnd::Repeat(taken),
        })
    }

    /// A witness that ends with a repeat of the last delivery among `steps`;
    /// when that delivery took a known transition, its repeat witness.
    pub fn repeat_last(&self, steps: Vec<WitnessStep>) -> Option<Witness> {
        let last = Self::last_delivery(&steps)?;
        if let WitnessStep::Event {
            event,
            transition: Some(t),
        } = steps[last]
            && let Some(w) = self.repeat_witness(t, event)
        {
            return Some(w);
        }
        Some(Witness {
            steps,
            end: WitnessEnd::Repeat(last),
        })
    }

    /// The shortest run that delivers `event` at least once and then has a
    /// leaf under `t`'s source active where `t` may take it: a repeat of
    /// that earlier delivery can then take `t`.
    pub fn repeat_into(&self, t: TransitionId, event: EventId) -> Option<Witness> {
        let source = self.machine.transition(t).source;
        let (steps, first) = self.after_delivery(
            |x| {
                self.graph
                    .trigger_events(x)
                    .contains(&event)
                    .then_some(event)
            },
            |node| {
                matches!(self.graph.node(node), Node::At(leaf)
                    if self.graph.is_leaf(leaf)
                        && self.graph.contains(source, leaf)
                        && self.selects(leaf, t, event))
            },
        )?;
        Some(Witness {
            steps,
            end: WitnessEnd::Repeat(first),
        })
    }

    /// The shortest run from the start that delivers an event (one that
    /// `delivers` names for a transition) and afterwards reaches a node
    /// `stop` accepts: its steps, and the index of that first delivery.
    /// Each such search may cover the whole graph, so a machine gets at
    /// most `LAYERED_SEARCHES` of them; past that, `None`, and the callers
    /// build a witness another way.
    pub fn after_delivery(
        &self,
        delivers: impl Fn(TransitionId) -> Option<EventId>,
        stop: impl Fn(NodeIndex) -> bool,
    ) -> Option<(Vec<WitnessStep>, usize)> {
        use std::collections::VecDeque;
        let left = self.layered_searches.get();
        if left == 0 {
            return None;
        }
        self.layered_searches.set(left - 1);
        let n = self.graph.steps.node_count();
        // Four layers: before and after the first delivery (`DELIVERED`),
        // each before and after a timer that fires once per entry of its
        // state (`FIRED`), which a path then does not take a second time.
        const DELIVERED: usize = 1;
        const FIRED: usize = 2;
        let index = |node: NodeIndex, layer: usize| layer * n + node.index();
        let mut dist = vec![u32::MAX; 4 * n];
        let mut pred: Vec<Option<(u32, petgraph::graph::EdgeIndex)>> = vec![None; 4 * n];
        let start = self.graph.enter(StateId::ROOT);
        dist[index(start, 0)] = 0;
        let mut queue = VecDeque::from([(start, 0usize, 0u32)]);
        let mut found = None;
        while let Some((node, layer, d)) = queue.pop_front() {
            let i = index(node, layer);
            // A node is settled by its first, shortest, pop; later ones are stale.
            if d != dist[i] || d == u32::MAX - 1 {
                continue;
            }
            dist[i] = u32::MAX - 1;
            if layer & DELIVERED != 0 && stop(node) {
                found = Some(i);
                break;
            }
            for e in self.graph.steps.edges(node) {
                let weight = *e.weight();
                if weight == Edge::History {
                    continue;
                }
                let delivered = match weight {
                    Edge::Transition(x) => {
                        delivers(x).filter(|&v| self.graph.events.is_external(v))
                    }
                    _ => None,
                };
                let once = matches!(weight, Edge::Transition(x) if self.graph.fires_once(x));
                if once && layer & FIRED != 0 {
                    continue;
                }
                let free =
                    delivered.is_none() && self.graph.cost(weight) == crate::graph::Cost::Free;
                let next_layer = layer
                    | if delivered.is_some() { DELIVERED } else { 0 }
                    | if once { FIRED } else { 0 };
                let to = petgraph::visit::EdgeRef::target(&e);
                let j = index(to, next_layer);
                let next = d + u32::from(!free);
                if dist[j] != u32::MAX - 1 && next < dist[j] {
                    dist[j] = next;
                    pred[j] = Some((i as u32, petgraph::visit::EdgeRef::id(&e)));
                    if free {
                        queue.push_front((to, next_layer, next));
                    } else {
                        queue.push_back((to, next_layer, next));
                    }
                }
            }
        }
        let mut at = found?;
        let mut edges = Vec::new();
        while let Some((from, e)) = pred[at] {
            let from = from as usize;
            let crosses = (from / n) & DELIVERED == 0 && (at / n) & DELIVERED != 0;
            edges.push((e, crosses));
            at = from;
        }
        edges.reverse();
        let mut steps = Vec::new();
        let mut first = None;
        for (e, crosses) in edges {
            match (self.graph.steps[e], crosses) {
                (Edge::Transition(x), true) => {
                    let (from, _) = self.graph.steps.edge_endpoints(e)?;
                    steps.extend(self.drive_sibling(from, x));
                    let event = delivers(x)?;
                    steps.push(WitnessStep::Event {
                        event,
                        transition: Some(x),
                    });
                    first = Some(steps.len() - 1);
                }
                _ => steps.extend(self.steps_of(&[e])),
            }
        }
        Some((steps, first?))
    }
}

impl Cx<'_> {
    /// A witness that first makes `leaf` active (so that a history state
    /// records it), then takes `t` on `event`, then repeats it.
    pub fn witness_through(
        &self,
        leaf: StateId,
        t: TransitionId,
        event: EventId,
    ) -> Option<Witness> {
        let source = self.machine.transition(t).source;
        let mut steps = self.prefix(self.graph.at(leaf))?;
        let (_, path) = self.graph.find(
            &mut self.scratch.borrow_mut(),
            &[self.graph.at(leaf)],
            |_, e| e != Edge::History,
            |n| {
                matches!(self.graph.node(n), Node::At(l)
                    if self.graph.is_leaf(l) && self.graph.contains(source, l) && self.selects(l, t, event))
            },
            CYCLE_SEARCH_LIMIT,
        )?;
        steps.extend(self.steps_of(&path));
        steps.push(self.step_taking(t, Some(event))?);
        Some(Witness {
            end: WitnessEnd::Repeat(steps.len() - 1),
            steps,
        })
    }
}
