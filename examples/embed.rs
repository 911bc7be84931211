//! The README's "Using it from Rust", as a program: loads the README's order,
//! lints it, runs it, persists and restores it, and applies an event exactly
//! once on a SQLite store (`cargo run --example embed`). `tests/docs.rs`
//! checks that the README's Rust block is made of these lines.

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("idemchart-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR"))?;

    // A load error prints as `PATH:LINE:COL: error[CODE] NAME: MESSAGE`, one per problem.
    let machine = idemchart::load::load_path("examples/orders/order.yaml")?;
    let findings = idemchart::lint::lint(&machine); // the same findings as the CLI
    let chart = Arc::new(Chart::new(machine));
    let mut actor = Actor::new(Arc::clone(&chart));
    let step = actor.send(&Event::named("PAYMENT_CONFIRMED"));
    assert!(!step.ignored); // a repeat would be reported as ignored
    assert!(step.settled().is_ok()); // Err(Unsettled) when it ran out of microsteps

    // Persist after every event: snapshot JSON straight from and into an actor.
    let json = actor.snapshot_json();
    let actor = Actor::restore_json(Arc::clone(&chart), &json)?;

    // The store's file goes to a directory of this run's own.
    std::env::set_current_dir(&dir)?;
    // The durable runtime on a store named by a string, as `--store` takes it.
    let mut store = idemchart::store::open("sqlite:embed.db")?;
    let event = Event::new(
        "PAYMENT_CONFIRMED",
        Some(Value::from("payment-1")),
        Value::Null,
    );
    let outcome = idemchart::runtime::apply(&mut store, &chart, "order-1", &event)?;
    let again = idemchart::runtime::apply(&mut store, &chart, "order-1", &event)?;

    println!("{} findings", findings.len());
    println!("restored in {:?}", actor.configuration_paths());
    println!("first delivery: {}", outcome.kind());
    println!("second delivery: {}", again.kind());
    assert_eq!(again.kind(), "duplicate");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn the_readme_program_runs() {
    main().expect("the README's program runs");
}
