//! Evaluation: CEL semantics case by case, the assign's in-place append, and
//! compiled evaluation against a plain reference evaluator on random trees.

use std::borrow::Cow;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::span::Span;

const FIELDS: [&str; 7] = [
    "total",
    "cobrado",
    "cobrosVistos",
    "meta",
    "nada",
    "ratio",
    "nombre",
];

fn layout() -> Layout {
    Layout::new(FIELDS)
}

fn context() -> Vec<Value> {
    vec![
        Value::Int(100),
        Value::Int(0),
        Value::list(vec![Value::from("c1"), Value::from("c2")]),
        Value::map([
            ("a", Value::map([("b", Value::Int(1))])),
            ("k", Value::from("v")),
        ]),
        Value::Null,
        Value::Double(0.5),
        Value::from("ana"),
    ]
}

fn event() -> Event {
    Event::new(
        "COBRO_PARCIAL",
        Some(Value::from("e1")),
        Value::map([("cobroId", Value::from("c2")), ("importe", Value::Int(10))]),
    )
}

/// States `a` (index 0, active) and `b` (index 1, inactive).
fn state_index(path: &str) -> Option<u32> {
    ["a", "b"].iter().position(|s| *s == path).map(|i| i as u32)
}

fn is_active(state: u32) -> bool {
    state == 0
}

/// Evaluates `text` over the test context and event: the value's CEL text,
/// or `error: message`.
fn run_with(text: &str, event: Option<&Event>) -> String {
    let expr = parse(text, 0).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    let compiled = compile(&expr, &layout(), &state_index);
    match eval(&compiled, &context(), event, &is_active) {
        Ok(value) => value.to_string(),
        Err(error) => format!("error: {}", error.message),
    }
}

#[track_caller]
fn check_table(cases: &[(&str, &str)]) {
    let event = event();
    for (text, expected) in cases {
        assert_eq!(run_with(text, Some(&event)), *expected, "{text}");
    }
}

#[test]
fn arithmetic_follows_cel() {
    check_table(&[
        ("1 + 2 * 3", "7"),
        ("7 / 2", "3"),
        ("-7 / 2", "-3"),
        ("7 % 3", "1"),
        ("-7 % 3", "-1"),
        ("7.0 / 2.0", "3.5"),
        ("1 / 0", "error: division by zero"),
        ("1 % 0", "error: modulo by zero"),
        ("1.0 / 0.0", "inf"),
        ("9223372036854775807 + 1", "error: integer overflow"),
        ("-9223372036854775807 - 2", "error: integer overflow"),
        ("-(-9223372036854775807 - 1)", "error: integer overflow"),
        ("(-9223372036854775807 - 1) / -1", "error: integer overflow"),
        ("4611686018427387904 * 2", "error: integer overflow"),
        ("context.ratio + 1", "1.5"),
        ("context.cobrado + event.importe", "10"),
        (
            "5.5 % 2",
            "error: `%` needs two ints, not a double and an int",
        ),
        ("'a' + 'b'", "\"ab\""),
        ("[1] + [2, 3]", "[1, 2, 3]"),
        (
            "context.cobrosVistos + [event.cobroId]",
            "[\"c1\", \"c2\", \"c2\"]",
        ),
        (
            "'a' + 1",
            "error: `+` needs two numbers, two strings or two lists, not a string and an int",
        ),
        (
            "true - 1",
            "error: `-` needs numbers, not a bool and an int",
        ),
        ("-context.ratio", "-0.5"),
        ("-'a'", "error: `-` needs a number, not a string"),
    ]);
}

#[test]
fn comparisons_follow_cel() {
    check_table(&[
        ("1 == 1.0", "true"),
        ("1 == '1'", "false"),
        ("1 != '1'", "true"),
        ("null == null", "true"),
        ("context.nada == null", "true"),
        ("[1, 2] == [1.0, 2]", "true"),
        ("{'a': 1, 'b': 2} == {'b': 2, 'a': 1.0}", "true"),
        ("1 < 1.5", "true"),
        ("2 <= 1.5", "false"),
        ("'a' < 'b'", "true"),
        ("'b' >= 'b'", "true"),
        ("true > false", "true"),
        ("'a' < 1", "error: `<` cannot order a string and an int"),
        ("[1] < [2]", "error: `<` cannot order a list and a list"),
        ("event.cobroId in context.cobrosVistos", "true"),
        ("'c3' in context.cobrosVistos", "false"),
        ("1.0 in [1, 2]", "true"),
        ("'a' in context.meta", "true"),
        ("'z' in context.meta", "false"),
        ("1 in context.meta", "false"),
        (
            "1 in 2",
            "error: `in` needs a list or a map on its right, not an int",
        ),
    ]);
}

#[test]
fn logic_lets_a_decisive_side_win_over_an_error() {
    check_table(&[
        ("!true", "false"),
        ("!1", "error: expected a bool, found an int"),
        ("false && 1 / 0 == 1", "false"),
        ("1 / 0 == 1 && false", "false"),
        ("1 / 0 == 1 || true", "true"),
        ("true || 1 / 0 == 1", "true"),
        ("1 / 0 == 1 && true", "error: division by zero"),
        ("false || 1 / 0 == 1", "error: division by zero"),
        ("1 && true", "error: expected a bool, found an int"),
        ("true ? 1 : 2", "1"),
        ("context.total > 50 ? 'big' : 'small'", "\"big\""),
        ("context.total > 500 ? 1 / 0 : 2", "2"),
        ("1 ? 2 : 3", "error: expected a bool, found an int"),
    ]);
}

#[test]
fn selection_and_functions() {
    check_table(&[
        ("context.meta.a.b", "1"),
        ("context.meta['k']", "\"v\""),
        ("context.meta.z", "error: the map has no field `z`"),
        ("context.meta['z']", "error: the map has no key \"z\""),
        ("context.meta[1]", "error: map keys are strings, not an int"),
        ("context.cobrosVistos[1]", "\"c2\""),
        ("context.cobrosVistos[1.0]", "\"c2\""),
        (
            "context.cobrosVistos[2]",
            "error: index 2 is out of range for a list of 2",
        ),
        (
            "context.cobrosVistos[-1]",
            "error: index -1 is out of range for a list of 2",
        ),
        (
            "context.cobrosVistos['x']",
            "error: a list index must be an int, not a string",
        ),
        (
            "context.total[0]",
            "error: only lists and maps can be indexed, not an int",
        ),
        (
            "context.total.f",
            "error: `.f` selects a field of a map, not of an int",
        ),
        ("{'a': event.importe}.a", "10"),
        ("[event.cobroId, 1][0]", "\"c2\""),
        (
            "{'a': 1, 'a': 2}",
            "error: the key `a` appears twice in the map",
        ),
        ("{1: 2}", "error: map keys must be strings"),
        ("size('héllo')", "5"),
        ("size(context.cobrosVistos)", "2"),
        ("size(context.meta)", "2"),
        (
            "size(1)",
            "error: `size` measures a string, a list or a map, not an int",
        ),
        ("has(event.importe)", "true"),
        ("has(event.nope)", "false"),
        ("has(event.id)", "true"),
        ("has(event.type)", "true"),
        ("has(context.meta.a)", "true"),
        ("has(context.meta.z)", "false"),
        ("has(context.total)", "true"),
        (
            "has(context.total.x)",
            "error: `has` needs a map, not an int",
        ),
        ("event.type", "\"COBRO_PARCIAL\""),
        ("event.id", "\"e1\""),
        ("event.nope", "error: the event has no field `nope`"),
        ("in_state('a')", "true"),
        ("in_state('b')", "false"),
        ("in_state('zzz')", "error: unknown state `zzz`"),
        ("foo", "error: `foo` is not a value here"),
        ("context.nope", "error: unknown context field `nope`"),
        ("nada(1)", "error: unknown function `nada`"),
        ("size(1, 2)", "error: `size` takes one argument, not 2"),
    ]);
}

#[test]
fn without_an_event_only_has_succeeds() {
    assert_eq!(
        run_with("event.cobroId", None),
        "error: there is no event here"
    );
    assert_eq!(
        run_with("event.type", None),
        "error: there is no event here"
    );
    assert_eq!(run_with("has(event.cobroId)", None), "false");
    let no_id = Event::new("X", None, Value::Null);
    assert_eq!(
        run_with("event.id", Some(&no_id)),
        "error: the event has no id"
    );
    assert_eq!(run_with("has(event.id)", Some(&no_id)), "false");
    assert_eq!(
        run_with("event.f", Some(&no_id)),
        "error: the event has no field `f`"
    );
}

#[test]
fn errors_point_at_the_failing_operation() {
    let text = "context.total > 0 && context.meta.z == 1";
    let expr = parse(text, 50).unwrap();
    let compiled = compile(&expr, &layout(), &state_index);
    let error = eval(&compiled, &context(), None, &is_active).unwrap_err();
    assert_eq!(error.message, "the map has no field `z`");
    assert_eq!((error.span.start, error.span.end), (71, 85));
}

#[test]
fn guards_answer_bools() {
    let guard = |text: &str| {
        let compiled = compile(&parse(text, 0).unwrap(), &layout(), &state_index);
        eval_guard(&compiled, &context(), Some(&event()), &is_active).map_err(|e| e.message)
    };
    assert_eq!(guard("!(event.cobroId in context.cobrosVistos)"), Ok(false));
    assert_eq!(guard("!!(event.cobroId in context.cobrosVistos)"), Ok(true));
    assert_eq!(guard("!!!true"), Ok(false));
    assert_eq!(guard("context.cobrado >= context.total"), Ok(false));
    assert_eq!(
        guard("context.total"),
        Err("expected a bool, found an int".into())
    );
    assert_eq!(
        guard("!context.total"),
        Err("expected a bool, found an int".into())
    );
}

/// Guards of the shapes that `eval_guard` answers without the tree walk
/// agree with `eval`, which the property test below checks against a
/// reference evaluator.
#[test]
fn guards_agree_with_evaluation() {
    let texts = [
        "event.cobroId in context.cobrosVistos",
        "!(event.cobroId in context.cobrosVistos)",
        "'c9' in context.cobrosVistos",
        "event.cobroId in context.meta",
        "event.importe in context.cobrosVistos",
        "event.importe in context.total",
        "event.falta in context.cobrosVistos",
        "context.nada in event.cobroId",
        "context.cobrado < event.importe",
        "event.importe == 10.0",
        "!(context.ratio >= 1)",
        "context.nombre != 'ana'",
    ];
    for text in texts {
        let compiled = compile(&parse(text, 0).unwrap(), &layout(), &state_index);
        for event in [Some(event()), Some(Event::named("X")), None] {
            let guard = eval_guard(&compiled, &context(), event.as_ref(), &is_active);
            let value = eval(&compiled, &context(), event.as_ref(), &is_active);
            let value = value.map(|v| match v {
                Value::Bool(b) => b,
                other => panic!("{text}: {other}"),
            });
            assert_eq!(guard, value, "{text} with {event:?}");
        }
    }
}

/// A payload field is looked up first where the last payload had it; a
/// payload that has it elsewhere, or not at all, or is no map, still gets
/// the right answer from the same compiled expression.
#[test]
fn payload_fields_are_found_wherever_they_are() {
    let compiled = compile(&parse("event.b", 0).unwrap(), &layout(), &state_index);
    let read = |data: Value| {
        let event = Event::new("E", None, data);
        eval(&compiled, &[], Some(&event), &is_active).map_err(|e| e.message)
    };
    let small = |keys: &[&str]| {
        Value::map(
            keys.iter()
                .enumerate()
                .map(|(i, k)| (*k, Value::Int(i as i64))),
        )
    };
    for _ in 0..2 {
        assert_eq!(read(small(&["b", "a"])), Ok(Value::Int(0)));
        assert_eq!(read(small(&["a", "b"])), Ok(Value::Int(1)));
        assert_eq!(read(small(&["a", "c", "bb", "b"])), Ok(Value::Int(3)));
        assert_eq!(
            read(small(&["a"])),
            Err("the event has no field `b`".into())
        );
        assert_eq!(read(Value::Null), Err("the event has no field `b`".into()));
        let many: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
        let mut keys: Vec<&str> = many.iter().map(String::as_str).collect();
        keys.insert(13, "b");
        assert_eq!(read(small(&keys)), Ok(Value::Int(13)));
        assert_eq!(
            read(small(&keys[..10])),
            Err("the event has no field `b`".into())
        );
    }
    let has = compile(&parse("has(event.b)", 0).unwrap(), &layout(), &state_index);
    for (keys, expected) in [(&["b"][..], true), (&["a", "b"], true), (&["a"], false)] {
        let event = Event::new("E", None, small(keys));
        assert_eq!(
            eval(&has, &[], Some(&event), &is_active),
            Ok(Value::Bool(expected))
        );
    }
}

#[test]
fn constant_parts_are_computed_once() {
    let compiled = |text: &str| compile(&parse(text, 0).unwrap(), &layout(), &state_index);
    assert_eq!(compiled("1 + 2 * 3").constant(), Some(&Value::Int(7)));
    assert_eq!(
        compiled("[1, 'a'] + []").constant(),
        Some(&Value::list(vec![Value::Int(1), Value::from("a")]))
    );
    assert_eq!(
        compiled("true ? 'x' : context.total").constant(),
        Some(&Value::from("x"))
    );
    assert_eq!(compiled("context.total + 1").constant(), None);
    // A constant that fails stays, to fail where it is when evaluated.
    let failing = compiled("1 / 0");
    assert_eq!(failing.constant(), None);
    assert_eq!(
        eval(&failing, &[], None, &is_active).unwrap_err().message,
        "division by zero"
    );
}

/// Compiles an assign of `(field, expression text)` pairs.
fn assign(pairs: &[(&str, &str)]) -> CompiledAssign {
    let exprs: Vec<(&str, Expr)> = pairs
        .iter()
        .map(|(f, t)| (*f, parse(t, 0).unwrap_or_else(|e| panic!("{t}: {e:?}"))))
        .collect();
    CompiledAssign::new(exprs.iter().map(|(f, e)| (*f, e)), &layout(), &state_index)
}

fn slot(field: &str) -> usize {
    layout().slot(field).unwrap() as usize
}

#[test]
fn assign_applies_the_spec_example() {
    let action = assign(&[
        ("cobrosVistos", "context.cobrosVistos + [event.cobroId]"),
        ("cobrado", "context.cobrado + event.importe"),
    ]);
    let mut ctx = context();
    let pago = Event::new(
        "COBRO_PARCIAL",
        None,
        Value::map([("cobroId", Value::from("c3")), ("importe", Value::Int(25))]),
    );
    action.apply(&mut ctx, Some(&pago), &is_active).unwrap();
    action.apply(&mut ctx, Some(&pago), &is_active).unwrap();
    assert_eq!(ctx[slot("cobrado")], Value::Int(50));
    assert_eq!(
        ctx[slot("cobrosVistos")].to_string(),
        r#"["c1", "c2", "c3", "c3"]"#
    );
}

#[test]
fn assign_right_hand_sides_see_the_context_as_it_was() {
    let swap = assign(&[("total", "context.cobrado"), ("cobrado", "context.total")]);
    let mut ctx = context();
    swap.apply(&mut ctx, None, &is_active).unwrap();
    assert_eq!((&ctx[0], &ctx[1]), (&Value::Int(0), &Value::Int(100)));
    // Another right-hand side reads the list that grows in place: it sees the old one.
    let both = assign(&[
        ("cobrosVistos", "context.cobrosVistos + ['c9']"),
        ("cobrado", "size(context.cobrosVistos)"),
        ("nada", "context.cobrosVistos"),
    ]);
    let mut ctx = context();
    both.apply(&mut ctx, None, &is_active).unwrap();
    assert_eq!(ctx[slot("cobrado")], Value::Int(2));
    assert_eq!(ctx[slot("nada")].to_string(), r#"["c1", "c2"]"#);
    assert_eq!(
        ctx[slot("cobrosVistos")].to_string(),
        r#"["c1", "c2", "c9"]"#
    );
}

fn list_ptr(value: &Value) -> *const List {
    match value {
        Value::List(items) => Arc::as_ptr(items),
        other => panic!("not a list: {other}"),
    }
}

#[test]
fn assign_appends_in_place_when_the_list_is_not_shared() {
    let action = assign(&[("cobrosVistos", "context.cobrosVistos + [event.cobroId]")]);
    let mut ctx = context();
    let before = list_ptr(&ctx[slot("cobrosVistos")]);
    let event = event();
    for _ in 0..100 {
        action.apply(&mut ctx, Some(&event), &is_active).unwrap();
    }
    assert_eq!(
        list_ptr(&ctx[slot("cobrosVistos")]),
        before,
        "the list was copied"
    );
    let last_seen = |ctx: &[Value]| {
        ctx[slot("cobrosVistos")]
            .as_list()
            .and_then(|list| list.last())
            .map(Cow::into_owned)
    };
    assert_eq!(ctx[slot("cobrosVistos")].as_list().unwrap().len(), 102);
    assert_eq!(last_seen(&ctx).as_ref(), event.field("cobroId"));

    // A list that a snapshot still holds is copied, and the snapshot keeps its value.
    let snapshot = ctx[slot("cobrosVistos")].clone();
    action.apply(&mut ctx, Some(&event), &is_active).unwrap();
    assert_ne!(list_ptr(&ctx[slot("cobrosVistos")]), list_ptr(&snapshot));
    assert_eq!(snapshot.as_list().unwrap().len(), 102);
    assert_eq!(ctx[slot("cobrosVistos")].as_list().unwrap().len(), 103);

    // An id too long to be stored inline is appended too (its bytes copied
    // into the packed list, not shared).
    let long = Event::new(
        "COBRO_PARCIAL",
        None,
        Value::map([
            (
                "cobroId",
                Value::from("an id longer than twenty-three bytes"),
            ),
            ("importe", Value::Int(1)),
        ]),
    );
    action.apply(&mut ctx, Some(&long), &is_active).unwrap();
    assert_eq!(last_seen(&ctx).as_ref(), long.field("cobroId"));
    assert_eq!(ctx[slot("cobrosVistos")].as_list().unwrap().len(), 104);
}

#[test]
fn assign_extends_with_any_list_and_adds_anything_else() {
    let mut ctx = context();
    assign(&[(
        "cobrosVistos",
        "context.cobrosVistos + context.cobrosVistos",
    )])
    .apply(&mut ctx, None, &is_active)
    .unwrap();
    assert_eq!(
        ctx[slot("cobrosVistos")].to_string(),
        r#"["c1", "c2", "c1", "c2"]"#
    );
    let before = list_ptr(&ctx[slot("cobrosVistos")]);
    assign(&[("cobrosVistos", "context.cobrosVistos + (true ? ['x'] : [])")])
        .apply(&mut ctx, None, &is_active)
        .unwrap();
    assert_eq!(list_ptr(&ctx[slot("cobrosVistos")]), before);
    assert_eq!(ctx[slot("cobrosVistos")].as_list().unwrap().len(), 5);
    assign(&[
        ("nombre", "context.nombre + '!'"),
        ("ratio", "context.ratio + 1"),
    ])
    .apply(&mut ctx, None, &is_active)
    .unwrap();
    assert_eq!(ctx[slot("nombre")], Value::from("ana!"));
    assert_eq!(ctx[slot("ratio")], Value::Double(1.5));
}

#[test]
fn assign_writes_nothing_when_a_right_hand_side_fails() {
    let cases = [
        (
            vec![
                ("cobrado", "context.cobrado + 1"),
                ("cobrosVistos", "1 / 0"),
            ],
            "division by zero",
        ),
        (
            vec![
                ("cobrosVistos", "context.cobrosVistos + ['x']"),
                ("total", "context.total + 'a'"),
            ],
            "`+` needs two numbers, two strings or two lists, not an int and a string",
        ),
        (
            vec![("total", "context.total + [1]")],
            "`+` needs two numbers, two strings or two lists, not an int and a list",
        ),
        (
            vec![("total", "context.total + 9223372036854775807")],
            "integer overflow",
        ),
        (
            vec![("desconocido", "1")],
            "unknown context field `desconocido`",
        ),
        (
            vec![
                ("total", "1"),
                ("cobrado", "2"),
                ("ratio", "3"),
                ("nombre", "'x'"),
                ("nada", "context.nope"),
            ],
            "unknown context field `nope`",
        ),
    ];
    for (pairs, message) in cases {
        let mut ctx = context();
        let error = assign(&pairs)
            .apply(&mut ctx, None, &is_active)
            .unwrap_err();
        assert_eq!(error.message, message, "{pairs:?}");
        assert_eq!(ctx, context(), "{pairs:?} wrote something");
    }
}

#[test]
fn assign_of_many_fields_and_of_a_field_twice() {
    let mut ctx = context();
    assign(&[
        ("total", "1"),
        ("cobrado", "context.total"),
        ("ratio", "2.5"),
        ("nombre", "'x'"),
        ("nada", "[context.cobrado]"),
        ("total", "7"),
    ])
    .apply(&mut ctx, None, &is_active)
    .unwrap();
    assert_eq!(ctx[slot("total")], Value::Int(7));
    assert_eq!(ctx[slot("cobrado")], Value::Int(100));
    assert_eq!(ctx[slot("ratio")], Value::Double(2.5));
    assert_eq!(ctx[slot("nombre")], Value::from("x"));
    assert_eq!(ctx[slot("nada")], Value::list(vec![Value::Int(0)]));
}

#[test]
fn layout_maps_fields_to_slots_and_back() {
    let layout = layout();
    assert_eq!(layout.slot("cobrado"), Some(1));
    assert_eq!(layout.field(2), Some("cobrosVistos"));
    assert_eq!(layout.slot("x"), None);
    assert_eq!(Layout::new(["a", "b", "a"]).len(), 2);
    let map = layout.to_map(&context());
    assert_eq!(
        serde_json::to_string(&map).unwrap(),
        r#"{"total":100,"cobrado":0,"cobrosVistos":["c1","c2"],"meta":{"a":{"b":1},"k":"v"},"nada":null,"ratio":0.5,"nombre":"ana"}"#
    );
    assert_eq!(layout.from_map(&map), Ok(context()));
    let mut missing = map.as_map().unwrap().clone();
    missing.shift_remove("ratio");
    assert_eq!(
        layout.from_map(&Value::Map(Arc::new(missing.clone()))),
        Err("the context lacks the field `ratio`".into())
    );
    missing.insert("otro".into(), Value::Null);
    assert_eq!(
        layout.from_map(&Value::Map(Arc::new(missing))),
        Err("the context has an unknown field `otro`".into())
    );
    assert_eq!(
        layout.from_map(&Value::Int(1)),
        Err("the context must be a map, not an int".into())
    );
}

// ---- Compiled evaluation against a reference evaluator ----

/// Evaluates `expr` the plain way: every operand an owned value, no
/// compilation, no folding, no fast paths. `Err(())` for any failure.
fn reference(expr: &Expr, ctx: &[Value], event: &Event) -> Result<Value, ()> {
    let eval = |e: &Expr| reference(e, ctx, event);
    let truth = |e: &Expr| match reference(e, ctx, event)? {
        Value::Bool(b) => Ok(b),
        _ => Err(()),
    };
    match &expr.kind {
        ExprKind::Null => Ok(Value::Null),
        ExprKind::Bool(b) => Ok(Value::Bool(*b)),
        ExprKind::Int(n) => Ok(Value::Int(*n)),
        ExprKind::Float(n) => Ok(Value::Double(*n)),
        ExprKind::String(s) => Ok(Value::from(s.as_str())),
        ExprKind::List(items) => Ok(Value::list(
            items.iter().map(eval).collect::<Result<_, _>>()?,
        )),
        ExprKind::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let Value::String(key) = eval(k)? else {
                    return Err(());
                };
                let value = eval(v)?;
                if map.insert(key.into(), value).is_some() {
                    return Err(());
                }
            }
            Ok(Value::Map(Arc::new(map)))
        }
        ExprKind::Ident(_) => Err(()),
        ExprKind::Member(operand, field) => match &operand.kind {
            ExprKind::Ident(n) if n == "context" => {
                let slot = FIELDS.iter().position(|f| f == field).ok_or(())?;
                Ok(ctx[slot].clone())
            }
            ExprKind::Ident(n) if n == "event" => match field.as_str() {
                "type" => Ok(Value::from(&*event.name)),
                "id" => event.id.clone().ok_or(()),
                f => event.data.get(f).cloned().ok_or(()),
            },
            _ => eval(operand)?.get(field).cloned().ok_or(()),
        },
        ExprKind::Index(operand, index) => match (eval(operand)?, eval(index)?) {
            (Value::List(items), Value::Int(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i).map(Cow::into_owned))
                .ok_or(()),
            (Value::List(items), Value::Double(d)) if d >= 0.0 && d.fract() == 0.0 => {
                items.get(d as usize).map(Cow::into_owned).ok_or(())
            }
            (Value::Map(map), Value::String(k)) => map.get(&*k).cloned().ok_or(()),
            _ => Err(()),
        },
        ExprKind::Unary(UnaryOp::Not, operand) => Ok(Value::Bool(!truth(operand)?)),
        ExprKind::Unary(UnaryOp::Neg, operand) => match eval(operand)? {
            Value::Int(i) => i.checked_neg().map(Value::Int).ok_or(()),
            Value::Double(d) => Ok(Value::Double(-d)),
            _ => Err(()),
        },
        ExprKind::Binary(BinaryOp::And, a, b) => match (truth(a), truth(b)) {
            (Ok(false), _) | (_, Ok(false)) => Ok(Value::Bool(false)),
            (Ok(true), Ok(true)) => Ok(Value::Bool(true)),
            _ => Err(()),
        },
        ExprKind::Binary(BinaryOp::Or, a, b) => match (truth(a), truth(b)) {
            (Ok(true), _) | (_, Ok(true)) => Ok(Value::Bool(true)),
            (Ok(false), Ok(false)) => Ok(Value::Bool(false)),
            _ => Err(()),
        },
        ExprKind::Binary(op, a, b) => reference_binary(*op, eval(a)?, eval(b)?),
        ExprKind::Conditional(c, t, o) => {
            if truth(c)? {
                eval(t)
            } else {
                eval(o)
            }
        }
        ExprKind::Call(name, args) => match (name.as_str(), args.as_slice()) {
            ("size", [arg]) => match eval(arg)? {
                Value::String(s) => Ok(Value::Int(s.chars().count() as i64)),
                Value::List(items) => Ok(Value::Int(items.len() as i64)),
                Value::Map(map) => Ok(Value::Int(map.len() as i64)),
                _ => Err(()),
            },
            ("has", [arg]) => match &arg.kind {
                ExprKind::Member(operand, field) => match &operand.kind {
                    ExprKind::Ident(n) if n == "context" => FIELDS
                        .contains(&field.as_str())
                        .then_some(Value::Bool(true))
                        .ok_or(()),
                    ExprKind::Ident(n) if n == "event" => Ok(Value::Bool(match field.as_str() {
                        "type" => true,
                        "id" => event.id.is_some(),
                        f => event.data.get(f).is_some(),
                    })),
                    _ => match eval(operand)? {
                        Value::Map(map) => Ok(Value::Bool(map.contains_key(field.as_str()))),
                        _ => Err(()),
                    },
                },
                _ => Err(()),
            },
            _ => Err(()),
        },
    }
}

fn reference_binary(op: BinaryOp, a: Value, b: Value) -> Result<Value, ()> {
    use std::cmp::Ordering;
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Double(d) => Some(*d),
        _ => None,
    };
    let order = |want: fn(Ordering) -> bool| match compare(&a, &b) {
        Some(o) => Ok(Value::Bool(want(o))),
        None if number(&a).is_some() && number(&b).is_some() => Ok(Value::Bool(false)),
        None => Err(()),
    };
    match op {
        BinaryOp::Eq => Ok(Value::Bool(a == b)),
        BinaryOp::Ne => Ok(Value::Bool(a != b)),
        BinaryOp::Lt => order(Ordering::is_lt),
        BinaryOp::Le => order(Ordering::is_le),
        BinaryOp::Gt => order(Ordering::is_gt),
        BinaryOp::Ge => order(Ordering::is_ge),
        BinaryOp::In => match &b {
            Value::List(items) => Ok(Value::Bool(items.contains(&a))),
            Value::Map(map) => Ok(Value::Bool(a.as_str().is_some_and(|k| map.contains_key(k)))),
            _ => Err(()),
        },
        _ => match (&a, &b) {
            (Value::Int(x), Value::Int(y)) => match op {
                BinaryOp::Add => x.checked_add(*y),
                BinaryOp::Sub => x.checked_sub(*y),
                BinaryOp::Mul => x.checked_mul(*y),
                BinaryOp::Div => x.checked_div(*y),
                _ => x.checked_rem(*y),
            }
            .map(Value::Int)
            .ok_or(()),
            (Value::String(x), Value::String(y)) if op == BinaryOp::Add => {
                Ok(Value::from(format!("{x}{y}")))
            }
            (Value::List(x), Value::List(y)) if op == BinaryOp::Add => Ok(Value::list(
                x.iter().chain(y.iter()).map(Cow::into_owned).collect(),
            )),
            _ => {
                let (Some(x), Some(y)) = (number(&a), number(&b)) else {
                    return Err(());
                };
                match op {
                    BinaryOp::Add => Ok(Value::Double(x + y)),
                    BinaryOp::Sub => Ok(Value::Double(x - y)),
                    BinaryOp::Mul => Ok(Value::Double(x * y)),
                    BinaryOp::Div => Ok(Value::Double(x / y)),
                    _ => Err(()),
                }
            }
        },
    }
}

/// Equality of representation: the same kind and the same content, so
/// `1` differs from `1.0` and NaN matches NaN.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(&a, &b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => false,
    }
}

fn expr(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

/// `base.field` for a bare name `base`.
fn member(base: &str, field: &str) -> ExprKind {
    ExprKind::Member(Box::new(expr(ExprKind::Ident(base.into()))), field.into())
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(ExprKind::Null),
        any::<bool>().prop_map(ExprKind::Bool),
        prop_oneof![-3i64..4, Just(i64::MAX), Just(i64::MIN), Just(1 << 62),]
            .prop_map(ExprKind::Int),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(0.5),
            Just(2.0),
            Just(-1.5),
            Just(1e300)
        ]
        .prop_map(ExprKind::Float),
        prop_oneof![Just(""), Just("a"), Just("c1"), Just("k"), Just("é")]
            .prop_map(|s| ExprKind::String(s.into())),
        prop::sample::select(vec![
            ("context", "total"),
            ("context", "cobrosVistos"),
            ("context", "meta"),
            ("context", "nada"),
            ("context", "ratio"),
            ("context", "nombre"),
            ("context", "nope"),
            ("event", "cobroId"),
            ("event", "importe"),
            ("event", "type"),
            ("event", "id"),
            ("event", "nope"),
        ])
        .prop_map(|(b, f)| member(b, f)),
        Just(ExprKind::Ident("foo".into())),
    ]
    .prop_map(expr);
    leaf.prop_recursive(4, 40, 4, move |inner| {
        let b = Box::new;
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(ExprKind::List),
            prop::collection::vec(
                (
                    prop_oneof![Just("a"), Just("k"), Just("b")]
                        .prop_map(|s| expr(ExprKind::String(s.into()))),
                    inner.clone()
                ),
                0..3
            )
            .prop_map(ExprKind::Map),
            (inner.clone(), prop_oneof![Just("a"), Just("b"), Just("k")])
                .prop_map(move |(e, f)| ExprKind::Member(b(e), f.into())),
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
                    BinaryOp::Ne,
                    BinaryOp::Lt,
                    BinaryOp::Le,
                    BinaryOp::Gt,
                    BinaryOp::Ge,
                    BinaryOp::In,
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Rem,
                ]),
                inner.clone(),
                inner.clone()
            )
                .prop_map(move |(op, l, r)| ExprKind::Binary(op, b(l), b(r))),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(move |(c, t, o)| ExprKind::Conditional(b(c), b(t), b(o))),
            inner
                .clone()
                .prop_map(|e| ExprKind::Call("size".into(), vec![e])),
            (inner, prop_oneof![Just("a"), Just("k")]).prop_map(move |(e, f)| {
                ExprKind::Call("has".into(), vec![expr(ExprKind::Member(b(e), f.into()))])
            }),
        ]
        .prop_map(expr)
    })
}

/// What is appended to a list: any expression, and more often the shapes
/// the assign treats apart (a list literal, a list computed or borrowed).
fn arb_appended() -> impl Strategy<Value = Expr> {
    let list = || expr(member("context", "cobrosVistos"));
    prop_oneof![
        arb_expr(),
        prop::collection::vec(arb_expr(), 0..3).prop_map(|items| expr(ExprKind::List(items))),
        (arb_expr(), arb_expr()).prop_map(move |(c, item)| {
            expr(ExprKind::Conditional(
                Box::new(c),
                Box::new(expr(ExprKind::List(vec![item]))),
                Box::new(list()),
            ))
        }),
        arb_expr().prop_map(move |item| {
            expr(ExprKind::Binary(
                BinaryOp::Add,
                Box::new(list()),
                Box::new(expr(ExprKind::List(vec![item]))),
            ))
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compiled_evaluation_matches_the_reference(expr in arb_expr()) {
        let ctx = context();
        let event = event();
        let compiled = compile(&expr, &layout(), &state_index);
        let fast = eval(&compiled, &ctx, Some(&event), &is_active);
        let slow = reference(&expr, &ctx, &event);
        match (&fast, &slow) {
            (Ok(a), Ok(b)) => prop_assert!(same(a, b), "{}: {} vs {}", expr, a, b),
            (Err(_), Err(())) => {}
            _ => prop_assert!(false, "{}: {:?} vs {:?}", expr, fast, slow),
        }
        // A guard gives the same answer as the plain evaluation.
        let guard = eval_guard(&compiled, &ctx, Some(&event), &is_active);
        match (&fast, &guard) {
            (Ok(Value::Bool(a)), Ok(b)) => prop_assert_eq!(a, b, "{}", expr),
            (Ok(Value::Bool(_)), Err(_)) => prop_assert!(false, "{}: guard failed", expr),
            (_, Ok(_)) => prop_assert!(false, "{}: guard of a non-bool succeeded", expr),
            _ => {}
        }
    }

    #[test]
    fn assigning_matches_evaluating_each_right_hand_side(
        a in arb_expr(),
        b in arb_expr(),
        append in arb_appended(),
    ) {
        let exprs = [
            ("total", a),
            ("nombre", b),
            (
                "cobrosVistos",
                expr(ExprKind::Binary(
                    BinaryOp::Add,
                    Box::new(expr(member("context", "cobrosVistos"))),
                    Box::new(append),
                )),
            ),
        ];
        let event = event();
        let before = context();
        let expected: Result<Vec<Value>, ()> = exprs
            .iter()
            .map(|(_, e)| reference(e, &before, &event))
            .collect();
        let action = CompiledAssign::new(exprs.iter().map(|(f, e)| (*f, e)), &layout(), &state_index);
        let mut ctx = context();
        let result = action.apply(&mut ctx, Some(&event), &is_active);
        match expected {
            Ok(values) => {
                prop_assert!(result.is_ok(), "{:?}", result);
                for ((field, _), value) in exprs.iter().zip(values) {
                    prop_assert!(same(&ctx[slot(field)], &value), "{}: {} vs {}", field, ctx[slot(field)], value);
                }
            }
            Err(()) => {
                prop_assert!(result.is_err());
                prop_assert!(ctx.iter().zip(&before).all(|(a, b)| same(a, b)));
            }
        }
    }
}

#[test]
fn host_guards_are_asked_only_when_needed() {
    use std::cell::Cell;
    let guards = |name: &str| match name {
        "ok" => Some(0),
        "late" => Some(1),
        _ => None,
    };
    let compiled = |text: &str| {
        compile_guard(
            &parse(text, 0).unwrap(),
            &layout(),
            &|_: &str| None,
            &guards,
        )
    };
    let asked = Cell::new(0);
    let host = |index: u32| {
        asked.set(asked.get() + 1);
        match index {
            0 => Some(true),
            _ => None,
        }
    };
    let run = |text: &str| {
        eval_guard_with_host(&compiled(text), &context(), None, &|_| false, &host)
            .map_err(|e| e.message)
    };
    assert_eq!(run("ok"), Ok(true));
    assert_eq!(run("!ok || context.total > 1"), Ok(true));
    // A decisive left side leaves the host unasked.
    asked.set(0);
    assert_eq!(run("context.total < 1 && late"), Ok(false));
    assert_eq!(asked.get(), 0);
    // A guard without an answer fails, as a failing expression does.
    assert_eq!(
        run("late"),
        Err(
            "the host guard `late` has no implementation: register one with \
             `Chart::builder(machine).guard(\"late\", ..)`"
                .to_string()
        )
    );
    // Without a host, the same compiled guard fails too.
    assert!(eval_guard(&compiled("ok"), &context(), None, &|_| false).is_err());
    // A plain `compile` knows no host guard.
    let plain = compile(&parse("ok", 0).unwrap(), &layout(), &|_: &str| None);
    assert!(eval(&plain, &context(), None, &|_| false).is_err());
}

#[test]
fn the_functions_of_values_merge_dedupe_and_remove() {
    check_table(&[
        (
            "merge(context.meta, {\"k\": \"w\", \"z\": 2})",
            "{\"a\": {\"b\": 1}, \"k\": \"w\", \"z\": 2}",
        ),
        ("merge({}, {\"k\": 1})", "{\"k\": 1}"),
        // `null` has no entries, as a spread of `null` gives none.
        ("merge({\"k\": 1}, null)", "{\"k\": 1}"),
        ("merge(null, {\"k\": 1})", "{\"k\": 1}"),
        ("merge(null, null)", "{}"),
        (
            "merge(null, [1])",
            "error: `merge` takes two maps, not null and a list",
        ),
        (
            "merge(context.meta, [1])",
            "error: `merge` takes two maps, not a map and a list",
        ),
        (
            "distinct([\"c2\"] + context.cobrosVistos + [\"c3\", \"c2\"])",
            "[\"c2\", \"c1\", \"c3\"]",
        ),
        ("distinct([])", "[]"),
        (
            "without(context.cobrosVistos + [\"c1\"], \"c1\")",
            "[\"c2\"]",
        ),
        ("without([1, 2], 3)", "[1, 2]"),
        (
            "without_by([{\"sku\": \"a\"}, {\"sku\": \"b\"}, 7], \"sku\", \"a\")",
            "[{\"sku\": \"b\"}, 7]",
        ),
        (
            "distinct(context.total)",
            "error: `distinct` takes a list, not an int",
        ),
    ]);
}
