//! `idemchart lint` and `idemchart explain` as a user runs them: the built
//! binary, its output in the four formats, its exit codes and its
//! configuration file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// A machine that re-accepts its event: I001 at warn level.
const REACCEPTS: &str = "tests/data/hazards/partial-payment-accepted-again.yaml";
/// A machine whose dedup window is too short: I007 at error level.
const SHORT_RETENTION: &str = "tests/data/hazards/short-retention.yaml";
/// A machine the corpus says nothing may be reported for.
const CLEAN: &str = "tests/data/hazards/terminal-protection.yaml";
/// Files that do not load.
const MALFORMED: &str = "tests/data/lint/malformed.yaml";
const UNCLOSED: &str = "tests/data/lint/unclosed.yaml";
/// A configuration that sets nothing, so that an idemchart.toml above the
/// checkout cannot change what these tests see.
const DEFAULTS: &str = "tests/data/lint/defaults.toml";

/// Runs the binary in `dir` with `args`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary runs")
}

/// Runs `idemchart lint` from the repository root with the empty
/// configuration.
fn lint(args: &[&str]) -> Output {
    let mut all = vec!["lint", "--config", DEFAULTS];
    all.extend(args);
    run_in(Path::new(MANIFEST_DIR), &all)
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("the binary exits with a code")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).expect("stdout is one JSON document")
}

/// `(code, severity, file)` of each diagnostic in a JSON report.
fn findings(report: &Value) -> Vec<(String, String, String)> {
    report["diagnostics"]
        .as_array()
        .expect("a diagnostics array")
        .iter()
        .map(|d| {
            let text = |key: &str| d[key].as_str().expect("a string").to_string();
            (text("code"), text("severity"), text("file"))
        })
        .collect()
}

fn severities_of(report: &Value, code: &str) -> Vec<String> {
    findings(report)
        .into_iter()
        .filter(|(c, ..)| c == code)
        .map(|(_, severity, _)| severity)
        .collect()
}

/// Asserts that `code` was found, every finding at `severity`.
fn assert_all_at(report: &Value, code: &str, severity: &str) {
    let severities = severities_of(report, code);
    assert!(
        !severities.is_empty(),
        "{code} was not reported: {report:#}"
    );
    assert!(
        severities.iter().all(|s| s == severity),
        "{code} should be at {severity}: {severities:?}"
    );
}

const SNAPSHOT_FILES: [&str; 4] = [REACCEPTS, SHORT_RETENTION, MALFORMED, UNCLOSED];

#[test]
fn human_format_snapshot() {
    let output = lint(&SNAPSHOT_FILES);
    assert_eq!(code(&output), 1, "I007 and the load errors are errors");
    assert_eq!(
        stderr(&output),
        "",
        "the human report goes to standard output, as ruff's does"
    );
    let text = stdout(&output);
    assert!(!text.contains('\u{1b}'), "no colour off a terminal");
    // The summary, then the count of fixable findings.
    let lines: Vec<&str> = text.lines().rev().take(2).collect();
    assert!(
        lines[1].starts_with("linted 4 machines in 4 files: "),
        "{text}"
    );
    assert!(
        lines[0].starts_with("[*] 1 fixable with the `--fix` option"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn json_format_snapshot() {
    let output = lint(&[&["--format", "json"][..], &SNAPSHOT_FILES].concat());
    assert_eq!(code(&output), 1);
    let report = json(&output);
    assert_eq!(report["summary"]["files"], 4);
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn sarif_format_snapshot_is_valid_sarif() {
    let output = lint(&[&["--format", "sarif"][..], &SNAPSHOT_FILES].concat());
    assert_eq!(code(&output), 1);
    let text = stdout(&output);
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(MANIFEST_DIR).join("tests/data/sarif-schema-2.1.0.json"),
        )
        .expect("the vendored schema is readable"),
    )
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let log: Value = serde_json::from_str(&text).expect("the log is JSON");
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    let witness_steps = log["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["ruleId"] == "I001")
        .expect("the I001 finding")["codeFlows"][0]["threadFlows"][0]["locations"]
        .as_array()
        .expect("witness steps")
        .len();
    assert!(
        witness_steps >= 2,
        "the witness has the delivery and its repeat"
    );
    // The rules carry the lints' documentation, pinned by the unit snapshot
    // in `report::sarif`; here each rule is kept by id, name and level so that
    // a wording change in a lint's doc does not churn this snapshot.
    let mut pinned = log;
    let driver = &mut pinned["runs"][0]["tool"]["driver"];
    driver["semanticVersion"] = "[version]".into();
    for rule in driver["rules"].as_array_mut().expect("rules") {
        let has_descriptions = ["shortDescription", "fullDescription", "help"]
            .iter()
            .all(|key| rule[*key]["text"].as_str().is_some_and(|t| !t.is_empty()));
        let kept = serde_json::json!({
            "id": rule["id"],
            "name": rule["name"],
            "defaultConfiguration": rule["defaultConfiguration"],
            "has_descriptions": has_descriptions,
        });
        *rule = kept;
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&pinned).expect("JSON"));
}

#[test]
fn github_format_snapshot() {
    let output = lint(&[&["--format", "github"][..], &SNAPSHOT_FILES].concat());
    assert_eq!(code(&output), 1);
    let text = stdout(&output);
    assert!(
        text.lines()
            .all(|line| line.starts_with("::error ") || line.starts_with("::warning "))
    );
    insta::assert_snapshot!(text);
}

/// `--statistics` prints only the findings counted by code, on standard
/// output, and exits as the run without it does.
#[test]
fn statistics_table_snapshot() {
    let output = lint(&[&["--statistics"][..], &SNAPSHOT_FILES].concat());
    assert_eq!(
        code(&output),
        1,
        "the exit status of the run without the flag"
    );
    assert_eq!(stderr(&output), "");
    insta::assert_snapshot!(stdout(&output));

    let warnings_only = lint(&["--statistics", REACCEPTS]);
    assert_eq!(code(&warnings_only), 0);
    assert_eq!(
        stdout(&warnings_only),
        "count  code  name                  confirmed  not shown  undecided\n    2  I001  self-accepting-event          2          0          0\n"
    );
    let clean = lint(&["--statistics", CLEAN]);
    assert_eq!((code(&clean), stdout(&clean)), (0, String::new()));
}

#[test]
fn statistics_json_snapshot() {
    let output = lint(&[&["--statistics", "--format", "json"][..], &SNAPSHOT_FILES].concat());
    assert_eq!(code(&output), 1);
    let report = json(&output);
    let counted: u64 = report["statistics"]
        .as_array()
        .expect("a statistics array")
        .iter()
        .map(|row| row["count"].as_u64().expect("a count"))
        .sum();
    let summary = &report["summary"];
    assert_eq!(
        Some(counted),
        summary["errors"]
            .as_u64()
            .zip(summary["warnings"].as_u64())
            .map(|(e, w)| e + w),
        "every diagnostic is counted once"
    );
    insta::assert_snapshot!(stdout(&output));

    let output = lint(&[
        "--statistics",
        "--format",
        "json",
        "--deny",
        "warnings",
        REACCEPTS,
    ]);
    assert_eq!(code(&output), 1, "levels apply as without the flag");
}

#[test]
fn statistics_with_sarif_or_github_is_a_usage_error() {
    for format in ["sarif", "github"] {
        let output = lint(&["--statistics", "--format", format, REACCEPTS]);
        assert_eq!(code(&output), 2, "{format}");
        assert_eq!(stdout(&output), "", "{format}");
        assert!(
            stderr(&output).contains("use it with `--format human` or `--format json`"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn clean_machines_exit_zero() {
    let output = lint(&[CLEAN]);
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    assert_eq!(
        stdout(&output),
        "linted 1 machine in 1 file: 0 errors, 0 warnings\n"
    );
}

#[test]
fn warnings_alone_exit_zero_and_deny_warnings_makes_them_fail() {
    let output = lint(&["--format", "json", REACCEPTS]);
    assert_eq!(code(&output), 0);
    assert_all_at(&json(&output), "I001", "warning");

    let output = lint(&["--format", "json", "--deny", "warnings", REACCEPTS]);
    assert_eq!(code(&output), 1);
    let report = json(&output);
    assert_all_at(&report, "I001", "error");
    assert_eq!(report["summary"]["warnings"], 0);
}

#[test]
fn errors_exit_one_unless_allowed() {
    let output = lint(&["--format", "json", SHORT_RETENTION]);
    assert_eq!(code(&output), 1);
    assert_all_at(&json(&output), "I007", "error");

    let output = lint(&[
        "--format",
        "json",
        "--allow",
        "retention-below-retry",
        SHORT_RETENTION,
    ]);
    assert!(severities_of(&json(&output), "I007").is_empty());
    let errors = json(&output)["summary"]["errors"]
        .as_u64()
        .expect("a count");
    assert_eq!(code(&output), if errors == 0 { 0 } else { 1 });

    let output = lint(&["--format", "json", "--warn", "I007", SHORT_RETENTION]);
    assert_all_at(&json(&output), "I007", "warning");
}

#[test]
fn later_flags_win_over_earlier_ones_of_any_kind() {
    let output = lint(&[
        "--format",
        "json",
        "--allow",
        "I001",
        "--deny",
        "self-accepting-event",
        REACCEPTS,
    ]);
    assert_all_at(&json(&output), "I001", "error");
    assert_eq!(code(&output), 1);

    let output = lint(&[
        "--format", "json", "--deny", "I001", "--allow", "I001", REACCEPTS,
    ]);
    assert!(severities_of(&json(&output), "I001").is_empty());
}

#[test]
fn load_errors_are_errors_in_every_format() {
    for format in ["human", "json", "sarif", "github"] {
        let output = lint(&["--format", format, MALFORMED]);
        assert_eq!(code(&output), 1, "{format}");
    }
    let output = lint(&["--format", "json", "--deny", "warnings", MALFORMED]);
    let report = json(&output);
    assert_eq!(
        findings(&report),
        [(
            "S001".to_string(),
            "error".to_string(),
            MALFORMED.to_string()
        )]
    );
    assert_eq!(report["diagnostics"][0]["line"], 9);
    assert_eq!(report["diagnostics"][0]["column"], 24);
}

#[test]
fn usage_errors_exit_two() {
    let output = lint(&["--deny", "self-acepting-event", REACCEPTS]);
    assert_eq!(code(&output), 2);
    assert_eq!(
        stderr(&output),
        "error: unknown lint `self-acepting-event`; did you mean `self-accepting-event`?\n"
    );

    let output = lint(&["--allow", "warnigns", REACCEPTS]);
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("did you mean `warnings`?"),
        "{}",
        stderr(&output)
    );

    let output = lint(&["--allow", "unknown-target", MALFORMED]);
    assert_eq!(code(&output), 2, "a load error's level cannot be changed");
    assert!(
        stderr(&output).contains("cannot be changed"),
        "{}",
        stderr(&output)
    );

    let output = lint(&["tests/data/lint/no-such-machine.yaml"]);
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).starts_with("error: cannot read tests/data/lint/no-such-machine.yaml"));

    let output = lint(&["--format", "xml", REACCEPTS]);
    assert_eq!(
        code(&output),
        2,
        "clap reports a bad value as a usage error"
    );

    let output = run_in(
        Path::new(MANIFEST_DIR),
        &["lint", "--config", "tests/data/lint/none.toml", REACCEPTS],
    );
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).starts_with("error: cannot read tests/data/lint/none.toml"));
}

#[test]
fn explain_prints_the_documentation() {
    let by_code = run_in(Path::new(MANIFEST_DIR), &["explain", "I001"]);
    assert_eq!(code(&by_code), 0);
    let text = stdout(&by_code);
    assert!(
        text.starts_with("I001 self-accepting-event (warn by default)\n\n"),
        "{text}"
    );
    assert!(text.contains("What it does"), "{text}");
    let by_name = run_in(
        Path::new(MANIFEST_DIR),
        &["explain", "self-accepting-event"],
    );
    assert_eq!(stdout(&by_name), text);

    let unknown = run_in(Path::new(MANIFEST_DIR), &["explain", "self-acepting-event"]);
    assert_eq!(code(&unknown), 2);
    assert_eq!(
        stderr(&unknown),
        "error: unknown lint `self-acepting-event`; did you mean `self-accepting-event`?\n"
    );
}

/// A fresh project directory under the target directory, with `files`
/// written into it.
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_lint")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("the old project is removable");
    }
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
        std::fs::write(path, text).expect("the file is writable");
    }
    dir
}

fn reaccepts_text() -> String {
    std::fs::read_to_string(Path::new(MANIFEST_DIR).join(REACCEPTS))
        .expect("the corpus is readable")
}

#[test]
fn the_nearest_config_applies_with_overrides_under_flags() {
    let machine = reaccepts_text();
    let config = "[lints]\nself-accepting-event = \"deny\"\n\n[[overrides]]\npaths = [\"machines/legacy/**\"]\n[overrides.lints]\nI001 = \"allow\"\n";
    let dir = project(
        "discovery",
        &[
            ("idemchart.toml", config),
            ("machines/current/pedido.yaml", &machine),
            ("machines/legacy/pedido.yaml", &machine),
        ],
    );
    // Which files have I001 findings, at which severity; a file may have several.
    let i001 = |report: &Value| -> Vec<(String, String)> {
        let mut found: Vec<_> = findings(report)
            .into_iter()
            .filter(|(c, ..)| c == "I001")
            .map(|(_, severity, file)| (severity, file))
            .collect();
        found.dedup();
        found
    };

    // From the project root: the file denies I001, the override allows it in legacy/.
    let output = run_in(&dir, &["lint", "--format", "json", "machines"]);
    assert_eq!(code(&output), 1);
    assert_eq!(
        i001(&json(&output)),
        [(
            "error".to_string(),
            "machines/current/pedido.yaml".to_string()
        )]
    );

    // From a subdirectory the search goes upward and finds the same file.
    let output = run_in(
        &dir.join("machines/current"),
        &["lint", "--format", "json", "."],
    );
    assert_eq!(
        i001(&json(&output)),
        [("error".to_string(), "./pedido.yaml".to_string())]
    );

    // Flags come after the file and every override.
    let output = run_in(
        &dir,
        &["lint", "--format", "json", "--warn", "I001", "machines"],
    );
    assert_eq!(code(&output), 0);
    assert_eq!(
        i001(&json(&output)),
        [
            (
                "warning".to_string(),
                "machines/current/pedido.yaml".to_string()
            ),
            (
                "warning".to_string(),
                "machines/legacy/pedido.yaml".to_string()
            ),
        ]
    );
}

#[test]
fn config_file_warnings_deny_and_explicit_config() {
    let machine = reaccepts_text();
    let dir = project(
        "explicit",
        &[
            ("idemchart.toml", "[lints]\nwarnings = \"deny\"\n"),
            ("quiet.toml", "[lints]\nI001 = \"allow\"\n"),
            ("pedido.yaml", &machine),
        ],
    );
    let output = run_in(&dir, &["lint", "--format", "json", "pedido.yaml"]);
    assert_all_at(&json(&output), "I001", "error");
    assert_eq!(code(&output), 1);

    let output = run_in(
        &dir,
        &[
            "lint",
            "--format",
            "json",
            "--config",
            "quiet.toml",
            "pedido.yaml",
        ],
    );
    assert!(severities_of(&json(&output), "I001").is_empty());
}

#[test]
fn a_bad_config_file_is_a_usage_error_with_its_position() {
    let dir = project(
        "bad-config",
        &[
            (
                "idemchart.toml",
                "[lints]\nself-acepting-event = \"deny\"\n",
            ),
            ("pedido.yaml", &reaccepts_text()),
            ("sub/.keep", ""),
        ],
    );
    let output = run_in(&dir, &["lint", "pedido.yaml"]);
    assert_eq!(code(&output), 2);
    assert_eq!(
        stderr(&output),
        "error: idemchart.toml:2:1: unknown lint `self-acepting-event`; did you mean `self-accepting-event`?\n"
    );
    let output = run_in(&dir.join("sub"), &["lint", "../pedido.yaml"]);
    assert!(
        stderr(&output).starts_with("error: ../idemchart.toml:2:1: "),
        "{}",
        stderr(&output)
    );
}

/// A finding that no replay confirms is not reported; `--show-refuted`
/// shows it, with `confirmed: false` and what refuted it, in human and JSON
/// output alike.
#[test]
fn refuted_findings_show_only_when_asked() {
    // `SIGUIENTE` lies on a cycle of the graph, but history always restores
    // `paso2`, so its late repeat is never accepted: the replay refutes it.
    const HISTORY: &str = "tests/lints/i001-history.yaml";
    let refuted = |report: &Value| -> Vec<Value> {
        report["diagnostics"]
            .as_array()
            .expect("a list")
            .iter()
            .filter(|d| d["confirmed"] == Value::Bool(false))
            .cloned()
            .collect()
    };
    let plain = json(&lint(&["--format", "json", HISTORY]));
    assert!(refuted(&plain).is_empty(), "{plain:#}");
    let shown = json(&lint(&["--format", "json", "--show-refuted", HISTORY]));
    let found = refuted(&shown);
    assert_eq!(found.len(), 1, "{shown:#}");
    assert_eq!(found[0]["code"], "I003");
    assert_eq!(
        found[0]["witness"],
        serde_json::json!(["SIGUIENTE", "SALIR", "VOLVER", "SIGUIENTE*"])
    );
    let why = found[0]["replay"].as_str().expect("what refuted it");
    assert!(
        why.contains("the repeated `SIGUIENTE` was ignored"),
        "{why}"
    );
    assert_eq!(
        shown["diagnostics"].as_array().map(Vec::len),
        plain["diagnostics"].as_array().map(|d| d.len() + 1)
    );

    let human = stdout(&lint(&["--show-refuted", "--color", "never", HISTORY]));
    assert!(
        human.contains(
            "SIGUIENTE → SALIR → VOLVER → SIGUIENTE* (refuted by replay: the repeated `SIGUIENTE` was ignored"
        ),
        "{human}"
    );
    let human = stdout(&lint(&["--color", "never", HISTORY]));
    assert!(!human.contains("refuted"), "{human}");
}

/// A finding no run shows, and none is proved impossible, is reported as a
/// note that names the bound the search stopped at: CI does not fail on
/// it, whatever level its lint is given, and `--statistics` counts it.
#[test]
fn findings_not_shown_are_notes_that_name_their_bound() {
    const DEEP: &str = "tests/lints/not-shown-deep-counter.yaml";
    let report = json(&lint(&["--format", "json", "--deny", "I001", DEEP]));
    let not_shown: Vec<&Value> = (report["diagnostics"].as_array().expect("a list").iter())
        .filter(|d| d["verdict"] == "not-shown")
        .collect();
    assert_eq!(not_shown.len(), 2, "{report:#}");
    for d in &not_shown {
        assert_eq!(d["severity"], "note", "{d:#}");
        assert_eq!(d["confirmed"], Value::Null);
        let why = d["replay"].as_str().expect("where it was not shown");
        assert!(
            why.ends_with("it stopped at its bound of 8 moves from the start"),
            "{why}"
        );
    }
    let output = lint(&["--deny", "I001", "--color", "never", DEEP]);
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    let human = stdout(&output);
    assert!(human.contains("note[I001]"), "{human}");
    assert!(human.contains("(not shown by replay)"), "{human}");
    let statistics = stdout(&lint(&["--statistics", DEEP]));
    assert!(
        statistics.contains("    2  I004  cumulative-update              1          1          0"),
        "{statistics}"
    );
    let sarif = json(&lint(&["--format", "sarif", DEEP]));
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let notes: Vec<&Value> = results
        .iter()
        .filter(|r| r["properties"]["verdict"] == "not-shown")
        .collect();
    // Without `--deny I001`, the I001 on `OPEN` is folded into the I004 of
    // its counter, shown by the same run: one note.
    assert_eq!(notes.len(), 1);
    let message = notes[0]["message"]["text"].as_str().unwrap_or_default();
    assert!(message.contains("(I001) (not shown: "), "{message}");
    assert!(notes.iter().all(|r| r["level"] == "note"));
}

/// The witness of a finding whose payload the reasoning chose carries each
/// delivery's payload, written as the `data` of an `idemchart run` line:
/// played with `idemchart run`, the run shows the harm.
#[test]
fn a_witness_with_payloads_replays_in_idemchart_run() {
    const NESTED: &str = "tests/lints/reason-nested-payload.yaml";
    let report = json(&lint(&["--format", "json", NESTED]));
    let i004 = (report["diagnostics"].as_array().expect("a list").iter())
        .find(|d| d["code"] == "I004")
        .expect("the charge counted twice");
    assert_eq!(i004["verdict"], "confirmed");
    let witness: Vec<&str> = (i004["witness"].as_array().expect("steps").iter())
        .map(|s| s.as_str().expect("a step"))
        .collect();
    assert_eq!(
        witness[0],
        r#"xstate.done.actor.loadSubscription {"output": {"subscription": {"status": "active"}}}"#
    );
    // Each step as a line of `idemchart run`; the starred repeat is the
    // same line again.
    let mut lines: Vec<String> = Vec::new();
    for step in &witness {
        let line = match step.strip_suffix('*') {
            Some(name) => lines
                .iter()
                .rev()
                .find(|l| l.contains(&format!("\"type\":\"{name}\"")))
                .cloned()
                .expect("the delivery it repeats"),
            None => match step.split_once(' ') {
                Some((name, data)) => {
                    let data: Value = serde_json::from_str(data).expect("the payload is JSON");
                    serde_json::json!({ "type": name, "data": data }).to_string()
                }
                None => serde_json::json!({ "type": step }).to_string(),
            },
        };
        lines.push(line);
    }
    let events =
        std::env::temp_dir().join(format!("idemchart-witness-{}.jsonl", std::process::id()));
    std::fs::write(&events, lines.join("\n") + "\n").expect("writable");
    let run = run_in(
        Path::new(MANIFEST_DIR),
        &["run", NESTED, "--events", events.to_str().expect("a path")],
    );
    let _ = std::fs::remove_file(&events);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let states: Vec<Value> = (stdout(&run).lines())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // The start, then one line per step: the answer leads to `active`, and
    // the repeated charge counts again.
    assert_eq!(states[1]["configuration"][0], "active", "{states:#?}");
    let charged = |s: &Value| s["context"]["charged"].as_i64().expect("a count");
    assert_eq!(charged(&states[2]), 1);
    assert_eq!(charged(&states[3]), 2);
}

/// A retry's witness ends with the retried step marked `*`, the same in
/// the json report and in the SARIF log's properties and code flow.
#[test]
fn a_retry_witness_ends_with_the_retried_step_in_json_and_sarif() {
    let file = "tests/lints/i008-checkout-blind-retry.yaml";
    let expected = ["PAGAR", "after 30s", "REINTENTAR*"];
    let report = json(&lint(&["--format", "json", file]));
    let retry = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["code"] == "I008")
        .expect("the I008 finding");
    assert_eq!(retry["witness"], serde_json::json!(expected));
    assert_eq!(retry["confirmed"], true);

    let log: Value =
        serde_json::from_str(&stdout(&lint(&["--format", "sarif", file]))).expect("SARIF JSON");
    let result = log["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["ruleId"] == "I008")
        .expect("the I008 result");
    assert_eq!(result["properties"]["witness"], serde_json::json!(expected));
    let steps: Vec<&str> = result["codeFlows"][0]["threadFlows"][0]["locations"]
        .as_array()
        .expect("witness steps")
        .iter()
        .map(|l| l["location"]["message"]["text"].as_str().expect("a text"))
        .collect();
    assert_eq!(
        steps,
        [
            "1. PAGAR",
            "2. after 30s",
            "3. REINTENTAR*: the retried delivery"
        ]
    );
}

/// An XState source reports at its own lines and columns in every format,
/// its notes at note level.
#[test]
fn xstate_sources_report_at_their_positions_in_every_format() {
    let file = "tests/xstate/fixtures/checkout.ts";
    let report = json(&lint(&["--format", "json", file]));
    let diagnostics = report["diagnostics"].as_array().expect("a list");
    let at = |code: &str| {
        diagnostics
            .iter()
            .find(|d| d["code"] == code)
            .unwrap_or_else(|| panic!("no {code} in {report:#}"))
    };
    let i004 = at("I004");
    assert_eq!(i004["file"], file);
    assert_eq!(
        (i004["line"].as_u64(), i004["column"].as_u64()),
        (Some(40), Some(7))
    );
    assert_eq!(at("S011")["severity"], "note");
    // Notes are neither errors nor warnings.
    assert_eq!(report["summary"]["errors"], 0);

    let sarif: Value =
        serde_json::from_str(&stdout(&lint(&["--format", "sarif", file]))).expect("SARIF");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let note = results
        .iter()
        .find(|r| r["ruleId"] == "S011")
        .expect("a note");
    assert_eq!(note["level"], "note");
    let location = &results
        .iter()
        .find(|r| r["ruleId"] == "I004")
        .expect("I004")["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], file);
    assert_eq!(location["region"]["startLine"], 40);

    let github = stdout(&lint(&["--format", "github", file]));
    assert!(
        github.contains(&format!("::warning file={file},line=40,col=7,")),
        "{github}"
    );
    assert!(
        github.contains(&format!("::notice file={file},")),
        "{github}"
    );

    let human = stdout(&lint(&["--color", "never", file]));
    assert!(human.contains(&format!("--> {file}:40:7")), "{human}");
    assert!(human.contains("items: ({ context, event }) =>"), "{human}");
}

/// A machine spread over stage modules reports each finding in the file
/// that holds it.
#[test]
fn a_machine_spread_over_modules_reports_in_each_module() {
    let report = json(&lint(&[
        "--format",
        "json",
        "tests/xstate/fixtures/approvals/machine.ts",
    ]));
    let stage = report["diagnostics"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|d| d["code"] == "I005")
        .expect("the host action of a stage");
    assert!(
        stage["file"]
            .as_str()
            .expect("a path")
            .ends_with("approvals/stages/review.ts"),
        "{stage:#}"
    );
    assert_eq!(stage["line"], 9);
}

/// `idemchart lint .` at the root of a web project: machines in sources
/// and JSON, nothing from `node_modules` or `.git`, nothing from files
/// without a machine, and the `include`/`exclude` globs of idemchart.toml.
#[test]
fn a_web_project_is_searched_for_machines() {
    let root = std::env::temp_dir().join(format!("idemchart-web-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let machine = "import { createMachine } from 'xstate';\nexport const m = createMachine({ id: 'm', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });\n";
    for (path, text) in [
        (
            "package.json",
            "{ \"name\": \"web\", \"dependencies\": { \"xstate\": \"5.33.3\" } }",
        ),
        (
            "tsconfig.json",
            "{ \"compilerOptions\": { \"strict\": true } }",
        ),
        ("src/machine.ts", machine),
        (
            "src/util.ts",
            "export const twice = (x: number) => 2 * x;\n",
        ),
        ("src/machine.test.ts", machine),
        ("node_modules/xstate/index.js", machine),
        (".git/hooks/m.js", machine),
        ("idemchart.toml", "exclude = [\"**/*.test.ts\"]\n"),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
        std::fs::write(&path, text).expect("write");
    }
    let output = run_in(&root, &["lint", "--format", "json", "."]);
    let report = json(&output);
    let files: Vec<&str> = report["diagnostics"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|d| d["file"].as_str())
        .collect();
    assert!(!files.is_empty(), "{report:#}");
    assert!(
        files.iter().all(|f| f.ends_with("src/machine.ts")),
        "{files:?}"
    );
    assert_eq!(report["summary"]["files"], 1, "{report:#}");
}

/// A JSON machine config that a script makes its machine of, with the
/// implementations of a `setup(...)` another module exports, is linted
/// once, through the script: the reading on its own, without them, would
/// say less and say it twice. A config no script reads is linted alone.
#[test]
fn a_json_config_a_script_reads_is_linted_through_the_script_only() {
    let root = std::env::temp_dir().join(format!("idemchart-engine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let definition = |id: &str| {
        format!(
            "{{ \"id\": \"{id}\", \"initial\": \"open\", \"context\": {{ \"lines\": [] }},\n  \"states\": {{ \"open\": {{ \"on\": {{ \"line item added\": {{ \"actions\": \"appendLine\" }} }} }} }} }}\n"
        )
    };
    for (path, text) in [
        (
            "src/engine/setup.ts",
            "import { assign, setup } from 'xstate';\n\
             export const engine = setup({\n\
               actions: { appendLine: assign({ lines: ({ context, event }) => [...context.lines, event.line] }) },\n\
             });\n"
                .to_string(),
        ),
        ("definitions/invoice.json", definition("invoice")),
        ("definitions/vendor.json", definition("vendor")),
        (
            "src/workflows/invoice.ts",
            "import definition from '../../definitions/invoice.json' with { type: 'json' };\n\
             import { engine } from '../engine/setup.js';\n\
             export const invoiceMachine = engine.createMachine(definition);\n"
                .to_string(),
        ),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
        std::fs::write(&path, text).expect("write");
    }
    let report = json(&run_in(&root, &["lint", "--format", "json", "."]));
    let found: Vec<(String, String, u64)> = report["diagnostics"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().expect("a code").to_string(),
                d["file"]
                    .as_str()
                    .expect("a file")
                    .trim_start_matches("./")
                    .to_string(),
                d["line"].as_u64().expect("a line"),
            )
        })
        .collect();
    let at = |code: &str, file: &str| {
        found
            .iter()
            .filter(|(c, f, _)| c == code && f == file)
            .count()
    };
    // Through the script: the append is read, in the setup's module.
    assert_eq!(at("I004", "src/engine/setup.ts"), 1, "{found:?}");
    assert_eq!(at("I001", "definitions/invoice.json"), 1, "{found:?}");
    assert_eq!(at("I006", "definitions/invoice.json"), 1, "{found:?}");
    // Alone: its named action is a host action, and it is still linted.
    assert_eq!(at("I001", "definitions/vendor.json"), 1, "{found:?}");
    assert_eq!(at("I004", "definitions/vendor.json"), 0, "{found:?}");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_file_of_several_machines_needs_a_name_for_one_machine_commands() {
    let file = "tests/xstate/fixtures/several.ts";
    let output = run_in(Path::new(MANIFEST_DIR), &["graph", file]);
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("`notification`, `passwordReset`"),
        "{}",
        stderr(&output)
    );
    let output = run_in(
        Path::new(MANIFEST_DIR),
        &["fmt", "--to", "yaml", "--machine", "passwordReset", file],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("machine: passwordReset\nsemantics: xstate\n"),
        "{}",
        stdout(&output)
    );
    let output = run_in(
        Path::new(MANIFEST_DIR),
        &[
            "import",
            "--to",
            "dsl",
            "tests/xstate/fixtures/order-charge-ids.mjs",
        ],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("on CHARGE_SUCCEEDED if !(event.chargeId in context.chargesSeen)")
    );
}

/// A file named on the command line that holds no machine is an error that
/// names it and says why; the same file found by a walk is passed over.
#[test]
fn a_named_file_that_holds_no_machine_is_an_error() {
    let root = Path::new(MANIFEST_DIR).join("tests/data/repos/payments-monorepo");
    for (file, why) in [
        ("docker-compose.yml", "no `machine:` or `states:` key"),
        ("tsconfig.json", "no `states` key"),
        ("apps/web/src/global.d.ts", "declaration file"),
        (
            "packages/ui/src/dropdown/dropdown.machine.ts",
            "imports nothing from `xstate`",
        ),
    ] {
        let output = run_in(&root, &["lint", "--color", "never", file]);
        let out = stdout(&output);
        assert_eq!(code(&output), 1, "{file}: {out}");
        assert!(out.contains("the file holds no machine"), "{file}: {out}");
        assert!(out.contains(why), "{file}: {out}");
        assert!(out.contains(&format!("--> {file}:1:1")), "{file}: {out}");
    }
}

/// A reader that closes the pipe before anything is written (`| head`)
/// ends the command quietly: no panic, the exit status of what it found.
#[test]
fn a_closed_standard_output_ends_a_command_quietly() {
    let root = Path::new(MANIFEST_DIR).join("tests/data/repos/payments-monorepo");
    for (args, status) in [
        (&["explain", "I008"][..], 0),
        (&["lint", ".", "--color", "never"][..], 0),
        // The documents for programs are written as they are made: a
        // failed write stops them as quietly.
        (&["lint", ".", "--format", "json"][..], 0),
        (&["lint", ".", "--format", "sarif"][..], 0),
        (&["lint", "docker-compose.yml"][..], 1),
        (&["schema"][..], 0),
    ] {
        // The read end is closed before the command starts, so that its
        // first write meets a closed pipe on every run.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
            .args(args)
            .current_dir(&root)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("the binary runs");
        let err = stderr(&output);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        assert_eq!(code(&output), status, "{args:?}: {err}");
    }
}

/// Two findings that one run shows at one place are one problem: the CLI
/// reports the more specific, whose message says both (`docs/lint.md`, "One
/// finding for one problem"); findings of two runs stay apart, and so does a
/// lint given a level of its own.
#[test]
fn a_finding_another_covers_is_folded_into_it() {
    const ONE_RUN: &str = "tests/data/lint/fold/retry-and-cycle.yaml";
    const TWO_RUNS: &str = "tests/data/lint/fold/retry-beside-cycle.yaml";
    let codes = |args: &[&str]| -> Vec<(String, String)> {
        let report = json(&lint(&[&["--format", "json"], args].concat()));
        (report["diagnostics"].as_array().expect("a list").iter())
            .filter(|d| d["code"] != "I005")
            .map(|d| {
                let message = d["message"].as_str().expect("a message");
                let folded = message.rsplit_once(" (").map_or("", |(_, code)| code);
                (
                    d["code"].as_str().expect("a code").to_string(),
                    folded.to_string(),
                )
            })
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(codes(&[ONE_RUN]), [pair("I008", "I003)")]);
    let human = stdout(&lint(&["--color", "never", ONE_RUN]));
    assert!(
        human.contains(
            "names no `verify` state to ask first; and `RETRY` is accepted again after a cycle"
        ),
        "{human}"
    );
    assert_eq!(codes(&[TWO_RUNS]).len(), 2, "{:?}", codes(&[TWO_RUNS]));
    // Denied, the cycle is an error of its own, and the run fails on it.
    assert_eq!(codes(&["--deny", "I003", ONE_RUN]).len(), 2);
    assert_eq!(code(&lint(&["--deny", "I003", ONE_RUN])), 1);
    // Allowed, the retry is gone, and the cycle stands on its own.
    assert_eq!(codes(&["--allow", "I008", ONE_RUN]), [pair("I003", "")]);
}
