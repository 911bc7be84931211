//! The static check of an expression: names, functions, and obvious type errors.
//!
//! It runs at load time over every expression of a machine and reports every
//! problem it finds, each at the sub-expression that causes it. Types are
//! inferred lightly: a value whose type cannot be known (`Dyn`) passes every
//! check, so only errors that no run could avoid are reported.

use crate::diagnostic::{Diagnostic, LoadError, did_you_mean};
use crate::model::PayloadType;
use crate::span::Span;

use super::{BinaryOp, Expr, ExprKind, UnaryOp};

/// The static type of an expression.
///
/// `Number` is an int or a double, not known which (a payload field declared
/// `number`). `Dyn` is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Null,
    Bool,
    Int,
    Double,
    Number,
    String,
    List,
    Map,
    Dyn,
}

impl Type {
    /// The type of a JSON value, such as a context field's initial value.
    pub fn of_json(value: &serde_json::Value) -> Type {
        match value {
            serde_json::Value::Null => Type::Null,
            serde_json::Value::Bool(_) => Type::Bool,
            serde_json::Value::Number(n) if n.is_i64() => Type::Int,
            serde_json::Value::Number(_) => Type::Double,
            serde_json::Value::String(_) => Type::String,
            serde_json::Value::Array(_) => Type::List,
            serde_json::Value::Object(_) => Type::Map,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Type::Null => "null",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Double => "double",
            Type::Number => "number",
            Type::String => "string",
            Type::List => "list",
            Type::Map => "map",
            Type::Dyn => "dyn",
        }
    }

    fn is_numeric(self) -> bool {
        matches!(self, Type::Int | Type::Double | Type::Number)
    }

    /// Types whose values `==` can find equal: numbers of any kind are one family.
    fn family(self) -> Option<u8> {
        match self {
            Type::Null | Type::Dyn => None,
            Type::Bool => Some(0),
            Type::Int | Type::Double | Type::Number => Some(1),
            Type::String => Some(2),
            Type::List => Some(3),
            Type::Map => Some(4),
        }
    }
}

impl From<PayloadType> for Type {
    fn from(ty: PayloadType) -> Type {
        match ty {
            PayloadType::String => Type::String,
            PayloadType::Number => Type::Number,
            PayloadType::Integer => Type::Int,
            PayloadType::Boolean => Type::Bool,
            PayloadType::List => Type::List,
            PayloadType::Map => Type::Map,
            PayloadType::Any => Type::Dyn,
        }
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an expression may name.
///
/// A context field whose type is `Null` (declared with `null` as its initial
/// value) is taken as `Dyn`: null there is a placeholder for a value to come.
#[derive(Clone, Debug, Default)]
pub struct Scope<'a> {
    /// The context fields and the types of their initial values.
    pub context: Vec<(&'a str, Type)>,
    /// The payload the triggering event declares; `None` when it declares
    /// none (or the trigger is not one known event), so any `event.f` is
    /// allowed, as `Dyn`.
    pub payload: Option<Vec<(&'a str, Type)>>,
    /// The machine's host guards: names a guard may use as bools, which the
    /// host answers at run time.
    pub guards: Vec<&'a str>,
}

/// Bare words an expression gives a meaning of its own, which a host guard
/// therefore cannot be named.
pub const RESERVED_NAMES: [&str; 6] = ["context", "event", "null", "true", "false", "in"];

/// Every problem in `expr`, each at the span of the sub-expression that causes it.
pub fn check(expr: &Expr, scope: &Scope) -> Vec<Diagnostic> {
    let mut checker = Checker {
        scope,
        problems: Vec::new(),
        guard: false,
    };
    checker.infer(expr);
    checker.problems
}

/// The type of `expr` in `scope`, where the checker knows it: `None` for
/// an unknown one (`Dyn`) and for an expression with problems.
pub fn infer_type(expr: &Expr, scope: &Scope) -> Option<Type> {
    let mut checker = Checker {
        scope,
        problems: Vec::new(),
        guard: false,
    };
    let ty = checker.infer(expr);
    (checker.problems.is_empty() && ty != Type::Dyn).then_some(ty)
}

/// `check` for a guard: host guards may be named, and the whole must be a
/// bool where its type is known.
pub fn check_guard(expr: &Expr, scope: &Scope) -> Vec<Diagnostic> {
    let mut checker = Checker {
        scope,
        problems: Vec::new(),
        guard: true,
    };
    let ty = checker.infer(expr);
    if !matches!(ty, Type::Bool | Type::Dyn) {
        checker.invalid(
            expr.span,
            format!(
                "a guard must be a bool, but this expression is {}",
                article(ty)
            ),
        );
    }
    checker.problems
}

/// The paths named by `in_state("...")` calls, each with the span of its
/// string, for the lowering to resolve against the machine's states.
pub fn in_state_paths(expr: &Expr) -> Vec<(String, Span)> {
    let mut paths = Vec::new();
    expr.walk(&mut |e| {
        if let ExprKind::Call(name, args) = &e.kind
            && name == "in_state"
            && let [arg] = args.as_slice()
            && let ExprKind::String(path) = &arg.kind
        {
            paths.push((path.clone(), arg.span));
        }
    });
    paths
}

/// The functions the expression language has.
pub const FUNCTIONS: [&str; 7] = [
    "size",
    "has",
    "in_state",
    "merge",
    "distinct",
    "without",
    "without_by",
];

fn article(ty: Type) -> String {
    match ty {
        Type::Int => "an int".to_string(),
        Type::Null => "null".to_string(),
        other => format!("a {other}"),
    }
}

struct Checker<'s, 'a> {
    scope: &'s Scope<'a>,
    problems: Vec<Diagnostic>,
    /// Whether the expression is a guard, where host guards may be named.
    guard: bool,
}

impl Checker<'_, '_> {
    fn invalid(&mut self, span: Span, message: String) -> Type {
        self.problems
            .push(LoadError::InvalidExpression { message }.at(span, []));
        Type::Dyn
    }

    fn invalid_with_help(&mut self, span: Span, message: String, help: Option<String>) -> Type {
        let mut diagnostic = LoadError::InvalidExpression { message }.at(span, []);
        diagnostic.help = help;
        self.problems.push(diagnostic);
        Type::Dyn
    }

    /// The type of `expr`, reporting what is wrong inside it. A sub-expression
    /// with a problem counts as `Dyn`, so one mistake is reported once.
    fn infer(&mut self, expr: &Expr) -> Type {
        match &expr.kind {
            ExprKind::Null => Type::Null,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Int(_) => Type::Int,
            ExprKind::Float(_) => Type::Double,
            ExprKind::String(_) => Type::String,
            ExprKind::List(items) => {
                for item in items {
                    self.infer(item);
                }
                Type::List
            }
            ExprKind::Map(entries) => {
                for (key, value) in entries {
                    let key_type = self.infer(key);
                    if !matches!(key_type, Type::String | Type::Dyn) {
                        self.invalid(
                            key.span,
                            format!(
                                "map keys must be strings, this one is {}",
                                article(key_type)
                            ),
                        );
                    }
                    self.infer(value);
                }
                Type::Map
            }
            ExprKind::Ident(name) => self.bare_name(name, expr.span),
            ExprKind::Member(operand, field) => self.member(operand, field, expr.span),
            ExprKind::Index(operand, index) => {
                let container = self.infer(operand);
                let index_type = self.infer(index);
                match container {
                    Type::List if !matches!(index_type, Type::Int | Type::Number | Type::Dyn) => {
                        self.invalid(
                            index.span,
                            format!("a list index must be an int, not {}", article(index_type)),
                        )
                    }
                    Type::Map if !matches!(index_type, Type::String | Type::Dyn) => self.invalid(
                        index.span,
                        format!("a map key must be a string, not {}", article(index_type)),
                    ),
                    Type::List | Type::Map | Type::Dyn => Type::Dyn,
                    other => self.invalid(
                        operand.span,
                        format!("only lists and maps can be indexed, not {}", article(other)),
                    ),
                }
            }
            ExprKind::Unary(op, operand) => {
                let ty = self.infer(operand);
                match op {
                    UnaryOp::Not => match ty {
                        Type::Bool | Type::Dyn => Type::Bool,
                        other => self.invalid(
                            operand.span,
                            format!("`!` needs a bool, not {}", article(other)),
                        ),
                    },
                    UnaryOp::Neg => match ty {
                        Type::Dyn => Type::Dyn,
                        t if t.is_numeric() => t,
                        other => self.invalid(
                            operand.span,
                            format!("`-` needs a number, not {}", article(other)),
                        ),
                    },
                }
            }
            ExprKind::Binary(op, left, right) => self.binary(*op, left, right, expr.span),
            ExprKind::Conditional(condition, then, otherwise) => {
                let condition_type = self.infer(condition);
                if !matches!(condition_type, Type::Bool | Type::Dyn) {
                    self.invalid(
                        condition.span,
                        format!(
                            "the condition of `?:` must be a bool, not {}",
                            article(condition_type)
                        ),
                    );
                }
                let a = self.infer(then);
                let b = self.infer(otherwise);
                if a == b {
                    a
                } else if a.is_numeric() && b.is_numeric() {
                    Type::Number
                } else {
                    Type::Dyn
                }
            }
            ExprKind::Call(name, args) => self.call(name, args, expr.span),
        }
    }

    fn bare_name(&mut self, name: &str, span: Span) -> Type {
        match name {
            "context" => self.invalid(
                span,
                "`context` needs a field: write `context.<field>`".to_string(),
            ),
            "event" => self.invalid(
                span,
                "`event` needs a field: write `event.<field>`, `event.type` or `event.id`"
                    .to_string(),
            ),
            _ if self.scope.guards.contains(&name) => {
                if self.guard {
                    Type::Bool
                } else {
                    self.invalid(
                        span,
                        format!(
                            "the host guard `{name}` can only be used in a guard: \
                             the host answers it when a transition is chosen"
                        ),
                    )
                }
            }
            _ => {
                let in_context = self.scope.context.iter().any(|(f, _)| *f == name);
                let in_payload = self
                    .scope
                    .payload
                    .as_ref()
                    .is_some_and(|p| p.iter().any(|(f, _)| *f == name));
                let near_guard = if self.guard {
                    did_you_mean(name, self.scope.guards.iter().copied())
                } else {
                    None
                };
                let help = if in_context {
                    Some(format!("write `context.{name}`"))
                } else if in_payload {
                    Some(format!("write `event.{name}`"))
                } else if let Some(guard) = near_guard {
                    Some(format!("did you mean the host guard `{guard}`?"))
                } else if self.guard && self.scope.guards.is_empty() {
                    Some(format!(
                        "a condition only the host can answer is declared under `guards` (`guards: [{name}]`)"
                    ))
                } else {
                    None
                };
                let message = if self.guard {
                    format!(
                        "unknown name `{name}`: values are read as `context.<field>` or `event.<field>`, \
                         and host guards are declared under `guards`"
                    )
                } else {
                    format!(
                        "unknown name `{name}`: values are read as `context.<field>` or `event.<field>`"
                    )
                };
                self.invalid_with_help(span, message, help)
            }
        }
    }

    fn member(&mut self, operand: &Expr, field: &str, span: Span) -> Type {
        match &operand.kind {
            ExprKind::Ident(name) if name == "context" => {
                match self.scope.context.iter().find(|(f, _)| *f == field) {
                    Some((_, Type::Null)) => Type::Dyn,
                    Some((_, ty)) => *ty,
                    None => {
                        let names = self.scope.context.iter().map(|(f, _)| *f);
                        self.problems.push(
                            LoadError::UnknownContextField {
                                field: field.to_string(),
                            }
                            .at(span, names),
                        );
                        Type::Dyn
                    }
                }
            }
            ExprKind::Ident(name) if name == "event" => match field {
                "type" => Type::String,
                "id" => Type::Dyn,
                _ => match &self.scope.payload {
                    None => Type::Dyn,
                    Some(payload) => match payload.iter().find(|(f, _)| *f == field) {
                        Some((_, ty)) => *ty,
                        None => {
                            let declared: Vec<&str> = payload.iter().map(|(f, _)| *f).collect();
                            let message = if declared.is_empty() {
                                format!(
                                    "the event declares no payload, so it has no field `{field}`"
                                )
                            } else {
                                format!(
                                    "the event's payload has no field `{field}` (it declares {})",
                                    declared
                                        .iter()
                                        .map(|f| format!("`{f}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            };
                            let help = did_you_mean(field, declared.iter().copied())
                                .map(|s| format!("did you mean `event.{s}`?"));
                            self.invalid_with_help(span, message, help)
                        }
                    },
                },
            },
            _ => match self.infer(operand) {
                Type::Map | Type::Dyn => Type::Dyn,
                other => self.invalid(
                    span,
                    format!(
                        "`.{field}` selects a field of a map, not of {}",
                        article(other)
                    ),
                ),
            },
        }
    }

    fn binary(&mut self, op: BinaryOp, left: &Expr, right: &Expr, span: Span) -> Type {
        let a = self.infer(left);
        let b = self.infer(right);
        let symbol = op.as_str();
        match op {
            BinaryOp::And | BinaryOp::Or => {
                for (ty, side) in [(a, left), (b, right)] {
                    if !matches!(ty, Type::Bool | Type::Dyn) {
                        self.invalid(
                            side.span,
                            format!("`{symbol}` needs bools, not {}", article(ty)),
                        );
                    }
                }
                Type::Bool
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                if let (Some(x), Some(y)) = (a.family(), b.family())
                    && x != y
                {
                    return self.invalid(
                        span,
                        format!(
                            "`{symbol}` compares {} with {}: they are never equal",
                            article(a),
                            article(b)
                        ),
                    );
                }
                Type::Bool
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let comparable = a == Type::Dyn
                    || b == Type::Dyn
                    || (a.is_numeric() && b.is_numeric())
                    || (a == b && matches!(a, Type::String | Type::Bool));
                if !comparable {
                    return self.invalid(
                        span,
                        format!("`{symbol}` cannot order {} and {}", article(a), article(b)),
                    );
                }
                Type::Bool
            }
            BinaryOp::In => {
                match b {
                    Type::List | Type::Dyn => {}
                    Type::Map => {
                        if !matches!(a, Type::String | Type::Dyn) {
                            self.invalid(
                                left.span,
                                format!(
                                    "map keys are strings, so {} is never in a map",
                                    article(a)
                                ),
                            );
                        }
                    }
                    other => {
                        self.invalid(
                            right.span,
                            format!(
                                "`in` needs a list or a map on its right, not {}",
                                article(other)
                            ),
                        );
                    }
                }
                Type::Bool
            }
            BinaryOp::Add => match (a, b) {
                (Type::Int, Type::Int) => Type::Int,
                (Type::Double, Type::Double) => Type::Double,
                (Type::Int, Type::Double) | (Type::Double, Type::Int) => Type::Double,
                (x, y) if x.is_numeric() && y.is_numeric() => Type::Number,
                (Type::String, Type::String) => Type::String,
                (Type::List, Type::List) => Type::List,
                (Type::Dyn, Type::Dyn) => Type::Dyn,
                (Type::Dyn, t) | (t, Type::Dyn) if t.is_numeric() => Type::Number,
                (Type::Dyn, t @ (Type::String | Type::List))
                | (t @ (Type::String | Type::List), Type::Dyn) => t,
                _ => self.invalid(
                    span,
                    format!(
                        "`+` adds two numbers, two strings or two lists, not {} and {}",
                        article(a),
                        article(b)
                    ),
                ),
            },
            BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                let numeric = |t: Type| t.is_numeric() || t == Type::Dyn;
                if !(numeric(a) && numeric(b)) {
                    return self.invalid(
                        span,
                        format!(
                            "`{symbol}` needs numbers, not {} and {}",
                            article(a),
                            article(b)
                        ),
                    );
                }
                match (a, b) {
                    (Type::Int, Type::Int) => Type::Int,
                    (Type::Double, Type::Double | Type::Int) | (Type::Int, Type::Double) => {
                        Type::Double
                    }
                    _ => Type::Number,
                }
            }
        }
    }

    /// `merge(map, map)`, `distinct(list)`, `without(list, x)` and
    /// `without_by(list, "field", x)`; `None` for another name.
    fn value_function(&mut self, name: &str, args: &[Expr], span: Span) -> Option<Type> {
        let (wanted, result): (&[Type], Type) = match name {
            "merge" => (&[Type::Map, Type::Map], Type::Map),
            "distinct" => (&[Type::List], Type::List),
            "without" => (&[Type::List, Type::Dyn], Type::List),
            "without_by" => (&[Type::List, Type::String, Type::Dyn], Type::List),
            _ => return None,
        };
        let types: Vec<Type> = args.iter().map(|a| self.infer(a)).collect();
        if types.len() != wanted.len() {
            return Some(self.invalid(
                span,
                format!(
                    "`{name}` takes {} arguments, not {}",
                    wanted.len(),
                    types.len()
                ),
            ));
        }
        for ((ty, want), arg) in types.iter().zip(wanted).zip(args) {
            // `merge` takes `null` for no entries.
            let null_map = name == "merge" && *ty == Type::Null;
            if *want != Type::Dyn && *ty != Type::Dyn && ty != want && !null_map {
                return Some(self.invalid(
                    arg.span,
                    format!(
                        "`{name}` takes {} here, not {}",
                        article(*want),
                        article(*ty)
                    ),
                ));
            }
        }
        if name == "without_by" && !matches!(args[1].kind, ExprKind::String(_)) {
            return Some(self.invalid(
                args[1].span,
                "`without_by` takes the field as a string literal".to_string(),
            ));
        }
        Some(result)
    }

    fn call(&mut self, name: &str, args: &[Expr], span: Span) -> Type {
        if let Some(result) = self.value_function(name, args, span) {
            return result;
        }
        let (result, ok) = match name {
            "size" => (Type::Int, args.len() == 1),
            "has" | "in_state" => (Type::Bool, args.len() == 1),
            _ => {
                for arg in args {
                    self.infer(arg);
                }
                let help = did_you_mean(name, FUNCTIONS).map(|s| format!("did you mean `{s}`?"));
                return self.invalid_with_help(
                    span,
                    format!(
                        "unknown function `{name}`: the functions are `size`, `has`, `in_state`, `merge`, `distinct`, `without` and `without_by`"
                    ),
                    help,
                );
            }
        };
        if !ok {
            for arg in args {
                self.infer(arg);
            }
            return self.invalid(
                span,
                format!("`{name}` takes one argument, not {}", args.len()),
            );
        }
        let arg = &args[0];
        match name {
            "size" => match self.infer(arg) {
                Type::String | Type::List | Type::Map | Type::Dyn => {}
                other => {
                    self.invalid(
                        arg.span,
                        format!(
                            "`size` measures a string, a list or a map, not {}",
                            article(other)
                        ),
                    );
                }
            },
            "has" => match &arg.kind {
                ExprKind::Member(..) => {
                    self.infer(arg);
                }
                _ => {
                    self.infer(arg);
                    self.invalid(
                        arg.span,
                        "`has` takes a field selection, like `has(event.f)` or `has(context.m.f)`"
                            .to_string(),
                    );
                }
            },
            _ => {
                if !matches!(arg.kind, ExprKind::String(_)) {
                    self.infer(arg);
                    self.invalid(
                        arg.span,
                        "`in_state` takes a state path as a string literal, like `in_state(\"a.b\")`"
                            .to_string(),
                    );
                }
            }
        }
        result
    }
}
