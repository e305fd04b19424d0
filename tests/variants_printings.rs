//! Variants, printings, prices and pop reports (docs/spec/card-data-service.md, docs/spec/contract.md), and what
//! `include` and `select` serve.

mod support;

#[cfg(feature = "server")]
use cardex::server::error_status;
use cardex::{ItemRequest, SearchRequest};
use support::{catalog, ids, json};

fn card(id: &str, include: Option<&str>) -> serde_json::Value {
    let req = ItemRequest {
        select: None,
        include,
    };
    json(catalog("onepiece").card(id, &req).unwrap().json())
}

fn raw_record(catalog: &str, file: &str, id: &str) -> serde_json::Value {
    let path = support::data_dir().join(catalog).join("cards").join(file);
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all.into_iter().find(|c| c["id"] == id).unwrap()
}

#[test]
fn served_printings_follow_the_rule() {
    // Explicit card-level printings, kept.
    assert_eq!(
        card("OP01-013", None)["printings"],
        serde_json::json!(["OP01", "PRB01"])
    );
    // No card-level printings: [expansion_id] united with the variants' printings.
    assert_eq!(
        card("OP01-016", None)["printings"],
        serde_json::json!(["OP01", "PRB01"])
    );
    assert_eq!(
        card("OP02-013", None)["printings"],
        serde_json::json!(["OP02", "PRB01"])
    );
    // Never reprinted.
    assert_eq!(
        card("OP01-001", None)["printings"],
        serde_json::json!(["OP01"])
    );
}

#[test]
fn a_reprint_carries_its_own_variant() {
    let zoro = card("OP01-013", Some("prices"));
    let reprint: Vec<&serde_json::Value> = zoro["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| {
            v.get("printings")
                .is_some_and(|p| p.as_array().unwrap().iter().any(|x| x == "PRB01"))
        })
        .collect();
    assert_eq!(reprint.len(), 1);
    assert_eq!(
        ids("onepiece", "variants.printings:PRB01"),
        ids("onepiece", "printings:PRB01")
    );
}

#[test]
fn every_field_is_served_as_given() {
    // Without include, the served card is the snapshot record less its variants' prices
    // and pop reports; with both, it is the record itself.
    for (file, id) in [
        ("OP01.json", "OP01-120"),
        ("OP02.json", "OP02-013"),
        ("OP01.json", "OP01-001"),
    ] {
        let mut raw = raw_record("onepiece", file, id);
        let mut served = card(id, Some("prices,pop_reports"));
        served.as_object_mut().unwrap().remove("printings");
        raw.as_object_mut().unwrap().remove("printings");
        assert_eq!(served, raw, "{id}");
        let plain = card(id, None);
        for variant in plain["variants"].as_array().unwrap() {
            assert!(
                variant.get("prices").is_none() && variant.get("pop_reports").is_none(),
                "{id}"
            );
            assert!(variant.get("name").is_some(), "{id}");
        }
    }
}

#[test]
fn include_selects_optional_parts() {
    let shanks = |include| card("OP01-120", include);
    let count = |v: &serde_json::Value, part: &str| {
        v["variants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x.get(part).is_some())
            .count()
    };
    assert_eq!(
        (
            count(&shanks(None), "prices"),
            count(&shanks(None), "pop_reports")
        ),
        (0, 0)
    );
    let prices = shanks(Some("prices"));
    assert!(count(&prices, "prices") > 0);
    assert_eq!(count(&prices, "pop_reports"), 0);
    let pops = shanks(Some("pop_reports"));
    assert_eq!(count(&pops, "prices"), 0);
    assert!(count(&pops, "pop_reports") > 0);
    // camelCase and spaces are accepted.
    assert_eq!(
        shanks(Some(" popReports , prices ")),
        shanks(Some("prices,pop_reports"))
    );
}

#[test]
fn prices_are_searchable_without_include() {
    // Searching reads every field; include only changes what is served.
    assert_eq!(
        ids(
            "onepiece",
            "variants.prices.company:CGC variants.prices.is_perfect:true"
        ),
        ["OP01-120"]
    );
    assert_eq!(
        ids("onepiece", "variants.pop_reports.grades.grade:10").len(),
        4
    );
    assert_eq!(
        ids(
            "onepiece",
            "variants.name:\"Manga Alt Art\" variants.prices.type:graded"
        ),
        ["OP01-120"]
    );
}

#[test]
fn select_keeps_top_level_fields_and_the_id() {
    let c = catalog("onepiece");
    let page = c
        .search(&SearchRequest::new("nami").select("name,rarity"))
        .unwrap();
    assert_eq!(
        page.items().collect::<Vec<_>>(),
        [r#"{"id":"OP01-016","name":"Nami","rarity":"Common"}"#]
    );
    let page = c
        .search(&SearchRequest::new("nami").select("rarityCode"))
        .unwrap();
    assert_eq!(
        page.items().collect::<Vec<_>>(),
        [r#"{"id":"OP01-016","rarity_code":"C"}"#]
    );
    // Selected variants still leave prices out unless included.
    let page = c
        .search(&SearchRequest::new("shanks").select("variants"))
        .unwrap();
    assert!(!page.data_json().contains("\"prices\""));
    let page = c
        .search(
            &SearchRequest::new("shanks")
                .select("variants")
                .include("prices"),
        )
        .unwrap();
    assert!(page.data_json().contains("\"prices\""));
    let item = c
        .card(
            "OP01-016",
            &ItemRequest {
                select: Some("name"),
                include: None,
            },
        )
        .unwrap();
    assert_eq!(
        item.to_json(),
        r#"{"data":{"id":"OP01-016","name":"Nami"}}"#
    );
}

#[test]
fn cards_of_an_expansion_include_its_reprints() {
    let c = catalog("onepiece");
    let page = c.expansion_cards("PRB01", &SearchRequest::new("")).unwrap();
    assert_eq!(
        support::page_ids(c, &page),
        ["OP01-013", "OP01-016", "OP01-061", "OP02-013"]
    );
    let page = c
        .expansion_cards("PRB01", &SearchRequest::new("rarity_code:SR"))
        .unwrap();
    assert_eq!(support::page_ids(c, &page), ["OP01-013", "OP02-013"]);
    let page = c.expansion_cards("OP02", &SearchRequest::new("")).unwrap();
    assert_eq!(
        page.total_count() as usize,
        ids("onepiece", "expansion_id:OP02").len()
    );
    let err = c
        .expansion_cards("OP99", &SearchRequest::new(""))
        .unwrap_err();
    assert_eq!(err.to_string(), "no expansion with id `OP99`");
    #[cfg(feature = "server")]
    assert_eq!(error_status(&err), 404);
}

#[test]
fn japanese_prices_keep_their_currency() {
    assert_eq!(
        support::ids_with(
            "pokemon",
            SearchRequest::new("variants.prices.currency:JPY").lang("ja")
        )
        .len(),
        support::ids("pokemon", "variants.prices.currency:JPY").len()
    );
    assert!(support::ids_with(
        "pokemon",
        SearchRequest::new("variants.prices.currency:JPY").lang("en")
    )
    .is_empty());
}
