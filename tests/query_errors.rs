//! Malformed queries and queries that do not fit the catalog: each has its own typed
//! error with the right place; none panics.

mod support;

use cardex::query::ParseErrorKind;
#[cfg(feature = "server")]
use cardex::server::{error_body, error_code, error_status};
use cardex::PlanErrorKind;
use cardex::{Error, SearchRequest};
use support::{catalog, search_error};

fn error(catalog_name: &str, q: &str) -> Error {
    catalog(catalog_name)
        .search(&SearchRequest::new(q))
        .unwrap_err()
}

fn parse_kind(q: &str) -> (ParseErrorKind, usize, usize) {
    match error("onepiece", q) {
        Error::Parse(e) => (e.kind().clone(), e.offset(), e.column()),
        other => panic!("{q}: {other:?}"),
    }
}

#[test]
fn malformed_queries_have_their_own_kinds_and_places() {
    assert_eq!(parse_kind("name:\"nami").0, ParseErrorKind::UnclosedQuote);
    // `!` and `^` go before values, not comparisons (`!power>=5000` was read as a bare
    // value searched in `name`); quoted, the text is a value again.
    for (q, prefix, at) in [("!power>=5000", "!", 0), ("nami ^cost<3", "^", 5)] {
        assert_eq!(
            parse_kind(q),
            (ParseErrorKind::PrefixedComparison { prefix }, at, at + 1),
            "{q}"
        );
    }
    assert!(cardex::query::parse("!name:\"power>=5000\"").is_ok());
    assert!(cardex::query::parse("-power>=5000").is_ok());
    assert_eq!(parse_kind("name:\"nami").1, 5);
    assert!(matches!(
        parse_kind("nami AND"),
        (
            ParseErrorKind::ExpectedTerm {
                after: Some("AND"),
                ..
            },
            8,
            9
        )
    ));
    // `&&` and `||` are `AND` and `OR`, and messages name them as written.
    assert!(matches!(
        parse_kind("nami &&"),
        (
            ParseErrorKind::ExpectedTerm {
                after: Some("&&"),
                ..
            },
            7,
            8
        )
    ));
    assert!(matches!(
        parse_kind("nami || && zoro"),
        (
            ParseErrorKind::ExpectedTerm {
                after: Some("||"),
                ..
            },
            8,
            9
        )
    ));
    assert_eq!(
        parse_kind("name:&&"),
        (ParseErrorKind::ReservedKeyword { word: "&&" }, 5, 6)
    );
    // A keyword is found as written, and its span ends where it does.
    for (q, kw, start, end) in [
        ("||", "||", 0, 2),
        ("a || || b", "||", 5, 7),
        ("a OR && b", "&&", 5, 7),
    ] {
        let Error::Parse(e) = error("onepiece", q) else {
            panic!("{q}")
        };
        assert!(
            matches!(e.kind(), ParseErrorKind::ExpectedTerm { found: cardex::query::Found::Keyword(k), .. } if *k == kw),
            "{q}: {:?}",
            e.kind()
        );
        assert_eq!((e.span().start, e.span().end), (start, end), "{q}");
    }
    assert!(matches!(
        parse_kind("colors:(red + green)"),
        (
            ParseErrorKind::ExpectedGroupValue { after: "+", .. },
            13,
            14
        )
    ));
    assert!(matches!(
        parse_kind("nami + zoro"),
        (
            ParseErrorKind::ExpectedTerm {
                after: Some("+"),
                ..
            },
            6,
            7
        )
    ));
    assert!(matches!(
        parse_kind("nami AND OR zoro"),
        (
            ParseErrorKind::ExpectedTerm {
                after: Some("AND"),
                ..
            },
            9,
            10
        )
    ));
    assert!(matches!(
        parse_kind("() nami"),
        (ParseErrorKind::EmptyGroup { field: None }, 0, 1)
    ));
    assert!(matches!(
        parse_kind("colors:()"),
        (ParseErrorKind::EmptyGroup { field: Some(_) }, 7, 8)
    ));
    assert!(matches!(
        parse_kind("(nami"),
        (ParseErrorKind::UnclosedParen, 0, 1)
    ));
    assert!(matches!(
        parse_kind("nami)"),
        (ParseErrorKind::UnexpectedCloseParen, 4, 5)
    ));
    let long = "nami ".repeat(2000);
    assert!(matches!(
        parse_kind(&long),
        (
            ParseErrorKind::QueryTooLong {
                len: 10000,
                max: 5120
            },
            5120,
            5121
        )
    ));
    let deep = format!("{}nami{}", "(".repeat(40), ")".repeat(40));
    assert!(matches!(
        parse_kind(&deep),
        (ParseErrorKind::DepthLimitExceeded { max: 32 }, 32, 33)
    ));
    // A group of values and a nested query are parentheses too: 32 levels and no more.
    for inner in ["rarity:(a OR b)", "variants:(name:a)"] {
        let at = |n: usize| format!("{}{inner}{}", "(".repeat(n), ")".repeat(n));
        assert!(cardex::query::parse(&at(31)).is_ok(), "{inner}");
        let at_32 = at(32);
        let (kind, start, end) = parse_kind(&at_32);
        assert!(
            matches!(kind, ParseErrorKind::DepthLimitExceeded { max: 32 }),
            "{inner}: {kind:?}"
        );
        let opening = 32 + inner.find('(').unwrap();
        assert_eq!((start, end), (opening, opening + 1), "{inner}");
    }
    let many = vec!["n"; 520].join(" OR ");
    assert!(matches!(
        parse_kind(&many).0,
        ParseErrorKind::TooManyTerms { max: 512 }
    ));
}

#[test]
fn unknown_field_points_at_it_with_a_suggestion() {
    let err = error("onepiece", "printings:OP01 AND rarty_code:SR");
    let Error::Plan(plan) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        plan.kind(),
        &PlanErrorKind::UnknownField {
            field: "rarty_code".into(),
            suggestion: Some("rarity_code".into()),
            bare: false
        }
    );
    assert_eq!((plan.offset(), plan.column()), (19, 20));
    assert_eq!(
        err.to_string(),
        "unknown field `rarty_code` (did you mean `rarity_code`?)\nprintings:OP01 AND rarty_code:SR\n                   ^^^^^^^^^^"
    );
    #[cfg(feature = "server")]
    assert_eq!(
        (error_status(&err), error_code(&err)),
        (400, "invalid_query")
    );
    #[cfg(feature = "server")]
    {
        let body = error_body(&err);
        assert_eq!(
            (
                body["error"]["details"]["position"].as_u64(),
                body["error"]["details"]["column"].as_u64()
            ),
            (Some(19), Some(20))
        );
    }
    // A field no card of the catalog has, in any language, is unknown.
    assert_eq!(
        search_error("onepiece", SearchRequest::new("hp>100")),
        "unknown field `hp`\nhp>100\n^^"
    );
    // A field only Japanese cards have is known in the English scope too.
    assert!(catalog("pokemon")
        .search(&SearchRequest::new("translation.en.name:charizard").lang("en"))
        .is_ok());
}

#[test]
fn a_star_field_takes_only_a_star() {
    assert_eq!(
        search_error("pokemon", SearchRequest::new("*:pikachu")),
        "`*` is no field: `*:*` matches every record, and any other value needs its field named (`name:pikachu`)\n*:pikachu\n^^^^^^^^^"
    );
    assert_eq!(
        search_error("pokemon", SearchRequest::new("rarity_code:C *:>5")),
        "`*` is no field: `*:*` matches every record, and any other value needs its field named (`name:pikachu`)\nrarity_code:C *:>5\n              ^^^^"
    );
    assert_eq!(
        search_error("pokemon", SearchRequest::new("attacks:(name:x OR *:*)")),
        "`*:*` (every record) cannot be inside a nested query, whose terms name fields of the elements; name a field (`field:*` matches the elements that have it)\nattacks:(name:x OR *:*)\n                   ^^^"
    );
    assert!(matches!(
        error("pokemon", "*:(a OR b)"),
        Error::Plan(e) if matches!(e.kind(), PlanErrorKind::EveryRecord { nested: false })
    ));
}

#[test]
fn object_fields_and_ranges_on_text() {
    assert_eq!(
        search_error("pokemon", SearchRequest::new("legalities:legal")),
        "field `legalities` holds objects, not values; search one of its fields: `legalities.expanded`, `legalities.standard`, `legalities.unlimited`\nlegalities:legal\n^^^^^^^^^^"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("name:[1 TO 5]")),
        "field `name` holds no numbers, so ranges and comparisons cannot match it\nname:[1 TO 5]\n     ^^^^^^^^"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("rarity>3")),
        "field `rarity` holds no numbers, so ranges and comparisons cannot match it\nrarity>3\n      ^^"
    );
}

#[test]
fn bare_value_on_a_catalog_without_name_is_explained() {
    // Every bundled catalog has names, so use an expansion search on a field-less value:
    // expansions have `name` too; check the message on a synthetic catalog instead.
    let dir = support::TempDir::new("bare");
    dir.write("c/expansions/e.json", r#"[{"id":"e"}]"#);
    dir.write(
        "c/cards/c.json",
        r#"[{"id":"x","expansion_id":"e","title":"t"}]"#,
    );
    let engine = cardex::Engine::open(dir.path()).unwrap();
    let err = engine
        .catalog("c")
        .unwrap()
        .search(&SearchRequest::new("pikachu"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown field `name`: a bare value searches `name`, which no record of this catalog has; name a field, as in `field:value`\npikachu\n^^^^^^^"
    );
}
