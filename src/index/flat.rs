//! Flat bitsets kept beside some of an index's roaring bitmaps, to count an AND of two of
//! them a word at a time.
//!
//! roaring keeps a container of up to 4,096 ids as a sorted array, and counts an array
//! against a bitset container one id at a time (a bit test each, about 0.4 ns). A posting
//! list with between 1/32 and 1/16 of the records of its span (a common word, `name:ex`)
//! is such arrays, and counting it within a language scope (a bitset) is most of that
//! search. As flat bitsets, the same count is an AND and a popcount per 64 records, in
//! less than half the time, for at most twice the posting list's memory. A posting list
//! gets its twin when most of its ids are in array containers and the twin is at most
//! twice its serialized size; a catalog's language scopes get theirs whatever their size.

use roaring::RoaringBitmap;

use crate::fxhash::FxHashMap;

/// The ids of a set as bits, from the word holding its first id to the word holding its
/// last.
#[derive(Debug, Clone, Default)]
pub struct FlatBits {
    /// The number of the first word (ids `64 * first_word ..`).
    first_word: u32,
    words: Box<[u64]>,
}

impl FlatBits {
    /// The bits of `set`.
    pub fn of(set: &RoaringBitmap) -> FlatBits {
        let (Some(min), Some(max)) = (set.min(), set.max()) else {
            return FlatBits::default();
        };
        let first_word = min / 64;
        let mut words = vec![0u64; (max / 64 - first_word) as usize + 1];
        for id in set {
            words[(id / 64 - first_word) as usize] |= 1 << (id % 64);
        }
        FlatBits {
            first_word,
            words: words.into_boxed_slice(),
        }
    }

    /// How many ids both sets hold.
    pub fn and_len(&self, other: &FlatBits) -> u64 {
        let start = self.first_word.max(other.first_word);
        let end = self.end_word().min(other.end_word());
        if start >= end {
            return 0;
        }
        self.words_of(start, end)
            .iter()
            .zip(other.words_of(start, end))
            .map(|(a, b)| u64::from((a & b).count_ones()))
            .sum()
    }

    /// Words `start..end`, all within this set's.
    fn words_of(&self, start: u32, end: u32) -> &[u64] {
        let from = (start - self.first_word) as usize;
        &self.words[from..from + (end - start) as usize]
    }

    /// One past the number of the last word.
    fn end_word(&self) -> u32 {
        self.first_word + self.words.len() as u32
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Whether `set` gets a twin in an index: most of its ids in array containers, and
    /// the twin at most twice its serialized size.
    fn worth_a_twin(set: &RoaringBitmap) -> bool {
        let (Some(min), Some(max)) = (set.min(), set.max()) else {
            return false;
        };
        let stats = set.statistics();
        let twin_bytes = (u64::from(max / 64 - min / 64) + 1) * 8;
        u64::from(stats.n_values_array_containers) * 2 >= stats.cardinality
            && twin_bytes <= 2 * set.serialized_size() as u64
    }
}

/// The flat twins of an index's posting lists, found by the address of the bitmap they
/// copy. An index's bitmaps stay where they are from the index's building to its drop
/// (nothing adds to, removes from or reorders the vectors holding them), so an address
/// names one bitmap for as long as the twins exist, which is as long as the bitmaps do;
/// a bitmap made later (a union, a copy) is never at the address of one with a twin.
#[derive(Debug, Default)]
pub struct Twins {
    by_address: FxHashMap<usize, FlatBits>,
}

impl Twins {
    /// The twins of those of `sets` worth one (see the module docs).
    pub(crate) fn of<'a>(sets: impl IntoIterator<Item = &'a RoaringBitmap>) -> Twins {
        let by_address = sets
            .into_iter()
            .filter(|set| FlatBits::worth_a_twin(set))
            .map(|set| (address(set), FlatBits::of(set)))
            .collect();
        Twins { by_address }
    }

    /// Adds a twin of each of `sets` that is not empty, worth one or not (a catalog's
    /// language scopes). The sets must stay where they are, unchanged, for as long as
    /// these twins exist.
    pub(crate) fn add_all<'a>(&mut self, sets: impl IntoIterator<Item = &'a RoaringBitmap>) {
        for set in sets {
            if !set.is_empty() {
                self.by_address.insert(address(set), FlatBits::of(set));
            }
        }
    }

    /// The twin of `set`, if it is one of the sets this was made of and has one.
    pub fn get(&self, set: &RoaringBitmap) -> Option<&FlatBits> {
        self.by_address.get(&address(set))
    }

    /// How many sets have a twin.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_address.len()
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.by_address.capacity() * (8 + std::mem::size_of::<FlatBits>())
            + self
                .by_address
                .values()
                .map(FlatBits::heap_bytes)
                .sum::<usize>()
    }
}

fn address(set: &RoaringBitmap) -> usize {
    std::ptr::from_ref(set) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(ids: &[u32]) -> RoaringBitmap {
        ids.iter().copied().collect()
    }

    #[test]
    fn and_len_counts_the_common_ids_over_offsets_and_edges() {
        let a = set(&[0, 63, 64, 200, 4095, 70_000, u32::MAX]);
        let b = set(&[63, 64, 65, 4095, 70_000, 70_001, u32::MAX]);
        assert_eq!(FlatBits::of(&a).and_len(&FlatBits::of(&b)), 5);
        assert_eq!(FlatBits::of(&b).and_len(&FlatBits::of(&a)), 5);
        // Disjoint spans, and an empty set.
        let low = set(&[1, 2, 3]);
        let high = set(&[1_000, 1_001]);
        assert_eq!(FlatBits::of(&low).and_len(&FlatBits::of(&high)), 0);
        assert_eq!(FlatBits::of(&low).and_len(&FlatBits::default()), 0);
    }

    #[test]
    fn a_mid_density_array_list_gets_a_twin_and_a_sparse_or_dense_one_does_not() {
        // One id in 20 of 1M: array containers of about 3,300 ids.
        let common: RoaringBitmap = (0..1_000_000).step_by(20).collect();
        // One id in 1,000: arrays, but a twin would be 16 times its size.
        let rare: RoaringBitmap = (0..1_000_000).step_by(1_000).collect();
        // One id in 2: bitset containers, which roaring already counts a word at a time.
        let dense: RoaringBitmap = (0..1_000_000).step_by(2).collect();
        let twins = Twins::of([&common, &rare, &dense]);
        assert_eq!(twins.len(), 1);
        assert!(twins.get(&common).is_some());
        assert!(twins.get(&rare).is_none() && twins.get(&dense).is_none());
        // Found by address: an equal copy is another bitmap.
        assert!(twins.get(&common.clone()).is_none());
        assert!(twins.heap_bytes() >= 1_000_000 / 8);
    }

    proptest! {
        #[test]
        fn and_len_agrees_with_roaring(
            a in proptest::collection::vec(0u32..300_000, 0..3_000),
            b in proptest::collection::vec(0u32..300_000, 0..3_000),
            shift in 0u32..200_000,
        ) {
            let a: RoaringBitmap = a.into_iter().collect();
            let b: RoaringBitmap = b.into_iter().map(|id| id + shift).collect();
            prop_assert_eq!(
                FlatBits::of(&a).and_len(&FlatBits::of(&b)),
                a.intersection_len(&b)
            );
        }
    }
}
