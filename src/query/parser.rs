//! The nom parser: one function per production of the grammar in [`crate::query`].
//!
//! Positions are tracked the tantivy way: a sub-slice `rest` of the query is at byte
//! offset `query.len() - rest.len()`. Numbers are nom combinators; words, field names and
//! whitespace are read byte by byte (ASCII at once, anything else by its `char`), as they
//! are on every query. The productions are nom parsers over `&str` with [`PErr`] as the
//! error type. Every designed error is returned as `nom::Err::Failure` (committed), so no
//! `alt` ever reports the wrong branch, and nothing is parsed twice: the parser looks at
//! the next character and commits.
//!
//! Recursion happens only through parentheses (of groups of terms and of nested queries),
//! and [`MAX_DEPTH`] bounds it; `NOT` chains
//! are read in a loop.

use nom::character::complete::{char, digit1};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;
use nom::{IResult, Parser};
use std::borrow::Cow;

use super::ast::{Bound, CompareOp, Expr, Mode, Query, Range, Span, Spanned, Term, Test, Value};
use super::error::{Found, ParseError, ParseErrorKind};

/// The longest query accepted, in bytes of UTF-8: room for a batch of ids as long as a v2
/// page (250), written `id:a OR id:b …` (Pokémon TCG API users' way to fetch by ids), for
/// every set of the Pokémon TCG data (the longest, `swshp`'s first 250, is 4,996 bytes),
/// which percent-encoded fits in the server's 8 KiB request URI; and short enough that a
/// `q` of this many characters, each percent-encoded to 12 bytes, stays under the `http`
/// crate's 64 KiB URI limit, so that the server, not hyper, answers it (a JSON `414` or
/// `400`, never hyper's empty one).
pub const MAX_QUERY_BYTES: usize = 5120;
/// The deepest nesting of parentheses accepted.
pub const MAX_DEPTH: usize = 32;
/// The most terms accepted in one query (a grouped value counts as one): a batch of 250
/// ids as terms of their own, with room to spare.
pub const MAX_TERMS: usize = 512;

/// The keywords of the language; they are keywords only in upper case and as whole tokens.
/// `&&` and `||` are Lucene's and Elasticsearch's spellings of `AND` and `OR`.
const KEYWORDS: [&str; 6] = ["AND", "OR", "NOT", "TO", "&&", "||"];

/// The error type of the productions: a kind and a place, measured from the end of the
/// input so that sub-parsers need not know the whole query.
#[derive(Debug)]
pub(crate) struct PErr {
    /// Bytes left in the query where the error starts.
    rest_len: usize,
    /// Length of the span in bytes.
    len: usize,
    kind: ParseErrorKind,
}

impl<'a> nom::error::ParseError<&'a str> for PErr {
    fn from_error_kind(input: &'a str, _kind: nom::error::ErrorKind) -> Self {
        PErr {
            rest_len: input.len(),
            len: 0,
            kind: ParseErrorKind::Internal,
        }
    }

    fn append(_input: &'a str, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

type PResult<'a, T> = IResult<&'a str, T, PErr>;

/// Fails at the start of `at`, with a span of `len` bytes.
fn fail<T>(at: &str, len: usize, kind: ParseErrorKind) -> PResult<'_, T> {
    Err(nom::Err::Failure(PErr {
        rest_len: at.len(),
        len,
        kind,
    }))
}

/// Parses a `q` expression into a [`Query`].
///
/// An empty or blank text is the query that matches everything. See the module docs of
/// [`crate::query`] for the grammar and the limits.
///
/// # Errors
///
/// A [`ParseError`] saying what was expected and where.
///
/// ```
/// use cardex::query::parse;
/// let q = parse("printings:PRB01 rarity_code:SR")?;
/// assert_eq!(q.to_string(), "printings:PRB01 AND rarity_code:SR");
/// assert!(parse("")?.is_empty());
/// # Ok::<(), cardex::query::ParseError>(())
/// ```
pub fn parse(query: &str) -> Result<Query<'_>, ParseError> {
    parse_with_max_len(query, MAX_QUERY_BYTES)
}

/// [`parse`] with another length limit. The canonical display spells `AND` out, so a
/// query close to [`MAX_QUERY_BYTES`] can display longer than the limit; the round-trip
/// check re-parses displays with the length limit lifted (the depth and term limits
/// still apply).
pub(crate) fn parse_with_max_len(query: &str, max_len: usize) -> Result<Query<'_>, ParseError> {
    if query.len() > max_len {
        let kind = ParseErrorKind::QueryTooLong {
            len: query.len(),
            max: max_len,
        };
        return Err(ParseError::new(
            kind,
            Span::new(max_len, query.len()),
            query,
        ));
    }
    let start = ws(query);
    if start.is_empty() {
        return Ok(Query { expr: None });
    }
    if let Some(expr) = plain_query(query) {
        return Ok(Query { expr: Some(expr) });
    }
    productions(query, start)
}

/// `query` read by the productions from `start`, its first non-blank character.
pub(crate) fn productions<'a>(query: &'a str, start: &'a str) -> Result<Query<'a>, ParseError> {
    let mut parser = QueryParser {
        len: query.len(),
        depth: 0,
        terms: 0,
    };
    let to_error = |e: PErr| {
        let start = query.len() - e.rest_len;
        ParseError::new(e.kind, Span::new(start, start + e.len), query)
    };
    match parser.or(start) {
        Ok((rest, expr)) => {
            let rest = ws(rest);
            if rest.is_empty() {
                Ok(Query { expr: Some(expr) })
            } else if rest.starts_with(')') {
                Err(to_error(PErr {
                    rest_len: rest.len(),
                    len: 1,
                    kind: ParseErrorKind::UnexpectedCloseParen,
                }))
            } else {
                Err(to_error(PErr {
                    rest_len: rest.len(),
                    len: 0,
                    kind: ParseErrorKind::Internal,
                }))
            }
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(to_error(e)),
        Err(nom::Err::Incomplete(_)) => Err(ParseError::new(
            ParseErrorKind::Internal,
            Span::new(0, 0),
            query,
        )),
    }
}

/// The most common shape of `q`, read in one pass without the productions: `field:word`
/// and `field:"phrase"` terms (no backslash in the phrase), each alone or negated once (`-`
/// or `NOT`), all joined by whitespace or `AND` or all by `OR`, in ASCII outside the
/// quotes, with nothing else the grammar gives a meaning to (no other prefix, range,
/// parenthesis, comparison or keyword; at most [`MAX_TERMS`] terms). `None` leaves the
/// query to the productions, which read it from its start; when this answers, its tree is
/// the one they build, spans included (property tests hold them to it). Each term is built
/// once, where it stays, rather than handed up through every production.
pub(crate) fn plain_query(query: &str) -> Option<Expr<'_>> {
    let offset = |rest: &str| query.len() - rest.len();
    let mut rest = skip_ascii_space(query);
    let mut first = None;
    let mut more = Vec::new();
    // How the terms are joined: `AND` (or whitespace), or `OR`.
    let mut joiner = None;
    loop {
        let (negated, term_start) = match rest.strip_prefix('-') {
            Some(r) => (true, r),
            None => match rest.strip_prefix("NOT") {
                Some(r) if r.bytes().next().is_some_and(is_ascii_space) => {
                    (true, skip_ascii_space(r))
                }
                _ => (false, rest),
            },
        };
        rest = term_start;
        // ASCII names only: the productions read full-width ones.
        let (after_field, name) = ascii_field_name(rest)?.ok()?;
        let value = after_field.strip_prefix(':')?;
        let (text, after) = plain_value(value)?;
        let text = Spanned::new(Cow::Borrowed(text), Span::new(offset(value), offset(after)));
        let term = Term {
            field: Some(Spanned::new(
                Cow::Borrowed(name),
                Span::new(offset(rest), offset(after_field)),
            )),
            mode: Mode::Match,
            test: Test::Value(if value.starts_with('"') {
                Value::Phrase(text)
            } else {
                Value::Word(text)
            }),
            span: Span::new(offset(rest), offset(after)),
        };
        let expr = if negated {
            Expr::Not(Box::new(Expr::Term(term)))
        } else {
            Expr::Term(term)
        };
        match first.take() {
            None if more.is_empty() => first = Some(expr),
            None => more.push(expr),
            Some(one) => {
                more.reserve(4);
                more.push(one);
                more.push(expr);
            }
        }
        if more.len() > MAX_TERMS {
            return None;
        }
        // Whitespace, then the end, another term, or `AND` or `OR` and whitespace.
        let next = skip_ascii_space(after);
        if next.is_empty() {
            break;
        }
        if next.len() == after.len() {
            return None;
        }
        let keyword = |kw: &str| {
            next.strip_prefix(kw)
                .filter(|r| r.bytes().next().is_some_and(is_ascii_space))
                .map(skip_ascii_space)
        };
        let (and, after_joiner) = match (keyword("AND"), keyword("OR")) {
            (Some(r), _) => (true, r),
            (None, Some(r)) => (false, r),
            (None, None) => (true, next),
        };
        // `AND` binds tighter than `OR`: a mix is left to the productions.
        if *joiner.get_or_insert(and) != and {
            return None;
        }
        rest = after_joiner;
    }
    Some(match (first, joiner) {
        (Some(one), _) => one,
        (None, Some(false)) => Expr::Or(more),
        (None, _) => Expr::And(more),
    })
}

/// The value at the start of `value` in a plain query, and the text after it: an ASCII
/// word that is not a keyword, or a quoted phrase without backslashes (so nothing to
/// unescape). For a phrase the text is inside the quotes; the caller tells the two apart
/// by the opening quote.
fn plain_value(value: &str) -> Option<(&str, &str)> {
    if let Some(body) = value.strip_prefix('"') {
        let end = body.find(['"', '\\'])?;
        let rest = body[end..].strip_prefix('"')?;
        return Some((&body[..end], rest));
    }
    if value.starts_with(['[', '{', '(', '<', '>']) {
        return None;
    }
    let len = token_end(value);
    let (word, after) = value.split_at(len);
    if len == 0 || !word.is_ascii() || word.contains('\\') || KEYWORDS.contains(&word) {
        return None;
    }
    Some((word, after))
}

/// `input` after its leading ASCII whitespace.
fn skip_ascii_space(input: &str) -> &str {
    let skipped = input
        .bytes()
        .position(|b| !is_ascii_space(b))
        .unwrap_or(input.len());
    &input[skipped..]
}

/// Parser state: the query length (to turn rests into offsets) and the limits' counters.
struct QueryParser {
    len: usize,
    depth: usize,
    terms: usize,
}

impl QueryParser {
    fn offset(&self, rest: &str) -> usize {
        self.len - rest.len()
    }

    fn span(&self, from: &str, to: &str) -> Span {
        Span::new(self.offset(from), self.offset(to))
    }

    /// `or = and ( ("OR" | "||") and )*`
    fn or<'a>(&mut self, input: &'a str) -> PResult<'a, Expr<'a>> {
        let (mut rest, first) = self.and(input, None)?;
        let mut items = Items::new(first);
        loop {
            let next = ws(rest);
            let Some(after) = keyword(next, "OR") else {
                break;
            };
            let (r, item) = self.and(ws(after), Some(joiner_at(next, "OR")))?;
            items.push(item);
            rest = r;
        }
        Ok((rest, items.join(Expr::Or)))
    }

    /// `and = unary ( ["AND" | "&&"] unary )*` — whitespace alone also means AND.
    fn and<'a>(&mut self, input: &'a str, after: Option<&'static str>) -> PResult<'a, Expr<'a>> {
        let (mut rest, first) = self.unary(input, after)?;
        let mut items = Items::new(first);
        loop {
            let next = ws(rest);
            if next.is_empty() || next.starts_with(')') || keyword(next, "OR").is_some() {
                break;
            }
            let (r, item) = match keyword(next, "AND") {
                Some(after_and) => self.unary(ws(after_and), Some(joiner_at(next, "AND")))?,
                None => self.unary(next, after)?,
            };
            items.push(item);
            rest = r;
        }
        Ok((rest, items.join(Expr::And)))
    }

    /// `unary = ("NOT" | "-" | "+") unary | primary`, read as a loop; `NOT NOT x` folds to
    /// `x`. `+` is Lucene's "required", which every term joined by `AND` is: it changes
    /// nothing.
    fn unary<'a>(&mut self, input: &'a str, after: Option<&'static str>) -> PResult<'a, Expr<'a>> {
        let mut rest = input;
        let mut negations = 0usize;
        let mut last_op = after;
        loop {
            if let Some(r) = keyword(rest, "NOT") {
                negations += 1;
                last_op = Some("NOT");
                rest = ws(r);
            } else if let Some((sign, r)) = rest
                .strip_prefix('-')
                .map(|r| ("-", r))
                .or_else(|| rest.strip_prefix('+').map(|r| ("+", r)))
            {
                if r.is_empty() || r.starts_with(char::is_whitespace) || r.starts_with(')') {
                    return fail(
                        r,
                        0,
                        ParseErrorKind::ExpectedTerm {
                            after: Some(sign),
                            found: found_at(r),
                        },
                    );
                }
                negations += usize::from(sign == "-");
                last_op = Some(sign);
                rest = r;
            } else {
                break;
            }
        }
        let (rest, expr) = self.primary(rest, last_op)?;
        let expr = if negations % 2 == 1 {
            Expr::Not(Box::new(expr))
        } else {
            expr
        };
        Ok((rest, expr))
    }

    /// `primary = "(" or ")" | term`
    fn primary<'a>(
        &mut self,
        input: &'a str,
        after: Option<&'static str>,
    ) -> PResult<'a, Expr<'a>> {
        let Some(inside) = input.strip_prefix('(') else {
            return self.term(input, after);
        };
        if self.depth >= MAX_DEPTH {
            return fail(
                input,
                1,
                ParseErrorKind::DepthLimitExceeded { max: MAX_DEPTH },
            );
        }
        let inside = ws(inside);
        if inside.starts_with(')') {
            let len = self.offset(inside) + 1 - self.offset(input);
            return fail(input, len, ParseErrorKind::EmptyGroup { field: None });
        }
        self.depth += 1;
        let (rest, expr) = self.or(inside)?;
        self.depth -= 1;
        match ws(rest).strip_prefix(')') {
            Some(rest) => Ok((rest, expr)),
            None => fail(input, 1, ParseErrorKind::UnclosedParen),
        }
    }

    /// ```text
    /// term = ["!" | "^"] field ":" value
    ///      | field ("<" | "<=" | ">" | ">=") number
    ///      | ["!" | "^"] field ":" "(" ["+"] value ( ["AND" | "OR" | "&&" | "||"] ["+"] value )* ")"
    ///      | ["!" | "^"] value          a bare value searches `name`
    /// ```
    fn term<'a>(&mut self, input: &'a str, after: Option<&'static str>) -> PResult<'a, Expr<'a>> {
        if input.is_empty() || input.starts_with(')') {
            return fail(
                input,
                usize::from(!input.is_empty()),
                ParseErrorKind::ExpectedTerm {
                    after,
                    found: found_at(input),
                },
            );
        }
        if let Some(kw) = leading_keyword(input) {
            let kind = if kw == "TO" {
                ParseErrorKind::ReservedKeyword { word: kw }
            } else {
                ParseErrorKind::ExpectedTerm {
                    after,
                    found: Found::Keyword(kw),
                }
            };
            return fail(input, kw.len(), kind);
        }
        self.terms += 1;
        if self.terms > MAX_TERMS {
            let len = token_len(input);
            return fail(input, len, ParseErrorKind::TooManyTerms { max: MAX_TERMS });
        }
        let (mode, rest) = match input.as_bytes()[0] {
            b'!' => (Mode::Exact, &input[1..]),
            b'^' => (Mode::Literal, &input[1..]),
            _ => (Mode::Match, input),
        };
        if mode != Mode::Match
            && (rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == ')'))
        {
            return fail(
                rest,
                0,
                ParseErrorKind::ExpectedTerm {
                    after: Some(mode.prefix()),
                    found: found_at(rest),
                },
            );
        }
        if mode != Mode::Match && rest.starts_with('(') {
            let prefix = mode.prefix();
            return fail(input, 1, ParseErrorKind::PrefixedParenthesis { prefix });
        }
        if let Some((after_field, name)) = term_field(rest) {
            let field = Spanned::new(field_text(name), self.span(rest, after_field));
            if let Some(value_start) = after_colon(after_field) {
                // `hp:>100`, Lucene's and Elasticsearch's way to write `hp>100`.
                if let Some((op, number_start)) = comparison(value_start) {
                    let written = &rest[..rest.len() - value_start.len()];
                    return self.comparison_term(input, field, written, mode, op, number_start);
                }
                let (end, test) = self.field_value(value_start, name)?;
                if mode != Mode::Match && matches!(test, Test::Nested(_)) {
                    let prefix = mode.prefix();
                    return fail(input, 1, ParseErrorKind::PrefixedNested { prefix });
                }
                let span = self.span(input, end);
                let term = Term {
                    field: Some(field),
                    mode,
                    test,
                    span,
                };
                return Ok((end, Expr::Term(term)));
            }
            if let Some((op, number_start)) = comparison(after_field) {
                return self.comparison_term(input, field, name, mode, op, number_start);
            }
        }
        // A field name with an empty part is a mistyped field, not a bare value.
        if let Some(len) = badly_dotted_field(rest) {
            let name = rest[..len].to_string();
            return fail(rest, len, ParseErrorKind::BadFieldName { name });
        }
        // A bare value: the field is `name`.
        let (end, value) = self.value(rest, None)?;
        let span = self.span(input, end);
        let term = Term {
            field: None,
            mode,
            test: Test::Value(value),
            span,
        };
        Ok((end, Expr::Term(term)))
    }

    /// The term at `input` comparing `field` by `op` with the number at `number_start`;
    /// `written` is the field as messages name it (`hp`, or `hp:` in `hp:>abc`).
    fn comparison_term<'a>(
        &mut self,
        input: &'a str,
        field: Spanned<Cow<'a, str>>,
        written: &str,
        mode: Mode,
        op: CompareOp,
        number_start: &'a str,
    ) -> PResult<'a, Expr<'a>> {
        if mode != Mode::Match {
            let prefix = mode.prefix();
            return fail(input, 1, ParseErrorKind::PrefixedComparison { prefix });
        }
        let (end, n) = self.compare_number(number_start, written, op)?;
        let span = self.span(input, end);
        let term = Term {
            field: Some(field),
            mode,
            test: Test::Compare(op, n),
            span,
        };
        Ok((end, Expr::Term(term)))
    }

    /// The value after `field:` — a word, a phrase, a range, a group of values, or a
    /// nested query (a parenthesis holding a `field:value` or `field<n` term anywhere).
    fn field_value<'a>(&mut self, input: &'a str, field: &str) -> PResult<'a, Test<'a>> {
        if let Some(inside) = input.strip_prefix('(') {
            if holds_field_term(inside) {
                self.nested(input)
            } else {
                self.group(input, field)
            }
        } else {
            let (rest, value) = self.value(input, Some(field))?;
            Ok((rest, Test::Value(value)))
        }
    }

    /// `value = word | "\"" phrase "\"" | range`. `field` is the field the value belongs to,
    /// `None` for a bare value.
    fn value<'a>(&mut self, input: &'a str, field: Option<&str>) -> PResult<'a, Value<'a>> {
        match input.chars().next() {
            None => self.missing_value(input, field),
            Some(c) if c.is_whitespace() || c == ')' => self.missing_value(input, field),
            Some('"') => {
                let (rest, value) = self.phrase(input)?;
                Ok((separator(rest)?, value))
            }
            Some('[' | '{') => {
                let (rest, value) = self.range(input)?;
                Ok((separator(rest)?, value))
            }
            Some('(') => fail(input, 1, ParseErrorKind::NestedGroup),
            Some(_) => self.word(input),
        }
    }

    fn missing_value<'a, T>(&self, input: &'a str, field: Option<&str>) -> PResult<'a, T> {
        let found = found_at(input);
        match field {
            Some(field) => fail(
                input,
                0,
                ParseErrorKind::ExpectedValue {
                    field: field.to_string(),
                    found,
                },
            ),
            None => fail(
                input,
                0,
                ParseErrorKind::ExpectedTerm { after: None, found },
            ),
        }
    }

    /// A word: everything up to whitespace, `(` or `)`. A keyword is not a word.
    fn word<'a>(&mut self, input: &'a str) -> PResult<'a, Value<'a>> {
        let len = token_end(input);
        if len == 0 {
            return Err(nom::Err::Error(PErr {
                rest_len: input.len(),
                len: 0,
                kind: ParseErrorKind::Internal,
            }));
        }
        let (word, rest) = input.split_at(len);
        if word.contains('\\') {
            return self.escaped_word(input, word, rest);
        }
        if let Some(&kw) = KEYWORDS.iter().find(|&&k| k == word) {
            return fail(
                input,
                word.len(),
                ParseErrorKind::ReservedKeyword { word: kw },
            );
        }
        let span = self.span(input, rest);
        Ok((rest, Value::Word(Spanned::new(Cow::Borrowed(word), span))))
    }

    /// A word with `\` escapes (`id:ex10-\?`, Lucene's way to write a character its syntax
    /// would read otherwise): the characters after each `\`, and the others as they are, as
    /// one literal value, the phrase it would be quoted (`id:"ex10-?"`). An unescaped `*` or
    /// `?` in it is an error rather than a literal or a wildcard.
    fn escaped_word<'a>(
        &mut self,
        input: &'a str,
        word: &'a str,
        rest: &'a str,
    ) -> PResult<'a, Value<'a>> {
        let mut text = String::with_capacity(word.len());
        let mut chars = word.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => text.push(escaped),
                    None => return fail(&input[i..], 1, ParseErrorKind::DanglingEscape),
                },
                '*' | '?' => return fail(&input[i..], 1, ParseErrorKind::EscapeWithWildcard),
                other => text.push(other),
            }
        }
        let span = self.span(input, rest);
        Ok((rest, Value::Phrase(Spanned::new(Cow::Owned(text), span))))
    }

    /// `"\"" phrase "\""` with `\"` and `\\` as escapes; other backslashes are literal.
    /// A phrase without escapes borrows its text from the query; one with escapes owns
    /// its unescaped text.
    fn phrase<'a>(&mut self, input: &'a str) -> PResult<'a, Value<'a>> {
        let body = &input[1..];
        let mut has_escapes = false;
        // Bytes: `"` and `\` are ASCII, so they never occur inside a multi-byte character.
        let mut bytes = body.bytes().enumerate();
        let end = loop {
            match bytes.next() {
                None => return fail(input, input.len(), ParseErrorKind::UnclosedQuote),
                Some((i, b'"')) => break i,
                Some((i, b'\\')) if body[i + 1..].starts_with(['"', '\\']) => {
                    has_escapes = true;
                    bytes.next();
                }
                Some(_) => {}
            }
        };
        let raw = &body[..end];
        let text = if has_escapes {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        };
        let rest = &body[end + 1..];
        let span = self.span(input, rest);
        Ok((rest, Value::Phrase(Spanned::new(text, span))))
    }

    /// `range = ("[" | "{") bound "TO" bound ("]" | "}")`, bound = number | `*`.
    fn range<'a>(&mut self, input: &'a str) -> PResult<'a, Value<'a>> {
        let open = &input[..1];
        let inclusive_low = open == "[";
        let rest = ws(&input[1..]);
        let (rest, low) = bound(rest, open)?;
        let before_to = ws(rest);
        if before_to.len() == rest.len() && keyword(before_to, "TO").is_some() {
            return fail(before_to, 2, ParseErrorKind::SpaceBeforeTo);
        }
        let Some(after_to) = keyword(before_to, "TO") else {
            return fail(
                before_to,
                token_len(before_to),
                ParseErrorKind::ExpectedTo {
                    found: found_at(before_to),
                },
            );
        };
        let (rest, high) = bound(ws(after_to), "TO")?;
        let rest = ws(rest);
        let inclusive_high = match rest.chars().next() {
            Some(']') => true,
            Some('}') => false,
            _ => {
                return fail(
                    rest,
                    token_len(rest),
                    ParseErrorKind::UnclosedRange {
                        found: found_at(rest),
                    },
                )
            }
        };
        let rest = &rest[1..];
        let make = |n: Option<f64>, inclusive: bool| match n {
            None => Bound::Unbounded,
            Some(n) if inclusive => Bound::Inclusive(n),
            Some(n) => Bound::Exclusive(n),
        };
        let range = Range {
            lower: make(low, inclusive_low),
            upper: make(high, inclusive_high),
            span: self.span(input, rest),
        };
        Ok((rest, Value::Range(range)))
    }

    /// `"(" value ( ["AND" | "OR"] value )* ")"` after `field:`; AND binds tighter than OR.
    /// Its parentheses count toward [`MAX_DEPTH`] as any others do.
    fn group<'a>(&mut self, input: &'a str, field: &str) -> PResult<'a, Test<'a>> {
        if self.depth >= MAX_DEPTH {
            return fail(
                input,
                1,
                ParseErrorKind::DepthLimitExceeded { max: MAX_DEPTH },
            );
        }
        let mut rest = ws(&input[1..]);
        if rest.starts_with(')') {
            let len = self.offset(rest) + 1 - self.offset(input);
            return fail(
                input,
                len,
                ParseErrorKind::EmptyGroup {
                    field: Some(field.to_string()),
                },
            );
        }
        let mut alternatives: Vec<Vec<Value<'a>>> = vec![Vec::new()];
        let mut pending: Option<&'static str> = Some("(");
        loop {
            rest = ws(rest);
            let op = ["OR", "AND"]
                .into_iter()
                .find_map(|k| keyword(rest, k).map(|after| (k, after)));
            let missing = |at: &'a str, after: &'static str| {
                fail(
                    at,
                    token_len(at),
                    ParseErrorKind::ExpectedGroupValue {
                        after,
                        found: found_at(at),
                    },
                )
            };
            if let Some((op, after)) = op {
                if let Some(prev) = pending {
                    return missing(rest, prev);
                }
                if op == "OR" {
                    alternatives.push(Vec::new());
                }
                pending = Some(joiner_at(rest, op));
                rest = after;
                continue;
            }
            if rest.is_empty() {
                return fail(input, 1, ParseErrorKind::UnclosedParen);
            }
            if let Some(after) = rest.strip_prefix(')') {
                if let Some(prev) = pending {
                    return missing(rest, prev);
                }
                return Ok((separator(after)?, Test::Group(alternatives)));
            }
            // Lucene's `field:(+a +b)`: `+` (required) before a value changes nothing, as
            // before a term; a `+` before nothing is an error, as outside a group.
            let after_plus = rest.trim_start_matches('+');
            if after_plus.len() < rest.len() {
                if at_token_end(after_plus) {
                    return missing(after_plus, "+");
                }
                rest = after_plus;
            }
            // `hp:(>=100 AND <200)`, Elasticsearch's form: each comparison is the range it
            // means (`[100 TO *]`), not the word `>=100`.
            if let Some((op, number_start)) = comparison(rest) {
                let (after, n) = self.compare_number(number_start, "", op)?;
                let (lower, upper) = op.to_range(n.value);
                let span = Span::new(self.offset(rest), n.span.end);
                alternatives
                    .last_mut()
                    .expect("alternatives is never empty")
                    .push(Value::Range(Range { lower, upper, span }));
                pending = None;
                rest = after;
                continue;
            }
            let unprefixed = term_prefixes(rest);
            if unprefixed.len() < rest.len() && !is_negative_number(rest) {
                // `-a`, `!a`, `^"a"`: outside a group these are a prefix and a value (and
                // the lookahead that tells a group from a nested query reads them so);
                // taken as part of the value they would match nothing the user meant.
                let prefix = match rest.as_bytes()[0] {
                    b'-' => "-",
                    b'!' => "!",
                    _ => "^",
                };
                let len = rest.len() - unprefixed.len();
                let field = field.to_string();
                return fail(
                    rest,
                    len,
                    ParseErrorKind::PrefixedGroupValue { prefix, field },
                );
            }
            // `damage>=` with nothing after the operator: a comparison without its number,
            // as it is outside a group (the lookahead took the parentheses for a group of
            // values, where it would be the word `damage`).
            if let Some((op, number_start)) =
                term_field(rest).and_then(|(after_field, _)| comparison(after_field))
            {
                if at_token_end(number_start) {
                    let written = &rest[..rest.len() - number_start.len() - op.as_str().len()];
                    return fail(
                        number_start,
                        token_len(number_start),
                        ParseErrorKind::ExpectedNumber {
                            after: format!("{written}{}", op.as_str()),
                            found: found_at(number_start),
                        },
                    );
                }
            }
            let (after, value) = self.value(rest, Some(field))?;
            alternatives
                .last_mut()
                .expect("alternatives is never empty")
                .push(value);
            pending = None;
            rest = after;
        }
    }

    /// `"(" or ")"` after `field:`: a query on the elements of `field`, an array of
    /// objects, with field names relative to one element. It nests like parentheses do
    /// (one level of [`MAX_DEPTH`]).
    fn nested<'a>(&mut self, input: &'a str) -> PResult<'a, Test<'a>> {
        if self.depth >= MAX_DEPTH {
            return fail(
                input,
                1,
                ParseErrorKind::DepthLimitExceeded { max: MAX_DEPTH },
            );
        }
        self.depth += 1;
        let (rest, expr) = self.or(ws(&input[1..]))?;
        self.depth -= 1;
        match ws(rest).strip_prefix(')') {
            Some(after) => Ok((separator(after)?, Test::Nested(Box::new(expr)))),
            None => fail(input, 1, ParseErrorKind::UnclosedParen),
        }
    }

    /// The number after a comparison operator, written right after it.
    fn compare_number<'a>(
        &mut self,
        input: &'a str,
        field: &str,
        op: CompareOp,
    ) -> PResult<'a, Spanned<f64>> {
        match number(input) {
            Err((len, kind)) => fail(input, len, kind),
            Ok(Some((rest, n))) => {
                let span = self.span(input, rest);
                Ok((separator(rest)?, Spanned::new(n, span)))
            }
            Ok(None) => fail(
                input,
                token_len(input),
                ParseErrorKind::ExpectedNumber {
                    after: format!("{field}{}", op.as_str()),
                    found: found_at(input),
                },
            ),
        }
    }
}

/// Whether the parenthesised text starting at `inside` (just after its `(`) holds a term
/// with a field — `name:value` or `damage>=60` (a comparison, with or without a valid
/// number after it), at any depth, outside quotes and ranges —
/// which makes `field:( ... )` a nested query rather than a group of values. Stops at the
/// parenthesis that closes it (or the end of the text).
fn holds_field_term(inside: &str) -> bool {
    let bytes = inside.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' if depth == 0 => return false,
            b')' => depth -= 1,
            b'"' => {
                // To the closing quote, past `\"` and `\\` escapes.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => {
                while i < bytes.len() && !matches!(bytes[i], b']' | b'}' | b')') {
                    i += 1;
                }
                continue;
            }
            b if b.is_ascii_whitespace() => {}
            // A term's prefixes, read as the term parser reads them: what follows is the
            // start of a token (a phrase, a group, a term). More prefix characters after
            // them make a word (`!!x` is the exact word `!x`).
            b'-' | b'+' | b'!' | b'^' => {
                let token = &inside[i..];
                let rest = term_prefixes(token);
                if rest.starts_with(['-', '+', '!', '^']) {
                    i += token_len(token).max(1);
                } else {
                    i += token.len() - rest.len();
                }
                continue;
            }
            _ => {
                let token = &inside[i..];
                if let Some((after, _)) = term_field(token) {
                    // A comparison is one whatever follows its operator (`market>=abc` is
                    // a bad number in a nested query, as it is outside one), so long as
                    // something does.
                    let compares = comparison(after).is_some_and(|(_, rest)| {
                        rest.bytes()
                            .next()
                            .is_some_and(|b| b != b')' && !b.is_ascii_whitespace())
                    });
                    if after_colon(after).is_some() || compares {
                        return true;
                    }
                }
                // A mistyped field (`.damage>=60`) is a term too, refused as one.
                if badly_dotted_field(token).is_some() {
                    return true;
                }
                let len = token_len(&inside[i..]).max(1);
                i += len;
                continue;
            }
        }
        i += 1;
    }
    false
}

/// `token` after the prefixes a term can start with: any number of `-` and `+`, then one
/// `!` or `^`.
fn term_prefixes(token: &str) -> &str {
    let negated = token.trim_start_matches(['-', '+']);
    negated.strip_prefix(['!', '^']).unwrap_or(negated)
}

/// Wraps two or more items with `make`; a single item stands alone.
/// The operands of one `AND` or `OR` as they are read: most queries have one, which then
/// needs no vector.
enum Items<'a> {
    One(Expr<'a>),
    Many(Vec<Expr<'a>>),
}

impl<'a> Items<'a> {
    fn new(first: Expr<'a>) -> Items<'a> {
        Items::One(first)
    }

    fn push(&mut self, item: Expr<'a>) {
        match self {
            Items::Many(items) => items.push(item),
            Items::One(first) => {
                // An empty AND as a placeholder allocates nothing.
                let first = std::mem::replace(first, Expr::And(Vec::new()));
                *self = Items::Many(vec![first, item]);
            }
        }
    }

    /// The one operand, or the operator over all of them.
    fn join(self, make: fn(Vec<Expr<'a>>) -> Expr<'a>) -> Expr<'a> {
        match self {
            Items::One(item) => item,
            Items::Many(items) => make(items),
        }
    }
}

/// A phrase's text with `\"` and `\\` unescaped; other backslashes are literal.
fn unescape(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if raw[i + 1..].starts_with(['"', '\\']) => {
                let (_, escaped) = chars.next().expect("checked by starts_with");
                text.push(escaped);
            }
            other => text.push(other),
        }
    }
    text
}

/// Skips whitespace (any Unicode whitespace, so an ideographic space separates too). ASCII
/// is read byte by byte; the first non-ASCII byte hands over to `char::is_whitespace`.
pub(crate) fn ws(input: &str) -> &str {
    let rest = skip_ascii_space(input);
    if rest.as_bytes().first().is_some_and(|&b| !b.is_ascii()) {
        rest.trim_start_matches(char::is_whitespace)
    } else {
        rest
    }
}

/// The ASCII characters `char::is_whitespace` accepts: space, tab, line feed, vertical
/// tab, form feed and carriage return.
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r')
}

/// The byte length of the word at the start of `input`: up to whitespace, `(` or `)`.
fn token_end(input: &str) -> usize {
    let bytes = input.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b.is_ascii() {
            if is_ascii_space(b) || b == b'(' || b == b')' {
                break;
            }
            i += 1;
            // `\` takes the character after it into the word, whatever it is (`a\ b`,
            // `x\(1\)`).
            if b == b'\\' {
                i += input[i..].chars().next().map_or(0, char::len_utf8);
            }
        } else {
            match input[i..].chars().next() {
                Some(c) if !c.is_whitespace() => i += c.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// Whether `rest` starts a new token (or ends the input): the end of a keyword or value.
fn at_token_end(rest: &str) -> bool {
    match rest.as_bytes().first() {
        None => true,
        Some(&b) if b.is_ascii() => is_ascii_space(b) || b == b'(' || b == b')',
        Some(_) => rest.chars().next().is_some_and(char::is_whitespace),
    }
}

/// If `input` starts with keyword `kw` as a whole token, the text after it; `AND` and
/// `OR` are also written `&&` and `||`.
fn keyword<'a>(input: &'a str, kw: &str) -> Option<&'a str> {
    let rest = input
        .strip_prefix(kw)
        .or_else(|| input.strip_prefix(also_spelt(kw)?))?;
    at_token_end(rest).then_some(rest)
}

/// The other spelling of keyword `kw`: `&&` for `AND`, `||` for `OR`.
fn also_spelt(kw: &str) -> Option<&'static str> {
    match kw {
        "AND" => Some("&&"),
        "OR" => Some("||"),
        _ => None,
    }
}

/// How the joiner `kw` (`AND` or `OR`) that starts `input` is written there, for messages.
fn joiner_at(input: &str, kw: &'static str) -> &'static str {
    match also_spelt(kw) {
        Some(other) if input.starts_with(other) => other,
        _ => kw,
    }
}

/// The keyword `input` starts with, if any.
fn leading_keyword(input: &str) -> Option<&'static str> {
    if !matches!(
        input.as_bytes().first(),
        Some(b'A' | b'O' | b'N' | b'T' | b'&' | b'|')
    ) {
        return None;
    }
    // As spelt: `&&` is found as `&&`, not as the `AND` it stands for.
    KEYWORDS
        .into_iter()
        .find(|kw| input.strip_prefix(kw).is_some_and(at_token_end))
}

/// After a phrase, range, group or number: the next character must end the token.
fn separator(rest: &str) -> Result<&str, nom::Err<PErr>> {
    if at_token_end(rest) {
        Ok(rest)
    } else {
        fail::<()>(
            rest,
            token_len(rest),
            ParseErrorKind::ExpectedSeparator {
                found: found_at(rest),
            },
        )
        .map(|(rest, ())| rest)
    }
}

/// A term's field at the start of `input`, and what follows it: a dotted field name, or
/// `*` (see [`EVERY_FIELD`]) before `:` or a comparison, so that `*:*` is a term on `*`.
fn term_field(input: &str) -> Option<(&str, &str)> {
    field_name(input).ok().or_else(|| {
        let after = input.strip_prefix(EVERY_FIELD)?;
        (after_colon(after).is_some() || comparison(after).is_some())
            .then_some((after, EVERY_FIELD))
    })
}

/// Whether the token at the start of `input` is a negative number: `-`, then digits with
/// at most one `.` among them (`-10`, `-0.5`, `-.5`, `-1.`), up to the token's end.
fn is_negative_number(input: &str) -> bool {
    let Some(unsigned) = input.strip_prefix('-') else {
        return false;
    };
    let len = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, after) = unsigned.split_at(len);
    number.bytes().any(|b| b.is_ascii_digit())
        && number.bytes().filter(|&b| b == b'.').count() <= 1
        && at_token_end(after)
}

/// The length of a dotted name with an empty part (`a..b`, `.a`, `a.`: ASCII letters,
/// digits, `_` and dots, with a letter or `_` in it, not starting with a digit) at the
/// start of `input`, when `:` or a comparison follows it.
fn badly_dotted_field(input: &str) -> Option<usize> {
    let bytes = input.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let len = bytes
        .iter()
        .position(|&b| !(b == b'.' || FIELD_NAME_BYTES[usize::from(b)]))
        .unwrap_or(bytes.len());
    let name = &input[..len];
    let empty_part = name.split('.').any(str::is_empty);
    let named = name.bytes().any(|b| b.is_ascii_alphabetic() || b == b'_');
    let after = &input[len..];
    (name.contains('.')
        && empty_part
        && named
        && (after_colon(after).is_some() || comparison(after).is_some()))
    .then_some(len)
}

/// The field of Lucene's `*:*`, every record. The parser takes it before `:` like a field
/// name; the planner reads `*:*` as every record and refuses any other value there.
pub(crate) const EVERY_FIELD: &str = "*";

/// A dotted field name: segments of ASCII letters, digits and `_`, the first starting with
/// a letter or `_` (`attacks.name`, `translation.en.name`, `rarityCode`), or their
/// full-width forms (`ｎａｍｅ`, `ｓｅｔ．ｉｄ`, as a Japanese input method types them; see
/// [`field_text`]). A word of other letters before `:` is a bare value (`リザードン:ex`).
#[inline]
fn field_name(input: &str) -> PResult<'_, &str> {
    ascii_field_name(input).unwrap_or_else(|| wide_field_name(input))
}

/// [`field_name`] in ASCII: `None` where a character that is not ASCII may go on the name
/// (or start it).
#[inline]
fn ascii_field_name(input: &str) -> Option<PResult<'_, &str>> {
    let bytes = input.as_bytes();
    let starts = bytes
        .first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_');
    // One pass over ASCII bytes: the name's length, and whether a `.` followed a `.` or
    // ended it.
    let (mut after_dot, mut dotted_badly) = (false, false);
    let len = if starts {
        bytes
            .iter()
            .position(|&b| {
                let dot = b == b'.';
                if !(dot || FIELD_NAME_BYTES[usize::from(b)]) {
                    return true;
                }
                dotted_badly |= dot && after_dot;
                after_dot = dot;
                false
            })
            .unwrap_or(bytes.len())
    } else {
        0
    };
    if bytes.get(len).is_some_and(|b| !b.is_ascii()) {
        // A full-width form, or a letter of another script: read character by character.
        return None;
    }
    Some(field_name_of(input, len, dotted_badly || after_dot))
}

/// [`field_name`] where a character is not ASCII.
#[cold]
fn wide_field_name(input: &str) -> PResult<'_, &str> {
    let starts = input
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || full_width_letter(c) || c == '＿');
    let (mut after_dot, mut dotted_badly) = (false, false);
    let mut len = 0;
    for c in input.chars().take_while(|_| starts) {
        let dot = c == '.' || c == '．';
        let part = if c.is_ascii() {
            FIELD_NAME_BYTES[c as usize]
        } else {
            full_width_letter(c) || matches!(c, '０'..='９' | '＿')
        };
        if !(dot || part) {
            break;
        }
        dotted_badly |= dot && after_dot;
        after_dot = dot;
        len += c.len_utf8();
    }
    field_name_of(input, len, dotted_badly || after_dot)
}

/// The field name of `len` bytes at the start of `input`, unless it is empty or `badly`
/// dotted.
fn field_name_of(input: &str, len: usize, badly: bool) -> PResult<'_, &str> {
    if len == 0 || badly {
        // Not a field name; the caller reads the text as a bare value instead.
        return Err(nom::Err::Error(PErr {
            rest_len: input.len(),
            len: 0,
            kind: ParseErrorKind::Internal,
        }));
    }
    Ok((&input[len..], &input[..len]))
}

/// Whether `c` is a full-width Latin letter (`ａ`–`ｚ`, `Ａ`–`Ｚ`).
fn full_width_letter(c: char) -> bool {
    matches!(c, 'ａ'..='ｚ' | 'Ａ'..='Ｚ')
}

/// What follows a field name's `:` (or a full-width `：`, as an input method in full-width
/// mode types it), if `input` starts with one.
fn after_colon(input: &str) -> Option<&str> {
    input.strip_prefix(':').or_else(|| input.strip_prefix('：'))
}

/// A field name as the planner reads it: its full-width letters, digits, `＿` and `．`
/// as their ASCII forms (typed with a Japanese input method, `ｎａｍｅ` is `name`).
#[inline]
fn field_text(name: &str) -> Cow<'_, str> {
    if name.is_ascii() {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(ascii_forms(name))
    }
}

/// [`field_text`] of a name that is not ASCII.
#[cold]
#[inline(never)]
fn ascii_forms(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '０'..='９' | 'Ａ'..='Ｚ' | 'ａ'..='ｚ' | '＿' | '．' => {
                char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
            }
            other => other,
        })
        .collect()
}

/// The bytes of a field name's segments: ASCII letters, digits and `_`.
static FIELD_NAME_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = byte.is_ascii_alphanumeric() || byte == b'_';
        b += 1;
    }
    table
};

/// A comparison operator at the start of `input`, longest first.
fn comparison(input: &str) -> Option<(CompareOp, &str)> {
    [
        ("<=", CompareOp::Le),
        (">=", CompareOp::Ge),
        ("<", CompareOp::Lt),
        (">", CompareOp::Gt),
    ]
    .into_iter()
    .find_map(|(text, op)| input.strip_prefix(text).map(|rest| (op, rest)))
}

/// `number = date | ["-"] digits ["." digits]`, `date = YYYY/MM/DD | YYYY-MM-DD`, a date
/// standing for the number `YYYYMMDD` (as date values compare, see
/// [`crate::text::date_number`]); `None` for no number. Text shaped as a date that names
/// no day of the calendar is an error (its length and kind): read as a number it would be
/// the year alone, followed by text the message would not explain.
fn number(input: &str) -> Result<Option<(&str, f64)>, (usize, ParseErrorKind)> {
    if let Some(kind) = invalid_date(input) {
        return Err((10, kind));
    }
    Ok(number_or_day(input))
}

/// The error for `input` starting with a date's shape (ending the token, or followed by
/// a time after `T`) that is no day of the calendar.
fn invalid_date(input: &str) -> Option<ParseErrorKind> {
    let (year, month, day) = crate::text::date_parts(input)?;
    // The ten bytes are ASCII: a date ends there, at the end of its token or a range, or
    // goes on with a time.
    let rest = &input[10..];
    if !(at_token_end(rest) || rest.starts_with([']', '}', 'T'])) {
        return None;
    }
    let reason = if !(1..=12).contains(&month) {
        format!("there is no month {month:02} (months are 01 to 12)")
    } else {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if (1..=days).contains(&day) {
            return None;
        }
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        if day == 0 {
            "there is no day 00 (days start at 01)".to_string()
        } else {
            format!("{} {year} has {days} days", MONTHS[month as usize - 1])
        }
    };
    Some(ParseErrorKind::InvalidDate {
        date: input[..10].to_string(),
        reason,
    })
}

/// The number or valid date at the start of `input`.
fn number_or_day(input: &str) -> Option<(&str, f64)> {
    if let Some(found) = date(input) {
        return Some(found);
    }
    let parsed: PResult<'_, &str> =
        recognize((opt(char('-')), digit1, opt(pair(char('.'), digit1)))).parse(input);
    let (rest, text) = parsed.ok()?;
    let n: f64 = text.parse().ok()?;
    n.is_finite().then_some((rest, n))
}

/// A date at the start of `input`, maybe with a time after `T` (`2020-06-01T10:00`, as
/// the data's dates may be written), not followed by more of a word or number.
fn date(input: &str) -> Option<(&str, f64)> {
    let day = input.get(..10)?;
    let mut n = crate::text::date_number(day)?;
    let mut rest = &input[10..];
    if rest.starts_with('T') {
        let len = rest[1..]
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, ':' | '.' | 'Z')))
            .map_or(rest.len(), |end| end + 1);
        n = crate::text::date_number(&input[..10 + len])?;
        rest = &rest[len..];
    }
    let more =
        rest.starts_with(|c: char| c.is_alphanumeric() || matches!(c, '/' | '-' | '.' | ':'));
    (!more).then_some((rest, n))
}

/// A range bound: a number, a date or `*` (`None`).
fn bound<'a>(input: &'a str, after: &str) -> PResult<'a, Option<f64>> {
    if let Some(rest) = input.strip_prefix('*') {
        return Ok((rest, None));
    }
    match number(input) {
        Err((len, kind)) => fail(input, len, kind),
        Ok(Some((rest, n))) => Ok((rest, Some(n))),
        Ok(None) => fail(
            input,
            token_len(input),
            ParseErrorKind::ExpectedNumber {
                after: after.to_string(),
                found: found_at(input),
            },
        ),
    }
}

/// The byte length of the token at the start of `input` (at least one character, none
/// at the end of the input), for error spans.
fn token_len(input: &str) -> usize {
    let word = token_end(input);
    if word > 0 {
        word
    } else {
        input.chars().next().map_or(0, char::len_utf8)
    }
}

/// Describes what starts `input`, for "found ..." in messages.
fn found_at(input: &str) -> Found {
    if input.is_empty() {
        return Found::End;
    }
    if let Some(kw) = leading_keyword(input) {
        return Found::Keyword(kw);
    }
    if input.starts_with(char::is_whitespace) {
        return Found::Whitespace;
    }
    let token = &input[..token_len(input)];
    let shown: String = token.chars().take(24).collect();
    if shown.len() < token.len() {
        Found::Text(format!("{shown}…"))
    } else {
        Found::Text(shown)
    }
}
