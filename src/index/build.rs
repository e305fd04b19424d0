//! Building an [`Index`] from records already in their final order.
//!
//! The records are cut into contiguous chunks of ids; each chunk is walked on its own
//! (in parallel) into a partial index whose postings already hold final ids, pushed in
//! ascending order. Partials are then merged field by field (in parallel): because
//! chunks are ordered ranges, merging is a union of disjoint, ordered bitmaps. Fields are
//! numbered by sorted path, so the result is the same whatever the chunking or the thread
//! count.

use std::collections::hash_map::Entry;
use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use super::fields::{field_kind, FieldKind};
use super::hash::FxHashMap;
use super::vocab::{number_key, NumVocab, Vocab};
use super::{Field, Index};
use crate::json::walk::{walk, Scalar, Visit};
use crate::par;
use crate::text::{fold_into, whole_number, words};

/// The number of records per chunk for a collection of `n`: sixteen chunks, but no chunk
/// smaller than 4,096 records. A function of `n` only, never of the thread count.
fn chunk_len(n: usize) -> usize {
    n.div_ceil(16).max(4096)
}

/// Builds the index of `docs` (compact JSON records; record `i` gets id `i`).
pub(crate) fn build(docs: &[Box<str>]) -> Index {
    let chunks: Vec<(u32, &[Box<str>])> = docs
        .chunks(chunk_len(docs.len()))
        .enumerate()
        .map(|(i, chunk)| ((i * chunk_len(docs.len())) as u32, chunk))
        .collect();
    let partials = par::map(chunks, |(base, chunk)| {
        let mut builder = ChunkBuilder::new();
        for (i, doc) in chunk.iter().enumerate() {
            builder.doc = base + i as u32;
            walk(doc, &mut builder);
        }
        builder.fields
    });
    merge(partials)
}

/// Record ids holding one term, ascending, without repeats. Plain vectors while
/// building (a push is one compare and one store); bitmaps once merged.
type Ids = Vec<u32>;

fn push_id(ids: &mut Ids, doc: u32) {
    if ids.last() != Some(&doc) {
        ids.push(doc);
    }
}

/// The terms of a field in one chunk: each distinct term gets a slot.
#[derive(Default)]
struct Terms {
    slots: FxHashMap<Box<str>, u32>,
    ids: Vec<Ids>,
}

impl Terms {
    fn slot(&mut self, term: &str) -> u32 {
        if let Some(&slot) = self.slots.get(term) {
            return slot;
        }
        let slot = self.ids.len() as u32;
        self.slots.insert(term.into(), slot);
        self.ids.push(Ids::new());
        slot
    }

    fn into_pairs(self) -> impl Iterator<Item = (Box<str>, Ids)> {
        let mut ids: Vec<Option<Ids>> = self.ids.into_iter().map(Some).collect();
        self.slots
            .into_iter()
            .map(move |(term, slot)| (term, ids[slot as usize].take().unwrap_or_default()))
    }
}

/// A field as seen by one chunk: also a node of the path trie.
struct PartialField {
    path: Box<str>,
    kind: FieldKind,
    exists: Ids,
    terms: Terms,
    numbers: FxHashMap<u64, Ids>,
    numeric_strings: FxHashMap<u64, Ids>,
    holds_objects: bool,
    /// Child keys and their field numbers, in first-seen order.
    children: Vec<(Box<str>, u32)>,
    /// Where the next child key is most likely to be found: records of one collection tend
    /// to write their keys in the same order.
    hint: usize,
    /// The last string value seen here and the slots of its terms: many fields repeat
    /// their values (`rarity`, `currency`, `language`), which then cost one compare.
    memo_value: String,
    memo_slots: Vec<u32>,
    memo_number: Option<f64>,
}

impl PartialField {
    fn new(path: Box<str>) -> PartialField {
        PartialField {
            kind: field_kind(&path),
            path,
            exists: Ids::new(),
            terms: Terms::default(),
            numbers: FxHashMap::default(),
            numeric_strings: FxHashMap::default(),
            holds_objects: false,
            children: Vec::new(),
            hint: 0,
            memo_value: String::new(),
            memo_slots: Vec::new(),
            memo_number: None,
        }
    }

    /// Records that `doc` holds the string `value` here.
    fn add_str(&mut self, value: &str, doc: u32, scratch: &mut String) {
        if self.memo_value != value || self.exists.is_empty() {
            scratch.clear();
            fold_into(value, scratch);
            self.memo_slots.clear();
            match self.kind {
                FieldKind::Keyword => {
                    let slot = self.terms.slot(scratch);
                    self.memo_slots.push(slot);
                }
                FieldKind::Text => {
                    for word in words(scratch) {
                        let slot = self.terms.slot(word);
                        self.memo_slots.push(slot);
                    }
                }
            }
            self.memo_value.clear();
            self.memo_value.push_str(value);
            self.memo_number = whole_number(value);
        }
        for &slot in &self.memo_slots {
            push_id(&mut self.terms.ids[slot as usize], doc);
        }
        if let Some(x) = self.memo_number {
            push_id(self.numeric_strings.entry(number_key(x)).or_default(), doc);
        }
    }
}

/// Walks the records of one chunk into partial fields (field 0 is the record itself).
struct ChunkBuilder {
    fields: Vec<PartialField>,
    stack: Vec<u32>,
    doc: u32,
    scratch: String,
}

impl ChunkBuilder {
    fn new() -> ChunkBuilder {
        ChunkBuilder {
            fields: vec![PartialField::new("".into())],
            stack: vec![0],
            doc: 0,
            scratch: String::new(),
        }
    }

    fn current(&self) -> usize {
        *self.stack.last().unwrap_or(&0) as usize
    }

    fn child(&mut self, parent: usize, key: &str) -> u32 {
        let node = &mut self.fields[parent];
        let n = node.children.len();
        for probe in 0..n {
            let i = (node.hint + probe) % n;
            if &*node.children[i].0 == key {
                node.hint = i + 1;
                return node.children[i].1;
            }
        }
        let path: Box<str> = if parent == 0 {
            key.into()
        } else {
            format!("{}.{key}", node.path).into()
        };
        let id = self.fields.len() as u32;
        let node = &mut self.fields[parent];
        node.children.push((key.into(), id));
        node.hint = node.children.len();
        self.fields.push(PartialField::new(path));
        id
    }
}

impl Visit for ChunkBuilder {
    fn enter(&mut self, key: &str) {
        let parent = self.current();
        let child = self.child(parent, key);
        self.stack.push(child);
    }

    fn leave(&mut self) {
        self.stack.pop();
    }

    fn object(&mut self) {
        let current = self.current();
        self.fields[current].holds_objects = true;
    }

    fn scalar(&mut self, value: Scalar<'_>) {
        let current = self.current();
        let doc = self.doc;
        let field = &mut self.fields[current];
        match value {
            Scalar::Str(s) => field.add_str(&s, doc, &mut self.scratch),
            Scalar::Num(text) => {
                if let Ok(x) = text.parse::<f64>() {
                    push_id(field.numbers.entry(number_key(x)).or_default(), doc);
                }
            }
            Scalar::Bool(b) => {
                field.add_str(if b { "true" } else { "false" }, doc, &mut self.scratch)
            }
        }
        push_id(&mut field.exists, doc);
    }
}

/// Unites the chunks' partial fields, field by field.
fn merge(partials: Vec<Vec<PartialField>>) -> Index {
    let mut by_path: BTreeMap<Box<str>, Vec<PartialField>> = BTreeMap::new();
    for chunk in partials {
        for field in chunk.into_iter().skip(1) {
            by_path.entry(field.path.clone()).or_default().push(field);
        }
    }
    let groups: Vec<Vec<PartialField>> = by_path.into_values().collect();
    let fields = par::map(groups, merge_field);
    // A path that only ever held `null` or empty arrays is not a field: null counts as
    // absent (contract section 1).
    let fields = fields
        .into_iter()
        .filter(|f| f.has_values() || f.holds_objects())
        .collect();
    Index::new(fields)
}

fn merge_field(parts: Vec<PartialField>) -> Field {
    let mut parts = parts.into_iter();
    let first = parts.next().expect("a group holds at least one part");
    let (path, kind) = (first.path.clone(), first.kind);
    let mut exists = first.exists;
    let mut holds_objects = first.holds_objects;
    let mut terms: FxHashMap<Box<str>, Ids> = first.terms.into_pairs().collect();
    let mut numbers = first.numbers;
    let mut numeric_strings = first.numeric_strings;
    for part in parts {
        exists.extend(part.exists);
        holds_objects |= part.holds_objects;
        unite(&mut terms, part.terms.into_pairs());
        unite(&mut numbers, part.numbers);
        unite(&mut numeric_strings, part.numeric_strings);
    }
    Field {
        path,
        kind,
        exists: bitmap(exists),
        terms: Vocab::from_unsorted(terms.into_iter().map(|(t, ids)| (t, bitmap(ids))).collect()),
        numbers: NumVocab::from_unsorted(
            numbers
                .into_iter()
                .map(|(n, ids)| (n, bitmap(ids)))
                .collect(),
        ),
        numeric_strings: NumVocab::from_unsorted(
            numeric_strings
                .into_iter()
                .map(|(n, ids)| (n, bitmap(ids)))
                .collect(),
        ),
        holds_objects,
    }
}

/// The bitmap of ids that are ascending (chunks are merged in order).
fn bitmap(ids: Ids) -> RoaringBitmap {
    RoaringBitmap::from_sorted_iter(ids).unwrap_or_default()
}

/// Appends the ids of `from` to those of `into`, term by term (`from` is a later chunk).
fn unite<K: std::hash::Hash + Eq>(
    into: &mut FxHashMap<K, Ids>,
    from: impl IntoIterator<Item = (K, Ids)>,
) {
    for (key, ids) in from {
        match into.entry(key) {
            Entry::Occupied(mut e) => e.get_mut().extend(ids),
            Entry::Vacant(e) => {
                e.insert(ids);
            }
        }
    }
}
