//! The tree of a YAML file read straight from the events of serde-saphyr's
//! own parser (granit-parser), for files written with mappings, lists and
//! scalars alone, as nearly every machine file is. serde-saphyr's
//! deserializer reads the same events about three times slower, since every
//! node goes through serde's visitors and `Spanned` (a 3.5 MB machine: 400 ms
//! against 124 ms for the events alone).
//!
//! Anything else — an anchor, an alias, a tag, a merge key, a key that is a
//! collection, a second document, a syntax error, a limit of serde-saphyr's
//! budget reached — gives `None`, and the file goes to serde-saphyr, which
//! knows every YAML feature and words every error. Where this reader gives a
//! tree, it is serde-saphyr's node for node, span for span: plain scalars
//! other than words are resolved by serde-saphyr itself, and the tests
//! compare both trees on every YAML file of the repository and on generated
//! ones.

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};

use super::node::{self, Kind, Node, ScalarValue};
use crate::span::{SourceFile, Span};

/// A collection whose end has not been read yet.
enum Open {
    Seq {
        span: Span,
        items: Vec<Node>,
    },
    Map {
        span: Span,
        entries: Vec<(Node, Node)>,
        key: Option<Node>,
    },
}

/// The file's tree, or `None` when serde-saphyr has to read it.
pub(super) fn read(file: &SourceFile) -> Option<Node> {
    // serde-saphyr's parser options for its default budget, which `node`
    // keeps but for the number of nodes.
    let budget = serde_saphyr::Budget::default();
    let options = granit_parser::options! {
        simple_key_max_lookahead: budget.simple_key_max_lookahead,
        flow_nesting_limit: budget.flow_nesting_limit,
        block_nesting_limit: granit_parser::Options::default()
            .block_nesting_limit
            .max(budget.max_depth.saturating_add(1)),
        emit_comments: false,
    };
    let max_nodes = node::node_budget(file.text.len());
    let mut nodes = 0usize;
    let mut documents = 0;
    let mut open: Vec<Open> = Vec::new();
    let mut root = None;
    let mut resolved: HashMap<String, Option<ScalarValue>> = HashMap::new();
    for item in Parser::new_from_str_with_options(&file.text, options) {
        let (event, span) = item.ok()?;
        let node = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return None;
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                let at = byte_span(&span, file)?;
                let value = match style {
                    ScalarStyle::Plain => plain(&text, &mut resolved)?,
                    _ => ScalarValue::Str,
                };
                node::scalar_node(value, text.into_owned(), at, at, file)
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                let is_map = matches!(event, Event::MappingStart(..));
                if anchor != 0 || tag.is_some() || open.len() >= budget.max_depth {
                    return None;
                }
                nodes += 1;
                let span = byte_span(&span, file)?;
                open.push(if is_map {
                    Open::Map {
                        span,
                        entries: Vec::new(),
                        key: None,
                    }
                } else {
                    Open::Seq {
                        span,
                        items: Vec::new(),
                    }
                });
                continue;
            }
            // A collection's vector is cut to its length as it closes: most
            // mappings of a machine hold one or two entries, and a vector
            // grown by pushes holds room for four, in a tree that lives
            // as long as the file's fixes may be asked for.
            Event::SequenceEnd => match open.pop()? {
                Open::Seq { span, mut items } => {
                    items.shrink_to_fit();
                    let span = items.iter().fold(span, |span, item| span.to(item.span));
                    Node {
                        kind: Kind::Seq(items),
                        span,
                    }
                }
                Open::Map { .. } => return None,
            },
            Event::MappingEnd => match open.pop()? {
                Open::Map {
                    span,
                    mut entries,
                    key: None,
                } => {
                    entries.shrink_to_fit();
                    let span = entries
                        .iter()
                        .fold(span, |span, (k, v)| span.to(k.span).to(v.span));
                    Node {
                        kind: Kind::Map(entries),
                        span,
                    }
                }
                _ => return None,
            },
            // Aliases, and whatever else a newer parser may emit.
            _ => return None,
        };
        if !matches!(node.kind, Kind::Seq(_) | Kind::Map(_)) {
            nodes += 1;
        }
        if nodes > max_nodes {
            return None;
        }
        match open.last_mut() {
            None if root.is_none() => root = Some(node),
            None => return None,
            Some(Open::Seq { items, .. }) => items.push(node),
            Some(Open::Map { entries, key, .. }) => match key.take() {
                Some(k) => entries.push((k, node)),
                // serde-saphyr merges the entries of a `<<` key into the
                // mapping, and its keys that are collections are its own.
                None => match &node.kind {
                    Kind::Scalar(s) if &*s.text != "<<" => *key = Some(node),
                    _ => return None,
                },
            },
        }
    }
    if !open.is_empty() {
        return None;
    }
    root
}

/// What a plain scalar is: null, a boolean, or a word (a string) by YAML's
/// core schema as serde-saphyr reads it with strict booleans; anything else
/// (a number, `.inf`, a string that starts with a digit or a sign) as
/// serde-saphyr reads it on its own, once per text.
fn plain(text: &str, resolved: &mut HashMap<String, Option<ScalarValue>>) -> Option<ScalarValue> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(ScalarValue::Null),
        "true" | "True" | "TRUE" => return Some(ScalarValue::Bool(true)),
        "false" | "False" | "FALSE" => return Some(ScalarValue::Bool(false)),
        _ => {}
    }
    // Numbers, `.inf` and `.nan` start with a digit, a sign or a dot.
    if text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return Some(ScalarValue::Str);
    }
    if let Some(value) = resolved.get(text) {
        return *value;
    }
    let value = node::plain_value(text);
    resolved.insert(text.to_string(), value);
    value
}

/// The event's byte range, as serde-saphyr's `Location` gives it.
fn byte_span(span: &granit_parser::Span, file: &SourceFile) -> Option<Span> {
    let start = span.start.byte_offset()?;
    let end = span.end.byte_offset()?.max(start);
    (end <= file.text.len()).then(|| Span::new(start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Both trees, or what differs first.
    fn same(a: &Node, b: &Node, path: &str) -> Result<(), String> {
        if a.span != b.span {
            return Err(format!("{path}: span {:?} != {:?}", a.span, b.span));
        }
        match (&a.kind, &b.kind) {
            (Kind::Scalar(x), Kind::Scalar(y)) => {
                let values = format!("{:?}", x.value) == format!("{:?}", y.value);
                if !values
                    || x.text != y.text
                    || x.text_offset != y.text_offset
                    || x.leading_blank_lines != y.leading_blank_lines
                {
                    return Err(format!("{path}: {x:?} != {y:?}"));
                }
                Ok(())
            }
            (Kind::Seq(x), Kind::Seq(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .try_for_each(|(i, (x, y))| same(x, y, &format!("{path}[{i}]"))),
            (Kind::Map(x), Kind::Map(y)) if x.len() == y.len() => {
                x.iter().zip(y).enumerate().try_for_each(|(i, (x, y))| {
                    same(&x.0, &y.0, &format!("{path}.key{i}"))?;
                    same(&x.1, &y.1, &format!("{path}.{i}"))
                })
            }
            _ => Err(format!("{path}: {:?} != {:?}", a.kind, b.kind)),
        }
    }

    /// This reader's tree equals serde-saphyr's wherever it gives one;
    /// `Some(true)` when it did.
    fn check(text: &str) -> Result<bool, String> {
        let file = SourceFile::new("t.yaml", text);
        let Some(fast) = read(&file) else {
            return Ok(false);
        };
        match node::read_with_serde_saphyr(&file) {
            Ok(slow) => same(&fast, &slow, "$").map(|()| true),
            Err(e) => Err(format!("serde-saphyr refuses it: {e:?}")),
        }
    }

    #[test]
    fn reads_what_serde_saphyr_reads_in_every_yaml_file_of_the_repository() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        let mut dirs = vec![
            root.join("tests"),
            root.join("machines"),
            root.join("docs"),
            root.join("bench"),
            root.join("editors"),
        ];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 50, "{} YAML files", files.len());
        let mut read_fast = 0;
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            match check(&text) {
                Ok(fast) => read_fast += usize::from(fast),
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
        // Most files are read here; the others use anchors, tags or errors.
        assert!(
            read_fast * 4 > files.len() * 3,
            "{read_fast} of {}",
            files.len()
        );
    }

    #[test]
    fn leaves_to_serde_saphyr_what_only_it_reads() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "<<: {a: 1}\nb: 2\n",
            "? [a, b]\n: c\n",
            "a: 1\n---\nb: 2\n",
            "a: [1, 2\n",
            "a:\n\tb: 1\n",
            "",
            "a: 1e999\n",
        ] {
            assert_eq!(check(text), Ok(false), "{text:?}");
        }
    }

    #[test]
    fn reads_scalars_of_every_kind_as_serde_saphyr_does() {
        let scalars = [
            "word",
            "_x",
            "3d",
            "7d",
            "0",
            "-1",
            "+1",
            "012",
            "0x1F",
            "0X1F",
            "0o17",
            "1_000",
            "1.5",
            "-0.0",
            ".5",
            "1e3",
            ".inf",
            "-.inf",
            ".nan",
            "+.nan",
            "~",
            "null",
            "Null",
            "NULL",
            "nul",
            "true",
            "True",
            "TRUE",
            "tRue",
            "yes",
            "on",
            "off",
            "no",
            "y",
            "n",
            "inf",
            "nan",
            "Infinity",
            "señal",
            "ñandú",
            "日本",
            "€5",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "2026-12-01",
            "12:30",
            "1,2",
            "a b",
            "a:b",
            "\"quoted\"",
            "'single'",
            "'it''s'",
            "\"\\u00e9\"",
        ];
        for scalar in scalars {
            for text in [
                format!("{scalar}\n"),
                format!("key: {scalar}\n"),
                format!("- {scalar}\n- x\n"),
                format!("m: {{ k: {scalar}, j: [{scalar}] }}\n"),
                format!("{scalar}: v\n"),
            ] {
                check(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            }
        }
    }

    #[test]
    fn reads_block_scalars_comments_and_empty_values_as_serde_saphyr_does() {
        for text in [
            "a: |\n  line\n  line two\nb: >\n  folded\n  text\n",
            "a: |-\n\n\n  after blanks\n",
            "a: >+\n  kept\n\n",
            "# head\na: 1 # tail\n# between\nb:\n  - x # item\n",
            "a:\nb: ~\nc: []\nd: {}\n",
            "a:\n  b:\n    c:\n      - d: e\n        f: [g, {h: i}]\n",
            "--- \na: 1\n...\n",
            "multi: this is\n  folded plain\nnext: 1\n",
            "\u{feff}a: 1\n",
            "a: b\na: c\n",
            "'quoted key': 1\n\"dq\": 2\n",
        ] {
            assert_eq!(check(text), Ok(true), "{text:?}");
        }
    }

    /// A YAML value as text, in block or flow style, with comments: what
    /// the property below writes out.
    #[derive(Clone, Debug)]
    enum Value {
        Scalar(&'static str),
        Seq(Vec<Value>),
        Map(Vec<(&'static str, Value)>),
    }

    const SCALARS: &[&str] = &[
        "a", "s1.s2", "3d", "0", "-12", "1.5", "~", "null", "true", "False", "yes", "\"q\"",
        "'it''s'", "señal", "1e3", "-0.5", "0x1F", "a b", "\"#id\"", "a#b", "\"\"", "E1 E2",
    ];

    fn value() -> impl Strategy<Value = Value> {
        let leaf = proptest::sample::select(SCALARS).prop_map(Value::Scalar);
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Seq),
                proptest::collection::vec((proptest::sample::select(&SCALARS[..12]), inner), 0..4)
                    .prop_map(Value::Map),
            ]
        })
    }

    fn flow(v: &Value, out: &mut String) {
        match v {
            Value::Scalar(s) => out.push_str(s),
            Value::Seq(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    flow(item, out);
                }
                out.push(']');
            }
            Value::Map(entries) => {
                out.push('{');
                for (i, (k, item)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(k);
                    out.push_str(": ");
                    flow(item, out);
                }
                out.push('}');
            }
        }
    }

    /// Block style at `indent`, flow style for the collections `flows`
    /// picks (one bit per collection, in order).
    fn block(v: &Value, indent: usize, flows: &mut u64, out: &mut String) {
        let pad = " ".repeat(indent);
        let as_flow = |flows: &mut u64| {
            *flows = flows.rotate_right(1);
            *flows & 1 == 1
        };
        match v {
            Value::Seq(items) if !items.is_empty() && !as_flow(flows) => {
                for item in items {
                    out.push_str(&pad);
                    out.push_str("- ");
                    if matches!(item, Value::Scalar(_)) {
                        flow(item, out);
                        out.push_str(" # note\n");
                    } else {
                        out.push('\n');
                        block(item, indent + 2, flows, out);
                    }
                }
            }
            Value::Map(entries) if !entries.is_empty() && !as_flow(flows) => {
                for (k, item) in entries {
                    out.push_str(&pad);
                    out.push_str(k);
                    out.push(':');
                    if matches!(item, Value::Scalar(_)) {
                        out.push(' ');
                        flow(item, out);
                        out.push('\n');
                    } else {
                        out.push('\n');
                        block(item, indent + 2, flows, out);
                    }
                }
            }
            _ => {
                out.push_str(&pad);
                flow(v, out);
                out.push('\n');
            }
        }
    }

    proptest! {
        #[test]
        fn reads_generated_documents_as_serde_saphyr_does(v in value(), flows in any::<u64>()) {
            let mut text = String::from("# a machine\n");
            block(&v, 0, &mut { flows }, &mut text);
            // Nothing in them needs serde-saphyr, so this reader reads them.
            prop_assert_eq!(check(&text), Ok(true), "{}", text);
        }
    }
}
