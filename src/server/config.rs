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
    /// The web pages' origins whose scripts may call the service from a browser (CORS).
    pub cors_origins: CorsOrigins,
    /// Called on the loading thread after each load of the snapshot and the work that
    /// follows it (at start, before listening, and after each reload, whether it
    /// succeeded, failed or panicked), when the load's threads are idle: the `cardex` command gives back to
    /// the system there what its allocator holds freed.
    pub after_load: Option<fn()>,
}

/// Which web origins may call the service from a browser's scripts: the
/// `Access-Control-Allow-Origin` the answers carry, and the preflight requests answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorsOrigins {
    /// Any origin (`*`), as public card APIs answer: requests carry keys in headers, never
    /// cookies, so a page of another origin can do nothing its visitor's key cannot.
    Any,
    /// No origin: answers carry no CORS headers, and a preflight is a 405.
    None,
    /// These origins (`https://app.example.com`), each as a browser sends it.
    These(Vec<String>),
}

impl CorsOrigins {
    /// Reads `--cors-origins`: `*`, `none`, or a comma list of origins
    /// (`scheme://host[:port]`).
    ///
    /// ```
    /// use cardex::server::CorsOrigins;
    /// assert_eq!(CorsOrigins::parse("*"), Ok(CorsOrigins::Any));
    /// assert_eq!(
    ///     CorsOrigins::parse("https://a.example, http://localhost:3000"),
    ///     Ok(CorsOrigins::These(vec!["https://a.example".into(), "http://localhost:3000".into()]))
    /// );
    /// // As browsers send them: lower case, without the scheme's default port.
    /// assert_eq!(
    ///     CorsOrigins::parse("HTTPS://App.Example:443"),
    ///     Ok(CorsOrigins::These(vec!["https://app.example".into()]))
    /// );
    /// assert!(CorsOrigins::parse("https://a.example/app").is_err());
    /// assert!(CorsOrigins::parse("https://a.example:http").is_err());
    /// assert_eq!(
    ///     CorsOrigins::parse("http://[::1]:8080,http://[::1]"),
    ///     Ok(CorsOrigins::These(vec!["http://[::1]:8080".into(), "http://[::1]".into()]))
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// What is wrong with the first origin that is not one.
    pub fn parse(text: &str) -> Result<CorsOrigins, String> {
        match text.trim() {
            "*" => return Ok(CorsOrigins::Any),
            "none" => return Ok(CorsOrigins::None),
            _ => {}
        }
        let origins = text
            .split(',')
            .map(|written| {
                let bad = || {
                    format!(
                        "`{}` is not an origin: --cors-origins takes `*`, `none`, or a comma \
                         list of `https://HOST[:PORT]` (scheme, host and port, no path)",
                        written.trim()
                    )
                };
                // Scheme and host are case-insensitive, and browsers send them in lower
                // case, without the scheme's default port: written so, they match.
                let origin = written.trim().to_ascii_lowercase();
                let (scheme, authority) = origin.split_once("://").ok_or_else(bad)?;
                let default_port = match scheme {
                    "https" => "443",
                    "http" => "80",
                    _ => return Err(bad()),
                };
                // `[::1]:8080`: the port is after the bracket.
                let (host, port) = match authority.rsplit_once(':') {
                    Some((host, port)) if !authority.ends_with(']') => (host, Some(port)),
                    _ => (authority, None),
                };
                let host_fine = !host.is_empty()
                    && host.bytes().all(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                    });
                let port_fine = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
                if !host_fine || !port_fine {
                    return Err(bad());
                }
                Ok(match port {
                    Some(p) if p != default_port => format!("{scheme}://{host}:{p}"),
                    _ => format!("{scheme}://{host}"),
                })
            })
            .collect::<Result<Vec<String>, String>>()?;
        Ok(CorsOrigins::These(origins))
    }
}

impl ServeConfig {
    /// The defaults: a plain store, the state beside the snapshot folder, metered, 100
    /// requests per second per team, usage refreshed every 20 minutes, 10 s requests, 10 s
    /// to send a request head, the state synced every 500 ms, 30 s of grace at shutdown, no
    /// webhooks, the snapshot folder checked for changes every second; `/v2` over
    /// `pokemon`, 30 requests a minute per client address without a key; browsers of any
    /// origin allowed.
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
            cors_origins: CorsOrigins::Any,
            after_load: None,
        }
    }
}
