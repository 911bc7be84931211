//! Guards, actions and values written in JavaScript, translated to the
//! machine format's expressions where the meaning is exact.
//!
//! A function is read through its parameters: v5's `({ context, event })`
//! (destructured further, or as `args.context`), v4's `(context, event)`,
//! and a second parameter for the `params` of a named implementation. Its
//! body is one expression, or `const` declarations and a `return`. The
//! translated part of JavaScript is the machine format's: literals, context
//! and event fields, comparisons (`===` as `==`), `!`, `&&`, `||`, `??`
//! (as a test for null), `?:`, arithmetic but `/` (CEL divides integers
//! without a fraction), `.length` and `.includes(x)` of a list (as `size`
//! and `in`), `[...a, x]` (as `a + [x]`), object literals (as maps) and
//! `Math.max`/`Math.min` of two values. Names bound by a top-level `const`
//! of the file to a literal are inlined.
//!
//! Anything else is opaque: a guard becomes a host guard and an action a
//! host action, named by the implementation's name or `inline_LxCy` for one
//! written in place, which the linter treats as unknown, never as safe.
//!
//! SCXML's `cond` and `expr` are translated here too (`scxml_to_cel`): the
//! text is parsed with oxc as one expression, data model variables are
//! context fields, `_event` is SCXML's event and `In('id')` a state test.

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::Version;
use super::config::{Cx, callee_name, duration};
use super::scope::{FnRef, MAX_DEPTH, Node, TextId, property};
use crate::model::{Name, OpaqueKind, OpaquePart};
use crate::span::Span;
use crate::syntax::tree::{ActionDoc, ExprText};

/// Which completion a handler answers, for v4's `event.data` (and SCXML's
/// `_event.data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum View {
    #[default]
    Plain,
    Done,
    Error,
}

/// Why a piece of JavaScript has no translation, and where.
pub(super) struct Why {
    pub message: String,
    pub span: Span,
}

/// The type of a translated value where the translation depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    List,
    Map,
    Bool,
    Number,
    String,
    Unknown,
}

/// Translated text, its CEL precedence level (the conditional 0, `||` 1,
/// `&&` 2, relations 3, `+ -` 4, `* %` 5, unary 6, postfix and primary 7),
/// and its type where known.
#[derive(Clone, Debug)]
pub(super) struct Cel {
    text: String,
    level: u8,
    ty: Ty,
    /// The translated functions inside the text: (byte position, length,
    /// key of the JavaScript), so that a checker error can be traced back.
    parts: Vec<(u32, u32, u32)>,
}

impl Cel {
    fn new(text: String, level: u8, ty: Ty) -> Cel {
        Cel {
            text,
            level,
            ty,
            parts: Vec::new(),
        }
    }

    /// The text, parenthesised where the context needs level `min`.
    fn at(&self, min: u8) -> String {
        if self.level < min {
            format!("({})", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// What a name in a function body stands for.
#[derive(Clone)]
enum Bind<'a> {
    Context,
    Event,
    /// v5's argument object: `.context`, `.event`.
    Args,
    Field(Base, String),
    /// A value known at translation time (a literal `params`).
    Value(Node<'a>),
    /// A `const` of the body, already translated.
    Local(Cel),
    /// A parameter that has no counterpart (`self`, `system`, v4's meta).
    Other(String),
    /// SCXML's `_event`: `.name` is the event's type, `.data` its payload.
    ScxmlEvent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Context,
    Event,
}

#[derive(Clone)]
struct Env<'a> {
    binds: Vec<(&'a str, Bind<'a>)>,
    view: View,
    depth: u32,
}

impl<'a> Env<'a> {
    fn empty(view: View) -> Env<'a> {
        Env {
            binds: Vec::new(),
            view,
            depth: 0,
        }
    }

    fn get(&self, name: &str) -> Option<&Bind<'a>> {
        self.binds
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b)
    }
}

const SCXML_EVENT: &str = "`_event` has no counterpart in the machine format: only `_event.name` and `_event.data.FIELD` have";

/// Actions that send to or start other actors, or run code: opaque.
const OPAQUE_BUILTINS: [&str; 14] = [
    "enqueueActions",
    "choose",
    "pure",
    "sendParent",
    "forwardTo",
    "spawnChild",
    "stopChild",
    "stop",
    "emit",
    "escalate",
    "respond",
    "spawn",
    "start",
    "exportEvent",
];

impl<'a> Cx<'_, 'a> {
    fn why(&self, message: impl Into<String>, n: Node<'a>) -> Why {
        Why {
            message: message.into(),
            span: self.span(n),
        }
    }

    /// `n` with a JSON `{"@code": "..."}` object replaced by the code it
    /// holds, parsed.
    fn code(&mut self, n: Node<'a>) -> Node<'a> {
        if !self.json {
            return n;
        }
        let Ok(r) = self.reader.resolve(n) else {
            return n;
        };
        let Some(Expression::StringLiteral(code)) = property(r.e, "@code") else {
            return r;
        };
        let at = self.reader.span(r.t, code.span).start;
        let raw = code
            .raw
            .map(|r| r.to_string())
            .unwrap_or_else(|| serde_json::to_string(code.value.as_str()).unwrap_or_default());
        match self.reader.parse_code(&raw, at) {
            Ok(t) => match self.reader.texts[t].root {
                Some(e) => Node { e, t },
                None => r,
            },
            Err(why) => {
                let span = self.reader.span(r.t, code.span);
                self.note(format!("this `@code` cannot be read: {why}"), span);
                r
            }
        }
    }

    /// The function `n` is (through names, and JSON's `@code`).
    pub fn function_of(&mut self, n: Node<'a>) -> Option<(FnRef<'a>, TextId)> {
        let n = self.code(n);
        let r = match self.reader.resolve(n) {
            Ok(r) => r,
            Err(_) => return None,
        };
        match r.e {
            Expression::ArrowFunctionExpression(f) => Some((FnRef::Arrow(f), r.t)),
            Expression::FunctionExpression(f) => Some((FnRef::Func(f), r.t)),
            Expression::Identifier(id) => self
                .reader
                .function(r.t, id.name.as_str())
                .map(|f| (FnRef::Func(f), r.t)),
            _ => None,
        }
    }

    /// The key by which a refusal of the checker finds a translation again.
    fn key(&self, n: Node<'a>) -> u32 {
        self.span(n).start
    }

    // ---- guards ----

    /// A transition's guard (`guard` or v4's `cond`) as an expression; the
    /// parts that cannot be translated are host guards.
    pub fn guard(&mut self, n: Node<'a>, view: View) -> Option<ExprText> {
        let offset = self.span(n).start;
        let cel = self.guard_cel(n, view, None, 0);
        Some(self.expr_text(cel, offset))
    }

    /// An expression text at `offset`, with its translated parts recorded.
    fn expr_text(&mut self, cel: Cel, offset: u32) -> ExprText {
        for (at, len, key) in &cel.parts {
            self.translated.push((offset + at, *len, *key));
        }
        ExprText {
            text: cel.text,
            offset,
        }
    }

    fn guard_cel(&mut self, n: Node<'a>, view: View, params: Option<Node<'a>>, depth: u32) -> Cel {
        let n = self.code(n);
        if depth > MAX_DEPTH {
            let span = self.span(n);
            return {
                let name = self.in_place(span, "guard");
                self.host_guard(&name, "it nests too deeply", span)
            };
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
    fn named_guard(
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
    fn host_guard(&mut self, name: &str, why: &str, span: Span) -> Cel {
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

    // ---- actions ----

    /// One action or a list of them.
    pub fn actions(&mut self, n: Node<'a>, out: &mut Vec<ActionDoc>, view: View) {
        for item in self.items(n) {
            self.action(item, out, view, None, 0);
        }
    }

    fn action(
        &mut self,
        n: Node<'a>,
        out: &mut Vec<ActionDoc>,
        view: View,
        params: Option<Node<'a>>,
        depth: u32,
    ) {
        let n = self.code(n);
        let span = self.span(n);
        if depth > MAX_DEPTH {
            let name = self.in_place(span, "action");
            self.opaque_part(&name, span, span, OpaqueKind::Actions);
            self.host_action(&name, "it nests too deeply", span, out);
            return;
        }
        let r = match self.reader.resolve(n) {
            Ok(r) => r,
            Err((name, at)) => {
                // Something imported from elsewhere: a host action of its
                // name, which may be an `assign` as well as a function.
                let _ = at;
                self.opaque_part(&name, span, span, OpaqueKind::Actions);
                out.push(ActionDoc::Named {
                    name: Name { text: name, span },
                });
                return;
            }
        };
        match r.e {
            Expression::StringLiteral(s) => {
                let name = s.value.to_string();
                self.named_action(&name, None, span, out, view, depth);
            }
            Expression::ObjectExpression(_) => {
                match property(r.e, "type").and_then(|t| self.string(Node { e: t, t: r.t })) {
                    Some((name, span)) => {
                        let params = match self.version {
                            Version::V5 => property(r.e, "params").map(|p| Node { e: p, t: r.t }),
                            Version::V4 => Some(r),
                        };
                        self.named_action(&name, params, span, out, view, depth);
                    }
                    None => {
                        let name = self.in_place(span, "action");
                        self.opaque_part(&name, span, span, OpaqueKind::Actions);
                        self.host_action(&name, "it is an object without a `type`", span, out);
                    }
                }
            }
            Expression::CallExpression(call) => {
                let key = self.key(r);
                if let Some(message) = self.refused.get(&key).cloned() {
                    let name = self.in_place(span, "action");
                    if let Some(kind) = self.opaque_kind(call, r.t) {
                        self.opaque_part(&name, span, span, kind);
                    }
                    self.host_action(
                        &name,
                        &format!("the expression checker refused its translation ({message})"),
                        span,
                        out,
                    );
                    return;
                }
                match self.builtin(call, r.t, view, params, key) {
                    Ok(actions) => out.extend(actions),
                    Err(why) => {
                        let name = self.in_place(span, "action");
                        if let Some(kind) = self.opaque_kind(call, r.t) {
                            self.opaque_part(&name, why.span, span, kind);
                        }
                        self.host_action(&name, &why.message, why.span, out);
                    }
                }
            }
            Expression::Identifier(id) => {
                // A function declaration of the file.
                out.push(ActionDoc::Named {
                    name: Name {
                        text: id.name.to_string(),
                        span,
                    },
                });
            }
            _ => {
                let name = self.in_place(span, "action");
                self.host_action(&name, "it runs code of its own", span, out);
            }
        }
    }

    /// What is known of a call that stays opaque as an action: an `assign`
    /// of the fields its argument names; a call of anything else that may
    /// return actions (a helper such as `raiseAndAssign(...)`,
    /// `enqueueActions`, `choose`, a `raise` of a computed event) may do
    /// anything; `None` for a send to another actor or a start or stop of
    /// one, which is an effect whatever it sends.
    fn opaque_kind(&mut self, call: &'a CallExpression<'a>, t: TextId) -> Option<OpaqueKind> {
        let name = callee_name(&call.callee).unwrap_or_default();
        if name == "assign" {
            let fields = call
                .arguments
                .first()
                .and_then(|a| a.as_expression())
                .and_then(|e| self.assigned_fields(Node { e, t }));
            return Some(OpaqueKind::Assign(fields));
        }
        let composes = matches!(name, "enqueueActions" | "choose" | "pure");
        let effect = OPAQUE_BUILTINS.contains(&name) && !composes;
        let to_another_actor = name == "sendTo";
        (!effect && !to_another_actor).then_some(OpaqueKind::Actions)
    }

    /// The context fields an `assign` argument writes, where its keys say
    /// so: an object literal, or a function whose body gives one; a spread
    /// of the context adds none, any other spread or a computed key makes
    /// them unknown.
    fn assigned_fields(&mut self, n: Node<'a>) -> Option<Vec<String>> {
        let n = self.code(n);
        let object = match self.function_of(n) {
            Some((f, t)) => match f.body() {
                Err(e) => Node { e, t },
                Ok(statements) => match statements.last()? {
                    Statement::ReturnStatement(r) => Node {
                        e: r.argument.as_ref()?,
                        t,
                    },
                    _ => return None,
                },
            },
            None => self.reader.resolve(n).ok()?,
        };
        let Expression::ObjectExpression(o) = object.e.get_inner_expression() else {
            return None;
        };
        let mut fields = Vec::new();
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) if !p.computed => {
                    fields.push(p.key.static_name()?.to_string());
                }
                ObjectPropertyKind::SpreadProperty(s)
                    if matches!(
                        s.argument.get_inner_expression(),
                        Expression::Identifier(id) if id.name == "context"
                    ) => {}
                _ => return None,
            }
        }
        Some(fields)
    }

    /// Records the host action `name` (at `span`) as standing for code that
    /// was not read, named by the code at `code`, for the linter: what rests
    /// on it is undecided.
    fn opaque_part(&mut self, name: &str, code: Span, span: Span, kind: OpaqueKind) {
        let (code, place) = self.code_and_place(code);
        let what = format!("`{}` at {place}", abbreviated(&code));
        self.record_opaque(name, what, kind, span);
    }

    /// Records the host action `name` as the opaque part `what`, in place
    /// of what was recorded under that name before.
    fn record_opaque(&mut self, name: &str, what: String, kind: OpaqueKind, span: Span) {
        self.opaque.retain(|p| p.name != name);
        self.opaque.push(OpaquePart {
            name: name.to_string(),
            what,
            kind,
            span,
        });
    }

    /// The text of a span, in whichever file holds it, and its
    /// `path:line:column`, for people.
    pub(super) fn code_and_place(&self, span: Span) -> (String, String) {
        let split = self
            .reader
            .sources
            .split(vec![super::note(String::new(), span)]);
        match split.iter().find(|(_, d)| !d.is_empty()) {
            Some((file, d)) => {
                let (line, column) = file.line_col(d[0].span.start);
                let code = file.text.get(d[0].span.range()).unwrap_or_default();
                (code.to_string(), format!("{}:{line}:{column}", file.path))
            }
            None => (String::new(), "?".to_string()),
        }
    }

    /// A host action with a note.
    fn host_action(&mut self, name: &str, why: &str, span: Span, out: &mut Vec<ActionDoc>) {
        self.host_actions += 1;
        let message = if self.stand_ins.contains_key(name) {
            let undecided = if self.opaque.iter().any(|p| p.name == name) {
                ", and a finding that rests on it as undecided"
            } else {
                ""
            };
            format!(
                "this action cannot be translated: {why}; the linter treats it as a host action whose idempotency is unknown{undecided}"
            )
        } else {
            format!(
                "this action cannot be translated: {why}; it is the host action `{name}`, whose idempotency the linter treats as unknown"
            )
        };
        self.note(message, span);
        out.push(ActionDoc::Named {
            name: Name {
                text: name.to_string(),
                span,
            },
        });
    }

    /// An action named in `setup({ actions })` (or v4's options): a
    /// declared effect, the translation of a built-in action it is bound
    /// to, or a host action of its name.
    fn named_action(
        &mut self,
        name: &str,
        params: Option<Node<'a>>,
        span: Span,
        out: &mut Vec<ActionDoc>,
        view: View,
        depth: u32,
    ) {
        let named = || ActionDoc::Named {
            name: Name {
                text: name.to_string(),
                span,
            },
        };
        if self.effects.contains(name) {
            let args = match params {
                Some(p) => match self.fields(p, view, None) {
                    Ok(args) => args,
                    Err(why) => {
                        self.note(
                            format!("the params of the effect `{name}` cannot be translated: {}; they are left out", why.message),
                            why.span,
                        );
                        Vec::new()
                    }
                },
                None => Vec::new(),
            };
            if args.is_empty() {
                out.push(named());
            } else {
                out.push(ActionDoc::Effect {
                    name: Name {
                        text: name.to_string(),
                        span,
                    },
                    args,
                    span,
                });
            }
            return;
        }
        let Some(implementation) = self.impls.actions.get(name).copied() else {
            out.push(named());
            return;
        };
        let implementation = self.code(implementation);
        let builtin = matches!(
            self.reader.resolve(implementation).map(|r| r.e),
            Ok(Expression::CallExpression(_)
                | Expression::ArrayExpression(_)
                | Expression::StringLiteral(_))
        );
        if !builtin {
            out.push(named());
            return;
        }
        // Translated in place; where any of it stays opaque, the whole
        // named action is one host action of its name instead.
        let notes = self.notes.len();
        let parts = self.opaque.len();
        let hosts = self.host_actions;
        let mut translated = Vec::new();
        for item in self.items(implementation) {
            self.action(item, &mut translated, view, params, depth + 1);
        }
        if self.host_actions > hosts {
            self.notes.truncate(notes);
            // The parts inside stand for the named action now: an assign of
            // their fields when they are all assigns, else anything.
            let inner: Vec<OpaquePart> = self.opaque.drain(parts..).collect();
            let mut kind = OpaqueKind::Assign(Some(Vec::new()));
            for part in &inner {
                kind = match (kind, &part.kind) {
                    (OpaqueKind::Assign(Some(mut a)), OpaqueKind::Assign(Some(b))) => {
                        a.extend(b.iter().cloned());
                        OpaqueKind::Assign(Some(a))
                    }
                    (OpaqueKind::Assign(_), OpaqueKind::Assign(_)) => OpaqueKind::Assign(None),
                    _ => OpaqueKind::Actions,
                };
            }
            if !inner.is_empty() {
                let what = format!(
                    "the action `{name}` ({})",
                    inner
                        .iter()
                        .map(|p| p.what.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.record_opaque(name, what, kind, span);
            }
            self.host_actions += 1;
            self.note(
                format!("the implementation of `{name}` cannot be translated whole; it is the host action `{name}`, whose idempotency the linter treats as unknown"),
                span,
            );
            out.push(named());
        } else {
            out.extend(translated);
        }
    }

    /// `assign`, `raise`, `send`, `sendTo`, `cancel` and `log`.
    fn builtin(
        &mut self,
        call: &'a CallExpression<'a>,
        t: TextId,
        view: View,
        params: Option<Node<'a>>,
        key: u32,
    ) -> Result<Vec<ActionDoc>, Why> {
        let name = callee_name(&call.callee).unwrap_or_default();
        let span = self.reader.span(t, call.span);
        let args: Vec<Node<'a>> = call
            .arguments
            .iter()
            .filter_map(|a| a.as_expression())
            .map(|e| Node { e, t })
            .collect();
        let call_node = |e| Node { e, t };
        let _ = call_node;
        let missing = || Why {
            message: format!("`{name}` needs an argument"),
            span,
        };
        match name {
            "assign" => {
                let arg = *args.first().ok_or_else(missing)?;
                let fields = self.fields(arg, view, params)?;
                let mut fields_out = Vec::new();
                for (field, mut text) in fields {
                    let valid = field
                        .text
                        .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && field
                            .text
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if !valid {
                        return Err(Why {
                            message: format!(
                                "the context field `{}` is not a name the machine format can write",
                                field.text
                            ),
                            span: field.span,
                        });
                    }
                    self.translated
                        .push((text.offset, text.text.len() as u32, key));
                    text.text.shrink_to_fit();
                    fields_out.push((field, text));
                }
                Ok(vec![ActionDoc::Assign {
                    fields: fields_out,
                    span,
                }])
            }
            "raise" | "send" => {
                let arg = *args.first().ok_or_else(missing)?;
                let (event, data) = self.event_object(arg, view, params)?;
                let (delay, id) = self.send_options(args.get(1).copied())?;
                // A raise without delay or id is an internal event; `send`
                // (v4) and a delayed raise go to the machine's own queue.
                if name == "raise" && delay.is_none() && id.is_none() {
                    Ok(vec![ActionDoc::Raise { event, data, span }])
                } else {
                    Ok(vec![ActionDoc::Send {
                        event,
                        data,
                        delay,
                        id,
                        span,
                    }])
                }
            }
            "sendTo" => {
                let [target, event, rest @ ..] = args.as_slice() else {
                    return Err(missing());
                };
                if !self.is_self(*target) {
                    return Err(Why {
                        message: "it sends to another actor".into(),
                        span: self.span(*target),
                    });
                }
                let rebuilt =
                    self.builtin_send(*event, rest.first().copied(), view, params, span)?;
                Ok(vec![rebuilt])
            }
            "cancel" => {
                let arg = *args.first().ok_or_else(missing)?;
                let (text, id_span) = self.string(arg).ok_or_else(|| Why {
                    message: "the id it cancels is computed".into(),
                    span: self.span(arg),
                })?;
                Ok(vec![ActionDoc::Cancel {
                    id: Name {
                        text,
                        span: id_span,
                    },
                    span,
                }])
            }
            "log" => {
                let value = match args.first() {
                    None => Cel::new("\"\"".into(), 7, Ty::String),
                    Some(arg) => {
                        let arg = *arg;
                        let translated = match self.function_of(arg) {
                            Some((f, t)) => self.translate_fn(f, t, params, view, self.key(arg)),
                            None => self.cel(arg, &Env::empty(view)),
                        };
                        translated.unwrap_or_else(|_| {
                            // A log changes nothing: what cannot be
                            // translated is logged as its text.
                            let source = self.source_text(arg);
                            let mut text = String::new();
                            crate::expr::write_quoted(
                                &format!("untranslated: {source}"),
                                &mut text,
                            )
                            .ok();
                            Cel::new(text, 7, Ty::String)
                        })
                    }
                };
                let value = match args.get(1).and_then(|l| self.string(*l)) {
                    Some((label, _)) => {
                        let mut text = String::from("{");
                        crate::expr::write_quoted("label", &mut text).ok();
                        text.push_str(": ");
                        crate::expr::write_quoted(&label, &mut text).ok();
                        text.push_str(", ");
                        crate::expr::write_quoted("value", &mut text).ok();
                        text.push_str(": ");
                        text.push_str(&value.text);
                        text.push('}');
                        Cel::new(text, 7, Ty::Map)
                    }
                    None => value,
                };
                let offset = args.first().map_or(span.start, |a| self.span(*a).start);
                let expr = self.expr_text(value, offset);
                Ok(vec![ActionDoc::Log { expr, span }])
            }
            other if OPAQUE_BUILTINS.contains(&other) => Err(Why {
                message: format!(
                    "`{other}` sends to other actors, starts them or runs code of its own"
                ),
                span,
            }),
            other => Err(Why {
                message: format!("it calls `{other}`, which only XState can run"),
                span,
            }),
        }
    }

    fn builtin_send(
        &mut self,
        event: Node<'a>,
        options: Option<Node<'a>>,
        view: View,
        params: Option<Node<'a>>,
        span: Span,
    ) -> Result<ActionDoc, Why> {
        let (event, data) = self.event_object(event, view, params)?;
        let (delay, id) = self.send_options(options)?;
        Ok(ActionDoc::Send {
            event,
            data,
            delay,
            id,
            span,
        })
    }

    /// The `delay` (milliseconds or a named delay) and `id` of the options
    /// of `raise`, `send` and `sendTo`; a `to` sends elsewhere: opaque.
    fn send_options(
        &mut self,
        options: Option<Node<'a>>,
    ) -> Result<(Option<Name>, Option<Name>), Why> {
        let (mut delay, mut id) = (None, None);
        let Some(options) = options else {
            return Ok((delay, id));
        };
        for entry in self.entries(options, "the options").unwrap_or_default() {
            match entry.key {
                "delay" => {
                    let d = match self.reader.resolve(entry.value).map(|r| r.e) {
                        Ok(Expression::NumericLiteral(x)) => duration(x.value),
                        _ => match self.string(entry.value) {
                            Some((n, _)) => {
                                let n: &'a str = self.reader.alloc.alloc_str(&n);
                                self.named_delay(n)
                            }
                            None => Err("is computed".into()),
                        },
                    };
                    let d = d.map_err(|why| Why {
                        message: format!("its delay {why}"),
                        span: entry.key_span,
                    })?;
                    delay = Some(Name {
                        text: d,
                        span: entry.key_span,
                    });
                }
                "id" => {
                    let (text, span) = self.string(entry.value).ok_or_else(|| Why {
                        message: "its id is computed".into(),
                        span: entry.key_span,
                    })?;
                    id = Some(Name { text, span });
                }
                "to" => {
                    return Err(Why {
                        message: "it sends to another actor".into(),
                        span: entry.key_span,
                    });
                }
                _ => {}
            }
        }
        Ok((delay, id))
    }

    /// Whether a `sendTo` target is the machine itself: `({ self }) => self`.
    fn is_self(&mut self, n: Node<'a>) -> bool {
        let Some((f, _)) = self.function_of(n) else {
            return false;
        };
        let Err(body) = f.body() else {
            return false;
        };
        let Expression::Identifier(id) = body.get_inner_expression() else {
            return false;
        };
        let Some(first) = f.params().items.first() else {
            return false;
        };
        match &first.pattern {
            BindingPattern::ObjectPattern(o) => o.properties.iter().any(|p| {
                p.key.is_specific_static_name("self")
                    && matches!(&p.value, BindingPattern::BindingIdentifier(b) if b.name == id.name)
            }),
            _ => false,
        }
    }

    /// The event of `raise`/`send`: its type and data.
    fn event_object(
        &mut self,
        n: Node<'a>,
        view: View,
        params: Option<Node<'a>>,
    ) -> Result<(Name, Vec<(Name, ExprText)>), Why> {
        if let Some((text, span)) = self.string(n) {
            return Ok((Name { text, span }, Vec::new()));
        }
        let mut fields = self.fields(n, view, params)?;
        let Some(at) = fields.iter().position(|(f, _)| f.text == "type") else {
            return Err(self.why("the event has no `type`", n));
        };
        let (name, ty) = fields.remove(at);
        let event = crate::expr::parse(&ty.text, 0)
            .ok()
            .and_then(|e| match e.kind {
                crate::expr::ExprKind::String(s) => Some(s.to_string()),
                _ => None,
            })
            .ok_or_else(|| Why {
                message: "the event's `type` is computed".into(),
                span: name.span,
            })?;
        Ok((
            Name {
                text: event,
                span: name.span,
            },
            fields,
        ))
    }

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
    fn object_fields(
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

    /// The translated value of one function, or why it has none.
    fn translate_fn(
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
    fn bind(
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

    fn bind_pattern(
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
    fn body_value(&mut self, f: FnRef<'a>, t: TextId, env: &mut Env<'a>) -> Result<Node<'a>, Why> {
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

    /// What a name or member chain stands for, when it is the context, the
    /// event or v5's argument object.
    fn base(&mut self, n: Node<'a>, env: &Env<'a>) -> Option<Bind<'a>> {
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

    fn source_text(&self, n: Node<'a>) -> String {
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
    fn cel(&mut self, n: Node<'a>, env: &Env<'a>) -> Result<Cel, Why> {
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
                    Some(Bind::Local(c)) => c,
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
                        if name == "length" {
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
                            if spread.ty != Ty::List {
                                return Err(self.why("a spread is translated for lists only, and this is not known to be one", sub(&s.argument)));
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
                    only
                } else {
                    let text: Vec<String> = segments.iter().map(|s| s.at(5)).collect();
                    Cel::new(text.join(" + "), 4, Ty::List)
                }
            }
            Expression::ObjectExpression(o) => {
                let mut entries: Vec<(String, String)> = Vec::new();
                self.map_entries(o, n.t, env, &mut entries)?;
                let items: Vec<String> = entries
                    .into_iter()
                    .map(|(k, v)| {
                        let mut key = String::new();
                        crate::expr::write_quoted(&k, &mut key).ok();
                        format!("{key}: {v}")
                    })
                    .collect();
                Cel::new(format!("{{{}}}", items.join(", ")), 7, Ty::Map)
            }
            Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_) => {
                return Err(self.why("a function inside an expression cannot be translated", node));
            }
            _ => return Err(self.why("this kind of expression cannot be translated", node)),
        })
    }

    /// The entries of an object literal as a map literal's, with spreads
    /// of object literals flattened.
    fn map_entries(
        &mut self,
        o: &'a ObjectExpression<'a>,
        t: TextId,
        env: &Env<'a>,
        out: &mut Vec<(String, String)>,
    ) -> Result<(), Why> {
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) => {
                    let Some(key) = p.key.static_name().filter(|_| !p.computed) else {
                        return Err(Why {
                            message: "a computed key cannot be translated".into(),
                            span: self.reader.span(t, p.key.span()),
                        });
                    };
                    let value = self.cel(Node { e: &p.value, t }, env)?;
                    out.retain(|(k, _)| k != key.as_ref());
                    out.push((key.to_string(), value.text));
                }
                ObjectPropertyKind::SpreadProperty(s) => {
                    let spread = Node { e: &s.argument, t };
                    match self.reader.resolve(spread) {
                        Ok(r) if env.depth < 32 => match r.e {
                            Expression::ObjectExpression(inner) => {
                                self.map_entries(inner, r.t, env, out)?
                            }
                            _ => {
                                return Err(self.why("a spread of anything but an object literal cannot be translated", spread));
                            }
                        },
                        _ => {
                            return Err(self.why(
                                "a spread of anything but an object literal cannot be translated",
                                spread,
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `context.f` or `event.f`, with v4's `event.data` of a completion as
    /// its `output` or `error`.
    fn field(&mut self, base: Base, name: &str, env: &Env<'a>, n: Node<'a>) -> Result<Cel, Why> {
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

    fn call(
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

    /// SCXML's `_event.name` (the event's type) and `_event.data.F` (a
    /// payload field; in a completion's handler, of its output or error);
    /// `None` where `object` is not `_event` or `_event.data`.
    fn scxml_event(
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

    /// An invocation's `input` (or v4's `data`): fields of literal values
    /// or of functions of the context and event, or one function returning
    /// the object. What cannot be translated is left out, with a note.
    pub fn input(&mut self, n: Node<'a>, _v5: bool) -> Vec<(Name, ExprText)> {
        match self.fields(n, View::Plain, None) {
            Ok(fields) => fields,
            Err(why) => {
                self.note(
                    format!(
                        "the input cannot be translated: {}; the invocation gets none",
                        why.message
                    ),
                    why.span,
                );
                Vec::new()
            }
        }
    }
}

#[derive(Clone)]
enum Role {
    Args,
    Whole(Base),
    Field(Base, String),
    Params,
    Other,
}

impl Cel {
    /// In parentheses, where it joins other guards.
    fn wrapped(self) -> Cel {
        if self.level >= 7 {
            return self;
        }
        let parts = self
            .parts
            .iter()
            .map(|(at, len, key)| (at + 1, *len, *key))
            .collect();
        Cel {
            text: format!("({})", self.text),
            level: 7,
            ty: self.ty,
            parts,
        }
    }
}

/// `prefix item op item ... suffix`, each item parenthesised where `level`
/// needs it, the items' translated parts kept.
fn combine(prefix: &str, items: &[Cel], op: &str, level: u8, suffix: &str) -> Cel {
    let mut text = String::from(prefix);
    let mut parts = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push_str(op);
        }
        let min = if i == 0 { level } else { level + 1 };
        let paren = item.level < min.max(if prefix.is_empty() { 0 } else { 6 });
        if paren {
            text.push('(');
        }
        let at = text.len() as u32;
        parts.extend(item.parts.iter().map(|(p, len, key)| (at + p, *len, *key)));
        text.push_str(&item.text);
        if paren {
            text.push(')');
        }
    }
    text.push_str(suffix);
    Cel {
        text,
        level,
        ty: Ty::Bool,
        parts,
    }
}

fn property_node<'a>(object: Node<'a>, name: &str) -> Option<Node<'a>> {
    property(object.e, name).map(|e| Node { e, t: object.t })
}

/// Code as a message names it: a call as `callee(...)`, anything else its
/// first line, cut at 40 characters.
fn abbreviated(code: &str) -> String {
    let code = code.trim();
    if let Some(open) = code.find('(')
        && code.ends_with(')')
        && !code[..open].contains(['=', ' ', '\n'])
        && !code[..open].is_empty()
    {
        return format!("{}(...)", &code[..open]);
    }
    let first = code.lines().next().unwrap_or_default();
    let mut cut: String = first.chars().take(40).collect();
    if cut.len() < code.len() {
        cut.push_str("...");
    }
    cut
}

fn is_ident(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A number as CEL writes it: an integer without a fraction, a double with
/// one; `None` where the text would not be the same number.
fn number_text(value: f64) -> Option<String> {
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    if value.fract() == 0.0 && value < 9.0e15 {
        return Some(format!("{}", value as i64));
    }
    let text = format!("{value}");
    (text.contains('.') && !text.contains('e')).then_some(text)
}

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
        super::scope::Reader::expression(&alloc, text).map_err(|(message, at)| JsError {
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
    let (_, root) = super::scope::Reader::expression(&alloc, text).ok()?;
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
