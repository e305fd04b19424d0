//! One walk of the records that builds their index and, at the same time, the indexes of
//! the elements of their arrays of objects (each element a record of its own, its fields
//! named relative to it): every scalar is read once and goes to the records' chunk and to
//! the chunk of the innermost element holding it. The elements' places in the text, their
//! records and enclosing elements are reported to an [`ElementScan`] as they are met.
//!
//! An element's chunk indexes nothing inside the arrays of objects it holds (their
//! elements are indexed on their own); a scalar met in such an array before its first
//! object is dropped when the chunks are merged (see [`Chunk::drop_fields`]).

use std::borrow::Cow;

use super::{chunks_of, Chunk, ChunkBuilder, PartialField, MAX_CHUNK_LEN};
use crate::json::elements::ElementVisit;
use crate::json::walk::{walk, Scalar, Visit};
use crate::naming::FieldKind;
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
        let mut main = ChunkBuilder {
            base,
            len: chunk.len() as u32,
            record_ends: Vec::with_capacity(chunk.len()),
            ..ChunkBuilder::default()
        };
        main.fields
            .push(PartialField::new("".into(), FieldKind::Text));
        main.stack.push(0);
        let mut joint = Joint {
            main,
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
        let elements = levels
            .into_iter()
            .map(|level| {
                let mut done = level.done;
                if level.count > level.builder.base {
                    done.push(level.builder.finish().0);
                }
                (level.path, done)
            })
            .collect();
        (main.finish().0, Walked { scan, elements })
    });
    walked.into_iter().unzip()
}

/// The elements of one array-of-objects path in one chunk of records.
struct Level<'a> {
    path: Box<str>,
    /// The chunk being walked: at most [`MAX_CHUNK_LEN`] elements, numbered from its
    /// `base`.
    builder: ChunkBuilder<'a>,
    /// The chunks already full.
    done: Vec<Chunk>,
    /// The elements met so far.
    count: u32,
}

impl<'a> Level<'a> {
    fn builder(path: &str, base: u32) -> ChunkBuilder<'a> {
        let mut builder = ChunkBuilder {
            base,
            len: MAX_CHUNK_LEN as u32,
            at: Cow::Owned(format!("{path}.")),
            ..ChunkBuilder::default()
        };
        builder
            .fields
            .push(PartialField::new("".into(), FieldKind::Text));
        builder
    }
}

/// The walk's visitor: the records' builder, and the builders of the elements open.
struct Joint<'a, S> {
    main: ChunkBuilder<'a>,
    scan: S,
    /// Per field of `main`: its number in `levels` ([`NONE`] before its first element).
    level_of: Vec<u32>,
    /// Per field of `main`: whether a plain object there was reported to the scan.
    plain_noted: Vec<bool>,
    levels: Vec<Level<'a>>,
    /// The elements open, innermost last, by number in `levels`.
    active: Vec<u32>,
    /// An element was opened and its object is not reported yet.
    opening: bool,
}

const NONE: u32 = u32::MAX;

impl<'a, S> Joint<'a, S> {
    /// The builder of the innermost element open.
    fn inner(&mut self) -> Option<&mut ChunkBuilder<'a>> {
        let &l = self.active.last()?;
        Some(&mut self.levels[l as usize].builder)
    }
}

impl<'a, S: ElementScan> Visit<'a> for Joint<'a, S> {
    fn enter(&mut self, key: &str) {
        self.main.enter(key);
        if let Some(inner) = self.inner() {
            inner.enter(key);
        }
    }

    #[inline]
    fn enter_expected(&mut self, text: &[u8]) -> Option<usize> {
        let len = self.main.enter_expected(text)?;
        if let Some(inner) = self.inner() {
            // A key the inner builder expects here is the same key: both end at the quote.
            if inner.enter_expected(text).is_none() {
                // The key's bytes lie between two quotes of a `str`: whole characters.
                let key = std::str::from_utf8(&text[..len]).unwrap_or_default();
                inner.enter(key);
            }
        }
        Some(len)
    }

    fn leave(&mut self) {
        self.main.leave();
        if let Some(inner) = self.inner() {
            inner.leave();
        }
    }

    fn scalar(&mut self, value: Scalar<'a>) {
        if let Some(&l) = self.active.last() {
            self.levels[l as usize].builder.scalar(value.clone());
        }
        self.main.scalar(value);
    }

    fn object(&mut self) {
        self.main.object();
        if self.opening {
            self.opening = false;
        } else if self.main.stack.len() > 1 {
            let f = self.main.current();
            if self.plain_noted.len() <= f {
                self.plain_noted.resize(f + 1, false);
            }
            if !self.plain_noted[f] {
                self.plain_noted[f] = true;
                self.scan.plain(&self.main.fields[f].path);
            }
        }
        if let Some(inner) = self.inner() {
            inner.object();
        }
    }

    fn element_open(&mut self, start: usize) {
        let f = self.main.current();
        self.scan.open(&self.main.fields[f].path, start);
        // The enclosing element indexes nothing under this array.
        if let Some(inner) = self.inner() {
            inner.skip_current();
        }
        if self.level_of.len() <= f {
            self.level_of.resize(f + 1, NONE);
        }
        if self.level_of[f] == NONE {
            self.level_of[f] = self.levels.len() as u32;
            let path = self.main.fields[f].path.clone();
            self.levels.push(Level {
                builder: Level::builder(&path, 0),
                path,
                done: Vec::new(),
                count: 0,
            });
        }
        let l = self.level_of[f];
        let level = &mut self.levels[l as usize];
        if level.count - level.builder.base == MAX_CHUNK_LEN as u32 {
            let next = Level::builder(&level.path, level.count);
            let full = std::mem::replace(&mut level.builder, next);
            level.done.push(full.finish().0);
        }
        level.builder.doc = level.count;
        level.count += 1;
        level.builder.stack.clear();
        level.builder.stack.push(0);
        self.active.push(l);
        self.opening = true;
    }

    fn element_close(&mut self, end: usize) {
        self.scan.close(end);
        if let Some(l) = self.active.pop() {
            let builder = &mut self.levels[l as usize].builder;
            builder.record_ends.push(builder.walked.len());
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
        fn open(&mut self, path: &str, start: usize) {
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
