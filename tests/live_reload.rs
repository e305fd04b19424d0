//! `LiveEngine` as a library user sees it, without the server: reloads swap
//! atomically, a refused snapshot keeps the old engine, the report names exactly the
//! changed expansions, and every event name of the service (docs/spec/card-data-service.md, webhooks) can be produced.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use cardex::LoadErrorKind;
use cardex::SearchRequest;
use cardex::{ChangeKind, Engine, LiveEngine, OpenOptions, StoreKind};
use serde_json::{json, Value};

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn snapshot_copy(name: &str) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("cardex-live-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    support::copy_tree(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data")),
        &dir,
    );
    dir
}

/// Rewrites every card file of `catalog`, letting `edit` change each card.
fn edit_cards(data: &Path, catalog: &str, mut edit: impl FnMut(&mut Value)) {
    for entry in std::fs::read_dir(data.join(catalog).join("cards")).unwrap() {
        let path = entry.unwrap().path();
        let mut cards: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for card in cards.as_array_mut().unwrap() {
            edit(card);
        }
        std::fs::write(&path, serde_json::to_string_pretty(&cards).unwrap()).unwrap();
    }
}

fn market(engine: &cardex::Engine, id: &str) -> Value {
    let card = engine
        .catalog("pokemon")
        .unwrap()
        .card(
            id,
            &cardex::ItemRequest {
                select: None,
                include: Some("prices"),
            },
        )
        .unwrap();
    let card: Value = serde_json::from_str(&card.to_json()).unwrap();
    card["data"]["variants"][0]["prices"][0]["market"].clone()
}

#[test]
fn a_reload_swaps_reports_and_a_broken_snapshot_keeps_the_old_engine() {
    let data = snapshot_copy("swap");
    let live = LiveEngine::open(&data).unwrap();
    let before = live.current();
    assert_eq!(market(&before, "ddw-3"), 9.8);
    edit_cards(&data, "pokemon", |c| {
        if c["id"] == "ddw-3" {
            c["variants"][0]["prices"][0]["market"] = json!(12.25);
        }
    });
    let report = live.reload().unwrap();
    assert_eq!(report.changes.len(), 1);
    assert_eq!(report.changes[0].catalog, "pokemon");
    assert_eq!(report.changes[0].raw_prices, ["ddw"]);
    assert!(report.changes[0].graded_prices.is_empty());
    assert!(report.changes[0].pop_reports.is_empty());
    assert!(report.cards.iter().any(|(c, n)| c == "pokemon" && *n == 34));
    // The engine held before the reload still answers the old data; a new one the new.
    assert_eq!(market(&before, "ddw-3"), 9.8);
    assert_eq!(market(&live.current(), "ddw-3"), 12.25);
    let mut n = 0;
    let events = report.events(|| {
        n += 1;
        format!("evt_{n}")
    });
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].to_json(),
        r#"{"id":"evt_1","name":"pokemon.expansions.prices.raw_updated","data":{"expansion_ids":["ddw"]}}"#
    );
    // A broken snapshot: refused with its typed error, the current engine unchanged.
    let serving = live.current();
    let file = data.join("onepiece/cards/OP01.json");
    std::fs::write(&file, "[{\"id\": \"OP01-001\",").unwrap();
    let e = live.reload().unwrap_err();
    assert!(matches!(e.kind(), LoadErrorKind::Json { .. }), "{e}");
    assert!(e.to_string().contains("OP01.json"), "{e}");
    assert!(Arc::ptr_eq(&serving, &live.current()));
    // A duplicate id is refused too, and nothing of it is served.
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/data/onepiece/cards/OP01.json"),
        &file,
    )
    .unwrap();
    std::fs::copy(&file, data.join("onepiece/cards/OP01-again.json")).unwrap();
    assert!(live.reload().is_err());
    assert!(Arc::ptr_eq(&serving, &live.current()));
    // Repaired: the reload compares with the last good load, so nothing changed.
    std::fs::remove_file(data.join("onepiece/cards/OP01-again.json")).unwrap();
    let report = live.reload().unwrap();
    assert!(report.changes.is_empty(), "{:?}", report.changes);
    std::fs::remove_dir_all(&data).unwrap();
}

#[test]
fn a_compressed_engine_reloads_compressed_and_reports_the_same_changes() {
    let data = snapshot_copy("compressed");
    let options = OpenOptions::new().store(StoreKind::Compressed);
    let live = LiveEngine::new(Engine::open_with(&data, &options, |_| {}).unwrap());
    let plain = LiveEngine::open(&data).unwrap();
    assert_eq!(market(&live.current(), "ddw-3"), 9.8);
    edit_cards(&data, "pokemon", |c| {
        if c["id"] == "ddw-3" {
            c["variants"][0]["prices"][0]["market"] = json!(12.25);
        }
    });
    let report = live.reload().unwrap();
    assert_eq!(report.changes, plain.reload().unwrap().changes);
    assert_eq!(report.changes[0].raw_prices, ["ddw"]);
    let engine = live.current();
    assert_eq!(engine.options().store, StoreKind::Compressed);
    assert_eq!(market(&engine, "ddw-3"), 12.25);
    let page = |e: &Engine| {
        let req = SearchRequest::new("variants.prices.market>10").include("prices");
        e.catalog("pokemon")
            .unwrap()
            .search(&req)
            .unwrap()
            .to_json()
    };
    assert_eq!(page(&engine), page(&plain.current()));
    std::fs::remove_dir_all(&data).unwrap();
}

#[test]
fn every_event_name_of_the_spec_can_be_produced() {
    let data = snapshot_copy("names");
    let live = LiveEngine::open(&data).unwrap();
    // In every catalog, add one record of each kind to the first card's first variant.
    for catalog in ["pokemon", "onepiece", "lorcana"] {
        let mut first = true;
        edit_cards(&data, catalog, |c| {
            if !std::mem::take(&mut first) {
                return;
            }
            let variant = &mut c["variants"][0];
            let prices = variant["prices"].as_array().cloned().unwrap_or_default();
            let mut prices = prices;
            prices.push(json!({"type": "raw", "condition": "LP", "market": 1.0}));
            prices.push(json!({"type": "graded", "company": "BGS", "grade": "9.5", "market": 2.0}));
            variant["prices"] = Value::Array(prices);
            variant["pop_reports"] =
                json!([{"company": "BGS", "total": 1, "grades": [{"grade": "9.5", "count": 1}]}]);
        });
    }
    let report = live.reload().unwrap();
    let events = report.events(|| "evt".into());
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    let mut expected = Vec::new();
    for catalog in ["lorcana", "onepiece", "pokemon"] {
        for kind in ChangeKind::ALL {
            expected.push(kind.event_name(catalog));
        }
    }
    assert_eq!(names, expected);
    // Each names exactly one expansion: the one its card's first variant counts for.
    for e in &events {
        assert_eq!(e.data.expansion_ids.len(), 1, "{e:?}");
    }
    std::fs::remove_dir_all(&data).unwrap();
}

/// One search's view of expansion ddw: how many cards, and ddw-3's first price.
fn ddw_view(engine: &cardex::Engine) -> (u64, f64) {
    let request = SearchRequest::new("expansion_id:ddw").include("prices");
    let page = engine.catalog("pokemon").unwrap().search(&request).unwrap();
    let ddw3 = page.items().find(|i| i.contains("\"ddw-3\"")).unwrap();
    let card: Value = serde_json::from_str(ddw3).unwrap();
    let market = card["variants"][0]["prices"][0]["market"].as_f64().unwrap();
    (page.total_count(), market)
}

/// Searches running while the snapshot flips between two versions see one version or
/// the other in each answer, never a mix: the count and the page come from one engine.
#[test]
fn searches_during_reloads_see_one_snapshot_or_the_other() {
    let data = snapshot_copy("flip");
    let live = Arc::new(LiveEngine::open(&data).unwrap());
    let original = std::fs::read_to_string(data.join("pokemon/cards/ddw.json")).unwrap();
    // Version B drops every ddw card but ddw-3 and prices ddw-3 at 1.0.
    let mut cards: Vec<Value> = serde_json::from_str(&original).unwrap();
    cards.retain(|c| c["id"] == "ddw-3");
    cards[0]["variants"][0]["prices"][0]["market"] = json!(1.0);
    let version_b = serde_json::to_string(&cards).unwrap();
    let a = ddw_view(&live.current());
    assert_eq!(a.1, 9.8);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (live, stop) = (live.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut answers = std::collections::BTreeSet::new();
                while !stop.load(Ordering::Relaxed) {
                    let (count, market) = ddw_view(&live.current());
                    answers.insert((count, market.to_bits()));
                }
                answers
            })
        })
        .collect();
    let started = std::time::Instant::now();
    let mut round = 0;
    while round < 20 || started.elapsed() < std::time::Duration::from_millis(300) {
        let text = if round % 2 == 0 {
            &version_b
        } else {
            &original
        };
        round += 1;
        std::fs::write(data.join("pokemon/cards/ddw.json"), text).unwrap();
        let report = live.reload().unwrap();
        assert_eq!(report.changes.len(), 1);
    }
    stop.store(true, Ordering::Relaxed);
    let b = (1, 1.0f64);
    let mut union = std::collections::BTreeSet::new();
    for reader in readers {
        for (count, market) in reader.join().unwrap() {
            let pair = (count, f64::from_bits(market));
            assert!(pair == a || pair == b, "a mixed answer: {pair:?}");
            union.insert((count, market));
        }
    }
    assert_eq!(union.len(), 2, "the readers saw both versions");
    std::fs::remove_dir_all(&data).unwrap();
}
