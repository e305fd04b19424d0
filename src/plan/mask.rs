//! Sets of record ids as words of bits: bit `i % 64` of word `i / 64` is id `first + i`.
//! The executor's run masks and the dense unions both page and list their ids here.

/// The ids set in `words` (bit `i % 64` of word `i / 64` is id `first + i`; `len` bits set
/// in all) from position `offset` on, at most `limit` of them: whole words are skipped by
/// their counts.
#[allow(
    clippy::slow_vector_initialization,
    reason = "calloc is the slow one here, see below"
)]
pub(crate) fn page_of_words(
    words: &[u64],
    first: u32,
    len: u64,
    offset: u64,
    limit: usize,
) -> Vec<u32> {
    let wanted = len.saturating_sub(offset).min(limit as u64) as usize;
    // Not `vec![0; wanted]`: that is a `calloc`, which glibc serves without its
    // thread cache and clears itself, slower for a page of 100 ids than `malloc` and a
    // `memset`.
    let mut out = Vec::with_capacity(wanted);
    out.resize(wanted, 0);
    let mut filled = 0;
    let mut skip = offset;
    for (&word, base) in words.iter().zip((first..).step_by(64)) {
        if filled == wanted {
            break;
        }
        let count = u64::from(word.count_ones());
        if skip >= count {
            skip -= count;
            continue;
        }
        let mut bits = word;
        for _ in 0..skip {
            bits &= bits - 1;
        }
        let take = ((count - skip) as usize).min(wanted - filled);
        skip = 0;
        // Exactly `take` bits are left in `bits`, so the slice bounds the loop.
        for slot in &mut out[filled..filled + take] {
            *slot = base + bits.trailing_zeros();
            bits &= bits - 1;
        }
        filled += take;
    }
    debug_assert_eq!(filled, wanted, "every slot of the page is written");
    out
}

/// The ids set in `words` (as for [`page_of_words`]), ascending.
pub(crate) fn ids_of_words(words: &[u64], first: u32) -> impl Iterator<Item = u32> + '_ {
    words
        .iter()
        .zip((first..).step_by(64))
        .flat_map(|(&word, base)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let id = base + bits.trailing_zeros();
                    bits &= bits - 1;
                    id
                })
            })
        })
}
