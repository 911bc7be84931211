//! Micro-benchmark of the expression evaluator on the W4 stream: the guard
//! and the assign of `pedido`'s COBRO_PARCIAL transition, compiled once.
//!
//! The stream repeats a batch of 101 events: c0..c49 (accepted), the same 50
//! again (rejected by the guard, as duplicates), then RESET, an assign of
//! `cobrado = 0, cobrosVistos = []`. Events are built once and reused.
//!
//! `cargo run --release --example expr_eval [EVENTS [ROUNDS]]` runs ROUNDS
//! rounds (5) of EVENTS events (1,000,000) and prints one JSON line with the
//! best and the median round.

use std::time::Instant;

use idemchart::expr::{CompiledAssign, Event, Layout, Value, compile, eval_guard, parse};

fn main() {
    let arg = |n: usize, default: usize| {
        std::env::args()
            .nth(n)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let total = arg(1, 1_000_000);
    let rounds = arg(2, 5).max(1);

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
    // The stream runs in rounds, continuing where the last one stopped, and
    // the best round is reported: on a shared machine the slow rounds
    // measure the neighbours.
    let mut position = 0usize;
    let mut accepted = 0usize;
    let mut round_ns: Vec<f64> = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..total {
            // Position in the 101-event batch: 0..49 first deliveries, 50..99
            // repeats, 100 the reset.
            let at = position % 101;
            position += 1;
            if at == 100 {
                assert_eq!(context[1], Value::Int(50), "cobrado before the reset");
                reset
                    .apply(&mut context, Some(&reset_event), &active)
                    .expect("the reset applies");
                continue;
            }
            let event = &events[at % 50];
            let enabled =
                eval_guard(&guard, &context, Some(event), &active).expect("the guard evaluates");
            assert_eq!(
                enabled,
                at < 50,
                "a first delivery is accepted, a repeat is not"
            );
            if enabled {
                accepted += 1;
                assign
                    .apply(&mut context, Some(event), &active)
                    .expect("the assign applies");
            }
        }
        round_ns.push(start.elapsed().as_nanos() as f64 / total as f64);
    }
    round_ns.sort_by(f64::total_cmp);
    let best = round_ns[0];
    let median = round_ns[round_ns.len() / 2];
    println!(
        "{{\"engine\":\"idemchart expr\",\"events_per_round\":{total},\"rounds\":{rounds},\"accepted\":{accepted},\"ns_per_event\":{best:.1},\"median_ns_per_event\":{median:.1},\"events_per_s\":{:.0}}}",
        1e9 / best
    );
}
