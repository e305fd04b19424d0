//! Any input: `webhook::verify` never panics and accepts nothing forged (see
//! `cardex::fuzzing::check_webhook_verify`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cardex::fuzzing::check_webhook_verify(text);
    }
});
