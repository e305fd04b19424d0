//! The HTTP service (feature `server`): every endpoint of the card-data service over an
//! [`Engine`](crate::Engine), with API keys, the per-team rate limit, credits and usage.
//!
//! A thin frontend over the engine, in layers. Per request, in order:
//!
//! 1. the [`router()`] picks an endpoint, or `404 not_found`; a method other than GET (or
//!    HEAD) is `405 method_not_allowed`; an over-long URI is `414`, over-large headers
//!    `431`; a request that takes too long `503 timeout`;
//! 2. with accounts, the metering layer: `X-Api-Key` and `X-Team-ID` must belong together
//!    (`401 missing_credentials` / `invalid_credentials`, see [`accounts`]), then the
//!    team's rate limit ([`limit`]: over it, `429 rate_limited` with `Retry-After`, and
//!    the request costs nothing);
//! 3. the endpoint's handler asks the engine and maps its answer (pre-rendered JSON, or a
//!    typed error: [`error_body`]) to a response;
//! 4. the metering layer charges a successful (2xx) answer to the team's credits in the
//!    [`state`] before it leaves; errors cost nothing (with PostgreSQL state, the shared
//!    rate limit is decided in the same statement);
//! 5. one `tracing` event per request, in a span per request; keys never
//!    appear in logs.
//!
//! [`run()`] starts it all from a [`ServeConfig`]: the snapshot, the [`state`] (SQLite or
//! PostgreSQL: accounts, credits, usage figures, the webhook outbox), the webhooks
//! ([`webhooks`]: subscriptions and the dispatcher) and reloads. SERVER.md
//! documents the accounts file, the credit table, the usage figures and every decision
//! the spec leaves open.

pub mod accounts;
mod charging;
mod clock;
mod config;
mod connections;
mod cors;
mod errors;
mod handlers;
pub mod limit;
mod log;
mod metering;
mod openapi;
mod query_string;
mod random;
mod reload;
mod router;
mod run;
mod service;
pub mod state;
#[cfg(test)]
mod testing;
pub mod v2;
pub mod webhooks;

pub use clock::{rfc3339, unix_now};
pub use config::{CorsOrigins, ServeConfig};
pub use connections::{serve_connections, Drained};
// The contract's error bodies of engine errors are the library's (no HTTP stack needed);
// also here, beside the service that answers with them.
pub use crate::{error_body, error_code, error_status};
pub use router::{router, MAX_HEADER_BYTES, MAX_URI_BYTES, ROUTES};
pub use run::{run, ServeError};
pub use service::Service;
