//! Webhook signatures (feature `webhook`): how the service signs each
//! event it POSTs, and [`verify`] for the receiving side.
//!
//! The header is `X-Service-Signature: t=<unix seconds>,v1=<hex>`, where the hex is
//! HMAC-SHA256 keyed with the subscription's whole secret string (`whsec_…`, prefix
//! included, as UTF-8 bytes) over `"<t>.<raw body>"`: the timestamp, a full stop, then the
//! body bytes exactly as received. The timestamp is signed with the body, so a captured
//! delivery cannot be replayed later than the receiver's tolerance (5 minutes by default).
//! Each delivery attempt is signed afresh with its own `t`.
//!
//! A header may carry several `v1=` signatures (a receiver rotating secrets can accept
//! either, and a sender rotating can send both); [`verify`] accepts the body when any one
//! matches; its hex digits may be in either case. Other keys (`v0=`, future schemes) are
//! ignored, as Stripe's scheme does.
//!
//! ```
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//! use cardex::webhook::{sign, verify, VerifyError, DEFAULT_TOLERANCE};
//!
//! let secret = "whsec_test";
//! let body = br#"{"id":"evt_1","name":"pokemon.expansions.prices.raw_updated","data":{"expansion_ids":["sv1"]}}"#;
//! let now = SystemTime::now();
//! let t = now.duration_since(UNIX_EPOCH).unwrap().as_secs();
//! let header = sign(secret, t, body);
//! assert_eq!(verify(&header, body, secret, now, DEFAULT_TOLERANCE), Ok(t));
//! assert_eq!(verify(&header, b"{}", secret, now, DEFAULT_TOLERANCE), Err(VerifyError::BadSignature));
//! let later = now + Duration::from_secs(600);
//! assert!(matches!(verify(&header, body, secret, later, DEFAULT_TOLERANCE), Err(VerifyError::Stale { .. })));
//! ```

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The name of the signature header.
pub const SIGNATURE_HEADER: &str = "X-Service-Signature";

/// How far a signature's timestamp may be from the receiver's clock by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// Why a delivery was refused by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The header is not `t=<digits>,v1=<64 hex digits>[,...]`; says what is wrong.
    Malformed(&'static str),
    /// The signature is genuine but its timestamp is further from `now` than the tolerance
    /// (a replay, or a badly wrong clock on one side).
    Stale {
        /// The header's timestamp (Unix seconds).
        timestamp: u64,
        /// The receiver's clock (Unix seconds).
        now: u64,
        /// The tolerance, in seconds.
        tolerance: u64,
    },
    /// No `v1` signature matches the body and the secret.
    BadSignature,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Malformed(why) => write!(f, "malformed {SIGNATURE_HEADER} header: {why}"),
            VerifyError::Stale {
                timestamp,
                now,
                tolerance,
            } => write!(
                f,
                "the signature's timestamp {timestamp} is {} s from now ({now}); the tolerance is {tolerance} s",
                timestamp.abs_diff(*now)
            ),
            VerifyError::BadSignature => {
                write!(f, "no signature matches this body and secret")
            }
        }
    }
}

impl std::error::Error for VerifyError {}

/// The MAC over `"<t>.<body>"`, with `t` exactly as written in the header.
fn mac(secret: &str, timestamp: &str, body: &[u8]) -> [u8; 32] {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The `X-Service-Signature` value for `body` sent at `timestamp` (Unix seconds).
pub fn sign(secret: &str, timestamp: u64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp},v1=");
    for byte in mac(secret, &timestamp.to_string(), body) {
        header.push_str(&format!("{byte:02x}"));
    }
    header
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(out)
}

/// Checks a delivery: `header` is the `X-Service-Signature` value, `raw_body` the body
/// bytes exactly as received (before any JSON parsing), `secret` the subscription's
/// secret, `now` the receiver's clock, `tolerance` how far the signed timestamp may be from
/// it either way ([`DEFAULT_TOLERANCE`]). Returns the signed timestamp.
///
/// The signatures are compared in constant time; the timestamp is checked after a
/// signature matched, so [`VerifyError::Stale`] means genuine but too old (or too new).
///
/// # Errors
///
/// [`VerifyError`]: a malformed header, no matching signature, a stale timestamp.
pub fn verify(
    header: &str,
    raw_body: &[u8],
    secret: &str,
    now: SystemTime,
    tolerance: Duration,
) -> Result<u64, VerifyError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let Some((key, value)) = part.trim().split_once('=') else {
            return Err(VerifyError::Malformed("an item without `=`"));
        };
        match key {
            "t" => {
                if timestamp.is_some() {
                    return Err(VerifyError::Malformed("more than one `t=`"));
                }
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(VerifyError::Malformed("`t=` is not a number of seconds"));
                }
                let seconds = value
                    .parse::<u64>()
                    .map_err(|_| VerifyError::Malformed("`t=` is out of range"))?;
                timestamp = Some((value, seconds));
            }
            "v1" => signatures
                .push(unhex(value).ok_or(VerifyError::Malformed("`v1=` is not 64 hex digits"))?),
            _ => {}
        }
    }
    let (t_text, timestamp) = timestamp.ok_or(VerifyError::Malformed("no `t=`"))?;
    if signatures.is_empty() {
        return Err(VerifyError::Malformed("no `v1=`"));
    }
    // Over the digits as sent: a sender that pads `t` still verifies.
    let expected = mac(secret, t_text, raw_body);
    let matched = signatures
        .iter()
        .fold(subtle::Choice::from(0), |any, s| any | s.ct_eq(&expected));
    if !bool::from(matched) {
        return Err(VerifyError::BadSignature);
    }
    let now = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if timestamp.abs_diff(now) > tolerance.as_secs() {
        return Err(VerifyError::Stale {
            timestamp,
            now,
            tolerance: tolerance.as_secs(),
        });
    }
    Ok(timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"id":"evt_1","name":"onepiece.expansions.pop_reports.updated","data":{"expansion_ids":["OP01"]}}"#;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_known_vector() {
        // Computed independently with Python's hmac module:
        // hmac.new(b"whsec_abc", b"1700000000.{}", hashlib.sha256).hexdigest()
        assert_eq!(
            sign("whsec_abc", 1_700_000_000, b"{}"),
            "t=1700000000,v1=bad9ac117e973d721c232d46744158d75e3f1b44e36771e13d01b9e6a580bc72"
        );
    }

    #[test]
    fn tampering_a_wrong_secret_and_staleness_are_refused() {
        let t = 1_800_000_000;
        let header = sign("whsec_right", t, BODY);
        let tol = DEFAULT_TOLERANCE;
        assert_eq!(verify(&header, BODY, "whsec_right", at(t), tol), Ok(t));
        assert_eq!(
            verify(&header, BODY, "whsec_right", at(t + 300), tol),
            Ok(t)
        );
        assert_eq!(
            verify(&header, BODY, "whsec_right", at(t - 300), tol),
            Ok(t)
        );
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify(&header, &tampered, "whsec_right", at(t), tol),
            Err(VerifyError::BadSignature)
        );
        assert_eq!(
            verify(&header, BODY, "whsec_wrong", at(t), tol),
            Err(VerifyError::BadSignature)
        );
        assert_eq!(
            verify(&header, BODY, "whsec_right", at(t + 301), tol),
            Err(VerifyError::Stale {
                timestamp: t,
                now: t + 301,
                tolerance: 300
            })
        );
        assert!(matches!(
            verify(&header, BODY, "whsec_right", at(t - 301), tol),
            Err(VerifyError::Stale { .. })
        ));
        // Changing the timestamp breaks the signature: it is signed with the body.
        let moved = header.replace(&format!("t={t}"), &format!("t={}", t + 1));
        assert_eq!(
            verify(&moved, BODY, "whsec_right", at(t), tol),
            Err(VerifyError::BadSignature)
        );
    }

    #[test]
    fn the_timestamp_is_signed_as_written() {
        // A sender that pads `t` with a zero signs the padded digits; that verifies.
        let t = 1_800_000_000u64;
        let padded = format!("0{t}");
        let mut header = format!("t={padded},v1=");
        for b in mac("whsec_x", &padded, BODY) {
            header.push_str(&format!("{b:02x}"));
        }
        assert_eq!(
            verify(&header, BODY, "whsec_x", at(t), DEFAULT_TOLERANCE),
            Ok(t)
        );
    }

    #[test]
    fn several_signatures_and_unknown_schemes() {
        let t = 1_800_000_000;
        let good = sign("whsec_new", t, BODY);
        let other = sign("whsec_old", t, BODY);
        let v1_of = |h: &str| h.split_once(",v1=").unwrap().1.to_string();
        let both = format!("t={t},v0=abc,v1={},v1={}", v1_of(&other), v1_of(&good));
        assert_eq!(
            verify(&both, BODY, "whsec_new", at(t), DEFAULT_TOLERANCE),
            Ok(t)
        );
        assert_eq!(
            verify(&both, BODY, "whsec_old", at(t), DEFAULT_TOLERANCE),
            Ok(t)
        );
    }

    #[test]
    fn malformed_headers_say_why() {
        let now = at(1_800_000_000);
        for (header, why) in [
            ("", "an item without `=`"),
            ("v1=00", "`v1=` is not 64 hex digits"),
            ("t=12", "no `v1=`"),
            ("t=abc,v1=00", "`t=` is not a number of seconds"),
            ("t=-5,v1=00", "`t=` is not a number of seconds"),
            ("t=99999999999999999999999,v1=00", "`t=` is out of range"),
            ("t=1,t=2", "more than one `t=`"),
            (&format!("v1={}", "0".repeat(64)), "no `t=`"),
            (
                &format!("t=1,v1={}", "g".repeat(64)),
                "`v1=` is not 64 hex digits",
            ),
        ] {
            assert_eq!(
                verify(header, BODY, "s", now, DEFAULT_TOLERANCE),
                Err(VerifyError::Malformed(why)),
                "{header}"
            );
        }
        assert!(VerifyError::Malformed("no `t=`")
            .to_string()
            .contains("X-Service-Signature"));
    }
}
