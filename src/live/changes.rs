//! Change detection between two loads of a snapshot: per catalog and
//! expansion, whether raw prices, graded prices or population reports changed.
//!
//! Each loaded engine gets its [`Marks`]: per catalog, per [`ChangeKind`] and per
//! expansion, one digest of the sorted fingerprints of every price or pop report record
//! that counts for that expansion. A record counts for every expansion in its variant's `printings`, or,
//! when the variant has none, for the card's `expansion_id`. A fingerprint covers the
//! card id, the variant (its name, the expansions it counts for, and among variants alike
//! in both, which occurrence), and the
//! record's content in canonical form: object keys in sorted order, numbers by value
//! (`26` = `26.0`), so reformatting or reordering a snapshot's keys is not a change. Two
//! loads differ for an expansion and kind exactly when their fingerprint lists differ: a
//! record added, removed or changed, or moved to another variant or card.
//!
//! Fingerprints and digests are 64-bit hashes of a fixed algorithm (FxHash's word step
//! with the SplitMix64 finaliser, written out in this crate, not `std`'s hasher, whose output may change between Rust
//! releases), so marks can be saved ([`Marks::to_json`]) and compared with a later run's:
//! the server does this to report changes made while it was down. Two different record
//! sets could collide, with a chance of about 2⁻⁶⁴ per expansion and kind, and the change
//! would then go unreported.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::hash::Hasher;

use serde::{Deserialize, Serialize};

use crate::fxhash::FxHasher;

use crate::engine::Engine;
use crate::store::Collection;

/// What changed for an expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// Raw prices: variant price records whose `type` is not `graded`.
    RawPrices,
    /// Graded prices: variant price records with `"type": "graded"`.
    GradedPrices,
    /// Population reports: variant `pop_reports` records.
    PopReports,
}

impl ChangeKind {
    /// Every kind, in the order events are made.
    pub const ALL: [ChangeKind; 3] = [
        ChangeKind::RawPrices,
        ChangeKind::GradedPrices,
        ChangeKind::PopReports,
    ];

    /// The webhook event name for `catalog`, e.g.
    /// `pokemon.expansions.prices.raw_updated`.
    pub fn event_name(self, catalog: &str) -> String {
        let suffix = match self {
            ChangeKind::RawPrices => "expansions.prices.raw_updated",
            ChangeKind::GradedPrices => "expansions.prices.graded_updated",
            ChangeKind::PopReports => "expansions.pop_reports.updated",
        };
        format!("{catalog}.{suffix}")
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// The digests of one loaded engine, compared by [`Marks::changes`].
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Marks {
    /// Per catalog: per kind, per expansion id, the digest of its record fingerprints.
    catalogs: BTreeMap<String, CatalogMarks>,
}

/// One catalog's digests, per kind and expansion id.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogMarks {
    raw_prices: BTreeMap<String, u64>,
    graded_prices: BTreeMap<String, u64>,
    pop_reports: BTreeMap<String, u64>,
}

impl CatalogMarks {
    fn of(&self, kind: ChangeKind) -> &BTreeMap<String, u64> {
        match kind {
            ChangeKind::RawPrices => &self.raw_prices,
            ChangeKind::GradedPrices => &self.graded_prices,
            ChangeKind::PopReports => &self.pop_reports,
        }
    }

    fn of_mut(&mut self, kind: ChangeKind) -> &mut BTreeMap<String, u64> {
        match kind {
            ChangeKind::RawPrices => &mut self.raw_prices,
            ChangeKind::GradedPrices => &mut self.graded_prices,
            ChangeKind::PopReports => &mut self.pop_reports,
        }
    }
}

/// A 64-bit hash with a fixed definition: the index's FxHash word step over 8-byte
/// little-endian chunks (the last one zero-padded), then the SplitMix64 finaliser, which
/// spreads every input bit over the output. Callers prefix variable lengths (see
/// [`StableHash::str`]), so padding is never ambiguous. A pinned test guards the output:
/// saved marks depend on it.
#[derive(Debug, Clone, Copy, Default)]
struct StableHash(FxHasher);

impl StableHash {
    fn new() -> StableHash {
        StableHash::default()
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    fn u64(&mut self, v: u64) {
        self.0.write_u64(v);
    }

    /// A string, length first, so that ("ab", "c") and ("a", "bc") differ.
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    fn finish(self) -> u64 {
        let mut z = self.0.finish();
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// What changed in one catalog between two loads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChanges {
    /// The catalog name (the event prefix).
    pub catalog: String,
    /// Expansion ids whose raw prices changed, sorted, without repeats.
    pub raw_prices: Vec<String>,
    /// Expansion ids whose graded prices changed, sorted, without repeats.
    pub graded_prices: Vec<String>,
    /// Expansion ids whose pop reports changed, sorted, without repeats.
    pub pop_reports: Vec<String>,
    /// Per kind, a digest of what the changed expansions hold in the new load (see
    /// [`CatalogChanges::state`]).
    states: [u64; 3],
}

impl CatalogChanges {
    /// A digest of what the expansions whose `kind` changed hold in the new load: the same
    /// change, found twice (from the same old load to the same new one), has the same
    /// state, and a different change a different one. Event ids are made from it.
    pub fn state(&self, kind: ChangeKind) -> u64 {
        self.states[kind.slot()]
    }

    /// The expansion ids of one kind.
    pub fn of(&self, kind: ChangeKind) -> &[String] {
        match kind {
            ChangeKind::RawPrices => &self.raw_prices,
            ChangeKind::GradedPrices => &self.graded_prices,
            ChangeKind::PopReports => &self.pop_reports,
        }
    }

    fn of_mut(&mut self, kind: ChangeKind) -> &mut Vec<String> {
        match kind {
            ChangeKind::RawPrices => &mut self.raw_prices,
            ChangeKind::GradedPrices => &mut self.graded_prices,
            ChangeKind::PopReports => &mut self.pop_reports,
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        ChangeKind::ALL.iter().all(|&k| self.of(k).is_empty())
    }
}

impl Marks {
    /// The marks of every catalog of `engine` (cards read in parallel with the `parallel`
    /// feature).
    pub fn of(engine: &Engine) -> Marks {
        let catalogs = engine
            .catalogs()
            .map(|c| (c.name().to_string(), catalog_marks(c.cards())))
            .collect();
        Marks { catalogs }
    }

    /// The marks as JSON, to be saved and read back with [`Marks::from_json`].
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("marks serialise")
    }

    /// Marks saved by [`Marks::to_json`].
    ///
    /// # Errors
    ///
    /// What serde_json says about text that is not saved marks.
    pub fn from_json(text: &str) -> Result<Marks, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// What changed from `self` (the old load) to `new`, per catalog in name order; a
    /// catalog with no change is left out. A catalog on one side only counts as having
    /// every record added (or removed).
    pub fn changes(&self, new: &Marks) -> Vec<CatalogChanges> {
        let names: BTreeSet<&String> = self.catalogs.keys().chain(new.catalogs.keys()).collect();
        let empty = CatalogMarks::default();
        let mut out = Vec::new();
        for name in names {
            let old = self.catalogs.get(name).unwrap_or(&empty);
            let now = new.catalogs.get(name).unwrap_or(&empty);
            let mut changes = CatalogChanges {
                catalog: name.clone(),
                ..CatalogChanges::default()
            };
            for kind in ChangeKind::ALL {
                let (old, now) = (old.of(kind), now.of(kind));
                let expansions: BTreeSet<&String> = old.keys().chain(now.keys()).collect();
                let changed: Vec<String> = expansions
                    .into_iter()
                    .filter(|e| old.get(*e) != now.get(*e))
                    .cloned()
                    .collect();
                let mut state = StableHash::new();
                for expansion in &changed {
                    state.str(expansion);
                    // An expansion that no longer holds any of this kind: its own marker.
                    match now.get(expansion) {
                        Some(&digest) => {
                            state.u64(1);
                            state.u64(digest);
                        }
                        None => state.u64(0),
                    }
                }
                changes.states[kind.slot()] = state.finish();
                *changes.of_mut(kind) = changed;
            }
            if !changes.is_empty() {
                out.push(changes);
            }
        }
        out
    }
}

fn catalog_marks(cards: &Collection) -> CatalogMarks {
    let ids: Vec<u32> = cards.all().iter().collect();
    let per_card = crate::par::map_slice(&ids, |&id| match cards.doc(id) {
        Cow::Borrowed(doc) => card_marks(doc),
        // Decompressed from a compressed store: the marks own their expansion ids.
        Cow::Owned(doc) => card_marks(&doc)
            .into_iter()
            .map(|(kind, expansion, mark)| (kind, Cow::Owned(expansion.into_owned()), mark))
            .collect(),
    });
    let mut fingerprints: [HashMap<Cow<'_, str>, Vec<u64>>; 3] = Default::default();
    for marks in per_card {
        for (kind, expansion, mark) in marks {
            fingerprints[kind.slot()]
                .entry(expansion)
                .or_default()
                .push(mark);
        }
    }
    let mut out = CatalogMarks::default();
    for kind in ChangeKind::ALL {
        let digests = out.of_mut(kind);
        for (expansion, mut marks) in std::mem::take(&mut fingerprints[kind.slot()]) {
            digests.insert(expansion.into_owned(), digest(&mut marks));
        }
    }
    out
}

/// One digest for a multiset of fingerprints (sorted first, so order does not matter).
fn digest(fingerprints: &mut [u64]) -> u64 {
    fingerprints.sort_unstable();
    let mut h = StableHash::new();
    h.u64(fingerprints.len() as u64);
    for &f in fingerprints.iter() {
        h.u64(f);
    }
    h.finish()
}

/// The (kind, expansion, fingerprint) of every price and pop report record of one card.
fn card_marks(doc: &str) -> Vec<(ChangeKind, Cow<'_, str>, u64)> {
    let Ok(card) = serde_json::from_str::<CardPart>(doc) else {
        return Vec::new();
    };
    let debut = card.expansion_id.clone().unwrap_or_default();
    let id = card.id.as_deref().unwrap_or_default();
    // A variant is told from its card's others by its name and the expansions it counts
    // for, then by its place among variants alike in both: so reordering variants that
    // differ in either, or adding one, moves no other variant's records.
    let mut seen: HashMap<(&str, Vec<&Cow<'_, str>>), u32> = HashMap::new();
    let mut out = Vec::new();
    for variant in card.variants.iter().flatten() {
        let name = variant.name.as_deref().unwrap_or("");
        let mut expansions: Vec<&Cow<'_, str>> = if variant.printings.is_empty() {
            vec![&debut]
        } else {
            variant.printings.iter().collect()
        };
        expansions.sort_unstable();
        expansions.dedup();
        let occurrence = seen.entry((name, expansions.clone())).or_default();
        *occurrence += 1;
        let prices = variant.prices.iter().map(|r| {
            let kind = if r.graded {
                ChangeKind::GradedPrices
            } else {
                ChangeKind::RawPrices
            };
            (kind, r.hash)
        });
        let pops = variant
            .pop_reports
            .iter()
            .map(|r| (ChangeKind::PopReports, r.hash));
        for (kind, record) in prices.chain(pops) {
            let mut h = StableHash::new();
            h.str(id);
            h.str(name);
            h.u64(u64::from(*occurrence));
            h.u64(expansions.len() as u64);
            for expansion in &expansions {
                h.str(expansion);
            }
            h.u64(record);
            let fingerprint = h.finish();
            for expansion in &expansions {
                out.push((kind, (*expansion).clone(), fingerprint));
            }
        }
    }
    out
}

// The card is read with serde visitors that hash records as they stream by, without
// building a `serde_json::Value`: a third of the time of building one and hashing it. Every
// reader is lenient: a field of an unexpected type is skipped (an `id` that is not a
// string counts as no id, a `printings` that is not an array as none, a record that is
// not an object is hashed as the value it is), so odd data never hides a whole card.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The part of a card the marks read.
#[derive(Default)]
struct CardPart<'a> {
    id: Option<Cow<'a, str>>,
    expansion_id: Option<Cow<'a, str>>,
    variants: Option<Vec<VariantPart<'a>>>,
}

/// The part of a variant the marks read.
#[derive(Default)]
struct VariantPart<'a> {
    name: Option<Cow<'a, str>>,
    printings: Vec<Cow<'a, str>>,
    prices: Vec<RecordHash>,
    pop_reports: Vec<RecordHash>,
}

/// A record's canonical hash, and whether it is a graded price (`"type": "graded"`).
#[derive(Default)]
struct RecordHash {
    hash: u64,
    graded: bool,
}

/// Visitor methods that answer `Default::default()` for the listed kinds of JSON value,
/// consuming arrays and objects whole.
macro_rules! default_for {
    (scalars) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (strings) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (arrays) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (objects) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// A string, or `None` for any other value (consumed).
struct LenientStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> de::Deserialize<'de> for LenientStr<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Cow<'de, str>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v.to_string())))
            }
            default_for!(scalars);
            default_for!(arrays);
            default_for!(objects);
        }
        d.deserialize_any(V).map(LenientStr)
    }
}

/// An array of `T`, or empty for any other value (consumed).
struct LenientList<T>(Vec<T>);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for LenientList<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element()? {
                    out.push(item);
                }
                Ok(out)
            }
            default_for!(scalars);
            default_for!(strings);
            default_for!(objects);
        }
        d.deserialize_any(V(std::marker::PhantomData))
            .map(LenientList)
    }
}

impl<'de: 'a, 'a> de::Deserialize<'de> for CardPart<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CardPart<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a card object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut card = CardPart::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "id" => card.id = map.next_value::<LenientStr>()?.0,
                        "expansion_id" => card.expansion_id = map.next_value::<LenientStr>()?.0,
                        "variants" => {
                            let list = map.next_value::<LenientList<LenientVariant>>()?;
                            card.variants = Some(list.0.into_iter().flat_map(|v| v.0).collect());
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(card)
            }
        }
        d.deserialize_map(V)
    }
}

/// A variant object, or `None` for any other value (consumed).
struct LenientVariant<'a>(Option<VariantPart<'a>>);

impl<'de: 'a, 'a> de::Deserialize<'de> for LenientVariant<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<VariantPart<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v = VariantPart::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "name" => v.name = map.next_value::<LenientStr>()?.0,
                        "printings" => {
                            let list = map.next_value::<LenientList<LenientStr>>()?;
                            v.printings = list.0.into_iter().flat_map(|s| s.0).collect();
                        }
                        "prices" => v.prices = map.next_value::<LenientList<RecordHash>>()?.0,
                        "pop_reports" => {
                            v.pop_reports = map.next_value::<LenientList<RecordHash>>()?.0;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Some(v))
            }
            default_for!(scalars);
            default_for!(strings);
            default_for!(arrays);
        }
        d.deserialize_any(V).map(LenientVariant)
    }
}

impl<'de> de::Deserialize<'de> for RecordHash {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut graded = false;
        let hash = Canonical {
            role: Role::Record(&mut graded),
        }
        .deserialize(d)?;
        Ok(RecordHash { hash, graded })
    }
}

/// Hashes any JSON value so that key order and number spelling do not matter: an object's
/// members are hashed one by one and added up (order-free), numbers hash as their `f64`
/// value (`26` = `26.0`, `-0.0` = `0.0`). At the top of a price record it also notes
/// `"type": "graded"`.
struct Canonical<'g> {
    role: Role<'g>,
}

/// Where a [`Canonical`] value sits, for noting graded price records.
enum Role<'g> {
    /// Any value.
    Plain,
    /// A price (or pop report) record: its `type` member is looked at.
    Record(&'g mut bool),
    /// A record's `type`: the flag is set when it is the string `graded`.
    Type(&'g mut bool),
}

const PLAIN: Canonical<'static> = Canonical { role: Role::Plain };

impl<'de> DeserializeSeed<'de> for Canonical<'_> {
    type Value = u64;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

fn tagged(tag: u8, f: impl FnOnce(&mut StableHash)) -> u64 {
    let mut h = StableHash::new();
    h.bytes(&[tag]);
    f(&mut h);
    h.finish()
}

fn number(f: f64) -> u64 {
    tagged(2, |h| h.u64((if f == 0.0 { 0.0f64 } else { f }).to_bits()))
}

impl<'de> Visitor<'de> for Canonical<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<u64, E> {
        Ok(tagged(0, |_| {}))
    }
    fn visit_bool<E>(self, v: bool) -> Result<u64, E> {
        Ok(tagged(1, |h| h.bytes(&[u8::from(v)])))
    }
    fn visit_i64<E>(self, v: i64) -> Result<u64, E> {
        Ok(number(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<u64, E> {
        Ok(number(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<u64, E> {
        Ok(number(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<u64, E> {
        if let Role::Type(flag) = self.role {
            *flag = v == "graded";
        }
        Ok(tagged(4, |h| h.str(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let mut h = StableHash::new();
        h.bytes(&[5]);
        let mut n = 0u64;
        while let Some(item) = seq.next_element_seed(PLAIN)? {
            h.u64(item);
            n += 1;
        }
        h.u64(n);
        Ok(h.finish())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let mut sum = 0u64;
        let mut n = 0u64;
        let mut graded = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = match self.role {
                Role::Record(_) if key == "type" => map.next_value_seed(Canonical {
                    role: Role::Type(&mut graded),
                })?,
                _ => map.next_value_seed(PLAIN)?,
            };
            let mut member = StableHash::new();
            member.str(&key);
            member.u64(value);
            sum = sum.wrapping_add(member.finish());
            n += 1;
        }
        if let Role::Record(flag) = self.role {
            *flag = graded;
        }
        Ok(tagged(6, |h| {
            h.u64(n);
            h.u64(sum);
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(cards: &[&str]) -> BTreeMap<(ChangeKind, String), Vec<u64>> {
        let mut out: BTreeMap<(ChangeKind, String), Vec<u64>> = BTreeMap::new();
        for card in cards {
            for (kind, expansion, mark) in card_marks(card) {
                out.entry((kind, expansion.into_owned()))
                    .or_default()
                    .push(mark);
            }
        }
        for v in out.values_mut() {
            v.sort_unstable();
        }
        out
    }

    fn changed(old: &[&str], new: &[&str]) -> Vec<(ChangeKind, String)> {
        let (old, new) = (marks(old), marks(new));
        let keys: BTreeSet<&(ChangeKind, String)> = old.keys().chain(new.keys()).collect();
        keys.into_iter()
            .filter(|k| old.get(*k) != new.get(*k))
            .cloned()
            .collect()
    }

    const CARD: &str = r#"{"id":"c1","expansion_id":"A","variants":[
        {"name":"Normal","prices":[{"type":"raw","condition":"NM","market":26.0,"currency":"USD"},
                                   {"type":"graded","company":"PSA","grade":"10","market":90}],
         "pop_reports":[{"company":"PSA","total":3,"grades":[{"grade":"10","count":3}]}]},
        {"name":"Reprint","printings":["B","C"],"prices":[{"type":"raw","market":5}]}]}"#;

    #[test]
    fn a_change_has_the_state_of_what_its_expansions_hold_in_the_new_load() {
        let marks = |raw: &[(&str, u64)]| {
            let mut catalog = CatalogMarks::default();
            for (expansion, digest) in raw {
                catalog.raw_prices.insert(expansion.to_string(), *digest);
            }
            Marks {
                catalogs: [("tcg".to_string(), catalog)].into(),
            }
        };
        let state = |old: &Marks, new: &Marks| old.changes(new)[0].state(ChangeKind::RawPrices);
        let (a, b, c) = (
            marks(&[("A", 1), ("B", 2)]),
            marks(&[("A", 3), ("B", 2)]),
            marks(&[("A", 4), ("B", 2)]),
        );
        // The same change found twice: the same state.
        assert_eq!(
            state(&a, &b),
            a.clone().changes(&b.clone())[0].state(ChangeKind::RawPrices)
        );
        // Another new load: another state; back again: another still.
        assert_ne!(state(&a, &b), state(&a, &c));
        assert_ne!(state(&a, &b), state(&b, &a));
        // An expansion that lost its prices differs from one that holds any digest.
        let gone = marks(&[("B", 2)]);
        assert_ne!(state(&a, &gone), state(&a, &b));
        assert_eq!(a.changes(&gone)[0].raw_prices, ["A"]);
    }

    #[test]
    fn a_changed_raw_price_names_only_its_variants_expansions() {
        let new = CARD.replace("\"market\":5}", "\"market\":6}");
        assert_eq!(
            changed(&[CARD], &[&new]),
            [
                (ChangeKind::RawPrices, "B".to_string()),
                (ChangeKind::RawPrices, "C".to_string())
            ]
        );
        let new = CARD.replace("\"market\":26.0", "\"market\":27.5");
        assert_eq!(
            changed(&[CARD], &[&new]),
            [(ChangeKind::RawPrices, "A".to_string())]
        );
    }

    #[test]
    fn graded_and_pop_reports_are_their_own_kinds() {
        let new = CARD.replace("\"market\":90", "\"market\":95");
        assert_eq!(
            changed(&[CARD], &[&new]),
            [(ChangeKind::GradedPrices, "A".to_string())]
        );
        let new = CARD.replace("\"count\":3", "\"count\":4");
        assert_eq!(
            changed(&[CARD], &[&new]),
            [(ChangeKind::PopReports, "A".to_string())]
        );
    }

    #[test]
    fn reformatting_and_reordering_keys_is_not_a_change() {
        let new = CARD
            .replace(
                "\"market\":26.0,\"currency\":\"USD\"",
                "\"currency\":\"USD\",\"market\":26",
            )
            .replace(',', " ,\n ");
        assert!(changed(&[CARD], &[&new]).is_empty());
        // Other fields of the card or variant are not prices.
        let new = CARD.replace("\"id\":\"c1\",", "\"id\":\"c1\",\"name\":\"New name\",");
        assert!(changed(&[CARD], &[&new]).is_empty());
    }

    #[test]
    fn records_added_removed_or_moved_count() {
        // A card added with prices: all its expansions, every kind it has.
        let added = changed(&[], &[CARD]);
        assert_eq!(added.len(), 5, "{added:?}");
        // Removed likewise.
        assert_eq!(changed(&[CARD], &[]), added);
        // A price record removed from a variant.
        let new = CARD.replace(",\"prices\":[{\"type\":\"raw\",\"market\":5}]", "");
        assert_eq!(
            changed(&[CARD], &[&new]),
            [
                (ChangeKind::RawPrices, "B".to_string()),
                (ChangeKind::RawPrices, "C".to_string())
            ]
        );
        // The same record under another card id is a change for that expansion.
        let other = CARD.replace("\"c1\"", "\"c2\"");
        assert_eq!(changed(&[CARD], &[&other]).len(), 5);
    }

    #[test]
    fn variants_of_one_name_are_told_apart_by_their_expansions_then_their_place() {
        const TWO: &str = r#"{"id":"c1","expansion_id":"A","variants":[
            {"name":"Normal","prices":[{"type":"raw","market":1}]},
            {"name":"Normal","printings":["B"],"prices":[{"type":"raw","market":2}]}]}"#;
        let swapped = r#"{"id":"c1","expansion_id":"A","variants":[
            {"name":"Normal","printings":["B"],"prices":[{"type":"raw","market":2}]},
            {"name":"Normal","prices":[{"type":"raw","market":1}]}]}"#;
        assert!(changed(&[TWO], &[swapped]).is_empty());
        // A variant added before them changes its own expansion only.
        let added = TWO.replace(
            "\"variants\":[",
            "\"variants\":[{\"name\":\"Normal\",\"printings\":[\"A\"],\"prices\":[{\"type\":\"raw\",\"market\":3}]},",
        );
        assert_eq!(
            changed(&[TWO], &[&added]),
            [(ChangeKind::RawPrices, "A".to_string())]
        );
        // A record moved between the two is a change for both expansions.
        let moved = TWO.replace("\"market\":1}", "\"market\":2}").replace(
            "\"printings\":[\"B\"],\"prices\":[{\"type\":\"raw\",\"market\":2}]",
            "\"printings\":[\"B\"],\"prices\":[{\"type\":\"raw\",\"market\":1}]",
        );
        assert_eq!(
            changed(&[TWO], &[&moved]),
            [
                (ChangeKind::RawPrices, "A".to_string()),
                (ChangeKind::RawPrices, "B".to_string())
            ]
        );
        // Variants of one name whose expansions overlap: a price swapped between them, or
        // moved from one to the other, is a change for every expansion either counts for.
        let overlapping = TWO.replace("\"printings\":[\"B\"],", "\"printings\":[\"A\",\"B\"],");
        let swapped_prices = overlapping
            .replace("\"market\":1}", "\"market\":X}")
            .replace("\"market\":2}", "\"market\":1}")
            .replace("\"market\":X}", "\"market\":2}");
        let both = [
            (ChangeKind::RawPrices, "A".to_string()),
            (ChangeKind::RawPrices, "B".to_string()),
        ];
        assert_eq!(changed(&[&overlapping], &[&swapped_prices]), both);
        let moved_over = overlapping
            .replace(
                "{\"name\":\"Normal\",\"prices\":[{\"type\":\"raw\",\"market\":1}]}",
                "{\"name\":\"Normal\"}",
            )
            .replace(
                "\"market\":2}]",
                "\"market\":2},{\"type\":\"raw\",\"market\":1}]",
            );
        assert_ne!(moved_over, overlapping);
        assert_eq!(changed(&[&overlapping], &[&moved_over]), both);
        // A second variant of a name, without prices, changes nothing for the first, nor
        // does a third.
        let one_normal = r#"{"id":"c1","expansion_id":"A","variants":[
            {"name":"Normal","prices":[{"type":"raw","market":1}]}]}"#;
        let second = one_normal.replace(
            "\"variants\":[",
            "\"variants\":[{\"name\":\"Normal\",\"printings\":[\"C\"]},",
        );
        assert!(changed(&[one_normal], &[&second]).is_empty());
        let third = TWO.replace(
            "\"variants\":[",
            "\"variants\":[{\"name\":\"Normal\",\"printings\":[\"C\"]},",
        );
        assert!(changed(&[TWO], &[&third]).is_empty());
        // The fingerprint is pinned: saved marks depend on it.
        let one = card_marks(
            r#"{"id":"c1","expansion_id":"A","variants":[{"name":"Normal","printings":["B"],"prices":[{"type":"raw","market":5}]}]}"#,
        );
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].2, 0x7a15_c216_6f84_f2ed_u64);
        // Variants alike in name and expansions are told apart by their place: swapping
        // two that differ in prices is a change.
        let alike = TWO.replace("\"printings\":[\"B\"],", "\"printings\":[\"A\"],");
        let alike_swapped = alike
            .replace("\"market\":1}", "\"market\":X}")
            .replace("\"market\":2}", "\"market\":1}")
            .replace("\"market\":X}", "\"market\":2}");
        assert_eq!(
            changed(&[&alike], &[&alike_swapped]),
            [(ChangeKind::RawPrices, "A".to_string())]
        );
    }

    #[test]
    fn the_hash_is_fixed_and_marks_round_trip_through_json() {
        // Pinned values: a change of algorithm would make saved marks report false changes.
        let mut h = StableHash::new();
        h.str("ddw-3");
        // Computed independently (Python: FxHash's word step, then SplitMix64, over the
        // length word and "ddw-3" zero-padded to 8 bytes).
        assert_eq!(h.finish(), 0x1267_3123_e6f7_e406_u64);
        assert_eq!(digest(&mut [3, 1, 2]), digest(&mut [1, 2, 3]));
        assert_ne!(digest(&mut [1, 2]), digest(&mut [1, 2, 2]));
        let engine = crate::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).unwrap();
        let marks = Marks::of(&engine);
        let back = Marks::from_json(&marks.to_json()).unwrap();
        assert_eq!(back, marks);
        assert!(marks.changes(&back).is_empty());
        assert!(marks
            .to_json()
            .contains(r#""onepiece":{"raw_prices":{"OP01":"#));
        assert!(Marks::from_json("[1]").is_err());
    }

    #[test]
    fn odd_shapes_are_read_leniently() {
        assert!(card_marks(r#"{"id":"c","expansion_id":"A","variants":"x"}"#).is_empty());
        assert!(card_marks("[1,2]").is_empty());
        let odd = r#"{"id":7,"expansion_id":"A","variants":[1,{"name":"N","printings":"B",
            "prices":[5,{"type":{"x":1},"market":1}],"pop_reports":{"not":"a list"}}]}"#;
        let marks = card_marks(odd);
        // `printings` is not a list: the debut expansion; both records are raw prices.
        assert_eq!(marks.len(), 2);
        assert!(marks
            .iter()
            .all(|(k, e, _)| *k == ChangeKind::RawPrices && e == "A"));
        // A change inside the odd `type` is still a change.
        let changed_inside = odd.replace(r#"{"x":1}"#, r#"{"x":2}"#);
        assert_eq!(
            changed(&[odd], &[&changed_inside]),
            [(ChangeKind::RawPrices, "A".to_string())]
        );
        // Escaped strings are read too.
        let escaped = r#"{"id":"c\u0031","expansion_id":"A\u0042","variants":[{"prices":[{"type":"gr\u0061ded"}]}]}"#;
        let marks = card_marks(escaped);
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].0, ChangeKind::GradedPrices);
        assert_eq!(marks[0].1, "AB");
    }

    #[test]
    fn event_names_follow_the_spec() {
        assert_eq!(
            ChangeKind::RawPrices.event_name("pokemon"),
            "pokemon.expansions.prices.raw_updated"
        );
        assert_eq!(
            ChangeKind::GradedPrices.event_name("onepiece"),
            "onepiece.expansions.prices.graded_updated"
        );
        assert_eq!(
            ChangeKind::PopReports.event_name("lorcana"),
            "lorcana.expansions.pop_reports.updated"
        );
    }
}
