//! Writing records out: the stored JSON copied as is, less the optional parts a request
//! did not `include`, and only the `select`ed top-level members when asked.

use super::Collection;
use crate::json::walk::members;
use crate::json::write::{copy_without, Include};

/// The top-level members to keep (`select=id,name`); `id` is always kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Select {
    keys: Vec<String>,
}

impl Select {
    pub(crate) fn new(keys: Vec<String>) -> Select {
        Select { keys }
    }

    fn keeps(&self, key: &str) -> bool {
        key == "id" || self.keys.iter().any(|k| k == key)
    }
}

/// Appends record `id` of `collection` to `out` as JSON.
pub(crate) fn render_record(
    collection: &Collection,
    id: u32,
    select: Option<&Select>,
    include: Include,
    out: &mut String,
) {
    collection.with_doc(id, |doc| {
        write_record(doc, collection.strips(id), select, include, out)
    });
}

/// Appends `doc`, whose marks are `strips`, to `out`.
fn write_record(
    doc: &str,
    strips: &[crate::json::write::Strip],
    select: Option<&Select>,
    include: Include,
    out: &mut String,
) {
    let Some(select) = select else {
        copy_without(doc, 0..doc.len(), strips, include, out);
        return;
    };
    out.push('{');
    let mut first = true;
    for (key, range) in members(doc) {
        if select.keeps(&key) {
            if !first {
                out.push(',');
            }
            first = false;
            copy_without(doc, range, strips, include, out);
        }
    }
    out.push('}');
}
