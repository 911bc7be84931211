//! The pages: the machines, one machine, its processes, one process. Each
//! handler reads what it shows and fills a template; nothing here writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use super::views::{self, MachineView, SnapshotView};
use super::{PageError, page};
use crate::interp::Chart;
use crate::runtime::history::Applied;
use crate::runtime::{self, nonblocking};
use crate::serve::{Service, edge};
use crate::store::{AsyncStore, OutboxStatus, ProcessRow};

/// The templates' sources, for the size budget's test.
#[cfg(test)]
pub(super) const TEMPLATE_SOURCES: [&str; 8] = [
    include_str!("templates/base.html"),
    include_str!("templates/machines.html"),
    include_str!("templates/machine.html"),
    include_str!("templates/processes.html"),
    include_str!("templates/process.html"),
    include_str!("templates/confirm.html"),
    include_str!("templates/error.html"),
    include_str!("templates/login.html"),
];

/// The most processes a count or a search reads: the inspector pages
/// through a machine's processes and stops here, and says so.
const SCAN_LIMIT: usize = 10_000;
/// Rows read in one statement while scanning.
const SCAN_PAGE: usize = 1_000;
/// The most processes a search lists.
const LIST_LIMIT: usize = 200;

/// What a path segment of a link must escape (RFC 3986 `pchar` keeps the
/// rest).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Text as one path segment of a link.
pub(super) fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// Text as the value of a query parameter.
fn query_value(text: &str) -> String {
    utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

pub(super) fn machine_href(machine: &str) -> String {
    format!("/ui/machines/{}", segment(machine))
}

pub(super) fn process_href(machine: &str, process: &str) -> String {
    format!(
        "/ui/machines/{}/processes/{}",
        segment(machine),
        segment(process)
    )
}

fn render(template: &impl Template) -> Result<Response, PageError> {
    Ok(page(StatusCode::OK, render_text(template)?))
}

/// The text of a filled template, or the error page's reason.
fn render_text(template: &impl Template) -> Result<String, PageError> {
    template.render().map_err(|e| {
        tracing::warn!(error = %e, "inspector: a page did not render");
        PageError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The page did not render.",
        )
    })
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: String,
    message: &'a str,
}

pub(super) fn error_page(status: StatusCode, message: &str) -> String {
    let title = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    ErrorPage { title, message }
        .render()
        .unwrap_or_else(|_| status.to_string())
}

pub(super) fn chart<'s>(service: &'s Service, machine: &str) -> Result<&'s Arc<Chart>, PageError> {
    service
        .charts
        .get(machine)
        .ok_or_else(|| PageError::not_found(format!("No machine `{machine}` is served here.")))
}

/// A process id off the rules of the API is no process: it is refused
/// before the store is asked, as the API refuses it.
pub(super) fn check_process(process: &str) -> Result<(), PageError> {
    edge::process_id(process).map_err(|refusal| {
        PageError::new(
            StatusCode::BAD_REQUEST,
            format!("Bad process id: {refusal}"),
        )
    })
}

/// Up to [`SCAN_LIMIT`] process rows of `machine`, in id order, and
/// whether there were more.
async fn scan(service: &Service, machine: &str) -> Result<(Vec<ProcessRow>, bool), PageError> {
    let mut rows: Vec<ProcessRow> = Vec::new();
    loop {
        let after = rows.last().map(|r| r.id.clone());
        let page = service
            .store
            .processes_of(machine, after.as_deref(), SCAN_PAGE)
            .await
            .map_err(PageError::runtime)?;
        let full = page.len() == SCAN_PAGE;
        rows.extend(page);
        if !full {
            return Ok((rows, false));
        }
        if rows.len() >= SCAN_LIMIT {
            return Ok((rows, true));
        }
    }
}

/// How many processes are in each active state (by path, atomic states
/// only), over the rows given.
fn counts_by_state(rows: &[ProcessRow]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for row in rows {
        match SnapshotView::parse(&row.snapshot) {
            Some(snapshot) => {
                for path in snapshot.configuration {
                    *counts.entry(path).or_default() += 1;
                }
            }
            None => *counts.entry("(unreadable)".into()).or_default() += 1,
        }
    }
    counts.into_iter().collect()
}

/// One machine in the list.
struct MachineRow {
    name: String,
    href: String,
    version: String,
    processes: String,
    counts: Vec<(String, usize)>,
    lint: String,
}

#[derive(Template)]
#[template(path = "machines.html")]
struct MachinesPage {
    machines: Vec<MachineRow>,
}

fn lint_summary(view: Option<&MachineView>) -> String {
    match view {
        Some(v) => format!(
            "{} error(s), {} warning(s), {} note(s)",
            v.errors, v.warnings, v.notes
        ),
        None => "not linted".into(),
    }
}

fn version_text(version: Option<u64>) -> String {
    version.map_or_else(|| "none".to_string(), |v| v.to_string())
}

fn count_text(rows: usize, truncated: bool) -> String {
    if truncated {
        format!("{rows} or more")
    } else {
        rows.to_string()
    }
}

/// `GET /ui`: every machine served.
pub(super) async fn machines(State(service): State<Arc<Service>>) -> Result<Response, PageError> {
    let mut machines = Vec::new();
    for (name, chart) in &service.charts {
        let view = service.inspector.of(chart).await;
        let (rows, truncated) = scan(&service, name).await?;
        machines.push(MachineRow {
            name: name.clone(),
            href: machine_href(name),
            version: version_text(chart.machine().version),
            processes: count_text(rows.len(), truncated),
            counts: counts_by_state(&rows),
            lint: lint_summary(view.as_deref()),
        });
    }
    render(&MachinesPage { machines })
}

#[derive(Template)]
#[template(path = "machine.html")]
struct MachinePage {
    name: String,
    machine_href: String,
    version: String,
    processes_href: String,
    processes: String,
    /// Each state, its count and the search for its processes.
    counts: Vec<(String, usize, String)>,
    lint: String,
    findings: Vec<views::Finding>,
    svg: Option<String>,
}

/// `GET /ui/machines/{machine}`: its diagram, findings and counts.
pub(super) async fn machine(
    State(service): State<Arc<Service>>,
    Path(machine): Path<String>,
) -> Result<Response, PageError> {
    let chart = chart(&service, &machine)?;
    let view = service.inspector.of(chart).await;
    let (rows, truncated) = scan(&service, &machine).await?;
    let (findings, svg) = match &view {
        Some(v) => (v.findings.clone(), v.svg.clone()),
        None => (Vec::new(), None),
    };
    let processes_href = format!("{}/processes", machine_href(&machine));
    let counts = counts_by_state(&rows)
        .into_iter()
        .map(|(state, count)| {
            let href = format!("{processes_href}?state={}", query_value(&state));
            (state, count, href)
        })
        .collect();
    render(&MachinePage {
        machine_href: machine_href(&machine),
        processes_href,
        version: version_text(chart.machine().version),
        processes: count_text(rows.len(), truncated),
        counts,
        lint: lint_summary(view.as_deref()),
        name: machine,
        findings,
        svg,
    })
}

#[derive(serde::Deserialize, Default)]
pub(super) struct Search {
    #[serde(default)]
    q: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    stuck: Option<String>,
}

struct ProcessListRow {
    id: String,
    href: String,
    revision: u64,
    configuration: String,
    next_timer: String,
    stuck: bool,
}

#[derive(Template)]
#[template(path = "processes.html")]
struct ProcessesPage {
    machine: String,
    machine_href: String,
    q: String,
    state: String,
    stuck: bool,
    states: Vec<String>,
    rows: Vec<ProcessListRow>,
    summary: String,
}

/// The processes with an effect that does not get through: a dead row, or
/// a pending one that has failed at least once.
async fn stuck_processes(service: &Service) -> Result<BTreeSet<String>, PageError> {
    let mut stuck = BTreeSet::new();
    for status in [OutboxStatus::Dead, OutboxStatus::Pending] {
        let rows = service
            .store
            .outbox(Some(status))
            .await
            .map_err(PageError::runtime)?;
        stuck.extend(
            rows.into_iter()
                .filter(|r| r.status == OutboxStatus::Dead || r.attempts > 0)
                .map(|r| r.process),
        );
    }
    Ok(stuck)
}

/// Whether a process in `configuration` is in the state at `path` (or in
/// one below it).
fn is_in(configuration: &[String], path: &str) -> bool {
    configuration
        .iter()
        .any(|leaf| leaf == path || leaf.strip_prefix(path).is_some_and(|r| r.starts_with('.')))
}

/// `GET /ui/machines/{machine}/processes?q=&state=&stuck=on`: a search.
pub(super) async fn processes(
    State(service): State<Arc<Service>>,
    Path(machine): Path<String>,
    Query(search): Query<Search>,
) -> Result<Response, PageError> {
    let chart = chart(&service, &machine)?;
    let (rows, truncated) = scan(&service, &machine).await?;
    let stuck = stuck_processes(&service).await?;
    let want_stuck = search.stuck.is_some();
    let mut listed = Vec::new();
    let mut matched = 0usize;
    for row in &rows {
        let configuration = SnapshotView::parse(&row.snapshot)
            .map(|s| s.configuration)
            .unwrap_or_default();
        let is_stuck = stuck.contains(&row.id);
        let keep = row.id.contains(search.q.trim())
            && (search.state.is_empty() || is_in(&configuration, &search.state))
            && (!want_stuck || is_stuck);
        if !keep {
            continue;
        }
        matched += 1;
        if listed.len() < LIST_LIMIT {
            listed.push(ProcessListRow {
                href: process_href(&machine, &row.id),
                id: row.id.clone(),
                revision: row.revision,
                configuration: configuration.join(", "),
                next_timer: row.next_timer_at.map(views::time).unwrap_or_default(),
                stuck: is_stuck,
            });
        }
    }
    let mut summary = format!(
        "{matched} of {} process(es) match",
        count_text(rows.len(), truncated)
    );
    if matched > listed.len() {
        summary.push_str(&format!("; the first {} are listed", listed.len()));
    }
    let states = chart
        .machine()
        .state_ids()
        .filter(|&id| id != crate::model::StateId::ROOT)
        .map(|id| chart.machine().state(id).path.clone())
        .collect();
    render(&ProcessesPage {
        machine_href: machine_href(&machine),
        machine,
        q: search.q,
        state: search.state,
        stuck: want_stuck,
        states,
        rows: listed,
        summary,
    })
}

struct TimerRow {
    label: String,
    due: String,
    due_ms: u64,
    is_due: bool,
}

struct OutboxRow {
    key: String,
    effect: String,
    status: &'static str,
    attempts: u32,
    next_attempt: String,
    last_error: String,
    args: String,
    retry_action: Option<String>,
}

struct HistoryRow {
    number: usize,
    id: String,
    what: String,
    payload: String,
    revision: u64,
    applied_at: String,
    outcome: String,
    configuration: String,
    /// The configuration after it as a JSON array, for the script.
    configuration_json: String,
    response: String,
    duplicates: String,
    current: bool,
    diverged: bool,
}

/// The result of a replay under another machine file.
pub(super) struct ReplayView {
    pub verdict: String,
    pub details: Vec<(String, String)>,
    /// The 1-based entry it diverged at.
    pub index: Option<usize>,
}

#[derive(Template)]
#[template(path = "process.html")]
struct ProcessPage {
    machine: String,
    machine_href: String,
    process: String,
    href: String,
    version: String,
    revision: u64,
    status: String,
    configuration: String,
    svg: Option<String>,
    context: String,
    timers: Vec<TimerRow>,
    fire_action: String,
    outbox: Vec<OutboxRow>,
    history: Vec<HistoryRow>,
    step: usize,
    steps: usize,
    previous_href: Option<String>,
    next_href: Option<String>,
    replay_action: String,
    replay: Option<ReplayView>,
}

#[derive(serde::Deserialize, Default)]
pub(super) struct Step {
    step: Option<usize>,
}

/// `GET /ui/machines/{machine}/processes/{process}?step=N`: the process,
/// with the diagram showing the configuration after history entry `N`
/// (its current one without `step`).
pub(super) async fn process(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    Query(step): Query<Step>,
) -> Result<Response, PageError> {
    let body = process_page(&service, &machine, &process, step.step, None).await?;
    Ok(page(StatusCode::OK, body))
}

/// The stored row of `process` when it runs `machine`.
pub(super) async fn stored_process(
    service: &Service,
    machine: &str,
    process: &str,
) -> Result<ProcessRow, PageError> {
    service
        .store
        .process(process)
        .await
        .map_err(PageError::runtime)?
        .filter(|row| row.machine == machine)
        .ok_or_else(|| {
            PageError::not_found(format!("Machine `{machine}` has no process `{process}`."))
        })
}

/// The process page, with the replay's result when there is one.
pub(super) async fn process_page(
    service: &Service,
    machine: &str,
    process: &str,
    step: Option<usize>,
    replay: Option<ReplayView>,
) -> Result<String, PageError> {
    let chart = chart(service, machine)?;
    check_process(process)?;
    let unknown =
        || PageError::not_found(format!("Machine `{machine}` has no process `{process}`."));
    let row = stored_process(service, machine, process).await?;
    let snapshot = SnapshotView::parse(&row.snapshot).ok_or_else(|| {
        PageError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("The stored snapshot of process `{process}` cannot be read."),
        )
    })?;
    let history = nonblocking::history(&service.store, process)
        .await
        .map_err(PageError::runtime)?
        .ok_or_else(unknown)?;
    let outbox = service
        .store
        .outbox_of(process)
        .await
        .map_err(PageError::runtime)?;
    let view = service.inspector.of(chart).await;

    let steps = history.entries.len();
    let step = replay
        .as_ref()
        .and_then(|r| r.index)
        .or(step)
        .map(|s| s.clamp(1, steps.max(1)))
        .filter(|_| steps > 0);
    let shown: Vec<String> = match step {
        Some(n) => configuration_of(&history.entries[n - 1].response),
        None => snapshot.configuration.clone(),
    };
    let href = process_href(machine, process);
    let current = step.unwrap_or(steps);
    let now = runtime::now_millis();
    let diverged_at = replay.as_ref().and_then(|r| r.index);
    let history_rows = history
        .entries
        .iter()
        .enumerate()
        .map(|(i, entry)| history_row(service, process, i + 1, entry, current, diverged_at))
        .collect();
    let page = ProcessPage {
        machine_href: machine_href(machine),
        machine: machine.to_string(),
        process: process.to_string(),
        fire_action: format!("{href}/timers/fire"),
        replay_action: format!("{href}/replay"),
        previous_href: (current > 1).then(|| format!("{href}?step={}", current - 1)),
        next_href: (current < steps).then(|| format!("{href}?step={}", current + 1)),
        version: version_text(snapshot.version),
        revision: row.revision,
        status: snapshot.status(),
        configuration: snapshot.configuration.join(", "),
        svg: view
            .as_ref()
            .and_then(|v| v.svg.as_deref())
            .map(|svg| views::highlighted(svg, &shown)),
        context: views::pretty(&snapshot.context),
        timers: snapshot
            .timers
            .iter()
            .map(|t| TimerRow {
                label: t.label(),
                due: views::time(t.due()),
                due_ms: t.due(),
                is_due: t.due() <= now,
            })
            .collect(),
        outbox: outbox
            .iter()
            .map(|item| OutboxRow {
                retry_action: (item.status == OutboxStatus::Dead)
                    .then(|| format!("{href}/outbox/{}/retry", segment(&item.key))),
                key: item.key.clone(),
                effect: match &item.invocation {
                    Some(id) => format!("{} (invocation {id})", item.effect),
                    None => item.effect.clone(),
                },
                status: item.status.as_str(),
                attempts: item.attempts,
                next_attempt: views::time(item.next_attempt_at),
                last_error: item.last_error.clone().unwrap_or_default(),
                args: item.args.clone(),
            })
            .collect(),
        history: history_rows,
        step: current,
        steps,
        href,
        replay,
    };
    render_text(&page)
}

fn configuration_of(response: &serde_json::Value) -> Vec<String> {
    response["configuration"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect()
}

fn history_row(
    service: &Service,
    process: &str,
    number: usize,
    entry: &runtime::history::Entry,
    current: usize,
    diverged_at: Option<usize>,
) -> HistoryRow {
    let (what, payload) = match &entry.applied {
        Applied::Event { payload: Some(p) } => (
            format!("event {}", entry.event_type().unwrap_or("?")),
            p.to_string(),
        ),
        Applied::Event { payload: None } => ("event".to_string(), "not kept".to_string()),
        Applied::Timer { label, due } => (
            format!("timer {label}"),
            format!("due {}", views::time(*due)),
        ),
    };
    let configuration = configuration_of(&entry.response);
    let duplicates = match service.duplicates_of(process, &entry.id) {
        Some(d) => format!(
            "{} (first {}, last {})",
            d.count,
            views::time(d.first),
            views::time(d.last)
        ),
        None => "0".to_string(),
    };
    HistoryRow {
        number,
        id: entry.id.clone(),
        what,
        payload,
        revision: entry.revision,
        applied_at: views::time(entry.applied_at),
        outcome: entry.response["outcome"]
            .as_str()
            .unwrap_or("?")
            .to_string(),
        configuration_json: serde_json::to_string(&configuration).unwrap_or_default(),
        configuration: configuration.join(", "),
        response: views::pretty(&entry.response),
        duplicates,
        current: number == current,
        diverged: diverged_at == Some(number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_escape_what_a_path_would_split_on() {
        assert_eq!(segment("a b/c?d#e"), "a%20b%2Fc%3Fd%23e");
        assert_eq!(segment("o-1:x@y+z=w~"), "o-1:x@y+z=w~");
    }

    #[test]
    fn a_state_holds_the_states_below_it() {
        let configuration = ["a.b".to_string()];
        assert!(is_in(&configuration, "a"));
        assert!(is_in(&configuration, "a.b"));
        assert!(!is_in(&configuration, "a.bc"));
        assert!(!is_in(&configuration, "b"));
    }
}
