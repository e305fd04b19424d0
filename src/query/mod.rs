//! The `q` language: text → [`Query`] (syntax only; no catalog knowledge).
//!
//! ```text
//! query   = or
//! or      = and ( ("OR" | "||") and )*
//! and     = unary ( ["AND" | "&&"] unary )*   whitespace alone also means AND
//! unary   = ("NOT" | "-" | "+") unary | primary    "+" (Lucene's "required") changes nothing
//! primary = "(" or ")" | term
//! term    = ["!" | "^"] field ":" value
//!         | field [":"] ("<" | "<=" | ">" | ">=") number     `hp:>100` is `hp>100`
//!         | ["!" | "^"] field ":" "(" ["+"] value ( ["AND" | "OR" | "&&" | "||"] ["+"] value )* ")"   AND binds tighter than OR
//!         | field ":" "(" or ")"               nested: the parentheses hold a term with a field
//!         | ["!" | "^"] value                  a bare value searches `name`
//!         | "*:*"                              every record (the planner refuses any other test on `*`)
//! value   = word | "\"" phrase "\"" | range
//! range   = ("[" | "{") bound "TO" bound ("]" | "}")       [ ] inclusive, { } exclusive
//! bound   = number | "*"
//! number  = date | ["-"] digits ["." digits]
//! date    = (YYYY/MM/DD | YYYY-MM-DD) ["T" time]   the number YYYYMMDD, as date values compare; a day of the calendar
//! field   = segment ("." segment)*             segment = [A-Za-z0-9_]+, the first starting with a letter or _
//!                                              (or their full-width forms, and `：` for `:`: `ｎａｍｅ：x` is `name:x`)
//! word    = any characters but whitespace, "(" and ")"; "\" takes the next one in, whatever it is
//! phrase  = any characters; \" and \\ are escapes
//! ```
//!
//! - `AND`, `OR`, `NOT`, `TO` are keywords only in upper case and as whole tokens
//!   (`ANDROID` is a word; lower-case `and` is a bare value). Precedence: NOT, then AND,
//!   then OR. A keyword where a value belongs is an error; quote it to search for it.
//!   `&&` and `||` are keywords too, Lucene's spellings of `AND` and `OR`; `+` before a
//!   term or a grouped value (Lucene's "required") changes nothing.
//! - `-` negates the term written right after it (`-types:water`, `-(a OR b)`).
//! - `*` and `?` in an unquoted word are wildcards; a quoted phrase is literal.
//! - `\` escapes the character after it, as in Lucene: a word with escapes is the literal
//!   value it would be quoted (`id:ex10-\?` is `id:"ex10-?"`, `name:charizard\ ex` is
//!   `name:"charizard ex"`), so an unescaped `*` or `?` in it is an error.
//! - Comparisons take no spaces (`hp>=100`) and mean ranges (`hp:[100 TO *]`).
//! - A date stands for the number `YYYYMMDD`: string values written as dates compare as
//!   those numbers, so `release_date>=2020/01/01` and `release_date:[2020-01-01 TO *]` find
//!   the same records whichever form the data uses. On a field of dates (every string
//!   there that compares as a number is a date, and no JSON number is) a bare year bound
//!   stands for that year, as search engines round partial dates: `>=2020` from
//!   2020/01/01, `>2020` after 2020/12/31, `<=2020` up to 2020/12/31, `<2020` before
//!   2020/01/01, `[2019 TO 2020]` the two years. Elsewhere `2020` is the number.
//! - `!` before a bare value is exact on `name` (`!charizard`), like Scryfall.
//! - `field:( ... )` is a group of values (`rarity:(SR OR SEC)`) unless the parentheses
//!   hold a term with a field (`name:x`, `damage>=60`) anywhere: then it is a *nested
//!   query* on `field`, an array of objects, which one element must satisfy as a whole
//!   (`variants.prices:(type:raw AND currency:USD AND market>=100)`), its field names
//!   relative to the element; nested queries nest (`pop_reports:(company:PSA AND
//!   grades:(grade:10 AND count>=50))`). The planner says which paths are arrays of objects.
//! - `^` is an extension of the contract's language: `^field:value` matches a value equal
//!   to the whole value *as written*, without folding (`^subtypes:EX` but not `ex`).
//!
//! Limits, each a typed error: [`MAX_QUERY_BYTES`] bytes, [`MAX_DEPTH`] nested
//! parentheses, [`MAX_TERMS`] terms (a grouped value counts as one).
//!
//! # Errors
//!
//! Every [`ParseErrorKind`] with an example (the caret lands on the place):
//!
//! | kind | example |
//! |---|---|
//! | `QueryTooLong` | 5,121 bytes of text |
//! | `DepthLimitExceeded` | 33 nested `(` |
//! | `TooManyTerms` | 513 terms |
//! | `UnclosedQuote` | `name:"charizard` |
//! | `UnclosedParen` | `(a OR b` |
//! | `UnexpectedCloseParen` | `a)` |
//! | `EmptyGroup` | `()`, `types:()` |
//! | `ExpectedTerm` | `a AND`, `OR b`, `NOT`, `- a` |
//! | `ExpectedValue` | `rarity_code:` |
//! | `ExpectedGroupValue` | `types:(fire OR)` |
//! | `ExpectedNumber` | `hp>=high`, `hp:[a TO 5]` |
//! | `ExpectedTo` | `hp:[1 5]` |
//! | `SpaceBeforeTo` | `hp:[1TO 5]` |
//! | `UnclosedRange` | `hp:[1 TO 5` |
//! | `ReservedKeyword` | `name:AND` |
//! | `ExpectedSeparator` | `name:"a"b` |
//! | `NestedGroup` | `types:((a))` |
//! | `PrefixedNested` | `!attacks:(name:x)` |
//! | `PrefixedComparison` | `!hp>=100` |
//! | `PrefixedGroupValue` | `rarity:(!"SR" OR SEC)`, `types:(fire -water)` |
//! | `PrefixedParenthesis` | `!(name:x)` |
//! | `DanglingEscape` | `id:abc\` |
//! | `EscapeWithWildcard` | `name:char\-*` |
//! | `BadFieldName` | `attacks..name:ember` |
//! | `InvalidDate` | `release_date>=2020/02/30`, `release_date:[2020-13-01 TO *]` |
//!
//! ```
//! let err = cardex::query::parse("name:\"charizard").unwrap_err();
//! assert_eq!(err.to_string(), "\
//! unclosed quote: expected a closing `\"` for the phrase that starts here
//! name:\"charizard
//!      ^^^^^^^^^^");
//! ```

mod ast;
mod display;
mod error;
mod parser;

/// The rules values are matched by, the same for the index and the query: folding (NFKC,
/// lower case, accents removed but kana voicing kept, plain quotes), words (letter and
/// digit runs, split at CJK boundaries, and each symbol a word of its own), and the words
/// of a wildcard value.
pub use crate::text::{fold, is_all_cjk, pattern_words, words, Words};
pub use ast::{Bound, CompareOp, Expr, Mode, Query, Range, Span, Spanned, Term, Test, Value};
pub use error::{Diagnostic, Found, ParseError, ParseErrorKind};
pub(crate) use parser::parse_with_max_len;
pub(crate) use parser::EVERY_FIELD;
pub use parser::{parse, MAX_DEPTH, MAX_QUERY_BYTES, MAX_TERMS};

#[cfg(test)]
mod tests;
