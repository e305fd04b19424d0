//! The dispatcher: one delivery worker per subscription, which takes the subscription's
//! next delivery from the outbox in the state (a lease, so that with replicas one at a
//! time delivers it, and another takes it over if the holder dies), POSTs it signed,
//! retries with exponential backoff and jitter, and marks it done; and the event ids,
//! made from the change itself so that replicas that see the same change make the same
//! event, which the outbox holds once.

use std::sync::Arc;
use std::time::Duration;

use super::subscriptions::{Webhooks, MIN_RETRIES};
use crate::server::clock::unix_now;
use crate::server::log;
use crate::server::state::{Claimed, MarksToSave, State, StateError};
use crate::webhook::sign;
use crate::{CatalogChanges, ChangeKind, Event};
use tracing::Instrument;
/// A random number in [0, 1) from the OS (for jitter).
fn unit_random() -> f64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// A new event id: `evt_` and 32 hex digits of OS randomness.
pub fn new_event_id() -> String {
    format!("evt_{}", crate::server::random::hex16())
}

/// How often an idle worker looks for deliveries that another replica enqueued or whose
/// lease ran out.
const POLL: Duration = Duration::from_secs(1);

/// Added to a lease beyond the attempt's timeout and the backoff delay.
const LEASE_MARGIN: Duration = Duration::from_secs(2);

/// The deliveries of a running server: the state's outbox and one worker per
/// subscription.
#[derive(Debug)]
pub struct Dispatcher {
    webhooks: Webhooks,
    state: Arc<State>,
    /// This server's name on the leases it holds.
    holder: String,
    wakes: Vec<tokio::sync::Notify>,
    /// The state's salt for event ids (made once, so that two states' events never share
    /// ids).
    salt: String,
    /// The header that carries each delivery's signature.
    signature_header: reqwest::header::HeaderName,
}

/// The state of the change behind the event named `name` (see
/// [`CatalogChanges::state`]); 0 when no change of `changes` makes that event.
fn state_of(changes: &[CatalogChanges], name: &str) -> u64 {
    changes
        .iter()
        .flat_map(|c| ChangeKind::ALL.map(|kind| (c, kind)))
        .find(|(c, kind)| kind.event_name(&c.catalog) == name)
        .map_or(0, |(c, kind)| c.state(kind))
}

/// The id of `event` of the given generation and state: `evt_` and 32 hex digits of a
/// SHA-256 over the salt, the generation, the state, the name and the expansion ids.
fn stable_event_id(salt: &str, generation: u64, state: u64, event: &Event) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [
        salt,
        &generation.to_string(),
        &state.to_string(),
        &event.name,
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    for id in &event.data.expansion_ids {
        hash.update((id.len() as u64).to_le_bytes());
        hash.update(id.as_bytes());
    }
    let digest = hash.finalize();
    let mut id = String::from("evt_");
    for b in &digest[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

impl Dispatcher {
    /// Starts one delivery worker per subscription on the current tokio runtime, over
    /// the outbox in `state`; each first delivers what the outbox still holds.
    /// `https://` receivers are trusted when their certificate chains to the system's
    /// root certificates, webpki's (Mozilla's), or one of `private_roots`. Signatures go
    /// in `signature_header` ([`crate::webhook::SIGNATURE_HEADER`] unless configured otherwise).
    ///
    /// # Errors
    ///
    /// The state's, or an HTTP client that cannot be built.
    pub async fn start(
        webhooks: Webhooks,
        state: Arc<State>,
        private_roots: &[reqwest::Certificate],
        signature_header: reqwest::header::HeaderName,
    ) -> Result<Arc<Dispatcher>, StateError> {
        if let State::Sqlite(s) = &*state {
            s.release_leases()?;
        }
        let salt = state.salt().await?;
        let pending = state.pending().await?;
        let mut client = reqwest::Client::builder()
            .timeout(Duration::from_millis(webhooks.retry.timeout_ms))
            .redirect(reqwest::redirect::Policy::none());
        for root in private_roots {
            client = client.add_root_certificate(root.clone());
        }
        let client = client.build().map_err(|e| StateError::Database {
            state: "webhooks".into(),
            doing: "build the HTTP client",
            source: e.into(),
        })?;
        let holder = format!("{}-{}", std::process::id(), &new_event_id()[4..16]);
        let dispatcher = Arc::new(Dispatcher {
            wakes: webhooks
                .subscriptions
                .iter()
                .map(|_| tokio::sync::Notify::new())
                .collect(),
            webhooks,
            state,
            holder,
            salt,
            signature_header,
        });
        for (subscription, n) in pending {
            if dispatcher.queue_of(&subscription).is_some() {
                log::event(
                    "webhook_outbox",
                    &format!("{n} pending deliveries to {subscription} in the outbox"),
                );
            } else {
                // Kept in the outbox, undelivered, until a subscription with this id is
                // back (a renamed subscription would otherwise lose its events).
                log::event(
                    "webhook_error",
                    &format!(
                        "{n} deliveries are pending for subscription {subscription:?}, which is not in the webhooks file: kept in the outbox"
                    ),
                );
            }
        }
        for i in 0..dispatcher.wakes.len() {
            tokio::spawn(dispatcher.clone().work(i, client.clone()));
        }
        Ok(dispatcher)
    }

    fn queue_of(&self, subscription: &str) -> Option<usize> {
        self.webhooks
            .subscriptions
            .iter()
            .position(|s| s.id == subscription)
    }

    /// Gives `events` their ids and writes them to the outbox for the subscriptions that
    /// want them (an event already there is not written again), with `marks`, the marks
    /// of the snapshot they lead to, in one transaction; returns how many deliveries were
    /// written. Called for every reload, events or not, so that the saved marks are always
    /// the served snapshot's. The workers are woken by [`Dispatcher::deliver_now`], once
    /// the snapshot the events announce is served.
    ///
    /// An event's id is stable: a hash of the state's salt, the generation of the change
    /// (one per published change, kept in the state: replicas that publish the same
    /// change, from the same marks to the same marks, get the same generation), the
    /// event's name and expansion ids, and the state of the change (what those
    /// expansions hold in the new load, [`CatalogChanges::state`]). So replicas make the
    /// same event for the same change, which the outbox holds once; a server that stops
    /// after publishing makes the same events again should it find the same change at
    /// its next start; and a price that goes back and forth gets a new event each way.
    ///
    /// # Errors
    ///
    /// The state's: nothing was written.
    pub async fn publish(
        &self,
        events: &mut [Event],
        changes: &[CatalogChanges],
        marks: &crate::Marks,
    ) -> Result<usize, StateError> {
        use sha2::{Digest, Sha256};
        let json = marks.to_json();
        let fingerprint: String = Sha256::digest(json.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let salt = self.salt.clone();
        let subscriptions = &self.webhooks.subscriptions;
        let (written, _) = self
            .state
            .publish(
                &MarksToSave {
                    json: &json,
                    fingerprint: &fingerprint,
                },
                |generation| {
                    events
                        .iter_mut()
                        .map(|event| {
                            let state = state_of(changes, &event.name);
                            event.id = stable_event_id(&salt, generation, state, event);
                            let wanted = subscriptions
                                .iter()
                                .filter(|s| s.wants(&event.name))
                                .map(|s| s.id.clone())
                                .collect();
                            (event.clone(), wanted)
                        })
                        .collect()
                },
            )
            .await?;
        Ok(written)
    }

    /// Wakes the delivery workers, to deliver what [`Dispatcher::publish`] wrote: called
    /// after the new snapshot is swapped in, so a receiver that fetches on delivery reads
    /// the data its event announces.
    pub fn deliver_now(&self) {
        for wake in &self.wakes {
            wake.notify_one();
        }
    }

    /// The marks saved with the last publication, if any.
    ///
    /// # Errors
    ///
    /// The state's, or saved marks that do not parse.
    pub async fn saved_marks(&self) -> Result<Option<crate::Marks>, StateError> {
        let Some(saved) = self.state.saved_marks().await? else {
            return Ok(None);
        };
        crate::Marks::from_json(&saved.marks)
            .map(Some)
            .map_err(|e| StateError::BadMarks {
                reason: e.to_string(),
            })
    }

    /// The lease for an attempt that may wait `delay` first.
    fn lease(&self, delay: Duration) -> f64 {
        (Duration::from_millis(self.webhooks.retry.timeout_ms) + delay + LEASE_MARGIN).as_secs_f64()
    }

    /// Delivers subscription `i`'s deliveries, in order, forever.
    async fn work(self: Arc<Self>, i: usize, client: reqwest::Client) {
        let subscription_id = self.webhooks.subscriptions[i].id.clone();
        loop {
            match self
                .state
                .claim(&subscription_id, &self.holder, self.lease(Duration::ZERO))
                .await
            {
                Ok(Some(claimed)) => {
                    // Every line about this delivery carries the event and the subscription.
                    let span = tracing::info_span!(
                        "delivery",
                        event_id = %claimed.event.id,
                        event_name = %claimed.event.name,
                        subscription = %subscription_id,
                    );
                    self.deliver(i, &client, claimed).instrument(span).await;
                }
                Ok(None) => {
                    let _ = tokio::time::timeout(POLL, self.wakes[i].notified()).await;
                }
                Err(e) => {
                    log::event("webhook_error", &format!("outbox: {e}"));
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    /// Attempts one claimed delivery until it succeeds, is given up, or its lease is lost.
    async fn deliver(&self, i: usize, client: &reqwest::Client, mut claimed: Claimed) {
        let subscription = &self.webhooks.subscriptions[i];
        let body = claimed.event.to_json();
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        };
        let first = *claimed.first_attempt.get_or_insert_with(now);
        let (name, id) = (claimed.event.name.clone(), claimed.event.id.clone());
        loop {
            claimed.attempts += 1;
            let attempt = claimed.attempts;
            let t = unix_now();
            let result = client
                .post(&subscription.url)
                .header("content-type", "application/json")
                .header(
                    &self.signature_header,
                    sign(&subscription.secret, t, body.as_bytes()),
                )
                .body(body.clone())
                .send()
                .await;
            let failure = match result {
                Ok(r) if r.status().is_success() => None,
                Ok(r) => Some(format!("HTTP {}", r.status().as_u16())),
                Err(e) => Some(describe(&e)),
            };
            let policy = self.webhooks.retry;
            let finished = match &failure {
                None => {
                    tracing::info!(
                        event = "webhook_delivered",
                        attempt,
                        "{name} {id} to {} (attempt {attempt})",
                        subscription.id
                    );
                    true
                }
                // At least MIN_RETRIES retries, however short the give-up time.
                Some(failure)
                    if attempt > MIN_RETRIES
                        && now() - first >= policy.give_up_after_secs as f64 =>
                {
                    tracing::error!(
                        event = "webhook_error",
                        attempt,
                        failure = %failure,
                        "gave up on {name} {id} to {} after {attempt} attempts: {failure}",
                        subscription.id
                    );
                    true
                }
                Some(_) => false,
            };
            if finished {
                if let Err(e) = self.state.finish(&claimed, &self.holder).await {
                    log::event("webhook_error", &format!("outbox: {e}"));
                }
                return;
            }
            let delay = policy.delay(attempt, unit_random());
            let failure = failure.unwrap_or_default();
            tracing::info!(
                event = "webhook_retry",
                attempt,
                failure = %failure,
                delay_ms = delay.as_millis() as u64,
                "{name} {id} to {}: attempt {attempt} failed ({failure}); next in {} ms",
                subscription.id,
                delay.as_millis()
            );
            match self
                .state
                .attempted(&claimed, &self.holder, self.lease(delay))
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    log::event(
                        "webhook_retry",
                        &format!(
                            "{name} {id} to {}: another server took the delivery over",
                            subscription.id
                        ),
                    );
                    return;
                }
                Err(e) => {
                    // The attempt is not recorded: wait out its delay all the same, so
                    // that claiming the delivery again keeps the backoff.
                    log::event("webhook_error", &format!("outbox: {e}"));
                    tokio::time::sleep(delay).await;
                    return;
                }
            }
            tokio::time::sleep(delay).await;
        }
    }
}

/// A delivery error in a few words (reqwest's Display hides the cause).
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::subscriptions::RetryPolicy;
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        let p = RetryPolicy {
            first_delay_ms: 100,
            max_delay_ms: 1_000,
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay(1, 0.0), Duration::from_millis(50));
        assert_eq!(p.delay(1, 0.999_999), Duration::from_millis(99));
        assert_eq!(p.delay(3, 0.0), Duration::from_millis(200));
        assert_eq!(p.delay(10, 0.0), Duration::from_millis(500));
        assert_eq!(p.delay(200, 0.0), Duration::from_millis(500));
        let u = unit_random();
        assert!((0.0..1.0).contains(&u));
        assert_ne!(new_event_id(), new_event_id());
        assert_eq!(new_event_id().len(), 4 + 32);
    }

    #[test]
    fn event_ids_are_stable_for_a_generation_and_differ_otherwise() {
        let event = |name: &str, ids: &[&str]| Event {
            id: String::new(),
            name: name.into(),
            data: crate::EventData {
                expansion_ids: ids.iter().map(|s| s.to_string()).collect(),
            },
        };
        let raw = event("pokemon.expansions.prices.raw_updated", &["sv1", "sv2"]);
        let id = stable_event_id("salt", 3, 7, &raw);
        assert_eq!(id, stable_event_id("salt", 3, 7, &raw));
        assert_ne!(id, stable_event_id("salt", 3, 8, &raw));
        assert_eq!(id.len(), 4 + 32);
        assert!(id.starts_with("evt_"));
        assert_ne!(id, stable_event_id("salt", 4, 7, &raw));
        assert_ne!(id, stable_event_id("other", 3, 7, &raw));
        assert_ne!(
            id,
            stable_event_id(
                "salt",
                3,
                7,
                &event("pokemon.expansions.prices.raw_updated", &["sv1"])
            )
        );
        // Lengths are hashed: ["sv1", "sv2"] and ["sv1sv2"] differ.
        assert_ne!(
            id,
            stable_event_id(
                "salt",
                3,
                7,
                &event("pokemon.expansions.prices.raw_updated", &["sv1sv2"])
            )
        );
    }

    #[test]
    fn saved_marks_that_do_not_parse_are_a_typed_error_naming_them() {
        let dir = crate::server::testing::scratch("dispatcher", "bad-marks");
        let sqlite = crate::server::state::SqliteState::open(&dir.join("state.db")).unwrap();
        sqlite
            .publish(
                &MarksToSave {
                    json: "{not marks",
                    fingerprint: "x",
                },
                |_| Vec::new(),
                1.0,
            )
            .unwrap();
        let state = Arc::new(State::Sqlite(sqlite));
        crate::server::testing::runtime().block_on(async {
            let webhooks = Webhooks {
                subscriptions: Vec::new(),
                retry: Default::default(),
            };
            let header = reqwest::header::HeaderName::from_static("x-service-signature");
            let dispatcher = Dispatcher::start(webhooks, state, &[], header)
                .await
                .unwrap();
            let e = dispatcher.saved_marks().await.unwrap_err();
            assert!(matches!(e, StateError::BadMarks { .. }), "{e:?}");
            assert!(e
                .to_string()
                .contains("the saved marks of the last snapshot do not parse"));
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
