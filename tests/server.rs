//! The HTTP service end to end: the real `cardex serve` binary on 127.0.0.1 (port chosen by
//! the OS), driven by a real HTTP client (reqwest), over the bundled `data/` snapshot.
//! Every endpoint and parameter, every error code and status, credentials, the rate limit
//! under a concurrent burst, credit accounting, usage lag, a restart after `kill -9`, the
//! OpenAPI document against the routes.

// They run the `cardex` binary, which needs the `cli` feature.
#![cfg(all(feature = "server", feature = "cli"))]

mod serving;

use std::process::Command;
use std::time::{Duration, Instant};

use serving::{
    add_key, cardex, cardex_with_input, import_team, revoke_key, scratch, sqlite, Server,
};

use reqwest::StatusCode;
use serde_json::Value;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap()
}

async fn get(
    client: &reqwest::Client,
    url: &str,
    creds: Option<(&str, &str)>,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = client.get(url);
    if let Some((key, team)) = creds {
        request = request.header("X-Api-Key", key).header("X-Team-ID", team);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body: Value = response.json().await.unwrap();
    (status, headers, body)
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_and_parameter_without_accounts() {
    let server = Server::start(&[]);
    assert!(server.log().contains("event=open_mode"), "{}", server.log());
    let c = client();
    let url = |p: &str| server.url(p);

    // Lists: envelope, paging, languages, order, select, include.
    let (s, h, body) = get(&c, &url("/pokemon/v1/cards?page_size=2"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "application/json");
    assert_eq!(
        (
            body["page"].as_u64(),
            body["page_size"].as_u64(),
            body["count"].as_u64()
        ),
        (Some(1), Some(2), Some(2))
    );
    let all = body["total_count"].as_u64().unwrap();
    let (_, _, en) = get(
        &c,
        &url("/pokemon/v1/en/cards?pageSize=100&select=language_code"),
        None,
    )
    .await;
    let (_, _, ja) = get(&c, &url("/pokemon/v1/ja/cards?select=language_code"), None).await;
    // A language on a catalog without languages is a 404; a page past the end is an empty
    // page with the true total.
    let (s, _, e) = get(&c, &url("/onepiece/v1/en/cards"), None).await;
    assert_eq!((s, error_code(&e)), (StatusCode::NOT_FOUND, "not_found"));
    let (s, _, past) = get(
        &c,
        &url("/pokemon/v1/cards?page=100000&page_size=100"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            past["data"].as_array().map(Vec::len),
            past["count"].as_u64(),
            past["total_count"].as_u64()
        ),
        (Some(0), Some(0), Some(all))
    );
    assert_eq!(
        en["total_count"].as_u64().unwrap() + ja["total_count"].as_u64().unwrap(),
        all
    );
    for card in ja["data"].as_array().unwrap() {
        assert_eq!(card["language_code"], "JA");
        assert_eq!(
            card.as_object().unwrap().len(),
            2,
            "select keeps id and language_code"
        );
    }
    let (_, _, page2) = get(
        &c,
        &url("/pokemon/v1/cards?page=2&page_size=2&select=id"),
        None,
    )
    .await;
    let (_, _, first4) = get(&c, &url("/pokemon/v1/cards?page_size=4&select=id"), None).await;
    assert_eq!(page2["data"][0], first4["data"][2]);
    let (_, _, ordered) = get(
        &c,
        &url("/pokemon/v1/cards?order_by=-hp,name&select=hp,name&q=supertype:pokemon"),
        None,
    )
    .await;
    let hps: Vec<f64> = ordered["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["hp"].as_str()?.parse().ok())
        .collect();
    assert!(
        hps.len() > 1,
        "too few cards with an hp to check the order: {hps:?}"
    );
    assert!(hps.windows(2).all(|w| w[0] >= w[1]), "{hps:?}");
    let (_, _, camel) = get(
        &c,
        &url("/pokemon/v1/cards?orderBy=-hp,name&select=hp,name&q=supertype:pokemon"),
        None,
    )
    .await;
    assert_eq!(camel, ordered);
    let (_, _, bare) = get(&c, &url("/onepiece/v1/cards/OP01-001"), None).await;
    let (_, _, priced) = get(&c, &url("/onepiece/v1/cards/OP01-001?include=prices"), None).await;
    let has_prices = |v: &Value| {
        v["data"]["variants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.get("prices").is_some())
    };
    assert!(!has_prices(&bare) && has_prices(&priced));

    // The spec's query, and the webhook follow-up search (q on expansion ids).
    let (s, _, sr) = get(
        &c,
        &url("/onepiece/v1/cards?q=printings:PRB01%20AND%20rarity_code:SR"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(sr["total_count"].as_u64().unwrap() > 0);
    for card in sr["data"].as_array().unwrap() {
        assert_eq!(card["rarity_code"], "SR");
    }

    // One resource; expansions; an expansion's cards.
    let (s, _, card) = get(&c, &url("/onepiece/v1/cards/OP01-001?select=name"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        card,
        serde_json::json!({"data": {"id": "OP01-001", "name": "Monkey.D.Luffy"}})
    );
    let (_, _, exps) = get(&c, &url("/pokemon/v1/expansions"), None).await;
    let (_, _, ja_exps) = get(&c, &url("/pokemon/v1/ja/expansions"), None).await;
    assert!(ja_exps["total_count"].as_u64().unwrap() < exps["total_count"].as_u64().unwrap());
    let exp_id = exps["data"][0]["id"].as_str().unwrap().to_string();
    let (s, _, exp) = get(&c, &url(&format!("/pokemon/v1/expansions/{exp_id}")), None).await;
    assert_eq!(
        (s, exp["data"]["id"].as_str()),
        (StatusCode::OK, Some(exp_id.as_str()))
    );
    let (s, _, exp_cards) = get(
        &c,
        &url(&format!(
            "/pokemon/v1/expansions/{exp_id}/cards?page_size=1"
        )),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(exp_cards["total_count"].as_u64().unwrap() > 0);

    // Errors: status, code, details.
    let (s, _, e) = get(&c, &url("/pokemon/v1/cards?q=name:(pikachu"), None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
    assert!(e["error"]["details"]["position"].is_u64() && e["error"]["details"]["column"].is_u64());
    // `/v2/v1/...` is the `/v1` surface of a catalog `v2` (none here): `/v1`'s error body.
    let (s, _, e) = get(&c, &url("/v2/v1/cards"), None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::NOT_FOUND, "not_found"),
        "{e}"
    );
    assert_eq!(e["error"]["status"], 404, "{e}");
    let (s, _, e) = get(&c, &url("/pokemon/v1/cards?colour=red"), None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "unknown_parameter")
    );
    // The parameters allowed are the ones served, `casing` included.
    let card_list = serde_json::json!([
        "q",
        "page",
        "page_size",
        "order_by",
        "select",
        "include",
        "casing"
    ]);
    assert_eq!(e["error"]["details"]["allowed"], card_list);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("`include`, `casing`"),
        "{e}"
    );
    let (s, _, e) = get(&c, &url("/onepiece/v1/cards/OP01-001?colour=red"), None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"]["details"]["allowed"],
        serde_json::json!(["select", "include", "casing"])
    );
    // Expansions have no optional parts: `include` is not offered (an expansion's cards
    // are cards, and take it).
    for (path, allowed) in [
        (
            "/onepiece/v1/expansions?colour=red",
            serde_json::json!(["q", "page", "page_size", "order_by", "select", "casing"]),
        ),
        (
            "/onepiece/v1/expansions/OP01?colour=red",
            serde_json::json!(["select", "casing"]),
        ),
        (
            "/onepiece/v1/expansions/OP01/cards?colour=red",
            card_list.clone(),
        ),
    ] {
        let (s, _, e) = get(&c, &url(path), None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(e["error"]["details"]["allowed"], allowed, "{path}");
        // `include` there is a parameter the endpoint does not take, as `colour` is.
        let include = path.replace("colour=red", "include=prices");
        let (s, _, e) = get(&c, &url(&include), None).await;
        let expansion = !include.contains("/cards");
        assert_eq!(
            (s, error_code(&e)),
            if expansion {
                (StatusCode::BAD_REQUEST, "unknown_parameter")
            } else {
                (StatusCode::OK, "")
            },
            "{include}: {e}"
        );
        if expansion {
            assert_eq!(e["error"]["details"]["allowed"], allowed, "{include}");
            // Whatever its value, and before the rest is read.
            for other in ["include=", "include=x&q=((", "include=x&select=nope"] {
                let (s, _, e) = get(&c, &url(&path.replace("colour=red", other)), None).await;
                assert_eq!(
                    (s, error_code(&e)),
                    (StatusCode::BAD_REQUEST, "unknown_parameter"),
                    "{other}: {e}"
                );
            }
        }
    }
    // A query-string value (or name) that is not UTF-8 once decoded is refused, as a path
    // is, rather than searched for with U+FFFD in it.
    for bad in ["q=name:%FF", "q%C3=x"] {
        let (s, _, e) = get(&c, &url(&format!("/pokemon/v1/cards?{bad}")), None).await;
        assert_eq!(
            (s, error_code(&e)),
            (StatusCode::BAD_REQUEST, "invalid_parameter"),
            "{bad}: {e}"
        );
        assert!(
            e["error"]["message"].as_str().unwrap().contains("UTF-8"),
            "{e}"
        );
    }
    // Names are snake_case or camelCase, exactly.
    let (s, _, e) = get(&c, &url("/pokemon/v1/cards?PAGE=2"), None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "unknown_parameter")
    );
    for bad in ["page=0", "page_size=101", "page=x", "page=1&page=2"] {
        let (s, _, e) = get(&c, &url(&format!("/pokemon/v1/cards?{bad}")), None).await;
        assert_eq!(
            (s, error_code(&e)),
            (StatusCode::BAD_REQUEST, "invalid_parameter"),
            "{bad}"
        );
    }
    for missing in [
        "/nope/v1/cards",
        "/pokemon/v1/xx/cards",
        "/pokemon/v1/cards/nope-1",
        "/pokemon/v1/expansions/nope",
        "/pokemon/v1/expansions/nope/cards",
        "/pokemon/v2/cards",
        "/",
        "/account/v1/usage",
        // Without accounts there is no usage endpoint, whatever the parameters.
        "/account/v1/usage?team=acme",
    ] {
        let (s, _, e) = get(&c, &url(missing), None).await;
        assert_eq!(
            (s, error_code(&e)),
            (StatusCode::NOT_FOUND, "not_found"),
            "{missing}"
        );
        assert_eq!(e["error"]["status"], 404);
        assert!(e["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    let response = c.post(url("/pokemon/v1/cards")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()["allow"], "GET, HEAD");
    let e: Value = response.json().await.unwrap();
    assert_eq!(error_code(&e), "method_not_allowed");
    let long = format!("/pokemon/v1/cards?q=name:{}", "a".repeat(9000));
    let (s, _, e) = get(&c, &url(&long), None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::URI_TOO_LONG, "uri_too_long")
    );
    let response = c
        .get(url("/healthz"))
        .header("X-Padding", "p".repeat(17 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );

    // gzip when asked, plain otherwise.
    let plain = reqwest::Client::builder().no_gzip().build().unwrap();
    let zipped = plain
        .get(url("/pokemon/v1/cards"))
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let unzipped = plain.get(url("/pokemon/v1/cards")).send().await.unwrap();
    assert!(unzipped.headers().get("content-encoding").is_none());
    let (_, _, decoded) = get(&c, &url("/pokemon/v1/cards"), None).await;
    assert_eq!(decoded["count"], all.min(100));
    // A `/v2` error in v2's shape is compressed too.
    let bad = url(&format!("/v2/cards?select={}", "y".repeat(400)));
    let zipped = plain
        .get(&bad)
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.status(), StatusCode::BAD_REQUEST);
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let (s, _, decoded) = get(&c, &bad, None).await;
    assert_eq!(
        (s, decoded["error"]["code"].as_u64()),
        (StatusCode::BAD_REQUEST, Some(400))
    );

    // healthz and the OpenAPI document (tests/openapi.rs checks it against the server).
    let (s, _, health) = get(&c, &url("/healthz"), None).await;
    assert_eq!((s, health["status"].as_str()), (StatusCode::OK, Some("ok")));
    let (s, _, doc) = get(&c, &url("/openapi.json"), None).await;
    assert_eq!(
        (s, doc["openapi"].as_str()),
        (StatusCode::OK, Some("3.1.0"))
    );
    // Every error code the server can send is in the document's enum.
    let codes = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
        ["enum"]
        .to_string();
    for code in [
        "invalid_query",
        "unknown_parameter",
        "invalid_parameter",
        "not_found",
        "method_not_allowed",
        "uri_too_long",
        "headers_too_large",
        "missing_credentials",
        "invalid_credentials",
        "rate_limited",
        "invalid_path",
        "timeout",
        "state_unavailable",
        "internal_error",
    ] {
        assert!(
            codes.contains(code),
            "{code} missing from the OpenAPI error codes"
        );
    }
    // Scrydex's `casing`: camel renders every key in camelCase, the envelope included.
    let keys = |v: &Value, out: &mut Vec<String>| {
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    for (k, v) in m {
                        out.push(k.clone());
                        walk(v, out);
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        walk(v, out)
    };
    let list = "/onepiece/v1/cards?q=printings:PRB01&include=prices,pop_reports";
    let (s, _, snake) = get(&c, &url(list), None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, camel) = get(&c, &url(&format!("{list}&casing=camel")), None).await;
    assert_eq!(s, StatusCode::OK);
    let (_, _, explicit) = get(&c, &url(&format!("{list}&casing=snake")), None).await;
    assert_eq!(explicit, snake);
    let (mut snake_keys, mut camel_keys) = (Vec::new(), Vec::new());
    keys(&snake, &mut snake_keys);
    keys(&camel, &mut camel_keys);
    assert_eq!(camel_keys.len(), snake_keys.len());
    assert!(snake_keys
        .iter()
        .any(|k| k == "total_count" || k == "pop_reports"));
    assert!(
        camel_keys.iter().all(|k| !k.contains('_')),
        "{camel_keys:?}"
    );
    for k in [
        "pageSize",
        "totalCount",
        "rarityCode",
        "expansionId",
        "popReports",
    ] {
        assert!(camel_keys.iter().any(|c| c == k), "{k}");
    }
    assert_eq!(camel["data"][0]["id"], snake["data"][0]["id"]);
    let (_, _, one) = get(&c, &url("/onepiece/v1/cards/OP01-013?casing=camel"), None).await;
    assert!(one["data"]["rarityCode"].is_string(), "{one}");
    for bad in ["casing=kebab", "casing=camel&casing=snake"] {
        let (s, _, e) = get(&c, &url(&format!("/onepiece/v1/cards?{bad}")), None).await;
        assert_eq!(
            (s, error_code(&e)),
            (StatusCode::BAD_REQUEST, "invalid_parameter"),
            "{bad}"
        );
        assert_eq!(e["error"]["details"]["parameter"], "casing");
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_checked_and_never_logged() {
    let dir = scratch("auth");
    let db = dir.join("state.db");
    let state = sqlite(&db);
    let acme = add_key(&state, "acme", 1000);
    let globex = add_key(&state, "globex", 1000);
    assert!(!std::fs::read(&db)
        .unwrap()
        .windows(acme.len() - 4)
        .any(|w| w == &acme.as_bytes()[4..]));
    let server = Server::start(&["--state", &state]);
    let c = client();
    let url = server.url("/pokemon/v1/cards?page_size=1");
    let (s, _, _) = get(&c, &url, Some((&acme, "acme"))).await;
    assert_eq!(s, StatusCode::OK);
    for (creds, code) in [
        (None, "missing_credentials"),
        (Some(("", "acme")), "missing_credentials"),
        (Some((acme.as_str(), "")), "missing_credentials"),
        (Some((acme.as_str(), "globex")), "invalid_credentials"),
        (Some((globex.as_str(), "acme")), "invalid_credentials"),
        (Some(("cdx_wrong", "acme")), "invalid_credentials"),
        (Some((acme.as_str(), "nobody")), "invalid_credentials"),
    ] {
        let (s, _, e) = get(&c, &url, creds).await;
        assert_eq!(
            (s, error_code(&e)),
            (StatusCode::UNAUTHORIZED, code),
            "{creds:?}"
        );
    }
    // A credential sent twice is refused whichever comes first, on /v1 and /v2.
    for (first, second) in [(acme.as_str(), "cdx_wrong"), ("cdx_wrong", acme.as_str())] {
        for path in ["/pokemon/v1/cards?page_size=1", "/v2/cards?pageSize=1"] {
            let response = c
                .get(server.url(path))
                .header("X-Api-Key", first)
                .header("X-Api-Key", second)
                .header("X-Team-ID", "acme")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
            // Every 401 says how to authenticate (RFC 9110, 11.6.1).
            assert_eq!(
                response.headers()["www-authenticate"],
                r#"ApiKey realm="cardex", header="X-Api-Key""#,
                "{path}"
            );
            let body = response.text().await.unwrap();
            assert!(body.contains("X-Api-Key is sent more than once"), "{body}");
        }
    }
    // On /v2 a request that names its team is checked as on /v1: without its key, 401 (a
    // request with neither is a keyless client's).
    let response = c
        .get(server.url("/v2/cards?pageSize=1"))
        .header("X-Team-ID", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body = response.text().await.unwrap();
    assert!(
        body.contains(
            "X-Api-Key missing or empty: a request that names its team needs its key too"
        ),
        "{body}"
    );
    let keyless = c
        .get(server.url("/v2/cards?pageSize=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(keyless.status(), StatusCode::OK);
    // A path that is not UTF-8 once decoded is refused as such before credentials, as
    // without accounts; and a POST is a 405 without credentials either.
    let bad_path = server.url("/pokemon/v1/cards/%FF");
    let (s, _, e) = get(&c, &bad_path, None).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "invalid_path")
    );
    let posted = c.post(&url).send().await.unwrap();
    assert_eq!(posted.status(), StatusCode::METHOD_NOT_ALLOWED);
    // Only the key header: 401 too (the Scrydex integrators' surprise), saying which is missing.
    let response = c.get(&url).header("X-Api-Key", &acme).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let e: Value = response.json().await.unwrap();
    assert_eq!(
        e["error"]["details"]["missing"],
        serde_json::json!(["X-Team-ID"])
    );
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("X-Team-ID missing"));
    // The usage endpoint takes no parameters.
    let (s, _, e) = get(
        &c,
        &server.url("/account/v1/usage?team=globex"),
        Some((&acme, "acme")),
    )
    .await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "unknown_parameter")
    );
    // Unknown parameters on single resources, too; HEAD is served like GET, without a body.
    let (s, _, e) = get(
        &c,
        &server.url("/onepiece/v1/cards/OP01-001?q=x"),
        Some((&acme, "acme")),
    )
    .await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::BAD_REQUEST, "unknown_parameter")
    );
    let head = c
        .head(&url)
        .header("X-Api-Key", &acme)
        .header("X-Team-ID", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.bytes().await.unwrap().len(), 0);
    // The usage endpoint needs credentials too; health and the document do not.
    let (s, _, _) = get(&c, &server.url("/account/v1/usage"), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _, _) = get(&c, &server.url("/healthz"), None).await;
    assert_eq!(s, StatusCode::OK);
    let log = server.stop();
    assert!(log.contains("status=401"), "{log}");
    // One line per request, with the endpoint, the team and the credits charged.
    assert!(
        log.contains(
            "method=GET path=/pokemon/v1/cards endpoint=cards status=200 team=acme credits=1 ms="
        ),
        "{log}"
    );
    // A HEAD is charged as its GET (contract §4).
    assert!(
        log.contains(
            "method=HEAD path=/pokemon/v1/cards endpoint=cards status=200 team=acme credits=1 ms="
        ),
        "{log}"
    );
    for key in [&acme, &globex] {
        assert!(!log.contains(&key[4..]), "a key reached the log");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Polls the usage endpoint until `used_credits` reaches `expected` (or a deadline),
/// waiting out the rate limit (the usage endpoint counts against it too).
async fn usage_when(
    c: &reqwest::Client,
    server: &Server,
    creds: (&str, &str),
    expected: u64,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, _, usage) = get(c, &server.url("/account/v1/usage"), Some(creds)).await;
        if s == StatusCode::TOO_MANY_REQUESTS {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        assert_eq!(s, StatusCode::OK);
        if usage["used_credits"] == expected || Instant::now() > deadline {
            return usage;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_lets_exactly_100_through_and_charges_exactly_those() {
    let dir = scratch("burst");
    let state = sqlite(&dir.join("state.db"));
    let acme = add_key(&state, "acme", 1_000_000);
    let globex = add_key(&state, "globex", 1_000_000);
    let server = Server::start(&[
        "--state",
        &state,
        "--usage-refresh",
        "1",
        "--log-format",
        "json",
    ]);
    let c = client();
    let url = server.url("/pokemon/v1/cards?page_size=10&q=supertype:pokemon");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let (c, url, key) = (c.clone(), url.clone(), acme.clone());
        tasks.push(tokio::spawn(async move {
            let response = c
                .get(&url)
                .header("X-Api-Key", key)
                .header("X-Team-ID", "acme")
                .send()
                .await
                .unwrap();
            let status = response.status();
            let retry = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
            let body: Value = response.json().await.unwrap();
            (status, retry, body)
        }));
    }
    let mut ok = 0u64;
    let mut limited = 0u64;
    for task in tasks {
        let (status, retry, body) = task.await.unwrap();
        match status {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                assert!(retry.is_some_and(|r| (1..=1).contains(&r)), "{retry:?}");
                assert_eq!(error_code(&body), "rate_limited");
                // The body says the limit, its window and the header's wait.
                let details = &body["error"]["details"];
                assert_eq!(
                    (&details["limit"], &details["window_seconds"]),
                    (&serde_json::json!(100), &serde_json::json!(1.0)),
                    "{body}"
                );
                assert_eq!(details["retry_after"].as_u64(), retry, "{body}");
            }
            other => panic!("unexpected {other}"),
        }
    }
    let took = started.elapsed();
    assert_eq!(ok + limited, 1000);
    if took < Duration::from_secs(1) {
        assert_eq!(ok, 100, "a burst inside one second");
    } else {
        // A slow machine spread the burst over more than one window.
        let windows = took.as_secs() + 1;
        assert!((100..=100 * windows).contains(&ok), "{ok} in {took:?}");
    }
    // Another team is not limited by acme's burst.
    let (s, _, body) = get(&c, &url, Some((&globex, "globex"))).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // Exactly the successful requests were charged; the refused ones cost nothing.
    let usage = usage_when(&c, &server, (&acme, "acme"), ok).await;
    assert_eq!(usage["used_credits"], ok);
    assert_eq!(usage["remaining_credits"], 1_000_000 - ok);
    let usage = usage_when(&c, &server, (&globex, "globex"), 1).await;
    assert_eq!(usage["used_credits"], 1);
    // A /v2 request with the key alone: its line and span name the key's team.
    let v2 = c
        .get(server.url("/v2/cards?pageSize=1"))
        .header("X-Api-Key", &globex)
        .send()
        .await
        .unwrap();
    assert_eq!(v2.status(), StatusCode::OK);
    // --log-format json: every line an object; the request lines agree with the answers.
    let log = server.stop();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let requests = |status: u64, credits: u64| {
        lines
            .iter()
            .filter(|l| {
                l["event"] == "request"
                    && l["team"] == "acme"
                    && l["endpoint"] == "cards"
                    && l["status"] == status
                    && l["credits"] == credits
            })
            .count() as u64
    };
    assert_eq!((requests(200, 1), requests(429, 0)), (ok, limited));
    // The request span carries the same: team, endpoint, status, credits and latency.
    let spans = lines
        .iter()
        .filter(|l| {
            let span = &l["span"];
            l["event"] == "request"
                && span["name"] == "request"
                && span["team"] == "acme"
                && span["endpoint"] == "cards"
                && span["status"] == 200
                && span["credits"] == 1
                && span["ms"]
                    .as_str()
                    .is_some_and(|ms| ms.parse::<f64>().is_ok())
        })
        .count() as u64;
    assert_eq!(spans, ok);
    let v2_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "request" && l["endpoint"] == "v2_cards")
        .collect();
    assert_eq!(v2_lines.len(), 1, "{log}");
    assert_eq!(
        (&v2_lines[0]["team"], &v2_lines[0]["span"]["team"]),
        (&serde_json::json!("globex"), &serde_json::json!("globex")),
        "{log}"
    );
    // Start-up a person can follow: what was loaded, then a ready line with the card and
    // catalog counts, the snapshot, the state engine and its schema version.
    let ready = lines
        .iter()
        .find(|l| l["event"] == "ready")
        .expect("a ready line");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("55 cards in 3 catalogs from ")
            && message.contains("(SQLite, schema version 3); 2 teams"),
        "{ready}"
    );
    let loading: Vec<&Value> = lines.iter().filter(|l| l["event"] == "loading").collect();
    assert!(!loading.is_empty(), "{log}");
    assert!(
        lines.iter().position(|l| l["event"] == "loading")
            < lines.iter().position(|l| l["event"] == "ready")
    );
    assert!(!log.contains(&acme[4..]), "a key reached the log");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_lags_overage_is_served_and_kill_9_loses_no_credit() {
    let dir = scratch("ledger");
    let state = sqlite(&dir.join("state.db"));
    let acme = add_key(&state, "acme", 3);
    let args = ["--state", &state, "--usage-refresh", "3600"];
    let mut server = Server::start(&args);
    let c = client();
    let creds = (acme.as_str(), "acme");
    // Five requests against a plan of three: all served (overage), usage still says 0
    // because figures refresh only hourly here.
    for path in [
        "/pokemon/v1/cards",
        "/pokemon/v1/en/cards",
        "/onepiece/v1/cards/OP01-001",
        "/pokemon/v1/expansions",
        "/pokemon/v1/ja/expansions",
    ] {
        let (s, _, _) = get(&c, &server.url(path), Some(creds)).await;
        assert_eq!(s, StatusCode::OK, "{path}");
    }
    // Errors cost nothing.
    let (s, _, _) = get(&c, &server.url("/pokemon/v1/cards?q=("), Some(creds)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, lagging) = get(&c, &server.url("/account/v1/usage"), Some(creds)).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        lagging["used_credits"], 0,
        "usage lags until the next refresh"
    );
    assert_eq!(lagging["total_credits"], 3);
    assert_eq!(lagging["overage_credit_rate"], 0.002);
    // kill -9: no graceful shutdown, no final sync.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);
    // Every answered request's charge is in the state...
    let (code, list, err) = cardex(&["accounts", "list", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    assert!(list.contains("acme\t3\t0.002\t1\t5\n"), "{list}");
    // ...and the usage board, taken at the first start, is not taken again before its
    // hour is up, however often the server restarts (replicas agree on one board).
    server = Server::start(&args);
    let (_, _, after) = get(&c, &server.url("/account/v1/usage"), Some(creds)).await;
    assert_eq!(after["used_credits"], 0, "{after}");
    assert_eq!(after["updated_at"], lagging["updated_at"]);
    server.stop();
    // With a short interval, the next start takes it: 5 used, 2 past the plan.
    let args = ["--state", state.as_str(), "--usage-refresh", "1"];
    server = Server::start(&args);
    let after = usage_when(&c, &server, creds, 5).await;
    assert_eq!(after["used_credits"], 5);
    assert_eq!(after["remaining_credits"], 0);
    assert_eq!(after["overage_credits"], 2);
    assert!(after["updated_at"].as_str().unwrap().ends_with('Z'));
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sends `text` on a raw connection and reads until the server closes it; `None` when
/// the read timed out instead.
fn raw_exchange(stream: &mut std::net::TcpStream, text: &str) -> Option<String> {
    use std::io::{Read, Write};
    stream.write_all(text.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&answer).into_owned())
        }
        Err(_) => None,
    }
}

/// Reads one answer with a `content-length` from `stream`: its head and its body.
fn read_answer(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    use std::io::Read;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("an answer head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .unwrap_or_else(|| panic!("no content-length: {head}"))
        .parse()
        .unwrap();
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    (head, body)
}

/// An HTTP/1.0 client that keeps its connection alive (`ab -k`) and accepts gzip gets
/// answers with their length, uncompressed, and the connection stays open for the next
/// request; one that does not keep it gets gzip, ended by the close.
#[test]
fn http_1_0_keep_alive_answers_carry_their_length() {
    use std::io::Write;
    let server = Server::start(&["--open"]);
    let addr = host_port(&server);
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    let request = "GET /pokemon/v1/cards?page_size=3 HTTP/1.0\r\nHost: x\r\n\
                   Connection: keep-alive\r\nAccept-Encoding: gzip\r\n\r\n";
    for _ in 0..2 {
        stream.write_all(request.as_bytes()).unwrap();
        let (head, body) = read_answer(&mut stream);
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        assert!(head.contains("connection: keep-alive"), "{head}");
        assert!(!head.contains("content-encoding"), "{head}");
        let page: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(page["count"], 3, "{page}");
    }
    let mut closing = std::net::TcpStream::connect(&addr).unwrap();
    let answer = raw_exchange(
        &mut closing,
        "GET /pokemon/v1/cards?page_size=3 HTTP/1.0\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n",
    )
    .unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.contains("content-encoding: gzip"), "{answer}");
    server.stop();
}

fn host_port(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

#[test]
fn slow_request_heads_are_cut_off_and_hyper_rejections_keep_their_status() {
    let server = Server::start(&["--header-timeout", "300"]);
    let addr = host_port(&server);
    // A client that starts a request head and never finishes it is disconnected once
    // the header timeout passes, without an answer.
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    let started = Instant::now();
    let answer = raw_exchange(&mut slow, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .expect("the server closes the connection");
    assert_eq!(answer, "", "no answer to an unfinished head");
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    // A client that finishes in time is answered on a raw connection too.
    let mut quick = std::net::TcpStream::connect(&addr).unwrap();
    let answer = raw_exchange(
        &mut quick,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
    // More than 100 header fields: hyper refuses the head before any routing, with 431
    // and no body (SERVER.md); the server goes on serving.
    let mut many = std::net::TcpStream::connect(&addr).unwrap();
    let mut head = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..120 {
        head.push_str(&format!("X-Filler-{i}: 1\r\n"));
    }
    head.push_str("\r\n");
    let answer = raw_exchange(&mut many, &head).unwrap();
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    // A request line that is not HTTP: 400.
    let mut garbage = std::net::TcpStream::connect(&addr).unwrap();
    let answer = raw_exchange(&mut garbage, "HELLO THERE\r\n\r\n").unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let mut after = std::net::TcpStream::connect(&addr).unwrap();
    let answer = raw_exchange(
        &mut after,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server.stop();
}

#[test]
fn shutdown_finishes_a_request_in_flight_and_keeps_its_charge() {
    let dir = scratch("shutdown");
    let state = sqlite(&dir.join("state.db"));
    let acme = add_key(&state, "acme", 10);
    let args = ["--state", state.as_str(), "--usage-refresh", "1"];
    let server = Server::start(&args);
    let addr = host_port(&server);
    // A request whose head is half sent when SIGTERM comes...
    let mut in_flight = std::net::TcpStream::connect(&addr).unwrap();
    {
        use std::io::Write;
        in_flight
            .write_all(b"GET /pokemon/v1/cards?page_size=3 HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(300));
    // ...the server no longer accepts new connections but waits for this one...
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the listener closes at shutdown"
    );
    // ...which is answered in full once its head arrives, and told the connection closes.
    let answer = raw_exchange(
        &mut in_flight,
        &format!("X-Api-Key: {acme}\r\nX-Team-ID: acme\r\n\r\n"),
    )
    .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["data"].as_array().unwrap().len(), 3);
    let log = server.stop();
    assert!(
        log.contains("message=\"1 in-flight connections finished\""),
        "{log}"
    );
    // The charge of the request answered during shutdown is in the state.
    let (code, list, err) = cardex(&["accounts", "list", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    assert!(list.contains("acme\t10\t0.002\t1\t1\n"), "{list}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An address without a port is refused before the snapshot loads (here a folder that
/// is not there), and a webhooks file that cannot be read is named as one.
#[test]
fn a_bad_address_or_webhooks_file_is_named() {
    for addr in [
        "garbage",
        "127.0.0.1",
        ":8080",
        "127.0.0.1:99999",
        "::1",
        "fe80::1",
    ] {
        let (code, _, err) = cardex(&["serve", "--data", "/nonexistent", "--addr", addr]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("cannot listen on {addr}: --addr takes HOST:PORT")),
            "{err}"
        );
    }
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let (code, _, err) = cardex(&[
        "serve",
        "--data",
        data,
        "--open",
        "--webhooks",
        "/nonexistent/hooks.json",
        "--addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the webhooks file /nonexistent/hooks.json: No such file"),
        "{err}"
    );
    // A private CA is for webhooks: without them it is a usage error.
    let (code, _, err) = cardex(&[
        "serve",
        "--data",
        data,
        "--webhook-ca",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--webhooks <FILE>"), "{err}");
}

/// A key that cannot be shown (a pipe whose reader is gone, a full device) is revoked
/// again, and the command fails: no key is left stored that no one holds.
#[test]
fn a_key_that_cannot_be_shown_is_revoked_again() {
    let dir = scratch("accounts-unshown");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let gone_reader = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        std::process::Stdio::from(writer)
    };
    let full = || {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        std::process::Stdio::from(file)
    };
    for (team, stdout) in [("t1", gone_reader()), ("t2", full())] {
        let o = Command::new(env!("CARGO_BIN_EXE_cardex"))
            .args(["accounts", "add-key", "--state", &state, "--team", team])
            .stdout(stdout)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{team}: {err}");
        assert!(
            err.contains("cannot write the key") && err.contains("it was revoked again"),
            "{err}"
        );
    }
    // To /dev/null, or closed (which a Rust program finds as /dev/null), no key is made.
    for (team, closed) in [("t3", false), ("t4", true)] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cardex"));
        command.args(["accounts", "add-key", "--state", &state, "--team", team]);
        let o = if closed {
            Command::new("sh")
                .args(["-c", "exec \"$0\" \"$@\" >&-", env!("CARGO_BIN_EXE_cardex")])
                .args(["accounts", "add-key", "--state", &state, "--team", team])
                .output()
                .unwrap()
        } else {
            command
                .stdout(std::process::Stdio::null())
                .output()
                .unwrap()
        };
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{team}: {err}");
        assert!(err.contains("shown to no one; nothing was added"), "{err}");
    }
    let (code, list, err) = cardex(&["accounts", "list", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    for team in ["t3", "t4"] {
        assert!(
            !list.contains(&format!("{team}\t")),
            "{team} was added: {list}"
        );
    }
    for team in ["t1", "t2"] {
        let row = list
            .lines()
            .find(|l| l.starts_with(&format!("{team}\t")))
            .unwrap_or_else(|| panic!("{list}"));
        assert_eq!(row.split('\t').nth(3), Some("0"), "no key left: {row}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A mistyped state or snapshot folder is an error, not a new empty state no server
/// reads; the default state of `--data .` is named after the folder `.` is.
#[test]
fn accounts_commands_refuse_a_state_that_is_not_there() {
    let dir = scratch("accounts-missing");
    let missing = format!("sqlite:{}", dir.join("typo.db").display());
    for args in [
        vec!["accounts", "list", "--state", &missing],
        vec![
            "accounts",
            "revoke-key",
            "--state",
            &missing,
            "--sha256",
            &"a".repeat(64),
        ],
    ] {
        let (code, _, err) = cardex(&args);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("no state at sqlite:"), "{err}");
        assert!(!dir.join("typo.db").exists());
    }
    let nowhere = dir.join("snpa");
    let (code, _, err) = cardex(&[
        "accounts",
        "add-key",
        "--data",
        nowhere.to_str().unwrap(),
        "--team",
        "acme",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no snapshot folder at"), "{err}");
    assert!(!dir.join("snpa.state.db").exists());
    // `--data .` inside the folder `snap`: its state is `snap.state.db` beside it.
    std::fs::create_dir_all(dir.join("snap")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(["accounts", "add-key", "--data", ".", "--team", "dot"])
        .current_dir(dir.join("snap"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("snap.state.db").exists());
    assert!(!dir.join("data.state.db").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_state_keeps_accounts_and_every_charge_across_kill_9() {
    let dir = scratch("sqlite-state");
    let db = dir.join("state.db");
    let state = format!("sqlite:{}", db.display());
    // A key made against the state, printed once, stored as a hash.
    let (code, key, err) = cardex(&["accounts", "add-key", "--state", &state, "--team", "acme"]);
    assert_eq!(code, Some(0), "{err}");
    let key = key.trim().to_string();
    assert!(key.starts_with("cdx_"));
    assert!(!std::fs::read(&db)
        .unwrap()
        .windows(key.len())
        .any(|w| w == key.as_bytes()));
    // An accounts file imports into it: globex's key works too.
    let globex = import_team(&state, &dir, "globex");
    let args = ["--state", state.as_str(), "--usage-refresh", "1"];
    let server = Server::start(&args);
    // One server per SQLite state: a second is refused at start (exit 2), naming it.
    let (code, _, err) = cardex(&["serve", "--state", &state, "--addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("another cardex serve is running on this state"),
        "{err}"
    );
    let c = client();
    let url = server.url("/pokemon/v1/cards?page_size=1");
    for _ in 0..3 {
        let (s, _, _) = get(&c, &url, Some((&key, "acme"))).await;
        assert_eq!(s, StatusCode::OK);
    }
    let (s, _, _) = get(&c, &url, Some((&globex, "globex"))).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, e) = get(&c, &url, Some((&globex, "acme"))).await;
    assert_eq!(
        (s, error_code(&e)),
        (StatusCode::UNAUTHORIZED, "invalid_credentials")
    );
    // A key added while the server runs, for a new team, works within a second or two,
    // without a restart; the teams known before keep their numbers and their keys (the
    // new one sorts first, and acme's usage below is still acme's).
    let aardvark = add_key(&state, "aardvark", 10);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, _, _) = get(&c, &url, Some((&aardvark, "aardvark"))).await;
        if s == StatusCode::OK {
            break;
        }
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(Instant::now() < deadline, "the new key was not picked up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(server
        .log()
        .contains("keys or teams changed in the state: 3 teams now"));
    let (s, _, _) = get(&c, &url, Some((&key, "acme"))).await;
    assert_eq!(s, StatusCode::OK);
    // A revoked key stops working within a second or two, without a restart; revoking it
    // again, or a hash that is no key's, is an error (exit 2) that changes nothing.
    revoke_key(&state, &aardvark);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, _, e) = get(&c, &url, Some((&aardvark, "aardvark"))).await;
        if s == StatusCode::UNAUTHORIZED {
            assert_eq!(error_code(&e), "invalid_credentials");
            break;
        }
        assert_eq!(s, StatusCode::OK);
        assert!(Instant::now() < deadline, "the revoked key still works");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, _, err) = cardex_with_input(
        &["accounts", "revoke-key", "--state", &state],
        &format!("{aardvark}\n"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no key in") && err.contains("nothing was revoked"),
        "{err}"
    );
    let (code, _, err) = cardex(&[
        "accounts",
        "revoke-key",
        "--state",
        &state,
        "--sha256",
        "not-a-hash",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("64 hex digits"), "{err}");
    let (code, _, err) = cardex_with_input(&["accounts", "revoke-key", "--state", &state], "\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("standard input"), "{err}");
    let (s, _, _) = get(&c, &url, Some((&key, "acme"))).await;
    assert_eq!(s, StatusCode::OK);
    // kill -9 right after the answers: every answered request's charge is kept (acme's
    // five answers).
    drop(server);
    let server = Server::start(&args);
    let usage = usage_when(&c, &server, (&key, "acme"), 5).await;
    assert_eq!(usage["used_credits"], 5);
    assert_eq!(usage["total_credits"], 50_000);
    let usage = usage_when(&c, &server, (&globex, "globex"), 1).await;
    assert_eq!(
        (
            usage["used_credits"].as_u64(),
            usage["total_credits"].as_u64()
        ),
        (Some(1), Some(500))
    );
    server.stop();
    // A bad --state is a usage error (exit 2) that says what the forms are; a state from a
    // newer cardex is refused at start, naming it.
    let (code, _, err) = cardex(&["serve", "--state", "state.db"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the forms are `sqlite:PATH`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SQLite: a server killed with SIGKILL in the middle of a load from eight teams at once
/// (so that charges are group-committed several at a time) has charged every request it
/// answered; the only charges without an answer are of requests the kill cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_state_kill_9_mid_load_loses_no_charge() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let dir = scratch("sqlite-kill-mid-load");
    let state = sqlite(&dir.join("state.db"));
    let teams: Vec<(String, String)> = (0..8)
        .map(|i| {
            let team = format!("team{i}");
            let key = add_key(&state, &team, 1_000_000);
            (team, key)
        })
        .collect();
    let mut server = Server::start(&["--state", &state]);
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, cut_off) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::new();
    for (team, key) in teams {
        let url = server.url("/pokemon/v1/cards?page_size=3");
        let (stop, answered, cut_off) = (stop.clone(), answered.clone(), cut_off.clone());
        tasks.push(tokio::spawn(async move {
            let c = client();
            while !stop.load(Ordering::Acquire) {
                match c
                    .get(&url)
                    .header("X-Api-Key", &key)
                    .header("X-Team-ID", &team)
                    .send()
                    .await
                {
                    Ok(r) if r.status() == StatusCode::OK => {
                        // Answered only once the whole body has arrived.
                        if r.bytes().await.is_ok() {
                            answered.fetch_add(1, Ordering::AcqRel);
                        } else {
                            cut_off.fetch_add(1, Ordering::AcqRel);
                            return;
                        }
                    }
                    Ok(r) => assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS),
                    Err(_) => {
                        cut_off.fetch_add(1, Ordering::AcqRel);
                        return;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    stop.store(true, Ordering::Release);
    for task in tasks {
        task.await.unwrap();
    }
    let (answered, cut_off) = (
        answered.load(Ordering::Acquire),
        cut_off.load(Ordering::Acquire),
    );
    assert!(answered > 100, "{answered} answered");
    let (code, list, err) = cardex(&["accounts", "list", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    let charged: u64 = list
        .lines()
        .skip(1)
        .map(|l| l.rsplit('\t').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(
        (answered..=answered + cut_off).contains(&charged),
        "{charged} charged, {answered} answered, {cut_off} cut off"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An address in use stops the start before a state is made: no new state file is left.
#[test]
fn an_address_in_use_stops_the_start_before_a_state_is_made() {
    let dir = scratch("address-in-use");
    let db = dir.join("state.db");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args([
            "serve",
            "--data",
            concat!(env!("CARGO_MANIFEST_DIR"), "/data"),
        ])
        .args([
            "--state",
            &format!("sqlite:{}", db.display()),
            "--addr",
            &addr,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&addr) && err.contains("in use"), "{err}");
    assert!(!db.exists(), "a state was made: {err}");
    drop(taken);
}

/// A state file the server cannot write stops the start (exit 2), naming the problem, and
/// is left as it was. As root every file is writable, so there the server runs without the
/// capability that overrides file permissions (`setpriv` drops it from the bounding set):
/// still root, so it reads the checkout wherever it is.
#[test]
fn a_read_only_sqlite_state_stops_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("read-only-state");
    let db = dir.join("state.db");
    let state = sqlite(&db);
    add_key(&state, "acme", 10);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let command = || {
        if root {
            let mut c = Command::new("setpriv");
            c.args(["--bounding-set=-dac_override,-dac_read_search", "--"]);
            c.arg(env!("CARGO_BIN_EXE_cardex"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_cardex"))
        }
    };
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let said = format!(
        "{state}: the database cannot be written (the file, or its folder, where SQLite keeps its `-wal` and `-shm` files, is read-only); cardex keeps accounts, credits and webhook events there: make both writable"
    );
    let out = command()
        .args(["serve", "--data", data, "--state", &state])
        .args(["--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&said), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // A writable file in a folder SQLite cannot write its `-wal` and `-shm` files in.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = command()
        .args(["accounts", "list", "--state", &state])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&said), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An open server without webhooks keeps no state: a `--state` given it would be ignored,
/// so it stops the start (exit 2), before the state is opened.
#[test]
fn an_open_server_without_webhooks_refuses_a_state() {
    let (code, _, err) = cardex(&[
        "serve",
        "--open",
        "--state",
        "sqlite:/nonexistent/folder/x.db",
        "--addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--state: an open server (--open) keeps no state"),
        "{err}"
    );
}

/// A signature header that is not an HTTP header name stops the start (exit 2), naming it.
#[test]
fn a_bad_signature_header_name_stops_the_start() {
    let (code, _, err) = cardex(&[
        "serve",
        "--open",
        "--addr",
        "127.0.0.1:0",
        "--signature-header",
        "X Bad:Header",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`X Bad:Header` is not an HTTP header name"),
        "{err}"
    );
    // A header the delivery or its connection sets: the signature would be lost.
    for name in [
        "Content-Length",
        "content-type",
        "Host",
        "Transfer-Encoding",
    ] {
        let (code, _, err) = cardex(&[
            "serve",
            "--open",
            "--addr",
            "127.0.0.1:0",
            "--signature-header",
            name,
        ]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("`{name}` is a header the webhook delivery")),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_store_serves_the_same_bytes() {
    let plain = Server::start(&[]);
    let compressed = Server::start(&["--store", "compressed"]);
    assert!(
        compressed.log().contains("(compressed store)"),
        "{}",
        compressed.log()
    );
    assert!(
        compressed.log().contains("; compressing"),
        "{}",
        compressed.log()
    );
    assert!(!plain.log().contains("; compressing"), "{}", plain.log());
    assert!(plain.log().contains("(plain store)"), "{}", plain.log());
    let client = client();
    for path in [
        "/pokemon/v1/cards",
        "/pokemon/v1/cards?q=attacks.name:%22fire%20spin%22%20OR%20hp%3E=100&include=prices,pop_reports",
        "/pokemon/v1/cards?q=name:char*&select=name,hp&order_by=-hp",
        "/pokemon/v1/ja/cards?q=name:ex",
        "/onepiece/v1/cards?q=printings:PRB01&order_by=-variants.prices.market",
        "/onepiece/v1/cards/OP01-001?include=prices",
        "/onepiece/v1/expansions",
        "/onepiece/v1/expansions/OP01/cards?page_size=3&page=2",
        "/lorcana/v1/cards?q=^rarity:Legendary",
        "/v2/cards?q=name:charizard",
        "/v2/cards?q=supertype:pokemon&select=id,name,set&pageSize=5&page=2",
        "/v2/cards/ddw-1?select=id,name,set,tcgplayer",
        "/v2/sets",
        "/v2/sets/ddw",
    ] {
        let body = |server: &Server| {
            let request = client.get(server.url(path));
            async move {
                let response = request.send().await.unwrap();
                (response.status(), response.text().await.unwrap())
            }
        };
        let (a, b) = (body(&plain).await, body(&compressed).await);
        assert_eq!(a.0, StatusCode::OK, "{path}: {}", a.1);
        assert_eq!(a, b, "{path}");
    }
    // A record that is not there is a 404 before a bad `select` is looked at, on both.
    for server in [&plain, &compressed] {
        let response = client
            .get(server.url("/v2/cards/nope?select=bogus"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    plain.stop();
    compressed.stop();
}

#[test]
fn an_unknown_store_kind_stops_the_start() {
    let (code, _, err) = cardex(&["serve", "--open", "--store", "zipped"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown store kind \"zipped\": expected `plain` or `compressed`"),
        "{err}"
    );
}

/// Flags whose value would mean nothing, lose data or wrap: each refused (exit 2, saying
/// which and why), before anything is written.
#[test]
fn meaningless_or_lossy_flag_values_are_refused() {
    let dir = scratch("lossy-flags");
    let memory = "sqlite::memory:".to_string();
    let uri = format!("sqlite:file:{}?mode=memory", dir.join("m.db").display());
    let spool = dir.join("spool.db");
    let state = format!("sqlite:{}", dir.join("s.db").display());
    for (args, says) in [
        (
            vec!["serve", "--addr", "127.0.0.1:0", "--header-timeout", "0"],
            "--header-timeout",
        ),
        (
            vec!["serve", "--addr", "127.0.0.1:0", "--request-timeout", "0"],
            "--request-timeout",
        ),
        (
            vec!["serve", "--addr", "127.0.0.1:0", "--state", &memory],
            "`:memory:` (which keeps nothing)",
        ),
        (
            vec!["accounts", "add-key", "--state", &memory, "--team", "t"],
            "`:memory:` (which keeps nothing)",
        ),
        (vec!["accounts", "list", "--state", &uri], "URI forms"),
        (
            vec![
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--state",
                &state,
                "--spool",
                spool.to_str().unwrap(),
            ],
            "--spool: it is where PostgreSQL state spools charges",
        ),
        (
            vec![
                "accounts",
                "add-key",
                "--state",
                &state,
                "--team",
                "t",
                "--credits",
                "9223372036854775808",
            ],
            "--total-credits",
        ),
    ] {
        let (code, out, err) = cardex(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Browsers' pages: by default any origin may call (the preflight answered without a key
/// and never charged, every answer, errors included, carrying `Access-Control-Allow-Origin`
/// and exposing `Retry-After`); `--cors-origins` lists origins, or `none` turns CORS off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_of_allowed_origins_get_cors_headers() {
    let dir = scratch("cors");
    let state = sqlite(&dir.join("state.db"));
    let key = add_key(&state, "acme", 1000);
    let c = client();
    let preflight = |url: String, origin: &'static str| {
        c.request(reqwest::Method::OPTIONS, url)
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "x-api-key,x-team-id")
            .send()
    };
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let server = Server::start(&["--state", &state]);
    let r = preflight(server.url("/pokemon/v1/cards"), "http://localhost:3000")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some("*")
    );
    assert_eq!(
        header(&r, "access-control-allow-headers").as_deref(),
        Some("x-api-key,x-team-id")
    );
    assert!(header(&r, "access-control-allow-methods")
        .unwrap()
        .contains("GET"));
    for (creds, status) in [(Some((key.as_str(), "acme")), 200), (None, 401)] {
        let mut request = c
            .get(server.url("/pokemon/v1/cards?page_size=1"))
            .header("origin", "https://cards.example");
        if let Some((key, team)) = creds {
            request = request.header("x-api-key", key).header("x-team-id", team);
        }
        let r = request.send().await.unwrap();
        assert_eq!(r.status().as_u16(), status);
        assert_eq!(
            header(&r, "access-control-allow-origin").as_deref(),
            Some("*")
        );
        assert_eq!(
            header(&r, "access-control-expose-headers").as_deref(),
            Some("retry-after, www-authenticate")
        );
    }
    // The preflight was not charged: one request of acme's was served.
    let r = c
        .get(server.url("/account/v1/usage"))
        .header("x-api-key", &key)
        .header("x-team-id", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    server.stop();
    let (_, out, _) = cardex(&["accounts", "list", "--state", &state]);
    assert!(out.contains("acme\t1000\t"), "{out}");
    let used: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("acme\t"))
        .unwrap()
        .split('\t')
        .collect();
    assert_eq!(used.last(), Some(&"1"), "{out}");
    // Listed origins only, compared as browsers send them (lower case, no default port).
    let server = Server::start(&["--cors-origins", "HTTPS://Cards.Example:443"]);
    let r = c
        .get(server.url("/pokemon/v1/cards?page_size=1"))
        .header("origin", "https://cards.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some("https://cards.example")
    );
    let r = c
        .get(server.url("/pokemon/v1/cards?page_size=1"))
        .header("origin", "https://elsewhere.example")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    server.stop();
    // None: no headers, and a preflight is the 405 any OPTIONS gets.
    let server = Server::start(&["--cors-origins", "none"]);
    let r = preflight(server.url("/v2/cards"), "http://localhost:3000")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    server.stop();
    let (code, _, err) = cardex(&["serve", "--cors-origins", "https://a.example/app"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not an origin"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `ServeConfig` made in code is held to what the flags are: a zero timeout, or a spool
/// without PostgreSQL, is refused before anything starts.
#[test]
fn a_config_made_in_code_is_checked_as_the_flags_are() {
    let dir = scratch("config-in-code");
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let mut config = cardex::server::ServeConfig::new(data.clone(), "127.0.0.1:0");
    config.header_read_timeout = Duration::ZERO;
    let err = cardex::server::run(config).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string()
            .starts_with("--header-timeout: must be longer than 0"),
        "{err}"
    );
    let mut config = cardex::server::ServeConfig::new(data, "127.0.0.1:0");
    config.spool = Some(dir.join("spool.db"));
    let err = cardex::server::run(config).unwrap_err();
    assert!(err.to_string().starts_with("--spool:"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
