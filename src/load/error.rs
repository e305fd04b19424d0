//! Why a snapshot was refused: the file, the record (index and id where known), and for
//! JSON syntax errors the line and column.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A record in a snapshot file: its index in the file's array, and its id where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordAt {
    /// Zero-based index in the file's array.
    pub index: usize,
    /// The record's `id`, when it has a readable one.
    pub id: Option<String>,
}

/// What was wrong with a snapshot.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// A file or folder could not be read.
    Io(io::Error),
    /// The snapshot path is not a folder.
    NotADirectory,
    /// The snapshot folder holds no catalog folder.
    NoCatalogs,
    /// A catalog's `cards` or `expansions` is not a folder, or a `.json` entry in one is
    /// not a file (a folder, a device): its records would be missed.
    NotAFile {
        /// What the path was expected to be: `"folder"` or `"file"`.
        expected: &'static str,
    },
    /// A catalog folder name is not a valid path segment (`[a-z0-9_-]+`).
    InvalidCatalogName {
        /// The folder name.
        name: String,
    },
    /// `catalog.json` names another catalog than its folder.
    CatalogNameMismatch {
        /// The folder name.
        folder: String,
        /// The `name` in `catalog.json`.
        name: String,
    },
    /// The file is not UTF-8.
    InvalidUtf8,
    /// The file is not valid JSON.
    Json {
        /// 1-based line.
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
    /// A record (or `catalog.json`) is not a JSON object.
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A required field is missing (or `null`).
    MissingField {
        /// The field.
        field: &'static str,
    },
    /// An object has one key twice (JSON readers disagree on which value counts, so the
    /// record means different cards to different clients).
    RepeatedKey {
        /// The object's path in the record: the keys down to it, arrays looked through
        /// (`["abilities"]` for an element of `abilities`; empty for the record itself).
        object: Vec<String>,
        /// The key.
        key: String,
    },
    /// A field holds the wrong type of value.
    WrongType {
        /// The field (dotted path).
        field: String,
        /// What the contract expects.
        expected: &'static str,
        /// What the record holds.
        found: &'static str,
    },
    /// Two records of one collection share an id.
    DuplicateId {
        /// The id.
        id: String,
        /// The file of the first record with this id.
        first_path: PathBuf,
        /// Its index in that file.
        first_index: usize,
    },
    /// A card's `expansion_id` names no expansion of its catalog.
    UnknownExpansion {
        /// The id named.
        expansion_id: String,
        /// The catalog.
        catalog: String,
    },
    /// A date that is not `YYYY/MM/DD`.
    BadDate {
        /// The field.
        field: &'static str,
        /// The value found.
        value: String,
    },
}

/// A refused snapshot: where, and why. Loading is all or nothing: when this is returned,
/// nothing of the snapshot was kept.
///
/// ```
/// let err = cardex::Engine::open("no/such/folder").unwrap_err();
/// assert!(err.to_string().starts_with("no/such/folder: "));
/// ```
#[derive(Debug)]
pub struct LoadError {
    path: Option<PathBuf>,
    record: Option<RecordAt>,
    kind: LoadErrorKind,
}

impl LoadError {
    pub(crate) fn new(path: Option<&Path>, kind: LoadErrorKind) -> LoadError {
        LoadError {
            path: path.map(Path::to_path_buf),
            record: None,
            kind,
        }
    }

    pub(crate) fn at_record(mut self, index: usize, id: Option<&str>) -> LoadError {
        self.record = Some(RecordAt {
            index,
            id: id.map(str::to_string),
        });
        self
    }

    /// The same error, about a record of the file at `path`.
    pub(crate) fn in_file(mut self, path: &Path) -> LoadError {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The same error with each file it names passed through `map` (an importer names
    /// the source files of the snapshot it converted).
    pub(crate) fn map_paths(mut self, map: impl Fn(&Path) -> PathBuf) -> LoadError {
        self.path = self.path.as_deref().map(&map);
        if let LoadErrorKind::DuplicateId { first_path, .. } = &mut self.kind {
            *first_path = map(first_path);
        }
        self
    }

    pub(crate) fn io(path: &Path, err: io::Error) -> LoadError {
        LoadError::new(Some(path), LoadErrorKind::Io(err))
    }

    /// The file or folder concerned.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The record concerned, if the error is about one record.
    pub fn record(&self) -> Option<&RecordAt> {
        self.record.as_ref()
    }

    /// What was wrong.
    pub fn kind(&self) -> &LoadErrorKind {
        &self.kind
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}", path.display())?;
            if let LoadErrorKind::Json { line, column, .. } = &self.kind {
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
            LoadErrorKind::Io(e) => write!(f, "cannot read: {e}"),
            LoadErrorKind::NotADirectory => f.write_str("not a snapshot folder"),
            LoadErrorKind::NoCatalogs => {
                f.write_str(
                    "no catalog folders: a snapshot folder holds a folder per catalog, with \
                     cards/, expansions/ or catalog.json in it (<snapshot>/<catalog>/cards/*.json)",
                )
            }
            LoadErrorKind::NotAFile { expected } => write!(
                f,
                "not a {expected}: its records would be missed (a snapshot's cards and expansions are `.json` files in folders named `cards` and `expansions`)"
            ),
            LoadErrorKind::InvalidCatalogName { name } => write!(
                f,
                "catalog folder `{name}` is not a valid catalog name (lower-case letters, digits, `_` and `-`)"
            ),
            LoadErrorKind::CatalogNameMismatch { folder, name } => write!(
                f,
                "catalog.json names catalog `{}`, but its folder is `{folder}`",
                Shown(name)
            ),
            LoadErrorKind::InvalidUtf8 => f.write_str("file is not valid UTF-8"),
            LoadErrorKind::Json { message, .. } => write!(f, "invalid JSON: {message}"),
            LoadErrorKind::NotAnArray { found } => {
                write!(f, "expected a JSON array of records, found {found}")
            }
            LoadErrorKind::NotAnObject { found } => {
                write!(f, "expected a JSON object, found {found}")
            }
            LoadErrorKind::MissingField { field } => {
                write!(f, "required field `{field}` is missing")
            }
            LoadErrorKind::RepeatedKey { object, key } => {
                if object.is_empty() {
                    write!(f, "the key `{}` appears twice at the top level", Shown(key))?;
                } else {
                    let object = object.join(".");
                    write!(
                        f,
                        "the key `{}` appears twice in an object at `{}`",
                        Shown(key),
                        Shown(&object)
                    )?;
                }
                f.write_str(" (JSON readers disagree on which of the two counts; keep one)")
            }
            LoadErrorKind::WrongType {
                field,
                expected,
                found,
            } => write!(f, "field `{}` must be {expected}, found {found}", Shown(field)),
            LoadErrorKind::DuplicateId {
                id,
                first_path,
                first_index,
            } => write!(
                f,
                "duplicate id `{}`: record {first_index} of {} has it too",
                Shown(id),
                first_path.display()
            ),
            LoadErrorKind::UnknownExpansion {
                expansion_id,
                catalog,
            } => write!(
                f,
                "`expansion_id` names `{}`, which is no expansion of catalog `{catalog}`",
                Shown(expansion_id)
            ),
            LoadErrorKind::BadDate { field, value } => {
                write!(
                    f,
                    "field `{field}` must be a date `YYYY/MM/DD`, found `{}`",
                    Shown(value)
                )
            }
        }
    }
}

/// A value from a snapshot in a message: whole up to 80 characters, else its first 60
/// and how long it is (a 10 MB id would make a 10 MB message).
pub(crate) struct Shown<'a>(pub(crate) &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WHOLE: usize = 80;
        const START: usize = 60;
        match self.0.char_indices().nth(WHOLE) {
            None => f.write_str(self.0),
            Some(_) => {
                let end = self
                    .0
                    .char_indices()
                    .nth(START)
                    .map_or(self.0.len(), |(i, _)| i);
                write!(f, "{}… ({} bytes)", &self.0[..end], self.0.len())
            }
        }
    }
}

// The message includes its cause's, so `source()` is `None`: a reporter that prints the
// chain of causes prints each message once.
impl std::error::Error for LoadError {}
