//! What `idemchart serve` reads from outside and parses itself (axum parses
//! the HTTP framing, the path and the query): the first byte picks the part.
//!
//! - 0: a request to `POST .../processes/{process}/events`, written as
//!   `KEY \n PROCESS \n BODY`: the `Idempotency-Key` header (an empty KEY is
//!   no header), the process id as axum hands it on, and the body, read by
//!   `runtime::parse_event` for one of three machines (`machines/checkout.yaml`
//!   and `machines/pedido.yaml`, whose events declare payloads and id fields,
//!   and one declaring every payload type), then applied twice on an
//!   in-memory SQLite store.
//! - 1: the effects file, through `serve::effects::Effects::parse`.
//! - 2: an effect endpoint's HTTP answer (two bytes of status, then the
//!   body), through `serve::effects::answer`.
//!
//! Beyond no panic, hang or OOM: an accepted event has its id by the rule
//! `event_json` documents (the `id` given, else the declared field, else the
//! header) and its declared fields with their declared types as the machine
//! sees them; written back as JSON (`Value::to_json`) it reads back equal,
//! with the same payload hash; the second delivery is a duplicate with the
//! first answer's bytes. A parsed endpoint's url is http or https; a refused
//! effects file's error starts with `LINE:COL: ` inside the text. An answer
//! is sorted by its status class.
#![no_main]

use std::sync::{Arc, LazyLock};

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::model::{Machine, PayloadType};
use idemchart::runtime::{self, Dispatch, EventJsonError, Outcome};
use idemchart::serve::effects::{Effects, answer};
use idemchart::store::SqliteStore;
use idemchart::syntax::{Syntax, parse};
use libfuzzer_sys::fuzz_target;

/// Every payload type, an id field of each kind of declaration, and an
/// event with an id field but no payload.
const EVERY_TYPE: &str = r#"
machine: tipos
events:
  T: { id: k, payload: { k: string, n: number, i: integer, b: boolean, l: list, m: map, a: any } }
  NUM: { id: n, payload: { n: integer } }
  BARE: { id: ref }
initial: a
states:
  a: { on: { T: a, NUM: a, BARE: a, OTHER: a } }
"#;

static CHARTS: LazyLock<Vec<Arc<Chart>>> = LazyLock::new(|| {
    [
        include_str!("../../machines/checkout.yaml"),
        include_str!("../../machines/pedido.yaml"),
        EVERY_TYPE,
    ]
    .into_iter()
    .map(|text| Arc::new(Chart::new(parse(text, Syntax::Yaml).unwrap())))
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => request(&CHARTS[usize::from(selector / 3) % CHARTS.len()], rest),
        1 => effects_file(rest),
        _ => effect_answer(rest),
    }
});

fn request(chart: &Arc<Chart>, input: &[u8]) {
    let mut parts = input.splitn(3, |&b| b == b'\n');
    let (Some(key), Some(process), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    // The handler reads the header with `HeaderValue::to_str` (visible
    // ASCII); bytes that are no header value never reach it.
    let key = match key {
        [] => None,
        bytes => match http::HeaderValue::from_bytes(bytes) {
            Ok(value) => match value.to_str() {
                Ok(key) => Some(key.to_string()),
                Err(_) => return,
            },
            Err(_) => return,
        },
    };
    let (Ok(process), Ok(text)) = (std::str::from_utf8(process), std::str::from_utf8(body)) else {
        return;
    };
    let machine = chart.machine();
    let event = match runtime::parse_event(text, machine, key.as_deref()) {
        Ok(event) => event,
        Err(error) => {
            refused(text, &error);
            return;
        }
    };
    let json: serde_json::Value = serde_json::from_str(text).expect("an accepted event is JSON");
    accepted(&event, &json, machine, key.as_deref());

    // Written back as JSON, the event reads back the same.
    let mut written = serde_json::Map::new();
    written.insert("type".into(), serde_json::Value::from(&*event.name));
    if let Some(id) = &event.id {
        written.insert("id".into(), id.to_json());
    }
    written.insert("data".into(), event.data.to_json());
    let written = serde_json::Value::Object(written).to_string();
    let again = runtime::parse_event(&written, machine, key.as_deref()).unwrap_or_else(|e| {
        panic!("{text} was accepted, written back as {written} it is not: {e}")
    });
    assert_eq!(again.name, event.name, "{written}");
    assert_eq!(again.id, event.id, "{written}");
    assert_eq!(again.data, event.data, "{written}");
    assert_eq!(runtime::payload_hash(&again), runtime::payload_hash(&event));

    // Applied twice: the second is a duplicate with the first answer's
    // bytes, or both are the same refusal and nothing was written.
    let mut store = SqliteStore::in_memory().unwrap();
    let now = 1_700_000_000_000;
    let first = runtime::apply_at(&mut store, chart, process, &event, now);
    let second = runtime::apply_at(&mut store, chart, process, &event, now + 1);
    match (first, second) {
        (Ok(first), Ok(second)) => {
            if let Outcome::Applied { response, .. } | Outcome::Ignored { response, .. } = &first {
                assert_eq!(second.kind(), "duplicate", "{text}");
                assert_eq!(second.response(), Some(response.as_str()), "{text}");
            }
            let state = runtime::inspect(&mut store, process)
                .unwrap()
                .expect("an applied event leaves its process");
            assert_eq!(state["process"], process);
            assert_eq!(state["machine"], &*machine.name);
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string());
            assert!(runtime::inspect(&mut store, process).unwrap().is_none());
        }
        (a, b) => panic!("first {a:?}, then {b:?}\n{text}"),
    }
}

/// What `parse_event` gave back for an event it accepted, against the rules
/// read from the JSON itself.
fn accepted(event: &Event, json: &serde_json::Value, machine: &Machine, key: Option<&str>) {
    let object = json.as_object().expect("an accepted event is an object");
    assert_eq!(Some(&*event.name), object["type"].as_str());
    let data = object.get("data").map_or(Value::Null, Value::from);
    assert_eq!(event.data, data);
    let declared = machine.events.get(&*event.name);
    let id_field = declared.and_then(|d| d.id_field.as_ref()).map(|f| &*f.text);
    let expected = object
        .get("id")
        .map(Value::from)
        .or_else(|| data.get(id_field?).cloned())
        .or_else(|| key.map(Value::from));
    assert_eq!(event.id, expected, "the id rule");
    match (&event.id, runtime::event_id(event)) {
        (None | Some(Value::Null), id) => assert_eq!(id, None),
        (Some(Value::String(s)), id) => assert_eq!(id.as_deref(), Some(&**s)),
        (Some(_), id) => assert!(id.is_some()),
    }
    // Every declared field holds its declared type as the machine's
    // expressions see it (the checker types them by the declaration).
    for (field, declaration) in declared
        .and_then(|d| d.payload.as_ref())
        .into_iter()
        .flatten()
    {
        let Some(value) = event.data.get(field) else {
            assert_eq!(id_field, Some(field.as_str()), "`{field}` is missing");
            continue;
        };
        let fits = match declaration.ty {
            PayloadType::Any => true,
            PayloadType::String => matches!(value, Value::String(_)),
            PayloadType::Number => matches!(value, Value::Int(_) | Value::Double(_)),
            PayloadType::Integer => matches!(value, Value::Int(_)),
            PayloadType::Boolean => matches!(value, Value::Bool(_)),
            PayloadType::List => matches!(value, Value::List(_)),
            PayloadType::Map => matches!(value, Value::Map(_)),
        };
        assert!(
            fits,
            "`{field}` is declared {}, the machine sees {value:?}",
            declaration.ty.as_str()
        );
    }
}

/// A refused event: a text serde_json reads is never said not to be JSON,
/// and the place of one it cannot read is inside the text.
fn refused(text: &str, error: &EventJsonError) {
    let parsed = serde_json::from_str::<serde_json::Value>(text);
    match error {
        EventJsonError::NotJson { line, .. } => {
            assert!(parsed.is_err(), "{text:?} is JSON");
            assert!(
                *line >= 1 && *line <= text.split('\n').count(),
                "line {line} of {text:?}"
            );
        }
        _ => assert!(parsed.is_ok(), "{text:?}: {error}"),
    }
    assert!(!error.to_string().is_empty());
}

fn effects_file(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    match Effects::parse(text) {
        Ok(effects) => {
            for (name, endpoint) in &effects.endpoints {
                assert!(
                    matches!(endpoint.url.scheme(), "http" | "https"),
                    "{name}: {}",
                    endpoint.url
                );
                assert!(
                    endpoint.max_attempts > 0 && !endpoint.timeout.is_zero(),
                    "{name}"
                );
                let policy = endpoint.policy();
                assert!(
                    policy.lease_ms > endpoint.timeout.as_millis().min(u128::from(u64::MAX)) as u64
                );
            }
        }
        Err(message) => {
            let (place, rest) = message
                .split_once(": ")
                .unwrap_or_else(|| panic!("{message:?} has no place"));
            assert!(!rest.is_empty(), "{message:?}");
            let (line, column) = place
                .split_once(':')
                .and_then(|(l, c)| Some((l.parse::<usize>().ok()?, c.parse::<usize>().ok()?)))
                .unwrap_or_else(|| panic!("{message:?} does not start with LINE:COL"));
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(
                line >= 1 && line <= lines.len(),
                "{message:?}: {} lines",
                lines.len()
            );
            assert!(
                column >= 1 && column <= lines[line - 1].len() + 1,
                "{message:?}: line {line} has {} bytes",
                lines[line - 1].len()
            );
        }
    }
}

fn effect_answer(input: &[u8]) {
    let [high, low, body @ ..] = input else {
        return;
    };
    let Ok(status) = http::StatusCode::from_u16(u16::from_be_bytes([*high, *low])) else {
        return;
    };
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    let code = status.as_u16();
    match answer(status, body) {
        Dispatch::Done => assert!(status.is_success() && json.is_none()),
        Dispatch::Output(output) => {
            assert!(status.is_success());
            assert_eq!(Some(output), json);
        }
        Dispatch::Failed(failed) => {
            assert!(status.is_client_error() && code != 408 && code != 429);
            assert_eq!(failed["status"], code);
        }
        Dispatch::Retry(reason) => {
            assert!(!status.is_success());
            assert!(reason.starts_with(&status.to_string()));
        }
        other => panic!("{status}: {other:?}"),
    }
}
