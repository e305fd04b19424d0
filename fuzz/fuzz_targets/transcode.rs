//! Any input: the loader's fast transcoder agrees with the serde_json one wherever it
//! does not give up (see `cardex::fuzzing::check_transcode`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cardex::fuzzing::check_transcode(text);
    }
});
