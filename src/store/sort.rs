//! `order_by`: sort keys per field, built on first use and kept.
//!
//! Each key compares a field's first value: JSON numbers numerically
//! and before strings, strings in natural order; a record without the field comes after
//! those with it in either direction. For a field, every record gets a rank once (equal
//! values share a rank), so sorting a result compares integers, and ties fall back to the
//! record id, which is the default order.

use std::cmp::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use roaring::RoaringBitmap;

use super::Collection;
use crate::fxhash::FxHashMap;
use crate::index::FieldId;
use crate::json::walk::Scalar;
use crate::par;
use crate::text::{natural_key, NaturalKey};

/// The rank of records without a value: after every other.
const MISSING: u32 = u32::MAX;

/// One key of an `order_by`: a field and a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OrderKey {
    pub field: FieldId,
    pub descending: bool,
}

/// Ranks of every record by one field's first value.
#[derive(Debug)]
struct RankColumn {
    ranks: Vec<u32>,
    /// The largest rank given to a present value.
    max: u32,
}

/// The rank columns built so far, by field.
#[derive(Debug, Default)]
pub(crate) struct SortColumns {
    built: Mutex<FxHashMap<FieldId, Arc<RankColumn>>>,
}

#[derive(Debug, PartialEq)]
enum SortValue {
    Number(f64),
    Text(NaturalKey),
}

fn compare(a: &SortValue, b: &SortValue) -> Ordering {
    match (a, b) {
        (SortValue::Number(x), SortValue::Number(y)) => x.total_cmp(y),
        (SortValue::Number(_), SortValue::Text(_)) => Ordering::Less,
        (SortValue::Text(_), SortValue::Number(_)) => Ordering::Greater,
        (SortValue::Text(x), SortValue::Text(y)) => x.cmp(y),
    }
}

/// Locks the cache. A panic elsewhere cannot leave a half-built column behind (columns
/// are inserted whole), so a poisoned lock is still good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SortColumns {
    fn column(&self, collection: &Collection, field: FieldId) -> Arc<RankColumn> {
        if let Some(column) = lock(&self.built).get(&field) {
            return Arc::clone(column);
        }
        let column = Arc::new(build_column(collection, field));
        lock(&self.built).entry(field).or_insert(column).clone()
    }
}

fn build_column(collection: &Collection, field: FieldId) -> RankColumn {
    let path: Vec<&str> = collection.index().field(field).path().split('.').collect();
    let ids: Vec<u32> = (0..collection.len() as u32).collect();
    let values: Vec<Option<SortValue>> = par::map_slice(&ids, |&id| {
        let mut first = None;
        collection.values(id, &path, &mut |v| {
            first = match v {
                Scalar::Num(n) => n.parse().ok().map(SortValue::Number),
                Scalar::Str(s) => Some(SortValue::Text(natural_key(&s))),
                Scalar::Bool(b) => Some(SortValue::Text(natural_key(if b {
                    "true"
                } else {
                    "false"
                }))),
            };
            first.is_none()
        });
        first
    });
    let mut present: Vec<u32> = ids
        .into_iter()
        .filter(|&i| values[i as usize].is_some())
        .collect();
    let value = |i: u32| values[i as usize].as_ref().expect("present");
    par::sort_by(&mut present, |&a, &b| compare(value(a), value(b)));
    let mut ranks = vec![MISSING; collection.len()];
    let mut rank = 0u32;
    for (k, &id) in present.iter().enumerate() {
        if k > 0 && compare(value(present[k - 1]), value(id)) != Ordering::Equal {
            rank += 1;
        }
        ranks[id as usize] = rank;
    }
    RankColumn { ranks, max: rank }
}

/// The records of `result` from position `offset`, at most `limit` of them, sorted by
/// `keys` then by default order.
pub(crate) fn sorted_page(
    collection: &Collection,
    result: &RoaringBitmap,
    keys: &[OrderKey],
    offset: usize,
    limit: usize,
) -> Vec<u32> {
    let columns: Vec<(Arc<RankColumn>, bool)> = keys
        .iter()
        .map(|k| {
            (
                collection.sort_columns().column(collection, k.field),
                k.descending,
            )
        })
        .collect();
    let key = |id: u32, (column, descending): &(Arc<RankColumn>, bool)| {
        let rank = column.ranks[id as usize];
        if *descending && rank != MISSING {
            column.max - rank
        } else {
            rank
        }
    };
    let cmp = |a: &u32, b: &u32| {
        columns
            .iter()
            .map(|c| key(*a, c).cmp(&key(*b, c)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.cmp(b))
    };
    let mut ids: Vec<u32> = result.iter().collect();
    let end = offset.saturating_add(limit);
    if end < ids.len() {
        ids.select_nth_unstable_by(end, cmp);
        ids.truncate(end);
    }
    ids.sort_unstable_by(cmp);
    ids.into_iter().skip(offset).collect()
}
