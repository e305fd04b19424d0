//! The default order of contract section 2, and the unique-id rule.
//!
//! Expansions sort by `release_date` (missing last), then id; cards by their debut
//! expansion's place in that order, then `number` (missing last), then id — numbers and
//! ids in natural order, with the raw id breaking ties between ids that fold alike (`A1`,
//! `a1`), so the order is total. Natural keys are computed per file in parallel into one
//! byte arena per file, then all records are sorted in parallel.

use std::cmp::Ordering;
use std::ops::Range;
use std::path::Path;

use super::error::{LoadError, LoadErrorKind};
use super::{Gathered, Prepared};
use std::hash::{Hash, Hasher};

use crate::index::{FxHashMap, FxHasher};
use crate::par;
use crate::text::natural_key_into;

/// Refuses the collection if two records share an id, naming both places: the duplicate
/// that comes first in file order, and the record it repeats. Sorts `(hash of id, position)`
/// pairs in a buffer lent by the load (no table of every id, nothing large freed in the
/// middle of the load), then compares ids within runs of equal hashes.
fn check_unique(
    gathered: &Gathered,
    keyed: &[SortKey],
    pairs: &mut Vec<(u64, u32)>,
) -> Result<(), LoadError> {
    let id = |k: &SortKey| gathered.str(&k.record, k.record.id);
    pairs.clear();
    pairs.extend(keyed.iter().enumerate().map(|(i, k)| {
        let mut h = FxHasher::default();
        id(k).hash(&mut h);
        (h.finish(), i as u32)
    }));
    par::sort_by(pairs, |a, b| a.cmp(b));
    let place = |i: u32| (keyed[i as usize].file, keyed[i as usize].record.index);
    // The earliest second occurrence of any id, with the first occurrence it repeats.
    let mut worst: Option<((u32, u32), (u32, u32))> = None;
    let mut i = 0;
    while i < pairs.len() {
        let mut j = i + 1;
        while j < pairs.len() && pairs[j].0 == pairs[i].0 {
            j += 1;
        }
        for a in i..j {
            for b in a + 1..j {
                let (x, y) = (&keyed[pairs[a].1 as usize], &keyed[pairs[b].1 as usize]);
                if id(x) == id(y) {
                    let (p, q) = (place(pairs[a].1), place(pairs[b].1));
                    let (first, second) = if p < q { (p, q) } else { (q, p) };
                    if worst.is_none_or(|(f, w)| second < w || (second == w && first < f)) {
                        worst = Some((first, second));
                    }
                }
            }
        }
        i = j;
    }
    let Some((first, second)) = worst else {
        return Ok(());
    };
    let (first_path, _) = &gathered.files[first.0 as usize];
    let (path, records) = &gathered.files[second.0 as usize];
    let record = records
        .iter()
        .find(|r| r.index == second.1)
        .expect("a record of that file");
    let id = gathered.str(record, record.id);
    let kind = LoadErrorKind::DuplicateId {
        id: id.to_string(),
        first_path: first_path.to_path_buf(),
        first_index: first.1 as usize,
    };
    Err(LoadError::new(Some(path), kind).at_record(second.1 as usize, Some(id)))
}

/// A record with its sort key; key bytes are ranges of its file's arena.
struct SortKey {
    record: Prepared,
    file: u32,
    /// Cards: the debut expansion's place in the expansions' order. Expansions: 0 when
    /// there is a release date, 1 when not.
    rank: u32,
    /// Cards: the number's natural key (`None`, missing, sorts last). Expansions: the
    /// release date as text.
    second: Option<Range<u32>>,
    id_key: Range<u32>,
}

fn push_key(keys: &mut Vec<u8>, s: &str, natural: bool) -> Range<u32> {
    let start = keys.len() as u32;
    if natural {
        natural_key_into(s, keys);
    } else {
        keys.extend_from_slice(s.as_bytes());
    }
    start..keys.len() as u32
}

/// The keys of every record, computed file by file in parallel by `key`, which returns
/// `(rank, second)` for a record (or the error that refuses it).
fn keys(
    gathered: &Gathered,
    key: impl Fn(&Path, &Prepared, &mut Vec<u8>) -> Result<(u32, Option<Range<u32>>), LoadError>
        + Sync
        + Send,
) -> Result<(Vec<SortKey>, Vec<Vec<u8>>), LoadError> {
    let numbered: Vec<(usize, &(std::path::PathBuf, Vec<Prepared>))> =
        gathered.files.iter().enumerate().collect();
    let per_file = par::map(numbered, |(file, (path, records))| {
        let mut arena = Vec::with_capacity(records.len() * 24);
        let mut keyed = Vec::with_capacity(records.len());
        for record in records {
            let (rank, second) = key(path, record, &mut arena)?;
            keyed.push(SortKey {
                id_key: push_key(&mut arena, gathered.str(record, record.id), true),
                record: record.clone(),
                file: file as u32,
                rank,
                second,
            });
        }
        Ok((keyed, arena))
    });
    let mut all = Vec::with_capacity(gathered.files.iter().map(|(_, r)| r.len()).sum());
    let mut arenas = Vec::with_capacity(per_file.len());
    for result in per_file {
        let (keyed, arena) = result?;
        all.extend(keyed);
        arenas.push(arena);
    }
    Ok((all, arenas))
}

/// Sorts records by their keys (in parallel), refusing duplicate ids. What is sorted is a
/// list of `(head, position)` pairs, the head packing a record's rank, whether its second
/// key is missing and that key's first four bytes: most compares are one of two numbers,
/// and no record is moved until its place is known.
fn sort(
    gathered: &Gathered,
    keyed: Vec<SortKey>,
    arenas: &[Vec<u8>],
    scratch: &par::Pool<Vec<(u64, u32)>>,
) -> Result<Vec<Prepared>, LoadError> {
    let bytes =
        |k: &SortKey, r: &Range<u32>| &arenas[k.file as usize][r.start as usize..r.end as usize];
    let compare = |a: &SortKey, b: &SortKey| {
        let second = match (&a.second, &b.second) {
            (Some(x), Some(y)) => bytes(a, x).cmp(bytes(b, y)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        a.rank
            .cmp(&b.rank)
            .then(second)
            .then_with(|| bytes(a, &a.id_key).cmp(bytes(b, &b.id_key)))
            .then_with(|| {
                gathered
                    .str(&a.record, a.record.id)
                    .cmp(gathered.str(&b.record, b.record.id))
            })
    };
    let mut order: Vec<(u64, u32)> = keyed
        .iter()
        .enumerate()
        .map(|(i, k)| {
            (
                head(k.rank, k.second.as_ref().map(|r| bytes(k, r))),
                i as u32,
            )
        })
        .collect();
    par::sort_by(&mut order, |a, b| {
        a.0.cmp(&b.0)
            .then_with(|| compare(&keyed[a.1 as usize], &keyed[b.1 as usize]))
    });
    let mut pairs = scratch.take();
    let unique = check_unique(gathered, &keyed, &mut pairs);
    scratch.give(pairs);
    unique?;
    Ok(order
        .into_iter()
        .map(|(_, i)| keyed[i as usize].record.clone())
        .collect())
}

/// A number ordered as the first keys of [`sort`] are: the rank (above bit 33), then a
/// missing second key after a present one (bit 32), then the second key's first four
/// bytes, zero-padded. Two records whose heads differ are in the order of their heads (a
/// shorter key that pads equal to a longer one's start is its prefix, which comes first);
/// equal heads leave the order to the whole keys.
fn head(rank: u32, second: Option<&[u8]>) -> u64 {
    if rank >= 1 << 31 {
        // Past any rank below it; among such records the whole keys decide.
        return u64::MAX;
    }
    let (missing, start) = match second {
        None => (1, 0),
        Some(key) => {
            let mut four = [0u8; 4];
            let n = key.len().min(4);
            four[..n].copy_from_slice(&key[..n]);
            (0, u32::from_be_bytes(four))
        }
    };
    (u64::from(rank) << 33) | (missing << 32) | u64::from(start)
}

/// Expansions in default order: `release_date` (missing last), then id.
pub(super) fn order_expansions(
    gathered: &Gathered,
    scratch: &par::Pool<Vec<(u64, u32)>>,
) -> Result<Vec<Prepared>, LoadError> {
    let (keyed, arenas) = keys(gathered, |_, record, arena| {
        let date = gathered.get(record, record.release_date);
        Ok((
            u32::from(date.is_none()),
            date.map(|d| push_key(arena, d, false)),
        ))
    })?;
    sort(gathered, keyed, &arenas, scratch)
}

/// Cards in default order: their debut expansion's place in the expansions' order, then
/// `number` (missing last, natural order), then id (natural order).
pub(super) fn order_cards(
    catalog: &str,
    gathered: &Gathered,
    expansion_ranks: &FxHashMap<&str, u32>,
    scratch: &par::Pool<Vec<(u64, u32)>>,
) -> Result<Vec<Prepared>, LoadError> {
    let (keyed, arenas) = keys(gathered, |path, record, arena| {
        let expansion_id = gathered
            .get(record, record.expansion_id)
            .unwrap_or_default();
        let Some(&rank) = expansion_ranks.get(expansion_id) else {
            let kind = LoadErrorKind::UnknownExpansion {
                expansion_id: expansion_id.to_string(),
                catalog: catalog.to_string(),
            };
            let id = gathered.str(record, record.id);
            return Err(LoadError::new(Some(path), kind).at_record(record.index as usize, Some(id)));
        };
        let number = gathered.get(record, record.number);
        Ok((rank, number.map(|n| push_key(arena, n, true))))
    })?;
    sort(gathered, keyed, &arenas, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first keys' order: rank, then a present second key (bytes in order) before a
    /// missing one.
    fn first_keys(a: (u32, Option<&[u8]>), b: (u32, Option<&[u8]>)) -> Ordering {
        let second = match (a.1, b.1) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        a.0.cmp(&b.0).then(second)
    }

    proptest! {
        /// Two records whose heads differ are in the order of their first keys.
        #[test]
        fn heads_agree_with_the_first_keys(
            ranks in (prop_oneof![0u32..3, Just(u32::MAX), Just(1 << 31)], prop_oneof![0u32..3, Just(u32::MAX)]),
            keys in (proptest::option::of(proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(255)], 0..7)),
                     proptest::option::of(proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(255)], 0..7))),
        ) {
            let a = (ranks.0, keys.0.as_deref());
            let b = (ranks.1, keys.1.as_deref());
            let (ha, hb) = (head(a.0, a.1), head(b.0, b.1));
            if ha != hb {
                prop_assert_eq!(ha.cmp(&hb), first_keys(a, b));
            }
            if first_keys(a, b) == Ordering::Equal {
                prop_assert_eq!(ha, hb);
            }
        }
    }
}
