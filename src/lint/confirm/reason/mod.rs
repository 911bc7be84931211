//! Payloads by reasoning. The synthesized payloads pass a guard that
//! compares an event field with a literal; they do not pass one that reads
//! context an earlier assign took from an event (`subscription:
//! event.output.subscription`, then `always: guard: context.subscription.status
//! == "active"`). So before a witness is replayed, its path is walked on the
//! model: each step's transition, the eventless transitions that lead to the
//! next step's state, the actions they run (exit, transition, entry), and at
//! the end the repeat's handlers. Every guard met becomes a condition on the
//! payload fields of the path's deliveries, its weakest precondition: each
//! context field it reads replaced by what the path assigned to it (`term`),
//! and what no step assigned by its value at the start. The conditions are
//! solved together (`solve`), and the payloads found are tried first, before
//! the synthesized variants; the interpreter decides whether they do.
//!
//! The same walk, with the context left free, proves claims impossible: a
//! repeat whose every handler's guard contradicts the guard the first
//! delivery passed, on the same payload (`refused`).

mod solve;
mod term;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::super::Cx;
use super::super::witness::{Witness, WitnessEnd, WitnessStep};
use super::{Claim, Replayer, Shape};
use crate::expr::{Event, Expr, Value};
use crate::graph::EventId;
use crate::model::{Action, StateId, StateKind, TransitionId};
use solve::{Outcome, Want};
use term::{Env, Term, Var};

/// The eventless transitions a walk follows at most toward the next step's
/// state.
const HOPS: usize = 4;

/// Why a condition is on the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The guard of a transition the path takes.
    Taken,
    /// The guard of one written before it, which must not pass.
    Before,
    /// The guard of a handler of the repeat.
    Repeat,
}

#[derive(Clone, Debug)]
struct Condition {
    term: Term,
    want: Want,
    transition: TransitionId,
    role: Role,
}

/// The context before a walk: known values, or free (a proof), each field
/// a variable of its own generation so that two walks' fields differ.
#[derive(Clone)]
enum Before {
    Known(Value),
    Free(u8),
}

/// What walks ask again and again, kept by the replayer.
#[derive(Default)]
pub(super) struct Memo {
    /// By target, the states a transition to it may leave active.
    entries: RefCell<HashMap<StateId, Rc<[StateId]>>>,
    /// By event, what the guards and actions of the transitions it
    /// triggers read.
    reads: std::cell::OnceCell<EventReads>,
    /// The shapes of run `reason_prefix` walked: the claim's transition,
    /// then each move's event (`u32::MAX` for a timer).
    prefixes: RefCell<std::collections::HashSet<Vec<u32>>>,
}

/// By event (its index), what the transitions it triggers read.
struct EventReads {
    /// A guard reads a payload field besides the id.
    payload: Vec<bool>,
    /// A guard reads the context.
    context: Vec<bool>,
    /// An action reads a payload field besides the id.
    assigned: Vec<bool>,
}

/// A walk of a path on the model.
struct Walk<'a, 'm> {
    cx: &'a Cx<'m>,
    memo: &'a Memo,
    /// What the path assigned to each context field.
    assigned: HashMap<String, Term>,
    before: Before,
    /// The states active as far as the walk can tell, sorted.
    active: Vec<StateId>,
    conditions: Vec<Condition>,
}

impl<'a, 'm> Walk<'a, 'm> {
    fn new(
        cx: &'a Cx<'m>,
        memo: &'a Memo,
        before: Before,
        active: impl Iterator<Item = StateId>,
    ) -> Self {
        let mut active: Vec<StateId> = active.collect();
        active.sort_unstable();
        active.dedup();
        Walk {
            cx,
            memo,
            assigned: HashMap::new(),
            before,
            active,
            conditions: Vec::new(),
        }
    }

    fn context(&self, field: &str) -> Term {
        if let Some(t) = self.assigned.get(field) {
            return t.clone();
        }
        match &self.before {
            Before::Known(context) => context.get(field).cloned().map_or(Term::Error, Term::Known),
            Before::Free(generation) => Term::Var(Var::Context(vec![
                generation.to_string(),
                field.to_string(),
            ])),
        }
    }

    fn term(&self, expr: &Expr, event: Option<(usize, &str)>) -> Term {
        let context = |f: &str| self.context(f);
        term::term(
            expr,
            &Env {
                context: &context,
                event,
            },
        )
    }

    /// The condition that `t`'s guard be `want`, when it has one.
    fn require(&mut self, t: TransitionId, want: Want, role: Role, event: Option<(usize, &str)>) {
        let Some(guard) = &self.cx.machine.transition(t).guard else {
            return;
        };
        let term = self.term(guard, event);
        self.conditions.push(Condition {
            term,
            want,
            transition: t,
            role,
        });
    }

    /// The context after `actions`: each assign's fields read the context
    /// as it was before it. The replay registers no host action, so they
    /// do nothing here either.
    fn run(&mut self, actions: &[Action], event: Option<(usize, &str)>) {
        for action in actions {
            if let Action::Assign { fields, .. } = action {
                let written: Vec<(String, Term)> = (fields.iter())
                    .map(|(f, a)| (f.clone(), self.term(&a.expr, event).bounded()))
                    .collect();
                self.assigned.extend(written);
            }
        }
    }

    /// The states a transition to `target` may leave active: its default
    /// entry, its ancestors and the default entry of the other regions of
    /// a parallel ancestor (`entry_set`); for a history target, its default.
    fn entering(&self, target: StateId, out: &mut Vec<StateId>) {
        if let Some(known) = self.memo.entries.borrow().get(&target) {
            out.extend(known.iter());
            return;
        }
        let graph = &self.cx.graph;
        let mut states = Vec::new();
        if graph.is_history(target) {
            states.extend(graph.default_entered(target));
            states.extend(self.cx.machine.ancestors(target));
        } else {
            super::proof::entry_set(graph, target, &mut states);
        }
        states.sort_unstable();
        states.dedup();
        out.extend(&states);
        self.memo.entries.borrow_mut().insert(target, states.into());
    }

    /// Takes `t`: the exit actions of the states it leaves, its own, the
    /// entry actions of those it enters.
    fn take(&mut self, t: TransitionId, event: Option<(usize, &str)>) {
        let graph = &self.cx.graph;
        let m = self.cx.machine;
        let Some(domain) = graph.domain(t) else {
            self.run(&m.transition(t).actions, event);
            return;
        };
        let inside = |s: StateId| graph.is_strict_descendant(s, domain);
        let exited: Vec<StateId> = self.active.iter().copied().filter(|&s| inside(s)).collect();
        for &s in exited.iter().rev() {
            self.run(&m.state(s).exit, event);
        }
        self.run(&m.transition(t).actions, event);
        let mut entered = Vec::new();
        for &target in graph.targets(t) {
            self.entering(target, &mut entered);
        }
        entered.retain(|&s| inside(s));
        entered.sort_unstable();
        entered.dedup();
        for &s in &entered {
            self.run(&m.state(s).entry, event);
        }
        self.active.retain(|&s| !inside(s));
        self.active.extend(entered);
        self.active.sort_unstable();
        self.active.dedup();
    }

    /// The active leaves inside `state`.
    fn leaves_in(&self, state: StateId) -> Vec<StateId> {
        let graph = &self.cx.graph;
        (self.active.iter().copied())
            .filter(|&s| graph.is_leaf(s) && graph.contains(state, s))
            .collect()
    }

    /// The conditions for delivery `k` of `event` to take `t`: its guard
    /// passes, and those of the handlers tried before it do not.
    fn select(&mut self, k: usize, event: EventId, t: TransitionId, role: Role) {
        let cx = self.cx;
        let at = Some((k, cx.graph.events.name(event)));
        let source = self.cx.machine.transition(t).source;
        let mut before: Vec<TransitionId> = Vec::new();
        for leaf in self.leaves_in(source) {
            for h in self.cx.graph.handlers(leaf, event) {
                if h == t {
                    break;
                }
                if !before.contains(&h) {
                    before.push(h);
                }
            }
        }
        for h in before {
            self.require(h, Want::NotHolds, Role::Before, at);
        }
        self.require(t, Want::Holds, role, at);
    }

    /// Follows the eventless transitions that lead to `goal` (the state the
    /// next step is taken in), each guard on the way a condition.
    fn settle(&mut self, goal: Option<StateId>, event: Option<(usize, &str)>) {
        let Some(goal) = goal else {
            return;
        };
        let Some(chain) = self.chain_to(goal) else {
            return;
        };
        let m = self.cx.machine;
        for a in chain {
            let source = m.transition(a).source;
            // The eventless transitions tried before it: those of the
            // active states inside its source, and those written before it.
            let mut before: Vec<TransitionId> = Vec::new();
            for leaf in self.leaves_in(source) {
                for s in std::iter::once(leaf).chain(m.ancestors(leaf)) {
                    if s == source {
                        break;
                    }
                    before.extend(&m.state(s).always);
                }
            }
            before.extend(m.state(source).always.iter().take_while(|&&b| b != a));
            for b in before {
                self.require(b, Want::NotHolds, Role::Before, event);
            }
            self.require(a, Want::Holds, Role::Taken, event);
            self.take(a, event);
        }
    }

    /// The shortest chain of eventless transitions from the active states
    /// to one that leaves `goal` active, guards aside; none when `goal` is
    /// active already or no such chain of `HOPS` is found.
    fn chain_to(&self, goal: StateId) -> Option<Vec<TransitionId>> {
        if self.active.contains(&goal) {
            return None;
        }
        let m = self.cx.machine;
        let mut reached: HashMap<StateId, Option<(TransitionId, StateId)>> =
            self.active.iter().map(|&s| (s, None)).collect();
        let mut frontier: Vec<StateId> = self.active.clone();
        let mut entering = Vec::new();
        for _ in 0..HOPS {
            let mut next = Vec::new();
            for &s in &frontier {
                for &a in &m.state(s).always {
                    for target in &m.transition(a).targets {
                        entering.clear();
                        self.entering(target.state, &mut entering);
                        for &u in &entering {
                            if reached.contains_key(&u) {
                                continue;
                            }
                            reached.insert(u, Some((a, s)));
                            next.push(u);
                            if u == goal {
                                let mut chain = vec![a];
                                let mut at = s;
                                while let Some(Some((b, from))) = reached.get(&at) {
                                    chain.push(*b);
                                    at = *from;
                                }
                                chain.reverse();
                                chain.dedup();
                                return Some(chain);
                            }
                        }
                    }
                }
            }
            if next.is_empty() {
                return None;
            }
            frontier = next;
        }
        None
    }

    /// The state a step is taken in.
    fn source_of(&self, step: &WitnessStep) -> Option<StateId> {
        match step {
            WitnessStep::Event {
                transition: Some(t),
                ..
            }
            | WitnessStep::After { transition: t, .. } => {
                Some(self.cx.machine.transition(*t).source)
            }
            WitnessStep::Event { .. } => None,
        }
    }

    /// Walks the witness: each step's conditions, then the repeat's.
    fn witness(&mut self, witness: &Witness, claim: Option<&Claim>) {
        let m = self.cx.machine;
        let takes = claim.and_then(|c| match c.shape {
            Shape::Takes(t) => Some(t),
            _ => None,
        });
        for (i, step) in witness.steps.iter().enumerate() {
            let goal = match witness.steps.get(i + 1) {
                Some(next) => self.source_of(next),
                None => takes.map(|t| m.transition(t).source),
            };
            match step {
                WitnessStep::Event {
                    event,
                    transition: Some(t),
                } => {
                    let cx = self.cx;
                    let name = cx.graph.events.name(*event);
                    self.select(i, *event, *t, Role::Taken);
                    self.take(*t, Some((i, name)));
                    self.settle(goal, Some((i, name)));
                }
                WitnessStep::Event {
                    event,
                    transition: None,
                } => self.forget(*event),
                WitnessStep::After { transition, .. } => {
                    self.require(*transition, Want::Holds, Role::Taken, None);
                    self.take(*transition, None);
                    self.settle(goal, None);
                }
            }
        }
        if let WitnessEnd::Repeat(r) = witness.end
            && let Some(WitnessStep::Event { event, .. }) = witness.steps.get(r)
        {
            match takes {
                Some(t) => self.select(r, *event, t, Role::Repeat),
                None => self.accepted(r, *event),
            }
        }
    }

    /// A delivery the walk does not know the transition of: what any
    /// handler of the event assigns is no longer known.
    fn forget(&mut self, event: EventId) {
        let m = self.cx.machine;
        for (index, t) in m.transitions.iter().enumerate() {
            let tid = TransitionId(index as u32);
            if !self.cx.graph.trigger_events(tid).contains(&event) {
                continue;
            }
            for action in &t.actions {
                if let Action::Assign { fields, .. } = action {
                    for f in fields.keys() {
                        self.assigned.insert(f.clone(), Term::Unknown);
                    }
                }
            }
        }
    }

    /// The condition that some handler of delivery `k`'s repeat in the
    /// active states passes; none when one has no guard.
    fn accepted(&mut self, k: usize, event: EventId) {
        let cx = self.cx;
        let name = cx.graph.events.name(event);
        let mut handlers: Vec<TransitionId> = Vec::new();
        for leaf in self.leaves_in(StateId::ROOT) {
            for h in self.cx.graph.handlers(leaf, event) {
                if !handlers.contains(&h) {
                    handlers.push(h);
                }
            }
        }
        let mut any = Term::bool(false);
        for &h in &handlers {
            let Some(guard) = &self.cx.machine.transition(h).guard else {
                return;
            };
            any = term::binary(
                crate::expr::BinaryOp::Or,
                any,
                self.term(guard, Some((k, name))),
            );
        }
        if let Some(&first) = handlers.first() {
            self.conditions.push(Condition {
                term: any,
                want: Want::Holds,
                transition: first,
                role: Role::Repeat,
            });
        }
    }
}

/// What the reasoning chose for a witness's deliveries.
#[derive(Debug, Default)]
pub(super) struct Reasoning {
    /// By step, the delivery with the payload the reasoning chose, where it
    /// differs from the synthesized default.
    chosen: Vec<Option<Event>>,
    conditions: Vec<Condition>,
    /// Whether the conditions were solved.
    solved: bool,
    /// The steps' deliveries, for the account: event and delivery index.
    deliveries: Vec<Option<EventId>>,
}

impl Reasoning {
    /// The delivery the reasoning chose for step `i`.
    pub(super) fn chosen(&self, i: usize) -> Option<&Event> {
        self.chosen.get(i).and_then(Option::as_ref)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.chosen.iter().all(Option::is_none)
    }

    /// Where the path's guards could not all be satisfied: the first guard
    /// past which the conditions have no solution, named; `None` when they
    /// were solved.
    pub(super) fn unsatisfied(&self, cx: &Cx) -> Option<String> {
        if self.solved || self.conditions.is_empty() {
            return None;
        }
        let fixed = fixed_ids(cx, &self.deliveries);
        let mut proved = false;
        let mut failing = None;
        for end in 1..=self.conditions.len() {
            let prefix: Vec<(Term, Want)> = (self.conditions[..end].iter())
                .map(|c| (c.term.clone(), c.want))
                .collect();
            match solve::solve(&prefix, &fixed, &|_| None) {
                Outcome::Solved(_) => continue,
                Outcome::Unsat => proved = true,
                Outcome::Unknown => {}
            }
            failing = Some(&self.conditions[end - 1]);
            break;
        }
        let c = failing?;
        let m = cx.machine;
        let t = m.transition(c.transition);
        let guard = t
            .guard
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let place = format!("`{}` on {}", m.display_name(t.source), t.trigger);
        let which = if proved {
            "no payload"
        } else {
            "no payload the reasoning found"
        };
        Some(match c.role {
            Role::Taken => format!(
                "{which} passes the guard `{guard}` of {place} on the path, with what the path assigns before it"
            ),
            Role::Before => {
                format!("{which} keeps the guard `{guard}` of {place}, tried first, from passing")
            }
            Role::Repeat => format!("{which} lets the repeat pass the guard `{guard}` of {place}"),
        })
    }
}

/// Whether a variable is a delivery's id (`event.id`, or the payload field
/// its event declares as its id), which the replay gives and no solution
/// may choose.
fn fixed_ids<'c>(cx: &'c Cx, deliveries: &'c [Option<EventId>]) -> impl Fn(&Var) -> bool + 'c {
    move |v: &Var| match v {
        Var::Field(k, path) => {
            let first = path.first().map(String::as_str);
            first == Some(term::ID)
                || deliveries
                    .get(*k)
                    .copied()
                    .flatten()
                    .and_then(|e| cx.decl(e))
                    .and_then(|d| d.id_field.as_ref())
                    .is_some_and(|f| Some(f.text.as_str()) == first)
        }
        Var::Context(_) => false,
    }
}

/// `data` with the field at `path` set to `value` (removed for `None`),
/// the maps on the way made where they are missing or not maps.
fn overlay(data: &Value, path: &[String], value: Option<&Value>) -> Value {
    let Some((first, rest)) = path.split_first() else {
        return value.cloned().unwrap_or(Value::Null);
    };
    let mut map: crate::expr::Map = data.as_map().cloned().unwrap_or_default();
    let key: std::sync::Arc<str> = first.as_str().into();
    if rest.is_empty() {
        match value {
            Some(v) => {
                map.insert(key, v.clone());
            }
            None => {
                map.shift_remove(&key);
            }
        }
    } else {
        let inner = map.get(&key).cloned().unwrap_or(Value::Null);
        map.insert(key, overlay(&inner, rest, value));
    }
    Value::Map(std::sync::Arc::new(map))
}

#[cfg(test)]
thread_local! {
    /// Set by the tests that show what the replay gives without reasoning.
    pub(crate) static WITHOUT_REASONING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn disabled() -> bool {
    #[cfg(test)]
    if WITHOUT_REASONING.with(std::cell::Cell::get) {
        return true;
    }
    false
}

impl Replayer<'_, '_> {
    /// The payloads the reasoning chooses for the witness's deliveries,
    /// from the start.
    pub(super) fn reason_witness(&mut self, witness: &Witness, claim: Option<&Claim>) -> Reasoning {
        if disabled() || matches!(witness.end, WitnessEnd::Loop { .. }) {
            return Reasoning::default();
        }
        let start = &self.shared.started;
        let context = self
            .start_context
            .get_or_insert_with(|| start.context())
            .clone();
        let mut walk = Walk::new(
            self.cx,
            &self.memo,
            Before::Known(context),
            start.active_states(),
        );
        walk.witness(witness, claim);
        let deliveries: Vec<Option<(EventId, usize)>> = (witness.steps.iter().enumerate())
            .map(|(i, s)| match s {
                WitnessStep::Event { event, .. } => Some((*event, i)),
                WitnessStep::After { .. } => None,
            })
            .collect();
        self.payloads(walk.conditions, &deliveries)
    }

    /// The payload the reasoning chooses for a search's first delivery of
    /// the claim from `actor`'s configuration, as its delivery `i`, when it
    /// differs from the synthesized ones.
    pub(super) fn reason_start(
        &mut self,
        claim: &Claim,
        actor: &crate::interp::Actor,
        i: usize,
    ) -> Option<Event> {
        let &t = claim.taking.first()?;
        if disabled() || claim.shape == Shape::Retry {
            return None;
        }
        if !self.guarded(claim.event) {
            return None;
        }
        let repeat = claim.shape != Shape::Later;
        let mut walk = Walk::new(
            self.cx,
            &self.memo,
            Before::Known(actor.context()),
            actor.active_states(),
        );
        let witness = Witness {
            steps: vec![WitnessStep::Event {
                event: claim.event,
                transition: Some(t),
            }],
            end: if repeat {
                WitnessEnd::Repeat(0)
            } else {
                WitnessEnd::Retry {
                    effect: String::new(),
                }
            },
        };
        walk.witness(&witness, Some(claim));
        let reasoning = self.payloads(walk.conditions, &[Some((claim.event, i))]);
        let chosen = reasoning.chosen.into_iter().next().flatten()?;
        (!self.synthesized(claim.event, i, &chosen.data)).then_some(chosen)
    }

    /// A run to the claim's first delivery whose earlier deliveries carry
    /// the payloads the claim's guards need, where the guards read context
    /// that those deliveries' handlers computed from their payloads: an
    /// invoice's lines summed above a limit before its approval. `before`
    /// are the moves a search made to the configuration it starts from; the
    /// walk goes over the transitions they took, with their payloads free,
    /// and the claim's delivery after them. The moves, the claim's delivery
    /// last, when the conditions were solved with a payload that differs
    /// from what the search sent; each shape of run once per replayer.
    pub(super) fn reason_prefix(
        &mut self,
        claim: &Claim,
        before: &[super::search::Move],
    ) -> Option<Vec<super::search::Move>> {
        use super::search::Move;
        let &t = claim.taking.first()?;
        if disabled()
            || claim.shape == Shape::Retry
            || !self.event_reads().context[claim.event.index()]
            || !before.iter().any(|m| matches!(m, Move::Send(_)))
        {
            return None;
        }
        let cx = self.cx;
        // The run's shape first, from the moves alone: a shape walked before,
        // or one whose deliveries compute nothing from their payloads, is
        // not replayed.
        let mut shape = vec![t.0];
        let mut assigns_from_payload = false;
        for m in before {
            match m {
                Move::Send(event) => {
                    let id = cx.graph.events.get(&event.name)?;
                    assigns_from_payload |= self.event_reads().assigned[id.index()];
                    shape.push(id.0);
                }
                Move::Advance(_) => shape.push(u32::MAX),
            }
        }
        if !assigns_from_payload || !self.memo.prefixes.borrow_mut().insert(shape) {
            return None;
        }
        // Replayed, for the transitions each move took.
        let mut actor = self.started();
        let mut steps = Vec::with_capacity(before.len() + 1);
        for m in before {
            self.apply_move(&mut actor, m);
            let step = actor.last_step();
            let taken = |e: Option<EventId>| {
                step.transitions.iter().copied().find(|&t| match e {
                    Some(e) => cx.graph.trigger_events(t).contains(&e),
                    None => matches!(
                        cx.machine.transition(t).trigger,
                        crate::model::Trigger::After(_)
                    ),
                })
            };
            match m {
                Move::Send(event) => {
                    let id = cx.graph.events.get(&event.name)?;
                    steps.push(WitnessStep::Event {
                        event: id,
                        transition: taken(Some(id)),
                    });
                }
                Move::Advance(_) => {
                    let transition = taken(None)?;
                    let crate::model::Trigger::After(delay) =
                        &cx.machine.transition(transition).trigger
                    else {
                        return None;
                    };
                    steps.push(WitnessStep::After {
                        delay: *delay,
                        transition,
                    });
                }
            }
        }
        let n = steps.len();
        steps.push(WitnessStep::Event {
            event: claim.event,
            transition: Some(t),
        });
        let witness = Witness {
            steps,
            end: if claim.shape != Shape::Later {
                WitnessEnd::Repeat(n)
            } else {
                WitnessEnd::Retry {
                    effect: String::new(),
                }
            },
        };
        let reasoning = self.reason_witness(&witness, Some(claim));
        if !reasoning.solved || (0..n).all(|k| reasoning.chosen(k).is_none()) {
            return None;
        }
        let mut moves = Vec::with_capacity(n + 1);
        for (k, (m, step)) in before.iter().zip(&witness.steps).enumerate() {
            moves.push(match (m, step) {
                (Move::Send(_), WitnessStep::Event { event, .. }) => Move::Send(
                    reasoning
                        .chosen(k)
                        .cloned()
                        .unwrap_or_else(|| self.event(*event, k, 0)),
                ),
                (m, _) => m.clone(),
            });
        }
        let first = reasoning
            .chosen(n)
            .cloned()
            .unwrap_or_else(|| self.event(claim.event, n, 0));
        moves.push(Move::Send(first));
        Some(moves)
    }

    /// Whether a guard of the event's handlers reads a field of its payload
    /// besides its id (which the replay gives), or reads the context where
    /// one of them assigns such a field: where reasoning may choose better
    /// than the synthesized payloads.
    fn guarded(&self, event: EventId) -> bool {
        let reads = self.event_reads();
        let e = event.index();
        reads.payload[e] || (reads.context[e] && reads.assigned[e])
    }

    fn event_reads(&self) -> &EventReads {
        let cx = self.cx;
        self.memo.reads.get_or_init(|| {
            let events = cx.graph.events.len();
            let mut found = EventReads {
                payload: vec![false; events],
                context: vec![false; events],
                assigned: vec![false; events],
            };
            for (index, t) in cx.machine.transitions.iter().enumerate() {
                for &e in cx.graph.trigger_events(TransitionId(index as u32)) {
                    let id = cx.decl(e).and_then(|d| d.id_field.as_ref());
                    let reads = |x: &Expr| {
                        let mut reads = false;
                        x.walk(&mut |x| {
                            if let Some(f) = super::super::analysis::event_field(x) {
                                reads |= f != "id" && id.is_none_or(|id| id.text != f);
                            }
                        });
                        reads
                    };
                    if let Some(guard) = &t.guard {
                        found.payload[e.index()] |= reads(guard);
                        let mut fields = Vec::new();
                        super::super::analysis::reads(guard, &mut fields);
                        found.context[e.index()] |= !fields.is_empty();
                    }
                    for action in &t.actions {
                        super::deliveries::for_each_expr(action, &mut |x| {
                            found.assigned[e.index()] |= reads(x);
                        });
                    }
                }
            }
            found
        })
    }

    /// Solves the conditions for the deliveries (by the walk's step: the
    /// event and the delivery's index in the run).
    fn payloads(
        &mut self,
        conditions: Vec<Condition>,
        deliveries: &[Option<(EventId, usize)>],
    ) -> Reasoning {
        let events: Vec<Option<EventId>> = deliveries.iter().map(|d| d.map(|(e, _)| e)).collect();
        let mut reasoning = Reasoning {
            deliveries: events.clone(),
            ..Reasoning::default()
        };
        let fixed = fixed_ids(self.cx, &events);
        // Nothing to choose where the conditions read no payload field but
        // the ids the replay gives.
        if !conditions.iter().any(|c| c.term.reads(&|v| !fixed(v))) {
            reasoning.solved = !conditions
                .iter()
                .any(|c| matches!(&c.term, Term::Known(_) | Term::Error));
            reasoning.conditions = conditions;
            return reasoning;
        }
        let pairs: Vec<(Term, Want)> = conditions
            .iter()
            .map(|c| (c.term.clone(), c.want))
            .collect();
        // The synthesized payloads, whose values a solution keeps where
        // they do.
        let synthesized: Vec<Option<Value>> = (deliveries.iter())
            .map(|d| d.map(|(event, i)| self.event(event, i, 0).data))
            .collect();
        let defaults = |v: &Var| -> Option<Value> {
            let Var::Field(k, path) = v else {
                return None;
            };
            let mut value = synthesized.get(*k)?.as_ref()?;
            for field in path {
                value = value.get(field)?;
            }
            Some(value.clone())
        };
        let outcome = solve::solve(&pairs, &fixed, &defaults);
        reasoning.conditions = conditions;
        let Outcome::Solved(assignment) = outcome else {
            return reasoning;
        };
        reasoning.solved = true;
        reasoning.chosen = vec![None; deliveries.len()];
        for (k, delivery) in deliveries.iter().enumerate() {
            let Some((event, i)) = *delivery else {
                continue;
            };
            let mine: Vec<&(Var, Option<Value>)> = (assignment.iter())
                .filter(|(v, _)| matches!(v, Var::Field(j, _) if *j == k))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let base = self.event(event, i, 0);
            let mut data = base.data.clone();
            for (v, value) in mine {
                if let Var::Field(_, path) = v {
                    data = overlay(&data, path, value.as_ref());
                }
            }
            if data != base.data {
                reasoning.chosen[k] = Some(Event::new(base.name.clone(), base.id.clone(), data));
            }
        }
        reasoning
    }
}

/// Whether every handler of the repeat contradicts the guard the claim's
/// first delivery passed, on the same payload: the repeat is refused, for
/// every payload and every context (`docs/lint.md`, "How a finding is
/// confirmed"). The first delivery's actions are taken to run without a
/// run-time error. `None` when that is not proved, else why.
pub(super) fn refused(cx: &Cx, claim: &Claim, facts: &Facts, memo: &Memo) -> Option<String> {
    if claim.taking.is_empty() || claim.shape == Shape::Retry {
        return None;
    }
    let m = cx.machine;
    let graph = &cx.graph;
    let name = graph.events.name(claim.event).to_string();
    let mut why = None;
    for &t in &claim.taking {
        let transition = m.transition(t);
        // A final state at the top (of a root that is no parallel state)
        // ends the machine: it takes no event.
        let ends = |s: StateId| {
            m.state(s).kind == StateKind::Final
                && m.state(s).parent == Some(StateId::ROOT)
                && m.state(StateId::ROOT).kind != StateKind::Parallel
        };
        let ending = (transition.targets.iter().map(|target| target.state))
            .find(|&s| ends(s))
            .or_else(|| ended_by_raise(cx, t).filter(|&s| ends(s)));
        if let Some(end) = ending {
            why = Some(format!(
                "the first `{name}` ends the machine in its final state `{}`, and a machine that ended takes no event",
                m.display_name(end)
            ));
            continue;
        }
        let source = transition.source;
        let mut walk = Walk::new(
            cx,
            memo,
            Before::Free(0),
            std::iter::once(source).chain(m.ancestors(source)),
        );
        walk.require(t, Want::Holds, Role::Taken, Some((0, &name)));
        // The handlers the repeat may meet: in the configuration the first
        // delivery leaves, for a repeat right after it; anywhere in the
        // machine, in any context, for one that may come later.
        let handlers: Vec<TransitionId> = match claim.shape {
            Shape::Immediate => {
                let after = settled_after(cx, facts, &mut walk, t, &name)?;
                let mut out = Vec::new();
                for s in after {
                    for h in graph.own_handlers(s, claim.event) {
                        if !out.contains(&h) {
                            out.push(h);
                        }
                    }
                }
                out
            }
            // Not those in states the first delivery leaves for good.
            Shape::Takes(t2) => vec![t2],
            _ => (facts
                .handlers
                .get(&claim.event)
                .into_iter()
                .flatten()
                .copied())
            .collect(),
        };
        let handlers: Vec<TransitionId> = if claim.shape == Shape::Immediate {
            handlers
        } else {
            (handlers.into_iter())
                .filter(|&h| !left_for_good(cx, facts, t, m.transition(h).source))
                .collect()
        };
        let later = claim.shape != Shape::Immediate;
        // Another context where the repeat may come after other steps, in
        // which a list that only grows still holds what the first delivery
        // appended to it.
        let mut fresh = Walk::new(cx, memo, Before::Free(1), std::iter::empty());
        let mut kept: Vec<String> = Vec::new();
        if later {
            for (field, items) in appended(cx, &walk, t, &name) {
                kept.push(format!("`{field}`"));
                let before = Term::Var(Var::Context(vec!["1".into(), field.clone()]));
                let grown = term::binary(crate::expr::BinaryOp::Add, before, items);
                fresh.assigned.insert(field, grown);
            }
        }
        let mut any = Term::bool(false);
        for &h in &handlers {
            let guard = m.transition(h).guard.as_ref()?;
            let guard = if later {
                fresh.term(guard, Some((0, &name)))
            } else {
                walk.term(guard, Some((0, &name)))
            };
            any = term::binary(crate::expr::BinaryOp::Or, any, guard);
        }
        let mut conditions: Vec<(Term, Want)> = (walk.conditions.iter())
            .filter(|c| c.want == Want::Holds)
            .map(|c| (c.term.clone(), c.want))
            .collect();
        conditions.push((any, Want::Holds));
        if !solve::unsatisfiable(&conditions) {
            return None;
        }
        let guard = transition.guard.as_ref().map(ToString::to_string);
        let lists = match kept.as_slice() {
            [] => String::new(),
            [one] => {
                format!(", with {one} holding what the first appended to it, as it only grows")
            }
            many => format!(
                ", with {} holding what the first appended to them, as they only grow",
                many.join(" and ")
            ),
        };
        if handlers.is_empty() {
            why = Some(format!(
                "the states whose transitions take `{name}` are left by the first delivery, and no transition enters them again"
            ));
            continue;
        }
        why = Some(match guard {
            Some(guard) => format!(
                "a repeat carries the payload of the first `{name}`, which passed `{guard}`, and no guard of a handler that could take the repeat passes with it{lists}"
            ),
            None => format!(
                "no guard of a handler that could take a repeat of `{name}` passes with the payload of the first{lists}"
            ),
        });
    }
    why
}

/// Where the event a targetless transition raises first leads, when that
/// is certain: the transition's source is a leaf in which, and in whose
/// ancestors, no eventless transition could come first, and the first
/// handler of the raised event there has no guard and one target (XState's
/// `raise({ type: 'VALIDATE' })` in a submit that a `VALIDATE: 'sent'`
/// answers). The raised event is taken in the same macrostep, before any
/// delivery from outside.
fn ended_by_raise(cx: &Cx, t: TransitionId) -> Option<StateId> {
    let m = cx.machine;
    let graph = &cx.graph;
    let transition = m.transition(t);
    let source = transition.source;
    if !transition.targets.is_empty() || !graph.is_leaf(source) {
        return None;
    }
    let raised = transition.actions.iter().find_map(|a| match a {
        Action::Raise { event, .. } => Some(event),
        _ => None,
    })?;
    let quiet = |s: StateId| m.state(s).always.is_empty();
    if !std::iter::once(source)
        .chain(m.ancestors(source))
        .all(quiet)
    {
        return None;
    }
    let event = graph.events.get(&raised.text)?;
    let first = graph.handlers(source, event).next()?;
    let handler = m.transition(first);
    match handler.targets.as_slice() {
        [only] if handler.guard.is_none() => Some(only.state),
        _ => None,
    }
}

/// What the proofs read of the machine, gathered once per lint run.
pub(super) struct Facts {
    /// By event, every transition it triggers.
    handlers: HashMap<EventId, Vec<TransitionId>>,
    /// By state, whether some transition enters it.
    entered: Vec<bool>,
    /// By state in document order, how many states before it have exit
    /// actions that assign: a subtree's are a range of them.
    exit_assigns: Vec<u32>,
}

impl Facts {
    /// The facts, from the states each transition may enter (`edges`, by
    /// source: `Replayer::move_costs`).
    pub(super) fn of(cx: &Cx, edges: &[Vec<super::proof::MoveEdge>]) -> Facts {
        let m = cx.machine;
        let graph = &cx.graph;
        let mut handlers: HashMap<EventId, Vec<TransitionId>> = HashMap::new();
        for index in 0..m.transitions.len() {
            let t = TransitionId(index as u32);
            for &e in graph.trigger_events(t) {
                handlers.entry(e).or_default().push(t);
            }
        }
        let mut entered = vec![false; m.states.len()];
        for &(u, _, t) in edges.iter().flatten() {
            if graph
                .domain(t)
                .is_some_and(|domain| graph.is_strict_descendant(u, domain))
            {
                entered[u.index()] = true;
            }
        }
        let mut exit_assigns = Vec::with_capacity(m.states.len() + 1);
        let mut count = 0u32;
        exit_assigns.push(0);
        for state in &m.states {
            count += u32::from(assigns(&state.exit));
            exit_assigns.push(count);
        }
        Facts {
            handlers,
            entered,
            exit_assigns,
        }
    }

    /// Whether some state strictly inside `state`, other than those of
    /// `known`, has exit actions that assign.
    fn exits_assign_inside(&self, cx: &Cx, state: StateId, known: &[StateId]) -> bool {
        let graph = &cx.graph;
        // The subtree is a range of states in document order.
        let range = graph.subtree_indices(state);
        let (first, end) = (range.start + 1, range.end);
        if end <= first {
            return false;
        }
        let all = self.exit_assigns[end] - self.exit_assigns[first];
        let seen = (known.iter())
            .filter(|&&s| {
                graph.is_strict_descendant(s, state) && assigns(&cx.machine.state(s).exit)
            })
            .count() as u32;
        all > seen
    }
}

/// Whether the actions write the context.
fn assigns(actions: &[Action]) -> bool {
    actions.iter().any(|a| matches!(a, Action::Assign { .. }))
}

/// Whether `state` cannot be active once `t` is taken: it lies inside
/// `t`'s domain, so `t` leaves it if it was active, and no transition (`t`
/// included) enters it; only the start does.
fn left_for_good(cx: &Cx, facts: &Facts, t: TransitionId, state: StateId) -> bool {
    let graph = &cx.graph;
    graph
        .domain(t)
        .is_some_and(|domain| graph.is_strict_descendant(state, domain))
        && !facts.entered[state.index()]
}

/// The lists that `t`'s actions append to (`seen: context.seen +
/// [event.id]`) and that only ever grow, each with what is appended, read
/// in the context `walk` had before `t`.
fn appended(cx: &Cx, walk: &Walk, t: TransitionId, name: &str) -> Vec<(String, Term)> {
    let mut walk = Walk {
        cx,
        memo: walk.memo,
        assigned: walk.assigned.clone(),
        before: walk.before.clone(),
        active: Vec::new(),
        conditions: Vec::new(),
    };
    let mut out = Vec::new();
    for action in &cx.machine.transition(t).actions {
        if let Action::Assign { fields, .. } = action {
            for (field, assignment) in fields {
                if let Some(items) = appended_items(&assignment.expr, field)
                    && grows_only(cx.machine, field)
                {
                    let items = walk.term(items, Some((0, name)));
                    out.retain(|(f, _): &(String, Term)| f != field);
                    out.push((field.clone(), items));
                }
            }
        }
        walk.run(std::slice::from_ref(action), Some((0, name)));
    }
    out
}

/// The list literal an assign of `field` appends to it: `context.f +
/// [..]`, `[..] + context.f`, either inside `distinct(..)`.
fn appended_items<'e>(expr: &'e Expr, field: &str) -> Option<&'e Expr> {
    use super::super::analysis::context_field;
    use crate::expr::{BinaryOp, ExprKind};
    match &expr.kind {
        ExprKind::Binary(BinaryOp::Add, a, b) => match (context_field(a), context_field(b)) {
            (Some(f), _) if f == field && matches!(b.kind, ExprKind::List(_)) => Some(b),
            (_, Some(f)) if f == field && matches!(a.kind, ExprKind::List(_)) => Some(a),
            _ => None,
        },
        ExprKind::Call(name, args) if name == "distinct" && args.len() == 1 => {
            appended_items(&args[0], field)
        }
        _ => None,
    }
}

/// Whether the context field is a list that nothing in the machine takes
/// anything from: it starts as a list and every assign of it appends to it
/// or copies it, in a machine without host actions or opaque parts (which
/// could write it).
fn grows_only(m: &crate::model::Machine, field: &str) -> bool {
    use super::super::analysis::context_field;
    if !m.opaque.is_empty() || !m.context.get(field).is_some_and(|f| f.value.is_array()) {
        return false;
    }
    m.actions().all(|action| match action {
        Action::Host { .. } => false,
        Action::Assign { fields, .. } => fields.get(field).is_none_or(|a| {
            appended_items(&a.expr, field).is_some() || context_field(&a.expr) == Some(field)
        }),
        _ => true,
    })
}

/// The states that may be active once the step that takes `t` settles,
/// with `walk` taken through `t`: those it enters and its source's
/// ancestors, and those the eventless transitions from there may enter;
/// `None` when the walk cannot tell them all (a parallel state kept
/// active, a history target, an event raised or sent on the way, a
/// compound source left active).
fn settled_after(
    cx: &Cx,
    facts: &Facts,
    walk: &mut Walk,
    t: TransitionId,
    name: &str,
) -> Option<Vec<StateId>> {
    let m = cx.machine;
    let graph = &cx.graph;
    let transition = m.transition(t);
    let raises = |actions: &[Action]| {
        actions
            .iter()
            .any(|a| matches!(a, Action::Raise { .. } | Action::Send { .. }))
    };
    if raises(&transition.actions) || graph.is_history(transition.source) {
        return None;
    }
    let kept = match graph.domain(t) {
        Some(domain) => std::iter::once(domain)
            .chain(m.ancestors(domain))
            .collect::<Vec<_>>(),
        // A targetless transition keeps the configuration: known when its
        // source is a leaf.
        None if graph.is_leaf(transition.source) => std::iter::once(transition.source)
            .chain(m.ancestors(transition.source))
            .collect(),
        None => return None,
    };
    if kept.iter().any(|&s| m.state(s).kind == StateKind::Parallel)
        || graph.targets(t).iter().any(|&s| graph.is_history(s))
    {
        return None;
    }
    // The states the walk does not know are active may be exited too: not
    // where one of them writes the context on its way out.
    if let Some(domain) = graph.domain(t)
        && facts.exits_assign_inside(cx, domain, &walk.active)
    {
        return None;
    }
    walk.take(t, Some((0, name)));
    let mut states = walk.active.clone();
    if states.iter().any(|&s| raises(&m.state(s).entry)) {
        return None;
    }
    // What the eventless transitions may enter, transitively.
    let mut at = 0;
    while at < states.len() {
        let s = states[at];
        at += 1;
        for &a in &m.state(s).always {
            // An eventless transition that changes the context, or enters
            // or leaves states that do, leaves the walk's context behind.
            let assigns =
                |actions: &[Action]| actions.iter().any(|x| matches!(x, Action::Assign { .. }));
            if raises(&m.transition(a).actions) || assigns(&m.transition(a).actions) {
                return None;
            }
            for target in &m.transition(a).targets {
                if graph.is_history(target.state) {
                    return None;
                }
                let mut entering = Vec::new();
                super::proof::entry_set(graph, target.state, &mut entering);
                if entering.iter().any(|&u| {
                    let state = m.state(u);
                    state.kind == StateKind::Parallel
                        || assigns(&state.entry)
                        || assigns(&state.exit)
                        || raises(&state.entry)
                }) {
                    return None;
                }
                for u in entering {
                    if !states.contains(&u) {
                        states.push(u);
                    }
                }
            }
        }
        if states.len() > 64 {
            return None;
        }
    }
    Some(states)
}

#[cfg(test)]
mod tests;
