//! Any input that parses: parse → display → parse gives an equal query.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cardex::fuzzing::check_roundtrip(text);
    }
});
