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
