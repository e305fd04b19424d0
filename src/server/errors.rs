//! The service's error answers: every refused request gets a status and the error body of
//! the contract (`{"error": {"status", "code", "message", "details"}}`), and the engine's
//! typed [`Error`]s are mapped to them here, so the engine itself knows no HTTP.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::{error_body, error_status, Error};

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
    if status == StatusCode::UNAUTHORIZED {
        // A 401 carries a challenge (RFC 9110, 11.6.1): the key is sent in its own header.
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, API_KEY_CHALLENGE);
    }
    response.extensions_mut().insert(ErrorMessage(message));
    response
}

/// The challenge of every 401: an API key, in `X-Api-Key`.
const API_KEY_CHALLENGE: HeaderValue =
    HeaderValue::from_static(r#"ApiKey realm="cardex", header="X-Api-Key""#);

/// A JSON answer.
pub(super) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, Body::from(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
