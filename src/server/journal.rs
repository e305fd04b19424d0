//! What the server's two append-only files (the credit ledger and the webhook outbox) do
//! alike: a lock file that keeps a second server off, replaying complete lines (a torn last
//! line is dropped: the write it belongs to never finished, so nothing acted on it),
//! replacing a file atomically, and [`AppendLog`]: appending whole lines, and compacting
//! the file while the server runs.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `<path>.<suffix>`: a file beside `path`, its whole name kept, so that two files with the
/// same stem (`accounts.ledger`, `accounts.outbox`) never share one.
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Takes `<path>.lock` for as long as the returned file lives.
///
/// # Errors
///
/// `WouldBlock` naming `path` when another process holds it; the file system's.
pub(super) fn lock(path: &Path) -> io::Result<File> {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(sibling(path, "lock"))?;
    if let Err(e) = lock.try_lock() {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{}: in use by another server ({e})", path.display()),
        ));
    }
    Ok(lock)
}

/// Calls `each` with every complete line of `path` (none when the file does not exist); a
/// last line without its newline is dropped. An `Err(why)` from `each` stops with
/// `InvalidData` naming the file and the line's number.
///
/// # Errors
///
/// The file system's, or `each`'s.
pub(super) fn replay(
    path: &Path,
    mut each: impl FnMut(&str) -> Result<(), String>,
) -> io::Result<()> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut reader = io::BufReader::new(file);
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        number += 1;
        let Some(complete) = line.strip_suffix('\n') else {
            return Ok(()); // torn
        };
        each(complete).map_err(|why| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}:{number}: {why}", path.display()),
            )
        })?;
    }
}

/// Replaces `path` with `bytes` atomically: written beside it (`<path>.tmp`), synced,
/// renamed over it, the folder synced.
///
/// # Errors
///
/// The file system's; `path` is then unchanged, or (the folder's sync failed) already
/// replaced.
pub(super) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = write_beside(path, bytes)?;
    std::fs::rename(&tmp, path)?;
    sync_folder(path)
}

/// Replaces `path` with `bytes` as [`replace`] does, and returns the new file open for
/// appending. The handle is opened before the rename, so once the rename is done the
/// caller always has the file now at `path` (a failed open leaves `path` unchanged).
///
/// # Errors
///
/// Before the rename, the file system's, with `path` unchanged: `Err`. After it, the
/// folder's sync: `Ok((file, Err(e)))` — `path` holds `bytes` and `file` is it, but the
/// rename may not survive a power loss until the folder is synced.
fn replace_for_append(path: &Path, bytes: &[u8]) -> io::Result<(File, io::Result<()>)> {
    let tmp = write_beside(path, bytes)?;
    let file = OpenOptions::new().append(true).open(&tmp)?;
    std::fs::rename(&tmp, path)?;
    Ok((file, sync_folder(path)))
}

/// Writes `bytes` to `<path>.tmp` and syncs it; returns that path.
fn write_beside(path: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let tmp = sibling(path, "tmp");
    let mut out = File::create(&tmp)?;
    out.write_all(bytes)?;
    out.sync_all()?;
    Ok(tmp)
}

/// Syncs the folder holding `path`, so that a rename into it is durable.
fn sync_folder(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The size from which an [`AppendLog`] is compacted while the server runs: 1 MiB.
pub(super) const COMPACTION_FLOOR: u64 = 1 << 20;

/// An append-only file of lines that its owner compacts now and then: the owner keeps
/// what the file means in memory and, when [`Self::due`] says so, hands [`Self::compact`]
/// the compacted text.
///
/// - Appending writes whole lines; a write that fails part-way is cut back off, so a later
///   line never joins a broken one. Should cutting it back fail too, the file is marked
///   torn: each later append tries the cut-back again first and is refused while it fails
///   (nothing is written after the broken bytes), and compacting, which rewrites the file
///   from memory, is due at every call until it works.
/// - Compacting writes the text beside the file, syncs it, opens it for appending and
///   renames it over the file, so no line can go to a file that is no longer at the path.
///   If that fails before the rename nothing changes, and compacting is not tried again
///   until the file has grown by another [`COMPACTION_FLOOR`]. If the folder's sync fails
///   after the rename, [`Self::sync_folder`] tries it again at every call until it works.
#[derive(Debug)]
pub(super) struct AppendLog {
    path: PathBuf,
    /// The file, appended to through `&File`; shared so that its owner can `fsync` it
    /// without holding its own lock. Compacting replaces it.
    file: Arc<File>,
    /// The file's length after the last whole line.
    len: u64,
    /// The length from which compacting may be due ([`COMPACTION_FLOOR`]).
    floor: u64,
    /// After a failed compaction: the length before which it is not tried again.
    retry_from: u64,
    /// A failed write could not be cut back off.
    torn: bool,
    /// The folder's sync failed after a rename.
    folder_unsynced: bool,
}

impl AppendLog {
    /// Replaces `path` with `text` (synced, and the folder too) and opens it for appending.
    ///
    /// # Errors
    ///
    /// The file system's.
    pub(super) fn create(path: &Path, text: &[u8]) -> io::Result<AppendLog> {
        let (file, folder_synced) = replace_for_append(path, text)?;
        folder_synced?;
        Ok(AppendLog {
            path: path.to_path_buf(),
            file: Arc::new(file),
            len: text.len() as u64,
            floor: COMPACTION_FLOOR,
            retry_from: 0,
            torn: false,
            folder_unsynced: false,
        })
    }

    /// The file, to sync outside its owner's lock.
    pub(super) fn file(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// Appends `bytes` (whole lines) in one write, then syncs the file if `sync`.
    ///
    /// # Errors
    ///
    /// The file system's; the bytes are then cut back off the file. While the file is torn
    /// and cannot be cut back, every append is refused, naming the file.
    pub(super) fn append(&mut self, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut file: &File = &self.file;
        if self.torn {
            file.set_len(self.len).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{} ends in a broken write that cannot be cut back: {e}",
                        self.path.display()
                    ),
                )
            })?;
            self.torn = false;
        }
        let written = file
            .write_all(bytes)
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) });
        if let Err(e) = written {
            if file.set_len(self.len).is_err() {
                self.torn = true;
            }
            return Err(e);
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Whether compacting is due, for a file whose compacted text would be about `live`
    /// bytes: it is torn (always), or it is at least [`COMPACTION_FLOOR`] and four times
    /// `live`, unless a compaction failed since it last grew by the floor.
    pub(super) fn due(&self, live: u64) -> bool {
        self.torn
            || (self.len >= self.retry_from
                && self.len >= self.floor
                && self.len >= live.saturating_mul(4))
    }

    /// Replaces the file with `text` (its compacted form) and appends to the new file from
    /// then on (see the type's docs).
    ///
    /// # Errors
    ///
    /// The file system's, before the rename (nothing changed), naming the file.
    pub(super) fn compact(&mut self, text: &[u8]) -> io::Result<()> {
        match replace_for_append(&self.path, text) {
            Ok((file, folder_synced)) => {
                self.file = Arc::new(file);
                self.len = text.len() as u64;
                self.retry_from = 0;
                self.torn = false;
                self.folder_unsynced = folder_synced.is_err();
                Ok(())
            }
            Err(e) => {
                self.retry_from = self.len.saturating_add(self.floor);
                Err(io::Error::new(
                    e.kind(),
                    format!("compacting {}: {e}", self.path.display()),
                ))
            }
        }
    }

    /// Syncs the folder if its sync failed after a compaction's rename (until then the
    /// rename, and so every line since, may not survive a power loss).
    ///
    /// # Errors
    ///
    /// The file system's, naming the folder's file.
    pub(super) fn sync_folder(&mut self) -> io::Result<()> {
        if self.folder_unsynced {
            sync_folder(&self.path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("syncing the folder of {}: {e}", self.path.display()),
                )
            })?;
            self.folder_unsynced = false;
        }
        Ok(())
    }

    /// Lowers the compaction floor (tests).
    #[cfg(test)]
    pub(super) fn set_floor(&mut self, floor: u64) {
        self.floor = floor;
    }

    /// Marks the file torn, as a failed write whose cut-back failed leaves it; with
    /// `stuck`, cutting back fails from now on as well (and so does writing): the handle
    /// is swapped for a read-only one, until a compaction replaces it (tests).
    #[cfg(test)]
    pub(super) fn set_torn(&mut self, stuck: bool) {
        self.torn = true;
        if stuck {
            self.file = Arc::new(File::open(&self.path).expect("the file reopens"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_log(name: &str, text: &[u8]) -> (PathBuf, AppendLog) {
        let dir = crate::server::testing::scratch("journal", name);
        let path = dir.join("log");
        let log = AppendLog::create(&path, text).unwrap();
        (path, log)
    }

    /// Appends broken bytes behind the log's back: what a write that failed part-way leaves.
    fn tear(path: &Path) {
        let mut f = OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(b"c ").unwrap();
    }

    #[test]
    fn a_torn_log_is_cut_back_before_the_next_line_and_compaction_is_due() {
        let (path, mut log) = scratch_log("torn", b"a 1\n");
        log.append(b"b 2\n", false).unwrap();
        assert!(!log.due(8));
        tear(&path);
        log.set_torn(false);
        assert!(log.due(8), "a torn log is compacted at the next call");
        // A failed compaction does not delay the next try while the log is torn.
        log.retry_from = u64::MAX;
        assert!(log.due(8));
        // The next line goes after the last whole one, never after the broken bytes.
        log.append(b"d 4\n", false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a 1\nb 2\nd 4\n");
        assert!(!log.due(8));
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_torn_log_that_cannot_be_cut_back_refuses_lines_until_compacted() {
        let (path, mut log) = scratch_log("stuck", b"a 1\nb 2\n");
        tear(&path);
        log.set_torn(true);
        let refused = log.append(b"d 4\n", false).unwrap_err();
        assert!(
            refused.to_string().contains("cannot be cut back"),
            "{refused}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a 1\nb 2\nc ");
        assert!(log.due(8));
        log.compact(b"a 1\nb 2\n").unwrap();
        assert!(!log.due(8));
        log.append(b"d 4\n", false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a 1\nb 2\nd 4\n");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
