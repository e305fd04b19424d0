//! The transcoder's fast path: one record read by hand, byte by byte, with what is already
//! compact copied as it stands — strings without escapes, integers, and decimals once
//! their trailing zeros are dropped (`846.90` → `846.9`, as serde_json writes the float
//! it parses). Text that comes out as it went in is not copied token by token: the reader
//! keeps the stretch of input not yet copied and copies it in one piece when something
//! must be written differently (whitespace dropped, a decimal shortened, an escape
//! decoded) and at the end, so a record already compact is one copy. It gives up
//! ([`GiveUp`]) on everything else: any syntax error, an escaped key, a key its object
//! already has, a number serde_json would write differently (an exponent, more than 15
//! digits, `-0`), nesting as deep as serde_json refuses. The caller then runs the record
//! through [`super::by_serde`], the reference, so giving up is never wrong, only slower.
//!
//! Why the decimals are safe: a decimal of at most 15 significant digits (and at most 15
//! digits in all, so serde_json's parser multiplies or divides exact values once and
//! rounds correctly) maps to a unique `f64`, and no shorter decimal maps to the same one;
//! so the shortest round-trip form that serde_json prints (ryu) has exactly its digits
//! without the trailing zeros, written positionally (`100.0`, `0.00012`) for every
//! magnitude this path accepts.

use smallvec::SmallVec;

use super::{Kind, Layout, Noted, Place, Variant};
use crate::json::scan::{needing_escape, skip_whitespace};
use crate::json::write::write_str;

/// The fast path does not mirror this text; [`super::by_serde`] must transcode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GiveUp;

type Step<T = ()> = Result<T, GiveUp>;

/// serde_json refuses the 128th nested array or object; this path gives up on it too.
const MAX_DEPTH: u32 = 127;

/// Digits a decimal may have in all, and the most leading zeros after the point of one
/// below 1 (ryu writes smaller values with an exponent).
const MAX_DIGITS: usize = 15;
const MAX_LEADING_ZEROS: usize = 4;

/// Integers of at most this many digits fit `i64` and `u64`, which serde_json writes as
/// they are.
const MAX_INTEGER_DIGITS: usize = 18;

/// Transcodes the record `text` into `out` and `layout` (both empty), returning its kind;
/// or gives up, leaving them partly written.
pub(super) fn record(text: &str, out: &mut Vec<u8>, layout: &mut Layout) -> Step<Kind> {
    let (kind, end) = prefix(text, out, layout)?;
    if skip_whitespace(text.as_bytes(), end) == text.len() {
        Ok(kind)
    } else {
        Err(GiveUp)
    }
}

/// Transcodes the record at the start of `text` (after any whitespace), appending it to
/// `out`, into `layout` (empty; its positions count from where the record starts in
/// `out`), returning its kind and where in `text` it ends; what follows is not looked at.
/// Gives up as [`record`] does.
pub(super) fn prefix(text: &str, out: &mut Vec<u8>, layout: &mut Layout) -> Step<(Kind, usize)> {
    let mut reader = Reader {
        text,
        b: text.as_bytes(),
        i: 0,
        pending: 0,
        base: out.len(),
        out,
        layout,
        depth: 0,
        scratch: String::new(),
        keys: SmallVec::new(),
    };
    let kind = reader.value(Place::Record)?;
    reader.flush();
    Ok((kind, reader.i))
}

struct Reader<'a, 'o> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// Where the input not yet in `out` starts: `text[pending..i]` comes out as it
    /// stands, and is copied when something else must be written, or at the end.
    pending: usize,
    /// Where the record starts in `out`.
    base: usize,
    out: &'o mut Vec<u8>,
    layout: &'o mut Layout,
    /// Arrays and objects open around the cursor.
    depth: u32,
    /// An escaped string's characters, decoded.
    scratch: String,
    /// The keys read so far of the objects open around the cursor, outermost first.
    keys: SmallVec<[&'a [u8]; 64]>,
}

/// A key's bit (0 to 127) in its object's 128-bit summary of the keys it has: two keys of
/// one bit are compared, others cannot be equal. Made from the key's length and its first
/// two and last two bytes, where keys that share a stem (`k1`, `k2`, `attack_1`) differ.
#[inline(always)]
pub(super) fn key_bit(key: &[u8]) -> u32 {
    let ends = match *key {
        [a, b, .., c, d] => u32::from_le_bytes([a, b, c, d]),
        [a, b, c] => u32::from_le_bytes([a, b, b, c]),
        [a, b] => u32::from_le_bytes([a, b, a, b]),
        [a] => u32::from(a),
        [] => 0,
    };
    ((ends ^ key.len() as u32).wrapping_mul(0x9e37_79b9)) >> 25
}

/// An object with more keys than this is left to the reference, which looks its keys up
/// in a hash set: the direct path compares a key with the object's earlier keys of the
/// same summary bit, and with hundreds of keys most bits are taken.
const MAX_KEYS_COMPARED: usize = 128;

impl<'a> Reader<'a, '_> {
    /// Copies the input read so far and not yet copied.
    fn flush(&mut self) {
        self.out.extend_from_slice(&self.b[self.pending..self.i]);
        self.pending = self.i;
    }

    /// Where the output is, from the record's start: its length once the pending input is
    /// copied.
    fn at(&self) -> usize {
        self.out.len() - self.base + (self.i - self.pending)
    }

    /// Skips whitespace, which does not come out. Compact input has none, so the readers
    /// below look for the byte they expect first and call this only when it is not there
    /// (skipping whitespace does not move [`Self::at`]: what it flushes was pending).
    #[cold]
    fn whitespace(&mut self) {
        let next = skip_whitespace(self.b, self.i);
        if next != self.i {
            self.flush();
            self.i = next;
            self.pending = next;
        }
    }

    /// Whether the byte at the cursor is `c`, after any whitespace.
    #[inline]
    fn at_byte(&mut self, c: u8) -> bool {
        match self.b.get(self.i) {
            Some(&b) if b == c => true,
            Some(b' ' | b'\n' | b'\r' | b'\t') => {
                self.whitespace();
                self.b.get(self.i) == Some(&c)
            }
            _ => false,
        }
    }

    /// Skips whitespace and takes `c`, or gives up.
    #[inline]
    fn expect(&mut self, c: u8) -> Step {
        if self.at_byte(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn value(&mut self, place: Place) -> Step<Kind> {
        match self.b.get(self.i) {
            Some(b'{') => self.object(place),
            Some(b'[') => self.array(place),
            Some(b'"') => self.string().map(|()| Kind::String),
            Some(b'-' | b'0'..=b'9') => self.number().map(|()| Kind::Number),
            Some(b't') => self.literal(b"true", Kind::Bool),
            Some(b'f') => self.literal(b"false", Kind::Bool),
            Some(b'n') => self.literal(b"null", Kind::Null),
            Some(b' ' | b'\n' | b'\r' | b'\t') => {
                // After the whitespace comes something else: this recursion is one level.
                self.whitespace();
                self.value(place)
            }
            _ => Err(GiveUp),
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Step<Kind> {
        if !self.b[self.i..].starts_with(word) {
            return Err(GiveUp);
        }
        self.i += word.len();
        Ok(kind)
    }

    /// Opens an array or object (the cursor is on its bracket).
    fn open(&mut self) -> Step {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(GiveUp);
        }
        self.i += 1;
        Ok(())
    }

    /// Whether the container ends here (taking its closing bracket), after skipping
    /// whitespace.
    #[inline]
    fn closes(&mut self, bracket: u8) -> bool {
        if self.at_byte(bracket) {
            self.i += 1;
            self.depth -= 1;
            true
        } else {
            false
        }
    }

    /// After an element or member: `,` (more follow) or the closing bracket.
    #[inline]
    fn next_or_close(&mut self, bracket: u8) -> Step<bool> {
        if self.b.get(self.i) == Some(&b',') {
            self.i += 1;
            return Ok(true);
        }
        if self.closes(bracket) {
            return Ok(false);
        }
        // `closes` skipped any whitespace.
        if self.b.get(self.i) == Some(&b',') {
            self.i += 1;
            Ok(true)
        } else {
            Err(GiveUp)
        }
    }

    fn array(&mut self, place: Place) -> Step<Kind> {
        self.open()?;
        let element_place = if place == Place::Variants {
            Place::Variant
        } else {
            Place::Other
        };
        if self.closes(b']') {
            return Ok(Kind::Array);
        }
        loop {
            if element_place == Place::Variant {
                self.layout.variants.push(Variant::default());
            }
            let kind = self.value(element_place)?;
            if element_place == Place::Variant {
                let end = self.at();
                if let Some(variant) = self.layout.variants.last_mut() {
                    variant.kind = Some(kind);
                    variant.is_object = kind == Kind::Object;
                    if variant.is_object {
                        variant.close = end - 1;
                    }
                }
            }
            if !self.next_or_close(b']')? {
                return Ok(Kind::Array);
            }
        }
    }

    fn object(&mut self, place: Place) -> Step<Kind> {
        self.open()?;
        if self.closes(b'}') {
            return Ok(Kind::Object);
        }
        if place == Place::Other {
            return self.unnoted_members();
        }
        let (base, mut seen) = (self.keys.len(), [0; 2]);
        let mut first = true;
        loop {
            // The separating comma (taken by `next_or_close`) comes out just before the
            // key: the member starts there.
            let member_start = self.at() - usize::from(!first);
            let key = self.key()?;
            self.distinct(base, &mut seen, key)?;
            let key_start = member_start + usize::from(!first) + 1;
            let key_end = self.at() - 1;
            self.expect(b':')?;
            let value_start = self.at();
            let kind = self.value(place.child(key))?;
            self.layout.note(
                place,
                key,
                Noted {
                    member_start,
                    key: key_start..key_end,
                    value: value_start..self.at(),
                    kind,
                    first,
                },
            );
            first = false;
            if !self.next_or_close(b'}')? {
                self.keys.truncate(base);
                return Ok(Kind::Object);
            }
        }
    }

    /// The members of an object (from its first key) at a place whose members are not
    /// noted ([`Place::Other`], as are all of theirs): no positions to keep.
    fn unnoted_members(&mut self) -> Step<Kind> {
        let (base, mut seen) = (self.keys.len(), [0; 2]);
        loop {
            let key = self.key()?;
            self.distinct(base, &mut seen, key)?;
            self.expect(b':')?;
            self.value(Place::Other)?;
            if !self.next_or_close(b'}')? {
                self.keys.truncate(base);
                return Ok(Kind::Object);
            }
        }
    }

    /// Notes `key` of the object whose keys begin at `base` in [`Self::keys`], `seen` the
    /// bits ([`key_bit`]) of its keys so far; gives up on a key the object already has,
    /// which the reference refuses by name.
    #[inline(always)]
    fn distinct(&mut self, base: usize, seen: &mut [u64; 2], key: &'a [u8]) -> Step {
        let bit = key_bit(key);
        let (word, mask) = ((bit >> 6) as usize, 1 << (bit & 63));
        if seen[word] & mask != 0 {
            self.compare(base, key)?;
        }
        seen[word] |= mask;
        self.keys.push(key);
        Ok(())
    }

    /// [`Self::distinct`] for a key whose summary bit is taken: gives up on a key the
    /// object has, or on an object with too many keys to compare.
    #[cold]
    #[inline(never)]
    fn compare(&self, base: usize, key: &[u8]) -> Step {
        let keys = &self.keys[base..];
        if keys.len() >= MAX_KEYS_COMPARED || keys.contains(&key) {
            Err(GiveUp)
        } else {
            Ok(())
        }
    }

    /// Where the string literal at the cursor stops being plain: the position of its
    /// closing quote, of its first backslash, or of a byte JSON forbids in it.
    fn plain_end(&self) -> usize {
        let from = self.i + 1;
        from + needing_escape(&self.b[from.min(self.b.len())..])
    }

    /// An object key (the cursor should be on its opening quote, after any whitespace),
    /// copied; its characters are returned. Gives up on a key with escapes (rare; the
    /// reference decodes them).
    fn key(&mut self) -> Step<&'a [u8]> {
        if !self.at_byte(b'"') {
            return Err(GiveUp);
        }
        let end = self.plain_end();
        if self.b.get(end) != Some(&b'"') {
            return Err(GiveUp);
        }
        let b: &'a [u8] = self.b;
        let key = &b[self.i + 1..end];
        self.i = end + 1;
        Ok(key)
    }

    /// A string literal (the cursor is on its opening quote).
    fn string(&mut self) -> Step {
        let end = self.plain_end();
        match self.b.get(end) {
            Some(b'"') => {
                self.i = end + 1;
                Ok(())
            }
            Some(b'\\') => self.escaped_string(),
            _ => Err(GiveUp),
        }
    }

    /// A string literal with escapes: decoded, then written as serde_json writes it.
    fn escaped_string(&mut self) -> Step {
        self.flush();
        let mut decoded = std::mem::take(&mut self.scratch);
        decoded.clear();
        let mut i = self.i + 1;
        loop {
            let end = i + needing_escape(&self.b[i..]);
            decoded.push_str(self.text.get(i..end).ok_or(GiveUp)?);
            match self.b.get(end) {
                Some(b'"') => {
                    i = end + 1;
                    break;
                }
                Some(b'\\') => {
                    let (c, next) = self.escape(end)?;
                    decoded.push(c);
                    i = next;
                }
                _ => return Err(GiveUp),
            }
        }
        write_str(&decoded, self.out);
        self.scratch = decoded;
        self.i = i;
        self.pending = i;
        Ok(())
    }

    /// The escape at `at` (a backslash): its character and the position after it.
    fn escape(&self, at: usize) -> Step<(char, usize)> {
        let c = match self.b.get(at + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let unit = self.hex4(at + 2)?;
                return match unit {
                    0xD800..=0xDBFF => {
                        // A leading surrogate must be followed by an escaped trailing one.
                        if self.b.get(at + 6..at + 8) != Some(b"\\u") {
                            return Err(GiveUp);
                        }
                        let low = self.hex4(at + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(GiveUp);
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        Ok((char::from_u32(code).ok_or(GiveUp)?, at + 12))
                    }
                    _ => Ok((char::from_u32(unit).ok_or(GiveUp)?, at + 6)),
                };
            }
            _ => return Err(GiveUp),
        };
        Ok((c, at + 2))
    }

    /// Four hex digits at `at`.
    fn hex4(&self, at: usize) -> Step<u32> {
        let digits = self.b.get(at..at + 4).ok_or(GiveUp)?;
        digits.iter().try_fold(0u32, |n, &d| {
            let v = (d as char).to_digit(16).ok_or(GiveUp)?;
            Ok(n * 16 + v)
        })
    }

    /// A number, written as serde_json writes it, or given up on.
    fn number(&mut self) -> Step {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let negative = b[i] == b'-';
        if negative {
            i += 1;
        }
        let int_start = i;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits_end(b, i),
            _ => return Err(GiveUp),
        }
        let int = &b[int_start..i];
        let mut fraction = None;
        if b.get(i) == Some(&b'.') {
            let from = i + 1;
            i = digits_end(b, from);
            if i == from {
                return Err(GiveUp);
            }
            fraction = Some(&b[from..i]);
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            return Err(GiveUp);
        }
        let Some(fraction) = fraction else {
            // serde_json writes an integer that fits `u64` (or, negative, `i64`) as it is;
            // `-0` and larger integers become floats.
            if int.len() > MAX_INTEGER_DIGITS || (negative && int == b"0") {
                return Err(GiveUp);
            }
            self.i = i;
            return Ok(());
        };
        if int.len() + fraction.len() > MAX_DIGITS {
            return Err(GiveUp);
        }
        let fraction_len = fraction.len();
        let kept = fraction_len - fraction.iter().rev().take_while(|&&d| d == b'0').count();
        let fraction = &fraction[..kept];
        if int == b"0" && kept > 0 {
            let leading = fraction.iter().take_while(|&&d| d == b'0').count();
            if leading > MAX_LEADING_ZEROS {
                return Err(GiveUp);
            }
        }
        // Written as it stands unless trailing zeros go (`1.50` → `1.5`, `1.00` → `1.0`).
        let as_written = kept == fraction_len || (kept == 0 && fraction_len == 1);
        if as_written {
            self.i = i;
            return Ok(());
        }
        self.flush();
        self.out.extend_from_slice(&b[start..int_start + int.len()]);
        self.out.push(b'.');
        if fraction.is_empty() {
            self.out.push(b'0');
        } else {
            self.out.extend_from_slice(fraction);
        }
        self.i = i;
        self.pending = i;
        Ok(())
    }
}

/// The end of the run of ASCII digits starting at `from`.
fn digits_end(b: &[u8], mut from: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(from) {
        from += 1;
    }
    from
}
