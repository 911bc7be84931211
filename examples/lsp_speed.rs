//! Times the language server in process, as an editor meets it: from an
//! edit (`didChange`) to its published diagnostics, 20 edits typed 80 ms
//! apart (a fast typist's pace; closer edits are a burst, analysed once
//! when it ends) in each of
//! three YAML machines (a written 50-state workflow, generated ones of 50
//! and 1,000 states; median and p95; "analysis" is the median of the
//! worker's part alone), then the resident memory of
//! `idemchart lsp` (the binary, over stdio) with 50 files of 1,000 states
//! open, and one file of the `regions` shape of 100,000 states opened in it:
//! the time to its first diagnostics, hovers answered while its lint runs,
//! the peak memory, and the memory after its close beside that before its
//! open.
//!
//! ```text
//! cargo build --release --bin idemchart && cargo run --release --example lsp_speed
//! cargo run --release --example lsp_speed -- --write-yaml 10000 m.yaml   # a machine for `idemchart lint`
//! cargo run --release --example lsp_speed -- --write-regions 100000 r.yaml # the `regions` shape
//! cargo run --release --example lsp_speed -- --phases m.yaml [RUNS]      # where `lint` spends its time
//! cargo run --release --example lsp_speed -- --completion                 # completion at the end of a file
//! cargo run --release --example lsp_speed -- --only 1,000                 # the machines named so, no memory test
//! cargo run --release --example lsp_speed -- --large 100000 [MS]          # the `regions` row alone: N states, a hover every MS (0: one)
//! ```
//!
//! The generated machines are `lint_speed`'s (a fixed seed), printed as YAML.

use std::time::{Duration, Instant};

// As the `idemchart` binary, so that the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// Times each phase of `idemchart lint FILE`, as the CLI runs them, `runs`
/// times; prints each phase's median.
fn phases(path: &std::path::Path, runs: usize) {
    use idemchart::syntax::{self, Syntax};
    let names = ["read", "parse", "lower", "lint", "json", "human"];
    let mut laps: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    // The peak resident memory after each phase of the first run: memory
    // first touched costs the kernel's page clearing, counted as system time.
    let mut peaks = vec![0; names.len()];
    let mut summary = String::new();
    for run in 0..runs {
        let mut clock = Instant::now();
        let mut phase = 0;
        let mut lap = || {
            laps[phase].push(clock.elapsed());
            if run == 0 {
                peaks[phase] = status_kib("self", "VmHWM:").unwrap_or(0);
            }
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
        let findings = idemchart::lint::lint_source(&machine, &file, &Default::default());
        lap();
        let report = vec![idemchart::report::FileReport::new(file, findings)];
        let json = idemchart::report::json(&report);
        lap();
        let human = idemchart::report::human_with(&report, Default::default(), false, false);
        lap();
        summary = format!(
            "{} findings, {} bytes of JSON, {} of text",
            report[0].diagnostics.len(),
            json.len(),
            human.len()
        );
    }
    for ((name, mut times), peak) in names.iter().zip(laps).zip(peaks) {
        times.sort();
        println!(
            "{name:>12} {:>8.2}ms  peak {:>4} MB",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            peak >> 10
        );
    }
    println!("{summary} (median of {runs} runs)");
}

/// A memory figure of a process (`self` or a pid) in KiB, from the
/// `/proc` status line that starts with `field` (`VmRSS:`, `VmHWM:`).
fn status_kib(process: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{process}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The time between two keystrokes of a fast typist (12 a second).
const TYPING: Duration = Duration::from_millis(80);

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

    if let [flag, states, path] = args.as_slice()
        && flag == "--write-regions"
    {
        let text = machines::regions(states.parse().expect("a number of states"));
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

    if let [flag, states, rest @ ..] = args.as_slice()
        && flag == "--large"
    {
        let every = rest
            .first()
            .map_or(100, |ms| ms.parse().expect("milliseconds"));
        large(
            states.parse().expect("a number of states"),
            Duration::from_millis(every),
        );
        return;
    }

    if args.first().is_some_and(|a| a == "--completion") {
        completion();
        return;
    }

    // `--only TEXT`: the machines whose name holds TEXT, without the memory
    // test (for profiling one of them).
    let only = match args.as_slice() {
        [flag, text] if flag == "--only" => Some(text.as_str()),
        _ => None,
    };
    let options = idemchart::lsp::Options::default();
    println!(
        "debounce {:?} (within a burst), whole analyses kept for {} KiB of text",
        options.debounce,
        options.keep_analyses_of_bytes >> 10
    );
    println!(
        "{:<28} {:>7} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "machine", "bytes", "findings", "median", "p95", "max", "analysis"
    );
    // A written workflow of 50 states with a few hazards, and generated
    // machines dense in them (`lint_speed`'s), of 50 and 1,000 states.
    let machines = [
        (
            "fulfilment.yaml (50 states)",
            include_str!("../bench/machines/fulfilment.yaml").to_string(),
        ),
        ("generated, 50 states", yaml(50)),
        ("generated, 1,000 states", yaml(1_000)),
    ];
    for (name, text) in machines {
        if only.is_some_and(|only| !name.contains(only)) {
            continue;
        }
        let mut client =
            lsp_client::Client::start_with("speed", json!({}), json!(null), options.clone());
        let uri = client.open("m.yaml", &text);
        client.diagnostics(&uri);
        let lines = text.lines().count() as u32;
        let mut times = Vec::new();
        let mut last_edit = Instant::now();
        for edit in 0..20 {
            // Edits as fast as people type: an edit closer than the debounce
            // to the one before is part of a burst, and waits for its end.
            std::thread::sleep(TYPING.saturating_sub(last_edit.elapsed()));
            last_edit = Instant::now();
            // A comment typed at the end: every edit is analysed and published
            // (nothing is kept from one analysis to the next, so a comment
            // costs what any other edit does).
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
        client.shutdown();
        // The worker's part alone (load, lint, fixes), without the protocol:
        // the rest of an edit's time is the diagnostics' conversion and JSON
        // on both sides.
        let path = std::path::Path::new("m.yaml");
        let kind = idemchart::lsp::Kind::of_path(path).expect("a machine file");
        let config = idemchart::config::Config::defaults(".".into());
        let never = std::sync::atomic::AtomicBool::new(false);
        let mut findings = 0;
        let mut alone: Vec<Duration> = (0..20)
            .map(|_| {
                let start = Instant::now();
                let analysis = idemchart::lsp::analyze(path, text.clone(), kind, &config, &never);
                let took = start.elapsed();
                findings = analysis.map_or(0, |a| a.diagnostics.len());
                took
            })
            .collect();
        alone.sort();
        println!(
            "{:<28} {:>7} {:>8} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms",
            name,
            text.len(),
            findings,
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.95).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3,
            percentile(&alone, 0.5).as_secs_f64() * 1e3,
        );
    }

    // The memory is that of `idemchart lsp` itself, a process of its own
    // that an editor drives over stdio, as editors start it.
    if only.is_none() {
        memory();
        large(100_000, Duration::from_millis(100));
    }
}

/// Times 20 completion requests at the end of a 50-state and a 1,000-state
/// file: in YAML a key in flow style (the text is read from its start to
/// find the collection), in the DSL a keyword (the text up to the cursor is
/// parsed for the grammar's expectations). Median and p95 of the request's
/// round trip, and the median analysis of the text, which no longer parses.
fn completion() {
    use lsp_types as lsp;
    println!(
        "{:>7} {:>7} {:>8} {:>10} {:>10} {:>6} {:>10}",
        "syntax", "states", "bytes", "median", "p95", "items", "analysis"
    );
    for states in [50, 1_000] {
        let dsl = machines::generate(states, 0x1de_c4a7);
        for (name, text, tail) in [
            ("m.yaml", yaml(states), "  zz: { on: { A: { target: x, "),
            ("m.chart", dsl, "st"),
        ] {
            let mut client = lsp_client::Client::start_with(
                "completion_speed",
                json!({}),
                json!(null),
                idemchart::lsp::Options::default(),
            );
            let uri = client.open(name, &text);
            client.diagnostics(&uri);
            let lines = text.lines().count() as u32;
            client.change(&uri, 1, (lines, 0), (lines, 0), tail);
            client.diagnostics(&uri);
            let mut times = Vec::new();
            let mut items = 0;
            for _ in 0..20 {
                let start = Instant::now();
                let answer = client.request::<lsp::request::Completion>(lsp::CompletionParams {
                    text_document_position: lsp::TextDocumentPositionParams {
                        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
                        position: lsp::Position::new(lines, tail.len() as u32),
                    },
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                    context: None,
                });
                times.push(start.elapsed());
                items = match answer {
                    Some(lsp::CompletionResponse::Array(list)) => list.len(),
                    _ => 0,
                };
            }
            times.sort();
            client.shutdown();
            // The analysis of the text that no longer parses: in YAML, the
            // parse error and the tree read without the broken line.
            let path = std::path::Path::new(name);
            let kind = idemchart::lsp::Kind::of_path(path).expect("a machine file");
            let config = idemchart::config::Config::defaults(".".into());
            let never = std::sync::atomic::AtomicBool::new(false);
            let broken = format!("{text}{tail}");
            let mut alone: Vec<Duration> = (0..20)
                .map(|_| {
                    let start = Instant::now();
                    idemchart::lsp::analyze(path, broken.clone(), kind, &config, &never);
                    start.elapsed()
                })
                .collect();
            alone.sort();
            println!(
                "{:>7} {:>7} {:>8} {:>8.2}ms {:>8.2}ms {:>6} {:>8.2}ms",
                name.trim_start_matches("m."),
                states,
                text.len(),
                percentile(&times, 0.5).as_secs_f64() * 1e3,
                percentile(&times, 0.95).as_secs_f64() * 1e3,
                items,
                percentile(&alone, 0.5).as_secs_f64() * 1e3,
            );
        }
    }
}

/// Starts the `idemchart` binary beside this example as `idemchart lsp`,
/// opens 50 files of 1,000 states, waits for their diagnostics, and prints
/// the server's resident memory.
fn memory() {
    use lsp_server::{Message, Notification, Request};
    use std::io::BufReader;
    let exe = std::env::current_exe().expect("this example's path");
    let binary = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("idemchart"))
        .expect("the target directory");
    let mut server = std::process::Command::new(&binary)
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{} lsp: {e} (build it with --bin idemchart)",
                binary.display()
            )
        });
    let mut to = server.stdin.take().expect("stdin");
    // The server's messages are read as they come, as an editor reads them:
    // a client that writes all its files before reading would fill both
    // pipes and wait for a server waiting for it.
    let mut from = BufReader::new(server.stdout.take().expect("stdout"));
    let (received, messages) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(Some(message)) = Message::read(&mut from) {
            if received.send(message).is_err() {
                break;
            }
        }
    });
    let send = |to: &mut std::process::ChildStdin, message: Message| {
        message.write(to).expect("write to the server");
    };
    let dir = std::env::temp_dir().join(format!("lsp-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let root: lsp_types::Uri = format!("file://{}", dir.display()).parse().expect("a uri");
    send(
        &mut to,
        Request::new(
            1.into(),
            "initialize".into(),
            json!({ "capabilities": {}, "rootUri": root }),
        )
        .into(),
    );
    loop {
        match messages.recv() {
            Ok(Message::Response(_)) => break,
            Ok(_) => {}
            Err(_) => panic!("the server ended"),
        }
    }
    send(
        &mut to,
        Notification::new("initialized".into(), json!({})).into(),
    );
    let text = yaml(1_000);
    for i in 0..50 {
        let uri = format!("file://{}/m{i}.yaml", dir.display());
        let open = json!({ "textDocument": { "uri": uri, "languageId": "yaml", "version": 1, "text": text } });
        send(
            &mut to,
            Notification::new("textDocument/didOpen".into(), open).into(),
        );
    }
    let mut published = std::collections::HashSet::new();
    while published.len() < 50 {
        match messages.recv() {
            Ok(Message::Notification(n)) if n.method == "textDocument/publishDiagnostics" => {
                published.insert(n.params["uri"].as_str().unwrap_or_default().to_string());
            }
            Ok(_) => {}
            Err(_) => panic!("the server ended"),
        }
    }
    // Idle, as a server between edits.
    std::thread::sleep(Duration::from_millis(500));
    match status_kib(&server.id().to_string(), "VmRSS:") {
        Some(kb) => println!(
            "50 files of 1000 states open: `idemchart lsp` resident {:.0} MB",
            kb as f64 / 1024.0
        ),
        None => println!("50 files of 1000 states open: no /proc to read the memory from"),
    }
    send(
        &mut to,
        Request::new(2.into(), "shutdown".into(), json!(null)).into(),
    );
    send(
        &mut to,
        Notification::new("exit".into(), json!(null)).into(),
    );
    drop(to);
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `idemchart lsp`, the binary beside this example, started as an editor
/// starts it, and its messages read as they come on a thread of their own.
struct Server {
    process: std::process::Child,
    to: std::process::ChildStdin,
    messages: std::sync::mpsc::Receiver<lsp_server::Message>,
    next_id: i32,
}

impl Server {
    fn start() -> Server {
        use lsp_server::Message;
        let exe = std::env::current_exe().expect("this example's path");
        let binary = exe
            .parent()
            .and_then(|examples| examples.parent())
            .map(|dir| dir.join("idemchart"))
            .expect("the target directory");
        let mut process = std::process::Command::new(&binary)
            .arg("lsp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{} lsp: {e} (build it with --bin idemchart)",
                    binary.display()
                )
            });
        let to = process.stdin.take().expect("stdin");
        let mut from = std::io::BufReader::new(process.stdout.take().expect("stdout"));
        let (received, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Ok(Some(message)) = Message::read(&mut from) {
                if received.send(message).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            process,
            to,
            messages,
            next_id: 0,
        };
        server.request("initialize", json!({ "capabilities": {} }));
        server.wait_for_answer(server.next_id);
        server.notify("initialized", json!({}));
        server
    }

    fn notify(&mut self, method: &str, params: serde_json::Value) {
        lsp_server::Message::from(lsp_server::Notification::new(method.into(), params))
            .write(&mut self.to)
            .expect("write to the server");
    }

    /// Sends a request; its id is returned.
    fn request(&mut self, method: &str, params: serde_json::Value) -> i32 {
        self.next_id += 1;
        let request = lsp_server::Request::new(self.next_id.into(), method.into(), params);
        lsp_server::Message::from(request)
            .write(&mut self.to)
            .expect("write to the server");
        self.next_id
    }

    /// The next message.
    fn receive(&self) -> lsp_server::Message {
        self.messages.recv().expect("the server ended")
    }

    fn wait_for_answer(&self, id: i32) -> serde_json::Value {
        loop {
            if let lsp_server::Message::Response(r) = self.receive()
                && r.id == id.into()
            {
                return r.response_result.unwrap_or_default();
            }
        }
    }

    /// A memory figure of the server in KiB (`VmRSS:`, `VmHWM:`, `RssAnon:`).
    fn kib(&self, field: &str) -> u64 {
        status_kib(&self.process.id().to_string(), field).unwrap_or(0)
    }

    /// Waits until no worker runs a job, then until the server is idle:
    /// its heap (`RssAnon:`) the same over a second, or ten seconds.
    fn settle(&mut self) {
        loop {
            let id = self.request("idemchart/status", json!(null));
            if self.wait_for_answer(id)["running"] == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut last = self.kib("RssAnon:");
        let mut same = 0;
        for _ in 0..40 {
            std::thread::sleep(Duration::from_millis(250));
            let now = self.kib("RssAnon:");
            same = if now == last { same + 1 } else { 0 };
            last = now;
            if same == 4 {
                break;
            }
        }
    }

    fn shutdown(mut self) {
        let id = self.request("shutdown", json!(null));
        self.wait_for_answer(id);
        self.notify("exit", json!(null));
        let _ = self.process.wait();
    }
}

/// Opens a `regions` machine of about `states` states in `idemchart lsp`
/// and hovers a state with the open; then hovers one state every `every`
/// until its diagnostics come (none after the first when it is zero). Prints the time to those diagnostics, the
/// hovers' latencies (the first waits for the parse; the others are
/// answered while the lint runs), the server's peak memory, and its memory
/// before the open and after the close.
fn large(states: usize, every: Duration) {
    let text = machines::regions(states);
    let mut server = Server::start();
    server.settle();
    let cold = server.kib("VmRSS:");
    let dir = std::env::temp_dir().join(format!("lsp-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    // A small machine opened and closed first reads in the code the lint
    // runs (the binary's pages, which stay resident and shared), so that
    // the figures before and after the large file are of what it held.
    let small = format!("file://{}/small.yaml", dir.display());
    server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": small, "languageId": "yaml", "version": 1, "text": machines::regions(100) } }),
    );
    loop {
        if let lsp_server::Message::Notification(n) = server.receive()
            && n.method == "textDocument/publishDiagnostics"
        {
            break;
        }
    }
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": small } }),
    );
    server.settle();
    let before = server.kib("VmRSS:");
    let heap_before = server.kib("RssAnon:");
    let uri = format!("file://{}/regions.yaml", dir.display());
    let g = |k: usize| {
        let line = text
            .lines()
            .position(|l| l == format!("  g{k}:"))
            .expect("the region");
        json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": 3 } })
    };
    let open =
        json!({ "textDocument": { "uri": uri, "languageId": "yaml", "version": 1, "text": text } });
    let start = Instant::now();
    server.notify("textDocument/didOpen", open);
    let mut asked = server.request("textDocument/hover", g(0));
    let mut sent = Instant::now();
    let mut first_hover = None;
    let mut hovers: Vec<Duration> = Vec::new();
    let mut answered = 0;
    let (published, findings) = loop {
        match server.receive() {
            lsp_server::Message::Response(r) if r.id == asked.into() => {
                let took = sent.elapsed();
                assert!(
                    r.response_result.as_ref().is_ok_and(|v| !v.is_null()),
                    "a hover on a region: {r:?}"
                );
                match first_hover {
                    None => first_hover = Some(took),
                    Some(_) => hovers.push(took),
                }
                answered += 1;
                if every.is_zero() {
                    asked = 0;
                    continue;
                }
                std::thread::sleep(every);
                asked = server.request("textDocument/hover", g(answered * 7919 % (states / 5)));
                sent = Instant::now();
            }
            lsp_server::Message::Notification(n)
                if n.method == "textDocument/publishDiagnostics" =>
            {
                let count = n.params["diagnostics"].as_array().map_or(0, Vec::len);
                break (start.elapsed(), count);
            }
            _ => {}
        }
    };
    // The hover asked last is answered after the diagnostics, from the
    // whole analysis.
    if asked != 0 {
        server.wait_for_answer(asked);
    }
    let peak = server.kib("VmHWM:");
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri } }),
    );
    server.settle();
    let after = server.kib("VmRSS:");
    let heap_after = server.kib("RssAnon:");
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    hovers.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "\nregions, {states} states ({:.1} MB of YAML) in `idemchart lsp`:",
        text.len() as f64 / 1e6
    );
    println!(
        "  first diagnostics {:.2} s after the open ({findings} sent)",
        published.as_secs_f64()
    );
    println!(
        "  hover sent with the open answered in {:.0} ms (after the parse)",
        first_hover.map_or(f64::NAN, ms)
    );
    match hovers.as_slice() {
        [] => println!("  no hover answered while the lint ran"),
        list => println!(
            "  {} hovers while the lint ran: median {:.1} ms, max {:.1} ms",
            list.len(),
            ms(percentile(list, 0.5)),
            ms(*list.last().expect("one"))
        ),
    }
    println!(
        "  resident: {} MB started, {:.1} MB after a small file was opened and closed, peak {} MB, {:.1} MB after the close ({:+.1}%)",
        cold >> 10,
        before as f64 / 1024.0,
        peak >> 10,
        after as f64 / 1024.0,
        (after as f64 / before.max(1) as f64 - 1.0) * 100.0
    );
    // What the resident figure adds to the heap is mostly the binary's own
    // code, read in from its file as the lint first runs it: shared, and
    // given back by the kernel when memory is short.
    println!(
        "  heap (RssAnon): {:.1} MB before the large file, {:.1} MB after its close",
        heap_before as f64 / 1024.0,
        heap_after as f64 / 1024.0
    );
}
