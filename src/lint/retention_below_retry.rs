use super::{Cx, Finding, Lint, Stage};
use crate::diagnostic::Label;
use crate::model::StateId;

declare_lint! {
    /// ### What it does
    ///
    /// Flags `dedup.retention` when it is shorter than the `retry_horizon` of
    /// one of the machine's `sources`, once per such source.
    ///
    /// ### Why is this bad?
    ///
    /// Applied event ids are purged after the retention window. A sender
    /// that still redelivers after that finds its id forgotten, and the
    /// repeat is applied as new: only the topology protects it then.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// sources:
    ///   cola: { retry_horizon: 14d }
    /// dedup: { retention: 3d }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep ids longer than any source retries, with a margin:
    ///
    /// ```yaml
    /// sources:
    ///   cola: { retry_horizon: 14d }
    /// dedup: { retention: 21d }
    /// ```
    code: "I007",
    severity: Error,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    let Some(dedup) = &m.dedup else {
        return;
    };
    for (name, source) in &m.sources {
        let Some(horizon) = source.retry_horizon else {
            continue;
        };
        if horizon <= dedup.retention {
            continue;
        }
        // The source's event that the shortest run accepts.
        let witness = m
            .events
            .iter()
            .filter(|(_, d)| d.source.as_ref().is_some_and(|s| &s.text == name))
            .filter_map(|(event, _)| cx.graph.events.get(event))
            .filter_map(|e| super::event_without_id::nearest_handler(cx, e).map(|t| (e, t)))
            .filter_map(|(e, t)| cx.repeat_witness(t, e))
            .min_by_key(|w| w.steps.len());
        cx.report(Finding {
            lint: Lint::RetentionBelowRetry,
            span: dedup.span,
            state: StateId::ROOT,
            message: format!(
                "event ids are kept for {} but source `{name}` may redeliver for {horizon}",
                dedup.retention
            ),
            labels: vec![Label {
                span: source.span,
                message: format!("redelivers for up to {horizon}"),
            }],
            help: Some(format!(
                "set `dedup.retention` to at least {horizon}, with a margin"
            )),
            witness,
            claim: None,
        });
    }
}
