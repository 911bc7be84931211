//! The stores' operations, written once over an `Executor` that runs one
//! statement: SQLite's runs it on a connection before it returns (its
//! futures are ready when first polled), PostgreSQL's sends it to the server.
//! What each operation reads and writes, and in which order, is therefore the
//! same for every store, sync or async.

use std::future::Future;

use super::sql::{self, Columns, Param, Sql};
use super::{
    AppliedEvent, AttemptRecord, OutboxItem, OutboxStatus, ProcessRow, RowReads, RowWrites,
    StoreError, StoreSecret, StoreStats, migrate,
};

/// Runs single statements on one connection. The methods take `&self`, so
/// that an operation may issue several statements at once: PostgreSQL's
/// sends each when its future is first polled and the server answers them
/// in order (a pipeline, one round trip for all), SQLite's runs each then.
pub(crate) trait Executor {
    /// Prepares `statements` (all at once) where the driver keeps prepared
    /// statements, so that statements issued together afterwards are each
    /// sent at their first poll, in the order they are polled.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn prepare(&self, statements: &[&'static Sql]) -> impl Future<Output = Result<(), StoreError>>;

    /// Runs `sql`; how many rows it changed.
    fn execute(
        &self,
        sql: &'static Sql,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<u64, StoreError>>;

    /// Runs `sql` and decodes every row it returns.
    fn query<T>(
        &self,
        sql: &'static Sql,
        params: &[Param<'_>],
        decode: fn(&dyn Columns) -> Result<T, StoreError>,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>>;

    /// Runs statements without parameters, separated by semicolons.
    fn batch(&self, sql: &'static Sql) -> impl Future<Output = Result<(), StoreError>>;
}

fn count(row: &dyn Columns) -> Result<u64, StoreError> {
    sql::int(row, 0)
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Creates the tables if needed, brings a store made by an earlier version
/// up to date, and answers the store's secret (made now if the store has
/// none yet). The caller runs it in a transaction that holds the schema lock
/// of its store.
pub(crate) async fn create_schema<E: Executor>(exec: &mut E) -> Result<StoreSecret, StoreError> {
    exec.batch(&sql::SCHEMA).await?;
    let present = exec.query(&sql::HAS_NEXT_TIMER_AT, &[], count).await?;
    if present.first() == Some(&0) {
        add_next_timer_at(exec).await?;
    }
    let invocations = exec.query(&sql::HAS_OUTBOX_INVOCATION, &[], count).await?;
    if invocations.first() == Some(&0) {
        exec.batch(&sql::ADD_OUTBOX_INVOCATION).await?;
    }
    let payloads = exec.query(&sql::HAS_APPLIED_PAYLOAD, &[], count).await?;
    if payloads.first() == Some(&0) {
        exec.batch(&sql::ADD_APPLIED_PAYLOAD).await?;
    }
    let indexed = exec.query(&sql::HAS_NEXT_TIMER_INDEX, &[], count).await?;
    if indexed.first() == Some(&0) {
        exec.batch(&sql::CREATE_NEXT_TIMER_INDEX).await?;
    }
    let moved = exec.query(&sql::HAS_MOVED_FUNCTION, &[], count).await?;
    if moved.first() == Some(&0) {
        exec.batch(&sql::CREATE_MOVED_FUNCTION).await?;
    }
    secret(exec).await
}

/// The name of the secret's row in `store_secrets`, a table that may one
/// day hold a rotated successor beside it.
const KEY_SECRET: &str = "outgoing-keys-v1";

/// The store's secret: a store made before secrets existed, or a new one,
/// gets 32 random bytes here, once; the insert does nothing when the row
/// exists, so every instance of a shared store reads the same bytes.
async fn secret<E: Executor>(exec: &mut E) -> Result<StoreSecret, StoreError> {
    let fresh = StoreSecret::random()?.to_hex();
    let params = [Param::text(KEY_SECRET), Param::text(&fresh)];
    exec.execute(&sql::INSERT_SECRET, &params).await?;
    let stored = exec
        .query(&sql::SELECT_SECRET, &[Param::text(KEY_SECRET)], |row| {
            sql::text(row, 0)
        })
        .await?;
    let text = stored
        .first()
        .ok_or_else(|| StoreError::Corrupt("the store's secret is missing".into()))?;
    StoreSecret::from_hex(text)
}

/// The outbox row with `key`, if there is one.
pub(crate) async fn outbox_item<E: Executor>(
    exec: &mut E,
    key: &str,
) -> Result<Option<OutboxItem>, StoreError> {
    let rows = exec
        .query(
            &sql::SELECT_OUTBOX_BY_KEY,
            &[Param::text(key)],
            sql::outbox_row,
        )
        .await?;
    Ok(rows.into_iter().next())
}

/// Adds `next_timer_at` to a `processes` table made by an earlier version
/// and rebases its snapshots' clocks (see `store::migrate`).
async fn add_next_timer_at<E: Executor>(exec: &mut E) -> Result<(), StoreError> {
    exec.batch(&sql::ADD_NEXT_TIMER_AT).await?;
    let rows = exec
        .query(&sql::LEGACY_SNAPSHOTS, &[], |row| {
            Ok((
                sql::text(row, 0)?,
                sql::text(row, 1)?,
                sql::opt_int(row, 2)?,
            ))
        })
        .await?;
    // The upgrade's time, for a process without applied events.
    let upgrade = crate::clock::now_millis();
    for (id, snapshot, last_applied) in rows {
        let base = last_applied.unwrap_or(upgrade);
        if let Some((snapshot, next)) = migrate::rebase_legacy_snapshot(&snapshot, base)? {
            let params = [Param::text(&snapshot), Param::int(next), Param::text(&id)];
            exec.execute(&sql::REBASE_SNAPSHOT, &params).await?;
        }
    }
    Ok(())
}

pub(crate) async fn applied_event<E: Executor>(
    exec: &mut E,
    process: &str,
    event_id: &str,
) -> Result<Option<AppliedEvent>, StoreError> {
    let params = [Param::text(process), Param::text(event_id)];
    let rows = exec
        .query(&sql::SELECT_APPLIED, &params, |row| {
            Ok((
                sql::text(row, 0)?,
                sql::text(row, 1)?,
                sql::int(row, 2)?,
                sql::int(row, 3)?,
                row.text(4)?,
            ))
        })
        .await?;
    Ok(rows
        .into_iter()
        .next()
        .map(
            |(payload_hash, response, revision, applied_at, payload)| AppliedEvent {
                process: process.to_string(),
                event_id: event_id.to_string(),
                payload_hash,
                response,
                revision,
                applied_at,
                payload,
            },
        ))
}

pub(crate) async fn process<E: Executor>(
    exec: &mut E,
    id: &str,
) -> Result<Option<ProcessRow>, StoreError> {
    let rows = exec
        .query(&sql::SELECT_PROCESS, &[Param::text(id)], sql::process_row)
        .await?;
    Ok(rows.into_iter().next())
}

pub(crate) async fn insert_process<E: Executor>(
    exec: &mut E,
    row: &ProcessRow,
) -> Result<bool, StoreError> {
    let params = sql::process_params(row);
    Ok(exec.execute(&sql::INSERT_PROCESS, &params).await? == 1)
}

pub(crate) async fn update_process<E: Executor>(
    exec: &mut E,
    id: &str,
    revision: u64,
    snapshot: &str,
    next_timer_at: Option<u64>,
) -> Result<bool, StoreError> {
    let params = [
        Param::text(snapshot),
        Param::opt_int(next_timer_at),
        Param::text(id),
        Param::int(revision),
    ];
    Ok(exec.execute(&sql::UPDATE_PROCESS, &params).await? == 1)
}

pub(crate) async fn insert_applied_event<E: Executor>(
    exec: &mut E,
    row: &AppliedEvent,
) -> Result<(), StoreError> {
    let params = sql::applied_params(row);
    exec.execute(&sql::INSERT_APPLIED, &params).await?;
    Ok(())
}

pub(crate) async fn insert_outbox<E: Executor>(
    exec: &mut E,
    item: &OutboxItem,
) -> Result<(), StoreError> {
    let params = sql::outbox_params(item);
    exec.execute(&sql::INSERT_OUTBOX, &params).await?;
    Ok(())
}

/// The reads of a batch (`Transaction::read_rows`), in one statement.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) async fn read_rows<E: Executor>(
    exec: &mut E,
    marks: &[(&str, &str)],
    processes: &[&str],
) -> Result<RowReads, StoreError> {
    let (marks, ids) = (sql::marks_json(marks)?, sql::ids_json(processes)?);
    let params = [Param::text(&marks), Param::text(&ids)];
    let rows = exec
        .query(&sql::SELECT_ROWS_MANY, &params, sql::read_row)
        .await?;
    let mut read = RowReads::default();
    for row in rows {
        match row {
            sql::ReadRow::Applied(row) => read.applied.push(row),
            sql::ReadRow::Process(row) => read.processes.push(row),
        }
    }
    Ok(read)
}

/// The writes of a batch (`Transaction::write_rows`): one statement per
/// table that has rows, all issued at once and run by the server in the
/// order written. The first error in that order is the answer, since a
/// statement after a failed one fails only because the transaction did;
/// a process row not written fails its statement with `sql::MOVED`, and is
/// answered as the process another writer moved.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) async fn write_rows<E: Executor>(
    exec: &mut E,
    rows: &RowWrites,
) -> Result<Option<String>, StoreError> {
    let writes = prepare_writes(&*exec, rows).await?;
    send_writes(&*exec, &writes).await
}

/// The parameters of `rows`' statements (`sql::writes_json`), with every
/// statement prepared: all that can fail before a statement is sent, so
/// that `send_writes` sends each on its first poll.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) async fn prepare_writes<E: Executor>(
    exec: &E,
    rows: &RowWrites,
) -> Result<[Option<String>; 5], StoreError> {
    let writes = sql::writes_json(rows)?;
    exec.prepare(&WRITES).await?;
    Ok(writes)
}

/// The `*_MANY` statements of `RowWrites`, in its order.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const WRITES: [&Sql; 5] = [
    &sql::INSERT_PROCESS_MANY,
    &sql::UPDATE_PROCESS_MANY,
    &sql::INSERT_APPLIED_MANY,
    &sql::INSERT_OUTBOX_MANY,
    &sql::CANCEL_OUTBOX_MANY,
];

/// Runs the writes `prepare_writes` made ready; see `write_rows`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) async fn send_writes<E: Executor>(
    exec: &E,
    writes: &[Option<String>; 5],
) -> Result<Option<String>, StoreError> {
    let [inserts, updates, applied, outbox, cancelled] = writes;
    let written = tokio::join!(
        biased;
        written_rows(exec, WRITES[0], inserts.as_deref()),
        written_rows(exec, WRITES[1], updates.as_deref()),
        written_rows(exec, WRITES[2], applied.as_deref()),
        written_rows(exec, WRITES[3], outbox.as_deref()),
        written_rows(exec, WRITES[4], cancelled.as_deref()),
    );
    let first_error = [written.0, written.1, written.2, written.3, written.4]
        .into_iter()
        .find_map(Result::err);
    match first_error {
        None => Ok(None),
        Some(StoreError::Race(message)) if message.starts_with(sql::MOVED) => {
            Ok(Some(message[sql::MOVED.len()..].to_string()))
        }
        Some(error) => Err(error),
    }
}

/// Runs `sql` (a `*_MANY` write) for the rows in `json`, if any.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
async fn written_rows<E: Executor>(
    exec: &E,
    sql: &'static Sql,
    json: Option<&str>,
) -> Result<(), StoreError> {
    let Some(json) = json else {
        return Ok(());
    };
    exec.execute(sql, &[Param::text(json)]).await.map(drop)
}

pub(crate) async fn cancel_outbox<E: Executor>(exec: &mut E, key: &str) -> Result<(), StoreError> {
    exec.execute(&sql::CANCEL_OUTBOX, &[Param::text(key)])
        .await?;
    Ok(())
}

pub(crate) async fn outbox<E: Executor>(
    exec: &mut E,
    status: Option<OutboxStatus>,
) -> Result<Vec<OutboxItem>, StoreError> {
    let params = [Param::opt_text(status.map(OutboxStatus::as_str))];
    exec.query(&sql::SELECT_OUTBOX, &params, sql::outbox_row)
        .await
}

/// The pending rows due at `now`, each leased until `now + lease_ms`. The
/// caller runs it in a transaction, so that the rows it selects are its own
/// until the commit.
/// Only the rows of the processes of `machine`, and of `effects`, where
/// they are named.
pub(crate) async fn claim_due<E: Executor>(
    exec: &mut E,
    now: u64,
    lease_ms: u64,
    limit: usize,
    machine: Option<&str>,
    effects: Option<&[String]>,
) -> Result<Vec<OutboxItem>, StoreError> {
    let effects = effects.map(|names| serde_json::Value::from(names).to_string());
    let params = [
        Param::int(now),
        Param::int(limit as u64),
        Param::opt_text(effects.as_deref()),
        Param::opt_text(machine),
    ];
    let items = exec
        .query(&sql::SELECT_DUE_OUTBOX, &params, sql::outbox_row)
        .await?;
    let until = now.saturating_add(lease_ms);
    for item in &items {
        let params = [Param::int(until), Param::text(&item.key)];
        exec.execute(&sql::LEASE_OUTBOX, &params).await?;
    }
    Ok(items)
}

pub(crate) async fn finish_attempt<E: Executor>(
    exec: &mut E,
    attempt: &AttemptRecord<'_>,
) -> Result<(), StoreError> {
    let params = [
        Param::text(attempt.status.as_str()),
        Param::int(u64::from(attempt.attempts)),
        Param::int(attempt.next_attempt_at),
        Param::opt_text(attempt.last_error),
        Param::text(attempt.key),
    ];
    exec.execute(&sql::FINISH_ATTEMPT, &params).await?;
    Ok(())
}

/// Nothing is claimed: a lock taken here would end with its own statement,
/// before the advance that needs it. Each advance runs in its own
/// transaction under the revision check, which is what makes a timer fire
/// once.
pub(crate) async fn due_processes<E: Executor>(
    exec: &mut E,
    machine: &str,
    version: Option<u64>,
    now: u64,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let params = [
        Param::int(now),
        Param::text(machine),
        Param::opt_int(version),
        Param::int(limit as u64),
    ];
    exec.query(&sql::DUE_PROCESSES, &params, |row| sql::text(row, 0))
        .await
}

/// One page of the ids of `machine`'s processes at another version than
/// `version`, after `after`, in id order (see `sql::STALE_PROCESSES`).
pub(crate) async fn stale_processes<E: Executor>(
    exec: &mut E,
    machine: &str,
    version: Option<u64>,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let params = [
        Param::text(machine),
        Param::opt_int(version),
        Param::opt_text(after),
        Param::int(limit as u64),
    ];
    exec.query(&sql::STALE_PROCESSES, &params, |row| sql::text(row, 0))
        .await
}

/// One page of `machine`'s process rows after `after`, in id order (see
/// `sql::PROCESSES_OF`).
pub(crate) async fn processes_of<E: Executor>(
    exec: &mut E,
    machine: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<ProcessRow>, StoreError> {
    let params = [
        Param::text(machine),
        Param::opt_text(after),
        Param::int(limit as u64),
    ];
    exec.query(&sql::PROCESSES_OF, &params, sql::process_row)
        .await
}

/// Every outbox row of `process` (see `sql::OUTBOX_OF`).
pub(crate) async fn outbox_of<E: Executor>(
    exec: &mut E,
    process: &str,
) -> Result<Vec<OutboxItem>, StoreError> {
    exec.query(&sql::OUTBOX_OF, &[Param::text(process)], sql::outbox_row)
        .await
}

pub(crate) async fn pending_outbox<E: Executor>(
    exec: &mut E,
    process: &str,
) -> Result<Vec<OutboxItem>, StoreError> {
    exec.query(
        &sql::PENDING_OUTBOX_OF,
        &[Param::text(process)],
        sql::outbox_row,
    )
    .await
}

pub(crate) async fn purge_applied<E: Executor>(
    exec: &mut E,
    machine: &str,
    before: u64,
) -> Result<usize, StoreError> {
    let params = [Param::int(before), Param::text(machine)];
    Ok(usize_of(exec.execute(&sql::PURGE_APPLIED, &params).await?))
}

pub(crate) async fn purge_payloads<E: Executor>(
    exec: &mut E,
    machine: &str,
    before: u64,
) -> Result<usize, StoreError> {
    let params = [Param::int(before), Param::text(machine)];
    Ok(usize_of(exec.execute(&sql::PURGE_PAYLOADS, &params).await?))
}

pub(crate) async fn purge_outbox<E: Executor>(
    exec: &mut E,
    machine: &str,
    before: u64,
) -> Result<usize, StoreError> {
    let params = [Param::int(before), Param::text(machine)];
    Ok(usize_of(exec.execute(&sql::PURGE_OUTBOX, &params).await?))
}

pub(crate) async fn requeue_dead<E: Executor>(
    exec: &mut E,
    key: Option<&str>,
    now: u64,
) -> Result<usize, StoreError> {
    let params = [Param::int(now), Param::opt_text(key)];
    Ok(usize_of(exec.execute(&sql::REQUEUE_DEAD, &params).await?))
}

pub(crate) async fn applied_count<E: Executor>(
    exec: &mut E,
    process: &str,
) -> Result<usize, StoreError> {
    let counts = exec
        .query(&sql::APPLIED_COUNT, &[Param::text(process)], count)
        .await?;
    Ok(usize_of(counts.first().copied().unwrap_or(0)))
}

pub(crate) async fn applied_events<E: Executor>(
    exec: &mut E,
    process: &str,
    offset: usize,
    limit: usize,
) -> Result<Vec<AppliedEvent>, StoreError> {
    let params = [
        Param::text(process),
        Param::int(limit as u64),
        Param::int(offset as u64),
    ];
    let rows = exec
        .query(&sql::APPLIED_PAGE, &params, |row| {
            Ok((
                sql::text(row, 0)?,
                sql::text(row, 1)?,
                sql::text(row, 2)?,
                sql::int(row, 3)?,
                sql::int(row, 4)?,
                row.text(5)?,
            ))
        })
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(event_id, payload_hash, response, revision, applied_at, payload)| AppliedEvent {
                process: process.to_string(),
                event_id,
                payload_hash,
                response,
                revision,
                applied_at,
                payload,
            },
        )
        .collect())
}

pub(crate) async fn stats<E: Executor>(exec: &mut E, now: u64) -> Result<StoreStats, StoreError> {
    let rows = exec
        .query(&sql::STATS, &[Param::int(now)], |row| {
            Ok(StoreStats {
                outbox_pending: sql::int(row, 0)?,
                outbox_dead: sql::int(row, 1)?,
                timers_due: sql::int(row, 2)?,
            })
        })
        .await?;
    Ok(rows.into_iter().next().unwrap_or_default())
}
