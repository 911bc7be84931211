//! The integration tests: one crate, each file of `tests/` a module of it, so
//! that they build and link once (`cargo test --test it MODULE::`). The store
//! contract's three files are crates of their own (`Cargo.toml`), since each
//! gives the contract's `Api` its own implementations for the same stores.

mod common;
mod support {
    pub mod lsp_client;
    #[path = "../../examples/support/machines.rs"]
    pub mod machines;
    pub mod run;
    pub mod serve_server;
    pub mod stores;
}

mod ci_docs;
mod cli;
mod cli_durable;
mod cli_fix;
mod cli_lint;
mod cli_migrate;
mod conformance;
mod diagram;
mod docs;
mod fix_props;
mod fixes;
mod fuzz_regressions;
mod history;
mod host;
mod inspector;
mod lints;
mod lsp;
mod lsp_scale;
mod machines;
mod migrate;
mod neovim;
mod repos;
mod roundtrip;
mod schema;
mod scxml;
mod serve;
mod serve_hostile;
mod snapshot_json;
mod snapshot_props;
mod unsettled;
mod versions;
mod vscode;
mod xstate;
mod xstate_diff;

/// With `autotests = false`, a file of `tests/` that no `mod` here names
/// would never be built: every one is named.
#[test]
fn every_test_file_is_a_module_of_this_crate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let declared = include_str!("it.rs");
    let manifest = include_str!("../Cargo.toml");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&root).expect("tests/ is readable") {
        let path = entry.expect("an entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs")
            && stem != "it"
            && !declared.contains(&format!("\nmod {stem};\n"))
            && !manifest.contains(&format!("path = \"tests/{stem}.rs\""))
        {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "neither tests/it.rs nor Cargo.toml names {missing:?}"
    );
}
