use std::collections::VecDeque;

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::{Cx, Finding, Lint, Stage, Witness, WitnessEnd};
use crate::diagnostic::Label;
use crate::graph::{Cost, Edge, Node};
use crate::model::{Action, Idempotency, StateId, StateKind, TransitionId};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a transition that performs an effect with `idempotency: none`
    /// again, after a run already performed it, on a path that does not go
    /// through the effect's `verify` state (any path, when the effect names
    /// none). The effect counts as performed by a transition's actions, by
    /// the exit actions of the states it leaves (its source, the source's
    /// ancestors below the transition's domain, and the states inside the
    /// source that are active whenever it is: the regions of a parallel
    /// state, an only child; which of several children is active is not
    /// known, so their exit actions are not counted) and by the entry actions
    /// of the states it enters.
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

/// Where a search for a retry starts: after a transition that performed the
/// effect, or after the start.
#[derive(Clone, Copy)]
enum Origin {
    Start,
    Transition(TransitionId),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    if !m.effects.values().any(|d| d.idempotency == Idempotency::None) {
        return;
    }
    // What each transition leaves does not depend on the effect.
    let left: Vec<Vec<StateId>> = (0..m.transitions.len() as u32)
        .map(|t| states_left(cx, TransitionId(t)))
        .collect();
    for (name, decl) in &m.effects {
        if decl.idempotency != Idempotency::None {
            continue;
        }
        let verify = decl.verify.as_ref().map(|t| t.state);
        let performs = |actions: &[Action]| {
            actions
                .iter()
                .any(|a| matches!(a, Action::Effect { name: n, .. } if &n.text == name))
        };
        let entering = entering_states(cx, |s| performs(&m.state(s).entry));
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
            continue;
        }
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
                acts[t.index()]
                    || matches!(cx.graph.node(to), Node::Enter(x) if entering[x.index()])
            }
            _ => false,
        };

        // Sources: just after each reachable transition that performs it.
        let n = cx.graph.steps.node_count();
        let mut origin: Vec<Option<Origin>> = vec![None; n];
        let mut queue = VecDeque::new();
        let mut dist = vec![u32::MAX; n];
        let mut pred = vec![None; n];
        let mut start = |node: NodeIndex, o: Origin, queue: &mut VecDeque<NodeIndex>| {
            if dist[node.index()] != 0 && !blocked(node) {
                dist[node.index()] = 0;
                origin[node.index()] = Some(o);
                queue.push_back(node);
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

        // A 0-1 search that stops at the first transition performing it again.
        let mut done = vec![false; n];
        let mut found: Option<(NodeIndex, TransitionId)> = None;
        'search: while let Some(node) = queue.pop_front() {
            if done[node.index()] {
                continue;
            }
            done[node.index()] = true;
            if let Node::At(s) = cx.graph.node(node) {
                for &t in &m.state(s).on {
                    if acts[t.index()] && cx.graph.targets(t).is_empty() {
                        found = Some((node, t));
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
                if let Edge::Transition(t) = weight
                    && runs_edge(weight, e.target())
                {
                    found = Some((node, t));
                    break 'search;
                }
                let free = cx.graph.cost(weight) == Cost::Free;
                let d = dist[node.index()] + u32::from(!free);
                if d < dist[e.target().index()] {
                    dist[e.target().index()] = d;
                    pred[e.target().index()] = Some(e.id());
                    if free {
                        queue.push_front(e.target());
                    } else {
                        queue.push_back(e.target());
                    }
                }
            }
        }
        let Some((at, retry)) = found else {
            continue;
        };

        // The witness: perform it once, go round, perform it again.
        let (first, path) = crate::graph::path_to(&cx.graph.steps, &pred, at);
        let mut steps = match origin[first.index()] {
            Some(Origin::Transition(t)) => cx.taking(t, None).map(|(s, _)| s).unwrap_or_default(),
            _ => Vec::new(),
        };
        steps.extend(cx.steps_of(&path));
        steps.extend(cx.drive_sibling(at, retry));
        steps.extend(cx.step_taking(retry, None));
        let witness = (!steps.is_empty()).then(|| Witness {
            steps,
            end: WitnessEnd::Retry {
                effect: name.clone(),
            },
        });

        let t = m.transition(retry);
        let mut labels = vec![Label {
            span: decl.span,
            message: "declared `idempotency: none`".into(),
        }];
        let message = match verify {
            Some(v) => {
                labels.push(Label {
                    span: m.state(v).span,
                    message: "the verification state the retry skips".into(),
                });
                format!(
                    "this transition performs `{name}` again without passing through its `verify` state `{}`",
                    m.display_name(v)
                )
            }
            None => format!(
                "this transition performs `{name}` again, and `{name}` names no `verify` state to ask first"
            ),
        };
        cx.report(Finding {
            lint: Lint::RetryWithoutVerification,
            span: t.span,
            state: t.source,
            message,
            labels,
            help: Some(format!(
                "give `{name}` a `verify` state that asks the receiver whether it already happened, and retry only from there"
            )),
            witness,
            claim: None,
        });
    }
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
