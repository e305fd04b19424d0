//! Writing records out: the stored JSON copied as is, less the optional parts a request
//! did not `include`, and only the `select`ed top-level members when asked.

use super::Collection;
use crate::json::walk::each_member;
use crate::json::write::{copy_without, Include, Strip};

/// The top-level members to keep (`select=id,name`); `id` is always kept. Each is written
/// once, at its first place in the record, and the record is read no further than the
/// last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Select {
    /// The keys besides `id`, each once, at most [`Select::MAX_KEYS`].
    keys: Vec<String>,
}

impl Select {
    /// How many keys (besides `id`) a selection takes: with `id`, one bit each in a `u128`.
    pub(crate) const MAX_KEYS: usize = 127;

    /// The selection of `keys` (repeats and `id` are kept once), or `None` when they are
    /// more than [`Select::MAX_KEYS`].
    pub(crate) fn new(keys: Vec<String>) -> Option<Select> {
        let mut unique: Vec<String> = Vec::with_capacity(keys.len());
        for key in keys {
            if key != "id" && !unique.contains(&key) {
                unique.push(key);
            }
        }
        (unique.len() <= Select::MAX_KEYS).then_some(Select { keys: unique })
    }

    /// The bit of `key` in a record's found set: bit 0 for `id`, `i + 1` for `keys[i]`.
    fn bit(&self, key: &str) -> Option<u128> {
        if key == "id" {
            return Some(1);
        }
        let at = self.keys.iter().position(|k| k == key)?;
        Some(1 << (at + 1))
    }

    /// Every key's bit.
    fn all(&self) -> u128 {
        u128::MAX >> (Select::MAX_KEYS - self.keys.len())
    }
}

/// Appends record `id` of `collection` to `out` as JSON.
pub(crate) fn render_record(
    collection: &Collection,
    id: u32,
    select: Option<&Select>,
    include: Include,
    out: &mut String,
) {
    collection.with_doc(id, |doc| {
        write_record(doc, collection.strips(id), select, include, out)
    });
}

/// Appends `doc`, whose marks are `strips`, to `out`.
fn write_record(
    doc: &str,
    strips: &[Strip],
    select: Option<&Select>,
    include: Include,
    out: &mut String,
) {
    let Some(select) = select else {
        copy_without(doc, 0..doc.len(), strips, include, out);
        return;
    };
    out.push('{');
    let all = select.all();
    let mut found = 0u128;
    each_member(doc, |key, range| {
        if let Some(bit) = select.bit(&key).filter(|&bit| found & bit == 0) {
            if found != 0 {
                out.push(',');
            }
            found |= bit;
            copy_without(doc, range, strips, include, out);
        }
        found != all
    });
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::{write_record, Select};
    use crate::json::write::Include;

    fn selected(doc: &str, keys: &[&str]) -> String {
        let select = Select::new(keys.iter().map(|k| k.to_string()).collect()).unwrap();
        let mut out = String::new();
        write_record(doc, &[], Some(&select), Include::default(), &mut out);
        out
    }

    #[test]
    fn select_writes_each_key_once_in_record_order_and_reads_no_further() {
        let doc = r#"{"id":"a","name":"A","hp":10,"name":"B","big":[{"x":"]"}],"rarity":"R"}"#;
        assert_eq!(
            selected(doc, &["rarity", "name"]),
            r#"{"id":"a","name":"A","rarity":"R"}"#
        );
        assert_eq!(
            selected(doc, &["name", "name", "id"]),
            r#"{"id":"a","name":"A"}"#
        );
        assert_eq!(selected(doc, &["missing"]), r#"{"id":"a"}"#);
        // Everything wanted is found before the record's broken tail: it is never read.
        let broken = r#"{"id":"a","name":"A","tail":[{"#;
        assert_eq!(selected(broken, &["name"]), r#"{"id":"a","name":"A"}"#);
        let many: Vec<String> = (0..=Select::MAX_KEYS).map(|i| format!("k{i}")).collect();
        assert!(Select::new(many[..Select::MAX_KEYS].to_vec()).is_some());
        assert!(Select::new(many).is_none());
    }
}
