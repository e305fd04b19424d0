//! Any input: `parse` never panics and never reports an error kind that was not designed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cardex::fuzzing::check_parse(text);
    }
});
