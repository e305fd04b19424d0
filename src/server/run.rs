//! Running the service: its configuration, the start (snapshot, accounts, ledger,
//! webhooks), the accept loop with graceful shutdown, and the typed errors that stop it.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::accounts::{Accounts, AccountsError};
use super::config::ServeConfig;
use super::connections::{serve_connections, shutdown_signal};
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
