//! `idemchart lint .` at the root of fixtures that look like real
//! repositories (`tests/data/repos/*/`): what a team sees on its first run.
//! Each repository's whole output (exit code, standard output, standard
//! error) is one reviewed snapshot, `repos__NAME.snap`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The file that makes a directory a variant of another repository: its
/// first line names the repository, and the directory's other files are
/// laid over a copy of it (an `idemchart.toml` added, say), so that the
/// two do not repeat each other's files.
const VARIANT_OF: &str = "variant-of";

fn repos() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/repos")
}

/// Runs `idemchart lint .` at `root`, as a user would, and returns its
/// whole output as one text.
fn lint_at(root: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["lint", ".", "--color", "never"])
        .current_dir(root)
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

/// Copies the files of `from` into `to`, directories and all, but the
/// `VARIANT_OF` file.
fn copy_into(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("readable") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_into(&entry.path(), &target);
        } else if entry.file_name() != VARIANT_OF {
            std::fs::copy(entry.path(), &target).expect("copied");
        }
    }
}

/// The `lint .` of the fixture repository `name`: at its root, or, for a
/// variant, at the root of a copy of its base with its own files laid over.
fn lint_repository(name: &str) -> String {
    let dir = repos().join(name);
    let Ok(base) = std::fs::read_to_string(dir.join(VARIANT_OF)) else {
        return lint_at(&dir);
    };
    let root = std::env::temp_dir().join(format!("idemchart-repo-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    copy_into(&repos().join(base.trim()), &root);
    copy_into(&dir, &root);
    let text = lint_at(&root);
    std::fs::remove_dir_all(&root).expect("removed");
    text
}

/// Every directory under `tests/data/repos/` is a repository whose
/// `lint .` is a snapshot; a new fixture needs only its directory (and its
/// snapshot, reviewed).
#[test]
fn lint_at_the_root_of_each_repository() {
    let dir = repos();
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
        let text = lint_repository(name);
        let result = std::panic::catch_unwind(|| {
            insta::assert_snapshot!(name.as_str(), text);
        });
        if result.is_err() {
            failed.push(name.clone());
        }
    }
    assert!(failed.is_empty(), "snapshots differ: {failed:?}");
}
