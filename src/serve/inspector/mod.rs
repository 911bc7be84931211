//! The inspector: `idemchart serve`'s pages under `/ui`, for a person.
//!
//! The pages are written on the server from templates (`templates/`, by
//! askama, which escapes every value it is given: ids, payloads, contexts
//! and errors are whatever senders sent), so that they read without
//! JavaScript; `assets/inspector.js` adds stepping through a history,
//! live updates from the server-sent events of `sse.rs`, and
//! confirmations. Operator actions (`actions.rs`) are forms, POSTed under
//! the same authentication as the API and checked to come from the
//! inspector's own pages. `docs/serve.md`, "Inspector", is the reference.

mod actions;
pub(super) mod login;
mod pages;
mod sse;
mod views;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::Service;
pub(super) use views::Views;

/// The content type of a page.
pub(super) const HTML: &str = "text/html; charset=utf-8";

/// The stylesheet and the script, embedded in the binary.
const CSS: &str = include_str!("assets/inspector.css");
const JS: &str = include_str!("assets/inspector.js");
const ICON: &str = include_str!("assets/favicon.svg");

pub(super) fn routes() -> Router<Arc<Service>> {
    Router::new()
        .route("/ui", get(pages::machines))
        .route("/ui/", get(pages::machines))
        .route("/ui/assets/inspector.css", get(css))
        .route("/ui/assets/inspector.js", get(js))
        .route("/ui/assets/favicon.svg", get(icon))
        .route("/ui/events", get(sse::all))
        .route(login::LOGIN, get(login::form).post(login::sign_in))
        .route("/ui/machines/{machine}", get(pages::machine))
        .route("/ui/machines/{machine}/processes", get(pages::processes))
        .route(
            "/ui/machines/{machine}/processes/{process}",
            get(pages::process),
        )
        .route(
            "/ui/machines/{machine}/processes/{process}/events",
            get(sse::of_process),
        )
        .route(
            "/ui/machines/{machine}/processes/{process}/replay",
            post(actions::replay),
        )
        .route(
            "/ui/machines/{machine}/processes/{process}/outbox/{key}/retry",
            post(actions::retry),
        )
        .route(
            "/ui/machines/{machine}/processes/{process}/timers/fire",
            post(actions::fire),
        )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The assets change only with the binary; a page names them without a
    // version, so they are checked again on every load.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

async fn css() -> Response {
    asset(CSS, "text/css; charset=utf-8")
}

async fn js() -> Response {
    asset(JS, "text/javascript; charset=utf-8")
}

async fn icon() -> Response {
    asset(ICON, "image/svg+xml")
}

/// A page, with the headers every page carries: no framing by other sites,
/// and a content security policy that runs only the inspector's own script
/// and style, so that a string that escaped its escaping still runs nothing.
fn page(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page that could not be made: its status and why, as a page.
#[derive(Debug)]
pub(super) struct PageError {
    status: StatusCode,
    message: String,
}

impl PageError {
    fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError {
            status,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::NOT_FOUND, message)
    }

    /// The store did not answer, or a stored row cannot be read; the words
    /// go to the log, escaped, since they may quote what a request sent.
    fn runtime(error: impl std::fmt::Display) -> PageError {
        let detail = error.to_string();
        tracing::warn!(error = %super::edge::Escaped(&detail), "inspector: no answer");
        PageError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The store did not answer; try again.",
        )
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let body = pages::error_page(self.status, &self.message);
        page(self.status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget: everything the inspector sends a browser (the
    /// stylesheet, the script and the templates it fills) stays under
    /// 300 KB.
    #[test]
    fn the_assets_stay_under_300_kb() {
        let templates: usize = pages::TEMPLATE_SOURCES.iter().map(|t| t.len()).sum();
        let total = CSS.len() + JS.len() + ICON.len() + templates;
        assert!(total < 300 * 1024, "{total} bytes");
        assert!(total > 1024, "the assets are embedded: {total} bytes");
    }
}
