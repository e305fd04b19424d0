//! The service's log: `tracing` events, each with an `event` field naming it — one per
//! request (`request`: method, path, endpoint, status, team, credits, ms) and one per
//! server event (`listening`, `ready`, `reloaded`, `webhook_delivered`, `state_down`,
//! ...) — and a `request` span around each request's handling, so that what happens
//! inside a request carries its method, path and team, and, once it is answered, its
//! endpoint, status, credits and latency (JSON lines show them under `span`). The
//! library installs no
//! subscriber: the `cardex` binary writes the events as logfmt or JSON lines on stderr
//! (`--log-format`), and an embedder routes them wherever its own subscriber does.
//!
//! ```text
//! ts=2026-11-22T15:04:05Z level=info event=request message="GET /pokemon/v1/cards 200" method=GET path=/pokemon/v1/cards endpoint=cards status=200 team=acme credits=1 ms=0.412
//! ```
//!
//! Only the path is logged (not the query string), and of the headers only the team id:
//! API keys never reach a log.

use std::time::Duration;

use axum::http::Method;

/// Logs a server event (`listening`, `open_mode`, `stopped`, `state_error`, ...) with a
/// message: at level ERROR for `panic` and names ending in `error`, else INFO.
pub(super) fn event(name: &'static str, message: &str) {
    if name.ends_with("error") || name == "panic" {
        tracing::error!(event = name, "{message}");
    } else {
        tracing::info!(event = name, "{message}");
    }
}

/// The span around one request's handling: its method, path and team from the start,
/// its endpoint, status, credits and latency recorded when it is answered
/// ([`request`]).
pub(super) fn request_span(method: &Method, path: &str, team: Option<&str>) -> tracing::Span {
    tracing::info_span!(
        "request",
        method = %method,
        path = %path,
        team = %team.unwrap_or("-"),
        endpoint = tracing::field::Empty,
        status = tracing::field::Empty,
        credits = tracing::field::Empty,
        ms = tracing::field::Empty,
    )
}

/// What a request came to, for its log line.
#[derive(Debug, Clone, Default)]
pub(super) struct Outcome {
    /// The endpoint's name (`cards`, `usage`, `v2_cards`, ...), when a route matched.
    pub endpoint: Option<&'static str>,
    /// The credits charged.
    pub credits: u64,
    /// The team its `X-Api-Key` alone named (a `/v2` request without `X-Team-ID`).
    pub team: Option<std::sync::Arc<str>>,
}

/// Logs one request: its method, path, endpoint, status, team, credits and latency,
/// recorded on its span too (when it has one: a request refused before its handling has
/// none), and the line written inside it.
pub(super) fn request(
    span: Option<&tracing::Span>,
    method: &Method,
    path: &str,
    status: u16,
    team: Option<&str>,
    outcome: Outcome,
    took: Duration,
) {
    let ms = took.as_secs_f64() * 1000.0;
    let team = outcome.team.as_deref().or(team);
    let _entered = span.map(|span| {
        if let Some(team) = &outcome.team {
            span.record("team", &**team);
        }
        span.record("endpoint", outcome.endpoint.unwrap_or("-"));
        span.record("status", status);
        span.record("credits", outcome.credits);
        span.record("ms", tracing::field::display(format_args!("{ms:.3}")));
        span.enter()
    });
    tracing::info!(
        event = "request",
        method = %method,
        path = %path,
        endpoint = outcome.endpoint.unwrap_or("-"),
        status,
        team = team.unwrap_or("-"),
        credits = outcome.credits,
        ms = %format_args!("{ms:.3}"),
        "{method} {path} {status}"
    );
}
