//! The HTTP service (feature `server`): every endpoint of contract section 4 over an
//! [`Engine`], with API keys, the per-team rate limit, credits and usage (spec 4–9).
//!
//! A thin frontend: the engine answers, this module only maps HTTP to engine requests and
//! engine results (pre-rendered JSON, typed errors) to responses. Per request, in order:
//!
//! 1. the path picks an endpoint, or `404 not_found`; a method other than GET (or HEAD) is
//!    `405 method_not_allowed`; an over-long URI is `414`, over-large headers `431`;
//! 2. with accounts, `X-Api-Key` and `X-Team-ID` must belong together
//!    (`401 missing_credentials` / `invalid_credentials`), see [`accounts`];
//! 3. the team's rate limit ([`limit`]): over it, `429 rate_limited` with `Retry-After`,
//!    and the request costs nothing;
//! 4. the engine answers; a successful (2xx) answer is charged to the team's credits in the
//!    [`ledger`] before it leaves; errors cost nothing;
//! 5. one structured log line (logfmt) per request; keys never appear in logs.
//!
//! SERVER.md in the repository documents the accounts file, the credit table, the usage
//! figures and every decision the spec leaves open.

pub mod accounts;
mod journal;
pub mod ledger;
pub mod limit;
mod log;
mod reload;
pub mod webhooks;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use crate::live::LiveEngine;
use crate::{Engine, Error, ItemRequest, SearchRequest};
use accounts::{Accounts, Credentials, Endpoint, KeyRing, Team};
use ledger::Ledger;
use limit::RateLimiter;

/// The OpenAPI 3.1 document of the service, served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// The longest request URI accepted (bytes); longer ones get `414`.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes (names and values) accepted; more get `431`.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Every route of the service, as axum path patterns, with the endpoint it serves
/// (`None`: no credentials needed). The OpenAPI document lists exactly these paths.
pub const ROUTES: [(&str, Option<Endpoint>); 10] = [
    ("/{catalog}/v1/cards", Some(Endpoint::Cards)),
    ("/{catalog}/v1/{lang}/cards", Some(Endpoint::Cards)),
    ("/{catalog}/v1/cards/{id}", Some(Endpoint::Card)),
    (
        "/{catalog}/v1/expansions/{id}/cards",
        Some(Endpoint::ExpansionCards),
    ),
    ("/{catalog}/v1/expansions", Some(Endpoint::Expansions)),
    (
        "/{catalog}/v1/{lang}/expansions",
        Some(Endpoint::Expansions),
    ),
    ("/{catalog}/v1/expansions/{id}", Some(Endpoint::Expansion)),
    ("/account/v1/usage", Some(Endpoint::Usage)),
    ("/healthz", None),
    ("/openapi.json", None),
];

/// The accounts side of a server: teams, keys, limits, credits and usage.
struct Metered {
    teams: Vec<Team>,
    keys: KeyRing,
    limiter: RateLimiter,
    ledger: Arc<dyn Ledger>,
    costs: accounts::CreditCosts,
    usage: UsageBoard,
}

/// Per team, the credits used as of the last refresh (spec 4.2: usage figures lag).
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
    metered: Option<Metered>,
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
}

/// The router of the service: every route of [`ROUTES`], the 404 and 405 bodies, gzip when
/// the client accepts it, the size limits, a timeout and the request log.
pub fn router(service: Arc<Service>, timeout: Duration) -> Router {
    let mut router = Router::new();
    for (path, endpoint) in ROUTES {
        let handler = match (path, endpoint) {
            ("/healthz", _) => {
                get(|| async { json_response(StatusCode::OK, r#"{"status":"ok"}"#.into()) })
            }
            ("/openapi.json", _) => get(|| async { json_response(StatusCode::OK, OPENAPI.into()) }),
            (_, Some(endpoint)) => get(
                move |State(service): State<Arc<Service>>,
                      path: Result<
                    Path<Vec<(String, String)>>,
                    axum::extract::rejection::PathRejection,
                >,
                      RawQuery(query): RawQuery,
                      headers: HeaderMap| async move {
                    let params = match path {
                        Ok(Path(params)) => params,
                        // The usage route has no parameters to extract.
                        Err(_) if endpoint == Endpoint::Usage => Vec::new(),
                        Err(_) => {
                            return error_response(
                                StatusCode::BAD_REQUEST,
                                "invalid_path",
                                "the path is not valid UTF-8 once percent-decoded".into(),
                                json!({}),
                            )
                        }
                    };
                    answer_or_internal_error(|| {
                        serve_endpoint(&service, endpoint, &params, query.as_deref(), &headers)
                    })
                },
            ),
            (_, None) => continue,
        };
        router = router.route(path, handler);
    }
    with_operations(router, timeout).with_state(service)
}

/// Around `routes`: the 404 and 405 bodies, gzip, the size limits, the timeout and the
/// request log (one function, so that the tests can put them around a route of their own).
fn with_operations<S: Clone + Send + Sync + 'static>(
    routes: Router<S>,
    timeout: Duration,
) -> Router<S> {
    routes
        .fallback(|| async {
            error_response(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such endpoint".into(),
                json!({}),
            )
        })
        .method_not_allowed_fallback(|method: Method| async move {
            let mut response = error_response(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("{method} is not allowed: every endpoint is GET"),
                json!({"allowed": ["GET", "HEAD"]}),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            response
        })
        .layer(tower_http::compression::CompressionLayer::new())
        .layer(middleware::from_fn(move |request, next| {
            guard(request, next, timeout)
        }))
}

/// Size limits, the timeout and the log line around every request.
async fn guard(request: Request, next: Next, timeout: Duration) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let uri = request.uri();
    let uri_len = uri.path_and_query().map_or(0, |pq| pq.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.scheme_str().map_or(0, str::len);
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    let team = request
        .headers()
        .get("x-team-id")
        .and_then(|v| v.to_str().ok())
        .filter(|t| accounts::valid_team_id(t))
        .map(str::to_string);
    let response = if uri_len > MAX_URI_BYTES {
        error_response(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("the request URI is {uri_len} bytes; the limit is {MAX_URI_BYTES}"),
            json!({"limit": MAX_URI_BYTES}),
        )
    } else if header_bytes > MAX_HEADER_BYTES {
        error_response(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "the request headers are {header_bytes} bytes; the limit is {MAX_HEADER_BYTES}"
            ),
            json!({"limit": MAX_HEADER_BYTES}),
        )
    } else {
        match tokio::time::timeout(timeout, next.run(request)).await {
            Ok(response) => response,
            Err(_) => error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                format!("the request took longer than {} ms", timeout.as_millis()),
                json!({}),
            ),
        }
    };
    log::request(
        &method,
        &path,
        response.status().as_u16(),
        team.as_deref(),
        started.elapsed(),
    );
    response
}

/// Runs `serve`, turning a panic (a bug: no input is meant to cause one) into
/// `500 internal_error` with the error body and a `panic` log event, so that one bad
/// request neither drops its connection unanswered nor takes anything else down. Every
/// lock the handlers share recovers from poisoning.
fn answer_or_internal_error(serve: impl FnOnce() -> Response) -> Response {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(serve)) {
        Ok(response) => response,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            log::event("panic", &what);
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the server failed on this request; it has been logged".into(),
                json!({}),
            )
        }
    }
}

/// Answers one endpoint: credentials, rate limit, the engine, the charge.
fn serve_endpoint(
    service: &Service,
    endpoint: Endpoint,
    params: &[(String, String)],
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let team = match &service.metered {
        None => None,
        Some(m) => {
            let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
            match m.keys.check(header("x-api-key"), header("x-team-id")) {
                Credentials::Valid(team) => {
                    if let Err(refused) = m.limiter.check(team) {
                        let secs = refused.retry_after_secs();
                        let mut response = error_response(
                            StatusCode::TOO_MANY_REQUESTS,
                            "rate_limited",
                            "more than 100 requests in one second for this team".into(),
                            json!({"limit": 100, "window_seconds": 1, "retry_after": secs}),
                        );
                        response
                            .headers_mut()
                            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                        return response;
                    }
                    Some((m, team))
                }
                Credentials::Missing => {
                    let present = |name: &str| headers.get(name).is_some_and(|v| !v.is_empty());
                    let missing: Vec<&str> = ["X-Api-Key", "X-Team-ID"]
                        .into_iter()
                        .filter(|name| !present(name))
                        .collect();
                    return error_response(
                        StatusCode::UNAUTHORIZED,
                        "missing_credentials",
                        format!(
                            "{} missing or empty: every request needs both X-Api-Key and X-Team-ID",
                            missing.join(" and ")
                        ),
                        json!({"missing": missing}),
                    );
                }
                Credentials::Invalid => {
                    return error_response(
                        StatusCode::UNAUTHORIZED,
                        "invalid_credentials",
                        "the API key is not one of this team's keys".into(),
                        json!({}),
                    )
                }
            }
        }
    };
    let pairs: Vec<(String, String)> = query
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let answer = match endpoint {
        Endpoint::Usage if !pairs.is_empty() => {
            let (name, value) = &pairs[0];
            Err(error_response(
                StatusCode::BAD_REQUEST,
                "unknown_parameter",
                format!("unknown parameter `{name}`; the usage endpoint takes none"),
                json!({"parameter": name, "value": value, "allowed": []}),
            ))
        }
        Endpoint::Usage => usage(service, team.map(|(_, t)| t)).ok_or_else(|| {
            error_response(
                StatusCode::NOT_FOUND,
                "not_found",
                "this server runs without accounts: there is no usage to report".into(),
                json!({}),
            )
        }),
        _ => answer(&service.engine.current(), endpoint, &param, &pairs)
            .map_err(|e| engine_error(&e)),
    };
    let body = match answer {
        Ok(body) => body,
        Err(response) => return response,
    };
    if let Some((m, t)) = team {
        if let Err(e) = m.ledger.charge(&m.teams[t].id, m.costs.of(endpoint)) {
            log::event("ledger_error", &e.to_string());
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "ledger_unavailable",
                "the request could not be metered; it was not served".into(),
                json!({}),
            );
        }
    }
    json_response(StatusCode::OK, body)
}

/// The engine's answer for a catalog endpoint, as response bytes.
fn answer<'p>(
    engine: &Engine,
    endpoint: Endpoint,
    param: &dyn Fn(&str) -> Option<&'p str>,
    pairs: &'p [(String, String)],
) -> Result<Vec<u8>, Error> {
    let catalog = engine.try_catalog(param("catalog").unwrap_or_default())?;
    let query = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let mut out = Vec::with_capacity(4096);
    match endpoint {
        Endpoint::Cards | Endpoint::Expansions | Endpoint::ExpansionCards => {
            let mut req = SearchRequest::from_params(query)?;
            if let Some(lang) = param("lang") {
                req = req.lang(lang);
            }
            let page = match endpoint {
                Endpoint::Cards => catalog.search(&req)?,
                Endpoint::Expansions => catalog.search_expansions(&req)?,
                _ => catalog.expansion_cards(param("id").unwrap_or_default(), &req)?,
            };
            page.write_to(&mut out).expect("writing to a Vec");
        }
        Endpoint::Card | Endpoint::Expansion => {
            let req = ItemRequest::from_params(query)?;
            let id = param("id").unwrap_or_default();
            let item = match endpoint {
                Endpoint::Card => catalog.card(id, &req)?,
                _ => catalog.expansion(id, &req)?,
            };
            item.write_to(&mut out).expect("writing to a Vec");
        }
        Endpoint::Usage => unreachable!("usage is answered by the service"),
    }
    Ok(out)
}

/// The body of `/account/v1/usage` (spec 2.5), fields in the spec's order.
#[derive(serde::Serialize)]
struct Usage {
    total_credits: u64,
    remaining_credits: u64,
    used_credits: u64,
    overage_credit_rate: f64,
    overage_credits: u64,
    updated_at: String,
}

/// `/account/v1/usage`: the team's figures as of the last refresh (none without accounts).
fn usage(service: &Service, team: Option<usize>) -> Option<Vec<u8>> {
    let (Some(m), Some(t)) = (&service.metered, team) else {
        return None;
    };
    let board = m.usage.refreshed.read().unwrap_or_else(|e| e.into_inner());
    let used = board.0.get(t).copied().unwrap_or(0);
    let plan = m.teams[t].plan;
    let body = Usage {
        total_credits: plan.total_credits,
        remaining_credits: plan.total_credits.saturating_sub(used),
        used_credits: used,
        overage_credit_rate: plan.overage_credit_rate,
        overage_credits: used.saturating_sub(plan.total_credits),
        updated_at: log::rfc3339(board.1),
    };
    let body = serde_json::to_string(&body).expect("usage serialises");
    Some(body.to_string().into_bytes())
}

fn engine_error(error: &Error) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, error.to_body().to_string().into_bytes())
}

/// An error body of contract section 4.
fn error_response(
    status: StatusCode,
    code: &str,
    message: String,
    details: serde_json::Value,
) -> Response {
    let body = json!({"error": {
        "status": status.as_u16(),
        "code": code,
        "message": message,
        "details": details,
    }});
    json_response(status, body.to_string().into_bytes())
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, Body::from(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// How `cardex serve` runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The snapshot folder.
    pub data: PathBuf,
    /// Where to listen: `HOST:PORT` (a name is resolved; port 0 picks a free port).
    pub addr: String,
    /// The accounts file; without it the server runs open (no credentials, no metering).
    pub accounts: Option<PathBuf>,
    /// The credit ledger; by default the accounts file's path with extension `ledger`.
    pub ledger: Option<PathBuf>,
    /// How often usage figures refresh (spec 4.2: 20 to 30 minutes).
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
            accounts: None,
            ledger: None,
            usage_refresh: Duration::from_secs(20 * 60),
            request_timeout: Duration::from_secs(10),
            sync_interval: Duration::from_millis(100),
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            webhooks: None,
            outbox: None,
            watch_interval: Some(Duration::from_secs(1)),
        }
    }
}

/// Loads the snapshot and the accounts, then serves until SIGINT or SIGTERM: in-flight
/// requests finish, and the ledger is synced before it returns.
///
/// # Errors
///
/// A snapshot, accounts file or ledger that cannot be loaded, or an address that cannot
/// be bound, as a message naming the culprit.
pub fn run(config: ServeConfig) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // First of all: from here on SIGHUP means "reload" (once serving), not the default
    // "terminate", however long the load below takes.
    let hangup = {
        let _runtime = runtime.enter();
        reload::hangup_signal().map_err(|e| format!("cannot handle SIGHUP: {e}"))?
    };
    // Taken before loading: a change made while the snapshot loads is seen by the watcher.
    let stamp = reload::folder_stamp(&config.data);
    let engine = Engine::open(&config.data).map_err(|e| e.to_string())?;
    let service = match &config.accounts {
        None => {
            log::event(
                "open_mode",
                "no --accounts: every request is served without credentials, limits or credits; for local use only",
            );
            Service::open(engine)
        }
        Some(path) => {
            let accounts = Accounts::read(path).map_err(|e| e.to_string())?;
            let ledger_path = config
                .ledger
                .clone()
                .unwrap_or_else(|| path.with_extension("ledger"));
            let ledger = ledger::FileLedger::open(&ledger_path)
                .map_err(|e| format!("{}: {e}", ledger_path.display()))?;
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
            let webhooks = webhooks::Webhooks::read(path)?;
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
            Some((webhooks, outbox))
        }
        None => None,
    };
    let service = Arc::new(service);
    runtime.block_on(serve(service, config, webhooks, stamp, hangup))
}

async fn serve(
    service: Arc<Service>,
    config: ServeConfig,
    webhooks: Option<(webhooks::Webhooks, PathBuf)>,
    stamp: reload::Stamp,
    hangup: reload::Hangup,
) -> Result<(), String> {
    let dispatcher = match webhooks {
        Some((webhooks, outbox)) => {
            let dispatcher = webhooks::Dispatcher::start(webhooks, &outbox)
                .map_err(|e| format!("{}: {e}", outbox.display()))?;
            reload::catch_up(&service, &dispatcher)?;
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
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
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
    let connections = serve_connections(listener, app, &config, shutdown_signal()).await;
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
    synced.map_err(|e| format!("ledger: {e}"))
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

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_500_with_the_error_body() {
        let response = answer_or_internal_error(|| panic!("a bug"));
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = runtime
            .block_on(axum::body::to_bytes(response.into_body(), 1 << 16))
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["status"], 500);
        assert_eq!(body["error"]["code"], "internal_error");
        // And an answer that does not panic passes through untouched.
        let fine = answer_or_internal_error(|| json_response(StatusCode::OK, b"{}".to_vec()));
        assert_eq!(fine.status(), StatusCode::OK);
    }

    /// The timeout of [`with_operations`] answers 503 `timeout` for a handler that awaits
    /// too long, and lets a quick one through.
    #[test]
    fn a_slow_request_gets_503_timeout() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let routes: Router<()> = Router::new()
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        "late"
                    }),
                )
                .route("/quick", get(|| async { "ok" }));
            let app = with_operations(routes, Duration::from_millis(100));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await });
            let client = reqwest::Client::new();
            let started = Instant::now();
            let slow = client
                .get(format!("http://{addr}/slow"))
                .send()
                .await
                .unwrap();
            assert!(started.elapsed() < Duration::from_secs(4));
            assert_eq!(slow.status(), 503);
            let body: serde_json::Value = slow.json().await.unwrap();
            assert_eq!(body["error"]["code"], "timeout");
            assert_eq!(body["error"]["status"], 503);
            let quick = client
                .get(format!("http://{addr}/quick"))
                .send()
                .await
                .unwrap();
            assert_eq!(quick.status(), 200);
        });
    }
}
