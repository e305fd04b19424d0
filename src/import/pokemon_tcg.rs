//! The Pokémon TCG API's public data set — `github.com/PokemonTCG/pokemon-tcg-data`:
//! `sets/en.json` (one array of sets) and `cards/en/<set id>.json` (one array of cards
//! per set), camelCase fields — into a cardex snapshot with one catalog (`pokemon` by
//! default):
//!
//! - every key of every record, at every depth, in snake_case (`nationalPokedexNumbers` →
//!   `national_pokedex_numbers`, `1stEditionHolofoil` → `1st_edition_holofoil`), nothing
//!   dropped; a set's `ptcgoCode` becomes `code`, as cardex expansions name it;
//! - sets become expansions, with `language: "English"` and `language_code: "EN"`;
//! - cards get `expansion_id` (their file's set), `language`, `language_code`, and an
//!   `expansion` object summarising their set (`id`, `name`, `series`, `code`, `total`,
//!   `printed_total`, `language`, `language_code`, `release_date`) — the Pokémon TCG API
//!   served the set inside each card as `set`, so `expansion.series:...` and
//!   `order_by=-expansion.release_date` take the place of `set.series:...` and
//!   `orderBy=-set.releaseDate`; the set's other fields are its expansion's, joined by
//!   `expansion_id` (`expansion.legalities.standard:legal`, see
//!   [`crate::Catalog::joins_expansions`]).
//!
//! ```no_run
//! use cardex::import::pokemon_tcg::{import, Options};
//! let stats = import(
//!     "../shared/data/pokemon-tcg-data".as_ref(),
//!     "snapshots/ptcg".as_ref(),
//!     &Options::default(),
//!     &|p| eprintln!("{}/{} sets", p.files_done, p.files),
//! )?;
//! println!("{} cards in {} sets", stats.cards, stats.sets);
//! # Ok::<(), cardex::import::ImportError>(())
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::value::RawValue;

use super::{records_file, ImportError, ImportErrorKind, Progress, SnapshotWriter};
use crate::fxhash::FxHashMap;
use crate::json::transcode::{Kind, Transcoder};
use crate::json::walk::string_value;
use crate::json::write::write_str;
use crate::naming::snake_case;
use crate::par;

/// Import options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The catalog's name in the snapshot (its folder).
    pub catalog: String,
    /// Replace the output if it exists.
    pub force: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            catalog: "pokemon".to_string(),
            force: false,
        }
    }
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Sets (expansions) written.
    pub sets: usize,
    /// Cards written.
    pub cards: usize,
}

/// The language and language code of the data set's records (its files are all English),
/// as JSON.
const LANGUAGE: (&[u8], &[u8]) = (b"\"English\"", b"\"EN\"");

/// The fields of a set repeated in each of its cards' `expansion` object.
const EXPANSION_SUMMARY: [&str; 9] = [
    "id",
    "name",
    "series",
    "code",
    "total",
    "printed_total",
    "language",
    "language_code",
    "release_date",
];

/// snake_case keys, `ptcgoCode` named `code`.
fn set_key(key: &str) -> String {
    if key == "ptcgoCode" {
        "code".to_string()
    } else {
        snake_case(key)
    }
}

/// Imports the data set at `src` into a new snapshot at `out`, calling `progress` after each
/// cards file. Nothing is written at `out` unless the whole import succeeds.
///
/// # Errors
///
/// An [`ImportError`] naming the file and the record for anything that cannot be read or
/// converted; [`ImportErrorKind::OutputExists`] when `out` exists and `force` is off.
pub fn import(
    src: &Path,
    out: &Path,
    options: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Stats, ImportError> {
    if !crate::load::valid_catalog_name(&options.catalog) {
        return Err(ImportError::new(
            None,
            ImportErrorKind::InvalidCatalogName {
                name: options.catalog.clone(),
            },
        ));
    }
    let sets_path = src.join("sets").join("en.json");
    let cards_dir = src.join("cards").join("en");
    if !sets_path.is_file() || !cards_dir.is_dir() {
        // What is wrong, then what is expected.
        let wrong = if !src.exists() {
            "it does not exist".to_string()
        } else if !src.is_dir() {
            "it is not a folder".to_string()
        } else {
            let missing: Vec<&str> = [
                (!sets_path.is_file()).then_some("no file sets/en.json"),
                (!cards_dir.is_dir()).then_some("no folder cards/en"),
            ]
            .into_iter()
            .flatten()
            .collect();
            missing.join(" and ")
        };
        let expected = format!(
            "{wrong}; expected {} with sets/en.json and cards/en/<set>.json (a checkout of PokemonTCG/pokemon-tcg-data)",
            src.display()
        );
        return Err(ImportError::new(
            Some(src),
            ImportErrorKind::Layout { expected },
        ));
    }
    if options.force {
        super::check_replaceable(out, &options.catalog, src)?;
    }
    let writer = SnapshotWriter::new(out, options.force)?;

    let sets_text = read_text(&sets_path)?;
    let mut transcoder = Transcoder::renaming(set_key);
    let mut expansions = Vec::new();
    let mut summaries: FxHashMap<String, Vec<u8>> = FxHashMap::default();
    for (index, raw) in records(&sets_path, &sets_text)?.iter().enumerate() {
        let language: [(&'static str, &[u8]); 2] =
            [("language", LANGUAGE.0), ("language_code", LANGUAGE.1)];
        let (id, json) = convert(&mut transcoder, raw.get(), &language).map_err(|kind| {
            let text = crate::json::without_bom(&sets_text);
            at_record(&sets_path, text, index, raw.get(), kind)
        })?;
        let summary = summary(&json);
        if summaries.insert(id.clone(), summary).is_some() {
            return Err(
                ImportError::new(Some(&sets_path), ImportErrorKind::DuplicateSet { id })
                    .at_record(index, None),
            );
        }
        expansions.push(json);
    }

    let mut files: Vec<PathBuf> = Vec::new();
    for entry in fs::read_dir(&cards_dir).map_err(|e| ImportError::io(&cards_dir, e))? {
        let path = entry.map_err(|e| ImportError::io(&cards_dir, e))?.path();
        // Hidden files (an editor's, `.x.json`) are not data, here as for the loader,
        // which would skip the snapshot file one would become.
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if path.extension().is_some_and(|e| e == "json") && !hidden {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(ImportError::new(
            Some(src),
            ImportErrorKind::Layout {
                expected: format!(
                    "no cards file in {}; expected cards/en/<set>.json files",
                    cards_dir.display()
                ),
            },
        ));
    }
    for path in &files {
        let set = stem(path);
        if !summaries.contains_key(set) {
            return Err(ImportError::new(
                Some(path),
                ImportErrorKind::UnknownSet {
                    id: set.to_string(),
                },
            ));
        }
    }

    let done = AtomicUsize::new(0);
    let cards = AtomicUsize::new(0);
    let converted = par::map(files.iter().collect(), |path: &PathBuf| {
        let set = stem(path);
        let text = read_text(path)?;
        let mut transcoder = Transcoder::renaming(snake_case);
        let mut set_id = Vec::new();
        write_str(set, &mut set_id);
        let added: [(&'static str, &[u8]); 4] = [
            ("expansion_id", &set_id),
            ("language", LANGUAGE.0),
            ("language_code", LANGUAGE.1),
            ("expansion", &summaries[set]),
        ];
        let mut out = Vec::new();
        for (index, raw) in records(path, &text)?.iter().enumerate() {
            let (_, json) = convert(&mut transcoder, raw.get(), &added).map_err(|kind| {
                at_record(
                    path,
                    crate::json::without_bom(&text),
                    index,
                    raw.get(),
                    kind,
                )
            })?;
            out.push(json);
        }
        let count = out.len();
        writer.write_converted(
            &format!("{}/cards/{set}.json", options.catalog),
            &records_file(&out),
            path,
        )?;
        progress(Progress {
            files_done: done.fetch_add(1, Ordering::Relaxed) + 1,
            files: files.len(),
            records: cards.fetch_add(count, Ordering::Relaxed) + count,
        });
        Ok::<usize, ImportError>(count)
    });
    let mut total = 0;
    for result in converted {
        total += result?;
    }

    writer.write_converted(
        &format!("{}/expansions/en.json", options.catalog),
        &records_file(&expansions),
        &sets_path,
    )?;
    let mut meta = Vec::new();
    meta.extend_from_slice(b"{\"name\":");
    write_str(&options.catalog, &mut meta);
    meta.extend_from_slice(b",\"title\":\"Pok\xc3\xa9mon TCG\",\"default_language\":\"en\",\"source\":\"pokemon-tcg-data\"}\n");
    writer.write(&format!("{}/catalog.json", options.catalog), &meta)?;
    writer.commit()?;
    Ok(Stats {
        sets: expansions.len(),
        cards: total,
    })
}

/// A file's name without `.json`: the set id of a cards file.
fn stem(path: &Path) -> &str {
    path.file_stem().and_then(|s| s.to_str()).unwrap_or("")
}

/// A source file's text. Anything but a file (links followed) is refused, as the loader
/// refuses it: reading a pipe or a device would wait or never end.
fn read_text(path: &Path) -> Result<String, ImportError> {
    let meta = fs::metadata(path).map_err(|e| ImportError::io(path, e))?;
    if !meta.is_file() {
        return Err(ImportError::new(
            Some(path),
            ImportErrorKind::Layout {
                expected: "a file of JSON, not a folder, a pipe or a device".to_string(),
            },
        ));
    }
    let bytes = fs::read(path).map_err(|e| ImportError::io(path, e))?;
    String::from_utf8(bytes).map_err(|_| ImportError::new(Some(path), ImportErrorKind::InvalidUtf8))
}

/// The records of a file: a JSON array.
fn records<'t>(path: &Path, text: &'t str) -> Result<Vec<&'t RawValue>, ImportError> {
    let text = crate::json::without_bom(text);
    match crate::json::first_value_kind(text) {
        Some(crate::json::transcode::Kind::Array) | None => {}
        Some(kind) => {
            return Err(ImportError::new(
                Some(path),
                ImportErrorKind::NotAnArray { found: kind.name() },
            ))
        }
    }
    serde_json::from_str(text).map_err(|e| {
        let (line, column) = crate::json::error_position(text, &e);
        let kind = ImportErrorKind::Json {
            line,
            column,
            message: crate::json::error_message(&e),
        };
        ImportError::new(Some(path), kind)
    })
}

/// The error for record `index` of `path`, whose text is `text` and the record's `raw`
/// (a slice of it), with its id when the source text shows a non-empty one, and a place in
/// the record given as the place in the file.
fn at_record(
    path: &Path,
    text: &str,
    index: usize,
    raw: &str,
    mut kind: ImportErrorKind,
) -> ImportError {
    if let ImportErrorKind::Json { line, column, .. } = &mut kind {
        let offset = (raw.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        if let Some(before) = text.get(..offset) {
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            if *line == 1 {
                // Bytes, as serde_json counts columns.
                *column += before.len() - line_start;
            }
            *line += before.matches('\n').count();
        }
    }
    let id = crate::json::record_id(raw);
    ImportError::new(Some(path), kind).at_record(index, id.as_deref())
}

/// Converts one record: keys renamed by the transcoder, `added` members appended (a
/// member the record already has must hold the same value, or `null`, which the added
/// value replaces in place). Returns the id and the JSON.
fn convert(
    t: &mut Transcoder,
    raw: &str,
    added: &[(&'static str, &[u8])],
) -> Result<(String, Vec<u8>), ImportErrorKind> {
    t.record(raw).map_err(|e| {
        let (line, column) = crate::json::error_position(raw, &e);
        ImportErrorKind::Json {
            line,
            column,
            message: crate::json::error_message(&e),
        }
    })?;
    let kind = t.layout.kind.unwrap_or(Kind::Null);
    if kind != Kind::Object {
        return Err(ImportErrorKind::NotAnObject { found: kind.name() });
    }
    let member = |name: &str| {
        t.layout
            .members
            .iter()
            .rev()
            .find(|m| &t.out[m.key.clone()] == name.as_bytes())
    };
    let id = match member("id") {
        Some(m) if m.kind == Kind::String => {
            string_value(std::str::from_utf8(&t.out[m.value.clone()]).unwrap_or_default())
                .into_owned()
        }
        _ => String::new(),
    };
    if id.is_empty() {
        return Err(ImportErrorKind::MissingId);
    }
    // A field the record holds as `null` counts as absent (as everywhere): its value is
    // replaced where it stands, and a field it does not hold is appended.
    let mut replaced = Vec::new();
    let mut appended = Vec::new();
    for &(field, value) in added {
        match member(field) {
            Some(m) if m.kind != Kind::Null => {
                if t.out[m.value.clone()] != *value {
                    return Err(ImportErrorKind::Conflict { field });
                }
            }
            Some(m) => replaced.push((m.value.clone(), value)),
            None => appended.push((field, value)),
        }
    }
    let mut json = t.out.clone();
    replaced.sort_unstable_by_key(|(range, _)| std::cmp::Reverse(range.start));
    for (range, value) in replaced {
        json.splice(range, value.iter().copied());
    }
    let close = json.pop();
    debug_assert_eq!(close, Some(b'}'));
    for (field, value) in appended {
        if json.len() > 1 {
            json.push(b',');
        }
        write_str(field, &mut json);
        json.push(b':');
        json.extend_from_slice(value);
    }
    json.push(b'}');
    Ok((id, json))
}

/// The `expansion` object of a set's cards: a few of the converted set's fields.
fn summary(set: &[u8]) -> Vec<u8> {
    let value: serde_json::Value = serde_json::from_slice(set).unwrap_or_default();
    let mut out = b"{".to_vec();
    for field in EXPANSION_SUMMARY {
        let v = value.get(field).filter(|v| !v.is_null()).cloned();
        if let Some(v) = v {
            if out.len() > 1 {
                out.push(b',');
            }
            write_str(field, &mut out);
            out.push(b':');
            out.extend_from_slice(v.to_string().as_bytes());
        }
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cardex-import-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn source(root: &Path) {
        write(
            root,
            "sets/en.json",
            r#"[{"id":"s1","name":"Base","series":"Base","printedTotal":2,"total":2,"ptcgoCode":"BS","releaseDate":"1999/01/09","legalities":{"unlimited":"Legal"},"images":{"symbol":"x"}}]"#,
        );
        write(
            root,
            "cards/en/s1.json",
            r#"[{"id":"s1-1","name":"Pikachu","hp":"60","nationalPokedexNumbers":[25],"attacks":[{"name":"Gnaw","convertedEnergyCost":1}],"tcgplayer":{"prices":{"1stEditionHolofoil":{"directLow":null}}}},
                {"id":"s1-2","name":"Raichu","retreatCost":["Colorless"]}]"#,
        );
    }

    #[test]
    fn converts_keys_and_adds_fields() {
        let src = temp("ok-src");
        let out = temp("ok-out");
        source(&src);
        let stats = import(&src, &out, &Options::default(), &|_| {}).unwrap();
        assert_eq!(stats, Stats { sets: 1, cards: 2 });
        let cards = fs::read_to_string(out.join("pokemon/cards/s1.json")).unwrap();
        assert_eq!(
            cards,
            "[\n{\"id\":\"s1-1\",\"name\":\"Pikachu\",\"hp\":\"60\",\"national_pokedex_numbers\":[25],\"attacks\":[{\"name\":\"Gnaw\",\"converted_energy_cost\":1}],\"tcgplayer\":{\"prices\":{\"1st_edition_holofoil\":{\"direct_low\":null}}},\"expansion_id\":\"s1\",\"language\":\"English\",\"language_code\":\"EN\",\"expansion\":{\"id\":\"s1\",\"name\":\"Base\",\"series\":\"Base\",\"code\":\"BS\",\"total\":2,\"printed_total\":2,\"language\":\"English\",\"language_code\":\"EN\",\"release_date\":\"1999/01/09\"}},\n{\"id\":\"s1-2\",\"name\":\"Raichu\",\"retreat_cost\":[\"Colorless\"],\"expansion_id\":\"s1\",\"language\":\"English\",\"language_code\":\"EN\",\"expansion\":{\"id\":\"s1\",\"name\":\"Base\",\"series\":\"Base\",\"code\":\"BS\",\"total\":2,\"printed_total\":2,\"language\":\"English\",\"language_code\":\"EN\",\"release_date\":\"1999/01/09\"}}\n]\n"
        );
        let sets = fs::read_to_string(out.join("pokemon/expansions/en.json")).unwrap();
        assert!(
            sets.contains("\"code\":\"BS\",\"release_date\":\"1999/01/09\""),
            "{sets}"
        );
        assert!(
            sets.contains("\"printed_total\":2") && sets.contains("\"language_code\":\"EN\""),
            "{sets}"
        );
        let engine = crate::Engine::open(&out).unwrap();
        assert_eq!(engine.catalog("pokemon").unwrap().cards().len(), 2);
        fs::remove_dir_all(&src).unwrap();
        fs::remove_dir_all(&out).unwrap();
    }

    /// An added field the record holds as `null` takes the added value where it stands:
    /// one member, and the output loads.
    #[test]
    fn an_added_field_held_as_null_is_filled_in_place() {
        let src = temp("null-src");
        let out = temp("null-out");
        write(
            &src,
            "sets/en.json",
            r#"[{"id":"s1","name":"Base","language":null,"releaseDate":"1999/01/09"}]"#,
        );
        write(
            &src,
            "cards/en/s1.json",
            r#"[{"id":"s1-1","expansionId":null,"name":"Pikachu","languageCode":null,"expansion":null}]"#,
        );
        import(&src, &out, &Options::default(), &|_| {}).unwrap();
        let cards = fs::read_to_string(out.join("pokemon/cards/s1.json")).unwrap();
        assert!(
            cards.starts_with("[\n{\"id\":\"s1-1\",\"expansion_id\":\"s1\",\"name\":\"Pikachu\",\"language_code\":\"EN\",\"expansion\":{\"id\":\"s1\","),
            "{cards}"
        );
        let sets = fs::read_to_string(out.join("pokemon/expansions/en.json")).unwrap();
        assert!(
            sets.starts_with("[\n{\"id\":\"s1\",\"name\":\"Base\",\"language\":\"English\","),
            "{sets}"
        );
        // Loads: the loader refuses an object with a key twice.
        let engine = crate::Engine::open(&out).unwrap();
        assert_eq!(engine.catalog("pokemon").unwrap().cards().len(), 1);
        fs::remove_dir_all(&src).unwrap();
        fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn refuses_what_it_cannot_convert_and_writes_nothing() {
        let src = temp("bad-src");
        let out = temp("bad-out");
        source(&src);
        write(
            &src,
            "cards/en/s1.json",
            r#"[{"id":"s1-1","fooBar":1,"foo_bar":2}]"#,
        );
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        let shown = err.to_string().replace(&format!("{}/", src.display()), "");
        assert_eq!(shown, "cards/en/s1.json: record 0 (id `s1-1`): cannot convert: two keys of one object both become `foo_bar` (line 1, column 34)");
        // Columns are bytes, as serde_json counts them, past a byte order mark: `é` is
        // two, the mark none.
        write(
            &src,
            "cards/en/s1.json",
            "\u{FEFF}[{\"id\":\"s1-1\",\"name\":\"é\",\"fooBar\":1,\"foo_bar\":2}]",
        );
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(err.to_string().ends_with("(line 1, column 46)"), "{err}");
        // The place is the file's, for a record further down too.
        write(
            &src,
            "cards/en/s1.json",
            "[\n  {\"id\": \"s1-1\"},\n  {\"id\": \"s1-2\",\n   \"fooBar\": 1, \"foo_bar\": 2}\n]",
        );
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("record 1 (id `s1-2`): cannot convert: two keys of one object both become `foo_bar` (line 4, column 25)"),
            "{err}"
        );
        assert!(!out.exists(), "nothing written");
        let parent = out.parent().unwrap();
        let leftovers = fs::read_dir(parent)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains("cardex-import-bad-out")
            })
            .count();
        assert_eq!(leftovers, 0, "no staging folder left");

        write(&src, "cards/en/s1.json", r#"[{"name":"no id"}]"#);
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(matches!(err.kind(), ImportErrorKind::MissingId));
        write(
            &src,
            "cards/en/s1.json",
            r#"[{"id":"s1-1","expansion_id":"zz"}]"#,
        );
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(matches!(
            err.kind(),
            ImportErrorKind::Conflict {
                field: "expansion_id"
            }
        ));
        write(&src, "cards/en/s1.json", "[]");
        write(&src, "cards/en/zz.json", "[]");
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(
            matches!(err.kind(), ImportErrorKind::UnknownSet { .. }),
            "{err}"
        );
        fs::remove_file(src.join("cards/en/zz.json")).unwrap();
        write(&src, "cards/en/s1.json", "{\"a\": 1}");
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(matches!(
            err.kind(),
            ImportErrorKind::NotAnArray { found: "an object" }
        ));
        write(&src, "cards/en/s1.json", "[1,]");
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("s1.json:1:4: invalid JSON: trailing comma"),
            "{err}"
        );
        // A byte no JSON value starts with is a syntax error at its place.
        write(&src, "cards/en/s1.json", "// x\n[]");
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("s1.json:1:1: invalid JSON: expected value"),
            "{err}"
        );
        // A byte order mark is ignored; a hidden file is not data (the loader would skip
        // the snapshot file it became), so `.zz.json` names no unknown set.
        write(
            &src,
            "sets/en.json",
            &format!(
                "\u{FEFF}{}",
                fs::read_to_string(src.join("sets/en.json")).unwrap()
            ),
        );
        write(&src, "cards/en/s1.json", "\u{FEFF}[]");
        write(&src, "cards/en/.zz.json", "[{\"id\":\"zz-1\"}]");
        import(&src, &out, &Options::default(), &|_| {}).unwrap();
        assert!(!out.join("pokemon/cards/.zz.json").exists());
        fs::remove_dir_all(&out).unwrap();
        fs::remove_dir_all(&src).unwrap();
    }

    /// A source that is not the data set says what is wrong with it.
    #[test]
    fn a_wrong_source_says_what_is_missing() {
        let src = temp("layout-src");
        let out = temp("layout-out");
        let says = |src: &Path| {
            import(src, &out, &Options::default(), &|_| {})
                .unwrap_err()
                .to_string()
        };
        assert!(says(&src).contains("it does not exist"));
        fs::write(&src, "x").unwrap();
        assert!(says(&src).contains("it is not a folder"));
        fs::remove_file(&src).unwrap();
        write(&src, "sets/en.json", "[]");
        let err = says(&src);
        assert!(
            err.contains("no folder cards/en") && !err.contains("no file sets/en.json"),
            "{err}"
        );
        fs::create_dir_all(src.join("cards/en")).unwrap();
        assert!(says(&src).contains("no cards file in"), "{}", says(&src));
        assert!(!out.exists());
        fs::remove_dir_all(&src).unwrap();
        // A pipe where a file should be is refused, not read (which would wait forever).
        #[cfg(unix)]
        {
            source(&src);
            let pipe = src.join("cards/en/s1.json");
            fs::remove_file(&pipe).unwrap();
            let made = std::process::Command::new("mkfifo").arg(&pipe).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo");
            let err = says(&src);
            assert!(
                err.contains("s1.json") && err.contains("not a folder, a pipe or a device"),
                "{err}"
            );
            assert!(!out.exists());
            fs::remove_dir_all(&src).unwrap();
        }
    }

    /// A failed import leaves no folder it made on the way to the output, and an import
    /// removes the copies that killed ones left.
    #[test]
    fn a_failed_import_leaves_no_folder_and_a_killed_ones_copy_goes() {
        let src = temp("leftover-src");
        let root = temp("leftover-out");
        source(&src);
        write(&src, "cards/en/s1.json", "[{\"id\":");
        let out = root.join("a/b/out");
        assert!(import(&src, &out, &Options::default(), &|_| {}).is_err());
        assert!(!root.exists(), "a folder made for the output stayed");
        // A folder made for it that holds something else by then stays, with it.
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join("a/other.txt"), "someone's").unwrap();
        assert!(import(&src, &out, &Options::default(), &|_| {}).is_err());
        assert!(root.join("a/other.txt").exists() && !root.join("a/b").exists());
        fs::remove_dir_all(&root).unwrap();
        // A copy that an import killed before it finished left (its lock free), beside one
        // that an import running holds.
        source(&src);
        let stale = root.join(".out.importing-4294967290-1f");
        fs::create_dir_all(stale.join("pokemon")).unwrap();
        fs::write(stale.join(".lock"), "").unwrap();
        let running = root.join(".out.importing-4294967291-2e");
        fs::create_dir_all(&running).unwrap();
        let held = fs::File::create(running.join(".lock")).unwrap();
        held.lock().unwrap();
        import(&src, &root.join("out"), &Options::default(), &|_| {}).unwrap();
        assert!(!stale.exists());
        assert!(running.exists());
        assert!(!root.join("out/.lock").exists());
        drop(held);
        fs::remove_dir_all(&running).unwrap();
        assert!(root.join("out/pokemon/cards/s1.json").exists());
        fs::remove_dir_all(&root).unwrap();
        fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn an_old_output_moved_aside_stays_while_it_is_the_only_copy() {
        let root = temp("aside");
        let out = root.join("out");
        let aside = root.join(".out.replaced-4294967290-3f");
        fs::create_dir_all(aside.join("pokemon")).unwrap();
        // Not of an import's naming: another output's, or the user's.
        let others = [
            root.join(".out.replaced-x"),
            root.join(".out.replaced-1-2f.bak"),
        ];
        for other in &others {
            fs::create_dir_all(other).unwrap();
        }
        drop(crate::import::SnapshotWriter::new(&out, false).unwrap());
        assert!(aside.exists(), "the only copy of the output went");
        fs::create_dir_all(&out).unwrap();
        drop(crate::import::SnapshotWriter::new(&out, true).unwrap());
        assert!(!aside.exists(), "superseded, it stayed");
        assert!(others.iter().all(|o| o.exists()));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_writer_writes_only_inside_the_snapshot() {
        let out = temp("writer-out");
        let writer = crate::import::SnapshotWriter::new(&out, false).unwrap();
        for rel in [
            "../escaped.json",
            "/tmp/escaped.json",
            "a/../../b.json",
            "./a",
            "",
        ] {
            let err = writer.write(rel, b"[]").unwrap_err();
            assert!(
                matches!(err.kind(), ImportErrorKind::Layout { .. }),
                "{rel}: {err}"
            );
        }
        writer.write("pokemon/cards/a.json", b"[]").unwrap();
        drop(writer);
        assert!(!out.exists());
        assert!(!out.parent().unwrap().join("escaped.json").exists());
    }

    #[test]
    fn an_existing_output_needs_force() {
        let src = temp("force-src");
        let out = temp("force-out");
        source(&src);
        fs::create_dir_all(out.join("pokemon")).unwrap();
        fs::write(out.join("pokemon/old.txt"), "old").unwrap();
        fs::write(out.join(".hidden"), "old").unwrap();
        let err = import(&src, &out, &Options::default(), &|_| {}).unwrap_err();
        assert!(matches!(err.kind(), ImportErrorKind::OutputExists));
        assert!(out.join("pokemon/old.txt").exists());
        // A link that leads nowhere is there too.
        #[cfg(unix)]
        {
            let link = temp("force-link");
            std::os::unix::fs::symlink(temp("force-nowhere"), &link).unwrap();
            let err = import(&src, &link, &Options::default(), &|_| {}).unwrap_err();
            assert!(matches!(err.kind(), ImportErrorKind::OutputExists), "{err}");
            fs::remove_file(&link).unwrap();
        }
        let options = Options {
            force: true,
            ..Options::default()
        };
        // A hidden entry (a `.git`) is not replaced either.
        let err = import(&src, &out, &options, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("(.hidden)"), "{err}");
        fs::remove_file(out.join(".hidden")).unwrap();
        import(&src, &out, &options, &|_| {}).unwrap();
        assert!(!out.join("pokemon/old.txt").exists());
        assert!(out.join("pokemon/cards/s1.json").exists());
        // An output that a killed import replaced goes once the output is there again; a
        // sibling of a name of the user's (`.out.old`) is not the import's to delete.
        let parent = out.parent().unwrap();
        let name = out.file_name().unwrap().to_str().unwrap();
        fs::create_dir_all(parent.join(format!(".{name}.replaced-4294967290-1f/x"))).unwrap();
        fs::create_dir_all(parent.join(format!(".{name}.old/x"))).unwrap();
        import(&src, &out, &options, &|_| {}).unwrap();
        assert!(!parent
            .join(format!(".{name}.replaced-4294967290-1f"))
            .exists());
        assert!(parent.join(format!(".{name}.old/x")).exists());
        fs::remove_dir_all(parent.join(format!(".{name}.old"))).unwrap();
        // Nor does an output that is a file stand in the way; nothing is left beside the
        // output after.
        fs::create_dir_all(parent.join(format!(".{name}.replaced-4294967290-2f/x"))).unwrap();
        fs::remove_dir_all(&out).unwrap();
        fs::write(&out, "a file").unwrap();
        import(&src, &out, &options, &|_| {}).unwrap();
        assert!(out.join("pokemon/cards/s1.json").exists());
        let left: Vec<String> = fs::read_dir(parent)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!(".{name}.")))
            .collect();
        assert_eq!(
            left,
            Vec::<String>::new(),
            "the killed import's copy is gone too"
        );
        // `--force` refuses to delete the source, or another catalog beside this one.
        let err = import(&src, &src, &options, &|_| panic!("converted")).unwrap_err();
        assert!(
            matches!(err.kind(), ImportErrorKind::ReplaceRefused { .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("the source being imported"),
            "{err}"
        );
        let err = import(&src, parent, &options, &|_| panic!("converted"));
        assert!(err.is_err());
        assert!(src.join("sets/en.json").exists());
        fs::create_dir_all(out.join("lorcana/cards")).unwrap();
        fs::write(out.join("notes.txt"), "mine").unwrap();
        let err = import(&src, &out, &options, &|_| panic!("converted")).unwrap_err();
        assert!(
            err.to_string()
                .contains("what it holds besides the catalog `pokemon` (lorcana, notes.txt)"),
            "{err}"
        );
        assert!(out.join("lorcana/cards").exists() && out.join("notes.txt").exists());
        fs::remove_dir_all(out.join("lorcana")).unwrap();
        fs::remove_file(out.join("notes.txt")).unwrap();
        // A catalog name no folder can have is refused before anything is converted.
        let bad = Options {
            catalog: "Bad Name".into(),
            force: true,
        };
        let err = import(&src, &out, &bad, &|_| panic!("converted")).unwrap_err();
        assert!(
            err.to_string().contains("`Bad Name` cannot name a catalog"),
            "{err}"
        );
        fs::remove_dir_all(&src).unwrap();
        fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_conversion_the_loader_would_refuse_writes_nothing_and_keeps_the_old_output() {
        let src = temp("unloadable-src");
        let out = temp("unloadable-out");
        source(&src);
        import(&src, &out, &Options::default(), &|_| {}).unwrap();
        // A second set whose file repeats a card id of the first: each file converts,
        // but the snapshot as a whole breaks the loader's unique-id rule.
        write(
            &src,
            "sets/en.json",
            r#"[{"id":"s1","name":"Base","releaseDate":"1999/01/09"},{"id":"s2","name":"Jungle","releaseDate":"1999/06/16"}]"#,
        );
        write(
            &src,
            "cards/en/s2.json",
            r#"[{"id":"s1-1","name":"Pikachu"}]"#,
        );
        let options = Options {
            force: true,
            ..Options::default()
        };
        let err = import(&src, &out, &options, &|_| {}).unwrap_err();
        let ImportErrorKind::Unloadable(load) = err.kind() else {
            panic!("expected Unloadable, got {err}");
        };
        assert!(
            matches!(load.kind(), crate::LoadErrorKind::DuplicateId { .. }),
            "{load}"
        );
        assert!(
            err.to_string()
                .contains("the converted snapshot would not load, so nothing was written"),
            "{err}"
        );
        // It names the source files (their records are the converted ones, in order), not
        // the staging copies, which are gone.
        assert_eq!(
            load.path(),
            Some(src.join("cards/en/s2.json").as_path()),
            "{err}"
        );
        assert!(
            err.to_string().contains(&format!(
                "record 0 of {} has it too",
                src.join("cards/en/s1.json").display()
            )),
            "{err}"
        );
        assert!(!err.to_string().contains(".importing-"), "{err}");
        let engine = crate::Engine::open(&out).expect("the old output still loads");
        assert_eq!(engine.catalog("pokemon").unwrap().cards().len(), 2);
        assert!(!out.join("pokemon/cards/s2.json").exists());
        fs::remove_dir_all(&src).unwrap();
        fs::remove_dir_all(&out).unwrap();
    }
}
