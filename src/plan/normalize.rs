//! Normalising a plan: flatten nested `AND`/`OR`, fold `NOT NOT`, fold constants
//! (`AND` with nothing matching is nothing, `OR` with everything is everything), drop
//! repeated leaves, and unwrap single children.

use super::Node;

/// Normalises `node` (recursion is bounded by the parser's depth limit).
pub(crate) fn normalize(node: Node<'_>) -> Node<'_> {
    match node {
        Node::And(items) => {
            let mut out: Vec<Node<'_>> = Vec::with_capacity(items.len());
            for item in items {
                match normalize(item) {
                    Node::All => {}
                    Node::Empty => return Node::Empty,
                    Node::And(inner) => out.extend(inner),
                    other => push_unique(&mut out, other),
                }
            }
            single(out, Node::All, Node::And)
        }
        Node::Or(items) => {
            let mut out: Vec<Node<'_>> = Vec::with_capacity(items.len());
            for item in items {
                match normalize(item) {
                    Node::Empty => {}
                    Node::All => return Node::All,
                    Node::Or(inner) => out.extend(inner),
                    other => push_unique(&mut out, other),
                }
            }
            single(out, Node::Empty, Node::Or)
        }
        Node::Not(mut inner) => match normalize(std::mem::replace(&mut *inner, Node::Empty)) {
            Node::Not(x) => *x,
            Node::All => Node::Empty,
            Node::Empty => Node::All,
            other => {
                // The box is reused.
                *inner = other;
                Node::Not(inner)
            }
        },
        Node::Verify {
            candidates,
            field,
            check,
            span,
        } => match normalize(*candidates) {
            Node::Empty => Node::Empty,
            candidates => Node::Verify {
                candidates: Box::new(candidates),
                field,
                check,
                span,
            },
        },
        Node::Sets { sets, .. } if sets.is_empty() => Node::Empty,
        other => other,
    }
}

fn single<'c>(
    mut items: Vec<Node<'c>>,
    none: Node<'c>,
    many: fn(Vec<Node<'c>>) -> Node<'c>,
) -> Node<'c> {
    match items.len() {
        0 => none,
        1 => items.pop().expect("one item"),
        _ => many(items),
    }
}

/// Adds `node` unless an identical leaf (the same posting lists, or the NOT of them) is
/// already there.
fn push_unique<'c>(out: &mut Vec<Node<'c>>, node: Node<'c>) {
    if !out.iter().any(|n| same_leaf(n, &node)) {
        out.push(node);
    }
}

fn same_leaf(a: &Node<'_>, b: &Node<'_>) -> bool {
    match (a, b) {
        (Node::Sets { sets: x, .. }, Node::Sets { sets: y, .. }) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| p.same(q))
        }
        (Node::Not(x), Node::Not(y)) => same_leaf(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Label;
    use roaring::RoaringBitmap;
    use smallvec::smallvec;

    fn leaf(b: &RoaringBitmap) -> Node<'_> {
        Node::Sets {
            sets: smallvec![crate::index::Postings::Bitmap(b)],
            label: Label::Scope(String::new()),
            partition: None,
        }
    }

    fn shape(n: &Node<'_>) -> String {
        match n {
            Node::All => "ALL".into(),
            Node::Empty => "NONE".into(),
            Node::Sets { sets, .. } => format!("S{}", sets[0].len()),
            Node::Verify { .. } => "V".into(),
            Node::And(items) => format!(
                "AND({})",
                items.iter().map(shape).collect::<Vec<_>>().join(",")
            ),
            Node::Or(items) => format!(
                "OR({})",
                items.iter().map(shape).collect::<Vec<_>>().join(",")
            ),
            Node::Not(x) => format!("NOT({})", shape(x)),
            Node::Nested { .. } => "N".into(),
        }
    }

    #[test]
    fn flattens_folds_and_dedupes() {
        let a: RoaringBitmap = (0..1).collect();
        let b: RoaringBitmap = (0..2).collect();
        let c: RoaringBitmap = (0..3).collect();
        let n = |node| shape(&normalize(node));
        assert_eq!(
            n(Node::And(vec![
                leaf(&a),
                Node::And(vec![leaf(&b), leaf(&c)])
            ])),
            "AND(S1,S2,S3)"
        );
        assert_eq!(
            n(Node::Or(vec![Node::Or(vec![leaf(&a), leaf(&b)]), leaf(&c)])),
            "OR(S1,S2,S3)"
        );
        assert_eq!(n(Node::Not(Box::new(Node::Not(Box::new(leaf(&a)))))), "S1");
        assert_eq!(n(Node::And(vec![leaf(&a), Node::Empty])), "NONE");
        assert_eq!(n(Node::And(vec![leaf(&a), Node::All])), "S1");
        assert_eq!(n(Node::Or(vec![leaf(&a), Node::All])), "ALL");
        assert_eq!(n(Node::Or(vec![leaf(&a), Node::Empty])), "S1");
        assert_eq!(n(Node::Not(Box::new(Node::All))), "NONE");
        assert_eq!(n(Node::Not(Box::new(Node::Empty))), "ALL");
        assert_eq!(
            n(Node::And(vec![
                leaf(&a),
                leaf(&a),
                Node::Not(Box::new(leaf(&b))),
                Node::Not(Box::new(leaf(&b)))
            ])),
            "AND(S1,NOT(S2))"
        );
        assert_eq!(n(Node::And(vec![])), "ALL");
        assert_eq!(n(Node::Or(vec![])), "NONE");
        assert_eq!(
            n(Node::And(vec![
                Node::Or(vec![Node::Empty, leaf(&a)]),
                leaf(&b)
            ])),
            "AND(S1,S2)"
        );
    }
}
