//! The canonical display parses back to the same tree: for generated trees, and for any
//! text that parses.

use cardex::query::{parse, Bound, CompareOp, Expr, Mode, Range, Span, Spanned, Term, Test, Value};
use proptest::prelude::*;
use std::borrow::Cow;

fn spanned(s: String) -> Spanned<Cow<'static, str>> {
    Spanned::new(Cow::Owned(s), Span::default())
}

fn field() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,6}(\\.[a-zA-Z0-9_]{1,5}){0,2}"
}

/// A word as the parser reads it after `field:`: no whitespace or parentheses, not
/// starting with a character that opens a phrase, range, group or comparison (`hp:>1`),
/// and not a keyword.
fn value_word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9éリ'&*?.:,!=+-][a-zA-Z0-9éリ'&*?.:,!<>=+\"\\[\\]{}-]{0,8}"
        .prop_filter("keywords are not words", |w| {
            !["AND", "OR", "NOT", "TO", "&&", "||"].contains(&w.as_str())
        })
}

/// A word in a group of values (`field:(a OR b)`): also without `:`, `<` and `>`, since a
/// `field:value` or `field>1` term inside the parentheses makes them a nested query.
/// Nor `-` (but for a negative number), `!` or `^` first, which the parser refuses in a
/// group.
fn group_word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9éリ'&*?.,!=+-][a-zA-Z0-9éリ'&*?.,!=+\"\\[\\]{}-]{0,8}"
        .prop_filter("keywords are not words", |w| {
            !["AND", "OR", "NOT", "TO", "&&", "||"].contains(&w.as_str())
        })
        .prop_filter(
            "a leading `+` is Lucene's required, not part of the word",
            |w| !w.starts_with('+'),
        )
        .prop_filter("a prefix is refused, but `-` before a number", |w| {
            let negated = w.trim_start_matches(['-', '+']);
            let rest = negated.strip_prefix(['!', '^']).unwrap_or(negated);
            // `-`, then digits with at most one `.` among them, and nothing else.
            let negative_number = w.strip_prefix('-').is_some_and(|n| {
                n.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                    && n.bytes().any(|b| b.is_ascii_digit())
                    && n.bytes().filter(|&b| b == b'.').count() <= 1
            });
            rest.len() == w.len() || negative_number
        })
}

/// A bare word: also not starting with `-`, `+` or `!`, and without `:`, `<`, `>` (which
/// would make it a term).
fn bare_word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9éリ'&*?.,][a-zA-Z0-9éリ'&*?.,+\"-]{0,8}".prop_filter("keywords are not words", |w| {
        !["AND", "OR", "NOT", "TO", "&&", "||"].contains(&w.as_str())
    })
}

fn phrase() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', ' ', '"', '\\', '(', ')', 'é', 'ザ', '*', ':', '\t',
        ]),
        0..10,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1000i32..1000).prop_map(f64::from),
        (-4000i32..4000).prop_map(|n| f64::from(n) / 8.0)
    ]
}

fn bound() -> impl Strategy<Value = Bound> {
    prop_oneof![
        Just(Bound::Unbounded),
        number().prop_map(Bound::Inclusive),
        number().prop_map(Bound::Exclusive)
    ]
}

/// Where a value is written: bare, after `field:`, or in a group of values.
#[derive(Clone, Copy)]
enum At {
    Bare,
    Field,
    Group,
}

fn value(at: At) -> BoxedStrategy<Value<'static>> {
    let word = match at {
        At::Bare => bare_word().boxed(),
        At::Field => value_word().boxed(),
        At::Group => group_word().boxed(),
    };
    prop_oneof![
        word.prop_map(|w| Value::Word(spanned(w))),
        phrase().prop_map(|p| Value::Phrase(spanned(p))),
        (bound(), bound()).prop_map(|(lower, upper)| Value::Range(Range {
            lower,
            upper,
            span: Span::default()
        })),
    ]
    .boxed()
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::Match, Mode::Exact, Mode::Literal])
}

fn term() -> impl Strategy<Value = Expr<'static>> {
    let with_field = (field(), mode(), value(At::Field)).prop_map(|(f, mode, v)| Term {
        field: Some(spanned(f)),
        mode,
        test: Test::Value(v),
        span: Span::default(),
    });
    let bare = (mode(), value(At::Bare)).prop_map(|(mode, v)| Term {
        field: None,
        mode,
        test: Test::Value(v),
        span: Span::default(),
    });
    let compare = (
        field(),
        prop::sample::select(vec![
            CompareOp::Lt,
            CompareOp::Le,
            CompareOp::Gt,
            CompareOp::Ge,
        ]),
        number(),
    )
        .prop_map(|(f, op, n)| Term {
            field: Some(spanned(f)),
            mode: Mode::Match,
            test: Test::Compare(op, Spanned::new(n, Span::default())),
            span: Span::default(),
        });
    let group = (
        field(),
        mode(),
        prop::collection::vec(prop::collection::vec(value(At::Group), 1..3), 1..3),
    )
        .prop_map(|(f, mode, alternatives)| Term {
            field: Some(spanned(f)),
            mode,
            test: Test::Group(alternatives),
            span: Span::default(),
        });
    prop_oneof![4 => with_field, 2 => bare, 1 => compare, 1 => group].prop_map(Expr::Term)
}

fn expr() -> impl Strategy<Value = Expr<'static>> {
    term().prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Or),
            inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            // A nested query holds a term with a field (else it reads as a group).
            (field(), inner)
                .prop_filter("a nested query names a field", |(_, e)| has_field(e))
                .prop_map(|(f, e)| Expr::Term(Term {
                    field: Some(spanned(f)),
                    mode: Mode::Match,
                    test: Test::Nested(Box::new(e)),
                    span: Span::default(),
                })),
        ]
    })
}

/// Whether `e` holds a term with a field.
fn has_field(e: &Expr<'_>) -> bool {
    match e {
        Expr::And(items) | Expr::Or(items) => items.iter().any(has_field),
        Expr::Not(inner) => has_field(inner),
        Expr::Term(t) => t.field.is_some(),
    }
}

/// Query-like text: tokens of the language glued with and without spaces.
fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "b",
            "NOT",
            "AND",
            "OR",
            "TO",
            "&&",
            "||",
            "+",
            "-",
            "!",
            "^",
            "(",
            ")",
            "\"x y\"",
            "\"",
            "name:",
            "hp>=3",
            "hp<",
            "[1 TO 2]",
            "{*",
            "*",
            "types:(a OR b)",
            "attacks:(name:a",
            " ",
            " ",
            " ",
            "é",
            ":",
            "\\",
            "x.y:z",
            "]",
            "}",
        ]),
        0..14,
    )
    .prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn display_parses_back_to_the_same_tree(e in expr()) {
        let text = e.to_string();
        let parsed = parse(&text).map_err(|err| TestCaseError::fail(format!("{text:?} did not parse:\n{err}")))?;
        let back = parsed.expr.expect("non-empty");
        // The parser folds `NOT NOT x` written without parentheses; the display always
        // parenthesises a NOT under a NOT, so the trees are equal as generated.
        prop_assert_eq!(back, e, "text {:?}", text);
    }

    #[test]
    fn any_text_that_parses_round_trips(text in soup()) {
        if let Ok(first) = parse(&text) {
            let shown = first.to_string();
            let again = parse(&shown).map_err(|err| TestCaseError::fail(format!("{text:?} → {shown:?} did not parse:\n{err}")))?;
            prop_assert_eq!(&again, &first, "{:?} → {:?}", text, shown);
            prop_assert_eq!(again.to_string(), shown.clone());
            // Detached from its text, the tree is the same tree.
            let owned = first.clone().into_owned();
            prop_assert_eq!(&owned, &first);
            prop_assert_eq!(owned.to_string(), shown);
        }
    }

    #[test]
    fn errors_never_are_internal(text in soup()) {
        if let Err(err) = parse(&text) {
            prop_assert_ne!(err.kind(), &cardex::query::ParseErrorKind::Internal, "{:?}", text);
            prop_assert!(err.offset() <= text.len());
            let _ = err.to_string();
        }
    }
}
