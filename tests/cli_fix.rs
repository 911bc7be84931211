//! `idemchart lint --fix`, `--unsafe-fixes` and `--diff` as a user runs
//! them: on copies of the fixtures in `tests/fixes/`, in a project directory
//! of their own, with the exit codes, what is written and what is reported.

use crate::support::run as support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{Run, idemchart_in, manifest_dir};

/// A fresh directory under the target directory holding copies of the
/// named fixtures, and an empty configuration so that no `idemchart.toml`
/// above it changes the levels.
fn project(name: &str, fixtures: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_fix")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("the old project is removable");
    }
    std::fs::create_dir_all(&dir).expect("the project directory");
    std::fs::write(dir.join("idemchart.toml"), "").expect("the configuration");
    for fixture in fixtures {
        let from = manifest_dir().join("tests/fixes").join(fixture);
        std::fs::copy(&from, dir.join(fixture)).expect("the fixture copies");
    }
    dir
}

fn text(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).expect("the file reads")
}

fn fixture(file: &str) -> String {
    std::fs::read_to_string(manifest_dir().join("tests/fixes").join(file))
        .expect("the fixture reads")
}

fn lint(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["lint"];
    all.extend(args);
    idemchart_in(dir, &all)
}

#[test]
fn fix_writes_the_safe_fixes_and_reports_what_is_left() {
    let dir = project("safe", &["s009-order-allows.yaml", "s005-orders.chart"]);
    let run = lint(&dir, &["--fix", "."]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_ne!(
        text(&dir, "s009-order-allows.yaml"),
        fixture("s009-order-allows.yaml")
    );
    assert!(text(&dir, "s005-orders.chart").contains("\nevent CANCEL\n"));
    assert!(
        run.stdout.ends_with("fixed 6 findings in 2 files\n"),
        "{}",
        run.stdout
    );
    // What is left is reported as usual: the undeclared event has no id.
    assert!(run.stdout.contains("warning[I006]"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("[S009]") && !run.stdout.contains("[S005]"),
        "{}",
        run.stdout
    );

    let again = lint(&dir, &["--fix", "."]);
    assert_eq!(again.code, Some(0));
    assert!(
        again.stdout.ends_with("fixed 0 findings in 0 files\n"),
        "{}",
        again.stdout
    );
}

#[test]
fn unsafe_fixes_wait_for_their_flag() {
    let dir = project(
        "unsafe",
        &["i004-checkout-payments.yaml", "i007-order-sources.yaml"],
    );
    let run = lint(&dir, &["--fix", "."]);
    // I007 is an error, and its fix is unsafe: it stays.
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_eq!(
        text(&dir, "i004-checkout-payments.yaml"),
        fixture("i004-checkout-payments.yaml")
    );
    assert!(
        run.stdout
            .contains("= fixable with `--fix --unsafe-fixes`: guard the transition")
    );
    assert!(
        run.stdout.contains(
            "No fixes available (3 hidden fixes can be enabled with the `--unsafe-fixes` option)."
        ),
        "{}",
        run.stdout
    );

    // Without `--fix`, `--unsafe-fixes` shows them as fixable and writes nothing.
    let shown = lint(&dir, &["--unsafe-fixes", "."]);
    assert!(
        shown
            .stdout
            .contains("= [*] fixable with `--fix` (unsafe): guard the transition")
    );
    // Two I007 findings share one fix, and each counts, as ruff counts.
    assert!(
        shown
            .stdout
            .contains("[*] 3 fixable with the `--fix` option.\n"),
        "{}",
        shown.stdout
    );
    assert_eq!(
        text(&dir, "i007-order-sources.yaml"),
        fixture("i007-order-sources.yaml")
    );

    let run = lint(&dir, &["--fix", "--unsafe-fixes", "."]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(text(&dir, "i007-order-sources.yaml").contains("retention: \"11d\""));
    assert!(text(&dir, "i004-checkout-payments.yaml").contains("seenPayment: []"));
    assert!(
        !run.stdout.contains("[I004]") && !run.stdout.contains("[I007]"),
        "{}",
        run.stdout
    );
}

#[test]
fn diff_prints_the_fixes_and_writes_nothing() {
    let dir = project("diff", &["s005-checkout-flow.yaml", "i007-orders.chart"]);
    let run = lint(
        &dir,
        &["--diff", "s005-checkout-flow.yaml", "i007-orders.chart"],
    );
    assert_eq!(run.code, Some(1), "a diff is exit 1: {}", run.stdout);
    assert_eq!(
        text(&dir, "s005-checkout-flow.yaml"),
        fixture("s005-checkout-flow.yaml")
    );
    assert_eq!(
        run.stdout,
        "--- s005-checkout-flow.yaml\n+++ s005-checkout-flow.yaml\n@@ -1,6 +1,6 @@\n # Events declared in flow style, on one line.\n machine: checkout-flow\n-events: { CHECKOUT: { id: checkoutId }, PAID: { id: paymentId } }\n+events: { CHECKOUT: { id: checkoutId }, PAID: { id: paymentId }, ABANDONED: {} }\n initial: cart\n states:\n   cart: { on: { CHECKOUT: paying } }\n"
    );
    assert_eq!(run.stderr, "would fix 1 finding in 1 file\n");

    // The unsafe fix of the DSL file joins the diff with its flag.
    let run = lint(&dir, &["--diff", "--unsafe-fixes", "i007-orders.chart"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .contains("-dedup retention 1d\n+dedup retention 5d\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        text(&dir, "i007-orders.chart"),
        fixture("i007-orders.chart")
    );

    // No diff is exit 0, even with an error left (I007 at error level).
    let run = lint(&dir, &["--diff", "i007-orders.chart"]);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    assert_eq!(run.stderr, "would fix 0 findings in 0 files\n");
}

#[test]
fn diff_takes_no_format_and_no_fix() {
    let dir = project("diff-usage", &["s005-checkout-flow.yaml"]);
    let run = lint(&dir, &["--diff", "--format", "json", "."]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("`--diff` prints a diff"),
        "{}",
        run.stderr
    );
    let run = lint(&dir, &["--diff", "--fix", "."]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        text(&dir, "s005-checkout-flow.yaml"),
        fixture("s005-checkout-flow.yaml")
    );
}

#[test]
fn a_fix_that_would_not_load_is_not_applied() {
    let dir = project("revert", &[]);
    let machine = "machine: m\ninitial: ss\nstates:\n  s:\n    on:\n      GO: { target: [done, dne] }\n  done: { type: final }\n";
    std::fs::write(dir.join("m.yaml"), machine).unwrap();
    let run = lint(&dir, &["--fix", "m.yaml"]);
    // `dne` → `done` would give two targets that cannot be active together:
    // that fix is left out, `ss` → `s` is kept.
    assert_eq!(
        text(&dir, "m.yaml"),
        machine.replace("initial: ss", "initial: s")
    );
    assert_eq!(run.code, Some(1), "the unknown target is still an error");
    assert!(
        run.stderr.starts_with("warning: not applied: the fix of S001 at m.yaml:6:28 (replace `dne` with `done`) would make the file fail to load: E003 the targets `done` and `done` cannot be active together\n"),
        "{}",
        run.stderr
    );
    // The finding stays, no longer offered as fixable.
    assert!(run.stdout.contains("error[S001]: unknown target `dne`"));
    assert!(!run.stdout.contains("fixable with"), "{}", run.stdout);
    assert!(run.stdout.ends_with("fixed 1 finding in 1 file\n"));
}

#[test]
fn json_carries_each_fix_with_its_edits() {
    let dir = project(
        "json",
        &[
            "s001-checkout-typos.yaml",
            "i006-orders.chart",
            "i006-webhooks.yaml",
        ],
    );
    let run = lint(&dir, &["--format", "json", "."]);
    assert_eq!(run.code, Some(1));
    let report: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    let diagnostics = report["diagnostics"].as_array().unwrap();
    let typo = diagnostics
        .iter()
        .find(|d| d["code"] == "S001" && d["line"] == 15)
        .expect("the misspelt sibling");
    assert_eq!(
        typo["fix"],
        serde_json::json!({
            "applicability": "safe",
            "message": "replace `paymnt` with `payment`",
            "edits": [{
                "start": { "line": 15, "column": 17, "offset": typo["fix"]["edits"][0]["start"]["offset"] },
                "end": { "line": 15, "column": 23, "offset": typo["fix"]["edits"][0]["end"]["offset"] },
                "content": "payment"
            }]
        })
    );
    let start = typo["fix"]["edits"][0]["start"]["offset"].as_u64().unwrap() as usize;
    assert_eq!(
        &fixture("s001-checkout-typos.yaml")[start..start + 6],
        "paymnt"
    );
    let id = diagnostics
        .iter()
        .find(|d| d["code"] == "I006" && d["file"] == "./i006-orders.chart")
        .expect("the I006 finding");
    assert_eq!(id["fix"]["applicability"], "unsafe");
    assert_eq!(id["fix"]["edits"][0]["content"], " id paymentId");
    // A finding without a fix says so: two fields of `REFUND_ISSUED` look
    // like ids.
    let unfixable = diagnostics
        .iter()
        .find(|d| d["code"] == "I006" && d["message"].as_str().unwrap().contains("REFUND_ISSUED"))
        .expect("the REFUND_ISSUED finding");
    assert!(unfixable["fix"].is_null());
}

#[test]
fn sarif_fixes_are_valid_sarif() {
    let dir = project("sarif", &["s009-order-allows.yaml", "i004-orders.chart"]);
    let run = lint(&dir, &["--format", "sarif", "."]);
    let log: Value = serde_json::from_str(&run.stdout).expect("the log is JSON");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(manifest_dir().join("tests/data/sarif-schema-2.1.0.json"))
            .expect("the vendored schema is readable"),
    )
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    let results = log["runs"][0]["results"].as_array().unwrap();
    let removal = results
        .iter()
        .find(|r| r["ruleId"] == "S009")
        .expect("an S009 result");
    let replacement = &removal["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert!(
        replacement["insertedContent"].is_null(),
        "a removal inserts nothing"
    );
    assert_eq!(
        replacement["deletedRegion"]["startColumn"], 1,
        "whole lines go"
    );
    let guard = results
        .iter()
        .find(|r| r["ruleId"] == "I004")
        .expect("an I004 result");
    assert!(
        guard["fixes"][0]["description"]["text"]
            .as_str()
            .unwrap()
            .ends_with("(unsafe: review it before applying)")
    );
}

/// An XState source is fixed in place: the safe fixes with `--fix`, the
/// unsafe ones with `--unsafe-fixes` too, and `--format github` says which
/// findings a flag would fix.
#[test]
fn xstate_sources_are_fixed_in_place() {
    let dir = project("xstate", &["s005-cart.ts", "i006-payments.ts"]);
    let annotations = lint(&dir, &["--format", "github", "."]);
    assert!(
        annotations
            .stdout
            .contains("%0A[*] fixable with `--fix`: declare event `PAID`"),
        "{}",
        annotations.stdout
    );
    assert!(
        annotations
            .stdout
            .contains("%0Afixable with `--fix --unsafe-fixes`: add `id: paymentId`"),
        "{}",
        annotations.stdout
    );

    let run = lint(&dir, &["--fix", "."]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout.ends_with("fixed 3 findings in 1 file\n"),
        "{}",
        run.stdout
    );
    let cart = text(&dir, "s005-cart.ts");
    assert!(
        cart.contains("        'item.removed': {},\n        PAID: {},\n      },"),
        "{cart}"
    );
    assert_eq!(text(&dir, "i006-payments.ts"), fixture("i006-payments.ts"));
    // The fixed machine loads and has nothing left to declare.
    let check = idemchart_in(&dir, &["check", "s005-cart.ts"]);
    assert_eq!(check.code, Some(0), "{}", check.stdout);
    let again = lint(&dir, &["s005-cart.ts"]);
    assert!(!again.stdout.contains("[S005]"), "{}", again.stdout);

    let run = lint(&dir, &["--fix", "--unsafe-fixes", "i006-payments.ts"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        text(&dir, "i006-payments.ts").contains("id: 'refundId' },"),
        "{}",
        text(&dir, "i006-payments.ts")
    );
    assert!(!run.stdout.contains("[I006]"), "{}", run.stdout);
}

/// The facts of `idemchart.toml` count when an XState source is fixed: an
/// event declared there is not declared again in the file.
#[test]
fn xstate_fixes_read_the_project_settings() {
    let dir = project("xstate-toml", &["s005-cart.ts"]);
    std::fs::write(
        dir.join("idemchart.toml"),
        "[machines.cart]\nevents = { PAID = { id = \"paymentId\" } }\n",
    )
    .expect("the configuration");
    let diff = lint(&dir, &["--diff", "s005-cart.ts"]);
    assert_eq!(diff.code, Some(1), "{}", diff.stdout);
    assert!(diff.stdout.contains("+        ADD: {},"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("PAID"), "{}", diff.stdout);
    assert_eq!(text(&dir, "s005-cart.ts"), fixture("s005-cart.ts"));
}
