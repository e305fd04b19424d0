//! The in-memory store of one collection (a catalog's cards, or its expansions): every
//! record's served JSON, written once at load, in default order, so that record ids
//! (`u32`) are positions in that order (kept plain or compressed, see [`texts`]); the
//! index over it; the id column; and the "all" set `0..n`.

mod nested;
mod render;
mod sort;
mod texts;

pub(crate) use nested::{Nested, NO_PARENT};

pub(crate) use render::{render_record, Select};
pub(crate) use sort::{sorted_page, Counted, OrderKey, SortColumns};
pub use texts::StoreKind;
// The `/v2` renderings' store (the server's).
#[cfg(feature = "server")]
pub(crate) use texts::TextList;
use texts::{plain_text, Packed, Texts};

use std::borrow::Cow;

use roaring::RoaringBitmap;

use std::sync::{Arc, OnceLock};

use crate::index::{self, FieldId, Index, Postings, Vocab, VocabBuilder};
use crate::json::walk::{values_at, Scalar};
use crate::json::write::Strip;
use crate::par;
use crate::schema::{FieldInfo, Schema};
use crate::text::fold;

/// A buffer of records' served JSON and their marks, as the loader hands it to
/// [`Collection::new`].
#[derive(Debug)]
pub(crate) struct Batch {
    /// The records' JSON, one after the other.
    pub text: String,
    /// The records' marks, with offsets relative to their record's start.
    pub strips: Vec<Strip>,
}

/// Where one record handed to [`Collection::new`] is in its batch.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// The batch's number.
    pub batch: u32,
    /// The record's JSON: `len` bytes from `start` in the batch's text.
    pub start: u32,
    pub len: u32,
    /// The record's marks in the batch's strips.
    pub strips: std::ops::Range<u32>,
}

/// A record as the loader holds it, which knows its [`Place`].
pub(crate) trait Placed {
    /// Where the record is.
    fn place(&self) -> Place;
}

/// Where a record's JSON is: a buffer and a byte range in it.
#[derive(Debug, Clone, Copy, Default)]
struct DocRef {
    buffer: u32,
    start: u32,
    len: u32,
}

/// A record's `id` as a slice of its JSON: `len` bytes from byte `start` (the id column of
/// a plain store).
/// [`IdSpan::NONE`] when the id is not a plain string there (escaped, not a string, or
/// missing, or too far in): then it is read from the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdSpan {
    start: u16,
    len: u16,
}

impl IdSpan {
    const NONE: IdSpan = IdSpan {
        start: u16::MAX,
        len: u16::MAX,
    };

    /// Where `doc`'s `id` ([`id_in`]) is, when it is a slice of `doc`.
    fn of(doc: &str) -> IdSpan {
        let Cow::Borrowed(id) = id_in(doc) else {
            return IdSpan::NONE;
        };
        // An empty id (or none) is read from the JSON; so is one not in `doc` itself.
        let start = (id.as_ptr() as usize).checked_sub(doc.as_ptr() as usize);
        let in_doc = start.is_some_and(|at| doc.get(at..at + id.len()) == Some(id));
        match (start.map(u16::try_from), u16::try_from(id.len())) {
            (Some(Ok(start)), Ok(len)) if in_doc && len > 0 && len < u16::MAX => {
                IdSpan { start, len }
            }
            _ => IdSpan::NONE,
        }
    }
}

/// The first string at `id` in `doc` (empty when there is none): a record's id.
fn id_in(doc: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed("");
    values_at(doc, &["id"], &mut |v| {
        if let Scalar::Str(s) = v {
            out = s;
        }
        false
    });
    out
}

/// Records of one kind, in default order, with their index: record id `i` is the `i`-th
/// record in default order, and its served JSON is [`Collection::doc`].
///
/// ```
/// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let cards = engine.catalog("onepiece").unwrap().cards();
/// let first = cards.find("OP01-001").expect("a bundled card");
/// assert_eq!(cards.record_id(first), "OP01-001");
/// assert!(cards.doc(first).starts_with(r#"{"id":"OP01-001""#));
/// assert_eq!(cards.all().len(), cards.len() as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Collection {
    /// The records' JSON, written at load a chunk of records per buffer (shared with the
    /// collections of their array elements, whose texts are slices of it), plain or
    /// compressed.
    texts: Texts,
    /// Where each record's text is in the plain buffers (where it was, once compressed).
    docs: Vec<DocRef>,
    /// `strips[strip_starts[i]..strip_starts[i + 1]]` are record `i`'s marks; empty when no
    /// record has any.
    strip_starts: Vec<u32>,
    strips: Vec<Strip>,
    index: Index,
    all: RoaringBitmap,
    id_field: Option<FieldId>,
    /// The records' ids: [`Collection::record_id`] is a slice, not a walk of the JSON.
    /// Empty in a collection of elements.
    ids: Ids,
    sort_columns: SortColumns,
    /// Per field, its values as written (not folded), built on the first `^` query.
    literals: Box<[OnceLock<Vocab>]>,
    /// The elements of the records' arrays of objects, by path (empty in a collection of
    /// elements: the records' collection lists every depth).
    nested: Vec<Nested>,
    /// Whether this is a collection of the elements of an array of objects.
    holds_elements: bool,
}

impl Collection {
    /// Builds the store from records already in default order, whose data is in
    /// `batches`.
    pub(crate) fn new<R: Placed + Sync>(batches: Vec<Batch>, records: Vec<R>) -> Collection {
        let n = records.len();
        let mut strip_starts = Vec::new();
        let mut strips = Vec::new();
        if batches.iter().any(|b| !b.strips.is_empty()) {
            strip_starts.reserve(n + 1);
            strip_starts.push(0);
            for record in &records {
                let place = record.place();
                let batch = &batches[place.batch as usize].strips;
                strips.extend_from_slice(
                    &batch[place.strips.start as usize..place.strips.end as usize],
                );
                strip_starts.push(strips.len() as u32);
            }
        }
        let docs = par::map_slice(&records, |record| {
            let place = record.place();
            DocRef {
                buffer: place.batch,
                start: place.start,
                len: place.len,
            }
        });
        let buffers: Arc<Vec<String>> = Arc::new(batches.into_iter().map(|b| b.text).collect());
        // Each record's text and id in one pass: slicing a text reads its first and last
        // bytes, a cache miss each at this size, and the id is at its start.
        let (texts, ids): (Vec<&str>, Vec<IdSpan>) = par::map_slice(&docs, |d| {
            let text = plain_text(&buffers, *d);
            (text, IdSpan::of(text))
        })
        .into_iter()
        .unzip();
        let (index, nested) = nested::build(&buffers, &docs, &texts);
        // Dropped after the index is built, not before: freeing a large block makes glibc
        // raise its mmap threshold, and the builder's buffers would then come from the
        // heap and stay resident (see `par::Pool`).
        drop(texts);
        drop(records);
        let mut all = RoaringBitmap::new();
        all.insert_range(0..n as u32);
        let literals = (0..index.fields().count())
            .map(|_| OnceLock::new())
            .collect();
        Collection {
            literals,
            id_field: index.lookup("id"),
            ids: Ids::Spans(ids),
            texts: Texts::Plain(buffers),
            docs,
            strip_starts,
            strips,
            index,
            all,
            sort_columns: SortColumns::default(),
            nested,
            holds_elements: false,
        }
    }

    /// The elements `docs` (slices of `buffers`) of the array of objects at `path` as a
    /// collection of their own, indexed under paths relative to an element, except what
    /// is under `inner` (the relative paths of the arrays of objects inside them, whose
    /// elements have collections of their own).
    fn of_elements(
        buffers: Arc<Vec<String>>,
        docs: Vec<DocRef>,
        path: &str,
        inner: &[&str],
    ) -> Collection {
        let texts: Vec<&str> = par::map_slice(&docs, |d| plain_text(&buffers, *d));
        let index = index::build_at(&texts, &format!("{path}."), inner);
        drop(texts);
        Collection::of_indexed_elements(buffers, docs, index)
    }

    /// The elements `docs` (slices of `buffers`) of an array of objects as a collection of
    /// their own, with their index.
    fn of_indexed_elements(
        buffers: Arc<Vec<String>>,
        docs: Vec<DocRef>,
        index: Index,
    ) -> Collection {
        let mut all = RoaringBitmap::new();
        all.insert_range(0..docs.len() as u32);
        let literals = (0..index.fields().count())
            .map(|_| OnceLock::new())
            .collect();
        Collection {
            literals,
            id_field: None,
            ids: Ids::Spans(Vec::new()),
            texts: Texts::Plain(buffers),
            docs,
            strip_starts: Vec::new(),
            strips: Vec::new(),
            index,
            all,
            sort_columns: SortColumns::default(),
            nested: Vec::new(),
            holds_elements: true,
        }
    }

    /// The elements of the records' arrays of objects, sorted by path.
    pub(crate) fn nested(&self) -> &[Nested] {
        &self.nested
    }

    /// Whether the field at `path` is inside an array of objects: one of this collection's
    /// (see [`Self::enclosing_array`]), or the one whose elements this collection holds.
    pub(crate) fn in_object_array(&self, path: &str) -> bool {
        self.holds_elements || self.enclosing_array(path).is_some()
    }

    /// The nearest array of objects of this collection holding the field at `path`: its
    /// path, its number in [`Self::nested`], and the field's path relative to an element.
    pub(crate) fn enclosing_array<'p>(&self, path: &'p str) -> Option<(&'p str, usize, &'p str)> {
        let mut head = path;
        while let Some((prefix, _)) = head.rsplit_once('.') {
            if let Some(space) = self.nested_path(prefix) {
                return Some((prefix, space, &path[prefix.len() + 1..]));
            }
            head = prefix;
        }
        None
    }

    /// The number in [`Self::nested`] of the array-of-objects path `path`, if it is one.
    pub(crate) fn nested_path(&self, path: &str) -> Option<usize> {
        self.nested.binary_search_by(|n| (*n.path).cmp(path)).ok()
    }

    /// [`Self::nested_path`] of `prefix` (as the records spell it) followed by `typed`, in
    /// any spelling a query may use ([`crate::naming::names_path`]).
    pub(crate) fn nested_path_named(&self, prefix: &str, typed: &str) -> Option<usize> {
        let snake = crate::naming::snake_case(typed);
        self.nested_path(&format!("{prefix}{typed}"))
            .or_else(|| self.nested_path(&format!("{prefix}{snake}")))
            .or_else(|| {
                // Only a name that names one array under `prefix` (see `Schema::find`).
                crate::naming::the_only((0..self.nested.len()).filter(|&i| {
                    self.nested[i]
                        .path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| crate::naming::names_path(rest, typed))
                }))
            })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Every record id, `0..n` (built with `insert_range`, not `RoaringBitmap::full()`).
    pub fn all(&self) -> &RoaringBitmap {
        &self.all
    }

    /// The index over the records.
    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    /// Keeps flat twins of `sets` in the index, for counting ANDs with them (a catalog's
    /// language scopes: they must stay where they are, unchanged, while this collection
    /// exists).
    pub(crate) fn add_twins_of<'a>(&mut self, sets: impl IntoIterator<Item = &'a RoaringBitmap>) {
        self.index.add_twins_of(sets);
    }

    /// The fields of the records, as requests name them.
    pub(crate) fn schema(&self) -> Schema<'_> {
        Schema::new(&self.index)
    }

    /// Every field that occurs in the records, by path: what `q`, `order_by` and `select`
    /// can name.
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let cards = engine.catalog("onepiece").unwrap().cards();
    /// let rarity = cards.fields().find(|f| f.path == "rarity_code").unwrap();
    /// assert_eq!(rarity.kind, cardex::FieldKind::Keyword);
    /// assert!(rarity.holds_values && rarity.records as usize == cards.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = FieldInfo<'_>> + '_ {
        self.schema().fields()
    }

    /// The records holding the folded value `folded` at the keyword field `path`, if any.
    pub(crate) fn holding(&self, path: &str, folded: &str) -> Option<Postings<'_>> {
        let field = self.index.lookup(path)?;
        self.index.field(field).terms().get(folded)
    }

    /// The records whose keyword field `path` holds `id`, the id of a record of `owners`
    /// (an expansion's, in cards' `printings` or `expansion_id`): by the folded index,
    /// unless another of `owners`' ids folds alike (`ab` and `AB`), when as written.
    pub(crate) fn holding_id_of(
        &self,
        path: &str,
        id: &str,
        owners: &Collection,
    ) -> Option<Postings<'_>> {
        let folded = fold(id);
        if owners.id_folds_shared(&folded) {
            let field = self.index.lookup(path)?;
            self.literal_values(field).get(id)
        } else {
            self.holding(path, &folded)
        }
    }

    /// Whether more than one record's id folds to `folded` (ids that differ in case only).
    fn id_folds_shared(&self, folded: &str) -> bool {
        self.id_field
            .and_then(|field| self.index.field(field).terms().get(folded))
            .is_some_and(|records| records.len() > 1)
    }

    /// The distinct folded values at the keyword field `path`, in order.
    pub(crate) fn keyword_values(&self, path: &str) -> Vec<String> {
        self.index
            .lookup(path)
            .map(|f| {
                let terms = self.index.field(f).terms();
                terms.iter().map(|(term, _)| term.to_string()).collect()
            })
            .unwrap_or_default()
    }

    /// Keeps the records' JSON compressed ([`StoreKind::Compressed`]), the elements' texts
    /// with it; the ids move to a column of their own. Nothing changes once compressed.
    pub(crate) fn compress(&mut self) {
        let Some(buffers) = self.texts.plain().cloned() else {
            return;
        };
        let column = IdColumn::new((0..self.len() as u32).map(|id| self.record_id(id)));
        let packed = Texts::Packed(Arc::new(Packed::new(&buffers, &self.docs)));
        for nested in &mut self.nested {
            nested.elements.texts = packed.clone();
        }
        self.texts = packed;
        self.ids = Ids::Column(column);
    }

    /// The served JSON of record `id` (with every optional part): a slice of the store,
    /// or decompressed from a compressed one.
    ///
    /// # Panics
    ///
    /// When `id` is not a record of this collection (`id >= self.len()`).
    pub fn doc(&self, id: u32) -> Cow<'_, str> {
        // A record of the records' collection is block `id` of a compressed store.
        let block = (!self.holds_elements).then_some(id);
        self.texts.get(self.docs[id as usize], block)
    }

    /// Calls `f` with the served JSON of record `id` ([`Self::doc`] without allocating).
    pub(crate) fn with_doc<R>(&self, id: u32, f: impl FnOnce(&str) -> R) -> R {
        // A record of the records' collection is block `id` of a compressed store.
        let block = (!self.holds_elements).then_some(id);
        self.texts.with(self.docs[id as usize], block, f)
    }

    /// The length of [`Self::doc`] in bytes (known without reading it).
    ///
    /// # Panics
    ///
    /// When `id` is not a record of this collection (`id >= self.len()`).
    pub fn doc_len(&self, id: u32) -> usize {
        self.docs[id as usize].len as usize
    }

    pub(crate) fn strips(&self, id: u32) -> &[Strip] {
        if self.strip_starts.is_empty() {
            return &[];
        }
        let i = id as usize;
        &self.strips[self.strip_starts[i] as usize..self.strip_starts[i + 1] as usize]
    }

    /// Calls `f` with every scalar of record `id` at `path` until it returns `false`.
    pub(crate) fn values(&self, id: u32, path: &[&str], f: &mut dyn FnMut(Scalar<'_>) -> bool) {
        self.with_doc(id, |doc| values_at(doc, path, &mut |v| f(v)));
    }

    /// The record's `id`, a few nanoseconds: in a plain store a slice of its JSON (owned
    /// only when the JSON escapes a character of it), in a compressed one a slice of the
    /// id column.
    ///
    /// # Panics
    ///
    /// When `id` is not a record of this collection (`id >= self.len()`).
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let cards = engine.catalog("onepiece").unwrap().cards();
    /// let first = cards.record_id(0);
    /// assert!(matches!(first, std::borrow::Cow::Borrowed(_)));
    /// assert!(cards.doc(0).starts_with(&format!(r#"{{"id":"{first}""#)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_id(&self, id: u32) -> Cow<'_, str> {
        match (&self.ids, &self.texts) {
            (Ids::Column(column), _) => Cow::Borrowed(column.get(id)),
            (Ids::Spans(spans), Texts::Plain(buffers)) => {
                let doc = self.docs[id as usize];
                if let Some(&span) = spans.get(id as usize).filter(|&&s| s != IdSpan::NONE) {
                    // Sliced from the buffer, not from the record's text: only the id's
                    // bytes are read (the span lies inside the record, checked when it
                    // was made).
                    let start = doc.start as usize + usize::from(span.start);
                    return Cow::Borrowed(
                        &buffers[doc.buffer as usize][start..start + usize::from(span.len)],
                    );
                }
                id_in(plain_text(buffers, doc))
            }
            // The elements of a compressed store, which have no id column.
            (Ids::Spans(_), Texts::Packed(_)) => {
                Cow::Owned(self.with_doc(id, |doc| id_in(doc).into_owned()))
            }
        }
    }

    /// The record whose `id` is `wanted`: an exact match, else the only record whose id
    /// folds to the same text (`SV1-1` finds `sv1-1`).
    pub fn find(&self, wanted: &str) -> Option<u32> {
        let field = self.index.field(self.id_field?);
        let candidates = field.terms().get(&fold(wanted))?;
        candidates
            .iter()
            .find(|&c| self.record_id(c) == wanted)
            .or_else(|| {
                (candidates.len() == 1)
                    .then(|| candidates.iter().next())
                    .flatten()
            })
    }

    /// The values of field `field` as written — not folded — with the records holding
    /// each: what `^field:value` looks up. Built on first use (from the records' JSON, in
    /// parallel) and kept, so the index costs nothing for catalogs never queried that way.
    pub(crate) fn literal_values(&self, field: FieldId) -> &Vocab {
        self.literals[field.0 as usize].get_or_init(|| {
            let path: Vec<&str> = self.index.field(field).path().split('.').collect();
            let ids: Vec<u32> = (0..self.len() as u32).collect();
            let per_chunk = par::map_slice(&ids.chunks(4096).collect::<Vec<_>>(), |chunk| {
                let mut pairs: Vec<(String, u32)> = Vec::new();
                for &id in *chunk {
                    self.values(id, &path, &mut |v| {
                        match v {
                            Scalar::Str(s) => pairs.push((s.into_owned(), id)),
                            Scalar::Bool(b) => pairs.push((b.to_string(), id)),
                            Scalar::Num(_) => {}
                        }
                        true
                    });
                }
                pairs
            });
            let mut pairs: Vec<(String, u32)> = per_chunk.into_iter().flatten().collect();
            par::sort_by(&mut pairs, |a, b| a.cmp(b));
            pairs.dedup();
            let mut vocab = VocabBuilder::with_capacity(pairs.len());
            let mut i = 0;
            let mut run = Vec::new();
            while i < pairs.len() {
                run.clear();
                let mut j = i;
                while j < pairs.len() && pairs[j].0 == pairs[i].0 {
                    run.push(pairs[j].1);
                    j += 1;
                }
                vocab.push(&pairs[i].0, &run);
                i = j;
            }
            vocab.finish()
        })
    }

    /// Every field's index as text, one line a field: its path, its records, and every
    /// folded value and number with their records. Two loads of the same records give the
    /// same text; the tests compare loads by it. Not an API.
    #[doc(hidden)]
    pub fn index_dump(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for (_, field) in self.index.fields() {
            let _ = write!(out, "{} {:?}", field.path(), field.exists());
            for (term, postings) in field.terms().iter() {
                let _ = write!(out, " {term}={postings:?}");
            }
            for (n, postings) in field.numbers().iter().chain(field.numeric_strings().iter()) {
                let _ = write!(out, " {n}={postings:?}");
            }
            out.push('\n');
        }
        out
    }

    pub(crate) fn sort_columns(&self) -> &SortColumns {
        &self.sort_columns
    }

    /// Bytes held on the heap by the served JSON, the marks, the index and the indexes of
    /// the records' array elements.
    pub fn heap_bytes(&self) -> usize {
        self.texts.heap_bytes() + self.heap_bytes_without_text()
    }

    /// Bytes held on the heap by the records' JSON alone: the plain text, or the
    /// compressed blocks with their dictionary and offsets.
    pub fn text_heap_bytes(&self) -> usize {
        self.texts.heap_bytes()
    }

    /// [`Self::heap_bytes`] less the JSON text, which a collection of elements shares.
    fn heap_bytes_without_text(&self) -> usize {
        self.docs.capacity() * std::mem::size_of::<DocRef>()
            + self.strips.capacity() * std::mem::size_of::<Strip>()
            + self.strip_starts.capacity() * 4
            + self.ids.heap_bytes()
            + self.index.heap_bytes()
            + self.all.serialized_size()
            + self.nested.iter().map(Nested::heap_bytes).sum::<usize>()
    }
}

/// The records' ids.
#[derive(Debug)]
enum Ids {
    /// Where each id is in its record's plain JSON.
    Spans(Vec<IdSpan>),
    /// The ids themselves (a compressed store's records are not slices).
    Column(IdColumn),
}

impl Ids {
    fn heap_bytes(&self) -> usize {
        match self {
            Ids::Spans(spans) => spans.capacity() * std::mem::size_of::<IdSpan>(),
            Ids::Column(column) => column.text.capacity() + column.ends.capacity() * 4,
        }
    }
}

/// Strings one after the other: string `i` is `text[ends[i - 1]..ends[i]]`.
#[derive(Debug)]
struct IdColumn {
    text: String,
    ends: Vec<u32>,
}

impl IdColumn {
    fn new<'a>(ids: impl ExactSizeIterator<Item = Cow<'a, str>>) -> IdColumn {
        let mut column = IdColumn {
            text: String::new(),
            ends: Vec::with_capacity(ids.len()),
        };
        for id in ids {
            column.text.push_str(&id);
            let end = u32::try_from(column.text.len()).expect("under 4 GiB of ids");
            column.ends.push(end);
        }
        column.text.shrink_to_fit();
        column
    }

    fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] } as usize;
        &self.text[start..self.ends[i] as usize]
    }
}
