//! The SQLite store behind the async API: a small pool of rusqlite
//! connections whose statements run on tokio's blocking threads.
//!
//! SQLite lets one writer in at a time. Writers of this store (transactions
//! and the outbox's updates) therefore take turns on an async semaphore of
//! one, and always the same connection: they wait in order, without SQLite's
//! busy handler, which sleeps in growing steps, and the one connection keeps
//! its page cache, which another connection's commit would make it read
//! again. The other connections serve readers, who are never kept waiting
//! by writers. Writers of other
//! processes on the same file still meet at the busy timeout, as with
//! `SqliteStore`. The statements are `sqlite.rs`'s, run through the same
//! operations.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ops;
use super::sqlite::{self, SqliteExec, SqliteTx, backend};
use super::{
    AppliedEvent, AsyncStore, AsyncTransaction, AttemptRecord, OutboxItem, OutboxStatus,
    ProcessRow, RowReads, RowWrites, SqliteOptions, StoreError, StoreSecret, StoreStats,
    Transaction,
};
use crate::ready::finish;

/// A cloneable handle on a pool of connections to one SQLite file.
#[derive(Clone)]
pub struct AsyncSqliteStore {
    pool: Arc<Pool>,
}

impl std::fmt::Debug for AsyncSqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncSqliteStore")
            .field("path", &self.pool.path)
            .finish_non_exhaustive()
    }
}

struct Pool {
    /// Read when the store was opened.
    secret: StoreSecret,
    /// `None` for a private in-memory database, which lives in its one
    /// connection: the pool then never has another, nor closes it.
    path: Option<PathBuf>,
    options: SqliteOptions,
    /// The writers' connection, while no writer has it.
    writer_conn: Mutex<Option<Connection>>,
    writer: Arc<Semaphore>,
    /// The readers' idle connections, and their turns; `None` when readers
    /// share the writers' connection (an in-memory store, or a pool of one).
    readers: Option<(Mutex<Vec<Connection>>, Arc<Semaphore>)>,
}

/// A connection taken from the pool, with the turn that let it be taken;
/// dropped, it goes back where it came from.
struct Lease {
    pool: Arc<Pool>,
    conn: Option<Connection>,
    writes: bool,
    _turn: OwnedSemaphorePermit,
}

impl Lease {
    fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        if self.conn.is_none() {
            let Some(path) = &self.pool.path else {
                return Err(StoreError::Backend(
                    "the in-memory store's connection is gone".into(),
                ));
            };
            let conn = Connection::open(path).map_err(backend)?;
            self.conn = Some(sqlite::connect(conn, &self.pool.options)?);
        }
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::Backend("no connection".into()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        // A transaction left open (its task was cancelled mid-way) is rolled
        // back before anyone else gets the connection; one that will not roll
        // back goes with the connection, which SQLite then rolls back.
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        if !conn.is_autocommit() {
            return;
        }
        match (&self.pool.readers, self.writes) {
            (Some((idle, _)), false) => {
                if let Ok(mut idle) = idle.lock() {
                    idle.push(conn);
                }
            }
            _ => {
                if let Ok(mut writer) = self.pool.writer_conn.lock() {
                    *writer = Some(conn);
                }
            }
        }
    }
}

fn stopped(e: tokio::task::JoinError) -> StoreError {
    StoreError::Backend(format!("the SQLite worker thread stopped: {e}"))
}

impl Pool {
    async fn lease(self: &Arc<Pool>, write: bool) -> Result<Lease, StoreError> {
        let closed = |_| StoreError::Backend("the SQLite pool is closed".into());
        let (turns, writes) = match &self.readers {
            Some((_, turns)) if !write => (turns, false),
            _ => (&self.writer, true),
        };
        let turn = Arc::clone(turns).acquire_owned().await.map_err(closed)?;
        let conn = match (&self.readers, writes) {
            (Some((idle, _)), false) => idle.lock().ok().and_then(|mut idle| idle.pop()),
            _ => self
                .writer_conn
                .lock()
                .ok()
                .and_then(|mut conn| conn.take()),
        };
        Ok(Lease {
            pool: Arc::clone(self),
            conn,
            writes,
            _turn: turn,
        })
    }
}

/// Runs `op` on the lease's connection on a blocking thread, and hands the
/// lease back with its answer.
async fn on_thread<T: Send + 'static>(
    mut lease: Lease,
    op: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
) -> Result<(Lease, Result<T, StoreError>), StoreError> {
    tokio::task::spawn_blocking(move || {
        let answer = lease.connection().and_then(op);
        (lease, answer)
    })
    .await
    .map_err(stopped)
}

impl AsyncSqliteStore {
    /// Opens (creating if needed) the store at `path`, with at most
    /// `options.connections` connections.
    pub async fn open(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<AsyncSqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let opened = {
            let (path, options) = (path.clone(), options.clone());
            tokio::task::spawn_blocking(move || {
                let mut conn = sqlite::connect(Connection::open(path).map_err(backend)?, &options)?;
                let secret = sqlite::create_schema(&mut conn)?;
                Ok::<_, StoreError>((conn, secret))
            })
            .await
            .map_err(stopped)??
        };
        Ok(AsyncSqliteStore::with(Some(path), options, opened))
    }

    /// A private in-memory store, for tests and trials: one connection.
    pub async fn in_memory() -> Result<AsyncSqliteStore, StoreError> {
        let options = SqliteOptions {
            connections: 1,
            ..SqliteOptions::default()
        };
        let opened = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || {
                let mut conn =
                    sqlite::connect(Connection::open_in_memory().map_err(backend)?, &options)?;
                let secret = sqlite::create_schema(&mut conn)?;
                Ok::<_, StoreError>((conn, secret))
            })
            .await
            .map_err(stopped)??
        };
        Ok(AsyncSqliteStore::with(None, &options, opened))
    }

    /// A pool whose writers use `first`; readers get connections of their
    /// own, up to `options.connections` in all, but for an in-memory store.
    /// `opened` is the first connection and the secret it read.
    fn with(
        path: Option<PathBuf>,
        options: &SqliteOptions,
        (first, secret): (Connection, StoreSecret),
    ) -> Self {
        let readers = match path {
            Some(_) if options.connections > 1 => Some((
                Mutex::new(Vec::new()),
                Arc::new(Semaphore::new(options.connections - 1)),
            )),
            _ => None,
        };
        AsyncSqliteStore {
            pool: Arc::new(Pool {
                secret,
                path,
                options: options.clone(),
                writer_conn: Mutex::new(Some(first)),
                writer: Arc::new(Semaphore::new(1)),
                readers,
            }),
        }
    }

    /// Runs `op` on a connection of the pool, as a writer when `write`.
    async fn run<T: Send + 'static>(
        &self,
        write: bool,
        op: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let lease = self.pool.lease(write).await?;
        on_thread(lease, op).await?.1
    }
}

/// An open transaction: its connection, and the writer's turn.
///
/// Each trip to a blocking thread costs about as much as a statement, so a
/// transaction makes as few as it can: `BEGIN IMMEDIATE` goes with the
/// first statement, and the writes whose only answer is success (the
/// applied-event and outbox rows, cancelled and settled outbox rows) wait
/// for the next statement, or the commit, and go with it, in their order and
/// before it. A write that fails then fails that statement, or the commit,
/// and nothing is committed.
pub struct AsyncSqliteTransaction {
    /// `None` only while a statement runs on a blocking thread.
    lease: Option<Lease>,
    /// Whether `BEGIN IMMEDIATE` ran.
    begun: bool,
    /// Writes not yet sent, in order.
    pending: Vec<Deferred>,
}

/// A write whose only answer is success, waiting for the transaction's next
/// trip.
enum Deferred {
    Applied(AppliedEvent),
    Outbox(OutboxItem),
    Cancel(String),
    Finish(OwnedAttempt),
}

/// An [`AttemptRecord`] that can go to a blocking thread.
struct OwnedAttempt {
    key: String,
    status: OutboxStatus,
    attempts: u32,
    next_attempt_at: u64,
    last_error: Option<String>,
}

impl From<&AttemptRecord<'_>> for OwnedAttempt {
    fn from(attempt: &AttemptRecord<'_>) -> OwnedAttempt {
        OwnedAttempt {
            key: attempt.key.to_string(),
            status: attempt.status,
            attempts: attempt.attempts,
            next_attempt_at: attempt.next_attempt_at,
            last_error: attempt.last_error.map(str::to_string),
        }
    }
}

impl OwnedAttempt {
    fn record(&self) -> AttemptRecord<'_> {
        AttemptRecord {
            key: &self.key,
            status: self.status,
            attempts: self.attempts,
            next_attempt_at: self.next_attempt_at,
            last_error: self.last_error.as_deref(),
        }
    }
}

impl AsyncSqliteTransaction {
    async fn run<T: Send + 'static>(
        &mut self,
        op: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let lease = self
            .lease
            .take()
            .ok_or_else(|| StoreError::Backend("the transaction's connection is gone".into()))?;
        let begin = !self.begun;
        let pending = std::mem::take(&mut self.pending);
        // If this future is dropped while the statement runs, the lease is
        // dropped with the statement's answer, which rolls the transaction
        // back.
        let (lease, answer) = on_thread(lease, move |conn| {
            if begin {
                conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
            }
            let sent = pending.iter().try_for_each(|insert| {
                let exec = &mut SqliteExec(conn);
                match insert {
                    Deferred::Applied(row) => finish(ops::insert_applied_event(exec, row)),
                    Deferred::Outbox(item) => finish(ops::insert_outbox(exec, item)),
                    Deferred::Cancel(key) => finish(ops::cancel_outbox(exec, key)),
                    Deferred::Finish(attempt) => {
                        finish(ops::finish_attempt(exec, &attempt.record()))
                    }
                }
            });
            Ok(sent.and_then(|()| op(conn)))
        })
        .await?;
        self.lease = Some(lease);
        // The outer `Err` is a failed `BEGIN`, which leaves no transaction
        // open; once it succeeded, the transaction has begun for good, even
        // if SQLite ends it on a statement's error (then the work stops).
        let answer = answer?;
        self.begun = true;
        answer
    }

    /// Ends the transaction with `statement` (after the inserts still
    /// waiting), if it ever began.
    async fn end(&mut self, statement: &'static str) -> Result<(), StoreError> {
        if !self.begun && self.pending.is_empty() {
            return Ok(());
        }
        self.run(move |conn| conn.execute_batch(statement).map_err(backend))
            .await
    }
}

impl AsyncTransaction for AsyncSqliteTransaction {
    async fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        let (process, event_id) = (process.to_string(), event_id.to_string());
        self.run(move |conn| {
            finish(ops::applied_event(
                &mut SqliteExec(conn),
                &process,
                &event_id,
            ))
        })
        .await
    }

    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        let id = id.to_string();
        self.run(move |conn| finish(ops::process(&mut SqliteExec(conn), &id)))
            .await
    }

    async fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        let row = row.clone();
        self.run(move |conn| finish(ops::insert_process(&mut SqliteExec(conn), &row)))
            .await
    }

    async fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        let (id, snapshot) = (id.to_string(), snapshot.to_string());
        self.run(move |conn| {
            finish(ops::update_process(
                &mut SqliteExec(conn),
                &id,
                revision,
                &snapshot,
                next_timer_at,
            ))
        })
        .await
    }

    /// Sent with the next statement or the commit (see the type).
    async fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        self.pending.push(Deferred::Applied(row.clone()));
        Ok(())
    }

    /// Sent with the next statement or the commit (see the type).
    async fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        self.pending.push(Deferred::Outbox(item.clone()));
        Ok(())
    }

    async fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        self.pending.push(Deferred::Cancel(key.to_string()));
        Ok(())
    }

    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.pending.push(Deferred::Finish(attempt.into()));
        Ok(())
    }

    async fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        let key = key.to_string();
        self.run(move |conn| finish(ops::outbox_item(&mut SqliteExec(conn), &key)))
            .await
    }

    async fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        let process = process.to_string();
        self.run(move |conn| finish(ops::pending_outbox(&mut SqliteExec(conn), &process)))
            .await
    }

    async fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> Result<RowReads, StoreError> {
        let marks: Vec<(String, String)> = marks
            .iter()
            .map(|(process, id)| (process.to_string(), id.to_string()))
            .collect();
        let processes: Vec<String> = processes.iter().map(|id| id.to_string()).collect();
        // A statement per row, as `SqliteStore` reads them (see there).
        self.run(move |conn| {
            let marks: Vec<(&str, &str)> = marks.iter().map(|(p, i)| (&**p, &**i)).collect();
            let processes: Vec<&str> = processes.iter().map(String::as_str).collect();
            SqliteTx(SqliteExec(conn)).read_rows(&marks, &processes)
        })
        .await
    }

    async fn write_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        let rows = rows.clone();
        self.run(move |conn| SqliteTx(SqliteExec(conn)).write_rows(&rows))
            .await
    }
}

impl AsyncStore for AsyncSqliteStore {
    type Transaction = AsyncSqliteTransaction;

    fn secret(&self) -> &StoreSecret {
        &self.pool.secret
    }

    /// Takes the writer's turn and a connection; `BEGIN IMMEDIATE` goes
    /// with the first statement.
    async fn begin(&self) -> Result<AsyncSqliteTransaction, StoreError> {
        Ok(AsyncSqliteTransaction {
            lease: Some(self.pool.lease(true).await?),
            begun: false,
            pending: Vec::new(),
        })
    }

    async fn commit(&self, mut tx: AsyncSqliteTransaction) -> Result<(), StoreError> {
        tx.end("COMMIT").await
    }

    async fn rollback(&self, mut tx: AsyncSqliteTransaction) {
        tx.pending.clear();
        // A failed rollback leaves the transaction open on its connection,
        // and the lease rolls it back (or drops the connection) on its way
        // back to the pool.
        let _ = tx.end("ROLLBACK").await;
    }

    async fn process(&self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        let id = id.to_string();
        self.run(false, move |conn| {
            finish(ops::process(&mut SqliteExec(conn), &id))
        })
        .await
    }

    async fn outbox(&self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        self.run(false, move |conn| {
            finish(ops::outbox(&mut SqliteExec(conn), status))
        })
        .await
    }

    async fn claim_due_of(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let machine = machine.map(str::to_string);
        let effects = effects.map(<[String]>::to_vec);
        self.run(true, move |conn| {
            sqlite::immediate(conn, |conn| {
                let exec = &mut SqliteExec(conn);
                let (machine, effects) = (machine.as_deref(), effects.as_deref());
                finish(ops::claim_due(exec, now, lease_ms, limit, machine, effects))
            })
        })
        .await
    }

    async fn finish_attempt(&self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        let attempt = OwnedAttempt::from(attempt);
        self.run(true, move |conn| {
            finish(ops::finish_attempt(
                &mut SqliteExec(conn),
                &attempt.record(),
            ))
        })
        .await
    }

    async fn due_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let machine = machine.to_string();
        self.run(false, move |conn| {
            finish(ops::due_processes(
                &mut SqliteExec(conn),
                &machine,
                version,
                now,
                limit,
            ))
        })
        .await
    }

    async fn stale_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let (machine, after) = (machine.to_string(), after.map(str::to_string));
        self.run(false, move |conn| {
            finish(ops::stale_processes(
                &mut SqliteExec(conn),
                &machine,
                version,
                after.as_deref(),
                limit,
            ))
        })
        .await
    }

    async fn processes_of(
        &self,
        machine: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ProcessRow>, StoreError> {
        let (machine, after) = (machine.to_string(), after.map(str::to_string));
        self.run(false, move |conn| {
            finish(ops::processes_of(
                &mut SqliteExec(conn),
                &machine,
                after.as_deref(),
                limit,
            ))
        })
        .await
    }

    async fn outbox_of(&self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        let process = process.to_string();
        self.run(false, move |conn| {
            finish(ops::outbox_of(&mut SqliteExec(conn), &process))
        })
        .await
    }

    async fn purge_applied(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let machine = machine.to_string();
        self.run(true, move |conn| {
            finish(ops::purge_applied(&mut SqliteExec(conn), &machine, before))
        })
        .await
    }

    async fn purge_payloads(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let machine = machine.to_string();
        self.run(true, move |conn| {
            finish(ops::purge_payloads(&mut SqliteExec(conn), &machine, before))
        })
        .await
    }

    async fn purge_outbox(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let machine = machine.to_string();
        self.run(true, move |conn| {
            finish(ops::purge_outbox(&mut SqliteExec(conn), &machine, before))
        })
        .await
    }

    async fn requeue_dead(&self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        let key = key.map(str::to_string);
        self.run(true, move |conn| {
            finish(ops::requeue_dead(
                &mut SqliteExec(conn),
                key.as_deref(),
                now,
            ))
        })
        .await
    }

    async fn applied_count(&self, process: &str) -> Result<usize, StoreError> {
        let process = process.to_string();
        self.run(false, move |conn| {
            finish(ops::applied_count(&mut SqliteExec(conn), &process))
        })
        .await
    }

    async fn applied_events(
        &self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        let process = process.to_string();
        self.run(false, move |conn| {
            finish(ops::applied_events(
                &mut SqliteExec(conn),
                &process,
                offset,
                limit,
            ))
        })
        .await
    }

    async fn stats(&self, now: u64) -> Result<StoreStats, StoreError> {
        self.run(false, move |conn| {
            finish(ops::stats(&mut SqliteExec(conn), now))
        })
        .await
    }
}
