//! Times the language server in process, as an editor meets it: from an
//! edit (`didChange`) to its published diagnostics, 20 edits of a 50-state
//! and of a 1,000-state YAML machine (median and p95), then the resident
//! memory with 50 files of 1,000 states open.
//!
//! ```text
//! cargo run --release --example lsp_speed
//! cargo run --release --example lsp_speed -- --write-yaml 10000 m.yaml   # a machine for `idemchart lint`
//! cargo run --release --example lsp_speed -- --phases m.yaml [RUNS]      # where `lint` spends its time
//! ```
//!
//! The machines are `lint_speed`'s (a fixed seed), printed as YAML.

use std::time::{Duration, Instant};

// As the `idemchart` binary, so that the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use lsp_types::notification;
use serde_json::json;

#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;
#[path = "support/machines.rs"]
mod machines;

/// A generated machine of about `states` states, as YAML text.
fn yaml(states: usize) -> String {
    let dsl = machines::generate(states, 0x1de_c4a7);
    let machine = idemchart::syntax::parse(&dsl, idemchart::syntax::Syntax::Dsl)
        .unwrap_or_else(|e| panic!("the generated machine does not load: {:?}", e[0].message));
    idemchart::syntax::yaml::format(&machine)
}

/// The resident memory of this process, from /proc (Linux).
fn resident_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Times each phase of `idemchart lint FILE`, as the CLI runs them, `runs`
/// times; prints each phase's median.
fn phases(path: &std::path::Path, runs: usize) {
    use idemchart::syntax::{self, Syntax};
    let names = [
        "read",
        "parse",
        "lower",
        "fix editor",
        "lint",
        "json",
        "human",
    ];
    let mut laps: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mut summary = String::new();
    for _ in 0..runs {
        let mut clock = Instant::now();
        let mut phase = 0;
        let mut lap = || {
            laps[phase].push(clock.elapsed());
            phase += 1;
            clock = Instant::now();
        };
        let text = std::fs::read_to_string(path).expect("read the machine");
        let file = idemchart::SourceFile::new(path.display().to_string(), text);
        lap();
        let syntax = Syntax::of_path(path).expect("a YAML or DSL file");
        let tree = syntax::parse_tree(&file, syntax).expect("the machine parses");
        lap();
        let machine = syntax::lower_tree(tree, &file.text, syntax).expect("the machine loads");
        lap();
        // What the lint's fixes parse again (it makes its own, included in "lint").
        drop(idemchart::fix::editor(&file));
        lap();
        let findings = idemchart::lint::lint_source(&machine, &file, &Default::default());
        lap();
        let report = vec![idemchart::report::FileReport::new(file, findings)];
        let json = idemchart::report::json(&report);
        lap();
        let human = idemchart::report::human_with(&report, false, false);
        lap();
        summary = format!(
            "{} findings, {} bytes of JSON, {} of text",
            report[0].diagnostics.len(),
            json.len(),
            human.len()
        );
    }
    for (name, mut times) in names.iter().zip(laps) {
        times.sort();
        println!(
            "{name:>12} {:>8.2}ms",
            percentile(&times, 0.5).as_secs_f64() * 1e3
        );
    }
    println!("{summary} (median of {runs} runs)");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, states, path] = args.as_slice()
        && flag == "--write-yaml"
    {
        let states: usize = states.parse().expect("a number of states");
        let text = yaml(states);
        std::fs::write(path, &text).expect("write the machine");
        println!("wrote {path}: {} bytes", text.len());
        return;
    }

    if let [flag, path, rest @ ..] = args.as_slice()
        && flag == "--phases"
    {
        let runs = rest
            .first()
            .map_or(1, |n| n.parse().expect("a number of runs"));
        phases(std::path::Path::new(path), runs);
        return;
    }

    let options = idemchart::lsp::Options::default();
    if args.first().is_some_and(|a| a == "--memory") {
        memory(options);
        return;
    }
    println!(
        "debounce {:?} (within a burst), {} whole analyses kept",
        options.debounce, options.keep_analyses
    );
    println!(
        "{:>7} {:>7} {:>10} {:>10} {:>10}",
        "states", "bytes", "median", "p95", "max"
    );
    for states in [50, 1_000] {
        let mut client =
            lsp_client::Client::start_with("speed", json!({}), json!(null), options.clone());
        let text = yaml(states);
        let uri = client.open("m.yaml", &text);
        client.diagnostics(&uri);
        let lines = text.lines().count() as u32;
        let mut times = Vec::new();
        for edit in 0..20 {
            // A comment typed at the end: every edit is analysed and published.
            let start = Instant::now();
            client.change(
                &uri,
                edit + 1,
                (lines + edit as u32, 0),
                (lines + edit as u32, 0),
                &format!("# {edit}\n"),
            );
            client.diagnostics(&uri);
            times.push(start.elapsed());
        }
        times.sort();
        println!(
            "{:>7} {:>7} {:>8.2}ms {:>8.2}ms {:>8.2}ms",
            states,
            text.len(),
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.95).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3,
        );
        client.shutdown();
    }

    // The memory is measured in a process of its own, which has done
    // nothing else, as a server that an editor starts.
    let exe = std::env::current_exe().expect("this example's path");
    let status = std::process::Command::new(exe)
        .arg("--memory")
        .status()
        .expect("run the memory measurement");
    assert!(status.success(), "the memory measurement failed");
}

/// Opens 50 files of 1,000 states, waits for their diagnostics, and prints
/// the resident memory.
fn memory(options: idemchart::lsp::Options) {
    let before = resident_mb();
    let mut client = lsp_client::Client::start_with("memory", json!({}), json!(null), options);
    let text = yaml(1_000);
    let uris: Vec<_> = (0..50)
        .map(|i| client.open(&format!("m{i}.yaml"), &text))
        .collect();
    for uri in &uris {
        client.diagnostics(uri);
    }
    let open = resident_mb();
    if let (Some(before), Some(open)) = (before, open) {
        println!(
            "50 files of 1000 states open: {open:.0} MB resident ({:.0} MB more than at the start)",
            open - before
        );
    }
    for uri in &uris {
        client.notify::<notification::DidCloseTextDocument>(
            lsp_types::DidCloseTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
            },
        );
        client.diagnostics(uri);
    }
    client.shutdown();
}
