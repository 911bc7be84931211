//! `apply_batch`: many events, to one or many processes, in one store
//! transaction. Each event gets exactly the answer `apply` would have given
//! it had the events been applied one by one in order (the same id twice in
//! a batch is a duplicate of the first); the batch only shares the
//! transaction, so its events share one commit, and one fsync.

use std::collections::HashMap;
use std::sync::Arc;

use super::decide::{self, Current, Delivery, Plan, ProcessWrite, Restored};
use super::driver::{self, Attempt, Driver, SyncDriver, Work};
use super::{Outcome, RuntimeError, now_millis};
use crate::expr::Event;
use crate::interp::Chart;
use crate::ready::finish;
use crate::store::{
    AppliedEvent, AsyncTransaction, ProcessRow, ProcessUpdate, RowWrites, Store, StoreSecret,
};

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

/// `apply_batch_at`'s transaction, and `apply_at`'s (a batch of one):
/// every delivery of the batch.
///
/// It reads at once what every delivery needs (the marks of their ids, the
/// rows of their processes), decides each in order, and writes everything
/// at once at the end: PostgreSQL reads in one statement and writes and
/// commits in one more (`AsyncTransaction::write_last_rows`), so it waits
/// for the server twice whatever the size of the batch. Deferring the writes keeps the contract:
/// the process rows are written under the revision check of the rows read
/// and the marks under their unique key, so a writer that moved a process
/// or applied an id meanwhile makes the whole batch start over, as a lost
/// race does one `apply`.
pub(super) struct ApplyMany<'a> {
    pub(super) chart: &'a Arc<Chart>,
    pub(super) deliveries: Vec<Result<Delivery<'a>, RuntimeError>>,
    /// The process whose snapshot another writer moved, for the error after
    /// too many lost races.
    pub(super) lost_on: String,
}

impl Work for ApplyMany<'_> {
    type Output = Vec<Result<Outcome, RuntimeError>>;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Self::Output, Attempt> {
        let deliveries: Vec<&Delivery<'_>> = self.deliveries.iter().flatten().collect();
        let marks: Vec<(&str, &str)> = deliveries
            .iter()
            .map(|delivery| (delivery.process, delivery.id.as_str()))
            .collect();
        let mut processes: Vec<&str> = deliveries.iter().map(|delivery| delivery.process).collect();
        processes.sort_unstable();
        processes.dedup();
        let read = tx.read_rows(&marks, &processes).await?;
        // The marks by process, then by event id, so that a delivery's is
        // looked up without making its key.
        let mut applied: HashMap<String, HashMap<String, AppliedEvent>> = HashMap::new();
        for row in read.applied {
            remember_mark(&mut applied, row);
        }
        let mut stored: HashMap<String, ProcessRow> = read
            .processes
            .into_iter()
            .map(|row| (row.id.clone(), row))
            .collect();
        let mut restored = Restored::default();
        // One actor for the batch's deliveries, reloaded for each.
        let mut spare = None;
        let mut writes = Writes::default();
        let mut answers = Vec::with_capacity(self.deliveries.len());
        for delivery in self.deliveries.iter() {
            // No id, or a reserved one: the answer `apply_at` gives.
            let delivery = match delivery {
                Ok(delivery) => delivery,
                Err(refused) => {
                    answers.push(Err(refused.clone()));
                    continue;
                }
            };
            let process = delivery.process;
            let mark = (applied.get(process)).and_then(|ids| ids.get(delivery.id.as_str()));
            if let Some(answer) = decide::known(delivery, mark) {
                answers.push(Ok(answer));
                continue;
            }
            let current = match restored.get(process) {
                Some((snapshot, revision)) => Current::Written(snapshot, revision),
                None => stored.remove(process).into(),
            };
            // Nothing is written for an event refused here: answer and go on.
            let plan = match decide::delivery(self.chart, secret, delivery, current, &mut spare) {
                Ok(plan) => plan,
                Err(refused) => {
                    answers.push(Err(refused));
                    continue;
                }
            };
            if plan.drop_outbox.is_some() {
                // A lazy migration under `outbox: drop` reads the pending rows
                // after its process row is written: what is deferred goes
                // first, then this plan, one statement at a time.
                flush(tx, &mut writes, &mut self.lost_on, Last::No).await?;
                driver::write(tx, self.chart.machine(), &plan).await?;
            } else {
                writes.add(&plan);
            }
            for row in &plan.applied {
                remember_mark(&mut applied, row.clone());
            }
            restored.remember(process, plan.process);
            answers.push(Ok(plan.answer));
        }
        // The last writes: the store may commit with them.
        flush(tx, &mut writes, &mut self.lost_on, Last::Yes).await?;
        Ok(answers)
    }

    fn contended(&self) -> String {
        self.lost_on.clone()
    }
}

/// Keeps `row` as the mark of its `(process, event id)` for the batch's
/// later deliveries.
fn remember_mark(marks: &mut HashMap<String, HashMap<String, AppliedEvent>>, row: AppliedEvent) {
    (marks.entry(row.process.clone()).or_default()).insert(row.event_id.clone(), row);
}

/// Whether a flush writes the transaction's last rows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Yes,
    No,
}

/// Writes what is deferred in `writes`, and empties it; a process another
/// writer moved is kept in `lost_on`. The last flush writes through
/// `write_last_rows`, which may commit.
async fn flush<T: AsyncTransaction>(
    tx: &mut T,
    writes: &mut Writes,
    lost_on: &mut String,
    last: Last,
) -> Result<(), Attempt> {
    let rows = std::mem::take(writes).rows;
    if rows.is_empty() {
        return Ok(());
    }
    let written = match last {
        Last::Yes => tx.write_last_rows(&rows).await?,
        Last::No => tx.write_rows(&rows).await?,
    };
    match written {
        None => Ok(()),
        Some(process) => {
            *lost_on = process;
            Err(Attempt::Lost)
        }
    }
}

/// The rows a batch writes at its end, with at most one write of each
/// process row: its last snapshot, under the revision check of the row the
/// batch read (or a new row, when the batch started the process).
#[derive(Default)]
struct Writes {
    rows: RowWrites,
    /// Where each process's write is in `rows`.
    slots: HashMap<String, Slot>,
}

#[derive(Clone, Copy)]
enum Slot {
    Insert(usize),
    Update(usize),
}

impl Writes {
    fn add<A>(&mut self, plan: &Plan<A>) {
        match &plan.process {
            ProcessWrite::Insert(row) => {
                self.slots
                    .insert(row.id.clone(), Slot::Insert(self.rows.inserts.len()));
                self.rows.inserts.push(row.clone());
            }
            ProcessWrite::Update {
                id,
                revision,
                snapshot,
                next_timer_at,
            } => match self.slots.get(id) {
                Some(Slot::Insert(i)) => {
                    let row = &mut self.rows.inserts[*i];
                    row.snapshot.clone_from(snapshot);
                    row.revision = revision + 1;
                    row.next_timer_at = *next_timer_at;
                }
                Some(Slot::Update(i)) => {
                    let update = &mut self.rows.updates[*i];
                    update.snapshot.clone_from(snapshot);
                    update.revision = revision + 1;
                    update.next_timer_at = *next_timer_at;
                }
                None => {
                    self.slots
                        .insert(id.clone(), Slot::Update(self.rows.updates.len()));
                    self.rows.updates.push(ProcessUpdate {
                        id: id.clone(),
                        read: *revision,
                        revision: revision + 1,
                        snapshot: snapshot.clone(),
                        next_timer_at: *next_timer_at,
                    });
                }
            },
        }
        self.rows.applied.extend(plan.applied.iter().cloned());
        self.rows.outbox.extend(plan.outbox.iter().cloned());
        self.rows.cancelled.extend(plan.cancelled.iter().cloned());
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
        lost_on: String::new(),
    };
    driver::with_retries(driver, &mut work).await
}
