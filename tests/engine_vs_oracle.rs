//! The executor against a naive evaluator: random queries (AND, OR, NOT, groups, ranges,
//! comparisons, phrases, wildcards, exact values, language scopes, nested queries bound
//! to one element) over generated stores whose records exercise every matching rule and
//! hold several price records per variant, compared by result and by order; and sorts by
//! a price, bound by nested conditions or not. Every page is also asked of the same store
//! loaded compressed ([`StoreKind::Compressed`]), which must write the same bytes. The
//! cards do not carry their expansion: terms and sorts on `expansion.*` are compared with
//! the oracle over the same cards with their expansion's record as `expansion`.

mod support;

use std::sync::OnceLock;

use cardex::generate::Rng;
use cardex::query::parse;
use cardex::{Catalog, Engine, OpenOptions, SearchRequest, StoreKind};
use proptest::prelude::*;
use serde_json::{json, Value as Json};
use support::oracle::{self, Records};
use support::TempDir;

/// A generated store: the snapshot on disk, the engine over it, and the served records
/// the oracle reads.
struct Store {
    _dir: TempDir,
    engine: Engine,
    /// The same snapshot with a compressed store.
    compressed: Engine,
    records: Records,
    /// The served records, each with its expansion's record as `expansion`.
    joined: Records,
    expansions: Vec<Json>,
}

const NAME_WORDS: &[&str] = &[
    "Charizard",
    "Pikachu",
    "ex",
    "EX",
    "Zekrom-GX",
    "Flabébé",
    "Boss's",
    "Orders",
    "(Ghetsis)",
    "リザードンex",
    "ピカチュウ",
    "Mr.",
    "Mime",
    "Professor’s",
    "Research",
    "&",
    "charizard",
    "V",
];
const RARITIES: &[&str] = &[
    "Common",
    "Uncommon",
    "Super Rare",
    "Rare Holo",
    "super rare",
];
const CODES: &[&str] = &["C", "U", "SR", "R", "sr"];
const TYPES: &[&str] = &["Fire", "Water", "Grass", "炎"];
const ATTACK_WORDS: &[&str] = &[
    "Flame", "Burst", "Thunder", "Crash", "flame", "Quick", "Attack",
];
const VARIANTS: &[&str] = &["Normal", "Alt Art", "Special Alt Art", "Manga Alt Art"];
const NUMBERS: &[&str] = &["1", "2", "10", "10a", "TG05", "007", "7"];

fn words(rng: &mut Rng, vocab: &[&str], max: usize) -> String {
    let n = 1 + rng.below(max);
    (0..n)
        .map(|_| *rng.pick(vocab))
        .collect::<Vec<_>>()
        .join(" ")
}

const GRADES: &[&str] = &["10", "9.5", "9", "8"];

/// One price record: raw (with a condition) or graded (with a company and grade), in one
/// of `currencies`, several per variant, so that conditions on different records of a
/// card differ from conditions on one.
fn price(rng: &mut Rng, currencies: &[&str]) -> Json {
    let currency = *rng.pick(currencies);
    let market = if currency == "JPY" {
        (rng.below(400) * 25) as f64
    } else {
        rng.below(400) as f64 / 4.0
    };
    if rng.chance(60) {
        json!({"type": "raw", "condition": *rng.pick(&["NM", "LP", "MP"]), "market": market, "currency": currency})
    } else {
        json!({"type": "graded", "company": *rng.pick(&["PSA", "CGC", "BGS"]), "grade": *rng.pick(GRADES), "market": market, "currency": currency})
    }
}

fn generate_card(rng: &mut Rng, i: usize, currencies: &[&str]) -> Json {
    let mut c = serde_json::Map::new();
    c.insert("id".into(), json!(format!("c{i}")));
    c.insert(
        "expansion_id".into(),
        json!(format!("e{}", 1 + rng.below(4))),
    );
    let japanese = rng.chance(30);
    if !(japanese && rng.chance(30)) {
        c.insert("name".into(), json!(words(rng, NAME_WORDS, 3)));
    }
    match rng.below(5) {
        0 => {}
        1 => {
            c.insert("rarity".into(), Json::Null);
        }
        _ => {
            c.insert("rarity".into(), json!(*rng.pick(RARITIES)));
        }
    }
    c.insert("rarity_code".into(), json!(*rng.pick(CODES)));
    let types: Vec<&str> = (0..rng.below(3)).map(|_| *rng.pick(TYPES)).collect();
    c.insert("types".into(), json!(types));
    if rng.chance(80) {
        c.insert("hp".into(), json!(format!("{}", 10 * (1 + rng.below(20)))));
    }
    if rng.chance(70) {
        c.insert("cost".into(), json!(rng.below(6)));
    }
    if rng.chance(85) {
        c.insert("number".into(), json!(*rng.pick(NUMBERS)));
    }
    let attacks: Vec<Json> = (0..rng.below(3))
        .map(|_| {
            json!({
                "name": words(rng, ATTACK_WORDS, 2),
                // 1 to 10 words: values of up to six words have their word pairs indexed,
                // longer ones are checked, and phrases must agree either way.
                "text": words(rng, ATTACK_WORDS, 10),
                "damage": *rng.pick(&["10+", "30", "120×", ""]),
                "converted_energy_cost": rng.below(4),
            })
        })
        .collect();
    c.insert("attacks".into(), json!(attacks));
    c.insert(
        "language_code".into(),
        json!(if japanese { "JA" } else { "EN" }),
    );
    if japanese {
        let mut en = serde_json::Map::new();
        en.insert("name".into(), json!(words(rng, &NAME_WORDS[..8], 2)));
        if rng.chance(70) {
            en.insert("rarity".into(), json!(*rng.pick(RARITIES)));
        }
        c.insert("translation".into(), json!({ "en": en }));
    }
    if rng.chance(25) {
        c.insert(
            "printings".into(),
            json!(["e1", format!("e{}", 1 + rng.below(4))]),
        );
    }
    let variants: Vec<Json> = (0..rng.below(3))
        .map(|_| {
            let mut v = serde_json::Map::new();
            v.insert("name".into(), json!(*rng.pick(VARIANTS)));
            if rng.chance(30) {
                v.insert("printings".into(), json!(["e3"]));
            } else if rng.chance(15) {
                // Served as the card's own expansion, as an absent one is.
                v.insert(
                    "printings".into(),
                    rng.pick(&[json!([]), Json::Null]).clone(),
                );
            }
            if rng.chance(70) {
                let prices: Vec<Json> = (0..1 + rng.below(5))
                    .map(|_| price(rng, currencies))
                    .collect();
                v.insert("prices".into(), json!(prices));
            }
            if rng.chance(40) {
                let reports: Vec<Json> = (0..1 + rng.below(2))
                    .map(|_| {
                        let grades: Vec<Json> = (0..1 + rng.below(3))
                            .map(|_| json!({"grade": *rng.pick(GRADES), "count": rng.below(120)}))
                            .collect();
                        json!({"company": *rng.pick(&["PSA", "CGC"]), "grades": grades})
                    })
                    .collect();
                v.insert("pop_reports".into(), json!(reports));
            }
            Json::Object(v)
        })
        .collect();
    c.insert("variants".into(), json!(variants));
    if rng.chance(50) {
        c.insert("is_promo".into(), json!(rng.chance(50)));
    }
    // A field of dates (in either form, maybe with a time, or not a date at all), where a
    // bare year stands for its span; and a field mixing dates with whole numbers, where it
    // is the number.
    let date = |rng: &mut Rng| {
        let separator = if rng.chance(50) { '/' } else { '-' };
        let (y, m, d) = (2018 + rng.below(5), 1 + rng.below(12), 1 + rng.below(31));
        format!("{y}{separator}{m:02}{separator}{d:02}")
    };
    match rng.below(6) {
        0 => {}
        1 => {
            c.insert("released".into(), json!("TBA"));
        }
        2 => {
            c.insert("released".into(), json!(format!("{} 10:00:00", date(rng))));
        }
        _ => {
            c.insert("released".into(), json!(date(rng)));
        }
    }
    if rng.chance(50) {
        let printed = if rng.chance(50) {
            date(rng)
        } else {
            (2018 + rng.below(5)).to_string()
        };
        c.insert("printed".into(), json!(printed));
    }
    Json::Object(c)
}

fn store(seed: u64) -> &'static Store {
    static STORES: OnceLock<Vec<Store>> = OnceLock::new();
    let stores = STORES.get_or_init(|| {
        (0..3)
            .map(|s| {
                let mut rng = Rng::new(1000 + s);
                let dir = TempDir::new(&format!("oracle-{s}"));
                let expansions = vec![
                    json!({"id": "e1", "release_date": "2020/01/01", "name": "Base Set", "series": "Original", "total": 102}),
                    json!({"id": "e2", "release_date": "2021/06/01", "name": "Flame Burst", "series": "Scarlet & Violet", "total": 90}),
                    json!({"id": "e3", "release_date": "2020/01/01", "name": "base", "series": "original"}),
                    json!({"id": "e4", "name": "Promos"}),
                ];
                // Stores 0 and 1 price in two currencies, store 2 in one.
                let currencies: &[&str] = if s == 2 { &["USD"] } else { &["USD", "JPY"] };
                let cards: Vec<Json> = (0..240)
                    .map(|i| generate_card(&mut rng, i, currencies))
                    .collect();
                dir.write(
                    "g/expansions/e.json",
                    &serde_json::to_string(&expansions).unwrap(),
                );
                dir.write(
                    "g/cards/a.json",
                    &serde_json::to_string(&cards[..120]).unwrap(),
                );
                dir.write(
                    "g/cards/b.json",
                    &serde_json::to_string(&cards[120..]).unwrap(),
                );
                let engine = Engine::open(dir.path()).expect("generated store loads");
                let options = OpenOptions::new().store(StoreKind::Compressed);
                let compressed = Engine::open_with(dir.path(), &options, |_| {})
                    .expect("generated store loads compressed");
                let mut served: Vec<Json> = cards.iter().map(oracle::served_card).collect();
                oracle::default_order(&mut served, &expansions);
                let joined = served
                    .iter()
                    .map(|card| {
                        let mut card = card.clone();
                        let own = expansions.iter().find(|e| e["id"] == card["expansion_id"]);
                        card["expansion"] = own.expect("every card's expansion is there").clone();
                        card
                    })
                    .collect();
                Store {
                    _dir: dir,
                    engine,
                    compressed,
                    records: Records::new(served),
                    joined: Records::new(joined),
                    expansions,
                }
            })
            .collect()
    });
    &stores[seed as usize % stores.len()]
}

/// A term over the generated store's fields, as query text.
fn term() -> impl Strategy<Value = String> {
    let text_value = prop::sample::select(vec![
        "charizard",
        "pikachu",
        "ex",
        "EX",
        "zekrom",
        "gx",
        "flabebe",
        "FLABÉBÉ",
        "boss's",
        "\"boss's orders\"",
        "\"charizard ex\"",
        "\"ex charizard\"",
        "char*",
        "*zard",
        "p?kachu",
        "*",
        "リザードン",
        "ザード",
        "\"リザードン ex\"",
        "mime",
        "\"mr. mime\"",
        "\"professor's research\"",
        "ghetsis",
        "\"(ghetsis)\"",
        "v",
    ]);
    let name = text_value.clone().prop_map(|v| format!("name:{v}"));
    let bare = text_value.clone().prop_flat_map(|v| {
        prop::bool::ANY.prop_map(move |b| {
            if b && !v.starts_with('*') {
                format!("!{v}")
            } else {
                v.to_string()
            }
        })
    });
    let exact_name = prop::sample::select(vec![
        "pikachu",
        "\"charizard ex\"",
        "\"Boss's Orders (Ghetsis)\"",
        "char*",
        "\"mr. mime\"",
    ])
    .prop_map(|v| format!("!name:{v}"));
    let keyword = (
        prop::sample::select(vec![
            "rarity",
            "rarity_code",
            "rarityCode",
            "types",
            "variants.name",
            "printings",
            "variants.printings",
            "expansion_id",
            "language_code",
            "number",
            "id",
        ]),
        prop::sample::select(vec![
            "common",
            "\"super rare\"",
            "SR",
            "sr",
            "fire",
            "炎",
            "\"alt art\"",
            "normal",
            "e1",
            "e3",
            "JA",
            "en",
            "10a",
            "TG05",
            "7",
            "007",
            "c1",
            "*",
            "s*",
            "*art",
            "\"*\"",
        ]),
        prop::bool::ANY,
    )
        .prop_map(|(f, v, bang)| format!("{}{f}:{v}", if bang { "!" } else { "" }));
    // `^`: as written, no folding.
    let literal = (
        prop::sample::select(vec![
            "name",
            "rarity",
            "rarity_code",
            "types",
            "variants.name",
            "attacks.name",
            "number",
        ]),
        prop::sample::select(vec![
            "Pikachu",
            "pikachu",
            "\"Super Rare\"",
            "\"super rare\"",
            "SR",
            "sr",
            "Fire",
            "炎",
            "\"Alt Art\"",
            "Flame",
            "flame",
            "10a",
            "007",
            "Char*",
            "char*",
            "*Rare",
            "\"Flabébé\"",
            "\"flabebe\"",
            "\"Zekrom-GX\"",
        ]),
    )
        .prop_map(|(f, v)| format!("^{f}:{v}"));
    let text = (
        prop::sample::select(vec![
            "attacks.name",
            "attacks.text",
            "translation.en.name",
            "attacks.damage",
            "translation.en.rarity",
        ]),
        prop::sample::select(vec![
            "flame",
            "\"flame burst\"",
            "\"burst flame\"",
            "\"quick attack flame\"",
            "\"flame flame\"",
            "\"fl* burst\"",
            "thunder",
            "fl*",
            "30",
            "10",
            "charizard",
            "\"super rare\"",
            "rare",
        ]),
    )
        .prop_map(|(f, v)| format!("{f}:{v}"));
    let numeric_field = prop::sample::select(vec![
        "hp",
        "cost",
        "attacks.converted_energy_cost",
        "variants.prices.market",
        "number",
    ]);
    let range = (
        numeric_field.clone(),
        -5i32..220,
        0i32..120,
        prop::sample::select(vec!["[", "{"]),
        prop::sample::select(vec!["]", "}"]),
        0u8..3,
    )
        .prop_map(|(f, lo, span, open, close, open_end)| {
            let lower = if open_end == 1 {
                "*".to_string()
            } else {
                lo.to_string()
            };
            let upper = if open_end == 2 {
                "*".to_string()
            } else {
                (lo + span).to_string()
            };
            format!("{f}:{open}{lower} TO {upper}{close}")
        });
    let compare = (
        numeric_field.clone(),
        prop::sample::select(vec!["<", "<=", ">", ">="]),
        -2i32..200,
    )
        .prop_map(|(f, op, n)| format!("{f}{op}{n}"));
    let number_eq = (
        prop::sample::select(vec![
            "cost",
            "attacks.converted_energy_cost",
            "hp",
            "variants.prices.market",
        ]),
        0u32..8,
    )
        .prop_map(|(f, n)| {
            format!(
                "{f}:{}",
                if f == "variants.prices.market" {
                    format!("{}", n as f64 * 12.5)
                } else {
                    n.to_string()
                }
            )
        });
    let bools = prop::sample::select(vec!["is_promo:true", "is_promo:false", "is_promo:*"])
        .prop_map(str::to_string);
    let group = (
        prop::sample::select(vec!["types", "rarity_code", "name", "printings"]),
        prop::sample::select(vec![
            "(fire OR water)",
            "(fire AND water)",
            "(sr OR c u)",
            "(charizard OR pikachu)",
            "(e1 OR e3)",
            "(ex OR \"charizard ex\" flabebe)",
        ]),
        prop::bool::ANY,
    )
        .prop_map(|(f, g, bang)| format!("{}{f}:{g}", if bang { "!" } else { "" }));
    let dates = (
        prop::sample::select(vec!["released", "printed"]),
        prop::sample::select(vec![
            ">=Y",
            ">Y",
            "<=Y",
            "<Y",
            ":Y",
            ":[Y TO Z]",
            ":{Y TO Z}",
            ":{Y TO *]",
            ":[2020/03/01 TO Y]",
            ">=Y-06-15",
            ":\"Y\"",
        ]),
        2017u32..2024,
        0u32..3,
    )
        .prop_map(|(f, form, y, more)| {
            let value = form
                .replace('Y', &y.to_string())
                .replace('Z', &(y + more).to_string());
            format!("{f}{value}")
        });
    prop_oneof![
        5 => name, 5 => bare, 5 => exact_name, 5 => keyword, 5 => text, 5 => range,
        5 => compare, 5 => number_eq, 5 => bools, 5 => group, 5 => literal, 8 => nested(),
        5 => dates
    ]
}

/// A query on one price record, the inside of `variants.prices:( )`: AND, OR and NOT of
/// conditions on its fields.
fn price_condition() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec![
            "type:raw",
            "type:graded",
            "condition:NM",
            "condition:(NM OR LP)",
            "-condition:MP",
            "company:PSA",
            "company:*",
            "grade:10",
            "grade:\"9.5\"",
            "currency:USD",
            "currency:JPY",
        ])
        .prop_map(str::to_string),
        (prop::sample::select(vec![">=", "<", ">", "<="]), 0u32..120)
            .prop_map(|(op, n)| format!("market{op}{n}")),
        (0u32..100, 0u32..60).prop_map(|(a, b)| format!("market:[{a} TO {}]", a + b)),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("({})", v.join(" AND "))),
            prop::collection::vec(inner.clone(), 2..3)
                .prop_map(|v| format!("({})", v.join(" OR "))),
            inner.prop_map(|q| format!("NOT {q}")),
        ]
    })
}

/// A nested query: conditions bound to one element of an array of objects, as deep as
/// the generated data goes.
fn nested() -> impl Strategy<Value = String> {
    let prices = price_condition().prop_map(|c| format!("variants.prices:({c})"));
    let variant = (
        prop::sample::select(vec![
            "name:\"alt art\"",
            "name:normal",
            "printings:e3",
            "-printings:*",
            "prices.market>50",
        ]),
        price_condition(),
        prop::bool::ANY,
    )
        .prop_map(|(v, c, or)| {
            format!(
                "variants:({v} {} prices:({c}))",
                if or { "OR" } else { "AND" }
            )
        });
    let reports = (
        prop::sample::select(vec!["PSA", "CGC"]),
        prop::sample::select(vec!["10", "\"9.5\"", "8"]),
        0u32..120,
    )
        .prop_map(|(company, grade, n)| {
            format!("variants.pop_reports:(company:{company} AND grades:(grade:{grade} AND count>={n}))")
        });
    let grades = (prop::sample::select(vec!["10", "9", "8"]), 0u32..120)
        .prop_map(|(grade, n)| format!("variants.pop_reports.grades:(grade:{grade} count<{n})"));
    let attacks = (
        prop::sample::select(vec![
            "name:flame",
            "name:\"quick attack\"",
            "text:burst",
            "damage:30",
        ]),
        0u32..4,
    )
        .prop_map(|(t, n)| format!("attacks:({t} AND converted_energy_cost>={n})"));
    prop_oneof![3 => prices, 2 => variant, 1 => reports, 1 => grades, 1 => attacks]
}

/// A query: terms combined with AND (explicit or implicit), OR, NOT, `-` and parentheses.
fn query() -> impl Strategy<Value = String> {
    term().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("({})", v.join(" AND "))),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| format!("({})", v.join(" "))),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("({})", v.join(" OR "))),
            inner.clone().prop_map(|q| format!("NOT {q}")),
            inner.prop_map(|q| format!("-{q}")),
        ]
    })
}

/// Runs `q` through the engine and the oracle and compares ids and order.
fn check(seed: u64, q: &str, lang: Option<&str>) -> Result<(), TestCaseError> {
    check_against(seed, q, lang, &store(seed).records)
}

/// The ids of every page of `req`, in order, each page also asked of the compressed
/// store; the pages hold as many as `total_count` says.
fn every_page(store: &Store, req: &SearchRequest<'_>) -> Result<Vec<String>, TestCaseError> {
    let catalog = store.engine.catalog("g").unwrap();
    let mut got = Vec::new();
    for page in 1.. {
        let p = catalog
            .search(&req.page(page))
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", req.q)))?;
        same_page_compressed(store, &req.page(page), &p.to_json())?;
        if p.count() == 0 {
            prop_assert_eq!(got.len() as u64, p.total_count());
            break;
        }
        got.extend(
            p.record_ids()
                .iter()
                .map(|&i| catalog.cards().record_id(i).into_owned()),
        );
    }
    Ok(got)
}

/// [`check`] with the oracle over `records` (the store's cards, or its joined cards).
fn check_against(
    seed: u64,
    q: &str,
    lang: Option<&str>,
    records: &Records,
) -> Result<(), TestCaseError> {
    let store = store(seed);
    let mut req = SearchRequest::new(q);
    req.lang = lang;
    let got = every_page(store, &req)?;
    let parsed = parse(q).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let expected: Vec<String> = records
        .matching(parsed.expr.as_ref())
        .into_iter()
        .map(|i| &records.records[i])
        .filter(|r| {
            lang.is_none_or(|l| {
                r["language_code"]
                    .as_str()
                    .is_some_and(|c| c.eq_ignore_ascii_case(l))
            })
        })
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    prop_assert_eq!(got, expected, "query {:?} lang {:?}", q, lang);
    Ok(())
}

/// Asks `req` of the compressed store too: its page (or error) must be `plain`'s, byte for
/// byte, and so must its records' ids.
fn same_page_compressed(
    store: &Store,
    req: &SearchRequest<'_>,
    plain: &str,
) -> Result<(), TestCaseError> {
    let catalog: &Catalog = store.compressed.catalog("g").unwrap();
    let got = match catalog.search(req) {
        Ok(page) => {
            for &id in page.record_ids() {
                let plain = store.engine.catalog("g").unwrap().cards().record_id(id);
                prop_assert_eq!(catalog.cards().record_id(id), plain);
            }
            page.to_json()
        }
        Err(e) => e.to_string(),
    };
    prop_assert_eq!(got, plain, "compressed store, query {:?}", req.q);
    Ok(())
}

/// Runs `q` sorted by the market price through the engine and the oracle: each matching
/// card's key is the largest (descending) or smallest (ascending) market price over its
/// price records that satisfy every nested condition on `variants.prices` at the top of
/// `q`, and every `prices:( )` at the top of a `variants:( )` at the top of `q` whose
/// variant matches that whole `variants:( )` (all of them without one); cards without one
/// come last, ties in default order. On a store with prices in two currencies, a sort that
/// no such condition fixes to one currency is refused.
fn check_price_sort(seed: u64, q: &str, descending: bool) -> Result<(), TestCaseError> {
    let store = store(seed);
    let catalog = store.engine.catalog("g").unwrap();
    let order_by = if descending {
        "-variants.prices.market"
    } else {
        "variants.prices.market"
    };
    let parsed = parse(q).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let matching = store.records.matching(parsed.expr.as_ref());
    let bound = oracle::bound_conditions(parsed.expr.as_ref(), "variants.prices");
    // Each `variants:( )` at the top with the `prices:( )` at its own top.
    let through: Vec<_> = oracle::bound_conditions(parsed.expr.as_ref(), "variants")
        .into_iter()
        .map(|outer| (outer, oracle::bound_conditions(Some(outer), "prices")))
        .filter(|(_, inner)| !inner.is_empty())
        .collect();
    let fixed = bound.iter().any(|c| oracle::fixes_value(c, "currency"))
        || through
            .iter()
            .any(|(_, inner)| inner.iter().any(|c| oracle::fixes_value(c, "currency")));
    let several_currencies = seed % 3 != 2;
    let req = SearchRequest::new(q).order_by(order_by);
    let mut got = Vec::new();
    for page in 1.. {
        let answer = catalog.search(&req.page(page));
        let json = answer
            .as_ref()
            .map(|p| p.to_json())
            .map_err(|e| e.to_string());
        same_page_compressed(store, &req.page(page), &json.unwrap_or_else(|e| e))?;
        match answer {
            Ok(p) if p.count() == 0 => break,
            Ok(p) => got.extend(
                p.record_ids()
                    .iter()
                    .map(|&i| catalog.cards().record_id(i).into_owned()),
            ),
            Err(e) => {
                let refused = several_currencies && !fixed;
                prop_assert!(
                    refused
                        && e.to_string()
                            .contains("are in several currencies (JPY, USD)"),
                    "{q} {order_by}: {e}"
                );
                return Ok(());
            }
        }
    }
    prop_assert!(
        !several_currencies || fixed,
        "{} {}: not refused",
        q,
        order_by
    );
    let keyed: Vec<(Option<f64>, String)> = matching
        .into_iter()
        .map(|i| {
            let record = &store.records.records[i];
            let (variants, variant_prefix) = store.records.elements_of(record, "", "variants");
            let prices = variants
                .into_iter()
                .flat_map(|variant| {
                    let (prices, prefix) =
                        store
                            .records
                            .elements_of(variant, &variant_prefix, "prices");
                    let (through, variant_prefix) = (&through, &variant_prefix);
                    prices.into_iter().filter(move |price| {
                        through.iter().all(|(outer, inner)| {
                            store.records.matches(outer, variant, variant_prefix)
                                && inner
                                    .iter()
                                    .all(|c| store.records.matches(c, price, &prefix))
                        })
                    })
                })
                .filter(|e| {
                    bound
                        .iter()
                        .all(|c| store.records.matches(c, e, "variants.prices."))
                })
                .filter_map(|e| e["market"].as_f64());
            let key = if descending {
                prices.max_by(f64::total_cmp)
            } else {
                prices.min_by(f64::total_cmp)
            };
            (key, record["id"].as_str().unwrap().to_string())
        })
        .collect();
    let expected = in_key_order(keyed, descending, f64::total_cmp);
    prop_assert_eq!(got, expected, "query {:?} order_by {:?}", q, order_by);
    Ok(())
}

/// The ids of `keyed` (in default order) sorted by their keys with `cmp`, reversed when
/// `descending`, those without a key last either way; stable, so ties keep the default
/// order.
fn in_key_order<K>(
    mut keyed: Vec<(Option<K>, String)>,
    descending: bool,
    cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
) -> Vec<String> {
    keyed.sort_by(|(a, _), (b, _)| match (a, b) {
        (Some(x), Some(y)) if descending => cmp(y, x),
        (Some(x), Some(y)) => cmp(x, y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    keyed.into_iter().map(|(_, id)| id).collect()
}

/// A term on a field of the card's expansion, which the cards do not carry.
fn joined_term() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "expansion.series:original",
        "expansion.series:\"Scarlet & Violet\"",
        "expansion.series:(original OR \"scarlet & violet\")",
        "expansion.name:base",
        "!expansion.name:base",
        "expansion.name:\"flame burst\"",
        "expansion.name:*",
        "expansion.name:pro*",
        "expansion.release_date>=2021",
        "expansion.releaseDate:2020",
        "expansion.release_date:[2020/06/01 TO *]",
        "expansion.release_date:*",
        "expansion.total>95",
        "expansion.total:[* TO 100]",
        "expansion.id:e4",
    ])
    .prop_map(str::to_string)
}

/// A joined term alone, or with another term of the cards' own.
fn joined_query() -> impl Strategy<Value = String> {
    (joined_term(), term(), 0..5u8).prop_map(|(joined, own, how)| match how {
        0 => joined,
        1 => format!("{joined} AND {own}"),
        2 => format!("{own} OR NOT {joined}"),
        3 => format!("-{joined} {own}"),
        _ => format!("({joined} OR {own}) -expansion_id:e1"),
    })
}

/// Every page of `q` sorted by the expansion's `release_date` against the oracle's order:
/// the dates in natural order (reversed descending), cards without one last, ties in
/// default order.
fn check_joined_sort(seed: u64, q: &str, descending: bool) -> Result<(), TestCaseError> {
    let store = store(seed);
    let order_by = if descending {
        "-expansion.release_date"
    } else {
        "expansion.releaseDate"
    };
    let got = every_page(store, &SearchRequest::new(q).order_by(order_by))?;
    let parsed = parse(q).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let keyed: Vec<(Option<&str>, String)> = store
        .joined
        .matching(parsed.expr.as_ref())
        .into_iter()
        .map(|i| {
            let r = &store.joined.records[i];
            (
                r["expansion"]["release_date"].as_str(),
                r["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = in_key_order(keyed, descending, |a, b| oracle::natural(a, b));
    prop_assert_eq!(got, expected, "query {:?} order_by {:?}", q, order_by);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn joined_expansion_fields_match_the_oracle(
        seed in 0u64..3,
        q in joined_query(),
        lang in prop::sample::select(vec![None, Some("en"), Some("ja")]),
    ) {
        check_against(seed, &q, lang, &store(seed).joined)?;
    }

    #[test]
    fn sorts_by_the_expansion_match_the_oracle(
        seed in 0u64..3,
        q in prop::option::of(prop_oneof![query(), joined_query()]),
        descending in prop::bool::ANY,
    ) {
        check_joined_sort(seed, q.as_deref().unwrap_or(""), descending)?;
    }

    #[test]
    fn engine_matches_oracle(seed in 0u64..3, q in query(), lang in prop::sample::select(vec![None, Some("en"), Some("ja")])) {
        check(seed, &q, lang)?;
    }

    #[test]
    fn price_sorts_match_the_oracle(
        seed in 0u64..3,
        currency in prop::sample::select(vec!["", "currency:USD AND ", "currency:JPY "]),
        condition in price_condition(),
        bind in prop::bool::ANY,
        through in prop::option::of(prop::sample::select(vec![
            "name:\"alt art\" AND",
            "name:normal",
            "-printings:*",
            "printings:e3 OR",
        ])),
        rest in prop::option::of(query()),
        descending in prop::bool::ANY,
    ) {
        let mut q = match (bind, through) {
            (false, _) => String::new(),
            (true, None) => format!("variants.prices:({currency}{condition})"),
            // Bound through the variant: the prices of the variants that match.
            (true, Some(variant)) => {
                format!("variants:({variant} prices:({currency}{condition}))")
            }
        };
        if let Some(rest) = rest {
            q = format!("{q} {rest}");
        }
        check_price_sort(seed, q.trim(), descending)?;
    }
}

#[test]
fn hand_picked_queries_match_the_oracle() {
    for q in [
        "",
        "name:\"charizard ex\"",
        "!name:\"charizard ex\"",
        "name:ザード",
        "printings:e3",
        "printings:e3 -expansion_id:e3",
        "rarity:\"super rare\"",
        "rarity:*",
        "-rarity:*",
        "hp:[50 TO 100} OR cost<2",
        "types:(fire AND water) OR -types:*",
        "NOT (name:ex OR types:fire)",
        "number:10a OR number:7",
        "!name:char*",
        "attacks.damage:10",
        "variants.prices.market>=50 variants.name:\"alt art\"",
        "translation.en.rarity:common",
        "^rarity:\"Super Rare\"",
        "^rarity:\"super rare\"",
        "^name:Char*",
        "^rarity_code:sr -^rarity_code:SR",
        "variants.prices:(type:raw AND condition:NM AND currency:USD AND market>=50)",
        "variants.prices.type:raw variants.prices.condition:NM variants.prices.market>=50",
        "NOT variants.prices:(type:raw)",
        "variants:(name:\"alt art\" AND printings:e3)",
        "variants:(prices:(company:PSA grade:10) OR pop_reports:(company:PSA))",
        "variants.pop_reports:(company:PSA AND grades:(grade:10 AND count>=50))",
        "attacks:(name:flame AND converted_energy_cost>=2) OR types:(fire OR water)",
        "variants.prices:(currency:EUR)",
    ] {
        for seed in 0..3 {
            for lang in [None, Some("en"), Some("ja")] {
                check(seed, q, lang).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

#[test]
fn default_order_matches_the_oracle() {
    let store = store(0);
    let catalog = store.engine.catalog("g").unwrap();
    let page = catalog
        .search(&SearchRequest::new("").page_size(100))
        .unwrap();
    let got: Vec<String> = page
        .record_ids()
        .iter()
        .map(|&i| catalog.cards().record_id(i).into_owned())
        .collect();
    let expected: Vec<String> = store
        .records
        .records
        .iter()
        .take(100)
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, expected);
    assert_eq!(store.expansions.len(), 4);
}
