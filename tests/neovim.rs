//! A real editor on the language server: Debian's Neovim (0.7.2, with its
//! built-in LSP client) runs headless, opens a machine with a hazard,
//! waits for the diagnostic, applies its quick fix and writes the buffer;
//! the test checks the file. And the Neovim snippet of `docs/editors.md`,
//! as the page gives it, attaches to an XState source and an SCXML file.
//! Each skips, saying so, where `nvim` is missing (`scripts/test` installs
//! it).

use std::process::Command;
use std::time::Duration;

/// A running total in a state with a non-ASCII name and a Spanish comment
/// before the hazard, so that the UTF-16 positions Neovim uses are tested.
const MACHINE: &str = r#"machine: caja
context:
  cobrado: 0
events:
  PAGO: { id: pagoId, payload: { pagoId: string, importe: integer } }
initial: señal
states:
  señal:
    on:
      PAGO:
        actions:
          - assign: { cobrado: "context.cobrado + event.importe" } # añade el importe
"#;

#[test]
fn neovim_applies_the_quick_fix_of_a_hazard() {
    if Command::new("nvim").arg("--version").output().is_err() {
        eprintln!("skipped: `nvim` is not installed (scripts/test installs Debian's neovim)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("idemchart-neovim-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("caja.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/neovim/quickfix.lua");
    let child = headless_nvim(&dir)
        .args(["--clean", "-c"])
        .arg(format!("luafile {}", script.display()))
        .arg(&path)
        .env("IDEMCHART_BIN", env!("CARGO_BIN_EXE_idemchart"))
        .spawn()
        .expect("nvim starts");
    finish(child);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(
        fixed.contains("guard: \"!(event.pagoId in context.seenPago)\"")
            && fixed.contains("seenPago: \"context.seenPago + [event.pagoId]\"")
            && fixed.contains("  seenPago: []"),
        "the quick fix is not in the file:\n{fixed}"
    );
    // The fixed machine loads and no longer has the hazard.
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .arg("lint")
        .arg(&path)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(!report.contains("I004"), "{fixed}\n{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Neovim headless, its state and data under `dir`, its standard error
/// kept for `finish`.
fn headless_nvim(dir: &std::path::Path) -> Command {
    let mut nvim = Command::new("nvim");
    nvim.args(["--headless", "-n"])
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    nvim
}

/// Waits for Neovim to end, a minute at most (it never ends on its own if a
/// script hangs), and fails the test with its standard error if it failed.
fn finish(mut child: std::process::Child) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "nvim failed ({status}): {stderr}");
}

/// The Lua block of `docs/editors.md` for the installed Neovim: the first
/// (`vim.lsp.start`) from 0.8 on, the second (`start_client`) before.
fn documented_snippet() -> String {
    let version = Command::new("nvim").arg("--version").output().unwrap();
    let first_line = String::from_utf8_lossy(&version.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let minor: u32 = first_line
        .trim_start_matches("NVIM v")
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the version of `{first_line}`"));
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/editors.md"),
    )
    .unwrap();
    let blocks: Vec<&str> = page
        .split("```lua\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 2, "docs/editors.md has two Lua snippets");
    blocks[if minor >= 8 { 0 } else { 1 }].to_string()
}

#[test]
fn the_documented_snippet_attaches_to_xstate_and_scxml_files() {
    if Command::new("nvim").arg("--version").output().is_err() {
        eprintln!("skipped: `nvim` is not installed (scripts/test installs Debian's neovim)");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("idemchart-neovim-snippet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let init = dir.join("init.lua");
    std::fs::write(&init, documented_snippet()).unwrap();
    // The snippet starts `idemchart` from the PATH, as a user's does.
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_idemchart"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = root.join("tests/neovim/diagnostics.lua");
    for (file, expected) in [
        ("tests/xstate/fixtures/checkout.ts", "I004"),
        ("tests/scxml/order-approval.scxml", "S011"),
    ] {
        let name = std::path::Path::new(file).file_name().unwrap();
        let copy = dir.join(name);
        std::fs::copy(root.join(file), &copy).unwrap();
        let codes = dir.join(format!("{}.codes", name.to_string_lossy()));
        let child = headless_nvim(&dir)
            .args(["-i", "NONE", "-u"])
            .arg(&init)
            .arg("-c")
            .arg(format!("luafile {}", script.display()))
            .arg(&copy)
            .current_dir(&dir)
            .env("PATH", &path)
            .env("IDEMCHART_CODES", &codes)
            .env("IDEMCHART_EXPECT", expected)
            .env("XDG_CONFIG_HOME", &dir)
            .spawn()
            .expect("nvim starts");
        finish(child);
        let found = std::fs::read_to_string(&codes).unwrap_or_default();
        assert!(
            found.lines().any(|l| l.split(' ').next() == Some(expected)),
            "{file}: no {expected} among the diagnostics Neovim got: {found:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
