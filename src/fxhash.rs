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
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
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

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A `HashSet` with [`FxHasher`].
pub(crate) type FxHashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;
