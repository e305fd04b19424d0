//! Errors found while resolving a query against a catalog: they point at the user's text
//! the same way parse errors do.

use std::fmt;

use crate::query::Diagnostic;

/// Why a well-formed query cannot run against this catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanErrorKind {
    /// No record of the catalog (in any language) has this field.
    UnknownField {
        /// The field as typed.
        field: String,
        /// The closest known field, if one is close.
        suggestion: Option<String>,
        /// The term was a bare value, which searches `name`.
        bare: bool,
    },
    /// A bare value inside a nested query (`variants.prices:(condition:NM OR LP)`), where it
    /// searches the elements' `name`, and they have none.
    BareValueInNested {
        /// The array of objects the nested query is on (`variants.prices`).
        path: String,
        /// The field a bare value searches (`name`).
        field: String,
    },
    /// The field holds objects, not values (`legalities`).
    ObjectField {
        /// The field as typed.
        field: String,
        /// The fields under it that hold values.
        children: Vec<String>,
    },
    /// A range or comparison on a field that holds no numbers.
    NotNumeric {
        /// The field as typed.
        field: String,
    },
    /// A comparison or range in a group of values on an array of objects
    /// (`attacks:(>=60)`), where it compares the elements' `name`, which holds no numbers.
    BareRangeInNested {
        /// The array of objects the group is on (`attacks`).
        path: String,
        /// The field a bare value compares (`name`).
        field: String,
    },
    /// A term on the field `*` other than `*:*` (every record), or `*:*` inside a nested
    /// query.
    EveryRecord {
        /// The term is inside a nested query.
        nested: bool,
    },
    /// A nested query `field:( ... )` on a field that is not an array of objects.
    NotNested {
        /// The field as typed.
        field: String,
        /// What the field is instead.
        holds: Holds,
        /// The arrays of objects a nested query can name here, relative to where it is
        /// written.
        arrays: Box<[String]>,
        /// The closest of them, if one is close.
        suggestion: Option<String>,
    },
}

/// What a field that a nested query names holds, when it is not an array of objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Holds {
    /// Values (`rarity_code`): `field:( )` there is a group of values.
    Values,
    /// One object (`legalities`): its fields are named directly.
    Object,
    /// Nothing: no record has the field.
    Nothing,
}

impl fmt::Display for PlanErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanErrorKind::UnknownField { field, bare: true, .. } => write!(
                f,
                "unknown field `{field}`: a bare value searches `{field}`, which no record of this catalog has; name a field, as in `field:value`"
            ),
            PlanErrorKind::BareValueInNested { path, field } => write!(
                f,
                "a bare value in a nested query on `{path}` searches the `{field}` of its elements, which none has; name their field, as in `field:value` or `field:(a OR b)`"
            ),
            PlanErrorKind::UnknownField {
                field,
                suggestion: Some(s),
                ..
            } => write!(f, "unknown field `{field}` (did you mean `{s}`?)"),
            PlanErrorKind::UnknownField { field, .. } => write!(f, "unknown field `{field}`"),
            PlanErrorKind::ObjectField { field, children } => {
                write!(f, "field `{field}` holds objects, not values")?;
                if !children.is_empty() {
                    let list: Vec<String> = children.iter().map(|c| format!("`{c}`")).collect();
                    let lead = crate::naming::FIELDS_OF_OBJECT;
                    write!(f, "; search {lead}{}", list.join(", "))?;
                }
                Ok(())
            }
            PlanErrorKind::NotNumeric { field } => write!(
                f,
                "field `{field}` holds no numbers, so ranges and comparisons cannot match it"
            ),
            PlanErrorKind::BareRangeInNested { path, field } => write!(
                f,
                "a comparison or range in `{path}:( )` compares the `{field}` of its elements, \
                 which holds no numbers; name the field to compare inside the parentheses \
                 (`{path}:(field>=n)`)"
            ),
            PlanErrorKind::EveryRecord { nested: false } => f.write_str(
                "`*` is no field: `*:*` matches every record, and any other value needs its \
                 field named (`name:pikachu`)",
            ),
            PlanErrorKind::EveryRecord { nested: true } => f.write_str(
                "`*:*` (every record) cannot be inside a nested query, whose terms name fields \
                 of the elements; name a field (`field:*` matches the elements that have it)",
            ),
            PlanErrorKind::NotNested {
                field,
                holds,
                arrays,
                suggestion,
            } => {
                match holds {
                    Holds::Values => write!(
                        f,
                        "`{field}` holds values, not an array of objects, so `{field}:( )` cannot \
                         hold a query on its elements; to match one of several values write \
                         `{field}:(a OR b)`"
                    )?,
                    Holds::Object => write!(
                        f,
                        "`{field}` is one object, not an array of objects; name its fields \
                         directly (`{field}.name:value`)"
                    )?,
                    Holds::Nothing => write!(f, "unknown array of objects `{field}`")?,
                }
                if let Some(s) = suggestion {
                    write!(f, " (did you mean `{s}`?)")?;
                }
                if arrays.is_empty() {
                    f.write_str("; no field here is an array of objects")
                } else {
                    let list: Vec<String> = arrays.iter().map(|a| format!("`{a}`")).collect();
                    write!(f, "; the arrays of objects here: {}", list.join(", "))
                }
            }
        }
    }
}

/// A query that does not fit the catalog, with the place in the query.
///
/// ```
/// let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let onepiece = engine.catalog("onepiece").unwrap();
/// let err = onepiece.search(&cardex::SearchRequest::new("printings:OP01 AND rarty_code:SR")).unwrap_err();
/// assert_eq!(err.to_string(), "\
/// unknown field `rarty_code` (did you mean `rarity_code`?)
/// printings:OP01 AND rarty_code:SR
///                    ^^^^^^^^^^");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type PlanError = Diagnostic<PlanErrorKind>;
