//! The state in SQLite: one database file, in WAL mode (readers never wait for the
//! writer), its schema versioned in `PRAGMA user_version` and migrated forward when it
//! opens. A charge is one committed statement before the answer leaves: a killed process
//! loses none (the WAL write is in the kernel), and [`Ledger::sync`] checkpoints the WAL
//! for a machine crash.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::StateError;
use crate::server::accounts::{
    self, hash_key, valid_team_id, Accounts, CreditCosts, Endpoint, Plan, StoredKey, Team,
};
use crate::server::ledger::Ledger;

/// The newest schema version this server knows.
pub const SCHEMA_VERSION: i64 = 1;

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
];

/// The state in one SQLite file.
#[derive(Debug)]
pub struct SqliteState {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteState {
    /// Opens the database at `path` (creating it when missing) and migrates its schema to
    /// [`SCHEMA_VERSION`], each migration in a transaction of its own.
    ///
    /// # Errors
    ///
    /// A database that cannot be opened or written (a read-only file, a folder that does
    /// not exist), or whose schema a newer cardex wrote.
    pub fn open(path: &Path) -> Result<SqliteState, StateError> {
        let state = SqliteState {
            path: path.to_path_buf(),
            connection: Mutex::new(Connection::open(path).map_err(|source| {
                StateError::Database {
                    state: format!("sqlite:{}", path.display()),
                    doing: "open the database",
                    source,
                }
            })?),
        };
        state.migrate()?;
        Ok(state)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, doing: &'static str) -> impl Fn(rusqlite::Error) -> StateError + '_ {
        move |source| StateError::Database {
            state: format!("sqlite:{}", self.path.display()),
            doing,
            source,
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn migrate(&self) -> Result<(), StateError> {
        let mut db = self.connection();
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(self.fail("set the busy timeout"))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(self.fail("turn on write-ahead logging"))?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(self.fail("set the synchronous mode"))?;
        db.pragma_update(None, "foreign_keys", "ON")
            .map_err(self.fail("turn on foreign keys"))?;
        loop {
            let tx = db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.fail("start a migration"))?;
            let version: i64 = tx
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(self.fail("read the schema version"))?;
            if version > SCHEMA_VERSION {
                return Err(StateError::NewerSchema {
                    state: format!("sqlite:{}", self.path.display()),
                    found: version,
                    known: SCHEMA_VERSION,
                });
            }
            if version == SCHEMA_VERSION {
                return Ok(());
            }
            tx.execute_batch(MIGRATIONS[version as usize])
                .map_err(self.fail("migrate the schema"))?;
            tx.pragma_update(None, "user_version", version + 1)
                .map_err(self.fail("record the schema version"))?;
            tx.commit().map_err(self.fail("commit a migration"))?;
        }
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
        for (team, key) in keys {
            if let Some(t) = teams.iter_mut().find(|t| t.id == team) {
                t.keys.push(key);
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
            if let Some(slot) = cost_slot(&mut credit_costs, &name) {
                *slot = credits.max(0) as u64;
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
        let key = accounts::new_key().map_err(|e| match e {
            accounts::AddKeyError::NoRandomness(e) => StateError::NoRandomness(e),
            accounts::AddKeyError::BadTeamId { team } => StateError::BadTeamId { team },
        })?;
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
        tx.commit().map_err(&write)?;
        Ok(key)
    }

    /// Imports an accounts file's teams, key hashes and credit costs, in one transaction:
    /// a team already in the state keeps its credits used and gets the file's plan; keys
    /// already there are kept.
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
        for team in &accounts.teams {
            tx.execute(
                "INSERT INTO teams (id, total_credits, overage_credit_rate) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET total_credits = excluded.total_credits,
                     overage_credit_rate = excluded.overage_credit_rate",
                params![
                    team.id,
                    team.plan.total_credits as i64,
                    team.plan.overage_credit_rate
                ],
            )
            .map_err(&write)?;
            for key in &team.keys {
                tx.execute(
                    "INSERT INTO api_keys (sha256, team, created) VALUES (?1, ?2, ?3)
                     ON CONFLICT (sha256) DO NOTHING",
                    params![key.sha256, team.id, key.created as i64],
                )
                .map_err(&write)?;
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
        tx.commit().map_err(&write)
    }

    /// The ledger of this state: credits used, charged into the same database.
    pub fn ledger(self) -> SqliteLedger {
        SqliteLedger { state: self }
    }
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

/// The credit ledger in SQLite: each charge one committed `INSERT … ON CONFLICT`
/// statement.
#[derive(Debug)]
pub struct SqliteLedger {
    state: SqliteState,
}

impl SqliteLedger {
    /// The state the ledger charges into.
    pub fn state(&self) -> &SqliteState {
        &self.state
    }
}

impl Ledger for SqliteLedger {
    fn charge(&self, team: &str, credits: u64) -> io::Result<()> {
        self.state
            .connection()
            .prepare_cached(
                "INSERT INTO credits_used (team, used) VALUES (?1, ?2)
                 ON CONFLICT (team) DO UPDATE SET used = used + excluded.used",
            )
            .and_then(|mut s| s.execute(params![team, credits as i64]))
            .map(|_| ())
            .map_err(|e| io::Error::other(self.state.fail("charge credits")(e)))
    }

    fn used(&self, team: &str) -> u64 {
        self.state
            .connection()
            .query_row(
                "SELECT used FROM credits_used WHERE team = ?1",
                params![team],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .ok()
            .flatten()
            .map_or(0, |used| used.max(0) as u64)
    }

    fn sync(&self) -> io::Result<()> {
        // Committed charges are in the write-ahead log; a checkpoint with a full sync
        // makes them durable against a machine crash too.
        self.state
            .connection()
            .query_row("PRAGMA wal_checkpoint(FULL)", [], |_| Ok(()))
            .map_err(|e| io::Error::other(self.state.fail("checkpoint the database")(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn charges_add_up_and_survive_reopening() {
        let dir = scratch("ledger");
        let path = dir.join("state.db");
        let ledger = SqliteState::open(&path).unwrap().ledger();
        for _ in 0..3 {
            ledger.charge("acme", 2).unwrap();
        }
        ledger.charge("globex", 1).unwrap();
        assert_eq!((ledger.used("acme"), ledger.used("globex")), (6, 1));
        assert_eq!(ledger.used("nobody"), 0);
        ledger.sync().unwrap();
        drop(ledger);
        let ledger = SqliteState::open(&path).unwrap().ledger();
        assert_eq!(ledger.used("acme"), 6);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
