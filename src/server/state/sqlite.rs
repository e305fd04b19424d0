//! The state in SQLite: one database file, in WAL mode (readers never wait for the
//! writer), its schema versioned in `PRAGMA user_version` and migrated forward when it
//! opens. A request's charge is committed before its answer leaves (grouped with the
//! charges of concurrent requests, [`ChargeWriter`]): a killed process loses none (the
//! WAL write is in the kernel), and [`SqliteState::checkpoint`] syncs the WAL for a
//! machine crash.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{Claimed, MarksToSave, SavedMarks, StateError};
use crate::server::accounts::{
    hash_key, valid_team_id, Accounts, CreditCosts, Endpoint, Plan, StoredKey, Team,
};
use crate::Event;

/// The newest schema version this server knows.
pub const SCHEMA_VERSION: i64 = 3;

/// The migrations, in order: `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    // 1: accounts and credits used.
    "CREATE TABLE teams (
         id TEXT PRIMARY KEY,
         total_credits INTEGER NOT NULL,
         overage_credit_rate REAL NOT NULL
     );
     CREATE TABLE api_keys (
         sha256 TEXT PRIMARY KEY,
         team TEXT NOT NULL REFERENCES teams(id),
         created INTEGER NOT NULL
     );
     CREATE TABLE credit_costs (
         endpoint TEXT PRIMARY KEY,
         credits INTEGER NOT NULL
     );
     CREATE TABLE credits_used (
         team TEXT PRIMARY KEY,
         used INTEGER NOT NULL
     );",
    // 2: the usage board, the webhook outbox and the marks of the last snapshot.
    "CREATE TABLE meta (
         key TEXT PRIMARY KEY,
         value TEXT NOT NULL
     );
     CREATE TABLE usage_board (
         team TEXT PRIMARY KEY,
         used INTEGER NOT NULL
     );
     CREATE TABLE events (
         id TEXT PRIMARY KEY,
         body TEXT NOT NULL,
         created REAL NOT NULL
     );
     CREATE TABLE deliveries (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         event_id TEXT NOT NULL REFERENCES events(id),
         subscription TEXT NOT NULL,
         done INTEGER NOT NULL DEFAULT 0,
         attempts INTEGER NOT NULL DEFAULT 0,
         first_attempt REAL,
         lease_holder TEXT,
         lease_until REAL,
         UNIQUE (subscription, event_id)
     );
     CREATE INDEX deliveries_pending ON deliveries (subscription, seq) WHERE done = 0;",
    // 3: the server's charges, appended by its group commits and folded into
    // `credits_used` every [`FOLD_EVERY_ROWS`] rows.
    "CREATE TABLE charges (
         seq INTEGER PRIMARY KEY,
         team TEXT NOT NULL,
         credits INTEGER NOT NULL
     );",
];

/// Folds the appended charges into `credits_used` (in the caller's transaction).
const FOLD_CHARGES: [&str; 2] = [
    "INSERT INTO credits_used (team, used)
         SELECT team, SUM(credits) FROM charges WHERE true GROUP BY team
         ON CONFLICT (team) DO UPDATE SET used = used + excluded.used",
    "DELETE FROM charges",
];

/// The credits used per team: folded, plus appended since.
const CREDITS_USED: &str = "SELECT team, SUM(used) FROM (
         SELECT team, used FROM credits_used
         UNION ALL SELECT team, credits FROM charges
     ) GROUP BY team";

/// At most this many times the charge writer gives its core to the request workers
/// before it commits, while they keep adding charges to its group. One turn: while a
/// group commits, the workers serve the requests that will make the next one, and a
/// longer gather makes groups of nearly every connection, which leave the workers idle
/// during their commit (with 4 turns the http bench serves about a tenth fewer searches).
const GATHER_YIELDS: usize = 1;

/// At most this many times a request lets the other tasks run, looking for its charge's
/// outcome after each, before it parks until told (see [`ChargeWriter`]).
const OUTCOME_YIELDS: usize = 16;

/// How long a charge group waits for another connection's write lock before its
/// requests are answered 503 (the state's other connections wait as long).
const WRITER_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The rows the charge writer appends before its next group also folds them. A fold
/// updates a row per team it meets: with 2,000 teams charging, folding every 512 rows
/// would more than double an average group commit, while at this size it adds about a
/// third, and the unfolded rows stay a few hundred kilobytes.
const FOLD_EVERY_ROWS: usize = 8192;

/// Changes the accounts version that the server watches (in the transaction that changes
/// the accounts).
const BUMP_ACCOUNTS_VERSION: &str = "INSERT INTO meta (key, value) VALUES ('accounts_version', '1')
     ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1";

/// The state in one SQLite file.
#[derive(Debug)]
pub struct SqliteState {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteState {
    /// Opens the database at `path` (creating it when missing) and migrates its schema to
    /// [`SCHEMA_VERSION`], the pending migrations in one transaction.
    ///
    /// # Errors
    ///
    /// A database that cannot be opened or written (a read-only file, a folder that does
    /// not exist, a folder as the path), another program's database, or one whose schema a
    /// newer cardex wrote.
    pub fn open(path: &Path) -> Result<SqliteState, StateError> {
        let shown = || format!("sqlite:{}", path.display());
        if let Some(why) = unopenable(path) {
            return Err(StateError::CannotOpen {
                state: shown(),
                why,
            });
        }
        let state = SqliteState {
            path: path.to_path_buf(),
            connection: Mutex::new(Connection::open(path).map_err(|source| {
                StateError::Database {
                    state: shown(),
                    doing: "open the database",
                    source: source.into(),
                }
            })?),
        };
        state.migrate()?;
        Ok(state)
    }

    /// Takes the server's lock on this state: an OS lock on `<file>.lock`, held while the
    /// returned file is open. One server runs on an SQLite state (its rate limit and
    /// delivery leases are its own); `cardex accounts` commands need no lock.
    ///
    /// # Errors
    ///
    /// [`StateError::InUse`] when another server holds it, or the file system's.
    pub fn lock_for_server(&self) -> Result<std::fs::File, StateError> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let state = self.shown();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| StateError::Database {
                state: state.clone(),
                doing: "open the lock file",
                source: e.into(),
            })?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(StateError::InUse { state }),
            Err(std::fs::TryLockError::Error(e)) => Err(StateError::Database {
                state,
                doing: "lock the state",
                source: e.into(),
            }),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state as its messages show it: `sqlite:PATH`.
    pub(crate) fn shown(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn fail(&self, doing: &'static str) -> impl Fn(rusqlite::Error) -> StateError + '_ {
        move |source| StateError::Database {
            state: self.shown(),
            doing,
            source: source.into(),
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn migrate(&self) -> Result<(), StateError> {
        let mut db = self.connection();
        if db.is_readonly("main").unwrap_or(false) {
            return Err(StateError::ReadOnly {
                state: self.shown(),
            });
        }
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(self.fail("set the busy timeout"))?;
        // A schema from a newer cardex is refused before anything is written to the file
        // (turning on write-ahead logging changes its header).
        // A file SQLite cannot write (or whose folder it cannot write its `-wal` and `-shm`
        // files in) fails here or at write-ahead logging: said as read-only.
        let read_only = |doing: &'static str| {
            move |e: rusqlite::Error| {
                match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ReadOnly) => StateError::ReadOnly {
                    state: self.shown(),
                },
                Some(rusqlite::ErrorCode::CannotOpen) => StateError::CannotOpen {
                    state: self.shown(),
                    why: "SQLite cannot open or create the file: the file and its folder must be readable and writable by this user",
                },
                _ => self.fail(doing)(e),
            }
            }
        };
        // The version and the tables in one statement (one snapshot): a state another
        // process makes meanwhile is seen whole, not as tables without a version.
        let (found, tables): (i64, i64) = db
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version), \
                        (SELECT count(*) FROM sqlite_master)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(read_only("read the schema version"))?;
        let newer = |found: i64| StateError::NewerSchema {
            state: self.shown(),
            found,
            known: SCHEMA_VERSION,
        };
        if found > SCHEMA_VERSION {
            return Err(newer(found));
        }
        // Version 0 with tables: not a file cardex made (its first migration sets the
        // version with its tables), so nothing is written to it.
        if found < 0 || (found == 0 && tables > 0) {
            return Err(StateError::NotCardex {
                state: self.shown(),
            });
        }
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(read_only("turn on write-ahead logging"))?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(self.fail("set the synchronous mode"))?;
        db.pragma_update(None, "foreign_keys", "ON")
            .map_err(self.fail("turn on foreign keys"))?;
        // At the current version nothing is written, and no write lock taken: a command
        // that only reads (`accounts list`) does not wait on a long write.
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        // All pending migrations in one transaction: one that fails leaves the schema as
        // it was.
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.fail("start a migration"))?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(self.fail("read the schema version"))?;
        if version > SCHEMA_VERSION {
            return Err(newer(version));
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        if version < 0 {
            return Err(StateError::NotCardex {
                state: self.shown(),
            });
        }
        for migration in &MIGRATIONS[version as usize..SCHEMA_VERSION as usize] {
            tx.execute_batch(migration)
                .map_err(self.fail("migrate the schema"))?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(self.fail("record the schema version"))?;
        tx.commit().map_err(self.fail("commit the migrations"))
    }

    /// The schema version of the database.
    ///
    /// # Errors
    ///
    /// The database's.
    pub fn schema_version(&self) -> Result<i64, StateError> {
        self.connection()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(self.fail("read the schema version"))
    }

    /// The accounts: every team with its plan and key hashes, and the credit costs.
    ///
    /// # Errors
    ///
    /// The database's.
    pub fn accounts(&self) -> Result<Accounts, StateError> {
        let db = self.connection();
        let read = self.fail("read the accounts");
        let mut teams: Vec<Team> = db
            .prepare("SELECT id, total_credits, overage_credit_rate FROM teams ORDER BY id")
            .and_then(|mut s| {
                s.query_map([], |row| {
                    Ok(Team {
                        id: row.get(0)?,
                        plan: Plan {
                            total_credits: row.get::<_, i64>(1)?.max(0) as u64,
                            overage_credit_rate: row.get(2)?,
                        },
                        keys: Vec::new(),
                    })
                })?
                .collect()
            })
            .map_err(&read)?;
        let keys: Vec<(String, StoredKey)> = db
            .prepare("SELECT team, sha256, created FROM api_keys ORDER BY created, sha256")
            .and_then(|mut s| {
                s.query_map([], |row| {
                    Ok((
                        row.get(0)?,
                        StoredKey {
                            sha256: row.get(1)?,
                            created: row.get::<_, i64>(2)?.max(0) as u64,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(&read)?;
        let number = super::team_numbers(&teams);
        for (team, key) in keys {
            if let Some(&i) = number.get(team.as_str()) {
                teams[i].keys.push(key);
            }
        }
        let mut credit_costs = CreditCosts::default();
        let costs: Vec<(String, i64)> = db
            .prepare("SELECT endpoint, credits FROM credit_costs")
            .and_then(|mut s| {
                s.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .map_err(&read)?;
        for (name, credits) in costs {
            if let Some(slot) = super::cost_slot(&mut credit_costs, &name) {
                *slot = super::stored_cost(credits);
            }
        }
        Ok(Accounts {
            teams,
            credit_costs,
        })
    }

    /// Makes a new random key for team `team` (creating the team with `plan` if it does
    /// not exist), stores its hash, and returns the key: the only time it is seen.
    ///
    /// # Errors
    ///
    /// An invalid team id, no randomness from the OS, or the database's.
    pub fn add_key(&self, team: &str, plan: Plan, now: u64) -> Result<String, StateError> {
        if !valid_team_id(team) {
            return Err(StateError::BadTeamId {
                team: team.to_string(),
            });
        }
        let key = super::new_key()?;
        let mut db = self.connection();
        let write = self.fail("add the key");
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&write)?;
        tx.execute(
            "INSERT INTO teams (id, total_credits, overage_credit_rate) VALUES (?1, ?2, ?3)
             ON CONFLICT (id) DO NOTHING",
            params![team, plan.total_credits as i64, plan.overage_credit_rate],
        )
        .map_err(&write)?;
        tx.execute(
            "INSERT INTO api_keys (sha256, team, created) VALUES (?1, ?2, ?3)",
            params![hash_key(&key), team, now as i64],
        )
        .map_err(&write)?;
        tx.execute(BUMP_ACCOUNTS_VERSION, []).map_err(&write)?;
        tx.commit().map_err(&write)?;
        Ok(key)
    }

    /// Revokes the key whose SHA-256 hash is `sha256` (lower-case hex): its row is
    /// deleted, and running servers stop accepting it within a second. Returns its team,
    /// or `None` when no key has that hash.
    ///
    /// # Errors
    ///
    /// The database's; then nothing is revoked.
    pub fn revoke_key(&self, sha256: &str) -> Result<Option<String>, StateError> {
        let mut db = self.connection();
        let write = self.fail("revoke the key");
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&write)?;
        let team: Option<String> = tx
            .query_row(
                "DELETE FROM api_keys WHERE sha256 = ?1 RETURNING team",
                params![sha256],
                |row| row.get(0),
            )
            .optional()
            .map_err(&write)?;
        if team.is_some() {
            tx.execute(BUMP_ACCOUNTS_VERSION, []).map_err(&write)?;
        }
        tx.commit().map_err(&write)?;
        Ok(team)
    }

    /// Imports an accounts file's teams, key hashes and credit costs, in one transaction:
    /// a team already in the state keeps its credits used and gets the file's plan; keys
    /// already there are kept. A key the state holds for another team is refused
    /// ([`StateError::KeyOfAnotherTeam`]).
    ///
    /// # Errors
    ///
    /// The database's; then nothing is imported.
    pub fn import(&self, accounts: &Accounts) -> Result<(), StateError> {
        let mut db = self.connection();
        let write = self.fail("import the accounts");
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&write)?;
        // Each statement prepared once for the whole file.
        let mut add_team = tx
            .prepare(
                "INSERT INTO teams (id, total_credits, overage_credit_rate) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET total_credits = excluded.total_credits,
                     overage_credit_rate = excluded.overage_credit_rate",
            )
            .map_err(&write)?;
        let mut add_key = tx
            .prepare(
                "INSERT INTO api_keys (sha256, team, created) VALUES (?1, ?2, ?3)
                 ON CONFLICT (sha256) DO NOTHING",
            )
            .map_err(&write)?;
        let mut key_holder = tx
            .prepare("SELECT team FROM api_keys WHERE sha256 = ?1")
            .map_err(&write)?;
        for team in &accounts.teams {
            add_team
                .execute(params![
                    team.id,
                    team.plan.total_credits as i64,
                    team.plan.overage_credit_rate
                ])
                .map_err(&write)?;
            for key in &team.keys {
                add_key
                    .execute(params![key.sha256, team.id, key.created as i64])
                    .map_err(&write)?;
                let holder: String = key_holder
                    .query_row([&key.sha256], |row| row.get(0))
                    .map_err(&write)?;
                if holder != team.id {
                    return Err(StateError::KeyOfAnotherTeam {
                        team: team.id.clone(),
                        holder,
                        sha256: key.sha256.clone(),
                    });
                }
            }
        }
        for endpoint in Endpoint::ALL {
            tx.execute(
                "INSERT INTO credit_costs (endpoint, credits) VALUES (?1, ?2)
                 ON CONFLICT (endpoint) DO UPDATE SET credits = excluded.credits",
                params![endpoint.name(), accounts.credit_costs.of(endpoint) as i64],
            )
            .map_err(&write)?;
        }
        tx.execute(BUMP_ACCOUNTS_VERSION, []).map_err(&write)?;
        drop((add_team, add_key, key_holder));
        tx.commit().map_err(&write)
    }

    /// Adds `credits` to `team`'s credits used: one committed statement.
    ///
    /// # Errors
    ///
    /// The database's: then nothing was charged.
    pub fn charge(&self, team: &str, credits: u64) -> Result<(), StateError> {
        self.connection()
            .prepare_cached(
                "INSERT INTO credits_used (team, used) VALUES (?1, ?2)
                 ON CONFLICT (team) DO UPDATE SET used = used + excluded.used",
            )
            .and_then(|mut s| s.execute(params![team, credits as i64]))
            .map(|_| ())
            .map_err(self.fail("charge credits"))
    }

    /// The credits `team` has used so far.
    ///
    /// # Errors
    ///
    /// The database's.
    pub fn used(&self, team: &str) -> Result<u64, StateError> {
        self.connection()
            .query_row(
                "SELECT COALESCE((SELECT used FROM credits_used WHERE team = ?1), 0)
                      + COALESCE((SELECT SUM(credits) FROM charges WHERE team = ?1), 0)",
                params![team],
                |row| row.get::<_, i64>(0),
            )
            .map(|used| used.max(0) as u64)
            .map_err(self.fail("read the credits used"))
    }

    /// The credits each team has used so far (folded, plus appended since).
    ///
    /// # Errors
    ///
    /// The database's.
    pub fn used_by_team(&self) -> Result<std::collections::HashMap<String, u64>, StateError> {
        let db = self.connection();
        db.prepare(CREDITS_USED)
            .and_then(|mut s| {
                s.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?.max(0) as u64,
                    ))
                })?
                .collect()
            })
            .map_err(self.fail("read the credits used"))
    }

    /// Checkpoints the write-ahead log, syncing it first: committed charges are durable
    /// against a machine crash too (a killed process loses none in any case). Passive: it
    /// never makes a charge wait; what a busy moment leaves is taken by the next one.
    ///
    /// # Errors
    ///
    /// The database's.
    pub fn checkpoint(&self) -> Result<(), StateError> {
        self.connection()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(self.fail("checkpoint the database"))
    }
}

/// Removes what is past the outbox's retention ([`super::EVENT_RETENTION_SECS`] before
/// `now`): the finished deliveries of old events, and the old events left without
/// deliveries.
fn prune_outbox(db: &Connection, now: f64) -> rusqlite::Result<()> {
    let old = now - super::EVENT_RETENTION_SECS;
    db.execute(
        "DELETE FROM deliveries WHERE done = 1 AND event_id IN
             (SELECT id FROM events WHERE created < ?1)",
        [old],
    )?;
    db.execute(
        "DELETE FROM events WHERE created < ?1
             AND NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id)",
        [old],
    )?;
    Ok(())
}

/// Why SQLite could not open a database at `path`, when that is plain beforehand: a path
/// that names a folder, or a file in a folder that does not exist.
fn unopenable(path: &Path) -> Option<&'static str> {
    if path.is_dir() {
        return Some(
            "the path is a folder (nothing was created): give the path of a file in it, e.g. `sqlite:FOLDER/cardex.db`",
        );
    }
    let folder = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return None,
    };
    // Only what is known: a folder that cannot be looked at is left to SQLite's error.
    match std::fs::metadata(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some("its folder does not exist (nothing was created): create it first")
        }
        Ok(meta) if !meta.is_dir() => {
            Some("what should be its folder is a file (nothing was created)")
        }
        _ => None,
    }
}

impl SqliteState {
    /// A value of the `meta` table.
    fn meta(db: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
        db.query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| {
            row.get(0)
        })
        .optional()
    }

    /// A number that changes whenever keys or teams are added or imported.
    pub(crate) fn accounts_version(&self) -> Result<u64, StateError> {
        let db = self.connection();
        Ok(Self::meta(&db, "accounts_version")
            .map_err(self.fail("read the accounts version"))?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The salt of this state's event ids, made when first asked for.
    pub(crate) fn salt(&self) -> Result<String, StateError> {
        let db = self.connection();
        let fail = self.fail("read the event id salt");
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('salt', ?1) ON CONFLICT (key) DO NOTHING",
            [super::new_salt()],
        )
        .map_err(&fail)?;
        Ok(Self::meta(&db, "salt").map_err(&fail)?.unwrap_or_default())
    }

    /// The marks saved with [`SqliteState::publish`], if any.
    pub(crate) fn saved_marks(&self) -> Result<Option<SavedMarks>, StateError> {
        let db = self.connection();
        let fail = self.fail("read the saved marks");
        let marks = Self::meta(&db, "marks").map_err(&fail)?;
        let generation = Self::meta(&db, "marks_generation").map_err(&fail)?;
        Ok(marks.map(|marks| SavedMarks {
            generation: generation.and_then(|g| g.parse().ok()).unwrap_or(0),
            marks,
        }))
    }

    /// Publishes a reload's change (see [`super::State::publish`]) in one transaction.
    pub(crate) fn publish(
        &self,
        next: &MarksToSave<'_>,
        build: impl FnOnce(u64) -> Vec<(Event, Vec<String>)>,
        now: f64,
    ) -> Result<(usize, u64), StateError> {
        let mut db = self.connection();
        let fail = self.fail("write events to the outbox");
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&fail)?;
        let stored: u64 = Self::meta(&tx, "marks_generation")
            .map_err(&fail)?
            .and_then(|g| g.parse().ok())
            .unwrap_or(0);
        let fingerprint = Self::meta(&tx, "marks_fingerprint").map_err(&fail)?;
        let generation = if fingerprint.as_deref() == Some(next.fingerprint) {
            stored
        } else {
            stored + 1
        };
        if generation != stored {
            for (key, value) in [
                ("marks", next.json),
                ("marks_fingerprint", next.fingerprint),
                ("marks_generation", &generation.to_string()),
            ] {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [key, value],
                )
                .map_err(&fail)?;
            }
        }
        let mut written = 0;
        for (event, subscriptions) in build(generation) {
            let new = tx
                .execute(
                    "INSERT INTO events (id, body, created) VALUES (?1, ?2, ?3)
                     ON CONFLICT (id) DO NOTHING",
                    params![event.id, event.to_json(), now],
                )
                .map_err(&fail)?;
            if new == 0 && !Self::event_is_recent(&tx, &event.id, now).map_err(&fail)? {
                continue;
            }
            for subscription in &subscriptions {
                written += tx
                    .execute(
                        "INSERT INTO deliveries (event_id, subscription) VALUES (?1, ?2)
                         ON CONFLICT (subscription, event_id) DO NOTHING",
                        params![event.id, subscription],
                    )
                    .map_err(&fail)?;
            }
        }
        // Here too, not only when a delivery finishes: events that no subscription wants
        // are never delivered.
        prune_outbox(&tx, now).map_err(&fail)?;
        tx.commit().map_err(&fail)?;
        Ok((written, generation))
    }

    /// Whether the outbox's event `id`, there already (another server published the same
    /// change), is within the retention: then a subscription of this server's that has no
    /// delivery of it (a webhooks file that names one the other's did not, as in a rolling
    /// deploy) gets one. An older event's finished deliveries may have been removed, and
    /// would be sent again.
    fn event_is_recent(db: &Connection, id: &str, now: f64) -> rusqlite::Result<bool> {
        db.query_row(
            "SELECT created >= ?2 FROM events WHERE id = ?1",
            params![id, now - super::EVENT_RETENTION_SECS],
            |row| row.get(0),
        )
    }

    /// Frees every lease: one server runs on an SQLite state, so at its start the
    /// leases of the last run's are stale, and their deliveries are retried at once.
    pub(crate) fn release_leases(&self) -> Result<(), StateError> {
        self.connection()
            .execute(
                "UPDATE deliveries SET lease_holder = NULL, lease_until = NULL WHERE done = 0",
                [],
            )
            .map(|_| ())
            .map_err(self.fail("free the delivery leases"))
    }

    /// Takes the lease of the first pending delivery of `subscription`, unless another
    /// holder's lease on it is still running.
    pub(crate) fn claim(
        &self,
        subscription: &str,
        holder: &str,
        lease: f64,
        now: f64,
    ) -> Result<Option<Claimed>, StateError> {
        let db = self.connection();
        let fail = self.fail("claim a delivery");
        let row = db
            .prepare_cached(
                "UPDATE deliveries SET lease_holder = ?2, lease_until = ?3 + ?4
                 WHERE seq = (SELECT seq FROM deliveries
                              WHERE subscription = ?1 AND done = 0 ORDER BY seq LIMIT 1)
                   AND (lease_until IS NULL OR lease_until < ?3 OR lease_holder = ?2)
                 RETURNING seq, event_id, attempts, first_attempt",
            )
            .and_then(|mut s| {
                s.query_row(params![subscription, holder, now, lease], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, Option<f64>>(3)?,
                    ))
                })
                .optional()
            })
            .map_err(&fail)?;
        let Some((seq, event_id, attempts, first_attempt)) = row else {
            return Ok(None);
        };
        let body: String = db
            .query_row(
                "SELECT body FROM events WHERE id = ?1",
                [&event_id],
                |row| row.get(0),
            )
            .map_err(&fail)?;
        Ok(Some(Claimed {
            seq,
            subscription: subscription.to_string(),
            event: super::event_from_json(&body)?,
            attempts: attempts.max(0) as u32,
            first_attempt,
        }))
    }

    /// Records a failed attempt of a claimed delivery and renews its lease; false when
    /// the lease is no longer `holder`'s.
    pub(crate) fn attempted(
        &self,
        claimed: &Claimed,
        holder: &str,
        lease: f64,
        now: f64,
    ) -> Result<bool, StateError> {
        self.connection()
            .execute(
                "UPDATE deliveries SET attempts = ?3, first_attempt = ?4, lease_until = ?5 + ?6
                 WHERE seq = ?1 AND lease_holder = ?2 AND done = 0",
                params![
                    claimed.seq,
                    holder,
                    claimed.attempts,
                    claimed.first_attempt,
                    now,
                    lease
                ],
            )
            .map(|n| n == 1)
            .map_err(self.fail("record a delivery attempt"))
    }

    /// Marks a claimed delivery finished (delivered or given up), and forgets finished
    /// deliveries and events older than [`super::EVENT_RETENTION_SECS`].
    pub(crate) fn finish(
        &self,
        claimed: &Claimed,
        holder: &str,
        now: f64,
    ) -> Result<(), StateError> {
        let db = self.connection();
        let fail = self.fail("mark a delivery finished");
        db.execute(
            "UPDATE deliveries SET done = 1, lease_holder = NULL, lease_until = NULL
             WHERE seq = ?1 AND lease_holder = ?2",
            params![claimed.seq, holder],
        )
        .map_err(&fail)?;
        prune_outbox(&db, now).map_err(&fail)
    }

    /// The pending deliveries per subscription.
    pub(crate) fn pending(&self) -> Result<Vec<(String, u64)>, StateError> {
        self.connection()
            .prepare(
                "SELECT subscription, count(*) FROM deliveries WHERE done = 0
                 GROUP BY subscription ORDER BY subscription",
            )
            .and_then(|mut s| {
                s.query_map([], |row| {
                    Ok((row.get(0)?, row.get::<_, i64>(1)?.max(0) as u64))
                })?
                .collect()
            })
            .map_err(self.fail("count the pending deliveries"))
    }

    /// Copies the credits used into the usage board, unless the board was taken less than
    /// `min_age` seconds ago; true when it did.
    pub(crate) fn refresh_usage(&self, min_age: f64, now: f64) -> Result<bool, StateError> {
        let mut db = self.connection();
        let fail = self.fail("refresh the usage figures");
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&fail)?;
        let taken: Option<f64> = Self::meta(&tx, "usage_taken_at")
            .map_err(&fail)?
            .and_then(|t| t.parse().ok());
        if taken.is_some_and(|t| t > now - min_age) {
            return Ok(false);
        }
        tx.execute_batch(&format!(
            "DELETE FROM usage_board;
             INSERT INTO usage_board (team, used) {CREDITS_USED};"
        ))
        .map_err(&fail)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('usage_taken_at', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [now.to_string()],
        )
        .map_err(&fail)?;
        tx.commit().map_err(&fail)?;
        Ok(true)
    }

    /// `team`'s credits used on the usage board, and when the board was taken.
    pub(crate) fn usage(&self, team: &str) -> Result<(u64, f64), StateError> {
        let db = self.connection();
        let fail = self.fail("read the usage figures");
        let used: Option<i64> = db
            .query_row(
                "SELECT used FROM usage_board WHERE team = ?1",
                [team],
                |row| row.get(0),
            )
            .optional()
            .map_err(&fail)?;
        let taken = Self::meta(&db, "usage_taken_at")
            .map_err(&fail)?
            .and_then(|t| t.parse().ok())
            .unwrap_or(0.0);
        Ok((used.unwrap_or(0).max(0) as u64, taken))
    }
}

/// Commits the charges of concurrent requests together, in a task of the runtime that
/// serves them. A request's charge joins the queue and, when the queue was empty, wakes
/// the task; the task lets the other tasks run while the queue keeps growing (up to
/// [`GATHER_YIELDS`] times), takes the whole queue, appends it to the `charges` table in
/// one transaction and tells each waiting request its outcome, then takes what queued
/// meanwhile. So no answer waits for more than the commit under way and its own.
///
/// The commit runs on the worker that polls the task, as the state's other SQLite calls
/// do: it is an append to the write-ahead log, with no sync, and takes microseconds.
/// Handing each group to a thread and back instead costs two context switches (and
/// serves about a third fewer searches in the http bench). It does not wait for the
/// write lock there: while another connection holds it (an `accounts` command, the outbox) the group waits
/// for it on a blocking thread, up to [`WRITER_BUSY_TIMEOUT`], and the workers go on
/// serving. Appending
/// touches the table's last page only, however many teams a group holds; every
/// [`FOLD_EVERY_ROWS`] rows a group's transaction also folds them into `credits_used`, so
/// the table stays short and no other connection's write waits on the writer's or makes
/// it wait.
///
/// A request waiting for its charge does not park at once: it lets the other tasks run,
/// looking for its outcome after each turn (up to [`OUTCOME_YIELDS`] turns), and parks only
/// when the commit takes longer. A group's commit usually ends within those turns, and a
/// request that never parked needs no wake. Parking every request at once made the
/// workers run out of tasks while a group committed, so that groups cost the threads a
/// sleep and a wake each: in the http bench's search rounds, 79,000 context switches a
/// million searches, where the turns leave 8,000.
///
/// A charge that finds no task running starts one in its own runtime. A task that ends
/// (its writer stopped, or its runtime shut down) commits what is still queued as it
/// goes, so no charge waits for a task that is gone.
#[derive(Debug, Clone)]
pub(crate) struct ChargeWriter {
    inner: std::sync::Arc<WriterInner>,
}

/// What the handles of one writer share; its drop tells the task to stop.
#[derive(Debug)]
struct WriterInner {
    shown: String,
    shared: std::sync::Arc<WriterShared>,
}

/// The writer's queue, connection and task.
#[derive(Debug)]
struct WriterShared {
    queued: Mutex<Queued>,
    /// Wakes the task when a charge joins an empty queue (or the writer stops).
    wake: tokio::sync::Notify,
    db: Mutex<WriterDb>,
    /// The last task started, for tests to await.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The charges waiting, whether a task runs to commit them, and whether the writer is to
/// stop once they are committed.
#[derive(Debug, Default)]
struct Queued {
    charges: Vec<QueuedCharge>,
    running: bool,
    stopping: bool,
}

/// The writer's own connection, and the rows it appended since its last fold.
#[derive(Debug)]
struct WriterDb {
    connection: Connection,
    unfolded: usize,
}

#[derive(Debug)]
struct QueuedCharge {
    team: std::sync::Arc<str>,
    credits: u64,
    /// The commit's outcome (why it failed, if it did).
    done: tokio::sync::oneshot::Sender<Result<(), String>>,
}

impl ChargeWriter {
    /// A writer on its own connection to `state`'s database. Its task starts with the
    /// first charge.
    pub(crate) fn start(state: &SqliteState) -> Result<ChargeWriter, StateError> {
        let db = Connection::open(&state.path).map_err(state.fail("open the database"))?;
        // A group first tries without waiting (see [`ChargeWriter`]).
        db.busy_timeout(std::time::Duration::ZERO)
            .map_err(state.fail("set the busy timeout"))?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(state.fail("set the synchronous mode"))?;
        // The server checkpoints on its interval from the other connection
        // ([`SqliteState::checkpoint`]); a commit here never stops to checkpoint.
        db.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(state.fail("turn off automatic checkpoints"))?;
        Ok(ChargeWriter {
            inner: std::sync::Arc::new(WriterInner {
                shown: format!("sqlite:{}", state.path.display()),
                shared: std::sync::Arc::new(WriterShared {
                    queued: Mutex::default(),
                    wake: tokio::sync::Notify::new(),
                    db: Mutex::new(WriterDb {
                        connection: db,
                        unfolded: 0,
                    }),
                    task: Mutex::default(),
                }),
            }),
        })
    }

    /// Charges `credits` to `team`; returns once the charge is committed. Called in a
    /// Tokio runtime, which runs the writer's task.
    pub(crate) async fn charge(
        &self,
        team: std::sync::Arc<str>,
        credits: u64,
    ) -> Result<(), StateError> {
        let shared = &self.inner.shared;
        let (done, outcome) = tokio::sync::oneshot::channel();
        let (first, start) = {
            let mut queued = shared.queued.lock().unwrap_or_else(|e| e.into_inner());
            queued.charges.push(QueuedCharge {
                team,
                credits,
                done,
            });
            // Under the queue's lock: a task ending takes the queue and clears `running` in
            // one step, so this charge is either taken by it or starts the next.
            let start = !std::mem::replace(&mut queued.running, true);
            (queued.charges.len() == 1, start)
        };
        if start {
            let task = tokio::spawn(write_charges(TaskEnd(shared.clone())));
            *shared.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        } else if first {
            // The task waits only on an empty queue: a later charge finds it awake.
            shared.wake.notify_one();
        }
        let reason = match wait_for(outcome).await {
            Some(Ok(())) => return Ok(()),
            Some(Err(reason)) => reason,
            // The task ended without saying: not known to be committed, so not reported
            // as committed.
            None => "the charge writer stopped; this charge may not be committed".into(),
        };
        Err(StateError::Database {
            state: self.inner.shown.clone(),
            doing: "charge credits",
            source: reason.into(),
        })
    }
}

/// A charge's outcome, looked for after each of up to [`OUTCOME_YIELDS`] turns of the
/// other tasks, then awaited (see [`ChargeWriter`]). `None` when the task dropped the
/// charge without telling it.
async fn wait_for<T>(mut outcome: tokio::sync::oneshot::Receiver<T>) -> Option<T> {
    use tokio::sync::oneshot::error::TryRecvError;
    for _ in 0..OUTCOME_YIELDS {
        tokio::task::yield_now().await;
        match outcome.try_recv() {
            Ok(told) => return Some(told),
            Err(TryRecvError::Empty) => {}
            // A receiver that saw its sender gone is spent: awaiting it would panic.
            Err(TryRecvError::Closed) => return None,
        }
    }
    outcome.await.ok()
}

impl WriterShared {
    /// Takes the queue's charges; with `ending`, as the task ends.
    fn take(&self, ending: bool) -> Vec<QueuedCharge> {
        let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        if ending {
            queued.running = false;
        }
        std::mem::take(&mut queued.charges)
    }

    /// Commits `charges`, waiting for the write lock if need be, and tells each its
    /// outcome.
    fn commit_and_tell(&self, charges: Vec<QueuedCharge>) {
        if charges.is_empty() {
            return;
        }
        let outcome = self
            .commit(&charges, true)
            .map_err(Option::unwrap_or_default);
        tell(charges, outcome);
    }

    /// Commits `group` as one transaction (see [`commit_group`]); why it failed, if it
    /// did: `None` when another connection holds the write lock and not `wait`ing for it.
    fn commit(&self, group: &[QueuedCharge], wait: bool) -> Result<(), Option<String>> {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let fold = db.unfolded >= FOLD_EVERY_ROWS;
        if wait {
            db.connection
                .busy_timeout(WRITER_BUSY_TIMEOUT)
                .map_err(|e| Some(e.to_string()))?;
        }
        // A panic fails this group alone: the next one rolls back what it left open.
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_group(&db.connection, group, fold)
        }));
        if wait {
            // Back to not waiting (should this fail, later groups wait on the worker).
            let _ = db.connection.busy_timeout(std::time::Duration::ZERO);
        }
        match committed {
            Ok(Ok(appended)) => {
                db.unfolded = if fold { 0 } else { db.unfolded + appended };
                Ok(())
            }
            Ok(Err(e))
                if !wait && e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) =>
            {
                Err(None)
            }
            Ok(Err(e)) => Err(Some(e.to_string())),
            Err(_) => Err(Some(
                "the charge writer panicked while committing".to_string(),
            )),
        }
    }

    /// How many charges wait, and whether the writer is to stop.
    fn waiting(&self) -> (usize, bool) {
        let queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        (queued.charges.len(), queued.stopping)
    }
}

impl Drop for WriterInner {
    fn drop(&mut self) {
        // The task commits what is queued, then ends.
        self.shared
            .queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stopping = true;
        self.shared.wake.notify_one();
    }
}

/// Ends the writer's task, however it ends (returning, or dropped with its runtime, even
/// before it first ran): the charges still queued are committed, and the next charge
/// starts a task.
struct TaskEnd(std::sync::Arc<WriterShared>);

impl Drop for TaskEnd {
    fn drop(&mut self) {
        let left = self.0.take(true);
        self.0.commit_and_tell(left);
    }
}

/// The writer's task: commits the queue as one group whenever it holds charges, until
/// the writer stops and the queue is empty.
async fn write_charges(end: TaskEnd) {
    // An argument, so that it is dropped with the task even if the task never ran.
    let shared = &end.0;
    loop {
        let mut seen = match shared.waiting() {
            (0, true) => return,
            (0, false) => {
                shared.wake.notified().await;
                continue;
            }
            (waiting, _) => waiting,
        };
        for _ in 0..GATHER_YIELDS {
            tokio::task::yield_now().await;
            let (waiting, _) = shared.waiting();
            if waiting == seen {
                break;
            }
            seen = waiting;
        }
        let charges = shared.take(false);
        if charges.is_empty() {
            continue;
        }
        match shared.commit(&charges, false) {
            Err(None) => {
                // Another connection writes: the group waits for it off the workers. The
                // blocking thread tells its charges however the wait ends, even when this
                // task is dropped meanwhile (its runtime shutting down).
                let shared = end.0.clone();
                let _ = tokio::task::spawn_blocking(move || shared.commit_and_tell(charges)).await;
            }
            outcome => tell(charges, outcome.map_err(Option::unwrap_or_default)),
        }
    }
}

/// Tells each of `charges` the outcome of its group's commit.
fn tell(charges: Vec<QueuedCharge>, outcome: Result<(), String>) {
    for charge in charges {
        // A request that went away no longer waits for its outcome.
        let _ = charge.done.send(outcome.clone());
    }
}

/// One transaction with every charge of `group`, added up per team, and with `fold`
/// every appended charge folded into `credits_used`; the rows appended.
fn commit_group(db: &Connection, group: &[QueuedCharge], fold: bool) -> rusqlite::Result<usize> {
    // Sorted and merged, so that a group of many teams (many connections) costs
    // n log n comparisons rather than n².
    let mut per_team: Vec<(&str, u64)> = group
        .iter()
        .map(|charge| (&*charge.team, charge.credits))
        .collect();
    per_team.sort_unstable_by(|a, b| a.0.cmp(b.0));
    per_team.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 = kept.1.saturating_add(next.1);
        }
        same
    });
    let appended = per_team.len();
    // `BEGIN` and `COMMIT` as cached statements: a group commits thousands of times a
    // second, and `Transaction` would parse both each time. A transaction left open (a
    // group that panicked, or whose rollback failed) is rolled back first.
    if !db.is_autocommit() {
        db.execute_batch("ROLLBACK")?;
    }
    db.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let written = (|| {
        let mut append =
            db.prepare_cached("INSERT INTO charges (team, credits) VALUES (?1, ?2)")?;
        for (team, credits) in per_team {
            append.execute(params![team, i64::try_from(credits).unwrap_or(i64::MAX)])?;
        }
        if fold {
            for statement in FOLD_CHARGES {
                db.prepare_cached(statement)?.execute([])?;
            }
        }
        db.prepare_cached("COMMIT")?.execute([]).map(|_| ())
    })();
    if let Err(e) = written {
        // Nothing of the group stays: its requests are answered 503, uncharged.
        if !db.is_autocommit() {
            if let Err(rollback) = db.execute_batch("ROLLBACK") {
                tracing::warn!(
                    event = "state_error",
                    "rolling back a failed charge group: {rollback}; the next group rolls back first"
                );
            }
        }
        return Err(e);
    }
    Ok(appended)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A charge's outcome told at once, after the request's turns are over, or never (the
    /// sender dropped, within the turns or after them). Not timed: on one thread the turns
    /// of `wait_for` and of the teller alternate.
    #[tokio::test]
    async fn an_outcome_is_found_told_late_or_never() {
        let (done, outcome) = tokio::sync::oneshot::channel::<u8>();
        done.send(1).unwrap();
        assert_eq!(wait_for(outcome).await, Some(1));
        let teller = |tell: Option<u8>| {
            let (done, outcome) = tokio::sync::oneshot::channel::<u8>();
            let task = tokio::spawn(async move {
                for _ in 0..OUTCOME_YIELDS * 4 {
                    tokio::task::yield_now().await;
                }
                if let Some(told) = tell {
                    done.send(told).unwrap();
                }
            });
            (outcome, task)
        };
        let (outcome, task) = teller(Some(2));
        assert_eq!(wait_for(outcome).await, Some(2));
        task.await.unwrap();
        let (outcome, task) = teller(None);
        assert_eq!(wait_for(outcome).await, None);
        task.await.unwrap();
        // Dropped before the first look: the spent receiver is not awaited again.
        let (done, outcome) = tokio::sync::oneshot::channel::<u8>();
        drop(done);
        assert_eq!(wait_for(outcome).await, None);
    }

    fn scratch(name: &str) -> PathBuf {
        crate::server::testing::scratch("state", name)
    }

    fn plan(credits: u64) -> Plan {
        Plan {
            total_credits: credits,
            overage_credit_rate: 0.002,
        }
    }

    #[test]
    fn an_empty_database_is_migrated_and_an_up_to_date_one_is_left_alone() {
        let dir = scratch("migrate");
        let path = dir.join("state.db");
        let state = SqliteState::open(&path).unwrap();
        assert_eq!(state.schema_version().unwrap(), SCHEMA_VERSION);
        let key = state.add_key("acme", plan(100), 7).unwrap();
        drop(state);
        let state = SqliteState::open(&path).unwrap();
        assert_eq!(state.schema_version().unwrap(), SCHEMA_VERSION);
        let accounts = state.accounts().unwrap();
        assert_eq!(accounts.teams.len(), 1);
        assert_eq!(accounts.teams[0].keys[0].sha256, hash_key(&key));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Another program's database (tables, no cardex version) is refused with not a byte
    /// changed, as is one with a negative version.
    #[test]
    fn another_programs_database_is_refused_untouched() {
        let dir = scratch("foreign");
        for (name, version) in [("app.db", 0), ("negative.db", -3)] {
            let path = dir.join(name);
            let db = Connection::open(&path).unwrap();
            db.execute_batch("CREATE TABLE meta (k TEXT, v TEXT); CREATE TABLE teams (x INTEGER);")
                .unwrap();
            db.pragma_update(None, "user_version", version).unwrap();
            drop(db);
            let before = std::fs::read(&path).unwrap();
            let e = SqliteState::open(&path).unwrap_err();
            assert!(matches!(e, StateError::NotCardex { .. }), "{e}");
            assert!(e.to_string().contains("give --state a new file"), "{e}");
            assert_eq!(std::fs::read(&path).unwrap(), before);
            assert!(!dir.join(format!("{name}-wal")).exists());
        }
        // An empty file is a new state.
        let empty = dir.join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        let state = SqliteState::open(&empty).unwrap();
        assert_eq!(state.schema_version().unwrap(), SCHEMA_VERSION);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A migration that fails leaves the schema at the version it had: the pending
    /// migrations commit together or not at all.
    #[test]
    fn a_failed_migration_leaves_the_schema_as_it_was() {
        let dir = scratch("half-migrated");
        let path = dir.join("state.db");
        // A version-1 state whose last migration cannot run (a table it creates exists
        // under another shape), while the one before it can.
        let db = Connection::open(&path).unwrap();
        db.execute_batch(MIGRATIONS[0]).unwrap();
        db.pragma_update(None, "user_version", 1).unwrap();
        let blocker = MIGRATIONS[MIGRATIONS.len() - 1]
            .split("CREATE TABLE ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the last migration creates a table")
            .to_string();
        db.execute_batch(&format!("CREATE TABLE {blocker} (unrelated INTEGER)"))
            .unwrap();
        let tables = |db: &Connection| -> Vec<String> {
            let mut st = db
                .prepare("SELECT name FROM sqlite_master ORDER BY name")
                .unwrap();
            st.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let before = tables(&db);
        drop(db);
        let e = SqliteState::open(&path).unwrap_err();
        assert!(e.to_string().contains("migrate the schema"), "{e}");
        let db = Connection::open(&path).unwrap();
        let version: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 1);
        assert_eq!(tables(&db), before);
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A path SQLite cannot open is said as what it is, and nothing is created.
    #[test]
    fn a_folder_or_a_missing_folder_as_the_path_is_said_so() {
        let dir = scratch("unopenable");
        let e = SqliteState::open(&dir).unwrap_err();
        assert!(matches!(e, StateError::CannotOpen { .. }), "{e}");
        assert!(e.to_string().contains("the path is a folder"), "{e}");
        let missing = dir.join("nowhere").join("state.db");
        let e = SqliteState::open(&missing).unwrap_err();
        assert!(e.to_string().contains("its folder does not exist"), "{e}");
        assert!(!dir.join("nowhere").exists());
        let file = dir.join("file");
        std::fs::write(&file, b"").unwrap();
        let e = SqliteState::open(&file.join("state.db")).unwrap_err();
        assert!(
            e.to_string()
                .contains("what should be its folder is a file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_schema_from_a_newer_cardex_is_refused() {
        let dir = scratch("newer");
        let path = dir.join("state.db");
        drop(SqliteState::open(&path).unwrap());
        let db = Connection::open(&path).unwrap();
        db.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(db);
        let e = SqliteState::open(&path).unwrap_err();
        assert!(matches!(e, StateError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1));
        assert!(e.to_string().contains("written by a newer cardex"), "{e}");
        // A newer file in rollback-journal mode is refused with not a byte changed (turning
        // on write-ahead logging would rewrite its header).
        let other = dir.join("rollback.db");
        let db = Connection::open(&other).unwrap();
        db.execute_batch("CREATE TABLE later (x INTEGER)").unwrap();
        db.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(db);
        let before = std::fs::read(&other).unwrap();
        assert!(matches!(
            SqliteState::open(&other).unwrap_err(),
            StateError::NewerSchema { .. }
        ));
        assert_eq!(std::fs::read(&other).unwrap(), before);
        assert!(!dir.join("rollback.db-wal").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_database_that_cannot_be_opened_is_a_clear_error() {
        let dir = scratch("missing");
        let e = SqliteState::open(&dir.join("no/such/folder/state.db")).unwrap_err();
        assert!(e.to_string().contains("cannot open the database"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_are_stored_as_hashes_and_accounts_import_whole() {
        let dir = scratch("accounts");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let first = state.add_key("acme", plan(100), 1).unwrap();
        let second = state.add_key("acme", plan(999), 2).unwrap();
        assert_ne!(first, second);
        assert!(matches!(
            state.add_key("bad id", plan(1), 3),
            Err(StateError::BadTeamId { .. })
        ));
        let accounts = state.accounts().unwrap();
        let acme = &accounts.teams[0];
        // The team keeps the plan it was made with; both keys, as hashes only.
        assert_eq!(acme.plan, plan(100));
        assert_eq!(
            acme.keys
                .iter()
                .map(|k| k.sha256.clone())
                .collect::<Vec<_>>(),
            [hash_key(&first), hash_key(&second)]
        );
        let text = std::fs::read(dir.join("state.db")).unwrap();
        assert!(!text.windows(first.len()).any(|w| w == first.as_bytes()));
        // An accounts file: a new team, acme's plan changed, costs set.
        let mut file = Accounts::default();
        file.teams.push(Team {
            id: "globex".into(),
            plan: plan(50),
            keys: vec![StoredKey {
                sha256: hash_key("cdx_globex"),
                created: 5,
            }],
        });
        file.teams.push(Team {
            id: "acme".into(),
            plan: plan(200),
            keys: Vec::new(),
        });
        file.credit_costs.usage = 2;
        state.import(&file).unwrap();
        let accounts = state.accounts().unwrap();
        assert_eq!(
            accounts
                .teams
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>(),
            ["acme", "globex"]
        );
        assert_eq!(accounts.teams[0].plan, plan(200));
        assert_eq!(accounts.teams[0].keys.len(), 2);
        assert_eq!(accounts.credit_costs.usage, 2);
        assert_eq!(accounts.credit_costs.cards, 1);
        // The same file again changes nothing; a file giving acme's key to globex is
        // refused whole.
        state.import(&file).unwrap();
        assert_eq!(state.accounts().unwrap(), accounts);
        file.teams[0].keys.push(StoredKey {
            sha256: hash_key(&first),
            created: 6,
        });
        file.teams[1].plan = plan(300);
        let e = state.import(&file).unwrap_err();
        assert!(
            matches!(&e, StateError::KeyOfAnotherTeam { team, holder, sha256 } if team == "globex" && holder == "acme" && sha256.len() == 64),
            "{e}"
        );
        assert_eq!(state.accounts().unwrap(), accounts);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn charges_add_up_and_survive_reopening() {
        let dir = scratch("ledger");
        let path = dir.join("state.db");
        let state = SqliteState::open(&path).unwrap();
        for _ in 0..3 {
            state.charge("acme", 2).unwrap();
        }
        state.charge("globex", 1).unwrap();
        assert_eq!(
            (state.used("acme").unwrap(), state.used("globex").unwrap()),
            (6, 1)
        );
        assert_eq!(state.used("nobody").unwrap(), 0);
        state.checkpoint().unwrap();
        drop(state);
        let state = SqliteState::open(&path).unwrap();
        assert_eq!(state.used("acme").unwrap(), 6);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A group that fails partway leaves nothing, and the next group commits; so does a
    /// group after a transaction was left open (a group that panicked).
    #[test]
    fn a_failed_charge_group_leaves_nothing_and_the_next_commits() {
        let dir = scratch("failed-group");
        let path = dir.join("state.db");
        let state = SqliteState::open(&path).unwrap();
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON charges WHEN NEW.team = 'bad'
             BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        )
        .unwrap();
        let group = |teams: &[&str]| -> Vec<QueuedCharge> {
            teams
                .iter()
                .map(|team| QueuedCharge {
                    team: (*team).into(),
                    credits: 1,
                    done: tokio::sync::oneshot::channel().0,
                })
                .collect()
        };
        assert!(commit_group(&db, &group(&["acme", "bad"]), false).is_err());
        assert!(db.is_autocommit());
        assert_eq!(state.used("acme").unwrap(), 0);
        commit_group(&db, &group(&["acme"]), false).unwrap();
        db.execute_batch("BEGIN; INSERT INTO charges (team, credits) VALUES ('acme', 100);")
            .unwrap();
        commit_group(&db, &group(&["acme"]), true).unwrap();
        assert_eq!(state.used("acme").unwrap(), 2);
        drop((db, state));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_group_adds_up_each_teams_charges() {
        let dir = scratch("group_sums");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        // The writer's own connection settings do not matter to the sums.
        let db = Connection::open(dir.join("state.db")).unwrap();
        // 3,000 charges of 1 to 3 credits over 700 teams, teams interleaved: the kind of
        // group many connections make.
        let teams: Vec<std::sync::Arc<str>> =
            (0..700).map(|i| format!("team-{i:03}").into()).collect();
        let mut expected = vec![0u64; teams.len()];
        let group: Vec<QueuedCharge> = (0..3000)
            .map(|i| {
                let team = (i * 7919) % teams.len();
                let credits = 1 + (i % 3) as u64;
                expected[team] += credits;
                QueuedCharge {
                    team: teams[team].clone(),
                    credits,
                    done: tokio::sync::oneshot::channel().0,
                }
            })
            .collect();
        let appended = commit_group(&db, &group, false).unwrap();
        assert_eq!(appended, 700, "one row per team");
        for (team, want) in teams.iter().zip(&expected) {
            assert_eq!(state.used(team).unwrap(), *want, "{team}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writers_task_stops_with_its_last_handle() {
        let dir = scratch("writer_stops");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let writer = ChargeWriter::start(&state).unwrap();
        let charges: Vec<_> = (0..64)
            .map(|_| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.charge("acme".into(), 2).await })
            })
            .collect();
        for charge in charges {
            charge.await.unwrap().unwrap();
        }
        assert_eq!(state.used("acme").unwrap(), 128);
        // The clones went with their tasks. The task's handle is taken out so that the
        // test can await it; dropping the last writer handle must tell the task to stop.
        assert_eq!(std::sync::Arc::strong_count(&writer.inner), 1);
        let task = writer.inner.shared.task.lock().unwrap().take().unwrap();
        drop(writer);
        // A task that was not told would wait for ever, so this fails rather than hangs.
        tokio::time::timeout(std::time::Duration::from_secs(30), task)
            .await
            .expect("the writer's task did not stop")
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// While another connection holds the write lock, a group waits for it off the
    /// runtime's threads: on a runtime of one thread, other tasks still run, and the
    /// group commits once the lock is let go. (Waiting on the thread, the group would
    /// hold it for the busy timeout and then fail.)
    #[test]
    fn a_group_waits_for_the_write_lock_off_the_runtime() {
        let dir = scratch("writer_waits");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let writer = ChargeWriter::start(&state).unwrap();
        let other = Connection::open(dir.join("state.db")).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            writer.charge("acme".into(), 1).await.unwrap();
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
            let charge = tokio::spawn({
                let writer = writer.clone();
                async move { writer.charge("acme".into(), 2).await }
            });
            // The writer's task tries, finds the lock held and hands the group over; this
            // task, on the same thread, runs on.
            for _ in 0..50 {
                tokio::task::yield_now().await;
            }
            assert!(!charge.is_finished());
            assert_eq!(state.used("acme").unwrap(), 1);
            other.execute_batch("COMMIT").unwrap();
            charge.await.unwrap().unwrap();
            // The next group goes the quick way again.
            writer.charge("acme".into(), 4).await.unwrap();
        });
        assert_eq!(state.used("acme").unwrap(), 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_writer_whose_runtime_went_away_commits_in_the_next() {
        let dir = scratch("writer_runtimes");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let writer = ChargeWriter::start(&state).unwrap();
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap()
        };
        // The first runtime starts the task and is then shut down, the task with it.
        runtime().block_on(writer.charge("acme".into(), 3)).unwrap();
        assert!(writer
            .inner
            .shared
            .task
            .lock()
            .unwrap()
            .as_ref()
            .unwrap()
            .is_finished());
        // A charge in another runtime starts the task there: it is committed, not left
        // waiting for a task that is gone.
        let commits = |credits: u64| {
            runtime().block_on(async {
                tokio::time::timeout(
                    std::time::Duration::from_secs(30),
                    writer.charge("acme".into(), credits),
                )
                .await
                .expect("the charge was never committed")
                .unwrap();
            });
        };
        commits(4);
        assert_eq!(state.used("acme").unwrap(), 7);
        // A runtime that goes while a charge is queued and its task has not yet run: the
        // task, dropped unpolled, commits the charge as it goes, and the next charge, in
        // another runtime, starts a task of its own rather than queueing behind it.
        runtime().block_on(async {
            // Polled once (queued, the task spawned), then given up before anything else
            // of the runtime runs.
            let mut charge = Box::pin(writer.charge("acme".into(), 5));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(std::future::Future::poll(charge.as_mut(), &mut cx).is_pending());
        });
        assert_eq!(state.used("acme").unwrap(), 12);
        commits(6);
        assert_eq!(state.used("acme").unwrap(), 18);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grouped_charges_count_before_and_after_they_are_folded() {
        let dir = scratch("grouped");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        state.charge("acme", 5).unwrap();
        let writer = ChargeWriter::start(&state).unwrap();
        let charges: Vec<_> = (0..300)
            .map(|i| {
                let writer = writer.clone();
                let team = ["acme", "globex", "initech"][i % 3];
                tokio::spawn(async move { writer.charge(team.into(), 1).await })
            })
            .collect();
        for charge in charges {
            charge.await.unwrap().unwrap();
        }
        let appended = || -> i64 {
            state
                .connection()
                .query_row("SELECT COUNT(*) FROM charges", [], |row| row.get(0))
                .unwrap()
        };
        // One row per team per group, so between 3 and 300.
        assert!((3..=300).contains(&appended()), "{}", appended());
        let used = || ["acme", "globex", "initech"].map(|t| state.used(t).unwrap());
        assert_eq!(used(), [105, 100, 100]);
        // The usage board counts the appended charges too.
        assert!(state.refresh_usage(0.0, 10.0).unwrap());
        assert_eq!(state.usage("acme").unwrap(), (105, 10.0));
        // Past FOLD_EVERY_ROWS appended rows, a group folds them all.
        let mut most = 0;
        for charged in 1..=FOLD_EVERY_ROWS {
            writer.charge("globex".into(), 1).await.unwrap();
            most = most.max(appended());
            if appended() == 0 {
                assert!(most >= FOLD_EVERY_ROWS as i64, "{most}");
                writer
                    .charge("globex".into(), 7 + (FOLD_EVERY_ROWS - charged) as u64)
                    .await
                    .unwrap();
                break;
            }
        }
        assert_eq!(appended(), 1);
        assert_eq!(used(), [105, 100 + FOLD_EVERY_ROWS as u64 + 7, 100]);
        let folded: i64 = state
            .connection()
            .query_row(
                "SELECT used FROM credits_used WHERE team = 'globex'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert!(folded > 100, "{folded}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cost_above_the_limit_in_a_state_is_charged_at_the_limit() {
        let dir = scratch("large-cost");
        let path = dir.join("state.db");
        SqliteState::open(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute(
                "INSERT INTO credit_costs (endpoint, credits) VALUES ('cards', 4611686018427387904)",
                [],
            )
            .unwrap();
        let accounts = SqliteState::open(&path).unwrap().accounts().unwrap();
        assert_eq!(
            accounts.credit_costs.cards,
            crate::server::accounts::MAX_CREDIT_COST
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_version_2_state_migrates_and_keeps_its_credits() {
        let dir = scratch("from-v2");
        let path = dir.join("state.db");
        {
            let mut db = Connection::open(&path).unwrap();
            let tx = db.transaction().unwrap();
            for migration in &MIGRATIONS[..2] {
                tx.execute_batch(migration).unwrap();
            }
            tx.execute(
                "INSERT INTO credits_used (team, used) VALUES ('acme', 42)",
                [],
            )
            .unwrap();
            tx.pragma_update(None, "user_version", 2).unwrap();
            tx.commit().unwrap();
        }
        let state = SqliteState::open(&path).unwrap();
        assert_eq!(state.schema_version().unwrap(), SCHEMA_VERSION);
        state.charge("acme", 1).unwrap();
        assert_eq!(state.used("acme").unwrap(), 43);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn event(id: &str) -> Event {
        Event {
            id: id.into(),
            name: "pokemon.expansions.prices.raw_updated".into(),
            data: crate::EventData {
                expansion_ids: vec!["sv1".into()],
            },
        }
    }

    #[test]
    fn a_change_published_twice_gets_one_generation_and_a_change_back_gets_a_new_one() {
        let dir = scratch("publish");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let marks = |name: &'static str| MarksToSave {
            json: name,
            fingerprint: name,
        };
        let publish = |to: &'static str| {
            state
                .publish(
                    &marks(to),
                    |generation| {
                        vec![(event(&format!("evt_{to}_{generation}")), vec!["all".into()])]
                    },
                    1.0,
                )
                .unwrap()
        };
        // Replica A publishes M1 then M2; replica B, which missed M1, publishes M2: the same
        // generation as A's, so the same event ids, held once.
        assert_eq!(publish("m1"), (1, 1));
        assert_eq!(publish("m2"), (1, 2));
        assert_eq!(publish("m2"), (0, 2));
        // A change back to M1, and forth again to M2: a new generation each way.
        assert_eq!(publish("m1"), (1, 3));
        assert_eq!(publish("m2"), (1, 4));
        assert_eq!(state.saved_marks().unwrap().unwrap().marks, "m2");
        assert_eq!(state.pending().unwrap(), [("all".to_string(), 4)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A subscription that one server has and another has not (a rolling deploy of a new
    /// webhooks file) gets the events of a change the other published first.
    #[test]
    fn a_subscription_the_first_publisher_lacked_gets_the_event() {
        let dir = scratch("late-subscription");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let marks = MarksToSave {
            json: "m1",
            fingerprint: "m1",
        };
        let publish = |subscriptions: &[&str], now: f64| {
            let subscriptions: Vec<String> = subscriptions.iter().map(|s| s.to_string()).collect();
            state
                .publish(
                    &marks,
                    |g| vec![(event(&format!("evt_{g}")), subscriptions)],
                    now,
                )
                .unwrap()
        };
        assert_eq!(publish(&["a"], 1.0), (1, 1));
        // The other server, with `b` as well, publishes the same change: `b` gets it once.
        assert_eq!(publish(&["a", "b"], 2.0), (1, 1));
        assert_eq!(publish(&["a", "b"], 3.0), (0, 1));
        assert_eq!(
            state.pending().unwrap(),
            [("a".to_string(), 1), ("b".to_string(), 1)]
        );
        // Past the retention an event that is there is left as it is.
        assert_eq!(
            publish(
                &["a", "b", "c"],
                1.5 + crate::server::state::EVENT_RETENTION_SECS
            ),
            (0, 1)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Events that no subscription wants are removed once past the retention, by the
    /// next publication (no delivery ever finishes to remove them).
    #[test]
    fn events_without_deliveries_are_removed_after_the_retention() {
        let dir = scratch("retention");
        let state = SqliteState::open(&dir.join("state.db")).unwrap();
        let publish = |to: &'static str, now: f64| {
            let marks = MarksToSave {
                json: to,
                fingerprint: to,
            };
            state
                .publish(
                    &marks,
                    |g| vec![(event(&format!("evt_{to}_{g}")), vec![])],
                    now,
                )
                .unwrap()
        };
        let events = || -> i64 {
            state
                .connection()
                .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
                .unwrap()
        };
        publish("m1", 1.0);
        publish("m2", 2.0);
        assert_eq!(events(), 2);
        publish("m3", 2.0 + crate::server::state::EVENT_RETENTION_SECS);
        // The first is past the retention; the second (one second younger) and the new
        // one stay.
        assert_eq!(events(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
