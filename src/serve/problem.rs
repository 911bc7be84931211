//! Errors as `application/problem+json` documents (RFC 9457): a `type` URI
//! naming the kind of problem, its `title`, the `status`, a `detail` for this
//! occurrence, and members of the problem's own (`errors`, `process`, …).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The base of the `type` URIs; each kind is `TYPE_BASE` + its slug, as
/// `docs/serve.md` lists them.
pub const TYPE_BASE: &str = "https://idemchart.dev/problems/";

#[derive(Debug)]
pub struct Problem {
    pub status: StatusCode,
    /// The slug after [`TYPE_BASE`].
    pub kind: &'static str,
    pub title: &'static str,
    pub detail: String,
    /// Members of this kind of problem, added to the document in order.
    pub extra: Vec<(&'static str, serde_json::Value)>,
}

impl Problem {
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            status,
            kind,
            title,
            detail: detail.into(),
            extra: Vec::new(),
        }
    }

    pub fn with(mut self, key: &'static str, value: impl Into<serde_json::Value>) -> Problem {
        self.extra.push((key, value.into()));
        self
    }

    pub fn document(&self) -> serde_json::Value {
        let mut doc = serde_json::Map::new();
        doc.insert("type".into(), format!("{TYPE_BASE}{}", self.kind).into());
        doc.insert("title".into(), self.title.into());
        doc.insert("status".into(), self.status.as_u16().into());
        doc.insert("detail".into(), self.detail.clone().into());
        for (key, value) in &self.extra {
            doc.insert((*key).to_string(), value.clone());
        }
        serde_json::Value::Object(doc)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = self.document().to_string();
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        // A store that is down, a service that is full, or an id another
        // request is applying right now may answer a retry in a second; a
        // 409 of another kind (a process of another machine) never will.
        if self.status == StatusCode::SERVICE_UNAVAILABLE || self.kind == "in-progress" {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// The problem standing for an error answer that is not one already: the
/// rejections of axum and of the router (405, a path that cannot be
/// decoded), which write plain text or nothing. Its detail is fixed per
/// status, since the plain text may quote the request.
pub fn for_status(status: StatusCode) -> Problem {
    let (kind, title, detail) = match status.as_u16() {
        400 => (
            "bad-request",
            "Bad request",
            "the request cannot be read: a path segment that is not percent-encoded UTF-8, or a malformed header",
        ),
        401 => ("unauthorized", "Unauthorized", "a bearer token is required"),
        404 => (
            "not-found",
            "Not found",
            "no such route; GET /openapi.json lists them",
        ),
        405 => (
            "method-not-allowed",
            "Method not allowed",
            "this route does not take this method; the Allow header lists those it takes",
        ),
        408 => (
            "request-timeout",
            "Request timeout",
            "the request was not received in time",
        ),
        413 => (
            "bad-body",
            "The request body cannot be read",
            "the request body is larger than the limit",
        ),
        414 => (
            "uri-too-long",
            "URI too long",
            "the request target is longer than the limit",
        ),
        415 => (
            "unsupported-media-type",
            "Unsupported media type",
            "the body must be application/json",
        ),
        431 => (
            "headers-too-large",
            "Request headers too large",
            "the request headers are larger than the limit",
        ),
        503 => (
            "unavailable",
            "No answer now; nothing was written",
            "the service cannot answer now; retry",
        ),
        s if s >= 500 => (
            "internal",
            "Internal error",
            "the service failed to answer; nothing was written",
        ),
        _ => (
            "bad-request",
            "Bad request",
            "the request cannot be answered",
        ),
    };
    Problem::new(status, kind, title, detail)
}
