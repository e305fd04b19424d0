//! Compact JSON output, and the marks that let a request leave parts of a card out.
//!
//! A card is written once, whole (by [`super::transcode`]). Every `prices` and
//! `pop_reports` member of a `variants[]` object is marked with a [`Strip`];
//! [`copy_without`] then copies the card leaving out the marked members a request did not
//! `include`, fixing the commas, without parsing anything.

use std::io::Write as _;

use super::scan::{needing_escape, needs_escape};

/// Which optional part of a card a [`Strip`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Part {
    /// A variant's `prices`.
    Prices = 1,
    /// A variant's `pop_reports`.
    PopReports = 2,
}

/// The set of optional parts a request wants (`include=prices,pop_reports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Include(u8);

impl Include {
    /// Neither prices nor pop reports (the default).
    pub const NONE: Include = Include(0);
    /// Variants' `prices`.
    pub const PRICES: Include = Include(Part::Prices as u8);
    /// Variants' `pop_reports`.
    pub const POP_REPORTS: Include = Include(Part::PopReports as u8);

    pub(crate) fn contains(self, part: Part) -> bool {
        self.0 & part as u8 != 0
    }

    /// Both sets together.
    pub fn union(self, other: Include) -> Include {
        Include(self.0 | other.0)
    }
}

/// A member of a variant object that may be left out: the byte range of the member
/// (`"prices":[...]`), with its leading comma unless it is the object's first member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Strip {
    pub start: u32,
    pub end: u32,
    pub part: Part,
    /// The member opens its object, so the next kept member must lose its comma.
    pub first: bool,
}

/// Writes a JSON string literal: `"` and `\` escaped, control characters as short escapes
/// or `\u00XX`, everything else as UTF-8 (the way serde_json writes).
pub(crate) fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let first = needing_escape(bytes);
    if first == bytes.len() {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        if !needs_escape(b) {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            _ => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Copies `doc[range]` to `out`, leaving out the members marked in `strips` whose part is
/// not in `include`. `strips` are sorted by offset; those outside `range` are ignored.
pub(crate) fn copy_without(
    doc: &str,
    range: std::ops::Range<usize>,
    strips: &[Strip],
    include: Include,
    out: &mut String,
) {
    let bytes = doc.as_bytes();
    let mut pos = range.start;
    // Set after leaving out an object's first member: the next kept member must lose its
    // leading comma.
    let mut drop_comma = false;
    for strip in strips {
        let (start, end) = (strip.start as usize, strip.end as usize);
        if start < range.start || end > range.end || include.contains(strip.part) {
            continue;
        }
        if start > pos {
            if drop_comma && bytes[pos] == b',' {
                pos += 1;
            }
            drop_comma = false;
            out.push_str(&doc[pos..start]);
        }
        drop_comma |= strip.first;
        pos = end;
    }
    if drop_comma && pos < range.end && bytes[pos] == b',' {
        pos += 1;
    }
    out.push_str(&doc[pos..range.end]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn render(json: &str) -> (Vec<u8>, Vec<Strip>) {
        let mut t = crate::json::transcode::Transcoder::default();
        t.record(json).unwrap();
        (t.out, t.layout.strips)
    }

    fn served(json: &str, include: Include) -> String {
        let (doc, strips) = render(json);
        let doc = String::from_utf8(doc).unwrap();
        let mut out = String::new();
        copy_without(&doc, 0..doc.len(), &strips, include, &mut out);
        out
    }

    #[test]
    fn compact_and_escaped() {
        let (doc, strips) =
            render("{ \"a\" : [1, 2.5, -3, true, null], \"s\": \"q\\\"\\\\\\n\\u0001é\" }");
        assert_eq!(
            String::from_utf8(doc).unwrap(),
            r#"{"a":[1,2.5,-3,true,null],"s":"q\"\\\n\u0001é"}"#
        );
        assert!(strips.is_empty());
    }

    #[test]
    fn strips_parts_and_fixes_commas() {
        let card = r#"{"id":"x","variants":[{"name":"Normal","prices":[1],"pop_reports":[2]},{"prices":[3],"name":"Alt"},{"pop_reports":[4],"prices":[5]},{"prices":[6],"pop_reports":[7],"x":1}]}"#;
        assert_eq!(
            served(card, Include::NONE),
            r#"{"id":"x","variants":[{"name":"Normal"},{"name":"Alt"},{},{"x":1}]}"#
        );
        assert_eq!(
            served(card, Include::PRICES),
            r#"{"id":"x","variants":[{"name":"Normal","prices":[1]},{"prices":[3],"name":"Alt"},{"prices":[5]},{"prices":[6],"x":1}]}"#
        );
        assert_eq!(
            served(card, Include::POP_REPORTS),
            r#"{"id":"x","variants":[{"name":"Normal","pop_reports":[2]},{"name":"Alt"},{"pop_reports":[4]},{"pop_reports":[7],"x":1}]}"#
        );
        assert_eq!(
            served(card, Include::PRICES.union(Include::POP_REPORTS)),
            card
        );
    }

    #[test]
    fn only_variant_members_are_marked() {
        let card = r#"{"prices":[1],"variants":[{"name":"n","extra":{"prices":[2]}}]}"#;
        assert_eq!(served(card, Include::NONE), card);
    }

    /// A variant object: some of the keys, in any order.
    fn variant() -> impl Strategy<Value = Vec<&'static str>> {
        prop::sample::subsequence(vec!["name", "prices", "pop_reports", "images"], 0..=4)
            .prop_shuffle()
    }

    /// Writes a card with the given variants, keeping only the members `keep` accepts.
    fn card_json(variants: &[Vec<&str>], keep: impl Fn(&str) -> bool) -> String {
        let vs: Vec<String> = variants
            .iter()
            .map(|v| {
                let members: Vec<String> = v
                    .iter()
                    .enumerate()
                    .filter(|(_, k)| keep(k))
                    .map(|(i, k)| format!("\"{k}\":[{i}]"))
                    .collect();
                format!("{{{}}}", members.join(","))
            })
            .collect();
        format!("{{\"id\":\"c\",\"variants\":[{}],\"z\":0}}", vs.join(","))
    }

    proptest! {
        #[test]
        fn leaving_out_equals_removing_members(
            variants in prop::collection::vec(variant(), 0..4),
            include in 0u8..4,
        ) {
            let include = Include(include);
            let full = card_json(&variants, |_| true);
            let expected = card_json(&variants, |k| match k {
                "prices" => include.contains(Part::Prices),
                "pop_reports" => include.contains(Part::PopReports),
                _ => true,
            });
            prop_assert_eq!(served(&full, include), expected);
        }
    }
}
