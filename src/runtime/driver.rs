//! How the runtime's logic reaches a store, once for the sync API and once
//! for the async one.
//!
//! The logic (`apply`, `apply_batch`, `advance`, `advance_due`, `dispatch`,
//! `inspect`, `purge`, the retries on a lost race) is written once, as async
//! functions over a [`Driver`]. [`SyncDriver`] drives a sync [`Store`]: each
//! of its futures has done its work when first polled, so the sync API runs
//! the logic with `ready::finish`, without an executor. [`AsyncDriver`]
//! drives an [`AsyncStore`] and is awaited. The two differ only in how a
//! statement runs, how a transaction begins and ends, and how a back-off
//! waits.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::decide::{self, Delivery, Plan, ProcessWrite};
use super::{MAX_REVISION_RETRIES, Outcome, RuntimeError};
use crate::interp::Chart;
use crate::model::Machine;
use crate::ready::finish;
use crate::store::{
    AppliedEvent, AsyncStore, AsyncTransaction, AttemptRecord, OutboxItem, ProcessRow, RowReads,
    RowWrites, Store, StoreError, StoreSecret, Transaction,
};

/// How one transaction's try ended without an answer.
pub(super) enum Attempt {
    /// Another writer moved a snapshot first: start over from its result.
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

/// What one transaction does: its reads, decisions and writes.
pub(super) trait Work {
    type Output;

    /// `secret` is the store's, for the keys of the rows the work writes.
    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        secret: &StoreSecret,
    ) -> Result<Self::Output, Attempt>;

    /// The process another writer moved, when the work gave up after too
    /// many lost races.
    fn contended(&self) -> String;
}

/// A store, and how to wait.
pub(super) trait Driver {
    /// Runs `work` in one transaction: committed when it answers, rolled
    /// back otherwise.
    async fn transaction<W: Work>(&mut self, work: &mut W) -> Result<W::Output, Attempt>;
    async fn pause(&mut self, wait: Duration);
    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError>;
    /// The due rows of the processes of `machine`, leased.
    async fn claim_due(
        &mut self,
        machine: &str,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError>;
    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError>;
    async fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    async fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    async fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;
    async fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;
    async fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;
    async fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError>;
}

/// A sync store; every future it returns is ready when first polled.
pub(super) struct SyncDriver<'s, S>(pub(super) &'s mut S);

/// A sync transaction seen as an async one whose futures are ready at once.
struct ReadyTx<'t>(&'t mut dyn Transaction);

impl AsyncTransaction for ReadyTx<'_> {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> impl Future<Output = Result<Option<AppliedEvent>, StoreError>> + Send {
        std::future::ready(self.0.applied_event(process, event_id))
    }

    fn process(
        &mut self,
        id: &str,
    ) -> impl Future<Output = Result<Option<ProcessRow>, StoreError>> + Send {
        std::future::ready(self.0.process(id))
    }

    fn insert_process(
        &mut self,
        row: &ProcessRow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        std::future::ready(self.0.insert_process(row))
    }

    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        std::future::ready(self.0.update_process(id, revision, snapshot, next_timer_at))
    }

    fn insert_applied_event(
        &mut self,
        row: &AppliedEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(self.0.insert_applied_event(row))
    }

    fn insert_outbox(
        &mut self,
        item: &OutboxItem,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(self.0.insert_outbox(item))
    }

    fn cancel_outbox(&mut self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(self.0.cancel_outbox(key))
    }

    fn finish_attempt(
        &mut self,
        attempt: &AttemptRecord<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(self.0.finish_attempt(attempt))
    }

    fn outbox_item(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<OutboxItem>, StoreError>> + Send {
        std::future::ready(self.0.outbox_item(key))
    }

    fn pending_outbox(
        &mut self,
        process: &str,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send {
        std::future::ready(self.0.pending_outbox(process))
    }

    fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> impl Future<Output = Result<RowReads, StoreError>> + Send {
        std::future::ready(self.0.read_rows(marks, processes))
    }

    fn write_rows(
        &mut self,
        rows: &RowWrites,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        std::future::ready(self.0.write_rows(rows))
    }
}

impl<S: Store> Driver for SyncDriver<'_, S> {
    async fn transaction<W: Work>(&mut self, work: &mut W) -> Result<W::Output, Attempt> {
        // A copy, since the transaction borrows the store mutably.
        let secret = self.0.secret().clone();
        self.0
            .transaction(|tx| finish(work.run(&mut ReadyTx(tx), &secret)))
    }

    async fn pause(&mut self, wait: Duration) {
        std::thread::sleep(wait);
    }

    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.0.process(id)
    }

    async fn claim_due(
        &mut self,
        machine: &str,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.0
            .claim_due_of(now, lease_ms, limit, Some(machine), None)
    }

    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.0.finish_attempt(attempt)
    }

    async fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.0.due_processes(machine, version, now, limit)
    }

    async fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.0.stale_processes(machine, version, after, limit)
    }

    async fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_applied(machine, before)
    }

    async fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_outbox(machine, before)
    }

    async fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_payloads(machine, before)
    }

    async fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        self.0.applied_events(process, offset, limit)
    }
}

/// An async store, shared: many tasks may drive it at once.
pub(super) struct AsyncDriver<'s, S>(pub(super) &'s S);

impl<S: AsyncStore> Driver for AsyncDriver<'_, S> {
    async fn transaction<W: Work>(&mut self, work: &mut W) -> Result<W::Output, Attempt> {
        let mut tx = self.0.begin().await?;
        match work.run(&mut tx, self.0.secret()).await {
            Ok(answer) => {
                self.0.commit(tx).await?;
                Ok(answer)
            }
            Err(e) => {
                self.0.rollback(tx).await;
                Err(e)
            }
        }
    }

    async fn pause(&mut self, wait: Duration) {
        tokio::time::sleep(wait).await;
    }

    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.0.process(id).await
    }

    async fn claim_due(
        &mut self,
        machine: &str,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.0
            .claim_due_of(now, lease_ms, limit, Some(machine), None)
            .await
    }

    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.0.finish_attempt(attempt).await
    }

    async fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.0.due_processes(machine, version, now, limit).await
    }

    async fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.0.stale_processes(machine, version, after, limit).await
    }

    async fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_applied(machine, before).await
    }

    async fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_outbox(machine, before).await
    }

    async fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.0.purge_payloads(machine, before).await
    }

    async fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        self.0.applied_events(process, offset, limit).await
    }
}

/// Runs `work` (one transaction) until it is not lost to another writer
/// that moved a snapshot, backing off between tries. After
/// `MAX_REVISION_RETRIES` lost races the answer is `Contention`.
pub(super) async fn with_retries<D: Driver, W: Work>(
    driver: &mut D,
    work: &mut W,
) -> Result<W::Output, RuntimeError> {
    for retry in 0..MAX_REVISION_RETRIES {
        if retry > 0 {
            driver.pause(back_off(retry)).await;
        }
        match driver.transaction(work).await {
            Ok(answer) => return Ok(answer),
            Err(Attempt::Lost) => continue,
            Err(Attempt::Failed(e)) => return Err(e),
        }
    }
    Err(RuntimeError::Contention(
        work.contended(),
        MAX_REVISION_RETRIES,
    ))
}

/// A random wait that grows with each lost race, so that writers of one
/// process stop colliding instead of retrying in lockstep.
fn back_off(retry: u32) -> Duration {
    // Tells apart the writers of one thread (async tasks share threads).
    static WAITS: AtomicU64 = AtomicU64::new(0);
    let ceiling_micros = 50u64 << retry.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    // The clock's low bits, mixed with a count of waits, are random enough to
    // spread writers apart; no generator is needed for that.
    let count = WAITS.fetch_add(1, Ordering::Relaxed);
    let jitter =
        (nanos ^ count.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) % ceiling_micros.max(1);
    Duration::from_micros(jitter)
}

/// Writes `plan` in `tx`: the process row first, under its revision check,
/// then the cancels of a lazy migration under `outbox: drop` (`machine`
/// says which rows it still knows), the applied-event rows and the outbox
/// rows.
pub(super) async fn write<T: AsyncTransaction, A>(
    tx: &mut T,
    machine: &Machine,
    plan: &Plan<A>,
) -> Result<(), Attempt> {
    let stored = match &plan.process {
        ProcessWrite::Insert(row) => tx.insert_process(row).await?,
        ProcessWrite::Update {
            id,
            revision,
            snapshot,
            next_timer_at,
        } => {
            tx.update_process(id, *revision, snapshot, *next_timer_at)
                .await?
        }
    };
    if !stored {
        return Err(Attempt::Lost);
    }
    // Read in the transaction that writes the migrated snapshot, so that
    // the cancels commit with it or not at all. The rows this plan adds are
    // of the new machine, and come after.
    if let Some(drop) = &plan.drop_outbox {
        for item in tx.pending_outbox(&drop.process).await? {
            if drop.cancels(machine, &item) {
                tx.cancel_outbox(&item.key).await?;
            }
        }
    }
    for row in &plan.applied {
        tx.insert_applied_event(row).await?;
    }
    for item in &plan.outbox {
        tx.insert_outbox(item).await?;
    }
    for key in &plan.cancelled {
        tx.cancel_outbox(key).await?;
    }
    Ok(())
}

/// Applies one delivery inside `tx`, one statement at a time: the whole
/// per-event contract, for a completion, which settles its outbox row in
/// the same transaction (`apply` and `apply_batch` read and write at once,
/// `batch.rs`).
pub(super) async fn deliver<T: AsyncTransaction>(
    tx: &mut T,
    secret: &StoreSecret,
    chart: &std::sync::Arc<Chart>,
    delivery: &Delivery<'_>,
) -> Result<Outcome, Attempt> {
    let process = delivery.process;
    let applied = tx.applied_event(process, &delivery.id).await?;
    if let Some(answer) = decide::known(delivery, applied.as_ref()) {
        return Ok(answer);
    }
    let current = tx.process(process).await?.into();
    let plan = decide::delivery(chart, secret, delivery, current, &mut None)?;
    write(tx, chart.machine(), &plan).await?;
    Ok(plan.answer)
}
