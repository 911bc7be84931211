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
        // A store that is down, or a process too busy, may answer a retry.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
