//! Any input: the loader's array splitter agrees with serde_json (see
//! `cardex::fuzzing::check_split_array`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cardex::fuzzing::check_split_array(text);
    }
});
