//! Default order, `order_by`, and paging (docs/spec/contract.md).

mod support;

use cardex::SearchRequest;
use support::{catalog, ids, ids_with, json, oracle};

/// The raw cards of a catalog of the bundled snapshot and its expansions.
fn raw(catalog_name: &str) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let read = |sub: &str| -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(support::data_dir().join(catalog_name).join(sub)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            out.extend(serde_json::from_str::<Vec<serde_json::Value>>(&text).unwrap());
        }
        out
    };
    (read("cards"), read("expansions"))
}

#[test]
fn default_order_matches_the_contract() {
    for name in ["pokemon", "onepiece", "lorcana"] {
        let (mut cards, expansions) = raw(name);
        oracle::default_order(&mut cards, &expansions);
        let expected: Vec<String> = cards
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids(name, ""), expected, "{name}");
    }
}

#[test]
fn numbers_sort_naturally_and_missing_numbers_go_last() {
    assert_eq!(
        ids("pokemon", "expansion_id:ltc"),
        [
            "ltc-2",
            "ltc-10",
            "ltc-10a",
            "ltc-101",
            "ltc-TG05",
            "ltc-TG12",
            "ltc-promo1"
        ]
    );
}

#[test]
fn pages_never_repeat_or_skip() {
    // Page through with every page size and every ordering: the pages add up to the
    // single-page answer (pokemon-tcg-data #619).
    for order in [
        None,
        Some("number"),
        Some("-number"),
        Some("rarity,-hp"),
        Some("name"),
    ] {
        let mut req = SearchRequest::new("");
        req.order_by = order;
        let whole = ids_with("pokemon", req.page_size(100));
        assert_eq!(whole.len(), 34);
        for size in [1, 3, 7, 10, 33] {
            let paged = ids_with("pokemon", req.page_size(size));
            assert_eq!(paged, whole, "order {order:?}, page size {size}");
        }
    }
}

#[test]
fn page_past_the_end_is_empty_with_the_true_total() {
    let c = catalog("onepiece");
    let page = c
        .search(&SearchRequest::new("").page(99).page_size(10))
        .unwrap();
    assert_eq!((page.count(), page.total_count(), page.page()), (0, 14, 99));
    assert_eq!(
        page.to_json(),
        r#"{"data":[],"page":99,"page_size":10,"count":0,"total_count":14}"#
    );
    let page = c
        .search(&SearchRequest::new("").page(2).page_size(10))
        .unwrap();
    assert_eq!((page.count(), page.total_count()), (4, 14));
}

#[test]
fn envelope_fields() {
    let c = catalog("onepiece");
    let page = c
        .search(&SearchRequest::new("rarity_code:SR").page_size(2))
        .unwrap();
    let v = json(&page.to_json());
    assert_eq!(v["page"], 1);
    assert_eq!(v["page_size"], 2);
    assert_eq!(v["count"], 2);
    assert_eq!(v["total_count"], 3);
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(
        serde_json::to_value(&page).unwrap(),
        v,
        "Serialize writes the same envelope"
    );
}

fn values(catalog_name: &str, order: &str, field: &str) -> Vec<serde_json::Value> {
    let c = catalog(catalog_name);
    let page = c.search(&SearchRequest::new("").order_by(order)).unwrap();
    page.items().map(|i| json(i)[field].clone()).collect()
}

#[test]
fn order_by_numbers_strings_and_missing() {
    // JSON numbers compare numerically; records without the field come last both ways.
    let costs = values("onepiece", "cost", "cost");
    let present: Vec<i64> = costs.iter().filter_map(|v| v.as_i64()).collect();
    assert!(present.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    assert!(
        costs.iter().rev().take(2).all(|v| v.is_null()),
        "leaders have no cost: {costs:?}"
    );
    let desc = values("onepiece", "-cost", "cost");
    let present: Vec<i64> = desc.iter().filter_map(|v| v.as_i64()).collect();
    assert!(present.windows(2).all(|w| w[0] >= w[1]), "{desc:?}");
    assert!(desc.iter().rev().take(2).all(|v| v.is_null()));
    // Strings that are numbers (`hp`) sort naturally.
    let hp: Vec<u32> = values("pokemon", "hp", "hp")
        .iter()
        .filter_map(|v| v.as_str()?.parse().ok())
        .collect();
    assert!(hp.windows(2).all(|w| w[0] <= w[1]), "{hp:?}");
}

#[test]
fn order_by_several_keys_with_default_order_as_tie_breaker() {
    let c = catalog("onepiece");
    let page = c
        .search(&SearchRequest::new("").order_by("rarity_code,-power"))
        .unwrap();
    let rows: Vec<(String, Option<i64>, String)> = page
        .items()
        .map(|i| {
            let v = json(i);
            (
                v["rarity_code"].as_str().unwrap().to_string(),
                v["power"].as_i64(),
                v["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for w in rows.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!(a.0 <= b.0, "{rows:?}");
        if a.0 == b.0 {
            match (a.1, b.1) {
                (Some(x), Some(y)) => assert!(x >= y, "{rows:?}"),
                (None, Some(_)) => panic!("missing power must come last: {rows:?}"),
                _ => {}
            }
        }
    }
    // Spaces around keys are fine (pokemon-tcg-api #113), camelCase too.
    let spaced = c
        .search(&SearchRequest::new("").order_by(" rarityCode , -power "))
        .unwrap();
    assert_eq!(spaced.record_ids(), page.record_ids());
}

#[test]
fn hits_are_the_search_without_its_json() {
    // `Catalog::hits` answers every request exactly as `search` does: the same total, and
    // the record ids of the same page in the same order — default order, `order_by`, deep
    // pages, language scopes, an OR of one field's values (counted without its union).
    let requests = [
        ("onepiece", SearchRequest::new("")),
        (
            "onepiece",
            SearchRequest::new("printings:PRB01 AND rarity_code:SR"),
        ),
        (
            "onepiece",
            SearchRequest::new("rarity_code:SR OR rarity_code:SEC OR rarity_code:C").page_size(2),
        ),
        (
            "onepiece",
            SearchRequest::new("rarity_code:(SR OR SEC)")
                .page(2)
                .page_size(1),
        ),
        (
            "pokemon",
            SearchRequest::new("hp>=60")
                .order_by("-hp,name")
                .page_size(3),
        ),
        (
            "pokemon",
            SearchRequest::new("").lang("ja").page(2).page_size(4),
        ),
        ("pokemon", SearchRequest::new("rarity:common").page(99)),
    ];
    for (name, req) in requests {
        let catalog = catalog(name);
        let page = catalog.search(&req).unwrap();
        let hits = catalog.hits(&req).unwrap();
        assert_eq!(hits.total_count, page.total_count(), "{name} {req:?}");
        assert_eq!(hits.record_ids, page.record_ids(), "{name} {req:?}");
        assert_eq!(
            hits.total_count,
            catalog.count(&req).unwrap(),
            "{name} {req:?}"
        );
    }
    assert!(catalog("onepiece")
        .hits(&SearchRequest::new("rarity_code:").page(0))
        .is_err());
}

#[test]
fn expansion_card_hits_are_the_expansion_cards_without_their_json() {
    let onepiece = catalog("onepiece");
    for (id, req) in [
        ("PRB01", SearchRequest::new("")),
        (
            "PRB01",
            SearchRequest::new("rarity_code:SR").order_by("-id"),
        ),
        ("OP01", SearchRequest::new("").page(2).page_size(3)),
        ("op01", SearchRequest::new("-rarity_code:C")),
    ] {
        let page = onepiece.expansion_cards(id, &req).unwrap();
        let hits = onepiece.expansion_card_hits(id, &req).unwrap();
        assert_eq!(hits.total_count, page.total_count(), "{id} {req:?}");
        assert_eq!(hits.record_ids, page.record_ids(), "{id} {req:?}");
    }
    let err = onepiece
        .expansion_card_hits("NOPE", &SearchRequest::new(""))
        .unwrap_err();
    assert!(
        matches!(err, cardex::Error::NotFound(cardex::NotFound::Expansion { ref id }) if id == "NOPE"),
        "{err}"
    );
}
