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

mod batch;
mod dispatch;
mod timers;

pub use batch::{apply_batch, apply_batch_at};
pub use dispatch::{Dispatch, DispatchPolicy, DispatchReport, dispatch};
pub use timers::{
    Advanced, DueProcess, Fired, MAX_FIRINGS_PER_TRANSACTION, TIMER_ID_PREFIX, advance,
    advance_due, firing_id,
};

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::expr::{Event, Value};
use crate::interp::{
    Actor, Chart, EffectCall, RestoreError, Snapshot, SnapshotJsonError, Unsettled,
};
use crate::store::{AppliedEvent, OutboxItem, OutboxStatus, ProcessRow, Store, StoreError};

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

/// The step, or `RuntimeError::Unsettled` when it did not settle.
fn settled<'s>(
    process: &str,
    step: &'s crate::interp::Step,
) -> Result<&'s crate::interp::Step, RuntimeError> {
    step.settled().map_err(|unsettled| RuntimeError::Unsettled {
        process: process.to_string(),
        unsettled: Box::new(unsettled.clone()),
    })
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

/// The idempotency key of the effect at `position` of the step that applied
/// `event_id` to `process`: hex SHA-256 of the three, each prefixed with its
/// length so no two triples share an input. It depends on nothing else, so a
/// retried dispatch, or a re-run of the same step, sends the same key.
pub fn idempotency_key(process: &str, event_id: &str, position: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"idemchart-effect-v1");
    for part in [process, event_id] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.update(position.to_be_bytes());
    hex(&hasher.finalize())
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

/// Waits a random time that grows with each lost race, so that writers of one
/// process stop colliding instead of retrying in lockstep.
fn back_off(retry: u32) {
    let ceiling_micros = 50u64 << retry.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    // The clock's low bits, mixed with the thread, are random enough to spread
    // writers apart; no generator is needed for that.
    let thread = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::thread::current().id().hash(&mut h);
        h.finish()
    };
    let jitter = (nanos ^ thread.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        % ceiling_micros.max(1);
    std::thread::sleep(std::time::Duration::from_micros(jitter));
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
    let delivery = Delivery::new(process, event, now)?;
    // Another writer may move the snapshot: then it starts over, where the
    // id may now be a duplicate.
    with_retries(
        || store.transaction(|tx| attempt(tx, chart, &delivery, None)),
        || process.to_string(),
    )
}

/// Runs `once` (one transaction) until it is not lost to another writer
/// that moved a snapshot, backing off between tries. After
/// `MAX_REVISION_RETRIES` lost races the answer is `Contention` on the
/// process `contended` names.
fn with_retries<R>(
    mut once: impl FnMut() -> Result<R, Attempt>,
    contended: impl FnOnce() -> String,
) -> Result<R, RuntimeError> {
    for retry in 0..MAX_REVISION_RETRIES {
        if retry > 0 {
            back_off(retry);
        }
        match once() {
            Ok(answer) => return Ok(answer),
            Err(Attempt::Lost) => continue,
            Err(Attempt::Failed(e)) => return Err(e),
        }
    }
    Err(RuntimeError::Contention(contended(), MAX_REVISION_RETRIES))
}

/// One event to apply to one process, with its id and payload hash.
struct Delivery<'a> {
    process: &'a str,
    id: String,
    hash: String,
    event: &'a Event,
    now: u64,
}

impl<'a> Delivery<'a> {
    fn new(process: &'a str, event: &'a Event, now: u64) -> Result<Delivery<'a>, RuntimeError> {
        let id = event_id(event).ok_or_else(|| missing_id(event))?;
        if id.starts_with(TIMER_ID_PREFIX) {
            return Err(RuntimeError::ReservedId(id));
        }
        Ok(Delivery {
            process,
            id,
            hash: payload_hash(event),
            event,
            now,
        })
    }
}

fn missing_id(event: &Event) -> RuntimeError {
    RuntimeError::MissingId(event.name.to_string())
}

enum Attempt {
    Lost,
    Failed(RuntimeError),
}

impl From<StoreError> for Attempt {
    fn from(e: StoreError) -> Attempt {
        match e {
            // A concurrent writer of the same process: retry from its result.
            StoreError::Race(_) => Attempt::Lost,
            e => Attempt::Failed(RuntimeError::Store(e)),
        }
    }
}

impl From<RuntimeError> for Attempt {
    fn from(e: RuntimeError) -> Attempt {
        Attempt::Failed(e)
    }
}

/// Snapshots this transaction wrote, by process, with their revision. A batch
/// restores a process it already applied an event to from here instead of
/// reading and parsing its row again; the row cannot have moved meanwhile,
/// because the transaction holds the write lock (SQLite) or the row lock
/// (PostgreSQL) since its update, and the update checks the revision anyway.
/// A single `apply` keeps none.
#[derive(Default)]
struct Restored {
    /// Each process's snapshot JSON as this transaction wrote it, and its revision.
    snapshots: HashMap<String, (String, u64)>,
}

/// Applies one delivery inside `tx`: the whole per-event contract, shared by
/// `apply` and `apply_batch`. It decides everything (snapshot, outbox rows,
/// response) before it writes anything, so every error other than a store
/// error leaves nothing written for this delivery, and a batch may answer
/// it and go on.
fn attempt(
    tx: &mut dyn crate::store::Transaction,
    chart: &Arc<Chart>,
    delivery: &Delivery<'_>,
    restored: Option<&mut Restored>,
) -> Result<Outcome, Attempt> {
    let process = delivery.process;
    if let Some(applied) = tx.applied_event(process, &delivery.id)? {
        return Ok(if applied.payload_hash == delivery.hash {
            Outcome::Duplicate {
                response: applied.response,
                revision: applied.revision,
            }
        } else {
            Outcome::Conflict
        });
    }
    let machine = chart.machine();
    let cached = restored.as_deref().and_then(|r| r.snapshots.get(process));
    let (mut actor, revision, start_effects) = match cached {
        Some((snapshot, revision)) => (
            restore_snapshot(chart, process, snapshot)?,
            Some(*revision),
            Vec::new(),
        ),
        None => match tx.process(process)? {
            Some(row) => (restore(chart, &row)?, Some(row.revision), Vec::new()),
            None => {
                // The process starts when its first event arrives, so none of
                // its timers can be due before that event.
                let actor = Actor::with_context(Arc::clone(chart), &Value::Null, delivery.now)
                    .map_err(|source| RuntimeError::Restore {
                        process: process.to_string(),
                        source,
                    })?;
                // The start's entry effects belong to the first event's step,
                // so they leave through the outbox with it.
                let effects = settled(process, actor.last_step())?.effects.clone();
                (actor, None, effects)
            }
        },
    };
    let firings = match revision {
        Some(revision) => timers::fire_due(&mut actor, process, revision, delivery.now)?,
        None => Vec::new(),
    };
    let step = settled(process, actor.send(delivery.event))?;
    let ignored = step.ignored;
    let effects: Vec<EffectCall> = start_effects
        .iter()
        .chain(&step.effects)
        .filter(|effect| leaves_through_outbox(effect))
        .cloned()
        .collect();
    let snapshot_json = actor.snapshot_json();
    let json_error =
        |e: serde_json::Error| RuntimeError::BadSnapshot(process.to_string(), e.to_string());
    let new_revision = revision.map_or(1, |revision| revision + 1);
    // Positions are renumbered over the start's effects and the event's, so
    // keys never collide within one step.
    let items = outbox_items(process, &delivery.id, &effects, delivery.now);
    let response = serde_json::to_string(&Response {
        outcome: if ignored { "ignored" } else { "applied" },
        revision: new_revision,
        timer: None,
        due: None,
        configuration: &actor.configuration_paths(),
        context: &actor.context(),
        effects: response_effects(&items, &effects),
    })
    .map_err(json_error)?;
    // Everything is decided; from here on only store errors can stop this
    // delivery.
    let next_timer_at = actor.next_due();
    let stored = match revision {
        Some(revision) => tx.update_process(process, revision, &snapshot_json, next_timer_at)?,
        None => tx.insert_process(&ProcessRow {
            id: process.to_string(),
            machine: machine.name.clone(),
            version: machine.version,
            snapshot: snapshot_json.clone(),
            revision: 1,
            next_timer_at,
        })?,
    };
    if !stored {
        return Err(Attempt::Lost);
    }
    timers::record(tx, process, &firings, new_revision, delivery.now)?;
    let applied = AppliedEvent {
        process: process.to_string(),
        event_id: delivery.id.clone(),
        payload_hash: delivery.hash.clone(),
        response,
        revision: new_revision,
        applied_at: delivery.now,
    };
    tx.insert_applied_event(&applied)?;
    for item in &items {
        tx.insert_outbox(item)?;
    }
    if let Some(restored) = restored {
        restored
            .snapshots
            .insert(process.to_string(), (snapshot_json, new_revision));
    }
    let response = applied.response;
    Ok(if ignored {
        Outcome::Ignored {
            response,
            revision: new_revision,
        }
    } else {
        Outcome::Applied {
            response,
            revision: new_revision,
        }
    })
}

/// Continues the process stored in `row`, which must run `chart`'s machine
/// at the version it started with.
fn restore(chart: &Arc<Chart>, row: &ProcessRow) -> Result<Actor, RuntimeError> {
    let process = &row.id;
    let machine = chart.machine();
    if row.machine != machine.name {
        return Err(RuntimeError::WrongMachine {
            process: process.to_string(),
            expected: machine.name.clone(),
            found: row.machine.clone(),
        });
    }
    restore_snapshot(chart, process, &row.snapshot)
}

/// Continues `process` from its snapshot JSON. `Actor::restore_json` refuses
/// another machine version: a process keeps the version it started with
/// until it is migrated explicitly.
fn restore_snapshot(chart: &Arc<Chart>, process: &str, json: &str) -> Result<Actor, RuntimeError> {
    Actor::restore_json(Arc::clone(chart), json).map_err(|error| match error {
        SnapshotJsonError::Restore(source) => RuntimeError::Restore {
            process: process.to_string(),
            source,
        },
        SnapshotJsonError::Syntax { .. } => {
            RuntimeError::BadSnapshot(process.to_string(), error.to_string())
        }
    })
}

/// Whether an effect of a step is handed to the outbox: declared effects
/// and host actions the chart has no implementation for. A host action the
/// chart implements already ran in the step; dispatching it again would
/// perform it twice.
fn leaves_through_outbox(effect: &EffectCall) -> bool {
    !effect.ran
}

/// The outbox rows of the effects one step of `process` produced for
/// `event_id` (an event's id or a timer firing's), keyed by position.
fn outbox_items(
    process: &str,
    event_id: &str,
    effects: &[EffectCall],
    now: u64,
) -> Vec<OutboxItem> {
    effects
        .iter()
        .enumerate()
        .map(|(position, effect)| {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            OutboxItem {
                process: process.to_string(),
                event_id: event_id.to_string(),
                position,
                key: idempotency_key(process, event_id, position),
                effect: effect.name.to_string(),
                args: crate::expr::json::to_text(&effect.args),
                status: OutboxStatus::Pending,
                attempts: 0,
                next_attempt_at: now,
                last_error: None,
            }
        })
        .collect()
}

/// The `effects` list of a response.
fn response_effects<'a>(
    items: &'a [OutboxItem],
    effects: &'a [EffectCall],
) -> Vec<ResponseEffect<'a>> {
    items
        .iter()
        .zip(effects)
        .map(|(item, effect)| ResponseEffect {
            effect: &item.effect,
            position: item.position,
            key: &item.key,
            args: &effect.args,
        })
        .collect()
}

/// The answer to an applied or ignored event, or to a timer firing (with
/// `timer` and `due`), as sent and frozen.
#[derive(serde::Serialize)]
struct Response<'a> {
    outcome: &'static str,
    revision: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    timer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<u64>,
    configuration: &'a [String],
    context: &'a Value,
    effects: Vec<ResponseEffect<'a>>,
}

#[derive(serde::Serialize)]
struct ResponseEffect<'a> {
    effect: &'a str,
    position: u32,
    key: &'a str,
    args: &'a Value,
}

/// The stored state of a process: `{"process", "machine", "revision",
/// "configuration", "context", "next_timer_at"}`, or `None` when it does not
/// exist.
pub fn inspect<S: Store>(
    store: &mut S,
    process: &str,
) -> Result<Option<serde_json::Value>, RuntimeError> {
    let Some(row) = store.process(process)? else {
        return Ok(None);
    };
    let snapshot: Snapshot = serde_json::from_str(&row.snapshot)
        .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
    Ok(Some(serde_json::json!({
        "process": row.id,
        "machine": row.machine,
        "revision": row.revision,
        "configuration": snapshot.configuration,
        "context": snapshot.context.to_json(),
        "next_timer_at": row.next_timer_at,
    })))
}

/// What `purge` deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Applied-event rows (marks of applied ids).
    pub applied: usize,
    /// Settled outbox rows (done, or unknown and told to the machine).
    pub outbox: usize,
}

/// Deletes what `chart`'s processes no longer need once the machine's
/// `dedup.retention` has passed at `now`: the applied-event rows, and the
/// outbox rows that were settled before then. Both go together: while a mark
/// is kept, the effects' rows are kept too, so a redelivery inside the window
/// never finds a key missing. Pending and dead rows stay. A machine without a
/// retention keeps everything, the safe side.
pub fn purge<S: Store>(store: &mut S, chart: &Chart, now: u64) -> Result<Purged, RuntimeError> {
    let machine = chart.machine();
    let Some(dedup) = &machine.dedup else {
        return Ok(Purged::default());
    };
    let before = now.saturating_sub(dedup.retention.millis);
    Ok(Purged {
        applied: store.purge_applied(&machine.name, before)?,
        outbox: store.purge_outbox(&machine.name, before)?,
    })
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
