//! The Pokémon TCG API v2 surface of `cardex serve`, checked against the public data set
//! itself (`../shared/data/pokemon-tcg-data`, or the folder named by
//! `CARDEX_POKEMON_TCG_DATA`), imported with `cardex::import::pokemon_tcg`: every card and
//! every set as `/v2` serves it equals its object in the data set (the card with its
//! set's object as `set`), key for key and value for value; the searches, paging, lists,
//! errors and credentials of v2 clients. Without the data set the tests print a notice
//! and pass, except under `CI=true`, where its absence fails them.

#![cfg(all(feature = "server", feature = "cli"))]

mod serving;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use cardex::import::pokemon_tcg::{import, Options};
use reqwest::StatusCode;
use serde_json::{json, Value};
use serving::{add_key, scratch, sqlite, Server};

fn source() -> Option<PathBuf> {
    let src = std::env::var_os("CARDEX_POKEMON_TCG_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pokemon-tcg-data")
        });
    if src.join("sets/en.json").is_file() {
        return Some(src);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the Pokémon TCG API data set is missing at {}",
        src.display()
    );
    eprintln!("no data set at {}: skipped", src.display());
    None
}

/// The data set: its sets by id, and its cards (each with its set's id), in file order.
struct Data {
    sets: BTreeMap<String, Value>,
    cards: Vec<(String, Value)>,
}

fn data(src: &std::path::Path) -> Data {
    let read =
        |p: PathBuf| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let sets = read(src.join("sets/en.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_string(), s.clone()))
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(src.join("cards/en"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut cards = Vec::new();
    for file in files {
        let set = file.file_stem().unwrap().to_str().unwrap().to_string();
        for card in read(file).as_array().unwrap() {
            cards.push((set.clone(), card.clone()));
        }
    }
    Data { sets, cards }
}

/// The server on the imported data set, and the data set.
fn start(args: &[&str]) -> Option<(Server, Data, PathBuf)> {
    let src = source()?;
    let dir = scratch("v2");
    let out = dir.join("snapshot");
    import(&src, &out, &Options::default(), &|_| {}).expect("the import succeeds");
    let server = Server::start_on(&out, args);
    Some((server, data(&src), dir))
}

/// `text` as one percent-encoded path segment (`ex10-?` has a `?`).
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get(client: &reqwest::Client, url: &str) -> (StatusCode, Value) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_card_and_set_is_the_data_sets_own() {
    let Some((server, data, dir)) = start(&[]) else {
        return;
    };
    let client = reqwest::Client::new();
    assert_eq!(data.cards.len(), 20_078);

    // Every set, one by one and in one page.
    for (id, set) in &data.sets {
        let (s, body) = get(&client, &server.url(&format!("/v2/sets/{}", segment(id)))).await;
        assert_eq!(s, StatusCode::OK, "{id}: {body}");
        assert_eq!(&body["data"], set, "set {id}");
    }
    let (_, page) = get(&client, &server.url("/v2/sets")).await;
    assert_eq!(
        (
            page["page"].clone(),
            page["pageSize"].clone(),
            page["count"].clone()
        ),
        (json!(1), json!(250), json!(data.sets.len()))
    );
    assert_eq!(page["totalCount"], json!(data.sets.len()));
    let served: BTreeMap<String, Value> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_string(), s.clone()))
        .collect();
    assert_eq!(served, data.sets);

    // Every card, by id, eight at a time.
    let expected: Arc<Vec<(String, Value)>> = Arc::new(
        data.cards
            .iter()
            .map(|(set, card)| {
                let mut card = card.clone();
                card["set"] = data.sets[set].clone();
                (card["id"].as_str().unwrap().to_string(), card)
            })
            .collect(),
    );
    let mut workers = Vec::new();
    for worker in 0..8 {
        let (client, expected, base) = (client.clone(), expected.clone(), server.url(""));
        workers.push(tokio::spawn(async move {
            for (id, card) in expected.iter().skip(worker).step_by(8) {
                let (s, body) = get(&client, &format!("{base}/v2/cards/{}", segment(id))).await;
                assert_eq!(s, StatusCode::OK, "{id}: {body}");
                assert!(
                    &body["data"] == card,
                    "card {id}: {}\nis not\n{card}",
                    body["data"]
                );
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }

    // Every card again, paging through /v2/cards as Card.all() does.
    let mut seen = BTreeMap::new();
    for page in 1.. {
        let (s, body) = get(&client, &server.url(&format!("/v2/cards?page={page}"))).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(body["totalCount"], json!(20_078));
        let cards = body["data"].as_array().unwrap();
        assert_eq!(body["count"], json!(cards.len()));
        for card in cards {
            seen.insert(card["id"].as_str().unwrap().to_string(), card.clone());
        }
        if cards.len() < 250 {
            break;
        }
    }
    let expected: BTreeMap<String, Value> = expected.iter().cloned().collect();
    assert_eq!(seen.len(), expected.len());
    assert!(seen == expected, "a paged card differs from the data set");

    // The value lists, from the data.
    for (path, field) in [
        ("types", "types"),
        ("subtypes", "subtypes"),
        ("supertypes", "supertype"),
        ("rarities", "rarity"),
    ] {
        let mut values = BTreeSet::new();
        for (_, card) in &data.cards {
            match &card[field] {
                Value::String(s) => {
                    values.insert(s.clone());
                }
                Value::Array(items) => {
                    values.extend(items.iter().map(|v| v.as_str().unwrap().to_string()))
                }
                _ => {}
            }
        }
        let (s, body) = get(&client, &server.url(&format!("/v2/{path}"))).await;
        assert_eq!(s, StatusCode::OK);
        let served: BTreeSet<String> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(served, values, "/v2/{path}");
    }
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_queries_paging_order_and_errors() {
    let Some((server, data, dir)) = start(&[]) else {
        return;
    };
    let client = reqwest::Client::new();
    let url = |p: &str| server.url(p);
    let count = |f: &dyn Fn(&str, &Value) -> bool| {
        data.cards.iter().filter(|(set, card)| f(set, card)).count()
    };

    // set.* fields name the card's set.
    let (s, body) = get(&client, &url("/v2/cards?q=set.id:base1&pageSize=5")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["totalCount"], json!(count(&|set, _| set == "base1")));
    assert_eq!(
        (body["pageSize"].clone(), body["count"].clone()),
        (json!(5), json!(5))
    );
    let series = "Scarlet & Violet";
    let (_, body) = get(
        &client,
        &url("/v2/cards?q=set.series:%22Scarlet%20%26%20Violet%22%20supertype:pokemon&pageSize=1"),
    )
    .await;
    assert_eq!(
        body["totalCount"],
        json!(count(
            &|set, card| data.sets[set]["series"] == series && card["supertype"] == "Pokémon"
        ))
    );
    // Lucene's `&&`, `||` and `+` (required), percent-encoded as a client sends them.
    let (s, body) = get(
        &client,
        &url("/v2/cards?q=%2Bset.id:base1%20%26%26%20(supertype:pokemon%20%7C%7C%20supertype:trainer)&pageSize=1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["totalCount"],
        json!(count(&|set, card| set == "base1"
            && (card["supertype"] == "Pokémon"
                || card["supertype"] == "Trainer")))
    );
    let (_, body) = get(
        &client,
        &url("/v2/cards?q=nationalPokedexNumbers:25&select=id,name"),
    )
    .await;
    assert_eq!(
        body["totalCount"],
        json!(count(&|_, card| card["nationalPokedexNumbers"]
            .as_array()
            .is_some_and(|n| n.contains(&json!(25)))))
    );
    let first = &body["data"][0];
    assert_eq!(first.as_object().unwrap().len(), 2, "{first}");
    // Commas alone select nothing: every field, as a blank `select`.
    let (s, all) = get(
        &client,
        &url("/v2/cards?q=nationalPokedexNumbers:25&select=,%20,"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{all}");
    assert_eq!(all["data"][0]["id"], first["id"], "{all}");
    assert!(all["data"][0]["set"].is_object(), "{all}");
    assert!(
        first["name"].as_str().unwrap().contains("Pikachu"),
        "{first}"
    );
    // v2's date ranges; a bare year is that year, on cards (through their set) and on sets.
    let since_2020 = json!(count(&|set, _| data.sets[set]["releaseDate"]
        .as_str()
        .unwrap()
        >= "2020/01/01"));
    for q in [
        "set.releaseDate:%5B2020/01/01%20TO%20*%5D",
        "set.releaseDate>=2020",
    ] {
        let (s, body) = get(&client, &url(&format!("/v2/cards?q={q}&pageSize=1"))).await;
        assert_eq!(s, StatusCode::OK, "{body}");
        assert_eq!(body["totalCount"], since_2020, "{q}");
    }
    let (_, body) = get(
        &client,
        &url("/v2/sets?q=releaseDate:%5B2019%20TO%202020%5D&pageSize=250"),
    )
    .await;
    let in_years =
        |s: &&Value| ("2019/01/01"..="2020/12/31").contains(&s["releaseDate"].as_str().unwrap());
    assert_eq!(
        body["totalCount"],
        json!(data.sets.values().filter(in_years).count())
    );
    assert!(body["totalCount"].as_u64().unwrap() > 0);
    let (_, body) = get(
        &client,
        &url("/v2/sets?q=releaseDate:%5B*%20TO%201999/12/31%5D&pageSize=250"),
    )
    .await;
    assert_eq!(
        body["totalCount"],
        json!(data
            .sets
            .values()
            .filter(|s| s["releaseDate"].as_str().unwrap() <= "1999/12/31")
            .count())
    );
    let (_, body) = get(&client, &url("/v2/sets?q=ptcgoCode:BS")).await;
    assert_eq!(body["data"][0]["id"], "base1");
    // More of v2's card fields: the set's ptcgoCode, evolvesFrom, legalities.
    let (s, body) = get(&client, &url("/v2/cards?q=set.ptcgoCode:BS&pageSize=1")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["totalCount"], json!(count(&|set, _| set == "base1")));
    let (_, body) = get(
        &client,
        &url("/v2/cards?q=!evolvesFrom:Charmander&pageSize=1"),
    )
    .await;
    assert_eq!(
        body["totalCount"],
        json!(count(&|_, card| card["evolvesFrom"] == "Charmander"))
    );
    // `legalities.standard` is a keyword field: `legal` is `Legal`, not `Not Legal`.
    assert!(count(&|_, card| card["legalities"]["standard"] == "Not Legal") > 0);
    for q in ["legalities.standard:legal", "!legalities.standard:legal"] {
        let (_, body) = get(&client, &url(&format!("/v2/cards?q={q}&pageSize=1"))).await;
        assert_eq!(
            body["totalCount"],
            json!(count(&|_, card| card["legalities"]["standard"] == "Legal")),
            "{q}"
        );
    }
    // The set's fields that a card's own summary lacks are its set's, searched and sorted
    // from the card as on /v2/sets (`Set.` in any case).
    let sets_where = |f: &dyn Fn(&Value) -> bool| -> BTreeSet<String> {
        data.sets
            .iter()
            .filter(|(_, set)| f(set))
            .map(|(id, _)| id.to_string())
            .collect()
    };
    let cards_of = |sets: &BTreeSet<String>| count(&|set, _| sets.contains(set));
    let standard = sets_where(&|set| set["legalities"]["standard"] == "Legal");
    let updated = sets_where(&|set| set["updatedAt"].as_str().unwrap() >= "2023/01/01");
    assert!(!standard.is_empty() && standard.len() < data.sets.len());
    assert!(!updated.is_empty() && updated.len() < data.sets.len());
    for (q, sets) in [
        ("set.legalities.standard:legal", &standard),
        ("Set.Legalities.Standard:legal", &standard),
        (
            "-set.legalities.standard:legal",
            &sets_where(&|set| set["legalities"]["standard"] != "Legal"),
        ),
        ("set.updatedAt:[2023/01/01 TO *]", &updated),
        (
            "set.images.symbol:*",
            &sets_where(&|set| set["images"]["symbol"].is_string()),
        ),
    ] {
        let (s, body) = get(
            &client,
            &url(&format!("/v2/cards?q={}&pageSize=1", segment(q))),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{q}: {body}");
        assert_eq!(body["totalCount"], json!(cards_of(sets)), "{q}");
    }
    let (s, body) = get(
        &client,
        &url("/v2/cards?orderBy=-set.updatedAt,id&pageSize=250&select=id,set"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // A date with a time sorts by its date (`YYYY/MM/DD`).
    let day = |stamp: &Value| stamp.as_str().unwrap()[..10].to_string();
    let stamps: Vec<String> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|card| day(&card["set"]["updatedAt"]))
        .collect();
    let latest = data.sets.values().map(|set| day(&set["updatedAt"])).max();
    assert_eq!(stamps.first(), latest.as_ref());
    assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "{stamps:?}");
    let (s, body) = get(&client, &url("/v2/cards?q=set.nmae:x")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("set.name"),
        "{body}"
    );
    let (s, body) = get(
        &client,
        &url("/v2/sets?q=legalities.standard:legal&pageSize=1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["totalCount"],
        json!(data
            .sets
            .values()
            .filter(|s| s["legalities"]["standard"] == "Legal")
            .count())
    );

    // A batch of ids as long as a page, as v2's users write it (pokemon-tcg-api #101):
    // ids from across the data, and the longest batch of one set's first 250 ids (`swshp`,
    // whose ids are long), percent-encoded as a client sends it.
    let across: BTreeSet<&str> = data
        .cards
        .iter()
        .map(|(_, c)| c["id"].as_str().unwrap())
        .filter(|id| !id.contains(['*', '?']))
        .step_by(80)
        .take(250)
        .collect();
    let by_set = |set: &str| -> BTreeSet<&str> {
        data.cards
            .iter()
            .filter(|(s, _)| s == set)
            .map(|(_, c)| c["id"].as_str().unwrap())
            .take(250)
            .collect()
    };
    let batch_q = |batch: &BTreeSet<&str>| {
        let terms: Vec<String> = batch.iter().map(|id| format!("id:{id}")).collect();
        terms.join(" OR ")
    };
    let longest = data
        .sets
        .keys()
        .map(|set| by_set(set))
        .filter(|batch| batch.iter().all(|id| !id.contains(['*', '?'])))
        .max_by_key(|batch| batch_q(batch).len())
        .unwrap();
    assert!(
        batch_q(&longest).len() > 4096,
        "{}",
        batch_q(&longest).len()
    );
    for batch in [across, longest] {
        assert_eq!(batch.len(), 250);
        assert!(batch_q(&batch).len() <= cardex::query::MAX_QUERY_BYTES);
        let (s, body) = get(
            &client,
            &url(&format!(
                "/v2/cards?q={}&pageSize=250",
                segment(&batch_q(&batch))
            )),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let got: BTreeSet<&str> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(got, batch);
    }

    // Lucene's escapes: `?` in an id is the character, not a wildcard.
    let (s, body) = get(&client, &url("/v2/cards?q=id:ex10-%5C%3F")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["totalCount"], json!(1), "{body}");
    assert_eq!(body["data"][0]["id"], "ex10-?", "{body}");
    let (_, body) = get(&client, &url("/v2/cards?q=id:ex10-%3F")).await;
    assert!(body["totalCount"].as_u64().unwrap() > 1, "{body}");

    // orderBy: newest set first.
    let (_, body) = get(
        &client,
        &url("/v2/cards?orderBy=-set.releaseDate,number&pageSize=250"),
    )
    .await;
    let newest = data
        .sets
        .values()
        .map(|s| s["releaseDate"].as_str().unwrap())
        .max()
        .unwrap();
    let dates: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["set"]["releaseDate"].as_str().unwrap())
        .collect();
    assert_eq!(dates[0], newest);
    assert!(dates.windows(2).all(|w| w[0] >= w[1]), "{dates:?}");
    let (_, body) = get(&client, &url("/v2/sets?orderBy=releaseDate&pageSize=3")).await;
    assert_eq!(body["data"][0]["id"], "base1");

    // A parameter v2 ignores is ignored whatever its bytes; one it reads must be UTF-8.
    let (s, body) = get(&client, &url("/v2/cards?foo=%FF&pageSize=1")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // A pageSize over 250 is served as 250, however large.
    for path in [
        "/v2/sets?pageSize=500",
        "/v2/sets?pageSize=%2B251",
        "/v2/sets?page=1&pageSize=99999999999999999999999",
    ] {
        let (s, body) = get(&client, &url(path)).await;
        assert_eq!(s, StatusCode::OK, "{path}: {body}");
        assert_eq!(body["pageSize"], 250, "{path}");
        assert_eq!(body["page"], 1, "{path}");
    }
    // Errors: v2's body, integer codes.
    for (path, status) in [
        ("/v2/cards?pageSize=0", 400),
        ("/v2/cards?pageSize=-1", 400),
        ("/v2/cards?pageSize=", 400),
        ("/v2/cards?pageSize=1.5", 400),
        ("/v2/cards?page=0", 400),
        ("/v2/cards?q=hp:(", 400),
        ("/v2/cards?q=nmae:pikachu", 400),
        ("/v2/cards?select=nmae", 400),
        ("/v2/cards?q=name:%FF", 400),
        ("/v2/cards/xy1-99999", 404),
        ("/v2/sets/nope", 404),
        ("/v2/nothing", 404),
    ] {
        let (s, body) = get(&client, &url(path)).await;
        assert_eq!(s.as_u16(), status, "{path}: {body}");
        assert_eq!(body["error"]["code"], json!(status), "{path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert_eq!(
            body["error"].as_object().unwrap().len(),
            2,
            "{path}: {body}"
        );
    }
    let (_, body) = get(&client, &url("/v2/cards?q=nmae:pikachu")).await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("name"),
        "{body}"
    );
    // A field of v2's card or set object that no record here has (the data set carries
    // no prices) is selected as v2 selects it: the records come without it.
    let (s, body) = get(&client, &url("/v2/cards?select=id,tcgplayer&pageSize=2")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let first = body["data"][0].as_object().unwrap();
    assert!(first.contains_key("id"), "{body}");
    assert!(
        first.keys().all(|k| k == "id" || k == "tcgplayer"),
        "{body}"
    );
    let (s, body) = get(
        &client,
        &url("/v2/sets?select=id,updatedAt,images&pageSize=1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // Messages name fields as the request did, and suggest v2's spellings.
    let message = |body: &Value| body["error"]["message"].as_str().unwrap().to_string();
    for (path, says) in [
        ("/v2/cards?select=tcgplayr", "did you mean `tcgplayer`?"),
        (
            "/v2/cards?select=id,set.id",
            "`set.id` is inside `set`; select takes top-level fields",
        ),
        (
            "/v2/cards?q=tcgplayer.prices.holofoil.market:[100%20TO%20*]",
            "are v2's renderings of a card's prices, and this catalog has none",
        ),
        (
            "/v2/cards?orderBy=-tcgplayer.prices.holofoil.market",
            "are v2's renderings of a card's prices, and this catalog has none",
        ),
    ] {
        let (s, body) = get(&client, &url(path)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert!(message(&body).contains(says), "{path}: {body}");
    }
    let (_, body) = get(&client, &url("/v2/cards?q=nationalpokedexnumbers:25")).await;
    assert!(
        message(&body).contains("(did you mean `nationalPokedexNumbers`?)"),
        "{body}"
    );
    let (s, body) = get(&client, &url("/v2/cards?q=set.nmae:base")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        message(&body).contains("`set.nmae`") && message(&body).contains("`set.name`"),
        "{body}"
    );
    let (s, body) = get(&client, &url("/v2/cards?orderBy=-set.releaseDat")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        message(&body).contains("orderBy") && message(&body).contains("set.releaseDat"),
        "{body}"
    );
    assert!(!message(&body).contains("expansion"), "{body}");
    // Exact values and comparisons on set fields.
    let (_, body) = get(
        &client,
        &url("/v2/cards?q=!set.name:base%20set.total%3E=100&pageSize=1"),
    )
    .await;
    assert_eq!(
        body["totalCount"],
        json!(count(&|set, _| data.sets[set]["name"] == "Base"
            && data.sets[set]["total"].as_u64().unwrap() >= 100))
    );
    // HEAD answers like GET, without a body.
    let head = client
        .head(url("/v2/cards?pageSize=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    // A reload is seen on /v2: its records are rendered again for the new snapshot.
    let file = dir.join("snapshot/pokemon/cards/base1.json");
    let mut cards: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let charizard = cards.iter_mut().find(|c| c["id"] == "base1-4").unwrap();
    charizard["hp"] = json!("999");
    std::fs::write(&file, serde_json::to_vec(&cards).unwrap()).unwrap();
    server.signal("HUP");
    server.wait_for("event=reloaded", 1);
    let (_, body) = get(&client, &url("/v2/cards/base1-4")).await;
    assert_eq!(body["data"]["hp"], "999");
    assert_eq!(body["data"]["set"]["id"], "base1");
    let response = client.post(url("/v2/cards")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!(405));
    // /v1 keeps its own error body.
    let (_, body) = get(&client, &url("/pokemon/v1/cards?page_size=101")).await;
    assert_eq!(body["error"]["code"], "invalid_parameter");
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_alone_is_its_team_and_no_key_is_limited_per_address() {
    let Some(src) = source() else {
        return;
    };
    let dir = scratch("v2-keys");
    let out = dir.join("snapshot");
    // Under another catalog name, which --v2-catalog names.
    let options = Options {
        catalog: "ptcg".to_string(),
        ..Options::default()
    };
    import(&src, &out, &options, &|_| {}).expect("the import succeeds");
    let state = sqlite(&dir.join("state.db"));
    let key = add_key(&state, "acme", 100);
    let server = Server::start_on(
        &out,
        &[
            "--state",
            &state,
            "--v2-anonymous-limit",
            "5",
            "--v2-catalog",
            "ptcg",
        ],
    );
    let client = reqwest::Client::new();
    let with_key = |path: &str| {
        client
            .get(server.url(path))
            .header("X-Api-Key", key.as_str())
            .send()
    };
    // A key alone: served and charged like /v1 (1 credit each).
    for path in [
        "/v2/cards?pageSize=1",
        "/v2/cards/base1-4",
        "/v2/sets",
        "/v2/types",
    ] {
        let response = with_key(path).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
    // A failed request costs nothing.
    for (path, status) in [
        ("/v2/cards/nope", StatusCode::NOT_FOUND),
        ("/v2/cards?pageSize=0", StatusCode::BAD_REQUEST),
        ("/v2/cards?q=nmae:pikachu", StatusCode::BAD_REQUEST),
    ] {
        assert_eq!(with_key(path).await.unwrap().status(), status, "{path}");
    }
    // An unknown key: 401 in v2's body.
    let response = client
        .get(server.url("/v2/cards"))
        .header("X-Api-Key", "cdx_0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!(401));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a pokemontcg.io key is not): send a key this server made, or none (5 requests a minute"),
        "{body}"
    );
    // /v1 still needs both headers.
    let response = with_key("/ptcg/v1/cards").await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // Without a key: 5 a minute from this address, then 429 with Retry-After, free.
    for _ in 0..5 {
        let response = client.get(server.url("/v2/rarities")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let response = client.get(server.url("/v2/rarities")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!(429));
    assert_eq!(body["error"].as_object().unwrap().len(), 2, "{body}");
    // A key still has its team's limit.
    let response = with_key("/v2/rarities").await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // The key's team was charged for its five answers only (charges are committed
    // before the answers leave).
    let (code, out, err) = serving::cardex(&["accounts", "list", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    let acme = out.lines().find(|l| l.starts_with("acme\t")).unwrap();
    assert_eq!(acme.rsplit('\t').next(), Some("5"), "{out}");
    // A revoked key: 401 in v2's body, within a second or two, and still free.
    serving::revoke_key(&state, &key);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let body: Value = loop {
        let response = with_key("/v2/cards?pageSize=1").await.unwrap();
        if response.status() == StatusCode::UNAUTHORIZED {
            break response.json().await.unwrap();
        }
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            std::time::Instant::now() < deadline,
            "the revoked key still works"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(body["error"]["code"], json!(401), "{body}");
    assert_eq!(body["error"].as_object().unwrap().len(), 2, "{body}");
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `/v2` serves English cards only, of the catalog `--v2-catalog` names (`pokemon` by
/// default), on any snapshot: the bundled one has Japanese Pokémon cards too. A server
/// whose snapshot has no such catalog answers `/v2` with v2's 404, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_serves_the_english_cards_of_one_catalog() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let mut english = BTreeSet::new();
    let mut japanese = BTreeSet::new();
    for entry in std::fs::read_dir(data.join("pokemon/cards")).unwrap() {
        let cards: Vec<Value> =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        for card in cards {
            let id = card["id"].as_str().unwrap().to_string();
            if card["language_code"] == "EN" {
                english.insert(id);
            } else {
                japanese.insert(id);
            }
        }
    }
    assert!(!english.is_empty() && !japanese.is_empty());
    let client = reqwest::Client::new();
    let server = Server::start_on(&data, &["--open"]);
    let (s, body) = get(&client, &server.url("/v2/cards?pageSize=250")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let served: BTreeSet<String> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(served, english);
    assert_eq!(body["totalCount"], json!(english.len()));
    // The bundled catalog's cards carry `expansion_id`, not their set: the set's fields are
    // its expansion's, joined by `expansion_id`.
    let (s, body) = get(&client, &server.url("/v2/cards?q=set.id:emc&pageSize=1")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["data"][0]["set"]["id"], "emc", "{body}");
    let (s, body) = get(
        &client,
        &server.url("/v2/cards?q=set.releaseDate:[2024/01/01 TO *]&pageSize=250"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let recent = body["data"].as_array().unwrap();
    assert!(!recent.is_empty() && recent.len() < english.len(), "{body}");
    assert!(
        recent
            .iter()
            .all(|c| c["set"]["releaseDate"].as_str().unwrap() >= "2024/01/01"),
        "{body}"
    );
    let (s, body) = get(
        &client,
        &server.url("/v2/cards?orderBy=-set.releaseDate,number&pageSize=250"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let dates: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["set"]["releaseDate"].as_str().unwrap())
        .collect();
    assert!(dates.windows(2).all(|w| w[0] >= w[1]), "{dates:?}");
    // The sets' `logo` and `symbol` are served as `images`, and searched and sorted so.
    let logos = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["images"]["logo"].as_str().unwrap().to_string())
            .collect()
    };
    let (s, all) = get(&client, &server.url("/v2/sets?orderBy=-images.logo")).await;
    assert_eq!(s, StatusCode::OK, "{all}");
    let mut descending = logos(&all);
    assert!(descending.len() > 1, "{all}");
    assert!(
        descending.windows(2).all(|w| w[0] >= w[1]),
        "{descending:?}"
    );
    let (s, body) = get(&client, &server.url("/v2/sets?q=Images.Symbol:*")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    descending.sort();
    let mut found = logos(&body);
    found.sort();
    assert_eq!(found, descending);
    let (s, body) = get(
        &client,
        &server.url("/v2/cards?q=set.images.logo:*emc*&pageSize=250"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let emc = body["data"].as_array().unwrap();
    assert!(!emc.is_empty(), "{body}");
    assert!(emc.iter().all(|c| c["set"]["id"] == "emc"), "{body}");
    let (s, body) = get(&client, &server.url("/v2/cards?q=set.id:emc&pageSize=250")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["totalCount"].as_u64(), Some(emc.len() as u64));
    let (s, body) = get(&client, &server.url("/v2/cards?q=set.nmae:x")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`set.nmae`") && message.contains("`set.name`"),
        "{message}"
    );
    let japanese_id = japanese.iter().next().unwrap();
    let (s, body) = get(&client, &server.url(&format!("/v2/cards/{japanese_id}"))).await;
    assert_eq!(
        (s, body["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!(404))
    );
    server.stop();
    let server = Server::start_on(&data, &["--open", "--v2-catalog", "nope"]);
    let (s, body) = get(&client, &server.url("/v2/cards")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no catalog `nope` to serve /v2 from"),
        "{body}"
    );
    // The start says so, with the catalogs there are.
    let log = server.log();
    assert!(
        log.contains("level=warn event=v2 message=\"/v2 answers 404 until a snapshot has the catalog nope (--v2-catalog); this one has "),
        "{log}"
    );
    server.stop();
}

/// The official Python SDK, `pokemontcgsdk`, with its base URL pointed at the server and
/// an API key, runs its documented calls (`tests/sdk/pokemontcgsdk_check.py` checks every
/// answer against the data set). The Python with the SDK installed is
/// `CARDEX_SDK_PYTHON` (`.ci/run` makes a throw-away virtual environment for it).
#[test]
fn the_official_python_sdk_works_against_it() {
    let Some(python) = serving::python("CARDEX_SDK_PYTHON", "pokemontcgsdk") else {
        return;
    };
    let Some(src) = source() else {
        return;
    };
    let dir = scratch("v2-sdk");
    let out = dir.join("snapshot");
    import(&src, &out, &Options::default(), &|_| {}).expect("the import succeeds");
    let state = sqlite(&dir.join("state.db"));
    let key = add_key(&state, "sdk", 1_000_000);
    let server = Server::start_on(&out, &["--state", &state]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/pokemontcgsdk_check.py"
    );
    let run = std::process::Command::new(python)
        .arg(script)
        .arg(server.url("/v2"))
        .arg(&src)
        .arg(&key)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{said}");
    assert!(
        said.contains("20078 cards and 171 sets match the data set"),
        "{said}"
    );
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// On a catalog in cardex's layout, v2's `tcgplayer.prices.<variant>.<figure>` and
/// `cardmarket.prices.<figure>` are made from the variants' raw Near Mint prices; in `q`
/// and as the first `orderBy` key they read the price records they are made from. Checked
/// against the rendering itself: a card matches when the figure it is served with passes
/// the test, and a price sort orders the cards by the figure they are served with, those
/// without it last (ties and the rest in default order, or by the keys after it), page
/// after page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn price_figures_search_and_sort_as_rendered() {
    let data = scratch("v2-prices");
    let mut seed = 7u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut cards = Vec::new();
    for i in 0..60 {
        let mut variants = Vec::new();
        let mut eur = false;
        for name in ["normal", "holofoil", "reverseHolofoil", ""] {
            // A variant without a name is v2's `normal`: one or the other.
            let normal = variants.iter().any(|v: &Value| v["name"] == "normal");
            if next(3) == 0 || (name.is_empty() && normal) {
                continue;
            }
            let mut prices = Vec::new();
            // Each figure in one raw Near Mint USD price of a variant at most (two records
            // may share the figures), and EUR on one variant at most: the figures v2 shows
            // are then the only ones there are. Written as data sets write them: in any
            // case, the condition absent or null.
            if next(4) != 0 {
                let market = (next(2000) as f64) / 100.0;
                let mut figures = vec![("low", json!(market / 2.0)), ("market", json!(market))];
                if next(3) == 0 {
                    figures.push(("mid", json!(market * 0.8)));
                }
                let split = next(figures.len() as u64 + 1) as usize;
                for part in [&figures[..split], &figures[split..]] {
                    if part.is_empty() && next(2) == 0 {
                        continue;
                    }
                    let (kind, currency) = (
                        ["raw", "Raw"][next(2) as usize],
                        ["USD", "usd", "ＵＳＤ"][next(3) as usize],
                    );
                    let mut nm = json!({"type": kind, "currency": currency});
                    for (k, v) in part {
                        nm[*k] = v.clone();
                    }
                    match next(4) {
                        0 => nm["condition"] = json!("NM"),
                        1 => nm["condition"] = json!("nm"),
                        2 if next(2) == 0 => nm["condition"] = Value::Null,
                        2 => nm["condition"] = json!("ＮＭ"),
                        _ => {}
                    }
                    prices.push(nm);
                }
            }
            prices.push(json!({"type": "raw", "condition": "LP", "currency": "USD", "market": (next(3000) as f64) / 100.0}));
            prices.push(json!({"type": "graded", "company": "PSA", "grade": "10", "currency": "USD", "market": (next(90000) as f64) / 100.0}));
            if !eur && next(3) == 0 {
                eur = true;
                let market = (next(1500) as f64) / 100.0;
                prices.push(json!({"type": "raw", "condition": "NM", "currency": "EUR", "market": market, "low": market / 3.0}));
            }
            prices.push(
                json!({"type": "raw", "condition": "NM", "currency": "JPY", "market": next(90000)}),
            );
            let mut variant = json!({"prices": prices});
            if !name.is_empty() {
                variant["name"] = json!(name);
            }
            variants.push(variant);
        }
        // A variant whose name is not text is not served, nor matched.
        if next(6) == 0 {
            variants.push(
                json!({"name": 1, "prices": [{"type": "raw", "currency": "USD", "market": 5.5}]}),
            );
        }
        let mut card = json!({
            "id": format!("t-{i}"), "expansion_id": "t", "number": format!("{i}"),
            "name": format!("Card {:02}", next(40)), "variants": variants,
        });
        // An own `tcgplayer` of `null` counts as none: the prices are made.
        if next(8) == 0 {
            card["tcgplayer"] = Value::Null;
        }
        cards.push(card);
    }
    std::fs::create_dir_all(data.join("pokemon/cards")).unwrap();
    std::fs::create_dir_all(data.join("pokemon/expansions")).unwrap();
    std::fs::write(
        data.join("pokemon/expansions/t.json"),
        r#"[{"id":"t","name":"Test","release_date":"2024/01/01"}]"#,
    )
    .unwrap();
    std::fs::write(
        data.join("pokemon/cards/t.json"),
        serde_json::to_vec(&cards).unwrap(),
    )
    .unwrap();
    let client = reqwest::Client::new();
    let server = Server::start_on(&data, &["--open"]);
    let ask = |params: Vec<(&'static str, String)>| {
        let url = reqwest::Url::parse_with_params(&server.url("/v2/cards"), params).unwrap();
        let client = client.clone();
        async move { get(&client, url.as_str()).await }
    };
    let (s, body) = ask(vec![("pageSize", "250".into())]).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let served: Vec<Value> = body["data"].as_array().unwrap().clone();
    assert_eq!(served.len(), 60);
    // No card is served with an own `tcgplayer` of `null`: its prices are made.
    assert!(served
        .iter()
        .all(|c| c.get("tcgplayer") != Some(&Value::Null)));
    assert!(served.iter().any(|c| c["cardmarket"].is_object()));
    let figure = |card: &Value, path: &str| -> Option<f64> {
        path.split('.')
            .try_fold(card, |v, k| v.get(k))
            .and_then(Value::as_f64)
    };
    let ids = |cards: &[Value]| -> Vec<String> {
        cards
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let everything = |params: Vec<(&'static str, String)>| {
        let ask = &ask;
        async move {
            let mut all = Vec::new();
            for page in 1.. {
                let mut with_page = params.clone();
                with_page.push(("page", page.to_string()));
                with_page.push(("pageSize", "7".into()));
                let (s, body) = ask(with_page).await;
                assert_eq!(s, StatusCode::OK, "{params:?}: {body}");
                let data = body["data"].as_array().unwrap();
                if data.is_empty() {
                    break;
                }
                all.extend(ids(data));
            }
            all
        }
    };
    type Test = fn(Option<f64>) -> bool;
    let tests: [(&str, Test); 5] = [
        (":>5", |v| v.is_some_and(|v| v > 5.0)),
        (":[2 TO 8]", |v| v.is_some_and(|v| (2.0..=8.0).contains(&v))),
        ("<=3", |v| v.is_some_and(|v| v <= 3.0)),
        (":*", |v| v.is_some()),
        (":(>1 AND <4)", |v| v.is_some_and(|v| v > 1.0 && v < 4.0)),
    ];
    let paths = [
        "tcgplayer.prices.normal.market",
        "tcgplayer.prices.holofoil.market",
        "tcgplayer.prices.reverseHolofoil.low",
        "cardmarket.prices.trendPrice",
        "cardmarket.prices.averageSellPrice",
        "cardmarket.prices.lowPrice",
    ];
    for path in paths {
        for (test, passes) in &tests {
            let q = format!("{path}{test}");
            let expected: Vec<String> = served
                .iter()
                .filter(|c| passes(figure(c, path)))
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect();
            assert!(
                !expected.is_empty() || *test == ":>5",
                "{q}: a test that tests nothing"
            );
            assert_eq!(everything(vec![("q", q.clone())]).await, expected, "{q}");
            // Negated: every other card.
            let others: Vec<String> = served
                .iter()
                .filter(|c| !passes(figure(c, path)))
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                everything(vec![("q", format!("-{q}"))]).await,
                others,
                "-{q}"
            );
        }
        for descending in [false, true] {
            let key = format!("{}{path}", if descending { "-" } else { "" });
            let mut expected: Vec<(Option<f64>, String)> = served
                .iter()
                .map(|c| (figure(c, path), c["id"].as_str().unwrap().to_string()))
                .collect();
            expected.sort_by(|(a, _), (b, _)| match (a, b) {
                (Some(a), Some(b)) if descending => b.total_cmp(a),
                (Some(a), Some(b)) => a.total_cmp(b),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
            let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
            assert_eq!(
                everything(vec![("orderBy", key.clone())]).await,
                expected,
                "{key}"
            );
        }
    }
    // With a query (whose own price terms do not narrow the sort's prices) and keys after
    // the price: by the price, then by name; the cards without it by name.
    let q = "tcgplayer.prices.normal.market:* -name:\"Card 01\"";
    let mut expected: Vec<(Option<f64>, String, String)> = served
        .iter()
        .filter(|c| figure(c, "tcgplayer.prices.normal.market").is_some() && c["name"] != "Card 01")
        .map(|c| {
            (
                figure(c, "tcgplayer.prices.holofoil.market"),
                c["name"].as_str().unwrap().to_string(),
                c["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    expected.sort_by(|(a, an, _), (b, bn, _)| {
        match (a, b) {
            (Some(a), Some(b)) => b.total_cmp(a),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| an.cmp(bn))
    });
    let expected: Vec<String> = expected.into_iter().map(|(_, _, id)| id).collect();
    assert_eq!(
        everything(vec![
            ("q", q.into()),
            ("orderBy", "-tcgplayer.prices.holofoil.market,name".into())
        ])
        .await,
        expected
    );
    // A 400 and its message.
    let refused = |params: Vec<(&'static str, String)>| {
        let ask = &ask;
        async move {
            let (s, body) = ask(params.clone()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{params:?}: {body}");
            body["error"]["message"].as_str().unwrap().to_string()
        }
    };
    // What cardex does not render, and a price key after another key, are 400s that say so.
    for (param, value, says) in [
        (
            "q",
            "tcgplayer.prices.holofoil.directLow:>1",
            "have `low`, `mid`, `high`, `market`",
        ),
        (
            "q",
            "cardmarket.prices.avg30:>1",
            "are `averageSellPrice`, `trendPrice`, `lowPrice`",
        ),
        (
            "orderBy",
            "name,-tcgplayer.prices.holofoil.market",
            "sorts only as the first key",
        ),
        (
            "q",
            "tcgplayer.updatedAt:x",
            "the figures are searched and sorted by",
        ),
        (
            "q",
            "tcgplayer.prices.holofoil:(market>1)",
            "the figures are searched and sorted by",
        ),
    ] {
        let message = refused(vec![(param, value.into())]).await;
        assert!(message.contains(says), "{value}: {message}");
    }
    // A q that does not parse is the same error with a price sort or without.
    for bad in ["name:x) OR (name:y", "name:\"pika", "x OR"] {
        let (s, plain) = ask(vec![("q", bad.into())]).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {plain}");
        let (s, sorted) = ask(vec![
            ("q", bad.into()),
            ("orderBy", "-tcgplayer.prices.holofoil.market".into()),
        ])
        .await;
        assert_eq!((s, &sorted), (StatusCode::BAD_REQUEST, &plain), "{bad}");
    }
    // A key after the price is named as the request wrote it; a variant no card is
    // served with is named with those they are.
    let message = refused(vec![(
        "orderBy",
        "tcgplayer.prices.holofoil.market,nme".into(),
    )])
    .await;
    assert!(
        message.starts_with("invalid `orderBy` value `tcgplayer.prices.holofoil.market,nme`"),
        "{message}"
    );
    let message = refused(vec![(
        "q",
        "tcgplayer.prices.reverse_holofoil.market:*".into(),
    )])
    .await;
    assert!(
        message.ends_with("the variants priced are `holofoil`, `normal`, `reverseHolofoil`"),
        "{message}"
    );
    // Sixty price terms fit in q as written (2,300 bytes), not as the engine reads them.
    let many: Vec<String> = (0..60)
        .map(|i| format!("tcgplayer.prices.holofoil.market:{i}"))
        .collect();
    let message = refused(vec![("q", many.join(" OR "))]).await;
    assert!(
        message.contains("as the engine reads it is past the 5120 bytes"),
        "{message}"
    );
    let (s, body) = ask(vec![("q", many[..20].join(" OR "))]).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    server.stop();
}
