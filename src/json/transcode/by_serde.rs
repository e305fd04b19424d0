//! The transcoder's reference path: serde_json reads the record and drives a visitor that
//! writes each token as it is read. It handles every JSON text (and renaming keys) but one
//! whose object has a key twice, and its errors are serde_json's, with their line and
//! column (a repeated key's path is then given by [`Transcoder::take_repeated_key`]);
//! [`super::direct`] must write the same bytes and layout wherever it does not give up.

use std::fmt;
use std::io::Write as _;
use std::ops::Range;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Kind, Noted, Place, Transcoder, Variant};
use crate::json::write::write_str;

/// Above this many keys, an object's keys are looked up in a hash set rather than compared
/// one by one.
const MANY_KEYS: usize = 16;

/// Transcodes `text` into `t.out` and `t.layout` (both empty), returning the record's kind.
pub(super) fn record(t: &mut Transcoder, text: &str) -> Result<Kind, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let kind = Seed {
        t,
        place: Place::Record,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(kind)
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
                        let end = t.out.len();
                        let variant = t.layout.variants.last_mut().expect("pushed above");
                        variant.kind = Some(kind);
                        variant.is_object = kind == Kind::Object;
                        if variant.is_object {
                            variant.close = end - 1;
                        }
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
        // The keys written so far in this object, to refuse one written twice: compared
        // one by one while they are few, then looked up in a set of them.
        let mut written: smallvec::SmallVec<[Range<usize>; 16]> = smallvec::SmallVec::new();
        let mut many: Option<std::collections::HashSet<Box<[u8]>>> = None;
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
            let written_key = &t.out[key_start..key_end];
            let repeated = match &mut many {
                Some(set) => !set.insert(written_key.into()),
                None => written.iter().any(|k| t.out[k.clone()] == *written_key),
            };
            if repeated {
                if t.rename.is_some() {
                    return Err(serde::de::Error::custom(format_args!(
                        "two keys of one object both become `{key}`"
                    )));
                }
                t.repeated_key = Some(vec![key.to_string()]);
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{key}` appears twice in one object"
                )));
            }
            if many.is_none() {
                written.push(key_start..key_end);
                if written.len() > MANY_KEYS {
                    many = Some(written.drain(..).map(|k| t.out[k].into()).collect());
                }
            }
            t.out.push(b':');
            let value_start = t.out.len();
            let child = place.child(key.as_bytes());
            let kind = match map.next_value_seed(Seed {
                t: &mut *t,
                place: child,
            }) {
                Ok(kind) => kind,
                Err(e) => {
                    // Unwinding from a repeated key below: its path gains this member.
                    if let Some(path) = &mut t.repeated_key {
                        path.push(key.into_owned());
                    }
                    return Err(e);
                }
            };
            t.layout.note(
                place,
                key.as_bytes(),
                Noted {
                    member_start,
                    key: key_start..key_end,
                    value: value_start..t.out.len(),
                    kind,
                    first: index == 0,
                },
            );
            index += 1;
        }
        t.out.push(b'}');
        Ok(Kind::Object)
    }
}
