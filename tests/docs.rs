//! The command blocks of `README.md` and `docs/*.md` run as written.
//!
//! A block fenced as `sh` or `console` runs in a copy of the repository of
//! its page's own, in one shell (so a `cd` or a server started with `&`
//! carries over to the next command), with the built `idemchart` first on
//! the `PATH`, `cargo run --release --` read as `idemchart`, and the port
//! 8080 replaced by a free one. In a block whose lines start with `$ `,
//! those lines are the commands and the lines below each are what it prints:
//! `...` or `…` stands for any text within a line, and alone on a line for
//! any number of lines; what a command started with `&` prints is not
//! compared. A command exits 0 unless what it prints shows an
//! error. A block of any kind right after `<!-- output of: COMMAND -->` is
//! what that command prints (a diagram the page draws, say). A block right
//! after `<!-- not run: REASON -->` is not run, and a
//! block whose commands need a program this machine lacks is skipped with a
//! message; every other block runs.

use crate::support::run as support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::manifest_dir;

/// One command of a block, with what the page says it prints (`None` in a
/// block that shows no output).
#[derive(Debug)]
struct Step {
    command: String,
    expected: Option<Vec<String>>,
}

/// One runnable block of a page.
#[derive(Debug)]
struct Block {
    /// The line of the opening fence, 1-based.
    line: usize,
    steps: Vec<Step>,
}

/// The runnable blocks of a markdown page, and the blocks marked as not run
/// with their reasons (each must give one).
fn blocks(page: &str) -> (Vec<Block>, Vec<(usize, String)>) {
    let lines: Vec<&str> = page.lines().collect();
    let mut runnable = Vec::new();
    let mut not_run = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let body: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.trim_start() != "```")
            .copied()
            .collect();
        i += body.len() + 2;
        let comment = |prefix: &str| {
            lines[..start]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| l.trim().strip_prefix(prefix))
                .map(|rest| rest.trim_end_matches("-->").trim().to_string())
        };
        if let Some(command) = comment("<!-- output of:") {
            runnable.push(Block {
                line: start + 1,
                steps: vec![Step {
                    command,
                    expected: Some(body.iter().map(|l| l.trim_end().to_string()).collect()),
                }],
            });
            continue;
        }
        if !matches!(info.trim(), "sh" | "console") {
            continue;
        }
        if let Some(reason) = comment("<!-- not run:") {
            not_run.push((start + 1, reason));
            continue;
        }
        runnable.push(Block {
            line: start + 1,
            steps: steps(&body),
        });
    }
    (runnable, not_run)
}

/// The commands of a block's lines, each joined across its `\` line ends.
fn steps(body: &[&str]) -> Vec<Step> {
    let transcript = body.iter().any(|l| l.starts_with("$ "));
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = body.iter();
    while let Some(line) = lines.next() {
        let command_line = if transcript {
            line.strip_prefix("$ ")
        } else {
            Some(*line).filter(|l| !l.trim().is_empty())
        };
        let Some(first) = command_line else {
            if let Some(Some(expected)) = steps.last_mut().map(|s| s.expected.as_mut()) {
                expected.push(line.trim_end().to_string());
            }
            continue;
        };
        let mut command = first.to_string();
        while command.ends_with('\\') {
            command.pop();
            match lines.next() {
                Some(next) => command.push_str(next.trim_start()),
                None => break,
            }
        }
        steps.push(Step {
            command,
            expected: transcript.then(Vec::new),
        });
    }
    steps
}

/// Whether an output line matches a line of the page, where `...` and `…`
/// stand for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let pattern = pattern.trim_end();
    let line = line.trim_end();
    let pieces: Vec<&str> = pattern.split("...").flat_map(|p| p.split('…')).collect();
    if pieces.len() == 1 {
        return pattern == line;
    }
    let (first, rest) = pieces.split_first().expect("one piece at least");
    let (last, middle) = rest.split_last().expect("two pieces at least");
    let Some(mut left) = line.strip_prefix(first) else {
        return false;
    };
    for piece in middle {
        match left.find(piece) {
            Some(at) => left = &left[at + piece.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

fn is_elision(pattern: &str) -> bool {
    matches!(pattern.trim(), "..." | "…")
}

/// Whether the output's lines are the page's, elisions standing for any
/// number of lines.
fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    let (Some(first), rest) = (expected.first(), expected.get(1..).unwrap_or(&[])) else {
        return actual.is_empty();
    };
    if is_elision(first) {
        return (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]));
    }
    match actual.split_first() {
        Some((line, others)) => line_matches(first, line) && output_matches(rest, others),
        None => false,
    }
}

/// Whether the page shows the command failing.
fn shows_an_error(expected: &[String]) -> bool {
    expected.iter().any(|l| {
        let l = l.trim_start();
        l.starts_with("error[") || l.starts_with("error:") || l.contains(": error[")
    })
}

/// The programs a command line starts, as far as a page's commands need
/// telling: the first word of each `|`, `&&` and `;` part.
fn programs(command: &str) -> Vec<String> {
    command
        .split(['|', ';', '&'])
        .filter_map(|part| {
            part.split_whitespace()
                .find(|word| !word.contains('='))
                .filter(|word| !word.starts_with(|c: char| c.is_ascii_digit() || c == '>'))
                .map(str::to_string)
        })
        .collect()
}

const BUILTINS: &[&str] = &[
    "cd", "echo", "export", "printf", "test", "[", "true", "false", "wait", "kill", "sleep",
];

/// The first program of `block` that is not on the `PATH`.
fn missing_program(block: &Block, path: &str) -> Option<String> {
    block
        .steps
        .iter()
        .flat_map(|s| programs(&s.command))
        .find(|program| {
            !BUILTINS.contains(&program.as_str())
                && !program.contains('/')
                && !std::env::split_paths(path).any(|dir| dir.join(program).is_file())
        })
}

/// Copies the repository, without what builds and package installs wrote.
fn copy_repository(to: &Path) {
    const LEFT_OUT: &[&str] = &[
        "target",
        ".git",
        "fuzz/target",
        "tests/xstate/node_modules",
        "editors/vscode/node_modules",
    ];
    fn copy(from: &Path, to: &Path, relative: &Path) {
        std::fs::create_dir_all(to).expect("a directory of the copy");
        for entry in std::fs::read_dir(from).expect("a directory of the repository") {
            let entry = entry.expect("an entry");
            let name = relative.join(entry.file_name());
            if LEFT_OUT.iter().any(|left| name == Path::new(left)) {
                continue;
            }
            let target = to.join(entry.file_name());
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() {
                copy(&entry.path(), &target, &name);
            } else if kind.is_file() {
                std::fs::copy(entry.path(), &target).expect("a file of the copy");
            }
        }
    }
    copy(manifest_dir(), to, Path::new(""));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The shell form of a page's command: the built binary for `cargo run`,
/// the test's own port for 8080.
fn as_run(command: &str, port: u16) -> String {
    command
        .replace("cargo run --release --", "idemchart")
        .replace("8080", &port.to_string())
}

/// Runs the blocks of one page and returns what went wrong, one message a
/// command.
fn run_page(page_path: &str) -> Vec<String> {
    let page = std::fs::read_to_string(manifest_dir().join(page_path)).expect("the page");
    let (runnable, not_run) = blocks(&page);
    let mut problems = Vec::new();
    for (line, reason) in &not_run {
        if reason.is_empty() {
            problems.push(format!("{page_path}:{line}: a block not run must say why"));
        }
    }
    if runnable.is_empty() {
        return problems;
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_idemchart")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("docs")
        .join(page_path.replace('/', "_"));
    if base.exists() {
        std::fs::remove_dir_all(&base).expect("the old copy is removable");
    }
    let sandbox = base.join("repository");
    let out = base.join("out");
    copy_repository(&sandbox);
    std::fs::create_dir_all(&out).expect("the output directory");

    let port = free_port();
    let mut script = String::from("set -m\n");
    let mut ran = Vec::new();
    for block in &runnable {
        if let Some(program) = missing_program(block, &path) {
            eprintln!(
                "docs: {page_path}:{}: not run, `{program}` is not installed",
                block.line
            );
            continue;
        }
        for step in &block.steps {
            let n = ran.len();
            let command = as_run(&step.command, port);
            let output = out.join(n.to_string());
            match command.trim_end().strip_suffix('&') {
                Some(background) => writeln!(
                    script,
                    "{{ {background} ; }} >'{o}' 2>&1 </dev/null &\necho $! >>'{pids}'\n\
                     for _ in $(seq 200); do [ -s '{o}' ] && break; sleep 0.1; done\necho 0 >'{o}.rc'",
                    o = output.display(),
                    pids = out.join("pids").display(),
                ),
                None => writeln!(
                    script,
                    "{{ {command}\n}} >'{o}' 2>&1 </dev/null\necho $? >'{o}.rc'",
                    o = output.display(),
                ),
            }
            .unwrap();
            ran.push((block.line, step));
        }
    }
    writeln!(
        script,
        "[ -f '{pids}' ] && for p in $(cat '{pids}'); do kill -- -$p 2>/dev/null; done\nwait",
        pids = out.join("pids").display()
    )
    .unwrap();

    let mut shell = Command::new("bash")
        .args(["-c", &script])
        .current_dir(&sandbox)
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bash runs");
    let started = Instant::now();
    while shell.try_wait().expect("the shell's status").is_none() {
        if started.elapsed() > Duration::from_secs(300) {
            let _ = shell.kill();
            problems.push(format!(
                "{page_path}: its commands ran for more than 5 minutes"
            ));
            return problems;
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    for (n, (line, step)) in ran.iter().enumerate() {
        let output_path = out.join(n.to_string());
        let output = std::fs::read_to_string(&output_path).unwrap_or_default();
        let code = std::fs::read_to_string(output_path.with_extension("rc"))
            .ok()
            .and_then(|c| c.trim().parse::<i32>().ok());
        let place = format!("{page_path}:{line}: `{}`", step.command);
        if output.contains("panicked") {
            problems.push(format!("{place} panicked:\n{output}"));
            continue;
        }
        let expects_error = step.expected.as_deref().is_some_and(shows_an_error);
        match code {
            None => problems.push(format!("{place} did not run")),
            Some(0) if expects_error => {
                problems.push(format!("{place} exited 0; the page shows an error"))
            }
            Some(c) if c != 0 && !expects_error => {
                problems.push(format!("{place} exited {c}:\n{output}"))
            }
            _ => {}
        }
        // What a server started with `&` prints goes on while the others run.
        let background = step.command.trim_end().ends_with('&');
        if let Some(expected) = step.expected.as_ref().filter(|_| !background) {
            let actual: Vec<&str> = output.lines().collect();
            if !output_matches(expected, &actual) {
                problems.push(format!(
                    "{place} printed\n{output}\nwhere the page shows\n{}",
                    expected.join("\n")
                ));
            }
        }
    }
    problems
}

/// The pages whose blocks run: the README and every page of `docs/`.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(
        docs.iter()
            .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy())),
    );
    pages
}

#[test]
fn every_command_block_of_the_readme_and_the_docs_runs_as_written() {
    let problems: Vec<String> = pages().iter().flat_map(|p| run_page(p)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The README's Rust block is `examples/embed.rs` (whose test runs it), its
/// lines in the program's order; whitespace aside, as rustfmt may break a
/// long line of the README into several.
#[test]
fn the_readme_rust_block_is_the_embed_example() {
    fn squeezed(text: &str) -> String {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        text.replace(",)", ")")
    }
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).expect("README.md");
    let block: Vec<&str> = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the README has a Rust block")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let example =
        std::fs::read_to_string(manifest_dir().join("examples/embed.rs")).expect("embed.rs");
    let program = squeezed(&example);
    let mut at = 0;
    for line in block {
        match program[at..].find(&squeezed(line)) {
            Some(found) => at += found + squeezed(line).len(),
            None => panic!("the README's Rust line `{line}` is not in examples/embed.rs, in order"),
        }
    }
}

#[test]
fn elisions_stand_for_text_and_for_lines() {
    assert!(line_matches(
        "{\"outcome\":\"applied\",...}",
        "{\"outcome\":\"applied\",\"revision\":1}"
    ));
    assert!(line_matches("a … c", "a b c"));
    assert!(!line_matches("a … c", "a b d"));
    assert!(!line_matches("exact", "exactly"));
    let expected: Vec<String> = ["first", "...", "last"].map(String::from).to_vec();
    assert!(output_matches(&expected, &["first", "x", "y", "last"]));
    assert!(output_matches(&expected, &["first", "last"]));
    assert!(!output_matches(&expected, &["first", "x"]));
    assert!(!output_matches(&expected[..1], &["first", "more"]));
}

#[test]
fn a_transcript_holds_commands_and_what_they_print() {
    let page = "text\n\n```console\n$ idemchart a \\\n    --b\nout 1\nout 2\n$ idemchart c\n```\n\n\
                <!-- not run: needs VS Code -->\n```sh\ncode --install-extension x\n```\n";
    let (runnable, not_run) = blocks(page);
    assert_eq!(not_run, vec![(12, "needs VS Code".to_string())]);
    assert_eq!(runnable.len(), 1);
    let steps = &runnable[0].steps;
    assert_eq!(steps[0].command, "idemchart a --b");
    assert_eq!(
        steps[0].expected.as_deref(),
        Some(&["out 1".to_string(), "out 2".to_string()][..])
    );
    assert_eq!(steps[1].command, "idemchart c");
    assert_eq!(steps[1].expected.as_deref(), Some(&[][..]));

    let page = "<!-- output of: idemchart graph x -->\n```mermaid\nstateDiagram-v2\n```\n";
    let (runnable, _) = blocks(page);
    assert_eq!(runnable[0].steps[0].command, "idemchart graph x");
    assert_eq!(
        runnable[0].steps[0].expected.as_deref(),
        Some(&["stateDiagram-v2".to_string()][..])
    );
}
