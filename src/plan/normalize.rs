//! Normalising a plan: flatten nested `AND`/`OR`, fold `NOT NOT`, fold constants
//! (`AND` with nothing matching is nothing, `OR` with everything is everything), drop
//! repeated leaves, and unwrap single children.

use super::Node;

/// Normalises `node` in place (recursion is bounded by the parser's depth limit). A node
/// that needs no change is not moved: most plans need none, and their nodes are large.
pub(crate) fn normalize(node: &mut Node<'_>) {
    match node {
        Node::And(items) => {
            if let Some(replacement) = normalize_list(items, true) {
                *node = replacement;
            }
        }
        Node::Or(items) => {
            if let Some(replacement) = normalize_list(items, false) {
                *node = replacement;
            }
        }
        Node::Not(inner) => {
            normalize(inner);
            match &mut **inner {
                Node::Not(x) => {
                    let x = std::mem::replace(&mut **x, Node::Empty);
                    *node = x;
                }
                Node::All => *node = Node::Empty,
                Node::Empty => *node = Node::All,
                _ => {}
            }
        }
        Node::Verify { candidates, .. } => {
            normalize(candidates);
            if matches!(**candidates, Node::Empty) {
                *node = Node::Empty;
            }
        }
        Node::Sets { sets, .. } if sets.is_empty() => *node = Node::Empty,
        _ => {}
    }
}

/// Normalises the children of an `AND` (`and`) or an `OR`: each child, then drops the
/// operator's unit (everything for `AND`, nothing for `OR`), answers its zero when a child
/// is one, flattens children of the same operator, drops repeated leaves, and unwraps a
/// single child. `Some` is the node that replaces the operator.
fn normalize_list<'c>(items: &mut Vec<Node<'c>>, and: bool) -> Option<Node<'c>> {
    let unit = || if and { Node::All } else { Node::Empty };
    let zero = || if and { Node::Empty } else { Node::All };
    let same_op = |n: &Node<'_>| matches!((n, and), (Node::And(_), true) | (Node::Or(_), false));
    let is_unit = |n: &Node<'_>| matches!((n, and), (Node::All, true) | (Node::Empty, false));
    let is_zero = |n: &Node<'_>| matches!((n, and), (Node::Empty, true) | (Node::All, false));
    let mut changes = false;
    for i in 0..items.len() {
        normalize(&mut items[i]);
        let item = &items[i];
        if is_zero(item) {
            return Some(zero());
        }
        changes = changes
            || is_unit(item)
            || same_op(item)
            || items[..i].iter().any(|n| same_leaf(n, item));
    }
    if changes {
        let children = std::mem::take(items);
        items.reserve(children.len());
        for child in children {
            if is_unit(&child) {
                continue;
            }
            if !same_op(&child) {
                push_unique(items, child);
            } else if let Node::And(inner) | Node::Or(inner) = child {
                items.extend(inner);
            }
        }
    }
    match items.len() {
        0 => Some(unit()),
        1 => items.pop(),
        _ => None,
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
        let n = |mut node| {
            normalize(&mut node);
            shape(&node)
        };
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
