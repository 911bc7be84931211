//! The XState front-end on fuzzed JS/TS or JSON text: every machine the file
//! holds is lowered, and each one that loads is linted and started. The first
//! byte chooses the kind (even: a TypeScript file, odd: JSON), so that one
//! corpus covers both readers.
#![no_main]

use std::sync::Arc;

use idemchart::import::xstate::{self, Settings};
use idemchart::interp::{Actor, Chart};
use idemchart::span::SourceFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    // A path in a directory that does not exist: relative imports of the
    // fuzzed text find no sibling files rather than whatever lies around.
    let path = if kind % 2 == 0 {
        "/nonexistent/fuzz/machine.ts"
    } else {
        "/nonexistent/fuzz/machine.json"
    };
    let loaded = xstate::load(SourceFile::new(path, text), &Settings::default());
    for machine in loaded.machines {
        let Ok(machine) = machine.machine else {
            continue;
        };
        let _ = idemchart::lint::lint(&machine);
        let _ = Actor::new(Arc::new(Chart::new(machine)));
    }
});
