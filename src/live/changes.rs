//! Change detection between two loads of a snapshot (issue #6): per catalog and
//! expansion, whether raw prices, graded prices or population reports changed.
//!
//! Each loaded engine gets its [`Marks`]: per catalog, per [`ChangeKind`] and per
//! expansion, one digest of the sorted fingerprints of every price or pop report record
//! that counts for that expansion. A record counts for every expansion in its variant's `printings`, or,
//! when the variant has none, for the card's `expansion_id`. A fingerprint covers the
//! card id, the variant (its name and, for repeated names, which occurrence), and the
//! record's content in canonical form: object keys in sorted order, numbers by value
//! (`26` = `26.0`), so reformatting or reordering a snapshot's keys is not a change. Two
//! loads differ for an expansion and kind exactly when their fingerprint lists differ: a
//! record added, removed or changed, or moved to another variant or card.
//!
//! Fingerprints and digests are 64-bit hashes of a fixed algorithm (FNV-1a with a final
//! mix, written out here, not `std`'s hasher, whose output may change between Rust
//! releases), so marks can be saved ([`Marks::to_json`]) and compared with a later run's:
//! the server does this to report changes made while it was down. Two different record
//! sets could collide, with a chance of about 2⁻⁶⁴ per expansion and kind, and the change
//! would then go unreported.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

    /// The event name for `catalog` (spec section 6), e.g.
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

/// A 64-bit hash with a fixed definition: FNV-1a over the bytes, then the SplitMix64
/// finaliser so that every input bit reaches every output bit.
#[derive(Debug, Clone, Copy)]
struct StableHash(u64);

impl StableHash {
    fn new() -> StableHash {
        StableHash(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// A string, length first, so that ("ab", "c") and ("a", "bc") differ.
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    fn finish(self) -> u64 {
        let mut z = self.0;
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
}

impl CatalogChanges {
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

/// The part of a card the marks read; everything else is skipped unparsed.
#[derive(Deserialize)]
struct CardPart {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    expansion_id: Value,
    #[serde(default)]
    variants: Value,
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
                *changes.of_mut(kind) = expansions
                    .into_iter()
                    .filter(|e| old.get(*e) != now.get(*e))
                    .cloned()
                    .collect();
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
    let per_card = crate::par::map_slice(&ids, |&id| card_marks(cards.doc(id)));
    let mut fingerprints: [BTreeMap<String, Vec<u64>>; 3] = Default::default();
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
            digests.insert(expansion, digest(&mut marks));
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
fn card_marks(doc: &str) -> Vec<(ChangeKind, String, u64)> {
    let Ok(card) = serde_json::from_str::<CardPart>(doc) else {
        return Vec::new();
    };
    let Value::Array(variants) = &card.variants else {
        return Vec::new();
    };
    let debut = card.expansion_id.as_str().unwrap_or_default();
    let mut seen_names: HashMap<String, u32> = HashMap::new();
    let mut out = Vec::new();
    for variant in variants {
        let Value::Object(variant) = variant else {
            continue;
        };
        let name = variant.get("name").and_then(Value::as_str).unwrap_or("");
        let occurrence = seen_names.entry(name.to_string()).or_default();
        *occurrence += 1;
        let printings: Vec<&str> = match variant.get("printings") {
            Some(Value::Array(p)) => p.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let expansions: BTreeSet<&str> = if printings.is_empty() {
            [debut].into_iter().collect()
        } else {
            printings.into_iter().collect()
        };
        let records = |key: &str| match variant.get(key) {
            Some(Value::Array(records)) => records.as_slice(),
            _ => &[],
        };
        let mut mark = |kind: ChangeKind, record: &Value| {
            let mut h = StableHash::new();
            h.str(card.id.as_str().unwrap_or_default());
            h.str(name);
            h.u64(u64::from(*occurrence));
            canonical_hash(record, &mut h);
            let fingerprint = h.finish();
            for expansion in &expansions {
                out.push((kind, (*expansion).to_string(), fingerprint));
            }
        };
        for record in records("prices") {
            let graded = record.get("type").and_then(Value::as_str) == Some("graded");
            let kind = if graded {
                ChangeKind::GradedPrices
            } else {
                ChangeKind::RawPrices
            };
            mark(kind, record);
        }
        for record in records("pop_reports") {
            mark(ChangeKind::PopReports, record);
        }
    }
    out
}

/// Hashes `value` so that key order and number spelling do not matter.
fn canonical_hash(value: &Value, h: &mut StableHash) {
    match value {
        Value::Null => h.bytes(&[0]),
        Value::Bool(b) => h.bytes(&[1, u8::from(*b)]),
        Value::Number(n) => {
            match n.as_f64() {
                // -0.0 and 0.0 are the same value.
                Some(f) => {
                    h.bytes(&[2]);
                    h.u64((if f == 0.0 { 0.0f64 } else { f }).to_bits());
                }
                None => {
                    h.bytes(&[3]);
                    h.str(&n.to_string());
                }
            }
        }
        Value::String(s) => {
            h.bytes(&[4]);
            h.str(s);
        }
        Value::Array(items) => {
            h.bytes(&[5]);
            h.u64(items.len() as u64);
            for item in items {
                canonical_hash(item, h);
            }
        }
        Value::Object(map) => {
            h.bytes(&[6]);
            h.u64(map.len() as u64);
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys {
                h.str(key);
                canonical_hash(&map[key], h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(cards: &[&str]) -> BTreeMap<(ChangeKind, String), Vec<u64>> {
        let mut out: BTreeMap<(ChangeKind, String), Vec<u64>> = BTreeMap::new();
        for card in cards {
            for (kind, expansion, mark) in card_marks(card) {
                out.entry((kind, expansion)).or_default().push(mark);
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
    fn the_hash_is_fixed_and_marks_round_trip_through_json() {
        // Pinned values: a change of algorithm would make saved marks report false changes.
        let mut h = StableHash::new();
        h.str("ddw-3");
        // Computed independently (Python, FNV-1a then SplitMix64 over len-prefixed "ddw-3").
        assert_eq!(h.finish(), 0x0421_ace6_a8c5_f170_u64);
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
