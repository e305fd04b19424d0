//! One record, from its source text to compact JSON in a single pass, with no tree in
//! between, noting where the parts the load rules need are (top-level members,
//! `translation.en` members, and each variant's `printings`, `prices`, `pop_reports` and
//! closing brace).
//!
//! Output is written the way serde_json writes compact JSON: strings with `"`, `\` and
//! control characters escaped, everything else as UTF-8, numbers as serde_json formats
//! them (`1.50` → `1.5`).
//!
//! Two paths write it. [`direct`] reads the text by hand and copies what is already
//! compact; it gives up on anything it does not mirror exactly (a syntax error, an escaped
//! key, a key its object already has, a number serde_json would rewrite beyond dropping
//! trailing zeros, deep nesting). [`by_serde`] is the reference: serde_json drives a
//! visitor, so it takes every JSON text but one whose object has a key twice, which it
//! refuses by name, and its other errors are serde_json's. A record goes through `direct`
//! first and, should it give up, through `by_serde`; tests and a fuzz target check the two
//! agree wherever `direct` does not give up.

mod by_serde;
mod direct;

use std::ops::Range;

use super::write::{Part, Strip};

/// The JSON type of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    /// The type's name, for error messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// A member of an object in the output: where its key's text and its value are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    /// The key's characters, between its quotes, as written (escaped).
    pub key: Range<usize>,
    /// The whole value.
    pub value: Range<usize>,
    pub kind: Kind,
}

/// One element of the top-level `variants` array.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Variant {
    pub is_object: bool,
    pub kind: Option<Kind>,
    /// The value of its `printings` member, with its kind.
    pub printings: Option<(Range<usize>, Kind)>,
    /// Where its closing brace is, when it is an object (else 0).
    pub close: usize,
}

/// Where things are in a transcoded record (offsets into the output buffer).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Layout {
    /// The record's own kind.
    pub kind: Option<Kind>,
    /// Top-level members, in order.
    pub members: Vec<Member>,
    /// The members of `translation.en`, when `translation` and `en` are objects.
    pub translation_en: Vec<Member>,
    /// The kind of `translation.en`, when `translation` is an object that has `en`.
    pub translation_en_kind: Option<Kind>,
    /// The elements of `variants`, when it is an array.
    pub variants: Vec<Variant>,
    /// Every variant's `prices` and `pop_reports` member.
    pub strips: Vec<Strip>,
}

impl Layout {
    fn clear(&mut self) {
        self.kind = None;
        self.members.clear();
        self.translation_en.clear();
        self.translation_en_kind = None;
        self.variants.clear();
        self.strips.clear();
    }
}

/// Where in the record a value sits, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Record,
    /// The value of a top-level member named `variants`.
    Variants,
    /// An element of `variants`.
    Variant,
    /// The value of a top-level member named `translation`.
    Translation,
    /// The value of `translation.en`.
    TranslationEn,
    /// Anywhere else.
    Other,
}

impl Place {
    /// Where the value of member `key` of an object at this place sits.
    #[inline]
    fn child(self, key: &[u8]) -> Place {
        if self == Place::Other {
            // Most members: nothing below another place matters.
            return Place::Other;
        }
        match (self, key) {
            (Place::Record, b"variants") => Place::Variants,
            (Place::Record, b"translation") => Place::Translation,
            (Place::Translation, b"en") => Place::TranslationEn,
            _ => Place::Other,
        }
    }
}

/// A member just written, as both paths report it to [`Layout::note`].
struct Noted {
    /// Where the member starts in the output, its leading comma included.
    member_start: usize,
    key: Range<usize>,
    value: Range<usize>,
    kind: Kind,
    /// It is its object's first member.
    first: bool,
}

impl Layout {
    /// Notes member `key` of an object at `place`, if the rules care about it.
    #[inline]
    fn note(&mut self, place: Place, key: &[u8], m: Noted) {
        if place != Place::Other {
            self.note_kept(place, key, m);
        }
    }

    /// [`Self::note`] at a place the rules care about.
    fn note_kept(&mut self, place: Place, key: &[u8], m: Noted) {
        match place {
            Place::Record => self.members.push(Member {
                key: m.key,
                value: m.value,
                kind: m.kind,
            }),
            Place::Translation if key == b"en" => self.translation_en_kind = Some(m.kind),
            Place::TranslationEn => self.translation_en.push(Member {
                key: m.key,
                value: m.value,
                kind: m.kind,
            }),
            Place::Variant => {
                let part = match key {
                    b"prices" => Part::Prices,
                    b"pop_reports" => Part::PopReports,
                    b"printings" => {
                        if let Some(v) = self.variants.last_mut() {
                            v.printings = Some((m.value, m.kind));
                        }
                        return;
                    }
                    _ => return,
                };
                self.strips.push(Strip {
                    start: m.member_start as u32,
                    end: m.value.end as u32,
                    part,
                    first: m.first,
                });
            }
            _ => {}
        }
    }
}

/// Transcoder state reused across records.
#[derive(Debug, Default)]
pub(crate) struct Transcoder {
    pub out: Vec<u8>,
    pub layout: Layout,
    /// Renames every object key as it is written (importers use it to write snake_case);
    /// a key that two members of one object would share is then an error.
    pub rename: Option<fn(&str) -> String>,
    /// When [`Self::record`] failed on an object that has one key twice (unrenamed): the
    /// path to that key, innermost first (`["name", "abilities"]` for
    /// `abilities[].name`); see [`Self::take_repeated_key`].
    repeated_key: Option<Vec<String>>,
}

impl Transcoder {
    /// Transcodes one record (valid JSON text) into `self.out`, replacing what was there.
    ///
    /// # Errors
    ///
    /// serde_json's, should the text not be valid JSON (or nest deeper than 128 levels);
    /// and a custom one for an object with a key twice, whose path
    /// [`Self::take_repeated_key`] then gives (or, with [`Self::rename`], for two keys that
    /// become one).
    pub(crate) fn record(&mut self, text: &str) -> Result<(), serde_json::Error> {
        self.out.clear();
        self.layout.clear();
        self.repeated_key = None;
        if self.rename.is_none() {
            if let Ok(kind) = direct::record(text, &mut self.out, &mut self.layout) {
                self.layout.kind = Some(kind);
                return Ok(());
            }
            self.out.clear();
            self.layout.clear();
        }
        let kind = by_serde::record(self, text)?;
        self.layout.kind = Some(kind);
        Ok(())
    }

    /// A transcoder that renames every key with `rename`.
    pub(crate) fn renaming(rename: fn(&str) -> String) -> Transcoder {
        Transcoder {
            rename: Some(rename),
            ..Transcoder::default()
        }
    }

    /// After [`Self::record`] failed on a key an object has twice: the object's path
    /// (outermost key first, arrays looked through) and the key.
    pub(crate) fn take_repeated_key(&mut self) -> Option<(Vec<String>, String)> {
        let mut path = self.repeated_key.take()?;
        let key = path.remove(0);
        path.reverse();
        Some((path, key))
    }

    /// Transcodes the record at the start of `text` (after any whitespace) by the direct
    /// path alone, appending it to `dest` (not to `self.out`: a record that needs no edit
    /// is then never copied), returning where in `text` it ends; `self.layout`'s positions
    /// count from where it starts in `dest`. `None` when that path gives up (or keys are
    /// renamed), leaving `dest` partly written and the caller to split the text and call
    /// [`Self::record`].
    pub(crate) fn record_prefix_into(&mut self, text: &str, dest: &mut Vec<u8>) -> Option<usize> {
        self.layout.clear();
        if self.rename.is_some() {
            return None;
        }
        let (kind, end) = direct::prefix(text, dest, &mut self.layout).ok()?;
        self.layout.kind = Some(kind);
        Some(end)
    }
}

/// The property [`crate::fuzzing::check_transcode`] checks: wherever [`direct`] does not
/// give up on `text`, [`by_serde`] accepts it too and writes the same bytes and layout.
/// Returns whether `direct` took the text.
///
/// # Panics
///
/// When the two paths disagree.
pub(crate) fn check_paths_agree(text: &str) -> bool {
    let mut reference = Transcoder::default();
    let by_serde = by_serde::record(&mut reference, text);
    let mut out = Vec::new();
    let mut layout = Layout::default();
    let Ok(kind) = direct::record(text, &mut out, &mut layout) else {
        return false;
    };
    match by_serde {
        Err(e) => panic!("the direct path took {text:?}, which serde_json refuses: {e}"),
        Ok(reference_kind) => {
            assert_eq!(kind, reference_kind, "kind of {text:?}");
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&reference.out),
                "output for {text:?}"
            );
            assert_eq!(layout, reference.layout, "layout for {text:?}");
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcode(text: &str) -> (String, Transcoder) {
        let mut t = Transcoder::default();
        t.record(text).unwrap();
        (String::from_utf8(t.out.clone()).unwrap(), t)
    }

    #[test]
    fn writes_compact_json_like_serde_json() {
        for text in [
            r#"{ "a" : [1, 2.5, -3, true, null, 1.50, 1e2, 18446744073709551615, -9223372036854775808], "s": "q\"\\\n\u0001é\u00e9\ud83d\ude00/" }"#,
            r#"[]"#,
            r#"{}"#,
            r#"{"nested": {"deeper": [[], [{}], {"x": [1]}]}, "e": ""}"#,
            r#""just a string""#,
            "3.0",
        ] {
            let (ours, _) = transcode(text);
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            // serde_json sorts keys (no preserve_order); compare as values, and the text
            // when key order cannot differ.
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&ours).unwrap(),
                value,
                "{text}"
            );
            if !text.contains("\"s\"") && !text.contains("nested") {
                assert_eq!(ours, serde_json::to_string(&value).unwrap(), "{text}");
            }
        }
        let (ours, _) = transcode(r#"{"z": 1, "a": "\u00e9\"", "m": [1.50]}"#);
        assert_eq!(ours, r#"{"z":1,"a":"é\"","m":[1.5]}"#);
    }

    #[test]
    fn notes_members_translation_and_variants() {
        let text = r#"{"id": "x", "variants": [{"name": "N", "prices": [1], "printings": ["P"]}, 5, {"pop_reports": [], "name": "A"}],
                       "translation": {"en": {"name": "Mewtwo", "rarity": null}, "fr": {"name": "no"}}, "name": null}"#;
        let (out, t) = transcode(text);
        let l = &t.layout;
        let keys: Vec<&str> = l.members.iter().map(|m| &out[m.key.clone()]).collect();
        assert_eq!(keys, ["id", "variants", "translation", "name"]);
        assert_eq!(l.members[3].kind, Kind::Null);
        assert_eq!(&out[l.members[0].value.clone()], "\"x\"");
        let en: Vec<(&str, &str)> = l
            .translation_en
            .iter()
            .map(|m| (&out[m.key.clone()], &out[m.value.clone()]))
            .collect();
        assert_eq!(en, [("name", "\"Mewtwo\""), ("rarity", "null")]);
        assert_eq!(l.variants.len(), 3);
        assert!(l.variants[0].is_object && !l.variants[1].is_object && l.variants[2].is_object);
        let (p, kind) = l.variants[0].printings.clone().unwrap();
        assert_eq!((&out[p], kind), ("[\"P\"]", Kind::Array));
        // Each object's closing brace: what the printings rule appends before.
        assert!(out[..=l.variants[0].close].ends_with("[\"P\"]}"));
        assert!(out[..=l.variants[2].close].ends_with("\"name\":\"A\"}"));
        assert_eq!(l.variants[1].close, 0);
        let strips: Vec<(&str, bool)> = l
            .strips
            .iter()
            .map(|s| (&out[s.start as usize..s.end as usize], s.first))
            .collect();
        assert_eq!(
            strips,
            [(",\"prices\":[1]", false), ("\"pop_reports\":[]", true)]
        );
    }

    #[test]
    fn reuses_its_buffers() {
        let mut t = Transcoder::default();
        t.record(r#"{"variants": [{"prices": []}]}"#).unwrap();
        t.record(r#"{"id": 1}"#).unwrap();
        assert_eq!(t.out, br#"{"id":1}"#);
        assert!(t.layout.strips.is_empty() && t.layout.variants.is_empty());
        assert_eq!(t.layout.members.len(), 1);
    }

    /// Number texts of every shape serde_json treats apart: each is transcoded alone and
    /// inside a record, and the direct path takes the ones it should.
    #[test]
    fn direct_numbers_agree_with_serde_json() {
        let taken = [
            "0",
            "7",
            "-7",
            "1.5",
            "1.50",
            "846.90",
            "5.00",
            "-5.00",
            "100.0",
            "0.5",
            "0.00001",
            "0.0",
            "-0.0",
            "0.0000",
            "999999999999999",
            "12345678.1234567",
            "-922337203685477580",
            "123456789012345678",
            "1234567890123456",
        ];
        let left = [
            "-0",
            "1e2",
            "1E+2",
            "-1.5e-3",
            "0.000001",
            "123456789012345.6",
            "0.1234567890123456",
            "1234567890123456789",
            "18446744073709551616",
        ];
        for (n, direct) in taken
            .iter()
            .map(|n| (n, true))
            .chain(left.iter().map(|n| (n, false)))
        {
            assert_eq!(check_paths_agree(n), direct, "{n}");
            let record = format!(r#"{{"variants":[{{"prices":[{{"market":{n}}}]}}],"n":{n}}}"#);
            assert_eq!(check_paths_agree(&record), direct, "{record}");
        }
    }

    /// Escapes, surrogates, broken syntax and nesting at serde_json's limit.
    #[test]
    fn direct_path_gives_up_where_it_must() {
        for (text, direct) in [
            (r#""a\"b\\c\/d\b\f\n\r\t""#, true),
            (r#""\u00e9\u0001\ud83d\ude00x""#, true),
            (r#""\ud800""#, false),
            (r#""\udc00""#, false),
            (r#""\ud800\u0041""#, false),
            ("\"raw \u{1} control\"", false),
            (r#"{"k\u0065y":1}"#, false),
            (r#"{"a":1,}"#, false),
            ("[1,]", false),
            ("[1 2]", false),
            ("tru", false),
            ("true x", false),
            (" { \"a\" : [ 1 , { } ] } \n", true),
            ("", false),
        ] {
            assert_eq!(check_paths_agree(text), direct, "{text:?}");
        }
        // serde_json takes 127 nested arrays and refuses 128; so does the direct path.
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(check_paths_agree(&nested(127)));
        assert!(!check_paths_agree(&nested(128)));
        let mut t = Transcoder::default();
        assert!(t.record(&nested(127)).is_ok());
        assert!(t.record(&nested(128)).is_err());
    }

    #[test]
    fn a_key_its_object_repeats_is_refused_by_both_paths_with_its_path() {
        let refused = |text: &str| {
            let mut out = Vec::new();
            let mut layout = Layout::default();
            assert!(
                direct::record(text, &mut out, &mut layout).is_err(),
                "{text}"
            );
            let mut t = Transcoder::default();
            assert!(t.record(text).is_err(), "{text}");
            t.repeated_key.expect("the path of the repeated key")
        };
        assert_eq!(refused(r#"{"a":1,"a":2}"#), ["a"]);
        assert_eq!(refused(r#"{"a":1,"b":{},"a":[1]}"#), ["a"]);
        assert_eq!(
            refused(r#"{"x":[1,{"y":{"b":1,"c":2,"b":3}}],"z":0}"#),
            ["b", "y", "x"]
        );
        assert_eq!(
            refused(r#"{"variants":[{"prices":[{"low":1,"low":2}]}]}"#),
            ["low", "prices", "variants"]
        );
        // The same key through an escape: the direct path gives up on escaped keys.
        assert_eq!(refused(r#"{"key":1,"k\u0065y":2}"#), ["key"]);
        // Many distinct keys, some sharing their summary bit: taken by the direct path up
        // to its limit and by the reference beyond it (through its hash set), and the same
        // objects with one key repeated are refused.
        for (n, direct_takes) in [(100, true), (5000, false)] {
            let keys: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            let many = format!("{{{}}}", keys.join(","));
            assert_eq!(check_paths_agree(&many), direct_takes, "{n} keys");
            let mut t = Transcoder::default();
            t.record(&many).unwrap();
            assert_eq!(t.layout.members.len(), n);
            for repeat in ["k0", "k17", &format!("k{}", n - 1)] {
                let text = format!("{{{},\"{repeat}\":0}}", keys.join(","));
                assert_eq!(refused(&text), [repeat], "{n} keys");
            }
        }
        // One key in an object and its parent, in siblings, and again after a nested
        // object closes: distinct members.
        for text in [
            r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#,
            r#"{"a":[{"b":1,"c":{"b":2}}],"b":3,"c":[{"a":1}]}"#,
            r#"{"":1,"a":{"":2}}"#,
        ] {
            assert!(check_paths_agree(text), "{text}");
            let mut t = Transcoder::default();
            t.record(text).unwrap();
            assert!(t.repeated_key.is_none());
        }
        // A closed object's keys are not its parent's: a parent key sharing its summary
        // bit with an earlier one is compared with the parent's keys alone.
        for parent in ["translation", "x"] {
            let letters = || b'a'..=b'z';
            let twin = letters()
                .flat_map(|a| letters().flat_map(move |b| letters().map(move |c| [a, b, c])))
                .flat_map(|k| [k.to_vec(), [&k[..], b"xy"].concat()])
                .map(|k| String::from_utf8(k).unwrap())
                .find(|k| {
                    k != parent
                        && direct::key_bit(k.as_bytes()) == direct::key_bit(parent.as_bytes())
                })
                .expect("a key of the same bit");
            let text = format!("{{\"{parent}\":{{\"{twin}\":1}},\"{twin}\":2}}");
            assert!(check_paths_agree(&text), "{text}");
        }
        // Renamed keys that meet keep their own message.
        let mut t = Transcoder {
            rename: Some(|k: &str| k.to_ascii_lowercase()),
            ..Transcoder::default()
        };
        let e = t.record(r#"{"A":1,"a":2}"#).unwrap_err();
        assert!(e.to_string().contains("both become `a`"), "{e}");
        assert!(t.repeated_key.is_none());
    }

    /// Every record of the bundled snapshot takes the direct path, and agrees.
    #[test]
    fn bundled_records_take_the_direct_path() {
        let mut records = 0;
        for (path, text) in crate::json::bundled_json_files() {
            let Some(elements) = crate::json::scan::split_array(&text) else {
                continue;
            };
            for element in elements {
                assert!(check_paths_agree(element), "{}: {element}", path.display());
                records += 1;
            }
        }
        assert!(records > 60, "only {records} records");
    }

    mod generated {
        use super::super::check_paths_agree;
        use proptest::prelude::*;

        /// JSON-ish text: mostly valid, with the keys the layout cares about, numbers and
        /// strings of every shape, whitespace anywhere, and now and then a broken token.
        fn json_text() -> impl Strategy<Value = String> {
            let number = prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                "-?(0|[1-9][0-9]{0,19})(\\.[0-9]{1,18})?([eE][+-]?[0-9]{1,3})?",
                (0u64..100_000, 0usize..3).prop_map(|(cents, zeros)| format!(
                    "{}.{:02}{}",
                    cents / 100,
                    cents % 100,
                    "0".repeat(zeros)
                )),
            ];
            let string =
                "\"([a-z é\u{30d4}]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|\\\\ud83d\\\\ude00)*\"";
            let broken =
                prop::sample::select(vec!["01", "1.", "-", "tru", "\"x", "\u{1}", "{", "]"]);
            let leaf = prop_oneof![
                8 => number.boxed(),
                8 => string.boxed(),
                2 => prop::sample::select(vec!["true", "false", "null"]).prop_map(String::from).boxed(),
                1 => broken.prop_map(String::from).boxed(),
            ];
            let key = prop::sample::select(vec![
                "\"id\"",
                "\"variants\"",
                "\"translation\"",
                "\"en\"",
                "\"prices\"",
                "\"pop_reports\"",
                "\"printings\"",
                "\"name\"",
                "\"k\\u0065y\"",
                "\"é\"",
            ]);
            let space = prop::sample::select(vec!["", "", "", " ", "\n\t", "\r "]);
            leaf.prop_recursive(5, 96, 6, move |inner| {
                let element = (space.clone(), inner, space.clone())
                    .prop_map(|(a, v, b)| format!("{a}{v}{b}"));
                prop_oneof![
                    prop::collection::vec(element.clone(), 0..6)
                        .prop_map(|items| format!("[{}]", items.join(","))),
                    (
                        prop::collection::vec(
                            (space.clone(), key.clone(), space.clone(), element),
                            0..6
                        ),
                        prop::bool::weighted(0.2),
                    )
                        .prop_map(|(members, repeats)| {
                            // Mostly distinct keys (a repeated key is refused by both paths,
                            // so such objects test less), sometimes a repeat.
                            let mut keys = Vec::new();
                            let members: Vec<String> = members
                                .into_iter()
                                .filter(|(_, k, _, _)| {
                                    repeats || {
                                        let new = !keys.contains(k);
                                        keys.push(*k);
                                        new
                                    }
                                })
                                .map(|(a, k, b, v)| format!("{a}{k}{b}:{v}"))
                                .collect();
                            format!("{{{}}}", members.join(","))
                        }),
                ]
            })
        }

        /// A value built from short keys that often meet, as text, with whether any of
        /// its objects has a key twice.
        fn keyed_text() -> impl Strategy<Value = (String, bool)> {
            let key = prop::sample::select(vec!["a", "b", "ab", "ba", "", "é", "a\\u0062"]);
            let leaf = (0u32..1000).prop_map(|n| (n.to_string(), false));
            leaf.prop_recursive(4, 64, 8, move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(|items| {
                        let repeat = items.iter().any(|(_, r)| *r);
                        let texts: Vec<String> = items.into_iter().map(|(t, _)| t).collect();
                        (format!("[{}]", texts.join(",")), repeat)
                    }),
                    prop::collection::vec((key.clone(), inner), 0..8).prop_map(|members| {
                        let mut keys: Vec<String> = Vec::new();
                        let mut repeat = false;
                        let mut texts = Vec::new();
                        for (k, (text, r)) in members {
                            let decoded = k.replace("\\u0062", "b");
                            repeat |= r || keys.contains(&decoded);
                            keys.push(decoded);
                            texts.push(format!("\"{k}\":{text}"));
                        }
                        (format!("{{{}}}", texts.join(",")), repeat)
                    }),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]
            /// An object with a key twice, at any depth, is refused by both paths (the
            /// direct one by giving up), and every other text is taken by both.
            #[test]
            fn repeated_keys_are_refused_and_only_they((text, repeat) in keyed_text()) {
                let mut t = super::super::Transcoder::default();
                prop_assert_eq!(t.record(&text).is_err(), repeat, "{}", text);
                prop_assert_eq!(t.repeated_key.is_some(), repeat, "{}", text);
                if !text.contains('\\') {
                    prop_assert_eq!(check_paths_agree(&text), !repeat, "{}", text);
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]
            /// Wherever the direct path does not give up, it agrees with serde_json's.
            #[test]
            fn direct_agrees_with_serde_json(text in json_text()) {
                check_paths_agree(&text);
            }
        }
    }
}
