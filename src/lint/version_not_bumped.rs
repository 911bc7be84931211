use super::versions::{ChangeCx, ChangeFinding, changes};
use super::{Lint, Stage};
use crate::diagnostic::Fix;

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a new machine whose `version` is
    /// the old one's although what a stored snapshot holds changed: its
    /// states, context fields and their types, timers, invocations or
    /// semantics (`idemchart diff OLD NEW` lists the changes).
    ///
    /// ### Why is this bad?
    ///
    /// The version is what the runtime checks before it continues a stored
    /// process: a snapshot of another version is refused unless the host
    /// migrates it. With the same version on another shape, an old snapshot
    /// is taken as one of the new machine, and fails on restore, or worse,
    /// continues in a configuration the new machine never meant.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// machine: order
    /// version: 1        # as before, but a state was added
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// machine: order
    /// version: 2
    /// ```
    code: "M007",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    if cx.old.machine.version != cx.new.version {
        return;
    }
    let shape: Vec<String> = changes(cx.old.machine, cx.new)
        .into_iter()
        .filter(|c| c.shape)
        .map(|c| c.to_string())
        .collect();
    if shape.is_empty() {
        return;
    }
    let next = cx.new.version.map_or(1, |v| v + 1);
    // A new version makes the runtime refuse the stored snapshots until
    // they are migrated: it changes what runs, so the author decides.
    let fix = cx
        .editor()
        .and_then(|e| e.set_version(next))
        .map(|edits| Fix::unsafe_edits(format!("bump `version` to {next}"), edits));
    let shown: Vec<&str> = shape.iter().take(3).map(String::as_str).collect();
    let more = match shape.len() {
        n if n > 3 => format!(", and {} more", n - 3),
        _ => String::new(),
    };
    cx.report(
        Lint::VersionNotBumped,
        ChangeFinding {
            span: cx.new.span,
            message: format!(
                "the shape of what a snapshot holds changed ({}{more}) but the machine is still at {}: stored snapshots are taken as snapshots of the new shape",
                shown.join("; "),
                cx.new_version()
            ),
            labels: Vec::new(),
            help: Some(format!(
                "bump `version` to {next}, and declare a migration from the old version"
            )),
            witness: Vec::new(),
            fix,
        },
    );
}
