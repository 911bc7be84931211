//! The service's counters and the apply latency histogram, and their
//! Prometheus text (exposition format 0.0.4) with the store's gauges.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::StoreStats;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0,
];

/// The outcomes of a delivery the counters count, as the label says them.
pub const OUTCOMES: [&str; 4] = ["applied", "duplicate", "conflict", "ignored"];

#[derive(Default)]
pub struct Metrics {
    outcomes: [AtomicU64; 4],
    /// Requests refused with 409 because the same id was being applied.
    in_progress: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_micros: AtomicU64,
    timers_fired: AtomicU64,
    dispatched: [AtomicU64; 5],
    /// Groups of events committed together, and the requests in them.
    groups: AtomicU64,
    grouped: AtomicU64,
}

/// What became of a dispatched effect, as the label says it.
pub const DISPATCH_RESULTS: [&str; 5] = ["done", "retried", "dead", "unknown", "failed"];

impl Metrics {
    /// Counts one answer (`kind` is `Outcome::kind`) that took `took`.
    pub fn answered(&self, kind: &str, took: Duration) {
        if let Some(i) = OUTCOMES.iter().position(|o| *o == kind) {
            self.outcomes[i].fetch_add(1, Ordering::Relaxed);
        }
        let seconds = took.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            if seconds <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.latency_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Counts a group of `members` requests applied in one transaction.
    pub fn grouped(&self, members: usize) {
        self.groups.fetch_add(1, Ordering::Relaxed);
        self.grouped.fetch_add(members as u64, Ordering::Relaxed);
    }

    pub fn in_progress(&self) {
        self.in_progress.fetch_add(1, Ordering::Relaxed);
    }

    pub fn fired(&self, timers: usize) {
        self.timers_fired
            .fetch_add(timers as u64, Ordering::Relaxed);
    }

    pub fn dispatched(&self, report: &crate::runtime::DispatchReport) {
        let counts = [
            report.done,
            report.retried,
            report.dead,
            report.unknown,
            report.failed,
        ];
        for (count, n) in self.dispatched.iter().zip(counts) {
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// The Prometheus text of the counters and of `stats`.
    pub fn render(&self, stats: &StoreStats) -> String {
        let mut out = String::with_capacity(2048);
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let outcomes: Vec<(&str, u64)> = OUTCOMES
            .iter()
            .copied()
            .zip(self.outcomes.iter().map(get))
            .collect();
        family(
            &mut out,
            "idemchart_events_total",
            "Events answered, by outcome.",
            "counter",
            "outcome",
            &outcomes,
        );
        let results: Vec<(&str, u64)> = DISPATCH_RESULTS
            .iter()
            .copied()
            .zip(self.dispatched.iter().map(get))
            .collect();
        family(
            &mut out,
            "idemchart_effects_dispatched_total",
            "Effect and invocation attempts this instance made, by result.",
            "counter",
            "result",
            &results,
        );
        header(
            &mut out,
            "idemchart_apply_duration_seconds",
            "Time to answer an event.",
            "histogram",
        );
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            let _ = writeln!(
                out,
                "idemchart_apply_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                get(count)
            );
        }
        let count = get(&self.latency_count);
        let _ = writeln!(
            out,
            "idemchart_apply_duration_seconds_bucket{{le=\"+Inf\"}} {count}\nidemchart_apply_duration_seconds_sum {}\nidemchart_apply_duration_seconds_count {count}",
            get(&self.latency_micros) as f64 / 1e6
        );
        for (name, help, kind, value) in [
            (
                "idemchart_events_in_progress_total",
                "Requests refused because another request was applying the same event id.",
                "counter",
                get(&self.in_progress),
            ),
            (
                "idemchart_event_groups_total",
                "Groups of event requests applied together, each in one transaction (group commit).",
                "counter",
                get(&self.groups),
            ),
            (
                "idemchart_event_group_members_total",
                "Event requests applied in those groups.",
                "counter",
                get(&self.grouped),
            ),
            (
                "idemchart_timers_fired_total",
                "Timer firings this instance applied.",
                "counter",
                get(&self.timers_fired),
            ),
            (
                "idemchart_outbox_pending",
                "Outbox rows waiting for dispatch.",
                "gauge",
                stats.outbox_pending,
            ),
            (
                "idemchart_outbox_dead",
                "Outbox rows given up on, waiting for an operator.",
                "gauge",
                stats.outbox_dead,
            ),
            (
                "idemchart_timers_due",
                "Processes whose next timer is due.",
                "gauge",
                stats.timers_due,
            ),
        ] {
            header(&mut out, name, help, kind);
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A metric with one label, a line per value of it.
fn family(
    out: &mut String,
    name: &str,
    help: &str,
    kind: &str,
    label: &str,
    values: &[(&str, u64)],
) {
    header(out, name, help, kind);
    for (value, count) in values {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {count}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.answered("applied", Duration::from_micros(800));
        metrics.answered("duplicate", Duration::from_millis(30));
        let text = metrics.render(&StoreStats::default());
        assert!(text.contains("idemchart_apply_duration_seconds_bucket{le=\"0.0005\"} 0\n"));
        assert!(text.contains("idemchart_apply_duration_seconds_bucket{le=\"0.001\"} 1\n"));
        assert!(text.contains("idemchart_apply_duration_seconds_bucket{le=\"0.05\"} 2\n"));
        assert!(text.contains("idemchart_apply_duration_seconds_count 2\n"));
        assert!(text.contains("idemchart_events_total{outcome=\"duplicate\"} 1\n"));
    }
}
