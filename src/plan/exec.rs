//! Running a plan over roaring bitmaps.
//!
//! `eval(node, within)` returns a set that agrees with the node's matches on `within`
//! (when given): callers intersect, so a leaf can hand back its borrowed posting list
//! untouched, and costly nodes (phrase checks, `NOT`) only work inside `within`.
//!
//! - *AND* of single terms (or their negations) one of which is a short run of consecutive
//!   ids (an expansion's cards) or a short inline list: that run's ids are tested against
//!   the other terms, 64 to a word of a [`RunMask`], without bitmaps ([`Plan::scan_and`]).
//! - *AND* otherwise: positive children sorted by estimated cost; the cheapest is
//!   evaluated, each next one within the result so far and intersected into it, stopping
//!   as soon as it is empty; then each `NOT` child is subtracted. No complement is built
//!   inside an AND.
//! - *OR*: the union of the children ([`roaring::MultiOps`]).
//! - *NOT* elsewhere: the universe (or `within`) minus the child.

use std::borrow::Cow;

use roaring::{MultiOps, RoaringBitmap};
use smallvec::SmallVec;

use super::dense::{self, DenseIds};
use super::mask::{ids_of_words, page_of_words};
use super::{Check, Node, Partition, Plan};
use crate::index::{bitmap_of_bits, FlatBits, Postings};
use crate::json::walk::Scalar;
use crate::store::NO_PARENT;
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
    /// Every id from the first to the last: a term whose records are consecutive, such as
    /// the cards of one expansion (default order groups them).
    Run(u32, u32),
    /// The records of a short run of ids that pass an AND's tests (see [`Plan::matches`]),
    /// one bit each.
    Mask(RunMask),
    /// The records of a short id list that pass an AND's tests, ascending.
    Ids(Vec<u32>),
    /// The union of posting lists that may share records, counted in a mask of one bit
    /// per id over their span (see [`DenseIds`]).
    Dense(DenseIds),
    /// The union of posting lists that share no record (values of one partition: an OR of
    /// values of a single-valued keyword field, a range of a single-valued number), not
    /// built: its size is the sum of theirs, and a page merges their first ids.
    Blocks(SmallVec<[Postings<'c>; 4]>),
    /// The records in both of two posting bitmaps (an AND of two terms, a term in a
    /// language scope), not built: counted container by container (the third field), and
    /// a page found by looking the smaller one's ids up in the larger, when few lookups
    /// find it (see [`MAX_PROBED`]).
    Pair(&'c RoaringBitmap, &'c RoaringBitmap, u64),
}

impl<'c> Matches<'c> {
    /// How many records.
    pub fn len(&self) -> u64 {
        match self {
            Matches::Set(set) => set.len(),
            Matches::Run(first, last) => u64::from(last - first) + 1,
            Matches::Mask(mask) => mask.len(),
            Matches::Dense(dense) => dense.len(),
            Matches::Ids(ids) => ids.len() as u64,
            Matches::Blocks(blocks) => blocks.iter().map(Postings::len).sum(),
            Matches::Pair(_, _, len) => *len,
        }
    }

    /// The records as one set.
    pub fn into_set(self) -> Cow<'c, RoaringBitmap> {
        match self {
            Matches::Set(set) => set,
            Matches::Run(first, last) => {
                let mut set = RoaringBitmap::new();
                set.insert_range(first..=last);
                Cow::Owned(set)
            }
            Matches::Mask(mask) => {
                Cow::Owned(RoaringBitmap::from_sorted_iter(mask.ids()).unwrap_or_default())
            }
            Matches::Dense(dense) => {
                Cow::Owned(RoaringBitmap::from_sorted_iter(dense.ids()).unwrap_or_default())
            }
            Matches::Ids(ids) => {
                Cow::Owned(RoaringBitmap::from_sorted_iter(ids).unwrap_or_default())
            }
            Matches::Blocks(blocks) => Cow::Owned(union(&blocks)),
            Matches::Pair(a, b, _) => Cow::Owned(intersect(a, b)),
        }
    }

    /// The records from position `offset` on (ascending ids, so default order), at most
    /// `limit` of them.
    pub fn page(self, offset: u64, limit: usize) -> Vec<u32> {
        match self {
            Matches::Blocks(blocks) if offset + limit as u64 <= MAX_MERGED => {
                merge_page(&blocks, offset as usize, limit)
            }
            Matches::Run(first, last) => {
                let start = u64::from(first) + offset;
                let end = (start + limit as u64).min(u64::from(last) + 1);
                (start..end).map(|id| id as u32).collect()
            }
            Matches::Mask(mask) => mask.page(offset, limit),
            Matches::Dense(dense) => dense.page(offset, limit),
            Matches::Ids(ids) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(ids.len());
                ids[start..].iter().take(limit).copied().collect()
            }
            Matches::Pair(a, b, len) => {
                let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
                let wanted = (offset.saturating_add(limit as u64)).min(len);
                // The lookups expected before the last id wanted, at the pair's density
                // in the smaller bitmap.
                let probes = wanted.saturating_mul(small.len()) / len.max(1);
                if offset >= len || limit == 0 {
                    Vec::new()
                } else if probes <= MAX_PROBED {
                    let skip = usize::try_from(offset).unwrap_or(usize::MAX);
                    small
                        .iter()
                        .filter(|&id| large.contains(id))
                        .skip(skip)
                        .take(limit)
                        .collect()
                } else {
                    page_of(&intersect(a, b), offset, limit)
                }
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

    /// The matching records, as cheap to count and page as the plan allows: a single term
    /// whose records are a run ([`Matches::Run`]), a scanned AND ([`Matches::Mask`],
    /// [`Matches::Ids`]), an OR of blocks of one partition without their union
    /// ([`Matches::Blocks`]), a union counted in a mask ([`Matches::Dense`]), else the set.
    pub fn matches(&self) -> Matches<'c> {
        if let Some(unbuilt) = self.unbuilt() {
            unbuilt
        } else if let Some((a, b)) = self.pair() {
            Matches::Pair(a, b, self.pair_len(a, b))
        } else if let Node::And(items) = &self.root {
            // `unbuilt` has already found that this AND is not scanned.
            Matches::Set(self.and_of_sets(items, None))
        } else {
            Matches::Set(self.execute())
        }
    }

    /// The size of the intersection of a [`Matches::Pair`]'s bitmaps: counted on their
    /// flat twins when both have one (a common word within a language scope), else by
    /// roaring.
    pub(super) fn pair_len(&self, a: &RoaringBitmap, b: &RoaringBitmap) -> u64 {
        match self.pair_twins(a, b) {
            Some((a, b)) => a.and_len(b),
            None => a.intersection_len(b),
        }
    }

    /// The flat twins of a [`Matches::Pair`]'s bitmaps, when both have one.
    pub(super) fn pair_twins(
        &self,
        a: &RoaringBitmap,
        b: &RoaringBitmap,
    ) -> Option<(&'c FlatBits, &'c FlatBits)> {
        let index = self.collection.index();
        Some((index.twin(a)?, index.twin(b)?))
    }

    /// The two bitmaps of a [`Matches::Pair`], when the plan is an AND of two terms held
    /// as bitmaps of comparable sizes.
    pub(super) fn pair(&self) -> Option<(&'c RoaringBitmap, &'c RoaringBitmap)> {
        match &self.root {
            Node::And(items) => bitmap_pair(items),
            _ => None,
        }
    }

    /// The matches when they are found without building the tree's sets (every kind of
    /// [`Plan::matches`] but the set), else `None` at no more cost than that finding.
    pub(super) fn unbuilt(&self) -> Option<Matches<'c>> {
        if let Some(scanned) = self.scan(&self.root) {
            return Some(scanned);
        }
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
            Some(Matches::Blocks(blocks))
        } else {
            self.dense_union(&self.root).map(Matches::Dense)
        }
    }

    /// A union of two or more posting lists (a wildcard's words, an OR of terms) counted in
    /// a mask over their span, when the mask is dense enough (see [`DenseIds`]).
    pub(super) fn dense_union(&self, node: &Node<'c>) -> Option<DenseIds> {
        let mut lists: SmallVec<[Postings<'c>; 8]> = SmallVec::new();
        let mut gather = |node: &Node<'c>| match node {
            Node::Sets { sets, .. } => {
                lists.extend(sets.iter().copied());
                true
            }
            _ => false,
        };
        let all_sets = match node {
            Node::Or(items) => items.iter().all(&mut gather),
            node => gather(node),
        };
        if !all_sets || lists.len() < 2 {
            return None;
        }
        DenseIds::union(&lists)
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
            Node::Nested { plan, .. } => {
                let (e, c) = plan.estimate(&plan.root);
                (e.min(n), c + e)
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
            Node::Nested {
                plan, lift, found, ..
            } => {
                let elements = match found {
                    Some(found) => Cow::Borrowed(found.get_or_init(|| plan.execute().into_owned())),
                    None => plan.execute(),
                };
                let mut set = elements;
                for map in lift {
                    set = Cow::Owned(lift_through(&set, map));
                }
                Cow::Owned(set.into_owned())
            }
        }
    }

    fn and(&self, items: &[Node<'c>], within: Option<&RoaringBitmap>) -> Cow<'c, RoaringBitmap> {
        match self.scan_and(items) {
            Some(scanned) => scanned.into_set(),
            None => self.and_of_sets(items, within),
        }
    }

    /// An AND through bitmaps: the cheapest positive child first, the others intersected
    /// within it, then the negations subtracted.
    fn and_of_sets(
        &self,
        items: &[Node<'c>],
        within: Option<&RoaringBitmap>,
    ) -> Cow<'c, RoaringBitmap> {
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

    /// The matches of `node` without bitmaps, when it is a term whose records are a run of
    /// consecutive ids, or an AND that [`Plan::scan_and`] answers.
    pub(super) fn scan(&self, node: &Node<'c>) -> Option<Matches<'c>> {
        match node {
            Node::Sets { sets, .. } => match sets.as_slice() {
                [one] => one.span().map(|(first, last)| Matches::Run(first, last)),
                _ => None,
            },
            Node::And(items) => self.scan_and(items),
            _ => None,
        }
    }

    /// An AND of terms (or their negations), one of them short — a run of consecutive ids
    /// (the cards of one expansion), an inline id list or a bitmap (a reprint set's
    /// scattered cards) — of at most [`MAX_SCANNED`] records, every other one a test an id
    /// answers in constant time: a run, one value of a single-valued keyword field (its
    /// value column), or a short list (a binary search). The short one's ids are walked
    /// and tested one by one (a bitmap's read from its serialized form,
    /// [`dense::ids_of`]): no bitmap is built or copied. `None` when the AND is not of
    /// that shape.
    fn scan_and(&self, items: &[Node<'c>]) -> Option<Matches<'c>> {
        // Each item as one posting list, its partition and whether it is kept (not negated).
        let leaf = |item: &'_ Node<'c>| -> Option<(Postings<'c>, Option<Partition>, bool)> {
            let (inner, keep) = match item {
                Node::Not(inner) => (inner.as_ref(), false),
                other => (other, true),
            };
            match inner {
                Node::Sets {
                    sets, partition, ..
                } if sets.len() == 1 => Some((sets[0], *partition, keep)),
                _ => None,
            }
        };
        let mut walked: Option<(usize, Domain<'c>)> = None;
        for (i, item) in items.iter().enumerate() {
            let (postings, _, keep) = leaf(item)?;
            if !keep || postings.len() > MAX_SCANNED {
                continue;
            }
            let domain = match (postings, postings.span()) {
                (_, Some((first, last))) => Domain::Run(first, last),
                (Postings::Ids(ids), None) => Domain::List(ids),
                (Postings::Bitmap(set), None) => Domain::Set(set),
            };
            if walked.is_none_or(|(_, old)| domain.len() < old.len()) {
                walked = Some((i, domain));
            }
        }
        let (walked, domain) = walked?;
        let mut tests: SmallVec<[IdTest<'c>; 4]> = SmallVec::new();
        for (i, item) in items.iter().enumerate() {
            if i == walked {
                continue;
            }
            let (postings, partition, keep) = leaf(item)?;
            let column = match partition {
                Some(Partition {
                    field,
                    value: Some(value),
                    ..
                }) => self
                    .collection
                    .index()
                    .value_column(field)
                    .zip(u16::try_from(value).ok()),
                _ => None,
            };
            tests.push(match (postings, column) {
                (Postings::Ids(ids), _) => IdTest::Among { ids, keep },
                (_, Some((column, value))) => IdTest::Value {
                    column,
                    value,
                    keep,
                },
                (_, None) => {
                    let (first, last) = postings.span()?;
                    IdTest::Run { first, last, keep }
                }
            });
        }
        Some(match domain {
            Domain::Run(first, last) => {
                let mut mask = RunMask::full(first, last);
                for test in &tests {
                    test.apply(&mut mask);
                }
                Matches::Mask(mask)
            }
            Domain::List(list) => Matches::Ids(passing(list.to_vec(), &tests)),
            Domain::Set(set) => Matches::Ids(passing(dense::ids_of(set), &tests)),
        })
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

/// The ids `map` gives the members of `set`: an element's record, or its enclosing
/// element. Maps ascend with the elements (both are numbered in record order, then
/// document order), so the result comes out sorted; repeats are dropped as they come, and
/// elements without one ([`NO_PARENT`]) are left out.
pub(crate) fn lift_through(set: &RoaringBitmap, map: &[u32]) -> RoaringBitmap {
    let mut last = NO_PARENT;
    let lifted = set.iter().filter_map(|e| {
        let up = map.get(e as usize).copied().unwrap_or(NO_PARENT);
        (up != NO_PARENT && up != last).then(|| {
            last = up;
            up
        })
    });
    RoaringBitmap::from_sorted_iter(lifted).unwrap_or_default()
}

/// The union of posting lists. Many short lists (a range over a field of many distinct
/// numbers, a prefix of many words) are gathered in a bit per record, read back as one
/// bitmap: roaring's multi-way union merges their thousands of small containers at
/// several times the cost per id. Otherwise bitmaps go through roaring's union, and short
/// id lists are gathered, sorted and added as one more bitmap.
fn union(lists: &[Postings<'_>]) -> RoaringBitmap {
    let size: u64 = lists.iter().map(Postings::len).sum();
    if lists.len() >= MIN_GATHERED_LISTS && size <= lists.len() as u64 * MAX_GATHERED_LIST_LEN {
        let end = lists
            .iter()
            .filter_map(|list| match list {
                Postings::Ids(ids) => ids.last().copied(),
                Postings::Bitmap(b) => b.max(),
            })
            .max()
            .map_or(0, |last| last as usize + 1);
        let mut bits = vec![0u64; end.div_ceil(64)];
        let mut set = |id: u32| bits[id as usize / 64] |= 1 << (id % 64);
        for list in lists {
            match list {
                Postings::Ids(ids) => ids.iter().copied().for_each(&mut set),
                Postings::Bitmap(b) => b.iter().for_each(&mut set),
            }
        }
        return bitmap_of_bits(&bits);
    }
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

/// The fewest posting lists [`union`] gathers in a bit per record.
const MIN_GATHERED_LISTS: usize = 16;

/// The longest average posting list [`union`] gathers in a bit per record: roaring unions
/// long lists (bitmap containers) word by word, faster than ids are set one by one.
const MAX_GATHERED_LIST_LEN: u64 = 1024;

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

/// The most ids of the smaller bitmap that a page of a [`Matches::Pair`] looks up in the
/// larger one (expected, at the pair's density); a sparser pair is intersected first.
const MAX_PROBED: u64 = 8192;

/// The two bitmaps of an AND of exactly two plain terms held as bitmaps of comparable
/// sizes. When one is much smaller, [`Plan::and_of_sets`] is faster: it tests the smaller
/// one's ids against a value column or looks them up (see [`intersect`]).
fn bitmap_pair<'c>(items: &[Node<'c>]) -> Option<(&'c RoaringBitmap, &'c RoaringBitmap)> {
    let bitmap = |node: &Node<'c>| match node {
        Node::Sets { sets, .. } if sets.len() == 1 => match sets[0] {
            Postings::Bitmap(b) => Some(b),
            Postings::Ids(_) => None,
        },
        _ => None,
    };
    let [a, b] = items else {
        return None;
    };
    let (a, b) = (bitmap(a)?, bitmap(b)?);
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    (small.len().saturating_mul(LOOKUP_RATIO) > large.len()).then_some((a, b))
}

/// The most ids [`Plan::scan_and`] walks one by one; larger ANDs go through bitmaps.
const MAX_SCANNED: u64 = 4096;

/// The ids an AND's scan walks: a run of consecutive ids, an inline id list or a short
/// bitmap.
#[derive(Debug, Clone, Copy)]
enum Domain<'c> {
    Run(u32, u32),
    List(&'c [u32]),
    /// A short posting list held as a bitmap (a reprint set's scattered cards).
    Set(&'c RoaringBitmap),
}

impl<'c> Domain<'c> {
    fn len(&self) -> u64 {
        match self {
            Domain::Run(first, last) => u64::from(last - first) + 1,
            Domain::List(ids) => ids.len() as u64,
            Domain::Set(set) => set.len(),
        }
    }
}

/// The ids of `ids` that pass every test.
fn passing(mut ids: Vec<u32>, tests: &[IdTest<'_>]) -> Vec<u32> {
    for test in tests {
        ids.retain(|&id| test.passes(id));
    }
    ids
}

/// A constant-time (or logarithmic) test of one record id, in a scan: membership (`keep`)
/// or its absence (`!keep`, a negated term).
#[derive(Debug, Clone, Copy)]
enum IdTest<'c> {
    /// The id is in `first..=last`.
    Run { first: u32, last: u32, keep: bool },
    /// The id is in a short sorted list.
    Among { ids: &'c [u32], keep: bool },
    /// The record's value in a single-valued keyword field's column is `value`.
    Value {
        column: &'c [u16],
        value: u16,
        keep: bool,
    },
}

/// A short run of ids `first..=last`, one bit each: the records of the run that passed an
/// AND's tests so far. At most 4,096 ids, so 64 words; eight are kept inline.
#[derive(Debug, Clone)]
pub struct RunMask {
    first: u32,
    /// Bit `i % 64` of word `i / 64` is id `first + i`; bits past the run are clear.
    words: SmallVec<[u64; 8]>,
}

impl RunMask {
    /// Every id of `first..=last`.
    fn full(first: u32, last: u32) -> RunMask {
        let n = (last - first) as usize + 1;
        let mut words: SmallVec<[u64; 8]> = smallvec::smallvec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            let last_word = words.len() - 1;
            words[last_word] = u64::MAX >> (64 - n % 64);
        }
        RunMask { first, words }
    }

    /// How many ids are set.
    pub fn len(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The ids set from position `offset` on, at most `limit` of them.
    fn page(&self, offset: u64, limit: usize) -> Vec<u32> {
        page_of_words(&self.words, self.first, self.len(), offset, limit)
    }

    /// The ids set, ascending.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        ids_of_words(&self.words, self.first)
    }
}

/// Bit `j` set where `chunk[j] == value` (at most 64 values): four values at a time, as
/// the lanes of one `u64` (a lane is zero exactly where the value matched).
pub(super) fn equal_bits(chunk: &[u16], value: u16) -> u64 {
    const LOW: u64 = 0x7FFF_7FFF_7FFF_7FFF;
    /// 2^0 + 2^15 + 2^30 + 2^45.
    const GATHER: u64 = 0x0000_2000_4000_8001;
    let pattern = u64::from(value) * 0x0001_0001_0001_0001;
    let mut bits = 0u64;
    let mut quads = chunk.chunks_exact(4);
    for (q, quad) in quads.by_ref().enumerate() {
        let lanes = u64::from(quad[0])
            | u64::from(quad[1]) << 16
            | u64::from(quad[2]) << 32
            | u64::from(quad[3]) << 48;
        let x = lanes ^ pattern;
        // The top bit of each lane set where the lane is zero (exact, no carries across).
        let zero = !(((x & LOW) + LOW) | x) & !LOW;
        // Gather the four top bits (15, 31, 47, 63) into bits 0..4: shifted to 0, 16, 32
        // and 48, one multiplication copies bit 16k to 45 + k (times 2^(45 - 15k)). The
        // sixteen products land on distinct positions, so no carry disturbs bits 45..49.
        let four = ((zero >> 15).wrapping_mul(GATHER) >> 45) & 0xF;
        bits |= four << (4 * q);
    }
    let done = chunk.len() - quads.remainder().len();
    for (j, &v) in quads.remainder().iter().enumerate() {
        bits |= u64::from(v == value) << (done + j);
    }
    bits
}

impl IdTest<'_> {
    /// Clears the ids of `mask` that fail this test, 64 at a time.
    fn apply(&self, mask: &mut RunMask) {
        let first = mask.first as usize;
        for (w, word) in mask.words.iter_mut().enumerate() {
            let base = first + 64 * w;
            let held = match *self {
                IdTest::Value { column, value, .. } => {
                    let chunk = column.get(base..).unwrap_or_default();
                    equal_bits(&chunk[..chunk.len().min(64)], value)
                }
                IdTest::Run { first, last, .. } => {
                    // The ids of `first..=last` among `base..base + 64`.
                    let (lo, hi) = (first as usize, last as usize);
                    if hi < base || lo >= base + 64 {
                        0
                    } else {
                        let from = lo.saturating_sub(base);
                        let to = (hi - base).min(63);
                        (u64::MAX >> (63 - to)) & (u64::MAX << from)
                    }
                }
                IdTest::Among { ids, .. } => ids
                    .iter()
                    .filter_map(|&id| (id as usize).checked_sub(base))
                    .filter(|&offset| offset < 64)
                    .fold(0, |bits, offset| bits | 1 << offset),
            };
            *word &= if self.keeps() { held } else { !held };
        }
    }

    fn keeps(&self) -> bool {
        match *self {
            IdTest::Run { keep, .. } | IdTest::Among { keep, .. } | IdTest::Value { keep, .. } => {
                keep
            }
        }
    }

    #[inline]
    fn passes(&self, id: u32) -> bool {
        match *self {
            IdTest::Run { first, last, keep } => (first <= id && id <= last) == keep,
            IdTest::Among { ids, keep } => ids.binary_search(&id).is_ok() == keep,
            IdTest::Value {
                column,
                value,
                keep,
            } => (column.get(id as usize) == Some(&value)) == keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many short lists (gathered in a bit per id) and few or long ones (roaring's union)
    /// give the union of their ids, bitmaps and plain id lists mixed.
    #[test]
    fn union_of_many_short_lists_is_the_union_of_their_ids() {
        let lists: Vec<Vec<u32>> = (0..40u32)
            .map(|i| (0..50).map(|k| k * 70_001 + i * 13).collect())
            .collect();
        let bitmaps: Vec<RoaringBitmap> = lists
            .iter()
            .map(|ids| ids.iter().copied().collect())
            .collect();
        let expected: RoaringBitmap = lists.iter().flatten().copied().collect();
        let as_ids: Vec<Postings<'_>> = lists.iter().map(|l| Postings::Ids(l)).collect();
        let as_bitmaps: Vec<Postings<'_>> = bitmaps.iter().map(Postings::Bitmap).collect();
        let mixed: Vec<Postings<'_>> = as_ids
            .iter()
            .zip(&as_bitmaps)
            .enumerate()
            .map(|(i, (a, b))| if i % 2 == 0 { *a } else { *b })
            .collect();
        for (lists, what) in [
            (&as_ids, "ids"),
            (&as_bitmaps, "bitmaps"),
            (&mixed, "mixed"),
        ] {
            assert!(lists.len() >= MIN_GATHERED_LISTS);
            assert_eq!(union(lists), expected, "{what}, gathered");
            assert_eq!(
                union(&lists[..3]),
                lists[..3].iter().flat_map(|l| l.iter()).collect(),
                "{what}, merged"
            );
        }
        assert!(union(&[]).is_empty());
    }
}
