//! FxHash, a small, fast, non-cryptographic hasher (rotate, xor, multiply, eight bytes at
//! a time), and the `HashMap` built on it, for maps keyed by snapshot data: ids, values,
//! fingerprints. Keys come from the snapshot, not from requests, so hash flooding is not
//! a concern; request paths never reach these maps.
//!
//! Its output must not change: the change marks saved beside a webhook outbox are digests
//! made with it (`live::changes`), and a server compares a snapshot with the marks an
//! earlier version saved.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of FxHash.
pub(crate) const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// FxHash: rotate, xor, multiply, eight bytes at a time.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.add(tail_word(bytes, rest.len()));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// The last `n` bytes of `bytes` (1 to 7 of them) as a little-endian word, zero above: the
/// word a copy into a zeroed `[u8; 8]` reads, read with whole loads instead (a word read
/// back from a byte-wise copy waits for the copy's stores).
#[inline]
fn tail_word(bytes: &[u8], n: usize) -> u64 {
    let len = bytes.len();
    if len >= 8 {
        // The word that ends where `bytes` ends, shifted down past the bytes hashed before.
        let word = u64::from_le_bytes(bytes[len - 8..].try_into().expect("eight bytes"));
        return word >> (8 * (8 - n));
    }
    let rest = &bytes[len - n..];
    let load = |b: &[u8]| -> u64 {
        match b.len() {
            4 => u64::from(u32::from_le_bytes(b.try_into().expect("four bytes"))),
            2 => u64::from(u16::from_le_bytes(b.try_into().expect("two bytes"))),
            _ => u64::from(b[0]),
        }
    };
    // Two loads that overlap to cover `rest`: a byte both hold sits at the same place in
    // each, so or-ing them is exact.
    let half = match n {
        4..=7 => 4,
        2..=3 => 2,
        _ => 1,
    };
    load(&rest[..half]) | (load(&rest[n - half..]) << (8 * (n - half)))
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A `HashSet` with [`FxHasher`].
pub(crate) type FxHashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash as first defined: the tail copied into a zeroed word.
    fn reference(bytes: &[u8]) -> u64 {
        let mut h = FxHasher::default();
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            h.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            h.add(u64::from_le_bytes(last));
        }
        h.finish()
    }

    #[test]
    fn the_tail_read_keeps_every_hash_as_it_was() {
        // Every length up to five words, from every start within a buffer of varied bytes,
        // high bits set (which a wrong shift would spread).
        let buffer: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8 ^ 0x80).collect();
        for start in 0..8 {
            for len in 0..=40 {
                let bytes = &buffer[start..start + len];
                let mut h = FxHasher::default();
                h.write(bytes);
                assert_eq!(h.finish(), reference(bytes), "{len} bytes from {start}");
            }
        }
        // One value worked out by hand from the definition (a word, then "s" zero-padded):
        // change marks saved by earlier versions hold hashes made this way.
        let mut h = FxHasher::default();
        h.write(b"printings");
        assert_eq!(h.finish(), 0xed44_c6f4_63aa_6b0a);
    }
}
