//! The outbox: the durable queue of deliveries. An event is written here (and synced)
//! before any attempt to deliver it, and marked done only after a 2xx answer or when it is
//! given up, so a crash or restart mid-retry sends it again.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::subscriptions::Subscription;
use crate::server::journal::{self, AppendLog};
use crate::Event;

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
    /// The pending deliveries' subscription and event id, by sequence number, and as a
    /// set (to find an event already pending for a subscription).
    pending_events: BTreeMap<u64, (String, String)>,
    pending_keys: HashSet<(String, String)>,
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
            pending_events: pending
                .iter()
                .map(|p| (p.seq, (p.subscription.clone(), p.event.id.clone())))
                .collect(),
            pending_keys: pending
                .iter()
                .map(|p| (p.subscription.clone(), p.event.id.clone()))
                .collect(),
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
    /// returns; returns them with their sequence numbers. An event already pending for a
    /// subscription (the same id) is not enqueued for it again.
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
                if inner
                    .pending_keys
                    .contains(&(s.id.clone(), event.id.clone()))
                {
                    continue;
                }
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
            let key = (p.subscription.clone(), p.event.id.clone());
            inner.pending_keys.insert(key.clone());
            inner.pending_events.insert(p.seq, key);
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
        if let Some(key) = inner.pending_events.remove(&seq) {
            inner.pending_keys.remove(&key);
        }
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

#[cfg(test)]
mod tests {
    use super::super::subscriptions::tests::sub;
    use super::*;
    use std::fs::OpenOptions;

    fn scratch(name: &str) -> PathBuf {
        crate::server::testing::scratch("outbox", name)
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
            data: crate::EventData {
                expansion_ids: vec!["sv1".into()],
            },
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
    fn an_event_already_pending_for_a_subscription_is_not_enqueued_again() {
        let dir = scratch("again");
        let path = dir.join("webhooks.outbox");
        let subs = [sub("all", &["*"]), sub("other", &["*"])];
        let (outbox, _) = Outbox::open(&path).unwrap();
        assert_eq!(outbox.enqueue(&subs, &[event(1)]).unwrap().len(), 2);
        outbox.done(1).unwrap();
        drop(outbox);
        // Reopened: still pending for "other" only; the same event again goes to "all"
        // (delivered already: the receiver de-duplicates by id) but not to "other".
        let (outbox, pending) = Outbox::open(&path).unwrap();
        assert_eq!(pending.len(), 1);
        let again = outbox.enqueue(&subs, &[event(1), event(2)]).unwrap();
        let got: Vec<(&str, &str)> = again
            .iter()
            .map(|p| (p.subscription.as_str(), p.event.id.as_str()))
            .collect();
        assert_eq!(
            got,
            [("all", "evt_1"), ("all", "evt_2"), ("other", "evt_2")]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
