//! A real editor on the language server: Debian's Neovim (0.7.2, with its
//! built-in LSP client) runs headless, opens a machine with a hazard,
//! waits for the diagnostic, applies its quick fix and writes the buffer;
//! the test checks the file. It skips, saying so, where `nvim` is missing
//! (`scripts/test` installs it).

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
    let mut child = Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .arg(&path)
        .env("IDEMCHART_BIN", env!("CARGO_BIN_EXE_idemchart"))
        .env("XDG_STATE_HOME", &dir)
        .env("XDG_DATA_HOME", &dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nvim starts");
    // Neovim never ends on its own if the script hangs: stop it after a minute.
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
