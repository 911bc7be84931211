//! The DSL loader: any text loads or gives diagnostics, never a panic.
#![no_main]

use idemchart::syntax::{Syntax, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = parse(text, Syntax::Dsl);
});
