//! Parse errors: what was expected, where (byte offset and character column), rendered as
//! the query with a caret under the place.

use std::fmt;

use super::ast::Span;
use crate::text::display_width;

/// What the parser found where it expected something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The query ended.
    End,
    /// Whitespace.
    Whitespace,
    /// A keyword (`AND`, `OR`, `NOT`, `TO`, `&&`, `||`), as written.
    Keyword(&'static str),
    /// Some other text (one token, or one character).
    Text(String),
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::End => f.write_str("end of input"),
            Found::Whitespace => f.write_str("whitespace"),
            Found::Keyword(k) => write!(f, "keyword `{k}`"),
            Found::Text(t) => write!(f, "`{t}`"),
        }
    }
}

/// Why a query could not be parsed. Each kind renders its own message; none leaks parser
/// internals.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The query is longer than the limit (5,120 bytes of UTF-8).
    QueryTooLong {
        /// Length of the query in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Parentheses nest deeper than the limit (32).
    DepthLimitExceeded {
        /// The limit.
        max: usize,
    },
    /// More terms than the limit (512); a grouped value counts as one term.
    TooManyTerms {
        /// The limit.
        max: usize,
    },
    /// A `"` without its closing `"`.
    UnclosedQuote,
    /// A `(` without its closing `)`.
    UnclosedParen,
    /// A `)` without an opening `(`.
    UnexpectedCloseParen,
    /// `()` or `field:()`.
    EmptyGroup {
        /// The field of a grouped value, `None` for a group of terms.
        field: Option<String>,
    },
    /// A term was expected: at the start, after `AND`, `OR`, `NOT`, `-` or `!`.
    ExpectedTerm {
        /// The operator the term should follow, if any.
        after: Option<&'static str>,
        /// What was there instead.
        found: Found,
    },
    /// `field:` with no value after it.
    ExpectedValue {
        /// The field as typed.
        field: String,
        /// What was there instead.
        found: Found,
    },
    /// A number was expected: after a comparison operator or as a range bound.
    ExpectedNumber {
        /// What the number should follow (`hp>=`, or `[` for a range bound).
        after: String,
        /// What was there instead.
        found: Found,
    },
    /// A grouped value `field:( )` with an operator or `(` not followed by a value.
    ExpectedGroupValue {
        /// `(`, `AND` or `OR`.
        after: &'static str,
        /// What was there instead.
        found: Found,
    },
    /// A range without `TO` between its bounds.
    ExpectedTo {
        /// What was there instead.
        found: Found,
    },
    /// `TO` glued to the lower bound (`[1TO 5]`).
    SpaceBeforeTo,
    /// A range without its closing `]` or `}`.
    UnclosedRange {
        /// What was there instead.
        found: Found,
    },
    /// A keyword used as a value (`name:AND`); quoting it makes it a value.
    ReservedKeyword {
        /// The keyword.
        word: &'static str,
    },
    /// Text glued to the end of a phrase, range, group or number (`name:"a"b`).
    ExpectedSeparator {
        /// What was there instead.
        found: Found,
    },
    /// A `(` inside a grouped value.
    NestedGroup,
    /// `!` or `^` before a nested query (`!attacks:(name:x)`): they apply to values.
    PrefixedNested {
        /// `!` or `^`.
        prefix: &'static str,
    },
    /// `!` or `^` before a comparison (`!hp>=100`): they apply to values, and a comparison
    /// compares numbers.
    PrefixedComparison {
        /// `!` or `^`.
        prefix: &'static str,
    },
    /// `-` (but for a negative number), `!` or `^` starting a value inside a group of
    /// values (`rarity:(!"SR")`, `types:(fire -water)`): they apply to a whole term.
    PrefixedGroupValue {
        /// `-`, `!` or `^`.
        prefix: &'static str,
        /// The field of the grouped value.
        field: String,
    },
    /// A `\` that ends the word or the query (`id:abc\`): it escapes nothing.
    DanglingEscape,
    /// A word with a `\` escape and an unescaped `*` or `?` (`name:char\-*`): a word with
    /// escapes is literal throughout, as a quoted value is.
    EscapeWithWildcard,
    /// `!` or `^` before a parenthesis (`!(name:x)`): they apply to one term's values.
    PrefixedParenthesis {
        /// `!` or `^`.
        prefix: &'static str,
    },
    /// A dotted name with an empty part before `:` or a comparison (`attacks..name:x`,
    /// `.name:x`, `name.:x`): a mistyped field, which read as a bare value would search
    /// `name` for its words.
    BadFieldName {
        /// The name as written.
        name: String,
    },
    /// A number bound written as a date that is no day of the calendar (`2020/02/30`,
    /// `2020-13-01`).
    InvalidDate {
        /// The date as written.
        date: String,
        /// Why it is no date (`February 2020 has 29 days`).
        reason: String,
    },
    /// A parser state no designed error covers. Every occurrence is a bug: the `parse` fuzz
    /// target fails on it.
    Internal,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseErrorKind::*;
        match self {
            QueryTooLong { len, max } => {
                write!(f, "query is too long: {len} bytes, the limit is {max}")
            }
            DepthLimitExceeded { max } => write!(
                f,
                "parentheses are nested more than {max} deep; rewrite the query with fewer nested groups"
            ),
            TooManyTerms { max } => write!(
                f,
                "query has more than {max} terms; use a grouped value such as `id:(a OR b)` or split the query"
            ),
            UnclosedQuote => f.write_str("unclosed quote: expected a closing `\"` for the phrase that starts here"),
            UnclosedParen => f.write_str("expected `)` to close the group that opens here"),
            UnexpectedCloseParen => f.write_str("found `)` without a matching `(`"),
            EmptyGroup { field: None } => f.write_str("empty group: expected a term inside `( )`"),
            EmptyGroup { field: Some(field) } => {
                write!(f, "empty group: expected a value inside `{field}:( )`")
            }
            ExpectedTerm { after: Some(op), found } => {
                write!(f, "expected a term after `{op}`, found {found}")
            }
            ExpectedTerm { after: None, found } => write!(f, "expected a term, found {found}"),
            ExpectedValue { field, found } => {
                write!(f, "expected a value after `{field}:`, found {found}")
            }
            ExpectedNumber { after, found } => {
                write!(f, "expected a number after `{after}`, found {found}")?;
                // After a comparison operator: maybe a word that holds one (`pika>chu`).
                match found {
                    Found::Text(word)
                        if after.ends_with(['<', '>', '='])
                            && !word.contains('"')
                            && !word.starts_with(')') =>
                    {
                        let quoted = match after.split_once(':') {
                            Some((field, op)) => format!("{field}:\"{op}{word}\""),
                            None => format!("\"{after}{word}\""),
                        };
                        write!(f, " (to search for it as text, quote it: `{quoted}`)")
                    }
                    _ => Ok(()),
                }
            }
            ExpectedGroupValue { after, found } => {
                write!(f, "expected a value after `{after}` in a grouped value, found {found}")
            }
            ExpectedTo { found } => {
                write!(f, "expected `TO` between the bounds of the range, found {found}")
            }
            SpaceBeforeTo => f.write_str("expected whitespace before `TO` in the range"),
            UnclosedRange { found } => {
                write!(f, "expected `]` or `}}` to close the range, found {found}")
            }
            ReservedKeyword { word } => write!(
                f,
                "`{word}` is a keyword, not a value; to search for the word, quote it: `\"{word}\"`"
            ),
            ExpectedSeparator { found } => {
                write!(f, "expected whitespace or `)` after the value, found {found}")
            }
            NestedGroup => f.write_str(
                "expected a value, found `(`: values inside `field:( )` cannot be grouped further \
                 (a query on the elements of an array of objects names their fields: \
                 `attacks:(name:x AND damage>=60)`)",
            ),
            PrefixedNested { prefix } => write!(
                f,
                "`{prefix}` applies to values, not to a nested query; write it inside the \
                 parentheses, before a term: `attacks:({prefix}name:x)`"
            ),
            PrefixedComparison { prefix } => write!(
                f,
                "`{prefix}` applies to values, not to a comparison, which compares numbers as \
                 they are; drop it (`hp>=100`), or quote the value to search the text \
                 (`{prefix}name:\"hp>=100\"`)"
            ),
            PrefixedGroupValue { prefix, field } => write!(
                f,
                "`{prefix}` cannot start a value inside `{field}:( )`: it applies to a whole \
                 term; write `{prefix}` before `{field}:( )` for the whole group, or the value \
                 as a term of its own beside the group; quote the value to search for the \
                 character"
            ),
            DanglingEscape => f.write_str(
                "`\\` escapes the character after it, and nothing follows it here; write `\\\\` \
                 for a backslash",
            ),
            PrefixedParenthesis { prefix } => write!(
                f,
                "`{prefix}` applies to one term's values, not to parentheses; write it before each \
                 term inside them (`({prefix}name:x OR {prefix}name:y)`), or before a field's group \
                 of values (`{prefix}name:(x OR y)`)"
            ),
            InvalidDate { date, reason } => write!(
                f,
                "`{date}` is no date: {reason} (a date is `YYYY/MM/DD` or `YYYY-MM-DD`)"
            ),
            BadFieldName { name } => write!(
                f,
                "`{name}` is no field name: a field's parts are joined by single dots \
                 (`attacks.name`); quote the text to search for it as it is"
            ),
            EscapeWithWildcard => f.write_str(
                "a word with a `\\` escape is literal, as a quoted value is, so its `*` or `?` \
                 would not be a wildcard; escape it too (`\\*`) to search for it, or drop the \
                 escapes to use it as a wildcard",
            ),
            Internal => f.write_str("internal parser error; please report this query"),
        }
    }
}

/// An error about a query: what went wrong (`K`), the place, and the query itself, so
/// that it renders on its own, the message then the query with a caret under the place
/// (of a query longer than 100 characters, the part around the place, cut with `…`).
/// [`ParseError`] and [`crate::plan::PlanError`] are this with their own kinds.
///
/// ```
/// let err = cardex::query::parse("printings:OP01 AND rarity_code:").unwrap_err();
/// assert_eq!(err.offset(), 31);
/// assert_eq!(err.column(), 32);
/// assert_eq!(err.to_string(), "\
/// expected a value after `rarity_code:`, found end of input
/// printings:OP01 AND rarity_code:
///                                ^");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic<K> {
    kind: K,
    span: Span,
    query: Box<str>,
}

/// A query that could not be parsed.
pub type ParseError = Diagnostic<ParseErrorKind>;

impl<K: fmt::Display> Diagnostic<K> {
    pub(crate) fn new(kind: K, span: Span, query: &str) -> Diagnostic<K> {
        Diagnostic {
            kind,
            span,
            query: query.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// Where, in bytes.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The byte offset of the place.
    pub fn offset(&self) -> usize {
        self.span.start
    }

    /// The 1-based character column of the place.
    pub fn column(&self) -> usize {
        column_of(&self.query, self.span.start)
    }

    /// The query the error is about.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The message alone, without the query and caret lines.
    pub fn message(&self) -> String {
        self.kind.to_string()
    }
}

impl<K: fmt::Display> fmt::Display for Diagnostic<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\n{}", self.kind, caret(&self.query, self.span))
    }
}

impl<K: fmt::Display + fmt::Debug> std::error::Error for Diagnostic<K> {}

/// The 1-based character column of byte `offset` in `query` (offsets inside a character
/// count as that character).
pub(crate) fn column_of(query: &str, offset: usize) -> usize {
    let offset = offset.min(query.len());
    query
        .char_indices()
        .take_while(|&(i, _)| i < offset)
        .count()
        + 1
}

/// Renders `query` and, below it, carets under `span` (at least one caret; a span at the
/// end of the query puts it just past the last character). Wide characters count two
/// columns, so the caret stays under the right character in a terminal.
pub(crate) fn caret(query: &str, span: Span) -> String {
    let floor = |mut i: usize| {
        i = i.min(query.len());
        while !query.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(span.start);
    let mut end = floor(span.end.max(span.start));
    // A long query shows the part around the place: [`CARET_CONTEXT`] characters before
    // it, and after it up to [`CARET_WINDOW`] characters in all.
    let (mut from, mut to) = (0, query.len());
    if query.chars().count() > CARET_WINDOW {
        from = nth_char_back(query, start, CARET_CONTEXT);
        // The window starts at most CARET_CONTEXT characters before the place, so it
        // holds the place's start.
        to = nth_char_from(query, from, CARET_WINDOW);
        end = end.min(to);
    }
    let cut_before = if from > 0 { "…" } else { "" };
    let cut_after = if to < query.len() { "…" } else { "" };
    let pad = display_width(cut_before) + display_width(&query[from..start]);
    let width = display_width(&query[start..end]).max(1);
    // Control characters (newlines, tabs) in the query would break the two-line picture.
    let shown: String = query[from..to]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!(
        "{cut_before}{shown}{cut_after}\n{}{}",
        " ".repeat(pad),
        "^".repeat(width)
    )
}

/// The most characters of a query [`caret`] shows.
const CARET_WINDOW: usize = 100;

/// The characters [`caret`] shows before the place in a query longer than [`CARET_WINDOW`].
const CARET_CONTEXT: usize = 40;

/// The offset `n` characters before `at` in `text` (or its start).
fn nth_char_back(text: &str, at: usize, n: usize) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i)
}

/// The offset `n` characters after `at` in `text` (or its end).
fn nth_char_from(text: &str, at: usize, n: usize) -> usize {
    text[at..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(i, _)| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_counts_characters_not_bytes() {
        assert_eq!(caret("name:🐻 x", Span::new(5, 9)), "name:🐻 x\n     ^^");
        assert_eq!(caret("é x", Span::new(3, 4)), "é x\n  ^");
        assert_eq!(caret("abc", Span::new(3, 3)), "abc\n   ^");
        assert_eq!(caret("a\tb", Span::new(2, 3)), "a b\n  ^");
    }

    #[test]
    fn a_long_query_shows_the_part_around_the_place() {
        let q = format!("{} name:", "id:x OR ".repeat(100));
        let shown = caret(&q, Span::new(q.len(), q.len()));
        let (line, carets) = shown.split_once('\n').unwrap();
        assert!(
            line.starts_with('…') && line.ends_with("OR  name:"),
            "{shown}"
        );
        assert_eq!(line.chars().count(), 41);
        assert_eq!(carets, format!("{}^", " ".repeat(41)));
        // The part past the 5,120-byte limit: carets under what is shown, not 9,000 of them.
        let q = "x".repeat(14_000);
        let shown = caret(&q, Span::new(5_120, 14_000));
        let (line, carets) = shown.split_once('\n').unwrap();
        assert_eq!(line, format!("…{}…", "x".repeat(100)));
        assert_eq!(carets, format!("{}{}", " ".repeat(41), "^".repeat(60)));
        // At the start, with wide characters.
        let q = format!("ｈｐ＞ {}", "a ".repeat(80));
        let shown = caret(&q, Span::new(9, 10));
        let (line, carets) = shown.split_once('\n').unwrap();
        assert!(
            line.starts_with("ｈｐ＞ a a") && line.ends_with('…'),
            "{shown}"
        );
        assert_eq!(line.chars().count(), 101);
        assert_eq!(carets, "      ^");
    }

    #[test]
    fn columns() {
        assert_eq!(column_of("abc", 0), 1);
        assert_eq!(column_of("éa", 2), 2);
        assert_eq!(column_of("éa", 3), 3);
        assert_eq!(column_of("ab", 99), 3);
    }
}
