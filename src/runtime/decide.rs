//! What a delivery decides, apart from how statements run: from the rows a
//! transaction read (the applied-event row of the id, the process row) and
//! the machine, the rows it must write and the answer it gives. Nothing here
//! touches a store, so the sync and the async API decide alike: the drivers
//! (`driver.rs`) only run the reads before and the writes after.

use std::collections::HashMap;
use std::sync::Arc;

use super::keys::RowKeys;
use super::migrate::OutboxDrop;
use super::{Outcome, RuntimeError, TIMER_ID_PREFIX, event_id, payload_hash, timers};
use crate::expr::{Event, Value};
use crate::interp::{Actor, Chart, EffectCall, RestoreError, Snapshot, SnapshotJsonError};
use crate::store::{AppliedEvent, OutboxItem, OutboxStatus, ProcessRow, StoreSecret};

/// The step, or `RuntimeError::Unsettled` when it did not settle.
pub(super) fn settled<'s>(
    process: &str,
    step: &'s crate::interp::Step,
) -> Result<&'s crate::interp::Step, RuntimeError> {
    step.settled().map_err(|unsettled| RuntimeError::Unsettled {
        process: process.to_string(),
        unsettled: Box::new(unsettled.clone()),
    })
}

/// What one step hands to the outbox: the effects it did not run, the
/// invocations it left in flight, and the keys of the invocations it
/// cancelled.
#[derive(Debug, Default)]
pub(super) struct StepCalls {
    pub(super) effects: Vec<EffectCall>,
    pub(super) invoked: Vec<InvokedCall>,
    pub(super) cancelled: Vec<String>,
}

/// An invocation a step started, with the outbox key bound to it.
#[derive(Debug)]
pub(super) struct InvokedCall {
    pub(super) id: String,
    pub(super) src: String,
    pub(super) input: Value,
    pub(super) key: String,
}

/// What the step `actor` just took (an event's or a timer firing's, with id
/// `step_id`) hands to the outbox, after `earlier` effects of the same
/// delivery (the start's). The invocations in flight that have no key yet
/// get theirs now, so that their completions must carry it; one started and
/// cancelled within the step has none and never reaches the outbox.
pub(super) fn step_calls(
    keys: RowKeys<'_>,
    actor: &mut Actor,
    process: &str,
    step_id: &str,
    earlier: Vec<EffectCall>,
) -> Result<StepCalls, RuntimeError> {
    let step = settled(process, actor.last_step())?;
    let mut effects = earlier;
    effects.extend(
        step.effects
            .iter()
            .filter(|effect| leaves_through_outbox(effect))
            .cloned(),
    );
    let cancelled = step
        .cancelled
        .iter()
        .filter_map(|cancelled| cancelled.key.as_deref().map(str::to_string))
        .collect();
    let chart = Arc::clone(actor.chart());
    let mut invoked = Vec::new();
    actor.bind_invocation_keys(|running| {
        let state = &chart.machine().state(running.state).path;
        let key = keys.invocation(running.src, process, step_id, state, running.id);
        invoked.push(InvokedCall {
            id: running.id.to_string(),
            src: running.src.to_string(),
            input: running.input.clone(),
            key: key.clone(),
        });
        key
    });
    Ok(StepCalls {
        effects,
        invoked,
        cancelled,
    })
}

/// One event to apply to one process, with its id and payload hash.
pub(super) struct Delivery<'a> {
    pub(super) process: &'a str,
    pub(super) id: String,
    pub(super) hash: String,
    pub(super) event: &'a Event,
    pub(super) now: u64,
}

impl<'a> Delivery<'a> {
    pub(super) fn new(
        process: &'a str,
        event: &'a Event,
        now: u64,
    ) -> Result<Delivery<'a>, RuntimeError> {
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

/// Snapshots this transaction wrote, by process, with their revision. A batch
/// restores a process it already applied an event to from here instead of
/// reading and parsing its row again; the row cannot have moved meanwhile,
/// because the transaction holds the write lock (SQLite) or the row lock
/// (PostgreSQL) since its update, and the update checks the revision anyway.
/// A single `apply` keeps none.
#[derive(Default)]
pub(super) struct Restored {
    /// Each process's snapshot JSON as this transaction wrote it, and its revision.
    snapshots: HashMap<String, (String, u64)>,
}

impl Restored {
    pub(super) fn get(&self, process: &str) -> Option<(&str, u64)> {
        self.snapshots
            .get(process)
            .map(|(snapshot, revision)| (snapshot.as_str(), *revision))
    }

    /// Keeps what `write` wrote for `process`.
    pub(super) fn remember(&mut self, process: &str, write: ProcessWrite) {
        let written = match write {
            ProcessWrite::Insert(row) => (row.snapshot, row.revision),
            ProcessWrite::Update {
                revision, snapshot, ..
            } => (snapshot, revision + 1),
        };
        self.snapshots.insert(process.to_string(), written);
    }
}

/// The process a delivery continues, as its transaction found it.
pub(super) enum Current<'r> {
    /// No row: the delivery starts the process.
    New,
    Stored(ProcessRow),
    /// Written earlier in this transaction (a batch): its snapshot JSON and
    /// revision.
    Written(&'r str, u64),
}

impl From<Option<ProcessRow>> for Current<'_> {
    fn from(row: Option<ProcessRow>) -> Self {
        row.map_or(Current::New, Current::Stored)
    }
}

/// How the process row is written: a new row, or the next revision of the
/// one read, under the revision check.
#[derive(Debug)]
pub(super) enum ProcessWrite {
    Insert(ProcessRow),
    Update {
        id: String,
        /// The revision read; the row is written only if it is still there.
        revision: u64,
        snapshot: String,
        next_timer_at: Option<u64>,
    },
}

/// Everything one transaction writes for a delivery or a timer advance, in
/// the order it writes it, and the answer once written.
#[derive(Debug)]
pub(super) struct Plan<T> {
    pub(super) process: ProcessWrite,
    pub(super) applied: Vec<AppliedEvent>,
    pub(super) outbox: Vec<OutboxItem>,
    /// Keys of invocation rows to mark cancelled.
    pub(super) cancelled: Vec<String>,
    /// A lazy migration under `outbox: drop`: the pending rows it cancels,
    /// read and cancelled after the process row is written.
    pub(super) drop_outbox: Option<OutboxDrop>,
    pub(super) answer: T,
}

/// The answer to a delivery whose id is already applied: the frozen
/// response for the same payload, a conflict for another; `None` when the id
/// is new.
pub(super) fn known(delivery: &Delivery<'_>, applied: Option<&AppliedEvent>) -> Option<Outcome> {
    let applied = applied?;
    Some(if applied.payload_hash == delivery.hash {
        Outcome::Duplicate {
            response: applied.response.clone(),
            revision: applied.revision,
        }
    } else {
        Outcome::Conflict
    })
}

/// The rows a new delivery writes to `current`, and its answer. It decides
/// everything (snapshot, outbox rows, response) before anything is written,
/// so every error here leaves nothing written for this delivery, and a batch
/// may answer it and go on.
///
/// `spare` is an actor of an earlier delivery, or `None`: a stored process is
/// reloaded into it (`Actor::reload_json`, which gives what a fresh restore
/// gives) rather than into a new one, and the actor used is left there for
/// the next delivery, so that a batch allocates its actor's buffers once.
pub(super) fn delivery(
    chart: &Arc<Chart>,
    secret: &StoreSecret,
    delivery: &Delivery<'_>,
    current: Current<'_>,
    spare: &mut Option<Actor>,
) -> Result<Plan<Outcome>, RuntimeError> {
    let process = delivery.process;
    let machine = chart.machine();
    let keys = RowKeys {
        secret,
        machine: &machine.name,
    };
    let ((mut actor, drop_outbox), revision, start_effects) = match current {
        Current::Written(snapshot, revision) => (
            restore_snapshot(chart, process, snapshot, spare.take())?,
            Some(revision),
            Vec::new(),
        ),
        Current::Stored(row) => (
            restore(chart, &row, spare.take())?,
            Some(row.revision),
            Vec::new(),
        ),
        Current::New => {
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
            ((actor, None), None, effects)
        }
    };
    let firings = match revision {
        Some(revision) => timers::fire_due(keys, &mut actor, process, revision, delivery.now)?,
        None => Vec::new(),
    };
    let ignored = settled(process, actor.send(delivery.event))?.ignored;
    let start_effects = start_effects
        .into_iter()
        .filter(leaves_through_outbox)
        .collect();
    let calls = step_calls(keys, &mut actor, process, &delivery.id, start_effects)?;
    let snapshot = actor.snapshot_json();
    let new_revision = revision.map_or(1, |revision| revision + 1);
    // Positions are renumbered over the start's effects and the event's, so
    // keys never collide within one step.
    let items = outbox_items(keys, process, &delivery.id, &calls, delivery.now);
    let response = serde_json::to_string(&Response {
        outcome: if ignored { "ignored" } else { "applied" },
        revision: new_revision,
        timer: None,
        due: None,
        configuration: &actor.configuration_paths(),
        context: &actor.context(),
        effects: response_effects(&items, &calls.effects),
        invocations: response_invocations(&calls.invoked),
    })
    .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
    let next_timer_at = actor.next_due();
    let write = match revision {
        Some(revision) => ProcessWrite::Update {
            id: process.to_string(),
            revision,
            snapshot,
            next_timer_at,
        },
        None => ProcessWrite::Insert(ProcessRow {
            id: process.to_string(),
            machine: machine.name.clone(),
            version: machine.version,
            snapshot,
            revision: 1,
            next_timer_at,
        }),
    };
    let (mut applied, mut outbox, mut cancelled) =
        timers::firing_rows(keys, process, &firings, new_revision, delivery.now)?;
    applied.push(AppliedEvent {
        process: process.to_string(),
        event_id: delivery.id.clone(),
        payload_hash: delivery.hash.clone(),
        response: response.clone(),
        revision: new_revision,
        applied_at: delivery.now,
        // Only a machine that keeps a history pays for storing payloads.
        payload: machine
            .history
            .is_some()
            .then(|| super::history::payload_json(delivery.event)),
    });
    outbox.extend(items);
    cancelled.extend(calls.cancelled);
    *spare = Some(actor);
    Ok(Plan {
        process: write,
        applied,
        outbox,
        cancelled,
        drop_outbox,
        answer: if ignored {
            Outcome::Ignored {
                response,
                revision: new_revision,
            }
        } else {
            Outcome::Applied {
                response,
                revision: new_revision,
            }
        },
    })
}

/// Continues the process stored in `row`, which must run `chart`'s machine
/// at the version it started with or at one it declares a migration from;
/// with what the write must cancel in the outbox when it was migrated
/// under `outbox: drop`. A `spare` actor is reloaded rather than a new one
/// made (see `restore_snapshot`).
pub(super) fn restore(
    chart: &Arc<Chart>,
    row: &ProcessRow,
    spare: Option<Actor>,
) -> Result<(Actor, Option<OutboxDrop>), RuntimeError> {
    let process = &row.id;
    let machine = chart.machine();
    if row.machine != machine.name {
        return Err(RuntimeError::WrongMachine {
            process: process.to_string(),
            expected: machine.name.clone(),
            found: row.machine.clone(),
        });
    }
    restore_snapshot(chart, process, &row.snapshot, spare)
}

/// Continues `process` from its snapshot JSON. A snapshot of another
/// version is moved through the migration the machine declares from it
/// (`migrate.rs`), so lazily, in the transaction of the event that touched
/// it: the write that follows stores it migrated, under the revision check
/// that lets only one concurrent writer do so, and with it the cancel of
/// the outbox rows an `outbox: drop` names. Without a migration from its
/// version the process is refused by name. A `spare` actor of `chart` is
/// reloaded in the memory it has, which gives what a fresh restore gives,
/// errors included (`snapshot_json::reloads_as_it_restores`).
fn restore_snapshot(
    chart: &Arc<Chart>,
    process: &str,
    json: &str,
    spare: Option<Actor>,
) -> Result<(Actor, Option<OutboxDrop>), RuntimeError> {
    let restored = match spare {
        Some(mut actor) if Arc::ptr_eq(actor.chart(), chart) => {
            actor.reload_json(json).map(|()| actor)
        }
        _ => Actor::restore_json(Arc::clone(chart), json),
    };
    if let Err(SnapshotJsonError::Restore(RestoreError::Version { .. })) = restored {
        let snapshot: Snapshot = serde_json::from_str(json)
            .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
        return Ok(super::migrate::migrate_actor(chart, process, &snapshot)?);
    }
    let restored = restored.map(|actor| (actor, None));
    restored.map_err(|error| match error {
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
pub(super) fn leaves_through_outbox(effect: &EffectCall) -> bool {
    !effect.ran
}

/// The outbox rows of what one step of `process` produced for `event_id`
/// (an event's id or a timer firing's): its effects, keyed by position, then
/// its invocations, under the keys bound to them.
pub(super) fn outbox_items(
    keys: RowKeys<'_>,
    process: &str,
    event_id: &str,
    calls: &StepCalls,
    now: u64,
) -> Vec<OutboxItem> {
    let effects = calls
        .effects
        .iter()
        .map(|effect| (None, &*effect.name, &effect.args, None));
    let invoked = calls.invoked.iter().map(|invoked| {
        let (key, id) = (Some(&*invoked.key), Some(&*invoked.id));
        (key, &*invoked.src, &invoked.input, id)
    });
    effects
        .chain(invoked)
        .enumerate()
        .map(|(position, (key, effect, args, invocation))| {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            OutboxItem {
                process: process.to_string(),
                event_id: event_id.to_string(),
                position,
                key: key.map_or_else(
                    || keys.effect(effect, process, event_id, position),
                    str::to_string,
                ),
                effect: effect.to_string(),
                args: crate::expr::json::to_text(args),
                status: OutboxStatus::Pending,
                attempts: 0,
                next_attempt_at: now,
                last_error: None,
                invocation: invocation.map(str::to_string),
            }
        })
        .collect()
}

/// The `effects` list of a response.
pub(super) fn response_effects<'a>(
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

/// The `invocations` list of a response.
pub(super) fn response_invocations(invoked: &[InvokedCall]) -> Vec<ResponseInvocation<'_>> {
    invoked
        .iter()
        .map(|invoked| ResponseInvocation {
            id: &invoked.id,
            src: &invoked.src,
            key: &invoked.key,
            input: &invoked.input,
        })
        .collect()
}

/// The answer to an applied or ignored event, or to a timer firing (with
/// `timer` and `due`), as sent and frozen.
#[derive(serde::Serialize)]
pub(super) struct Response<'a> {
    pub(super) outcome: &'static str,
    pub(super) revision: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) timer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) due: Option<u64>,
    pub(super) configuration: &'a [String],
    pub(super) context: &'a Value,
    pub(super) effects: Vec<ResponseEffect<'a>>,
    /// The invocations the step started; absent when none, so that the
    /// responses of machines without invocations stay as they were.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) invocations: Vec<ResponseInvocation<'a>>,
}

#[derive(serde::Serialize)]
pub(super) struct ResponseEffect<'a> {
    pub(super) effect: &'a str,
    pub(super) position: u32,
    pub(super) key: &'a str,
    pub(super) args: &'a Value,
}

#[derive(serde::Serialize)]
pub(super) struct ResponseInvocation<'a> {
    pub(super) id: &'a str,
    pub(super) src: &'a str,
    pub(super) key: &'a str,
    pub(super) input: &'a Value,
}
