//! From a parsed [`Query`] to the records that match it.
//!
//! - a [`Query`] is what the user wrote: fields and values as text;
//! - a [`Plan`] is that query resolved against one collection: fields found (or an error
//!   with the place and a suggestion), values folded and looked up, every leaf a set of
//!   borrowed posting lists with a known size, normalised and ready to run;
//! - [`Plan::execute`] runs it over roaring bitmaps: `AND` from the smallest input,
//!   stopping as soon as it is empty, `NOT` as a subtraction, the language scope as the
//!   universe.
//!
//! Phrases are planned on the field's word-pair index for its short values (a two-word
//! phrase is one lookup) and, for its long values, as the intersection of their words'
//! postings checked on each remaining record's own text; exact values of text fields are
//! checked the same way. Phrase matching is exact, and the check only runs on records that
//! have every word.

mod dense;
mod error;
mod exec;
mod explain;
mod mask;
mod normalize;

pub use error::{Holds, PlanError, PlanErrorKind};
pub use exec::Matches;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use roaring::RoaringBitmap;
use smallvec::SmallVec;

use crate::index::{Field, FieldId, FieldKind, Index, Postings};
use crate::query::{Bound, Expr, Mode, Query, Span, Spanned, Term, Test, Value, EVERY_FIELD};
use crate::schema::{FieldErrorKind, Schema};
use crate::store::Collection;
use crate::text::{fold, is_all_cjk, is_cjk, pattern_words, words, year, Pattern};

/// A query resolved against one collection, ready to execute.
#[derive(Debug, Clone)]
pub struct Plan<'c> {
    pub(crate) root: Node<'c>,
    pub(crate) collection: &'c Collection,
    pub(crate) universe: &'c RoaringBitmap,
    pub(crate) query: &'c str,
    /// The nested queries written at the top of the query (see [`BoundNested`]).
    pub(crate) bound: Vec<BoundNested<'c>>,
}

/// A nested query written at the top of the query — alone, or ANDed with the rest, not
/// under `OR` or `NOT` — so that every match holds an element it matches: a sort on a
/// field of those elements counts only those elements. So is a nested query at the top of
/// such a query's own subquery, bound within the elements the enclosing one matches:
/// `prices:(currency:USD)` in `variants:(name:holofoil AND prices:(currency:USD))` counts
/// the USD prices of the holofoil variants. Which queries these are is read from the query
/// as written, never from what the data makes of it.
#[derive(Debug, Clone)]
pub(crate) struct BoundNested<'c> {
    /// The array-of-objects path, its number in [`Collection::nested`].
    pub(crate) space: usize,
    /// The query on its elements.
    pub(crate) plan: Plan<'c>,
    /// The fields (snake_case, relative to the element) that the nested query's own top
    /// level fixes to one plain value: `currency` in `currency:USD AND market>=100`.
    pub(crate) fixed: Vec<String>,
    /// The term, as written.
    pub(crate) span: Span,
    /// The elements `plan` matches (within the enclosing query's, for one inside
    /// another), found once for the plan's matches and its sort.
    pub(crate) found: Found,
    /// For a nested query inside another bound one: that one.
    pub(crate) within: Option<Within<'c>>,
}

/// The bound nested query around another (see [`BoundNested`]).
#[derive(Debug, Clone)]
pub(crate) struct Within<'c> {
    pub(crate) outer: Box<BoundNested<'c>>,
    /// The maps from an element of the inner query up to the outer query's elements.
    pub(crate) lift: SmallVec<[&'c [u32]; 2]>,
}

/// The elements a bound nested query matches, found on first use and shared by the
/// plan's node of that query and its [`BoundNested`].
pub(crate) type Found = Arc<OnceLock<RoaringBitmap>>;

impl BoundNested<'_> {
    /// The elements the nested query matches.
    pub(crate) fn elements(&self) -> &RoaringBitmap {
        self.found.get_or_init(|| {
            let matched = self.plan.execute();
            let Some(within) = &self.within else {
                return matched.into_owned();
            };
            let outer = within.outer.elements();
            let kept = matched.iter().filter(|&element| {
                let mut at = element;
                for map in &within.lift {
                    match map.get(at as usize) {
                        Some(&up) if up != crate::store::NO_PARENT => at = up,
                        _ => return false,
                    }
                }
                outer.contains(at)
            });
            RoaringBitmap::from_sorted_iter(kept).unwrap_or_default()
        })
    }
}

/// What a leaf of the plan stands for, for `explain`.
#[derive(Debug, Clone)]
pub(crate) enum Label {
    /// A term (or a value of a grouped term), by its place in the query.
    Term(Span, FieldId, LeafKind),
    /// One word of a phrase or of an exact text value, folded.
    Word(FieldId, String, LeafKind),
    /// The language scope.
    Scope(String),
    /// The cards of one expansion.
    Filter,
    /// A pair of consecutive words of a phrase, looked up in the field's word pairs.
    Pair(FieldId, String),
    /// The records with a value too long for the word-pair index.
    Long(FieldId),
    /// The cards of the expansions a term on `expansion.*` matches (a card that does not
    /// carry its expansion), by the term's place in the query.
    Join(Span),
}

/// How a leaf was looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeafKind {
    Keyword,
    Word,
    Wildcard,
    Contains,
    Number,
    Range,
    Exists,
    /// A value as written (`^`).
    Literal,
}

/// A node of a plan.
#[derive(Debug, Clone)]
pub(crate) enum Node<'c> {
    /// Every record of the universe.
    All,
    /// No record.
    Empty,
    /// The union of borrowed posting lists (one list for a plain term).
    Sets {
        sets: SmallVec<[Postings<'c>; 1]>,
        label: Label,
        /// When the lists are blocks of one partition of the records: then no two of them
        /// share a record, nor do two lists of the same partition in other nodes.
        partition: Option<Partition>,
    },
    /// The candidates, kept only where the field's text passes the check.
    Verify {
        candidates: Box<Node<'c>>,
        field: FieldId,
        check: Check,
        span: Span,
    },
    And(Vec<Node<'c>>),
    Or(Vec<Node<'c>>),
    Not(Box<Node<'c>>),
    /// A nested query: the records (or enclosing elements) holding an element of the
    /// array-of-objects path number `space` that `plan` matches.
    Nested {
        space: usize,
        /// The path of `space`, from the record.
        path: &'c str,
        /// The query on the elements, over their collection.
        plan: Box<Plan<'c>>,
        /// The maps from an element up to what this node's plan counts: the enclosing
        /// elements' maps, then (from the records' plan) the records'.
        lift: SmallVec<[&'c [u32]; 2]>,
        span: Span,
        /// For a bound nested query (see [`BoundNested`]), its elements found once.
        found: Option<Found>,
    },
}

/// A partition of the records that a field's values make when no record holds two of
/// them ([`crate::index::Field::single_valued`]): by folded keyword value, or by number.
/// Posting lists of different values of one partition are disjoint, so the size of their
/// union is the sum of their sizes, and their first ids merge without building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    pub(crate) field: FieldId,
    numeric: bool,
    /// When the node is exactly one keyword value: its number in the field's terms, for
    /// [`Index::value_column`] lookups.
    pub(crate) value: Option<u32>,
}

impl Partition {
    /// Whether both are blocks of the same partition (whatever their values).
    pub(crate) fn same_partition(&self, other: &Partition) -> bool {
        self.field == other.field && self.numeric == other.numeric
    }
}

/// A check of a text field's values, on one record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Check {
    /// Some value holds these words, consecutively.
    Phrase(Vec<WordTest>),
    /// Some value, folded whole, equals this text.
    Whole(String),
    /// Some value, folded whole, matches this pattern.
    WholeLike(Pattern),
}

/// A test of one word of a phrase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WordTest {
    Is(String),
    Like(Pattern),
    /// A CJK query word: the record's word contains it.
    Contains(String),
}

impl WordTest {
    pub(crate) fn matches(&self, word: &str) -> bool {
        match self {
            WordTest::Is(w) => w == word,
            WordTest::Like(p) => p.matches(word),
            WordTest::Contains(w) => word.contains(w.as_str()),
        }
    }
}

impl<'c> Plan<'c> {
    /// Resolves `query` against `collection`, searching within `universe` (all records,
    /// or a language scope, labelled `scope`), and within `filter` when given (the cards
    /// of one expansion). With `expansions`, the records are cards, and a term on
    /// `expansion.<field>` that no card carries itself is the term `<field>` on these
    /// expansions, joined to the cards by their `expansion_id`.
    pub(crate) fn new(
        query: &Query<'_>,
        text: &'c str,
        collection: &'c Collection,
        universe: &'c RoaringBitmap,
        scope: Option<&str>,
        filter: Option<Postings<'c>>,
        expansions: Option<&'c Collection>,
    ) -> Result<Plan<'c>, PlanError> {
        let resolver = Resolver {
            collection,
            index: collection.index(),
            query: text,
            records: collection,
            context: None,
            expansions,
        };
        let body = match &query.expr {
            None => Node::All,
            Some(expr) => resolver.expr(expr)?,
        };
        // Without a scope or a filter the body is the whole plan (no wrapper AND to build).
        let root = if scope.is_none() && filter.is_none() {
            body
        } else {
            let mut all = Vec::with_capacity(3);
            if let Some(lang) = scope {
                all.push(sets(
                    [Postings::Bitmap(universe)],
                    Label::Scope(lang.to_string()),
                ));
            }
            if let Some(filter) = filter {
                all.push(sets([filter], Label::Filter));
            }
            all.push(body);
            Node::And(all)
        };
        let mut plan = Plan {
            root,
            collection,
            universe,
            query: text,
            bound: Vec::new(),
        };
        if let Some(expr) = &query.expr {
            resolver.bind(expr, None, &mut plan.bound)?;
        }
        normalize::normalize(&mut plan.root);
        share_found(&mut plan.root, &plan.bound);
        Ok(plan)
    }
}

/// Calls `each` with the terms at the top of `expr`: `expr` itself, or the items of an
/// `AND` (of `AND`s), not what is under `OR` or `NOT`. `NOT (NOT x)` is `x`, as `NOT NOT x`
/// is (the parser folds negations written one after the other).
fn top_level<'q, 'a>(expr: &'q Expr<'a>, each: &mut impl FnMut(&'q Term<'a>)) {
    match expr {
        Expr::And(items) => items.iter().for_each(|e| top_level(e, each)),
        Expr::Term(term) => each(term),
        Expr::Not(inner) => {
            if let Expr::Not(twice) = &**inner {
                top_level(twice, each);
            }
        }
        Expr::Or(_) => {}
    }
}

/// The fields (snake_case) that terms at the top of `expr` fix to one plain value: a word
/// without wildcards, a phrase, or a group of one such value.
fn fixed_fields(expr: &Expr<'_>) -> Vec<String> {
    let plain = |v: &Value<'_>| match v {
        Value::Word(w) => !w.value.contains(['*', '?']),
        Value::Phrase(_) => true,
        Value::Range(_) => false,
    };
    let mut fixed = Vec::new();
    top_level(expr, &mut |term| {
        let one = match &term.test {
            Test::Value(v) => plain(v),
            Test::Group(any) => {
                matches!(any.as_slice(), [all] if matches!(all.as_slice(), [v] if plain(v)))
            }
            Test::Compare(..) | Test::Nested(_) => false,
        };
        if let (true, Some(field)) = (one, &term.field) {
            fixed.push(crate::naming::snake_case(&field.value));
        }
    });
    fixed
}

/// Resolves the AST against one index.
struct Resolver<'c> {
    collection: &'c Collection,
    index: &'c Index,
    query: &'c str,
    /// The records' collection, which lists the arrays of objects.
    records: &'c Collection,
    /// Inside a nested query: the array-of-objects path (its number in the records'
    /// [`Collection::nested`]) whose elements `collection` holds.
    context: Option<usize>,
    /// The expansions that `expansion.*` terms are joined to (see [`Plan::new`]).
    expansions: Option<&'c Collection>,
}

impl<'c> Resolver<'c> {
    fn error(&self, kind: PlanErrorKind, span: Span) -> PlanError {
        PlanError::new(kind, span, self.query)
    }

    /// The parser bounds the depth of the tree (parentheses), so this recursion is bounded.
    fn expr(&self, expr: &Expr<'_>) -> Result<Node<'c>, PlanError> {
        Ok(match expr {
            Expr::And(items) => Node::And(self.exprs(items)?),
            Expr::Or(items) => Node::Or(self.exprs(items)?),
            Expr::Not(inner) => Node::Not(Box::new(self.expr(inner)?)),
            Expr::Term(term) => self.term(term)?,
        })
    }

    /// The nodes of `items`, each resolved straight into its place.
    fn exprs(&self, items: &[Expr<'_>]) -> Result<Vec<Node<'c>>, PlanError> {
        let mut nodes = Vec::with_capacity(items.len());
        for item in items {
            // A term's node comes straight from `term`, not through `expr`'s result too.
            let node = match item {
                Expr::Term(term) => self.term(term)?,
                other => self.expr(other)?,
            };
            nodes.push(node);
        }
        Ok(nodes)
    }

    fn term(&self, term: &Term<'_>) -> Result<Node<'c>, PlanError> {
        if term.field.as_ref().is_some_and(|f| f.value == EVERY_FIELD) {
            return self.every_record(term);
        }
        if let (Test::Nested(inner), Some(field)) = (&term.test, &term.field) {
            return self.nested(&field.value, field.span, inner, term.span);
        }
        if let (Some(inner), Some(field)) = (self.group_on_elements(term), &term.field) {
            return self.nested(&field.value, field.span, &inner, term.span);
        }
        if let (Some(context), Some(field)) = (self.context, &term.field) {
            // `prices.market>20` inside `variants:( )`: a field of the elements of an
            // array of objects inside these elements, which are indexed on their own;
            // the same as `prices:(market>20)`, any price matching.
            if let Some(head) = self.inner_array(context, &field.value) {
                let rest_span = Span::new(field.span.start + head.len() + 1, field.span.end);
                let inner = Term {
                    field: Some(Spanned::new(
                        Cow::Borrowed(&field.value[head.len() + 1..]),
                        rest_span,
                    )),
                    mode: term.mode,
                    test: term.test.clone(),
                    span: term.span,
                };
                let head_span = Span::new(field.span.start, field.span.start + head.len());
                return self.nested(head, head_span, &Expr::Term(inner), term.span);
            }
        }
        let (typed, span, bare) = match &term.field {
            Some(f) => (&*f.value, f.span, false),
            None => ("name", term.span, true),
        };
        let id = match Schema::new(self.index).value_field(typed) {
            Ok(id) => id,
            // The cards' own fields first, then an `expansion.` field they lack.
            Err(e) => match self.fields_under(&e, term, typed) {
                Some(children) => return self.any_field_exists(term, span, children),
                None => match self.joined(term, typed)? {
                    Some(node) => return Ok(node),
                    None => return Err(self.field_error(e, typed, span, bare)),
                },
            },
        };
        let field = self.index.field(id);
        let leaf = Leaf {
            id,
            field,
            typed,
            bare,
        };
        match &term.test {
            Test::Value(value) => self.value(&leaf, value, term.mode),
            Test::Compare(op, n) => {
                let (lower, upper) = op.to_range(n.value);
                let span = Span::new(n.span.start.saturating_sub(op.as_str().len()), n.span.end);
                self.range(&leaf, lower, upper, span)
            }
            // The parser gives a nested query its field.
            Test::Nested(_) => Ok(Node::Empty),
            Test::Group(alternatives) => {
                let mut any = Vec::with_capacity(alternatives.len());
                for all in alternatives {
                    let nodes = all
                        .iter()
                        .map(|v| self.value(&leaf, v, term.mode))
                        .collect::<Result<_, _>>()?;
                    any.push(Node::And(nodes));
                }
                Ok(Node::Or(any))
            }
        }
    }

    /// For `field:*` on a field of objects (`variants.prices:*`, `legalities:*`,
    /// `variants:(prices:*)`), which the schema refused with `e`: the fields directly
    /// under it, as this resolver names them. `None` for any other term.
    fn fields_under(
        &self,
        e: &crate::schema::FieldError,
        term: &Term<'_>,
        typed: &str,
    ) -> Option<Vec<String>> {
        if term.field.is_none() || !is_exists(&term.test) {
            return None;
        }
        let children = match &e.kind {
            FieldErrorKind::Object { children } => Some(children.clone()),
            FieldErrorKind::Unknown | FieldErrorKind::NotTopLevel => self.inner_array_fields(typed),
        };
        // An object whose fields hold only nulls is no field: the error says so.
        children.filter(|c| !c.is_empty())
    }

    /// `field:*` on a field of objects: the records where any field under it has a value
    /// (a card with at least one price, for `variants.prices:*`), as Elasticsearch's
    /// `exists` reads an object field. Each of `children` is tested with `*` in turn, so
    /// fields of objects under it are looked through too.
    fn any_field_exists(
        &self,
        term: &Term<'_>,
        span: Span,
        children: Vec<String>,
    ) -> Result<Node<'c>, PlanError> {
        let mut any = Vec::with_capacity(children.len());
        for child in children {
            let exists = Term {
                field: Some(Spanned::new(Cow::Owned(child), span)),
                mode: term.mode,
                test: term.test.clone(),
                span: term.span,
            };
            any.push(self.term(&exists)?);
        }
        Ok(Node::Or(any))
    }

    /// `*:*`, Lucene's every record: every record of the search (its scope and filter).
    /// Any other test on `*` is refused, as is `*:*` inside a nested query, where the
    /// records are elements.
    fn every_record(&self, term: &Term<'_>) -> Result<Node<'c>, PlanError> {
        let every = matches!(&term.test, Test::Value(Value::Word(w)) if w.value == "*");
        if every && self.context.is_none() {
            return Ok(Node::All);
        }
        Err(self.error(
            PlanErrorKind::EveryRecord {
                nested: self.context.is_some(),
            },
            term.span,
        ))
    }

    /// A term on an `expansion.<field>` that the cards do not carry (see [`Plan::new`]):
    /// the term on `<field>` run over the expansions now (they are few),
    /// and the cards whose `expansion_id` is one of those it matches. `None` when this is
    /// not such a term.
    fn joined(&self, term: &Term<'_>, typed: &str) -> Result<Option<Node<'c>>, PlanError> {
        let (Some(expansions), None, Some(field)) = (self.expansions, self.context, &term.field)
        else {
            return Ok(None);
        };
        let Some(own) = crate::naming::strip_field_prefix(typed, "expansion.") else {
            return Ok(None);
        };
        let on_expansion = Term {
            field: Some(Spanned::new(Cow::Borrowed(own), field.span)),
            mode: term.mode,
            test: term.test.clone(),
            span: term.span,
        };
        let resolver = Resolver {
            collection: expansions,
            index: expansions.index(),
            query: self.query,
            records: expansions,
            context: None,
            expansions: None,
        };
        let mut root = resolver
            .term(&on_expansion)
            .map_err(|e| self.error(joined_error(e.kind().clone()), e.span()))?;
        normalize::normalize(&mut root);
        let plan = Plan {
            root,
            collection: expansions,
            universe: expansions.all(),
            query: self.query,
            bound: Vec::new(),
        };
        let matched = plan.execute();
        // Each matched expansion's cards: by the folded index, unless another expansion's
        // id folds alike (`ab`, `AB`), when by `expansion_id` as written.
        let lists = matched.iter().filter_map(|e| {
            self.records
                .holding_id_of("expansion_id", &expansions.record_id(e), expansions)
        });
        Ok(Some(sets(lists, Label::Join(term.span))))
    }

    /// The error for a field `typed` that the schema refused with `e`.
    fn field_error(
        &self,
        e: crate::schema::FieldError,
        typed: &str,
        span: Span,
        bare: bool,
    ) -> PlanError {
        let children = match e.kind {
            FieldErrorKind::Object { children } => Some(children),
            // Inside a nested query: an array of objects of the elements.
            FieldErrorKind::Unknown | FieldErrorKind::NotTopLevel => self.inner_array_fields(typed),
        };
        let kind = match (children, bare, self.context) {
            (Some(children), _, _) => PlanErrorKind::ObjectField {
                field: typed.to_string(),
                children,
            },
            (None, true, Some(space)) => PlanErrorKind::BareValueInNested {
                path: self.records.nested()[space].path.to_string(),
                field: typed.to_string(),
            },
            (None, _, _) => PlanErrorKind::UnknownField {
                field: typed.to_string(),
                // A bare value searches `name`: suggesting a field for it would mislead.
                suggestion: if bare {
                    None
                } else {
                    e.suggestion
                        .or_else(|| self.inner_suggestion(typed))
                        .or_else(|| self.tail_suggestion(typed))
                },
                bare,
            },
        };
        self.error(kind, span)
    }

    /// The resolver of a nested query's subquery: on the elements of the array-of-objects
    /// path number `space`.
    fn inside(&self, space: usize) -> Resolver<'c> {
        let elements = &self.records.nested()[space].elements;
        Resolver {
            collection: elements,
            index: elements.index(),
            query: self.query,
            records: self.records,
            context: Some(space),
            expansions: None,
        }
    }

    /// The nested queries at the top of `expr` (see [`BoundNested`]), each with those at
    /// the top of its own subquery, bound `within` the enclosing one's elements.
    fn bind(
        &self,
        expr: &Expr<'_>,
        within: Option<&BoundNested<'c>>,
        out: &mut Vec<BoundNested<'c>>,
    ) -> Result<(), PlanError> {
        let mut nested = Vec::new();
        top_level(expr, &mut |term| match (&term.test, &term.field) {
            (Test::Nested(inner), Some(field)) => {
                nested.push((field, Cow::Borrowed(&**inner), term.span));
            }
            (_, Some(field)) => {
                if let Some(inner) = self.group_on_elements(term) {
                    nested.push((field, Cow::Owned(inner), term.span));
                }
            }
            _ => {}
        });
        for (field, inner, span) in nested {
            let inner = &*inner;
            let Node::Nested {
                space, plan, lift, ..
            } = self.nested(&field.value, field.span, inner, span)?
            else {
                continue;
            };
            let bound = BoundNested {
                space,
                plan: *plan,
                fixed: fixed_fields(inner),
                span,
                found: Found::default(),
                within: within.map(|outer| Within {
                    outer: Box::new(outer.clone()),
                    lift,
                }),
            };
            self.inside(space).bind(inner, Some(&bound), out)?;
            out.push(bound);
        }
        Ok(())
    }

    /// A grouped value on an array of objects that holds no values of its own
    /// (`variants:("Alt Art" OR Normal)`): the nested query of its bare values, which search
    /// the elements' `name`, as a bare value does everywhere. `None` for any other term,
    /// and for `field:(*)`, which is `field:*`.
    fn group_on_elements<'q>(&self, term: &Term<'q>) -> Option<Expr<'q>> {
        let (Test::Group(alternatives), Some(field)) = (&term.test, &term.field) else {
            return None;
        };
        if is_exists(&term.test)
            || self.nested_space(&field.value).is_none()
            || Schema::new(self.index).value_field(&field.value).is_ok()
        {
            return None;
        }
        Some(bare_values(alternatives, term.mode))
    }

    /// The array of objects `typed` names where this resolver is (relative to the
    /// elements inside a nested query), as written or in snake_case.
    fn nested_space(&self, typed: &str) -> Option<usize> {
        let prefix = match self.context {
            Some(c) => format!("{}.", self.records.nested()[c].path),
            None => String::new(),
        };
        self.records.nested_path_named(&prefix, typed)
    }

    /// `typed:( inner )`: `inner` planned on the elements of the array of objects `typed`
    /// (relative to the context), and the maps that lift its matches to this context.
    fn nested(
        &self,
        typed: &str,
        span: Span,
        inner: &Expr<'_>,
        whole: Span,
    ) -> Result<Node<'c>, PlanError> {
        let nested = self.records.nested();
        let Some(space) = self.nested_space(typed) else {
            let prefix = match self.context {
                Some(c) => format!("{}.", nested[c].path),
                None => String::new(),
            };
            return Err(self.not_nested(typed, span, &prefix));
        };
        let mut lift: SmallVec<[&'c [u32]; 2]> = SmallVec::new();
        let mut at = space;
        while Some(at) != self.context {
            match nested[at].parent {
                Some(parent) if self.context.is_some() => {
                    lift.push(&nested[at].parent_of);
                    at = parent;
                }
                _ => {
                    lift.push(&nested[at].record_of);
                    break;
                }
            }
        }
        let resolver = self.inside(space);
        let elements = resolver.collection;
        // Kept when it matches nothing (`currency:EUR` where no price is in euros), as
        // written.
        let mut root = resolver.expr(inner)?;
        normalize::normalize(&mut root);
        Ok(Node::Nested {
            space,
            path: &nested[space].path,
            plan: Box::new(Plan {
                root,
                collection: elements,
                universe: elements.all(),
                query: self.query,
                bound: Vec::new(),
            }),
            lift,
            span: whole,
            found: None,
        })
    }

    /// The leading segments of the dotted field `typed` (as written) that name an array
    /// of objects directly inside the elements of `context`, when there is one.
    fn inner_array<'t>(&self, context: usize, typed: &'t str) -> Option<&'t str> {
        let nested = self.records.nested();
        let prefix = &nested[context].path;
        typed.match_indices('.').find_map(|(dot, _)| {
            let head = &typed[..dot];
            self.records
                .nested_path_named(&format!("{prefix}."), head)
                .filter(|&space| nested[space].parent == Some(context) && !nested[space].mixed)
                .map(|_| head)
        })
    }

    /// Inside a nested query, when `typed` names an array of objects of its elements
    /// (`prices` in `variants:( )`, whose elements are indexed on their own): that array's
    /// fields, relative to the elements, for the error a term on it is.
    fn inner_array_fields(&self, typed: &str) -> Option<Vec<String>> {
        let context = self.context?;
        let prefix = &self.records.nested()[context].path;
        let space = self
            .records
            .nested_path_named(&format!("{prefix}."), typed)?;
        let whole = self.records.nested()[space].path.to_string();
        let kind = Schema::new(self.records.index())
            .value_field(&whole)
            .err()?
            .kind;
        let FieldErrorKind::Object { children } = kind else {
            return None;
        };
        let relative = format!("{prefix}.");
        Some(
            children
                .iter()
                .filter_map(|c| c.strip_prefix(&relative))
                .map(str::to_string)
                .collect(),
        )
    }

    /// Inside a nested query, the field of an array of objects of its elements (relative
    /// to the element: `prices.market`) closest to `typed`, which is none of theirs.
    fn inner_suggestion(&self, typed: &str) -> Option<String> {
        let context = self.context?;
        let nested = self.records.nested();
        let prefix = format!("{}.", nested[context].path);
        let inner: Vec<String> = nested
            .iter()
            .filter(|n| n.parent == Some(context))
            .flat_map(|n| {
                let head = n.path.strip_prefix(&prefix).unwrap_or(&n.path);
                let mut names = vec![head.to_string()];
                names.extend(
                    n.elements
                        .fields()
                        .filter(|f| f.holds_values)
                        .map(|f| format!("{head}.{}", f.path)),
                );
                names
            })
            .collect();
        crate::naming::suggest(typed, inner.iter().map(String::as_str)).map(str::to_string)
    }

    /// At the top level, the one field that `typed` is the tail of (`prices.market` →
    /// `variants.prices.market`), if exactly one is.
    fn tail_suggestion(&self, typed: &str) -> Option<String> {
        if self.context.is_some() {
            return None;
        }
        let fields = self.collection.fields().filter(|f| f.holds_values);
        crate::naming::by_tail(typed, fields.map(|f| f.path)).map(str::to_string)
    }

    /// The error for a nested query on `typed`, which is not an array of objects here.
    fn not_nested(&self, typed: &str, span: Span, prefix: &str) -> PlanError {
        let arrays: Vec<String> = self
            .records
            .nested()
            .iter()
            .filter_map(|n| n.path.strip_prefix(prefix))
            .map(str::to_string)
            .collect();
        let schema = Schema::new(self.index);
        let holds = match schema.value_field(typed) {
            Ok(_) => Holds::Values,
            Err(e) if matches!(e.kind, FieldErrorKind::Object { .. }) => Holds::Object,
            Err(_) => Holds::Nothing,
        };
        let suggestion = if holds == Holds::Nothing {
            crate::naming::suggest(typed, arrays.iter().map(String::as_str))
                .or_else(|| crate::naming::by_tail(typed, arrays.iter().map(String::as_str)))
                .map(str::to_string)
        } else {
            None
        };
        let kind = PlanErrorKind::NotNested {
            field: typed.to_string(),
            holds,
            arrays: arrays.into_boxed_slice(),
            suggestion,
        };
        self.error(kind, span)
    }

    fn value(
        &self,
        leaf: &Leaf<'c, '_>,
        value: &Value<'_>,
        mode: Mode,
    ) -> Result<Node<'c>, PlanError> {
        let (raw, span, quoted) = match value {
            Value::Range(r) => return self.range(leaf, r.lower, r.upper, r.span),
            Value::Word(w) => (&*w.value, w.span, false),
            Value::Phrase(p) => (&*p.value, p.span, true),
        };
        if raw == "*" && !quoted {
            return Ok(sets(
                [Postings::Bitmap(&leaf.field.exists)],
                Label::Term(span, leaf.id, LeafKind::Exists),
            ));
        }
        let text = self.text(leaf, raw, span, mode, !quoted && Pattern::has_wildcard(raw));
        // `field:value` on a JSON number matches when the value is the same number.
        let number = parse_number(raw)
            .and_then(|x| leaf.field.numbers().get(x))
            .map(|set| {
                blocks(
                    [set],
                    Label::Term(span, leaf.id, LeafKind::Number),
                    leaf.partition(true),
                )
            });
        Ok(match number {
            Some(number) => Node::Or(vec![text, number]),
            None => text,
        })
    }

    /// The string rule for one value: a keyword field's value matches it whole, a text
    /// field's words as consecutive words (`!field:value`: the whole value; `^field:value`:
    /// the whole value as written, unfolded).
    fn text(
        &self,
        leaf: &Leaf<'c, '_>,
        raw: &str,
        span: Span,
        mode: Mode,
        wildcard: bool,
    ) -> Node<'c> {
        let field = leaf.field;
        let mut buffer = [0; FOLD_BUFFER];
        let folded = fold_short(raw, &mut buffer);
        let label = |kind| Label::Term(span, leaf.id, kind);
        if mode == Mode::Literal {
            // The field's values as written, looked up (built on the first such query).
            let literal = self.collection.literal_values(leaf.id);
            let found: Vec<Postings<'c>> = if wildcard {
                let pattern = Pattern::new(raw);
                literal
                    .prefixed(&pattern.literal_prefix())
                    .filter(|&i| pattern.matches(literal.term(i)))
                    .map(|i| literal.postings(i))
                    .collect()
            } else {
                literal.get(raw).into_iter().collect()
            };
            return sets(found, label(LeafKind::Literal));
        }
        if field.kind() == FieldKind::Keyword {
            let partition = leaf.partition(false);
            return if wildcard {
                let pattern = Pattern::new(&folded);
                blocks(like(field, &pattern), label(LeafKind::Wildcard), partition)
            } else {
                let found = field.terms().find(&folded);
                blocks(
                    found.map(|i| field.terms().postings(i)),
                    label(LeafKind::Keyword),
                    partition.map(|p| Partition {
                        value: found.map(|i| i as u32),
                        ..p
                    }),
                )
            };
        }
        if mode == Mode::Exact {
            let (candidates, check) = if wildcard {
                let candidates = sets([Postings::Bitmap(&field.exists)], label(LeafKind::Exists));
                (candidates, Check::WholeLike(Pattern::new(&folded)))
            } else {
                let tests: Vec<WordTest> = words(&folded).map(word_test).collect();
                let candidates = if tests.is_empty() {
                    sets([Postings::Bitmap(&field.exists)], label(LeafKind::Exists))
                } else {
                    Node::And(
                        tests
                            .iter()
                            .map(|t| word_node(field, t, word_label(leaf.id, t)))
                            .collect(),
                    )
                };
                (candidates, Check::Whole(folded.into_owned()))
            };
            return Node::Verify {
                candidates: Box::new(candidates),
                field: leaf.id,
                check,
                span,
            };
        }
        if !wildcard {
            // One plain word (most text terms): looked up at once, with no tests to build.
            let mut found = words(&folded);
            if let (Some(word), None) = (found.next(), found.next()) {
                if !Pattern::has_wildcard(word) && !is_all_cjk(word) {
                    return sets(field.terms().get(word), label(LeafKind::Word));
                }
            }
        }
        let tests: Vec<WordTest> = if wildcard {
            pattern_words(&folded).map(word_test).collect()
        } else {
            words(&folded).map(word_test).collect()
        };
        match tests.len() {
            0 => Node::Empty,
            1 => word_node(field, &tests[0], label(word_kind(&tests[0]))),
            _ => self.phrase(leaf, tests, span),
        }
    }

    /// Words that must occur consecutively in one value. Values of up to six words have
    /// their word pairs indexed: a two-word phrase of plain words is one lookup there, a
    /// longer one the intersection of its pairs, checked. Longer values (and phrases with
    /// wildcard or CJK-substring words) are found from the words' postings and checked.
    fn phrase(&self, leaf: &Leaf<'c, '_>, tests: Vec<WordTest>, span: Span) -> Node<'c> {
        let field = leaf.field;
        let verify = |candidates: Vec<Node<'c>>, tests: Vec<WordTest>| Node::Verify {
            candidates: Box::new(Node::And(candidates)),
            field: leaf.id,
            check: Check::Phrase(tests),
            span,
        };
        let word_nodes = |tests: &[WordTest]| -> Vec<Node<'c>> {
            tests
                .iter()
                .map(|t| word_node(field, t, word_label(leaf.id, t)))
                .collect()
        };
        let plain: Option<Vec<&str>> = tests
            .iter()
            .map(|t| match t {
                WordTest::Is(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        let Some(plain) = plain else {
            let candidates = word_nodes(&tests);
            return verify(candidates, tests);
        };
        let pairs: Vec<Node<'c>> = plain
            .windows(2)
            .map(|two| {
                let pair = format!("{} {}", two[0], two[1]);
                sets(field.pairs().get(&pair), Label::Pair(leaf.id, pair))
            })
            .collect();
        let short = if pairs.len() == 1 {
            pairs.into_iter().next().expect("one pair")
        } else {
            verify(pairs, tests.clone())
        };
        if field.long_values().is_empty() {
            return short;
        }
        let mut candidates = word_nodes(&tests);
        candidates.push(sets(
            [Postings::Bitmap(field.long_values())],
            Label::Long(leaf.id),
        ));
        Node::Or(vec![short, verify(candidates, tests)])
    }

    fn range(
        &self,
        leaf: &Leaf<'c, '_>,
        lower: Bound,
        upper: Bound,
        span: Span,
    ) -> Result<Node<'c>, PlanError> {
        let field = leaf.field;
        if !field.has_numbers() {
            let kind = match self.context {
                // `attacks:(>=60)`: the group's values are bare values on the elements.
                Some(space) if leaf.bare => PlanErrorKind::BareRangeInNested {
                    path: self.records.nested()[space].path.to_string(),
                    field: leaf.typed.to_string(),
                },
                _ => PlanErrorKind::NotNumeric {
                    field: leaf.typed.to_string(),
                },
            };
            return Err(self.error(kind, span));
        }
        let (lower, upper) = if field.holds_dates() {
            year_bounds(lower, upper)
        } else {
            (lower, upper)
        };
        let (numbers, strings) = (field.numbers(), field.numeric_strings());
        let all: Vec<Postings<'c>> = numbers
            .range(lower, upper)
            .map(|i| numbers.postings(i))
            .chain(strings.range(lower, upper).map(|i| strings.postings(i)))
            .collect();
        Ok(blocks(
            all,
            Label::Term(span, leaf.id, LeafKind::Range),
            leaf.partition(true),
        ))
    }
}

/// Gives each node of a bound nested query (outside nested queries' own plans) the
/// [`Found`] of its [`BoundNested`], found by the term's span.
fn share_found(node: &mut Node<'_>, bound: &[BoundNested<'_>]) {
    match node {
        Node::And(items) | Node::Or(items) => {
            items.iter_mut().for_each(|item| share_found(item, bound));
        }
        Node::Not(inner) => share_found(inner, bound),
        Node::Verify { candidates, .. } => share_found(candidates, bound),
        Node::Nested { span, found, .. } => {
            if let Some(b) = bound.iter().find(|b| b.span == *span) {
                *found = Some(b.found.clone());
            }
        }
        Node::All | Node::Empty | Node::Sets { .. } => {}
    }
}

/// A resolved field.
struct Leaf<'c, 't> {
    id: FieldId,
    field: &'c Field,
    /// The field as typed, for messages.
    typed: &'t str,
    /// The term names no field: `typed` is the field a bare value searches.
    bare: bool,
}

impl Leaf<'_, '_> {
    /// The partition this field's keyword values (or numbers) make, if it is one.
    fn partition(&self, numeric: bool) -> Option<Partition> {
        self.field.single_valued().then_some(Partition {
            field: self.id,
            numeric,
            value: None,
        })
    }
}

/// An error about a field of the expansions, met planning a joined `expansion.*` term, in
/// the names the query used: every field it names is under `expansion.`.
fn joined_error(kind: PlanErrorKind) -> PlanErrorKind {
    let on = |name: String| format!("expansion.{name}");
    match kind {
        PlanErrorKind::UnknownField {
            field, suggestion, ..
        } => PlanErrorKind::UnknownField {
            field: on(field),
            suggestion: suggestion.map(on),
            bare: false,
        },
        PlanErrorKind::ObjectField { field, children } => PlanErrorKind::ObjectField {
            field: on(field),
            children: children.into_iter().map(on).collect(),
        },
        PlanErrorKind::NotNumeric { field } => PlanErrorKind::NotNumeric { field: on(field) },
        PlanErrorKind::BareValueInNested { path, field } => PlanErrorKind::BareValueInNested {
            path: on(path),
            field,
        },
        PlanErrorKind::BareRangeInNested { path, field } => PlanErrorKind::BareRangeInNested {
            path: on(path),
            field,
        },
        PlanErrorKind::EveryRecord { nested } => PlanErrorKind::EveryRecord { nested },
        PlanErrorKind::NotNested {
            field,
            holds,
            arrays,
            suggestion,
        } => PlanErrorKind::NotNested {
            field: on(field),
            holds,
            arrays: arrays.into_vec().into_iter().map(on).collect(),
            suggestion: suggestion.map(on),
        },
    }
}

/// `field:*`, or `field:(*)`: the field has a value.
fn is_exists(test: &Test<'_>) -> bool {
    let star = |v: &Value<'_>| matches!(v, Value::Word(w) if w.value == "*");
    match test {
        Test::Value(v) => star(v),
        Test::Group(alternatives) => {
            matches!(alternatives.as_slice(), [all] if matches!(all.as_slice(), [v] if star(v)))
        }
        _ => false,
    }
}

/// A group of values (an OR of AND-lists) as a query of bare values, each compared by
/// `mode`.
fn bare_values<'q>(alternatives: &[Vec<Value<'q>>], mode: Mode) -> Expr<'q> {
    let term = |value: &Value<'q>| {
        Expr::Term(Term {
            field: None,
            mode,
            test: Test::Value(value.clone()),
            span: value.span(),
        })
    };
    Expr::Or(
        alternatives
            .iter()
            .map(|all| Expr::And(all.iter().map(term).collect()))
            .collect(),
    )
}

/// A leaf: the union of `lists` (nothing when there are none).
fn sets<'c>(lists: impl IntoIterator<Item = Postings<'c>>, label: Label) -> Node<'c> {
    blocks(lists, label, None)
}

/// A leaf whose lists are blocks of `partition`, when given. Most leaves hold one list,
/// kept inline without a heap allocation.
fn blocks<'c>(
    lists: impl IntoIterator<Item = Postings<'c>>,
    label: Label,
    partition: Option<Partition>,
) -> Node<'c> {
    let mut lists = lists.into_iter();
    let Some(first) = lists.next() else {
        return Node::Empty;
    };
    // The usual single list goes inline at once, without the general collect.
    let mut sets = SmallVec::from_buf([first]);
    sets.extend(lists);
    Node::Sets {
        sets,
        label,
        partition,
    }
}

/// The longest value [`fold_short`] folds on the stack.
const FOLD_BUFFER: usize = 32;

/// [`fold`] of `raw`, in `buffer` when it is short ASCII (most values typed in `q`), so
/// that planning a term allocates nothing for it.
fn fold_short<'b>(raw: &'b str, buffer: &'b mut [u8; FOLD_BUFFER]) -> Cow<'b, str> {
    if raw.len() > FOLD_BUFFER || !raw.is_ascii() || !raw.bytes().any(|b| b.is_ascii_uppercase()) {
        return fold(raw);
    }
    let folded = &mut buffer[..raw.len()];
    folded.copy_from_slice(raw.as_bytes());
    folded.make_ascii_lowercase();
    Cow::Borrowed(std::str::from_utf8(folded).expect("ASCII is UTF-8"))
}

fn word_test(word: &str) -> WordTest {
    if Pattern::has_wildcard(word) {
        WordTest::Like(Pattern::new(word))
    } else if is_all_cjk(word) {
        WordTest::Contains(word.to_string())
    } else {
        WordTest::Is(word.to_string())
    }
}

/// The label of one word of a phrase.
fn word_label(field: FieldId, test: &WordTest) -> Label {
    let text = match test {
        WordTest::Is(w) | WordTest::Contains(w) => w.clone(),
        WordTest::Like(p) => p.as_text(),
    };
    Label::Word(field, text, word_kind(test))
}

fn word_kind(test: &WordTest) -> LeafKind {
    match test {
        WordTest::Is(_) => LeafKind::Word,
        WordTest::Like(_) => LeafKind::Wildcard,
        WordTest::Contains(_) => LeafKind::Contains,
    }
}

/// The records with a word passing `test`.
fn word_node<'c>(field: &'c Field, test: &WordTest, label: Label) -> Node<'c> {
    match test {
        WordTest::Is(w) => sets(field.terms().get(w), label),
        WordTest::Like(p) => sets(like(field, p), label),
        WordTest::Contains(w) => {
            let vocab = field.terms();
            let found: Vec<Postings<'c>> = vocab
                .iter()
                .filter(|(term, _)| term.starts_with(is_cjk) && term.contains(w.as_str()))
                .map(|(_, postings)| postings)
                .collect();
            sets(found, label)
        }
    }
}

/// The postings of every term matching `pattern`, scanning only from its literal prefix.
fn like<'c>(field: &'c Field, pattern: &Pattern) -> Vec<Postings<'c>> {
    let vocab = field.terms();
    vocab
        .prefixed(&pattern.literal_prefix())
        .filter(|&i| pattern.matches(vocab.term(i)))
        .map(|i| vocab.postings(i))
        .collect()
}

/// Range bounds on a field of dates with each bare year (`2020`) read as that year's span,
/// the way search engines round partial dates: `>=2020` from its first day, `>2020` after its
/// last, `<=2020` up to its last, `<2020` before its first.
fn year_bounds(lower: Bound, upper: Bound) -> (Bound, Bound) {
    let first = |y: u32| f64::from(y * 10_000 + 101);
    let last = |y: u32| f64::from(y * 10_000 + 1231);
    let lower = match lower {
        Bound::Inclusive(x) => year(x).map_or(lower, |y| Bound::Inclusive(first(y))),
        Bound::Exclusive(x) => year(x).map_or(lower, |y| Bound::Exclusive(last(y))),
        Bound::Unbounded => lower,
    };
    let upper = match upper {
        Bound::Inclusive(x) => year(x).map_or(upper, |y| Bound::Inclusive(last(y))),
        Bound::Exclusive(x) => year(x).map_or(upper, |y| Bound::Exclusive(first(y))),
        Bound::Unbounded => upper,
    };
    (lower, upper)
}

/// A query value that is a number (`120`, `-5`, `2.5`), for matching JSON numbers.
fn parse_number(raw: &str) -> Option<f64> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if !digits.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    let ok = !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if ok {
        raw.parse().ok().filter(|x: &f64| x.is_finite())
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
