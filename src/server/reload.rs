//! Reloading the snapshot while serving: on SIGHUP, and when the snapshot
//! folder changes (polled, debounced). Each reload runs off the runtime's workers; a
//! refused snapshot is logged and the old one keeps serving; a successful one has its
//! changes turned into webhook events, logged and handed to the [`Dispatcher`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::log;
use super::service::Service;
use super::state::StateError;
use super::webhooks::{new_event_id, Dispatcher};
use crate::live::{Event, ReloadError};

/// What a reload waits on besides the folder: SIGHUP where there are signals.
#[cfg(unix)]
pub(super) type Hangup = tokio::signal::unix::Signal;
/// What a reload waits on besides the folder: nothing without Unix signals.
#[cfg(not(unix))]
pub(super) type Hangup = ();

/// Starts listening for SIGHUP.
#[cfg(unix)]
pub(super) fn hangup_signal() -> std::io::Result<Hangup> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

/// Starts listening for SIGHUP (nothing to listen for here).
#[cfg(not(unix))]
pub(super) fn hangup_signal() -> std::io::Result<Hangup> {
    Ok(())
}

#[cfg(unix)]
async fn hung_up(hangup: &mut Hangup) {
    if hangup.recv().await.is_none() {
        std::future::pending::<()>().await;
    }
}

#[cfg(not(unix))]
async fn hung_up(_: &mut Hangup) {
    std::future::pending::<()>().await;
}

/// One file as the watcher sees it: path, size, modification time and, on Unix, inode
/// and change time (so a same-size rewrite within the clock's resolution, or a file
/// renamed over another, is still seen).
type FileStamp = (PathBuf, u64, Option<SystemTime>, (u64, i64, i64));

/// The snapshot folder as the watcher sees it.
pub(super) type Stamp = Vec<FileStamp>;

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, i64, i64) {
    use std::os::unix::fs::MetadataExt;
    (meta.ino(), meta.ctime(), meta.ctime_nsec())
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> (u64, i64, i64) {
    (0, 0, 0)
}

/// Every entry of the snapshot folder the loader reads, following symbolic links as it
/// does, sorted: in each folder at the top (a catalog), its `catalog.json` and the
/// `.json` files that are not hidden in its `cards/` and `expansions/`; with the entries
/// the loader refuses (a link that leads nowhere, a folder where a records file would be,
/// a file where `cards/` would be), so that mending them is a change too. What it never
/// reads (a state database, an editor's swap file, other files) is left out, so writing
/// it reloads nothing.
pub(super) fn folder_stamp(root: &Path) -> Stamp {
    /// What the loader makes of an entry at a depth (0: the folder's own entries).
    enum Seen {
        Walked,
        Stamped,
        Ignored,
    }
    fn walk(dir: &Path, depth: u32, out: &mut Stamp) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // A link that leads nowhere is stamped as the link.
            let followed = std::fs::metadata(&path);
            let broken = followed.is_err();
            let Ok(meta) = followed.or_else(|_| std::fs::symlink_metadata(&path)) else {
                continue;
            };
            let name = path.file_name().and_then(|n| n.to_str());
            let hidden = name.is_some_and(|n| n.starts_with('.'));
            let seen = match depth {
                // The loader passes over hidden entries at the top.
                0 if hidden => Seen::Ignored,
                0 if meta.is_dir() => Seen::Walked,
                0 if broken => Seen::Stamped,
                0 => Seen::Ignored,
                1 => match name {
                    Some("cards" | "expansions") if meta.is_dir() => Seen::Walked,
                    Some("cards" | "expansions" | "catalog.json") => Seen::Stamped,
                    _ => Seen::Ignored,
                },
                _ => {
                    if path.extension().is_some_and(|e| e == "json") && !hidden {
                        Seen::Stamped
                    } else {
                        Seen::Ignored
                    }
                }
            };
            match seen {
                Seen::Walked => walk(&path, depth + 1, out),
                Seen::Stamped => {
                    let (len, modified, id) = (meta.len(), meta.modified().ok(), identity(&meta));
                    out.push((path, len, modified, id));
                }
                Seen::Ignored => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(root, 0, &mut out);
    out.sort();
    out
}

/// After this many checks in a row that each saw a different new state, the watcher
/// reloads without waiting for the folder to settle.
const MAX_UNSETTLED_CHECKS: u32 = 10;

/// Reloads on SIGHUP and on folder changes, forever (the server aborts it at shutdown).
pub(super) async fn watch(
    service: Arc<Service>,
    dispatcher: Option<Arc<Dispatcher>>,
    interval: Option<Duration>,
    mut hangup: Hangup,
    mut loaded: Stamp,
    after_load: Option<fn()>,
) {
    let root = service.engine().path().to_path_buf();
    let stamp_of = |root: PathBuf| async move {
        tokio::task::spawn_blocking(move || folder_stamp(&root))
            .await
            .unwrap_or_default()
    };
    let mut seen: Option<Stamp> = None;
    // Checks in a row that saw the folder still changing; past the limit, reload anyway.
    let mut unsettled = 0;
    let mut tick = tokio::time::interval(interval.unwrap_or(Duration::from_secs(3600)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = hung_up(&mut hangup) => {
                let now = stamp_of(root.clone()).await;
                seen = None;
                // As for a folder change: events the outbox refused are tried again at
                // the next checks.
                let outcome = reload(&service, dispatcher.as_ref(), "SIGHUP", after_load).await;
                if outcome != Outcome::Refused {
                    loaded = now;
                }
            }
            _ = tick.tick(), if interval.is_some() => {
                let now = stamp_of(root.clone()).await;
                if now == loaded {
                    seen = None;
                    unsettled = 0;
                } else if seen.as_ref() == Some(&now) || unsettled >= MAX_UNSETTLED_CHECKS {
                    // Changed, and unchanged since the last check (the writer is done), or
                    // changing at every check for too long.
                    seen = None;
                    unsettled = 0;
                    let why = "the snapshot folder changed";
                    let outcome = reload(&service, dispatcher.as_ref(), why, after_load).await;
                    // Events the outbox refused (the state is unreachable): the change is
                    // tried again at the next checks, until the outbox takes them.
                    if outcome != Outcome::Refused {
                        loaded = now;
                    }
                } else {
                    seen = Some(now);
                    unsettled += 1;
                }
            }
        }
    }
}

/// How a reload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The new snapshot serves.
    Done,
    /// The snapshot could not be loaded: the previous one serves.
    Failed,
    /// The outbox refused the events: the previous snapshot serves, and the same change
    /// is to be tried again.
    Refused,
}

/// Calls [`ServeConfig::after_load`](super::ServeConfig::after_load)'s function when
/// dropped.
struct AfterLoad(fn());

impl Drop for AfterLoad {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// One reload, off the workers: load and compare; with webhooks, the events go into the
/// outbox with the new marks, in one transaction, before the new snapshot is swapped in.
/// If the outbox refuses them, nothing is swapped: the next reload finds the same changes.
async fn reload(
    service: &Arc<Service>,
    dispatcher: Option<&Arc<Dispatcher>>,
    why: &str,
    after_load: Option<fn()>,
) -> Outcome {
    let path = service.engine().path().display().to_string();
    log::event("reload", &format!("{why}: loading {path}"));
    let (s, d) = (service.clone(), dispatcher.cloned());
    let runtime = tokio::runtime::Handle::current();
    let result = tokio::task::spawn_blocking(move || {
        // Runs when the closure ends, however it ends: a load that panicked freed its
        // memory too.
        let _after_load = after_load.map(AfterLoad);
        let mut events = Vec::new();
        let reloaded = s.engine().reload_with(|report| {
            events = report.events(new_event_id);
            match &d {
                Some(d) => runtime
                    .block_on(d.publish(&mut events, &report.changes, &report.marks))
                    .map(Some),
                None => Ok(None),
            }
            .map(|enqueued| log_events(&events, enqueued))
        });
        if reloaded.is_ok() {
            // The new snapshot is served: its events may go out.
            if let Some(d) = &d {
                d.deliver_now();
            }
            // The /v2 records of the new snapshot, before a request has to wait for them.
            s.render_v2_view(&s.engine().current());
        }
        Ok::<_, ReloadError<StateError>>((reloaded?, events.len()))
    })
    .await;
    match result {
        Ok(Ok((report, events))) => {
            let cards: Vec<String> = report
                .cards
                .iter()
                .map(|(catalog, n)| format!("{catalog} {n}"))
                .collect();
            let total = report.cards.iter().map(|(_, n)| n).sum::<usize>();
            tracing::info!(
                event = "reloaded",
                cards = total,
                took_ms = report.took.as_millis() as u64,
                events,
                "{total} cards ({}) in {} ms; {events} events",
                cards.join(", "),
                report.took.as_millis(),
            );
            Outcome::Done
        }
        Ok(Err(ReloadError::Load(e))) => {
            log::event(
                "reload_error",
                &format!("{e}; still serving the previous snapshot"),
            );
            Outcome::Failed
        }
        Ok(Err(ReloadError::Refused(e))) => {
            log::event(
                "reload_error",
                &format!(
                    "the webhook outbox refused the events ({e}); still serving the previous snapshot, and trying again"
                ),
            );
            Outcome::Refused
        }
        Err(e) => {
            log::event(
                "reload_error",
                &format!("the reload failed ({e}); still serving the previous snapshot"),
            );
            Outcome::Failed
        }
    }
}

/// Logs each event, and how many deliveries were enqueued (`None`: no webhooks).
fn log_events(events: &[Event], enqueued: Option<usize>) {
    for event in events {
        let expansions = event.data.expansion_ids.join(",");
        tracing::info!(
            event = "webhook_event",
            event_id = %event.id,
            event_name = %event.name,
            expansion_ids = %expansions,
            "{} {} {expansions}",
            event.id,
            event.name,
        );
    }
    if let (Some(n), false) = (enqueued, events.is_empty()) {
        tracing::info!(event = "webhook_enqueued", deliveries = n, "{n} deliveries");
    }
}

/// At start, with webhooks: the changes between the saved marks and the snapshot just
/// loaded (made while the server was down) become events, published with the new marks.
/// Without saved marks (a first start) there is nothing to compare with.
///
/// # Errors
///
/// The state's.
pub(super) async fn catch_up(service: &Service, dispatcher: &Dispatcher) -> Result<(), StateError> {
    let current = service.engine().marks();
    let changes = match dispatcher.saved_marks().await? {
        Some(saved) => saved.changes(&current),
        None => Vec::new(),
    };
    let mut events = crate::live::events(&changes, new_event_id);
    if !events.is_empty() {
        let n = events.len();
        tracing::info!(
            event = "reloaded",
            events = n,
            "the snapshot changed while the server was down; {n} events"
        );
    }
    let enqueued = dispatcher.publish(&mut events, &changes, &current).await?;
    dispatcher.deliver_now();
    if !events.is_empty() {
        log_events(&events, Some(enqueued));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_load_runs_when_the_load_panics() {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        fn count() {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let finished = std::panic::catch_unwind(|| {
            let _after_load = AfterLoad(count);
            panic!("a load that panics");
        });
        assert!(finished.is_err());
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(AfterLoad(count));
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// What the loader refuses is stamped too, so that mending it is a change the watcher
    /// sees: a broken link, and a folder where a records file would be.
    #[test]
    fn the_stamp_holds_what_the_loader_refuses() {
        let root = crate::server::testing::scratch("reload", "stamp");
        let cards = root.join("c/cards");
        std::fs::create_dir_all(cards.join("more.json")).unwrap();
        std::fs::write(cards.join("a.json"), "[]").unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), cards.join("gone.json")).unwrap();
        let paths = |stamp: &Stamp| -> Vec<PathBuf> { stamp.iter().map(|e| e.0.clone()).collect() };
        let before = folder_stamp(&root);
        assert_eq!(
            paths(&before),
            [
                cards.join("a.json"),
                cards.join("gone.json"),
                cards.join("more.json")
            ]
        );
        std::fs::remove_dir(cards.join("more.json")).unwrap();
        let mended = folder_stamp(&root);
        assert_ne!(mended, before);
        std::fs::remove_file(cards.join("gone.json")).unwrap();
        let now = folder_stamp(&root);
        assert_ne!(now, mended);
        // Files the loader never reads change nothing: a state database and its log, an
        // editor's swap file, a hidden file.
        std::fs::write(root.join("state.db"), "x").unwrap();
        std::fs::write(root.join("c/state.db-wal"), "x").unwrap();
        std::fs::write(cards.join(".a.json.swp"), "x").unwrap();
        std::fs::write(cards.join(".hidden.json"), "[]").unwrap();
        std::fs::write(cards.join("notes.txt"), "x").unwrap();
        std::fs::write(root.join("c/notes.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join(".staging/cards")).unwrap();
        std::fs::write(root.join(".staging/x.json"), "[]").unwrap();
        std::fs::write(root.join(".staging/cards/x.json"), "[]").unwrap();
        assert_eq!(folder_stamp(&root), now);
        // A catalog's `catalog.json` is read, and a link at the top that leads nowhere is
        // refused: both stamped.
        std::fs::write(root.join("c/catalog.json"), "{}").unwrap();
        let with_meta = folder_stamp(&root);
        assert_ne!(with_meta, now);
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("d")).unwrap();
        let with_link = folder_stamp(&root);
        assert_ne!(with_link, with_meta);
        // A file where the `expansions` folder belongs is refused by the loader: stamped.
        std::fs::write(root.join("c/expansions"), "x").unwrap();
        assert_ne!(folder_stamp(&root), with_link);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
