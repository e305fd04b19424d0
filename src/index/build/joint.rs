//! One walk of the records that builds their index and, at the same time, the indexes of
//! the elements of their arrays of objects (each element a record of its own, its fields
//! named relative to it): every scalar is read and looked up once, for the records' chunk,
//! and the slots it adds are also noted for the innermost element holding it. An element
//! chunk is the records' keys again, with the runs of the elements holding them. The
//! elements' places in the text, their records and enclosing elements are reported to an
//! [`ElementScan`] as they are met.
//!
//! An element's chunk indexes nothing inside the arrays of objects it holds (their
//! elements are indexed on their own): a scalar met in such an array before its first
//! object is dropped when the chunks are merged (see [`Chunk::drop_fields`]).

use super::{
    chunks_of, group_by_slot, Chunk, ChunkBuilder, ChunkField, SortedField, MAX_CHUNK_LEN,
};
use crate::json::elements::ElementVisit;
use crate::json::walk::{walk, Scalar, Visit};
use crate::par;

/// What is told where the elements are: [`ElementVisit`], plus the start of each record.
pub(crate) trait ElementScan: ElementVisit + Send {
    /// The walk moves on to record `record` (records come in ascending order).
    fn record(&mut self, record: u32);
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
    let walked = par::map(chunks, |(base, chunk)| {
        let mut joint = Joint {
            main: ChunkBuilder::new(base, chunk.len(), "", &[]),
            scan: scan(),
            level_of: Vec::new(),
            plain_noted: Vec::new(),
            levels: Vec::new(),
            active: Vec::new(),
            opening: false,
        };
        for (i, doc) in chunk.iter().enumerate() {
            let record = base + i as u32;
            joint.main.doc = record;
            joint.scan.record(record);
            joint.active.clear();
            walk(doc, &mut joint);
            joint.main.record_ends.push(joint.main.walked.len());
        }
        let Joint {
            main, scan, levels, ..
        } = joint;
        let (fields, mut walked, ends, base, slot_count) = main.into_sorted();
        let mut dense = vec![NONE; slot_count as usize];
        let elements = levels
            .into_iter()
            .map(|level| {
                let path = level.path.clone();
                (path, level.chunks(&fields, &mut dense))
            })
            .collect();
        drop(dense);
        let records = Chunk::of_records(fields, &mut walked, &ends, base, slot_count);
        (records, Walked { scan, elements })
    });
    walked.into_iter().unzip()
}

/// The elements of one array-of-objects path in one chunk of records: the records'
/// slots each element was added to, element after element.
struct Level {
    path: Box<str>,
    walked: Vec<u32>,
    /// Per element (closed): where its slots end in `walked`.
    ends: Vec<usize>,
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
    /// The element being walked (elements of one path never nest).
    fn element(&self) -> usize {
        self.ends.len()
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
    /// records' `fields` (keys sorted, with slots out of `slot_count`).
    ///
    /// The elements hold few of the records' slots: they are renumbered densely first
    /// (`dense`, [`NONE`] for the slots they do not hold: all of it again on return),
    /// so that counting them takes arrays of the elements' slots, not the records'.
    fn chunks(self, fields: &[SortedField], dense: &mut [u32]) -> Vec<Chunk> {
        let Level {
            path,
            mut walked,
            ends,
            fields: level_fields,
            ..
        } = self;
        let mut held: Vec<u32> = Vec::new();
        for slot in &mut walked {
            let d = &mut dense[*slot as usize];
            if *d == NONE {
                *d = held.len() as u32;
                held.push(*slot);
            }
            *slot = *d;
        }
        let n = ends.len();
        let mut out = Vec::with_capacity(n.div_ceil(MAX_CHUNK_LEN));
        for start in (0..n).step_by(MAX_CHUNK_LEN) {
            let end = (start + MAX_CHUNK_LEN).min(n);
            let from = if start == 0 { 0 } else { ends[start - 1] };
            let grouped = group_by_slot(&mut walked, &ends[start..end], from, held.len() as u32);
            let starts = &grouped.starts;
            let run = |slot: u32| match dense[slot as usize] {
                NONE => 0..0,
                d => starts[d as usize]..starts[d as usize + 1],
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
        for slot in held {
            dense[slot as usize] = NONE;
        }
        out
    }
}

/// The walk's visitor: the records' builder, and the elements open.
struct Joint<'a, S> {
    main: ChunkBuilder<'a>,
    scan: S,
    /// Per field of `main`: its number in `levels` ([`NONE`] before its first element).
    level_of: Vec<u32>,
    /// Per field of `main`: whether a plain object there was reported to the scan.
    plain_noted: Vec<bool>,
    levels: Vec<Level>,
    /// The elements open, innermost last, by number in `levels`.
    active: Vec<u32>,
    /// An element was opened and its object is not reported yet.
    opening: bool,
}

const NONE: u32 = u32::MAX;

/// The slots a path's elements start with room for in a chunk of records (256 KiB): the
/// lists of the common paths grow to millions, and each doubling copies the list.
const LEVEL_CAPACITY: usize = 1 << 16;

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
        let before = self.main.walked.len();
        let f = self.main.current();
        self.main.scalar(value);
        if let Some(&l) = self.active.last() {
            let level = &mut self.levels[l as usize];
            // A value adds a few slots: pushed one by one, not copied through `memmove`.
            for &slot in &self.main.walked[before..] {
                level.walked.push(slot);
            }
            let element = level.element();
            let field = level.field(f);
            let (word, bit) = (element / 64, 1u64 << (element % 64));
            if field.exists.len() <= word {
                field.exists.resize(word + 1, 0);
            }
            if field.exists[word] & bit != 0 {
                field.multi = true;
            }
            field.exists[word] |= bit;
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
            if let Some(&l) = self.active.last() {
                self.levels[l as usize].field(f).holds_objects = true;
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
                walked: Vec::with_capacity(LEVEL_CAPACITY),
                ends: Vec::new(),
                field_of: Vec::new(),
                fields: Vec::new(),
            });
        }
        let l = self.level_of[f];
        self.scan.open(&self.main.fields[f].path, l, start);
        self.active.push(l);
        self.opening = true;
    }

    fn element_close(&mut self, end: usize) {
        self.scan.close(end);
        if let Some(l) = self.active.pop() {
            let level = &mut self.levels[l as usize];
            level.ends.push(level.walked.len());
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
        fn record(&mut self, record: u32) {
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
