//! Timers of stored processes: `after` transitions and delayed sends fire
//! without an external event.
//!
//! A stored actor's clock is milliseconds since the Unix epoch: a process
//! starts at the `now` of its first event, so an `after: 5s` entered then is
//! due 5,000 ms later, and the earliest due time is kept on the process row
//! (`next_timer_at`) for schedulers to find. Firing moves the actor's clock
//! to each timer's due time, not to the caller's `now`, so what a timer does
//! (and what the timers it starts are due at) does not depend on how late a
//! scheduler comes: the result is what a real-time system would have done.
//!
//! Each firing is applied once, like an event: it is recorded as an
//! applied-event row under an id of its own ([`firing_id`]), its effects go
//! to the outbox keyed by that id, and the snapshot is written under the
//! revision check in the same transaction. Two schedulers that fire the same
//! timer from the same snapshot compute the same id and the same keys; the
//! one that loses the race starts over from the winner's snapshot, where the
//! timer is gone.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::decide::{
    Plan, ProcessWrite, Response, StepCalls, outbox_items, response_effects, response_invocations,
    restore, step_calls,
};
use super::driver::{self, Attempt, Driver, SyncDriver, Work};
use super::keys::RowKeys;
use super::{RuntimeError, hex};
use crate::expr::Value;
use crate::interp::{Actor, Chart};
use crate::ready::finish;
use crate::store::{AppliedEvent, AsyncTransaction, OutboxItem, ProcessRow, Store, StoreSecret};

/// Event ids with this prefix name timer firings; `apply` refuses them from
/// senders, so the two never collide.
pub const TIMER_ID_PREFIX: &str = "timer:";

/// At most this many timers fire in one transaction. A machine whose timers
/// keep starting timers that are already due (an `after: 0s` loop, or a
/// periodic timer far behind) would otherwise never finish one; the rest fire
/// in the next transaction, as the process is still due.
pub const MAX_FIRINGS_PER_TRANSACTION: usize = 1_000;

/// The id of one timer firing: the timer's label and due time, then the
/// revision of the snapshot it fired from and its scheduling number in that
/// actor. The label and due time say what fired; the revision and number
/// keep two firings of one process apart even when a zero delay fires the
/// same timer twice at one millisecond. Every part comes from the snapshot,
/// so a retry, or a second scheduler, computes the same id.
pub fn firing_id(label: &str, due: u64, revision: u64, seq: u64) -> String {
    format!("{TIMER_ID_PREFIX}{label}@{due}/{revision}.{seq}")
}

/// One timer firing that was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Fired {
    /// Its applied-event id ([`firing_id`]), which keys its effects.
    pub id: String,
    /// Its frozen response: `{"outcome", "revision", "timer", "due",
    /// "configuration", "context", "effects"}`, where the outcome is
    /// `ignored` when the timer took no transition (a guard said no).
    pub response: String,
}

/// What `advance` did.
#[derive(Clone, Debug, PartialEq)]
pub struct Advanced {
    /// The firings, in the order they fired; empty when nothing was due.
    pub fired: Vec<Fired>,
    /// The process's revision afterwards; `None` when there is no process.
    pub revision: Option<u64>,
    /// When the process's next timer is due.
    pub next_timer_at: Option<u64>,
}

/// A timer fired on a restored actor, before it is written.
pub(super) struct Firing {
    id: String,
    label: String,
    due: u64,
    ignored: bool,
    calls: StepCalls,
    configuration: Vec<String>,
    context: Value,
}

/// Fires the timers of `actor` (restored from `revision`) due at `now`, one
/// by one, at most `MAX_FIRINGS_PER_TRANSACTION`, then moves its clock to
/// `now`.
pub(super) fn fire_due(
    keys: RowKeys<'_>,
    actor: &mut Actor,
    process: &str,
    revision: u64,
    now: u64,
) -> Result<Vec<Firing>, RuntimeError> {
    let mut firings = Vec::new();
    while firings.len() < MAX_FIRINGS_PER_TRANSACTION {
        let Some(timer) = actor.fire_next(now) else {
            break;
        };
        let id = firing_id(&timer.label, timer.due, revision, timer.seq);
        let calls = step_calls(keys, actor, process, &id, Vec::new())?;
        firings.push(Firing {
            id,
            ignored: actor.last_step().transitions.is_empty(),
            calls,
            label: timer.label,
            due: timer.due,
            configuration: actor.configuration_paths(),
            context: actor.context(),
        });
    }
    actor.set_clock(now);
    Ok(firings)
}

/// Each firing's applied-event row (with its frozen response) and outbox
/// rows, and the keys of the invocations the firings cancelled; `revision`
/// is the one the transaction writes.
pub(super) fn firing_rows(
    keys: RowKeys<'_>,
    process: &str,
    firings: &[Firing],
    revision: u64,
    now: u64,
) -> Result<FiringRows, RuntimeError> {
    let mut applied = Vec::with_capacity(firings.len());
    let mut outbox = Vec::new();
    let mut cancelled = Vec::new();
    for firing in firings {
        let items = outbox_items(keys, process, &firing.id, &firing.calls, now);
        let response = serde_json::to_string(&Response {
            outcome: if firing.ignored { "ignored" } else { "applied" },
            revision,
            timer: Some(&firing.label),
            due: Some(firing.due),
            configuration: &firing.configuration,
            context: &firing.context,
            effects: response_effects(&items, &firing.calls.effects),
            invocations: response_invocations(&firing.calls.invoked),
        })
        .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
        applied.push(AppliedEvent {
            process: process.to_string(),
            event_id: firing.id.clone(),
            payload_hash: hex(&Sha256::digest(firing.id.as_bytes())),
            response,
            revision,
            applied_at: now,
            // The response names the timer and its due time: a replay
            // needs nothing more to fire it.
            payload: None,
        });
        outbox.extend(items);
        cancelled.extend(firing.calls.cancelled.iter().cloned());
    }
    Ok((applied, outbox, cancelled))
}

/// What [`firing_rows`] writes: applied-event rows, outbox rows, and keys
/// of outbox rows to cancel.
pub(super) type FiringRows = (Vec<AppliedEvent>, Vec<OutboxItem>, Vec<String>);

/// Fires the timers of `process` due at `now` (milliseconds since the Unix
/// epoch) with no external event: in one transaction, each firing's
/// applied-event row and outbox rows and the new snapshot under the revision
/// check, exactly like `apply`; a lost race starts over from the fresh
/// snapshot. A process with nothing due, or no process, writes nothing.
///
/// ```
/// use std::sync::Arc;
/// use idemchart::expr::{Event, Value};
/// use idemchart::interp::Chart;
/// use idemchart::runtime::{advance, apply_at};
/// use idemchart::store::SqliteStore;
///
/// let machine = idemchart::syntax::parse(
///     "machine: lamp\ninitial: off\nevents: { ON: {} }\nstates:\n  off: { on: { ON: on } }\n  on: { after: { 5s: off } }\n",
///     idemchart::syntax::Syntax::Yaml,
/// ).unwrap();
/// let chart = Arc::new(Chart::new(machine));
/// let mut store = SqliteStore::in_memory().unwrap();
/// let t = 1_700_000_000_000;
/// let on = Event::new("ON", Some(Value::from(&serde_json::json!("on-1"))), Value::Null);
/// apply_at(&mut store, &chart, "hall", &on, t).unwrap();
/// // Not yet due: nothing fires and nothing is written.
/// let early = advance(&mut store, &chart, "hall", t + 4_999).unwrap();
/// assert!(early.fired.is_empty());
/// assert_eq!((early.revision, early.next_timer_at), (Some(1), Some(t + 5_000)));
/// // Due: the lamp goes off, at revision 2.
/// let due = advance(&mut store, &chart, "hall", t + 5_000).unwrap();
/// assert_eq!(due.fired.len(), 1);
/// assert_eq!(due.fired[0].id, format!("timer:after:on[0]@{}/1.0", t + 5_000));
/// assert_eq!((due.revision, due.next_timer_at), (Some(2), None));
/// ```
pub fn advance<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    now: u64,
) -> Result<Advanced, RuntimeError> {
    finish(advance_with(
        &mut SyncDriver(store),
        chart,
        process,
        now,
        &mut None,
    ))
}

/// `advance` through either driver: the one implementation of it. `spare`
/// is an actor to reload the process into, as `decide::delivery` takes one;
/// the actor used is left there.
pub(super) async fn advance_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    process: &str,
    now: u64,
    spare: &mut Option<Actor>,
) -> Result<Advanced, RuntimeError> {
    // Another writer may move the snapshot: then it starts over from it,
    // where the timers it fired are gone.
    driver::with_retries(
        driver,
        &mut AdvanceOne {
            chart,
            process,
            now,
            spare,
        },
    )
    .await
}

/// `advance`'s transaction: the due timers of one process.
struct AdvanceOne<'a> {
    chart: &'a Arc<Chart>,
    process: &'a str,
    now: u64,
    spare: &'a mut Option<Actor>,
}

impl Work for AdvanceOne<'_> {
    type Output = Advanced;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Advanced, Attempt> {
        let row = tx.process(self.process).await?;
        match plan(self.chart, secret, self.process, row, self.now, self.spare)? {
            Ok(plan) => {
                driver::write(tx, self.chart.machine(), &plan).await?;
                Ok(plan.answer)
            }
            // Nothing is due: nothing is written.
            Err(advanced) => Ok(advanced),
        }
    }

    fn contended(&self) -> String {
        self.process.to_string()
    }
}

/// What firing the due timers of `row` writes, or the answer when there is
/// nothing to write (no process, or nothing due).
fn plan(
    chart: &Arc<Chart>,
    secret: &StoreSecret,
    process: &str,
    row: Option<ProcessRow>,
    now: u64,
    spare: &mut Option<Actor>,
) -> Result<Result<Plan<Advanced>, Advanced>, RuntimeError> {
    let Some(row) = row else {
        return Ok(Err(Advanced {
            fired: Vec::new(),
            revision: None,
            next_timer_at: None,
        }));
    };
    let (mut actor, drop_outbox) = restore(chart, &row, spare.take())?;
    let keys = RowKeys {
        secret,
        machine: &chart.machine().name,
    };
    let firings = fire_due(keys, &mut actor, process, row.revision, now)?;
    // A process of an older version was moved through its migration
    // (`decide::restore_snapshot`): that is written even when no timer fires
    // (the migration may drop the one that was due), or its row would stay
    // due and be picked again at every round.
    let migrated = row.version != chart.machine().version;
    let next_timer_at = actor.next_due();
    if firings.is_empty() && !migrated {
        *spare = Some(actor);
        return Ok(Err(Advanced {
            fired: Vec::new(),
            revision: Some(row.revision),
            next_timer_at,
        }));
    }
    let revision = row.revision + 1;
    let (applied, outbox, cancelled) = firing_rows(keys, process, &firings, revision, now)?;
    let fired = applied
        .iter()
        .map(|row| Fired {
            id: row.event_id.clone(),
            response: row.response.clone(),
        })
        .collect();
    let snapshot = actor.snapshot_json();
    *spare = Some(actor);
    Ok(Ok(Plan {
        process: ProcessWrite::Update {
            id: process.to_string(),
            revision: row.revision,
            snapshot,
            next_timer_at,
        },
        applied,
        outbox,
        cancelled,
        drop_outbox,
        answer: Advanced {
            fired,
            revision: Some(revision),
            next_timer_at,
        },
    }))
}

/// What `advance_due` did to one process.
#[derive(Debug)]
pub struct DueProcess {
    pub process: String,
    /// What `advance` answered for it.
    pub result: Result<Advanced, RuntimeError>,
}

/// Advances up to `limit` processes of `chart`'s machine (at its version,
/// or at one it declares a migration from, which it migrates) whose next
/// timer is due at `now`, earliest first within a version, each in its own
/// transaction; returns what `advance` answered for each, so that one broken
/// process does not stop the others. Several schedulers may
/// run it at once: they may pick the same process, and the revision check
/// lets only one fire each timer (the other finds nothing due and writes
/// nothing).
pub fn advance_due<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    now: u64,
    limit: usize,
) -> Result<Vec<DueProcess>, RuntimeError> {
    finish(advance_due_with(&mut SyncDriver(store), chart, now, limit))
}

/// `advance_due` through either driver: the one implementation of it.
pub(super) async fn advance_due_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    now: u64,
    limit: usize,
) -> Result<Vec<DueProcess>, RuntimeError> {
    let machine = chart.machine();
    // The processes at the machine's version, then those at each version it
    // declares a migration from, which `advance` moves as it fires their
    // timers; a process of any other version waits for a machine that can
    // restore it.
    let versions =
        std::iter::once(machine.version).chain(machine.migrations.iter().map(|m| Some(m.from)));
    let mut due = Vec::new();
    for version in versions {
        if due.len() >= limit {
            break;
        }
        let more = driver
            .due_processes(&machine.name, version, now, limit - due.len())
            .await?;
        due.extend(more);
    }
    let mut advanced = Vec::with_capacity(due.len());
    // One actor for the processes, reloaded for each.
    let mut spare = None;
    for process in due {
        let result = advance_with(driver, chart, &process, now, &mut spare).await;
        advanced.push(DueProcess { process, result });
    }
    Ok(advanced)
}
