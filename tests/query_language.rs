//! The `q` language on the bundled snapshot: every example of the spec and the contract
//! as written, and the matching rules of the contract (docs/spec/contract.md).

mod support;

use cardex::SearchRequest;
use support::{ids, ids_with};

#[test]
fn spec_printings_and_rarity_code() {
    assert_eq!(
        ids("onepiece", "printings:PRB01 AND rarity_code:SR"),
        ["OP01-013", "OP02-013"]
    );
    // Implicit AND means the same.
    assert_eq!(
        ids("onepiece", "printings:PRB01 rarity_code:SR"),
        ["OP01-013", "OP02-013"]
    );
}

#[test]
fn spec_rarity_name_with_spaces_is_quoted() {
    assert_eq!(
        ids("onepiece", r#"rarity:"Super Rare""#),
        ["OP01-013", "OP01-047", "OP02-013"]
    );
    assert_eq!(
        ids("onepiece", "rarity_code:SR"),
        ids("onepiece", r#"rarity:"Super Rare""#)
    );
}

#[test]
fn spec_printings_matches_every_card_that_appeared_in_the_expansion() {
    // PRB01 is reprint-only: no card has it as expansion_id, four reach it by printings.
    assert_eq!(ids("onepiece", "expansion_id:PRB01"), Vec::<String>::new());
    assert_eq!(
        ids("onepiece", "printings:PRB01"),
        ["OP01-013", "OP01-016", "OP01-061", "OP02-013"]
    );
    // A card's own expansion is always among its printings.
    assert_eq!(
        ids("onepiece", "printings:OP02"),
        ids("onepiece", "expansion_id:OP02")
    );
}

#[test]
fn keyword_fields_match_whole_values_after_folding() {
    assert_eq!(
        ids("onepiece", "rarity_code:sr"),
        ids("onepiece", "rarity_code:SR")
    );
    assert_eq!(
        ids("onepiece", "rarity:super"),
        Vec::<String>::new(),
        "a keyword value matches whole"
    );
    assert_eq!(
        ids("onepiece", "variants.name:\"manga alt art\""),
        ["OP01-120"]
    );
    assert_eq!(ids("pokemon", "subtypes:\"TAG TEAM\""), ["ltc-10"]);
    assert_eq!(
        ids("pokemon", "weaknesses.type:water").len(),
        ids("pokemon", "weaknesses.type:Water").len()
    );
}

#[test]
fn text_fields_match_consecutive_words() {
    assert_eq!(
        ids("pokemon", "name:charizard"),
        ["emc-6", "emc-199", "ltc-2"]
    );
    // `Charizard-EX` holds the words `charizard` and `ex` too: folding makes `ex` and `EX` one.
    assert_eq!(
        ids("pokemon", "name:\"charizard ex\""),
        ["emc-6", "emc-199", "ltc-2"]
    );
    // Words must be consecutive and in order.
    assert_eq!(
        ids("pokemon", "name:\"ex charizard\""),
        Vec::<String>::new()
    );
    assert_eq!(
        ids("pokemon", "attacks.name:\"Thunder Crash\""),
        ["emc-50", "ltc-10"]
    );
    assert_eq!(
        ids("pokemon", "attacks.name:\"Flame Burst\""),
        ["emc-6", "emc-199", "ltc-2"]
    );
    // Punctuation separates words, so `Charizard-EX` is found as the phrase `charizard ex`.
    assert_eq!(
        ids("pokemon", "name:Charizard-EX"),
        ["emc-6", "emc-199", "ltc-2"]
    );
}

#[test]
fn bare_values_search_name() {
    assert_eq!(
        ids("pokemon", "charizard"),
        ids("pokemon", "name:charizard")
    );
    assert_eq!(
        ids("pokemon", "\"charizard ex\""),
        ids("pokemon", "name:\"charizard ex\"")
    );
    assert_eq!(ids("onepiece", "nami"), ["OP01-016"]);
}

#[test]
fn exact_match_with_bang() {
    assert_eq!(ids("pokemon", "!name:pikachu"), ["emc-49", "ltc-10a"]);
    assert_eq!(
        ids("pokemon", "name:pikachu"),
        ["emc-49", "ltc-10", "ltc-10a"]
    );
    assert_eq!(ids("pokemon", "!pikachu"), ["emc-49", "ltc-10a"]);
    assert_eq!(ids("pokemon", "!name:\"Pikachu & Zekrom-GX\""), ["ltc-10"]);
    assert_eq!(
        ids("pokemon", "!name:\"pikachu zekrom gx\""),
        Vec::<String>::new(),
        "exact is on the whole text"
    );
}

#[test]
fn literal_match_with_caret_keeps_case_and_accents() {
    // `ex` and `EX` fold alike; `^` compares the values as written.
    assert_eq!(
        ids("pokemon", "subtypes:ex"),
        [
            "emc-6",
            "emc-199",
            "ltc-2",
            "bfl_ja-4",
            "bfl_ja-90",
            "ddw-3"
        ]
    );
    assert_eq!(
        ids("pokemon", "^subtypes:ex"),
        ["emc-6", "emc-199", "bfl_ja-4", "bfl_ja-90", "ddw-3"]
    );
    assert_eq!(ids("pokemon", "^subtypes:EX"), ["ltc-2"]);
    assert_eq!(ids("pokemon", "^name:Flabébé"), ["emc-84"]);
    assert_eq!(ids("pokemon", "^name:Flabebe"), Vec::<String>::new());
    assert_eq!(
        ids("pokemon", "^name:\"Professor’s Research\""),
        ["ltc-101"]
    );
    assert_eq!(
        ids("pokemon", "^name:\"Professor's Research\""),
        Vec::<String>::new()
    );
    assert_eq!(
        ids("pokemon", "^name:Char*"),
        ["emc-4", "emc-5", "emc-6", "emc-199", "ltc-2"]
    );
    assert_eq!(ids("pokemon", "^name:char*"), Vec::<String>::new());
    assert_eq!(ids("pokemon", "^Pikachu"), ["emc-49", "ltc-10a"]);
    assert_eq!(
        ids("onepiece", "^rarity_code:(SR OR SEC)"),
        ids("onepiece", "rarity_code:SR OR rarity_code:SEC")
    );
}

#[test]
fn or_not_minus_and_parentheses() {
    assert_eq!(
        ids("pokemon", "name:raichu OR name:flabebe"),
        ["emc-50", "emc-84"]
    );
    let all_charizards = ids("pokemon", "name:charizard");
    assert_eq!(
        ids("pokemon", "name:charizard -subtypes:ex"),
        Vec::<String>::new(),
        "ex and EX fold alike"
    );
    assert_eq!(
        ids("pokemon", "name:charizard NOT rarity:\"Double Rare\""),
        ["emc-199", "ltc-2"]
    );
    assert_eq!(
        ids(
            "pokemon",
            "name:charizard (rarity_code:SIR OR legalities.standard:banned)"
        ),
        ["emc-199", "ltc-2"]
    );
    assert_eq!(all_charizards.len(), 3);
    assert_eq!(ids("pokemon", "-(-name:charizard)"), all_charizards);
}

/// Lucene's and Elasticsearch's `&&`, `||` and `+` (required), as v2 clients write them:
/// `AND`, `OR`, and a term as it is (they were bare values that found nothing).
#[test]
fn lucene_spellings_of_and_or_and_required() {
    assert_eq!(
        ids("pokemon", "name:charizard && rarity_code:SIR"),
        ids("pokemon", "name:charizard AND rarity_code:SIR")
    );
    assert_eq!(
        ids("pokemon", "name:raichu || name:flabebe"),
        ["emc-50", "emc-84"]
    );
    assert_eq!(
        ids("pokemon", "+name:charizard"),
        ids("pokemon", "name:charizard")
    );
    assert_eq!(
        ids("pokemon", "+name:charizard -rarity:\"Double Rare\""),
        ["emc-199", "ltc-2"]
    );
    assert_eq!(
        ids("pokemon", "+(name:raichu || name:flabebe) && +-name:raichu"),
        ["emc-84"]
    );
    assert_eq!(
        ids("onepiece", "rarity_code:(SR || SEC)"),
        ids("onepiece", "rarity_code:(SR OR SEC)")
    );
    assert_eq!(ids("onepiece", "colors:(red && green)"), ["OP02-001"]);
    assert_eq!(
        ids("onepiece", "colors:(+red +green)"),
        ids("onepiece", "colors:(red green)")
    );
    assert_eq!(
        ids("onepiece", "colors:(+\"red\")"),
        ids("onepiece", "colors:red")
    );
    assert_eq!(ids("pokemon", "hp:(+>=100)"), ids("pokemon", "hp>=100"));
}

#[test]
fn grouped_values() {
    assert_eq!(
        ids("onepiece", "id:(OP01-016 OR OP02-013)"),
        ["OP01-016", "OP02-013"]
    );
    assert_eq!(
        ids("onepiece", "rarity_code:(SR OR SEC)"),
        ids("onepiece", "rarity_code:SR OR rarity_code:SEC")
    );
    assert_eq!(ids("onepiece", "colors:(red AND green)"), ["OP02-001"]);
    assert_eq!(
        ids("onepiece", "-colors:(red OR green)").len()
            + ids("onepiece", "colors:(red OR green)").len(),
        14
    );
    assert_eq!(
        ids("pokemon", "!name:(pikachu OR raichu)"),
        ["emc-49", "emc-50", "ltc-10a"]
    );
}

#[test]
fn wildcards() {
    // Charmander, Charmeleon, and the three Charizards.
    assert_eq!(
        ids("pokemon", "name:char*"),
        ["emc-4", "emc-5", "emc-6", "emc-199", "ltc-2"]
    );
    assert_eq!(ids("pokemon", "name:*zard"), ["emc-6", "emc-199", "ltc-2"]);
    assert_eq!(ids("pokemon", "name:char*der"), ["emc-4"]);
    assert_eq!(
        ids("pokemon", "name:p?kachu"),
        ids("pokemon", "name:pikachu")
    );
    assert_eq!(
        ids("onepiece", "rarity:*rare").len(),
        ids("onepiece", "rarity_code:(R OR SR OR SEC)").len()
    );
    // Quoted values are literal: no wildcard.
    assert_eq!(
        ids("pokemon", "name:\"char*\""),
        ids("pokemon", "name:char")
    );
    // `field:*` is "has the field".
    // Trainers and the Energy have no hp.
    assert_eq!(ids("pokemon", "hp:*").len(), 29);
    assert_eq!(
        ids("pokemon", "-hp:*"),
        ["emc-172", "emc-230", "ltc-101", "bfl_ja-68", "ddw-204"]
    );
}

#[test]
fn ranges_and_comparisons() {
    let hp = |q: &str| ids("pokemon", q);
    assert_eq!(hp("hp:[340 TO *]"), ["ddw-3"]);
    assert_eq!(hp("hp:[* TO 40]"), ["emc-84"]);
    assert_eq!(hp("hp>=100"), hp("hp:[100 TO *]"));
    assert_eq!(hp("hp>100"), hp("hp:{100 TO *]"));
    assert_eq!(hp("hp<100"), hp("hp:[* TO 100}"));
    assert_eq!(hp("hp<=100"), hp("hp:[* TO 100]"));
    // Lucene's and Elasticsearch's `field:>n` is the comparison, not the word `>n`.
    assert_eq!(hp("hp:>100"), hp("hp>100"));
    assert!(hp("hp:>100").len() > hp("hp:100").len());
    assert_eq!(hp("hp:<=100"), hp("hp<=100"));
    assert_eq!(hp("hp:(>=100 AND <200)"), hp("hp:[100 TO 200}"));
    assert_eq!(hp("hp:(>200 OR <50)"), hp("hp>200 OR hp<50"));
    assert_eq!(
        hp("hp:[100 TO 200]").len(),
        hp("hp>=100").len() - hp("hp>200").len()
    );
    assert_eq!(
        hp("national_pokedex_numbers:[1 TO 9] name:charizard"),
        ["emc-6", "emc-199", "ltc-2"]
    );
    assert_eq!(
        ids("onepiece", "power>=7000 type:character").len(),
        ids("onepiece", "power:[7000 TO *] type:character").len()
    );
    assert_eq!(
        ids("onepiece", "variants.prices.market>1000"),
        ["OP01-013", "OP01-120"]
    );
    assert_eq!(ids("onepiece", "variants.prices.market>2000"), ["OP01-120"]);
    // A JSON number matches the same number.
    assert_eq!(ids("onepiece", "cost:3"), ids("onepiece", "cost:[3 TO 3]"));
}

#[test]
fn dotted_paths_and_camel_case_aliases() {
    assert_eq!(
        ids("onepiece", "rarityCode:SR"),
        ids("onepiece", "rarity_code:SR")
    );
    assert_eq!(
        ids("onepiece", "expansionId:OP02"),
        ids("onepiece", "expansion_id:OP02")
    );
    assert_eq!(
        ids("pokemon", "attacks.convertedEnergyCost>=4"),
        ids("pokemon", "attacks.converted_energy_cost>=4")
    );
    assert_eq!(ids("pokemon", "legalities.expanded:banned"), ["ltc-10"]);
    assert_eq!(ids("onepiece", "variants.pop_reports.company:PSA").len(), 4);
    assert_eq!(
        ids("onepiece", "variants.prices.is_perfect:true"),
        ["OP01-120"]
    );
    // A dotted name with an empty part is a mistyped field, refused; quoted, it is text.
    let err = support::search_error("pokemon", SearchRequest::new("attacks..name:ember"));
    assert!(err.contains("`attacks..name` is no field name"), "{err}");
    assert!(ids("pokemon", "\"attacks..name:ember\"").is_empty());
}

#[test]
fn the_names_casing_camel_writes_are_accepted_back() {
    // `casing=camel` writes `days_7` as `days7` (a digit has no capital): that spelling
    // names the field in `q`, nested queries, `order_by` and `select` too.
    let snake = ids("pokemon", "variants.prices.trends.days_7.price_change:*");
    assert_eq!(snake.len(), 16);
    for q in [
        "variants.prices.trends.days7.priceChange:*",
        "variants.prices:(trends.days7.priceChange:*)",
        "variants:(prices.trends.days7:*)",
    ] {
        assert_eq!(ids("pokemon", q), snake, "{q}");
    }
    let sorted = |key: &str| {
        ids_with(
            "pokemon",
            SearchRequest::new("variants.prices:(currency:USD)").order_by(key),
        )
    };
    assert_eq!(
        sorted("-variants.prices.trends.days7.percentChange"),
        sorted("-variants.prices.trends.days_7.percent_change")
    );
}

#[test]
fn every_field_that_occurs_is_searchable() {
    let catalog = support::catalog("pokemon");
    for field in catalog.cards().fields() {
        if field.holds_values {
            let q = format!("{}:*", field.path);
            let found = catalog
                .search(&SearchRequest::new(&q))
                .unwrap()
                .total_count();
            assert_eq!(found, field.records, "{q}");
            assert!(found > 0, "{q}");
        }
    }
}

#[test]
fn folding_accents_quotes_and_width() {
    // Accents: `flabebe` finds Flabébé and the other way round.
    assert_eq!(ids("pokemon", "flabebe"), ["emc-84"]);
    assert_eq!(ids("pokemon", "FLABÉBÉ"), ["emc-84"]);
    // Typographic and plain apostrophes are the same.
    assert_eq!(ids("pokemon", "name:\"professor's research\""), ["ltc-101"]);
    assert_eq!(ids("pokemon", "name:\"Professor’s Research\""), ["ltc-101"]);
    // Full-width Latin folds to ASCII.
    assert_eq!(
        ids("onepiece", "rarity_code:ＳＲ"),
        ids("onepiece", "rarity_code:SR")
    );
    // `Pokémon` and `pokemon` are one value of supertype.
    assert_eq!(
        ids("pokemon", "supertype:pokemon").len(),
        ids("pokemon", "supertype:Pokémon").len()
    );
}

#[test]
fn punctuation_in_values() {
    // Parentheses and an apostrophe inside a quoted value (pokemon-tcg-api #109).
    assert_eq!(
        ids("pokemon", "name:\"Boss's Orders (Ghetsis)\""),
        ["emc-172"]
    );
    assert_eq!(
        ids("pokemon", "!name:\"Boss's Orders (Ghetsis)\""),
        ["emc-172"]
    );
    // `&` needs no escaping (#107).
    assert_eq!(ids("pokemon", "name:\"Pikachu & Zekrom-GX\""), ["ltc-10"]);
    assert_eq!(ids("pokemon", "name:pikachu&zekrom"), ["ltc-10"]);
}

#[test]
fn cjk_words_and_substrings() {
    // A change of script ends a word: `リザードンex` is `リザードン` + `ex`.
    assert_eq!(ids("pokemon", "name:リザードン"), ["bfl_ja-4", "bfl_ja-90"]);
    assert_eq!(
        ids("pokemon", "name:\"リザードン ex\""),
        ["bfl_ja-4", "bfl_ja-90"]
    );
    // A CJK query word also matches inside a longer word.
    assert_eq!(ids("pokemon", "name:ザード"), ["bfl_ja-4", "bfl_ja-90"]);
    // Half-width katakana folds to full width.
    assert_eq!(
        ids("pokemon", "flavor_text:ﾘｻﾞｰﾄﾞﾝ"),
        ids("pokemon", "flavor_text:リザードン")
    );
    assert!(ids("pokemon", "flavor_text:リザードン").contains(&"bfl_ja-4".to_string()));
    // Keyword fields stay whole-value: no substring.
    assert_eq!(
        ids("pokemon", "types:炎").len(),
        ids_with("pokemon", SearchRequest::new("types:炎").lang("ja")).len()
    );
}

#[test]
fn empty_query_matches_everything() {
    assert_eq!(ids("onepiece", "").len(), 14);
    assert_eq!(ids("onepiece", "   ").len(), 14);
    assert_eq!(ids("pokemon", "").len(), 34);
}

#[test]
fn known_field_with_unknown_value_matches_nothing() {
    assert_eq!(ids("onepiece", "rarity_code:ZZZ"), Vec::<String>::new());
    assert_eq!(ids("pokemon", "name:\"...\""), Vec::<String>::new());
}

/// The ids of `catalog`'s cards matching `q`, in default order (the first page).
fn card_ids(catalog: &cardex::Catalog, q: &str) -> Vec<String> {
    let hits = catalog.hits(&SearchRequest::new(q)).unwrap();
    hits.ids(catalog.cards())
        .map(|id| id.into_owned())
        .collect()
}

/// The ids of the bundled pokemon catalog's expansions matching `q`, in default order.
fn pokemon_expansions(q: &str) -> Vec<String> {
    let pokemon = support::catalog("pokemon");
    let hits = pokemon
        .expansion_hits(&SearchRequest::new(q).page_size(1000))
        .unwrap();
    hits.record_ids
        .iter()
        .map(|&r| pokemon.expansions().record_id(r).into_owned())
        .collect()
}

/// Dates (`YYYY/MM/DD` or `YYYY-MM-DD`) compare as the numbers `YYYYMMDD`, in ranges and
/// comparisons, whichever separator the data and the query use.
#[test]
fn dates_compare_in_ranges_and_comparisons() {
    let expansions = pokemon_expansions;
    // In default order (oldest first): emc 2023/05/19, ltc 2024/03/22, bfl_ja 2024/07/12,
    // ddw 2025/01/31; ssm_ja has no date.
    assert_eq!(
        expansions("release_date:[2024/01/01 TO *]"),
        ["ltc", "bfl_ja", "ddw"]
    );
    assert_eq!(
        expansions("release_date:[2024-01-01 TO 2024-12-31]"),
        ["ltc", "bfl_ja"]
    );
    assert_eq!(
        expansions("release_date:{2023/05/19 TO 2024/07/12}"),
        ["ltc"]
    );
    assert_eq!(expansions("release_date>=2025-01-01"), ["ddw"]);
    assert_eq!(expansions("release_date<2024/01/01"), ["emc"]);
    // A bound may carry a time after `T`, as the data's dates may; it compares by its day.
    assert_eq!(expansions("release_date>=2025-01-01T10:30:00Z"), ["ddw"]);
    assert_eq!(
        expansions("release_date:[2024-01-01T00:00 TO 2024-12-31T23:59]"),
        expansions("release_date:[2024-01-01 TO 2024-12-31]")
    );
    // A date is matched as written, too.
    assert_eq!(expansions("release_date:2024/03/22"), ["ltc"]);
    // Not dates: a month 13, one separator of each kind.
    for q in ["release_date>=2024/13/01", "release_date>=2024/01-01"] {
        assert!(
            support::catalog("pokemon")
                .expansion_hits(&SearchRequest::new(q))
                .is_err(),
            "{q}"
        );
    }
}

/// On a field of dates a bare year stands for its span of dates, the way search engines
/// round partial dates; on a field holding other numbers too it stays the number.
#[test]
fn a_bare_year_on_a_field_of_dates_is_that_year() {
    let expansions = pokemon_expansions;
    // emc 2023/05/19, ltc 2024/03/22, bfl_ja 2024/07/12, ddw 2025/01/31.
    assert_eq!(expansions("release_date>=2024"), ["ltc", "bfl_ja", "ddw"]);
    assert_eq!(expansions("release_date>2024"), ["ddw"]);
    assert_eq!(expansions("release_date<=2024"), ["emc", "ltc", "bfl_ja"]);
    assert_eq!(expansions("release_date<2024"), ["emc"]);
    // A term is the text rule: the word 2024 is in the dates of 2024.
    assert_eq!(expansions("release_date:2024"), ["ltc", "bfl_ja"]);
    assert_eq!(
        expansions("release_date:[2023 TO 2024]"),
        ["emc", "ltc", "bfl_ja"]
    );
    assert_eq!(expansions("release_date:{2023 TO 2025}"), ["ltc", "bfl_ja"]);
    assert_eq!(expansions("release_date:[2024 TO 2024/06/30]"), ["ltc"]);

    let dir = support::TempDir::new("bare-years");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    dir.write(
        "c/cards/a.json",
        r#"[{"id":"a","expansion_id":"e1","released":"2020-05-01T10:00:00Z","mixed":"2020/05/01","stamp":"20200501"},
            {"id":"b","expansion_id":"e1","released":"2021/01/01","mixed":"7","stamp":"20210101"},
            {"id":"c","expansion_id":"e1","released":"TBA","mixed":"2019","stamp":"2019"}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let catalog = engine.catalog("c").unwrap();
    let found = |q: &str| card_ids(catalog, q);
    // A field of dates: text that is no number ("TBA") leaves it one.
    assert_eq!(found("released>2020"), ["b"]);
    assert_eq!(found("released:2020"), ["a"]);
    assert_eq!(found("released:[2019 TO 2020]"), ["a"]);
    // Whole numbers beside the dates: 2020 is the number, below every date.
    assert_eq!(found("mixed>=2019"), ["a", "c"]);
    assert_eq!(found("mixed<2020"), ["b", "c"]);
    assert_eq!(found("mixed:2019"), ["c"]);
    assert_eq!(found("stamp>2019"), ["a", "b"]);
}

/// Folding is full case folding: `ß` meets `ss` and the final sigma meets `σ`, in the
/// index and in the query alike.
#[test]
fn case_folding_meets_sharp_s_and_final_sigma() {
    let dir = support::TempDir::new("case-folding");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    dir.write(
        "c/cards/a.json",
        r#"[{"id":"a","expansion_id":"e1","name":"Weißer Ritter"},
            {"id":"b","expansion_id":"e1","name":"WEISSE ROSE"},
            {"id":"c","expansion_id":"e1","name":"ΣΟΦΟΣ"}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let catalog = engine.catalog("c").unwrap();
    let found = |q: &str| card_ids(catalog, q);
    assert_eq!(found("name:WEISSER"), ["a"]);
    assert_eq!(found("name:weiße"), ["b"]);
    assert_eq!(found("name:weiss*"), ["a", "b"]);
    assert_eq!(found("name:σοφος"), ["c"]);
    assert_eq!(found("!name:\"weisser ritter\""), ["a"]);
}

/// A field name may be spelt in any case that reads as its snake_case name (the query is
/// typed by a person); the answer is the same.
#[test]
fn field_names_in_any_case() {
    let expected = ids("onepiece", "rarity_code:SR");
    assert!(!expected.is_empty());
    for q in [
        "rarityCode:SR",
        "Rarity_code:SR",
        "RARITY_CODE:SR",
        "RarityCode:SR",
    ] {
        assert_eq!(ids("onepiece", q), expected, "{q}");
    }
    assert_eq!(ids("onepiece", "NAME:luffy"), ids("onepiece", "name:luffy"));
}

#[test]
fn every_record_is_lucenes_star_colon_star() {
    // `*:*` is every record in the search's scope, alone or combined; `-*:*` is none.
    let all = ids("pokemon", "");
    assert_eq!(ids("pokemon", "*:*"), all);
    assert_eq!(ids("pokemon", "(*:*)"), all);
    assert_eq!(
        ids("pokemon", "*:* AND rarity_code:C"),
        ids("pokemon", "rarity_code:C")
    );
    assert_eq!(ids("pokemon", "*:* OR rarity_code:C"), all);
    assert_eq!(ids("pokemon", "-*:*"), Vec::<String>::new());
    assert_eq!(
        ids_with("pokemon", SearchRequest::new("*:*").lang("ja")),
        ids_with("pokemon", SearchRequest::new("").lang("ja"))
    );
    // Not the words of `*:*` on `name` (any name of two words or more).
    let two_words = ids("pokemon", "name:*:*");
    assert!(!two_words.is_empty() && two_words.len() < all.len());
    // It prints back as written.
    let parsed = cardex::query::parse("*:* AND -rarity_code:C").unwrap();
    assert_eq!(parsed.to_string(), "*:* AND NOT rarity_code:C");
}

#[test]
fn full_width_field_names_are_ascii_ones() {
    // A field name typed in full-width forms (a Japanese input method), with either colon,
    // is its ASCII one; a word of other letters before `:` stays a bare value.
    assert_eq!(
        ids("pokemon", "ｎａｍｅ:pikachu"),
        ids("pokemon", "name:pikachu")
    );
    assert_eq!(
        ids("pokemon", "ｎａｍｅ：ピカチュウ"),
        ids("pokemon", "name:ピカチュウ")
    );
    assert_eq!(ids("pokemon", "ＨＰ>100"), ids("pokemon", "hp>100"));
    assert!(!ids("pokemon", "name:ピカチュウ").is_empty());
    assert_eq!(
        ids("pokemon", "リザードン:ex"),
        ids("pokemon", "name:\"リザードン ex\"")
    );
    assert!(!ids("pokemon", "リザードン:ex").is_empty());
    // An unknown one is the unknown-field error, in ASCII.
    let err = support::search_error("pokemon", SearchRequest::new("ｎａｍｅｓ:alpha"));
    assert!(
        err.starts_with("unknown field `names` (did you mean `name`?)"),
        "{err}"
    );
    let shown = cardex::query::parse("ｎａｍｅ：alpha").unwrap().to_string();
    assert_eq!(shown, "name:alpha");
}
