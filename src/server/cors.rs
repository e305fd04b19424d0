//! CORS: the headers that let a web page's scripts read the service's answers, and the
//! answers to browsers' preflight requests, for the origins `--cors-origins` allows.
//!
//! Applied by the router's request guard, which every request passes through, as a few
//! header inserts on the answer (the values made once, when the router is built), rather
//! than as a layer of its own around every request: in the http bench, tower-http's
//! `CorsLayer` cost 7–12% of the search throughput, this nothing measurable.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::config::CorsOrigins;

/// How long a browser may keep a preflight's answer: a day.
const MAX_AGE: HeaderValue = HeaderValue::from_static("86400");
/// The methods a page may use: every endpoint is `GET` (and `HEAD`).
const METHODS: HeaderValue = HeaderValue::from_static("GET, HEAD");
/// The answer headers a page may read besides the simple ones: `Retry-After` of a 429,
/// `WWW-Authenticate` of a 401.
const EXPOSED: HeaderValue = HeaderValue::from_static("retry-after, www-authenticate");
const ANY: HeaderValue = HeaderValue::from_static("*");
const VARY_ORIGIN: HeaderValue = HeaderValue::from_static("origin");
/// What else a preflight's answer depends on: the headers it mirrors.
const PREFLIGHT_VARY: HeaderValue =
    HeaderValue::from_static("access-control-request-method, access-control-request-headers");

/// The origins allowed, ready to answer with.
#[derive(Debug, Clone)]
pub(crate) enum Cors {
    /// CORS off: no headers, and a preflight is the `405` of any `OPTIONS`.
    Off,
    /// Any origin: `Access-Control-Allow-Origin: *`, whoever asks.
    Any,
    /// These origins (lower case, without a default port, as browsers send them): the
    /// answer names the one that asked, and varies with `Origin`.
    These(Vec<HeaderValue>),
}

impl Cors {
    /// The policy for `origins` (an origin that is not a header value is left out:
    /// [`CorsOrigins::parse`] makes none).
    pub(crate) fn new(origins: &CorsOrigins) -> Cors {
        match origins {
            CorsOrigins::None => Cors::Off,
            CorsOrigins::Any => Cors::Any,
            CorsOrigins::These(list) => Cors::These(
                list.iter()
                    .filter_map(|origin| HeaderValue::from_str(origin).ok())
                    .collect(),
            ),
        }
    }

    /// The request's `Origin`, when the answer depends on it (a list of origins).
    pub(crate) fn origin_of(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        match self {
            Cors::These(_) => headers.get(header::ORIGIN).cloned(),
            Cors::Off | Cors::Any => None,
        }
    }

    /// The answer to `request` when it is a preflight (`OPTIONS` with `Origin` and
    /// `Access-Control-Request-Method`) and CORS is on: `200`, the methods, the headers it
    /// asks to send (`X-Api-Key`, `X-Team-ID`) and a day's cache, with the origin allowed
    /// if it is. Anything else: `None`, for the router.
    pub(crate) fn preflight(&self, request: &Request) -> Option<Response> {
        let headers = request.headers();
        if matches!(self, Cors::Off)
            || request.method() != Method::OPTIONS
            || !headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return None;
        }
        let origin = headers.get(header::ORIGIN)?;
        let mut response = StatusCode::OK.into_response();
        let out = response.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, METHODS);
        if let Some(asked) = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        out.insert(header::ACCESS_CONTROL_MAX_AGE, MAX_AGE);
        self.allow(Some(origin), out);
        out.append(header::VARY, PREFLIGHT_VARY);
        Some(response)
    }

    /// Adds the answer's CORS headers, for a request from `origin` (see
    /// [`Cors::origin_of`]).
    pub(crate) fn answer(&self, origin: Option<&HeaderValue>, response: &mut Response) {
        let out = response.headers_mut();
        if self.allow(origin, out) {
            out.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
        }
    }

    /// `Access-Control-Allow-Origin` for `origin`, if allowed, and `Vary: Origin` where the
    /// answer depends on it; whether it is allowed.
    fn allow(&self, origin: Option<&HeaderValue>, out: &mut HeaderMap) -> bool {
        match self {
            Cors::Off => false,
            Cors::Any => {
                out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, ANY);
                true
            }
            Cors::These(allowed) => {
                out.append(header::VARY, VARY_ORIGIN);
                match origin.filter(|o| allowed.contains(o)) {
                    Some(origin) => {
                        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
                        true
                    }
                    None => false,
                }
            }
        }
    }
}
