//! SCXML's `cond` and `expr`, read with the same translator.

use oxc_ast::ast::*;

use super::super::config::Cx;
use super::super::scope::Node;
use super::{Bind, Env, View, Why};

/// What SCXML's expressions name: the document's data model and states.
pub(crate) trait DataModel {
    /// Whether `name` is a variable of the data model.
    fn is_data(&self, name: &str) -> bool;
    /// The dotted path of the state with this SCXML id.
    fn state_path(&self, id: &str) -> Option<String>;
    /// What `_event.data` is where the expression runs: the payload, or
    /// the output or error of an invocation's completion.
    fn view(&self) -> View;
}

/// Why an SCXML expression has no translation, and where in its text (a
/// byte offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JsError {
    pub message: String,
    pub at: usize,
}

/// Runs `f` on the reading of one SCXML expression: parsed with oxc, and
/// read with this module's translator, `_event` bound to SCXML's event.
fn with_scxml<T>(
    text: &str,
    model: &dyn DataModel,
    f: impl for<'r, 'a> FnOnce(&mut Cx<'r, 'a>, Node<'a>, &Env<'a>) -> Result<T, Why>,
) -> Result<T, JsError> {
    let alloc = oxc_allocator::Allocator::default();
    let (mut reader, root) =
        super::super::scope::Reader::expression(&alloc, text).map_err(|(message, at)| JsError {
            message,
            at: at as usize,
        })?;
    let mut cx = Cx::for_scxml(&mut reader, model);
    let env = Env {
        binds: vec![("_event", Bind::ScxmlEvent)],
        view: model.view(),
        depth: 0,
    };
    f(&mut cx, root, &env).map_err(|why| JsError {
        message: why.message,
        at: why.span.start as usize,
    })
}

/// An SCXML expression as CEL text.
pub(crate) fn scxml_to_cel(text: &str, model: &dyn DataModel) -> Result<String, JsError> {
    with_scxml(text, model, |cx, root, env| {
        cx.cel(root, env).map(|c| c.text)
    })
}

/// The JSON value of a literal SCXML expression (a `<data>`'s initial value).
pub(crate) fn scxml_to_json(text: &str) -> Result<serde_json::Value, JsError> {
    struct NoModel;
    impl DataModel for NoModel {
        fn is_data(&self, _: &str) -> bool {
            false
        }
        fn state_path(&self, _: &str) -> Option<String> {
            None
        }
        fn view(&self) -> View {
            View::Plain
        }
    }
    with_scxml(text, &NoModel, |cx, root, _| {
        cx.json(root).map_err(|(_, span)| Why {
            message: "an initial value must be a literal (a number, string, boolean, null, array or object of literals)".into(),
            span,
        })
    })
}

/// The value of a condition made of `true`, `false`, `In('id')`, `!`, `&&`
/// and `||`, where `known` tells which states are active; `None` where it
/// depends on anything else or does not parse.
pub(crate) fn scxml_fold(text: &str, known: &dyn Fn(&str) -> Option<bool>) -> Option<bool> {
    fn fold(e: &Expression, known: &dyn Fn(&str) -> Option<bool>) -> Option<bool> {
        match e.get_inner_expression() {
            Expression::BooleanLiteral(b) => Some(b.value),
            Expression::CallExpression(call) if call.callee.is_specific_id("In") => {
                match call.arguments.as_slice() {
                    [Argument::StringLiteral(id)] => known(id.value.as_str()),
                    _ => None,
                }
            }
            Expression::UnaryExpression(u) if u.operator == UnaryOperator::LogicalNot => {
                fold(&u.argument, known).map(|b| !b)
            }
            Expression::LogicalExpression(l)
                if matches!(l.operator, LogicalOperator::And | LogicalOperator::Or) =>
            {
                let stop = l.operator == LogicalOperator::Or;
                match (fold(&l.left, known), fold(&l.right, known)) {
                    (Some(a), _) if a == stop => Some(stop),
                    (_, Some(b)) if b == stop => Some(stop),
                    (Some(_), Some(_)) => Some(!stop),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    let alloc = oxc_allocator::Allocator::default();
    let (_, root) = super::super::scope::Reader::expression(&alloc, text).ok()?;
    fold(root.e, known)
}

/// SCXML's expressions through the translator (`scxml_to_cel`,
/// `scxml_fold`, `scxml_to_json`), with a document of three variables and
/// one state.
#[cfg(test)]
mod scxml_tests {
    use super::*;

    struct Doc(View);

    impl DataModel for Doc {
        fn is_data(&self, name: &str) -> bool {
            matches!(name, "Var1" | "list" | "o")
        }
        fn state_path(&self, id: &str) -> Option<String> {
            (id == "s01").then(|| "s0.s01".to_string())
        }
        fn view(&self) -> View {
            self.0
        }
    }

    fn cel(text: &str) -> String {
        scxml_to_cel(text, &Doc(View::Plain)).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn translates_the_common_subset() {
        assert_eq!(cel("Var1 === 1"), "context.Var1 == 1");
        assert_eq!(
            cel("Var1!==1 || Var1 == 2"),
            "context.Var1 != 1 || context.Var1 == 2"
        );
        assert_eq!(
            cel("In('s01') && !In('s01')"),
            r#"in_state("s0.s01") && !in_state("s0.s01")"#
        );
        assert_eq!(cel("(Var1 + 1) * 2 % 3"), "(context.Var1 + 1) * 2 % 3");
        assert_eq!(cel("Var1 - (1 - 2)"), "context.Var1 - (1 - 2)");
        assert_eq!(cel("'a\"b' + \"c\""), r#""a\"b" + "c""#);
        assert_eq!(
            cel("list.length > 0 ? list[0] : o.f"),
            "size(context.list) > 0 ? context.list[0] : context.o.f"
        );
        assert_eq!(cel("Var1 < 2 == true"), "context.Var1 < 2 == true");
        assert_eq!(cel("true == Var1 < 2"), "true == (context.Var1 < 2)");
        assert_eq!(cel("-Var1 >= -1.5"), "-context.Var1 >= -1.5");
        assert_eq!(cel("[1, 'x', {a: 2}]"), r#"[1, "x", {"a": 2}]"#);
        assert_eq!(
            cel("_event.name == 'e' && _event.data.a + _event.data['b'] > 1"),
            r#"event.type == "e" && event.a + event.b > 1"#
        );
        assert_eq!(cel("Var1 === undefined"), "context.Var1 == null");
    }

    #[test]
    fn event_data_is_the_completion_s_output_or_error_in_its_handlers() {
        let done = scxml_to_cel("_event.data.receipt", &Doc(View::Done));
        assert_eq!(done.as_deref(), Ok("event.output.receipt"));
        let error = scxml_to_cel("_event.data['reason']", &Doc(View::Error));
        assert_eq!(error.as_deref(), Ok("event.error.reason"));
    }

    #[test]
    fn rejects_what_has_no_counterpart() {
        for (text, wanted) in [
            ("_event.data", "only `_event.name`"),
            ("_event", "only `_event.name`"),
            ("_event.origin == 1", "`_event.origin`"),
            ("_sessionid", "system variable `_sessionid`"),
            ("typeof Var1", "`typeof`"),
            ("Var1 = 2", "cannot be translated"),
            ("Var1++", "cannot be translated"),
            ("Var1 / 2", "`/`"),
            ("foo", "unknown variable `foo`"),
            ("Math.pow(1, 2)", "it calls `pow`"),
            ("f(1)", "it calls `f`"),
            ("In('nowhere')", "names no state"),
            ("In(Var1)", "`In` takes one state id"),
            ("1 +", "Unexpected"),
            ("'open", "Unterminated"),
            ("", "Unexpected"),
        ] {
            let error = scxml_to_cel(text, &Doc(View::Plain)).unwrap_err();
            assert!(error.message.contains(wanted), "{text}: {}", error.message);
            assert!(error.at <= text.len(), "{text}: {error:?}");
        }
    }

    #[test]
    fn folds_conditions_on_known_states() {
        let known = |id: &str| match id {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
        assert_eq!(scxml_fold("In('on')", &known), Some(true));
        assert_eq!(scxml_fold("!In('on') || In('off')", &known), Some(false));
        assert_eq!(
            scxml_fold("In('off') && In('unknown')", &known),
            Some(false)
        );
        assert_eq!(scxml_fold("In('on') || In('unknown')", &known), Some(true));
        assert_eq!(scxml_fold("In('on') && In('unknown')", &known), None);
        assert_eq!(scxml_fold("(true) && Var1", &known), None);
        assert_eq!(scxml_fold("(true)", &known), Some(true));
    }

    #[test]
    fn literals_become_json() {
        assert_eq!(scxml_to_json("-2"), Ok(serde_json::json!(-2)));
        assert_eq!(
            scxml_to_json("{a: [1, 2.5, 'x'], 'b': null, c: true}"),
            Ok(serde_json::json!({"a": [1, 2.5, "x"], "b": null, "c": true}))
        );
        assert!(scxml_to_json("Var1").is_err());
        assert!(scxml_to_json("1 + 1").is_err());
    }
}
