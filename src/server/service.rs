//! A running service's state: the engine (reloadable) and, with accounts, the metering —
//! teams, keys, the rate limiter, the credit ledger and the usage figures.

use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use super::accounts::{self, Accounts, KeyRing, Team};
use super::ledger::Ledger;
use super::limit::RateLimiter;
use super::log;
use crate::{Engine, LiveEngine};

/// The team a request was admitted for (its number in the accounts), in the request's
/// extensions once the metering layer let it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Admitted(pub usize);

/// The accounts side of a server: teams, keys, limits, credits and usage.
pub(super) struct Metered {
    pub teams: Vec<Team>,
    pub keys: KeyRing,
    pub limiter: RateLimiter,
    pub ledger: Arc<dyn Ledger>,
    pub costs: accounts::CreditCosts,
    usage: UsageBoard,
}

/// Per team, the credits used as of the last refresh (usage figures lag by design).
struct UsageBoard {
    refreshed: RwLock<(Vec<u64>, SystemTime)>,
}

impl UsageBoard {
    fn refresh(&self, teams: &[Team], ledger: &dyn Ledger) {
        let used = teams.iter().map(|t| ledger.used(&t.id)).collect();
        *self.refreshed.write().unwrap_or_else(|e| e.into_inner()) = (used, SystemTime::now());
    }
}

/// A running service's state: the engine (reloadable) and, with accounts, the metering.
pub struct Service {
    engine: LiveEngine,
    pub(super) metered: Option<Metered>,
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
        }
    }

    /// The engine, which [`LiveEngine::reload`] replaces while the service runs.
    pub fn engine(&self) -> &LiveEngine {
        &self.engine
    }

    /// A service over `engine` for the teams of `accounts`, charging credits to `ledger`.
    /// The usage figures start refreshed.
    pub fn metered(engine: Engine, accounts: Accounts, ledger: Arc<dyn Ledger>) -> Service {
        let usage = UsageBoard {
            refreshed: RwLock::new((Vec::new(), SystemTime::now())),
        };
        usage.refresh(&accounts.teams, ledger.as_ref());
        Service {
            engine: LiveEngine::new(engine),
            metered: Some(Metered {
                keys: KeyRing::new(&accounts),
                limiter: RateLimiter::per_spec(accounts.teams.len()),
                teams: accounts.teams,
                ledger,
                costs: accounts.credit_costs,
                usage,
            }),
        }
    }

    /// Refreshes the usage figures from the ledger (the server does this on an interval).
    pub fn refresh_usage(&self) {
        if let Some(m) = &self.metered {
            m.usage.refresh(&m.teams, m.ledger.as_ref());
        }
    }

    /// Makes every charge durable (`fsync`); the server calls it on an interval and at
    /// shutdown.
    ///
    /// # Errors
    ///
    /// The ledger's.
    pub fn sync_ledger(&self) -> std::io::Result<()> {
        match &self.metered {
            Some(m) => m.ledger.sync(),
            None => Ok(()),
        }
    }

    /// The body of `/account/v1/usage` for team number `team`: its figures as of the last
    /// refresh; `None` without accounts.
    pub(super) fn usage(&self, team: usize) -> Option<Vec<u8>> {
        let m = self.metered.as_ref()?;
        let board = m.usage.refreshed.read().unwrap_or_else(|e| e.into_inner());
        let used = board.0.get(team).copied().unwrap_or(0);
        let plan = m.teams.get(team)?.plan;
        let body = Usage {
            total_credits: plan.total_credits,
            remaining_credits: plan.total_credits.saturating_sub(used),
            used_credits: used,
            overage_credit_rate: plan.overage_credit_rate,
            overage_credits: used.saturating_sub(plan.total_credits),
            updated_at: log::rfc3339(board.1),
        };
        Some(
            serde_json::to_string(&body)
                .expect("usage serialises")
                .into_bytes(),
        )
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
