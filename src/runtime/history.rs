//! A process's history and its replay.
//!
//! Every applied event and timer firing already leaves a row in
//! `applied_events` with its frozen response, which records the
//! configuration, the context and the effects the step left. A machine
//! that keeps a history (`history: { keep: 30d }`) also stores the event
//! itself beside it, so that the timeline can be run again: [`replay`]
//! starts the machine given from its initial state, sends each stored event
//! and fires each recorded timer by its label, and compares what it gets
//! with what the store recorded after each step.
//!
//! The recorded side needs nothing stored beyond the payload: the frozen
//! response is what the process answered, so it is the record to compare
//! with, and re-running the old machine file (which may no longer exist)
//! would only recompute it.

use std::sync::Arc;

use super::decide::{leaves_through_outbox, settled};
use super::driver::{Driver, SyncDriver};
use super::{RuntimeError, TIMER_ID_PREFIX};
use crate::expr::{Event, Value};
use crate::interp::{Actor, Chart};
use crate::model::{Machine, Migration};
use crate::ready::finish;
use crate::store::{AppliedEvent, Store};

/// The text of the `payload` column for `event`: `{"type", "id", "data"}`,
/// the event as a sender gives it, with the id it was applied under.
pub(super) fn payload_json(event: &Event) -> String {
    serde_json::json!({
        "type": &*event.name,
        "id": event.id.as_ref().map(Value::to_json),
        "data": event.data.to_json(),
    })
    .to_string()
}

/// What one entry of a timeline was.
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// An event a sender (or a dispatcher) delivered; its payload as stored
    /// (`{"type", "id", "data"}`), or `None` where it was not kept.
    Event { payload: Option<serde_json::Value> },
    /// A timer firing, recorded under a `timer:` id.
    Timer { label: String, due: u64 },
}

/// One applied event or timer firing of a process.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: String,
    pub revision: u64,
    pub applied_at: u64,
    pub applied: Applied,
    /// The frozen response: `outcome`, `configuration` (after), `context`,
    /// `effects`, `invocations`.
    pub response: serde_json::Value,
}

impl Entry {
    fn from_row(row: AppliedEvent) -> Result<Entry, RuntimeError> {
        let corrupt = |why: String| {
            RuntimeError::Store(crate::store::StoreError::Corrupt(format!(
                "applied event `{}` of process `{}`: {why}",
                row.event_id, row.process
            )))
        };
        let response: serde_json::Value = serde_json::from_str(&row.response)
            .map_err(|e| corrupt(format!("its response is not JSON: {e}")))?;
        let applied = if row.event_id.starts_with(TIMER_ID_PREFIX) {
            let label = response["timer"].as_str();
            let due = response["due"].as_u64();
            let (Some(label), Some(due)) = (label, due) else {
                return Err(corrupt("a timer firing without `timer` and `due`".into()));
            };
            Applied::Timer {
                label: label.to_string(),
                due,
            }
        } else {
            let payload = row
                .payload
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| corrupt(format!("its payload is not JSON: {e}")))?;
            Applied::Event { payload }
        };
        Ok(Entry {
            id: row.event_id,
            revision: row.revision,
            applied_at: row.applied_at,
            applied,
            response,
        })
    }

    /// The place of the entry within its revision: a transaction fires the
    /// due timers (earliest due, then earliest scheduled) before its event.
    fn order(&self) -> (u64, u8, u64, u64) {
        match &self.applied {
            Applied::Timer { due, .. } => {
                // The id ends with the timer's scheduling number (`firing_id`).
                let seq = self
                    .id
                    .rsplit_once('.')
                    .and_then(|(_, seq)| seq.parse().ok())
                    .unwrap_or(0);
                (self.revision, 0, *due, seq)
            }
            Applied::Event { .. } => (self.revision, 1, 0, 0),
        }
    }

    /// The event type, where the payload says it.
    pub fn event_type(&self) -> Option<&str> {
        match &self.applied {
            Applied::Event { payload: Some(p) } => p["type"].as_str(),
            _ => None,
        }
    }
}

/// A process's timeline, in the order it was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    pub process: String,
    pub machine: String,
    /// The version the process runs now, which its recorded responses are of.
    pub version: Option<u64>,
    pub entries: Vec<Entry>,
}

impl History {
    /// The timeline as JSON: `{"process", "machine", "version", "events":
    /// [{"id", "revision", "applied_at", "kind", "type", "payload",
    /// "timer", "due", "outcome", "configuration", "context", "effects",
    /// "invocations"}]}`; `payload` is `null` and `payload_kept` false
    /// where the payload was not kept.
    pub fn to_json(&self) -> serde_json::Value {
        let events: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|entry| {
                let r = &entry.response;
                let mut line = serde_json::json!({
                    "id": entry.id,
                    "revision": entry.revision,
                    "applied_at": entry.applied_at,
                });
                match &entry.applied {
                    Applied::Event { payload } => {
                        line["kind"] = "event".into();
                        line["type"] = entry.event_type().into();
                        line["payload_kept"] = payload.is_some().into();
                        line["payload"] = payload.clone().unwrap_or_default();
                    }
                    Applied::Timer { label, due } => {
                        line["kind"] = "timer".into();
                        line["timer"] = label.as_str().into();
                        line["due"] = (*due).into();
                    }
                }
                line["outcome"] = r["outcome"].clone();
                line["configuration"] = r["configuration"].clone();
                line["context"] = r["context"].clone();
                line["effects"] = r["effects"].clone();
                line["invocations"] = r
                    .get("invocations")
                    .cloned()
                    .unwrap_or_else(|| serde_json::Value::Array(Vec::new()));
                line
            })
            .collect();
        serde_json::json!({
            "process": self.process,
            "machine": self.machine,
            "version": self.version,
            "events": events,
        })
    }
}

/// Puts the rows of one process in the order they were applied.
pub fn timeline(rows: Vec<AppliedEvent>) -> Result<Vec<Entry>, RuntimeError> {
    let mut entries = rows
        .into_iter()
        .map(Entry::from_row)
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(Entry::order);
    Ok(entries)
}

/// Rows read in one statement while collecting a history.
const PAGE: usize = 1_000;

/// The history of `process`, or `None` when the store has no such process.
pub fn history<S: Store>(store: &mut S, process: &str) -> Result<Option<History>, RuntimeError> {
    finish(history_with(&mut SyncDriver(store), process))
}

pub(super) async fn history_with<D: Driver>(
    driver: &mut D,
    process: &str,
) -> Result<Option<History>, RuntimeError> {
    let Some(row) = driver.process(process).await? else {
        return Ok(None);
    };
    let mut rows = Vec::new();
    loop {
        let page = driver.applied_events(process, rows.len(), PAGE).await?;
        let last = page.len() < PAGE;
        rows.extend(page);
        if last {
            break;
        }
    }
    Ok(Some(History {
        process: row.id,
        machine: row.machine,
        version: row.version,
        entries: timeline(rows)?,
    }))
}

/// Where a replay first differs from the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aspect {
    Configuration,
    Context,
    Effects,
    /// A recorded timer firing the replay has no pending timer for, or a
    /// timer of the replay due before an event that the record never fired.
    Timer,
    /// The replayed step ran out of its microstep budget.
    Unsettled,
}

impl Aspect {
    pub fn as_str(self) -> &'static str {
        match self {
            Aspect::Configuration => "configuration",
            Aspect::Context => "context",
            Aspect::Effects => "effects",
            Aspect::Timer => "timer",
            Aspect::Unsettled => "unsettled",
        }
    }
}

/// The first entry whose replay differs from the record.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// 1-based, in timeline order.
    pub index: usize,
    pub id: String,
    pub revision: u64,
    pub aspect: Aspect,
    /// The recorded value of the aspect (after the state mapping of a
    /// declared migration, where the replay runs another version).
    pub recorded: serde_json::Value,
    pub replayed: serde_json::Value,
}

/// What a replay found over how many entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    pub entries: usize,
    pub divergence: Option<Divergence>,
}

/// Why a history cannot be replayed: the input is not a whole history.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("process `{0}` has no applied events to replay")]
    Empty(String),
    #[error(
        "process `{process}`: its history starts at revision {first}: the events before were purged, so it cannot be replayed from the start"
    )]
    Truncated { process: String, first: u64 },
    #[error(
        "process `{process}`: no applied event is left of revision {revision}: its history has a gap and cannot be replayed"
    )]
    Gap { process: String, revision: u64 },
    #[error(
        "process `{process}`: the payload of event `{id}` (revision {revision}) was not kept (its machine kept no history then, or `purge` cleared it), so the replay cannot go past it"
    )]
    NoPayload {
        process: String,
        id: String,
        revision: u64,
    },
    #[error("process `{process}`: the stored payload of event `{id}` is not an event: {why}")]
    BadPayload {
        process: String,
        id: String,
        why: String,
    },
    #[error("process `{process}`: the first entry is a timer firing, which no process starts with")]
    StartsWithTimer { process: String },
    #[error("process `{process}`: {why}")]
    Start { process: String, why: String },
}

/// How the recorded responses, of the version the process runs, are read
/// in terms of the replayed machine: through the migration it declares
/// from that version, or as they are.
struct Mapping<'a> {
    machine: &'a Machine,
    migration: Option<&'a Migration>,
    process: &'a str,
}

impl Mapping<'_> {
    fn state(&self, path: &str) -> String {
        match self.migration {
            // A state the migration cannot place stays as recorded: the
            // comparison then shows it where it differs.
            Some(migration) => super::migrate::place(self.machine, migration, self.process, path)
                .unwrap_or_else(|_| path.to_string()),
            None => path.to_string(),
        }
    }

    fn configuration(&self, recorded: &serde_json::Value) -> Vec<String> {
        let mut paths: Vec<String> = recorded
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str())
            .map(|p| self.state(p))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    fn context(&self, recorded: &serde_json::Value) -> serde_json::Value {
        let Some(migration) = self.migration else {
            return recorded.clone();
        };
        // A context the migration cannot compute stays as recorded: the
        // comparison then shows where it differs.
        super::migrate::migrate_context(self.machine, migration, self.process, &recorded.into())
            .map(|value| value.to_json())
            .unwrap_or_else(|_| recorded.clone())
    }

    /// `after:PATH[i]` names its state: the mapping moves it.
    fn timer(&self, label: &str) -> String {
        match label
            .strip_prefix("after:")
            .and_then(|rest| rest.rsplit_once('['))
        {
            // `index` keeps its closing bracket.
            Some((path, index)) => format!("after:{}[{index}", self.state(path)),
            None => label.to_string(),
        }
    }
}

/// The effects and invocations of a recorded response, without the keys
/// (which a replay outside the store cannot make) and positions.
fn recorded_effects(response: &serde_json::Value) -> serde_json::Value {
    let effects: Vec<serde_json::Value> = response["effects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| serde_json::json!({ "effect": e["effect"], "args": e["args"] }))
        .collect();
    let invocations: Vec<serde_json::Value> = response["invocations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| serde_json::json!({ "id": i["id"], "src": i["src"], "input": i["input"] }))
        .collect();
    serde_json::json!({ "effects": effects, "invocations": invocations })
}

/// The effects a replayed step hands to the outbox and the invocations it
/// starts, in the shape of [`recorded_effects`]. Each new invocation is
/// bound to the key the record gave it (by id), so that a recorded
/// completion, which carries that key, reaches it.
fn replayed_effects(
    actor: &mut Actor,
    earlier: Vec<crate::interp::EffectCall>,
    response: &serde_json::Value,
) -> serde_json::Value {
    let mut calls = earlier;
    calls.extend(
        actor
            .last_step()
            .effects
            .iter()
            .filter(|e| leaves_through_outbox(e))
            .cloned(),
    );
    let effects: Vec<serde_json::Value> = calls
        .iter()
        .map(|e| serde_json::json!({ "effect": &*e.name, "args": e.args.to_json() }))
        .collect();
    let mut invocations = Vec::new();
    actor.bind_invocation_keys(|running| {
        invocations.push(serde_json::json!({
            "id": running.id,
            "src": running.src,
            "input": running.input.to_json(),
        }));
        response["invocations"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| i["id"] == running.id)
            .and_then(|i| i["key"].as_str())
            .map_or_else(|| format!("replay:{}", running.id), str::to_string)
    });
    serde_json::json!({ "effects": effects, "invocations": invocations })
}

/// Runs `history` from the start under `chart` and finds the first entry
/// whose configuration, context or effects differ from the record.
///
/// Each event is sent at the time it was applied, and each recorded timer
/// firing fires the replay's earliest timer due by the recorded due time,
/// which must carry the same label. Where `chart`'s machine is another
/// version than the process runs, the recorded states (and timers, which
/// name them) and context are read through the migration it declares from
/// that version, if any: a rename with its mapping is no divergence.
pub fn replay(chart: &Arc<Chart>, history: &History) -> Result<Replayed, ReplayError> {
    let process = history.process.as_str();
    let machine = chart.machine();
    let migration = match history.version {
        Some(version) if history.version != machine.version => machine.migration_from(version),
        _ => None,
    };
    let mapping = Mapping {
        machine,
        migration,
        process,
    };
    check_whole(history)?;
    let first = &history.entries[0];
    let start = Actor::with_context(Arc::clone(chart), &Value::Null, first.applied_at);
    let mut actor = start.map_err(|e| ReplayError::Start {
        process: process.to_string(),
        why: e.to_string(),
    })?;
    let mut start_effects = match settled(process, actor.last_step()) {
        Ok(step) => step.effects.clone(),
        Err(e) => {
            return Err(ReplayError::Start {
                process: process.to_string(),
                why: e.to_string(),
            });
        }
    };
    for (i, entry) in history.entries.iter().enumerate() {
        let diverged = |aspect, recorded, replayed| {
            Ok(Replayed {
                entries: history.entries.len(),
                divergence: Some(Divergence {
                    index: i + 1,
                    id: entry.id.clone(),
                    revision: entry.revision,
                    aspect,
                    recorded,
                    replayed,
                }),
            })
        };
        match &entry.applied {
            Applied::Timer { label, due } => {
                let expected = mapping.timer(label);
                let fired = actor.fire_next(*due);
                let recorded = serde_json::json!({ "timer": expected, "due": due });
                match fired {
                    Some(fired) if fired.label == expected => {}
                    Some(fired) => {
                        let replayed =
                            serde_json::json!({ "timer": fired.label, "due": fired.due });
                        return diverged(Aspect::Timer, recorded, replayed);
                    }
                    None => return diverged(Aspect::Timer, recorded, serde_json::Value::Null),
                }
            }
            Applied::Event { payload } => {
                let event = stored_event(process, entry, payload.as_ref())?;
                // Every timer due by the event's time fired before it in
                // the record (`apply` fires them first): one of the replay
                // that did not is a difference.
                if actor.next_due().is_some_and(|due| due <= entry.applied_at) {
                    let mut ahead = actor.clone();
                    if let Some(fired) = ahead.fire_next(entry.applied_at) {
                        let replayed =
                            serde_json::json!({ "timer": fired.label, "due": fired.due });
                        return diverged(Aspect::Timer, serde_json::Value::Null, replayed);
                    }
                }
                actor.set_clock(entry.applied_at);
                actor.send(&event);
            }
        }
        if let Err(e) = settled(process, actor.last_step()) {
            let replayed = serde_json::json!(e.to_string());
            return diverged(Aspect::Unsettled, serde_json::Value::Null, replayed);
        }
        let earlier = std::mem::take(&mut start_effects)
            .into_iter()
            .filter(leaves_through_outbox)
            .collect();
        let effects = replayed_effects(&mut actor, earlier, &entry.response);
        let recorded = mapping.configuration(&entry.response["configuration"]);
        let mut replayed = actor.configuration_paths();
        replayed.sort();
        if recorded != replayed {
            return diverged(
                Aspect::Configuration,
                serde_json::json!(recorded),
                serde_json::json!(replayed),
            );
        }
        let recorded = mapping.context(&entry.response["context"]);
        let replayed = actor.context().to_json();
        if recorded != replayed {
            return diverged(Aspect::Context, recorded, replayed);
        }
        let recorded = recorded_effects(&entry.response);
        if recorded != effects {
            return diverged(Aspect::Effects, recorded, effects);
        }
    }
    Ok(Replayed {
        entries: history.entries.len(),
        divergence: None,
    })
}

/// A replay starts where the process started, and needs every revision.
fn check_whole(history: &History) -> Result<(), ReplayError> {
    let process = history.process.clone();
    let Some(first) = history.entries.first() else {
        return Err(ReplayError::Empty(process));
    };
    if first.revision != 1 {
        return Err(ReplayError::Truncated {
            process,
            first: first.revision,
        });
    }
    if matches!(first.applied, Applied::Timer { .. }) {
        return Err(ReplayError::StartsWithTimer { process });
    }
    let mut previous = first.revision;
    for entry in &history.entries {
        if entry.revision > previous + 1 {
            return Err(ReplayError::Gap {
                process,
                revision: previous + 1,
            });
        }
        previous = entry.revision;
    }
    Ok(())
}

/// The event a stored payload holds.
fn stored_event(
    process: &str,
    entry: &Entry,
    payload: Option<&serde_json::Value>,
) -> Result<Event, ReplayError> {
    let Some(payload) = payload else {
        return Err(ReplayError::NoPayload {
            process: process.to_string(),
            id: entry.id.clone(),
            revision: entry.revision,
        });
    };
    let Some(name) = payload["type"].as_str() else {
        return Err(ReplayError::BadPayload {
            process: process.to_string(),
            id: entry.id.clone(),
            why: "it has no `type`".into(),
        });
    };
    let id = match &payload["id"] {
        serde_json::Value::Null => None,
        id => Some(Value::from(id)),
    };
    Ok(Event::new(name, id, Value::from(&payload["data"])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, revision: u64, response: serde_json::Value) -> AppliedEvent {
        AppliedEvent {
            process: "p".into(),
            event_id: id.into(),
            payload_hash: String::new(),
            response: response.to_string(),
            revision,
            applied_at: 0,
            payload: None,
        }
    }

    /// Within a revision the timers fired before the event, by due time
    /// then scheduling number, whatever order the store gives the rows in.
    #[test]
    fn a_revision_lists_its_firings_before_its_event() {
        let timer = |label: &str, due: u64| serde_json::json!({ "timer": label, "due": due });
        let rows = vec![
            row("a-event", 2, serde_json::json!({})),
            row("timer:send:X@9/1.10", 2, timer("send:X", 9)),
            row("timer:send:X@9/1.2", 2, timer("send:X", 9)),
            row("timer:after:a[0]@5/1.7", 2, timer("after:a[0]", 5)),
            row("first", 1, serde_json::json!({})),
        ];
        let ids: Vec<String> = timeline(rows).unwrap().into_iter().map(|e| e.id).collect();
        assert_eq!(
            ids,
            [
                "first",
                "timer:after:a[0]@5/1.7",
                "timer:send:X@9/1.2",
                "timer:send:X@9/1.10",
                "a-event"
            ]
        );
    }

    #[test]
    fn a_timer_row_without_its_label_is_corrupt() {
        let error = timeline(vec![row("timer:x@1/1.0", 1, serde_json::json!({}))]).unwrap_err();
        assert!(error.to_string().contains("without `timer`"), "{error}");
    }

    #[test]
    fn a_history_with_a_gap_or_no_start_is_refused() {
        let history = |revisions: &[u64]| History {
            process: "p".into(),
            machine: "m".into(),
            version: None,
            entries: revisions
                .iter()
                .map(|r| Entry::from_row(row(&format!("e{r}"), *r, serde_json::json!({}))).unwrap())
                .collect(),
        };
        assert!(matches!(
            check_whole(&history(&[2, 3])),
            Err(ReplayError::Truncated { first: 2, .. })
        ));
        assert!(matches!(
            check_whole(&history(&[1, 3])),
            Err(ReplayError::Gap { revision: 2, .. })
        ));
        assert!(matches!(
            check_whole(&history(&[])),
            Err(ReplayError::Empty(_))
        ));
        assert_eq!(check_whole(&history(&[1, 2, 3])), Ok(()));
    }

    fn chart(text: &str) -> Arc<Chart> {
        let machine = crate::syntax::parse(text, crate::syntax::Syntax::Yaml).unwrap();
        Arc::new(Chart::new(machine))
    }

    /// A timer's label names its state, so a rename's mapping moves it; a
    /// delayed send's names no state and stays.
    #[test]
    fn a_mapping_moves_the_states_timers_name() {
        let new = chart(
            "machine: m\nversion: 2\nmigrations:\n  - from: 1\n    states: { old: fresh }\ninitial: fresh\nstates:\n  fresh: { after: { 1s: done } }\n  done: {}\n",
        );
        let machine = new.machine();
        let mapping = Mapping {
            machine,
            migration: machine.migration_from(1),
            process: "p",
        };
        assert_eq!(mapping.timer("after:old[0]"), "after:fresh[0]");
        assert_eq!(mapping.timer("send:TICK#t"), "send:TICK#t");
        assert_eq!(
            mapping.configuration(&serde_json::json!(["old"])),
            ["fresh"]
        );
    }

    /// A timer of the new machine that is due before an event the record
    /// shows next, and that the record never fired, is where they part.
    #[test]
    fn an_unrecorded_due_timer_is_a_divergence() {
        let text = "machine: m\nevents: { GO: {} }\ninitial: a\nstates:\n  a: { on: { GO: a } }\n  b: {}\n";
        let event = |id: &str, revision: u64, at: u64| Entry {
            id: id.into(),
            revision,
            applied_at: at,
            applied: Applied::Event {
                payload: Some(serde_json::json!({ "type": "GO", "id": id, "data": null })),
            },
            response: serde_json::json!({ "configuration": ["a"], "context": {}, "effects": [] }),
        };
        let history = History {
            process: "p".into(),
            machine: "m".into(),
            version: None,
            entries: vec![event("g-1", 1, 0), event("g-2", 2, 10_000)],
        };
        assert_eq!(replay(&chart(text), &history).unwrap().divergence, None);
        let timed = text.replace(
            "a: { on: { GO: a } }",
            "a: { on: { GO: a }, after: { 5s: b } }",
        );
        let divergence = replay(&chart(&timed), &history)
            .unwrap()
            .divergence
            .unwrap();
        assert_eq!((divergence.index, divergence.aspect), (2, Aspect::Timer));
        assert_eq!(divergence.recorded, serde_json::Value::Null);
        assert_eq!(divergence.replayed["timer"], "after:a[0]");
    }

    #[test]
    fn a_payload_is_the_event_as_sent() {
        let event = Event::new(
            "PAY",
            Some(Value::from("p-1")),
            Value::from(&serde_json::json!({ "amount": 5 })),
        );
        assert_eq!(
            payload_json(&event),
            r#"{"type":"PAY","id":"p-1","data":{"amount":5}}"#
        );
    }
}
