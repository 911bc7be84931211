//! The durable runtime: `apply` an event to a stored process exactly once,
//! answer duplicates with the frozen first response, and hand effects to an
//! outbox with stable idempotency keys.
//!
//! See DESIGN.md, "The apply contract". In one store transaction `apply`
//! looks the `(process, event id)` pair up; a known id with the same payload
//! hash is a `Duplicate` answered with the stored response bytes, with another
//! payload a `Conflict` that writes nothing. Otherwise it restores the actor,
//! sends the event, and writes the applied-event row, the outbox rows and the
//! new snapshot (under a revision check) together. An event that enables no
//! transition is `Ignored`, and recorded and frozen like any answer.
//!
//! These functions take a sync [`Store`]; [`nonblocking`] has each of them
//! as an `async fn` over an [`AsyncStore`](crate::store::AsyncStore). Both
//! are one implementation: `decide.rs` works out what a delivery writes and
//! answers, `driver.rs` runs the reads, the writes and the retries for
//! either kind of store.

mod batch;
mod decide;
mod dispatch;
mod driver;
mod event_json;
pub mod history;
mod keys;
pub mod migrate;
mod migrate_stored;
pub mod nonblocking;
mod timers;

pub use batch::{apply_batch, apply_batch_at};
pub use dispatch::{Completed, Dispatch, DispatchPolicy, DispatchReport, complete_at, dispatch};
pub use event_json::{EventJsonError, FieldMismatch, event_from_json, parse_event};
pub use history::{History, ReplayError, Replayed, history, replay};
pub use keys::{completion_token, completion_token_matches, idempotency_key, invocation_key};
pub use migrate_stored::{Held, MoveStatus, Moved, ProcessMove, migrate_process, migrate_stored};
pub use timers::{
    Advanced, DueProcess, Fired, MAX_FIRINGS_PER_TRANSACTION, TIMER_ID_PREFIX, advance,
    advance_due, firing_id,
};

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::expr::{Event, Value};
use crate::interp::{Chart, RestoreError, Snapshot, Unsettled};
use crate::ready::finish;
use crate::store::{ProcessRow, Store, StoreError};
use decide::Delivery;
use driver::{Driver, SyncDriver};

/// What `apply` answered. `response` is the JSON text sent to the sender;
/// for a duplicate it is the first response, byte for byte.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Applied {
        response: String,
        revision: u64,
    },
    Duplicate {
        response: String,
        revision: u64,
    },
    /// The id was applied with another payload; nothing was written.
    Conflict,
    Ignored {
        response: String,
        revision: u64,
    },
}

impl Outcome {
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Applied { .. } => "applied",
            Outcome::Duplicate { .. } => "duplicate",
            Outcome::Conflict => "conflict",
            Outcome::Ignored { .. } => "ignored",
        }
    }

    pub fn response(&self) -> Option<&str> {
        match self {
            Outcome::Applied { response, .. }
            | Outcome::Duplicate { response, .. }
            | Outcome::Ignored { response, .. } => Some(response),
            Outcome::Conflict => None,
        }
    }

    pub fn revision(&self) -> Option<u64> {
        match self {
            Outcome::Applied { revision, .. }
            | Outcome::Duplicate { revision, .. }
            | Outcome::Ignored { revision, .. } => Some(*revision),
            Outcome::Conflict => None,
        }
    }
}

/// Why `apply` gave no answer. Nothing was written; the sender may retry.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("event `{0}` has no id: give it an `id`, or declare the payload field that holds it")]
    MissingId(String),
    #[error("process `{process}` runs machine `{found}`, not `{expected}`")]
    WrongMachine {
        process: String,
        expected: String,
        found: String,
    },
    #[error("process `{process}`: {source}")]
    Restore {
        process: String,
        source: RestoreError,
    },
    /// The process runs another version, and the machine declares no
    /// migration that moves it, or the declared one fails on it.
    #[error(transparent)]
    Migration(#[from] migrate::MigrationError),
    #[error("process `{0}`: the snapshot row is not a valid snapshot: {1}")]
    BadSnapshot(String, String),
    #[error("process `{0}`: gave up after {1} revision conflicts")]
    Contention(String, u32),
    #[error("event id `{0}` starts with `{TIMER_ID_PREFIX}`, which names timer firings")]
    ReservedId(String),
    /// The step ran out of its microstep budget: nothing was written, and a
    /// retry meets the same loop.
    #[error("process `{process}`: {unsettled}")]
    Unsettled {
        process: String,
        unsettled: Box<Unsettled>,
    },
}

/// How often `apply` starts over from a fresher snapshot before giving up.
pub const MAX_REVISION_RETRIES: u32 = 1_000;

/// The id that identifies one delivery of `event`, as text.
pub fn event_id(event: &Event) -> Option<String> {
    match event.id.as_ref()? {
        Value::Null => None,
        Value::String(s) => Some(s.to_string()),
        other => Some(other.to_json().to_string()),
    }
}

/// Hex SHA-256 of the event's type and payload in canonical JSON (object keys
/// sorted), so key order and whitespace do not make a conflict: the text of
/// `{"data": <payload>, "type": <name>}` with its keys in that (sorted) order.
pub fn payload_hash(event: &Event) -> String {
    let mut text = Vec::with_capacity(128);
    text.extend_from_slice(b"{\"data\":");
    canonical(&event.data.to_json(), &mut text);
    text.extend_from_slice(b",\"type\":");
    json_into(&mut text, &*event.name);
    text.push(b'}');
    hex(&Sha256::digest(&text))
}

/// Appends `value` as compact JSON, its objects' keys sorted.
fn canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_into(out, key.as_str());
                out.push(b':');
                canonical(&map[key], out);
            }
            out.push(b'}');
        }
        serde_json::Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        other => json_into(out, other),
    }
}

/// Appends a string or scalar as compact JSON, as `Display` would write it
/// but without the formatting machinery.
fn json_into<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a string or a scalar into memory cannot fail.
    serde_json::to_writer(out, value).expect("JSON text of a string or scalar");
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

pub use crate::clock::now_millis;

/// `apply_at` with the system clock.
pub fn apply<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
) -> Result<Outcome, RuntimeError> {
    apply_at(store, chart, process, event, now_millis())
}

/// Applies `event` to `process` (created from the machine's initial state if
/// unknown) exactly once; `now` is recorded as the time of application, for
/// retention.
///
/// `now` is also the process's clock, in milliseconds since the Unix epoch:
/// a new process starts at `now`, and before the event an existing one fires
/// every timer due by `now`, each as a firing of its own (see `advance`), as
/// a real-time system would have done before the event arrived. Timers the
/// event starts count from `now`.
pub fn apply_at<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
    now: u64,
) -> Result<Outcome, RuntimeError> {
    finish(apply_at_with(
        &mut SyncDriver(store),
        chart,
        process,
        event,
        now,
    ))
}

/// `apply_at` through either driver: the one implementation of it.
async fn apply_at_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
    now: u64,
) -> Result<Outcome, RuntimeError> {
    // A batch of one: the same reads and writes, each in one round trip.
    let mut work = batch::ApplyMany {
        chart,
        deliveries: vec![Ok(Delivery::new(process, event, now)?)],
        lost_on: process.to_string(),
    };
    // Another writer may move the snapshot: then it starts over, where the
    // id may now be a duplicate.
    let mut answers = driver::with_retries(driver, &mut work).await?;
    answers
        .pop()
        .unwrap_or_else(|| Err(RuntimeError::Store(StoreError::Backend("no answer".into()))))
}

/// The stored state of a process: `{"process", "machine", "revision",
/// "configuration", "context", "next_timer_at"}`, or `None` when it does not
/// exist.
pub fn inspect<S: Store>(
    store: &mut S,
    process: &str,
) -> Result<Option<serde_json::Value>, RuntimeError> {
    finish(inspect_with(&mut SyncDriver(store), process))
}

async fn inspect_with<D: Driver>(
    driver: &mut D,
    process: &str,
) -> Result<Option<serde_json::Value>, RuntimeError> {
    let Some(row) = driver.process(process).await? else {
        return Ok(None);
    };
    inspected(process, row).map(Some)
}

/// The state `inspect` shows of a process row.
fn inspected(process: &str, row: ProcessRow) -> Result<serde_json::Value, RuntimeError> {
    let snapshot: Snapshot = serde_json::from_str(&row.snapshot)
        .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
    Ok(serde_json::json!({
        "process": row.id,
        "machine": row.machine,
        "revision": row.revision,
        "configuration": snapshot.configuration,
        "context": snapshot.context.to_json(),
        "next_timer_at": row.next_timer_at,
    }))
}

/// What `purge` deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Applied-event rows (marks of applied ids).
    pub applied: usize,
    /// Settled outbox rows (done, cancelled, or unknown or failed and told
    /// to the machine).
    pub outbox: usize,
    /// Payloads cleared from rows that stay (`history: { keep }` shorter
    /// than `dedup.retention`, or no retention).
    pub payloads: usize,
}

/// Deletes what `chart`'s processes no longer need at `now`: the
/// applied-event rows, and the outbox rows that were settled, older than
/// the row's window; then clears the payloads older than `history.keep`.
///
/// A row serves two purposes, so the longer window governs it: it is
/// deleted once both `dedup.retention` (its mark) and `history.keep` (its
/// place in the timeline) have passed; a payload goes after `keep` alone,
/// and its row stays while the retention needs it. A machine without a
/// retention keeps every row, the safe side, and a history's payloads are
/// still cleared after `keep`. The outbox rows go with the marks: while a
/// mark is kept, the effects' rows are kept too, so a redelivery inside the
/// window never finds a key missing. Pending and dead rows stay.
pub fn purge<S: Store>(store: &mut S, chart: &Chart, now: u64) -> Result<Purged, RuntimeError> {
    finish(purge_with(&mut SyncDriver(store), chart, now))
}

async fn purge_with<D: Driver>(
    driver: &mut D,
    chart: &Chart,
    now: u64,
) -> Result<Purged, RuntimeError> {
    let machine = chart.machine();
    let keep = machine.history.as_ref().map(|h| h.keep.millis);
    let mut purged = Purged::default();
    if let Some(dedup) = &machine.dedup {
        let window = dedup.retention.millis.max(keep.unwrap_or(0));
        let before = now.saturating_sub(window);
        purged.applied = driver.purge_applied(&machine.name, before).await?;
        purged.outbox = driver.purge_outbox(&machine.name, before).await?;
    }
    if let Some(keep) = keep {
        let before = now.saturating_sub(keep);
        purged.payloads = driver.purge_payloads(&machine.name, before).await?;
    }
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host action the chart implements ran in the step and is not handed
    /// to the outbox again; one it does not implement is, for the host to
    /// carry out; a declared effect always is.
    #[test]
    fn only_what_did_not_run_leaves_through_the_outbox() {
        let text = "machine: m\ncontext: { audited: 0 }\neffects: { notify: { idempotency: key } }\ninitial: a\nstates:\n  a:\n    on:\n      GO: { target: b, actions: [audit, archive, notify] }\n  b: {}\n";
        let machine = crate::syntax::parse(text, crate::syntax::Syntax::Yaml).unwrap();
        let chart = Arc::new(
            Chart::builder(machine)
                .action("audit", |_| {
                    Ok(crate::interp::Updates::new()
                        .set("audited", Value::from(&serde_json::json!(1))))
                })
                .build()
                .unwrap(),
        );
        let mut store = crate::store::SqliteStore::in_memory().unwrap();
        let go = Event::new("GO", Some(Value::from("g1")), Value::Null);
        let outcome = apply_at(&mut store, &chart, "p", &go, 1).unwrap();
        let response: serde_json::Value =
            serde_json::from_str(outcome.response().unwrap()).unwrap();
        assert_eq!(response["context"]["audited"], 1);
        let effects: Vec<String> = store
            .outbox(None)
            .unwrap()
            .into_iter()
            .map(|item| item.effect)
            .collect();
        assert_eq!(effects, ["archive", "notify"]);
    }

    /// Stored hashes must match the hashes of redeliveries after an upgrade:
    /// these were computed by the first implementation.
    #[test]
    fn payload_hashes_do_not_change() {
        let data = serde_json::json!({
            "zeta": [1, 2.5, -0.0, 1e300, "x\"y\\z\n\u{1}é😀", null, true],
            "alpha": { "b": { "d": 1, "c": 2 }, "a": [] },
            "Alpha": {},
            "n": 9_007_199_254_740_993_u64,
        });
        let cases = [
            (
                Event::new("ADD", None, Value::from(&data)),
                "9fe86cdec539758f3faabdeafc2c825c0591313de5ab052270688a786d0864e4",
            ),
            (
                Event::new("CLOSE", None, Value::Null),
                "d72e67ce68488aa3c451495834b37369746eb81492d7c0ea9bebb22bbff938e1",
            ),
            (
                Event::new("s\u{e9}\"nd", None, Value::from("text")),
                "ae37beca3718217da5777cba2277a258759a84b5762736a66493f9d7c54a8550",
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(payload_hash(&event), expected, "{}", event.name);
        }
    }
}
