//! One walk of the records that builds their index and, at the same time, the indexes of
//! the elements of their arrays of objects (each element a record of its own, its fields
//! named relative to it): every scalar is read and looked up once, for the records' chunk.
//! The walk notes where each element's own values are among the record's slots (cut where
//! an element of an inner array sits), and when the record is done, while its slots are
//! still in cache, copies them to the elements' paths; once the chunk of records is
//! walked, each path's slots are renumbered densely. An element chunk is the records'
//! keys again, with the runs of the elements holding them.
//! The elements' places in the text, their records and enclosing elements are reported to
//! an [`ElementScan`] as they are met.
//!
//! An element's chunk indexes nothing inside the arrays of objects it holds (their
//! elements are indexed on their own): a scalar met in such an array before its first
//! object is dropped when the chunks are merged (see [`Chunk::drop_fields`]).

use std::ops::Range;

use super::{
    chunks_of, group_by_slot, Chunk, ChunkBuilder, ChunkField, SortedField, MAX_CHUNK_LEN,
};
use crate::json::elements::ElementVisit;
use crate::json::walk::{walk, Scalar, Visit};
use crate::par;

/// What is told where the elements are: [`ElementVisit`], plus the start of each record.
pub(crate) trait ElementScan: ElementVisit + Send {
    /// The walk moves on to record `record` (records come in ascending order), which
    /// leaves `left` records of its chunk to walk after it.
    fn record(&mut self, record: u32, left: usize);
}

/// One chunk of records walked: the element scan's findings, and per array-of-objects
/// path met, the chunks of its elements' index (numbered from the first element of that
/// path in this chunk of records, in order; see [`Chunk::rebase`]).
pub(crate) struct Walked<S> {
    pub(crate) scan: S,
    pub(crate) elements: Vec<(Box<str>, Vec<Chunk>)>,
}

/// Walks `docs` (record `i` gets id `i`) once: the records' chunks (to merge into their
/// index) and, per chunk of records, what [`Walked`] holds; `scan` makes each chunk's
/// element scan.
pub(crate) fn build_with_elements<S: ElementScan>(
    docs: &[&str],
    scan: impl Fn() -> S + Sync + Send,
) -> (Vec<Chunk>, Vec<Walked<S>>) {
    let chunks = chunks_of(docs);
    // The slot lists of a chunk grow to megabytes: each chunk reuses a finished chunk's
    // (growing a new one copies it at every doubling and faults in fresh pages).
    let spare: par::Pool<Vec<Vec<u32>>> = par::Pool::default();
    let walked = par::map(chunks, |(base, chunk)| {
        let mut lists = spare.take();
        let mut main = ChunkBuilder::new(base, chunk.len(), "", &[]);
        main.walked = lists.pop().unwrap_or_default();
        let mut joint = Joint {
            main,
            scan: scan(),
            spare: lists,
            scalar_fields: Vec::new(),
            segments: Vec::new(),
            level_of: Vec::new(),
            plain_noted: Vec::new(),
            levels: Vec::new(),
            active: Vec::new(),
            opening: false,
        };
        for (i, doc) in chunk.iter().enumerate() {
            let record = base + i as u32;
            joint.main.doc = record;
            joint.scan.record(record, chunk.len() - i - 1);
            joint.active.clear();
            walk(doc, &mut joint);
            joint.main.record_ends.push(joint.main.walked.len() as u32);
            joint.file_elements();
        }
        let Joint {
            main, scan, levels, ..
        } = joint;
        let (fields, mut walked, ends, base, slot_count) = main.into_sorted();
        let mut dense = DenseSlots::new(slot_count);
        let mut lists = Vec::with_capacity(2 * levels.len() + 1);
        let elements = levels
            .into_iter()
            .map(|level| {
                let path = level.path.clone();
                let (chunks, [list, ends]) = level.chunks(&fields, &mut dense);
                lists.push(list);
                lists.push(ends);
                (path, chunks)
            })
            .collect();
        drop(dense);
        let records = Chunk::of_records(fields, &mut walked, &ends, base, slot_count);
        lists.push(walked);
        for list in &mut lists {
            list.clear();
        }
        spare.give(lists);
        (records, Walked { scan, elements })
    });
    walked.into_iter().unzip()
}

/// Each slot's number among the slots held by the elements of one path (its level),
/// dense from 0: counting an element chunk then takes arrays of the elements' slots, not
/// of all the records'. One level at a time is numbered.
struct DenseSlots {
    /// By slot of the records: its number in the level ([`NONE`] when its elements hold
    /// none).
    number: Vec<u32>,
    /// The slots numbered, in order.
    held: Vec<u32>,
}

impl DenseSlots {
    fn new(slot_count: u32) -> DenseSlots {
        DenseSlots {
            number: vec![NONE; slot_count as usize],
            held: Vec::new(),
        }
    }

    /// Numbers the slots of one level's `list` in place; how many distinct slots it holds.
    fn renumber(&mut self, list: &mut [u32]) -> u32 {
        for slot in list {
            let number = &mut self.number[*slot as usize];
            if *number == NONE {
                *number = self.held.len() as u32;
                self.held.push(*slot);
            }
            *slot = *number;
        }
        self.held.len() as u32
    }

    /// The number of `slot` in the level numbered last.
    fn get(&self, slot: u32) -> Option<u32> {
        match self.number.get(slot as usize) {
            Some(&number) if number != NONE => Some(number),
            _ => None,
        }
    }

    /// Forgets the level numbered last.
    fn clear(&mut self) {
        for &slot in &self.held {
            self.number[slot as usize] = NONE;
        }
        self.held.clear();
    }
}

/// A stretch of one element's own values in the record being walked: its slots in the
/// records' walked slots and the fields of its scalars in [`Joint::scalar_fields`]. An
/// element's values are cut where an element of an inner array of objects sits; its last
/// segment `closes` it (and may be empty).
struct Segment {
    level: u32,
    slots: Range<u32>,
    fields: Range<u32>,
    closes: bool,
}

/// The elements of one array-of-objects path in one chunk of records: the slots each
/// element holds, element after element.
struct Level {
    path: Box<str>,
    list: Vec<u32>,
    /// Per element (closed): where its slots end in `list`.
    ends: Vec<u32>,
    /// The first 64 fields the element being walked holds a scalar of, by bit.
    holding: u64,
    /// The word of `exists` that the elements being closed fall in, and per field of the
    /// first 64 its bits there, marked in `exists` once the elements move past it
    /// ([`Level::flush_word`]).
    word: usize,
    word_bits: [u64; 64],
    /// The fields with bits in `word_bits`, by bit.
    word_fields: u64,
    /// Per field of the records: its number in `fields` ([`NONE`] before it held a value
    /// in an element).
    field_of: Vec<u32>,
    fields: Vec<LevelField>,
}

/// A field of the records as a field of the elements.
struct LevelField {
    /// The field's number among the records' fields.
    main: u32,
    /// Bit `i` set when element `i` holds a scalar here.
    exists: Vec<u64>,
    /// Some element holds two or more scalars here.
    multi: bool,
    holds_objects: bool,
}

impl Level {
    /// The element being walked holds a scalar of the records' field `main`.
    #[inline]
    fn hold(&mut self, main: usize) {
        let i = match self.field_of.get(main) {
            Some(&i) if i != NONE => i as usize,
            _ => {
                self.field(main);
                self.field_of[main] as usize
            }
        };
        if i < 64 {
            let bit = 1u64 << i;
            if self.holding & bit != 0 {
                self.fields[i].multi = true;
            }
            self.holding |= bit;
        } else {
            let element = self.ends.len();
            let (word, bit) = (element / 64, 1u64 << (element % 64));
            let field = &mut self.fields[i];
            if field.exists.len() <= word {
                field.exists.resize(word + 1, 0);
            }
            if field.exists[word] & bit != 0 {
                field.multi = true;
            }
            field.exists[word] |= bit;
        }
    }

    /// The element being walked ends: the fields it held (the first 64, by bits of
    /// `holding`) are marked in the word of `exists` it falls in.
    #[inline]
    fn close(&mut self) {
        let element = self.ends.len();
        if element / 64 != self.word {
            self.flush_word();
            self.word = element / 64;
        }
        let bit = 1u64 << (element % 64);
        let mut held = std::mem::take(&mut self.holding);
        self.word_fields |= held;
        while held != 0 {
            let i = held.trailing_zeros() as usize;
            held &= held - 1;
            self.word_bits[i] |= bit;
        }
        self.ends.push(self.list.len() as u32);
    }

    /// Marks the bits gathered in `word_bits` in the fields' `exists`.
    fn flush_word(&mut self) {
        let word = self.word;
        let mut fields = std::mem::take(&mut self.word_fields);
        while fields != 0 {
            let i = fields.trailing_zeros() as usize;
            fields &= fields - 1;
            let exists = &mut self.fields[i].exists;
            if exists.len() <= word {
                exists.resize(word + 1, 0);
            }
            exists[word] |= std::mem::take(&mut self.word_bits[i]);
        }
    }

    fn field(&mut self, main: usize) -> &mut LevelField {
        if self.field_of.len() <= main {
            self.field_of.resize(main + 1, NONE);
        }
        if self.field_of[main] == NONE {
            self.field_of[main] = self.fields.len() as u32;
            self.fields.push(LevelField {
                main: main as u32,
                exists: Vec::new(),
                multi: false,
                holds_objects: false,
            });
        }
        &mut self.fields[self.field_of[main] as usize]
    }

    /// The chunks of these elements, [`MAX_CHUNK_LEN`] elements each, made from the
    /// records' `fields` (keys sorted, with slots), their slots numbered by `dense`;
    /// gives back the slot list and the ends, for another chunk of records.
    fn chunks(
        mut self,
        fields: &[SortedField],
        dense: &mut DenseSlots,
    ) -> (Vec<Chunk>, [Vec<u32>; 2]) {
        self.flush_word();
        let Level {
            path,
            mut list,
            ends,
            fields: level_fields,
            ..
        } = self;
        let held = dense.renumber(&mut list);
        let n = ends.len();
        let mut out = Vec::with_capacity(n.div_ceil(MAX_CHUNK_LEN));
        for start in (0..n).step_by(MAX_CHUNK_LEN) {
            let end = (start + MAX_CHUNK_LEN).min(n);
            let from = if start == 0 {
                0
            } else {
                ends[start - 1] as usize
            };
            let grouped = group_by_slot(&mut list, &ends[start..end], from, held);
            let starts = &grouped.starts;
            let run = |slot: u32| match dense.get(slot) {
                None => 0..0,
                Some(d) => starts[d as usize]..starts[d as usize + 1],
            };
            // `start` is a multiple of 64: the chunk's bits are whole words.
            let words = start / 64..end.div_ceil(64);
            let mut chunk_fields = vec![ChunkField::root()];
            for lf in &level_fields {
                let field = &fields[lf.main as usize];
                let Some(relative) = field
                    .path
                    .strip_prefix(&*path)
                    .and_then(|rest| rest.strip_prefix('.'))
                else {
                    continue;
                };
                let exists = lf
                    .exists
                    .get(words.start.min(lf.exists.len())..words.end.min(lf.exists.len()))
                    .unwrap_or_default()
                    .to_vec();
                chunk_fields.push(field.element_field(
                    relative.into(),
                    exists,
                    lf.multi,
                    lf.holds_objects,
                    run,
                ));
            }
            out.push(Chunk {
                base: start as u32,
                ids: grouped.ids,
                fields: chunk_fields,
            });
        }
        dense.clear();
        (out, [list, ends])
    }
}

/// The walk's visitor: the records' builder, and the elements open.
struct Joint<'a, S> {
    main: ChunkBuilder<'a>,
    scan: S,
    /// Lists of a finished chunk of records, for the slots and element ends of the levels
    /// met.
    spare: Vec<Vec<u32>>,
    /// The field of each scalar met inside an element of the record being walked, in walk
    /// order.
    scalar_fields: Vec<u32>,
    /// The segments of the elements' values in the record being walked, in walk order.
    segments: Vec<Segment>,
    /// Per field of `main`: its number in `levels` ([`NONE`] before its first element).
    level_of: Vec<u32>,
    /// Per field of `main`: whether a plain object there was reported to the scan.
    plain_noted: Vec<bool>,
    levels: Vec<Level>,
    /// The elements open, innermost last.
    active: Vec<Open>,
    /// An element was opened and its object is not reported yet.
    opening: bool,
}

/// An element being walked: its level, and where the segment of its own values being
/// walked starts.
struct Open {
    level: u32,
    slots: u32,
    fields: u32,
}

const NONE: u32 = u32::MAX;

impl<S> Joint<'_, S> {
    /// Where the walk is: the next slot and scalar field.
    fn here(&self) -> (u32, u32) {
        (
            self.main.walked.len() as u32,
            self.scalar_fields.len() as u32,
        )
    }

    /// Ends the segment of the innermost open element's values walked so far: at the
    /// start of an inner element (`closes` false) or at its own end.
    fn cut(&mut self, closes: bool) {
        let (slots, fields) = self.here();
        if let Some(open) = self.active.last() {
            if closes || open.slots < slots || open.fields < fields {
                self.segments.push(Segment {
                    level: open.level,
                    slots: open.slots..slots,
                    fields: open.fields..fields,
                    closes,
                });
            }
        }
    }

    /// Hands the record just walked's element values to their levels: its slots copied,
    /// each scalar's field marked as held by its element.
    fn file_elements(&mut self) {
        let Joint {
            main,
            scalar_fields,
            segments,
            levels,
            ..
        } = self;
        for segment in segments.drain(..) {
            let level = &mut levels[segment.level as usize];
            let slots = &main.walked[segment.slots.start as usize..segment.slots.end as usize];
            level.list.extend_from_slice(slots);
            let range = segment.fields.start as usize..segment.fields.end as usize;
            for &f in &scalar_fields[range] {
                level.hold(f as usize);
            }
            if segment.closes {
                level.close();
            }
        }
        scalar_fields.clear();
    }
}

impl<'a, S: ElementScan> Visit<'a> for Joint<'a, S> {
    fn enter(&mut self, key: &str) {
        self.main.enter(key);
    }

    #[inline]
    fn enter_expected(&mut self, text: &[u8]) -> Option<usize> {
        self.main.enter_expected(text)
    }

    fn leave(&mut self) {
        self.main.leave();
    }

    fn scalar(&mut self, value: Scalar<'a>) {
        let f = self.main.current();
        self.main.scalar(value);
        if !self.active.is_empty() {
            self.scalar_fields.push(f as u32);
        }
    }

    fn object(&mut self) {
        self.main.object();
        if self.opening {
            self.opening = false;
            return;
        }
        if self.main.stack.len() > 1 {
            let f = self.main.current();
            if self.plain_noted.len() <= f {
                self.plain_noted.resize(f + 1, false);
            }
            if !self.plain_noted[f] {
                self.plain_noted[f] = true;
                self.scan.plain(&self.main.fields[f].path);
            }
            if let Some(open) = self.active.last() {
                self.levels[open.level as usize].field(f).holds_objects = true;
            }
        }
    }

    fn element_open(&mut self, start: usize) {
        let f = self.main.current();
        if self.level_of.len() <= f {
            self.level_of.resize(f + 1, NONE);
        }
        if self.level_of[f] == NONE {
            self.level_of[f] = self.levels.len() as u32;
            self.levels.push(Level {
                path: self.main.fields[f].path.clone(),
                list: self.spare.pop().unwrap_or_default(),
                ends: self.spare.pop().unwrap_or_default(),
                holding: 0,
                word: 0,
                word_bits: [0; 64],
                word_fields: 0,
                field_of: Vec::new(),
                fields: Vec::new(),
            });
        }
        let level = self.level_of[f];
        self.scan.open(&self.main.fields[f].path, level, start);
        self.cut(false);
        let (slots, fields) = self.here();
        self.active.push(Open {
            level,
            slots,
            fields,
        });
        self.opening = true;
    }

    fn element_close(&mut self, end: usize) {
        self.scan.close(end);
        self.cut(true);
        self.active.pop();
        let (slots, fields) = self.here();
        if let Some(open) = self.active.last_mut() {
            open.slots = slots;
            open.fields = fields;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::merge;

    /// Every element with its path, span and enclosing element, and the plain objects.
    #[derive(Default)]
    struct Seen {
        record: u32,
        open: Vec<(String, usize)>,
        spans: Vec<(u32, String, std::ops::Range<usize>, Option<usize>)>,
        plain: Vec<String>,
    }

    impl ElementVisit for Seen {
        fn open(&mut self, path: &str, _number: u32, start: usize) {
            self.open.push((path.to_string(), start));
        }
        fn close(&mut self, end: usize) {
            let (path, start) = self.open.pop().unwrap();
            let parent = self.open.len().checked_sub(1);
            self.spans.push((self.record, path, start..end, parent));
        }
        fn plain(&mut self, path: &str) {
            self.plain.push(path.to_string());
        }
    }

    impl ElementScan for Seen {
        fn record(&mut self, record: u32, _left: usize) {
            self.record = record;
        }
    }

    /// The walk reports each element's place, path and parent, and builds the elements'
    /// own index beside the records': relative paths, nothing of the arrays of objects
    /// inside an element but their elements, and each element its own id.
    #[test]
    fn one_walk_finds_and_indexes_elements_with_their_parents() {
        let first = r#"{"id":"a","tags":["x","y"],"legal":{"s":"ok"},"v":[{"n":"A","p":[{"m":1},{"m":"]}"}]},{"n":"B"}],"m":[[{"k":1}]]}"#;
        let second = r#"{"id":"b","v":[{"n":"C","p":[{"m":2}]}]}"#;
        let (records, walked) = build_with_elements(&[first, second], Seen::default);
        let index = merge(records);
        assert!(index.lookup("v.p.m").is_some() && index.lookup("v.n").is_some());
        let [walked] = <[Walked<Seen>; 1]>::try_from(walked).ok().unwrap();
        let seen = walked.scan;
        assert!(seen.open.is_empty());
        let texts = [first, second];
        let spans: Vec<(u32, &str, &str, Option<usize>)> = seen
            .spans
            .iter()
            .map(|(r, p, span, parent)| {
                (*r, p.as_str(), &texts[*r as usize][span.clone()], *parent)
            })
            .collect();
        assert_eq!(
            spans,
            [
                (0, "v.p", r#"{"m":1}"#, Some(0)),
                (0, "v.p", r#"{"m":"]}"}"#, Some(0)),
                (0, "v", r#"{"n":"A","p":[{"m":1},{"m":"]}"}]}"#, None),
                (0, "v", r#"{"n":"B"}"#, None),
                (0, "m", r#"{"k":1}"#, None),
                (1, "v.p", r#"{"m":2}"#, Some(0)),
                (1, "v", r#"{"n":"C","p":[{"m":2}]}"#, None),
            ]
        );
        assert_eq!(seen.plain, ["legal"]);
        let mut elements = walked.elements;
        let mut element_index = |path: &str, inner: &[&str]| {
            let at = elements.iter().position(|(p, _)| &**p == path).unwrap();
            let mut chunks = std::mem::take(&mut elements[at].1);
            for chunk in &mut chunks {
                chunk.drop_fields(|f| inner.contains(&f));
            }
            merge(chunks)
        };
        let variants = element_index("v", &["p"]);
        let names: Vec<&str> = variants.fields().map(|(_, f)| f.path()).collect();
        assert_eq!(names, ["n"]);
        let n = variants.field(variants.lookup("n").unwrap());
        assert_eq!(n.exists().iter().collect::<Vec<_>>(), [0, 1, 2]);
        let c = n.terms().get("c").unwrap().iter().collect::<Vec<_>>();
        assert_eq!(c, [2]);
        let prices = element_index("v.p", &[]);
        let m = prices.field(prices.lookup("m").unwrap());
        assert_eq!(m.exists().iter().collect::<Vec<_>>(), [0, 1, 2]);
        let number = |x: f64| m.numbers().get(x).unwrap().iter().collect::<Vec<_>>();
        assert_eq!((number(1.0), number(2.0)), (vec![0], vec![2]));
    }

    /// A value held by the elements of two paths (`p` an array of objects in one record
    /// and a plain object inside an element of `v` in another): each path's elements
    /// number its slot on their own, and each finds its own element holding it.
    #[test]
    fn a_value_held_at_two_levels_is_found_at_both() {
        let docs = [
            r#"{"id":"a","v":[{"n":"x","p":[{"m":1},{"m":2}]}]}"#,
            r#"{"id":"b","v":[{"n":"y"},{"n":"z","p":{"m":1}}]}"#,
        ];
        let (_, walked) = build_with_elements(&docs, Seen::default);
        let [walked] = <[Walked<Seen>; 1]>::try_from(walked).ok().unwrap();
        let mut elements = walked.elements;
        let mut index_of = |path: &str| {
            let at = elements.iter().position(|(p, _)| &**p == path).unwrap();
            merge(std::mem::take(&mut elements[at].1))
        };
        let prices = index_of("v.p");
        let m = prices.field(prices.lookup("m").unwrap());
        let holding = |x: f64| m.numbers().get(x).unwrap().iter().collect::<Vec<_>>();
        assert_eq!((holding(1.0), holding(2.0)), (vec![0], vec![1]));
        let variants = index_of("v");
        let pm = variants.field(variants.lookup("p.m").unwrap());
        let holding: Vec<u32> = pm.numbers().get(1.0).unwrap().iter().collect();
        assert_eq!(holding, [2]);
        assert_eq!(pm.exists().iter().collect::<Vec<_>>(), [2]);
        let n = variants.field(variants.lookup("n").unwrap());
        assert_eq!(n.exists().iter().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(n.single_valued() && m.single_valued());
    }

    /// An element with more fields than the 64 marked by bits while it is walked: the
    /// fields past them are marked one by one, with the same `exists` and `multi`.
    #[test]
    fn elements_with_more_than_64_fields_mark_every_field() {
        let wide: Vec<String> = (0..70).map(|i| format!(r#""f{i:02}":{i}"#)).collect();
        let first = format!(
            r#"{{"id":"a","e":[{{{}}},{{"f68":[1,2]}}]}}"#,
            wide.join(",")
        );
        let second = r#"{"id":"b","e":[{"f03":[3,4],"f69":5}]}"#;
        let (_, walked) = build_with_elements(&[first.as_str(), second], Seen::default);
        let [walked] = <[Walked<Seen>; 1]>::try_from(walked).ok().unwrap();
        let [(path, chunks)] = <[(Box<str>, Vec<Chunk>); 1]>::try_from(walked.elements)
            .ok()
            .unwrap();
        assert_eq!(&*path, "e");
        let index = merge(chunks);
        let field = |name: &str| index.field(index.lookup(name).unwrap());
        let exists = |name: &str| field(name).exists().iter().collect::<Vec<_>>();
        assert_eq!(exists("f00"), [0]);
        assert_eq!(exists("f03"), [0, 2]);
        assert_eq!(exists("f67"), [0]);
        assert_eq!(exists("f68"), [0, 1]);
        assert_eq!(exists("f69"), [0, 2]);
        assert!(!field("f03").single_valued() && !field("f68").single_valued());
        assert!(field("f00").single_valued() && field("f69").single_valued());
        let holding = |name: &str, x: f64| {
            let postings = field(name).numbers().get(x).unwrap();
            postings.iter().collect::<Vec<_>>()
        };
        assert_eq!(
            (holding("f68", 2.0), holding("f69", 5.0)),
            (vec![1], vec![2])
        );
    }

    /// More elements of one path than a chunk's 16-bit ids number: the walk starts a new
    /// chunk of elements, and every element keeps its own id.
    #[test]
    fn elements_past_a_chunk_of_ids_roll_over() {
        let per_record = 1000;
        let docs: Vec<String> = (0..70)
            .map(|r| {
                let items: Vec<String> = (0..per_record)
                    .map(|i| format!(r#"{{"k":{}}}"#, r * per_record + i))
                    .collect();
                format!(r#"{{"id":"{r}","a":[{}]}}"#, items.join(","))
            })
            .collect();
        let texts: Vec<&str> = docs.iter().map(String::as_str).collect();
        let (_, walked) = build_with_elements(&texts, Seen::default);
        let mut chunks = Vec::new();
        let mut base = 0;
        for w in walked {
            let count = w.scan.spans.len() as u32;
            for (_, list) in w.elements {
                for mut chunk in list {
                    chunk.rebase(base);
                    chunks.push(chunk);
                }
            }
            base += count;
        }
        assert!(chunks.len() >= 2);
        let index = merge(chunks);
        let k = index.field(index.lookup("k").unwrap());
        assert_eq!(k.exists().len(), 70 * per_record as u64);
        // Element `i` holds the number `i`: ids and values agree across the chunks.
        for id in [0u32, 65_535, 65_536, 69_999] {
            let holding: Vec<u32> = k.numbers().get(f64::from(id)).unwrap().iter().collect();
            assert_eq!(holding, [id]);
        }
    }
}
