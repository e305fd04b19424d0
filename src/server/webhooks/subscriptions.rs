//! Subscriptions: the webhooks file, which says who gets which events and how failed
//! deliveries are retried, read and checked whole before the server starts.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::ChangeKind;

/// Why a webhooks file was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum WebhooksError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file is not JSON of the webhooks file's shape.
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why, as serde_json says it.
        source: serde_json::Error,
    },
    /// The file is well-formed, but a subscription or the retry policy is not valid.
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which subscription (or `retry`) and why.
        problem: String,
    },
}

impl fmt::Display for WebhooksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WebhooksError::Read { path, source } => {
                write!(f, "the webhooks file {}: {source}", path.display())
            }
            WebhooksError::Parse { path, source } => {
                write!(f, "the webhooks file {}: {source}", path.display())
            }
            WebhooksError::Invalid { path, problem } => {
                write!(f, "the webhooks file {}: {problem}", path.display())
            }
        }
    }
}

// The message includes its cause's, so `source()` is `None`: a reporter that prints the
// chain of causes prints each message once.
impl std::error::Error for WebhooksError {}

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
    /// Where events are POSTed: an `http://` or `https://` URL.
    pub url: String,
    /// The signing secret, `whsec_` and at least 16 more characters.
    pub secret: String,
    /// The event names wanted (`<catalog>.expansions.prices.raw_updated`, ...), or `"*"`
    /// for all.
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

/// Whether `name` is a webhook event name: `<catalog>.expansions.…`, one per [`ChangeKind`].
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
    /// A [`WebhooksError`] naming the file and what is wrong: unreadable, not JSON of this
    /// shape, a bad or repeated id, a URL that is not `http://` or `https://`, a short secret, an unknown
    /// event.
    pub fn read(path: &Path) -> Result<Webhooks, WebhooksError> {
        let text = std::fs::read_to_string(path).map_err(|source| WebhooksError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        // A byte order mark first is read past, as in snapshot and accounts files.
        let webhooks: Webhooks =
            serde_json::from_str(crate::json::without_bom(&text)).map_err(|source| {
                WebhooksError::Parse {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        webhooks.check().map_err(|problem| WebhooksError::Invalid {
            path: path.to_path_buf(),
            problem,
        })?;
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
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {}
                Ok(_) => {
                    return Err(format!(
                        "{it}: `url` must be an http:// or https:// URL with a host"
                    ))
                }
                Err(e) => return Err(format!("{it}: `url` is not a URL: {e}")),
            }
            let more = s
                .secret
                .strip_prefix("whsec_")
                .map(|rest| rest.chars().count());
            if more.is_none_or(|n| n < 16) {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A subscription to `events`, at an address nothing listens on.
    pub(in crate::server::webhooks) fn sub(id: &str, events: &[&str]) -> Subscription {
        Subscription {
            id: id.into(),
            url: "http://127.0.0.1:1/".into(),
            secret: "whsec_0123456789abcdef".into(),
            events: events.iter().map(|e| e.to_string()).collect(),
        }
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
        let mut tls = good.clone();
        tls.subscriptions[0].url = "https://hooks.example.com/cardex".into();
        assert_eq!(tls.check(), Ok(()));
        assert!(with(&|s| s.url = "ftp://x".into()).contains("http:// or https:// URL"));
        assert!(with(&|s| s.url = "http://exa mple/".into()).contains("not a URL"));
        assert!(with(&|s| s.url = "http://h:99999/".into()).contains("not a URL"));
        assert!(with(&|s| s.secret = "whsec_short".into()).contains("secret"));
        // Characters, not bytes: six three-byte characters are six.
        assert!(with(&|s| s.secret = "whsec_ああああああ".into()).contains("secret"));
        let mut wide = good.clone();
        wide.subscriptions[0].secret = "whsec_ああああああああああああああああ".into();
        assert_eq!(wide.check(), Ok(()));
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
    fn a_file_that_cannot_be_read_or_parsed_is_a_typed_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("cardex-webhooks-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        let e = Webhooks::read(&missing).unwrap_err();
        assert!(matches!(e, WebhooksError::Read { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("the webhooks file {}", missing.display())),
            "{e}"
        );
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "{\"subscriptions\": [").unwrap();
        let e = Webhooks::read(&broken).unwrap_err();
        assert!(matches!(e, WebhooksError::Parse { .. }), "{e:?}");
        std::fs::write(&broken, r#"{"subscriptions": [{"id": "a", "url": "ftp://x", "secret": "whsec_0123456789abcdef", "events": ["*"]}]}"#).unwrap();
        let e = Webhooks::read(&broken).unwrap_err();
        assert!(matches!(e, WebhooksError::Invalid { .. }), "{e:?}");
        assert!(e.to_string().contains("http:// or https:// URL"), "{e}");
        let good = r#"{"subscriptions": [{"id": "a", "url": "https://x", "secret": "whsec_0123456789abcdef", "events": ["*"]}]}"#;
        std::fs::write(&broken, format!("\u{FEFF}{good}")).unwrap();
        assert_eq!(Webhooks::read(&broken).unwrap().subscriptions.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
