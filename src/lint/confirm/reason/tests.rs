//! The reasoning's terms and solver, on expressions as written.

use super::overlay;
use super::solve::{Outcome, Want, solve, unsatisfiable};
use super::term::{Env, Term, Var, term};
use crate::expr::Value;

/// The term of `text`, with `event` delivery 0 and each context field
/// what `context` gives it (its name as a free variable of the context
/// otherwise).
fn read(text: &str, context: &[(&str, Term)]) -> Term {
    let expr = crate::expr::parse(text, 0).expect("parses");
    let lookup = |f: &str| {
        (context.iter())
            .find(|(name, _)| *name == f)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| Term::Var(Var::Context(vec![f.to_string()])))
    };
    term(
        &expr,
        &Env {
            context: &lookup,
            event: Some((0, "E")),
        },
    )
}

fn field(path: &[&str]) -> Var {
    Var::Field(0, path.iter().map(|s| s.to_string()).collect())
}

fn solved(
    conditions: &[(Term, Want)],
    defaults: &dyn Fn(&Var) -> Option<Value>,
) -> Vec<(Var, Option<Value>)> {
    match solve(conditions, &|_| false, defaults) {
        Outcome::Solved(a) => a,
        Outcome::Unsat => panic!("unsat: {conditions:#?}"),
        Outcome::Unknown => panic!("unknown: {conditions:#?}"),
    }
}

#[test]
fn a_guard_on_context_assigned_from_a_nested_field_asks_for_that_field() {
    // `subscription: event.output.subscription`, then the eventless guard.
    let subscription = read("event.output.subscription", &[]);
    let guard = read(
        "context.subscription.status == \"active\"",
        &[("subscription", subscription)],
    );
    let a = solved(&[(guard, Want::Holds)], &|_| None);
    assert_eq!(
        a,
        [(
            field(&["output", "subscription", "status"]),
            Some(Value::from("active"))
        )]
    );
    // Built as nested maps over what the replay synthesized.
    let synthesized = Value::map([(
        "output",
        Value::map([("subscription", Value::from("subscription-1"))]),
    )]);
    let data = overlay(
        &synthesized,
        &["output".into(), "subscription".into(), "status".into()],
        Some(&Value::from("active")),
    );
    assert_eq!(
        data.to_string(),
        r#"{"output": {"subscription": {"status": "active"}}}"#
    );
}

#[test]
fn map_literals_ternaries_and_has_are_seen_through() {
    let book = read(r#"{"title": event.title, "status": event.status}"#, &[]);
    let guard = read("context.book.status == \"onloan\"", &[("book", book)]);
    assert_eq!(
        solved(&[(guard, Want::Holds)], &|_| None),
        [(field(&["status"]), Some(Value::from("onloan")))]
    );

    let limit = read(r#"event.plan == "gold" ? 5000 : 50"#, &[]);
    let guard = read("context.limit >= 1000", &[("limit", limit)]);
    assert_eq!(
        solved(&[(guard, Want::Holds)], &|_| None),
        [(field(&["plan"]), Some(Value::from("gold")))]
    );

    let profile = read("event.profile", &[]);
    let guard = read(
        "has(context.profile.email)",
        &[("profile", profile.clone())],
    );
    assert_eq!(
        solved(&[(guard, Want::Holds)], &|_| None),
        [(field(&["profile", "email"]), Some(Value::from("email-1")))]
    );
    // Not taken: the field absent.
    let guard = read("has(context.profile.email)", &[("profile", profile)]);
    assert_eq!(
        solved(&[(guard, Want::NotHolds)], &|_| None),
        [(field(&["profile", "email"]), None)]
    );
}

#[test]
fn a_sum_of_payloads_gets_a_boundary_value_and_keeps_synthesized_values_that_do() {
    // Two deliveries add to the total; the band is [100, 1000).
    let first = Term::Var(Var::Field(0, vec!["amount".into()]));
    let second = Term::Var(Var::Field(1, vec!["amount".into()]));
    let total = super::term::binary(
        crate::expr::BinaryOp::Add,
        super::term::binary(
            crate::expr::BinaryOp::Add,
            Term::Known(Value::Int(0)),
            first,
        ),
        second,
    );
    let guard = read(
        "context.total >= 100 && context.total < 1000",
        &[("total", total)],
    );
    let defaults =
        |v: &Var| matches!(v, Var::Field(_, p) if p[0] == "amount").then(|| Value::Int(1));
    let a = solved(&[(guard, Want::Holds)], &defaults);
    assert_eq!(
        a,
        [
            (Var::Field(0, vec!["amount".into()]), Some(Value::Int(1))),
            (Var::Field(1, vec!["amount".into()]), Some(Value::Int(99))),
        ]
    );
    // A bound the synthesized value meets leaves it.
    let guard = read("event.amount < 100", &[]);
    assert_eq!(
        solved(&[(guard, Want::Holds)], &defaults),
        [(field(&["amount"]), Some(Value::Int(1)))]
    );
    // A disjunction: the first side that can be met.
    let guard = read("event.amount > 500 || event.kind == \"manual\"", &[]);
    assert_eq!(
        solved(&[(guard, Want::Holds)], &|_| None),
        [(field(&["amount"]), Some(Value::Int(501)))]
    );
    // Concatenation.
    let guard = read("event.ref + \"-paid\" == \"inv7-paid\"", &[]);
    assert_eq!(
        solved(&[(guard, Want::Holds)], &|_| None),
        [(field(&["ref"]), Some(Value::from("inv7")))]
    );
}

#[test]
fn unsatisfiable_only_on_contradictions_between_known_values() {
    let rejected = read("event.decision == \"rejected\"", &[]);
    let approved = read("event.decision == \"approved\"", &[]);
    assert!(unsatisfiable(&[
        (rejected.clone(), Want::Holds),
        (approved, Want::Holds)
    ]));
    // Two deliveries' fields are two variables.
    let other = Term::Binary(
        crate::expr::BinaryOp::Eq,
        Box::new(Term::Var(Var::Field(1, vec!["decision".into()]))),
        Box::new(Term::Known(Value::from("approved"))),
    );
    assert!(!unsatisfiable(&[
        (rejected, Want::Holds),
        (other, Want::Holds)
    ]));

    // The repeat of an append guarded by membership: the list it appended
    // to now holds the field, whatever it held before.
    let items = read("context.items + [event.sku]", &[]);
    let again = read("!(event.sku in context.items)", &[("items", items)]);
    assert!(unsatisfiable(&[(again, Want::Holds)]));

    // What the solver cannot read is no contradiction.
    let unknown = read("size(context.items) > 2 && event.x == 1", &[]);
    let other = read("event.x == 1", &[]);
    assert!(!unsatisfiable(&[
        (unknown, Want::Holds),
        (other, Want::Holds)
    ]));
    let bounds = read("event.n > 5 && event.n < 3", &[]);
    assert!(unsatisfiable(&[(bounds, Want::Holds)]));
}
