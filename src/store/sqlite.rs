//! The SQLite store: one file, no server, several processes may share it.
//!
//! WAL lets readers work while one writer commits; `BEGIN IMMEDIATE` takes
//! the write lock at the start of the transaction, so two writers never both
//! read a snapshot and then fail on upgrade; the busy timeout makes a writer
//! wait for the lock instead of failing on mere contention.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::ops::{self, Executor};
use super::sql::{Columns, Dialect, Param, Sql};
use super::{
    AppliedEvent, AttemptRecord, OutboxItem, OutboxStatus, ProcessRow, Store, StoreError,
    StoreSecret, Transaction,
};
use crate::ready::finish;

/// `PRAGMA synchronous`. `Full` survives power loss after a commit returns;
/// `Normal` in WAL mode survives a killed process but may lose the last
/// commits on power loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    Full,
    Normal,
}

#[derive(Clone, Debug)]
pub struct SqliteOptions {
    pub synchronous: Synchronous,
    /// How long a writer waits for the lock before giving up.
    pub busy_timeout: Duration,
    /// How many connections an [`AsyncSqliteStore`](super::AsyncSqliteStore)
    /// keeps open at most: one for its writers, the others for readers (with
    /// one, readers take turns with the writers). [`SqliteStore`] has one.
    pub connections: usize,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(60),
            connections: 4,
        }
    }
}

pub struct SqliteStore {
    conn: Connection,
    secret: StoreSecret,
}

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let mut conn = connect(Connection::open(path).map_err(backend)?, options)?;
        let secret = create_schema(&mut conn)?;
        Ok(SqliteStore { conn, secret })
    }

    /// A private in-memory store, for tests and trials.
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        let mut conn = connect(
            Connection::open_in_memory().map_err(backend)?,
            &SqliteOptions::default(),
        )?;
        let secret = create_schema(&mut conn)?;
        Ok(SqliteStore { conn, secret })
    }

    /// A PRAGMA's current value as text (to check the settings in force).
    pub fn pragma(&self, name: &str) -> Result<String, StoreError> {
        self.conn
            .query_row(&format!("PRAGMA {name}"), [], |row| {
                row.get::<_, rusqlite::types::Value>(0)
            })
            .map(|v| match v {
                rusqlite::types::Value::Integer(i) => i.to_string(),
                rusqlite::types::Value::Text(t) => t,
                other => format!("{other:?}"),
            })
            .map_err(backend)
    }
}

/// Applies `options` to a new connection: busy timeout, WAL, `synchronous`.
pub(crate) fn connect(conn: Connection, options: &SqliteOptions) -> Result<Connection, StoreError> {
    // The timeout goes first so that even switching to WAL waits for
    // another process holding the lock.
    conn.busy_timeout(options.busy_timeout).map_err(backend)?;
    // Switching a new file to WAL needs its exclusive lock, and SQLite
    // answers "busy" at once, without waiting, when another connection
    // opening the same file holds a shared lock and wants it too: wait
    // and try again, as long as the busy timeout allows.
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => break,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < options.busy_timeout =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(backend(e)),
        }
    }
    let sync = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(backend)?;
    // Room for every statement of `sql.rs`, so that none is prepared twice.
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// Creates the tables (and migrates a store of an earlier version), under
/// the write lock like any writer; answers the store's secret.
pub(crate) fn create_schema(conn: &mut Connection) -> Result<StoreSecret, StoreError> {
    immediate(conn, |conn| {
        finish(ops::create_schema(&mut SqliteExec(conn)))
    })
}

/// Runs `body` in a transaction that takes the write lock at its start:
/// committed when it returns `Ok`, rolled back otherwise.
pub(crate) fn immediate<T, E: From<StoreError>>(
    conn: &mut Connection,
    body: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    // Dropping the transaction on an error rolls it back.
    let value = body(&tx)?;
    tx.commit().map_err(backend)?;
    Ok(value)
}

/// Runs statements on one connection (a `rusqlite::Transaction` is one
/// too); every future it returns is ready when first polled.
pub(crate) struct SqliteExec<'c>(pub(crate) &'c Connection);

impl Executor for SqliteExec<'_> {
    /// `prepare_cached` at each statement's run does it.
    async fn prepare(&self, _statements: &[&'static Sql]) -> Result<(), StoreError> {
        Ok(())
    }

    async fn execute(&self, sql: &'static Sql, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let mut statement = self
            .0
            .prepare_cached(sql.text(Dialect::Sqlite))
            .map_err(backend)?;
        let changed = statement
            .execute(rusqlite::params_from_iter(params))
            .map_err(backend)?;
        Ok(changed as u64)
    }

    async fn query<T>(
        &self,
        sql: &'static Sql,
        params: &[Param<'_>],
        decode: fn(&dyn Columns) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut statement = self
            .0
            .prepare_cached(sql.text(Dialect::Sqlite))
            .map_err(backend)?;
        let mut rows = statement
            .query(rusqlite::params_from_iter(params))
            .map_err(backend)?;
        let mut decoded = Vec::new();
        while let Some(row) = rows.next().map_err(backend)? {
            decoded.push(decode(row)?);
        }
        Ok(decoded)
    }

    async fn batch(&self, sql: &'static Sql) -> Result<(), StoreError> {
        self.0
            .execute_batch(sql.text(Dialect::Sqlite))
            .map_err(backend)
    }
}

/// The statements of one transaction, on its connection.
pub(crate) struct SqliteTx<'c>(pub(crate) SqliteExec<'c>);

impl Transaction for SqliteTx<'_> {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        finish(ops::applied_event(&mut self.0, process, event_id))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        finish(ops::process(&mut self.0, id))
    }

    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        finish(ops::insert_process(&mut self.0, row))
    }

    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        finish(ops::update_process(
            &mut self.0,
            id,
            revision,
            snapshot,
            next_timer_at,
        ))
    }

    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        finish(ops::insert_applied_event(&mut self.0, row))
    }

    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        finish(ops::insert_outbox(&mut self.0, item))
    }

    fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        finish(ops::cancel_outbox(&mut self.0, key))
    }

    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        finish(ops::finish_attempt(&mut self.0, attempt))
    }

    fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        finish(ops::outbox_item(&mut self.0, key))
    }

    fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        finish(ops::pending_outbox(&mut self.0, process))
    }

    // `read_rows` and `write_rows` are the trait's, a statement per row: a
    // SQLite statement waits for no server, and the JSON array of rows that
    // PostgreSQL's statements of many rows read costs more here than it saves.
}

impl Store for SqliteStore {
    fn secret(&self) -> &StoreSecret {
        &self.secret
    }

    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        immediate(&mut self.conn, |conn| body(&mut SqliteTx(SqliteExec(conn))))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        finish(ops::process(&mut SqliteExec(&self.conn), id))
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        finish(ops::outbox(&mut SqliteExec(&self.conn), status))
    }

    fn claim_due_of(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        immediate(&mut self.conn, |conn| {
            let exec = &mut SqliteExec(conn);
            finish(ops::claim_due(exec, now, lease_ms, limit, machine, effects))
        })
    }

    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        finish(ops::finish_attempt(&mut SqliteExec(&self.conn), attempt))
    }

    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        finish(ops::due_processes(
            &mut SqliteExec(&self.conn),
            machine,
            version,
            now,
            limit,
        ))
    }

    fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        finish(ops::stale_processes(
            &mut SqliteExec(&self.conn),
            machine,
            version,
            after,
            limit,
        ))
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        finish(ops::purge_applied(
            &mut SqliteExec(&self.conn),
            machine,
            before,
        ))
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        finish(ops::purge_outbox(
            &mut SqliteExec(&self.conn),
            machine,
            before,
        ))
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        finish(ops::requeue_dead(&mut SqliteExec(&self.conn), key, now))
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        finish(ops::applied_count(&mut SqliteExec(&self.conn), process))
    }

    fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        finish(ops::purge_payloads(
            &mut SqliteExec(&self.conn),
            machine,
            before,
        ))
    }

    fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        finish(ops::applied_events(
            &mut SqliteExec(&self.conn),
            process,
            offset,
            limit,
        ))
    }
}

#[cfg(test)]
mod open_tests {
    use super::*;

    /// Many connections opening one new file at once: each switches it to
    /// WAL, which SQLite can refuse at once ("busy") to all but one.
    #[test]
    fn many_connections_open_one_new_file_at_once() {
        let dir = std::env::temp_dir().join(format!("idemchart-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for round in 0..20 {
            let path = dir.join(format!("fresh-{round}.db"));
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(12));
            let threads: Vec<_> = (0..12)
                .map(|_| {
                    let path = path.clone();
                    let barrier = std::sync::Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        barrier.wait();
                        SqliteStore::open(&path, &SqliteOptions::default()).map(|_| ())
                    })
                })
                .collect();
            for t in threads {
                let opened = t.join().expect("the thread runs");
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
