//! Planner and executor unit tests over the bundled `onepiece` and `pokemon` catalogs:
//! the plans' shapes (as `explain` prints them), their execution order, and the cases
//! the executor handles specially.

use std::borrow::Cow;

use super::*;
use crate::query::parse;
use crate::Engine;

fn engine() -> Engine {
    Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).expect("bundled snapshot")
}

/// Plans `q` over a catalog's cards (all languages) and passes the plan to `f`.
fn with_plan<T>(
    engine: &Engine,
    catalog: &str,
    q: &str,
    f: impl FnOnce(&Plan<'_>, &Collection) -> T,
) -> T {
    let collection = engine.catalog(catalog).unwrap().cards();
    let query = parse(q).unwrap();
    let plan = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap();
    f(&plan, collection)
}

/// The explain text of `q`.
fn explain(engine: &Engine, catalog: &str, q: &str) -> String {
    with_plan(engine, catalog, q, |plan, _| plan.explain())
}

/// Plans and executes `q`, returning the ids in order and whether the result was
/// borrowed from the index.
fn run(engine: &Engine, catalog: &str, q: &str) -> (Vec<String>, bool) {
    with_plan(engine, catalog, q, |plan, collection| {
        let result = plan.execute();
        let borrowed = matches!(result, Cow::Borrowed(_));
        (
            result
                .iter()
                .map(|i| collection.record_id(i).into_owned())
                .collect(),
            borrowed,
        )
    })
}

#[test]
fn and_runs_the_smallest_input_first_and_negations_last() {
    let e = engine();
    assert_eq!(
        explain(
            &e,
            "onepiece",
            "-rarity_code:C printings:PRB01 rarity_code:SR"
        ),
        "\
AND  ~3 cost 10
  keyword rarity_code:SR  ~3 cost 3
  keyword printings:PRB01  ~4 cost 4
  NOT
    keyword rarity_code:C  ~2 cost 2
scan: a short list's ids tested one by one, no set built  2 match
"
    );
}

#[test]
fn phrases_in_short_values_are_one_pair_lookup() {
    // Attack names are short (at most six words): the pair "flame burst" is looked up,
    // no record is read, and it is as cheap as a keyword.
    let e = engine();
    assert_eq!(
        explain(&e, "pokemon", "attacks.name:\"flame burst\" types:fire"),
        "\
AND  ~3 cost 8
  pair attacks.name:\"flame burst\"  ~3 cost 3
  keyword types:fire  ~5 cost 5
scan: a short list's ids tested one by one, no set built  3 match
"
    );
}

#[test]
fn explain_says_when_the_answer_is_a_run_or_a_scan() {
    let e = engine();
    // One expansion's cards are consecutive ids in default order.
    let run = explain(&e, "onepiece", "expansion_id:OP01");
    assert!(run.ends_with(" consecutive ids, no set built\n"), "{run}");
    let count = run.trim_end().rsplit_once("run: ").unwrap().1;
    let n: usize = count.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(n, run_count(&e, "expansion_id:OP01"));
    // The same expansion less a rarity: the run's ids are tested against the rarity.
    let scan = explain(&e, "onepiece", "expansion_id:OP01 -rarity_code:C");
    let expected = run_count(&e, "expansion_id:OP01 -rarity_code:C");
    assert!(
        scan.ends_with(&format!(
            "scan: a run's ids tested 64 at a time, no set built  {expected} match\n"
        )),
        "{scan}"
    );
    // A union goes through sets: no last line.
    let union = explain(&e, "onepiece", "rarity_code:SR OR printings:PRB01");
    assert!(
        !union.contains("scan:") && !union.contains("run:"),
        "{union}"
    );
}

/// How many records `q` matches on `onepiece`, through the set algebra.
fn run_count(e: &Engine, q: &str) -> usize {
    run(e, "onepiece", q).0.len()
}

#[test]
fn phrase_checks_run_after_cheap_inputs() {
    // Attack texts are long: the phrase is checked on the records holding both words in a
    // long value, after the cheaper keyword.
    let e = engine();
    assert_eq!(
        explain(&e, "pokemon", "attacks.text:\"this attack\" types:fire"),
        "\
AND  ~5 cost 489
  keyword types:fire  ~5 cost 5
  check phrase attacks.text:\"this attack\"  ~7 cost 484
    AND  ~7 cost 36
      word attacks.text:attack  ~7 cost 7
      word attacks.text:this  ~13 cost 13
      long values of attacks.text  ~16 cost 16
"
    );
}

#[test]
fn normalisation_shows_in_the_plan() {
    let e = engine();
    // Nested ANDs flatten, a repeated term appears once, NOT NOT (through parentheses)
    // folds, and a term nothing has empties the whole AND.
    assert_eq!(
        explain(
            &e,
            "onepiece",
            "(rarity_code:SR (rarity_code:SR)) AND NOT (NOT printings:PRB01)"
        ),
        explain(&e, "onepiece", "rarity_code:SR printings:PRB01")
    );
    assert_eq!(
        explain(&e, "onepiece", "rarity_code:SR rarity_code:ZZZ"),
        "NONE  ~0 cost 0\n"
    );
    assert_eq!(
        explain(&e, "onepiece", "rarity_code:ZZZ OR rarity_code:SR"),
        "keyword rarity_code:SR  ~3 cost 3\n"
    );
    assert_eq!(
        explain(&e, "onepiece", "NOT rarity_code:ZZZ"),
        "ALL  ~14 cost 0\n"
    );
    assert_eq!(explain(&e, "onepiece", ""), "ALL  ~14 cost 0\n");
}

#[test]
fn a_single_term_borrows_its_posting_list() {
    let e = engine();
    // A bitmap posting list is handed back as is, without copying; a short list of ids
    // becomes a bitmap.
    let (ids, borrowed) = run(&e, "pokemon", "id:*");
    assert!(borrowed);
    assert_eq!(ids.len(), 34);
    let (ids, borrowed) = run(&e, "pokemon", "supertype:pokemon");
    assert!(!borrowed);
    assert_eq!(ids.len(), 20);
    let (all, borrowed) = run(&e, "onepiece", "");
    assert!(borrowed);
    assert_eq!(all.len(), 14);
}

#[test]
fn pure_negations_and_negations_under_or() {
    let e = engine();
    let (not_sr_not_c, _) = run(&e, "onepiece", "NOT rarity_code:SR NOT rarity_code:C");
    let (either, _) = run(&e, "onepiece", "rarity_code:SR OR rarity_code:C");
    assert_eq!(not_sr_not_c.len() + either.len(), 14);
    assert!(not_sr_not_c.iter().all(|id| !either.contains(id)));
    let (or_not, _) = run(&e, "onepiece", "rarity_code:SR OR NOT printings:OP01");
    let (sr, _) = run(&e, "onepiece", "rarity_code:SR");
    let (not_op01, _) = run(&e, "onepiece", "-printings:OP01");
    let mut expected: Vec<String> = sr.into_iter().chain(not_op01).collect();
    expected.sort();
    expected.dedup();
    let mut got = or_not;
    got.sort();
    assert_eq!(got, expected);
}

#[test]
fn unions_mix_short_lists_and_bitmaps() {
    let e = engine();
    // A wildcard unions many posting lists, short (inline ids) and long: the result is
    // every card with a name word containing `a`, read straight from the cards' JSON.
    let collection = e.catalog("pokemon").unwrap().cards();
    let expected: Vec<String> = (0..collection.len() as u32)
        .filter(|&i| {
            let card: serde_json::Value = serde_json::from_str(&collection.doc(i)).unwrap();
            let name = crate::text::fold(card["name"].as_str().unwrap_or("")).into_owned();
            crate::text::words(&name).any(|w| w.contains('a'))
        })
        .map(|i| collection.record_id(i).into_owned())
        .collect();
    let (ids, borrowed) = run(&e, "pokemon", "name:*a*");
    assert!(!borrowed);
    assert!(expected.len() > 10);
    assert_eq!(ids, expected);
    let (hp, _) = run(&e, "pokemon", "hp:[* TO *]");
    assert_eq!(hp.len(), 29);
}

#[test]
fn errors_carry_the_span_of_what_they_are_about() {
    let e = engine();
    let collection = e.catalog("onepiece").unwrap().cards();
    let q = "nami AND colors:[1 TO 2]";
    let query = parse(q).unwrap();
    let err = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap_err();
    assert_eq!(&q[err.span().start..err.span().end], "[1 TO 2]");
    assert!(matches!(err.kind(), PlanErrorKind::NotNumeric { field } if field == "colors"));
}

#[test]
fn a_bare_comparison_in_a_group_on_an_array_of_objects_names_the_array() {
    let e = engine();
    let collection = e.catalog("pokemon").unwrap().cards();
    for (q, at) in [
        ("attacks:(>=3)", ">=3"),
        ("hp>=10 attacks:([1 TO 3])", "[1 TO 3]"),
    ] {
        let query = parse(q).unwrap();
        let err = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap_err();
        assert_eq!(&q[err.span().start..err.span().end], at, "{q}");
        assert!(
            matches!(err.kind(), PlanErrorKind::BareRangeInNested { path, field }
                if path == "attacks" && field == "name"),
            "{q}: {:?}",
            err.kind()
        );
    }
    // With the field named, the comparison is on it.
    let q = "attacks:(damage>=3)";
    let query = parse(q).unwrap();
    assert!(Plan::new(&query, q, collection, collection.all(), None, None, None).is_ok());
}

/// `plan.matches()` counts `set`'s records and pages them as `set` does, at several offsets
/// (the first page, a one-record page, pages past the start and past the end).
fn assert_counted_and_paged_as(plan: &Plan<'_>, set: &RoaringBitmap, q: &str) {
    assert_eq!(plan.matches().len(), set.len(), "{q}");
    let all: Vec<u32> = set.iter().collect();
    for (offset, limit) in [(0, 100), (0, 1), (1, 2), (2, 100), (all.len() as u64, 5)] {
        let want: Vec<u32> = all
            .iter()
            .copied()
            .skip(offset as usize)
            .take(limit)
            .collect();
        assert_eq!(
            plan.matches().page(offset, limit),
            want,
            "{q} {offset} {limit}"
        );
        assert_eq!(
            Matches::Set(Cow::Borrowed(set)).page(offset, limit),
            want,
            "{q} {offset} {limit}"
        );
    }
}

#[test]
fn ors_of_one_partition_are_counted_and_paged_without_their_union() {
    let e = engine();
    let collection = e.catalog("pokemon").unwrap().cards();
    for q in [
        "rarity:common OR rarity:uncommon OR rarity:\"double rare\"",
        "hp:[60 TO 200]",
        "hp>=100 OR hp<=70",
        "rarity:(common OR uncommon)",
    ] {
        let query = parse(q).unwrap();
        let plan = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap();
        let set = plan.execute().into_owned();
        assert!(set.len() > 3, "{q}");
        assert!(matches!(plan.matches(), Matches::Blocks(_)), "{q}");
        assert_counted_and_paged_as(&plan, &set, q);
    }
    // Not one partition: subtypes hold several values per card, and an OR across two
    // fields may share records. These are united in a mask (see the next test).
    for q in ["subtypes:basic OR subtypes:ex", "rarity:common OR hp:60"] {
        let query = parse(q).unwrap();
        let plan = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap();
        assert!(!matches!(plan.matches(), Matches::Blocks(_)), "{q}");
    }
}

/// Unions of lists that may share records (a wildcard's words, an OR of terms of a
/// multi-valued field or of two fields) are counted in a mask over their span: the same
/// count and pages as the set, at every offset.
#[test]
fn unions_that_may_share_records_are_counted_in_a_mask() {
    let e = engine();
    let collection = e.catalog("pokemon").unwrap().cards();
    for q in [
        "subtypes:basic OR subtypes:ex",
        "rarity:common OR hp:60",
        "name:char*",
        "name:(pikachu OR charizard OR ex)",
    ] {
        let query = parse(q).unwrap();
        let plan = Plan::new(&query, q, collection, collection.all(), None, None, None).unwrap();
        let set = plan.execute().into_owned();
        assert!(set.len() > 1, "{q}");
        let Matches::Dense(dense) = plan.matches() else {
            panic!("{q}: not counted in a mask");
        };
        assert!(dense.ids().eq(set.iter()), "{q}");
        assert_counted_and_paged_as(&plan, &set, q);
        assert!(
            plan.explain()
                .ends_with(&format!("no set built  {} match\n", set.len())),
            "{q}: {}",
            plan.explain()
        );
    }
}

/// A generated catalog of 20,000 cards (`tcg`) in a fresh temporary folder named after
/// `tag`, opened; the caller removes the folder.
fn generated_20k(tag: &str) -> (Engine, std::path::PathBuf) {
    let dir = crate::generate::scratch_snapshot(tag, 20_000);
    (Engine::open(&dir).unwrap(), dir)
}

#[test]
fn small_sets_are_filtered_by_a_value_column_like_an_intersection() {
    // 20,000 generated cards: a set's few cards against a common rarity take the
    // value-column path; every pair must equal the plain intersection of the postings.
    let (engine, dir) = generated_20k("cardex-value-column");
    let collection = engine.catalog("tcg").unwrap().cards();
    let index = collection.index();
    let field = |path: &str| index.field(index.lookup(path).unwrap());
    let (printings, rarity) = (field("printings"), field("rarity_code"));
    let column = index
        .value_column(index.lookup("rarity_code").unwrap())
        .expect("rarity_code is single-valued");
    assert_eq!(column.len(), collection.len());
    assert!(
        index
            .value_column(index.lookup("printings").unwrap())
            .is_none(),
        "printings hold several values"
    );
    let mut filtered = 0;
    for (set, set_ids) in printings.terms().iter() {
        for (code, code_ids) in rarity.terms().iter() {
            let q = format!("printings:{set} AND rarity_code:{code}");
            let want = set_ids.to_bitmap().into_owned() & code_ids.to_bitmap().as_ref();
            let got = with_plan(&engine, "tcg", &q, |plan, _| plan.execute().into_owned());
            assert_eq!(got, want, "{q}");
            if set_ids.len() * 32 <= code_ids.len() {
                filtered += 1;
            }
        }
    }
    assert!(
        filtered > 10,
        "the value-column path ran ({filtered} times)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn short_runs_and_lists_are_scanned_like_the_bitmap_algebra() {
    // 20,000 generated cards: default order makes an expansion's cards consecutive ids, so
    // `expansion_id:X AND ...` is answered by a scan of that run against value columns;
    // a short printings list is scanned the same way. Every answer — count, pages at
    // several offsets, the set — must equal the algebra of the postings themselves.
    let (engine, dir) = generated_20k("cardex-run-scan");
    let collection = engine.catalog("tcg").unwrap().cards();
    let index = collection.index();
    let terms = |path: &str| -> Vec<(String, RoaringBitmap)> {
        index
            .field(index.lookup(path).unwrap())
            .terms()
            .iter()
            .map(|(term, postings)| (term.to_string(), postings.to_bitmap().into_owned()))
            .collect()
    };
    let (expansions, codes, printings) = (
        terms("expansion_id"),
        terms("rarity_code"),
        terms("printings"),
    );
    let (mut runs, mut masks, mut lists) = (0, 0, 0);
    let mut check = |q: String, want: RoaringBitmap| {
        with_plan(&engine, "tcg", &q, |plan, _| {
            match plan.matches() {
                Matches::Run(..) => runs += 1,
                Matches::Mask(_) => masks += 1,
                Matches::Ids(_) => lists += 1,
                _ => {}
            }
            assert_eq!(plan.matches().len(), want.len(), "{q}");
            let all: Vec<u32> = want.iter().collect();
            for (offset, limit) in [(0, 100), (0, 3), (5, 10), (63, 70), (all.len(), 5)] {
                let page: Vec<u32> = all.iter().skip(offset).take(limit).copied().collect();
                assert_eq!(
                    plan.matches().page(offset as u64, limit),
                    page,
                    "{q} {offset} {limit}"
                );
            }
            assert_eq!(plan.execute().into_owned(), want, "{q}");
        });
    };
    for (e, (set, set_ids)) in expansions.iter().enumerate().step_by(3) {
        let (other, other_ids) = &expansions[(e + 1) % expansions.len()];
        check(format!("expansion_id:{set}"), set_ids.clone());
        for (c, (code, code_ids)) in codes.iter().enumerate() {
            let (next, next_ids) = &codes[(c + 1) % codes.len()];
            check(
                format!("expansion_id:{set} AND rarity_code:{code}"),
                set_ids & code_ids,
            );
            check(
                format!("expansion_id:{set} AND NOT rarity_code:{code}"),
                set_ids - code_ids,
            );
            check(
                format!("rarity_code:{code} -rarity_code:{next} expansion_id:{set}"),
                &(set_ids & code_ids) - next_ids,
            );
            check(
                format!("expansion_id:{set} -expansion_id:{other} -rarity_code:{code}"),
                &(set_ids - other_ids) - code_ids,
            );
        }
    }
    for (set, printed) in &printings {
        let (code, code_ids) = &codes[printed.len() as usize % codes.len()];
        check(
            format!("printings:{set} AND NOT rarity_code:{code}"),
            printed - code_ids,
        );
        check(
            format!("printings:{set} AND rarity_code:{code}"),
            printed & code_ids,
        );
    }
    // Short inline lists that are not runs: plain words of a few records.
    let short_lists: Vec<(String, RoaringBitmap)> = index
        .fields()
        .flat_map(|(_, field)| {
            field.terms().iter().filter_map(move |(term, postings)| {
                let plain = term.chars().all(|c| c.is_ascii_alphanumeric());
                let short = matches!(postings, crate::index::Postings::Ids(ids) if ids.len() > 1);
                (plain && short && postings.span().is_none()).then(|| {
                    let q = format!("{}:{term}", field.path());
                    (q, postings.to_bitmap().into_owned())
                })
            })
        })
        .take(40)
        .collect();
    for (term, ids) in &short_lists {
        let (code, code_ids) = &codes[ids.len() as usize % codes.len()];
        check(format!("{term} AND NOT rarity_code:{code}"), ids - code_ids);
        check(format!("{term} rarity_code:{code}"), ids & code_ids);
    }
    assert!(runs > 10, "single runs were paged as runs ({runs} times)");
    assert!(masks > 100, "runs were scanned ({masks} times)");
    assert!(lists > 0, "short lists were scanned ({lists} times)");
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest::proptest! {
    /// The word-at-a-time compare of a value column equals the one-by-one compare, for
    /// every chunk length and for values with the lanes' top bit set.
    #[test]
    fn equal_bits_is_the_plain_comparison(
        column in proptest::collection::vec(
            proptest::prop_oneof![0u16..4, proptest::prelude::any::<u16>(), 0x7FFEu16..0x8002],
            0..=64,
        ),
        value in proptest::prop_oneof![0u16..4, proptest::prelude::any::<u16>(), 0x7FFEu16..0x8002],
    ) {
        let plain = column
            .iter()
            .enumerate()
            .fold(0u64, |bits, (j, &v)| bits | u64::from(v == value) << j);
        proptest::prop_assert_eq!(exec::equal_bits(&column, value), plain);
    }
}

#[test]
fn an_and_of_two_bitmaps_counts_and_pages_like_their_intersection() {
    // 20,000 generated cards: rarity and language codes are dense enough to be held as
    // bitmaps, so `rarity_code:X AND language_code:Y` is counted without building the
    // intersection and paged by lookups (or, when sparse, through the intersection).
    let (engine, dir) = generated_20k("cardex-pair");
    let collection = engine.catalog("tcg").unwrap().cards();
    let index = collection.index();
    let bitmaps = |path: &str| -> Vec<(String, RoaringBitmap)> {
        index
            .field(index.lookup(path).unwrap())
            .terms()
            .iter()
            .filter(|(_, postings)| matches!(postings, Postings::Bitmap(_)))
            .map(|(term, postings)| (term.to_string(), postings.to_bitmap().into_owned()))
            .collect()
    };
    let (codes, languages) = (bitmaps("rarity_code"), bitmaps("language_code"));
    assert!(codes.len() >= 2 && !languages.is_empty());
    let mut pairs = 0;
    for (code, code_ids) in &codes {
        for (language, language_ids) in &languages {
            let q = format!("rarity_code:{code} AND language_code:{language}");
            let want = code_ids & language_ids;
            if want.is_empty() {
                continue;
            }
            with_plan(&engine, "tcg", &q, |plan, _| {
                let pair = matches!(plan.matches(), Matches::Pair(..));
                if pair {
                    pairs += 1;
                }
                let said = |how: &str| {
                    format!("pair: two bitmaps counted{how} and paged without building their intersection  {} match", want.len())
                };
                let how = match plan.pair() {
                    Some((a, b)) if plan.pair_twins(a, b).is_some() => " on their flat twins",
                    _ => "",
                };
                assert_eq!(
                    plan.explain().contains(&said(how)),
                    pair,
                    "{q}: {}",
                    plan.explain()
                );
                assert_eq!(plan.matches().len(), want.len(), "{q}");
                let all: Vec<u32> = want.iter().collect();
                for (offset, limit) in [
                    (0, 100),
                    (0, 1),
                    (7, 10),
                    (all.len() - 1, 5),
                    (all.len(), 5),
                ] {
                    let page: Vec<u32> = all.iter().skip(offset).take(limit).copied().collect();
                    assert_eq!(
                        plan.matches().page(offset as u64, limit),
                        page,
                        "{q} {offset} {limit}"
                    );
                }
                assert_eq!(plan.matches().into_set().into_owned(), want, "{q}");
            });
        }
    }
    assert!(pairs > 0, "the pair path ran");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_word_within_a_language_scope_counts_alike_on_flat_twins() {
    // 20,000 generated cards: the common words of names are bitmaps of array containers,
    // and the Japanese scope a bitmap; their pair is counted on flat twins. Every count
    // and first page equals the plain intersection's.
    let (engine, dir) = generated_20k("cardex-twins");
    let catalog = engine.catalog("tcg").unwrap();
    let index = catalog.cards().index();
    let ja = catalog
        .cards()
        .holding("language_code", "ja")
        .unwrap()
        .to_bitmap()
        .into_owned();
    let name = index.field(index.lookup("name").unwrap());
    let (mut flat, mut checked) = (0, 0);
    for (word, postings) in name.terms().iter() {
        let Postings::Bitmap(ids) = postings else {
            continue;
        };
        // Latin words: a word in kana is also matched in parts (the CJK rules).
        if !word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        let q = format!("name:{word}");
        let req = crate::SearchRequest::new(&q).lang("ja");
        let want = ids & &ja;
        assert_eq!(catalog.count(&req).unwrap(), want.len(), "{q}");
        let hits = catalog.hits(&req).unwrap();
        let page: Vec<u32> = want.iter().take(100).collect();
        assert_eq!(hits.record_ids, page, "{q}");
        let explained = catalog.explain(&req).unwrap();
        if explained.contains("counted on their flat twins") {
            flat += 1;
            assert!(index.twin(ids).is_some(), "{q}");
        }
        checked += 1;
    }
    assert!(
        checked >= 3 && flat >= 1,
        "{checked} words, {flat} on twins"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
