//! The credit ledger (spec 8.2, 8.3): what each team has used, kept so that no credit is
//! lost across a crash or a restart.
//!
//! [`Ledger`] is a trait so that several replicas can later share one store (a database,
//! a shared log); [`FileLedger`] is the single-server one: an append-only file of
//! `<team> <credits>\n` lines. A charge is written to the file (one `write` call, under a
//! lock) before the response leaves, so a killed process (`kill -9`) loses nothing: the
//! bytes are in the kernel. `fsync` — against a machine crash or power loss — runs in
//! batches: [`Ledger::sync`] is called on an interval by the server and at shutdown.
//! Opening the file replays it, drops a torn last line (a crash in the middle of a
//! write), and rewrites it compacted to one line per team. A write that fails part-way (a
//! full disk) is cut back off the file, so a later line never joins a broken one. A lock
//! file beside the ledger (`<ledger>.lock`, an OS file lock held while the ledger is open)
//! refuses a second server on the same ledger, which would otherwise append to a file the
//! first one's compaction had already replaced.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where credits used are recorded.
pub trait Ledger: Send + Sync {
    /// Records that `team` used `credits`. When this returns, a crash of the process
    /// does not lose the charge.
    ///
    /// # Errors
    ///
    /// The store's.
    fn charge(&self, team: &str, credits: u64) -> io::Result<()>;

    /// The credits `team` has used so far.
    fn used(&self, team: &str) -> u64;

    /// Makes every charge so far durable against a machine crash.
    ///
    /// # Errors
    ///
    /// The store's.
    fn sync(&self) -> io::Result<()>;
}

/// Adds `credits` to `team`'s total (allocating the team's name only the first time).
fn add(used: &mut HashMap<String, u64>, team: &str, credits: u64) {
    match used.get_mut(team) {
        Some(total) => *total = total.saturating_add(credits),
        None => {
            used.insert(team.to_string(), credits);
        }
    }
}

/// A ledger in memory only (tests, and servers without accounts).
#[derive(Debug, Default)]
pub struct MemoryLedger {
    used: Mutex<HashMap<String, u64>>,
}

impl Ledger for MemoryLedger {
    fn charge(&self, team: &str, credits: u64) -> io::Result<()> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        add(&mut used, team, credits);
        Ok(())
    }

    fn used(&self, team: &str) -> u64 {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.get(team).copied().unwrap_or(0)
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The append-only file ledger (see the module docs).
#[derive(Debug)]
pub struct FileLedger {
    path: PathBuf,
    inner: Mutex<FileInner>,
    /// The same file, for `fsync` without holding the lock charges take.
    sync_handle: File,
    /// Holds the OS lock on `<ledger>.lock` while the ledger is open.
    _lock: File,
}

#[derive(Debug)]
struct FileInner {
    file: File,
    /// The file's length after the last whole line.
    len: u64,
    used: HashMap<String, u64>,
    /// Lines written since the last `fsync`.
    unsynced: bool,
    line: Vec<u8>,
}

impl FileLedger {
    /// Opens (or creates) the ledger at `path`: replays it and compacts it.
    ///
    /// # Errors
    ///
    /// The file system's, or a line in the middle of the file that is not
    /// `<team> <credits>` (`InvalidData`, naming the line).
    pub fn open(path: &Path) -> io::Result<FileLedger> {
        let lock = super::journal::lock(path)?;
        let mut used: HashMap<String, u64> = HashMap::new();
        super::journal::replay(path, |line| {
            let parsed = line
                .split_once(' ')
                .and_then(|(team, n)| Some((team, n.parse::<u64>().ok()?)))
                .filter(|(team, _)| super::accounts::valid_team_id(team));
            let (team, credits) = parsed.ok_or("not `<team> <credits>`")?;
            add(&mut used, team, credits);
            Ok(())
        })?;
        // Compact: one line per team.
        let mut teams: Vec<_> = used.iter().collect();
        teams.sort();
        let mut text = Vec::new();
        for (team, credits) in teams {
            writeln!(text, "{team} {credits}")?;
        }
        super::journal::replace(path, &text)?;
        let file = OpenOptions::new().append(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(FileLedger {
            path: path.to_path_buf(),
            sync_handle: file.try_clone()?,
            _lock: lock,
            inner: Mutex::new(FileInner {
                file,
                len,
                used,
                unsynced: false,
                line: Vec::with_capacity(80),
            }),
        })
    }

    /// The ledger's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Ledger for FileLedger {
    fn charge(&self, team: &str, credits: u64) -> io::Result<()> {
        if credits == 0 {
            return Ok(());
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        inner.line.clear();
        let _ = writeln!(inner.line, "{team} {credits}");
        // One write call: a line is in the kernel whole, or (a crash inside the call) torn
        // at the end of the file, where opening drops it. A failed write is cut back off.
        if let Err(e) = inner.file.write_all(&inner.line) {
            let _ = inner.file.set_len(inner.len);
            return Err(e);
        }
        inner.len += inner.line.len() as u64;
        inner.unsynced = true;
        add(&mut inner.used, team, credits);
        Ok(())
    }

    fn used(&self, team: &str) -> u64 {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.used.get(team).copied().unwrap_or(0)
    }

    fn sync(&self) -> io::Result<()> {
        let unsynced = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut inner.unsynced, false)
        };
        // Outside the lock: charges go on while the disk syncs. A charge written after the
        // flag was cleared sets it again, for the next sync.
        if unsynced {
            if let Err(e) = self.sync_handle.sync_data() {
                self.inner
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unsynced = true;
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cardex-ledger-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn charges_survive_reopening_and_are_compacted() {
        let dir = dir("reopen");
        let path = dir.join("ledger");
        {
            let ledger = FileLedger::open(&path).unwrap();
            for _ in 0..5 {
                ledger.charge("acme", 1).unwrap();
            }
            ledger.charge("globex", 3).unwrap();
            ledger.charge("acme", 0).unwrap();
            assert_eq!(ledger.used("acme"), 5);
            // Closed without a sync: what a killed process leaves (the kernel has the lines).
            drop(ledger);
        }
        let ledger = FileLedger::open(&path).unwrap();
        assert_eq!((ledger.used("acme"), ledger.used("globex")), (5, 3));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "acme 5\nglobex 3\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_a_broken_one_refused() {
        let dir = dir("torn");
        let path = dir.join("ledger");
        std::fs::write(&path, "acme 2\nacme 1\nacme 4").unwrap();
        let ledger = FileLedger::open(&path).unwrap();
        assert_eq!(ledger.used("acme"), 3);
        drop(ledger);
        std::fs::write(&path, "acme 2\nacme x\nacme 1\n").unwrap();
        let err = FileLedger::open(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("ledger:2"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_second_server_on_the_same_ledger_is_refused() {
        let dir = dir("locked");
        let path = dir.join("ledger");
        let first = FileLedger::open(&path).unwrap();
        let err = FileLedger::open(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(
            err.to_string().contains("in use by another server"),
            "{err}"
        );
        first.charge("acme", 2).unwrap();
        drop(first);
        assert_eq!(FileLedger::open(&path).unwrap().used("acme"), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_charges_are_all_counted() {
        let dir = dir("concurrent");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..250 {
                        ledger.charge("acme", 1).unwrap();
                    }
                });
            }
        });
        ledger.sync().unwrap();
        assert_eq!(ledger.used("acme"), 2000);
        drop(ledger);
        assert_eq!(FileLedger::open(&path).unwrap().used("acme"), 2000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
