//! Graph views of a machine for the analysis: the state hierarchy, the events
//! and who handles them, and the transition graph that the lints search.
//!
//! The transition graph (`steps`) has two nodes per state: `At(s)`, "s is
//! active", and `Enter(s)`, "s is being entered". Its edges are
//!
//! - `Up`: `At(s) → At(parent)`, because an active state's ancestors are
//!   active; this is how a transition on an ancestor applies in every
//!   descendant (the handler chain decides whether it is behind the
//!   descendant's own);
//! - `Default`: default entry, `Enter(compound) → Enter(initial)`,
//!   `Enter(parallel) → Enter(region)` for every region, `Enter(leaf) → At(leaf)`,
//!   `Enter(history) → Enter(its default)`;
//! - `History`: what a history state may restore (`Enter(h) → Enter(child)`
//!   for shallow history, `Enter(h) → At(leaf)` for deep history);
//! - `Transition(t)`: `At(source) → Enter(target)` for every target, and
//!   `At(source) → Enter(region)` for the regions of a parallel state that the
//!   transition enters without targeting them;
//! - `Sibling`: `At(region) → Siblings` hubs, from which the transitions of
//!   the other regions of its parallel state that leave it take their
//!   `Transition(t)` edges, as from their source (see `add_sibling_hubs`).
//!
//! A path from `Enter(root)` is a run of the machine seen from one region at
//! a time: regions are independent, guards may be true, history may restore
//! anything that was active, events the machine raises are raised. A region
//! may leave its parallel state by a transition of a sibling region whose
//! source some run reaches and the sibling can reach from its default entry
//! by its own moves; a witness drives the sibling there first (`drive`),
//! and its replay tells whether the sibling really was there. The graph has
//! O(states + transitions) nodes and edges (a leaving transition counts
//! twice more for each parallel state it leaves), so nothing here enumerates
//! configurations of parallel states. What that costs in precision: a
//! sibling's source counts as reachable only by that sibling's own moves
//! (not through history, nor a hub of a parallel state nested inside it),
//! and a transition on an ancestor stays available in a child whose own
//! unguarded handler for the event shadows it; the replay of a witness
//! tells such a path apart.

use std::cell::OnceCell;
use std::collections::{HashMap, VecDeque};

use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::model::{
    Action, Completion, EventPattern, HistoryKind, Machine, Semantics, StateId, StateKind,
    TransitionId, Trigger,
};

/// A dense index into `EventTable::names`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub u32);

impl EventId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Every event name the machine mentions, and where it comes from.
#[derive(Clone, Debug, Default)]
pub struct EventTable {
    pub names: Vec<String>,
    /// Whether the event comes from outside, so that a sender may deliver it
    /// twice: declared under `events:`, or handled and not raised by the
    /// machine itself. Raised and sent events, `done.state.*` and `error.*`
    /// are the machine's own.
    pub external: Vec<bool>,
    /// Whether the event is an invocation's completion
    /// (`xstate.done.actor.ID`, `xstate.error.actor.ID`): external, but
    /// carrying its invocation's key as its id, so that the runtime
    /// recognises a repeat with nothing declared.
    pub completion: Vec<bool>,
    /// Whether the machine raises or sends the event itself (a declared
    /// event may also come from outside).
    raised: Vec<bool>,
    index: HashMap<String, EventId>,
}

impl EventTable {
    pub fn get(&self, name: &str) -> Option<EventId> {
        self.index.get(name).copied()
    }

    pub fn name(&self, id: EventId) -> &str {
        &self.names[id.index()]
    }

    pub fn is_external(&self, id: EventId) -> bool {
        self.external[id.index()]
    }

    /// Whether a sender may deliver the event twice as two deliveries the
    /// runtime cannot tell apart without a declared id: an external event
    /// that is not an invocation's completion.
    pub fn is_redeliverable(&self, id: EventId) -> bool {
        self.external[id.index()] && !self.completion[id.index()]
    }

    /// Whether an action of the machine raises or sends the event.
    pub fn is_raised(&self, id: EventId) -> bool {
        self.raised[id.index()]
    }

    pub fn is_completion(&self, id: EventId) -> bool {
        self.completion[id.index()]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    fn add(&mut self, name: &str) -> EventId {
        if let Some(id) = self.index.get(name) {
            return *id;
        }
        let id = EventId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.external.push(false);
        self.completion.push(false);
        self.raised.push(false);
        self.index.insert(name.to_string(), id);
        id
    }
}

/// A node of the transition graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The state is active.
    At(StateId),
    /// The state is being entered.
    Enter(StateId),
    /// A sibling region of `region` leaves their parallel state: those
    /// before it in document order, or after it when `later` is set.
    Siblings { region: StateId, later: bool },
}

/// An edge of the transition graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edge {
    Up,
    Default,
    History,
    Transition(TransitionId),
    /// From a region to the hub of its siblings' leaving transitions, and
    /// from hub to hub.
    Sibling,
}

/// What a path step costs a witness: a delivered event or a timer is one
/// step, everything the machine does by itself is free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    Free,
    Event(EventId),
    After,
}

/// The graph views of one machine.
pub struct MachineGraph<'m> {
    pub machine: &'m Machine,
    pub events: EventTable,
    /// The state hierarchy, parent → child; node `i` is `StateId(i)`.
    pub hierarchy: DiGraph<StateId, ()>,
    /// The transition graph; `At(s)` is node `2s`, `Enter(s)` node `2s + 1`,
    /// the sibling hubs come after them.
    pub steps: DiGraph<Node, Edge>,
    /// Concrete events each transition's trigger matches (empty for `always`
    /// and `after`), in table order.
    trigger_events: Vec<Box<[EventId]>>,
    /// The event a witness writes for the transition.
    representative: Vec<Option<EventId>>,
    /// Descendants of `s` are the states `s + 1 .. subtree_end[s]`.
    subtree_end: Vec<u32>,
    /// Own event handlers of each state, sorted by event, document order
    /// within one event.
    own: Vec<Box<[(EventId, TransitionId)]>>,
    /// The targets the interpreter uses: an atomic self-target without
    /// `reenter` has none, because it runs without leaving the state.
    targets: Vec<Box<[StateId]>>,
    domains: Vec<Option<StateId>>,
    /// Whether the transition exits and re-enters the root itself.
    reenters_root: Vec<bool>,
    default_leaves: Vec<OnceCell<Box<[StateId]>>>,
}

impl<'m> MachineGraph<'m> {
    pub fn new(machine: &'m Machine) -> MachineGraph<'m> {
        let n = machine.states.len();
        let mut subtree_end: Vec<u32> = (1..=n as u32).collect();
        for id in (1..n).rev() {
            if let Some(parent) = machine.states[id].parent {
                subtree_end[parent.index()] = subtree_end[parent.index()].max(subtree_end[id]);
            }
        }

        let events = event_table(machine);
        let mut trigger_events = Vec::with_capacity(machine.transitions.len());
        let mut representative = Vec::with_capacity(machine.transitions.len());
        for t in &machine.transitions {
            match &t.trigger {
                Trigger::Event(descriptor) => {
                    let mut matched: Vec<EventId> = Vec::new();
                    for pattern in &descriptor.patterns {
                        match pattern {
                            EventPattern::Exact(name) => matched.extend(events.get(name)),
                            _ => matched.extend(
                                (0..events.len() as u32)
                                    .map(EventId)
                                    .filter(|e| pattern.matches(events.name(*e))),
                            ),
                        }
                    }
                    matched.sort_unstable();
                    matched.dedup();
                    let first_external = matched.iter().copied().find(|e| events.is_external(*e));
                    representative.push(first_external.or(matched.first().copied()));
                    trigger_events.push(matched.into_boxed_slice());
                }
                _ => {
                    representative.push(None);
                    trigger_events.push(Box::default());
                }
            }
        }

        let mut own: Vec<Vec<(EventId, TransitionId)>> = vec![Vec::new(); n];
        for state in machine.state_ids() {
            let list = &mut own[state.index()];
            for &t in &machine.state(state).on {
                list.extend(trigger_events[t.index()].iter().map(|&e| (e, t)));
            }
            // Stable: document order stays within one event.
            list.sort_by_key(|(e, _)| *e);
        }

        let targets: Vec<Box<[StateId]>> = machine
            .transitions
            .iter()
            .map(|t| {
                let targets: Vec<StateId> = t.targets.iter().map(|x| x.state).collect();
                // As the interpreter runs it (`Chart::compile`): an atomic
                // self-target without `reenter` stays where it is, a compound
                // or parallel one resets the state's children.
                if !t.reenter && targets == [t.source] && machine.state(t.source).is_atomic() {
                    Box::default()
                } else {
                    targets.into_boxed_slice()
                }
            })
            .collect();

        let mut graph = MachineGraph {
            machine,
            events,
            hierarchy: DiGraph::with_capacity(n, n),
            steps: DiGraph::with_capacity(2 * n, 2 * n + machine.transitions.len()),
            trigger_events,
            representative,
            subtree_end,
            own: own.into_iter().map(Vec::into_boxed_slice).collect(),
            targets,
            domains: Vec::new(),
            reenters_root: Vec::new(),
            default_leaves: (0..n).map(|_| OnceCell::new()).collect(),
        };
        (graph.domains, graph.reenters_root) = (0..machine.transitions.len() as u32)
            .map(|t| graph.compute_domain(TransitionId(t)))
            .unzip();
        graph.build_hierarchy();
        graph.build_steps();
        graph
    }

    fn build_hierarchy(&mut self) {
        for id in self.machine.state_ids() {
            self.hierarchy.add_node(id);
        }
        for id in self.machine.state_ids() {
            if let Some(parent) = self.machine.state(id).parent {
                self.hierarchy.add_edge(
                    NodeIndex::new(parent.index()),
                    NodeIndex::new(id.index()),
                    (),
                );
            }
        }
    }

    fn build_steps(&mut self) {
        let m = self.machine;
        for id in m.state_ids() {
            self.steps.add_node(Node::At(id));
            self.steps.add_node(Node::Enter(id));
        }
        for id in m.state_ids() {
            let state = m.state(id);
            if let StateKind::History(kind) = state.kind {
                let parent = state.parent.unwrap_or(StateId::ROOT);
                let defaults = self.history_default(id);
                for x in defaults {
                    self.add_entry_path(self.enter(id), x, parent, Edge::Default);
                }
                match kind {
                    HistoryKind::Shallow => {
                        for &c in &m.state(parent).children {
                            if !self.is_history(c) {
                                self.steps
                                    .add_edge(self.enter(id), self.enter(c), Edge::History);
                            }
                        }
                    }
                    HistoryKind::Deep => {
                        for l in self.subtree(parent) {
                            if l != parent && self.is_leaf(l) {
                                self.steps
                                    .add_edge(self.enter(id), self.at(l), Edge::History);
                            }
                        }
                    }
                }
                continue;
            }
            // A final child of the root ends the machine: nothing, not
            // even the root's own handlers and timers, follows it.
            let ends_machine = state.kind == StateKind::Final
                && state.parent == Some(StateId::ROOT)
                && m.state(StateId::ROOT).kind != StateKind::Parallel;
            if let Some(parent) = state.parent
                && !ends_machine
            {
                self.steps.add_edge(self.at(id), self.at(parent), Edge::Up);
            }
            if self.is_leaf(id) {
                self.steps
                    .add_edge(self.enter(id), self.at(id), Edge::Default);
            } else if state.kind == StateKind::Parallel {
                for &c in &state.children {
                    if !self.is_history(c) {
                        self.steps
                            .add_edge(self.enter(id), self.enter(c), Edge::Default);
                    }
                }
            } else {
                for x in self.initial(id) {
                    self.add_entry_path(self.enter(id), x, id, Edge::Default);
                }
            }
        }
        for index in 0..m.transitions.len() {
            let tid = TransitionId(index as u32);
            self.add_transition_edges(self.at(m.transition(tid).source), tid);
        }
        self.add_sibling_hubs();
    }

    /// The edges of `t` from `from`: to every target, and to the regions of
    /// the parallel states it enters without targeting them.
    fn add_transition_edges(&mut self, from: NodeIndex, tid: TransitionId) {
        let m = self.machine;
        let Some(domain) = self.domains[tid.index()] else {
            return;
        };
        let targets = self.targets[tid.index()].clone();
        for &x in targets.iter() {
            self.steps
                .add_edge(from, self.enter(x), Edge::Transition(tid));
        }
        // Parallel states between a target and the domain are entered
        // anew, so their other regions start at their defaults.
        let mut seen_parallel = Vec::new();
        for &x in targets.iter() {
            for a in m.ancestors(x) {
                if a == domain || !self.is_strict_descendant(a, domain) {
                    break;
                }
                if m.state(a).kind == StateKind::Parallel && !seen_parallel.contains(&a) {
                    seen_parallel.push(a);
                    for &r in &m.state(a).children {
                        let holds_target = targets.iter().any(|&y| self.contains(r, y));
                        if !holds_target && !self.is_history(r) {
                            self.steps
                                .add_edge(from, self.enter(r), Edge::Transition(tid));
                        }
                    }
                }
            }
        }
    }

    /// The hubs through which a region follows the transitions of its
    /// sibling regions that leave their parallel state. Regions are in
    /// document order; `Siblings { region, later: false }` holds the
    /// leaving transitions of the regions before `region` and leads to the
    /// hub of the region before it, `later: true` those after it. A region
    /// reaches both of its hubs, so every region reaches the transitions of
    /// all the others and none of its own, with O(regions + transitions)
    /// nodes and edges per parallel state where direct edges would need
    /// regions × transitions.
    fn add_sibling_hubs(&mut self) {
        // Every search comes before the first hub, so that the buffers keep
        // their size and each search costs what it visits.
        let mut scratch = Scratch::default();
        let mut parallels: Vec<(Vec<StateId>, Vec<Vec<TransitionId>>)> = self
            .machine
            .state_ids()
            .filter(|&p| self.machine.state(p).kind == StateKind::Parallel)
            .map(|p| {
                let regions: Vec<StateId> = self.machine.substates(p).collect();
                let leaving = regions
                    .iter()
                    .map(|&r| self.leaving_transitions(&mut scratch, p, r))
                    .collect();
                (regions, leaving)
            })
            .collect();
        if parallels
            .iter()
            .all(|(_, leaving)| leaving.iter().all(Vec::is_empty))
        {
            return;
        }
        // A sibling takes `t` only in a run that reaches `t`'s source. Such a
        // run reaches `t`'s targets by `t`'s own edges, so the hubs add ways
        // to the states a run reaches, never new states. History is left
        // out as the lints' search from the start leaves it out: it restores
        // only what was reached without it.
        self.settle(
            &mut scratch,
            &[self.enter(StateId::ROOT)],
            |_, e| e != Edge::History,
            |_| false,
            usize::MAX,
        );
        for (_, leaving) in &mut parallels {
            for list in leaving {
                list.retain(|&t| {
                    scratch.dist[self.at(self.machine.transition(t).source).index()] != u32::MAX
                });
            }
        }
        for (regions, leaving) in parallels {
            if leaving.iter().all(Vec::is_empty) {
                continue;
            }
            for later in [false, true] {
                let mut order: Vec<usize> = (0..regions.len()).collect();
                if later {
                    order.reverse();
                }
                let mut previous: Option<NodeIndex> = None;
                for pair in order.windows(2) {
                    let (behind, region) = (pair[0], regions[pair[1]]);
                    if previous.is_none() && leaving[behind].is_empty() {
                        continue;
                    }
                    let hub = self.steps.add_node(Node::Siblings { region, later });
                    if let Some(previous) = previous {
                        self.steps.add_edge(hub, previous, Edge::Sibling);
                    }
                    for &t in &leaving[behind] {
                        self.add_transition_edges(hub, t);
                    }
                    self.steps.add_edge(self.at(region), hub, Edge::Sibling);
                    previous = Some(hub);
                }
            }
        }
    }

    /// The transitions of region `r` that leave its parallel state `p`, from
    /// a source that the region's own moves reach from its default entry:
    /// what the other regions may see it take. One search per region keeps
    /// this linear in the region's size.
    fn leaving_transitions(
        &self,
        scratch: &mut Scratch,
        p: StateId,
        r: StateId,
    ) -> Vec<TransitionId> {
        self.settle(
            scratch,
            &[self.enter(r)],
            self.within(r),
            |_| false,
            usize::MAX,
        );
        self.subtree(r)
            .filter(|&s| scratch.dist[self.at(s).index()] != u32::MAX)
            .flat_map(|s| {
                let state = self.machine.state(s);
                state
                    .on
                    .iter()
                    .chain(&state.always)
                    .chain(&state.after)
                    .copied()
            })
            .filter(|t| self.domains[t.index()].is_some_and(|d| self.is_strict_descendant(p, d)))
            .collect()
    }

    /// The shortest path that takes `region`, from its default entry and by
    /// its own moves (no history, no sibling hubs), to `t`'s source.
    pub fn drive(
        &self,
        scratch: &mut Scratch,
        region: StateId,
        t: TransitionId,
    ) -> Option<Vec<EdgeIndex>> {
        let source = self.at(self.machine.transition(t).source);
        let (_, path) = self.find(
            scratch,
            &[self.enter(region)],
            self.within(region),
            |n| n == source,
            usize::MAX,
        )?;
        Some(path)
    }

    /// The edges a region moves by on its own: those between its states,
    /// but history and sibling hubs.
    fn within(&self, region: StateId) -> impl Fn(EdgeIndex, Edge) -> bool + '_ {
        let inside = move |n: NodeIndex| match self.steps[n] {
            Node::At(s) | Node::Enter(s) => self.contains(region, s),
            Node::Siblings { .. } => false,
        };
        move |e, weight| {
            weight != Edge::History
                && self
                    .steps
                    .edge_endpoints(e)
                    .is_some_and(|(a, b)| inside(a) && inside(b))
        }
    }

    /// For an edge of `t` out of a sibling hub, the region of the hub's
    /// parallel state that holds `t`'s source, which a witness drives there
    /// first; `None` for every other edge.
    pub fn sibling_region(&self, from: NodeIndex, t: TransitionId) -> Option<StateId> {
        let Node::Siblings { region, .. } = self.steps[from] else {
            return None;
        };
        let source = self.machine.transition(t).source;
        std::iter::once(source)
            .chain(self.machine.ancestors(source))
            .find(|&a| self.machine.state(a).parent == self.machine.state(region).parent)
    }

    /// Edges for entering `x` from `from` below `top`: to `x`, and to the
    /// other regions of the parallel states between them.
    fn add_entry_path(&mut self, from: NodeIndex, x: StateId, top: StateId, kind: Edge) {
        self.steps.add_edge(from, self.enter(x), kind);
        let m = self.machine;
        for a in m.ancestors(x) {
            if a == top || !self.is_strict_descendant(a, top) {
                break;
            }
            if m.state(a).kind == StateKind::Parallel {
                for &r in &m.state(a).children {
                    if !self.contains(r, x) && !self.is_history(r) {
                        self.steps.add_edge(from, self.enter(r), kind);
                    }
                }
            }
        }
    }

    /// The default entry of a compound state: its `initial`, else its first
    /// child, as the interpreter does.
    pub fn initial(&self, id: StateId) -> Vec<StateId> {
        let state = self.machine.state(id);
        if state.initial.is_empty() {
            state
                .children
                .iter()
                .copied()
                .find(|&c| !self.is_history(c))
                .into_iter()
                .collect()
        } else {
            state.initial.iter().map(|t| t.state).collect()
        }
    }

    /// What a history state enters when nothing was recorded yet: its own
    /// default, else its parent's default entry.
    pub fn history_default(&self, id: StateId) -> Vec<StateId> {
        let state = self.machine.state(id);
        if state.initial.is_empty() {
            let parent = state.parent.unwrap_or(StateId::ROOT);
            self.initial(parent)
        } else {
            state.initial.iter().map(|t| t.state).collect()
        }
    }

    pub fn at(&self, id: StateId) -> NodeIndex {
        NodeIndex::new(2 * id.index())
    }

    pub fn enter(&self, id: StateId) -> NodeIndex {
        NodeIndex::new(2 * id.index() + 1)
    }

    pub fn node(&self, index: NodeIndex) -> Node {
        self.steps[index]
    }

    /// The state a node is about; for a sibling hub, its region.
    pub fn node_state(&self, index: NodeIndex) -> StateId {
        match self.steps[index] {
            Node::At(s) | Node::Enter(s) | Node::Siblings { region: s, .. } => s,
        }
    }

    /// States in the subtree of `id`, itself first, in document order.
    pub fn subtree(&self, id: StateId) -> impl Iterator<Item = StateId> + use<> {
        (id.0..self.subtree_end[id.index()]).map(StateId)
    }

    /// The indices of the states in the subtree of `id`, itself first.
    pub fn subtree_indices(&self, id: StateId) -> std::ops::Range<usize> {
        id.index()..self.subtree_end[id.index()] as usize
    }

    /// Whether `a` is `b` or inside it.
    pub fn contains(&self, b: StateId, a: StateId) -> bool {
        b.0 <= a.0 && a.0 < self.subtree_end[b.index()]
    }

    /// Whether `a` lies strictly inside `b`.
    pub fn is_strict_descendant(&self, a: StateId, b: StateId) -> bool {
        b.0 < a.0 && a.0 < self.subtree_end[b.index()]
    }

    pub fn is_history(&self, id: StateId) -> bool {
        matches!(self.machine.state(id).kind, StateKind::History(_))
    }

    /// A state with no child that can be active: the states a configuration
    /// is made of.
    pub fn is_leaf(&self, id: StateId) -> bool {
        !self.is_history(id)
            && self
                .machine
                .state(id)
                .children
                .iter()
                .all(|&c| self.is_history(c))
    }

    /// Whether some ancestor of `id` is a parallel state.
    pub fn in_parallel(&self, id: StateId) -> bool {
        self.machine
            .ancestors(id)
            .any(|a| self.machine.state(a).kind == StateKind::Parallel)
    }

    /// The concrete events a transition's trigger matches.
    pub fn trigger_events(&self, t: TransitionId) -> &[EventId] {
        &self.trigger_events[t.index()]
    }

    /// The targets the transition enters; empty for a targetless one and for
    /// an atomic state's self-target without `reenter`.
    pub fn targets(&self, t: TransitionId) -> &[StateId] {
        &self.targets[t.index()]
    }

    /// The state below which the transition exits and enters (the SCXML
    /// transition domain, with XState's `reenter`); `None` when it exits
    /// nothing.
    pub fn domain(&self, t: TransitionId) -> Option<StateId> {
        self.domains[t.index()]
    }

    /// Whether the transition exits the root and enters it again, running
    /// its exit and entry actions, as the interpreter does where no
    /// compound ancestor of the source holds every target: a `reenter`
    /// handler of the root, or, under `scxml`, a transition between the
    /// regions of a parallel root. Its `domain` is then the root.
    pub fn reenters_root(&self, t: TransitionId) -> bool {
        self.reenters_root[t.index()]
    }

    /// The transition's targets with each history state replaced by its
    /// default (or its parent, without one).
    fn resolved_targets(&self, t: TransitionId) -> Vec<StateId> {
        let m = self.machine;
        let mut targets = Vec::new();
        for &x in self.targets[t.index()].iter() {
            if self.is_history(x) {
                targets.extend(self.history_default(x));
                if targets.is_empty() {
                    targets.push(m.state(x).parent.unwrap_or(StateId::ROOT));
                }
            } else {
                targets.push(x);
            }
        }
        targets
    }

    /// The transition's domain, and whether the interpreter exits and
    /// re-enters the root itself for it (`Chart::domain_of`'s
    /// `OUTSIDE_ROOT`): no compound ancestor of the source holds every
    /// target, so the graph takes the root as the domain.
    fn compute_domain(&self, t: TransitionId) -> (Option<StateId>, bool) {
        let m = self.machine;
        let transition = m.transition(t);
        if self.targets[t.index()].is_empty() {
            return (None, false);
        }
        let targets = self.resolved_targets(t);
        let source = transition.source;
        // Without `reenter` a compound or parallel source whose targets lie
        // inside it is kept, as the interpreter does (`Chart::domain_of`);
        // under XState's rules the domain is the least common ancestor of
        // any kind.
        let xstate = m.semantics == Semantics::Xstate;
        if !transition.reenter
            && matches!(
                m.state(source).kind,
                StateKind::Compound | StateKind::Parallel
            )
            && targets
                .iter()
                .all(|&x| x == source || self.is_strict_descendant(x, source))
        {
            return (Some(source), false);
        }
        for anc in m.ancestors(source) {
            let compound = m.state(anc).kind == StateKind::Compound
                || (xstate && m.state(anc).kind == StateKind::Parallel);
            if (compound || anc == StateId::ROOT)
                && targets.iter().all(|&x| self.is_strict_descendant(x, anc))
            {
                return (Some(anc), !compound);
            }
        }
        // A target is the root: XState keeps it unless the transition
        // re-enters (`Chart::domain_of`).
        (Some(StateId::ROOT), !xstate || transition.reenter)
    }

    /// The handlers of `event` for a configuration containing `leaf`, in the
    /// order the interpreter tries them: the leaf's own in document order,
    /// then each ancestor's.
    pub fn handlers(
        &self,
        leaf: StateId,
        event: EventId,
    ) -> impl Iterator<Item = TransitionId> + '_ {
        std::iter::once(leaf)
            .chain(self.machine.ancestors(leaf))
            .flat_map(move |s| self.own_handlers(s, event))
    }

    /// The state's own transitions on `event`, in document order.
    pub fn own_handlers(
        &self,
        state: StateId,
        event: EventId,
    ) -> impl Iterator<Item = TransitionId> + '_ {
        let list = &self.own[state.index()];
        let start = list.partition_point(|(e, _)| *e < event);
        list[start..]
            .iter()
            .take_while(move |(e, _)| *e == event)
            .map(|(_, t)| *t)
    }

    /// The handlers tried after `t` for `event` when `t`'s guard fails: the
    /// rest of its state's own, then the ancestors'.
    pub fn handlers_after(
        &self,
        t: TransitionId,
        event: EventId,
    ) -> impl Iterator<Item = TransitionId> + '_ {
        let source = self.machine.transition(t).source;
        self.own_handlers(source, event)
            .skip_while(move |&h| h != t)
            .skip(1)
            .chain(
                self.machine
                    .ancestors(source)
                    .flat_map(move |s| self.own_handlers(s, event)),
            )
    }

    /// The leaves active after default entry of `id` (for a history state,
    /// when it has recorded nothing).
    pub fn default_leaves(&self, id: StateId) -> &[StateId] {
        self.default_leaves[id.index()].get_or_init(|| {
            let mut leaves = Vec::new();
            self.collect_entry(self.enter(id), false, &mut leaves, &mut Vec::new());
            leaves.sort_unstable();
            leaves.dedup();
            leaves.into_boxed_slice()
        })
    }

    /// The leaves a history state may restore, besides its default.
    pub fn restorable_leaves(&self, id: StateId) -> Vec<StateId> {
        let mut leaves = Vec::new();
        self.collect_entry(self.enter(id), true, &mut leaves, &mut Vec::new());
        leaves.sort_unstable();
        leaves.dedup();
        leaves
    }

    /// The states entered by default entry of `id`, itself included.
    pub fn default_entered(&self, id: StateId) -> Vec<StateId> {
        let mut entered = Vec::new();
        self.collect_entry(self.enter(id), false, &mut Vec::new(), &mut entered);
        entered.sort_unstable();
        entered.dedup();
        entered
    }

    fn collect_entry(
        &self,
        from: NodeIndex,
        history: bool,
        leaves: &mut Vec<StateId>,
        entered: &mut Vec<StateId>,
    ) {
        // Entry edges lead down the hierarchy only, so this walk ends; a
        // state reached twice is removed by the callers' dedup.
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            match self.steps[node] {
                Node::At(s) => {
                    leaves.push(s);
                    continue;
                }
                Node::Enter(s) => {
                    if !self.is_history(s) {
                        entered.push(s);
                    }
                }
                Node::Siblings { .. } => continue,
            }
            for e in self.steps.edges(node) {
                let follow = match e.weight() {
                    Edge::Default => true,
                    Edge::History => history,
                    _ => false,
                };
                if follow {
                    stack.push(e.target());
                }
            }
        }
    }

    /// The leaves active after the transition, as far as it decides them:
    /// the default entry of its targets (and of the regions it enters),
    /// with what history may restore when `history` is set. Empty for a
    /// transition that exits nothing.
    pub fn leaves_after(&self, t: TransitionId, history: bool) -> Vec<StateId> {
        let mut leaves = Vec::new();
        for e in self.steps.edges(self.at(self.machine.transition(t).source)) {
            if *e.weight() != Edge::Transition(t) {
                continue;
            }
            let Node::Enter(x) = self.steps[e.target()] else {
                continue;
            };
            if self.is_history(x) {
                if history {
                    leaves.extend(self.restorable_leaves(x));
                } else {
                    let mut own = Vec::new();
                    for d in self.history_default(x) {
                        own.extend_from_slice(self.default_leaves(d));
                    }
                    leaves.extend(own);
                }
            } else {
                leaves.extend_from_slice(self.default_leaves(x));
            }
        }
        leaves.sort_unstable();
        leaves.dedup();
        leaves
    }

    /// What taking an edge costs a witness.
    pub fn cost(&self, edge: Edge) -> Cost {
        let Edge::Transition(t) = edge else {
            return Cost::Free;
        };
        match &self.machine.transition(t).trigger {
            Trigger::Always => Cost::Free,
            Trigger::After(_) => Cost::After,
            Trigger::Event(_) => match self.representative[t.index()] {
                Some(e) if self.events.is_external(e) => Cost::Event(e),
                _ => Cost::Free,
            },
        }
    }

    /// Whether the transition is a timer that fires at most once per entry
    /// of its source: an `after` that does not exit the state it belongs
    /// to (the root's deadline leading to `.vencido`), so that a path in
    /// the graph, which could take it from every descendant again, may take
    /// it once between two entries of the source. Searches after a first
    /// delivery leave out the ones their prefix took.
    pub fn fires_once(&self, t: TransitionId) -> bool {
        let transition = self.machine.transition(t);
        matches!(transition.trigger, Trigger::After(_))
            && self.domains[t.index()].is_none_or(|d| self.contains(transition.source, d))
    }

    /// The event a witness writes for a transition.
    pub fn representative(&self, t: TransitionId) -> Option<EventId> {
        self.representative[t.index()]
    }

    /// Strongly connected components of the transition graph, as one
    /// component number per node. Kosaraju's algorithm, which petgraph runs
    /// without recursion (its `tarjan_scc` overflows the stack on long chains).
    pub fn components(&self) -> Vec<u32> {
        components(&self.steps)
    }

    /// Components of the transition graph restricted to the machine's own
    /// moves: structure edges and the transitions `own` accepts (`always`
    /// ones, those on events the machine raises).
    pub fn own_move_components(&self, own: impl Fn(TransitionId) -> bool) -> Vec<u32> {
        let filtered = petgraph::visit::EdgeFiltered::from_fn(&self.steps, |e| match e.weight() {
            Edge::Transition(t) => own(*t),
            // A sibling region may not be where its `always` transition
            // leaves, so a cycle through a hub is no proof of a loop.
            Edge::History | Edge::Sibling => false,
            _ => true,
        });
        let mut component = vec![u32::MAX; self.steps.node_count()];
        for (i, scc) in petgraph::algo::kosaraju_scc(&filtered).iter().enumerate() {
            for n in scc {
                component[n.index()] = i as u32;
            }
        }
        component
    }

    /// A 0-1 breadth-first search over the transition graph from `sources`
    /// (distance 0), along the edges `follow` accepts. Stops early once a
    /// node `stop` accepts is settled, or once `limit` nodes are settled.
    pub fn search(
        &self,
        sources: &[NodeIndex],
        follow: impl Fn(EdgeIndex, Edge) -> bool,
        stop: impl Fn(NodeIndex) -> bool,
        limit: usize,
    ) -> Search {
        let mut scratch = Scratch::default();
        let found = self.settle(&mut scratch, sources, follow, stop, limit);
        Search {
            dist: scratch.dist,
            pred: scratch.pred,
            found,
        }
    }
}

/// Buffers for bounded searches, reused from one to the next so that a
/// search costs what it visits, not the size of the graph.
#[derive(Default)]
pub struct Scratch {
    dist: Vec<u32>,
    pred: Vec<Option<EdgeIndex>>,
    done: Vec<bool>,
    touched: Vec<usize>,
}

impl Scratch {
    fn reset(&mut self, n: usize) {
        if self.dist.len() != n {
            self.dist = vec![u32::MAX; n];
            self.pred = vec![None; n];
            self.done = vec![false; n];
        } else {
            for &i in &self.touched {
                self.dist[i] = u32::MAX;
                self.pred[i] = None;
                self.done[i] = false;
            }
        }
        self.touched.clear();
    }
}

impl MachineGraph<'_> {
    /// The 0-1 breadth-first search behind `search` and `find`: distances
    /// and predecessors in `scratch`, and the node `stop` accepted, if any.
    fn settle(
        &self,
        scratch: &mut Scratch,
        sources: &[NodeIndex],
        follow: impl Fn(EdgeIndex, Edge) -> bool,
        stop: impl Fn(NodeIndex) -> bool,
        limit: usize,
    ) -> Option<NodeIndex> {
        scratch.reset(self.steps.node_count());
        let mut queue = VecDeque::new();
        for &s in sources {
            if scratch.dist[s.index()] != 0 {
                scratch.dist[s.index()] = 0;
                scratch.touched.push(s.index());
                queue.push_back(s);
            }
        }
        let mut settled = 0;
        let mut found = None;
        while let Some(node) = queue.pop_front() {
            if scratch.done[node.index()] {
                continue;
            }
            scratch.done[node.index()] = true;
            settled += 1;
            if settled > limit {
                break;
            }
            if stop(node) {
                found = Some(node);
                break;
            }
            let d = scratch.dist[node.index()];
            for e in self.steps.edges(node) {
                let weight = *e.weight();
                if !follow(e.id(), weight) {
                    continue;
                }
                let free = self.cost(weight) == Cost::Free;
                let next = d + u32::from(!free);
                let target = e.target();
                if next < scratch.dist[target.index()] {
                    if scratch.dist[target.index()] == u32::MAX {
                        scratch.touched.push(target.index());
                    }
                    scratch.dist[target.index()] = next;
                    scratch.pred[target.index()] = Some(e.id());
                    if free {
                        queue.push_front(target);
                    } else {
                        queue.push_back(target);
                    }
                }
            }
        }
        found
    }

    /// `search`, stopping at the first node `stop` accepts and returning it
    /// with the edges that lead to it from a source; over reused buffers.
    pub fn find(
        &self,
        scratch: &mut Scratch,
        sources: &[NodeIndex],
        follow: impl Fn(EdgeIndex, Edge) -> bool,
        stop: impl Fn(NodeIndex) -> bool,
        limit: usize,
    ) -> Option<(NodeIndex, Vec<EdgeIndex>)> {
        let found = self.settle(scratch, sources, follow, stop, limit)?;
        Some((found, path_to(&self.steps, &scratch.pred, found).1))
    }
}

/// The result of `MachineGraph::search`.
#[derive(Clone, Debug)]
pub struct Search {
    /// Steps (events and timers) to each node; `u32::MAX` when unreached.
    pub dist: Vec<u32>,
    /// The edge each reached node was reached by.
    pub pred: Vec<Option<EdgeIndex>>,
    /// The node the search stopped at, if it stopped early.
    pub found: Option<NodeIndex>,
}

impl Search {
    pub fn reached(&self, node: NodeIndex) -> bool {
        self.dist[node.index()] != u32::MAX
    }

    /// The edges from a source to `node`, in order.
    pub fn path(&self, graph: &DiGraph<Node, Edge>, node: NodeIndex) -> Vec<EdgeIndex> {
        path_to(graph, &self.pred, node).1
    }
}

/// The source a search reached `node` from, and the edges from there to
/// `node` in order, following `pred` (the edge each node was reached by)
/// back. Stops after as many edges as the graph has, should `pred` hold a
/// cycle.
pub fn path_to(
    graph: &DiGraph<Node, Edge>,
    pred: &[Option<EdgeIndex>],
    node: NodeIndex,
) -> (NodeIndex, Vec<EdgeIndex>) {
    let mut path = Vec::new();
    let mut at = node;
    while let Some(e) = pred[at.index()] {
        let Some((from, _)) = graph.edge_endpoints(e) else {
            break;
        };
        path.push(e);
        at = from;
        if path.len() > graph.edge_count() {
            break;
        }
    }
    path.reverse();
    (at, path)
}

/// One component number per node, by Kosaraju's algorithm.
pub fn components(graph: &DiGraph<Node, Edge>) -> Vec<u32> {
    let mut component = vec![u32::MAX; graph.node_count()];
    for (i, scc) in petgraph::algo::kosaraju_scc(graph).iter().enumerate() {
        for n in scc {
            component[n.index()] = i as u32;
        }
    }
    component
}

/// Whether events of this name, or a family of this prefix, are the
/// machine's own: the interpreter raises `done.*` and `error.*` itself,
/// and XState's `xstate.*` are its runtime's.
fn is_own_family(name: &str) -> bool {
    ["done", "error", "xstate"]
        .iter()
        .any(|own| EventPattern::Prefix(own.to_string()).matches(name))
}

/// Whether a pattern may match an event that no one names: one the
/// interpreter raises itself (`done.state.ID`, `error.execution`), which
/// a run takes without a delivery. `*` matches them all; a prefix only
/// within their families.
pub fn may_match_own(pattern: &EventPattern) -> bool {
    match pattern {
        EventPattern::Exact(_) => false,
        EventPattern::Prefix(name) => is_own_family(name),
        EventPattern::Any => true,
    }
}

fn event_table(machine: &Machine) -> EventTable {
    let mut table = EventTable::default();
    for name in machine.events.keys() {
        let id = table.add(name);
        table.external[id.index()] = true;
    }
    for action in machine.actions() {
        if let Action::Raise { event, .. } | Action::Send { event, .. } = action {
            let id = table.add(&event.text);
            table.raised[id.index()] = true;
        }
    }
    let mut handled = Vec::new();
    let mut families = Vec::new();
    for t in &machine.transitions {
        if let Trigger::Event(descriptor) = &t.trigger {
            for pattern in &descriptor.patterns {
                match pattern {
                    EventPattern::Exact(name) => handled.push(table.add(name)),
                    EventPattern::Prefix(name) => families.push(name),
                    EventPattern::Any => {}
                }
            }
        }
    }
    // A descriptor `E.*` (SCXML's `E`) takes a delivery of `E` itself, as
    // well as the `E.x` the machine names: `E` is an event of its own,
    // unless the machine's own events make up the family (`done.*`,
    // `error.*`) or the author declares which events of the family come
    // from outside (`pago.recibido`, `pago.devuelto` for `pago.*`).
    for name in families {
        let family = EventPattern::Prefix(name.clone());
        let declared = machine.events.keys().any(|e| family.matches(e));
        if !declared && !is_own_family(name) {
            handled.push(table.add(name));
        }
    }
    for id in handled {
        let name = table.name(id);
        let own =
            table.raised[id.index()] || name.starts_with("done.") || name.starts_with("error.");
        if !own {
            table.external[id.index()] = true;
        }
    }
    for state in &machine.states {
        for invocation in &state.invoke {
            for completion in [Completion::Done, Completion::Error] {
                let id = table.add(&invocation.event(completion));
                table.external[id.index()] = true;
                table.completion[id.index()] = true;
            }
        }
    }
    // Under XState's semantics, the completion of an actor no state invokes
    // (one an action spawns, `spawn(logic, 'id')`, which the XState reader
    // declares as an event from outside) comes from XState as an
    // invocation's does: once per actor, never redelivered.
    if machine.semantics == Semantics::Xstate {
        for name in machine.events.keys() {
            if Completion::of_event(name).is_some()
                && let Some(id) = table.get(name)
            {
                table.completion[id.index()] = true;
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{Syntax, parse};

    fn machine(text: &str) -> Machine {
        parse(text, Syntax::Dsl).expect("loads")
    }

    fn state(m: &Machine, path: &str) -> StateId {
        m.find_path(path).expect(path)
    }

    const NESTED: &str = r#"
machine nested
event E id e
event F id f
initial p
state p {
  initial a
  on E -> q
  on F { log "p" }
  state a {
    on E -> b
    on E -> c
  }
  state b
  state c {
    on F -> a reenter
  }
}
parallel q {
  state left {
    initial l1
    state l1 { on E -> l2 }
    state l2
  }
  state right {
    initial r1
    state r1
  }
  always -> p if in_state("q.left.l2")
}
"#;

    /// A descriptor `E.*` (SCXML's `E`) takes a delivery of `E` itself: `E`
    /// is an event of the table from outside, and of the transition, beside
    /// the `E.x` the machine names. Not so where the author declares which
    /// events of the family come from outside, nor for the families the
    /// interpreter raises itself, and `*` stays a wildcard over the named.
    #[test]
    fn a_prefix_descriptor_takes_its_own_name() {
        let yaml = |text: &str| parse(text, Syntax::Yaml).expect("loads");
        let m = yaml(
            "machine: m\ninitial: a\nstates:\n  a:\n    entry: [{ raise: match.partial }]\n    \
             on:\n      match.*: b\n      error.*: b\n      '*': a\n  b: {}\n",
        );
        let g = MachineGraph::new(&m);
        let names: Vec<&str> = (0..g.events.len() as u32)
            .map(|e| g.events.name(EventId(e)))
            .collect();
        assert_eq!(names, ["match.partial", "match"]);
        let matched = g.events.get("match").expect("match");
        assert!(g.events.is_redeliverable(matched));
        assert!(
            !g.events
                .is_external(g.events.get("match.partial").expect("raised"))
        );
        let on = &m.state(state(&m, "a")).on;
        let trigger = |i: usize| -> Vec<&str> {
            g.trigger_events(on[i])
                .iter()
                .map(|&e| g.events.name(e))
                .collect()
        };
        assert_eq!(trigger(0), ["match.partial", "match"]);
        assert_eq!(g.representative(on[0]), Some(matched));
        assert!(trigger(1).is_empty(), "the interpreter's own errors");
        assert_eq!(
            trigger(2),
            ["match.partial", "match"],
            "`*` matches what is named"
        );

        let declared = yaml(
            "machine: m\nevents:\n  pago.recibido: { id: pagoId }\ninitial: a\nstates:\n  \
             a: { on: { pago.*: b } }\n  b: {}\n",
        );
        let g = MachineGraph::new(&declared);
        assert_eq!(g.events.get("pago"), None, "the family is declared");
        assert!(g.events.get("pago.recibido").is_some());
    }

    #[test]
    fn handlers_come_own_first_in_document_order_then_ancestors() {
        let m = machine(NESTED);
        let g = MachineGraph::new(&m);
        let e = g.events.get("E").expect("E");
        let a = state(&m, "p.a");
        let chain: Vec<StateId> = g
            .handlers(a, e)
            .map(|t| m.transition(t).targets[0].state)
            .collect();
        assert_eq!(
            chain,
            [state(&m, "p.b"), state(&m, "p.c"), state(&m, "q")],
            "a's two handlers, then p's"
        );
        let b = state(&m, "p.b");
        assert_eq!(g.handlers(b, e).count(), 1, "only p's");
        let first = g.handlers(a, e).next().expect("a handler");
        assert_eq!(g.handlers_after(first, e).count(), 2);
    }

    #[test]
    fn default_entry_enters_every_region_and_reaches_the_leaves() {
        let m = machine(NESTED);
        let g = MachineGraph::new(&m);
        assert_eq!(
            g.default_leaves(state(&m, "q")),
            [state(&m, "q.left.l1"), state(&m, "q.right.r1")]
        );
        assert_eq!(g.default_leaves(StateId::ROOT), [state(&m, "p.a")]);
        assert!(g.is_leaf(state(&m, "p.b")) && !g.is_leaf(state(&m, "q")));
        assert!(g.in_parallel(state(&m, "q.right.r1")) && !g.in_parallel(state(&m, "p.a")));
    }

    #[test]
    fn domains_follow_scxml_and_reenter() {
        let m = machine(
            r#"
machine d
event E id e
event R id r
initial p
state p {
  initial a
  on E -> p.b
  on R -> p
  state a {
    on E -> a
    on E -> a reenter
    on E -> b
  }
  state b
}
"#,
        );
        let g = MachineGraph::new(&m);
        let a = state(&m, "p.a");
        let p = state(&m, "p");
        let on_a = &m.state(a).on;
        assert_eq!(
            g.domain(on_a[0]),
            None,
            "a self-target without reenter exits nothing"
        );
        assert!(g.targets(on_a[0]).is_empty());
        assert_eq!(g.domain(on_a[1]), Some(p), "with reenter it leaves a");
        assert_eq!(g.domain(on_a[2]), Some(p));
        assert_eq!(
            g.domain(m.state(p).on[0]),
            Some(p),
            "into its own child: p stays"
        );
        assert_eq!(
            (g.domain(m.state(p).on[1]), g.targets(m.state(p).on[1])),
            (Some(p), &[p][..]),
            "a compound self-target without reenter resets its children: p stays"
        );
    }

    #[test]
    fn a_parallel_source_into_its_region_stays() {
        let m = machine(
            r#"
machine d
event E id e
event F id f
initial p
parallel p {
  on E -> p.x
  on F -> p.x reenter
  state x
  state y
}
"#,
        );
        let g = MachineGraph::new(&m);
        let p = state(&m, "p");
        let on_p = &m.state(p).on;
        assert_eq!(g.domain(on_p[0]), Some(p), "without reenter p stays");
        assert_eq!(
            g.domain(on_p[1]),
            Some(StateId::ROOT),
            "with reenter p is left"
        );
    }

    #[test]
    fn under_xstate_a_parallel_ancestor_is_the_domain() {
        let text = "machine d\nsemantics SEM\nevent E id e\ninitial p\n\
                    parallel p {\n  state x { on E -> y }\n  state y\n}\n";
        let scxml = machine(&text.replace("SEM", "scxml"));
        let xstate = machine(&text.replace("SEM", "xstate"));
        let p = state(&xstate, "p");
        let on_x = |m: &Machine| m.state(state(m, "p.x")).on[0];
        assert_eq!(MachineGraph::new(&xstate).domain(on_x(&xstate)), Some(p));
        assert_eq!(
            MachineGraph::new(&scxml).domain(on_x(&scxml)),
            Some(StateId::ROOT)
        );
    }

    /// Where the interpreter exits the root itself: a `reenter` handler of
    /// the root, and under `scxml` a transition between the regions of a
    /// parallel root; not a root handler into a child without `reenter`.
    #[test]
    fn some_transitions_reenter_the_root() {
        let text = "parallel machine d\nsemantics SEM\nevent E id e\nevent R id r\n\
                    event K id k\non R -> .x reenter\non K -> .x\n\
                    state x { on E -> y }\nstate y\n";
        for (semantics, between_regions) in [("scxml", true), ("xstate", false)] {
            let m = machine(&text.replace("SEM", semantics));
            let g = MachineGraph::new(&m);
            let on_x = m.state(state(&m, "x")).on[0];
            let (on_r, on_k) = (m.root().on[0], m.root().on[1]);
            assert_eq!(g.reenters_root(on_x), between_regions, "{semantics}");
            assert!(g.reenters_root(on_r), "{semantics}");
            assert!(!g.reenters_root(on_k), "{semantics}");
        }
    }

    #[test]
    fn the_transition_graph_has_up_default_and_transition_edges() {
        let m = machine(NESTED);
        let g = MachineGraph::new(&m);
        let a = state(&m, "p.a");
        let has = |from: NodeIndex, to: NodeIndex, kind: Edge| {
            g.steps
                .edges(from)
                .any(|e| e.target() == to && *e.weight() == kind)
        };
        assert!(has(g.at(a), g.at(state(&m, "p")), Edge::Up));
        assert!(has(
            g.enter(state(&m, "q")),
            g.enter(state(&m, "q.right")),
            Edge::Default
        ));
        let to_b = m.state(a).on[0];
        assert!(has(
            g.at(a),
            g.enter(state(&m, "p.b")),
            Edge::Transition(to_b)
        ));
        let e = g.events.get("E").expect("E");
        assert_eq!(g.cost(Edge::Transition(to_b)), Cost::Event(e));
        assert_eq!(g.cost(Edge::Up), Cost::Free);
        assert_eq!(g.hierarchy.edge_count(), m.states.len() - 1);
    }

    const SHOP: &str = r#"
machine shop
event RECHAZO id r
event FALLO id f
event PAGAR id p
event ENVIAR id e
initial pedido
parallel pedido {
  state pago {
    initial pendiente
    state pendiente {
      on RECHAZO -> fallido
      on PAGAR -> pagado
    }
    state fallido { on FALLO -> #cancelado }
    state pagado { on PAGAR -> pendiente }
    state huerfano { on FALLO -> #cancelado }
  }
  state envio {
    initial preparando
    state preparando { on ENVIAR -> enviado }
    state enviado
  }
}
state cancelado #cancelado
"#;

    #[test]
    fn a_region_leaves_by_a_sibling_regions_transition() {
        let m = machine(SHOP);
        let g = MachineGraph::new(&m);
        let fallo = m.state(state(&m, "pedido.pago.fallido")).on[0];
        let search = g.search(
            &[g.at(state(&m, "pedido.envio.enviado"))],
            |_, e| e != Edge::History,
            |_| false,
            usize::MAX,
        );
        let cancelado = g.enter(state(&m, "cancelado"));
        assert!(search.reached(cancelado), "through pago's FALLO");
        let path = search.path(&g.steps, cancelado);
        let last = *path.last().expect("a path");
        assert_eq!(g.steps[last], Edge::Transition(fallo));
        let (hub, _) = g.steps.edge_endpoints(last).expect("an edge");
        assert_eq!(
            g.sibling_region(hub, fallo),
            Some(state(&m, "pedido.pago")),
            "the witness drives pago first"
        );
        let drive = g
            .drive(&mut Scratch::default(), state(&m, "pedido.pago"), fallo)
            .expect("pago reaches fallido");
        let delivered: Vec<Cost> = drive
            .iter()
            .map(|&e| g.cost(g.steps[e]))
            .filter(|&c| c != Cost::Free)
            .collect();
        assert_eq!(
            delivered,
            [Cost::Event(g.events.get("RECHAZO").expect("RECHAZO"))]
        );
    }

    #[test]
    fn only_transitions_that_leave_the_parallel_state_from_a_reachable_source_get_a_hub() {
        let m = machine(SHOP);
        let g = MachineGraph::new(&m);
        let edges_of = |t: TransitionId| {
            g.steps
                .edge_references()
                .filter(|e| *e.weight() == Edge::Transition(t))
                .map(|e| g.node(e.source()))
                .collect::<Vec<_>>()
        };
        let pagado = state(&m, "pedido.pago.pagado");
        assert_eq!(
            edges_of(m.state(pagado).on[0]),
            [Node::At(pagado)],
            "PAGAR stays inside pago"
        );
        let huerfano = state(&m, "pedido.pago.huerfano");
        assert_eq!(
            edges_of(m.state(huerfano).on[0]),
            [Node::At(huerfano)],
            "pago never reaches huerfano"
        );
        let fallido = state(&m, "pedido.pago.fallido");
        let envio = state(&m, "pedido.envio");
        assert_eq!(
            edges_of(m.state(fallido).on[0]),
            [
                Node::At(fallido),
                Node::Siblings {
                    region: envio,
                    later: false
                }
            ]
        );
        let pago = state(&m, "pedido.pago");
        assert!(
            g.steps
                .edges(g.at(pago))
                .all(|e| *e.weight() != Edge::Sibling),
            "envio leaves by nothing, so pago has no hub"
        );
    }

    /// No run reaches `fallido`: the start enters `pago` at `bloqueado`,
    /// and `pedido` is entered by nothing else. That `pago` could reach it
    /// from its default entry must not let `envio` leave by its FALLO, which
    /// would make `cancelado` look reachable.
    #[test]
    fn a_sibling_source_that_no_run_reaches_gets_no_hub() {
        let m = machine(
            r#"
machine gate
event EMPEZAR id a
event RECHAZO id r
event FALLO id f
initial inicio
state inicio { on EMPEZAR -> pedido.pago.bloqueado }
parallel pedido {
  state pago {
    initial pendiente
    state pendiente { on RECHAZO -> fallido }
    state bloqueado
    state fallido { on FALLO -> #cancelado }
  }
  state envio {
    initial preparando
    state preparando
  }
}
state cancelado #cancelado
"#,
        );
        let g = MachineGraph::new(&m);
        assert_eq!(g.steps.node_count(), 2 * m.states.len(), "no hub");
        let search = g.search(
            &[g.enter(StateId::ROOT)],
            |_, e| e != Edge::History,
            |_| false,
            usize::MAX,
        );
        assert!(!search.reached(g.enter(state(&m, "cancelado"))));
    }

    /// Every region of a wide parallel state leaves it on GO: the hubs keep
    /// the edges linear where an edge per pair of regions would need
    /// regions × (regions - 1).
    #[test]
    fn sibling_hubs_grow_linearly_with_the_regions() {
        let k = 200;
        let mut text = String::from("machine wide\nevent GO id g\ninitial p\nparallel p {\n");
        for i in 0..k {
            text.push_str(&format!(
                "  state r{i} {{ initial a state a {{ on GO -> #out }} }}\n"
            ));
        }
        text.push_str("}\nstate out #out\n");
        let m = machine(&text);
        let g = MachineGraph::new(&m);
        let hubs = g
            .steps
            .node_weights()
            .filter(|n| matches!(n, Node::Siblings { .. }))
            .count();
        assert_eq!(hubs, 2 * (k - 1));
        let from_hubs = g
            .steps
            .edge_references()
            .filter(|e| matches!(g.node(e.source()), Node::Siblings { .. }))
            .count();
        assert_eq!(
            from_hubs,
            2 * (k - 1) + 2 * (k - 2),
            "one GO and one link per hub"
        );
        let last = g.at(state(&m, &format!("p.r{}.a", k - 1)));
        let reach = g.search(&[last], |_, _| true, |_| false, usize::MAX);
        let first_go = m.state(state(&m, "p.r0.a")).on[0];
        assert!(
            g.steps.edge_references().any(|e| {
                *e.weight() == Edge::Transition(first_go)
                    && matches!(g.node(e.source()), Node::Siblings { .. })
                    && reach.reached(e.source())
            }),
            "the last region reaches the first region's GO"
        );
    }

    #[test]
    fn events_raised_by_the_machine_are_its_own() {
        let m = machine(
            "machine r\nevent A id a\ninitial s\nstate s {\n  entry { raise B }\n  on A -> t\n  on B -> t\n  on C -> t\n}\nstate t { on done.state.x -> s }\n",
        );
        let g = MachineGraph::new(&m);
        let external = |name: &str| g.events.is_external(g.events.get(name).expect(name));
        assert!(external("A"), "declared");
        assert!(!external("B"), "raised");
        assert!(external("C"), "handled, undeclared, not raised");
        assert!(
            !external("done.state.x"),
            "completion events come from the interpreter"
        );
    }

    /// A machine of `n` top-level states, each taking NEXT to the next and
    /// the last back to the first, built directly (loading 50,000 siblings
    /// is slow in a debug build).
    fn ring(n: u32) -> Machine {
        use crate::model::{EventDescriptor, State, Target, Transition};
        let mut m = machine("machine ring\nevent NEXT id n\ninitial s0\nstate s0\n");
        let template = m.states[1].clone();
        m.states.truncate(1);
        m.states[0].children.clear();
        m.transitions.clear();
        for i in 0..n {
            let id = StateId(i + 1);
            m.states.push(State {
                key: format!("s{i}"),
                path: format!("s{i}"),
                on: vec![TransitionId(i)],
                ..template.clone()
            });
            m.states[0].children.push(id);
            let next = StateId((i + 1) % n + 1);
            m.transitions.push(Transition::new(
                id,
                Trigger::Event(EventDescriptor::parse("NEXT")),
                vec![Target {
                    text: format!("s{}", next.0 - 1),
                    state: next,
                    span: Default::default(),
                }],
            ));
        }
        m
    }

    /// `kosaraju_scc` is iterative: a cycle of 50,000 states fits in a thread
    /// with a small stack, where a recursive Tarjan would overflow.
    #[test]
    fn components_of_a_long_cycle_need_no_deep_stack() {
        let n = 50_000;
        let m = ring(n);
        let one_component = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let g = MachineGraph::new(&m);
                let components = g.components();
                let first = components[g.at(StateId(1)).index()];
                (1..=n).all(|i| components[g.at(StateId(i)).index()] == first)
            })
            .expect("spawns")
            .join()
            .expect("no overflow");
        assert!(one_component, "the ring is one cycle");
    }
}
