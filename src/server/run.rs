//! Running the service: its configuration, the start (snapshot, accounts, ledger,
//! webhooks), the accept loop with graceful shutdown, and the typed errors that stop it.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use super::accounts::{Accounts, AccountsError};
use super::router::router;
use super::service::Service;
use super::state::{SqliteState, StateError, StateUrl, SCHEMA_VERSION};
use super::webhooks::WebhooksError;
use super::{ledger, log, reload, webhooks};
use crate::{Engine, LoadError};

/// Why the service could not start, or stopped with an error.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The async runtime could not be started.
    Runtime(io::Error),
    /// The signal handlers (SIGHUP for reloads) could not be installed.
    Signal(io::Error),
    /// The snapshot could not be loaded.
    Snapshot(LoadError),
    /// The accounts file could not be read or is not valid.
    Accounts(AccountsError),
    /// The state database could not be opened, migrated or read.
    State(StateError),
    /// The credit ledger could not be opened, or not synced at shutdown.
    Ledger {
        /// The ledger file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The webhooks file could not be read or is not valid.
    Webhooks(WebhooksError),
    /// The webhook outbox, or the marks saved beside it, could not be opened or written.
    Outbox {
        /// The outbox file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The private CA file for `https://` receivers could not be read or holds no
    /// certificate.
    WebhookCa {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The address could not be bound.
    Listen {
        /// The address as configured.
        addr: String,
        /// Why.
        source: io::Error,
    },
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            ServeError::Signal(e) => write!(f, "cannot handle SIGHUP: {e}"),
            ServeError::Snapshot(e) => e.fmt(f),
            ServeError::Accounts(e) => e.fmt(f),
            ServeError::State(e) => e.fmt(f),
            ServeError::Ledger { path, source } if path.as_os_str().is_empty() => {
                write!(f, "ledger: {source}")
            }
            ServeError::Ledger { path, source } => write!(f, "{}: {source}", path.display()),
            ServeError::Webhooks(e) => e.fmt(f),
            ServeError::Outbox { path, source } => write!(f, "{}: {source}", path.display()),
            ServeError::WebhookCa { path, reason } => write!(
                f,
                "{}: {reason}; --webhook-ca takes a PEM file of CA certificates",
                path.display()
            ),
            ServeError::Listen { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Runtime(e) | ServeError::Signal(e) => Some(e),
            ServeError::Snapshot(e) => Some(e),
            ServeError::Accounts(e) => Some(e),
            ServeError::State(e) => Some(e),
            ServeError::Ledger { source, .. }
            | ServeError::Outbox { source, .. }
            | ServeError::Listen { source, .. } => Some(source),
            ServeError::Webhooks(e) => Some(e),
            ServeError::WebhookCa { .. } => None,
        }
    }
}

/// How `cardex serve` runs: [`ServeConfig::new`], then set the fields that differ.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// The snapshot folder.
    pub data: PathBuf,
    /// Where to listen: `HOST:PORT` (a name is resolved; port 0 picks a free port).
    pub addr: String,
    /// The state database (accounts and credits used); it takes the place of `accounts`
    /// and `ledger`.
    pub state: Option<StateUrl>,
    /// The accounts file; without it (and without `state`) the server runs open (no
    /// credentials, no metering).
    pub accounts: Option<PathBuf>,
    /// The credit ledger; by default the accounts file's path with extension `ledger`.
    pub ledger: Option<PathBuf>,
    /// How often usage figures refresh (the service refreshes them every 20 to 30 minutes).
    pub usage_refresh: Duration,
    /// The longest a request may take.
    pub request_timeout: Duration,
    /// How often charges are `fsync`ed.
    pub sync_interval: Duration,
    /// The longest a client may take to send a request's head (request line and headers)
    /// once it has started, or an idle keep-alive connection may wait for its next request;
    /// then the connection is closed without an answer.
    pub header_read_timeout: Duration,
    /// At shutdown, the longest in-flight requests are waited for.
    pub shutdown_grace: Duration,
    /// The webhooks file (subscriptions, retry policy); without it events are only logged.
    pub webhooks: Option<PathBuf>,
    /// The webhook outbox; by default the webhooks file's path with extension `outbox`.
    pub outbox: Option<PathBuf>,
    /// A PEM file of private CA certificates that `https://` receivers' certificates may
    /// chain to, besides the system's and webpki's roots.
    pub webhook_ca: Option<PathBuf>,
    /// How often the snapshot folder is checked for changes (a reload follows once two
    /// checks in a row see the same new state); `None`: only SIGHUP reloads.
    pub watch_interval: Option<Duration>,
}

impl ServeConfig {
    /// The defaults: no accounts, usage refreshed every 20 minutes, 10 s requests, 10 s to
    /// send a request head, charges synced every 100 ms, 30 s of grace at shutdown, no
    /// webhooks, the snapshot folder checked for changes every second.
    pub fn new(data: PathBuf, addr: impl Into<String>) -> ServeConfig {
        ServeConfig {
            data,
            addr: addr.into(),
            state: None,
            accounts: None,
            ledger: None,
            usage_refresh: Duration::from_secs(20 * 60),
            request_timeout: Duration::from_secs(10),
            sync_interval: Duration::from_millis(100),
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            webhooks: None,
            outbox: None,
            webhook_ca: None,
            watch_interval: Some(Duration::from_secs(1)),
        }
    }
}

/// Loads the snapshot and the accounts, then serves until SIGINT or SIGTERM: in-flight
/// requests finish, and the ledger is synced before it returns.
///
/// # Errors
///
/// A snapshot, accounts file, ledger, webhooks file or outbox that cannot be loaded, or an
/// address that cannot be bound: a [`ServeError`] naming the culprit.
pub fn run(config: ServeConfig) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    // First of all: from here on SIGHUP means "reload" (once serving) and SIGINT/SIGTERM
    // "stop", not the default "terminate", however long the load below takes. A stop that
    // comes while starting is seen before anything is served or announced.
    let (hangup, stopping) = {
        let _runtime = runtime.enter();
        let hangup = reload::hangup_signal().map_err(ServeError::Signal)?;
        let signal = shutdown_signal().map_err(ServeError::Signal)?;
        let (stop, stopping) = tokio::sync::watch::channel(false);
        runtime.spawn(async move {
            signal.await;
            let _ = stop.send(true);
        });
        (hangup, stopping)
    };
    // Taken before loading: a change made while the snapshot loads is seen by the watcher.
    let stamp = reload::folder_stamp(&config.data);
    let engine = Engine::open(&config.data).map_err(ServeError::Snapshot)?;
    let service = match (&config.state, &config.accounts) {
        (Some(url), _) => {
            let StateUrl::Sqlite(path) = url;
            let state = SqliteState::open(path).map_err(ServeError::State)?;
            let accounts = state.accounts().map_err(ServeError::State)?;
            log::event(
                "accounts",
                &format!(
                    "{} teams from {url}; credits charged there (schema version {})",
                    accounts.teams.len(),
                    SCHEMA_VERSION
                ),
            );
            Service::metered(engine, accounts, Arc::new(state.ledger()))
        }
        (None, None) => {
            log::event(
                "open_mode",
                "no --state or --accounts: every request is served without credentials, limits or credits; for local use only",
            );
            Service::open(engine)
        }
        (None, Some(path)) => {
            let accounts = Accounts::read(path).map_err(ServeError::Accounts)?;
            let ledger_path = config
                .ledger
                .clone()
                .unwrap_or_else(|| path.with_extension("ledger"));
            let ledger =
                ledger::FileLedger::open(&ledger_path).map_err(|source| ServeError::Ledger {
                    path: ledger_path.clone(),
                    source,
                })?;
            log::event(
                "accounts",
                &format!(
                    "{} teams from {}; ledger {}",
                    accounts.teams.len(),
                    path.display(),
                    ledger_path.display()
                ),
            );
            Service::metered(engine, accounts, Arc::new(ledger))
        }
    };
    let webhooks = match &config.webhooks {
        Some(path) => {
            let webhooks = webhooks::Webhooks::read(path).map_err(ServeError::Webhooks)?;
            let roots = match &config.webhook_ca {
                Some(ca) => private_roots(ca)?,
                None => Vec::new(),
            };
            let outbox = config
                .outbox
                .clone()
                .unwrap_or_else(|| path.with_extension("outbox"));
            log::event(
                "webhooks",
                &format!(
                    "{} subscriptions from {}; outbox {}",
                    webhooks.subscriptions.len(),
                    path.display(),
                    outbox.display()
                ),
            );
            Some((webhooks, outbox, roots))
        }
        None => None,
    };
    let service = Arc::new(service);
    runtime.block_on(serve(service, config, webhooks, stamp, hangup, stopping))
}

async fn serve(
    service: Arc<Service>,
    config: ServeConfig,
    webhooks: Option<(webhooks::Webhooks, PathBuf, Vec<reqwest::Certificate>)>,
    stamp: reload::Stamp,
    hangup: reload::Hangup,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ServeError> {
    if *stopping.borrow() {
        log::event(
            "stopped",
            "a stop signal came while starting: nothing was served or announced",
        );
        return Ok(());
    }
    let shutdown = {
        let mut stopping = stopping.clone();
        async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }
    };
    let dispatcher = match webhooks {
        Some((webhooks, outbox, roots)) => {
            let dispatcher =
                webhooks::Dispatcher::start(webhooks, &outbox, &roots).map_err(|source| {
                    ServeError::Outbox {
                        path: outbox.clone(),
                        source,
                    }
                })?;
            reload::catch_up(&service, &dispatcher).map_err(|source| ServeError::Outbox {
                path: outbox.clone(),
                source,
            })?;
            Some(dispatcher)
        }
        None => None,
    };
    let reloader = tokio::spawn(reload::watch(
        service.clone(),
        dispatcher,
        config.watch_interval,
        hangup,
        stamp,
    ));
    let listener = tokio::net::TcpListener::bind(config.addr.as_str())
        .await
        .map_err(|source| ServeError::Listen {
            addr: config.addr.clone(),
            source,
        })?;
    let local = listener.local_addr().map_err(|source| ServeError::Listen {
        addr: config.addr.clone(),
        source,
    })?;
    log::event("listening", &format!("http://{local}"));
    let background = {
        let service = service.clone();
        tokio::spawn(async move {
            let mut sync = tokio::time::interval(config.sync_interval);
            let mut refresh = tokio::time::interval(config.usage_refresh);
            refresh.tick().await;
            loop {
                tokio::select! {
                    _ = sync.tick() => {
                        log::flush();
                        // fsync blocks: off the runtime's worker threads.
                        let service = service.clone();
                        let synced = tokio::task::spawn_blocking(move || service.sync_ledger()).await;
                        if let Ok(Err(e)) = synced {
                            log::event("ledger_error", &e.to_string());
                        }
                    }
                    _ = refresh.tick() => service.refresh_usage(),
                }
            }
        })
    };
    let app = router(service.clone(), config.request_timeout);
    let connections = serve_connections(listener, app, &config, shutdown).await;
    background.abort();
    reloader.abort();
    let synced = service.sync_ledger();
    log::event(
        "stopped",
        &format!(
            "{} in-flight connections {}; ledger {}",
            connections.in_flight,
            if connections.cut_off == 0 {
                "finished".to_string()
            } else {
                format!(
                    "ran past the {} s grace period and were cut off",
                    config.shutdown_grace.as_secs()
                )
            },
            if synced.is_ok() {
                "synced"
            } else {
                "NOT synced"
            }
        ),
    );
    synced.map_err(|source| ServeError::Ledger {
        path: config.ledger.clone().unwrap_or_default(),
        source,
    })
}

/// How the connections stood when the server stopped accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Connections open when the shutdown signal came.
    pub in_flight: usize,
    /// Of those, the ones still open when the grace period ran out.
    pub cut_off: usize,
}

/// Accepts connections on `listener` and serves `app` on each with hyper's HTTP/1 (with
/// [`ServeConfig::header_read_timeout`]) until `shutdown` completes; then stops accepting,
/// lets every request in flight finish (idle keep-alive connections are closed at once)
/// for at most [`ServeConfig::shutdown_grace`], and returns. [`run`] passes SIGINT/SIGTERM
/// as `shutdown`; the throughput bench serves through this too.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    config: &ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> Drained {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors and the like: say so, breathe, go on.
                        log::event("accept_error", &e.to_string());
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
                // A connection error (a client gone, a header read timeout) ends only that
                // connection; hyper has already answered what it could parse.
                tokio::spawn(connection);
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    let in_flight = graceful.count();
    let cut_off = match tokio::time::timeout(config.shutdown_grace, graceful.shutdown()).await {
        Ok(()) => 0,
        Err(_) => in_flight.max(1),
    };
    Drained { in_flight, cut_off }
}

/// The certificates of a private CA file (PEM, one or more), for `https://` receivers.
fn private_roots(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, ServeError> {
    let bad = |reason: String| ServeError::WebhookCa {
        path: path.to_path_buf(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| bad(format!("not PEM certificates ({e})")))?;
    if roots.is_empty() {
        return Err(bad("it holds no certificate".into()));
    }
    Ok(roots)
}

/// The shutdown signals, SIGINT and SIGTERM, listened for from the moment this returns:
/// a signal that comes while the server starts (the snapshot loading) is kept, and the
/// server stops without serving, rather than being killed by the signal's default action.
fn shutdown_signal() -> io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
