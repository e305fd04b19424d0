//! Replays every committed fuzz seed (`fuzz/seeds/<target>/`) through the fuzz targets'
//! checks, on stable Rust.

use std::fs;
use std::path::Path;

fn replay(target: &str, check: fn(&str)) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut count = 0;
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let bytes = fs::read(&path).unwrap();
        // The fuzz targets skip input that is not UTF-8; so does the replay.
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let result = std::panic::catch_unwind(|| check(text));
            assert!(
                result.is_ok(),
                "seed {} fails the `{target}` target",
                path.display()
            );
        }
        count += 1;
    }
    count
}

#[test]
fn parse_seeds() {
    assert!(replay("parse", cardex::fuzzing::check_parse) >= 50);
}

#[test]
fn roundtrip_seeds() {
    assert!(replay("roundtrip", cardex::fuzzing::check_roundtrip) >= 50);
}

#[test]
fn split_array_seeds() {
    assert!(replay("split_array", cardex::fuzzing::check_split_array) >= 30);
}

#[test]
fn transcode_seeds() {
    assert!(replay("transcode", cardex::fuzzing::check_transcode) >= 40);
}

#[cfg(feature = "webhook")]
#[test]
fn webhook_verify_seeds() {
    assert!(replay("webhook_verify", cardex::fuzzing::check_webhook_verify) >= 25);
}
