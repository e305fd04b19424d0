//! One record, from its source text to what the store keeps: transcoded to compact JSON
//! in one pass ([`Transcoder`]), validated, with the translation fallback (a property the
//! record lacks takes the value `translation.en` has) and, for cards, the computed
//! `printings` applied as edits of the compact text, then appended to the chunk's buffer.

use std::borrow::Cow;
use std::ops::Range;

use smallvec::SmallVec;

use super::error::{LoadError, LoadErrorKind};
use crate::json::scan::same_bytes;
use crate::json::transcode::{Kind, Member, Transcoder};
use crate::json::walk::{string_literals, string_value};
use crate::json::write::Strip;
use crate::store::{Batch, Place, Placed};

/// Which collection a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Card,
    Expansion,
}

/// What a chunk of prepared records produces, each part in one buffer: the records'
/// JSON, the strings the loader sorts and checks by (ids, expansion ids, numbers, release
/// dates), and the marks of their optional parts. Few large buffers rather than many
/// small allocations keep the load's garbage from scattering over the heap.
#[derive(Debug, Default)]
pub(crate) struct ChunkOut {
    pub text: Vec<u8>,
    pub strings: String,
    pub strips: Vec<Strip>,
}

impl ChunkOut {
    /// The chunk as the loader keeps it; `None` should its text not be UTF-8 (it is built
    /// from valid pieces, so never). The text keeps its spare capacity: shrinking a large
    /// block makes the allocator move it, and its freeing raises glibc's mmap threshold
    /// (see `par::Pool`); spare capacity in an mmap'd block is never touched, so never
    /// resident.
    pub(crate) fn into_chunk(self) -> Option<Chunk> {
        Some(Chunk {
            text: String::from_utf8(self.text).ok()?,
            strings: self.strings,
            strips: self.strips,
        })
    }
}

/// A chunk of prepared records, as the loader keeps it: the records' JSON and marks
/// (which the store keeps), and their strings (which the loader orders and checks by).
#[derive(Debug)]
pub(crate) struct Chunk {
    pub text: String,
    pub strings: String,
    pub strips: Vec<Strip>,
}

impl Chunk {
    /// What the store keeps of the chunk.
    pub(crate) fn into_batch(self) -> Batch {
        Batch {
            text: self.text,
            strips: self.strips,
        }
    }
}

/// A string in a chunk's `strings`, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Str {
    start: u32,
    len: u32,
}

impl Str {
    pub(crate) const NONE: Str = Str {
        start: 0,
        len: u32::MAX,
    };

    fn put(strings: &mut String, s: &str) -> Str {
        let start = strings.len() as u32;
        strings.push_str(s);
        Str {
            start,
            len: s.len() as u32,
        }
    }

    /// The string, from its chunk's `strings`.
    pub(crate) fn get(self, strings: &str) -> Option<&str> {
        (self.len != u32::MAX)
            .then(|| &strings[self.start as usize..(self.start + self.len) as usize])
    }
}

/// A validated record, ready for the store: where its JSON, strings and marks are in its
/// chunk's [`ChunkOut`].
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The record's chunk (numbered by the loader, within its collection).
    pub chunk: u32,
    /// Where the served (and searched) record is in the chunk's text.
    pub start: u32,
    pub len: u32,
    /// Index in its file.
    pub index: u32,
    pub id: Str,
    /// Cards: the expansion of debut.
    pub expansion_id: Str,
    /// Cards: `number`, for the default order.
    pub number: Str,
    /// Expansions: `release_date` (`YYYY/MM/DD`), for the default order.
    pub release_date: Str,
    /// The record's marks in the chunk's strips (offsets relative to `start`).
    pub strips: std::ops::Range<u32>,
}

impl Placed for Prepared {
    fn place(&self) -> Place {
        Place {
            batch: self.chunk,
            start: self.start,
            len: self.len,
            strips: self.strips.clone(),
        }
    }
}

type Result<T> = std::result::Result<T, LoadErrorKind>;

/// An edit of the transcoded record: replace `range` with `bytes`, or (no range) add the
/// member `bytes` at the end of the record.
struct Edit {
    range: Option<Range<usize>>,
    bytes: Vec<u8>,
}

/// A record's edits: most cards have one, the `printings` member added.
type Edits = SmallVec<[Edit; 2]>;

/// Prepares records one after the other, reusing its buffers.
#[derive(Debug, Default)]
pub(crate) struct Preparer {
    transcoder: Transcoder,
}

impl Preparer {
    /// Validates and transforms record number `index` of a file (`text` is its source),
    /// appending its compact JSON to `dest`.
    pub(crate) fn prepare(
        &mut self,
        kind: RecordKind,
        text: &str,
        index: usize,
        dest: &mut ChunkOut,
    ) -> std::result::Result<Prepared, LoadError> {
        if let Err(e) = self.transcoder.record(text) {
            let first = text.trim_start().as_bytes().first().copied();
            let kind = match self.transcoder.take_repeated_key() {
                // A record that is not an object is that error first.
                Some(_) if first != Some(b'{') => LoadErrorKind::NotAnObject {
                    found: crate::json::walk::kind_at(first).name(),
                },
                Some((object, key)) => LoadErrorKind::RepeatedKey { object, key },
                None => LoadErrorKind::Json {
                    line: e.line(),
                    column: e.column(),
                    message: e.to_string(),
                },
            };
            let id = match &kind {
                // Valid JSON otherwise: the record's id names it, unless the id is what
                // the record repeats.
                LoadErrorKind::RepeatedKey { object, key }
                    if !(object.is_empty() && key == "id") =>
                {
                    crate::json::record_id(text)
                }
                _ => None,
            };
            return Err(LoadError::new(None, kind).at_record(index, id.as_deref()));
        }
        self.complete(kind, index, dest)
    }

    /// Prepares the record at the start of `text` (after any whitespace), transcoded by
    /// the direct path alone, and says where in `text` it ends. `None` when that path gives
    /// up or the record breaks a rule: the caller then reads the file the general way,
    /// which reports the right error (a syntax error anywhere in the file first).
    pub(crate) fn prepare_prefix(
        &mut self,
        kind: RecordKind,
        text: &str,
        index: usize,
        dest: &mut ChunkOut,
    ) -> Option<(Prepared, usize)> {
        // Transcoded straight into the chunk: a record whose only edits add members (most
        // cards gain `printings`) is finished where it stands, never copied; one with a
        // variant that gains `printings` is copied once.
        let start = dest.text.len();
        let end = self.transcoder.record_prefix_into(text, &mut dest.text)?;
        let (mut prepared, edits) = self
            .check(kind, index, &dest.text[start..], &mut dest.strings)
            .ok()?;
        let t = &mut self.transcoder;
        if edits.iter().all(|e| e.range.is_none()) {
            // The record's closing brace goes; the added members and a new one follow.
            let empty = dest.text.len() - start == 2;
            dest.text.pop();
            close_record(
                dest,
                start,
                empty,
                &edits,
                &t.layout.strips,
                &[],
                &mut prepared,
            );
        } else {
            t.out.clear();
            t.out.extend_from_slice(&dest.text[start..]);
            dest.text.truncate(start);
            apply(&t.out, edits, &t.layout.strips, dest, &mut prepared);
        }
        Some((prepared, end))
    }

    /// Validates and transforms the record just transcoded into the transcoder's buffer,
    /// appending it to `dest`.
    fn complete(
        &mut self,
        kind: RecordKind,
        index: usize,
        dest: &mut ChunkOut,
    ) -> std::result::Result<Prepared, LoadError> {
        let t = &self.transcoder;
        let (mut prepared, edits) = self.check(kind, index, &t.out, &mut dest.strings)?;
        apply(&t.out, edits, &t.layout.strips, dest, &mut prepared);
        Ok(prepared)
    }

    /// Validates the record just transcoded (`out`, described by the transcoder's
    /// layout): its sort and check strings go to `strings`, and the edits the rules make
    /// are returned, to be applied.
    fn check(
        &self,
        kind: RecordKind,
        index: usize,
        out: &[u8],
        strings: &mut String,
    ) -> std::result::Result<(Prepared, Edits), LoadError> {
        let t = &self.transcoder;
        let own = t.layout.kind.unwrap_or(Kind::Null);
        if own != Kind::Object {
            let kind = LoadErrorKind::NotAnObject { found: own.name() };
            return Err(LoadError::new(None, kind).at_record(index, None));
        }
        let record = Record::new(out, &t.layout.members, &t.layout.translation_en);
        let mut edits = Edits::new();
        let mut prepared = Prepared {
            chunk: 0,
            start: 0,
            len: 0,
            index: index as u32,
            id: Str::NONE,
            expansion_id: Str::NONE,
            number: Str::NONE,
            release_date: Str::NONE,
            strips: 0..0,
        };
        if let Err(kind) = self.rules(&record, kind, &mut prepared, &mut edits, strings) {
            // The id names the record in the error, when it has a usable one.
            let id = record
                .field(Known::Id)
                .filter(|m| m.kind == Kind::String)
                .map(|m| record.string(m))
                .filter(|id| !id.is_empty());
            return Err(LoadError::new(None, kind).at_record(index, id.as_deref()));
        }
        Ok((prepared, edits))
    }

    fn rules(
        &self,
        record: &Record<'_>,
        kind: RecordKind,
        prepared: &mut Prepared,
        edits: &mut Edits,
        strings: &mut String,
    ) -> Result<()> {
        let t = &self.transcoder;
        prepared.id = Str::put(strings, &record.required_string(Known::Id)?);
        // The translation fallback: a property the record lacks (or holds as null) that
        // `translation.en` has takes the English value.
        match record.known(Known::Translation).map(|m| m.kind) {
            // `null` counts as absent, as everywhere.
            None | Some(Kind::Object | Kind::Null) => {}
            Some(other) => return Err(wrong_type("translation", "an object", other)),
        }
        match t.layout.translation_en_kind {
            None | Some(Kind::Object) | Some(Kind::Null) => {}
            Some(other) => return Err(wrong_type("translation.en", "an object", other)),
        }
        for en in t
            .layout
            .translation_en
            .iter()
            .filter(|m| m.kind != Kind::Null)
        {
            let key = &record.out[en.key.clone()];
            if kind == RecordKind::Card && key == b"printings" {
                // The printings rule below writes the card's printings, English ones included.
                continue;
            }
            if kind == RecordKind::Card && key == b"variants" {
                // A card's variants are its own versions and prices, not the English card's.
                continue;
            }
            let bytes = record.out[en.value.clone()].to_vec();
            match record.member(key) {
                None => edits.push(Edit {
                    range: None,
                    bytes: member_bytes(key, &bytes),
                }),
                Some(own) if own.kind == Kind::Null => edits.push(Edit {
                    range: Some(own.value.clone()),
                    bytes,
                }),
                Some(_) => {}
            }
        }
        record.optional_string(Known::LanguageCode)?;
        match kind {
            RecordKind::Card => {
                let expansion_id = record.required_string(Known::ExpansionId)?;
                prepared.expansion_id = Str::put(strings, &expansion_id);
                let own = record.known(Known::Printings);
                // The member's bytes when it is added, else the array alone.
                let mut json = Vec::new();
                if own.is_none() {
                    json.extend_from_slice(b"\"printings\":");
                }
                // `required_string` found it: a string member, its literal as written.
                let literal = record
                    .field(Known::ExpansionId)
                    .map_or(&b""[..], |m| &record.out[m.value.clone()]);
                self.printings(record, literal, &mut json)?;
                self.variant_printings(record, literal, edits);
                match own {
                    Some(m) if record.out[m.value.clone()] == json[..] => {}
                    Some(m) => edits.push(Edit {
                        range: Some(m.value.clone()),
                        bytes: json,
                    }),
                    None => edits.push(Edit {
                        range: None,
                        bytes: json,
                    }),
                }
                prepared.number = match record.field(Known::Number) {
                    None => Str::NONE,
                    Some(m) if m.kind == Kind::String => Str::put(strings, &record.string(m)),
                    Some(m) if m.kind == Kind::Number => Str::put(strings, record.text(m)),
                    Some(m) => {
                        let field = record.path_of(Known::Number);
                        return Err(wrong_type(field, "a string or a number", m.kind));
                    }
                };
            }
            RecordKind::Expansion => {
                if let Some(date) = record.optional_string(Known::ReleaseDate)? {
                    if !is_date(&date) {
                        return Err(LoadErrorKind::BadDate {
                            field: record.path_of(Known::ReleaseDate),
                            value: date.into_owned(),
                        });
                    }
                    prepared.release_date = Str::put(strings, &date);
                }
            }
        }
        Ok(())
    }

    /// A variant without `printings` (absent, null or empty) is printed in the card's own
    /// expansion (`own_id` is its literal): the edits give it `"printings":[own_id]`, at
    /// the end of the variant. (Called after [`Self::printings`], which checked the
    /// variants are objects.)
    fn variant_printings(&self, record: &Record<'_>, own_id: &[u8], edits: &mut Edits) {
        for variant in &self.transcoder.layout.variants {
            let edit = match &variant.printings {
                Some((range, kind))
                    if *kind != Kind::Null && record.out[range.clone()] != *b"[]" =>
                {
                    continue
                }
                Some((none, _)) => Edit {
                    range: Some(none.clone()),
                    bytes: [&b"["[..], own_id, b"]"].concat(),
                },
                None => {
                    let close = variant.close;
                    let comma = if record.out[close - 1] == b'{' {
                        ""
                    } else {
                        ","
                    };
                    Edit {
                        range: Some(close..close),
                        bytes: [comma.as_bytes(), b"\"printings\":[", own_id, b"]"].concat(),
                    }
                }
            };
            edits.push(edit);
        }
    }

    /// The card's printings: its `printings` if present, else `[expansion_id]`,
    /// united with every `variants[].printings` entry and its own `expansion_id` (whose
    /// literal is `own_id`), first occurrence kept; appended to `json` as a compact JSON
    /// array. Entries are compared
    /// as the string literals the transcoder wrote (serde_json's escaping, so equal
    /// literals are equal strings): nothing is decoded.
    fn printings(&self, record: &Record<'_>, own_id: &[u8], json: &mut Vec<u8>) -> Result<()> {
        let t = &self.transcoder;
        json.push(b'[');
        // Where each entry written so far is in `json`.
        let mut written: SmallVec<[Range<usize>; 4]> = smallvec::SmallVec::new();
        let mut add = |json: &mut Vec<u8>, literal: &[u8]| {
            if written
                .iter()
                .any(|r| same_bytes(&json[r.clone()], literal))
            {
                return;
            }
            if !written.is_empty() {
                json.push(b',');
            }
            let start = json.len();
            json.extend_from_slice(literal);
            written.push(start..json.len());
        };
        match record.field(Known::Printings) {
            None => add(json, own_id),
            Some(m) => {
                for r in literals(record.out, &m.value, m.kind, || {
                    record.path_of(Known::Printings)
                })? {
                    add(
                        json,
                        &record.out[m.value.start + r.start..m.value.start + r.end],
                    );
                }
            }
        }
        match record.known(Known::Variants).map(|m| m.kind) {
            // `null` counts as absent, as everywhere.
            None | Some(Kind::Array | Kind::Null) => {}
            Some(other) => return Err(wrong_type("variants", "an array of objects", other)),
        }
        for (i, variant) in t.layout.variants.iter().enumerate() {
            if !variant.is_object {
                let found = variant.kind.unwrap_or(Kind::Null);
                return Err(wrong_type(&format!("variants[{i}]"), "an object", found));
            }
            if let Some((range, kind)) = &variant.printings {
                if *kind != Kind::Null {
                    let field = || format!("variants[{i}].printings");
                    for r in literals(record.out, range, *kind, field)? {
                        add(
                            json,
                            &record.out[range.start + r.start..range.start + r.end],
                        );
                    }
                }
            }
        }
        add(json, own_id);
        json.push(b']');
        Ok(())
    }
}

/// The top-level members the rules read by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Id,
    ExpansionId,
    Number,
    Printings,
    Variants,
    Translation,
    LanguageCode,
    ReleaseDate,
}

impl Known {
    const COUNT: usize = 8;

    /// The member's key (no escapes).
    fn key(self) -> &'static str {
        match self {
            Known::Id => "id",
            Known::ExpansionId => "expansion_id",
            Known::Number => "number",
            Known::Printings => "printings",
            Known::Variants => "variants",
            Known::Translation => "translation",
            Known::LanguageCode => "language_code",
            Known::ReleaseDate => "release_date",
        }
    }

    /// The path of the member inherited from `translation.en`, as messages name it.
    fn english_path(self) -> &'static str {
        match self {
            Known::Id => "translation.en.id",
            Known::ExpansionId => "translation.en.expansion_id",
            Known::Number => "translation.en.number",
            Known::Printings => "translation.en.printings",
            Known::Variants => "translation.en.variants",
            Known::Translation => "translation.en.translation",
            Known::LanguageCode => "translation.en.language_code",
            Known::ReleaseDate => "translation.en.release_date",
        }
    }

    /// The name whose key `key` (as written in the record) is.
    fn of(key: &[u8]) -> Option<Known> {
        Some(match key {
            b"id" => Known::Id,
            b"expansion_id" => Known::ExpansionId,
            b"number" => Known::Number,
            b"printings" => Known::Printings,
            b"variants" => Known::Variants,
            b"translation" => Known::Translation,
            b"language_code" => Known::LanguageCode,
            b"release_date" => Known::ReleaseDate,
            _ => return None,
        })
    }
}

/// A transcoded record's top-level members, and its `translation.en` members.
struct Record<'a> {
    out: &'a [u8],
    members: &'a [Member],
    english: &'a [Member],
    /// The members named by [`Known`] (the last, should a key repeat), found in one pass.
    known: [Option<&'a Member>; Known::COUNT],
}

/// The member `key` of a list (the last, should a key repeat).
fn find<'a>(out: &[u8], members: &'a [Member], key: &[u8]) -> Option<&'a Member> {
    members
        .iter()
        .rev()
        .find(|m| same_bytes(&out[m.key.clone()], key))
}

impl<'a> Record<'a> {
    fn new(out: &'a [u8], members: &'a [Member], english: &'a [Member]) -> Record<'a> {
        let mut known = [None; Known::COUNT];
        for m in members {
            if let Some(k) = Known::of(&out[m.key.clone()]) {
                known[k as usize] = Some(m);
            }
        }
        Record {
            out,
            members,
            english,
            known,
        }
    }

    /// The record's own member `key`.
    fn member(&self, key: impl AsRef<[u8]>) -> Option<&'a Member> {
        find(self.out, self.members, key.as_ref())
    }

    /// The record's own member named `name`.
    fn known(&self, name: Known) -> Option<&'a Member> {
        self.known[name as usize]
    }

    /// The value the rules see at `name`: the record's own, else (the translation fallback)
    /// the one of `translation.en`; `null` counts as absent.
    fn field(&self, name: Known) -> Option<&'a Member> {
        self.known(name)
            .filter(|m| m.kind != Kind::Null)
            .or_else(|| {
                find(self.out, self.english, name.key().as_bytes()).filter(|m| m.kind != Kind::Null)
            })
    }

    /// Where the value [`Record::field`] finds at `name` is, as messages name it: the
    /// member's key, or its path under `translation.en` when it is inherited from there.
    fn path_of(&self, name: Known) -> &'static str {
        match self.known(name) {
            Some(m) if m.kind != Kind::Null => name.key(),
            _ if self.field(name).is_some() => name.english_path(),
            _ => name.key(),
        }
    }

    /// A member's value text.
    fn text(&self, m: &Member) -> &'a str {
        std::str::from_utf8(&self.out[m.value.clone()]).unwrap_or_default()
    }

    /// A string member's value.
    fn string(&self, m: &Member) -> Cow<'a, str> {
        string_value(self.text(m))
    }

    fn required_string(&self, name: Known) -> Result<Cow<'a, str>> {
        let field = self.path_of(name);
        match self.field(name) {
            None => Err(LoadErrorKind::MissingField { field }),
            Some(m) if m.kind != Kind::String => {
                Err(wrong_type(field, "a non-empty string", m.kind))
            }
            Some(m) => match self.string(m) {
                s if s.is_empty() => Err(LoadErrorKind::WrongType {
                    field: field.to_string(),
                    expected: "a non-empty string",
                    found: "an empty string",
                }),
                s => Ok(s),
            },
        }
    }

    fn optional_string(&self, name: Known) -> Result<Option<Cow<'a, str>>> {
        match self.field(name) {
            None => Ok(None),
            Some(m) if m.kind == Kind::String => Ok(Some(self.string(m))),
            Some(m) => Err(wrong_type(self.path_of(name), "a string", m.kind)),
        }
    }
}

fn wrong_type(field: &str, expected: &'static str, found: Kind) -> LoadErrorKind {
    LoadErrorKind::WrongType {
        field: field.to_string(),
        expected,
        found: found.name(),
    }
}

/// Where the string literals of an array-of-strings value are, relative to `range`;
/// `field` names the value in an error.
fn literals<F: std::fmt::Display>(
    out: &[u8],
    range: &Range<usize>,
    kind: Kind,
    field: impl Fn() -> F,
) -> Result<SmallVec<[Range<usize>; 4]>> {
    if kind != Kind::Array {
        return Err(wrong_type(
            &field().to_string(),
            "an array of strings",
            kind,
        ));
    }
    let text = std::str::from_utf8(&out[range.clone()]).unwrap_or_default();
    string_literals(text)
        .map_err(|(i, found)| wrong_type(&format!("{}[{i}]", field()), "a string", found))
}

/// `"key":value`, for a member added at the end of a record (`key` already escaped).
fn member_bytes(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + value.len() + 3);
    out.push(b'"');
    out.extend_from_slice(key);
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value);
    out
}

/// Appends `out` to the chunk's text with the edits applied (replacements in place, new
/// members at the end), and its strips, moved by what the replacements before them
/// changed, to the chunk's strips.
fn apply(
    out: &[u8],
    edits: Edits,
    strips: &[Strip],
    chunk: &mut ChunkOut,
    prepared: &mut Prepared,
) {
    let dest = &mut chunk.text;
    let start = dest.len();
    let mut replacements: SmallVec<[(&Range<usize>, &[u8]); 4]> = edits
        .iter()
        .filter_map(|e| Some((e.range.as_ref()?, &e.bytes[..])))
        .collect();
    replacements.sort_by_key(|(range, _)| range.start);
    let body_end = out.len() - 1; // the record's closing brace
    let mut pos = 0;
    let mut shifts: SmallVec<[(usize, isize); 4]> = SmallVec::new();
    for &(range, bytes) in &replacements {
        dest.extend_from_slice(&out[pos..range.start]);
        dest.extend_from_slice(bytes);
        shifts.push((range.end, bytes.len() as isize - range.len() as isize));
        pos = range.end;
    }
    dest.extend_from_slice(&out[pos..body_end]);
    let empty = out.len() == 2;
    close_record(chunk, start, empty, &edits, strips, &shifts, prepared);
}

/// Ends the record written to `chunk.text` from `start` up to its last member (`empty`:
/// it has none): appends the members that `edits` add and the closing brace, and the
/// record's strips to the chunk's, each moved by the `shifts` (end of a replaced range,
/// change in length) of the replacements before it.
fn close_record(
    chunk: &mut ChunkOut,
    start: usize,
    mut empty: bool,
    edits: &Edits,
    strips: &[Strip],
    shifts: &[(usize, isize)],
    prepared: &mut Prepared,
) {
    let dest = &mut chunk.text;
    for edit in edits.iter().filter(|e| e.range.is_none()) {
        if !empty {
            dest.push(b',');
        }
        empty = false;
        dest.extend_from_slice(&edit.bytes);
    }
    dest.push(b'}');
    prepared.start = start as u32;
    prepared.len = (dest.len() - start) as u32;
    let first = chunk.strips.len() as u32;
    chunk.strips.extend(strips.iter().map(|s| {
        let shift: isize = shifts
            .iter()
            .filter(|(end, _)| *end <= s.start as usize)
            .map(|(_, d)| d)
            .sum();
        Strip {
            start: (s.start as isize + shift) as u32,
            end: (s.end as isize + shift) as u32,
            ..*s
        }
    }));
    prepared.strips = first..chunk.strips.len() as u32;
}

/// `YYYY/MM/DD` with a month 01–12 and a day 01–31.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'/'
        || b[7] != b'/'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return false;
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let day = (b[8] - b'0') * 10 + (b[9] - b'0');
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(kind: RecordKind, json: &str) -> std::result::Result<(String, Vec<Strip>), String> {
        let mut chunk = ChunkOut {
            text: b"prefix".to_vec(),
            ..ChunkOut::default()
        };
        let p = Preparer::default()
            .prepare(kind, json, 7, &mut chunk)
            .map_err(|e| e.to_string())?;
        let text =
            String::from_utf8(chunk.text[p.start as usize..(p.start + p.len) as usize].to_vec())
                .unwrap();
        assert_eq!(p.start, 6);
        assert!(p.id.get(&chunk.strings).is_some_and(|id| text.contains(id)));
        Ok((
            text,
            chunk.strips[p.strips.start as usize..p.strips.end as usize].to_vec(),
        ))
    }

    fn card(json: &str) -> std::result::Result<String, String> {
        prepare(RecordKind::Card, json).map(|(text, _)| text)
    }

    #[test]
    fn printings_rule() {
        let c = card(r#"{"id":"a","expansion_id":"OP01","variants":[{"name":"Normal"},{"name":"Alt","printings":["PRB01","OP01"]}]}"#).unwrap();
        assert!(c.ends_with(r#","printings":["OP01","PRB01"]}"#), "{c}");
        let c = card(r#"{"id":"a","printings":["ST01"],"expansion_id":"OP01","variants":[{"printings":["PRB01"]}]}"#).unwrap();
        assert!(
            c.contains(r#""printings":["ST01","PRB01","OP01"],"expansion_id""#),
            "{c}"
        );
        let c = card(r#"{"id":"a","expansion_id":"OP01","printings":null}"#).unwrap();
        assert_eq!(
            c,
            r#"{"id":"a","expansion_id":"OP01","printings":["OP01"]}"#
        );
        let c = card(r#"{"id":"a","expansion_id":"OP01","printings":["OP01"]}"#).unwrap();
        assert_eq!(
            c,
            r#"{"id":"a","expansion_id":"OP01","printings":["OP01"]}"#
        );
        // Entries are compared as strings, however the source escaped them.
        let c = card(r#"{"id":"a","expansion_id":"OP\u0030\u00311","printings":["O\u0050011","\"q\"","OP011"],"variants":[{"printings":["\u0022q\u0022","\u00e9"]},{"printings":["é"]}]}"#).unwrap();
        assert_eq!(
            c,
            r#"{"id":"a","expansion_id":"OP011","printings":["OP011","\"q\"","é"],"variants":[{"printings":["\"q\"","é"]},{"printings":["é"]}]}"#
        );
    }

    #[test]
    fn a_card_takes_no_variants_from_its_translation() {
        let c = card(r#"{"id":"a-1","expansion_id":"a","translation":{"en":{"variants":[{"name":"holo","prices":[1],"printings":["r"]}]}}}"#).unwrap();
        assert_eq!(
            c,
            r#"{"id":"a-1","expansion_id":"a","translation":{"en":{"variants":[{"name":"holo","prices":[1],"printings":["r"]}]}},"printings":["a"]}"#
        );
        let c = card(r#"{"id":"a-1","expansion_id":"a","variants":null,"translation":{"en":{"variants":[{"name":"holo"}]}}}"#).unwrap();
        assert!(c.contains(r#""variants":null"#), "{c}");
    }

    #[test]
    fn translation_fallback() {
        let c = card(r#"{"id":"x_ja-1","expansion_id":"x_ja","name":null,"translation":{"en":{"name":"Mewtwo","rarity":"Rare","types":["Psychic"],"hp":null}},"types":["超"]}"#).unwrap();
        assert_eq!(
            c,
            r#"{"id":"x_ja-1","expansion_id":"x_ja","name":"Mewtwo","translation":{"en":{"name":"Mewtwo","rarity":"Rare","types":["Psychic"],"hp":null}},"types":["超"],"rarity":"Rare","printings":["x_ja"]}"#
        );
        let (e, _) = prepare(
            RecordKind::Expansion,
            r#"{"id":"s_ja","translation":{"en":{"name":"Starsea"}}}"#,
        )
        .unwrap();
        assert_eq!(
            e,
            r#"{"id":"s_ja","translation":{"en":{"name":"Starsea"}},"name":"Starsea"}"#
        );
    }

    #[test]
    fn a_variant_without_printings_is_printed_in_the_cards_expansion() {
        let source = r#"{"id":"a","expansion_id":"OP01","variants":[{"name":"Normal","prices":[{"market":1}]},{},{"printings":null,"pop_reports":[]},{"name":"R","printings":["PRB01"],"prices":[2]},{"printings":[]}]}"#;
        let served = r#"{"id":"a","expansion_id":"OP01","variants":[{"name":"Normal","prices":[{"market":1}],"printings":["OP01"]},{"printings":["OP01"]},{"printings":["OP01"],"pop_reports":[]},{"name":"R","printings":["PRB01"],"prices":[2]},{"printings":["OP01"]}],"printings":["OP01","PRB01"]}"#;
        // Both ways of reading a record write the same text and strips.
        let (text, strips) = prepare(RecordKind::Card, source).unwrap();
        assert_eq!(text, served);
        let mut chunk = ChunkOut::default();
        let (p, end) = Preparer::default()
            .prepare_prefix(RecordKind::Card, source, 0, &mut chunk)
            .unwrap();
        assert_eq!(end, source.len());
        assert_eq!(
            &chunk.text[p.start as usize..(p.start + p.len) as usize],
            served.as_bytes()
        );
        assert_eq!(chunk.strips, strips);
        let stripped: Vec<&str> = strips
            .iter()
            .map(|s| &text[s.start as usize..s.end as usize])
            .collect();
        assert_eq!(
            stripped,
            [
                r#","prices":[{"market":1}]"#,
                r#","pop_reports":[]"#,
                r#","prices":[2]"#
            ]
        );
    }

    #[test]
    fn strips_follow_edits() {
        let (text, strips) = prepare(
            RecordKind::Card,
            r#"{"id":"a","name":null,"expansion_id":"e","variants":[{"name":"n","prices":[{"market":1.5}]}],"translation":{"en":{"name":"Longer English name"}}}"#,
        )
        .unwrap();
        assert_eq!(strips.len(), 1);
        let s = strips[0];
        assert_eq!(
            &text[s.start as usize..s.end as usize],
            r#","prices":[{"market":1.5}]"#
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            card("[1]").unwrap_err(),
            "record 7: expected a JSON object, found an array"
        );
        assert_eq!(
            card(r#"{"name":"x"}"#).unwrap_err(),
            "record 7: required field `id` is missing"
        );
        assert_eq!(
            card(r#"{"id":""}"#).unwrap_err(),
            "record 7: field `id` must be a non-empty string, found an empty string"
        );
        assert_eq!(
            card(r#"{"id":5}"#).unwrap_err(),
            "record 7: field `id` must be a non-empty string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a"}"#).unwrap_err(),
            "record 7 (id `a`): required field `expansion_id` is missing"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","printings":"e"}"#).unwrap_err(),
            "record 7 (id `a`): field `printings` must be an array of strings, found a string"
        );
        // A value inherited from `translation.en` is named by its path there.
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","translation":{"en":{"printings":5}}}"#)
                .unwrap_err(),
            "record 7 (id `a`): field `translation.en.printings` must be an array of strings, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a","translation":{"en":{"expansion_id":7}}}"#).unwrap_err(),
            "record 7 (id `a`): field `translation.en.expansion_id` must be a non-empty string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","number":null,"translation":{"en":{"number":[]}}}"#)
                .unwrap_err(),
            "record 7 (id `a`): field `translation.en.number` must be a string or a number, found an array"
        );
        assert_eq!(
            prepare(
                RecordKind::Expansion,
                r#"{"id":"e","translation":{"en":{"release_date":"2024-01-02"}}}"#
            )
            .unwrap_err(),
            "record 7 (id `e`): field `translation.en.release_date` must be a date `YYYY/MM/DD`, found `2024-01-02`"
        );
        // The record's own value, when it has one, is named as its own.
        assert_eq!(
            card(r#"{"id":"a","expansion_id":3,"translation":{"en":{"expansion_id":"e"}}}"#)
                .unwrap_err(),
            "record 7 (id `a`): field `expansion_id` must be a non-empty string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","variants":[{"printings":[1]}]}"#).unwrap_err(),
            "record 7 (id `a`): field `variants[0].printings[0]` must be a string, found a number"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","variants":[{},"x"]}"#).unwrap_err(),
            "record 7 (id `a`): field `variants[1]` must be an object, found a string"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","variants":{}}"#).unwrap_err(),
            "record 7 (id `a`): field `variants` must be an array of objects, found an object"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","translation":{"en":[]}}"#).unwrap_err(),
            "record 7 (id `a`): field `translation.en` must be an object, found an array"
        );
        assert_eq!(
            card(r#"{"id":"a","expansion_id":"e","language_code":1}"#).unwrap_err(),
            "record 7 (id `a`): field `language_code` must be a string, found a number"
        );
        assert_eq!(
            prepare(RecordKind::Expansion, r#"{"id":"e","release_date":"2024-01-02"}"#).unwrap_err(),
            "record 7 (id `e`): field `release_date` must be a date `YYYY/MM/DD`, found `2024-01-02`"
        );
    }

    #[test]
    fn dates() {
        assert!(is_date("2024/01/31"));
        for bad in [
            "2024/1/31",
            "2024/13/01",
            "2024/00/10",
            "2024/01/32",
            "2024/01/3a",
            "２０２４/01/01",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }
}
