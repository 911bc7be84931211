//! The YAML document as a plain tree of nodes with byte spans.
//!
//! serde-saphyr parses the text; a hand-written `Deserialize` takes every node
//! through `deserialize_any` wrapped in `Spanned`, so no position is lost to
//! serde's buffering of untagged enums. The machine file's shapes are then read
//! from this tree by hand, which lets every problem be reported at its node and
//! all of them at once instead of stopping at the first.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, MessageFormatter, Spanned};

use crate::diagnostic::{Diagnostic, LoadError};
use crate::span::{SourceFile, Span};

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub kind: Kind,
    /// Where the node is written; a mapping or a sequence spans its children.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Debug)]
pub(super) struct Scalar {
    pub value: ScalarValue,
    /// The string's content for strings; the text as written for the others
    /// (`0x1F`, `1.50`, `~`), so names and expressions keep their spelling.
    pub text: Box<str>,
    /// Byte offset in the file where the content starts: after the opening
    /// quote of a quoted scalar, at the first content character of a block
    /// scalar.
    pub text_offset: u32,
    /// The blank lines a block scalar's value starts with, which lie before
    /// `text_offset` in the file.
    pub leading_blank_lines: u32,
}

impl Scalar {
    /// The text from its first content character on, and where that is.
    pub fn content(&self) -> (&str, u32) {
        (
            &self.text[self.leading_blank_lines as usize..],
            self.text_offset,
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum ScalarValue {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str,
}

impl Node {
    pub fn scalar(&self) -> Option<&Scalar> {
        match &self.kind {
            Kind::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(
            self.kind,
            Kind::Scalar(Scalar {
                value: ScalarValue::Null,
                ..
            })
        )
    }

    /// The text of a scalar that is not null: the form every name may take.
    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(s) if !matches!(s.value, ScalarValue::Null) => Some(&s.text),
            _ => None,
        }
    }

    /// What the node is, for messages: "a list", "a string".
    pub fn describe(&self) -> &'static str {
        match &self.kind {
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
            Kind::Scalar(s) => match s.value {
                ScalarValue::Null => "nothing",
                ScalarValue::Bool(_) => "a boolean",
                ScalarValue::Int(_) | ScalarValue::UInt(_) | ScalarValue::Float(_) => "a number",
                ScalarValue::Str => "a string",
            },
        }
    }
}

/// The tree as serde-saphyr delivers it, before spans become byte ranges.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Raw, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }

    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw, D::Error> {
        Raw::deserialize(deserializer)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::UInt(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom(format!("the number {v} is too large")))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        u64::try_from(v)
            .map(Raw::UInt)
            .map_err(|_| E::custom(format!("the number {v} is too large")))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Raw, E> {
        Err(E::custom(
            "binary values are not supported in machine files",
        ))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key()? {
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

/// Parses one YAML document into a tree of nodes, or the syntax error, as
/// the one-element list that `parse` returns.
pub(super) fn read(file: &SourceFile) -> Result<Node, Vec<Diagnostic>> {
    if let Some(node) = super::plain::read(file) {
        return Ok(node);
    }
    read_with_serde_saphyr(file)
}

/// `read` through serde-saphyr's deserializer, which knows every YAML
/// feature and gives the messages of every error.
pub(super) fn read_with_serde_saphyr(file: &SourceFile) -> Result<Node, Vec<Diagnostic>> {
    with_room(&file.text, || {
        match serde_saphyr::from_str_with_options::<Spanned<Raw>>(
            &file.text,
            options(file.text.len()),
        ) {
            Ok(raw) => Ok(convert(raw, file)),
            Err(error) => Err(vec![syntax_error(&error, file)]),
        }
    })
}

/// Runs `read` of `text` with the stack it takes: serde-saphyr recurses per
/// level of nesting, up to its depth limit, and every level opens with a
/// bracket, an indicator (`-`, `?`, `:`) or a line break, so a scalar
/// needs none and a file at most the limit.
fn with_room<R>(text: &str, read: impl FnOnce() -> R) -> R {
    let levels = text
        .bytes()
        .filter(|b| matches!(b, b'[' | b'{' | b'-' | b'?' | b':' | b'\n'))
        .take(crate::stack::YAML_DEPTH)
        .count();
    crate::stack::with_stack(crate::stack::for_yaml(levels), read)
}

/// Whether `text`, written as a plain scalar on its own, reads back as that
/// very string (and not as a number, a boolean, null, a list or an error).
pub(super) fn reads_as_string(text: &str) -> bool {
    matches!(plain_value(text), Some(ScalarValue::Str))
}

/// What serde-saphyr reads `text`, a plain scalar's content, as when it is
/// written on its own: `None` when that is not a scalar, an error, or a
/// string other than `text`.
pub(super) fn plain_value(text: &str) -> Option<ScalarValue> {
    let raw = with_room(text, || {
        serde_saphyr::from_str_with_options::<Raw>(text, options(text.len()))
    });
    match raw.ok()? {
        Raw::Str(s) => (s == text).then_some(ScalarValue::Str),
        Raw::Null => Some(ScalarValue::Null),
        Raw::Bool(b) => Some(ScalarValue::Bool(b)),
        Raw::Int(i) => Some(ScalarValue::Int(i)),
        Raw::UInt(u) => Some(ScalarValue::UInt(u)),
        Raw::Float(f) => Some(ScalarValue::Float(f)),
        Raw::Seq(_) | Raw::Map(_) => None,
    }
}

/// Whether `text`, written as a plain scalar on its own, reads back as a
/// scalar (a string, a number or a boolean) written exactly so.
pub(super) fn reads_as_text(text: &str) -> bool {
    read(&SourceFile::new("", text)).is_ok_and(|node| node.text() == Some(text))
}

/// The node and event limits for a text of `len` bytes: serde-saphyr's
/// defaults (250,000 nodes, 1,000,000 events), or more for a larger text.
/// Without aliases every node takes at least two bytes of text (itself and
/// what separates it from the next), so a file written out honestly never
/// reaches half a node per byte, however many states it has (a 100,000-state
/// machine has about one node per seven bytes), while an alias bomb, whose
/// nodes come from expansions and not from text, still stops there: its
/// tree can grow only in proportion to the file.
const NODES_PER_BYTE: usize = 2;

/// The most nodes a text of `len` bytes may have.
pub(super) fn node_budget(len: usize) -> usize {
    (len / NODES_PER_BYTE).max(250_000)
}

fn options(len: usize) -> serde_saphyr::Options {
    let nodes = node_budget(len);
    serde_saphyr::options! {
        // Only `true` and `false` are booleans: `on`, `yes` and `off` are names.
        strict_booleans: true,
        // Repeated keys reach the tree so that the error can show both places.
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_nodes: nodes,
            // Each node is one event, a collection two (its start and end).
            max_events: (2 * nodes).max(1_000_000),
        },
    }
}

fn syntax_error(error: &serde_saphyr::Error, file: &SourceFile) -> Diagnostic {
    let error = error.without_snippet();
    let message = serde_saphyr::UserMessageFormatter
        .format_message(error)
        .into_owned();
    let mut span = error
        .location()
        .map(|location| location_span(&location, file))
        .unwrap_or_default();
    // The tab message also says "indentation", so it is recognised first.
    let help = if message.contains("tab") {
        span = first_tab_before(span, file);
        Some("indent with spaces; YAML does not allow tabs for indentation".to_string())
    } else if message.contains("did not find expected") || message.contains("indentation") {
        Some(
            "check the indentation: the keys of one mapping and the items of one list \
             start in the same column"
                .to_string(),
        )
    } else {
        None
    };
    let mut diagnostic = LoadError::Syntax {
        message: format!("invalid YAML: {message}"),
    }
    .at(span, []);
    diagnostic.help = help;
    diagnostic
}

/// The parser reports a tab error just after the tab; the first tab on the
/// line before that point is what the author has to change.
fn first_tab_before(span: Span, file: &SourceFile) -> Span {
    let Some(before) = file.text.get(..span.start as usize) else {
        return span;
    };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    match before[line_start..].find('\t') {
        Some(i) => Span::new(line_start + i, line_start + i + 1),
        None => span,
    }
}

/// The byte range of a serde-saphyr location: its byte span where the parser
/// knows it, else an empty range at its line and column.
fn location_span(location: &Location, file: &SourceFile) -> Span {
    let span = location.span();
    if let (Some(start), Some(len)) = (span.byte_offset(), span.byte_len()) {
        let start = start as usize;
        let end = start.saturating_add(len as usize);
        if end <= file.text.len() {
            return Span::new(start, end);
        }
    }
    if location.line() == 0 {
        return Span::default();
    }
    let offset = file.offset(location.line() as usize, location.column() as usize) as usize;
    Span::new(offset, offset)
}

fn convert(raw: Spanned<Raw>, file: &SourceFile) -> Node {
    // An alias is reported where it is used, but its text lives where the
    // anchored node was defined.
    let span = location_span(&raw.referenced, file);
    let defined = location_span(&raw.defined, file);
    let (value, text) = match raw.value {
        Raw::Seq(items) => {
            let items: Vec<Node> = items.into_iter().map(|i| convert(i, file)).collect();
            let span = items.iter().fold(span, |span, item| span.to(item.span));
            return Node {
                kind: Kind::Seq(items),
                span,
            };
        }
        Raw::Map(entries) => {
            let entries: Vec<(Node, Node)> = entries
                .into_iter()
                .map(|(k, v)| (convert(k, file), convert(v, file)))
                .collect();
            let span = entries
                .iter()
                .fold(span, |span, (k, v)| span.to(k.span).to(v.span));
            return Node {
                kind: Kind::Map(entries),
                span,
            };
        }
        Raw::Str(s) => (ScalarValue::Str, s),
        Raw::Null => (ScalarValue::Null, String::new()),
        Raw::Bool(b) => (ScalarValue::Bool(b), String::new()),
        Raw::Int(i) => (ScalarValue::Int(i), String::new()),
        Raw::UInt(u) => (ScalarValue::UInt(u), String::new()),
        Raw::Float(f) => (ScalarValue::Float(f), String::new()),
    };
    scalar_node(value, text, span, defined, file)
}

/// A scalar node: `text` is a string's content (and ignored for the other
/// values, whose text is what the file has at `defined`).
pub(super) fn scalar_node(
    value: ScalarValue,
    text: String,
    span: Span,
    defined: Span,
    file: &SourceFile,
) -> Node {
    let text = match value {
        ScalarValue::Str => text,
        ScalarValue::Null => written(file, defined, ""),
        ScalarValue::Bool(b) => written(file, defined, &b.to_string()),
        ScalarValue::Int(i) => written(file, defined, &i.to_string()),
        ScalarValue::UInt(u) => written(file, defined, &u.to_string()),
        ScalarValue::Float(f) => written(file, defined, &f.to_string()),
    };
    let quoted = matches!(
        file.text.as_bytes().get(defined.start as usize),
        Some(b'"' | b'\'')
    );
    let (text_offset, leading_blank_lines) = if quoted {
        (defined.start + 1, 0)
    } else {
        (
            defined.start,
            (text.len() - text.trim_start_matches('\n').len()) as u32,
        )
    };
    Node {
        kind: Kind::Scalar(Scalar {
            value,
            text: text.into_boxed_str(),
            text_offset,
            leading_blank_lines,
        }),
        span,
    }
}

/// The scalar's text as written in the file, or `fallback` where the parser
/// gave no byte range.
fn written(file: &SourceFile, span: Span, fallback: &str) -> String {
    match file.text.get(span.range()) {
        Some(text) if !text.is_empty() => text.to_string(),
        _ => fallback.to_string(),
    }
}
