//! cardex side by side with what an engineer would otherwise embed: SQLite in
//! memory, tantivy, and a scan over structs deserialised with serde, each loaded from the
//! same generated snapshot (`cardex::generate`, seed 7) and asked the same query mix. An
//! answer is the total count plus the ids of the first 100 cards in default order, as
//! strings, produced inside the timed call by every engine; see `benches/peers/src/` for how
//! each peer is built and queried.
//!
//! What's measured: `peers/<class>/<size>`, one function per engine (`cardex`, `tantivy`
//! with its documented collectors, `tantivy-tuned` with the count and first-page fast paths
//! an expert would write for this workload, `sqlite`, `scan`). Before the timings, every engine's answer to every class is checked
//! against the scan's; inside each timed iteration the answer is asserted equal to it
//! again, so a fast wrong answer cannot pass. Each engine is loaded from the snapshot's
//! files `CARDEX_LOAD_RUNS` times (3 by default) at each size and the median printed with
//! every run's time (`load <engine> <size>: median ...`): cardex opening the snapshot;
//! the serde scan reading it into structs; SQLite and tantivy reading it the same way (with
//! each card's JSON, which they store) and then building their tables and indexes.
//! Resident memory is measured one engine per process by `examples/peer_footprint.rs`.
//!
//! Run: `cargo bench -p cardex-peers --bench peers` (10k, 100k and 1M cards; the 1M snapshot, 1.1 GiB, is
//! generated under `target/bench-data/` on first use). `CARDEX_PEER_SIZES=10000,100000`
//! picks the sizes; `-- <filter>` picks classes and engines as usual with criterion.

#[path = "../../common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use cardex_peers::{
    cardex_answer, read_cards, scan::Scan, sqlite::Sqlite, tantivy_peer::Tantivy, Answer, Class,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// How many times each engine is loaded at each size: `CARDEX_LOAD_RUNS`, by default 3.
fn load_runs() -> usize {
    std::env::var("CARDEX_LOAD_RUNS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

/// Loads an engine `runs` times and keeps the last one, printing every run's time and
/// their median (`load <engine> <size>: median … s of N (…)`). Each load starts after the
/// previous one is dropped (not timed), so no two are resident at once. The first run of a
/// process also pays for the pages it is the first to touch, which is why one run alone is
/// not the figure quoted.
fn timed<T>(label: &str, size: &str, runs: usize, build: impl Fn() -> T) -> T {
    let mut times = Vec::with_capacity(runs);
    let mut kept: Option<T> = None;
    for _ in 0..runs {
        drop(kept.take());
        let start = Instant::now();
        let built = build();
        times.push(start.elapsed().as_secs_f64());
        kept = Some(built);
    }
    let each: Vec<String> = times.iter().map(|t| format!("{t:.2}")).collect();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    };
    eprintln!(
        "load {label} {size}: median {median:.2} s of {runs} (runs in order: {} s)",
        each.join(", ")
    );
    kept.expect("at least one run")
}

fn peers(c: &mut Criterion) {
    let runs = load_runs();
    for n in common::peer_sizes(&[10_000, 100_000, 1_000_000]) {
        let size = common::label(n);
        let dir = common::generated(n);
        let engine = timed("cardex", &size, runs, || {
            cardex::Engine::open(&dir).expect("open")
        });
        let catalog = engine.catalog("tcg").expect("the generated catalog");
        let scan = timed("serde-scan", &size, runs, || Scan::load(&dir, "tcg"));
        let sqlite = timed("sqlite", &size, runs, || {
            Sqlite::new(&read_cards(&dir, "tcg"))
        });
        let tantivy = timed("tantivy", &size, runs, || {
            Tantivy::new(&read_cards(&dir, "tcg"))
        });
        eprintln!("tantivy {size}: {} segment(s)", tantivy.segments());

        let expected: Vec<Answer> = Class::ALL.iter().map(|&k| scan.answer(k)).collect();
        for (&class, want) in Class::ALL.iter().zip(&expected) {
            assert!(
                want.total > 0,
                "{} matches something at {size}",
                class.label()
            );
            assert_eq!(
                &cardex_answer(catalog, class),
                want,
                "cardex, {}",
                class.label()
            );
            assert_eq!(&sqlite.answer(class), want, "sqlite, {}", class.label());
            assert_eq!(&tantivy.answer(class), want, "tantivy, {}", class.label());
            assert_eq!(
                &tantivy.answer_tuned(class),
                want,
                "tantivy-tuned, {}",
                class.label()
            );
            eprintln!(
                "{size} {}: {} matches; sqlite plan: {}",
                class.label(),
                want.total,
                sqlite.explain(class)
            );
        }

        for (&class, want) in Class::ALL.iter().zip(&expected) {
            let mut group = c.benchmark_group(format!("peers/{}", class.label()));
            group
                .sample_size(20)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            group.bench_function(BenchmarkId::new("cardex", &size), |b| {
                b.iter(|| assert_eq!(&cardex_answer(catalog, black_box(class)), want))
            });
            group.bench_function(BenchmarkId::new("tantivy", &size), |b| {
                b.iter(|| assert_eq!(&tantivy.answer(black_box(class)), want))
            });
            group.bench_function(BenchmarkId::new("tantivy-tuned", &size), |b| {
                b.iter(|| assert_eq!(&tantivy.answer_tuned(black_box(class)), want))
            });
            group.bench_function(BenchmarkId::new("sqlite", &size), |b| {
                b.iter(|| assert_eq!(&sqlite.answer(black_box(class)), want))
            });
            group.bench_function(BenchmarkId::new("scan", &size), |b| {
                b.iter(|| assert_eq!(&scan.answer(black_box(class)), want))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, peers);
criterion_main!(benches);
