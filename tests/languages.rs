//! Language scoping (`/pokemon/v1/en/...`, `/ja/...`) and the translation rules of spec
//! 2.3 on the bundled snapshot.

mod support;

#[cfg(feature = "server")]
use cardex::server::{error_code, error_status};
use cardex::{Error, ItemRequest, NotFound, SearchRequest};
use support::{catalog, ids, ids_with, json};

fn scoped(lang: &str, q: &str) -> Vec<String> {
    ids_with("pokemon", SearchRequest::new(q).lang(lang))
}

#[test]
fn scopes_split_the_catalog_by_language_code() {
    let all = ids("pokemon", "");
    let en = scoped("en", "");
    let ja = scoped("ja", "");
    assert_eq!((all.len(), en.len(), ja.len()), (34, 24, 10));
    assert!(ja.iter().all(|id| id.contains("_ja-")));
    assert!(en.iter().all(|id| !id.contains("_ja")));
    // Language codes compare case-insensitively.
    assert_eq!(scoped("JA", ""), ja);
    // The scope is the universe: NOT stays inside it.
    assert_eq!(
        scoped("ja", "-name:ピカチュウ").len(),
        ja.len() - scoped("ja", "name:ピカチュウ").len()
    );
    assert_eq!(
        scoped("en", "NOT supertype:pokemon"),
        ["emc-172", "emc-230", "ltc-101", "ddw-204"]
    );
}

#[test]
fn japanese_cards_carry_translation_en() {
    let c = catalog("pokemon");
    let card = json(c.card("bfl_ja-4", &ItemRequest::default()).unwrap().json());
    assert_eq!(card["name"], "リザードンex");
    assert_eq!(card["translation"]["en"]["name"], "Charizard ex");
    assert_eq!(card["language_code"], "JA");
    // English equivalents are searchable through their path.
    assert_eq!(
        scoped("ja", "translation.en.name:charizard"),
        ["bfl_ja-4", "bfl_ja-90"]
    );
    assert_eq!(
        ids("pokemon", "translation.en.types:fire").len(),
        ids("pokemon", "types:炎").len()
    );
}

#[test]
fn a_missing_japanese_property_holds_the_english_value() {
    // ssm_ja-39 has no `name` of its own: it is served and found as "Mewtwo" (rule 4).
    let c = catalog("pokemon");
    let card = json(c.card("ssm_ja-39", &ItemRequest::default()).unwrap().json());
    assert_eq!(card["name"], "Mewtwo");
    assert_eq!(scoped("ja", "name:mewtwo"), ["ssm_ja-39"]);
}

#[test]
fn a_japanese_card_is_found_by_rarity_only_through_its_translation() {
    // bfl_ja-78 has no rarity; translation.en.rarity is "Illustration Rare".
    assert_eq!(scoped("ja", "rarity:\"Illustration Rare\""), ["bfl_ja-78"]);
    let card = json(
        catalog("pokemon")
            .card("bfl_ja-78", &ItemRequest::default())
            .unwrap()
            .json(),
    );
    assert_eq!(card["rarity"], "Illustration Rare");
    // A translation never overrides a value the card has.
    let charizard = json(
        catalog("pokemon")
            .card("bfl_ja-4", &ItemRequest::default())
            .unwrap()
            .json(),
    );
    assert_ne!(
        charizard["rarity"],
        charizard["translation"]["en"]["rarity"]
    );
}

#[test]
fn a_missing_translation_yields_no_data() {
    // ssm_ja-38's translation has no attacks: its attacks stay Japanese, and it has no
    // translation.en.attacks to find.
    let card = json(
        catalog("pokemon")
            .card("ssm_ja-38", &ItemRequest::default())
            .unwrap()
            .json(),
    );
    assert!(card["translation"]["en"].get("attacks").is_none());
    assert!(!scoped("ja", "translation.en.attacks.name:*").contains(&"ssm_ja-38".to_string()));
}

#[test]
fn expansions_are_scoped_too() {
    let c = catalog("pokemon");
    let ja = c
        .search_expansions(&SearchRequest::new("").lang("ja"))
        .unwrap();
    let ja: Vec<String> = ja
        .record_ids()
        .iter()
        .map(|&i| c.expansions().record_id(i).into_owned())
        .collect();
    assert_eq!(ja, ["bfl_ja", "ssm_ja"]);
    let en = c
        .search_expansions(&SearchRequest::new("").lang("en"))
        .unwrap();
    assert_eq!(en.total_count(), 3);
    assert_eq!(
        c.search_expansions(&SearchRequest::new(""))
            .unwrap()
            .total_count(),
        5
    );
}

#[test]
fn unknown_language_and_catalog_without_languages() {
    assert_eq!(catalog("pokemon").languages(), ["en", "ja"]);
    assert!(catalog("onepiece").languages().is_empty());
    match catalog("pokemon").search(&SearchRequest::new("").lang("fr")) {
        Err(Error::NotFound(NotFound::Language { known, .. })) => assert_eq!(known, ["en", "ja"]),
        other => panic!("{other:?}"),
    }
    let err = support::search_error("pokemon", SearchRequest::new("").lang("fr"));
    assert_eq!(
        err,
        "unknown language `fr` for catalog `pokemon`; its languages are `en`, `ja`"
    );
    let err = support::search_error("onepiece", SearchRequest::new("").lang("en"));
    assert_eq!(err, "catalog `onepiece` has no language scopes, so `en` cannot scope it; leave the language out");
    let e = catalog("onepiece")
        .search(&SearchRequest::new("").lang("en"))
        .unwrap_err();
    assert!(matches!(e, Error::NotFound(NotFound::Language { .. })));
    #[cfg(feature = "server")]
    assert_eq!((error_status(&e), error_code(&e)), (404, "not_found"));
}
