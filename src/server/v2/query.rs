//! v2's field spellings on the engine's: `set.*` is the card's `expansion` (`set.id` its
//! `expansion_id`, `set.ptcgoCode` its `expansion.code`), every other field as written
//! (the engine reads camelCase as snake_case). Applied to `q`, term by term, and to
//! `orderBy`, key by key. On a catalog that renders v2's `tcgplayer` and `cardmarket` from
//! its variants' prices (see [`super::view`]), a term on one of their figures is a nested
//! query on the price records they are made from ([`PriceField`]).

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::naming::snake_case;
use crate::query::{parse, Expr, Test};

/// Which records a query is about: cards, or sets (whose fields are their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Of {
    Cards,
    Sets,
}

/// Where a catalog's v2 sets take their `images` from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetImages {
    /// The sets' own `images` (the Pokémon TCG API's layout): some set `/v2` serves has
    /// them.
    Own,
    /// The sets' `logo` and `symbol` (cardex's layout; see [`super::view`]): v2's
    /// `images.logo` and `images.symbol` name them.
    LogoAndSymbol,
}

/// The fields of a set in cardex's layout that v2 serves under `images`.
pub(crate) const SET_IMAGES: [&str; 2] = ["symbol", "logo"];

/// The engine's name for the v2 field path `field` of a card or a set. Its case is the
/// engine's concern (a field name's case tells no two fields apart), so `Set.id` and
/// `PTCGOCODE` are renamed too.
pub(crate) fn field(field: &str, of: Of, images: SetImages) -> Cow<'_, str> {
    let set_field = crate::naming::strip_field_prefix(field, "set.");
    let image = |path: &str| {
        crate::naming::strip_field_prefix(path, "images.")
            .filter(|_| images == SetImages::LogoAndSymbol)
            .and_then(|name| {
                SET_IMAGES
                    .into_iter()
                    .find(|known| name.eq_ignore_ascii_case(known))
            })
    };
    match (of, set_field) {
        (Of::Cards, Some(rest)) => {
            if let Some(image) = image(rest) {
                return Cow::Owned(format!("expansion.{image}"));
            }
        }
        (Of::Sets, _) => {
            if let Some(image) = image(field) {
                return Cow::Borrowed(image);
            }
        }
        _ => {}
    }
    match (of, set_field) {
        (Of::Cards, Some(id)) if id.eq_ignore_ascii_case("id") => Cow::Borrowed("expansion_id"),
        (Of::Cards, Some(code)) if code.eq_ignore_ascii_case("ptcgoCode") => {
            Cow::Borrowed("expansion.code")
        }
        (Of::Cards, Some(rest)) => Cow::Owned(format!("expansion.{}", snake_case(rest))),
        (Of::Sets, _) if field.eq_ignore_ascii_case("ptcgoCode") => Cow::Borrowed("code"),
        _ => Cow::Borrowed(field),
    }
}

/// What a catalog's v2 cards are served with, where their `tcgplayer` and `cardmarket` are
/// made from their variants' prices: the variant names under `tcgplayer.prices`, and
/// whether any card has `cardmarket`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Served {
    pub(crate) variants: BTreeSet<String>,
    pub(crate) cardmarket: bool,
}

impl Served {
    /// The price figures `orderBy` takes first, in v2's spelling (a variant whose name a
    /// key cannot hold is left out).
    pub(crate) fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for variant in self.variants.iter().filter(|v| key_can_hold(v)) {
            for figure in TCGPLAYER_FIGURES {
                keys.push(format!("tcgplayer.prices.{variant}.{figure}"));
            }
        }
        if self.cardmarket {
            keys.extend(CARDMARKET_FIGURES.map(|(name, _)| format!("cardmarket.prices.{name}")));
        }
        keys
    }
}

/// Whether a key can name variant `name`: not empty, and without `.`, `,`, `"` or `\`.
fn key_can_hold(name: &str) -> bool {
    !name.is_empty() && !name.contains(['.', ',', '"', '\\'])
}

/// A figure of v2's `tcgplayer.prices.<variant>` or `cardmarket.prices`, as a catalog in
/// cardex's layout renders them (see `market_prices` in [`super::view`]): of the raw Near
/// Mint prices (or raw without a condition) in USD of the card's variants of that name
/// (`normal` also those without a name), or in EUR of any of its variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PriceField {
    /// The variant's name, for `tcgplayer`; none (any variant) for `cardmarket`.
    variant: Option<String>,
    currency: &'static str,
    /// The price record's field it renders (`market` for `averageSellPrice`).
    pub(crate) figure: &'static str,
}

/// The figures of `tcgplayer.prices.<variant>`, each the price record's field of its name.
pub(crate) const TCGPLAYER_FIGURES: [&str; 4] = ["low", "mid", "high", "market"];

/// The figures of `cardmarket.prices` cardex renders, and the price record's field each is.
pub(crate) const CARDMARKET_FIGURES: [(&str, &str); 3] = [
    ("averageSellPrice", "market"),
    ("trendPrice", "market"),
    ("lowPrice", "low"),
];

impl PriceField {
    /// The price figure the v2 path `path` names on cards `served` so: `None` when it
    /// names none (it may still be under `tcgplayer` or `cardmarket`), and why not when it
    /// names one that no card is served with or that cardex does not render.
    pub(crate) fn of(path: &str, served: &Served) -> Option<Result<PriceField, String>> {
        if let Some(rest) = crate::naming::strip_field_prefix(path, "tcgplayer.prices.") {
            let (variant, figure) = rest.rsplit_once('.')?;
            if variant.contains('.') {
                return None;
            }
            if !key_can_hold(variant) {
                return Some(Err(format!(
                    "`{path}`: a key names no variant whose name is empty or holds `\"`, `\\` or `,`"
                )));
            }
            if !served.variants.contains(variant) {
                let listed: Vec<String> = served
                    .variants
                    .iter()
                    .filter(|v| key_can_hold(v))
                    .map(|v| format!("`{v}`"))
                    .collect();
                return Some(Err(format!(
                    "`{path}`: no card here is served with `tcgplayer.prices.{variant}`; the variants priced are {}",
                    if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
                )));
            }
            let Some(&figure) = TCGPLAYER_FIGURES
                .iter()
                .find(|f| f.eq_ignore_ascii_case(figure))
            else {
                return Some(Err(format!(
                    "`{path}`: the prices cardex renders as `tcgplayer.prices.{variant}` have {}",
                    TCGPLAYER_FIGURES.map(|f| format!("`{f}`")).join(", ")
                )));
            };
            return Some(Ok(PriceField {
                variant: Some(variant.to_string()),
                currency: "USD",
                figure,
            }));
        }
        let name = crate::naming::strip_field_prefix(path, "cardmarket.prices.")?;
        if !served.cardmarket {
            return Some(Err(format!(
                "`{path}`: no card here is served with `cardmarket` (no variant has a raw Near Mint price in EUR)"
            )));
        }
        let Some(&(_, figure)) = CARDMARKET_FIGURES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        else {
            return Some(Err(format!(
                "`{path}`: the prices cardex renders as `cardmarket.prices` are {}",
                CARDMARKET_FIGURES.map(|(n, _)| format!("`{n}`")).join(", ")
            )));
        };
        Some(Ok(PriceField {
            variant: None,
            currency: "EUR",
            figure,
        }))
    }

    /// The nested query on a card's variants matching the price records this figure is
    /// made from that also pass `test`, a test on the figure's field written as in `q`
    /// (`market>100`, `!low:[1 TO 5]`, `market:*`). Values compare as the rendering
    /// compares them: `type`, `currency` and `condition` whole (`!`), in any case, and the
    /// variant's name as written (`^`), as it is the key it is served under.
    pub(crate) fn query(&self, test: &str) -> String {
        let prices = format!(
            "!type:raw AND !currency:{} AND (!condition:NM OR -condition:*) AND {test}",
            self.currency
        );
        match &self.variant {
            // A variant without a name is v2's `normal`, as the rendering names it.
            Some(normal) if normal == "normal" => {
                format!("variants:((^name:normal OR -name:*) AND prices:({prices}))")
            }
            Some(variant) => format!("variants:(^name:\"{variant}\" AND prices:({prices}))"),
            None => format!("variants.prices:({prices})"),
        }
    }
}

/// `q` with every v2 field path replaced by the engine's, and with `prices` (the catalog
/// renders `tcgplayer` and `cardmarket`) every term on a price figure replaced by its
/// nested query; why not, for a price figure cardex does not render. A `q` that does not
/// parse is returned as it is, for the engine to say where and why.
pub(crate) fn q<'q>(
    q: &'q str,
    of: Of,
    prices: Option<&Served>,
    images: SetImages,
) -> Result<Cow<'q, str>, String> {
    let Ok(query) = parse(q) else {
        return Ok(Cow::Borrowed(q));
    };
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    if let Some(expr) = &query.expr {
        let prices = prices.filter(|_| of == Of::Cards).map(|served| (q, served));
        collect(expr, of, prices, images, &mut edits)?;
    }
    if edits.is_empty() {
        return Ok(Cow::Borrowed(q));
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
    Ok(Cow::Owned(out))
}

/// The field renames of the terms under `expr`: where each field is written and its
/// engine name; with `prices` (the whole `q`), a term on a price figure whole, and its
/// nested query.
fn collect(
    expr: &Expr<'_>,
    of: Of,
    prices: Option<(&str, &Served)>,
    images: SetImages,
    edits: &mut Vec<(std::ops::Range<usize>, String)>,
) -> Result<(), String> {
    match expr {
        Expr::And(items) | Expr::Or(items) => items
            .iter()
            .try_for_each(|e| collect(e, of, prices, images, edits)),
        Expr::Not(inner) => collect(inner, of, prices, images, edits),
        Expr::Term(term) => {
            // Grouped values (`types:(fire OR water)`) hold no fields: the term's is all. A
            // nested query's fields are relative to an element (`attacks:(name:x)`), not
            // v2's card fields; the engine reads their camelCase itself.
            let Some(written) = &term.field else {
                return Ok(());
            };
            if let (Some((q, served)), false) = (prices, matches!(term.test, Test::Nested(_))) {
                if let Some(price) = PriceField::of(&written.value, served) {
                    // `!` or `^` before the field, then the figure's test as written.
                    let mode = &q[term.span.start..written.span.start];
                    let test = &q[written.span.end..term.span.end];
                    let price = price?;
                    let nested = price.query(&format!("{mode}{}{test}", price.figure));
                    edits.push((term.span.start..term.span.end, nested));
                    return Ok(());
                }
            }
            let name = field(&written.value, of, images);
            if name != written.value.as_ref() {
                edits.push((written.span.start..written.span.end, name.into_owned()));
            }
            Ok(())
        }
    }
}

/// An engine message about a rewritten request in v2's spellings: each `name` in
/// backquotes that the rewrite made is given back as v2 writes it (`expansion.release_date`
/// → `set.releaseDate`, `order_by` → `orderBy`).
pub(crate) fn v2_spelling(message: &str, of: Of) -> String {
    // The engine's list of an object's fields ends its message (`... one of its fields:
    // `a`, `b``): its names are the engine's, given in v2's spelling, whatever backticks
    // the request's own text put before it.
    let lead = crate::naming::FIELDS_OF_OBJECT;
    let (head, list) = match message.rfind(lead) {
        Some(at) => message.split_at(at + lead.len()),
        None => (message, ""),
    };
    let mut out = spelled(head, of, false);
    out.push_str(&spelled(list, of, true));
    out
}

/// [`v2_spelling`] of a part of a message: each quoted name in v2's spelling (a `list` of
/// the engine's names, or the names of a message).
fn spelled(message: &str, of: Of, list: bool) -> String {
    let mut out = String::with_capacity(message.len() + 16);
    let mut quoted = false;
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if quoted && (list || out.ends_with("did you mean `") || out.ends_with("nested query on `"))
        {
            // The engine's suggestion, its list, or the path of a nested query it names,
            // is in its own spelling: give v2's.
            out.push_str(&v2_field(part, of));
        } else if quoted {
            out.push_str(&v2_name(part, of));
        } else {
            // The engine's examples of a request (`...&order_by=-x`), in v2's names.
            out.push_str(&part.replace("&order_by=", "&orderBy="));
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

/// An `orderBy` whose first key is a price figure (see [`PriceField`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PriceSort {
    pub(crate) price: PriceField,
    pub(crate) descending: bool,
    /// The keys after it, in the engine's spelling.
    pub(crate) then: Option<String>,
}

impl PriceSort {
    /// The queries of the cards with the price and of those without it, among those `q`
    /// (the engine's) matches. `q`'s own nested conditions are placed under an `OR` with a
    /// term that matches no card (`-id:*`), so that they bind none of the sort's prices.
    pub(crate) fn queries(&self, q: &str) -> (String, String) {
        let within = if q.trim().is_empty() {
            String::new()
        } else {
            format!("(({q}) OR -id:*) AND ")
        };
        let priced = self.price.query(&format!("{}:*", self.price.figure));
        (format!("{within}{priced}"), format!("{within}NOT {priced}"))
    }

    /// The engine's `order_by` of the cards with the price.
    pub(crate) fn order_by(&self) -> String {
        format!(
            "{}variants.prices.{}{}",
            if self.descending { "-" } else { "" },
            self.price.figure,
            self.then
                .as_deref()
                .map(|then| format!(",{then}"))
                .unwrap_or_default()
        )
    }
}

/// With `prices` (the catalog renders them), the price figure `order_by` (v2's) sorts by
/// first, and the keys after it; why not, for a price key that is not first or a figure
/// cardex does not render.
pub(crate) fn price_sort(
    order_by: &str,
    prices: Option<&Served>,
    images: SetImages,
) -> Result<Option<PriceSort>, String> {
    let Some(served) = prices else {
        return Ok(None);
    };
    let mut keys = order_by.split(',').map(str::trim);
    let first = keys.next().unwrap_or_default();
    let (descending, name) = match first.strip_prefix('-') {
        Some(name) => (true, name.trim()),
        None => (false, first),
    };
    let then: Vec<&str> = keys.collect();
    if let Some(later) = then
        .iter()
        .find(|key| PriceField::of(key.trim_start_matches('-').trim(), served).is_some())
    {
        return Err(format!(
            "invalid orderBy value `{order_by}`: a price (`{later}`) sorts only as the first key"
        ));
    }
    let Some(price) = PriceField::of(name, served).transpose()? else {
        return Ok(None);
    };
    // `q` binds none of the keys after a price (see [`PriceSort::queries`]): one inside
    // the variants' prices would count every price of every variant, in any currency.
    if let Some(inside) = then
        .iter()
        .find(|key| snake_case(key.trim_start_matches('-').trim()).starts_with("variants.prices."))
    {
        return Err(format!(
            "invalid orderBy value `{order_by}`: after a price key, `{inside}` cannot be sorted by (no condition of q binds it to a price record)"
        ));
    }
    let then = (!then.is_empty()).then(|| self::order_by(&then.join(","), Of::Cards, images));
    Ok(Some(PriceSort {
        price,
        descending,
        then,
    }))
}

/// v2's spelling of the engine's `logo` or `symbol` of a set (`expansion.logo` of a card)
/// where v2's sets serve them under `images`; `None` for any other path.
pub(crate) fn v2_image_field(path: &str, of: Of, images: SetImages) -> Option<String> {
    if images != SetImages::LogoAndSymbol {
        return None;
    }
    let name = match of {
        Of::Cards => path.strip_prefix("expansion.")?,
        Of::Sets => path,
    };
    let image = SET_IMAGES.into_iter().find(|known| *known == name)?;
    Some(match of {
        Of::Cards => format!("set.images.{image}"),
        Of::Sets => format!("images.{image}"),
    })
}

/// `orderBy` with v2 field paths replaced by the engine's (`-set.releaseDate,number` →
/// `-expansion.release_date,number`).
pub(crate) fn order_by(order_by: &str, of: Of, images: SetImages) -> String {
    order_by
        .split(',')
        .map(|key| {
            let key = key.trim();
            match key.strip_prefix('-') {
                Some(name) => format!("-{}", field(name.trim(), of, images)),
                None => field(key, of, images).into_owned(),
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
        let cards = |text| q(text, Of::Cards, None, SetImages::Own).unwrap();
        assert_eq!(
            cards(
                r#"set.id:base1 AND (set.series:"Scarlet & Violet" OR -set.ptcgoCode:BS) name:pika*"#
            ),
            r#"expansion_id:base1 AND (expansion.series:"Scarlet & Violet" OR -expansion.code:BS) name:pika*"#
        );
        assert_eq!(cards("set.releaseDate:2020"), "expansion.release_date:2020");
        // A field name's case tells no two fields apart, `set.` included.
        assert_eq!(
            cards("Set.id:base1 SET.PTCGOCODE:BS Set.Name:base"),
            "expansion_id:base1 expansion.code:BS expansion.name:base"
        );
        assert_eq!(field("PtcgoCode", Of::Sets, SetImages::Own), "code");
        assert_eq!(field("settings.x", Of::Cards, SetImages::Own), "settings.x");
        // A set's `images.logo` is its `logo` where v2's sets are made so; else its own.
        let made = SetImages::LogoAndSymbol;
        assert_eq!(field("Set.Images.LOGO", Of::Cards, made), "expansion.logo");
        assert_eq!(
            field("set.images.small", Of::Cards, made),
            "expansion.images.small"
        );
        assert_eq!(field("images.symbol", Of::Sets, made), "symbol");
        assert_eq!(
            field("images.symbol", Of::Sets, SetImages::Own),
            "images.symbol"
        );
        assert_eq!(field("images.logo", Of::Cards, made), "images.logo");
        assert_eq!(
            order_by("-images.logo,set.images.symbol", Of::Cards, made),
            "-images.logo,expansion.symbol"
        );
        assert_eq!(
            v2_image_field("expansion.symbol", Of::Cards, made).as_deref(),
            Some("set.images.symbol")
        );
        assert_eq!(
            v2_image_field("logo", Of::Sets, made).as_deref(),
            Some("images.logo")
        );
        assert_eq!(v2_image_field("logo", Of::Sets, SetImages::Own), None);
        assert_eq!(v2_image_field("logo", Of::Cards, made), None);
        assert_eq!(
            cards("nationalPokedexNumbers:25"),
            "nationalPokedexNumbers:25"
        );
        // Left for the engine to place its error.
        assert_eq!(cards("set.id:(a"), "set.id:(a");
        assert_eq!(
            order_by(
                "-set.releaseDate, number,set.printedTotal",
                Of::Cards,
                SetImages::Own
            ),
            "-expansion.release_date,number,expansion.printed_total"
        );
        // The path of a nested query the engine names is in its own spelling.
        assert_eq!(
            v2_spelling(
                "a bare value in a nested query on `variants.pop_reports.grades` searches the `name` of its elements",
                Of::Cards
            ),
            "a bare value in a nested query on `variants.popReports.grades` searches the `name` of its elements"
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
        // So is a list of an object's fields, whatever backticks the request wrote.
        assert_eq!(
            v2_spelling(
                "invalid `order_by` value `attacks,x`y`: `attacks` holds objects, not values; sort by one of its fields: `attacks.converted_energy_cost`",
                Of::Cards
            ),
            "invalid `orderBy` value `attacks,x`y`: `attacks` holds objects, not values; sort by one of its fields: `attacks.convertedEnergyCost`"
        );
        assert_eq!(
            v2_spelling(
                "invalid `order_by` value `attacks`: `attacks` holds objects, not values; sort by one of its fields: `attacks.converted_energy_cost`, `expansion.release_date`",
                Of::Cards
            ),
            "invalid `orderBy` value `attacks`: `attacks` holds objects, not values; sort by one of its fields: `attacks.convertedEnergyCost`, `set.releaseDate`"
        );
        // A set's fields are its own.
        assert_eq!(
            q("ptcgoCode:BS series:base", Of::Sets, None, SetImages::Own).unwrap(),
            "code:BS series:base"
        );
        assert_eq!(
            order_by("-releaseDate", Of::Sets, SetImages::Own),
            "-releaseDate"
        );
    }

    #[test]
    fn price_figures_read_the_records_they_are_made_of() {
        let served = Served {
            variants: ["holofoil", "normal", "odd\"name", "alt art"]
                .map(String::from)
                .into(),
            cardmarket: true,
        };
        let priced = Some(&served);
        let cards = |text| q(text, Of::Cards, priced, SetImages::Own);
        let nm = "!type:raw AND !currency:USD AND (!condition:NM OR -condition:*)";
        assert_eq!(
            cards("-tcgplayer.prices.holofoil.market:[1 TO *] OR !tcgplayer.prices.normal.low:2")
                .unwrap(),
            format!(
                "-variants:(^name:\"holofoil\" AND prices:({nm} AND market:[1 TO *])) OR \
                 variants:((^name:normal OR -name:*) AND prices:({nm} AND !low:2))"
            )
        );
        assert_eq!(
            cards("cardmarket.prices.lowPrice:(>1 AND <2)").unwrap(),
            "variants.prices:(!type:raw AND !currency:EUR AND (!condition:NM OR -condition:*) AND low:(>1 AND <2))"
        );
        // Field names in capitals; the variant is the served key, as written.
        assert_eq!(
            cards("TCGPlayer.Prices.holofoil.MARKET>1 CardMarket.prices.LOWPRICE>1").unwrap(),
            format!(
                "variants:(^name:\"holofoil\" AND prices:({nm} AND market>1)) \
                 variants.prices:(!type:raw AND !currency:EUR AND (!condition:NM OR -condition:*) AND low>1)"
            )
        );
        assert!(cards("tcgplayer.prices.Holofoil.market>1").is_err());
        // Not on a catalog that does not render them, nor on sets.
        assert_eq!(
            q(
                "tcgplayer.prices.holofoil.market>1",
                Of::Cards,
                None,
                SetImages::Own
            )
            .unwrap(),
            "tcgplayer.prices.holofoil.market>1"
        );
        assert_eq!(
            q(
                "tcgplayer.prices.holofoil.market>1",
                Of::Sets,
                priced,
                SetImages::Own
            )
            .unwrap(),
            "tcgplayer.prices.holofoil.market>1"
        );
        // A figure cardex does not render is named, with those it does; a variant no
        // card is served with, with those they are (a name a key cannot hold left out).
        let why = cards("cardmarket.prices.avg7:1").unwrap_err();
        assert!(
            why.contains("`averageSellPrice`, `trendPrice`, `lowPrice`"),
            "{why}"
        );
        let why = cards("tcgplayer.prices.reverse_holofoil.market:*").unwrap_err();
        assert!(
            why.ends_with("the variants priced are `alt art`, `holofoil`, `normal`"),
            "{why}"
        );
        let why =
            price_sort("tcgplayer.prices.odd\"name.market", priced, SetImages::Own).unwrap_err();
        assert!(
            why.contains("names no variant whose name is empty or holds"),
            "{why}"
        );
        let why = price_sort(
            "tcgplayer.prices.holofoil.market,-variants.prices.low",
            priced,
            SetImages::Own,
        )
        .unwrap_err();
        assert!(
            why.contains("after a price key, `-variants.prices.low` cannot"),
            "{why}"
        );
        assert_eq!(
            served.keys()[..5],
            [
                "tcgplayer.prices.alt art.low",
                "tcgplayer.prices.alt art.mid",
                "tcgplayer.prices.alt art.high",
                "tcgplayer.prices.alt art.market",
                "tcgplayer.prices.holofoil.low",
            ]
        );
        assert!(!served.keys().iter().any(|k| k.contains('"')));
        let why = q(
            "cardmarket.prices.trendPrice>1",
            Of::Cards,
            Some(&Served::default()),
            SetImages::Own,
        )
        .unwrap_err();
        assert!(
            why.contains("no card here is served with `cardmarket`"),
            "{why}"
        );
        // A sort: the price first, then the keys after it in the engine's spelling; a
        // name with a space is a phrase.
        let sort = price_sort(
            "-cardmarket.prices.trendPrice, set.releaseDate",
            priced,
            SetImages::Own,
        )
        .unwrap()
        .unwrap();
        assert_eq!((sort.price.figure, sort.descending), ("market", true));
        assert_eq!(sort.then.as_deref(), Some("expansion.release_date"));
        let sort = price_sort("tcgplayer.prices.alt art.mid", priced, SetImages::Own)
            .unwrap()
            .unwrap();
        assert!(sort
            .queries("")
            .0
            .starts_with("variants:(^name:\"alt art\" AND"));
        assert_eq!(price_sort("number", priced, SetImages::Own), Ok(None));
        // Without a price key, keys inside the variants' prices are the engine's to judge.
        assert_eq!(
            price_sort("number,-variants.prices.market", priced, SetImages::Own),
            Ok(None)
        );
        assert_eq!(
            price_sort("-tcgplayer.prices.holofoil.market", None, SetImages::Own),
            Ok(None)
        );
        assert!(price_sort(
            "number,tcgplayer.prices.holofoil.market",
            priced,
            SetImages::Own
        )
        .is_err());
    }
}
