//! Functions: their parameters bound, their bodies read.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::super::Version;
use super::super::config::Cx;
use super::super::scope::{FnRef, Node, TextId};
use super::{Base, Bind, Cel, Env, Role, View, Why, property_node};
use crate::span::Span;

impl<'a> Cx<'_, 'a> {
    /// The translated value of one function, or why it has none.
    pub(super) fn translate_fn(
        &mut self,
        f: FnRef<'a>,
        t: TextId,
        params: Option<Node<'a>>,
        view: View,
        key: u32,
    ) -> Result<Cel, Why> {
        if let Some(message) = self.refused.get(&key) {
            return Err(Why {
                message: format!("the expression checker refused its translation ({message})"),
                span: self.reader.span(t, f.span()),
            });
        }
        let mut env = self.bind(f, t, params, view)?;
        let body = self.body_value(f, t, &mut env)?;
        let mut cel = self.cel(body, &env)?;
        cel.parts = vec![(0, cel.text.len() as u32, key)];
        Ok(cel)
    }

    /// The parameters of an implementation, bound: v5's `({ context,
    /// event }, params)` or `(args, params)`, v4's `(context, event)`.
    pub(super) fn bind(
        &mut self,
        f: FnRef<'a>,
        t: TextId,
        params: Option<Node<'a>>,
        view: View,
    ) -> Result<Env<'a>, Why> {
        let mut env = Env::empty(view);
        let formal = f.params();
        if formal.rest.is_some() {
            return Err(Why {
                message: "a rest parameter cannot be translated".into(),
                span: self.reader.span(t, formal.span),
            });
        }
        for (i, p) in formal.items.iter().enumerate() {
            let span = self.reader.span(t, p.span);
            let role = match (self.version, i) {
                (Version::V5, 0) => Role::Args,
                (Version::V5, 1) | (Version::V4, 3) => Role::Params,
                (Version::V4, 0) => Role::Whole(Base::Context),
                (Version::V4, 1) => Role::Whole(Base::Event),
                _ => Role::Other,
            };
            self.bind_pattern(&p.pattern, role, params, span, &mut env)?;
        }
        Ok(env)
    }

    pub(super) fn bind_pattern(
        &mut self,
        pattern: &'a BindingPattern<'a>,
        role: Role,
        params: Option<Node<'a>>,
        span: Span,
        env: &mut Env<'a>,
    ) -> Result<(), Why> {
        let unsupported = |what: &str| Why {
            message: format!("the parameter pattern {what} cannot be translated"),
            span,
        };
        match pattern {
            BindingPattern::BindingIdentifier(id) => {
                let bind = match role {
                    Role::Args => Bind::Args,
                    Role::Whole(Base::Context) => Bind::Context,
                    Role::Whole(Base::Event) => Bind::Event,
                    Role::Field(base, ref field) => Bind::Field(base, field.clone()),
                    Role::Params => match params {
                        Some(p) => Bind::Value(p),
                        None => Bind::Other(id.name.to_string()),
                    },
                    Role::Other => Bind::Other(id.name.to_string()),
                };
                env.binds.push((id.name.as_str(), bind));
                Ok(())
            }
            BindingPattern::ObjectPattern(o) => {
                if o.rest.is_some() {
                    return Err(unsupported("with a rest element"));
                }
                for property in &o.properties {
                    let Some(key) = property.key.static_name().filter(|_| !property.computed)
                    else {
                        return Err(unsupported("with a computed key"));
                    };
                    let key: &'a str = self.reader.alloc.alloc_str(&key);
                    let inner = match &role {
                        Role::Args => match key {
                            "context" => Role::Whole(Base::Context),
                            "event" => Role::Whole(Base::Event),
                            _ => Role::Other,
                        },
                        Role::Whole(base) => Role::Field(*base, key.to_string()),
                        Role::Field(..) => return Err(unsupported("two levels deep")),
                        Role::Params => {
                            let value = params.and_then(|p| {
                                let p = self.reader.resolve(p).ok()?;
                                property_node(p, key)
                            });
                            if let (BindingPattern::BindingIdentifier(id), Some(v)) =
                                (&property.value, value)
                            {
                                env.binds.push((id.name.as_str(), Bind::Value(v)));
                                continue;
                            }
                            Role::Other
                        }
                        Role::Other => Role::Other,
                    };
                    self.bind_pattern(&property.value, inner, params, span, env)?;
                }
                Ok(())
            }
            BindingPattern::ArrayPattern(_) => Err(unsupported("of an array")),
            BindingPattern::AssignmentPattern(_) => Err(unsupported("with a default value")),
        }
    }

    /// The value a function body gives: its expression, or its `return`
    /// after `const` declarations (bound in `env`).
    pub(super) fn body_value(
        &mut self,
        f: FnRef<'a>,
        t: TextId,
        env: &mut Env<'a>,
    ) -> Result<Node<'a>, Why> {
        let statements = match f.body() {
            Err(e) => return Ok(Node { e, t }),
            Ok(s) => s,
        };
        for (i, statement) in statements.iter().enumerate() {
            let span = self.reader.span(t, statement.span());
            match statement {
                Statement::VariableDeclaration(v) if v.kind == VariableDeclarationKind::Const => {
                    for d in &v.declarations {
                        let (BindingPattern::BindingIdentifier(id), Some(init)) = (&d.id, &d.init)
                        else {
                            return Err(Why {
                                message: "a declaration other than `const NAME = value` cannot be translated".into(),
                                span,
                            });
                        };
                        let value = self.cel(Node { e: init, t }, env)?;
                        env.binds.push((id.name.as_str(), Bind::Local(value)));
                    }
                }
                Statement::ReturnStatement(r) if i + 1 == statements.len() => {
                    return match &r.argument {
                        Some(e) => Ok(Node { e, t }),
                        None => Err(Why {
                            message: "it returns nothing".into(),
                            span,
                        }),
                    };
                }
                _ => {
                    return Err(Why {
                        message: "its body does more than declare constants and return a value"
                            .into(),
                        span,
                    });
                }
            }
        }
        Err(Why {
            message: "it returns nothing".into(),
            span: self.reader.span(t, f.span()),
        })
    }
}
