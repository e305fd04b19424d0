//! The elements of a collection's arrays of objects (`variants`, `variants.prices`,
//! `attacks`, …), each path's elements a [`Collection`] of their own: every element gets
//! an id (in record order, then document order), its text is a slice of its record's
//! served JSON (shared, not copied), and it is indexed under paths relative to it. Maps
//! from an element to its record and to the element of the enclosing array of objects
//! join a nested query's matches back to records — a block join.

use std::sync::Arc;

use super::{doc_text, Collection, DocRef};
use crate::fxhash::{FxHashMap, FxHashSet};
use crate::json::elements::{elements, ElementVisit};
use crate::par;

/// The parent of an element that no element of the enclosing path holds (that path is a
/// plain object in this record).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// Records per chunk of the parallel scan.
const CHUNK: usize = 4096;

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

/// One element as the scan of a chunk finds it.
struct Found {
    doc: DocRef,
    record: u32,
    /// The enclosing element, as (local path, index among that path's elements of the
    /// chunk).
    parent: Option<(u32, u32)>,
}

/// The scan of one chunk of records: elements by local path number.
#[derive(Default)]
struct ChunkScan {
    /// The paths where an object that is not an array element was met.
    plain: FxHashSet<Box<str>>,
    paths: FxHashMap<Box<str>, u32>,
    found: Vec<Vec<Found>>,
    /// The open elements: (local path, index).
    open: Vec<(u32, u32)>,
    doc: DocRef,
    record: u32,
}

impl ElementVisit for ChunkScan {
    fn plain(&mut self, path: &str) {
        if !self.plain.contains(path) {
            self.plain.insert(path.into());
        }
    }

    fn open(&mut self, path: &str, start: usize) {
        // Looked up before it is copied: a chunk meets few paths, each many times.
        let local = match self.paths.get(path) {
            Some(&local) => local,
            None => {
                let local = self.paths.len() as u32;
                self.paths.insert(path.into(), local);
                self.found.push(Vec::new());
                local
            }
        };
        let list = &mut self.found[local as usize];
        let index = list.len() as u32;
        list.push(Found {
            doc: DocRef {
                buffer: self.doc.buffer,
                start: self.doc.start + start as u32,
                len: 0,
            },
            record: self.record,
            parent: self.open.last().copied(),
        });
        self.open.push((local, index));
    }

    fn close(&mut self, end: usize) {
        if let Some((local, index)) = self.open.pop() {
            let found = &mut self.found[local as usize][index as usize];
            found.doc.len = self.doc.start + end as u32 - found.doc.start;
        }
    }
}

/// Finds the elements of every array-of-objects path of the records `docs` (in `buffers`)
/// and builds their collections, sorted by path.
pub(crate) fn build(buffers: &Arc<Vec<String>>, docs: &[DocRef]) -> Vec<Nested> {
    let chunks: Vec<(u32, &[DocRef])> = docs
        .chunks(CHUNK)
        .enumerate()
        .map(|(i, c)| ((i * CHUNK) as u32, c))
        .collect();
    let scans = par::map(chunks, |(base, chunk)| {
        let mut scan = ChunkScan::default();
        for (i, &doc) in chunk.iter().enumerate() {
            scan.doc = doc;
            scan.record = base + i as u32;
            scan.open.clear();
            elements(doc_text(buffers, doc), &mut scan);
        }
        scan
    });
    let mut paths: Vec<Box<str>> = scans.iter().flat_map(|s| s.paths.keys().cloned()).collect();
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
            let mut by_local = vec![0; s.paths.len()];
            for (path, &local) in &s.paths {
                by_local[local as usize] = global(path).expect("listed");
            }
            by_local
        })
        .collect();
    let mut bases: Vec<Vec<u32>> = Vec::with_capacity(scans.len());
    let mut counts = vec![0u32; paths.len()];
    for (scan, by_local) in scans.iter().zip(&locals) {
        bases.push(counts.clone());
        for (local, found) in scan.found.iter().enumerate() {
            counts[by_local[local]] += found.len() as u32;
        }
    }
    let mut out = Vec::with_capacity(paths.len());
    for (g, path) in paths.iter().enumerate() {
        let n = counts[g] as usize;
        let mut element_docs = Vec::with_capacity(n);
        let mut record_of = Vec::with_capacity(n);
        let mut parent_of = Vec::with_capacity(if parents[g].is_some() { n } else { 0 });
        for ((scan, by_local), base) in scans.iter().zip(&locals).zip(&bases) {
            let Some(local) = by_local.iter().position(|&x| x == g) else {
                continue;
            };
            for found in &scan.found[local] {
                element_docs.push(found.doc);
                record_of.push(found.record);
                if let Some(parent) = parents[g] {
                    let id = match found.parent {
                        Some((pl, pi)) if by_local[pl as usize] == parent => base[parent] + pi,
                        _ => NO_PARENT,
                    };
                    parent_of.push(id);
                }
            }
        }
        // The arrays of objects directly inside these elements: not indexed here, their
        // elements are (a dotted field into them is a nested query on them, lifted);
        // unless they are plain objects in places too.
        let inner: Vec<&str> = paths
            .iter()
            .zip(&parents)
            .filter(|(child, p)| **p == Some(g) && !mixed(child))
            .filter_map(|(child, _)| child.strip_prefix(&**path)?.strip_prefix('.'))
            .collect();
        out.push(Nested {
            mixed: mixed(path),
            path: path.clone(),
            parent: parents[g],
            parent_of,
            record_of,
            elements: Collection::of_elements(Arc::clone(buffers), element_docs, path, &inner),
        });
    }
    out
}
