//! What the server's two append-only files (the credit ledger and the webhook outbox) do
//! alike: a lock file that keeps a second server off, replaying complete lines (a torn last
//! line is dropped: the write it belongs to never finished, so nothing acted on it), and
//! replacing the file atomically when compacting.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

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
/// The file system's; `path` is then unchanged.
pub(super) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = sibling(path, "tmp");
    {
        let mut out = File::create(&tmp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}
