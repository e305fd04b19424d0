//! Webhook deliveries, in two parts: [`subscriptions`](Webhooks) (the webhooks file: who
//! gets which events, and the retry policy) and the [`Dispatcher`] (one delivery worker
//! per subscription, which POSTs each event signed, in order, retrying with exponential
//! backoff and jitter), over the outbox in the [state](crate::server::state).
//!
//! Delivery is at least once: an event is written to the outbox before any attempt, and
//! marked done only after a 2xx answer (or when it is given up), so a crash or restart
//! mid-retry sends it again. Receivers de-duplicate by the event `id`. SERVER.md
//! documents the format.

mod dispatcher;
mod subscriptions;

pub use dispatcher::{new_event_id, Dispatcher};
pub use subscriptions::{
    valid_event_name, RetryPolicy, Subscription, Webhooks, WebhooksError, MIN_RETRIES,
};
