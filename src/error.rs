//! The crate's error type: one enum over the ways a request can fail, each variant a
//! typed error that says what went wrong and where, so a frontend (the HTTP service, the
//! command line) maps errors without matching on messages.

use std::fmt;

use serde_json::json;

use crate::load::LoadError;
use crate::plan::PlanError;
use crate::query::ParseError;

/// A bad request parameter (`page=0`, `page_size=500`, `order_by=nope`, `colour=red`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterError {
    name: String,
    value: String,
    kind: ParameterErrorKind,
}

/// Why a parameter was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParameterErrorKind {
    /// The parameter does not exist (a misspelling fails loudly, never silently).
    Unknown {
        /// The parameters that exist.
        allowed: &'static [&'static str],
    },
    /// The parameter was given twice.
    Repeated,
    /// The value names a field no record has (`order_by`, `select`).
    UnknownField {
        /// The field as written.
        field: String,
        /// The closest field there is, when one is close.
        suggestion: Option<String>,
    },
    /// The value is not acceptable; the text says why and what is.
    Invalid(String),
}

impl ParameterError {
    pub(crate) fn new(name: &str, value: &str, kind: ParameterErrorKind) -> ParameterError {
        ParameterError {
            name: name.to_string(),
            value: value.to_string(),
            kind,
        }
    }

    pub(crate) fn invalid(name: &str, value: &str, reason: impl Into<String>) -> ParameterError {
        ParameterError::new(name, value, ParameterErrorKind::Invalid(reason.into()))
    }

    /// The parameter's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value as given.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Why it was refused.
    pub fn kind(&self) -> &ParameterErrorKind {
        &self.kind
    }

    /// For an unknown parameter, the parameter it is closest to, when one is close
    /// (`pagesize` → `page_size`); for an unknown field, the closest field.
    pub fn suggestion(&self) -> Option<&str> {
        match &self.kind {
            ParameterErrorKind::Unknown { allowed } => {
                crate::naming::suggest(&self.name, allowed.iter().copied())
            }
            ParameterErrorKind::UnknownField { suggestion, .. } => suggestion.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for ParameterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParameterErrorKind::Unknown { allowed } => {
                write!(f, "unknown parameter `{}`", self.name)?;
                if let Some(close) = self.suggestion() {
                    write!(f, " (did you mean `{close}`?)")?;
                }
                write!(
                    f,
                    "; the parameters are {}",
                    allowed
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            ParameterErrorKind::Repeated => {
                write!(f, "parameter `{}` is given more than once", self.name)
            }
            ParameterErrorKind::UnknownField { field, suggestion } => {
                let (name, value) = (&self.name, &self.value);
                write!(f, "invalid `{name}` value `{value}`: no record has ")?;
                if name == "select" {
                    write!(f, "a top-level field `{field}`")?;
                } else {
                    write!(f, "a value at `{field}`")?;
                }
                match suggestion {
                    Some(s) => write!(f, " (did you mean `{s}`?)"),
                    None => Ok(()),
                }
            }
            ParameterErrorKind::Invalid(reason) => {
                write!(
                    f,
                    "invalid `{}` value `{}`: {reason}",
                    self.name, self.value
                )
            }
        }
    }
}

impl std::error::Error for ParameterError {}

/// What was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotFound {
    /// No catalog of that name.
    Catalog {
        /// The name asked for.
        name: String,
        /// The catalogs there are.
        known: Vec<String>,
    },
    /// The catalog has no records in that language, or no languages at all.
    Language {
        /// The catalog.
        catalog: String,
        /// The language asked for.
        lang: String,
        /// The languages the catalog has (empty: it has no language scopes).
        known: Vec<String>,
    },
    /// No card with that id.
    Card {
        /// The id asked for.
        id: String,
    },
    /// No expansion with that id.
    Expansion {
        /// The id asked for.
        id: String,
    },
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            NotFound::Catalog { name, known } => {
                write!(f, "unknown catalog `{name}`; the catalogs are {}", list(known))
            }
            NotFound::Language { catalog, lang, known } if known.is_empty() => write!(
                f,
                "catalog `{catalog}` has no language scopes, so `{lang}` cannot scope it; leave the language out"
            ),
            NotFound::Language { catalog, lang, known } => write!(
                f,
                "unknown language `{lang}` for catalog `{catalog}`; its languages are {}",
                list(known)
            ),
            NotFound::Card { id } => write!(f, "no card with id `{id}`"),
            NotFound::Expansion { id } => write!(f, "no expansion with id `{id}`"),
        }
    }
}

/// Any error of cardex.
///
/// # Design
///
/// One enum with a variant per layer (query text, query against the catalog, request
/// parameters, lookups, snapshot loading), each holding a typed error with its own kinds,
/// in the way of tantivy's `TantivyError`. It knows no transport: the HTTP service maps
/// each variant to a status and an error body ([`error_body`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The `q` text is malformed.
    Parse(ParseError),
    /// The `q` text does not fit the catalog (unknown field, range on text, ...).
    Plan(PlanError),
    /// A request parameter was refused.
    Parameter(ParameterError),
    /// A catalog, language, card or expansion does not exist.
    NotFound(NotFound),
    /// A snapshot could not be loaded.
    Load(LoadError),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The one-line message (for query errors, without the query and caret lines).
    pub fn message(&self) -> String {
        match self {
            Error::Parse(e) => e.message(),
            Error::Plan(e) => e.message(),
            Error::Parameter(e) => e.to_string(),
            Error::NotFound(e) => e.to_string(),
            Error::Load(e) => e.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(e) => e.fmt(f),
            Error::Plan(e) => e.fmt(f),
            Error::Parameter(e) => e.fmt(f),
            Error::NotFound(e) => e.fmt(f),
            Error::Load(e) => e.fmt(f),
        }
    }
}

// Transparent: the message is the inner error's, and so are its causes (a reporter that
// prints the chain of causes would print the message twice if the inner error were one).
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Parse(e) => e.source(),
            Error::Plan(e) => e.source(),
            Error::Parameter(e) => e.source(),
            Error::NotFound(_) => None,
            Error::Load(e) => e.source(),
        }
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Error {
        Error::Parse(e)
    }
}

impl From<PlanError> for Error {
    fn from(e: PlanError) -> Error {
        Error::Plan(e)
    }
}

impl From<ParameterError> for Error {
    fn from(e: ParameterError) -> Error {
        Error::Parameter(e)
    }
}

impl From<NotFound> for Error {
    fn from(e: NotFound) -> Error {
        Error::NotFound(e)
    }
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        Error::Load(e)
    }
}

/// The HTTP status of an engine error: 400 for the request's own mistakes (its query or
/// parameters), 404 for what does not exist, 500 for a snapshot that cannot be loaded.
///
/// ```
/// let err = cardex::Error::from(cardex::query::parse("hp>=").unwrap_err());
/// assert_eq!(cardex::error_status(&err), 400);
/// ```
pub fn error_status(error: &Error) -> u16 {
    match error {
        Error::Parse(_) | Error::Plan(_) | Error::Parameter(_) => 400,
        Error::NotFound(_) => 404,
        Error::Load(_) => 500,
    }
}

/// The error code of an engine error in the error body: `invalid_query`,
/// `unknown_parameter`, `invalid_parameter`, `not_found` or `snapshot_error`.
///
/// ```
/// let err = cardex::ItemRequest::from_params([("q", "x")]).unwrap_err();
/// assert_eq!(cardex::error_code(&err), "unknown_parameter");
/// ```
pub fn error_code(error: &Error) -> &'static str {
    match error {
        Error::Parse(_) | Error::Plan(_) => "invalid_query",
        Error::Parameter(p) => match p.kind() {
            ParameterErrorKind::Unknown { .. } => "unknown_parameter",
            _ => "invalid_parameter",
        },
        Error::NotFound(_) => "not_found",
        Error::Load(_) => "snapshot_error",
    }
}

/// The error body of an engine error. Query errors carry `position` (byte offset),
/// `column` (character, 1-based) and `end` in `details`; parameter errors the parameter
/// and its value (or the parameters allowed); an unknown catalog or language the ones
/// there are.
///
/// ```
/// let err = cardex::Error::from(cardex::query::parse("hp>=").unwrap_err());
/// let body = cardex::error_body(&err);
/// assert_eq!(body["error"]["details"]["position"], 4);
/// assert_eq!(body["error"]["code"], "invalid_query");
/// ```
pub fn error_body(error: &Error) -> serde_json::Value {
    let details = match error {
        Error::Parse(e) => {
            json!({"position": e.offset(), "column": e.column(), "end": e.span().end})
        }
        Error::Plan(e) => {
            json!({"position": e.offset(), "column": e.column(), "end": e.span().end})
        }
        Error::Parameter(e) => match e.kind() {
            ParameterErrorKind::Unknown { allowed } => {
                let mut details = json!({"parameter": e.name(), "allowed": allowed});
                if let Some(s) = e.suggestion() {
                    details["suggestion"] = json!(s);
                }
                details
            }
            ParameterErrorKind::UnknownField { field, suggestion } => {
                let mut details =
                    json!({"parameter": e.name(), "value": e.value(), "field": field});
                if let Some(s) = suggestion {
                    details["suggestion"] = json!(s);
                }
                details
            }
            _ => json!({"parameter": e.name(), "value": e.value()}),
        },
        Error::NotFound(NotFound::Catalog { known, .. }) => json!({"catalogs": known}),
        Error::NotFound(NotFound::Language { known, .. }) => json!({"languages": known}),
        Error::NotFound(_) | Error::Load(_) => json!({}),
    };
    json!({"error": {
        "status": error_status(error),
        "code": error_code(error),
        "message": error.message(),
        "details": details,
    }})
}
