//! How `cardex serve` runs: where the snapshot and the state are, where to listen, the
//! timeouts, and the webhook files.

use std::path::PathBuf;
use std::time::Duration;

use super::state::StateUrl;
use crate::StoreKind;

/// How `cardex serve` runs: [`ServeConfig::new`], then set the fields that differ.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// The snapshot folder.
    pub data: PathBuf,
    /// How the snapshot's records are kept in memory: plain (the default) or compressed.
    pub store: StoreKind,
    /// Where to listen: `HOST:PORT` (a name is resolved; port 0 picks a free port).
    pub addr: String,
    /// The state database (accounts, credits used, usage figures, the webhook outbox and
    /// the marks of the last snapshot); by default an SQLite file beside the snapshot
    /// folder ([`super::state::default_state`]).
    pub state: Option<StateUrl>,
    /// Serve without credentials, limits or credits (local use); the state still holds
    /// the webhook outbox.
    pub open: bool,
    /// With PostgreSQL state: where charges are spooled while the database is unreachable;
    /// by default `<data>.spool.db` beside the snapshot folder.
    pub spool: Option<PathBuf>,
    /// The rate limit: at most this many requests per team in any `rate_window`.
    pub rate_limit: u32,
    /// The rate limit's window (one second).
    pub rate_window: Duration,
    /// How often usage figures refresh (the service refreshes them every 20 to 30 minutes).
    pub usage_refresh: Duration,
    /// The longest a request may take.
    pub request_timeout: Duration,
    /// How often SQLite's write-ahead log is checkpointed, and how often an unreachable
    /// PostgreSQL is tried again.
    pub sync_interval: Duration,
    /// The longest a client may take to send a request's head (request line and headers)
    /// once it has started, or an idle keep-alive connection may wait for its next request;
    /// then the connection is closed without an answer.
    pub header_read_timeout: Duration,
    /// At shutdown, the longest in-flight requests are waited for.
    pub shutdown_grace: Duration,
    /// The webhooks file (subscriptions, retry policy); without it events are only logged.
    pub webhooks: Option<PathBuf>,
    /// A PEM file of private CA certificates that `https://` receivers' certificates may
    /// chain to, besides the system's and webpki's roots.
    pub webhook_ca: Option<PathBuf>,
    /// How often the snapshot folder is checked for changes (a reload follows once two
    /// checks in a row see the same new state); `None`: only SIGHUP reloads.
    pub watch_interval: Option<Duration>,
    /// The catalog `/v2` serves (the Pokémon TCG API v2 surface).
    pub v2_catalog: String,
    /// Requests a minute per client address on `/v2` without an API key.
    pub v2_anonymous_per_minute: u32,
    /// The header webhook deliveries carry their signature in (`X-Service-Signature`;
    /// `X-Scrydex-Signature` for receivers written for Scrydex).
    pub signature_header: String,
}

impl ServeConfig {
    /// The defaults: a plain store, the state beside the snapshot folder, metered, 100
    /// requests per second per team, usage refreshed every 20 minutes, 10 s requests, 10 s
    /// to send a request head, the state synced every 500 ms, 30 s of grace at shutdown, no
    /// webhooks, the snapshot folder checked for changes every second; `/v2` over
    /// `pokemon`, 30 requests a minute per client address without a key.
    pub fn new(data: PathBuf, addr: impl Into<String>) -> ServeConfig {
        ServeConfig {
            data,
            store: StoreKind::Plain,
            addr: addr.into(),
            state: None,
            open: false,
            spool: None,
            rate_limit: 100,
            rate_window: Duration::from_secs(1),
            usage_refresh: Duration::from_secs(20 * 60),
            request_timeout: Duration::from_secs(10),
            sync_interval: Duration::from_millis(500),
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            webhooks: None,
            webhook_ca: None,
            watch_interval: Some(Duration::from_secs(1)),
            v2_catalog: super::v2::DEFAULT_CATALOG.to_string(),
            v2_anonymous_per_minute: super::v2::DEFAULT_ANONYMOUS_PER_MINUTE,
            signature_header: crate::webhook::SIGNATURE_HEADER.to_string(),
        }
    }
}
