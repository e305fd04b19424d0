//! The Pokémon TCG API v2 surface, `/v2/...`, over one catalog of the same engine
//! (`pokemon` unless `--v2-catalog` names another), English cards only: what a v2 client
//! (the official SDKs, or plain HTTP) calls, answered the way v2 answered.
//!
//! - `GET /v2/cards` and `/v2/sets`: `q` (v2's field spellings, see `query.rs`), `page`
//!   (from 1), `pageSize` (from 1, at most 250 served, default 250), `orderBy`
//!   (`-set.releaseDate,number`), `select` (top-level fields: those the records have and
//!   those of v2's card and set objects, which a record without them answers without);
//!   `{data, page, pageSize, count, totalCount}`. Other parameters are ignored, as v2
//!   ignores them.
//! - `GET /v2/cards/{id}` and `/v2/sets/{id}`: `{data: {...}}` (`select` applies).
//! - `GET /v2/types`, `/v2/subtypes`, `/v2/supertypes`, `/v2/rarities`: `{data: [...]}`,
//!   the values the catalog's English cards hold.
//! - Errors: `{"error": {"message", "code": <status>}}`, for every refusal on `/v2`,
//!   whoever makes it (the router, the metering layer or these handlers), except under
//!   `/v2/v1/` (the `/v1` surface of a catalog named `v2`).
//!
//! The records are v2's (`view.rs`): rendered once per loaded engine, so a page costs what
//! a `/v1` page does.

mod query;
mod view;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::accounts::Endpoint;
use super::errors::{error_response, json_response};
use super::query_string;
use crate::{Catalog, SearchRequest};

pub(crate) use query::{field as engine_field, v2_field, v2_image_field, Of};
pub(crate) use view::V2View;

/// The catalog the v2 surface serves unless configured otherwise.
pub const DEFAULT_CATALOG: &str = "pokemon";

/// The largest `pageSize`, and the default.
pub const MAX_PAGE_SIZE: u32 = 250;

/// The requests per minute a client address may make on `/v2` without a key, unless
/// configured otherwise.
pub const DEFAULT_ANONYMOUS_PER_MINUTE: u32 = 30;

/// A `/v2` route: what it answers, what it is charged as, its name in logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Route {
    /// `/v2/cards`
    Cards,
    /// `/v2/cards/{id}`
    Card,
    /// `/v2/sets`
    Sets,
    /// `/v2/sets/{id}`
    Set,
    /// `/v2/types`, `/v2/subtypes`, `/v2/supertypes`, `/v2/rarities`: the list's number in
    /// that order.
    List(usize),
}

/// Every `/v2` route, as axum path patterns.
pub const V2_ROUTES: [(&str, V2Route); 8] = [
    ("/v2/cards", V2Route::Cards),
    ("/v2/cards/{id}", V2Route::Card),
    ("/v2/sets", V2Route::Sets),
    ("/v2/sets/{id}", V2Route::Set),
    ("/v2/types", V2Route::List(0)),
    ("/v2/subtypes", V2Route::List(1)),
    ("/v2/supertypes", V2Route::List(2)),
    ("/v2/rarities", V2Route::List(3)),
];

impl V2Route {
    /// The `/v1` endpoint whose credit cost it has: a search of cards or sets costs what
    /// one of cards or expansions does, one card or set what one card or expansion does,
    /// and a value list what a list of expansions does.
    pub fn charged_as(self) -> Endpoint {
        match self {
            V2Route::Cards => Endpoint::Cards,
            V2Route::Card => Endpoint::Card,
            V2Route::Sets | V2Route::List(_) => Endpoint::Expansions,
            V2Route::Set => Endpoint::Expansion,
        }
    }

    /// The route's name in logs.
    pub fn name(self) -> &'static str {
        match self {
            V2Route::Cards => "v2_cards",
            V2Route::Card => "v2_card",
            V2Route::Sets => "v2_sets",
            V2Route::Set => "v2_set",
            V2Route::List(0) => "v2_types",
            V2Route::List(1) => "v2_subtypes",
            V2Route::List(2) => "v2_supertypes",
            V2Route::List(_) => "v2_rarities",
        }
    }
}

/// The v2 error body for `status` with `message`.
pub(super) fn error_body(status: StatusCode, message: &str) -> Vec<u8> {
    json!({"error": {"message": message, "code": status.as_u16()}})
        .to_string()
        .into_bytes()
}

/// A v2 error answer (the router rewrites any error on `/v2` to this shape; handlers
/// use the service's error answer and let it).
fn refuse(status: StatusCode, message: String) -> Response {
    error_response(status, "invalid_parameter", message, json!({}))
}

/// The answer of `route` from `catalog` (`None`: the engine has none for `/v2`, named
/// `name`) and its v2 records `view`, with `id` from the path and the query string `query`.
pub(super) fn answer(
    catalog: Option<(&Catalog, &V2View)>,
    name: &str,
    route: V2Route,
    id: Option<&str>,
    query: Option<&str>,
) -> Response {
    let Some((catalog, view)) = catalog else {
        return error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("this server has no catalog `{name}` to serve /v2 from (see --v2-catalog)"),
            json!({}),
        );
    };
    let params = match Params::read(query) {
        Ok(params) => params,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    match route {
        V2Route::Cards | V2Route::Sets => search(catalog, view, route, &params),
        V2Route::Card | V2Route::Set => one(catalog, view, route, id.unwrap_or_default(), &params),
        V2Route::List(i) => json_response(StatusCode::OK, view.list(i).as_bytes().to_vec()),
    }
}

/// v2's list parameters, as given (the last of a repeated one).
#[derive(Debug, Default)]
struct Params {
    q: String,
    page: Option<String>,
    page_size: Option<String>,
    order_by: Option<String>,
    select: Option<String>,
}

impl Params {
    /// The parameters of `query`; why not, when one of them is not UTF-8 once decoded
    /// (the others are ignored, as v2 ignored them, whatever their bytes).
    fn read(query: Option<&str>) -> Result<Params, String> {
        let mut params = Params::default();
        for pair in query_string::each(query) {
            let (name, value) = match pair {
                Ok(pair) => pair,
                Err(bad) => match &*bad.lossy_name() {
                    "q" | "page" | "pageSize" | "orderBy" | "select" => {
                        return Err(format!("`{}={}`: {}", bad.name, bad.value, bad.reason()))
                    }
                    _ => continue,
                },
            };
            match &*name {
                "q" => params.q = value,
                "page" => params.page = Some(value),
                "pageSize" => params.page_size = Some(value),
                "orderBy" => params.order_by = Some(value),
                "select" => params.select = Some(value),
                _ => {}
            }
        }
        Ok(params)
    }

    /// `page` and `pageSize`, or what they may be. A `pageSize` over v2's maximum is
    /// served as the maximum, as v2 serves it (clients written against v2 ask for
    /// `pageSize=500`).
    fn paging(&self) -> Result<(u32, u32), String> {
        let page = match self.page.as_deref() {
            None => 1,
            Some(text) => match text.trim().parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(format!(
                        "page must be a whole number between 1 and {}; got `{text}`",
                        u32::MAX
                    ))
                }
            },
        };
        let page_size = match self.page_size.as_deref() {
            None => MAX_PAGE_SIZE,
            Some(text) => {
                let digits = text.trim();
                let digits = digits.strip_prefix('+').unwrap_or(digits);
                let whole = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
                if !whole || digits.bytes().all(|b| b == b'0') {
                    return Err(format!(
                        "pageSize must be a whole number from 1 (at most {MAX_PAGE_SIZE} are \
                         served); got `{text}`"
                    ));
                }
                digits
                    .parse::<u32>()
                    .map_or(MAX_PAGE_SIZE, |n| n.min(MAX_PAGE_SIZE))
            }
        };
        Ok((page, page_size))
    }
}

/// `/v2/cards` or `/v2/sets`.
fn search(catalog: &Catalog, view: &V2View, route: V2Route, params: &Params) -> Response {
    let (page, page_size) = match params.paging() {
        Ok(paging) => paging,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let cards = route == V2Route::Cards;
    let of = if cards {
        query::Of::Cards
    } else {
        query::Of::Sets
    };
    let prices = view.prices().filter(|_| cards);
    let q = match query::q(&params.q, of, prices, view.set_images) {
        Ok(q) => q,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    // A `q` that does not parse goes to the engine as written, unsorted, for it to say
    // where and why.
    let parses = crate::query::parse(&params.q).is_ok();
    let price_sort = match params.order_by.as_deref().filter(|_| parses) {
        Some(order_by) => match query::price_sort(order_by, prices, view.set_images) {
            Ok(sort) => sort,
            Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
        },
        None => None,
    };
    let order_by = params
        .order_by
        .as_deref()
        .map(|o| query::order_by(o, of, view.set_images));
    let req = SearchRequest {
        q: &q,
        lang: view.lang,
        page,
        page_size,
        order_by: order_by.as_deref(),
        select: None,
        include: None,
    };
    let parts = price_sort.as_ref().map(|sort| sort.queries(&q));
    // A price term reads as a nested query on the prices, and a price sort adds one to
    // `q`: what the engine reads may be past its limits where `q` as written is not.
    if parses {
        let read = match &parts {
            Some((with_price, without)) => vec![with_price.as_str(), without.as_str()],
            None => vec![&*q],
        };
        if read.iter().any(|text| crate::query::parse(text).is_err()) {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!(
                    "q as the engine reads it is past the {} bytes, {} terms or {} levels of \
                     parentheses it takes: each price figure in q or orderBy reads as a \
                     nested query on the variants' prices (about 130 bytes and 8 terms); \
                     shorten q",
                    crate::query::MAX_QUERY_BYTES,
                    crate::query::MAX_TERMS,
                    crate::query::MAX_DEPTH
                ),
            );
        }
    }
    let hits = match (&price_sort, &parts) {
        (Some(sort), Some((with_price, without))) => {
            price_sorted(catalog, &req, sort, (with_price, without))
        }
        _ if cards => catalog.hits(&req),
        _ => catalog.expansion_hits(&req),
    };
    let hits = match hits {
        Ok(hits) => hits,
        Err(e) => {
            // The engine's message, in the names the request used.
            let status =
                StatusCode::from_u16(crate::error_status(&e)).unwrap_or(StatusCode::BAD_REQUEST);
            let mut message = e.message();
            // The keys as the request wrote them, not as a price sort asked the engine.
            if let (Some(sort), Some(written)) = (&price_sort, params.order_by.as_deref()) {
                for asked in [Some(sort.order_by()), sort.then.clone()]
                    .into_iter()
                    .flatten()
                {
                    message =
                        message.replace(&format!("value `{asked}`"), &format!("value `{written}`"));
                }
            }
            let mut message = query::v2_spelling(&message, of);
            let names_a_rendering = ["tcgplayer", "cardmarket"].iter().any(|field| {
                message.starts_with(&format!("unknown field `{field}"))
                    || message.starts_with(&format!("unknown array of objects `{field}"))
                    || message.contains(&format!("no record has a value at `{field}"))
            });
            if cards && names_a_rendering {
                message.push_str(match (view.prices(), view.own_prices) {
                    (Some(_), _) => {
                        "; of `tcgplayer` and `cardmarket`, v2's renderings of a card's \
                         prices, the figures are searched and sorted by \
                         (`tcgplayer.prices.holofoil.market`, `cardmarket.prices.trendPrice`), \
                         as fields of the card, outside nested queries"
                    }
                    (None, true) => {
                        "; some of this catalog's cards carry a `tcgplayer` or `cardmarket` \
                         of their own: those are searched as they are, and prices made from \
                         the variants are not"
                    }
                    (None, false) => {
                        "; `tcgplayer` and `cardmarket` are v2's renderings of a card's \
                         prices, and this catalog has none"
                    }
                });
            }
            return refuse(status, message);
        }
    };
    let select = match Select::new(params.select.as_deref(), view, cards) {
        Ok(select) => select,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let mut body = String::with_capacity(hits.record_ids.len() * 2048 + 96);
    body.push_str("{\"data\":[");
    let mut count = 0;
    for &id in &hits.record_ids {
        let write = |record: &str| {
            if count > 0 {
                body.push(',');
            }
            select.write(record, &mut body);
        };
        let written = if cards {
            view.with_card(id, write)
        } else {
            view.with_set(id, write)
        };
        count += usize::from(written.is_some());
    }
    body.push_str(&format!(
        "],\"page\":{page},\"pageSize\":{page_size},\"count\":{count},\"totalCount\":{}}}",
        hits.total_count
    ));
    json_response(StatusCode::OK, body.into_bytes())
}

/// The page `req` asks for, sorted first by a price figure (`sort`): the matches with
/// that price (`with_price`, the query of [`query::PriceSort::queries`]), ordered by it
/// and then by the keys after it, followed by those without it (`without`), ordered by
/// those keys; as v2 orders a card without the field, after the others.
fn price_sorted(
    catalog: &Catalog,
    req: &SearchRequest<'_>,
    sort: &query::PriceSort,
    (with_price, without): (&str, &str),
) -> crate::Result<crate::Hits> {
    let start = u64::from(req.page - 1) * u64::from(req.page_size);
    let end = start + u64::from(req.page_size);
    // The first `end` of each part, in order: the page is a slice of them.
    let first = |q: &str, order_by: Option<&str>, wanted: u64| {
        catalog.hits(&SearchRequest {
            q,
            page: 1,
            page_size: u32::try_from(wanted.max(1)).unwrap_or(u32::MAX),
            order_by,
            ..*req
        })
    };
    let priced = first(with_price, Some(&sort.order_by()), end)?;
    let wanted = end.saturating_sub(priced.total_count);
    let unpriced = first(without, sort.then.as_deref(), wanted)?;
    let skip = usize::try_from(start).unwrap_or(usize::MAX);
    let mut record_ids: Vec<u32> = priced
        .record_ids
        .iter()
        .chain(
            unpriced
                .record_ids
                .iter()
                .take(usize::try_from(wanted).unwrap_or(usize::MAX)),
        )
        .skip(skip)
        .copied()
        .collect();
    record_ids.truncate(req.page_size as usize);
    Ok(crate::Hits {
        total_count: priced.total_count + unpriced.total_count,
        record_ids,
    })
}

/// `/v2/cards/{id}` or `/v2/sets/{id}`.
fn one(catalog: &Catalog, view: &V2View, route: V2Route, id: &str, params: &Params) -> Response {
    let cards = route == V2Route::Card;
    let (collection, what) = if cards {
        (catalog.cards(), "card")
    } else {
        (catalog.expansions(), "set")
    };
    let not_found = || {
        error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no {what} with id `{id}`"),
            json!({}),
        )
    };
    let Some(record) = collection.find(id).filter(|&r| view.has(cards, r)) else {
        return not_found();
    };
    let select = match Select::new(params.select.as_deref(), view, cards) {
        Ok(select) => select,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let write = |record: &str| {
        let mut body = String::with_capacity(record.len() + 16);
        body.push_str("{\"data\":");
        select.write(record, &mut body);
        body.push('}');
        body
    };
    let body = if cards {
        view.with_card(record, write)
    } else {
        view.with_set(record, write)
    };
    let Some(body) = body else {
        return not_found();
    };
    json_response(StatusCode::OK, body.into_bytes())
}

/// `select`: the top-level fields kept, or all.
struct Select(Option<Vec<String>>);

/// The top-level fields of v2's card object (docs.pokemontcg.io, "The card object"): a
/// `select` may name them whether or not this catalog's cards have them (`tcgplayer` on a
/// catalog without prices), as v2's clients do.
const V2_CARD_FIELDS: &[&str] = &[
    "id",
    "name",
    "supertype",
    "subtypes",
    "level",
    "hp",
    "types",
    "evolvesFrom",
    "evolvesTo",
    "rules",
    "ancientTrait",
    "abilities",
    "attacks",
    "weaknesses",
    "resistances",
    "retreatCost",
    "convertedRetreatCost",
    "set",
    "number",
    "artist",
    "rarity",
    "flavorText",
    "nationalPokedexNumbers",
    "legalities",
    "regulationMark",
    "images",
    "tcgplayer",
    "cardmarket",
];

/// The top-level fields of v2's set object, as [`V2_CARD_FIELDS`] for sets.
const V2_SET_FIELDS: &[&str] = &[
    "id",
    "name",
    "series",
    "printedTotal",
    "total",
    "legalities",
    "ptcgoCode",
    "releaseDate",
    "updatedAt",
    "images",
];

/// The fields a `select` on cards (or on sets) may name: those the records have, then
/// those of v2's object that they lack.
pub(crate) fn selectable(view: &V2View, cards: bool) -> Vec<&str> {
    let (known, documented) = if cards {
        (view.card_fields(), V2_CARD_FIELDS)
    } else {
        (view.set_fields(), V2_SET_FIELDS)
    };
    let mut all: Vec<&str> = known.iter().map(String::as_str).collect();
    for field in documented {
        if !all.contains(field) {
            all.push(field);
        }
    }
    all
}

impl Select {
    fn new(select: Option<&str>, view: &V2View, cards: bool) -> Result<Select, String> {
        let Some(text) = select.filter(|s| !s.trim().is_empty()) else {
            return Ok(Select(None));
        };
        let selectable = selectable(view, cards);
        let mut fields = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !selectable.contains(&name) {
                let top = name.split('.').next().unwrap_or_default();
                if name.contains('.') && selectable.contains(&top) {
                    return Err(format!(
                        "select: `{name}` is inside `{top}`; select takes top-level fields \
                         (`select={top}`), as v2's does"
                    ));
                }
                let hint = crate::naming::suggest(name, selectable.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                let what = if cards { "card" } else { "set" };
                return Err(format!("select: no {what} has a field `{name}`{hint}"));
            }
            if !fields.iter().any(|f| f == name) {
                fields.push(name.to_string());
            }
        }
        // Commas alone name no field: as a blank `select`, every field (not `{}`).
        Ok(Select((!fields.is_empty()).then_some(fields)))
    }

    /// Writes `record` (a v2 object) with the selected fields only.
    /// The record is compact JSON, as the view renders it: its members are copied as
    /// they are, found by a scan that stops once every field selected is found.
    fn write(&self, record: &str, out: &mut String) {
        let Some(fields) = &self.0 else {
            out.push_str(record);
            return;
        };
        out.push('{');
        let mut found = 0;
        crate::json::walk::each_member(record, |key, member| {
            if fields.iter().any(|f| *f == key) {
                if found > 0 {
                    out.push(',');
                }
                found += 1;
                out.push_str(&record[member]);
            }
            found < fields.len()
        });
        out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `select` keeps the record's own members, in its order, each once, whatever the
    /// order or repeats of the list; values holding braces, commas and quotes are copied
    /// whole.
    #[test]
    fn select_copies_the_members_named() {
        let record = r#"{"id":"a-1","name":"N, \"the\" {odd}","set":{"id":"a","images":{"logo":"l"}},"hp":"60","rules":["x,y",{"z":1}]}"#;
        let select = Select(Some(vec!["rules".into(), "id".into(), "set".into()]));
        let mut out = String::new();
        select.write(record, &mut out);
        assert_eq!(
            out,
            r#"{"id":"a-1","set":{"id":"a","images":{"logo":"l"}},"rules":["x,y",{"z":1}]}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["rules"][1]["z"], 1);
        let mut out = String::new();
        Select(Some(vec!["name".into(), "level".into()])).write(record, &mut out);
        assert_eq!(out, r#"{"name":"N, \"the\" {odd}"}"#);
        let mut out = String::new();
        Select(None).write(record, &mut out);
        assert_eq!(out, record);
    }
}
