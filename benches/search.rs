//! What's measured:
//! - `plan_execute/<class>/<dataset>`: a search up to its result set — parse, plan
//!   (resolve, normalise, order), execute — and the count (`Catalog::count`), for the
//!   query classes of issue #4: one keyword term, `printings:X AND rarity_code:Y`, an OR of
//!   three, a NOT, a numeric range, a text word, a phrase, a wildcard, language-scoped.
//! - `first_page/<variant>/<dataset>`: a whole search answer — the above plus the first
//!   page of 100 cards written as the JSON envelope into a buffer (plain, with
//!   `include=prices,pop_reports`, and with `select`).
//!
//! Corpus model: the bundled `data/` snapshot, and seeded generated catalogs
//! (`cardex::generate`, seed 7) of 100k and 1M cards, written once under
//! `target/bench-data/`. `CARDEX_BENCH_SIZES=100000` limits the generated sizes.
//! Each iteration asserts the expected count, so a fast wrong answer cannot pass.
//!
//! Run: `cargo bench --bench search`

mod common;

use std::hint::black_box;

use cardex::{Catalog, SearchRequest};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

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

fn bench_catalog(
    c: &mut Criterion,
    dataset: &str,
    catalog: &Catalog,
    mix: &[(&str, &str, Option<&str>)],
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

    let mut group = c.benchmark_group("first_page");
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
        ("printings_and_rarity", request(mix[1].1, None)),
    ];
    for (name, req) in variants {
        let total = catalog.search(&req).expect("runs").total_count();
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
    bench_catalog(
        c,
        "data-onepiece",
        data.catalog("onepiece").expect("bundled"),
        onepiece_mix,
    );
    for n in common::sizes() {
        let engine = common::generated_engine(n);
        bench_catalog(
            c,
            &common::label(n),
            engine.catalog("tcg").expect("generated"),
            MIX,
        );
    }
}

criterion_group!(benches, search_benches);
criterion_main!(benches);
