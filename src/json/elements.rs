//! The elements of arrays of objects in cardex's compact JSON: where each object that is
//! an element of an array starts and ends, at which dotted path, and inside which other
//! such element. The store numbers these elements to answer nested queries
//! (`variants.prices:(currency:USD AND market>=100)`).
//!
//! Like [`super::walk`], the input is text that [`super::write`] produced, and arrays are
//! looked through: the elements of an array of arrays of objects are elements at the
//! array's path. On other input the scan never panics or loops; it stops.

use super::scan::quote_or_backslash;

/// Receives the elements found by [`elements`], properly nested: every `open` is matched
/// by one `close` before the enclosing element's.
pub(crate) trait ElementVisit {
    /// An object that is an element of an array at `path` (dotted, keys as written)
    /// starts at byte `start`.
    fn open(&mut self, path: &str, start: usize);
    /// The element opened last ends just before byte `end`.
    fn close(&mut self, end: usize);
    /// An object at `path` (not the record itself) that is not an element of an array.
    fn plain(&mut self, path: &str) {
        let _ = path;
    }
}

/// JSON nests no deeper than this in records the loader accepted (serde_json's limit is
/// 128); deeper text is not scanned further.
const MAX_DEPTH: usize = 256;

/// Reports every object of `text` that is an element of an array, with its path.
pub(crate) fn elements(text: &str, visit: &mut impl ElementVisit) {
    let mut scan = Scan {
        text,
        b: text.as_bytes(),
        i: 0,
        path: String::new(),
    };
    scan.value(visit, false, 0);
}

struct Scan<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    path: String,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Reads the value at the cursor; `element` when it is an element of an array.
    /// Returns `false` when the text is not as expected (the scan then stops).
    fn value(&mut self, visit: &mut impl ElementVisit, element: bool, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'{') => self.object(visit, element, depth),
            Some(b'[') => {
                self.i += 1;
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return true;
                }
                loop {
                    if !self.value(visit, true, depth + 1) {
                        return false;
                    }
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return true;
                        }
                        _ => return false,
                    }
                }
            }
            Some(b'"') => self.string().is_some(),
            Some(_) => {
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']') {
                        break;
                    }
                    self.i += 1;
                }
                true
            }
            None => false,
        }
    }

    fn object(&mut self, visit: &mut impl ElementVisit, element: bool, depth: usize) -> bool {
        if element {
            visit.open(&self.path, self.i);
        } else if depth > 0 {
            visit.plain(&self.path);
        }
        self.i += 1;
        let ok = if self.peek() == Some(b'}') {
            self.i += 1;
            true
        } else {
            self.members(visit, depth)
        };
        if ok && element {
            visit.close(self.i);
        }
        ok
    }

    /// The members of an object, from its first key to its closing brace.
    fn members(&mut self, visit: &mut impl ElementVisit, depth: usize) -> bool {
        loop {
            let Some((start, end)) = self.string() else {
                return false;
            };
            if self.peek() != Some(b':') {
                return false;
            }
            self.i += 1;
            let before = self.path.len();
            if before > 0 {
                self.path.push('.');
            }
            let key = &self.text[start..end];
            if key.contains('\\') {
                match serde_json::from_str::<String>(&self.text[start - 1..=end]) {
                    Ok(decoded) => self.path.push_str(&decoded),
                    Err(_) => return false,
                }
            } else {
                self.path.push_str(key);
            }
            let ok = self.value(visit, false, depth + 1);
            self.path.truncate(before);
            if !ok {
                return false;
            }
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    /// Skips a string literal at the cursor, returning the byte range of its contents.
    fn string(&mut self) -> Option<(usize, usize)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        loop {
            j = quote_or_backslash(self.b, j);
            match self.b.get(j) {
                Some(b'"') => break,
                Some(_) => j += 2,
                None => return None,
            }
        }
        self.i = j + 1;
        Some((start, j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen {
        open: Vec<(String, usize)>,
        spans: Vec<(String, String, Option<usize>)>,
    }

    impl ElementVisit for Seen {
        fn open(&mut self, path: &str, start: usize) {
            self.open.push((path.to_string(), start));
        }
        fn close(&mut self, end: usize) {
            let (path, start) = self.open.pop().unwrap();
            let parent = self.open.len().checked_sub(1);
            self.spans.push((path, format!("{start}..{end}"), parent));
        }
    }

    #[test]
    fn finds_elements_of_arrays_of_objects_with_their_parents() {
        let text = r#"{"id":"a","tags":["x","y"],"legal":{"s":"ok"},"v":[{"n":"A","p":[{"m":1},{"m":"]}"}]},{"n":"B"}],"m":[[{"k":1}]]}"#;
        let mut seen = Seen::default();
        elements(text, &mut seen);
        assert!(seen.open.is_empty());
        let spans: Vec<(&str, &str)> = seen
            .spans
            .iter()
            .map(|(p, s, _)| {
                let (a, b) = s.split_once("..").unwrap();
                (
                    p.as_str(),
                    &text[a.parse::<usize>().unwrap()..b.parse().unwrap()],
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                ("v.p", r#"{"m":1}"#),
                ("v.p", r#"{"m":"]}"}"#),
                ("v", r#"{"n":"A","p":[{"m":1},{"m":"]}"}]}"#),
                ("v", r#"{"n":"B"}"#),
                ("m", r#"{"k":1}"#),
            ]
        );
        // The prices' parent is the open variant; the variants have none.
        let parents: Vec<Option<usize>> = seen.spans.iter().map(|s| s.2).collect();
        assert_eq!(parents, [Some(0), Some(0), None, None, None]);
    }

    #[test]
    fn stops_on_text_that_is_not_json() {
        for text in [
            "",
            "{",
            r#"{"a":[{"b":1"#,
            r#"{"a":[{"b":"x}]}"#,
            "[[[[",
            "{\"a\":}",
        ] {
            let mut seen = Seen::default();
            elements(text, &mut seen);
            assert!(seen.spans.len() <= 1, "{text}");
        }
    }
}
