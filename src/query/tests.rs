//! Parser tests: the canonical display of many queries, and every error message with its
//! caret, written out in full (snapshot style).

use super::*;

/// Parses and returns the canonical display.
#[track_caller]
fn p(q: &str) -> String {
    match parse(q) {
        Ok(query) => query.to_string(),
        Err(e) => panic!("{q:?} failed:\n{e}"),
    }
}

/// Parses, expecting an error, and returns its full rendering.
#[track_caller]
fn e(q: &str) -> String {
    match parse(q) {
        Ok(query) => panic!("{q:?} parsed as {query}"),
        Err(e) => e.to_string(),
    }
}

/// Parses, expecting an error, and returns its kind.
#[track_caller]
fn kind(q: &str) -> ParseErrorKind {
    parse(q).unwrap_err().kind().clone()
}

#[test]
fn spec_and_contract_examples() {
    assert_eq!(
        p("printings:PRB01 AND rarity_code:SR"),
        "printings:PRB01 AND rarity_code:SR"
    );
    assert_eq!(p(r#"rarity:"Super Rare""#), r#"rarity:"Super Rare""#);
    assert_eq!(p("hp:[100 TO *]"), "hp:[100 TO *]");
    assert_eq!(p("hp>=100"), "hp>=100");
    assert_eq!(p("attacks.name:Hypnosis"), "attacks.name:Hypnosis");
    assert_eq!(
        p("translation.en.name:charizard"),
        "translation.en.name:charizard"
    );
    assert_eq!(
        p("rarityCode:SR expansionId:OP01"),
        "rarityCode:SR AND expansionId:OP01"
    );
    assert_eq!(
        p("name:charizard (subtypes:mega OR subtypes:vmax)"),
        "name:charizard AND (subtypes:mega OR subtypes:vmax)"
    );
    assert_eq!(
        p("subtypes:mega -types:water"),
        "subtypes:mega AND NOT types:water"
    );
    assert_eq!(p("name:char*der"), "name:char*der");
    assert_eq!(p("!name:charizard"), "!name:charizard");
    assert_eq!(p("^subtypes:EX"), "^subtypes:EX");
    assert_eq!(
        p("^\"Charizard ex\" ^types:(Fire OR Water)"),
        "^\"Charizard ex\" AND ^types:(Fire OR Water)"
    );
    assert_eq!(
        p("national_pokedex_numbers:[1 TO 151]"),
        "national_pokedex_numbers:[1 TO 151]"
    );
    assert_eq!(p("hp:{100 TO 200}"), "hp:{100 TO 200}");
    assert_eq!(p("hp:[100 TO 200}"), "hp:[100 TO 200}");
    assert_eq!(p("id:(a OR b)"), "id:(a OR b)");
}

#[test]
fn canonical_display() {
    assert_eq!(
        p("printings:PRB01   rarity_code:SR"),
        "printings:PRB01 AND rarity_code:SR"
    );
    assert_eq!(p("  charizard  "), "charizard");
    assert_eq!(p("!charizard"), "!charizard");
    assert_eq!(p("a OR b c"), "a OR b AND c");
    assert_eq!(p("(a OR b) c"), "(a OR b) AND c");
    assert_eq!(p("a AND (b AND c)"), "a AND (b AND c)");
    assert_eq!(p("(a)"), "a");
    assert_eq!(p("((a OR b))"), "a OR b");
    assert_eq!(p("a OR (b OR c)"), "a OR (b OR c)");
    assert_eq!(p("-types:water"), "NOT types:water");
    assert_eq!(p("NOT types:water"), "NOT types:water");
    assert_eq!(p("NOT NOT types:water"), "types:water");
    assert_eq!(p("NOT -NOT types:water"), "NOT types:water");
    assert_eq!(p("-(a OR b)"), "NOT (a OR b)");
    assert_eq!(p("NOT (NOT a)"), "NOT (NOT a)");
    assert_eq!(p("NOT a b"), "NOT a AND b");
    assert_eq!(p("a AND NOT b OR c"), "a AND NOT b OR c");
    assert_eq!(p("a(b)"), "a AND b");
    assert_eq!(
        p("hp>100 hp<200 hp<=5 hp>=-1.5"),
        "hp>100 AND hp<200 AND hp<=5 AND hp>=-1.5"
    );
    assert_eq!(p("hp:[-5.50 TO 010]"), "hp:[-5.5 TO 10]");
    assert_eq!(p("hp:[ * TO * ]"), "hp:[* TO *]");
    assert_eq!(p("hp:{* TO 5]"), "hp:[* TO 5]");
    assert_eq!(
        p("types:(fire OR water grass)"),
        "types:(fire OR water AND grass)"
    );
    assert_eq!(p("types:( fire AND water )"), "types:(fire AND water)");
    assert_eq!(
        p(r#"!types:("fire" OR [1 TO 2])"#),
        r#"!types:("fire" OR [1 TO 2])"#
    );
    assert_eq!(p("-types:(fire OR water)"), "NOT types:(fire OR water)");
}

#[test]
fn keywords_only_in_upper_case_as_whole_tokens() {
    assert_eq!(
        p("ANDROID ORE NOTE TOP"),
        "ANDROID AND ORE AND NOTE AND TOP"
    );
    assert_eq!(
        p("charizard and blastoise"),
        "charizard AND and AND blastoise"
    );
    assert_eq!(p("a or b"), "a AND or AND b");
    assert_eq!(p("a AND(b)"), "a AND b");
    assert_eq!(p("NOT(a)"), "NOT a");
}

#[test]
fn words_phrases_and_punctuation() {
    assert_eq!(
        p(r#"name:"Boss's Orders (Ghetsis)""#),
        r#"name:"Boss's Orders (Ghetsis)""#
    );
    assert_eq!(p("name:Boss's"), "name:Boss's");
    assert_eq!(
        p(r#"name:"Pikachu & Zekrom-GX""#),
        r#"name:"Pikachu & Zekrom-GX""#
    );
    assert_eq!(p("name:Pikachu&Zekrom"), "name:Pikachu&Zekrom");
    assert_eq!(
        p(r#"name:"say \"hi\" \\ \x""#),
        r#"name:"say \"hi\" \\ \\x""#
    );
    assert_eq!(p("name:a:b"), "name:a:b");
    assert_eq!(p("hp:-5"), "hp:-5");
    assert_eq!(p("10:30"), "10:30");
    assert_eq!(p("name:リザードンex"), "name:リザードンex");
    assert_eq!(p("リザードン　ex"), "リザードン AND ex");
    assert_eq!(p(r#""charizard ex""#), r#""charizard ex""#);
    assert_eq!(p(r#"name:"""#), r#"name:"""#);
    assert_eq!(p(r#"name:"AND""#), r#"name:"AND""#);
    assert_eq!(p("a:.b"), "a:.b");
}

#[test]
fn field_names_are_dotted_segments() {
    /// The field of a one-term query, `None` when the text is a bare value.
    fn field(q: &str) -> Option<String> {
        let Some(Expr::Term(term)) = parse(q).unwrap().expr else {
            panic!("{q:?} is not one term")
        };
        term.field.map(|f| f.value.into_owned())
    }
    assert_eq!(field("_x.y1.Z_2:v").as_deref(), Some("_x.y1.Z_2"));
    assert_eq!(
        field("translation.en.name:v").as_deref(),
        Some("translation.en.name")
    );
    assert_eq!(field("hp>=5").as_deref(), Some("hp"));
    // Full-width forms are the ASCII ones, and so is a full-width colon after them.
    assert_eq!(field("ｓｅｔ．ｉｄ＿２:x").as_deref(), Some("set.id_2"));
    assert_eq!(field("ｎａｍｅ：x").as_deref(), Some("name"));
    assert_eq!(field("name：x").as_deref(), Some("name"));
    // Not field names, so the whole text is a bare value on `name`: other letters before
    // `:` are a card's words (`リザードン:ex`, `Pokémon:ex`). (An ASCII name with an empty
    // part, `a..b:c`, is a mistyped field: an error.)
    for bare in [
        "1a:b",
        "a-b:c",
        "１a:b",
        "．a:b",
        "é:x",
        "リザードン:ex",
        "名前.x:y",
        "pokémon:ex",
    ] {
        assert_eq!(field(bare), None, "{bare:?}");
    }
}

#[test]
fn text_is_borrowed_from_the_query_unless_unescaped() {
    use std::borrow::Cow;
    /// The value of a query that is one `name:` term.
    fn value(q: &str) -> Cow<'_, str> {
        let Some(Expr::Term(Term {
            field: Some(field),
            test: Test::Value(Value::Word(v) | Value::Phrase(v)),
            ..
        })) = parse(q).unwrap().expr
        else {
            panic!("{q:?} is not one field:value term")
        };
        assert!(matches!(field.value, Cow::Borrowed("name")), "{q:?}");
        v.value
    }
    assert!(matches!(
        value("name:リザードン"),
        Cow::Borrowed("リザードン")
    ));
    assert!(matches!(
        value(r#"name:"Boss's Orders""#),
        Cow::Borrowed("Boss's Orders")
    ));
    assert!(matches!(value(r#"name:"a \x""#), Cow::Borrowed(r"a \x")));
    // Escapes next to multi-byte characters: only the escapes are replaced.
    let unescaped = value(r#"name:"é\"ア\\ü\x\"""#);
    assert!(matches!(unescaped, Cow::Owned(_)));
    assert_eq!(unescaped, r#"é"ア\ü\x""#);
}

#[test]
fn spans_point_at_the_source() {
    let q = parse(r#"  rarity:"Super Rare" -hp>=10"#).unwrap();
    let Some(Expr::And(items)) = q.expr else {
        panic!()
    };
    let Expr::Term(t) = &items[0] else { panic!() };
    assert_eq!(t.span, Span::new(2, 21));
    assert_eq!(t.field.as_ref().unwrap().span, Span::new(2, 8));
    assert_eq!(
        t.test,
        Test::Value(Value::Phrase(Spanned::new(
            "Super Rare".into(),
            Span::default()
        )))
    );
    let Test::Value(v) = &t.test else { panic!() };
    assert_eq!(v.span(), Span::new(9, 21));
    let Expr::Not(inner) = &items[1] else {
        panic!()
    };
    let Expr::Term(t) = &**inner else { panic!() };
    assert_eq!(t.span, Span::new(23, 29));
    let Test::Compare(CompareOp::Ge, n) = &t.test else {
        panic!()
    };
    assert_eq!((n.value, n.span), (10.0, Span::new(27, 29)));
}

#[test]
fn empty_query_matches_everything() {
    assert!(parse("").unwrap().is_empty());
    assert!(parse(" \t\n ").unwrap().is_empty());
    assert_eq!(p(""), "");
}

#[test]
fn error_messages() {
    assert_eq!(
        e("printings:OP01 AND rarity_code:"),
        "\
expected a value after `rarity_code:`, found end of input
printings:OP01 AND rarity_code:
                               ^"
    );
    assert_eq!(
        e("rarity_code: SR"),
        "\
expected a value after `rarity_code:`, found whitespace
rarity_code: SR
            ^"
    );
    assert_eq!(
        e("name:\"charizard"),
        "\
unclosed quote: expected a closing `\"` for the phrase that starts here
name:\"charizard
     ^^^^^^^^^^"
    );
    assert_eq!(
        e("(a OR b"),
        "\
expected `)` to close the group that opens here
(a OR b
^"
    );
    assert_eq!(
        e("a OR b)"),
        "\
found `)` without a matching `(`
a OR b)
      ^"
    );
    assert_eq!(
        e("a ( ) b"),
        "\
empty group: expected a term inside `( )`
a ( ) b
  ^^^"
    );
    assert_eq!(
        e("types:()"),
        "\
empty group: expected a value inside `types:( )`
types:()
      ^^"
    );
    assert_eq!(
        e("name:pikachu AND"),
        "\
expected a term after `AND`, found end of input
name:pikachu AND
                ^"
    );
    assert_eq!(
        e("a AND OR b"),
        "\
expected a term after `AND`, found keyword `OR`
a AND OR b
      ^^"
    );
    assert_eq!(
        e("OR b"),
        "\
expected a term, found keyword `OR`
OR b
^^"
    );
    assert_eq!(
        e("a OR"),
        "\
expected a term after `OR`, found end of input
a OR
    ^"
    );
    assert_eq!(
        e("NOT"),
        "\
expected a term after `NOT`, found end of input
NOT
   ^"
    );
    assert_eq!(
        e("a - b"),
        "\
expected a term after `-`, found whitespace
a - b
   ^"
    );
    assert_eq!(
        e("(a AND )"),
        "\
expected a term after `AND`, found `)`
(a AND )
       ^"
    );
    assert_eq!(
        e("! x"),
        "\
expected a term after `!`, found whitespace
! x
 ^"
    );
    assert_eq!(
        e("hp>=high"),
        "\
expected a number after `hp>=`, found `high` (to search for it as text, quote it: `\"hp>=high\"`)
hp>=high
    ^^^^"
    );
    // A grouped word with a comparison operator makes the group a nested query: the
    // message says how to search for the word.
    assert_eq!(
        e("name:(pika>chu OR raichu)"),
        "\
expected a number after `pika>`, found `chu` (to search for it as text, quote it: `\"pika>chu\"`)
name:(pika>chu OR raichu)
           ^^^"
    );
    // A quoted number gets no advice to quote it.
    assert_eq!(
        e(r#"hp>"10""#),
        "\
expected a number after `hp>`, found `\"10\"`
hp>\"10\"
   ^^^^"
    );
    assert_eq!(
        e("hp> 10"),
        "\
expected a number after `hp>`, found whitespace
hp> 10
   ^"
    );
    assert_eq!(
        e("hp:[a TO 5]"),
        "\
expected a number after `[`, found `a`
hp:[a TO 5]
    ^"
    );
    assert_eq!(
        e("hp:[1 TO ]"),
        "\
expected a number after `TO`, found `]`
hp:[1 TO ]
         ^"
    );
    assert_eq!(
        e("hp:[1 5]"),
        "\
expected `TO` between the bounds of the range, found `5]`
hp:[1 5]
      ^^"
    );
    assert_eq!(
        e("hp:[1TO 5]"),
        "\
expected whitespace before `TO` in the range
hp:[1TO 5]
     ^^"
    );
    assert_eq!(
        e("hp:[1 TO 5"),
        "\
expected `]` or `}` to close the range, found end of input
hp:[1 TO 5
          ^"
    );
    assert_eq!(
        e("name:AND"),
        "\
`AND` is a keyword, not a value; to search for the word, quote it: `\"AND\"`
name:AND
     ^^^"
    );
    assert_eq!(
        e("TO"),
        "\
`TO` is a keyword, not a value; to search for the word, quote it: `\"TO\"`
TO
^^"
    );
    assert_eq!(
        e("name:\"a\"b"),
        "\
expected whitespace or `)` after the value, found `b`
name:\"a\"b
        ^"
    );
    assert_eq!(
        e("hp>=10x"),
        "\
expected whitespace or `)` after the value, found `x`
hp>=10x
      ^"
    );
    assert_eq!(
        e("types:((a))"),
        "\
expected a value, found `(`: values inside `field:( )` cannot be grouped further (a query on the elements of an array of objects names their fields: `attacks:(name:x AND damage>=60)`)
types:((a))
       ^"
    );
    assert_eq!(
        e("types:(fire OR)"),
        "\
expected a value after `OR` in a grouped value, found `)`
types:(fire OR)
              ^"
    );
    assert_eq!(
        e("types:(OR fire)"),
        "\
expected a value after `(` in a grouped value, found keyword `OR`
types:(OR fire)
       ^^"
    );
    assert_eq!(
        e("types:(fire AND OR water)"),
        "\
expected a value after `AND` in a grouped value, found keyword `OR`
types:(fire AND OR water)
                ^^"
    );
    assert_eq!(
        e("types:(fire water"),
        "\
expected `)` to close the group that opens here
types:(fire water
      ^"
    );
}

#[test]
fn error_positions_count_characters() {
    let err = parse("name:🐻 AND").unwrap_err();
    assert_eq!((err.offset(), err.column()), (13, 11));
    // The bear is two columns wide in a terminal, so the caret sits 11 columns in.
    assert_eq!(
        err.to_string(),
        "\
expected a term after `AND`, found end of input
name:🐻 AND
           ^"
    );
    let err = parse("リザ name:\"ex").unwrap_err();
    assert_eq!((err.offset(), err.column()), (12, 9));
    assert_eq!(
        err.to_string(),
        "\
unclosed quote: expected a closing `\"` for the phrase that starts here
リザ name:\"ex
          ^^^"
    );
}

#[test]
fn limits() {
    let long = "a ".repeat(4200);
    assert_eq!(
        kind(&long),
        ParseErrorKind::QueryTooLong {
            len: 8400,
            max: 5120
        }
    );
    let err = parse(&long).unwrap_err();
    assert_eq!(err.offset(), 5120);
    assert!(parse(&"a".repeat(5120)).is_ok());

    let deep = format!("{}a{}", "(".repeat(33), ")".repeat(33));
    assert_eq!(kind(&deep), ParseErrorKind::DepthLimitExceeded { max: 32 });
    assert_eq!(parse(&deep).unwrap_err().offset(), 32);
    let ok = format!("{}a{}", "(".repeat(32), ")".repeat(32));
    assert_eq!(p(&ok), "a");

    let many: Vec<String> = (0..513).map(|i| format!("t{i}")).collect();
    let err = parse(&many.join(" ")).unwrap_err();
    assert_eq!(err.kind(), &ParseErrorKind::TooManyTerms { max: 512 });
    assert_eq!(&err.query()[err.offset()..err.span().end], "t512");
    assert!(parse(&many[..512].join(" ")).is_ok());
    // A grouped value counts once.
    let group = format!("id:({})", many.join(" OR "));
    assert!(parse(&group).is_ok());
}

#[test]
fn long_not_chains_are_read_without_recursion() {
    let q = format!("{}a", "NOT ".repeat(500));
    assert_eq!(p(&q), "a");
    let q = format!("{}a", "-".repeat(1001));
    assert_eq!(p(&q), "NOT a");
}

#[test]
fn no_internal_errors_on_odd_input() {
    for q in [
        "(",
        ")",
        "\"",
        "[",
        "{",
        "!",
        "-",
        ":",
        "a:",
        ":a",
        "a::",
        "((",
        "))",
        "!!",
        "--",
        "a AND AND",
        "hp:[",
        "hp:[1",
        "hp:[1 TO",
        "hp:[* TO *",
        "x:(",
        "x:(a",
        "x:(a OR",
        "x:)",
        "a\u{3000}b",
        "\u{0}",
        "NOT NOT",
        "!-a",
        "-!a",
        "!(a)",
        "a.b.:c",
        "hp<",
        "hp<=",
        "TO:x",
        "x:\"\\",
        "x:\"\\\"",
        "x:[1 TO 2]]",
        "x:[1 TO 2]x",
        "x:(a)b",
        "OR",
        "AND",
        "(OR)",
    ] {
        if let Err(err) = parse(q) {
            assert_ne!(err.kind(), &ParseErrorKind::Internal, "{q:?}: {err}");
            let _ = err.to_string();
        }
    }
}

#[test]
fn display_round_trips() {
    for q in [
        "printings:PRB01 AND rarity_code:SR",
        "a OR b c -(d OR e) NOT f",
        r#"!name:"a \"b\" \\c" hp:{1 TO *] x:(a b OR "c d" OR [1 TO 2])"#,
        "((a OR b) (c OR (d e)))",
        "NOT (NOT a)",
        "-x:(a OR b) !y:z",
        "a.b.c:[-1.25 TO 3] hp<-0.5",
    ] {
        let first = parse(q).unwrap();
        let shown = first.to_string();
        let again = parse(&shown).unwrap();
        assert_eq!(first, again, "{q}");
    }
}

#[test]
fn display_near_the_length_limit_can_exceed_it() {
    // Found by the `roundtrip` fuzz target: 400 implicit ANDs display with explicit ones.
    let q = "a ".repeat(120);
    let query = parse(&q).unwrap();
    let shown = query.to_string();
    assert!(shown.len() > q.len());
    assert_eq!(
        parser::parse_with_max_len(&shown, usize::MAX).unwrap(),
        query
    );
    let near_limit = format!("{}{}", "ab ".repeat(480), "x".repeat(2600));
    assert!(near_limit.len() <= MAX_QUERY_BYTES);
    let long_display = parse(&near_limit).unwrap().to_string();
    assert!(long_display.len() > MAX_QUERY_BYTES);
    assert!(matches!(
        parse(&long_display).unwrap_err().kind(),
        ParseErrorKind::QueryTooLong { .. }
    ));
    crate::fuzzing::check_roundtrip(&near_limit);
}

#[test]
fn a_prefixed_quote_in_a_group_is_refused_where_it_would_read_two_ways() {
    // Outside a group `!"a"` is the exact phrase `a`; inside one it would be a word, and
    // the lookahead that tells a group from a nested query could not read it both ways.
    assert_eq!(
        e("rarity:(!\"SR\" OR SEC)"),
        "\
`!` cannot start a value inside `rarity:( )`: it applies to a whole term; write `!` before `rarity:( )` for the whole group, or the value as a term of its own beside the group; quote the value to search for the character
rarity:(!\"SR\" OR SEC)
        ^"
    );
    assert!(matches!(
        kind("a:(x OR --^\"y\")"),
        ParseErrorKind::PrefixedGroupValue { prefix: "-", .. }
    ));
    // Before a word too: taken as part of it, `types:(^Fire)` would silently find nothing
    // and `name:(!pikachu)` what `name:(pikachu)` finds.
    for (q, prefix) in [
        ("a:(x OR -y)", "-"),
        ("a:(!y)", "!"),
        ("types:(fire ^water)", "^"),
        ("a:(!!\"z)", "!"),
        ("a:(-)", "-"),
    ] {
        assert!(
            matches!(kind(q), ParseErrorKind::PrefixedGroupValue { prefix: p, .. } if p == prefix),
            "{q}"
        );
    }
    // Before a parenthesis that is no group, a prefix says where it goes.
    for (q, prefix) in [("!(name:x)", "!"), ("a AND ^(b OR c)", "^")] {
        assert!(
            matches!(kind(q), ParseErrorKind::PrefixedParenthesis { prefix: p } if p == prefix),
            "{q}"
        );
    }
    // A negative number is a value; other text after `-` is not one.
    assert_eq!(
        p("hp:(-10 OR -0.5 OR -.5 OR 20)"),
        "hp:(-10 OR -0.5 OR -.5 OR 20)"
    );
    for q in [
        "hp:(--10)",
        "hp:(-!10)",
        "name:(-.hack)",
        "name:(-1abc)",
        "hp:(-1.2.3)",
        "hp:(-.)",
    ] {
        assert!(
            matches!(
                kind(q),
                ParseErrorKind::PrefixedGroupValue { prefix: "-", .. }
            ),
            "{q}"
        );
    }
}

#[test]
fn the_nested_lookahead_reads_prefixes_as_the_term_parser_does() {
    // The lookahead must not read `!"` as a phrase opening and skip past the group's `)`
    // to a later quote, finding the `A<0` behind it: the group is refused at its prefix,
    // as the term parser refuses it.
    let q = "(a:! OR A:(A:(!!\"))) AND (_:\"é\" AND A<0)";
    assert!(matches!(
        kind(q),
        ParseErrorKind::PrefixedGroupValue { prefix: "!", .. }
    ));
    // `!!x:1` is the exact word `!x:1`, not a term with a field: a group, refused at its
    // prefix.
    assert!(matches!(
        kind("a:(!!x:1)"),
        ParseErrorKind::PrefixedGroupValue { prefix: "!", .. }
    ));
    // After `-` and one `!` or `^` a quote opens a phrase, and a field term after it
    // makes a nested query.
    assert_eq!(
        p("attacks:(-!\"fire (burst) x:1\" AND damage>=60)"),
        "attacks:(NOT !\"fire (burst) x:1\" AND damage>=60)"
    );
}

/// What the productions alone make of `q` (the one-pass path skipped), spans included; a
/// blank `q` is the query of everything, as `parse` has it before either.
fn by_productions(q: &str) -> String {
    let start = parser::ws(q);
    if start.is_empty() {
        return format!("{:?}", Ok::<_, ParseError>(None::<Expr<'_>>));
    }
    format!(
        "{:?}",
        parser::productions(q, start).map(|query| query.expr)
    )
}

/// Whether the one-pass path, when it answers, and `parse` both give the productions' tree
/// of `q`, spans included.
fn one_pass_agrees(q: &str) -> Result<(), proptest::test_runner::TestCaseError> {
    let productions = by_productions(q);
    if let Some(expr) = parser::plain_query(q) {
        proptest::prop_assert_eq!(
            format!("{:?}", Ok::<_, ParseError>(Some(expr))),
            productions.clone()
        );
    }
    proptest::prop_assert_eq!(
        format!("{:?}", parse(q).map(|query| query.expr)),
        productions
    );
    Ok(())
}

/// Queries of the plain shape and of its near misses: each piece is a plain one four
/// times in five, else one the grammar treats specially (keywords, prefixes, quotes,
/// ranges, parentheses, comparisons, Unicode whitespace and letters, malformed names).
fn near_plain_query() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    fn piece(plain: Vec<&'static str>, odd: Vec<&'static str>) -> BoxedStrategy<&'static str> {
        prop_oneof![4 => prop::sample::select(plain), 1 => prop::sample::select(odd)].boxed()
    }
    let field = piece(
        vec![
            "rarity_code",
            "printings",
            "attacks.name",
            "a",
            "_x",
            "ANDx",
            "OR_",
            "TO1",
        ],
        vec!["AND", "OR", "NOT", "TO", "a.", "a..b", "1a", ""],
    );
    let colon = piece(vec![":"], vec![">=", "<", "", "::"]);
    let value = piece(
        vec![
            "SR",
            "PRB01",
            "x",
            "-5",
            "*",
            "char*",
            "a:b",
            "3.5",
            "2024/01/02",
            "!x",
            "ANDx",
            "\"q r\"",
            "\"Pokémon ex\"",
            "\"\"",
            "\"a OR b\"",
        ],
        vec![
            "AND",
            "OR",
            "NOT",
            "TO",
            "\"q",
            "\"a\\\"b\"",
            "\"a\\b\"",
            "\"a\\\\b\"",
            "\"a\\\\\"",
            "\"x\"y",
            "\"x\"(",
            "[1 TO 2]",
            "{1 TO *]",
            "(x OR y)",
            "(x:y)",
            "é",
            "ｘ",
            "x)",
            "x(",
            "^",
            "",
        ],
    );
    let prefix = piece(
        vec!["", "", "", "-", "NOT ", "NOT\t\t"],
        vec![
            "!",
            "^",
            "(",
            "\"",
            "--",
            "NOT",
            "NOT NOT ",
            "- ",
            "NOT(",
            "-NOT ",
            "NOT\u{3000}",
        ],
    );
    let separator = piece(
        vec![
            " ", "  ", "\t", " AND ", "\nAND\r", " AND", "AND ", " OR ", " OR", "\tOR\t",
        ],
        vec![
            " NOT ", " ORx", "OR ", "\u{3000}", "\x0b", " AND\x0b", "", ") ", " ( ",
        ],
    );
    let term = (prefix, field, colon, value).prop_map(|(p, f, c, v)| format!("{p}{f}{c}{v}"));
    (
        piece(vec!["", " "], vec!["\u{a0}", "("]),
        prop::collection::vec((term, separator), 1..6),
        piece(vec!["", " ", "\t"], vec![")", "\u{3000}"]),
    )
        .prop_map(|(lead, parts, tail)| {
            let mut q = lead.to_string();
            for (i, (term, sep)) in parts.iter().enumerate() {
                if i > 0 {
                    q.push_str(sep);
                }
                q.push_str(term);
            }
            q.push_str(tail);
            q
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]

    /// When the one-pass reading of a plain query answers, its tree is the
    /// productions' tree, spans included; when it does not, `parse` still answers as the
    /// productions do.
    #[test]
    fn the_plain_query_path_builds_the_productions_tree(q in near_plain_query()) {
        one_pass_agrees(&q)?;
    }

    /// The same on any text (printable characters of any script, and ASCII controls).
    #[test]
    fn the_plain_query_path_agrees_on_any_text(q in "[\\PC\t\n\x0b ]{0,40}") {
        one_pass_agrees(&q)?;
    }
}

#[test]
fn plain_queries_take_the_one_pass_path() {
    // The path is taken where it should be (the property above only checks agreement).
    for q in [
        "rarity_code:SR",
        "printings:PRB01 AND rarity_code:SR",
        "  expansion_id:s10\trarity_code:SR  ",
        "a:b:c AND:x attacks.name:x",
        "a:b ANDc:d",
        "expansion_id:s10 AND NOT rarity_code:C",
        "-a:b NOT:x NOTc:d NOT\x0be:f",
        "rarity_code:SR OR rarity_code:SEC OR -rarity_code:UR",
        "attacks.name:\"flame burst\" NOT name:\"Pokémon ex\" x:\"\"",
    ] {
        assert!(parser::plain_query(q).is_some(), "{q:?}");
        one_pass_agrees(q).unwrap();
    }
    for q in [
        "name:\"a\\\"b\"",
        "name:\"a\\b\"",
        "name:\"x\"y",
        "name:\"open",
        "!name:\"x\"",
        "--rarity_code:C",
        "NOT NOT a:b",
        "- a:b",
        "a:x OR b:y c:d",
        "a:x b:y OR c:d",
        "hp>=100",
        "pikachu",
        "a:x\u{3000}b:y",
        "a:AND",
    ] {
        assert!(parser::plain_query(q).is_none(), "{q:?}");
    }
    // More terms than the limit go to the productions, which refuse them.
    let many = vec!["a:b"; MAX_TERMS + 1].join(" ");
    assert!(parser::plain_query(&many).is_none());
    assert!(parse(&many).is_err());
}

#[test]
fn a_comparison_with_a_bad_number_makes_a_nested_query_and_says_so() {
    // Read as a group of one word, the planner would say the array holds objects, hiding
    // the bad number.
    assert_eq!(
        e("variants.prices:(market>=abc)"),
        "\
expected a number after `market>=`, found `abc` (to search for it as text, quote it: `\"market>=abc\"`)
variants.prices:(market>=abc)
                         ^^^"
    );
    assert!(matches!(
        kind("attacks:(damage<x OR name:a)"),
        ParseErrorKind::ExpectedNumber { .. }
    ));
    // A name and an operator make a comparison, as outside parentheses.
    assert_eq!(p("a:(b>=1)"), "a:(b>=1)");
    assert!(matches!(
        kind("name:(x>y)"),
        ParseErrorKind::ExpectedNumber { .. }
    ));
    // An operator with nothing after it, or a space, is a comparison without its number,
    // as outside parentheses; a quoted value is a value.
    assert!(matches!(
        kind("a:(x> OR y)"),
        ParseErrorKind::ExpectedNumber { ref after, found: Found::Whitespace } if after == "x>"
    ));
    assert_eq!(p("a:(\"x>\" OR y)"), "a:(\"x>\" OR y)");
    assert_eq!(p("a:(\"x>y\")"), "a:(\"x>y\")");
}

#[test]
fn a_comparison_may_be_written_after_the_colon() {
    // Lucene's and Elasticsearch's `field:>n`: the comparison `field>n`, not the word `>n`.
    assert_eq!(p("hp:>100"), "hp>100");
    assert_eq!(p("a:<=-1.5 b:>=2020/01/01"), "a<=-1.5 AND b>=20200101");
    assert_eq!(p("attacks:(damage:>60)"), "attacks:(damage>60)");
    assert_eq!(
        e("hp:>abc"),
        "\
expected a number after `hp:>`, found `abc` (to search for it as text, quote it: `hp:\">abc\"`)
hp:>abc
    ^^^"
    );
    assert!(matches!(
        kind("!hp:>5"),
        ParseErrorKind::PrefixedComparison { prefix: "!" }
    ));
    // Quoted, it is a value.
    assert_eq!(p("name:\">100\""), "name:\">100\"");
    // In a group of values, each comparison is its range (Elasticsearch's
    // `age:(>=10 AND <20)`).
    assert_eq!(p("hp:(>=100 AND <200)"), "hp:([100 TO *] AND [* TO 200})");
    assert_eq!(p("hp:(>1 OR 5)"), "hp:({1 TO *] OR 5)");
    assert!(matches!(
        kind("hp:(>abc)"),
        ParseErrorKind::ExpectedNumber { .. }
    ));
}

#[test]
fn backslash_escapes_make_a_word_literal() {
    // Lucene's escapes: the word is the literal value it would be quoted.
    assert_eq!(p("id:ex10-\\?"), "id:\"ex10-?\"");
    assert_eq!(p("id:base1\\-4"), "id:\"base1-4\"");
    assert_eq!(p("name:\\*"), "name:\"*\"");
    // An escaped space or parenthesis stays in the word.
    assert_eq!(
        p("name:charizard\\ ex rarity:x"),
        "name:\"charizard ex\" AND rarity:x"
    );
    assert_eq!(p("id:x\\(1\\)"), "id:\"x(1)\"");
    assert_eq!(p("a\\\\b"), "\"a\\\\b\"");
    assert_eq!(p("types:(fire\\! OR water)"), "types:(\"fire!\" OR water)");
    assert_eq!(
        e("id:abc\\"),
        "\
`\\` escapes the character after it, and nothing follows it here; write `\\\\` for a backslash
id:abc\\
      ^"
    );
    assert!(matches!(
        kind("name:char\\-*"),
        ParseErrorKind::EscapeWithWildcard
    ));
    // Quoted, a backslash is literal but before `\"` and `\\`, as before (and displayed
    // escaped).
    assert_eq!(p("name:\"a\\b\""), "name:\"a\\\\b\"");
}

#[test]
fn every_record_round_trips_in_each_form() {
    // `*` takes a value, a comparison or a group like a field, and prints back so.
    for q in [
        "*:*",
        "!*:*",
        "-*:*",
        "*:>5",
        "*>5",
        "*:(a OR b)",
        "a *:* b",
    ] {
        crate::fuzzing::check_roundtrip(q);
        let query = parse(q).unwrap();
        let Some(Expr::Term(term)) = query.expr.as_ref().map(|e| match e {
            Expr::Not(inner) => inner.as_ref(),
            Expr::And(items) => &items[1],
            other => other,
        }) else {
            panic!("{q}: {query:?}");
        };
        assert_eq!(term.field.as_ref().map(|f| &*f.value), Some("*"), "{q}");
    }
    // A bare `*` is still a value on `name`, and `*x:y` a bare value.
    let bare = parse("*").unwrap();
    assert!(matches!(&bare.expr, Some(Expr::Term(t)) if t.field.is_none()));
    let bare = parse("*x:y").unwrap();
    assert!(matches!(&bare.expr, Some(Expr::Term(t)) if t.field.is_none()));
}

#[test]
fn a_dotted_name_with_an_empty_part_before_a_colon_is_a_mistyped_field() {
    for (q, name) in [
        ("attacks..name:ember", "attacks..name"),
        (".name:x", ".name"),
        ("name.:pikachu", "name."),
        ("a AND hp..x>=5", "hp..x"),
        ("attacks:(.damage>=60)", ".damage"),
    ] {
        assert!(
            matches!(kind(q), ParseErrorKind::BadFieldName { name: ref n } if n == name),
            "{q}"
        );
    }
    assert_eq!(
        e("boss..s:orders"),
        "\
`boss..s` is no field name: a field's parts are joined by single dots (`attacks.name`); quote the text to search for it as it is
boss..s:orders
^^^^^^^"
    );
    // Without `:` or a comparison after it, or quoted, or starting with a digit, it is a
    // bare value as before.
    assert_eq!(
        p("e.g. \"boss..s:orders\" 3.5"),
        "e.g. AND \"boss..s:orders\" AND 3.5"
    );
}

#[test]
fn a_bound_shaped_as_a_date_must_name_a_day_of_the_calendar() {
    for (q, date, reason) in [
        (
            "release_date>=2020/02/30",
            "2020/02/30",
            "February 2020 has 29 days",
        ),
        (
            "release_date>=2021-02-29",
            "2021-02-29",
            "February 2021 has 28 days",
        ),
        (
            "release_date>=1900/02/29",
            "1900/02/29",
            "February 1900 has 28 days",
        ),
        (
            "release_date:[2020/04/31 TO *]",
            "2020/04/31",
            "April 2020 has 30 days",
        ),
        (
            "release_date:[* TO 2020-13-45]",
            "2020-13-45",
            "there is no month 13 (months are 01 to 12)",
        ),
        (
            "release_date<2020/00/10",
            "2020/00/10",
            "there is no month 00 (months are 01 to 12)",
        ),
        (
            "release_date>2020/01/00T10:00",
            "2020/01/00",
            "there is no day 00 (days start at 01)",
        ),
        (
            "x:(>=2020/06/31 AND <2021/01/01)",
            "2020/06/31",
            "June 2020 has 30 days",
        ),
    ] {
        assert!(
            matches!(kind(q), ParseErrorKind::InvalidDate { date: ref d, reason: ref r }
                if d == date && r == reason),
            "{q}: {:?}",
            kind(q)
        );
    }
    assert_eq!(
        e("release_date>=2020/02/30"),
        "\
`2020/02/30` is no date: February 2020 has 29 days (a date is `YYYY/MM/DD` or `YYYY-MM-DD`)
release_date>=2020/02/30
              ^^^^^^^^^^"
    );
    // Longer than a date, it is a number followed by text, as before.
    assert!(matches!(
        kind("hp>=2020-02-301"),
        ParseErrorKind::ExpectedSeparator { .. }
    ));
    // Every day of the calendar is a bound, leap days included; a bare value is a word.
    assert_eq!(
        p("d>=2020/02/29 d<=2000-02-29"),
        "d>=20200229 AND d<=20000229"
    );
    assert_eq!(
        p("d:[2021/12/31 TO 2022-01-31]"),
        "d:[20211231 TO 20220131]"
    );
    assert_eq!(p("d:2020/02/30"), "d:2020/02/30");
}

#[test]
fn a_comparison_without_its_number_inside_a_group_is_an_error_as_outside_one() {
    // The lookahead reads these parentheses as a group of values (no number follows the
    // operator), where `damage>=` would search the word `damage`.
    for (q, after, found) in [
        ("attacks:(damage>=)", "damage>=", Found::Text(")".into())),
        (
            "variants.prices:(market<)",
            "market<",
            Found::Text(")".into()),
        ),
        ("attacks:(damage>= 3)", "damage>=", Found::Whitespace),
        ("name:(pika OR chu<=)", "chu<=", Found::Text(")".into())),
    ] {
        assert_eq!(
            kind(q),
            ParseErrorKind::ExpectedNumber {
                after: after.into(),
                found
            },
            "{q}"
        );
    }
    assert_eq!(
        e("attacks:(damage>=)"),
        "\
expected a number after `damage>=`, found `)`
attacks:(damage>=)
                 ^"
    );
    // With its number it is a comparison in a nested query.
    assert_eq!(p("attacks:(damage>=60)"), "attacks:(damage>=60)");
}
