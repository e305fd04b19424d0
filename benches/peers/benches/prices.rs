//! Price questions at scale: cardex's nested queries and price sorts beside SQLite holding
//! the price records in their own indexed table (a join), on the generated snapshot
//! (`cardex::generate`, seed 7). An answer is the count of matching cards and the ranks of
//! the first 100, in default order or by the largest matching price; every engine's answer
//! is checked against a scan over the price rows before the timings and inside every
//! timed iteration.
//!
//! What's measured: `prices/nested/<size>` — `variants.prices:(condition:NM AND
//! market>=100)`, two conditions bound to one price record; `prices/sort/<size>` —
//! `variants.prices:(condition:NM AND currency:USD AND market>=M)` ordered by
//! `-variants.prices.market` (the largest Near Mint USD price at or above M), with M set so
//! that about 10,000 cards match at 1M.
//!
//! Run: `cargo bench -p cardex-peers --bench prices` (1M cards by default;
//! `CARDEX_PEER_SIZES=100000` picks the sizes).

#[path = "../../common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use cardex_peers::prices::{cardex_price_answer, price_rows, PriceQuestion, SqlitePrices};
use cardex_peers::{read_cards, Answer};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const NESTED: PriceQuestion = PriceQuestion {
    condition: "nm",
    currency: None,
    min_market: 100.0,
    by_price: false,
};

const SORT: PriceQuestion = PriceQuestion {
    condition: "nm",
    currency: Some("usd"),
    min_market: 197.5,
    by_price: true,
};

fn prices(c: &mut Criterion) {
    for n in common::peer_sizes(&[1_000_000]) {
        let size = common::label(n);
        let dir = common::generated(n);
        let start = Instant::now();
        let engine = cardex::Engine::open(&dir).expect("open");
        eprintln!("load cardex {size}: {:.2} s", start.elapsed().as_secs_f64());
        let catalog = engine.catalog("tcg").expect("the generated catalog");
        let cards = read_cards(&dir, "tcg");
        let rows = price_rows(&cards);
        let start = Instant::now();
        let sqlite = SqlitePrices::new(&cards, &rows);
        eprintln!(
            "load sqlite {size}: {:.2} s ({} cards, {} price rows)",
            start.elapsed().as_secs_f64(),
            cards.len(),
            rows.len()
        );
        drop(cards);

        for (label, question) in [("nested", NESTED), ("sort", SORT)] {
            let want: Answer = question.scan(&rows);
            assert!(want.total > 0, "{label} matches something at {size}");
            assert_eq!(
                cardex_price_answer(catalog, question),
                want,
                "cardex, {label}"
            );
            assert_eq!(sqlite.answer(question), want, "sqlite, {label}");
            eprintln!(
                "{size} {label}: {} matching cards; sqlite plan: {}",
                want.total,
                sqlite.explain(question)
            );
            let mut group = c.benchmark_group(format!("prices/{label}"));
            group
                .sample_size(20)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(3));
            group.bench_function(BenchmarkId::new("cardex", &size), |b| {
                b.iter(|| assert_eq!(cardex_price_answer(catalog, black_box(question)), want))
            });
            group.bench_function(BenchmarkId::new("sqlite", &size), |b| {
                b.iter(|| assert_eq!(sqlite.answer(black_box(question)), want))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, prices);
criterion_main!(benches);
