use super::versions::{ChangeCx, ChangeFinding};
use super::{Lint, Stage};
use crate::diagnostic::Fix;

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a `dedup.retention` that the new
    /// machine made shorter than the old one's, or removed.
    ///
    /// ### Why is this bad?
    ///
    /// The marks of applied event ids were kept for the old retention
    /// because senders retry that long. After the deploy, `purge` deletes
    /// the marks older than the new one: a sender that still retries a
    /// delivery from before finds its id forgotten, and the repeat is
    /// applied as new.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1: dedup: { retention: 14d }
    /// dedup: { retention: 3d }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep the retention until the senders retry for less, then shorten it
    /// in a later deploy:
    ///
    /// ```yaml
    /// dedup: { retention: 14d }
    /// ```
    code: "M006",
    severity: Warning,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let Some(was) = &cx.old.machine.dedup else {
        return;
    };
    let (span, now) = match &cx.new.dedup {
        Some(now) if now.retention < was.retention => (now.span, now.retention.to_string()),
        Some(_) => return,
        None => (cx.new.span, "none".to_string()),
    };
    // Keeping marks longer costs storage: the author decides.
    let fix = cx.new.dedup.as_ref().and_then(|now| {
        let edit = cx
            .editor()?
            .replace_duration(now.span, &was.retention.to_string())?;
        Some(Fix::unsafe_edits(
            format!("keep `dedup.retention` at {}", was.retention),
            vec![edit],
        ))
    });
    cx.report(
        Lint::RetentionShortened,
        ChangeFinding {
            span,
            message: format!(
                "`dedup.retention` goes from {} at {} to {now} at {}: the marks of ids applied before the deploy are purged while senders may still retry them",
                was.retention,
                cx.old_version(),
                cx.new_version()
            ),
            labels: Vec::new(),
            help: Some(format!(
                "keep the retention at {} until no sender retries longer than the new one",
                was.retention
            )),
            witness: Vec::new(),
            fix,
        },
    );
}
