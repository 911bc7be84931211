//! The HTTP handlers: each reads its request, calls the async runtime API
//! once, and turns the answer into a status, headers and a body.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tracing::Instrument;

use super::Service;
use super::edge::{self, Escaped};
use super::problem::{self, Problem};
use crate::expr::{Event, Value};
use crate::interp::Chart;
use crate::model::{Machine, Trigger};
use crate::runtime::{
    self, Completed, Dispatch, EventJsonError, Outcome, RuntimeError, nonblocking,
};
use crate::store::AsyncStore;

/// Every route, as `(method, path)` in the OpenAPI spelling, which is
/// axum's too: the router is built from the same paths, and a test checks
/// them against [`OPENAPI`].
pub const ROUTES: [(&str, &str); 8] = [
    ("post", EVENTS),
    ("post", COMPLETIONS),
    ("get", EVENTS),
    ("get", PROCESS),
    ("get", HISTORY),
    ("get", "/healthz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
];

const PROCESS: &str = "/machines/{machine}/processes/{process}";
const EVENTS: &str = "/machines/{machine}/processes/{process}/events";
const HISTORY: &str = "/machines/{machine}/processes/{process}/history";
const COMPLETIONS: &str = "/machines/{machine}/processes/{process}/completions/{key}";

/// The OpenAPI 3.1 document of the service.
pub const OPENAPI: &str = include_str!("openapi.json");

/// A page of applied events has at most this many.
const MAX_PAGE: usize = 1_000;

pub fn router(service: Arc<Service>) -> Router {
    let limit = service.options.body_limit;
    let routes = if service.options.inspector {
        super::inspector::routes()
    } else {
        Router::new()
    };
    routes
        .route(EVENTS, post(post_event).get(list_events))
        .route(COMPLETIONS, post(post_completion))
        .route(PROCESS, get(get_process))
        .route(HISTORY, get(get_history))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&service),
            read_body,
        ))
        // The layer added last runs first: the in-flight limit, the limits
        // of the request's head, the token, and only then is the body read;
        // every answer is made a problem document last.
        .layer(middleware::from_fn_with_state(
            Arc::clone(&service),
            authenticate,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&service),
            head_limits,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&service),
            in_flight,
        ))
        .layer(middleware::map_response(as_problem))
        .with_state(service)
}

/// Makes every error answer a problem document: axum's own rejections
/// (405 from the router, 400 for a path that is not percent-encoded UTF-8)
/// are plain text or empty, and a client reads one shape for every error.
async fn as_problem(response: Response) -> Response {
    let status = response.status();
    // The inspector's pages answer their errors as pages.
    let is_problem_or_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v == "application/problem+json" || v == super::inspector::HTML);
    if status.as_u16() < 400 || is_problem_or_page {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut replaced = problem::for_status(status).into_response();
    if let Some(allow) = allow {
        replaced.headers_mut().insert(header::ALLOW, allow);
    }
    replaced
}

/// Answers 503 at once when `--max-in-flight` requests are being answered:
/// a request waiting in a queue holds its connection and its memory, and
/// its client would time out anyway.
async fn in_flight(State(service): State<Arc<Service>>, request: Request, next: Next) -> Response {
    let Ok(_permit) = Arc::clone(&service.in_flight).try_acquire_owned() else {
        tracing::warn!(
            limit = service.options.max_in_flight,
            "refused: too many requests in flight"
        );
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "Too many requests in flight",
            format!(
                "the service is answering its limit of {} requests; retry",
                service.options.max_in_flight
            ),
        )
        .with("limit", service.options.max_in_flight)
        .into_response();
    };
    next.run(request).await
}

/// Reads a request's body whole, within `--header-timeout-ms` and
/// `--max-body`, before any handler: a client that trickles its body (or
/// sends a `Content-Length` it never fills) would otherwise hold its
/// connection and an in-flight place for as long as it likes, since the
/// idle timeout spares a connection with a request in flight.
async fn read_body(State(service): State<Arc<Service>>, request: Request, next: Next) -> Response {
    let options = &service.options;
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(
        options.header_timeout,
        axum::body::to_bytes(body, options.body_limit),
    )
    .await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => {
            let error = error.into_inner();
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Problem::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "bad-body",
                    "The request body cannot be read",
                    format!(
                        "the request body is larger than the limit of {} bytes",
                        options.body_limit
                    ),
                )
                .with("limit", options.body_limit)
                .into_response();
            }
            return Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-body",
                "The request body cannot be read",
                "the request body is malformed or was cut short",
            )
            .into_response();
        }
        Err(_) => {
            tracing::info!("refused: the body did not arrive in time");
            let mut response = Problem::new(
                StatusCode::REQUEST_TIMEOUT,
                "request-timeout",
                "Request timeout",
                format!(
                    "the request body did not arrive within {} ms",
                    options.header_timeout.as_millis()
                ),
            )
            .into_response();
            // The rest of the body may still come; the connection cannot
            // be read for another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The limits of a request's head: the length of its target and the size
/// and number of its headers. hyper's own limits are set above these
/// (`conn.rs`), so that a head over ours gets a problem document; hyper
/// answers only a head over its own, with a bare status.
async fn head_limits(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    let options = &service.options;
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > options.max_uri_bytes {
        return Problem::new(
            StatusCode::URI_TOO_LONG,
            "uri-too-long",
            "URI too long",
            format!(
                "the request target is {target} bytes long; the limit is {}",
                options.max_uri_bytes
            ),
        )
        .with("limit", options.max_uri_bytes)
        .into_response();
    }
    let headers = request.headers();
    // Each header counted as HTTP/1 writes it: name, `: `, value, CRLF.
    let size: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if size > options.max_header_bytes || headers.len() > options.max_headers {
        return Problem::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers-too-large",
            "Request headers too large",
            format!(
                "the request has {} headers of {size} bytes; the limits are {} headers and {} bytes",
                headers.len(),
                options.max_headers,
                options.max_header_bytes
            ),
        )
        .with("limit", options.max_header_bytes)
        .into_response();
    }
    next.run(request).await
}

/// With `--auth-token-file`, every route but `/healthz` (which a load
/// balancer probes without credentials, and which tells nothing) needs
/// `Authorization: Bearer <one of the tokens>`.
async fn authenticate(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    use super::inspector::login;
    let tokens = &service.options.auth_tokens;
    let path = request.uri().path().to_string();
    let inspector = service.options.inspector && login::is_inspector(&path);
    if tokens.is_empty() || path == "/healthz" || (inspector && path == login::LOGIN) {
        return next.run(request).await;
    }
    let header_token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| bearer(v.as_bytes()))
        .map(<[u8]>::to_vec);
    // A browser signed in to the inspector carries the token in a cookie
    // that only the inspector's pages take (`inspector/login.rs`).
    let given = header_token.or_else(|| {
        inspector
            .then(|| login::cookie_token(request.headers()))
            .flatten()
    });
    let allowed = given.as_deref().is_some_and(|t| token_matches(tokens, t));
    if allowed {
        return next.run(request).await;
    }
    // A person opening a page without a valid token is asked for one.
    if inspector && request.method() == axum::http::Method::GET {
        return login::to_login();
    }
    let detail = match given {
        Some(_) => "the bearer token is not one this service takes",
        None => "this service needs an `Authorization: Bearer <token>` header",
    };
    tracing::warn!(path = %Escaped(&path), "refused: no valid bearer token");
    let mut response = Problem::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "Unauthorized",
        detail,
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"idemchart\""),
    );
    response
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is
/// case-insensitive, RFC 9110 section 11.1).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = value.split_at_checked(7)?;
    (scheme.eq_ignore_ascii_case(b"bearer ") && !token.is_empty()).then_some(token)
}

/// Whether `given` is one of `tokens`, compared in constant time: every
/// token is compared, and each comparison takes as long whatever the bytes,
/// so the answer's timing does not tell how much of a guess was right.
pub(super) fn token_matches(tokens: &[String], given: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    let mut found = subtle::Choice::from(0);
    for token in tokens {
        found |= token.as_bytes().ct_eq(given);
    }
    found.into()
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

fn check_process(process: &str) -> Result<(), Problem> {
    edge::process_id(process).map_err(|refusal| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-process-id",
            "The process id cannot be used",
            refusal.to_string(),
        )
        .with("limit", edge::MAX_ID_BYTES)
    })
}

/// A 415 unless the POST's body is JSON (`is_json`).
fn check_json(headers: &HeaderMap) -> Result<(), Problem> {
    if is_json(headers) {
        return Ok(());
    }
    Err(Problem::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
        "Unsupported media type",
        "the body must be sent as `Content-Type: application/json`",
    ))
}

/// Whether a POST says its body is JSON: `application/json`, with any
/// parameters (`; charset=utf-8`). A body of another type is refused, so
/// that a web page cannot send events with a "simple" cross-site request
/// (`text/plain`, a form), which browsers send without asking first.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The event id a JSON value gives, spelled as the runtime spells it
/// (`runtime::event_id`): a string as it is, anything else as JSON.
fn id_text(value: &serde_json::Value) -> Option<String> {
    runtime::event_id(&Event::new("", Some(Value::from(value)), Value::Null))
}

/// Whether `machine` has anything to do with events named `name`: it
/// declares them, or a transition of some state takes them.
fn is_known_event(machine: &Machine, name: &str) -> bool {
    machine.events.contains_key(name)
        || machine
            .transitions
            .iter()
            .any(|t| matches!(&t.trigger, Trigger::Event(d) if d.matches(name)))
}

fn unknown_event(machine: &str, name: &str, why: String) -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown-event",
        "The machine has no such event",
        why,
    )
    .with("machine", machine)
    .with("event", name)
}

fn mismatch(field: &str, declared: &str, other: &str, from: &str) -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "id-mismatch",
        "The event has two ids",
        format!(
            "the payload field `{field}`, which the machine declares as the event's id, is `{declared}`, and {from} says `{other}`; one event has one id"
        ),
    )
    .with("declared", declared)
    .with("other", other)
}

/// `POST /machines/{machine}/processes/{process}/events`.
///
/// Everything the request says is checked here before the store sees any
/// of it: an answer of 4xx writes nothing.
async fn post_event(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    check_json(&headers)?;
    let chart = chart(&service, &machine)?;
    check_process(&process)?;
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
        .with("limit", limit)
    })?;
    let mut keys = headers.get_all("idempotency-key").iter();
    let key = match (keys.next(), keys.next()) {
        (None, _) => None,
        (Some(value), None) => {
            Some(edge::idempotency_key(value.as_bytes()).map_err(|refusal| {
                Problem::new(
                    StatusCode::BAD_REQUEST,
                    "bad-idempotency-key",
                    "Bad Idempotency-Key",
                    refusal.to_string(),
                )
                .with("limit", edge::MAX_ID_BYTES)
            })?)
        }
        (Some(_), Some(_)) => {
            return Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-idempotency-key",
                "Bad Idempotency-Key",
                "the request has more than one Idempotency-Key header",
            ));
        }
    };
    let text = std::str::from_utf8(&body).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-event",
            "The event cannot be read",
            format!("the body is not UTF-8: {e}"),
        )
    })?;
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        // parse_event reads the same text, and says where it is not JSON.
        Err(_) => {
            return Err(match runtime::parse_event(text, chart.machine(), None) {
                Err(error) => event_problem(error),
                Ok(_) => Problem::new(
                    StatusCode::BAD_REQUEST,
                    "bad-event",
                    "The event cannot be read",
                    "the body is not JSON",
                ),
            });
        }
    };
    // The type is read first: a type no machine can have (a NUL in it too)
    // is an unknown event, 422, like any other name the machine lacks.
    if let Some(name) = value.get("type").and_then(|t| t.as_str()) {
        edge::event_type(name).map_err(|refusal| {
            unknown_event(
                &machine,
                name,
                format!("{refusal}, so machine `{machine}` has no such event"),
            )
        })?;
        if edge::is_internal_event(name) {
            tracing::warn!(%machine, process = %Escaped(&process), event = %Escaped(name), "refused: an internal event sent from outside");
            return Err(Problem::new(
                StatusCode::FORBIDDEN,
                "internal-event",
                "The event is the runtime's own",
                format!("event `{name}` is sent by the interpreter or the runtime (a completion, an error, an unknown outcome), never by a client"),
            )
            .with("event", name));
        }
        if !is_known_event(chart.machine(), name) {
            return Err(unknown_event(
                &machine,
                name,
                format!(
                    "machine `{machine}` neither declares event `{name}` nor has a transition that takes it"
                ),
            ));
        }
    }
    if let Some(path) = edge::nul_in(&value) {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "nul-in-event",
            "The event holds a NUL character",
            format!("the string at `{path}` holds a NUL (U+0000), which no store keeps"),
        )
        .with("at", path));
    }
    let event =
        runtime::event_from_json(&value, chart.machine(), key.as_deref()).map_err(event_problem)?;
    // The identity of an event whose machine declares its id field is that
    // field: a body `id` or a header saying otherwise would make the same
    // payment (the same field value) a second event.
    let body_id = value.get("id").and_then(id_text);
    let declared = chart
        .machine()
        .events
        .get(&*event.name)
        .and_then(|d| d.id_field.as_ref())
        .and_then(|field| {
            let given = value.get("data")?.get(&*field.text)?;
            Some((field.text.to_string(), id_text(given)?))
        });
    match &declared {
        Some((field, declared)) => {
            if let Some(other) = body_id.as_ref().filter(|b| *b != declared) {
                return Err(mismatch(field, declared, other, "the body's `id`"));
            }
            if let Some(other) = key.as_ref().filter(|k| *k != declared) {
                return Err(mismatch(
                    field,
                    declared,
                    other,
                    "the Idempotency-Key header",
                ));
            }
        }
        None => {
            if let (Some(body_id), Some(key)) = (&body_id, &key)
                && body_id != key
            {
                return Err(Problem::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "id-mismatch",
                    "The event has two ids",
                    format!("the body's `id` is `{body_id}` and the Idempotency-Key header is `{key}`; one event has one id"),
                )
                .with("declared", body_id.as_str())
                .with("other", key.as_str()));
            }
        }
    }
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
    edge::event_id(&id).map_err(|refusal| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-event-id",
            "The event id cannot be used",
            refusal.to_string(),
        )
        .with("limit", edge::MAX_ID_BYTES)
    })?;
    let span = tracing::info_span!(
        "event",
        %machine,
        process = %Escaped(&process),
        event_id = %Escaped(&id),
        event = %Escaped(&event.name)
    );
    answer(&service, &machine, &process, &id, &event)
        .instrument(span)
        .await
}

/// Applies `event` under `id` unless another request is applying it, in
/// the next group of `machine`'s events, and answers once it is committed.
async fn answer(
    service: &Arc<Service>,
    machine: &str,
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
    let applied = super::group::apply(service, machine, process, event).await;
    let took = started.elapsed();
    let outcome = applied.map_err(runtime_problem)?;
    service.metrics.answered(outcome.kind(), took);
    if let Outcome::Duplicate { .. } = outcome {
        service.duplicate_answered(process, id, runtime::now_millis());
    }
    if !matches!(outcome, Outcome::Conflict) {
        service.changed(machine, process);
    }
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
    check_json(&headers)?;
    let chart = chart(&service, &machine)?;
    check_process(&process)?;
    // A key is an id as an event's is: the same bounds, so that nothing
    // unbounded reaches the store or the log.
    edge::event_id(&key).map_err(|refusal| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-completion-key",
            "The invocation key cannot be used",
            refusal.to_string(),
        )
        .with("limit", edge::MAX_ID_BYTES)
    })?;
    // The process must run this machine: its completion would be applied
    // with another machine's chart.
    state_of(&service, &machine, &process).await?;
    let token = headers
        .get("idempotency-completion-token")
        .and_then(|value| value.to_str().ok());
    let allowed = token.is_some_and(|token| {
        runtime::completion_token_matches(service.store.secret(), &key, token)
    });
    if !allowed {
        tracing::warn!(%machine, process = %Escaped(&process), key = %Escaped(&key), "completion refused: no valid token");
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
    let span = tracing::info_span!("completion", %machine, process = %Escaped(&process), key = %Escaped(&key));
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
    service.changed(&machine, &process);
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
    // The error is logged whole, escaped, since the store's words may
    // quote what the request sent.
    tracing::warn!(error = %Escaped(&detail), "no answer");
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
        RuntimeError::Migration(_) => Problem::new(
            StatusCode::CONFLICT,
            "version-not-migrated",
            "The process runs a version the machine does not migrate",
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
        // The store's own words stay in the log: they name tables and
        // indexes, and may quote the request.
        RuntimeError::Store(_) | RuntimeError::Contention(..) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "No answer now; nothing was written",
            "the store did not answer; nothing was written, and the same request may be sent again",
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
    check_process(process)?;
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

/// `GET /machines/{machine}/processes/{process}/history`: the timeline
/// (`runtime::History::to_json`), whole.
async fn get_history(
    State(service): State<Arc<Service>>,
    Path((machine, process)): Path<(String, String)>,
) -> Result<Response, Problem> {
    state_of(&service, &machine, &process).await?;
    let history = nonblocking::history(&service.store, &process)
        .await
        .map_err(runtime_problem)?
        // Deleted between the two reads: as unknown as before.
        .ok_or_else(|| no_process(&machine, &process))?;
    Ok(json(StatusCode::OK, history.to_json().to_string()))
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
