//! The expression parser, checker and evaluator over one fixed context and
//! event: any text parses or gives an error; a parsed expression checks,
//! evaluates and prints without a panic; its canonical text parses back to
//! the same text; and a guard's fast path agrees with plain evaluation.
#![no_main]

use idemchart::expr::{
    Event, Layout, Scope, Type, Value, check, check_guard, compile, eval, eval_guard, parse,
};
use libfuzzer_sys::fuzz_target;

const FIELDS: [(&str, Type); 6] = [
    ("total", Type::Int),
    ("seen", Type::List),
    ("meta", Type::Map),
    ("nothing", Type::Null),
    ("ratio", Type::Double),
    ("name", Type::String),
];

fn context() -> Vec<Value> {
    vec![
        Value::Int(100),
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

/// States `a` (index 0, active) and `b` (index 1, inactive).
fn state_index(path: &str) -> Option<u32> {
    ["a", "b"].iter().position(|s| *s == path).map(|i| i as u32)
}

fn is_active(state: u32) -> bool {
    state == 0
}

fuzz_target!(|text: &str| {
    let Ok(expr) = parse(text, 0) else {
        return;
    };
    let scope = Scope {
        context: FIELDS.to_vec(),
        payload: Some(vec![("id", Type::String), ("amount", Type::Int)]),
        guards: vec!["approved"],
    };
    let _ = check(&expr, &scope);
    let _ = check_guard(&expr, &scope);

    let printed = expr.to_string();
    let reparsed = parse(&printed, 0)
        .unwrap_or_else(|error| panic!("{text:?} prints as {printed:?}, which fails: {error:?}"));
    assert_eq!(reparsed.to_string(), printed, "{text:?}");

    let layout = Layout::new(FIELDS.map(|(name, _)| name));
    let compiled = compile(&expr, &layout, &state_index);
    let context = context();
    let event = Event::new(
        "PAY",
        Some(Value::from("e1")),
        Value::map([("id", Value::from("c2")), ("amount", Value::Int(10))]),
    );
    for event in [Some(&event), None] {
        let value = eval(&compiled, &context, event, &is_active);
        let guard = eval_guard(&compiled, &context, event, &is_active);
        match (&value, &guard) {
            (Ok(Value::Bool(v)), Ok(g)) => assert_eq!(v, g, "{text:?}"),
            (Ok(Value::Bool(_)), Err(_)) | (Ok(_), Ok(_)) => {
                panic!("{text:?}: eval {value:?}, guard {guard:?}")
            }
            _ => {}
        }
        if let Ok(value) = value {
            let _ = value.to_string();
        }
    }
});
