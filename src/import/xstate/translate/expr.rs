//! Expressions: literals, names, members, operators, lists and objects.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::super::Version;
use super::super::config::Cx;
use super::super::scope::{Node, TextId};
use super::{
    Base, Bind, Cel, Env, SCXML_EVENT, Ty, View, Why, is_ident, number_text, property_node,
};

impl<'a> Cx<'_, 'a> {
    /// What a name or member chain stands for, when it is the context, the
    /// event or v5's argument object.
    pub(super) fn base(&mut self, n: Node<'a>, env: &Env<'a>) -> Option<Bind<'a>> {
        match n.e.get_inner_expression() {
            Expression::Identifier(id) => match env.get(id.name.as_str())? {
                b @ (Bind::Context | Bind::Event | Bind::Args) => Some(b.clone()),
                _ => None,
            },
            // Only `args.context` and `args.event` are bases: a longer chain
            // is not followed, however long it is.
            Expression::StaticMemberExpression(m)
                if matches!(m.object.get_inner_expression(), Expression::Identifier(_)) =>
            {
                let object = Node {
                    e: &m.object,
                    t: n.t,
                };
                match (self.base(object, env)?, m.property.name.as_str()) {
                    (Bind::Args, "context") => Some(Bind::Context),
                    (Bind::Args, "event") => Some(Bind::Event),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    pub(super) fn source_text(&self, n: Node<'a>) -> String {
        let span = n.e.span();
        let t = &self.reader.texts[n.t];
        let _ = t;
        let Some(main) = self.reader.sources.files().next() else {
            return String::new();
        };
        let at = self.span(n);
        match main.text.get(at.range()) {
            Some(text) => text.to_string(),
            None => format!("{} bytes of code", span.size()),
        }
    }

    /// The translation of one expression in `env`.
    pub(super) fn cel(&mut self, n: Node<'a>, env: &Env<'a>) -> Result<Cel, Why> {
        if env.depth > crate::expr::MAX_DEPTH {
            return Err(self.why(
                format!(
                    "the expression nests more than {} levels deep",
                    crate::expr::MAX_DEPTH
                ),
                n,
            ));
        }
        let mut env_deeper = env.clone();
        env_deeper.depth += 1;
        let env = &env_deeper;
        let e = n.e.get_inner_expression();
        let node = Node { e, t: n.t };
        let sub = |e: &'a Expression<'a>| Node { e, t: n.t };
        Ok(match e {
            Expression::NumericLiteral(x) => Cel::new(
                number_text(x.value)
                    .ok_or_else(|| self.why("this number cannot be written exactly", node))?,
                7,
                Ty::Number,
            ),
            Expression::StringLiteral(s) => {
                let mut text = String::new();
                crate::expr::write_quoted(s.value.as_str(), &mut text).ok();
                Cel::new(text, 7, Ty::String)
            }
            Expression::TemplateLiteral(t) => match t.single_quasi() {
                Some(s) => {
                    let mut text = String::new();
                    crate::expr::write_quoted(s.as_str(), &mut text).ok();
                    Cel::new(text, 7, Ty::String)
                }
                None => return Err(self.why("a template with `${}` cannot be translated", node)),
            },
            Expression::BooleanLiteral(b) => Cel::new(b.value.to_string(), 7, Ty::Bool),
            Expression::NullLiteral(_) => Cel::new("null".into(), 7, Ty::Unknown),
            Expression::Identifier(id) => {
                let name = id.name.as_str();
                match env.get(name).cloned() {
                    Some(Bind::Field(base, field)) => self.field(base, &field, env, node)?,
                    Some(Bind::Local(c, copy)) => {
                        if let Some(copy) = copy {
                            self.read_copies.insert(copy);
                        }
                        c
                    }
                    Some(Bind::Value(v)) => self.cel(v, &Env::empty(env.view))?,
                    Some(Bind::Context) => return Err(self.why("the whole context cannot be translated, only its fields", node)),
                    Some(Bind::Event) => return Err(self.why("the whole event cannot be translated, only its fields", node)),
                    Some(Bind::Args) => return Err(self.why("the argument object cannot be translated, only `.context` and `.event` fields", node)),
                    Some(Bind::Other(p)) => return Err(self.why(format!("`{p}` has no counterpart in the machine format"), node)),
                    Some(Bind::ScxmlEvent) => return Err(self.why(SCXML_EVENT, node)),
                    None if name == "undefined" => Cel::new("null".into(), 7, Ty::Unknown),
                    None if self.scxml.is_some_and(|m| m.is_data(name)) => {
                        self.field(Base::Context, name, env, node)?
                    }
                    None if self.scxml.is_some() => {
                        let why = if matches!(name, "_sessionid" | "_name" | "_ioprocessors" | "_x") {
                            format!("the system variable `{name}` has no counterpart in the machine format")
                        } else {
                            format!("unknown variable `{name}`: it is not declared in the data model")
                        };
                        return Err(self.why(why, node));
                    }
                    None => {
                        // A const of the file bound to a literal.
                        match self.reader.resolve(node) {
                            Ok(r) if !matches!(r.e, Expression::Identifier(_)) && env.depth < 32 => {
                                self.cel(r, &Env { depth: env.depth + 8, ..Env::empty(env.view) })
                                    .map_err(|_| self.why(format!("`{name}` is not bound to a literal"), node))?
                            }
                            _ => return Err(self.why(format!("`{name}` is defined outside the function"), node)),
                        }
                    }
                }
            }
            Expression::StaticMemberExpression(m) => {
                if m.optional {
                    return Err(self.why("optional chaining (`?.`) cannot be translated", node));
                }
                let object = sub(&m.object);
                let name = m.property.name.as_str();
                if let Some(scxml) = self.scxml_event(object, name, env) {
                    return scxml.map_err(|message| self.why(message, node));
                }
                match self.base(object, env) {
                    Some(Bind::Context) => self.field(Base::Context, name, env, node)?,
                    Some(Bind::Event) => self.field(Base::Event, name, env, node)?,
                    Some(Bind::Args) => {
                        return Err(self.why(
                            format!("`.{name}` of the argument object has no counterpart"),
                            node,
                        ));
                    }
                    _ => {
                        if let Some(Bind::Value(v)) = match m.object.get_inner_expression() {
                            Expression::Identifier(id) => env.get(id.name.as_str()).cloned(),
                            _ => None,
                        } && let Ok(v) = self.reader.resolve(v)
                            && let Some(field) = property_node(v, name)
                        {
                            return self.cel(field, &Env::empty(env.view));
                        }
                        let inner = self.cel(object, env)?;
                        if name == "size" && inner.ty == Ty::Set {
                            Cel::new(format!("size({})", inner.text), 7, Ty::Number)
                        } else if inner.ty == Ty::Set {
                            return Err(
                                self.why(format!("`.{name}` of a set cannot be translated"), node)
                            );
                        } else if name == "length" {
                            // SCXML documents write `.length` of arrays only.
                            if inner.ty != Ty::List && self.scxml.is_none() {
                                return Err(self.why("`.length` is translated for lists only, and this is not known to be one", node));
                            }
                            Cel::new(format!("size({})", inner.text), 7, Ty::Number)
                        } else {
                            if !is_ident(name) {
                                return Err(self.why(
                                    format!(
                                        "the field `{name}` cannot be written in the machine format"
                                    ),
                                    node,
                                ));
                            }
                            Cel::new(format!("{}.{name}", inner.at(7)), 7, Ty::Unknown)
                        }
                    }
                }
            }
            Expression::ComputedMemberExpression(m) => {
                if m.optional {
                    return Err(self.why("optional chaining (`?.`) cannot be translated", node));
                }
                if let Expression::StringLiteral(field) = m.expression.get_inner_expression()
                    && let Some(scxml) = self.scxml_event(sub(&m.object), field.value.as_str(), env)
                {
                    return scxml.map_err(|message| self.why(message, node));
                }
                let object = self.cel(sub(&m.object), env)?;
                let index = self.cel(sub(&m.expression), env)?;
                Cel::new(format!("{}[{}]", object.at(7), index.text), 7, Ty::Unknown)
            }
            Expression::ChainExpression(_) => {
                return Err(self.why("optional chaining (`?.`) cannot be translated", node));
            }
            Expression::CallExpression(call) => self.call(call, node, env)?,
            Expression::UnaryExpression(u) => {
                // The operator first: `typeof x` is refused for `typeof`.
                if !matches!(
                    u.operator,
                    UnaryOperator::LogicalNot | UnaryOperator::UnaryNegation
                ) {
                    return Err(self.why(
                        format!("`{}` cannot be translated", u.operator.as_str()),
                        node,
                    ));
                }
                let operand = self.cel(sub(&u.argument), env)?;
                match u.operator {
                    UnaryOperator::LogicalNot => {
                        Cel::new(format!("!{}", operand.at(6)), 6, Ty::Bool)
                    }
                    UnaryOperator::UnaryNegation => {
                        Cel::new(format!("-{}", operand.at(6)), 6, Ty::Number)
                    }
                    other => {
                        return Err(
                            self.why(format!("`{}` cannot be translated", other.as_str()), node)
                        );
                    }
                }
            }
            Expression::BinaryExpression(b) => {
                let (op, level, ty) = match b.operator {
                    BinaryOperator::StrictEquality | BinaryOperator::Equality => {
                        ("==", 3, Ty::Bool)
                    }
                    BinaryOperator::StrictInequality | BinaryOperator::Inequality => {
                        ("!=", 3, Ty::Bool)
                    }
                    BinaryOperator::LessThan => ("<", 3, Ty::Bool),
                    BinaryOperator::LessEqualThan => ("<=", 3, Ty::Bool),
                    BinaryOperator::GreaterThan => (">", 3, Ty::Bool),
                    BinaryOperator::GreaterEqualThan => (">=", 3, Ty::Bool),
                    BinaryOperator::Addition => ("+", 4, Ty::Unknown),
                    BinaryOperator::Subtraction => ("-", 4, Ty::Number),
                    BinaryOperator::Multiplication => ("*", 5, Ty::Number),
                    BinaryOperator::Remainder => ("%", 5, Ty::Number),
                    BinaryOperator::Division => {
                        return Err(self.why("`/` cannot be translated: CEL divides integers without a fraction, JavaScript does not", node));
                    }
                    other => {
                        return Err(
                            self.why(format!("`{}` cannot be translated", other.as_str()), node)
                        );
                    }
                };
                let left = self.cel(sub(&b.left), env)?;
                let right = self.cel(sub(&b.right), env)?;
                if op == "+"
                    && [left.ty, right.ty]
                        .iter()
                        .any(|t| matches!(t, Ty::List | Ty::Set | Ty::Map))
                {
                    return Err(self.why(
                        "`+` of a list or an object joins their texts in JavaScript",
                        node,
                    ));
                }
                let ty = if op == "+" {
                    match (left.ty, right.ty) {
                        (Ty::List, Ty::List) => Ty::List,
                        (Ty::Number, Ty::Number) => Ty::Number,
                        (Ty::String, _) | (_, Ty::String) => Ty::String,
                        _ => Ty::Unknown,
                    }
                } else {
                    ty
                };
                Cel::new(
                    format!("{} {op} {}", left.at(level), right.at(level + 1)),
                    level,
                    ty,
                )
            }
            Expression::LogicalExpression(l) => {
                let left = self.cel(sub(&l.left), env)?;
                let right = self.cel(sub(&l.right), env)?;
                match l.operator {
                    LogicalOperator::And => {
                        Cel::new(format!("{} && {}", left.at(2), right.at(3)), 2, Ty::Bool)
                    }
                    LogicalOperator::Or => {
                        Cel::new(format!("{} || {}", left.at(1), right.at(2)), 1, Ty::Bool)
                    }
                    LogicalOperator::Coalesce => {
                        // `a ?? b`: `a` unless it is null (or, for a field,
                        // absent).
                        let test = if matches!(
                            l.left.get_inner_expression(),
                            Expression::StaticMemberExpression(_)
                        ) && left.text.contains('.')
                        {
                            format!("has({}) && {} != null", left.text, left.at(4))
                        } else {
                            format!("{} != null", left.at(4))
                        };
                        let ty = if left.ty == right.ty {
                            left.ty
                        } else {
                            Ty::Unknown
                        };
                        Cel::new(format!("{test} ? {} : {}", left.at(1), right.at(0)), 0, ty)
                    }
                }
            }
            Expression::ConditionalExpression(c) => {
                let test = self.cel(sub(&c.test), env)?;
                let then = self.cel(sub(&c.consequent), env)?;
                let otherwise = self.cel(sub(&c.alternate), env)?;
                let ty = if then.ty == otherwise.ty {
                    then.ty
                } else {
                    Ty::Unknown
                };
                Cel::new(
                    format!("{} ? {} : {}", test.at(1), then.at(1), otherwise.at(0)),
                    0,
                    ty,
                )
            }
            Expression::ArrayExpression(a) => {
                // `[...a, x, ...b]` is `a + [x] + b`.
                let mut segments: Vec<Cel> = Vec::new();
                let mut items: Vec<String> = Vec::new();
                for el in &a.elements {
                    match el {
                        ArrayExpressionElement::SpreadElement(s) => {
                            let spread = self.cel(sub(&s.argument), env)?;
                            if !matches!(spread.ty, Ty::List | Ty::Set) {
                                return Err(self.why("a spread is translated for lists and sets only, and this is not known to be one", sub(&s.argument)));
                            }
                            if !items.is_empty() {
                                segments.push(Cel::new(
                                    format!("[{}]", items.join(", ")),
                                    7,
                                    Ty::List,
                                ));
                                items.clear();
                            }
                            segments.push(spread);
                        }
                        ArrayExpressionElement::Elision(_) => {
                            return Err(self.why("a hole in an array cannot be translated", node));
                        }
                        other => {
                            let Some(e) = other.as_expression() else {
                                continue;
                            };
                            items.push(self.cel(sub(e), env)?.text);
                        }
                    }
                }
                if !items.is_empty() || segments.is_empty() {
                    segments.push(Cel::new(format!("[{}]", items.join(", ")), 7, Ty::List));
                }
                if segments.len() == 1 {
                    let mut only = segments.remove(0);
                    only.ty = Ty::List;
                    only.set_of = None;
                    only
                } else {
                    let text: Vec<String> = segments.iter().map(|s| s.at(5)).collect();
                    Cel::new(text.join(" + "), 4, Ty::List)
                }
            }
            Expression::ObjectExpression(o) => self.object(o, node, env)?,
            Expression::NewExpression(e) if e.callee.is_specific_id("Set") => {
                self.new_set(e, node, env)?
            }
            Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_) => {
                return Err(self.why("a function inside an expression cannot be translated", node));
            }
            _ => return Err(self.why("this kind of expression cannot be translated", node)),
        })
    }

    /// An object literal as a map: its static keys in map literals, each
    /// computed key in one of its own, and the parts merged in order
    /// (`{...a, k: v, ...b}` is `merge(merge(a, {"k": v}), b)`), so that a
    /// later key wins as in JavaScript. Spreads of object literals are
    /// flattened.
    pub(super) fn object(
        &mut self,
        o: &'a ObjectExpression<'a>,
        at: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        let t = at.t;
        let mut parts: Vec<Cel> = Vec::new();
        let mut entries: Vec<(String, String)> = Vec::new();
        self.object_parts(o, t, env, &mut parts, &mut entries, 0)?;
        flush(&mut parts, &mut entries);
        let mut parts = parts.into_iter();
        let Some(first) = parts.next() else {
            return Ok(Cel::new("{}".into(), 7, Ty::Map));
        };
        let mut value = self.merge_first(first, at)?;
        for part in parts {
            value = self.merged(value, part, at)?;
        }
        Ok(value)
    }

    fn object_parts(
        &mut self,
        o: &'a ObjectExpression<'a>,
        t: TextId,
        env: &Env<'a>,
        parts: &mut Vec<Cel>,
        entries: &mut Vec<(String, String)>,
        depth: u32,
    ) -> Result<(), Why> {
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) => {
                    if p.kind != PropertyKind::Init || p.method {
                        return Err(Why {
                            message: "a method or accessor cannot be translated".into(),
                            span: self.reader.span(t, p.span),
                        });
                    }
                    let value = self.cel(Node { e: &p.value, t }, env)?;
                    let key = match p.key.static_name().filter(|_| !p.computed) {
                        Some(key) => key.to_string(),
                        None => {
                            let Some(key) = p.key.as_expression() else {
                                return Err(Why {
                                    message: "this key cannot be translated".into(),
                                    span: self.reader.span(t, p.key.span()),
                                });
                            };
                            let key = self.map_key(Node { e: key, t }, env)?;
                            match crate::expr::parse(&key.text, 0).map(|e| e.kind) {
                                Ok(crate::expr::ExprKind::String(k)) => k,
                                _ => {
                                    // A key known only when it runs: a
                                    // map of its own, merged in order.
                                    flush(parts, entries);
                                    parts.push(Cel::new(
                                        format!("{{{}: {}}}", key.text, value.text),
                                        7,
                                        Ty::Map,
                                    ));
                                    continue;
                                }
                            }
                        }
                    };
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = value.text,
                        None => entries.push((key, value.text)),
                    }
                }
                ObjectPropertyKind::SpreadProperty(s) => {
                    let spread = Node { e: &s.argument, t };
                    let bound = matches!(spread.e.get_inner_expression(), Expression::Identifier(id) if env.get(id.name.as_str()).is_some());
                    if !bound
                        && depth < 32
                        && let Ok(r) = self.reader.resolve(spread)
                        && let Expression::ObjectExpression(inner) = r.e
                    {
                        self.object_parts(inner, r.t, env, parts, entries, depth + 1)?;
                        continue;
                    }
                    let value = self.cel(spread, env)?;
                    flush(parts, entries);
                    parts.push(value);
                }
            }
        }
        Ok(())
    }

    /// `context.f` or `event.f`, with v4's `event.data` of a completion as
    /// its `output` or `error`.
    pub(super) fn field(
        &mut self,
        base: Base,
        name: &str,
        env: &Env<'a>,
        n: Node<'a>,
    ) -> Result<Cel, Why> {
        if !is_ident(name) {
            return Err(self.why(
                format!("the field `{name}` cannot be written in the machine format"),
                n,
            ));
        }
        Ok(match base {
            Base::Context => {
                let ty = match self.context.get(name) {
                    Some(serde_json::Value::Array(_)) => Ty::List,
                    Some(serde_json::Value::Object(_)) => Ty::Map,
                    Some(serde_json::Value::Bool(_)) => Ty::Bool,
                    Some(serde_json::Value::Number(_)) => Ty::Number,
                    Some(serde_json::Value::String(_)) => Ty::String,
                    _ => Ty::Unknown,
                };
                Cel::new(format!("context.{name}"), 7, ty)
            }
            Base::Event => {
                let name = match (self.version, env.view, name) {
                    (Version::V4, View::Done, "data") => "output",
                    (Version::V4, View::Error, "data") => "error",
                    _ => name,
                };
                let ty = self
                    .payloads
                    .values()
                    .filter_map(|p| p.get(name))
                    .next()
                    .map_or(Ty::Unknown, |t| match t.as_str() {
                        "list" => Ty::List,
                        "map" => Ty::Map,
                        "boolean" => Ty::Bool,
                        "number" | "integer" => Ty::Number,
                        "string" => Ty::String,
                        _ => Ty::Unknown,
                    });
                Cel::new(format!("event.{name}"), 7, ty)
            }
        })
    }

    /// SCXML's `_event.name` (the event's type) and `_event.data.F` (a
    /// payload field; in a completion's handler, of its output or error);
    /// `None` where `object` is not `_event` or `_event.data`.
    pub(super) fn scxml_event(
        &mut self,
        object: Node<'a>,
        name: &str,
        env: &Env<'a>,
    ) -> Option<Result<Cel, String>> {
        let is_event = |e: &Expression<'a>| match e.get_inner_expression() {
            Expression::Identifier(id) => {
                matches!(env.get(id.name.as_str()), Some(Bind::ScxmlEvent))
            }
            _ => false,
        };
        match object.e.get_inner_expression() {
            e if is_event(e) => Some(match name {
                "name" => Ok(Cel::new("event.type".into(), 7, Ty::String)),
                "data" => Err(SCXML_EVENT.replacen("`_event`", "`_event.data`", 1)),
                other => Err(format!(
                    "`_event.{other}` has no counterpart in the machine format: only `_event.name` and `_event.data.FIELD` have"
                )),
            }),
            Expression::StaticMemberExpression(m)
                if m.property.name == "data" && is_event(&m.object) =>
            {
                if !is_ident(name) {
                    return Some(Err(format!(
                        "the event field `{name}` is not a valid CEL field name"
                    )));
                }
                let base = match env.view {
                    View::Plain => "event",
                    View::Done => "event.output",
                    View::Error => "event.error",
                };
                Some(Ok(Cel::new(format!("{base}.{name}"), 7, Ty::Unknown)))
            }
            _ => None,
        }
    }
}

/// The static entries gathered so far, as one map literal part.
fn flush(parts: &mut Vec<Cel>, entries: &mut Vec<(String, String)>) {
    if entries.is_empty() {
        return;
    }
    let items: Vec<String> = entries
        .drain(..)
        .map(|(k, v)| {
            let mut key = String::new();
            crate::expr::write_quoted(&k, &mut key).ok();
            format!("{key}: {v}")
        })
        .collect();
    parts.push(Cel::new(format!("{{{}}}", items.join(", ")), 7, Ty::Map));
}
