//! The dispatcher: one delivery worker per subscription, which POSTs each event signed,
//! in outbox order, retrying with exponential backoff and jitter, and marks it done in the
//! outbox; and the marks saved beside the outbox, from which a restart tells what changed
//! while the server was down.

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::outbox::{Outbox, Pending};
use super::subscriptions::{Webhooks, MIN_RETRIES};
use crate::server::clock::unix_now;
use crate::server::journal;
use crate::server::log;
use crate::webhook::{sign, SIGNATURE_HEADER};
use crate::{CatalogChanges, ChangeKind, Event};

/// A random number in [0, 1) from the OS (for jitter).
fn unit_random() -> f64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// A new event id: `evt_` and 32 hex digits of OS randomness.
pub fn new_event_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: the clock and a counter still make ids unique in this process.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0) as u64;
        bytes[..8].copy_from_slice(&t.to_le_bytes());
        bytes[8..].copy_from_slice(&n.to_le_bytes());
    }
    let mut id = String::from("evt_");
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// The deliveries of a running server: the outbox and one queue per subscription.
#[derive(Debug)]
pub struct Dispatcher {
    webhooks: Webhooks,
    outbox: Outbox,
    queues: Vec<Queue>,
    /// Held from the outbox write to the queue pushes, so that queues keep outbox order.
    publishing: Mutex<()>,
    /// What the next events' ids are made from.
    stamp: Mutex<Stamp>,
}

/// What event ids are made from: a salt of this outbox's, made once and saved with the
/// marks (so that two servers' events never share ids), and the generation of the last
/// events enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    salt: String,
    generation: u64,
}

/// The file saved beside the outbox: the marks of the snapshot whose events are all in
/// the outbox, and the stamp of those events.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedMarks {
    #[serde(flatten)]
    stamp: Stamp,
    marks: crate::Marks,
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

/// One subscription's deliveries, in order, and the bell its worker waits on.
#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<VecDeque<Pending>>,
    wake: tokio::sync::Notify,
}

impl Dispatcher {
    /// Opens the outbox and starts one delivery worker per subscription (on the current
    /// tokio runtime), which first delivers what the outbox still holds. `https://`
    /// receivers are trusted when their certificate chains to the system's root
    /// certificates, webpki's (Mozilla's), or one of `private_roots`.
    ///
    /// # Errors
    ///
    /// The outbox's.
    pub fn start(
        webhooks: Webhooks,
        outbox_path: &Path,
        private_roots: &[reqwest::Certificate],
    ) -> io::Result<Arc<Dispatcher>> {
        let (outbox, pending) = Outbox::open(outbox_path)?;
        let mut client = reqwest::Client::builder()
            .timeout(Duration::from_millis(webhooks.retry.timeout_ms))
            .redirect(reqwest::redirect::Policy::none());
        for root in private_roots {
            client = client.add_root_certificate(root.clone());
        }
        let client = client.build().map_err(io::Error::other)?;
        let queues = webhooks
            .subscriptions
            .iter()
            .map(|_| Queue::default())
            .collect();
        let dispatcher = Arc::new(Dispatcher {
            webhooks,
            outbox,
            queues,
            publishing: Mutex::new(()),
            stamp: Mutex::new(Stamp {
                salt: new_event_id()["evt_".len()..].to_string(),
                generation: 0,
            }),
        });
        let mut restored = 0;
        for p in pending {
            match dispatcher.queue_of(&p.subscription) {
                Some(i) => {
                    dispatcher.queues[i]
                        .pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push_back(p);
                    restored += 1;
                }
                None => {
                    // Kept in the outbox, undelivered, until a subscription with this id
                    // is back (a renamed subscription would otherwise lose its events).
                    log::event(
                        "webhook_error",
                        &format!(
                            "event {} is pending for subscription {:?}, which is not in the webhooks file: kept in the outbox",
                            p.event.id, p.subscription
                        ),
                    );
                }
            }
        }
        if restored > 0 {
            log::event(
                "webhook_outbox",
                &format!(
                    "{restored} pending deliveries restored from {}",
                    outbox_path.display()
                ),
            );
        }
        for i in 0..dispatcher.queues.len() {
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

    /// Gives `events` their ids, enqueues them (durably: synced before it returns, so call
    /// it off the async workers) for the subscriptions that want them, and wakes their
    /// workers; returns how many deliveries were enqueued.
    ///
    /// An event's id is stable: a hash of this outbox's salt, the generation of the
    /// changes (one more than that of the last events published, or of the saved marks at
    /// a start), the event's name and expansion ids, and the state of the change (what
    /// those expansions hold in the new load, [`CatalogChanges::state`]). So when a server
    /// stops after enqueuing a reload's events but before saving its marks, the start that
    /// finds the same changes again makes the same events, which the outbox does not
    /// enqueue twice (and which a receiver de-duplicates should they have been delivered
    /// already); and a later change never takes an earlier event's id, even where a marks
    /// file fell behind, because what the expansions hold differs.
    ///
    /// # Errors
    ///
    /// The outbox's: nothing was enqueued.
    pub fn publish(&self, events: &mut [Event], changes: &[CatalogChanges]) -> io::Result<usize> {
        let _order = self.publishing.lock().unwrap_or_else(|e| e.into_inner());
        let mut stamp = self.stamp.lock().unwrap_or_else(|e| e.into_inner());
        let generation = stamp.generation + 1;
        for event in events.iter_mut() {
            let state = state_of(changes, &event.name);
            event.id = stable_event_id(&stamp.salt, generation, state, event);
        }
        let pending = self.outbox.enqueue(&self.webhooks.subscriptions, events)?;
        stamp.generation = generation;
        let n = pending.len();
        for p in pending {
            if let Some(i) = self.queue_of(&p.subscription) {
                let queue = &self.queues[i];
                queue
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back(p);
                queue.wake.notify_one();
            }
        }
        Ok(n)
    }

    /// The marks saved by [`Dispatcher::save_marks`] (`<outbox>.marks`), if any; the
    /// generation and salt saved with them are taken up for the next events' ids.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is not saved marks.
    pub fn saved_marks(&self) -> io::Result<Option<crate::Marks>> {
        let path = journal::sibling(self.outbox.path(), "marks");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let invalid = |e: serde_json::Error| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(invalid)?;
        let saved = if value.get("salt").is_some() {
            serde_json::from_value::<SavedMarks>(value).map_err(invalid)?
        } else {
            // Marks saved alone, as an older server saved them: generation 0.
            SavedMarks {
                stamp: self.stamp.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                marks: crate::Marks::from_json(&text).map_err(invalid)?,
            }
        };
        *self.stamp.lock().unwrap_or_else(|e| e.into_inner()) = saved.stamp;
        Ok(Some(saved.marks))
    }

    /// Saves the marks of the snapshot whose events are all in the outbox, with the
    /// generation of those events, so that the next start reports what changed while the
    /// server was down (written aside, synced, renamed into place).
    ///
    /// # Errors
    ///
    /// The file system's.
    pub fn save_marks(&self, marks: &crate::Marks) -> io::Result<()> {
        let stamp = self.stamp.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let saved = SavedMarks {
            stamp,
            marks: marks.clone(),
        };
        let text = serde_json::to_string(&saved).map_err(io::Error::other)?;
        journal::replace(
            &journal::sibling(self.outbox.path(), "marks"),
            text.as_bytes(),
        )
    }

    /// Delivers subscription `i`'s queue, in order, forever.
    async fn work(self: Arc<Self>, i: usize, client: reqwest::Client) {
        let subscription = &self.webhooks.subscriptions[i];
        let Queue {
            pending: queue,
            wake,
        } = &self.queues[i];
        loop {
            let head = queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .front()
                .cloned();
            let Some(p) = head else {
                wake.notified().await;
                continue;
            };
            let body = p.event.to_json();
            let first = Instant::now();
            let mut attempt: u32 = 0;
            loop {
                attempt += 1;
                let t = unix_now();
                let result = client
                    .post(&subscription.url)
                    .header("content-type", "application/json")
                    .header(
                        SIGNATURE_HEADER,
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
                let Some(failure) = failure else {
                    log::event(
                        "webhook_delivered",
                        &format!(
                            "{} {} to {} (attempt {attempt})",
                            p.event.name, p.event.id, subscription.id
                        ),
                    );
                    break;
                };
                let policy = self.webhooks.retry;
                // At least MIN_RETRIES retries, however short the give-up time.
                if attempt > MIN_RETRIES
                    && first.elapsed() >= Duration::from_secs(policy.give_up_after_secs)
                {
                    log::event(
                        "webhook_error",
                        &format!(
                            "gave up on {} {} to {} after {attempt} attempts: {failure}",
                            p.event.name, p.event.id, subscription.id
                        ),
                    );
                    break;
                }
                let delay = policy.delay(attempt, unit_random());
                log::event(
                    "webhook_retry",
                    &format!(
                        "{} {} to {}: attempt {attempt} failed ({failure}); next in {} ms",
                        p.event.name,
                        p.event.id,
                        subscription.id,
                        delay.as_millis()
                    ),
                );
                tokio::time::sleep(delay).await;
            }
            let me = self.clone();
            match tokio::task::spawn_blocking(move || me.outbox.done(p.seq)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => log::event("webhook_error", &format!("outbox: {e}")),
                Err(e) => log::event("webhook_error", &format!("outbox: {e}")),
            }
            queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
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
}
