//! Loads a snapshot and reports its size, the load time, the resident memory after load
//! (from `/proc/self/status`, Linux), the engine's own estimate of its heap use, and the
//! time a reload adds on top of the load to mark prices and pop reports for change
//! detection (`cardex::Marks::of`, measured after the memory figures).
//!
//! ```sh
//! cargo run --release --example footprint -- data
//! cargo run --release --example footprint -- --generate 1000000
//! cargo run --release --example footprint -- --store compressed --generate 1000000
//! ```

use std::path::PathBuf;
use std::time::Instant;

fn rss_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn json_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += json_bytes(&path);
        } else if path.extension().is_some_and(|e| e == "json") {
            total += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    total
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = cardex::OpenOptions::new();
    if args.first().is_some_and(|a| a == "--store") && args.len() > 1 {
        options = options.store(args[1].parse().unwrap_or_else(|e: String| {
            eprintln!("{e}");
            std::process::exit(2);
        }));
        args.drain(..2);
    }
    let dir = match args.as_slice() {
        [flag, n] if flag == "--generate" => {
            let n: usize = n.parse().expect("a number of cards");
            let dir = std::env::temp_dir().join(format!("cardex-footprint-{n}"));
            if !dir.join(".complete").exists() {
                cardex::generate::write_snapshot(
                    &dir,
                    &cardex::generate::Options {
                        cards: n,
                        ..Default::default()
                    },
                )
                .expect("generate");
                std::fs::write(dir.join(".complete"), "").expect("mark");
            }
            dir
        }
        [path] => PathBuf::from(path),
        _ => {
            eprintln!(
                "usage: footprint [--store plain|compressed] <snapshot dir> | --generate <cards>"
            );
            std::process::exit(2);
        }
    };
    let before = rss_kib("VmRSS:").unwrap_or(0);
    let start = Instant::now();
    let engine = cardex::Engine::open_with(&dir, &options, |_| {}).expect("loads");
    let elapsed = start.elapsed();
    let after = rss_kib("VmRSS:").unwrap_or(0);
    let peak = rss_kib("VmHWM:").unwrap_or(0);
    let file_bytes = json_bytes(&dir);
    let mut compact = 0u64;
    let mut heap = 0usize;
    let mut text = 0usize;
    let mut cards = 0usize;
    for catalog in engine.catalogs() {
        for collection in [catalog.cards(), catalog.expansions()] {
            compact += (0..collection.len() as u32)
                .map(|i| collection.doc_len(i) as u64)
                .sum::<u64>();
            heap += collection.heap_bytes();
            text += collection.text_heap_bytes();
        }
        cards += catalog.cards().len();
    }
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!("snapshot:        {}", dir.display());
    println!("store:           {}", options.store.as_str());
    println!("cards:           {cards}");
    println!("files (JSON):    {:.1} MiB", mib(file_bytes));
    println!("compact JSON:    {:.1} MiB", mib(compact));
    println!(
        "load time:       {:.3} s ({:.0} MB/s of file JSON)",
        elapsed.as_secs_f64(),
        file_bytes as f64 / 1e6 / elapsed.as_secs_f64()
    );
    println!(
        "resident after:  {:.1} MiB ({:.2}x compact JSON; {:.1} MiB before loading)",
        mib((after - before) * 1024),
        (after - before) as f64 * 1024.0 / compact as f64,
        mib(before * 1024)
    );
    println!("peak resident:   {:.1} MiB", mib(peak * 1024));
    println!(
        "heap estimate:   {:.1} MiB ({:.2}x compact JSON)",
        mib(heap as u64),
        heap as f64 / compact as f64
    );
    println!(
        "records' JSON:   {:.1} MiB ({:.3}x compact JSON)",
        mib(text as u64),
        text as f64 / compact as f64
    );
    let start = Instant::now();
    let marks = cardex::Marks::of(&engine);
    println!(
        "change marks:    {:.3} s ({} bytes saved as JSON)",
        start.elapsed().as_secs_f64(),
        marks.to_json().len()
    );
}
