//! JSON as cardex needs it: a one-pass transcoder from snapshot records to compact JSON
//! ([`transcode`], noting where the parts the load rules need are), the compact writer and
//! the marks of the members a request may leave out ([`write`](mod@write)), and a walker over that
//! compact output ([`walk`]) used to index records and to read single fields back.
//!
//! Records are read once (by hand, or by serde_json where the hand-written reader gives
//! up) and written once in compact form, with no tree in between; keys keep their order. The compact text is what cardex serves and what it
//! indexes: the served card and the searched card are the same bytes.

pub(crate) mod elements;
pub(crate) mod scan;
pub(crate) mod transcode;
pub(crate) mod walk;
pub(crate) mod write;

/// The non-empty string `id` at the top level of a record's JSON text, to name the record
/// in an error. The text is parsed whole (a tree), so this is for error paths only.
pub(crate) fn record_id(text: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|record| Some(record.get("id")?.as_str()?.to_owned()))
        .filter(|id| !id.is_empty())
}

/// A file's text without the UTF-8 byte order mark some editors write first, which JSON
/// readers may ignore (RFC 8259, 8.1) and cardex does.
pub(crate) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{FEFF}').unwrap_or(text)
}

/// The kind of JSON value a file's text holds, told from its first byte past whitespace
/// (`Some(Array)` for `[`); `None` for an empty text or a byte no JSON value starts with,
/// for the parser to report with its position.
pub(crate) fn first_value_kind(text: &str) -> Option<transcode::Kind> {
    let first = text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .as_bytes()
        .first()
        .copied()?;
    matches!(
        first,
        b'[' | b'{' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
    )
    .then(|| walk::kind_at(Some(first)))
}

/// Where serde_json's error `e` on `text` is, as 1-based line and column (in bytes, as
/// serde_json counts them). serde_json gives column 0 for an error met just after a line
/// break (a raw line break in a string, the end of an empty text): that is the line break
/// itself, at the end of the line before.
pub(crate) fn error_position(text: &str, e: &serde_json::Error) -> (usize, usize) {
    let (line, column) = (e.line(), e.column());
    if column > 0 {
        return (line, column);
    }
    match line
        .checked_sub(2)
        .and_then(|before| text.split('\n').nth(before))
    {
        Some(previous) => (line - 1, previous.len() + 1),
        None => (line.max(1), 1),
    }
}

/// serde_json's message for `e` without the " at line L column C" it appends, for an
/// error that shows the position in its own place.
pub(crate) fn error_message(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    }
}

/// Every `.json` file of the bundled `data/` snapshot, with its text (for tests).
#[cfg(test)]
pub(crate) fn bundled_json_files() -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data"
    ))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, text));
            }
        }
    }
    files
}
