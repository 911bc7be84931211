use super::{Cx, Finding, Lint, Stage};
use crate::model::StateId;

declare_lint! {
    /// ### What it does
    ///
    /// Flags a state that no event sequence from the initial configuration
    /// enters, taking every guard as possibly true. Only the outermost such
    /// state is reported; its descendants are unreachable with it.
    ///
    /// ### Why is this bad?
    ///
    /// Dead states are usually a forgotten transition, and they hide their
    /// own hazards: nothing inside them is analysed further.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// initial: a
    /// states:
    ///   a: { on: { GO: b } }
    ///   b: { type: final }
    ///   c: {}            # nothing leads here
    /// ```
    ///
    /// ### Use instead
    ///
    /// Add the transition that should lead there, or remove the state.
    code: "S002",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for s in m.state_ids() {
        if s == StateId::ROOT || cx.graph.is_history(s) || cx.reachable(s) {
            continue;
        }
        let parent = m.state(s).parent.unwrap_or(StateId::ROOT);
        if parent != StateId::ROOT && !cx.reachable(parent) {
            continue;
        }
        cx.report(Finding {
            lint: Lint::UnreachableState,
            span: m.state(s).span,
            state: s,
            message: format!(
                "no event sequence from the initial configuration enters `{}`",
                m.display_name(s)
            ),
            labels: Vec::new(),
            help: Some("add a transition that leads here, or remove the state".into()),
            witness: None,
            claim: None,
            fix: None,
        });
    }
}
