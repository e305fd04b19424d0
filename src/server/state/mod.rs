//! The service's state in a database: the accounts (teams, plans, key hashes, credit
//! costs) and the credits each team has used. `--state URL` names it; [`StateUrl`] parses
//! the URL and [`SqliteState`] is the embedded engine (`sqlite:PATH`), with versioned
//! schema migrations applied when it opens.

mod sqlite;

use std::fmt;
use std::path::PathBuf;

pub use sqlite::{SqliteLedger, SqliteState, SCHEMA_VERSION};

/// Where the state is, as `--state` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateUrl {
    /// `sqlite:PATH`: an SQLite database file (created when missing).
    Sqlite(PathBuf),
}

impl StateUrl {
    /// Parses a `--state` value.
    ///
    /// ```
    /// use cardex::server::state::StateUrl;
    /// assert_eq!(
    ///     StateUrl::parse("sqlite:/var/lib/cardex/state.db").unwrap(),
    ///     StateUrl::Sqlite("/var/lib/cardex/state.db".into())
    /// );
    /// assert!(StateUrl::parse("state.db").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`StateUrlError`] saying what the value lacks and what the forms are.
    pub fn parse(text: &str) -> Result<StateUrl, StateUrlError> {
        let bad = |reason: &str| StateUrlError {
            url: text.to_string(),
            reason: reason.to_string(),
        };
        let Some((scheme, rest)) = text.split_once(':') else {
            return Err(bad("it has no scheme"));
        };
        match scheme {
            "sqlite" => {
                // `sqlite://PATH` is accepted too, as SQLite URLs are often written.
                let path = rest.strip_prefix("//").unwrap_or(rest);
                if path.is_empty() {
                    return Err(bad("the path of the database file is empty"));
                }
                Ok(StateUrl::Sqlite(PathBuf::from(path)))
            }
            _ => Err(bad(&format!(
                "`{scheme}` is not a state engine this server has"
            ))),
        }
    }
}

impl fmt::Display for StateUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateUrl::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
        }
    }
}

/// A `--state` value that is not a state URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateUrlError {
    url: String,
    reason: String,
}

impl fmt::Display for StateUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a state URL: {}; the form is `sqlite:PATH` (an SQLite file, created when missing)",
            self.url, self.reason
        )
    }
}

impl std::error::Error for StateUrlError {}

/// Why the state could not be opened, read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum StateError {
    /// The database could not be opened, or a statement failed.
    Database {
        /// The state, as configured.
        state: String,
        /// What was being done.
        doing: &'static str,
        /// What the database said.
        source: rusqlite::Error,
    },
    /// The database's schema is newer than this server knows: a newer cardex wrote it.
    NewerSchema {
        /// The state, as configured.
        state: String,
        /// The schema version found.
        found: i64,
        /// The newest version this server knows.
        known: i64,
    },
    /// A team id that is not 1 to 64 letters, digits, `_` or `-`.
    BadTeamId {
        /// The id as given.
        team: String,
    },
    /// The OS gave no randomness to make a key from.
    NoRandomness(getrandom::Error),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Database {
                state,
                doing,
                source,
            } => write!(f, "{state}: cannot {doing}: {source}"),
            StateError::NewerSchema {
                state,
                found,
                known,
            } => write!(
                f,
                "{state}: the schema is version {found}, written by a newer cardex; this one knows versions up to {known}: run the newer cardex, or restore a backup"
            ),
            StateError::BadTeamId { team } => write!(
                f,
                "team id `{team}` is not 1 to 64 letters, digits, `_` or `-`"
            ),
            StateError::NoRandomness(e) => write!(f, "no randomness from the OS: {e}"),
        }
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateError::Database { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_urls_name_their_engine() {
        assert_eq!(
            StateUrl::parse("sqlite://state.db").unwrap(),
            StateUrl::Sqlite("state.db".into())
        );
        assert_eq!(
            StateUrl::parse("sqlite:state.db").unwrap().to_string(),
            "sqlite:state.db"
        );
        for (bad, why) in [
            ("state.db", "it has no scheme"),
            ("sqlite:", "the path of the database file is empty"),
            (
                "mysql://db/cardex",
                "`mysql` is not a state engine this server has",
            ),
        ] {
            let e = StateUrl::parse(bad).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
            assert!(e.to_string().contains("the form is `sqlite:PATH`"), "{e}");
        }
    }
}
