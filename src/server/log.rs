//! Structured logs: one logfmt line per request and per server event, on stderr.
//!
//! ```text
//! ts=2026-11-22T15:04:05Z level=info event=request method=GET path=/pokemon/v1/cards status=200 team=acme ms=0.412
//! ```
//!
//! Only the path is logged (not the query string), and of the headers only the team id:
//! API keys never reach a log.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::Method;

/// Request lines waiting to be written: one `write` per batch rather than per request
/// (a write to a pipe or terminal costs more than answering a search). [`flush`] runs on
/// the server's 100 ms tick, before every event line and at shutdown, and a full buffer
/// flushes itself.
static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// How many bytes of request lines may wait before they are written.
const FLUSH_AT: usize = 64 * 1024;

/// Writes the waiting request lines to stderr.
pub(super) fn flush() {
    let batch = {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return;
        }
        std::mem::take(&mut *pending)
    };
    let _ = std::io::stderr().write_all(&batch);
}

/// Logs one request (buffered, see [`PENDING`]).
pub(super) fn request(
    method: &Method,
    path: &str,
    status: u16,
    team: Option<&str>,
    took: Duration,
) {
    let full = {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(
            pending,
            "ts={} level=info event=request method={method} path={} status={status} team={} ms={:.3}",
            rfc3339(SystemTime::now()),
            quoted(path),
            team.unwrap_or("-"),
            took.as_secs_f64() * 1000.0,
        );
        pending.len() >= FLUSH_AT
    };
    if full {
        flush();
    }
}

/// Logs a server event (`listening`, `open_mode`, `stopped`, `state_error`, ...), after
/// the request lines before it, at once.
pub(super) fn event(name: &str, message: &str) {
    flush();
    let level = if name.ends_with("error") || name == "panic" {
        "error"
    } else {
        "info"
    };
    let line = format!(
        "ts={} level={level} event={name} message={}\n",
        rfc3339(SystemTime::now()),
        quoted(message)
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// A logfmt value: bare when it has no space, quote or `=`, else quoted with escapes.
fn quoted(value: &str) -> String {
    if !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '=' || c.is_control())
    {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A time as RFC 3339 UTC, to the second (`2026-11-22T15:04:05Z`).
pub(super) fn rfc3339(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_quoting() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_359_845), "2026-11-22T15:04:05Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(quoted("/pokemon/v1/cards"), "/pokemon/v1/cards");
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("x=\"1\""), "\"x=\\\"1\\\"\"");
        assert_eq!(quoted(""), "\"\"");
    }
}
