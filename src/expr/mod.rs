//! Expressions: the spec's CEL subset, parsed at load time.

mod ast;
mod check;
mod eval;
pub(crate) mod json;
pub(crate) mod list;
mod parse;
mod print;
mod value;

pub use ast::{BinaryOp, Expr, ExprKind, UnaryOp};
pub use check::{
    FUNCTIONS, RESERVED_NAMES, Scope, Type, check, check_guard, in_state_paths, infer_type,
};
pub use eval::{
    Compiled, CompiledAssign, EvalError, Event, Layout, compile, compile_guard, eval, eval_guard,
    eval_guard_with_host,
};
pub use list::{Iter, List};
pub(crate) use parse::bracket_depth;
pub use parse::{MAX_DEPTH, parse};
pub(crate) use value::write_quoted;
pub use value::{Map, Value, compare, map_get, str_eq};

use crate::span::Span;

/// An expression that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub message: String,
    pub span: Span,
}

impl Expr {
    /// Calls `f` on this expression and every expression inside it, parents first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::String(_)
            | ExprKind::Ident(_) => {}
            ExprKind::List(items) | ExprKind::Call(_, items) => {
                items.iter().for_each(|e| e.walk(f))
            }
            ExprKind::Map(entries) => entries.iter().for_each(|(k, v)| {
                k.walk(f);
                v.walk(f);
            }),
            ExprKind::Member(operand, _) | ExprKind::Unary(_, operand) => operand.walk(f),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Conditional(a, b, c) => {
                a.walk(f);
                b.walk(f);
                c.walk(f);
            }
        }
    }

    /// Moves every span of the tree `by` bytes later in the file: the tree
    /// of a text parsed at offset 0, placed where the text is written.
    pub fn shift(&mut self, by: u32) {
        self.span = Span::new(
            (self.span.start + by) as usize,
            (self.span.end + by) as usize,
        );
        match &mut self.kind {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::String(_)
            | ExprKind::Ident(_) => {}
            ExprKind::List(items) | ExprKind::Call(_, items) => {
                items.iter_mut().for_each(|e| e.shift(by))
            }
            ExprKind::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                k.shift(by);
                v.shift(by);
            }),
            ExprKind::Member(operand, _) | ExprKind::Unary(_, operand) => operand.shift(by),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                a.shift(by);
                b.shift(by);
            }
            ExprKind::Conditional(a, b, c) => {
                a.shift(by);
                b.shift(by);
                c.shift(by);
            }
        }
    }
}

#[cfg(test)]
mod check_tests;
#[cfg(test)]
mod eval_tests;
#[cfg(test)]
mod tests;
