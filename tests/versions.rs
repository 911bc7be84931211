//! The breaking-change lints (M codes) on the fixture pairs of
//! `tests/versions/NAME/`: `old.yaml`, the machine the stored processes
//! started under, `new.yaml`, the change, and `fixed.yaml`, the change done
//! so that no stored process breaks (`.chart` for a triple in the DSL). Each pair's findings are snapshotted,
//! each `new.yaml` has a finding of the code its name starts with, each
//! `fixed.yaml` lints clean against `old.yaml`, and where the findings carry
//! fixes, applying them gives `fixed.yaml` exactly. The CLI's `--baseline`
//! (a file and a git revision) and `diff` run the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use idemchart::lint::{changes, lint_change};
use idemchart::span::SourceFile;
use idemchart::{Diagnostic, Machine};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &Path) -> SourceFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // Named from the repository root, as snapshots print it.
    let shown = path.strip_prefix(MANIFEST_DIR).unwrap_or(path);
    SourceFile::new(shown.display().to_string(), text)
}

fn load(file: &SourceFile) -> Machine {
    idemchart::load::load(file).unwrap_or_else(|errors| {
        panic!(
            "{} does not load: {:?}",
            file.path,
            errors.iter().map(|e| &e.message).collect::<Vec<_>>()
        )
    })
}

/// One block per finding: code, place, message, witness, help and fix.
fn describe(file: &SourceFile, found: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in found {
        let (line, col) = file.line_col(d.span.start);
        out.push_str(&format!(
            "{} {} {line}:{col} {}\n",
            d.code, d.name, d.message
        ));
        out.push_str(&format!("  witness: [{}]\n", d.witness.join(", ")));
        if let Some(help) = &d.help {
            out.push_str(&format!("  help: {help}\n"));
        }
        if let Some(fix) = &d.fix {
            out.push_str(&format!(
                "  fix ({:?}): {}\n",
                fix.applicability, fix.message
            ));
        }
    }
    out
}

fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(MANIFEST_DIR).join("tests/versions");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/versions")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("old.yaml").is_file() || p.join("old.chart").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_m_lint_has_a_fixture() {
    let names: Vec<String> = fixture_dirs()
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().to_uppercase())
        .collect();
    for lint in idemchart::lint::Lint::ALL
        .iter()
        .filter(|l| l.compares_versions())
    {
        assert!(
            names.iter().any(|n| n.starts_with(lint.code())),
            "no fixture under tests/versions/ for {}",
            lint.code()
        );
    }
}

#[test]
fn fixtures() {
    for dir in fixture_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let code = name[..4].to_uppercase();
        // Each triple is in one syntax, YAML or the DSL.
        let ext = if dir.join("old.chart").is_file() {
            "chart"
        } else {
            "yaml"
        };
        let old_file = read(&dir.join(format!("old.{ext}")));
        let old = load(&old_file);
        let new_file = read(&dir.join(format!("new.{ext}")));
        let new = load(&new_file);
        let found = lint_change(&old, &new, Some(&new_file));
        assert!(
            found.iter().any(|d| d.code == code),
            "{name}: no {code}\n{}",
            describe(&new_file, &found)
        );
        let mut snapshot = describe(&new_file, &found);

        let fixed_file = read(&dir.join(format!("fixed.{ext}")));
        let fixed = load(&fixed_file);
        let left = lint_change(&old, &fixed, Some(&fixed_file));
        assert!(
            left.is_empty(),
            "{name}: fixed.yaml is not clean against old.yaml\n{}",
            describe(&fixed_file, &left)
        );

        if found.iter().any(|d| d.fix.is_some()) {
            let outcome =
                idemchart::fix::fix_file(&new_file, true, |f, m| lint_change(&old, m, Some(f)));
            let mut unfixed: Vec<&str> = found
                .iter()
                .filter(|d| d.fix.is_none())
                .map(|d| d.message.as_str())
                .collect();
            let mut left: Vec<&str> = outcome
                .diagnostics
                .iter()
                .map(|d| d.message.as_str())
                .collect();
            unfixed.sort();
            left.sort();
            assert_eq!(
                left, unfixed,
                "{name}: the fixes remove the findings that carry them"
            );
            if unfixed.is_empty() {
                assert_eq!(
                    outcome.text, fixed_file.text,
                    "{name}: the fixes give fixed.yaml"
                );
                snapshot.push_str(&format!("fixes applied: fixed.{ext}\n"));
            } else {
                snapshot.push_str(&format!("fixes applied:\n{}", outcome.text));
            }
        }
        insta::assert_snapshot!(name, snapshot);
    }
}

/// `idemchart diff OLD NEW` lists the changes, the version first.
#[test]
fn diff_lists_the_changes() {
    let dir = Path::new(MANIFEST_DIR).join("tests/versions/m002-context-field-changed");
    let old = load(&read(&dir.join("old.yaml")));
    let new = load(&read(&dir.join("new.yaml")));
    let listed: Vec<String> = changes(&old, &new).iter().map(|c| c.to_string()).collect();
    assert_eq!(
        listed,
        [
            "~ version: version 1 → version 2",
            "~ context `status`: int → string",
            "- context `legacy`",
            "+ context `note`",
            "~ transitions (targets, guards or actions)",
        ]
    );
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args([
            "diff",
            "tests/versions/m001-renamed-state/old.yaml",
            "tests/versions/m001-renamed-state/new.yaml",
        ])
        .current_dir(MANIFEST_DIR)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(output.stdout).expect("UTF-8"));
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// `lint --baseline HEAD~1 FILE` in a repository of its own: the machine
/// committed twice, the second commit renames a state, and the working
/// tree's version is compared with the one before it.
#[test]
fn baseline_at_a_git_revision() {
    let root = std::env::temp_dir().join(format!("idemchart-baseline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("a temporary directory");
    let dir = root.as_path();
    let fixture = Path::new(MANIFEST_DIR).join("tests/versions/m001-renamed-state");
    git(dir, &["init", "-q"]);
    std::fs::create_dir(dir.join("machines")).unwrap();
    let file = dir.join("machines/order.yaml");
    std::fs::copy(fixture.join("old.yaml"), &file).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "version 1"]);
    std::fs::write(
        dir.join("README"),
        "a second commit, so that HEAD~1 is version 1\n",
    )
    .unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "readme"]);
    std::fs::copy(fixture.join("new.yaml"), &file).unwrap();
    std::fs::write(dir.join("idemchart.toml"), "").unwrap();

    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_idemchart"))
            .args(args)
            .current_dir(dir)
            .output()
            .expect("the binary runs")
    };
    let output = run(&[
        "lint",
        "--format",
        "json",
        "--baseline",
        "HEAD~1",
        "machines/order.yaml",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let codes: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"M001"), "{report}");
    assert_eq!(output.status.code(), Some(1), "M001 is an error");
    let m001 = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "M001")
        .unwrap();
    assert_eq!(m001["witness"], serde_json::json!([]));

    // HEAD still holds version 1: the working tree's change is compared
    // with it; once version 2 is committed, HEAD is the file itself.
    let output = run(&["lint", "--baseline", "HEAD", "machines/order.yaml"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("M001"), "{text}");
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "version 2"]);
    let output = run(&[
        "lint",
        "--format",
        "json",
        "--baseline",
        "HEAD",
        "machines/order.yaml",
    ]);
    assert_no_breaking_change(&output.stdout);

    // A file new since the revision has no stored process to break.
    std::fs::copy(fixture.join("new.yaml"), dir.join("machines/new.yaml")).unwrap();
    let output = run(&["lint", "--baseline", "HEAD", "machines/new.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!String::from_utf8(output.stdout).unwrap().contains("M00"));

    // A revision git does not know is a usage error, with git's words.
    let output = run(&["lint", "--baseline", "no-such-rev", "machines/order.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8(output.stderr).unwrap();
    assert!(said.contains("--baseline no-such-rev"), "{said}");

    // A baseline that does not load says where.
    std::fs::write(dir.join("broken.yaml"), "machine: order\nstates: [\n").unwrap();
    let output = run(&["lint", "--baseline", "broken.yaml", "machines/order.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8(output.stderr).unwrap();
    assert!(
        said.contains("the baseline broken.yaml does not load"),
        "{said}"
    );
    assert!(said.contains("broken.yaml:"), "{said}");
    std::fs::remove_dir_all(&root).ok();
}

/// A baseline file compares one machine file; `explain` documents the M
/// lints; a machine compared with itself breaks nothing.
#[test]
fn baseline_usage() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_idemchart"))
            .args(args)
            .current_dir(MANIFEST_DIR)
            .output()
            .expect("the binary runs")
    };
    let old = "tests/versions/m001-renamed-state/old.yaml";
    let output = run(&[
        "lint",
        "--baseline",
        old,
        "tests/versions/m001-renamed-state",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8(output.stderr).unwrap();
    assert!(said.contains("compare it with one machine file"), "{said}");

    let output = run(&["explain", "M005"]);
    let doc = String::from_utf8(output.stdout).unwrap();
    assert!(
        doc.starts_with("M005 pending-timer-removed (deny by default)"),
        "{doc}"
    );
    assert!(doc.contains("### Use instead"), "{doc}");

    // Compared with itself, a machine breaks nothing.
    let output = run(&["lint", "--format", "json", "--baseline", old, old]);
    assert_no_breaking_change(&output.stdout);
}

/// Asserts that a JSON report has no finding of the M family.
fn assert_no_breaking_change(stdout: &[u8]) {
    let report: serde_json::Value = serde_json::from_slice(stdout).expect("JSON");
    assert!(
        report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| !d["code"].as_str().unwrap().starts_with('M')),
        "{report}"
    );
}
