//! The store-string parser alone: it reads the string without opening a
//! store or connecting anywhere.
#![no_main]

use idemchart::store::StoreAddress;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match StoreAddress::parse(text) {
        // What the parser hands on is a part of the text it was given.
        Ok(StoreAddress::Sqlite(rest)) | Ok(StoreAddress::Postgres(rest)) => {
            assert!(text.ends_with(rest) && !rest.is_empty());
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
