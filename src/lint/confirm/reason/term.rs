//! Symbolic values: what an expression of the CEL subset computes, in terms
//! of known values and of the variables the reasoning solves for (the
//! payload fields of a path's deliveries; in a proof, the context as it was
//! too). Built from the expressions of the guards and assigns a path runs,
//! each context field replaced by what an earlier assign wrote there, and
//! folded as the interpreter would compute it where the operands are known.

use std::cmp::Ordering;

use crate::expr::{BinaryOp, Expr, ExprKind, UnaryOp, Value, compare};

/// What the reasoning solves for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Var {
    /// `event.a.b` of delivery `k` of the path (its step `k`): `["a", "b"]`.
    /// `event.id` is the path `["$id"]`, which no payload field can name.
    Field(usize, Vec<String>),
    /// `context.a.b` before the path's first step, in a proof, where the
    /// context may be anything.
    Context(Vec<String>),
}

/// The path of `event.id`: no payload field is named so.
pub(super) const ID: &str = "$id";

impl Var {
    pub(super) fn path(&self) -> &[String] {
        match self {
            Var::Field(_, p) | Var::Context(p) => p,
        }
    }

    fn child(&self, field: &str) -> Var {
        let mut path = self.path().to_vec();
        path.push(field.to_string());
        match self {
            Var::Field(k, _) => Var::Field(*k, path),
            Var::Context(_) => Var::Context(path),
        }
    }

    /// Whether `self` is `other` or lies inside it (`a.b` inside `a`).
    pub(super) fn within(&self, other: &Var) -> bool {
        let same_root = match (self, other) {
            (Var::Field(a, _), Var::Field(b, _)) => a == b,
            (Var::Context(_), Var::Context(_)) => true,
            _ => false,
        };
        same_root && self.path().starts_with(other.path())
    }
}

/// A symbolic value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Term {
    Known(Value),
    /// A run-time error: a missing field, a type error, an overflow.
    Error,
    Var(Var),
    /// A list literal whose items are not all known.
    List(Vec<Term>),
    /// A map literal (string keys) whose values are not all known.
    Map(Vec<(String, Term)>),
    Not(Box<Term>),
    Neg(Box<Term>),
    Binary(BinaryOp, Box<Term>, Box<Term>),
    Cond(Box<Term>, Box<Term>, Box<Term>),
    /// `has(v)`: whether the variable's last field is present.
    Has(Var),
    /// What the reasoning does not follow: a host guard, `in_state`, a
    /// function it does not know, a value too large to carry.
    Unknown,
}

/// Terms past this many nodes are not carried (`Term::Unknown`): a counter
/// summed over a long path would grow without end.
const MAX_NODES: usize = 256;

impl Term {
    pub(super) fn bool(b: bool) -> Term {
        Term::Known(Value::Bool(b))
    }

    /// The number of nodes, counted up to `MAX_NODES`.
    fn nodes(&self) -> usize {
        fn count(t: &Term, n: &mut usize) {
            *n += 1;
            if *n > MAX_NODES {
                return;
            }
            match t {
                Term::Known(_) | Term::Error | Term::Var(_) | Term::Has(_) | Term::Unknown => {}
                Term::List(items) => items.iter().for_each(|i| count(i, n)),
                Term::Map(entries) => entries.iter().for_each(|(_, v)| count(v, n)),
                Term::Not(a) | Term::Neg(a) => count(a, n),
                Term::Binary(_, a, b) => {
                    count(a, n);
                    count(b, n);
                }
                Term::Cond(a, b, c) => {
                    count(a, n);
                    count(b, n);
                    count(c, n);
                }
            }
        }
        let mut n = 0;
        count(self, &mut n);
        n
    }

    /// The term, or `Unknown` when it is too large to carry.
    pub(super) fn bounded(self) -> Term {
        if self.nodes() > MAX_NODES {
            Term::Unknown
        } else {
            self
        }
    }

    /// Whether the term reads a variable for which `which` holds.
    pub(super) fn reads(&self, which: &dyn Fn(&Var) -> bool) -> bool {
        match self {
            Term::Var(v) | Term::Has(v) => which(v),
            Term::Known(_) | Term::Error | Term::Unknown => false,
            Term::List(items) => items.iter().any(|i| i.reads(which)),
            Term::Map(entries) => entries.iter().any(|(_, v)| v.reads(which)),
            Term::Not(a) | Term::Neg(a) => a.reads(which),
            Term::Binary(_, a, b) => a.reads(which) || b.reads(which),
            Term::Cond(a, b, c) => a.reads(which) || b.reads(which) || c.reads(which),
        }
    }

    /// The term with each variable `values` gives replaced by its value,
    /// folded again.
    pub(super) fn substitute(&self, values: &dyn Fn(&Var) -> Option<Term>) -> Term {
        match self {
            Term::Known(_) | Term::Error | Term::Unknown => self.clone(),
            Term::Var(v) => match values(v) {
                Some(t) => t,
                None => self.clone(),
            },
            Term::Has(v) => match values(v) {
                Some(Term::Error) => Term::bool(false),
                Some(_) => Term::bool(true),
                None => self.clone(),
            },
            Term::List(items) => list(items.iter().map(|i| i.substitute(values)).collect()),
            Term::Map(entries) => map((entries.iter())
                .map(|(k, v)| (k.clone(), v.substitute(values)))
                .collect()),
            Term::Not(a) => not(a.substitute(values)),
            Term::Neg(a) => neg(a.substitute(values)),
            Term::Binary(op, a, b) => binary(*op, a.substitute(values), b.substitute(values)),
            Term::Cond(a, b, c) => cond(
                a.substitute(values),
                b.substitute(values),
                c.substitute(values),
            ),
        }
    }
}

/// What `event` and `context` stand for while an expression is read.
pub(super) struct Env<'e> {
    /// The value of each context field: what the path assigned to it, or
    /// what it held before.
    pub context: &'e dyn Fn(&str) -> Term,
    /// The delivery `event` is, and its name; `None` where there is no
    /// event (a timer).
    pub event: Option<(usize, &'e str)>,
}

/// The term of an expression.
pub(super) fn term(expr: &Expr, env: &Env) -> Term {
    match &expr.kind {
        ExprKind::Null => Term::Known(Value::Null),
        ExprKind::Bool(b) => Term::bool(*b),
        ExprKind::Int(i) => Term::Known(Value::Int(*i)),
        ExprKind::Float(f) => Term::Known(Value::Double(*f)),
        ExprKind::String(s) => Term::Known(Value::from(s.as_str())),
        ExprKind::List(items) => list(items.iter().map(|i| term(i, env)).collect()),
        ExprKind::Map(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let ExprKind::String(key) = &k.kind else {
                    return Term::Unknown;
                };
                out.push((key.clone(), term(v, env)));
            }
            map(out)
        }
        // `context` and `event` alone, and host guards.
        ExprKind::Ident(_) => Term::Unknown,
        ExprKind::Member(base, field) => match &base.kind {
            ExprKind::Ident(name) if name == "context" => (env.context)(field),
            ExprKind::Ident(name) if name == "event" => match (env.event, field.as_str()) {
                (None, _) => Term::Unknown,
                (Some((_, name)), "type") => Term::Known(Value::from(name)),
                (Some((k, _)), "id") => Term::Var(Var::Field(k, vec![ID.to_string()])),
                (Some((k, _)), _) => Term::Var(Var::Field(k, vec![field.clone()])),
            },
            _ => member(term(base, env), field),
        },
        ExprKind::Index(base, index) => self::index(term(base, env), term(index, env)),
        ExprKind::Unary(UnaryOp::Not, a) => not(term(a, env)),
        ExprKind::Unary(UnaryOp::Neg, a) => neg(term(a, env)),
        ExprKind::Binary(op, a, b) => binary(*op, term(a, env), term(b, env)),
        ExprKind::Conditional(c, a, b) => cond(term(c, env), term(a, env), term(b, env)),
        ExprKind::Call(name, args) => match (name.as_str(), args.as_slice()) {
            ("has", [arg]) => match &arg.kind {
                ExprKind::Member(base, field) => has(term(base, env), field),
                _ => Term::Unknown,
            },
            ("size", [arg]) => size(term(arg, env)),
            _ => Term::Unknown,
        },
    }
}

fn list(items: Vec<Term>) -> Term {
    if items.iter().all(|i| matches!(i, Term::Known(_))) {
        let values = (items.into_iter())
            .map(|i| match i {
                Term::Known(v) => v,
                _ => Value::Null,
            })
            .collect();
        return Term::Known(Value::list(values));
    }
    if items.contains(&Term::Error) {
        return Term::Error;
    }
    Term::List(items)
}

fn map(entries: Vec<(String, Term)>) -> Term {
    if entries.iter().all(|(_, v)| matches!(v, Term::Known(_))) {
        let values = (entries.into_iter()).map(|(k, v)| match v {
            Term::Known(v) => (k, v),
            _ => (k, Value::Null),
        });
        return Term::Known(Value::map(values));
    }
    if entries.iter().any(|(_, v)| *v == Term::Error) {
        return Term::Error;
    }
    Term::Map(entries)
}

/// `base.field`.
pub(super) fn member(base: Term, field: &str) -> Term {
    match base {
        Term::Known(Value::Map(m)) => match crate::expr::map_get(&m, field) {
            Some(v) => Term::Known(v.clone()),
            None => Term::Error,
        },
        Term::Known(_) | Term::Error | Term::List(_) => Term::Error,
        Term::Map(entries) => (entries.into_iter())
            .find(|(k, _)| k == field)
            .map_or(Term::Error, |(_, v)| v),
        Term::Var(v) => Term::Var(v.child(field)),
        Term::Cond(c, a, b) => cond(*c, member(*a, field), member(*b, field)),
        _ => Term::Unknown,
    }
}

/// `has(base.field)`.
fn has(base: Term, field: &str) -> Term {
    match base {
        Term::Known(Value::Map(m)) => Term::bool(crate::expr::map_get(&m, field).is_some()),
        Term::Known(_) | Term::Error | Term::List(_) => Term::Error,
        Term::Map(entries) => Term::bool(entries.iter().any(|(k, _)| k == field)),
        Term::Var(v) => Term::Has(v.child(field)),
        Term::Cond(c, a, b) => cond(*c, has(*a, field), has(*b, field)),
        _ => Term::Unknown,
    }
}

fn index(base: Term, index: Term) -> Term {
    match (base, index) {
        (Term::Known(Value::List(items)), Term::Known(Value::Int(i))) => {
            match usize::try_from(i).ok().and_then(|i| items.get(i)) {
                Some(v) => Term::Known(v.into_owned()),
                None => Term::Error,
            }
        }
        (Term::List(items), Term::Known(Value::Int(i))) => {
            match usize::try_from(i)
                .ok()
                .and_then(|i| items.into_iter().nth(i))
            {
                Some(t) => t,
                None => Term::Error,
            }
        }
        (base, Term::Known(Value::String(key))) => member(base, &key),
        (Term::Error, _) | (_, Term::Error) => Term::Error,
        _ => Term::Unknown,
    }
}

fn size(arg: Term) -> Term {
    match arg {
        Term::Known(Value::List(items)) => Term::Known(Value::Int(items.len() as i64)),
        Term::Known(Value::Map(m)) => Term::Known(Value::Int(m.len() as i64)),
        Term::Known(Value::String(s)) => Term::Known(Value::Int(s.chars().count() as i64)),
        Term::List(items) => Term::Known(Value::Int(items.len() as i64)),
        Term::Map(entries) => Term::Known(Value::Int(entries.len() as i64)),
        Term::Known(_) | Term::Error => Term::Error,
        _ => Term::Unknown,
    }
}

pub(super) fn not(a: Term) -> Term {
    match a {
        Term::Known(Value::Bool(b)) => Term::bool(!b),
        Term::Known(_) | Term::Error => Term::Error,
        Term::Unknown => Term::Unknown,
        a => Term::Not(Box::new(a)),
    }
}

fn neg(a: Term) -> Term {
    match a {
        Term::Known(Value::Int(i)) => i
            .checked_neg()
            .map_or(Term::Error, |n| Term::Known(n.into())),
        Term::Known(Value::Double(d)) => Term::Known(Value::Double(-d)),
        Term::Known(_) | Term::Error => Term::Error,
        Term::Unknown => Term::Unknown,
        a => Term::Neg(Box::new(a)),
    }
}

pub(super) fn cond(c: Term, a: Term, b: Term) -> Term {
    match c {
        Term::Known(Value::Bool(true)) => a,
        Term::Known(Value::Bool(false)) => b,
        Term::Known(_) | Term::Error => Term::Error,
        Term::Unknown => Term::Unknown,
        c => Term::Cond(Box::new(c), Box::new(a), Box::new(b)),
    }
}

/// `a op b`, folded where the operands allow.
pub(super) fn binary(op: BinaryOp, a: Term, b: Term) -> Term {
    use BinaryOp::*;
    match op {
        And | Or => {
            let absorbing = op == Or;
            let is = |t: &Term, b: bool| *t == Term::bool(b);
            if is(&a, absorbing) || is(&b, absorbing) {
                return Term::bool(absorbing);
            }
            if is(&a, !absorbing) {
                return b.bool_or_error();
            }
            if is(&b, !absorbing) {
                return a.bool_or_error();
            }
            if a == Term::Error && b == Term::Error {
                return Term::Error;
            }
            if a == Term::Unknown || b == Term::Unknown {
                return Term::Unknown;
            }
            return Term::Binary(op, Box::new(a), Box::new(b));
        }
        _ => {}
    }
    if a == Term::Error || b == Term::Error {
        return Term::Error;
    }
    if a == Term::Unknown || b == Term::Unknown {
        return Term::Unknown;
    }
    if let (Term::Known(x), Term::Known(y)) = (&a, &b) {
        return known(op, x, y);
    }
    // The same variable on both sides: a field of one delivery equals
    // itself (payloads come from JSON, which has no NaN).
    if let (Term::Var(x), Term::Var(y)) = (&a, &b)
        && x == y
    {
        match op {
            Eq | Le | Ge => return Term::bool(true),
            Ne | Lt | Gt => return Term::bool(false),
            _ => {}
        }
    }
    match (op, a, b) {
        // Lists built of terms: `context.items + [event.sku]`.
        (Add, Term::List(x), Term::List(y)) => list(x.into_iter().chain(y).collect()),
        (Add, Term::List(x), Term::Known(Value::List(y))) => list(
            x.into_iter()
                .chain(y.to_vec().into_iter().map(Term::Known))
                .collect(),
        ),
        (Add, Term::Known(Value::List(x)), Term::List(y)) => {
            list(x.to_vec().into_iter().map(Term::Known).chain(y).collect())
        }
        // Membership in a concatenation: in either part.
        (In, x, Term::Binary(Add, a, b))
            if [&*a, &*b]
                .iter()
                .any(|t| matches!(t, Term::List(_) | Term::Known(Value::List(_)))) =>
        {
            binary(Or, binary(In, x.clone(), *a), binary(In, x, *b))
        }
        // Membership in a list of terms: one of them.
        (In, x, Term::List(items)) => {
            let mut any = Term::bool(false);
            for item in items {
                any = binary(Or, any, binary(Eq, x.clone(), item));
            }
            any
        }
        (In, x, Term::Map(entries)) => {
            let mut any = Term::bool(false);
            for (key, _) in entries {
                any = binary(
                    Or,
                    any,
                    binary(Eq, x.clone(), Term::Known(Value::from(key))),
                );
            }
            any
        }
        // A comparison with a conditional: each branch.
        (Eq | Ne | Lt | Le | Gt | Ge | In, Term::Cond(c, x, y), other) => {
            let other2 = other.clone();
            cond(*c, binary(op, *x, other), binary(op, *y, other2))
        }
        (Eq | Ne | Lt | Le | Gt | Ge, other, Term::Cond(c, x, y)) => {
            let other2 = other.clone();
            cond(*c, binary(op, other, *x), binary(op, other2, *y))
        }
        (op, a, b) => Term::Binary(op, Box::new(a), Box::new(b)),
    }
}

impl Term {
    /// For the operand of `&&` or `||` whose other side decided nothing: a
    /// known value that is not a bool is an error.
    fn bool_or_error(self) -> Term {
        match self {
            Term::Known(Value::Bool(_)) => self,
            Term::Known(_) => Term::Error,
            t => t,
        }
    }
}

/// `x op y` of known values, as the interpreter computes it.
fn known(op: BinaryOp, x: &Value, y: &Value) -> Term {
    use BinaryOp::*;
    let ordered = |expected: fn(Ordering) -> bool| match compare(x, y) {
        Some(o) => Term::bool(expected(o)),
        None if is_number(x) && is_number(y) => Term::bool(false),
        None => Term::Error,
    };
    match op {
        Eq => Term::bool(x == y),
        Ne => Term::bool(x != y),
        Lt => ordered(Ordering::is_lt),
        Le => ordered(Ordering::is_le),
        Gt => ordered(Ordering::is_gt),
        Ge => ordered(Ordering::is_ge),
        In => match y {
            Value::List(items) => Term::bool(items.contains(x)),
            Value::Map(m) => Term::bool(match x {
                Value::String(key) => crate::expr::map_get(m, key).is_some(),
                _ => false,
            }),
            _ => Term::Error,
        },
        Add | Sub | Mul | Div | Rem => arithmetic(op, x, y),
        And | Or => Term::Unknown,
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Double(_))
}

fn arithmetic(op: BinaryOp, x: &Value, y: &Value) -> Term {
    use BinaryOp::*;
    let doubles = |a: f64, b: f64| match op {
        Add => Term::Known(Value::Double(a + b)),
        Sub => Term::Known(Value::Double(a - b)),
        Mul => Term::Known(Value::Double(a * b)),
        Div => Term::Known(Value::Double(a / b)),
        _ => Term::Error,
    };
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            let r = match op {
                Add => a.checked_add(*b),
                Sub => a.checked_sub(*b),
                Mul => a.checked_mul(*b),
                Div => a.checked_div(*b),
                _ => a.checked_rem(*b),
            };
            r.map_or(Term::Error, |r| Term::Known(Value::Int(r)))
        }
        (Value::Double(a), Value::Double(b)) => doubles(*a, *b),
        (Value::Int(a), Value::Double(b)) => doubles(*a as f64, *b),
        (Value::Double(a), Value::Int(b)) => doubles(*a, *b as f64),
        (Value::String(a), Value::String(b)) if op == Add => {
            Term::Known(Value::from(format!("{a}{b}")))
        }
        (Value::List(a), Value::List(b)) if op == Add => {
            let mut items = a.to_vec();
            items.extend(b.to_vec());
            Term::Known(Value::list(items))
        }
        _ => Term::Error,
    }
}
