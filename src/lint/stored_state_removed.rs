use super::versions::{ChangeCx, ChangeFinding};
use super::{Lint, Stage};
use crate::model::StateKind;

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a state of the old machine that a
    /// process may be in (or that a history state may have recorded) and
    /// that the new machine has no place for: no state of the new machine
    /// has its path, and no migration from the old version maps it. Its
    /// witness is the shortest event path in the old machine to the state.
    ///
    /// ### Why is this bad?
    ///
    /// A durable process outlives the file that defined it. A process that
    /// waits in `awaiting_payment` when a deploy renames the state has a
    /// snapshot that names a state the new machine does not have: restoring
    /// it fails, and the process is stuck until someone moves it by hand.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1 had `awaiting_payment`; version 2 renamed it:
    /// machine: order
    /// version: 2
    /// initial: awaiting_pay
    /// states:
    ///   awaiting_pay: { on: { PAY: paid } }
    ///   paid: { type: final }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep the state, or declare where its processes go:
    ///
    /// ```yaml
    /// machine: order
    /// version: 2
    /// migrations: [{ from: 1, states: { awaiting_payment: awaiting_pay } }]
    /// initial: awaiting_pay
    /// states:
    ///   awaiting_pay: { on: { PAY: paid } }
    ///   paid: { type: final }
    /// ```
    code: "M001",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let old = cx.old.machine;
    let fix = cx.migration_fix();
    for s in cx.stranded_states() {
        let state = old.state(s);
        // A history state of an ancestor may have recorded it: a process
        // that left the ancestor comes back to it.
        let recorded = old.ancestors(s).find_map(|a| {
            old.state(a)
                .children
                .iter()
                .find(|&&c| matches!(old.state(c).kind, StateKind::History(_)))
                .map(|_| a)
        });
        let mut message = format!(
            "a process stored at {} may be in `{}`, which {} does not have",
            cx.old_version(),
            state.path,
            cx.new_version()
        );
        if let Some(a) = recorded {
            message.push_str(&format!(
                " (or the history of `{}` may have recorded it)",
                old.display_name(a)
            ));
        }
        message.push_str(": its snapshot cannot be restored");
        let renamed = cx.renamed_to(s);
        let to = renamed.unwrap_or("NEW.PATH");
        let help = match renamed {
            Some(to) => format!(
                "if it was renamed to `{to}`, {}",
                cx.migration_help(&format!("states: {{ {}: {to} }}", state.path))
            ),
            None => cx.migration_help(&format!("states: {{ {}: {to} }}", state.path)),
        };
        let witness = cx.witness_to(s).unwrap_or_default();
        cx.report(
            Lint::StoredStateRemoved,
            ChangeFinding {
                span: cx.new.span,
                message,
                labels: Vec::new(),
                help: Some(help),
                witness,
                fix: fix.clone(),
            },
        );
    }
}
