//! Importers: public card data sets converted into cardex snapshot folders.
//!
//! Each importer sits in its own module and writes a snapshot folder through
//! [`SnapshotWriter`], which builds it aside and renames it into place, so a failed or
//! interrupted import never leaves a half-written output behind.
//!
//! - [`pokemon_tcg`]: the Pokémon TCG API's data set (`pokemon-tcg-data`).

pub mod pokemon_tcg;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::load::{RecordAt, Shown};

/// What was wrong with the data being imported, or with writing the snapshot.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImportErrorKind {
    /// A file or folder could not be read or written.
    Io(io::Error),
    /// The source is not laid out as the importer expects.
    Layout {
        /// What is missing or wrong.
        expected: String,
    },
    /// The file is not UTF-8.
    InvalidUtf8,
    /// The file is not valid JSON, or a record cannot be converted (two keys of one object
    /// that would share a snake_case name, nesting deeper than 128 levels).
    Json {
        /// 1-based line in the file.
        line: usize,
        /// 1-based column, in bytes (as serde_json counts).
        column: usize,
        /// What serde_json said.
        message: String,
    },
    /// The file holds something else than a JSON array of records.
    NotAnArray {
        /// The JSON type found.
        found: &'static str,
    },
    /// A record is not a JSON object.
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A record has no non-empty string `id`.
    MissingId,
    /// Two sets share an id.
    DuplicateSet {
        /// The id.
        id: String,
    },
    /// A cards file names no set of the sets file.
    UnknownSet {
        /// The set id (the file's name).
        id: String,
    },
    /// A record already holds a field the importer sets, with another value.
    Conflict {
        /// The field.
        field: &'static str,
    },
    /// The output already exists (give `--force` to replace it).
    OutputExists,
    /// `--force` would delete more than the catalog imported: the output holds the source
    /// being imported, or anything besides the catalog's folder.
    ReplaceRefused {
        /// What replacing the output would delete: the source, or what else it holds.
        would_delete: String,
    },
    /// The catalog name is not a catalog folder's name (`[a-z0-9_-]+`).
    InvalidCatalogName {
        /// The name as given.
        name: String,
    },
    /// The converted snapshot breaks a rule of the loader, e.g. two
    /// cards of different files with one id, or an unreadable `release_date`: nothing is
    /// written, and the loader's error names the source file a converted file came from
    /// (record for record) and the record.
    Unloadable(Box<crate::LoadError>),
}

/// An import that failed: where (file, and record where it is about one), and why.
#[derive(Debug)]
pub struct ImportError {
    path: Option<PathBuf>,
    record: Option<RecordAt>,
    kind: ImportErrorKind,
}

impl ImportError {
    pub(crate) fn new(path: Option<&Path>, kind: ImportErrorKind) -> ImportError {
        ImportError {
            path: path.map(Path::to_path_buf),
            record: None,
            kind,
        }
    }

    pub(crate) fn io(path: &Path, e: io::Error) -> ImportError {
        ImportError::new(Some(path), ImportErrorKind::Io(e))
    }

    pub(crate) fn at_record(mut self, index: usize, id: Option<&str>) -> ImportError {
        self.record = Some(RecordAt {
            index,
            id: id.map(str::to_string),
        });
        self
    }

    /// The file concerned.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The record concerned, if the error is about one record.
    pub fn record(&self) -> Option<&RecordAt> {
        self.record.as_ref()
    }

    /// What was wrong.
    pub fn kind(&self) -> &ImportErrorKind {
        &self.kind
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}", path.display())?;
            if let (ImportErrorKind::Json { line, column, .. }, None) = (&self.kind, &self.record) {
                write!(f, ":{line}:{column}")?;
            }
            f.write_str(": ")?;
        }
        if let Some(record) = &self.record {
            write!(f, "record {}", record.index)?;
            if let Some(id) = &record.id {
                write!(f, " (id `{}`)", Shown(id))?;
            }
            f.write_str(": ")?;
        }
        match &self.kind {
            ImportErrorKind::Io(e) => write!(f, "{e}"),
            ImportErrorKind::Layout { expected } => {
                write!(f, "not the expected layout: {expected}")
            }
            ImportErrorKind::InvalidUtf8 => f.write_str("file is not valid UTF-8"),
            ImportErrorKind::Json {
                message,
                line,
                column,
            } if self.record.is_some() => {
                write!(f, "cannot convert: {message} (line {line}, column {column})")
            }
            ImportErrorKind::Json { message, .. } => write!(f, "invalid JSON: {message}"),
            ImportErrorKind::NotAnArray { found } => {
                write!(f, "expected a JSON array of records, found {found}")
            }
            ImportErrorKind::NotAnObject { found } => write!(f, "expected a JSON object, found {found}"),
            ImportErrorKind::MissingId => f.write_str("the record has no non-empty string `id`"),
            ImportErrorKind::DuplicateSet { id } => {
                write!(f, "two sets have the id `{}`", Shown(id))
            }
            ImportErrorKind::UnknownSet { id } => {
                write!(f, "the cards of set `{}` name no set of the sets file", Shown(id))
            }
            ImportErrorKind::Conflict { field } => write!(
                f,
                "the record already has `{field}`, with another value than the importer would give it"
            ),
            ImportErrorKind::ReplaceRefused { would_delete } => write!(
                f,
                "--force replaces the whole output folder, which would delete {would_delete}; nothing was written: choose another output (and move the catalog folder in), or remove what is there first"
            ),
            ImportErrorKind::OutputExists => {
                f.write_str("the output already exists; remove it, choose another, or replace it with --force")
            }
            ImportErrorKind::InvalidCatalogName { name } => {
                f.write_str(&crate::load::invalid_catalog_name(name))
            }
            ImportErrorKind::Unloadable(e) => {
                write!(f, "the converted snapshot would not load, so nothing was written: {e}")
            }
        }
    }
}

// The message includes its cause's, so `source()` is `None`: a reporter that prints the
// chain of causes prints each message once.
impl std::error::Error for ImportError {}

/// How far an import has come, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Source files converted so far.
    pub files_done: usize,
    /// Source files in all.
    pub files: usize,
    /// Records written so far.
    pub records: usize,
}

/// Writes a snapshot folder aside (a hidden sibling of the output), loads it to check it,
/// then renames it into place. Dropped without [`SnapshotWriter::commit`], it removes what
/// it wrote.
#[derive(Debug)]
pub struct SnapshotWriter {
    out: PathBuf,
    staging: PathBuf,
    /// Where the old output moves while the new one takes its place (under `force`).
    replaced: PathBuf,
    force: bool,
    committed: bool,
    /// The folders of the output's path made for it, deepest first: removed again, each
    /// only while empty, should the import fail.
    created: Vec<PathBuf>,
    /// The working copy's lock, held while the import runs: an import that finds a copy
    /// whose lock it can take removes it (its import was killed).
    lock: Option<fs::File>,
    /// The source file of each converted file (by its path in the snapshot), which a
    /// load error names instead of the staging copy.
    sources: std::sync::Mutex<std::collections::HashMap<PathBuf, PathBuf>>,
}

impl SnapshotWriter {
    /// Prepares to write the snapshot `out`.
    ///
    /// # Errors
    ///
    /// [`ImportErrorKind::OutputExists`] when `out` exists and `force` is off; I/O errors
    /// creating the staging folder.
    pub fn new(out: &Path, force: bool) -> Result<SnapshotWriter, ImportError> {
        // A link counts as there, even one that leads nowhere.
        if fs::symlink_metadata(out).is_ok() && !force {
            return Err(ImportError::new(Some(out), ImportErrorKind::OutputExists));
        }
        let name = out
            .file_name()
            .map_or_else(|| "snapshot".into(), |n| n.to_string_lossy());
        let name = &*name;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // The folders of the output's path that are made here, removed again (while
        // empty) should the import fail.
        let created: Vec<PathBuf> = parent
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .map(Path::to_path_buf)
            .collect();
        fs::create_dir_all(&parent).map_err(|e| ImportError::io(&parent, e))?;
        remove_stale_staging(&parent, name);
        let own = run_suffix();
        let staging = parent.join(format!(".{name}.importing-{own}"));
        let replaced = parent.join(format!(".{name}.replaced-{own}"));
        let mut writer = SnapshotWriter {
            out: out.to_path_buf(),
            staging,
            replaced,
            force,
            committed: false,
            created,
            lock: None,
            sources: Default::default(),
        };
        // Errors name the output, not the hidden working copy beside it.
        fs::create_dir(&writer.staging).map_err(|e| ImportError::io(out, e))?;
        // The lock file appears under its name already locked (made and locked under
        // another, then renamed), so a sweep never finds it unlocked while this runs. Where
        // the file system has no locks, the copy has no lock file, and no sweep removes it.
        let fresh = writer.staging.join(".lock.new");
        let lock = fs::File::create(&fresh).map_err(|e| ImportError::io(out, e))?;
        if lock.lock().is_ok() {
            let lock_path = writer.staging.join(STAGING_LOCK);
            fs::rename(&fresh, &lock_path).map_err(|e| ImportError::io(out, e))?;
            writer.lock = Some(lock);
        } else {
            let _ = fs::remove_file(&fresh);
        }
        Ok(writer)
    }

    /// Writes `text` at `rel` inside the snapshot being built.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn write(&self, rel: &str, text: &[u8]) -> Result<(), ImportError> {
        // Only inside the snapshot: no root, no `..`, no `.`.
        let inside = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside || rel.is_empty() {
            return Err(ImportError::new(
                Some(&self.out),
                ImportErrorKind::Layout {
                    expected: format!("a path inside the snapshot, not `{rel}`"),
                },
            ));
        }
        // Errors name the file as it would be in the output, not the hidden copy.
        let path = self.staging.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| ImportError::io(&self.out.join(rel), e))?;
        }
        fs::write(&path, text).map_err(|e| ImportError::io(&self.out.join(rel), e))
    }

    /// Writes `text` at `rel`, converted from the file `source` record for record (in the
    /// same order): a load error about it names `source`.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn write_converted(
        &self,
        rel: &str,
        text: &[u8],
        source: &Path,
    ) -> Result<(), ImportError> {
        self.write(rel, text)?;
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(PathBuf::from(rel), source.to_path_buf());
        Ok(())
    }

    /// Loads the finished snapshot as [`crate::Engine::open`] would, then moves it into
    /// place (replacing the old one under `force`). An importer thus never publishes a
    /// snapshot that the engine would refuse.
    ///
    /// # Errors
    ///
    /// [`ImportErrorKind::Unloadable`] when the snapshot breaks a rule of the loader; I/O
    /// errors. In both cases nothing is written and the old output, if any, is kept.
    pub fn commit(mut self) -> Result<(), ImportError> {
        crate::load::load(&self.staging).map_err(|e| {
            // The staging copy is gone when the error is read: name the source file a
            // converted file came from, else the file as it would have been written.
            let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
            let e = e.map_paths(|path| match path.strip_prefix(&self.staging) {
                Ok(rel) => sources
                    .get(rel)
                    .cloned()
                    .unwrap_or_else(|| self.out.join(rel)),
                Err(_) => path.to_path_buf(),
            });
            ImportError::new(Some(&self.out), ImportErrorKind::Unloadable(Box::new(e)))
        })?;
        // The old output moves aside under a name of this import's own
        // (`.{name}.replaced-{pid}-{unique}`, as the working copy's), then goes.
        let old = self.replaced.clone();
        // The lock file stays behind (the snapshot does not hold it); the lock itself is
        // held until the copy has moved into place, so no sweep takes it meanwhile.
        let _ = fs::remove_file(self.staging.join(STAGING_LOCK));
        let replacing = self.force && fs::symlink_metadata(&self.out).is_ok();
        if replacing {
            fs::rename(&self.out, &old).map_err(|e| ImportError::io(&self.out, e))?;
        }
        if let Err(e) = fs::rename(&self.staging, &self.out) {
            if replacing {
                let _ = fs::rename(&old, &self.out);
            }
            return Err(ImportError::io(&self.out, e));
        }
        self.committed = true;
        self.lock = None;
        if replacing {
            let _ = remove_any(&old);
        }
        Ok(())
    }
}

/// Refuses to replace `out` (under `--force`) when that would delete more than a snapshot
/// of `catalog`: the source `src` (`out` is it, or holds it), or anything in `out` but the
/// folder `catalog` (other catalogs, notes, a `.git`).
pub(crate) fn check_replaceable(out: &Path, catalog: &str, src: &Path) -> Result<(), ImportError> {
    let refused = |would_delete: String| {
        Err(ImportError::new(
            Some(out),
            ImportErrorKind::ReplaceRefused { would_delete },
        ))
    };
    let Ok(meta) = fs::metadata(out) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Ok(());
    }
    if let (Ok(out_real), Ok(src_real)) = (out.canonicalize(), src.canonicalize()) {
        if src_real.starts_with(&out_real) {
            return refused(format!("the source being imported, {}", src.display()));
        }
    }
    let mut others: Vec<String> = fs::read_dir(out)
        .map_err(|e| ImportError::io(out, e))?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| ImportError::io(out, e))?;
    others.retain(|name| name != catalog);
    if others.is_empty() {
        return Ok(());
    }
    others.sort();
    let shown: Vec<&str> = others.iter().take(5).map(String::as_str).collect();
    let more = match others.len() - shown.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    refused(format!(
        "what it holds besides the catalog `{catalog}` ({}{more})",
        shown.join(", ")
    ))
}

/// A name part that no other run of an import or `generate` has: `{pid}-{hex}`, the
/// process and the time (and a count, for runs in one process), so no two share one even
/// in other PID namespaces or hosts sharing the folder.
pub(crate) fn run_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = nanos ^ u128::from(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    format!("{}-{unique:x}", std::process::id())
}

/// The process id of a [`run_suffix`], when `text` is one.
pub(crate) fn run_of(text: &str) -> Option<&str> {
    let (pid, unique) = text.split_once('-')?;
    let named = !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !unique.is_empty()
        && unique.bytes().all(|b| b.is_ascii_hexdigit());
    named.then_some(pid)
}

/// Removes `path` whether it is a folder, a file or a link; nothing there is not an error.
pub(crate) fn remove_any(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staging);
            // Deepest first, each only if empty: another import may have written beside.
            for folder in &self.created {
                if fs::remove_dir(folder).is_err() {
                    break;
                }
            }
        }
    }
}

/// The lock file in a working copy, held by its import while it runs.
const STAGING_LOCK: &str = ".lock";

/// Removes the working copies that imports into `parent/name` killed before they finished
/// left: a `.name.importing-PID-N` whose lock file is there and can be locked (an import
/// that runs holds its lock, in whatever process namespace or host it runs). A copy
/// without a lock file (one being made, or left by an older cardex) is left alone. An old
/// output a killed import had moved aside (`.name.replaced-PID-N`) goes once `name` is
/// there again; while it is not, that copy is the only one, and stays.
fn remove_stale_staging(parent: &Path, name: &str) {
    let prefix = format!(".{name}.importing-");
    let replaced = format!(".{name}.replaced-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    // `{pid}-{hex}` exactly: not another output's copy whose name starts alike.
    for entry in entries.flatten() {
        let Some(file_name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // An output replaced by an import killed before it removed it: superseded once
        // the output is there again (else it is the only copy, and stays). Looked at
        // just before, as another import may be replacing the output meanwhile.
        if file_name.strip_prefix(&replaced).and_then(run_of).is_some() {
            if fs::symlink_metadata(parent.join(name)).is_ok() {
                let _ = remove_any(&entry.path());
            }
            continue;
        }
        if file_name.strip_prefix(&prefix).and_then(run_of).is_none() {
            continue;
        }
        let Ok(lock) = fs::File::options()
            .write(true)
            .open(entry.path().join(STAGING_LOCK))
        else {
            continue;
        };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Joins compact JSON records into the text of a snapshot file: a JSON array, one record
/// a line.
pub(crate) fn records_file(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.iter().map(|r| r.len() + 2).sum::<usize>() + 4);
    out.extend_from_slice(b"[\n");
    for (i, record) in records.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(record);
    }
    out.extend_from_slice(b"\n]\n");
    out
}
