//! Webhook deliveries (issue #6, spec section 6): the webhooks file (subscriptions and the
//! retry policy), the durable [`Outbox`], and one delivery worker per subscription that
//! POSTs each event, signed, in order, retrying with exponential backoff and jitter.
//!
//! Delivery is at least once: an event is written to the outbox (and synced) before any
//! attempt, and marked done only after a 2xx answer, so a crash or restart mid-retry sends
//! it again. Receivers de-duplicate by the event `id`. SERVER.md documents the format.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::journal::{self, AppendLog};
use super::log;
use crate::live::{ChangeKind, Event};
use crate::webhook::{sign, SIGNATURE_HEADER};

/// The fewest retries of an event before it may be given up.
pub const MIN_RETRIES: u32 = 4;

/// The webhooks file: who gets which events, and how failed deliveries are retried.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Webhooks {
    /// The subscriptions.
    pub subscriptions: Vec<Subscription>,
    /// The retry policy (every field has a default).
    #[serde(default)]
    pub retry: RetryPolicy,
}

/// One receiving address.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Subscription {
    /// A name for logs and the outbox: `[A-Za-z0-9_-]{1,64}`, unique in the file.
    pub id: String,
    /// Where events are POSTed: an `http://` URL.
    pub url: String,
    /// The signing secret, `whsec_` and at least 16 more characters.
    pub secret: String,
    /// The event names wanted (spec section 6), or `"*"` for all.
    pub events: Vec<String>,
}

/// How failed deliveries are retried: the n-th retry waits a random time between half and
/// all of `first_delay_ms · 2ⁿ⁻¹`, capped at `max_delay_ms`; after `give_up_after_secs`
/// since the first attempt, and at least [`MIN_RETRIES`] retries, the event is given up
/// (logged as an error).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// The first retry's delay (before jitter), ms. Default 1,000.
    pub first_delay_ms: u64,
    /// The longest delay between attempts, ms. Default 3,600,000 (an hour).
    pub max_delay_ms: u64,
    /// How long to keep trying an event, seconds. Default 259,200 (three days).
    pub give_up_after_secs: u64,
    /// Each attempt's timeout (connect, send, answer), ms. Default 10,000.
    pub timeout_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            first_delay_ms: 1_000,
            max_delay_ms: 3_600_000,
            give_up_after_secs: 3 * 24 * 3600,
            timeout_ms: 10_000,
        }
    }
}

impl RetryPolicy {
    /// The delay before retry `n` (1-based), jittered by `unit` in [0, 1).
    pub fn delay(&self, n: u32, unit: f64) -> Duration {
        let full = self
            .first_delay_ms
            .saturating_mul(1u64 << n.saturating_sub(1).min(40))
            .min(self.max_delay_ms);
        Duration::from_millis(full / 2 + ((full / 2) as f64 * unit) as u64)
    }
}

/// Whether `name` is an event name of spec section 6 (`<catalog>.expansions.…`).
pub fn valid_event_name(name: &str) -> bool {
    ChangeKind::ALL.iter().any(|kind| {
        let example = kind.event_name("");
        name.strip_suffix(&example[1..])
            .and_then(|catalog| catalog.strip_suffix('.'))
            .is_some_and(|catalog| {
                !catalog.is_empty()
                    && catalog.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    })
            })
    })
}

impl Subscription {
    /// Whether this subscription wants events named `name`.
    pub fn wants(&self, name: &str) -> bool {
        self.events.iter().any(|e| e == "*" || e == name)
    }
}

impl Webhooks {
    /// Reads and checks a webhooks file.
    ///
    /// # Errors
    ///
    /// A message naming the file and what is wrong: unreadable, not JSON of this shape,
    /// a bad or repeated id, a URL that is not `http://`, a short secret, an unknown event.
    pub fn read(path: &Path) -> Result<Webhooks, String> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        let webhooks: Webhooks = serde_json::from_str(&text).map_err(|e| at(&e))?;
        webhooks.check().map_err(|e| at(&e))?;
        Ok(webhooks)
    }

    fn check(&self) -> Result<(), String> {
        let mut ids = HashSet::new();
        for (i, s) in self.subscriptions.iter().enumerate() {
            let it = format!("subscription {i} ({:?})", s.id);
            let id_ok = (1..=64).contains(&s.id.len())
                && s.id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !id_ok {
                return Err(format!("{it}: `id` must be 1 to 64 of [A-Za-z0-9_-]"));
            }
            if !ids.insert(&s.id) {
                return Err(format!("{it}: `id` is used twice"));
            }
            match reqwest::Url::parse(&s.url) {
                Ok(url) if url.scheme() == "http" && url.host().is_some() => {}
                Ok(url) if url.scheme() == "https" => {
                    return Err(format!(
                        "{it}: https:// receivers are not supported yet (no TLS stack); use http:// behind a TLS proxy"
                    ))
                }
                Ok(_) => return Err(format!("{it}: `url` must be an http:// URL with a host")),
                Err(e) => return Err(format!("{it}: `url` is not a URL: {e}")),
            }
            if !s.secret.starts_with("whsec_") || s.secret.len() < "whsec_".len() + 16 {
                return Err(format!(
                    "{it}: `secret` must be `whsec_` and at least 16 more characters"
                ));
            }
            if s.events.is_empty() {
                return Err(format!("{it}: `events` is empty"));
            }
            if let Some(bad) = s.events.iter().find(|e| *e != "*" && !valid_event_name(e)) {
                return Err(format!(
                    "{it}: {bad:?} is not an event name (`<catalog>.expansions.prices.raw_updated`, `…prices.graded_updated`, `…pop_reports.updated`, or \"*\")"
                ));
            }
        }
        let r = self.retry;
        if r.first_delay_ms == 0 || r.max_delay_ms < r.first_delay_ms || r.timeout_ms == 0 {
            return Err(
                "`retry`: delays and timeout must be positive, max_delay_ms ≥ first_delay_ms"
                    .into(),
            );
        }
        Ok(())
    }
}

/// One line of the outbox file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum OutboxLine {
    /// An event to deliver to a subscription.
    Enqueued {
        seq: u64,
        subscription: String,
        event: Event,
    },
    /// Delivered (or given up).
    Done { done: u64 },
}

/// A pending delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Its place in the outbox; deliveries to one subscription go in this order.
    pub seq: u64,
    /// The subscription id.
    pub subscription: String,
    /// The event.
    pub event: Event,
}

/// The durable outbox: an append-only file of JSON lines, one per enqueued delivery and
/// one per finished one. Opening replays it (a torn last line is dropped) and compacts it
/// to the pending deliveries; [`Outbox::done`] compacts it the same way once it has grown
/// to 1 MiB and four times the pending deliveries' lines, so a server that runs for months
/// keeps a small outbox. The pending deliveries' lines are kept in memory for that (about
/// the size of their events' JSON).
#[derive(Debug)]
pub struct Outbox {
    inner: Mutex<OutboxInner>,
    path: PathBuf,
    /// Held while open: a second server on the same outbox is refused.
    _lock: File,
}

#[derive(Debug)]
struct OutboxInner {
    log: AppendLog,
    next_seq: u64,
    /// The pending deliveries' lines, by sequence number: what compacting writes.
    pending: BTreeMap<u64, Vec<u8>>,
    /// Their total length.
    pending_len: u64,
}

/// Pending deliveries' lines, in sequence order, as one text.
fn joined(pending: &BTreeMap<u64, Vec<u8>>) -> Vec<u8> {
    pending.values().flatten().copied().collect()
}

impl OutboxInner {
    /// Compacts the file to the pending deliveries when that is due (see
    /// [`AppendLog::due`]); this is also what repairs a torn file, which refuses appends.
    fn compact_if_due(&mut self) -> io::Result<()> {
        if self.log.due(self.pending_len) {
            self.log.compact(&joined(&self.pending))?;
        }
        Ok(())
    }
}

impl Outbox {
    /// Opens (or creates) the outbox at `path`; returns it with its pending deliveries in
    /// order.
    ///
    /// # Errors
    ///
    /// The file system's, or a line before the last that is not an outbox line.
    pub fn open(path: &Path) -> io::Result<(Outbox, Vec<Pending>)> {
        let lock = journal::lock(path)?;
        let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
        let mut next_seq = 1;
        journal::replay(path, |line| {
            match serde_json::from_str::<OutboxLine>(line) {
                Ok(OutboxLine::Enqueued {
                    seq,
                    subscription,
                    event,
                }) => {
                    next_seq = next_seq.max(seq + 1);
                    let p = Pending {
                        seq,
                        subscription,
                        event,
                    };
                    pending.insert(seq, p);
                }
                Ok(OutboxLine::Done { done }) => {
                    pending.remove(&done);
                }
                Err(e) => return Err(format!("not an outbox line: {e}")),
            }
            Ok(())
        })?;
        let pending: Vec<Pending> = pending.into_values().collect();
        let mut lines = BTreeMap::new();
        for p in &pending {
            let mut line = Vec::new();
            write_line(&mut line, &enqueued_line(p))?;
            lines.insert(p.seq, line);
        }
        let text = joined(&lines);
        let inner = OutboxInner {
            log: AppendLog::create(path, &text)?,
            next_seq,
            pending_len: text.len() as u64,
            pending: lines,
        };
        let outbox = Outbox {
            path: path.to_path_buf(),
            inner: Mutex::new(inner),
            _lock: lock,
        };
        Ok((outbox, pending))
    }

    /// The outbox file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes deliveries of `events` to the subscriptions that want them, synced before it
    /// returns; returns them with their sequence numbers.
    ///
    /// # Errors
    ///
    /// The file system's; then nothing is enqueued.
    pub fn enqueue(
        &self,
        subscriptions: &[Subscription],
        events: &[Event],
    ) -> io::Result<Vec<Pending>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut seq = inner.next_seq;
        let mut pending = Vec::new();
        for event in events {
            for s in subscriptions.iter().filter(|s| s.wants(&event.name)) {
                pending.push(Pending {
                    seq,
                    subscription: s.id.clone(),
                    event: event.clone(),
                });
                seq += 1;
            }
        }
        if pending.is_empty() {
            return Ok(pending);
        }
        inner.compact_if_due()?;
        let mut lines = Vec::with_capacity(pending.len());
        for p in &pending {
            let mut line = Vec::new();
            write_line(&mut line, &enqueued_line(p))?;
            lines.push(line);
        }
        inner.log.append(&lines.concat(), true)?;
        inner.next_seq = seq;
        for (p, line) in pending.iter().zip(lines) {
            inner.pending_len += line.len() as u64;
            inner.pending.insert(p.seq, line);
        }
        Ok(pending)
    }

    /// Marks a delivery finished (delivered or given up). Not synced: if the mark is lost
    /// in a crash, the event is delivered again (at least once). Then compacts the file
    /// when that is due (it has grown to 1 MiB and four times the pending deliveries'
    /// lines, or a write was torn), which syncs it. A torn file is compacted before the
    /// mark is written, here and when enqueuing.
    ///
    /// # Errors
    ///
    /// The file system's: writing the mark (then not written), or compacting the file, or
    /// syncing its folder after a compaction (the mark was written).
    pub fn done(&self, seq: u64) -> io::Result<()> {
        let mut line = Vec::new();
        write_line(&mut line, &OutboxLine::Done { done: seq })?;
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        inner.compact_if_due()?;
        inner.log.append(&line, false)?;
        if let Some(finished) = inner.pending.remove(&seq) {
            inner.pending_len -= finished.len() as u64;
        }
        inner.compact_if_due()?;
        inner.log.sync_folder()
    }
}

fn enqueued_line(p: &Pending) -> OutboxLine {
    OutboxLine::Enqueued {
        seq: p.seq,
        subscription: p.subscription.clone(),
        event: p.event.clone(),
    }
}

fn write_line(out: &mut impl Write, line: &OutboxLine) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

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
}

/// One subscription's deliveries, in order, and the bell its worker waits on.
#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<VecDeque<Pending>>,
    wake: tokio::sync::Notify,
}

impl Dispatcher {
    /// Opens the outbox and starts one delivery worker per subscription (on the current
    /// tokio runtime), which first delivers what the outbox still holds.
    ///
    /// # Errors
    ///
    /// The outbox's.
    pub fn start(webhooks: Webhooks, outbox_path: &Path) -> io::Result<Arc<Dispatcher>> {
        let (outbox, pending) = Outbox::open(outbox_path)?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(webhooks.retry.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(io::Error::other)?;
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

    /// Enqueues `events` (durably: synced before it returns, so call it off the async
    /// workers) for the subscriptions that want them and wakes their workers; returns how
    /// many deliveries were enqueued.
    ///
    /// # Errors
    ///
    /// The outbox's: nothing was enqueued.
    pub fn publish(&self, events: &[Event]) -> io::Result<usize> {
        let _order = self.publishing.lock().unwrap_or_else(|e| e.into_inner());
        let pending = self.outbox.enqueue(&self.webhooks.subscriptions, events)?;
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

    /// The marks saved by [`Dispatcher::save_marks`] (`<outbox>.marks`), if any.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is not saved marks.
    pub fn saved_marks(&self) -> io::Result<Option<crate::live::Marks>> {
        let path = journal::sibling(self.outbox.path(), "marks");
        match std::fs::read_to_string(&path) {
            Ok(text) => crate::live::Marks::from_json(&text).map(Some).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Saves the marks of the snapshot whose events are all in the outbox, so that the
    /// next start reports what changed while the server was down (written aside, synced,
    /// renamed into place).
    ///
    /// # Errors
    ///
    /// The file system's.
    pub fn save_marks(&self, marks: &crate::live::Marks) -> io::Result<()> {
        journal::replace(
            &journal::sibling(self.outbox.path(), "marks"),
            marks.to_json().as_bytes(),
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
                let t = super::unix_now();
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
    use super::*;
    use std::fs::OpenOptions;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cardex-outbox-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The event ids of the deliveries an outbox holds pending when it is opened again.
    fn pending_after_reopening(path: &Path) -> Vec<String> {
        let (_, pending) = Outbox::open(path).unwrap();
        pending.into_iter().map(|p| p.event.id).collect()
    }

    fn event(n: u32) -> Event {
        Event {
            id: format!("evt_{n}"),
            name: "pokemon.expansions.prices.raw_updated".into(),
            data: crate::live::EventData {
                expansion_ids: vec!["sv1".into()],
            },
        }
    }

    fn sub(id: &str, events: &[&str]) -> Subscription {
        Subscription {
            id: id.into(),
            url: "http://127.0.0.1:1/".into(),
            secret: "whsec_0123456789abcdef".into(),
            events: events.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn the_outbox_keeps_pending_deliveries_in_order_across_reopening() {
        let dir = scratch("order");
        let path = dir.join("webhooks.outbox");
        let subs = [
            sub("all", &["*"]),
            sub("graded", &["pokemon.expansions.prices.graded_updated"]),
        ];
        {
            let (outbox, pending) = Outbox::open(&path).unwrap();
            assert!(pending.is_empty());
            let p = outbox
                .enqueue(&subs, &[event(1), event(2), event(3)])
                .unwrap();
            // Only "all" wants raw price events.
            assert_eq!(p.iter().map(|p| p.seq).collect::<Vec<_>>(), [1, 2, 3]);
            assert!(p.iter().all(|p| p.subscription == "all"));
            outbox.done(1).unwrap();
        }
        // A torn line at the end (a crash inside a write) is dropped.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"done":"#).unwrap();
        drop(f);
        let (outbox, pending) = Outbox::open(&path).unwrap();
        assert_eq!(
            pending
                .iter()
                .map(|p| (p.seq, p.event.id.as_str()))
                .collect::<Vec<_>>(),
            [(2, "evt_2"), (3, "evt_3")]
        );
        // Sequence numbers go on after the highest seen.
        let p = outbox.enqueue(&subs, &[event(4)]).unwrap();
        assert_eq!(p[0].seq, 4);
        drop(outbox);
        // Compacted: only pending lines remain.
        let (_, pending) = Outbox::open(&path).unwrap();
        assert_eq!(pending.len(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        // One server per outbox.
        let (_first, _) = Outbox::open(&path).unwrap();
        let second = Outbox::open(&path).unwrap_err();
        assert_eq!(second.kind(), io::ErrorKind::WouldBlock);
        drop(_first);
        // A broken line in the middle is refused, naming the line.
        std::fs::write(&path, "garbage\n{\"done\":1}\n").unwrap();
        let e = Outbox::open(&path).unwrap_err();
        assert!(e.to_string().contains(":1: not an outbox line"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_grown_outbox_is_compacted_to_its_pending_deliveries() {
        let dir = scratch("grown");
        let path = dir.join("webhooks.outbox");
        let subs = [sub("all", &["*"])];
        let (outbox, _) = Outbox::open(&path).unwrap();
        outbox.inner.lock().unwrap().log.set_floor(1024);
        let events: Vec<Event> = (1..=10).map(event).collect();
        let p = outbox.enqueue(&subs, &events).unwrap();
        let line_len = std::fs::metadata(&path).unwrap().len() / 10;
        assert!(line_len * 10 >= 1024, "lines of {line_len} bytes");
        let lines = || std::fs::read_to_string(&path).unwrap().lines().count();
        // Until the file is four times its pending lines, marks are appended.
        let mut compacted_at = None;
        for seq in 1..=9 {
            let before = lines();
            outbox.done(seq).unwrap();
            if lines() < before && compacted_at.is_none() {
                compacted_at = Some(seq);
            }
        }
        // Lines of over 100 bytes: 10 lines and k marks reach four times 10 − k lines at
        // the eighth mark.
        let at = compacted_at.expect("compacted once the marks outweighed the pending lines");
        assert_eq!(at, 8);
        // Compacted: the pending lines, then the marks written since.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.lines().count() < 10, "{text}");
        let seqs_enqueued = text.lines().filter(|l| l.contains("\"seq\"")).count() as u64;
        assert_eq!(seqs_enqueued, 10 - at);
        // New deliveries go to the new file.
        let more = outbox.enqueue(&subs, &[event(11)]).unwrap();
        assert_eq!(more[0].seq, p.last().unwrap().seq + 1);
        drop(outbox);
        assert!(!journal::sibling(&path, "tmp").exists());
        assert_eq!(pending_after_reopening(&path), ["evt_10", "evt_11"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_outbox_is_compacted_before_the_next_line() {
        let dir = scratch("torn");
        let path = dir.join("webhooks.outbox");
        let subs = [sub("all", &["*"])];
        let (outbox, _) = Outbox::open(&path).unwrap();
        outbox
            .enqueue(&subs, &[event(1), event(2), event(3)])
            .unwrap();
        outbox.done(1).unwrap();
        // A write that broke part-way, and the file cannot be cut back (nor written).
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"do"#).unwrap();
        drop(f);
        outbox.inner.lock().unwrap().log.set_torn(true);
        // The mark goes to a file rewritten from the pending deliveries, not behind the
        // broken bytes (which would make the next start refuse the outbox).
        outbox.done(2).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(r#"{"do{"#), "{text}");
        // Deliveries 2 and 3, then the mark of 2.
        assert_eq!(text.lines().count(), 3, "{text}");
        outbox.enqueue(&subs, &[event(4)]).unwrap();
        drop(outbox);
        assert_eq!(pending_after_reopening(&path), ["evt_3", "evt_4"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn webhooks_files_are_checked() {
        let good = Webhooks {
            subscriptions: vec![sub("a", &["*", "onepiece.expansions.pop_reports.updated"])],
            retry: RetryPolicy::default(),
        };
        assert_eq!(good.check(), Ok(()));
        let with = |f: &dyn Fn(&mut Subscription)| {
            let mut w = good.clone();
            f(&mut w.subscriptions[0]);
            w.check().unwrap_err()
        };
        assert!(
            with(&|s| s.url = "https://x".into()).contains("https:// receivers are not supported")
        );
        assert!(with(&|s| s.url = "ftp://x".into()).contains("http:// URL"));
        assert!(with(&|s| s.url = "http://exa mple/".into()).contains("not a URL"));
        assert!(with(&|s| s.url = "http://h:99999/".into()).contains("not a URL"));
        assert!(with(&|s| s.secret = "whsec_short".into()).contains("secret"));
        assert!(with(&|s| s.id = "a b".into()).contains("`id`"));
        assert!(with(&|s| s.events = vec![]).contains("empty"));
        assert!(with(&|s| s.events = vec!["pokemon.prices".into()]).contains("not an event name"));
        let mut twice = good.clone();
        twice.subscriptions.push(sub("a", &["*"]));
        assert!(twice.check().unwrap_err().contains("used twice"));
        assert!(valid_event_name("lorcana.expansions.prices.graded_updated"));
        assert!(!valid_event_name(".expansions.prices.graded_updated"));
        assert!(!valid_event_name("Pokemon.expansions.prices.raw_updated"));
    }

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
}
