//! What the lints read from guards and actions: identity guards, marks in
//! sets of seen ids, flags set to constants, cumulative updates.

use crate::expr::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::model::{Action, EventDecl, Idempotency, Machine};

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

/// Whether running the actions changes anything besides writing logs.
pub fn changes_anything(actions: &[Action]) -> bool {
    actions.iter().any(|a| !matches!(a, Action::Log { .. }))
}

/// What an action of `block` that a re-run repeats does, if it matters: an
/// effect other than a `natural` one, a host action, or a self-derived
/// update that is not idempotent (a counter, with or without the event).
pub fn rerun_hazard(machine: &Machine, block: &BlockUpdates, action: &Action) -> Option<String> {
    match action {
        Action::Effect { name, .. } => {
            let idempotency = machine
                .effects
                .get(&name.text)
                .map(|e| e.idempotency)
                .unwrap_or(Idempotency::None);
            (idempotency != Idempotency::Natural).then(|| format!("effect `{}`", name.text))
        }
        Action::Host { name, .. } if machine.is_stand_in(&name.text) => {
            Some(machine.host_name(&name.text))
        }
        Action::Host { name, .. } => Some(format!("host action `{}`", name.text)),
        Action::Assign { fields, .. } => fields
            .keys()
            .find(|f| block.self_derived(f))
            .map(|f| format!("update of `{f}`")),
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
        // An assign that was not read is no effect: what it does to the
        // context is the replay's to show, or not.
        Action::Host { name, .. }
            if machine
                .opaque_part(&name.text)
                .is_some_and(|p| matches!(p.kind, crate::model::OpaqueKind::Assign(_))) =>
        {
            None
        }
        Action::Host { name, .. } => Some((name.text.clone(), Idempotency::None)),
        _ => None,
    }
}

/// What applying an update twice with the same event does, compared with
/// applying it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// The second application gives the context the first one left: a
    /// constant, a copy of the event, a conditional choosing between the
    /// event and the old value, a membership-guarded append.
    Idempotent,
    /// The second application adds again: a sum, a counter, an append
    /// without a membership test.
    Cumulative,
    /// Neither shape is recognised; the replay decides.
    Unknown,
}

/// An expression larger than this after substituting earlier assigns is
/// not analysed: sequences of assigns that read each other can double the
/// expression at each step.
const UPDATE_SIZE_LIMIT: usize = 2_000;

/// The updates a block of actions (a transition's, an entry's or an exit's)
/// makes: each written field's value after the block, as an expression of
/// the context before the block and the event.
///
/// Fields of one `assign` are evaluated against the context before it, and
/// a later `assign` reads what an earlier one wrote (as the interpreter
/// runs them), so the later one's `context.F` is replaced by the earlier
/// one's expression for F.
#[derive(Debug, Default)]
pub struct BlockUpdates {
    /// Each written field with its final expression; `None` when it cannot
    /// be expressed (it reads what a host action may have written, or grew
    /// past the size limit).
    finals: Vec<(String, Option<Expr>)>,
    /// Whether a host action runs in the block: it may write any field.
    host: bool,
    /// Whether the block does only assigns and logs.
    only_updates: bool,
    /// The values of writes that a later assign overwrites: a repeat
    /// evaluates them again, and one that reads a changed field may fail.
    overwritten: Vec<Option<Expr>>,
}

impl BlockUpdates {
    pub fn of(actions: &[Action]) -> BlockUpdates {
        let mut block = BlockUpdates {
            only_updates: true,
            ..BlockUpdates::default()
        };
        for action in actions {
            match action {
                Action::Assign { fields, .. } => {
                    // Every right-hand side of one assign sees the context
                    // before it: substitute first, then write them all.
                    let new: Vec<(String, Option<Expr>)> = fields
                        .iter()
                        .map(|(field, a)| (field.clone(), block.substitute(&a.expr)))
                        .collect();
                    for (field, value) in new {
                        match block.finals.iter_mut().find(|(f, _)| *f == field) {
                            Some(slot) => {
                                let old = std::mem::replace(&mut slot.1, value);
                                block.overwritten.push(old);
                            }
                            None => block.finals.push((field, value)),
                        }
                    }
                }
                Action::Log { .. } => {}
                Action::Host { .. } => {
                    block.host = true;
                    block.only_updates = false;
                }
                _ => block.only_updates = false,
            }
        }
        block
    }

    /// `expr` with each `context.F` that the block wrote before replaced by
    /// F's value; `None` when that cannot be said.
    fn substitute(&self, expr: &Expr) -> Option<Expr> {
        let mut size = 0;
        let out = self.substitute_in(expr, &mut size)?;
        (size <= UPDATE_SIZE_LIMIT).then_some(out)
    }

    fn substitute_in(&self, expr: &Expr, size: &mut usize) -> Option<Expr> {
        *size += 1;
        if *size > UPDATE_SIZE_LIMIT {
            return None;
        }
        if let Some(field) = context_field(expr) {
            return match self.finals.iter().find(|(f, _)| f == field) {
                Some((_, value)) => {
                    let value = value.clone()?;
                    *size += expr_size(&value);
                    Some(value)
                }
                None if self.host => None,
                None => Some(expr.clone()),
            };
        }
        let sub = |e: &Expr, size: &mut usize| self.substitute_in(e, size).map(Box::new);
        let kind = match &expr.kind {
            ExprKind::Ident(name) if name == "context" => return None,
            // `has(context.F)` is true whatever F holds.
            ExprKind::Call(name, args)
                if name == "has"
                    && matches!(args.as_slice(), [a] if context_field(a).is_some()) =>
            {
                return Some(expr.clone());
            }
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::String(_)
            | ExprKind::Ident(_) => return Some(expr.clone()),
            ExprKind::List(items) => ExprKind::List(
                items
                    .iter()
                    .map(|e| self.substitute_in(e, size))
                    .collect::<Option<_>>()?,
            ),
            ExprKind::Call(name, args) => ExprKind::Call(
                name.clone(),
                args.iter()
                    .map(|e| self.substitute_in(e, size))
                    .collect::<Option<_>>()?,
            ),
            ExprKind::Map(entries) => ExprKind::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        Some((self.substitute_in(k, size)?, self.substitute_in(v, size)?))
                    })
                    .collect::<Option<_>>()?,
            ),
            ExprKind::Member(base, field) => ExprKind::Member(sub(base, size)?, field.clone()),
            ExprKind::Index(a, b) => ExprKind::Index(sub(a, size)?, sub(b, size)?),
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, sub(a, size)?),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, sub(a, size)?, sub(b, size)?),
            ExprKind::Conditional(a, b, c) => {
                ExprKind::Conditional(sub(a, size)?, sub(b, size)?, sub(c, size)?)
            }
        };
        Some(Expr {
            kind,
            span: expr.span,
        })
    }

    /// Whether the block changes `field`: it writes it, or a host action
    /// may. A field set to its own old value is not changed.
    fn changes(&self, field: &str) -> bool {
        self.host
            || self.finals.iter().any(|(f, value)| {
                f == field && value.as_ref().is_none_or(|v| context_field(v) != Some(f))
            })
    }

    /// How the block's update of `field` behaves when the block runs twice
    /// with the same event; `Idempotent` for a field it does not write.
    pub fn class(&self, field: &str) -> Update {
        match self.finals.iter().find(|(f, _)| f == field) {
            None => Update::Idempotent,
            Some((_, None)) => Update::Unknown,
            Some((_, Some(value))) => {
                let changes = |f: &str| self.changes(f);
                classify(value, &[field], &changes)
            }
        }
    }

    /// The fields the block writes, in the order first written.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.finals.iter().map(|(f, _)| f.as_str())
    }

    /// Whether running the block twice with the same event leaves the
    /// context as running it once, and it does nothing else but log. A
    /// write that a later assign overwrites must give what it gave the
    /// first time, or the repeat might fail on it.
    pub fn idempotent(&self) -> bool {
        let changes = |f: &str| self.changes(f);
        self.only_updates
            && self
                .overwritten
                .iter()
                .all(|v| v.as_ref().is_some_and(|v| stable(v, &changes)))
            && self.fields().all(|f| self.class(f) == Update::Idempotent)
    }

    /// Whether the block's value of `field` depends on `field`'s old value
    /// in a way that a second run with the same event changes: what a
    /// re-run adds again (a counter, with or without the event).
    pub fn self_derived(&self, field: &str) -> bool {
        let reads_self = match self.finals.iter().find(|(f, _)| f == field) {
            None => false,
            Some((_, None)) => true,
            Some((_, Some(value))) => reads_field(value, field),
        };
        reads_self && self.class(field) != Update::Idempotent
    }
}

fn expr_size(expr: &Expr) -> usize {
    let mut n = 0;
    expr.walk(&mut |_| n += 1);
    n
}

/// Whether `expr` reads `context` at exactly `path` (a field, then keys of
/// the maps it holds): `context.F.k`, `context.F["k"]`.
fn is_path(expr: &Expr, path: &[&str]) -> bool {
    let Some((last, init)) = path.split_last() else {
        return matches!(&expr.kind, ExprKind::Ident(i) if i == "context");
    };
    match &expr.kind {
        ExprKind::Member(base, key) => key == last && is_path(base, init),
        ExprKind::Index(base, key) if !init.is_empty() => {
            matches!(&key.kind, ExprKind::String(k) if k == last) && is_path(base, init)
        }
        _ => false,
    }
}

/// Whether `expr` gives the same value before and after the block: it reads
/// no context field that the block changes (`changes`), nor the whole
/// context, nor a host guard. `in_state` is stable: the block does not
/// change the configuration.
fn stable(expr: &Expr, changes: &dyn Fn(&str) -> bool) -> bool {
    if let Some(field) = context_field(expr) {
        return !changes(field);
    }
    match &expr.kind {
        ExprKind::Ident(name) => name == "event",
        ExprKind::Null
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::String(_) => true,
        // `has(context.F)` is true whatever F holds.
        ExprKind::Call(name, args)
            if name == "has" && matches!(args.as_slice(), [a] if context_field(a).is_some()) =>
        {
            true
        }
        ExprKind::List(items) | ExprKind::Call(_, items) => {
            items.iter().all(|e| stable(e, changes))
        }
        ExprKind::Map(entries) => entries
            .iter()
            .all(|(k, v)| stable(k, changes) && stable(v, changes)),
        ExprKind::Member(a, _) | ExprKind::Unary(_, a) => stable(a, changes),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            stable(a, changes) && stable(b, changes)
        }
        ExprKind::Conditional(a, b, c) => {
            stable(a, changes) && stable(b, changes) && stable(c, changes)
        }
    }
}

/// How the value `expr`, written at `path`, behaves when the block runs
/// twice: the second run evaluates it on the context the first one left.
fn classify(expr: &Expr, path: &[&str], changes: &dyn Fn(&str) -> bool) -> Update {
    if stable(expr, changes) || is_path(expr, path) {
        return Update::Idempotent;
    }
    match &expr.kind {
        // A map built from stable values and the old values at the same
        // keys: each key is judged as a field of its own.
        ExprKind::Map(entries) => {
            let mut keys: Vec<&str> = Vec::new();
            let mut out = Update::Idempotent;
            for (key, value) in entries {
                let ExprKind::String(key) = &key.kind else {
                    return Update::Unknown;
                };
                if keys.contains(&key.as_str()) {
                    return Update::Unknown;
                }
                keys.push(key);
                let inner: Vec<&str> = path.iter().copied().chain([key.as_str()]).collect();
                out = join(out, classify(value, &inner, changes));
            }
            out
        }
        ExprKind::Conditional(condition, then, otherwise) => {
            if stable(condition, changes) {
                // The repeat takes the same branch: each must be idempotent.
                join(
                    classify(then, path, changes),
                    classify(otherwise, path, changes),
                )
            } else if chooses_between_old_and_stable(condition, then, otherwise, path, changes)
                || membership_guarded_append(condition, then, otherwise, path, changes)
            {
                Update::Idempotent
            } else {
                Update::Unknown
            }
        }
        // The functions the XState translator writes for merges, sets and
        // removals: applied to the old value with stable arguments, a
        // second application finds what the first one left.
        ExprKind::Call(name, args) if applied_again_gives_the_same(name, args, path, changes) => {
            Update::Idempotent
        }
        ExprKind::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) => {
            let adds = |old: &Expr, step: &Expr| {
                is_path(old, path) && stable(step, changes) && !is_neutral(step)
            };
            if adds(a, b) || (*op == BinaryOp::Add && adds(b, a)) {
                Update::Cumulative
            } else {
                Update::Unknown
            }
        }
        _ => Update::Unknown,
    }
}

/// Whether `name(args)`, written at `path`, gives what it gave when applied
/// to its own value: `merge(old, m)` (and a chain of them), `distinct(old +
/// l)` (the old value and stable lists, in any order), `without(old, x)`,
/// `without_by(old, "f", x)`, each with stable `m`, `l` and `x`.
fn applied_again_gives_the_same(
    name: &str,
    args: &[Expr],
    path: &[&str],
    changes: &dyn Fn(&str) -> bool,
) -> bool {
    match (name, args) {
        ("merge", [base, m]) => {
            stable(m, changes)
                && (is_path(base, path)
                    || matches!(&base.kind, ExprKind::Call(n, inner)
                        if applied_again_gives_the_same(n, inner, path, changes)
                            && n == "merge"))
        }
        ("distinct", [list]) => {
            let mut parts = Vec::new();
            sum_parts(list, &mut parts);
            parts.iter().filter(|p| is_path(p, path)).count() == 1
                && parts.iter().all(|p| is_path(p, path) || stable(p, changes))
        }
        ("without", [old, x]) => is_path(old, path) && stable(x, changes),
        ("without_by", [old, key, x]) => {
            is_path(old, path) && stable(key, changes) && stable(x, changes)
        }
        _ => false,
    }
}

/// The operands of a chain of `+`.
fn sum_parts<'e>(expr: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &expr.kind {
        ExprKind::Binary(BinaryOp::Add, a, b) => {
            sum_parts(a, out);
            sum_parts(b, out);
        }
        _ => out.push(expr),
    }
}

/// The weaker of two verdicts on parts of one value.
fn join(a: Update, b: Update) -> Update {
    match (a, b) {
        (Update::Idempotent, Update::Idempotent) => Update::Idempotent,
        (Update::Unknown, _) | (_, Update::Unknown) => Update::Unknown,
        _ => Update::Cumulative,
    }
}

/// A literal that adding changes nothing: `0`, `0.0`, `""`, `[]`.
fn is_neutral(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Int(i) => *i == 0,
        ExprKind::Float(f) => *f == 0.0,
        ExprKind::String(s) => s.is_empty(),
        ExprKind::List(items) => items.is_empty(),
        _ => false,
    }
}

/// `condition ? v : OLD` (or `OLD : v`) where `v` is stable and the
/// condition tests OLD against a stable value: a maximum or minimum
/// (`event.a > context.a ? event.a : context.a`), a first write
/// (`context.a == null ? event.a : context.a`).
///
/// Once the first run wrote `v`, either branch gives `v` again; when it
/// kept OLD, nothing the condition reads has changed. The test must also
/// not fail on the second run: `==`, `!=` and `OLD in s` never fail where
/// they did not fail before, and an ordering compares `v` with itself
/// only when it tests OLD against `v`.
fn chooses_between_old_and_stable(
    condition: &Expr,
    then: &Expr,
    otherwise: &Expr,
    path: &[&str],
    changes: &dyn Fn(&str) -> bool,
) -> bool {
    let value = if is_path(otherwise, path) {
        then
    } else if is_path(then, path) {
        otherwise
    } else {
        return false;
    };
    if !stable(value, changes) {
        return false;
    }
    let ExprKind::Binary(op, a, b) = &without_negation(condition).0.kind else {
        return false;
    };
    let (old_left, other) = if is_path(a, path) {
        (true, b)
    } else if is_path(b, path) {
        (false, a)
    } else {
        return false;
    };
    if !stable(other, changes) {
        return false;
    }
    match op {
        BinaryOp::Eq | BinaryOp::Ne => true,
        BinaryOp::In => old_left,
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => **other == *value,
        _ => false,
    }
}

/// `X in OLD ? OLD : OLD + [.., X, ..]` (or its negation, or the list
/// before OLD): an append that a repeat finds already made.
///
/// `X` is a read of the event or a literal: event payloads are JSON, which
/// holds no NaN, so `X` equals itself and the second run finds it.
fn membership_guarded_append(
    condition: &Expr,
    then: &Expr,
    otherwise: &Expr,
    path: &[&str],
    changes: &dyn Fn(&str) -> bool,
) -> bool {
    let (test, negated) = without_negation(condition);
    let ExprKind::Binary(BinaryOp::In, item, set) = &test.kind else {
        return false;
    };
    if !is_path(set, path) || !is_event_read_or_literal(item) {
        return false;
    }
    let (present, absent) = if negated {
        (otherwise, then)
    } else {
        (then, otherwise)
    };
    let ExprKind::Binary(BinaryOp::Add, a, b) = &absent.kind else {
        return false;
    };
    let added = if is_path(a, path) {
        b
    } else if is_path(b, path) {
        a
    } else {
        return false;
    };
    let ExprKind::List(items) = &added.kind else {
        return false;
    };
    is_path(present, path)
        && items.iter().all(|i| stable(i, changes))
        && items.iter().any(|i| i == &**item)
}

/// The expression under its `!`s, and whether there was an odd number.
fn without_negation(mut expr: &Expr) -> (&Expr, bool) {
    let mut negated = false;
    while let ExprKind::Unary(UnaryOp::Not, inner) = &expr.kind {
        expr = inner;
        negated = !negated;
    }
    (expr, negated)
}

/// `event`, `event.f`, `event.f.g`, or a literal other than a double.
fn is_event_read_or_literal(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Null | ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::String(_) => true,
        _ => is_event_read(expr),
    }
}

fn is_event_read(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Ident(name) => name == "event",
        ExprKind::Member(base, _) => is_event_read(base),
        _ => false,
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod update_tests;
