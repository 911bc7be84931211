//! Compiled expressions and their evaluation.
//!
//! An expression is compiled once, when a machine is loaded: `context.f`
//! becomes a slot index into the context (which the interpreter keeps as a
//! `Vec<Value>` in slot order), `in_state("p")` a state index, each function
//! an operation. What is left at run time is a walk over a small tree that
//! borrows values instead of cloning them wherever it can, and that answers
//! boolean questions (`in`, `==`, `!`, `&&`) without building a `Value`.
//!
//! Semantics are CEL's where a user can tell: int overflow and division by
//! zero are errors, int division truncates, `+` joins strings and lists,
//! `in` tests list membership and map keys, `==` between different kinds is
//! false while numbers compare across int and double, and `&&`/`||` let a
//! decisive side win over an error on the other. One choice of ours: an int
//! and a double combine into a double in arithmetic (CEL would refuse), since
//! machine files hold JSON numbers that do not say which they are.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use crate::span::Span;

use super::list::List;
use super::value::{Value, compare, map_get, map_get_near};
use super::{BinaryOp, Expr, ExprKind, UnaryOp};

/// Where each context field lives in the context's `Vec<Value>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    fields: Vec<Arc<str>>,
    /// Whether every field's name is written in JSON without escapes, so
    /// that a reader may recognise it by its bytes.
    plain_names: bool,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            fields: Vec::new(),
            plain_names: true,
        }
    }
}

impl Layout {
    /// A layout with the fields in this order; a repeated name keeps its first slot.
    pub fn new<S: AsRef<str>>(fields: impl IntoIterator<Item = S>) -> Layout {
        let mut layout = Layout::default();
        for field in fields {
            if layout.slot(field.as_ref()).is_none() {
                layout.fields.push(Arc::from(field.as_ref()));
            }
        }
        let plain_names = layout.fields().all(super::json::plain);
        layout.plain_names = plain_names;
        layout
    }

    /// Whether every field's name is written in JSON without escapes.
    pub(crate) fn plain_names(&self) -> bool {
        self.plain_names
    }

    pub fn slot(&self, field: &str) -> Option<u32> {
        self.fields
            .iter()
            .position(|f| &**f == field)
            .map(|i| i as u32)
    }

    /// The field in `slot`.
    pub fn field(&self, slot: u32) -> Option<&str> {
        self.fields.get(slot as usize).map(|f| &**f)
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub fn fields(&self) -> impl Iterator<Item = &str> + '_ {
        self.fields.iter().map(|f| &**f)
    }

    /// The context as one map, field names in slot order: what a snapshot stores.
    pub fn to_map(&self, context: &[Value]) -> Value {
        Value::Map(Arc::new(
            self.fields
                .iter()
                .cloned()
                .zip(context.iter().cloned())
                .collect(),
        ))
    }

    /// The context in slot order from a map such as `to_map` made. Every
    /// field must be there and no other.
    pub fn from_map(&self, map: &Value) -> Result<Vec<Value>, String> {
        let Some(entries) = map.as_map() else {
            return Err(format!(
                "the context must be a map, not {}",
                map.described()
            ));
        };
        if let Some(extra) = entries.keys().find(|k| self.slot(k).is_none()) {
            return Err(format!("the context has an unknown field `{extra}`"));
        }
        self.fields
            .iter()
            .map(|f| {
                map_get(entries, f)
                    .cloned()
                    .ok_or_else(|| format!("the context lacks the field `{f}`"))
            })
            .collect()
    }
}

/// An event as expressions see it.
#[derive(Clone, Debug, Default)]
pub struct Event {
    /// `event.type`.
    pub name: Arc<str>,
    /// `event.id`: the id that identifies one delivery.
    pub id: Option<Value>,
    /// The payload, a `Value::Map` (`Null` for none); `event.f` reads its fields.
    pub data: Value,
}

impl Event {
    pub fn new(name: impl Into<Arc<str>>, id: Option<Value>, data: Value) -> Event {
        Event {
            name: name.into(),
            id,
            data,
        }
    }

    /// The payload field `name`.
    #[inline]
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.data.get(name)
    }
}

/// An expression that failed at run time: a type error that the static check
/// could not see, a missing field, a division by zero, an index out of range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    pub message: String,
    pub span: Span,
}

/// The error as evaluation passes it around: boxed, so that a `Result`
/// stays as small as its value and comes back in registers.
type Fail = Box<EvalError>;

impl EvalError {
    #[cold]
    fn new(message: impl Into<String>, span: Span) -> Fail {
        Box::new(EvalError {
            message: message.into(),
            span,
        })
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// A compiled expression, ready for `eval`.
#[derive(Clone, Debug)]
pub struct Compiled {
    root: Node,
}

impl Compiled {
    /// The span of the whole expression.
    pub fn span(&self) -> Span {
        self.root.span
    }

    /// The value when compiling found the expression constant.
    pub fn constant(&self) -> Option<&Value> {
        match &self.root.op {
            Op::Const(value) => Some(value),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
struct Node {
    op: Op,
    span: Span,
}

#[derive(Clone, Debug)]
enum EventField {
    Type,
    Id,
    Payload(PayloadField),
}

/// A payload field read by an expression, with where it was found last.
#[derive(Debug)]
struct PayloadField {
    name: Box<str>,
    /// The field's position in the last payload that had it. Events of one
    /// kind are mostly built alike, so the next payload usually has it
    /// there too, and one key comparison finds it. A chart is shared
    /// between threads, hence the atomic; any value is only a guess that
    /// the lookup checks, so relaxed order is enough.
    hint: AtomicU32,
}

impl PayloadField {
    fn new(name: &str) -> PayloadField {
        PayloadField {
            name: name.into(),
            hint: AtomicU32::new(0),
        }
    }

    /// The field in `data`, when it is a map that has it.
    #[inline(always)]
    fn get<'d>(&self, data: &'d Value) -> Option<&'d Value> {
        let Value::Map(map) = data else {
            return None;
        };
        let hint = self.hint.load(Relaxed) as usize;
        match map_get_near(map, &self.name, hint) {
            Ok(value) => Some(value),
            Err(found) => {
                let (at, value) = found?;
                self.hint.store(at as u32, Relaxed);
                Some(value)
            }
        }
    }
}

impl Clone for PayloadField {
    fn clone(&self) -> PayloadField {
        PayloadField {
            name: self.name.clone(),
            hint: AtomicU32::new(self.hint.load(Relaxed)),
        }
    }
}

/// The functions of values that the XState translator writes for the
/// idioms of JavaScript's assigns (`docs/machine-format.md`).
#[derive(Clone, Copy, Debug)]
enum Function {
    /// `merge(a, b)`: map `a` with `b`'s entries written over it
    /// (`{...a, ...b}`); `null` stands for no entries.
    Merge,
    /// `distinct(list)`: each element once, where first found (`new Set(list)`).
    Distinct,
    /// `without(list, x)`: the elements not equal to `x`.
    Without,
    /// `without_by(list, "f", x)`: the elements whose field `f` is not `x`.
    WithoutBy,
}

#[derive(Clone, Debug)]
enum Op {
    Const(Value),
    Context(u32),
    Event(EventField),
    Member(Box<Node>, Box<str>),
    Index(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Neg(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// `== != < <= > >= in`: they answer a bool.
    Test(BinaryOp, Box<Node>, Box<Node>),
    /// `+ - * / %`.
    Arith(BinaryOp, Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Size(Box<Node>),
    /// `merge`, `distinct`, `without`, `without_by`: functions of values.
    Func(Function, Vec<Node>),
    HasEvent(EventField),
    HasMember(Box<Node>, Box<str>),
    InState(u32),
    /// A host guard, by its index among the machine's declared guards; the
    /// name is for the error when the host has no answer.
    Host(u32, Box<str>),
    /// Something the static check reports (an unknown name, say): compiled
    /// anyway so that compiling never fails, it fails when evaluated.
    Fail(Box<str>),
}

/// Compiles `expr`: context fields to slots of `layout`, `in_state` paths to
/// state indices through `in_state`. Never fails; what the static check would
/// reject fails when evaluated.
pub fn compile(expr: &Expr, layout: &Layout, in_state: &dyn Fn(&str) -> Option<u32>) -> Compiled {
    compile_guard(expr, layout, in_state, &no_guards)
}

/// `compile` for a guard: a bare name that `guards` knows becomes a call to
/// the host guard with that index, which `eval_guard_with_host` answers.
pub fn compile_guard(
    expr: &Expr,
    layout: &Layout,
    in_state: &dyn Fn(&str) -> Option<u32>,
    guards: &dyn Fn(&str) -> Option<u32>,
) -> Compiled {
    Compiled {
        root: Compiler {
            layout,
            in_state,
            guards,
        }
        .node(expr),
    }
}

fn no_guards(_: &str) -> Option<u32> {
    None
}

/// The host's answer where no host is asked: none.
fn no_host(_: u32) -> Option<bool> {
    None
}

struct Compiler<'c> {
    layout: &'c Layout,
    in_state: &'c dyn Fn(&str) -> Option<u32>,
    guards: &'c dyn Fn(&str) -> Option<u32>,
}

impl Compiler<'_> {
    fn boxed(&self, expr: &Expr) -> Box<Node> {
        Box::new(self.node(expr))
    }

    fn node(&self, expr: &Expr) -> Node {
        let op = match &expr.kind {
            ExprKind::Null => Op::Const(Value::Null),
            ExprKind::Bool(b) => Op::Const(Value::Bool(*b)),
            ExprKind::Int(n) => Op::Const(Value::Int(*n)),
            ExprKind::Float(n) => Op::Const(Value::Double(*n)),
            ExprKind::String(s) => Op::Const(Value::from(s.as_str())),
            ExprKind::List(items) => Op::List(items.iter().map(|e| self.node(e)).collect()),
            ExprKind::Map(entries) => Op::Map(
                entries
                    .iter()
                    .map(|(k, v)| (self.node(k), self.node(v)))
                    .collect(),
            ),
            ExprKind::Ident(name) => match (self.guards)(name) {
                Some(index) => Op::Host(index, name.as_str().into()),
                None => Op::Fail(format!("`{name}` is not a value here").into()),
            },
            ExprKind::Member(operand, field) => match &operand.kind {
                ExprKind::Ident(name) if name == "context" => self.context_field(field),
                ExprKind::Ident(name) if name == "event" => Op::Event(event_field(field)),
                _ => Op::Member(self.boxed(operand), field.as_str().into()),
            },
            ExprKind::Index(operand, index) => Op::Index(self.boxed(operand), self.boxed(index)),
            ExprKind::Unary(UnaryOp::Not, operand) => Op::Not(self.boxed(operand)),
            ExprKind::Unary(UnaryOp::Neg, operand) => Op::Neg(self.boxed(operand)),
            ExprKind::Binary(op, left, right) => {
                let (l, r) = (self.boxed(left), self.boxed(right));
                match op {
                    BinaryOp::And => Op::And(l, r),
                    BinaryOp::Or => Op::Or(l, r),
                    BinaryOp::Eq
                    | BinaryOp::Ne
                    | BinaryOp::Lt
                    | BinaryOp::Le
                    | BinaryOp::Gt
                    | BinaryOp::Ge
                    | BinaryOp::In => Op::Test(*op, l, r),
                    BinaryOp::Add
                    | BinaryOp::Sub
                    | BinaryOp::Mul
                    | BinaryOp::Div
                    | BinaryOp::Rem => Op::Arith(*op, l, r),
                }
            }
            ExprKind::Conditional(condition, then, otherwise) => {
                let condition = self.node(condition);
                match condition.op {
                    // A constant condition leaves only the branch it picks.
                    Op::Const(Value::Bool(true)) => return self.node(then),
                    Op::Const(Value::Bool(false)) => return self.node(otherwise),
                    _ => Op::Cond(Box::new(condition), self.boxed(then), self.boxed(otherwise)),
                }
            }
            ExprKind::Call(name, args) => self.call(name, args),
        };
        fold(Node {
            op,
            span: expr.span,
        })
    }

    fn context_field(&self, field: &str) -> Op {
        match self.layout.slot(field) {
            Some(slot) => Op::Context(slot),
            None => Op::Fail(format!("unknown context field `{field}`").into()),
        }
    }

    fn call(&self, name: &str, args: &[Expr]) -> Op {
        match (name, args) {
            ("size", [arg]) => Op::Size(self.boxed(arg)),
            ("has", [arg]) => match &arg.kind {
                ExprKind::Member(operand, field) => match &operand.kind {
                    // A context field is always present once it is declared.
                    ExprKind::Ident(n) if n == "context" => match self.context_field(field) {
                        Op::Context(_) => Op::Const(Value::Bool(true)),
                        fail => fail,
                    },
                    ExprKind::Ident(n) if n == "event" => Op::HasEvent(event_field(field)),
                    _ => Op::HasMember(self.boxed(operand), field.as_str().into()),
                },
                _ => Op::Fail("`has` takes a field selection".into()),
            },
            ("in_state", [arg]) => match &arg.kind {
                ExprKind::String(path) => match (self.in_state)(path) {
                    Some(state) => Op::InState(state),
                    None => Op::Fail(format!("unknown state `{path}`").into()),
                },
                _ => Op::Fail("`in_state` takes a state path as a string literal".into()),
            },
            ("merge", [a, b]) => Op::Func(Function::Merge, vec![self.node(a), self.node(b)]),
            ("distinct", [a]) => Op::Func(Function::Distinct, vec![self.node(a)]),
            ("without", [a, b]) => Op::Func(Function::Without, vec![self.node(a), self.node(b)]),
            ("without_by", [a, k, b]) => Op::Func(
                Function::WithoutBy,
                vec![self.node(a), self.node(k), self.node(b)],
            ),
            ("size" | "has" | "in_state", _) => {
                Op::Fail(format!("`{name}` takes one argument, not {}", args.len()).into())
            }
            _ => Op::Fail(format!("unknown function `{name}`").into()),
        }
    }
}

fn event_field(field: &str) -> EventField {
    match field {
        "type" => EventField::Type,
        "id" => EventField::Id,
        _ => EventField::Payload(PayloadField::new(field)),
    }
}

/// Replaces a node whose operands are all constants by its value, when
/// computing it succeeds; a failing one stays, to fail at run time at its place.
fn fold(node: Node) -> Node {
    let is_const = |n: &Node| matches!(n.op, Op::Const(_));
    let foldable = match &node.op {
        Op::Member(a, _) | Op::Not(a) | Op::Neg(a) | Op::Size(a) | Op::HasMember(a, _) => {
            is_const(a)
        }
        Op::Index(a, b) | Op::And(a, b) | Op::Or(a, b) | Op::Test(_, a, b) | Op::Arith(_, a, b) => {
            is_const(a) && is_const(b)
        }
        Op::List(items) => items.iter().all(is_const),
        Op::Map(entries) => entries.iter().all(|(k, v)| is_const(k) && is_const(v)),
        _ => false,
    };
    if !foldable {
        return node;
    }
    let no_state = |_: u32| false;
    let env = Env::new(&[], None, &no_state);
    match eval_ref(&node, &env).map(Cow::into_owned) {
        Ok(value) => Node {
            op: Op::Const(value),
            span: node.span,
        },
        Err(_) => node,
    }
}

/// What an evaluation reads.
struct Env<'a> {
    context: &'a [Value],
    event: Option<&'a Event>,
    active: &'a dyn Fn(u32) -> bool,
    /// The host's answer for the host guard with this index; `None` when
    /// the host has none.
    host: &'a dyn Fn(u32) -> Option<bool>,
}

impl<'a> Env<'a> {
    /// An environment without host guards.
    #[inline(always)]
    fn new(
        context: &'a [Value],
        event: Option<&'a Event>,
        active: &'a dyn Fn(u32) -> bool,
    ) -> Env<'a> {
        Env {
            context,
            event,
            active,
            host: &no_host,
        }
    }

    #[inline(always)]
    fn slot(&self, slot: u32, span: Span) -> Result<&'a Value, Fail> {
        slot_in(self.context, slot, span)
    }

    #[inline(always)]
    fn payload(&self, field: &PayloadField, span: Span) -> Result<&'a Value, Fail> {
        payload_in(self.event, field, span)
    }

    fn event(&self, span: Span) -> Result<&'a Event, Fail> {
        self.event
            .ok_or_else(|| EvalError::new("there is no event here", span))
    }
}

/// The context field in `slot`.
#[inline(always)]
fn slot_in(context: &[Value], slot: u32, span: Span) -> Result<&Value, Fail> {
    context
        .get(slot as usize)
        .ok_or_else(|| EvalError::new(format!("the context has no slot {slot}"), span))
}

/// The payload field `field` of `event`.
#[inline(always)]
fn payload_in<'a>(
    event: Option<&'a Event>,
    field: &PayloadField,
    span: Span,
) -> Result<&'a Value, Fail> {
    match event.and_then(|event| field.get(&event.data)) {
        Some(value) => Ok(value),
        None => Err(missing_payload(event.is_some(), &field.name, span)),
    }
}

/// Kept out of line so that the lookup above stays small.
#[cold]
#[inline(never)]
fn missing_payload(has_event: bool, name: &str, span: Span) -> Fail {
    match has_event {
        false => EvalError::new("there is no event here", span),
        true => EvalError::new(format!("the event has no field `{name}`"), span),
    }
}

/// Evaluates `compiled` over `context` (in slot order) and `event` (`None`
/// for an eventless transition); `active` says whether the state with an
/// index that `compile` got from its `in_state` resolver is active.
pub fn eval(
    compiled: &Compiled,
    context: &[Value],
    event: Option<&Event>,
    active: &dyn Fn(u32) -> bool,
) -> Result<Value, EvalError> {
    let env = Env::new(context, event, active);
    eval_ref(&compiled.root, &env)
        .map(Cow::into_owned)
        .map_err(|e| *e)
}

/// Evaluates a guard: it must give a bool. The interpreter takes an error as
/// `false`, as SCXML does.
pub fn eval_guard(
    compiled: &Compiled,
    context: &[Value],
    event: Option<&Event>,
    active: &dyn Fn(u32) -> bool,
) -> Result<bool, EvalError> {
    eval_guard_with_host(compiled, context, event, active, &no_host)
}

/// `eval_guard` for a guard compiled by `compile_guard`: `host` answers the
/// host guard with an index, or gives `None` when it has no answer, which
/// is an error as an expression that fails is.
#[inline]
pub fn eval_guard_with_host(
    compiled: &Compiled,
    context: &[Value],
    event: Option<&Event>,
    active: &dyn Fn(u32) -> bool,
    host: &dyn Fn(u32) -> Option<bool>,
) -> Result<bool, EvalError> {
    // Guards often start with `!`: peel it here rather than in a call.
    let mut node = &compiled.root;
    let mut negated = false;
    while let Op::Not(operand) = &node.op {
        node = operand;
        negated = !negated;
    }
    // The common guard, a test between two leaves, without the tree walk
    // and what it reads.
    if let Op::Test(op, left, right) = &node.op
        && let (Some(a), Some(b)) = (
            leaf_in(left, context, event),
            leaf_in(right, context, event),
        )
    {
        return match a.and_then(|a| b.and_then(|b| test_leaves(*op, a, b, node.span))) {
            Ok(b) => Ok(b != negated),
            Err(e) => Err(*e),
        };
    }
    let env = Env {
        context,
        event,
        active,
        host,
    };
    match eval_bool(node, &env) {
        Ok(b) => Ok(b != negated),
        Err(e) => Err(*e),
    }
}

/// `test`, with membership in a list answered inline.
#[inline(always)]
fn test_leaves(op: BinaryOp, a: &Value, b: &Value, span: Span) -> Result<bool, Fail> {
    match (op, b) {
        (BinaryOp::In, Value::List(items)) => Ok(items.contains(a)),
        _ => test(op, a, b, span),
    }
}

/// `eval_ref` with the leaves (constants, context fields, payload fields)
/// answered inline: they are most operands, and `eval_ref` is a large
/// function whose every call saves many registers.
#[inline(always)]
fn operand<'a>(node: &'a Node, env: &Env<'a>) -> Result<Cow<'a, Value>, Fail> {
    match &node.op {
        Op::Const(value) => Ok(Cow::Borrowed(value)),
        Op::Context(slot) => env.slot(*slot, node.span).map(Cow::Borrowed),
        Op::Event(EventField::Payload(field)) => env.payload(field, node.span).map(Cow::Borrowed),
        _ => eval_ref(node, env),
    }
}

/// The value of a leaf (a constant, a context field, a payload field), which
/// is always borrowed; `None` for any other node. Reading a leaf has no
/// effect, so reading two before checking either's error keeps the order
/// in which errors are reported.
#[inline(always)]
fn leaf<'a>(node: &'a Node, env: &Env<'a>) -> Option<Result<&'a Value, Fail>> {
    leaf_in(node, env.context, env.event)
}

/// `leaf` over the context and event alone.
#[inline(always)]
fn leaf_in<'a>(
    node: &'a Node,
    context: &'a [Value],
    event: Option<&'a Event>,
) -> Option<Result<&'a Value, Fail>> {
    match &node.op {
        Op::Const(value) => Some(Ok(value)),
        Op::Context(slot) => Some(slot_in(context, *slot, node.span)),
        Op::Event(EventField::Payload(field)) => Some(payload_in(event, field, node.span)),
        _ => None,
    }
}

fn eval_ref<'a>(node: &'a Node, env: &Env<'a>) -> Result<Cow<'a, Value>, Fail> {
    let span = node.span;
    Ok(match &node.op {
        Op::Const(value) => Cow::Borrowed(value),
        Op::Context(slot) => Cow::Borrowed(env.slot(*slot, span)?),
        Op::Event(field) => {
            let event = env.event(span)?;
            match field {
                EventField::Type => Cow::Owned(Value::from(&event.name)),
                EventField::Id => Cow::Borrowed(
                    event
                        .id
                        .as_ref()
                        .ok_or_else(|| EvalError::new("the event has no id", span))?,
                ),
                EventField::Payload(field) => Cow::Borrowed(env.payload(field, span)?),
            }
        }
        Op::Member(base, field) => match operand(base, env)? {
            Cow::Borrowed(value) => Cow::Borrowed(member(value, field, span)?),
            Cow::Owned(value) => Cow::Owned(member(&value, field, span)?.clone()),
        },
        Op::Index(base, index) => {
            let key = operand(index, env)?;
            match operand(base, env)? {
                Cow::Borrowed(value) => element(value, &key, span)?,
                Cow::Owned(value) => Cow::Owned(element(&value, &key, span)?.into_owned()),
            }
        }
        Op::Neg(x) => Cow::Owned(negate(&*operand(x, env)?, span)?),
        Op::Arith(op, left, right) => {
            let a = operand(left, env)?;
            let b = operand(right, env)?;
            Cow::Owned(arith(*op, a, b, span)?)
        }
        Op::Cond(condition, then, otherwise) => {
            if eval_bool(condition, env)? {
                eval_ref(then, env)?
            } else {
                eval_ref(otherwise, env)?
            }
        }
        Op::List(items) => Cow::Owned(Value::list(
            items
                .iter()
                .map(|item| eval_ref(item, env).map(Cow::into_owned))
                .collect::<Result<_, _>>()?,
        )),
        Op::Map(entries) => {
            let mut map = super::value::Map::with_capacity(entries.len());
            for (key, value) in entries {
                let key_value = eval_ref(key, env)?;
                let Value::String(k) = &*key_value else {
                    return Err(EvalError::new("map keys must be strings", key.span));
                };
                let v = eval_ref(value, env)?.into_owned();
                if map.insert(Arc::from(k.as_str()), v).is_some() {
                    return Err(EvalError::new(
                        format!("the key `{k}` appears twice in the map"),
                        key.span,
                    ));
                }
            }
            Cow::Owned(Value::Map(Arc::new(map)))
        }
        Op::Size(x) => Cow::Owned(Value::Int(size(&*operand(x, env)?, span)?)),
        Op::Func(function, args) => {
            let values = (args.iter())
                .map(|a| operand(a, env))
                .collect::<Result<Vec<_>, _>>()?;
            Cow::Owned(apply_function(*function, &values, span)?)
        }
        Op::Fail(message) => return Err(EvalError::new(&**message, span)),
        Op::Not(_)
        | Op::And(..)
        | Op::Or(..)
        | Op::Test(..)
        | Op::HasEvent(_)
        | Op::HasMember(..)
        | Op::InState(_)
        | Op::Host(..) => Cow::Owned(Value::Bool(eval_bool(node, env)?)),
    })
}

fn eval_bool(node: &Node, env: &Env) -> Result<bool, Fail> {
    let span = node.span;
    match &node.op {
        Op::Not(operand) => Ok(!eval_bool(operand, env)?),
        // CEL lets a decisive side win even when the other one fails.
        Op::And(left, right) => match eval_bool(left, env) {
            Ok(false) => Ok(false),
            Ok(true) => eval_bool(right, env),
            Err(error) => match eval_bool(right, env) {
                Ok(false) => Ok(false),
                _ => Err(error),
            },
        },
        Op::Or(left, right) => match eval_bool(left, env) {
            Ok(true) => Ok(true),
            Ok(false) => eval_bool(right, env),
            Err(error) => match eval_bool(right, env) {
                Ok(true) => Ok(true),
                _ => Err(error),
            },
        },
        Op::Test(op, left, right) => {
            // Leaves are read in place, without a `Cow` to build and match.
            if let (Some(a), Some(b)) = (leaf(left, env), leaf(right, env)) {
                return test_leaves(*op, a?, b?, span);
            }
            let a = operand(left, env)?;
            let b = operand(right, env)?;
            test(*op, &a, &b, span)
        }
        Op::Cond(condition, then, otherwise) => {
            if eval_bool(condition, env)? {
                eval_bool(then, env)
            } else {
                eval_bool(otherwise, env)
            }
        }
        Op::HasEvent(field) => Ok(match env.event {
            None => false,
            Some(event) => match field {
                EventField::Type => true,
                EventField::Id => event.id.is_some(),
                EventField::Payload(field) => field.get(&event.data).is_some(),
            },
        }),
        Op::HasMember(base, field) => match &*operand(base, env)? {
            Value::Map(map) => Ok(map_get(map, field).is_some()),
            other => Err(EvalError::new(
                format!("`has` needs a map, not {}", other.described()),
                base.span,
            )),
        },
        Op::InState(state) => Ok((env.active)(*state)),
        Op::Host(index, name) => (env.host)(*index).ok_or_else(|| {
            EvalError::new(
                format!("the host guard `{name}` has no implementation: register one with `Chart::builder(machine).guard(\"{name}\", ..)`"),
                span,
            )
        }),
        _ => match &*eval_ref(node, env)? {
            Value::Bool(b) => Ok(*b),
            other => Err(EvalError::new(
                format!("expected a bool, found {}", other.described()),
                span,
            )),
        },
    }
}

fn member<'v>(value: &'v Value, field: &str, span: Span) -> Result<&'v Value, Fail> {
    match value {
        Value::Map(map) => map_get(map, field)
            .ok_or_else(|| EvalError::new(format!("the map has no field `{field}`"), span)),
        other => Err(EvalError::new(
            format!(
                "`.{field}` selects a field of a map, not of {}",
                other.described()
            ),
            span,
        )),
    }
}

fn element<'v>(value: &'v Value, key: &Value, span: Span) -> Result<Cow<'v, Value>, Fail> {
    match (value, key) {
        (Value::List(items), Value::Int(_) | Value::Double(_)) => {
            let position = match key {
                Value::Int(i) => usize::try_from(*i).ok(),
                // A JSON number such as `1.0` may stand for an index.
                Value::Double(d) if d.fract() == 0.0 && *d >= 0.0 => Some(*d as usize),
                _ => None,
            };
            position.and_then(|p| items.get(p)).ok_or_else(|| {
                EvalError::new(
                    format!("index {key} is out of range for a list of {}", items.len()),
                    span,
                )
            })
        }
        (Value::List(_), other) => Err(EvalError::new(
            format!("a list index must be an int, not {}", other.described()),
            span,
        )),
        (Value::Map(map), Value::String(k)) => map_get(map, k)
            .map(Cow::Borrowed)
            .ok_or_else(|| EvalError::new(format!("the map has no key {key}"), span)),
        (Value::Map(_), other) => Err(EvalError::new(
            format!("map keys are strings, not {}", other.described()),
            span,
        )),
        (other, _) => Err(EvalError::new(
            format!(
                "only lists and maps can be indexed, not {}",
                other.described()
            ),
            span,
        )),
    }
}

fn size(value: &Value, span: Span) -> Result<i64, Fail> {
    let n = match value {
        // CEL counts a string's code points.
        Value::String(s) => s.chars().count(),
        Value::List(items) => items.len(),
        Value::Map(map) => map.len(),
        other => {
            return Err(EvalError::new(
                format!(
                    "`size` measures a string, a list or a map, not {}",
                    other.described()
                ),
                span,
            ));
        }
    };
    Ok(n as i64)
}

/// A function of values on its arguments' values.
fn apply_function(function: Function, args: &[Cow<Value>], span: Span) -> Result<Value, Fail> {
    let list = |v: &Value, name: &str| {
        v.as_list().cloned().ok_or_else(|| {
            EvalError::new(
                format!("`{name}` takes a list, not {}", v.described()),
                span,
            )
        })
    };
    Ok(match (function, args) {
        // `null` has no entries, as a spread of `null` gives none.
        (Function::Merge, [a, b]) if matches!(**b, Value::Null) && a.as_map().is_some() => {
            a.clone().into_owned()
        }
        (Function::Merge, [a, b]) if matches!(**a, Value::Null) => match &**b {
            Value::Null => Value::Map(Arc::new(super::value::Map::with_capacity(0))),
            b if b.as_map().is_some() => b.clone(),
            b => {
                return Err(EvalError::new(
                    format!("`merge` takes two maps, not null and {}", b.described()),
                    span,
                ));
            }
        },
        (Function::Merge, [a, b]) => {
            let (Some(a), Some(b)) = (a.as_map(), b.as_map()) else {
                return Err(EvalError::new(
                    format!(
                        "`merge` takes two maps, not {} and {}",
                        a.described(),
                        b.described()
                    ),
                    span,
                ));
            };
            let mut merged = a.clone();
            for (k, v) in b {
                merged.insert(Arc::clone(k), v.clone());
            }
            Value::Map(Arc::new(merged))
        }
        (Function::Distinct, [a]) => {
            let mut out = List::new();
            for item in list(a, "distinct")?.iter() {
                if !out.contains(&item) {
                    out.push(item.into_owned());
                }
            }
            Value::List(Arc::new(out))
        }
        (Function::Without, [a, x]) => {
            let items = list(a, "without")?;
            Value::List(Arc::new(
                items
                    .iter()
                    .filter(|item| **item != **x)
                    .map(Cow::into_owned)
                    .collect(),
            ))
        }
        (Function::WithoutBy, [a, key, x]) => {
            let Value::String(key) = &**key else {
                return Err(EvalError::new(
                    "`without_by` takes the field as a string",
                    span,
                ));
            };
            let items = list(a, "without_by")?;
            let keeps = |item: &Value| {
                item.as_map()
                    .and_then(|m| super::value::map_get(m, key))
                    .is_none_or(|v| v != &**x)
            };
            Value::List(Arc::new(
                items
                    .iter()
                    .filter(|item| keeps(item))
                    .map(Cow::into_owned)
                    .collect(),
            ))
        }
        _ => return Err(EvalError::new("a function got the wrong arguments", span)),
    })
}

fn negate(value: &Value, span: Span) -> Result<Value, Fail> {
    match value {
        Value::Int(i) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| EvalError::new("integer overflow", span)),
        Value::Double(d) => Ok(Value::Double(-d)),
        other => Err(EvalError::new(
            format!("`-` needs a number, not {}", other.described()),
            span,
        )),
    }
}

fn test(op: BinaryOp, a: &Value, b: &Value, span: Span) -> Result<bool, Fail> {
    let ordered = |expected: fn(Ordering) -> bool| match compare(a, b) {
        Some(ordering) => Ok(expected(ordering)),
        // NaN is unordered: every comparison with it is false, as in CEL.
        None if is_number(a) && is_number(b) => Ok(false),
        None => Err(EvalError::new(
            format!(
                "`{}` cannot order {} and {}",
                op.as_str(),
                a.described(),
                b.described()
            ),
            span,
        )),
    };
    match op {
        BinaryOp::Eq => Ok(a == b),
        BinaryOp::Ne => Ok(a != b),
        BinaryOp::Lt => ordered(Ordering::is_lt),
        BinaryOp::Le => ordered(Ordering::is_le),
        BinaryOp::Gt => ordered(Ordering::is_gt),
        BinaryOp::Ge => ordered(Ordering::is_ge),
        BinaryOp::In => match b {
            Value::List(items) => Ok(items.contains(a)),
            Value::Map(map) => Ok(match a {
                Value::String(key) => map_get(map, key).is_some(),
                _ => false,
            }),
            other => Err(EvalError::new(
                format!(
                    "`in` needs a list or a map on its right, not {}",
                    other.described()
                ),
                span,
            )),
        },
        _ => Err(EvalError::new(
            format!("`{}` is not a test", op.as_str()),
            span,
        )),
    }
}

fn is_number(value: &Value) -> bool {
    matches!(value, Value::Int(_) | Value::Double(_))
}

/// `+ - * / %`. Takes its operands as `Cow` so that a list built by the
/// left side (`context.a + [x] + [y]`) grows in place instead of being copied.
fn arith(op: BinaryOp, a: Cow<Value>, b: Cow<Value>, span: Span) -> Result<Value, Fail> {
    let overflow = || EvalError::new("integer overflow", span);
    let mismatch = || {
        let needs = match op {
            BinaryOp::Add => "two numbers, two strings or two lists",
            BinaryOp::Rem => "two ints",
            _ => "numbers",
        };
        EvalError::new(
            format!(
                "`{}` needs {needs}, not {} and {}",
                op.as_str(),
                a.described(),
                b.described()
            ),
            span,
        )
    };
    let ints = |x: i64, y: i64| -> Result<Value, Fail> {
        let result = match op {
            BinaryOp::Add => x.checked_add(y),
            BinaryOp::Sub => x.checked_sub(y),
            BinaryOp::Mul => x.checked_mul(y),
            BinaryOp::Div | BinaryOp::Rem if y == 0 => {
                return Err(EvalError::new(
                    if op == BinaryOp::Div {
                        "division by zero"
                    } else {
                        "modulo by zero"
                    },
                    span,
                ));
            }
            BinaryOp::Div => x.checked_div(y),
            _ => x.checked_rem(y),
        };
        result.map(Value::Int).ok_or_else(overflow)
    };
    let doubles = |x: f64, y: f64| -> Option<Value> {
        Some(Value::Double(match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            _ => return None,
        }))
    };
    if op == BinaryOp::Add
        && matches!(&*a, Value::List(_))
        && let Value::List(tail) = &*b
    {
        return Ok(concat_lists(a, tail));
    }
    match (&*a, &*b) {
        (Value::Int(x), Value::Int(y)) => ints(*x, *y),
        (Value::Double(x), Value::Double(y)) => doubles(*x, *y).ok_or_else(mismatch),
        (Value::Int(x), Value::Double(y)) => doubles(*x as f64, *y).ok_or_else(mismatch),
        (Value::Double(x), Value::Int(y)) => doubles(*x, *y as f64).ok_or_else(mismatch),
        (Value::String(x), Value::String(y)) if op == BinaryOp::Add => {
            let mut joined = String::with_capacity(x.len() + y.len());
            joined.push_str(x);
            joined.push_str(y);
            Ok(Value::from(joined))
        }
        _ => Err(mismatch()),
    }
}

/// `head + tail` for lists: appends to `head` in place when it is a list
/// that nothing else holds.
fn concat_lists(head: Cow<Value>, tail: &List) -> Value {
    match head {
        Cow::Owned(Value::List(mut items)) => {
            Arc::make_mut(&mut items).append(tail);
            Value::List(items)
        }
        other => {
            let mut items = other.as_list().cloned().unwrap_or_default();
            items.append(tail);
            Value::List(Arc::new(items))
        }
    }
}

/// The compiled right-hand sides of one `assign` action.
#[derive(Clone, Debug)]
pub struct CompiledAssign {
    targets: Vec<AssignTarget>,
}

#[derive(Clone, Debug)]
struct AssignTarget {
    slot: Option<u32>,
    field: Box<str>,
    how: Rhs,
    span: Span,
}

#[derive(Clone, Debug)]
enum Rhs {
    /// `F = expr`.
    Set(Node),
    /// `F = context.F + [items]`: a push onto F's own list.
    Push(Vec<Node>),
    /// `F = context.F + expr`: extends F's list in place when both are
    /// lists, else a plain `+`.
    Extend(Node),
}

/// What one target will write, computed before anything is written.
#[derive(Debug)]
enum Pending {
    Set(Value),
    Push(Value),
    PushAll(Vec<Value>),
    Extend(Arc<List>),
}

impl CompiledAssign {
    /// Compiles `field: expression` pairs. A field named twice keeps its last
    /// expression, as a map would.
    pub fn new<'e>(
        fields: impl IntoIterator<Item = (&'e str, &'e Expr)>,
        layout: &Layout,
        in_state: &dyn Fn(&str) -> Option<u32>,
    ) -> CompiledAssign {
        let compiler = Compiler {
            layout,
            in_state,
            guards: &no_guards,
        };
        let mut targets: Vec<AssignTarget> = Vec::new();
        for (field, expr) in fields {
            targets.retain(|t| &*t.field != field);
            targets.push(AssignTarget {
                slot: layout.slot(field),
                field: field.into(),
                how: rhs(&compiler, field, expr),
                span: expr.span,
            });
        }
        CompiledAssign { targets }
    }

    /// Writes the new values into `context`. Every right-hand side sees the
    /// context as it was before (the spec), and on an error nothing is written.
    pub fn apply(
        &self,
        context: &mut [Value],
        event: Option<&Event>,
        active: &dyn Fn(u32) -> bool,
    ) -> Result<(), EvalError> {
        let env = Env::new(context, event, active);
        // One or two targets, most assigns, keep their pending values in
        // locals; more go out of line, whose locals would otherwise make
        // every call set up a larger frame.
        match self.targets.as_slice() {
            [a] => {
                let pa = pending(a, &env).map_err(|e| *e)?;
                commit(context, a, pa);
            }
            [a, b] => {
                let pa = pending(a, &env).map_err(|e| *e)?;
                let pb = pending(b, &env).map_err(|e| *e)?;
                commit(context, a, pa);
                commit(context, b, pb);
            }
            targets => apply_many(targets, context, event, active)?,
        }
        Ok(())
    }
}

/// `CompiledAssign::apply` for three targets or more (or none).
#[inline(never)]
fn apply_many(
    targets: &[AssignTarget],
    context: &mut [Value],
    event: Option<&Event>,
    active: &dyn Fn(u32) -> bool,
) -> Result<(), EvalError> {
    let env = Env::new(context, event, active);
    match targets {
        [a, b, c] => {
            let pa = pending(a, &env).map_err(|e| *e)?;
            let pb = pending(b, &env).map_err(|e| *e)?;
            let pc = pending(c, &env).map_err(|e| *e)?;
            commit(context, a, pa);
            commit(context, b, pb);
            commit(context, c, pc);
        }
        targets => {
            let all: Vec<Pending> = targets
                .iter()
                .map(|t| pending(t, &env))
                .collect::<Result<_, _>>()
                .map_err(|e| *e)?;
            for (target, change) in targets.iter().zip(all) {
                commit(context, target, change);
            }
        }
    }
    Ok(())
}

/// What `target` will write, read from the context as it is.
#[inline(always)]
fn pending(target: &AssignTarget, env: &Env) -> Result<Pending, Fail> {
    let Some(slot) = target.slot else {
        return Err(EvalError::new(
            format!("unknown context field `{}`", target.field),
            target.span,
        ));
    };
    Ok(match &target.how {
        Rhs::Set(node) => Pending::Set(operand(node, env)?.into_owned()),
        Rhs::Push(items) => {
            let current = env.slot(slot, target.span)?;
            if !matches!(current, Value::List(_)) {
                return Err(EvalError::new(
                    format!(
                        "`+` needs two numbers, two strings or two lists, not {} and a list",
                        current.described()
                    ),
                    target.span,
                ));
            }
            match items.as_slice() {
                [item] => Pending::Push(match leaf(item, env) {
                    Some(value) => value?.clone(),
                    None => operand(item, env)?.into_owned(),
                }),
                _ => Pending::PushAll(
                    items
                        .iter()
                        .map(|item| operand(item, env).map(Cow::into_owned))
                        .collect::<Result<_, _>>()?,
                ),
            }
        }
        Rhs::Extend(node) => {
            let current = env.slot(slot, target.span)?;
            // A counter plus a leaf, the common case, without the `Cow`.
            if let Some(tail) = leaf(node, env) {
                let tail = tail?;
                if let (Value::Int(x), Value::Int(y)) = (current, tail) {
                    return match x.checked_add(*y) {
                        Some(sum) => Ok(Pending::Set(Value::Int(sum))),
                        None => Err(EvalError::new("integer overflow", target.span)),
                    };
                }
            }
            let tail = operand(node, env)?;
            match (current, tail) {
                // A counter: the common case, without the general `+`.
                (Value::Int(x), Cow::Borrowed(Value::Int(y))) => match x.checked_add(*y) {
                    Some(sum) => Pending::Set(Value::Int(sum)),
                    None => return Err(EvalError::new("integer overflow", target.span)),
                },
                (Value::List(_), Cow::Owned(Value::List(items))) => Pending::Extend(items),
                (Value::List(_), Cow::Borrowed(Value::List(items))) => {
                    Pending::Extend(items.clone())
                }
                (current, tail) => Pending::Set(arith(
                    BinaryOp::Add,
                    Cow::Borrowed(current),
                    tail,
                    target.span,
                )?),
            }
        }
    })
}

/// Writes one pending change. `pending` checked the slot and, for the list
/// changes, that it holds a list; each target has its own slot, so that is
/// still so here.
#[inline(always)]
fn commit(context: &mut [Value], target: &AssignTarget, change: Pending) {
    let Some(slot) = target.slot.and_then(|s| context.get_mut(s as usize)) else {
        return;
    };
    match change {
        // Emptying a list that the context alone holds keeps its memory for
        // the items that come next: the list is the same value either way.
        Pending::Set(Value::List(empty)) if empty.is_empty() => {
            if let Value::List(items) = slot
                && let Some(items) = Arc::get_mut(items)
            {
                items.clear();
            } else {
                *slot = Value::List(empty);
            }
        }
        Pending::Set(value) => *slot = value,
        Pending::Push(value) => {
            if let Value::List(items) = slot {
                // `get_mut` first: inlined, it is cheaper than the call to
                // `make_mut`, which the shared case still takes.
                match Arc::get_mut(items) {
                    Some(items) => items.push(value),
                    None => Arc::make_mut(items).push(value),
                }
            }
        }
        Pending::PushAll(values) => {
            if let Value::List(items) = slot {
                Arc::make_mut(items).extend(values);
            }
        }
        Pending::Extend(tail) => {
            if let Value::List(items) = slot {
                Arc::make_mut(items).append(&tail);
            }
        }
    }
}

/// Recognises `F = context.F + ...`, which can grow F's list in place.
fn rhs(compiler: &Compiler, field: &str, expr: &Expr) -> Rhs {
    if let ExprKind::Binary(BinaryOp::Add, left, right) = &expr.kind
        && let ExprKind::Member(operand, name) = &left.kind
        && name == field
        && matches!(&operand.kind, ExprKind::Ident(n) if n == "context")
        && compiler.layout.slot(field).is_some()
    {
        return match &right.kind {
            ExprKind::List(items) => Rhs::Push(items.iter().map(|e| compiler.node(e)).collect()),
            _ => Rhs::Extend(compiler.node(right)),
        };
    }
    Rhs::Set(compiler.node(expr))
}
