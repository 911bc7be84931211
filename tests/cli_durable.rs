//! The durable commands (`apply`, `advance`, `inspect`, `outbox`, `purge`) as a user
//! meets them: the built binary, its exit codes, and what it prints.
//!
//! Each scenario runs on a fresh SQLite file, and on a fresh schema of the
//! PostgreSQL server that `IDEMCHART_PG` names. The PostgreSQL runs are
//! ignored unless asked for (`-- --include-ignored`, as `scripts/test`
//! does). Both stores compare against the same snapshot, so they must answer
//! alike, byte for byte.

const LEDGER: &str = "tests/data/runtime/ledger.yaml";
const REMINDER: &str = "tests/data/runtime/reminder.yaml";
const CHECKOUT: &str = "machines/checkout.yaml";

use crate::support::run;

use run::{Run, idemchart};

#[cfg(feature = "postgres")]
use crate::support::stores::postgres_schema;
use crate::support::stores::sqlite_store;

#[cfg(feature = "postgres")]
use crate::support::stores::postgres_store;

/// A session with one store: every command is recorded with its exit code
/// and output into a transcript, which a snapshot holds.
struct Session {
    store: String,
    transcript: String,
    /// The outgoing keys seen so far, in the order they first appeared.
    keys: Vec<String>,
}

impl Session {
    fn new(store: String) -> Session {
        Session {
            store,
            transcript: String::new(),
            keys: Vec::new(),
        }
    }

    /// `line` with each outgoing key written `[key N]`, N counting the
    /// keys of the session in the order they first appear: a key is an HMAC
    /// under the store's own random secret, so its bytes differ on every
    /// run, but whether two places show the same key is kept.
    fn unkeyed(&mut self, line: &str) -> String {
        let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while !rest.is_empty() {
            let run = rest.find(|c: char| !hex(c)).unwrap_or(rest.len());
            let (word, tail) = rest.split_at(run);
            if word.len() == 64 {
                let n = match self.keys.iter().position(|k| k == word) {
                    Some(n) => n,
                    None => {
                        self.keys.push(word.to_string());
                        self.keys.len() - 1
                    }
                };
                out += &format!("[key {}]", n + 1);
            } else {
                out += word;
            }
            // Then everything up to the next run of hex digits.
            let gap = tail.find(hex).unwrap_or(tail.len());
            out += &tail[..gap];
            rest = &tail[gap..];
        }
        out
    }

    /// Runs `idemchart COMMAND --store STORE ARGS...`, records it (the store
    /// string left out, as it differs on every run) and returns it.
    fn run(&mut self, command: &str, args: &[&str]) -> Run {
        let mut full = vec![command, "--store", &self.store];
        full.extend_from_slice(args);
        let run = idemchart(&full);
        let line = self.unkeyed(&[&[command], args].concat().join(" "));
        self.transcript += &format!("$ idemchart {line}\n");
        self.transcript += &format!("exit: {:?}\n", run.code);
        for line in run.stdout.lines() {
            let line = self.unkeyed(&redact(line));
            self.transcript += &line;
            self.transcript.push('\n');
        }
        for line in run.stderr.lines() {
            self.transcript += &format!("stderr: {line}\n");
        }
        self.transcript.push('\n');
        run
    }

    fn apply(&mut self, process: &str, event: &str) -> Run {
        self.run(
            "apply",
            &["--machine", LEDGER, "--process", process, "--event", event],
        )
    }
}

/// A JSON output line with its clock readings replaced by `[time]`.
fn redact(line: &str) -> String {
    let mut value: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    if let Some(at) = value.get_mut("next_attempt_at") {
        *at = "[time]".into();
    }
    value.to_string()
}

/// The `response` of an `apply` answer exactly as printed.
fn response_bytes(stdout: &str) -> &str {
    let at = stdout
        .find(r#""response":"#)
        .unwrap_or_else(|| panic!("no response in {stdout}"));
    &stdout[at..]
}

fn apply_answers_every_delivery(store: String) {
    let mut session = Session::new(store);
    let add = r#"{"type":"ADD","data":{"addId":"a1","amount":5}}"#;
    let first = session.apply("p1", add);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let again = session.apply("p1", add);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stdout.starts_with(r#"{"outcome":"duplicate""#));
    assert_eq!(response_bytes(&again.stdout), response_bytes(&first.stdout));
    let other = session.apply("p1", r#"{"type":"ADD","data":{"addId":"a1","amount":6}}"#);
    assert_eq!(other.code, Some(0), "a conflict is an answer");
    // REOPEN in `open` enables nothing: the answer is `ignored`, and frozen.
    let reopen = r#"{"type":"REOPEN","id":"r1"}"#;
    let ignored = session.apply("p1", reopen);
    assert!(ignored.stdout.starts_with(r#"{"outcome":"ignored""#));
    let ignored_again = session.apply("p1", reopen);
    assert_eq!(
        response_bytes(&ignored_again.stdout),
        response_bytes(&ignored.stdout)
    );
    let no_id = session.apply("p1", r#"{"type":"ADD","data":{"amount":6}}"#);
    assert_eq!(no_id.code, Some(2));
    assert!(no_id.stdout.is_empty());
    session.run("inspect", &["--process", "p1"]);
    insta::assert_snapshot!("apply_answers_every_delivery", session.transcript);
}

fn inspect_shows_a_known_process_only(store: String) {
    let mut session = Session::new(store);
    session.apply("p1", r#"{"type":"ADD","data":{"addId":"a1","amount":5}}"#);
    session.apply("p1", r#"{"type":"CLOSE","id":"c1"}"#);
    let known = session.run("inspect", &["--process", "p1"]);
    assert_eq!(known.code, Some(0));
    let unknown = session.run("inspect", &["--process", "nobody"]);
    assert_eq!(unknown.code, Some(2));
    insta::assert_snapshot!("inspect_shows_a_known_process_only", session.transcript);
}

fn outbox_lists_and_dispatches_once(store: String) {
    let mut session = Session::new(store);
    for (id, amount) in [("a1", 5), ("a2", 7)] {
        session.apply(
            "p1",
            &format!(r#"{{"type":"ADD","data":{{"addId":"{id}","amount":{amount}}}}}"#),
        );
    }
    session.apply("p2", r#"{"type":"ADD","data":{"addId":"a1","amount":1}}"#);
    let pending = session.run("outbox", &[]);
    assert_eq!(pending.stdout.lines().count(), 3);
    let dispatched = session.run("outbox", &["--dispatch"]);
    assert_eq!(dispatched.stdout.lines().count(), 3);
    // Every row was handed out and marked done: nothing is left to dispatch.
    let second = session.run("outbox", &["--dispatch"]);
    assert_eq!((second.code, second.stdout.as_str()), (Some(0), ""));
    let done = session.run("outbox", &[]);
    assert!(
        done.stdout
            .lines()
            .all(|l| l.contains(r#""status":"done""#))
    );
    insta::assert_snapshot!("outbox_lists_and_dispatches_once", session.transcript);
}

/// A payment request to the checkout, as its frontend sends it.
fn pay(request: &str) -> String {
    format!(
        r#"{{"type":"PAGAR","data":{{"solicitudId":"{request}","pedidoId":"pe-{request}","importe":30}}}}"#
    )
}

/// The field `name` of every outbox line printed.
fn outbox_field(stdout: &str, name: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            row[name].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

fn invocations_are_dispatched_by_a_handler(store: String) {
    let mut session = Session::new(store);
    for process in ["c1", "c2"] {
        let paid = session.run(
            "apply",
            &[
                "--machine",
                CHECKOUT,
                "--process",
                process,
                "--event",
                &pay(process),
            ],
        );
        assert_eq!(paid.code, Some(0), "{}", paid.stderr);
        assert!(paid.stdout.contains(r#""invocations":"#), "{}", paid.stdout);
    }
    // Each charge is a row that names the completions answering it.
    let listed = session.run("outbox", &[]);
    assert_eq!(
        outbox_field(&listed.stdout, "invocation"),
        ["cobro", "cobro"]
    );
    // The gateway accepts c1's charge and declines c2's.
    let handler = r#"row=$(cat); case "$row" in *'"process":"c2"'*) echo declined >&2; exit 3;; esac; printf '{"recibo":"R-%s"}' "$IDEMCHART_KEY""#;
    let dispatched = session.run(
        "outbox",
        &["--dispatch", "--machine", CHECKOUT, "--handler", handler],
    );
    assert_eq!(dispatched.code, Some(0), "{}", dispatched.stderr);
    assert_eq!(
        dispatched.stdout.trim(),
        r#"{"done":1,"retried":0,"dead":0,"unknown":0,"failed":1}"#
    );
    let paid = session.run("inspect", &["--process", "c1"]);
    assert!(
        paid.stdout.contains(r#""configuration":["pagado"]"#),
        "{}",
        paid.stdout
    );
    let declined = session.run("inspect", &["--process", "c2"]);
    assert!(
        declined.stdout.contains(r#""configuration":["rechazado"]"#),
        "{}",
        declined.stdout
    );
    // A host that sends the same answer again gets the frozen response.
    let key = &outbox_field(&listed.stdout, "key")[0];
    let done = format!(
        r#"{{"type":"xstate.done.actor.cobro","id":"{key}","data":{{"output":{{"recibo":"R-{key}"}}}}}}"#
    );
    let again = session.run(
        "apply",
        &["--machine", CHECKOUT, "--process", "c1", "--event", &done],
    );
    assert!(
        again.stdout.starts_with(r#"{"outcome":"duplicate""#),
        "{}",
        again.stdout
    );
    session.run("outbox", &[]);
    insta::assert_snapshot!(
        "invocations_are_dispatched_by_a_handler",
        session.transcript
    );
}

fn purge_deletes_marks_and_settled_rows_older_than_the_retention(store: String) {
    let mut session = Session::new(store);
    let add = r#"{"type":"ADD","data":{"addId":"a1","amount":5}}"#;
    session.apply("p1", add);
    session.apply("p1", r#"{"type":"ADD","data":{"addId":"a2","amount":7}}"#);
    // Both effects are handed out and marked done.
    session.run("outbox", &["--dispatch"]);
    // The marks were written, and the rows settled, at the system clock's
    // present; the ledger keeps them for 1h.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64;
    let within = session.run("purge", &["--machine", LEDGER, "--now", &now.to_string()]);
    assert_eq!(within.stdout.trim(), r#"{"purged":0,"outbox_purged":0}"#);
    let after = (now + 2 * 3_600_000).to_string();
    let purged = session.run("purge", &["--machine", LEDGER, "--now", &after]);
    assert_eq!(purged.stdout.trim(), r#"{"purged":2,"outbox_purged":2}"#);
    // Without its mark, a very late duplicate in `open` is applied again:
    // the hazard the README describes, which retention must outlast.
    let late = session.apply("p1", add);
    assert!(
        late.stdout
            .starts_with(r#"{"outcome":"applied","revision":3"#)
    );
    // Its effect is queued again under the same key, for the receiver to
    // recognise.
    let queued = session.run("outbox", &[]);
    assert_eq!(queued.stdout.lines().count(), 1);
    // No row is dead: requeueing a key that is not dead is an error, `all`
    // requeues none.
    let missing = session.run("outbox", &["--requeue", "no-such-key"]);
    assert_eq!(missing.code, Some(2));
    let all = session.run("outbox", &["--requeue", "all"]);
    assert_eq!(all.stdout.trim(), r#"{"requeued":0}"#);
    // The transcript leaves out the `--now` values, which are clock readings.
    let transcript = session
        .transcript
        .replace(&now.to_string(), "[now]")
        .replace(&after, "[now + 2h]");
    insta::assert_snapshot!(
        "purge_deletes_marks_and_settled_rows_older_than_the_retention",
        transcript
    );
}

/// Timers of stored processes fire when `advance` (or an `apply`) reaches
/// their due time, once each, however often the scheduler runs.
fn advance_fires_due_timers_once(store: String) {
    let mut session = Session::new(store);
    // A fixed present keeps the due times in the transcript stable.
    const T0: u64 = 1_700_000_000_000;
    const MINUTE: u64 = 60_000;
    let at = |minutes: u64| (T0 + minutes * MINUTE).to_string();
    let ordered = session.run(
        "apply",
        &[
            "--machine",
            REMINDER,
            "--process",
            "o1",
            "--now",
            &at(0),
            "--event",
            r#"{"type":"ORDER","id":"order-1"}"#,
        ],
    );
    assert_eq!(ordered.code, Some(0), "{}", ordered.stderr);
    let fired = |run: &Run| -> usize {
        let line: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
        line["fired"].as_array().expect("fired").len()
    };
    let early = session.run(
        "advance",
        &["--machine", REMINDER, "--process", "o1", "--now", &at(5)],
    );
    assert_eq!(
        (early.code, fired(&early)),
        (Some(0), 0),
        "{}",
        early.stderr
    );
    // The process shows when its next timer is due: the first reminder.
    let waiting = session.run("inspect", &["--process", "o1"]);
    assert!(
        waiting
            .stdout
            .contains(&format!(r#""next_timer_at":{}"#, at(10))),
        "{}",
        waiting.stdout
    );
    // Without `--process`, every process whose next timer is due.
    let reminder = session.run("advance", &["--machine", REMINDER, "--now", &at(10)]);
    assert_eq!((reminder.code, fired(&reminder)), (Some(0), 1));
    // The scheduler runs again at the same time: nothing is due any more.
    let again = session.run("advance", &["--machine", REMINDER, "--now", &at(10)]);
    assert_eq!((again.code, again.stdout.as_str()), (Some(0), ""));
    // Past the expiry: the second reminder, then the expiry.
    let late = session.run(
        "advance",
        &["--machine", REMINDER, "--process", "o1", "--now", &at(31)],
    );
    assert!(fired(&late) >= 2, "{}", late.stdout);
    let state = session.run("inspect", &["--process", "o1"]);
    assert!(
        state.stdout.contains(r#""configuration":["expired"]"#),
        "{}",
        state.stdout
    );
    let unknown = session.run(
        "advance",
        &[
            "--machine",
            REMINDER,
            "--process",
            "nobody",
            "--now",
            &at(31),
        ],
    );
    assert_eq!(unknown.code, Some(2));
    session.run("outbox", &[]);
    insta::assert_snapshot!("advance_fires_due_timers_once", session.transcript);
}

/// Six `idemchart apply` processes at once, 50 events each, on one process
/// of one store: every one is answered `applied`, none fails for mere
/// contention.
fn concurrent_appliers_never_fail_for_contention(store: String) {
    const WRITERS: usize = 6;
    const EVENTS: usize = 50;
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let store = &store;
            scope.spawn(move || {
                for n in 0..EVENTS {
                    let event = format!(
                        r#"{{"type":"ADD","data":{{"addId":"w{writer}-{n}","amount":1}}}}"#
                    );
                    let run = idemchart(&[
                        "apply",
                        "--store",
                        store,
                        "--machine",
                        LEDGER,
                        "--process",
                        "shared",
                        "--event",
                        &event,
                    ]);
                    assert_eq!(run.code, Some(0), "{event}: {}", run.stderr);
                    assert!(
                        run.stdout.starts_with(r#"{"outcome":"applied""#),
                        "{event}: {}",
                        run.stdout
                    );
                }
            });
        }
    });
    let total = WRITERS * EVENTS;
    let inspect = idemchart(&["inspect", "--store", &store, "--process", "shared"]);
    let state: serde_json::Value = serde_json::from_str(&inspect.stdout).expect("JSON");
    assert_eq!(state["revision"], total, "{state}");
    assert_eq!(state["context"]["count"], total, "{state}");
    assert_eq!(state["context"]["total"], total, "{state}");
}

/// One `#[test]` per scenario and store, named `sqlite::SCENARIO` and
/// `postgres::SCENARIO`.
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(super::sqlite_store(stringify!($scenario)));
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                #[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
                fn $scenario() {
                    super::$scenario(super::postgres_store(stringify!($scenario)));
                }
            )*
        }
    };
}

on_both_stores!(
    apply_answers_every_delivery,
    inspect_shows_a_known_process_only,
    outbox_lists_and_dispatches_once,
    invocations_are_dispatched_by_a_handler,
    purge_deletes_marks_and_settled_rows_older_than_the_retention,
    advance_fires_due_timers_once,
    concurrent_appliers_never_fail_for_contention,
);

/// The store strings that cannot be opened: exit 2 and a message that says
/// why, never a panic, and nothing on standard output.
#[test]
fn a_store_that_cannot_be_opened_is_exit_2() {
    let mut transcript = String::new();
    let mut cases = vec![
        "orders.db",
        "mysql://root:secret@localhost/orders",
        "sqlite:",
        "postgres:localhost",
        "sqlite:/nonexistent-dir/orders.db",
    ];
    if cfg!(feature = "postgres") {
        cases.extend([
            "postgres://localhost:notaport/orders",
            // Port 1 on loopback refuses at once: an unreachable server.
            "postgres://postgres@127.0.0.1:1/orders",
        ]);
    } else {
        cases.push("postgres://postgres@127.0.0.1:1/orders");
    }
    for store in cases {
        let run = idemchart(&["inspect", "--store", store, "--process", "p1"]);
        assert_eq!(run.code, Some(2), "{store}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{store}");
        assert!(!run.stderr.contains("secret"), "{store}: {}", run.stderr);
        transcript += &format!("--store {store}\n{}\n", run.stderr);
    }
    let name = if cfg!(feature = "postgres") {
        "a_store_that_cannot_be_opened_is_exit_2"
    } else {
        "a_store_that_cannot_be_opened_is_exit_2_without_postgres"
    };
    insta::assert_snapshot!(name, transcript);
}

/// `--synchronous` is a SQLite setting; a wrong value, or the setting with
/// a PostgreSQL store, is refused before anything is opened.
#[test]
fn synchronous_is_for_sqlite_only() {
    let store = sqlite_store("synchronous");
    let normal = idemchart(&[
        "inspect",
        "--store",
        &store,
        "--synchronous",
        "normal",
        "--process",
        "p1",
    ]);
    assert_eq!(normal.stderr, "error: no process `p1` in the store\n");
    let wrong = idemchart(&[
        "inspect",
        "--store",
        &store,
        "--synchronous",
        "off",
        "--process",
        "p1",
    ]);
    assert_eq!(
        (wrong.code, wrong.stderr.as_str()),
        (
            Some(2),
            "error: unknown synchronous `off`: full or normal\n"
        )
    );
    let postgres = idemchart(&[
        "inspect",
        "--store",
        "postgres://127.0.0.1:1/orders",
        "--synchronous",
        "full",
        "--process",
        "p1",
    ]);
    assert_eq!(postgres.code, Some(2));
    assert!(
        postgres
            .stderr
            .contains("`--synchronous` is for a SQLite store"),
        "{}",
        postgres.stderr
    );
}

/// A `postgresql://` URL reaches the same store as the `KEY=VALUE` pairs
/// that name the same server and schema.
#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn a_postgres_url_and_key_value_pairs_reach_the_same_store() {
    let (base, schema) = postgres_schema("url");
    let config: ::postgres::Config = base.parse().expect("IDEMCHART_PG parses");
    let ::postgres::config::Host::Tcp(host) = &config.get_hosts()[0] else {
        panic!("IDEMCHART_PG names a TCP host");
    };
    let url = format!(
        "postgresql://{}@{host}:{}/{}?options=-c%20search_path%3D{schema}",
        config.get_user().expect("a user"),
        config.get_ports()[0],
        config.get_dbname().expect("a database"),
    );
    let pairs = format!("postgres:{base} options='-c search_path={schema}'");
    let event = r#"{"type":"ADD","data":{"addId":"a1","amount":5}}"#;
    let applied = idemchart(&[
        "apply",
        "--store",
        &pairs,
        "--machine",
        LEDGER,
        "--process",
        "p1",
        "--event",
        event,
    ]);
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);
    let again = idemchart(&[
        "apply",
        "--store",
        &url,
        "--machine",
        LEDGER,
        "--process",
        "p1",
        "--event",
        event,
    ]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        again
            .stdout
            .starts_with(r#"{"outcome":"duplicate","revision":1"#),
        "{}",
        again.stdout
    );
}
