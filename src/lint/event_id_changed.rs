use super::versions::{ChangeCx, ChangeFinding};
use super::{Lint, Stage};
use crate::diagnostic::Label;

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags an event whose `id` field the new
    /// machine changed (another field, or none), when the old machine
    /// accepts it in some configuration. The witness leads to the nearest
    /// such configuration.
    ///
    /// ### Why is this bad?
    ///
    /// The runtime recognises a repeat by the value of the id field. A
    /// delivery applied before the deploy and retried after it is read by
    /// the new field: its id is another (or none), so the repeat is applied
    /// as new. Deduplication breaks exactly across the deploy, when senders
    /// retry most.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1: PAY: { id: paymentId }
    /// events:
    ///   PAY: { id: chargeId }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep the id field; a sender that must change it sends both until
    /// no retry of the old ones is left (`dedup.retention` after the
    /// deploy):
    ///
    /// ```yaml
    /// events:
    ///   PAY: { id: paymentId }
    /// ```
    code: "M003",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let (old, new) = (cx.old.machine, cx.new);
    for (name, was) in &old.events {
        let Some(was_id) = &was.id_field else {
            continue;
        };
        let Some(now) = new.events.get(name) else {
            continue;
        };
        if now.id_field.as_ref().map(|n| &n.text) == Some(&was_id.text) {
            continue;
        }
        let Some(event) = cx.old.graph.events.get(name) else {
            continue;
        };
        let Some(handler) = super::event_without_id::nearest_handler(&cx.old, event) else {
            continue;
        };
        let source = old.transition(handler).source;
        let state = cx.old.selecting_leaf(handler, Some(event)).unwrap_or(source);
        let witness = cx.witness_to(state).unwrap_or_default();
        let (span, now_text) = match &now.id_field {
            Some(id) => (id.span, format!("by `{}`", id.text)),
            None => (now.span, "by no field".to_string()),
        };
        cx.report(
            Lint::EventIdChanged,
            ChangeFinding {
                span,
                message: format!(
                    "`{name}` is identified by `{}` at {} and {now_text} at {}: a delivery applied before the deploy and retried after it is applied again, in processes stored in `{}` and every other state that accepts it",
                    was_id.text,
                    cx.old_version(),
                    cx.new_version(),
                    old.display_name(state)
                ),
                labels: vec![Label {
                    span: now.span,
                    message: "the event declared here".into(),
                }],
                help: Some(format!(
                    "keep `id: {}`, or wait with the change until `dedup.retention` has passed since the last delivery of `{name}` that a sender may still retry",
                    was_id.text
                )),
                witness,
                fix: None,
            },
        );
    }
}
