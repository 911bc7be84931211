//! A step that never settles is an error: in the interpreter (the loop's
//! states and events, and the event that started it), and in `idemchart run`
//! and `idemchart apply`. The machines are the S006 fixtures of
//! `tests/lints/` and `tests/data/runtime/loop.yaml`.

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, DEFAULT_MICROSTEP_LIMIT};
use idemchart::syntax::{self, Syntax};

use crate::support::run;

use run::idemchart;

fn chart(path: &str) -> Arc<Chart> {
    let text = std::fs::read_to_string(run::manifest_dir().join(path)).expect("fixture");
    Arc::new(Chart::new(
        syntax::parse(&text, Syntax::Yaml).expect("fixture loads"),
    ))
}

#[test]
fn the_raise_loop_names_its_state_its_event_and_the_event_that_started_it() {
    let chart = chart("tests/lints/s006-raise-loop.yaml");
    assert_eq!(chart.microstep_limit(), DEFAULT_MICROSTEP_LIMIT);
    let mut actor = Actor::new(Arc::clone(&chart));
    let step = actor.send(&Event::named("GO"));
    let unsettled = step.settled().expect_err("the step of GO loops");
    assert_eq!(unsettled.event.as_deref(), Some("GO"));
    assert_eq!(unsettled.limit, 100_000);
    assert_eq!(unsettled.paths, ["b"]);
    assert_eq!(unsettled.events, ["PING"]);
    assert_eq!(unsettled.transitions.len(), 1);
    assert!(
        step.errors.is_empty(),
        "no expression failed: {:?}",
        step.errors
    );
    assert_eq!(
        unsettled.to_string(),
        "the machine did not settle after 100000 microsteps of event `GO`: it loops through `b` on `PING`"
    );
    // The next call starts with a fresh budget and a clean step.
    assert!(actor.send(&Event::named("GO")).unsettled.is_none());
}

#[test]
fn an_always_loop_through_a_parallel_region_is_unsettled() {
    let mut actor = Actor::new(chart("tests/lints/s006-parallel-loop.yaml"));
    let unsettled = actor
        .send(&Event::named("GO"))
        .settled()
        .unwrap_err()
        .clone();
    assert_eq!(unsettled.paths, ["espera", "p", "p.luz.encendida"]);
    assert_eq!(unsettled.events, ["always"]);
    assert_eq!(unsettled.transitions.len(), 2);
}

#[test]
fn a_loop_its_counter_ends_settles() {
    let mut actor = Actor::new(chart("tests/lints/s006-bounded-loop.yaml"));
    let step = actor.send(&Event::named("GO"));
    assert!(step.settled().is_ok(), "{:?}", step.unsettled);
    assert_eq!(actor.context_value("vueltas"), Some(&Value::Int(3)));
}

#[test]
fn the_machine_sets_its_budget_and_the_host_overrides_it() {
    let chart = chart("tests/data/runtime/loop.yaml");
    assert_eq!(chart.microstep_limit(), 500);
    let mut actor = Actor::new(Arc::clone(&chart));
    assert_eq!(
        actor
            .send(&Event::named("GO"))
            .unsettled
            .as_ref()
            .unwrap()
            .limit,
        500
    );
    let machine = chart.machine().clone();
    let mut actor = Actor::new(Arc::new(Chart::new(machine).with_microstep_limit(50)));
    assert_eq!(
        actor
            .send(&Event::named("GO"))
            .unsettled
            .as_ref()
            .unwrap()
            .limit,
        50
    );
}

#[test]
fn a_timer_into_the_loop_is_unsettled_without_an_event() {
    let mut actor = Actor::new(chart("tests/data/runtime/loop.yaml"));
    assert!(actor.send(&Event::named("ESPERAR")).unsettled.is_none());
    let unsettled = actor.advance_to(5_000).settled().unwrap_err().clone();
    assert_eq!(unsettled.event, None);
    assert_eq!(unsettled.paths, ["b"]);
}

#[test]
fn a_start_that_loops_is_unsettled() {
    let machine = syntax::parse(
        "machine m\ninitial a\nstate a { always -> b }\nstate b { always -> a }",
        Syntax::Dsl,
    )
    .unwrap();
    let actor = Actor::new(Arc::new(Chart::new(machine)));
    let unsettled = actor.last_step().settled().unwrap_err();
    assert_eq!(
        (unsettled.event.clone(), unsettled.paths.clone()),
        (None, vec!["a".to_string(), "b".to_string()])
    );
}

#[test]
fn run_prints_the_error_and_exits_1() {
    let dir = std::env::temp_dir().join(format!("idemchart-unsettled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("events.jsonl");
    std::fs::write(&events, "{\"type\": \"GO\"}\n{\"type\": \"GO\"}\n").unwrap();
    let run = idemchart(&[
        "run",
        "tests/lints/s006-raise-loop.yaml",
        "--events",
        events.to_str().unwrap(),
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    // The start, then the error; the second GO is not run.
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert_eq!(
        lines[1],
        serde_json::json!({
            "event": "GO",
            "error": "unsettled",
            "message": "the machine did not settle after 100000 microsteps of event `GO`: it loops through `b` on `PING`",
            "microsteps": 100000,
            "states": ["b"],
            "events": ["PING"],
        })
    );
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: {}:1: the machine did not settle after 100000 microsteps of event `GO`: it loops through `b` on `PING`",
            events.display()
        )
    );
}

#[test]
fn apply_writes_nothing_and_a_retry_gets_the_same_error() {
    let dir =
        std::env::temp_dir().join(format!("idemchart-unsettled-apply-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let apply = |event: &str| {
        idemchart(&[
            "apply",
            "--store",
            &store,
            "--machine",
            "tests/data/runtime/loop.yaml",
            "--process",
            "p1",
            "--event",
            event,
            "--now",
            "1000",
        ])
    };
    let note = apply(r#"{"type":"NOTA","id":"n1"}"#);
    assert_eq!(note.code, Some(0), "{}", note.stderr);
    for _ in 0..2 {
        let go = apply(r#"{"type":"GO","id":"g1"}"#);
        assert_eq!(go.code, Some(1), "{}", go.stderr);
        let line: serde_json::Value = serde_json::from_str(go.stdout.trim()).unwrap();
        assert_eq!(line["outcome"], "unsettled");
        assert_eq!(line["states"], serde_json::json!(["b"]));
        assert_eq!(
            go.stderr.trim(),
            "error: process `p1`: the machine did not settle after 500 microsteps of event `GO`: it loops through `b` on `PING`"
        );
    }
    let inspect = idemchart(&["inspect", "--store", &store, "--process", "p1"]);
    let state: serde_json::Value = serde_json::from_str(inspect.stdout.trim()).unwrap();
    assert_eq!(state["revision"], 1, "{state}");
    assert_eq!(state["configuration"], serde_json::json!(["a"]), "{state}");
    let outbox = idemchart(&["outbox", "--store", &store]);
    assert_eq!(
        outbox.stdout.lines().count(),
        1,
        "only NOTA's effect: {}",
        outbox.stdout
    );
}
