//! The snapshot JSON codec (`Actor::restore_json`) against the serde route
//! (`serde_json` into `Snapshot`, then `Actor::restore`) on one fixed chart:
//! both accept the same texts, give equal snapshots, and refuse the same
//! snapshots for the same reason. The chart is the one `tests/snapshot_json.rs`
//! uses, with nesting, deep history and timers.
#![no_main]

use std::sync::{Arc, LazyLock};

use idemchart::interp::{Actor, Chart, RestoreError, Snapshot, SnapshotJsonError};
use idemchart::syntax::{Syntax, parse};
use libfuzzer_sys::fuzz_target;

const MACHINE: &str = r#"
machine: m
version: 3
context: { n: 0, items: [], label: "x" }
initial: a
states:
  a:
    initial: a1
    on:
      GO: b
      TICK: { actions: [ { assign: { n: "context.n + 1" } } ] }
    states:
      a1:
        on: { GO: a2 }
        after: { 5s: a2 }
      a2:
        entry:
          - { send: TICK, data: { k: "context.n" }, delay: 1s, id: t1 }
      h: { type: history, history: deep }
  b:
    on: { GO: a.h }
"#;

static CHART: LazyLock<Arc<Chart>> = LazyLock::new(|| {
    Arc::new(Chart::new(
        parse(MACHINE, Syntax::Yaml).expect("the fuzzed chart loads"),
    ))
});

#[derive(Debug)]
enum Outcome {
    Restored(Snapshot),
    Json,
    Restore(RestoreError),
}

fn through_serde(chart: &Arc<Chart>, text: &str) -> Outcome {
    match serde_json::from_str::<Snapshot>(text) {
        Err(_) => Outcome::Json,
        Ok(snapshot) => match Actor::restore(Arc::clone(chart), &snapshot) {
            Ok(actor) => Outcome::Restored(actor.snapshot()),
            Err(error) => Outcome::Restore(error),
        },
    }
}

fn through_codec(chart: &Arc<Chart>, text: &str) -> Outcome {
    match Actor::restore_json(Arc::clone(chart), text) {
        Ok(actor) => Outcome::Restored(actor.snapshot()),
        Err(SnapshotJsonError::Syntax { .. }) => Outcome::Json,
        Err(SnapshotJsonError::Restore(error)) => Outcome::Restore(error),
    }
}

/// Whether two JSON values are equal, doubles within a few units in the last
/// place: serde_json (without `float_roundtrip`) may read a long or
/// far-exponent double one unit off, where the codec reads it exactly.
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x - y).abs() <= 1e-14 * x.abs().max(y.abs())
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, a), (l, b))| k == l && close(a, b))
        }
        _ => a == b,
    }
}

fuzz_target!(|text: &str| {
    let chart = &*CHART;
    let serde = through_serde(chart, text);
    let codec = through_codec(chart, text);
    match (&serde, &codec) {
        (Outcome::Restored(a), Outcome::Restored(b)) => {
            let (a, b) = (
                serde_json::to_value(a).unwrap(),
                serde_json::to_value(b).unwrap(),
            );
            assert!(close(&a, &b), "{text}\nserde: {a}\ncodec: {b}");
        }
        (Outcome::Json, Outcome::Json) => {}
        (Outcome::Restore(a), Outcome::Restore(b)) => assert_eq!(a, b, "{text}"),
        _ => panic!("{text}\nserde: {serde:?}\ncodec: {codec:?}"),
    }
});
