//! Host guards and host actions through the public API: a machine that
//! declares them, written in YAML and in the DSL, runs with the host's
//! implementations, snapshots and restores, and the loader reports their
//! misuse at its line:col.

use crate::common;

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, HostCall, HostError, Updates};
use idemchart::span::SourceFile;
use idemchart::syntax::{self, Syntax};

/// An order that ships when the warehouse has stock, which only the host
/// knows, and writes the carrier's tracking number the host returns.
const YAML: &str = r#"
machine: order
context: { tracking: null, tries: 0 }
events:
  PAY: { id: payId }
guards: [inStock, fraudFree]
initial: new
states:
  new:
    on:
      PAY:
        - target: shipped
          guard: "inStock && fraudFree"
          actions: [book]
        - target: waiting
          guard: fraudFree
          actions:
            - assign: { tries: "context.tries + 1" }
        - target: rejected
  waiting: {}
  shipped: { type: final }
  rejected: { type: final }
"#;

const DSL: &str = r#"
machine order

context {
  tracking = null
  tries = 0
}

event PAY id payId

guards inStock fraudFree

initial new

state new {
  on PAY -> shipped if inStock && fraudFree { book }
  on PAY -> waiting if fraudFree { tries = context.tries + 1 }
  on PAY -> rejected
}
state waiting
final shipped
final rejected
"#;

fn pay(id: &str, amount: i64) -> Event {
    Event::new(
        "PAY",
        Some(Value::from(id)),
        Value::map([("payId", Value::from(id)), ("amount", Value::Int(amount))]),
    )
}

fn book(cx: &HostCall) -> Result<Updates, HostError> {
    let Some(Value::String(id)) = cx.event().and_then(|e| e.id.clone()) else {
        return Err("a booking needs the payment's id".into());
    };
    Ok(Updates::new().set("tracking", format!("TRK-{id}")))
}

fn chart(stock: bool) -> Arc<Chart> {
    let machine = syntax::parse(YAML, Syntax::Yaml).unwrap_or_else(|e| panic!("{e:#?}"));
    let chart = Chart::builder(machine)
        .guard("inStock", move |_| stock)
        .guard("fraudFree", |cx| {
            matches!(cx.event().and_then(|e| e.field("amount")), Some(Value::Int(n)) if *n < 1000)
        })
        .action("book", book)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(chart)
}

#[test]
fn yaml_and_dsl_declare_the_same_host_guards() {
    let from_yaml = syntax::parse(YAML, Syntax::Yaml).unwrap();
    let from_dsl = syntax::parse(DSL, Syntax::Dsl).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(from_yaml, from_dsl);
    let names: Vec<&str> = from_dsl.guards.iter().map(|g| g.text.as_str()).collect();
    assert_eq!(names, ["inStock", "fraudFree"]);
    // Each syntax prints what the other reads.
    assert_eq!(
        syntax::parse(&syntax::dsl::format(&from_yaml), Syntax::Dsl).unwrap(),
        from_yaml
    );
    assert_eq!(
        syntax::parse(&syntax::yaml::format(&from_dsl), Syntax::Yaml).unwrap(),
        from_dsl
    );
}

#[test]
fn the_host_answers_the_guards_and_runs_the_action() {
    let mut actor = Actor::new(chart(true));
    let step = actor.send(&pay("p1", 50)).clone();
    assert!(step.errors.is_empty(), "{:?}", step.errors);
    assert_eq!(actor.configuration_paths(), ["shipped"]);
    assert_eq!(
        actor.context_value("tracking"),
        Some(&Value::from("TRK-p1"))
    );
    let book = &step.effects[0];
    assert_eq!((&*book.name, book.host, book.ran), ("book", true, true));

    // Without stock the second transition is taken; a large amount fails
    // the fraud check too, and only the last one remains.
    let mut actor = Actor::new(chart(false));
    actor.send(&pay("p2", 50));
    assert_eq!(actor.configuration_paths(), ["waiting"]);
    let mut actor = Actor::new(chart(true));
    actor.send(&pay("p3", 5000));
    assert_eq!(actor.configuration_paths(), ["rejected"]);
}

#[test]
fn a_snapshot_continues_on_a_chart_with_the_same_host() {
    let mut actor = Actor::new(chart(false));
    actor.send(&pay("p1", 50));
    let json = serde_json::to_string(&actor.snapshot()).unwrap();
    // The snapshot holds data only: the host's functions live on the chart.
    assert!(!json.contains("inStock"), "{json}");
    let restored = Actor::restore(chart(false), &serde_json::from_str(&json).unwrap()).unwrap();
    assert_eq!(restored.configuration_paths(), ["waiting"]);
    assert_eq!(restored.context_value("tries"), Some(&Value::Int(1)));
}

#[test]
fn without_the_host_a_guard_raises_error_execution() {
    let machine = syntax::parse(DSL, Syntax::Dsl).unwrap();
    let error = Chart::builder(machine.clone()).build().unwrap_err();
    assert_eq!(error.unregistered_guards, ["inStock", "fraudFree"]);
    // `Chart::new` still runs it: each unanswered guard fails as an
    // expression that fails does, and counts as false.
    let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    let step = actor.send(&pay("p1", 50)).clone();
    assert_eq!(step.errors.len(), 2, "{:?}", step.errors);
    assert!(step.errors[0].contains("`inStock` has no implementation"));
    assert_eq!(actor.configuration_paths(), ["rejected"]);
}

/// `LINE:COL message` of each load error of `text`.
fn load_errors(text: &str, syntax: Syntax) -> Vec<String> {
    let file = SourceFile::new("t", text);
    syntax::parse(text, syntax)
        .expect_err("the machine does not load")
        .iter()
        .map(|d| {
            let (line, col) = file.line_col(d.span.start);
            format!(
                "{line}:{col} {} {}",
                d.code,
                d.help.as_deref().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn misused_host_guards_are_reported_at_their_place() {
    let typo = DSL.replace("if fraudFree {", "if fraudFre {");
    assert_eq!(
        load_errors(&typo, Syntax::Dsl),
        ["17:24 S007 did you mean the host guard `fraudFree`?"]
    );
    let twice = YAML.replace("[inStock, fraudFree]", "[inStock, fraudFree, inStock]");
    assert_eq!(load_errors(&twice, Syntax::Yaml), ["6:30 E004 "]);
    let in_assign = YAML.replace("\"context.tries + 1\"", "inStock");
    assert_eq!(load_errors(&in_assign, Syntax::Yaml), ["18:32 S007 "]);
}

#[test]
fn random_machines_declare_host_guards() {
    let with_guards = (0..200)
        .map(common::machine)
        .filter(|m| !m.guards.is_empty())
        .filter(|m| {
            m.transitions.iter().any(|t| {
                t.guard.as_ref().is_some_and(|g| {
                    common::HOST_GUARDS
                        .iter()
                        .any(|h| g.to_string().contains(h))
                })
            })
        })
        .count();
    assert!(with_guards > 20, "only {with_guards} of 200");
}
