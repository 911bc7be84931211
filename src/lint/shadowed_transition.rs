use super::{Cx, Finding, Lint, Stage};
use crate::diagnostic::Label;
use crate::model::TransitionId;

declare_lint! {
    /// ### What it does
    ///
    /// Flags a transition of a state that is never taken because an
    /// earlier unguarded transition of the same state handles every event
    /// it handles (or, for `always`, because an earlier unguarded `always`
    /// exists). Transitions are tried in document order and the first
    /// enabled one wins.
    ///
    /// ### Why is this bad?
    ///
    /// The later transition is dead code, usually because its guard was
    /// meant for the earlier one.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// on:
    ///   RESUELTO:
    ///     - target: fallido
    ///     - target: cobrado
    ///       guard: "event.cobrado"
    /// ```
    ///
    /// ### Use instead
    ///
    /// Put the guarded transition first:
    ///
    /// ```yaml
    /// on:
    ///   RESUELTO:
    ///     - target: cobrado
    ///       guard: "event.cobrado"
    ///     - target: fallido
    /// ```
    code: "S003",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for s in m.state_ids() {
        let state = m.state(s);
        for &t in &state.on {
            let events = cx.graph.trigger_events(t);
            if events.is_empty() {
                continue;
            }
            // The earliest unguarded transition before `t` for each of its events.
            let winners: Vec<Option<TransitionId>> = events
                .iter()
                .map(|&e| {
                    cx.graph
                        .own_handlers(s, e)
                        .take_while(|&h| h != t)
                        .find(|&h| m.transition(h).guard.is_none())
                })
                .collect();
            if winners.iter().all(Option::is_some)
                && let Some(Some(winner)) = winners.first()
            {
                report(cx, t, *winner);
            }
        }
        if let Some(&first) = state
            .always
            .iter()
            .find(|&&t| m.transition(t).guard.is_none())
        {
            for &t in state.always.iter().skip_while(|&&t| t != first).skip(1) {
                report(cx, t, first);
            }
        }
    }
}

fn report(cx: &mut Cx, t: TransitionId, winner: TransitionId) {
    let m = cx.machine;
    cx.report(Finding {
        lint: Lint::ShadowedTransition,
        span: m.transition(t).span,
        state: m.transition(t).source,
        message: "this transition is never taken: an earlier unguarded one always wins".into(),
        labels: vec![Label {
            span: m.transition(winner).span,
            message: "this one is tried first and always enabled".into(),
        }],
        help: Some("put the guarded transitions first, or remove this one".into()),
        witness: None,
    });
}
