//! The rules for field names, shared by the index, the schema step and the importers:
//! which paths are keyword fields and which are text fields, the snake_case spelling of
//! a camelCase name, "did you mean" suggestions, and the words that lead a list of fields
//! in messages.

/// What leads in the list of an object field's fields in an error message (`search one of
/// its fields: `a`, `b``); the list ends the message, and `/v2` finds it by this text to
/// give its names in v2's spelling.
pub(crate) const FIELDS_OF_OBJECT: &str = "one of its fields: ";

/// How string values of a field are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// `field:value` matches when one value equals the whole value (after folding).
    Keyword,
    /// `field:value` matches when the value's words occur as consecutive words.
    Text,
}

/// Last path segments that make a keyword field.
const KEYWORD_SEGMENTS: [&str; 19] = [
    "id",
    "expansion_id",
    "printings",
    "rarity",
    "rarity_code",
    "language",
    "language_code",
    "supertype",
    "subtypes",
    "types",
    "series",
    "code",
    "number",
    "printed_number",
    "regulation_mark",
    "condition",
    "company",
    "grade",
    "currency",
];

/// The kind of the field at `path` (dotted, snake_case): `variants.name`, the fields of a
/// `legalities` object (a legality is a status, `Legal` or `Not Legal`, not words), and
/// every path whose last segment is a keyword segment, or ends in `_id`, `_code` or
/// `type`, is a keyword field; everything else is text.
///
/// ```
/// use cardex::{field_kind, FieldKind};
/// assert_eq!(field_kind("rarity_code"), FieldKind::Keyword);
/// assert_eq!(field_kind("translation.en.types"), FieldKind::Keyword);
/// assert_eq!(field_kind("weaknesses.type"), FieldKind::Keyword);
/// assert_eq!(field_kind("variants.name"), FieldKind::Keyword);
/// assert_eq!(field_kind("legalities.standard"), FieldKind::Keyword);
/// assert_eq!(field_kind("expansion.legalities.expanded"), FieldKind::Keyword);
/// assert_eq!(field_kind("attacks.name"), FieldKind::Text);
/// assert_eq!(field_kind("legalities"), FieldKind::Text);
/// ```
pub fn field_kind(path: &str) -> FieldKind {
    let last = path.rsplit('.').next().unwrap_or(path);
    let in_legalities = path
        .rsplit('.')
        .skip(1)
        .any(|segment| segment == "legalities");
    if path == "variants.name"
        || in_legalities
        || KEYWORD_SEGMENTS.contains(&last)
        || last.ends_with("_id")
        || last.ends_with("_code")
        || last.ends_with("type")
    {
        FieldKind::Keyword
    } else {
        FieldKind::Text
    }
}

/// `path` after `prefix`, which it starts with in any ASCII case (`Expansion.name` after
/// `expansion.`): a field name's case tells no two fields apart.
pub(crate) fn strip_field_prefix<'p>(path: &'p str, prefix: &str) -> Option<&'p str> {
    let head = path.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &path[prefix.len()..])
}

/// The snake_case spelling of a camelCase path, segment by segment (`rarityCode` →
/// `rarity_code`, `attacks.convertedEnergyCost` → `attacks.converted_energy_cost`).
///
/// ```
/// assert_eq!(cardex::snake_case("expansionId"), "expansion_id");
/// assert_eq!(cardex::snake_case("translation.en.retreatCost"), "translation.en.retreat_cost");
/// ```
pub fn snake_case(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 4);
    let mut prev_lower = false;
    for c in path.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

/// The camelCase spelling of a snake_case key: each `_x` is `X` (`1st_edition_holofoil`
/// → `1stEditionHolofoil`); a leading, trailing or doubled `_` stays. The inverse of
/// [`snake_case`] on camelCase keys.
///
/// ```
/// assert_eq!(cardex::camel_case("national_pokedex_numbers"), "nationalPokedexNumbers");
/// assert_eq!(cardex::camel_case(&cardex::snake_case("1stEditionHolofoil")), "1stEditionHolofoil");
/// ```
pub fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('_', Some(next)) if !out.is_empty() && next.is_ascii_alphanumeric() => {
                let next = chars.next().unwrap_or_default();
                out.push(next.to_ascii_uppercase());
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether `typed` names the dotted path `path`, segment by segment, in a spelling a query
/// may use: as the records spell it, its camelCase alias (read back to snake_case), or the
/// camelCase that `casing=camel` writes, which drops the `_` before a digit (`days7` for
/// `days_7`: a digit has no capital, so [`snake_case`] cannot restore it), read as
/// [`snake_case`] reads any name (`Days7` too).
pub(crate) fn names_path(path: &str, typed: &str) -> bool {
    let mut written = typed.split('.');
    let same = path.split('.').all(|segment| {
        written.next().is_some_and(|t| {
            t == segment
                || snake_case(t) == segment
                || snake_case(&camel_case(segment)) == snake_case(t)
        })
    });
    same && written.next().is_none()
}

/// The one item of `items`, `None` when there are none or several: a name that several
/// things answer to picks none of them.
pub(crate) fn the_only<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    match (items.next(), items.next()) {
        (Some(item), None) => Some(item),
        _ => None,
    }
}

/// The candidate closest to `typed` (read as snake_case; the candidates are compared as
/// given) by edit distance, if it is close enough to be a likely misspelling: at most a
/// third of the length, and at least one edit allowed, but fewer edits than either name has
/// characters. The library's "did you mean" for fields and parameters, public for programs
/// that name things the same way.
///
/// ```
/// let fields = ["rarity_code", "rarity", "name"];
/// assert_eq!(cardex::suggest("rarityCod", fields), Some("rarity_code"));
/// assert_eq!(cardex::suggest("x", fields), None);
/// ```
pub fn suggest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = snake_case(typed);
    let length = typed.chars().count();
    let limit = (length / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (levenshtein(&typed, c), c))
        // A name replaced whole is no misspelling of it (`_` is not `q`).
        .filter(|&(d, c)| d <= limit && d < length.min(c.chars().count()))
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

/// The one candidate that ends with `typed` (read as snake_case, case ignored) after a
/// `.`, if exactly one does: the full path of a field named by its tail
/// (`prices.market` → `variants.prices.market`).
pub(crate) fn by_tail<'a>(
    typed: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let tail = format!(".{}", snake_case(typed)).to_ascii_lowercase();
    let mut found = candidates.into_iter().filter(|c| {
        c.len() > tail.len() && c.is_char_boundary(c.len() - tail.len()) && {
            let end = &c[c.len() - tail.len()..];
            end.eq_ignore_ascii_case(&tail)
        }
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Edit distance between two strings, by characters, counting a swap of two neighbours
/// as one edit (optimal string alignment), so `nmae` is one edit from `name`.
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        d[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_names_the_one_path_that_ends_so() {
        let paths = [
            "variants.prices.market",
            "variants.prices.market_cap",
            "name",
        ];
        assert_eq!(by_tail("Market", paths), Some("variants.prices.market"));
        assert_eq!(
            by_tail("prices.market", paths),
            Some("variants.prices.market")
        );
        assert_eq!(
            by_tail("marketCap", paths),
            Some("variants.prices.market_cap")
        );
        // Only after a `.`, and only when one path ends so.
        assert_eq!(by_tail("rket", paths), None);
        assert_eq!(by_tail("name", paths), None);
        assert_eq!(by_tail("grade", ["a.grade", "b.c.grade"]), None);
        assert_eq!(by_tail("é", ["a.xé", "b.é"]), Some("b.é"));
    }

    #[test]
    fn kinds() {
        for keyword in [
            "id",
            "expansion_id",
            "printings",
            "variants.printings",
            "rarity",
            "variants.rarity",
            "rarity_code",
            "language_code",
            "subtypes",
            "translation.en.subtypes",
            "types",
            "number",
            "variants.prices.condition",
            "variants.prices.company",
            "variants.prices.grade",
            "variants.prices.currency",
            "variants.prices.type",
            "supertype",
            "images.type",
            "tcgplayer_id",
            "set_code",
            "variants.name",
        ] {
            assert_eq!(field_kind(keyword), FieldKind::Keyword, "{keyword}");
        }
        for text in [
            "name",
            "attacks.name",
            "attacks.text",
            "artist",
            "flavor_text",
            "hp",
            "effect",
            "ink_types",
            "abilities.name",
        ] {
            assert_eq!(field_kind(text), FieldKind::Text, "{text}");
        }
    }

    #[test]
    fn camel_case_undoes_snake_case() {
        for key in [
            "nationalPokedexNumbers",
            "1stEditionHolofoil",
            "convertedRetreatCost",
            "id",
            "ptcgoCode",
            "reverseHolofoil",
        ] {
            assert_eq!(camel_case(&snake_case(key)), key);
        }
        assert_eq!(camel_case("_private"), "_private");
        assert_eq!(camel_case("trailing_"), "trailing_");
        assert_eq!(camel_case("days_7"), "days7");
        // What casing=camel writes names the path again.
        assert!(names_path(
            "trends.days_7.price_change",
            "trends.days7.priceChange"
        ));
        assert!(names_path(
            "trends.days_7.price_change",
            "trends.days_7.priceChange"
        ));
        assert!(names_path("extra_field_2", "extraField2"));
        assert!(names_path("trends.days_7", "trends.Days7"));
        assert!(!names_path(
            "national_pokedex_numbers",
            "nationalpokedexnumbers"
        ));
        assert!(!names_path("trends.days_7", "trends.days8"));
        assert!(!names_path("trends.days_7", "trends"));
        assert!(!names_path("trends", "trends.days7"));
    }

    #[test]
    fn camel_to_snake() {
        assert_eq!(snake_case("rarityCode"), "rarity_code");
        assert_eq!(
            snake_case("nationalPokedexNumbers"),
            "national_pokedex_numbers"
        );
        assert_eq!(snake_case("rarity_code"), "rarity_code");
        assert_eq!(snake_case("set.ptcgoCode"), "set.ptcgo_code");
        assert_eq!(snake_case("days7Change"), "days7_change");
    }

    #[test]
    fn suggestions() {
        let fields = ["rarity", "rarity_code", "name", "printings", "attacks.name"];
        let s = |t: &str| suggest(t, fields.iter().copied());
        assert_eq!(s("rarty_code"), Some("rarity_code"));
        assert_eq!(s("rarityCod"), Some("rarity_code"));
        assert_eq!(s("nmae"), Some("name"));
        assert_eq!(s("printing"), Some("printings"));
        assert_eq!(s("attack.name"), Some("attacks.name"));
        assert_eq!(s("zzz"), None);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
