//! Loads one engine of the peers bench over a snapshot, in a process of its own, and
//! reports its load time and resident memory (Linux), against the snapshot's compact JSON:
//! the "load" and "memory" columns of BENCHMARKS.md.
//!
//! ```sh
//! cargo run --release -p cardex-peers --example peer_footprint -- cardex  target/bench-data/tcg-1000000
//! cargo run --release -p cardex-peers --example peer_footprint -- tantivy target/bench-data/tcg-1000000
//! cargo run --release -p cardex-peers --example peer_footprint -- sqlite  target/bench-data/tcg-1000000
//! cargo run --release -p cardex-peers --example peer_footprint -- scan    target/bench-data/tcg-1000000
//! cargo run --release -p cardex-peers --example peer_footprint -- serde   target/bench-data/tcg-1000000
//! cargo run --release -p cardex-peers --example peer_footprint -- serde-parallel target/bench-data/tcg-1000000
//! ```
//!
//! `serde` and `serde-parallel` are not engines but a yardstick for the machine: the least
//! any loader must do, a validating `serde_json` parse of every record file that builds
//! nothing (`serde::de::IgnoredAny`), on one thread or on all (rayon, file by file).
//!
//! A peer's load is everything from the files to a queryable engine: reading and parsing
//! the JSON with serde (in parallel), the same folding and word splitting as cardex, then
//! building its tables or index; the parsed structs are dropped afterwards, except by the
//! scan, which is them.

use std::path::PathBuf;
use std::time::Instant;

use cardex_peers::{read_cards, resident_bytes, scan::Scan, sqlite::Sqlite, tantivy_peer::Tantivy};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [engine, dir] = args.as_slice() else {
        eprintln!(
            "usage: peer_footprint cardex|tantivy|sqlite|scan|serde|serde-parallel SNAPSHOT_DIR"
        );
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let before = resident_bytes().0;
    let start = Instant::now();
    // Keep the engine alive until memory is read.
    let held: Box<dyn std::any::Any> = match engine.as_str() {
        "cardex" => Box::new(cardex::Engine::open(&dir).expect("open")),
        "tantivy" => Box::new(Tantivy::new(&read_cards(&dir, "tcg"))),
        "sqlite" => Box::new(Sqlite::new(&read_cards(&dir, "tcg"))),
        "scan" => Box::new(Scan::load(&dir, "tcg")),
        "serde" => Box::new(
            record_files(&dir)
                .iter()
                .map(|f| parse_values(f))
                .collect::<Vec<_>>(),
        ),
        "serde-parallel" => {
            use rayon::prelude::*;
            Box::new(
                record_files(&dir)
                    .par_iter()
                    .map(|f| parse_values(f))
                    .collect::<Vec<_>>(),
            )
        }
        other => {
            eprintln!("unknown engine `{other}`");
            std::process::exit(2);
        }
    };
    let load = start.elapsed().as_secs_f64();
    let (resident, peak) = resident_bytes();
    let compact = compact_json_bytes(&dir) as f64;
    let mib = |b: f64| b / (1024.0 * 1024.0);
    println!(
        "{engine}: load {load:.2} s; resident {:.1} MiB ({:.2}x compact JSON); peak {:.1} MiB; compact JSON {:.1} MiB",
        mib((resident - before) as f64),
        (resident - before) as f64 / compact,
        mib(peak as f64),
        mib(compact)
    );
    drop(held);
}

/// Every record file of the snapshot (cards and expansions), in name order.
fn record_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in ["tcg/cards", "tcg/expansions"] {
        for entry in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            files.push(entry.path());
        }
    }
    files.sort();
    files
}

/// One record file read and parsed, building nothing: its number of records.
fn parse_values(file: &std::path::Path) -> usize {
    let records: Vec<serde::de::IgnoredAny> =
        serde_json::from_slice(&std::fs::read(file).expect("read")).expect("JSON");
    records.len()
}

/// The snapshot's records as compact JSON (what cardex serves), in bytes.
fn compact_json_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for sub in ["tcg/cards", "tcg/expansions"] {
        for entry in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read(entry.path()).expect("read");
            let records: Vec<serde_json::Value> = serde_json::from_slice(&text).expect("JSON");
            total += records
                .iter()
                .map(|r| serde_json::to_string(r).expect("JSON").len() as u64)
                .sum::<u64>();
        }
    }
    total
}
