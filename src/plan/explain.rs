//! `explain`: the plan as it will run, one node a line, children in execution order, each
//! with its estimated number of matches and cost.

use std::fmt::{self, Write};

use super::{Check, Label, LeafKind, Matches, Node, Plan};

impl LeafKind {
    fn name(self) -> &'static str {
        match self {
            LeafKind::Keyword => "keyword",
            LeafKind::Word => "word",
            LeafKind::Wildcard => "wildcard",
            LeafKind::Contains => "contains",
            LeafKind::Number => "number",
            LeafKind::Range => "range",
            LeafKind::Exists => "exists",
            LeafKind::Literal => "literal",
        }
    }
}

impl<'c> Plan<'c> {
    /// The plan as text: one node per line, indented by depth, `AND` children in the
    /// order they run, each line ending with `~matches` and `cost`.
    ///
    /// ```
    /// let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let plan = onepiece.explain(&cardex::SearchRequest::new("printings:PRB01 AND rarity_code:SR"))?;
    /// assert_eq!(plan, "\
    /// AND  ~3 cost 7
    ///   keyword rarity_code:SR  ~3 cost 3
    ///   keyword printings:PRB01  ~4 cost 4
    /// scan: a short list's ids tested one by one, no set built  2 match
    /// ");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// When the answer does not go through the sets of the tree, a last line says how it is
    /// found instead: a single term whose records are consecutive ids is a run, and an AND
    /// with a short run or list among its terms tests that one's ids against the others,
    /// a union of posting lists (a wildcard's words) is counted in a mask of bits over
    /// its span, and an AND of two terms held as bitmaps is counted without building their
    /// intersection (see [`Plan::matches`]).
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.write_node(&mut out, &self.root, 0)
            .expect("writing to a String");
        let skipped = match self.unbuilt() {
            Some(Matches::Run(first, last)) => Some(format!(
                "run: {} consecutive ids, no set built",
                last - first + 1
            )),
            Some(Matches::Mask(mask)) => Some(format!(
                "scan: a run's ids tested 64 at a time, no set built  {} match",
                mask.len()
            )),
            Some(Matches::Ids(ids)) => Some(format!(
                "scan: a short list's ids tested one by one, no set built  {} match",
                ids.len()
            )),
            Some(Matches::Dense(dense)) => Some(format!(
                "union: the lists' ids set in a mask of {} words, no set built  {} match",
                dense.words(),
                dense.len()
            )),
            _ => self.pair().map(|(a, b)| {
                let flat = self.pair_twins(a, b).is_some();
                format!(
                    "pair: two bitmaps counted{} and paged without building their intersection  {} match",
                    if flat { " on their flat twins" } else { "" },
                    self.pair_len(a, b)
                )
            }),
        };
        if let Some(line) = skipped {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    fn write_node(&self, out: &mut String, node: &Node<'c>, depth: usize) -> fmt::Result {
        let (est, cost) = self.estimate(node);
        let indent = "  ".repeat(depth);
        let field_path = |id| self.collection.index().field(id).path();
        let text = |span: crate::query::Span| self.query.get(span.start..span.end).unwrap_or("");
        match node {
            Node::All => writeln!(out, "{indent}ALL  ~{est} cost {cost}"),
            Node::Empty => writeln!(out, "{indent}NONE  ~0 cost 0"),
            Node::Sets { sets, label, .. } => {
                let lists = if sets.len() > 1 {
                    format!(" ({} lists)", sets.len())
                } else {
                    String::new()
                };
                match label {
                    Label::Scope(lang) => writeln!(
                        out,
                        "{indent}scope language_code:{lang}  ~{est} cost {cost}"
                    ),
                    Label::Filter => writeln!(out, "{indent}expansion's cards  ~{est} cost {cost}"),
                    Label::Pair(field, pair) => writeln!(
                        out,
                        "{indent}pair {}:\"{pair}\"  ~{est} cost {cost}",
                        field_path(*field)
                    ),
                    Label::Join(span) => writeln!(
                        out,
                        "{indent}join {}, expansions' cards{lists}  ~{est} cost {cost}",
                        text(*span)
                    ),
                    Label::Long(field) => writeln!(
                        out,
                        "{indent}long values of {}  ~{est} cost {cost}",
                        field_path(*field)
                    ),
                    Label::Word(field, word, kind) => writeln!(
                        out,
                        "{indent}{} {}:{word}{lists}  ~{est} cost {cost}",
                        kind.name(),
                        field_path(*field)
                    ),
                    Label::Term(span, field, kind) => {
                        let kind = kind.name();
                        writeln!(
                            out,
                            "{indent}{kind} {}:{}{lists}  ~{est} cost {cost}",
                            field_path(*field),
                            text(*span)
                        )
                    }
                }
            }
            Node::Verify {
                candidates,
                field,
                check,
                span,
            } => {
                let what = match check {
                    Check::Phrase(_) => "phrase",
                    Check::Whole(_) | Check::WholeLike(_) => "exact",
                };
                writeln!(
                    out,
                    "{indent}check {what} {}:{}  ~{est} cost {cost}",
                    field_path(*field),
                    text(*span)
                )?;
                self.write_node(out, candidates, depth + 1)
            }
            Node::And(items) => {
                writeln!(out, "{indent}AND  ~{est} cost {cost}")?;
                let (positive, negative) = self.and_order(items);
                for item in positive {
                    self.write_node(out, item, depth + 1)?;
                }
                for item in negative {
                    writeln!(out, "{indent}  NOT")?;
                    self.write_node(out, item, depth + 2)?;
                }
                Ok(())
            }
            Node::Or(items) => {
                writeln!(out, "{indent}OR  ~{est} cost {cost}")?;
                items
                    .iter()
                    .try_for_each(|item| self.write_node(out, item, depth + 1))
            }
            Node::Not(inner) => {
                writeln!(out, "{indent}NOT  ~{est} cost {cost}")?;
                self.write_node(out, inner, depth + 1)
            }
            Node::Nested {
                path, plan, span, ..
            } => {
                writeln!(
                    out,
                    "{indent}nested {path} ({} elements): {}  ~{est} cost {cost}",
                    plan.collection.len(),
                    text(*span)
                )?;
                plan.write_node(out, &plan.root, depth + 1)
            }
        }
    }
}
