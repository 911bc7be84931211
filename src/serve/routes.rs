//! The HTTP handlers: each reads its request, calls the async runtime API
//! once, and turns the answer into a status, headers and a body.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tracing::Instrument;

use super::Service;
use super::problem::Problem;
use crate::interp::Chart;
use crate::runtime::{
    self, Completed, Dispatch, EventJsonError, Outcome, RuntimeError, nonblocking,
};
use crate::store::AsyncStore;

/// Every route, as `(method, path)` in the OpenAPI spelling, which is
/// axum's too: the router is built from the same paths, and a test checks
/// them against [`OPENAPI`].
pub const ROUTES: [(&str, &str); 7] = [
    ("post", EVENTS),
    ("post", COMPLETIONS),
    ("get", EVENTS),
    ("get", PROCESS),
    ("get", "/healthz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
];

const PROCESS: &str = "/machines/{machine}/processes/{process}";
const EVENTS: &str = "/machines/{machine}/processes/{process}/events";
const COMPLETIONS: &str = "/machines/{machine}/processes/{process}/completions/{key}";

/// The OpenAPI 3.1 document of the service.
pub const OPENAPI: &str = include_str!("openapi.json");

/// A page of applied events has at most this many.
const MAX_PAGE: usize = 1_000;

pub fn router(service: Arc<Service>) -> Router {
    let limit = service.options.body_limit;
    Router::new()
        .route(EVENTS, post(post_event).get(list_events))
        .route(COMPLETIONS, post(post_completion))
        .route(PROCESS, get(get_process))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(service)
}

fn json(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn chart<'s>(service: &'s Service, machine: &str) -> Result<&'s Arc<Chart>, Problem> {
    service.charts.get(machine).ok_or_else(|| {
        let known: Vec<&String> = service.charts.keys().collect();
        Problem::new(
            StatusCode::NOT_FOUND,
            "unknown-machine",
            "Unknown machine",
            format!("no machine `{machine}` is served here"),
        )
        .with("machine", machine)
        .with("machines", serde_json::json!(known))
    })
}

/// `POST /machines/{machine}/processes/{process}/events`.
async fn post_event(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    let chart = chart(&service, &machine)?;
    let limit = service.options.body_limit;
    let body = body.map_err(|rejection| {
        let status = rejection.status();
        let detail = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is larger than the limit of {limit} bytes")
        } else {
            rejection.body_text()
        };
        Problem::new(
            status,
            "bad-body",
            "The request body cannot be read",
            detail,
        )
    })?;
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-idempotency-key",
                "Bad Idempotency-Key",
                "the Idempotency-Key header is not visible ASCII",
            )
        })?),
    };
    let text = std::str::from_utf8(&body).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-event",
            "The event cannot be read",
            format!("the body is not UTF-8: {e}"),
        )
    })?;
    let event = runtime::parse_event(text, chart.machine(), key).map_err(event_problem)?;
    let Some(id) = runtime::event_id(&event) else {
        let field = chart
            .machine()
            .events
            .get(&*event.name)
            .and_then(|d| d.id_field.as_ref())
            .map(|f| f.text.to_string());
        let detail = match &field {
            Some(field) => format!(
                "event `{}` has no id: its payload field `{field}` is missing, and there is no Idempotency-Key header",
                event.name
            ),
            None => format!(
                "event `{}` has no id: machine `{machine}` declares no id field for it, so send an Idempotency-Key header",
                event.name
            ),
        };
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "missing-idempotency-key",
            "The event has no id",
            detail,
        ));
    };
    let span =
        tracing::info_span!("event", %machine, %process, event_id = %id, event = %event.name);
    answer(&service, chart, &process, &id, &event)
        .instrument(span)
        .await
}

/// Applies `event` under `id` unless another request is applying it, and
/// answers.
async fn answer(
    service: &Service,
    chart: &Arc<Chart>,
    process: &str,
    id: &str,
    event: &crate::expr::Event,
) -> Result<Response, Problem> {
    let Some(_applying) = service.begin_applying(process, id) else {
        service.metrics.in_progress();
        tracing::info!("refused: the same id is being applied");
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "in-progress",
            "The event is being applied",
            format!("event id `{id}` of process `{process}` is being applied by another request; retry once it answers"),
        )
        .with("process", process)
        .with("event_id", id));
    };
    let started = Instant::now();
    let applied = nonblocking::apply(&service.store, chart, process, event).await;
    let took = started.elapsed();
    let outcome = applied.map_err(|e| {
        tracing::warn!(error = %e, "no answer");
        runtime_problem(e)
    })?;
    service.metrics.answered(outcome.kind(), took);
    tracing::info!(outcome = outcome.kind(), revision = ?outcome.revision(), micros = took.as_micros() as u64, "answered");
    match outcome {
        Outcome::Applied { response, .. } | Outcome::Ignored { response, .. } => {
            Ok(json(StatusCode::OK, response))
        }
        Outcome::Duplicate { response, .. } => {
            let mut reply = json(StatusCode::OK, response);
            reply
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(reply)
        }
        Outcome::Conflict => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "id-reused",
            "The event id was used with another payload",
            format!("event id `{id}` of process `{process}` was applied with another payload; a new event needs a new id"),
        )
        .with("process", process)
        .with("event_id", id)),
    }
}

/// The body of a completion: exactly one of the two answers.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompletionBody {
    output: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
}

/// `POST /machines/{machine}/processes/{process}/completions/{key}`: the
/// answer to the invocation whose outbox row has `key`, from a receiver
/// that answered the call 202. It needs the row's completion token (the
/// `Idempotency-Completion-Token` header the call carried), checked in
/// constant time before anything is read, so that knowing a key (it is in
/// responses and logs) completes nothing.
async fn post_completion(
    State(service): State<Arc<Service>>,
    Path((machine, process, key)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    let chart = chart(&service, &machine)?;
    let token = headers
        .get("idempotency-completion-token")
        .and_then(|value| value.to_str().ok());
    let allowed = token.is_some_and(|token| {
        runtime::completion_token_matches(service.store.secret(), &key, token)
    });
    if !allowed {
        tracing::warn!(%machine, %process, %key, "completion refused: no valid token");
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "bad-completion-token",
            "The completion token is missing or wrong",
            "an invocation is answered with the Idempotency-Completion-Token its call carried",
        ));
    }
    let body = body.map_err(|rejection| {
        Problem::new(
            rejection.status(),
            "bad-body",
            "The request body cannot be read",
            rejection.body_text(),
        )
    })?;
    let bad = |detail: String| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-completion",
            "The completion cannot be read",
            detail,
        )
    };
    let parsed: CompletionBody = serde_json::from_slice(&body).map_err(|e| bad(e.to_string()))?;
    let answer = match (parsed.output, parsed.error) {
        (Some(output), None) => Dispatch::Output(output),
        (None, Some(error)) => Dispatch::Failed(error),
        _ => return Err(bad("give exactly one of `output` and `error`".into())),
    };
    let span = tracing::info_span!("completion", %machine, %process, %key);
    let completed = nonblocking::complete_at(
        &service.store,
        chart,
        &process,
        &key,
        answer,
        runtime::now_millis(),
    )
    .instrument(span.clone())
    .await
    .map_err(runtime_problem)?;
    span.in_scope(|| tracing::info!(answer = ?completed, "completion"));
    match completed {
        Completed::Applied(outcome) => Ok(json(
            StatusCode::OK,
            outcome.response().unwrap_or_default().to_string(),
        )),
        Completed::Duplicate(outcome) => {
            let mut reply = json(
                StatusCode::OK,
                outcome.response().unwrap_or_default().to_string(),
            );
            reply
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(reply)
        }
        Completed::NotPending(status) => Err(Problem::new(
            StatusCode::CONFLICT,
            "not-pending",
            "The invocation is not waiting for an answer",
            format!("the invocation with key `{key}` of process `{process}` is {}, and this answer is not the one it got", status.as_str()),
        )
        .with("status", status.as_str())),
        Completed::Unknown => Err(Problem::new(
            StatusCode::NOT_FOUND,
            "unknown-invocation",
            "Unknown invocation",
            format!("process `{process}` has no invocation with key `{key}`"),
        )),
    }
}

fn event_problem(error: EventJsonError) -> Problem {
    match &error {
        EventJsonError::Payload {
            machine,
            event,
            mismatches,
        } => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad-payload",
            "The payload does not have the declared types",
            error.to_string(),
        )
        .with("machine", machine.as_str())
        .with("event", event.as_str())
        .with("errors", serde_json::json!(mismatches)),
        _ => Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-event",
            "The event cannot be read",
            error.to_string(),
        ),
    }
}

/// The problem for an error of the runtime. Nothing was written for any.
fn runtime_problem(error: RuntimeError) -> Problem {
    let detail = error.to_string();
    match error {
        RuntimeError::MissingId(_) | RuntimeError::ReservedId(_) => Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-event-id",
            "The event id cannot be used",
            detail,
        ),
        RuntimeError::WrongMachine { .. } => Problem::new(
            StatusCode::CONFLICT,
            "wrong-machine",
            "The process runs another machine",
            detail,
        ),
        RuntimeError::Unsettled { unsettled, .. } => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsettled",
            "The step does not settle",
            detail,
        )
        .with("microsteps", unsettled.limit)
        .with("states", serde_json::json!(unsettled.paths))
        .with("events", serde_json::json!(unsettled.events)),
        RuntimeError::Store(_) | RuntimeError::Contention(..) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "No answer now; nothing was written",
            detail,
        ),
        _ => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "The process cannot be continued",
            detail,
        ),
    }
}

fn no_process(machine: &str, process: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "unknown-process",
        "Unknown process",
        format!("machine `{machine}` has no process `{process}`"),
    )
}

/// The stored state of `process` when it runs `machine`.
async fn state_of(
    service: &Service,
    machine: &str,
    process: &str,
) -> Result<serde_json::Value, Problem> {
    chart(service, machine)?;
    let state = nonblocking::inspect(&service.store, process)
        .await
        .map_err(runtime_problem)?;
    state
        .filter(|state| state["machine"] == machine)
        .ok_or_else(|| no_process(machine, process))
}

/// `GET /machines/{machine}/processes/{process}`.
async fn get_process(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let state = state_of(&service, &machine, &process).await?;
    Ok(json(StatusCode::OK, state.to_string()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    offset: Option<usize>,
    limit: Option<usize>,
}

/// `GET /machines/{machine}/processes/{process}/events?offset=&limit=`.
async fn list_events(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, Problem> {
    let Query(page) = page.map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-query",
            "Bad query",
            e.body_text(),
        )
    })?;
    state_of(&service, &machine, &process).await?;
    let offset = page.offset.unwrap_or(0);
    let limit = page.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    // One more than asked says whether another page follows.
    let mut rows = service
        .store
        .applied_events(&process, offset, limit + 1)
        .await
        .map_err(|e| runtime_problem(e.into()))?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let events: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            serde_json::json!({
                "id": row.event_id,
                "revision": row.revision,
                "applied_at": row.applied_at,
                "response": serde_json::from_str::<serde_json::Value>(&row.response)
                    .unwrap_or(serde_json::Value::Null),
            })
        })
        .collect();
    let body = serde_json::json!({
        "process": process,
        "offset": offset,
        "events": events,
        "next_offset": more.then_some(offset + limit),
    });
    Ok(json(StatusCode::OK, body.to_string()))
}

/// `GET /healthz`: 200 while the store answers.
async fn healthz(State(service): State<Arc<Service>>) -> Result<Response, Problem> {
    service
        .store
        .stats(runtime::now_millis())
        .await
        .map_err(|e| runtime_problem(e.into()))?;
    Ok(json(StatusCode::OK, r#"{"status":"ok"}"#))
}

/// `GET /metrics`, in Prometheus text.
async fn metrics(State(service): State<Arc<Service>>) -> Result<Response, Problem> {
    let stats = service
        .store
        .stats(runtime::now_millis())
        .await
        .map_err(|e| runtime_problem(e.into()))?;
    let mut response = service.metrics.render(&stats).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

async fn openapi() -> Response {
    json(StatusCode::OK, OPENAPI)
}

async fn not_found() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "no such route; GET /openapi.json lists them",
    )
}
