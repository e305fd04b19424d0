//! One record, from parsed JSON to what the store keeps: validated, with the translation
//! fallback (spec 2.3 rule 4) and, for cards, the printings rule (contract section 1)
//! applied, then written once as compact JSON.

use std::borrow::Cow;

use super::error::{LoadError, LoadErrorKind};
use crate::json::write::{write_record, Strip};
use crate::json::Node;

/// Which collection a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Card,
    Expansion,
}

/// A validated record, ready for the store.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub id: Box<str>,
    /// The served (and searched) record, compact.
    pub json: Box<str>,
    /// The members of `json` a request may leave out (cards only).
    pub strips: Vec<Strip>,
    /// Cards: the expansion of debut.
    pub expansion_id: Option<Box<str>>,
    /// Cards: `number`, for the default order.
    pub number: Option<Box<str>>,
    /// Expansions: `release_date` (`YYYY/MM/DD`), for the default order.
    pub release_date: Option<Box<str>>,
    /// Index in its file.
    pub index: usize,
}

type Result<T> = std::result::Result<T, LoadErrorKind>;

/// Validates and transforms record number `index` of a file.
pub(crate) fn prepare(
    kind: RecordKind,
    mut node: Node<'_>,
    index: usize,
) -> std::result::Result<Prepared, LoadError> {
    let id = match &node {
        Node::Object(_) => node
            .field("id")
            .and_then(Node::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string),
        other => {
            let kind = LoadErrorKind::NotAnObject {
                found: other.type_name(),
            };
            return Err(LoadError::new(None, kind).at_record(index, None));
        }
    };
    prepare_object(kind, &mut node, index)
        .map_err(|kind| LoadError::new(None, kind).at_record(index, id.as_deref()))
}

fn prepare_object(kind: RecordKind, node: &mut Node<'_>, index: usize) -> Result<Prepared> {
    let id = required_string(node, "id")?.to_string();
    apply_translation(node)?;
    let mut prepared = Prepared {
        id: id.into(),
        json: "".into(),
        strips: Vec::new(),
        expansion_id: None,
        number: None,
        release_date: None,
        index,
    };
    optional_string(node, "language_code")?;
    match kind {
        RecordKind::Card => {
            let expansion_id = required_string(node, "expansion_id")?.to_string();
            let printings = printings(node, &expansion_id)?;
            let printings = Node::Array(
                printings
                    .into_iter()
                    .map(|p| Node::String(Cow::Owned(p)))
                    .collect(),
            );
            set_member(node, "printings", printings);
            prepared.number = match node.field("number") {
                None => None,
                Some(Node::String(s)) => Some(s.as_ref().into()),
                Some(Node::Number(n)) => Some(n.to_string().into()),
                Some(other) => {
                    return Err(wrong_type("number", "a string or a number", other));
                }
            };
            prepared.expansion_id = Some(expansion_id.into());
        }
        RecordKind::Expansion => {
            if let Some(date) = optional_string(node, "release_date")? {
                if !is_date(date) {
                    return Err(LoadErrorKind::BadDate {
                        field: "release_date",
                        value: date.to_string(),
                    });
                }
                prepared.release_date = Some(date.into());
            }
        }
    }
    let mut out = Vec::with_capacity(256);
    let mut strips = Vec::new();
    let marks = (kind == RecordKind::Card).then_some(&mut strips);
    write_record(node, &mut out, marks);
    prepared.json = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        .into_boxed_str();
    prepared.strips = strips;
    Ok(prepared)
}

fn wrong_type(field: &str, expected: &'static str, found: &Node<'_>) -> LoadErrorKind {
    LoadErrorKind::WrongType {
        field: field.to_string(),
        expected,
        found: found.type_name(),
    }
}

fn required_string<'n>(node: &'n Node<'_>, field: &'static str) -> Result<&'n str> {
    match node.field(field) {
        None => Err(LoadErrorKind::MissingField { field }),
        Some(Node::String(s)) if s.is_empty() => Err(LoadErrorKind::WrongType {
            field: field.to_string(),
            expected: "a non-empty string",
            found: "an empty string",
        }),
        Some(Node::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(field, "a non-empty string", other)),
    }
}

fn optional_string<'n>(node: &'n Node<'_>, field: &'static str) -> Result<Option<&'n str>> {
    match node.field(field) {
        None => Ok(None),
        Some(Node::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(field, "a string", other)),
    }
}

/// Sets member `key` of an object: replaces its value where present, else appends it.
fn set_member<'a>(node: &mut Node<'a>, key: &str, value: Node<'a>) {
    if let Node::Object(members) = node {
        match members.iter_mut().rev().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = value,
            None => members.push((Cow::Owned(key.to_string()), value)),
        }
    }
}

/// Spec 2.3 rule 4: a record with `translation.en` that lacks one of its own top-level
/// properties that `translation.en` has takes the English value there (`null` counts as
/// absent).
fn apply_translation(node: &mut Node<'_>) -> Result<()> {
    let fallback: Vec<(String, Node<'_>)> = match node.field("translation") {
        None => return Ok(()),
        Some(Node::Object(_)) => match node.field("translation").and_then(|t| t.field("en")) {
            None => return Ok(()),
            Some(Node::Object(en)) => en
                .iter()
                .filter(|(key, value)| !matches!(value, Node::Null) && node.field(key).is_none())
                .map(|(key, value)| (key.to_string(), value.clone()))
                .collect(),
            Some(other) => return Err(wrong_type("translation.en", "an object", other)),
        },
        Some(other) => return Err(wrong_type("translation", "an object", other)),
    };
    for (key, value) in fallback {
        set_member(node, &key, value);
    }
    Ok(())
}

/// Contract section 1: the card's `printings` if present, else `[expansion_id]`, united
/// with every `variants[].printings` entry and its own `expansion_id`, first occurrence
/// kept.
fn printings(node: &Node<'_>, expansion_id: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !out.iter().any(|q| q == p) {
            out.push(p.to_string());
        }
    };
    match node.field("printings") {
        None => add(expansion_id),
        Some(list) => {
            for p in strings(list, "printings")? {
                add(p);
            }
        }
    }
    match node.field("variants") {
        None => {}
        Some(Node::Array(variants)) => {
            for (i, variant) in variants.iter().enumerate() {
                if !matches!(variant, Node::Object(_)) {
                    return Err(wrong_type(&format!("variants[{i}]"), "an object", variant));
                }
                if let Some(list) = variant.field("printings") {
                    for p in strings(list, &format!("variants[{i}].printings"))? {
                        add(p);
                    }
                }
            }
        }
        Some(other) => return Err(wrong_type("variants", "an array of objects", other)),
    }
    add(expansion_id);
    Ok(out)
}

/// The strings of an array of strings.
fn strings<'n>(node: &'n Node<'_>, field: &str) -> Result<Vec<&'n str>> {
    let Node::Array(items) = node else {
        return Err(wrong_type(field, "an array of strings", node));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Node::String(s) => Ok(s.as_ref()),
            other => Err(wrong_type(&format!("{field}[{i}]"), "a string", other)),
        })
        .collect()
}

/// `YYYY/MM/DD` with a month 01–12 and a day 01–31.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'/'
        || b[7] != b'/'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return false;
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let day = (b[8] - b'0') * 10 + (b[9] - b'0');
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(json: &str) -> std::result::Result<Prepared, String> {
        let node: Node<'_> = serde_json::from_str(json).unwrap();
        prepare(RecordKind::Card, node, 7).map_err(|e| e.to_string())
    }

    #[test]
    fn printings_rule() {
        let c = card(r#"{"id":"a","expansion_id":"OP01","variants":[{"name":"Normal"},{"name":"Alt","printings":["PRB01","OP01"]}]}"#).unwrap();
        assert!(
            c.json.ends_with(r#""printings":["OP01","PRB01"]}"#),
            "{}",
            c.json
        );
        let c = card(r#"{"id":"a","printings":["ST01"],"expansion_id":"OP01","variants":[{"printings":["PRB01"]}]}"#).unwrap();
        assert!(
            c.json
                .contains(r#""printings":["ST01","PRB01","OP01"],"expansion_id""#),
            "{}",
            c.json
        );
        let c = card(r#"{"id":"a","expansion_id":"OP01","printings":null}"#).unwrap();
        assert!(c.json.contains(r#""printings":["OP01"]"#), "{}", c.json);
    }

    #[test]
    fn translation_fallback() {
        let c = card(r#"{"id":"x_ja-1","expansion_id":"x_ja","name":null,"translation":{"en":{"name":"Mewtwo","rarity":"Rare","types":["Psychic"]}},"types":["超"]}"#).unwrap();
        assert!(c.json.contains(r#""name":"Mewtwo""#), "{}", c.json);
        assert!(c.json.contains(r#""types":["超"]"#), "{}", c.json);
        assert!(c.json.contains(r#""rarity":"Rare""#), "{}", c.json);
    }

    #[test]
    fn strips_are_marked_on_cards() {
        let c = card(
            r#"{"id":"a","expansion_id":"e","variants":[{"name":"n","prices":[{"market":1.5}]}]}"#,
        )
        .unwrap();
        assert_eq!(c.strips.len(), 1);
        assert_eq!(
            &c.json[c.strips[0].start as usize..c.strips[0].end as usize],
            r#","prices":[{"market":1.5}]"#
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            card("[1]").unwrap_err(),
            "record 7: expected a JSON object, found an array"
        );
        assert_eq!(
            card(r#"{"name":"x"}"#).unwrap_err(),
            "record 7: required field `id` is missing"
        );
        assert_eq!(
            card(r#"{"id":""}"#).unwrap_err(),
            "record 7: field `id` must be a non-empty string, found an empty string"
        );
        assert_eq!(
            card(r#"{"id":5}"#).unwrap_err(),
            "record 7: field `id` must be a non-empty string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a"}"#).unwrap_err(),
            "record 7 (id `a`): required field `expansion_id` is missing"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","printings":"e"}"#).unwrap_err(),
            "record 7 (id `a`): field `printings` must be an array of strings, found a string"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","variants":[{"printings":[1]}]}"#).unwrap_err(),
            "record 7 (id `a`): field `variants[0].printings[0]` must be a string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","variants":{}}"#).unwrap_err(),
            "record 7 (id `a`): field `variants` must be an array of objects, found an object"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","translation":{"en":[]}}"#).unwrap_err(),
            "record 7 (id `a`): field `translation.en` must be an object, found an array"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","language_code":1}"#).unwrap_err(),
            "record 7 (id `a`): field `language_code` must be a string, found a number"
        );
        let node: Node<'_> =
            serde_json::from_str(r#"{"id":"e","release_date":"2024-01-02"}"#).unwrap();
        assert_eq!(
            prepare(RecordKind::Expansion, node, 0).unwrap_err().to_string(),
            "record 0 (id `e`): field `release_date` must be a date `YYYY/MM/DD`, found `2024-01-02`"
        );
    }

    #[test]
    fn dates() {
        assert!(is_date("2024/01/31"));
        for bad in [
            "2024/1/31",
            "2024/13/01",
            "2024/00/10",
            "2024/01/32",
            "2024/01/3a",
            "２０２４/01/01",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }
}
