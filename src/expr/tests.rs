use proptest::prelude::*;

use super::*;

/// Parses `text` and checks that it prints back as `expected`.
#[track_caller]
fn check(text: &str, expected: &str) {
    let expr = parse(text, 0).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    assert_eq!(expr.to_string(), expected, "{text}");
    assert_eq!(
        parse(expected, 0).unwrap(),
        expr,
        "{expected} reads back differently"
    );
}

#[track_caller]
fn check_error(text: &str, offset: u32, message: &str, start: u32) {
    let error = parse(text, offset).expect_err(text);
    assert_eq!(error.message, message, "{text}");
    assert_eq!(error.span.start, start, "{text}");
}

#[test]
fn prints_canonically() {
    check(
        "!(event.cobroId in context.cobrosVistos)",
        "!(event.cobroId in context.cobrosVistos)",
    );
    check(
        "context.cobrosVistos+[event.cobroId]",
        "context.cobrosVistos + [event.cobroId]",
    );
    check("(a + b) * c", "(a + b) * c");
    check("a + (b * c)", "a + b * c");
    check("a - (b - c)", "a - (b - c)");
    check("(a - b) - c", "a - b - c");
    check("a || b && c", "a || b && c");
    check("(a || b) && c", "(a || b) && c");
    check("x ? y : z ? 1 : 2", "x ? y : z ? 1 : 2");
    check("(x ? y : z) ? 1 : 2", "(x ? y : z) ? 1 : 2");
    check("- -1", "-(-1)");
    check("!!true", "!(!true)");
    check("-a.b[0]", "-a.b[0]");
    check("(-a).b", "(-a).b");
    check("size(context.items) > 0", "size(context.items) > 0");
    check("has(event.x)", "has(event.x)");
    check("in_state('a.b')", "in_state(\"a.b\")");
    check(
        "{'k': [1, 2.5, null, true]}",
        "{\"k\": [1, 2.5, null, true]}",
    );
    check("\"a\\\"b\\n\"", "\"a\\\"b\\n\"");
    check("1.0e20", "1.0e20");
    check("x in [1,2,]", "x in [1, 2]");
    check("index // a comment\n + 1", "index + 1");
    check("inside", "inside");
}

#[test]
fn reports_positions_in_file_coordinates() {
    check_error("context.a +", 10, "the expression ends too early", 21);
    check_error("a ++ b", 0, "unexpected `+` in expression", 3);
    check_error("", 5, "empty expression", 5);
    check_error("a b", 0, "unexpected `b` in expression", 2);
    check_error(
        "99999999999999999999",
        0,
        "integer `99999999999999999999` is too large",
        0,
    );
    check_error("'unclosed", 0, "unexpected `'unclosed` in expression", 0);
}

#[test]
fn spans_cover_their_text() {
    let text = "!(event.cobroId in context.cobrosVistos)";
    let expr = parse(text, 100).unwrap();
    let mut seen = Vec::new();
    expr.walk(&mut |e| {
        seen.push(text[(e.span.start - 100) as usize..(e.span.end - 100) as usize].to_string())
    });
    assert_eq!(
        seen,
        [
            "!(event.cobroId in context.cobrosVistos)",
            "event.cobroId in context.cobrosVistos",
            "event.cobroId",
            "event",
            "context.cobrosVistos",
            "context"
        ]
    );
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(ExprKind::Null),
        any::<bool>().prop_map(ExprKind::Bool),
        (0i64..1000).prop_map(ExprKind::Int),
        (0u32..1000).prop_map(|n| ExprKind::Float(n as f64 / 8.0)),
        "[a-z\"\\\\ é]{0,4}".prop_map(ExprKind::String),
        prop_oneof![Just("context"), Just("event"), Just("x")]
            .prop_map(|s| ExprKind::Ident(s.into())),
    ]
    .prop_map(|kind| Expr {
        kind,
        span: Span::default(),
    });
    leaf.prop_recursive(4, 32, 4, |inner| {
        let b = |e| Box::new(e);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(ExprKind::List),
            // `in` is a keyword, so it is no field name (as in CEL).
            (
                inner.clone(),
                "[a-z]{1,3}".prop_filter("keyword", |f| f != "in")
            )
                .prop_map(move |(e, f)| ExprKind::Member(b(e), f)),
            (inner.clone(), inner.clone()).prop_map(move |(a, i)| ExprKind::Index(b(a), b(i))),
            (
                prop_oneof![Just(UnaryOp::Not), Just(UnaryOp::Neg)],
                inner.clone()
            )
                .prop_map(move |(op, e)| ExprKind::Unary(op, b(e))),
            (
                prop::sample::select(vec![
                    BinaryOp::Or,
                    BinaryOp::And,
                    BinaryOp::Eq,
                    BinaryOp::Lt,
                    BinaryOp::In,
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Rem
                ]),
                inner.clone(),
                inner.clone()
            )
                .prop_map(move |(op, l, r)| ExprKind::Binary(op, b(l), b(r))),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(move |(c, t, o)| ExprKind::Conditional(b(c), b(t), b(o))),
            prop::collection::vec(inner, 0..3).prop_map(|args| ExprKind::Call("size".into(), args)),
        ]
        .prop_map(|kind| Expr {
            kind,
            span: Span::default(),
        })
    })
}

proptest! {
    #[test]
    fn printing_then_parsing_gives_the_same_tree(expr in arb_expr()) {
        let text = expr.to_string();
        let back = parse(&text, 0).map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?;
        prop_assert_eq!(back, expr, "{}", text);
    }
}
