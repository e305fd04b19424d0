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

/// A field as seen by one chunk: also a node of the path trie.
struct PartialField {
    path: Box<str>,
    kind: FieldKind,
    exists: RoaringBitmap,
    terms: FxHashMap<Box<str>, RoaringBitmap>,
    numbers: FxHashMap<u64, RoaringBitmap>,
    numeric_strings: FxHashMap<u64, RoaringBitmap>,
    holds_objects: bool,
    /// Child keys and their field numbers, in first-seen order.
    children: Vec<(Box<str>, u32)>,
    /// Where the next child key is most likely to be found: records of one collection tend
    /// to write their keys in the same order.
    hint: usize,
}

impl PartialField {
    fn new(path: Box<str>) -> PartialField {
        PartialField {
            kind: field_kind(&path),
            path,
            exists: RoaringBitmap::new(),
            terms: FxHashMap::default(),
            numbers: FxHashMap::default(),
            numeric_strings: FxHashMap::default(),
            holds_objects: false,
            children: Vec::new(),
            hint: 0,
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

fn add_term(terms: &mut FxHashMap<Box<str>, RoaringBitmap>, term: &str, doc: u32) {
    match terms.get_mut(term) {
        Some(bitmap) => {
            bitmap.try_push(doc).ok();
        }
        None => {
            let mut bitmap = RoaringBitmap::new();
            bitmap.try_push(doc).ok();
            terms.insert(term.into(), bitmap);
        }
    }
}

fn add_number(numbers: &mut FxHashMap<u64, RoaringBitmap>, x: f64, doc: u32) {
    numbers.entry(number_key(x)).or_default().try_push(doc).ok();
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
        field.exists.try_push(doc).ok();
        match value {
            Scalar::Str(s) => {
                self.scratch.clear();
                fold_into(&s, &mut self.scratch);
                match field.kind {
                    FieldKind::Keyword => add_term(&mut field.terms, &self.scratch, doc),
                    FieldKind::Text => {
                        for word in words(&self.scratch) {
                            add_term(&mut field.terms, word, doc);
                        }
                    }
                }
                if let Some(x) = whole_number(&s) {
                    add_number(&mut field.numeric_strings, x, doc);
                }
            }
            Scalar::Num(text) => {
                if let Ok(x) = text.parse::<f64>() {
                    add_number(&mut field.numbers, x, doc);
                }
            }
            Scalar::Bool(b) => add_term(&mut field.terms, if b { "true" } else { "false" }, doc),
        }
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
    let mut base = parts.next().expect("a group holds at least one part");
    for part in parts {
        base.exists |= part.exists;
        base.holds_objects |= part.holds_objects;
        unite(&mut base.terms, part.terms);
        unite(&mut base.numbers, part.numbers);
        unite(&mut base.numeric_strings, part.numeric_strings);
    }
    base.exists.optimize();
    Field {
        path: base.path,
        kind: base.kind,
        exists: base.exists,
        terms: Vocab::from_unsorted(base.terms.into_iter().collect()),
        numbers: NumVocab::from_unsorted(base.numbers.into_iter().collect()),
        numeric_strings: NumVocab::from_unsorted(base.numeric_strings.into_iter().collect()),
        holds_objects: base.holds_objects,
    }
}

fn unite<K: std::hash::Hash + Eq>(
    into: &mut FxHashMap<K, RoaringBitmap>,
    from: FxHashMap<K, RoaringBitmap>,
) {
    for (key, bitmap) in from {
        match into.entry(key) {
            Entry::Occupied(mut e) => *e.get_mut() |= bitmap,
            Entry::Vacant(e) => {
                e.insert(bitmap);
            }
        }
    }
}
