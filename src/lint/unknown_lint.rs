use super::{Finding, Lint, Stage, Used};
use crate::syntax::edit::Editor;
use crate::model::Machine;

declare_lint! {
    /// ### What it does
    ///
    /// Flags an `allow` entry whose key is neither a lint's name nor its
    /// code.
    ///
    /// ### Why is this bad?
    ///
    /// It suppresses nothing, usually because of a typo, so the finding it
    /// was meant to excuse is still reported, or a later one is silently
    /// not.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// allow:
    ///   reentry-rerun-actions: "refreshes are counted on purpose"
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// allow:
    ///   reentry-reruns-actions: "refreshes are counted on purpose"
    /// ```
    code: "S010",
    severity: Warning,
    stage: Stage::Suppressions(check),
}

fn check(machine: &Machine, _used: &Used, _editor: Option<&dyn Editor>, out: &mut Vec<Finding>) {
    let names: Vec<&str> = Lint::ALL.iter().map(|l| l.name()).collect();
    for state in machine.state_ids() {
        for (name, allow) in &machine.state(state).allow {
            if Lint::from_name_or_code(name).is_some() {
                continue;
            }
            out.push(Finding {
                lint: Lint::UnknownLint,
                span: allow.span,
                state,
                message: format!("`allow` names an unknown lint `{name}`"),
                labels: Vec::new(),
                help: crate::diagnostic::did_you_mean(name, names.iter().copied())
                    .map(|s| format!("did you mean `{s}`?")),
                witness: None,
                claim: None,
                fix: None,
            });
        }
    }
}
