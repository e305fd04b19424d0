//! Authentication, the rate limit and charging, as one layer in front of every metered
//! endpoint's handler. Without accounts the layer lets every request through. With them,
//! in order: the path must be UTF-8 once percent-decoded (`400 invalid_path`, as without
//! accounts); `X-Api-Key` and `X-Team-ID` must belong together (`401 missing_credentials`
//! / `invalid_credentials`); the team's rate limit (`429 rate_limited` with `Retry-After`,
//! and the request costs nothing); then the handler answers, and a successful answer is
//! charged to the team's credits before it leaves (`503 state_unavailable`, unserved,
//! when the charge cannot be recorded). Errors cost nothing. With PostgreSQL state the
//! shared rate limit is decided with the charge, after the handler (see
//! [`super::charging`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::accounts::{Credentials, Endpoint};
use super::charging::{Charging, NotCharged};
use super::errors::error_response;
use super::handlers::{invalid_path, path_is_utf8};
use super::limit::Refused;
use super::log;
use super::service::{Admitted, Service};
use super::v2::V2Route;

/// The layer's work for one request to `endpoint` (see the module docs); the response
/// carries the endpoint and the credits charged, for the request's log line.
pub(super) async fn meter(
    State((service, endpoint)): State<(Arc<Service>, Endpoint)>,
    request: Request,
    next: Next,
) -> Response {
    let (mut response, credits, _) = metered(&service, endpoint, None, request, next).await;
    response.extensions_mut().insert(log::Outcome {
        endpoint: Some(endpoint.name()),
        credits,
        team: None,
    });
    response
}

/// The layer on a `/v2` route: as [`meter`], charged as the `/v1` endpoint the route
/// costs like, except that `X-Api-Key` alone names its team, and a request with no key
/// is served under the limit of its client address, free.
pub(super) async fn meter_v2(
    State((service, route)): State<(Arc<Service>, V2Route)>,
    request: Request,
    next: Next,
) -> Response {
    let (mut response, credits, team) =
        metered(&service, route.charged_as(), Some(route), request, next).await;
    response.extensions_mut().insert(log::Outcome {
        endpoint: Some(route.name()),
        credits,
        team,
    });
    response
}

/// Put in each request by the router's guard, and set by this layer as the request's
/// charge begins: from then on the request timeout lets the request finish, so that an
/// answer is charged exactly when it is served. (A charge is bounded by its own timeouts:
/// the SQLite writer's wait for the write lock, PostgreSQL's admission.)
#[derive(Debug, Clone, Default)]
pub(super) struct ChargeUnderWay(Arc<std::sync::atomic::AtomicBool>);

impl ChargeUnderWay {
    fn begin(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the request's charge has begun.
    pub(super) fn begun(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The client's address, put in each request by the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// [`meter`]'s answer, the credits it charged, and the team when the key alone named it
/// (`v2`, for a `/v2` route, without `X-Team-ID`), for the log line.
async fn metered(
    service: &Service,
    endpoint: Endpoint,
    v2: Option<V2Route>,
    mut request: Request,
    next: Next,
) -> (Response, u64, Option<Arc<str>>) {
    let Some(m) = &service.metered else {
        return (next.run(request).await, 0, None);
    };
    // A path that is not UTF-8 once decoded is refused before anything is counted, as
    // the handler would refuse it.
    if !path_is_utf8(request.uri().path()) {
        return (invalid_path(), 0, None);
    }
    let headers = request.headers();
    // A credential sent twice is ambiguous (which one names the team?): refused, as
    // neither is taken over the other. A keyless `/v2` request uses neither.
    let keyless_v2 = v2.is_some() && !headers.contains_key("x-api-key");
    if let Some(twice) = ["X-Api-Key", "X-Team-ID"]
        .into_iter()
        .find(|name| !keyless_v2 && headers.get_all(*name).iter().nth(1).is_some())
    {
        let response = error_response(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            format!("{twice} is sent more than once: send it once"),
            json!({"repeated": twice}),
        );
        return (response, 0, None);
    }
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    let roster = m.roster();
    let key = header("x-api-key").filter(|k| !k.is_empty());
    let named_team = header("x-team-id").filter(|t| !t.is_empty());
    let credentials = match (v2, key, named_team) {
        // A `/v2` request that names a team is checked as on `/v1`: without its key, 401.
        (Some(_), None, None) => return (anonymous(service, request, next).await, 0, None),
        (Some(_), Some(key), None) => roster.keys.owner(key),
        _ => roster.keys.check(header("x-api-key"), header("x-team-id")),
    };
    let team = match credentials {
        Credentials::Valid(team) => team,
        Credentials::Missing => {
            let present = |name: &str| headers.get(name).is_some_and(|v| !v.is_empty());
            let missing: Vec<&str> = ["X-Api-Key", "X-Team-ID"]
                .into_iter()
                .filter(|name| !present(name))
                .collect();
            let needs = if v2.is_some() {
                "a request that names its team needs its key too"
            } else {
                "every request needs both X-Api-Key and X-Team-ID"
            };
            let response = error_response(
                StatusCode::UNAUTHORIZED,
                "missing_credentials",
                format!("{} missing or empty: {needs}", missing.join(" and ")),
                json!({"missing": missing}),
            );
            return (response, 0, None);
        }
        Credentials::Invalid => {
            let response = error_response(
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
                if named_team.is_some() {
                    "the API key is not one of this team's keys".into()
                } else if v2.is_some() {
                    // An app moved from pokemontcg.io may still send that service's key.
                    let without = match service.v2.anonymous.limit().0 {
                        0 => String::new(),
                        limit => {
                            format!(", or none ({limit} requests a minute from each address)")
                        }
                    };
                    format!(
                        "the API key is not one of this server's keys (a pokemontcg.io key is not): send a key this server made{without}"
                    )
                } else {
                    "the API key is not known".into()
                },
                json!({}),
            );
            return (response, 0, None);
        }
    };
    let named_by_key = named_team.is_none().then(|| roster.ids[team].clone());
    let checked = match m.charging.before(team) {
        Ok(checked) => checked,
        Err(refused) => return (rate_limited(&m.charging, refused), 0, named_by_key),
    };
    request.extensions_mut().insert(Admitted(team));
    let under_way = request.extensions().get::<ChargeUnderWay>().cloned();
    let response = next.run(request).await;
    let credits = if response.status().is_success() {
        roster.costs.of(endpoint)
    } else {
        0
    };
    if let Some(under_way) = under_way {
        under_way.begin();
    }
    match m
        .charging
        .after(checked, team, &roster.ids[team], credits)
        .await
    {
        Ok(()) => (response, credits, named_by_key),
        Err(NotCharged::Refused(refused)) => (rate_limited(&m.charging, refused), 0, named_by_key),
        Err(NotCharged::Unavailable(e)) => {
            log::event("state_error", &e.to_string());
            let response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "state_unavailable",
                "the request could not be metered; it was not served".into(),
                json!({}),
            );
            (response, 0, named_by_key)
        }
    }
}

/// A `/v2` request without a key: served under its client address's limit, free.
async fn anonymous(service: &Service, request: Request, next: Next) -> Response {
    let address = request
        .extensions()
        .get::<ClientAddr>()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.0.ip());
    let limiter = &service.v2.anonymous;
    match limiter.check(address) {
        Ok(()) => next.run(request).await,
        Err(refused) => {
            let (limit, window) = limiter.limit();
            too_many(
                format!(
                    "more than {limit} requests in a minute from this address without an API key; send X-Api-Key for your team's limit"
                ),
                limit as u64,
                window,
                refused,
            )
        }
    }
}

/// `429 rate_limited`, with `Retry-After` in whole seconds.
fn rate_limited(charging: &Charging, refused: Refused) -> Response {
    let (limit, window) = charging.limit();
    too_many(
        format!(
            "more than {limit} requests in {} for this team",
            if window == std::time::Duration::from_secs(1) {
                "one second".to_string()
            } else {
                format!("{} ms", window.as_millis())
            }
        ),
        u64::from(limit),
        window,
        refused,
    )
}

/// A `429 rate_limited` saying `message`, with `Retry-After` in whole seconds.
fn too_many(
    message: String,
    limit: u64,
    window: std::time::Duration,
    refused: Refused,
) -> Response {
    let secs = refused.retry_after_secs();
    let mut response = error_response(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        message,
        json!({"limit": limit, "window_seconds": window.as_secs_f64(), "retry_after": secs}),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}
