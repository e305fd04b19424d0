//! Seeded synthetic snapshots, shaped like real catalogs, for benchmarks and tests.
//!
//! One catalog of `cards` cards in `cards / 200` expansions (English and Japanese, a few
//! reprint-only), with skewed rarities, several printings for a share of the cards,
//! variants with raw and graded prices and some pop reports, Japanese cards with
//! `translation.en`, and text fields (names, attacks, flavour text) drawn from realistic
//! vocabularies. The same options always write the same bytes.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("cardex-doc-generate-{}", std::process::id()));
//! let stats = cardex::generate::write_snapshot(&dir, &cardex::generate::Options { cards: 500, ..Default::default() })?;
//! assert_eq!(stats.cards, 500);
//! let engine = cardex::Engine::open(&dir)?;
//! assert_eq!(engine.catalog("tcg").unwrap().cards().len(), 500);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::import::{remove_any, run_of, run_suffix};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The number of cards.
    pub cards: usize,
    /// The seed: the same seed gives the same snapshot.
    pub seed: u64,
    /// The catalog's name (its folder).
    pub catalog: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cards: 10_000,
            seed: 7,
            catalog: "tcg".to_string(),
        }
    }
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Cards written.
    pub cards: usize,
    /// Expansions written.
    pub expansions: usize,
    /// Bytes of JSON written (compact).
    pub bytes: u64,
}

/// SplitMix64: a small, fast, seedable generator (no dependency for ten lines).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// `true` with probability `p` percent.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// An element of `items` chosen by `weights` (same length, not all zero).
    pub fn weighted<'a, T>(&mut self, items: &'a [T], weights: &[usize]) -> &'a T {
        let total: usize = weights.iter().sum();
        let mut x = self.below(total);
        for (item, &w) in items.iter().zip(weights) {
            if x < w {
                return item;
            }
            x -= w;
        }
        &items[items.len() - 1]
    }
}

const NAMES: &[&str] = &[
    "Bulbasaur",
    "Ivysaur",
    "Venusaur",
    "Charmander",
    "Charmeleon",
    "Charizard",
    "Squirtle",
    "Wartortle",
    "Blastoise",
    "Caterpie",
    "Pidgey",
    "Rattata",
    "Pikachu",
    "Raichu",
    "Sandshrew",
    "Vulpix",
    "Ninetales",
    "Jigglypuff",
    "Zubat",
    "Oddish",
    "Psyduck",
    "Golduck",
    "Growlithe",
    "Arcanine",
    "Poliwag",
    "Abra",
    "Kadabra",
    "Alakazam",
    "Machop",
    "Machamp",
    "Geodude",
    "Ponyta",
    "Slowpoke",
    "Magnemite",
    "Gastly",
    "Haunter",
    "Gengar",
    "Onix",
    "Cubone",
    "Koffing",
    "Chansey",
    "Staryu",
    "Scyther",
    "Jynx",
    "Magmar",
    "Pinsir",
    "Magikarp",
    "Gyarados",
    "Lapras",
    "Ditto",
    "Eevee",
    "Vaporeon",
    "Jolteon",
    "Flareon",
    "Snorlax",
    "Articuno",
    "Zapdos",
    "Moltres",
    "Dratini",
    "Dragonite",
    "Mewtwo",
    "Mew",
    "Chikorita",
    "Cyndaquil",
    "Totodile",
    "Togepi",
    "Mareep",
    "Ampharos",
    "Umbreon",
    "Espeon",
    "Scizor",
    "Heracross",
    "Tyranitar",
    "Lugia",
    "Ho-Oh",
    "Celebi",
    "Treecko",
    "Torchic",
    "Mudkip",
    "Gardevoir",
    "Aggron",
    "Flygon",
    "Altaria",
    "Absol",
    "Salamence",
    "Metagross",
    "Rayquaza",
    "Lucario",
    "Garchomp",
    "Zoroark",
    "Greninja",
    "Sylveon",
    "Flabébé",
    "Mimikyu",
    "Rowlet",
    "Decidueye",
    "Zeraora",
    "Dragapult",
    "Zacian",
    "Iron Valiant",
    "Roaring Moon",
    "Miraidon",
    "Koraidon",
    "Farfetch'd",
    "Mr. Mime",
    "Porygon-Z",
];

const JA_NAMES: &[&str] = &[
    "フシギダネ",
    "リザードン",
    "ゼニガメ",
    "ピカチュウ",
    "ライチュウ",
    "ロコン",
    "プリン",
    "コダック",
    "ガーディ",
    "ウインディ",
    "ケーシィ",
    "ゴースト",
    "ゲンガー",
    "イワーク",
    "ラプラス",
    "メタモン",
    "イーブイ",
    "カビゴン",
    "ミュウツー",
    "ミュウ",
    "ルギア",
    "サーナイト",
    "レックウザ",
    "ルカリオ",
    "ガブリアス",
    "ゲッコウガ",
    "ニンフィア",
    "ミミッキュ",
    "ドラパルト",
    "ザシアン",
];

const SUFFIXES: &[&str] = &["ex", "V", "VMAX", "VSTAR", "GX", "EX", "BREAK"];
const TYPES: &[&str] = &[
    "Grass",
    "Fire",
    "Water",
    "Lightning",
    "Psychic",
    "Fighting",
    "Darkness",
    "Metal",
    "Dragon",
    "Colorless",
];
const JA_TYPES: &[&str] = &["草", "炎", "水", "雷", "超", "闘", "悪", "鋼", "竜", "無色"];
const RARITIES: &[(&str, &str)] = &[
    ("Common", "C"),
    ("Uncommon", "U"),
    ("Rare", "R"),
    ("Double Rare", "RR"),
    ("Super Rare", "SR"),
    ("Illustration Rare", "IR"),
    ("Special Illustration Rare", "SIR"),
    ("Ultra Rare", "UR"),
    ("Hyper Rare", "HR"),
    ("Secret Rare", "SEC"),
];
const RARITY_WEIGHTS: &[usize] = &[400, 250, 120, 60, 40, 50, 20, 25, 10, 25];
const ATTACK_WORDS: &[&str] = &[
    "Flame", "Burst", "Thunder", "Crash", "Hydro", "Pump", "Leaf", "Storm", "Shadow", "Claw",
    "Psychic", "Wave", "Quick", "Attack", "Iron", "Tail", "Dragon", "Pulse", "Blizzard", "Surf",
    "Slash", "Tackle", "Ember", "Spark", "Gust", "Drain", "Mega", "Punch", "Fury", "Swipes",
];
const TEXT_WORDS: &[&str] = &[
    "flip",
    "a",
    "coin",
    "if",
    "heads",
    "this",
    "attack",
    "does",
    "more",
    "damage",
    "your",
    "opponent's",
    "active",
    "Pokémon",
    "is",
    "now",
    "Paralyzed",
    "discard",
    "an",
    "Energy",
    "from",
    "Benched",
    "each",
    "of",
    "the",
    "to",
    "1",
    "2",
    "3",
    "10",
    "20",
    "30",
    "50",
    "for",
    "during",
    "next",
    "turn",
    "prevent",
    "all",
    "effects",
    "attacks",
    "done",
    "heal",
    "draw",
    "card",
    "cards",
    "search",
    "deck",
    "shuffle",
    "Burned",
    "Confused",
    "Poisoned",
    "Asleep",
    "switch",
    "with",
    "one",
    "Basic",
    "put",
    "it",
    "onto",
];
const FLAVOR_WORDS: &[&str] = &[
    "it",
    "lives",
    "in",
    "deep",
    "forests",
    "and",
    "mountains",
    "when",
    "angry",
    "its",
    "tail",
    "glows",
    "legends",
    "say",
    "the",
    "ocean",
    "sky",
    "storms",
    "gather",
    "around",
    "this",
    "Pokémon",
    "ancient",
    "ruins",
    "hide",
    "quietly",
    "hunts",
    "at",
    "night",
    "friends",
    "travel",
    "together",
    "bright",
    "flames",
];
const ARTISTS: &[&str] = &[
    "Mitsuhiro Arita",
    "Ken Sugimori",
    "Kagemaru Himeno",
    "5ban Graphics",
    "Atsuko Nishida",
    "Naoki Saito",
    "Ryota Murayama",
    "Yuka Morii",
    "Kouki Saitou",
    "Hasuno",
    "Taira Akitsu",
    "PLANETA Mochizuki",
];
const CONDITIONS: &[&str] = &["NM", "LP", "MP", "HP", "DM"];
const COMPANIES: &[&str] = &["PSA", "CGC", "BGS"];
const GRADES: &[&str] = &["10", "9.5", "9", "8"];

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_list(out: &mut String, items: &[&str]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, item);
    }
    out.push(']');
}

/// An expansion of the generated catalog.
#[derive(Debug, Clone)]
struct Expansion {
    id: String,
    japanese: bool,
    reprint_only: bool,
    date: String,
}

fn expansions(rng: &mut Rng, count: usize) -> Vec<Expansion> {
    (0..count)
        .map(|i| {
            let japanese = i % 4 == 3;
            let reprint_only = i % 25 == 24;
            let year = 1999 + i * 27 / count.max(1);
            let date = format!("{year}/{:02}/{:02}", 1 + rng.below(12), 1 + rng.below(28));
            let id = if japanese {
                format!("s{i}_ja")
            } else {
                format!("s{i}")
            };
            Expansion {
                id,
                japanese,
                reprint_only,
                date,
            }
        })
        .collect()
}

impl Expansion {
    /// The expansion's language and language code.
    fn language(&self) -> (&'static str, &'static str) {
        if self.japanese {
            ("Japanese", "JA")
        } else {
            ("English", "EN")
        }
    }
}

fn write_expansion(out: &mut String, e: &Expansion, size: usize) {
    let (language, code) = e.language();
    let _ = write!(
        out,
        r#"{{"id":"{}","name":"{} {}","series":"Series {}","code":"{}","total":{size},"printed_total":{},"language":"{language}","language_code":"{code}","release_date":"{}","is_online_only":false"#,
        e.id,
        if e.reprint_only {
            "Premium Collection"
        } else {
            "Expansion"
        },
        e.id.to_uppercase(),
        e.date.get(..4).unwrap_or("2000"),
        e.id.to_uppercase(),
        size.saturating_sub(size / 10),
        e.date,
    );
    if e.japanese {
        let _ = write!(
            out,
            r#","translation":{{"en":{{"name":"Expansion {}"}}}}"#,
            e.id.to_uppercase()
        );
    }
    out.push('}');
}

fn words(rng: &mut Rng, vocab: &[&str], min: usize, max: usize) -> String {
    let n = min + rng.below(max - min + 1);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let word: &str = rng.pick::<&str>(vocab);
        s.push_str(word);
    }
    s
}

fn write_prices(out: &mut String, rng: &mut Rng, currency: &str) {
    out.push_str(",\"prices\":[");
    let base = 0.25 + rng.below(4000) as f64 / 20.0;
    let raw = 1 + usize::from(rng.chance(25));
    for (i, condition) in CONDITIONS.iter().enumerate().take(raw) {
        if i > 0 {
            out.push(',');
        }
        let market = base * (1.0 - i as f64 * 0.2);
        let _ = write!(
            out,
            r#"{{"type":"raw","condition":"{}","is_perfect":false,"is_signed":false,"is_error":false,"low":{:.2},"market":{:.2},"currency":"{currency}"}}"#,
            condition,
            market * 0.8,
            market
        );
    }
    if rng.chance(40) {
        let grade = *rng.pick(GRADES);
        let market = base * 6.0;
        let _ = write!(
            out,
            r#",{{"type":"graded","company":"{}","grade":"{grade}","is_perfect":{},"is_signed":false,"is_error":false,"low":{:.2},"mid":{:.2},"high":{:.2},"market":{:.2},"currency":"{currency}"}}"#,
            rng.pick(COMPANIES),
            grade == "10" && rng.chance(20),
            market * 0.8,
            market,
            market * 1.3,
            market * 1.05
        );
    }
    out.push(']');
}

fn write_card(out: &mut String, rng: &mut Rng, e: &Expansion, number: usize, printings: &[&str]) {
    let (rarity, rarity_code) = *rng.weighted(RARITIES, RARITY_WEIGHTS);
    let species = rng.below(NAMES.len());
    let suffix = if rng.chance(20) {
        Some(*rng.pick(SUFFIXES))
    } else {
        None
    };
    let type_index = rng.below(TYPES.len());
    let hp = 30 + 10 * rng.below(if suffix.is_some() { 31 } else { 15 });
    let english_name = match suffix {
        Some(s) => format!("{} {s}", NAMES[species]),
        None => NAMES[species].to_string(),
    };
    let id = format!("{}-{number}", e.id);
    out.push_str("{\"id\":");
    json_str(out, &id);
    out.push_str(",\"name\":");
    if e.japanese {
        let ja = JA_NAMES[species % JA_NAMES.len()];
        match suffix {
            Some(s) => json_str(out, &format!("{ja}{s}")),
            None => json_str(out, ja),
        }
    } else {
        json_str(out, &english_name);
    }
    let types = if e.japanese { JA_TYPES } else { TYPES };
    let _ = write!(
        out,
        r#","supertype":"{}","subtypes":["Basic"{}],"hp":"{hp}","types":["{}"]"#,
        if e.japanese {
            "ポケモン"
        } else {
            "Pokémon"
        },
        suffix.map(|s| format!(",\"{s}\"")).unwrap_or_default(),
        types[type_index],
    );
    let attacks = 1 + rng.below(2);
    let mut attack_names = Vec::new();
    out.push_str(",\"attacks\":[");
    for a in 0..attacks {
        if a > 0 {
            out.push(',');
        }
        let name = words(rng, ATTACK_WORDS, 1, 2);
        let cost = 1 + rng.below(3);
        let costs: Vec<&str> = (0..cost).map(|_| TYPES[type_index]).collect();
        out.push_str("{\"cost\":");
        json_list(out, &costs);
        let _ = write!(out, ",\"converted_energy_cost\":{cost},\"name\":");
        json_str(out, &name);
        out.push_str(",\"text\":");
        json_str(out, &words(rng, TEXT_WORDS, 0, 12));
        let _ = write!(out, ",\"damage\":\"{}\"}}", 10 * (1 + rng.below(20)));
        attack_names.push(name);
    }
    let weakness = TYPES[(type_index + 1) % TYPES.len()];
    let retreat = rng.below(4);
    let retreat_cost: Vec<&str> = (0..retreat).map(|_| "Colorless").collect();
    let _ = write!(
        out,
        r#"],"weaknesses":[{{"type":"{weakness}","value":"×2"}}],"retreat_cost":"#
    );
    json_list(out, &retreat_cost);
    let _ = write!(
        out,
        r#","converted_retreat_cost":{retreat},"number":"{number}","printed_number":"{number:03}/{}","rarity":"{rarity}","rarity_code":"{rarity_code}","artist":"#,
        200
    );
    let artist: &str = rng.pick::<&str>(ARTISTS);
    json_str(out, artist);
    let (language, code) = e.language();
    let _ = write!(
        out,
        r#","language":"{language}","language_code":"{code}","expansion_id":"{}","national_pokedex_numbers":[{}],"flavor_text":"#,
        e.id,
        species + 1
    );
    json_str(out, &words(rng, FLAVOR_WORDS, 4, 10));
    let legal = if number.is_multiple_of(7) {
        "Banned"
    } else {
        "Legal"
    };
    let _ = write!(
        out,
        r#","legalities":{{"standard":"{legal}","expanded":"Legal","unlimited":"Legal"}},"regulation_mark":"{}","images":[{{"type":"front","small":"https://img.example.com/{}/{number}.png"}}]"#,
        ["D", "E", "F", "G", "H"][species % 5],
        e.id,
    );
    if printings.len() > 1 {
        out.push_str(",\"printings\":");
        json_list(out, printings);
    }
    out.push_str(",\"variants\":[");
    let variant_names: &[&str] = if rng.chance(50) {
        &["normal", "reverseHolofoil"]
    } else {
        &["holofoil"]
    };
    let currency = if e.japanese { "JPY" } else { "USD" };
    for (v, name) in variant_names.iter().enumerate() {
        if v > 0 {
            out.push(',');
        }
        let _ = write!(out, r#"{{"name":"{name}""#);
        if rng.chance(60) {
            write_prices(out, rng, currency);
        }
        if rng.chance(10) {
            let count = 1 + rng.below(500);
            let _ = write!(
                out,
                r#","pop_reports":[{{"company":"PSA","total":{},"grade_total":{count},"qualified_grade_total":0,"half_grade_total":0,"grades":[{{"grade":"10","count":{}}},{{"grade":"9","count":{}}}]}}]"#,
                count,
                count / 3,
                count - count / 3
            );
        }
        out.push('}');
    }
    for reprint in printings.iter().skip(1) {
        let _ = write!(out, r#",{{"name":"normal","printings":["{reprint}"]}}"#);
    }
    out.push(']');
    if e.japanese {
        out.push_str(",\"translation\":{\"en\":{\"name\":");
        json_str(out, &english_name);
        let _ = write!(
            out,
            r#","supertype":"Pokémon","types":["{}"],"rarity":"{rarity}","attacks":["#,
            TYPES[type_index]
        );
        for (a, name) in attack_names.iter().enumerate() {
            if a > 0 {
                out.push(',');
            }
            out.push_str("{\"name\":");
            json_str(out, name);
            out.push('}');
        }
        out.push_str("]}}");
    }
    out.push('}');
}

/// The most cards [`write_snapshot`] writes: about 110 GB of JSON.
pub const MAX_CARDS: usize = 100_000_000;

/// The longest catalog name [`write_snapshot`] takes, in bytes: the folder it writes
/// aside adds to it, within a file name's 255.
pub const MAX_CATALOG_NAME: usize = 200;

/// Why `options` cannot be written, before anything is: a catalog name that cannot name
/// a catalog folder (`[a-z0-9_-]+`) or is longer than [`MAX_CATALOG_NAME`], or more than
/// [`MAX_CARDS`] cards.
pub fn check(options: &Options) -> Result<(), String> {
    if !crate::load::valid_catalog_name(&options.catalog) {
        return Err(crate::load::invalid_catalog_name(&options.catalog));
    }
    if options.catalog.len() > MAX_CATALOG_NAME {
        return Err(format!(
            "a catalog name of {} bytes is longer than the {MAX_CATALOG_NAME} a generated one may have",
            options.catalog.len()
        ));
    }
    if options.cards > MAX_CARDS {
        return Err(format!(
            "{} cards are more than the {MAX_CARDS} a generated catalog may have",
            options.cards
        ));
    }
    Ok(())
}

/// Writes a snapshot folder `dir/<catalog>/{catalog.json, expansions/, cards/}`.
/// Replaces what a previous run wrote there once the new catalog is written whole: it is
/// written aside, in a hidden sibling folder, then renamed into place (so replacing a
/// catalog takes room for both while it runs).
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] for what [`check`] refuses, before anything is
/// written; I/O errors, naming the path. The catalog there before stays on any error.
pub fn write_snapshot(dir: &Path, options: &Options) -> io::Result<Stats> {
    check(options).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let catalog = &options.catalog;
    let root = dir.join(catalog);
    recover_abandoned(dir, catalog);
    // No two runs share a name, even with the same process id (each run in a fresh
    // container is process 1).
    let own = run_suffix();
    let aside = dir.join(format!(".{catalog}.generating-{own}"));
    let old = dir.join(format!(".{catalog}.replaced-{own}"));
    let written = write_catalog(&aside, &root, options).inspect_err(|_| {
        let _ = remove_any(&aside);
    })?;
    let replacing = fs::symlink_metadata(&root).is_ok();
    if replacing {
        if let Err(e) = fs::rename(&root, &old) {
            let _ = remove_any(&aside);
            return Err(at(&root)(e));
        }
    }
    if let Err(e) = fs::rename(&aside, &root) {
        let _ = remove_any(&aside);
        if replacing && fs::rename(&old, &root).is_err() {
            let kept = format!("{e}; the catalog there before is kept at {}", old.display());
            return Err(io::Error::new(
                e.kind(),
                format!("{}: {kept}", root.display()),
            ));
        }
        return Err(at(&root)(e));
    }
    if replacing {
        let _ = remove_any(&old);
    }
    Ok(written)
}

/// What runs of `generate` that no longer run left beside `dir/catalog`: a catalog
/// written aside is removed, and one moved aside to be replaced is put back when nothing
/// took its place (else removed). A run is known by the process id in the folder's name
/// (`.{catalog}.generating-{pid}-{n}`), and known to be over when that is this process
/// (which has made none yet) or a process that is not there (on Linux, by `/proc`; a run
/// in another PID namespace sharing the folder is not seen there). Call it before looking
/// for an existing catalog: one put back is there.
pub fn recover_abandoned(dir: &Path, catalog: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let root = dir.join(catalog);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(&format!(".{catalog}.")) else {
            continue;
        };
        let (replaced, run) = match rest.split_once('-') {
            Some(("generating", run)) => (false, run),
            Some(("replaced", run)) => (true, run),
            _ => continue,
        };
        if !run_of(run).is_some_and(process_gone) {
            continue;
        }
        if replaced && fs::symlink_metadata(&root).is_err() {
            let _ = fs::rename(entry.path(), &root);
        } else {
            let _ = remove_any(&entry.path());
        }
    }
}

/// Whether the run of process `pid` is known to be over: it is this process, which has
/// started none before, or (on Linux) no such process runs.
fn process_gone(pid: &str) -> bool {
    pid == std::process::id().to_string()
        || (cfg!(target_os = "linux")
            && fs::symlink_metadata(Path::new("/proc").join(pid)).is_err())
}

/// An I/O error on `path`, naming it.
fn at(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// [`write_snapshot`]'s catalog, written into the folder `root`; errors name the path as
/// it will be under `shown`, the catalog's place.
fn write_catalog(root: &Path, shown: &Path, options: &Options) -> io::Result<Stats> {
    for folder in ["expansions", "cards"] {
        fs::create_dir_all(root.join(folder)).map_err(at(&shown.join(folder)))?;
    }
    let mut rng = Rng::new(options.seed);
    let count = options.cards.div_ceil(200).max(2);
    let sets = expansions(&mut rng, count);
    let debut: Vec<&Expansion> = sets.iter().filter(|e| !e.reprint_only).collect();
    let reprint_sets: Vec<&Expansion> = sets.iter().filter(|e| e.reprint_only).collect();
    let per_set = options.cards.div_ceil(debut.len());
    let mut stats = Stats::default();
    let mut sizes = vec![0usize; sets.len()];
    let mut written = 0;
    for (k, e) in debut.iter().enumerate() {
        let n = per_set.min(options.cards - written);
        if n == 0 {
            break;
        }
        let mut out = String::with_capacity(n * 1100);
        out.push('[');
        for i in 0..n {
            if i > 0 {
                out.push_str(",\n");
            }
            let mut printings: Vec<&str> = vec![&e.id];
            if rng.chance(15) {
                // A later printing: a reprint-only set, or a later expansion.
                let later = if !reprint_sets.is_empty() && rng.chance(50) {
                    rng.pick(&reprint_sets)
                } else {
                    debut[(k + 1 + rng.below(8)).min(debut.len() - 1)]
                };
                if later.id != e.id {
                    printings.push(&later.id);
                }
            }
            write_card(&mut out, &mut rng, e, i + 1, &printings);
        }
        out.push_str("]\n");
        stats.bytes += out.len() as u64;
        let file = Path::new("cards").join(format!("{}.json", e.id));
        fs::write(root.join(&file), out).map_err(at(&shown.join(&file)))?;
        sizes[sets.iter().position(|s| s.id == e.id).unwrap_or(0)] = n;
        written += n;
    }
    stats.cards = written;
    let mut out = String::from("[");
    for (i, e) in sets.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        write_expansion(&mut out, e, sizes[i].max(1));
    }
    out.push_str("]\n");
    stats.bytes += out.len() as u64;
    stats.expansions = sets.len();
    let file = Path::new("expansions").join("expansions.json");
    fs::write(root.join(&file), out).map_err(at(&shown.join(&file)))?;
    let file = Path::new("catalog.json");
    fs::write(
        root.join(file),
        format!(
            "{{\"name\":\"{}\",\"title\":\"Synthetic catalog ({} cards, seed {})\"}}\n",
            options.catalog, written, options.seed
        ),
    )
    .map_err(at(&shown.join(file)))?;
    Ok(stats)
}

/// A snapshot of `cards` generated cards (the default options otherwise) in a fresh
/// temporary folder named after `tag` and the process: the unit tests' generated data.
/// The caller removes the folder.
#[cfg(test)]
pub(crate) fn scratch_snapshot(tag: &str, cards: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_snapshot(
        &dir,
        &Options {
            cards,
            ..Default::default()
        },
    )
    .expect("a generated snapshot is written");
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a run killed part-way left is cleared by the next: its catalog written aside
    /// goes, and a catalog it had moved aside comes back when nothing took its place.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_runs_leftovers_are_put_back_or_removed() {
        let base = std::env::temp_dir().join(format!("cardex-gen-left-{}", std::process::id()));
        let options = Options {
            cards: 10,
            ..Options::default()
        };
        // No process has an id this large (Linux's largest is 2^22); this process's id
        // is a run before this one (a container's process 1 is every run's).
        let dead = 4_294_967_290u64;
        let own = std::process::id();
        fs::create_dir_all(base.join(format!(".tcg.replaced-{dead}-1f/cards"))).unwrap();
        fs::write(
            base.join(format!(".tcg.replaced-{dead}-1f/catalog.json")),
            "{}",
        )
        .unwrap();
        recover_abandoned(&base, "tcg");
        assert!(
            base.join("tcg/catalog.json").exists(),
            "the only copy is put back"
        );
        fs::create_dir_all(base.join(format!(".tcg.generating-{dead}-2f/cards"))).unwrap();
        fs::create_dir_all(base.join(format!(".tcg.replaced-{own}-3f"))).unwrap();
        // Another catalog's, one not named by a run, and a running process's stay.
        let mut running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let kept = [
            format!(".other.generating-{dead}-4f"),
            format!(".tcg.generating-{dead}"),
            format!(".tcg.generating-{}-5f", running.id()),
        ];
        for name in &kept {
            fs::create_dir_all(base.join(name)).unwrap();
        }
        write_snapshot(&base, &options).unwrap();
        running.kill().unwrap();
        running.wait().unwrap();
        let mut left: Vec<String> = fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected: Vec<String> = kept.to_vec();
        expected.push("tcg".to_string());
        expected.sort();
        assert_eq!(left, expected);
        assert!(base.join("tcg/cards/s0.json").exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn same_seed_same_bytes() {
        let base = std::env::temp_dir().join(format!("cardex-gen-test-{}", std::process::id()));
        let a = base.join("a");
        let b = base.join("b");
        let options = Options {
            cards: 700,
            ..Options::default()
        };
        let sa = write_snapshot(&a, &options).unwrap();
        let sb = write_snapshot(&b, &options).unwrap();
        assert_eq!(sa, sb);
        assert_eq!(sa.cards, 700);
        for file in [
            "expansions/expansions.json",
            "cards/s0.json",
            "cards/s3_ja.json",
        ] {
            let x = fs::read(a.join("tcg").join(file)).unwrap();
            let y = fs::read(b.join("tcg").join(file)).unwrap();
            assert_eq!(x, y, "{file}");
            let _: serde_json::Value = serde_json::from_slice(&x).expect("valid JSON");
        }
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn rng_is_uniform_enough() {
        let mut rng = Rng::new(1);
        let mut counts = [0usize; 10];
        for _ in 0..10_000 {
            counts[rng.below(10)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }
}
