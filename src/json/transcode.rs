//! One record, from its source text to compact JSON in a single pass, with no tree in
//! between: serde_json drives a visitor that writes each token as it is read, and notes
//! where the parts the load rules need are (top-level members, `translation.en` members,
//! and each variant's `printings`, `prices` and `pop_reports`).
//!
//! Output is written the way serde_json writes compact JSON: strings with `"`, `\` and
//! control characters escaped, everything else as UTF-8, numbers as serde_json formats
//! them (`1.50` → `1.5`).

use std::fmt;
use std::io::Write as _;
use std::ops::Range;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::write::{write_str, Part, Strip};

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
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// The key's characters, between its quotes, as written (escaped).
    pub key: Range<usize>,
    /// The whole value.
    pub value: Range<usize>,
    pub kind: Kind,
}

/// One element of the top-level `variants` array.
#[derive(Debug, Clone, Default)]
pub(crate) struct Variant {
    pub is_object: bool,
    pub kind: Option<Kind>,
    /// The value of its `printings` member, with its kind.
    pub printings: Option<(Range<usize>, Kind)>,
}

/// Where things are in a transcoded record (offsets into the output buffer).
#[derive(Debug, Default)]
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

/// Transcoder state reused across records.
#[derive(Debug, Default)]
pub(crate) struct Transcoder {
    pub out: Vec<u8>,
    pub layout: Layout,
    /// Renames every object key as it is written (importers use it to write snake_case);
    /// a key that two members of one object would share is then an error.
    pub rename: Option<fn(&str) -> String>,
}

impl Transcoder {
    /// Transcodes one record (valid JSON text) into `self.out`, replacing what was there.
    ///
    /// # Errors
    ///
    /// serde_json's, should the text not be valid JSON (or nest deeper than 128 levels).
    pub(crate) fn record(&mut self, text: &str) -> Result<(), serde_json::Error> {
        self.out.clear();
        self.layout.clear();
        let mut de = serde_json::Deserializer::from_str(text);
        let kind = Seed {
            t: self,
            place: Place::Record,
        }
        .deserialize(&mut de)?;
        de.end()?;
        self.layout.kind = Some(kind);
        Ok(())
    }
}

struct Seed<'t> {
    t: &'t mut Transcoder,
    place: Place,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Kind;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads an object key without copying it when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v.to_owned()))
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Kind, E> {
        self.t
            .out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(Kind::Bool)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Kind, E> {
        let _ = write!(self.t.out, "{v}");
        Ok(Kind::Number)
    }

    fn visit_u64<E>(self, v: u64) -> Result<Kind, E> {
        let _ = write!(self.t.out, "{v}");
        Ok(Kind::Number)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Kind, E> {
        let n = serde_json::Number::from_f64(v).ok_or_else(|| E::custom("number out of range"))?;
        let _ = write!(self.t.out, "{n}");
        Ok(Kind::Number)
    }

    fn visit_str<E>(self, v: &str) -> Result<Kind, E> {
        write_str(v, &mut self.t.out);
        Ok(Kind::String)
    }

    fn visit_unit<E>(self) -> Result<Kind, E> {
        self.t.out.extend_from_slice(b"null");
        Ok(Kind::Null)
    }

    fn visit_none<E>(self) -> Result<Kind, E> {
        self.t.out.extend_from_slice(b"null");
        Ok(Kind::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        let t = self.t;
        t.out.push(b'[');
        let element_place = if self.place == Place::Variants {
            Place::Variant
        } else {
            Place::Other
        };
        let mut first = true;
        loop {
            let mark = t.out.len();
            if !first {
                t.out.push(b',');
            }
            if element_place == Place::Variant {
                t.layout.variants.push(Variant::default());
            }
            let seed = Seed {
                t: &mut *t,
                place: element_place,
            };
            match seq.next_element_seed(seed)? {
                Some(kind) => {
                    if element_place == Place::Variant {
                        let variant = t.layout.variants.last_mut().expect("pushed above");
                        variant.kind = Some(kind);
                        variant.is_object = kind == Kind::Object;
                    }
                    first = false;
                }
                None => {
                    if element_place == Place::Variant {
                        t.layout.variants.pop();
                    }
                    // Take back the comma written for an element that was not there.
                    t.out.truncate(mark);
                    break;
                }
            }
        }
        t.out.push(b']');
        Ok(Kind::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        let t = self.t;
        let place = self.place;
        t.out.push(b'{');
        let mut index = 0usize;
        // With renaming, the keys written so far in this object, to refuse a collision.
        let mut written: Vec<Range<usize>> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let key = match t.rename {
                Some(rename) => std::borrow::Cow::Owned(rename(&key)),
                None => key,
            };
            let member_start = t.out.len();
            if index > 0 {
                t.out.push(b',');
            }
            let key_start = t.out.len() + 1;
            write_str(&key, &mut t.out);
            let key_end = t.out.len() - 1;
            if t.rename.is_some() {
                if written
                    .iter()
                    .any(|k| t.out[k.clone()] == t.out[key_start..key_end])
                {
                    return Err(serde::de::Error::custom(format_args!(
                        "two keys of one object both become `{key}`"
                    )));
                }
                written.push(key_start..key_end);
            }
            t.out.push(b':');
            let value_start = t.out.len();
            let child = match (place, key.as_ref()) {
                (Place::Record, "variants") => Place::Variants,
                (Place::Record, "translation") => Place::Translation,
                (Place::Translation, "en") => Place::TranslationEn,
                _ => Place::Other,
            };
            let kind = map.next_value_seed(Seed {
                t: &mut *t,
                place: child,
            })?;
            let value = value_start..t.out.len();
            let member = || Member {
                key: key_start..key_end,
                value: value.clone(),
                kind,
            };
            match place {
                Place::Record => t.layout.members.push(member()),
                Place::Translation if key == "en" => t.layout.translation_en_kind = Some(kind),
                Place::TranslationEn => t.layout.translation_en.push(member()),
                Place::Variant => {
                    let part = match key.as_ref() {
                        "prices" => Some(Part::Prices),
                        "pop_reports" => Some(Part::PopReports),
                        "printings" => {
                            if let Some(v) = t.layout.variants.last_mut() {
                                v.printings = Some((value.clone(), kind));
                            }
                            None
                        }
                        _ => None,
                    };
                    if let Some(part) = part {
                        t.layout.strips.push(Strip {
                            start: member_start as u32,
                            end: t.out.len() as u32,
                            part,
                            first: index == 0,
                        });
                    }
                }
                _ => {}
            }
            index += 1;
        }
        t.out.push(b'}');
        Ok(Kind::Object)
    }
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
}
