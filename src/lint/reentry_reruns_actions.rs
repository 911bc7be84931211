use super::{Cx, Finding, Lint, Stage, analysis};
use crate::diagnostic::Label;
use crate::model::{Idempotency, StateId, TransitionId};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a transition on a delivered event that exits and re-enters a
    /// state (a self-transition with `reenter: true`, or a transition from
    /// inside a state to the state itself or to an ancestor) when the
    /// re-entered states' entry or exit actions are effects (other than
    /// `idempotency: natural` ones), host actions, or updates derived from
    /// their own old value, or when a re-entered state invokes such an
    /// effect or a host service (re-entry cancels the call in flight and
    /// starts it again).
    ///
    /// ### Why is this bad?
    ///
    /// Re-entry runs exit and entry again. A redelivered event that takes
    /// the transition again repeats effects and counts twice, although the
    /// configuration does not change: nothing in a diagram shows it.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// pagado:
    ///   entry: [encolarEnvio]
    ///   on:
    ///     PAGO_CONFIRMADO: { target: pagado, reenter: true }   # queues again
    /// ```
    ///
    /// ### Use instead
    ///
    /// Leave `reenter` out (a self-target without it does not exit the
    /// state), or keep the action on the transition that first enters:
    ///
    /// ```yaml
    /// pagado:
    ///   entry: [encolarEnvio]
    ///   on:
    ///     PAGO_CONFIRMADO: pagado
    /// ```
    code: "I002",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for (tid, t) in cx.reachable_event_transitions() {
        let Some(event) = cx
            .graph
            .trigger_events(tid)
            .iter()
            .copied()
            .find(|&e| cx.graph.events.is_redeliverable(e))
        else {
            continue;
        };
        let reentered = reentered(cx, tid);
        if reentered.is_empty() {
            continue;
        }
        let mut labels = Vec::new();
        let mut reruns = Vec::new();
        let mut timers = false;
        for &s in &reentered {
            let state = m.state(s);
            timers |= !state.after.is_empty();
            for (actions, when) in [(&state.exit, "exit"), (&state.entry, "entry")] {
                let updates = analysis::BlockUpdates::of(actions);
                for action in actions {
                    if let Some(what) = analysis::rerun_hazard(m, &updates, action) {
                        labels.push(Label {
                            span: action.span(),
                            message: format!("{when} of `{}` runs this again", m.display_name(s)),
                        });
                        if !reruns.contains(&what) {
                            reruns.push(what);
                        }
                    }
                }
            }
            for invocation in &state.invoke {
                let natural = invocation
                    .effect(m)
                    .is_some_and(|e| e.idempotency == Idempotency::Natural);
                if natural {
                    continue;
                }
                labels.push(Label {
                    span: invocation.span,
                    message: format!("entering `{}` invokes this again", m.display_name(s)),
                });
                // An invocation without an id of its own is named by its
                // service, as the author knows it.
                let what = if m.is_stand_in(&invocation.id.text) {
                    format!("the invocation of {}", m.host_name(&invocation.src.text))
                } else {
                    format!("invocation `{}`", invocation.id.text)
                };
                if !reruns.contains(&what) {
                    reruns.push(what);
                }
            }
        }
        if reruns.is_empty() {
            continue;
        }
        let names: Vec<String> = reentered
            .iter()
            .map(|&s| format!("`{}`", m.display_name(s)))
            .collect();
        let mut help = "leave `reenter` out (a self-target without it does not exit the state), or run these actions on the transition that first enters the state".to_string();
        if timers {
            help.push_str("; re-entry also restarts the state's `after` timers");
        }
        let witness = cx
            .repeat_into(tid, event)
            .or_else(|| cx.repeat_witness(tid, event));
        cx.report(Finding {
            lint: Lint::ReentryRerunsActions,
            span: t.span,
            state: t.source,
            message: format!(
                "this transition exits and re-enters {} and runs {} again",
                names.join(", "),
                reruns.join(", ")
            ),
            labels,
            help: Some(help),
            witness,
            claim: Some(super::Claim {
                event,
                taking: Vec::new(),
                shape: super::Shape::Takes(tid),
                effect: None,
            }),
            fix: None,
        });
    }
}

/// The states the transition certainly exits and enters again: its source
/// and the source's ancestors below the domain that it also enters.
fn reentered(cx: &Cx, t: TransitionId) -> Vec<StateId> {
    let m = cx.machine;
    let Some(domain) = cx.graph.domain(t) else {
        return Vec::new();
    };
    let source = m.transition(t).source;
    // A transition that re-enters the root exits every ancestor.
    let outside = cx.graph.reenters_root(t);
    let exited: Vec<StateId> = std::iter::once(source)
        .chain(m.ancestors(source))
        .take_while(|&a| outside || (a != domain && cx.graph.is_strict_descendant(a, domain)))
        .collect();
    if exited.is_empty() {
        return Vec::new();
    }
    let targets: Vec<StateId> = cx
        .transition_targets(t)
        .into_iter()
        .filter_map(|node| match cx.graph.node(node) {
            crate::graph::Node::Enter(x) => Some(x),
            crate::graph::Node::At(_) | crate::graph::Node::Siblings { .. } => None,
        })
        .collect();
    let mut out: Vec<StateId> = exited
        .into_iter()
        .filter(|&a| {
            targets.iter().any(|&x| {
                // An ancestor of a target below the domain is entered; so is
                // a state that a target's default entry leads to.
                cx.graph.contains(a, x)
                    || (cx.graph.contains(x, a) && cx.graph.default_entered(x).contains(&a))
            })
        })
        .collect();
    out.sort_unstable();
    out
}
