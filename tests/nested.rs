//! Nested queries bound to one element of an array of objects (`path:( subquery )`), sorts
//! by a field inside such an array, and the currency rule, on the bundled data with
//! answers checked by hand against `data/`.

mod support;

use cardex::SearchRequest;
use support::{catalog, ids, ids_with, page_ids, search_error, TempDir};

#[test]
fn a_price_condition_binds_to_one_price_record() {
    // Raw Near Mint USD prices of at least $100: Zoro's Special Alt Art (610) and
    // Shanks's Manga Alt Art (820). Luffy's only price over 100 is graded (PSA 10, 180).
    assert_eq!(
        ids(
            "onepiece",
            "variants.prices:(type:raw AND condition:NM AND currency:USD AND market>=100)"
        ),
        ["OP01-013", "OP01-120"]
    );
    // The flat form matches when any price record matches each term: Luffy (raw 1.2 and
    // graded 180), Kid (graded 140, 160) and OP02-013 (graded 210) too.
    assert_eq!(
        ids(
            "onepiece",
            "variants.prices.type:raw variants.prices.market>=100"
        ),
        ["OP01-001", "OP01-013", "OP01-047", "OP01-120", "OP02-013"]
    );
    // Implicit AND, camelCase and the whole language inside: OR, NOT, ranges.
    assert_eq!(
        ids(
            "onepiece",
            "variants.prices:(type:graded -company:PSA market:[100 TO *])"
        ),
        ["OP01-013", "OP01-047", "OP01-120"]
    );
    assert_eq!(
        ids(
            "onepiece",
            "variants.prices:((company:CGC OR company:BGS) AND market>=800)"
        ),
        ["OP01-013", "OP01-120"]
    );
    assert_eq!(
        ids("onepiece", "NOT variants.prices:(type:raw)"),
        ["OP01-025", "OP01-088", "OP02-025", "OP02-085"]
    );
}

#[test]
fn nested_queries_nest_as_deep_as_the_data() {
    // PSA reports with at least 200 PSA 10s.
    assert_eq!(
        ids(
            "onepiece",
            "variants.pop_reports:(company:PSA AND grades:(grade:10 AND count>=200))"
        ),
        ["OP01-001", "OP01-013", "OP01-047"]
    );
    // No grade 8 has 300 cards, though grade 8 and counts over 300 are in every report.
    assert!(ids(
        "onepiece",
        "variants.pop_reports.grades:(grade:8 AND count>=300)"
    )
    .is_empty());
    assert_eq!(
        ids(
            "onepiece",
            "variants.pop_reports.grades.grade:8 variants.pop_reports.grades.count>=300"
        ),
        ["OP01-001", "OP01-013", "OP01-047"]
    );
    // A nested path written from an outer element: the variants with a raw price over 500.
    assert_eq!(
        ids(
            "onepiece",
            "variants:(name:\"manga alt art\" AND prices:(type:raw AND market>500))"
        ),
        ["OP01-120"]
    );
    // ... and a dotted field inside a nested query reaches into the element's arrays
    // (any of their elements), camelCase or not.
    assert_eq!(
        ids("onepiece", "variants:(name:normal AND prices.market>20)"),
        ["OP01-120", "OP02-120"]
    );
    assert_eq!(
        ids("onepiece", "variants:(name:normal AND prices:(market>20))"),
        ["OP01-120", "OP02-120"]
    );
    assert_eq!(
        ids("onepiece", "variants:(popReports.grades.grade:\"8.5\")"),
        ids(
            "onepiece",
            "variants:(pop_reports:(grades:(grade:\"8.5\")))"
        )
    );
    assert_eq!(
        ids("onepiece", "variants:(pop_reports.grades:(grade:\"8.5\"))"),
        ["OP01-120"]
    );
}

/// Half grades are strings (`"9.5"`, `"8.5"`): they compare as the numbers they are, as
/// whole-number strings do (contract, section 3, Numbers).
#[test]
fn half_grades_compare_as_numbers() {
    // Only OP01-013's and OP01-047's graded prices have a grade between 9 and 10 (9.5).
    assert_eq!(
        ids("onepiece", "variants.prices:(grade>9 AND grade<10)"),
        ["OP01-013", "OP01-047"]
    );
    assert_eq!(
        ids(
            "onepiece",
            "variants.pop_reports.grades:(grade:[8.1 TO 8.9])"
        ),
        ["OP01-120"]
    );
    let above = ids("onepiece", "variants.pop_reports.grades.grade>8.4");
    assert!(above.iter().any(|id| id == "OP01-120"), "{above:?}");
    assert_eq!(
        above,
        ids(
            "onepiece",
            "variants.pop_reports.grades.grade:(8.5 OR 9 OR 10)"
        )
    );
}

#[test]
fn the_variant_of_a_reprint_not_any_variant() {
    // OP01-061's and OP02-013's Alt Art were reprinted in PRB01. OP01-013 was reprinted
    // in PRB01 as its Normal; its (Special) Alt Art is the OP01 printing only.
    assert_eq!(
        ids(
            "onepiece",
            "variants:(name:\"Alt Art\" AND printings:PRB01)"
        ),
        ["OP01-061", "OP02-013"]
    );
    // `variants.name` is a keyword field, inside a nested query too: `*art` is any name
    // ending in `art`. Flat, the Special Alt Art of OP01 and the Normal of PRB01 are two
    // variants of OP01-013, and it matches.
    assert_eq!(
        ids("onepiece", "variants:(name:*art AND printings:PRB01)"),
        ["OP01-061", "OP02-013"]
    );
    assert_eq!(
        ids(
            "onepiece",
            "variants.name:*art AND variants.printings:PRB01"
        ),
        ["OP01-013", "OP01-061", "OP02-013"]
    );
    assert!(ids("onepiece", "variants:(name:art)").is_empty());
    // A bare value inside a nested query searches the element's `name`.
    assert_eq!(
        ids("onepiece", "variants:(\"alt art\" printings:PRB01)"),
        ["OP01-061", "OP02-013"]
    );
}

#[test]
fn attacks_bind_name_and_damage_to_one_attack() {
    // Flame Burst does 90+ (emc-6, emc-199: not a number) or 50 (ltc-2).
    assert_eq!(
        ids("pokemon", "attacks:(name:\"flame burst\" AND damage>=40)"),
        ["ltc-2"]
    );
    assert!(ids("pokemon", "attacks:(name:\"flame burst\" AND damage>=60)").is_empty());
    // Flat: ltc-2 has Flame Burst and, in another attack, 150 damage.
    assert_eq!(
        ids("pokemon", "attacks.name:\"flame burst\" attacks.damage>=60"),
        ["ltc-2"]
    );
    assert_eq!(
        ids("pokemon", "attacks:(name:\"thunder crash\" damage:150)"),
        ["emc-50", "ltc-10"]
    );
}

#[test]
fn grouped_values_keep_their_meaning() {
    assert_eq!(
        ids("onepiece", "rarity_code:(SR OR SEC)"),
        ids("onepiece", "rarity_code:SR OR rarity_code:SEC")
    );
    assert_eq!(
        ids("onepiece", "name:(luffy)"),
        ids("onepiece", "name:luffy")
    );
}

#[test]
fn a_field_of_objects_exists_when_any_field_under_it_has_a_value() {
    // Cards with at least one price record, checked against data/: every card but the
    // four whose variants have none.
    let priced = [
        "OP01-001", "OP01-013", "OP01-016", "OP01-047", "OP01-061", "OP01-120", "OP02-001",
        "OP02-013", "OP02-048", "OP02-120",
    ];
    assert_eq!(ids("onepiece", "variants.prices:*"), priced);
    assert_eq!(ids("onepiece", "variants:(prices:*)"), priced);
    assert_eq!(
        ids("onepiece", "-variants.prices:*"),
        ["OP01-025", "OP01-088", "OP02-025", "OP02-085"]
    );
    // Bound to one variant: the Alt Arts that have a pop report.
    assert_eq!(
        ids("onepiece", "variants:(name:\"Alt Art\" AND pop_reports:*)"),
        ["OP01-001", "OP01-047"]
    );
    assert_eq!(
        ids("onepiece", "variants.pop_reports:*"),
        ["OP01-001", "OP01-013", "OP01-047", "OP01-120"]
    );
    // An object that is not in an array (24 of the 34 cards have legalities), and one
    // looked through to the arrays under it.
    assert_eq!(ids("pokemon", "legalities:*").len(), 24);
    assert_eq!(
        ids("pokemon", "legalities:*"),
        ids(
            "pokemon",
            "legalities.standard:* OR legalities.expanded:* OR legalities.unlimited:*"
        )
    );
    assert_eq!(ids("onepiece", "variants:*").len(), 14);
    // A grouped value on an array of objects is the nested query of its bare values, which
    // search the elements' `name`.
    assert_eq!(
        ids(
            "onepiece",
            "variants:(\"Manga Alt Art\" OR \"Special Alt Art\")"
        ),
        ["OP01-013", "OP01-120"]
    );
    assert_eq!(
        ids("onepiece", "variants:(\"Alt Art\")"),
        ids("onepiece", "variants:(name:\"Alt Art\")")
    );
    for q in ["variants.prices:(NM)", "variants:(prices:(NM OR LP))"] {
        let err = search_error("onepiece", SearchRequest::new(q));
        assert!(
            err.starts_with(
                "a bare value in a nested query on `variants.prices` searches the `name` of its \
                 elements, which none has"
            ),
            "{err}"
        );
    }
    // `field:(*)` is `field:*`, on objects as on values.
    assert_eq!(ids("onepiece", "variants.prices:(*)"), priced);
    assert_eq!(ids("pokemon", "legalities:(*)").len(), 24);
    // A grouped value binds a sort as the nested query it is: only the matched attacks'
    // costs count (emc-50's other attack costs more).
    assert_eq!(
        sorted(
            "pokemon",
            "attacks:(\"Vine Flick\" OR \"Static Pulse\" OR \"Bloom Lash\")",
            "-attacks.converted_energy_cost"
        ),
        sorted(
            "pokemon",
            "attacks:(name:\"Vine Flick\" OR name:\"Static Pulse\" OR name:\"Bloom Lash\")",
            "-attacks.converted_energy_cost"
        ),
    );
    // Any other value on a field of objects is still the error that lists its fields.
    let err = search_error("onepiece", SearchRequest::new("variants.prices:NM"));
    assert!(
        err.starts_with("field `variants.prices` holds objects"),
        "{err}"
    );
}

#[test]
fn objects_next_to_values_and_joined_objects() {
    let dir = TempDir::new("nested-objects-and-values");
    dir.write(
        "g/expansions/e.json",
        r#"[{"id":"e1","legalities":{"standard":"Legal"}},{"id":"e2"}]"#,
    );
    dir.write(
        "g/cards/c.json",
        r#"[{"id":"c1","expansion_id":"e2","expansion":{"legalities":{"standard":"Banned"}},"tags":["foo"],"meta":{"a":null}},
            {"id":"c2","expansion_id":"e1","tags":[{"name":"foo"}],"meta":{"a":null}},
            {"id":"c3","expansion_id":"e1","y2":[{"c":1}],"y_2":[{"b":[{"v":1}]}]}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let catalog = engine.catalog("g").unwrap();
    let ids = |q: &str| page_ids(catalog, &catalog.search(&SearchRequest::new(q)).unwrap());
    // The cards' own `expansion` object comes before the joined expansion's fields, as
    // its fields do.
    assert_eq!(ids("expansion.legalities:*"), ["c1"]);
    assert_eq!(ids("expansion.legalities.standard:*"), ["c1"]);
    // A path that holds values as well as objects keeps `field:(a)` = `field:a`.
    assert_eq!(ids("tags:(foo)"), ids("tags:foo"));
    assert_eq!(ids("tags:(foo)"), ["c1"]);
    // Inside `y2:( )` names are `y2`'s elements' own: `y_2`'s array `b` is not one of them,
    // though `y2` is how `casing=camel` writes `y_2`.
    assert_eq!(ids("y_2:(b:(v:1))"), ["c3"]);
    let err = catalog
        .search(&SearchRequest::new("y2:(b:(v:1))"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("unknown array of objects `b`"), "{err}");
    // An object whose fields hold only nulls is no field: `*` on it is the error.
    let err = catalog
        .search(&SearchRequest::new("meta:*"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("field `meta` holds objects"), "{err}");
}

#[test]
fn nested_queries_on_other_fields_are_positioned_errors() {
    let err = search_error("onepiece", SearchRequest::new("rarity_code:(name:x)"));
    assert!(
        err.starts_with(
            "`rarity_code` holds values, not an array of objects, so `rarity_code:( )` cannot \
             hold a query on its elements; to match one of several values write \
             `rarity_code:(a OR b)`; the arrays of objects here: `images`,"
        ),
        "{err}"
    );
    assert!(err.ends_with("rarity_code:(name:x)\n^^^^^^^^^^^"), "{err}");
    let err = search_error("onepiece", SearchRequest::new("varients.prices:(type:raw)"));
    assert!(
        err.starts_with(
            "unknown array of objects `varients.prices` (did you mean `variants.prices`?)"
        ),
        "{err}"
    );
    // A term on an array of objects of the elements, inside a nested query, is the error a
    // term on an object is, with the array's fields relative to the element.
    let err = search_error("onepiece", SearchRequest::new("variants:(prices:NM)"));
    assert!(
        err.starts_with("field `prices` holds objects, not values; search one of its fields:")
            && err.contains("`prices.condition`")
            && !err.contains("variants."),
        "{err}"
    );
    assert!(
        err.ends_with("variants:(prices:NM)\n          ^^^^^^"),
        "{err}"
    );
    // A misspelt one is suggested, as other fields are.
    for (q, suggested) in [
        ("variants:(pricez:NM)", "(did you mean `prices`?)"),
        (
            "variants:(pricez.market>1)",
            "(did you mean `prices.market`?)",
        ),
    ] {
        let err = search_error("onepiece", SearchRequest::new(q));
        assert!(err.contains(suggested), "{q}: {err}");
    }
    // A field or array named by its tail suggests its full path, when one path ends so.
    for (q, said) in [
        (
            "prices.market>1",
            "unknown field `prices.market` (did you mean `variants.prices.market`?)",
        ),
        (
            "condition:NM",
            "unknown field `condition` (did you mean `variants.prices.condition`?)",
        ),
        (
            "prices:(market>1)",
            "unknown array of objects `prices` (did you mean `variants.prices`?);",
        ),
    ] {
        let err = search_error("onepiece", SearchRequest::new(q));
        assert!(err.starts_with(said), "{q}: {err}");
    }
    // Two paths end with `.grade`: no guess.
    let err = search_error("onepiece", SearchRequest::new("grade:10"));
    assert!(err.starts_with("unknown field `grade`\n"), "{err}");
    // A bare value inside searches the elements' `name`, which price records lack; cards
    // have one, so the message is about the elements, not the catalog.
    for q in [
        "variants.prices:(condition:NM OR LP)",
        "variants:(prices:(condition:NM OR LP))",
    ] {
        let err = search_error("onepiece", SearchRequest::new(q));
        assert!(
            err.starts_with(
                "a bare value in a nested query on `variants.prices` searches the `name` of its \
                 elements, which none has; name their field, as in `field:value` or \
                 `field:(a OR b)`"
            ),
            "{q}: {err}"
        );
        // The caret is under the bare value.
        let caret = err.lines().last().unwrap_or_default();
        assert_eq!(
            caret.trim_end(),
            format!("{}^^", " ".repeat(q.rfind("LP").unwrap_or(0)))
        );
    }
    // Inside a nested query, names are relative to the element.
    let err = search_error(
        "onepiece",
        SearchRequest::new("variants:(name:x AND grades:(grade:10))"),
    );
    assert!(
        err.starts_with("unknown array of objects `grades`"),
        "{err}"
    );
    assert!(
        err.contains("`pop_reports.grades`") && err.contains("`prices`"),
        "{err}"
    );
    assert!(
        err.ends_with("variants:(name:x AND grades:(grade:10))\n                     ^^^^^^"),
        "{err}"
    );
    let err = search_error(
        "onepiece",
        SearchRequest::new("variants.prices:(type:raw AND colour:red)"),
    );
    assert!(err.starts_with("unknown field `colour`"), "{err}");
    // A dotted field into an inner array is a nested query on it: the caret is under the
    // part that is wrong.
    let err = search_error(
        "onepiece",
        SearchRequest::new("variants:(prices.colour:red)"),
    );
    assert!(err.starts_with("unknown field `colour`"), "{err}");
    assert!(
        err.ends_with("variants:(prices.colour:red)\n                 ^^^^^^"),
        "{err}"
    );
    // `!` and `^` apply to values.
    let err = search_error("onepiece", SearchRequest::new("!variants:(name:x)"));
    assert!(err.starts_with("`!` applies to values"), "{err}");
    // Parentheses nest at most 32 deep, nested queries included.
    let deep = format!("{}name:x{}", "variants:(".repeat(33), ")".repeat(33));
    let err = search_error("onepiece", SearchRequest::new(&deep));
    assert!(
        err.starts_with("parentheses are nested more than 32 deep"),
        "{err}"
    );
}

fn sorted(catalog_name: &str, q: &str, order_by: &str) -> Vec<String> {
    ids_with(catalog_name, SearchRequest::new(q).order_by(order_by))
}

#[test]
fn a_price_sort_counts_the_prices_the_query_binds() {
    let nm_usd = "variants.prices:(type:raw condition:NM currency:USD)";
    assert_eq!(
        sorted("onepiece", nm_usd, "-variants.prices.market"),
        [
            "OP01-120", "OP01-013", "OP02-013", "OP01-047", "OP01-001", "OP02-120", "OP02-001",
            "OP01-061", "OP02-048", "OP01-016"
        ]
    );
    assert_eq!(
        sorted("onepiece", nm_usd, "variants.prices.market"),
        [
            "OP01-016", "OP02-048", "OP01-061", "OP01-001", "OP01-013", "OP01-047", "OP02-013",
            "OP01-120", "OP02-001", "OP02-120"
        ]
    );
    // Without a nested condition every price counts: the largest descending, the smallest
    // ascending, cards without prices last in both directions.
    assert_eq!(
        sorted("onepiece", "", "-variants.prices.market"),
        [
            "OP01-120", "OP01-013", "OP02-013", "OP01-001", "OP01-047", "OP02-120", "OP02-001",
            "OP01-061", "OP02-048", "OP01-016", "OP01-025", "OP01-088", "OP02-025", "OP02-085"
        ]
    );
    assert_eq!(
        sorted("onepiece", "", "variants.prices.market"),
        [
            "OP01-016", "OP02-048", "OP01-061", "OP01-001", "OP01-013", "OP01-047", "OP02-013",
            "OP01-120", "OP02-001", "OP02-120", "OP01-025", "OP01-088", "OP02-025", "OP02-085"
        ]
    );
    // The same on an expansion's cards, and by page.
    let page = catalog("onepiece")
        .expansion_cards(
            "OP02",
            &SearchRequest::new(nm_usd)
                .order_by("-variants.prices.market")
                .page_size(2),
        )
        .unwrap();
    assert_eq!(page.total_count(), 4);
    assert_eq!(
        page_ids(catalog("onepiece"), &page),
        ["OP02-013", "OP02-120"]
    );
    // Graded PSA 10 prices only: Shanks 1450, Zoro 1320, OP02-013 210, Luffy 180, Kid 160.
    assert_eq!(
        sorted(
            "onepiece",
            "variants.prices:(company:PSA grade:10 currency:USD)",
            "-variants.prices.market"
        ),
        ["OP01-120", "OP01-013", "OP02-013", "OP01-001", "OP01-047"]
    );
}

/// A nested query at the top of a bound one binds too, within the elements the outer one
/// matches: "the holofoil variant's Near Mint USD price" is one price per card, and a
/// card's other variants and other prices do not count.
#[test]
fn a_price_sort_binds_through_the_variant() {
    let g = Scratch::new(
        "through",
        r#"[
          {"id":"a","expansion_id":"e1","variants":[
            {"name":"holofoil","prices":[{"currency":"USD","condition":"NM","market":10},{"currency":"USD","condition":"LP","market":500},{"currency":"EUR","condition":"NM","market":900}]},
            {"name":"normal","prices":[{"currency":"USD","condition":"NM","market":700}]}]},
          {"id":"b","expansion_id":"e1","variants":[
            {"name":"holofoil","prices":[{"currency":"USD","condition":"NM","market":40}]},
            {"name":"normal","prices":[{"currency":"USD","condition":"NM","market":1}]}]},
          {"id":"c","expansion_id":"e1","variants":[
            {"name":"normal","prices":[{"currency":"USD","condition":"NM","market":20}]}]},
          {"id":"d","expansion_id":"e1","variants":[
            {"name":"holofoil","prices":[{"currency":"USD","condition":"NM","market":25}]}]}
        ]"#,
    );
    let catalog = g.engine.catalog("g").unwrap();
    let sorted = |q: &str, order_by: &str| {
        let request = SearchRequest::new(q).order_by(order_by);
        page_ids(catalog, &catalog.search(&request).unwrap())
    };
    let holo_nm_usd = "variants:(name:holofoil AND prices:(currency:USD AND condition:NM))";
    assert_eq!(
        sorted(holo_nm_usd, "-variants.prices.market"),
        ["b", "d", "a"]
    );
    assert_eq!(
        sorted(holo_nm_usd, "variants.prices.market"),
        ["a", "d", "b"]
    );
    // With the rest of a query, and with a condition on the same prices beside it: the
    // prices counted match both.
    assert_eq!(
        sorted(
            &format!("{holo_nm_usd} AND variants.prices:(market<30)"),
            "-variants.prices.market"
        ),
        ["d", "a", "b"]
    );
    // The currency is fixed by the inner query: without it the sort is refused.
    let error = catalog
        .search(
            &SearchRequest::new("variants:(name:holofoil AND prices:(condition:NM))")
                .order_by("-variants.prices.market"),
        )
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("are in several currencies (EUR, USD)"),
        "{error}"
    );
    // A condition on the variants alone binds no price (the contract): with the USD prices
    // fixed beside it, `a`'s normal variant (700) still counts; inside it, it does not.
    assert_eq!(
        sorted(
            "variants:(name:holofoil) AND variants.prices:(currency:USD AND condition:NM)",
            "-variants.prices.market"
        ),
        ["a", "b", "d"]
    );
    assert_eq!(
        sorted(
            "variants:(name:holofoil AND prices:(currency:USD AND condition:NM))",
            "-variants.prices.market"
        ),
        ["b", "d", "a"]
    );
    // Under OR nothing binds: every USD price of the matches counts.
    assert_eq!(
        sorted(
            "variants.prices:(currency:USD) AND (variants:(name:holofoil AND prices:(condition:NM)) OR id:c)",
            "-variants.prices.market"
        ),
        ["a", "b", "d", "c"]
    );
}

#[test]
fn a_price_sort_never_mixes_currencies() {
    // The bundled Pokémon cards have USD and JPY prices.
    let err = search_error(
        "pokemon",
        SearchRequest::new("").order_by("-variants.prices.market"),
    );
    assert!(
        err.contains("are in several currencies (JPY, USD)")
            && err.contains("q=variants.prices:(currency:JPY AND ...)"),
        "{err}"
    );
    // A nested condition on the prices that fixes no currency (or two) is told so.
    for q in [
        "variants.prices:(type:raw)",
        "variants.prices:(currency:(USD OR JPY))",
    ] {
        let err = search_error(
            "pokemon",
            SearchRequest::new(q).order_by("variants.prices.market"),
        );
        assert!(
            err.contains("are in several currencies (JPY, USD)")
                && err.contains(
                    "the query's nested condition on `variants.prices` fixes none: give it one \
                     `currency:JPY` of its own"
                ),
            "{q}: {err}"
        );
    }
    // A flat currency term does not bind the sorted prices.
    let err = search_error(
        "pokemon",
        SearchRequest::new("variants.prices.currency:JPY").order_by("variants.prices.market"),
    );
    assert!(
        err.contains("are in several currencies (JPY, USD)"),
        "{err}"
    );
    assert_eq!(
        sorted(
            "pokemon",
            "variants.prices:(currency:JPY AND type:raw)",
            "-variants.prices.market"
        ),
        [
            "bfl_ja-90",
            "ssm_ja-101",
            "bfl_ja-78",
            "bfl_ja-4",
            "bfl_ja-68",
            "bfl_ja-25"
        ]
    );
    // A double negation is its term, however it is written: it binds, in both places, and
    // sorts as the term does; one negation does not bind.
    let bound = sorted(
        "pokemon",
        "variants.prices:(currency:JPY AND type:raw)",
        "-variants.prices.market",
    );
    for q in [
        "NOT NOT variants.prices:(currency:JPY AND type:raw)",
        "NOT (NOT variants.prices:(currency:JPY AND type:raw))",
        "--variants.prices:(currency:JPY AND type:raw)",
        "variants.prices:(NOT (NOT currency:JPY) AND type:raw)",
    ] {
        assert_eq!(
            sorted("pokemon", q, "-variants.prices.market"),
            bound,
            "{q}"
        );
    }
    let err = search_error(
        "pokemon",
        SearchRequest::new("NOT (NOT (NOT variants.prices:(currency:JPY)))")
            .order_by("variants.prices.market"),
    );
    assert!(
        err.contains("are in several currencies (JPY, USD)"),
        "{err}"
    );
    // Fields that are not amounts sort across currencies (a grade is a grade).
    assert_eq!(
        sorted(
            "pokemon",
            "variants.prices.company:PSA",
            "-variants.prices.grade"
        )
        .len(),
        ids("pokemon", "variants.prices.company:PSA").len()
    );
    // A comparison without a currency keeps its meaning: any price, any currency.
    assert_eq!(
        ids("pokemon", "variants.prices:(market>=10000)"),
        ["bfl_ja-4", "bfl_ja-90"]
    );
}

#[test]
fn sorts_on_text_inside_arrays_are_refused() {
    let err = search_error("pokemon", SearchRequest::new("").order_by("attacks.text"));
    assert!(
        err.contains("`attacks.text` is a text field inside the array of objects `attacks`"),
        "{err}"
    );
    // Numbers and keywords inside arrays sort.
    let by_cost = sorted(
        "pokemon",
        "language_code:EN",
        "-attacks.converted_energy_cost",
    );
    assert_eq!(by_cost.len(), ids("pokemon", "language_code:EN").len());
}

/// A field of booleans inside an array is text by its name, but its values order: `false`
/// before `true`, the largest first descending, a record without one last.
#[test]
fn booleans_inside_arrays_sort() {
    let g = Scratch::new(
        "booleans",
        r#"[
            {"id": "a", "expansion_id": "e1", "variants": [{"prices": [{"is_error": false}]}]},
            {"id": "b", "expansion_id": "e1", "variants": [{"prices": [{"is_error": false}, {"is_error": true}]}]},
            {"id": "c", "expansion_id": "e1"},
            {"id": "d", "expansion_id": "e1", "variants": [{"prices": [{"is_error": true}]}]}
        ]"#,
    );
    assert_eq!(g.sorted("variants.prices.is_error"), ["a", "b", "d", "c"]);
    assert_eq!(g.sorted("-variants.prices.is_error"), ["b", "d", "a", "c"]);
    // Bound to the elements a nested query matches, as any other key is.
    let catalog = g.engine.catalog("g").unwrap();
    let request =
        SearchRequest::new("variants.prices:(is_error:true)").order_by("variants.prices.is_error");
    assert_eq!(
        page_ids(catalog, &catalog.search(&request).unwrap()),
        ["b", "d"]
    );
}

/// A catalog `g` of the cards `cards` (a JSON array, each of expansion `e1`) in a
/// temporary folder (removed when dropped), with the count and first page of a query.
struct Scratch {
    engine: cardex::Engine,
    _dir: TempDir,
}

impl Scratch {
    fn new(name: &str, cards: &str) -> Scratch {
        let dir = TempDir::new(&format!("nested-{name}"));
        dir.write("g/expansions/e.json", r#"[{"id":"e1"}]"#);
        dir.write("g/cards/c.json", cards);
        let engine = cardex::Engine::open(dir.path()).unwrap();
        Scratch { engine, _dir: dir }
    }

    fn count(&self, q: &str) -> u64 {
        let catalog = self.engine.catalog("g").unwrap();
        catalog.count(&SearchRequest::new(q)).unwrap()
    }

    fn ids(&self, q: &str) -> Vec<String> {
        let catalog = self.engine.catalog("g").unwrap();
        page_ids(catalog, &catalog.search(&SearchRequest::new(q)).unwrap())
    }

    fn sorted(&self, order_by: &str) -> Vec<String> {
        let catalog = self.engine.catalog("g").unwrap();
        let request = SearchRequest::new("").order_by(order_by);
        page_ids(catalog, &catalog.search(&request).unwrap())
    }
}

/// Where an array of objects is a plain object in some records (`prices` one object in a
/// variant), the nested query on the enclosing array still reaches it, as the flat form
/// does.
#[test]
fn a_path_that_is_sometimes_one_object_is_still_searched() {
    let g = Scratch::new(
        "mixed",
        r#"[
          {"id":"a","expansion_id":"e1","variants":[{"name":"N","prices":[{"market":5},{"market":50}]}]},
          {"id":"b","expansion_id":"e1","variants":[{"name":"N","prices":{"market":60}}]},
          {"id":"c","expansion_id":"e1","variants":[{"name":"N","prices":{"market":6}}]}
        ]"#,
    );
    assert_eq!(g.ids("variants.prices.market>10"), ["a", "b"]);
    assert_eq!(g.ids("variants:(name:N AND prices.market>10)"), ["a", "b"]);
    assert_eq!(g.ids("variants.prices:(market>10)"), ["a"]);
}

/// Elements of an inner path met first without an enclosing element (the enclosing path a
/// plain object in the first record) and then inside elements: each keeps its own
/// enclosing element, so a nested query binds to the right one.
#[test]
fn inner_elements_met_first_outside_any_element_keep_their_enclosing_ones() {
    let g = Scratch::new(
        "late",
        r#"[
          {"id":"a","expansion_id":"e1","kits":{"name":"N","parts":[{"size":5},{"size":80}]}},
          {"id":"b","expansion_id":"e1","kits":[{"name":"N","parts":[{"size":50}]}]},
          {"id":"c","expansion_id":"e1","kits":[{"name":"M","parts":[{"size":70}]},{"name":"N","parts":[{"size":1}]}]}
        ]"#,
    );
    assert_eq!(g.ids("kits.parts:(size>10)"), ["a", "b", "c"]);
    assert_eq!(g.ids("kits.parts:(size<10)"), ["a", "c"]);
    assert_eq!(g.ids("kits:(name:N AND parts:(size>10))"), ["b"]);
    assert_eq!(g.ids("kits:(name:M AND parts:(size>10))"), ["c"]);
    assert_eq!(g.ids("kits:(name:N AND parts:(size<10))"), ["c"]);
}

/// The same across chunks of records (4,096 records a chunk at this size): in the first
/// chunk no element of the inner path has an enclosing element, in the second they all
/// do; each element still binds to its own.
#[test]
fn inner_elements_without_enclosing_ones_in_a_whole_chunk_keep_their_place() {
    let mut cards: Vec<String> = (0..4096)
        .map(|i| {
            format!(
                r#"{{"id":"a{i:04}","expansion_id":"e1","kits":{{"name":"N","parts":[{{"size":5}}]}}}}"#
            )
        })
        .collect();
    cards.push(
        r#"{"id":"b","expansion_id":"e1","kits":[{"name":"N","parts":[{"size":50}]}]}"#.into(),
    );
    cards.push(
        r#"{"id":"c","expansion_id":"e1","kits":[{"name":"M","parts":[{"size":70}]},{"name":"N","parts":[{"size":1}]}]}"#
            .into(),
    );
    let g = Scratch::new("chunks", &format!("[{}]", cards.join(",")));
    assert_eq!(g.count("kits.parts:(size<10)"), 4097);
    assert_eq!(g.ids("kits.parts:(size>10)"), ["b", "c"]);
    assert_eq!(g.ids("kits:(name:N AND parts:(size>10))"), ["b"]);
    assert_eq!(g.ids("kits:(name:M AND parts:(size>10))"), ["c"]);
    assert_eq!(g.ids("kits:(name:N AND parts:(size<10))"), ["c"]);
    assert_eq!(g.count("kits:(parts:(size<10))"), 1);
}
