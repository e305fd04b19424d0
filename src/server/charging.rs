//! Admission and charging against the state. With SQLite (one server) the rate limit is
//! this process's sliding-window log ([`RateLimiter`]), checked before the handler, and a
//! successful answer's credits are committed to SQLite before it leaves, in a group
//! commit with the concurrent requests' ([`ChargeWriter`]). With
//! PostgreSQL (replicas) the handler answers first and one statement then both admits
//! the request under the team's limit, shared by every replica and timed by the
//! database's clock, and charges it: a refused request's answer is replaced by a 429 and
//! costs nothing. While the database is unreachable a replica keeps answering under its
//! own limiter and spools charges to local disk ([`Spool`]); a task tries the database on
//! an interval, replays the spool when it answers, and only then goes back to it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::limit::{RateLimiter, Refused};
use super::log;
use super::state::{bounded, ChargeWriter, Spool, State, StateError};

/// How long an admission may wait for PostgreSQL before the replica treats it as down.
const ADMIT_TIMEOUT: Duration = Duration::from_secs(2);

/// The spooled charges replayed in one statement.
const REPLAY_BATCH: usize = 5_000;

/// Where a request is admitted and charged (see the module docs).
#[derive(Debug)]
pub(crate) struct Charging {
    state: Arc<State>,
    /// The limiter of this process: SQLite's, and PostgreSQL's while the database is down.
    local: RateLimiter,
    limit: u32,
    window: Duration,
    /// With PostgreSQL: the spool and whether the database is down.
    shared: Option<Shared>,
    /// With SQLite: the group-committing writer of charges.
    writer: Option<ChargeWriter>,
}

#[derive(Debug)]
struct Shared {
    spool: Spool,
    down: AtomicBool,
}

/// What [`Charging::before`] decided, for [`Charging::after`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked {
    /// The local limiter admitted the request (so the database is not asked).
    locally: bool,
}

/// Why a request was not charged.
#[derive(Debug)]
pub(crate) enum NotCharged {
    /// Over the rate limit: answered 429, no charge.
    Refused(Refused),
    /// The charge could not be recorded anywhere: answered 503, unserved.
    Unavailable(StateError),
}

impl Charging {
    /// Admission and charging for `teams` teams into `state`; with PostgreSQL, `spool`
    /// is where charges go while the database is down.
    ///
    /// # Errors
    ///
    /// With SQLite, the charge writer's connection could not be opened.
    pub(crate) fn new(
        state: Arc<State>,
        teams: usize,
        limit: u32,
        window: Duration,
        spool: Option<Spool>,
    ) -> Result<Charging, StateError> {
        let shared = match &*state {
            State::Postgres(_) => spool.map(|spool| Shared {
                spool,
                down: AtomicBool::new(false),
            }),
            _ => None,
        };
        let writer = match &*state {
            State::Sqlite(sqlite) => Some(ChargeWriter::start(sqlite)?),
            _ => None,
        };
        Ok(Charging {
            state,
            local: RateLimiter::new(teams, limit as usize, window),
            limit,
            window,
            shared,
            writer,
        })
    }

    /// Makes room in the local limiter for `teams` teams (added while the server runs).
    pub(crate) fn grow(&self, teams: usize) {
        self.local.grow(teams);
    }

    /// The state.
    pub(crate) fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// The limit and its window, for the 429's body.
    pub(crate) fn limit(&self) -> (u32, Duration) {
        (self.limit, self.window)
    }

    fn pg_up(&self) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|s| !s.down.load(Ordering::Acquire))
    }

    /// Before the handler: the local limiter, unless the shared one in PostgreSQL will
    /// decide after it.
    pub(crate) fn before(&self, team: usize) -> Result<Checked, Refused> {
        if self.pg_up() {
            return Ok(Checked { locally: false });
        }
        self.local.check(team)?;
        Ok(Checked { locally: true })
    }

    /// After the handler: charges `credits` (0 for an answer that is not a success) to
    /// team `team` (`id`), and with PostgreSQL admits the request first.
    pub(crate) async fn after(
        &self,
        checked: Checked,
        team: usize,
        id: &Arc<str>,
        credits: u64,
    ) -> Result<(), NotCharged> {
        match (&*self.state, &self.shared) {
            (State::Sqlite(state), _) => {
                if credits == 0 {
                    return Ok(());
                }
                match &self.writer {
                    Some(writer) => writer.charge(id.clone(), credits).await,
                    None => state.charge(id, credits),
                }
                .map_err(NotCharged::Unavailable)
            }
            (State::Postgres(pg), Some(shared)) => {
                if !checked.locally {
                    match self.admit(pg, id, credits).await {
                        Ok(None) => return Ok(()),
                        Ok(Some(wait)) => {
                            return Err(NotCharged::Refused(Refused { retry_after: wait }))
                        }
                        // The database refused the statement (a permission taken away, a
                        // table altered): a fault to fix, not an outage to ride out.
                        Err(e) if !e.is_outage() => return Err(NotCharged::Unavailable(e)),
                        Err(e) => {
                            if !shared.down.swap(true, Ordering::AcqRel) {
                                tracing::warn!(
                                    event = "state_down",
                                    spool = %shared.spool.path().display(),
                                    "{e}; answering under this replica's own rate limit and spooling charges to {}",
                                    shared.spool.path().display()
                                );
                            }
                            self.local.check(team).map_err(NotCharged::Refused)?;
                        }
                    }
                }
                if credits == 0 {
                    return Ok(());
                }
                shared
                    .spool
                    .add(id, credits)
                    .map_err(NotCharged::Unavailable)
            }
            (State::Postgres(pg), None) => match self.admit(pg, id, credits).await {
                Ok(None) => Ok(()),
                Ok(Some(wait)) => Err(NotCharged::Refused(Refused { retry_after: wait })),
                Err(e) => Err(NotCharged::Unavailable(e)),
            },
        }
    }

    /// One admission in PostgreSQL, given [`ADMIT_TIMEOUT`]: a database that stops
    /// answering without closing its connections counts as down.
    async fn admit(
        &self,
        pg: &super::state::PgState,
        id: &str,
        credits: u64,
    ) -> Result<Option<Duration>, StateError> {
        match tokio::time::timeout(
            ADMIT_TIMEOUT,
            pg.admit(id, credits, self.limit, self.window),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(StateError::Database {
                state: pg.shown().to_string(),
                doing: "admit a request",
                source: format!("no answer in {} ms", ADMIT_TIMEOUT.as_millis()).into(),
            }),
        }
    }

    /// On the sync interval: SQLite's appended charges are folded and its write-ahead log
    /// checkpointed; with PostgreSQL,
    /// a spool left by a run that stopped while the database was down, or by this one, is
    /// replayed once the database answers, and then requests go to it again.
    pub(crate) async fn tick(&self) {
        match (&*self.state, &self.shared) {
            (State::Sqlite(_), _) => {
                // Off the request workers: a checkpoint copies the log into the database file.
                let state = self.state.clone();
                let checkpointed = tokio::task::spawn_blocking(move || match &*state {
                    State::Sqlite(state) => state.checkpoint(),
                    State::Postgres(_) => Ok(()),
                })
                .await;
                if let Ok(Err(e)) = checkpointed {
                    log::event("state_error", &e.to_string());
                }
            }
            (State::Postgres(pg), Some(shared)) => {
                let down = shared.down.load(Ordering::Acquire);
                let spooled = shared.spool.len().unwrap_or(0);
                if !down && spooled == 0 {
                    return;
                }
                if let Err(e) = bounded(pg, "reach the database", pg.ping()).await {
                    if !down {
                        log::event("state_error", &e.to_string());
                    }
                    return;
                }
                match self.replay(pg, &shared.spool).await {
                    Ok(replayed) => {
                        if down {
                            shared.down.store(false, Ordering::Release);
                            tracing::info!(
                                event = "state_restored",
                                replayed,
                                "the database answers again: {replayed} spooled charges replayed; the rate limit is shared again"
                            );
                        } else if replayed > 0 {
                            tracing::info!(
                                event = "state_restored",
                                replayed,
                                "{replayed} spooled charges replayed"
                            );
                        }
                    }
                    Err(e) => log::event("state_error", &format!("replaying the spool: {e}")),
                }
            }
            (State::Postgres(_), None) => {}
        }
    }

    async fn replay(&self, pg: &super::state::PgState, spool: &Spool) -> Result<u64, StateError> {
        let mut replayed = 0;
        loop {
            let (charges, last) = spool.oldest(REPLAY_BATCH)?;
            if charges.is_empty() {
                return Ok(replayed);
            }
            bounded(pg, "replay spooled charges", pg.apply_spooled(&charges)).await?;
            spool.remove_through(last)?;
            replayed += charges.len() as u64;
        }
    }
}
