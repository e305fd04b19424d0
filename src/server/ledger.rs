//! The credit ledger: the credits each team has used, within its plan and past it (billed
//! at the overage rate), kept so that no credit is lost across a crash or a restart.
//!
//! [`Ledger`] is a trait so that several replicas can later share one store (a database,
//! a shared log); [`FileLedger`] is the single-server one: an append-only file of
//! `<team> <credits>\n` lines. A charge is written to the file (one `write` call, under a
//! lock) before the response leaves, so a killed process (`kill -9`) loses nothing: the
//! bytes are in the kernel. `fsync` — against a machine crash or power loss — runs in
//! batches: [`Ledger::sync`] is called on an interval by the server and at shutdown.
//! Opening the file replays it, drops a torn last line (a crash in the middle of a
//! write), and rewrites it compacted to one line per team. [`Ledger::sync`] rewrites it
//! the same way once it has grown to 1 MiB and four times its compacted size, so a server
//! that runs for months keeps a small ledger (one line per charge would otherwise add up
//! to gigabytes, and to a long replay at the next start); `journal::AppendLog` says how.
//! A write that fails part-way (a full disk) is cut back off the file, so a later line
//! never joins a broken one; should the cut-back fail too, charges are refused until a
//! sync's compaction rewrites the file. A lock file beside the ledger (`<ledger>.lock`, an
//! OS file lock held while the ledger is open) refuses a second server on the same ledger,
//! which would otherwise append to a file the first one's compaction had already replaced.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::journal::{self, AppendLog};

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

    /// Makes every charge so far durable against a machine crash (and may compact the
    /// store).
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
    /// Held for the whole of a [`Ledger::sync`], so syncs run one at a time: the sync at
    /// shutdown waits for one still in flight from the interval (which had cleared the
    /// unsynced flag before its `fsync` ended), and finds the flag set again if that one
    /// failed, rather than reporting the ledger synced while it was not.
    syncing: Mutex<()>,
    /// Holds the OS lock on `<ledger>.lock` while the ledger is open.
    _lock: File,
}

#[derive(Debug)]
struct FileInner {
    log: AppendLog,
    /// The file's length when it was last compacted.
    compacted_len: u64,
    used: HashMap<String, u64>,
    /// Lines written since the last `fsync`.
    unsynced: bool,
    line: Vec<u8>,
}

/// The ledger compacted: one `<team> <credits>` line per team, sorted.
fn compacted(used: &HashMap<String, u64>) -> Vec<u8> {
    let mut teams: Vec<_> = used.iter().collect();
    teams.sort();
    let mut text = Vec::new();
    for (team, credits) in teams {
        let _ = writeln!(text, "{team} {credits}");
    }
    text
}

impl FileLedger {
    /// Opens (or creates) the ledger at `path`: replays it and compacts it.
    ///
    /// # Errors
    ///
    /// The file system's, or a line in the middle of the file that is not
    /// `<team> <credits>` (`InvalidData`, naming the line).
    pub fn open(path: &Path) -> io::Result<FileLedger> {
        let lock = journal::lock(path)?;
        let mut used: HashMap<String, u64> = HashMap::new();
        journal::replay(path, |line| {
            let parsed = line
                .split_once(' ')
                .and_then(|(team, n)| Some((team, n.parse::<u64>().ok()?)))
                .filter(|(team, _)| super::accounts::valid_team_id(team));
            let (team, credits) = parsed.ok_or("not `<team> <credits>`")?;
            add(&mut used, team, credits);
            Ok(())
        })?;
        let text = compacted(&used);
        let log = AppendLog::create(path, &text)?;
        Ok(FileLedger {
            path: path.to_path_buf(),
            _lock: lock,
            syncing: Mutex::new(()),
            inner: Mutex::new(FileInner {
                log,
                compacted_len: text.len() as u64,
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
        inner.log.append(&inner.line, false)?;
        inner.unsynced = true;
        add(&mut inner.used, team, credits);
        Ok(())
    }

    fn used(&self, team: &str) -> u64 {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.used.get(team).copied().unwrap_or(0)
    }

    /// Compacts the file when it is due (it has grown to 1 MiB and four times its
    /// compacted size, or a write was torn), which syncs every charge so far; otherwise,
    /// or should compacting fail, syncs the file. Every step is tried even when one fails;
    /// the first error is returned. A sync called while another runs waits for it.
    fn sync(&self) -> io::Result<()> {
        let _one_at_a_time = self.syncing.lock().unwrap_or_else(|e| e.into_inner());
        let mut failed: Option<io::Error> = None;
        let file = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let inner = &mut *inner;
            if inner.log.due(inner.compacted_len) {
                let text = compacted(&inner.used);
                match inner.log.compact(&text) {
                    Ok(()) => {
                        inner.compacted_len = text.len() as u64;
                        inner.unsynced = false;
                    }
                    Err(e) => failed = Some(e),
                }
            }
            if let Err(e) = inner.log.sync_folder() {
                failed.get_or_insert(e);
            }
            std::mem::replace(&mut inner.unsynced, false).then(|| inner.log.file())
        };
        // Outside the lock: charges go on while the disk syncs. A charge written after the
        // flag was cleared sets it again, for the next sync.
        if let Some(file) = file {
            if let Err(e) = file.sync_data() {
                self.inner
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unsynced = true;
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        crate::server::testing::scratch("ledger", name)
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

    /// The ledger's compaction floor, lowered for a test.
    fn compact_from(ledger: &FileLedger, floor: u64) {
        ledger.inner.lock().unwrap().log.set_floor(floor);
    }

    #[test]
    fn a_grown_ledger_is_compacted_by_sync_and_keeps_every_charge() {
        let dir = dir("grown");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        compact_from(&ledger, 256);
        ledger.charge("globex", 7).unwrap();
        // Below the floor: a sync leaves the lines as they are.
        for _ in 0..20 {
            ledger.charge("acme", 1).unwrap();
        }
        ledger.sync().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 21);
        // Past it (and four times the compacted size): one line per team.
        for _ in 0..40 {
            ledger.charge("acme", 2).unwrap();
        }
        ledger.sync().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "acme 100\nglobex 7\n"
        );
        // Charges after the compaction go to the new file.
        ledger.charge("acme", 5).unwrap();
        ledger.charge("initech", 1).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "acme 100\nglobex 7\nacme 5\ninitech 1\n"
        );
        assert!(!journal::sibling(&path, "tmp").exists());
        // Past the floor but under four times the compacted size: not yet.
        let other = dir.join("other");
        std::fs::write(&other, "acme 1\nglobex 1\ninitech 1\n").unwrap();
        let small = FileLedger::open(&other).unwrap();
        compact_from(&small, 8);
        for _ in 0..10 {
            small.charge("acme", 1).unwrap();
        }
        small.sync().unwrap();
        // 26 + 70 bytes, under 4 × 26.
        assert_eq!(std::fs::read_to_string(&other).unwrap().lines().count(), 13);
        for _ in 0..2 {
            small.charge("acme", 1).unwrap();
        }
        small.sync().unwrap();
        assert_eq!(
            std::fs::read_to_string(&other).unwrap(),
            "acme 13\nglobex 1\ninitech 1\n"
        );
        drop(small);
        drop(ledger);
        let ledger = FileLedger::open(&path).unwrap();
        let totals = ["acme", "globex", "initech"].map(|t| ledger.used(t));
        assert_eq!(totals, [105, 7, 1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_compaction_still_syncs_keeps_every_charge_and_is_retried_later() {
        let dir = dir("failing");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        compact_from(&ledger, 64);
        // A folder where the compacted text would be written: compacting cannot work.
        let tmp = journal::sibling(&path, "tmp");
        std::fs::create_dir(&tmp).unwrap();
        for _ in 0..20 {
            ledger.charge("acme", 1).unwrap();
        }
        let err = ledger.sync().unwrap_err();
        assert!(err.to_string().starts_with("compacting "), "{err}");
        // The file was synced all the same, and keeps every line.
        assert!(!ledger.inner.lock().unwrap().unsynced);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 20);
        // Not tried again until the file has grown by the floor once more.
        ledger.charge("acme", 1).unwrap();
        ledger.sync().unwrap();
        std::fs::remove_dir(&tmp).unwrap();
        for _ in 0..10 {
            ledger.charge("acme", 1).unwrap();
        }
        ledger.sync().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "acme 31\n");
        drop(ledger);
        assert_eq!(FileLedger::open(&path).unwrap().used("acme"), 31);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn charges_during_compactions_are_all_counted() {
        let dir = dir("compacting");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        compact_from(&ledger, 64);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let chargers: Vec<_> = (0..4)
                .map(|i| {
                    let ledger = &ledger;
                    s.spawn(move || {
                        let team = ["acme", "globex"][i % 2];
                        for _ in 0..500 {
                            ledger.charge(team, 1).unwrap();
                        }
                    })
                })
                .collect();
            let syncer = s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    ledger.sync().unwrap();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            });
            for c in chargers {
                c.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            syncer.join().unwrap();
            // A last sync compacts whatever the others left past the floor.
            ledger.sync().unwrap();
        });
        assert_eq!((ledger.used("acme"), ledger.used("globex")), (1000, 1000));
        // The file ends below four times its compacted size (22 bytes) or the floor, where
        // 2,000 lines would take 16 kB.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() < 4 * 22, "{} bytes left", text.len());
        drop(ledger);
        let ledger = FileLedger::open(&path).unwrap();
        assert_eq!((ledger.used("acme"), ledger.used("globex")), (1000, 1000));
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

    #[test]
    fn a_sync_waits_for_one_in_flight() {
        let dir = dir("one-sync");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        ledger.charge("acme", 2).unwrap();
        // Stands for a sync from the interval, between clearing the flag and its fsync's end.
        let in_flight = ledger.syncing.lock().unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| done.send(ledger.sync()).unwrap());
            assert!(
                finished
                    .recv_timeout(std::time::Duration::from_millis(100))
                    .is_err(),
                "the second sync returned while the first was still in flight"
            );
            drop(in_flight);
            let synced = finished.recv_timeout(std::time::Duration::from_secs(10));
            assert!(matches!(synced, Ok(Ok(()))), "{synced:?}");
        });
        assert!(!ledger.inner.lock().unwrap().unsynced);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_ledger_refuses_charges_until_a_sync_compacts_it() {
        let dir = dir("stuck");
        let path = dir.join("ledger");
        let ledger = FileLedger::open(&path).unwrap();
        ledger.charge("acme", 2).unwrap();
        // A write that broke part-way, and the file cannot be cut back (nor written).
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"acm").unwrap();
        drop(f);
        ledger.inner.lock().unwrap().log.set_torn(true);
        assert!(ledger.charge("acme", 1).is_err());
        assert_eq!(ledger.used("acme"), 2, "a refused charge is not counted");
        // The sync compacts the ledger from memory, which repairs it.
        ledger.sync().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "acme 2\n");
        ledger.charge("acme", 1).unwrap();
        drop(ledger);
        assert_eq!(FileLedger::open(&path).unwrap().used("acme"), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
