//! The SCXML importer, with the check a machine file gets: any text imports
//! or gives diagnostics, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = idemchart::import::load_scxml(text);
});
