//! A small partial evaluator over the oxc syntax tree, for the parts of a
//! machine config that a program computes before XState sees them:
//! states built by helper functions (`...confirmSignInState(['SUBMIT'])`),
//! keys computed from consts and enums (`[OrderStatus.CREATED]: {...}`),
//! `on` maps built from a list (`Object.fromEntries(events.map(...))`,
//! `events.reduce(...)`).
//!
//! A call is evaluated by binding its arguments to the function's
//! parameters in a scope of their own (a `Text` whose parent is the text
//! the function is written in), and reading what its body returns: one
//! expression, or `const` declarations and a `return`. Nothing is run: a
//! body with any other statement, a spread argument, or a callee that is
//! no function of the repository is not evaluated, and the reader notes
//! the part it could not read. Calls nest as deep as `MAX_DEPTH` allows,
//! and `MAX_EVALUATIONS` bounds their number for a file.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::scope::{FnRef, MAX_DEPTH, Node, Reader, Text, TextId};
use crate::span::Span;

/// How many calls one file's reading may evaluate: thousands of states
/// built by helpers, and an end to a helper that calls itself twice per
/// level.
pub(super) const MAX_EVALUATIONS: u32 = 20_000;

impl<'a> Reader<'a> {
    /// What the call `call` (in `node`'s text) gives: a function of the
    /// repository's result, `require('./x.json')`'s module, or
    /// `list.reduce(f, init)` folded over a list literal; `None` for any
    /// other call, which stays as it is.
    pub(super) fn evaluate_call(
        &mut self,
        node: Node<'a>,
        call: &'a CallExpression<'a>,
    ) -> Option<Node<'a>> {
        if self.evaluations == 0 {
            return None;
        }
        self.evaluations -= 1;
        let args: Vec<Node<'a>> = call
            .arguments
            .iter()
            .map(|a| a.as_expression().map(|e| Node { e, t: node.t }))
            .collect::<Option<_>>()?;
        match call.callee.get_inner_expression() {
            Expression::Identifier(id) if id.name == "require" && args.len() == 1 => {
                let Expression::StringLiteral(source) = args[0].e.get_inner_expression() else {
                    return None;
                };
                let module = self.module(node.t, source.value.as_str())?;
                let root = self.texts[module].root?;
                return Some(Node { e: root, t: module });
            }
            Expression::StaticMemberExpression(m) if m.property.name == "reduce" => {
                let list = Node {
                    e: &m.object,
                    t: node.t,
                };
                let [reducer, init] = args[..] else {
                    return None;
                };
                return self.reduce(list, reducer, init);
            }
            _ => {}
        }
        let callee = self
            .resolve(Node {
                e: &call.callee,
                t: node.t,
            })
            .ok()?;
        let (f, t) = self.function_ref(callee)?;
        self.apply(f, t, &args)
    }

    /// The function `n` is, with the text its body sees: an arrow or a
    /// function expression where it is written, or a function declaration
    /// of its file.
    pub(super) fn function_ref(&self, n: Node<'a>) -> Option<(FnRef<'a>, TextId)> {
        match n.e.get_inner_expression() {
            Expression::ArrowFunctionExpression(f) => Some((FnRef::Arrow(f), n.t)),
            Expression::FunctionExpression(f) => Some((FnRef::Func(f), n.t)),
            Expression::Identifier(id) => self
                .function(n.t, id.name.as_str())
                .map(|f| (FnRef::Func(f), self.base(n.t))),
            _ => None,
        }
    }

    /// What `f`, written in text `t`, returns for `args`: its body read in
    /// a scope that binds its parameters.
    pub(super) fn apply(&mut self, f: FnRef<'a>, t: TextId, args: &[Node<'a>]) -> Option<Node<'a>> {
        if self.scope_depth(t) > MAX_DEPTH {
            return None;
        }
        let map = self.texts[t].map.clone();
        self.texts.push(Text::scope(t, map));
        let scope = self.texts.len() - 1;
        let params = f.params();
        if params.rest.is_some() {
            return None;
        }
        for (i, param) in params.items.iter().enumerate() {
            let arg = args.get(i).copied();
            self.bind(scope, &param.pattern, param.initializer.as_deref(), arg)?;
        }
        let statements = match f.body() {
            Err(e) => return Some(Node { e, t: scope }),
            Ok(statements) => statements,
        };
        for statement in statements {
            match statement {
                Statement::VariableDeclaration(v) => {
                    for d in &v.declarations {
                        let (BindingPattern::BindingIdentifier(id), Some(init)) = (&d.id, &d.init)
                        else {
                            return None;
                        };
                        let value = Node { e: init, t: scope };
                        self.texts[scope].bound.insert(id.name.as_str(), value);
                    }
                }
                Statement::ReturnStatement(r) => {
                    return r.argument.as_ref().map(|e| Node { e, t: scope });
                }
                _ => return None,
            }
        }
        None
    }

    /// Binds a parameter (a name, or an object pattern of names) to the
    /// argument given, else to its default, else to `undefined`.
    fn bind(
        &mut self,
        scope: TextId,
        pattern: &'a BindingPattern<'a>,
        default: Option<&'a Expression<'a>>,
        arg: Option<Node<'a>>,
    ) -> Option<()> {
        let value = match (arg, default) {
            (Some(arg), _) => arg,
            (None, Some(default)) => Node {
                e: default,
                t: scope,
            },
            (None, None) => self.undefined(scope),
        };
        match pattern {
            BindingPattern::BindingIdentifier(id) => {
                self.texts[scope].bound.insert(id.name.as_str(), value);
                Some(())
            }
            BindingPattern::AssignmentPattern(p) => {
                let value = if self.is_undefined(value) {
                    None
                } else {
                    Some(value)
                };
                self.bind(scope, &p.left, Some(&p.right), value)
            }
            BindingPattern::ObjectPattern(o) => {
                if o.rest.is_some() {
                    return None;
                }
                let object = self.resolve(value).ok();
                for p in &o.properties {
                    let key = p.key.static_name()?;
                    let field = object.and_then(|object| {
                        super::scope::property(object.e, &key).map(|e| Node { e, t: object.t })
                    });
                    self.bind(scope, &p.value, None, field)?;
                }
                Some(())
            }
            BindingPattern::ArrayPattern(_) => None,
        }
    }

    /// How many function scopes lie around text `t`.
    fn scope_depth(&self, mut t: TextId) -> u32 {
        let mut depth = 0;
        while let Some(parent) = self.texts[t].parent {
            depth += 1;
            t = parent;
        }
        depth
    }

    fn undefined(&self, t: TextId) -> Node<'a> {
        let builder = oxc_ast::builder::AstBuilder::new(self.alloc);
        let e: &'a Expression<'a> = self.alloc.alloc(Expression::new_identifier(
            oxc_span::Span::default(),
            "undefined",
            &builder,
        ));
        Node { e, t }
    }

    fn is_undefined(&mut self, n: Node<'a>) -> bool {
        matches!(self.resolve(n), Ok(r) if r.e.is_undefined())
    }

    /// `list.reduce((acc, item) => ..., init)` over a list literal: each
    /// step's result is the next step's `acc`.
    fn reduce(&mut self, list: Node<'a>, reducer: Node<'a>, init: Node<'a>) -> Option<Node<'a>> {
        let items = self.list_items(list)?;
        let reducer = self.resolve(reducer).ok()?;
        let (f, t) = self.function_ref(reducer)?;
        let mut acc = init;
        for item in items {
            if self.evaluations == 0 {
                return None;
            }
            self.evaluations -= 1;
            acc = self.apply(f, t, &[acc, item])?;
        }
        Some(acc)
    }

    /// The items of a list literal, spreads of list literals followed.
    pub(super) fn list_items(&mut self, list: Node<'a>) -> Option<Vec<Node<'a>>> {
        let list = self.resolve(list).ok()?;
        let Expression::ArrayExpression(a) = list.e else {
            return None;
        };
        let mut out = Vec::new();
        for element in &a.elements {
            match element {
                ArrayExpressionElement::SpreadElement(s) => out.extend(self.list_items(Node {
                    e: &s.argument,
                    t: list.t,
                })?),
                ArrayExpressionElement::Elision(_) => return None,
                other => out.push(Node {
                    e: other.as_expression()?,
                    t: list.t,
                }),
            }
        }
        Some(out)
    }

    /// The entries of an object a program builds from a list:
    /// `Object.fromEntries(pairs)`, where `pairs` is a list literal of
    /// `[key, value]` literals or `list.map(item => [key, value])`. Each
    /// entry is its key's node and its value's.
    #[allow(clippy::type_complexity)]
    pub(super) fn built_entries(&mut self, n: Node<'a>) -> Option<Vec<(Node<'a>, Node<'a>)>> {
        let Expression::CallExpression(call) = n.e.get_inner_expression() else {
            return None;
        };
        let Expression::StaticMemberExpression(m) = call.callee.get_inner_expression() else {
            return None;
        };
        if m.property.name != "fromEntries"
            || !matches!(m.object.get_inner_expression(), Expression::Identifier(o) if o.name == "Object")
        {
            return None;
        }
        let pairs = Node {
            e: call.arguments.first()?.as_expression()?,
            t: n.t,
        };
        let mut out = Vec::new();
        for pair in self.pairs(pairs)? {
            let [key, value] = self.list_items(pair)?[..] else {
                return None;
            };
            out.push((key, value));
        }
        Some(out)
    }

    /// The pairs of `Object.fromEntries`: a list literal's items, or what
    /// `list.map(f)` gives for each item of a list literal.
    fn pairs(&mut self, n: Node<'a>) -> Option<Vec<Node<'a>>> {
        let r = self.resolve(n).ok()?;
        if let Expression::CallExpression(call) = r.e
            && let Expression::StaticMemberExpression(m) = call.callee.get_inner_expression()
            && m.property.name == "map"
        {
            let items = self.list_items(Node {
                e: &m.object,
                t: r.t,
            })?;
            let f = Node {
                e: call.arguments.first()?.as_expression()?,
                t: r.t,
            };
            let f = self.resolve(f).ok()?;
            let (f, t) = self.function_ref(f)?;
            let mut out = Vec::new();
            for item in items {
                if self.evaluations == 0 {
                    return None;
                }
                self.evaluations -= 1;
                out.push(self.apply(f, t, &[item])?);
            }
            return Some(out);
        }
        self.list_items(r)
    }

    /// The text of a key or a name computed from literals: a string or a
    /// number (as JavaScript writes a number key), a template literal or a
    /// `+` of such, through consts, enum members and parameters.
    pub(super) fn key_text(&mut self, n: Node<'a>) -> Option<(String, Span)> {
        self.literal_text(n, true, 0)
    }

    /// The same, for a value that must be a string (a target, an id).
    pub(super) fn string_text(&mut self, n: Node<'a>) -> Option<(String, Span)> {
        self.literal_text(n, false, 0)
    }

    fn literal_text(&mut self, n: Node<'a>, numbers: bool, depth: u32) -> Option<(String, Span)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let r = self.resolve(n).ok()?;
        let span = self.span(r.t, r.e.span());
        if numbers && let Some(value) = self.number_at(r, depth) {
            return Some((number_key(value), span));
        }
        let text = match r.e {
            Expression::StringLiteral(s) => s.value.to_string(),
            Expression::TemplateLiteral(t) => {
                let mut out = String::new();
                for (i, quasi) in t.quasis.iter().enumerate() {
                    out.push_str(quasi.value.cooked.as_ref()?.as_str());
                    if let Some(e) = t.expressions.get(i) {
                        out.push_str(&self.literal_text(Node { e, t: r.t }, true, depth + 1)?.0);
                    }
                }
                out
            }
            Expression::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
                let left = Node { e: &b.left, t: r.t };
                let right = Node {
                    e: &b.right,
                    t: r.t,
                };
                let (left, _) = self.literal_text(left, true, depth + 1)?;
                let (right, _) = self.literal_text(right, true, depth + 1)?;
                // A sum of two numbers is no text (a key's sum is read
                // above); one string makes it one.
                if !numbers || left.parse::<f64>().is_err() || right.parse::<f64>().is_err() {
                    format!("{left}{right}")
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        Some((text, span))
    }

    /// The number an expression computes from number literals, through
    /// consts and enum members: `15 * 60 * 1000`, `-1`, `(a + b) / 2`.
    pub(super) fn number(&mut self, n: Node<'a>) -> Option<f64> {
        let r = self.resolve(n).ok()?;
        self.number_at(r, 0)
    }

    fn number_at(&mut self, r: Node<'a>, depth: u32) -> Option<f64> {
        if depth > MAX_DEPTH {
            return None;
        }
        let operand = |reader: &mut Self, e: &'a Expression<'a>| {
            let r = reader.resolve(Node { e, t: r.t }).ok()?;
            reader.number_at(r, depth + 1)
        };
        match r.e {
            Expression::NumericLiteral(x) => Some(x.value),
            Expression::UnaryExpression(u) if u.operator == UnaryOperator::UnaryNegation => {
                Some(-operand(self, &u.argument)?)
            }
            Expression::UnaryExpression(u) if u.operator == UnaryOperator::UnaryPlus => {
                operand(self, &u.argument)
            }
            Expression::BinaryExpression(b) => {
                let op = b.operator;
                if !matches!(
                    op,
                    BinaryOperator::Addition
                        | BinaryOperator::Subtraction
                        | BinaryOperator::Multiplication
                        | BinaryOperator::Division
                        | BinaryOperator::Remainder
                        | BinaryOperator::Exponential
                ) {
                    return None;
                }
                let (left, right) = (operand(self, &b.left)?, operand(self, &b.right)?);
                let value = match op {
                    BinaryOperator::Addition => left + right,
                    BinaryOperator::Subtraction => left - right,
                    BinaryOperator::Multiplication => left * right,
                    BinaryOperator::Division => left / right,
                    BinaryOperator::Remainder => left % right,
                    _ => left.powf(right),
                };
                value.is_finite().then_some(value)
            }
            _ => None,
        }
    }

    /// The value of member `name` of enum `decl` (in text `t`): its
    /// initializer, or the number after the one before (from 0).
    pub(super) fn enum_member(
        &mut self,
        t: TextId,
        decl: &'a TSEnumDeclaration<'a>,
        name: &str,
    ) -> Option<Node<'a>> {
        let mut next = 0.0;
        for member in &decl.body.members {
            let key = match &member.id {
                TSEnumMemberName::Identifier(id) => id.name.as_str(),
                TSEnumMemberName::String(s) | TSEnumMemberName::ComputedString(s) => {
                    s.value.as_str()
                }
                TSEnumMemberName::ComputedTemplateString(_) => return None,
            };
            let value = match &member.initializer {
                Some(init) => Node { e: init, t },
                None => {
                    let builder = oxc_ast::builder::AstBuilder::new(self.alloc);
                    let e: &'a Expression<'a> = self.alloc.alloc(Expression::new_numeric_literal(
                        member.span,
                        next,
                        None,
                        NumberBase::Decimal,
                        &builder,
                    ));
                    Node { e, t }
                }
            };
            if let Ok(r) = self.resolve(value)
                && let Expression::NumericLiteral(x) = r.e
            {
                next = x.value + 1.0;
            }
            if key == name {
                return Some(value);
            }
        }
        None
    }
}

/// A number key as JavaScript writes it (`1000`, `1.5`).
pub(super) fn number_key(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
