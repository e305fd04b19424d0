//! Loading snapshots: a broken snapshot is refused whole with a typed error naming the
//! file and the record (and line and column for JSON syntax); loading does not depend on
//! file order or thread count.

mod support;

use std::fmt::Write as _;

use cardex::{Engine, LoadErrorKind};
use support::{copy_tree, data_dir, TempDir};

/// A minimal valid catalog, to break one piece at a time.
fn base(dir: &TempDir) {
    dir.write(
        "c/expansions/sets.json",
        r#"[{"id":"e1","release_date":"2024/01/02"},{"id":"e2"}]"#,
    );
    dir.write("c/cards/a.json", "[\n  {\"id\": \"a\", \"expansion_id\": \"e1\"},\n  {\"id\": \"b\", \"expansion_id\": \"e2\"}\n]");
}

/// How many cards catalog `c` of the snapshot in `dir` loads.
fn cards_of(dir: &TempDir) -> usize {
    Engine::open(dir.path())
        .unwrap()
        .catalog("c")
        .unwrap()
        .cards()
        .len()
}

fn open_err(dir: &TempDir) -> cardex::LoadError {
    Engine::open(dir.path()).expect_err("the snapshot must be refused")
}

fn rel(dir: &TempDir, err: &cardex::LoadError) -> String {
    err.to_string()
        .replace(&format!("{}/", dir.path().display()), "")
}

#[test]
fn a_valid_minimal_snapshot_loads() {
    let dir = TempDir::new("ok");
    base(&dir);
    let engine = Engine::open(dir.path()).unwrap();
    assert_eq!(engine.catalog("c").unwrap().cards().len(), 2);
}

#[test]
fn json_syntax_errors_name_file_line_and_column() {
    let dir = TempDir::new("syntax");
    base(&dir);
    dir.write(
        "c/cards/b.json",
        "[\n  {\"id\": \"x\", \"expansion_id\": \"e1\",}\n]",
    );
    let err = open_err(&dir);
    assert!(
        matches!(
            err.kind(),
            LoadErrorKind::Json {
                line: 2,
                column: 36,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        rel(&dir, &err),
        "c/cards/b.json:2:36: invalid JSON: trailing comma"
    );
    assert_eq!(err.path().unwrap(), dir.path().join("c/cards/b.json"));
    // serde_json's column 0 (an error met just after a line break) is the line break
    // itself, at the end of the line before; an empty file's is 1:1.
    for (text, place) in [
        (
            "[\n  {\"id\": \"x\n\"}\n]",
            "c/cards/b.json:2:12: invalid JSON: control character",
        ),
        (
            "",
            "c/cards/b.json:1:1: invalid JSON: EOF while parsing a value",
        ),
        // A byte no JSON value starts with is a syntax error with its place, not "found a
        // number".
        (
            "/* x */ []",
            "c/cards/b.json:1:1: invalid JSON: expected value",
        ),
    ] {
        dir.write("c/cards/b.json", text);
        let err = rel(&dir, &open_err(&dir));
        assert!(err.starts_with(place), "{text:?}: {err}");
    }
    // A byte order mark first is ignored (RFC 8259 lets a reader), in catalog.json too.
    dir.write(
        "c/cards/b.json",
        "\u{FEFF}[{\"id\": \"x\", \"expansion_id\": \"e1\"}]",
    );
    dir.write("c/catalog.json", "\u{FEFF}{\"name\": \"c\"}");
    assert_eq!(cards_of(&dir), 3);
}

#[test]
fn a_long_value_is_cut_short_in_a_message() {
    let dir = TempDir::new("long");
    base(&dir);
    let long = "x".repeat(10_000);
    dir.write(
        "c/cards/b.json",
        &format!(r#"[{{"id": "{long}", "expansion_id": "{long}"}}]"#),
    );
    let err = open_err(&dir);
    // The typed error keeps the whole value; its message shows the start.
    assert!(
        matches!(err.kind(), LoadErrorKind::UnknownExpansion { expansion_id, .. } if *expansion_id == long)
    );
    let shown = format!("{}… (10000 bytes)", "x".repeat(60));
    let message = rel(&dir, &err);
    assert_eq!(
        message,
        format!("c/cards/b.json: record 0 (id `{shown}`): `expansion_id` names `{shown}`, which is no expansion of catalog `c`")
    );
}

#[test]
fn a_json_entry_that_is_not_a_file_or_a_records_folder_that_is_not_a_folder_is_refused() {
    // A folder named `x.json`: its records are not read, so the snapshot is refused
    // rather than served without them.
    let dir = TempDir::new("not-a-file");
    base(&dir);
    std::fs::create_dir_all(dir.path().join("c/cards/more.json")).unwrap();
    let err = open_err(&dir);
    assert!(
        matches!(err.kind(), LoadErrorKind::NotAFile { expected: "file" }),
        "{err}"
    );
    assert!(
        rel(&dir, &err).starts_with("c/cards/more.json: not a file"),
        "{err}"
    );
    // A link that leads nowhere is one that cannot be read.
    let dir = TempDir::new("dangling");
    base(&dir);
    std::os::unix::fs::symlink(
        dir.path().join("nowhere.json"),
        dir.path().join("c/cards/gone.json"),
    )
    .unwrap();
    let err = open_err(&dir);
    assert!(matches!(err.kind(), LoadErrorKind::Io(_)), "{err}");
    assert!(
        rel(&dir, &err).starts_with("c/cards/gone.json: cannot read"),
        "{err}"
    );
    // A `cards` link that leads nowhere, a catalog link that leads nowhere, and a
    // `catalog.json` that is a folder: each refused, not taken for absent.
    let dir = TempDir::new("cards-link");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("c/cards")).unwrap();
    let err = open_err(&dir);
    assert!(rel(&dir, &err).starts_with("c/cards: cannot read"), "{err}");
    let dir = TempDir::new("catalog-link");
    base(&dir);
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("d")).unwrap();
    let err = open_err(&dir);
    assert!(rel(&dir, &err).starts_with("d: cannot read"), "{err}");
    let dir = TempDir::new("meta-folder");
    base(&dir);
    std::fs::create_dir_all(dir.path().join("c/catalog.json")).unwrap();
    let err = open_err(&dir);
    assert!(
        matches!(err.kind(), LoadErrorKind::NotAFile { expected: "file" }),
        "{err}"
    );
    // `cards` (or `expansions`) that is a file.
    let dir = TempDir::new("cards-file");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    dir.write("c/cards", "[]");
    let err = open_err(&dir);
    assert!(
        matches!(err.kind(), LoadErrorKind::NotAFile { expected: "folder" }),
        "{err}"
    );
    // A catalog without one of the two folders still loads.
    let dir = TempDir::new("no-cards");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    assert_eq!(cards_of(&dir), 0);
}

#[test]
fn record_errors_name_file_record_and_id() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[1]",
            "record 0: expected a JSON object, found a number",
            "not an object",
        ),
        (
            r#"[{"expansion_id":"e1"}]"#,
            "record 0: required field `id` is missing",
            "no id",
        ),
        (
            r#"[{"id":"z"}]"#,
            "record 0 (id `z`): required field `expansion_id` is missing",
            "no expansion_id",
        ),
        (
            r#"[{"id":"z","expansion_id":"nope"}]"#,
            "record 0 (id `z`): `expansion_id` names `nope`, which is no expansion of catalog `c`",
            "unknown expansion",
        ),
        (
            r#"[{"id":"ok","expansion_id":"e1"},{"id":7,"expansion_id":"e1"}]"#,
            "record 1: field `id` must be a non-empty string, found a number",
            "id type",
        ),
        (
            r#"[{"id":"z","expansion_id":"e1","printings":"e1"}]"#,
            "record 0 (id `z`): field `printings` must be an array of strings, found a string",
            "printings",
        ),
        (
            r#"{"id":"z"}"#,
            "expected a JSON array of records, found an object",
            "not an array",
        ),
        (
            r#"[{"id":"ok","expansion_id":"e1"},{"id":"z","name":"A","expansion_id":"e1","name":"B"}]"#,
            "record 1 (id `z`): the key `name` appears twice at the top level (JSON readers disagree on which of the two counts; keep one)",
            "a repeated key",
        ),
        (
            r#"[{"id":"z","expansion_id":"e1","variants":[{"name":"N"},{"prices":[{"type":"raw","low":1,"low":2}]}]}]"#,
            "record 0 (id `z`): the key `low` appears twice in an object at `variants.prices` (JSON readers disagree on which of the two counts; keep one)",
            "a key repeated deep in the record",
        ),
        (
            r#"[{"id":"z","expansion_id":"e1","k\u0065y":1,"key":2}]"#,
            "record 0 (id `z`): the key `key` appears twice at the top level (JSON readers disagree on which of the two counts; keep one)",
            "a key repeated through an escape",
        ),
        (
            r#"[{"id":"z","expansion_id":"e1","id":"y"}]"#,
            "record 0: the key `id` appears twice at the top level (JSON readers disagree on which of the two counts; keep one)",
            "a repeated id key",
        ),
        (
            r#"[{"id":"","expansion_id":"e1","":{"a":1,"a":2}}]"#,
            "record 0: the key `a` appears twice in an object at `` (JSON readers disagree on which of the two counts; keep one)",
            "a key repeated under an empty key, in a record of an empty id",
        ),
        (
            r#"[[{"a":1,"a":2}]]"#,
            "record 0: expected a JSON object, found an array",
            "a repeated key in a record that is not an object",
        ),
    ];
    for (text, expected, what) in cases {
        let dir = TempDir::new("record");
        base(&dir);
        dir.write("c/cards/b.json", text);
        let err = open_err(&dir);
        assert_eq!(
            rel(&dir, &err),
            format!("c/cards/b.json: {expected}"),
            "{what}"
        );
    }
}

#[test]
fn duplicate_ids_name_both_places() {
    let dir = TempDir::new("dup");
    base(&dir);
    dir.write(
        "c/cards/b.json",
        r#"[{"id":"q","expansion_id":"e1"},{"id":"a","expansion_id":"e2"}]"#,
    );
    let err = open_err(&dir);
    assert_eq!(rel(&dir, &err), "c/cards/b.json: record 1 (id `a`): duplicate id `a`: record 0 of c/cards/a.json has it too");
    let dir = TempDir::new("dup-exp");
    base(&dir);
    dir.write("c/expansions/more.json", r#"[{"id":"e1"}]"#);
    assert!(matches!(
        open_err(&dir).kind(),
        LoadErrorKind::DuplicateId { .. }
    ));
}

#[test]
fn a_repeated_key_is_typed_and_keys_repeated_across_objects_are_not() {
    let dir = TempDir::new("repeated-key");
    base(&dir);
    dir.write(
        "c/cards/b.json",
        r#"[{"id":"z","expansion_id":"e1","abilities":[{"name":"Frost","name":"Ice"}]}]"#,
    );
    let err = open_err(&dir);
    match err.kind() {
        LoadErrorKind::RepeatedKey { object, key } => {
            assert_eq!(
                (object.as_slice(), key.as_str()),
                (&["abilities".to_string()][..], "name")
            );
        }
        other => panic!("{other:?}"),
    }
    // One key in sibling objects, in an object and its parent, and in the record and an
    // element: all distinct members.
    let dir = TempDir::new("repeated-key-ok");
    base(&dir);
    dir.write(
        "c/cards/b.json",
        r#"[{"id":"z","expansion_id":"e1","name":"Z","abilities":[{"name":"A"},{"name":"B","id":{"name":"C"}}]}]"#,
    );
    let engine = Engine::open(dir.path()).unwrap();
    let cards = engine.catalog("c").unwrap().cards();
    assert_eq!(cards.len(), 3);
}

#[test]
fn the_first_duplicate_in_file_order_is_reported() {
    // x repeats at b.json record 1, y at b.json record 0: y comes first in file order.
    let dir = TempDir::new("dups");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"},{"id":"e2"}]"#);
    dir.write(
        "c/cards/a.json",
        r#"[{"id":"x","expansion_id":"e2"},{"id":"y","expansion_id":"e1"}]"#,
    );
    dir.write("c/cards/b.json", r#"[{"id":"y","expansion_id":"e2"},{"id":"x","expansion_id":"e1"},{"id":"x","expansion_id":"e1"}]"#);
    for _ in 0..5 {
        let err = open_err(&dir);
        assert_eq!(rel(&dir, &err), "c/cards/b.json: record 0 (id `y`): duplicate id `y`: record 1 of c/cards/a.json has it too");
    }
    let dir = TempDir::new("dups-same-file");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"}]"#);
    dir.write("c/cards/a.json", r#"[{"id":"x","expansion_id":"e1"},{"id":"z","expansion_id":"e1"},{"id":"x","expansion_id":"e1"}]"#);
    assert_eq!(rel(&dir, &open_err(&dir)), "c/cards/a.json: record 2 (id `x`): duplicate id `x`: record 0 of c/cards/a.json has it too");
}

#[test]
fn folder_and_file_errors() {
    let dir = TempDir::new("empty");
    assert_eq!(
        rel(&dir, &open_err(&dir)).trim_start_matches(&dir.path().display().to_string()),
        ": no catalog folders: a snapshot folder holds a folder per catalog, with cards/, expansions/ or catalog.json in it (<snapshot>/<catalog>/cards/*.json)"
    );
    // A folder with none of a catalog's entries is not a catalog: the parent of a snapshot
    // (or any folder of folders) is not taken for one of empty catalogs.
    let parent = TempDir::new("parent");
    parent.write("snapshot/pokemon/cards/a.json", "[]");
    parent.write("notes/readme.txt", "x");
    assert!(matches!(
        open_err(&parent).kind(),
        LoadErrorKind::NoCatalogs
    ));
    let beside = Engine::open(parent.path().join("snapshot")).unwrap();
    assert_eq!(
        beside.catalogs().map(|c| c.name()).collect::<Vec<_>>(),
        ["pokemon"]
    );
    // Beside real catalogs, such a folder is left alone; a catalog.json alone makes one.
    parent.write("snapshot/backups/old.txt", "x");
    parent.write("snapshot/lorcana/catalog.json", "{}");
    let beside = Engine::open(parent.path().join("snapshot")).unwrap();
    assert_eq!(
        beside.catalogs().map(|c| c.name()).collect::<Vec<_>>(),
        ["lorcana", "pokemon"]
    );
    let missing = Engine::open(dir.path().join("nope")).unwrap_err();
    assert!(matches!(missing.kind(), LoadErrorKind::Io(_)));
    let dir = TempDir::new("name");
    dir.write("Bad Name/cards/x.json", "[]");
    assert!(matches!(
        open_err(&dir).kind(),
        LoadErrorKind::InvalidCatalogName { .. }
    ));
    let dir = TempDir::new("utf8");
    base(&dir);
    std::fs::write(dir.path().join("c/cards/b.json"), b"[\"\xff\"]").unwrap();
    assert_eq!(
        rel(&dir, &open_err(&dir)),
        "c/cards/b.json: file is not valid UTF-8"
    );
    let dir = TempDir::new("meta");
    base(&dir);
    dir.write("c/catalog.json", r#"{"name":"other"}"#);
    assert_eq!(
        rel(&dir, &open_err(&dir)),
        "c/catalog.json: catalog.json names catalog `other`, but its folder is `c`"
    );
    let dir = TempDir::new("meta-repeated");
    base(&dir);
    dir.write(
        "c/catalog.json",
        r#"{"name":"other","title":"C","name":"c"}"#,
    );
    assert_eq!(
        rel(&dir, &open_err(&dir)),
        "c/catalog.json: the key `name` appears twice at the top level (JSON readers disagree on which of the two counts; keep one)"
    );
    let dir = TempDir::new("date");
    base(&dir);
    dir.write(
        "c/expansions/sets.json",
        r#"[{"id":"e1","release_date":"02/01/2024"},{"id":"e2"}]"#,
    );
    assert_eq!(rel(&dir, &open_err(&dir)), "c/expansions/sets.json: record 0 (id `e1`): field `release_date` must be a date `YYYY/MM/DD`, found `02/01/2024`");
}

#[test]
fn other_files_are_ignored() {
    let dir = TempDir::new("ignored");
    base(&dir);
    dir.write("c/cards/README.md", "not json");
    dir.write("c/cards/.hidden.json", "not json");
    dir.write("README.md", "snapshot notes");
    dir.write(".git/config", "x");
    assert_eq!(Engine::open(dir.path()).unwrap().catalogs().count(), 1);
}

/// Everything a load produced: every served record in order, and every posting list.
fn fingerprint(engine: &Engine) -> String {
    let mut out = String::new();
    for catalog in engine.catalogs() {
        for collection in [catalog.cards(), catalog.expansions()] {
            for id in 0..collection.len() as u32 {
                writeln!(out, "{}", collection.doc(id)).unwrap();
            }
            out.push_str(&collection.index_dump());
        }
    }
    out
}

#[test]
fn loading_does_not_depend_on_thread_count() {
    let many = fingerprint(&Engine::open(data_dir()).unwrap());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let one = pool.install(|| fingerprint(&Engine::open(data_dir()).unwrap()));
    same(&one, &many);
    // And on a generated catalog large enough for several index chunks.
    let dir = TempDir::new("threads");
    cardex::generate::write_snapshot(
        dir.path(),
        &cardex::generate::Options {
            cards: 9000,
            ..Default::default()
        },
    )
    .unwrap();
    let many = fingerprint(&Engine::open(dir.path()).unwrap());
    let one = pool.install(|| fingerprint(&Engine::open(dir.path()).unwrap()));
    same(&one, &many);
}

/// Compares two fingerprints, reporting the first line that differs (they are long).
#[track_caller]
fn same(a: &str, b: &str) {
    if let Some((x, y)) = a.lines().zip(b.lines()).find(|(x, y)| x != y) {
        panic!(
            "fingerprints differ:\n{}\n{}",
            &x[..x.len().min(300)],
            &y[..y.len().min(300)]
        );
    }
    assert_eq!(a.len(), b.len(), "fingerprints differ in length");
}

#[test]
fn loading_does_not_depend_on_file_order_or_split() {
    let original = fingerprint(&Engine::open(data_dir()).unwrap());
    let dir = TempDir::new("order");
    copy_tree(&data_dir(), dir.path());
    // Rename files so they sort differently, and split one file in two.
    let cards = dir.path().join("pokemon/cards");
    std::fs::rename(cards.join("emc.json"), cards.join("zz-last.json")).unwrap();
    std::fs::rename(cards.join("ddw.json"), cards.join("00-first.json")).unwrap();
    let text = std::fs::read_to_string(cards.join("ltc.json")).unwrap();
    // Raw values keep each record's text (and key order) as written.
    let mut records: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(&text).unwrap();
    let tail = records.split_off(3);
    std::fs::write(
        cards.join("ltc.json"),
        serde_json::to_string(&tail).unwrap(),
    )
    .unwrap();
    std::fs::write(
        cards.join("m-ltc-head.json"),
        serde_json::to_string(&records).unwrap(),
    )
    .unwrap();
    same(&fingerprint(&Engine::open(dir.path()).unwrap()), &original);
}

#[test]
fn a_refused_snapshot_leaves_nothing_half_loaded() {
    // Engine::open returns either a whole engine or an error: an engine that loaded before
    // is untouched by a later failed open.
    let good = Engine::open(data_dir()).unwrap();
    let dir = TempDir::new("refused");
    copy_tree(&data_dir(), dir.path());
    dir.write("onepiece/cards/broken.json", "[{\"id\": ");
    assert!(Engine::open(dir.path()).is_err());
    assert_eq!(good.catalog("onepiece").unwrap().cards().len(), 14);
}

#[test]
fn a_load_reports_its_progress_file_by_file_then_indexing_then_compressing() {
    let seen = std::sync::Mutex::new(Vec::new());
    let engine =
        cardex::Engine::open_with_progress(concat!(env!("CARGO_MANIFEST_DIR"), "/data"), |p| {
            seen.lock().unwrap().push(p)
        })
        .unwrap();
    let seen = seen.into_inner().unwrap();
    let files = seen[0].files;
    // One report per file, then one when indexing starts, with every count in it.
    assert_eq!(seen.len(), files + 1);
    let last = seen.last().unwrap();
    assert!(last.indexing);
    assert_eq!(last.files_read, files);
    let cards: usize = engine.catalogs().map(|c| c.cards().len()).sum();
    assert_eq!(last.cards_read, cards);
    let mut read: Vec<usize> = seen[..files].iter().map(|p| p.files_read).collect();
    read.sort();
    assert_eq!(read, (1..=files).collect::<Vec<_>>());
    assert!(seen[..files]
        .iter()
        .all(|p| !p.indexing && p.cards_read <= cards));
    assert!(seen.iter().all(|p| !p.compressing));
    // A compressed store: one more report, when compressing starts, with every count.
    let seen = std::sync::Mutex::new(Vec::new());
    let options = cardex::OpenOptions::new().store(cardex::StoreKind::Compressed);
    cardex::Engine::open_with(
        concat!(env!("CARGO_MANIFEST_DIR"), "/data"),
        &options,
        |p| seen.lock().unwrap().push(p),
    )
    .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), files + 2);
    let (indexing, compressing) = (seen[files], seen[files + 1]);
    assert!(indexing.indexing && !indexing.compressing);
    assert!(compressing.compressing && !compressing.indexing);
    assert_eq!(
        (
            compressing.files,
            compressing.files_read,
            compressing.cards_read
        ),
        (files, files, cards)
    );
}

/// A record's id from the id column is the `id` of its JSON, plain, non-ASCII or
/// escaped (an escaped one is read from the JSON), for every record of the bundled data.
#[test]
fn record_ids_are_the_ids_of_the_json() {
    let dir = TempDir::new("ids");
    base(&dir);
    dir.write(
        "c/cards/b.json",
        r#"[{"id":"q\"uote","expansion_id":"e1"},{"id":"ザé-1","expansion_id":"e1"},{"name":"x","id":"late","expansion_id":"e1"}]"#,
    );
    let engine = Engine::open(dir.path()).unwrap();
    let mut ids: Vec<String> = (0..5)
        .map(|i| {
            engine
                .catalog("c")
                .unwrap()
                .cards()
                .record_id(i)
                .into_owned()
        })
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b", "late", "q\"uote", "ザé-1"]);

    let engine = Engine::open(data_dir()).unwrap();
    for catalog in engine.catalogs() {
        let name = catalog.name();
        for collection in [catalog.cards(), catalog.expansions()] {
            for i in 0..collection.len() as u32 {
                let json: serde_json::Value = serde_json::from_str(&collection.doc(i)).unwrap();
                assert_eq!(
                    collection.record_id(i),
                    json["id"].as_str().unwrap(),
                    "{name} {i}"
                );
            }
        }
    }
}

#[test]
fn null_variants_printings_and_prices_count_as_absent() {
    let dir = TempDir::new("nulls");
    dir.write("c/expansions/sets.json", r#"[{"id":"e1"},{"id":"e2"}]"#);
    dir.write(
        "c/cards/a.json",
        r#"[{"id":"a","expansion_id":"e1","variants":null,"printings":null,"translation":null},
            {"id":"b","expansion_id":"e1","variants":[{"printings":null,"prices":null}]},
            {"id":"c","expansion_id":"e1","variants":[{"printings":["e2"],"prices":[{"condition":"NM","market":3}]}]}]"#,
    );
    let engine = Engine::open(dir.path()).unwrap();
    let catalog = engine.catalog("c").unwrap();
    let ids = |q: &str| {
        let page = catalog
            .search(&cardex::SearchRequest::new(q).page_size(10))
            .unwrap();
        support::page_ids(catalog, &page)
    };
    assert_eq!(ids("variants.prices:(condition:NM AND market>=1)"), ["c"]);
    assert_eq!(ids("-variants.prices.market:*"), ["a", "b"]);
    assert_eq!(ids("printings:e1"), ["a", "b", "c"]);
    assert_eq!(ids("printings:e2"), ["c"]);
    // Served as given.
    let a = catalog.card("a", &cardex::ItemRequest::default()).unwrap();
    assert!(a.json().contains(r#""variants":null"#), "{}", a.json());
    // Every variant has printings (spec 2.2): one without is printed in its card's
    // expansion, as change detection already counts it.
    let b = catalog.card("b", &cardex::ItemRequest::default()).unwrap();
    let b: serde_json::Value = serde_json::from_str(b.json()).unwrap();
    assert_eq!(b["variants"][0]["printings"], serde_json::json!(["e1"]));
    assert_eq!(ids("variants.printings:e1"), ["b"]);
    assert_eq!(ids("variants:(printings:e2 AND prices:(market>=1))"), ["c"]);
}

/// An error's message already holds its cause's, so it has no `source()`: a reporter that
/// prints the chain of causes prints each message once.
#[test]
fn an_error_message_is_whole_and_not_repeated_as_a_source() {
    use std::error::Error as _;
    let dir = TempDir::new("whole-message");
    let err = Engine::open(dir.path().join("missing")).unwrap_err();
    assert!(matches!(err.kind(), LoadErrorKind::Io(_)), "{err}");
    assert!(err.to_string().contains("No such file"), "{err}");
    assert!(err.source().is_none());
    let wrapped = cardex::Error::from(err);
    assert!(wrapped.source().is_none());
    let parse = cardex::Error::from(cardex::query::parse("name:\"x").unwrap_err());
    assert!(parse.source().is_none(), "{parse}");
}
