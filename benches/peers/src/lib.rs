//! The peers of the `peers` bench: what an engineer would embed for card search
//! instead of cardex — SQLite in memory ([`sqlite`]), tantivy ([`tantivy_peer`]) and a scan
//! over deserialised structs ([`scan`]) — each loaded from the same snapshot and asked the
//! same questions: the total count and the first 100 cards in default order.
//!
//! Every engine gets the same analysis at ingest: values folded with `cardex::query::fold`,
//! text split into words with `cardex::query::words` (the contract's matching rules, which
//! the peers' own analysers do not implement: accents, CJK word boundaries). The default
//! order is computed here, independently of cardex, from the records themselves, and given
//! to each peer as a `rank` column, the way a service would store a precomputed sort key.
//! An answer is a count and ranks, so answers compare across engines.
#![allow(dead_code)]

pub mod prices;
pub mod scan;
pub mod sqlite;
pub mod tantivy_peer;

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

/// cardex's answer: `Catalog::hits`, the count and the first page of record ids (which are
/// default-order positions).
pub fn cardex_answer(catalog: &cardex::Catalog, class: Class) -> Answer {
    let (q, lang) = class.cardex_request();
    let mut req = cardex::SearchRequest::new(q);
    req.lang = lang;
    let hits = catalog.hits(&req).expect("cardex answers");
    Answer {
        total: hits.total_count,
        first: hits.record_ids,
    }
}

/// How many ids an answer lists: one page of the service.
pub const PAGE: usize = 100;

/// The query classes measured, with the values the generated catalogs hold at every size
/// (10k cards have 50 expansions; `s24` is reprint-only, `s10` a debut set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `rarity_code:SR`
    Keyword,
    /// `printings:s24 AND rarity_code:SR`
    PrintingsAndRarity,
    /// `rarity_code:SR OR rarity_code:SEC OR rarity_code:UR`
    OrOfThree,
    /// `expansion_id:s10 AND NOT rarity_code:C`
    AndNot,
    /// `hp:[200 TO *]`
    Range,
    /// `name:charizard`
    TextWord,
    /// `attacks.name:"flame burst"`
    Phrase,
    /// `name:char*`
    Wildcard,
    /// `name:ex` in the `ja` scope (`/pokemon/v1/ja/cards?q=name:ex`)
    LanguageScoped,
    /// `language_code:EN`
    LanguageAll,
}

impl Class {
    /// Every class, in the order of the tables.
    pub const ALL: [Class; 10] = [
        Class::Keyword,
        Class::PrintingsAndRarity,
        Class::OrOfThree,
        Class::AndNot,
        Class::Range,
        Class::TextWord,
        Class::Phrase,
        Class::Wildcard,
        Class::LanguageScoped,
        Class::LanguageAll,
    ];

    /// The bench id.
    pub fn label(self) -> &'static str {
        match self {
            Class::Keyword => "keyword",
            Class::PrintingsAndRarity => "printings_and_rarity",
            Class::OrOfThree => "or_of_three",
            Class::AndNot => "and_not",
            Class::Range => "range",
            Class::TextWord => "text_word",
            Class::Phrase => "phrase",
            Class::Wildcard => "wildcard",
            Class::LanguageScoped => "language_scoped",
            Class::LanguageAll => "language_all",
        }
    }

    /// The `q` and language scope cardex is asked.
    pub fn cardex_request(self) -> (&'static str, Option<&'static str>) {
        match self {
            Class::Keyword => ("rarity_code:SR", None),
            Class::PrintingsAndRarity => ("printings:s24 AND rarity_code:SR", None),
            Class::OrOfThree => ("rarity_code:SR OR rarity_code:SEC OR rarity_code:UR", None),
            Class::AndNot => ("expansion_id:s10 AND NOT rarity_code:C", None),
            Class::Range => ("hp:[200 TO *]", None),
            Class::TextWord => ("name:charizard", None),
            Class::Phrase => ("attacks.name:\"flame burst\"", None),
            Class::Wildcard => ("name:char*", None),
            Class::LanguageScoped => ("name:ex", Some("ja")),
            Class::LanguageAll => ("language_code:EN", None),
        }
    }
}

/// The values the classes look for, folded as every engine stores them.
pub mod values {
    /// The rarity code of [`super::Class::Keyword`].
    pub const SR: &str = "sr";
    /// The other two codes of [`super::Class::OrOfThree`].
    pub const SEC: &str = "sec";
    /// See [`SEC`].
    pub const UR: &str = "ur";
    /// The common rarity that [`super::Class::AndNot`] leaves out.
    pub const C: &str = "c";
    /// The reprint-only expansion of [`super::Class::PrintingsAndRarity`].
    pub const REPRINT_SET: &str = "s24";
    /// The debut expansion of [`super::Class::AndNot`].
    pub const DEBUT_SET: &str = "s10";
    /// The lower bound of [`super::Class::Range`].
    pub const MIN_HP: i64 = 200;
    /// The word of [`super::Class::TextWord`].
    pub const WORD: &str = "charizard";
    /// The phrase of [`super::Class::Phrase`].
    pub const PHRASE: [&str; 2] = ["flame", "burst"];
    /// The prefix of [`super::Class::Wildcard`].
    pub const PREFIX: &str = "char";
    /// The scope and word of [`super::Class::LanguageScoped`].
    pub const JA: &str = "ja";
    /// See [`JA`].
    pub const EX: &str = "ex";
    /// The language of [`super::Class::LanguageAll`].
    pub const EN: &str = "en";
}

/// An answer: every match counted, and the ranks (default-order positions) of the first
/// [`PAGE`] in default order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// Every match.
    pub total: u64,
    /// The first page, ascending ranks.
    pub first: Vec<u32>,
}

/// One card as the peers index it: folded keyword values, folded words, the number, and the
/// served JSON.
#[derive(Debug, Clone)]
pub struct Card {
    /// Position in default order.
    pub rank: u32,
    /// The card's id as given.
    pub id: String,
    /// Folded.
    pub expansion_id: String,
    /// Folded; the contract's printings rule applied (own, variants', `expansion_id`).
    pub printings: Vec<String>,
    /// Folded.
    pub rarity_code: Option<String>,
    /// Folded.
    pub language_code: Option<String>,
    /// `hp` as a number.
    pub hp: Option<i64>,
    /// The words of `name`.
    pub name: Vec<String>,
    /// The words of each attack's name.
    pub attacks: Vec<Vec<String>>,
    /// The card's JSON, to serve it.
    pub json: String,
}

fn fold(s: &str) -> String {
    cardex::query::fold(s).into_owned()
}

fn words(s: &str) -> Vec<String> {
    cardex::query::words(&fold(s)).map(str::to_string).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Natural order of two folded strings, written here apart from cardex's: runs of digits
/// by value (then the shorter run), other runs by code point, a digit run before another
/// run, a string that runs out first first.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut digit = None;
        for (i, c) in s.char_indices() {
            let d = c.is_ascii_digit();
            if digit.is_some_and(|x| x != d) {
                out.push((digit.unwrap(), &s[start..i]));
                start = i;
            }
            digit = Some(d);
        }
        if let Some(d) = digit {
            out.push((d, &s[start..]));
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let ord = match (x.0, y.0) {
            (true, true) => {
                let (tx, ty) = (x.1.trim_start_matches('0'), y.1.trim_start_matches('0'));
                tx.len()
                    .cmp(&ty.len())
                    .then_with(|| tx.cmp(ty))
                    .then_with(|| x.1.len().cmp(&y.1.len()))
            }
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.1.cmp(y.1),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    ra.len().cmp(&rb.len())
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Reads the cards of `catalog` in the snapshot `dir` with serde_json (in parallel over
/// files), in default order.
pub fn read_cards(dir: &Path, catalog: &str) -> Vec<Card> {
    let root = dir.join(catalog);
    let mut dates = std::collections::HashMap::new();
    for file in json_files(&root.join("expansions")) {
        let records: Vec<Value> =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("expansions");
        for e in records {
            let id = fold(str_of(&e, "id").expect("expansion id"));
            dates.insert(id, str_of(&e, "release_date").map(str::to_string));
        }
    }
    let mut cards: Vec<(Card, Option<String>, Option<String>)> = json_files(&root.join("cards"))
        .par_iter()
        .flat_map_iter(|file| {
            let text = std::fs::read(file).expect("read");
            let records: Vec<Value> = serde_json::from_slice(&text).expect("cards");
            records
                .into_iter()
                .map(|v| {
                    let expansion_id = fold(str_of(&v, "expansion_id").expect("expansion_id"));
                    let mut printings: Vec<String> = match v.get("printings") {
                        Some(Value::Array(a)) => {
                            a.iter().filter_map(Value::as_str).map(fold).collect()
                        }
                        _ => vec![expansion_id.clone()],
                    };
                    for variant in v
                        .get("variants")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        for p in variant
                            .get("printings")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            printings.extend(p.as_str().map(fold));
                        }
                    }
                    printings.push(expansion_id.clone());
                    let mut seen = std::collections::HashSet::new();
                    printings.retain(|p| seen.insert(p.clone()));
                    let attacks = v
                        .get("attacks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|a| str_of(a, "name").map(words))
                        .collect();
                    let card = Card {
                        rank: 0,
                        id: str_of(&v, "id").expect("id").to_string(),
                        expansion_id,
                        printings,
                        rarity_code: str_of(&v, "rarity_code").map(fold),
                        language_code: str_of(&v, "language_code").map(fold),
                        hp: str_of(&v, "hp").and_then(|h| h.parse().ok()),
                        name: str_of(&v, "name").map(words).unwrap_or_default(),
                        attacks,
                        json: serde_json::to_string(&v).expect("serialise"),
                    };
                    let number = str_of(&v, "number").map(fold);
                    (card, number, None)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    for (card, _, date) in &mut cards {
        *date = dates.get(&card.expansion_id).cloned().flatten();
    }
    // The default order: debut expansion's release date (missing last), expansion id,
    // number (missing last), id.
    cards.par_sort_by(|(a, an, ad), (b, bn, bd)| {
        let missing_last =
            |x: &Option<String>, y: &Option<String>, f: fn(&str, &str) -> Ordering| match (x, y) {
                (Some(x), Some(y)) => f(x, y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            };
        missing_last(ad, bd, |x, y| x.cmp(y))
            .then_with(|| natural_cmp(&a.expansion_id, &b.expansion_id))
            .then_with(|| missing_last(an, bn, natural_cmp))
            .then_with(|| natural_cmp(&fold(&a.id), &fold(&b.id)))
    });
    cards
        .into_iter()
        .enumerate()
        .map(|(rank, (mut card, _, _))| {
            card.rank = rank as u32;
            card
        })
        .collect()
}

/// Resident and peak resident memory of this process, in bytes (Linux), from
/// `/proc/self/status`.
pub fn resident_bytes() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
