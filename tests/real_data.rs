//! The engine on real data: the Pokémon TCG API's public data set
//! (`../shared/data/pokemon-tcg-data`, 20,078 cards in 171 sets, or the folder named by
//! `CARDEX_POKEMON_TCG_DATA`), imported with `cardex::import::pokemon_tcg` and checked
//! against facts this file computes from the raw JSON itself, plus a differential test of
//! generated queries against the naive evaluator. Where the data set is absent, each test
//! prints a notice and passes, except under `CI=true`, where its absence fails every test.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use cardex::generate::Rng;
use cardex::import::pokemon_tcg::{import, Options};
use cardex::query::parse;
#[cfg(feature = "server")]
use cardex::server::error_code;
use cardex::{Catalog, Engine, SearchRequest};
use serde_json::Value as Json;
use support::oracle::{self, Records};
use support::TempDir;

/// The imported data set, loaded once.
struct Real {
    _dir: TempDir,
    engine: Engine,
    /// The raw cards, with their file's set id.
    raw: Vec<(String, Json)>,
    /// The imported cards as served (oracle rules applied), in default order.
    served: Records,
    sets: usize,
}

fn source() -> PathBuf {
    std::env::var_os("CARDEX_POKEMON_TCG_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pokemon-tcg-data")
        })
}

fn real() -> Option<&'static Real> {
    static REAL: OnceLock<Option<Real>> = OnceLock::new();
    let real = REAL.get_or_init(|| {
        let src = source();
        if !src.join("sets/en.json").is_file() {
            return None;
        }
        let dir = TempDir::new("real");
        let out = dir.path().join("snapshot");
        let stats = import(&src, &out, &Options::default(), &|_| {}).expect("the import succeeds");
        let engine = Engine::open(&out).expect("the imported snapshot loads");
        let mut raw = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(src.join("cards/en"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let set = path.file_stem().unwrap().to_str().unwrap().to_string();
            let cards: Vec<Json> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            raw.extend(cards.into_iter().map(|c| (set.clone(), c)));
        }
        let read = |sub: &str| -> Vec<Json> {
            let mut all = Vec::new();
            let mut files: Vec<PathBuf> = std::fs::read_dir(out.join("pokemon").join(sub))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            for f in files {
                all.extend(
                    serde_json::from_str::<Vec<Json>>(&std::fs::read_to_string(f).unwrap())
                        .unwrap(),
                );
            }
            all
        };
        let expansions = read("expansions");
        let mut served: Vec<Json> = read("cards").iter().map(oracle::served_card).collect();
        oracle::default_order(&mut served, &expansions);
        assert_eq!(stats.cards, raw.len());
        Some(Real {
            _dir: dir,
            engine,
            raw,
            served: Records::new(served),
            sets: stats.sets,
        })
    });
    if real.is_none() {
        // In CI the data set is part of the checkout's surroundings: its absence is a
        // failure there, never a silent pass.
        assert!(
            !running_in_ci(),
            "the Pokémon TCG data set is not at {} (set CARDEX_POKEMON_TCG_DATA); under CI=true it is required",
            source().display()
        );
        println!(
            "skipped: the Pokémon TCG data set is not at {} (set CARDEX_POKEMON_TCG_DATA)",
            source().display()
        );
    }
    real.as_ref()
}

/// Whether the tests run in CI (`CI` set to anything but empty, `0` or `false`, as CI
/// services set it).
fn running_in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

fn pokemon(real: &Real) -> &Catalog {
    real.engine
        .catalog("pokemon")
        .expect("the imported catalog")
}

fn count(real: &Real, q: &str) -> u64 {
    pokemon(real)
        .count(&SearchRequest::new(q))
        .unwrap_or_else(|e| panic!("{q:?}:\n{e}"))
}

/// The ids of every card matching a request, all pages, in order.
fn ids(real: &Real, req: SearchRequest<'_>) -> Vec<String> {
    support::all_pages(pokemon(real), req, support::page_ids)
}

/// Groups raw cards by a folded string key and counts them.
fn tally(real: &Real, key: impl Fn(&Json) -> Vec<String>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (_, card) in &real.raw {
        let mut keys = key(card);
        keys.sort();
        keys.dedup();
        for k in keys {
            *out.entry(k).or_insert(0) += 1;
        }
    }
    out
}

fn folded(s: &str) -> String {
    cardex::query::fold(s).into_owned()
}

fn strings(v: Option<&Json>) -> Vec<String> {
    match v {
        Some(Json::String(s)) => vec![s.clone()],
        Some(Json::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// camelCase to snake_case, written here independently of the importer.
fn snake(key: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = key.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn snake_keys(v: &Json) -> Json {
    match v {
        Json::Object(m) => Json::Object(m.iter().map(|(k, v)| (snake(k), snake_keys(v))).collect()),
        Json::Array(a) => Json::Array(a.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_set_and_card_is_imported_and_nothing_is_dropped() {
    let Some(real) = real() else { return };
    assert_eq!((real.sets, real.raw.len()), (171, 20_078));
    assert_eq!(pokemon(real).cards().len(), 20_078);
    assert_eq!(pokemon(real).expansions().len(), 171);
    // Every imported card is its raw record with snake_case keys, plus the importer's
    // fields (and the engine's computed printings).
    let by_id: BTreeMap<&str, &Json> = real
        .served
        .records
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c))
        .collect();
    for (set, raw) in &real.raw {
        let mut served = by_id[raw["id"].as_str().unwrap()].clone();
        let object = served.as_object_mut().unwrap();
        assert_eq!(
            object.remove("expansion_id"),
            Some(Json::from(set.as_str()))
        );
        assert_eq!(object.remove("language"), Some(Json::from("English")));
        assert_eq!(object.remove("language_code"), Some(Json::from("EN")));
        assert_eq!(object.remove("printings"), Some(serde_json::json!([set])));
        let expansion = object.remove("expansion").expect("the set's summary");
        assert_eq!(expansion["id"], Json::from(set.as_str()));
        assert_eq!(served, snake_keys(raw), "{}", raw["id"]);
    }
    // Sets: ptcgoCode becomes code, the rest snake_case.
    let sets: Vec<Json> =
        serde_json::from_str(&std::fs::read_to_string(source().join("sets/en.json")).unwrap())
            .unwrap();
    let base1 = pokemon(real)
        .expansion("base1", &Default::default())
        .unwrap();
    let base1: Json = serde_json::from_str(base1.json()).unwrap();
    let raw_base1 = sets.iter().find(|s| s["id"] == "base1").unwrap();
    assert_eq!(base1["code"], raw_base1["ptcgoCode"]);
    assert_eq!(base1["printed_total"], raw_base1["printedTotal"]);
    assert_eq!(base1["release_date"], raw_base1["releaseDate"]);
    assert_eq!(base1["language_code"], "EN");
}

#[test]
fn counts_per_rarity_set_and_supertype() {
    let Some(real) = real() else { return };
    for (rarity, n) in tally(real, |c| {
        strings(c.get("rarity")).iter().map(|r| folded(r)).collect()
    }) {
        assert_eq!(
            count(real, &format!("rarity:\"{rarity}\"")),
            n,
            "rarity {rarity}"
        );
    }
    let without_rarity = real
        .raw
        .iter()
        .filter(|(_, c)| c.get("rarity").is_none())
        .count() as u64;
    assert_eq!(count(real, "-rarity:*"), without_rarity);
    let mut per_set: BTreeMap<&str, u64> = BTreeMap::new();
    for (set, _) in &real.raw {
        *per_set.entry(set).or_insert(0) += 1;
    }
    assert_eq!(per_set.len(), 171);
    for (set, n) in per_set {
        assert_eq!(count(real, &format!("expansion_id:{set}")), n, "set {set}");
        assert_eq!(count(real, &format!("printings:{set}")), n, "set {set}");
        let page = pokemon(real)
            .expansion_cards(set, &SearchRequest::new("").page_size(1))
            .unwrap();
        assert_eq!(page.total_count(), n, "set {set}");
    }
    for (supertype, n) in tally(real, |c| {
        strings(c.get("supertype"))
            .iter()
            .map(|s| folded(s))
            .collect()
    }) {
        assert_eq!(
            count(real, &format!("supertype:\"{supertype}\"")),
            n,
            "supertype {supertype}"
        );
    }
    for (subtype, n) in tally(real, |c| {
        strings(c.get("subtypes"))
            .iter()
            .map(|s| folded(s))
            .collect()
    }) {
        assert_eq!(
            count(real, &format!("subtypes:\"{subtype}\"")),
            n,
            "subtype {subtype}"
        );
    }
}

#[test]
fn name_words() {
    let Some(real) = real() else { return };
    let words = tally(real, |c| {
        let name = folded(c["name"].as_str().unwrap_or(""));
        cardex::query::words(&name).map(str::to_string).collect()
    });
    assert!(words.len() > 2000);
    // Every 7th word, a deterministic sample of a few hundred.
    for (word, n) in words.iter().step_by(7) {
        assert_eq!(
            count(real, &format!("name:\"{word}\"")),
            *n,
            "name word {word}"
        );
    }
}

#[test]
fn hp_ranges() {
    let Some(real) = real() else { return };
    let hps: Vec<i64> = real
        .raw
        .iter()
        .filter_map(|(_, c)| c.get("hp")?.as_str()?.parse().ok())
        .collect();
    assert!(hps.len() > 15_000);
    for (lo, hi) in [
        (0, 50),
        (60, 100),
        (100, 200),
        (200, 400),
        (300, 1000),
        (340, 340),
    ] {
        let n = hps.iter().filter(|&&h| (lo..=hi).contains(&h)).count() as u64;
        assert_eq!(
            count(real, &format!("hp:[{lo} TO {hi}]")),
            n,
            "hp [{lo} TO {hi}]"
        );
        let above = hps.iter().filter(|&&h| h > lo).count() as u64;
        assert_eq!(count(real, &format!("hp>{lo}")), above, "hp>{lo}");
        assert_eq!(
            count(real, &format!("hp:{{{lo} TO *]")),
            above,
            "hp:{{{lo} TO *]"
        );
    }
}

#[test]
fn nested_attack_names() {
    let Some(real) = real() else { return };
    let names = tally(real, |c| {
        c.get("attacks")
            .and_then(Json::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["name"].as_str().map(folded))
                    .collect()
            })
            .unwrap_or_default()
    });
    assert!(names.len() > 3000);
    for (name, n) in names.iter().step_by(23) {
        let quoted = name.replace('\\', "\\\\").replace('"', "\\\"");
        assert_eq!(
            count(real, &format!("!attacks.name:\"{quoted}\"")),
            *n,
            "attack {name}"
        );
        // The phrase matches at least the cards with that exact name.
        assert!(
            count(real, &format!("attacks.name:\"{quoted}\"")) >= *n,
            "attack {name}"
        );
    }
}

#[test]
fn standard_legality() {
    let Some(real) = real() else { return };
    // `legalities.standard` holds `Legal` or `Not Legal`: a keyword field by the
    // contract's rule (a field of `legalities`), so `legal` is `Legal` alone.
    let statuses = tally(real, |c| {
        strings(c.get("legalities").and_then(|l| l.get("standard")))
            .iter()
            .map(|s| folded(s))
            .collect()
    });
    assert_eq!(statuses.keys().collect::<Vec<_>>(), ["legal", "not legal"]);
    for (status, n) in &statuses {
        assert_eq!(
            count(real, &format!("!legalities.standard:\"{status}\"")),
            *n,
            "standard {status}"
        );
    }
    assert_eq!(count(real, "legalities.standard:legal"), statuses["legal"]);
    assert_eq!(
        count(real, "legalities.standard:\"not legal\""),
        statuses["not legal"]
    );
    let not_standard = real
        .raw
        .iter()
        .filter(|(_, c)| c["legalities"].get("standard").is_none())
        .count() as u64;
    assert_eq!(count(real, "-legalities.standard:*"), not_standard);
}

/// A term built from values that occur in the data.
fn term(rng: &mut Rng, real: &Real) -> String {
    let card = &real.raw[rng.below(real.raw.len())].1;
    let pick = |rng: &mut Rng, list: Vec<String>| -> Option<String> {
        (!list.is_empty()).then(|| list[rng.below(list.len())].clone())
    };
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let choice = rng.below(16);
    let made = match choice {
        0 => strings(card.get("rarity"))
            .first()
            .map(|r| format!("rarity:{}", quote(r))),
        1 => Some(format!(
            "supertype:{}",
            quote(card["supertype"].as_str().unwrap_or("Pokémon"))
        )),
        2 => pick(rng, strings(card.get("subtypes"))).map(|s| format!("subtypes:{}", quote(&s))),
        3 => pick(rng, strings(card.get("types"))).map(|s| format!("types:{s}")),
        4 => Some(format!(
            "expansion_id:{}",
            real.raw[rng.below(real.raw.len())].0
        )),
        5 => {
            let name = folded(card["name"].as_str().unwrap_or(""));
            pick(
                rng,
                cardex::query::words(&name).map(str::to_string).collect(),
            )
            .map(|w| format!("name:{}", quote(&w)))
        }
        6 => card
            .get("attacks")
            .and_then(Json::as_array)
            .and_then(|a| a.first())
            .and_then(|a| a["name"].as_str())
            .map(|n| format!("attacks.name:{}", quote(n))),
        7 => {
            let lo = 10 * rng.below(30);
            Some(format!("hp:[{lo} TO {}]", lo + 10 * rng.below(15)))
        }
        8 => Some(format!("hp>={}", 10 * rng.below(35))),
        9 => card.get("artist").and_then(Json::as_str).map(|a| {
            let a = folded(a);
            let w: Vec<&str> = cardex::query::words(&a).collect();
            format!("artist:{}", w.first().copied().unwrap_or("x"))
        }),
        10 => Some(format!(
            "legalities.standard:{}",
            if rng.chance(50) { "legal" } else { "banned" }
        )),
        11 => card
            .get("regulationMark")
            .and_then(Json::as_str)
            .map(|m| format!("regulation_mark:{m}")),
        12 => Some(format!(
            "national_pokedex_numbers:[{} TO {}]",
            rng.below(500),
            500 + rng.below(500)
        )),
        13 => Some(
            [
                "^subtypes:EX",
                "^subtypes:ex",
                "subtypes:ex",
                "!name:pikachu",
                "name:char*",
                "weaknesses.type:(fire OR water)",
                "retreat_cost:*",
                "-abilities.name:*",
            ][rng.below(8)]
            .to_string(),
        ),
        14 => Some(format!("converted_retreat_cost<{}", rng.below(5))),
        _ => card
            .get("number")
            .and_then(Json::as_str)
            .map(|n| format!("number:{}", quote(n))),
    };
    made.unwrap_or_else(|| "types:fire".to_string())
}

/// A query of one to four terms joined with AND, OR, NOT and parentheses.
fn query(rng: &mut Rng, real: &Real, depth: usize) -> String {
    if depth == 0 || rng.chance(35) {
        return term(rng, real);
    }
    let a = query(rng, real, depth - 1);
    let b = query(rng, real, depth - 1);
    match rng.below(5) {
        0 => format!("({a} AND {b})"),
        1 => format!("({a} {b})"),
        2 => format!("({a} OR {b})"),
        3 => format!("({a} -{b})"),
        _ => format!("(NOT {a} OR {b})"),
    }
}

#[test]
fn generated_queries_agree_with_the_naive_evaluator() {
    let Some(real) = real() else { return };
    let mut rng = Rng::new(2024);
    let mut nonempty = 0;
    for _ in 0..300 {
        let q = query(&mut rng, real, 3);
        let parsed = parse(&q).unwrap_or_else(|e| panic!("{q}:\n{e}"));
        let expected: Vec<String> = real
            .served
            .matching(parsed.expr.as_ref())
            .into_iter()
            .map(|i| real.served.records[i]["id"].as_str().unwrap().to_string())
            .collect();
        let got = ids(real, SearchRequest::new(&q));
        assert_eq!(got, expected, "query {q}");
        nonempty += usize::from(!got.is_empty());
    }
    assert!(
        nonempty > 150,
        "the generated queries mostly find something ({nonempty})"
    );
}

#[test]
fn the_default_order_is_the_contracts() {
    let Some(real) = real() else { return };
    let expected: Vec<String> = real
        .served
        .records
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids(real, SearchRequest::new("")), expected);
}

// What the README's "Coming from the Pokémon TCG API" section claims, on the real data.

#[test]
fn parentheses_and_apostrophes_in_quoted_values() {
    // pokemon-tcg-api #109: parentheses inside a quoted value.
    let Some(real) = real() else { return };
    let got = ids(real, SearchRequest::new("name:\"Boss's Orders (Ghetsis)\""));
    assert_eq!(got, ["sv2-172", "sv2-248", "sv2-265"]);
    assert_eq!(
        ids(
            real,
            SearchRequest::new("!name:\"Boss's Orders (Ghetsis)\"")
        ),
        got
    );
}

#[test]
fn ampersands_need_no_escaping() {
    // pokemon-tcg-api #107: `&` in card and set names.
    let Some(real) = real() else { return };
    let raw = real
        .raw
        .iter()
        .filter(|(_, c)| c["name"] == "Pikachu & Zekrom-GX")
        .count() as u64;
    assert_eq!(raw, 5);
    assert_eq!(count(real, "!name:\"Pikachu & Zekrom-GX\""), raw);
    let sets = pokemon(real)
        .search_expansions(&SearchRequest::new("name:\"Sun & Moon\""))
        .unwrap();
    let found: Vec<String> = sets
        .record_ids()
        .iter()
        .map(|&i| pokemon(real).expansions().record_id(i).into_owned())
        .collect();
    assert!(found.contains(&"sm1".to_string()), "{found:?}");
    assert_eq!(
        count(real, "expansion.name:\"Sun & Moon\" expansion_id:sm1"),
        count(real, "expansion_id:sm1")
    );
}

#[test]
fn typographic_and_plain_apostrophes_are_one() {
    // pokemon-tcg-data #318: `’` in the data, `'` in the query (and the other way round).
    let Some(real) = real() else { return };
    let plain = ids(
        real,
        SearchRequest::new("flavor_text:\"Charmander's life force\""),
    );
    let curly = ids(
        real,
        SearchRequest::new("flavor_text:\"Charmander’s life force\""),
    );
    assert_eq!(plain, curly);
    assert!(plain.contains(&"me2pt5-20".to_string()), "{plain:?}");
}

#[test]
fn ex_and_upper_case_ex_can_be_told_apart() {
    // pokemon-tcg-api #105: `ex` and `EX` fold alike; `^` compares as written.
    let Some(real) = real() else { return };
    let raw = |s: &str| {
        real.raw
            .iter()
            .filter(|(_, c)| strings(c.get("subtypes")).iter().any(|x| x == s))
            .count() as u64
    };
    assert_eq!((raw("EX"), raw("ex")), (438, 874));
    assert_eq!(count(real, "^subtypes:EX"), 438);
    assert_eq!(count(real, "^subtypes:ex"), 874);
    assert_eq!(count(real, "subtypes:ex"), 438 + 874);
}

#[test]
fn accents_are_optional() {
    // pokemon-tcg-api #59: `Pokemon` finds `Pokémon`.
    let Some(real) = real() else { return };
    let raw = real
        .raw
        .iter()
        .filter(|(_, c)| c["supertype"] == "Pokémon")
        .count() as u64;
    assert_eq!(count(real, "supertype:pokemon"), raw);
    assert_eq!(count(real, "supertype:Pokémon"), raw);
    assert_eq!(
        count(real, "^supertype:Pokemon"),
        0,
        "unless asked for as written"
    );
}

#[test]
fn pages_never_repeat_or_skip_in_big_sets() {
    // pokemon-tcg-data #619: sets of over 250 cards paged by number.
    let Some(real) = real() else { return };
    let whole = ids(
        real,
        SearchRequest::new("expansion_id:sv1")
            .order_by("number")
            .page_size(100),
    );
    assert_eq!(whole.len(), 258);
    let mut seen = whole.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 258, "no card twice");
    for size in [7, 50, 99] {
        assert_eq!(
            ids(
                real,
                SearchRequest::new("expansion_id:sv1")
                    .order_by("number")
                    .page_size(size)
            ),
            whole
        );
    }
}

#[test]
fn several_order_keys_with_or_without_spaces() {
    // pokemon-tcg-api #113: `orderBy=-set.releaseDate,number` needed `%20` padding.
    let Some(real) = real() else { return };
    let req = SearchRequest::from_params([
        ("q", "name:charizard"),
        ("orderBy", "-expansion.release_date,number"),
    ])
    .unwrap();
    let page = pokemon(real).search(&req).unwrap();
    let rows: Vec<(String, String)> = page
        .items()
        .map(|i| {
            let c: Json = serde_json::from_str(i).unwrap();
            (
                c["expansion"]["release_date"].as_str().unwrap().to_string(),
                c["number"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(rows.len() > 50);
    for w in rows.windows(2) {
        assert!(w[0].0 >= w[1].0, "release dates descending: {w:?}");
        if w[0].0 == w[1].0 {
            assert_ne!(
                oracle::natural(&w[0].1, &w[1].1),
                std::cmp::Ordering::Greater,
                "numbers ascending: {w:?}"
            );
        }
    }
    let spaced = SearchRequest::from_params([
        ("q", "name:charizard"),
        ("orderBy", " -expansion.release_date , number "),
    ])
    .unwrap();
    assert_eq!(
        pokemon(real).search(&spaced).unwrap().record_ids(),
        page.record_ids()
    );
}

#[test]
fn a_batch_of_ids_in_one_query() {
    // pokemon-tcg-api #101: get many cards by id at once.
    let Some(real) = real() else { return };
    let wanted: Vec<&str> = real
        .raw
        .iter()
        .step_by(201)
        .take(100)
        .map(|(_, c)| c["id"].as_str().unwrap())
        .collect();
    let q = format!("id:({})", wanted.join(" OR "));
    let mut got = ids(real, SearchRequest::new(&q));
    got.sort();
    let mut expected: Vec<String> = wanted.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn pokemon_tcg_api_parameters() {
    // pageSize and orderBy are accepted; a parameter that does not exist is an error rather
    // than silently ignored (pokemon-tcg-data #572); pages hold at most 100 cards.
    let Some(real) = real() else { return };
    let req = SearchRequest::from_params([
        ("q", "types:fire"),
        ("pageSize", "25"),
        ("page", "2"),
        ("orderBy", "name"),
    ])
    .unwrap();
    let page = pokemon(real).search(&req).unwrap();
    assert_eq!((page.page(), page.page_size(), page.count()), (2, 25, 25));
    #[cfg(feature = "server")]
    assert_eq!(
        error_code(&SearchRequest::from_params([("name", "pikachu")]).unwrap_err()),
        "unknown_parameter"
    );
    #[cfg(feature = "server")]
    assert_eq!(
        error_code(&SearchRequest::from_params([("pageSize", "250")]).unwrap_err()),
        "invalid_parameter"
    );
}

#[test]
fn pokemon_tcg_api_queries() {
    // The query forms the README lists: unchanged ones run and find cards; set fields are
    // under `expansion`; camelCase names still work.
    let Some(real) = real() else { return };
    for q in [
        "name:charizard",
        "name:\"venusaur v\"",
        "name:char*",
        "name:char*der",
        "!name:charizard",
        "subtypes:mega -types:water",
        "name:charizard (subtypes:mega OR subtypes:vmax)",
        "hp:[150 TO *]",
        "hp:{100 TO 200}",
        "attacks.name:Hypnosis",
        "nationalPokedexNumbers:[1 TO 151]",
        "rarity:\"Rare Holo\"",
        "legalities.expanded:banned",
        "regulationMark:G",
        "convertedRetreatCost:3",
        "abilities.type:\"Poké-Power\"",
        "expansion.series:\"Scarlet & Violet\"",
    ] {
        assert!(count(real, q) > 0, "{q} finds cards");
    }
    assert_eq!(
        count(real, "nationalPokedexNumbers:[1 TO 151]"),
        count(real, "national_pokedex_numbers:[1 TO 151]")
    );
    assert_eq!(
        count(real, "expansion.id:sv1"),
        count(real, "expansion_id:sv1")
    );
    // pokemon-tcg-api #106: `set.ptcgoCode:MEW` found nothing for some Scarlet & Violet sets.
    let sets: Vec<Json> =
        serde_json::from_str(&std::fs::read_to_string(source().join("sets/en.json")).unwrap())
            .unwrap();
    let mew: Vec<&str> = sets
        .iter()
        .filter(|s| s["ptcgoCode"] == "MEW")
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(!mew.is_empty());
    let raw = real
        .raw
        .iter()
        .filter(|(set, _)| mew.contains(&set.as_str()))
        .count() as u64;
    assert_eq!(count(real, "expansion.code:MEW"), raw);
}

#[test]
fn pokemon_tcg_api_differences() {
    // The "What differs" table of the README, on the real cards.
    let Some(real) = real() else { return };
    let catalog = pokemon(real);

    // An unknown field is an error with a suggestion, not an empty answer.
    let err = catalog
        .search(&SearchRequest::new("set.id:sv1"))
        .unwrap_err();
    #[cfg(feature = "server")]
    assert_eq!(error_code(&err), "invalid_query");
    assert!(err.to_string().contains("unknown field `set.id`"), "{err}");
    assert!(
        err.to_string().contains("(did you mean `expansion.id`?)"),
        "{err}"
    );
    let err = catalog
        .search(&SearchRequest::new("set.releaseDate:2023*"))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("(did you mean `expansion.release_date`?)"),
        "{err}"
    );

    // Comparisons are ranges; a grouped value is an OR of terms; `^` does not fold.
    assert_eq!(count(real, "hp>=150"), count(real, "hp:[150 TO *]"));
    assert_eq!(
        count(real, "types:(water OR grass)"),
        count(real, "(types:water OR types:grass)")
    );
    let water_or_grass = real
        .raw
        .iter()
        .filter(|(_, c)| {
            strings(c.get("types"))
                .iter()
                .any(|t| t == "Water" || t == "Grass")
        })
        .count() as u64;
    assert_eq!(count(real, "types:(water OR grass)"), water_or_grass);
    let literal = |wanted: &str| {
        real.raw
            .iter()
            .filter(|(_, c)| strings(c.get("subtypes")).iter().any(|s| s == wanted))
            .count() as u64
    };
    assert_eq!(count(real, "^subtypes:EX"), literal("EX"));
    assert_eq!(count(real, "^subtypes:ex"), literal("ex"));
    assert_eq!(
        count(real, "subtypes:ex"),
        count(real, "^subtypes:EX OR ^subtypes:ex")
    );

    // `legalities.standard` is a keyword field: `legal` is not a word of `Not Legal`.
    let standard = |f: &dyn Fn(&str) -> bool| {
        real.raw
            .iter()
            .filter(|(_, c)| c["legalities"]["standard"].as_str().is_some_and(f))
            .count() as u64
    };
    assert_eq!(
        count(real, "!legalities.standard:legal"),
        standard(&|s| s == "Legal")
    );
    assert_eq!(
        count(real, "legalities.standard:legal"),
        standard(&|s| s == "Legal")
    );
    assert!(standard(&|s| s == "Not Legal") > 0);
}

#[test]
fn pokemon_tcg_api_envelope_and_select() {
    // `select` keeps top-level fields and always `id`; the envelope is snake_case.
    let Some(real) = real() else { return };
    let req = SearchRequest::from_params([
        ("q", "name:pikachu"),
        ("select", "name,hp"),
        ("pageSize", "5"),
    ])
    .unwrap();
    let page = pokemon(real).search(&req).unwrap();
    let body: Json = serde_json::from_str(&page.to_json()).unwrap();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // serde_json's map sorts keys; the text shows the order as written.
    assert_eq!(keys, ["count", "data", "page", "page_size", "total_count"]);
    let text = page.to_json();
    assert!(text.starts_with("{\"data\":[{\"id\":"), "{text}");
    let pikachus = real
        .raw
        .iter()
        .filter(|(_, c)| {
            c["name"].as_str().is_some_and(|n| {
                n.split(|ch: char| !ch.is_alphanumeric())
                    .any(|w| w.eq_ignore_ascii_case("pikachu"))
            })
        })
        .count() as u64;
    assert_eq!(body["total_count"], pikachus);
    assert_eq!(body["count"], 5);
    assert!(
        text.ends_with(&format!(
            "],\"page\":1,\"page_size\":5,\"count\":5,\"total_count\":{pikachus}}}"
        )),
        "{text}"
    );
    for item in page.items() {
        assert!(item.starts_with("{\"id\":"), "id comes first: {item}");
    }
    for card in body["data"].as_array().unwrap() {
        let fields: Vec<&str> = card
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            fields == ["hp", "id", "name"] || fields == ["id", "name"],
            "{fields:?}"
        );
    }
}

#[test]
fn symbols_in_names_are_words_of_their_own() {
    // `Nidoran ♀` and `Nidoran ♂` are two Pokémon, and `★` and `◇` mark kinds of cards:
    // each symbol is a word, searched alone or in a phrase.
    let Some(real) = real() else { return };
    let names = |f: &dyn Fn(&str) -> bool| {
        real.raw
            .iter()
            .filter(|(_, c)| c["name"].as_str().is_some_and(f))
            .count() as u64
    };
    for symbol in ['★', '◇', '♀', '♂'] {
        let n = names(&|name| name.contains(symbol));
        assert!(n > 0, "{symbol}");
        assert_eq!(count(real, &format!("name:{symbol}")), n, "{symbol}");
        // Wildcards around a symbol stay in its word (not a phrase with any word).
        assert_eq!(count(real, &format!("name:{symbol}*")), n, "{symbol}*");
        assert_eq!(count(real, &format!("name:*{symbol}")), n, "*{symbol}");
    }
    let female = names(&|name| name.contains("Nidoran ♀") || name.contains("Nidoran♀"));
    assert!(female < names(&|name| name.contains("Nidoran")));
    assert_eq!(count(real, "name:\"nidoran ♀\""), female);
    assert_eq!(count(real, "name:nidoran♀"), female);
    assert_eq!(
        count(real, "name:\"umbreon ★\""),
        names(&|name| name.contains("Umbreon ★"))
    );
}
