use super::versions::{ChangeCx, ChangeFinding, changes};
use super::{Lint, Stage};
use crate::diagnostic::Fix;

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a new `version` when nothing a
    /// stored snapshot holds changed (its states, context fields and their
    /// types, timers, invocations and semantics are the old ones).
    ///
    /// ### Why is this bad?
    ///
    /// The runtime refuses a snapshot of another version unless the host
    /// migrates it. A bump for a change of guards or actions alone strands
    /// every stored process behind a migration that would change nothing.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// machine: order
    /// version: 2        # version 1 had the same states and context
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// machine: order
    /// version: 1
    /// ```
    code: "M008",
    severity: Warning,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let (Some(was), Some(now)) = (cx.old.machine.version, cx.new.version) else {
        return;
    };
    if was == now || changes(cx.old.machine, cx.new).iter().any(|c| c.shape) {
        return;
    }
    // Going back to the old version makes the runtime accept the stored
    // snapshots again: the author decides whether the bump meant more.
    let fix = cx
        .editor()
        .and_then(|e| e.set_version(was))
        .map(|edits| Fix::unsafe_edits(format!("keep `version` at {was}"), edits));
    cx.report(
        Lint::VersionBumpedWithoutChange,
        ChangeFinding {
            span: cx.new.span,
            message: format!(
                "the version goes from {was} to {now} but nothing a snapshot holds changed: every process stored at version {was} is refused on restore until it is migrated, for nothing"
            ),
            labels: Vec::new(),
            help: Some(format!("keep `version: {was}`")),
            witness: Vec::new(),
            fix,
        },
    );
}
