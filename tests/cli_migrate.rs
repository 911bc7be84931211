//! `idemchart migrate` as a user meets it: a store filled by real `apply`
//! runs of version 1 of an order (timers pending, effects in the outbox),
//! moved to version 2 and then to 3, with `--dry-run`, `--process`, a
//! version without a migration, and SIGKILL at fixed moments of a run.
//!
//! Each scenario runs on a fresh SQLite file, and on a fresh schema of the
//! PostgreSQL server that `IDEMCHART_PG` names (ignored unless asked for,
//! as `scripts/test` does). Both compare against the same snapshots.

use idemchart::store::{AnyStore, OutboxItem, OutboxStatus, ProcessRow, Store};

use crate::support::run;

use run::{Run, idemchart};

const V1: &str = "tests/data/migrate/order-v1.yaml";
const V2: &str = "tests/data/migrate/order-v2.yaml";
const V3: &str = "tests/data/migrate/order-v3.yaml";
/// Version 3 whose migrations say `outbox: drop`.
const V3_DROP: &str = "tests/data/migrate/order-v3-drop.yaml";

/// The start of every process here, in milliseconds since the epoch.
const T0: u64 = 1_700_000_000_000;

#[cfg(feature = "postgres")]
use crate::support::stores::postgres_store;
use crate::support::stores::{scratch, sqlite_store, unique};

fn connect(store: &str) -> AnyStore {
    idemchart::store::open(store).expect("open the test store")
}

/// Runs `idemchart apply` and expects an answer.
fn apply(store: &str, machine: &str, process: &str, event: &str, now: u64) -> Run {
    let now = now.to_string();
    let run = idemchart(&[
        "apply",
        "--store",
        store,
        "--machine",
        machine,
        "--process",
        process,
        "--event",
        event,
        "--now",
        &now,
    ]);
    assert_eq!(run.code, Some(0), "apply {process} {event}: {}", run.stderr);
    run
}

fn nudge(id: &str) -> String {
    format!(r#"{{"type":"NUDGE","data":{{"nudgeId":"{id}"}}}}"#)
}

fn pay(id: &str, amount: i64) -> String {
    format!(r#"{{"type":"PAY","data":{{"payId":"{id}","amount":{amount}}}}}"#)
}

/// The events each process of version 1 gets, in order: a process waiting
/// with its expiry pending and reminders in the outbox, one paid with its
/// shipment in the outbox, one nudged once.
fn events() -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("o-nudged", vec![nudge("n1"), nudge("n2")]),
        ("o-paid", vec![nudge("n1"), pay("p1", 7)]),
        ("o-late", vec![nudge("n1")]),
    ]
}

/// Applies `events` under `machine` to each process, named with `prefix`.
fn fill(store: &str, machine: &str, prefix: &str, events: &[(&str, Vec<String>)]) {
    for (process, events) in events {
        for (i, event) in events.iter().enumerate() {
            let process = format!("{prefix}{process}");
            apply(store, machine, &process, event, T0 + i as u64);
        }
    }
}

/// Everything the store holds about the processes named, to compare before
/// and after a run that must change nothing.
fn dump(store: &str, processes: &[&str]) -> (Vec<Option<ProcessRow>>, Vec<usize>, Vec<OutboxItem>) {
    let mut store = connect(store);
    let rows = processes
        .iter()
        .map(|p| store.process(p).unwrap())
        .collect();
    let applied = processes
        .iter()
        .map(|p| store.applied_count(p).unwrap())
        .collect();
    (rows, applied, store.outbox(None).unwrap())
}

fn row(store: &str, process: &str) -> ProcessRow {
    connect(store)
        .process(process)
        .unwrap()
        .unwrap_or_else(|| panic!("no process {process}"))
}

/// Runs `idemchart migrate --store STORE ARGS` and records it in
/// `transcript`, the store string left out and each outbox key written
/// `[key]` (they are HMACs under the store's random secret).
fn migrate(store: &str, args: &[&str], transcript: &mut String) -> Run {
    let mut full = vec!["migrate", "--store", store];
    full.extend_from_slice(args);
    let run = idemchart(&full);
    *transcript += &format!(
        "$ idemchart migrate {}\nexit: {:?}\n",
        args.join(" "),
        run.code
    );
    *transcript += &unkeyed(&run.stdout);
    for line in run.stderr.lines() {
        *transcript += &format!("stderr: {line}\n");
    }
    transcript.push('\n');
    run
}

/// `stdout`'s JSON lines, each outbox key written `[key]`.
fn unkeyed(stdout: &str) -> String {
    let mut text = String::new();
    for line in stdout.lines() {
        let mut value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        for path in ["/unknown_outbox", "/dropped/outbox"] {
            let rows = value.pointer_mut(path).and_then(|r| r.as_array_mut());
            for row in rows.into_iter().flatten() {
                row["key"] = "[key]".into();
            }
        }
        text += &format!("{value}\n");
    }
    text
}

fn lines(run: &Run) -> Vec<serde_json::Value> {
    run.stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// 1 → 2 → 3 by `migrate`: each process ends where the same events leave a
/// process of the new machine, wherever the mapping is the identity of
/// what the events did; a second run changes nothing.
fn migrates_a_store_to_2_then_to_3(store: String) {
    let mut transcript = String::new();
    fill(&store, V1, "", &events());
    // The reference: the same events, on a process started by version 2.
    fill(&store, V2, "ref2-", &events());

    let run = migrate(&store, &["--machine", V2], &mut transcript);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let moved = lines(&run);
    assert_eq!(moved.len(), 3, "{}", run.stdout);
    assert!(moved.iter().all(|line| line["status"] == "migrated"));
    for (process, _) in events() {
        let (migrated, fresh) = (
            row(&store, process),
            row(&store, &format!("ref2-{process}")),
        );
        assert_eq!(migrated.version, Some(2), "{process}");
        // Version 2 renames a state and adds `cents` = total × 100, which is
        // what its own PAY computes: the whole snapshot is what version 2
        // gives for the same events, timers and their due times included.
        assert_eq!(migrated.snapshot, fresh.snapshot, "{process}");
        assert_eq!(migrated.next_timer_at, fresh.next_timer_at, "{process}");
        assert_eq!(migrated.revision, fresh.revision + 1, "{process}");
    }

    // A deploy of version 1 still running writes one more process; the
    // version-3 file moves it from 1 in one step, the others from 2.
    apply(&store, V1, "o-old", &nudge("n1"), T0);
    fill(&store, V3, "ref3-", &[("o-paid", vec![pay("p1", 7)])]);
    let run = migrate(&store, &["--machine", V3], &mut transcript);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let moved = lines(&run);
    let froms: Vec<(String, u64)> = moved
        .iter()
        .map(|l| {
            (
                l["process"].as_str().unwrap().to_string(),
                l["from"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        froms,
        [
            ("o-late".to_string(), 2),
            ("o-nudged".to_string(), 2),
            ("o-old".to_string(), 1),
            ("o-paid".to_string(), 2),
            ("ref2-o-late".to_string(), 2),
            ("ref2-o-nudged".to_string(), 2),
            ("ref2-o-paid".to_string(), 2),
        ]
    );
    let nudged = &moved[1];
    assert_eq!(
        nudged["dropped"]["timers"],
        serde_json::json!(["after:awaiting_pay[0]"])
    );
    assert_eq!(nudged["unknown_outbox"].as_array().unwrap().len(), 2);
    // The paid process is what version 3 gives for its payment; version 3
    // has no `nudges`, and no NUDGE to compare the waiting ones with.
    let (paid, fresh) = (row(&store, "o-paid"), row(&store, "ref3-o-paid"));
    let snapshot =
        |row: &ProcessRow| -> serde_json::Value { serde_json::from_str(&row.snapshot).unwrap() };
    let (paid, fresh) = (snapshot(&paid), snapshot(&fresh));
    for field in ["version", "configuration", "context", "timers"] {
        assert_eq!(paid[field], fresh[field], "{field}");
    }
    for process in ["o-nudged", "o-late", "o-old"] {
        let row = row(&store, process);
        assert_eq!(
            (row.version, row.next_timer_at),
            (Some(3), None),
            "{process}"
        );
        let state = snapshot(&row);
        assert_eq!(state["configuration"], serde_json::json!(["waiting"]));
        assert_eq!(
            state["context"],
            serde_json::json!({ "total": 0, "cents": 0 })
        );
    }
    // The moved process goes on under version 3.
    let paid_later = apply(&store, V3, "o-nudged", &pay("p9", 3), T0 + 10);
    assert!(paid_later.stdout.contains(r#""configuration":["paid"]"#));

    // Again: nothing is at another version, nothing is written.
    let all = [
        "o-nudged",
        "o-paid",
        "o-late",
        "o-old",
        "ref2-o-nudged",
        "ref2-o-paid",
        "ref2-o-late",
        "ref3-o-paid",
    ];
    let before = dump(&store, &all);
    let run = migrate(&store, &["--machine", V3], &mut transcript);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), ""),
        "{}",
        run.stderr
    );
    assert_eq!(dump(&store, &all), before);
    insta::assert_snapshot!("migrates_a_store_to_2_then_to_3", transcript);
}

/// `--dry-run` says what would change and writes nothing; `--process`
/// moves that process only, and a second time skips it.
fn dry_run_and_one_process(store: String) {
    let mut transcript = String::new();
    fill(&store, V1, "", &events());
    let all = ["o-nudged", "o-paid", "o-late"];
    let before = dump(&store, &all);
    let run = migrate(&store, &["--machine", V2, "--dry-run"], &mut transcript);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(lines(&run).iter().all(|l| l["status"] == "would-migrate"));
    assert_eq!(dump(&store, &all), before);

    let run = migrate(
        &store,
        &["--machine", V2, "--process", "o-paid"],
        &mut transcript,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(row(&store, "o-paid").version, Some(2));
    assert_eq!(row(&store, "o-nudged").version, Some(1));
    assert_eq!(row(&store, "o-late").version, Some(1));
    let run = migrate(
        &store,
        &["--machine", V2, "--process", "o-paid"],
        &mut transcript,
    );
    assert_eq!(lines(&run)[0]["status"], "skipped");
    let run = migrate(
        &store,
        &["--machine", V2, "--process", "o-none"],
        &mut transcript,
    );
    assert_eq!(run.code, Some(2));
    insta::assert_snapshot!("dry_run_and_one_process", transcript);
}

/// A process whose version the file declares no migration from is an
/// error line, with the runtime's message; the others still move, and the
/// command exits 1.
fn a_version_without_a_migration_is_an_error_line(store: String) {
    let mut transcript = String::new();
    fill(&store, V1, "", &events());
    migrate(
        &store,
        &["--machine", V2, "--process", "o-paid"],
        &mut transcript,
    );
    let only_from_2 = scratch().join(unique("v3-from-2") + ".yaml");
    let text = std::fs::read_to_string(run::manifest_dir().join(V3)).unwrap();
    let from_1 = text.find("  - from: 1").unwrap();
    let from_2 = text.find("  - from: 2").unwrap();
    std::fs::write(
        &only_from_2,
        format!("{}{}", &text[..from_1], &text[from_2..]),
    )
    .unwrap();
    let path = only_from_2.display().to_string();
    let run = idemchart(&["migrate", "--store", &store, "--machine", &path]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let moved = lines(&run);
    let status: Vec<(&str, &str)> = moved
        .iter()
        .map(|l| {
            (
                l["process"].as_str().unwrap(),
                l["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("o-late", "error"),
            ("o-nudged", "error"),
            ("o-paid", "migrated")
        ]
    );
    assert_eq!(
        moved[0]["error"],
        "process o-late runs version 1; machine order is version 3 and declares no migration from 1"
    );
    // The same message as `apply` gives for that process.
    let apply = idemchart(&[
        "apply",
        "--store",
        &store,
        "--machine",
        &path,
        "--process",
        "o-late",
        "--event",
        &pay("p2", 1),
    ]);
    assert_eq!(apply.code, Some(2));
    assert!(
        apply.stderr.contains(moved[0]["error"].as_str().unwrap()),
        "{}",
        apply.stderr
    );
    assert_eq!(row(&store, "o-late").version, Some(1));
    transcript += "$ idemchart migrate --machine [order-v3.yaml without its `from: 1`]\n";
    transcript += &format!(
        "exit: {:?}\n{}stderr: {}",
        run.code,
        unkeyed(&run.stdout),
        run.stderr
    );
    insta::assert_snapshot!("a_version_without_a_migration_is_an_error_line", transcript);
}

/// `outbox: drop`: `--dry-run` lists under `dropped.outbox` the pending
/// rows of `remind` (which version 3 lacks) and writes nothing; the run
/// cancels them with the write of each snapshot and leaves the rows of
/// `ship` pending, so a dispatcher sends `ship` only; `unknown_outbox` is
/// empty, since nothing unknown is kept.
fn outbox_drop_cancels_what_version_3_lacks(store: String) {
    let mut transcript = String::new();
    fill(&store, V1, "", &events());
    let run = migrate(&store, &["--machine", V2], &mut transcript);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let all = ["o-nudged", "o-paid", "o-late"];
    let before = dump(&store, &all);
    let pending_of = |outbox: &[OutboxItem], status: OutboxStatus| -> Vec<(String, String)> {
        outbox
            .iter()
            .filter(|r| r.status == status)
            .map(|r| (r.process.clone(), r.effect.clone()))
            .collect()
    };
    let remind = |p: &str| (p.to_string(), "remind".to_string());
    let reminders = [
        remind("o-late"),
        remind("o-nudged"),
        remind("o-nudged"),
        remind("o-paid"),
    ];
    let ship = ("o-paid".to_string(), "ship".to_string());
    let mut pending_before = reminders.to_vec();
    pending_before.push(ship.clone());
    assert_eq!(
        pending_of(&before.2, OutboxStatus::Pending),
        pending_before,
        "{:?}",
        before.2
    );

    let run = migrate(
        &store,
        &["--machine", V3_DROP, "--dry-run"],
        &mut transcript,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let would = lines(&run);
    assert!(would.iter().all(|l| l["status"] == "would-migrate"));
    let listed = |lines: &[serde_json::Value]| -> Vec<(String, String)> {
        lines
            .iter()
            .flat_map(|l| {
                let process = l["process"].as_str().unwrap().to_string();
                assert_eq!(l["unknown_outbox"], serde_json::json!([]), "{l}");
                let rows = l["dropped"]["outbox"].as_array().unwrap().clone();
                rows.into_iter()
                    .map(move |r| (process.clone(), r["effect"].as_str().unwrap().to_string()))
            })
            .collect()
    };
    assert_eq!(listed(&would), reminders);
    assert_eq!(dump(&store, &all), before);

    let run = migrate(&store, &["--machine", V3_DROP], &mut transcript);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let moved = lines(&run);
    assert!(moved.iter().all(|l| l["status"] == "migrated"));
    assert_eq!(listed(&moved), reminders);
    // The keys listed are the rows cancelled, and nothing else changed in
    // the outbox.
    let after = connect(&store).outbox(None).unwrap();
    let keys: Vec<&str> = moved
        .iter()
        .flat_map(|l| l["dropped"]["outbox"].as_array().unwrap())
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(after.len(), before.2.len());
    for (old, new) in before.2.iter().zip(&after) {
        let dropped = keys.contains(&old.key.as_str());
        let expected = if dropped {
            OutboxStatus::Cancelled
        } else {
            old.status
        };
        assert_eq!((new.key.as_str(), new.status), (old.key.as_str(), expected));
    }
    assert_eq!(pending_of(&after, OutboxStatus::Pending), [ship]);

    let v3 = chart(V3_DROP);
    let mut sent = Vec::new();
    let policy = idemchart::runtime::DispatchPolicy::default();
    idemchart::runtime::dispatch(&mut connect(&store), &v3, T0 + 100, &policy, |item| {
        sent.push(item.effect.clone());
        idemchart::runtime::Dispatch::Done
    })
    .unwrap();
    assert_eq!(sent, ["ship"]);
    // A second run has nothing to move.
    let run = migrate(&store, &["--machine", V3_DROP], &mut transcript);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    insta::assert_snapshot!("outbox_drop_cancels_what_version_3_lacks", transcript);
}

/// One `#[test]` per scenario and store.
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
    migrates_a_store_to_2_then_to_3,
    dry_run_and_one_process,
    a_version_without_a_migration_is_an_error_line,
    outbox_drop_cancels_what_version_3_lacks,
);

/// What cannot be migrated is said, with exit 2 (1 for a machine file with
/// load errors), never a panic.
#[test]
fn bad_input_is_a_clear_error() {
    let store = sqlite_store("bad_input");
    fill(&store, V1, "", &events()[..1]);
    let missing = format!("sqlite:{}", scratch().join("no-such.db").display());
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["--store", &missing, "--machine", V2],
            2,
            "no SQLite store at",
        ),
        (
            &["--store", &store, "--machine", "no-such.yaml"],
            2,
            "cannot read no-such.yaml",
        ),
        (
            &["--store", &store, "--machine", V2, "--process", "o-none"],
            2,
            "no process `o-none` in the store",
        ),
        (&["--store", "mysql://x", "--machine", V2], 2, "error:"),
    ];
    for (args, code, message) in cases {
        let run = idemchart(&[&["migrate"], args].concat());
        assert_eq!(run.code, Some(code), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
    let broken = scratch().join(unique("broken") + ".yaml");
    std::fs::write(
        &broken,
        "machine: order\nversion: 2\ninitial: nowhere\nstates: { a: {} }\n",
    )
    .unwrap();
    let run = idemchart(&[
        "migrate",
        "--store",
        &store,
        "--machine",
        &broken.display().to_string(),
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(row(&store, "o-nudged").version, Some(1));
}

#[test]
fn help_says_what_it_does() {
    let run = idemchart(&["migrate", "--help"]);
    assert_eq!(run.code, Some(0));
    insta::assert_snapshot!("migrate_help", run.stdout);
}

/// The chart of a machine file of this test.
fn chart(path: &str) -> std::sync::Arc<idemchart::interp::Chart> {
    let text = std::fs::read_to_string(run::manifest_dir().join(path)).unwrap();
    let machine = idemchart::syntax::parse(&text, idemchart::syntax::Syntax::Yaml).unwrap();
    std::sync::Arc::new(idemchart::interp::Chart::new(machine))
}

/// Runs `idemchart migrate` and SIGKILLs it `kill_after` after its start,
/// unless it finished first. Returns its standard output, and whether it
/// was killed. Any other failure fails the test.
fn migrate_child(store: &str, kill_after: std::time::Duration) -> (String, bool) {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["migrate", "--store", store, "--machine", V2])
        .current_dir(run::manifest_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn idemchart");
    let started = std::time::Instant::now();
    while child.try_wait().expect("poll idemchart").is_none() {
        if started.elapsed() >= kill_after {
            // Kill sends SIGKILL; a child that exited meanwhile is reaped.
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let output = child.wait_with_output().expect("wait for idemchart");
    let killed = output.status.signal() == Some(9);
    assert!(
        killed || output.status.success(),
        "idemchart migrate failed without being killed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    (String::from_utf8(output.stdout).unwrap(), killed)
}

/// `migrate` SIGKILLed at fixed fractions of an undisturbed run's length,
/// then run to its end: after every kill each process is exactly as
/// version 1 left it or exactly as the undisturbed run moved it (in its
/// own store), never between, and every `migrated` line a killed run
/// printed names a moved process. The kill moments depend on this
/// machine's speed; what is asserted does not.
fn killed_migrations_leave_each_process_old_or_moved(store: String, reference: String) {
    let v1 = chart(V1);
    let processes: Vec<String> = (0..150).map(|i| format!("o-{i:03}")).collect();
    for handle in [&store, &reference] {
        let mut store = connect(handle);
        for (i, process) in processes.iter().enumerate() {
            let nudge = idemchart::expr::Event::new(
                "NUDGE",
                Some(idemchart::expr::Value::from(format!("n{i}").as_str())),
                idemchart::expr::Value::Null,
            );
            idemchart::runtime::apply_at(&mut store, &v1, process, &nudge, T0 + i as u64).unwrap();
        }
    }
    let rows_of = |handle: &str| -> Vec<ProcessRow> {
        let mut store = connect(handle);
        let rows = processes.iter().map(|p| store.process(p).unwrap().unwrap());
        rows.collect()
    };
    let old = rows_of(&store);
    let outbox = connect(&store).outbox(None).unwrap();
    let started = std::time::Instant::now();
    let (_, killed) = migrate_child(&reference, std::time::Duration::from_secs(600));
    let span = started.elapsed();
    assert!(!killed);
    let moved = rows_of(&reference);
    assert!(moved.iter().all(|row| row.version == Some(2)));

    // Each run goes on where the last one was killed, so the kills come
    // early in a run: at 1/24 to 4/24 of the undisturbed run's length, in
    // turn, until a run ends on its own (or after 60 runs).
    let (mut partial, mut kills, mut runs) = (0, 0, 0);
    loop {
        runs += 1;
        let (stdout, killed) = migrate_child(&store, span * (runs % 4 + 1) / 24);
        kills += u32::from(killed);
        let mut counts = (0, 0);
        let mut rows = connect(&store);
        for (i, process) in processes.iter().enumerate() {
            let now = rows.process(process).unwrap().unwrap();
            if now == old[i] {
                counts.0 += 1;
            } else {
                assert_eq!(now, moved[i], "{process} is neither old nor moved");
                counts.1 += 1;
            }
        }
        if counts.0 > 0 && counts.1 > 0 {
            partial += 1;
        }
        for line in stdout.lines() {
            let line: serde_json::Value = serde_json::from_str(line).expect("whole JSON lines");
            let process = line["process"].as_str().unwrap();
            assert_eq!(line["status"], "migrated", "{line}");
            let now = rows.process(process).unwrap().unwrap();
            assert_eq!(now.version, Some(2), "{process}");
        }
        assert_eq!(rows.outbox(None).unwrap(), outbox);
        if !killed || runs == 60 {
            break;
        }
    }
    let (_, killed) = migrate_child(&store, std::time::Duration::from_secs(600));
    assert!(!killed);
    assert_eq!(rows_of(&store), moved);
    eprintln!(
        "migrate crash test: an undisturbed run took {:.0} ms; {kills} of {runs} runs killed, {partial} leaving some processes moved and some old",
        span.as_secs_f64() * 1000.0
    );
}

#[test]
fn sqlite_killed_migrations_leave_each_process_old_or_moved() {
    killed_migrations_leave_each_process_old_or_moved(
        sqlite_store("killed"),
        sqlite_store("killed_reference"),
    );
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
fn postgres_killed_migrations_leave_each_process_old_or_moved() {
    killed_migrations_leave_each_process_old_or_moved(
        postgres_store("killed"),
        postgres_store("killed_reference"),
    );
}

use crate::support::serve_server;

/// `idemchart serve` on `store` with the one machine file `file`, in a
/// directory of its own.
fn serve(store: &str, file: &str, name: &str) -> serve_server::Server {
    let dir = scratch().join(unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(run::manifest_dir().join(file)).unwrap();
    std::fs::write(dir.join("order.yaml"), text).unwrap();
    serve_server::Server::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_idemchart")),
        &dir.display().to_string(),
        "127.0.0.1:0",
        store,
        &[],
    )
}

/// A process of a version the served machine declares no migration from
/// is answered 409 `version-not-migrated`, naming both versions, and
/// nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_409_for_a_version_without_a_migration() {
    let store = sqlite_store("serve_409");
    fill(&store, V1, "", &events()[..1]);
    let before = dump(&store, &["o-nudged"]);
    // Version 3 without its `from: 1`.
    let text = std::fs::read_to_string(run::manifest_dir().join(V3)).unwrap();
    let (from_1, from_2) = (
        text.find("  - from: 1").unwrap(),
        text.find("  - from: 2").unwrap(),
    );
    let file = scratch().join(unique("v3-from-2") + ".yaml");
    std::fs::write(&file, format!("{}{}", &text[..from_1], &text[from_2..])).unwrap();
    let server = serve(&store, &file.display().to_string(), "serve_409");
    let answer = reqwest::Client::new()
        .post(server.url("/machines/order/processes/o-nudged/events"))
        .header("content-type", "application/json")
        .body(pay("p1", 5))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 409);
    assert_eq!(
        answer.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let body = answer.text().await.unwrap();
    let problem: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        problem["detail"],
        "process o-nudged runs version 1; machine order is version 3 and declares no migration from 1"
    );
    insta::assert_snapshot!("serve_version_not_migrated_409", body);
    assert_eq!(dump(&store, &["o-nudged"]), before);
    server.assert_clean_log();
}

/// 8 requests at once, each a new event for the same process of version
/// 1, to a service of version 2: the process is migrated once (by
/// whichever request's transaction wins; the others start over from its
/// result), every event is applied once, and every request is answered 200
/// or 503 `unavailable` (retryable, nothing written), which is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lazy_migration_under_8_concurrent_requests_migrates_once() {
    let store = sqlite_store("serve_lazy");
    // The service runs on the system clock: the process starts now, so its
    // 24 h expiry is far from due.
    let now = idemchart::runtime::now_millis();
    apply(&store, V1, "o-nudged", &nudge("n1"), now);
    apply(&store, V1, "o-nudged", &nudge("n2"), now);
    let before = row(&store, "o-nudged");
    let server = serve(&store, V2, "serve_lazy");
    let client = reqwest::Client::new();
    let url = server.url("/machines/order/processes/o-nudged/events");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (client, url, barrier) = (client.clone(), url.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut retried = 0;
            loop {
                let answer = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(nudge(&format!("c{i}")))
                    .send()
                    .await
                    .unwrap();
                let status = answer.status().as_u16();
                let body = answer.text().await.unwrap();
                match status {
                    200 => {
                        return (
                            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
                            retried,
                        );
                    }
                    503 => retried += 1,
                    other => panic!("request {i}: {other} {body}"),
                }
                assert!(retried < 100, "request {i} never answered: {body}");
            }
        }));
    }
    let mut revisions = Vec::new();
    for task in tasks {
        let (answer, _) = task.await.unwrap();
        assert_eq!(answer["outcome"], "applied", "{answer}");
        assert_eq!(answer["configuration"], serde_json::json!(["awaiting_pay"]));
        revisions.push(answer["revision"].as_u64().unwrap());
    }
    revisions.sort_unstable();
    // Each request wrote one revision after the stored one: none lost, none
    // applied twice, and the migration itself took no revision of its own.
    let expected: Vec<u64> = (1..=8).map(|n| before.revision + n).collect();
    assert_eq!(revisions, expected);
    let after = row(&store, "o-nudged");
    assert_eq!(
        (after.version, after.revision),
        (Some(2), before.revision + 8)
    );
    let snapshot: serde_json::Value = serde_json::from_str(&after.snapshot).unwrap();
    // Two nudges at version 1, eight at version 2; `cents` from the mapping.
    assert_eq!(
        snapshot["context"],
        serde_json::json!({ "total": 0, "cents": 0, "nudges": 10 })
    );
    let mut store = connect(&store);
    assert_eq!(store.applied_count("o-nudged").unwrap(), 10);
    server.assert_clean_log();
}
