//! What the pages show of a machine, made once per machine and kept: its
//! lint findings and its diagram with them marked; and the small readings
//! of stored rows the pages share.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use tokio::sync::OnceCell;

use crate::diagnostic::Severity;
use crate::diagram::{self, Overlay};
use crate::interp::{Chart, TimerSnapshot};

/// Each machine's view, made on first use (a lint may take a while).
pub(in crate::serve) struct Views {
    machines: BTreeMap<String, OnceCell<Arc<MachineView>>>,
}

/// A machine's findings and its diagram.
pub(super) struct MachineView {
    pub findings: Vec<Finding>,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
    /// The SVG, or `None` when the layout failed.
    pub svg: Option<String>,
}

/// One lint finding, as the pages list it.
#[derive(Clone)]
pub(super) struct Finding {
    pub severity: &'static str,
    pub code: &'static str,
    pub name: &'static str,
    pub message: String,
}

impl Views {
    pub(in crate::serve) fn new<'a>(names: impl Iterator<Item = &'a String>) -> Views {
        Views {
            machines: names.map(|n| (n.clone(), OnceCell::new())).collect(),
        }
    }

    /// The view of `chart`'s machine, linted and drawn off the async
    /// threads the first time.
    pub(super) async fn of(&self, chart: &Arc<Chart>) -> Option<Arc<MachineView>> {
        let cell = self.machines.get(&chart.machine().name)?;
        let chart = Arc::clone(chart);
        let view = cell
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || Arc::new(MachineView::make(&chart))).await
            })
            .await
            .ok()?;
        Some(Arc::clone(view))
    }
}

impl MachineView {
    fn make(chart: &Chart) -> MachineView {
        let machine = chart.machine();
        // As `idemchart lint` reports them without a configuration: a
        // finding another covers is folded into it.
        let mut diagnostics = crate::lint::lint(machine);
        crate::lint::fold_covered(&mut diagnostics, |_, _| true);
        let svg = diagram::svg_with(machine, &Overlay::findings(machine, &diagnostics));
        let count = |s: Severity| diagnostics.iter().filter(|d| d.severity == s).count();
        MachineView {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            notes: count(Severity::Note),
            findings: diagnostics
                .iter()
                .map(|d| Finding {
                    severity: d.severity.as_str(),
                    code: d.code,
                    name: d.name,
                    message: d.message.clone(),
                })
                .collect(),
            svg,
        }
    }
}

/// The diagram with the states of `configuration` and their ancestors
/// marked active (class `active`), for a page read without JavaScript.
pub(super) fn highlighted(svg: &str, configuration: &[String]) -> String {
    let mut marked = svg.to_string();
    for path in active_paths(configuration) {
        let from = format!(
            "data-state=\"{}\" class=\"state",
            diagram::xml_attribute(&path)
        );
        let to = format!(
            "data-state=\"{}\" class=\"active state",
            diagram::xml_attribute(&path)
        );
        marked = marked.replace(&from, &to);
    }
    marked
}

/// The active atomic states and every state above them, by path.
pub(super) fn active_paths(configuration: &[String]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for leaf in configuration {
        let mut end = leaf.len();
        loop {
            let path = &leaf[..end];
            if !paths.iter().any(|p| p == path) {
                paths.push(path.to_string());
            }
            match path.rfind('.') {
                Some(dot) => end = dot,
                None => break,
            }
        }
    }
    paths
}

/// What the pages read of a stored snapshot; the rest is not parsed.
#[derive(serde::Deserialize)]
pub(super) struct SnapshotView {
    #[serde(default)]
    pub version: Option<u64>,
    pub status: serde_json::Value,
    pub configuration: Vec<String>,
    #[serde(default)]
    pub context: serde_json::Value,
    #[serde(default)]
    pub timers: Vec<TimerSnapshot>,
}

impl SnapshotView {
    pub(super) fn parse(text: &str) -> Option<SnapshotView> {
        serde_json::from_str(text).ok()
    }

    pub(super) fn status(&self) -> String {
        match &self.status {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// A time in milliseconds since the Unix epoch, as an HTTP date (UTC, to
/// the second).
pub(super) fn time(ms: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(ms))
}

/// JSON indented for reading.
pub(super) fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_are_active_too() {
        let paths = active_paths(&["a.b.c".to_string(), "a.d".to_string()]);
        assert_eq!(paths, ["a.b.c", "a.b", "a", "a.d"]);
    }

    #[test]
    fn only_the_active_states_are_marked() {
        let svg = r#"<g data-state="a" class="state"></g><g data-state="a.b" class="state container"></g><g data-state="ab" class="state"></g>"#;
        assert_eq!(
            highlighted(svg, &["a".to_string()]),
            r#"<g data-state="a" class="active state"></g><g data-state="a.b" class="state container"></g><g data-state="ab" class="state"></g>"#
        );
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(time(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
