//! Where a collection keeps its records' served JSON: as written at load ([`Texts::Plain`],
//! the default: a record is a slice, served by copying), or compressed
//! ([`Texts::Packed`], opt-in with [`StoreKind::Compressed`]: one LZ4 block per record,
//! against a dictionary of sample records of the same collection, decompressed when read).
//!
//! Both hold the same bytes: a record's text, and an array element's (a slice of its
//! record's), read from either are equal.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::DocRef;
use crate::par;

/// How an [`Engine`](crate::Engine) keeps its records' JSON in memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// As served: a page is written by copying each record's bytes. The fastest pages.
    #[default]
    Plain,
    /// Compressed: each record an LZ4 block against a dictionary of sample records of its
    /// collection (about a quarter to a third of the JSON), decompressed on every read.
    /// Most searches and counts read no JSON and cost the same; those that check values
    /// in the records (exact `!` values, long or wildcard phrases) decompress each record
    /// they check, and writing a page of full records costs a few times as much as with
    /// [`StoreKind::Plain`].
    Compressed,
}

impl StoreKind {
    /// The kind's name, as `--store` takes it: `plain` or `compressed`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Plain => "plain",
            StoreKind::Compressed => "compressed",
        }
    }
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<StoreKind, String> {
        match s {
            "plain" => Ok(StoreKind::Plain),
            "compressed" => Ok(StoreKind::Compressed),
            _ => Err(format!(
                "unknown store kind {s:?}: expected `plain` or `compressed`"
            )),
        }
    }
}

/// The records' JSON of a collection, shared with the collections of its array elements.
#[derive(Debug, Clone)]
pub(crate) enum Texts {
    /// As written at load: records one after the other, a chunk of records per buffer.
    Plain(Arc<Vec<String>>),
    /// One compressed block per record.
    Packed(Arc<Packed>),
}

/// How many records' blocks a chunk of compressed data holds: each chunk is compressed by
/// one thread.
const CHUNK: usize = 4096;

/// The size of the dictionary. LZ4 reaches 64 KiB back, but every block hashes the whole
/// dictionary before it starts, so its size is paid at load for every record: at a million
/// generated cards 16 KiB loads about a second faster than 32 KiB, for under a point more
/// of the JSON, while 8 KiB takes the Pokémon TCG API's cards over 0.35 of their JSON.
const DICT_BYTES: usize = 16 * 1024;

/// Records compressed one LZ4 block each (LZ4 block format, no frame) against one
/// dictionary.
#[derive(Debug)]
pub(crate) struct Packed {
    /// This store's number, unique in the process: what a thread's [`Scratch`] says it
    /// holds a block of.
    serial: u64,
    dict: Box<[u8]>,
    /// The blocks, [`CHUNK`] to a chunk, one after the other: block `b` is
    /// `chunks[b / CHUNK][ends[b - 1]..ends[b]]`, from 0 for the first of a chunk. Kept as
    /// compressed, in chunks: gathering them into one buffer would hold the compressed
    /// store twice at once on top of the plain one, at the top of the load's memory.
    chunks: Vec<Box<[u8]>>,
    ends: Vec<u32>,
    /// Each block's record as it was placed in the plain buffers, by block number.
    places: Vec<DocRef>,
    /// Per plain buffer, its blocks by start: where an element's text (a slice of its
    /// record's, placed in the same buffer) is found.
    by_buffer: Vec<Vec<u32>>,
}

/// A thread's decompression buffer, and the block it holds: reading the same record again
/// (its array elements one after the other) does not decompress it again.
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    /// The [`Packed::serial`] and block `bytes` hold, if any.
    holds: Option<(u64, u32)>,
}

thread_local! {
    /// Taken while in use (a nested read makes its own).
    static SCRATCH: Cell<Scratch> = Cell::new(Scratch::default());
}

/// The next [`Packed::serial`].
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(0);

impl Texts {
    /// The text at `d`; `block` is its record's block when known.
    pub(crate) fn get(&self, d: DocRef, block: Option<u32>) -> Cow<'_, str> {
        match self {
            Texts::Plain(buffers) => Cow::Borrowed(plain_text(buffers, d)),
            Texts::Packed(packed) => packed.with(d, block, |s| Cow::Owned(s.to_string())),
        }
    }

    /// Calls `f` with the text at `d`; `block` is its record's block when known (a record
    /// of the records' collection).
    pub(crate) fn with<R>(&self, d: DocRef, block: Option<u32>, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Texts::Plain(buffers) => f(plain_text(buffers, d)),
            Texts::Packed(packed) => packed.with(d, block, f),
        }
    }

    /// The plain buffers, if the texts are kept plain.
    pub(crate) fn plain(&self) -> Option<&Arc<Vec<String>>> {
        match self {
            Texts::Plain(buffers) => Some(buffers),
            Texts::Packed(_) => None,
        }
    }

    /// Bytes held on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Texts::Plain(buffers) => buffers.iter().map(String::len).sum(),
            Texts::Packed(packed) => packed.heap_bytes(),
        }
    }
}

/// Texts by number, some missing, held as a [`StoreKind`] holds records: for what a
/// frontend renders once from a store's records and serves from then on (the `/v2`
/// view), so that it takes no more than the store it was made from.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct TextList {
    /// By number: the text's place among those held, [`NO_TEXT`] for none.
    numbers: Vec<u32>,
    held: HeldTexts,
}

#[cfg_attr(not(feature = "server"), allow(dead_code))]
#[derive(Debug)]
enum HeldTexts {
    /// One after the other in buffers, with each one's place.
    Plain {
        buffers: Vec<String>,
        places: Vec<DocRef>,
    },
    /// A block each (the packed store knows their places).
    Packed(Packed),
}

/// A [`TextList::numbers`] entry for a number that has no text.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
const NO_TEXT: u32 = u32::MAX;

/// The most bytes a [`TextList`] buffer holds unless one text is larger (offsets in a
/// buffer are `u32`).
#[cfg_attr(not(feature = "server"), allow(dead_code))]
const LIST_BUFFER_BYTES: usize = 64 << 20;

#[cfg_attr(not(feature = "server"), allow(dead_code))]
impl TextList {
    /// `items`, numbered in order, kept as `kind` says.
    pub(crate) fn new(items: Vec<Option<String>>, kind: StoreKind) -> TextList {
        TextList::in_buffers_of(items, kind, LIST_BUFFER_BYTES)
    }

    /// [`Self::new`], starting a new buffer before a text that would take the current one
    /// over `buffer_bytes`.
    fn in_buffers_of(items: Vec<Option<String>>, kind: StoreKind, buffer_bytes: usize) -> TextList {
        let mut buffers: Vec<String> = Vec::new();
        let mut places = Vec::new();
        let mut numbers = Vec::with_capacity(items.len());
        for item in items {
            let Some(text) = item else {
                numbers.push(NO_TEXT);
                continue;
            };
            if buffers
                .last()
                .is_none_or(|b| b.len() + text.len() > buffer_bytes && !b.is_empty())
            {
                buffers.push(String::new());
            }
            let number = (buffers.len() - 1) as u32;
            let buffer = buffers.last_mut().expect("pushed above");
            let place = DocRef {
                buffer: number,
                start: u32::try_from(buffer.len()).expect("a buffer under 4 GiB"),
                len: u32::try_from(text.len()).expect("a text under 4 GiB"),
            };
            buffer.push_str(&text);
            numbers.push(u32::try_from(places.len()).expect("fewer than 2^32 - 1 texts"));
            places.push(place);
        }
        let held = match kind {
            StoreKind::Plain => {
                for buffer in &mut buffers {
                    buffer.shrink_to_fit();
                }
                places.shrink_to_fit();
                HeldTexts::Plain { buffers, places }
            }
            StoreKind::Compressed => HeldTexts::Packed(Packed::new(&buffers, &places)),
        };
        TextList { numbers, held }
    }

    /// Calls `f` with text `i`, if there is one.
    pub(crate) fn with<R>(&self, i: u32, f: impl FnOnce(&str) -> R) -> Option<R> {
        let k = *self.numbers.get(i as usize).filter(|&&k| k != NO_TEXT)?;
        Some(match &self.held {
            HeldTexts::Plain { buffers, places } => f(plain_text(buffers, places[k as usize])),
            // Block `k` is text `k`: they were compressed in order.
            HeldTexts::Packed(packed) => packed.with(packed.places[k as usize], Some(k), f),
        })
    }

    /// Whether there is a text `i`.
    pub(crate) fn has(&self, i: u32) -> bool {
        self.numbers.get(i as usize).is_some_and(|&k| k != NO_TEXT)
    }

    /// Bytes held on the heap.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.numbers.capacity() * 4
            + match &self.held {
                HeldTexts::Plain { buffers, places } => {
                    buffers.iter().map(String::capacity).sum::<usize>()
                        + places.capacity() * std::mem::size_of::<DocRef>()
                }
                HeldTexts::Packed(packed) => packed.heap_bytes(),
            }
    }
}

pub(crate) fn plain_text(buffers: &[String], d: DocRef) -> &str {
    let start = d.start as usize;
    &buffers[d.buffer as usize][start..start + d.len as usize]
}

impl Packed {
    /// Compresses the records `docs` (in record order) of `buffers`.
    pub(crate) fn new(buffers: &[String], docs: &[DocRef]) -> Packed {
        let dict = dictionary(buffers, docs);
        let records: Vec<&[DocRef]> = docs.chunks(CHUNK).collect();
        let compressed: Vec<(Box<[u8]>, Vec<u32>)> = par::map_slice(&records, |records| {
            let mut data = Vec::new();
            let mut ends = Vec::with_capacity(records.len());
            let mut block = Vec::new();
            for &d in *records {
                let text = plain_text(buffers, d).as_bytes();
                block.resize(lz4_flex::block::get_maximum_output_size(text.len()), 0);
                let n = lz4_flex::block::compress_into_with_dict(text, &mut block, &dict)
                    .expect("the output has LZ4's maximum size for the input");
                data.extend_from_slice(&block[..n]);
                ends.push(u32::try_from(data.len()).expect("a chunk's blocks under 4 GiB"));
            }
            (data.into_boxed_slice(), ends)
        });
        let (chunks, ends): (Vec<Box<[u8]>>, Vec<Vec<u32>>) = compressed.into_iter().unzip();
        let ends = ends.concat();
        let mut by_buffer: Vec<Vec<u32>> = vec![Vec::new(); buffers.len()];
        for (block, d) in docs.iter().enumerate() {
            by_buffer[d.buffer as usize].push(block as u32);
        }
        for blocks in &mut by_buffer {
            blocks.sort_unstable_by_key(|&b| docs[b as usize].start);
            blocks.shrink_to_fit();
        }
        Packed {
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            dict,
            chunks,
            ends,
            places: docs.to_vec(),
            by_buffer,
        }
    }

    /// The block holding the text at `d` (a record's, or a slice of one).
    fn block_of(&self, d: DocRef) -> u32 {
        let blocks = &self.by_buffer[d.buffer as usize];
        let after = blocks.partition_point(|&b| self.places[b as usize].start <= d.start);
        blocks[after - 1]
    }

    /// Calls `f` with the text at `d`, decompressed; `block` is its block when known.
    fn with<R>(&self, d: DocRef, block: Option<u32>, f: impl FnOnce(&str) -> R) -> R {
        let block = block.unwrap_or_else(|| self.block_of(d));
        let place = self.places[block as usize];
        let mut scratch = SCRATCH.with(Cell::take);
        if scratch.holds != Some((self.serial, block)) {
            let b = block as usize;
            let start = if b.is_multiple_of(CHUNK) {
                0
            } else {
                self.ends[b - 1]
            } as usize;
            let input = &self.chunks[b / CHUNK][start..self.ends[b] as usize];
            scratch.bytes.resize(place.len as usize, 0);
            let written =
                lz4_flex::block::decompress_into_with_dict(input, &mut scratch.bytes, &self.dict)
                    .expect("a block decompresses: it was compressed from this record");
            debug_assert_eq!(written, place.len as usize);
            scratch.holds = Some((self.serial, block));
        }
        let from = (d.start - place.start) as usize;
        let text = std::str::from_utf8(&scratch.bytes[from..from + d.len as usize])
            .expect("a record's JSON is UTF-8 and an element's text a slice of it at char edges");
        let out = f(text);
        SCRATCH.with(|s| s.set(scratch));
        out
    }

    fn heap_bytes(&self) -> usize {
        self.dict.len()
            + self.chunks.iter().map(|c| c.len()).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Box<[u8]>>()
            + self.ends.capacity() * 4
            + self.places.capacity() * std::mem::size_of::<DocRef>()
            + self
                .by_buffer
                .iter()
                .map(|b| b.capacity() * 4 + std::mem::size_of::<Vec<u32>>())
                .sum::<usize>()
    }
}

/// Sample records spread evenly over `docs`, whole, up to [`DICT_BYTES`]: what the
/// records have in common (keys, the values of keyword fields, texts in common) is then
/// found in the dictionary rather than written in every block.
fn dictionary(buffers: &[String], docs: &[DocRef]) -> Box<[u8]> {
    let mut dict = Vec::with_capacity(DICT_BYTES);
    if docs.is_empty() {
        return dict.into_boxed_slice();
    }
    // As many records as fit on average, spread over the whole collection, so that each
    // part of it finds its kind of values there.
    let total: usize = docs.iter().map(|d| d.len as usize).sum();
    let average = (total / docs.len()).max(1);
    let samples = (DICT_BYTES / average).clamp(1, docs.len());
    for d in docs.iter().step_by(docs.len() / samples) {
        let text = plain_text(buffers, *d).as_bytes();
        if dict.len() + text.len() <= DICT_BYTES {
            dict.extend_from_slice(text);
        }
    }
    dict.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::TextList;
    use crate::{Engine, OpenOptions, StoreKind};

    /// A list reads back its texts by number, missing ones as missing, in either kind and
    /// over many buffers; packed, it holds less than plain.
    #[test]
    fn a_text_list_reads_back_its_texts() {
        let items: Vec<Option<String>> = (0..3000)
            .map(|i| {
                (i % 7 != 3).then(|| match i % 11 {
                    0 => String::new(),
                    _ => format!(
                        "{{\"id\":\"c{i}\",\"name\":\"Card é {i}\",\"text\":\"{}\",\"rules\":\"{}\"}}",
                        "ab".repeat(i % 50),
                        "Once during your turn, you may draw a card. ".repeat(1 + i % 9)
                    ),
                })
            })
            .collect();
        let mut sizes = Vec::new();
        for kind in [StoreKind::Plain, StoreKind::Compressed] {
            for buffer_bytes in [1, 100, 1 << 20] {
                let list = TextList::in_buffers_of(items.clone(), kind, buffer_bytes);
                for (i, item) in items.iter().enumerate() {
                    let i = i as u32;
                    assert_eq!(
                        list.with(i, str::to_string).as_ref(),
                        item.as_ref(),
                        "{kind:?} {i}"
                    );
                    assert_eq!(list.has(i), item.is_some());
                }
                assert_eq!(list.with(items.len() as u32, |_| ()), None);
                assert!(!list.has(items.len() as u32));
                sizes.push(list.heap_bytes());
            }
        }
        let total: usize = items.iter().flatten().map(String::len).sum();
        assert!(
            sizes[2] >= total && sizes[5] < sizes[2] / 2,
            "{sizes:?} of {total}"
        );
    }

    /// Every record's and every array element's text, id and `^` values read from a
    /// compressed store equal the plain store's, on the bundled snapshot and a generated
    /// one of more cards than a chunk holds; and the compressed texts are smaller.
    #[test]
    fn a_compressed_store_reads_back_what_the_plain_one_holds() {
        let dir = crate::generate::scratch_snapshot("cardex-texts", 4500);
        let bundled = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data"));
        let compressed = OpenOptions::new().store(StoreKind::Compressed);
        let mut records = 0;
        let mut elements = 0;
        for path in [&dir, &bundled] {
            let plain = Engine::open(path).unwrap();
            let packed = Engine::open_with(path, &compressed, |_| {}).unwrap();
            assert_eq!(packed.options().store, StoreKind::Compressed);
            for (a, b) in plain.catalogs().zip(packed.catalogs()) {
                // The same block of two stores in a row: the second is not the first's.
                for id in 0..a.expansions().len().min(a.cards().len()) as u32 {
                    assert_eq!(b.cards().doc(id), a.cards().doc(id));
                    assert_eq!(b.expansions().doc(id), a.expansions().doc(id));
                    b.cards()
                        .with_doc(id, |doc| assert_eq!(doc, a.cards().doc(id)));
                }
                for (p, c) in [(a.cards(), b.cards()), (a.expansions(), b.expansions())] {
                    assert!(p.texts.plain().is_some() && c.texts.plain().is_none());
                    assert_eq!(p.len(), c.len());
                    for id in 0..p.len() as u32 {
                        assert_eq!(p.doc(id), c.doc(id));
                        assert_eq!(p.record_id(id), c.record_id(id));
                        c.with_doc(id, |doc| assert_eq!(doc, p.doc(id)));
                        records += 1;
                    }
                    for (pn, cn) in p.nested().iter().zip(c.nested()) {
                        assert_eq!(pn.path, cn.path);
                        for id in 0..pn.elements.len() as u32 {
                            assert_eq!(pn.elements.doc(id), cn.elements.doc(id));
                            elements += 1;
                        }
                    }
                    for (field, info) in p.index().fields() {
                        if info.path() == "rarity_code" || info.path() == "id" {
                            let (pv, cv) = (p.literal_values(field), c.literal_values(field));
                            let listed = |v: &crate::index::Vocab| {
                                v.iter()
                                    .map(|(t, r)| format!("{t}={r:?}"))
                                    .collect::<Vec<_>>()
                            };
                            assert_eq!(listed(pv), listed(cv));
                        }
                    }
                    if p.len() > 1000 {
                        let text = |c: &super::super::Collection| c.texts.heap_bytes();
                        assert!(text(c) * 3 < text(p), "{} {}", text(c), text(p));
                        assert!(c.heap_bytes() < p.heap_bytes());
                    }
                }
            }
        }
        assert!(
            records > super::CHUNK && elements > 10_000,
            "{records} {elements}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
