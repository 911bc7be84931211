//! Calls: the methods and functions whose meaning is exact in the machine
//! format.

use oxc_ast::ast::*;

use super::super::config::{Cx, callee_name};
use super::super::scope::Node;
use super::{Cel, Env, Ty, Why};

impl<'a> Cx<'_, 'a> {
    pub(super) fn call(
        &mut self,
        call: &'a CallExpression<'a>,
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        let sub = |e: &'a Expression<'a>| Node { e, t: n.t };
        let args: Vec<&'a Expression<'a>> = call
            .arguments
            .iter()
            .filter_map(|a| a.as_expression())
            .collect();
        if args.len() != call.arguments.len() {
            return Err(self.why("a spread argument cannot be translated", n));
        }
        if let Expression::StaticMemberExpression(m) = call.callee.get_inner_expression() {
            let method = m.property.name.as_str();
            if method == "includes" && args.len() == 1 {
                let list = self.cel(sub(&m.object), env)?;
                if list.ty != Ty::List {
                    return Err(self.why(
                        "`.includes` is translated for lists only, and this is not known to be one",
                        n,
                    ));
                }
                let item = self.cel(sub(args[0]), env)?;
                return Ok(Cel::new(
                    format!("{} in {}", item.at(4), list.at(4)),
                    3,
                    Ty::Bool,
                ));
            }
            if m.object.is_specific_id("Math") && matches!(method, "max" | "min") && args.len() == 2
            {
                let a = self.cel(sub(args[0]), env)?;
                let b = self.cel(sub(args[1]), env)?;
                let op = if method == "max" { ">" } else { "<" };
                return Ok(Cel::new(
                    format!("{} {op} {} ? {} : {}", a.at(4), b.at(4), a.at(1), b.at(0)),
                    0,
                    Ty::Number,
                ));
            }
        }
        if let Some(scxml) = self.scxml
            && call.callee.is_specific_id("In")
        {
            let [Expression::StringLiteral(id)] = args.as_slice() else {
                return Err(self.why("`In` takes one state id, as a string literal", n));
            };
            let Some(path) = scxml.state_path(id.value.as_str()) else {
                return Err(self.why(
                    format!("`In('{}')` names no state of the document", id.value),
                    sub(args[0]),
                ));
            };
            let mut text = String::from("in_state(");
            crate::expr::write_quoted(&path, &mut text).ok();
            text.push(')');
            return Ok(Cel::new(text, 7, Ty::Bool));
        }
        let name = callee_name(&call.callee).unwrap_or("a function");
        Err(self.why(
            format!("it calls `{name}`, which only JavaScript can run"),
            n,
        ))
    }
}
