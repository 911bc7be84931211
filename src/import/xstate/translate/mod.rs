//! Guards, actions and values written in JavaScript, translated to the
//! machine format's expressions where the meaning is exact.
//!
//! A function is read through its parameters: v5's `({ context, event })`
//! (destructured further, or as `args.context`), v4's `(context, event)`,
//! and a second parameter for the `params` of a named implementation. Its
//! body is one expression, or statements read one by one (`body.rs`):
//! declarations, `if`/`else` and early returns (as conditionals), changes
//! of copies the body made (`next.push(x)`), and a `return`. The translated
//! part of JavaScript is the machine format's (`expr.rs`): literals, context
//! and event fields, comparisons (`===` as `==`), `!`, `&&`, `||`, `??` (as
//! a test for null), `?:`, arithmetic but `/` (CEL divides integers without
//! a fraction), `.length` and `.includes(x)` of a list (as `size` and
//! `in`), `[...a, x]` (as `a + [x]`), object literals (as maps, merged
//! where they spread), and the calls of `idioms.rs`: `Math.max`/`min`,
//! `Object.assign`, `Set`s, `concat`, `filter` removing by a key, and the
//! repository's own pure helpers, inlined. Names bound by a top-level
//! `const` of the file to a literal are inlined. What an `assign` function
//! returns is a partial context, read field by field (`fields.rs`).
//!
//! Anything else is opaque: a guard becomes a host guard and an action a
//! host action, named by the implementation's name or `inline_LxCy` for one
//! written in place, which the linter treats as unknown, never as safe.
//!
//! SCXML's `cond` and `expr` are translated here too (`scxml.rs`): the
//! text is parsed with oxc as one expression, data model variables are
//! context fields, `_event` is SCXML's event and `In('id')` a state test.

use oxc_ast::ast::*;

use super::config::Cx;
use super::scope::{FnRef, Node, TextId, property};
use crate::span::Span;
use crate::syntax::tree::ExprText;

mod actions;
mod body;
mod expr;
mod fields;
mod guards;
mod idioms;
mod scxml;
#[cfg(test)]
mod tests;

pub(crate) use scxml::{DataModel, JsError, scxml_fold, scxml_to_cel, scxml_to_json};

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
    /// A JavaScript `Set`: a list of distinct elements, with `.add`,
    /// `.has` and `.size` but no `.length` or `.includes`.
    Set,
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
    /// For a `Set` written `distinct(L)`: the list `L`, which `.add(x)`
    /// extends to `distinct(L + [x])` rather than nesting `distinct`.
    set_of: Option<Box<Cel>>,
}

impl Cel {
    fn new(text: String, level: u8, ty: Ty) -> Cel {
        Cel {
            text,
            level,
            ty,
            parts: Vec::new(),
            set_of: None,
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
    /// A `const` or `let` of the body (or a helper's parameter), already
    /// translated; with the number of the copy it holds where it was bound
    /// to a list, set or object the body made (`[...list]`, `new Set(s)`,
    /// `{...o}`), which the body may change (`next.push(x)`) until it reads
    /// it.
    Local(Cel, Option<u32>),
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

    /// An expression text at `offset`, with its translated parts recorded.
    pub(super) fn expr_text(&mut self, cel: Cel, offset: u32) -> ExprText {
        for (at, len, key) in &cel.parts {
            self.translated.push((offset + at, *len, *key));
        }
        ExprText {
            text: cel.text,
            offset,
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
            set_of: self.set_of,
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
        set_of: None,
    }
}

fn property_node<'a>(object: Node<'a>, name: &str) -> Option<Node<'a>> {
    property(object.e, name).map(|e| Node { e, t: object.t })
}

/// Code as a message names it: a call as `callee(...)`, anything else its
/// first line, cut at 40 characters.
pub(in crate::import::xstate) fn abbreviated(code: &str) -> String {
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
