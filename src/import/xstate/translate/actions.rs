//! Actions: XState's built-in actions translated, the rest host actions
//! with the opaque parts they stand for.

use oxc_ast::ast::*;

use super::super::Version;
use super::super::config::{Cx, callee_name, duration};
use super::super::scope::{MAX_DEPTH, Node, TextId, property};
use super::{Cel, Env, OPAQUE_BUILTINS, Ty, View, Why, abbreviated};
use crate::model::{Name, OpaqueKind, OpaquePart};
use crate::span::Span;
use crate::syntax::tree::{ActionDoc, ExprText};

impl<'a> Cx<'_, 'a> {
    // ---- actions ----

    /// One action or a list of them.
    pub fn actions(&mut self, n: Node<'a>, out: &mut Vec<ActionDoc>, view: View) {
        for item in self.items(n) {
            self.action(item, out, view, None, 0);
        }
    }

    pub(super) fn action(
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
    pub(super) fn opaque_kind(
        &mut self,
        call: &'a CallExpression<'a>,
        t: TextId,
    ) -> Option<OpaqueKind> {
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
    pub(super) fn assigned_fields(&mut self, n: Node<'a>) -> Option<Vec<String>> {
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
    pub(super) fn opaque_part(&mut self, name: &str, code: Span, span: Span, kind: OpaqueKind) {
        let (code, place) = self.code_and_place(code);
        let what = format!("`{}` at {place}", abbreviated(&code));
        self.record_opaque(name, what, kind, span);
    }

    /// Records the host action `name` as the opaque part `what`, in place
    /// of what was recorded under that name before.
    pub(super) fn record_opaque(&mut self, name: &str, what: String, kind: OpaqueKind, span: Span) {
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
    pub(in crate::import::xstate) fn code_and_place(&self, span: Span) -> (String, String) {
        let split = self
            .reader
            .sources
            .split(vec![super::super::note(String::new(), span)]);
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
    pub(super) fn host_action(
        &mut self,
        name: &str,
        why: &str,
        span: Span,
        out: &mut Vec<ActionDoc>,
    ) {
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
    pub(super) fn named_action(
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
    pub(super) fn builtin(
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
                let fields = self.assign_fields(arg, view, params)?;
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

    pub(super) fn builtin_send(
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
    pub(super) fn send_options(
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
    pub(super) fn is_self(&mut self, n: Node<'a>) -> bool {
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
    pub(super) fn event_object(
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
