//! The canonical text form of a query. It parses back to an equal tree (checked by a
//! property test and by the `roundtrip` fuzz target): operators are spelled `AND`, `OR`,
//! `NOT`; nested `AND`/`OR` groups keep their parentheses; phrases are re-escaped.
//!
//! Spelling `AND` out makes the canonical form longer than `a b c`: the display of a
//! query close to the 5,120-byte limit can be longer than the limit (and is then refused
//! by [`crate::query::parse`] as too long, though it is otherwise valid).

use std::fmt::{self, Display, Formatter, Write};

use super::ast::{Bound, Expr, Query, Range, Term, Test, Value};

impl Display for Query<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.expr {
            Some(expr) => expr.fmt(f),
            None => Ok(()),
        }
    }
}

impl Display for Expr<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::And(items) => join(f, items, " AND ", |e| {
                matches!(e, Expr::And(_) | Expr::Or(_))
            }),
            Expr::Or(items) => join(f, items, " OR ", |e| matches!(e, Expr::Or(_))),
            Expr::Not(inner) => {
                f.write_str("NOT ")?;
                child(
                    f,
                    inner,
                    matches!(**inner, Expr::And(_) | Expr::Or(_) | Expr::Not(_)),
                )
            }
            Expr::Term(term) => term.fmt(f),
        }
    }
}

fn join(
    f: &mut Formatter<'_>,
    items: &[Expr<'_>],
    sep: &str,
    needs_parens: fn(&Expr<'_>) -> bool,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        child(f, item, needs_parens(item))?;
    }
    Ok(())
}

fn child(f: &mut Formatter<'_>, expr: &Expr<'_>, parens: bool) -> fmt::Result {
    if parens {
        write!(f, "({expr})")
    } else {
        expr.fmt(f)
    }
}

impl Display for Term<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.mode.prefix())?;
        if let Some(field) = &self.field {
            f.write_str(&field.value)?;
        }
        match &self.test {
            Test::Value(value) => {
                if self.field.is_some() {
                    f.write_char(':')?;
                }
                value.fmt(f)
            }
            Test::Compare(op, n) => write!(f, "{}{}", op.as_str(), n.value),
            Test::Nested(inner) => write!(f, ":({inner})"),
            Test::Group(alternatives) => {
                if self.field.is_some() {
                    f.write_char(':')?;
                }
                f.write_char('(')?;
                for (i, all) in alternatives.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" OR ")?;
                    }
                    for (j, value) in all.iter().enumerate() {
                        if j > 0 {
                            f.write_str(" AND ")?;
                        }
                        value.fmt(f)?;
                    }
                }
                f.write_char(')')
            }
        }
    }
}

impl Display for Value<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Value::Word(word) => f.write_str(&word.value),
            Value::Phrase(phrase) => {
                f.write_char('"')?;
                for c in phrase.value.chars() {
                    if c == '"' || c == '\\' {
                        f.write_char('\\')?;
                    }
                    f.write_char(c)?;
                }
                f.write_char('"')
            }
            Value::Range(range) => range.fmt(f),
        }
    }
}

impl Display for Range {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.lower {
            Bound::Unbounded => f.write_str("[*")?,
            Bound::Inclusive(n) => write!(f, "[{n}")?,
            Bound::Exclusive(n) => write!(f, "{{{n}")?,
        }
        f.write_str(" TO ")?;
        match self.upper {
            Bound::Unbounded => f.write_str("*]"),
            Bound::Inclusive(n) => write!(f, "{n}]"),
            Bound::Exclusive(n) => write!(f, "{n}}}"),
        }
    }
}
