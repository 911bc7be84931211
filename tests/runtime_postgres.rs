//! The store contract on PostgreSQL. Built with `--features postgres`; the
//! server comes from `IDEMCHART_PG` (a libpq-style connection string), which
//! `scripts/test` sets after `scripts/start-postgres`.
#![cfg(feature = "postgres")]

mod runtime_contract;

use std::sync::atomic::{AtomicU64, Ordering};

use idemchart::store::PostgresStore;
use proptest::prelude::*;

use runtime_contract::{Backend, add, named};

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

fn postgres_client(params: &str) -> postgres::Client {
    postgres::Client::connect(params, postgres::NoTls).expect("connect to PostgreSQL")
}

fn backend() -> Postgres {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    Postgres { base }
}

contract_tests!(backend());
batch_contract_tests!(backend());

#[test]
fn commits_are_synchronous() {
    let handle = backend().fresh();
    let mut store = backend().connect(&handle);
    let row = store
        .client()
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
    fn a_duplicate_changes_nothing(
        events in event_strategy(),
        redeliveries in prop::collection::vec((0..24usize, 0..24usize), 0..12),
    ) {
        runtime_contract::duplicates_change_nothing(&backend(), &events, &redeliveries);
    }
}
