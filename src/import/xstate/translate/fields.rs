//! Objects read field by field: an `assign`'s argument, an event, an
//! input, params.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::super::config::Cx;
use super::super::scope::Node;
use super::body::{Ret, choice};
use super::{Bind, Cel, Env, Ty, View, Why};
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
            let env = self.bind(f, t, params, view)?;
            let ret = self.body(f, t, env)?;
            let fields = self.plain_fields(ret)?;
            return Ok(fields
                .into_iter()
                .map(|w| {
                    let text = self.expr_text(w.value, w.offset);
                    (w.name, text)
                })
                .collect());
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

    /// What an `assign` writes: for a function, the fields of the object
    /// it returns (a partial context, merged into the context as XState
    /// does), else each property of the object on its own.
    pub(super) fn assign_fields(
        &mut self,
        n: Node<'a>,
        view: View,
        params: Option<Node<'a>>,
    ) -> Result<Vec<(Name, ExprText)>, Why> {
        let n = self.code(n);
        let Some((f, t)) = self.function_of(n) else {
            return self.fields(n, view, params);
        };
        let env = self.bind(f, t, params, view)?;
        let ret = self.body(f, t, env)?;
        let written = self.written(ret)?;
        Ok(written
            .into_iter()
            .filter(|w| w.value.text != format!("context.{}", w.name.text))
            .map(|w| {
                let text = self.expr_text(w.value, w.offset);
                (w.name, text)
            })
            .collect())
    }

    /// The context fields a returned partial context writes, each as an
    /// expression of the context before: a choice between returns writes
    /// each field either side writes, keeping its value on the side that
    /// does not.
    fn written(&mut self, ret: Ret<'a>) -> Result<Vec<Written>, Why> {
        match ret {
            Ret::Value(node, env) => self.written_object(node, &env),
            Ret::Choice(test, a, b) => {
                let a = self.written(*a)?;
                let b = self.written(*b)?;
                let mut out: Vec<Written> = Vec::new();
                for w in a.iter().chain(&b) {
                    if out.iter().any(|o| o.name.text == w.name.text) {
                        continue;
                    }
                    let side = |list: &[Written]| {
                        list.iter()
                            .find(|x| x.name.text == w.name.text)
                            .map(|x| x.value.clone())
                            .unwrap_or_else(|| old(&w.name.text))
                    };
                    out.push(Written {
                        name: w.name.clone(),
                        offset: w.offset,
                        value: choice(&test, side(&a), side(&b)),
                    });
                }
                Ok(out)
            }
        }
    }

    /// The fields an object written in place gives the context, read in
    /// order: a key writes its field; `...context` puts back every field
    /// written before it; a spread of an object literal is read in place;
    /// a spread of another object `m` and a computed key `[k]: v` may write
    /// any field, so each field of the context gets `has(m.f) ? m.f : ...`
    /// or `k == "f" ? v : ...` (the fields of the context are those its
    /// config declares). A returned value that is no object literal is
    /// such a spread.
    fn written_object(&mut self, node: Node<'a>, env: &Env<'a>) -> Result<Vec<Written>, Why> {
        let mut out: Vec<Written> = Vec::new();
        if matches!(self.base(node, env), Some(Bind::Context)) {
            return Ok(out);
        }
        self.written_parts(node, env, &mut out, 0)?;
        Ok(out)
    }

    fn written_parts(
        &mut self,
        node: Node<'a>,
        env: &Env<'a>,
        out: &mut Vec<Written>,
        depth: u32,
    ) -> Result<(), Why> {
        let o = match node.e.get_inner_expression() {
            Expression::ObjectExpression(o) => o,
            _ => {
                let value = self.cel(node, env)?;
                return self.written_spread(value, node, out);
            }
        };
        let t = node.t;
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) => {
                    let key_span = self.reader.span(t, p.key.span());
                    if p.kind != PropertyKind::Init || p.method {
                        return Err(Why {
                            message: "a method or accessor cannot be translated".into(),
                            span: key_span,
                        });
                    }
                    let value_node = Node { e: &p.value, t };
                    let value = self.cel(value_node, env)?;
                    let offset = self.span(value_node).start;
                    let key = match p.key.static_name().filter(|_| !p.computed) {
                        Some(key) => Some(key.to_string()),
                        None => {
                            let key_node = p.key.as_expression().map(|e| Node { e, t });
                            let Some(key_node) = key_node else {
                                return Err(Why {
                                    message: "this key cannot be translated".into(),
                                    span: key_span,
                                });
                            };
                            let key = self.map_key(key_node, env)?;
                            match crate::expr::parse(&key.text, 0).map(|e| e.kind) {
                                Ok(crate::expr::ExprKind::String(k)) => Some(k),
                                _ => {
                                    let fields = self.context_fields(key_node)?;
                                    for field in fields {
                                        let mut quoted = String::new();
                                        crate::expr::write_quoted(&field, &mut quoted).ok();
                                        let test = Cel::new(
                                            format!("{} == {quoted}", key.at(4)),
                                            3,
                                            Ty::Bool,
                                        );
                                        let now = current(out, &field);
                                        let value = choice(&test, value.clone(), now);
                                        write(out, &field, key_span, offset, value);
                                    }
                                    None
                                }
                            }
                        }
                    };
                    if let Some(key) = key {
                        write(out, &key, key_span, offset, value);
                    }
                }
                ObjectPropertyKind::SpreadProperty(s) => {
                    let spread = Node { e: &s.argument, t };
                    if matches!(self.base(spread, env), Some(Bind::Context)) {
                        out.clear();
                        continue;
                    }
                    let bound = matches!(spread.e.get_inner_expression(), Expression::Identifier(id) if env.get(id.name.as_str()).is_some());
                    if !bound
                        && depth < 32
                        && let Ok(r) = self.reader.resolve(spread)
                        && matches!(r.e, Expression::ObjectExpression(_))
                    {
                        self.written_parts(r, env, out, depth + 1)?;
                        continue;
                    }
                    let value = self.cel(spread, env)?;
                    self.written_spread(value, spread, out)?;
                }
            }
        }
        Ok(())
    }

    /// A spread of `m` into the partial context: each field of the context
    /// is `has(m.f) ? m.f : ` what it was.
    fn written_spread(&mut self, m: Cel, n: Node<'a>, out: &mut Vec<Written>) -> Result<(), Why> {
        if !matches!(m.ty, Ty::Map | Ty::Unknown) {
            return Err(self.why(
                "a spread of a value known to be no object (a list, a string, a number) cannot be translated",
                n,
            ));
        }
        let span = self.span(n);
        for field in self.context_fields(n)? {
            let member = format!("{}.{field}", m.at(7));
            let test = Cel::new(format!("has({member})"), 7, Ty::Bool);
            let now = current(out, &field);
            let value = choice(&test, Cel::new(member, 7, Ty::Unknown), now);
            write(out, &field, span, span.start, value);
        }
        Ok(())
    }

    /// The fields of the context, where a part of an assign may write any
    /// of them; an error where the config declares none.
    fn context_fields(&self, n: Node<'a>) -> Result<Vec<String>, Why> {
        let fields: Vec<String> = self
            .context_order
            .iter()
            .filter(|f| super::is_ident(f))
            .cloned()
            .collect();
        if fields.is_empty() {
            return Err(self.why(
                "it may write any field of the context, and the config declares none",
                n,
            ));
        }
        Ok(fields)
    }

    /// The properties of the object a function returns, for a use that
    /// takes its fields as they are (an event, an input, params): an object
    /// literal of static keys, or a choice between two with the same keys.
    fn plain_fields(&mut self, ret: Ret<'a>) -> Result<Vec<Written>, Why> {
        match ret {
            Ret::Value(node, env) => self.object_fields(node, &env),
            Ret::Choice(test, a, b) => {
                let a = self.plain_fields(*a)?;
                let b = self.plain_fields(*b)?;
                let same =
                    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.name.text == y.name.text);
                let Some(first) = a.first().or(b.first()) else {
                    return Ok(Vec::new());
                };
                if !same {
                    return Err(Why {
                        message: "its returns give objects of different keys".into(),
                        span: first.name.span,
                    });
                }
                Ok(a.into_iter()
                    .zip(b)
                    .map(|(x, y)| Written {
                        name: x.name,
                        offset: x.offset,
                        value: choice(&test, x.value, y.value),
                    })
                    .collect())
            }
        }
    }

    /// The properties of an object literal a function body gives, each
    /// translated in the function's scope; `...context` is skipped.
    fn object_fields(&mut self, object: Node<'a>, env: &Env<'a>) -> Result<Vec<Written>, Why> {
        let Expression::ObjectExpression(o) = object.e.get_inner_expression() else {
            return Err(self.why("the function does not return an object literal", object));
        };
        let mut out: Vec<Written> = Vec::new();
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
                    write(&mut out, &key, key_span, offset, cel);
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

/// A field an object writes: its name (where the key is written), where
/// its value is written, and the value.
#[derive(Clone)]
struct Written {
    name: Name,
    offset: u32,
    value: Cel,
}

/// The old value of a context field.
fn old(field: &str) -> Cel {
    Cel::new(format!("context.{field}"), 7, Ty::Unknown)
}

/// The value `field` has so far: what an earlier part wrote, else its old
/// value.
fn current(out: &[Written], field: &str) -> Cel {
    out.iter()
        .find(|w| w.name.text == field)
        .map(|w| w.value.clone())
        .unwrap_or_else(|| old(field))
}

/// Writes `field` (a later write replaces an earlier one in place).
fn write(out: &mut Vec<Written>, field: &str, span: crate::span::Span, offset: u32, value: Cel) {
    match out.iter_mut().find(|w| w.name.text == field) {
        Some(w) => {
            w.value = value;
        }
        None => out.push(Written {
            name: Name {
                text: field.to_string(),
                span,
            },
            offset,
            value,
        }),
    }
}
