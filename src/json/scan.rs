//! Fast byte scans over JSON text: finding the next byte of a string that ends or escapes
//! it, eight bytes at a time, and splitting a file's top-level array into its elements'
//! texts without parsing them.
//!
//! The word-at-a-time tests are the classic "has a zero byte" bit tricks on `u64`: for a
//! word `w`, `(w - 0x01…01) & !w & 0x80…80` has the high bit of a byte set where `w`
//! has a zero byte, and possibly also in bytes *above* (later than) the first one, never
//! below it; so the lowest set bit always marks the first match exactly.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bits set in the bytes of `w` below `n` (exact up to the first one; `n` ≤ 128).
#[inline]
fn bytes_below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * n as u64) & !w & HIGHS
}

/// High bits set in the bytes of `w` equal to `b` (exact up to the first one).
#[inline]
fn bytes_equal(w: u64, b: u8) -> u64 {
    bytes_below(w ^ (ONES * b as u64), 1)
}

#[inline]
fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
    let chunk: [u8; 8] = bytes.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// Whether two byte strings are equal. Up to 16 bytes (most keys and many values) they
/// are compared in at most two overlapping word loads from each, rather than through a
/// `memcmp` call, which costs more than the compare itself at these lengths.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    match n {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// The position of the first `"` or `\` in `bytes` at or after `from`, or `bytes.len()`.
#[inline]
pub(crate) fn quote_or_backslash(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(w) = word_at(bytes, i) {
        let hits = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\\' {
        i += 1;
    }
    i.min(bytes.len())
}

/// The position of the first byte of `bytes` a JSON string literal must escape (`"`, `\`
/// or a control character), or `bytes.len()`.
#[inline]
pub(crate) fn needing_escape(bytes: &[u8]) -> usize {
    let mut i = 0;
    while let Some(w) = word_at(bytes, i) {
        let hits = bytes_equal(w, b'"') | bytes_equal(w, b'\\') | bytes_below(w, 0x20);
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && !needs_escape(bytes[i]) {
        i += 1;
    }
    i
}

/// Whether a JSON string literal must escape byte `b`: `"`, `\` or a control character.
#[inline]
pub(crate) fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The end of the string literal whose opening quote is at `open`: the position just
/// after its closing quote (or `bytes.len()` when it is not closed).
#[inline]
fn string_end(bytes: &[u8], open: usize) -> usize {
    let mut j = open + 1;
    loop {
        j = quote_or_backslash(bytes, j);
        match bytes.get(j) {
            Some(b'"') => return j + 1,
            Some(_) => j += 2,
            None => return bytes.len(),
        }
    }
}

/// The position of the first byte at or after `i` that is not JSON whitespace.
pub(crate) fn skip_whitespace(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// Splits the text of a JSON array into the texts of its elements, checking only the
/// array's own punctuation: `[`, elements separated by `,`, `]`, then nothing but
/// whitespace. Each element's extent is found by skipping strings and counting brackets;
/// the element texts are not validated here, so the caller must parse every one of them
/// fully. When every element parses on its own, the whole text is valid JSON; `None` says
/// the array's punctuation is broken, and a full parser should say where and why.
pub(crate) fn split_array(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let mut i = skip_whitespace(bytes, 0);
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_whitespace(bytes, i + 1);
    let mut elements = Vec::new();
    if bytes.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            let start = i;
            i = element_end(bytes, i)?;
            elements.push(text.get(start..i)?);
            i = skip_whitespace(bytes, i);
            match bytes.get(i) {
                Some(b',') => i = skip_whitespace(bytes, i + 1),
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_whitespace(bytes, i) == bytes.len()).then_some(elements)
}

/// The end of the value starting at `start` (not validated, see [`split_array`]).
fn element_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => Some(string_end(bytes, start)),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = start;
            while let Some(&b) = bytes.get(i) {
                if matches!(b, b',' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    break;
                }
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// Texts made of JSON's punctuation and a few scalars, mostly broken: the splitter
        /// agrees with serde_json on every one (`crate::fuzzing::check_split_array`).
        #[test]
        fn splitting_agrees_with_serde_json(
            parts in proptest::collection::vec(proptest::sample::select(&[
                "[", "]", "{", "}", "\"", "\\", ",", ":", " ", "\n", "1", "-2.5", "true",
                "null", "\"k\"", "\"v\\\"\"", "\"é\"", "x",
            ][..]), 0..16)
        ) {
            let body: String = parts.concat();
            crate::fuzzing::check_split_array(&body);
            crate::fuzzing::check_split_array(&format!("[{body}]"));
        }

        /// `same_bytes` is `==` at every length, around the word-size boundaries too.
        #[test]
        fn same_bytes_is_equality(a in proptest::collection::vec(0u8..3, 0..40), flip in 0usize..40) {
            let mut b = a.clone();
            prop_assert!(same_bytes(&a, &b));
            if flip < b.len() {
                b[flip] ^= 1;
                prop_assert!(!same_bytes(&a, &b));
            }
            b.push(0);
            prop_assert_eq!(same_bytes(&a[..], &b[..b.len() - 1]), a[..] == b[..b.len() - 1]);
            prop_assert!(!same_bytes(&a, &b));
        }

        /// The word and byte scans agree with a plain search, from every start.
        #[test]
        fn scans_agree_with_a_plain_search(
            s in proptest::collection::vec(proptest::sample::select(
                &[b'a', b'"', b'\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xe9][..]), 0..70)
        ) {
            for from in 0..=s.len() {
                let expected = (from..s.len())
                    .find(|&i| s[i] == b'"' || s[i] == b'\\')
                    .unwrap_or(s.len());
                prop_assert_eq!(quote_or_backslash(&s, from), expected);
            }
            let expected = (0..s.len()).find(|&i| needs_escape(s[i])).unwrap_or(s.len());
            prop_assert_eq!(needing_escape(&s), expected);
        }
    }

    /// The same answers as a byte-by-byte search, wherever the match falls in a word.
    #[test]
    fn word_scans_agree_with_byte_scans() {
        let samples: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"plain text without anything".to_vec(),
            b"abc\"def".to_vec(),
            b"abcdefgh\\ijk".to_vec(),
            b"abcdefghijklmno\"".to_vec(),
            b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ\\".to_vec(),
            b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ\x7f\x1f".to_vec(),
            [vec![b'x'; 31], vec![0x00], vec![b'"']].concat(),
            b"\x01abc".to_vec(),
            b"abcdefg\x1f\"".to_vec(),
            "Pok\u{e9}mon \u{30d4}\u{30ab}\"x".as_bytes().to_vec(),
            vec![0x7f, 0x80, 0xff, 0x20, 0x21, b'"'],
            vec![0xa2; 17],
        ];
        for s in &samples {
            for from in 0..=s.len() {
                let expected = (from..s.len())
                    .find(|&i| s[i] == b'"' || s[i] == b'\\')
                    .unwrap_or(s.len());
                assert_eq!(quote_or_backslash(s, from), expected, "{s:?} from {from}");
            }
            let expected = (0..s.len())
                .find(|&i| s[i] < 0x20 || s[i] == b'"' || s[i] == b'\\')
                .unwrap_or(s.len());
            assert_eq!(needing_escape(s), expected, "{s:?}");
        }
    }

    #[test]
    fn splits_an_array_into_element_texts() {
        let text = " [ {\"a\":\"x]}\\\"\"}, [1,[2]] ,\"s,]\" , 12.5e3,true,null ]\n";
        let elements = split_array(text).unwrap();
        assert_eq!(
            elements,
            [
                "{\"a\":\"x]}\\\"\"}",
                "[1,[2]]",
                "\"s,]\"",
                "12.5e3",
                "true",
                "null"
            ]
        );
        assert_eq!(split_array("[]"), Some(vec![]));
        assert_eq!(split_array(" [ ] "), Some(vec![]));
        // Not an array at all.
        assert_eq!(split_array("{}"), None);
        assert_eq!(split_array("1"), None);
    }

    #[test]
    fn refuses_broken_punctuation() {
        for text in [
            "",
            "{",
            "[",
            "[1",
            "[1,",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1]x",
            "[{\"a\":1]",
            "[\"abc",
            "[{\"a\":1}}",
            "[1]]",
        ] {
            // Either refused here, or split into elements a full parse refuses.
            match split_array(text) {
                None => {}
                Some(elements) => assert!(
                    elements
                        .iter()
                        .any(|e| serde_json::from_str::<serde_json::Value>(e).is_err()),
                    "{text:?} split into valid elements {elements:?}"
                ),
            }
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
    }
    /// On every file of the bundled snapshot, the same element texts as serde_json's own
    /// split into raw values.
    #[test]
    fn splits_the_bundled_files_as_serde_json_does() {
        let mut files = 0;
        for (path, text) in crate::json::bundled_json_files() {
            if !text.trim_start().starts_with('[') {
                continue;
            }
            let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(&text).unwrap();
            let expected: Vec<&str> = raws.iter().map(|r| r.get()).collect();
            assert_eq!(split_array(&text), Some(expected), "{}", path.display());
            files += 1;
        }
        assert!(files > 3, "only {files} files");
    }
}
