//! The server-sent events the pages follow: a `change` event, carrying
//! `{"machine", "process"}`, each time something is written for a process
//! (`Service::changed`), and a `lagged` event when a slow page missed some
//! (it reloads what it shows either way). A stream ends when the service
//! stops, so that it does not hold the connection open past the shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::PageError;
use super::pages::{chart, check_process};
use crate::serve::{Change, Service};

/// `GET /ui/events`: the changes of every process.
pub(super) async fn all(
    State(service): State<Arc<Service>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    stream(&service, None)
}

/// `GET /ui/machines/{machine}/processes/{process}/events`: the changes
/// of one process.
pub(super) async fn of_process(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, PageError> {
    chart(&service, &machine)?;
    check_process(&process)?;
    Ok(stream(&service, Some(Change { machine, process })))
}

fn stream(
    service: &Service,
    only: Option<Change>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let state = (
        service.changes.subscribe(),
        service.closing.subscribe(),
        only,
    );
    let events =
        futures_util::stream::unfold(state, |(mut changes, mut closing, only)| async move {
            loop {
                if *closing.borrow() {
                    return None;
                }
                let event = tokio::select! {
                    _ = closing.changed() => return None,
                    received = changes.recv() => match received {
                        Ok(change) if only.as_ref().is_none_or(|o| *o == change) => Event::default()
                            .event("change")
                            .json_data(serde_json::json!({
                                "machine": change.machine,
                                "process": change.process,
                            }))
                            .unwrap_or_default(),
                        Ok(_) => continue,
                        Err(RecvError::Lagged(_)) => Event::default().event("lagged").data("{}"),
                        Err(RecvError::Closed) => return None,
                    },
                };
                return Some((Ok(event), (changes, closing, only)));
            }
        });
    // A comment now and then keeps proxies from closing a quiet stream,
    // and the idle timeout from closing its connection.
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
