//! `Expr` → canonical CEL text, with the fewest parentheses that keep its meaning.

use std::fmt::{self, Write};

use super::{Expr, ExprKind, UnaryOp};

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self, 0, f)
    }
}

/// Strength of the postfix and primary forms, tighter than any operator.
const POSTFIX: u8 = 7;
const UNARY: u8 = 6;

fn strength(expr: &Expr) -> u8 {
    match &expr.kind {
        ExprKind::Conditional(..) => 0,
        ExprKind::Binary(op, ..) => op.precedence(),
        ExprKind::Unary(..) => UNARY,
        // A negative literal prints with its sign, so it binds like a unary minus.
        ExprKind::Int(n) if *n < 0 => UNARY,
        ExprKind::Float(n) if n.is_sign_negative() => UNARY,
        _ => POSTFIX,
    }
}

/// Writes `expr`, parenthesised when it binds less tightly than `min`.
fn write_expr(expr: &Expr, min: u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if strength(expr) < min {
        f.write_char('(')?;
        write_expr(expr, 0, f)?;
        return f.write_char(')');
    }
    match &expr.kind {
        ExprKind::Null => f.write_str("null"),
        ExprKind::Bool(b) => write!(f, "{b}"),
        ExprKind::Int(n) => write!(f, "{n}"),
        ExprKind::Float(n) => {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                return write!(f, "{n:.1}");
            }
            // CEL needs digits on both sides of the point, also before an exponent.
            let text = format!("{n:?}");
            match text.split_once('e') {
                Some((mantissa, exponent)) if !mantissa.contains('.') => {
                    write!(f, "{mantissa}.0e{exponent}")
                }
                _ => f.write_str(&text),
            }
        }
        ExprKind::String(s) => super::value::write_quoted(s, f),
        ExprKind::List(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(item, 0, f)?;
            }
            f.write_char(']')
        }
        ExprKind::Map(entries) => {
            f.write_char('{')?;
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(key, 0, f)?;
                f.write_str(": ")?;
                write_expr(value, 0, f)?;
            }
            f.write_char('}')
        }
        ExprKind::Ident(name) => f.write_str(name),
        ExprKind::Member(operand, field) => {
            // `1.f` would read as a malformed number.
            if matches!(operand.kind, ExprKind::Int(_) | ExprKind::Float(_)) {
                write!(f, "({operand})")?;
                return write!(f, ".{field}");
            }
            write_expr(operand, POSTFIX, f)?;
            write!(f, ".{field}")
        }
        ExprKind::Index(operand, index) => {
            write_expr(operand, POSTFIX, f)?;
            f.write_char('[')?;
            write_expr(index, 0, f)?;
            f.write_char(']')
        }
        ExprKind::Unary(op, operand) => {
            f.write_str(match op {
                UnaryOp::Not => "!",
                UnaryOp::Neg => "-",
            })?;
            // `- -1` must not print as `--1`, which would not read back the same.
            if matches!(operand.kind, ExprKind::Unary(..)) || strength(operand) == UNARY {
                f.write_char('(')?;
                write_expr(operand, 0, f)?;
                return f.write_char(')');
            }
            write_expr(operand, UNARY, f)
        }
        ExprKind::Binary(op, left, right) => {
            // Operators are left-associative: the right operand needs parentheses at equal strength.
            let p = op.precedence();
            write_expr(left, p, f)?;
            write!(f, " {} ", op.as_str())?;
            write_expr(right, p + 1, f)
        }
        ExprKind::Conditional(condition, then, otherwise) => {
            write_expr(condition, 1, f)?;
            f.write_str(" ? ")?;
            write_expr(then, 1, f)?;
            f.write_str(" : ")?;
            write_expr(otherwise, 0, f)
        }
        ExprKind::Call(name, args) => {
            write!(f, "{name}(")?;
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(arg, 0, f)?;
            }
            f.write_char(')')
        }
    }
}
