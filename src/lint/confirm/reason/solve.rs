//! Conditions on terms, solved for the variables they read: equalities and
//! membership directly, numeric inequalities by a boundary value, sums by
//! giving all their fields but one a value and the last what is left, a
//! conjunction together and a disjunction by trying each side in turn,
//! deterministically and within a budget of branches. No SMT solver: the
//! interpreter checks every payload found, so a solution needs only be
//! likely, while a proof of unsatisfiability (`Outcome::Unsat`) rests on
//! contradictions between known values alone.

use std::collections::HashMap;

use super::term::{Term, Var};
use crate::expr::{BinaryOp, Value};

/// What a condition asks of its term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// It evaluates to `true`: a guard passes.
    Holds,
    /// It evaluates to `false`.
    False,
    /// It does not evaluate to `true` (false or an error): a guard written
    /// before the path's transition does not pass.
    NotHolds,
}

impl Want {
    fn flip(self) -> Want {
        match self {
            Want::Holds => Want::False,
            Want::False | Want::NotHolds => Want::Holds,
        }
    }
}

/// Branches a solve may try before it gives up.
const BRANCHES: usize = 256;

#[derive(Debug)]
enum Formula {
    True,
    Fail,
    /// What the solver cannot reason about: taken as satisfiable.
    Opaque,
    Atom(Atom),
    All(Vec<Formula>),
    Any(Vec<Formula>),
}

#[derive(Clone, Debug)]
enum Atom {
    Eq(Var, Value),
    Ne(Var, Value),
    /// `var > n` (`Lower`, strict) or `var >= n`; `var < n`, `var <= n`.
    Bound(Var, Side, f64, bool),
    Has(Var, bool),
    /// The variable is a list (or a map) that holds the value, or not.
    Contains(Var, Value, bool),
    /// `Σ cᵢ·vᵢ + k  op  0`, over several variables.
    Linear(Linear, BinaryOp),
    /// Two variables equal, or not.
    Same(Var, Var, bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Lower,
    Upper,
}

/// `Σ cᵢ·vᵢ + k`, its numbers integers when `int`.
#[derive(Clone, Debug)]
struct Linear {
    terms: Vec<(Var, f64)>,
    constant: f64,
    int: bool,
}

impl Linear {
    fn of(term: &Term) -> Option<Linear> {
        match term {
            Term::Known(Value::Int(i)) => Some(Linear {
                terms: Vec::new(),
                constant: *i as f64,
                int: true,
            }),
            Term::Known(Value::Double(d)) => Some(Linear {
                terms: Vec::new(),
                constant: *d,
                int: false,
            }),
            Term::Var(v) => Some(Linear {
                terms: vec![(v.clone(), 1.0)],
                constant: 0.0,
                int: true,
            }),
            Term::Neg(a) => Some(Linear::of(a)?.scaled(-1.0)),
            Term::Binary(BinaryOp::Add, a, b) => Some(Linear::of(a)?.plus(Linear::of(b)?)),
            Term::Binary(BinaryOp::Sub, a, b) => {
                Some(Linear::of(a)?.plus(Linear::of(b)?.scaled(-1.0)))
            }
            Term::Binary(BinaryOp::Mul, a, b) => match (&**a, &**b) {
                (Term::Known(k), x) | (x, Term::Known(k)) => {
                    let k = Linear::of(&Term::Known(k.clone()))?;
                    let mut x = Linear::of(x)?.scaled(k.constant);
                    x.int &= k.int;
                    Some(x)
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn scaled(mut self, by: f64) -> Linear {
        self.constant *= by;
        for (_, c) in &mut self.terms {
            *c *= by;
        }
        self
    }

    fn plus(mut self, other: Linear) -> Linear {
        self.constant += other.constant;
        self.int &= other.int;
        for (v, c) in other.terms {
            match self.terms.iter_mut().find(|(w, _)| *w == v) {
                Some((_, d)) => *d += c,
                None => self.terms.push((v, c)),
            }
        }
        self.terms.retain(|(_, c)| *c != 0.0);
        self
    }
}

/// The comparison that holds where `op` does not.
fn negated(op: BinaryOp) -> BinaryOp {
    use BinaryOp::*;
    match op {
        Eq => Ne,
        Ne => Eq,
        Lt => Ge,
        Le => Gt,
        Gt => Le,
        Ge => Lt,
        other => other,
    }
}

/// `b op a` for `a op b`.
fn mirrored(op: BinaryOp) -> BinaryOp {
    use BinaryOp::*;
    match op {
        Lt => Gt,
        Le => Ge,
        Gt => Lt,
        Ge => Le,
        other => other,
    }
}

fn formula(term: &Term, want: Want) -> Formula {
    use BinaryOp::*;
    let decided = |b: bool| if b { Formula::True } else { Formula::Fail };
    match term {
        Term::Known(Value::Bool(b)) => decided(if want == Want::Holds { *b } else { !*b }),
        // Not a bool, or an error: the guard does not pass.
        Term::Known(_) | Term::Error => decided(want == Want::NotHolds),
        Term::Unknown => Formula::Opaque,
        Term::Var(v) => Formula::Atom(Atom::Eq(v.clone(), Value::Bool(want == Want::Holds))),
        Term::Has(v) => Formula::Atom(Atom::Has(v.clone(), want == Want::Holds)),
        Term::Not(a) => formula(a, want.flip()),
        Term::Binary(And, a, b) => match want {
            Want::Holds => Formula::All(vec![formula(a, want), formula(b, want)]),
            _ => Formula::Any(vec![formula(a, want), formula(b, want)]),
        },
        Term::Binary(Or, a, b) => match want {
            Want::Holds => Formula::Any(vec![formula(a, want), formula(b, want)]),
            _ => Formula::All(vec![formula(a, want), formula(b, want)]),
        },
        Term::Cond(c, a, b) => Formula::Any(vec![
            Formula::All(vec![formula(c, Want::Holds), formula(a, want)]),
            Formula::All(vec![formula(c, Want::False), formula(b, want)]),
        ]),
        Term::Binary(op @ (Eq | Ne | Lt | Le | Gt | Ge | In), a, b) => {
            comparison(*op, a, b, want == Want::Holds)
        }
        // Numbers, strings, lists and maps are not bools.
        Term::List(_) | Term::Map(_) | Term::Neg(_) | Term::Binary(..) => {
            decided(want == Want::NotHolds)
        }
    }
}

/// `a op b`, which must hold (`holds`) or evaluate to `false`.
fn comparison(op: BinaryOp, a: &Term, b: &Term, holds: bool) -> Formula {
    use BinaryOp::*;
    if op == In {
        return membership(a, b, holds);
    }
    let op = if holds { op } else { negated(op) };
    match (a, b) {
        (Term::Var(v), Term::Known(k)) => return atom(op, v, k),
        (Term::Known(k), Term::Var(v)) => return atom(mirrored(op), v, k),
        (Term::Var(v), Term::Var(w)) if matches!(op, Eq | Ne) => {
            return Formula::Atom(Atom::Same(v.clone(), w.clone(), op == Eq));
        }
        _ => {}
    }
    if let Some(f) = concatenation(op, a, b).or_else(|| concatenation(op, b, a)) {
        return f;
    }
    if let (Some(x), Some(y)) = (Linear::of(a), Linear::of(b)) {
        let diff = x.plus(y.scaled(-1.0));
        return linear(op, diff);
    }
    Formula::Opaque
}

/// `v op k`.
fn atom(op: BinaryOp, v: &Var, k: &Value) -> Formula {
    use BinaryOp::*;
    let number = match k {
        Value::Int(i) => Some((*i as f64, true)),
        Value::Double(d) => Some((*d, false)),
        _ => None,
    };
    match (op, number) {
        (Eq, _) => Formula::Atom(Atom::Eq(v.clone(), k.clone())),
        (Ne, _) => Formula::Atom(Atom::Ne(v.clone(), k.clone())),
        (Gt, Some((n, _))) => Formula::Atom(Atom::Bound(v.clone(), Side::Lower, n, true)),
        (Ge, Some((n, _))) => Formula::Atom(Atom::Bound(v.clone(), Side::Lower, n, false)),
        (Lt, Some((n, _))) => Formula::Atom(Atom::Bound(v.clone(), Side::Upper, n, true)),
        (Le, Some((n, _))) => Formula::Atom(Atom::Bound(v.clone(), Side::Upper, n, false)),
        _ => Formula::Opaque,
    }
}

/// `x in y`, which must hold or be false.
fn membership(x: &Term, y: &Term, holds: bool) -> Formula {
    let items: Vec<Value> = match y {
        Term::Known(Value::List(items)) => items.to_vec(),
        Term::Known(Value::Map(m)) => m.keys().map(|k| Value::from(&**k)).collect(),
        Term::Known(_) => return Formula::Fail,
        _ => Vec::new(),
    };
    match (x, y) {
        (Term::Var(v), Term::Known(_)) => {
            let each = (items.iter()).map(|item| {
                let op = if holds { BinaryOp::Eq } else { BinaryOp::Ne };
                atom(op, v, item)
            });
            if holds {
                Formula::Any(each.collect())
            } else {
                Formula::All(each.collect())
            }
        }
        (Term::Known(k), Term::Var(v)) => {
            Formula::Atom(Atom::Contains(v.clone(), k.clone(), holds))
        }
        _ => Formula::Opaque,
    }
}

/// `v + "suffix" == "text"` and `"prefix" + v == "text"`: `v` is what the
/// text has besides.
fn concatenation(op: BinaryOp, sum: &Term, text: &Term) -> Option<Formula> {
    let (Term::Binary(BinaryOp::Add, a, b), Term::Known(Value::String(text))) = (sum, text) else {
        return None;
    };
    let (v, rest) = match (&**a, &**b) {
        (Term::Var(v), Term::Known(Value::String(s))) => (v, text.strip_suffix(s.as_str())),
        (Term::Known(Value::String(s)), Term::Var(v)) => (v, text.strip_prefix(s.as_str())),
        _ => return None,
    };
    match (op, rest) {
        (BinaryOp::Eq, Some(rest)) => Some(Formula::Atom(Atom::Eq(v.clone(), Value::from(rest)))),
        (BinaryOp::Eq, None) => Some(Formula::Fail),
        (BinaryOp::Ne, Some(rest)) => Some(Formula::Atom(Atom::Ne(v.clone(), Value::from(rest)))),
        _ => None,
    }
}

/// `Σ cᵢ·vᵢ + k  op  0`: a bound or an equality where one variable is left.
fn linear(op: BinaryOp, l: Linear) -> Formula {
    use BinaryOp::*;
    match l.terms.as_slice() {
        [] => {
            let holds = match op {
                Eq => l.constant == 0.0,
                Ne => l.constant != 0.0,
                Lt => l.constant < 0.0,
                Le => l.constant <= 0.0,
                Gt => l.constant > 0.0,
                Ge => l.constant >= 0.0,
                _ => return Formula::Opaque,
            };
            if holds { Formula::True } else { Formula::Fail }
        }
        [(v, c)] => {
            let target = -l.constant / c;
            let op = if *c < 0.0 { mirrored(op) } else { op };
            let value = if l.int && target.fract() == 0.0 {
                Value::Int(target as i64)
            } else {
                Value::Double(target)
            };
            atom(op, v, &value)
        }
        _ => Formula::Atom(Atom::Linear(l, op)),
    }
}

/// What is known of one variable.
#[derive(Clone, Debug, Default)]
struct Facts {
    eq: Option<Value>,
    ne: Vec<Value>,
    /// `(n, strict)`.
    lo: Option<(f64, bool)>,
    hi: Option<(f64, bool)>,
    has: Option<bool>,
    contains: Vec<Value>,
    lacks: Vec<Value>,
}

impl Facts {
    /// Whether anything is asked of the variable that needs it present.
    fn needs_presence(&self) -> bool {
        self.eq.is_some()
            || !self.ne.is_empty()
            || self.lo.is_some()
            || self.hi.is_some()
            || !self.contains.is_empty()
            || !self.lacks.is_empty()
    }

    /// Whether a value meets every fact.
    fn allows(&self, v: &Value) -> bool {
        self.has != Some(false)
            && self.eq.as_ref().is_none_or(|e| e == v)
            && !self.ne.contains(v)
            && ((self.lo.is_none() && self.hi.is_none())
                || number(v).is_some_and(|n| self.within_bounds(n)))
            && self.contains.iter().all(|c| holds_item(v, c) == Some(true))
            && self.lacks.iter().all(|c| holds_item(v, c) == Some(false))
    }

    fn within_bounds(&self, n: f64) -> bool {
        self.lo
            .is_none_or(|(lo, strict)| if strict { n > lo } else { n >= lo })
            && self
                .hi
                .is_none_or(|(hi, strict)| if strict { n < hi } else { n <= hi })
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Double(d) => Some(*d),
        _ => None,
    }
}

fn holds_item(collection: &Value, item: &Value) -> Option<bool> {
    match collection {
        Value::List(items) => Some(items.contains(item)),
        Value::Map(m) => Some(match item {
            Value::String(key) => crate::expr::map_get(m, key).is_some(),
            _ => false,
        }),
        _ => None,
    }
}

/// The facts of a branch of the solve.
#[derive(Clone, Debug, Default)]
struct Store {
    vars: Vec<(Var, Facts)>,
    linear: Vec<(Linear, BinaryOp)>,
    same: Vec<(Var, Var, bool)>,
}

impl Store {
    fn facts(&mut self, v: &Var) -> &mut Facts {
        let at = match self.vars.iter().position(|(w, _)| w == v) {
            Some(at) => at,
            None => {
                self.vars.push((v.clone(), Facts::default()));
                self.vars.len() - 1
            }
        };
        &mut self.vars[at].1
    }

    /// Adds the atom; `false` when it contradicts what is known. Only
    /// contradictions between known values count, so that `false` is a
    /// proof.
    fn add(&mut self, atom: &Atom) -> bool {
        match atom {
            Atom::Eq(v, k) => {
                let f = self.facts(v);
                if f.has == Some(false) || f.eq.as_ref().is_some_and(|e| e != k) || f.ne.contains(k)
                {
                    return false;
                }
                if f.lo.is_some() || f.hi.is_some() {
                    match number(k) {
                        Some(n) if f.within_bounds(n) => {}
                        _ => return false,
                    }
                }
                if !f.contains.is_empty() || !f.lacks.is_empty() {
                    let ok = f.contains.iter().all(|c| holds_item(k, c) == Some(true))
                        && f.lacks.iter().all(|c| holds_item(k, c) == Some(false));
                    if !ok {
                        return false;
                    }
                }
                f.eq = Some(k.clone());
                true
            }
            Atom::Ne(v, k) => {
                let f = self.facts(v);
                if f.has == Some(false) || f.eq.as_ref() == Some(k) {
                    return false;
                }
                f.ne.push(k.clone());
                true
            }
            Atom::Bound(v, side, n, strict) => {
                let f = self.facts(v);
                if f.has == Some(false) {
                    return false;
                }
                let tighter = |old: Option<(f64, bool)>, lower: bool| match old {
                    Some((m, s)) if (lower && m > *n) || (!lower && m < *n) => Some((m, s)),
                    Some((m, s)) if m == *n => Some((m, s || *strict)),
                    _ => Some((*n, *strict)),
                };
                match side {
                    Side::Lower => f.lo = tighter(f.lo, true),
                    Side::Upper => f.hi = tighter(f.hi, false),
                }
                if let (Some((lo, ls)), Some((hi, hs))) = (f.lo, f.hi)
                    && (lo > hi || (lo == hi && (ls || hs)))
                {
                    return false;
                }
                match f.eq.as_ref() {
                    Some(e) => number(e).is_some_and(|n| f.within_bounds(n)),
                    None => true,
                }
            }
            Atom::Has(v, present) => {
                let f = self.facts(v);
                if f.has == Some(!present) || (!present && f.needs_presence()) {
                    return false;
                }
                f.has = Some(*present);
                true
            }
            Atom::Contains(v, k, holds) => {
                let f = self.facts(v);
                if f.has == Some(false) {
                    return false;
                }
                if let Some(e) = &f.eq
                    && holds_item(e, k) != Some(*holds)
                {
                    return false;
                }
                let (mine, other) = if *holds {
                    (&mut f.contains, &f.lacks)
                } else {
                    (&mut f.lacks, &f.contains)
                };
                if other.contains(k) {
                    return false;
                }
                mine.push(k.clone());
                true
            }
            Atom::Linear(l, op) => {
                self.linear.push((l.clone(), *op));
                true
            }
            Atom::Same(v, w, eq) => {
                self.same.push((v.clone(), w.clone(), *eq));
                true
            }
        }
    }
}

/// How a branch of the solve ended.
enum Branch {
    Found,
    Conflict,
    /// The branch budget ran out.
    Spent,
}

/// The values chosen for the variables: `None` for a field that must be
/// absent.
pub(crate) type Assignment = Vec<(Var, Option<Value>)>;

/// What solving conditions gave.
pub(crate) enum Outcome {
    /// Values for the variables that the conditions asked for, checked
    /// against every condition where they decide it.
    Solved(Assignment),
    /// No values satisfy the conditions, proved from known values alone.
    Unsat,
    /// Neither: the budget ran out, or the values found did not check.
    Unknown,
}

/// The synthesized value of a payload field, if the delivery has it.
pub(crate) type Defaults<'d> = &'d dyn Fn(&Var) -> Option<Value>;

/// Solves `conditions` together; `fixed` tells the variables that cannot
/// be chosen (the ids the replay gives each delivery), which a solution
/// leaves alone; a variable whose synthesized value (`defaults`) meets what
/// is asked of it keeps that value.
pub(crate) fn solve(
    conditions: &[(Term, Want)],
    fixed: &dyn Fn(&Var) -> bool,
    defaults: Defaults,
) -> Outcome {
    let formulas: Vec<Formula> = conditions.iter().map(|(t, w)| formula(t, *w)).collect();
    let mut budget = BRANCHES;
    let mut found = None;
    let mut leaf = |store: &Store| match choose(store, fixed, defaults) {
        Some(assignment) if checks(conditions, &assignment) => {
            found = Some(assignment);
            true
        }
        _ => false,
    };
    let mut unchecked = false;
    let todo: Vec<&Formula> = formulas.iter().rev().collect();
    match branch(
        Store::default(),
        todo,
        &mut budget,
        &mut leaf,
        &mut unchecked,
    ) {
        Branch::Found => Outcome::Solved(found.unwrap_or_default()),
        // A branch whose values did not check is no proof.
        Branch::Conflict if !unchecked => Outcome::Unsat,
        _ => Outcome::Unknown,
    }
}

/// Whether no values satisfy the conditions, proved from contradictions
/// between known values alone (every variable may be anything).
pub(crate) fn unsatisfiable(conditions: &[(Term, Want)]) -> bool {
    let formulas: Vec<Formula> = conditions.iter().map(|(t, w)| formula(t, *w)).collect();
    let mut budget = BRANCHES;
    let mut unchecked = false;
    let todo: Vec<&Formula> = formulas.iter().rev().collect();
    matches!(
        branch(
            Store::default(),
            todo,
            &mut budget,
            &mut |_| true,
            &mut unchecked
        ),
        Branch::Conflict
    )
}

/// The formulas of `todo` (the next one last), added to `store` in turn;
/// at a disjunction, each side in a branch of its own. `leaf` decides a
/// branch that holds every formula; `unchecked` is set when it refused one.
fn branch(
    mut store: Store,
    mut todo: Vec<&Formula>,
    budget: &mut usize,
    leaf: &mut dyn FnMut(&Store) -> bool,
    unchecked: &mut bool,
) -> Branch {
    while let Some(f) = todo.pop() {
        match f {
            Formula::True | Formula::Opaque => {}
            Formula::Fail => return Branch::Conflict,
            Formula::Atom(a) => {
                if !store.add(a) {
                    return Branch::Conflict;
                }
            }
            Formula::All(fs) => todo.extend(fs.iter().rev()),
            Formula::Any(fs) => {
                let mut spent = false;
                for g in fs {
                    if *budget == 0 {
                        return Branch::Spent;
                    }
                    *budget -= 1;
                    let mut next = todo.clone();
                    next.push(g);
                    match branch(store.clone(), next, budget, leaf, unchecked) {
                        Branch::Found => return Branch::Found,
                        Branch::Spent => spent = true,
                        Branch::Conflict => {}
                    }
                }
                return if spent {
                    Branch::Spent
                } else {
                    Branch::Conflict
                };
            }
        }
    }
    if leaf(&store) {
        Branch::Found
    } else {
        *unchecked = true;
        Branch::Conflict
    }
}

/// Values for the variables of a branch: what it equals; the boundary of
/// its bounds; a list of what it must hold; absent or present as `has()`
/// asks; then, for each sum, the value its last unset field needs (the
/// others set to 1).
fn choose(store: &Store, fixed: &dyn Fn(&Var) -> bool, defaults: Defaults) -> Option<Assignment> {
    let mut out: HashMap<Var, Option<Value>> = HashMap::new();
    let mut order: Vec<Var> = Vec::new();
    let mut set = |out: &mut HashMap<Var, Option<Value>>, v: &Var, value: Option<Value>| {
        if !out.contains_key(v) {
            order.push(v.clone());
        }
        out.insert(v.clone(), value);
    };
    for (v, f) in &store.vars {
        if fixed(v) || matches!(v, Var::Context(_)) {
            continue;
        }
        let value = if let Some(d) = defaults(v).filter(|d| f.allows(d)) {
            Some(d)
        } else if let Some(e) = &f.eq {
            Some(e.clone())
        } else if f.lo.is_some() || f.hi.is_some() {
            Some(boundary(f)?)
        } else if !f.contains.is_empty() {
            Some(Value::list(f.contains.clone()))
        } else if f.has == Some(false) {
            None
        } else if f.has == Some(true) {
            // A deeper field makes it a map; else any value will do.
            if store.vars.iter().any(|(w, _)| w != v && w.within(v)) {
                continue;
            }
            Some(present(v))
        } else {
            continue;
        };
        set(&mut out, v, value);
    }
    for (v, w, eq) in &store.same {
        if !*eq || fixed(v) || fixed(w) {
            continue;
        }
        match (out.get(v).cloned().flatten(), out.get(w).cloned().flatten()) {
            (Some(x), None) => set(&mut out, w, Some(x)),
            (None, Some(y)) => set(&mut out, v, Some(y)),
            (None, None) => {
                let value = present(v);
                set(&mut out, v, Some(value.clone()));
                set(&mut out, w, Some(value));
            }
            _ => {}
        }
    }
    for (l, op) in &store.linear {
        let mut rest = l.constant;
        let mut unset: Vec<&(Var, f64)> = Vec::new();
        for term in &l.terms {
            match out.get(&term.0) {
                Some(Some(value)) => rest += term.1 * number(value)?,
                Some(None) => return None,
                None if fixed(&term.0) => return None,
                None => unset.push(term),
            }
        }
        let Some((last, others)) = unset.split_last() else {
            continue;
        };
        let one = if l.int {
            Value::Int(1)
        } else {
            Value::Double(1.0)
        };
        for (v, c) in others {
            let value = defaults(v)
                .filter(|d| number(d).is_some())
                .unwrap_or_else(|| one.clone());
            rest += c * number(&value)?;
            set(&mut out, v, Some(value));
        }
        let (v, c) = last;
        let op = if *c < 0.0 { mirrored(*op) } else { *op };
        let target = -rest / c;
        let mut facts = Facts::default();
        match op {
            BinaryOp::Eq => facts.eq = Some(numeric(target, l.int)),
            BinaryOp::Ne => facts.eq = Some(numeric(target + 1.0, l.int)),
            BinaryOp::Gt => facts.lo = Some((target, true)),
            BinaryOp::Ge => facts.lo = Some((target, false)),
            BinaryOp::Lt => facts.hi = Some((target, true)),
            _ => facts.hi = Some((target, false)),
        }
        let value = match facts.eq.take() {
            Some(e) => e,
            None => boundary_with(&facts, l.int)?,
        };
        set(&mut out, v, Some(value));
    }
    Some(
        order
            .into_iter()
            .map(|v| {
                let value = out.remove(&v).flatten();
                (v, value)
            })
            .collect(),
    )
}

fn numeric(n: f64, int: bool) -> Value {
    if int && n.fract() == 0.0 {
        Value::Int(n as i64)
    } else {
        Value::Double(n)
    }
}

/// A present value for a variable nothing else is asked of: a string in
/// the manner of the synthesized payloads, `status-1`.
fn present(v: &Var) -> Value {
    match v {
        Var::Field(k, path) => Value::from(format!(
            "{}-{}",
            path.last().map_or("value", String::as_str),
            k + 1
        )),
        Var::Context(_) => Value::from("value"),
    }
}

/// The value at the boundary of a variable's bounds, and not among what it
/// must differ from.
fn boundary(f: &Facts) -> Option<Value> {
    let int = [f.lo, f.hi].iter().flatten().all(|(n, _)| n.fract() == 0.0);
    let mut value = boundary_with(f, int)?;
    // Past a value it must differ from, one further.
    for _ in 0..f.ne.len() {
        if !f.ne.contains(&value) {
            break;
        }
        let n = number(&value)?;
        let next = if f.lo.is_some() { n + 1.0 } else { n - 1.0 };
        if !f.within_bounds(next) {
            return None;
        }
        value = numeric(next, int);
    }
    Some(value)
}

fn boundary_with(f: &Facts, int: bool) -> Option<Value> {
    let n = match (f.lo, f.hi) {
        (Some((lo, strict)), _) => {
            if int {
                if strict { lo.floor() + 1.0 } else { lo.ceil() }
            } else if strict {
                lo + 1.0
            } else {
                lo
            }
        }
        (None, Some((hi, strict))) => {
            if int {
                if strict { hi.ceil() - 1.0 } else { hi.floor() }
            } else if strict {
                hi - 1.0
            } else {
                hi
            }
        }
        (None, None) => return None,
    };
    f.within_bounds(n).then(|| numeric(n, int))
}

/// Whether the values satisfy every condition they decide.
fn checks(conditions: &[(Term, Want)], assignment: &Assignment) -> bool {
    let values = |v: &Var| -> Option<Term> { value_of(assignment, v) };
    conditions.iter().all(|(t, want)| {
        let t = t.substitute(&values);
        match (&t, want) {
            (Term::Known(Value::Bool(b)), Want::Holds) => *b,
            (Term::Known(Value::Bool(b)), _) => !*b,
            (Term::Known(_) | Term::Error, Want::NotHolds) => true,
            (Term::Known(_) | Term::Error, _) => false,
            _ => true,
        }
    })
}

/// The value the assignment gives `v`: its own, or the part of one it lies
/// within; an error where that is absent or has no such field.
pub(crate) fn value_of(assignment: &Assignment, v: &Var) -> Option<Term> {
    for (w, value) in assignment {
        if v == w {
            return Some(value.clone().map_or(Term::Error, Term::Known));
        }
    }
    for (w, value) in assignment {
        if v.within(w) {
            let Some(mut value) = value.clone().map(Term::Known) else {
                return Some(Term::Error);
            };
            for field in &v.path()[w.path().len()..] {
                value = super::term::member(value, field);
            }
            return Some(value);
        }
    }
    None
}
