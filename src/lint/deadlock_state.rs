use super::{Cx, Finding, Lint, Stage};
use crate::model::{StateId, StateKind};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a reachable atomic state that is not `final` and that no
    /// transition leaves: neither its own nor an ancestor's (`on`, `always`
    /// or `after`). A state inside a parallel state is not flagged, since
    /// the other regions may still move.
    ///
    /// ### Why is this bad?
    ///
    /// A process that gets there waits forever without being done: it
    /// never completes, and nothing tells it apart from one still working.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// enviado: {}
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// enviado: { type: final }
    /// ```
    code: "S004",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for s in m.state_ids() {
        let state = m.state(s);
        if s == StateId::ROOT
            || state.kind != StateKind::Atomic
            || !cx.graph.is_leaf(s)
            || !cx.reachable(s)
            || cx.graph.in_parallel(s)
        {
            continue;
        }
        let leaves = std::iter::once(s).chain(m.ancestors(s)).any(|a| {
            let a = m.state(a);
            !(a.on.is_empty() && a.always.is_empty() && a.after.is_empty())
        });
        if leaves {
            continue;
        }
        cx.report(Finding {
            lint: Lint::DeadlockState,
            span: state.span,
            state: s,
            message: format!(
                "`{}` is not final and no transition leaves it",
                m.display_name(s)
            ),
            labels: Vec::new(),
            help: Some("mark it `type: final`, or add the transition that leaves it".into()),
            witness: None,
            claim: None,
            fix: None,
        });
    }
}
