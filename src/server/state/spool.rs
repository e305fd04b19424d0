//! The local spool of a replica whose PostgreSQL state is unreachable: charges written to
//! a small SQLite file on local disk (one committed row each, so a killed process loses
//! none), replayed into the database when it is back. Each row's id is the spool's own
//! random id and the row's number, which is never reused, and the database remembers
//! every id it has added: a replay cut short and run again, or two replicas replaying a
//! spool they share, count each charge once.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::StateError;

/// A spool file.
#[derive(Debug)]
pub(crate) struct Spool {
    path: PathBuf,
    id: String,
    connection: Mutex<Connection>,
}

/// A spooled charge: its id, the team and the credits.
pub(crate) type Spooled = (String, String, u64);

impl Spool {
    /// Opens (or creates) the spool at `path`.
    pub(crate) fn open(path: &Path) -> Result<Spool, StateError> {
        let fail = |doing: &'static str| {
            move |e: rusqlite::Error| StateError::Database {
                state: format!("spool {}", path.display()),
                doing,
                source: e.into(),
            }
        };
        let db = Connection::open(path).map_err(fail("open the spool"))?;
        if db.is_readonly("main").unwrap_or(false) {
            return Err(StateError::ReadOnly {
                state: format!("spool {}", path.display()),
            });
        }
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(fail("set the busy timeout"))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail("turn on write-ahead logging"))?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS spool_id (id TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS charges (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 team TEXT NOT NULL,
                 credits INTEGER NOT NULL
             );",
        )
        .map_err(fail("create the spool's tables"))?;
        let existing: Option<String> = db
            .query_row("SELECT id FROM spool_id", [], |row| row.get(0))
            .optional()
            .map_err(fail("read the spool's id"))?;
        let id = match existing {
            Some(id) => id,
            None => {
                let id = super::new_salt();
                db.execute("INSERT INTO spool_id (id) VALUES (?1)", [&id])
                    .map_err(fail("write the spool's id"))?;
                id
            }
        };
        Ok(Spool {
            path: path.to_path_buf(),
            id,
            connection: Mutex::new(db),
        })
    }

    /// The spool file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, doing: &'static str) -> impl Fn(rusqlite::Error) -> StateError + '_ {
        move |e| StateError::Database {
            state: format!("spool {}", self.path.display()),
            doing,
            source: e.into(),
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Spools a charge: committed when this returns.
    pub(crate) fn add(&self, team: &str, credits: u64) -> Result<(), StateError> {
        self.connection()
            .prepare_cached("INSERT INTO charges (team, credits) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![team, credits as i64]))
            .map(|_| ())
            .map_err(self.fail("spool a charge"))
    }

    /// Up to `max` spooled charges, oldest first, and the row number of the last.
    pub(crate) fn oldest(&self, max: usize) -> Result<(Vec<Spooled>, i64), StateError> {
        let db = self.connection();
        let rows: Vec<(i64, String, i64)> = db
            .prepare_cached("SELECT seq, team, credits FROM charges ORDER BY seq LIMIT ?1")
            .and_then(|mut s| {
                s.query_map([max as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect()
            })
            .map_err(self.fail("read the spool"))?;
        let last = rows.last().map_or(0, |r| r.0);
        Ok((
            rows.into_iter()
                .map(|(seq, team, credits)| {
                    (format!("{}:{seq}", self.id), team, credits.max(0) as u64)
                })
                .collect(),
            last,
        ))
    }

    /// Forgets the charges up to row `last`, once the database has them.
    pub(crate) fn remove_through(&self, last: i64) -> Result<(), StateError> {
        self.connection()
            .execute("DELETE FROM charges WHERE seq <= ?1", [last])
            .map(|_| ())
            .map_err(self.fail("empty the spool"))
    }

    /// How many charges are spooled.
    pub(crate) fn len(&self) -> Result<u64, StateError> {
        self.connection()
            .query_row("SELECT count(*) FROM charges", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|n| n.max(0) as u64)
            .map_err(self.fail("count the spool"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spooled_charges_keep_ids_that_are_never_reused() {
        let dir = crate::server::testing::scratch("spool", "ids");
        let path = dir.join("spool.db");
        let spool = Spool::open(&path).unwrap();
        spool.add("acme", 1).unwrap();
        spool.add("globex", 2).unwrap();
        let (first, last) = spool.oldest(10).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!((first[1].1.as_str(), first[1].2), ("globex", 2));
        spool.remove_through(last).unwrap();
        assert_eq!(spool.len().unwrap(), 0);
        drop(spool);
        // Reopened: the same spool id, and row numbers carry on (AUTOINCREMENT).
        let spool = Spool::open(&path).unwrap();
        spool.add("acme", 3).unwrap();
        let (again, _) = spool.oldest(10).unwrap();
        assert_eq!(again.len(), 1);
        assert!(!first.iter().any(|c| c.0 == again[0].0), "{again:?}");
        assert_eq!(
            again[0].0.split(':').next(),
            first[0].0.split(':').next(),
            "the spool keeps its id"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
