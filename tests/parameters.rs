//! Request parameters: defaults, limits, aliases, and the typed errors for bad ones.

mod support;

#[cfg(feature = "server")]
use cardex::server::{error_body, error_code, error_status};
use cardex::{Error, ParameterErrorKind, SearchRequest};
use support::{catalog, search_error};

#[test]
fn defaults() {
    let req = SearchRequest::default();
    assert_eq!((req.q, req.page, req.page_size), ("", 1, 100));
    let page = catalog("pokemon").search(&req).unwrap();
    assert_eq!((page.page(), page.page_size(), page.count()), (1, 100, 34));
}

#[test]
fn paging_limits() {
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").page(0)),
        "invalid `page` value `0`: page must be a whole number between 1 and 4294967295"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").page_size(101)),
        "invalid `page_size` value `101`: page_size must be a whole number between 1 and 100"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").page_size(0)),
        "invalid `page_size` value `0`: page_size must be a whole number between 1 and 100"
    );
    assert!(catalog("onepiece")
        .search(&SearchRequest::new("").page_size(100))
        .is_ok());
    assert!(catalog("onepiece")
        .search(&SearchRequest::new("").page(u32::MAX))
        .is_ok());
}

#[test]
fn order_by_errors() {
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").order_by("rarty")),
        "invalid `order_by` value `rarty`: no record has a value at `rarty` (did you mean `rarity`?)"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").order_by("name,,id")),
        "invalid `order_by` value `name,,id`: each key is a field name, `-` before it for descending"
    );
    // A field of objects is there: its fields are what sorts, as `q` says.
    assert_eq!(
        search_error("pokemon", SearchRequest::new("").order_by("legalities")),
        "invalid `order_by` value `legalities`: `legalities` holds objects, not values; sort by one of its fields: `legalities.expanded`, `legalities.standard`, `legalities.unlimited`"
    );
    // Fields that sort, at any depth: not objects, nor words inside an array of objects.
    for (name, listed, not_listed) in [
        ("translation", "`translation.en.name`", "`translation.en`,"),
        (
            "attacks",
            "`attacks.converted_energy_cost`",
            "`attacks.name`",
        ),
    ] {
        let error = search_error("pokemon", SearchRequest::new("").order_by(name));
        assert!(
            error.contains(listed) && !error.contains(not_listed),
            "{error}"
        );
    }
}

/// An unknown field in `order_by` or `select` is a typed kind, with the closest field, and
/// the error body carries both.
#[test]
fn unknown_fields_in_order_by_and_select_are_typed() {
    let onepiece = catalog("onepiece");
    for (req, name, field, suggestion) in [
        (
            SearchRequest::new("").order_by("-rarty"),
            "order_by",
            "rarty",
            Some("rarity"),
        ),
        (
            SearchRequest::new("").order_by("zzz"),
            "order_by",
            "zzz",
            None,
        ),
        (
            SearchRequest::new("").select("id,nmae"),
            "select",
            "nmae",
            Some("name"),
        ),
    ] {
        let err = onepiece.search(&req).unwrap_err();
        let Error::Parameter(p) = &err else {
            panic!("{err}")
        };
        assert_eq!(p.name(), name);
        assert_eq!(
            *p.kind(),
            ParameterErrorKind::UnknownField {
                field: field.into(),
                suggestion: suggestion.map(Into::into),
            }
        );
        let body = cardex::error_body(&err);
        assert_eq!(body["error"]["code"], "invalid_parameter");
        assert_eq!(body["error"]["details"]["field"], field);
        assert_eq!(
            body["error"]["details"]["suggestion"].as_str(),
            suggestion,
            "{body}"
        );
    }
}

/// `id` is always selectable, even in a catalog without cards (no record shows the field).
#[test]
fn select_id_on_an_empty_catalog() {
    let dir = std::env::temp_dir().join(format!("cardex-empty-catalog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let lorcana = dir.join("lorcana");
    std::fs::create_dir_all(lorcana.join("cards")).unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/lorcana");
    std::fs::copy(data.join("catalog.json"), lorcana.join("catalog.json")).unwrap();
    std::fs::create_dir_all(lorcana.join("expansions")).unwrap();
    for entry in std::fs::read_dir(data.join("expansions")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            lorcana.join("expansions").join(entry.file_name()),
        )
        .unwrap();
    }
    std::fs::write(lorcana.join("cards/cards.json"), "[]").unwrap();
    let engine = cardex::Engine::open(&dir).unwrap();
    let page = engine
        .catalog("lorcana")
        .unwrap()
        .search(&SearchRequest::new("").select("id"))
        .unwrap();
    assert_eq!(page.total_count(), 0);
    // As on a catalog with cards, its case does not matter.
    assert!(engine
        .catalog("lorcana")
        .unwrap()
        .search(&SearchRequest::new("").select("Id"))
        .is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn select_and_include_errors() {
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").select("nmae")),
        "invalid `select` value `nmae`: no record has a top-level field `nmae` (did you mean `name`?)"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").select("variants.name")),
        "invalid `select` value `variants.name`: `variants.name` is not a top-level field; select takes top-level fields only"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").include("price")),
        "invalid `include` value `price`: the parts are `prices` and `pop_reports` (did you mean `prices`?)"
    );
    assert_eq!(
        search_error("onepiece", SearchRequest::new("").include("graded")),
        "invalid `include` value `graded`: the parts are `prices` and `pop_reports`"
    );
}

#[test]
fn unknown_and_repeated_parameters_are_errors() {
    // A wrong parameter shape fails loudly instead of returning everything
    // (pokemon-tcg-data #572).
    let err = SearchRequest::from_params([("name", "pikachu")]).unwrap_err();
    #[cfg(feature = "server")]
    assert_eq!(
        (error_status(&err), error_code(&err)),
        (400, "unknown_parameter")
    );
    let Error::Parameter(p) = &err else { panic!() };
    assert!(matches!(p.kind(), ParameterErrorKind::Unknown { .. }));
    #[cfg(feature = "server")]
    assert_eq!(error_body(&err)["error"]["details"]["allowed"][0], "q");
    // Names are the snake_case ones or their camelCase spellings, nothing in between.
    for name in ["PAGE", "Page_Size", "pagesize", "Q", "order-by", "OrderBy"] {
        let err = SearchRequest::from_params([(name, "1")]).unwrap_err();
        assert!(
            matches!(&err, Error::Parameter(p) if p.name() == name && matches!(p.kind(), ParameterErrorKind::Unknown { .. })),
            "{name}: {err}"
        );
    }
    // With the closest parameter, when one is close.
    let Error::Parameter(p) = &err else { panic!() };
    assert_eq!(
        p.suggestion(),
        None,
        "`name` is no misspelling of a parameter"
    );
    // A name replaced whole is none either: jQuery's cache-buster `_` is not `q`.
    for name in ["_", "s"] {
        let err = SearchRequest::from_params([(name, "1")]).unwrap_err();
        let Error::Parameter(p) = &err else { panic!() };
        assert_eq!(p.suggestion(), None, "{name}");
    }
    for (name, close) in [
        ("pagesize", "page_size"),
        ("orderby", "order_by"),
        ("selectt", "select"),
    ] {
        let err = SearchRequest::from_params([(name, "1")]).unwrap_err();
        let Error::Parameter(p) = &err else { panic!() };
        assert_eq!(p.suggestion(), Some(close), "{name}");
        assert!(
            err.to_string().starts_with(&format!(
                "unknown parameter `{name}` (did you mean `{close}`?); the parameters are `q`"
            )),
            "{err}"
        );
        #[cfg(feature = "server")]
        assert_eq!(error_body(&err)["error"]["details"]["suggestion"], close);
    }
    let err = SearchRequest::from_params([("page", "1"), ("page", "2")]).unwrap_err();
    assert!(
        matches!(&err, Error::Parameter(p) if p.name() == "page" && *p.kind() == ParameterErrorKind::Repeated)
    );
    #[cfg(feature = "server")]
    assert_eq!(error_code(&err), "invalid_parameter");
}

#[test]
fn camel_case_parameter_names() {
    let req = SearchRequest::from_params([
        ("pageSize", "2"),
        ("orderBy", "-power"),
        ("q", "type:character"),
    ])
    .unwrap();
    let page = catalog("onepiece").search(&req).unwrap();
    assert_eq!(page.count(), 2);
    let snake = SearchRequest::from_params([
        ("page_size", "2"),
        ("order_by", "-power"),
        ("q", "type:character"),
    ])
    .unwrap();
    assert_eq!(catalog("onepiece").search(&snake).unwrap(), page);
}

#[cfg(feature = "server")]
#[test]
fn error_bodies_follow_the_contract() {
    let err = catalog("onepiece")
        .search(&SearchRequest::new("").page(0))
        .unwrap_err();
    let body = error_body(&err);
    assert_eq!(body["error"]["status"], 400);
    assert_eq!(body["error"]["code"], "invalid_parameter");
    assert_eq!(body["error"]["details"]["parameter"], "page");
    assert_eq!(
        body["error"]["message"],
        "invalid `page` value `0`: page must be a whole number between 1 and 4294967295"
    );
}

#[cfg(feature = "server")]
#[test]
fn errors_come_in_a_fixed_order() {
    // Paging, then the language, then `q` (syntax), then `order_by`, then `select` and
    // `include`, then `q` against the catalog (fields): a request with several mistakes
    // always reports the same one.
    let err = |req: SearchRequest<'_>| {
        let e = support::catalog("pokemon").search(&req).unwrap_err();
        (error_code(&e), e.to_string())
    };
    let bad_q = "name:(";
    let (code, text) = err(SearchRequest::new(bad_q).page(0).select("nope"));
    assert_eq!(code, "invalid_parameter");
    assert!(text.contains("`page`"), "paging first: {text}");
    let (code, _) = err(SearchRequest::new(bad_q).lang("xx").select("nope"));
    assert_eq!(code, "not_found", "then the language");
    let (code, _) = err(SearchRequest::new(bad_q).order_by("nope").select("nope"));
    assert_eq!(code, "invalid_query", "then the query's syntax");
    let (code, text) = err(SearchRequest::new("name:x").order_by("nope").select("nope"));
    assert_eq!(code, "invalid_parameter");
    assert!(text.contains("order_by"), "then order_by: {text}");
    let (code, text) = err(SearchRequest::new("nope:x").select("nope"));
    assert_eq!(code, "invalid_parameter");
    assert!(text.contains("select"), "then select: {text}");
    let (code, _) = err(SearchRequest::new("nope:x").select("name"));
    assert_eq!(code, "invalid_query", "then the query's fields");
}
