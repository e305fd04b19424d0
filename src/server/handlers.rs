//! The handlers: one per kind of endpoint, each mapping the path and query string to an
//! engine request and the engine's answer (pre-rendered JSON, or a typed error) to a
//! response. Credentials, limits and charging happen before and after them, in
//! [`metering`](super::metering).

use axum::extract::rejection::PathRejection;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::accounts::Endpoint;
use super::errors::{engine_error, error_response, json_response};
use super::query_string;
use super::service::{Admitted, Service};
use crate::json::transcode::Transcoder;
use crate::naming::camel_case;
use crate::{Catalog, Engine, Error, ItemRequest, ParameterError, SearchRequest};

/// The path's parameters (`catalog`, `lang`, `id`), as axum extracts them.
pub(super) type PathParams = Result<Path<Vec<(String, String)>>, PathRejection>;

/// The list endpoints (`cards`, `expansions`, an expansion's `cards`): a page of records.
pub(super) fn list(
    engine: &Engine,
    endpoint: Endpoint,
    path: PathParams,
    query: Option<&str>,
) -> Response {
    catalog_answer(engine, endpoint, path, query, |catalog, params, pairs| {
        let mut req = SearchRequest::from_params(pairs.iter().copied())?;
        if let Some(lang) = params.get("lang") {
            req = req.lang(lang);
        }
        let page = match endpoint {
            Endpoint::Expansions => catalog.search_expansions(&req)?,
            Endpoint::ExpansionCards => {
                catalog.expansion_cards(params.get("id").unwrap_or_default(), &req)?
            }
            _ => catalog.search(&req)?,
        };
        // The page's own buffer, the envelope's tail appended: no copy of the records.
        Ok(page.into_json().into_bytes())
    })
}

/// The single-record endpoints (a card, an expansion): `{"data": {...}}`.
pub(super) fn item(
    engine: &Engine,
    endpoint: Endpoint,
    path: PathParams,
    query: Option<&str>,
) -> Response {
    catalog_answer(engine, endpoint, path, query, |catalog, params, pairs| {
        let req = ItemRequest::from_params(pairs.iter().copied())?;
        let id = params.get("id").unwrap_or_default();
        let item = match endpoint {
            Endpoint::Expansion => catalog.expansion(id, &req)?,
            _ => catalog.card(id, &req)?,
        };
        let mut out = Vec::with_capacity(item.json().len() + 16);
        item.write_to(&mut out).expect("writing to a Vec");
        Ok(out)
    })
}

/// A catalog endpoint's answer: `answer` gets the catalog the path names, the path's
/// parameters and the query string's pairs, and gives the body of a `200` or the engine's
/// error; a path that is not UTF-8 once decoded is a `400`.
fn catalog_answer(
    engine: &Engine,
    endpoint: Endpoint,
    path: PathParams,
    query: Option<&str>,
    answer: impl FnOnce(&Catalog, &Params, &[(&str, &str)]) -> Result<Vec<u8>, Error>,
) -> Response {
    let Ok(Path(params)) = path else {
        return invalid_path();
    };
    let params = Params(params);
    let answered = engine
        .try_catalog(params.get("catalog").unwrap_or_default())
        .and_then(|catalog| {
            let pairs = query_string::pairs(query).map_err(not_utf8)?;
            let mut pairs: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let camel = take_casing(&mut pairs)?;
            expansions_take_no_include(endpoint, &pairs)?;
            let body = answer(catalog, &params, &pairs).map_err(|e| served_allowed(e, endpoint))?;
            Ok(if camel { camel_keys(body) } else { body })
        });
    match answered {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => engine_error(&e),
    }
}

/// The parameters of a list endpoint, and of a single record's, as served: the engine's
/// and `casing`. Expansions have no optional parts, so no `include`.
const SERVED_LIST_PARAMETERS: &[&str] = &[
    "q",
    "page",
    "page_size",
    "order_by",
    "select",
    "include",
    "casing",
];
const SERVED_ITEM_PARAMETERS: &[&str] = &["select", "include", "casing"];
const SERVED_EXPANSION_LIST_PARAMETERS: &[&str] =
    &["q", "page", "page_size", "order_by", "select", "casing"];
const SERVED_EXPANSION_ITEM_PARAMETERS: &[&str] = &["select", "casing"];

/// `include` on an expansion endpoint, which serves no optional parts: a parameter the
/// endpoint does not take, refused as an unknown one is, whatever its value and before
/// anything else is read (the engine's search takes `include` and refuses it later).
fn expansions_take_no_include(endpoint: Endpoint, pairs: &[(&str, &str)]) -> Result<(), Error> {
    let allowed = match endpoint {
        Endpoint::Expansions => SERVED_EXPANSION_LIST_PARAMETERS,
        Endpoint::Expansion => SERVED_EXPANSION_ITEM_PARAMETERS,
        _ => return Ok(()),
    };
    match pairs.iter().find(|(name, _)| *name == "include") {
        Some(&(name, value)) => {
            Err(
                ParameterError::new(name, value, crate::ParameterErrorKind::Unknown { allowed })
                    .into(),
            )
        }
        None => Ok(()),
    }
}

/// An unknown parameter's error, listing the parameters `endpoint` takes as served (the
/// engine lists its own: those of a request, which reads the same for cards and
/// expansions, or those of an expansion endpoint).
fn served_allowed(e: Error, endpoint: Endpoint) -> Error {
    let Error::Parameter(p) = &e else { return e };
    let crate::ParameterErrorKind::Unknown { allowed } = p.kind() else {
        return e;
    };
    let list = [crate::LIST_PARAMETERS, crate::EXPANSION_LIST_PARAMETERS].contains(allowed);
    let item = [crate::ITEM_PARAMETERS, crate::EXPANSION_ITEM_PARAMETERS].contains(allowed);
    let expansions = matches!(endpoint, Endpoint::Expansions | Endpoint::Expansion);
    let served = match (list, item, expansions) {
        (true, _, false) => SERVED_LIST_PARAMETERS,
        (true, _, true) => SERVED_EXPANSION_LIST_PARAMETERS,
        (_, true, false) => SERVED_ITEM_PARAMETERS,
        (_, true, true) => SERVED_EXPANSION_ITEM_PARAMETERS,
        (false, false, _) => return e,
    };
    ParameterError::new(
        p.name(),
        p.value(),
        crate::ParameterErrorKind::Unknown { allowed: served },
    )
    .into()
}

/// Takes `casing` (Scrydex's parameter) out of `pairs`: whether the answer's keys are to
/// be camelCase (`casing=camel`) rather than snake_case (`casing=snake`, the default).
fn take_casing(pairs: &mut Vec<(&str, &str)>) -> Result<bool, Error> {
    let mut camel = None;
    let mut kept = Vec::with_capacity(pairs.len());
    for &(name, value) in pairs.iter() {
        if name != "casing" {
            kept.push((name, value));
            continue;
        }
        if camel.is_some() {
            return Err(ParameterError::invalid("casing", value, "give it once").into());
        }
        camel = Some(match value {
            "camel" => true,
            "snake" => false,
            _ => {
                return Err(
                    ParameterError::invalid("casing", value, "it is `camel` or `snake`").into(),
                )
            }
        });
    }
    *pairs = kept;
    Ok(camel.unwrap_or(false))
}

/// `body` with every key, at every depth, in camelCase (envelope included). A record in
/// which renaming would give one object two keys of one name (`rarity_code` beside
/// `rarityCode`) keeps its keys as given; the envelope and the other records are renamed.
fn camel_keys(body: Vec<u8>) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(&body) else {
        return body;
    };
    let mut transcoder = Transcoder::renaming(camel_case);
    match transcoder.record(text) {
        Ok(()) => transcoder.out,
        Err(_) => camel_keys_by_record(text).unwrap_or(body),
    }
}

/// [`camel_keys`] for an envelope one of whose records cannot be renamed: the envelope's
/// members renamed one by one, `data`'s records each renamed or kept as given.
fn camel_keys_by_record(envelope: &str) -> Option<Vec<u8>> {
    let record = |text: &str, out: &mut Vec<u8>| {
        let mut transcoder = Transcoder::renaming(camel_case);
        match transcoder.record(text) {
            Ok(()) => out.extend_from_slice(&transcoder.out),
            Err(_) => out.extend_from_slice(text.as_bytes()),
        }
    };
    let mut out = Vec::with_capacity(envelope.len());
    out.push(b'{');
    let mut members = 0;
    let mut well_formed = true;
    crate::json::walk::each_member(envelope, |key, range| {
        let member = &envelope[range];
        let Some(value) = member.find(':').map(|colon| &member[colon + 1..]) else {
            well_formed = false;
            return false;
        };
        if members > 0 {
            out.push(b',');
        }
        members += 1;
        crate::json::write::write_str(&camel_case(&key), &mut out);
        out.push(b':');
        match (&*key, value.as_bytes().first()) {
            ("data", Some(b'[')) => {
                let Some(records) = crate::json::scan::split_array(value) else {
                    well_formed = false;
                    return false;
                };
                out.push(b'[');
                for (i, text) in records.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    record(text, &mut out);
                }
                out.push(b']');
            }
            ("data", _) => record(value, &mut out),
            // The envelope's own values: numbers.
            _ => out.extend_from_slice(value.as_bytes()),
        }
        true
    });
    out.push(b'}');
    (well_formed && members > 0).then_some(out)
}

/// `/account/v1/usage`: the admitted team's figures as of the last refresh. It takes no
/// parameters, and a server without accounts has no usage to report.
pub(super) async fn usage(
    service: &Service,
    team: Option<Admitted>,
    query: Option<&str>,
) -> Response {
    // Without accounts the metering layer admits no team: the endpoint is not there,
    // whatever its parameters.
    let Some(Admitted(team)) = team else {
        return error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server runs without accounts: there is no usage to report".into(),
            json!({}),
        );
    };
    let pairs = match query_string::pairs(query) {
        Ok(pairs) => pairs,
        Err(bad) => return engine_error(&not_utf8(bad)),
    };
    if let Some((name, value)) = pairs.into_iter().next() {
        return error_response(
            StatusCode::BAD_REQUEST,
            "unknown_parameter",
            format!("unknown parameter `{name}`; the usage endpoint takes none"),
            json!({"parameter": name, "value": value, "allowed": []}),
        );
    }
    match service.usage(team).await {
        Ok(Some(body)) => json_response(StatusCode::OK, body),
        Err(e) => {
            super::log::event("state_error", &e.to_string());
            error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "state_unavailable",
                "the usage figures cannot be read now; try again".into(),
                json!({}),
            )
        }
        Ok(None) => error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server runs without accounts: there is no usage to report".into(),
            json!({}),
        ),
    }
}

/// The answer to a path that is not UTF-8 once percent-decoded.
pub(super) fn invalid_path() -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        "invalid_path",
        "the path is not valid UTF-8 once percent-decoded".into(),
        json!({}),
    )
}

/// Whether `path` is UTF-8 once its `%XX` escapes are decoded (what axum's path
/// extraction requires). A `%` not followed by two hex digits stays as it is.
pub(super) fn path_is_utf8(path: &str) -> bool {
    // Without an escape the path is the `str` it already is: no decoding, no allocation
    // (the common case, checked on every metered request).
    if !path.contains('%') {
        return true;
    }
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .is_ok()
}

/// The path's parameters, by name.
struct Params(Vec<(String, String)>);

impl Params {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A query-string pair that is not UTF-8 once decoded, as the `400 invalid_parameter`
/// it is.
fn not_utf8(bad: query_string::NotUtf8) -> Error {
    ParameterError::invalid(&bad.name, &bad.value, bad.reason()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The served parameter lists are the engine's and `casing`.
    #[test]
    fn served_parameters_are_the_engines_and_casing() {
        for (served, engine) in [
            (SERVED_LIST_PARAMETERS, crate::LIST_PARAMETERS),
            (SERVED_ITEM_PARAMETERS, crate::ITEM_PARAMETERS),
        ] {
            assert_eq!(served.split_last(), Some((&"casing", engine)));
        }
        // Expansions': the same, less `include`.
        for (served, engine, cards) in [
            (
                SERVED_EXPANSION_LIST_PARAMETERS,
                crate::EXPANSION_LIST_PARAMETERS,
                crate::LIST_PARAMETERS,
            ),
            (
                SERVED_EXPANSION_ITEM_PARAMETERS,
                crate::EXPANSION_ITEM_PARAMETERS,
                crate::ITEM_PARAMETERS,
            ),
        ] {
            let without: Vec<&str> = cards.iter().copied().filter(|&p| p != "include").collect();
            assert_eq!(engine, &without[..]);
            assert_eq!(served.split_last(), Some((&"casing", engine)));
        }
    }

    #[test]
    fn camel_casing_renames_the_envelope_and_keeps_a_record_that_would_repeat_a_key() {
        let camel = |body: &str| String::from_utf8(camel_keys(body.as_bytes().to_vec())).unwrap();
        assert_eq!(
            camel(
                r#"{"data":[{"id":"a","rarity_code":"R"}],"page":1,"page_size":1,"count":1,"total_count":1}"#
            ),
            r#"{"data":[{"id":"a","rarityCode":"R"}],"page":1,"pageSize":1,"count":1,"totalCount":1}"#
        );
        assert_eq!(
            camel(
                r#"{"data":[{"id":"a","rarity_code":"R","rarityCode":"X"},{"id":"b","expansion_id":"e","prices":[{"low_usd":1}]}],"page":1,"page_size":2,"count":2,"total_count":2}"#
            ),
            r#"{"data":[{"id":"a","rarity_code":"R","rarityCode":"X"},{"id":"b","expansionId":"e","prices":[{"lowUsd":1}]}],"page":1,"pageSize":2,"count":2,"totalCount":2}"#
        );
        // Deeper down too: the record is the unit kept as given.
        assert_eq!(
            camel(r#"{"data":{"id":"a","set_name":"S","v":[{"a_b":1,"aB":2}]}}"#),
            r#"{"data":{"id":"a","set_name":"S","v":[{"a_b":1,"aB":2}]}}"#
        );
    }

    #[test]
    fn paths_are_checked_for_utf8_once_decoded() {
        assert!(path_is_utf8("/pokemon/v1/cards/sv1-1"));
        assert!(path_is_utf8("/pokemon/v1/cards/%E3%83%AA"));
        assert!(path_is_utf8("/a/100%"));
        assert!(path_is_utf8("/a/%zz"));
        assert!(!path_is_utf8("/pokemon/v1/cards/%FF"));
        assert!(!path_is_utf8("/pokemon/v1/cards/%E3%83"));
    }
}
