//! The Pokémon TCG API v2's records over one catalog, rendered once per loaded engine:
//! each English card and set as v2 served it, and the value lists of `/v2/types`,
//! `/v2/subtypes`, `/v2/supertypes` and `/v2/rarities`.
//!
//! A record of the catalog becomes its v2 form by these rules (SERVER.md lists them):
//!
//! - every key, at every depth, in camelCase (`national_pokedex_numbers` →
//!   `nationalPokedexNumbers`, `1st_edition_holofoil` → `1stEditionHolofoil`): the inverse
//!   of the importer's snake_case, so a card imported from the v2 data set gets its keys
//!   back;
//! - a card loses what cardex adds to it (`expansion_id`, `expansion`, `language`,
//!   `language_code`, `printings`) and gets its set's v2 object as `set`, before `number` as v2 wrote it;
//! - a set's `code` is `ptcgoCode`, and it loses `language`, `language_code` and
//!   `translation`;
//! - in catalogs written in cardex's own layout: a card's `images` list becomes v2's
//!   `{small, large}` (the front image), a set's `logo` and `symbol` become `images`, and a
//!   card's `variants` with raw Near Mint prices become `tcgplayer` (USD: `prices` per
//!   variant name, with `low`, `mid`, `high`, `market`) and `cardmarket` (EUR: `prices`
//!   with `lowPrice`, `averageSellPrice` and `trendPrice`, the last two the market price);
//! - no key twice: a card's own `set` gives way to its set's object, its own `tcgplayer`
//!   and `cardmarket` are kept rather than made, and a set's own `ptcgoCode` is kept rather
//!   than its `code`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::query::{Served, SetImages, SET_IMAGES};
use crate::json::transcode::{Kind, Member, Transcoder};
use crate::naming::camel_case;
use crate::store::TextList;
use crate::text::fold;
use crate::{Catalog, Engine, SearchRequest};

/// The card members cardex adds, which v2 cards do not have (after camelCase).
const ADDED_TO_CARDS: [&str; 6] = [
    "expansionId",
    "expansion",
    "language",
    "languageCode",
    "printings",
    "variants",
];

/// The set members cardex adds, which v2 sets do not have (after camelCase).
const ADDED_TO_SETS: [&str; 3] = ["language", "languageCode", "translation"];

/// The v2 value lists, in the order of [`V2View::list`]'s argument.
pub(crate) const LISTS: [(&str, &str); 4] = [
    ("types", "types"),
    ("subtypes", "subtypes"),
    ("supertypes", "supertype"),
    ("rarities", "rarity"),
];

/// One catalog's records in their v2 form, for the engine they were rendered from.
#[derive(Debug)]
pub(crate) struct V2View {
    engine: Weak<Engine>,
    /// The language scope of the v2 surface: `en`, or none in a catalog without languages.
    pub lang: Option<&'static str>,
    /// By card record id: the card's v2 JSON (English cards only), kept as the engine
    /// keeps its records (plain or compressed).
    cards: TextList,
    /// By expansion record id: the set's v2 JSON, kept alike.
    sets: TextList,
    /// `{"data":[...]}` of each of [`LISTS`].
    lists: [Box<str>; 4],
    /// The top-level fields of the cards, and of the sets (for `select`).
    card_fields: Vec<String>,
    set_fields: Vec<String>,
    /// Where the cards' `tcgplayer` and `cardmarket` are made from their variants' prices
    /// (the catalog has prices, and its cards carry neither of their own): what they are
    /// served with.
    prices: Option<Served>,
    /// Whether some card carries a `tcgplayer` or `cardmarket` of its own.
    pub own_prices: bool,
    /// Where the sets' `images` come from: their own where a set served has them.
    pub set_images: SetImages,
}

impl V2View {
    /// The v2 records of `catalog` in `engine`.
    pub(crate) fn build(engine: &Arc<Engine>, catalog: &Catalog) -> V2View {
        // English cards; a catalog with languages but not English has none to serve.
        let lang = (!catalog.languages().is_empty()).then_some("en");
        let everything =
            |hits: crate::Result<crate::Hits>| hits.map(|h| h.record_ids).unwrap_or_default();
        let scope = SearchRequest {
            lang,
            page_size: u32::MAX,
            ..SearchRequest::default()
        };
        let mut transcoder = Transcoder::renaming(camel_case);

        let mut sets = vec![None; catalog.expansions().len()];
        let mut set_of: HashMap<String, u32> = HashMap::new();
        let mut set_fields = BTreeSet::new();
        // Whether a set served carries `images` of its own.
        let mut own_set_images = false;
        for id in everything(catalog.expansion_hits(&scope)) {
            let json = catalog
                .expansions()
                .with_doc(id, |doc| v2_set(&mut transcoder, doc));
            if let Some((json, own)) = json {
                own_set_images |= own;
                top_level(&json, &mut set_fields);
                set_of.insert(catalog.expansions().record_id(id).into_owned(), id);
                sets[id as usize] = Some(json.into_boxed_str());
            }
        }

        // v2's `updatedAt` of the prices: when this snapshot's prices were rendered.
        let rendered = crate::server::clock::rfc3339(std::time::SystemTime::now())
            .get(..10)
            .unwrap_or_default()
            .replace('-', "/");
        let mut cards: Vec<Option<String>> = vec![None; catalog.cards().len()];
        let mut values: [BTreeSet<String>; 4] = Default::default();
        let mut card_fields = BTreeSet::new();
        let (mut price_variants, mut any_cardmarket) = (BTreeSet::new(), false);
        // Whether a card served carries a `tcgplayer` or `cardmarket` of its own.
        let mut own = false;
        for id in everything(catalog.hits(&scope)) {
            let json = catalog.cards().with_doc(id, |doc| {
                v2_card(
                    &mut transcoder,
                    doc,
                    &rendered,
                    |expansion| {
                        set_of
                            .get(expansion)
                            .and_then(|&set| sets[set as usize].as_deref())
                    },
                    &mut own,
                )
            });
            let Some(json) = json else {
                continue;
            };
            if let Ok(Value::Object(card)) = serde_json::from_str::<Value>(&json) {
                card_fields.extend(card.keys().cloned());
                for (object, prices) in ["tcgplayer", "cardmarket"]
                    .map(|o| (o, card.get(o).and_then(|p| p.get("prices"))))
                {
                    match prices.and_then(Value::as_object) {
                        Some(prices) if object == "tcgplayer" => {
                            price_variants.extend(prices.keys().cloned());
                        }
                        Some(_) => any_cardmarket = true,
                        None => {}
                    }
                }
                for (list, (_, field)) in values.iter_mut().zip(LISTS) {
                    match card.get(field) {
                        Some(Value::String(s)) => {
                            list.insert(s.clone());
                        }
                        Some(Value::Array(items)) => {
                            list.extend(items.iter().filter_map(|v| v.as_str().map(String::from)));
                        }
                        _ => {}
                    }
                }
            }
            cards[id as usize] = Some(json);
        }
        let lists = values.map(|list| {
            let data: Vec<String> = list.into_iter().collect();
            json!({ "data": data }).to_string().into_boxed_str()
        });
        let index = catalog.cards().index();
        let prices =
            (!own && index.lookup("variants.prices.currency").is_some()).then_some(Served {
                variants: price_variants,
                cardmarket: any_cardmarket,
            });
        V2View {
            engine: Arc::downgrade(engine),
            lang,
            cards: TextList::new(cards, engine.options().store),
            sets: TextList::new(
                sets.into_iter().map(|set| set.map(String::from)).collect(),
                engine.options().store,
            ),
            lists,
            card_fields: card_fields.into_iter().collect(),
            set_fields: set_fields.into_iter().collect(),
            prices,
            own_prices: own,
            set_images: if own_set_images {
                SetImages::Own
            } else {
                SetImages::LogoAndSymbol
            },
        }
    }

    /// What the cards' `tcgplayer` and `cardmarket` are served with, where they are made
    /// from the variants' prices (then their figures are searched and sorted by).
    pub(crate) fn prices(&self) -> Option<&Served> {
        self.prices.as_ref()
    }

    /// The top-level fields the cards have.
    pub(crate) fn card_fields(&self) -> &[String] {
        &self.card_fields
    }

    /// The top-level fields the sets have.
    pub(crate) fn set_fields(&self) -> &[String] {
        &self.set_fields
    }

    /// Whether this view was rendered from `engine`.
    pub(crate) fn is_of(&self, engine: &Arc<Engine>) -> bool {
        std::ptr::eq(self.engine.as_ptr(), Arc::as_ptr(engine))
    }

    /// Calls `f` with the v2 JSON of card record `id`, if it has one.
    pub(crate) fn with_card<R>(&self, id: u32, f: impl FnOnce(&str) -> R) -> Option<R> {
        self.cards.with(id, f)
    }

    /// Calls `f` with the v2 JSON of expansion record `id`, if it has one.
    pub(crate) fn with_set<R>(&self, id: u32, f: impl FnOnce(&str) -> R) -> Option<R> {
        self.sets.with(id, f)
    }

    /// Whether card record `id` (or expansion record `id`, if not `card`) has a v2 form.
    pub(crate) fn has(&self, card: bool, id: u32) -> bool {
        if card {
            self.cards.has(id)
        } else {
            self.sets.has(id)
        }
    }

    /// Bytes the rendered cards and sets hold on the heap.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.cards.heap_bytes() + self.sets.heap_bytes()
    }

    /// `{"data":[...]}` of list `i` of [`LISTS`].
    pub(crate) fn list(&self, i: usize) -> &str {
        &self.lists[i]
    }
}

/// Adds the top-level keys of the JSON object `json` to `fields`.
fn top_level(json: &str, fields: &mut BTreeSet<String>) {
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(json) {
        fields.extend(object.keys().cloned());
    }
}

/// The text of a member's key (as written, escaped) and value in `out`.
fn parts<'o>(out: &'o [u8], m: &Member) -> (&'o str, &'o str) {
    let text = |r: std::ops::Range<usize>| std::str::from_utf8(&out[r]).unwrap_or_default();
    (text(m.key.clone()), text(m.value.clone()))
}

/// Writes `"key":value` into the object being built in `json`; `key` is the text between
/// the key's quotes, escaped as JSON escapes it (as the transcoder gives it).
fn member(json: &mut String, key: &str, value: &str) {
    if json.len() > 1 {
        json.push(',');
    }
    json.push('"');
    json.push_str(key);
    json.push_str("\":");
    json.push_str(value);
}

/// A set's v2 JSON from its stored JSON, and whether it has `images` of its own.
fn v2_set(t: &mut Transcoder, doc: &str) -> Option<(String, bool)> {
    t.record(doc).ok()?;
    if t.layout.kind != Some(Kind::Object) {
        return None;
    }
    let mut json = String::with_capacity(t.out.len() + 32);
    json.push('{');
    let mut images = Map::new();
    let mut has_images = false;
    // A set of its own `ptcgo_code` keeps it, rather than its `code` under that name.
    let has_ptcgo_code = t
        .layout
        .members
        .iter()
        .any(|m| parts(&t.out, m).0 == "ptcgoCode");
    for m in &t.layout.members {
        let (key, value) = parts(&t.out, m);
        match key {
            k if ADDED_TO_SETS.contains(&k) => {}
            "code" if has_ptcgo_code => {}
            "code" => member(&mut json, "ptcgoCode", value),
            k if SET_IMAGES.contains(&k) && m.kind == Kind::String => {
                images.insert(key.to_string(), serde_json::from_str(value).ok()?);
            }
            _ => {
                has_images |= key == "images";
                member(&mut json, key, value);
            }
        }
    }
    if !has_images && !images.is_empty() {
        // v2 lists the symbol first.
        let mut ordered = Map::new();
        for k in SET_IMAGES {
            if let Some(v) = images.remove(k) {
                ordered.insert(k.to_string(), v);
            }
        }
        member(&mut json, "images", &Value::Object(ordered).to_string());
    }
    json.push('}');
    Some((json, has_images))
}

/// A card's v2 JSON from its stored JSON, with `set_json` giving its set's v2 JSON by the
/// set's id.
fn v2_card<'s>(
    t: &mut Transcoder,
    doc: &str,
    updated: &str,
    set_json: impl Fn(&str) -> Option<&'s str>,
    own_prices: &mut bool,
) -> Option<String> {
    t.record(doc).ok()?;
    if t.layout.kind != Some(Kind::Object) {
        return None;
    }
    let mut set = None;
    let mut variants = None;
    // What the card has of its own among what v2 cards get from elsewhere: its own
    // `tcgplayer` and `cardmarket` are kept rather than made from its variants.
    let (mut has_tcgplayer, mut has_cardmarket) = (false, false);
    for m in &t.layout.members {
        match parts(&t.out, m) {
            ("expansionId", value) => {
                set = serde_json::from_str::<String>(value)
                    .ok()
                    .and_then(|id| set_json(&id));
            }
            ("variants", value) => variants = serde_json::from_str::<Value>(value).ok(),
            // An own `null` counts as none: the prices are made.
            ("tcgplayer", value) => has_tcgplayer = value != "null",
            ("cardmarket", value) => has_cardmarket = value != "null",
            _ => {}
        }
    }
    *own_prices |= has_tcgplayer || has_cardmarket;
    let mut json = String::with_capacity(t.out.len() + set.map_or(0, str::len) + 16);
    json.push('{');
    let mut set_written = set.is_none();
    for m in &t.layout.members {
        let (key, value) = parts(&t.out, m);
        if key == "number" && !set_written {
            member(&mut json, "set", set.unwrap_or("null"));
            set_written = true;
        }
        match key {
            k if ADDED_TO_CARDS.contains(&k) => {}
            // Its set's v2 object takes the place of a `set` of its own.
            "set" if set.is_some() => {}
            "tcgplayer" | "cardmarket" if value == "null" => {}
            "images" if m.kind == Kind::Array => {
                if let Some(images) = front_image(value) {
                    member(&mut json, key, &images.to_string());
                }
            }
            _ => member(&mut json, key, value),
        }
    }
    if let Some(set) = set.filter(|_| !set_written) {
        member(&mut json, "set", set);
    }
    if let Some(variants) = variants {
        let (tcgplayer, cardmarket) = market_prices(&variants, updated);
        if let Some(tcgplayer) = tcgplayer.filter(|_| !has_tcgplayer) {
            member(&mut json, "tcgplayer", &tcgplayer.to_string());
        }
        if let Some(cardmarket) = cardmarket.filter(|_| !has_cardmarket) {
            member(&mut json, "cardmarket", &cardmarket.to_string());
        }
    }
    json.push('}');
    Some(json)
}

/// v2's `images` (`{small, large}`) from cardex's list of images: the front one, or the
/// first.
fn front_image(list: &str) -> Option<Value> {
    let Ok(Value::Array(images)) = serde_json::from_str::<Value>(list) else {
        return None;
    };
    let front = images
        .iter()
        .find(|i| i.get("type").and_then(Value::as_str) == Some("front"))
        .or_else(|| images.first())?;
    let mut out = Map::new();
    for size in ["small", "large"] {
        if let Some(url) = front.get(size) {
            out.insert(size.to_string(), url.clone());
        }
    }
    Some(Value::Object(out))
}

/// v2's `tcgplayer` and `cardmarket` objects from the variants' raw Near Mint prices in USD
/// and in EUR (keys already in camelCase), with `url` empty (cardex has no shop links) and
/// `updatedAt` the date `updated`. A price counts when its `type` is `raw`, its `condition`
/// `NM` or absent (or `null`) and its `currency` `USD` or `EUR`, folded as `q` folds them
/// ([`super::query::PriceField::query`]); each figure is the first such price's that has
/// it (not `null`), as written: of the variants of its name (a variant without one is
/// `normal`) for `tcgplayer`, of any variant for `cardmarket`.
fn market_prices(variants: &Value, updated: &str) -> (Option<Value>, Option<Value>) {
    let mut usd: Map<String, Value> = Map::new();
    let mut eur: Option<Map<String, Value>> = None;
    for variant in variants.as_array().into_iter().flatten() {
        // A variant without a name (or a `null` one) is `normal`; one whose name is not
        // text is not served.
        let name = match variant.get("name") {
            None | Some(Value::Null) => "normal",
            Some(Value::String(name)) => name,
            Some(_) => continue,
        };
        for price in variant
            .get("prices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Folded as `q` folds a value (case, width, accents).
            let is = |k: &str, v: &str| {
                price
                    .get(k)
                    .and_then(Value::as_str)
                    .is_some_and(|s| fold(s) == v)
            };
            let near_mint =
                is("condition", "nm") || price.get("condition").is_none_or(Value::is_null);
            if !is("type", "raw") || !near_mint {
                continue;
            }
            let figures: Vec<(&str, &str)> = if is("currency", "usd") {
                super::query::TCGPLAYER_FIGURES
                    .iter()
                    .map(|&f| (f, f))
                    .collect()
            } else if is("currency", "eur") {
                super::query::CARDMARKET_FIGURES.to_vec()
            } else {
                continue;
            };
            let into = if is("currency", "usd") {
                usd.entry(name.to_string())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
            } else {
                Some(eur.get_or_insert_with(Map::new))
            };
            let Some(into) = into else {
                continue;
            };
            for (to, from) in figures {
                // As written (a string, `true`, a list): served as it is searched.
                if let Some(v) = price.get(from).filter(|v| !v.is_null()) {
                    into.entry(to.to_string()).or_insert_with(|| v.clone());
                }
            }
        }
    }
    let tcgplayer =
        (!usd.is_empty()).then(|| json!({ "url": "", "updatedAt": updated, "prices": usd }));
    let eur = eur.map(|figures| json!({ "url": "", "updatedAt": updated, "prices": figures }));
    (tcgplayer, eur)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A card's own `set`, `tcgplayer` and `cardmarket`, and a set's own `ptcgo_code`
    /// beside its `code`, come out once each: a v2 record never has a key twice.
    #[test]
    fn a_v2_record_has_each_key_once() {
        let dir = crate::server::testing::scratch("v2-view", "own-members");
        let write = |path: &str, text: &str| {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "pokemon/expansions/sets.json",
            r#"[{"id":"x","name":"X","code":"XC","ptcgo_code":"XP"},{"id":"y","name":"Y","code":"YC"}]"#,
        );
        write(
            "pokemon/cards/x.json",
            r#"[{"id":"x-1","expansion_id":"x","name":"N","set":"mine","number":"1","tcgplayer":{"url":"u"},"odd\"key":1,
                 "variants":[{"name":"normal","prices":[
                     {"type":"raw","condition":"NM","currency":"USD","market":1.5},
                     {"type":"raw","condition":"NM","currency":"EUR","market":1.25}]}]}]"#,
        );
        let engine = Arc::new(Engine::open(&dir).unwrap());
        let catalog = engine.catalog("pokemon").unwrap();
        let view = V2View::build(&engine, catalog);
        let card = view.with_card(0, str::to_string).unwrap();
        let mut t = Transcoder::default();
        t.record(&card).unwrap_or_else(|e| panic!("{e}: {card}"));
        let card: Value = serde_json::from_str(&card).unwrap();
        assert_eq!(card["set"]["id"], "x", "{card}");
        assert_eq!(card["set"]["ptcgoCode"], "XP", "{card}");
        assert_eq!(card["tcgplayer"], json!({"url": "u"}), "{card}");
        // A key is written as the record escapes it, once.
        assert_eq!(card["odd\"key"], 1, "{card}");
        assert_eq!(card["cardmarket"]["prices"]["trendPrice"], 1.25, "{card}");
        for (id, code) in [(0, "XP"), (1, "YC")] {
            let set = view.with_set(id, str::to_string).unwrap();
            t.record(&set).unwrap_or_else(|e| panic!("{e}: {set}"));
            let set: Value = serde_json::from_str(&set).unwrap();
            assert_eq!(set["ptcgoCode"], code, "{set}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A view of a compressed engine serves every card and set as the plain engine's view
    /// does, and holds them in less memory.
    #[test]
    fn a_compressed_engines_view_holds_the_same_records_in_less() {
        let data = crate::generate::scratch_snapshot("cardex-v2-view", 2000);
        let plain = Arc::new(Engine::open(&data).unwrap());
        let compressed = crate::OpenOptions::new().store(crate::StoreKind::Compressed);
        let packed = Arc::new(Engine::open_with(&data, &compressed, |_| {}).unwrap());
        let (a, b) = (
            plain.catalogs().next().unwrap(),
            packed.catalogs().next().unwrap(),
        );
        let (plain_view, packed_view) = (V2View::build(&plain, a), V2View::build(&packed, b));
        let mut cards = 0;
        for id in 0..a.cards().len() as u32 {
            let text = plain_view.with_card(id, str::to_string);
            assert_eq!(packed_view.with_card(id, str::to_string), text);
            assert_eq!(packed_view.has(true, id), text.is_some());
            cards += usize::from(text.is_some());
        }
        for id in 0..a.expansions().len() as u32 {
            let text = plain_view.with_set(id, str::to_string);
            assert_eq!(packed_view.with_set(id, str::to_string), text);
            assert_eq!(packed_view.has(false, id), text.is_some());
        }
        assert!(cards > 10, "{cards} cards");
        assert_eq!(plain_view.card_fields(), packed_view.card_fields());
        assert!(
            packed_view.heap_bytes() < plain_view.heap_bytes() / 2,
            "{} against {}",
            packed_view.heap_bytes(),
            plain_view.heap_bytes()
        );
        let _ = std::fs::remove_dir_all(data);
    }

    #[test]
    fn raw_near_mint_prices_become_tcgplayer_and_cardmarket() {
        let variants = json!([
            {"name": "holofoil", "prices": [
                {"type": "raw", "condition": "NM", "currency": "USD", "low": 1.0, "market": 2.5},
                {"type": "raw", "condition": "LP", "currency": "USD", "low": 0.5, "market": 1.0},
                {"type": "graded", "company": "PSA", "grade": "10", "currency": "USD", "market": 90.0},
                {"type": "raw", "condition": "NM", "currency": "EUR", "low": 0.9, "market": 2.0}
            ]},
            {"name": "reverseHolofoil", "prices": [
                {"type": "raw", "condition": "NM", "currency": "USD", "mid": 3.0, "high": 4.0},
                {"type": "raw", "condition": null, "currency": "usd", "low": "2", "market": true}
            ]}
        ]);
        let (tcgplayer, cardmarket) = market_prices(&variants, "2026/11/25");
        assert_eq!(
            tcgplayer.unwrap(),
            json!({"url": "", "updatedAt": "2026/11/25", "prices": {
                "holofoil": {"low": 1.0, "market": 2.5},
                "reverseHolofoil": {"mid": 3.0, "high": 4.0, "low": "2", "market": true}
            }})
        );
        assert_eq!(
            cardmarket.unwrap(),
            json!({"url": "", "updatedAt": "2026/11/25",
                   "prices": {"averageSellPrice": 2.0, "lowPrice": 0.9, "trendPrice": 2.0}})
        );
        assert_eq!(
            market_prices(&json!([{"name": "normal"}]), ""),
            (None, None)
        );
    }
}
