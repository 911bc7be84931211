//! The stores' SQL, written once for SQLite and PostgreSQL, with the
//! parameters and the decoding of rows that go with it.
//!
//! A statement is written in PostgreSQL's spelling (`$1`, `$2`, …) with a few
//! markers where the two dialects differ (`{order}`, `{skip_locked}`,
//! `{bigint}`, `{seq_column}`, `{rows_of_1}`, `{in_rows_of_1}`); each dialect's text is rendered from it on
//! first use and kept, so that the prepared-statement caches, which are keyed
//! by the text, see one string per statement. SQLite gets `?1`, `?2`, …: its
//! `$1` would be a named parameter numbered by first appearance.

use std::sync::OnceLock;

use super::{AppliedEvent, OutboxItem, OutboxStatus, ProcessRow, RowWrites, StoreError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    // Its statements are written (and tested) in a SQLite-only build too.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

impl Dialect {
    /// The text of `template` in this dialect.
    fn render(self, template: &str) -> String {
        let markers: [(&str, &str); 7] = match self {
            // SQLite's outbox has no `seq` column: its rowid is the order of
            // insertion, and a single writer needs no row locks.
            Dialect::Sqlite => [
                ("{order}", "rowid"),
                ("{skip_locked}", ""),
                ("{bigint}", "INTEGER"),
                ("{seq_column}", ""),
                ("{texts_of_3}", "SELECT value FROM json_each($3)"),
                ("{rows_of_1}", "json_each($1)"),
                (
                    "{in_rows_of_1}",
                    " IN (SELECT value->>0 FROM json_each($1))",
                ),
            ],
            Dialect::Postgres => [
                ("{order}", "seq"),
                ("{skip_locked}", " FOR UPDATE SKIP LOCKED"),
                ("{bigint}", "BIGINT"),
                ("{seq_column}", "seq BIGSERIAL,\n    "),
                (
                    "{texts_of_3}",
                    "SELECT jsonb_array_elements_text(CAST($3 AS JSONB))",
                ),
                (
                    "{rows_of_1}",
                    "jsonb_array_elements(CAST(CAST($1 AS TEXT) AS JSONB))",
                ),
                // An array, so that the planner looks each key up in the
                // index: `IN (SELECT …)` of a function's rows it joins by
                // hashing the whole table.
                (
                    "{in_rows_of_1}",
                    " = ANY(ARRAY(SELECT value->>0 FROM jsonb_array_elements(CAST(CAST($1 AS TEXT) AS JSONB))))",
                ),
            ],
        };
        let mut text = template.to_string();
        for (marker, spelling) in markers {
            text = text.replace(marker, spelling);
        }
        match self {
            Dialect::Sqlite => text.replace('$', "?"),
            Dialect::Postgres => text,
        }
    }
}

/// One statement, in both dialects.
pub(crate) struct Sql {
    sqlite: &'static str,
    postgres: &'static str,
    rendered: [OnceLock<String>; 2],
}

impl Sql {
    /// A statement both dialects spell alike, but for the markers.
    pub(crate) const fn new(template: &'static str) -> Sql {
        Sql::each(template, template)
    }

    /// A statement each dialect spells its own way.
    const fn each(sqlite: &'static str, postgres: &'static str) -> Sql {
        Sql {
            sqlite,
            postgres,
            rendered: [OnceLock::new(), OnceLock::new()],
        }
    }

    pub(crate) fn text(&'static self, dialect: Dialect) -> &'static str {
        let (template, cell) = match dialect {
            Dialect::Sqlite => (self.sqlite, &self.rendered[0]),
            Dialect::Postgres => (self.postgres, &self.rendered[1]),
        };
        cell.get_or_init(|| dialect.render(template))
    }
}

pub(crate) static SCHEMA: Sql = Sql::new(
    "
CREATE TABLE IF NOT EXISTS processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version {bigint},
    snapshot TEXT NOT NULL,
    revision {bigint} NOT NULL,
    next_timer_at {bigint}
);
CREATE TABLE IF NOT EXISTS applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision {bigint} NOT NULL,
    applied_at {bigint} NOT NULL,
    payload TEXT,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX IF NOT EXISTS applied_events_applied_at ON applied_events (applied_at);
CREATE TABLE IF NOT EXISTS outbox (
    {seq_column}process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    position {bigint} NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    effect TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts {bigint} NOT NULL,
    next_attempt_at {bigint} NOT NULL,
    last_error TEXT,
    invocation TEXT,
    PRIMARY KEY (process, event_id, position)
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at);
CREATE TABLE IF NOT EXISTS store_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
",
);

/// The store's secret is written once, by whichever opener gets there first
/// (under the schema lock), and every later open reads the same one.
pub(crate) static INSERT_SECRET: Sql = Sql::new(
    "INSERT INTO store_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
);
pub(crate) static SELECT_SECRET: Sql = Sql::new("SELECT value FROM store_secrets WHERE name = $1");
/// One outbox row, by its key.
pub(crate) static SELECT_OUTBOX_BY_KEY: Sql = Sql::new(
    "SELECT process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation
     FROM outbox WHERE idempotency_key = $1",
);

/// Whether `processes` has the `next_timer_at` column (a store made before
/// timers lacks it), as a count.
/// Whether `outbox` has the `invocation` column (a store made before
/// invocations lacks it), as a count.
pub(crate) static HAS_OUTBOX_INVOCATION: Sql = Sql::each(
    "SELECT COUNT(*) FROM pragma_table_info('outbox') WHERE name = 'invocation'",
    "SELECT COUNT(*) FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'outbox'
     AND column_name = 'invocation'",
);
pub(crate) static ADD_OUTBOX_INVOCATION: Sql =
    Sql::new("ALTER TABLE outbox ADD COLUMN invocation TEXT");

/// Whether `applied_events` has the `payload` column (a store made before
/// histories lacks it), as a count.
pub(crate) static HAS_APPLIED_PAYLOAD: Sql = Sql::each(
    "SELECT COUNT(*) FROM pragma_table_info('applied_events') WHERE name = 'payload'",
    "SELECT COUNT(*) FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'applied_events'
     AND column_name = 'payload'",
);
pub(crate) static ADD_APPLIED_PAYLOAD: Sql =
    Sql::new("ALTER TABLE applied_events ADD COLUMN payload TEXT");

pub(crate) static HAS_NEXT_TIMER_AT: Sql = Sql::each(
    "SELECT COUNT(*) FROM pragma_table_info('processes') WHERE name = 'next_timer_at'",
    "SELECT COUNT(*) FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'processes'
     AND column_name = 'next_timer_at'",
);
pub(crate) static ADD_NEXT_TIMER_AT: Sql =
    Sql::new("ALTER TABLE processes ADD COLUMN next_timer_at {bigint}");
pub(crate) static LEGACY_SNAPSHOTS: Sql = Sql::new(
    "SELECT id, snapshot,
     (SELECT MAX(applied_at) FROM applied_events WHERE process = processes.id)
     FROM processes",
);
pub(crate) static REBASE_SNAPSHOT: Sql =
    Sql::new("UPDATE processes SET snapshot = $1, next_timer_at = $2 WHERE id = $3");
/// Whether the index on `next_timer_at` exists, as a count. PostgreSQL's
/// `CREATE INDEX IF NOT EXISTS` still locks the table against writers, so the
/// index is made only when this says it is missing.
pub(crate) static HAS_NEXT_TIMER_INDEX: Sql = Sql::each(
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'processes_next_timer'",
    "SELECT COUNT(*) FROM pg_indexes
     WHERE schemaname = current_schema() AND indexname = 'processes_next_timer'",
);
pub(crate) static CREATE_NEXT_TIMER_INDEX: Sql =
    Sql::new("CREATE INDEX processes_next_timer ON processes (next_timer_at)");
/// The beginning of the message `idemchart_moved` raises, before the id of
/// the process another writer moved or created.
pub(crate) const MOVED: &str = "idemchart: written by another writer meanwhile: ";
/// Whether the schema has `idemchart_moved`, which PostgreSQL's multi-row
/// process writes call; SQLite, which writes a statement per row, has no
/// need of it.
pub(crate) static HAS_MOVED_FUNCTION: Sql = Sql::each(
    "SELECT 1",
    "SELECT COUNT(*) FROM pg_proc JOIN pg_namespace ON pg_namespace.oid = pg_proc.pronamespace
     WHERE nspname = current_schema() AND proname = 'idemchart_moved'",
);
/// Fails the statement, and so its transaction, as a lost race
/// (`serialization_failure`, which `StoreError::Race` stands for), with
/// `MOVED` and the process: a multi-row write of processes fails so where
/// a row was not written, so that a commit sent after it in the same round
/// trip commits nothing (`AsyncTransaction::write_last_rows`).
pub(crate) static CREATE_MOVED_FUNCTION: Sql = Sql::new(
    "CREATE FUNCTION idemchart_moved(process TEXT) RETURNS TEXT LANGUAGE plpgsql AS $body$
     BEGIN
         RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
             MESSAGE = 'idemchart: written by another writer meanwhile: ' || process;
     END
     $body$",
);

pub(crate) static SELECT_APPLIED: Sql = Sql::new(
    "SELECT payload_hash, response, revision, applied_at, payload FROM applied_events
     WHERE process = $1 AND event_id = $2",
);
pub(crate) static SELECT_PROCESS: Sql = Sql::new(
    "SELECT id, machine, version, snapshot, revision, next_timer_at FROM processes WHERE id = $1",
);
pub(crate) static INSERT_PROCESS: Sql = Sql::new(
    "INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
);
/// The version column follows the snapshot's own `version`, which a lazy
/// migration (`runtime::migrate`) changes in the write of an event. SQLite's
/// JSON path is spelled with `char(36)`, since every `$` becomes `?` there;
/// PostgreSQL reads `$1` as text first, since it deduces one type for it.
pub(crate) static UPDATE_PROCESS: Sql = Sql::each(
    "UPDATE processes SET snapshot = $1, next_timer_at = $2, revision = revision + 1,
     version = json_extract($1, char(36) || '.version')
     WHERE id = $3 AND revision = $4",
    "UPDATE processes SET snapshot = $1, next_timer_at = $2, revision = revision + 1,
     version = CAST(CAST(CAST($1 AS TEXT) AS JSONB)->>'version' AS BIGINT)
     WHERE id = $3 AND revision = $4",
);
pub(crate) static INSERT_APPLIED: Sql = Sql::new(
    "INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at, payload)
     VALUES ($1, $2, $3, $4, $5, $6, $7)",
);
/// An id applied again after its retention window yields the same keys; the
/// row already there stands for it.
pub(crate) static INSERT_OUTBOX: Sql = Sql::new(
    "INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
);
/// The statements of many rows at once, one round trip for all: `$1` is a
/// JSON array of rows, each row a JSON array of its columns in the order
/// the single-row statement numbers its parameters (`{rows_of_1}` is the
/// table of its elements, one `value` each, in both dialects). A batch's
/// reads and writes take one statement per table this way on PostgreSQL,
/// where one statement per row would wait for the server once per row;
/// SQLite, which waits for no server, runs a statement per row instead
/// (`Transaction::read_rows`), and prepares these only in the test below.
/// PostgreSQL's looks each pair up in the primary key (a lateral join
/// with `LIMIT 1`, the key's one row): its planner makes `IN (SELECT …)`,
/// and a lateral join it may flatten, a hash join over the whole table in
/// the prepared statement's generic plan.
///
/// The marks `$1` (`[process, event id]` rows) and the process rows `$2`
/// (`[id]` rows) of a batch, in one statement (one execution and one answer
/// from the server, where two statements cost two): each row is `kind`
/// (0 a mark, 1 a process row) and then the columns `read_row` reads.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static SELECT_ROWS_MANY: Sql = Sql::each(
    "SELECT 0, process, event_id, payload_hash, response, payload, revision, applied_at, NULL
     FROM applied_events WHERE (process, event_id) IN (SELECT value->>0, value->>1 FROM json_each(?1))
     UNION ALL
     SELECT 1, id, machine, snapshot, NULL, NULL, revision, next_timer_at, version
     FROM processes WHERE id IN (SELECT value->>0 FROM json_each(?2))",
    "SELECT CAST(0 AS BIGINT), a.process, a.event_id, a.payload_hash, a.response, a.payload, a.revision, a.applied_at,
     CAST(NULL AS BIGINT)
     FROM jsonb_array_elements(CAST(CAST($1 AS TEXT) AS JSONB)) AS wanted
     CROSS JOIN LATERAL (SELECT * FROM applied_events
     WHERE process = wanted.value->>0 AND event_id = wanted.value->>1 LIMIT 1) AS a
     UNION ALL
     SELECT CAST(1 AS BIGINT), p.id, p.machine, p.snapshot, CAST(NULL AS TEXT), CAST(NULL AS TEXT), p.revision,
     p.next_timer_at, p.version
     FROM jsonb_array_elements(CAST(CAST($2 AS TEXT) AS JSONB)) AS wanted
     CROSS JOIN LATERAL (SELECT * FROM processes WHERE id = wanted.value->>0 LIMIT 1) AS p",
);
/// SQLite's answers the ids it inserted (it is prepared only in the test
/// below); PostgreSQL's fails with `idemchart_moved` for the first id it
/// did not insert, which another creator won (`MOVED`). `WHERE true` tells
/// SQLite's parser that `ON CONFLICT` is not part of a join.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static INSERT_PROCESS_MANY: Sql = Sql::each(
    "INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
     SELECT value->>0, value->>1, CAST(value->>2 AS INTEGER), value->>3, CAST(value->>4 AS INTEGER), CAST(value->>5 AS INTEGER)
     FROM json_each(?1) WHERE true ON CONFLICT (id) DO NOTHING RETURNING id",
    "WITH inserted AS (INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
     SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, CAST(value->>4 AS BIGINT), CAST(value->>5 AS BIGINT)
     FROM {rows_of_1} ON CONFLICT (id) DO NOTHING RETURNING id)
     SELECT idemchart_moved(value->>0) FROM {rows_of_1} WHERE value->>0 NOT IN (SELECT id FROM inserted)",
);
/// Each row is `[id, snapshot, next_timer_at, revision read, revision
/// written]`, at most one per process. SQLite's answers the ids it wrote
/// (prepared only in the test below); PostgreSQL's fails with
/// `idemchart_moved` for the first process it did not write, which another
/// writer moved (`MOVED`). The version follows the snapshot as in
/// `UPDATE_PROCESS`. PostgreSQL's names the ids again as an array, for the
/// index (see `{in_rows_of_1}`).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static UPDATE_PROCESS_MANY: Sql = Sql::each(
    "UPDATE processes SET snapshot = value->>1, next_timer_at = CAST(value->>2 AS INTEGER),
     revision = CAST(value->>4 AS INTEGER), version = json_extract(value->>1, char(36) || '.version')
     FROM json_each(?1) WHERE processes.id = value->>0 AND processes.revision = CAST(value->>3 AS INTEGER)
     RETURNING processes.id",
    "WITH updated AS (UPDATE processes SET snapshot = value->>1, next_timer_at = CAST(value->>2 AS BIGINT),
     revision = CAST(value->>4 AS BIGINT), version = CAST(CAST(value->>1 AS JSONB)->>'version' AS BIGINT)
     FROM {rows_of_1} WHERE processes.id = value->>0 AND processes.revision = CAST(value->>3 AS BIGINT)
     AND processes.id{in_rows_of_1}
     RETURNING processes.id)
     SELECT idemchart_moved(value->>0) FROM {rows_of_1} WHERE value->>0 NOT IN (SELECT id FROM updated)",
);
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static INSERT_APPLIED_MANY: Sql = Sql::new(
    "INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at, payload)
     SELECT value->>0, value->>1, value->>2, value->>3, CAST(value->>4 AS {bigint}), CAST(value->>5 AS {bigint}), value->>6
     FROM {rows_of_1}",
);
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static INSERT_OUTBOX_MANY: Sql = Sql::new(
    "INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation)
     SELECT value->>0, value->>1, CAST(value->>2 AS {bigint}), value->>3, value->>4, value->>5, value->>6,
     CAST(value->>7 AS {bigint}), CAST(value->>8 AS {bigint}), value->>9, value->>10
     FROM {rows_of_1} WHERE true ON CONFLICT DO NOTHING",
);
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) static CANCEL_OUTBOX_MANY: Sql = Sql::new(
    "UPDATE outbox SET status = 'cancelled' WHERE status = 'pending'
     AND idempotency_key{in_rows_of_1}",
);
pub(crate) static SELECT_OUTBOX: Sql = Sql::new(
    "SELECT process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation
     FROM outbox WHERE CAST($1 AS TEXT) IS NULL OR status = $1
     ORDER BY process, {order}",
);
/// Run in a transaction with `LEASE_OUTBOX` after it: on PostgreSQL the rows
/// stay locked until the commit, and other dispatchers skip them. `$3` is
/// null, or a JSON array of the effect names to claim of the processes of
/// machine `$4`.
pub(crate) static SELECT_DUE_OUTBOX: Sql = Sql::new(
    "SELECT process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation
     FROM outbox WHERE status = 'pending' AND next_attempt_at <= $1
     AND (CAST($4 AS TEXT) IS NULL OR process IN (SELECT id FROM processes WHERE machine = $4))
     AND (CAST($3 AS TEXT) IS NULL OR effect IN ({texts_of_3}))
     ORDER BY next_attempt_at, {order} LIMIT $2{skip_locked}",
);
pub(crate) static LEASE_OUTBOX: Sql =
    Sql::new("UPDATE outbox SET next_attempt_at = $1 WHERE idempotency_key = $2");
/// A row a dispatcher already settled keeps its status: the answer stands.
pub(crate) static CANCEL_OUTBOX: Sql = Sql::new(
    "UPDATE outbox SET status = 'cancelled' WHERE idempotency_key = $1 AND status = 'pending'",
);
/// Only a pending row records an attempt: one settled meanwhile (its
/// invocation answered through the completion route while the dispatcher
/// waited for the call, or its state left) keeps the answer that settled it.
pub(crate) static FINISH_ATTEMPT: Sql = Sql::new(
    "UPDATE outbox SET status = $1, attempts = $2, next_attempt_at = $3, last_error = $4
     WHERE idempotency_key = $5 AND status = 'pending'",
);
pub(crate) static DUE_PROCESSES: Sql = Sql::new(
    "SELECT id FROM processes
     WHERE next_timer_at <= $1 AND machine = $2 AND version IS NOT DISTINCT FROM $3
     ORDER BY next_timer_at, id LIMIT $4",
);
/// One page of the ids of the processes of machine `$1` whose version is
/// not `$2` (older ones to migrate, or newer ones a rollback left), after
/// the id `$3` when it is not null, in id order: `idemchart migrate` pages
/// through them by the last id it saw, so a large store is never read at once.
pub(crate) static STALE_PROCESSES: Sql = Sql::new(
    "SELECT id FROM processes
     WHERE machine = $1 AND version IS DISTINCT FROM $2
     AND (CAST($3 AS TEXT) IS NULL OR id > $3)
     ORDER BY id LIMIT $4",
);
/// One page of the process rows of machine `$1`, after the id `$2` when it
/// is not null, in id order: the inspector lists a machine's processes a
/// page at a time.
pub(crate) static PROCESSES_OF: Sql = Sql::new(
    "SELECT id, machine, version, snapshot, revision, next_timer_at FROM processes
     WHERE machine = $1 AND (CAST($2 AS TEXT) IS NULL OR id > $2)
     ORDER BY id LIMIT $3",
);
/// Every outbox row of one process, whatever its status, in the order they
/// were written.
pub(crate) static OUTBOX_OF: Sql = Sql::new(
    "SELECT process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation
     FROM outbox WHERE process = $1 ORDER BY {order}",
);
/// The pending outbox rows of one process, in the order they were written.
pub(crate) static PENDING_OUTBOX_OF: Sql = Sql::new(
    "SELECT process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation
     FROM outbox WHERE process = $1 AND status = 'pending' ORDER BY {order}",
);
pub(crate) static PURGE_APPLIED: Sql = Sql::new(
    "DELETE FROM applied_events WHERE applied_at < $1
     AND process IN (SELECT id FROM processes WHERE machine = $2)",
);
/// A payload past the history's `keep` is cleared while its row may still
/// be needed for deduplication (`runtime::purge` says which window governs
/// the row).
pub(crate) static PURGE_PAYLOADS: Sql = Sql::new(
    "UPDATE applied_events SET payload = NULL WHERE payload IS NOT NULL AND applied_at < $1
     AND process IN (SELECT id FROM processes WHERE machine = $2)",
);
pub(crate) static PURGE_OUTBOX: Sql = Sql::new(
    "DELETE FROM outbox WHERE status IN ('done', 'unknown', 'cancelled', 'failed') AND next_attempt_at < $1
     AND process IN (SELECT id FROM processes WHERE machine = $2)",
);
pub(crate) static REQUEUE_DEAD: Sql = Sql::new(
    "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1
     WHERE status = 'dead' AND (CAST($2 AS TEXT) IS NULL OR idempotency_key = $2)",
);
pub(crate) static APPLIED_COUNT: Sql =
    Sql::new("SELECT COUNT(*) FROM applied_events WHERE process = $1");
/// One page of a process's applied events, in the order they were applied.
pub(crate) static APPLIED_PAGE: Sql = Sql::new(
    "SELECT event_id, payload_hash, response, revision, applied_at, payload FROM applied_events
     WHERE process = $1 ORDER BY revision, applied_at, event_id LIMIT $2 OFFSET $3",
);
/// The gauges of `StoreStats`, in one round trip.
pub(crate) static STATS: Sql = Sql::new(
    "SELECT (SELECT COUNT(*) FROM outbox WHERE status = 'pending'),
     (SELECT COUNT(*) FROM outbox WHERE status = 'dead'),
     (SELECT COUNT(*) FROM processes WHERE next_timer_at <= $1)",
);

/// A statement parameter: every column is text or a 64-bit integer, either
/// possibly null.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param<'a> {
    Null,
    Int(i64),
    Text(&'a str),
}

impl<'a> Param<'a> {
    /// Counts and times above `i64::MAX` saturate: no real one gets there.
    pub(crate) fn int(n: u64) -> Param<'a> {
        Param::Int(i64_of(n))
    }

    pub(crate) fn opt_int(n: Option<u64>) -> Param<'a> {
        n.map_or(Param::Null, Param::int)
    }

    pub(crate) fn text(text: &'a str) -> Param<'a> {
        Param::Text(text)
    }

    pub(crate) fn opt_text(text: Option<&'a str>) -> Param<'a> {
        text.map_or(Param::Null, Param::Text)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(n) => ValueRef::Integer(n),
            Param::Text(text) => ValueRef::Text(text.as_bytes()),
        }))
    }
}

#[cfg(feature = "postgres")]
impl tokio_postgres::types::ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // Each variant checks the column's type as its own Rust type would.
        match self {
            Param::Null => Ok(tokio_postgres::types::IsNull::Yes),
            Param::Int(n) => n.to_sql_checked(ty, out),
            Param::Text(text) => text.to_sql_checked(ty, out),
        }
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        <i64 as tokio_postgres::types::ToSql>::accepts(ty)
            || <&str as tokio_postgres::types::ToSql>::accepts(ty)
    }

    fn to_sql_checked(
        &self,
        ty: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.to_sql(ty, out)
    }
}

/// The columns of one result row, read by position, whichever driver read it.
pub(crate) trait Columns {
    fn text(&self, i: usize) -> Result<Option<String>, StoreError>;
    fn int(&self, i: usize) -> Result<Option<i64>, StoreError>;
}

impl Columns for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.get(i).map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        self.get(i).map_err(|e| StoreError::Corrupt(e.to_string()))
    }
}

#[cfg(feature = "postgres")]
impl Columns for tokio_postgres::Row {
    fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.try_get(i)
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        self.try_get(i)
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }
}

fn required<T>(value: Option<T>, column: usize) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError::Corrupt(format!("column {column} is null")))
}

pub(crate) fn text(row: &dyn Columns, i: usize) -> Result<String, StoreError> {
    required(row.text(i)?, i)
}

pub(crate) fn int(row: &dyn Columns, i: usize) -> Result<u64, StoreError> {
    Ok(to_u64(required(row.int(i)?, i)?))
}

pub(crate) fn opt_int(row: &dyn Columns, i: usize) -> Result<Option<u64>, StoreError> {
    Ok(row.int(i)?.map(to_u64))
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A row of `SELECT_PROCESS`.
pub(crate) fn process_row(row: &dyn Columns) -> Result<ProcessRow, StoreError> {
    Ok(ProcessRow {
        id: text(row, 0)?,
        machine: text(row, 1)?,
        version: opt_int(row, 2)?,
        snapshot: text(row, 3)?,
        revision: int(row, 4)?,
        next_timer_at: opt_int(row, 5)?,
    })
}

pub(crate) fn process_params(row: &ProcessRow) -> [Param<'_>; 6] {
    [
        Param::text(&row.id),
        Param::text(&row.machine),
        Param::opt_int(row.version),
        Param::text(&row.snapshot),
        Param::int(row.revision),
        Param::opt_int(row.next_timer_at),
    ]
}

pub(crate) fn applied_params(row: &AppliedEvent) -> [Param<'_>; 7] {
    [
        Param::text(&row.process),
        Param::text(&row.event_id),
        Param::text(&row.payload_hash),
        Param::text(&row.response),
        Param::int(row.revision),
        Param::int(row.applied_at),
        Param::opt_text(row.payload.as_deref()),
    ]
}

/// A row of `SELECT_ROWS_MANY`: a mark or a process row.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum ReadRow {
    Applied(AppliedEvent),
    Process(ProcessRow),
}

/// A row of `SELECT_ROWS_MANY`, by its kind (column 0).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn read_row(row: &dyn Columns) -> Result<ReadRow, StoreError> {
    match required(row.int(0)?, 0)? {
        0 => Ok(ReadRow::Applied(AppliedEvent {
            process: text(row, 1)?,
            event_id: text(row, 2)?,
            payload_hash: text(row, 3)?,
            response: text(row, 4)?,
            payload: row.text(5)?,
            revision: int(row, 6)?,
            applied_at: int(row, 7)?,
        })),
        _ => Ok(ReadRow::Process(ProcessRow {
            id: text(row, 1)?,
            machine: text(row, 2)?,
            snapshot: text(row, 3)?,
            revision: int(row, 6)?,
            next_timer_at: opt_int(row, 7)?,
            version: opt_int(row, 8)?,
        })),
    }
}

/// A count or a time as a column's integer, saturated at `i64::MAX`.
fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `rows` as the JSON array that `{rows_of_1}` reads, each row an array.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn rows_json<R: serde::Serialize>(rows: impl Iterator<Item = R>) -> Result<String, StoreError> {
    serde_json::to_string(&rows.collect::<Vec<R>>())
        .map_err(|e| StoreError::Backend(format!("rows as JSON: {e}")))
}

/// The marks' parameter of `SELECT_ROWS_MANY`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn marks_json(marks: &[(&str, &str)]) -> Result<String, StoreError> {
    rows_json(marks.iter())
}

/// The processes' parameter of `SELECT_ROWS_MANY`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn ids_json(ids: &[&str]) -> Result<String, StoreError> {
    rows_json(ids.iter().map(|id| [id]))
}

/// The parameters of the `*_MANY` writes, in `RowWrites` order; `None` for
/// a table with no rows to write.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn writes_json(rows: &RowWrites) -> Result<[Option<String>; 5], StoreError> {
    Ok([
        table_json(&rows.inserts, |row| {
            (
                &row.id,
                &row.machine,
                row.version.map(i64_of),
                &row.snapshot,
                i64_of(row.revision),
                row.next_timer_at.map(i64_of),
            )
        })?,
        table_json(&rows.updates, |update| {
            (
                &update.id,
                &update.snapshot,
                update.next_timer_at.map(i64_of),
                i64_of(update.read),
                i64_of(update.revision),
            )
        })?,
        table_json(&rows.applied, |row| {
            (
                &row.process,
                &row.event_id,
                &row.payload_hash,
                &row.response,
                i64_of(row.revision),
                i64_of(row.applied_at),
                &row.payload,
            )
        })?,
        table_json(&rows.outbox, |item| {
            (
                &item.process,
                &item.event_id,
                item.position,
                &item.key,
                &item.effect,
                &item.args,
                item.status.as_str(),
                item.attempts,
                i64_of(item.next_attempt_at),
                &item.last_error,
                &item.invocation,
            )
        })?,
        table_json(&rows.cancelled, |key| [key])?,
    ])
}

/// The rows of one table as `rows_json` writes them, each made by `row`;
/// `None` when there are none.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn table_json<'r, T, R: serde::Serialize>(
    rows: &'r [T],
    row: impl Fn(&'r T) -> R,
) -> Result<Option<String>, StoreError> {
    if rows.is_empty() {
        return Ok(None);
    }
    rows_json(rows.iter().map(row)).map(Some)
}

/// A row of `SELECT_OUTBOX` or `SELECT_DUE_OUTBOX`.
pub(crate) fn outbox_row(row: &dyn Columns) -> Result<OutboxItem, StoreError> {
    let status = text(row, 6)?;
    Ok(OutboxItem {
        process: text(row, 0)?,
        event_id: text(row, 1)?,
        position: to_u32(int(row, 2)?),
        key: text(row, 3)?,
        effect: text(row, 4)?,
        args: text(row, 5)?,
        status: OutboxStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("outbox status `{status}`")))?,
        attempts: to_u32(int(row, 7)?),
        next_attempt_at: int(row, 8)?,
        last_error: row.text(9)?,
        invocation: row.text(10)?,
    })
}

pub(crate) fn outbox_params(item: &OutboxItem) -> [Param<'_>; 11] {
    [
        Param::text(&item.process),
        Param::text(&item.event_id),
        Param::int(u64::from(item.position)),
        Param::text(&item.key),
        Param::text(&item.effect),
        Param::text(&item.args),
        Param::text(item.status.as_str()),
        Param::int(u64::from(item.attempts)),
        Param::int(item.next_attempt_at),
        Param::opt_text(item.last_error.as_deref()),
        Param::opt_text(item.invocation.as_deref()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_numbers_its_placeholders_and_has_no_markers_left() {
        assert_eq!(
            UPDATE_PROCESS.text(Dialect::Sqlite),
            "UPDATE processes SET snapshot = ?1, next_timer_at = ?2, revision = revision + 1,
     version = json_extract(?1, char(36) || '.version')
     WHERE id = ?3 AND revision = ?4"
        );
        assert!(
            SELECT_DUE_OUTBOX
                .text(Dialect::Postgres)
                .ends_with("ORDER BY next_attempt_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED")
        );
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            let schema = SCHEMA.text(dialect);
            assert!(!schema.contains('{'), "{schema}");
        }
        assert!(
            SCHEMA
                .text(Dialect::Postgres)
                .contains("seq BIGSERIAL,\n    process TEXT")
        );
        assert!(
            SCHEMA
                .text(Dialect::Sqlite)
                .contains("(\n    process TEXT NOT NULL,")
        );
    }

    /// Every statement prepares on SQLite, and binds its parameters in the
    /// order they are numbered.
    #[test]
    fn every_statement_prepares_on_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA.text(Dialect::Sqlite)).unwrap();
        conn.execute_batch(CREATE_NEXT_TIMER_INDEX.text(Dialect::Sqlite))
            .unwrap();
        for sql in [
            &HAS_NEXT_TIMER_AT,
            &INSERT_SECRET,
            &SELECT_SECRET,
            &SELECT_OUTBOX_BY_KEY,
            &LEGACY_SNAPSHOTS,
            &REBASE_SNAPSHOT,
            &HAS_NEXT_TIMER_INDEX,
            &SELECT_APPLIED,
            &SELECT_PROCESS,
            &INSERT_PROCESS,
            &UPDATE_PROCESS,
            &INSERT_APPLIED,
            &INSERT_OUTBOX,
            &SELECT_OUTBOX,
            &SELECT_DUE_OUTBOX,
            &LEASE_OUTBOX,
            &FINISH_ATTEMPT,
            &DUE_PROCESSES,
            &STALE_PROCESSES,
            &PENDING_OUTBOX_OF,
            &PROCESSES_OF,
            &OUTBOX_OF,
            &PURGE_APPLIED,
            &PURGE_OUTBOX,
            &REQUEUE_DEAD,
            &APPLIED_COUNT,
            &HAS_APPLIED_PAYLOAD,
            &PURGE_PAYLOADS,
            &APPLIED_PAGE,
            &SELECT_ROWS_MANY,
            &INSERT_PROCESS_MANY,
            &UPDATE_PROCESS_MANY,
            &INSERT_APPLIED_MANY,
            &INSERT_OUTBOX_MANY,
            &CANCEL_OUTBOX_MANY,
        ] {
            let text = sql.text(Dialect::Sqlite);
            let statement = conn.prepare(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            for i in 1..=statement.parameter_count() {
                assert_eq!(statement.parameter_name(i), Some(format!("?{i}").as_str()));
            }
        }
    }
}
