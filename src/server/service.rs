//! A running service's state: the engine (reloadable) and, with accounts, the metering —
//! teams, keys, and admission and charging against the state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, UNIX_EPOCH};

use super::accounts::{self, Accounts, KeyRing, Team};
use super::charging::Charging;
use super::limit::AddressLimiter;
use super::log;
use super::state::{State, StateError};
use super::v2::{self, V2View};
use crate::{Engine, LiveEngine};

/// The team a request was admitted for (its number in the accounts), in the request's
/// extensions once the metering layer let it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Admitted(pub usize);

/// The accounts side of a server: the roster of teams and keys, and admission and
/// charging.
pub(super) struct Metered {
    roster: RwLock<Arc<Roster>>,
    /// The state's accounts version the roster was read at.
    version: AtomicU64,
    pub charging: Charging,
}

/// The teams, their keys and the credit costs, as read from the state. A team keeps its
/// number (its rate-limit log) for as long as the server runs: a roster read again
/// numbers the teams it knew as before and the new ones after them.
pub(super) struct Roster {
    pub teams: Vec<Team>,
    /// The teams' ids, shared with the charges queued for them (no copy per request).
    pub ids: Vec<Arc<str>>,
    pub keys: KeyRing,
    pub costs: accounts::CreditCosts,
}

impl Roster {
    /// The roster of `accounts`, numbering the teams of `before` as they were.
    fn new(mut accounts: Accounts, before: Option<&Roster>) -> Roster {
        if let Some(before) = before {
            // Known teams in their old places, then the new ones in the order read.
            let number: HashMap<&str, usize> = before
                .teams
                .iter()
                .enumerate()
                .map(|(i, t)| (t.id.as_str(), i))
                .collect();
            let mut known: Vec<Option<Team>> = before.teams.iter().map(|_| None).collect();
            let mut new = Vec::new();
            for team in accounts.teams.drain(..) {
                match number.get(team.id.as_str()) {
                    Some(&i) => known[i] = Some(team),
                    None => new.push(team),
                }
            }
            // A team no longer in the state keeps its number, without keys.
            accounts.teams = known
                .into_iter()
                .zip(&before.teams)
                .map(|(read, old)| {
                    read.unwrap_or_else(|| Team {
                        keys: Vec::new(),
                        ..old.clone()
                    })
                })
                .chain(new)
                .collect();
        }
        Roster {
            keys: KeyRing::new(&accounts),
            ids: accounts
                .teams
                .iter()
                .map(|t| Arc::from(t.id.as_str()))
                .collect(),
            teams: accounts.teams,
            costs: accounts.credit_costs,
        }
    }
}

impl Metered {
    /// The roster now (requests keep the one they started with).
    pub(super) fn roster(&self) -> Arc<Roster> {
        self.roster
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A running service's state: the engine (reloadable) and, with accounts, the metering.
pub struct Service {
    engine: LiveEngine,
    pub(super) metered: Option<Metered>,
    pub(super) v2: V2Surface,
    /// The OpenAPI document made for the engine it was made from.
    openapi: RwLock<Option<(std::sync::Weak<Engine>, Arc<str>)>>,
}

/// The `/v2` surface's settings and its records, rendered for the engine of the moment.
pub(super) struct V2Surface {
    catalog: String,
    view: RwLock<Option<Arc<V2View>>>,
    /// Held while the records are rendered.
    rendering: std::sync::Mutex<()>,
    /// Requests without a key, per client address.
    pub anonymous: AddressLimiter,
}

impl V2Surface {
    fn new(catalog: &str, anonymous_per_minute: u32) -> V2Surface {
        V2Surface {
            catalog: catalog.to_string(),
            view: RwLock::new(None),
            rendering: std::sync::Mutex::new(()),
            anonymous: AddressLimiter::new(anonymous_per_minute as usize, Duration::from_secs(60)),
        }
    }
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("engine", &self.engine)
            .field("metered", &self.metered.is_some())
            .finish()
    }
}

impl Service {
    /// A service over `engine` that needs no credentials and meters nothing (local use).
    pub fn open(engine: Engine) -> Service {
        Service {
            engine: LiveEngine::new(engine),
            metered: None,
            v2: V2Surface::new(v2::DEFAULT_CATALOG, v2::DEFAULT_ANONYMOUS_PER_MINUTE),
            openapi: RwLock::new(None),
        }
    }

    /// The engine, which [`LiveEngine::reload`] replaces while the service runs.
    pub fn engine(&self) -> &LiveEngine {
        &self.engine
    }

    /// A service over `engine` for the teams of `accounts`, admitted and charged by
    /// `charging`.
    pub(super) fn metered(
        engine: Engine,
        accounts: Accounts,
        version: u64,
        charging: Charging,
    ) -> Service {
        Service {
            engine: LiveEngine::new(engine),
            metered: Some(Metered {
                roster: RwLock::new(Arc::new(Roster::new(accounts, None))),
                version: AtomicU64::new(version),
                charging,
            }),
            v2: V2Surface::new(v2::DEFAULT_CATALOG, v2::DEFAULT_ANONYMOUS_PER_MINUTE),
            openapi: RwLock::new(None),
        }
    }

    /// The same service with `/v2` over `catalog`, allowing `anonymous_per_minute`
    /// requests a minute per client address without a key.
    pub fn with_v2(mut self, catalog: &str, anonymous_per_minute: u32) -> Service {
        self.v2 = V2Surface::new(catalog, anonymous_per_minute);
        self
    }

    /// The catalog `/v2` serves.
    pub(super) fn v2_catalog(&self) -> &str {
        &self.v2.catalog
    }

    /// The engine now and its `/v2` records (`None` when the engine has no `/v2`
    /// catalog). A reload renders them; should a request find them not rendered yet, it
    /// renders them on a blocking thread, one render at a time.
    ///
    /// # Errors
    ///
    /// The render panicked (a bug), for a 500.
    pub(super) async fn v2_view(
        self: &Arc<Self>,
    ) -> Result<Option<(Arc<Engine>, Arc<V2View>)>, String> {
        let engine = self.engine.current();
        if let Some(view) = self.v2_view_of(&engine) {
            return Ok(Some((engine, view)));
        }
        let service = self.clone();
        tokio::task::spawn_blocking(move || {
            let view = service.render_v2_view(&engine)?;
            Some((engine, view))
        })
        .await
        .map_err(|e| format!("rendering the /v2 records failed: {e}"))
    }

    /// The OpenAPI document of this server for the engine now (see [`super::openapi`]),
    /// made once per loaded engine.
    pub(super) async fn openapi(self: &Arc<Self>) -> Arc<str> {
        let engine = self.engine.current();
        {
            let made = self.openapi.read().unwrap_or_else(|e| e.into_inner());
            if let Some((of, doc)) = made.as_ref() {
                if std::ptr::eq(of.as_ptr(), Arc::as_ptr(&engine)) {
                    return doc.clone();
                }
            }
        }
        // The `/v2` records are of the engine now, or (after a reload meanwhile) a newer.
        // Should rendering them fail (a bug, and `/v2` answers 500), the document is made
        // without `/v2` and not kept, so that the next request tries again.
        let v2 = self.v2_view().await;
        let keep = v2.is_ok();
        let (engine, view) = match v2.ok().flatten() {
            Some((engine, view)) => (engine, Some(view)),
            None => (engine, None),
        };
        let v2 = view
            .as_deref()
            .and_then(|view| Some((engine.catalog(self.v2_catalog())?, view)));
        let doc: Arc<str> = super::openapi::document(&engine, self.metered.is_some(), v2)
            .to_string()
            .into();
        if keep {
            *self.openapi.write().unwrap_or_else(|e| e.into_inner()) =
                Some((Arc::downgrade(&engine), doc.clone()));
        }
        doc
    }

    /// The `/v2` records of `engine`, when they are rendered already.
    pub(super) fn v2_view_of(&self, engine: &Arc<Engine>) -> Option<Arc<V2View>> {
        let view = self.v2.view.read().unwrap_or_else(|e| e.into_inner());
        view.as_ref().filter(|v| v.is_of(engine)).cloned()
    }

    /// Renders the `/v2` records of `engine` (one render at a time: a thread that waited
    /// finds the records rendered) and keeps them unless the engine has been replaced
    /// meanwhile; `None` when `engine` has no catalog for `/v2`.
    pub(super) fn render_v2_view(&self, engine: &Arc<Engine>) -> Option<Arc<V2View>> {
        let _one_at_a_time = self.v2.rendering.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(view) = self.v2_view_of(engine) {
            return Some(view);
        }
        let catalog = engine.catalog(&self.v2.catalog)?;
        let view = Arc::new(V2View::build(engine, catalog));
        if Arc::ptr_eq(&self.engine.current(), engine) {
            *self.v2.view.write().unwrap_or_else(|e| e.into_inner()) = Some(view.clone());
        }
        Some(view)
    }

    /// Reads the accounts again when keys or teams were added or imported since they
    /// were last read (the server checks every second); returns the number of teams
    /// when it did.
    ///
    /// # Errors
    ///
    /// The state's; the roster stays as it was.
    pub(super) async fn refresh_accounts(&self) -> Result<Option<usize>, StateError> {
        let Some(m) = &self.metered else {
            return Ok(None);
        };
        let state = m.charging.state();
        let version = state.accounts_version().await?;
        if version == m.version.load(Ordering::Acquire) {
            return Ok(None);
        }
        // SQLite reads on the calling thread: off the async workers, so a large roster
        // read holds up no request but those waiting for the connection.
        let aside = {
            let state = Arc::clone(state);
            tokio::task::spawn_blocking(move || state.accounts_in_place())
        };
        let accounts = match aside.await {
            Ok(Some(read)) => read?,
            Ok(None) => state.accounts().await?,
            // The read panicked: an error to log, the roster read last stays.
            Err(e) => return Err(state.failure("read the accounts", e.to_string().into())),
        };
        let roster = Roster::new(accounts, Some(&m.roster()));
        let teams = roster.teams.len();
        m.charging.grow(teams);
        *m.roster.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(roster);
        m.version.store(version, Ordering::Release);
        Ok(Some(teams))
    }

    /// A metered service over `engine` for the accounts in `state`: at most `limit`
    /// requests per team in any `window`; with PostgreSQL state, charges are spooled to
    /// `spool` while the database is unreachable.
    ///
    /// # Errors
    ///
    /// The state's (reading the accounts, opening the spool).
    pub async fn with_state(
        engine: Engine,
        state: Arc<State>,
        limit: u32,
        window: Duration,
        spool: Option<&std::path::Path>,
    ) -> Result<Service, StateError> {
        let version = state.accounts_version().await?;
        let accounts = state.accounts().await?;
        let spool = match (&*state, spool) {
            (State::Postgres(_), Some(path)) => Some(super::state::Spool::open(path)?),
            _ => None,
        };
        let charging = Charging::new(state, accounts.teams.len(), limit, window, spool)?;
        Ok(Service::metered(engine, accounts, version, charging))
    }

    /// The server's periodic work on the state (it calls this on its sync interval and
    /// at shutdown): SQLite's write-ahead log is checkpointed; with PostgreSQL, spooled
    /// charges are replayed once the database answers again.
    pub async fn tick(&self) {
        if let Some(m) = &self.metered {
            m.charging.tick().await;
        }
    }

    /// The number of teams (0 when not metered).
    pub fn teams(&self) -> usize {
        self.metered.as_ref().map_or(0, |m| m.roster().teams.len())
    }

    /// The state, when the service is metered.
    pub(super) fn state(&self) -> Option<&Arc<State>> {
        self.metered.as_ref().map(|m| m.charging.state())
    }

    /// Takes the usage board (the figures `/account/v1/usage` reports) from the credits
    /// used, unless it was taken less than `min_age` ago (by any replica).
    pub(super) async fn refresh_usage(&self, min_age: Duration) {
        if let Some(state) = self.state() {
            match state.refresh_usage(min_age.as_secs_f64()).await {
                Ok(true) => log::event("usage_refreshed", "usage figures taken"),
                Ok(false) => {}
                Err(e) => log::event("state_error", &e.to_string()),
            }
        }
    }

    /// The body of `/account/v1/usage` for team number `team`: its figures on the usage
    /// board; `Ok(None)` without accounts.
    ///
    /// # Errors
    ///
    /// The state's.
    pub(super) async fn usage(&self, team: usize) -> Result<Option<Vec<u8>>, StateError> {
        let Some(m) = self.metered.as_ref() else {
            return Ok(None);
        };
        let roster = m.roster();
        let Some(t) = roster.teams.get(team) else {
            return Ok(None);
        };
        let (used, taken) = m.charging.state().usage(&t.id).await?;
        let plan = t.plan;
        let body = Usage {
            total_credits: plan.total_credits,
            remaining_credits: plan.total_credits.saturating_sub(used),
            used_credits: used,
            overage_credit_rate: plan.overage_credit_rate,
            overage_credits: used.saturating_sub(plan.total_credits),
            updated_at: super::clock::rfc3339(UNIX_EPOCH + Duration::from_secs_f64(taken.max(0.0))),
        };
        Ok(Some(
            serde_json::to_string(&body)
                .expect("usage serialises")
                .into_bytes(),
        ))
    }
}

/// The body of `/account/v1/usage`, fields in the spec's order.
#[derive(serde::Serialize)]
struct Usage {
    total_credits: u64,
    remaining_credits: u64,
    used_credits: u64,
    overage_credit_rate: f64,
    overage_credits: u64,
    updated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::accounts::{Plan, StoredKey};

    fn team(id: &str, keys: &[&str], credits: u64) -> Team {
        Team {
            id: id.to_string(),
            plan: Plan {
                total_credits: credits,
                overage_credit_rate: 0.0,
            },
            keys: keys
                .iter()
                .map(|k| StoredKey {
                    sha256: k.repeat(64),
                    created: 0,
                })
                .collect(),
        }
    }

    fn ids(roster: &Roster) -> Vec<&str> {
        roster.teams.iter().map(|t| t.id.as_str()).collect()
    }

    /// A team keeps its number (its rate-limit log) across re-reads: known teams in their
    /// places, a team gone from the state in its place without keys, new ones after, in
    /// the order read.
    #[test]
    fn a_roster_read_again_numbers_the_teams_it_knew_as_before() {
        let first = Accounts {
            teams: vec![
                team("c", &["1"], 1),
                team("a", &["2"], 1),
                team("b", &[], 1),
            ],
            credit_costs: Default::default(),
        };
        let before = Roster::new(first, None);
        assert_eq!(ids(&before), ["c", "a", "b"]);
        let again = Accounts {
            teams: vec![
                team("a", &["2", "3"], 9),
                team("b", &[], 1),
                team("d", &["4"], 1),
                team("e", &[], 1),
            ],
            credit_costs: Default::default(),
        };
        let after = Roster::new(again, Some(&before));
        assert_eq!(ids(&after), ["c", "a", "b", "d", "e"]);
        assert!(after.teams[0].keys.is_empty(), "c is gone: no keys");
        assert_eq!(after.teams[1].keys.len(), 2);
        assert_eq!(after.teams[1].plan.total_credits, 9);
        assert_eq!(&*after.ids[3], "d");
        let reread = Roster::new(
            Accounts {
                teams: vec![team("e", &[], 1)],
                credit_costs: Default::default(),
            },
            Some(&after),
        );
        assert_eq!(ids(&reread), ["c", "a", "b", "d", "e"]);
        assert!(reread.teams.iter().all(|t| t.keys.is_empty()));
    }
}
