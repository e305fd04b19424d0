//! The service's error answers: every refused request gets a status and the error body of
//! the contract (`{"error": {"status", "code", "message", "details"}}`), and the engine's
//! typed [`Error`]s are mapped to them here, so the engine itself knows no HTTP.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::{Error, NotFound, ParameterErrorKind};

/// The HTTP status of an engine error: 400 for the request's own mistakes (its query or
/// parameters), 404 for what does not exist, 500 for a snapshot that cannot be loaded.
///
/// ```
/// let err = cardex::Error::from(cardex::query::parse("hp>=").unwrap_err());
/// assert_eq!(cardex::server::error_status(&err), 400);
/// ```
pub fn error_status(error: &Error) -> u16 {
    match error {
        Error::Parse(_) | Error::Plan(_) | Error::Parameter(_) => 400,
        Error::NotFound(_) => 404,
        Error::Load(_) => 500,
    }
}

/// The error code of an engine error in the error body: `invalid_query`,
/// `unknown_parameter`, `invalid_parameter`, `not_found` or `snapshot_error`.
///
/// ```
/// let err = cardex::ItemRequest::from_params([("q", "x")]).unwrap_err();
/// assert_eq!(cardex::server::error_code(&err), "unknown_parameter");
/// ```
pub fn error_code(error: &Error) -> &'static str {
    match error {
        Error::Parse(_) | Error::Plan(_) => "invalid_query",
        Error::Parameter(p) => match p.kind() {
            ParameterErrorKind::Unknown { .. } => "unknown_parameter",
            _ => "invalid_parameter",
        },
        Error::NotFound(_) => "not_found",
        Error::Load(_) => "snapshot_error",
    }
}

/// The error body of an engine error. Query errors carry `position` (byte offset),
/// `column` (character, 1-based) and `end` in `details`; parameter errors the parameter
/// and its value (or the parameters allowed); an unknown catalog or language the ones
/// there are.
///
/// ```
/// let err = cardex::Error::from(cardex::query::parse("hp>=").unwrap_err());
/// let body = cardex::server::error_body(&err);
/// assert_eq!(body["error"]["details"]["position"], 4);
/// assert_eq!(body["error"]["code"], "invalid_query");
/// ```
pub fn error_body(error: &Error) -> serde_json::Value {
    let details = match error {
        Error::Parse(e) => {
            json!({"position": e.offset(), "column": e.column(), "end": e.span().end})
        }
        Error::Plan(e) => {
            json!({"position": e.offset(), "column": e.column(), "end": e.span().end})
        }
        Error::Parameter(e) => match e.kind() {
            ParameterErrorKind::Unknown { allowed } => {
                json!({"parameter": e.name(), "allowed": allowed})
            }
            _ => json!({"parameter": e.name(), "value": e.value()}),
        },
        Error::NotFound(NotFound::Catalog { known, .. }) => json!({"catalogs": known}),
        Error::NotFound(NotFound::Language { known, .. }) => json!({"languages": known}),
        Error::NotFound(_) | Error::Load(_) => json!({}),
    };
    json!({"error": {
        "status": error_status(error),
        "code": error_code(error),
        "message": error.message(),
        "details": details,
    }})
}

/// The answer to a request the engine refused.
pub(super) fn engine_error(error: &Error) -> Response {
    let status = StatusCode::from_u16(error_status(error)).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = json_response(status, error_body(error).to_string().into_bytes());
    response
        .extensions_mut()
        .insert(ErrorMessage(error.message()));
    response
}

/// An error answer's message, kept with the response so that a surface with an error
/// body of its own (the Pokémon TCG API v2's) can say the same thing its way.
#[derive(Debug, Clone)]
pub(super) struct ErrorMessage(pub String);

/// An error answer of the service's own (credentials, limits, sizes, timeouts).
pub(super) fn error_response(
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
    let mut response = json_response(status, body.to_string().into_bytes());
    response.extensions_mut().insert(ErrorMessage(message));
    response
}

/// A JSON answer.
pub(super) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, Body::from(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
