//! The command line as a user meets it: the built binary run on files in the
//! repository, its exit codes, and what it prints.
//!
//! Every command runs in the crate's directory with relative paths, so that
//! the paths in messages (and so the snapshots) are the same on any checkout.

use std::path::PathBuf;

use idemchart::syntax::{self, Syntax};

use crate::support::run;

use run::{Run, idemchart, manifest_dir};

impl Run {
    /// The exit code, then standard output and standard error, as a
    /// snapshot shows them (a report goes to standard output, an error
    /// about the run to standard error; the commands here write one).
    fn code_and_output(&self) -> String {
        format!("exit: {:?}\n{}{}", self.code, self.stdout, self.stderr)
    }
}

/// A fresh scratch directory for files a command writes.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("idemchart-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Every malformed file is rejected with exit code 1 and messages that point
/// into it; the snapshot of each is reviewed for its line:col and wording.
#[test]
fn check_rejects_every_malformed_file() {
    let mut count = 0;
    insta::glob!("malformed/*", |path| {
        count += 1;
        let relative = path
            .strip_prefix(manifest_dir())
            .expect("the file lies in the crate")
            .to_str()
            .expect("a UTF-8 path");
        let run = idemchart(&["check", "--color", "never", relative]);
        assert_eq!(run.code, Some(1), "{relative}:\n{}", run.stdout);
        assert!(
            run.stdout.contains(&format!("--> {relative}:")),
            "{relative}: no position in\n{}",
            run.stdout
        );
        insta::assert_snapshot!(run.code_and_output());
    });
    assert!(count >= 36, "only {count} malformed files");
}

#[test]
fn check_accepts_the_spec_examples_and_the_shipped_machines() {
    let run = idemchart(&["check", "--color", "never", "tests/data/spec", "machines"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    insta::assert_snapshot!(run.code_and_output());
}

#[test]
fn check_of_a_missing_path_fails_as_a_command() {
    let run = idemchart(&["check", "tests/data/no-such-machine.yaml"]);
    assert_eq!(run.code, Some(2));
    insta::assert_snapshot!(run.code_and_output());
}

/// The YAML and DSL files of one machine print the same text in either
/// syntax but for their comments (the YAML files have some, the DSL files
/// none), and that text loads back; the snapshots are those of the YAML
/// files, comments and all.
#[test]
fn fmt_prints_twins_alike() {
    for machine in ["pedido", "lampara"] {
        for (to, syntax) in [("yaml", Syntax::Yaml), ("dsl", Syntax::Dsl)] {
            let yaml_path = format!("tests/data/spec/{machine}.yaml");
            let dsl_path = format!("tests/data/spec/{machine}.chart");
            let from_yaml = idemchart(&["fmt", "--to", to, &yaml_path]);
            let from_dsl = idemchart(&["fmt", "--to", to, &dsl_path]);
            assert_eq!(from_yaml.code, Some(0), "{}", from_yaml.stderr);
            assert_eq!(from_dsl.code, Some(0), "{}", from_dsl.stderr);
            let uncommented = |text: &str| match syntax::parse(text, syntax) {
                Ok(machine) => syntax::yaml::format(&machine),
                Err(errors) => panic!("{machine}: fmt --to {to} does not load back: {errors:#?}"),
            };
            assert_eq!(
                uncommented(&from_yaml.stdout),
                uncommented(&from_dsl.stdout),
                "{machine}: fmt --to {to} differs between the twins"
            );
            insta::assert_snapshot!(format!("fmt_{machine}_{to}"), from_yaml.stdout);
        }
    }
}

#[test]
fn graph_draws_in_both_formats() {
    let dot = idemchart(&["graph", "--format", "dot", "tests/data/spec/pedido.yaml"]);
    assert_eq!(dot.code, Some(0), "{}", dot.stderr);
    assert!(dot.stdout.starts_with("digraph"), "{}", dot.stdout);
    let mermaid = idemchart(&[
        "graph",
        "--format",
        "mermaid",
        "tests/data/spec/pedido.chart",
    ]);
    assert_eq!(mermaid.code, Some(0), "{}", mermaid.stderr);
    insta::assert_snapshot!(mermaid.stdout);
}

/// `--lint` and `--witness` on a machine with hazards: the Mermaid the
/// README embeds, and the DOT with the same marks.
#[test]
fn graph_marks_findings_and_draws_a_witness() {
    let path = "tests/lints/i001-root-reentry.yaml";
    let mermaid = idemchart(&["graph", "--lint", "--witness", "2", path]);
    assert_eq!(mermaid.code, Some(0), "{}", mermaid.stderr);
    assert!(
        mermaid.stdout.contains("1. ESCALAR, 2. ESCALAR*"),
        "{}",
        mermaid.stdout
    );
    insta::assert_snapshot!(mermaid.stdout);
    let dot = idemchart(&["graph", "--format", "dot", "--lint", path]);
    assert_eq!(dot.code, Some(0), "{}", dot.stderr);
    assert!(
        dot.stdout
            .contains("tooltip = \"I001 self-accepting-event: "),
        "{}",
        dot.stdout
    );
    // Without --lint, no marks.
    let plain = idemchart(&["graph", "--format", "dot", path]);
    assert!(!plain.stdout.contains("I001"), "{}", plain.stdout);
}

/// A witness that cannot be drawn fails the command, with exit 2.
#[test]
fn graph_witness_errors() {
    let path = "tests/lints/i001-root-reentry.yaml";
    for n in ["0", "3"] {
        let run = idemchart(&["graph", "--witness", n, path]);
        assert_eq!(run.code, Some(2), "--witness {n}: {}", run.stdout);
        assert!(
            run.stderr.contains(&format!(
                "error: --witness {n}: {path} has 2 findings, numbered from 1"
            )),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
    // The effect declaration of the checkout has no witness that shows harm.
    let run = idemchart(&[
        "graph",
        "--witness",
        "1",
        "tests/lints/search-checkout-cart.yaml",
    ]);
    assert_eq!(run.code, Some(2), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("error: --witness 1: finding 1 (I005 effect-without-key) has no witness"),
        "{}",
        run.stderr
    );
}

#[test]
fn schema_prints_the_machine_schema_as_json() {
    let run = idemchart(&["schema"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let printed: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("schema prints valid JSON");
    let expected: serde_json::Value =
        serde_json::from_str(idemchart::schema::MACHINE_SCHEMA).expect("the schema is JSON");
    assert_eq!(printed, expected);
    assert_eq!(printed["type"], "object");
}

#[test]
fn run_follows_events_and_the_clock() {
    let run = idemchart(&[
        "run",
        "tests/data/spec/lampara.yaml",
        "--events",
        "tests/data/cli/lampara.jsonl",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The start, one line per input; the advance of 30m fires `after 30m`.
    assert_eq!(run.stdout.lines().count(), 6, "{}", run.stdout);
    insta::assert_snapshot!(run.stdout);
}

/// Invocations: each step's line lists what it invoked and cancelled, and
/// the host answers with completion lines; a late answer to a cancelled
/// charge is ignored.
#[test]
fn run_prints_invocations_and_takes_their_completions() {
    let run = idemchart(&[
        "run",
        "machines/checkout.yaml",
        "--events",
        "tests/data/cli/checkout.jsonl",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines[1]["invoked"][0]["src"], "cobrarTarjeta");
    assert_eq!(lines[2]["cancelled"][0], "cobro");
    assert_eq!(lines[3]["ignored"], true, "the late answer");
    assert_eq!(lines.last().unwrap()["configuration"][0], "pagado");
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn run_stops_at_a_malformed_events_line() {
    let run = idemchart(&[
        "run",
        "tests/data/spec/lampara.yaml",
        "--events",
        "tests/data/cli/lampara-malformed.jsonl",
        "--format",
        "text",
    ]);
    assert_eq!(run.code, Some(1));
    insta::assert_snapshot!(format!(
        "exit: {:?}\n{}\nstdout:\n{}",
        run.code, run.stderr, run.stdout
    ));
}

/// Stopping with a snapshot and going on from it gives the same steps as
/// one run over all the events.
#[test]
fn run_continues_from_a_snapshot_as_one_run() {
    let dir = scratch_dir("snapshot");
    let snapshot = dir.join("lampara.json");
    let snapshot = snapshot.to_str().expect("a UTF-8 path");
    let machine = "tests/data/spec/lampara.yaml";
    let whole = idemchart(&["run", machine, "--events", "tests/data/cli/lampara.jsonl"]);
    let first = idemchart(&[
        "run",
        machine,
        "--events",
        "tests/data/cli/lampara-part1.jsonl",
        "--snapshot-out",
        snapshot,
    ]);
    let second = idemchart(&[
        "run",
        machine,
        "--events",
        "tests/data/cli/lampara-part2.jsonl",
        "--snapshot-in",
        snapshot,
    ]);
    for run in [&whole, &first, &second] {
        assert_eq!(run.code, Some(0), "{}", run.stderr);
    }
    let whole: Vec<&str> = whole.stdout.lines().collect();
    let first: Vec<&str> = first.stdout.lines().collect();
    let second: Vec<&str> = second.stdout.lines().collect();
    // The second run first shows the state it restored: the first run's last.
    let state = |line: &str| {
        let step: serde_json::Value = serde_json::from_str(line).expect("a JSON step");
        (step["configuration"].clone(), step["context"].clone())
    };
    assert_eq!(state(second[0]), state(first[first.len() - 1]));
    let joined: Vec<&str> = first.iter().chain(&second[1..]).copied().collect();
    assert_eq!(joined, whole);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot that is not JSON, or that does not fit the machine, is exit 2
/// with the file, line and column, or with what does not fit.
#[test]
fn run_refuses_a_bad_snapshot_with_its_place() {
    let dir = scratch_dir("bad-snapshot");
    let machine = "tests/data/spec/lampara.yaml";
    let run_from = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().expect("a UTF-8 path").to_string();
        let run = idemchart(&[
            "run",
            machine,
            "--events",
            "tests/data/cli/lampara-part2.jsonl",
            "--snapshot-in",
            &path,
        ]);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        run.stderr.replace(&path, "SNAPSHOT")
    };
    let broken = run_from("broken.json", "{\"format\": 1,\n  \"machine\" \"lampara\"}");
    assert_eq!(broken, "error: SNAPSHOT:2:13: expected `:`\n");
    let other = run_from(
        "other.json",
        r#"{"format":1,"machine":"puerta","status":"active","configuration":[],"context":{}}"#,
    );
    assert_eq!(
        other,
        "error: SNAPSHOT: the snapshot is of machine `puerta`, not `lampara`\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_converts_an_scxml_document() {
    let run = idemchart(&["import", "tests/data/scion/test/basic/basic1.scxml"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    if let Err(errors) = syntax::parse(&run.stdout, Syntax::Yaml) {
        panic!("the imported machine does not load: {errors:#?}");
    }
    insta::assert_snapshot!(run.stdout);
}

/// A command that needs a machine reports its load errors as `check` does.
#[test]
fn fmt_of_a_malformed_file_reports_its_errors() {
    let run = idemchart(&[
        "fmt",
        "--to",
        "dsl",
        "tests/malformed/yaml_unknown_target.yaml",
    ]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.code_and_output());
}

/// Every command that reads a machine treats bytes that are not UTF-8 as a
/// load error of the file (exit 1), as `check` does, not as a failure of
/// the command itself (exit 2).
#[test]
fn a_file_that_is_not_utf8_is_a_load_error_for_every_command() {
    let file = "tests/malformed/yaml_not_utf8.yaml";
    for args in [
        vec!["check", "--color", "never", file],
        vec!["fmt", "--to", "dsl", file],
        vec!["graph", "--format", "dot", file],
        vec!["lint", "--format", "json", file],
    ] {
        let run = idemchart(&args);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(output.contains("not UTF-8"), "{args:?}: {output}");
    }
}
