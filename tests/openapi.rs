//! The OpenAPI document `/openapi.json` as a contract: made for the server that serves it
//! (its catalogs, its mode), it says exactly what that server accepts and answers. These
//! tests run the real `cardex serve` binary on the bundled data, open and with accounts:
//! the document's paths are the routes for each loaded catalog, open mode has no
//! credentials, `401`, `429` or usage endpoint, the limits and field lists it gives are
//! what the server applies, and every example in it answers 200 and finds a record. The
//! last test generates a Python client from the document with openapi-python-client
//! (`CARDEX_OPENAPI_PYTHON`, a Python with it installed; `.ci/run` makes one) and calls
//! every operation through it. `.ci/run` also runs schemathesis against both modes.

#![cfg(all(feature = "server", feature = "cli"))]

mod serving;

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::Value;
use serving::{add_key, scratch, sqlite, Server};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// GET `url` with `headers`: the status and the body as JSON.
async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> (StatusCode, Value) {
    let mut request = client.get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// The bundled data's engine, to compare the document with.
fn engine() -> cardex::Engine {
    cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).unwrap()
}

/// A parameter of `operation`, its `$ref` followed.
fn parameter<'d>(doc: &'d Value, operation: &'d Value, name: &str) -> Option<&'d Value> {
    operation["parameters"].as_array()?.iter().find_map(|p| {
        let p = match p["$ref"].as_str() {
            Some(r) => &doc["components"]["parameters"][r.rsplit('/').next().unwrap()],
            None => p,
        };
        (p["name"] == name).then_some(p)
    })
}

/// The URL of `path` (a document path) with every parameter set to its example.
fn example_url(server: &Server, doc: &Value, path: &str) -> String {
    let operation = &doc["paths"][path]["get"];
    let mut url = path.to_string();
    let mut query = Vec::new();
    for p in operation["parameters"].as_array().into_iter().flatten() {
        let p = match p["$ref"].as_str() {
            Some(r) => &doc["components"]["parameters"][r.rsplit('/').next().unwrap()],
            None => p,
        };
        let name = p["name"].as_str().unwrap();
        let Some(example) = p["example"].as_str() else {
            assert_ne!(p["required"], true, "{path}: {name} has no example");
            continue;
        };
        if p["in"] == "path" {
            url = url.replace(&format!("{{{name}}}"), example);
        } else {
            let encoded =
                percent_encoding::utf8_percent_encode(example, percent_encoding::NON_ALPHANUMERIC);
            query.push(format!("{name}={encoded}"));
        }
    }
    server.url(&format!("{url}?{}", query.join("&")))
}

/// Open and with accounts, the document lists one path per loaded catalog and route (the
/// language routes for catalogs with languages), `/v2`, and in open mode no usage
/// endpoint, no credentials and no `401` or `429`; every example answers 200 and finds
/// what it names.
#[test]
fn the_document_is_made_for_the_server_that_serves_it() {
    let engine = engine();
    let dir = scratch("openapi");
    let state = sqlite(&dir.join("state.db"));
    let key = add_key(&state, "docs", 1_000_000);
    let open = Server::start(&[]);
    let metered = Server::start(&["--state", &state]);
    let credentials = [("X-Api-Key", key.as_str()), ("X-Team-ID", "docs")];
    runtime().block_on(async {
        let client = reqwest::Client::new();
        for (server, accounts) in [(&open, false), (&metered, true)] {
            let (status, doc) = get(&client, &server.url("/openapi.json"), &[]).await;
            assert_eq!(
                (status, doc["openapi"].as_str()),
                (StatusCode::OK, Some("3.1.0"))
            );
            let paths: BTreeSet<String> =
                doc["paths"].as_object().unwrap().keys().cloned().collect();
            let mut expected = BTreeSet::new();
            for (route, _) in cardex::server::ROUTES {
                if route.starts_with("/{catalog}/") {
                    for catalog in engine.catalogs() {
                        if route.contains("{lang}") && catalog.languages().is_empty() {
                            continue;
                        }
                        expected.insert(route.replace("{catalog}", catalog.name()));
                    }
                } else if route != "/account/v1/usage" || accounts {
                    expected.insert(route.to_string());
                }
            }
            expected.extend(
                cardex::server::v2::V2_ROUTES
                    .iter()
                    .map(|(p, _)| p.to_string()),
            );
            assert_eq!(paths, expected, "accounts: {accounts}");

            // Credentials, 401 and 429 exactly when the server has accounts.
            let text = doc.to_string();
            assert_eq!(doc["components"]["securitySchemes"].is_object(), accounts);
            assert_eq!(
                doc["security"].as_array().is_some_and(|s| !s.is_empty()),
                accounts
            );
            for (path, item) in doc["paths"].as_object().unwrap() {
                let responses = item["get"]["responses"].as_object().unwrap();
                let metered_path = path != "/healthz" && path != "/openapi.json";
                for status in ["401", "429"] {
                    assert_eq!(
                        responses.contains_key(status),
                        accounts && metered_path,
                        "{path} {status}"
                    );
                }
                for status in ["405", "414", "431"] {
                    assert!(responses.contains_key(status), "{path} {status}");
                }
                if metered_path
                    && path.starts_with('/')
                    && !path.starts_with("/v2")
                    && path != "/account/v1/usage"
                {
                    assert!(
                        responses.contains_key("400") && responses.contains_key("404"),
                        "{path}"
                    );
                }
                // Every /v2 path refuses a `q` that is not UTF-8, as it says.
                if path.starts_with("/v2") {
                    assert!(responses.contains_key("400"), "{path}");
                    let bad = format!("{}?q=%FF", server.url(&path.replace("{id}", "x")));
                    let (status, _) = get(&client, &bad, &credentials).await;
                    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
                }
            }
            assert!(!text.contains("{catalog}"));

            // Every example works on the bundled data: 200, and a search finds a record.
            for path in doc["paths"].as_object().unwrap().keys() {
                let url = example_url(server, &doc, path);
                let (status, body) = get(&client, &url, &credentials).await;
                assert_eq!(status, StatusCode::OK, "{url}: {body}");
                if let Some(total) = body.get("total_count").or(body.get("totalCount")) {
                    assert!(total.as_u64().unwrap() >= 1, "{url} found nothing");
                }
            }
        }
    });
    // The servers stop before their state folder goes.
    drop((open, metered));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The limits and field lists the document gives are the ones the server applies: `page`
/// up to 4294967295 (and the 400 says so), the languages, `include` on cards only, the
/// fields `order_by` and `select` take (every listed one is accepted; a text field inside
/// an array and prices in two currencies are neither listed nor accepted).
#[test]
fn the_documented_limits_are_the_servers() {
    let engine = engine();
    let server = Server::start(&[]);
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let (_, doc) = get(&client, &server.url("/openapi.json"), &[]).await;
        let cards = &doc["paths"]["/pokemon/v1/cards"]["get"];
        let page = parameter(&doc, cards, "page").unwrap();
        assert_eq!(page["schema"]["maximum"], u64::from(u32::MAX));
        assert_eq!(parameter(&doc, cards, "page_size").unwrap()["schema"]["maximum"], 100);
        // `/v2` serves any pageSize from 1, at most 250 records: no maximum to refuse by.
        let v2_cards = &doc["paths"]["/v2/cards"]["get"];
        let page_size = parameter(&doc, v2_cards, "pageSize").unwrap();
        assert!(page_size["schema"].get("maximum").is_none(), "{page_size}");
        assert_eq!(page_size["schema"]["minimum"], 1);
        let (status, body) = get(&client, &server.url("/v2/cards?pageSize=251"), &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["pageSize"], 250);
        let (status, _) = get(&client, &server.url("/pokemon/v1/cards?page=4294967295"), &[]).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = get(&client, &server.url("/pokemon/v1/cards?page=4294967296"), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body["error"]["message"],
            "invalid `page` value `4294967296`: page must be a whole number between 1 and 4294967295"
        );

        // Languages: the catalog's, in any case.
        let languaged = &doc["paths"]["/pokemon/v1/{lang}/cards"]["get"];
        let lang = parameter(&doc, languaged, "lang").unwrap();
        let pattern = lang["schema"]["pattern"].as_str().unwrap();
        for code in engine.catalog("pokemon").unwrap().languages() {
            assert!(pattern.contains(&format!("[{}{}]", &code[..1], code[..1].to_uppercase())));
            for written in [code.clone(), code.to_uppercase()] {
                let (status, _) = get(&client, &server.url(&format!("/pokemon/v1/{written}/cards")), &[]).await;
                assert_eq!(status, StatusCode::OK, "{written}");
            }
        }

        // `include`: on cards, not on expansions (which refuse every part).
        assert!(parameter(&doc, cards, "include").is_some());
        let expansions = &doc["paths"]["/pokemon/v1/expansions"]["get"];
        assert!(parameter(&doc, expansions, "include").is_none());
        assert!(parameter(&doc, &doc["paths"]["/pokemon/v1/expansions/{id}"]["get"], "include").is_none());

        // `order_by` and `select`: what the pattern lists, the server takes.
        for (path, records) in [
            ("/pokemon/v1/cards", engine.catalog("pokemon").unwrap().cards()),
            ("/onepiece/v1/expansions", engine.catalog("onepiece").unwrap().expansions()),
        ] {
            let operation = &doc["paths"][path]["get"];
            let order = parameter(&doc, operation, "order_by").unwrap()["schema"]["pattern"]
                .as_str()
                .unwrap()
                .to_string();
            for field in records.order_fields() {
                assert!(order.contains(&field.replace('.', "\\.")), "{field}");
                let (status, body) =
                    get(&client, &server.url(&format!("{path}?order_by=-{field}&select=id")), &[]).await;
                assert_eq!(status, StatusCode::OK, "{path} order_by={field}: {body}");
            }
            let select = parameter(&doc, operation, "select").unwrap()["schema"]["pattern"]
                .as_str()
                .unwrap()
                .to_string();
            for field in records.fields().filter(|f| !f.path.contains('.')) {
                assert!(select.contains(field.path), "{}", field.path);
            }
        }
        // The bundled cards are joined to their expansions: `expansion.*` sorts are listed
        // on /v1, and on /v2 the set fields v2's set has (not those it renders otherwise).
        let v1_order = parameter(&doc, cards, "order_by").unwrap()["schema"]["pattern"]
            .as_str()
            .unwrap();
        assert!(v1_order.contains("expansion\\.release_date"), "{v1_order}");
        let v2_cards = &doc["paths"]["/v2/cards"]["get"];
        let v2_order = parameter(&doc, v2_cards, "orderBy").unwrap()["schema"]["pattern"]
            .as_str()
            .unwrap();
        assert!(v2_order.contains("set\\.releaseDate"), "{v2_order}");
        assert!(!v2_order.contains("set\\.logo"), "{v2_order}");
        let order = parameter(&doc, cards, "order_by").unwrap()["schema"]["pattern"]
            .as_str()
            .unwrap()
            .to_string();
        // camelCase spellings are listed and taken too.
        assert!(order.contains("rarityCode") && order.contains("rarity_code"));
        let (status, _) =
            get(&client, &server.url("/pokemon/v1/cards?order_by=-rarityCode&select=id,rarityCode"), &[]).await;
        assert_eq!(status, StatusCode::OK);
        // `q`: at most 5,120 bytes.
        let q = parameter(&doc, cards, "q").unwrap();
        assert_eq!(q["schema"]["maxLength"], cardex::query::MAX_QUERY_BYTES);
        let long = "a".repeat(cardex::query::MAX_QUERY_BYTES + 1);
        let (status, _) = get(&client, &server.url(&format!("/pokemon/v1/cards?q={long}")), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // Unique operationIds, and no example without a value.
        let ids: Vec<&str> = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| item["get"]["operationId"].as_str().unwrap())
            .collect();
        assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
        assert!(!doc.to_string().contains(r#""example":null"#));
        for refused in ["attacks.text", "variants.prices.market"] {
            assert!(!order.contains(&refused.replace('.', "\\.")), "{refused}");
            let (status, _) =
                get(&client, &server.url(&format!("/pokemon/v1/cards?order_by={refused}")), &[]).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        }
    });
}

/// A client generated from the document by openapi-python-client calls every operation
/// on the bundled data, with accounts, and every answer parses as documented
/// (`tests/openapi/generated_client_check.py`). The Python with openapi-python-client is
/// `CARDEX_OPENAPI_PYTHON`.
#[test]
fn a_client_generated_from_the_document_calls_every_operation() {
    let Some(python) = serving::python("CARDEX_OPENAPI_PYTHON", "openapi-python-client") else {
        return;
    };
    let dir = scratch("openapi-client");
    let state = sqlite(&dir.join("state.db"));
    let key = add_key(&state, "client", 1_000_000);
    let server = Server::start(&["--state", &state]);
    let doc = runtime().block_on(async {
        let client = reqwest::Client::new();
        get(&client, &server.url("/openapi.json"), &[]).await.1
    });
    let document = dir.join("openapi.json");
    std::fs::write(&document, doc.to_string()).unwrap();
    // The generator formats its output with ruff, installed beside it.
    let bin = std::path::Path::new(&python)
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let generated = std::process::Command::new(&python)
        .args([
            "-m",
            "openapi_python_client",
            "generate",
            "--meta",
            "none",
            "--path",
        ])
        .arg(&document)
        .arg("--output-path")
        .arg(dir.join("cardex_client"))
        .env("PATH", &path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&generated.stdout).to_string()
        + &String::from_utf8_lossy(&generated.stderr);
    assert!(generated.status.success(), "{said}");
    assert!(!said.contains("Warning"), "the generator warned: {said}");
    let check = std::process::Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/openapi/generated_client_check.py"
        ))
        .arg(&dir)
        .arg("cardex_client")
        .arg(&document)
        .arg(server.base.as_str())
        .args([key.as_str(), "client"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let operations = doc["paths"].as_object().unwrap().len();
    assert!(
        out.contains(&format!("{operations} operations called")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
