//! The properties the fuzz targets check, shared with the stable test that replays the
//! committed seeds (`tests/fuzz_seeds.rs`), so a seed is a regression test on stable.
//! Not part of the supported API.

use crate::query::{parse, parse_with_max_len, ParseErrorKind};

/// `parse` on any text: no panic, and no error kind that was not designed (`Internal`);
/// every error renders, with its place inside the query.
///
/// # Panics
///
/// When a property fails: that is the finding.
pub fn check_parse(text: &str) {
    match parse(text) {
        Ok(query) => {
            let _ = query.to_string();
        }
        Err(err) => {
            assert_ne!(
                err.kind(),
                &ParseErrorKind::Internal,
                "internal error for {text:?}"
            );
            assert!(
                err.offset() <= text.len(),
                "offset past the end for {text:?}"
            );
            assert!(
                err.span().end <= text.len().max(err.offset()),
                "span past the end for {text:?}"
            );
            let _ = err.to_string();
            let _ = err.column();
        }
    }
}

/// Parse, display, parse again: the two trees are equal, and displaying again gives the
/// same text. The display is re-parsed without the length limit: spelling `AND` out can
/// take a query near the limit past it.
///
/// # Panics
///
/// When a property fails.
pub fn check_roundtrip(text: &str) {
    let Ok(first) = parse(text) else {
        return;
    };
    let shown = first.to_string();
    let again = parse_with_max_len(&shown, usize::MAX)
        .unwrap_or_else(|e| panic!("{text:?} displays as {shown:?}, which does not parse:\n{e}"));
    assert_eq!(first, again, "expected the initially parsed query to equal the query after printing and re-parsing: {text:?} → {shown:?}");
    assert_eq!(
        shown,
        again.to_string(),
        "display is not stable for {text:?}"
    );
}

/// The loader's array splitter on any text agrees with serde_json: a JSON array is split
/// into exactly the element texts serde_json finds; a text that is not one is either
/// refused, or split into elements of which at least one does not parse (the loader
/// parses every element, so it refuses the file either way).
///
/// # Panics
///
/// When a property fails: that is the finding.
pub fn check_split_array(text: &str) {
    use serde_json::value::RawValue;
    let split = crate::json::scan::split_array(text);
    let parsed: Result<Vec<&RawValue>, _> = serde_json::from_str(text);
    match (split, parsed) {
        (Some(elements), Ok(raws)) => {
            let expected: Vec<&str> = raws.iter().map(|r| r.get()).collect();
            assert_eq!(elements, expected, "split differently: {text:?}");
        }
        (None, Ok(_)) => panic!("a valid array refused: {text:?}"),
        (Some(elements), Err(e)) => {
            let refused = elements
                .iter()
                .any(|element| serde_json::from_str::<serde_json::Value>(element).is_err());
            // The whole text nests one level deeper than its elements.
            let too_deep = e.to_string().contains("recursion limit");
            assert!(
                refused || too_deep,
                "an invalid array split into valid elements: {text:?}"
            );
        }
        (None, Err(_)) => {}
    }
}

/// The loader's transcoder on any text: where its fast hand-written path does not give
/// up, it writes the same compact JSON and notes the same layout as the serde_json path
/// (the reference), and never accepts a text serde_json refuses.
///
/// # Panics
///
/// When a property fails: that is the finding.
pub fn check_transcode(text: &str) {
    crate::json::transcode::check_paths_agree(text);
}

/// `webhook::verify` on any input (the first line is the header, the rest the body): no
/// panic; an accepted delivery carries, among its `v1=` values, exactly the signature
/// [`crate::webhook::sign`] makes for its timestamp and body (nothing forged passes); and a
/// body signed afresh with the input's own bytes always verifies.
///
/// # Panics
///
/// When a property fails: that is the finding.
#[cfg(feature = "webhook")]
pub fn check_webhook_verify(text: &str) {
    use crate::webhook::{sign, verify, DEFAULT_TOLERANCE};
    use std::time::{Duration, UNIX_EPOCH};
    const SECRET: &str = "whsec_fuzz_0123456789abcdef";
    let (header, body) = text.split_once('\n').unwrap_or((text, ""));
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    if let Ok(t) = verify(header, body.as_bytes(), SECRET, now, DEFAULT_TOLERANCE) {
        let t_text = header
            .split(',')
            .find_map(|part| part.trim().strip_prefix("t="))
            .expect("an accepted header has t=");
        assert_eq!(t_text.parse::<u64>().ok(), Some(t));
        // The expected signature over the digits as written (padding included).
        let expected = sign(SECRET, t, body.as_bytes());
        let expected_v1 = expected.split_once(",v1=").expect("sign's shape").1;
        let padded_ok = t_text == t.to_string();
        assert!(
            !padded_ok
                || header
                    .split(',')
                    .filter_map(|part| part.trim().strip_prefix("v1="))
                    // Hex digits in either case are the same bytes.
                    .any(|v1| v1.eq_ignore_ascii_case(expected_v1)),
            "accepted without the right signature: {header:?}"
        );
    }
    // Whatever the body, a fresh signature of it verifies, and a wrong secret does not.
    let t = 1_800_000_000 - (text.len() as u64 % 300);
    let header = sign(SECRET, t, text.as_bytes());
    assert_eq!(
        verify(&header, text.as_bytes(), SECRET, now, DEFAULT_TOLERANCE),
        Ok(t)
    );
    assert!(verify(
        &header,
        text.as_bytes(),
        "whsec_other_0123456789ab",
        now,
        DEFAULT_TOLERANCE
    )
    .is_err());
}
