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

/// The repositories under `tests/data/repos/`, sorted by name.
fn repository_names() -> Vec<String> {
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
    names
}

/// Every directory under `tests/data/repos/` is a repository whose
/// `lint .` is a snapshot; a new fixture needs only its directory (and its
/// snapshot, reviewed).
#[test]
fn lint_at_the_root_of_each_repository() {
    let names = repository_names();
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

/// The machines idemchart reads from the XState sources (scripts and JSON
/// configs) of the repository at `root`: `(file relative to root, name)`.
/// A machine made at run time (`createMachine(config)` of a parameter),
/// which idemchart says it cannot read, is left out: XState runs it with
/// whatever config the program gives it.
fn machines_idemchart_reads(root: &Path) -> Vec<(String, String)> {
    use idemchart::diagnostic::Severity;
    use idemchart::load::{FileKind, Resolver, discover, load_candidate};

    let settings = idemchart::import::xstate::Settings::default();
    let mut resolver = Resolver::default();
    let mut found = Vec::new();
    for candidate in discover(&[root.to_path_buf()], |_| true).expect("a walk") {
        if !matches!(
            FileKind::of_path(&candidate.path),
            Some(FileKind::Xstate(_))
        ) {
            continue;
        }
        let Some(loaded) = load_candidate(&candidate, &settings, &mut resolver).expect("readable")
        else {
            continue;
        };
        let file = candidate
            .path
            .strip_prefix(root)
            .expect("inside the repository")
            .to_string_lossy()
            .into_owned();
        for machine in loaded.machines {
            let not_read = matches!(&machine.machine,
                Err(notes) if notes.iter().all(|d| d.severity == Severity::Note));
            if !not_read {
                found.push((file.clone(), machine.name));
            }
        }
    }
    found
}

/// Every machine idemchart reads in a fixture repository is valid XState,
/// and every machine XState runs there idemchart reads:
/// `tests/xstate/repos.mjs` bundles each module of the repository that
/// imports XState (as the repository's build would resolve it), imports
/// it and starts every machine it exports, and makes and starts a machine
/// of each JSON config; each machine idemchart reads from an XState source
/// is one that XState 5.33.3 started, from the same file and with the same
/// id, and the other way round (so a fixture's machines have ids, are
/// exported, and are not re-exported by modules that import XState). A
/// module that imports nothing from XState (another library's
/// `createMachine`) is not run. Needs Node and `npm ci` in `tests/xstate`;
/// without them it says why and passes.
#[test]
fn every_machine_of_every_repository_runs_in_xstate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xstate");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success())
        || !dir.join("node_modules/xstate").is_dir()
        || !dir.join("node_modules/esbuild").is_dir()
    {
        eprintln!("skipped: needs `node` and `npm ci` in {}", dir.display());
        return;
    }
    // A variant holds the machines of its base.
    let roots: Vec<PathBuf> = repository_names()
        .iter()
        .map(|name| repos().join(name))
        .filter(|root| !root.join(VARIANT_OF).is_file())
        .collect();
    let output = Command::new("node")
        .arg("repos.mjs")
        .args(&roots)
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "repos.mjs failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    let report: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let mut problems = Vec::new();
    for (root, repository) in roots.iter().zip(report.as_array().expect("a list")) {
        let name = root.file_name().expect("a name").to_string_lossy();
        let files = repository["files"].as_array().expect("files");
        let mut started = 0;
        for file in files {
            if let Some(error) = file["error"].as_str() {
                problems.push(format!("{name}/{}: XState: {error}", file["file"]));
            }
            started += file["machines"].as_array().map_or(0, Vec::len);
        }
        if started == 0 {
            problems.push(format!("{name}: XState started no machine"));
        }
        let read = machines_idemchart_reads(root);
        for (file, machine) in &read {
            let ran = files.iter().any(|f| {
                f["file"] == file.as_str()
                    && f["machines"]
                        .as_array()
                        .is_some_and(|ids| ids.iter().any(|id| id == machine.as_str()))
            });
            if !ran {
                problems.push(format!(
                    "{name}/{file}: idemchart reads machine `{machine}`, which XState did not start from that file (is it exported?)"
                ));
            }
        }
        for f in files {
            let file = f["file"].as_str().expect("a path");
            for id in f["machines"].as_array().into_iter().flatten() {
                let id = id.as_str().expect("an id");
                if !read.iter().any(|(g, m)| g == file && m == id) {
                    problems.push(format!(
                        "{name}/{file}: XState started machine `{id}`, which idemchart does not read there"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
