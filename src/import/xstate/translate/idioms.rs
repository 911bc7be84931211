//! Calls: the methods and functions whose meaning is exact in the machine
//! format, the idioms assigns are made of (merges, sets, appends,
//! removals), and the repository's own pure helpers, inlined.
//!
//! Each keeps the meaning JavaScript gives it: `{...a, ...b}` and
//! `Object.assign({}, a, b)` are `merge(a, b)` (the right wins; a spread
//! of `null` is nothing, as `merge` takes `null` for no entries); a `Set`
//! is the list of its elements once each, in the order first added
//! (`distinct`); `concat` spreads a list argument and appends anything
//! else; `filter` that keeps the items whose key (or self) differs from a
//! value is `without_by` (`without`). JavaScript compares objects by
//! reference where these compare values: a `Set` member or a removed value
//! known to be an object or list stays opaque.

use oxc_ast::ast::*;

use super::super::config::{Cx, callee_name};
use super::super::scope::{FnRef, Node, TextId};
use super::body::append;
use super::{Bind, Cel, Env, Ty, Why};

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
            let object = sub(&m.object);
            if method == "includes" && args.len() == 1 {
                let list = self.cel(object, env)?;
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
            if m.object.is_specific_id("Object") && method == "assign" {
                return self.object_assign(&args, n, env);
            }
            if m.object.is_specific_id("Array") && method == "from" && args.len() == 1 {
                let mut list = self.cel(sub(args[0]), env)?;
                if !matches!(list.ty, Ty::List | Ty::Set) {
                    return Err(self.why(
                        "`Array.from` is translated for lists and sets only, and this is not known to be one",
                        n,
                    ));
                }
                list.ty = Ty::List;
                list.set_of = None;
                return Ok(list);
            }
            match (method, args.len()) {
                ("slice", 0) => {
                    let list = self.cel(object, env)?;
                    if list.ty == Ty::List {
                        return Ok(list);
                    }
                }
                ("concat", _) => return self.concat(object, &args, n, env),
                ("filter", 1) => return self.filter(object, sub(args[0]), n, env),
                ("has", 1) => {
                    let set = self.cel(object, env)?;
                    if set.ty == Ty::Set {
                        let item = self.cel(sub(args[0]), env)?;
                        return Ok(Cel::new(
                            format!("{} in {}", item.at(4), set.at(4)),
                            3,
                            Ty::Bool,
                        ));
                    }
                }
                // `new Set(s).add(x)`: an add to a set made here.
                ("add", 1) if is_new_set(&m.object) => {
                    let set = self.cel(object, env)?;
                    let item = self.cel(sub(args[0]), env)?;
                    return self.set_add(set, &item, n);
                }
                _ => {}
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
        if self.scxml.is_none()
            && let Some((f, t)) = self.helper(sub(&call.callee), env)
        {
            let args: Vec<Node<'a>> = args.iter().map(|a| sub(a)).collect();
            return self.inline(f, t, &args, n, env).map_err(|why| Why {
                message: format!(
                    "it calls `{name}`, whose body cannot be translated: {}",
                    why.message
                ),
                span: self.span(n),
            });
        }
        Err(self.why(
            format!("it calls `{name}`, which only JavaScript can run"),
            n,
        ))
    }

    /// `new Set()`, `new Set(list)`, `new Set(set)`: `distinct(list)`.
    pub(super) fn new_set(
        &mut self,
        e: &'a NewExpression<'a>,
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        // Members written as objects or lists are compared by reference.
        if let [Argument::ArrayExpression(a)] = e.arguments.as_slice()
            && a.elements.iter().any(|el| {
                matches!(
                    el.as_expression().map(|x| x.get_inner_expression()),
                    Some(Expression::ObjectExpression(_) | Expression::ArrayExpression(_))
                )
            })
        {
            return Err(self.why(
                "JavaScript compares objects and lists by reference, the machine format by value",
                n,
            ));
        }
        let list = match e.arguments.as_slice() {
            [] => Cel::new("[]".into(), 7, Ty::List),
            [arg] => match arg.as_expression() {
                Some(arg) => self.cel(Node { e: arg, t: n.t }, env)?,
                None => return Err(self.why("a spread argument cannot be translated", n)),
            },
            _ => return Err(self.why("`new Set` takes one list", n)),
        };
        match list.ty {
            Ty::Set => Ok(list),
            Ty::List => {
                let mut set = Cel::new(format!("distinct({})", list.text), 7, Ty::Set);
                set.set_of = Some(Box::new(list));
                Ok(set)
            }
            _ => Err(self.why(
                "`new Set` is translated of a list or set, and this is not known to be one",
                n,
            )),
        }
    }

    /// `set.add(item)`: `distinct(L + [item])` for a set `distinct(L)`.
    pub(super) fn set_add(&mut self, set: Cel, item: &Cel, n: Node<'a>) -> Result<Cel, Why> {
        self.by_value(item, n)?;
        let list = match set.set_of {
            Some(list) if list.text == "[]" => Cel::new(format!("[{}]", item.text), 7, Ty::List),
            Some(list) => append(*list, std::slice::from_ref(item)),
            None => append(
                Cel {
                    ty: Ty::List,
                    ..set
                },
                std::slice::from_ref(item),
            ),
        };
        let mut out = Cel::new(format!("distinct({})", list.text), 7, Ty::Set);
        out.set_of = Some(Box::new(list));
        Ok(out)
    }

    /// An error where `value` is known to be an object or a list, which
    /// JavaScript compares by reference where the translation compares
    /// values.
    pub(super) fn by_value(&self, value: &Cel, n: Node<'a>) -> Result<(), Why> {
        if matches!(value.ty, Ty::Map | Ty::List | Ty::Set) {
            return Err(self.why(
                "JavaScript compares objects and lists by reference, the machine format by value",
                n,
            ));
        }
        Ok(())
    }

    /// `list.concat(a, b)`: a list argument's items, anything else as one
    /// item.
    fn concat(
        &mut self,
        object: Node<'a>,
        args: &[&'a Expression<'a>],
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        let list = self.cel(object, env)?;
        if list.ty != Ty::List {
            return Err(self.why(
                "`.concat` is translated for lists only, and this is not known to be one",
                n,
            ));
        }
        let mut segments = vec![list.at(5)];
        for arg in args {
            let arg = self.cel(Node { e: arg, t: n.t }, env)?;
            match arg.ty {
                Ty::List => segments.push(arg.at(5)),
                Ty::Map | Ty::Bool | Ty::Number | Ty::String => {
                    segments.push(format!("[{}]", arg.text));
                }
                Ty::Set | Ty::Unknown => {
                    return Err(self.why(
                        "`.concat` spreads a list and appends anything else, and this argument is not known to be either",
                        n,
                    ));
                }
            }
        }
        if segments.len() == 1 {
            return Ok(list);
        }
        Ok(Cel::new(segments.join(" + "), 4, Ty::List))
    }

    /// `list.filter(item => item.k !== x)` (`!=`, `x !== item.k`, `({ k })
    /// => k !== x`) as `without_by(list, "k", x)`, and `list.filter(item =>
    /// item !== x)` as `without(list, x)`, where `x` does not read the
    /// item.
    fn filter(
        &mut self,
        object: Node<'a>,
        test: Node<'a>,
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        let unread = || "`.filter` is translated where it removes the items whose key, or which, equals a value: `list.filter((item) => item.id !== event.id)`";
        let list = self.cel(object, env)?;
        if list.ty != Ty::List {
            return Err(self.why(
                "`.filter` is translated for lists only, and this is not known to be one",
                n,
            ));
        }
        let f = match test.e.get_inner_expression() {
            Expression::ArrowFunctionExpression(f) => FnRef::Arrow(f),
            Expression::FunctionExpression(f) => FnRef::Func(f),
            _ => return Err(self.why(unread(), n)),
        };
        let params = f.params();
        let [param] = params.items.as_slice() else {
            return Err(self.why(unread(), n));
        };
        if params.rest.is_some() {
            return Err(self.why(unread(), n));
        }
        // The item: a name, or `{ k }` of one key.
        let (item, key): (&str, Option<String>) = match &param.pattern {
            BindingPattern::BindingIdentifier(id) => (id.name.as_str(), None),
            BindingPattern::ObjectPattern(o) if o.rest.is_none() && o.properties.len() == 1 => {
                let p = &o.properties[0];
                match (&p.value, p.key.static_name().filter(|_| !p.computed)) {
                    (BindingPattern::BindingIdentifier(id), Some(k)) => {
                        (id.name.as_str(), Some(k.to_string()))
                    }
                    _ => return Err(self.why(unread(), n)),
                }
            }
            _ => return Err(self.why(unread(), n)),
        };
        let body = match f.body() {
            Err(e) => e,
            Ok([Statement::ReturnStatement(r)]) => match &r.argument {
                Some(e) => e,
                None => return Err(self.why(unread(), n)),
            },
            Ok(_) => return Err(self.why(unread(), n)),
        };
        let Expression::BinaryExpression(b) = body.get_inner_expression() else {
            return Err(self.why(unread(), n));
        };
        if !matches!(
            b.operator,
            BinaryOperator::StrictInequality | BinaryOperator::Inequality
        ) {
            return Err(self.why(unread(), n));
        }
        // Which side reads the item: `item`, `item.k` (or the key's name).
        let reads = |e: &Expression<'a>| -> Option<Option<String>> {
            match e.get_inner_expression() {
                Expression::Identifier(id) if id.name == item => Some(key.clone()),
                Expression::StaticMemberExpression(m)
                    if key.is_none() && m.object.is_specific_id(item) && !m.optional =>
                {
                    Some(Some(m.property.name.to_string()))
                }
                _ => None,
            }
        };
        let (by, value) = match (reads(&b.left), reads(&b.right)) {
            (Some(by), None) => (by, &b.right),
            (None, Some(by)) => (by, &b.left),
            _ => return Err(self.why(unread(), n)),
        };
        // The value is read where the item is not bound: a read of it fails.
        let mut inner = env.clone();
        inner.binds.push((item, Bind::Other(item.to_string())));
        let value = self.cel(
            Node {
                e: value,
                t: test.t,
            },
            &inner,
        )?;
        self.by_value(&value, n)?;
        Ok(match by {
            None => Cel::new(
                format!("without({}, {})", list.text, value.text),
                7,
                Ty::List,
            ),
            Some(k) => {
                let mut field = String::new();
                crate::expr::write_quoted(&k, &mut field).ok();
                Cel::new(
                    format!("without_by({}, {field}, {})", list.text, value.text),
                    7,
                    Ty::List,
                )
            }
        })
    }

    /// `Object.assign(target, a, b)` of a target written in place (`{}`
    /// or an object literal): `merge(merge(target, a), b)`.
    fn object_assign(
        &mut self,
        args: &[&'a Expression<'a>],
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        let Some((target, sources)) = args.split_first() else {
            return Err(self.why("`Object.assign` needs a target", n));
        };
        let Expression::ObjectExpression(o) = target.get_inner_expression() else {
            return Err(self.why(
                "`Object.assign` changes its target, which is translated only where it is an object written in place (`Object.assign({}, a, b)`)",
                n,
            ));
        };
        let mut value = if o.properties.is_empty() {
            None
        } else {
            Some(self.cel(Node { e: target, t: n.t }, env)?)
        };
        for source in sources {
            let source = self.cel(Node { e: source, t: n.t }, env)?;
            value = Some(match value {
                None => self.merge_first(source, n)?,
                Some(acc) => self.merged(acc, source, n)?,
            });
        }
        Ok(value.unwrap_or_else(|| Cel::new("{}".into(), 7, Ty::Map)))
    }

    /// The first part of a merge: a map as it is, `merge({}, x)` for a
    /// value that may be `null` (whose spread is nothing).
    pub(super) fn merge_first(&self, part: Cel, n: Node<'a>) -> Result<Cel, Why> {
        self.spreadable(&part, n)?;
        if part.ty == Ty::Map {
            return Ok(part);
        }
        Ok(Cel::new(format!("merge({{}}, {})", part.text), 7, Ty::Map))
    }

    /// `merge(acc, part)`.
    pub(super) fn merged(&self, acc: Cel, part: Cel, n: Node<'a>) -> Result<Cel, Why> {
        self.spreadable(&part, n)?;
        Ok(Cel::new(
            format!("merge({}, {})", acc.text, part.text),
            7,
            Ty::Map,
        ))
    }

    /// An error where `part` is known to be no object: a spread of a list
    /// or string gives its indices as keys, of a number nothing.
    fn spreadable(&self, part: &Cel, n: Node<'a>) -> Result<(), Why> {
        if matches!(part.ty, Ty::Map | Ty::Unknown) {
            return Ok(());
        }
        Err(self.why(
            "a spread of a value known to be no object (a list, a string, a number) cannot be translated",
            n,
        ))
    }

    /// A computed key of an object (`[event.name]: value`): a string.
    pub(super) fn map_key(&mut self, key: Node<'a>, env: &Env<'a>) -> Result<Cel, Why> {
        if let Some((text, _)) = self.reader.key_text(key)
            && !matches!(key.e.get_inner_expression(), Expression::Identifier(id) if env.get(id.name.as_str()).is_some())
        {
            let mut quoted = String::new();
            crate::expr::write_quoted(&text, &mut quoted).ok();
            return Ok(Cel::new(quoted, 7, Ty::String));
        }
        let k = self.cel(key, env)?;
        if !matches!(k.ty, Ty::String | Ty::Unknown) {
            return Err(self.why(
                "a key that is no string cannot be translated: JavaScript makes it one",
                key,
            ));
        }
        Ok(k)
    }

    /// The function a callee names, where it is one of the repository's
    /// (a function declaration, or a `const` bound to an arrow or a
    /// function expression, here or imported) and not a name of the body.
    fn helper(&mut self, callee: Node<'a>, env: &Env<'a>) -> Option<(FnRef<'a>, TextId)> {
        if let Expression::Identifier(id) = callee.e.get_inner_expression()
            && env.get(id.name.as_str()).is_some()
        {
            return None;
        }
        let r = self.reader.resolve(callee).ok()?;
        self.reader.function_ref(r)
    }

    /// A call of a helper, inlined: its parameters bound to the
    /// arguments (the context, the event or a field of them where an
    /// argument names one, else its translation), its body read.
    fn inline(
        &mut self,
        f: FnRef<'a>,
        t: TextId,
        args: &[Node<'a>],
        n: Node<'a>,
        env: &Env<'a>,
    ) -> Result<Cel, Why> {
        if self.reader.evaluations == 0 || env.depth + 8 > crate::expr::MAX_DEPTH {
            return Err(self.why("helpers call each other too deeply", n));
        }
        self.reader.evaluations -= 1;
        let params = f.params();
        if params.rest.is_some() {
            return Err(self.why("a rest parameter cannot be translated", n));
        }
        let mut inner = Env {
            binds: Vec::new(),
            view: env.view,
            depth: env.depth + 8,
        };
        let span = self.span(n);
        for (i, param) in params.items.iter().enumerate() {
            let bind = match (args.get(i), &param.initializer) {
                (Some(arg), _) => self.value_bind(*arg, env)?,
                (None, Some(default)) => self.value_bind(Node { e: default, t }, &inner)?,
                (None, None) => Bind::Local(Cel::new("null".into(), 7, Ty::Unknown), None),
            };
            self.destructure(&param.pattern, bind, span, &mut inner)?;
        }
        let ret = self.body(f, t, inner)?;
        self.ret_cel(ret)
    }
}

/// Whether `e` is `new Set(...)`, or an `.add(...)` of one.
fn is_new_set(e: &Expression) -> bool {
    match e.get_inner_expression() {
        Expression::NewExpression(n) => n.callee.is_specific_id("Set"),
        Expression::CallExpression(c) => match c.callee.get_inner_expression() {
            Expression::StaticMemberExpression(m) if m.property.name == "add" => {
                is_new_set(&m.object)
            }
            _ => false,
        },
        _ => false,
    }
}
