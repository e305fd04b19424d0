//! Reading a snapshot folder into catalogs (docs/spec/contract.md, "Snapshots").
//!
//! ```text
//! <snapshot>/
//!   <catalog>/
//!     catalog.json        optional: {"name": "...", "title": "...", ...}
//!     expansions/*.json   each file one JSON array of expansion records
//!     cards/*.json        each file one JSON array of card records
//! ```
//!
//! Files are read and their records prepared in parallel (rayon, over files and over the
//! records of each file); then, per catalog, ids are checked, records put in default order
//! and the collections built. Every step keeps input order, so the result does not depend
//! on file order on disk or on the thread count. The first rule a snapshot breaks, in file
//! order then record order, refuses it whole.

mod error;
mod order;
mod record;

pub(crate) use error::Shown;
pub use error::{LoadError, LoadErrorKind, RecordAt};
pub(crate) use record::Prepared;

use std::fs;
use std::path::{Path, PathBuf};

use order::{order_cards, order_expansions};
pub(crate) use record::Chunk;
use record::{ChunkOut, Preparer, RecordKind, Str};

use crate::fxhash::FxHashMap;
use crate::json::scan::skip_whitespace;
use crate::par;
use crate::store::{Batch, Collection};

/// A catalog as loaded: its name, its optional `catalog.json`, its expansions and cards.
#[derive(Debug)]
pub(crate) struct LoadedCatalog {
    pub name: String,
    /// `catalog.json`, compact, when present.
    pub meta: Option<Box<str>>,
    pub expansions: Collection,
    pub cards: Collection,
}

/// The prepared records of one file, with its path.
type FileRecords = (PathBuf, Vec<Prepared>);

/// The records of one collection, file by file, and the chunks holding their data.
#[derive(Default)]
pub(crate) struct Gathered {
    chunks: Vec<Chunk>,
    files: Vec<FileRecords>,
}

impl Gathered {
    fn add(&mut self, path: PathBuf, output: FileOutput) {
        let base = self.chunks.len() as u32;
        self.chunks.extend(output.chunks);
        let records = output
            .records
            .into_iter()
            .map(|r| Prepared {
                chunk: base + r.chunk,
                ..r
            })
            .collect();
        self.files.push((path, records));
    }

    /// A string of a record.
    fn get(&self, record: &Prepared, s: Str) -> Option<&str> {
        s.get(&self.chunks[record.chunk as usize].strings)
    }

    /// A string every record has (its id).
    fn str(&self, record: &Prepared, s: Str) -> &str {
        self.get(record, s).unwrap_or_default()
    }
}

/// What the store keeps of a collection's chunks.
fn batches(chunks: Vec<Chunk>) -> Vec<Batch> {
    chunks.into_iter().map(Chunk::into_batch).collect()
}

/// One file to read.
struct FileJob {
    catalog: usize,
    kind: RecordKind,
    path: PathBuf,
}

/// How far a load has come, as [`crate::Engine::open_with_progress`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadProgress {
    /// The record files of the snapshot.
    pub files: usize,
    /// The files read so far.
    pub files_read: usize,
    /// The card records read so far.
    pub cards_read: usize,
    /// Every file is read; the catalogs' orders and indexes are being built.
    pub indexing: bool,
    /// Every catalog is indexed; its records are being compressed (a compressed store,
    /// [`crate::StoreKind::Compressed`]).
    pub compressing: bool,
}

/// Loads every catalog of the snapshot at `root`.
pub(crate) fn load(root: &Path) -> Result<Vec<LoadedCatalog>, LoadError> {
    load_with_progress(root, &|_| {})
}

/// [`load`], telling `progress` after each file is read and once more when indexing
/// starts (called from the reading threads, in any order).
pub(crate) fn load_with_progress(
    root: &Path,
    progress: &(dyn Fn(LoadProgress) + Sync),
) -> Result<Vec<LoadedCatalog>, LoadError> {
    let metadata = fs::metadata(root).map_err(|e| LoadError::io(root, e))?;
    if !metadata.is_dir() {
        return Err(LoadError::new(Some(root), LoadErrorKind::NotADirectory));
    }
    let mut catalogs = Vec::new();
    for entry in sorted_entries(root)? {
        // Lossy, so that a name that is not UTF-8 is refused under a name the message shows.
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        match fs::metadata(&entry) {
            Ok(m) if m.is_dir() => {}
            // A file beside the catalogs (notes, a licence).
            Ok(_) => continue,
            // A link that leads nowhere may be a catalog: refused, not skipped.
            Err(e) => return Err(LoadError::io(&entry, e)),
        }
        // A folder with none of a catalog's entries is something else beside the catalogs
        // (or this is not a snapshot folder: the error below says so if nothing is left).
        // Only what is not there is absent: an entry that cannot be looked at (no
        // permission) is refused, not skipped.
        let mut holds = false;
        for part in ["cards", "expansions", "catalog.json"] {
            let path = entry.join(part);
            match fs::symlink_metadata(&path) {
                Ok(_) => holds = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LoadError::io(&path, e)),
            }
        }
        if !holds {
            continue;
        }
        if !valid_catalog_name(&name) {
            return Err(LoadError::new(
                Some(&entry),
                LoadErrorKind::InvalidCatalogName { name },
            ));
        }
        catalogs.push((name, entry));
    }
    if catalogs.is_empty() {
        return Err(LoadError::new(Some(root), LoadErrorKind::NoCatalogs));
    }

    let mut jobs = Vec::new();
    let mut metas = Vec::new();
    for (i, (name, dir)) in catalogs.iter().enumerate() {
        metas.push(read_meta(name, dir)?);
        for (kind, sub) in [
            (RecordKind::Expansion, "expansions"),
            (RecordKind::Card, "cards"),
        ] {
            let folder = dir.join(sub);
            // A catalog may lack either folder; one that is there must be a folder, and
            // each `.json` entry in it a file (a broken link, a folder named `x.json`, a
            // device): skipping them would serve a catalog short of their records.
            if !present(&folder, "folder", true)? {
                continue;
            }
            for path in sorted_entries(&folder)? {
                let json = path.extension().is_some_and(|e| e == "json");
                let hidden = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'));
                if !json || hidden {
                    continue;
                }
                present(&path, "file", false)?;
                jobs.push(FileJob {
                    catalog: i,
                    kind,
                    path,
                });
            }
        }
    }

    let files = jobs.len();
    let files_read = std::sync::atomic::AtomicUsize::new(0);
    let cards_read = std::sync::atomic::AtomicUsize::new(0);
    let texts: par::Pool<Vec<u8>> = par::Pool::default();
    let results = par::map(jobs, |job| {
        let mut text = texts.take();
        let records = read_file(&job.path, job.kind, &mut text);
        texts.give(text);
        let cards = match (&records, job.kind) {
            (Ok(output), RecordKind::Card) => output.records.len(),
            _ => 0,
        };
        use std::sync::atomic::Ordering::Relaxed;
        progress(LoadProgress {
            files,
            files_read: files_read.fetch_add(1, Relaxed) + 1,
            cards_read: cards_read.fetch_add(cards, Relaxed) + cards,
            indexing: false,
            compressing: false,
        });
        (job, records)
    });
    progress(LoadProgress {
        files,
        files_read: files,
        cards_read: cards_read.into_inner(),
        indexing: true,
        compressing: false,
    });

    let mut parts: Vec<(Gathered, Gathered)> =
        catalogs.iter().map(|_| Default::default()).collect();
    for (job, output) in results {
        let output = output?;
        let (expansions, cards) = &mut parts[job.catalog];
        let gathered = match job.kind {
            RecordKind::Expansion => expansions,
            RecordKind::Card => cards,
        };
        gathered.add(job.path, output);
    }

    // Lent to the duplicate-id checks and freed when the load ends (see `par::Pool`).
    let sort_scratch: par::Pool<Vec<(u64, u32)>> = par::Pool::default();
    let mut ordered = Vec::new();
    for ((name, _), (expansions, cards)) in catalogs.iter().zip(parts) {
        let expansion_records = order_expansions(&expansions, &sort_scratch)?;
        let ranks: FxHashMap<&str, u32> = expansion_records
            .iter()
            .enumerate()
            .map(|(rank, e)| (expansions.str(e, e.id), rank as u32))
            .collect();
        let card_records = order_cards(name, &cards, &ranks, &sort_scratch)?;
        drop(ranks);
        ordered.push((
            (expansions.chunks, expansion_records),
            (cards.chunks, card_records),
        ));
    }

    let built = par::map(ordered, |(expansions, cards)| {
        par::join(
            || Collection::new(batches(expansions.0), expansions.1),
            || Collection::new(batches(cards.0), cards.1),
        )
    });
    // What the load freed (read buffers, chunk tables, sort keys) goes back to the system
    // rather than staying resident in the allocator's arenas.
    drop(sort_scratch);
    drop(texts);
    crate::memory::release_free_memory();
    Ok(catalogs
        .into_iter()
        .zip(metas)
        .zip(built)
        .map(|(((name, _), meta), (expansions, cards))| LoadedCatalog {
            name,
            meta,
            expansions,
            cards,
        })
        .collect())
}

/// Whether `path` is there as the `expected` kind (`"folder"` or `"file"`, links
/// followed); when `optional`, its absence is `false` (a link that leads nowhere is not
/// absent). Anything else there is refused rather than skipped: its records would be
/// missing.
fn present(path: &Path, expected: &'static str, optional: bool) -> Result<bool, LoadError> {
    let is_link = || fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match fs::metadata(path) {
        Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound && !is_link() => Ok(false),
        Err(e) => Err(LoadError::io(path, e)),
        Ok(m) if (expected == "folder" && m.is_dir()) || (expected == "file" && m.is_file()) => {
            Ok(true)
        }
        Ok(_) => Err(LoadError::new(
            Some(path),
            LoadErrorKind::NotAFile { expected },
        )),
    }
}

/// The entries of a folder, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LoadError::io(dir, e))? {
        entries.push(entry.map_err(|e| LoadError::io(dir, e))?.path());
    }
    entries.sort();
    Ok(entries)
}

/// Reads `catalog.json`, if present: a JSON object whose `name`, if any, is the folder's.
fn read_meta(name: &str, dir: &Path) -> Result<Option<Box<str>>, LoadError> {
    let path = dir.join("catalog.json");
    if !present(&path, "file", true)? {
        return Ok(None);
    }
    let text = read_text(&path)?;
    let meta: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| json_error(&path, &text, &e))?;
    let Some(object) = meta.as_object() else {
        let found =
            crate::json::walk::kind_at(text.trim_start().as_bytes().first().copied()).name();
        return Err(LoadError::new(
            Some(&path),
            LoadErrorKind::NotAnObject { found },
        ));
    };
    // serde_json keeps the last of a key given twice; like a record, the file is refused.
    let mut transcoder = crate::json::transcode::Transcoder::default();
    if transcoder.record(&text).is_err() {
        if let Some((object, key)) = transcoder.take_repeated_key() {
            let kind = LoadErrorKind::RepeatedKey { object, key };
            return Err(LoadError::new(Some(&path), kind));
        }
    }
    match object.get("name") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(n)) if n == name => {}
        Some(serde_json::Value::String(n)) => {
            let kind = LoadErrorKind::CatalogNameMismatch {
                folder: name.to_string(),
                name: n.to_string(),
            };
            return Err(LoadError::new(Some(&path), kind));
        }
        Some(other) => {
            let found =
                crate::json::walk::kind_at(other.to_string().as_bytes().first().copied()).name();
            let kind = LoadErrorKind::WrongType {
                field: "name".into(),
                expected: "a string",
                found,
            };
            return Err(LoadError::new(Some(&path), kind));
        }
    }
    Ok(Some(meta.to_string().into()))
}

/// The text of `path`, without a byte order mark.
fn read_text(path: &Path) -> Result<String, LoadError> {
    let bytes = fs::read(path).map_err(|e| LoadError::io(path, e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| LoadError::new(Some(path), LoadErrorKind::InvalidUtf8))?;
    Ok(match text.strip_prefix('\u{FEFF}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// serde_json's error `e` on the text of `path`, with its place.
fn json_error(path: &Path, text: &str, e: &serde_json::Error) -> LoadError {
    let (line, column) = crate::json::error_position(text, e);
    let kind = LoadErrorKind::Json {
        line,
        column,
        message: crate::json::error_message(e),
    };
    LoadError::new(Some(path), kind)
}

/// Records transcoded per task: enough to make the parallel work worth it, few enough
/// that a large file spreads over every thread.
const RECORDS_PER_CHUNK: usize = 512;

/// Files up to this size are first read in one pass, on one thread (see
/// [`read_in_one_pass`]): about as many records as one chunk, so splitting them buys no
/// parallelism, and other files keep the other threads busy.
const ONE_PASS_BYTES: usize = 1 << 20;

/// Reads a file's array of records in one pass, each record transcoded by the direct path
/// straight from the file text and the next one found where it ends — no separate split.
/// `None` when anything is unusual (a record the direct path gives up on, a broken rule, a
/// syntax error): the caller then reads the file the general way, which finds and reports
/// the first error exactly as it would have, so this pass changes no outcome.
fn read_in_one_pass(text: &str, kind: RecordKind) -> Option<FileOutput> {
    let bytes = text.as_bytes();
    let skip = |i: usize| skip_whitespace(bytes, i);
    let mut i = skip(0);
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    i = skip(i + 1);
    let mut preparer = Preparer::default();
    let mut out = ChunkOut {
        // Room for the source text, plus the `printings` members cards and variants gain.
        text: Vec::with_capacity(text.len() + text.len() / 8),
        ..ChunkOut::default()
    };
    let mut records = Vec::new();
    if bytes.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            let (record, len) =
                preparer.prepare_prefix(kind, &text[i..], records.len(), &mut out)?;
            records.push(record);
            i = skip(i + len);
            match bytes.get(i) {
                Some(b',') => i = skip(i + 1),
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if skip(i) != bytes.len() {
        return None;
    }
    Some(FileOutput {
        chunks: vec![out.into_chunk()?],
        records,
    })
}

/// One file's records, and the chunks holding their JSON, strings and marks.
struct FileOutput {
    chunks: Vec<Chunk>,
    /// Each record with the number of its chunk within this file.
    records: Vec<Prepared>,
}

/// Reads one file of records and prepares them. A small file is first read in one pass
/// ([`read_in_one_pass`]); otherwise, or should that pass meet anything unusual, a fast
/// scan splits the array into its records' texts (checking only the array's punctuation),
/// then chunks of records are transcoded in parallel, each chunk into one buffer, and the
/// transcoder's full parse validates every record. Only a file that fails somewhere is
/// parsed again as a whole, so that a JSON syntax error comes first and with its line and
/// column in the file.
fn read_file(path: &Path, kind: RecordKind, buffer: &mut Vec<u8>) -> Result<FileOutput, LoadError> {
    buffer.clear();
    let mut file = fs::File::open(path).map_err(|e| LoadError::io(path, e))?;
    std::io::Read::read_to_end(&mut file, buffer).map_err(|e| LoadError::io(path, e))?;
    let text = std::str::from_utf8(buffer)
        .map_err(|_| LoadError::new(Some(path), LoadErrorKind::InvalidUtf8))?;
    let text = crate::json::without_bom(text);
    match crate::json::first_value_kind(text) {
        Some(crate::json::transcode::Kind::Array) | None => {}
        Some(kind) => {
            return Err(LoadError::new(
                Some(path),
                LoadErrorKind::NotAnArray { found: kind.name() },
            ))
        }
    }
    if text.len() <= ONE_PASS_BYTES {
        if let Some(output) = read_in_one_pass(text, kind) {
            return Ok(output);
        }
    }
    read_in_chunks(path, text, kind)
}

/// Whether `name` can name a catalog (its folder): `[a-z0-9_-]+`.
pub(crate) fn valid_catalog_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Why `name` cannot name a catalog, for a name [`valid_catalog_name`] refuses.
pub(crate) fn invalid_catalog_name(name: &str) -> String {
    format!("`{name}` cannot name a catalog: use lower-case letters, digits, `_` and `-` (it is the catalog's folder and path segment)")
}

/// Reads a file's array of records the general way: split into record texts first, then
/// prepared in chunks in parallel.
fn read_in_chunks(path: &Path, text: &str, kind: RecordKind) -> Result<FileOutput, LoadError> {
    // A JSON syntax error anywhere in the file is reported before any rule a record breaks
    // (the first error in file order), with serde_json's own words and position.
    let syntax_error = || {
        serde_json::from_str::<serde_json::Value>(text)
            .err()
            .map(|e| json_error(path, text, &e))
    };
    let Some(raws) = crate::json::scan::split_array(text) else {
        return Err(syntax_error().unwrap_or_else(|| {
            // Unreachable for a text the splitter refuses; said plainly all the same.
            let kind = LoadErrorKind::Json {
                line: 1,
                column: 1,
                message: "malformed array".into(),
            };
            LoadError::new(Some(path), kind)
        }));
    };
    let chunks: Vec<(usize, &[&str])> = raws
        .chunks(RECORDS_PER_CHUNK)
        .enumerate()
        .map(|(i, c)| (i * RECORDS_PER_CHUNK, c))
        .collect();
    let done = par::map(chunks, |(base, chunk)| {
        let mut preparer = Preparer::default();
        let mut out = ChunkOut {
            // Room for the source text, plus the `printings` members cards and variants gain.
            text: Vec::with_capacity(chunk.iter().map(|r| r.len() + r.len() / 8 + 48).sum()),
            ..ChunkOut::default()
        };
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, raw)| preparer.prepare(kind, raw, base + i, &mut out))
            .collect::<Result<Vec<Prepared>, LoadError>>()?;
        let chunk = out
            .into_chunk()
            .ok_or_else(|| LoadError::new(Some(path), LoadErrorKind::InvalidUtf8))?;
        Ok((chunk, records))
    });
    let mut output = FileOutput {
        chunks: Vec::new(),
        records: Vec::with_capacity(raws.len()),
    };
    if done.iter().any(|chunk| chunk.is_err()) {
        if let Some(error) = syntax_error() {
            return Err(error);
        }
    }
    for chunk in done {
        let (chunk, records) = chunk.map_err(|e: LoadError| e.in_file(path))?;
        let number = output.chunks.len() as u32;
        output.chunks.push(chunk);
        output
            .records
            .extend(records.into_iter().map(|r| Prepared { chunk: number, ..r }));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::write::Strip;

    /// A record as read: its JSON, its strings (id, expansion id, number, release date),
    /// its strip marks and its index in the file.
    type Read = (String, Vec<Option<String>>, Vec<Strip>, u32);

    /// Each record of a file's output.
    fn records(output: &FileOutput) -> Vec<Read> {
        output
            .records
            .iter()
            .map(|r| {
                let chunk = &output.chunks[r.chunk as usize];
                let text = chunk.text[r.start as usize..(r.start + r.len) as usize].to_string();
                let strings = [r.id, r.expansion_id, r.number, r.release_date]
                    .iter()
                    .map(|s| s.get(&chunk.strings).map(str::to_string))
                    .collect();
                let strips = chunk.strips[r.strips.start as usize..r.strips.end as usize].to_vec();
                (text, strings, strips, r.index)
            })
            .collect()
    }

    /// Every bundled file, as it is and pretty-printed, takes the one pass and comes out
    /// exactly as the general way makes it.
    #[test]
    fn one_pass_reads_files_as_the_general_way_does() {
        let mut files = 0;
        for catalog in ["pokemon", "onepiece", "lorcana"] {
            for (folder, kind) in [
                ("cards", RecordKind::Card),
                ("expansions", RecordKind::Expansion),
            ] {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("data")
                    .join(catalog)
                    .join(folder);
                for path in sorted_entries(&dir).unwrap() {
                    let text = fs::read_to_string(&path).unwrap();
                    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                    let pretty = serde_json::to_string_pretty(&value).unwrap();
                    for text in [text.as_str(), pretty.as_str()] {
                        let one = read_in_one_pass(text, kind)
                            .unwrap_or_else(|| panic!("{} not read in one pass", path.display()));
                        let general = read_in_chunks(&path, text, kind).unwrap();
                        assert!(!one.records.is_empty());
                        assert_eq!(records(&one), records(&general), "{}", path.display());
                    }
                    files += 1;
                }
            }
        }
        assert!(files >= 6, "only {files} files");
    }

    /// A record's edits come out the same whichever way its file is read.
    #[test]
    fn one_pass_edits_records_as_the_general_way_does() {
        // Records finished where they were transcoded (only members added) and ones whose
        // edits replace values (copied and edited), with strips after a replacement.
        let cards = [
            r#"{"id":"a","expansion_id":"e"}"#,
            r#"{"id":"b","expansion_id":"e","printings":["e"]}"#,
            r#"{"id":"c","expansion_id":"e","printings":["x"],"variants":[{"name":"n","prices":[{"market":1.50}]}]}"#,
            r#"{"id":"d","name":null,"expansion_id":"e","variants":[{"prices":[1],"pop_reports":[]}],"translation":{"en":{"name":"Long English name","rarity":"Rare"}}}"#,
            r#"{"id":"f","expansion_id":"e","translation":{"en":{"types":["Fire"]}},"variants":[{"printings":["p"],"prices":[2]}]}"#,
        ];
        let text = format!("[{}]", cards.join(",\n"));
        let one = read_in_one_pass(&text, RecordKind::Card).expect("read in one pass");
        let general = read_in_chunks(Path::new("t.json"), &text, RecordKind::Card).unwrap();
        assert_eq!(records(&one), records(&general));
        let texts: Vec<String> = records(&one).into_iter().map(|r| r.0).collect();
        assert!(texts[0].ends_with(r#","printings":["e"]}"#), "{}", texts[0]);
        assert!(
            texts[3].starts_with(r#"{"id":"d","name":"Long English name","#),
            "{}",
            texts[3]
        );
        assert!(
            texts[3].ends_with(r#","rarity":"Rare","printings":["e"]}"#),
            "{}",
            texts[3]
        );
    }

    /// Anything unusual is left to the general way, which reports it.
    #[test]
    fn one_pass_leaves_unusual_files_to_the_general_way() {
        let card = r#"{"id":"a","expansion_id":"e"}"#;
        for text in [
            "[".to_string(),
            "[1]".to_string(),
            r#"[{"id":"a"}]"#.to_string(),
            format!("[{card},]"),
            format!("[{card}] x"),
            format!("[{card} {card}]"),
            r#"[{"k\u0065y":1,"id":"a","expansion_id":"e"}]"#.to_string(),
            r#"[{"id":"a","expansion_id":"e","hp":1e2}]"#.to_string(),
        ] {
            assert!(
                read_in_one_pass(&text, RecordKind::Card).is_none(),
                "{text}"
            );
        }
        assert!(read_in_one_pass(" [ ] ", RecordKind::Card).is_some_and(|o| o.records.is_empty()));
        let two = read_in_one_pass(&format!(" [ {card} ,\n{card} ]\n"), RecordKind::Card).unwrap();
        assert_eq!(two.records.len(), 2);
        assert_eq!(two.records[1].index, 1);
    }
}
