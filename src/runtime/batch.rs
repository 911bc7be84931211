//! `apply_batch`: many events, to one or many processes, in one store
//! transaction. Each event gets exactly the answer `apply` would have given
//! it had the events been applied one by one in order (the same id twice in
//! a batch is a duplicate of the first); the batch only shares the
//! transaction, so its events share one commit, and one fsync.

use std::sync::Arc;

use super::{
    Attempt, Delivery, Outcome, Restored, RuntimeError, attempt, now_millis, with_retries,
};
use crate::expr::Event;
use crate::interp::Chart;
use crate::store::Store;

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
    // Ids and hashes are worked out before the transaction takes its locks.
    let deliveries: Vec<Result<Delivery<'_>, RuntimeError>> = events
        .iter()
        .map(|(process, event)| Delivery::new(process.as_ref(), event, now))
        .collect();
    // The process whose snapshot another writer moved, for the error after
    // too many lost races.
    let lost_on = std::cell::Cell::new("");
    with_retries(
        || {
            store.transaction(|tx| {
                let mut restored = Restored::default();
                let mut answers = Vec::with_capacity(deliveries.len());
                for delivery in &deliveries {
                    // No id, or a reserved one: the answer `apply_at` gives.
                    let delivery = match delivery {
                        Ok(delivery) => delivery,
                        Err(refused) => {
                            answers.push(Err(refused.clone()));
                            continue;
                        }
                    };
                    match attempt(tx, chart, delivery, Some(&mut restored)) {
                        Ok(outcome) => answers.push(Ok(outcome)),
                        Err(Attempt::Lost) => {
                            lost_on.set(delivery.process);
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
            })
        },
        || lost_on.get().to_string(),
    )
}
