//! The CI integrations as documented: every `idemchart` command of the
//! workflows in `docs/ci.md` runs, as the workflow runs it, on a copy of
//! `machines/`, and prints what its consumer reads (SARIF for
//! `upload-sarif`, workflow commands for annotations); and
//! `.pre-commit-hooks.yaml` defines the hook the page tells users to name.

use crate::support::run as support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::manifest_dir;

/// The YAML code blocks of a markdown page, parsed.
fn yaml_blocks(markdown: &str) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```yaml" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let text = block.join("\n");
        let value: Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("a YAML block of docs/ci.md does not parse: {e}\n{text}"));
        blocks.push(value);
    }
    blocks
}

fn ci_page() -> Vec<Value> {
    let page = std::fs::read_to_string(manifest_dir().join("docs/ci.md")).expect("docs/ci.md");
    yaml_blocks(&page)
}

/// The workflows of the page: the blocks with `jobs`.
fn workflows() -> Vec<Value> {
    ci_page()
        .into_iter()
        .filter(|b| b.get("jobs").is_some())
        .collect()
}

/// Every step of every job of a workflow.
fn steps(workflow: &Value) -> Vec<&Value> {
    workflow["jobs"]
        .as_object()
        .expect("jobs is a mapping")
        .values()
        .flat_map(|job| job["steps"].as_array().expect("a job has steps"))
        .collect()
}

/// The lines of the workflow's `run` steps that call idemchart.
fn idemchart_commands(workflow: &Value) -> Vec<String> {
    steps(workflow)
        .into_iter()
        .filter_map(|step| step["run"].as_str())
        .flat_map(str::lines)
        .map(str::trim)
        .filter(|line| line.starts_with("idemchart "))
        .map(str::to_string)
        .collect()
}

/// A directory holding a copy of the shipped machines under `machines/`,
/// with the README's hazardous order among them so that there is something
/// to report, and an empty configuration: a repository that uses idemchart.
fn project(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ci_docs")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("the old project is removable");
    }
    std::fs::create_dir_all(dir.join("machines")).expect("the project directory");
    std::fs::write(dir.join("idemchart.toml"), "").expect("the configuration");
    for entry in std::fs::read_dir(manifest_dir().join("machines")).expect("machines/") {
        let path = entry.expect("an entry").path();
        std::fs::copy(&path, dir.join("machines").join(path.file_name().unwrap()))
            .expect("the machine copies");
    }
    std::fs::copy(
        manifest_dir().join("examples/lint/partial-payments.yaml"),
        dir.join("machines/partial-payments.yaml"),
    )
    .expect("the example copies");
    dir
}

/// Runs a command line with a shell, as a workflow's `run` does, with the
/// built binary first on the `PATH`.
fn shell(dir: &Path, command: &str) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_idemchart")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{command}: {stderr}");
    let code = output.status.code().expect("an exit code");
    (code, String::from_utf8(output.stdout).expect("UTF-8"))
}

#[test]
fn the_page_has_both_workflows() {
    let commands: Vec<String> = workflows().iter().flat_map(idemchart_commands).collect();
    assert!(
        commands.iter().any(|c| c.contains("--format sarif")),
        "{commands:?}"
    );
    assert!(
        commands.iter().any(|c| c.contains("--format github")),
        "{commands:?}"
    );
}

#[test]
fn the_sarif_workflow_writes_the_file_it_uploads() {
    for workflow in workflows() {
        let steps = steps(&workflow);
        let Some(upload) = steps.iter().find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        }) else {
            continue;
        };
        let sarif_file = upload["with"]["sarif_file"].as_str().expect("sarif_file");
        let command = idemchart_commands(&workflow)
            .into_iter()
            .find(|c| c.contains("--format sarif"))
            .expect("the workflow lints to SARIF");
        assert!(command.ends_with(&format!("> {sarif_file}")), "{command}");

        let dir = project("sarif");
        let (code, _) = shell(&dir, &command);
        assert!(code == 0 || code == 1, "{command}: exit {code}");
        let text = std::fs::read_to_string(dir.join(sarif_file)).expect("the SARIF file");
        let log: Value = serde_json::from_str(&text).expect("SARIF is JSON");
        assert_eq!(log["version"], "2.1.0");
        let runs = log["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["tool"]["driver"]["name"], "idemchart");
        // The upload step must run after a failing lint step too.
        let condition = upload["if"].as_str().unwrap_or("");
        assert!(
            condition.contains("failure()"),
            "upload-sarif runs when the lint fails: {condition:?}"
        );
        return;
    }
    panic!("no workflow uploads SARIF");
}

#[test]
fn the_annotation_workflow_prints_workflow_commands() {
    let command = workflows()
        .iter()
        .flat_map(idemchart_commands)
        .find(|c| c.contains("--format github"))
        .expect("a workflow annotates");
    let dir = project("github");
    let (code, stdout) = shell(&dir, &command);
    assert!(code == 0 || code == 1, "{command}: exit {code}");
    assert!(
        !stdout.is_empty(),
        "the counted charges have findings to annotate"
    );
    for line in stdout.lines() {
        assert!(
            line.starts_with("::warning ") || line.starts_with("::error "),
            "not a workflow command: {line}"
        );
    }
}

#[test]
fn the_pre_commit_hook_is_the_one_the_page_names() {
    let text = std::fs::read_to_string(manifest_dir().join(".pre-commit-hooks.yaml"))
        .expect(".pre-commit-hooks.yaml");
    let hooks: Value = serde_saphyr::from_str(&text).expect("the hooks file parses");
    let hooks = hooks.as_array().expect("a list of hooks");
    let hook = hooks
        .iter()
        .find(|h| h["id"] == "idemchart-lint")
        .expect("the idemchart-lint hook");
    assert_eq!(hook["entry"], "idemchart lint .");
    assert_eq!(hook["pass_filenames"], false);
    assert!(matches!(hook["language"].as_str(), Some("rust" | "system")));
    // The extensions the loader reads, XState sources among them, and no other.
    let files = hook["files"].as_str().expect("a files pattern");
    assert_eq!(files, "\\.(ya?ml|chart|scxml|json|[cm]?[jt]sx?)$");
    let extensions = [
        "yaml", "yml", "chart", "scxml", "json", "ts", "tsx", "mts", "cts",
    ]
    .into_iter()
    .chain(["js", "jsx", "mjs", "cjs"]);
    for extension in extensions {
        let name = format!("a.{extension}");
        assert!(
            idemchart::load::FileKind::of_path(Path::new(&name)).is_some(),
            "{name}"
        );
        let group = &files[3..files.len() - 2];
        let matched = group.split('|').any(|alternative| match alternative {
            "ya?ml" => ["yaml", "yml"].contains(&extension),
            "[cm]?[jt]sx?" => {
                let rest = extension.trim_start_matches(['c', 'm']);
                ["js", "ts", "jsx", "tsx"].contains(&rest)
            }
            other => other == extension,
        });
        assert!(matched, "the hook's pattern misses {name}");
    }
    assert!(idemchart::load::FileKind::of_path(Path::new("a.md")).is_none());

    let config = ci_page()
        .into_iter()
        .find(|b| b.get("repos").is_some())
        .expect("docs/ci.md shows a .pre-commit-config.yaml");
    let named: Vec<&Value> = config["repos"]
        .as_array()
        .expect("repos")
        .iter()
        .flat_map(|r| r["hooks"].as_array().expect("hooks"))
        .map(|h| &h["id"])
        .collect();
    assert_eq!(named, [&Value::from("idemchart-lint")]);

    // pre-commit runs the entry as it is, at the repository's root.
    let dir = project("pre-commit");
    let entry = hook["entry"].as_str().unwrap();
    let (code, _) = shell(&dir, entry);
    assert!(code == 0 || code == 1, "exit {code}");
}
