//! Change detection between two loads of a snapshot (issue #6): per catalog and
//! expansion, whether raw prices, graded prices or population reports changed.
//!
//! Each loaded engine gets its [`Marks`]: per catalog, per [`ChangeKind`] and per
//! expansion, the sorted fingerprints of every price or pop report record that counts for
//! that expansion. A record counts for every expansion in its variant's `printings`, or,
//! when the variant has none, for the card's `expansion_id`. A fingerprint covers the
//! card id, the variant (its name and, for repeated names, which occurrence), and the
//! record's content in canonical form: object keys in sorted order, numbers by value
//! (`26` = `26.0`), so reformatting or reordering a snapshot's keys is not a change. Two
//! loads differ for an expansion and kind exactly when their fingerprint lists differ: a
//! record added, removed or changed, or moved to another variant or card.
//!
//! Fingerprints are 64-bit hashes: two different records could collide, with a chance of
//! about 2⁻⁶⁴ per pair, and the change would then go unreported.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde::Deserialize;
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

/// The fingerprints of one loaded engine, compared by [`Marks::changes`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Marks {
    /// Per catalog: per kind, per expansion id, the sorted record fingerprints.
    catalogs: BTreeMap<String, [BTreeMap<String, Vec<u64>>; 3]>,
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

    /// What changed from `self` (the old load) to `new`, per catalog in name order; a
    /// catalog with no change is left out. A catalog on one side only counts as having
    /// every record added (or removed).
    pub fn changes(&self, new: &Marks) -> Vec<CatalogChanges> {
        let names: BTreeSet<&String> = self.catalogs.keys().chain(new.catalogs.keys()).collect();
        let empty: [BTreeMap<String, Vec<u64>>; 3] = Default::default();
        let mut out = Vec::new();
        for name in names {
            let old = self.catalogs.get(name).unwrap_or(&empty);
            let now = new.catalogs.get(name).unwrap_or(&empty);
            let mut changes = CatalogChanges {
                catalog: name.clone(),
                ..CatalogChanges::default()
            };
            for kind in ChangeKind::ALL {
                let (old, now) = (&old[kind.slot()], &now[kind.slot()]);
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

fn catalog_marks(cards: &Collection) -> [BTreeMap<String, Vec<u64>>; 3] {
    let ids: Vec<u32> = cards.all().iter().collect();
    let per_card = crate::par::map_slice(&ids, |&id| card_marks(cards.doc(id)));
    let mut out: [BTreeMap<String, Vec<u64>>; 3] = Default::default();
    for marks in per_card {
        for (kind, expansion, mark) in marks {
            out[kind.slot()].entry(expansion).or_default().push(mark);
        }
    }
    for kind in &mut out {
        for marks in kind.values_mut() {
            marks.sort_unstable();
        }
    }
    out
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
            let mut h = DefaultHasher::new();
            card.id.as_str().unwrap_or_default().hash(&mut h);
            name.hash(&mut h);
            occurrence.hash(&mut h);
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
fn canonical_hash(value: &Value, h: &mut DefaultHasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            match n.as_f64() {
                // -0.0 and 0.0 are the same value.
                Some(f) => (if f == 0.0 { 0.0f64 } else { f }).to_bits().hash(h),
                None => n.to_string().hash(h),
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                canonical_hash(item, h);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys {
                key.hash(h);
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
