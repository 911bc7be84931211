//! The operator's actions, each a form POSTed from a process page: retry a
//! dead outbox row now, fire a due timer now, and replay the process's
//! history under another machine file (which writes nothing).
//!
//! Each writing action is confirmed (a dialog, or without JavaScript a page
//! that asks), logged, and done through the runtime's own calls: the row is
//! requeued as `idemchart outbox --requeue` requeues it and the dispatcher
//! sends it under its key, and a timer fires through `runtime::advance`,
//! under the revision check that lets one firing of it be written. A POST
//! must come from a page of this service (its `Origin`, or
//! `Sec-Fetch-Site: same-origin`): a page of another site cannot make a
//! browser that reaches the service send one.

use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::pages::{ReplayView, chart, check_process, process_href, process_page};
use super::views::{self, SnapshotView};
use super::{PageError, page};
use crate::runtime::{self, nonblocking};
use crate::serve::Service;
use crate::serve::edge::Escaped;
use crate::store::{AsyncStore, OutboxStatus};

/// Refuses a POST that does not come from this service's own pages.
pub(super) fn same_origin(headers: &HeaderMap) -> Result<(), PageError> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return match site {
            "same-origin" => Ok(()),
            _ => Err(cross_site()),
        };
    }
    let (Some(origin), Some(host)) = (text(header::ORIGIN), text(header::HOST)) else {
        return Err(cross_site());
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if authority == Some(host) {
        Ok(())
    } else {
        Err(cross_site())
    }
}

fn cross_site() -> PageError {
    tracing::warn!("inspector: refused a POST that did not come from its pages");
    PageError::new(
        StatusCode::FORBIDDEN,
        "This action is taken from the inspector's own pages only (the request's Origin is not this service).",
    )
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage {
    question: String,
    action: String,
    fields: Vec<(String, String)>,
    back: String,
}

/// The page that asks before an action, for a browser without
/// JavaScript (the script asks with a dialog and sends `confirmed=yes`).
fn confirm(
    question: String,
    action: String,
    fields: Vec<(String, String)>,
    back: String,
) -> Response {
    let body = ConfirmPage {
        question,
        action,
        fields,
        back,
    }
    .render()
    .unwrap_or_default();
    page(StatusCode::OK, body)
}

/// A 303 to `location`.
pub(super) fn see(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Back to the process page, at `fragment`.
fn see_process(machine: &str, process: &str, fragment: &str) -> Response {
    see(&format!("{}#{fragment}", process_href(machine, process)))
}

#[derive(serde::Deserialize)]
pub(super) struct Confirmed {
    #[serde(default)]
    confirmed: String,
}

/// `POST …/outbox/{key}/retry`: a dead row of the process back in the
/// queue, due now; the dispatcher sends it in its next round.
pub(super) async fn retry(
    State(service): State<Arc<Service>>,
    Path((machine, process, key)): Path<(String, String, String)>,
    headers: HeaderMap,
    Form(form): Form<Confirmed>,
) -> Result<Response, PageError> {
    same_origin(&headers)?;
    chart(&service, &machine)?;
    check_process(&process)?;
    let rows = service
        .store
        .outbox_of(&process)
        .await
        .map_err(PageError::runtime)?;
    let Some(row) = rows.iter().find(|r| r.key == key) else {
        return Err(PageError::not_found(format!(
            "Process `{process}` has no outbox row with key `{key}`."
        )));
    };
    if row.status != OutboxStatus::Dead {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            format!(
                "The row with key `{key}` is {}, not dead: there is nothing to retry.",
                row.status.as_str()
            ),
        ));
    }
    if form.confirmed != "yes" {
        return Ok(confirm(
            format!(
                "Retry the dead {} row of process {process} now? It is sent again under its key {key}.",
                row.effect
            ),
            format!(
                "{}/outbox/{}/retry",
                process_href(&machine, &process),
                super::pages::segment(&key)
            ),
            Vec::new(),
            process_href(&machine, &process),
        ));
    }
    let requeued = service
        .store
        .requeue_dead(Some(&key), runtime::now_millis())
        .await
        .map_err(PageError::runtime)?;
    tracing::info!(%machine, process = %Escaped(&process), key = %Escaped(&key), requeued, "operator: dead outbox row requeued");
    service.changed(&machine, &process);
    Ok(see_process(&machine, &process, "outbox"))
}

#[derive(serde::Deserialize)]
pub(super) struct Fire {
    #[serde(default)]
    confirmed: String,
    /// The due time of the timer the operator saw.
    due: u64,
}

/// `POST …/timers/fire`: fires the process's due timers now, through
/// `runtime::advance`, as the background round would.
pub(super) async fn fire(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<Fire>,
) -> Result<Response, PageError> {
    same_origin(&headers)?;
    let chart = chart(&service, &machine)?;
    check_process(&process)?;
    let now = runtime::now_millis();
    let row = super::pages::stored_process(&service, &machine, &process).await?;
    let timers = SnapshotView::parse(&row.snapshot)
        .map(|s| s.timers)
        .unwrap_or_default();
    let Some(timer) = timers.iter().find(|t| t.due() == form.due) else {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            "The process has no timer due then any more: it has fired, or its state was left.",
        ));
    };
    if timer.due() > now {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            format!(
                "Timer {} is not due until {}: only a due timer is fired.",
                timer.label(),
                views::time(timer.due())
            ),
        ));
    }
    if form.confirmed != "yes" {
        return Ok(confirm(
            format!(
                "Fire the due timer {} of process {process} now, with every other timer of it that is due?",
                timer.label()
            ),
            format!("{}/timers/fire", process_href(&machine, &process)),
            vec![("due".to_string(), form.due.to_string())],
            process_href(&machine, &process),
        ));
    }
    let advanced = nonblocking::advance(&service.store, chart, &process, now)
        .await
        .map_err(PageError::runtime)?;
    for fired in &advanced.fired {
        tracing::info!(%machine, process = %Escaped(&process), event_id = %Escaped(&fired.id), "operator: timer fired");
    }
    service.changed(&machine, &process);
    Ok(see_process(&machine, &process, "timers"))
}

#[derive(serde::Deserialize)]
pub(super) struct Replay {
    machine: String,
    #[serde(default)]
    syntax: String,
}

/// `POST …/replay`: the process's history run under the machine file
/// given, and the first place it diverges shown on the process page.
/// Nothing is written.
pub(super) async fn replay(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<Replay>,
) -> Result<Response, PageError> {
    same_origin(&headers)?;
    chart(&service, &machine)?;
    check_process(&process)?;
    let syntax = match form.syntax.as_str() {
        "dsl" => crate::syntax::Syntax::Dsl,
        _ => crate::syntax::Syntax::Yaml,
    };
    let history = nonblocking::history(&service.store, &process)
        .await
        .map_err(PageError::runtime)?
        .ok_or_else(|| PageError::not_found(format!("No process `{process}`.")))?;
    // Parsing and replaying a history is CPU work (bounded by the body
    // limit and the history kept): off the async threads.
    let result = {
        let process = process.clone();
        tokio::task::spawn_blocking(move || replay_view(&form.machine, syntax, &history, &process))
            .await
            .map_err(PageError::runtime)?
    };
    tracing::info!(%machine, process = %Escaped(&process), verdict = %Escaped(&result.verdict), "inspector: replay");
    let body = process_page(&service, &machine, &process, None, Some(result)).await?;
    Ok(page(StatusCode::OK, body))
}

/// What the replay of `history` under the machine file `text` shows:
/// the file's errors, a machine of another name, or the first divergence.
fn replay_view(
    text: &str,
    syntax: crate::syntax::Syntax,
    history: &runtime::History,
    process: &str,
) -> ReplayView {
    match crate::syntax::parse(text, syntax) {
        Err(diagnostics) => ReplayView {
            verdict: "The machine file does not load.".into(),
            details: diagnostics
                .iter()
                .map(|d| (d.code.to_string(), d.message.clone()))
                .collect(),
            index: None,
        },
        Ok(new) if new.name != history.machine => ReplayView {
            verdict: format!(
                "The file's machine is `{}`; process `{process}` runs `{}`.",
                new.name, history.machine
            ),
            details: Vec::new(),
            index: None,
        },
        Ok(new) => {
            let chart = Arc::new(crate::interp::Chart::new(new));
            match runtime::replay(&chart, history) {
                Err(e) => ReplayView {
                    verdict: format!("The replay cannot run: {e}"),
                    details: Vec::new(),
                    index: None,
                },
                Ok(replayed) => match replayed.divergence {
                    None => ReplayView {
                        verdict: format!(
                            "No divergence over {} entr{}.",
                            replayed.entries,
                            if replayed.entries == 1 { "y" } else { "ies" }
                        ),
                        details: Vec::new(),
                        index: None,
                    },
                    Some(d) => ReplayView {
                        verdict: format!(
                            "Diverges at entry {} of {} (revision {}, id {}): {}.",
                            d.index,
                            replayed.entries,
                            d.revision,
                            d.id,
                            d.aspect.as_str()
                        ),
                        details: vec![
                            ("recorded".into(), views::pretty(&d.recorded)),
                            ("replayed".into(), views::pretty(&d.replayed)),
                        ],
                        index: Some(d.index),
                    },
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    header::HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                )
            })
            .collect()
    }

    #[test]
    fn only_the_services_own_pages_may_post() {
        let host = ("host", "127.0.0.1:8080");
        assert!(same_origin(&headers(&[host, ("origin", "http://127.0.0.1:8080")])).is_ok());
        assert!(same_origin(&headers(&[host, ("origin", "https://127.0.0.1:8080")])).is_ok());
        assert!(same_origin(&headers(&[host, ("origin", "http://evil.example")])).is_err());
        assert!(same_origin(&headers(&[host, ("origin", "null")])).is_err());
        assert!(same_origin(&headers(&[host])).is_err(), "no Origin");
        // The browser's own word wins over an Origin that looks right.
        let cross = ("sec-fetch-site", "cross-site");
        assert!(
            same_origin(&headers(&[
                host,
                cross,
                ("origin", "http://127.0.0.1:8080")
            ]))
            .is_err()
        );
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")])).is_ok());
    }
}
