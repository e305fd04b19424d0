//! Reading cardex's own compact JSON back: every scalar with its path (to build the
//! index), the scalars at one path (to check phrases, exact values and sort keys), and the
//! top-level members (for `select`).
//!
//! The input is always text that [`super::write`] produced from a parsed record, so it is
//! valid JSON without insignificant whitespace; the walker still never panics or loops on
//! other input, it just stops.

use std::borrow::Cow;
use std::ops::Range;

use super::scan::quote_or_backslash;

/// A scalar JSON value (`null` is never reported: it counts as absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar<'a> {
    Str(Cow<'a, str>),
    /// The number's text.
    Num(&'a str),
    Bool(bool),
}

/// Receives the structure of a record from [`walk`]. Arrays are looked through: their
/// elements are reported at the path of the array. Scalars borrow from the record's text
/// (`'a`), so a visitor may keep them while the text lives.
pub(crate) trait Visit<'a> {
    /// Entering member `key` of an object.
    fn enter(&mut self, key: &str);
    /// Leaving the member last entered.
    fn leave(&mut self);
    /// A scalar at the current path.
    fn scalar(&mut self, value: Scalar<'a>);
    /// An object at the current path.
    fn object(&mut self) {}
    /// An object that is an element of an array begins at byte `start` of the record
    /// (reported before its [`Self::object`]).
    fn element_open(&mut self, start: usize) {
        let _ = start;
    }
    /// The element last opened ends: `end` is the byte after its `}`.
    fn element_close(&mut self, end: usize) {
        let _ = end;
    }
    /// Before a key is read: `text` is what follows its opening quote. A visitor that
    /// expects a key here and finds that `text` starts with it and a closing quote enters
    /// that member, as [`Self::enter`] would, and returns the key's length; the walker then
    /// skips it without scanning for its end. The key must hold no `"` or `\` (so that
    /// its bytes and a quote are that very key). By default, `None`: the walker reads the
    /// key and calls [`Self::enter`].
    fn enter_expected(&mut self, text: &[u8]) -> Option<usize> {
        let _ = text;
        None
    }
}

struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Cursor<'a> {
        Cursor {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Reads a string literal (the cursor is on its opening quote).
    #[inline]
    fn string(&mut self) -> Cow<'a, str> {
        let start = self.i + 1;
        let end = quote_or_backslash(self.b, start);
        if self.b.get(end) == Some(&b'"') {
            // The common case, no escapes: `start` follows a quote and `end` is one, so
            // both are character boundaries.
            self.i = end + 1;
            return Cow::Borrowed(self.s.get(start..end).unwrap_or(""));
        }
        self.escaped_string(start, end)
    }

    /// The rest of [`Self::string`] once a backslash (or the end of the text) was met at
    /// `j`.
    #[cold]
    fn escaped_string(&mut self, start: usize, mut j: usize) -> Cow<'a, str> {
        let mut escaped = false;
        while self.b.get(j) == Some(&b'\\') {
            escaped = true;
            j = quote_or_backslash(self.b, j + 2);
        }
        let end = j.min(self.b.len());
        self.i = (end + 1).min(self.b.len());
        let raw = self.s.get(start..end).unwrap_or("");
        if escaped {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        }
    }

    fn skip_string(&mut self) {
        let mut j = self.i + 1;
        loop {
            j = quote_or_backslash(self.b, j);
            match self.b.get(j) {
                Some(b'\\') => j += 2,
                _ => break,
            }
        }
        self.i = (j + 1).min(self.b.len());
    }

    fn number(&mut self) -> &'a str {
        let start = self.i;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    fn literal(&mut self) {
        while matches!(self.peek(), Some(b'a'..=b'z')) {
            self.i += 1;
        }
    }

    /// Skips one value of any kind.
    fn skip_value(&mut self) {
        match self.peek() {
            None => {}
            Some(b'"') => self.skip_string(),
            Some(b'{' | b'[') => self.skip_container(),
            Some(b'-' | b'0'..=b'9') => {
                self.number();
            }
            Some(b't' | b'f' | b'n') => self.literal(),
            Some(_) => self.i += 1,
        }
    }

    /// Skips the object or array opening here, to past its closing bracket (or to the end
    /// of the text): only strings and brackets matter inside; numbers, literals and
    /// punctuation are passed over a byte at a time.
    fn skip_container(&mut self) {
        let mut depth = 0usize;
        while let Some(&byte) = self.b.get(self.i) {
            match byte {
                b'"' => {
                    self.skip_string();
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.i += 1;
                        return;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }
}

/// Walks a whole record, reporting each member, object and scalar to `visit`.
pub(crate) fn walk<'a>(doc: &'a str, visit: &mut impl Visit<'a>) {
    let mut cursor = Cursor::new(doc);
    walk_value(&mut cursor, visit);
}

fn walk_value<'a>(c: &mut Cursor<'a>, visit: &mut impl Visit<'a>) {
    match c.peek() {
        Some(b'{') => {
            c.i += 1;
            visit.object();
            if c.eat(b'}') {
                return;
            }
            loop {
                if c.peek() != Some(b'"') {
                    return;
                }
                // Records of one collection write their keys in the same order: the key
                // the visitor expects is most often the one here, and then needs no scan.
                let at = c.i + 1;
                if let Some(len) = visit.enter_expected(c.b.get(at..).unwrap_or_default()) {
                    c.i = at + len + 1;
                    if !c.eat(b':') {
                        // Not JSON this walker reads (it stops); the member is left.
                        visit.leave();
                        return;
                    }
                } else {
                    let key = c.string();
                    if !c.eat(b':') {
                        return;
                    }
                    visit.enter(&key);
                }
                walk_value(c, visit);
                visit.leave();
                if !c.eat(b',') {
                    c.eat(b'}');
                    return;
                }
            }
        }
        Some(b'[') => {
            c.i += 1;
            if c.eat(b']') {
                return;
            }
            loop {
                let before = c.i;
                if c.peek() == Some(b'{') {
                    visit.element_open(c.i);
                    walk_value(c, visit);
                    visit.element_close(c.i);
                } else {
                    walk_value(c, visit);
                }
                if c.i == before || !c.eat(b',') {
                    c.eat(b']');
                    return;
                }
            }
        }
        Some(b'"') => {
            let s = c.string();
            visit.scalar(Scalar::Str(s));
        }
        Some(b't') => {
            c.literal();
            visit.scalar(Scalar::Bool(true));
        }
        Some(b'f') => {
            c.literal();
            visit.scalar(Scalar::Bool(false));
        }
        Some(b'n') => c.literal(),
        Some(b'-' | b'0'..=b'9') => {
            let n = c.number();
            visit.scalar(Scalar::Num(n));
        }
        _ => {}
    }
}

/// Calls `f` with every scalar at `path` (arrays looked through), in document order, until
/// `f` returns `false`.
pub(crate) fn values_at<'a>(doc: &'a str, path: &[&str], f: &mut dyn FnMut(Scalar<'a>) -> bool) {
    let mut c = Cursor::new(doc);
    let _ = values_in(&mut c, path, f);
}

/// Returns `false` once `f` asked to stop.
fn values_in<'a>(c: &mut Cursor<'a>, path: &[&str], f: &mut dyn FnMut(Scalar<'a>) -> bool) -> bool {
    match c.peek() {
        Some(b'[') => {
            c.i += 1;
            if c.eat(b']') {
                return true;
            }
            loop {
                let before = c.i;
                if !values_in(c, path, f) {
                    return false;
                }
                if c.i == before || !c.eat(b',') {
                    c.eat(b']');
                    return true;
                }
            }
        }
        Some(b'{') if !path.is_empty() => {
            c.i += 1;
            if c.eat(b'}') {
                return true;
            }
            loop {
                if c.peek() != Some(b'"') {
                    return true;
                }
                let key = c.string();
                if !c.eat(b':') {
                    return true;
                }
                if key == path[0] {
                    if !values_in(c, &path[1..], f) {
                        return false;
                    }
                } else {
                    c.skip_value();
                }
                if !c.eat(b',') {
                    c.eat(b'}');
                    return true;
                }
            }
        }
        _ if !path.is_empty() => {
            c.skip_value();
            true
        }
        Some(b'"') => {
            let s = c.string();
            f(Scalar::Str(s))
        }
        Some(b't') => {
            c.literal();
            f(Scalar::Bool(true))
        }
        Some(b'f') => {
            c.literal();
            f(Scalar::Bool(false))
        }
        Some(b'-' | b'0'..=b'9') => {
            let n = c.number();
            f(Scalar::Num(n))
        }
        _ => {
            c.skip_value();
            true
        }
    }
}

/// The top-level members of a record: each key with the byte range of the whole member
/// (`"key":value`).
#[cfg(test)]
pub(crate) fn members(doc: &str) -> Vec<(Cow<'_, str>, Range<usize>)> {
    let mut out = Vec::new();
    each_member(doc, |key, range| {
        out.push((key, range));
        true
    });
    out
}

/// Calls `f` with each top-level member of a record, in order — its key and the byte
/// range of the whole member (`"key":value`) — until it returns `false`: the rest of the
/// record is not read.
pub(crate) fn each_member<'a>(doc: &'a str, mut f: impl FnMut(Cow<'a, str>, Range<usize>) -> bool) {
    let mut c = Cursor::new(doc);
    if !c.eat(b'{') || c.eat(b'}') {
        return;
    }
    loop {
        let start = c.i;
        if c.peek() != Some(b'"') {
            return;
        }
        let key = c.string();
        if !c.eat(b':') {
            return;
        }
        c.skip_value();
        if !f(key, start..c.i) || !c.eat(b',') {
            return;
        }
    }
}

/// The value of a JSON string literal (with its quotes) of compact JSON.
pub(crate) fn string_value(literal: &str) -> Cow<'_, str> {
    let body = literal
        .get(1..literal.len().saturating_sub(1))
        .unwrap_or("");
    if body.contains('\\') {
        Cow::Owned(unescape(body))
    } else {
        Cow::Borrowed(body)
    }
}

/// The kind of the compact JSON value starting with byte `b`.
pub(crate) fn kind_at(b: Option<u8>) -> super::transcode::Kind {
    use super::transcode::Kind;
    match b {
        Some(b'"') => Kind::String,
        Some(b'[') => Kind::Array,
        Some(b'{') => Kind::Object,
        Some(b't' | b'f') => Kind::Bool,
        Some(b'n') | None => Kind::Null,
        Some(_) => Kind::Number,
    }
}

/// Where the elements of a compact JSON array of strings are: each string literal's
/// range in `array`, quotes included; else the index and kind of the first element that
/// is not a string. Literals written as serde_json writes them (as the transcoder does)
/// are equal exactly when their strings are.
pub(crate) fn string_literals(
    array: &str,
) -> Result<smallvec::SmallVec<[Range<usize>; 4]>, (usize, super::transcode::Kind)> {
    let mut c = Cursor::new(array);
    let mut out = smallvec::SmallVec::new();
    if !c.eat(b'[') || c.eat(b']') {
        return Ok(out);
    }
    loop {
        if c.peek() != Some(b'"') {
            return Err((out.len(), kind_at(c.peek())));
        }
        let start = c.i;
        c.skip_string();
        out.push(start..c.i);
        if !c.eat(b',') {
            return Ok(out);
        }
    }
}

/// Decodes the escapes of a JSON string body.
pub(crate) fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex = |chars: &mut std::str::Chars<'_>| {
                    let digits: String = chars.by_ref().take(4).collect();
                    (digits.len() == 4)
                        .then(|| u32::from_str_radix(&digits, 16).ok())
                        .flatten()
                };
                let Some(high) = hex(&mut chars) else {
                    out.push('\u{FFFD}');
                    continue;
                };
                let code = if (0xD800..0xDC00).contains(&high) {
                    let mut look = chars.clone();
                    match (look.next(), look.next()) {
                        (Some('\\'), Some('u')) => match hex(&mut look) {
                            Some(low) if (0xDC00..0xE000).contains(&low) => {
                                chars = look;
                                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                            }
                            _ => 0xFFFD,
                        },
                        _ => 0xFFFD,
                    }
                } else {
                    high
                };
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        path: Vec<String>,
        seen: Vec<(String, Scalar<'static>)>,
        objects: Vec<String>,
    }

    impl Visit<'_> for Collect {
        fn enter(&mut self, key: &str) {
            self.path.push(key.to_string());
        }
        fn leave(&mut self) {
            self.path.pop();
        }
        fn scalar(&mut self, value: Scalar<'_>) {
            let owned = match value {
                Scalar::Str(s) => Scalar::Str(Cow::Owned(s.into_owned())),
                Scalar::Num(n) => Scalar::Num(Box::leak(n.to_string().into_boxed_str())),
                Scalar::Bool(b) => Scalar::Bool(b),
            };
            self.seen.push((self.path.join("."), owned));
        }
        fn object(&mut self) {
            self.objects.push(self.path.join("."));
        }
    }

    const DOC: &str = r#"{"id":"a-1","hp":"120","attacks":[{"name":"Flame \"Burst\"","damage":"30","cost":["Fire","Fire"]},{"name":"Blaze"}],"n":-1.5e3,"ok":true,"gone":null,"e":{},"x":[]}"#;

    #[test]
    fn walks_every_scalar_with_its_path() {
        let mut c = Collect::default();
        walk(DOC, &mut c);
        let seen: Vec<String> = c.seen.iter().map(|(p, v)| format!("{p}={v:?}")).collect();
        assert_eq!(
            seen,
            [
                r#"id=Str("a-1")"#,
                r#"hp=Str("120")"#,
                r#"attacks.name=Str("Flame \"Burst\"")"#,
                r#"attacks.damage=Str("30")"#,
                r#"attacks.cost=Str("Fire")"#,
                r#"attacks.cost=Str("Fire")"#,
                r#"attacks.name=Str("Blaze")"#,
                r#"n=Num("-1.5e3")"#,
                "ok=Bool(true)",
            ]
        );
        assert_eq!(c.objects, ["", "attacks", "attacks", "e"]);
    }

    /// Guesses keys from a list in turn (right, a prefix or an extension of the real key,
    /// or another one), for [`walks_the_same_with_guessed_keys`].
    struct Guess {
        inner: Collect,
        guesses: &'static [&'static str],
        next: usize,
        taken: usize,
    }

    impl Visit<'_> for Guess {
        fn enter(&mut self, key: &str) {
            self.next += 1;
            self.inner.enter(key);
        }
        fn leave(&mut self) {
            self.inner.leave();
        }
        fn scalar(&mut self, value: Scalar<'_>) {
            self.inner.scalar(value);
        }
        fn object(&mut self) {
            self.inner.object();
        }
        fn enter_expected(&mut self, text: &[u8]) -> Option<usize> {
            let key = self.guesses[self.next % self.guesses.len()];
            let matches = text.starts_with(key.as_bytes()) && text.get(key.len()) == Some(&b'"');
            if !matches {
                return None;
            }
            self.next += 1;
            self.taken += 1;
            self.inner.enter(key);
            Some(key.len())
        }
    }

    /// A right guess saves the scan and reports the same key; a wrong one (even a prefix
    /// of the key, or a key the text's escaped key starts with) changes nothing.
    #[test]
    fn walks_the_same_with_guessed_keys() {
        let docs = [
            DOC,
            r#"{"a\"b":1,"a\\":2,"ab":3,"a":{"a":4}}"#,
            r#"{"id":"x","idx":1,"i":2}"#,
        ];
        let guesses: [&'static [&'static str]; 3] = [
            &[
                "id", "hp", "attacks", "name", "damage", "cos", "n", "ok", "gonex", "e", "x",
            ],
            &["a", "ab", "a"],
            &["idx", "id", "i", "id"],
        ];
        let mut taken = 0;
        for doc in docs {
            for guesses in guesses {
                let mut plain = Collect::default();
                walk(doc, &mut plain);
                let mut guessing = Guess {
                    inner: Collect::default(),
                    guesses,
                    next: 0,
                    taken: 0,
                };
                walk(doc, &mut guessing);
                assert_eq!(guessing.inner.seen, plain.seen, "{doc} {guesses:?}");
                assert_eq!(guessing.inner.objects, plain.objects, "{doc} {guesses:?}");
                taken += guessing.taken;
            }
        }
        assert!(taken >= 8, "{taken} right guesses");
    }

    #[test]
    fn values_at_a_path() {
        let get = |path: &[&str]| {
            let mut out = Vec::new();
            values_at(DOC, path, &mut |v| {
                out.push(format!("{v:?}"));
                true
            });
            out
        };
        assert_eq!(
            get(&["attacks", "name"]),
            [r#"Str("Flame \"Burst\"")"#, r#"Str("Blaze")"#]
        );
        assert_eq!(get(&["id"]), [r#"Str("a-1")"#]);
        assert_eq!(get(&["gone"]), Vec::<String>::new());
        assert_eq!(get(&["attacks"]), Vec::<String>::new());
        assert_eq!(get(&["nope", "x"]), Vec::<String>::new());
        let mut first = None;
        values_at(DOC, &["attacks", "cost"], &mut |v| {
            first = Some(v);
            false
        });
        assert_eq!(first, Some(Scalar::Str(Cow::Borrowed("Fire"))));
    }

    #[test]
    fn top_level_members() {
        let m: Vec<(String, &str)> = members(DOC)
            .into_iter()
            .map(|(k, r)| (k.into_owned(), &DOC[r]))
            .collect();
        assert_eq!(m[0], ("id".to_string(), r#""id":"a-1""#));
        assert_eq!(m[5], ("gone".to_string(), r#""gone":null"#));
        assert_eq!(m.len(), 8);
    }

    /// Any compact JSON value, its strings full of brackets, quotes and backslashes.
    fn json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            "[a-z{}\\[\\]\"\\\\ é,:]{0,12}".prop_map(Value::String),
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\\[{\"]{1,4}", inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// `members` splits any compact object into its members, as serde_json writes
        /// them: containers are skipped by their brackets, never by one inside a string.
        #[test]
        fn members_are_serde_jsons_members(
            pairs in proptest::collection::vec(("[a-z\\[\"]{1,4}", json()), 0..8)
        ) {
            let object: serde_json::Map<String, serde_json::Value> = pairs.into_iter().collect();
            let doc = serde_json::to_string(&object).unwrap();
            let expected: Vec<(String, String)> = object
                .iter()
                .map(|(k, v)| {
                    let member = format!("{}:{}", serde_json::to_string(k).unwrap(), v);
                    (k.clone(), member)
                })
                .collect();
            let got: Vec<(String, String)> = members(&doc)
                .into_iter()
                .map(|(k, r)| (k.into_owned(), doc[r].to_string()))
                .collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn unescapes() {
        assert_eq!(
            unescape(r#"a\"b\\c\n\u00e9\ud83d\ude00\u0041"#),
            "a\"b\\c\né😀A"
        );
        assert_eq!(unescape(r#"\ud83d"#), "\u{FFFD}");
        assert_eq!(unescape(r#"\u12"#), "\u{FFFD}");
    }

    #[test]
    fn never_panics_on_truncated_input() {
        for end in 0..DOC.len() {
            if let Some(prefix) = DOC.get(..end) {
                walk(prefix, &mut Collect::default());
                values_at(prefix, &["attacks", "name"], &mut |_| true);
                let _ = members(prefix);
            }
        }
    }
}
