//! The async API (`runtime::nonblocking`) on the async stores: the whole
//! store contract through it, on SQLite and on PostgreSQL; each store opened
//! both ways inside `#[tokio::test]`; eight concurrent writers; cancelled
//! calls; the same rows as the sync API; and futures that are `Send`.
//!
//! The PostgreSQL tests need `IDEMCHART_PG` (see `runtime_postgres.rs`) and
//! are ignored without it.

// The crash proof (`idemchart apply` killed) and the schema from before
// timers concern the command line and old files, which the sync suites
// cover; the rest of the contract runs here.
#[allow(dead_code)]
mod runtime_contract;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use idemchart::expr::Event;
use idemchart::interp::Chart;
use idemchart::runtime::{
    self, Advanced, Dispatch, DispatchPolicy, DispatchReport, DueProcess, Outcome, Purged,
    RuntimeError, nonblocking,
};
use idemchart::store::{
    self, AnyAsyncStore, AsyncSqliteStore, AsyncStore, Blocking, OutboxItem, SqliteOptions,
    SqliteStore, Store, Synchronous,
};
use proptest::prelude::*;

use runtime_contract::api::Batch;
use runtime_contract::{Api, Backend, T0, add, ledger, named};

/// An async store, used by the contract through the async API: every call
/// awaits `runtime::nonblocking` on the store's own runtime, which runs its
/// connections; the contract's direct store calls, and its stores that
/// intercept transactions (`Stale`), go through `Blocking`'s sync `Store`.
impl<A: AsyncStore> Api for Blocking<A> {
    fn apply_at(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        event: &Event,
        now: u64,
    ) -> Result<Outcome, RuntimeError> {
        self.block_on(nonblocking::apply_at(
            self.get_ref(),
            chart,
            process,
            event,
            now,
        ))
    }

    fn apply_batch_at(
        &mut self,
        chart: &Arc<Chart>,
        events: &[(String, Event)],
        now: u64,
    ) -> Result<Batch, RuntimeError> {
        self.block_on(nonblocking::apply_batch_at(
            self.get_ref(),
            chart,
            events,
            now,
        ))
    }

    fn advance(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        now: u64,
    ) -> Result<Advanced, RuntimeError> {
        self.block_on(nonblocking::advance(self.get_ref(), chart, process, now))
    }

    fn advance_due(
        &mut self,
        chart: &Arc<Chart>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<DueProcess>, RuntimeError> {
        self.block_on(nonblocking::advance_due(self.get_ref(), chart, now, limit))
    }

    fn dispatch(
        &mut self,
        chart: &Arc<Chart>,
        now: u64,
        policy: &DispatchPolicy,
        handler: &mut (dyn FnMut(&OutboxItem) -> Dispatch + Send),
    ) -> Result<DispatchReport, RuntimeError> {
        self.block_on(nonblocking::dispatch(
            self.get_ref(),
            chart,
            now,
            policy,
            |item| std::future::ready(handler(&item)),
        ))
    }

    fn inspect(&mut self, process: &str) -> Result<Option<serde_json::Value>, RuntimeError> {
        self.block_on(nonblocking::inspect(self.get_ref(), process))
    }

    fn purge(&mut self, chart: &Chart, now: u64) -> Result<Purged, RuntimeError> {
        self.block_on(nonblocking::purge(self.get_ref(), chart, now))
    }

    fn migrate_process(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        dry_run: bool,
    ) -> Result<Option<idemchart::runtime::ProcessMove>, RuntimeError> {
        self.block_on(nonblocking::migrate_process(
            self.get_ref(),
            chart,
            process,
            dry_run,
        ))
    }

    fn migrate_stored(
        &mut self,
        chart: &Arc<Chart>,
        dry_run: bool,
    ) -> Result<Vec<idemchart::runtime::Moved>, RuntimeError> {
        let mut moved = Vec::new();
        self.block_on(nonblocking::migrate_stored(
            self.get_ref(),
            chart,
            dry_run,
            |m| moved.push(m),
        ))?;
        Ok(moved)
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "idemchart-async-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// NORMAL keeps the suite fast; durability is the sync suite's subject.
fn sqlite_options() -> SqliteOptions {
    SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    }
}

/// Async SQLite stores as files in a fresh directory.
struct AsyncSqlite {
    dir: PathBuf,
}

impl Backend for AsyncSqlite {
    type S = Blocking<AsyncSqliteStore>;

    fn fresh(&self) -> String {
        std::fs::create_dir_all(&self.dir).expect("temp dir");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("store-{n}.db")).display().to_string()
    }

    fn connect(&self, handle: &str) -> Self::S {
        let options = sqlite_options();
        Blocking::open(|| AsyncSqliteStore::open(handle, &options)).expect("open the store")
    }
}

fn sqlite_backend() -> AsyncSqlite {
    AsyncSqlite {
        dir: std::env::temp_dir().join(format!("idemchart-async-contract-{}", std::process::id())),
    }
}

mod sqlite {
    use super::*;
    use crate::runtime_contract;

    contract_tests!(sqlite_backend());
    batch_contract_tests!(sqlite_backend());

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        #[test]
        fn a_duplicate_changes_nothing(
            events in prop::collection::vec(0..12u32, 1..24).prop_map(|picks| {
                picks.into_iter().map(|p| match p {
                    10 => named("CLOSE", "close"),
                    11 => named("REOPEN", "reopen"),
                    _ => add(&format!("add-{p}"), i64::from(p) + 1),
                }).collect::<Vec<_>>()
            }),
            redeliveries in prop::collection::vec((0..24usize, 0..24usize), 0..12),
        ) {
            runtime_contract::duplicates_change_nothing(&sqlite_backend(), &events, &redeliveries);
        }
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use crate::runtime_contract;
    use idemchart::store::AsyncPostgresStore;

    /// Each fresh store is a new schema of one server.
    pub struct AsyncPostgres {
        pub base: String,
    }

    impl Backend for AsyncPostgres {
        type S = Blocking<AsyncPostgresStore>;

        fn fresh(&self) -> String {
            fresh_schema(&self.base)
        }

        fn connect(&self, handle: &str) -> Self::S {
            Blocking::open(|| AsyncPostgresStore::connect(handle)).expect("connect")
        }
    }

    pub fn pg_base() -> String {
        std::env::var("IDEMCHART_PG")
            .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)")
    }

    /// A connection string for a new, empty schema of the server at `base`.
    pub fn fresh_schema(base: &str) -> String {
        let schema = format!(
            "a{}_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        // The synchronous client panics inside a tokio runtime (the issue
        // this suite is about), so it runs on a thread of its own.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                ::postgres::Client::connect(base, ::postgres::NoTls)
                    .expect("connect to PostgreSQL")
                    .batch_execute(&format!("CREATE SCHEMA {schema}"))
                    .expect("create schema");
            });
        });
        format!("{base} options='-c search_path={schema}'")
    }

    fn backend() -> AsyncPostgres {
        AsyncPostgres { base: pg_base() }
    }

    contract_tests!(backend(), #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]);
    batch_contract_tests!(backend(), #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]);
}

// ---------------------------------------------------------------------------
// Opening each store both ways inside a tokio runtime.

/// The sync API inside a runtime works (it does not panic), and gives the
/// answers the async API gives: `store_string` is opened with `store::open`
/// and with `store::open_async`, an event applied through each, and the
/// second answer is the first one's frozen bytes.
async fn opens_both_ways(store_string: &str) {
    let chart = ledger();
    let mut sync_store = store::open(store_string).expect("the sync open works in a runtime");
    let first = runtime::apply_at(&mut sync_store, &chart, "both", &add("a", 5), T0)
        .expect("the sync apply works in a runtime");
    assert_eq!(first.kind(), "applied");
    let async_store = store::open_async(store_string).await.expect("open_async");
    let again = nonblocking::apply_at(&async_store, &chart, "both", &add("a", 5), T0)
        .await
        .unwrap();
    assert_eq!(again.response(), first.response());
    assert_eq!(again.kind(), "duplicate");
    let next = nonblocking::apply_at(&async_store, &chart, "both", &add("b", 1), T0)
        .await
        .unwrap();
    assert_eq!(next.revision(), Some(2));
    // The sync store sees what the async one wrote, and is dropped here,
    // inside the runtime, which must not panic either.
    let state = runtime::inspect(&mut sync_store, "both").unwrap().unwrap();
    assert_eq!(state["context"]["total"], 6);
    drop(sync_store);
}

fn sqlite_string() -> String {
    format!("sqlite:{}", temp_dir("open").join("s.db").display())
}

#[tokio::test]
async fn sqlite_opens_both_ways_in_a_current_thread_runtime() {
    opens_both_ways(&sqlite_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_opens_both_ways_in_a_multi_thread_runtime() {
    opens_both_ways(&sqlite_string()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn postgres_opens_both_ways_in_a_current_thread_runtime() {
    let handle = postgres::fresh_schema(&postgres::pg_base());
    opens_both_ways(&format!("postgres:{handle}")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn postgres_opens_both_ways_in_a_multi_thread_runtime() {
    let handle = postgres::fresh_schema(&postgres::pg_base());
    opens_both_ways(&format!("postgres:{handle}")).await;
    // And from a task on a worker thread, not only from the runtime's main
    // future.
    let string = format!("postgres:{}", postgres::fresh_schema(&postgres::pg_base()));
    tokio::spawn(async move { opens_both_ways(&string).await })
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------
// Concurrency.

/// Eight tasks send every event twice, each in its own order; `process_of`
/// picks each event's process. Every event is applied exactly once, every
/// answer to it is its one frozen response, and each process ends as a clean
/// replay of its events would.
async fn eight_writers_apply_each_event_once(
    store: AnyAsyncStore,
    events: usize,
    process_of: fn(usize) -> String,
) {
    let chart = ledger();
    let all: Arc<Vec<(String, Event)>> = Arc::new(
        (0..events)
            .map(|i| (process_of(i), add(&format!("e{i}"), (i % 17) as i64 + 1)))
            .collect(),
    );
    let writers: Vec<_> = (0..8u64)
        .map(|writer| {
            let (store, chart, all) = (store.clone(), Arc::clone(&chart), Arc::clone(&all));
            // Spawning needs the futures to be `Send`, as a server's would.
            tokio::spawn(async move {
                let mut order: Vec<usize> = (0..all.len()).chain(0..all.len()).collect();
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (writer + 1);
                for i in (1..order.len()).rev() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    order.swap(i, (seed % (i as u64 + 1)) as usize);
                }
                let mut answers = Vec::with_capacity(order.len());
                for i in order {
                    let (process, event) = &all[i];
                    let outcome = nonblocking::apply_at(&store, &chart, process, event, T0)
                        .await
                        .expect("no error leaks from contention");
                    answers.push((i, outcome));
                }
                answers
            })
        })
        .collect();
    let mut first: HashMap<usize, String> = HashMap::new();
    let mut answers = Vec::new();
    for writer in writers {
        answers.extend(writer.await.unwrap());
    }
    for (i, outcome) in &answers {
        if let Outcome::Applied { response, .. } = outcome {
            assert!(
                first.insert(*i, response.clone()).is_none(),
                "e{i} applied twice"
            );
        }
    }
    assert_eq!(first.len(), events, "each event applied exactly once");
    for (i, outcome) in &answers {
        assert!(
            matches!(outcome.kind(), "applied" | "duplicate"),
            "{outcome:?}"
        );
        assert_eq!(outcome.response(), first.get(i).map(String::as_str), "e{i}");
    }
    let mut per_process: HashMap<String, Vec<Event>> = HashMap::new();
    for (process, event) in all.iter() {
        per_process
            .entry(process.clone())
            .or_default()
            .push(event.clone());
    }
    for (process, events) in &per_process {
        let state = nonblocking::inspect(&store, process)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state["revision"], events.len() as u64, "{process}");
        assert_eq!(
            state["context"],
            runtime_contract::clean_replay(&chart, events),
            "{process}"
        );
        assert_eq!(store.applied_count(process).await.unwrap(), events.len());
    }
    assert_eq!(store.outbox(None).await.unwrap().len(), events);
}

fn one_process(_: usize) -> String {
    "shared".into()
}

fn eight_processes(i: usize) -> String {
    format!("p{}", i % 8)
}

async fn sqlite_store() -> AnyAsyncStore {
    let path = temp_dir("concurrent").join("s.db");
    AnyAsyncStore::Sqlite(
        AsyncSqliteStore::open(path, &sqlite_options())
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_async_writers_on_one_sqlite_process() {
    eight_writers_apply_each_event_once(sqlite_store().await, 150, one_process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_async_writers_on_eight_sqlite_processes() {
    eight_writers_apply_each_event_once(sqlite_store().await, 150, eight_processes).await;
}

#[cfg(feature = "postgres")]
async fn postgres_store() -> AnyAsyncStore {
    let handle = postgres::fresh_schema(&postgres::pg_base());
    store::open_async(&format!("postgres:{handle}"))
        .await
        .unwrap()
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn eight_async_writers_on_one_postgres_process() {
    eight_writers_apply_each_event_once(postgres_store().await, 150, one_process).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn eight_async_writers_on_eight_postgres_processes() {
    eight_writers_apply_each_event_once(postgres_store().await, 150, eight_processes).await;
}

// ---------------------------------------------------------------------------
// Cancellation: a call dropped half-way (its request went away) commits
// nothing half-done and leaves the store usable.

async fn cancelled_calls_leave_nothing_half_done(store: AnyAsyncStore) {
    let chart = ledger();
    let events: Vec<Event> = (0..40).map(|i| add(&format!("c{i}"), i + 1)).collect();
    for (i, event) in events.iter().enumerate() {
        // Deadlines from nothing to a few hundred microseconds cut the calls
        // at every stage: waiting for a connection, mid-transaction, at the
        // commit, or not at all.
        let deadline = Duration::from_micros((i as u64 * 37) % 400);
        let _ = tokio::time::timeout(
            deadline,
            nonblocking::apply_at(&store, &chart, "cut", event, T0),
        )
        .await;
    }
    // Sent again in full, each event is applied once, or answered as the
    // duplicate of the one cut call that did commit.
    for event in &events {
        let outcome = nonblocking::apply_at(&store, &chart, "cut", event, T0)
            .await
            .unwrap();
        assert!(
            matches!(outcome.kind(), "applied" | "duplicate"),
            "{outcome:?}"
        );
    }
    let state = nonblocking::inspect(&store, "cut").await.unwrap().unwrap();
    assert_eq!(state["revision"], events.len() as u64);
    assert_eq!(
        state["context"],
        runtime_contract::clean_replay(&chart, &events)
    );
    assert_eq!(store.outbox(None).await.unwrap().len(), events.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_calls_on_sqlite_leave_nothing_half_done() {
    cancelled_calls_leave_nothing_half_done(sqlite_store().await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn cancelled_calls_on_postgres_leave_nothing_half_done() {
    cancelled_calls_leave_nothing_half_done(postgres_store().await).await;
}

// ---------------------------------------------------------------------------
// The same rows, byte for byte.

/// One step of a random workload, on three processes.
#[derive(Clone, Debug)]
enum Step {
    Apply(usize, Event),
    Batch(Vec<(usize, Event)>),
    Advance(usize, u64),
    Dispatch(u64),
}

fn event_strategy() -> impl Strategy<Value = Event> {
    (0..16u32).prop_map(|pick| match pick {
        10 => named("CLOSE", "close"),
        11 => named("REOPEN", "reopen"),
        12 => Event::new("CLOSE", None, idemchart::expr::Value::Null),
        // The id of `add-0` with another amount: a conflict once it is in.
        13 => add("add-0", 100),
        14 => named("ORDER", "order"),
        15 => named("PAY", "pay"),
        _ => add(&format!("add-{pick}"), i64::from(pick) + 1),
    })
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..3usize, event_strategy()).prop_map(|(p, e)| Step::Apply(p, e)),
        1 => prop::collection::vec((0..3usize, event_strategy()), 1..6).prop_map(Step::Batch),
        1 => (0..3usize, 0..40u64).prop_map(|(p, minutes)| Step::Advance(p, minutes)),
        1 => (0..40u64).prop_map(Step::Dispatch),
    ]
}

/// Runs `steps` through `api`, answers as text; process `n` runs the
/// ledger when even and the reminder machine (timers) when odd.
fn run_steps<S: Api>(store: &mut S, steps: &[Step]) -> Vec<String> {
    let charts = [ledger(), runtime_contract::timers::reminder(), ledger()];
    let name = |p: usize| format!("p{p}");
    let mut answers = Vec::new();
    let policy = DispatchPolicy {
        base_backoff_ms: 60_000,
        ..DispatchPolicy::default()
    };
    for (n, step) in steps.iter().enumerate() {
        let now = T0 + n as u64 * 1_000;
        answers.push(match step {
            Step::Apply(p, event) => {
                format!("{:?}", store.apply_at(&charts[*p], &name(*p), event, now))
            }
            Step::Batch(events) => {
                // A batch runs on one chart; its events go to the ledgers.
                let events: Vec<(String, Event)> = events
                    .iter()
                    .map(|(p, e)| (name(p & 2), e.clone()))
                    .collect();
                format!("{:?}", store.apply_batch_at(&charts[0], &events, now))
            }
            Step::Advance(p, minutes) => format!(
                "{:?}",
                store.advance(&charts[*p], &name(*p), now + minutes * 60_000)
            ),
            Step::Dispatch(seed) => {
                let mut calls = 0u64;
                let report = store.dispatch(&charts[0], now, &policy, &mut |_| {
                    calls += 1;
                    match (seed + calls) % 3 {
                        0 => Dispatch::Done,
                        1 => Dispatch::Retry("later".into()),
                        _ => Dispatch::UnknownOutcome,
                    }
                });
                format!("{report:?}")
            }
        });
    }
    for p in 0..3 {
        answers.push(format!("{:?}", store.process(&name(p))));
        answers.push(format!("{:?}", store.applied_count(&name(p))));
    }
    answers.push(format!("{:?}", store.outbox(None)));
    answers
}

impl Api for SqliteStore {}

/// Gives the store to be made at `path` the secret of `store`, as the
/// table a store keeps it in, so that the two stores' outgoing keys, and
/// with them their responses and rows, can be compared byte for byte. The
/// store opened at `path` then reads this secret instead of making one.
fn share_secret(store: &SqliteStore, path: &std::path::Path) {
    let hex: String = store
        .secret()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE store_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        .unwrap();
    conn.execute(
        "INSERT INTO store_secrets (name, value) VALUES ('outgoing-keys-v1', ?1)",
        [hex],
    )
    .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The sync API on `SqliteStore` and the async API on `AsyncSqliteStore`
    /// answer every step alike and leave the same rows.
    #[test]
    fn the_async_api_writes_what_the_sync_api_writes(
        steps in prop::collection::vec(step_strategy(), 1..30),
    ) {
        let dir = temp_dir("same");
        let mut sync_store = SqliteStore::open(dir.join("sync.db"), &sqlite_options()).unwrap();
        let path = dir.join("async.db");
        share_secret(&sync_store, &path);
        let options = sqlite_options();
        let mut async_store =
            Blocking::open(|| AsyncSqliteStore::open(path, &options)).unwrap();
        let by_sync = run_steps(&mut sync_store, &steps);
        let by_async = run_steps(&mut async_store, &steps);
        prop_assert_eq!(by_sync, by_async);
        std::fs::remove_dir_all(&dir).ok();
    }
}

// ---------------------------------------------------------------------------
// `Send`: every future of the async API can go to `tokio::spawn`.

fn send<T: Send>(_: &T) {}

#[tokio::test]
async fn every_future_of_the_async_api_is_send() {
    let store = AnyAsyncStore::Sqlite(AsyncSqliteStore::in_memory().await.unwrap());
    let chart = ledger();
    let event = add("a", 1);
    let events = vec![("p".to_string(), add("b", 2))];
    let policy = DispatchPolicy::default();
    send(&nonblocking::apply(&store, &chart, "p", &event));
    send(&nonblocking::apply_at(&store, &chart, "p", &event, T0));
    send(&nonblocking::apply_batch(&store, &chart, &events));
    send(&nonblocking::apply_batch_at(&store, &chart, &events, T0));
    send(&nonblocking::advance(&store, &chart, "p", T0));
    send(&nonblocking::advance_due(&store, &chart, T0, 10));
    send(&nonblocking::dispatch(
        &store,
        &chart,
        T0,
        &policy,
        |_| async { Dispatch::Done },
    ));
    send(&nonblocking::inspect(&store, "p"));
    send(&nonblocking::purge(&store, &chart, T0));
    send(&store.begin());
    // And they run: the dispatcher's handler may await.
    nonblocking::apply_at(&store, &chart, "p", &event, T0)
        .await
        .unwrap();
    let report = nonblocking::dispatch(&store, &chart, T0, &policy, |item| async move {
        tokio::task::yield_now().await;
        assert_eq!(item.effect, "notify");
        Dispatch::Done
    })
    .await
    .unwrap();
    assert_eq!(report.done, 1);
}
