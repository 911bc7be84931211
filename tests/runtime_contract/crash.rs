//! The crash proof, for every store the command line opens: `idemchart
//! apply` is killed with SIGKILL at random moments while a sender retries
//! each event until it is answered.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use idemchart::store::Store;

use super::Backend;

/// A random number below its argument, from a seed printed under `test`'s
/// name so that a failing run can be told apart.
fn random_below(test: &str) -> impl FnMut(u64) -> u64 {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("{test} seed {seed}");
    move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below.max(1)
    }
}

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
    let mut random = random_below("crash test");
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

/// Kills `idemchart outbox --dispatch --handler` with SIGKILL at random
/// moments while it answers the charges of 60 checkouts, restarting it
/// until nothing is left to dispatch: each charge's completion is delivered
/// exactly once (one receipt per checkout, two applied events per process),
/// however often the gateway was asked, and it was always asked under the
/// one key of its charge. `IDEMCHART_CRASH_KILLS` sets the number of kills
/// (40 by default).
pub fn killed_dispatchers_deliver_each_completion_once<B: Backend>(
    backend: &B,
    handle: &str,
    cli_store: &str,
) {
    let kills_wanted: u32 = std::env::var("IDEMCHART_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(40, |kills: u32| kills / 5);
    let machine = concat!(env!("CARGO_MANIFEST_DIR"), "/machines/checkout.yaml");
    let chart = super::invocations::checkout();
    let checkouts: Vec<String> = (0..60).map(|i| format!("co{i}")).collect();
    {
        let mut store = backend.connect(handle);
        for (i, process) in checkouts.iter().enumerate() {
            let data =
                serde_json::json!({ "solicitudId": process, "pedidoId": process, "importe": i });
            let pay = idemchart::expr::Event::new(
                "PAGAR",
                Some(idemchart::expr::Value::from(process.as_str())),
                idemchart::expr::Value::from(&data),
            );
            super::api::apply_at(&mut store, &chart, process, &pay, super::T0).unwrap();
        }
    }
    let asked = std::env::temp_dir().join(format!(
        "idemchart-gateway-{}-{}.log",
        std::process::id(),
        handle.len()
    ));
    let _ = std::fs::remove_file(&asked);
    // The gateway: records the key it was asked under, takes a moment, and
    // answers with a receipt named after the key.
    let gateway = format!(
        r#"echo "$IDEMCHART_KEY" >> '{}'; sleep 0.02; printf '{{"recibo":"R-%s"}}' "$IDEMCHART_KEY""#,
        asked.display()
    );
    let mut random = random_below("dispatcher crash test");
    let (mut kills, mut runs) = (0u32, 0u32);
    let started = Instant::now();
    loop {
        let mut child = Command::new(env!("CARGO_BIN_EXE_idemchart"))
            .args([
                "outbox",
                "--store",
                cli_store,
                "--dispatch",
                "--machine",
                machine,
            ])
            .args(["--handler", &gateway, "--lease-ms", "100"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn idemchart");
        runs += 1;
        if kills < kills_wanted {
            std::thread::sleep(Duration::from_millis(random(150)));
            if child.try_wait().expect("poll idemchart").is_none() {
                let _ = child.kill();
                kills += 1;
            }
        }
        let output = child.wait_with_output().expect("wait for idemchart");
        if output.status.success() {
            let report: serde_json::Value =
                serde_json::from_slice(&output.stdout).expect("a JSON report");
            let nothing_left = report["done"] == 0 && report["retried"] == 0;
            if nothing_left {
                let mut store = backend.connect(handle);
                let pending = store.outbox(Some(idemchart::store::OutboxStatus::Pending));
                let charges_left = pending.unwrap().iter().any(|row| row.invocation.is_some());
                if !charges_left {
                    break;
                }
            }
        } else {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                output.status.signal(),
                Some(9),
                "the dispatcher failed without being killed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        // A killed dispatcher's claimed rows come back when their lease ends.
        std::thread::sleep(Duration::from_millis(110));
        assert!(runs < 2_000, "the outbox never drained");
    }
    eprintln!(
        "dispatcher crash test: {kills} kills, {runs} runs, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(kills > 0, "no dispatcher was killed while it worked");
    let mut store = backend.connect(handle);
    let outbox = store.outbox(None).unwrap();
    let log = std::fs::read_to_string(&asked).unwrap_or_default();
    for process in &checkouts {
        let state = idemchart::runtime::inspect(&mut store, process)
            .unwrap()
            .unwrap();
        assert_eq!(
            state["configuration"],
            serde_json::json!(["pagado"]),
            "{state}"
        );
        assert_eq!(store.applied_count(process).unwrap(), 2, "{process}");
        let charge = outbox
            .iter()
            .find(|row| &row.process == process && row.invocation.is_some())
            .unwrap();
        assert_eq!(charge.status, idemchart::store::OutboxStatus::Done);
        assert_eq!(state["context"]["recibo"], format!("R-{}", charge.key));
        let receipts = outbox
            .iter()
            .filter(|row| &row.process == process && row.effect == "enviarRecibo")
            .count();
        assert_eq!(receipts, 1, "{process}");
        assert!(
            log.lines().any(|key| key == charge.key),
            "{process} was charged"
        );
    }
    // Every request the gateway saw carried the key of one of the charges.
    let keys: std::collections::HashSet<&str> = outbox.iter().map(|r| r.key.as_str()).collect();
    assert!(log.lines().all(|key| keys.contains(key)), "{log}");
    let _ = std::fs::remove_file(&asked);
}
