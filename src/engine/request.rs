//! List and item requests: the parameters the service takes, typed, with their
//! defaults, limits and camelCase aliases.

use crate::error::{ParameterError, ParameterErrorKind, Result};

/// The default `page_size`, and its largest value.
pub const MAX_PAGE_SIZE: u32 = 100;

/// The parameters a list endpoint takes, as [`SearchRequest::from_params`] accepts them.
pub const LIST_PARAMETERS: &[&str] = &["q", "page", "page_size", "order_by", "select", "include"];

/// The parameters a single-resource endpoint takes.
pub const ITEM_PARAMETERS: &[&str] = &["select", "include"];

/// The parameters an expansion list takes: [`LIST_PARAMETERS`] less `include`, since
/// expansions have no optional parts (an `include` there is an unknown parameter).
pub const EXPANSION_LIST_PARAMETERS: &[&str] = &["q", "page", "page_size", "order_by", "select"];

/// The parameters a single expansion takes: [`ITEM_PARAMETERS`] less `include`.
pub const EXPANSION_ITEM_PARAMETERS: &[&str] = &["select"];

/// A search (list) request: `q` and the list parameters (`page`, `page_size`, `order_by`,
/// `select`, `include`), with the language scope.
///
/// Strings are validated when the request runs, against the catalog (so `order_by` and
/// `select` can name its fields and suggest close ones).
///
/// ```
/// use cardex::SearchRequest;
/// let req = SearchRequest::new("rarity:\"Super Rare\"").page(2).page_size(10).order_by("-number");
/// assert_eq!((req.q, req.page, req.page_size), ("rarity:\"Super Rare\"", 2, 10));
/// let req = SearchRequest::from_params([("q", "name:nami"), ("pageSize", "5")])?;
/// assert_eq!(req.page_size, 5);
/// # Ok::<(), cardex::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchRequest<'a> {
    /// The `q` expression; empty matches everything.
    pub q: &'a str,
    /// A language code scoping the catalog (`en`, `ja`), as in `/pokemon/v1/ja/cards`.
    pub lang: Option<&'a str>,
    /// The page, from 1.
    pub page: u32,
    /// Records per page: 1 to [`MAX_PAGE_SIZE`] for a rendered page; the `*hits` calls,
    /// which render nothing, take more (see [`crate::Catalog::hits`]).
    pub page_size: u32,
    /// Comma list of fields, `-` for descending (`-release_date,name`).
    pub order_by: Option<&'a str>,
    /// Comma list of top-level fields to return (`id` is always returned).
    pub select: Option<&'a str>,
    /// Comma list of optional card parts: `prices`, `pop_reports`.
    pub include: Option<&'a str>,
}

impl Default for SearchRequest<'_> {
    fn default() -> Self {
        SearchRequest {
            q: "",
            lang: None,
            page: 1,
            page_size: MAX_PAGE_SIZE,
            order_by: None,
            select: None,
            include: None,
        }
    }
}

impl<'a> SearchRequest<'a> {
    /// A request for `q`, page 1 of 100.
    pub fn new(q: &'a str) -> SearchRequest<'a> {
        SearchRequest {
            q,
            ..SearchRequest::default()
        }
    }

    /// Scopes the request to a language.
    pub fn lang(mut self, lang: &'a str) -> Self {
        self.lang = Some(lang);
        self
    }

    /// Sets the page (from 1).
    pub fn page(mut self, page: u32) -> Self {
        self.page = page;
        self
    }

    /// Sets the page size (see [`SearchRequest::page_size`](#structfield.page_size)).
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Sets `order_by`.
    pub fn order_by(mut self, order_by: &'a str) -> Self {
        self.order_by = Some(order_by);
        self
    }

    /// Sets `select`.
    pub fn select(mut self, select: &'a str) -> Self {
        self.select = Some(select);
        self
    }

    /// Sets `include`.
    pub fn include(mut self, include: &'a str) -> Self {
        self.include = Some(include);
        self
    }

    /// Builds a request from query-string pairs: `q`, `page`, `page_size` (`pageSize`),
    /// `order_by` (`orderBy`), `select`, `include`.
    ///
    /// # Errors
    ///
    /// An unknown parameter (`unknown_parameter`), a parameter given twice, or a `page` /
    /// `page_size` that is not a whole number in range (`invalid_parameter`).
    pub fn from_params<I>(params: I) -> Result<SearchRequest<'a>>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut req = SearchRequest::default();
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in params {
            let canonical = canonical_name(name, LIST_PARAMETERS)?;
            if seen.contains(&canonical) {
                return Err(ParameterError::new(name, value, ParameterErrorKind::Repeated).into());
            }
            seen.push(canonical);
            match canonical {
                "q" => req.q = value,
                "page" => req.page = parse_page(name, value)?,
                "page_size" => req.page_size = parse_page_size(name, value)?,
                "order_by" => req.order_by = Some(value),
                "select" => req.select = Some(value),
                _ => req.include = Some(value),
            }
        }
        Ok(req)
    }

    /// Pages from 1, of 1 to `max_page_size` records.
    pub(crate) fn validate_paging(&self, max_page_size: u32) -> Result<()> {
        if self.page == 0 {
            return Err(ParameterError::invalid("page", "0", page_rule("page")).into());
        }
        if self.page_size == 0 || self.page_size > max_page_size {
            let reason = page_size_rule("page_size", max_page_size);
            return Err(
                ParameterError::invalid("page_size", &self.page_size.to_string(), reason).into(),
            );
        }
        Ok(())
    }
}

/// A single-resource request (`/cards/{id}`, `/expansions/{id}`): `select` and `include`.
///
/// ```
/// let req = cardex::ItemRequest::from_params([("select", "name"), ("include", "prices")])?;
/// assert_eq!((req.select, req.include), (Some("name"), Some("prices")));
/// let err = cardex::ItemRequest::from_params([("q", "x")]).unwrap_err();
/// assert!(matches!(err, cardex::Error::Parameter(ref p) if p.name() == "q"));
/// # Ok::<(), cardex::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ItemRequest<'a> {
    /// Comma list of top-level fields to return (`id` is always returned).
    pub select: Option<&'a str>,
    /// Comma list of optional card parts: `prices`, `pop_reports`.
    pub include: Option<&'a str>,
}

impl<'a> ItemRequest<'a> {
    /// Builds a request from query-string pairs: `select`, `include`.
    ///
    /// # Errors
    ///
    /// An unknown parameter, or one given twice.
    pub fn from_params<I>(params: I) -> Result<ItemRequest<'a>>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut req = ItemRequest::default();
        for (name, value) in params {
            let slot = match canonical_name(name, ITEM_PARAMETERS)? {
                "select" => &mut req.select,
                _ => &mut req.include,
            };
            if slot.replace(value).is_some() {
                return Err(ParameterError::new(name, value, ParameterErrorKind::Repeated).into());
            }
        }
        Ok(req)
    }
}

/// The snake_case name of a parameter, if `name` is one of `allowed` or its camelCase
/// spelling (`pageSize`); any other spelling (`PAGE`, `Page_Size`) is unknown.
fn canonical_name(name: &str, allowed: &'static [&'static str]) -> Result<&'static str> {
    allowed
        .iter()
        .copied()
        .find(|&a| a == name || crate::naming::camel_case(a) == name)
        .ok_or_else(|| {
            ParameterError::new(name, "", ParameterErrorKind::Unknown { allowed }).into()
        })
}

fn parse_page(name: &str, value: &str) -> Result<u32> {
    match value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ParameterError::invalid(name, value, page_rule(name)).into()),
    }
}

fn parse_page_size(name: &str, value: &str) -> Result<u32> {
    match value.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_PAGE_SIZE).contains(&n) => Ok(n),
        _ => Err(ParameterError::invalid(name, value, page_size_rule(name, MAX_PAGE_SIZE)).into()),
    }
}

/// What `page` (as the request spelt it) may be.
fn page_rule(name: &str) -> String {
    format!("{name} must be a whole number between 1 and {}", u32::MAX)
}

/// What `page_size` (as the request spelt it) may be.
fn page_size_rule(name: &str, max: u32) -> String {
    format!("{name} must be a whole number between 1 and {max}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let req = SearchRequest::from_params([
            ("q", "x"),
            ("page", "3"),
            ("orderBy", "-number"),
            ("include", "prices"),
        ])
        .unwrap();
        assert_eq!(
            (req.q, req.page, req.page_size, req.order_by, req.include),
            ("x", 3, 100, Some("-number"), Some("prices"))
        );
        let err = |pairs: &[(&'static str, &'static str)]| {
            SearchRequest::from_params(pairs.iter().copied())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&[("name", "pikachu")]), "unknown parameter `name`; the parameters are `q`, `page`, `page_size`, `order_by`, `select`, `include`");
        assert_eq!(
            err(&[("page", "0")]),
            "invalid `page` value `0`: page must be a whole number between 1 and 4294967295"
        );
        assert_eq!(
            err(&[("page", "4294967296")]),
            "invalid `page` value `4294967296`: page must be a whole number between 1 and 4294967295"
        );
        assert_eq!(
            err(&[("page", "two")]),
            "invalid `page` value `two`: page must be a whole number between 1 and 4294967295"
        );
        assert_eq!(
            err(&[("page_size", "101")]),
            "invalid `page_size` value `101`: page_size must be a whole number between 1 and 100"
        );
        assert_eq!(
            err(&[("pageSize", "0")]),
            "invalid `pageSize` value `0`: pageSize must be a whole number between 1 and 100"
        );
        assert_eq!(
            err(&[("q", "a"), ("q", "b")]),
            "parameter `q` is given more than once"
        );
        assert_eq!(
            err(&[("page_size", "5"), ("pageSize", "5")]),
            "parameter `pageSize` is given more than once"
        );
        let item = ItemRequest::from_params([("select", "id,name")]).unwrap();
        assert_eq!(item.select, Some("id,name"));
        assert!(ItemRequest::from_params([("q", "x")]).is_err());
    }
}
