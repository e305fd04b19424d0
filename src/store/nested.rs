//! The elements of a collection's arrays of objects (`variants`, `variants.prices`,
//! `attacks`, …), each path's elements a [`Collection`] of their own: every element gets
//! an id (in record order, then document order), its text is a slice of its record's
//! served JSON (shared, not copied), and it is indexed under paths relative to it. Maps
//! from an element to its record and to the element of the enclosing array of objects
//! join a nested query's matches back to records — a block join.

use std::sync::Arc;

use super::{Collection, DocRef};
use crate::fxhash::FxHashSet;
use crate::index::{self, Chunk, ElementScan, Index, Walked};
use crate::json::elements::ElementVisit;
use crate::par;

/// The parent of an element that no element of the enclosing path holds (that path is a
/// plain object in this record).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// The elements of one array-of-objects path.
#[derive(Debug)]
pub(crate) struct Nested {
    /// The dotted path from the record (`variants.prices`).
    pub(crate) path: Box<str>,
    /// The nearest enclosing array-of-objects path (`variants`), as an index into the
    /// record collection's nested paths; `None` when the record holds these directly.
    pub(crate) parent: Option<usize>,
    /// Each element's element of `parent` ([`NO_PARENT`] when none holds it); empty
    /// without a parent.
    pub(crate) parent_of: Vec<u32>,
    /// Each element's record, ascending.
    pub(crate) record_of: Vec<u32>,
    /// The elements as records: their index, relative paths.
    pub(crate) elements: Collection,
    /// Whether the path also holds an object that is not an array element somewhere
    /// (`prices` a plain object in some variant): the enclosing elements then index what
    /// is under it themselves, and a dotted field into it is looked up there.
    pub(crate) mixed: bool,
}

impl Nested {
    /// Bytes held on the heap by the maps and the elements' index.
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.parent_of.capacity() + self.record_of.capacity()) * 4
            + self.elements.heap_bytes_without_text()
    }

    /// The range of elements of record `record`, found from `from` (an element at or before
    /// the record's first; records asked in ascending order make the search a walk).
    pub(crate) fn range_of(&self, record: u32, from: usize) -> std::ops::Range<usize> {
        let map = &self.record_of;
        // Galloping: double the step until past the record, then bisect.
        let mut lo = from.min(map.len());
        let mut step = 1;
        while lo + step <= map.len() && map[lo + step - 1] < record {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(map.len());
        let start = lo + map[lo..hi].partition_point(|&r| r < record);
        // A record has few elements: they are read in a row, not searched for.
        let end = start + map[start..].iter().take_while(|&&r| r == record).count();
        start..end
    }
}

/// The elements of one path that the scan of a chunk of records found, in order.
#[derive(Default)]
struct Found {
    docs: Vec<DocRef>,
    records: Vec<u32>,
    /// Each element's enclosing element, as (local path, index among that path's
    /// elements of the chunk); ([`NO_PARENT`], 0) when none. Empty while no element of
    /// the path has had an enclosing one (the paths directly in the record never do).
    parents: Vec<(u32, u32)>,
}

/// The scan of one chunk of records: elements by local path number.
struct ChunkScan<'d> {
    /// Every record's place in the buffers, by record id.
    docs: &'d [DocRef],
    /// The paths where an object that is not an array element was met.
    plain: FxHashSet<Box<str>>,
    /// The paths met, by local number.
    paths: Vec<Box<str>>,
    found: Vec<Found>,
    /// The open elements: (local path, index).
    open: Vec<(u32, u32)>,
    doc: DocRef,
    record: u32,
    /// Records walked so far, and left to walk in the chunk.
    walked: usize,
    left: usize,
}

impl<'d> ChunkScan<'d> {
    fn new(docs: &'d [DocRef]) -> Self {
        ChunkScan {
            docs,
            plain: FxHashSet::default(),
            paths: Vec::new(),
            found: Vec::new(),
            open: Vec::new(),
            doc: DocRef::default(),
            record: 0,
            walked: 0,
            left: 0,
        }
    }
}

impl ElementScan for ChunkScan<'_> {
    fn record(&mut self, record: u32, left: usize) {
        self.doc = self.docs[record as usize];
        self.record = record;
        self.open.clear();
        self.walked += 1;
        self.left = left;
    }
}

impl ElementVisit for ChunkScan<'_> {
    fn plain(&mut self, path: &str) {
        if !self.plain.contains(path) {
            self.plain.insert(path.into());
        }
    }

    fn open(&mut self, path: &str, number: u32, start: usize) {
        // Paths are numbered as this scan first meets them: a new number is a new path.
        if number as usize == self.found.len() {
            self.paths.push(path.into());
            self.found.push(Found::default());
        }
        let found = &mut self.found[number as usize];
        if found.docs.len() == found.docs.capacity() {
            // Room for as many more elements per record as so far (and a little more),
            // rather than growing by doubling: each growth copies what is there. At most
            // eight times as many as there are, should the first records hold many.
            let len = found.docs.len();
            let more = (len * self.left / self.walked.max(1) + len / 8).min(8 * len) + 16;
            found.docs.reserve_exact(more);
            found.records.reserve_exact(more);
            if !found.parents.is_empty() {
                found.parents.reserve_exact(more);
            }
        }
        let index = found.docs.len() as u32;
        found.docs.push(DocRef {
            buffer: self.doc.buffer,
            start: self.doc.start + start as u32,
            len: 0,
        });
        found.records.push(self.record);
        match self.open.last() {
            Some(&parent) => {
                if found.parents.is_empty() {
                    found.parents.reserve_exact(found.docs.capacity());
                    found.parents.resize(index as usize, (NO_PARENT, 0));
                }
                found.parents.push(parent);
            }
            None if !found.parents.is_empty() => found.parents.push((NO_PARENT, 0)),
            None => {}
        }
        self.open.push((number, index));
    }

    fn close(&mut self, end: usize) {
        if let Some((local, index)) = self.open.pop() {
            let doc = &mut self.found[local as usize].docs[index as usize];
            doc.len = self.doc.start + end as u32 - doc.start;
        }
    }
}

/// Builds the index of the records `texts` (record `i` is `docs[i]` in `buffers`) and,
/// in the same walk, finds the elements of every array-of-objects path and indexes them:
/// the records' index, and the paths' collections sorted by path.
pub(crate) fn build(
    buffers: &Arc<Vec<String>>,
    docs: &[DocRef],
    texts: &[&str],
) -> (Index, Vec<Nested>) {
    let (records, walked) = index::build_with_elements(texts, || ChunkScan::new(docs));
    par::join(|| index::merge(records), || collect(buffers, walked))
}

/// What the collection of one path's elements is made from: what each chunk of records
/// found of it, by chunk (owned here and freed once copied, for the next allocations to
/// reuse), and per chunk of records, its chunks of the elements' index.
struct PathWork {
    /// The path's number among all paths.
    g: usize,
    parts: Vec<(usize, Found)>,
    element_chunks: Vec<Vec<Chunk>>,
}

/// The collections of the elements the walk found, sorted by path.
fn collect(buffers: &Arc<Vec<String>>, walked: Vec<Walked<ChunkScan<'_>>>) -> Vec<Nested> {
    let (mut scans, mut walked_elements): (Vec<ChunkScan<'_>>, Vec<_>) =
        walked.into_iter().map(|w| (w.scan, w.elements)).unzip();
    let mut founds: Vec<Vec<Found>> = scans
        .iter_mut()
        .map(|s| std::mem::take(&mut s.found))
        .collect();
    let mut paths: Vec<Box<str>> = scans.iter().flat_map(|s| s.paths.clone()).collect();
    paths.sort_unstable();
    paths.dedup();
    let global = |path: &str| paths.binary_search_by(|p| (**p).cmp(path)).ok();
    let mixed = |path: &str| scans.iter().any(|s| s.plain.contains(path));
    // The nearest enclosing array-of-objects path: the longest proper prefix that is one.
    let parents: Vec<Option<usize>> = paths
        .iter()
        .map(|path| {
            let mut prefix: &str = path;
            while let Some((head, _)) = prefix.rsplit_once('.') {
                if let Some(g) = global(head) {
                    return Some(g);
                }
                prefix = head;
            }
            None
        })
        .collect();
    // Per chunk: each local path's global number, and where its elements start.
    let locals: Vec<Vec<usize>> = scans
        .iter()
        .map(|s| {
            s.paths
                .iter()
                .map(|path| global(path).expect("listed"))
                .collect()
        })
        .collect();
    let mut bases: Vec<Vec<u32>> = Vec::with_capacity(scans.len());
    let mut counts = vec![0u32; paths.len()];
    for (found_of_chunk, by_local) in founds.iter().zip(&locals) {
        bases.push(counts.clone());
        for (local, found) in found_of_chunk.iter().enumerate() {
            counts[by_local[local]] += found.docs.len() as u32;
        }
    }
    let work: Vec<PathWork> = paths
        .iter()
        .enumerate()
        .map(|(g, path)| {
            let parts = locals
                .iter()
                .enumerate()
                .filter_map(|(c, by_local)| {
                    let local = by_local.iter().position(|&x| x == g)?;
                    Some((c, std::mem::take(&mut founds[c][local])))
                })
                .collect();
            let per_chunk = walked_elements
                .iter_mut()
                .map(|elements: &mut Vec<(Box<str>, Vec<Chunk>)>| {
                    elements
                        .iter_mut()
                        .find(|(p, _)| p == path)
                        .map(|(_, chunks)| std::mem::take(chunks))
                        .unwrap_or_default()
                })
                .collect();
            PathWork {
                g,
                parts,
                element_chunks: per_chunk,
            }
        })
        .collect();
    drop(founds);
    drop(walked_elements);
    let (locals, bases, parents, paths) = (&locals, &bases, &parents, &paths);
    par::map(work, |work| {
        let PathWork {
            g,
            parts,
            element_chunks,
        } = work;
        let path = &paths[g];
        let n = counts[g] as usize;
        let mut element_docs = Vec::with_capacity(n);
        let mut record_of = Vec::with_capacity(n);
        let mut parent_of = Vec::with_capacity(if parents[g].is_some() { n } else { 0 });
        for (c, found) in parts {
            element_docs.extend_from_slice(&found.docs);
            record_of.extend_from_slice(&found.records);
            if let Some(parent) = parents[g] {
                if found.parents.is_empty() {
                    parent_of.resize(parent_of.len() + found.docs.len(), NO_PARENT);
                }
                let (by_local, base) = (&locals[c], &bases[c]);
                parent_of.extend(found.parents.iter().map(|&(pl, pi)| {
                    match by_local.get(pl as usize) {
                        Some(&p) if p == parent => base[parent] + pi,
                        _ => NO_PARENT,
                    }
                }));
            }
        }
        // The arrays of objects directly inside these elements: not indexed here, their
        // elements are (a dotted field into them is a nested query on them, lifted);
        // unless they are plain objects in places too.
        let inner: Vec<&str> = paths
            .iter()
            .zip(parents)
            .filter(|(child, p)| **p == Some(g) && !mixed(child))
            .filter_map(|(child, _)| child.strip_prefix(&**path)?.strip_prefix('.'))
            .collect();
        // An inner path that is a plain object in places is indexed here too, under every
        // element: the walk indexed it in the plain places only, so these elements are
        // walked again on their own.
        let inner_mixed = paths
            .iter()
            .zip(parents)
            .any(|(child, p)| *p == Some(g) && mixed(child));
        let elements = if inner_mixed {
            Collection::of_elements(Arc::clone(buffers), element_docs, path, &inner)
        } else {
            let mut chunks = Vec::new();
            for (mut list, base) in element_chunks.into_iter().zip(bases) {
                for chunk in &mut list {
                    chunk.rebase(base[g]);
                    chunk.drop_fields(|field| {
                        inner.iter().any(|i| {
                            field
                                .strip_prefix(i)
                                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                        })
                    });
                }
                chunks.append(&mut list);
            }
            Collection::of_indexed_elements(Arc::clone(buffers), element_docs, index::merge(chunks))
        };
        Nested {
            mixed: mixed(path),
            path: path.clone(),
            parent: parents[g],
            parent_of,
            record_of,
            elements,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use super::*;
    use crate::index::{Index, Postings};

    fn ids(postings: Postings<'_>) -> Vec<u32> {
        postings.iter().collect()
    }

    /// Everything an index holds, written out.
    fn contents(index: &Index) -> String {
        let mut out = String::new();
        for (_, f) in index.fields() {
            let _ = writeln!(
                out,
                "{} {:?} exists={:?} long={:?} single={} objects={}",
                f.path(),
                f.kind(),
                f.exists().iter().collect::<Vec<_>>(),
                f.long_values().iter().collect::<Vec<_>>(),
                f.single_valued(),
                f.holds_objects()
            );
            for (term, list) in f.terms().iter() {
                let _ = writeln!(out, "  term {term} {:?}", ids(list));
            }
            for (pair, list) in f.pairs().iter() {
                let _ = writeln!(out, "  pair {pair} {:?}", ids(list));
            }
            for (x, list) in f.numbers().iter() {
                let _ = writeln!(out, "  number {x} {:?}", ids(list));
            }
            for (x, list) in f.numeric_strings().iter() {
                let _ = writeln!(out, "  numeric {x} {:?}", ids(list));
            }
        }
        out
    }

    /// The elements' indexes built in the records' walk hold exactly what walking each
    /// element's own text gives (`build_at`), on generated cards and on the bundled data.
    #[test]
    fn the_joint_walk_indexes_elements_as_their_own_walk_does() {
        let dir = crate::generate::scratch_snapshot("cardex-joint-walk", 3000);
        let generated = crate::Engine::open(&dir).unwrap();
        let bundled = crate::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).unwrap();
        let mut checked = 0;
        for engine in [&generated, &bundled] {
            for catalog in engine.catalogs() {
                let name = catalog.name();
                for collection in [catalog.cards(), catalog.expansions()] {
                    let nested = collection.nested();
                    for (g, n) in nested.iter().enumerate() {
                        let inner: Vec<&str> = nested
                            .iter()
                            .filter(|c| c.parent == Some(g) && !c.mixed)
                            .filter_map(|c| c.path.strip_prefix(&*n.path)?.strip_prefix('.'))
                            .collect();
                        let alone = Collection::of_elements(
                            Arc::clone(n.elements.texts.plain().expect("a plain store")),
                            n.elements.docs.clone(),
                            &n.path,
                            &inner,
                        );
                        assert_eq!(
                            contents(n.elements.index()),
                            contents(alone.index()),
                            "{name} {}",
                            n.path
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 8, "{checked} paths");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
