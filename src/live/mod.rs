//! Live updates: an engine that reloads its snapshot in the background and
//! swaps the new one in atomically, and what changed between the two ([`ReloadReport`],
//! [`changes`]), from which the webhook events are made ([`Event`]).
//!
//! ```
//! use cardex::LiveEngine;
//! let live = LiveEngine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
//! let before = live.current();
//! let report = live.reload()?; // the same folder, unchanged
//! assert!(report.changes.is_empty());
//! assert!(report.events(|| unreachable!("no change, no event")).is_empty());
//! // A search that started before the swap keeps the engine it started with.
//! assert_eq!(before.catalogs().count(), live.current().catalogs().count());
//! # Ok::<(), cardex::LoadError>(())
//! ```
//!
//! A reload reads and validates the whole new snapshot before anything is swapped: a
//! snapshot that fails is refused with its [`LoadError`] and the old engine keeps serving.
//! Readers take the current engine with [`LiveEngine::current`] (an `Arc`, held for the
//! length of one request), so a search sees the old data or the new, never a mix.

pub mod changes;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::{Engine, OpenOptions};
use crate::load::LoadError;
pub use changes::{CatalogChanges, ChangeKind, Marks};

/// An [`Engine`] that can be replaced by a newer load of its snapshot folder while it
/// serves.
#[derive(Debug)]
pub struct LiveEngine {
    path: PathBuf,
    /// How reloads open the snapshot: as the first engine was.
    options: OpenOptions,
    current: RwLock<Arc<Engine>>,
    /// The marks of the current engine; the lock also makes reloads one at a time.
    marks: Mutex<Marks>,
}

/// What one successful reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Per catalog with a change (in name order): the expansions whose raw prices, graded
    /// prices or pop reports changed.
    pub changes: Vec<CatalogChanges>,
    /// The number of cards per catalog in the new snapshot, in name order.
    pub cards: Vec<(String, usize)>,
    /// How long loading, comparing and swapping took (zero inside `before_swap`).
    pub took: Duration,
    /// The marks of the new snapshot, which the engine keeps once it is swapped in.
    pub marks: Marks,
}

impl ReloadReport {
    /// The webhook events of this reload: see [`events`].
    pub fn events(&self, new_id: impl FnMut() -> String) -> Vec<Event> {
        events(&self.changes, new_id)
    }
}

/// The webhook events of `changes`: per catalog, one event per kind that
/// changed, in the order raw prices, graded prices, pop reports; `new_id` makes each
/// event's unique id.
pub fn events(changes: &[CatalogChanges], mut new_id: impl FnMut() -> String) -> Vec<Event> {
    let mut events = Vec::new();
    for changes in changes {
        for kind in ChangeKind::ALL {
            let expansion_ids = changes.of(kind);
            if !expansion_ids.is_empty() {
                events.push(Event {
                    id: new_id(),
                    name: kind.event_name(&changes.catalog),
                    data: EventData {
                        expansion_ids: expansion_ids.to_vec(),
                    },
                });
            }
        }
    }
    events
}

/// A webhook event object, as the service POSTs it: `{"id", "name", "data": {"expansion_ids"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Event {
    /// The event's unique id.
    pub id: String,
    /// The event name, e.g. `pokemon.expansions.prices.raw_updated`.
    pub name: String,
    /// The event data.
    pub data: EventData,
}

/// The `data` of an [`Event`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EventData {
    /// The ids of the expansions that had the update, sorted, without repeats.
    pub expansion_ids: Vec<String>,
}

impl Event {
    /// The event as the JSON body that is POSTed (and signed).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an event serialises")
    }
}

impl LiveEngine {
    /// Loads the snapshot folder at `path` (as [`Engine::open`]) and marks its prices and
    /// pop reports for later comparison.
    ///
    /// # Errors
    ///
    /// The snapshot's [`LoadError`].
    pub fn open(path: impl AsRef<Path>) -> Result<LiveEngine, LoadError> {
        Ok(LiveEngine::new(Engine::open(path)?))
    }

    /// Wraps a loaded engine; reloads read [`Engine::path`] with [`Engine::options`].
    pub fn new(engine: Engine) -> LiveEngine {
        let marks = Marks::of(&engine);
        LiveEngine {
            path: engine.path().to_path_buf(),
            options: engine.options().clone(),
            current: RwLock::new(Arc::new(engine)),
            marks: Mutex::new(marks),
        }
    }

    /// The engine serving now. Hold it for one request: a reload meanwhile does not change
    /// what it answers.
    pub fn current(&self) -> Arc<Engine> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The snapshot folder reloads read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The marks of the serving engine (to save, and compare with a later run's).
    pub fn marks(&self) -> Marks {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Loads the snapshot folder again, compares it with the serving engine, and swaps it
    /// in. Reloads run one at a time; searches go on against the old engine meanwhile.
    ///
    /// # Errors
    ///
    /// The new snapshot's [`LoadError`]: nothing is swapped, the old engine keeps serving.
    pub fn reload(&self) -> Result<ReloadReport, LoadError> {
        self.reload_with(|_| Ok::<(), std::convert::Infallible>(()))
            .map_err(|e| match e {
                ReloadError::Load(e) => e,
                ReloadError::Refused(never) => match never {},
            })
    }

    /// Like [`LiveEngine::reload`], with `before_swap` called on the report once the new
    /// snapshot is loaded and compared, before it is swapped in: the server writes the
    /// events to its durable outbox there, so that no change is ever served without its
    /// events recorded. If `before_swap` fails, nothing is swapped (the next reload finds
    /// the same changes again).
    ///
    /// # Errors
    ///
    /// [`ReloadError::Load`] for a refused snapshot, [`ReloadError::Refused`] with
    /// `before_swap`'s error; either way the old engine keeps serving.
    pub fn reload_with<E>(
        &self,
        before_swap: impl FnOnce(&ReloadReport) -> Result<(), E>,
    ) -> Result<ReloadReport, ReloadError<E>> {
        let started = Instant::now();
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        let engine =
            Engine::open_with(&self.path, &self.options, |_| {}).map_err(ReloadError::Load)?;
        let new_marks = Marks::of(&engine);
        let changes = marks.changes(&new_marks);
        let cards = engine
            .catalogs()
            .map(|c| (c.name().to_string(), c.cards().len()))
            .collect();
        let mut report = ReloadReport {
            changes,
            cards,
            took: Duration::ZERO,
            marks: new_marks,
        };
        before_swap(&report).map_err(ReloadError::Refused)?;
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(engine),
        );
        // Dropped outside the lock (freeing a large store takes a while), and only if no
        // request still holds it; otherwise the last one frees it.
        drop(old);
        *marks = report.marks.clone();
        report.took = started.elapsed();
        Ok(report)
    }
}

/// Why [`LiveEngine::reload_with`] swapped nothing.
#[derive(Debug)]
pub enum ReloadError<E> {
    /// The new snapshot was refused.
    Load(LoadError),
    /// The caller's `before_swap` failed.
    Refused(E),
}

impl<E: std::fmt::Display> std::fmt::Display for ReloadError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReloadError::Load(e) => e.fmt(f),
            ReloadError::Refused(e) => e.fmt(f),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for ReloadError<E> {}
