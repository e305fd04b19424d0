//! Responses: a page of records in the list envelope (`data`, `page`, `page_size`, `count`,
//! `total_count`), and a single record, both holding pre-rendered JSON that is written out
//! without re-serialising.

use std::io::{self, Write};
use std::ops::Range;

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// One page of a list: `{"data": [...], "page", "page_size", "count", "total_count"}`.
///
/// `write_to` streams the envelope; `Serialize` writes the same JSON through serde_json
/// (each record as a [`RawValue`], byte for byte).
///
/// ```
/// let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let page = engine.catalog("onepiece").unwrap()
///     .search(&cardex::SearchRequest::new("printings:PRB01 AND rarity_code:SR").select("name"))?;
/// assert_eq!(page.total_count(), 2);
/// let mut out = Vec::new();
/// page.write_to(&mut out)?;
/// assert_eq!(String::from_utf8(out)?, serde_json::to_string(&page)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// `{"data":[item,item,...]`: the envelope's head and the records, so that the whole
    /// envelope is this and its tail ([`Page::into_json`] appends it in place).
    data: String,
    items: Vec<Range<usize>>,
    ids: Vec<u32>,
    page: u32,
    page_size: u32,
    total_count: u64,
}

impl Page {
    pub(crate) fn new(
        page: u32,
        page_size: u32,
        total_count: u64,
        ids: Vec<u32>,
        records_len: usize,
        render: impl Fn(u32, &mut String),
    ) -> Page {
        // The records (`records_len` bytes at most), their commas, and room for the
        // envelope's tail: one allocation, never grown.
        let mut data = String::with_capacity(records_len + ids.len() + ENVELOPE_HEAD.len() + 96);
        let mut items = Vec::with_capacity(ids.len());
        data.push_str(ENVELOPE_HEAD);
        data.push('[');
        for (i, &id) in ids.iter().enumerate() {
            if i > 0 {
                data.push(',');
            }
            let start = data.len();
            render(id, &mut data);
            items.push(start..data.len());
        }
        data.push(']');
        Page {
            data,
            items,
            ids,
            page,
            page_size,
            total_count,
        }
    }

    /// The page number (from 1).
    pub fn page(&self) -> u32 {
        self.page
    }

    /// The page size asked for.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The number of records on this page.
    pub fn count(&self) -> usize {
        self.items.len()
    }

    /// The number of records matching, over all pages.
    pub fn total_count(&self) -> u64 {
        self.total_count
    }

    /// The records' positions in their collection (default order), as on this page.
    pub fn record_ids(&self) -> &[u32] {
        &self.ids
    }

    /// Each record's JSON.
    pub fn items(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.items.iter().map(|r| &self.data[r.clone()])
    }

    /// The `data` array's JSON.
    pub fn data_json(&self) -> &str {
        &self.data[ENVELOPE_HEAD.len()..]
    }

    /// Appends the envelope's members after `data`, and its closing brace.
    fn push_tail(&self, out: &mut String) {
        use std::fmt::Write as _;
        // A String's `write_fmt` cannot fail.
        let _ = write!(
            out,
            ",\"page\":{},\"page_size\":{},\"count\":{},\"total_count\":{}}}",
            self.page,
            self.page_size,
            self.count(),
            self.total_count
        );
    }

    /// Writes the envelope as compact JSON.
    ///
    /// # Errors
    ///
    /// The writer's errors.
    pub fn write_to<W: Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(self.data.as_bytes())?;
        let mut tail = String::with_capacity(96);
        self.push_tail(&mut tail);
        out.write_all(tail.as_bytes())
    }

    /// The envelope as a compact JSON string.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.data.len() + 96);
        out.push_str(&self.data);
        self.push_tail(&mut out);
        out
    }

    /// The envelope as a compact JSON string, made from the page's own buffer: the
    /// records are not copied again (what a server sends).
    pub fn into_json(mut self) -> String {
        let mut data = std::mem::take(&mut self.data);
        self.push_tail(&mut data);
        data
    }
}

/// The envelope up to its `data` array.
const ENVELOPE_HEAD: &str = "{\"data\":";

/// A record held as JSON text, serialised by serde_json byte for byte.
struct Raw<'a>(&'a str);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

struct Items<'a>(&'a Page);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.count()))?;
        for item in self.0.items() {
            seq.serialize_element(&Raw(item))?;
        }
        seq.end()
    }
}

impl Serialize for Page {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Page", 5)?;
        s.serialize_field("data", &Items(self))?;
        s.serialize_field("page", &self.page)?;
        s.serialize_field("page_size", &self.page_size)?;
        s.serialize_field("count", &self.count())?;
        s.serialize_field("total_count", &self.total_count)?;
        s.end()
    }
}

/// One record: `{"data": {...}}`.
///
/// ```
/// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let item = engine.catalog("onepiece").unwrap().card("OP01-120", &Default::default())?;
/// assert!(item.json().starts_with(r#"{"id":"OP01-120","#));
/// let mut out = Vec::new();
/// item.write_to(&mut out)?;
/// assert_eq!(out, format!(r#"{{"data":{}}}"#, item.json()).into_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    json: String,
    id: u32,
}

impl Item {
    pub(crate) fn new(id: u32, record_len: usize, render: impl Fn(u32, &mut String)) -> Item {
        let mut json = String::with_capacity(record_len);
        render(id, &mut json);
        Item { json, id }
    }

    /// The record's JSON.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The record's position in its collection.
    pub fn record_id(&self) -> u32 {
        self.id
    }

    /// Writes `{"data": ...}` as compact JSON.
    ///
    /// # Errors
    ///
    /// The writer's errors.
    pub fn write_to<W: Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(b"{\"data\":")?;
        out.write_all(self.json.as_bytes())?;
        out.write_all(b"}")
    }

    /// `{"data": ...}` as a compact JSON string.
    pub fn to_json(&self) -> String {
        format!("{{\"data\":{}}}", self.json)
    }
}

impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Item", 1)?;
        s.serialize_field("data", &Raw(&self.json))?;
        s.end()
    }
}
