//! The router: every route of [`ROUTES`] to its handler, the metering layer in front of
//! the metered ones, and around them all the 404 and 405 bodies, gzip when the client
//! accepts it, the size limits, the request timeout, the log line, and the CORS headers
//! and preflight answers for browsers ([`Cors`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Version};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, MethodRouter};
use axum::{Extension, Router};
use serde_json::json;
use tracing::Instrument;

use super::accounts::{self, Endpoint};
use super::config::CorsOrigins;
use super::cors::Cors;
use super::errors::{error_response, json_response, ErrorMessage};
use super::handlers::{self, PathParams};
use super::log;
use super::metering;
use super::service::{Admitted, Service};
use super::v2::{self, V2_ROUTES};

/// The longest request URI accepted (bytes); longer ones get `414`.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes (names and values) accepted; more get `431`.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Every route of the service, as axum path patterns, with the endpoint it serves
/// (`None`: no credentials needed). The OpenAPI document has these paths, each catalog
/// route once per loaded catalog.
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

/// The router of the service: every route of [`ROUTES`], the 404 and 405 bodies, gzip when
/// the client accepts it, the size limits, a timeout and the request log.
pub fn router(service: Arc<Service>, timeout: Duration, cors_origins: &CorsOrigins) -> Router {
    let mut router = Router::new();
    for (path, endpoint) in ROUTES {
        let route = match endpoint {
            Some(endpoint) => metered(endpoint).route_layer(middleware::from_fn_with_state(
                (service.clone(), endpoint),
                metering::meter,
            )),
            None if path == "/openapi.json" => {
                get(|State(service): State<Arc<Service>>| async move {
                    json_response(StatusCode::OK, service.openapi().await.as_bytes().to_vec())
                })
            }
            None => get(|| async { json_response(StatusCode::OK, r#"{"status":"ok"}"#.into()) }),
        };
        router = router.route(path, route);
    }
    for (path, route) in V2_ROUTES {
        let answer = get(
            move |State(service): State<Arc<Service>>,
                  path: PathParams,
                  RawQuery(query): RawQuery| async move {
                let Ok(Path(params)) = path else {
                    return handlers::invalid_path();
                };
                let id = params.into_iter().find(|(k, _)| k == "id").map(|(_, v)| v);
                let name = service.v2_catalog();
                let view = match service.v2_view().await {
                    Ok(view) => view,
                    Err(why) => {
                        log::event("panic", &why);
                        return error_response(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "internal_error",
                            "the server failed on this request; it has been logged".into(),
                            json!({}),
                        );
                    }
                };
                let catalog = view
                    .as_ref()
                    .and_then(|(engine, view)| Some((engine.catalog(name)?, &**view)));
                v2::answer(catalog, name, route, id.as_deref(), query.as_deref())
            },
        )
        .route_layer(middleware::from_fn_with_state(
            (service.clone(), route),
            metering::meter_v2,
        ))
        // The route's errors, metering's included, in v2's shape inside the compression
        // layer, so that they are compressed as every answer is.
        .route_layer(middleware::from_fn(
            |request: Request, next: Next| async move { in_v2_shape(next.run(request).await) },
        ));
        router = router.route(path, answer);
    }
    with_operations(router, timeout, Arc::new(Cors::new(cors_origins))).with_state(service)
}

/// The handler of a metered endpoint.
fn metered(endpoint: Endpoint) -> MethodRouter<Arc<Service>> {
    match endpoint {
        Endpoint::Cards
        | Endpoint::Expansions
        | Endpoint::ExpansionCards
        | Endpoint::Card
        | Endpoint::Expansion => {
            let handler = match endpoint {
                Endpoint::Card | Endpoint::Expansion => handlers::item,
                _ => handlers::list,
            };
            get(
                move |State(service): State<Arc<Service>>,
                      path: PathParams,
                      RawQuery(query): RawQuery| async move {
                    handler(
                        &service.engine().current(),
                        endpoint,
                        path,
                        query.as_deref(),
                    )
                },
            )
        }
        Endpoint::Usage => get(
            |State(service): State<Arc<Service>>,
             team: Option<Extension<Admitted>>,
             RawQuery(query): RawQuery| async move {
                handlers::usage(&service, team.map(|Extension(t)| t), query.as_deref()).await
            },
        ),
    }
}

/// Around `routes`: the 404 and 405 bodies, gzip, the size limits, the timeout, the
/// request log and CORS (one function, so that the tests can put them around a route of
/// their own).
fn with_operations<S: Clone + Send + Sync + 'static>(
    routes: Router<S>,
    timeout: Duration,
    cors: Arc<Cors>,
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
        // A panic anywhere inside (a bug: no input is meant to cause one), metering
        // included, becomes a 500 with the error body, and the log line says so.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            internal_error,
        ))
        .layer(tower_http::compression::CompressionLayer::new())
        .layer(middleware::from_fn(move |request, next| {
            guard(request, next, timeout, Arc::clone(&cors))
        }))
}

/// The answer to a request whose handling panicked: `500 internal_error` with the error
/// body, and a `panic` log event. Every lock the handlers share recovers from poisoning,
/// so one bad request takes nothing else down.
fn internal_error(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
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

/// Size limits, the timeout, the log line and CORS around every request. A browser's
/// preflight is answered first, unlogged: it asks nothing of the service.
async fn guard(mut request: Request, next: Next, timeout: Duration, cors: Arc<Cors>) -> Response {
    if let Some(preflight) = cors.preflight(&request) {
        return preflight;
    }
    // An HTTP/1.0 client that keeps its connection finds where each answer ends by its
    // length, and HTTP/1.0 has no chunks: a compressed answer (whose length is known only
    // once it is sent) would end by closing the connection its head says is kept. Such a
    // client gets its answers uncompressed, each with its length.
    if request.version() == Version::HTTP_10 && keeps_alive(request.headers()) {
        request.headers_mut().remove(header::ACCEPT_ENCODING);
    }
    let origin = cors.origin_of(request.headers());
    let started = Instant::now();
    // The request's span, when it is handled (not refused for its size).
    let mut handled: Option<tracing::Span> = None;
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
        let span = log::request_span(&method, &path, team.as_deref());
        handled = Some(span.clone());
        let under_way = metering::ChargeUnderWay::default();
        request.extensions_mut().insert(under_way.clone());
        let handling = next.run(request).instrument(span);
        tokio::pin!(handling);
        match tokio::time::timeout(timeout, &mut handling).await {
            Ok(response) => response,
            // A charge under way is finished and its answer served: answering 503 now
            // would leave a charge for an answer the client never got.
            Err(_) if under_way.begun() => handling.await,
            Err(_) => error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                format!("the request took longer than {} ms", timeout.as_millis()),
                json!({}),
            ),
        }
    };
    log::request(
        handled.as_ref(),
        &method,
        &path,
        response.status().as_u16(),
        team.as_deref(),
        response
            .extensions()
            .get::<log::Outcome>()
            .cloned()
            .unwrap_or_default(),
        started.elapsed(),
    );
    // What the routes did not shape on `/v2`: the guard's own refusals (sizes, the
    // timeout), an unknown path's 404, a 405, a panic's 500.
    let mut response = if is_v2_path(&path) {
        in_v2_shape(response)
    } else {
        response
    };
    cors.answer(origin.as_ref(), &mut response);
    response
}

/// Whether `Connection` names `keep-alive` (an HTTP/1.0 client's request to keep it).
fn keeps_alive(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value
                .split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("keep-alive"))
        })
    })
}

/// Whether `path` is on the `/v2` surface: `/v2/v1/...` is the `/v1` surface of a catalog
/// named `v2` (v2 has no such paths).
fn is_v2_path(path: &str) -> bool {
    (path == "/v2" || path.starts_with("/v2/")) && path != "/v2/v1" && !path.starts_with("/v2/v1/")
}

/// An error answer on `/v2` in v2's shape, `{"error": {"message", "code"}}`, with its
/// status and headers (`Retry-After`, `Allow`); other answers as they are.
fn in_v2_shape(mut response: Response) -> Response {
    let Some(ErrorMessage(message)) = response.extensions_mut().remove::<ErrorMessage>() else {
        return response;
    };
    let body = v2::error_body(response.status(), &message);
    // The new body is not compressed (a body the guard shapes may have been) and has a
    // length of its own.
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_ENCODING);
    headers.remove(header::CONTENT_LENGTH);
    *response.body_mut() = axum::body::Body::from(body);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic in a handler, or in a layer in front of it (as metering is), becomes a 500
    /// with the error body; other routes go on answering.
    #[test]
    fn a_panic_anywhere_becomes_a_500_with_the_error_body() {
        let runtime = crate::server::testing::runtime();
        runtime.block_on(async {
            async fn panicking_layer(_: Request, _: Next) -> Response {
                panic!("a bug in a layer")
            }
            let routes: Router<()> = Router::new()
                .route(
                    "/handler",
                    get(|| async {
                        panic!("a bug");
                        #[allow(unreachable_code)]
                        "unreachable"
                    }),
                )
                .route(
                    "/layer",
                    get(|| async { "unreachable" })
                        .route_layer(middleware::from_fn(panicking_layer)),
                )
                .route("/fine", get(|| async { "ok" }));
            let app = with_operations(routes, Duration::from_secs(5), Arc::new(Cors::Off));
            let addr = crate::server::testing::serve(app).await;
            let client = reqwest::Client::new();
            for path in ["/handler", "/layer"] {
                let r = client
                    .get(format!("http://{addr}{path}"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 500, "{path}");
                let body: serde_json::Value = r.json().await.unwrap();
                assert_eq!(body["error"]["status"], 500);
                assert_eq!(body["error"]["code"], "internal_error");
            }
            let fine = client
                .get(format!("http://{addr}/fine"))
                .send()
                .await
                .unwrap();
            assert_eq!(fine.status(), 200);
        });
    }

    /// A request whose charge is under way when the timeout passes is served and charged:
    /// the timeout never answers 503 for a request it charged. Another connection holds
    /// SQLite's write lock past the timeout, so the charge waits for it.
    #[test]
    fn a_charge_under_way_at_the_timeout_is_finished_and_its_answer_served() {
        use crate::server::accounts::{Accounts, Plan};
        use crate::server::state::{State, StateUrl};
        let runtime = crate::server::testing::runtime();
        let dir = crate::server::testing::scratch("router", "charge_at_timeout");
        let path = dir.join("state.db");
        runtime.block_on(async {
            let mut accounts = Accounts::default();
            let plan = Plan {
                total_credits: 100,
                overage_credit_rate: 0.0,
            };
            let key = accounts.add_key("acme", plan, 0).unwrap();
            let cost = accounts.credit_costs.of(Endpoint::Cards);
            let state = State::open(&StateUrl::Sqlite(path.clone())).await.unwrap();
            state.import(&accounts).await.unwrap();
            let state = Arc::new(state);
            let engine = crate::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data")).unwrap();
            let service =
                Service::with_state(engine, state.clone(), 100, Duration::from_secs(1), None)
                    .await
                    .unwrap();
            let app = router(
                Arc::new(service),
                Duration::from_millis(300),
                &CorsOrigins::Any,
            );
            let addr = crate::server::testing::serve(app).await;
            let other = rusqlite::Connection::open(&path).unwrap();
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
            let request = tokio::spawn(
                reqwest::Client::new()
                    .get(format!("http://{addr}/pokemon/v1/cards?page_size=1"))
                    .header("X-Api-Key", key.as_str())
                    .header("X-Team-ID", "acme")
                    .send(),
            );
            tokio::time::sleep(Duration::from_millis(1000)).await;
            other.execute_batch("COMMIT").unwrap();
            let status = request.await.unwrap().unwrap().status();
            // A second request: its charge commits after the first's (the writer commits
            // one group at a time), so once it is answered the first's is in.
            let second = reqwest::Client::new()
                .get(format!("http://{addr}/pokemon/v1/cards?page_size=1"))
                .header("X-Api-Key", key.as_str())
                .header("X-Team-ID", "acme")
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(second, StatusCode::OK);
            let used = match &*state {
                State::Sqlite(sqlite) => sqlite.used("acme").unwrap(),
                State::Postgres(_) => unreachable!("a SQLite state"),
            };
            // Charged exactly when served. (The search is answered within the guard's first
            // poll, so its charge has begun when the timeout passes; should it not have,
            // the 503 costs nothing.)
            let expected = if status.is_success() { 2 * cost } else { cost };
            assert_eq!(used, expected, "{status}");
            assert!(
                status == StatusCode::OK || status == StatusCode::SERVICE_UNAVAILABLE,
                "{status}"
            );
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The timeout of [`with_operations`] answers 503 `timeout` for a handler that awaits
    /// too long, and lets a quick one through.
    #[test]
    fn a_slow_request_gets_503_timeout() {
        let runtime = crate::server::testing::runtime();
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
            let app = with_operations(routes, Duration::from_millis(100), Arc::new(Cors::Off));
            let addr = crate::server::testing::serve(app).await;
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
