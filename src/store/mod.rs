//! Durable storage for the runtime: process snapshots, applied event ids with
//! their frozen responses, and the outbox of effects.
//!
//! Two APIs are transaction-shaped alike. The sync one ([`Store`]) runs a
//! closure inside [`Store::transaction`]; the async one ([`AsyncStore`])
//! begins a transaction, runs statements on it and commits or rolls it back.
//! Either way `apply`'s read–decide–write sequence is one transaction, so the
//! mark, the snapshot and the outbox rows are committed together or not at
//! all.
//!
//! Each store's SQL is written once (`sql.rs`) and run by operations written
//! once (`ops.rs`) over a connection of either driver. The SQLite stores are
//! [`SqliteStore`] (one connection) and [`AsyncSqliteStore`] (a small pool on
//! tokio's blocking threads); the PostgreSQL ones are [`AsyncPostgresStore`]
//! (a deadpool pool of tokio-postgres connections) and [`PostgresStore`], the
//! same store driven by a private runtime through [`Blocking`].

mod async_sqlite;
mod blocking;
mod dispatch_only;
mod migrate;
mod open;
mod ops;
#[cfg(feature = "postgres")]
pub mod postgres;
mod sql;
pub mod sqlite;

use std::future::Future;

pub use async_sqlite::AsyncSqliteStore;
pub use blocking::Blocking;
pub use dispatch_only::DispatchOnly;
pub use open::{AnyAsyncStore, AnyStore, OpenError, StoreAddress, open, open_async};
#[cfg(feature = "postgres")]
pub use postgres::{AsyncPostgresStore, PostgresStore};
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};

/// A process row: the snapshot of one running machine.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessRow {
    pub id: String,
    pub machine: String,
    pub version: Option<u64>,
    /// The `interp::Snapshot` as JSON.
    pub snapshot: String,
    pub revision: u64,
    /// When the snapshot's earliest timer is due, in milliseconds since the
    /// Unix epoch (the clock of a stored actor); `None` when it has none.
    /// Written with every snapshot, so that schedulers can find due
    /// processes without reading snapshots.
    pub next_timer_at: Option<u64>,
}

/// An applied event: its payload hash and the first response, frozen.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedEvent {
    pub process: String,
    pub event_id: String,
    pub payload_hash: String,
    /// The response exactly as first sent; a duplicate receives these bytes.
    pub response: String,
    pub revision: u64,
    /// Milliseconds since the Unix epoch (from the caller's clock).
    pub applied_at: u64,
    /// The event as JSON (`{"type", "id", "data"}`), kept only when the
    /// machine keeps a history (`history: { keep }`) and until `purge`
    /// clears it; `None` for a timer firing, whose response says what fired.
    pub payload: Option<String>,
}

/// Where an outbox row is in its life. Stored as the text of `as_str`, so a
/// new status is a new variant here and nothing in the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutboxStatus {
    Pending,
    Done,
    /// Given up after too many attempts; an operator decides.
    Dead,
    /// The handler could not tell whether the effect happened; the machine
    /// was told with an event and decides (for example by verifying).
    Unknown,
    /// An invocation whose state was exited before it was performed: a
    /// dispatcher never performs it, and a late answer is ignored.
    Cancelled,
    /// An invocation the receiver refused for good: the machine was told
    /// with the invocation's error event.
    Failed,
}

impl OutboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Pending => "pending",
            OutboxStatus::Done => "done",
            OutboxStatus::Dead => "dead",
            OutboxStatus::Unknown => "unknown",
            OutboxStatus::Cancelled => "cancelled",
            OutboxStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<OutboxStatus> {
        Some(match text {
            "pending" => OutboxStatus::Pending,
            "done" => OutboxStatus::Done,
            "dead" => OutboxStatus::Dead,
            "unknown" => OutboxStatus::Unknown,
            "cancelled" => OutboxStatus::Cancelled,
            "failed" => OutboxStatus::Failed,
            _ => return None,
        })
    }
}

/// One effect waiting to leave, or that has left.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxItem {
    pub process: String,
    pub event_id: String,
    pub position: u32,
    /// Stable across retries: the receiver deduplicates by it.
    pub key: String,
    pub effect: String,
    /// The evaluated arguments as JSON.
    pub args: String,
    pub status: OutboxStatus,
    pub attempts: u32,
    pub next_attempt_at: u64,
    pub last_error: Option<String>,
    /// For an invocation, its id: the dispatcher answers the process with
    /// the invocation's completion event (`effect` is its `src`, `args` its
    /// input). `None` for an effect.
    pub invocation: Option<String>,
}

/// The next revision of a process row, written only if the row is still at
/// the revision read.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessUpdate {
    pub id: String,
    /// The revision read; the row is written only if it is still there.
    pub read: u64,
    /// The revision written (more than one past `read` when a batch applied
    /// several events to the process).
    pub revision: u64,
    pub snapshot: String,
    pub next_timer_at: Option<u64>,
}

/// What a transaction writes at once (`Transaction::write_rows`): new
/// process rows, updates of others (at most one per process), applied-event
/// rows, outbox rows, and the keys of pending outbox rows to cancel, in
/// that order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowWrites {
    pub inserts: Vec<ProcessRow>,
    pub updates: Vec<ProcessUpdate>,
    pub applied: Vec<AppliedEvent>,
    pub outbox: Vec<OutboxItem>,
    pub cancelled: Vec<String>,
}

impl RowWrites {
    pub fn is_empty(&self) -> bool {
        self.inserts.is_empty()
            && self.updates.is_empty()
            && self.applied.is_empty()
            && self.outbox.is_empty()
            && self.cancelled.is_empty()
    }
}

/// What a transaction reads at once (`Transaction::read_rows`): the
/// applied-event rows of some `(process, event id)` pairs, and some
/// process rows; those not stored are absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowReads {
    pub applied: Vec<AppliedEvent>,
    pub processes: Vec<ProcessRow>,
}

/// The store's secret: 32 random bytes made with the schema and kept in the
/// store (`store_secrets`), read at every open. The outgoing idempotency
/// keys and the completion tokens are HMACs under it
/// (`runtime::idempotency_key`), so two stores never share a key, and
/// whoever holds a key cannot make the token that completes its row.
///
/// Its `Debug` shows no bytes, so that it never reaches a log.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreSecret([u8; 32]);

impl StoreSecret {
    /// A secret of these bytes (for tests and tools that open a store's
    /// rows themselves).
    pub fn from_bytes(bytes: [u8; 32]) -> StoreSecret {
        StoreSecret(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// 32 bytes from the operating system's generator.
    pub(crate) fn random() -> Result<StoreSecret, StoreError> {
        let mut bytes = [0; 32];
        getrandom::fill(&mut bytes).map_err(|e| {
            StoreError::Backend(format!("no random bytes for the store's secret: {e}"))
        })?;
        Ok(StoreSecret(bytes))
    }

    /// The stored text: 64 lowercase hex digits.
    pub(crate) fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn from_hex(text: &str) -> Result<StoreSecret, StoreError> {
        let corrupt = || StoreError::Corrupt("the store's secret is not 64 hex digits".into());
        if text.len() != 64 || !text.is_ascii() {
            return Err(corrupt());
        }
        let mut bytes = [0; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| corrupt())?;
        }
        Ok(StoreSecret(bytes))
    }
}

impl std::fmt::Debug for StoreSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreSecret(..)")
    }
}

/// Gauges of a store at one moment, for a service's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Outbox rows waiting for dispatch (due or not).
    pub outbox_pending: u64,
    /// Outbox rows given up on, waiting for an operator.
    pub outbox_dead: u64,
    /// Processes whose next timer is due.
    pub timers_due: u64,
}

/// A storage failure. None of these is an answer to the sender: the
/// transaction was rolled back and the event may be sent again.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Backend(String),
    /// Another writer won a race on the same rows (a unique key inserted
    /// concurrently, a serialization failure, a deadlock): start over.
    #[error("store: lost a race with another writer: {0}")]
    Race(String),
    #[error("store: corrupt row: {0}")]
    Corrupt(String),
}

/// The operations `apply` needs inside one transaction.
pub trait Transaction {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError>;
    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError>;
    /// Inserts a new process; `false` when another writer created it first.
    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError>;
    /// Writes `snapshot` and its `next_timer_at` at `revision + 1` only if
    /// the row is still at `revision`; `false` when another writer moved it.
    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError>;
    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError>;
    /// Inserts an outbox row unless one with its key exists: an id applied
    /// again after its retention window yields the same keys, and the
    /// effect already in the outbox (and at the receiver) stands for it.
    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError>;
    /// Marks the pending row with `key` cancelled (an invocation whose
    /// state was exited); a row already settled stays as it is.
    fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError>;
    /// [`Store::finish_attempt`] inside this transaction, so that an
    /// invocation's row is settled with the completion it delivers.
    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError>;
    /// The outbox row with `key`, if there is one.
    fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError>;
    /// The pending outbox rows of `process`, in the order they were written.
    fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError>;
    /// The applied-event rows of `marks` (`(process, event id)` pairs) and
    /// the rows of `processes`, in one round trip where the store has them.
    /// The stores of this crate read each table's rows in one statement;
    /// this default, for a transaction that wraps another, one row at a time.
    fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> Result<RowReads, StoreError> {
        let mut read = RowReads::default();
        for (process, event_id) in marks {
            read.applied.extend(self.applied_event(process, event_id)?);
        }
        for id in processes {
            read.processes.extend(self.process(id)?);
        }
        Ok(read)
    }
    /// Writes `rows`, each table's rows in one statement, the statements in
    /// one round trip where the store has them; answers the first process
    /// whose row was not written (another writer moved or created it),
    /// `None` when every one was. This default writes one row at a time,
    /// and an update one revision at a time, as `update_process` does.
    fn write_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        for row in &rows.inserts {
            if !self.insert_process(row)? {
                return Ok(Some(row.id.clone()));
            }
        }
        for update in &rows.updates {
            for read in update.read..update.revision {
                let (snapshot, next) = (&update.snapshot, update.next_timer_at);
                if !self.update_process(&update.id, read, snapshot, next)? {
                    return Ok(Some(update.id.clone()));
                }
            }
        }
        for row in &rows.applied {
            self.insert_applied_event(row)?;
        }
        for item in &rows.outbox {
            self.insert_outbox(item)?;
        }
        for key in &rows.cancelled {
            self.cancel_outbox(key)?;
        }
        Ok(None)
    }
}

/// The result of one attempt on an outbox row, as `finish_attempt` records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttemptRecord<'a> {
    pub key: &'a str,
    pub status: OutboxStatus,
    pub attempts: u32,
    pub next_attempt_at: u64,
    pub last_error: Option<&'a str>,
}

/// A durable store. Implementations must make `transaction` atomic: either
/// everything the closure wrote is committed, or nothing is.
pub trait Store {
    /// The store's secret, read when it was opened.
    fn secret(&self) -> &StoreSecret;

    /// Runs `body` in one transaction, committing when it returns `Ok` and
    /// rolling back when it returns `Err`.
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>;

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError>;

    /// Outbox rows in process, event, position order, optionally only those
    /// with one status.
    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError>;

    /// Pending rows due at `now`, oldest first, at most `limit`; each claimed
    /// row's `next_attempt_at` moves to `now + lease_ms` so another
    /// dispatcher does not take it while this one works on it.
    fn claim_due(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.claim_due_of(now, lease_ms, limit, None, None)
    }

    /// [`claim_due`](Store::claim_due) of the rows of the processes of
    /// `machine` only when it is named, and of the `effects` named when
    /// there are: a dispatcher answers rows with its machine's chart, and
    /// one that serves some effects leaves the others in the outbox,
    /// untouched, for another.
    fn claim_due_of(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError>;

    /// Records the result of one attempt on the row with `key`.
    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError>;

    /// Ids of processes of `machine` at `version` whose next timer is due at
    /// `now`, earliest first, at most `limit`. Nothing is claimed: two
    /// schedulers may get the same id, and the revision check lets only one
    /// of them fire each timer.
    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

    /// Ids of processes of `machine` whose version is not `version`, after
    /// the id `after` when it is given, in id order, at most `limit`: the
    /// processes `runtime::migrate_stored` moves, one page at a time.
    fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

    /// Deletes applied-event rows of processes of `machine` applied before
    /// `before`; returns how many.
    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;

    /// Deletes the settled outbox rows (done, cancelled, or unknown or
    /// failed and told to the machine) of processes of `machine` last attempted before `before`;
    /// returns how many. Pending rows wait for dispatch and dead rows for an
    /// operator, so both stay.
    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;

    /// Puts dead rows back in the queue, due at `now` with no attempts
    /// counted: the row with `key`, or every dead row; returns how many.
    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError>;

    /// How many applied-event rows a process has (for tests and `inspect`).
    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError>;

    /// Clears the payloads of applied-event rows of processes of `machine`
    /// applied before `before` (the rows stay, for deduplication); returns
    /// how many.
    fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError>;

    /// See [`AsyncStore::applied_events`].
    fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError>;
}

/// The statements `apply` runs inside one transaction of an [`AsyncStore`]:
/// [`Transaction`]'s, as futures. The futures are `Send`, so that a server's
/// handler can await them on any worker thread.
pub trait AsyncTransaction {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> impl Future<Output = Result<Option<AppliedEvent>, StoreError>> + Send;
    fn process(
        &mut self,
        id: &str,
    ) -> impl Future<Output = Result<Option<ProcessRow>, StoreError>> + Send;
    /// Inserts a new process; `false` when another writer created it first.
    fn insert_process(
        &mut self,
        row: &ProcessRow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Writes `snapshot` and its `next_timer_at` at `revision + 1` only if
    /// the row is still at `revision`; `false` when another writer moved it.
    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    fn insert_applied_event(
        &mut self,
        row: &AppliedEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Inserts an outbox row unless one with its key exists.
    fn insert_outbox(
        &mut self,
        item: &OutboxItem,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// See [`Transaction::cancel_outbox`].
    fn cancel_outbox(&mut self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// See [`Transaction::finish_attempt`].
    fn finish_attempt(
        &mut self,
        attempt: &AttemptRecord<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// See [`Transaction::outbox_item`].
    fn outbox_item(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<OutboxItem>, StoreError>> + Send;
    /// See [`Transaction::pending_outbox`].
    fn pending_outbox(
        &mut self,
        process: &str,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send;
    /// See [`Transaction::read_rows`].
    fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> impl Future<Output = Result<RowReads, StoreError>> + Send;
    /// See [`Transaction::write_rows`].
    fn write_rows(
        &mut self,
        rows: &RowWrites,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
    /// Writes `rows` as `write_rows` does, as the transaction's last
    /// statements: only `commit` (or, when this fails or answers a process,
    /// `rollback`) follows. A store may send its commit with the writes
    /// and save a round trip; the transaction is then over, committed when
    /// this answers `Ok(None)` and rolled back otherwise, and `commit` and
    /// `rollback` have nothing left to do. PostgreSQL's does; this default
    /// leaves the commit to `commit`.
    fn write_last_rows(
        &mut self,
        rows: &RowWrites,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        self.write_rows(rows)
    }
}

/// A durable store with an async API: [`Store`]'s operations as `Send`
/// futures over `&self`, so that one handle (cheap to clone, or shared in an
/// `Arc`) serves many tasks at once, each call on a connection of its pool.
///
/// A transaction is begun, used and then committed or rolled back; one that
/// is dropped unfinished (its task was cancelled) is rolled back, never
/// committed.
pub trait AsyncStore: Send + Sync {
    type Transaction: AsyncTransaction + Send;

    /// See [`Store::secret`].
    fn secret(&self) -> &StoreSecret;

    fn begin(&self) -> impl Future<Output = Result<Self::Transaction, StoreError>> + Send;
    fn commit(&self, tx: Self::Transaction) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Rolls back; a failure to roll back leaves nothing committed either.
    fn rollback(&self, tx: Self::Transaction) -> impl Future<Output = ()> + Send;

    fn process(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<ProcessRow>, StoreError>> + Send;
    /// See [`Store::outbox`].
    fn outbox(
        &self,
        status: Option<OutboxStatus>,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send;
    /// See [`Store::claim_due`].
    fn claim_due(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send {
        self.claim_due_of(now, lease_ms, limit, None, None)
    }
    /// See [`Store::claim_due_of`].
    fn claim_due_of(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send;
    /// See [`Store::finish_attempt`].
    fn finish_attempt(
        &self,
        attempt: &AttemptRecord<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// See [`Store::due_processes`].
    fn due_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
    /// See [`Store::stale_processes`].
    fn stale_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
    /// See [`Store::purge_applied`].
    fn purge_applied(
        &self,
        machine: &str,
        before: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
    /// See [`Store::purge_outbox`].
    fn purge_outbox(
        &self,
        machine: &str,
        before: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
    /// See [`Store::purge_payloads`].
    fn purge_payloads(
        &self,
        machine: &str,
        before: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
    /// See [`Store::requeue_dead`].
    fn requeue_dead(
        &self,
        key: Option<&str>,
        now: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
    fn applied_count(
        &self,
        process: &str,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
    /// The applied events of `process` in the order they were applied (by
    /// revision), skipping `offset`, at most `limit`.
    fn applied_events(
        &self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<AppliedEvent>, StoreError>> + Send;
    /// One page of the process rows of `machine`, after the id `after` when
    /// it is given, in id order, at most `limit` (the inspector's lists).
    fn processes_of(
        &self,
        machine: &str,
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ProcessRow>, StoreError>> + Send;
    /// Every outbox row of `process`, whatever its status, in the order
    /// they were written.
    fn outbox_of(
        &self,
        process: &str,
    ) -> impl Future<Output = Result<Vec<OutboxItem>, StoreError>> + Send;
    /// The outbox and timer gauges at `now`.
    fn stats(&self, now: u64) -> impl Future<Output = Result<StoreStats, StoreError>> + Send;
}
