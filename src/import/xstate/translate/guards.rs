//! Guards: `guard` and v4's `cond`, named guards, combinators, host guards.

use oxc_ast::ast::*;

use super::super::Version;
use super::super::config::{Cx, callee_name};
use super::super::scope::{MAX_DEPTH, Node, property};
use super::{Cel, Ty, View, combine};
use crate::model::Name;
use crate::span::Span;
use crate::syntax::tree::ExprText;

impl<'a> Cx<'_, 'a> {
    // ---- guards ----

    /// A transition's guard (`guard` or v4's `cond`) as an expression; the
    /// parts that cannot be translated are host guards.
    pub fn guard(&mut self, n: Node<'a>, view: View) -> Option<ExprText> {
        let offset = self.span(n).start;
        let cel = self.guard_cel(n, view, None, 0);
        Some(self.expr_text(cel, offset))
    }

    pub(super) fn guard_cel(
        &mut self,
        n: Node<'a>,
        view: View,
        params: Option<Node<'a>>,
        depth: u32,
    ) -> Cel {
        let n = self.code(n);
        if depth > MAX_DEPTH {
            let span = self.span(n);
            let name = self.in_place(span, "guard");
            return self.host_guard(&name, "it nests too deeply", span);
        }
        let r = match self.reader.resolve(n) {
            Ok(r) => r,
            Err((name, span)) => {
                return self.host_guard(&name, "it cannot be followed to its definition", span);
            }
        };
        match r.e {
            Expression::StringLiteral(s) => {
                let name = s.value.to_string();
                let span = self.span(r);
                self.named_guard(&name, None, span, view, depth)
            }
            Expression::ObjectExpression(_) => {
                let Some((name, span)) =
                    property(r.e, "type").and_then(|t| self.string(Node { e: t, t: r.t }))
                else {
                    let span = self.span(r);
                    let name = self.in_place(span, "guard");
                    return self.host_guard(&name, "it is an object without a `type`", span);
                };
                // v5 passes `params`; a v4 guard object is its own params.
                let params = match self.version {
                    Version::V5 => property(r.e, "params").map(|p| Node { e: p, t: r.t }),
                    Version::V4 => Some(r),
                };
                self.named_guard(&name, params, span, view, depth)
            }
            Expression::CallExpression(call) => {
                let name = callee_name(&call.callee).unwrap_or_default();
                let args: Vec<Node<'a>> = call
                    .arguments
                    .iter()
                    .filter_map(|a| a.as_expression())
                    .map(|e| Node { e, t: r.t })
                    .collect();
                match (name, args.as_slice()) {
                    ("not", [g]) => {
                        let inner = self.guard_cel(*g, view, params, depth + 1);
                        combine("!", &[inner], "", 6, "")
                    }
                    ("and" | "or", [list]) => {
                        let items = self.items(*list);
                        let cels: Vec<Cel> = items
                            .into_iter()
                            .map(|g| self.guard_cel(g, view, params, depth + 1))
                            .collect();
                        if cels.is_empty() {
                            return Cel::new((name == "and").to_string(), 7, Ty::Bool);
                        }
                        let (op, level) = if name == "and" {
                            (" && ", 2)
                        } else {
                            (" || ", 1)
                        };
                        combine("", &cels, op, level, "")
                    }
                    ("stateIn", [state]) => match self.string(*state) {
                        Some((path, _)) => {
                            let mut text = String::from("in_state(");
                            crate::expr::write_quoted(&path, &mut text).ok();
                            text.push(')');
                            Cel::new(text, 7, Ty::Bool)
                        }
                        None => {
                            let span = self.span(r);
                            let name = self.in_place(span, "guard");
                            self.host_guard(&name, "`stateIn` of a state value object cannot be translated; write `stateIn('#id')`", span)
                        }
                    },
                    _ => {
                        let span = self.span(r);
                        let host = self.in_place(span, "guard");
                        self.host_guard(&host, &format!("it calls `{name}`"), span)
                    }
                }
            }
            _ => match self.function_of(r) {
                Some((f, t)) => {
                    let key = self.key(r);
                    let span = self.span(r);
                    match self.translate_fn(f, t, params, view, key) {
                        Ok(c) if matches!(c.ty, Ty::Bool | Ty::Unknown) => c,
                        Ok(_) => {
                            let name = self.in_place(span, "guard");
                            self.host_guard(&name, "it does not give a boolean", span)
                        }
                        Err(why) => {
                            let name = self.in_place(span, "guard");
                            self.host_guard(&name, &why.message, why.span)
                        }
                    }
                }
                None => {
                    let span = self.span(r);
                    let name = self.in_place(span, "guard");
                    self.host_guard(&name, "it is neither a name nor a function", span)
                }
            },
        }
    }

    /// A guard named in `setup({ guards })` (or v4's options): its body
    /// translated, else a host guard of its name.
    pub(super) fn named_guard(
        &mut self,
        name: &str,
        params: Option<Node<'a>>,
        span: Span,
        view: View,
        depth: u32,
    ) -> Cel {
        let Some(implementation) = self.impls.guards.get(name).copied() else {
            return self.host_guard(name, "no implementation of it is given in the file", span);
        };
        let implementation = self.code(implementation);
        if let Some((f, t)) = self.function_of(implementation) {
            let key = self.key(implementation);
            return match self.translate_fn(f, t, params, view, key) {
                Ok(c) if matches!(c.ty, Ty::Bool | Ty::Unknown) => c.wrapped(),
                Ok(_) => self.host_guard(name, "its implementation does not give a boolean", span),
                Err(why) => self.host_guard(name, &why.message, why.span),
            };
        }
        // A combination of other guards: `and([...])`, `not(...)`.
        match self.reader.resolve(implementation) {
            Ok(r) if matches!(r.e, Expression::CallExpression(_)) => {
                self.guard_cel(r, view, params, depth + 1).wrapped()
            }
            _ => self.host_guard(name, "its implementation is not a function", span),
        }
    }

    /// A host guard named after `name` (made an identifier: each character
    /// that cannot be in one becomes `_`, a leading digit or a reserved word
    /// gets a `_` more), declared for the machine, with a note.
    pub(super) fn host_guard(&mut self, name: &str, why: &str, span: Span) -> Cel {
        let ident = match self.host_guards.iter().find(|(written, _)| written == name) {
            Some((_, declared)) => declared.text.clone(),
            None => {
                let mut ident: String = name
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                if ident.is_empty()
                    || ident.starts_with(|c: char| c.is_ascii_digit())
                    || crate::expr::RESERVED_NAMES.contains(&ident.as_str())
                {
                    ident.insert(0, '_');
                }
                while self.host_guards.iter().any(|(_, d)| d.text == ident) {
                    ident.push('_');
                }
                self.host_guards.push((
                    name.to_string(),
                    Name {
                        text: ident.clone(),
                        span,
                    },
                ));
                ident
            }
        };
        let message = if self.stand_ins.contains_key(name) {
            format!(
                "this guard cannot be translated: {why}; the linter treats it as a host guard, whose answer it does not know"
            )
        } else {
            format!(
                "the guard `{name}` cannot be translated: {why}; it is the host guard `{ident}`, which the linter treats as unknown"
            )
        };
        self.note(message, span);
        Cel::new(ident, 7, Ty::Bool)
    }
}
