//! Natural order: `2` < `10` < `10a` < `TG05`.

/// Tag bytes of the key encoding. The end of a string sorts before any run, and a digit
/// run before any other run.
const END: u8 = 0x00;
const DIGITS: u8 = 0x01;
const OTHER: u8 = 0x02;

/// A byte string whose plain (`memcmp`) order is the natural order of the text it was made
/// from. Sorting by keys is much faster than comparing strings run by run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NaturalKey(Box<[u8]>);

/// Builds the natural-order key of `s` (folded first, as the contract says).
///
/// Runs of ASCII digits compare by numeric value (equal values: the shorter run first),
/// other runs by code point, a digit run before another run, and a string that runs out
/// first comes first.
pub fn natural_key(s: &str) -> NaturalKey {
    let mut key = Vec::with_capacity(s.len() + 8);
    natural_key_into(s, &mut key);
    NaturalKey(key.into_boxed_slice())
}

/// Appends the bytes of [`natural_key`]`(s)` to `key` (for keys kept in one arena).
pub fn natural_key_into(s: &str, key: &mut Vec<u8>) {
    let folded = super::fold(s);
    let bytes = folded.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i].is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let run = &bytes[start..i];
            let significant = &run[run.iter().take_while(|&&b| b == b'0').count()..];
            key.push(DIGITS);
            key.extend_from_slice(&(significant.len() as u32).to_be_bytes());
            key.extend_from_slice(significant);
            key.extend_from_slice(&(run.len() as u32).to_be_bytes());
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_digit() {
                i += 1;
            }
            key.push(OTHER);
            for &b in &bytes[start..i] {
                // UTF-8 byte order is code point order; a NUL inside a run is escaped so
                // that the run terminator stays the smallest byte.
                if b == 0 {
                    key.extend_from_slice(&[0x00, 0xFF]);
                } else {
                    key.push(b);
                }
            }
            key.push(END);
        }
    }
    key.push(END);
}

/// Compares two strings in natural order (see [`natural_key`]).
#[cfg(test)]
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    natural_key(a).cmp(&natural_key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_by_key(|s| natural_key(s));
        v
    }

    #[test]
    fn contract_examples() {
        assert_eq!(
            sorted(vec!["TG05", "10a", "10", "2"]),
            ["2", "10", "10a", "TG05"]
        );
    }

    #[test]
    fn digit_runs_by_value_then_length() {
        assert_eq!(sorted(vec!["007", "7", "07", "6"]), ["6", "7", "07", "007"]);
        assert_eq!(sorted(vec!["a10", "a9", "a09b"]), ["a9", "a09b", "a10"]);
        assert_eq!(sorted(vec!["0", "00", ""]), ["", "0", "00"]);
    }

    #[test]
    fn digit_run_before_other_run_and_prefix_first() {
        assert_eq!(sorted(vec!["a", "1", "a1", "ab"]), ["1", "a", "a1", "ab"]);
        assert_eq!(sorted(vec!["x-2", "x-10", "x"]), ["x", "x-2", "x-10"]);
    }

    #[test]
    fn folded_before_comparing() {
        assert_eq!(natural_cmp("TG05", "tg05"), Ordering::Equal);
        assert_eq!(natural_cmp("É1", "e1"), Ordering::Equal);
    }

    #[test]
    fn nul_escape_keeps_prefix_rule() {
        assert_eq!(natural_cmp("a", "a\0"), Ordering::Less);
        assert_eq!(natural_cmp("a\0", "a\u{1}"), Ordering::Less);
        assert_eq!(natural_cmp("a\0", "a1"), Ordering::Greater);
    }

    #[test]
    fn huge_digit_runs_do_not_overflow() {
        let a = "9".repeat(40);
        let b = format!("1{}", "0".repeat(40));
        assert_eq!(natural_cmp(&a, &b), Ordering::Less);
    }

    #[test]
    fn natural_keys_sort_digit_runs_by_value() {
        let mut v = ["TG05", "10a", "2", "10", "1"];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(v, ["1", "2", "10", "10a", "TG05"]);
    }

    #[test]
    fn natural_cmp_orders_ids_naturally() {
        assert_eq!(natural_cmp("OP01-002", "op01-010"), Ordering::Less);
    }
}
