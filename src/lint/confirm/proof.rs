//! Refutations that need no search: a claim whose first delivery no run of
//! new deliveries takes (its state is entered only by transitions such
//! runs never take, or another transition is written before it), and the
//! moves a run takes at least before a state is active.

use std::rc::Rc;

use super::super::analysis;
use super::{Claim, Replayer};
use crate::graph::{self, EventId, MachineGraph};
use crate::model::{Action, PayloadType, StateId, TransitionId, Trigger};

impl<'a, 'm> Replayer<'a, 'm> {
    /// Why no run shows the claim, whatever the payloads and whatever the
    /// host answers: `None` when that is not proved.
    pub(super) fn refutation(&mut self, claim: &Claim) -> Option<String> {
        if let Some(why) = self.never_taken_first(claim) {
            return Some(why);
        }
        let facts = match &self.proof_facts {
            Some(facts) => facts.clone(),
            None => {
                let costs = self.move_costs();
                let facts = Rc::new(super::reason::Facts::of(self.cx, &costs.0));
                self.proof_facts = Some(facts.clone());
                facts
            }
        };
        super::reason::refused(self.cx, claim, &facts, &self.memo)
    }

    /// Why no search can find a run for the claim: its first delivery must
    /// take one of `taking`, and no delivery that is not a repeat (all the
    /// search sends before the claim's repeat) takes any of them, because
    /// their states are entered only by transitions such deliveries never
    /// take, or because one written before each of them in its state on the
    /// same trigger is taken instead (`taken_instead`). `None` when one of
    /// them may be taken, or the claim takes any transition.
    pub(crate) fn never_taken_first(&mut self, claim: &Claim) -> Option<String> {
        if claim.taking.is_empty() {
            return None;
        }
        let m = self.cx.machine;
        let sources = claim.sources(m);
        let entered = self.entered_by_new_deliveries();
        if !sources.iter().any(|s| entered[s.index()]) {
            return Some(format!(
                "`{}` is entered only by transitions that no delivery but a repeat takes",
                m.display_name(sources[0])
            ));
        }
        let mut why = None;
        for &t in &claim.taking {
            let instead = self.taken_instead(t, Some(claim.event))?;
            why = Some(format!(
                "a first delivery of `{}` in `{}` takes the transition written before this one, {}",
                self.cx.graph.events.name(claim.event),
                m.display_name(m.transition(t).source),
                instead.why()
            ));
        }
        why
    }

    /// The transition written before `t` in its state on the same trigger
    /// that a delivery of `event` which is not a repeat takes whenever it
    /// could take `t` (for an eventless or delayed `t`, `event` is `None`
    /// and only an unguarded one counts).
    pub(super) fn taken_instead(
        &mut self,
        t: TransitionId,
        event: Option<EventId>,
    ) -> Option<Instead> {
        let m = self.cx.machine;
        let transition = m.transition(t);
        let state = m.state(transition.source);
        let alternatives = match transition.trigger {
            Trigger::Event(_) => &state.on,
            Trigger::Always => &state.always,
            Trigger::After(_) => &state.after,
        };
        for &before in alternatives {
            if before == t {
                return None;
            }
            let earlier = m.transition(before);
            if earlier.trigger != transition.trigger {
                continue;
            }
            match (&earlier.guard, event) {
                (None, _) => return Some(Instead::Unguarded),
                (Some(guard), Some(event)) if self.passes_for_new_ids(guard, event) => {
                    return Some(Instead::NewId);
                }
                _ => {}
            }
        }
        None
    }

    /// Whether a transition is taken in no run whose deliveries are all new:
    /// for each event that triggers it, or for its timer or eventless
    /// trigger, another is taken instead.
    pub(super) fn never_taken_by_new_deliveries(&mut self, t: TransitionId) -> bool {
        match self.cx.machine.transition(t).trigger {
            Trigger::Event(_) => {
                let events = self.cx.graph.trigger_events(t);
                !events.is_empty()
                    && events
                        .iter()
                        .all(|&e| self.taken_instead(t, Some(e)).is_some())
            }
            _ => self.taken_instead(t, None).is_some(),
        }
    }

    /// By state, whether a run whose deliveries are all new may enter it:
    /// the states active at the start, and then, from the states entered,
    /// what the transitions such runs may take enter (`entry_set`, over the
    /// edges of `move_costs`): all a step may enter, and more where a
    /// history is restored.
    pub(super) fn entered_by_new_deliveries(&mut self) -> Rc<[bool]> {
        if let Some(known) = &self.entered {
            return known.clone();
        }
        let costs = self.move_costs();
        let mut never_taken: Vec<Option<bool>> = vec![None; self.cx.machine.transitions.len()];
        let mut entered = vec![false; self.cx.machine.states.len()];
        let mut queue: Vec<StateId> = Vec::new();
        // The start's configuration is known exactly.
        for s in self.shared.started.active_states() {
            entered[s.index()] = true;
            queue.push(s);
        }
        while let Some(s) = queue.pop() {
            for &(u, _, t) in &costs.0[s.index()] {
                if entered[u.index()]
                    || *never_taken[t.index()]
                        .get_or_insert_with(|| self.never_taken_by_new_deliveries(t))
                {
                    continue;
                }
                entered[u.index()] = true;
                queue.push(u);
            }
        }
        let entered: Rc<[bool]> = entered.into();
        self.entered = Some(entered.clone());
        entered
    }

    /// By state, at least how many moves of a search (deliveries of outside
    /// events, timers) a run takes before the state is active (see
    /// `move_costs`).
    pub(crate) fn fewest_moves_to_enter(&mut self) -> Rc<[usize]> {
        if let Some(known) = &self.fewest_moves {
            return known.clone();
        }
        let (forward, _) = &*self.move_costs();
        let active: Vec<StateId> = self.shared.started.active_states().collect();
        let fewest: Rc<[usize]> = fewest_moves(forward, &active).into();
        self.fewest_moves = Some(fewest.clone());
        fewest
    }

    /// By state, at least how many moves a run takes from a configuration
    /// where the state is active to one where one of `targets` is.
    pub(super) fn fewest_moves_from_to(&mut self, targets: &[StateId]) -> Vec<usize> {
        let (_, backward) = &*self.move_costs();
        fewest_moves(backward, targets)
    }

    /// The moves a transition costs, as edges between states, forward and
    /// backward: from its source to each state it may enter (`entry_set`),
    /// one where only outside events the machine never raises or sends
    /// itself trigger it, or a timer of more than 0 ms, and none else (it
    /// may come in the same step); guards ignored. A state is active after
    /// a move only if entered by a transition from a state active before
    /// it, or in the same step by one that costs nothing, so the cheapest
    /// way over these edges never costs more moves than a run takes.
    pub(super) fn move_costs(&mut self) -> Rc<MoveCosts> {
        if let Some(known) = &self.move_costs {
            return known.clone();
        }
        let m = self.cx.machine;
        let graph = &self.cx.graph;
        let costs_a_move = |t: TransitionId| match &m.transition(t).trigger {
            Trigger::Event(descriptor) => {
                descriptor.patterns.iter().all(|p| !graph::may_match_own(p))
                    && !graph.trigger_events(t).is_empty()
                    && graph
                        .trigger_events(t)
                        .iter()
                        .all(|&e| graph.events.is_external(e) && !graph.events.is_raised(e))
            }
            Trigger::After(delay) => delay.millis > 0,
            Trigger::Always => false,
        };
        let mut forward: Vec<Vec<MoveEdge>> = vec![Vec::new(); m.states.len()];
        let mut backward: Vec<Vec<MoveEdge>> = vec![Vec::new(); m.states.len()];
        let mut entering: Vec<StateId> = Vec::new();
        for s in m.state_ids() {
            let state = m.state(s);
            for &t in state.on.iter().chain(&state.always).chain(&state.after) {
                let cost = usize::from(costs_a_move(t));
                for target in &m.transition(t).targets {
                    entry_set(graph, target.state, &mut entering);
                }
                entering.sort_unstable();
                entering.dedup();
                for u in entering.drain(..) {
                    forward[s.index()].push((u, cost, t));
                    backward[u.index()].push((s, cost, t));
                }
            }
        }
        let costs = Rc::new((forward, backward));
        self.move_costs = Some(costs.clone());
        costs
    }

    /// Whether the guard holds for every first delivery of `event` in a
    /// replay: it only tests `!(event.ID in context.S)`, where ID is the
    /// event's id field, a string, unique to each delivery of a run, and
    /// every set S starts empty and is only ever extended with ids.
    pub(super) fn passes_for_new_ids(&mut self, guard: &crate::expr::Expr, event: EventId) -> bool {
        let Some(decl) = self.cx.decl(event) else {
            return false;
        };
        // An event the machine raises or sends itself carries whatever id
        // its action gives it, a repeated one too.
        if self.cx.graph.events.is_raised(event) {
            return false;
        }
        let Some(id_field) = decl.id_field.as_ref().map(|n| n.text.as_str()) else {
            return false;
        };
        let id_is_number = decl
            .payload
            .as_ref()
            .and_then(|p| p.get(id_field))
            .is_some_and(|f| matches!(f.ty, PayloadType::Number | PayloadType::Integer));
        let tests = analysis::identity_tests(guard);
        if id_is_number || tests.len() != analysis::conjuncts(guard).len() {
            return false;
        }
        tests
            .iter()
            .all(|(field, set)| field == id_field && self.holds_only_ids(set))
    }

    /// Whether the context field starts as an empty list and every assign
    /// of the machine that writes it appends event fields that some event
    /// declares as its id (`S: context.S + [event.ID]`), in a machine
    /// without host actions, which could write anything.
    pub(super) fn holds_only_ids(&mut self, set: &str) -> bool {
        if let Some(&known) = self.id_sets.get(set) {
            return known;
        }
        let m = self.cx.machine;
        let starts_empty = m
            .context
            .get(set)
            .is_some_and(|f| f.value.as_array().is_some_and(|a| a.is_empty()));
        let id_fields: Vec<&str> = m
            .events
            .values()
            .filter_map(|d| d.id_field.as_ref().map(|n| n.text.as_str()))
            .collect();
        let appends_ids = |expr: &crate::expr::Expr| {
            use crate::expr::{BinaryOp, ExprKind};
            let ExprKind::Binary(BinaryOp::Add, a, b) = &expr.kind else {
                return false;
            };
            let list = match (analysis::context_field(a), analysis::context_field(b)) {
                (Some(f), _) if f == set => b,
                (_, Some(f)) if f == set => a,
                _ => return false,
            };
            let ExprKind::List(items) = &list.kind else {
                return false;
            };
            items
                .iter()
                .all(|item| analysis::event_field(item).is_some_and(|f| id_fields.contains(&f)))
        };
        let mut only_ids = starts_empty;
        for action in m.actions() {
            match action {
                Action::Host { .. } => only_ids = false,
                Action::Assign { fields, .. } => {
                    if let Some(assignment) = fields.get(set) {
                        only_ids &= appends_ids(&assignment.expr);
                    }
                }
                _ => {}
            }
            if !only_ids {
                break;
            }
        }
        self.id_sets.insert(set.to_string(), only_ids);
        only_ids
    }
}

/// What is taken instead of a transition written after it.
#[derive(Clone, Copy)]
pub(super) enum Instead {
    /// A transition without a guard.
    Unguarded,
    /// One whose guard only tests that the delivery's id is new.
    NewId,
}

impl Instead {
    pub(super) fn why(self) -> &'static str {
        match self {
            Instead::Unguarded => "which has no guard",
            Instead::NewId => "whose guard only tests that the delivery's id is new",
        }
    }
}

/// An edge of `Replayer::move_costs`: the state at its other end, its cost
/// in moves, and the transition it stands for.
pub(super) type MoveEdge = (StateId, usize, TransitionId);

/// The edges of `Replayer::move_costs`, by state: forward (to the states a
/// transition from it may enter) and backward.
pub(super) type MoveCosts = (Vec<Vec<MoveEdge>>, Vec<Vec<MoveEdge>>);

/// By state, the cheapest way from one of `from` over the edges, a 0-1
/// breadth-first search (what costs nothing goes to the front).
pub(super) fn fewest_moves(edges: &[Vec<MoveEdge>], from: &[StateId]) -> Vec<usize> {
    let mut fewest = vec![usize::MAX; edges.len()];
    let mut queue: std::collections::VecDeque<(StateId, usize)> = Default::default();
    for &s in from {
        fewest[s.index()] = 0;
        queue.push_back((s, 0));
    }
    while let Some((s, moves)) = queue.pop_front() {
        if moves > fewest[s.index()] {
            continue;
        }
        for &(u, cost, _) in &edges[s.index()] {
            if moves + cost < fewest[u.index()] {
                fewest[u.index()] = moves + cost;
                if cost == 0 {
                    queue.push_front((u, moves));
                } else {
                    queue.push_back((u, moves + 1));
                }
            }
        }
    }
    fewest
}

/// The states a transition to `target` may enter, into `out` (with
/// repeats): the target's default entry (`MachineGraph::default_entered`),
/// its ancestors, and the default entry of the other regions of a parallel
/// ancestor; for a history target, all of its parent, which covers what it
/// restores and its default.
pub(crate) fn entry_set(graph: &MachineGraph, target: StateId, out: &mut Vec<StateId>) {
    let m = graph.machine;
    let base = if graph.is_history(target) {
        let parent = m.state(target).parent.unwrap_or(target);
        out.extend(graph.subtree(parent));
        parent
    } else {
        out.extend(graph.default_entered(target));
        target
    };
    let mut below = base;
    for a in m.ancestors(base) {
        out.push(a);
        if m.state(a).kind == crate::model::StateKind::Parallel {
            for region in m.substates(a).filter(|&r| r != below) {
                out.extend(graph.default_entered(region));
            }
        }
        below = a;
    }
}
