//! Times the linter on generated machines of 1,000, 10,000 and 100,000 states
//! with about five transitions per state, in nested and parallel parts.
//!
//! ```text
//! cargo run --release --example lint_speed            # 1k, 10k, 100k
//! cargo run --release --example lint_speed -- 20000   # other sizes
//! ```
//!
//! The machines are the same on every run (a fixed seed). Each is built as
//! DSL text and loaded, then linted a few times; the best time is printed,
//! with the time per state, so that growth can be compared across sizes.
//!
//! A second table times the other shape large real files have: many small
//! compound regions in a ring, each with a counter, a set of seen ids, a
//! guarded sum and a timer, several events each (`regions`). It is written
//! as YAML and timed as `idemchart lint FILE` runs it: read, linted with
//! its fixes, and the human report rendered.

use std::time::{Duration, Instant};

use idemchart::SourceFile;
use idemchart::syntax::{self, Syntax};

#[path = "support/machines.rs"]
mod machines;
use machines::{generate, regions};

/// The time this thread has spent on a CPU (Linux), which other processes
/// on a busy machine do not inflate as they do the wall clock.
fn cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// The best wall-clock and CPU times of a few runs, and the last result.
fn best_of(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, Option<Duration>, usize) {
    let mut best = Duration::MAX;
    let mut best_cpu: Option<Duration> = None;
    let mut findings = 0;
    for _ in 0..runs {
        let cpu = cpu_time();
        let start = Instant::now();
        findings = f();
        best = best.min(start.elapsed());
        if let (Some(before), Some(after)) = (cpu, cpu_time()) {
            let spent = after.saturating_sub(before);
            best_cpu = Some(best_cpu.map_or(spent, |b| b.min(spent)));
        }
    }
    (best, best_cpu, findings)
}

/// The `regions` table: each size read, linted with fixes and rendered, in
/// a process of its own (this program again, with `--regions-row N`), so
/// that each row's peak memory is its own.
fn regions_table(sizes: &[usize]) {
    println!(
        "\n{:>8} {:>10} {:>10} {:>12} {:>9} {:>10} {:>8}   regions, as `lint FILE` (YAML)",
        "states", "file", "total", "cpu/state", "findings", "peak RSS", "x file"
    );
    let program = std::env::current_exe().expect("this program's path");
    for &size in sizes {
        let status = std::process::Command::new(&program)
            .args(["--regions-row", &size.to_string()])
            .status()
            .expect("this program runs again");
        if !status.success() {
            std::process::exit(1);
        }
    }
}

/// One row of the `regions` table, with this process's peak resident size.
fn regions_row(size: usize) {
    let text = regions(size);
    let bytes = text.len();
    let file = SourceFile::new("regions.yaml", text);
    let runs = if size >= 100_000 { 1 } else { 3 };
    let mut states = 0;
    let (total, cpu, findings) = best_of(runs, || {
        let machine = match syntax::parse(&file.text, Syntax::Yaml) {
            Ok(m) => m,
            Err(errors) => {
                eprintln!("the regions machine does not load: {:?}", errors[0].message);
                std::process::exit(1);
            }
        };
        states = machine.states.len();
        // Shared, as `idemchart lint` lints it: the replays' chart holds
        // the machine rather than a copy.
        let machine = std::sync::Arc::new(machine);
        let found = idemchart::lint::lint_source_shared(&machine, &file, &Default::default(), None)
            .unwrap_or_default();
        let rendered: usize = (found.iter())
            .map(|d| idemchart::report::render(d, &file, false).len())
            .sum();
        std::hint::black_box(rendered);
        found.len()
    });
    let cpu = cpu.unwrap_or(total);
    let peak = peak_resident_bytes().unwrap_or(0);
    println!(
        "{:>8} {:>8.1}MB {:>8.0}ms {:>10.2}µs {:>9} {:>8.0}MB {:>7.0}x",
        states,
        bytes as f64 / 1e6,
        total.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e6 / states.max(1) as f64,
        findings,
        peak as f64 / 1e6,
        peak as f64 / bytes as f64
    );
}

/// This process's peak resident size (Linux), the text of the machine
/// included.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, size] = args.as_slice()
        && flag == "--regions-row"
        && let Ok(size) = size.parse()
    {
        regions_row(size);
        return;
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000, 100_000]
    } else {
        sizes
    };
    println!(
        "{:>8} {:>8} {:>10} {:>10} {:>10} {:>12} {:>9}",
        "states", "trans", "load", "lint", "lint cpu", "cpu/state", "findings"
    );
    for &size in &sizes {
        let text = generate(size, 0x1de_c4a7);
        let start = Instant::now();
        let machine = match syntax::parse(&text, Syntax::Dsl) {
            Ok(m) => m,
            Err(errors) => {
                eprintln!(
                    "the generated machine does not load: {:?}",
                    errors[0].message
                );
                std::process::exit(1);
            }
        };
        let load = start.elapsed();
        let runs = if size >= 100_000 { 2 } else { 5 };
        let (lint, cpu, findings) = best_of(runs, || idemchart::lint::lint(&machine).len());
        let cpu = cpu.unwrap_or(lint);
        println!(
            "{:>8} {:>8} {:>8.0}ms {:>8.1}ms {:>8.1}ms {:>10.2}µs {:>9}",
            machine.states.len(),
            machine.transitions.len(),
            load.as_secs_f64() * 1e3,
            lint.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e6 / machine.states.len() as f64,
            findings
        );
    }
    regions_table(&sizes);
}
