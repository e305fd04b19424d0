//! The `cardex serve` log on stderr: the library's `tracing` events as logfmt lines
//! (`--log-format text`, the default) or JSON lines (`--log-format json`), INFO and
//! above from cardex itself, written by a background thread (tracing-appender's
//! non-blocking writer) so that a request never waits on the terminal or pipe.
//!
//! ```text
//! ts=2026-11-22T15:04:05Z level=info event=listening message=http://127.0.0.1:8080
//! ```

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// logfmt: `ts=… level=info event=… message=… key=value …`.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `event`, `message` and the
    /// event's fields, with the request span's fields under `span`.
    Json,
}

/// Installs the subscriber for the process; the guard flushes the writer when dropped.
pub fn install(format: LogFormat) -> WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking(std::io::stderr());
    let only_cardex = Targets::new().with_target("cardex", Level::INFO);
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    let result = match format {
        LogFormat::Text => tracing_subscriber::registry()
            .with(layer.event_format(Logfmt))
            .with(only_cardex)
            .try_init(),
        LogFormat::Json => tracing_subscriber::registry()
            .with(
                layer
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_target(false),
            )
            .with(only_cardex)
            .try_init(),
    };
    // Only fails when a subscriber is already installed, which main never does twice.
    let _ = result;
    guard
}

/// The logfmt formatter.
struct Logfmt;

/// An event's fields, as text: `event` and `message` first, the rest in order.
#[derive(Default)]
struct Fields {
    event: Option<String>,
    message: Option<String>,
    rest: Vec<(&'static str, String)>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: String) {
        match field.name() {
            "event" => self.event = Some(value),
            "message" => self.message = Some(value),
            name => self.rest.push((name, value)),
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}"));
    }
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

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        write!(
            writer,
            "ts={} level={}",
            cardex::server::rfc3339(std::time::SystemTime::now()),
            event.metadata().level().as_str().to_ascii_lowercase()
        )?;
        if let Some(name) = &fields.event {
            write!(writer, " event={}", quoted(name))?;
        }
        if let Some(message) = &fields.message {
            write!(writer, " message={}", quoted(message))?;
        }
        for (name, value) in &fields.rest {
            write!(writer, " {name}={}", quoted(value))?;
        }
        // The fields of the spans the event happened in (a request's method, path, team),
        // but for a request's own line, which has them all already.
        let own_line = fields.event.as_deref() == Some("request");
        if let Some(scope) = ctx.event_scope().filter(|_| !own_line) {
            for span in scope.from_root() {
                let extensions = span.extensions();
                if let Some(recorded) = extensions.get::<FormattedFields<N>>() {
                    if !recorded.is_empty() {
                        write!(writer, " {recorded}")?;
                    }
                }
            }
        }
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn values_are_quoted_only_when_they_must_be() {
        assert_eq!(quoted("/pokemon/v1/cards"), "/pokemon/v1/cards");
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("x=\"1\""), "\"x=\\\"1\\\"\"");
        assert_eq!(quoted(""), "\"\"");
    }
}
