//! Reloading the snapshot while serving (issue #6): on SIGHUP, and when the snapshot
//! folder changes (polled, debounced). Each reload runs off the runtime's workers; a
//! refused snapshot is logged and the old one keeps serving; a successful one has its
//! changes turned into webhook events, logged and handed to the [`Dispatcher`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::webhooks::{new_event_id, Dispatcher};
use super::{log, Service};

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

/// The snapshot folder as the watcher sees it: every file's path, size and modification
/// time.
pub(super) type Stamp = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The path, size and modification time of every file in the snapshot folder (three
/// levels: catalog folders, their `cards/` and `expansions/`), sorted.
pub(super) fn folder_stamp(root: &Path) -> Stamp {
    fn walk(dir: &Path, depth: u32, out: &mut Stamp) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                if depth < 2 {
                    walk(&entry.path(), depth + 1, out);
                }
            } else {
                out.push((entry.path(), meta.len(), meta.modified().ok()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, 0, &mut out);
    out.sort();
    out
}

/// Reloads on SIGHUP and on folder changes, forever (the server aborts it at shutdown).
pub(super) async fn watch(
    service: Arc<Service>,
    dispatcher: Option<Arc<Dispatcher>>,
    interval: Option<Duration>,
    mut hangup: Hangup,
    mut loaded: Stamp,
) {
    let root = service.engine().path().to_path_buf();
    let stamp_of = |root: PathBuf| async move {
        tokio::task::spawn_blocking(move || folder_stamp(&root))
            .await
            .unwrap_or_default()
    };
    let mut seen: Option<Stamp> = None;
    let mut tick = tokio::time::interval(interval.unwrap_or(Duration::from_secs(3600)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = hung_up(&mut hangup) => {
                loaded = stamp_of(root.clone()).await;
                seen = None;
                reload(&service, dispatcher.as_deref(), "SIGHUP").await;
            }
            _ = tick.tick(), if interval.is_some() => {
                let now = stamp_of(root.clone()).await;
                if now == loaded {
                    seen = None;
                } else if seen.as_ref() == Some(&now) {
                    // Changed, and unchanged since the last check: the writer is done.
                    loaded = now;
                    seen = None;
                    reload(&service, dispatcher.as_deref(), "the snapshot folder changed").await;
                } else {
                    seen = Some(now);
                }
            }
        }
    }
}

/// One reload: load and swap off the workers, then log and publish the events.
async fn reload(service: &Arc<Service>, dispatcher: Option<&Dispatcher>, why: &str) {
    let path = service.engine().path().display().to_string();
    log::event("reload", &format!("{why}: loading {path}"));
    let s = service.clone();
    let result = tokio::task::spawn_blocking(move || s.engine().reload()).await;
    let report = match result {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => {
            log::event(
                "reload_error",
                &format!("{e}; still serving the previous snapshot"),
            );
            return;
        }
        Err(e) => {
            log::event(
                "reload_error",
                &format!("the reload failed ({e}); still serving the previous snapshot"),
            );
            return;
        }
    };
    let events = report.events(new_event_id);
    let cards: Vec<String> = report
        .cards
        .iter()
        .map(|(catalog, n)| format!("{catalog} {n}"))
        .collect();
    log::event(
        "reloaded",
        &format!(
            "{} cards ({}) in {} ms; {} events",
            report.cards.iter().map(|(_, n)| n).sum::<usize>(),
            cards.join(", "),
            report.took.as_millis(),
            events.len()
        ),
    );
    for event in &events {
        log::event(
            "webhook_event",
            &format!(
                "{} {} {}",
                event.id,
                event.name,
                event.data.expansion_ids.join(",")
            ),
        );
    }
    if let (Some(dispatcher), false) = (dispatcher, events.is_empty()) {
        match dispatcher.publish(&events) {
            Ok(n) => log::event("webhook_enqueued", &format!("{n} deliveries")),
            Err(e) => log::event(
                "webhook_error",
                &format!("the outbox refused {} events: {e}", events.len()),
            ),
        }
    }
}
