//! Inverted indexes over one collection of records (the cards, or the expansions, of a
//! catalog): for every dotted path that occurs in the records, the records that hold each
//! folded keyword value or text word, each number, and any value at all.
//!
//! - **Keyword fields** ([`FieldKind::Keyword`]: `printings`, `rarity`, `rarity_code`,
//!   `expansion_id`, `language_code`, ... see [`crate::naming::field_kind`]) map each whole folded value
//!   to its records.
//! - **Text fields** map each folded word to its records, and each pair of consecutive
//!   words of a short value (at most six words: names, attack names) to its records, so a
//!   two-word phrase in a name is one lookup; phrases in longer values are checked against
//!   the record itself (see the planner). Phrase matching is exact either way.
//! - **Numbers**: JSON numbers, and strings that are decimal numbers (`hp: "120"`), in sorted
//!   vocabularies for ranges and comparisons.
//! - **Existence**: the records holding any value at the path (`field:*`, and the
//!   "missing last" rule of sorting).
//!
//! Every posting list is a [`roaring::RoaringBitmap`] of record ids, and record ids are
//! assigned in default order, so the first page of any result is its first set bits.

mod build;
mod flat;
mod slots;
mod vocab;

pub use crate::naming::FieldKind;
#[cfg(test)]
pub(crate) use build::build;
pub(crate) use build::joint::{build_with_elements, ElementScan, Walked};
pub(crate) use build::{build_at, merge, Chunk};
pub use flat::{FlatBits, Twins};
pub(crate) use vocab::{bitmap_of_bits, VocabBuilder};
pub use vocab::{NumVocab, Postings, Vocab};

use std::sync::OnceLock;

use roaring::RoaringBitmap;

use crate::fxhash::FxHashMap;

/// The number of a field in its [`Index`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldId(pub u32);

/// One searchable path of a collection and its postings.
#[derive(Debug)]
pub struct Field {
    pub(crate) path: Box<str>,
    pub(crate) kind: FieldKind,
    pub(crate) exists: RoaringBitmap,
    pub(crate) terms: Vocab,
    pub(crate) pairs: Vocab,
    pub(crate) long_values: RoaringBitmap,
    pub(crate) numbers: NumVocab,
    pub(crate) numeric_strings: NumVocab,
    pub(crate) holds_objects: bool,
    pub(crate) single_valued: bool,
}

impl Field {
    /// The dotted path (`attacks.name`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How string values are matched.
    pub fn kind(&self) -> FieldKind {
        self.kind
    }

    /// The records holding at least one (non-null) scalar value here.
    pub fn exists(&self) -> &RoaringBitmap {
        &self.exists
    }

    /// Folded keyword values (keyword fields) or words (text fields), with booleans as
    /// `true` / `false`.
    pub fn terms(&self) -> &Vocab {
        &self.terms
    }

    /// Text fields: each pair of consecutive words (`"flame burst"`) of every value of at
    /// most six words, with the records holding it. A two-word phrase is one lookup here
    /// for those values; longer values are in [`Field::long_values`].
    pub fn pairs(&self) -> &Vocab {
        &self.pairs
    }

    /// Text fields: the records holding a value of more than six words, whose word pairs
    /// are not in [`Field::pairs`] (phrases are checked on their text instead).
    pub fn long_values(&self) -> &RoaringBitmap {
        &self.long_values
    }

    /// Whether no record holds more than one scalar value here. The posting lists of such
    /// a field's keyword values never share a record, nor do those of its numbers: the
    /// size of a union of them is the sum of their sizes.
    pub fn single_valued(&self) -> bool {
        self.single_valued
    }

    /// JSON numbers.
    pub fn numbers(&self) -> &NumVocab {
        &self.numbers
    }

    /// Strings that are decimal numbers (`"120"`, `"9.5"`), by value.
    pub fn numeric_strings(&self) -> &NumVocab {
        &self.numeric_strings
    }

    /// Whether some record holds an object here (`legalities`, `attacks`).
    pub fn holds_objects(&self) -> bool {
        self.holds_objects
    }

    /// Whether some record holds a scalar value here.
    pub fn has_values(&self) -> bool {
        !self.exists.is_empty()
    }

    /// Whether some record holds a number here (a JSON number or a decimal-number string).
    pub fn has_numbers(&self) -> bool {
        !self.numbers.is_empty() || !self.numeric_strings.is_empty()
    }

    /// Whether this is a field of dates: it holds no JSON number, and every string here
    /// that compares as a number is a date (`"2020/05/01"`). On such a field a bare year in
    /// `q` stands for that year's dates.
    pub fn holds_dates(&self) -> bool {
        self.numbers.is_empty() && self.numeric_strings.all_dates()
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.path.len()
            + self.exists.serialized_size()
            + self.terms.heap_bytes()
            + self.pairs.heap_bytes()
            + self.long_values.serialized_size()
            + self.numbers.heap_bytes()
            + self.numeric_strings.heap_bytes()
    }
}

/// The fields of one collection, numbered by sorted path.
#[derive(Debug, Default)]
pub struct Index {
    fields: Vec<Field>,
    by_path: FxHashMap<Box<str>, FieldId>,
    /// Flat copies of the posting lists that are counted faster that way (see [`Twins`]).
    twins: Twins,
    /// Per field, its value column once built (see [`Index::value_column`]).
    columns: Box<[OnceLock<Option<ValueColumn>>]>,
}

/// Each record's value of one field, as its number in the field's terms.
type ValueColumn = Box<[u16]>;

impl Index {
    pub(crate) fn new(fields: Vec<Field>) -> Index {
        let by_path = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), FieldId(i as u32)))
            .collect();
        let columns = fields.iter().map(|_| OnceLock::new()).collect();
        let twins = Twins::of(fields.iter().flat_map(|f| {
            [&f.terms, &f.pairs]
                .into_iter()
                .flat_map(Vocab::bitmaps)
                .chain(
                    [&f.numbers, &f.numeric_strings]
                        .into_iter()
                        .flat_map(NumVocab::bitmaps),
                )
        }));
        Index {
            fields,
            by_path,
            twins,
            columns,
        }
    }

    /// Keeps a flat twin of each of `sets` (a catalog's language scopes, which must stay
    /// where they are, unchanged, for as long as this index exists).
    pub(crate) fn add_twins_of<'a>(&mut self, sets: impl IntoIterator<Item = &'a RoaringBitmap>) {
        self.twins.add_all(sets);
    }

    /// The flat twin of `set`, when `set` is one of this index's posting lists that has
    /// one, or a set given to [`Index::add_twins_of`] (see [`Twins`]).
    pub fn twin(&self, set: &RoaringBitmap) -> Option<&FlatBits> {
        self.twins.get(set)
    }

    /// For a single-valued keyword field of at most 65,535 values: each record's value, as
    /// its number in [`Field::terms`] (`u16::MAX` for none), indexed by record id. Built on
    /// first use (an intersection of a few records with a large value, such as
    /// `printings:X AND rarity_code:SR`) and kept: two bytes a record, for the fields
    /// queried that way only. `None` for other fields.
    pub fn value_column(&self, id: FieldId) -> Option<&[u16]> {
        self.columns[id.0 as usize]
            .get_or_init(|| {
                let field = self.field(id);
                let terms = field.terms();
                let usable = field.kind() == FieldKind::Keyword
                    && field.single_valued()
                    && terms.len() < usize::from(u16::MAX);
                if !usable {
                    return None;
                }
                let len = field.exists().max().map_or(0, |m| m as usize + 1);
                let mut column = vec![u16::MAX; len].into_boxed_slice();
                for i in 0..terms.len() {
                    for record in terms.postings(i).iter() {
                        column[record as usize] = i as u16;
                    }
                }
                Some(column)
            })
            .as_deref()
    }

    /// Field number `id`.
    pub fn field(&self, id: FieldId) -> &Field {
        &self.fields[id.0 as usize]
    }

    /// All fields, by path.
    pub fn fields(&self) -> impl Iterator<Item = (FieldId, &Field)> + '_ {
        self.fields
            .iter()
            .enumerate()
            .map(|(i, f)| (FieldId(i as u32), f))
    }

    /// The field at exactly `path`.
    pub fn lookup(&self, path: &str) -> Option<FieldId> {
        self.by_path.get(path).copied()
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.fields.iter().map(Field::heap_bytes).sum::<usize>()
            + self.fields.capacity() * std::mem::size_of::<Field>()
            + self.twins.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[&str]) -> Index {
        build(docs)
    }

    #[test]
    fn builds_keyword_text_number_and_existence_postings() {
        let idx = index(&[
            r#"{"id":"a","name":"Charizard ex","rarity":"Double Rare","hp":"330","attacks":[{"name":"Flame Burst","cost":["Fire"],"converted_energy_cost":2}],"legal":true}"#,
            r#"{"id":"b","name":"Pikachu","rarity":"Common","hp":"60","attacks":[{"name":"Thunder Crash","converted_energy_cost":3}],"x":null}"#,
            r#"{"id":"c","name":"Flabébé","rarity":"common"}"#,
        ]);
        let f = |p: &str| idx.field(idx.lookup(p).unwrap());
        let ids =
            |b: Option<Postings<'_>>| b.map(|b| b.iter().collect::<Vec<_>>()).unwrap_or_default();
        assert_eq!(ids(f("rarity").terms().get("common")), [1, 2]);
        assert_eq!(ids(f("rarity").terms().get("double rare")), [0]);
        assert_eq!(f("name").kind(), FieldKind::Text);
        assert_eq!(ids(f("name").terms().get("ex")), [0]);
        assert_eq!(ids(f("name").terms().get("flabebe")), [2]);
        assert_eq!(ids(f("attacks.name").terms().get("burst")), [0]);
        assert_eq!(ids(f("attacks.cost").terms().get("fire")), [0]);
        assert_eq!(ids(f("hp").numeric_strings().get(60.0)), [1]);
        assert!(f("hp").numbers().is_empty());
        assert_eq!(
            ids(f("attacks.converted_energy_cost").numbers().get(3.0)),
            [1]
        );
        assert_eq!(ids(f("legal").terms().get("true")), [0]);
        assert_eq!(ids(Some(Postings::Bitmap(f("hp").exists()))), [0, 1]);
        assert!(f("attacks").holds_objects());
        assert!(!f("attacks").has_values());
        assert!(
            idx.lookup("x").is_none(),
            "a field that only holds null is not a field"
        );
    }

    #[test]
    fn word_pairs_of_short_values_long_values_and_single_values() {
        let idx = index(&[
            r#"{"name":"Charizard ex","attacks":[{"name":"Flame Burst"},{"name":"Burst Flame"}],"types":["Fire"],"hp":"330","text":"one two three four five six seven"}"#,
            r#"{"name":"Mr. Mime","attacks":[{"name":"Flame"},{"name":"Burst"}],"types":["Fire","Water"],"hp":60,"text":"one two"}"#,
        ]);
        let f = |p: &str| idx.field(idx.lookup(p).unwrap());
        let ids =
            |b: Option<Postings<'_>>| b.map(|b| b.iter().collect::<Vec<_>>()).unwrap_or_default();
        assert_eq!(ids(f("name").pairs().get("charizard ex")), [0]);
        assert_eq!(ids(f("name").pairs().get("mr mime")), [1]);
        // Pairs never cross two values: record 1 has no "flame burst".
        assert_eq!(ids(f("attacks.name").pairs().get("flame burst")), [0]);
        assert_eq!(ids(f("attacks.name").pairs().get("burst flame")), [0]);
        // Seven words: a long value, no pairs; two words: pairs.
        assert_eq!(ids(f("text").pairs().get("one two")), [1]);
        assert_eq!(ids(f("text").pairs().get("two three")), Vec::<u32>::new());
        assert_eq!(ids(Some(Postings::Bitmap(f("text").long_values()))), [0]);
        assert!(f("name").long_values().is_empty());
        // Keyword pairs are not kept.
        assert!(f("types").pairs().is_empty());
        // One scalar per record, or several.
        assert!(f("name").single_valued());
        assert!(
            f("hp").single_valued(),
            "a number in one record, a string in another"
        );
        assert!(!f("types").single_valued());
        assert!(!f("attacks.name").single_valued());
    }

    #[test]
    fn same_index_whatever_the_chunking() {
        // 9,000 records make three chunks; every posting list must equal the one a naive
        // walk over the records computes. `e` repeats values with escapes next to plain
        // ones (decoded values are not kept as a field's last value).
        let escaped = [
            r#"q\"x y"#,
            r#"q\"x y"#,
            "qx y",
            r#"line\nbreak"#,
            r#"q\\x y"#,
        ];
        let owned: Vec<String> = (0..9000)
            .map(|i| {
                format!(
                    r#"{{"id":"c{i}","n":{},"w":"w{} x","k":["k{}"],"e":["{}","{}"]}}"#,
                    i % 7,
                    i % 13,
                    i % 5,
                    escaped[i % 5],
                    escaped[i % 3],
                )
            })
            .collect();
        let docs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let whole = build(&docs);
        let mut merged_terms = 0;
        for (_, field) in whole.fields() {
            let path: Vec<&str> = field.path().split('.').collect();
            let mut expected: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
            for (i, d) in docs.iter().enumerate() {
                crate::json::walk::values_at(d, &path, &mut |v| {
                    if let crate::json::walk::Scalar::Str(s) = v {
                        let folded = crate::text::fold(&s).into_owned();
                        let terms: Vec<String> = match field.kind() {
                            FieldKind::Keyword => vec![folded],
                            FieldKind::Text => {
                                crate::text::words(&folded).map(str::to_string).collect()
                            }
                        };
                        for t in terms {
                            let ids = expected.entry(t).or_default();
                            if ids.last() != Some(&(i as u32)) {
                                ids.push(i as u32);
                            }
                        }
                    }
                    true
                });
            }
            let got: std::collections::BTreeMap<String, Vec<u32>> = field
                .terms()
                .iter()
                .map(|(t, p)| (t.to_string(), p.iter().collect()))
                .collect();
            merged_terms += got.len();
            assert_eq!(got, expected, "{}", field.path());
        }
        assert!(merged_terms > 9000);
        let n = whole.field(whole.lookup("n").unwrap());
        assert_eq!(n.numbers().get(3.0).unwrap().len(), 9000 / 7 + 1);
    }
}
