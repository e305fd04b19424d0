//! `order_by`: sort keys per field, built on first use and kept.
//!
//! A key compares a field's values — JSON numbers numerically and before strings, strings
//! in natural order. A record that holds several values of a field inside an array of
//! objects (`variants.prices.market`) sorts by its smallest ascending and by its largest
//! descending; of any other field (`types`), by its first. A record without the field comes
//! after those with it in either direction. For a field, every record gets its ranks once
//! (equal values share a rank), so sorting a result compares integers, and ties fall back
//! to the record id, which is the default order.
//!
//! A key on a field inside an array of objects can count only some elements (those a
//! nested query of the request matched, [`Counted`]): its rank is then the smallest or
//! largest over those elements, read from the elements' own rank column.
//!
//! A key on a field of the card's expansion, for cards that do not carry it
//! (`expansion.release_date`, see [`OrderKey::joined`]), gives each card the rank of its
//! expansion in the expansions' own rank column.

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

/// At most how many counted elements per record of a result make [`counted_ranks`] walk
/// the elements rather than look up each record's elements.
const ELEMENT_WALK_RATIO: u64 = 8;

/// One key of an `order_by`: a field and a direction, and the elements it counts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OrderKey {
    pub field: FieldId,
    pub descending: bool,
    pub counted: Option<Counted>,
    /// Whether `field` is a field of the expansions, which the records (cards) are joined
    /// to by their `expansion_id`, rather than of the records.
    pub joined: bool,
}

/// The elements a key counts: of the array-of-objects path number `space` of the
/// collection (see [`super::Collection::nested`]), those in `elements`, by their field
/// `field` (relative to the element).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Counted {
    pub space: usize,
    pub field: FieldId,
    pub elements: RoaringBitmap,
}

/// Ranks of every record by one field: of its smallest value and, when some record holds
/// several, of its largest.
#[derive(Debug)]
struct RankColumn {
    low: Vec<u32>,
    /// `None` when no record holds two values (then `low` is both).
    high: Option<Vec<u32>>,
    /// The largest rank given to a present value.
    max: u32,
}

impl RankColumn {
    /// How a key in direction `descending` reads this column: the ranks of the smallest
    /// values ascending, of the largest descending.
    fn reader(&self, descending: bool) -> RankReader<'_> {
        let ranks = match (&self.high, descending) {
            (Some(high), true) => high,
            _ => &self.low,
        };
        RankReader {
            ranks,
            max: self.max,
            descending,
        }
    }
}

/// One direction of a [`RankColumn`], looked up once per sort rather than at each
/// comparison.
#[derive(Debug, Clone, Copy)]
struct RankReader<'a> {
    ranks: &'a [u32],
    max: u32,
    descending: bool,
}

impl RankReader<'_> {
    /// The rank of record `id` as a key: of its smallest value ascending, of its largest
    /// descending (turned so that larger values come first); [`MISSING`] without a value.
    #[inline]
    fn key(&self, id: u32) -> u32 {
        let rank = self.ranks[id as usize];
        if self.descending && rank != MISSING {
            self.max - rank
        } else {
            rank
        }
    }
}

/// The rank columns built so far, by field: of the records' own fields, and of their
/// expansions' fields (by the expansions' field id).
#[derive(Debug, Default)]
pub(crate) struct SortColumns {
    built: Mutex<FxHashMap<FieldId, Arc<RankColumn>>>,
    joined: Mutex<FxHashMap<FieldId, Arc<RankColumn>>>,
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

    /// The column of the cards of `collection` by the field `field` of their expansion in
    /// `expansions`: each card has its expansion's ranks (a card whose expansion is not
    /// there has none).
    fn joined_column(
        &self,
        collection: &Collection,
        expansions: &Collection,
        field: FieldId,
    ) -> Arc<RankColumn> {
        if let Some(column) = lock(&self.joined).get(&field) {
            return Arc::clone(column);
        }
        let own = expansions.sort_columns().column(expansions, field);
        let ids: Vec<u32> = (0..collection.len() as u32).collect();
        let expansion_of: Vec<Option<u32>> = par::map_slice(&ids, |&id| {
            let mut found = None;
            collection.values(id, &["expansion_id"], &mut |v| {
                if let Scalar::Str(s) = v {
                    found = expansions.find(&s);
                }
                false
            });
            found
        });
        let ranks = |of: &[u32]| -> Vec<u32> {
            expansion_of
                .iter()
                .map(|e| e.map_or(MISSING, |e| of[e as usize]))
                .collect()
        };
        let column = Arc::new(RankColumn {
            low: ranks(&own.low),
            high: own.high.as_deref().map(ranks),
            max: own.max,
        });
        lock(&self.joined).entry(field).or_insert(column).clone()
    }

    /// The column a key reads: of the records' field, or of their expansions'.
    fn of_key(
        &self,
        collection: &Collection,
        joined: Option<&Collection>,
        key: &OrderKey,
    ) -> Arc<RankColumn> {
        match joined.filter(|_| key.joined) {
            Some(expansions) => self.joined_column(collection, expansions, key.field),
            None => self.column(collection, key.field),
        }
    }
}

fn build_column(collection: &Collection, field: FieldId) -> RankColumn {
    let dotted = collection.index().field(field).path();
    // A field inside an array of objects sorts by its smallest or largest value; any other
    // by its first (the order of values in a plain array is the data's).
    let spread = collection.in_object_array(dotted);
    let path: Vec<&str> = dotted.split('.').collect();
    let ids: Vec<u32> = (0..collection.len() as u32).collect();
    // Each record's smallest and largest value (its first alone without `spread`).
    let values: Vec<Option<(SortValue, Option<SortValue>)>> = par::map_slice(&ids, |&id| {
        let mut low: Option<SortValue> = None;
        let mut high: Option<SortValue> = None;
        collection.values(id, &path, &mut |v| {
            let value = match v {
                Scalar::Num(n) => n.parse().ok().map(SortValue::Number),
                Scalar::Str(s) => Some(SortValue::Text(natural_key(&s))),
                Scalar::Bool(b) => Some(SortValue::Text(natural_key(if b {
                    "true"
                } else {
                    "false"
                }))),
            };
            let Some(value) = value else { return true };
            match &low {
                None => low = Some(value),
                Some(l) if compare(&value, l).is_lt() => {
                    high = high.take().or(low.take());
                    low = Some(value);
                }
                Some(_) if high.as_ref().is_none_or(|h| compare(&value, h).is_gt()) => {
                    high = Some(value);
                }
                Some(_) => {}
            }
            spread
        });
        low.map(|l| (l, high))
    });
    // Every present value, smallest and largest, as (record, largest?), ranked together.
    let mut present: Vec<(u32, bool)> = Vec::with_capacity(ids.len());
    let mut several = false;
    for (i, v) in values.iter().enumerate() {
        if let Some((_, high)) = v {
            present.push((i as u32, false));
            if high.is_some() {
                present.push((i as u32, true));
                several = true;
            }
        }
    }
    let value = |(i, largest): (u32, bool)| {
        let (low, high) = values[i as usize].as_ref().expect("present");
        if largest {
            high.as_ref().expect("a largest value")
        } else {
            low
        }
    };
    par::sort_by(&mut present, |&a, &b| compare(value(a), value(b)));
    let mut low = vec![MISSING; collection.len()];
    let mut high = if several { low.clone() } else { Vec::new() };
    let mut rank = 0u32;
    for (k, &entry) in present.iter().enumerate() {
        if k > 0 && compare(value(present[k - 1]), value(entry)) != Ordering::Equal {
            rank += 1;
        }
        let (id, largest) = (entry.0 as usize, entry.1);
        if largest {
            high[id] = rank;
        } else {
            low[id] = rank;
            if several && values[id].as_ref().is_some_and(|(_, h)| h.is_none()) {
                high[id] = rank;
            }
        }
    }
    RankColumn {
        low,
        high: several.then_some(high),
        max: rank,
    }
}

/// The records of `result` from position `offset`, at most `limit` of them, sorted by
/// `keys` then by default order. `joined` is the expansions of joined keys (see
/// [`OrderKey::joined`]).
pub(crate) fn sorted_page(
    collection: &Collection,
    joined: Option<&Collection>,
    result: &RoaringBitmap,
    keys: &[OrderKey],
    offset: usize,
    limit: usize,
) -> Vec<u32> {
    let end = offset.saturating_add(limit);
    if keys.iter().all(|k| k.counted.is_none()) {
        // Every key a rank column read by record id; ties break by record id.
        let columns: Vec<Arc<RankColumn>> = keys
            .iter()
            .map(|k| collection.sort_columns().of_key(collection, joined, k))
            .collect();
        let readers: Vec<RankReader<'_>> = columns
            .iter()
            .zip(keys)
            .map(|(column, k)| column.reader(k.descending))
            .collect();
        let cmp = |a: &u32, b: &u32| {
            readers
                .iter()
                .map(|r| r.key(*a).cmp(&r.key(*b)))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| a.cmp(b))
        };
        let mut ids: Vec<u32> = result.iter().collect();
        return page_of(&mut ids, cmp, offset, end);
    }
    // Some key bound to some elements: each key's rank for each record of the result, in
    // the result's order, and positions sorted (they ascend with the record ids, so ties
    // break by position).
    let ids: Vec<u32> = result.iter().collect();
    let ranks: Vec<Vec<u32>> = keys
        .iter()
        .map(|k| match &k.counted {
            None => {
                let column = collection.sort_columns().of_key(collection, joined, k);
                let reader = column.reader(k.descending);
                ids.iter().map(|&id| reader.key(id)).collect()
            }
            Some(counted) => counted_ranks(collection, counted, k.descending, &ids),
        })
        .collect();
    let cmp = |a: &u32, b: &u32| {
        ranks
            .iter()
            .map(|r| r[*a as usize].cmp(&r[*b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.cmp(b))
    };
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    page_of(&mut order, cmp, offset, end)
        .into_iter()
        .map(|i| ids[i as usize])
        .collect()
}

/// The items of `items` from `offset` to `end` in the order `cmp` gives, found without
/// sorting the rest.
fn page_of(
    items: &mut Vec<u32>,
    cmp: impl Fn(&u32, &u32) -> Ordering + Copy,
    offset: usize,
    end: usize,
) -> Vec<u32> {
    // `cmp` is passed by value (it is a few references), so each sort inlines it.
    if end < items.len() {
        items.select_nth_unstable_by(end, cmp);
        items.truncate(end);
    }
    items.sort_unstable_by(cmp);
    items.drain(..).skip(offset).collect()
}

/// The key of each record of `ids` (ascending) over the elements `counted` counts: the
/// smallest of their ranks, or the largest when `descending`; [`MISSING`] for a record
/// without one.
fn counted_ranks(
    collection: &Collection,
    counted: &Counted,
    descending: bool,
    ids: &[u32],
) -> Vec<u32> {
    let nested = &collection.nested()[counted.space];
    let elements = &nested.elements;
    let column = elements.sort_columns().column(elements, counted.field);
    let reader = column.reader(descending);
    if counted.elements.len() <= ids.len() as u64 * ELEMENT_WALK_RATIO {
        // Few counted elements: walk them (they ascend with their records), each to its
        // record's slot in `ids`.
        let mut ranks = vec![MISSING; ids.len()];
        let mut at = 0;
        for e in &counted.elements {
            let record = nested.record_of[e as usize];
            // Galloping from the last record: the next is usually near.
            let mut step = 1;
            while at + step < ids.len() && ids[at + step - 1] < record {
                step *= 2;
            }
            let window = &ids[at..(at + step).min(ids.len())];
            at += window.partition_point(|&id| id < record);
            match ids.get(at) {
                Some(&id) if id == record => ranks[at] = ranks[at].min(reader.key(e)),
                Some(_) => {}
                None => break,
            }
        }
        return ranks;
    }
    let mut from = 0;
    ids.iter()
        .map(|&id| {
            let range = nested.range_of(id, from);
            from = range.end;
            range
                .filter(|&e| counted.elements.contains(e as u32))
                .map(|e| reader.key(e as u32))
                .min()
                .unwrap_or(MISSING)
        })
        .collect()
}
