//! The SQLite store: one file, no server, several processes may share it.
//!
//! WAL lets readers work while one writer commits; `BEGIN IMMEDIATE` takes
//! the write lock at the start of the transaction, so two writers never both
//! read a snapshot and then fail on upgrade; the busy timeout makes a writer
//! wait for the lock instead of failing on mere contention.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{
    AppliedEvent, OutboxItem, OutboxStatus, ProcessRow, Store, StoreError, Transaction, migrate,
};

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
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(60),
        }
    }
}

pub struct SqliteStore {
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version INTEGER,
    snapshot TEXT NOT NULL,
    revision INTEGER NOT NULL,
    next_timer_at INTEGER
);
CREATE TABLE IF NOT EXISTS applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision INTEGER NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX IF NOT EXISTS applied_events_applied_at ON applied_events (applied_at);
CREATE TABLE IF NOT EXISTS outbox (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    effect TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT,
    PRIMARY KEY (process, event_id, position)
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at);
";

/// Made after `SCHEMA` and the migration, which may first add the column.
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS processes_next_timer ON processes (next_timer_at);
";

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path).map_err(backend)?;
        Self::configure(conn, options)
    }

    /// A private in-memory store, for tests and trials.
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        Self::configure(conn, &SqliteOptions::default())
    }

    fn configure(conn: Connection, options: &SqliteOptions) -> Result<SqliteStore, StoreError> {
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
        let mut store = SqliteStore { conn };
        // Creating the tables takes the write lock like any writer.
        let tx = store
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        tx.execute_batch(SCHEMA).map_err(backend)?;
        add_next_timer_at(&tx)?;
        tx.execute_batch(INDEXES).map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(store)
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

/// Adds `next_timer_at` to a `processes` table made by an earlier version
/// and rebases its snapshots' clocks (see `store::migrate`).
fn add_next_timer_at(tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
    let present: bool = tx
        .query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('processes') WHERE name = 'next_timer_at'",
            [],
            |row| row.get(0),
        )
        .map_err(backend)?;
    if present {
        return Ok(());
    }
    tx.execute_batch("ALTER TABLE processes ADD COLUMN next_timer_at INTEGER")
        .map_err(backend)?;
    let rows = {
        let mut stmt = tx
            .prepare(
                "SELECT id, snapshot,
                 (SELECT MAX(applied_at) FROM applied_events WHERE process = processes.id)
                 FROM processes",
            )
            .map_err(backend)?;
        stmt.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<i64>>(2)?,
            ))
        })
        .map_err(backend)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(backend)?
    };
    // The upgrade's time, for a process without applied events.
    let upgrade = crate::clock::now_millis();
    for (id, snapshot, last_applied) in rows {
        let base = last_applied.map_or(upgrade, to_u64);
        if let Some((snapshot, next)) = migrate::rebase_legacy_snapshot(&snapshot, base)? {
            tx.execute(
                "UPDATE processes SET snapshot = ?1, next_timer_at = ?2 WHERE id = ?3",
                params![snapshot, to_i64(next), id],
            )
            .map_err(backend)?;
        }
    }
    Ok(())
}

struct SqliteTx<'a> {
    tx: &'a rusqlite::Transaction<'a>,
}

fn process_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ProcessRow> {
    Ok(ProcessRow {
        id: row.get(0)?,
        machine: row.get(1)?,
        version: row.get::<_, Option<i64>>(2)?.map(to_u64),
        snapshot: row.get(3)?,
        revision: to_u64(row.get(4)?),
        next_timer_at: row.get::<_, Option<i64>>(5)?.map(to_u64),
    })
}

// Spelled out, not formatted from a list of columns: the statement cache is
// keyed by the text, which should not be built anew for every call.
const SELECT_PROCESS: &str =
    "SELECT id, machine, version, snapshot, revision, next_timer_at FROM processes WHERE id = ?1";
const OUTBOX_COLUMNS: &str = "process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error";
// Spelled out, not formatted from `OUTBOX_COLUMNS`: the statement cache is
// keyed by the text, which should not be built anew for every row.
const INSERT_OUTBOX: &str = "INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING";

/// The process row with `id`, read inside a transaction or outside one (a
/// `rusqlite::Transaction` is a `Connection`).
fn select_process(conn: &Connection, id: &str) -> Result<Option<ProcessRow>, StoreError> {
    conn.prepare_cached(SELECT_PROCESS)
        .map_err(backend)?
        .query_row(params![id], process_row)
        .optional()
        .map_err(backend)
}

fn outbox_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(OutboxItem, String)> {
    let status: String = row.get(6)?;
    Ok((
        OutboxItem {
            process: row.get(0)?,
            event_id: row.get(1)?,
            position: u32::try_from(row.get::<_, i64>(2)?).unwrap_or(u32::MAX),
            key: row.get(3)?,
            effect: row.get(4)?,
            args: row.get(5)?,
            status: OutboxStatus::Pending,
            attempts: u32::try_from(row.get::<_, i64>(7)?).unwrap_or(u32::MAX),
            next_attempt_at: to_u64(row.get(8)?),
            last_error: row.get(9)?,
        },
        status,
    ))
}

fn with_status((mut item, status): (OutboxItem, String)) -> Result<OutboxItem, StoreError> {
    item.status = OutboxStatus::parse(&status)
        .ok_or_else(|| StoreError::Corrupt(format!("outbox status `{status}`")))?;
    Ok(item)
}

impl Transaction for SqliteTx<'_> {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        self.tx
            .prepare_cached(
                "SELECT payload_hash, response, revision, applied_at FROM applied_events
                 WHERE process = ?1 AND event_id = ?2",
            )
            .map_err(backend)?
            .query_row(params![process, event_id], |row| {
                Ok(AppliedEvent {
                    process: process.to_string(),
                    event_id: event_id.to_string(),
                    payload_hash: row.get(0)?,
                    response: row.get(1)?,
                    revision: to_u64(row.get(2)?),
                    applied_at: to_u64(row.get(3)?),
                })
            })
            .optional()
            .map_err(backend)
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        select_process(self.tx, id)
    }

    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        let n = self
            .tx
            .prepare_cached(
                "INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO NOTHING",
            )
            .map_err(backend)?
            .execute(params![
                row.id,
                row.machine,
                row.version.map(to_i64),
                row.snapshot,
                to_i64(row.revision),
                row.next_timer_at.map(to_i64)
            ])
            .map_err(backend)?;
        Ok(n == 1)
    }

    fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        let n = self
            .tx
            .prepare_cached(
                "UPDATE processes SET snapshot = ?1, next_timer_at = ?2, revision = revision + 1
                 WHERE id = ?3 AND revision = ?4",
            )
            .map_err(backend)?
            .execute(params![
                snapshot,
                next_timer_at.map(to_i64),
                id,
                to_i64(revision)
            ])
            .map_err(backend)?;
        Ok(n == 1)
    }

    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(backend)?
            .execute(params![
                row.process,
                row.event_id,
                row.payload_hash,
                row.response,
                to_i64(row.revision),
                to_i64(row.applied_at)
            ])
            .map_err(backend)?;
        Ok(())
    }

    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(INSERT_OUTBOX)
            .map_err(backend)?
            .execute(params![
                item.process,
                item.event_id,
                item.position,
                item.key,
                item.effect,
                item.args,
                item.status.as_str(),
                item.attempts,
                to_i64(item.next_attempt_at),
                item.last_error
            ])
            .map_err(backend)?;
        Ok(())
    }
}

impl Store for SqliteStore {
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let result = body(&mut SqliteTx { tx: &tx });
        match result {
            Ok(value) => {
                tx.commit().map_err(backend)?;
                Ok(value)
            }
            // Dropping the transaction rolls it back.
            Err(e) => Err(e),
        }
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        select_process(&self.conn, id)
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {OUTBOX_COLUMNS} FROM outbox WHERE ?1 IS NULL OR status = ?1
                 ORDER BY process, rowid"
            ))
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![status.map(OutboxStatus::as_str)], outbox_row)
            .map_err(backend)?;
        rows.map(|r| r.map_err(backend).and_then(with_status))
            .collect()
    }

    fn claim_due(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let items = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {OUTBOX_COLUMNS} FROM outbox
                     WHERE status = 'pending' AND next_attempt_at <= ?1
                     ORDER BY next_attempt_at, rowid LIMIT ?2"
                ))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![to_i64(now), to_i64(limit as u64)], outbox_row)
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(with_status))
                .collect::<Result<Vec<_>, _>>()?
        };
        for item in &items {
            tx.execute(
                "UPDATE outbox SET next_attempt_at = ?1 WHERE idempotency_key = ?2",
                params![to_i64(now.saturating_add(lease_ms)), item.key],
            )
            .map_err(backend)?;
        }
        tx.commit().map_err(backend)?;
        Ok(items)
    }

    fn finish_attempt(
        &mut self,
        key: &str,
        status: OutboxStatus,
        attempts: u32,
        next_attempt_at: u64,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE outbox SET status = ?1, attempts = ?2, next_attempt_at = ?3, last_error = ?4
                 WHERE idempotency_key = ?5",
                params![
                    status.as_str(),
                    attempts,
                    to_i64(next_attempt_at),
                    last_error,
                    key
                ],
            )
            .map_err(backend)?;
        Ok(())
    }

    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id FROM processes
                 WHERE next_timer_at <= ?1 AND machine = ?2 AND version IS ?3
                 ORDER BY next_timer_at, id LIMIT ?4",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(
                params![
                    to_i64(now),
                    machine,
                    version.map(to_i64),
                    to_i64(limit as u64)
                ],
                |row| row.get(0),
            )
            .map_err(backend)?;
        rows.collect::<Result<_, _>>().map_err(backend)
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.conn
            .execute(
                "DELETE FROM applied_events WHERE applied_at < ?1
                 AND process IN (SELECT id FROM processes WHERE machine = ?2)",
                params![to_i64(before), machine],
            )
            .map_err(backend)
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.conn
            .execute(
                "DELETE FROM outbox WHERE status IN ('done', 'unknown') AND next_attempt_at < ?1
                 AND process IN (SELECT id FROM processes WHERE machine = ?2)",
                params![to_i64(before), machine],
            )
            .map_err(backend)
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        self.conn
            .execute(
                "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?1
                 WHERE status = 'dead' AND (?2 IS NULL OR idempotency_key = ?2)",
                params![to_i64(now), key],
            )
            .map_err(backend)
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM applied_events WHERE process = ?1",
                params![process],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(backend)
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
