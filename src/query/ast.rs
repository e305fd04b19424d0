//! The syntax tree of a `q` expression. It knows no catalog: fields are names as typed,
//! values are text as typed (quoted phrases unescaped). The planner resolves both.
//!
//! The tree borrows from the query text (`'a`): field names, words and phrases without
//! escapes are slices of it, so parsing allocates only the tree's nodes. A phrase with
//! `\"` or `\\` in it owns its unescaped text. [`Query::into_owned`] detaches a tree from
//! its text, to keep it longer than the text.

use std::borrow::Cow;
use std::fmt;

/// Byte offsets `start..end` into the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
}

/// A value with the place in the query it came from. Equality ignores the span, so two
/// trees parsed from differently spaced text compare equal.
#[derive(Debug, Clone)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Pairs `value` with `span`.
    pub fn new(value: T, span: Span) -> Spanned<T> {
        Spanned { value, span }
    }
}

impl<T: PartialEq> PartialEq for Spanned<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// A boolean expression over terms.
///
/// `And` and `Or` always hold two or more children when built by the parser, and the
/// parser folds `NOT NOT x` into `x`.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr<'a> {
    /// All children match (`a AND b`, or `a b`).
    And(Vec<Expr<'a>>),
    /// At least one child matches (`a OR b`).
    Or(Vec<Expr<'a>>),
    /// The child does not match (`NOT a`, `-a`).
    Not(Box<Expr<'a>>),
    /// One `field:value` test.
    Term(Term<'a>),
}

impl Expr<'_> {
    /// The same expression owning all of its text.
    pub fn into_owned(self) -> Expr<'static> {
        match self {
            Expr::And(items) => Expr::And(items.into_iter().map(Expr::into_owned).collect()),
            Expr::Or(items) => Expr::Or(items.into_iter().map(Expr::into_owned).collect()),
            Expr::Not(inner) => Expr::Not(Box::new(inner.into_owned())),
            Expr::Term(term) => Expr::Term(term.into_owned()),
        }
    }
}

/// One test on one field: `rarity:"Super Rare"`, `!name:pikachu`, `hp>=100`,
/// `types:(fire OR water)`, or a bare value on `name`.
#[derive(Debug, Clone)]
pub struct Term<'a> {
    /// The field as typed (dotted path, camelCase allowed); `None` for a bare value, which
    /// searches `name`.
    pub field: Option<Spanned<Cow<'a, str>>>,
    /// How the value is compared: `field:value`, `!field:value` or `^field:value`.
    pub mode: Mode,
    /// What the field is tested against.
    pub test: Test<'a>,
    /// The whole term.
    pub span: Span,
}

impl Term<'_> {
    /// The same term owning all of its text.
    pub fn into_owned(self) -> Term<'static> {
        Term {
            field: self.field.map(owned),
            mode: self.mode,
            test: self.test.into_owned(),
            span: self.span,
        }
    }
}

/// `text` detached from the query it borrows from.
fn owned(text: Spanned<Cow<'_, str>>) -> Spanned<Cow<'static, str>> {
    Spanned::new(Cow::Owned(text.value.into_owned()), text.span)
}

impl PartialEq for Term<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.field == other.field && self.mode == other.mode && self.test == other.test
    }
}

/// How a term compares its value with the field's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
// Eight bytes wide, so that a `Term` holds no padding: moving a term then copies only
// written bytes, never stale stack bytes read back through a stalled store.
#[repr(u64)]
pub enum Mode {
    /// `field:value`: keyword fields by whole value, text fields by consecutive words, both
    /// after folding.
    #[default]
    Match,
    /// `!field:value`: one of the field's values equals the whole value, after folding.
    Exact,
    /// `^field:value`: one of the field's values equals the whole value as written: no
    /// folding, so case, accents, width and quotes count (`^subtypes:EX` is not
    /// `^subtypes:ex`).
    Literal,
}

impl Mode {
    /// The prefix that writes this mode: ``, `!` or `^`.
    pub fn prefix(self) -> &'static str {
        match self {
            Mode::Match => "",
            Mode::Exact => "!",
            Mode::Literal => "^",
        }
    }
}

/// The test of a [`Term`].
#[derive(Debug, Clone, PartialEq)]
pub enum Test<'a> {
    /// `field:value`.
    Value(Value<'a>),
    /// `field<n`, `field<=n`, `field>n`, `field>=n`.
    Compare(CompareOp, Spanned<f64>),
    /// `field:(a b OR c)`: an OR of AND-lists of values (AND binds tighter).
    Group(Vec<Vec<Value<'a>>>),
    /// `field:(name:x AND damage>=60)`: a query that one element of `field` (an array of
    /// objects) must satisfy as a whole; its field names are relative to the element.
    Nested(Box<Expr<'a>>),
}

impl Test<'_> {
    /// The same test owning all of its text.
    pub fn into_owned(self) -> Test<'static> {
        match self {
            Test::Value(value) => Test::Value(value.into_owned()),
            Test::Compare(op, n) => Test::Compare(op, n),
            Test::Nested(inner) => Test::Nested(Box::new(inner.into_owned())),
            Test::Group(any) => Test::Group(
                any.into_iter()
                    .map(|all| all.into_iter().map(Value::into_owned).collect())
                    .collect(),
            ),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CompareOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }

    /// The equivalent range: `hp>=100` is `hp:[100 TO *]`.
    pub fn to_range(self, n: f64) -> (Bound, Bound) {
        match self {
            CompareOp::Lt => (Bound::Unbounded, Bound::Exclusive(n)),
            CompareOp::Le => (Bound::Unbounded, Bound::Inclusive(n)),
            CompareOp::Gt => (Bound::Exclusive(n), Bound::Unbounded),
            CompareOp::Ge => (Bound::Inclusive(n), Bound::Unbounded),
        }
    }
}

/// A value on the right of `field:`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// An unquoted word; `*` and `?` in it are wildcards.
    Word(Spanned<Cow<'a, str>>),
    /// A quoted phrase, unescaped; matched literally (no wildcards).
    Phrase(Spanned<Cow<'a, str>>),
    /// A numeric range.
    Range(Range),
}

impl Value<'_> {
    /// The same value owning its text.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Word(w) => Value::Word(owned(w)),
            Value::Phrase(p) => Value::Phrase(owned(p)),
            Value::Range(r) => Value::Range(r),
        }
    }

    /// Where the value was written.
    pub fn span(&self) -> Span {
        match self {
            Value::Word(w) | Value::Phrase(w) => w.span,
            Value::Range(r) => r.span,
        }
    }
}

/// A numeric range: `[100 TO 200]` inclusive, `{100 TO 200}` exclusive, `*` open.
#[derive(Debug, Clone)]
pub struct Range {
    /// The lower bound.
    pub lower: Bound,
    /// The upper bound.
    pub upper: Bound,
    /// The whole range.
    pub span: Span,
}

impl PartialEq for Range {
    fn eq(&self, other: &Self) -> bool {
        self.lower == other.lower && self.upper == other.upper
    }
}

/// One end of a [`Range`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// `*`
    Unbounded,
    /// `[n` or `n]`
    Inclusive(f64),
    /// `{n` or `n}`
    Exclusive(f64),
}

impl Bound {
    /// Whether `x` is on the allowed side of this bound when it is the lower bound.
    pub fn admits_from_below(self, x: f64) -> bool {
        match self {
            Bound::Unbounded => true,
            Bound::Inclusive(n) => x >= n,
            Bound::Exclusive(n) => x > n,
        }
    }

    /// Whether `x` is on the allowed side of this bound when it is the upper bound.
    pub fn admits_from_above(self, x: f64) -> bool {
        match self {
            Bound::Unbounded => true,
            Bound::Inclusive(n) => x <= n,
            Bound::Exclusive(n) => x < n,
        }
    }
}

/// A parsed query: an expression, or nothing for an empty `q` (which matches everything).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query<'a> {
    /// The expression; `None` when the query text was empty or blank.
    pub expr: Option<Expr<'a>>,
}

impl Query<'_> {
    /// Whether the query matches everything (empty text).
    pub fn is_empty(&self) -> bool {
        self.expr.is_none()
    }

    /// The same query owning all of its text, no longer tied to the text it was parsed
    /// from.
    ///
    /// ```
    /// let owned = {
    ///     let text = String::from("name:charizard");
    ///     cardex::query::parse(&text)?.into_owned()
    /// };
    /// assert_eq!(owned.to_string(), "name:charizard");
    /// # Ok::<(), cardex::query::ParseError>(())
    /// ```
    pub fn into_owned(self) -> Query<'static> {
        Query {
            expr: self.expr.map(Expr::into_owned),
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}
