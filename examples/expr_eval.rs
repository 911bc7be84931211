//! Micro-benchmark of the expression evaluator on the W4 stream: the guard
//! and the assign of `pedido`'s COBRO_PARCIAL transition, compiled once.
//!
//! The stream repeats a batch of 101 events: c0..c49 (accepted), the same 50
//! again (rejected by the guard, as duplicates), then RESET, an assign of
//! `cobrado = 0, cobrosVistos = []`. Events are built once and reused.
//!
//! `cargo run --release --example expr_eval [EVENTS]` prints one JSON line.

use std::time::Instant;

use idemchart::expr::{CompiledAssign, Event, Layout, Value, compile, eval_guard, parse};

fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);

    let layout = Layout::new(["total", "cobrado", "cobrosVistos"]);
    let no_states = |_: &str| None;
    let parsed = |text: &str| parse(text, 0).expect("the benchmark's expressions parse");
    let guard = compile(
        &parsed("!(event.cobroId in context.cobrosVistos)"),
        &layout,
        &no_states,
    );
    let vistos = parsed("context.cobrosVistos + [event.cobroId]");
    let cobrado = parsed("context.cobrado + event.importe");
    let assign = CompiledAssign::new(
        [("cobrosVistos", &vistos), ("cobrado", &cobrado)],
        &layout,
        &no_states,
    );
    let (zero, empty) = (parsed("0"), parsed("[]"));
    let reset = CompiledAssign::new(
        [("cobrado", &zero), ("cobrosVistos", &empty)],
        &layout,
        &no_states,
    );

    let events: Vec<Event> = (0..50)
        .map(|i| {
            let id = Value::from(format!("c{i}"));
            Event::new(
                "COBRO_PARCIAL",
                Some(id.clone()),
                Value::map([("cobroId", id), ("importe", Value::Int(1))]),
            )
        })
        .collect();
    let reset_event = Event::new("RESET", Some(Value::from("r")), Value::Null);

    let mut context = vec![Value::Int(100), Value::Int(0), Value::list(Vec::new())];
    let active = |_: u32| false;
    let mut done = 0usize;
    let mut accepted = 0usize;
    let start = Instant::now();
    'stream: loop {
        for pass in 0..2 {
            for event in &events {
                if done == total {
                    break 'stream;
                }
                done += 1;
                let enabled = eval_guard(&guard, &context, Some(event), &active)
                    .expect("the guard evaluates");
                assert_eq!(
                    enabled,
                    pass == 0,
                    "a first delivery is accepted, a repeat is not"
                );
                if enabled {
                    accepted += 1;
                    assign
                        .apply(&mut context, Some(event), &active)
                        .expect("the assign applies");
                }
            }
        }
        if done == total {
            break;
        }
        done += 1;
        assert_eq!(context[1], Value::Int(50), "cobrado before the reset");
        reset
            .apply(&mut context, Some(&reset_event), &active)
            .expect("the reset applies");
    }
    let elapsed = start.elapsed();
    let ns_per_event = elapsed.as_nanos() as f64 / done as f64;
    println!(
        "{{\"engine\":\"idemchart expr\",\"events\":{done},\"accepted\":{accepted},\"ns_per_event\":{ns_per_event:.1},\"events_per_s\":{:.0}}}",
        1e9 / ns_per_event
    );
}
