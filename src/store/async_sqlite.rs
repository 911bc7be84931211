//! The SQLite store behind the async API: a small pool of rusqlite
//! connections whose statements run on tokio's blocking threads.
//!
//! SQLite lets one writer in at a time. Writers of this store (transactions
//! and the outbox's updates) therefore queue on an async semaphore of one
//! before they take a connection: they wait in order, without SQLite's busy
//! handler, which sleeps in growing steps, and a reader is never kept out of
//! a connection by writers waiting for the lock. Writers of other processes
//! on the same file still meet at the busy timeout, as with `SqliteStore`.
//! The statements are `sqlite.rs`'s, run through the same operations.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ops;
use super::sqlite::{self, SqliteExec, backend};
use super::{
    AppliedEvent, AsyncStore, AsyncTransaction, OutboxItem, OutboxStatus, ProcessRow,
    SqliteOptions, StoreError,
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
    /// `None` for a private in-memory database, which lives in its one
    /// connection: the pool then never has another, nor closes it.
    path: Option<PathBuf>,
    options: SqliteOptions,
    idle: Mutex<Vec<Connection>>,
    slots: Arc<Semaphore>,
    writer: Arc<Semaphore>,
}

/// A connection taken from the pool, with the permits that let it be
/// taken; dropped, it goes back.
struct Lease {
    pool: Arc<Pool>,
    conn: Option<Connection>,
    _slot: OwnedSemaphorePermit,
    _writer: Option<OwnedSemaphorePermit>,
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
        if conn.is_autocommit()
            && let Ok(mut idle) = self.pool.idle.lock()
        {
            idle.push(conn);
        }
    }
}

fn stopped(e: tokio::task::JoinError) -> StoreError {
    StoreError::Backend(format!("the SQLite worker thread stopped: {e}"))
}

impl Pool {
    async fn lease(self: &Arc<Pool>, write: bool) -> Result<Lease, StoreError> {
        let closed = |_| StoreError::Backend("the SQLite pool is closed".into());
        // The writer's turn first, then a connection: a writer waiting for a
        // connection holds no connection that another would need.
        let writer = match write {
            true => Some(
                Arc::clone(&self.writer)
                    .acquire_owned()
                    .await
                    .map_err(closed)?,
            ),
            false => None,
        };
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(closed)?;
        let conn = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        Ok(Lease {
            pool: Arc::clone(self),
            conn,
            _slot: slot,
            _writer: writer,
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
                sqlite::create_schema(&mut conn)?;
                Ok::<_, StoreError>(conn)
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
                sqlite::create_schema(&mut conn)?;
                Ok::<_, StoreError>(conn)
            })
            .await
            .map_err(stopped)??
        };
        Ok(AsyncSqliteStore::with(None, &options, opened))
    }

    fn with(path: Option<PathBuf>, options: &SqliteOptions, first: Connection) -> Self {
        let connections = if path.is_some() {
            options.connections.max(1)
        } else {
            1
        };
        AsyncSqliteStore {
            pool: Arc::new(Pool {
                path,
                options: options.clone(),
                idle: Mutex::new(vec![first]),
                slots: Arc::new(Semaphore::new(connections)),
                writer: Arc::new(Semaphore::new(1)),
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
pub struct AsyncSqliteTransaction {
    /// `None` only while a statement runs on a blocking thread.
    lease: Option<Lease>,
    /// Whether `BEGIN IMMEDIATE` ran. It runs on the blocking thread of the
    /// first statement, in the same trip: each trip to a blocking thread
    /// costs about as much as a statement.
    begun: bool,
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
        // If this future is dropped while the statement runs, the lease is
        // dropped with the statement's answer, which rolls the transaction
        // back.
        let (lease, answer) = on_thread(lease, move |conn| {
            if begin {
                conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
            }
            Ok(op(conn))
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

    /// Ends the transaction with `statement`, if it ever began.
    async fn end(&mut self, statement: &'static str) -> Result<(), StoreError> {
        if !self.begun {
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

    async fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        let row = row.clone();
        self.run(move |conn| finish(ops::insert_applied_event(&mut SqliteExec(conn), &row)))
            .await
    }

    async fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        let item = item.clone();
        self.run(move |conn| finish(ops::insert_outbox(&mut SqliteExec(conn), &item)))
            .await
    }
}

impl AsyncStore for AsyncSqliteStore {
    type Transaction = AsyncSqliteTransaction;

    /// Takes the writer's turn and a connection; `BEGIN IMMEDIATE` goes
    /// with the first statement.
    async fn begin(&self) -> Result<AsyncSqliteTransaction, StoreError> {
        Ok(AsyncSqliteTransaction {
            lease: Some(self.pool.lease(true).await?),
            begun: false,
        })
    }

    async fn commit(&self, mut tx: AsyncSqliteTransaction) -> Result<(), StoreError> {
        tx.end("COMMIT").await
    }

    async fn rollback(&self, mut tx: AsyncSqliteTransaction) {
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

    async fn claim_due(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.run(true, move |conn| {
            sqlite::immediate(conn, |conn| {
                finish(ops::claim_due(&mut SqliteExec(conn), now, lease_ms, limit))
            })
        })
        .await
    }

    async fn finish_attempt(
        &self,
        key: &str,
        status: OutboxStatus,
        attempts: u32,
        next_attempt_at: u64,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        let (key, last_error) = (key.to_string(), last_error.map(str::to_string));
        self.run(true, move |conn| {
            finish(ops::finish_attempt(
                &mut SqliteExec(conn),
                &key,
                status,
                attempts,
                next_attempt_at,
                last_error.as_deref(),
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

    async fn purge_applied(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let machine = machine.to_string();
        self.run(true, move |conn| {
            finish(ops::purge_applied(&mut SqliteExec(conn), &machine, before))
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
}
