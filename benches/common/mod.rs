//! Datasets shared by the benches: the bundled `data/` snapshot, and seeded generated
//! catalogs written once under `target/bench-data/` and reused by later runs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use cardex::generate::{write_snapshot, Options};
use cardex::Engine;

/// The repository root: the manifest folder of `cardex`, or two folders above that of
/// the `cardex-peers` member (`benches/peers/`), which includes this module too.
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if env!("CARGO_PKG_NAME") == "cardex" {
        manifest
    } else {
        manifest.join("../..")
    }
}

/// The bundled snapshot.
pub fn data_dir() -> PathBuf {
    repo_root().join("data")
}

/// The generated sizes to bench, from `CARDEX_BENCH_SIZES` (comma list, e.g. `100000`),
/// by default 100k and 1M cards.
pub fn sizes() -> Vec<usize> {
    match std::env::var("CARDEX_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => vec![100_000, 1_000_000],
    }
}

/// The sizes of the peer benches, from `CARDEX_PEER_SIZES` (comma list), else `default`.
pub fn peer_sizes(default: &[usize]) -> Vec<usize> {
    match std::env::var("CARDEX_PEER_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => default.to_vec(),
    }
}

/// A label for a size: `100k`, `1M`.
pub fn label(n: usize) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

/// The folder of a generated snapshot of `n` cards (seed 7), written on first use.
pub fn generated(n: usize) -> PathBuf {
    let dir = repo_root()
        .join("target/bench-data")
        .join(format!("tcg-{n}"));
    let done = dir.join(".complete");
    if !done.exists() {
        eprintln!("generating {} cards into {} ...", n, dir.display());
        write_snapshot(
            &dir,
            &Options {
                cards: n,
                ..Options::default()
            },
        )
        .expect("write the bench snapshot");
        std::fs::write(&done, "").expect("mark complete");
    }
    dir
}

/// The bytes of JSON of a snapshot folder (as written).
pub fn snapshot_bytes(dir: &std::path::Path) -> u64 {
    fn walk(p: &std::path::Path) -> u64 {
        std::fs::read_dir(p)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| {
                        let path = e.path();
                        if path.is_dir() {
                            walk(&path)
                        } else if path.extension().is_some_and(|x| x == "json") {
                            e.metadata().map(|m| m.len()).unwrap_or(0)
                        } else {
                            0
                        }
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(dir)
}

/// The engine over the bundled snapshot, loaded once.
pub fn data_engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| Engine::open(data_dir()).expect("bundled snapshot"))
}

/// The engine over a generated snapshot, loaded once per size.
pub fn generated_engine(n: usize) -> &'static Engine {
    static ENGINES: OnceLock<std::sync::Mutex<Vec<(usize, &'static Engine)>>> = OnceLock::new();
    let cache = ENGINES.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap();
    if let Some((_, e)) = cache.iter().find(|(k, _)| *k == n) {
        return e;
    }
    let engine: &'static Engine = Box::leak(Box::new(
        Engine::open(generated(n)).expect("generated snapshot"),
    ));
    cache.push((n, engine));
    engine
}

/// The Pokémon TCG data set imported into a snapshot (once, under `target/bench-data/`),
/// when `../shared/data/pokemon-tcg-data` (or `CARDEX_POKEMON_TCG_DATA`) exists.
pub fn real_data() -> Option<PathBuf> {
    let src = std::env::var_os("CARDEX_POKEMON_TCG_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/data/pokemon-tcg-data"));
    if !src.join("sets/en.json").is_file() {
        eprintln!(
            "skipped: the Pokémon TCG data set is not at {}",
            src.display()
        );
        return None;
    }
    let out = repo_root().join("target/bench-data/pokemon-tcg");
    if !out.join(".complete").exists() {
        let options = cardex::import::pokemon_tcg::Options {
            force: true,
            ..Default::default()
        };
        cardex::import::pokemon_tcg::import(&src, &out, &options, &|_| {})
            .expect("import the data set");
        std::fs::write(out.join(".complete"), "").expect("mark complete");
    }
    Some(out)
}

/// The engine over the imported data set, loaded once.
pub fn real_engine() -> Option<&'static Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| real_data().map(|dir| Engine::open(dir).expect("imported snapshot")))
        .as_ref()
}
