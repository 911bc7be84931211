use super::{Cx, Finding, Lint, Stage, analysis};
use crate::diagnostic::Label;
use crate::model::{Action, TransitionId, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags an `assign` on a transition taken by a delivered event whose new
    /// value is derived from its own old value and the event (a running
    /// total, an append of the event's data) when the transition has no
    /// identity guard: a guard `!(event.ID in context.SEEN)` together with an
    /// assign that adds `event.ID` to the same `SEEN`. A guard on one set
    /// with an append to another does not count.
    ///
    /// ### Why is this bad?
    ///
    /// The graph can protect the configuration, never the context. A
    /// counter cannot know whether it already added an amount, so a
    /// redelivered event adds it twice. A set of seen ids can.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// abierto:
    ///   on:
    ///     COBRO_PARCIAL:
    ///       actions:
    ///         - assign: { cobrado: "context.cobrado + event.importe" }
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// abierto:
    ///   on:
    ///     COBRO_PARCIAL:
    ///       guard: "!(event.cobroId in context.cobrosVistos)"
    ///       actions:
    ///         - assign:
    ///             cobrosVistos: "context.cobrosVistos + [event.cobroId]"
    ///             cobrado: "context.cobrado + event.importe"
    /// ```
    code: "I004",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if !matches!(t.trigger, Trigger::Event(_)) || !cx.transition_reachable(tid) {
            continue;
        }
        let external: Vec<_> = cx
            .graph
            .trigger_events(tid)
            .iter()
            .copied()
            .filter(|&e| cx.graph.events.is_external(e))
            .collect();
        if external.is_empty() {
            continue;
        }
        let marks = cx.facts[index].marks.clone();
        let protected = external.iter().all(|&e| {
            analysis::protected_by(t.guard.as_ref(), &marks, cx.decl(e)).is_some()
        });
        if protected {
            continue;
        }
        let tested: Vec<String> = t
            .guard
            .as_ref()
            .map(analysis::identity_tests)
            .unwrap_or_default()
            .into_iter()
            .map(|(_, set)| set)
            .collect();
        for action in &t.actions {
            let Action::Assign { fields, .. } = action else {
                continue;
            };
            for (field, assignment) in fields {
                if !analysis::is_cumulative(field, assignment) {
                    continue;
                }
                let help = match tested.first() {
                    Some(set) if !marks.iter().any(|(_, s)| s == set) => format!(
                        "the guard tests `{set}`, but no assign here adds the event's id to `{set}`: record it in the set the guard tests"
                    ),
                    Some(set) => format!(
                        "the guard tests `{set}` with a field that is not the event's id: test the declared `id` field"
                    ),
                    None => "guard the transition with `!(event.ID in context.SEEN)` and add `event.ID` to `SEEN` in the same assign".to_string(),
                };
                let witness = cx.repeat_witness(tid, external[0]);
                cx.report(Finding {
                    lint: Lint::CumulativeUpdate,
                    span: assignment.span,
                    state: t.source,
                    message: format!(
                        "`{field}` is derived from its old value and the event without an identity guard: a repeat applies it twice"
                    ),
                    labels: vec![Label {
                        span: t.span,
                        message: "on this transition".into(),
                    }],
                    help: Some(help),
                    witness,
                });
            }
        }
    }
}
