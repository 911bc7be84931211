//! `apply_batch`: many events, to one or many processes, in one store
//! transaction. Each event gets exactly the answer `apply` would have given
//! it had the events been applied one by one in order (the same id twice in
//! a batch is a duplicate of the first); the batch only shares the
//! transaction, so its events share one commit, and one fsync.

use std::sync::Arc;

use super::decide::{Delivery, Restored};
use super::driver::{self, Attempt, Driver, SyncDriver, Work};
use super::{Outcome, RuntimeError, now_millis};
use crate::expr::Event;
use crate::interp::Chart;
use crate::ready::finish;
use crate::store::{AsyncTransaction, Store, StoreSecret};

/// `apply_batch_at` with the system clock.
pub fn apply_batch<S: Store, P: AsRef<str>>(
    store: &mut S,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
) -> Result<Vec<Result<Outcome, RuntimeError>>, RuntimeError> {
    apply_batch_at(store, chart, events, now_millis())
}

/// Applies `(process, event)` pairs in order, in one transaction, each
/// exactly as `apply_at` would; returns one answer per pair, in order.
///
/// An event without an id, or whose process cannot take it (another
/// machine, a snapshot that does not restore), gets its error in its place
/// and writes nothing; the others go on. A store error rolls the whole batch
/// back and is the outer error: nothing was written, and the batch may be
/// sent again. When another writer moved one of the processes, the whole
/// batch starts over from the fresh rows, like `apply`.
pub fn apply_batch_at<S: Store, P: AsRef<str>>(
    store: &mut S,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
    now: u64,
) -> Result<Vec<Result<Outcome, RuntimeError>>, RuntimeError> {
    finish(apply_batch_at_with(
        &mut SyncDriver(store),
        chart,
        events,
        now,
    ))
}

/// `apply_batch_at`'s transaction: every delivery of the batch.
struct ApplyMany<'a> {
    chart: &'a Arc<Chart>,
    deliveries: Vec<Result<Delivery<'a>, RuntimeError>>,
    /// The process whose snapshot another writer moved, for the error after
    /// too many lost races.
    lost_on: &'a str,
}

impl Work for ApplyMany<'_> {
    type Output = Vec<Result<Outcome, RuntimeError>>;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Self::Output, Attempt> {
        let mut restored = Restored::default();
        let mut answers = Vec::with_capacity(self.deliveries.len());
        for delivery in &self.deliveries {
            // No id, or a reserved one: the answer `apply_at` gives.
            let delivery = match delivery {
                Ok(delivery) => delivery,
                Err(refused) => {
                    answers.push(Err(refused.clone()));
                    continue;
                }
            };
            match driver::deliver(tx, secret, self.chart, delivery, Some(&mut restored)).await {
                Ok(outcome) => answers.push(Ok(outcome)),
                Err(Attempt::Lost) => {
                    self.lost_on = delivery.process;
                    return Err(Attempt::Lost);
                }
                // The transaction is unusable (PostgreSQL aborts it at
                // the first failed statement): roll everything back.
                Err(Attempt::Failed(RuntimeError::Store(e))) => {
                    return Err(Attempt::Failed(RuntimeError::Store(e)));
                }
                // Nothing was written for this event: answer and go on.
                Err(Attempt::Failed(e)) => answers.push(Err(e)),
            }
        }
        Ok(answers)
    }

    fn contended(&self) -> String {
        self.lost_on.to_string()
    }
}

/// `apply_batch_at` through either driver: the one implementation of it.
pub(super) async fn apply_batch_at_with<D: Driver, P: AsRef<str>>(
    driver: &mut D,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
    now: u64,
) -> Result<Vec<Result<Outcome, RuntimeError>>, RuntimeError> {
    // Ids and hashes are worked out before the transaction takes its locks.
    let mut work = ApplyMany {
        chart,
        deliveries: events
            .iter()
            .map(|(process, event)| Delivery::new(process.as_ref(), event, now))
            .collect(),
        lost_on: "",
    };
    driver::with_retries(driver, &mut work).await
}
