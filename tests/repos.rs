//! `idemchart lint .` at the root of fixtures that look like real
//! repositories (`tests/data/repos/*/`): what a team sees on its first run.
//! Each repository's whole output (exit code, standard output, standard
//! error) is one reviewed snapshot, `repos__NAME.snap`.

use std::path::Path;
use std::process::Command;

/// Runs `idemchart lint .` (and `extra` arguments) at the root of the
/// fixture repository `name`, as a user would, and returns its whole output
/// as one text.
fn lint_at_root(name: &str, extra: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/repos")
        .join(name);
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .arg("lint")
        .arg(".")
        .args(extra)
        .args(["--color", "never"])
        .current_dir(&root)
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary runs");
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

/// Every directory under `tests/data/repos/` is a repository whose
/// `lint .` is a snapshot; a new fixture needs only its directory (and its
/// snapshot, reviewed).
#[test]
fn lint_at_the_root_of_each_repository() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/repos");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/data/repos exists")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry
                .file_type()
                .ok()?
                .is_dir()
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no repository under {}", dir.display());
    let mut failed = Vec::new();
    for name in &names {
        let text = lint_at_root(name, &[]);
        let result = std::panic::catch_unwind(|| {
            insta::assert_snapshot!(name.as_str(), text);
        });
        if result.is_err() {
            failed.push(name.clone());
        }
    }
    assert!(failed.is_empty(), "snapshots differ: {failed:?}");
}
