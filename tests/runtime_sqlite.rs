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
batch_contract_tests!(backend());

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

/// Runs `idemchart apply` once; `kill_after` kills it (SIGKILL) that long
/// after the start unless it finished. Returns its answer, if it gave one.
fn apply_child(
    store: &str,
    process: &str,
    event: &str,
    kill_after: Option<std::time::Duration>,
) -> Option<serde_json::Value> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["apply", "--store", store, "--machine"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/runtime/ledger.yaml"
        ))
        .args(["--process", process, "--event", event])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idemchart");
    if let Some(delay) = kill_after {
        std::thread::sleep(delay);
        // Kill sends SIGKILL; a child that already exited is simply reaped.
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("wait for idemchart");
    if !output.status.success() {
        // Killed, or no answer (e.g. the store was busy past the timeout).
        return None;
    }
    let text = String::from_utf8(output.stdout).expect("utf-8 output");
    Some(serde_json::from_str(text.trim()).expect("one JSON answer"))
}

/// Kills `idemchart apply` with SIGKILL at random moments while a sender
/// retries each event until it is answered: no event is lost, none applied
/// twice. `IDEMCHART_CRASH_KILLS` raises the number of kills (200 by default, as the issue asks).
#[test]
fn killed_appliers_lose_nothing_and_double_nothing() {
    let kills_wanted: u32 = std::env::var("IDEMCHART_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = test_dir("crash");
    let store = format!("sqlite:{}", dir.join("crash.db").display());
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("crash test seed {seed}");
    let mut random = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below.max(1)
    };
    // How long an undisturbed apply takes here (the fastest of three), so
    // kills land across its whole run.
    let mut span_us = u64::MAX;
    for i in 0..3 {
        let started = std::time::Instant::now();
        let warmup = apply_child(
            &store,
            "other",
            &format!(r#"{{"type":"CLOSE","id":"warm{i}"}}"#),
            None,
        )
        .expect("an undisturbed apply answers");
        assert!(warmup["outcome"] == "applied" || warmup["outcome"] == "ignored");
        span_us = span_us.min(started.elapsed().as_micros() as u64).max(500);
    }

    let events: Vec<(String, i64)> = (0..20).map(|i| (format!("c{i}"), i + 1)).collect();
    let mut kills = 0u32;
    // First deliveries answered `duplicate`: a killed child had committed
    // but died before answering.
    let mut committed_unanswered = 0u32;
    let mut first_answers = Vec::new();
    let mut index = 0;
    while index < events.len() || kills < kills_wanted {
        let (id, amount) = &events[index % events.len()];
        let event = format!(r#"{{"type":"ADD","data":{{"addId":"{id}","amount":{amount}}}}}"#);
        // The sender retries until answered; before the wanted kills are
        // done, most attempts are killed at a random moment.
        let answer = loop {
            let kill = (kills < kills_wanted && random(10) < 8)
                .then(|| std::time::Duration::from_micros(random(span_us)));
            match apply_child(&store, "crashy", &event, kill) {
                Some(answer) => break answer,
                None => kills += 1,
            }
        };
        let outcome = answer["outcome"].as_str().unwrap().to_string();
        if index < events.len() {
            assert!(
                outcome == "applied" || outcome == "duplicate",
                "{id}: {answer}"
            );
            if outcome == "duplicate" {
                committed_unanswered += 1;
            }
            first_answers.push(answer["response"].clone());
        } else {
            // A later redelivery gets the frozen first response.
            assert_eq!(outcome, "duplicate", "{id}: {answer}");
            assert_eq!(answer["response"], first_answers[index % events.len()]);
        }
        index += 1;
    }
    eprintln!(
        "crash test: {kills} kills, {index} deliveries, \
         {committed_unanswered} killed after commit before answering"
    );
    let mut store = SqliteStore::open(dir.join("crash.db"), &SqliteOptions::default()).unwrap();
    assert_eq!(store.pragma("integrity_check").unwrap(), "ok");
    let state = idemchart::runtime::inspect(&mut store, "crashy")
        .unwrap()
        .unwrap();
    let total: i64 = events.iter().map(|(_, amount)| amount).sum();
    assert_eq!(state["context"]["total"], total, "{state}");
    assert_eq!(state["context"]["count"], events.len());
    assert_eq!(state["revision"], events.len());
    use idemchart::store::Store;
    assert_eq!(store.applied_count("crashy").unwrap(), events.len());
    let outbox = store.outbox(None).unwrap();
    assert_eq!(
        outbox.iter().filter(|r| r.process == "crashy").count(),
        events.len()
    );
    // The answers the sender kept name the state right after each event.
    for (i, response) in first_answers.iter().enumerate() {
        assert_eq!(response["revision"], i + 1);
    }
}
