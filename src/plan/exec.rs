//! Running a plan over roaring bitmaps.
//!
//! `eval(node, within)` returns a set that agrees with the node's matches on `within`
//! (when given): callers intersect, so a leaf can hand back its borrowed posting list
//! untouched, and costly nodes (phrase checks, `NOT`) only work inside `within`.
//!
//! - *AND*: positive children sorted by estimated cost; the cheapest is evaluated, each
//!   next one within the result so far and intersected into it, stopping as soon as it is
//!   empty; then each `NOT` child is subtracted. No complement is built inside an AND.
//! - *OR*: the union of the children ([`roaring::MultiOps`]).
//! - *NOT* elsewhere: the universe (or `within`) minus the child.

use std::borrow::Cow;

use roaring::{MultiOps, RoaringBitmap};
use smallvec::SmallVec;

use super::{Check, Node, Partition, Plan};
use crate::index::Postings;
use crate::json::walk::Scalar;
use crate::text::{fold, words};

/// The cost of checking one record's text, relative to one posting-list entry: checks
/// run last and on as few records as possible.
const CHECK_COST: u64 = 64;

/// The most blocks a [`Matches::Blocks`] keeps unbuilt; more are united.
const MAX_BLOCKS: usize = 64;

/// The deepest page a [`Matches::Blocks`] is paged through by merging its blocks' first
/// ids; deeper pages unite the blocks first.
const MAX_MERGED: u64 = 10_000;

/// The records a plan matches, as cheap to count and to page as the plan allows.
#[derive(Debug)]
pub enum Matches<'c> {
    /// A set of records.
    Set(Cow<'c, RoaringBitmap>),
    /// The union of posting lists that share no record (values of one partition: an OR of
    /// values of a single-valued keyword field, a range of a single-valued number), not
    /// built: its size is the sum of theirs, and a page merges their first ids.
    Blocks(SmallVec<[Postings<'c>; 4]>),
}

impl<'c> Matches<'c> {
    /// How many records.
    pub fn len(&self) -> u64 {
        match self {
            Matches::Set(set) => set.len(),
            Matches::Blocks(blocks) => blocks.iter().map(Postings::len).sum(),
        }
    }

    /// Whether no record matches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records as one set.
    pub fn into_set(self) -> Cow<'c, RoaringBitmap> {
        match self {
            Matches::Set(set) => set,
            Matches::Blocks(blocks) => Cow::Owned(union(&blocks)),
        }
    }

    /// The records from position `offset` on (ascending ids, so default order), at most
    /// `limit` of them.
    pub fn page(self, offset: u64, limit: usize) -> Vec<u32> {
        match self {
            Matches::Blocks(blocks) if offset + limit as u64 <= MAX_MERGED => {
                merge_page(&blocks, offset as usize, limit)
            }
            other => page_of(&other.into_set(), offset, limit),
        }
    }
}

/// Ids `offset..offset + limit` of the union of disjoint ascending lists: a k-way merge of
/// their heads (the lists are few, see [`MAX_BLOCKS`]).
fn merge_page(blocks: &[Postings<'_>], offset: usize, limit: usize) -> Vec<u32> {
    /// A block's next id, and the rest of it.
    type Head<'a> = (u32, Box<dyn Iterator<Item = u32> + 'a>);
    let mut heads: SmallVec<[Head<'_>; 8]> = blocks
        .iter()
        .filter_map(|b| {
            let mut it = b.iter();
            it.next().map(|first| (first, it))
        })
        .collect();
    let mut out = Vec::with_capacity(limit);
    let mut position = 0;
    while out.len() < limit && !heads.is_empty() {
        let (i, _) = heads
            .iter()
            .enumerate()
            .min_by_key(|(_, (head, _))| *head)
            .expect("not empty");
        let id = heads[i].0;
        if position >= offset {
            out.push(id);
        }
        position += 1;
        match heads[i].1.next() {
            Some(next) => heads[i].0 = next,
            None => {
                drop(heads.swap_remove(i));
            }
        }
    }
    out
}

/// The records of `set` from position `offset` on, at most `limit`: the `offset`-th set bit
/// onwards, up to the last one wanted, collected in one pass over the containers.
fn page_of(set: &RoaringBitmap, offset: u64, limit: usize) -> Vec<u32> {
    let len = set.len();
    if offset >= len || limit == 0 {
        return Vec::new();
    }
    let last_position = (offset + limit as u64 - 1).min(len - 1);
    let (Some(first), Some(last)) = (
        u32::try_from(offset).ok().and_then(|n| set.select(n)),
        u32::try_from(last_position)
            .ok()
            .and_then(|n| set.select(n)),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity((last_position - offset + 1) as usize);
    set.range(first..=last).for_each(|id| out.push(id));
    out
}

impl<'c> Plan<'c> {
    /// The matching records, as one set.
    pub fn execute(&self) -> Cow<'c, RoaringBitmap> {
        self.eval(&self.root, None)
    }

    /// The matching records, without building their union when the plan is an OR of blocks
    /// of one partition (see [`Matches::Blocks`]).
    pub fn matches(&self) -> Matches<'c> {
        let mut blocks: SmallVec<[Postings<'c>; 4]> = SmallVec::new();
        let mut partition = None;
        let mut gather = |node: &Node<'c>| match node {
            Node::Sets {
                sets,
                partition: Some(p),
                ..
            } if partition.is_none_or(|q: Partition| q.same_partition(p)) => {
                partition = Some(*p);
                for set in sets {
                    if !blocks.iter().any(|b| b.same(set)) {
                        blocks.push(*set);
                    }
                }
                true
            }
            _ => false,
        };
        let all_blocks = match &self.root {
            Node::Sets { sets, .. } if sets.len() == 1 => false,
            Node::Or(items) => items.iter().all(&mut gather),
            node => gather(node),
        };
        if all_blocks && blocks.len() <= MAX_BLOCKS {
            Matches::Blocks(blocks)
        } else {
            Matches::Set(self.execute())
        }
    }

    /// The estimated number of matches of a node, and the cost of evaluating it, used to
    /// order the children of an AND.
    pub(crate) fn estimate(&self, node: &Node<'_>) -> (u64, u64) {
        let n = self.universe.len();
        match node {
            Node::All => (n, 0),
            Node::Empty => (0, 0),
            Node::Sets { sets, .. } => {
                let total: u64 = sets.iter().map(Postings::len).sum();
                (total.min(n), total)
            }
            Node::Verify { candidates, .. } => {
                let (est, cost) = self.estimate(candidates);
                (est, cost + est * CHECK_COST)
            }
            Node::And(items) => items.iter().fold((n, 0), |(est, cost), item| {
                let (e, c) = self.estimate(item);
                let e = if matches!(item, Node::Not(_)) { est } else { e };
                (est.min(e), cost + c)
            }),
            Node::Or(items) => items.iter().fold((0, 0), |(est, cost), item| {
                let (e, c) = self.estimate(item);
                ((est + e).min(n), cost + c)
            }),
            Node::Not(inner) => {
                let (e, c) = self.estimate(inner);
                (n.saturating_sub(e), c + n / 8)
            }
        }
    }

    /// The children of an AND in the order they run: positives by cost, then negations.
    pub(crate) fn and_order<'n>(
        &self,
        items: &'n [Node<'c>],
    ) -> (Vec<&'n Node<'c>>, Vec<&'n Node<'c>>) {
        let mut positive: Vec<(&Node<'c>, (u64, u64))> = Vec::new();
        let mut negative: Vec<&Node<'c>> = Vec::new();
        for item in items {
            match item {
                Node::Not(inner) => negative.push(inner),
                other => positive.push((other, self.estimate(other))),
            }
        }
        positive.sort_by_key(|&(_, (est, cost))| (cost.max(est), est));
        (positive.into_iter().map(|(n, _)| n).collect(), negative)
    }

    fn eval(&self, node: &Node<'c>, within: Option<&RoaringBitmap>) -> Cow<'c, RoaringBitmap> {
        match node {
            Node::All => Cow::Borrowed(self.universe),
            Node::Empty => Cow::Owned(RoaringBitmap::new()),
            Node::Sets { sets, .. } => match sets.as_slice() {
                [one] => one.to_bitmap(),
                many => Cow::Owned(union(many)),
            },
            Node::Verify {
                candidates,
                field,
                check,
                ..
            } => {
                let mut candidates = self.eval(candidates, within).into_owned();
                if let Some(within) = within {
                    candidates &= within;
                }
                let path = self.collection.index().field(*field).path();
                let segments: Vec<&str> = path.split('.').collect();
                let kept = candidates
                    .iter()
                    .filter(|&id| self.passes(id, &segments, check));
                Cow::Owned(RoaringBitmap::from_sorted_iter(kept).unwrap_or_default())
            }
            Node::And(items) => self.and(items, within),
            Node::Or(items) => {
                let parts: Vec<Cow<'c, RoaringBitmap>> =
                    items.iter().map(|i| self.eval(i, within)).collect();
                Cow::Owned(parts.iter().map(|c| c.as_ref()).union())
            }
            Node::Not(inner) => {
                let base = within.unwrap_or(self.universe);
                let excluded = self.eval(inner, Some(base));
                Cow::Owned(base - excluded.as_ref())
            }
        }
    }

    fn and(&self, items: &[Node<'c>], within: Option<&RoaringBitmap>) -> Cow<'c, RoaringBitmap> {
        let (positive, negative) = self.and_order(items);
        let mut acc: Cow<'c, RoaringBitmap> = match positive.first() {
            Some(first) => self.eval(first, within),
            None => match within {
                Some(w) => Cow::Owned(w.clone()),
                None => Cow::Borrowed(self.universe),
            },
        };
        for item in positive.iter().skip(1) {
            if acc.is_empty() {
                return acc;
            }
            if let Some(kept) = self.filter_by_value(&acc, item) {
                acc = Cow::Owned(kept);
                continue;
            }
            let next = self.eval(item, Some(&acc));
            acc = Cow::Owned(intersect(&acc, &next));
        }
        for item in negative {
            if acc.is_empty() {
                return acc;
            }
            let excluded = self.eval(item, Some(&acc));
            *acc.to_mut() -= excluded.as_ref();
        }
        acc
    }

    /// `acc ∩ item` when `item` is one value of a single-valued keyword field and `acc` is
    /// much smaller than it: each record of `acc` is checked against the field's value
    /// column (one array read) instead of being searched for in the value's posting list.
    fn filter_by_value(&self, acc: &RoaringBitmap, item: &Node<'c>) -> Option<RoaringBitmap> {
        let Node::Sets {
            sets,
            partition:
                Some(Partition {
                    field,
                    value: Some(value),
                    ..
                }),
            ..
        } = item
        else {
            return None;
        };
        let size: u64 = sets.iter().map(Postings::len).sum();
        if acc.len().saturating_mul(LOOKUP_RATIO) > size {
            return None;
        }
        let column = self.collection.index().value_column(*field)?;
        let value = u16::try_from(*value).ok()?;
        let kept = acc
            .iter()
            .filter(|&id| column.get(id as usize) == Some(&value));
        Some(RoaringBitmap::from_sorted_iter(kept).unwrap_or_default())
    }

    /// Whether record `id` passes `check` on the field at `path`.
    fn passes(&self, id: u32, path: &[&str], check: &Check) -> bool {
        let mut found = false;
        self.collection.values(id, path, &mut |value| {
            let text: Cow<'_, str> = match value {
                Scalar::Str(s) => s,
                Scalar::Bool(b) => Cow::Borrowed(if b { "true" } else { "false" }),
                Scalar::Num(_) => return true,
            };
            found = match check {
                Check::Whole(whole) => fold(&text) == whole.as_str(),
                Check::WholeLike(pattern) => pattern.matches(&fold(&text)),
                Check::Phrase(tests) => {
                    let folded = fold(&text);
                    let ws: SmallVec<[&str; 32]> = words(&folded).collect();
                    ws.windows(tests.len())
                        .any(|window| window.iter().zip(tests).all(|(w, t)| t.matches(w)))
                }
            };
            !found
        });
        found
    }
}

/// The union of posting lists: bitmaps with roaring's multi-way union, short id lists
/// gathered, sorted and added as one more bitmap.
fn union(lists: &[Postings<'_>]) -> RoaringBitmap {
    let mut ids: Vec<u32> = Vec::new();
    let mut bitmaps: Vec<&RoaringBitmap> = Vec::new();
    for list in lists {
        match list {
            Postings::Ids(some) => ids.extend_from_slice(some),
            Postings::Bitmap(b) => bitmaps.push(b),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    let small = RoaringBitmap::from_sorted_iter(ids).unwrap_or_default();
    if bitmaps.is_empty() {
        small
    } else {
        let mut all = bitmaps.into_iter().union();
        all |= small;
        all
    }
}

/// How much larger one side of an intersection must be for the other side's ids to be
/// looked up one by one instead of merging containers.
const LOOKUP_RATIO: u64 = 32;

/// `a ∩ b`. When one side is much smaller, its ids are looked up in the other (a binary
/// search per id); otherwise roaring intersects container by container. Roaring merges two
/// array containers linearly, which is slow when one holds a few ids and the other
/// thousands (a reprint set against a rarity).
pub(crate) fn intersect(a: &RoaringBitmap, b: &RoaringBitmap) -> RoaringBitmap {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.len().saturating_mul(LOOKUP_RATIO) <= large.len() {
        RoaringBitmap::from_sorted_iter(small.iter().filter(|&x| large.contains(x)))
            .unwrap_or_default()
    } else {
        small & large
    }
}
