use super::versions::{ChangeCx, ChangeFinding};
use super::{Lint, Stage};
use crate::model::{Carry, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a delayed transition (`after`) of
    /// a state a process may be in, whose timer the new machine cannot
    /// continue: the state (or the one a migration maps it to) has no
    /// delayed transition at that place, and no migration from the old
    /// version says `timers: drop`. The witness leads to the state.
    ///
    /// ### Why is this bad?
    ///
    /// A stored process keeps its pending timers as `after:STATE[i]`. When
    /// the state or its `i`-th delayed transition is gone, the snapshot
    /// names a timer the machine does not have: restoring it fails, and the
    /// reminder or timeout it waited for never fires.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1: awaiting_payment: { after: { 24h: expired } }
    /// awaiting_payment: { on: { PAY: paid } }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep the delayed transition, or drop the pending timers explicitly:
    ///
    /// ```yaml
    /// migrations: [{ from: 1, timers: drop }]
    /// ```
    code: "M005",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    if cx
        .migration
        .is_some_and(|m| m.timers == Some(Carry::Drop))
    {
        return;
    }
    let old = cx.old.machine;
    for s in old.state_ids() {
        let after = &old.state(s).after;
        if after.is_empty() || !cx.may_be_in(s) {
            continue;
        }
        let kept = cx.counterpart(s).map_or(0, |n| cx.new.state(n).after.len());
        for (index, &t) in after.iter().enumerate().skip(kept) {
            let Trigger::After(delay) = old.transition(t).trigger else {
                continue;
            };
            let witness = cx.witness_to(s).unwrap_or_default();
            let place = match cx.counterpart(s) {
                Some(n) => format!(
                    "`{}` of {} has no delayed transition at place {index}",
                    cx.new.display_name(n),
                    cx.new_version()
                ),
                None => format!("{} has no state `{}`", cx.new_version(), old.state(s).path),
            };
            cx.report(
                Lint::PendingTimerRemoved,
                ChangeFinding {
                    span: cx.new.span,
                    message: format!(
                        "processes stored at {} in `{}` may have the timer `after:{}[{index}]` (after {delay}) pending, and {place}: the snapshot cannot be restored",
                        cx.old_version(),
                        old.display_name(s),
                        old.state(s).path
                    ),
                    labels: Vec::new(),
                    help: Some(cx.migration_help("timers: drop")),
                    witness,
                    fix: None,
                },
            );
        }
    }
}
