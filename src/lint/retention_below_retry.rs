use super::{Cx, Finding, Lint, Stage, fact_note};
use crate::diagnostic::Label;
use crate::diagnostic::Fix;
use crate::model::{Duration, StateId};

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
            help: Some(if fact_note::from_xstate(cx.machine) {
                format!(
                    "set `dedup.retention` to at least {horizon}, with a margin, in `meta.idemchart` of the machine config (`meta: {{ idemchart: {{ dedup: {{ retention: '{horizon}' }} }} }}`) or in idemchart.toml under `[machines.{}]` (`dedup = {{ retention = \"{horizon}\" }}`)",
                    fact_note::toml_key(&cx.machine.name)
                )
            } else {
                format!("set `dedup.retention` to at least {horizon}, with a margin")
            }),
            witness,
            claim: None,
            fix: retention_fix(cx),
        });
    }
}

/// The fix of every finding of the machine: the same retention, long enough
/// for every source, so that one edit removes them all.
fn retention_fix(cx: &Cx) -> Option<Fix> {
    let dedup = cx.machine.dedup.as_ref()?;
    let longest = cx
        .machine
        .sources
        .values()
        .filter_map(|s| s.retry_horizon)
        .max()?;
    let retention = with_margin(longest)?;
    let edit = cx
        .editor()?
        .replace_duration(dedup.span, &retention.to_string())?;
    // Keeping ids longer costs storage and changes what the runtime
    // remembers: the author decides.
    Some(Fix::unsafe_edits(
        format!("set `dedup.retention` to {retention}: the longest retry horizon, {longest}, and half of it again"),
        vec![edit],
    ))
}

/// The retention a fix writes for a retry horizon: one and a half times the
/// horizon, so that a sender retrying to its last moment, with clocks and
/// queues late, is still recognised; rounded up to whole days (whole hours
/// below a day, whole minutes below an hour, whole seconds below a minute),
/// as retention windows are written. `None` when that overflows.
fn with_margin(horizon: Duration) -> Option<Duration> {
    let target = horizon.millis.checked_add(horizon.millis.div_ceil(2))?;
    let unit = [86_400_000, 3_600_000, 60_000, 1_000]
        .into_iter()
        .find(|&unit| target >= unit)
        .unwrap_or(1);
    Some(Duration::from_millis(target.div_ceil(unit).checked_mul(unit)?))
}

#[cfg(test)]
mod tests {
    use super::with_margin;
    use crate::model::Duration;

    #[test]
    fn the_margin_is_half_the_horizon_rounded_up() {
        let margin = |text: &str| with_margin(Duration::parse(text).unwrap()).unwrap().to_string();
        assert_eq!(margin("14d"), "21d");
        assert_eq!(margin("5d"), "8d");
        assert_eq!(margin("72h"), "5d");
        assert_eq!(margin("1h"), "2h");
        assert_eq!(margin("30m"), "45m");
        assert_eq!(margin("10s"), "15s");
        assert_eq!(margin("500ms"), "750ms");
        assert_eq!(with_margin(Duration::from_millis(u64::MAX)), None);
    }
}
