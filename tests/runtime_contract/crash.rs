//! The crash proof, for every store the command line opens: `idemchart
//! apply` is killed with SIGKILL at random moments while a sender retries
//! each event until it is answered.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use idemchart::store::Store;

use super::Backend;

/// Runs `idemchart apply` on the ledger machine once; `kill_after` kills it
/// (SIGKILL) that long after the start unless it finished. Returns its
/// answer, or `None` when the kill stopped it first. Any other failure is a
/// failure of the test: an answerless exit of a child nobody killed (a
/// corrupt row after a torn write, say) must not pass for a kill.
pub fn apply_child(
    store: &str,
    process: &str,
    event: &str,
    kill_after: Option<Duration>,
) -> Option<serde_json::Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["apply", "--store", store, "--machine"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/runtime/ledger.yaml"
        ))
        .args(["--process", process, "--event", event])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn idemchart");
    if let Some(delay) = kill_after {
        std::thread::sleep(delay);
        // Kill sends SIGKILL; a child that already exited is simply reaped.
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("wait for idemchart");
    if !output.status.success() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            output.status.signal(),
            Some(9),
            "idemchart apply failed without being killed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    let text = String::from_utf8(output.stdout).expect("utf-8 output");
    Some(serde_json::from_str(text.trim()).expect("one JSON answer"))
}

/// Kills `idemchart apply --store cli_store` with SIGKILL at random moments
/// while a sender retries each event until it is answered: no event is
/// lost, none applied twice, and every duplicate is answered with the first
/// response. `handle` names the same store for `backend`, which checks the
/// result. `IDEMCHART_CRASH_KILLS` sets the number of kills (200 by default,
/// as the issue asks).
pub fn killed_appliers_lose_nothing_and_double_nothing<B: Backend>(
    backend: &B,
    handle: &str,
    cli_store: &str,
) {
    let kills_wanted: u32 = std::env::var("IDEMCHART_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let started = Instant::now();
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
        let started = Instant::now();
        let warmup = apply_child(
            cli_store,
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
                .then(|| Duration::from_micros(random(span_us)));
            match apply_child(cli_store, "crashy", &event, kill) {
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
         {committed_unanswered} killed after commit before answering, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut store = backend.connect(handle);
    let state = idemchart::runtime::inspect(&mut store, "crashy")
        .unwrap()
        .unwrap();
    let total: i64 = events.iter().map(|(_, amount)| amount).sum();
    assert_eq!(state["context"]["total"], total, "{state}");
    assert_eq!(state["context"]["count"], events.len());
    assert_eq!(state["revision"], events.len());
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
