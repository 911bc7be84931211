//! Expressions: the spec's CEL subset, parsed at load time.

mod ast;

pub use ast::{BinaryOp, Expr, ExprKind, UnaryOp};

use crate::span::Span;

/// An expression that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub message: String,
    pub span: Span,
}

/// Parses `text`, which starts at byte `offset` of its file.
pub fn parse(text: &str, offset: u32) -> Result<Expr, ExprError> {
    // Scaffolding until the expression parser lands.
    let _ = text;
    Err(ExprError {
        message: "expressions are not parsed yet".into(),
        span: Span::new(offset as usize, offset as usize),
    })
}
