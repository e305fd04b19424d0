//! Algebraic laws on the public API: De Morgan, double negation, commutativity,
//! distributivity, complements — checked on the bundled catalogs, in and out of a
//! language scope.

mod support;

use cardex::SearchRequest;
use proptest::prelude::*;

/// Terms that are valid on the `pokemon` catalog.
fn term() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "name:charizard",
        "name:pikachu",
        "types:fire",
        "types:water",
        "subtypes:ex",
        "hp>=100",
        "hp:[60 TO 120]",
        "rarity:common",
        "rarity_code:RR",
        "supertype:trainer",
        "attacks.name:\"flame burst\"",
        "name:char*",
        "legalities.standard:banned",
        "variants.prices.market>10",
        "translation.en.name:*",
        "name:ザード",
        "!name:pikachu",
        "weaknesses.type:(fire OR water)",
        "artist:*",
        "expansion_id:emc",
    ])
}

fn ids(q: &str, lang: Option<&str>) -> Vec<String> {
    let mut req = SearchRequest::new(q);
    req.lang = lang;
    support::ids_with("pokemon", req)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn laws(a in term(), b in term(), c in term(), lang in prop::sample::select(vec![None, Some("en"), Some("ja")])) {
        let q = |s: String| ids(&s, lang);
        // De Morgan.
        prop_assert_eq!(q(format!("NOT ({a} OR {b})")), q(format!("NOT {a} AND NOT {b}")));
        prop_assert_eq!(q(format!("NOT ({a} AND {b})")), q(format!("NOT {a} OR NOT {b}")));
        // Double negation, also through parentheses (which the parser does not fold).
        prop_assert_eq!(q(format!("NOT (NOT {a})")), q(a.to_string()));
        prop_assert_eq!(q(format!("-(-{a})")), q(a.to_string()));
        // Commutativity (results come in default order, so they are equal as lists).
        prop_assert_eq!(q(format!("{a} AND {b}")), q(format!("{b} AND {a}")));
        prop_assert_eq!(q(format!("{a} OR {b}")), q(format!("{b} OR {a}")));
        // Distributivity.
        prop_assert_eq!(q(format!("{a} AND ({b} OR {c})")), q(format!("({a} AND {b}) OR ({a} AND {c})")));
        prop_assert_eq!(q(format!("{a} OR ({b} AND {c})")), q(format!("({a} OR {b}) AND ({a} OR {c})")));
        // Complements, within the scope.
        prop_assert_eq!(q(format!("{a} OR NOT {a}")), q(String::new()));
        prop_assert_eq!(q(format!("{a} AND NOT {a}")), Vec::<String>::new());
        // The scoped result is the unscoped one restricted to the scope.
        let scoped = sorted(q(a.to_string()));
        if let Some(lang) = lang {
            let all = sorted(ids(a, None));
            let in_scope = sorted(ids("", Some(lang)));
            let expected: Vec<String> = all.into_iter().filter(|id| in_scope.contains(id)).collect();
            prop_assert_eq!(scoped, expected);
        }
    }
}
