//! Sorted vocabularies: folded terms (or numbers) of one field, each with the records that
//! hold it. Sorted arrays rather than hash maps: lookups are a binary search, prefixes and
//! ranges are contiguous slices, and there is no per-entry hashing overhead in memory.
//!
//! Short posting lists (at most [`SMALL_POSTINGS`] ids), and sparse ones (fewer than
//! [`SPARSE_IDS_PER_CONTAINER`] ids per roaring container on average), are kept inline, as
//! sorted ids in one array shared by the whole vocabulary; the others as roaring bitmaps.
//! Most distinct values of a catalog (ids, prices, rare words) hold a handful of records
//! spread over the whole collection, and a bitmap each would cost more than the ids
//! themselves, in memory and to read.

use std::borrow::Cow;
use std::ops::Range;

use roaring::RoaringBitmap;

use crate::query::Bound;

/// The longest posting list always kept as plain ids.
pub const SMALL_POSTINGS: usize = 32;

/// A posting list with fewer ids than this per roaring container (per 65,536 ids of the
/// id space it touches), on average, is kept as plain ids: four bytes an id against
/// roaring's two and some 56 bytes a container, and read as a slice rather than container
/// by container.
pub const SPARSE_IDS_PER_CONTAINER: usize = 24;

/// The records holding one term: plain ids (ascending) or a bitmap.
#[derive(Debug, Clone, Copy)]
pub enum Postings<'a> {
    /// A short or sparse list of ids, ascending.
    Ids(&'a [u32]),
    /// A bitmap.
    Bitmap(&'a RoaringBitmap),
}

impl<'a> Postings<'a> {
    /// How many records.
    pub fn len(&self) -> u64 {
        match self {
            Postings::Ids(ids) => ids.len() as u64,
            Postings::Bitmap(b) => b.len(),
        }
    }

    /// The records as a bitmap (borrowed when it is one).
    pub fn to_bitmap(self) -> Cow<'a, RoaringBitmap> {
        match self {
            Postings::Ids(ids) => {
                Cow::Owned(RoaringBitmap::from_sorted_iter(ids.iter().copied()).unwrap_or_default())
            }
            Postings::Bitmap(b) => Cow::Borrowed(b),
        }
    }

    /// The records, ascending.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u32> + 'a> {
        match *self {
            Postings::Ids(ids) => Box::new(ids.iter().copied()),
            Postings::Bitmap(b) => Box::new(b.iter()),
        }
    }

    /// The first and last record when the records are every id between them (a run of
    /// consecutive ids, such as the cards of one expansion in default order).
    pub fn span(&self) -> Option<(u32, u32)> {
        let (first, last) = match *self {
            Postings::Ids(ids) => (*ids.first()?, *ids.last()?),
            Postings::Bitmap(b) => (b.min()?, b.max()?),
        };
        (u64::from(last - first) + 1 == self.len()).then_some((first, last))
    }

    /// Whether both are the very same list (not merely equal).
    pub(crate) fn same(&self, other: &Postings<'_>) -> bool {
        match (self, other) {
            (Postings::Ids(a), Postings::Ids(b)) => {
                std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
            }
            (Postings::Bitmap(a), Postings::Bitmap(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// A bitmap being written in roaring's portable format, container by container, then read
/// back by roaring: see [`bitmap_of_sorted`].
#[derive(Default)]
struct PortableBitmap {
    /// Each container's key (its ids' high 16 bits) and cardinality.
    containers: smallvec::SmallVec<[(u16, usize); 16]>,
    /// The containers' bytes.
    body: Vec<u8>,
}

impl PortableBitmap {
    /// roaring's `SERIAL_COOKIE_NO_RUNCONTAINER`, and its largest array container.
    const COOKIE: u32 = 12_346;
    const ARRAY_LIMIT: usize = 4096;

    /// A container of `len` ids, at most [`Self::ARRAY_LIMIT`]: their low halves,
    /// ascending.
    fn array(&mut self, key: u16, len: usize, low: impl Iterator<Item = u16>) {
        debug_assert!(len <= Self::ARRAY_LIMIT);
        let start = self.body.len();
        self.body.reserve(2 * len);
        for id in low {
            self.body.extend_from_slice(&id.to_le_bytes());
        }
        debug_assert_eq!(self.body.len() - start, 2 * len);
        self.containers.push((key, len));
    }

    /// A container of more than [`Self::ARRAY_LIMIT`] ids, as 65,536 bits.
    fn bits(&mut self, key: u16, words: &[u64; 1024], len: usize) {
        debug_assert!(len > Self::ARRAY_LIMIT);
        self.body.reserve(8192);
        for word in words {
            self.body.extend_from_slice(&word.to_le_bytes());
        }
        self.containers.push((key, len));
    }

    /// The bitmap: the header (cookie, container count, each container's key and
    /// cardinality less one, their offsets) before the containers, read back by roaring,
    /// which allocates every array and the container list at their exact sizes.
    fn finish(self) -> RoaringBitmap {
        let header = 8 + 8 * self.containers.len();
        let mut bytes = Vec::with_capacity(header + self.body.len());
        bytes.extend_from_slice(&Self::COOKIE.to_le_bytes());
        bytes.extend_from_slice(&(self.containers.len() as u32).to_le_bytes());
        for &(key, len) in &self.containers {
            bytes.extend_from_slice(&key.to_le_bytes());
            // A container holds 1 to 65,536 ids: its cardinality less one fits 16 bits.
            bytes.extend_from_slice(&((len - 1) as u16).to_le_bytes());
        }
        let mut offset = header;
        for &(_, len) in &self.containers {
            bytes.extend_from_slice(&(offset as u32).to_le_bytes());
            offset += if len <= Self::ARRAY_LIMIT {
                2 * len
            } else {
                8192
            };
        }
        bytes.extend_from_slice(&self.body);
        // The bytes follow the format (the tests compare the results with
        // `from_sorted_iter` for containers of every kind), so reading them back cannot fail.
        RoaringBitmap::deserialize_unchecked_from(bytes.as_slice())
            .expect("roaring reads back the portable format it documents")
    }
}

/// The bitmap of `ids` (ascending, no repeats), every container at its exact size.
///
/// The ids are written straight in roaring's portable format (the version without run
/// containers: up to 4,096 ids of a container as 16-bit values, more as a 65,536-bit
/// bitmap) and read back. Appending ids one by one (`from_sorted_iter`) costs several times
/// more per id, and grows each array by doubling, which leaves on average a quarter of it
/// unused (17 MiB of the index's 61 MiB of arrays at 1M cards). Run containers are never
/// made: they are smaller for clustered lists, but roaring intersects an array with runs by
/// a binary search per id; array and bitmap containers intersect fast with everything.
pub(crate) fn bitmap_of_sorted(ids: &[u32]) -> RoaringBitmap {
    debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let mut bitmap = PortableBitmap::default();
    let mut start = 0;
    while start < ids.len() {
        let key = ids[start] >> 16;
        let end = start + ids[start..].partition_point(|&id| id >> 16 == key);
        let group = &ids[start..end];
        if group.len() <= PortableBitmap::ARRAY_LIMIT {
            bitmap.array(key as u16, group.len(), group.iter().map(|&id| id as u16));
        } else {
            let mut words = [0u64; 1024];
            for &id in group {
                let bit = (id & 0xFFFF) as usize;
                words[bit / 64] |= 1 << (bit % 64);
            }
            bitmap.bits(key as u16, &words, group.len());
        }
        start = end;
    }
    bitmap.finish()
}

/// The bitmap of the set bits of `words` (bit `i % 64` of word `i / 64` is id `i`), made
/// as [`bitmap_of_sorted`] makes one: a container of many ids is its 1,024 words as they
/// are, one of few has its ids listed.
pub(crate) fn bitmap_of_bits(words: &[u64]) -> RoaringBitmap {
    let mut bitmap = PortableBitmap::default();
    for (key, part) in words.chunks(1024).enumerate() {
        let len: usize = part.iter().map(|w| w.count_ones() as usize).sum();
        if len == 0 {
            continue;
        }
        // At most 2^32 ids: the key fits 16 bits.
        let key = key as u16;
        if len > PortableBitmap::ARRAY_LIMIT {
            let mut all = [0u64; 1024];
            all[..part.len()].copy_from_slice(part);
            bitmap.bits(key, &all, len);
        } else {
            let low = part.iter().enumerate().flat_map(|(w, &word)| {
                let mut word = word;
                std::iter::from_fn(move || {
                    (word != 0).then(|| {
                        let bit = word.trailing_zeros() as u16;
                        word &= word - 1;
                        (w * 64) as u16 + bit
                    })
                })
            });
            bitmap.array(key, len, low);
        }
    }
    bitmap.finish()
}

/// Where one term's postings are: `small[start..start + len]`, or `bitmaps[start]` when
/// `len` is [`BITMAP`].
#[derive(Debug, Clone, Copy)]
struct Slot {
    start: u32,
    len: u32,
}

const BITMAP: u32 = u32::MAX;

/// Posting lists stored the compact way: short ones inline, long ones as bitmaps.
#[derive(Debug, Default)]
struct Store {
    slots: Vec<Slot>,
    small: Vec<u32>,
    bitmaps: Vec<RoaringBitmap>,
}

impl Store {
    fn with_capacity(n: usize) -> Store {
        Store {
            slots: Vec::with_capacity(n),
            ..Store::default()
        }
    }

    /// Adds a posting list (ids ascending, no repeats).
    fn push(&mut self, ids: &[u32]) {
        let sparse = || {
            let containers = 1 + ids.windows(2).filter(|w| w[0] >> 16 != w[1] >> 16).count();
            ids.len() < containers * SPARSE_IDS_PER_CONTAINER
        };
        if ids.len() <= SMALL_POSTINGS || sparse() {
            self.slots.push(Slot {
                start: self.small.len() as u32,
                len: ids.len() as u32,
            });
            self.small.extend_from_slice(ids);
        } else {
            let bitmap = bitmap_of_sorted(ids);
            self.slots.push(Slot {
                start: self.bitmaps.len() as u32,
                len: BITMAP,
            });
            self.bitmaps.push(bitmap);
        }
    }

    fn get(&self, i: usize) -> Postings<'_> {
        let slot = self.slots[i];
        if slot.len == BITMAP {
            Postings::Bitmap(&self.bitmaps[slot.start as usize])
        } else {
            let start = slot.start as usize;
            Postings::Ids(&self.small[start..start + slot.len as usize])
        }
    }

    /// The posting lists held as bitmaps.
    fn bitmaps(&self) -> &[RoaringBitmap] {
        &self.bitmaps
    }

    fn shrink(&mut self) {
        self.slots.shrink_to_fit();
        self.small.shrink_to_fit();
        self.bitmaps.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.small.capacity() * 4
            + self.bitmaps.capacity() * std::mem::size_of::<RoaringBitmap>()
            + self
                .bitmaps
                .iter()
                .map(RoaringBitmap::serialized_size)
                .sum::<usize>()
    }
}

/// The terms of one field, sorted by their UTF-8 bytes, with their posting lists.
#[derive(Debug, Default)]
pub struct Vocab {
    /// All terms, concatenated.
    text: String,
    /// `ends[i]` is the end of term `i` in `text`.
    ends: Vec<u32>,
    postings: Store,
}

/// The first eight bytes of `bytes` as a big-endian word, zero-padded when shorter. Where
/// the words of two byte strings differ, they are in the strings' order: at the first
/// byte that differs, either both strings have a byte there, or the one that ended (a
/// zero of padding) is a prefix of the other, which is the smaller. Equal words tell
/// nothing (`"a"` and `"a\0"` pad alike).
#[inline]
fn head_word(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(head) => u64::from_be_bytes(*head),
        None => bytes
            .iter()
            .enumerate()
            .fold(0, |word, (i, &b)| word | u64::from(b) << (56 - 8 * i)),
    }
}

/// Builds a [`Vocab`] from terms given in ascending order.
#[derive(Debug, Default)]
pub(crate) struct VocabBuilder {
    vocab: Vocab,
}

impl VocabBuilder {
    pub(crate) fn with_capacity(terms: usize) -> VocabBuilder {
        VocabBuilder {
            vocab: Vocab {
                text: String::new(),
                ends: Vec::with_capacity(terms),
                postings: Store::with_capacity(terms),
            },
        }
    }

    /// Adds the next term (greater than the last) with its ids (ascending).
    pub(crate) fn push(&mut self, term: &str, ids: &[u32]) {
        debug_assert!(self.vocab.is_empty() || self.vocab.term(self.vocab.len() - 1) < term);
        self.vocab.text.push_str(term);
        self.vocab.ends.push(self.vocab.text.len() as u32);
        self.vocab.postings.push(ids);
    }

    pub(crate) fn finish(mut self) -> Vocab {
        self.vocab.text.shrink_to_fit();
        self.vocab.ends.shrink_to_fit();
        self.vocab.postings.shrink();
        self.vocab
    }
}

impl Vocab {
    /// How many distinct terms.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the field has no terms.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Term number `i`.
    pub fn term(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// The records holding term number `i`.
    pub fn postings(&self, i: usize) -> Postings<'_> {
        self.postings.get(i)
    }

    /// The bytes of term number `i` (no character-boundary checks: for comparing), and
    /// their [`head_word`]: read as the eight bytes from the term's start with those past
    /// its end masked off, in one load, where the text goes on for eight bytes.
    #[inline]
    fn term_head(&self, i: usize) -> (&[u8], u64) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let text = self.text.as_bytes();
        let term = &text[start..self.ends[i] as usize];
        let head = match text[start..].first_chunk::<8>() {
            Some(&eight) if term.len() >= 8 => u64::from_be_bytes(eight),
            Some(&eight) => u64::from_be_bytes(eight) & !(u64::MAX >> (8 * term.len())),
            None => head_word(term),
        };
        (term, head)
    }

    /// The position of the first term not less than `probe`. Each step compares the
    /// terms' first eight bytes as one word ([`head_word`]), and reads further only when
    /// those are equal: most steps of a search decide on the first bytes, in a register,
    /// rather than through a call to compare memory.
    fn lower_bound(&self, probe: &str) -> usize {
        let probe = probe.as_bytes();
        let head = head_word(probe);
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (term, term_head) = self.term_head(mid);
            let less = match term_head.cmp(&head) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => term < probe,
            };
            if less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The number of `term`, if present.
    pub fn find(&self, term: &str) -> Option<usize> {
        let i = self.lower_bound(term);
        (i < self.len() && self.term(i) == term).then_some(i)
    }

    /// The records holding `term`.
    pub fn get(&self, term: &str) -> Option<Postings<'_>> {
        self.find(term).map(|i| self.postings(i))
    }

    /// The numbers of all terms starting with `prefix` (a contiguous run).
    pub fn prefixed(&self, prefix: &str) -> Range<usize> {
        let start = self.lower_bound(prefix);
        let mut end = start;
        while end < self.len() && self.term(end).starts_with(prefix) {
            end += 1;
        }
        start..end
    }

    /// Iterates over `(term, postings)` in term order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Postings<'_>)> + '_ {
        (0..self.len()).map(move |i| (self.term(i), self.postings(i)))
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4 + self.postings.heap_bytes()
    }

    /// The posting lists held as bitmaps.
    pub(crate) fn bitmaps(&self) -> &[RoaringBitmap] {
        self.postings.bitmaps()
    }
}

/// The distinct numbers of one field, ascending, with their posting lists.
#[derive(Debug, Default)]
pub struct NumVocab {
    values: Vec<f64>,
    postings: Store,
    /// Every number is a date's ([`crate::text::is_date_number`]), and there is one.
    dates: bool,
}

/// A number as a hashable key (`-0` and `0` are the same number).
pub(crate) fn number_key(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else {
        x.to_bits()
    }
}

/// Builds a [`NumVocab`] from numbers given in ascending order.
#[derive(Debug, Default)]
pub(crate) struct NumVocabBuilder {
    vocab: NumVocab,
}

impl NumVocabBuilder {
    pub(crate) fn with_capacity(n: usize) -> NumVocabBuilder {
        NumVocabBuilder {
            vocab: NumVocab {
                values: Vec::with_capacity(n),
                postings: Store::with_capacity(n),
                dates: false,
            },
        }
    }

    /// Adds the next number (greater than the last) with its ids (ascending).
    pub(crate) fn push(&mut self, x: f64, ids: &[u32]) {
        self.vocab.values.push(x);
        self.vocab.postings.push(ids);
    }

    pub(crate) fn finish(mut self) -> NumVocab {
        self.vocab.values.shrink_to_fit();
        self.vocab.postings.shrink();
        let values = &self.vocab.values;
        self.vocab.dates =
            !values.is_empty() && values.iter().all(|&x| crate::text::is_date_number(x));
        self.vocab
    }
}

impl NumVocab {
    /// How many distinct numbers.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the field holds no numbers.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether every number here is a date's (`YYYYMMDD`, see
    /// [`crate::text::is_date_number`]), and there is one.
    pub fn all_dates(&self) -> bool {
        self.dates
    }

    /// The records holding exactly `x`.
    pub fn get(&self, x: f64) -> Option<Postings<'_>> {
        let i = self.values.partition_point(|&v| v < x);
        (i < self.len() && self.values[i] == x).then(|| self.postings.get(i))
    }

    /// The positions of every number between the bounds.
    pub fn range(&self, lower: Bound, upper: Bound) -> Range<usize> {
        let start = self
            .values
            .partition_point(|&v| !lower.admits_from_below(v));
        let end = self.values.partition_point(|&v| upper.admits_from_above(v));
        start..end.max(start)
    }

    /// The records holding number number `i`.
    pub fn postings(&self, i: usize) -> Postings<'_> {
        self.postings.get(i)
    }

    /// Iterates over `(number, postings)` ascending.
    pub fn iter(&self) -> impl Iterator<Item = (f64, Postings<'_>)> + '_ {
        self.values
            .iter()
            .enumerate()
            .map(move |(i, &v)| (v, self.postings.get(i)))
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity() * 8 + self.postings.heap_bytes()
    }

    /// The posting lists held as bitmaps.
    pub(crate) fn bitmaps(&self) -> &[RoaringBitmap] {
        self.postings.bitmaps()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrays of 1, 33, 100, 3,000 and 4,096 ids, bitmap containers of 4,097 and 65,536
    /// ids, a run spanning two containers, and the largest id: the same bitmap as built id
    /// by id, with no array holding spare room, and no run containers.
    #[test]
    fn bitmap_of_sorted_is_the_bitmap_of_the_ids() {
        let ids: Vec<u32> = (0..33)
            .chain(65_536..65_636)
            .chain((131_072..140_072).step_by(3))
            .chain(196_608..196_608 + 4096)
            .chain(262_144..262_144 + 4097)
            .chain(327_600..327_700)
            .chain(393_216..458_752)
            .chain([1 << 24, u32::MAX])
            .collect();
        let built = RoaringBitmap::from_sorted_iter(ids.iter().copied()).unwrap();
        let direct = bitmap_of_sorted(&ids);
        assert_eq!(direct, built);
        assert_eq!(direct.iter().collect::<Vec<_>>(), ids);
        let (before, after) = (built.statistics(), direct.statistics());
        assert_eq!(after.n_containers, before.n_containers);
        assert_eq!(after.n_bitset_containers, 2);
        assert_eq!(after.n_run_containers, 0);
        assert_eq!(
            after.n_values_array_containers,
            before.n_values_array_containers
        );
        // Each array's capacity is its length: its bytes are a whole multiple of its values
        // (roaring counts 2 or 4 bytes a value, depending on its version).
        let (bytes, values) = (
            after.n_bytes_array_containers,
            after.n_values_array_containers as u64,
        );
        assert!(
            bytes % values == 0 && [2, 4].contains(&(bytes / values)),
            "{bytes} {values}"
        );
        assert!(bytes < before.n_bytes_array_containers);
        assert_eq!(bitmap_of_sorted(&[]), RoaringBitmap::new());
        assert_eq!(bitmap_of_sorted(&[7]).iter().collect::<Vec<_>>(), [7]);
        let mut words = vec![0u64; (u32::MAX as usize + 1) / 64];
        for &id in &ids {
            words[id as usize / 64] |= 1 << (id % 64);
        }
        assert_eq!(bitmap_of_bits(&words), built);
        assert_eq!(bitmap_of_bits(&[]), RoaringBitmap::new());
        assert_eq!(
            bitmap_of_bits(&[0, 1 << 63]).iter().collect::<Vec<_>>(),
            [127]
        );
    }

    proptest::proptest! {
        /// Any ascending list of ids, spread over a few containers.
        #[test]
        fn bitmap_of_sorted_agrees(ids in proptest::collection::btree_set(0u32..300_000, 0..6000)) {
            let ids: Vec<u32> = ids.into_iter().collect();
            let built = RoaringBitmap::from_sorted_iter(ids.iter().copied()).unwrap();
            proptest::prop_assert_eq!(bitmap_of_sorted(&ids), built.clone());
            let mut words = vec![0u64; 300_000 / 64 + 1];
            for &id in &ids {
                words[id as usize / 64] |= 1 << (id % 64);
            }
            proptest::prop_assert_eq!(bitmap_of_bits(&words), built);
        }
    }

    proptest::proptest! {
        /// Finding a term and the start of a prefix agree with a plain search of the sorted
        /// terms, for terms sharing long heads, holding NULs and multi-byte characters, and
        /// probes between them.
        #[test]
        fn lookups_agree_with_a_plain_search(
            terms in proptest::collection::btree_set("(char|ab\\x00|é|z){0,4}[a-c\\x00é]{0,10}", 0..40),
            probes in proptest::collection::vec("(char|ab\\x00|é|z){0,4}[a-c\\x00é]{0,10}", 1..20),
        ) {
            let mut b = VocabBuilder::with_capacity(terms.len());
            for (i, term) in terms.iter().enumerate() {
                b.push(term, &[i as u32]);
            }
            let v = b.finish();
            let sorted: Vec<&String> = terms.iter().collect();
            for probe in probes.iter().chain(terms.iter()) {
                let expected = sorted.partition_point(|t| t.as_str() < probe.as_str());
                proptest::prop_assert_eq!(v.lower_bound(probe), expected, "{:?}", probe);
                proptest::prop_assert_eq!(v.find(probe), sorted.binary_search(&probe).ok());
                let prefixed: Vec<usize> = (0..sorted.len())
                    .filter(|&i| sorted[i].starts_with(probe.as_str()))
                    .collect();
                let found: Vec<usize> = v.prefixed(probe).collect();
                proptest::prop_assert_eq!(found, prefixed);
            }
        }
    }

    fn ids(p: Option<Postings<'_>>) -> Vec<u32> {
        p.map(|p| p.iter().collect()).unwrap_or_default()
    }

    #[test]
    fn vocab_lookups() {
        let mut b = VocabBuilder::with_capacity(4);
        let many: Vec<u32> = (0..100).collect();
        b.push("char", &[5]);
        b.push("charizard", &[1, 2]);
        b.push("charmander", &many);
        b.push("pikachu", &[4]);
        let v = b.finish();
        assert_eq!(v.len(), 4);
        assert_eq!(ids(v.get("charizard")), [1, 2]);
        assert!(matches!(v.get("charizard"), Some(Postings::Ids(_))));
        assert!(matches!(v.get("charmander"), Some(Postings::Bitmap(_))));
        assert_eq!(ids(v.get("charmander")), many);
        assert_eq!(v.get("charmander").unwrap().len(), 100);
        assert!(v.get("charizar").is_none());
        assert!(v.get("zzz").is_none());
        let terms: Vec<&str> = v.prefixed("char").map(|i| v.term(i)).collect();
        assert_eq!(terms, ["char", "charizard", "charmander"]);
        assert_eq!(v.prefixed("x"), 4..4);
        assert_eq!(v.prefixed(""), 0..4);
        assert_eq!(
            v.get("pikachu")
                .unwrap()
                .to_bitmap()
                .iter()
                .collect::<Vec<_>>(),
            [4]
        );
        assert!(v.get("char").unwrap().same(&v.get("char").unwrap()));
        assert!(!v.get("char").unwrap().same(&v.get("pikachu").unwrap()));
    }

    #[test]
    fn numbers_and_ranges() {
        let mut b = NumVocabBuilder::with_capacity(4);
        b.push(0.0, &[2]);
        b.push(60.0, &[3]);
        b.push(120.0, &[1]);
        b.push(340.0, &[4]);
        let n = b.finish();
        assert_eq!(ids(n.get(0.0)), [2]);
        assert_eq!(ids(n.get(-0.0)), [2]);
        assert_eq!(n.range(Bound::Inclusive(60.0), Bound::Unbounded).len(), 3);
        assert_eq!(n.range(Bound::Exclusive(60.0), Bound::Unbounded).len(), 2);
        assert_eq!(n.range(Bound::Unbounded, Bound::Exclusive(120.0)).len(), 2);
        assert_eq!(
            n.range(Bound::Inclusive(121.0), Bound::Inclusive(339.0))
                .len(),
            0
        );
        assert_eq!(
            n.range(Bound::Inclusive(500.0), Bound::Inclusive(1.0))
                .len(),
            0
        );
        assert_eq!(n.range(Bound::Unbounded, Bound::Unbounded), 0..4);
    }
}
