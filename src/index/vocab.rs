//! Sorted vocabularies: folded terms (or numbers) of one field, each with the records that
//! hold it. Sorted arrays rather than hash maps: lookups are a binary search, prefixes and
//! ranges are contiguous slices, and there is no per-entry hashing overhead in memory.

use std::ops::Range;

use roaring::RoaringBitmap;

use crate::query::Bound;

/// The terms of one field, sorted by their UTF-8 bytes, with their posting lists.
#[derive(Debug, Default)]
pub struct Vocab {
    /// All terms, concatenated.
    text: String,
    /// `ends[i]` is the end of term `i` in `text`.
    ends: Vec<u32>,
    postings: Vec<RoaringBitmap>,
}

impl Vocab {
    /// Builds a vocabulary from `(term, postings)` pairs in any order.
    pub(crate) fn from_unsorted(mut pairs: Vec<(Box<str>, RoaringBitmap)>) -> Vocab {
        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut text = String::with_capacity(pairs.iter().map(|(t, _)| t.len()).sum());
        let mut ends = Vec::with_capacity(pairs.len());
        let mut postings = Vec::with_capacity(pairs.len());
        for (term, mut bitmap) in pairs {
            text.push_str(&term);
            ends.push(text.len() as u32);
            bitmap.optimize();
            postings.push(bitmap);
        }
        Vocab {
            text,
            ends,
            postings,
        }
    }

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
    pub fn postings(&self, i: usize) -> &RoaringBitmap {
        &self.postings[i]
    }

    /// The position of the first term not less than `probe`.
    fn lower_bound(&self, probe: &str) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.term(mid) < probe {
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
    pub fn get(&self, term: &str) -> Option<&RoaringBitmap> {
        self.find(term).map(|i| &self.postings[i])
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
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RoaringBitmap)> + '_ {
        (0..self.len()).map(move |i| (self.term(i), &self.postings[i]))
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * 4
            + self.postings.capacity() * std::mem::size_of::<RoaringBitmap>()
            + self
                .postings
                .iter()
                .map(RoaringBitmap::serialized_size)
                .sum::<usize>()
    }
}

/// The distinct numbers of one field, ascending, with their posting lists.
#[derive(Debug, Default)]
pub struct NumVocab {
    values: Vec<f64>,
    postings: Vec<RoaringBitmap>,
}

/// A number as a hashable, totally ordered key (`-0` and `0` are the same number).
pub(crate) fn number_key(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else {
        x.to_bits()
    }
}

impl NumVocab {
    /// Builds the vocabulary from `(number_key, postings)` pairs in any order.
    pub(crate) fn from_unsorted(pairs: Vec<(u64, RoaringBitmap)>) -> NumVocab {
        let mut pairs: Vec<(f64, RoaringBitmap)> = pairs
            .into_iter()
            .map(|(bits, b)| (f64::from_bits(bits), b))
            .collect();
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let (values, postings) = pairs
            .into_iter()
            .map(|(v, mut b)| {
                b.optimize();
                (v, b)
            })
            .unzip();
        NumVocab { values, postings }
    }

    /// How many distinct numbers.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the field holds no numbers.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The records holding exactly `x`.
    pub fn get(&self, x: f64) -> Option<&RoaringBitmap> {
        let i = self.values.partition_point(|&v| v < x);
        (i < self.len() && self.values[i] == x).then(|| &self.postings[i])
    }

    /// The posting lists of every number between the bounds.
    pub fn range(&self, lower: Bound, upper: Bound) -> &[RoaringBitmap] {
        let start = self
            .values
            .partition_point(|&v| !lower.admits_from_below(v));
        let end = self.values.partition_point(|&v| upper.admits_from_above(v));
        if start >= end {
            &[]
        } else {
            &self.postings[start..end]
        }
    }

    /// Iterates over `(number, postings)` ascending.
    pub fn iter(&self) -> impl Iterator<Item = (f64, &RoaringBitmap)> + '_ {
        self.values.iter().copied().zip(&self.postings)
    }

    /// Bytes held on the heap, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity() * 8
            + self.postings.capacity() * std::mem::size_of::<RoaringBitmap>()
            + self
                .postings
                .iter()
                .map(RoaringBitmap::serialized_size)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bm(ids: &[u32]) -> RoaringBitmap {
        ids.iter().copied().collect()
    }

    #[test]
    fn vocab_lookups() {
        let v = Vocab::from_unsorted(vec![
            ("charmander".into(), bm(&[3])),
            ("charizard".into(), bm(&[1, 2])),
            ("pikachu".into(), bm(&[4])),
            ("char".into(), bm(&[5])),
        ]);
        assert_eq!(v.len(), 4);
        assert_eq!(v.get("charizard"), Some(&bm(&[1, 2])));
        assert_eq!(v.get("charizar"), None);
        assert_eq!(v.get("zzz"), None);
        let r = v.prefixed("char");
        let terms: Vec<&str> = r.map(|i| v.term(i)).collect();
        assert_eq!(terms, ["char", "charizard", "charmander"]);
        assert_eq!(v.prefixed("x"), 4..4);
        assert_eq!(v.prefixed(""), 0..4);
    }

    #[test]
    fn numbers_and_ranges() {
        let n = NumVocab::from_unsorted(vec![
            (number_key(120.0), bm(&[1])),
            (number_key(-0.0), bm(&[2])),
            (number_key(60.0), bm(&[3])),
            (number_key(340.0), bm(&[4])),
        ]);
        assert_eq!(n.get(0.0), Some(&bm(&[2])));
        assert_eq!(n.get(-0.0), Some(&bm(&[2])));
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
        assert_eq!(n.range(Bound::Unbounded, Bound::Unbounded).len(), 4);
    }
}
