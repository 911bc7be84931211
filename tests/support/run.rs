//! Running the built `idemchart` binary as a user would, for the CLI tests
//! (`#[path]`-included, so each test crate gets its own copy).
//!
//! `idemchart` runs in the crate's directory with relative paths, so that
//! the paths in messages (and so the snapshots) are the same on any checkout;
//! `idemchart_in` runs in a directory of the test's own, for commands that
//! write files.

// Each test crate that includes this file uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// What one run of the binary gave.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `idemchart ARGS` in the crate's directory; a panic of the binary
/// fails the test whatever its exit code.
#[track_caller]
pub fn idemchart(args: &[&str]) -> Run {
    idemchart_in(manifest_dir(), args)
}

/// Runs `idemchart ARGS` in `dir`.
#[track_caller]
pub fn idemchart_in(dir: &Path, args: &[&str]) -> Run {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot start idemchart: {e}"));
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "idemchart {args:?} panicked:\n{}",
        run.stderr
    );
    run
}
