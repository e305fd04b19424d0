//! Expansions: list, search, language scope, one by id, default order.

mod support;

#[cfg(feature = "server")]
use cardex::server::{error_code, error_status};
use cardex::{ItemRequest, SearchRequest};
use support::{catalog, json};

fn expansion_ids(catalog_name: &str, req: SearchRequest<'_>) -> Vec<String> {
    let c = catalog(catalog_name);
    let page = c.search_expansions(&req).unwrap();
    page.record_ids()
        .iter()
        .map(|&i| c.expansions().record_id(i).into_owned())
        .collect()
}

#[test]
fn default_order_is_release_date_then_id_with_missing_dates_last() {
    assert_eq!(
        expansion_ids("pokemon", SearchRequest::new("")),
        ["emc", "ltc", "bfl_ja", "ddw", "ssm_ja"]
    );
    assert_eq!(
        expansion_ids("onepiece", SearchRequest::new("")),
        ["OP01", "OP02", "PRB01"]
    );
}

#[test]
fn expansions_are_searchable_with_q() {
    assert_eq!(
        expansion_ids("onepiece", SearchRequest::new("series:\"Premium Booster\"")),
        ["PRB01"]
    );
    assert_eq!(
        expansion_ids("pokemon", SearchRequest::new("language:japanese")),
        ["bfl_ja", "ssm_ja"]
    );
    assert_eq!(
        expansion_ids("pokemon", SearchRequest::new("-language:japanese")),
        ["emc", "ltc", "ddw"]
    );
    assert_eq!(
        expansion_ids("pokemon", SearchRequest::new("total:[* TO 1000]")).len(),
        5
    );
    assert_eq!(
        expansion_ids("pokemon", SearchRequest::new("release_date:*")).len(),
        4
    );
    // Japanese expansions are found by their English name too.
    let by_english = expansion_ids(
        "pokemon",
        SearchRequest::new("translation.en.name:*").lang("ja"),
    );
    assert_eq!(by_english, ["bfl_ja", "ssm_ja"]);
}

#[test]
fn one_expansion_by_id() {
    let c = catalog("onepiece");
    let item = c.expansion("PRB01", &ItemRequest::default()).unwrap();
    let e = json(item.json());
    assert_eq!(e["id"], "PRB01");
    assert_eq!(json(&item.to_json())["data"], e);
    // Ids are looked up exactly, or when unambiguous, folded.
    assert_eq!(
        json(
            c.expansion("prb01", &ItemRequest::default())
                .unwrap()
                .json()
        )["id"],
        "PRB01"
    );
    let err = c.expansion("nope", &ItemRequest::default()).unwrap_err();
    assert!(matches!(
        err,
        cardex::Error::NotFound(cardex::NotFound::Expansion { ref id }) if id == "nope"
    ));
    #[cfg(feature = "server")]
    assert_eq!((error_status(&err), error_code(&err)), (404, "not_found"));
    let selected = c
        .expansion(
            "OP01",
            &ItemRequest {
                select: Some("name"),
                include: None,
            },
        )
        .unwrap();
    assert_eq!(json(selected.json()).as_object().unwrap().len(), 2);
}

#[test]
fn include_does_not_apply_to_expansions() {
    let c = catalog("onepiece");
    let err = c
        .search_expansions(&SearchRequest::new("").include("prices"))
        .unwrap_err();
    // An endpoint's unknown parameter, as the contract has it, listing what it takes.
    let unknown = |err: &cardex::Error, allowed: &[&str]| {
        matches!(err, cardex::Error::Parameter(p) if p.name() == "include"
            && matches!(p.kind(), cardex::ParameterErrorKind::Unknown { allowed: a } if *a == allowed))
    };
    assert!(unknown(&err, cardex::EXPANSION_LIST_PARAMETERS), "{err:?}");
    #[cfg(feature = "server")]
    assert_eq!(error_code(&err), "unknown_parameter");
    let err = c
        .expansion(
            "OP01",
            &ItemRequest {
                select: None,
                include: Some("prices"),
            },
        )
        .unwrap_err();
    assert!(unknown(&err, cardex::EXPANSION_ITEM_PARAMETERS), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unknown parameter `include`; the parameters are `select`"
    );
}

#[test]
fn order_expansions_by_field() {
    let newest = expansion_ids("pokemon", SearchRequest::new("").order_by("-release_date"));
    assert_eq!(
        newest,
        ["ddw", "bfl_ja", "ltc", "emc", "ssm_ja"],
        "missing dates stay last, even descending"
    );
    let by_name = expansion_ids("onepiece", SearchRequest::new("").order_by("name"));
    assert_eq!(by_name.len(), 3);
}

/// Cards that do not carry their expansion (the bundled layout) search and sort by its
/// fields as `expansion.<field>`, joined by `expansion_id`.
#[test]
fn cards_search_and_sort_by_their_expansions_fields() {
    use support::{ids, ids_with, search_error};
    // The cards of `expansions`, expansion by expansion, each in default order.
    let of = |expansions: &[&str]| -> Vec<String> {
        let all = ids("pokemon", "");
        expansions
            .iter()
            .flat_map(|e| {
                all.iter()
                    .filter(move |id| id.starts_with(&format!("{e}-")))
            })
            .cloned()
            .collect()
    };
    assert_eq!(
        ids("pokemon", "expansion.series:\"Scarlet & Violet\""),
        of(&["emc", "ddw"])
    );
    assert_eq!(
        ids("pokemon", "expansion.releaseDate>=2024 language_code:EN"),
        of(&["ltc", "ddw"])
    );
    // The expansion without a date: none of its cards has one.
    assert_eq!(ids("pokemon", "-expansion.release_date:*"), of(&["ssm_ja"]));
    // Newest first; a card whose expansion has no date last.
    assert_eq!(
        ids_with(
            "pokemon",
            SearchRequest::new("").order_by("-expansion.release_date")
        ),
        of(&["ddw", "bfl_ja", "ltc", "emc", "ssm_ja"])
    );
    let err = search_error("pokemon", SearchRequest::new("expansion.nmae:x"));
    assert!(
        err.starts_with("unknown field `expansion.nmae` (did you mean `expansion.name`?)"),
        "{err}"
    );
    let err = search_error("pokemon", SearchRequest::new("").order_by("expansion.nmae"));
    assert!(err.contains("(did you mean `expansion.name`?)"), "{err}");
}

/// A field the cards carry in an `expansion` of their own (as imported catalogs do, a
/// summary) is searched and sorted on as they carry it, not joined, for every card (one
/// without it has none there); a field no card carries is the expansion's, joined.
#[test]
fn a_field_the_cards_carry_is_theirs_and_the_others_are_joined() {
    let dir = support::TempDir::new("join");
    dir.write(
        "own/expansions/e.json",
        r#"[{"id": "e1", "name": "Other", "code": "X1", "legalities": {"standard": "Legal"}, "updated_at": "2024/02/01 10:00:00"},
            {"id": "e2", "name": "Second", "code": "X2", "legalities": {"standard": "Not Legal"}, "updated_at": "2023/05/01 10:00:00"}]"#,
    );
    dir.write(
        "own/cards/c.json",
        r#"[{"id": "a", "expansion_id": "e1", "expansion": {"name": "Own"}},
            {"id": "b", "expansion_id": "e2", "expansion": {"name": "Second", "code": "Y2"}}]"#,
    );
    dir.write(
        "joined/expansions/e.json",
        r#"[{"id": "e1", "name": "Base", "release_date": "2020/01/01"}, {"id": "e2"}]"#,
    );
    dir.write(
        "joined/cards/c.json",
        r#"[{"id": "a", "expansion_id": "e2"}, {"id": "b", "expansion_id": "e1"}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let found = |catalog: &str, q: &str, order_by: &str| -> Vec<String> {
        let c = engine.catalog(catalog).unwrap();
        let page = c.search(&SearchRequest::new(q).order_by(order_by)).unwrap();
        support::page_ids(c, &page)
    };
    assert_eq!(found("own", "expansion.name:own", ""), ["a"]);
    assert_eq!(
        found("own", "expansion.name:other", ""),
        Vec::<String>::new()
    );
    // `code` is carried by one card: the cards' own, so `a` has none.
    assert_eq!(found("own", "expansion.code:y2", ""), ["b"]);
    assert_eq!(found("own", "expansion.code:x1", ""), Vec::<String>::new());
    assert_eq!(found("own", "-expansion.code:*", ""), ["a"]);
    // No card carries `legalities` or `updated_at`: their expansion's, in any case.
    assert_eq!(
        found("own", "expansion.legalities.standard:legal", ""),
        ["a"]
    );
    assert_eq!(
        found("own", "EXPANSION.Legalities.Standard:\"not legal\"", ""),
        ["b"]
    );
    assert_eq!(found("own", "expansion.updated_at>=2024", ""), ["a"]);
    assert_eq!(found("own", "", "expansion.updated_at"), ["b", "a"]);
    assert_eq!(found("own", "", "-Expansion.Updated_At"), ["a", "b"]);
    let c = engine.catalog("own").unwrap();
    assert!(c.joins_expansions());
    let fields = c.card_order_fields();
    for field in ["expansion.name", "expansion.code", "expansion.updated_at"] {
        assert_eq!(
            fields.iter().filter(|f| *f == field).count(),
            1,
            "{field}: {fields:?}"
        );
    }
    assert_eq!(found("joined", "expansion.name:base", ""), ["b"]);
    assert_eq!(found("joined", "-expansion.name:*", ""), ["a"]);
    assert_eq!(found("joined", "", "-expansion.release_date"), ["b", "a"]);
}

#[test]
fn the_cards_of_an_expansion_whose_id_differs_from_another_in_case_only_are_its_own() {
    let dir = support::TempDir::new("case_ids");
    dir.write(
        "c/expansions/e.json",
        r#"[{"id": "ab", "name": "Lower"}, {"id": "AB", "name": "Upper"}, {"id": "cd", "name": "Alone"}]"#,
    );
    dir.write(
        "c/cards/c.json",
        r#"[{"id": "1", "expansion_id": "ab"}, {"id": "2", "expansion_id": "AB"},
            {"id": "3", "expansion_id": "cd", "printings": ["cd", "AB"]}, {"id": "4", "expansion_id": "cd"}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let c = engine.catalog("c").unwrap();
    let cards_of = |id: &str| -> Vec<String> {
        let page = c.expansion_cards(id, &SearchRequest::new("")).unwrap();
        let hits = c.expansion_card_hits(id, &SearchRequest::new("")).unwrap();
        let ids = support::page_ids(c, &page);
        assert_eq!(hits.ids(c.cards()).collect::<Vec<_>>(), ids);
        ids
    };
    assert_eq!(cards_of("ab"), ["1"]);
    assert_eq!(cards_of("AB"), ["2", "3"]);
    // An id no other expansion shares in any case still resolves and matches folded.
    assert_eq!(cards_of("CD"), ["3", "4"]);
    // Neither `ab` nor `AB` is the one `Ab` means.
    let err = c
        .expansion_cards("Ab", &SearchRequest::new(""))
        .unwrap_err();
    assert_eq!(err.to_string(), "no expansion with id `Ab`");
    // A term on the joined expansion finds the cards of that expansion only.
    let found = |q: &str| -> Vec<String> {
        let page = c.search(&SearchRequest::new(q)).unwrap();
        support::page_ids(c, &page)
    };
    assert_eq!(found("expansion.name:upper"), ["2"]);
    assert_eq!(found("expansion.name:lower"), ["1"]);
    assert_eq!(found("expansion.name:alone"), ["3", "4"]);
}
