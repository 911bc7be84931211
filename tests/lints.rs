//! The linter against the hazard corpus, the shipped machines, and the
//! fixtures in `tests/lints/` (each snapshotted with insta).

use std::path::{Path, PathBuf};

use idemchart::lint::{Options, lint, lint_with};
use idemchart::span::SourceFile;
use idemchart::{Diagnostic, Verdict};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(path: &Path) -> (SourceFile, idemchart::Machine) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SourceFile::new(path.display().to_string(), text);
    let machine = idemchart::load::load(&file).unwrap_or_else(|errors| {
        panic!(
            "{} does not load: {:?}",
            path.display(),
            errors.iter().map(|e| &e.message).collect::<Vec<_>>()
        )
    });
    (file, machine)
}

/// One line per finding, with its place, witness, replay verdict and labels.
fn describe(file: &SourceFile, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let (line, col) = file.line_col(d.span.start);
        out.push_str(&format!(
            "{} {} {line}:{col} {}\n",
            d.code, d.name, d.message
        ));
        if !d.witness.is_empty() || d.verdict.is_some() {
            out.push_str(&format!(
                "  witness: [{}] confirmed: {}\n",
                d.witness
                    .iter()
                    .map(|s| format!("\"{s}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
                match Verdict::confirmed(d.verdict) {
                    Some(c) => c.to_string(),
                    None => "none".into(),
                }
            ));
        }
        if let Some(replay) = &d.replay {
            out.push_str(&format!("  replay: {replay}\n"));
        }
        for label in &d.labels {
            let (line, col) = file.line_col(label.span.start);
            out.push_str(&format!("  label {line}:{col} {}\n", label.message));
        }
    }
    out
}

fn files(dir: &str, extensions: &[&str]) -> Vec<PathBuf> {
    let dir = root().join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
        })
        .collect();
    files.sort();
    files
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<&'static str> {
    diagnostics.iter().map(|d| d.code).collect()
}

/// Every machine of the hazard corpus gets every `must` code and no
/// `must_not` code of `expected.json`.
#[test]
fn hazard_corpus_meets_its_expectations() {
    let dir = root().join("tests/data/hazards");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("expected.json is JSON");
    let expected = expected.as_object().expect("an object");
    let on_disk = files("tests/data/hazards", &["yaml", "yml", "chart"]);
    assert_eq!(
        on_disk.len(),
        expected.len(),
        "every file has its expectations"
    );
    let mut failures = Vec::new();
    for (name, expectation) in expected {
        let path = dir.join(name);
        let (file, machine) = load(&path);
        let diagnostics = lint(&machine);
        let found = codes(&diagnostics);
        let list = |key: &str| -> Vec<&str> {
            expectation[key]
                .as_array()
                .expect("a list of codes")
                .iter()
                .map(|c| c.as_str().expect("a code"))
                .collect()
        };
        for code in list("must") {
            if !found.contains(&code) {
                failures.push(format!(
                    "{name}: {code} missing\n{}",
                    describe(&file, &diagnostics)
                ));
            }
        }
        for code in list("must_not") {
            if found.contains(&code) {
                failures.push(format!(
                    "{name}: {code} reported\n{}",
                    describe(&file, &diagnostics)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The shipped machines and the spec's order are clean.
#[test]
fn shipped_machines_are_clean() {
    let mut paths = files("machines", &["yaml", "yml", "chart"]);
    paths.push(root().join("tests/data/spec/pedido.yaml"));
    paths.push(root().join("tests/data/spec/pedido.chart"));
    for path in paths {
        let (file, machine) = load(&path);
        let diagnostics = lint(&machine);
        assert!(
            diagnostics.is_empty(),
            "{}:\n{}",
            path.display(),
            describe(&file, &diagnostics)
        );
    }
}

/// The spec's `lampara` shows its deliberate findings, the same in both
/// syntaxes: the PULSAR toggle (I001), the unreachable `panel` (S002), and
/// the fault cycle on which a late FALLO or REPARADA is applied again (I003).
/// Its `allow` of `reentry-reruns-actions` is in use.
#[test]
fn lampara_shows_its_deliberate_findings() {
    let mut seen = Vec::new();
    for name in ["lampara.yaml", "lampara.chart"] {
        let (_, machine) = load(&root().join("tests/data/spec").join(name));
        let diagnostics = lint(&machine);
        let summary: Vec<(&str, Vec<String>)> = diagnostics
            .iter()
            .map(|d| (d.code, d.witness.clone()))
            .collect();
        seen.push(summary);
    }
    assert_eq!(seen[0], seen[1], "both syntaxes lint alike");
    let codes: Vec<&str> = seen[0].iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, ["I003", "I001", "I001", "I003", "S002"]);
    assert!(seen[0].contains(&("I001", vec!["PULSAR".into(), "PULSAR*".into()])));
}

/// Each fixture in `tests/lints/` with its findings: code, place, message,
/// witness, replay verdict and labels. Refuted findings are shown too
/// (`confirmed: false`, with what refuted them): `lint` does not report them.
#[test]
fn fixtures() {
    insta::glob!("lints/*.{yaml,chart}", |path| {
        let (file, machine) = load(path);
        let diagnostics = lint_with(&machine, &Options { show_refuted: true });
        insta::assert_snapshot!(describe(&file, &diagnostics));
    });
}

/// No finding that `lint` reports, in the corpus or the fixtures, carries a
/// witness that its replay refutes.
#[test]
fn reported_findings_are_never_refuted() {
    let mut paths = files("tests/data/hazards", &["yaml", "yml", "chart"]);
    paths.extend(files("tests/lints", &["yaml", "chart"]));
    for path in paths {
        let (file, machine) = load(&path);
        let diagnostics = lint(&machine);
        let refuted: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| d.verdict == Some(Verdict::Refuted))
            .collect();
        assert!(
            refuted.is_empty(),
            "{}:\n{}",
            path.display(),
            describe(&file, &diagnostics)
        );
    }
}

/// Linting is deterministic: the same machine gives the same findings.
#[test]
fn findings_are_deterministic() {
    for path in files("tests/lints", &["yaml", "chart"]) {
        let (_, machine) = load(&path);
        assert_eq!(lint(&machine), lint(&machine), "{}", path.display());
    }
}

/// The README's first command lints `examples/lint/`: the running total
/// that a redelivered charge adds to twice is reported and confirmed by
/// replay, and the same order keeping the ids it has counted is clean.
#[test]
fn the_readme_pair_shows_the_hazard_and_its_fix() {
    let (file, before) = load(&root().join("examples/lint/partial-payments.yaml"));
    let found = lint(&before);
    let i004: Vec<&Diagnostic> = found.iter().filter(|d| d.code == "I004").collect();
    assert_eq!(i004.len(), 1, "{}", describe(&file, &found));
    assert_eq!(i004[0].verdict, Some(Verdict::Confirmed));
    assert_eq!(i004[0].witness, ["PARTIAL_PAYMENT", "PARTIAL_PAYMENT*"]);
    assert!(
        i004[0]
            .help
            .as_deref()
            .is_some_and(|h| h.contains("event.paymentId"))
    );

    let (file, after) = load(&root().join("examples/lint/partial-payments-deduplicated.yaml"));
    let found = lint(&after);
    assert!(found.is_empty(), "{}", describe(&file, &found));
}
