"""Schemathesis hooks for cardex: how to make a `q` of format `cardex-query`.

The OpenAPI document gives `q` the format `cardex-query` (the grammar is the README's, not
one JSON Schema can say). Schema-valid requests need valid queries, so this strategy writes
them from the grammar: bare words, `name:` and `id:` terms (every catalog's cards and
expansions have both, and v2's cards and sets too), phrases, prefixes and wildcards,
`-` and `NOT`, `AND` and `OR`, and groups. The document's examples add queries taken from
the served data. Load it with SCHEMATHESIS_HOOKS=schemathesis_hooks (this folder on PYTHONPATH).
"""

import schemathesis
from hypothesis import strategies as st

KEYWORDS = {"and", "or", "not", "to"}

word = st.from_regex(r"\A[a-z][a-z0-9]{0,7}\Z").filter(lambda w: w not in KEYWORDS)

value = st.one_of(
    word,
    word.map(lambda w: w + "*"),
    st.lists(word, min_size=1, max_size=3).map(lambda ws: '"' + " ".join(ws) + '"'),
)

term = st.one_of(
    value,
    st.tuples(st.sampled_from(["name", "id"]), value).map(lambda t: f"{t[0]}:{t[1]}"),
)


def combine(inner):
    return st.one_of(
        inner.map(lambda q: "-" + q if not q.startswith("-") else q),
        inner.map(lambda q: "NOT " + q),
        st.tuples(inner, st.sampled_from([" AND ", " OR ", " "]), inner).map("".join),
        inner.map(lambda q: "(" + q + ")"),
    )


query = st.recursive(term, combine, max_leaves=6)

schemathesis.openapi.format("cardex-query", st.one_of(st.just(""), query))
