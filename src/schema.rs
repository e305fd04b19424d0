//! The schema step: every field name a request uses — in `q`, `order_by`, `select` and
//! `include` — is resolved here, against the fields a collection's records hold, with one
//! error ([`FieldError`]) and one "did you mean". A name is found as written, else by its
//! snake_case spelling (`rarityCode` is `rarity_code`), else as the one field whose
//! camelCase spelling it is (`days7` is `days_7`, as `casing=camel` writes it); the kinds
//! of fields (keyword, text, numbers, objects) come from the index the loader built, so the
//! schema is always the data's own.

use crate::index::{FieldId, Index};
use crate::json::write::Include;
use crate::naming::{snake_case, suggest, FieldKind};

/// Why a field name was refused. The caller (the planner for `q`, the request parser for
/// `order_by` and `select`) says it in its own words, with its own place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// What is wrong with the name.
    pub kind: FieldErrorKind,
    /// The closest known name, if one is close enough to be a likely misspelling.
    pub suggestion: Option<String>,
}

/// What is wrong with a field name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldErrorKind {
    /// No record holds a field of that name.
    Unknown,
    /// The field holds objects, not values; these are the fields directly under it.
    Object { children: Vec<String> },
    /// A dotted path where only top-level fields are allowed (`select`).
    NotTopLevel,
}

/// One field of a collection, as [`Collection::fields`](crate::Collection::fields) lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo<'a> {
    /// The dotted path, as the records spell it (`attacks.name`).
    pub path: &'a str,
    /// How its string values are matched.
    pub kind: FieldKind,
    /// Whether any record holds a value (string, number, boolean) there, rather than only
    /// objects: such a field can be searched and sorted by.
    pub holds_values: bool,
    /// Whether any record holds a number there (a JSON number or a decimal-number string):
    /// such a field answers ranges and comparisons.
    pub holds_numbers: bool,
    /// Whether any record holds an object there (`legalities`, `attacks`, `variants`):
    /// the fields under it are `path.name`.
    pub holds_objects: bool,
    /// How many records hold anything there.
    pub records: u64,
}

/// The fields of one collection (a catalog's cards or its expansions), as requests name
/// them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema<'a> {
    index: &'a Index,
}

impl<'a> Schema<'a> {
    /// The schema of the collection indexed by `index`.
    pub fn new(index: &'a Index) -> Schema<'a> {
        Schema { index }
    }

    /// Every field, by path.
    pub fn fields(&self) -> impl Iterator<Item = FieldInfo<'a>> + 'a {
        self.index.fields().map(|(_, f)| FieldInfo {
            path: f.path(),
            kind: f.kind(),
            holds_values: f.has_values(),
            holds_numbers: f.has_numbers(),
            holds_objects: f.holds_objects(),
            records: f.exists().len(),
        })
    }

    /// The field `typed` names in `q` or `order_by`: one whose records hold values
    /// (strings, numbers or booleans), not only objects.
    pub fn value_field(&self, typed: &str) -> Result<FieldId, FieldError> {
        let Some(id) = self.find(typed) else {
            return Err(FieldError {
                kind: FieldErrorKind::Unknown,
                suggestion: self.suggest_path(typed),
            });
        };
        let field = self.index.field(id);
        if field.has_values() {
            return Ok(id);
        }
        Err(FieldError {
            kind: FieldErrorKind::Object {
                children: self.children_of(field.path()),
            },
            suggestion: self.suggest_path(typed),
        })
    }

    /// The top-level member `typed` names in `select`, spelt as the records spell it.
    pub fn top_level_field(&self, typed: &str) -> Result<String, FieldError> {
        if typed.contains('.') {
            return Err(FieldError {
                kind: FieldErrorKind::NotTopLevel,
                suggestion: None,
            });
        }
        let top_level = || {
            self.index
                .fields()
                .map(|(_, f)| f.path())
                .filter(|p| !p.contains('.'))
        };
        [typed.to_string(), snake_case(typed)]
            .into_iter()
            .find(|n| top_level().any(|p| p == n))
            .or_else(|| {
                let named = top_level().filter(|p| crate::naming::names_path(p, typed));
                crate::naming::the_only(named).map(str::to_string)
            })
            .ok_or_else(|| FieldError {
                kind: FieldErrorKind::Unknown,
                suggestion: suggest(typed, top_level()).map(str::to_string),
            })
    }

    /// The optional part of a card `typed` names in `include`: `prices` or `pop_reports`
    /// (camelCase `popReports` too).
    pub fn optional_part(typed: &str) -> Option<Include> {
        match snake_case(typed).as_str() {
            "prices" => Some(Include::PRICES),
            "pop_reports" => Some(Include::POP_REPORTS),
            _ => None,
        }
    }

    /// The field at `typed` as written, else at its snake_case spelling, else the one field
    /// `typed` names in another spelling ([`crate::naming::names_path`]).
    fn find(&self, typed: &str) -> Option<FieldId> {
        self.index
            .lookup(typed)
            .or_else(|| {
                let snake = snake_case(typed);
                (snake != typed)
                    .then(|| self.index.lookup(&snake))
                    .flatten()
            })
            .or_else(|| {
                // Only a name that names one field: where several spell so
                // (`y2.a_1` and `y_2.a1`), none is picked over the others.
                let named = self
                    .index
                    .fields()
                    .filter(|(_, f)| crate::naming::names_path(f.path(), typed));
                crate::naming::the_only(named).map(|(id, _)| id)
            })
    }

    /// The path holding values closest to a misspelt one. A path under `set.` (the Pokémon
    /// TCG API's name for what the service calls the expansion) that is not close to any
    /// field is also tried under `expansion.`, so `set.id` suggests `expansion.id`.
    fn suggest_path(&self, typed: &str) -> Option<String> {
        let known = || {
            self.index
                .fields()
                .map(|(_, f)| f)
                .filter(|f| f.has_values())
                .map(|f| f.path())
        };
        suggest(typed, known())
            .or_else(|| {
                let rest = typed.strip_prefix("set.")?;
                suggest(&format!("expansion.{rest}"), known())
            })
            .map(str::to_string)
    }

    /// The paths directly under `path` (for the error on an object field).
    fn children_of(&self, path: &str) -> Vec<String> {
        self.index
            .fields()
            .map(|(_, f)| f.path())
            .filter(|p| {
                p.strip_prefix(path)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|rest| !rest.contains('.'))
            })
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::build;

    fn index() -> Index {
        build(&[
            r#"{"id":"a","name":"Pikachu","rarity_code":"C","legalities":{"standard":"Legal","expanded":"Legal"},"expansion":{"id":"sv1"}}"#,
            r#"{"id":"b","name":"Raichu","rarity_code":"R","hp":90}"#,
        ])
    }

    #[test]
    fn value_fields_are_found_as_written_or_in_snake_case() {
        let index = index();
        let schema = Schema::new(&index);
        let id = schema.value_field("rarity_code").unwrap();
        assert_eq!(schema.value_field("rarityCode"), Ok(id));
        assert_eq!(index.field(id).path(), "rarity_code");
    }

    #[test]
    fn one_error_for_every_misnamed_field() {
        let index = index();
        let schema = Schema::new(&index);
        let unknown = schema.value_field("rarty_code").unwrap_err();
        assert_eq!(unknown.kind, FieldErrorKind::Unknown);
        assert_eq!(unknown.suggestion.as_deref(), Some("rarity_code"));
        let object = schema.value_field("legalities").unwrap_err();
        assert_eq!(
            object.kind,
            FieldErrorKind::Object {
                children: vec!["legalities.expanded".into(), "legalities.standard".into()]
            }
        );
        assert_eq!(
            schema
                .value_field("set.id")
                .unwrap_err()
                .suggestion
                .as_deref(),
            Some("expansion.id")
        );
        assert_eq!(schema.value_field("zzz").unwrap_err().suggestion, None);
    }

    #[test]
    fn the_camel_case_casing_writes_names_one_field_or_none() {
        let index = build(&[r#"{"id":"a","trends":{"days_7":1},"y2":{"a_1":1},"y_2":{"a1":2}}"#]);
        let schema = Schema::new(&index);
        for typed in ["trends.days7", "trends.Days7", "trends.DAYS_7"] {
            assert_eq!(
                schema.value_field(typed).ok(),
                index.lookup("trends.days_7"),
                "{typed}"
            );
        }
        // `y2.a_1` and `y_2.a1` are both written `y2.a1`: that name picks neither.
        assert_eq!(
            schema.value_field("y2.a1").unwrap_err().kind,
            FieldErrorKind::Unknown
        );
        assert_eq!(schema.value_field("y2.a_1").ok(), index.lookup("y2.a_1"));
    }

    #[test]
    fn camel_case_paths_resolve_segment_by_segment() {
        let index = build(&[
            r#"{"id":"b","rarity":"Common","attacks":[{"name":"Thunder Crash","cost":["Fire"],"converted_energy_cost":3}]}"#,
        ]);
        let schema = Schema::new(&index);
        assert_eq!(
            schema.value_field("convertedEnergyCost").unwrap_err().kind,
            FieldErrorKind::Unknown
        );
        assert_eq!(
            schema.value_field("attacks.convertedEnergyCost").ok(),
            index.lookup("attacks.converted_energy_cost")
        );
        assert_eq!(
            schema.value_field("attacks").unwrap_err().kind,
            FieldErrorKind::Object {
                children: vec![
                    "attacks.converted_energy_cost".into(),
                    "attacks.cost".into(),
                    "attacks.name".into()
                ]
            }
        );
        assert_eq!(
            schema
                .value_field("rarty")
                .unwrap_err()
                .suggestion
                .as_deref(),
            Some("rarity")
        );
    }

    #[test]
    fn fields_list_what_the_records_hold() {
        let index = index();
        let schema = Schema::new(&index);
        let field = |path: &str| schema.fields().find(|f| f.path == path).unwrap();
        let hp = field("hp");
        assert!(hp.holds_values && hp.holds_numbers && !hp.holds_objects);
        assert_eq!(hp.records, 1);
        let legalities = field("legalities");
        assert!(legalities.holds_objects && !legalities.holds_values);
        let rarity = field("rarity_code");
        assert_eq!(
            (rarity.kind, rarity.holds_numbers, rarity.records),
            (FieldKind::Keyword, false, 2)
        );
        assert_eq!(field("name").kind, FieldKind::Text);
    }

    #[test]
    fn select_names_top_level_fields() {
        let index = index();
        let schema = Schema::new(&index);
        assert_eq!(schema.top_level_field("name").unwrap(), "name");
        assert_eq!(schema.top_level_field("rarityCode").unwrap(), "rarity_code");
        assert_eq!(
            schema
                .top_level_field("legalities.standard")
                .unwrap_err()
                .kind,
            FieldErrorKind::NotTopLevel
        );
        let misspelt = schema.top_level_field("nmae").unwrap_err();
        assert_eq!(
            (misspelt.kind, misspelt.suggestion.as_deref()),
            (FieldErrorKind::Unknown, Some("name"))
        );
    }

    #[test]
    fn include_names_the_optional_parts() {
        assert_eq!(Schema::optional_part("prices"), Some(Include::PRICES));
        assert_eq!(
            Schema::optional_part("popReports"),
            Some(Include::POP_REPORTS)
        );
        assert_eq!(Schema::optional_part("variants"), None);
    }
}
