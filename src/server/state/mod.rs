//! The service's state in a database: the accounts (teams, plans, key hashes, credit
//! costs), the credits each team has used, the usage board, the webhook outbox and the
//! marks of the last snapshot (from which a start tells what changed while the service
//! was down). `--state URL` names it; [`StateUrl`] parses the URL and [`State`] is the
//! opened database: [`SqliteState`] (`sqlite:PATH`, embedded, one server) or [`PgState`]
//! (`postgres://…`, shared by replicas), each with versioned schema migrations applied
//! when it opens.

mod postgres;
mod spool;
mod sqlite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use postgres::{PgState, PG_SCHEMA_VERSION};
pub(crate) use spool::Spool;
pub(crate) use sqlite::ChargeWriter;
pub use sqlite::{SqliteState, SCHEMA_VERSION};

use crate::server::accounts::{self, Accounts, CreditCosts, Plan};
use crate::Event;

/// How long finished deliveries and their events are kept (30 days): an event published
/// again within that time (by a replica that reloaded late) is recognised and not sent
/// twice.
pub(crate) const EVENT_RETENTION_SECS: f64 = 30.0 * 24.0 * 3600.0;

/// Where the state is, as `--state` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateUrl {
    /// `sqlite:PATH`: an SQLite database file (created when missing).
    Sqlite(PathBuf),
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgresql://`), with libpq's
    /// query parameters; a Unix socket is `postgres://USER@/DB?host=/run/postgresql`.
    Postgres(String),
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
    /// assert!(StateUrl::parse("sqlite::memory:").is_err());
    /// assert!(StateUrl::parse("sqlite:file:state.db?mode=ro").is_err());
    /// assert!(StateUrl::parse("postgres://cardex@db.internal/cardex").is_ok());
    /// assert!(StateUrl::parse("postgres://cardex@/cardex?host=/run/postgresql").is_ok());
    /// assert!(StateUrl::parse("postgres://cardex@db.internal").is_err()); // no database
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
                // SQLite reads these as an in-memory database (which keeps nothing past
                // the process) or as its URI forms, not as the file they look like.
                if path == ":memory:" || path.starts_with("file:") || path.contains('?') {
                    return Err(bad(
                        "the state is a file and PATH its path: SQLite's `:memory:` (which \
                         keeps nothing) and its URI forms (`file:`, `?mode=`) are not taken",
                    ));
                }
                Ok(StateUrl::Sqlite(PathBuf::from(path)))
            }
            "postgres" | "postgresql" => {
                let config = tokio_postgres::Config::from_str(text)
                    .map_err(|e| bad(&format!("the PostgreSQL driver does not take it ({e})")))?;
                // Each named, not left to defaults: a URL without a database would put the
                // state in whatever database the server defaults to.
                let no_host = config.get_hosts().iter().all(|host| {
                    matches!(host, tokio_postgres::config::Host::Tcp(name) if name.is_empty())
                });
                if no_host && config.get_hostaddrs().is_empty() {
                    return Err(bad("it names no host (`@HOST`, or `?host=/socket/folder`)"));
                }
                if config.get_user().is_none_or(str::is_empty) {
                    return Err(bad("it names no user (`USER@`)"));
                }
                if config.get_dbname().is_none_or(str::is_empty) {
                    return Err(bad("it names no database (`/DB` after the host)"));
                }
                Ok(StateUrl::Postgres(text.to_string()))
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
            StateUrl::Postgres(url) => f.write_str(&without_password(url)),
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
            "`{}` is not a state URL: {}; the forms are `sqlite:PATH` (an SQLite file, created when missing) and `postgres://USER@HOST[:PORT]/DB` (PostgreSQL, for replicas; a Unix socket is `postgres://USER@/DB?host=/run/postgresql`)",
            without_password(&self.url), self.reason
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
        /// What the database (or its driver) said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another server runs on this SQLite state.
    InUse {
        /// The state, as configured.
        state: String,
    },
    /// The SQLite file can only be read.
    ReadOnly {
        /// The state, as configured.
        state: String,
    },
    /// No state where one must exist: no SQLite file, or a PostgreSQL database without
    /// cardex's schema ([`State::open_existing`]).
    NoState {
        /// The state, as configured.
        state: String,
    },
    /// The SQLite file holds tables but no cardex schema: another program's database.
    NotCardex {
        /// The state, as configured.
        state: String,
    },
    /// SQLite cannot open or create the file: its folder is missing or is a file, the path
    /// names a folder, or the file or its folder cannot be read and written.
    CannotOpen {
        /// The state, as configured.
        state: String,
        /// Why, as cardex found it.
        why: &'static str,
    },
    /// A stored event that is not an event object (the outbox was edited by hand).
    BadEvent {
        /// What serde_json said.
        reason: String,
    },
    /// The saved marks of the last snapshot do not parse (edited by hand).
    BadMarks {
        /// What serde_json said.
        reason: String,
    },
    /// The PostgreSQL table `cardex_schema` is not one cardex wrote: several rows, a
    /// negative or null version, a column of another type.
    ForeignSchemaTable {
        /// The state, as configured.
        state: String,
        /// What is wrong with it.
        why: String,
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
    /// An imported key that the state holds for another team.
    KeyOfAnotherTeam {
        /// The team the accounts file gives the key to.
        team: String,
        /// The team the state holds it for.
        holder: String,
        /// The key's SHA-256 hash, as the file gives it.
        sha256: String,
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
            } => {
                // The driver's own words say what failed; its causes say why (connection
                // refused, no such socket, a timeout).
                let causes = causes(source.as_ref());
                write!(f, "{state}: cannot {doing}: {source}{causes}")
            }
            StateError::ForeignSchemaTable { state, why } => write!(
                f,
                "{state}: its table `cardex_schema` {why}, so cardex did not write it; nothing was changed: give --state a database of its own for cardex, or restore a backup"
            ),
            StateError::NewerSchema {
                state,
                found,
                known,
            } => write!(
                f,
                "{state}: the schema is version {found}, written by a newer cardex; this one knows versions up to {known}: run the newer cardex, or restore a backup"
            ),
            StateError::InUse { state } => write!(
                f,
                "{state}: another cardex serve is running on this state; one server runs on an SQLite state (replicas share a PostgreSQL one)"
            ),
            StateError::ReadOnly { state } => write!(
                f,
                "{state}: the database cannot be written (the file, or its folder, where SQLite keeps its `-wal` and `-shm` files, is read-only); cardex keeps accounts, credits and webhook events there: make both writable"
            ),
            StateError::NoState { state } => write!(
                f,
                "no state at {state}: no cardex state was made there (`cardex accounts add-key` or `cardex accounts import` makes one)"
            ),
            StateError::NotCardex { state } => write!(
                f,
                "{state}: the file is a database of another program (it holds tables, and no cardex schema); nothing was written to it: give --state a new file, or the file of a cardex state"
            ),
            StateError::CannotOpen { state, why } => {
                write!(f, "{state}: cannot open the database: {why}")
            }
            StateError::BadEvent { reason } => {
                write!(f, "an event in the outbox is not an event object: {reason}")
            }
            StateError::BadMarks { reason } => write!(
                f,
                "the saved marks of the last snapshot do not parse ({reason}); deleting the `marks`, `marks_fingerprint` and `marks_generation` rows of the `meta` table makes the next start compare with nothing"
            ),
            StateError::BadTeamId { team } => write!(
                f,
                "team id `{team}` is not 1 to 64 letters, digits, `_` or `-`"
            ),
            StateError::KeyOfAnotherTeam {
                team,
                holder,
                sha256,
            } => write!(
                f,
                "the accounts file gives team `{team}` the key with sha256 `{sha256}`, which team `{holder}` holds in the state; a key belongs to one team (revoke it there first: `cardex accounts revoke-key --sha256 {sha256}`); nothing was imported"
            ),
            StateError::NoRandomness(e) => write!(f, "no randomness from the OS: {e}"),
        }
    }
}

impl StateError {
    /// Whether the error says the database cannot serve now, rather than that it refused
    /// the statement for good: no connection (refused, broken, timed out, none left in
    /// the pool), or any error but a fault ([`is_fault`]).
    pub(crate) fn is_outage(&self) -> bool {
        let StateError::Database { source, .. } = self else {
            return false;
        };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
        while let Some(error) = cause {
            if let Some(pg) = error.downcast_ref::<tokio_postgres::Error>() {
                return !pg.code().is_some_and(|code| is_fault(code.code()));
            }
            cause = error.source();
        }
        true
    }
}

/// Whether an error of SQLSTATE `code` is a fault in the database's setup, which waiting
/// does not mend: class 0A (a feature not supported), 22 (data), 23 (a constraint), 28
/// (the role may not log in: a password changed, `NOLOGIN`), 2F, 38, 39 and P0 (a
/// function failed), 3D and 3F (the database or schema gone), 42 (a permission, a table
/// or function missing or altered), 54 (a program limit), XX (an internal error, data
/// corrupted). Every other class is taken for an outage: 08 (connection), 25 (a read-only
/// transaction: a standby after a failover), 40 (a rollback: deadlock, serialization), 53
/// (resources), 55 (a lock not available), 57 (shutdown, a cancelled or timed-out
/// statement), 58 (system).
fn is_fault(code: &str) -> bool {
    matches!(
        code.get(..2),
        Some(
            "0A" | "22"
                | "23"
                | "28"
                | "2F"
                | "38"
                | "39"
                | "3D"
                | "3F"
                | "42"
                | "54"
                | "P0"
                | "XX"
        )
    )
}

// The message includes its cause's, so `source()` is `None`: a reporter that prints the
// chain of causes prints each message once.
impl std::error::Error for StateError {}

/// The words of `error`'s causes, each after `: `, leaving out one whose words the error
/// before it already said (drivers often repeat their cause).
pub(crate) fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut said = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !said.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
            said = text;
        }
        cause = c.source();
    }
    out
}

/// `url` with its passwords (if any) replaced by `***`, for messages and logs: the one in
/// the user information, taken to run to the last `@` before the query (so a `/`, `?` or
/// an unencoded `@` in the password is hidden too), the value of every `password=` pair
/// wherever it stands (its name percent-decoded, as the driver decodes it), and, in a
/// text that is no URL, a `password = value` of libpq's keyword form.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return hide_keyword_password(url);
    };
    let mut out = format!("{scheme}://");
    // The `password=` values first, each to the next `?` or `&` (an `@` in one is the
    // password's); then the user part, to the last `@` before the query: the first `?`
    // after the first `@` that a parameter's name and `=` follow (any other `?` may be
    // the password's).
    let rest = hide_password_pairs(rest);
    let first_at = rest.find('@').unwrap_or(rest.len());
    let query = rest
        .match_indices('?')
        .map(|(at, _)| at)
        .filter(|&at| at > first_at)
        .find(|&at| {
            let after = &rest[at + 1..];
            let name = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'%' | b'-' | b'.'))
                .count();
            name > 0 && after.as_bytes().get(name) == Some(&b'=')
        })
        .unwrap_or(rest.len());
    let user_end = rest[..query].rfind('@');
    let after = match user_end.map(|at| (&rest[..at], &rest[at + 1..])) {
        Some((userinfo, after)) => {
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(&hide_password_pairs(user));
                    out.push_str(":***");
                }
                None => out.push_str(&hide_password_pairs(userinfo)),
            }
            out.push('@');
            after
        }
        None => &rest,
    };
    out.push_str(&hide_password_pairs(after));
    out
}

/// `text` with the value of each `password` of libpq's keyword form (`host=h
/// password=secret`, `password = 'a b'`) replaced by `***`: to the closing quote of a
/// quoted value, else to the next white space.
fn hide_keyword_password(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.to_ascii_lowercase().find("password") {
        let after_name = &rest[at + "password".len()..];
        let spaced = after_name.trim_start();
        let Some(value) = spaced.strip_prefix('=') else {
            out.push_str(&rest[..at + "password".len()]);
            rest = after_name;
            continue;
        };
        let value = value.trim_start();
        let end = match value.strip_prefix('\'') {
            Some(quoted) => {
                let mut chars = quoted.char_indices();
                let mut close = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '\'' => {
                            close = i + 1;
                            break;
                        }
                        _ => {}
                    }
                }
                1 + close
            }
            // Unquoted: to the next white space that no `\\` escapes.
            None => {
                let mut chars = value.char_indices();
                let mut end = value.len();
                while let Some((i, c)) = chars.next() {
                    if c == '\\' {
                        chars.next();
                    } else if c.is_whitespace() {
                        end = i;
                        break;
                    }
                }
                end
            }
        };
        out.push_str(&rest[..at + "password".len()]);
        out.push_str("=***");
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with the value of each `password=` pair (pairs split at `?` and `&`) replaced
/// by `***`.
fn hide_password_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let end = rest.find(['?', '&']).unwrap_or(rest.len());
        let (pair, after) = rest.split_at(end);
        match pair.split_once('=') {
            Some((key, _))
                if percent_encoding::percent_decode_str(key)
                    .decode_utf8_lossy()
                    .eq_ignore_ascii_case("password") =>
            {
                out.push_str(key);
                out.push_str("=***");
            }
            _ => out.push_str(pair),
        }
        let Some(separator) = after.chars().next() else {
            return out;
        };
        out.push(separator);
        rest = &after[1..];
    }
}

/// Each team's place in `teams`, by id: the keys read after the teams go to theirs
/// without a search per key.
fn team_numbers(
    teams: &[crate::server::accounts::Team],
) -> std::collections::HashMap<String, usize> {
    teams
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect()
}

/// A credit cost as the state stores it, as the server charges it: at most
/// [`MAX_CREDIT_COST`](crate::server::accounts::MAX_CREDIT_COST), which a state written
/// before that limit may exceed.
fn stored_cost(credits: i64) -> u64 {
    (credits.max(0) as u64).min(crate::server::accounts::MAX_CREDIT_COST)
}

/// The credit cost of the endpoint named `name` in `costs`.
fn cost_slot<'c>(costs: &'c mut CreditCosts, name: &str) -> Option<&'c mut u64> {
    Some(match name {
        "cards" => &mut costs.cards,
        "card" => &mut costs.card,
        "expansion_cards" => &mut costs.expansion_cards,
        "expansions" => &mut costs.expansions,
        "expansion" => &mut costs.expansion,
        "usage" => &mut costs.usage,
        _ => return None,
    })
}

/// A new API key, from OS randomness.
fn new_key() -> Result<String, StateError> {
    accounts::new_key().map_err(|e| match e {
        accounts::AddKeyError::NoRandomness(e) => StateError::NoRandomness(e),
        accounts::AddKeyError::BadTeamId { team } => StateError::BadTeamId { team },
    })
}

/// A new salt for event ids: 32 hex digits of OS randomness.
fn new_salt() -> String {
    crate::server::random::hex16()
}

/// An event stored in the outbox.
fn event_from_json(body: &str) -> Result<Event, StateError> {
    serde_json::from_str(body).map_err(|e| StateError::BadEvent {
        reason: e.to_string(),
    })
}

/// A delivery a server holds the lease of.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// Its place in the outbox; deliveries to one subscription go in this order.
    pub seq: i64,
    /// The subscription id.
    pub subscription: String,
    /// The event.
    pub event: Event,
    /// The attempts made so far (by any server).
    pub attempts: u32,
    /// When the first attempt was made (Unix seconds, by the clock of the server that made
    /// it; the give-up time is read against each attempting server's own clock).
    pub first_attempt: Option<f64>,
}

/// The marks of the last snapshot whose events are all in the outbox, and the
/// generation of those events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedMarks {
    /// How many times marks were saved before (event ids are made from it).
    pub generation: u64,
    /// The marks, as [`crate::Marks::to_json`] wrote them.
    pub marks: String,
}

/// Marks to save with a publication: as JSON, and a fingerprint of that JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MarksToSave<'a> {
    /// [`crate::Marks::to_json`].
    pub json: &'a str,
    /// A SHA-256 of `json`, as hex.
    pub fingerprint: &'a str,
}

/// The opened state database.
#[derive(Debug)]
#[non_exhaustive]
pub enum State {
    /// SQLite: one server.
    Sqlite(SqliteState),
    /// PostgreSQL: any number of replicas.
    Postgres(PgState),
}

/// Seconds since the Unix epoch, with a fraction: SQLite's clock is the server's own.
fn now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl State {
    /// Opens (and migrates) the state `url` names.
    ///
    /// # Errors
    ///
    /// A database that cannot be opened, reached, written or migrated.
    pub async fn open(url: &StateUrl) -> Result<State, StateError> {
        match url {
            StateUrl::Sqlite(path) => Ok(State::Sqlite(SqliteState::open(path)?)),
            StateUrl::Postgres(text) => Ok(State::Postgres(
                PgState::open(text, &url.to_string()).await?,
            )),
        }
    }

    /// Opens (and migrates) the state `url` names, which must exist already: an SQLite
    /// file that is there, a PostgreSQL database that holds cardex's schema. For commands
    /// that read a state or change what is in it, so that a mistyped path or database is
    /// not made a new, empty state.
    ///
    /// # Errors
    ///
    /// [`StateError::NoState`] when there is none; then as [`State::open`].
    pub async fn open_existing(url: &StateUrl) -> Result<State, StateError> {
        match url {
            StateUrl::Sqlite(path) if !path.exists() => Err(StateError::NoState {
                state: url.to_string(),
            }),
            StateUrl::Sqlite(path) => Ok(State::Sqlite(SqliteState::open(path)?)),
            StateUrl::Postgres(text) => Ok(State::Postgres(
                PgState::open_existing(text, &url.to_string()).await?,
            )),
        }
    }

    /// The engine's name: `SQLite` or `PostgreSQL`.
    pub fn engine(&self) -> &'static str {
        match self {
            State::Sqlite(_) => "SQLite",
            State::Postgres(_) => "PostgreSQL",
        }
    }

    /// The schema version of the database.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn schema_version(&self) -> Result<i64, StateError> {
        match self {
            State::Sqlite(s) => s.schema_version(),
            State::Postgres(s) => s.schema_version().await,
        }
    }

    /// The accounts.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn accounts(&self) -> Result<Accounts, StateError> {
        match self {
            State::Sqlite(s) => s.accounts(),
            State::Postgres(s) => bounded(s, "read the accounts", s.accounts()).await,
        }
    }

    /// The error of `doing` failing for `source`, naming this state as its messages do.
    pub(crate) fn failure(
        &self,
        doing: &'static str,
        source: Box<dyn std::error::Error + Send + Sync>,
    ) -> StateError {
        let state = match self {
            State::Sqlite(s) => s.shown(),
            State::Postgres(s) => s.shown().to_string(),
        };
        StateError::Database {
            state,
            doing,
            source,
        }
    }

    /// With SQLite, the accounts, read on the calling thread (`None` with PostgreSQL, which
    /// reads them asynchronously: [`State::accounts`]).
    pub(crate) fn accounts_in_place(&self) -> Option<Result<Accounts, StateError>> {
        match self {
            State::Sqlite(s) => Some(s.accounts()),
            State::Postgres(_) => None,
        }
    }

    /// Makes, stores (as a hash) and returns a new key for `team`, creating the team
    /// with `plan` when it does not exist.
    ///
    /// # Errors
    ///
    /// An invalid team id, no randomness, or the database's.
    pub async fn add_key(&self, team: &str, plan: Plan, now: u64) -> Result<String, StateError> {
        match self {
            State::Sqlite(s) => s.add_key(team, plan, now),
            State::Postgres(s) => s.add_key(team, plan, now).await,
        }
    }

    /// Revokes the key whose SHA-256 hash is `sha256` (see
    /// [`hash_key`](crate::server::accounts::hash_key)): running servers
    /// stop accepting it within a second. Returns its team, or `None` when no key has
    /// that hash.
    ///
    /// # Errors
    ///
    /// The database's; then nothing is revoked.
    pub async fn revoke_key(&self, sha256: &str) -> Result<Option<String>, StateError> {
        match self {
            State::Sqlite(s) => s.revoke_key(sha256),
            State::Postgres(s) => s.revoke_key(sha256).await,
        }
    }

    /// Imports an accounts file, in one transaction.
    ///
    /// # Errors
    ///
    /// The database's; then nothing is imported.
    pub async fn import(&self, accounts: &Accounts) -> Result<(), StateError> {
        match self {
            State::Sqlite(s) => s.import(accounts),
            State::Postgres(s) => s.import(accounts).await,
        }
    }

    /// The credits `team` has used so far (not the usage board's lagging figure).
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn used(&self, team: &str) -> Result<u64, StateError> {
        match self {
            State::Sqlite(s) => s.used(team),
            State::Postgres(s) => bounded(s, "read the credits used", s.used(team)).await,
        }
    }

    /// The credits each team has used so far, by team (teams that used none may be
    /// missing): [`State::used`] for every team in one statement.
    ///
    /// # Errors
    ///
    /// The database's.
    pub async fn used_by_team(&self) -> Result<std::collections::HashMap<String, u64>, StateError> {
        match self {
            State::Sqlite(s) => s.used_by_team(),
            State::Postgres(s) => bounded(s, "read the credits used", s.used_by_team()).await,
        }
    }

    /// A number that changes whenever keys or teams are added or imported: the server
    /// reads the accounts again when it does.
    pub(crate) async fn accounts_version(&self) -> Result<u64, StateError> {
        match self {
            State::Sqlite(s) => s.accounts_version(),
            State::Postgres(s) => {
                bounded(s, "read the accounts version", s.accounts_version()).await
            }
        }
    }

    pub(crate) async fn salt(&self) -> Result<String, StateError> {
        match self {
            State::Sqlite(s) => s.salt(),
            State::Postgres(s) => bounded(s, "read the event id salt", s.salt()).await,
        }
    }

    pub(crate) async fn saved_marks(&self) -> Result<Option<SavedMarks>, StateError> {
        match self {
            State::Sqlite(s) => s.saved_marks(),
            State::Postgres(s) => bounded(s, "read the saved marks", s.saved_marks()).await,
        }
    }

    /// Publishes the change of a reload (or of a start) to the marks `next`, in one
    /// transaction: its generation is the saved marks' generation when they are `next`
    /// already (another replica published this very change: the same events, which the
    /// outbox holds once), else one more, and then `next` is saved; `build` makes the
    /// events, with the subscriptions each goes to, for that generation; each event not
    /// already in the outbox is written with its deliveries. Returns the deliveries
    /// written and the generation.
    pub(crate) async fn publish(
        &self,
        next: &MarksToSave<'_>,
        build: impl FnOnce(u64) -> Vec<(Event, Vec<String>)>,
    ) -> Result<(usize, u64), StateError> {
        match self {
            State::Sqlite(s) => s.publish(next, build, now_f64()),
            State::Postgres(s) => bounded(s, "publish a change", s.publish(next, build)).await,
        }
    }

    pub(crate) async fn claim(
        &self,
        subscription: &str,
        holder: &str,
        lease: f64,
    ) -> Result<Option<Claimed>, StateError> {
        match self {
            State::Sqlite(s) => s.claim(subscription, holder, lease, now_f64()),
            State::Postgres(s) => {
                bounded(s, "claim a delivery", s.claim(subscription, holder, lease)).await
            }
        }
    }

    pub(crate) async fn attempted(
        &self,
        claimed: &Claimed,
        holder: &str,
        lease: f64,
    ) -> Result<bool, StateError> {
        match self {
            State::Sqlite(s) => s.attempted(claimed, holder, lease, now_f64()),
            State::Postgres(s) => {
                bounded(
                    s,
                    "record a delivery attempt",
                    s.attempted(claimed, holder, lease),
                )
                .await
            }
        }
    }

    pub(crate) async fn finish(&self, claimed: &Claimed, holder: &str) -> Result<(), StateError> {
        match self {
            State::Sqlite(s) => s.finish(claimed, holder, now_f64()),
            State::Postgres(s) => bounded(s, "finish a delivery", s.finish(claimed, holder)).await,
        }
    }

    pub(crate) async fn pending(&self) -> Result<Vec<(String, u64)>, StateError> {
        match self {
            State::Sqlite(s) => s.pending(),
            State::Postgres(s) => bounded(s, "read the pending deliveries", s.pending()).await,
        }
    }

    pub(crate) async fn refresh_usage(&self, min_age: f64) -> Result<bool, StateError> {
        match self {
            State::Sqlite(s) => s.refresh_usage(min_age, now_f64()),
            State::Postgres(s) => {
                bounded(s, "refresh the usage board", s.refresh_usage(min_age)).await
            }
        }
    }

    pub(crate) async fn usage(&self, team: &str) -> Result<(u64, f64), StateError> {
        match self {
            State::Sqlite(s) => s.usage(team),
            State::Postgres(s) => bounded(s, "read the usage", s.usage(team)).await,
        }
    }
}

/// How long a PostgreSQL call of the server's background work (the accounts check, the
/// usage board, the webhook outbox) or of a request (usage, credits used) may take: a
/// database that stops answering without closing its connections (its host gone, its
/// processes stopped) would otherwise hold the caller until TCP gives up, minutes later,
/// and with it the deliveries, the reloads or the accounts check. The admission of a
/// request has its own, shorter bound (`charging.rs`).
const PG_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `call` on `pg`, failed as `doing` when it takes longer than [`PG_CALL_TIMEOUT`]. The
/// connection it waited on goes back to the pool with its request unanswered: a later call
/// on it waits behind it, within its own bound, until the database answers or TCP's
/// keepalive (set by [`PgState::open`]) finds the peer gone and the pool drops it.
pub(crate) async fn bounded<T>(
    pg: &PgState,
    doing: &'static str,
    call: impl std::future::Future<Output = Result<T, StateError>>,
) -> Result<T, StateError> {
    match tokio::time::timeout(PG_CALL_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => Err(StateError::Database {
            state: pg.shown().to_string(),
            doing,
            source: format!("no answer in {} s", PG_CALL_TIMEOUT.as_secs()).into(),
        }),
    }
}

/// The default state beside the snapshot folder `data`: `<data>.state.db`, an SQLite file
/// next to the folder (so `data/` gets `data.state.db`).
pub fn default_state(data: &Path) -> StateUrl {
    // The name is the folder's as the path gives it, `.` and `..` taken as the folders
    // they stand for (`snap/.` is `snap`) but a link kept (`/srv/current`, a link to a
    // release, is `current`); the place is beside the folder the path leads to.
    let mut lexical = PathBuf::new();
    for part in std::path::absolute(data)
        .unwrap_or_else(|_| data.to_path_buf())
        .components()
    {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut name = lexical
        .file_name()
        .map_or_else(|| std::ffi::OsString::from("data"), ToOwned::to_owned);
    name.push(".state.db");
    let parent = std::fs::canonicalize(data)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .or_else(|| lexical.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    StateUrl::Sqlite(parent.join(name))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sqlstate_classes_are_faults_or_outages() {
        for fault in [
            "42501", "42P01", "42883", "23505", "22003", "0A000", "28P01", "28000", "3D000",
            "3F000", "P0001", "XX000", "54000", "2F005", "38001", "39P01",
        ] {
            assert!(super::is_fault(fault), "{fault}");
        }
        for outage in [
            "08006", "25006", "40001", "40P01", "53300", "55P03", "57014", "57P01", "58030",
        ] {
            assert!(!super::is_fault(outage), "{outage}");
        }
    }

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
            ("postgres://", "it names no host"),
            ("postgres://cardex@/cardex", "it names no host"),
            ("postgres://db.internal/cardex", "it names no user"),
            ("postgres://cardex@db.internal", "it names no database"),
            (
                "postgres://cardex@db.internal:5433/",
                "it names no database",
            ),
            ("postgres://cardex@:5432/cardex", "it names no host"),
        ] {
            let e = StateUrl::parse(bad).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
            assert!(e.to_string().contains("the forms are `sqlite:PATH`"), "{e}");
        }
        let pg = StateUrl::parse("postgres://cardex:secret@db.internal:5433/cardex").unwrap();
        assert_eq!(
            pg.to_string(),
            "postgres://cardex:***@db.internal:5433/cardex"
        );
        assert!(matches!(
            StateUrl::parse("postgresql://cardex@/cardex?host=/run/postgresql").unwrap(),
            StateUrl::Postgres(_)
        ));
        for (url, shown) in [
            (
                "postgres://u@127.0.0.1:1/db?password=secretpw&connect_timeout=2",
                "postgres://u@127.0.0.1:1/db?password=***&connect_timeout=2",
            ),
            (
                "postgres://u:sec/retpw@127.0.0.1:1/db",
                "postgres://u:***@127.0.0.1:1/db",
            ),
            (
                "postgresql://cardex@/cardex?host=/run/postgresql",
                "postgresql://cardex@/cardex?host=/run/postgresql",
            ),
            (
                "postgres://u@h/db?password=p@ss",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?application_name=a@b&password=hunter2",
                "postgres://u@h/db?application_name=a@b&password=***",
            ),
            (
                "postgres://u@h/db?pass%77ord=hunter2&connect_timeout=2",
                "postgres://u@h/db?pass%77ord=***&connect_timeout=2",
            ),
            // An unencoded `@` (with a `?` after it) in the password: all of it hidden.
            (
                "postgres://cardex:p@ss@127.0.0.1:5432/cardex",
                "postgres://cardex:***@127.0.0.1:5432/cardex",
            ),
            (
                "postgres://cardex:p?s@ss@h/db?application_name=a@b",
                "postgres://cardex:***@h/db?application_name=a@b",
            ),
        ] {
            assert_eq!(StateUrl::parse(url).unwrap().to_string(), shown);
        }
        // A URL the driver refuses shows no part of its password either.
        for (url, shown) in [
            (
                "postgres://u:p@s?s@127.0.0.1:1/db",
                "postgres://u:***@127.0.0.1:1/db",
            ),
            (
                "postgres://u:a@b/c?d@127.0.0.1:1/db",
                "postgres://u:***@127.0.0.1:1/db",
            ),
        ] {
            let e = StateUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(&format!("`{shown}`")), "{e}");
        }
        // A `?name=` inside the password is not taken for the query.
        let url = "postgres://u:Xy?k=9z@127.0.0.1:1/db";
        let shown = match StateUrl::parse(url) {
            Ok(state) => state.to_string(),
            Err(e) => e.to_string(),
        };
        assert!(shown.contains("postgres://u:***@127.0.0.1:1/db"), "{shown}");
        assert!(!shown.contains("9z"), "{shown}");
        // libpq's keyword form is no state URL, and its password is not shown.
        for (text, shown) in [
            (
                "host=127.0.0.1 user=cardex password=topsecret dbname=cardex",
                "host=127.0.0.1 user=cardex password=*** dbname=cardex",
            ),
            (
                "PASSWORD = 'top \\' secret' dbname=cardex",
                "PASSWORD=*** dbname=cardex",
            ),
            ("password='unclosed secret", "password=***"),
            ("password=top\\ secret host=h", "password=*** host=h"),
            ("passwords are here", "passwords are here"),
        ] {
            let e = StateUrl::parse(text).unwrap_err().to_string();
            assert!(e.contains(&format!("`{shown}` is not a state URL")), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
        let e = StateUrl::parse("postgres://u:pw@h/db?sslmode=bogus&password=x1").unwrap_err();
        assert!(!e.to_string().contains("x1"), "{e}");
        assert!(
            e.to_string()
                .contains("the PostgreSQL driver does not take it"),
            "{e}"
        );
        assert!(!e.to_string().contains("pw@"), "{e}");
        // An `@` in a query's password is not taken for the end of a user part.
        let e = StateUrl::parse("postgres://h/db?password=p@ss").unwrap_err();
        assert!(
            e.to_string().contains("postgres://h/db?password=***`"),
            "{e}"
        );
        assert!(!e.to_string().contains("ss`"), "{e}");
        // A `?` in the password of the user part: the driver ends the user part at the
        // first `@`, and so does the display.
        assert_eq!(
            StateUrl::parse("postgres://u:secret?x@h/db")
                .unwrap()
                .to_string(),
            "postgres://u:***@h/db"
        );
        let e = StateUrl::parse("postgres://u:p?ss@h").unwrap_err();
        assert!(e.to_string().contains("it names no database"), "{e}");
        assert!(!e.to_string().contains("p?ss"), "{e}");
    }

    #[test]
    fn the_default_state_is_a_file_beside_the_snapshot_folder() {
        let dir = crate::server::testing::scratch("state", "default");
        std::fs::create_dir_all(dir.join("snap")).unwrap();
        assert_eq!(
            default_state(&dir.join("snap")),
            StateUrl::Sqlite(std::fs::canonicalize(&dir).unwrap().join("snap.state.db"))
        );
        // `snap/.` and `snap/sub/..` are the folder `snap`.
        std::fs::create_dir_all(dir.join("snap/sub")).unwrap();
        for path in [dir.join("snap/."), dir.join("snap/sub/..")] {
            assert_eq!(
                default_state(&path),
                StateUrl::Sqlite(std::fs::canonicalize(&dir).unwrap().join("snap.state.db")),
                "{}",
                path.display()
            );
        }
        // A link to a release keeps its own name, beside the release: switching the link
        // to another release keeps the state.
        std::fs::create_dir_all(dir.join("releases/r42")).unwrap();
        std::fs::create_dir_all(dir.join("releases/r43")).unwrap();
        let link = dir.join("current");
        let releases = std::fs::canonicalize(dir.join("releases")).unwrap();
        for release in ["r42", "r43"] {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(dir.join("releases").join(release), &link).unwrap();
            assert_eq!(
                default_state(&link),
                StateUrl::Sqlite(releases.join("current.state.db"))
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
