//! The default order of records, and the unique-id rule.
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

use crate::fxhash::{FxHashMap, FxHasher};
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
    let id = |k: &SortKey| {
        let record = k.record(gathered);
        gathered.str(record, record.id)
    };
    pairs.clear();
    par::extend_indexed(pairs, keyed, |i, k| {
        let mut h = FxHasher::default();
        id(k).hash(&mut h);
        (h.finish(), i as u32)
    });
    par::sort_by(pairs, |a, b| a.cmp(b));
    let place = |i: u32| {
        let k = &keyed[i as usize];
        (k.file, k.record(gathered).index)
    };
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

/// A record with its sort key; key bytes are ranges of its file's arena. The record itself
/// stays where it is ([`Self::record`]): sorting moves these few words, not it.
struct SortKey {
    /// The record's file, and its place among that file's records.
    file: u32,
    at: u32,
    /// Cards: the debut expansion's place in the expansions' order. Expansions: 0 when
    /// there is a release date, 1 when not.
    rank: u32,
    /// Cards: the number's natural key (`None`, missing, sorts last). Expansions: the
    /// release date as text.
    second: Option<Range<u32>>,
    /// The first eight bytes of `second` (zero after its end, and for `None`), big-endian:
    /// where two heads differ, they order as the whole keys do, so most comparisons
    /// read no arena.
    head: u64,
    id_key: Range<u32>,
}

/// The first eight bytes of `key`, zero-padded, as a big-endian number.
fn head(key: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let n = key.len().min(8);
    word[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(word)
}

impl SortKey {
    /// The record this key sorts.
    fn record<'g>(&self, gathered: &'g Gathered) -> &'g Prepared {
        &gathered.files[self.file as usize].1[self.at as usize]
    }
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
        for (at, record) in records.iter().enumerate() {
            let (rank, second) = key(path, record, &mut arena)?;
            let head = second
                .as_ref()
                .map_or(0, |r| head(&arena[r.start as usize..r.end as usize]));
            keyed.push(SortKey {
                head,
                id_key: push_key(&mut arena, gathered.str(record, record.id), true),
                file: file as u32,
                at: at as u32,
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

/// Sorts records by their keys (in parallel), refusing duplicate ids.
fn sort(
    gathered: &Gathered,
    mut keyed: Vec<SortKey>,
    arenas: &[Vec<u8>],
    scratch: &par::Pool<Vec<(u64, u32)>>,
) -> Result<Vec<Prepared>, LoadError> {
    let bytes =
        |k: &SortKey, r: &Range<u32>| &arenas[k.file as usize][r.start as usize..r.end as usize];
    par::sort_by(&mut keyed, |a, b| {
        let present = match (&a.second, &b.second) {
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            _ => Ordering::Equal,
        };
        a.rank
            .cmp(&b.rank)
            .then(present)
            .then(a.head.cmp(&b.head))
            .then_with(|| match (&a.second, &b.second) {
                (Some(x), Some(y)) => bytes(a, x).cmp(bytes(b, y)),
                _ => Ordering::Equal,
            })
            .then_with(|| bytes(a, &a.id_key).cmp(bytes(b, &b.id_key)))
            .then_with(|| {
                let (a, b) = (a.record(gathered), b.record(gathered));
                gathered.str(a, a.id).cmp(gathered.str(b, b.id))
            })
    });
    let mut pairs = scratch.take();
    let unique = check_unique(gathered, &keyed, &mut pairs);
    scratch.give(pairs);
    unique?;
    Ok(par::map_slice(&keyed, |k| k.record(gathered).clone()))
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
    use super::head;
    use proptest::prelude::*;

    proptest! {
        /// Where two heads differ they order as their whole keys do (bytes near zero and
        /// keys shorter and longer than eight bytes included).
        #[test]
        fn heads_order_as_keys_do(
            a in proptest::collection::vec(0u8..4, 0..12),
            b in proptest::collection::vec(0u8..4, 0..12),
        ) {
            let by_head = head(&a).cmp(&head(&b));
            if by_head.is_ne() {
                prop_assert_eq!(by_head, a.cmp(&b));
            }
            if a == b {
                prop_assert!(by_head.is_eq());
            }
        }
    }
}
