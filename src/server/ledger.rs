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
//! write), and rewrites it compacted to one line per team.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
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
        Some(total) => *total += credits,
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
}

#[derive(Debug)]
struct FileInner {
    file: File,
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
        let mut used: HashMap<String, u64> = HashMap::new();
        match File::open(path) {
            Ok(file) => {
                let mut reader = io::BufReader::new(file);
                let mut line = String::new();
                let mut number = 0;
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 {
                        break;
                    }
                    number += 1;
                    let Some(complete) = line.strip_suffix('\n') else {
                        // A torn last line: the write it belongs to never finished, so
                        // its request was never answered.
                        break;
                    };
                    let parsed = complete
                        .split_once(' ')
                        .and_then(|(team, n)| Some((team, n.parse::<u64>().ok()?)))
                        .filter(|(team, _)| super::accounts::valid_team_id(team));
                    let Some((team, credits)) = parsed else {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{}:{number}: not `<team> <credits>`", path.display()),
                        ));
                    };
                    *used.entry(team.to_string()).or_default() += credits;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        // Compact: one line per team, written aside, synced, renamed over the old file.
        let tmp = path.with_extension("compact");
        {
            let mut out = io::BufWriter::new(File::create(&tmp)?);
            let mut teams: Vec<_> = used.iter().collect();
            teams.sort();
            for (team, credits) in teams {
                writeln!(out, "{team} {credits}")?;
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(FileLedger {
            path: path.to_path_buf(),
            inner: Mutex::new(FileInner {
                file,
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
        // at the end of the file, where opening drops it.
        inner.file.write_all(&inner.line)?;
        inner.unsynced = true;
        add(&mut inner.used, team, credits);
        Ok(())
    }

    fn used(&self, team: &str) -> u64 {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.used.get(team).copied().unwrap_or(0)
    }

    fn sync(&self) -> io::Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.unsynced {
            inner.file.sync_data()?;
            inner.unsynced = false;
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
            // No sync, no drop flush: what a killed process leaves.
            std::mem::forget(ledger);
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
