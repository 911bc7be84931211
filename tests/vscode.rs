//! The VS Code extension (`editors/vscode`) compiles and packages into a
//! `.vsix` with `vsce`, the way it is published. It runs where npm is
//! present and `scripts/test` has installed the extension's pinned Node
//! packages (`npm ci`, from the committed lock file), so that `cargo test`
//! needs no network; elsewhere it skips, saying so.

use std::path::Path;
use std::process::Command;

#[test]
fn the_vscode_extension_packages_into_a_vsix() {
    let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode");
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("skipped: npm is not installed");
        return;
    }
    if !extension.join("node_modules/@vscode/vsce").is_dir() {
        eprintln!("skipped: run `npm ci` in editors/vscode first (scripts/test does)");
        return;
    }
    let vsix = std::env::temp_dir().join(format!("idemchart-{}.vsix", std::process::id()));
    let output = Command::new("npx")
        .args([
            "--no-install",
            "vsce",
            "package",
            "--skip-license",
            "--allow-missing-repository",
            "--out",
        ])
        .arg(&vsix)
        .current_dir(&extension)
        .output()
        .expect("npx runs");
    assert!(
        output.status.success(),
        "vsce package failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(&vsix).expect("the .vsix was written");
    let _ = std::fs::remove_file(&vsix);
    assert!(bytes.starts_with(b"PK"), "a .vsix is a zip archive");
    // A zip keeps its entries' names uncompressed.
    let has = |name: &str| bytes.windows(name.len()).any(|w| w == name.as_bytes());
    for entry in [
        "extension/package.json",
        "extension/out/extension.js",
        "extension/node_modules/vscode-languageclient/package.json",
    ] {
        assert!(has(entry), "the .vsix lacks {entry}");
    }
}
