//! The store contract and the crash test on PostgreSQL. The server comes from
//! `IDEMCHART_PG` (a libpq-style connection string), which `scripts/test`
//! sets after `scripts/start-postgres`; without a server every test here is
//! ignored, and `cargo test -- --include-ignored` runs them.
#![cfg(feature = "postgres")]

mod runtime_contract;

use std::sync::atomic::{AtomicU64, Ordering};

use idemchart::store::PostgresStore;
use proptest::prelude::*;

use runtime_contract::{Api, Backend, add, named};

/// Each fresh store is a new schema of one server.
struct Postgres {
    base: String,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Backend for Postgres {
    type S = PostgresStore;

    fn fresh(&self) -> String {
        let schema = format!(
            "t{}_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = postgres_client(&self.base);
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .expect("create schema");
        format!("{} options='-c search_path={schema}'", self.base)
    }

    fn connect(&self, handle: &str) -> PostgresStore {
        PostgresStore::connect(handle).expect("connect to PostgreSQL")
    }
}

impl Api for PostgresStore {}

fn postgres_client(params: &str) -> postgres::Client {
    postgres::Client::connect(params, postgres::NoTls).expect("connect to PostgreSQL")
}

fn backend() -> Postgres {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    Postgres { base }
}

contract_tests!(backend(), #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]);
batch_contract_tests!(backend(), #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]);

/// The tables as the version before timers made them.
const SCHEMA_BEFORE_TIMERS: &str = "
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version BIGINT,
    snapshot TEXT NOT NULL,
    revision BIGINT NOT NULL
);
CREATE TABLE applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision BIGINT NOT NULL,
    applied_at BIGINT NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX applied_events_applied_at ON applied_events (applied_at);
CREATE TABLE outbox (
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
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
";

#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn a_store_from_before_timers_keeps_working() {
    runtime_contract::timers::a_store_from_before_timers_keeps_working(
        &backend(),
        |handle, snapshot| {
            let mut client = postgres_client(handle);
            client.batch_execute(SCHEMA_BEFORE_TIMERS).unwrap();
            client
                .execute(
                    "INSERT INTO processes VALUES ('old', 'reminder', 1, $1, 1)",
                    &[&snapshot],
                )
                .unwrap();
            let payload = idemchart::runtime::payload_hash(&named("ORDER", "order-old"));
            client
                .execute(
                    "INSERT INTO applied_events VALUES ('old', 'order-old', $1, '{}', 1, $2)",
                    &[&payload, &(runtime_contract::T0 as i64)],
                )
                .unwrap();
        },
    );
}

#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn commits_are_synchronous() {
    let handle = backend().fresh();
    let row = postgres_client(&handle)
        .query_one("SHOW synchronous_commit", &[])
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "on");
}

fn event_strategy() -> impl Strategy<Value = Vec<idemchart::expr::Event>> {
    prop::collection::vec(0..12u32, 1..24).prop_map(|picks| {
        picks
            .into_iter()
            .map(|p| match p {
                10 => named("CLOSE", "close"),
                11 => named("REOPEN", "reopen"),
                _ => add(&format!("add-{p}"), i64::from(p) + 1),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
    fn a_duplicate_changes_nothing(
        events in event_strategy(),
        redeliveries in prop::collection::vec((0..24usize, 0..24usize), 0..12),
    ) {
        runtime_contract::duplicates_change_nothing(&backend(), &events, &redeliveries);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Requests and invocation completions delivered again change nothing.
    #[test]
    #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
    fn a_redelivered_completion_changes_nothing(
        steps in runtime_contract::invocations::checkout_steps(),
        redeliveries in prop::collection::vec((0..16usize, 0..32usize), 0..10),
    ) {
        runtime_contract::invocations::redelivered_completions_change_nothing(
            &backend(),
            &steps,
            &redeliveries,
        );
    }
}

/// The crash proof on PostgreSQL: a killed client's open transaction is
/// rolled back by the server when its connection drops.
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn killed_appliers_lose_nothing_and_double_nothing() {
    let backend = backend();
    let handle = backend.fresh();
    runtime_contract::crash::killed_appliers_lose_nothing_and_double_nothing(
        &backend,
        &handle,
        &format!("postgres:{handle}"),
    );
}

/// The dispatcher's crash proof on PostgreSQL.
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn killed_dispatchers_deliver_each_completion_once() {
    let backend = backend();
    let handle = backend.fresh();
    runtime_contract::crash::killed_dispatchers_deliver_each_completion_once(
        &backend,
        &handle,
        &format!("postgres:{handle}"),
    );
}
