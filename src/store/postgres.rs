//! The PostgreSQL store: many host processes on many machines.
//!
//! Transactions run at READ COMMITTED. The revision check is an
//! `UPDATE … WHERE revision = $n`: a concurrent writer of the same process
//! blocks on the row until the first commits, then finds the revision moved,
//! updates nothing, and `apply` starts over (where its id may now be a
//! duplicate). A new process is an `INSERT … ON CONFLICT DO NOTHING`, which
//! likewise waits for a concurrent creator. The outbox is claimed with
//! `FOR UPDATE SKIP LOCKED`, so dispatchers do not take each other's rows.

use std::collections::HashMap;

use postgres::{Client, NoTls, Row, Statement};

use super::{
    AppliedEvent, OutboxItem, OutboxStatus, ProcessRow, Store, StoreError, Transaction, migrate,
};

pub struct PostgresStore {
    client: Client,
    statements: Statements,
}

/// The statements `apply` runs, prepared once per connection: a statement
/// given as text costs the server a parse and the client a round trip
/// before every execution.
type Statements = HashMap<&'static str, Statement>;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version BIGINT,
    snapshot TEXT NOT NULL,
    revision BIGINT NOT NULL,
    next_timer_at BIGINT
);
CREATE TABLE IF NOT EXISTS applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision BIGINT NOT NULL,
    applied_at BIGINT NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX IF NOT EXISTS applied_events_applied_at ON applied_events (applied_at);
CREATE TABLE IF NOT EXISTS outbox (
    seq BIGSERIAL,
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    effect TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    PRIMARY KEY (process, event_id, position)
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at);
";

/// Made after `SCHEMA` and the migration, which may first add the column,
/// and only when missing: even with `IF NOT EXISTS`, `CREATE INDEX` first
/// locks the table against writers, and a writer that holds `processes` and
/// waits for `applied_events` would deadlock with it.
const INDEXES: &str = "
CREATE INDEX processes_next_timer ON processes (next_timer_at);
";

/// Any constant: serialises concurrent schema creation, which PostgreSQL
/// does not make safe by itself (`IF NOT EXISTS` can still race).
const SCHEMA_LOCK: i64 = 0x1de3_c4a7;

fn backend(e: postgres::Error) -> StoreError {
    use postgres::error::SqlState;
    let raced = e.code().is_some_and(|code| {
        [
            SqlState::UNIQUE_VIOLATION,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ]
        .contains(code)
    });
    // The server's own message says which constraint or why; a client-side
    // error says why in its source (connection refused, timed out).
    let message = match (e.as_db_error(), std::error::Error::source(&e)) {
        (Some(db), _) => db.message().to_string(),
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    };
    if raced {
        StoreError::Race(message)
    } else {
        StoreError::Backend(message)
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn to_u32(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl PostgresStore {
    /// Connects with a libpq-style string (`host=… user=… dbname=…`, or a
    /// `postgresql://` URL) and creates the tables if needed, in the first
    /// schema of the search path.
    ///
    /// A `connect_timeout` in `params` bounds the whole connection, the
    /// startup exchange included, as in libpq (the driver alone bounds only
    /// the TCP connect, so a server that accepts and then says nothing would
    /// hold the caller forever). An attempt given up on is left to end on its
    /// own thread.
    pub fn connect(params: &str) -> Result<PostgresStore, StoreError> {
        let config: postgres::Config = params.parse().map_err(backend)?;
        let mut client = match config.get_connect_timeout() {
            None => config.connect(NoTls).map_err(backend)?,
            // libpq's limit is per host; so is this one.
            Some(&limit) => {
                let hosts = config.get_hosts().len().max(1) as u32;
                let deadline = limit * hosts;
                let (answer, answered) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    // The caller may have stopped waiting; then the answer
                    // has nobody to go to and the connection closes here.
                    let _ = answer.send(config.connect(NoTls));
                });
                match answered.recv_timeout(deadline) {
                    Ok(connected) => connected.map_err(backend)?,
                    Err(_) => {
                        return Err(StoreError::Backend(format!(
                            "no answer from the server within {} s",
                            deadline.as_secs_f64()
                        )));
                    }
                }
            }
        };
        let mut tx = client.transaction().map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(backend)?;
        tx.batch_execute(SCHEMA).map_err(backend)?;
        add_next_timer_at(&mut tx)?;
        let indexed = tx
            .query_one(
                "SELECT to_regclass('processes_next_timer') IS NOT NULL",
                &[],
            )
            .map_err(backend)?
            .get::<_, bool>(0);
        if !indexed {
            tx.batch_execute(INDEXES).map_err(backend)?;
        }
        tx.commit().map_err(backend)?;
        Ok(PostgresStore {
            client,
            statements: Statements::new(),
        })
    }

    /// Direct access, for tests and administration.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Adds `next_timer_at` to a `processes` table made by an earlier version
/// and rebases its snapshots' clocks (see `store::migrate`). The caller holds
/// the schema lock, and `ALTER TABLE` locks the table until the commit, so no
/// writer sees the table half migrated.
fn add_next_timer_at(tx: &mut postgres::Transaction<'_>) -> Result<(), StoreError> {
    let present = tx
        .query_opt(
            "SELECT 1 FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = 'processes'
             AND column_name = 'next_timer_at'",
            &[],
        )
        .map_err(backend)?
        .is_some();
    if present {
        return Ok(());
    }
    tx.batch_execute("ALTER TABLE processes ADD COLUMN next_timer_at BIGINT")
        .map_err(backend)?;
    let rows = tx
        .query(
            "SELECT id, snapshot,
             (SELECT MAX(applied_at) FROM applied_events WHERE process = processes.id)
             FROM processes",
            &[],
        )
        .map_err(backend)?;
    // The upgrade's time, for a process without applied events.
    let upgrade = crate::clock::now_millis();
    for row in rows {
        let id: String = row.get(0);
        let snapshot: String = row.get(1);
        let base = row.get::<_, Option<i64>>(2).map_or(upgrade, to_u64);
        if let Some((snapshot, next)) = migrate::rebase_legacy_snapshot(&snapshot, base)? {
            tx.execute(
                "UPDATE processes SET snapshot = $1, next_timer_at = $2 WHERE id = $3",
                &[&snapshot, &to_i64(next), &id],
            )
            .map_err(backend)?;
        }
    }
    Ok(())
}

const SELECT_PROCESS: &str =
    "SELECT id, machine, version, snapshot, revision, next_timer_at FROM processes WHERE id = $1";
const OUTBOX_COLUMNS: &str = "process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error";
// Spelled out, not formatted from `OUTBOX_COLUMNS`, to be a prepared statement's key.
const INSERT_OUTBOX: &str = "INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING";

fn process_row(row: &Row) -> ProcessRow {
    ProcessRow {
        id: row.get(0),
        machine: row.get(1),
        version: row.get::<_, Option<i64>>(2).map(to_u64),
        snapshot: row.get(3),
        revision: to_u64(row.get(4)),
        next_timer_at: row.get::<_, Option<i64>>(5).map(to_u64),
    }
}

fn outbox_row(row: &Row) -> Result<OutboxItem, StoreError> {
    let status: String = row.get(6);
    Ok(OutboxItem {
        process: row.get(0),
        event_id: row.get(1),
        position: to_u32(row.get(2)),
        key: row.get(3),
        effect: row.get(4),
        args: row.get(5),
        status: OutboxStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("outbox status `{status}`")))?,
        attempts: to_u32(row.get(7)),
        next_attempt_at: to_u64(row.get(8)),
        last_error: row.get(9),
    })
}

struct PgTx<'a, 'c> {
    tx: &'a mut postgres::Transaction<'c>,
    statements: &'a mut Statements,
}

impl PgTx<'_, '_> {
    fn prepared(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        // Prepared statements belong to the session, not to the
        // transaction: a rollback does not drop them.
        let statement = self.tx.prepare(sql).map_err(backend)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl Transaction for PgTx<'_, '_> {
    fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        let statement = self.prepared(
            "SELECT payload_hash, response, revision, applied_at FROM applied_events
             WHERE process = $1 AND event_id = $2",
        )?;
        let row = self
            .tx
            .query_opt(&statement, &[&process, &event_id])
            .map_err(backend)?;
        Ok(row.map(|row| AppliedEvent {
            process: process.to_string(),
            event_id: event_id.to_string(),
            payload_hash: row.get(0),
            response: row.get(1),
            revision: to_u64(row.get(2)),
            applied_at: to_u64(row.get(3)),
        }))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        let statement = self.prepared(SELECT_PROCESS)?;
        let row = self.tx.query_opt(&statement, &[&id]).map_err(backend)?;
        Ok(row.as_ref().map(process_row))
    }

    fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        let statement = self.prepared(
            "INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
        )?;
        let n = self
            .tx
            .execute(
                &statement,
                &[
                    &row.id,
                    &row.machine,
                    &row.version.map(to_i64),
                    &row.snapshot,
                    &to_i64(row.revision),
                    &row.next_timer_at.map(to_i64),
                ],
            )
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
        let statement = self.prepared(
            "UPDATE processes SET snapshot = $1, next_timer_at = $2, revision = revision + 1
             WHERE id = $3 AND revision = $4",
        )?;
        let n = self
            .tx
            .execute(
                &statement,
                &[
                    &snapshot,
                    &next_timer_at.map(to_i64),
                    &id,
                    &to_i64(revision),
                ],
            )
            .map_err(backend)?;
        Ok(n == 1)
    }

    fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        let statement = self.prepared(
            "INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )?;
        self.tx
            .execute(
                &statement,
                &[
                    &row.process,
                    &row.event_id,
                    &row.payload_hash,
                    &row.response,
                    &to_i64(row.revision),
                    &to_i64(row.applied_at),
                ],
            )
            .map_err(backend)?;
        Ok(())
    }

    fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        let statement = self.prepared(INSERT_OUTBOX)?;
        self.tx
            .execute(
                &statement,
                &[
                    &item.process,
                    &item.event_id,
                    &i64::from(item.position),
                    &item.key,
                    &item.effect,
                    &item.args,
                    &item.status.as_str(),
                    &i64::from(item.attempts),
                    &to_i64(item.next_attempt_at),
                    &item.last_error,
                ],
            )
            .map_err(backend)?;
        Ok(())
    }
}

impl Store for PostgresStore {
    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let mut tx = self.client.transaction().map_err(backend)?;
        let result = body(&mut PgTx {
            tx: &mut tx,
            statements: &mut self.statements,
        });
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
        let row = self
            .client
            .query_opt(SELECT_PROCESS, &[&id])
            .map_err(backend)?;
        Ok(row.as_ref().map(process_row))
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        let status = status.map(OutboxStatus::as_str);
        self.client
            .query(
                &format!(
                    "SELECT {OUTBOX_COLUMNS} FROM outbox WHERE $1::TEXT IS NULL OR status = $1
                     ORDER BY process, seq"
                ),
                &[&status],
            )
            .map_err(backend)?
            .iter()
            .map(outbox_row)
            .collect()
    }

    fn claim_due(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let columns = OUTBOX_COLUMNS
            .split(", ")
            .map(|c| format!("due.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let rows = self
            .client
            .query(
                &format!(
                    "WITH due AS (
                         SELECT seq, {OUTBOX_COLUMNS} FROM outbox
                         WHERE status = 'pending' AND next_attempt_at <= $1
                         ORDER BY next_attempt_at, seq LIMIT $2
                         FOR UPDATE SKIP LOCKED)
                     UPDATE outbox o SET next_attempt_at = $3 FROM due
                     WHERE o.idempotency_key = due.idempotency_key
                     RETURNING {columns}, due.seq"
                ),
                &[
                    &to_i64(now),
                    &to_i64(limit as u64),
                    &to_i64(now.saturating_add(lease_ms)),
                ],
            )
            .map_err(backend)?;
        let mut items = rows
            .iter()
            .map(|row| Ok((outbox_row(row)?, row.get::<_, i64>(10))))
            .collect::<Result<Vec<_>, StoreError>>()?;
        items.sort_by_key(|(item, seq)| (item.next_attempt_at, *seq));
        Ok(items.into_iter().map(|(item, _)| item).collect())
    }

    fn finish_attempt(
        &mut self,
        key: &str,
        status: OutboxStatus,
        attempts: u32,
        next_attempt_at: u64,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.client
            .execute(
                "UPDATE outbox SET status = $1, attempts = $2, next_attempt_at = $3, last_error = $4
                 WHERE idempotency_key = $5",
                &[
                    &status.as_str(),
                    &i64::from(attempts),
                    &to_i64(next_attempt_at),
                    &last_error,
                    &key,
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
        // No `FOR UPDATE SKIP LOCKED` here: a lock taken by this query would
        // end with its own transaction, before the advance that needs it.
        // Each advance runs in its own transaction under the revision check,
        // which is what makes a timer fire once.
        let rows = self
            .client
            .query(
                "SELECT id FROM processes
                 WHERE next_timer_at <= $1 AND machine = $2 AND version IS NOT DISTINCT FROM $3
                 ORDER BY next_timer_at, id LIMIT $4",
                &[
                    &to_i64(now),
                    &machine,
                    &version.map(to_i64),
                    &to_i64(limit as u64),
                ],
            )
            .map_err(backend)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let n = self
            .client
            .execute(
                "DELETE FROM applied_events WHERE applied_at < $1
                 AND process IN (SELECT id FROM processes WHERE machine = $2)",
                &[&to_i64(before), &machine],
            )
            .map_err(backend)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        let n = self
            .client
            .execute(
                "DELETE FROM outbox WHERE status IN ('done', 'unknown') AND next_attempt_at < $1
                 AND process IN (SELECT id FROM processes WHERE machine = $2)",
                &[&to_i64(before), &machine],
            )
            .map_err(backend)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        let n = self
            .client
            .execute(
                "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1
                 WHERE status = 'dead' AND ($2::TEXT IS NULL OR idempotency_key = $2)",
                &[&to_i64(now), &key],
            )
            .map_err(backend)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        let row = self
            .client
            .query_one(
                "SELECT COUNT(*) FROM applied_events WHERE process = $1",
                &[&process],
            )
            .map_err(backend)?;
        Ok(usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}
