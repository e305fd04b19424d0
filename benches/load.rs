//! What's measured: `Engine::open` on a snapshot folder — read the files, parse, validate,
//! apply the printings and translation rules, sort into default order, render the served
//! JSON and build every index — in bytes of snapshot JSON per second. Each engine is
//! dropped after its timing ends, before the next load.
//!
//! Corpus model: the bundled `data/` snapshot; the Pokémon TCG API's data set (20,078
//! cards, imported once under `target/bench-data/`, skipped when absent); and seeded
//! generated catalogs (`cardex::generate`, seed 7) of 100k and 1M cards under
//! `target/bench-data/` (`CARDEX_BENCH_SIZES=100000` limits the sizes). Resident memory after load is reported
//! by `cargo run --release --example footprint` (see BENCHMARKS.md), not here.
//!
//! Run: `cargo bench --bench load`

mod common;

use std::path::Path;
use std::time::Duration;

use cardex::Engine;
use criterion::{
    criterion_group, criterion_main, BatchSize, Bencher, BenchmarkId, Criterion, Throughput,
};

/// Times `Engine::open(dir)`, checked by `check`; the engine is dropped outside the timing.
fn bench_open(b: &mut Bencher<'_>, dir: &Path, check: impl Fn(&Engine)) {
    b.iter_batched(
        || (),
        |()| {
            let engine = Engine::open(dir).expect("loads");
            check(&engine);
            engine
        },
        BatchSize::PerIteration,
    )
}

fn load_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    let data = common::data_dir();
    group.throughput(Throughput::Bytes(common::snapshot_bytes(&data)));
    group.bench_with_input(BenchmarkId::from_parameter("data"), &data, |b, dir| {
        bench_open(b, dir, |engine| assert_eq!(engine.catalogs().count(), 3))
    });
    if let Some(dir) = common::real_data() {
        group.throughput(Throughput::Bytes(common::snapshot_bytes(&dir)));
        group.bench_with_input(
            BenchmarkId::from_parameter("pokemon-tcg"),
            &dir,
            |b, dir| {
                bench_open(b, dir, |engine| {
                    assert_eq!(
                        engine.catalog("pokemon").expect("imported").cards().len(),
                        20_078
                    )
                })
            },
        );
    }
    for n in common::sizes() {
        let dir = common::generated(n);
        group.throughput(Throughput::Bytes(common::snapshot_bytes(&dir)));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(if n >= 1_000_000 { 120 } else { 20 }));
        group.bench_with_input(
            BenchmarkId::from_parameter(common::label(n)),
            &dir,
            |b, dir| {
                bench_open(b, dir, |engine| {
                    assert_eq!(engine.catalog("tcg").expect("generated").cards().len(), n)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, load_benches);
criterion_main!(benches);
