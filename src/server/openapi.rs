//! The OpenAPI 3.1 document served at `/openapi.json`, made for the server that serves it.
//!
//! `openapi.json` beside this file is the template: descriptions, schemas and one
//! operation per route, with `{catalog}` in the catalog routes. [`document`] makes from it
//! what this server accepts and answers now:
//!
//! - one path per loaded catalog and route (`/pokemon/v1/cards`, …; the language routes
//!   only for catalogs with languages), so that each operation's parameters can say
//!   exactly what that catalog accepts: its language codes, the fields `order_by` sorts by
//!   and `select` returns (as patterns), and examples taken from its records;
//! - `/v2` only when the server has its catalog, with the same for v2's spellings;
//! - with accounts, credentials on every metered operation and their `401` and `429`;
//!   open (`--open`), no credentials, no `401` or `429`, and no usage endpoint (it answers
//!   404 there).
//!
//! `q` is a string of format `cardex-query`: its grammar is not one JSON Schema can say,
//! so a malformed `q` is the documented 400.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::v2::V2View;
use crate::{Catalog, Collection, Engine};

/// The template the served document is made from.
const TEMPLATE: &str = include_str!("openapi.json");

/// The template, parsed once.
fn template() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(TEMPLATE).expect("the OpenAPI template is JSON"))
}

/// The OpenAPI document of a server over `engine`, with accounts (`accounts`) or open,
/// serving `/v2` over `v2` when it has that catalog.
pub(super) fn document(engine: &Engine, accounts: bool, v2: Option<(&Catalog, &V2View)>) -> Value {
    let mut doc = template().clone();
    let template_paths = std::mem::take(&mut doc["paths"])
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut paths = Map::new();
    for (path, item) in template_paths {
        if path.starts_with("/{catalog}/") {
            for catalog in engine.catalogs() {
                if path.contains("{lang}") && catalog.languages().is_empty() {
                    continue;
                }
                let mut item = item.clone();
                catalog_operation(&mut item["get"], &path, catalog);
                paths.insert(path.replace("{catalog}", catalog.name()), item);
            }
        } else if path.starts_with("/v2/") {
            if let Some((catalog, view)) = v2 {
                let mut item = item;
                v2_operation(&mut item["get"], &path, catalog, view);
                paths.insert(path, item);
            }
        } else if path == "/account/v1/usage" && !accounts {
            // Open, the server has no usage to report: the path answers 404.
        } else {
            paths.insert(path, item);
        }
    }
    if !accounts {
        open_mode(&mut doc, &mut paths);
    }
    doc["paths"] = Value::Object(paths);
    let parameters = &mut doc["components"]["parameters"];
    // The limits the request parsers apply.
    parameters["page"]["schema"]["maximum"] = json!(u32::MAX);
    parameters["page_size"]["schema"]["maximum"] = json!(crate::MAX_PAGE_SIZE);
    parameters["v2_page"]["schema"]["maximum"] = json!(u32::MAX);
    if let Some(parameters) = parameters.as_object_mut() {
        // Made per operation above.
        for name in ["catalog", "lang", "id", "q", "order_by", "select"] {
            parameters.remove(name);
        }
        for name in ["v2_q", "v2_orderBy", "v2_select"] {
            parameters.remove(name);
        }
    }
    unique_operation_ids(&mut doc);
    if let Some(tags) = doc["tags"].as_array_mut() {
        // A catalog named like a tag of the template (`v2`) shares that tag.
        let taken: BTreeSet<String> = tags
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        let catalogs = engine
            .catalogs()
            .filter(|c| !taken.contains(c.name()))
            .map(|c| {
                json!({
                    "name": c.name(),
                    "description": format!(
                        "The `{}` catalog: {} cards in {} expansions.",
                        c.name(),
                        c.cards().len(),
                        c.expansions().len()
                    ),
                })
            });
        tags.splice(0..0, catalogs);
    }
    doc
}

/// Makes every operationId unique: catalogs whose names differ only in punctuation
/// (`one-piece`, `one_piece`), or a catalog named `v2`, would give two operations one id;
/// the later ones get `_2`, `_3`, ….
fn unique_operation_ids(doc: &mut Value) {
    let mut seen = BTreeSet::new();
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(id) = item["get"]["operationId"].as_str().map(str::to_string) else {
            continue;
        };
        let mut unique = id.clone();
        let mut n = 1;
        while !seen.insert(unique.clone()) {
            n += 1;
            unique = format!("{id}_{n}");
        }
        item["get"]["operationId"] = json!(unique);
    }
}

/// Sets `parameter`'s example when there is one (no record to take it from: none).
fn with_example(mut parameter: Value, example: Option<impl Into<Value>>) -> Value {
    if let Some(example) = example {
        parameter["example"] = example.into();
    }
    parameter
}

/// Open mode: no credentials, so no `401`, no `429`, and a `503` only for a timeout.
fn open_mode(doc: &mut Value, paths: &mut Map<String, Value>) {
    doc["security"] = json!([]);
    doc["info"]["description"] = json!(
        "Trading-card search: cards, expansions, variants, prices and population reports, \
         per catalog. This server runs open (`--open`): requests need no credentials, have \
         no rate limit and cost nothing, and there is no usage endpoint. Responses are \
         gzip-compressed when the client sends `Accept-Encoding: gzip`."
    );
    if let Some(components) = doc["components"].as_object_mut() {
        components.remove("securitySchemes");
    }
    for item in paths.values_mut() {
        let operation = &mut item["get"];
        if let Some(operation) = operation.as_object_mut() {
            operation.remove("security");
        }
        if let Some(responses) = operation["responses"].as_object_mut() {
            responses.remove("401");
            responses.remove("429");
            if let Some(unavailable) = responses.get_mut("503") {
                unavailable["description"] =
                    json!("The request took longer than the server's timeout (`timeout`).");
            }
        }
    }
}

/// A `/{catalog}/v1/...` operation made for `catalog`.
fn catalog_operation(operation: &mut Value, path: &str, catalog: &Catalog) {
    let records = take_str(operation, "x-cardex-records");
    let collection = if records == "expansions" {
        catalog.expansions()
    } else {
        catalog.cards()
    };
    let expansion_id = path.contains("/expansions/{id}");
    let id_of = if expansion_id {
        catalog.expansions()
    } else {
        catalog.cards()
    };
    let card_order_fields = catalog.card_order_fields();
    let name = catalog.name();
    operation["operationId"] = json!(format!(
        "{}{}",
        identifier(name),
        capitalised(operation["operationId"].as_str().unwrap_or_default())
    ));
    operation["tags"] = json!([name]);
    remake_parameters(operation, |component, parameter| {
        Some(match component {
            "catalog" => return None,
            "lang" => with_example(
                json!({
                    "name": "lang",
                    "in": "path",
                    "required": true,
                    "description": format!(
                        "A language code of `{name}`, case-insensitive: {}.",
                        listed(catalog.languages())
                    ),
                    "schema": {"type": "string", "pattern": either_case(catalog.languages())},
                }),
                catalog.languages().first().cloned(),
            ),
            "id" => with_example(
                json!({
                    "name": "id",
                    "in": "path",
                    "required": true,
                    "description": if expansion_id { "The expansion's id." } else { "The card's id." },
                    "schema": {"type": "string"},
                }),
                first_id(id_of),
            ),
            "q" => query_parameter("q", "#/components/parameters/q", query_example(collection)),
            "order_by" => list_parameter(
                "order_by",
                "#/components/parameters/order_by",
                true,
                &spellings(&if records == "expansions" {
                    collection.order_fields()
                } else {
                    card_order_fields.iter().map(String::as_str).collect()
                }),
                order_example(collection),
            ),
            "select" => list_parameter(
                "select",
                "#/components/parameters/select",
                false,
                &spellings(&top_level_fields(collection)),
                select_example(collection),
            ),
            _ => parameter,
        })
    });
}

/// A `/v2/...` operation for the v2 catalog.
fn v2_operation(operation: &mut Value, path: &str, catalog: &Catalog, view: &V2View) {
    let records = take_str(operation, "x-cardex-records");
    let cards = records == "cards";
    remake_parameters(operation, |component, parameter| {
        Some(match component {
            "v2_q" => query_parameter(
                "q",
                "#/components/parameters/v2_q",
                v2_query_example(catalog, view, cards),
            ),
            "v2_orderBy" => {
                let fields = v2_order_fields(catalog, view, cards);
                let example = fields
                    .iter()
                    .find(|f| *f == "number" || *f == "releaseDate")
                    .or(fields.first())
                    .map(|f| format!("-{f},id"));
                let mut parameter = list_parameter(
                    "orderBy",
                    "#/components/parameters/v2_orderBy",
                    true,
                    &fields.iter().map(String::as_str).collect::<Vec<_>>(),
                    example,
                );
                // A price figure sorts as the first key only.
                let price_keys = view.prices().map(|p| p.keys()).unwrap_or_default();
                if cards && !price_keys.is_empty() {
                    parameter["schema"]["pattern"] = json!(comma_list_after(&price_keys, &fields));
                }
                parameter
            }
            "v2_select" => {
                let fields = super::v2::selectable(view, cards);
                let example = ["id", "name"]
                    .iter()
                    .filter(|f| fields.contains(f))
                    .copied()
                    .collect::<Vec<_>>()
                    .join(",");
                list_parameter(
                    "select",
                    "#/components/parameters/v2_select",
                    false,
                    &fields,
                    Some(example).filter(|e| !e.is_empty()),
                )
            }
            _ if parameter["name"] == "id" && path.contains("{id}") => {
                with_example(parameter, v2_first_id(catalog, view, cards))
            }
            _ => parameter,
        })
    });
}

/// Replaces each parameter of `operation` by what `make` gives for it, from the name of
/// its component (`""` for one written inline); `None` drops it.
fn remake_parameters(operation: &mut Value, mut make: impl FnMut(&str, Value) -> Option<Value>) {
    let Some(parameters) = operation
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    *parameters = std::mem::take(parameters)
        .into_iter()
        .filter_map(|parameter| {
            let component = parameter["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/parameters/"))
                .unwrap_or_default()
                .to_string();
            make(&component, parameter)
        })
        .collect();
}

/// A `q` parameter: the component's description, format `cardex-query`, and an example.
fn query_parameter(name: &str, component: &str, example: Option<String>) -> Value {
    let mut parameter = json!({
        "name": name,
        "in": "query",
        "required": false,
        "description": description(component),
        "schema": {
            "type": "string",
            "format": "cardex-query",
            "maxLength": crate::query::MAX_QUERY_BYTES,
        },
    });
    if let Some(example) = example {
        parameter["example"] = json!(example);
    }
    parameter
}

/// A comma list of `fields` (each maybe after `-` when `signed`), or empty.
fn list_parameter(
    name: &str,
    component: &str,
    signed: bool,
    fields: &[impl AsRef<str>],
    example: Option<String>,
) -> Value {
    let mut parameter = json!({
        "name": name,
        "in": "query",
        "required": false,
        "description": description(component),
        "schema": {"type": "string", "pattern": comma_list(fields, signed)},
    });
    if let Some(example) = example {
        parameter["example"] = json!(example);
    }
    parameter
}

/// The template's description of parameter `component` (`#/components/parameters/x`).
fn description(component: &str) -> Value {
    let name = component.rsplit('/').next().unwrap_or_default();
    template()["components"]["parameters"][name]["description"].clone()
}

/// The pattern of a comma list of `names`, each maybe after `-`, that may start with one
/// of `first` instead, or of the empty string.
fn comma_list_after(first: &[impl AsRef<str>], names: &[impl AsRef<str>]) -> String {
    let alternatives = |names: &[&str]| {
        names
            .iter()
            .map(|n| escaped(n))
            .collect::<Vec<_>>()
            .join("|")
    };
    let first: Vec<&str> = first.iter().map(AsRef::as_ref).collect();
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    let one = format!("-?(?:{})", alternatives(&names));
    let head = format!("-?(?:{})", alternatives(&[&first[..], &names[..]].concat()));
    if names.is_empty() {
        return format!("^(?:{head})?$");
    }
    format!("^(?:{head}(?:,{one})*)?$")
}

/// The pattern of a comma list of `names` (each maybe after `-`), or of the empty string.
fn comma_list(names: &[impl AsRef<str>], signed: bool) -> String {
    let one = format!(
        "{}(?:{})",
        if signed { "-?" } else { "" },
        names
            .iter()
            .map(|n| escaped(n.as_ref()))
            .collect::<Vec<_>>()
            .join("|")
    );
    if names.is_empty() {
        return "^$".into();
    }
    format!("^(?:{one}(?:,{one})*)?$")
}

/// `text` with the characters a regular expression gives meaning escaped.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A pattern matching each of `codes` in any case (JSON Schema patterns have no flags).
fn either_case(codes: &[String]) -> String {
    let alternatives: Vec<String> = codes
        .iter()
        .map(|code| {
            code.chars()
                .map(|c| {
                    let (lower, upper) =
                        (c.to_lowercase().to_string(), c.to_uppercase().to_string());
                    if lower == upper {
                        escaped(&lower)
                    } else {
                        format!("[{}{}]", escaped(&lower), escaped(&upper))
                    }
                })
                .collect()
        })
        .collect();
    format!("^(?:{})$", alternatives.join("|"))
}

/// `a`, `b` and `c`, in backquotes.
fn listed(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    quoted.join(", ")
}

/// Each of `fields` as the records spell it and, where it differs, in camelCase (which
/// the server reads back as the same field).
fn spellings(fields: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(fields.len() * 2);
    for &field in fields {
        out.push(field.to_string());
        let camel: Vec<String> = field.split('.').map(crate::naming::camel_case).collect();
        let camel = camel.join(".");
        if camel != field && crate::naming::snake_case(&camel) == field {
            out.push(camel);
        }
    }
    out
}

/// The top-level fields of `collection`'s records.
fn top_level_fields(collection: &Collection) -> Vec<&str> {
    collection
        .fields()
        .map(|f| f.path)
        .filter(|p| !p.contains('.'))
        .collect()
}

/// The id of the first record of `collection`, in default order.
fn first_id(collection: &Collection) -> Option<String> {
    (!collection.is_empty()).then(|| collection.record_id(0).into_owned())
}

/// A `q` that finds the first record of `collection` by name (or id), when it has one.
fn query_example(collection: &Collection) -> Option<String> {
    if collection.is_empty() {
        return None;
    }
    let record: Value = serde_json::from_str(&collection.doc(0)).ok()?;
    phrase_query(&record, "name").or_else(|| phrase_query(&record, "id"))
}

/// `field:"value"` for a string `field` of `record` that can be written as a phrase.
fn phrase_query(record: &Value, field: &str) -> Option<String> {
    let value = record[field].as_str()?;
    (!value.is_empty() && !value.contains(['"', '\\'])).then(|| format!("{field}:\"{value}\""))
}

/// An `order_by` for `collection`: a top-level number field descending, then `name`.
fn order_example(collection: &Collection) -> Option<String> {
    let sortable = collection.order_fields();
    let number = collection
        .fields()
        .find(|f| f.holds_numbers && !f.path.contains('.') && sortable.contains(&f.path))
        .map(|f| format!("-{}", f.path));
    let name = sortable.contains(&"name").then(|| "name".to_string());
    let keys: Vec<String> = number.into_iter().chain(name).collect();
    (!keys.is_empty()).then(|| keys.join(","))
}

/// A `select` for `collection`: `id,name` (or what of it the records have).
fn select_example(collection: &Collection) -> Option<String> {
    let fields = top_level_fields(collection);
    let keys: Vec<&str> = ["id", "name"]
        .into_iter()
        .filter(|f| fields.contains(f))
        .collect();
    (!keys.is_empty()).then(|| keys.join(","))
}

/// The fields v2's `orderBy` sorts cards (or sets) by, in v2's spellings: the catalog's
/// order fields under the v2 records' top-level fields.
fn v2_order_fields(catalog: &Catalog, view: &V2View, cards: bool) -> Vec<String> {
    let (collection, visible, of) = if cards {
        (catalog.cards(), view.card_fields(), super::v2::Of::Cards)
    } else {
        (catalog.expansions(), view.set_fields(), super::v2::Of::Sets)
    };
    let fields: Vec<String> = if cards {
        catalog.card_order_fields()
    } else {
        collection
            .order_fields()
            .into_iter()
            .map(str::to_string)
            .collect()
    };
    let joined = cards && catalog.joins_expansions();
    fields
        .into_iter()
        .map(|path| {
            let name = super::v2::v2_image_field(&path, of, view.set_images)
                .unwrap_or_else(|| super::v2::v2_field(&path, of));
            (path, name)
        })
        .filter(|(path, name)| {
            let top = name.split('.').next().unwrap_or_default();
            // Listed when v2's spelling reaches the same field: the card's own, or its
            // expansion's where the cards are joined to theirs, if v2's set has it.
            let engine_name = super::v2::engine_field(name, of, view.set_images);
            let in_v2_set = |name: &str| {
                let own = name.strip_prefix("set.").unwrap_or_default();
                let top = own.split('.').next().unwrap_or_default();
                view.set_fields().iter().any(|f| f == top)
            };
            let reached = collection
                .schema()
                .value_field(&engine_name)
                .is_ok_and(|id| collection.index().field(id).path() == *path)
                || (joined
                    && path.starts_with("expansion.")
                    && engine_name == *path
                    && in_v2_set(name));
            reached && visible.iter().any(|v| v == top)
        })
        .map(|(_, name)| name)
        .collect()
}

/// The id of the first record v2 serves of the cards (or sets).
fn v2_first_id(catalog: &Catalog, view: &V2View, cards: bool) -> Option<String> {
    let collection = if cards {
        catalog.cards()
    } else {
        catalog.expansions()
    };
    (0..collection.len() as u32)
        .find(|&r| view.has(cards, r))
        .map(|r| collection.record_id(r).into_owned())
}

/// A v2 `q` that finds the first card (or set) v2 serves by name.
fn v2_query_example(catalog: &Catalog, view: &V2View, cards: bool) -> Option<String> {
    let id = v2_first_id(catalog, view, cards)?;
    let collection = if cards {
        catalog.cards()
    } else {
        catalog.expansions()
    };
    let record: Value = serde_json::from_str(&collection.doc(collection.find(&id)?)).ok()?;
    phrase_query(&record, "name")
}

/// The value of member `key` of `object`, removed from it (empty when absent).
fn take_str(object: &mut Value, key: &str) -> String {
    object
        .as_object_mut()
        .and_then(|o| o.remove(key))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `name` as a camelCase identifier (letters and digits; a catalog name may hold `-`).
fn identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = !out.is_empty();
        }
    }
    out
}

/// `word` with its first letter in upper case.
fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
