//! A sync [`Store`] over an [`AsyncStore`], driven by a private runtime.
//!
//! Every call waits for the async store's future on a current-thread tokio
//! runtime of its own. Starting a runtime's `block_on` inside another runtime
//! panics in tokio, so inside one the wait moves off the async thread: with
//! `block_in_place` on a multi-thread runtime, on a short-lived thread of its
//! own on a current-thread runtime. The sync API therefore works inside
//! `#[tokio::main]` too (though the async API is the one to use there: a
//! sync call holds its thread for as long as it waits).

use std::future::Future;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use super::{
    AppliedEvent, AsyncStore, AsyncTransaction, AttemptRecord, OutboxItem, OutboxStatus,
    ProcessRow, RowReads, RowWrites, Store, StoreError, StoreSecret, Transaction,
};

/// An async store used through the sync [`Store`] API.
pub struct Blocking<S> {
    // Dropped before the runtime its connections were opened on.
    store: S,
    /// `None` only once dropped.
    runtime: Option<Runtime>,
}

impl<S> std::fmt::Debug for Blocking<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Blocking")
    }
}

/// Waits for `future` on `runtime`, wherever the caller runs.
fn block_on<F>(runtime: &Runtime, future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    match Handle::try_current() {
        Err(_) => runtime.block_on(future),
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| runtime.block_on(future))
        }
        Ok(_) => std::thread::scope(|scope| scope.spawn(|| runtime.block_on(future)).join())
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
    }
}

impl<S: AsyncStore> Blocking<S> {
    /// Opens the store with `open` on a new private runtime, which then runs
    /// every call of the store (and its connections' tasks).
    pub fn open<F, Fut>(open: F) -> Result<Blocking<S>, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, StoreError>> + Send,
        S: Send,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot start a runtime: {e}")))?;
        let store = block_on(&runtime, open())?;
        Ok(Blocking {
            store,
            runtime: Some(runtime),
        })
    }

    /// The async store itself.
    pub fn get_ref(&self) -> &S {
        &self.store
    }

    /// Waits for `future` on this store's runtime, which runs its
    /// connections: how sync code awaits the async API on this store
    /// (`store.block_on(nonblocking::apply(store.get_ref(), …))`).
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        self.wait(future)
    }

    fn wait<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        match &self.runtime {
            Some(runtime) => block_on(runtime, future),
            None => unreachable!("the runtime goes only when the store is dropped"),
        }
    }
}

impl<S> Drop for Blocking<S> {
    fn drop(&mut self) {
        // Dropping a runtime inside another one panics, because it would wait
        // for its tasks there; this one's only tasks are connections, which
        // may as well end in the background.
        if let Some(runtime) = self.runtime.take()
            && Handle::try_current().is_ok()
        {
            runtime.shutdown_background();
        }
    }
}

/// An open transaction of the async store, used through [`Transaction`].
struct BlockingTx<'r, T> {
    runtime: &'r Runtime,
    tx: T,
}

impl<T: AsyncTransaction + Send> Transaction for BlockingTx<'_, T> {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        block_on(self.runtime, self.tx.applied_event(process, event_id))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        block_on(self.runtime, self.tx.process(id))
    }

    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        block_on(self.runtime, self.tx.insert_process(row))
    }

    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        block_on(
            self.runtime,
            self.tx
                .update_process(id, revision, snapshot, next_timer_at),
        )
    }

    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        block_on(self.runtime, self.tx.insert_applied_event(row))
    }

    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        block_on(self.runtime, self.tx.insert_outbox(item))
    }

    fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        block_on(self.runtime, self.tx.cancel_outbox(key))
    }

    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        block_on(self.runtime, self.tx.finish_attempt(attempt))
    }

    fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        block_on(self.runtime, self.tx.outbox_item(key))
    }

    fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        block_on(self.runtime, self.tx.pending_outbox(process))
    }

    fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> Result<RowReads, StoreError> {
        block_on(self.runtime, self.tx.read_rows(marks, processes))
    }

    fn write_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        block_on(self.runtime, self.tx.write_rows(rows))
    }
}

impl<S: AsyncStore> Store for Blocking<S> {
    fn secret(&self) -> &StoreSecret {
        self.store.secret()
    }

    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let Some(runtime) = &self.runtime else {
            unreachable!("the runtime goes only when the store is dropped")
        };
        let mut tx = BlockingTx {
            runtime,
            tx: self.wait(self.store.begin())?,
        };
        match body(&mut tx) {
            Ok(value) => {
                self.wait(self.store.commit(tx.tx))?;
                Ok(value)
            }
            Err(e) => {
                self.wait(self.store.rollback(tx.tx));
                Err(e)
            }
        }
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.wait(self.store.process(id))
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        self.wait(self.store.outbox(status))
    }

    fn claim_due_of(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.wait(
            self.store
                .claim_due_of(now, lease_ms, limit, machine, effects),
        )
    }

    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.wait(self.store.finish_attempt(attempt))
    }

    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.wait(self.store.due_processes(machine, version, now, limit))
    }

    fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.wait(self.store.stale_processes(machine, version, after, limit))
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.wait(self.store.purge_applied(machine, before))
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.wait(self.store.purge_outbox(machine, before))
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        self.wait(self.store.requeue_dead(key, now))
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        self.wait(self.store.applied_count(process))
    }

    fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.wait(self.store.purge_payloads(machine, before))
    }

    fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        self.wait(self.store.applied_events(process, offset, limit))
    }
}
