//! The `cardex` binary (contract section 5): output, errors on stderr, exit statuses.

mod support;

use std::process::{Command, Output};

fn cardex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cardex")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn search_prints_the_envelope() {
    let o = cardex(&[
        "search",
        "onepiece",
        "printings:PRB01 AND rarity_code:SR",
        "--select",
        "name",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"data\":[{\"id\":\"OP01-013\",\"name\":\"Roronoa Zoro\"},{\"id\":\"OP02-013\",\"name\":\"Portgas.D.Ace\"}],\"page\":1,\"page_size\":100,\"count\":2,\"total_count\":2}\n"
    );
}

#[test]
fn search_options() {
    let o = cardex(&[
        "search",
        "--data",
        "data",
        "pokemon",
        "--lang",
        "ja",
        "--page",
        "2",
        "--page-size",
        "3",
        "--order-by",
        "-hp",
        "--select",
        "hp",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (
            v["page"].as_u64(),
            v["page_size"].as_u64(),
            v["count"].as_u64(),
            v["total_count"].as_u64()
        ),
        (Some(2), Some(3), Some(3), Some(10))
    );
    // A query that starts with `-` is a query, not an option.
    let o = cardex(&["search", "onepiece", "-rarity_code:SR", "--select", "id"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"total_count\":11"));
    // No query: every card.
    let o = cardex(&["search", "lorcana", "--select", "id"]);
    assert!(stdout(&o).contains("\"total_count\":7"));
    let o = cardex(&["search", "onepiece", "--include", "prices", "shanks"]);
    assert!(stdout(&o).contains("\"prices\""));
    let o = cardex(&["search", "onepiece", "shanks"]);
    assert!(!stdout(&o).contains("\"prices\""));
    let o = cardex(&[
        "search",
        "onepiece",
        "--expansion",
        "PRB01",
        "--select",
        "id",
    ]);
    assert!(stdout(&o).contains("\"total_count\":4"), "{}", stdout(&o));
}

#[test]
fn a_bad_query_prints_the_caret_and_exits_2() {
    let o = cardex(&["search", "onepiece", "printings:OP01 AND rarity_code:"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: expected a value after `rarity_code:`, found end of input\nprintings:OP01 AND rarity_code:\n                               ^\n"
    );
    let o = cardex(&["search", "onepiece", "rarty_code:SR"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean `rarity_code`?"));
}

#[test]
fn bad_requests_exit_2() {
    for args in [
        &["search", "nope", "x"][..],
        &["search", "pokemon", "--lang", "fr"],
        &["search", "onepiece", "--lang", "en"],
        &["search", "onepiece", "--page", "0"],
        &["search", "onepiece", "--page-size", "101"],
        &["search", "onepiece", "--order-by", "nope"],
        &["get", "onepiece", "OP09-999"],
        &["expansions", "onepiece", "--id", "ZZ"],
    ] {
        let o = cardex(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("error: "), "{args:?}");
    }
    let o = cardex(&["search", "nope"]);
    assert_eq!(
        stderr(&o),
        "error: unknown catalog `nope`; the catalogs are `lorcana`, `onepiece`, `pokemon`\n"
    );
}

#[test]
fn a_snapshot_that_cannot_load_exits_1() {
    let dir = support::TempDir::new("cli-broken");
    dir.write("c/expansions/e.json", "[{\"id\": \"e\"}");
    let o = cardex(&["search", "--data", dir.path().to_str().unwrap(), "c"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: cannot load the snapshot: "),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("c/expansions/e.json:1:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn get_and_expansions() {
    let o = cardex(&["get", "onepiece", "OP01-016", "--select", "name"]);
    assert_eq!(
        stdout(&o),
        "{\"data\":{\"id\":\"OP01-016\",\"name\":\"Nami\"}}\n"
    );
    let o = cardex(&["expansions", "pokemon", "--lang", "ja", "--select", "name"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["total_count"], 2);
    let o = cardex(&["expansions", "onepiece", "series:\"Premium Booster\""]);
    assert!(stdout(&o).contains("PRB01"));
    let o = cardex(&["expansions", "onepiece", "--id", "PRB01"]);
    assert!(stdout(&o).starts_with("{\"data\":{\"id\":\"PRB01\""));
}

#[test]
fn explain_goes_to_stderr() {
    let o = cardex(&[
        "search",
        "onepiece",
        "--explain",
        "printings:PRB01 rarity_code:SR",
        "--select",
        "id",
    ]);
    assert!(o.status.success());
    assert_eq!(stderr(&o), "AND  ~3 cost 7\n  keyword rarity_code:SR  ~3 cost 3\n  keyword printings:PRB01  ~4 cost 4\n");
    assert!(stdout(&o).contains("\"total_count\":2"));
}

#[test]
fn data_defaults_to_the_bundled_snapshot() {
    let o = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(["search", "onepiece", "nami", "--select", "id"])
        .current_dir(std::env::temp_dir())
        .env_remove("CARDEX_DATA")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("OP01-016"));
}
