//! The PostgreSQL store: many host processes on many machines.
//!
//! [`AsyncPostgresStore`] is a pool of tokio-postgres connections
//! (deadpool); [`PostgresStore`] is the same store with a pool of one,
//! driven through the sync API by a private runtime ([`Blocking`]), so the
//! two run the very same statements.
//!
//! Transactions run at READ COMMITTED. The revision check is an
//! `UPDATE … WHERE revision = $n`: a concurrent writer of the same process
//! blocks on the row until the first commits, then finds the revision moved,
//! updates nothing, and `apply` starts over (where its id may now be a
//! duplicate). A new process is an `INSERT … ON CONFLICT DO NOTHING`, which
//! likewise waits for a concurrent creator. The outbox is claimed with
//! `FOR UPDATE SKIP LOCKED`, so dispatchers do not take each other's rows.
//! Every statement is prepared once per connection: a statement given as
//! text costs the server a parse and the client a round trip before every
//! execution. A batch reads its rows in one statement before its
//! transaction sends anything else, outside it (`read_rows`), and then
//! writes them all in one statement of its own, which the server commits
//! before it answers (`write_last_rows`, `write_alone`): two statements and
//! two round trips, no `BEGIN` and no `COMMIT`. Where the transaction has
//! begun (a statement before the last writes), the last writes are sent
//! with its `COMMIT`. Either way a process row they cannot write fails
//! the statement (`idemchart_moved`), so that nothing is committed.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::{
    ClientWrapper, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Statement};

use super::ops::{self, Executor};
use super::sql::{Columns, Dialect, Param, Sql};
use super::{
    AppliedEvent, AsyncStore, AsyncTransaction, AttemptRecord, Blocking, OutboxItem, OutboxStatus,
    ProcessRow, RowReads, RowWrites, StoreError, StoreSecret, StoreStats,
};

/// How many connections [`AsyncPostgresStore::connect`] keeps at most.
pub const DEFAULT_CONNECTIONS: usize = 16;

/// A cloneable handle on a pool of connections to one PostgreSQL database.
#[derive(Clone)]
pub struct AsyncPostgresStore {
    pool: Pool,
    /// How long making a connection may take, all hosts tried; for the
    /// message when it runs out.
    connect_deadline: Option<Duration>,
    /// Read when the store was opened.
    secret: StoreSecret,
}

impl std::fmt::Debug for AsyncPostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncPostgresStore")
            .field("status", &self.pool.status())
            .finish_non_exhaustive()
    }
}

/// The sync PostgreSQL store: [`AsyncPostgresStore`] with one connection,
/// driven by a private runtime.
pub type PostgresStore = Blocking<AsyncPostgresStore>;

/// Any constant: serialises concurrent schema creation, which PostgreSQL
/// does not make safe by itself (`IF NOT EXISTS` can still race).
const SCHEMA_LOCK: i64 = 0x1de3_c4a7;

static TAKE_SCHEMA_LOCK: Sql = Sql::new("SELECT pg_advisory_xact_lock($1)");

pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    use tokio_postgres::error::SqlState;
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

impl PostgresStore {
    /// Connects with a libpq-style string (`host=… user=… dbname=…`, or a
    /// `postgresql://` URL) and creates the tables if needed, in the first
    /// schema of the search path. See [`AsyncPostgresStore::connect`].
    pub fn connect(params: &str) -> Result<PostgresStore, StoreError> {
        Blocking::open(|| AsyncPostgresStore::with_connections(params, 1))
    }
}

impl AsyncPostgresStore {
    /// Connects with a libpq-style string (`host=… user=… dbname=…`, or a
    /// `postgresql://` URL) and creates the tables if needed, with the
    /// plpgsql function `idemchart_moved` that its multi-row writes call,
    /// in the first schema of the search path; the pool keeps up to
    /// [`DEFAULT_CONNECTIONS`] connections.
    ///
    /// A `connect_timeout` in `params` bounds each new connection, the
    /// startup exchange included, as in libpq (the driver alone bounds only
    /// the TCP connect, so a server that accepts and then says nothing would
    /// hold the caller forever).
    pub async fn connect(params: &str) -> Result<AsyncPostgresStore, StoreError> {
        AsyncPostgresStore::with_connections(params, DEFAULT_CONNECTIONS).await
    }

    /// `connect` with a pool of at most `connections` (at least one).
    pub async fn with_connections(
        params: &str,
        connections: usize,
    ) -> Result<AsyncPostgresStore, StoreError> {
        let config: tokio_postgres::Config = params.parse().map_err(backend)?;
        // libpq's limit is per host; so is this one.
        let connect_deadline = config
            .get_connect_timeout()
            .map(|limit| *limit * config.get_hosts().len().max(1) as u32);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(connections.max(1))
            .runtime(Runtime::Tokio1)
            .create_timeout(connect_deadline)
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut store = AsyncPostgresStore {
            pool,
            connect_deadline,
            // The schema's transaction needs the pool, so the store is made
            // before its secret is read; these bytes are replaced by the
            // stored ones before the store is handed out, and never used.
            secret: StoreSecret::from_bytes([0; 32]),
        };
        store.secret = store.create_schema().await?;
        Ok(store)
    }

    /// Creates or migrates the schema, and answers the store's secret.
    async fn create_schema(&self) -> Result<StoreSecret, StoreError> {
        let tx = self.begin().await?;
        let created = async {
            let mut exec = tx.exec()?;
            exec.execute(&TAKE_SCHEMA_LOCK, &[Param::Int(SCHEMA_LOCK)])
                .await?;
            // `ALTER TABLE` in the migration locks the table until the
            // commit, so no writer sees the table half migrated.
            ops::create_schema(&mut exec).await
        }
        .await;
        self.finish(tx, created).await
    }

    /// Commits `tx` when `result` is `Ok`, rolls it back otherwise.
    async fn finish<T>(
        &self,
        tx: AsyncPostgresTransaction,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Ok(value) => {
                self.commit(tx).await?;
                Ok(value)
            }
            Err(e) => {
                self.rollback(tx).await;
                Err(e)
            }
        }
    }

    async fn connection(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            PoolError::Backend(e) => backend(e),
            PoolError::Timeout(_) => StoreError::Backend(match self.connect_deadline {
                Some(deadline) => format!(
                    "no answer from the server within {} s",
                    deadline.as_secs_f64()
                ),
                None => "no answer from the server".into(),
            }),
            other => StoreError::Backend(other.to_string()),
        })
    }
}

/// Runs statements on one connection, each prepared once per connection.
/// In a transaction whose `BEGIN` is not sent yet, the first statement
/// sends it ahead of itself, in the same round trip.
struct PgExec<'c> {
    client: &'c ClientWrapper,
    /// `None` outside a transaction.
    begun: Option<&'c AtomicBool>,
}

impl<'c> PgExec<'c> {
    fn plain(client: &'c ClientWrapper) -> PgExec<'c> {
        PgExec {
            client,
            begun: None,
        }
    }

    async fn statement(&self, sql: &'static Sql) -> Result<Statement, StoreError> {
        self.client
            .prepare_cached(sql.text(Dialect::Postgres))
            .await
            .map_err(backend)
    }

    /// Runs `work` after the transaction's `BEGIN`, which is sent first
    /// when no statement has sent it yet: both are issued before either
    /// answer is awaited.
    async fn after_begin<T>(
        &self,
        work: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let first = self
            .begun
            .is_some_and(|begun| !begun.swap(true, Ordering::Relaxed));
        if !first {
            return work.await;
        }
        let (begun, answer) = tokio::join!(biased; self.client.batch_execute("BEGIN"), work);
        begun.map_err(backend)?;
        answer
    }
}

fn as_sql<'a>(params: &'a [Param<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Executor for PgExec<'_> {
    async fn prepare(&self, statements: &[&'static Sql]) -> Result<(), StoreError> {
        // A round trip each only the first time on this connection.
        for sql in statements {
            self.statement(sql).await?;
        }
        Ok(())
    }

    async fn execute(&self, sql: &'static Sql, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let statement = self.statement(sql).await?;
        let params = as_sql(params);
        self.after_begin(async {
            self.client
                .execute(&statement, &params)
                .await
                .map_err(backend)
        })
        .await
    }

    async fn query<T>(
        &self,
        sql: &'static Sql,
        params: &[Param<'_>],
        decode: fn(&dyn Columns) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let statement = self.statement(sql).await?;
        let params = as_sql(params);
        let rows = self
            .after_begin(async {
                self.client
                    .query(&statement, &params)
                    .await
                    .map_err(backend)
            })
            .await?;
        rows.iter().map(|row| decode(row)).collect()
    }

    async fn batch(&self, sql: &'static Sql) -> Result<(), StoreError> {
        self.after_begin(async {
            self.client
                .batch_execute(sql.text(Dialect::Postgres))
                .await
                .map_err(backend)
        })
        .await
    }
}

/// An open transaction on a connection of the pool. Its `BEGIN` goes with
/// its first statement (`PgExec::after_begin`).
pub struct AsyncPostgresTransaction {
    /// `None` once committed or rolled back.
    client: Option<Object>,
    /// Whether `BEGIN` was sent.
    begun: AtomicBool,
}

impl AsyncPostgresTransaction {
    fn exec(&self) -> Result<PgExec<'_>, StoreError> {
        let client = self
            .client
            .as_deref()
            .ok_or_else(|| StoreError::Backend("the transaction is over".into()))?;
        Ok(PgExec {
            client,
            begun: Some(&self.begun),
        })
    }

    /// Ends the transaction with `statement`; a connection on which that
    /// failed is closed rather than handed to the next caller. A
    /// transaction that never sent `BEGIN` has nothing to end.
    async fn end(&mut self, statement: &str) -> Result<(), StoreError> {
        let Some(client) = self.client.take() else {
            return Ok(());
        };
        if !*self.begun.get_mut() {
            return Ok(());
        }
        match client.batch_execute(statement).await {
            Ok(()) => Ok(()),
            Err(e) => {
                drop(Object::take(client));
                Err(backend(e))
            }
        }
    }
}

impl Drop for AsyncPostgresTransaction {
    fn drop(&mut self) {
        // Dropped unfinished (its task was cancelled): the connection leaves
        // the pool and closes, and the server rolls the transaction back.
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

impl AsyncTransaction for AsyncPostgresTransaction {
    async fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        ops::applied_event(&mut self.exec()?, process, event_id).await
    }

    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        ops::process(&mut self.exec()?, id).await
    }

    async fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        ops::insert_process(&mut self.exec()?, row).await
    }

    async fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        ops::update_process(&mut self.exec()?, id, revision, snapshot, next_timer_at).await
    }

    async fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        ops::insert_applied_event(&mut self.exec()?, row).await
    }

    async fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        ops::insert_outbox(&mut self.exec()?, item).await
    }

    async fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        ops::cancel_outbox(&mut self.exec()?, key).await
    }

    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        ops::finish_attempt(&mut self.exec()?, attempt).await
    }

    async fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        ops::outbox_item(&mut self.exec()?, key).await
    }

    async fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        ops::pending_outbox(&mut self.exec()?, process).await
    }

    /// Before any other statement of the transaction, the reads run on
    /// their own, with no `BEGIN`: at READ COMMITTED a statement sees the
    /// rows committed when it starts, in a transaction or not, and a read
    /// takes no lock, so nothing is lost, and `write_last_rows` may then
    /// write and commit in one statement. The writes' revision checks and
    /// the marks' unique key decide a race, as they do after a read in the
    /// transaction.
    async fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> Result<RowReads, StoreError> {
        let mut exec = self.exec()?;
        if !self.begun.load(Ordering::Relaxed) {
            exec.begun = None;
        }
        ops::read_rows(&mut exec, marks, processes).await
    }

    async fn write_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        ops::write_rows(&mut self.exec()?, rows).await
    }

    /// The writes and the `COMMIT` in one round trip. A process row not
    /// written fails its statement (`idemchart_moved`), and a failed
    /// statement fails the transaction, so the `COMMIT` behind it rolls
    /// back: only writes that all succeeded are committed. Everything that
    /// can fail before the server runs them (the rows' JSON, preparing) is
    /// done first, so that every write is sent, in order, before the
    /// `COMMIT` is.
    ///
    /// In a transaction that has sent nothing yet (its reads ran on their
    /// own, `read_rows`), every write is one statement with no `BEGIN`
    /// (`write_alone`): the server runs it as a transaction of its own and
    /// answers once it is committed, `synchronous_commit` as configured;
    /// or rolls all of it back when any part fails.
    async fn write_last_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        if !*self.begun.get_mut() {
            let written = write_alone(self.exec()?.client, rows).await;
            // Over either way: nothing is left to commit or roll back, and
            // the connection, which is idle, goes back to the pool.
            self.client.take();
            return written;
        }
        let exec = self.exec()?;
        let writes = ops::prepare_writes(&exec, rows).await?;
        let client = exec.client;
        let (written, committed) = tokio::join!(
            biased;
            ops::send_writes(&exec, &writes),
            client.batch_execute("COMMIT"),
        );
        // Over either way: committed, or rolled back by the `COMMIT` of a
        // failed transaction; a connection whose `COMMIT` failed is closed.
        let client = self.client.take();
        if committed.is_err() {
            drop(client.map(Object::take));
        }
        match (written, committed) {
            (Ok(None), Err(e)) => Err(backend(e)),
            (written, _) => written,
        }
    }
}

/// The rows of JSON parameter `$n` of a statement: one `value` each.
fn rows_of(n: usize) -> String {
    format!("jsonb_array_elements(CAST(CAST(${n} AS TEXT) AS JSONB))")
}

/// The text of the one statement that writes the tables of `present` (in
/// `RowWrites` order: inserted and updated processes, applied events,
/// outbox rows, cancelled keys), their JSON rows its parameters in that
/// order: a data-modifying `WITH` part per table. The parts see one
/// snapshot and none sees another's rows, so an outbox row the same
/// writes cancel is inserted cancelled, and the update of the pending
/// rows already stored sees the rest. As in the statements of a table
/// each, a process row not written fails the statement (`idemchart_moved`).
fn write_all_text(present: [bool; 5]) -> String {
    let mut next = 0;
    let mut param = |here: bool| {
        here.then(|| {
            next += 1;
            next
        })
    };
    let [inserts, updates, applied, outbox, cancelled] = present.map(&mut param);
    let (mut parts, mut checks) = (Vec::new(), Vec::new());
    if let Some(n) = inserts {
        let rows = rows_of(n);
        parts.push(format!(
            "inserted AS (INSERT INTO processes (id, machine, version, snapshot, revision, next_timer_at)
     SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, CAST(value->>4 AS BIGINT), CAST(value->>5 AS BIGINT)
     FROM {rows} ON CONFLICT (id) DO NOTHING RETURNING id)"
        ));
        checks.push(format!(
            "SELECT idemchart_moved(value->>0) FROM {rows} WHERE value->>0 NOT IN (SELECT id FROM inserted)"
        ));
    }
    if let Some(n) = updates {
        let rows = rows_of(n);
        parts.push(format!(
            "updated AS (UPDATE processes SET snapshot = value->>1, next_timer_at = CAST(value->>2 AS BIGINT),
     revision = CAST(value->>4 AS BIGINT), version = CAST(CAST(value->>1 AS JSONB)->>'version' AS BIGINT)
     FROM {rows} WHERE processes.id = value->>0 AND processes.revision = CAST(value->>3 AS BIGINT)
     AND processes.id = ANY(ARRAY(SELECT value->>0 FROM {rows}))
     RETURNING processes.id)"
        ));
        checks.push(format!(
            "SELECT idemchart_moved(value->>0) FROM {rows} WHERE value->>0 NOT IN (SELECT id FROM updated)"
        ));
    }
    if let Some(n) = applied {
        let rows = rows_of(n);
        parts.push(format!(
            "applied AS (INSERT INTO applied_events (process, event_id, payload_hash, response, revision, applied_at, payload)
     SELECT value->>0, value->>1, value->>2, value->>3, CAST(value->>4 AS BIGINT), CAST(value->>5 AS BIGINT), value->>6
     FROM {rows})"
        ));
    }
    if let Some(n) = outbox {
        let status = match cancelled {
            Some(c) => format!(
                "CASE WHEN value->>6 = 'pending' AND value->>3 = ANY(ARRAY(SELECT value->>0 FROM {})) THEN 'cancelled' ELSE value->>6 END",
                rows_of(c)
            ),
            None => "value->>6".to_string(),
        };
        parts.push(format!(
            "outboxed AS (INSERT INTO outbox (process, event_id, position, idempotency_key, effect, args, status, attempts, next_attempt_at, last_error, invocation)
     SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, value->>4, value->>5, {status},
     CAST(value->>7 AS BIGINT), CAST(value->>8 AS BIGINT), value->>9, value->>10
     FROM {} ON CONFLICT DO NOTHING)",
            rows_of(n)
        ));
    }
    if let Some(n) = cancelled {
        parts.push(format!(
            "cancelled AS (UPDATE outbox SET status = 'cancelled' WHERE status = 'pending'
     AND idempotency_key = ANY(ARRAY(SELECT value->>0 FROM {})))",
            rows_of(n)
        ));
    }
    let main = if checks.is_empty() {
        "SELECT 1".to_string()
    } else {
        checks.join(" UNION ALL ")
    };
    format!("WITH {} {main}", parts.join(",\n     "))
}

/// Every statement `write_all_text` makes, by the tables it writes (a bit
/// each, in `RowWrites` order), made on first use and kept: the
/// prepared-statement cache is keyed by the text.
fn write_all_statement(present: [bool; 5]) -> &'static str {
    static TEXTS: [std::sync::OnceLock<String>; 32] = [const { std::sync::OnceLock::new() }; 32];
    let index = present
        .iter()
        .enumerate()
        .fold(0, |bits, (i, here)| bits | (usize::from(*here) << i));
    TEXTS[index].get_or_init(|| write_all_text(present))
}

/// `rows` in one statement outside any transaction (`write_all_text`),
/// which the server commits before it answers; the process another writer
/// moved or created when that failed it.
async fn write_alone(
    client: &ClientWrapper,
    rows: &RowWrites,
) -> Result<Option<String>, StoreError> {
    let writes = super::sql::writes_json(rows)?;
    let present = writes.each_ref().map(Option::is_some);
    if !present.contains(&true) {
        return Ok(None);
    }
    let statement = client
        .prepare_cached(write_all_statement(present))
        .await
        .map_err(backend)?;
    let params: Vec<Param<'_>> = writes
        .iter()
        .flatten()
        .map(|json| Param::text(json))
        .collect();
    match client.execute(&statement, &as_sql(&params)).await {
        Ok(_) => Ok(None),
        Err(e) => match backend(e) {
            StoreError::Race(message) if message.starts_with(super::sql::MOVED) => {
                Ok(Some(message[super::sql::MOVED.len()..].to_string()))
            }
            error => Err(error),
        },
    }
}

impl AsyncStore for AsyncPostgresStore {
    type Transaction = AsyncPostgresTransaction;

    fn secret(&self) -> &StoreSecret {
        &self.secret
    }

    async fn begin(&self) -> Result<AsyncPostgresTransaction, StoreError> {
        Ok(AsyncPostgresTransaction {
            client: Some(self.connection().await?),
            begun: AtomicBool::new(false),
        })
    }

    async fn commit(&self, mut tx: AsyncPostgresTransaction) -> Result<(), StoreError> {
        tx.end("COMMIT").await
    }

    async fn rollback(&self, mut tx: AsyncPostgresTransaction) {
        let _ = tx.end("ROLLBACK").await;
    }

    async fn process(&self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        ops::process(&mut PgExec::plain(&*self.connection().await?), id).await
    }

    async fn outbox(&self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        ops::outbox(&mut PgExec::plain(&*self.connection().await?), status).await
    }

    async fn claim_due_of(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        // One transaction, which keeps the rows locked from other
        // dispatchers until it commits.
        let tx = self.begin().await?;
        let claimed =
            async { ops::claim_due(&mut tx.exec()?, now, lease_ms, limit, machine, effects).await }
                .await;
        self.finish(tx, claimed).await
    }

    async fn finish_attempt(&self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        let client = self.connection().await?;
        ops::finish_attempt(&mut PgExec::plain(&client), attempt).await
    }

    async fn due_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let client = self.connection().await?;
        ops::due_processes(&mut PgExec::plain(&client), machine, version, now, limit).await
    }

    async fn stale_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let client = self.connection().await?;
        ops::stale_processes(&mut PgExec::plain(&client), machine, version, after, limit).await
    }

    async fn processes_of(
        &self,
        machine: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ProcessRow>, StoreError> {
        let client = self.connection().await?;
        ops::processes_of(&mut PgExec::plain(&client), machine, after, limit).await
    }

    async fn outbox_of(&self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        ops::outbox_of(&mut PgExec::plain(&*self.connection().await?), process).await
    }

    async fn purge_applied(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        ops::purge_applied(
            &mut PgExec::plain(&*self.connection().await?),
            machine,
            before,
        )
        .await
    }

    async fn purge_payloads(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        ops::purge_payloads(
            &mut PgExec::plain(&*self.connection().await?),
            machine,
            before,
        )
        .await
    }

    async fn purge_outbox(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        ops::purge_outbox(
            &mut PgExec::plain(&*self.connection().await?),
            machine,
            before,
        )
        .await
    }

    async fn requeue_dead(&self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        ops::requeue_dead(&mut PgExec::plain(&*self.connection().await?), key, now).await
    }

    async fn applied_count(&self, process: &str) -> Result<usize, StoreError> {
        ops::applied_count(&mut PgExec::plain(&*self.connection().await?), process).await
    }

    async fn applied_events(
        &self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        let client = self.connection().await?;
        ops::applied_events(&mut PgExec::plain(&client), process, offset, limit).await
    }

    async fn stats(&self, now: u64) -> Result<StoreStats, StoreError> {
        ops::stats(&mut PgExec::plain(&*self.connection().await?), now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AsyncStore, ProcessUpdate};

    /// A store on a fresh schema of `IDEMCHART_PG`'s server, with a pool of
    /// `connections`, and the schema's name.
    async fn fresh_store(connections: usize) -> (AsyncPostgresStore, String) {
        let base = std::env::var("IDEMCHART_PG")
            .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let schema = format!(
            "unit_{}_{}_{}",
            std::process::id(),
            crate::runtime::now_millis(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let admin = AsyncPostgresStore::with_connections(&base, 1)
            .await
            .unwrap();
        admin
            .connection()
            .await
            .unwrap()
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .unwrap();
        let params = format!("{base} options='-c search_path={schema}'");
        let store = AsyncPostgresStore::with_connections(&params, connections)
            .await
            .unwrap();
        (store, schema)
    }

    fn process_row(id: &str) -> ProcessRow {
        ProcessRow {
            id: id.into(),
            machine: "m".into(),
            version: None,
            snapshot: "{}".into(),
            revision: 1,
            next_timer_at: None,
        }
    }

    fn applied_row(process: &str, event_id: &str, revision: u64) -> AppliedEvent {
        AppliedEvent {
            process: process.into(),
            event_id: event_id.into(),
            payload_hash: "0".repeat(64),
            response: "{}".into(),
            revision,
            applied_at: 1,
            payload: None,
        }
    }

    /// A transaction of `store`, which has sent a statement already when
    /// `begun` (the writes then go with `COMMIT`) and none otherwise (they
    /// are then one statement of their own, `write_alone`).
    async fn transaction(store: &AsyncPostgresStore, begun: bool) -> AsyncPostgresTransaction {
        let mut tx = store.begin().await.unwrap();
        if begun {
            assert_eq!(tx.process("none").await.unwrap(), None);
            assert!(*tx.begun.get_mut());
        }
        tx
    }

    /// `write_last_rows` commits with its writes: what it wrote is seen by
    /// another connection before `commit` is called. When a process row it
    /// updates was moved meanwhile, it answers that process and nothing of
    /// the transaction is kept, not even the rows before the failed one.
    /// Both ways: in a transaction begun before, and as the transaction's
    /// only statement.
    #[tokio::test]
    #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
    async fn the_last_writes_commit_with_them_or_not_at_all() {
        for begun in [true, false] {
            last_writes_commit_with_them_or_not_at_all(begun).await;
        }
    }

    async fn last_writes_commit_with_them_or_not_at_all(begun: bool) {
        let (store, _) = fresh_store(2).await;
        let mut tx = transaction(&store, begun).await;
        let first = RowWrites {
            inserts: vec![process_row("p1")],
            applied: vec![applied_row("p1", "e1", 1)],
            ..RowWrites::default()
        };
        assert_eq!(tx.write_last_rows(&first).await.unwrap(), None);
        let seen = store.process("p1").await.unwrap().map(|row| row.revision);
        assert_eq!(seen, Some(1), "committed before commit is called");
        assert_eq!(store.applied_count("p1").await.unwrap(), 1);
        store.commit(tx).await.unwrap();

        // Another writer moves p1 to revision 2 after this one read 1.
        let mut moved = transaction(&store, begun).await;
        let update = |revision: u64| ProcessUpdate {
            id: "p1".into(),
            read: revision - 1,
            revision,
            snapshot: "{}".into(),
            next_timer_at: None,
        };
        let rows = RowWrites {
            updates: vec![update(2)],
            ..RowWrites::default()
        };
        assert_eq!(moved.write_last_rows(&rows).await.unwrap(), None);
        store.commit(moved).await.unwrap();
        let mut tx = transaction(&store, begun).await;
        let lost = RowWrites {
            inserts: vec![process_row("p2")],
            updates: vec![update(2)],
            applied: vec![applied_row("p2", "e2", 1), applied_row("p1", "e3", 2)],
            ..RowWrites::default()
        };
        assert_eq!(
            tx.write_last_rows(&lost).await.unwrap(),
            Some("p1".to_string())
        );
        store.rollback(tx).await;
        assert_eq!(store.process("p2").await.unwrap(), None);
        assert_eq!(store.applied_count("p2").await.unwrap(), 0);
        assert_eq!(store.applied_count("p1").await.unwrap(), 1);
        // The connections are fit for the next transaction.
        let mut tx = transaction(&store, begun).await;
        let again = RowWrites {
            updates: vec![update(3)],
            ..RowWrites::default()
        };
        assert_eq!(tx.write_last_rows(&again).await.unwrap(), None);
        store.commit(tx).await.unwrap();
        let revision = store.process("p1").await.unwrap().map(|row| row.revision);
        assert_eq!(revision, Some(3));
    }

    fn outbox_row(process: &str, key: &str) -> OutboxItem {
        OutboxItem {
            process: process.into(),
            event_id: key.into(),
            position: 0,
            key: key.into(),
            effect: "e".into(),
            args: "{}".into(),
            status: OutboxStatus::Pending,
            attempts: 0,
            next_attempt_at: 1,
            last_error: None,
            invocation: None,
        }
    }

    /// A write that inserts an outbox row and cancels it (an invocation
    /// started and its state left in one batch) leaves it cancelled, as one
    /// statement after the other would, beside a stored pending row it
    /// cancels and a new one it does not; both ways of `write_last_rows`.
    #[tokio::test]
    #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
    async fn an_outbox_row_written_and_cancelled_at_once_is_cancelled() {
        for begun in [true, false] {
            let (store, _) = fresh_store(1).await;
            let mut tx = transaction(&store, begun).await;
            let stored = RowWrites {
                inserts: vec![process_row("p")],
                outbox: vec![outbox_row("p", "k0")],
                ..RowWrites::default()
            };
            assert_eq!(tx.write_last_rows(&stored).await.unwrap(), None);
            store.commit(tx).await.unwrap();
            let mut tx = transaction(&store, begun).await;
            let rows = RowWrites {
                outbox: vec![outbox_row("p", "k1"), outbox_row("p", "k2")],
                cancelled: vec!["k0".into(), "k1".into()],
                ..RowWrites::default()
            };
            assert_eq!(tx.write_last_rows(&rows).await.unwrap(), None);
            store.commit(tx).await.unwrap();
            let statuses: Vec<(String, OutboxStatus)> = store
                .outbox_of("p")
                .await
                .unwrap()
                .into_iter()
                .map(|item| (item.key, item.status))
                .collect();
            assert_eq!(
                statuses,
                [
                    ("k0".to_string(), OutboxStatus::Cancelled),
                    ("k1".to_string(), OutboxStatus::Cancelled),
                    ("k2".to_string(), OutboxStatus::Pending),
                ],
                "begun: {begun}"
            );
        }
    }

    /// The generic plan of the multi-row read, which a prepared statement
    /// comes to after its first executions, looks its rows up in the
    /// primary key: a scan of the table would cost every request the whole
    /// table (`applied_events` grows with every event).
    #[tokio::test]
    #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
    async fn the_multi_row_read_uses_the_primary_keys() {
        let (store, _) = fresh_store(1).await;
        let client = store.connection().await.unwrap();
        client
            .batch_execute("SET plan_cache_mode = force_generic_plan")
            .await
            .unwrap();
        let text = crate::store::sql::SELECT_ROWS_MANY.text(Dialect::Postgres);
        client
            .batch_execute(&format!("PREPARE rows(TEXT, TEXT) AS {text}"))
            .await
            .unwrap();
        let plan: Vec<String> = client
            .query(r#"EXPLAIN EXECUTE rows('[["p", "e"]]', '[["p"]]')"#, &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        for key in ["applied_events_pkey", "processes_pkey"] {
            assert!(plan.contains(key), "{text}:\n{plan}");
        }
        assert!(!plan.contains("Seq Scan"), "{text}:\n{plan}");
    }
}
