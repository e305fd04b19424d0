//! A naive evaluator of the `q` language over plain JSON records, written from the
//! contract alone, as the reference the engine is checked against.
//!
//! It walks each record for each query: no index, no plan. It shares only the folding,
//! word and field-kind rules with the engine (`cardex::query::fold` and `words`, `cardex::field_kind`,
//! unit-tested on their own); matching, phrases, wildcards, numbers, the printings and
//! translation rules and the default order are written again here.

use std::cmp::Ordering;

use cardex::query::{fold, is_all_cjk, pattern_words, words};
use cardex::query::{Bound, Expr, Mode, Term, Test, Value};
use cardex::{field_kind, snake_case, FieldKind};
use serde_json::Value as Json;

/// A collection of records as the contract says they are served: printings computed for
/// cards, translations applied.
pub struct Records {
    pub records: Vec<Json>,
    /// Every path that holds a scalar in some record.
    paths: std::collections::HashSet<String>,
    /// Every path that holds an array with an object in it in some record.
    object_arrays: std::collections::HashSet<String>,
    /// The fields of dates: paths whose values that compare as numbers are all strings
    /// written as dates of the years 1000 to 9999 (and there is one).
    date_paths: std::collections::HashSet<String>,
}

/// Applies the translation fallback (docs/spec/card-data-service.md: a missing property takes `translation.en`'s) to a record.
pub fn apply_translation(record: &mut Json) {
    let Some(en) = record
        .get("translation")
        .and_then(|t| t.get("en"))
        .and_then(Json::as_object)
        .cloned()
    else {
        return;
    };
    let object = record.as_object_mut().expect("records are objects");
    // A card's variants are its own (contract, Translations).
    let card = object.contains_key("expansion_id");
    for (key, value) in en {
        if value.is_null() || (card && key == "variants") {
            continue;
        }
        if object.get(&key).is_none_or(Json::is_null) {
            object.insert(key, value);
        }
    }
}

/// The printings rule (docs/spec/contract.md, "Snapshots").
pub fn printings(card: &Json) -> Vec<String> {
    let expansion = card["expansion_id"]
        .as_str()
        .expect("cards have expansion_id")
        .to_string();
    let mut out: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !out.iter().any(|q| q == p) {
            out.push(p.to_string());
        }
    };
    match card.get("printings").and_then(Json::as_array) {
        Some(list) => list.iter().filter_map(Json::as_str).for_each(&mut add),
        None => add(&expansion),
    }
    for variant in card
        .get("variants")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        for p in variant
            .get("printings")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            add(p.as_str().expect("strings"));
        }
    }
    add(&expansion);
    out
}

/// A card as served: translation applied, printings computed, and a variant without
/// printings (absent, null or empty) printed in the card's expansion.
pub fn served_card(raw: &Json) -> Json {
    let mut card = raw.clone();
    apply_translation(&mut card);
    let p = printings(&card);
    let own = card["expansion_id"].clone();
    if let Some(variants) = card.get_mut("variants").and_then(Json::as_array_mut) {
        for variant in variants.iter_mut().filter_map(Json::as_object_mut) {
            let none = match variant.get("printings") {
                None | Some(Json::Null) => true,
                Some(Json::Array(list)) => list.is_empty(),
                Some(_) => false,
            };
            if none {
                variant.insert("printings".into(), Json::Array(vec![own.clone()]));
            }
        }
    }
    card.as_object_mut().expect("object").insert(
        "printings".into(),
        Json::Array(p.into_iter().map(Json::String).collect()),
    );
    card
}

/// A scalar found at a path.
#[derive(Debug, Clone)]
enum Scalar {
    Str(String),
    Num(f64),
}

fn collect(value: &Json, path: &[&str], out: &mut Vec<Scalar>) {
    match value {
        Json::Array(items) => items.iter().for_each(|i| collect(i, path, out)),
        Json::Object(map) if !path.is_empty() => {
            if let Some(v) = map.get(path[0]) {
                collect(v, &path[1..], out);
            }
        }
        _ if !path.is_empty() => {}
        Json::String(s) => out.push(Scalar::Str(s.clone())),
        Json::Bool(b) => out.push(Scalar::Str(b.to_string())),
        Json::Number(n) => out.push(Scalar::Num(n.as_f64().expect("finite"))),
        _ => {}
    }
}

/// The scalars of `record` at a dotted path, arrays looked through, nulls skipped.
fn values(record: &Json, path: &str) -> Vec<Scalar> {
    let segments: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    collect(record, &segments, &mut out);
    out
}

/// Adds every path of `value` that holds a scalar to `out`, and every path that holds
/// an object inside an array to `arrays`.
fn scalar_paths(
    value: &Json,
    path: &str,
    out: &mut std::collections::HashSet<String>,
    arrays: &mut std::collections::HashSet<String>,
    numbers: &mut std::collections::HashMap<String, (bool, bool)>,
) {
    match value {
        Json::Object(map) => {
            for (k, v) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                scalar_paths(v, &p, out, arrays, numbers);
            }
        }
        Json::Array(items) => {
            for item in items {
                if item.is_object() {
                    arrays.insert(path.to_string());
                }
                scalar_paths(item, path, out, arrays, numbers);
            }
        }
        Json::Null => {}
        _ => {
            out.insert(path.to_string());
            // (a date here, a number that is not a date here)
            let seen = match value {
                Json::Number(_) => Some((false, true)),
                Json::String(s) => decimal_number(s)
                    .or_else(|| date(s))
                    .map(|x| (date_shaped(x), !date_shaped(x))),
                _ => None,
            };
            if let Some((a_date, other)) = seen {
                let entry = numbers.entry(path.to_string()).or_default();
                entry.0 |= a_date;
                entry.1 |= other;
            }
        }
    }
}

/// The objects that are elements of arrays at `path` under `value` (arrays looked through
/// on the way, and arrays of arrays at the end).
fn elements<'j>(value: &'j Json, path: &[&str], in_array: bool, out: &mut Vec<&'j Json>) {
    match value {
        Json::Array(items) => items.iter().for_each(|i| elements(i, path, true, out)),
        Json::Object(map) if !path.is_empty() => {
            if let Some(v) = map.get(path[0]) {
                elements(v, &path[1..], false, out);
            }
        }
        Json::Object(_) if in_array => out.push(value),
        _ => {}
    }
}

impl Records {
    /// The records, and the paths they hold values at.
    pub fn new(records: Vec<Json>) -> Records {
        let mut paths = std::collections::HashSet::new();
        let mut object_arrays = std::collections::HashSet::new();
        let mut numbers = std::collections::HashMap::new();
        for r in &records {
            scalar_paths(r, "", &mut paths, &mut object_arrays, &mut numbers);
        }
        let date_paths = numbers
            .into_iter()
            .filter(|(_, (a_date, other))| *a_date && !*other)
            .map(|(path, _)| path)
            .collect();
        Records {
            records,
            paths,
            object_arrays,
            date_paths,
        }
    }

    /// Whether some record has a scalar at `path`.
    pub fn knows(&self, path: &str) -> bool {
        self.paths.contains(path)
    }

    /// The path a query's field name resolves to (as written, else snake_case).
    pub fn resolve(&self, typed: &str) -> Option<String> {
        self.resolve_in("", typed, |p| self.knows(p))
    }

    /// The path relative to `prefix` (an element path and `.`, or nothing) that `typed`
    /// names, as written else snake_case, when `known` holds for its full path.
    fn resolve_in(
        &self,
        prefix: &str,
        typed: &str,
        known: impl Fn(&str) -> bool,
    ) -> Option<String> {
        [typed.to_string(), snake_case(typed)]
            .into_iter()
            .find(|p| known(&format!("{prefix}{p}")))
    }

    /// The positions of the records matching `expr`, in input order.
    pub fn matching(&self, expr: Option<&Expr>) -> Vec<usize> {
        (0..self.records.len())
            .filter(|&i| expr.is_none_or(|e| self.matches(e, &self.records[i], "")))
            .collect()
    }

    /// Whether `record` — a record, or an element of an array of objects at `prefix`
    /// (its path and `.`) — matches `expr`, whose field names are relative to it.
    pub fn matches(&self, expr: &Expr, record: &Json, prefix: &str) -> bool {
        match expr {
            Expr::And(items) => items.iter().all(|e| self.matches(e, record, prefix)),
            Expr::Or(items) => items.iter().any(|e| self.matches(e, record, prefix)),
            Expr::Not(inner) => !self.matches(inner, record, prefix),
            Expr::Term(term) => self.term(term, record, prefix),
        }
    }

    /// The elements of the array of objects `typed` (relative to `prefix`) in `record`,
    /// and their path with its `.`: what a nested query `typed:( ... )` tests.
    pub fn elements_of<'j>(
        &self,
        record: &'j Json,
        prefix: &str,
        typed: &str,
    ) -> (Vec<&'j Json>, String) {
        let rel = self
            .resolve_in(prefix, typed, |p| self.object_arrays.contains(p))
            .unwrap_or_else(|| panic!("the oracle only runs on arrays of objects: {typed}"));
        let segments: Vec<&str> = rel.split('.').collect();
        let mut out = Vec::new();
        elements(record, &segments, false, &mut out);
        (out, format!("{prefix}{rel}."))
    }

    fn term(&self, term: &Term, record: &Json, prefix: &str) -> bool {
        let typed = term.field.as_ref().map_or("name", |f| &*f.value);
        if let Test::Nested(inner) = &term.test {
            let (elements, inner_prefix) = self.elements_of(record, prefix, typed);
            return elements
                .iter()
                .any(|e| self.matches(inner, e, &inner_prefix));
        }
        let rel = self
            .resolve_in(prefix, typed, |p| self.knows(p))
            .unwrap_or_else(|| panic!("the oracle only runs on known fields: {prefix}{typed}"));
        let vals = values(record, &rel);
        let path = format!("{prefix}{rel}");
        let kind = field_kind(&path);
        let dates = self.date_paths.contains(&path);
        match &term.test {
            Test::Nested(_) => unreachable!("handled above"),
            Test::Value(v) => value_matches(kind, dates, &vals, v, term.mode),
            Test::Compare(op, n) => {
                let (lo, hi) = op.to_range(n.value);
                let (lo, hi) = if dates { years(lo, hi) } else { (lo, hi) };
                numeric(&vals).any(|x| in_range(x, lo, hi))
            }
            Test::Group(alternatives) => alternatives.iter().any(|all| {
                all.iter()
                    .all(|v| value_matches(kind, dates, &vals, v, term.mode))
            }),
        }
    }
}

fn numeric(vals: &[Scalar]) -> impl Iterator<Item = f64> + '_ {
    vals.iter().filter_map(|v| match v {
        Scalar::Num(x) => Some(*x),
        Scalar::Str(s) => decimal_number(s).or_else(|| date(s)),
    })
}

/// Strings that are dates, `YYYY/MM/DD` or `YYYY-MM-DD`, maybe followed by a time after a
/// space or `T`: the number `YYYYMMDD`.
fn date(s: &str) -> Option<f64> {
    let (day, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    if let Some(time) = time {
        if time.is_empty()
            || !time
                .chars()
                .all(|c| c.is_ascii_digit() || ":.Z".contains(c))
        {
            return None;
        }
    }
    ['/', '-'].into_iter().find_map(|separator| {
        let parts: Vec<&str> = day.split(separator).collect();
        let shape = [4, 2, 2];
        if parts.len() != 3
            || parts
                .iter()
                .zip(shape)
                .any(|(p, n)| p.len() != n || !p.chars().all(|c| c.is_ascii_digit()))
        {
            return None;
        }
        let [y, m, d] = [0, 1, 2].map(|i| parts[i].parse::<u32>().unwrap());
        ((1..=12).contains(&m) && (1..=31).contains(&d))
            .then(|| f64::from(y * 10_000 + m * 100 + d))
    })
}

/// Whether a string's number reads as a date `YYYYMMDD` of the years 1000 to 9999.
fn date_shaped(x: f64) -> bool {
    if x.fract() != 0.0 || x < 0.0 {
        return false;
    }
    let n = x as u64;
    let (year, month, day) = (n / 10_000, n / 100 % 100, n % 100);
    (1000..=9999).contains(&year) && (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// A bound that is a bare year (an integer from 1000 to 9999).
fn bare_year(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && (1000.0..=9999.0).contains(&x)).then_some(x as u32)
}

/// Bounds on a field of dates: a bare year stands for its span of dates (contract, "Query
/// language"): `>=Y` from Y/01/01, `>Y` after Y/12/31, `<=Y` to Y/12/31, `<Y` before Y/01/01.
fn years(lo: Bound, hi: Bound) -> (Bound, Bound) {
    let day = |y: u32, md: u32| f64::from(y * 10_000 + md);
    let lo = match lo {
        Bound::Inclusive(x) => bare_year(x).map_or(lo, |y| Bound::Inclusive(day(y, 101))),
        Bound::Exclusive(x) => bare_year(x).map_or(lo, |y| Bound::Exclusive(day(y, 1231))),
        Bound::Unbounded => lo,
    };
    let hi = match hi {
        Bound::Inclusive(x) => bare_year(x).map_or(hi, |y| Bound::Inclusive(day(y, 1231))),
        Bound::Exclusive(x) => bare_year(x).map_or(hi, |y| Bound::Exclusive(day(y, 101))),
        Bound::Unbounded => hi,
    };
    (lo, hi)
}

/// Strings that are decimal numbers: an optional sign, ASCII digits, then maybe a point
/// and more digits.
fn decimal_number(s: &str) -> Option<f64> {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let mut parts = unsigned.splitn(2, '.');
    let ok =
        |d: Option<&str>| d.is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
    let whole = parts.next();
    let fraction = parts.next();
    if whole.is_some_and(|w| w.len() > 18) || !ok(whole) || (fraction.is_some() && !ok(fraction)) {
        return None;
    }
    s.parse::<f64>().ok()
}

fn in_range(x: f64, lo: Bound, hi: Bound) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Inclusive(n) => x >= n,
        Bound::Exclusive(n) => x > n,
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Inclusive(n) => x <= n,
        Bound::Exclusive(n) => x < n,
    };
    above && below
}

/// A query value that reads as a number.
fn query_number(raw: &str) -> Option<f64> {
    let body = raw.strip_prefix('-').unwrap_or(raw);
    let mut parts = body.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if digits(int) && frac.is_none_or(digits) {
        raw.parse().ok()
    } else {
        None
    }
}

fn value_matches(kind: FieldKind, dates: bool, vals: &[Scalar], value: &Value, mode: Mode) -> bool {
    let (raw, quoted) = match value {
        Value::Range(r) => {
            let (lo, hi) = if dates {
                years(r.lower, r.upper)
            } else {
                (r.lower, r.upper)
            };
            return numeric(vals).any(|x| in_range(x, lo, hi));
        }
        Value::Word(w) => (&*w.value, false),
        Value::Phrase(p) => (&*p.value, true),
    };
    if raw == "*" && !quoted {
        return !vals.is_empty();
    }

    let wildcard = !quoted && (raw.contains('*') || raw.contains('?'));
    if mode == Mode::Literal {
        // As written: no folding at all.
        let literal = vals.iter().any(|v| match v {
            Scalar::Str(s) if wildcard => glob(raw, s),
            Scalar::Str(s) => s == raw,
            Scalar::Num(_) => false,
        });
        let number = query_number(raw)
            .is_some_and(|x| vals.iter().any(|v| matches!(v, Scalar::Num(y) if *y == x)));
        return literal || number;
    }
    let exact = mode == Mode::Exact;
    let q = fold(raw).into_owned();
    let strings = vals.iter().filter_map(|v| match v {
        Scalar::Str(s) => Some(fold(s).into_owned()),
        Scalar::Num(_) => None,
    });
    let string_match = strings.into_iter().any(|s| match (kind, exact) {
        (FieldKind::Keyword, _) | (FieldKind::Text, true) => {
            if wildcard {
                glob(&q, &s)
            } else {
                s == q
            }
        }
        (FieldKind::Text, false) => phrase(&q, &s, wildcard),
    });
    let number_match = query_number(raw)
        .is_some_and(|x| vals.iter().any(|v| matches!(v, Scalar::Num(y) if *y == x)));
    string_match || number_match
}

/// The query's words occur in the text as consecutive words.
fn phrase(query: &str, text: &str, wildcard: bool) -> bool {
    let qw: Vec<&str> = if wildcard {
        pattern_words(query).collect()
    } else {
        words(query).collect()
    };
    let tw: Vec<&str> = words(text).collect();
    if qw.is_empty() || qw.len() > tw.len() {
        return false;
    }
    (0..=tw.len() - qw.len()).any(|i| {
        qw.iter().zip(&tw[i..]).all(|(q, t)| {
            if q.contains(['*', '?']) {
                glob(q, t)
            } else if is_all_cjk(q) {
                t.contains(q)
            } else {
                q == t
            }
        })
    })
}

/// The nested queries on the array of objects `path` written at the top level of `expr`:
/// alone or ANDed with the rest, not under `OR` or `NOT`. A sort on a field of those
/// elements counts only the elements they match.
pub fn bound_conditions<'e, 'a>(expr: Option<&'e Expr<'a>>, path: &str) -> Vec<&'e Expr<'a>> {
    let mut out = Vec::new();
    if let Some(e) = expr {
        top_level(e, &mut |t| {
            if let (Some(f), Test::Nested(inner)) = (&t.field, &t.test) {
                if *f.value == *path || snake_case(&f.value) == path {
                    out.push(&**inner);
                }
            }
        });
    }
    out
}

/// Whether a term on `field` with one plain value (a word without wildcards, a phrase, a
/// group of one) is at the top level of `expr` (`currency:USD`).
pub fn fixes_value(expr: &Expr<'_>, field: &str) -> bool {
    let plain = |v: &Value| match v {
        Value::Word(w) => !w.value.contains(['*', '?']),
        Value::Phrase(_) => true,
        Value::Range(_) => false,
    };
    let mut fixed = false;
    top_level(expr, &mut |t| {
        let one = match &t.test {
            Test::Value(v) => plain(v),
            Test::Group(any) => any.len() == 1 && any[0].len() == 1 && plain(&any[0][0]),
            _ => false,
        };
        fixed |= one
            && t.field
                .as_ref()
                .is_some_and(|f| snake_case(&f.value) == field);
    });
    fixed
}

/// Calls `each` with the terms at the top level of `expr` (see [`bound_conditions`]).
fn top_level<'e, 'a>(expr: &'e Expr<'a>, each: &mut impl FnMut(&'e Term<'a>)) {
    match expr {
        Expr::And(items) => items.iter().for_each(|e| top_level(e, each)),
        Expr::Term(t) => each(t),
        // A double negation is its term (contract §2).
        Expr::Not(inner) => {
            if let Expr::Not(twice) = &**inner {
                top_level(twice, each);
            }
        }
        Expr::Or(_) => {}
    }
}

/// Whole-string wildcard match: `*` any run, `?` one character (dynamic programming).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let mut dp = vec![vec![false; t.len() + 1]; p.len() + 1];
    dp[0][0] = true;
    for i in 1..=p.len() {
        dp[i][0] = dp[i - 1][0] && p[i - 1] == '*';
        for j in 1..=t.len() {
            dp[i][j] = match p[i - 1] {
                '*' => dp[i - 1][j] || dp[i][j - 1],
                '?' => dp[i - 1][j - 1],
                c => dp[i - 1][j - 1] && c == t[j - 1],
            };
        }
    }
    dp[p.len()][t.len()]
}

/// Natural order, written from the contract (docs/spec/contract.md, "Default order"): fold, split into digit and other
/// runs, compare run by run.
pub fn natural(a: &str, b: &str) -> Ordering {
    fn runs(s: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, run)) if *d == digit => run.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    }
    let (ra, rb) = (runs(&fold(a)), runs(&fold(b)));
    for (x, y) in ra.iter().zip(&rb) {
        let o = match (x.0, y.0) {
            (true, true) => {
                let (tx, ty) = (x.1.trim_start_matches('0'), y.1.trim_start_matches('0'));
                tx.len()
                    .cmp(&ty.len())
                    .then_with(|| tx.cmp(ty))
                    .then_with(|| x.1.len().cmp(&y.1.len()))
            }
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.1.cmp(&y.1),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ra.len().cmp(&rb.len())
}

/// Sorts cards into the default order of the contract (docs/spec/contract.md), given their expansions.
pub fn default_order(cards: &mut [Json], expansions: &[Json]) {
    let release = |id: &str| {
        expansions.iter().find(|e| e["id"] == id).and_then(|e| {
            e.get("release_date")
                .and_then(Json::as_str)
                .map(str::to_string)
        })
    };
    let number = |c: &Json| match c.get("number") {
        Some(Json::String(s)) => Some(s.clone()),
        Some(Json::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    cards.sort_by(|a, b| {
        let (ea, eb) = (
            a["expansion_id"].as_str().unwrap_or(""),
            b["expansion_id"].as_str().unwrap_or(""),
        );
        let (da, db) = (release(ea), release(eb));
        let by_date = match (&da, &db) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let (na, nb) = (number(a), number(b));
        let by_number = match (&na, &nb) {
            (Some(x), Some(y)) => natural(x, y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let (ia, ib) = (
            a["id"].as_str().unwrap_or(""),
            b["id"].as_str().unwrap_or(""),
        );
        by_date
            .then_with(|| natural(ea, eb))
            .then_with(|| ea.cmp(eb))
            .then_with(|| by_number)
            .then_with(|| natural(ia, ib))
            .then_with(|| ia.cmp(ib))
    });
}

#[test]
fn oracle_helpers() {
    assert!(glob("char*", "charizard"));
    assert!(!glob("c?r", "car*"));
    assert!(glob("*", ""));
    assert_eq!(natural("TG05", "10a"), Ordering::Greater);
    assert_eq!(natural("2", "10"), Ordering::Less);
    assert_eq!(natural("007", "7"), Ordering::Greater);
    assert!(phrase("charizard ex", "mega charizard ex", false));
    assert!(!phrase("ex charizard", "charizard ex", false));
    assert!(phrase("ザード", "リザードン", false));
}
