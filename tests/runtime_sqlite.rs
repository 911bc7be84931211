//! The store contract and the crash test, on SQLite.

mod runtime_contract;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use idemchart::expr::Event;
use idemchart::store::{SqliteOptions, SqliteStore, Synchronous};
use proptest::prelude::*;

use runtime_contract::{Backend, add, named};

/// SQLite stores as files in a fresh directory under the system temp dir.
struct Sqlite {
    dir: PathBuf,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "idemchart-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

impl Backend for Sqlite {
    type S = SqliteStore;

    fn fresh(&self) -> String {
        std::fs::create_dir_all(&self.dir).expect("temp dir");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("store-{n}.db")).display().to_string()
    }

    fn connect(&self, handle: &str) -> SqliteStore {
        // NORMAL keeps the suite fast; it is safe against killed processes,
        // which is what these tests exercise (FULL is the default, checked below).
        let options = SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        };
        SqliteStore::open(handle, &options).expect("open store")
    }
}

fn backend() -> Sqlite {
    Sqlite {
        dir: std::env::temp_dir().join(format!("idemchart-contract-{}", std::process::id())),
    }
}

contract_tests!(backend());

#[test]
fn the_defaults_are_wal_full_and_a_busy_timeout() {
    let dir = test_dir("pragmas");
    let store = SqliteStore::open(dir.join("s.db"), &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("journal_mode").unwrap(), "wal");
    assert_eq!(store.pragma("synchronous").unwrap(), "2", "FULL");
    assert_eq!(store.pragma("busy_timeout").unwrap(), "60000");
}

fn event_strategy() -> impl Strategy<Value = Vec<Event>> {
    // Ids come from a small pool so the same id recurs; an id keeps one
    // payload, as a real sender's would.
    prop::collection::vec(0..12u32, 1..24).prop_map(|picks| {
        picks
            .into_iter()
            .map(|p| match p {
                10 => named("CLOSE", &format!("close-{}", p)),
                11 => named("REOPEN", &format!("reopen-{}", p)),
                _ => add(&format!("add-{p}"), i64::from(p) + 1),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_duplicate_changes_nothing(
        events in event_strategy(),
        redeliveries in prop::collection::vec((0..24usize, 0..24usize), 0..12),
    ) {
        runtime_contract::duplicates_change_nothing(&backend(), &events, &redeliveries);
    }
}

/// The crash proof on a SQLite file; the file stays intact through the kills.
#[test]
fn killed_appliers_lose_nothing_and_double_nothing() {
    let backend = backend();
    let handle = backend.fresh();
    runtime_contract::crash::killed_appliers_lose_nothing_and_double_nothing(
        &backend,
        &handle,
        &format!("sqlite:{handle}"),
    );
    let store = SqliteStore::open(&handle, &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("integrity_check").unwrap(), "ok");
}
