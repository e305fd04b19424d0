//! The union of a few posting lists, counted in a mask of one bit per id over their span
//! ([`DenseIds`]), without building a bitmap; and a bitmap's ids read in bulk
//! ([`ids_of`]).
//!
//! A wildcard (`name:char*`) or an OR of words is a union of posting lists that may share
//! records. roaring unites them key by key (each 65,536 ids): it turns the key's first
//! array into an 8 KiB bitset, ORs the others into it, and turns the result back into an
//! array, which at a wildcard's sizes (about 1,300 ids a key) costs more than the OR
//! itself. This module ORs every list's ids into one zeroed mask spanning all of them,
//! counting the bits it turns on; the count is the union's size and the first page is
//! the mask's first set bits. It is used when the mask costs no more than the ids: at
//! most [`WORDS_PER_ID`] words per id.
//!
//! roaring keeps its containers private, and its iterator yields one id per call. The
//! one bulk view of a bitmap's values it offers is its serialized form (the portable
//! *Roaring format*, RoaringFormatSpec), which it writes a value at a time into a buffer,
//! several times faster; [`containers`] reads that form back. [`ids_of`] lists a short
//! bitmap's ids the same way, for an AND that walks them one by one.

use roaring::RoaringBitmap;

use super::mask::{ids_of_words, page_of_words};
use crate::index::Postings;

/// The most mask words a union may use per id of its lists.
const WORDS_PER_ID: u64 = 2;

/// Cookie of a serialized bitmap with run containers (low 16 bits; the high 16 hold the
/// container count minus one).
const SERIAL_COOKIE: u32 = 12_347;
/// Cookie of a serialized bitmap without run containers.
const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12_346;
/// With run containers, the offset header is only written from this many containers on.
const NO_OFFSET_THRESHOLD: usize = 4;
/// A container with more values than this is a bitset (unless it is a run container).
const ARRAY_LIMIT: u32 = 4_096;

/// Records as one bit each over a span of ids, and how many: the union of posting lists
/// (built by the plan when a union of lists may share records).
#[derive(Debug, Clone)]
pub struct DenseIds {
    /// The id of bit 0 of word 0, a multiple of 65,536.
    first: u32,
    /// Bit `i % 64` of word `i / 64` is id `first + i`.
    words: Vec<u64>,
    /// How many bits are set.
    len: u64,
}

impl DenseIds {
    /// The union of `lists`, or `None` when a mask over their span would cost more than
    /// [`WORDS_PER_ID`] words per id (sparse lists far apart: roaring's union is then the
    /// cheaper one), or in the (never seen) case that roaring's serialized form does not
    /// read back.
    pub(crate) fn union(lists: &[Postings<'_>]) -> Option<DenseIds> {
        let total: u64 = lists.iter().map(Postings::len).sum();
        let (min, max) = (
            lists.iter().filter_map(first_id).min()?,
            lists.iter().filter_map(last_id).max()?,
        );
        if u64::from(max - min) / 64 + 1 > total.saturating_mul(WORDS_PER_ID) {
            return None;
        }
        // Whole keys of 65,536 ids (1,024 words), so that a container's words are one
        // block of the mask.
        let first = min & !0xFFFF;
        let keys = (max >> 16) - (first >> 16) + 1;
        let mut mask = DenseIds {
            first,
            words: vec![0; keys as usize * 1024],
            len: 0,
        };
        let mut bytes = Vec::new();
        for list in lists {
            match *list {
                Postings::Ids(ids) => {
                    for &id in ids {
                        mask.set((id - first) as usize);
                    }
                }
                Postings::Bitmap(bitmap) => {
                    let mut parts = Vec::new();
                    containers(serialized(bitmap, &mut bytes)?, &mut parts)?;
                    for (key, values) in &parts {
                        mask.add(u32::from(*key) << 16, values);
                    }
                }
            }
        }
        Some(mask)
    }

    /// Sets bit `i`, counting it if it was clear.
    #[inline]
    fn set(&mut self, i: usize) {
        let word = &mut self.words[i / 64];
        let bit = (i % 64) as u32;
        self.len += (!*word >> bit) & 1;
        *word |= 1 << bit;
    }

    /// ORs in word `w`, counting the bits it turns on.
    #[inline]
    fn or_word(&mut self, w: usize, bits: u64) {
        let word = &mut self.words[w];
        self.len += u64::from((bits & !*word).count_ones());
        *word |= bits;
    }

    /// Adds the values of one container whose ids start at `base` (a multiple of 65,536,
    /// within the mask).
    fn add(&mut self, base: u32, values: &Values<'_>) {
        let at = (base - self.first) as usize;
        match *values {
            Values::Array(bytes) => {
                let values = bytes
                    .chunks_exact(2)
                    .map(|v| u16::from_le_bytes([v[0], v[1]]));
                // The key's 1,024 words as an array, so that a value's word needs no
                // bounds check (the mask holds whole keys, see `union`).
                let block: &mut [u64; 1024] = (&mut self.words[at / 64..at / 64 + 1024])
                    .try_into()
                    .expect("a key is 1,024 words");
                let mut added = 0;
                for v in values {
                    let word = &mut block[usize::from(v >> 6)];
                    added += (!*word >> (v & 63)) & 1;
                    *word |= 1 << (v & 63);
                }
                self.len += added;
            }
            Values::Bitmap(bytes) => {
                for (j, w) in bytes.chunks_exact(8).enumerate() {
                    let bits = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                    if bits != 0 {
                        self.or_word(at / 64 + j, bits);
                    }
                }
            }
            Values::Runs(bytes) => {
                for run in bytes.chunks_exact(4) {
                    let start = usize::from(u16::from_le_bytes([run[0], run[1]]));
                    let length = usize::from(u16::from_le_bytes([run[2], run[3]]));
                    self.set_range(at + start, at + start + length);
                }
            }
        }
    }

    /// Sets bits `lo..=hi`, a word at a time.
    fn set_range(&mut self, lo: usize, hi: usize) {
        let (first_word, last_word) = (lo / 64, hi / 64);
        for w in first_word..=last_word {
            let from = if w == first_word { lo % 64 } else { 0 };
            let to = if w == last_word { hi % 64 } else { 63 };
            self.or_word(w, (u64::MAX >> (63 - to)) & (u64::MAX << from));
        }
    }

    /// How many ids are set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The mask's size in 64-bit words.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// The ids set from position `offset` on, at most `limit` of them.
    pub(super) fn page(&self, offset: u64, limit: usize) -> Vec<u32> {
        page_of_words(&self.words, self.first, self.len, offset, limit)
    }

    /// The ids set, ascending.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        ids_of_words(&self.words, self.first)
    }
}

/// The ids of `set`, ascending, read from its serialized form: several times faster than
/// roaring's iterator, which yields one id per call through three nested iterators.
pub(super) fn ids_of(set: &RoaringBitmap) -> Vec<u32> {
    let mut bytes = Vec::new();
    let mut parts = Vec::new();
    if serialized(set, &mut bytes)
        .and_then(|bytes| containers(bytes, &mut parts))
        .is_none()
    {
        return set.iter().collect();
    }
    let mut ids = Vec::with_capacity(set.len() as usize);
    for (key, values) in &parts {
        let base = u32::from(*key) << 16;
        match *values {
            Values::Array(bytes) => ids.extend(
                bytes
                    .chunks_exact(2)
                    .map(|v| base | u32::from(u16::from_le_bytes([v[0], v[1]]))),
            ),
            Values::Bitmap(bytes) => {
                for (j, w) in bytes.chunks_exact(8).enumerate() {
                    let mut bits = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                    while bits != 0 {
                        ids.push(base + 64 * j as u32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
            }
            Values::Runs(bytes) => {
                for run in bytes.chunks_exact(4) {
                    let start = u32::from(u16::from_le_bytes([run[0], run[1]]));
                    let length = u32::from(u16::from_le_bytes([run[2], run[3]]));
                    ids.extend((base + start)..=(base + start + length));
                }
            }
        }
    }
    ids
}

/// `bitmap` in roaring's serialized form, written into `bytes` (grown as needed) through
/// a [`SliceWriter`] rather than appended to a `Vec`; `None` should roaring's size
/// estimate fall short.
fn serialized<'b>(bitmap: &RoaringBitmap, bytes: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    let size = bitmap.serialized_size();
    if bytes.len() < size {
        bytes.resize(size, 0);
    }
    let mut out = SliceWriter {
        buf: &mut bytes[..size],
        at: 0,
    };
    bitmap.serialize_into(&mut out).ok()?;
    let written = out.at;
    Some(&bytes[..written])
}

/// The first id of a list.
fn first_id(list: &Postings<'_>) -> Option<u32> {
    match list {
        Postings::Ids(ids) => ids.first().copied(),
        Postings::Bitmap(b) => b.min(),
    }
}

/// The last id of a list.
fn last_id(list: &Postings<'_>) -> Option<u32> {
    match list {
        Postings::Ids(ids) => ids.last().copied(),
        Postings::Bitmap(b) => b.max(),
    }
}

/// The values of one container of a serialized bitmap, as the bytes that hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Values<'b> {
    /// Ascending 16-bit values, little-endian.
    Array(&'b [u8]),
    /// 1,024 little-endian words; bit `v % 64` of word `v / 64` is value `v`.
    Bitmap(&'b [u8]),
    /// Runs, each a little-endian `start` then `length - 1` (16 bits each).
    Runs(&'b [u8]),
}

/// Reads `bytes`, a bitmap in roaring's serialized form, into its containers (their keys,
/// the high 16 bits of their ids, and their values), replacing `out`'s contents. `None`
/// when the bytes are not that form or are cut short.
fn containers<'b>(bytes: &'b [u8], out: &mut Vec<(u16, Values<'b>)>) -> Option<()> {
    out.clear();
    let u16_at = |at: usize| -> Option<u16> {
        let b = bytes.get(at..at + 2)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let cookie = u32_at(0)?;
    // (container count, where the run flags are, where the key/count pairs start)
    let (size, run_flags, mut at) = if cookie & 0xFFFF == SERIAL_COOKIE {
        let size = (cookie >> 16) as usize + 1;
        (size, Some(4), 4 + size.div_ceil(8))
    } else if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
        (u32_at(4)? as usize, None, 8)
    } else {
        return None;
    };
    let descriptions = at;
    at = at.checked_add(size.checked_mul(4)?)?;
    if run_flags.is_none() || size >= NO_OFFSET_THRESHOLD {
        at = at.checked_add(size.checked_mul(4)?)?;
    }
    for i in 0..size {
        let key = u16_at(descriptions + 4 * i)?;
        let count = u32::from(u16_at(descriptions + 4 * i + 2)?) + 1;
        let is_run = match run_flags {
            Some(flags) => bytes.get(flags + i / 8)? & (1 << (i % 8)) != 0,
            None => false,
        };
        let values = if is_run {
            let runs = usize::from(u16_at(at)?);
            at += 2;
            Values::Runs(bytes.get(at..at + 4 * runs)?)
        } else if count > ARRAY_LIMIT {
            Values::Bitmap(bytes.get(at..at + 8192)?)
        } else {
            Values::Array(bytes.get(at..at + 2 * count as usize)?)
        };
        at += match values {
            Values::Array(b) | Values::Bitmap(b) | Values::Runs(b) => b.len(),
        };
        out.push((key, values));
    }
    Some(())
}

/// A writer into a slice sized beforehand. roaring writes a serialized bitmap two bytes
/// at a time, one `write_all` each; this one's inlined copy replaces `Vec`'s append (a
/// call and a capacity check per value, a third of a wildcard's time at 1M cards). Past
/// the slice's end it fails with `WriteZero`, writing nothing more.
struct SliceWriter<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl std::io::Write for SliceWriter<'_> {
    #[inline(always)]
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline(always)]
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        let end = self.at + data.len();
        match self.buf.get_mut(self.at..end) {
            Some(place) => {
                place.copy_from_slice(data);
                self.at = end;
                Ok(())
            }
            None => Err(std::io::ErrorKind::WriteZero.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use roaring::{MultiOps, RoaringBitmap};

    /// The union of `lists` through roaring, to compare with.
    fn union_by_roaring(lists: &[RoaringBitmap]) -> RoaringBitmap {
        lists.iter().union()
    }

    /// A bitmap of `ids` in each of roaring's container kinds: as built (arrays and
    /// bitsets), and run-compressed.
    fn shapes(ids: &[u32]) -> [RoaringBitmap; 2] {
        let plain: RoaringBitmap = ids.iter().copied().collect();
        let mut runs = plain.clone();
        runs.optimize();
        [plain, runs]
    }

    #[test]
    fn reads_every_container_kind() {
        // An array key, a bitset key (more than 4,096 values), and a run.
        let mut ids: Vec<u32> = vec![3, 70_000, 70_001];
        ids.extend(2 << 16..(2 << 16) + 6_000);
        ids.extend((5 << 16..(5 << 16) + 300).filter(|i| i % 7 != 0 || *i < (5 << 16) + 100));
        for bitmap in shapes(&ids) {
            let mut bytes = Vec::new();
            bitmap.serialize_into(&mut bytes).expect("serializes");
            let mut parts = Vec::new();
            containers(&bytes, &mut parts).expect("reads back");
            assert_eq!(
                parts.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
                vec![0, 1, 2, 5]
            );
            let dense = DenseIds::union(&[Postings::Bitmap(&bitmap)]).expect("dense enough");
            assert_eq!(dense.len(), bitmap.len());
            assert!(dense.ids().eq(bitmap.iter()));
        }
    }

    #[test]
    fn ids_of_every_container_kind_are_roarings() {
        let mut ids: Vec<u32> = vec![3, 70_000, 70_001, u32::MAX - 1, u32::MAX];
        ids.extend(2 << 16..(2 << 16) + 6_000);
        ids.extend((5 << 16..(5 << 16) + 300).filter(|i| i % 7 != 0 || *i < (5 << 16) + 100));
        ids.sort_unstable();
        for bitmap in shapes(&ids) {
            assert_eq!(ids_of(&bitmap), ids);
        }
        assert!(ids_of(&RoaringBitmap::new()).is_empty());
    }

    #[test]
    fn refuses_what_is_not_the_format() {
        let mut parts = Vec::new();
        assert!(containers(&[], &mut parts).is_none());
        assert!(containers(&[1, 2, 3, 4, 5, 6, 7, 8], &mut parts).is_none());
        let bitmap: RoaringBitmap = (0..100).collect();
        let mut bytes = Vec::new();
        bitmap.serialize_into(&mut bytes).expect("serializes");
        bytes.truncate(bytes.len() - 1);
        assert!(containers(&bytes, &mut parts).is_none(), "cut short");
    }

    #[test]
    fn sparse_lists_far_apart_are_left_to_roaring() {
        let a: RoaringBitmap = (0..40).collect();
        let b: RoaringBitmap = (10_000_000..10_000_040).collect();
        assert!(DenseIds::union(&[Postings::Bitmap(&a), Postings::Bitmap(&b)]).is_none());
    }

    proptest! {
        /// `ids_of` lists what roaring's iterator yields, in every container kind.
        #[test]
        fn ids_of_agrees_with_roaring(
            ids in proptest::collection::btree_set(0u32..400_000, 0..9_000),
            dense_from in 0u32..400_000,
            dense_len in 0u32..6_000,
        ) {
            let mut ids: Vec<u32> = ids.into_iter().collect();
            ids.extend(dense_from..dense_from + dense_len);
            ids.sort_unstable();
            ids.dedup();
            for bitmap in shapes(&ids) {
                prop_assert_eq!(ids_of(&bitmap), bitmap.iter().collect::<Vec<_>>());
            }
        }

        /// Count, ids and every page agree with roaring's union, whatever the lists'
        /// container kinds, overlaps and inline lists.
        #[test]
        fn union_agrees_with_roaring(
            lists in proptest::collection::vec(
                proptest::collection::btree_set(0u32..300_000, 0..6_000), 1..5),
            runs in proptest::collection::vec(any::<bool>(), 4),
            inline in any::<bool>(),
            offset in 0u64..8_000,
            limit in 1usize..150,
        ) {
            let bitmaps: Vec<RoaringBitmap> = lists
                .iter()
                .zip(&runs)
                .map(|(ids, &run)| {
                    let ids: Vec<u32> = ids.iter().copied().collect();
                    let [plain, optimized] = shapes(&ids);
                    if run { optimized } else { plain }
                })
                .collect();
            let short: Vec<u32> = lists[0].iter().copied().take(30).collect();
            let mut postings: Vec<Postings<'_>> =
                bitmaps.iter().map(Postings::Bitmap).collect();
            let mut expected = union_by_roaring(&bitmaps);
            if inline {
                postings.push(Postings::Ids(&short));
                expected.extend(short.iter().copied());
            }
            match DenseIds::union(&postings) {
                Some(dense) => {
                    prop_assert_eq!(dense.len(), expected.len());
                    prop_assert!(dense.ids().eq(expected.iter()));
                    let page: Vec<u32> =
                        expected.iter().skip(offset as usize).take(limit).collect();
                    prop_assert_eq!(dense.page(offset, limit), page);
                }
                None => {
                    // Only refused when the mask would be sparse.
                    let total: u64 = postings.iter().map(Postings::len).sum();
                    let span = u64::from(expected.max().unwrap_or(0) - expected.min().unwrap_or(0)) / 64 + 1;
                    prop_assert!(total == 0 || span > total * WORDS_PER_ID);
                }
            }
        }
    }

    #[test]
    fn a_slice_writer_refuses_to_write_past_its_end() {
        use std::io::Write;
        let mut buf = [0u8; 3];
        let mut out = SliceWriter {
            buf: &mut buf,
            at: 0,
        };
        out.write_all(&[1, 2]).unwrap();
        let refused = out.write_all(&[3, 4]).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::WriteZero);
        assert_eq!(out.at, 2);
        assert_eq!(buf, [1, 2, 0]);
    }
}
