//! The static check: each problem pinned by code, message and where it starts.

use super::*;

/// The scope of `pedido`'s COBRO_PARCIAL transition, with a few more fields
/// to reach every type.
fn scope() -> Scope<'static> {
    Scope {
        context: vec![
            ("total", Type::Int),
            ("cobrado", Type::Int),
            ("cobrosVistos", Type::List),
            ("nombre", Type::String),
            ("meta", Type::Map),
            ("pendiente", Type::Null),
            ("activo", Type::Bool),
        ],
        payload: Some(vec![("cobroId", Type::String), ("importe", Type::Number)]),
        guards: vec!["isValid", "hasStock"],
    }
}

/// Checks `text` in `scope` and returns (code, message, help, span start) per problem.
fn problems_in(
    text: &str,
    scope: &Scope,
    guard: bool,
) -> Vec<(String, String, Option<String>, u32)> {
    let expr = parse(text, 0).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    let diagnostics = if guard {
        check_guard(&expr, scope)
    } else {
        check(&expr, scope)
    };
    diagnostics
        .into_iter()
        .map(|d| (d.code.to_string(), d.message, d.help, d.span.start))
        .collect()
}

/// Asserts that `text` has exactly the problems `expected`: (code, message, start).
#[track_caller]
fn check_problems(text: &str, expected: &[(&str, &str, u32)]) {
    let found: Vec<(String, String, u32)> = problems_in(text, &scope(), false)
        .into_iter()
        .map(|(code, message, _, start)| (code, message, start))
        .collect();
    let expected: Vec<(String, String, u32)> = expected
        .iter()
        .map(|(c, m, s)| (c.to_string(), m.to_string(), *s))
        .collect();
    assert_eq!(found, expected, "{text}");
}

#[track_caller]
fn check_one(text: &str, code: &str, message: &str, start: u32) {
    check_problems(text, &[(code, message, start)]);
}

#[track_caller]
fn help_of(text: &str) -> Option<String> {
    let found = problems_in(text, &scope(), false);
    assert_eq!(found.len(), 1, "{text}: {found:?}");
    found[0].2.clone()
}

#[test]
fn accepts_the_spec_examples_and_valid_forms() {
    for text in [
        "!(event.cobroId in context.cobrosVistos)",
        "context.cobrosVistos + [event.cobroId]",
        "context.cobrado + event.importe",
        "context.cobrado >= context.total",
        "size(context.cobrosVistos) > 0 && size(context.nombre) < 10",
        "has(event.importe) || has(context.meta.x)",
        "in_state(\"funcionando.encendida\")",
        "event.type == \"COBRO_PARCIAL\" && event.id != null",
        "context.meta.a.b[0] + 1",
        "context.meta[\"k\"] == \"v\"",
        "context.pendiente + 1",
        "context.cobrosVistos[0] + \"x\"",
        "context.activo ? context.total : context.cobrado * 2.5",
        "{\"k\": [1, 2.5, null, true]}",
        "\"c1\" in context.meta",
        "-event.importe % 3",
        "1 == 1.0 && context.total != event.importe",
        "context.nombre < \"m\" && true > false",
    ] {
        check_problems(text, &[]);
    }
}

#[test]
fn reports_unknown_context_fields_with_a_suggestion() {
    check_one(
        "context.cobrdo",
        "S008",
        "unknown context field `cobrdo`",
        0,
    );
    assert_eq!(
        help_of("context.cobrdo"),
        Some("did you mean `cobrado`?".into())
    );
    check_one("1 + context.x", "S008", "unknown context field `x`", 4);
    assert_eq!(help_of("1 + context.x"), None);
    check_one(
        "has(context.tota)",
        "S008",
        "unknown context field `tota`",
        4,
    );
}

#[test]
fn reports_bare_and_unknown_names() {
    check_one(
        "context",
        "S007",
        "`context` needs a field: write `context.<field>`",
        0,
    );
    check_one(
        "size(event)",
        "S007",
        "`event` needs a field: write `event.<field>`, `event.type` or `event.id`",
        5,
    );
    let unknown = "unknown name `foo`: values are read as `context.<field>` or `event.<field>`";
    check_one("1 + foo", "S007", unknown, 4);
    assert_eq!(help_of("foo"), None);
    assert_eq!(help_of("cobrado"), Some("write `context.cobrado`".into()));
    assert_eq!(help_of("importe"), Some("write `event.importe`".into()));
}

#[test]
fn reports_payload_fields_the_event_does_not_declare() {
    check_one(
        "event.importee > 0",
        "S007",
        "the event's payload has no field `importee` (it declares `cobroId`, `importe`)",
        0,
    );
    assert_eq!(
        help_of("event.importee"),
        Some("did you mean `event.importe`?".into())
    );
    // `type` and `id` are the event's own, whatever its payload declares.
    check_problems("event.type + event.id", &[]);
    let empty = Scope {
        payload: Some(vec![]),
        ..scope()
    };
    let found = problems_in("event.x", &empty, false);
    assert_eq!(
        found,
        [(
            "S007".to_string(),
            "the event declares no payload, so it has no field `x`".to_string(),
            None,
            0
        )]
    );
    let open = Scope {
        payload: None,
        ..scope()
    };
    assert!(problems_in("event.anything + 1", &open, false).is_empty());
}

#[test]
fn reports_functions_by_name_arity_and_argument() {
    let unknown = "unknown function `sise`: the functions are `size`, `has`, `in_state`, `merge`, `distinct`, `without` and `without_by`";
    check_one("sise(context.nombre)", "S007", unknown, 0);
    assert_eq!(
        help_of("sise(context.nombre)"),
        Some("did you mean `size`?".into())
    );
    check_one("size(1, 2)", "S007", "`size` takes one argument, not 2", 0);
    check_one("1 + has()", "S007", "`has` takes one argument, not 0", 4);
    let has = "`has` takes a field selection, like `has(event.f)` or `has(context.m.f)`";
    check_one("has(1)", "S007", has, 4);
    check_one("has(context.cobrosVistos[0])", "S007", has, 4);
    let in_state = "`in_state` takes a state path as a string literal, like `in_state(\"a.b\")`";
    check_one("in_state(context.nombre)", "S007", in_state, 9);
    // The arguments of a wrong call are still checked.
    check_problems(
        "nada(context.x)",
        &[
            ("S008", "unknown context field `x`", 5),
            (
                "S007",
                "unknown function `nada`: the functions are `size`, `has`, `in_state`, `merge`, `distinct`, `without` and `without_by`",
                0,
            ),
        ],
    );
}

#[test]
fn reports_obvious_type_errors_where_they_are() {
    check_one("!5", "S007", "`!` needs a bool, not an int", 1);
    check_one("-\"a\"", "S007", "`-` needs a number, not a string", 1);
    check_one(
        "\"a\" - 1",
        "S007",
        "`-` needs numbers, not a string and an int",
        0,
    );
    check_one(
        "1 + \"a\"",
        "S007",
        "`+` adds two numbers, two strings or two lists, not an int and a string",
        0,
    );
    check_one(
        "context.cobrosVistos + event.cobroId",
        "S007",
        "`+` adds two numbers, two strings or two lists, not a list and a string",
        0,
    );
    check_one(
        "size(3)",
        "S007",
        "`size` measures a string, a list or a map, not an int",
        5,
    );
    check_one(
        "1 in 5",
        "S007",
        "`in` needs a list or a map on its right, not an int",
        5,
    );
    check_one(
        "1 in context.meta",
        "S007",
        "map keys are strings, so an int is never in a map",
        0,
    );
    check_one(
        "context.activo && 1",
        "S007",
        "`&&` needs bools, not an int",
        18,
    );
    check_one("\"x\" || true", "S007", "`||` needs bools, not a string", 0);
    check_one(
        "1 ? 2 : 3",
        "S007",
        "the condition of `?:` must be a bool, not an int",
        0,
    );
    check_one(
        "context.total == \"100\"",
        "S007",
        "`==` compares an int with a string: they are never equal",
        0,
    );
    check_one(
        "\"a\" < 1",
        "S007",
        "`<` cannot order a string and an int",
        0,
    );
    check_one(
        "[1] <= [2]",
        "S007",
        "`<=` cannot order a list and a list",
        0,
    );
    check_one(
        "null.f",
        "S007",
        "`.f` selects a field of a map, not of null",
        0,
    );
    check_one(
        "context.total.f",
        "S007",
        "`.f` selects a field of a map, not of an int",
        0,
    );
    check_one(
        "context.total[0]",
        "S007",
        "only lists and maps can be indexed, not an int",
        0,
    );
    check_one(
        "context.cobrosVistos[\"a\"]",
        "S007",
        "a list index must be an int, not a string",
        21,
    );
    check_one(
        "context.meta[1]",
        "S007",
        "a map key must be a string, not an int",
        13,
    );
    check_one(
        "{1: 2}",
        "S007",
        "map keys must be strings, this one is an int",
        1,
    );
}

#[test]
fn reports_every_problem_once() {
    check_problems(
        "foo + context.nope + !3",
        &[
            (
                "S007",
                "unknown name `foo`: values are read as `context.<field>` or `event.<field>`",
                0,
            ),
            ("S008", "unknown context field `nope`", 6),
            ("S007", "`!` needs a bool, not an int", 22),
        ],
    );
    // A broken operand counts as unknown, so what is around it says nothing more.
    check_problems(
        "-context.x.y + 1 > 0",
        &[("S008", "unknown context field `x`", 1)],
    );
}

#[test]
fn checks_that_a_guard_is_a_bool() {
    let guard = |text: &str| problems_in(text, &scope(), true);
    assert_eq!(
        guard("context.total"),
        [(
            "S007".to_string(),
            "a guard must be a bool, but this expression is an int".to_string(),
            None,
            0
        )]
    );
    assert_eq!(
        guard("context.nombre + \"x\"")[0].1,
        "a guard must be a bool, but this expression is a string"
    );
    assert!(guard("context.meta.ok").is_empty());
    assert!(guard("context.cobrado >= context.total").is_empty());
    // A guard that is wrong inside is not also reported as not a bool.
    assert_eq!(guard("!5").len(), 1);
    // `check` alone accepts a non-bool expression: assigns have any type.
    assert!(problems_in("context.total", &scope(), false).is_empty());
}

#[test]
fn spans_are_in_file_coordinates() {
    let expr = parse("1 + context.x", 100).unwrap();
    let found = check(&expr, &scope());
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].span.start, found[0].span.end), (104, 113));
    assert_eq!(found[0].name, "unknown-context-field");
}

#[test]
fn lists_in_state_paths_with_their_spans() {
    let expr = parse("in_state(\"a.b\") && !in_state('c') || in_state(x)", 10).unwrap();
    let paths: Vec<(String, u32)> = in_state_paths(&expr)
        .into_iter()
        .map(|(p, s)| (p, s.start))
        .collect();
    assert_eq!(paths, [("a.b".to_string(), 19), ("c".to_string(), 39)]);
}

#[test]
fn types_of_json_and_payload_declarations() {
    use serde_json::json;
    assert_eq!(Type::of_json(&json!(null)), Type::Null);
    assert_eq!(Type::of_json(&json!(1)), Type::Int);
    assert_eq!(Type::of_json(&json!(-1)), Type::Int);
    assert_eq!(Type::of_json(&json!(1.5)), Type::Double);
    assert_eq!(Type::of_json(&json!(u64::MAX)), Type::Double);
    assert_eq!(Type::of_json(&json!("s")), Type::String);
    assert_eq!(Type::of_json(&json!([])), Type::List);
    assert_eq!(Type::of_json(&json!({})), Type::Map);
    assert_eq!(Type::of_json(&json!(true)), Type::Bool);
    use crate::model::PayloadType;
    assert_eq!(Type::from(PayloadType::Number), Type::Number);
    assert_eq!(Type::from(PayloadType::Integer), Type::Int);
    assert_eq!(Type::from(PayloadType::Any), Type::Dyn);
}

#[test]
fn host_guards_are_bools_in_guards_only() {
    let guard = |text: &str| problems_in(text, &scope(), true);
    assert!(guard("isValid").is_empty());
    assert!(guard("!hasStock || isValid && context.cobrado > 1").is_empty());
    // A host guard is a bool: it cannot be added to a number.
    assert_eq!(
        guard("isValid + 1")[0].1,
        "`+` adds two numbers, two strings or two lists, not a bool and an int"
    );
    // Outside a guard the host is not asked.
    assert_eq!(
        problems_in("isValid", &scope(), false),
        [(
            "S007".to_string(),
            "the host guard `isValid` can only be used in a guard: the host answers it when \
             a transition is chosen"
                .to_string(),
            None,
            0
        )]
    );
}

#[test]
fn an_unknown_name_in_a_guard_suggests_a_host_guard() {
    let found = problems_in("isVaild && true", &scope(), true);
    assert_eq!(
        found,
        [(
            "S007".to_string(),
            "unknown name `isVaild`: values are read as `context.<field>` or `event.<field>`, \
             and host guards are declared under `guards`"
                .to_string(),
            Some("did you mean the host guard `isValid`?".to_string()),
            0
        )]
    );
    // With no host guard declared, the help says how to declare one.
    let none = Scope {
        guards: Vec::new(),
        ..scope()
    };
    assert_eq!(
        problems_in("ready", &none, true)[0].2.as_deref(),
        Some("a condition only the host can answer is declared under `guards` (`guards: [ready]`)")
    );
    // A context field keeps its own help.
    assert_eq!(
        problems_in("cobrado > 1", &scope(), true)[0].2.as_deref(),
        Some("write `context.cobrado`")
    );
}

#[test]
fn the_functions_of_values_are_checked() {
    for (text, ok) in [
        ("merge({\"a\": 1}, context.meta)", true),
        ("distinct([1, 1])", true),
        ("without([1], 1)", true),
        ("without_by([], \"id\", 1)", true),
        ("merge([1], {})", false),
        ("distinct(1)", false),
        ("without_by([], 1, 1)", false),
        ("merge({})", false),
    ] {
        assert_eq!(problems_in(text, &scope(), false).is_empty(), ok, "{text}");
    }
}
