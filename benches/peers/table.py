#!/usr/bin/env python3
"""Prints the medians of `cargo bench -p cardex-peers --bench peers` as the Markdown tables of BENCHMARKS.md.

Reads criterion's estimates under target/criterion/peers_<class>/<engine>/<size>/new/.
Usage: python3 benches/peers/table.py [SIZE ...]   (default: 10k 100k 1M)
"""
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "target", "criterion")
CLASSES = [
    ("keyword", "`rarity_code:SR`"),
    ("printings_and_rarity", "`printings:s24 AND rarity_code:SR`"),
    ("or_of_three", "`rarity_code:SR OR rarity_code:SEC OR rarity_code:UR`"),
    ("and_not", "`expansion_id:s10 AND NOT rarity_code:C`"),
    ("range", "`hp:[200 TO *]`"),
    ("text_word", "`name:charizard`"),
    ("phrase", "`attacks.name:\"flame burst\"`"),
    ("wildcard", "`name:char*`"),
    ("language_scoped", "`name:ex` in `/ja/`"),
    ("language_all", "`language_code:EN`"),
]
ENGINES = ["cardex", "tantivy", "tantivy-tuned", "sqlite", "scan"]


def median(cls, engine, size):
    path = os.path.join(ROOT, f"peers_{cls}", engine, size, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def show(ns):
    if ns is None:
        return "—"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns / 1e6:.3g} ms"


def main():
    for size in sys.argv[1:] or ["10k", "100k", "1M"]:
        print(f"\n#### {size}\n")
        print("| class | query | cardex | tantivy | tantivy-tuned | SQLite | scan "
              "| tantivy ÷ cardex | tuned ÷ cardex | SQLite ÷ cardex |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for cls, query in CLASSES:
            m = {e: median(cls, e, size) for e in ENGINES}

            def ratio(e):
                return f"{m[e] / m['cardex']:.1f}×" if m[e] and m["cardex"] else "—"

            cells = " | ".join(show(m[e]) for e in ENGINES)
            print(f"| {cls} | {query} | {cells} | {ratio('tantivy')} | "
                  f"{ratio('tantivy-tuned')} | {ratio('sqlite')} |")


if __name__ == "__main__":
    main()
