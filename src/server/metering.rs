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

/// The layer's work for one request to `endpoint` (see the module docs); the response
/// carries the endpoint and the credits charged, for the request's log line.
pub(super) async fn meter(
    State((service, endpoint)): State<(Arc<Service>, Endpoint)>,
    request: Request,
    next: Next,
) -> Response {
    let (mut response, credits) = metered(&service, endpoint, request, next).await;
    response.extensions_mut().insert(log::Outcome {
        endpoint: Some(endpoint.name()),
        credits,
    });
    response
}

/// [`meter`]'s answer and the credits it charged.
async fn metered(
    service: &Service,
    endpoint: Endpoint,
    mut request: Request,
    next: Next,
) -> (Response, u64) {
    let Some(m) = &service.metered else {
        return (next.run(request).await, 0);
    };
    // A path that is not UTF-8 once decoded is refused before anything is counted, as
    // the handler would refuse it.
    if !path_is_utf8(request.uri().path()) {
        return (invalid_path(), 0);
    }
    let headers = request.headers();
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    let roster = m.roster();
    let team = match roster.keys.check(header("x-api-key"), header("x-team-id")) {
        Credentials::Valid(team) => team,
        Credentials::Missing => {
            let present = |name: &str| headers.get(name).is_some_and(|v| !v.is_empty());
            let missing: Vec<&str> = ["X-Api-Key", "X-Team-ID"]
                .into_iter()
                .filter(|name| !present(name))
                .collect();
            let response = error_response(
                StatusCode::UNAUTHORIZED,
                "missing_credentials",
                format!(
                    "{} missing or empty: every request needs both X-Api-Key and X-Team-ID",
                    missing.join(" and ")
                ),
                json!({"missing": missing}),
            );
            return (response, 0);
        }
        Credentials::Invalid => {
            let response = error_response(
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
                "the API key is not one of this team's keys".into(),
                json!({}),
            );
            return (response, 0);
        }
    };
    let checked = match m.charging.before(team) {
        Ok(checked) => checked,
        Err(refused) => return (rate_limited(&m.charging, refused), 0),
    };
    request.extensions_mut().insert(Admitted(team));
    let response = next.run(request).await;
    let credits = if response.status().is_success() {
        roster.costs.of(endpoint)
    } else {
        0
    };
    match m
        .charging
        .after(checked, team, &roster.teams[team].id, credits)
        .await
    {
        Ok(()) => (response, credits),
        Err(NotCharged::Refused(refused)) => (rate_limited(&m.charging, refused), 0),
        Err(NotCharged::Unavailable(e)) => {
            log::event("state_error", &e.to_string());
            let response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "state_unavailable",
                "the request could not be metered; it was not served".into(),
                json!({}),
            );
            (response, 0)
        }
    }
}

/// `429 rate_limited`, with `Retry-After` in whole seconds.
fn rate_limited(charging: &Charging, refused: Refused) -> Response {
    let secs = refused.retry_after_secs();
    let (limit, window) = charging.limit();
    let mut response = error_response(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!(
            "more than {limit} requests in {} for this team",
            if window == std::time::Duration::from_secs(1) {
                "one second".to_string()
            } else {
                format!("{} ms", window.as_millis())
            }
        ),
        json!({"limit": limit, "window_seconds": window.as_secs_f64(), "retry_after": secs}),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}
