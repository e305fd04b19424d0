//! Building an [`Index`] from records already in their final order.
//!
//! The records are cut into contiguous chunks of ids; each chunk is walked on its own (in
//! parallel). Every distinct term, number and word pair of a chunk gets a *slot*, and the
//! walk appends each record's slots to one array, noting where each record's slots end — no
//! vector per term, so loading makes few small allocations; which records hold a value at
//! each path is a bitset per field. A finished chunk counting-sorts the slots into one
//! flat array of 16-bit offsets from its first record, grouped by slot and ascending
//! within each (records are walked in order), and lists each field's keys in sorted order
//! with their runs in that array.
//!
//! Chunks are then merged field by field (in parallel): the chunks' keys are sorted
//! together and each key's runs concatenated in chunk order — chunks are ordered ranges of
//! ids, so the result is ascending — straight into the final vocabulary (short lists
//! inline, long ones as bitmaps). Fields are numbered by sorted path, so the result is the
//! same whatever the chunking or the thread count.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Range;

use super::slots::{same_bytes, NumSlots, SortedStrs, StrSlots};
use super::vocab::{bitmap_of_bits, bitmap_of_sorted, number_key, NumVocabBuilder, VocabBuilder};
use super::{Field, Index};
use crate::json::walk::{walk, Scalar, Visit};
use crate::naming::{field_kind, FieldKind};
use crate::par;
use crate::text::{fold_into, numeric_string, word_spans};

pub(crate) mod joint;

/// Text values of at most this many words have their consecutive word pairs indexed
/// ([`super::Field::pairs`]); longer ones are marked in [`super::Field::long_values`].
pub(crate) const MAX_PAIRED_WORDS: usize = 6;

/// The number of records per chunk for a collection of `n`: sixteen chunks, but no chunk
/// smaller than 4,096 records, nor larger than [`MAX_CHUNK_LEN`]. A function of `n` only,
/// never of the thread count.
fn chunk_len(n: usize) -> usize {
    n.div_ceil(16).clamp(4096, MAX_CHUNK_LEN)
}

/// `docs` cut into chunks of [`chunk_len`] records, each with the id of its first.
fn chunks_of<'d, 's>(docs: &'d [&'s str]) -> Vec<(u32, &'d [&'s str])> {
    let len = chunk_len(docs.len());
    docs.chunks(len)
        .enumerate()
        .map(|(i, chunk)| ((i * len) as u32, chunk))
        .collect()
}

/// The field number on the walk's stack under a path that is not indexed.
const SKIPPED: u32 = u32::MAX;

/// A chunk's records are numbered from its first in 16 bits ([`Chunk::ids`]).
const MAX_CHUNK_LEN: usize = 1 << 16;

/// Builds the index of `docs` (compact JSON records; record `i` gets id `i`).
#[cfg(test)]
pub(crate) fn build(docs: &[&str]) -> Index {
    build_at(docs, "", &[])
}

/// Builds the index of `docs`, the elements of an array of objects at `at` (`variants.`,
/// with its dot; empty for records): its fields are named relative to an element, but
/// their kinds are those of their whole paths (`name` of a variant is a keyword field, as
/// `variants.name` is). Nothing under the relative paths `skip` is indexed (the arrays of
/// objects inside the elements, which have elements of their own).
pub(crate) fn build_at(docs: &[&str], at: &str, skip: &[&str]) -> Index {
    let chunks = chunks_of(docs);
    let walked: par::Pool<Vec<u32>> = par::Pool::default();
    let partials = par::map(chunks, |(base, chunk)| {
        let mut builder = ChunkBuilder::new(base, chunk.len(), at, skip);
        builder.walked = walked.take();
        for (i, doc) in chunk.iter().enumerate() {
            builder.doc = base + i as u32;
            walk(doc, &mut builder);
            builder.record_ends.push(builder.walked.len() as u32);
        }
        let (chunk, mut spare) = builder.finish();
        spare.clear();
        walked.give(spare);
        chunk
    });
    merge(partials)
}

/// A field as seen by one chunk's walk (over texts that live for `'a`): also a node of
/// the path trie.
struct PartialField<'a> {
    path: Box<str>,
    kind: FieldKind,
    /// The chunk's records holding a scalar here, one bit each (bit `i` is record
    /// `base + i`); empty until the first. Most fields hold a value in most records, so a
    /// bitset costs less than a posting per record, and shows a second value at no cost.
    exists: Vec<u64>,
    terms: StrSlots,
    numbers: NumSlots,
    numeric_strings: NumSlots,
    holds_objects: bool,
    /// Some record holds two or more scalar values here.
    multi: bool,
    /// Word pairs of short text values (`"flame burst"`), and the slot of the records
    /// holding a longer text value.
    pairs: StrSlots,
    long: u32,
    /// Child keys and their field numbers, in first-seen order, and whether each key can
    /// be guessed ([`Visit::enter_expected`]: it holds no `"` or `\`).
    children: Vec<(Box<str>, u32, bool)>,
    /// Where the next child key is most likely to be found: records of one collection tend
    /// to write their keys in the same order.
    hint: usize,
    /// The last string value seen here (borrowed from its record's text, so keeping it
    /// copies nothing) and its slots: many fields repeat their values from one record to
    /// the next (`rarity`, `currency`, `language`), which then cost one compare. `None`
    /// after a value that was not in the text as it stands (an escaped one, decoded).
    memo_value: Option<&'a str>,
    memo: ValueSlots,
    /// Values seen before and their slots, while this field's values repeat often
    /// enough to be worth it (see [`ValueCache`]).
    cache: ValueCache,
}

/// The slots one string value adds to a record: its terms and word pairs (a range of
/// [`ValueCache::slots`]), its number when it is a decimal number, and whether it is a long
/// text value.
#[derive(Debug, Clone, Copy, Default)]
struct ValueSlots {
    start: u32,
    end: u32,
    number: Option<u32>,
    long: bool,
}

/// A field's values already folded and split, with their slots. Folding (Unicode
/// normalisation for non-ASCII text), splitting into words and looking up each word and
/// pair costs far more than one hash lookup of the raw value, and most fields draw their
/// values from a small set (`attacks.name`, `types`, `artist`, prices' `condition`).
/// Fields whose values rarely repeat (ids, flavor text) switch the cache off after a
/// while, and then keep only the slots of the current value.
#[derive(Debug)]
struct ValueCache {
    on: bool,
    /// The values met, each numbering its entry in `cached` (interned in one buffer: no
    /// allocation per value).
    values: StrSlots,
    cached: Vec<ValueSlots>,
    /// The slot lists of the cached values, then (at the end) the current uncached one.
    slots: Vec<u32>,
    /// Where the cached values' lists end.
    kept: usize,
    hits: u32,
    misses: u32,
}

impl Default for ValueCache {
    fn default() -> ValueCache {
        ValueCache {
            on: true,
            values: StrSlots::default(),
            cached: Vec::new(),
            slots: Vec::new(),
            kept: 0,
            hits: 0,
            misses: 0,
        }
    }
}

impl ValueCache {
    /// Misses after which a field that hits less than once in [`Self::HIT_RATIO`] misses
    /// stops caching.
    const TRIAL: u32 = 512;
    const HIT_RATIO: u32 = 4;

    fn get(&mut self, value: &str) -> Option<ValueSlots> {
        if !self.on {
            return None;
        }
        let found = self.values.get(value).map(|i| self.cached[i as usize]);
        match found {
            Some(_) => self.hits += 1,
            None => {
                self.misses += 1;
                if self.misses > Self::TRIAL && self.hits * Self::HIT_RATIO < self.misses {
                    self.on = false;
                    self.values = StrSlots::default();
                    self.cached = Vec::new();
                }
            }
        }
        found
    }
}

impl PartialField<'_> {
    fn new(path: Box<str>, kind: FieldKind) -> Self {
        PartialField {
            kind,
            path,
            exists: Vec::new(),
            terms: StrSlots::default(),
            numbers: NumSlots::default(),
            numeric_strings: NumSlots::default(),
            holds_objects: false,
            multi: false,
            pairs: StrSlots::default(),
            long: u32::MAX,
            children: Vec::new(),
            hint: 0,
            memo_value: None,
            memo: ValueSlots::default(),
            cache: ValueCache::default(),
        }
    }
}

/// Walks the records of one chunk (field 0 is the record itself), whose texts live for
/// `'a`.
#[derive(Default)]
struct ChunkBuilder<'a> {
    /// The path of the records from the top, and the paths not indexed (see
    /// [`build_at`]).
    at: &'a str,
    skip: &'a [&'a str],
    fields: Vec<PartialField<'a>>,
    stack: Vec<u32>,
    /// The chunk's first record, its number of records, and the record being walked.
    base: u32,
    len: u32,
    doc: u32,
    /// The value being indexed, folded.
    scratch: String,
    /// The key of one word pair, `"w1 w2"`, when it is not a slice of the value.
    pair_scratch: String,
    /// How many slots there are.
    slot_count: u32,
    /// The slots each record was added to, record after record, in walk order (a slot
    /// may repeat within a record: [`Self::finish`] drops the repeats). Nothing per slot
    /// is touched while walking: at a million records the per-slot counts outgrow the
    /// caches, and updating them here would stall on a miss at every value, where the
    /// counting loops of `finish` overlap their misses.
    walked: Vec<u32>,
    /// Per record walked: where its slots end in `walked`.
    record_ends: Vec<u32>,
}

impl<'a> ChunkBuilder<'a> {
    /// The builder of a chunk of `len` records from `base`, at `at` skipping `skip` (see
    /// [`build_at`]), its walk at the records' root.
    fn new(base: u32, len: usize, at: &'a str, skip: &'a [&'a str]) -> Self {
        let mut builder = ChunkBuilder {
            base,
            len: len as u32,
            record_ends: Vec::with_capacity(len),
            at,
            skip,
            ..ChunkBuilder::default()
        };
        builder
            .fields
            .push(PartialField::new("".into(), FieldKind::Text));
        builder.stack.push(0);
        builder
    }

    fn new_slot(&mut self) -> u32 {
        self.slot_count += 1;
        self.slot_count - 1
    }

    /// Adds the current record to slot `slot`.
    fn add(&mut self, slot: u32) {
        self.walked.push(slot);
    }

    fn current(&self) -> usize {
        *self.stack.last().unwrap_or(&0) as usize
    }

    /// Whether the walk is under a path that is not indexed.
    fn skipping(&self) -> bool {
        self.stack.last() == Some(&SKIPPED)
    }

    fn child(&mut self, parent: usize, key: &str) -> u32 {
        let node = &mut self.fields[parent];
        let n = node.children.len();
        // The hint is at most `n`: probing starts there and wraps around once.
        let mut i = node.hint;
        for _ in 0..n {
            if i >= n {
                i -= n;
            }
            if same_bytes(node.children[i].0.as_bytes(), key.as_bytes()) {
                node.hint = i + 1;
                return node.children[i].1;
            }
            i += 1;
        }
        let path: Box<str> = if parent == 0 {
            key.into()
        } else {
            format!("{}.{key}", node.path).into()
        };
        let plain = !key.contains(['"', '\\']);
        if self.skip.contains(&&*path) {
            let node = &mut self.fields[parent];
            node.children.push((key.into(), SKIPPED, plain));
            node.hint = node.children.len();
            return SKIPPED;
        }
        let id = self.fields.len() as u32;
        let node = &mut self.fields[parent];
        node.children.push((key.into(), id, plain));
        node.hint = node.children.len();
        let kind = if self.at.is_empty() {
            field_kind(&path)
        } else {
            field_kind(&format!("{}{path}", self.at))
        };
        self.fields.push(PartialField::new(path, kind));
        id
    }

    /// The slot of term `term` of field `f`.
    fn term_slot(&mut self, f: usize, term: &str) -> u32 {
        self.string_slot(f, term, |field| &mut field.terms)
    }

    /// The slot of word pair `pair` (`"w1 w2"`) of field `f`.
    fn pair_slot(&mut self, f: usize, pair: &str) -> u32 {
        self.string_slot(f, pair, |field| &mut field.pairs)
    }

    /// The slot of `key` in the map `map` picks from field `f`, made on first sight.
    fn string_slot(
        &mut self,
        f: usize,
        key: &str,
        map: for<'f> fn(&'f mut PartialField<'a>) -> &'f mut StrSlots,
    ) -> u32 {
        // The slot a new key gets is the next one `new_slot` makes.
        let next = self.slot_count;
        let slot = map(&mut self.fields[f]).get_or_insert(key, next);
        if slot == next {
            self.new_slot();
        }
        slot
    }

    fn number_slot(&mut self, f: usize, x: f64, json: bool) -> u32 {
        // The slot a new number gets is the next one `new_slot` makes.
        let next = self.slot_count;
        let field = &mut self.fields[f];
        let map = if json {
            &mut field.numbers
        } else {
            &mut field.numeric_strings
        };
        let slot = map.get_or_insert(number_key(x), next);
        if slot == next {
            self.new_slot();
        }
        slot
    }

    /// Records that the current record holds the string `value` (a slice of its text, or
    /// static) at field `f`.
    fn add_str(&mut self, f: usize, value: &'a str) {
        let field = &self.fields[f];
        if !field
            .memo_value
            .is_some_and(|memo| same_bytes(memo.as_bytes(), value.as_bytes()))
        {
            let memo = self.slots_of(f, value);
            let field = &mut self.fields[f];
            field.memo = memo;
            field.memo_value = Some(value);
        }
        self.add_slots(f, self.fields[f].memo);
    }

    /// [`Self::add_str`] for a value decoded from escapes, which is not in the text as it
    /// stands: not kept as the field's last value.
    fn add_decoded_str(&mut self, f: usize, value: &str) {
        let slots = self.slots_of(f, value);
        self.fields[f].memo_value = None;
        self.add_slots(f, slots);
    }

    /// The slots string `value` adds at field `f`: cached, or found now. Always inlined,
    /// like [`Self::add_slots`]: called for most values of a record, and the call itself
    /// costs more than the work of a cache hit.
    #[inline(always)]
    fn slots_of(&mut self, f: usize, value: &str) -> ValueSlots {
        match self.fields[f].cache.get(value) {
            Some(cached) => cached,
            None => self.value_slots(f, value),
        }
    }

    /// Adds the current record to the slots one `value` lists at field `f`.
    #[inline(always)]
    fn add_slots(&mut self, f: usize, value: ValueSlots) {
        let listed = &self.fields[f].cache.slots[value.start as usize..value.end as usize];
        self.walked.extend_from_slice(listed);
        if let Some(slot) = value.number {
            self.add(slot);
        }
        if value.long {
            if self.fields[f].long == u32::MAX {
                self.fields[f].long = self.new_slot();
            }
            self.add(self.fields[f].long);
        }
    }

    /// Folds and splits a string value of field `f` not met (or not cached) before, and
    /// finds the slots of its terms, word pairs and number; caches them while the field
    /// caches.
    fn value_slots(&mut self, f: usize, value: &str) -> ValueSlots {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        fold_into(value, &mut scratch);
        let mut cache = std::mem::take(&mut self.fields[f].cache);
        cache.slots.truncate(cache.kept);
        let start = cache.slots.len() as u32;
        let mut long = false;
        match self.fields[f].kind {
            FieldKind::Keyword => cache.slots.push(self.term_slot(f, &scratch)),
            FieldKind::Text => {
                let mut spans: smallvec::SmallVec<[(usize, usize); 16]> = smallvec::SmallVec::new();
                // A text whose words are joined by single spaces (most are) holds its word
                // pairs as they are; otherwise each pair is written out.
                let joined = word_spans(&scratch, &mut spans);
                for &(start, end) in &spans {
                    cache.slots.push(self.term_slot(f, &scratch[start..end]));
                }
                if spans.len() > MAX_PAIRED_WORDS {
                    long = true;
                } else {
                    let mut pair = std::mem::take(&mut self.pair_scratch);
                    for two in spans.windows(2) {
                        let key = if joined {
                            &scratch[two[0].0..two[1].1]
                        } else {
                            pair.clear();
                            pair.push_str(&scratch[two[0].0..two[0].1]);
                            pair.push(' ');
                            pair.push_str(&scratch[two[1].0..two[1].1]);
                            &pair
                        };
                        cache.slots.push(self.pair_slot(f, key));
                    }
                    self.pair_scratch = pair;
                }
            }
        }
        let slots = ValueSlots {
            start,
            end: cache.slots.len() as u32,
            number: numeric_string(value).map(|x| self.number_slot(f, x, false)),
            long,
        };
        if cache.on {
            cache.values.get_or_insert(value, cache.cached.len() as u32);
            cache.cached.push(slots);
            cache.kept = cache.slots.len();
        }
        self.fields[f].cache = cache;
        self.scratch = scratch;
        slots
    }

    /// Packs the chunk: counting-sorts the walked slots into runs by slot and lists each
    /// field's keys in order; each field's `exists` bitset is kept as it is (a bit per
    /// record is a sixteenth of an id per record, and most fields hold a value in most
    /// records). Gives the walked-slots buffer back for another chunk.
    fn finish(self) -> (Chunk, Vec<u32>) {
        let (fields, mut walked, ends, base, slot_count) = self.into_sorted();
        let chunk = Chunk::of_records(fields, &mut walked, &ends, base, slot_count);
        (chunk, walked)
    }

    /// The walked chunk's fields with their keys sorted, the walked slots, where each
    /// record's end, the first record and the number of slots.
    fn into_sorted(self) -> (Vec<SortedField>, Vec<u32>, Vec<u32>, u32, u32) {
        let ChunkBuilder {
            fields,
            slot_count,
            walked,
            record_ends,
            base,
            ..
        } = self;
        let fields = fields
            .into_iter()
            .map(|f| {
                let numbers = |map: NumSlots| {
                    let mut list: Vec<(u64, u32)> = map.into_pairs().collect();
                    list.sort_unstable_by(|a, b| by_number(&a.0, &b.0));
                    list
                };
                SortedField {
                    exists: f.exists,
                    terms: f.terms.into_sorted(|slot| slot),
                    pairs: f.pairs.into_sorted(|slot| slot),
                    long: f.long,
                    numbers: numbers(f.numbers),
                    numeric_strings: numbers(f.numeric_strings),
                    path: f.path,
                    kind: f.kind,
                    holds_objects: f.holds_objects,
                    multi: f.multi,
                }
            })
            .collect();
        (fields, walked, record_ends, base, slot_count)
    }
}

/// A walked chunk's field with its keys in order, each with its slot: what the chunk of
/// the records and the chunks of their elements are made from.
struct SortedField {
    path: Box<str>,
    kind: FieldKind,
    exists: Vec<u64>,
    terms: SortedStrs<u32>,
    pairs: SortedStrs<u32>,
    /// The slot of the records holding a long text value (`u32::MAX`: none).
    long: u32,
    numbers: Vec<(u64, u32)>,
    numeric_strings: Vec<(u64, u32)>,
    holds_objects: bool,
    multi: bool,
}

impl SortedField {
    /// The field of the chunk whose slots `starts` groups (every key holds records).
    fn into_chunk_field(self, starts: &[u32]) -> ChunkField {
        let run = |slot: u32| starts[slot as usize]..starts[slot as usize + 1];
        let numbers =
            |list: Vec<(u64, u32)>| list.into_iter().map(|(k, slot)| (k, run(slot))).collect();
        ChunkField {
            exists: self.exists,
            terms: self.terms.with_runs(run),
            pairs: self.pairs.with_runs(run),
            long: if self.long == u32::MAX {
                0..0
            } else {
                run(self.long)
            },
            numbers: numbers(self.numbers),
            numeric_strings: numbers(self.numeric_strings),
            path: self.path,
            kind: self.kind,
            holds_objects: self.holds_objects,
            multi: self.multi,
        }
    }

    /// This field as a field of elements named `path` in a chunk of elements where
    /// `run(slot)` are the elements holding a slot, with the elements' own `exists`,
    /// `multi` and `holds_objects`: the keys no element of that chunk holds are left out.
    fn element_field(
        &self,
        path: Box<str>,
        exists: Vec<u64>,
        multi: bool,
        holds_objects: bool,
        run: impl Fn(u32) -> Range<u32>,
    ) -> ChunkField {
        let run = &run;
        let numbers = |list: &[(u64, u32)]| {
            list.iter()
                .map(|&(k, slot)| (k, run(slot)))
                .filter(|(_, r)| !r.is_empty())
                .collect()
        };
        ChunkField {
            exists,
            terms: self.terms.with_nonempty_runs(run),
            pairs: self.pairs.with_nonempty_runs(run),
            long: if self.long == u32::MAX {
                0..0
            } else {
                run(self.long)
            },
            numbers: numbers(&self.numbers),
            numeric_strings: numbers(&self.numeric_strings),
            path,
            kind: self.kind,
            holds_objects,
            multi,
        }
    }
}

/// A chunk's walked slots counted and grouped: `ids[starts[s]..starts[s + 1]]` are the
/// docs holding slot `s`, ascending, as 16-bit offsets from the chunk's first.
struct Grouped {
    ids: Vec<u16>,
    starts: Vec<u32>,
}

/// Counting-sorts the slots `walked[from..]` of the docs ending at `ends` (positions in
/// `walked`; at most [`MAX_CHUNK_LEN`] docs) by slot. A slot met again within a doc is
/// dropped (marked `REPEAT` in `walked`).
fn group_by_slot(walked: &mut [u32], ends: &[u32], from: usize, slot_count: u32) -> Grouped {
    const REPEAT: u32 = u32::MAX;
    // Per slot: the last doc counted and how many docs, side by side (one cache line per
    // slot).
    let mut counted = vec![(u32::MAX, 0u32); slot_count as usize];
    let mut start = from;
    for (doc, &end) in ends.iter().enumerate() {
        let (doc, end) = (doc as u32, end as usize);
        for slot in &mut walked[start..end] {
            let (last, count) = &mut counted[*slot as usize];
            if *last == doc {
                *slot = REPEAT;
            } else {
                *last = doc;
                *count += 1;
            }
        }
        start = end;
    }
    let mut starts = Vec::with_capacity(counted.len() + 1);
    let mut total = 0u32;
    for &(_, count) in &counted {
        starts.push(total);
        total += count;
    }
    starts.push(total);
    drop(counted);
    let mut cursor = starts.clone();
    let mut ids = vec![0u16; total as usize];
    let mut start = from;
    for (offset, &end) in ends.iter().enumerate() {
        let end = end as usize;
        // Below 65,536: a chunk holds at most `MAX_CHUNK_LEN` docs.
        let offset = offset as u16;
        for &slot in &walked[start..end] {
            if slot != REPEAT {
                let at = &mut cursor[slot as usize];
                ids[*at as usize] = offset;
                *at += 1;
            }
        }
        start = end;
    }
    Grouped { ids, starts }
}

impl<'a> Visit<'a> for ChunkBuilder<'a> {
    fn enter(&mut self, key: &str) {
        if self.skipping() {
            self.stack.push(SKIPPED);
            return;
        }
        let parent = self.current();
        let child = self.child(parent, key);
        self.stack.push(child);
    }

    /// Enters the child after the last one met here (wrapping around to the first) when
    /// the text starts with its key.
    #[inline]
    fn enter_expected(&mut self, text: &[u8]) -> Option<usize> {
        if self.skipping() {
            return None;
        }
        let parent = self.current();
        let node = &mut self.fields[parent];
        let n = node.children.len();
        if n == 0 {
            return None;
        }
        let i = if node.hint >= n { 0 } else { node.hint };
        let (key, child, plain) = &node.children[i];
        let key = key.as_bytes();
        let matches = *plain
            && text.get(..key.len()).is_some_and(|t| same_bytes(t, key))
            && text.get(key.len()) == Some(&b'"');
        if !matches {
            return None;
        }
        let (len, child) = (key.len(), *child);
        node.hint = i + 1;
        self.stack.push(child);
        Some(len)
    }

    fn leave(&mut self) {
        self.stack.pop();
    }

    fn object(&mut self) {
        if self.skipping() {
            return;
        }
        let current = self.current();
        self.fields[current].holds_objects = true;
    }

    fn scalar(&mut self, value: Scalar<'a>) {
        if self.skipping() {
            return;
        }
        let f = self.current();
        match value {
            Scalar::Str(Cow::Borrowed(s)) => self.add_str(f, s),
            Scalar::Str(Cow::Owned(s)) => self.add_decoded_str(f, &s),
            Scalar::Num(text) => {
                if let Some(x) = short_decimal(text).or_else(|| text.parse::<f64>().ok()) {
                    let slot = self.number_slot(f, x, true);
                    self.add(slot);
                }
            }
            Scalar::Bool(b) => self.add_str(f, if b { "true" } else { "false" }),
        }
        let field = &mut self.fields[f];
        if field.exists.is_empty() {
            field.exists = vec![0; (self.len as usize).div_ceil(64)];
        }
        let at = (self.doc - self.base) as usize;
        let (word, bit) = (&mut field.exists[at / 64], 1u64 << (at % 64));
        if *word & bit != 0 {
            // A second scalar of this record at this path.
            field.multi = true;
        }
        *word |= bit;
    }
}

/// The value of a JSON number of at most 15 digits and no exponent (`-12`, `19.72`),
/// read without the general parser: its digits make an integer below 2^53, exact as an
/// `f64`, and so is a power of ten up to 10^15; one division of the two is then the
/// correctly rounded value of the decimal, which is what `str::parse` returns. `None` for
/// any other text (the caller then parses it).
fn short_decimal(text: &str) -> Option<f64> {
    const POWERS: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let b = text.as_bytes();
    let (negative, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let mut mantissa = 0u64;
    let (mut digits, mut fraction) = (0usize, None);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                digits += 1;
            }
            b'.' if fraction.is_none() && i > 0 => fraction = Some(b.len() - i - 1),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 || fraction == Some(0) {
        return None;
    }
    let x = mantissa as f64 / POWERS[fraction.unwrap_or(0)];
    Some(if negative { -x } else { x })
}

/// A walked chunk: its ids grouped by slot, and its fields.
pub(crate) struct Chunk {
    /// Its first record: `ids` count from it.
    base: u32,
    /// Record ids minus `base`, grouped by slot: half the memory of whole ids, and this is
    /// the load's largest transient buffer (all chunks' are alive until the merge).
    ids: Vec<u16>,
    fields: Vec<ChunkField>,
}

/// One field of a walked chunk: its keys in order, each with its run of the chunk's ids.
struct ChunkField {
    path: Box<str>,
    kind: FieldKind,
    /// Bit `i` set when record `base + i` holds a scalar here (empty when none does).
    exists: Vec<u64>,
    terms: SortedStrs<Range<u32>>,
    pairs: SortedStrs<Range<u32>>,
    long: Range<u32>,
    numbers: Vec<(u64, Range<u32>)>,
    numeric_strings: Vec<(u64, Range<u32>)>,
    holds_objects: bool,
    multi: bool,
}

impl ChunkField {
    /// The root of a chunk of elements, which holds no value (merging skips a chunk's
    /// first field).
    fn root() -> ChunkField {
        ChunkField {
            path: "".into(),
            kind: FieldKind::Text,
            exists: Vec::new(),
            terms: SortedStrs::default(),
            pairs: SortedStrs::default(),
            long: 0..0,
            numbers: Vec::new(),
            numeric_strings: Vec::new(),
            holds_objects: true,
            multi: false,
        }
    }
}

/// One field's `exists` bits over the whole collection: each chunk's bitset shifted to
/// its first record (chunks need not start at a multiple of 64).
fn exists_bits(ids: &[ChunkIds], parts: &[(usize, ChunkField)]) -> Vec<u64> {
    let end = parts
        .iter()
        .map(|(c, p)| ids[*c].0 as usize + 64 * p.exists.len())
        .max()
        .unwrap_or(0);
    let mut bits = vec![0u64; end.div_ceil(64)];
    for (c, p) in parts {
        let base = ids[*c].0 as usize;
        let shift = base % 64;
        for (w, &word) in p.exists.iter().enumerate() {
            let at = base / 64 + w;
            bits[at] |= word << shift;
            if shift != 0 {
                bits[at + 1] |= word >> (64 - shift);
            }
        }
    }
    bits
}

/// A chunk's first record and its ids counted from it ([`Chunk::base`], [`Chunk::ids`]).
type ChunkIds = (u32, Vec<u16>);

/// Keys of one kind of one chunk's field, each with its run of the chunk's ids.
type Keyed<K> = [(K, Range<u32>)];

fn by_number(a: &u64, b: &u64) -> Ordering {
    f64::from_bits(*a).total_cmp(&f64::from_bits(*b))
}

impl Chunk {
    /// The chunk of the records from `base` whose slots (out of `slot_count`) are
    /// `walked`, each record's ending at `ends`, with their `fields`.
    fn of_records(
        fields: Vec<SortedField>,
        walked: &mut [u32],
        ends: &[u32],
        base: u32,
        slot_count: u32,
    ) -> Chunk {
        let grouped = group_by_slot(walked, ends, 0, slot_count);
        let fields = fields
            .into_iter()
            .map(|f| f.into_chunk_field(&grouped.starts))
            .collect();
        Chunk {
            base,
            ids: grouped.ids,
            fields,
        }
    }

    /// Moves the chunk's ids up by `by` (its records were numbered from 0 in a part of a
    /// larger collection).
    pub(crate) fn rebase(&mut self, by: u32) {
        self.base += by;
    }

    /// Drops the fields whose path `drop` picks (never the root, field 0).
    pub(crate) fn drop_fields(&mut self, drop: impl Fn(&str) -> bool) {
        let mut first = true;
        self.fields
            .retain(|f| std::mem::take(&mut first) || !drop(&f.path));
    }
}

/// Unites the chunks' fields, field by field; the chunks are ordered ranges of ids.
pub(crate) fn merge(chunks: Vec<Chunk>) -> Index {
    let mut ids = Vec::with_capacity(chunks.len());
    let mut by_path: BTreeMap<Box<str>, Vec<(usize, ChunkField)>> = BTreeMap::new();
    for (c, chunk) in chunks.into_iter().enumerate() {
        ids.push((chunk.base, chunk.ids));
        for field in chunk.fields.into_iter().skip(1) {
            by_path
                .entry(field.path.clone())
                .or_default()
                .push((c, field));
        }
    }
    let groups: Vec<Vec<(usize, ChunkField)>> = by_path.into_values().collect();
    let fields = par::map(groups, |parts| merge_field(&ids, parts));
    // A path that only ever holds `null` or empty arrays is not a field: null counts as
    // absent.
    let fields = fields
        .into_iter()
        .filter(|f| f.has_values() || f.holds_objects())
        .collect();
    Index::new(fields)
}

/// Merges one kind of keys of one field over its chunks, in key order, calling `push`
/// with each key and its ids (ascending: chunks come in id order). `parts` are the
/// chunks' numbers and how many keys each has; `key(p, i)` is key `i` of part `p` and its
/// run of that chunk's ids. Each chunk's keys are sorted already, so this is a k-way
/// merge: a tournament tree over the parts' next keys, ties broken by part order, where
/// taking a key replays one path from its leaf to the root (one comparison a level).
fn merge_keys<K: Copy>(
    ids: &[ChunkIds],
    parts: &[(usize, usize)],
    key: impl Fn(usize, usize) -> (K, Range<u32>),
    cmp: impl Fn(&K, &K) -> Ordering,
    mut push: impl FnMut(&K, &[u32]),
) {
    if parts.is_empty() {
        return;
    }
    let leaves = parts.len().next_power_of_two();
    // Per leaf: its part's next key and run (none once the part is done, or past the
    // parts), and where that key is in the part.
    let mut next: Vec<Option<(K, Range<u32>)>> = (0..leaves)
        .map(|p| (p < parts.len() && parts[p].1 > 0).then(|| key(p, 0)))
        .collect();
    let mut at = vec![0usize; parts.len()];
    // Whether leaf `a`'s next key comes before leaf `b`'s (a done part comes last).
    let first = |next: &[Option<(K, Range<u32>)>], a: usize, b: usize| match (&next[a], &next[b]) {
        (Some((x, _)), Some((y, _))) => cmp(x, y).then(a.cmp(&b)) == Ordering::Less,
        (Some(_), None) => true,
        (None, _) => false,
    };
    // `won[n]` for n in 1..leaves: the leaf whose key comes first below node n (the
    // children of n are 2n and 2n + 1; node `leaves + p` is leaf p).
    let mut won = vec![0usize; leaves.max(2)];
    let winner = |won: &[usize], node: usize| {
        if node >= leaves {
            node - leaves
        } else {
            won[node]
        }
    };
    for node in (1..leaves).rev() {
        let (l, r) = (winner(&won, 2 * node), winner(&won, 2 * node + 1));
        won[node] = if first(&next, r, l) { r } else { l };
    }
    let top = |won: &[usize]| if leaves == 1 { 0 } else { won[1] };
    let mut run: Vec<u32> = Vec::new();
    while let Some((current, _)) = next[top(&won)].clone() {
        run.clear();
        loop {
            let p = top(&won);
            let Some((k, r)) = &next[p] else { break };
            if cmp(k, &current) != Ordering::Equal {
                break;
            }
            let (c, len) = parts[p];
            let (base, chunk) = &ids[c];
            run.extend(
                chunk[r.start as usize..r.end as usize]
                    .iter()
                    .map(|&id| base + u32::from(id)),
            );
            at[p] += 1;
            next[p] = (at[p] < len).then(|| key(p, at[p]));
            let mut node = (leaves + p) / 2;
            while node >= 1 {
                let (l, r) = (winner(&won, 2 * node), winner(&won, 2 * node + 1));
                won[node] = if first(&next, r, l) { r } else { l };
                node /= 2;
            }
        }
        push(&current, &run);
    }
}

/// Unites one field's chunks (in chunk order, so each chunk's ids follow the last's).
fn merge_field(ids: &[ChunkIds], parts: Vec<(usize, ChunkField)>) -> Field {
    let first = &parts[0].1;
    let (path, kind) = (first.path.clone(), first.kind);
    let holds_objects = parts.iter().any(|(_, p)| p.holds_objects);
    let single_valued = !parts.iter().any(|(_, p)| p.multi);
    let exists = bitmap_of_bits(&exists_bits(ids, &parts));
    // Chunks are ordered ranges of ids, so the ids come out ascending.
    let long_ids: Vec<u32> = parts
        .iter()
        .flat_map(|(c, p)| {
            let (base, chunk) = &ids[*c];
            chunk[p.long.start as usize..p.long.end as usize]
                .iter()
                .map(move |&id| base + u32::from(id))
        })
        .collect();
    let long_values = bitmap_of_sorted(&long_ids);

    let strings = |pick: fn(&ChunkField) -> &SortedStrs<Range<u32>>| {
        let lists: Vec<&SortedStrs<Range<u32>>> = parts.iter().map(|(_, p)| pick(p)).collect();
        let counts: Vec<(usize, usize)> = parts
            .iter()
            .zip(&lists)
            .map(|((c, _), list)| (*c, list.len()))
            .collect();
        let mut vocab = VocabBuilder::with_capacity(counts.iter().map(|c| c.1).max().unwrap_or(0));
        let key = |p: usize, i: usize| {
            let (term, run) = lists[p].get(i);
            (term, run.clone())
        };
        merge_keys(
            ids,
            &counts,
            key,
            |a, b| a.cmp(b),
            |term, list| vocab.push(term, list),
        );
        vocab.finish()
    };

    let numbers = |pick: fn(&ChunkField) -> &Keyed<u64>| {
        let lists: Vec<&Keyed<u64>> = parts.iter().map(|(_, p)| pick(p)).collect();
        let counts: Vec<(usize, usize)> = parts
            .iter()
            .zip(&lists)
            .map(|((c, _), list)| (*c, list.len()))
            .collect();
        let mut builder =
            NumVocabBuilder::with_capacity(counts.iter().map(|c| c.1).max().unwrap_or(0));
        let key = |p: usize, i: usize| lists[p][i].clone();
        merge_keys(ids, &counts, key, by_number, |key, list| {
            builder.push(f64::from_bits(*key), list)
        });
        builder.finish()
    };
    Field {
        path,
        kind,
        exists,
        terms: strings(|p| &p.terms),
        pairs: strings(|p| &p.pairs),
        long_values,
        numbers: numbers(|p| &p.numbers),
        numeric_strings: numbers(|p| &p.numeric_strings),
        holds_objects,
        single_valued,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaring::RoaringBitmap;

    /// The short path reads numbers exactly as `str::parse` does, and leaves the rest.
    #[test]
    fn short_decimals_parse_as_the_standard_library_does() {
        for text in [
            "0",
            "-0",
            "7",
            "-12",
            "19.72",
            "0.1",
            "0.3",
            "846.9",
            "1.0",
            "-0.0001",
            "123456789012345",
            "12345678.9012345",
            "0.00000000000001",
            "900719925474.993",
        ] {
            let fast = short_decimal(text).unwrap_or_else(|| panic!("{text} not read"));
            let parsed: f64 = text.parse().unwrap();
            assert_eq!(fast.to_bits(), parsed.to_bits(), "{text}");
        }
        for text in [
            "",
            "-",
            ".5",
            "5.",
            "1e3",
            "1.5E2",
            "1234567890123456",
            "1.2.3",
            "+1",
            "--1",
            "1-",
        ] {
            assert_eq!(short_decimal(text), None, "{text}");
        }
    }

    proptest::proptest! {
        /// Random decimals of up to 15 digits agree with `str::parse` bit for bit.
        #[test]
        fn short_decimals_agree(int in 0u64..10_000_000, frac in 0u64..100_000_000, point in 0usize..9, negative: bool) {
            let frac = format!("{frac:08}");
            let text = format!("{}{int}{}{}", if negative { "-" } else { "" },
                if point > 0 { "." } else { "" }, &frac[..point]);
            let parsed: f64 = text.parse().unwrap();
            proptest::prop_assert_eq!(short_decimal(&text).map(f64::to_bits), Some(parsed.to_bits()), "{}", text);
        }
    }

    proptest::proptest! {
        /// The k-way merge gives every key once, in order, with the ids of every chunk
        /// holding it in chunk order, for any number of chunks (one, a power of two or
        /// not, some empty).
        #[test]
        fn merged_keys_are_every_chunk_s_keys_in_order(
            chunks in proptest::collection::vec(
                proptest::collection::btree_map(0u8..40, 1usize..4, 0..20), 1..12)
        ) {
            // Chunk `c` starts at record 100c; its key `k` is held by `n` records from
            // there, one run each, laid out one after another in its ids.
            let mut ids: Vec<ChunkIds> = Vec::new();
            let mut keyed: Vec<Vec<(u8, Range<u32>)>> = Vec::new();
            for (c, keys) in chunks.iter().enumerate() {
                let mut list = Vec::new();
                let mut runs = Vec::new();
                for (&k, &n) in keys {
                    let start = list.len() as u32;
                    list.extend((0..n as u16).map(|i| i + u16::from(k)));
                    runs.push((k, start..list.len() as u32));
                }
                ids.push((100 * c as u32, list));
                keyed.push(runs);
            }
            let parts: Vec<(usize, usize)> = keyed.iter().enumerate().map(|(c, k)| (c, k.len())).collect();
            let mut merged: Vec<(u8, Vec<u32>)> = Vec::new();
            merge_keys(&ids, &parts, |p, i| keyed[p][i].clone(), |a, b| a.cmp(b), |k, list| merged.push((*k, list.to_vec())));
            let mut expected: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
            for (c, keys) in chunks.iter().enumerate() {
                for (&k, &n) in keys {
                    let base = 100 * c as u32 + u32::from(k);
                    expected.entry(k).or_default().extend(base..base + n as u32);
                }
            }
            proptest::prop_assert_eq!(merged, expected.into_iter().collect::<Vec<_>>());
        }
    }

    /// Chunks of 4,375 records start off a multiple of 64: each chunk's `exists` bits are
    /// shifted into place, and every field's set is exactly the records holding it.
    #[test]
    fn exists_across_chunks_not_aligned_to_words() {
        let n = 70_000u32;
        assert_eq!(chunk_len(n as usize) % 64, 23);
        let docs: Vec<String> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    format!(r#"{{"a":{i},"b":"x"}}"#)
                } else {
                    format!(r#"{{"a":{i}}}"#)
                }
            })
            .collect();
        let texts: Vec<&str> = docs.iter().map(String::as_str).collect();
        let index = build(&texts);
        let exists = |path: &str| index.field(index.lookup(path).unwrap()).exists().clone();
        let mut every = RoaringBitmap::new();
        every.insert_range(0..n);
        assert_eq!(exists("a"), every);
        let thirds: RoaringBitmap = (0..n).filter(|i| i % 3 == 0).collect();
        assert_eq!(exists("b"), thirds);
    }

    /// Sixteen chunks while they fit between the bounds; never more records in one than
    /// its 16-bit ids can number.
    #[test]
    fn chunk_lengths() {
        assert_eq!(chunk_len(10), 4096);
        assert_eq!(chunk_len(100_000), 6250);
        assert_eq!(chunk_len(1_000_000), 62_500);
        assert_eq!(chunk_len(1_048_576), MAX_CHUNK_LEN);
        assert_eq!(chunk_len(5_000_000), MAX_CHUNK_LEN);
        assert!(MAX_CHUNK_LEN - 1 <= usize::from(u16::MAX));
    }
}
