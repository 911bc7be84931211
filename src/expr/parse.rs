//! Expression text → `Expr`, with spans in file coordinates.

use pest::Parser;
use pest::iterators::Pair;
use pest_derive::Parser;

use super::{BinaryOp, Expr, ExprError, ExprKind, UnaryOp};
use crate::span::Span;

#[derive(Parser)]
#[grammar = "../grammar/expr.pest"]
struct ExprParser;

/// Parses `text`, which starts at byte `offset` of its file.
pub fn parse(text: &str, offset: u32) -> Result<Expr, ExprError> {
    let levels = bracket_depth(text)
        .map_err(|at| too_deep(Span::new(offset as usize + at, offset as usize + at + 1)))?;
    crate::stack::with_stack(crate::stack::for_brackets(levels), || {
        parse_within_limit(text, offset)
    })
}

/// `parse` of a text whose brackets stay within the limit, on a stack with
/// room for them.
fn parse_within_limit(text: &str, offset: u32) -> Result<Expr, ExprError> {
    let mut pairs =
        ExprParser::parse(Rule::expr_main, text).map_err(|e| syntax_error(e, text, offset))?;
    let main = pairs.next().and_then(|p| p.into_inner().next());
    let Some(expression) = main else {
        return Err(ExprError {
            message: "empty expression".into(),
            span: Span::new(offset as usize, offset as usize),
        });
    };
    build(expression, offset).map(|(expr, _depth)| expr)
}

/// How deeply an expression's tree may nest (`a + b + …` nests once per
/// operator, `!!x` once per `!`). The checker, the compiler and the
/// evaluator recurse over the tree, so a deeper one would overflow the
/// stack; no honest guard comes near this.
pub const MAX_DEPTH: u32 = 200;

/// The depth of a node whose deepest child has `depth`, or an error at
/// `span` past `MAX_DEPTH`.
fn nest(depth: u32, span: Span) -> Result<u32, ExprError> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(span));
    }
    Ok(depth + 1)
}

fn too_deep(span: Span) -> ExprError {
    ExprError {
        message: format!("the expression nests more than {MAX_DEPTH} levels deep"),
        span,
    }
}

/// How many levels of brackets (`(`, `[`, `{`) and `?` `text` opens at
/// most, outside strings and `//` comments; or the byte offset of the first
/// one that opens more than `MAX_DEPTH`. The parsers recurse once or more
/// per level while they read, before the tree's depth is known, so this
/// linear scan stops a deep text first, and says how much stack the read
/// takes. A `?` counts as a level until its bracket closes, for the
/// conditional after it nests. The DSL's text is scanned the same way: its
/// blocks and its expressions share the grammar's brackets, strings and
/// comments.
pub(crate) fn bracket_depth(text: &str) -> Result<u32, usize> {
    let bytes = text.as_bytes();
    // The open levels, each with the `?`s seen inside it.
    let mut levels: Vec<u32> = vec![0];
    let (mut depth, mut deepest) = (0u32, 0u32);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' | b'?' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(i);
                }
                deepest = deepest.max(depth);
                match bytes[i] {
                    b'?' => *levels.last_mut().expect("the outermost level stays") += 1,
                    _ => levels.push(0),
                }
            }
            b')' | b']' | b'}' if levels.len() > 1 => {
                let questions = levels.pop().expect("more than one level");
                depth -= questions + 1;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(deepest)
}

/// The deepest of `items`' depths, 0 for none.
fn deepest(items: &[(Expr, u32)]) -> u32 {
    items.iter().map(|(_, depth)| *depth).max().unwrap_or(0)
}

fn syntax_error(error: pest::error::Error<Rule>, text: &str, offset: u32) -> ExprError {
    let at = match error.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    };
    let message = if text.trim().is_empty() {
        "empty expression".to_string()
    } else if at >= text.trim_end().len() {
        "the expression ends too early".to_string()
    } else {
        let rest: String = text[at..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .take(12)
            .collect();
        format!("unexpected `{rest}` in expression")
    };
    let start = offset as usize + at;
    ExprError {
        message,
        span: Span::new(start, start + 1),
    }
}

fn span_of(pair: &Pair<Rule>, offset: u32) -> Span {
    let s = pair.as_span();
    Span::new(offset as usize + s.start(), offset as usize + s.end())
}

/// The expression `pair` holds, with the depth of its tree.
fn build(pair: Pair<Rule>, offset: u32) -> Result<(Expr, u32), ExprError> {
    let span = span_of(&pair, offset);
    let rule = pair.as_rule();
    let text = pair.as_str();
    let mut inner = pair.into_inner();
    let (kind, depth) = match rule {
        Rule::expression => {
            let condition = build(next(&mut inner, span)?, offset)?;
            match inner.next() {
                None => return Ok(condition),
                Some(then) => {
                    let then = build(then, offset)?;
                    let otherwise = build(next(&mut inner, span)?, offset)?;
                    let depth = nest(condition.1.max(then.1).max(otherwise.1), span)?;
                    let kind = ExprKind::Conditional(
                        Box::new(condition.0),
                        Box::new(then.0),
                        Box::new(otherwise.0),
                    );
                    (kind, depth)
                }
            }
        }
        Rule::e_or | Rule::e_and | Rule::e_rel | Rule::e_add | Rule::e_mul => {
            let (mut left, mut depth) = build(next(&mut inner, span)?, offset)?;
            while let Some(op) = inner.next() {
                let (right, right_depth) = build(next(&mut inner, span)?, offset)?;
                let op = binary_op(op.as_str());
                let span = left.span.to(right.span);
                depth = nest(depth.max(right_depth), span)?;
                left = Expr {
                    kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                    span,
                };
            }
            return Ok((left, depth));
        }
        Rule::e_unary => {
            let pairs: Vec<Pair<Rule>> = inner.collect();
            let Some((operand, ops)) = pairs.split_last() else {
                return Err(ExprError {
                    message: "expected an operand".into(),
                    span,
                });
            };
            // The operand's own pair keeps any parentheses, which the unary spans too.
            let operand_span = span_of(operand, offset);
            let (mut expr, mut depth) = build(operand.clone(), offset)?;
            for op in ops.iter().rev() {
                let op_span = span_of(op, offset);
                let op = if op.as_str() == "!" {
                    UnaryOp::Not
                } else {
                    UnaryOp::Neg
                };
                let span = op_span.to(operand_span);
                depth = nest(depth, span)?;
                expr = Expr {
                    kind: ExprKind::Unary(op, Box::new(expr)),
                    span,
                };
            }
            return Ok((expr, depth));
        }
        Rule::e_postfix => {
            let (mut expr, mut depth) = build(next(&mut inner, span)?, offset)?;
            for suffix in inner {
                let suffix_span = span_of(&suffix, offset);
                let span = expr.span.to(suffix_span);
                let kind = match suffix.as_rule() {
                    Rule::e_member => {
                        depth = nest(depth, span)?;
                        ExprKind::Member(Box::new(expr), suffix.as_str()[1..].trim().to_string())
                    }
                    _ => {
                        let (index, index_depth) =
                            build(next(&mut suffix.into_inner(), suffix_span)?, offset)?;
                        depth = nest(depth.max(index_depth), span)?;
                        ExprKind::Index(Box::new(expr), Box::new(index))
                    }
                };
                expr = Expr { kind, span };
            }
            return Ok((expr, depth));
        }
        Rule::e_paren => return build(next(&mut inner, span)?, offset),
        Rule::e_call => {
            let name = next(&mut inner, span)?.as_str().to_string();
            let args = inner
                .map(|a| build(a, offset))
                .collect::<Result<Vec<_>, _>>()?;
            let depth = nest(deepest(&args), span)?;
            (
                ExprKind::Call(name, args.into_iter().map(|(a, _)| a).collect()),
                depth,
            )
        }
        Rule::e_list => {
            let items = inner
                .map(|a| build(a, offset))
                .collect::<Result<Vec<_>, _>>()?;
            let depth = nest(deepest(&items), span)?;
            (
                ExprKind::List(items.into_iter().map(|(a, _)| a).collect()),
                depth,
            )
        }
        Rule::e_map => {
            let mut entries = Vec::new();
            let mut depth = 0;
            for entry in inner {
                let entry_span = span_of(&entry, offset);
                let mut kv = entry.into_inner();
                let (key, key_depth) = build(next(&mut kv, entry_span)?, offset)?;
                let (value, value_depth) = build(next(&mut kv, entry_span)?, offset)?;
                depth = depth.max(key_depth).max(value_depth);
                entries.push((key, value));
            }
            (ExprKind::Map(entries), nest(depth, span)?)
        }
        Rule::e_ident => (ExprKind::Ident(text.to_string()), 1),
        Rule::e_null => (ExprKind::Null, 1),
        Rule::e_true => (ExprKind::Bool(true), 1),
        Rule::e_false => (ExprKind::Bool(false), 1),
        Rule::e_int => match text.parse::<i64>() {
            Ok(n) => (ExprKind::Int(n), 1),
            Err(_) => {
                return Err(ExprError {
                    message: format!("integer `{text}` is too large"),
                    span,
                });
            }
        },
        Rule::e_float => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => (ExprKind::Float(n), 1),
            _ => {
                return Err(ExprError {
                    message: format!("number `{text}` is out of range"),
                    span,
                });
            }
        },
        Rule::e_string => {
            let body = next(&mut inner, span)?.as_str();
            (ExprKind::String(unescape(body)), 1)
        }
        _ => {
            return Err(ExprError {
                message: format!("unexpected `{text}` in expression"),
                span,
            });
        }
    };
    Ok((Expr { kind, span }, depth))
}

fn next<'a>(
    pairs: &mut pest::iterators::Pairs<'a, Rule>,
    span: Span,
) -> Result<Pair<'a, Rule>, ExprError> {
    pairs.next().ok_or_else(|| ExprError {
        message: "incomplete expression".into(),
        span,
    })
}

fn binary_op(text: &str) -> BinaryOp {
    match text {
        "||" => BinaryOp::Or,
        "&&" => BinaryOp::And,
        "==" => BinaryOp::Eq,
        "!=" => BinaryOp::Ne,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "in" => BinaryOp::In,
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        _ => BinaryOp::Rem,
    }
}

/// Resolves the escapes the grammar admits; the grammar has already rejected
/// any other backslash sequence.
fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                out.push(
                    u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .unwrap_or('\u{fffd}'),
                );
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}
