//! Functions: their parameters bound, their bodies read.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::super::Version;
use super::super::config::Cx;
use super::super::scope::{FnRef, Node, TextId};
use super::{Base, Bind, Cel, Env, Role, Ty, View, Why, is_ident, property_node};
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
        let env = self.bind(f, t, params, view)?;
        let ret = self.body(f, t, env)?;
        let mut cel = self.ret_cel(ret)?;
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
        match read_pattern(pattern).map_err(unsupported)? {
            Pattern::Name(name) => {
                let bind = match role {
                    Role::Args => Bind::Args,
                    Role::Whole(Base::Context) => Bind::Context,
                    Role::Whole(Base::Event) => Bind::Event,
                    Role::Field(base, ref field) => Bind::Field(base, field.clone()),
                    Role::Params => match params {
                        Some(p) => Bind::Value(p),
                        None => Bind::Other(name.to_string()),
                    },
                    Role::Other => Bind::Other(name.to_string()),
                };
                env.binds.push((name, bind));
                Ok(())
            }
            Pattern::Object(properties) => {
                for (key, value) in properties {
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
                            let found = params.and_then(|p| {
                                let p = self.reader.resolve(p).ok()?;
                                property_node(p, key)
                            });
                            if let (BindingPattern::BindingIdentifier(id), Some(v)) = (value, found)
                            {
                                env.binds.push((id.name.as_str(), Bind::Value(v)));
                                continue;
                            }
                            Role::Other
                        }
                        Role::Other => Role::Other,
                    };
                    self.bind_pattern(value, inner, params, span, env)?;
                }
                Ok(())
            }
        }
    }

    /// What a function body returns, read statement by statement: `const`
    /// and `let` declarations (of names and object patterns), `if`/`else`
    /// with returns on either side or changes of the body's own copies,
    /// blocks, `push`/`add`/`delete`/`Object.assign`/key writes on copies
    /// the body made, and a `return`. Nothing is run.
    pub(super) fn body(&mut self, f: FnRef<'a>, t: TextId, env: Env<'a>) -> Result<Ret<'a>, Why> {
        let statements = match f.body() {
            Err(e) => return Ok(Ret::Value(Node { e, t }, env)),
            Ok(s) => s,
        };
        match self.run(statements, t, env)? {
            Flow::Returns(r) => Ok(r),
            Flow::Goes(_) => Err(Why {
                message: "it returns nothing".into(),
                span: self.reader.span(t, f.span()),
            }),
        }
    }

    /// The value of what a body returns, a choice between returns as a
    /// conditional.
    pub(super) fn ret_cel(&mut self, ret: Ret<'a>) -> Result<Cel, Why> {
        match ret {
            Ret::Value(n, env) => self.cel(n, &env),
            Ret::Choice(test, a, b) => {
                let a = self.ret_cel(*a)?;
                let b = self.ret_cel(*b)?;
                Ok(choice(&test, a, b))
            }
        }
    }

    /// Runs `statements` on `env`: where they return, or the names bound
    /// after them.
    fn run(
        &mut self,
        statements: &'a [Statement<'a>],
        t: TextId,
        env: Env<'a>,
    ) -> Result<Flow<'a>, Why> {
        self.run_frames(
            vec![Frame {
                statements,
                keep: None,
            }],
            t,
            env,
        )
    }

    /// Runs the statements of `frames`, one after the other: a frame after
    /// a block first drops the names the block declared. An `if` one of
    /// whose sides returns runs what follows it on each side (each path to
    /// its return); one whose sides both go on joins the names they bound.
    fn run_frames(
        &mut self,
        mut frames: Vec<Frame<'a>>,
        t: TextId,
        mut env: Env<'a>,
    ) -> Result<Flow<'a>, Why> {
        while !frames.is_empty() {
            let frame = frames.remove(0);
            if let Some(keep) = frame.keep {
                env.binds.truncate(keep);
            }
            let statements = frame.statements;
            for (i, statement) in statements.iter().enumerate() {
                let span = self.reader.span(t, statement.span());
                if self.reader.evaluations == 0 || env.depth > crate::expr::MAX_DEPTH {
                    return Err(Why {
                        message: "its branches and helpers are too many to follow".into(),
                        span,
                    });
                }
                self.reader.evaluations -= 1;
                // What follows this statement.
                let after = |keep: Option<usize>, frames: &[Frame<'a>]| {
                    let mut out = vec![Frame {
                        statements: &statements[i + 1..],
                        keep,
                    }];
                    out.extend(frames.iter().cloned());
                    out
                };
                match statement {
                    Statement::VariableDeclaration(v)
                        if matches!(
                            v.kind,
                            VariableDeclarationKind::Const | VariableDeclarationKind::Let
                        ) =>
                    {
                        for d in &v.declarations {
                            let Some(init) = &d.init else {
                                if let BindingPattern::BindingIdentifier(id) = &d.id {
                                    let undefined = Cel::new("null".into(), 7, Ty::Unknown);
                                    env.binds
                                        .push((id.name.as_str(), Bind::Local(undefined, None)));
                                    continue;
                                }
                                return Err(Why {
                                    message: "a pattern without a value cannot be translated"
                                        .into(),
                                    span,
                                });
                            };
                            let init = Node { e: init, t };
                            let bind = self.value_bind(init, &env)?;
                            self.destructure(&d.id, bind, span, &mut env)?;
                        }
                    }
                    Statement::ReturnStatement(r) => {
                        return match &r.argument {
                            Some(e) => Ok(Flow::Returns(Ret::Value(Node { e, t }, env))),
                            None => Err(Why {
                                message: "it returns nothing".into(),
                                span,
                            }),
                        };
                    }
                    Statement::IfStatement(s) => {
                        let test = self.cel(Node { e: &s.test, t }, &env)?;
                        if !returns(&s.consequent)
                            && s.alternate.as_ref().is_none_or(|a| !returns(a))
                        {
                            // Both sides go on: the names they change are
                            // conditionals, and what follows runs once.
                            let then =
                                self.run(std::slice::from_ref(&s.consequent), t, env.clone())?;
                            let otherwise = match &s.alternate {
                                Some(a) => self.run(std::slice::from_ref(a), t, env.clone())?,
                                None => Flow::Goes(env.clone()),
                            };
                            let (Flow::Goes(a), Flow::Goes(b)) = (then, otherwise) else {
                                unreachable!("neither side returns");
                            };
                            env = self.join(&test, &env, a, b, span)?;
                            continue;
                        }
                        let side = |branch: &'a Statement<'a>, n: usize| match branch {
                            Statement::BlockStatement(b) => {
                                let mut out = vec![Frame {
                                    statements: &b.body,
                                    keep: None,
                                }];
                                out.extend(after(Some(n), &frames));
                                out
                            }
                            other => {
                                let mut out = vec![Frame {
                                    statements: std::slice::from_ref(other),
                                    keep: None,
                                }];
                                out.extend(after(None, &frames));
                                out
                            }
                        };
                        let n = env.binds.len();
                        let then = self.run_frames(side(&s.consequent, n), t, env.clone())?;
                        let otherwise = match &s.alternate {
                            Some(a) => self.run_frames(side(a, n), t, env.clone())?,
                            None => self.run_frames(after(None, &frames), t, env.clone())?,
                        };
                        return match (then, otherwise) {
                            (Flow::Returns(a), Flow::Returns(b)) => {
                                Ok(Flow::Returns(Ret::Choice(test, Box::new(a), Box::new(b))))
                            }
                            _ => Err(Why {
                                message: "it returns nothing on one of its paths".into(),
                                span,
                            }),
                        };
                    }
                    Statement::BlockStatement(b) => {
                        let mut inner = vec![Frame {
                            statements: &b.body,
                            keep: None,
                        }];
                        inner.extend(after(Some(env.binds.len()), &frames));
                        return self.run_frames(inner, t, env);
                    }
                    Statement::ExpressionStatement(e) => {
                        self.change(
                            Node {
                                e: &e.expression,
                                t,
                            },
                            &mut env,
                        )?;
                    }
                    Statement::EmptyStatement(_) => {}
                    _ => {
                        return Err(Why {
                            message: "its body does more than declare names, branch, change its own copies and return a value".into(),
                            span,
                        });
                    }
                }
            }
        }
        Ok(Flow::Goes(env))
    }

    /// The names bound after an `if` whose two sides both go on: a name
    /// either side changed is the conditional between them.
    fn join(
        &mut self,
        test: &Cel,
        before: &Env<'a>,
        a: Env<'a>,
        b: Env<'a>,
        span: crate::span::Span,
    ) -> Result<Env<'a>, Why> {
        let n = before.binds.len();
        if a.binds.len() != n || b.binds.len() != n {
            return Err(Why {
                message: "the sides of this `if` bind different names".into(),
                span,
            });
        }
        let mut out = before.clone();
        for (i, ((name, x), (_, y))) in a.binds.into_iter().zip(b.binds).enumerate() {
            out.binds[i] = match (x, y) {
                (Bind::Local(x, cx), Bind::Local(y, cy)) if x.text != y.text => {
                    let copy = if cx == cy { cx } else { None };
                    (name, Bind::Local(choice(test, x, y), copy))
                }
                (x, _) => (name, x),
            };
        }
        Ok(out)
    }

    /// What a name bound to `init` stands for: the context, the event or
    /// one of their fields where `init` names one, else its translation
    /// (a copy where `init` makes a list, set or object).
    pub(super) fn value_bind(&mut self, init: Node<'a>, env: &Env<'a>) -> Result<Bind<'a>, Why> {
        if let Some(base) = self.base(init, env) {
            return Ok(base);
        }
        if let Expression::Identifier(id) = init.e.get_inner_expression()
            && let Some(b @ (Bind::Field(..) | Bind::Value(_) | Bind::Other(_))) =
                env.get(id.name.as_str())
        {
            return Ok(b.clone());
        }
        let value = self.cel(init, env)?;
        let copy =
            (makes_copy(init.e) && matches!(value.ty, Ty::List | Ty::Set | Ty::Map)).then(|| {
                self.copies += 1;
                self.copies
            });
        Ok(Bind::Local(value, copy))
    }

    /// Binds `pattern` to what `bind` stands for: a name, or an object
    /// pattern of names (each a field of it).
    pub(super) fn destructure(
        &mut self,
        pattern: &'a BindingPattern<'a>,
        bind: Bind<'a>,
        span: crate::span::Span,
        env: &mut Env<'a>,
    ) -> Result<(), Why> {
        let unsupported = |what: &str| Why {
            message: format!("a pattern {what} cannot be translated"),
            span,
        };
        match read_pattern(pattern).map_err(unsupported)? {
            Pattern::Name(name) => {
                env.binds.push((name, bind));
                Ok(())
            }
            Pattern::Object(properties) => {
                for (key, value) in properties {
                    let inner = self.member_bind(&bind, &key, span, env)?;
                    self.destructure(value, inner, span, env)?;
                }
                Ok(())
            }
        }
    }

    /// What field `key` of what `bind` stands for is.
    fn member_bind(
        &mut self,
        bind: &Bind<'a>,
        key: &str,
        span: crate::span::Span,
        env: &Env<'a>,
    ) -> Result<Bind<'a>, Why> {
        let field = |base: Cel| -> Result<Bind<'a>, Why> {
            if !is_ident(key) {
                return Err(Why {
                    message: format!("the field `{key}` cannot be written in the machine format"),
                    span,
                });
            }
            Ok(Bind::Local(
                Cel::new(format!("{}.{key}", base.at(7)), 7, Ty::Unknown),
                None,
            ))
        };
        Ok(match bind {
            Bind::Args => match key {
                "context" => Bind::Context,
                "event" => Bind::Event,
                other => Bind::Other(other.to_string()),
            },
            Bind::Context => Bind::Field(Base::Context, key.to_string()),
            Bind::Event => Bind::Field(Base::Event, key.to_string()),
            Bind::Field(base, f) => {
                let n = Node {
                    e: self.undefined_expr(),
                    t: 0,
                };
                let base = self.field(*base, f, env, n)?;
                field(base)?
            }
            Bind::Local(c, _) => field(c.clone())?,
            Bind::Value(v) => match self
                .reader
                .resolve(*v)
                .ok()
                .and_then(|p| property_node(p, key))
            {
                Some(v) => Bind::Value(v),
                None => Bind::Other(key.to_string()),
            },
            Bind::Other(p) => Bind::Other(format!("{p}.{key}")),
            Bind::ScxmlEvent => Bind::Other(format!("_event.{key}")),
        })
    }

    /// An `undefined` to stand where a node is needed for a message only.
    pub(super) fn undefined_expr(&self) -> &'a Expression<'a> {
        let builder = oxc_ast::builder::AstBuilder::new(self.reader.alloc);
        self.reader.alloc.alloc(Expression::new_identifier(
            oxc_span::Span::default(),
            "undefined",
            &builder,
        ))
    }

    /// A statement that changes a copy the body made: `next.push(x)`,
    /// `set.add(x)`, `set.delete(x)`, `Object.assign(next, o)`,
    /// `next[k] = v`, `next.k = v`, or a new value of a `let` (`x = v`).
    fn change(&mut self, n: Node<'a>, env: &mut Env<'a>) -> Result<(), Why> {
        let sub = |e: &'a Expression<'a>| Node { e, t: n.t };
        let refuse = |cx: &Self, what: &str| Why {
            message: what.to_string(),
            span: cx.span(n),
        };
        match n.e.get_inner_expression() {
            Expression::CallExpression(call) => {
                let args: Vec<Node<'a>> = call
                    .arguments
                    .iter()
                    .map(|a| a.as_expression().map(sub))
                    .collect::<Option<_>>()
                    .ok_or_else(|| refuse(self, "a spread argument cannot be translated"))?;
                let Expression::StaticMemberExpression(m) = call.callee.get_inner_expression()
                else {
                    return Err(refuse(
                        self,
                        "a call whose value is dropped cannot be translated",
                    ));
                };
                let method = m.property.name.as_str();
                // `Object.assign(next, a, b)`: `next` merged with each.
                if m.object.is_specific_id("Object") && method == "assign" {
                    let Some((target, rest)) = args.split_first() else {
                        return Err(refuse(self, "`Object.assign` needs a target"));
                    };
                    let (name, mut value, copy) = self.copy_to_change(*target, env, "an object")?;
                    for source in rest {
                        let source = self.cel(*source, env)?;
                        value = self.merged(value, source, n)?;
                    }
                    return self.rebind(env, name, value, copy);
                }
                let (name, value, copy) =
                    self.copy_to_change(sub(&m.object), env, "a list or set")?;
                let items: Vec<Cel> = args
                    .iter()
                    .map(|a| self.cel(*a, env))
                    .collect::<Result<_, _>>()?;
                if self.read_copies.contains(&copy) {
                    return Err(refuse(
                        self,
                        &format!("it changes `{name}` after reading it"),
                    ));
                }
                let value = match (value.ty, method) {
                    (Ty::List, "push") => append(value, &items),
                    (Ty::Set, "add") if items.len() == 1 => self.set_add(value, &items[0], n)?,
                    (Ty::Set, "delete") if items.len() == 1 => {
                        self.by_value(&items[0], n)?;
                        let mut out = Cel::new(
                            format!("without({}, {})", value.text, items[0].text),
                            7,
                            Ty::Set,
                        );
                        out.set_of = None;
                        out
                    }
                    _ => {
                        return Err(refuse(
                            self,
                            &format!("`.{method}` of a copy cannot be translated"),
                        ));
                    }
                };
                self.rebind(env, name, value, copy)
            }
            Expression::AssignmentExpression(a) if a.operator == AssignmentOperator::Assign => {
                let value = sub(&a.right);
                match &a.left {
                    AssignmentTarget::AssignmentTargetIdentifier(id) => {
                        let name = id.name.as_str();
                        if !matches!(env.get(name), Some(Bind::Local(..))) {
                            return Err(refuse(
                                self,
                                &format!("it writes `{name}`, which is not a name of its own"),
                            ));
                        }
                        let bind = self.value_bind(value, env)?;
                        let at = env
                            .binds
                            .iter()
                            .rposition(|(n, _)| *n == name)
                            .expect("bound");
                        env.binds[at].1 = bind;
                        Ok(())
                    }
                    target => {
                        let (object, key) = match target {
                            AssignmentTarget::StaticMemberExpression(m) => {
                                let mut key = String::new();
                                crate::expr::write_quoted(m.property.name.as_str(), &mut key).ok();
                                (sub(&m.object), Cel::new(key, 7, Ty::String))
                            }
                            AssignmentTarget::ComputedMemberExpression(m) => {
                                let key = self.map_key(sub(&m.expression), env)?;
                                (sub(&m.object), key)
                            }
                            _ => return Err(refuse(self, "this assignment cannot be translated")),
                        };
                        let (name, old, copy) = self.copy_to_change(object, env, "an object")?;
                        let v = self.cel(value, env)?;
                        if self.read_copies.contains(&copy) {
                            return Err(refuse(
                                self,
                                &format!("it changes `{name}` after reading it"),
                            ));
                        }
                        let entry = Cel::new(format!("{{{}: {}}}", key.text, v.text), 7, Ty::Map);
                        let value = self.merged(old, entry, n)?;
                        self.rebind(env, name, value, copy)
                    }
                }
            }
            _ => Err(refuse(self, "this statement cannot be translated")),
        }
    }

    /// The copy `n` names, which a statement changes: its name, value and
    /// number; an error where `n` is no copy the body made.
    fn copy_to_change(
        &mut self,
        n: Node<'a>,
        env: &Env<'a>,
        what: &str,
    ) -> Result<(&'a str, Cel, u32), Why> {
        if let Expression::Identifier(id) = n.e.get_inner_expression()
            && let Some(Bind::Local(value, copy)) = env.get(id.name.as_str())
        {
            let name = id.name.as_str();
            return match copy {
                Some(copy) if !self.read_copies.contains(copy) => Ok((name, value.clone(), *copy)),
                Some(_) => Err(self.why(format!("it changes `{name}` after reading it"), n)),
                None => Err(self.why(
                    format!("it changes `{name}`, which is not {what} it made (only a copy such as `[...list]`, `new Set(s)` or `{{...o}}` may be changed)"),
                    n,
                )),
            };
        }
        Err(self.why(
            format!("it changes what is not {what} it made (only a copy such as `[...list]`, `new Set(s)` or `{{...o}}` may be changed)"),
            n,
        ))
    }

    fn rebind(
        &mut self,
        env: &mut Env<'a>,
        name: &'a str,
        value: Cel,
        copy: u32,
    ) -> Result<(), Why> {
        let at = env
            .binds
            .iter()
            .rposition(|(n, _)| *n == name)
            .expect("bound");
        env.binds[at].1 = Bind::Local(value, Some(copy));
        Ok(())
    }
}

/// What a function body returns: the expression of a `return` with the
/// names bound where it stands, or a choice on a condition between two.
#[derive(Clone)]
pub(super) enum Ret<'a> {
    Value(Node<'a>, Env<'a>),
    Choice(Cel, Box<Ret<'a>>, Box<Ret<'a>>),
}

/// Statements to run, and how many names to keep before them (those a
/// block before them declared are dropped).
#[derive(Clone)]
struct Frame<'a> {
    statements: &'a [Statement<'a>],
    keep: Option<usize>,
}

/// Whether a statement may return: it is, or holds, a `return`.
fn returns(s: &Statement) -> bool {
    match s {
        Statement::ReturnStatement(_) => true,
        Statement::BlockStatement(b) => b.body.iter().any(returns),
        Statement::IfStatement(i) => {
            returns(&i.consequent) || i.alternate.as_ref().is_some_and(returns)
        }
        _ => false,
    }
}

/// Where statements lead: a return, or on, with the names bound after them.
enum Flow<'a> {
    Returns(Ret<'a>),
    Goes(Env<'a>),
}

/// `test ? a : b`.
pub(super) fn choice(test: &Cel, a: Cel, b: Cel) -> Cel {
    let ty = if a.ty == b.ty { a.ty } else { Ty::Unknown };
    let mut out = Cel::new(format!("{} ? {} : {}", test.at(1), a.at(1), b.at(0)), 0, ty);
    if ty == Ty::Set {
        out.set_of = None;
    }
    out
}

/// `list + [items]`.
pub(super) fn append(list: Cel, items: &[Cel]) -> Cel {
    if items.is_empty() {
        return list;
    }
    let items: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    Cel::new(
        format!("{} + [{}]", list.at(4), items.join(", ")),
        4,
        Ty::List,
    )
}

/// Whether `e` makes a new list, set or object, which its body may then
/// change: a literal, `new Set(...)`, `list.slice()`, `list.concat(...)`,
/// `list.filter(...)`, `Array.from(...)`, `Object.assign({}, ...)`.
fn makes_copy(e: &Expression) -> bool {
    match e.get_inner_expression() {
        Expression::ArrayExpression(_) | Expression::ObjectExpression(_) => true,
        Expression::NewExpression(n) => n.callee.is_specific_id("Set"),
        Expression::CallExpression(c) => match c.callee.get_inner_expression() {
            Expression::StaticMemberExpression(m) => {
                matches!(m.property.name.as_str(), "slice" | "concat" | "filter")
                    || (m.object.is_specific_id("Array") && m.property.name == "from")
                    || (m.object.is_specific_id("Object")
                        && m.property.name == "assign"
                        && matches!(
                            c.arguments
                                .first()
                                .and_then(|a| a.as_expression())
                                .map(|a| a.get_inner_expression()),
                            Some(Expression::ObjectExpression(_))
                        ))
            }
            _ => false,
        },
        _ => false,
    }
}

/// A binding pattern the translator reads: a name, or an object pattern of
/// properties with static keys (each key and the pattern it binds).
enum Pattern<'p, 'a> {
    Name(&'a str),
    Object(Vec<(String, &'p BindingPattern<'a>)>),
}

/// The pattern as `Pattern`, else what makes it untranslatable ("with a
/// rest element"), for the caller's message: the parameters' walk and the
/// body's declarations read patterns alike.
fn read_pattern<'p, 'a>(pattern: &'p BindingPattern<'a>) -> Result<Pattern<'p, 'a>, &'static str>
where
    'a: 'p,
{
    match pattern {
        BindingPattern::BindingIdentifier(id) => Ok(Pattern::Name(id.name.as_str())),
        BindingPattern::ObjectPattern(o) => {
            if o.rest.is_some() {
                return Err("with a rest element");
            }
            let mut properties = Vec::with_capacity(o.properties.len());
            for property in &o.properties {
                let Some(key) = property.key.static_name().filter(|_| !property.computed) else {
                    return Err("with a computed key");
                };
                properties.push((key.into_owned(), &property.value));
            }
            Ok(Pattern::Object(properties))
        }
        BindingPattern::ArrayPattern(_) => Err("of an array"),
        BindingPattern::AssignmentPattern(_) => Err("with a default value"),
    }
}
