//! The outbox dispatcher: hands due effects to the host with their keys,
//! retries with exponential backoff, dead-letters after a limit, and turns an
//! unknown outcome into an event for the machine.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::driver::{Driver, SyncDriver};
use super::{RuntimeError, apply_at_with};
use crate::expr::{Event, Value};
use crate::interp::Chart;
use crate::ready::finish;
use crate::store::{OutboxItem, OutboxStatus, Store};

/// What became of one attempt at an effect.
#[derive(Clone, Debug, PartialEq)]
pub enum Dispatch {
    /// The receiver confirmed it.
    Done,
    /// It certainly did not happen (or the receiver deduplicates by the key):
    /// try again later with the same key.
    Retry(String),
    /// It may or may not have happened (a timeout against a receiver without
    /// keys). Retrying blindly could do it twice, so the machine is told with
    /// an event and decides, typically by entering a verification state.
    UnknownOutcome,
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
}

/// Dispatches the rows due at `now` once each. An unknown outcome applies
/// the event `policy.unknown_event(effect)` to the row's process, with id
/// `unknown:<key>` (so a repeat of this very report is a duplicate) and data
/// `{"key", "effect", "args"}`, before the row is marked `unknown`.
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
    let items = driver.claim_due(now, policy.lease_ms, policy.batch).await?;
    for item in items {
        let attempts = item.attempts.saturating_add(1);
        match handler(&item).await {
            Dispatch::Done => {
                driver
                    .finish_attempt(&item.key, OutboxStatus::Done, attempts, now, None)
                    .await?;
                report.done += 1;
            }
            Dispatch::Retry(error) => {
                if attempts >= policy.max_attempts {
                    driver
                        .finish_attempt(&item.key, OutboxStatus::Dead, attempts, now, Some(&error))
                        .await?;
                    report.dead += 1;
                } else {
                    driver
                        .finish_attempt(
                            &item.key,
                            OutboxStatus::Pending,
                            attempts,
                            now.saturating_add(policy.backoff(attempts)),
                            Some(&error),
                        )
                        .await?;
                    report.retried += 1;
                }
            }
            Dispatch::UnknownOutcome => {
                let event = unknown_outcome_event(policy, &item);
                // The event is applied first: if the process dies before the
                // row is marked, the lease expires, the row is tried again,
                // and a second unknown outcome is a duplicate event.
                apply_at_with(driver, chart, &item.process, &event, now).await?;
                driver
                    .finish_attempt(
                        &item.key,
                        OutboxStatus::Unknown,
                        attempts,
                        now,
                        Some("outcome unknown; the machine was told"),
                    )
                    .await?;
                report.unknown += 1;
            }
        }
    }
    Ok(report)
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
