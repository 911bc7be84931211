//! A process's history and its replay (`history: { keep }`, `idemchart
//! history`, `idemchart replay`, `GET …/history`), on stores filled by real
//! `apply` runs: the built binary on SQLite files, the library on SQLite
//! and (ignored unless asked for, as `scripts/test` does) PostgreSQL.

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, ReplayError, history::Aspect};
use idemchart::store::{AnyStore, Store};

use crate::support::run;
use crate::support::serve_server;

use run::{Run, idemchart};

const ORDER: &str = "examples/history/order.yaml";
const STRICTER: &str = "examples/history/order-stricter.yaml";
const RENAMED: &str = "examples/history/order-renamed.yaml";
const T: u64 = 1_700_000_000_000;
const DAY: u64 = 86_400_000;

#[cfg(feature = "postgres")]
use crate::support::stores::postgres_store;
use crate::support::stores::{scratch, sqlite_store, unique};

fn open(address: &str) -> AnyStore {
    idemchart::store::open(address).expect("open the store")
}

fn chart_of(text: &str) -> Arc<Chart> {
    let machine = idemchart::syntax::parse(text, idemchart::syntax::Syntax::Yaml).unwrap();
    Arc::new(Chart::new(machine))
}

fn chart(path: &str) -> Arc<Chart> {
    chart_of(&std::fs::read_to_string(path).unwrap())
}

fn pay(id: &str, amount: i64) -> Event {
    Event::new(
        "PAY",
        Some(Value::from(id)),
        Value::from(&serde_json::json!({ "paymentId": id, "amount": amount })),
    )
}

fn ship(id: &str) -> Event {
    Event::new("SHIP", Some(Value::from(id)), Value::Null)
}

/// The outgoing keys are HMACs under the store's random secret: each is
/// shown by the order it first appeared in.
fn without_keys(text: &str, keys: &mut Vec<String>) -> String {
    let mut out = text.to_string();
    let mut rest = text;
    while let Some(at) = rest.find("\"key\":") {
        let value = &rest[at + 6..];
        let start = at + 6 + value.find('"').unwrap() + 1;
        let end = start + rest[start..].find('"').unwrap();
        let key = rest[start..end].to_string();
        if !keys.contains(&key) {
            keys.push(key.clone());
        }
        rest = &rest[end..];
    }
    for (i, key) in keys.iter().enumerate() {
        out = out.replace(key, &format!("[key {}]", i + 1));
    }
    out
}

/// Commands and what they answered, for a snapshot.
struct Transcript {
    text: String,
    keys: Vec<String>,
}

impl Transcript {
    fn new() -> Transcript {
        Transcript {
            text: String::new(),
            keys: Vec::new(),
        }
    }

    /// Runs `idemchart ARGS`, records it with `shown` standing for the
    /// store's address, and gives the run.
    #[track_caller]
    fn run(&mut self, args: &[&str], store: &str) -> Run {
        let run = idemchart(args);
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if *a == store {
                    "S".to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let stderr = run.stderr.replace(store.trim_start_matches("sqlite:"), "S");
        self.text.push_str(&format!(
            "$ idemchart {}\n{}{}[exit {}]\n\n",
            shown.join(" "),
            without_keys(&run.stdout, &mut self.keys),
            stderr,
            run.code.map_or("signal".to_string(), |c| c.to_string())
        ));
        run
    }
}

fn apply_cli(t: &mut Transcript, store: &str, process: &str, event: &str, now: u64) {
    let now = now.to_string();
    let run = t.run(
        &[
            "apply",
            "--store",
            store,
            "--machine",
            ORDER,
            "--process",
            process,
            "--event",
            event,
            "--now",
            &now,
        ],
        store,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// The issue's cases through the binary: a paid and shipped order, and one
/// that expired on its timer, shown as timelines; replayed unchanged, under
/// a stricter guard (the first divergence, exit 1), and under a rename
/// with its mapping (none); and each bad input (exit 2).
#[test]
fn history_and_replay_from_the_command_line() {
    let store = sqlite_store("cli");
    let mut t = Transcript::new();
    let pay = r#"{"type":"PAY","data":{"paymentId":"p-1","amount":20}}"#;
    apply_cli(&mut t, &store, "o-1", pay, T);
    apply_cli(
        &mut t,
        &store,
        "o-1",
        r#"{"type":"SHIP","id":"s-1"}"#,
        T + 1_000,
    );
    let zero = r#"{"type":"PAY","data":{"paymentId":"p-2","amount":0}}"#;
    apply_cli(&mut t, &store, "o-2", zero, T);
    let later = (T + DAY).to_string();
    let run = t.run(
        &[
            "advance",
            "--store",
            &store,
            "--machine",
            ORDER,
            "--process",
            "o-2",
            "--now",
            &later,
        ],
        &store,
    );
    assert_eq!(run.code, Some(0));
    for process in ["o-1", "o-2"] {
        let run = t.run(
            &["history", "--store", &store, "--process", process],
            &store,
        );
        assert_eq!(run.code, Some(0));
    }
    let json = t.run(
        &[
            "history",
            "--store",
            &store,
            "--process",
            "o-2",
            "--format",
            "json",
        ],
        &store,
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["events"][1]["kind"], "timer");
    for (machine, process, code) in [
        (ORDER, "o-1", 0),
        (ORDER, "o-2", 0),
        (STRICTER, "o-1", 1),
        (STRICTER, "o-2", 0),
        (RENAMED, "o-1", 0),
        (RENAMED, "o-2", 0),
    ] {
        let run = t.run(
            &[
                "replay",
                "--store",
                &store,
                "--process",
                process,
                "--machine",
                machine,
            ],
            &store,
        );
        assert_eq!(run.code, Some(code), "{machine} {process}: {}", run.stderr);
    }
    let run = t.run(
        &[
            "replay",
            "--store",
            &store,
            "--process",
            "o-1",
            "--machine",
            STRICTER,
            "--format",
            "json",
        ],
        &store,
    );
    assert_eq!(run.code, Some(1));
    // Bad input: an unknown process, a file that is not there, a machine
    // of another name, a store that cannot be opened.
    let ledger = "tests/data/runtime/ledger.yaml";
    for args in [
        vec!["history", "--store", &store, "--process", "nobody"],
        vec![
            "replay",
            "--store",
            &store,
            "--process",
            "nobody",
            "--machine",
            ORDER,
        ],
        vec![
            "replay",
            "--store",
            &store,
            "--process",
            "o-1",
            "--machine",
            "nowhere.yaml",
        ],
        vec![
            "replay",
            "--store",
            &store,
            "--process",
            "o-1",
            "--machine",
            ledger,
        ],
        vec![
            "replay",
            "--store",
            "sqlite:/nonexistent-dir/s.db",
            "--process",
            "o-1",
            "--machine",
            ORDER,
        ],
    ] {
        let run = t.run(&args, &store);
        assert_eq!(run.code, Some(2), "{args:?}");
    }
    // Another `order`, whose shipment effect takes no arguments: the
    // first divergence is in the effects.
    let other = "tests/versions/m001-renamed-state/old.yaml";
    let run = t.run(
        &[
            "replay",
            "--store",
            &store,
            "--process",
            "o-1",
            "--machine",
            other,
        ],
        &store,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    // That `order` keeps no history: its process's timeline says the
    // payload was not kept, and a replay cannot run past it.
    let now = T.to_string();
    let run = t.run(
        &[
            "apply",
            "--store",
            &store,
            "--machine",
            other,
            "--process",
            "o-3",
            "--event",
            pay,
            "--now",
            &now,
        ],
        &store,
    );
    assert_eq!(run.code, Some(0));
    let run = t.run(&["history", "--store", &store, "--process", "o-3"], &store);
    assert!(run.stdout.contains("payload: not kept"), "{}", run.stdout);
    let run = t.run(
        &[
            "replay",
            "--store",
            &store,
            "--process",
            "o-3",
            "--machine",
            ORDER,
        ],
        &store,
    );
    assert_eq!(run.code, Some(2));
    insta::assert_snapshot!("history_cli", t.text);
}

/// The same timeline through the library, on any store, sync and async
/// alike; and what a machine without `history:` leaves (no payload, so no
/// replay, said as such).
fn a_timeline_on(address: &str) {
    let mut store = open(address);
    let order = chart(ORDER);
    runtime::apply_at(&mut store, &order, "o-1", &pay("p-1", 20), T).unwrap();
    runtime::apply_at(&mut store, &order, "o-1", &ship("s-1"), T + 1).unwrap();
    runtime::apply_at(&mut store, &order, "o-2", &pay("p-2", 0), T).unwrap();
    // The timer fires before the next event, in the same transaction:
    // the timeline puts it first within that revision.
    runtime::apply_at(&mut store, &order, "o-2", &pay("p-3", 5), T + DAY).unwrap();
    let history = runtime::history(&mut store, "o-2").unwrap().unwrap();
    let ids: Vec<&str> = history.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "p-2",
            &format!("timer:after:awaiting_payment[0]@{}/1.0", T + DAY),
            "p-3"
        ]
    );
    assert_eq!(history.entries[1].revision, history.entries[2].revision);
    let replayed = runtime::replay(&order, &history).unwrap();
    assert_eq!((replayed.entries, replayed.divergence), (3, None));
    let stricter = runtime::replay(&chart(STRICTER), &history).unwrap();
    assert_eq!(stricter.divergence, None, "no payment of o-2 is 50 or more");
    let o1 = runtime::history(&mut store, "o-1").unwrap().unwrap();
    let divergence = runtime::replay(&chart(STRICTER), &o1)
        .unwrap()
        .divergence
        .expect("the guard refuses 20");
    assert_eq!(
        (divergence.index, divergence.aspect, divergence.revision),
        (1, Aspect::Configuration, 1)
    );
    assert_eq!(divergence.recorded, serde_json::json!(["paid"]));
    assert_eq!(divergence.replayed, serde_json::json!(["awaiting_payment"]));
    assert_eq!(
        runtime::replay(&chart(RENAMED), &o1).unwrap().divergence,
        None
    );
    assert!(runtime::history(&mut store, "nobody").unwrap().is_none());

    // Without `history:` nothing beyond the mark is stored.
    let text = std::fs::read_to_string(ORDER).unwrap();
    let forgetful = chart_of(&text.replace("history:\n  keep: 30d", ""));
    assert!(forgetful.machine().history.is_none());
    runtime::apply_at(&mut store, &forgetful, "o-3", &pay("p-4", 20), T).unwrap();
    let rows = store.applied_events("o-3", 0, 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].payload, None);
    let rows = store.applied_events("o-1", 0, 10).unwrap();
    assert_eq!(
        rows[0].payload.as_deref(),
        Some(r#"{"type":"PAY","id":"p-1","data":{"paymentId":"p-1","amount":20}}"#)
    );
    let h3 = runtime::history(&mut store, "o-3").unwrap().unwrap();
    assert_eq!(h3.to_json()["events"][0]["payload_kept"], false);
    let error = runtime::replay(&order, &h3).unwrap_err();
    assert!(matches!(error, ReplayError::NoPayload { .. }), "{error}");
}

#[test]
fn a_timeline_on_sqlite() {
    a_timeline_on(&sqlite_store("timeline"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs PostgreSQL: IDEMCHART_PG (scripts/test runs it)"]
fn a_timeline_on_postgres() {
    a_timeline_on(&postgres_store("timeline"));
}

/// The async API reads the same timeline.
#[tokio::test(flavor = "current_thread")]
async fn the_async_history_is_the_sync_one() {
    let address = sqlite_store("async");
    let order = chart(ORDER);
    let mut store = open(&address);
    runtime::apply_at(&mut store, &order, "o-1", &pay("p-1", 20), T).unwrap();
    runtime::apply_at(&mut store, &order, "o-1", &ship("s-1"), T + 1).unwrap();
    let sync = runtime::history(&mut store, "o-1").unwrap().unwrap();
    drop(store);
    let path = address.trim_start_matches("sqlite:");
    let store = idemchart::store::AsyncSqliteStore::open(path, &Default::default())
        .await
        .unwrap();
    let read = runtime::nonblocking::history(&store, "o-1").await.unwrap();
    assert_eq!(read, Some(sync));
}

/// Payloads go after `keep`; a row goes after the longer of `keep` and
/// `dedup.retention`, so each window governs what it is for.
fn purge_on(address: &str) {
    let text = std::fs::read_to_string(ORDER).unwrap();
    let mut store = open(address);
    // keep 2d, retention 7d: the payload goes first, the row later.
    let short = chart_of(&text.replace("keep: 30d", "keep: 2d"));
    runtime::apply_at(&mut store, &short, "short", &pay("p-1", 20), T).unwrap();
    let within = runtime::purge(&mut store, &short, T + DAY).unwrap();
    assert_eq!((within.applied, within.payloads), (0, 0));
    let past_keep = runtime::purge(&mut store, &short, T + 3 * DAY).unwrap();
    assert_eq!((past_keep.applied, past_keep.payloads), (0, 1));
    let rows = store.applied_events("short", 0, 10).unwrap();
    assert_eq!((rows.len(), rows[0].payload.as_deref()), (1, None));
    let history = runtime::history(&mut store, "short").unwrap().unwrap();
    assert!(matches!(
        runtime::replay(&short, &history),
        Err(ReplayError::NoPayload { .. })
    ));
    let past_retention = runtime::purge(&mut store, &short, T + 8 * DAY).unwrap();
    assert_eq!(past_retention.applied, 1);
    assert_eq!(store.applied_count("short").unwrap(), 0);

    // keep 30d, retention 7d: past the retention the row stays, with its
    // payload, for the history; past `keep` both go.
    let long = chart(ORDER);
    runtime::apply_at(&mut store, &long, "long", &pay("p-2", 20), T).unwrap();
    let past_retention = runtime::purge(&mut store, &long, T + 8 * DAY).unwrap();
    assert_eq!((past_retention.applied, past_retention.payloads), (0, 0));
    let history = runtime::history(&mut store, "long").unwrap().unwrap();
    assert_eq!(runtime::replay(&long, &history).unwrap().divergence, None);
    let past_keep = runtime::purge(&mut store, &long, T + 31 * DAY).unwrap();
    assert_eq!(past_keep.applied, 1);
    assert_eq!(store.applied_count("long").unwrap(), 0);
    // Now the history starts after a purge, and says so.
    runtime::apply_at(&mut store, &long, "long", &ship("s-1"), T + 32 * DAY).unwrap();
    let history = runtime::history(&mut store, "long").unwrap().unwrap();
    let error = runtime::replay(&long, &history).unwrap_err();
    assert!(
        matches!(error, ReplayError::Truncated { first: 2, .. }),
        "{error}"
    );
}

#[test]
fn purge_clears_payloads_past_keep_on_sqlite() {
    purge_on(&sqlite_store("purge"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs PostgreSQL: IDEMCHART_PG (scripts/test runs it)"]
fn purge_clears_payloads_past_keep_on_postgres() {
    purge_on(&postgres_store("purge"));
}

/// `idemchart purge` says how many payloads it cleared, for a machine that
/// keeps a history.
#[test]
fn the_purge_command_counts_payloads() {
    let store = sqlite_store("purge_cli");
    let mut t = Transcript::new();
    let pay = r#"{"type":"PAY","data":{"paymentId":"p-1","amount":20}}"#;
    let text = std::fs::read_to_string(ORDER).unwrap();
    let short = scratch().join(unique("short") + ".yaml");
    std::fs::write(&short, text.replace("keep: 30d", "keep: 2d")).unwrap();
    let short = short.display().to_string();
    let now = T.to_string();
    let later = (T + 3 * DAY).to_string();
    for args in [
        vec![
            "apply",
            "--store",
            &store,
            "--machine",
            &short,
            "--process",
            "o-1",
            "--event",
            pay,
            "--now",
            &now,
        ],
        vec![
            "purge",
            "--store",
            &store,
            "--machine",
            &short,
            "--now",
            &later,
        ],
    ] {
        assert_eq!(t.run(&args, &store).code, Some(0));
    }
    assert!(
        t.text
            .ends_with("{\"purged\":0,\"outbox_purged\":0,\"payloads_purged\":1}\n[exit 0]\n\n"),
        "{}",
        t.text
    );
}

/// The tables as the version before histories made them: `applied_events`
/// without `payload`.
const SCHEMA_BEFORE_HISTORIES: &str = "
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    version INTEGER,
    snapshot TEXT NOT NULL,
    revision INTEGER NOT NULL,
    next_timer_at INTEGER
);
CREATE INDEX processes_next_timer ON processes (next_timer_at);
CREATE TABLE applied_events (
    process TEXT NOT NULL,
    event_id TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    revision INTEGER NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX applied_events_applied_at ON applied_events (applied_at);
";

/// A store made before histories opens, gains the column, keeps its rows
/// (their payloads unknown), and stores the payloads of what comes next.
/// `create` makes the old tables.
fn before_histories_on(address: &str, create: impl FnOnce()) {
    create();
    let mut store = open(address);
    let old = store.applied_events("old", 0, 10).unwrap();
    assert_eq!((old.len(), old[0].payload.as_deref()), (1, None));
    let order = chart(ORDER);
    runtime::apply_at(&mut store, &order, "o-1", &pay("p-1", 20), T).unwrap();
    let rows = store.applied_events("o-1", 0, 10).unwrap();
    assert!(rows[0].payload.as_deref().unwrap().contains("\"p-1\""));
    drop(store);
    // Opening again finds the column there and changes nothing.
    let mut store = open(address);
    assert_eq!(store.applied_events("o-1", 0, 10).unwrap(), rows);
}

const OLD_ROW: &str = "INSERT INTO applied_events VALUES ('old', 'e-1', 'h', '{}', 1, 5)";

#[test]
fn a_store_from_before_histories_gets_the_payload_column() {
    let path = scratch().join(unique("before") + ".db");
    let address = format!("sqlite:{}", path.display());
    before_histories_on(&address, || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA_BEFORE_HISTORIES).unwrap();
        conn.execute(OLD_ROW, []).unwrap();
    });
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs PostgreSQL: IDEMCHART_PG (scripts/test runs it)"]
fn a_postgres_store_from_before_histories_gets_the_payload_column() {
    let address = postgres_store("before");
    let params = address.trim_start_matches("postgres:").to_string();
    before_histories_on(&address, || {
        let mut client = ::postgres::Client::connect(&params, ::postgres::NoTls).unwrap();
        // PostgreSQL's stores use 64-bit integers.
        let schema = SCHEMA_BEFORE_HISTORIES.replace("INTEGER", "BIGINT");
        client.batch_execute(&schema).unwrap();
        client.batch_execute(OLD_ROW).unwrap();
    });
}

/// `GET /machines/{m}/processes/{p}/history`: the timeline as JSON, and
/// problem documents for a process or machine that is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_serves_the_history() {
    let machines = scratch().join(unique("machines"));
    std::fs::create_dir_all(&machines).unwrap();
    std::fs::copy(ORDER, machines.join("order.yaml")).unwrap();
    let store = sqlite_store("serve");
    let server = serve_server::Server::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_idemchart")),
        &machines.display().to_string(),
        "127.0.0.1:0",
        &store,
        &[],
    );
    let client = reqwest::Client::new();
    let events = server.url("/machines/order/processes/o-1/events");
    for body in [
        r#"{"type":"PAY","data":{"paymentId":"p-1","amount":20}}"#,
        r#"{"type":"SHIP","id":"s-1"}"#,
    ] {
        let answer = client
            .post(&events)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
    }
    let mut keys = Vec::new();
    let mut shown = String::new();
    for path in [
        "/machines/order/processes/o-1/history",
        "/machines/order/processes/nobody/history",
        "/machines/invoice/processes/o-1/history",
    ] {
        let answer = client.get(server.url(path)).send().await.unwrap();
        let status = answer.status();
        let kind = answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        let text = answer.text().await.unwrap();
        let mut body: serde_json::Value = serde_json::from_str(&text).unwrap();
        // The times are the service's clock.
        let entries = body.get_mut("events").and_then(|e| e.as_array_mut());
        for entry in entries.into_iter().flatten() {
            entry["applied_at"] = "[time]".into();
        }
        let body = serde_json::to_string_pretty(&body).unwrap();
        shown.push_str(&format!(
            "GET {path}\n{status} {kind}\n{}\n\n",
            without_keys(&body, &mut keys)
        ));
    }
    server.assert_clean_log();
    insta::assert_snapshot!("history_http", shown);
}

/// An invocation started by one event and answered through the outbox: the
/// replay binds the recorded key to the invocation it starts, so that the
/// recorded completion (whose id is that key) reaches it; a changed
/// `onDone` then diverges at the completion, in the context.
#[test]
fn an_invocation_and_its_completion_replay() {
    let text = std::fs::read_to_string("machines/checkout.yaml")
        .unwrap()
        .replace("dedup:", "history: { keep: 30d }\ndedup:");
    let checkout = chart_of(&text);
    let mut store = open(&sqlite_store("invoke"));
    let pagar = Event::new(
        "PAGAR",
        Some(Value::from("r-1")),
        Value::from(&serde_json::json!({ "solicitudId": "r-1", "pedidoId": "o-1", "importe": 30 })),
    );
    runtime::apply_at(&mut store, &checkout, "c-1", &pagar, T).unwrap();
    let policy = runtime::DispatchPolicy::default();
    let report = runtime::dispatch(&mut store, &checkout, T + 1, &policy, |_| {
        runtime::Dispatch::Output(serde_json::json!({ "recibo": "R1" }))
    })
    .unwrap();
    assert_eq!(report.done, 1);
    let history = runtime::history(&mut store, "c-1").unwrap().unwrap();
    assert_eq!(history.entries.len(), 2);
    assert_eq!(
        history.entries[1].event_type(),
        Some("xstate.done.actor.cobro")
    );
    let same = runtime::replay(&checkout, &history).unwrap();
    assert_eq!((same.entries, same.divergence), (2, None));
    let changed = chart_of(&text.replace("\"event.output.recibo\"", "\"'none'\""));
    let divergence = runtime::replay(&changed, &history)
        .unwrap()
        .divergence
        .expect("the receipt is no longer kept");
    assert_eq!((divergence.index, divergence.aspect), (2, Aspect::Context));
    assert_eq!(divergence.recorded["recibo"], "R1");
    assert_eq!(divergence.replayed["recibo"], "none");
}

/// `diff` lists a changed `history.keep`, which is no change to what a
/// snapshot holds.
#[test]
fn diff_lists_a_changed_keep() {
    let old = chart(ORDER);
    let text = std::fs::read_to_string(ORDER).unwrap();
    let shorter = chart_of(&text.replace("keep: 30d", "keep: 7d"));
    let dropped = chart_of(&text.replace("history:\n  keep: 30d", ""));
    let listed = |new: &Chart| -> Vec<(String, bool)> {
        idemchart::lint::changes(old.machine(), new.machine())
            .iter()
            .map(|c| (c.to_string(), c.shape))
            .collect()
    };
    assert_eq!(
        listed(&shorter),
        [("~ history.keep: 30d → 7d".to_string(), false)]
    );
    assert_eq!(
        listed(&dropped),
        [("- history.keep 30d".to_string(), false)]
    );
}
