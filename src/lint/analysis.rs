//! What the lints read from guards and actions: identity guards, marks in
//! sets of seen ids, flags set to constants, cumulative updates.

use crate::expr::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::model::{Action, Assignment, EventDecl, Idempotency, Machine};

/// `context.NAME` → `NAME`.
pub fn context_field(expr: &Expr) -> Option<&str> {
    match &expr.kind {
        ExprKind::Member(base, field) if matches!(&base.kind, ExprKind::Ident(i) if i == "context") => {
            Some(field)
        }
        _ => None,
    }
}

/// `event.NAME` → `NAME`.
pub fn event_field(expr: &Expr) -> Option<&str> {
    match &expr.kind {
        ExprKind::Member(base, field) if matches!(&base.kind, ExprKind::Ident(i) if i == "event") => {
            Some(field)
        }
        _ => None,
    }
}

/// The operands of a chain of `&&`.
pub fn conjuncts(expr: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Binary(BinaryOp::And, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ => out.push(e),
        }
    }
    out
}

/// An identity test `!(event.F in context.S)`: (F, S).
pub type IdentityPair = (String, String);

/// The identity tests among a guard's conjuncts.
pub fn identity_tests(guard: &Expr) -> Vec<IdentityPair> {
    conjuncts(guard)
        .into_iter()
        .filter_map(|c| {
            let ExprKind::Unary(UnaryOp::Not, inner) = &c.kind else {
                return None;
            };
            let ExprKind::Binary(BinaryOp::In, item, set) = &inner.kind else {
                return None;
            };
            Some((
                event_field(item)?.to_string(),
                context_field(set)?.to_string(),
            ))
        })
        .collect()
}

/// The sets of seen ids that an assign extends with an event field:
/// `S: context.S + [event.F]` (or `[event.F] + context.S`) gives (F, S).
pub fn marks(actions: &[Action]) -> Vec<IdentityPair> {
    let mut out = Vec::new();
    for action in actions {
        let Action::Assign { fields, .. } = action else {
            continue;
        };
        for (set, assignment) in fields {
            let ExprKind::Binary(BinaryOp::Add, a, b) = &assignment.expr.kind else {
                continue;
            };
            let (old, new) = if context_field(a) == Some(set.as_str()) {
                (a, b)
            } else {
                (b, a)
            };
            if context_field(old) != Some(set.as_str()) {
                continue;
            }
            if let ExprKind::List(items) = &new.kind {
                for item in items {
                    if let Some(field) = event_field(item) {
                        out.push((field.to_string(), set.clone()));
                    }
                }
            }
        }
    }
    out
}

/// Whether `field` identifies one delivery of an event declared as `decl`:
/// its declared `id` field or `event.id`; any field when the event declares
/// no id (which I006 reports on its own).
pub fn is_identity_field(field: &str, decl: Option<&EventDecl>) -> bool {
    if field == "id" {
        return true;
    }
    match decl.and_then(|d| d.id_field.as_ref()) {
        Some(id) => id.text == field,
        None => true,
    }
}

/// Identity tests of a guard that the marks protect: the guard tests a set
/// that the marking transition extends with the same identity field.
pub fn protected_by(
    guard: Option<&Expr>,
    marks: &[IdentityPair],
    decl: Option<&EventDecl>,
) -> Option<IdentityPair> {
    let guard = guard?;
    identity_tests(guard)
        .into_iter()
        .find(|pair| is_identity_field(&pair.0, decl) && marks.contains(pair))
}

/// A literal value an assign writes: `F: true`, `F: "x"`, `F: 3`.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    String(String),
}

fn literal(expr: &Expr) -> Option<Literal> {
    match &expr.kind {
        ExprKind::Null => Some(Literal::Null),
        ExprKind::Bool(b) => Some(Literal::Bool(*b)),
        ExprKind::Int(i) => Some(Literal::Int(*i)),
        ExprKind::String(s) => Some(Literal::String(s.clone())),
        _ => None,
    }
}

/// Context fields the actions set to a literal.
pub fn constant_writes(actions: &[Action]) -> Vec<(String, Literal)> {
    let mut out = Vec::new();
    for action in actions {
        if let Action::Assign { fields, .. } = action {
            for (field, assignment) in fields {
                if let Some(value) = literal(&assignment.expr) {
                    out.push((field.clone(), value));
                }
            }
        }
    }
    out
}

/// Whether a guard is certainly false once the fields hold those literals:
/// one of its conjuncts is `context.F`, `!context.F`, `context.F == v` or
/// `context.F != v` and contradicts them.
pub fn falsified(guard: Option<&Expr>, writes: &[(String, Literal)]) -> bool {
    let Some(guard) = guard else {
        return false;
    };
    let value_of = |e: &Expr| {
        context_field(e).and_then(|f| writes.iter().rev().find(|(w, _)| w == f).map(|(_, v)| v))
    };
    conjuncts(guard).into_iter().any(|c| match &c.kind {
        ExprKind::Unary(UnaryOp::Not, inner) => value_of(inner) == Some(&Literal::Bool(true)),
        ExprKind::Binary(op @ (BinaryOp::Eq | BinaryOp::Ne), a, b) => {
            let (value, lit) = match (value_of(a), literal(b), value_of(b), literal(a)) {
                (Some(v), Some(l), _, _) | (_, _, Some(v), Some(l)) => (v, l),
                _ => return false,
            };
            (*op == BinaryOp::Eq) != (*value == lit)
        }
        _ => value_of(c) == Some(&Literal::Bool(false)),
    })
}

/// Whether the expression reads `event` anywhere.
pub fn reads_event(expr: &Expr) -> bool {
    let mut found = false;
    expr.walk(&mut |e| {
        if matches!(&e.kind, ExprKind::Ident(i) if i == "event") {
            found = true;
        }
    });
    found
}

/// Whether the expression reads `context.field`.
pub fn reads_field(expr: &Expr, field: &str) -> bool {
    let mut found = false;
    expr.walk(&mut |e| {
        if context_field(e) == Some(field) {
            found = true;
        }
    });
    found
}

/// Context fields the expression reads, and whether it also depends on
/// something else that can change: `in_state`, or a host guard, which reads
/// what the host alone knows.
pub fn reads(expr: &Expr, fields: &mut Vec<String>) -> bool {
    let mut opaque = false;
    expr.walk(&mut |e| {
        if let Some(f) = context_field(e) {
            fields.push(f.to_string());
        }
        if matches!(&e.kind, ExprKind::Call(name, _) if name == "in_state") || is_host_guard(e) {
            opaque = true;
        }
    });
    opaque
}

/// Whether the expression is a host guard: in a loaded machine, the only
/// bare names besides `context` and `event` are declared host guards.
pub fn is_host_guard(expr: &Expr) -> bool {
    matches!(&expr.kind, ExprKind::Ident(name) if name != "context" && name != "event")
}

/// Context fields the actions write.
pub fn writes(actions: &[Action], out: &mut Vec<String>) {
    for action in actions {
        if let Action::Assign { fields, .. } = action {
            out.extend(fields.keys().cloned());
        }
    }
}

/// An assignment whose new value is derived from its own old value and the
/// event: `x: context.x + event.amount`, `seen: context.seen + [event.id]`.
pub fn is_cumulative(field: &str, assignment: &Assignment) -> bool {
    reads_field(&assignment.expr, field) && reads_event(&assignment.expr)
}

/// An assignment derived from its own old value (with or without the event):
/// what a re-run adds again.
pub fn is_self_derived(field: &str, assignment: &Assignment) -> bool {
    reads_field(&assignment.expr, field)
}

/// Whether running the actions changes anything besides writing logs.
pub fn changes_anything(actions: &[Action]) -> bool {
    actions.iter().any(|a| !matches!(a, Action::Log { .. }))
}

/// What an action that a re-run repeats does, if it matters: an effect
/// other than a `natural` one, a host action, or a self-derived update.
pub fn rerun_hazard(machine: &Machine, action: &Action) -> Option<String> {
    match action {
        Action::Effect { name, .. } => {
            let idempotency = machine
                .effects
                .get(&name.text)
                .map(|e| e.idempotency)
                .unwrap_or(Idempotency::None);
            (idempotency != Idempotency::Natural).then(|| format!("effect `{}`", name.text))
        }
        Action::Host { name, .. } => Some(format!("host action `{}`", name.text)),
        Action::Assign { fields, .. } => fields
            .iter()
            .find(|(f, a)| is_self_derived(f, a))
            .map(|(f, _)| format!("update of `{f}`")),
        _ => None,
    }
}

/// The effect's idempotency; a host action's is unknown, so `None`.
pub fn effect_idempotency(machine: &Machine, action: &Action) -> Option<(String, Idempotency)> {
    match action {
        Action::Effect { name, .. } => machine
            .effects
            .get(&name.text)
            .map(|e| (name.text.clone(), e.idempotency)),
        Action::Host { name, .. } => Some((name.text.clone(), Idempotency::None)),
        _ => None,
    }
}
