use std::collections::VecDeque;

use indexmap::IndexMap;
use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use super::{Cx, Finding, Lint, Stage, Witness, WitnessEnd, WitnessStep, fact_note};
use crate::diagnostic::Label;
use crate::graph::{Cost, Edge, Node};
use crate::model::{
    Action, Argument, Completion, EffectDecl, Idempotency, StateId, StateKind, TransitionId,
    Trigger,
};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a retry of an effect with `idempotency: none`, or of an
    /// invoked host service (a `src` no effect declares, whose idempotency
    /// is unknown: XState's `fromPromise`, `fromCallback` actors): the same
    /// operation performed again after its first attempt ended in a
    /// failure, a timeout or an unknown outcome, on a path that does not go
    /// through the effect's `verify` state (any path, when the effect names
    /// none, and for a host service).
    ///
    /// The same operation is the same effect with structurally equal
    /// arguments (the same fields, the same expressions as written; where
    /// they were written does not matter), so the same action performed
    /// again always is one. `notificar(plantilla: "enviado")` and
    /// `notificar(plantilla: "rechazado")` are two operations, and so are a
    /// debit and the credit that compensates it. An operation is performed
    /// by a transition's actions, by the exit actions of the states it
    /// leaves (its source, the source's ancestors below the transition's
    /// domain, and the states inside the source that are active whenever it
    /// is: the regions of a parallel state, an only child) and by the entry
    /// actions of the states it enters.
    ///
    /// The first attempt ended in a failure, a timeout or an unknown outcome
    /// when, on the way from it to the retry (the retry's own trigger
    /// included):
    ///
    /// - an event whose name says so is delivered or raised: its name
    ///   contains, in any case, one of FAIL, FALL (FALLO, FALLIDO), ERROR
    ///   (`error.execution`), TIMEOUT, TIME_OUT, TIMED_OUT, EXPIR, DECLIN,
    ///   REJECT, RECHAZ, DENIED, DENEG, UNKNOWN (the dispatcher's
    ///   `<effect>.unknown`), DESCONOC, SIN_RESPUESTA, NO_RESPONSE, RETRY or
    ///   REINTENT (a retry says what it is);
    /// - or a timer (`after`) fires before any event is delivered: the
    ///   attempt timed out. A timer that fires after an answer came is a
    ///   schedule (a renewal, a reminder), not a timeout.
    ///
    /// An invocation's outcome is its own completion: the error of another
    /// invocation (`xstate.error.actor.OTHER`) is no failure of its attempt.
    ///
    /// A second performance after plain answers only (`PAGO_OK`, then
    /// `OTRA_COMPRA`) is a new attempt, not a retry. In a parallel state
    /// the search follows one region at a time: the events that drive a
    /// sibling region to a transition that leaves the parallel state do not
    /// count as answers.
    ///
    /// ### Why is this bad?
    ///
    /// A receiver without idempotency keys cannot tell a retry from a new
    /// request. When an answer is lost, retrying blindly charges twice;
    /// only asking first ("did the charge happen?") is safe.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// effects:
    ///   cobrar: { idempotency: none }
    /// states:
    ///   cobrando:
    ///     entry: [cobrar]
    ///     on:
    ///       TIMEOUT: { target: cobrando, reenter: true }   # charges again
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// effects:
    ///   cobrar: { idempotency: none, verify: verificando }
    /// states:
    ///   cobrando:
    ///     entry: [cobrar]
    ///     on:
    ///       TIMEOUT: verificando
    ///   verificando:
    ///     entry: [consultarCobro]
    ///     on:
    ///       EXISTE: cobrado
    ///       NO_EXISTE: cobrando
    /// ```
    code: "I008",
    severity: Warning,
    stage: Stage::Model(check),
}

/// What in an event's name says that an attempt failed, timed out, has an
/// unknown outcome or is being retried; a name says so when it contains
/// one of them in any case (`PAGO_FALLIDO`, `paymentDeclined`,
/// `cobrar.unknown`).
const FAILURE_WORDS: &[&str] = &[
    "FAIL",
    "FALL",
    "ERROR",
    "TIMEOUT",
    "TIME_OUT",
    "TIMED_OUT",
    "EXPIR",
    "DECLIN",
    "REJECT",
    "RECHAZ",
    "DENIED",
    "DENEG",
    "UNKNOWN",
    "DESCONOC",
    "SIN_RESPUESTA",
    "NO_RESPONSE",
    "RETRY",
    "REINTENT",
];

/// Whether an event name says failure, timeout, unknown outcome or retry.
fn says_failure(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    FAILURE_WORDS.iter().any(|word| upper.contains(word))
}

/// What a transition's trigger tells about the attempt before it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// Nothing: an answer, or the machine's own move.
    Nothing,
    /// An event whose name says failure (`says_failure`).
    Failure,
    /// A timer: a timeout when nothing was delivered since the attempt.
    Timer,
}

/// How far a run has come since the first attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing delivered yet: a timer now is the attempt's timeout.
    Awaiting,
    /// Events delivered, none saying failure: a timer now is a schedule.
    Answered,
    /// The attempt failed, timed out or has an unknown outcome.
    Failed,
}

/// The phases in the order of their index in the search's state.
const PHASES: [Phase; 3] = [Phase::Awaiting, Phase::Answered, Phase::Failed];

impl Phase {
    fn index(self) -> usize {
        self as usize
    }

    /// The phase after a step with this signal and cost.
    fn after(self, signal: Signal, cost: Cost) -> Phase {
        match (self, signal) {
            (Phase::Failed, _) | (_, Signal::Failure) | (Phase::Awaiting, Signal::Timer) => {
                Phase::Failed
            }
            _ if cost != Cost::Free => Phase::Answered,
            (phase, _) => phase,
        }
    }
}

/// One operation: an effect with its arguments as written, or one
/// invocation of it (by the state that invokes it, with its id).
struct Operation<'m> {
    effect: &'m str,
    /// The arguments, or the invocation's input.
    args: &'m IndexMap<String, Argument>,
    invoker: Option<(StateId, &'m str)>,
}

impl Operation<'_> {
    /// Whether the action performs this operation. Expressions compare
    /// without their spans, and arguments whatever their order.
    fn is(&self, action: &Action) -> bool {
        self.invoker.is_none()
            && matches!(action, Action::Effect { name, args, .. }
            if name.text == self.effect && args == self.args)
    }

    /// The invocation this operation is, if it is one.
    fn invocation<'x>(&self, m: &'x crate::model::Machine) -> Option<&'x crate::model::Invocation> {
        let (state, id) = self.invoker?;
        m.state(state).invoke.iter().find(|i| i.id.text == id)
    }

    /// Whether entering the state starts this operation, an invocation.
    fn starts_in(&self, state: StateId) -> bool {
        self.invoker.is_some_and(|(s, _)| s == state)
    }

    /// `` `cobrar` ``; with its arguments (`` `notificar(plantilla:
    /// "enviado")` ``) when the effect has other operations, which they
    /// tell apart; an invocation by its id (`` the invocation `cobro` of
    /// `cobrar` ``) when it has one of its own.
    fn display(&self, m: &crate::model::Machine, several: bool) -> String {
        if let Some((_, id)) = self.invoker
            && id != self.effect
            && !m.is_stand_in(id)
        {
            return format!("the invocation `{id}` of {}", m.host_name(self.effect));
        }
        if !several || self.args.is_empty() || self.invoker.is_some() {
            return m.host_name(self.effect);
        }
        let args: Vec<String> = self
            .args
            .iter()
            .map(|(field, a)| format!("{field}: {}", a.expr))
            .collect();
        format!("`{}({})`", self.effect, args.join(", "))
    }
}

/// The distinct operations of an effect, in the order the machine's action
/// lists first name them (states' entry and exit, then transitions).
fn operations<'m>(m: &'m crate::model::Machine, effect: &'m str) -> Vec<Operation<'m>> {
    let lists = m
        .states
        .iter()
        .flat_map(|s| [&s.entry, &s.exit])
        .chain(m.transitions.iter().map(|t| &t.actions));
    let mut out: Vec<Operation> = Vec::new();
    for action in lists.flatten() {
        if let Action::Effect { name, args, .. } = action
            && name.text == effect
            && !out.iter().any(|op| op.args == args)
        {
            out.push(Operation {
                effect,
                args,
                invoker: None,
            });
        }
    }
    for s in m.state_ids() {
        for invocation in &m.state(s).invoke {
            if invocation.src.text == effect {
                out.push(Operation {
                    effect,
                    args: &invocation.input,
                    invoker: Some((s, &invocation.id.text)),
                });
            }
        }
    }
    out
}

/// Where a search for a retry starts: after a transition that performed the
/// operation, or after the start.
#[derive(Clone, Copy)]
enum Origin {
    Start,
    Transition(TransitionId),
}

/// A retry the search found: from the origin along `path` to `at`, where
/// `transition` performs the operation again.
struct Found {
    origin: Option<Origin>,
    path: Vec<EdgeIndex>,
    at: NodeIndex,
    transition: TransitionId,
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    // Effects with `idempotency: none`, then the host services (the
    // invoked srcs no effect declares), whose idempotency is unknown.
    let mut unkeyed: Vec<(&str, Option<&EffectDecl>)> = (m.effects.iter())
        .filter(|(_, d)| d.idempotency == Idempotency::None)
        .map(|(name, d)| (name.as_str(), Some(d)))
        .collect();
    for invocation in m.states.iter().flat_map(|s| &s.invoke) {
        let src = invocation.src.text.as_str();
        if invocation.effect(m).is_none() && !unkeyed.iter().any(|(name, _)| *name == src) {
            unkeyed.push((src, None));
        }
    }
    if unkeyed.is_empty() {
        return;
    }
    // What each transition leaves, and what its trigger says, do not
    // depend on the operation.
    let left: Vec<Vec<StateId>> = (0..m.transitions.len() as u32)
        .map(|t| states_left(cx, TransitionId(t)))
        .collect();
    let signals: Vec<Signal> = (0..m.transitions.len() as u32)
        .map(|t| signal(cx, TransitionId(t)))
        .collect();
    for (name, decl) in unkeyed {
        let ops = operations(m, name);
        let several = ops.len() > 1;
        for op in &ops {
            let signals = own_signals(cx, op, &signals);
            if let Some(finding) = retry_finding(cx, op, several, decl, &left, &signals) {
                cx.report(finding);
            }
        }
    }
}

/// The signals as an attempt of `op` sees them: an invocation's outcome is
/// its own completion, so the failure of another invocation
/// (`xstate.error.actor.OTHER`) tells nothing of it, and is an answer like
/// any other event.
fn own_signals(cx: &Cx, op: &Operation, signals: &[Signal]) -> Vec<Signal> {
    let mut own = signals.to_vec();
    let Some((_, id)) = op.invoker else {
        return own;
    };
    for (index, signal) in own.iter_mut().enumerate() {
        let t = TransitionId(index as u32);
        if *signal == Signal::Failure
            && let Trigger::Event(_) = cx.machine.transition(t).trigger
            && let Some((Completion::Error, other)) = Completion::of_event(&trigger_name(cx, t))
            && other != id
        {
            *signal = Signal::Nothing;
        }
    }
    own
}

/// What the trigger of `t` says about an attempt before it.
fn signal(cx: &Cx, t: TransitionId) -> Signal {
    match &cx.machine.transition(t).trigger {
        Trigger::After(_) => Signal::Timer,
        Trigger::Always => Signal::Nothing,
        Trigger::Event(_) if says_failure(&trigger_name(cx, t)) => Signal::Failure,
        Trigger::Event(_) => Signal::Nothing,
    }
}

/// The event a witness delivers for `t` (as written, when no event of the
/// machine's table matches it), or its timer.
fn trigger_name(cx: &Cx, t: TransitionId) -> String {
    match &cx.machine.transition(t).trigger {
        Trigger::After(delay) => format!("after {delay}"),
        Trigger::Always => "always".to_string(),
        Trigger::Event(descriptor) => match cx.graph.representative(t) {
            Some(e) => cx.graph.events.name(e).to_string(),
            None => descriptor.to_string(),
        },
    }
}

/// The finding for a retry of `op`, if some path retries it.
fn retry_finding(
    cx: &Cx,
    op: &Operation,
    several: bool,
    decl: Option<&EffectDecl>,
    left: &[Vec<StateId>],
    signals: &[Signal],
) -> Option<Finding> {
    let m = cx.machine;
    let performs = |actions: &[Action]| actions.iter().any(|a| op.is(a));
    let entering = entering_states(cx, |s| performs(&m.state(s).entry) || op.starts_in(s));
    // Whether a transition performs it by its actions or by the exit
    // actions of the states it leaves.
    let acts: Vec<bool> = (0..m.transitions.len() as u32)
        .map(TransitionId)
        .map(|t| {
            performs(&m.transition(t).actions)
                || left[t.index()].iter().any(|&s| performs(&m.state(s).exit))
        })
        .collect();
    if !entering.iter().any(|&b| b) && !acts.iter().any(|&b| b) {
        return None;
    }
    let verify = decl.and_then(|d| d.verify.as_ref()).map(|t| t.state);
    let found = search(cx, verify, &entering, &acts, signals)?;

    // The witness: perform it once, go round, perform it again.
    let mut steps = match found.origin {
        Some(Origin::Transition(t)) => cx.taking(t, None).map(|(s, _)| s).unwrap_or_default(),
        _ => Vec::new(),
    };
    steps.extend(cx.steps_of(&found.path));
    steps.extend(cx.drive_sibling(found.at, found.transition));
    steps.extend(cx.step_taking(found.transition, None));
    // Should the graph's path not replay (a guard on the way), the search
    // of the machine's runs looks for the retry's delivery after a run
    // that performed the effect.
    let claim = match steps.last() {
        Some(&WitnessStep::Event { event, .. }) => Some(super::Claim {
            event,
            taking: vec![found.transition],
            shape: super::Shape::Retry,
            effect: Some(op.effect.to_string()),
        }),
        _ => None,
    };
    let witness = (!steps.is_empty()).then(|| Witness {
        steps,
        end: WitnessEnd::Retry {
            effect: op.effect.to_string(),
        },
    });

    let cause = cause(cx, &found, signals);
    let what = op.display(m, several);
    let name = op.effect;
    let shown = m.host_name(name);
    let t = m.transition(found.transition);
    let mut labels = Vec::new();
    match decl {
        Some(decl) => labels.push(Label {
            span: decl.span,
            message: "declared `idempotency: none`".into(),
        }),
        None => labels.extend(op.invocation(m).map(|i| Label {
            span: i.span,
            message: format!("{shown} is invoked here; nothing declares its idempotency"),
        })),
    }
    let message = match verify {
        Some(v) => {
            labels.push(Label {
                span: m.state(v).span,
                message: "the verification state the retry skips".into(),
            });
            format!(
                "this transition performs {what} again after {cause}, without passing through its `verify` state `{}`",
                m.display_name(v)
            )
        }
        None if decl.is_some() => format!(
            "this transition performs {what} again after {cause}, and {shown} names no `verify` state to ask first"
        ),
        None => format!(
            "this transition performs {what} again after {cause}, and nothing says whether {shown} acts twice or names a `verify` state to ask first"
        ),
    };
    let declared_name = if m.is_stand_in(name) { "NAME" } else { name };
    let help = match (decl, fact_note::xstate_place(m, "effects", declared_name, &[("verify", "STATE")])) {
        (Some(_), Some(place)) => format!(
            "give `{name}` a `verify` state that asks the receiver whether it already happened, {place}, and retry only from there"
        ),
        (Some(_), None) => format!(
            "give `{name}` a `verify` state that asks the receiver whether it already happened, and retry only from there"
        ),
        (None, Some(_)) => {
            let place = fact_note::xstate_place(m, "effects", declared_name, &[("idempotency", "key")])
                .unwrap_or_default();
            let named = if m.is_stand_in(name) {
                "give it a name in `setup({ actors })` or `setup({ actions })` (v4: the machine's options) and declare that name".to_string()
            } else {
                format!("declare `{name}`")
            };
            format!(
                "where its receiver honours idempotency keys, {named} as an effect {place}; otherwise declare it with `idempotency: 'none'` and a `verify` state that asks whether the call already happened (`verify: 'STATE'`), and retry only from there"
            )
        }
        (None, None) => format!(
            "declare {shown} as an effect: `idempotency: key` where its receiver honours idempotency keys; otherwise give it a `verify` state that asks whether the call already happened, and retry only from there"
        ),
    };
    Some(Finding {
        lint: Lint::RetryWithoutVerification,
        span: t.span,
        state: t.source,
        message,
        labels,
        help: Some(help),
        witness,
        claim,
        fix: None,
    })
}

/// A 0-1 search over (node, phase) from just after each reachable
/// transition that performs the operation, stopping at the first transition
/// that performs it again in `Phase::Failed`. A transition that performs it
/// in another phase is a new attempt, not a retry, and the search does not
/// go on through it: the search from that attempt does.
fn search(
    cx: &Cx,
    verify: Option<StateId>,
    entering: &[bool],
    acts: &[bool],
    signals: &[Signal],
) -> Option<Found> {
    let m = cx.machine;
    let blocked = |node: NodeIndex| {
        let s = cx.graph.node_state(node);
        verify.is_some_and(|v| cx.graph.contains(v, s))
    };
    // A sibling's transition taken from a hub passes through the states
    // that drive the sibling to its source first: through `verify` when
    // one of them is in it.
    let driven_through_verify = |from: NodeIndex, edge: Edge| match (verify, edge) {
        (Some(v), Edge::Transition(t)) => cx
            .driven_states(from, t)
            .iter()
            .any(|&s| cx.graph.contains(v, s)),
        _ => false,
    };
    let runs_edge = |edge: Edge, to: NodeIndex| match edge {
        Edge::Transition(t) => {
            acts[t.index()] || matches!(cx.graph.node(to), Node::Enter(x) if entering[x.index()])
        }
        _ => false,
    };
    let next_phase = |phase: Phase, edge: Edge| match edge {
        Edge::Transition(t) => phase.after(signals[t.index()], cx.graph.cost(edge)),
        _ => phase,
    };
    let key = |node: NodeIndex, phase: Phase| node.index() * PHASES.len() + phase.index();

    let n = cx.graph.steps.node_count() * PHASES.len();
    let mut origin: Vec<Option<Origin>> = vec![None; n];
    let mut queue = VecDeque::new();
    let mut dist = vec![u32::MAX; n];
    let mut pred: Vec<Option<(EdgeIndex, usize)>> = vec![None; n];
    let mut start = |node: NodeIndex, o: Origin, queue: &mut VecDeque<usize>| {
        let k = key(node, Phase::Awaiting);
        if dist[k] != 0 && !blocked(node) {
            dist[k] = 0;
            origin[k] = Some(o);
            queue.push_back(k);
        }
    };
    if entering[StateId::ROOT.index()] {
        start(cx.graph.enter(StateId::ROOT), Origin::Start, &mut queue);
    }
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if !cx.transition_reachable(tid) {
            continue;
        }
        let from = cx.graph.at(t.source);
        let mut performed = false;
        for e in cx.graph.steps.edges(from) {
            if *e.weight() == Edge::Transition(tid) && runs_edge(*e.weight(), e.target()) {
                performed = true;
                start(e.target(), Origin::Transition(tid), &mut queue);
            }
        }
        if !performed && acts[index] && cx.graph.targets(tid).is_empty() {
            start(from, Origin::Transition(tid), &mut queue);
        }
    }

    let mut done = vec![false; n];
    let mut found: Option<(usize, NodeIndex, TransitionId)> = None;
    'search: while let Some(k) = queue.pop_front() {
        if done[k] {
            continue;
        }
        done[k] = true;
        let node = NodeIndex::new(k / PHASES.len());
        let phase = PHASES[k % PHASES.len()];
        // A targetless transition performs it again in place.
        if let Node::At(s) = cx.graph.node(node) {
            let state = m.state(s);
            for &t in state.on.iter().chain(&state.after).chain(&state.always) {
                if acts[t.index()]
                    && cx.graph.targets(t).is_empty()
                    && next_phase(phase, Edge::Transition(t)) == Phase::Failed
                {
                    found = Some((k, node, t));
                    break 'search;
                }
            }
        }
        for e in cx.graph.steps.edges(node) {
            let weight = *e.weight();
            if weight == Edge::History
                || blocked(e.target())
                || driven_through_verify(node, weight)
            {
                continue;
            }
            let next = next_phase(phase, weight);
            if let Edge::Transition(t) = weight
                && runs_edge(weight, e.target())
            {
                if next == Phase::Failed {
                    found = Some((k, node, t));
                    break 'search;
                }
                continue;
            }
            let to = key(e.target(), next);
            let free = cx.graph.cost(weight) == Cost::Free;
            let d = dist[k] + u32::from(!free);
            if d < dist[to] {
                dist[to] = d;
                pred[to] = Some((e.id(), k));
                if free {
                    queue.push_front(to);
                } else {
                    queue.push_back(to);
                }
            }
        }
    }
    let (mut k, at, transition) = found?;
    let mut path = Vec::new();
    while let Some((e, previous)) = pred[k] {
        path.push(e);
        k = previous;
        if path.len() > n {
            break;
        }
    }
    path.reverse();
    Some(Found {
        origin: origin[k],
        path,
        at,
        transition,
    })
}

/// What made the found performance a retry, for the message: the first
/// step after the attempt that put the run in `Phase::Failed`, else the
/// retry's own trigger.
fn cause(cx: &Cx, found: &Found, signals: &[Signal]) -> String {
    let mut phase = Phase::Awaiting;
    let edges = found.path.iter().map(|&e| cx.graph.steps[e]);
    for edge in edges.chain([Edge::Transition(found.transition)]) {
        let Edge::Transition(t) = edge else {
            continue;
        };
        let signal = signals[t.index()];
        phase = phase.after(signal, cx.graph.cost(edge));
        if phase == Phase::Failed {
            let name = trigger_name(cx, t);
            return match signal {
                Signal::Timer => format!("a timeout (`{name}`)"),
                _ => format!("`{name}`"),
            };
        }
    }
    "a failure".to_string()
}

/// The states transition `t` surely leaves, whose exit actions it runs: its
/// source and the source's ancestors below the transition's domain, and the
/// states inside the source that are active whenever it is. Empty for a
/// transition that exits nothing.
fn states_left(cx: &Cx, t: TransitionId) -> Vec<StateId> {
    let m = cx.machine;
    let Some(domain) = cx.graph.domain(t) else {
        return Vec::new();
    };
    let source = m.transition(t).source;
    std::iter::once(source)
        .chain(m.ancestors(source))
        .take_while(|&s| s != domain)
        .chain(active_with(m, source))
        .collect()
}

/// The states inside `s` that are active whenever `s` is, and so exited
/// with it: every region of a parallel state, and the only child of a
/// compound state that has no other, and so on down. Which child of a
/// compound state with several is active depends on the path, which this
/// per-transition count does not know.
fn active_with(m: &crate::model::Machine, s: StateId) -> Vec<StateId> {
    let mut out = Vec::new();
    let mut pending = vec![s];
    while let Some(state) = pending.pop() {
        let children: Vec<StateId> = m.substates(state).collect();
        let always = matches!(m.state(state).kind, StateKind::Parallel) || children.len() == 1;
        if always {
            out.extend(&children);
            pending.extend(children);
        }
    }
    out
}

/// For each state, whether entering it (by default entry below it) enters
/// a state that `performs` on entry. History states count when their
/// parent holds one, since they may restore it.
fn entering_states(cx: &Cx, performs: impl Fn(StateId) -> bool) -> Vec<bool> {
    let m = cx.machine;
    let mut out = vec![false; m.states.len()];
    for c in m.state_ids() {
        if !performs(c) {
            continue;
        }
        out[c.index()] = true;
        let mut child = c;
        for p in m.ancestors(c) {
            let by_default = match m.state(p).kind {
                StateKind::Parallel => true,
                _ => cx
                    .graph
                    .initial(p)
                    .iter()
                    .any(|&x| cx.graph.contains(child, x)),
            };
            if !by_default {
                break;
            }
            out[p.index()] = true;
            child = p;
        }
        if let Some(parent) = m.state(c).parent {
            for a in std::iter::once(parent).chain(m.ancestors(parent)) {
                for &h in &m.state(a).children {
                    if cx.graph.is_history(h) && cx.graph.contains(a, c) {
                        out[h.index()] = true;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::says_failure;
    use crate::diagnostic::Diagnostic;
    use crate::syntax::{Syntax, parse};

    fn retries(text: &str) -> Vec<Diagnostic> {
        crate::lint::lint(&parse(text, Syntax::Yaml).expect("loads"))
            .into_iter()
            .filter(|d| d.code == "I008")
            .collect()
    }

    /// A charge in `cobrando`, and what `cobrando` and `activo` do next.
    fn subscription(cobrando: &str, activo: &str) -> String {
        format!(
            "machine: suscripcion
events:
  ALTA: {{ id: altaId }}
  PAGO_OK: {{ id: pagoId }}
  PENDIENTE: {{ id: pagoId }}
effects:
  cobrar: {{ idempotency: none }}
initial: nuevo
states:
  nuevo: {{ on: {{ ALTA: cobrando }} }}
  cobrando:
    entry: [cobrar]
{cobrando}
  activo:
{activo}
  esperando:
    on:
      FALLO: cobrando
"
        )
    }

    #[test]
    fn a_timer_after_an_answer_is_a_schedule_and_before_one_a_timeout() {
        let renewal = subscription(
            "    on: { PAGO_OK: activo }",
            "    after: { 30d: cobrando }",
        );
        assert!(retries(&renewal).is_empty(), "a monthly renewal");
        let timeout = subscription(
            "    on: { PAGO_OK: activo }\n    after: { 30s: { target: cobrando, reenter: true } }",
            "    on: {}",
        );
        let found = retries(&timeout);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].witness, ["ALTA", "after 30s*"]);
        assert_eq!(found[0].verdict, Some(crate::Verdict::Confirmed));
    }

    #[test]
    fn a_failure_counts_after_an_answer_too() {
        let staged = subscription(
            "    on: { PAGO_OK: activo, PENDIENTE: esperando }",
            "    on: {}",
        );
        let found = retries(&staged);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].witness, ["ALTA", "PENDIENTE", "FALLO*"]);
        assert!(found[0].message.contains("after `FALLO`"), "{found:?}");
    }

    /// `first` charges on entering `cobrando`, `retry` on entering
    /// `reintentando` after REINTENTAR.
    fn charge(first: &str, retry: &str) -> String {
        format!(
            "machine: m
context: {{ total: 5 }}
events:
  PEDIDO: {{ id: p }}
  REINTENTAR: {{ id: r }}
effects:
  cobrar: {{ idempotency: none }}
initial: nuevo
states:
  nuevo: {{ on: {{ PEDIDO: cobrando }} }}
  cobrando:
    entry:
      - {{ effect: cobrar, with: {first} }}
    on: {{ REINTENTAR: reintentando }}
  reintentando:
    entry:
      - {{ effect: cobrar, with: {retry} }}
"
        )
    }

    #[test]
    fn arguments_compare_by_structure_whatever_their_place_and_order() {
        let same = charge(
            "{ importe: context.total, moneda: '\"EUR\"' }",
            "{ moneda: '\"EUR\"',   importe: 'context.total' }",
        );
        let found = retries(&same);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].witness, ["PEDIDO", "REINTENTAR*"]);
        let other = charge(
            "{ importe: context.total, moneda: '\"EUR\"' }",
            "{ importe: context.total, moneda: '\"USD\"' }",
        );
        assert!(retries(&other).is_empty(), "another charge, not a retry");
    }

    /// A verification invoked in `verificando`, whose error leads to
    /// `esperando`; `effects` declares what it declares of the src.
    fn verification(effects: &str) -> String {
        format!(
            "machine: kyc
events:
  ENVIAR: {{ id: envioId }}
{effects}
initial: nuevo
states:
  nuevo: {{ on: {{ ENVIAR: verificando }} }}
  verificando:
    invoke:
      src: verificarDocumento
      onDone: verificado
      onError: esperando
  esperando:
    after: {{ 5s: verificando }}
  verificado: {{ type: final }}
"
        )
    }

    #[test]
    fn an_invoked_host_service_retried_after_its_error_is_a_retry() {
        let found = retries(&verification(""));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].witness,
            ["ENVIAR", "xstate.error.actor.verificarDocumento", "after 5s*"]
        );
        assert_eq!(found[0].verdict, Some(crate::Verdict::Confirmed));
        assert!(
            found[0].message.contains("nothing says whether `verificarDocumento` acts twice"),
            "{found:?}"
        );
        // Declared with a key, a repeat is safe; declared `none` with a
        // `verify` state on the way, the retry asks first.
        let keyed = verification("effects:\n  verificarDocumento: { idempotency: key }");
        assert!(retries(&keyed).is_empty());
        let none = verification("effects:\n  verificarDocumento: { idempotency: none }");
        assert_eq!(retries(&none).len(), 1);
    }

    /// An invocation's outcome is its own completion: another invocation's
    /// failure on the way is no failure of its attempt.
    #[test]
    fn the_failure_of_another_invocation_makes_no_retry() {
        let text = "machine: authenticator
events:
  SIGN_IN: { id: requestId }
  SIGN_OUT: { id: requestId }
initial: signedOut
states:
  signedOut: { on: { SIGN_IN: syncing } }
  syncing:
    invoke:
      src: syncDevices
      onDone: ready
      onError: ready
  ready:
    invoke:
      src: refreshSession
    on: { SIGN_OUT: signedOut }
";
        let found = retries(text);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("`syncDevices`"), "{found:#?}");
        assert_eq!(
            found[0].witness,
            ["SIGN_IN", "xstate.error.actor.syncDevices", "SIGN_OUT", "SIGN_IN*"]
        );
    }

    #[test]
    fn failure_words_are_found_in_any_case_and_style() {
        for name in [
            "PAGO_FALLIDO",
            "paymentDeclined",
            "cobrar.unknown",
            "error.execution",
            "Timed_Out",
            "RECHAZADO",
            "REINTENTAR",
            "retry",
        ] {
            assert!(says_failure(name), "{name}");
        }
        for name in ["PAGO_OK", "OTRA_COMPRA", "ENVIAR", "REENVIAR", "APROBAR"] {
            assert!(!says_failure(name), "{name}");
        }
    }
}
