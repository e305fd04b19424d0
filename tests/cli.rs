//! The `cardex` binary: output, errors on stderr, exit statuses.

// The binary is built with the `cli` feature.
#![cfg(feature = "cli")]

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

/// The README's first command, as written there.
#[test]
fn search_prints_the_envelope() {
    let o = cardex(&[
        "search",
        "onepiece",
        "printings:PRB01 AND rarity_code:SR",
        "--select",
        "name,rarity_code",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"data\":[{\"id\":\"OP01-013\",\"name\":\"Roronoa Zoro\",\"rarity_code\":\"SR\"},{\"id\":\"OP02-013\",\"name\":\"Portgas.D.Ace\",\"rarity_code\":\"SR\"}],\"page\":1,\"page_size\":100,\"count\":2,\"total_count\":2}\n"
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
    // One that looks like a long option is a misspelt option, not a search for it.
    for args in [
        &["search", "pokemon", "--explian"][..],
        &["search", "pokemon", "--select=id", "--pagesize=1"],
        &["expansions", "pokemon", "--include"],
    ] {
        let o = cardex(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("is not an option of `cardex"),
            "{}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty());
    }
    // A short option before a value is one the commands lack (they have none but `-h`);
    // alone it is a query (`-C`: no card named C).
    for (args, says) in [
        (
            &["search", "onepiece", "-p", "5"][..],
            "(did you mean `--page` or `--page-size`?)",
        ),
        (
            &["expansions", "onepiece", "-s", "id"],
            "(did you mean `--select`?)",
        ),
        (
            &["search", "onepiece", "-x", "name:zoro"],
            "`-x` is not an option of `cardex search`; see",
        ),
        // Any case; only options that take a value (`--explain` takes none).
        (
            &["search", "onepiece", "-E", "5"],
            "(did you mean `--expansion`?)",
        ),
    ] {
        let o = cardex(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("is not an option of `cardex") && stderr(&o).contains(says),
            "{}",
            stderr(&o)
        );
    }
    let o = cardex(&["search", "onepiece", "-C", "--select", "id"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The HTTP parameters' spellings, and an unknown option before its value, are named
    // with the option they resemble (`--page_size=5` searched for itself, and found
    // nothing; with `--pagesize 5`, clap named `5` as the unexpected argument).
    for (args, close) in [
        (&["search", "pokemon", "--page_size=5"][..], "--page-size"),
        (
            &["search", "onepiece", "--pagesize", "5", "rarity_code:SR"],
            "--page-size",
        ),
        (
            &["search", "pokemon", "hp>=200", "--orderBy=-hp"],
            "--order-by",
        ),
        (&["search", "pokemon", "--selct", "id"], "--select"),
        (&["search", "pokemon", "--pge-sze", "1"], "--page-size"),
    ] {
        let o = cardex(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains(&format!(
                "is not an option of `cardex search` (did you mean `{close}`?)"
            )),
            "{}",
            stderr(&o)
        );
    }
    // A `--` after an option that takes a value ends the options, as clap reads it.
    let o = cardex(&["search", "pokemon", "--select", "--", "--foo"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a value is required for '--select"),
        "{}",
        stderr(&o)
    );
    // Known options and their values, whatever those look like, are left alone.
    let o = cardex(&[
        "search",
        "pokemon",
        "--order-by",
        "-hp",
        "--page-size",
        "1",
        "hp>=200",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // An argument that is not UTF-8 (a path) does not stop the check.
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::OsStr::from_bytes(b"/tmp/\xff");
        let o = Command::new(env!("CARGO_BIN_EXE_cardex"))
            .arg("search")
            .arg("--data")
            .arg(path)
            .args(["pokemon", "--explian"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    }
    // A stderr that cannot be written (full) loses the messages, never the exit status
    // or the answer: a refused query exits 2 (it panicked, 101), and a plan asked for
    // with `--explain` does not stop the answer.
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let o = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(["search", "onepiece", "bad:x"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args([
            "search",
            "onepiece",
            "--explain",
            "--select",
            "id",
            "rarity_code:SR",
        ])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("\"total_count\":"), "{}", stdout(&o));
    // After `--`, it is a query.
    let o = cardex(&[
        "search",
        "onepiece",
        "--select",
        "id",
        "--",
        "--rarity_code:SR",
    ]);
    assert!(stdout(&o).contains("\"total_count\":"), "{}", stderr(&o));
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
    // A list's options do not apply to one expansion: refused, not ignored.
    for option in [["--lang", "xx"], ["--page", "2"], ["--order-by", "bogus"]] {
        let mut args = vec!["expansions", "onepiece", "--id", "PRB01"];
        args.extend(option);
        let o = cardex(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    }
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
    assert_eq!(
        stderr(&o),
        "AND  ~3 cost 7\n  keyword rarity_code:SR  ~3 cost 3\n  keyword printings:PRB01  ~4 cost 4\n\
         scan: a short list's ids tested one by one, no set built  2 match\n"
    );
    assert!(stdout(&o).contains("\"total_count\":2"));
    // An expansion's cards: the plan holds the expansion.
    let o = cardex(&[
        "search",
        "onepiece",
        "--expansion",
        "PRB01",
        "--explain",
        "rarity_code:SR",
    ]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("expansion's cards  ~4"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("\"total_count\":2"));
    // The plan is of a request that would run: a bad select prints none.
    let o = cardex(&["search", "onepiece", "--explain", "", "--select", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("ALL"), "{}", stderr(&o));
    // Expansions have plans too.
    let o = cardex(&["expansions", "onepiece", "--explain", "id:OP01"]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("keyword id:OP01  ~1"), "{}", stderr(&o));
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

/// The `total_count` of a pokemon search over the snapshot `data`.
fn total_count(data: &str, q: &str) -> u64 {
    let o = cardex(&["search", "--data", data, "pokemon", q, "--page-size", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["total_count"].as_u64().unwrap()
}

/// A fresh folder under the system's temp dir.
fn temp(label: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cardex-cli-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn import_reports_progress_refuses_bad_input_and_keeps_the_old_output() {
    let src = temp("import-src");
    let out = temp("import-out");
    write(
        &src,
        "sets/en.json",
        r#"[{"id":"base1","name":"Base","series":"Base","ptcgoCode":"BS","releaseDate":"1999/01/09"},
            {"id":"base2","name":"Jungle","series":"Base","releaseDate":"1999/06/16"}]"#,
    );
    write(
        &src,
        "cards/en/base1.json",
        r#"[{"id":"base1-58","name":"Pikachu","supertype":"Pokémon","hp":"40"}]"#,
    );
    write(
        &src,
        "cards/en/base2.json",
        r#"[{"id":"base2-60","name":"Pikachu","supertype":"Pokémon","hp":"50"}]"#,
    );
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    let run = cardex(&["import", "pokemon-tcg-data", s, o]);
    assert!(run.status.success(), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(err.contains("converted 2/2 card files (2 cards)"), "{err}");
    assert!(err.contains("imported 2 cards in 2 sets into"), "{err}");
    let found = cardex(&[
        "search", "--data", o, "pokemon", "hp>=45", "--select", "name",
    ]);
    assert_eq!(
        stdout(&found),
        "{\"data\":[{\"id\":\"base2-60\",\"name\":\"Pikachu\"}],\"page\":1,\"page_size\":100,\"count\":1,\"total_count\":1}\n"
    );

    // The output exists: refused without --force, and left alone.
    let again = cardex(&["import", "pokemon-tcg-data", s, o]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));

    // A broken cards file under --force: exit 1, the file named, the old output intact.
    write(
        &src,
        "cards/en/base2.json",
        r#"[{"id":"base2-60","name":"Pikachu",}]"#,
    );
    let broken = cardex(&["import", "pokemon-tcg-data", s, o, "--force"]);
    assert_eq!(broken.status.code(), Some(1));
    let err = stderr(&broken);
    assert!(err.starts_with("error: import failed: "), "{err}");
    assert!(err.contains("base2.json:1:36: invalid JSON"), "{err}");
    assert_eq!(
        total_count(o, "name:pikachu"),
        2,
        "the old output is intact"
    );

    // Fixed, under --force: replaced.
    write(&src, "cards/en/base2.json", "[]");
    let replaced = cardex(&["import", "pokemon-tcg-data", s, o, "--force"]);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert_eq!(total_count(o, "name:pikachu"), 1, "replaced");
    std::fs::remove_dir_all(&src).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn generate_writes_a_seeded_snapshot_and_refuses_to_overwrite() {
    let out = temp("generate");
    let o = out.to_str().unwrap();
    let run = cardex(&["generate", "--cards", "1000", "--out", o, "--seed", "3"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("generated 1000 cards in 5 expansions"),
        "{}",
        stderr(&run)
    );
    let all = cardex(&[
        "search",
        "--data",
        o,
        "tcg",
        "",
        "--page-size",
        "1",
        "--select",
        "id",
    ]);
    assert!(
        stdout(&all).contains("\"total_count\":1000"),
        "{}",
        stdout(&all)
    );
    let ja = cardex(&[
        "search",
        "--data",
        o,
        "tcg",
        "--lang",
        "ja",
        "translation.en.name:*",
    ]);
    assert!(ja.status.success(), "{}", stderr(&ja));
    let ja: serde_json::Value = serde_json::from_str(&stdout(&ja)).unwrap();
    assert!(
        ja["total_count"].as_u64().unwrap() > 0,
        "Japanese cards with translations"
    );
    let first = std::fs::read(out.join("tcg/cards/s0.json")).unwrap();

    let again = cardex(&["generate", "--cards", "1000", "--out", o, "--seed", "3"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    let forced = cardex(&[
        "generate", "--cards", "1000", "--out", o, "--seed", "3", "--force",
    ]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(
        std::fs::read(out.join("tcg/cards/s0.json")).unwrap(),
        first,
        "same seed, same bytes"
    );
    // A catalog name no folder can have writes nothing.
    let bad = cardex(&[
        "generate",
        "--cards",
        "10",
        "--out",
        o,
        "--catalog",
        "Bad Name",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("`Bad Name` cannot name a catalog"),
        "{}",
        stderr(&bad)
    );
    assert!(!out.join("Bad Name").exists());
    // So does a name that would be a path, even one that exists, and more cards than a
    // catalog may have: before the old catalog is touched.
    for (cards, catalog, says) in [
        ("10", "/etc", "`/etc` cannot name a catalog"),
        ("10000000000000", "tcg", "are more than the 100000000"),
    ] {
        let refused = cardex(&[
            "generate",
            "--cards",
            cards,
            "--out",
            o,
            "--catalog",
            catalog,
            "--force",
        ]);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
    }
    assert_eq!(
        std::fs::read(out.join("tcg/cards/s0.json")).unwrap(),
        first,
        "the old catalog stays"
    );
    // Nothing is left beside the catalog.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["tcg"]);
    std::fs::remove_dir_all(&out).unwrap();
}
