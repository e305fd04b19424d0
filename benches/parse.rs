//! What's measured: `cardex::query::parse` alone — text to syntax tree — for a typical
//! query, a larger one, and the pathological shapes the limits allow (32 nested groups,
//! 128 OR-ed terms, a 2 KB query), as regression guards against exponential parsing.
//!
//! Corpus model: fixed strings; no catalog involved.
//!
//! Run: `cargo bench --bench parse`

use std::hint::black_box;

use cardex::query::parse;
use criterion::{criterion_group, criterion_main, Criterion};

fn parse_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    let nested = format!("{}name:a{}", "(".repeat(32), ")".repeat(32));
    let long_or = (0..128)
        .map(|i| format!("id:c{i}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let cases: Vec<(&str, String)> = vec![
        ("typical", "printings:PRB01 AND rarity_code:SR".to_string()),
        ("quoted", r#"rarity:"Super Rare" name:"charizard ex""#.to_string()),
        (
            "complex",
            r#"name:char* (subtypes:mega OR subtypes:vmax) -types:water hp:[100 TO *] attacks.name:"fire spin" !rarity:"Double Rare""#.to_string(),
        ),
        ("nested_32", nested),
        ("or_128_terms", long_or),
    ];
    for (name, q) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| {
                let parsed = parse(black_box(q)).expect("parses");
                assert!(parsed.expr.is_some());
                parsed
            })
        });
    }
    group.finish();
}

criterion_group!(benches, parse_benches);
criterion_main!(benches);
