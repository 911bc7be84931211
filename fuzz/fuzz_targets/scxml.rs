//! The SCXML importer, with the check a machine file gets: any text imports
//! or gives diagnostics, never a panic, both strictly (`import --strict`,
//! `run`) and as written (`check`, `lint`: opaque parts with notes). A
//! machine that loads as written is linted too, since its host guards and
//! actions are what the linter must treat as unknown.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = idemchart::import::load_scxml(text);
    let file = idemchart::span::SourceFile::new("fuzz.scxml", text);
    if let (Ok(machine), _) = idemchart::import::load_scxml_as_written(&file) {
        let _ = idemchart::lint::lint(&machine);
    }
});
