//! The durable runtime's async API: the functions of [`runtime`](super),
//! awaited on an [`AsyncStore`] instead of called on a [`Store`].
//!
//! Each is the same implementation as its sync twin, driven through the
//! async store: the same answers, byte for byte, the same rows, the same
//! outbox keys and revisions. The store is taken by `&`, so one handle
//! (`Clone`, or in an `Arc`) serves every task, each call on a connection of
//! the store's pool, and the futures are `Send` for the stores of this
//! crate, as a server's handler needs:
//!
//! ```
//! use std::sync::Arc;
//! use idemchart::expr::{Event, Value};
//! use idemchart::interp::Chart;
//! use idemchart::runtime::nonblocking;
//! use idemchart::store::AsyncSqliteStore;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let machine = idemchart::syntax::parse(
//!     "machine: lamp\ninitial: off\nevents: { ON: {} }\nstates:\n  off: { on: { ON: on } }\n  on: {}\n",
//!     idemchart::syntax::Syntax::Yaml,
//! ).unwrap();
//! let chart = Arc::new(Chart::new(machine));
//! let store = AsyncSqliteStore::in_memory().await.unwrap();
//! let on = Event::new("ON", Some(Value::from("on-1")), Value::Null);
//! let first = nonblocking::apply(&store, &chart, "hall", &on).await.unwrap();
//! let again = nonblocking::apply(&store, &chart, "hall", &on).await.unwrap();
//! assert_eq!((first.kind(), again.kind()), ("applied", "duplicate"));
//! assert_eq!(first.response(), again.response());
//! # });
//! ```
//!
//! [`Store`]: crate::store::Store

use std::future::Future;
use std::sync::Arc;

use super::batch::apply_batch_at_with;
use super::dispatch::{complete_with, dispatch_with};
use super::driver::AsyncDriver;
use super::migrate_stored::{migrate_process_with, migrate_stored_with};
use super::timers::{advance_due_with, advance_with};
use super::{
    Advanced, Completed, Dispatch, DispatchPolicy, DispatchReport, DueProcess, Moved, Outcome,
    ProcessMove, Purged, RuntimeError, apply_at_with, inspect_with, now_millis, purge_with,
};
use crate::expr::Event;
use crate::interp::Chart;
use crate::store::{AsyncStore, OutboxItem};

/// [`runtime::apply`](super::apply): `apply_at` with the system clock.
pub async fn apply<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
) -> Result<Outcome, RuntimeError> {
    apply_at(store, chart, process, event, now_millis()).await
}

/// [`runtime::apply_at`](super::apply_at): applies `event` to `process`
/// exactly once, at `now`.
pub async fn apply_at<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
    now: u64,
) -> Result<Outcome, RuntimeError> {
    apply_at_with(&mut AsyncDriver(store), chart, process, event, now).await
}

/// [`runtime::apply_batch`](super::apply_batch): `apply_batch_at` with the
/// system clock.
pub async fn apply_batch<S: AsyncStore, P: AsRef<str>>(
    store: &S,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
) -> Result<Vec<Result<Outcome, RuntimeError>>, RuntimeError> {
    apply_batch_at(store, chart, events, now_millis()).await
}

/// [`runtime::apply_batch_at`](super::apply_batch_at): many events in one
/// transaction, each answered as `apply_at` would answer it.
pub async fn apply_batch_at<S: AsyncStore, P: AsRef<str>>(
    store: &S,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
    now: u64,
) -> Result<Vec<Result<Outcome, RuntimeError>>, RuntimeError> {
    apply_batch_at_with(&mut AsyncDriver(store), chart, events, now).await
}

/// [`runtime::advance`](super::advance): fires the timers of `process` due
/// at `now`.
pub async fn advance<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    process: &str,
    now: u64,
) -> Result<Advanced, RuntimeError> {
    advance_with(&mut AsyncDriver(store), chart, process, now, &mut None).await
}

/// [`runtime::advance_due`](super::advance_due): advances up to `limit`
/// due processes of `chart`'s machine.
pub async fn advance_due<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    now: u64,
    limit: usize,
) -> Result<Vec<DueProcess>, RuntimeError> {
    advance_due_with(&mut AsyncDriver(store), chart, now, limit).await
}

/// [`runtime::dispatch`](super::dispatch), with a handler that answers in a
/// future (a call to the receiver, say). The handler gets its own copy of
/// each row, so that its future may keep it.
pub async fn dispatch<S, H, F>(
    store: &S,
    chart: &Arc<Chart>,
    now: u64,
    policy: &DispatchPolicy,
    mut handler: H,
) -> Result<DispatchReport, RuntimeError>
where
    S: AsyncStore,
    H: FnMut(OutboxItem) -> F,
    F: Future<Output = Dispatch>,
{
    dispatch_with(
        &mut AsyncDriver(store),
        chart,
        now,
        policy,
        |item: &OutboxItem| handler(item.clone()),
    )
    .await
}

/// [`runtime::complete_at`](super::complete_at): answers the invocation
/// whose row of `process` has `key`, at `now`.
pub async fn complete_at<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    process: &str,
    key: &str,
    answer: Dispatch,
    now: u64,
) -> Result<Completed, RuntimeError> {
    complete_with(&mut AsyncDriver(store), chart, process, key, answer, now).await
}

/// [`runtime::inspect`](super::inspect): the stored state of a process.
pub async fn inspect<S: AsyncStore>(
    store: &S,
    process: &str,
) -> Result<Option<serde_json::Value>, RuntimeError> {
    inspect_with(&mut AsyncDriver(store), process).await
}

/// [`runtime::history`](super::history()): the timeline of `process`, or
/// `None` when the store has no such process.
pub async fn history<S: AsyncStore>(
    store: &S,
    process: &str,
) -> Result<Option<super::History>, RuntimeError> {
    super::history::history_with(&mut AsyncDriver(store), process).await
}

/// [`runtime::purge`](super::purge): deletes what `chart`'s processes no
/// longer need once the machine's `dedup.retention` has passed at `now`.
pub async fn purge<S: AsyncStore>(
    store: &S,
    chart: &Chart,
    now: u64,
) -> Result<Purged, RuntimeError> {
    purge_with(&mut AsyncDriver(store), chart, now).await
}

/// [`runtime::migrate_process`](super::migrate_process): moves `process`
/// onto `chart`'s machine (or says what the move would do).
pub async fn migrate_process<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    process: &str,
    dry_run: bool,
) -> Result<Option<ProcessMove>, RuntimeError> {
    migrate_process_with(&mut AsyncDriver(store), chart, process, dry_run).await
}

/// [`runtime::migrate_stored`](super::migrate_stored): moves every process
/// of `chart`'s machine stored at another version.
pub async fn migrate_stored<S: AsyncStore>(
    store: &S,
    chart: &Arc<Chart>,
    dry_run: bool,
    report: impl FnMut(Moved),
) -> Result<(), RuntimeError> {
    migrate_stored_with(&mut AsyncDriver(store), chart, dry_run, report).await
}
