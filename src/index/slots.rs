//! The index builder's tables of distinct values: [`StrSlots`] for strings and
//! [`NumSlots`] for numbers, each mapping a chunk's distinct keys to slots, open-addressed
//! and hashed with FxHash's step finished by murmur3's finalizer. Keys come from the
//! snapshot, not from requests, so hash flooding is not a concern here.

pub(crate) use crate::json::scan::same_bytes;

use crate::fxhash::SEED;

/// murmur3's 64-bit finalizer: every input bit changes each output bit about half the time.
/// FxHash's product keeps the low bits of its input in its low bits, and tables pick places
/// by low bits: keys whose low bits are all zero, as the bits of a whole-number `f64` are
/// (42 zero bits for numbers below 1,024), would all start probing at the same place.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The hash of a string for [`StrSlots`]: FxHash's step over the length, then the whole
/// words of the text, the last one read overlapping the one before (short strings in one
/// or two smaller overlapping loads), finished with [`fmix64`]. Unlike [`FxHasher`](crate::fxhash::FxHasher) it
/// copies no partial word, and every bit of the result depends on every byte, so both the
/// bits picking a place and the bits tagging it tell strings apart (FxHash's low 32 bits
/// depend on the first four bytes alone for strings of at most eight).
#[inline]
fn str_hash(b: &[u8]) -> u64 {
    let n = b.len();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    let half = |at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().expect("4")));
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(SEED);
    let mut h = step(0, n as u64);
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            h = step(h, word(i));
            i += 8;
        }
        h = step(h, word(n - 8));
    } else if n >= 4 {
        h = step(h, half(0) | half(n - 4) << 32);
    } else if n > 0 {
        h = step(
            h,
            u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
        );
    }
    fmix64(h)
}

/// The distinct numbers of one field of one chunk (as their `f64` bits, see
/// `vocab::number_key`), each with its slot: an open-addressed table of `(bits, slot)`
/// places, probed linearly from a place picked by [`fmix64`] of the bits. One place is
/// one 16-byte load, where a general map reads a control group and then its bucket. The
/// length is a power of two and at most half the places are taken; an empty place holds
/// [`NumSlots::EMPTY`] as its slot (slots are below it: one per distinct key or posting).
#[derive(Debug, Default)]
pub(crate) struct NumSlots {
    places: Vec<(u64, u32)>,
    len: usize,
}

impl NumSlots {
    const EMPTY: u32 = u32::MAX;

    /// The slot of `key`; when it is new, it is added with `slot`, which is returned.
    pub(crate) fn get_or_insert(&mut self, key: u64, slot: u32) -> u32 {
        debug_assert!(slot != Self::EMPTY);
        if self.places.is_empty() {
            self.grow();
        }
        let mut at = self.place(key);
        let found = self.places[at].1;
        if found != Self::EMPTY {
            return found;
        }
        // Grown only for a new number, so that a lookup never resizes.
        if (self.len + 1) * 2 > self.places.len() {
            self.grow();
            at = self.place(key);
        }
        self.places[at] = (key, slot);
        self.len += 1;
        slot
    }

    /// The place holding `key`, or the empty place where it would go.
    fn place(&self, key: u64) -> usize {
        let mask = self.places.len() - 1;
        let mut at = fmix64(key) as usize & mask;
        while self.places[at].1 != Self::EMPTY && self.places[at].0 != key {
            at = (at + 1) & mask;
        }
        at
    }

    fn grow(&mut self) {
        let len = (self.places.len() * 2).max(16);
        let old = std::mem::replace(&mut self.places, vec![(0, Self::EMPTY); len]);
        for (key, slot) in old.into_iter().filter(|p| p.1 != Self::EMPTY) {
            // Keys are distinct: `place` finds each an empty place.
            let at = self.place(key);
            self.places[at] = (key, slot);
        }
    }

    /// How many numbers.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The numbers and their slots, in no particular order.
    pub(crate) fn into_pairs(self) -> impl Iterator<Item = (u64, u32)> {
        self.places.into_iter().filter(|p| p.1 != Self::EMPTY)
    }
}

/// The distinct strings of one field of one chunk, each with a number (its slot): the
/// text of all of them in one buffer, found through an open-addressed table of indices.
/// Unlike a map keyed by `Box<str>`, a new string costs no allocation of its own, so a
/// chunk of a million ids makes a few large buffers rather than a million small blocks
/// that, freed after the merge, would stay resident as holes in the allocator's heaps.
#[derive(Debug, Default)]
pub(crate) struct StrSlots {
    text: String,
    /// Per string, in first-seen order: where it ends in `text` (it starts where the
    /// previous one ends) and its slot.
    entries: Vec<(u32, u32)>,
    /// Per place: an index into `entries` plus one (0 for an empty place) in the low 32
    /// bits, and the low 32 bits of its string's hash above them, so that a probe past
    /// another string rarely reads that string. The length is a power of two and at most
    /// half the places are taken. Probing is linear.
    table: Vec<u64>,
}

impl StrSlots {
    fn hash(key: &str) -> u64 {
        str_hash(key.as_bytes())
    }

    /// Where string number `i` (in first-seen order) starts and ends in `text`.
    fn bounds(&self, i: usize) -> (u32, u32) {
        let start = if i == 0 { 0 } else { self.entries[i - 1].0 };
        (start, self.entries[i].0)
    }

    /// String number `i`, in first-seen order.
    pub(crate) fn key(&self, i: usize) -> &str {
        let (start, end) = self.bounds(i);
        &self.text[start as usize..end as usize]
    }

    /// The bytes of string number `i` (no character-boundary checks: for comparing).
    fn key_bytes(&self, i: usize) -> &[u8] {
        let (start, end) = self.bounds(i);
        &self.text.as_bytes()[start as usize..end as usize]
    }

    /// How many strings.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// A place's content for entry `i` of a string with hash `hash`.
    fn packed(i: usize, hash: u64) -> u64 {
        (hash << 32) | (i as u64 + 1)
    }

    /// Where `key` (whose hash is `hash`) is in the table, or the empty place where it
    /// would go. Always inlined into its two callers: its body is short, so a call's entry
    /// and exit would be a large share of its cost.
    #[inline(always)]
    fn place(&self, key: &str, hash: u64) -> (usize, Option<u32>) {
        let mask = self.table.len() - 1;
        let mut at = (hash >> 32) as usize & mask;
        let tag = hash << 32;
        loop {
            let content = self.table[at];
            if content == 0 {
                return (at, None);
            }
            if content & !0xFFFF_FFFF == tag {
                let e = (content & 0xFFFF_FFFF) as usize - 1;
                if same_bytes(self.key_bytes(e), key.as_bytes()) {
                    return (at, Some(self.entries[e].1));
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The slot of `key`, if it was added.
    pub(crate) fn get(&self, key: &str) -> Option<u32> {
        if self.table.is_empty() {
            return None;
        }
        self.place(key, Self::hash(key)).1
    }

    /// The slot of `key`; when it is new, it is added with `slot`, which is returned. One
    /// hash and one probe either way (a second probe only when the table grows). The
    /// first place probed comes from bits 32 and up of the hash, better mixed than the
    /// low ones, which tag the place.
    pub(crate) fn get_or_insert(&mut self, key: &str, slot: u32) -> u32 {
        if self.table.is_empty() {
            self.grow();
        }
        let hash = Self::hash(key);
        let (mut at, found) = self.place(key, hash);
        if let Some(existing) = found {
            return existing;
        }
        if (self.entries.len() + 1) * 2 > self.table.len() {
            self.grow();
            at = self.place(key, hash).0;
        }
        self.text.push_str(key);
        // Offsets are u32 like the final vocabulary's (`Vocab` ends): one field's distinct
        // text in one chunk (a sixteenth of the records) stays far below 4 GiB.
        let end = u32::try_from(self.text.len()).expect("a chunk field's text below 4 GiB");
        self.entries.push((end, slot));
        self.table[at] = Self::packed(self.entries.len() - 1, hash);
        slot
    }

    fn grow(&mut self) {
        let len = (self.table.len() * 2).max(16);
        self.table = vec![0; len];
        let mask = len - 1;
        for i in 0..self.entries.len() {
            let hash = Self::hash(self.key(i));
            let mut at = (hash >> 32) as usize & mask;
            while self.table[at] != 0 {
                at = (at + 1) & mask;
            }
            self.table[at] = Self::packed(i, hash);
        }
    }

    /// The strings in sorted order, each with its slot mapped through `run`; the table
    /// is dropped.
    pub(crate) fn into_sorted<R>(self, mut run: impl FnMut(u32) -> R) -> SortedStrs<R> {
        // Sorted by each string's first eight bytes as a number first: most compares then
        // never read the strings (byte order is `str` order).
        let head = |i: usize| {
            let key = self.key_bytes(i);
            let mut word = [0u8; 8];
            let n = key.len().min(8);
            word[..n].copy_from_slice(&key[..n]);
            u64::from_be_bytes(word)
        };
        let mut order: Vec<(u64, u32)> = (0..self.entries.len())
            .map(|i| (head(i), i as u32))
            .collect();
        order.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                self.key_bytes(a.1 as usize)
                    .cmp(self.key_bytes(b.1 as usize))
            })
        });
        let keys = order
            .into_iter()
            .map(|(_, i)| {
                let (start, end) = self.bounds(i as usize);
                (start, end, run(self.entries[i as usize].1))
            })
            .collect();
        SortedStrs {
            text: self.text,
            keys,
        }
    }
}

/// Strings in sorted order, each with a value: the text in one buffer, as
/// [`StrSlots::into_sorted`] makes them.
#[derive(Debug)]
pub(crate) struct SortedStrs<R> {
    text: String,
    /// `(start, end, value)` per string.
    keys: Vec<(u32, u32, R)>,
}

impl<R> Default for SortedStrs<R> {
    fn default() -> Self {
        SortedStrs {
            text: String::new(),
            keys: Vec::new(),
        }
    }
}

impl SortedStrs<u32> {
    /// The strings with `run(value)` as their values.
    pub(crate) fn with_runs<R>(self, run: impl Fn(u32) -> R) -> SortedStrs<R> {
        SortedStrs {
            text: self.text,
            keys: self
                .keys
                .into_iter()
                .map(|(start, end, slot)| (start, end, run(slot)))
                .collect(),
        }
    }

    /// The strings whose `run(value)` is not empty, with it as their values (copied).
    pub(crate) fn with_nonempty_runs(
        &self,
        run: impl Fn(u32) -> std::ops::Range<u32>,
    ) -> SortedStrs<std::ops::Range<u32>> {
        let mut text = String::new();
        let mut keys = Vec::new();
        for &(start, end, slot) in &self.keys {
            let r = run(slot);
            if !r.is_empty() {
                let at = text.len() as u32;
                text.push_str(&self.text[start as usize..end as usize]);
                keys.push((at, text.len() as u32, r));
            }
        }
        SortedStrs { text, keys }
    }
}

impl<R> SortedStrs<R> {
    /// How many strings.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// String `i` in sorted order, and its value.
    pub(crate) fn get(&self, i: usize) -> (&str, &R) {
        let (start, end, ref value) = self.keys[i];
        (&self.text[start as usize..end as usize], value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fxhash::{FxHashMap, FxHasher};
    use proptest::prelude::*;
    use std::hash::Hasher;

    /// Whole numbers' bits have their low 42 bits zero: FxHash leaves them zero, so a
    /// table indexed by low bits would put every such key in one place; `fmix64` (which
    /// picks [`NumSlots`] places) spreads them.
    #[test]
    fn mixed_hash_spreads_whole_numbers() {
        let low_bits = |hash: fn(u64) -> u64| {
            let mut seen: Vec<u64> = (1..=1024u32)
                .map(|n| hash(f64::from(n).to_bits()) & 1023)
                .collect();
            seen.sort_unstable();
            seen.dedup();
            seen.len()
        };
        let fx = |key: u64| {
            let mut h = FxHasher::default();
            h.write_u64(key);
            h.finish()
        };
        assert_eq!(low_bits(fx), 1);
        assert!(low_bits(fmix64) > 600, "{}", low_bits(fmix64));
    }

    proptest! {
        /// The number table agrees with a `HashMap`: every number gets the slot it was
        /// first added with, and lists each once (whole numbers, whose low bits are zero,
        /// and zero of both signs included).
        #[test]
        fn num_slots_is_a_map(keys in proptest::collection::vec(prop_oneof![
            (0u32..300).prop_map(|n| f64::from(n).to_bits()),
            Just((-0.0f64).to_bits()),
            any::<u64>(),
        ], 0..300)) {
            let mut slots = NumSlots::default();
            let mut model: FxHashMap<u64, u32> = FxHashMap::default();
            for (n, &key) in keys.iter().enumerate() {
                let expected = *model.entry(key).or_insert(n as u32);
                prop_assert_eq!(slots.get_or_insert(key, n as u32), expected);
            }
            prop_assert_eq!(slots.len(), model.len());
            let mut pairs: Vec<(u64, u32)> = slots.into_pairs().collect();
            pairs.sort_unstable();
            let mut expected: Vec<(u64, u32)> = model.into_iter().collect();
            expected.sort_unstable();
            prop_assert_eq!(pairs, expected);
        }

        /// The interning table agrees with a `HashMap`: every string gets the slot it was
        /// first added with, unknown strings are not found, and the sorted list is the
        /// strings sorted.
        #[test]
        fn str_slots_is_a_map(keys in proptest::collection::vec("[a-c]{0,3}|[é✓x]{1,2}|abcdefg[hé]{0,2}[a-b]{0,3}", 0..200)) {
            let mut slots = StrSlots::default();
            let mut model: FxHashMap<String, u32> = FxHashMap::default();
            for (n, key) in keys.iter().enumerate() {
                prop_assert_eq!(slots.get(key), model.get(key).copied());
                let expected = *model.entry(key.clone()).or_insert(n as u32);
                prop_assert_eq!(slots.get_or_insert(key, n as u32), expected);
            }
            prop_assert_eq!(slots.len(), model.len());
            prop_assert_eq!(slots.get("not a key"), None);
            let sorted = slots.into_sorted(|slot| slot * 10);
            let mut expected: Vec<(String, u32)> = model.into_iter().map(|(k, s)| (k, s * 10)).collect();
            expected.sort();
            let got: Vec<(String, u32)> = (0..sorted.len())
                .map(|i| {
                    let (k, v) = sorted.get(i);
                    (k.to_string(), *v)
                })
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
