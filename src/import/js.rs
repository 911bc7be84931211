//! The part of ECMAScript that SCXML documents write in `cond`, `expr` and
//! `<data>`, translated to the machine format's CEL subset.
//!
//! Only what has the same meaning in both languages is translated: literals,
//! data model variables (as `context.NAME`), member access and indexing,
//! `x.length` (as `size(x)`), `! - * % + - < <= > >= && || ?:`, equality, and
//! `In('id')` (as `in_state("path")`), `_event.name` (as `event.type`),
//! `_event.data.f` (as `event.f`), `undefined` (as `null`, the value of data
//! declared without one). `==` and `!=` are taken as their strict
//! forms `===` and `!==`, which is what SCXML documents mean by them in
//! practice. Everything else is an error that names what could not be
//! translated: other functions and methods, `typeof`, assignments, `/` (which
//! divides integers in CEL but not in ECMAScript), the rest of `_event`, and
//! the system variables `_sessionid`, `_name`, `_ioprocessors` and `_x`.

use std::fmt::Write;

/// A translation failure: what went wrong, and where in the expression text
/// (a byte offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct JsError {
    pub message: String,
    pub at: usize,
}

/// What the translation needs to know about the document.
pub(super) trait Names {
    /// Whether `name` is a variable of the data model.
    fn is_data(&self, name: &str) -> bool;
    /// The dotted path of the state with this SCXML id.
    fn state_path(&self, id: &str) -> Option<String>;
    /// What `_event.data` is: `event`, or the field of the event that
    /// holds it (`event.output` in the handler of a completion).
    fn event_data(&self) -> &str;
}

/// Translates an expression to CEL text.
pub(super) fn to_cel(text: &str, names: &dyn Names) -> Result<String, JsError> {
    let expr = parse(text)?;
    let mut out = String::new();
    print(&expr, names, &mut out)?;
    Ok(out)
}

/// The value of a condition made of `true`, `false`, `In('id')`, `!`, `&&`
/// and `||`, where `known` tells which states are active; `None` where it
/// depends on anything else.
pub(super) fn fold(text: &str, known: &dyn Fn(&str) -> Option<bool>) -> Option<bool> {
    fold_expr(&parse(text).ok()?, known)
}

fn fold_expr(expr: &Js, known: &dyn Fn(&str) -> Option<bool>) -> Option<bool> {
    match &expr.kind {
        JsKind::Bool(b) => Some(*b),
        JsKind::Call(callee, args) => match (&callee.kind, args.as_slice()) {
            (JsKind::Ident(f), [argument]) if f == "In" => match &argument.kind {
                JsKind::Str(id) => known(id),
                _ => None,
            },
            _ => None,
        },
        JsKind::Unary("!", operand) => fold_expr(operand, known).map(|b| !b),
        JsKind::Binary(op @ ("&&" | "||"), left, right) => {
            let stop = *op == "||";
            match (fold_expr(left, known), fold_expr(right, known)) {
                (Some(l), _) if l == stop => Some(stop),
                (_, Some(r)) if r == stop => Some(stop),
                (Some(_), Some(_)) => Some(!stop),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The JSON value of a literal expression (an initial value of the data model).
pub(super) fn to_json(text: &str) -> Result<serde_json::Value, JsError> {
    json(&parse(text)?)
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(String),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

/// Longest first, so that `===` is not read as `==` and `=`.
const PUNCTUATION: [&str; 35] = [
    "===", "!==", "**=", ">>>", "<<=", ">>=", "==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=",
    "-=", "*=", "/=", "%=", "=>", "**", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", "=", "&",
    "|", "^",
];
const SINGLE: [&str; 9] = ["(", ")", "[", "]", "{", "}", ",", ".", ";"];

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, JsError> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let c = text[i..].chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let start = i;
        if c.is_ascii_digit() {
            while i < text.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            let number = &text[start..i];
            let valid = number.split_once('.').map_or_else(
                || number.bytes().all(|b| b.is_ascii_digit()),
                |(whole, fraction)| {
                    whole.bytes().all(|b| b.is_ascii_digit())
                        && !fraction.is_empty()
                        && fraction.bytes().all(|b| b.is_ascii_digit())
                },
            );
            if !valid {
                return Err(JsError {
                    message: format!(
                        "the number `{number}` cannot be translated: write digits, with an optional decimal part"
                    ),
                    at: start,
                });
            }
            tokens.push((Token::Number(number.to_string()), start));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            while let Some(c) = text[i..].chars().next() {
                if c.is_alphanumeric() || c == '_' || c == '$' {
                    i += c.len_utf8();
                } else {
                    break;
                }
            }
            tokens.push((Token::Ident(text[start..i].to_string()), start));
        } else if c == '\'' || c == '"' {
            let (string, end) = string_literal(text, start)?;
            tokens.push((Token::Str(string), start));
            i = end;
        } else if let Some(p) = PUNCTUATION
            .iter()
            .chain(&SINGLE)
            .find(|p| text[i..].starts_with(**p))
        {
            tokens.push((Token::Punct(p), start));
            i += p.len();
        } else {
            return Err(JsError {
                message: format!("unexpected `{c}`"),
                at: start,
            });
        }
    }
    Ok(tokens)
}

fn string_literal(text: &str, start: usize) -> Result<(String, usize), JsError> {
    let quote = text[start..].chars().next().unwrap_or('"');
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, start + 1 + i + 1)),
            '\\' => {
                let escaped = chars.next().map(|(_, c)| c);
                match escaped {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some(c @ ('\\' | '\'' | '"')) => out.push(c),
                    _ => {
                        return Err(JsError {
                            message: "this escape sequence cannot be translated".into(),
                            at: start + 1 + i,
                        });
                    }
                }
            }
            '\n' => break,
            c => out.push(c),
        }
    }
    Err(JsError {
        message: "unterminated string".into(),
        at: start,
    })
}

#[derive(Clone, Debug)]
struct Js {
    kind: JsKind,
    at: usize,
    /// How deep the tree below this node goes, this node counting one.
    depth: u32,
}

/// How deeply an expression may nest, in its tree and in the parser's
/// recursion; past it the translation (which recurses over the tree) would
/// overflow the stack. The machine format's own limit is the same.
const MAX_DEPTH: u32 = crate::expr::MAX_DEPTH;

impl Js {
    /// A node over `kind`'s children, or an error at `at` when it would
    /// nest deeper than `MAX_DEPTH`.
    fn new(kind: JsKind, at: usize) -> Result<Js, JsError> {
        let children = match &kind {
            JsKind::Number(_)
            | JsKind::Str(_)
            | JsKind::Bool(_)
            | JsKind::Null
            | JsKind::Ident(_) => 0,
            JsKind::Array(items) => items.iter().map(|i| i.depth).max().unwrap_or(0),
            JsKind::Object(entries) => entries.iter().map(|(_, v)| v.depth).max().unwrap_or(0),
            JsKind::Member(object, _) => object.depth,
            JsKind::Index(a, b) | JsKind::Binary(_, a, b) => a.depth.max(b.depth),
            JsKind::Call(callee, args) => args.iter().map(|a| a.depth).fold(callee.depth, u32::max),
            JsKind::Unary(_, operand) => operand.depth,
            JsKind::Conditional(a, b, c) => a.depth.max(b.depth).max(c.depth),
        };
        if children >= MAX_DEPTH {
            return Err(too_deep(at));
        }
        Ok(Js {
            kind,
            at,
            depth: children + 1,
        })
    }
}

fn too_deep(at: usize) -> JsError {
    JsError {
        message: format!("the expression nests more than {MAX_DEPTH} levels deep"),
        at,
    }
}

#[derive(Clone, Debug)]
enum JsKind {
    Number(String),
    Str(String),
    Bool(bool),
    Null,
    Ident(String),
    Array(Vec<Js>),
    Object(Vec<(String, Js)>),
    Member(Box<Js>, String),
    Index(Box<Js>, Box<Js>),
    Call(Box<Js>, Vec<Js>),
    Unary(&'static str, Box<Js>),
    Binary(&'static str, Box<Js>, Box<Js>),
    Conditional(Box<Js>, Box<Js>, Box<Js>),
}

fn parse(text: &str) -> Result<Js, JsError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        end: text.len(),
        nesting: 0,
    };
    if parser.tokens.is_empty() {
        return Err(JsError {
            message: "empty expression".into(),
            at: 0,
        });
    }
    let expr = parser.conditional()?;
    if let Some((token, at)) = parser.tokens.get(parser.pos) {
        return Err(JsError {
            message: format!("`{}` cannot be translated here", describe(token)),
            at: *at,
        });
    }
    Ok(expr)
}

fn describe(token: &Token) -> String {
    match token {
        Token::Number(s) | Token::Ident(s) => s.clone(),
        Token::Str(s) => format!("'{s}'"),
        Token::Punct(p) => p.to_string(),
    }
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
    end: usize,
    /// How many `conditional`s and `unary`s are under way: the parser's
    /// recursion, bounded before it can overflow the stack.
    nesting: u32,
}

/// Binary operators by precedence level, loosest first, down to the
/// relations; `additive` and `multiplicative` parse the arithmetic below them.
const LEVELS: [&[&str]; 4] = [
    &["||"],
    &["&&"],
    &["===", "!==", "==", "!="],
    &["<", "<=", ">", ">="],
];

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(_, at)| *at)
    }

    fn eat(&mut self, punct: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(p)) if *p == punct) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: &str) -> Result<(), JsError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("expected `{punct}`")))
        }
    }

    fn unexpected(&self, wanted: &str) -> JsError {
        let found = match self.peek() {
            Some(t) => format!("`{}`", describe(t)),
            None => "the end".to_string(),
        };
        JsError {
            message: format!("{wanted}, found {found}"),
            at: self.at(),
        }
    }

    /// Runs `parse` one level deeper, or fails past `MAX_DEPTH` levels.
    fn nested(&mut self, parse: fn(&mut Parser) -> Result<Js, JsError>) -> Result<Js, JsError> {
        if self.nesting >= MAX_DEPTH {
            return Err(too_deep(self.at()));
        }
        self.nesting += 1;
        let result = parse(self);
        self.nesting -= 1;
        result
    }

    fn conditional(&mut self) -> Result<Js, JsError> {
        self.nested(Parser::conditional_unnested)
    }

    fn conditional_unnested(&mut self) -> Result<Js, JsError> {
        let condition = self.binary(0)?;
        if self.eat("?") {
            let then = self.conditional()?;
            self.expect(":")?;
            let otherwise = self.conditional()?;
            let at = condition.at;
            return Js::new(
                JsKind::Conditional(Box::new(condition), Box::new(then), Box::new(otherwise)),
                at,
            );
        }
        if let Some(Token::Punct(p)) = self.peek()
            && p.ends_with('=')
            && !matches!(*p, "==" | "===" | "!=" | "!==" | "<=" | ">=")
        {
            return Err(JsError {
                message: format!(
                    "an assignment (`{p}`) cannot be translated: expressions may not change the data model"
                ),
                at: self.at(),
            });
        }
        Ok(condition)
    }

    fn binary(&mut self, level: usize) -> Result<Js, JsError> {
        if level == LEVELS.len() {
            return self.additive();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(Token::Punct(p)) = self.peek() {
            let Some(op) = LEVELS[level].iter().find(|op| **op == *p) else {
                break;
            };
            self.pos += 1;
            let right = self.binary(level + 1)?;
            let at = left.at;
            left = Js::new(JsKind::Binary(op, Box::new(left), Box::new(right)), at)?;
        }
        Ok(left)
    }

    fn additive(&mut self) -> Result<Js, JsError> {
        let mut left = self.multiplicative()?;
        while let Some(op) = self.operator(&["+", "-"]) {
            let right = self.multiplicative()?;
            let at = left.at;
            left = Js::new(JsKind::Binary(op, Box::new(left), Box::new(right)), at)?;
        }
        Ok(left)
    }

    fn multiplicative(&mut self) -> Result<Js, JsError> {
        let mut left = self.unary()?;
        while let Some(op) = self.operator(&["*", "/", "%"]) {
            let right = self.unary()?;
            let at = left.at;
            left = Js::new(JsKind::Binary(op, Box::new(left), Box::new(right)), at)?;
        }
        Ok(left)
    }

    fn operator(&mut self, ops: &[&'static str]) -> Option<&'static str> {
        let Some(Token::Punct(p)) = self.peek() else {
            return None;
        };
        let op = ops.iter().find(|op| **op == *p).copied()?;
        self.pos += 1;
        Some(op)
    }

    fn unary(&mut self) -> Result<Js, JsError> {
        self.nested(Parser::unary_unnested)
    }

    fn unary_unnested(&mut self) -> Result<Js, JsError> {
        let at = self.at();
        if let Some(op) = self.operator(&["!", "-"]) {
            let operand = self.unary()?;
            return Js::new(JsKind::Unary(op, Box::new(operand)), at);
        }
        if let Some(Token::Ident(word)) = self.peek()
            && matches!(
                word.as_str(),
                "typeof" | "void" | "delete" | "new" | "function" | "instanceof" | "in"
            )
        {
            return Err(JsError {
                message: format!("`{word}` cannot be translated to the machine format"),
                at,
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Js, JsError> {
        let mut expr = self.primary()?;
        loop {
            let at = self.at();
            if self.eat(".") {
                match self.tokens.get(self.pos) {
                    Some((Token::Ident(name), _)) => {
                        let name = name.clone();
                        self.pos += 1;
                        expr = Js::new(JsKind::Member(Box::new(expr), name), at)?;
                    }
                    _ => return Err(self.unexpected("expected a property name")),
                }
            } else if self.eat("[") {
                let index = self.conditional()?;
                self.expect("]")?;
                expr = Js::new(JsKind::Index(Box::new(expr), Box::new(index)), at)?;
            } else if self.eat("(") {
                let args = self.list(")")?;
                expr = Js::new(JsKind::Call(Box::new(expr), args), at)?;
            } else if let Some(Token::Punct(p @ ("++" | "--"))) = self.peek() {
                return Err(JsError {
                    message: format!(
                        "`{p}` cannot be translated: expressions may not change the data model"
                    ),
                    at,
                });
            } else {
                return Ok(expr);
            }
        }
    }

    /// Comma-separated expressions up to `close`, which is consumed.
    fn list(&mut self, close: &str) -> Result<Vec<Js>, JsError> {
        let mut items = Vec::new();
        while !self.eat(close) {
            items.push(self.conditional()?);
            if !self.eat(",") {
                self.expect(close)?;
                break;
            }
        }
        Ok(items)
    }

    fn primary(&mut self) -> Result<Js, JsError> {
        let at = self.at();
        let Some((token, _)) = self.tokens.get(self.pos).cloned() else {
            return Err(self.unexpected("expected a value"));
        };
        self.pos += 1;
        let kind = match token {
            Token::Number(n) => JsKind::Number(n),
            Token::Str(s) => JsKind::Str(s),
            Token::Ident(word) => match word.as_str() {
                "true" => JsKind::Bool(true),
                "false" => JsKind::Bool(false),
                "null" => JsKind::Null,
                _ => JsKind::Ident(word),
            },
            Token::Punct("(") => {
                let inner = self.conditional()?;
                self.expect(")")?;
                return Ok(inner);
            }
            Token::Punct("[") => JsKind::Array(self.list("]")?),
            Token::Punct("{") => {
                let mut entries = Vec::new();
                while !self.eat("}") {
                    let key = match self.tokens.get(self.pos).cloned() {
                        Some((Token::Ident(k) | Token::Str(k), _)) => k,
                        _ => return Err(self.unexpected("expected a property name")),
                    };
                    self.pos += 1;
                    self.expect(":")?;
                    entries.push((key, self.conditional()?));
                    if !self.eat(",") {
                        self.expect("}")?;
                        break;
                    }
                }
                JsKind::Object(entries)
            }
            Token::Punct(p) => {
                self.pos -= 1;
                return Err(JsError {
                    message: format!("`{p}` cannot be translated here"),
                    at,
                });
            }
        };
        Js::new(kind, at)
    }
}

/// CEL precedence levels: the conditional 0, `||` 1, `&&` 2, relations 3,
/// `+ -` 4, `* %` 5, unary 6, postfix and primary 7.
fn level(expr: &Js) -> u8 {
    match &expr.kind {
        JsKind::Conditional(..) => 0,
        JsKind::Binary(op, ..) => match *op {
            "||" => 1,
            "&&" => 2,
            "+" | "-" => 4,
            "*" | "/" | "%" => 5,
            _ => 3,
        },
        JsKind::Unary(..) => 6,
        _ => 7,
    }
}

fn print(expr: &Js, names: &dyn Names, out: &mut String) -> Result<(), JsError> {
    let error = |message: String| JsError {
        message,
        at: expr.at,
    };
    match &expr.kind {
        JsKind::Number(n) => out.push_str(n),
        JsKind::Str(s) => quote(s, out),
        JsKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsKind::Null => out.push_str("null"),
        JsKind::Ident(name) if name == "undefined" => out.push_str("null"),
        _ if event_field(expr, names).is_some() => match event_field(expr, names) {
            Some(Ok(field)) => out.push_str(&field),
            Some(Err(message)) => return Err(error(message)),
            None => {}
        },
        JsKind::Ident(name) => {
            if names.is_data(name) {
                let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(error(format!(
                        "the variable name `{name}` is not a valid CEL field name"
                    )));
                }
                let _ = write!(out, "context.{name}");
            } else if matches!(
                name.as_str(),
                "_event" | "_sessionid" | "_name" | "_ioprocessors" | "_x"
            ) {
                return Err(error(format!(
                    "the system variable `{name}` has no counterpart in the machine format"
                )));
            } else {
                return Err(error(format!(
                    "unknown variable `{name}`: it is not declared in the data model"
                )));
            }
        }
        JsKind::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print(item, names, out)?;
            }
            out.push(']');
        }
        JsKind::Object(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                quote(key, out);
                out.push_str(": ");
                print(value, names, out)?;
            }
            out.push('}');
        }
        JsKind::Member(object, name) if name == "length" => {
            out.push_str("size(");
            print(object, names, out)?;
            out.push(')');
        }
        JsKind::Member(object, name) => {
            operand(object, 7, names, out)?;
            let _ = write!(out, ".{name}");
        }
        JsKind::Index(object, index) => {
            operand(object, 7, names, out)?;
            out.push('[');
            print(index, names, out)?;
            out.push(']');
        }
        JsKind::Call(callee, args) => {
            let JsKind::Ident(function) = &callee.kind else {
                return Err(error(
                    "method calls cannot be translated to the machine format".into(),
                ));
            };
            if function != "In" {
                return Err(error(format!(
                    "the function `{function}` cannot be translated: only `In('id')` can"
                )));
            }
            let [argument] = args.as_slice() else {
                return Err(error("`In` takes one state id".into()));
            };
            let JsKind::Str(id) = &argument.kind else {
                return Err(error("`In` needs a state id as a string literal".into()));
            };
            let Some(path) = names.state_path(id) else {
                return Err(JsError {
                    message: format!("`In('{id}')` names no state of the document"),
                    at: argument.at,
                });
            };
            out.push_str("in_state(");
            quote(&path, out);
            out.push(')');
        }
        JsKind::Unary(op, operand_expr) => {
            out.push_str(op);
            operand(operand_expr, 6, names, out)?;
        }
        JsKind::Binary(op, left, right) => {
            let cel = match *op {
                "/" => {
                    return Err(error(
                        "`/` cannot be translated: CEL divides integers without a fraction, ECMAScript does not".into(),
                    ));
                }
                "===" => "==",
                "!==" => "!=",
                op => op,
            };
            let l = level(expr);
            operand(left, l, names, out)?;
            let _ = write!(out, " {cel} ");
            operand(right, l + 1, names, out)?;
        }
        JsKind::Conditional(condition, then, otherwise) => {
            operand(condition, 1, names, out)?;
            out.push_str(" ? ");
            operand(then, 1, names, out)?;
            out.push_str(" : ");
            print(otherwise, names, out)?;
        }
    }
    Ok(())
}

/// `_event.name` as `event.type`, `_event.data.f` and `_event.data['f']` as
/// `event.f`; `None` where `expr` does not start with `_event`, and an error
/// for the rest of `_event`, which the machine format does not have.
fn event_field(expr: &Js, names: &dyn Names) -> Option<Result<String, String>> {
    let is_event = |e: &Js| matches!(&e.kind, JsKind::Ident(n) if n == "_event");
    let is_data = |e: &Js| matches!(&e.kind, JsKind::Member(o, n) if n == "data" && is_event(o));
    let field = |name: &str| {
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(format!("{}.{name}", names.event_data()))
        } else {
            Err(format!(
                "the event field `{name}` is not a valid CEL field name"
            ))
        }
    };
    match &expr.kind {
        JsKind::Member(object, name) if is_event(object) && name == "name" => {
            Some(Ok("event.type".into()))
        }
        JsKind::Member(object, name) if is_data(object) => Some(field(name)),
        JsKind::Index(object, index) if is_data(object) => match &index.kind {
            JsKind::Str(name) => Some(field(name)),
            _ => Some(Err("`_event.data` can be indexed by a string literal only".into())),
        },
        JsKind::Member(object, name) if is_event(object) => Some(Err(format!(
            "`_event.{name}` has no counterpart in the machine format: only `_event.name` and `_event.data.FIELD` have"
        ))),
        JsKind::Ident(name) if name == "_event" => Some(Err(
            "`_event` has no counterpart in the machine format: only `_event.name` and `_event.data.FIELD` have".into(),
        )),
        _ => None,
    }
}

/// Prints `expr` where the context needs at least precedence `min`,
/// parenthesised when it binds more loosely.
fn operand(expr: &Js, min: u8, names: &dyn Names, out: &mut String) -> Result<(), JsError> {
    if level(expr) < min {
        out.push('(');
        print(expr, names, out)?;
        out.push(')');
        Ok(())
    } else {
        print(expr, names, out)
    }
}

/// A CEL string literal, quoted as the expression printer quotes it.
pub(super) fn quote(s: &str, out: &mut String) {
    // Writing to a `String` cannot fail.
    let _ = crate::expr::write_quoted(s, out);
}

fn json(expr: &Js) -> Result<serde_json::Value, JsError> {
    use serde_json::Value;
    let not_literal = || {
        JsError {
        message: "an initial value must be a literal (a number, string, boolean, null, array or object of literals)".into(),
        at: expr.at,
    }
    };
    Ok(match &expr.kind {
        JsKind::Number(n) => number(n, false).ok_or_else(not_literal)?,
        JsKind::Unary("-", inner) => match &inner.kind {
            JsKind::Number(n) => number(n, true).ok_or_else(not_literal)?,
            _ => return Err(not_literal()),
        },
        JsKind::Str(s) => Value::String(s.clone()),
        JsKind::Bool(b) => Value::Bool(*b),
        JsKind::Null => Value::Null,
        JsKind::Array(items) => Value::Array(items.iter().map(json).collect::<Result<_, _>>()?),
        JsKind::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| Ok((k.clone(), json(v)?)))
                .collect::<Result<_, JsError>>()?,
        ),
        _ => return Err(not_literal()),
    })
}

fn number(text: &str, negative: bool) -> Option<serde_json::Value> {
    if !text.contains('.') {
        let n: i64 = text.parse().ok()?;
        return Some(serde_json::Value::from(if negative { -n } else { n }));
    }
    let f: f64 = text.parse().ok()?;
    serde_json::Number::from_f64(if negative { -f } else { f }).map(serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doc;

    impl Names for Doc {
        fn is_data(&self, name: &str) -> bool {
            matches!(name, "Var1" | "list" | "o")
        }
        fn state_path(&self, id: &str) -> Option<String> {
            (id == "s01").then(|| "s0.s01".to_string())
        }
        fn event_data(&self) -> &str {
            "event"
        }
    }

    fn cel(text: &str) -> String {
        to_cel(text, &Doc).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn translates_the_common_subset() {
        assert_eq!(cel("Var1 === 1"), "context.Var1 == 1");
        assert_eq!(
            cel("Var1!==1 || Var1 == 2"),
            "context.Var1 != 1 || context.Var1 == 2"
        );
        assert_eq!(
            cel("In('s01') && !In('s01')"),
            r#"in_state("s0.s01") && !in_state("s0.s01")"#
        );
        assert_eq!(cel("(Var1 + 1) * 2 % 3"), "(context.Var1 + 1) * 2 % 3");
        assert_eq!(cel("Var1 - (1 - 2)"), "context.Var1 - (1 - 2)");
        assert_eq!(cel("'a\"b' + \"c\""), r#""a\"b" + "c""#);
        assert_eq!(
            cel("list.length > 0 ? list[0] : o.f"),
            "size(context.list) > 0 ? context.list[0] : context.o.f"
        );
        assert_eq!(cel("Var1 < 2 == true"), "context.Var1 < 2 == true");
        assert_eq!(cel("true == Var1 < 2"), "true == (context.Var1 < 2)");
        assert_eq!(cel("-Var1 >= -1.5"), "-context.Var1 >= -1.5");
        assert_eq!(cel("[1, 'x', {a: 2}]"), r#"[1, "x", {"a": 2}]"#);
        assert_eq!(
            cel("_event.name == 'e' && _event.data.a + _event.data['b'] > 1"),
            r#"event.type == "e" && event.a + event.b > 1"#
        );
        assert_eq!(cel("Var1 === undefined"), "context.Var1 == null");
    }

    #[test]
    fn rejects_what_has_no_counterpart() {
        for (text, wanted) in [
            ("_event.data", "only `_event.name`"),
            ("_event.origin == 1", "`_event.origin`"),
            ("_sessionid", "system variable `_sessionid`"),
            ("typeof Var1", "`typeof`"),
            ("Var1 = 2", "assignment"),
            ("Var1++", "`++`"),
            ("Var1 / 2", "`/`"),
            ("foo", "unknown variable `foo`"),
            ("Math.max(1, 2)", "method calls"),
            ("f(1)", "function `f`"),
            ("In('nowhere')", "names no state"),
            ("1 +", "expected a value"),
            ("0x10", "number"),
            ("'open", "unterminated"),
            ("", "empty"),
        ] {
            let error = to_cel(text, &Doc).unwrap_err();
            assert!(error.message.contains(wanted), "{text}: {}", error.message);
            assert!(error.at <= text.len());
        }
    }

    #[test]
    fn folds_conditions_on_known_states() {
        let known = |id: &str| match id {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
        assert_eq!(fold("In('on')", &known), Some(true));
        assert_eq!(fold("!In('on') || In('off')", &known), Some(false));
        assert_eq!(fold("In('off') && In('unknown')", &known), Some(false));
        assert_eq!(fold("In('on') || In('unknown')", &known), Some(true));
        assert_eq!(fold("In('on') && In('unknown')", &known), None);
        assert_eq!(fold("true && Var1", &known), None);
    }

    #[test]
    fn literals_become_json() {
        assert_eq!(to_json("-2").unwrap(), serde_json::json!(-2));
        assert_eq!(
            to_json("{a: [1, 2.5, 'x'], 'b': null, c: true}").unwrap(),
            serde_json::json!({"a": [1, 2.5, "x"], "b": null, "c": true})
        );
        assert!(to_json("Var1").is_err());
        assert!(to_json("1 + 1").is_err());
    }
}
