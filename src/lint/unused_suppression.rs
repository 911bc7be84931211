use super::{Finding, Lint, Stage, Used};
use crate::diagnostic::Fix;
use crate::syntax::edit::Editor;
use crate::model::Machine;

declare_lint! {
    /// ### What it does
    ///
    /// Flags an `allow` entry that suppresses nothing: the lint it names
    /// reports nothing in that state or inside it. An `allow` of a lint
    /// that loading reports (S001, S007, S008) can never suppress anything.
    ///
    /// ### Why is this bad?
    ///
    /// A stale suppression outlives the hazard it excused and would hide the
    /// next one, unseen, with a reason that no longer holds.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// pagado:
    ///   allow:
    ///     self-accepting-event: "partial payments"   # none left here
    /// ```
    ///
    /// ### Use instead
    ///
    /// Remove the entry.
    code: "S009",
    severity: Warning,
    stage: Stage::Suppressions(check),
}

fn check(machine: &Machine, used: &Used, editor: Option<&dyn Editor>, out: &mut Vec<Finding>) {
    for state in machine.state_ids() {
        let allows = &machine.state(state).allow;
        let unused: Vec<(&String, Lint)> = allows
            .keys()
            .filter_map(|name| Some((name, Lint::from_name_or_code(name)?)))
            .filter(|(name, lint)| {
                !matches!(lint, Lint::UnusedSuppression | Lint::UnknownLint)
                    && !used.contains_key(&(state, (*name).clone()))
            })
            .collect();
        // When every entry goes, the fix of each removes the whole `allow`
        // section: the same fix, applied once, leaves no empty `allow:`.
        let all_of_state = unused.len() == allows.len();
        for (name, lint) in unused {
            let allow = &allows[name];
            let help = if lint.reported_by_loading() {
                format!(
                    "`{}` is a load error: a machine that loads has none to suppress",
                    lint.name()
                )
            } else {
                format!(
                    "`{}` reports nothing in `{}` or inside it; remove the `allow`",
                    lint.name(),
                    machine.display_name(state)
                )
            };
            out.push(Finding {
                lint: Lint::UnusedSuppression,
                span: allow.span,
                state,
                message: format!("`allow {name}` suppresses nothing"),
                labels: Vec::new(),
                help: Some(help),
                witness: None,
                claim: None,
                // Suppressions change what is reported, never what runs.
                fix: editor
                    .and_then(|e| e.remove_allow(allow.span, all_of_state))
                    .map(|edits| Fix::safe_edits(format!("remove `allow {name}`"), edits)),
            });
        }
    }
}
