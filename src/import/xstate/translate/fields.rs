//! Objects read field by field: an `assign`'s argument, an event, an
//! input, params.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::super::config::Cx;
use super::super::scope::Node;
use super::{Bind, Env, View, Why};
use crate::model::Name;
use crate::syntax::tree::ExprText;

impl<'a> Cx<'_, 'a> {
    /// The fields of an object (literal values), or of the object a
    /// function returns (translated): `assign`'s argument, an event, an
    /// input, params.
    pub fn fields(
        &mut self,
        n: Node<'a>,
        view: View,
        params: Option<Node<'a>>,
    ) -> Result<Vec<(Name, ExprText)>, Why> {
        let n = self.code(n);
        if let Some((f, t)) = self.function_of(n) {
            let mut env = self.bind(f, t, params, view)?;
            let object = self.body_value(f, t, &mut env)?;
            return self.object_fields(object, &env, Some(view));
        }
        let r = self.reader.resolve(n).map_err(|(name, span)| Why {
            message: format!("`{name}` cannot be followed to its definition"),
            span,
        })?;
        if !matches!(r.e, Expression::ObjectExpression(_)) {
            return Err(self.why("it is not an object literal", r));
        }
        // Each property on its own: a value, or a function of the context
        // and event (`assign({ total: ({ context }) => ... })`, v4's
        // `data: { id: (context) => context.id }`).
        let Some(entries) = self.entries(r, "this object") else {
            return Err(self.why("it cannot be read", r));
        };
        let mut out = Vec::new();
        for entry in entries {
            let value = self.code(entry.value);
            let cel = match self.function_of(value) {
                Some((f, t)) => {
                    let key = self.key(value);
                    self.translate_fn(f, t, params, view, key)?
                }
                None => self.cel(value, &Env::empty(view))?,
            };
            let offset = self.span(value).start;
            out.push((
                Name {
                    text: entry.key.to_string(),
                    span: entry.key_span,
                },
                self.expr_text(cel, offset),
            ));
        }
        Ok(out)
    }

    /// The properties of an object literal a function body gives, each
    /// translated in the function's scope; `...context` (what `assign`
    /// keeps anyway) is skipped.
    pub(super) fn object_fields(
        &mut self,
        object: Node<'a>,
        env: &Env<'a>,
        _view: Option<View>,
    ) -> Result<Vec<(Name, ExprText)>, Why> {
        let Expression::ObjectExpression(o) = object.e.get_inner_expression() else {
            return Err(self.why("the function does not return an object literal", object));
        };
        let mut out: Vec<(Name, ExprText)> = Vec::new();
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) => {
                    let key_span = self.reader.span(object.t, p.key.span());
                    let Some(key) = p.key.static_name().filter(|_| !p.computed) else {
                        return Err(Why {
                            message: "a computed key cannot be translated".into(),
                            span: key_span,
                        });
                    };
                    let value = Node {
                        e: &p.value,
                        t: object.t,
                    };
                    let cel = self.cel(value, env)?;
                    let offset = self.span(value).start;
                    let text = self.expr_text(cel, offset);
                    out.retain(|(n, _)| n.text != key.as_ref());
                    out.push((
                        Name {
                            text: key.to_string(),
                            span: key_span,
                        },
                        text,
                    ));
                }
                ObjectPropertyKind::SpreadProperty(s) => {
                    let spread = Node {
                        e: &s.argument,
                        t: object.t,
                    };
                    if matches!(self.base(spread, env), Some(Bind::Context)) {
                        continue;
                    }
                    return Err(self.why(
                        "a spread of anything but the context cannot be translated",
                        spread,
                    ));
                }
            }
        }
        Ok(out)
    }
}
