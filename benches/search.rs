//! What's measured:
//! - `plan_execute/<class>/<dataset>`: a search up to its result set — parse, plan
//!   (resolve, normalise, order), execute — and the count (`Catalog::count`), for the
//!   query classes: one keyword term, `printings:X AND rarity_code:Y`, an OR of
//!   three, a NOT, a numeric range, a text word, a phrase, a wildcard, language-scoped.
//! - `parse_plan/<class>/<dataset>`: the fixed cost before executing — parse, plan and
//!   `order_by` checked (`Catalog::check`) — for the same classes.
//! - `first_page/<variant>/<dataset>`: a whole search answer — the above plus the first
//!   page of 100 cards written as the JSON envelope into a buffer (plain, with
//!   `include=prices,pop_reports`, and with `select`).
//! - `first_page_compressed/<variant>/<dataset>`: the same answers from the same snapshot
//!   loaded with a compressed store (`StoreKind::Compressed`), each asserted equal to the
//!   plain store's, byte for byte, before timing.
//!
//! Corpus model: the bundled `data/` snapshot; the Pokémon TCG API's data set (20,078
//! real cards, imported once under `target/bench-data/`, skipped when absent) with a
//! realistic query mix; and seeded generated catalogs (`cardex::generate`, seed 7) of 100k
//! and 1M cards. `CARDEX_BENCH_SIZES=100000` limits the generated sizes.
//! Each iteration asserts the expected count, so a fast wrong answer cannot pass.
//!
//! Run: `cargo bench --bench search`

mod common;

use std::hint::black_box;

use cardex::{Catalog, Engine, OpenOptions, SearchRequest, StoreKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// A realistic mix on the Pokémon TCG data set: what its users search for.
const REAL_MIX: &[(&str, &str, Option<&str>)] = &[
    ("name", "name:charizard", None),
    ("subtype_and_type", "subtypes:ex types:fire", None),
    ("rarity_and_hp", "rarity:\"Rare Holo\" hp>=100", None),
    (
        "set_not_trainers",
        "expansion_id:sv1 -supertype:trainer",
        None,
    ),
    ("attack_phrase", "attacks.name:\"fire spin\"", None),
    ("wildcard", "name:char*", None),
    (
        "legal_water_or_grass",
        "legalities.standard:legal types:(water OR grass)",
        None,
    ),
    ("pokedex_range", "nationalPokedexNumbers:[1 TO 151]", None),
    ("exact_name", "!name:\"Boss's Orders (Ghetsis)\"", None),
    ("literal_subtype", "^subtypes:EX", None),
    (
        "series",
        "expansion.series:\"Scarlet & Violet\" rarity:\"Special Illustration Rare\"",
        None,
    ),
];

/// The query mix on generated catalogs: (class, q, language scope).
const MIX: &[(&str, &str, Option<&str>)] = &[
    ("keyword", "rarity_code:SR", None),
    (
        "printings_and_rarity",
        "printings:s24 AND rarity_code:SR",
        None,
    ),
    (
        "or_of_three",
        "rarity_code:SR OR rarity_code:SEC OR rarity_code:UR",
        None,
    ),
    ("and_not", "expansion_id:s10 AND NOT rarity_code:C", None),
    ("range", "hp:[200 TO *]", None),
    ("text_word", "name:charizard", None),
    ("phrase", "attacks.name:\"flame burst\"", None),
    ("wildcard", "name:char*", None),
    ("language_and_word", "language_code:JA AND name:ex", None),
    ("language_all", "language_code:EN", None),
    ("scoped_keyword", "types:炎", Some("ja")),
];

fn request<'a>(q: &'a str, lang: Option<&'a str>) -> SearchRequest<'a> {
    let mut req = SearchRequest::new(q);
    req.lang = lang;
    req
}

/// Benches `mix` (plan and execute) and whole first pages on one catalog; `page` is the
/// query whose first page is rendered besides the plain ones.
fn bench_catalog(
    c: &mut Criterion,
    dataset: &str,
    catalog: &Catalog,
    mix: &[(&str, &str, Option<&str>)],
    page: (&str, SearchRequest<'_>),
) {
    let mut group = c.benchmark_group("plan_execute");
    for &(class, q, lang) in mix {
        let req = request(q, lang);
        let expected = catalog.count(&req).expect("the query runs");
        group.bench_with_input(BenchmarkId::new(class, dataset), &req, |b, req| {
            b.iter(|| {
                let n = catalog.count(black_box(req)).expect("runs");
                assert_eq!(n, expected);
                n
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("parse_plan");
    for &(class, q, lang) in mix {
        let req = request(q, lang);
        catalog.check(&req).expect("the query plans");
        group.bench_with_input(BenchmarkId::new(class, dataset), &req, |b, req| {
            b.iter(|| catalog.check(black_box(req)).expect("plans"))
        });
    }
    group.finish();

    bench_first_pages(c, "first_page", dataset, catalog, None, page);
}

/// Benches whole first pages of `catalog` in `group`: every card, with prices and pop
/// reports, with `select`, and `page`. With `plain` (the same catalog with a plain
/// store), each answer is first asserted equal to the plain catalog's.
fn bench_first_pages(
    c: &mut Criterion,
    group: &str,
    dataset: &str,
    catalog: &Catalog,
    plain: Option<&Catalog>,
    page: (&str, SearchRequest<'_>),
) {
    let mut group = c.benchmark_group(group);
    let variants: [(&str, SearchRequest<'_>); 4] = [
        ("all_100", SearchRequest::new("")),
        (
            "all_100_with_prices_pops",
            SearchRequest::new("").include("prices,pop_reports"),
        ),
        (
            "all_100_select_3",
            SearchRequest::new("").select("name,rarity,number"),
        ),
        page,
    ];
    for (name, req) in variants {
        let total = catalog.search(&req).expect("runs").total_count();
        if let Some(plain) = plain {
            let json = |c: &Catalog| c.search(&req).expect("runs").to_json();
            assert_eq!(json(catalog), json(plain), "{name}");
        }
        let mut out = Vec::with_capacity(1 << 20);
        group.bench_with_input(BenchmarkId::new(name, dataset), &req, |b, req| {
            b.iter(|| {
                out.clear();
                let page = catalog.search(black_box(req)).expect("runs");
                assert_eq!(page.total_count(), total);
                page.write_to(&mut out).expect("a Vec takes it");
                out.len()
            })
        });
    }
    group.finish();
}

/// Benches `bench_first_pages` on `dir` loaded with a compressed store, beside `plain`.
fn bench_compressed(
    c: &mut Criterion,
    dataset: &str,
    dir: &std::path::Path,
    name: &str,
    plain: &Catalog,
    page: (&str, SearchRequest<'_>),
) {
    let options = OpenOptions::new().store(StoreKind::Compressed);
    let engine = Engine::open_with(dir, &options, |_| {}).expect("loads compressed");
    let catalog = engine.catalog(name).expect("the same catalog");
    bench_first_pages(
        c,
        "first_page_compressed",
        dataset,
        catalog,
        Some(plain),
        page,
    );
}

fn search_benches(c: &mut Criterion) {
    let data = common::data_engine();
    let onepiece_mix: &[(&str, &str, Option<&str>)] = &[
        ("keyword", "rarity_code:SR", None),
        (
            "printings_and_rarity",
            "printings:PRB01 AND rarity_code:SR",
            None,
        ),
        ("phrase", "variants.name:\"manga alt art\"", None),
    ];
    let printings = (
        "printings_and_rarity",
        SearchRequest::new(onepiece_mix[1].1),
    );
    bench_catalog(
        c,
        "data-onepiece",
        data.catalog("onepiece").expect("bundled"),
        onepiece_mix,
        printings,
    );
    if let Some(engine) = common::real_engine() {
        let page = (
            "name_ordered",
            SearchRequest::new("name:pikachu").order_by("-expansion.release_date,number"),
        );
        let pokemon = engine.catalog("pokemon").expect("imported");
        bench_catalog(c, "pokemon-tcg", pokemon, REAL_MIX, page);
        bench_compressed(c, "pokemon-tcg", engine.path(), "pokemon", pokemon, page);
    }
    for n in common::sizes() {
        let engine = common::generated_engine(n);
        let printings = ("printings_and_rarity", SearchRequest::new(MIX[1].1));
        let tcg = engine.catalog("tcg").expect("generated");
        bench_catalog(c, &common::label(n), tcg, MIX, printings);
        bench_compressed(c, &common::label(n), engine.path(), "tcg", tcg, printings);
    }
}

criterion_group!(benches, search_benches);
criterion_main!(benches);
