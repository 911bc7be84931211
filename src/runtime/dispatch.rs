//! The outbox dispatcher: hands due effects to the host with their keys,
//! retries with exponential backoff, dead-letters after a limit, turns an
//! unknown outcome into an event for the machine, and answers invocations
//! with their completion events.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::decide::Delivery;
use super::driver::{self, Attempt, Driver, SyncDriver, Work};
use super::{Outcome, RuntimeError};
use crate::expr::{Event, Value};
use crate::interp::Chart;
use crate::model::Completion;
use crate::ready::finish;
use crate::store::{AsyncTransaction, AttemptRecord, OutboxItem, OutboxStatus, Store, StoreSecret};

/// What became of one attempt at an effect or an invocation.
#[derive(Clone, Debug, PartialEq)]
pub enum Dispatch {
    /// The receiver confirmed it. An invocation completes with no output.
    Done,
    /// The receiver confirmed it and answered `output`: an invocation's done
    /// event carries it as `event.output`; for an effect it is `Done`.
    Output(serde_json::Value),
    /// The receiver refused it for good (a 4xx answer, a declined card):
    /// trying again will not help. An invocation's error event carries the
    /// value as `event.error` and its row is `failed`; an effect's row is
    /// dead-lettered with it, for an operator.
    Failed(serde_json::Value),
    /// It certainly did not happen (or the receiver deduplicates by the key):
    /// try again later with the same key.
    Retry(String),
    /// It may or may not have happened (a timeout against a receiver without
    /// keys). Retrying blindly could do it twice, so the machine is told with
    /// an event and decides, typically by entering a verification state.
    UnknownOutcome,
    /// The receiver took the call and will answer later ([`complete`]),
    /// as an HTTP receiver's 202 says. An effect is done; an invocation's
    /// row stays pending and is called again (same key) after the back-off,
    /// until the answer comes or `max_attempts` gives it up as dead.
    Accepted,
}

#[derive(Clone, Debug)]
pub struct DispatchPolicy {
    /// Attempts before a row is dead-lettered.
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles with each further one.
    pub base_backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// How long a claimed row is hidden from other dispatchers.
    pub lease_ms: u64,
    pub batch: usize,
    /// The event sent to the machine on an unknown outcome, by effect name.
    /// An effect not listed sends `<effect>.unknown`.
    pub unknown_events: HashMap<String, String>,
}

impl Default for DispatchPolicy {
    fn default() -> DispatchPolicy {
        DispatchPolicy {
            max_attempts: 8,
            base_backoff_ms: 1_000,
            max_backoff_ms: 3_600_000,
            lease_ms: 30_000,
            batch: 100,
            unknown_events: HashMap::new(),
        }
    }
}

impl DispatchPolicy {
    pub fn unknown_event(&self, effect: &str) -> String {
        self.unknown_events
            .get(effect)
            .cloned()
            .unwrap_or_else(|| format!("{effect}.unknown"))
    }

    /// The wait before attempt `attempts + 1`, after `attempts` failures.
    pub fn backoff(&self, attempts: u32) -> u64 {
        let shift = attempts.saturating_sub(1).min(40);
        self.base_backoff_ms
            .saturating_mul(1u64 << shift)
            .min(self.max_backoff_ms)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DispatchReport {
    pub done: usize,
    pub retried: usize,
    pub dead: usize,
    pub unknown: usize,
    /// Invocations the receiver refused (their error event was delivered).
    pub failed: usize,
}

/// Dispatches the rows due at `now` of the processes of `chart`'s machine
/// (the rows of other machines wait for a dispatcher with their chart) once
/// each, in one transaction per row whose answer the machine must hear:
///
/// - An invocation's answer is delivered as its completion event, with the
///   row's key as the event id, in the transaction that settles the row: a
///   completion delivered twice is a duplicate. `Done` and `Output` send
///   `xstate.done.actor.ID` with `{"output"}`; `Failed` sends
///   `xstate.error.actor.ID` with `{"error"}`. An unknown outcome, or a row
///   given up after `max_attempts`, sends the error event with
///   `{"error": {"reason": "unknown-outcome" | "dead", "key", ...}}`, so the
///   machine's `onError` decides (and verifies, where the call may have
///   happened).
/// - An effect's unknown outcome applies the event
///   `policy.unknown_event(effect)` with id `unknown:<key>` and data
///   `{"key", "effect", "args"}`, in the transaction that marks the row
///   `unknown`.
pub fn dispatch<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    now: u64,
    policy: &DispatchPolicy,
    mut handler: impl FnMut(&OutboxItem) -> Dispatch,
) -> Result<DispatchReport, RuntimeError> {
    finish(dispatch_with(
        &mut SyncDriver(store),
        chart,
        now,
        policy,
        |item: &OutboxItem| std::future::ready(handler(item)),
    ))
}

/// How an attempt leaves its row, and the event that tells the machine.
struct Settlement {
    status: OutboxStatus,
    next_attempt_at: u64,
    last_error: Option<String>,
    event: Option<Event>,
}

/// `dispatch` through either driver, with a handler that answers in a
/// future: the one implementation of it.
pub(super) async fn dispatch_with<D: Driver, F: Future<Output = Dispatch>>(
    driver: &mut D,
    chart: &Arc<Chart>,
    now: u64,
    policy: &DispatchPolicy,
    mut handler: impl FnMut(&OutboxItem) -> F,
) -> Result<DispatchReport, RuntimeError> {
    let mut report = DispatchReport::default();
    // Only this machine's rows: another machine's answers need its chart.
    let machine = &chart.machine().name;
    let items = driver
        .claim_due(machine, now, policy.lease_ms, policy.batch)
        .await?;
    for item in items {
        let attempts = item.attempts.saturating_add(1);
        let settlement = settle(policy, &item, handler(&item).await, attempts, now);
        let record = AttemptRecord {
            key: &item.key,
            status: settlement.status,
            attempts,
            next_attempt_at: settlement.next_attempt_at,
            last_error: settlement.last_error.as_deref(),
        };
        match &settlement.event {
            // The event and the row's new status are written together: if
            // the process dies before the commit, the lease expires and the
            // row is tried again under the same key, and if it dies after,
            // a repeat of this answer is a duplicate event.
            Some(event) => {
                let mut work = Settle {
                    chart,
                    delivery: Delivery::new(&item.process, event, now)?,
                    record,
                };
                driver::with_retries(driver, &mut work).await?;
            }
            None => driver.finish_attempt(&record).await?,
        }
        match settlement.status {
            OutboxStatus::Done => report.done += 1,
            OutboxStatus::Pending => report.retried += 1,
            OutboxStatus::Dead => report.dead += 1,
            OutboxStatus::Unknown => report.unknown += 1,
            OutboxStatus::Failed => report.failed += 1,
            OutboxStatus::Cancelled => {}
        }
    }
    Ok(report)
}

/// What `answer` to attempt number `attempts` on `item` writes and tells.
fn settle(
    policy: &DispatchPolicy,
    item: &OutboxItem,
    answer: Dispatch,
    attempts: u32,
    now: u64,
) -> Settlement {
    let settled = |status, last_error: Option<String>, event| Settlement {
        status,
        next_attempt_at: now,
        last_error,
        event,
    };
    let invocation = item.invocation.as_deref();
    match (answer, invocation) {
        (Dispatch::Done, None) | (Dispatch::Output(_), None) => {
            settled(OutboxStatus::Done, None, None)
        }
        (Dispatch::Done, Some(id)) => {
            let done = completion(item, id, Completion::Done, serde_json::Value::Null);
            settled(OutboxStatus::Done, None, Some(done))
        }
        (Dispatch::Output(output), Some(id)) => {
            let done = completion(item, id, Completion::Done, output);
            settled(OutboxStatus::Done, None, Some(done))
        }
        (Dispatch::Failed(error), None) => {
            settled(OutboxStatus::Dead, Some(error.to_string()), None)
        }
        (Dispatch::Failed(error), Some(id)) => {
            let last_error = Some(error.to_string());
            let failed = completion(item, id, Completion::Error, error);
            settled(OutboxStatus::Failed, last_error, Some(failed))
        }
        (Dispatch::Retry(error), invocation) if attempts >= policy.max_attempts => {
            let dead = invocation.map(|id| {
                let reason = serde_json::json!({
                    "reason": "dead",
                    "key": item.key,
                    "attempts": attempts,
                    "message": error,
                });
                completion(item, id, Completion::Error, reason)
            });
            settled(OutboxStatus::Dead, Some(error), dead)
        }
        (Dispatch::Retry(error), _) => Settlement {
            status: OutboxStatus::Pending,
            next_attempt_at: now.saturating_add(policy.backoff(attempts)),
            last_error: Some(error),
            event: None,
        },
        (Dispatch::Accepted, None) => settled(OutboxStatus::Done, None, None),
        (Dispatch::Accepted, Some(id)) if attempts >= policy.max_attempts => {
            let reason = serde_json::json!({
                "reason": "dead",
                "key": item.key,
                "attempts": attempts,
                "message": "accepted, but no completion came",
            });
            let dead = completion(item, id, Completion::Error, reason);
            settled(
                OutboxStatus::Dead,
                Some("accepted, but no completion came".into()),
                Some(dead),
            )
        }
        (Dispatch::Accepted, Some(_)) => Settlement {
            status: OutboxStatus::Pending,
            next_attempt_at: now.saturating_add(policy.backoff(attempts)),
            last_error: Some("accepted; waiting for the completion".into()),
            event: None,
        },
        (Dispatch::UnknownOutcome, invocation) => {
            let told = match invocation {
                Some(id) => {
                    let reason =
                        serde_json::json!({ "reason": "unknown-outcome", "key": item.key });
                    completion(item, id, Completion::Error, reason)
                }
                None => unknown_outcome_event(policy, item),
            };
            let last_error = Some("outcome unknown; the machine was told".to_string());
            settled(OutboxStatus::Unknown, last_error, Some(told))
        }
    }
}

/// The completion event of the invocation `id` of `item`: its id is the
/// row's key, its data `{"output": value}` or `{"error": value}`.
fn completion(item: &OutboxItem, id: &str, kind: Completion, value: serde_json::Value) -> Event {
    Event::new(
        kind.event(id),
        Some(Value::from(item.key.as_str())),
        Value::from(&serde_json::json!({ kind.field(): value })),
    )
}

/// One row's answer delivered to its process and the row settled, in one
/// transaction.
struct Settle<'a> {
    chart: &'a Arc<Chart>,
    delivery: Delivery<'a>,
    record: AttemptRecord<'a>,
}

impl Work for Settle<'_> {
    type Output = Outcome;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Outcome, Attempt> {
        let outcome = driver::deliver(tx, secret, self.chart, &self.delivery).await?;
        tx.finish_attempt(&self.record).await?;
        Ok(outcome)
    }

    fn contended(&self) -> String {
        self.delivery.process.to_string()
    }
}

/// The event that tells the machine an effect's outcome is unknown.
fn unknown_outcome_event(policy: &DispatchPolicy, item: &OutboxItem) -> Event {
    let args: serde_json::Value =
        serde_json::from_str(&item.args).unwrap_or(serde_json::Value::Null);
    let data = serde_json::json!({
        "key": item.key,
        "effect": item.effect,
        "args": args,
    });
    Event::new(
        policy.unknown_event(&item.effect),
        Some(Value::from(&serde_json::json!(format!(
            "unknown:{}",
            item.key
        )))),
        Value::from(&data),
    )
}

/// What [`complete`] made of an answer to an invocation's row.
#[derive(Clone, Debug, PartialEq)]
pub enum Completed {
    /// The row was pending: its completion event was applied (the outcome
    /// of that event) and the row settled, in one transaction.
    Applied(Outcome),
    /// This very answer was applied before: its frozen response.
    Duplicate(Outcome),
    /// The row is settled (`status`) and this answer is not the one that
    /// settled it; nothing was written.
    NotPending(OutboxStatus),
    /// The process has no invocation row with that key; nothing was written.
    Unknown,
}

/// Answers the invocation whose outbox row of `process` has `key`, from
/// outside the dispatcher (a receiver that answered the call with
/// [`Dispatch::Accepted`] and calls back): `Dispatch::Output`/`Done` sends
/// the done event, `Dispatch::Failed` the error event, as the dispatcher
/// would, in the transaction that settles the row. Any other answer is
/// refused as `Unknown`. The caller checks that the answer may be given
/// (the service asks for the row's completion token).
pub fn complete_at<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    key: &str,
    answer: Dispatch,
    now: u64,
) -> Result<Completed, RuntimeError> {
    finish(complete_with(
        &mut SyncDriver(store),
        chart,
        process,
        key,
        answer,
        now,
    ))
}

/// `complete_at` through either driver: the one implementation of it.
pub(super) async fn complete_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    process: &str,
    key: &str,
    answer: Dispatch,
    now: u64,
) -> Result<Completed, RuntimeError> {
    let (kind, value) = match answer {
        Dispatch::Done => (Completion::Done, serde_json::Value::Null),
        Dispatch::Output(output) => (Completion::Done, output),
        Dispatch::Failed(error) => (Completion::Error, error),
        _ => return Ok(Completed::Unknown),
    };
    let mut work = Complete {
        chart,
        process,
        key,
        kind,
        value,
        now,
    };
    driver::with_retries(driver, &mut work).await
}

/// One answer to one invocation's row, in one transaction.
struct Complete<'a> {
    chart: &'a Arc<Chart>,
    process: &'a str,
    key: &'a str,
    kind: Completion,
    value: serde_json::Value,
    now: u64,
}

impl Work for Complete<'_> {
    type Output = Completed;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Completed, Attempt> {
        let Some(item) = tx.outbox_item(self.key).await? else {
            return Ok(Completed::Unknown);
        };
        let (true, Some(id)) = (item.process == self.process, item.invocation.as_deref()) else {
            return Ok(Completed::Unknown);
        };
        let event = completion(&item, id, self.kind, self.value.clone());
        let delivery = Delivery::new(self.process, &event, self.now)?;
        if item.status != OutboxStatus::Pending {
            // The answer that settled it, given again, is a duplicate;
            // anything else is refused, and nothing is written.
            let applied = tx.applied_event(self.process, &delivery.id).await?;
            return Ok(match super::decide::known(&delivery, applied.as_ref()) {
                Some(outcome @ Outcome::Duplicate { .. }) => Completed::Duplicate(outcome),
                _ => Completed::NotPending(item.status),
            });
        }
        let outcome = driver::deliver(tx, secret, self.chart, &delivery).await?;
        if outcome == Outcome::Conflict {
            // Another answer is already applied under the key: it stands.
            return Ok(Completed::NotPending(item.status));
        }
        let (status, last_error) = match self.kind {
            Completion::Done => (OutboxStatus::Done, None),
            Completion::Error => (OutboxStatus::Failed, Some(self.value.to_string())),
        };
        tx.finish_attempt(&AttemptRecord {
            key: &item.key,
            status,
            attempts: item.attempts,
            next_attempt_at: self.now,
            last_error: last_error.as_deref(),
        })
        .await?;
        Ok(match outcome {
            outcome @ Outcome::Duplicate { .. } => Completed::Duplicate(outcome),
            outcome => Completed::Applied(outcome),
        })
    }

    fn contended(&self) -> String {
        self.process.to_string()
    }
}
