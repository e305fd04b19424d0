//! The peers of the `peers` bench: what an engineer would embed for card search
//! instead of cardex — SQLite in memory ([`sqlite`]), tantivy ([`tantivy_peer`]) and a scan
//! over structs deserialised with serde ([`scan`]) — each loaded from the same snapshot and
//! asked the same questions: the total count and the ids of the first 100 cards in default
//! order, as strings, copied out of each engine's own storage into an [`Answer`].
//!
//! Every engine gets the same analysis at ingest: values folded with `cardex::query::fold`,
//! text split into words with `cardex::query::words` (the contract's matching rules, which
//! the peers' own analysers do not implement: accents, CJK word boundaries). The default
//! order is computed here, independently of cardex, from the records themselves, and given
//! to each peer as a `rank` column, the way a service would store a precomputed sort key.
#![allow(dead_code)]

pub mod prices;
pub mod scan;
pub mod sqlite;
pub mod tantivy_peer;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;

/// cardex's answer: `Catalog::hits`, the count and the first page's card ids, read from
/// the catalog's id column.
pub fn cardex_answer(catalog: &cardex::Catalog, class: Class) -> Answer {
    let (q, lang) = class.cardex_request();
    let mut req = cardex::SearchRequest::new(q);
    req.lang = lang;
    Answer::of_hits(catalog, &catalog.hits(&req).expect("cardex answers"))
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

/// An answer: every match counted, and the ids of the first [`PAGE`] cards in default
/// order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// Every match.
    pub total: u64,
    /// The first page's card ids.
    pub ids: Ids,
}

impl Answer {
    /// An answer of `total` matches, with room for a page of ids.
    pub fn new(total: u64) -> Answer {
        Answer {
            total,
            ids: Ids::with_capacity(PAGE),
        }
    }

    /// cardex's card search `hits` on `catalog` as an answer, the ids read from the
    /// catalog's id column.
    pub fn of_hits(catalog: &cardex::Catalog, hits: &cardex::Hits) -> Answer {
        let mut answer = Answer::new(hits.total_count);
        for id in hits.ids(catalog.cards()) {
            answer.ids.push(&id);
        }
        answer
    }

    /// An answer of `total` matches whose ids are the first column of `rows` (SQLite's),
    /// each read as `&str` from its row.
    pub fn of_rows(total: u64, mut rows: rusqlite::Rows<'_>) -> Answer {
        let mut answer = Answer::new(total);
        while let Some(row) = rows.next().expect("a row") {
            answer
                .ids
                .push(row.get_ref(0).and_then(|v| Ok(v.as_str()?)).expect("an id"));
        }
        answer
    }
}

/// A page of card ids as strings, in one buffer (two allocations a page, whichever engine
/// fills it).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Ids {
    text: String,
    ends: Vec<u32>,
}

impl Ids {
    /// Room for `n` ids of typical length.
    pub fn with_capacity(n: usize) -> Ids {
        Ids {
            text: String::with_capacity(n * 16),
            ends: Vec::with_capacity(n),
        }
    }

    /// Appends `id`.
    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len() as u32);
    }

    /// How many ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The ids, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start as usize..end as usize])
    }
}

impl std::fmt::Debug for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
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

/// A card as the snapshot has it, the fields the peers index (serde borrows the strings
/// from the file's bytes where they have no escapes).
#[derive(Deserialize)]
struct SnapshotCard<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    expansion_id: Cow<'a, str>,
    #[serde(borrow, default)]
    printings: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow, default)]
    variants: Option<Vec<SnapshotVariant<'a>>>,
    #[serde(borrow, default)]
    rarity_code: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    language_code: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    hp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    attacks: Option<Vec<SnapshotAttack<'a>>>,
    #[serde(borrow, default)]
    number: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SnapshotVariant<'a> {
    #[serde(borrow, default)]
    printings: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
struct SnapshotAttack<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SnapshotExpansion<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default)]
    release_date: Option<Cow<'a, str>>,
}

impl SnapshotCard<'_> {
    /// The card as the peers index it (rank 0 until sorted), with `json` as its JSON.
    fn analysed(self, json: String) -> (Card, Option<String>) {
        let expansion_id = fold(&self.expansion_id);
        let mut printings: Vec<String> = match &self.printings {
            Some(own) => own.iter().map(|p| fold(p)).collect(),
            None => vec![expansion_id.clone()],
        };
        for variant in self.variants.iter().flatten() {
            printings.extend(variant.printings.iter().flatten().map(|p| fold(p)));
        }
        printings.push(expansion_id.clone());
        let mut seen = std::collections::HashSet::new();
        printings.retain(|p| seen.insert(p.clone()));
        let card = Card {
            rank: 0,
            id: self.id.into_owned(),
            expansion_id,
            printings,
            rarity_code: self.rarity_code.as_deref().map(fold),
            language_code: self.language_code.as_deref().map(fold),
            hp: self.hp.as_deref().and_then(|h| h.parse().ok()),
            name: self.name.as_deref().map(words).unwrap_or_default(),
            attacks: self
                .attacks
                .iter()
                .flatten()
                .filter_map(|a| a.name.as_deref().map(words))
                .collect(),
            json,
        };
        (card, self.number.as_deref().map(fold))
    }
}

/// Reads the cards of `catalog` in the snapshot `dir` with serde_json into typed structs
/// (in parallel over files, with rayon), in default order, each with its JSON as the file
/// has it, to serve it: the file is read as a list of raw JSON values, and each is
/// deserialised from its own text.
pub fn read_cards(dir: &Path, catalog: &str) -> Vec<Card> {
    let root = dir.join(catalog);
    let mut dates = std::collections::HashMap::new();
    for file in json_files(&root.join("expansions")) {
        let bytes = std::fs::read(&file).expect("read");
        let records: Vec<SnapshotExpansion> = serde_json::from_slice(&bytes).expect("expansions");
        for e in records {
            dates.insert(fold(&e.id), e.release_date.map(Cow::into_owned));
        }
    }
    let mut cards: Vec<(Card, Option<String>, Option<String>)> = json_files(&root.join("cards"))
        .par_iter()
        .flat_map_iter(|file| {
            let bytes = std::fs::read(file).expect("read");
            let records: Vec<&RawValue> = serde_json::from_slice(&bytes).expect("cards");
            records
                .into_iter()
                .map(|raw| {
                    let card: SnapshotCard = serde_json::from_str(raw.get()).expect("a card");
                    let (card, number) = card.analysed(raw.get().to_string());
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
