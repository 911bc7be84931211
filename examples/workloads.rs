//! The five speed workloads of `bench/xstate/README.md`, run on idemchart.
//!
//! The machines are the files in `bench/machines/`, loaded through the public
//! loader. Each workload prints one JSON line, like `bench/xstate/bench.mjs`:
//!
//! ```text
//! {"workload":"W1-ring","events":1000000,"seconds":0.01,"events_per_sec":100000000,"impl":"idemchart","idemchart":"0.1.0"}
//! ```
//!
//! ```sh
//! cargo run --release --example workloads                  # all five, full event counts
//! cargo run --release --example workloads -- --quick       # 10x fewer events
//! cargo run --release --example workloads -- W2 parallel   # by id, short or full name
//! cargo run --release --example workloads -- --write-ring  # regenerate bench/machines/ring.yaml
//! ```
//!
//! The method is bench.mjs's: a warm-up of 10 % of the events on a separate
//! fresh actor, then a fresh actor created outside the timed region; the
//! timed region covers the send loop only (for W5, everything done per
//! event); end-state assertions run after the clock stops and panic when
//! they fail. An expression error in any step fails the run too, as an
//! XState actor in its error state does.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemchart::SourceFile;
use idemchart::expr::{Event, List, Value};
use idemchart::interp::{Actor, Chart, Snapshot, Status, Step};

const RING_SIZE: usize = 1000;
const DEPTH: usize = 10;
const REGIONS: usize = 8;
/// Distinct charge ids per batch of the W4/W5 stream.
const BATCH_IDS: usize = 50;
/// The batch: 50 new ids, the same 50 again, RESET.
const BATCH_LEN: usize = 2 * BATCH_IDS + 1;

struct Workload {
    id: &'static str,
    name: &'static str,
    events: usize,
    file: &'static str,
    /// Runs `n` events on a fresh actor and returns the timed duration.
    run: fn(&Arc<Chart>, usize) -> Duration,
}

const WORKLOADS: [Workload; 5] = [
    Workload {
        id: "W1",
        name: "ring",
        events: 1_000_000,
        file: "ring.yaml",
        run: ring,
    },
    Workload {
        id: "W2",
        name: "deep",
        events: 200_000,
        file: "deep.yaml",
        run: deep,
    },
    Workload {
        id: "W3",
        name: "parallel",
        events: 500_000,
        file: "parallel.yaml",
        run: parallel,
    },
    Workload {
        id: "W4",
        name: "guarded",
        events: 1_000_000,
        file: "pedido.yaml",
        run: guarded,
    },
    Workload {
        id: "W5",
        name: "persist-roundtrip",
        events: 100_000,
        file: "pedido.yaml",
        run: persist_roundtrip,
    },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut quick = false;
    let mut filters = Vec::new();
    for arg in &args {
        match arg.as_str() {
            "--quick" => quick = true,
            "--write-ring" => {
                let path = machines_dir().join("ring.yaml");
                if let Err(error) = std::fs::write(&path, ring_yaml()) {
                    eprintln!("cannot write {}: {error}", path.display());
                    std::process::exit(2);
                }
                eprintln!("wrote {}", path.display());
                return;
            }
            option if option.starts_with("--") => {
                eprintln!("unknown option {option} (accepted: --quick, --write-ring)");
                std::process::exit(2);
            }
            filter => filters.push(filter.to_lowercase()),
        }
    }
    if let Err(message) = check_ring_file() {
        eprintln!("{message}");
        std::process::exit(2);
    }
    let chosen: Vec<&Workload> = WORKLOADS
        .iter()
        .filter(|w| filters.is_empty() || filters.iter().any(|f| w.answers_to(f)))
        .collect();
    if chosen.is_empty() {
        let known: Vec<String> = WORKLOADS.iter().map(Workload::full_name).collect();
        eprintln!(
            "no workload matches {}; known: {}",
            filters.join(" "),
            known.join(", ")
        );
        std::process::exit(2);
    }
    let scale = if quick { 10 } else { 1 };
    for workload in chosen {
        let chart = load_chart(workload.file);
        let n = workload.events / scale;
        // Warm-up on its own actor, as bench.mjs does for the JIT: here it
        // brings the code and the allocator's free lists into a steady state.
        (workload.run)(&chart, (n / 10).max(1));
        let elapsed = (workload.run)(&chart, n);
        let seconds = elapsed.as_secs_f64();
        println!(
            "{{\"workload\":\"{}\",\"events\":{n},\"seconds\":{},\"events_per_sec\":{},\"impl\":\"idemchart\",\"idemchart\":\"{}\"}}",
            workload.full_name(),
            (seconds * 1e6).round() / 1e6,
            (n as f64 / seconds).round() as u64,
            env!("CARGO_PKG_VERSION"),
        );
    }
}

impl Workload {
    fn full_name(&self) -> String {
        format!("{}-{}", self.id, self.name)
    }

    fn answers_to(&self, filter: &str) -> bool {
        [self.id.to_string(), self.name.to_string(), self.full_name()]
            .iter()
            .any(|name| name.to_lowercase() == filter)
    }
}

fn machines_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/machines")
}

fn load_chart(file: &str) -> Arc<Chart> {
    let path = machines_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let source = SourceFile::new(path.display().to_string(), text);
    match idemchart::load::load(&source) {
        Ok(machine) => Arc::new(Chart::new(machine)),
        Err(diagnostics) => panic!("{} does not load: {diagnostics:?}", path.display()),
    }
}

/// W1's machine: `s0` … `s999`, each `NEXT` to the next, `s999` back to `s0`.
fn ring_yaml() -> String {
    let mut text = String::from(
        "# W1 ring (bench/xstate/README.md): 1000 flat states in a cycle.\n\
         # Generated by `cargo run --example workloads -- --write-ring`; do not edit.\n\
         machine: ring\n\
         initial: s0\n\
         states:\n",
    );
    for i in 0..RING_SIZE {
        let _ = writeln!(
            text,
            "  s{i}: {{ on: {{ NEXT: s{} }} }}",
            (i + 1) % RING_SIZE
        );
    }
    text
}

/// The committed ring.yaml must be what `ring_yaml` writes, so that the
/// machine cannot drift from its definition.
fn check_ring_file() -> Result<(), String> {
    let path = machines_dir().join("ring.yaml");
    let committed = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if committed != ring_yaml() {
        return Err(format!(
            "{} is out of date: run `cargo run --example workloads -- --write-ring`",
            path.display()
        ));
    }
    Ok(())
}

/// Fails the run when an expression failed in the step: the counterpart of
/// XState's error state, which bench.mjs treats as fatal.
#[inline]
fn expect_clean(step: &Step) {
    assert!(step.errors.is_empty(), "step failed: {:?}", step.errors);
    assert!(
        step.unsettled.is_none(),
        "step did not settle: {:?}",
        step.unsettled
    );
}

fn int(actor: &Actor, field: &str) -> i64 {
    match actor.context_value(field) {
        Some(Value::Int(n)) => *n,
        other => panic!("context.{field} is {other:?}, not an int"),
    }
}

fn ring(chart: &Arc<Chart>, n: usize) -> Duration {
    let mut actor = Actor::new(Arc::clone(chart));
    let next = Event::named("NEXT");
    let start = Instant::now();
    for _ in 0..n {
        expect_clean(actor.send(black_box(&next)));
    }
    let elapsed = start.elapsed();
    assert_eq!(actor.configuration_paths(), [format!("s{}", n % RING_SIZE)]);
    elapsed
}

fn deep(chart: &Arc<Chart>, n: usize) -> Duration {
    let mut actor = Actor::new(Arc::clone(chart));
    assert_eq!((int(&actor, "entries"), int(&actor, "exits")), (10, 0));
    let flip = Event::named("FLIP");
    let start = Instant::now();
    for _ in 0..n {
        expect_clean(actor.send(black_box(&flip)));
    }
    let elapsed = start.elapsed();
    assert_eq!(int(&actor, "entries"), (DEPTH + DEPTH * n) as i64);
    assert_eq!(int(&actor, "exits"), (DEPTH * n) as i64);
    let leaf = if n.is_multiple_of(2) { "A" } else { "B" };
    let path: Vec<String> = (1..=DEPTH).map(|level| format!("{leaf}{level}")).collect();
    assert_eq!(actor.configuration_paths(), [path.join(".")]);
    elapsed
}

fn parallel(chart: &Arc<Chart>, n: usize) -> Duration {
    let mut actor = Actor::new(Arc::clone(chart));
    let tick = Event::named("TICK");
    let start = Instant::now();
    for _ in 0..n {
        expect_clean(actor.send(black_box(&tick)));
    }
    let elapsed = start.elapsed();
    let want = if n.is_multiple_of(2) { "off" } else { "on" };
    let expected: Vec<String> = (0..REGIONS).map(|r| format!("r{r}.{want}")).collect();
    assert_eq!(actor.configuration_paths(), expected);
    elapsed
}

/// The W4/W5 batch: COBRO_PARCIAL c0..c49 (importe 1), the same again, RESET.
fn pedido_batch() -> Vec<Event> {
    let cobro = |i: usize| {
        let id = Value::from(format!("c{i}"));
        Event::new(
            "COBRO_PARCIAL",
            Some(id.clone()),
            Value::map([("cobroId", id), ("importe", Value::Int(1))]),
        )
    };
    let mut batch: Vec<Event> = (0..BATCH_IDS).chain(0..BATCH_IDS).map(cobro).collect();
    batch.push(Event::named("RESET"));
    batch
}

/// `cobrado` after the first `n` events of the stream.
fn expected_cobrado(n: usize) -> i64 {
    (n % BATCH_LEN).min(BATCH_IDS) as i64
}

fn guarded(chart: &Arc<Chart>, n: usize) -> Duration {
    let mut actor = Actor::new(Arc::clone(chart));
    let batch = pedido_batch();
    let mut k = 0;
    let mut resets = 0;
    let start = Instant::now();
    for _ in 0..n {
        if k == BATCH_LEN - 1 {
            // Before each RESET: every distinct id counted once, repeats ignored.
            assert_eq!(int(&actor, "cobrado"), BATCH_IDS as i64, "before RESET");
            resets += 1;
        }
        expect_clean(actor.send(black_box(&batch[k])));
        k += 1;
        if k == BATCH_LEN {
            k = 0;
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(resets, n / BATCH_LEN);
    assert_eq!(int(&actor, "cobrado"), expected_cobrado(n));
    let seen = actor.context_value("cobrosVistos").and_then(Value::as_list);
    assert_eq!(seen.map(List::len), Some(expected_cobrado(n) as usize));
    elapsed
}

fn persist_roundtrip(chart: &Arc<Chart>, n: usize) -> Duration {
    let batch = pedido_batch();
    // The snapshot of a freshly started actor is the starting point.
    let mut persisted = Actor::new(Arc::clone(chart)).snapshot_json();
    let mut k = 0;
    let mut resets = 0;
    let start = Instant::now();
    // One actor, reloaded from the JSON for every event, as a host that
    // applies events to many processes of a machine can keep one.
    let mut actor = Actor::new(Arc::clone(chart));
    for _ in 0..n {
        // The snapshot goes straight from its JSON text into the actor and
        // back, as a host that persists after every event does it; nothing
        // of the actor's former state is kept.
        actor
            .reload_json(&persisted)
            .expect("the snapshot restores");
        if k == BATCH_LEN - 1 {
            assert_eq!(int(&actor, "cobrado"), BATCH_IDS as i64, "before RESET");
            resets += 1;
        }
        expect_clean(actor.send(black_box(&batch[k])));
        assert_eq!(actor.status(), Status::Active);
        persisted.clear();
        actor.write_snapshot_json(&mut persisted);
        k += 1;
        if k == BATCH_LEN {
            k = 0;
        }
    }
    let elapsed = start.elapsed();
    let last: Snapshot = serde_json::from_str(&persisted).expect("a snapshot parses");
    assert_eq!(resets, n / BATCH_LEN);
    assert_eq!(
        last.context.get("cobrado"),
        Some(&Value::Int(expected_cobrado(n)))
    );
    let seen = last.context.get("cobrosVistos").and_then(Value::as_list);
    assert_eq!(seen.map(List::len), Some(expected_cobrado(n) as usize));
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_file_is_up_to_date() {
        check_ring_file().unwrap();
    }

    /// Every workload, on a few batches' worth of events, reaches the end
    /// state its assertions expect (an odd count as well for the toggles).
    #[test]
    fn workloads_reach_their_end_states() {
        for workload in &WORKLOADS {
            let chart = load_chart(workload.file);
            for n in [1, 2, 3 * BATCH_LEN + 7, 2 * RING_SIZE + 1] {
                (workload.run)(&chart, n);
            }
        }
    }

    #[test]
    fn filters_take_ids_short_and_full_names() {
        let w2 = &WORKLOADS[1];
        assert!(w2.answers_to("w2") && w2.answers_to("deep") && w2.answers_to("w2-deep"));
        assert!(!w2.answers_to("w3"));
    }
}
