//! v2's field spellings on the engine's: `set.*` is the card's `expansion` (`set.id` its
//! `expansion_id`, `set.ptcgoCode` its `expansion.code`), every other field as written
//! (the engine reads camelCase as snake_case). Applied to `q`, term by term, and to
//! `orderBy`, key by key.

use std::borrow::Cow;

use crate::naming::snake_case;
use crate::query::{parse, Expr};

/// Which records a query is about: cards, or sets (whose fields are their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Of {
    Cards,
    Sets,
}

/// The engine's name for the v2 field path `field` of a card or a set.
pub(crate) fn field(field: &str, of: Of) -> Cow<'_, str> {
    match (of, field.strip_prefix("set.")) {
        (Of::Cards, Some("id")) => Cow::Borrowed("expansion_id"),
        (Of::Cards, Some("ptcgoCode")) => Cow::Borrowed("expansion.code"),
        (Of::Cards, Some(rest)) => Cow::Owned(format!("expansion.{}", snake_case(rest))),
        (Of::Sets, _) if field == "ptcgoCode" => Cow::Borrowed("code"),
        _ => Cow::Borrowed(field),
    }
}

/// `q` with every v2 field path replaced by the engine's. A `q` that does not parse is
/// returned as it is, for the engine to say where and why.
pub(crate) fn q(q: &str, of: Of) -> Cow<'_, str> {
    let Ok(query) = parse(q) else {
        return Cow::Borrowed(q);
    };
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    if let Some(expr) = &query.expr {
        collect(expr, of, &mut edits);
    }
    if edits.is_empty() {
        return Cow::Borrowed(q);
    }
    edits.sort_by_key(|(at, _)| at.start);
    let mut out = String::with_capacity(q.len() + 16 * edits.len());
    let mut copied = 0;
    for (at, name) in edits {
        out.push_str(&q[copied..at.start]);
        out.push_str(&name);
        copied = at.end;
    }
    out.push_str(&q[copied..]);
    Cow::Owned(out)
}

/// The field renames of the terms under `expr`: where each field is written and its
/// engine name.
fn collect(expr: &Expr<'_>, of: Of, edits: &mut Vec<(std::ops::Range<usize>, String)>) {
    match expr {
        Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| collect(e, of, edits)),
        Expr::Not(inner) => collect(inner, of, edits),
        Expr::Term(term) => {
            // Grouped values (`types:(fire OR water)`) hold no fields: the term's is all. A
            // nested query's fields are relative to an element (`attacks:(name:x)`), not
            // v2's card fields; the engine reads their camelCase itself.
            if let Some(written) = &term.field {
                let name = field(&written.value, of);
                if name != written.value.as_ref() {
                    edits.push((written.span.start..written.span.end, name.into_owned()));
                }
            }
        }
    }
}

/// An engine message about a rewritten request in v2's spellings: each `name` in
/// backquotes that the rewrite made is given back as v2 writes it (`expansion.release_date`
/// → `set.releaseDate`, `order_by` → `orderBy`).
pub(crate) fn v2_spelling(message: &str, of: Of) -> String {
    let mut out = String::with_capacity(message.len() + 16);
    let mut quoted = false;
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if quoted && out.ends_with("did you mean `") {
            // The engine's suggestion is its own spelling: give v2's.
            out.push_str(&v2_field(part, of));
        } else if quoted {
            out.push_str(&v2_name(part, of));
        } else {
            out.push_str(part);
        }
        quoted = !quoted;
    }
    out
}

/// The v2 spelling of one name in an engine message (or of a comma list of them, each
/// maybe after `-`).
fn v2_name(name: &str, of: Of) -> Cow<'_, str> {
    if name.contains(',') {
        let names: Vec<Cow<'_, str>> = name.split(',').map(|n| v2_name(n, of)).collect();
        return Cow::Owned(names.join(","));
    }
    if let Some(rest) = name.strip_prefix('-') {
        return Cow::Owned(format!("-{}", v2_name(rest, of)));
    }
    match (of, name) {
        (_, "order_by") => Cow::Borrowed("orderBy"),
        (_, "page_size") => Cow::Borrowed("pageSize"),
        (Of::Cards, "expansion_id") => Cow::Borrowed("set.id"),
        (Of::Cards, "expansion.code") => Cow::Borrowed("set.ptcgoCode"),
        (Of::Sets, "code") => Cow::Borrowed("ptcgoCode"),
        (Of::Cards, _) if name.starts_with("expansion.") => Cow::Owned(format!(
            "set.{}",
            crate::naming::camel_case(&name["expansion.".len()..])
        )),
        _ => Cow::Borrowed(name),
    }
}

/// v2's spelling of the engine's field `path` of a card or a set: the card's `expansion`
/// as `set`, and every segment in camelCase (`expansion.release_date` →
/// `set.releaseDate`, `national_pokedex_numbers` → `nationalPokedexNumbers`).
pub(crate) fn v2_field(path: &str, of: Of) -> String {
    match v2_name(path, of) {
        Cow::Owned(name) => name,
        Cow::Borrowed(same) => same
            .split('.')
            .map(crate::naming::camel_case)
            .collect::<Vec<_>>()
            .join("."),
    }
}

/// `orderBy` with v2 field paths replaced by the engine's (`-set.releaseDate,number` →
/// `-expansion.release_date,number`).
pub(crate) fn order_by(order_by: &str, of: Of) -> String {
    order_by
        .split(',')
        .map(|key| {
            let key = key.trim();
            match key.strip_prefix('-') {
                Some(name) => format!("-{}", field(name.trim(), of)),
                None => field(key, of).into_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_fields_name_the_expansion() {
        let cards = |text| q(text, Of::Cards);
        assert_eq!(
            cards(
                r#"set.id:base1 AND (set.series:"Scarlet & Violet" OR -set.ptcgoCode:BS) name:pika*"#
            ),
            r#"expansion_id:base1 AND (expansion.series:"Scarlet & Violet" OR -expansion.code:BS) name:pika*"#
        );
        assert_eq!(cards("set.releaseDate:2020"), "expansion.release_date:2020");
        assert_eq!(
            cards("nationalPokedexNumbers:25"),
            "nationalPokedexNumbers:25"
        );
        // Left for the engine to place its error.
        assert_eq!(cards("set.id:(a"), "set.id:(a");
        assert_eq!(
            order_by("-set.releaseDate, number,set.printedTotal", Of::Cards),
            "-expansion.release_date,number,expansion.printed_total"
        );
        // Messages name fields as the request did.
        assert_eq!(
            v2_spelling(
                "unknown field `expansion.nmae` (did you mean `expansion.name`?)",
                Of::Cards
            ),
            "unknown field `set.nmae` (did you mean `set.name`?)"
        );
        assert_eq!(
            v2_spelling(
                "invalid `order_by` value `-expansion.release_dat,number`: no record has a value at `expansion.release_dat`",
                Of::Cards
            ),
            "invalid `orderBy` value `-set.releaseDat,number`: no record has a value at `set.releaseDat`"
        );
        assert_eq!(
            v2_spelling("bad `order_by` and `expansion_id`", Of::Cards),
            "bad `orderBy` and `set.id`"
        );
        // A suggestion is the engine's spelling of a field: v2's is given.
        assert_eq!(
            v2_spelling(
                "unknown field `nationalpokedexnumbers` (did you mean `national_pokedex_numbers`?)",
                Of::Cards
            ),
            "unknown field `nationalpokedexnumbers` (did you mean `nationalPokedexNumbers`?)"
        );
        // A set's fields are its own.
        assert_eq!(
            q("ptcgoCode:BS series:base", Of::Sets),
            "code:BS series:base"
        );
        assert_eq!(order_by("-releaseDate", Of::Sets), "-releaseDate");
    }
}
