//! Full-width forms of the syntax. A Japanese (or Chinese, or Korean) input method in
//! full-width mode types `ｈｐ＞１００` for `hp>100`, `（` for `(`, `ＯＲ` for `OR` and
//! `　` (U+3000) for a space. `q` is read with every full-width form of an ASCII
//! character (U+FF01–U+FF5E) as that character, but `＼`, and U+3000 as a space; the
//! tree's spans and an error's place are offsets in `q` as it was sent. Values lose
//! nothing: matching folds both sides to the same forms (NFKC).

use super::ast::{Expr, Query, Span, Test, Value};
use super::error::Diagnostic;

/// `q` with its full-width forms as ASCII, and where each of its bytes was in `q`.
#[derive(Debug)]
pub(crate) struct Narrowed {
    /// The text the parser reads.
    pub(crate) text: String,
    /// The offset in `q` of each byte of `text`, and of its end.
    source_at: Vec<usize>,
}

/// `query` with its full-width forms as ASCII; `None` when it holds none (the text is read
/// as it is).
pub(crate) fn narrow(query: &str) -> Option<Narrowed> {
    if query.is_ascii() || !query.chars().any(|c| ascii_form(c).is_some()) {
        return None;
    }
    let mut text = String::with_capacity(query.len());
    let mut source_at = Vec::with_capacity(query.len() + 1);
    for (at, c) in query.char_indices() {
        match ascii_form(c) {
            Some(ascii) => {
                text.push(ascii);
                source_at.push(at);
            }
            None => {
                text.push(c);
                source_at.extend(at..at + c.len_utf8());
            }
        }
    }
    source_at.push(query.len());
    Some(Narrowed { text, source_at })
}

/// Whether `text` holds a character [`narrow`] reads as another.
pub(crate) fn has_wide_forms(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(|c| ascii_form(c).is_some())
}

/// The ASCII character a full-width form (or the ideographic space) stands for. `＼` is
/// left alone: it is also the yen sign's glyph in Japanese fonts, not an escape a person
/// means to type.
fn ascii_form(c: char) -> Option<char> {
    match c {
        '\u{3000}' => Some(' '),
        '＼' => None,
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0),
        _ => None,
    }
}

impl Narrowed {
    /// `span` of [`Narrowed::text`] as a span of `q`.
    fn source_span(&self, span: Span) -> Span {
        let at = |offset: usize| self.source_at[offset.min(self.source_at.len() - 1)];
        Span::new(at(span.start), at(span.end))
    }

    /// The tree of [`Narrowed::text`] with its spans in `q`, owning its text.
    pub(crate) fn source_query(&self, query: Query<'_>) -> Query<'static> {
        let mut query = query.into_owned();
        if let Some(expr) = &mut query.expr {
            self.respan_expr(expr);
        }
        query
    }

    /// An error about [`Narrowed::text`] as one about `q`.
    pub(crate) fn source_error<K: std::fmt::Display>(
        &self,
        error: Diagnostic<K>,
        query: &str,
    ) -> Diagnostic<K> {
        let span = self.source_span(error.span());
        error.about(span, query)
    }

    fn respan_expr(&self, expr: &mut Expr<'_>) {
        match expr {
            Expr::And(items) | Expr::Or(items) => {
                for item in items {
                    self.respan_expr(item);
                }
            }
            Expr::Not(inner) => self.respan_expr(inner),
            Expr::Term(term) => {
                term.span = self.source_span(term.span);
                if let Some(field) = &mut term.field {
                    field.span = self.source_span(field.span);
                }
                match &mut term.test {
                    Test::Value(value) => self.respan_value(value),
                    Test::Compare(_, number) => number.span = self.source_span(number.span),
                    Test::Group(any) => {
                        for value in any.iter_mut().flatten() {
                            self.respan_value(value);
                        }
                    }
                    Test::Nested(inner) => self.respan_expr(inner),
                }
            }
        }
    }

    fn respan_value(&self, value: &mut Value<'_>) {
        match value {
            Value::Word(text) | Value::Phrase(text) => text.span = self.source_span(text.span),
            Value::Range(range) => range.span = self.source_span(range.span),
        }
    }
}

/// A field name or value as the tree holds it (used by the tests of this module).
#[cfg(test)]
fn text_of<'a>(value: &'a Value<'_>) -> Option<&'a std::borrow::Cow<'a, str>> {
    match value {
        Value::Word(t) | Value::Phrase(t) => Some(&t.value),
        Value::Range(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parse;

    #[test]
    fn full_width_syntax_reads_as_ascii() {
        for (wide, ascii) in [
            ("ｈｐ＞１００", "hp>100"),
            (
                "（ｎａｍｅ：ｐｉｋａ OR name:raichu）",
                "(name:pika OR name:raichu)",
            ),
            (
                "name:pikachu ＯＲ name:raichu",
                "name:pikachu OR name:raichu",
            ),
            ("name:pikachu　－ｈｐ＞＝１２０", "name:pikachu -hp>=120"),
            ("ｈｐ：［１００ ＴＯ ＊］", "hp:[100 TO *]"),
            ("ｎａｍｅ：＂ｐｉｋａ ｃｈｕ＂", "name:\"pika chu\""),
            ("name:ピカ＊", "name:ピカ*"),
        ] {
            assert_eq!(
                parse(wide).unwrap().to_string(),
                parse(ascii).unwrap().to_string(),
                "{wide}"
            );
        }
    }

    #[test]
    fn spans_and_errors_point_into_the_query_as_sent() {
        let q = "ｎａｍｅ：ピカ　ｈｐ＞１００";
        let parsed = parse(q).unwrap();
        let Some(Expr::And(terms)) = &parsed.expr else {
            panic!("{parsed:?}")
        };
        let Expr::Term(name) = &terms[0] else {
            panic!()
        };
        assert_eq!(&q[name.span.start..name.span.end], "ｎａｍｅ：ピカ");
        let field = name.field.as_ref().unwrap();
        assert_eq!(&q[field.span.start..field.span.end], "ｎａｍｅ");
        let Test::Value(value) = &name.test else {
            panic!()
        };
        assert_eq!(&q[value.span().start..value.span().end], "ピカ");
        assert_eq!(text_of(value).map(|t| t.as_ref()), Some("ピカ"));
        let Expr::Term(hp) = &terms[1] else { panic!() };
        let Test::Compare(_, number) = &hp.test else {
            panic!()
        };
        assert_eq!(&q[number.span.start..number.span.end], "１００");
        assert_eq!(&q[hp.span.start..hp.span.end], "ｈｐ＞１００");

        let err = parse("ｈｐ＞　ＯＲ ｘ").unwrap_err();
        assert_eq!(err.query(), "ｈｐ＞　ＯＲ ｘ");
        assert_eq!(err.column(), 4);
        assert_eq!(&err.query()[err.offset()..], "　ＯＲ ｘ");
        let err = parse("（ｎａｍｅ：ｘ").unwrap_err();
        assert_eq!(err.offset(), 0, "{err}");
        assert!(err.to_string().ends_with("（ｎａｍｅ：ｘ\n^^"), "{err}");
    }

    #[test]
    fn the_yen_backslash_and_other_text_stay() {
        assert!(narrow("name:ピカチュウ").is_none());
        assert!(narrow("name:pikachu").is_none());
        let narrowed = narrow("ｘ＼ｙ").unwrap();
        assert_eq!(narrowed.text, "x＼y");
    }
}
