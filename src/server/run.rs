//! Running the service: the start (snapshot, state, accounts, webhooks), serving until a
//! stop signal, and the typed errors that stop it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::ServeConfig;
use super::connections::{serve_connections, shutdown_signal};
use super::router::router;
use super::service::Service;
use super::state::{default_state, State, StateError, StateUrl};
use super::webhooks::WebhooksError;
use super::{log, reload, webhooks};
use crate::{Engine, LoadError, OpenOptions};

/// The headers a webhook delivery sets itself or its HTTP connection owns, lower case: not
/// a signature header's name.
const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

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
    /// The state database could not be opened, reached, migrated or read (or, with
    /// PostgreSQL, the local spool).
    State(StateError),
    /// The webhooks file could not be read or is not valid.
    Webhooks(WebhooksError),
    /// The private CA file for `https://` receivers could not be read or holds no
    /// certificate.
    WebhookCa {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `signature_header` is not an HTTP header name.
    SignatureHeader {
        /// The name as configured.
        name: String,
    },
    /// `signature_header` names a header the delivery sets itself (`Content-Type`) or the
    /// HTTP connection owns (`Host`, `Content-Length`, `Transfer-Encoding`, ...): the
    /// signature would be lost or sent beside another value.
    ReservedSignatureHeader {
        /// The name as configured.
        name: String,
    },
    /// A setting that would mean nothing or lose data: a zero timeout or interval, a spool
    /// without PostgreSQL state.
    Setting {
        /// The setting, as `cardex serve` names it (`--header-timeout`).
        name: &'static str,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The address could not be bound.
    Listen {
        /// The address as configured.
        addr: String,
        /// Why.
        source: io::Error,
    },
}

impl ServeError {
    /// The process exit code for this error: 2 for what the configuration or the
    /// environment it names must fix (a snapshot, a state, a webhooks or CA file, an
    /// address), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ServeError::Runtime(_) | ServeError::Signal(_) => 1,
            _ => 2,
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            ServeError::Signal(e) => write!(f, "cannot handle SIGHUP: {e}"),
            ServeError::Snapshot(e) => e.fmt(f),
            ServeError::State(e) => e.fmt(f),
            ServeError::Webhooks(e) => e.fmt(f),
            ServeError::WebhookCa { path, reason } => write!(
                f,
                "{}: {reason}; --webhook-ca takes a PEM file of CA certificates",
                path.display()
            ),
            ServeError::SignatureHeader { name } => write!(
                f,
                "`{name}` is not an HTTP header name; --signature-header takes one such as X-Scrydex-Signature"
            ),
            ServeError::ReservedSignatureHeader { name } => write!(
                f,
                "`{name}` is a header the webhook delivery or its connection sets itself; \
                 --signature-header takes a header of its own, such as X-Scrydex-Signature"
            ),
            ServeError::Setting { name, reason } => write!(f, "{name}: {reason}"),
            ServeError::Listen { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
        }
    }
}

// The message includes its cause's, so `source()` is `None`: a reporter that prints the
// chain of causes prints each message once.
impl std::error::Error for ServeError {}

/// How often a metered server checks the state for keys or teams added or imported.
const ACCOUNTS_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A file beside the snapshot folder `data`: `<data>.<suffix>` (so `data/` gets
/// `data.<suffix>`).
/// Refuses the settings that would mean nothing or lose data, before anything starts.
fn check_settings(config: &ServeConfig) -> Result<(), ServeError> {
    let zero = [
        ("--rate-window", config.rate_window),
        ("--usage-refresh", config.usage_refresh),
        ("--request-timeout", config.request_timeout),
        ("--header-timeout", config.header_read_timeout),
        ("the sync interval", config.sync_interval),
    ]
    .into_iter()
    .find(|(_, d)| d.is_zero());
    if let Some((name, _)) = zero {
        return Err(ServeError::Setting {
            name,
            reason: "must be longer than 0 (a zero timeout drops every connection, a zero \
                     interval spins)",
        });
    }
    // An open server charges nothing, and keeps a state only for the webhook outbox.
    if config.open && config.state.is_some() && config.webhooks.is_none() {
        return Err(ServeError::Setting {
            name: "--state",
            reason: "an open server (--open) keeps no state but the webhook outbox, and \
                     has no --webhooks: drop --state, or --open",
        });
    }
    let postgres = matches!(config.state, Some(StateUrl::Postgres(_)));
    if config.spool.is_some() && !postgres {
        return Err(ServeError::Setting {
            name: "--spool",
            reason: "it is where PostgreSQL state spools charges while the database is \
                     unreachable; with SQLite state (the default) the charges are in the \
                     SQLite file itself: drop --spool, or give --state postgres://...",
        });
    }
    Ok(())
}

fn beside(data: &Path, suffix: &str) -> PathBuf {
    match default_state(data) {
        StateUrl::Sqlite(path) => path.with_extension("").with_extension(suffix),
        StateUrl::Postgres(_) => PathBuf::from(format!("data.{suffix}")),
    }
}

/// Loads the snapshot, opens the state and the accounts, then serves until SIGINT or
/// SIGTERM: in-flight requests finish (their charges are committed before their answers
/// leave).
///
/// # Errors
///
/// A snapshot, state, webhooks file or CA file that cannot be loaded, or an address that
/// cannot be bound: a [`ServeError`] naming the culprit.
pub fn run(config: ServeConfig) -> Result<(), ServeError> {
    check_settings(&config)?;
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
    let signature_header = reqwest::header::HeaderName::from_bytes(
        config.signature_header.as_bytes(),
    )
    .map_err(|_| ServeError::SignatureHeader {
        name: config.signature_header.clone(),
    })?;
    if RESERVED_HEADERS.contains(&signature_header.as_str()) {
        return Err(ServeError::ReservedSignatureHeader {
            name: config.signature_header.clone(),
        });
    }
    // An address without a port is refused before the snapshot loads (a name is resolved
    // only when bound).
    let port = config
        .addr
        .rsplit_once(':')
        .map(|(host, port)| (host, port.parse::<u16>()));
    let host_ok = |host: &str| {
        // An IPv6 address is in brackets: a `:` elsewhere means the port is missing.
        !host.is_empty() && (!host.contains(':') || (host.starts_with('[') && host.ends_with(']')))
    };
    if !matches!(port, Some((host, Ok(_))) if host_ok(host)) {
        return Err(ServeError::Listen {
            addr: config.addr.clone(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "--addr takes HOST:PORT (`127.0.0.1:8080`, `[::1]:8080`, `localhost:0`)",
            ),
        });
    }
    // Taken before loading: a change made while the snapshot loads is seen by the watcher.
    let stamp = reload::folder_stamp(&config.data);
    let options = OpenOptions::new().store(config.store);
    let engine = Engine::open_with(&config.data, &options, loading_progress())
        .map_err(ServeError::Snapshot)?;
    // The files the configuration names are read before the state is opened, so that a
    // bad one stops the start before anything is written.
    let webhooks = match &config.webhooks {
        Some(path) => {
            let webhooks = webhooks::Webhooks::read(path).map_err(ServeError::Webhooks)?;
            let roots = match &config.webhook_ca {
                Some(ca) => private_roots(ca)?,
                None => Vec::new(),
            };
            log::event(
                "webhooks",
                &format!(
                    "{} subscriptions from {}; outbox in the state",
                    webhooks.subscriptions.len(),
                    path.display(),
                ),
            );
            Some((webhooks, roots))
        }
        None => None,
    };
    // The address is bound before the state is opened: an address in use stops the start
    // before a state is made. Connections wait in the listen queue until serving starts.
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(config.addr.as_str()))
        .map_err(|source| ServeError::Listen {
            addr: config.addr.clone(),
            source,
        })?;
    let url = config
        .state
        .clone()
        .unwrap_or_else(|| default_state(&config.data));
    // An open server without webhooks keeps no state: nothing is charged or delivered.
    let state = if config.open && config.webhooks.is_none() {
        None
    } else {
        Some(Arc::new(
            runtime
                .block_on(State::open(&url))
                .map_err(ServeError::State)?,
        ))
    };
    // Held until the server stops: one server per SQLite state.
    let _server_lock = match state.as_deref() {
        Some(State::Sqlite(sqlite)) => Some(sqlite.lock_for_server().map_err(ServeError::State)?),
        _ => None,
    };
    let (cards, catalogs) = (
        engine.catalogs().map(|c| c.cards().len()).sum::<usize>(),
        engine.catalogs().count(),
    );
    let service = if config.open {
        log::event(
            "open_mode",
            "--open: every request is served without credentials, limits or credits; for local use only",
        );
        Service::open(engine)
    } else {
        let spool = config
            .spool
            .clone()
            .unwrap_or_else(|| beside(&config.data, "spool.db"));
        let state = state.clone().expect("a metered server has a state");
        let service = runtime
            .block_on(Service::with_state(
                engine,
                state,
                config.rate_limit,
                config.rate_window,
                Some(&spool),
            ))
            .map_err(ServeError::State)?;
        if service.teams() == 0 {
            log::event(
                "accounts",
                &format!("no teams in {url}: every request is answered 401 until a key is added with `cardex accounts add-key --state {url} --team TEAM` (picked up within a second)"),
            );
        }
        service
    };
    let described = match &state {
        Some(state) => format!(
            "state {url} ({}, schema version {})",
            state.engine(),
            runtime.block_on(state.schema_version()).unwrap_or(0)
        ),
        None => "no state".to_string(),
    };
    log::event(
        "ready",
        &format!(
            "{cards} cards in {catalogs} catalogs from {} ({} store); {described}; {} teams",
            config.data.display(),
            config.store.as_str(),
            service.teams(),
        ),
    );
    let service = service.with_v2(&config.v2_catalog, config.v2_anonymous_per_minute);
    // The /v2 records, rendered before the first request (and again by the first request
    // after a reload).
    let engine = service.engine().current();
    if service.render_v2_view(&engine).is_some() {
        log::event(
            "v2",
            &format!("/v2 serves catalog {} (English cards)", config.v2_catalog),
        );
    } else {
        let names: Vec<&str> = engine.catalogs().map(|c| c.name()).collect();
        tracing::warn!(
            event = "v2",
            "/v2 answers 404 until a snapshot has the catalog {} (--v2-catalog); this one has {}",
            config.v2_catalog,
            names.join(", ")
        );
    }
    drop(engine);
    if let Some(after_load) = config.after_load {
        after_load();
    }
    let service = Arc::new(service);
    let webhooks = webhooks.map(|(hooks, roots)| (hooks, roots, signature_header));
    runtime.block_on(serve(
        listener, service, state, config, webhooks, stamp, hangup, stopping,
    ))
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    state: Option<Arc<State>>,
    config: ServeConfig,
    webhooks: Option<(
        webhooks::Webhooks,
        Vec<reqwest::Certificate>,
        reqwest::header::HeaderName,
    )>,
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
    let local = listener.local_addr().map_err(|source| ServeError::Listen {
        addr: config.addr.clone(),
        source,
    })?;
    let dispatcher = match webhooks {
        Some((webhooks, roots, signature_header)) => {
            let state = state.expect("a server with webhooks has a state");
            let dispatcher = webhooks::Dispatcher::start(webhooks, state, &roots, signature_header)
                .await
                .map_err(ServeError::State)?;
            reload::catch_up(&service, &dispatcher)
                .await
                .map_err(ServeError::State)?;
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
        config.after_load,
    ));
    log::event("listening", &format!("http://{local}"));
    // The usage board is taken at start unless it is younger than the interval (another
    // replica, or the last run, took it), then once it is older than the interval, looked
    // at every quarter interval: figures are 1 to 1.25 intervals apart (20 to 25 minutes
    // by default, as the service refreshes them every 20 to 30).
    service.refresh_usage(config.usage_refresh).await;
    let background = {
        let service = service.clone();
        tokio::spawn(async move {
            let mut sync = tokio::time::interval(config.sync_interval);
            let mut refresh = tokio::time::interval(config.usage_refresh / 4);
            refresh.tick().await;
            let mut accounts = tokio::time::interval(ACCOUNTS_CHECK);
            accounts.tick().await;
            // A failing accounts check is logged once, not every second of an outage.
            let mut accounts_failing = false;
            loop {
                tokio::select! {
                    _ = accounts.tick() => match service.refresh_accounts().await {
                        Ok(changed) => {
                            if std::mem::take(&mut accounts_failing) {
                                log::event("accounts", "the accounts can be read again");
                            }
                            if let Some(teams) = changed {
                                log::event(
                                    "accounts",
                                    &format!("keys or teams changed in the state: {teams} teams now"),
                                );
                            }
                        }
                        Err(e) => {
                            if !std::mem::replace(&mut accounts_failing, true) {
                                log::event(
                                    "state_error",
                                    &format!("{e}; the keys and teams read last stay in use, and the accounts are read again every second (said once it works)"),
                                );
                            }
                        }
                    },
                    _ = sync.tick() => {
                        service.tick().await;
                    }
                    _ = refresh.tick() => service.refresh_usage(config.usage_refresh).await,
                }
            }
        })
    };
    let app = router(
        service.clone(),
        config.request_timeout,
        &config.cors_origins,
    );
    let connections = serve_connections(listener, app, &config, shutdown).await;
    background.abort();
    reloader.abort();
    service.tick().await;
    log::event(
        "stopped",
        &format!(
            "{} in-flight connections {}",
            connections.in_flight,
            if connections.cut_off == 0 {
                "finished".to_string()
            } else {
                format!(
                    "ran past the {} s grace period and were cut off",
                    config.shutdown_grace.as_secs()
                )
            },
        ),
    );
    Ok(())
}

/// What the load reports while the server starts: a `loading` line with the files and
/// cards read at most every half second, one when indexing starts, and one when
/// compressing starts.
fn loading_progress() -> impl Fn(crate::LoadProgress) + Sync {
    let last = std::sync::Mutex::new(std::time::Instant::now());
    move |p: crate::LoadProgress| {
        if !p.indexing && !p.compressing {
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < std::time::Duration::from_millis(500) {
                return;
            }
            *last = std::time::Instant::now();
        }
        tracing::info!(
            event = "loading",
            files = p.files,
            files_read = p.files_read,
            cards_read = p.cards_read,
            "{}/{} files read, {} cards{}",
            p.files_read,
            p.files,
            p.cards_read,
            if p.indexing {
                "; indexing"
            } else if p.compressing {
                "; compressing"
            } else {
                ""
            }
        );
    }
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
    // PEM decodes without reading the certificates: TLS reads them when a client is built,
    // so a client is built here, before the state is opened, as the dispatcher will.
    let mut client = reqwest::Client::builder();
    for root in &roots {
        client = client.add_root_certificate(root.clone());
    }
    if let Err(e) = client.build() {
        let causes = super::state::causes(&e);
        return Err(bad(format!("a certificate in it cannot be used{causes}")));
    }
    Ok(roots)
}
