//! Completion: what may be written at the cursor.
//!
//! Targets valid from the transition's source (`sibling`, `.child`,
//! `#id`), event names, effect names, context fields and `event.` payload
//! fields inside expressions, in YAML the keys of the format (from its
//! JSON Schema, with their descriptions), in block or flow style, and in
//! the DSL the keywords its grammar accepts at the cursor. The place is read from the text
//! around the cursor, which is often incomplete while one types; the names
//! come from the document's tree, or from the last one that parsed when
//! the text does not.

use crate::model::{Name, StateId};
use crate::span::Span;
use crate::syntax::Syntax;
use crate::syntax::tree::{MachineDoc, StateDoc};

use super::symbols::{self, enclosing_state};
use super::{Analysis, Kind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    State,
    Event,
    Effect,
    Context,
    Payload,
    Key,
    Keyword,
}

/// One proposal: `label` written over `replace`.
#[derive(Clone, Debug)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    pub replace: Span,
}

/// What the cursor is writing.
#[derive(Debug, PartialEq)]
enum Place {
    /// A target of a transition from the state (siblings, children, ids).
    Target,
    /// A target of `initial` (children, ids).
    Initial,
    Event,
    Effect,
    Context,
    Payload,
    /// A key of the YAML format at this path of keys (`-` for an item).
    Key(Vec<String>),
}

/// The proposals at byte `offset`; `last_parsed` is the document's last
/// analysis whose text parsed, for the names when this one does not.
pub fn complete(
    analysis: &Analysis,
    last_parsed: Option<&Analysis>,
    offset: u32,
) -> Vec<Completion> {
    let Kind::Machine(syntax) = analysis.kind else {
        return Vec::new();
    };
    let text = &analysis.file.text;
    let offset = (offset as usize).min(text.len());
    if !text.is_char_boundary(offset) {
        return Vec::new();
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..offset];
    let keywords = match syntax {
        Syntax::Dsl => keywords(text, offset),
        Syntax::Yaml => Vec::new(),
    };
    let (place, partial) = match place(text, line_start, line, syntax) {
        // Inside an expression, the names only.
        Some((place @ (Place::Context | Place::Payload), partial)) => (place, partial),
        Some(found) => {
            let mut out = names(analysis, last_parsed, offset, found);
            out.extend(keywords);
            return out;
        }
        None => return keywords,
    };
    names(analysis, last_parsed, offset, (place, partial))
}

/// The keywords of the DSL the grammar accepts where the word at `offset`
/// starts, that the word begins.
fn keywords(text: &str, offset: usize) -> Vec<Completion> {
    let written = text[..offset]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .count();
    let start = offset - written;
    let partial = &text[start..offset];
    // After `.`, `#` or a backtick the word is a name, never a keyword.
    if text[..start].ends_with(['.', '#', '`']) {
        return Vec::new();
    }
    crate::syntax::dsl::keywords_at_end(&text[..start])
        .into_iter()
        .filter(|k| k.starts_with(partial))
        .map(|label| Completion {
            label,
            kind: CompletionKind::Keyword,
            detail: Some("keyword".into()),
            replace: Span::new(start, offset),
        })
        .collect()
}

/// The names that may be written at `place`, the part `partial` of one
/// written before `offset`.
fn names(
    analysis: &Analysis,
    last_parsed: Option<&Analysis>,
    offset: usize,
    (place, partial): (Place, &str),
) -> Vec<Completion> {
    let replace = Span::new(offset - partial.len(), offset);
    let Some(source) = analysis.doc.as_ref().map(|d| (analysis, d)).or_else(|| {
        let last = last_parsed?;
        last.doc.as_ref().map(|d| (last, d))
    }) else {
        return match place {
            Place::Key(path) => keys(&path, replace),
            _ => Vec::new(),
        };
    };
    let (named, doc) = source;
    let item = |label: String, kind, detail: Option<String>| Completion {
        label,
        kind,
        detail,
        replace,
    };
    let mut out: Vec<Completion> = match place {
        Place::Target | Place::Initial => {
            let states = symbols::states(doc);
            let parents = &parents(doc);
            let from = enclosing_state(doc, offset as u32);
            let mut out = Vec::new();
            let children_of =
                |p: StateId| (1..states.len()).filter(move |&i| parents[i] == Some(p));
            if place == Place::Target && from != StateId::ROOT {
                let parent = parents[from.index()].unwrap_or(StateId::ROOT);
                for i in children_of(parent) {
                    out.push(item(
                        states[i].key.text.clone(),
                        CompletionKind::State,
                        Some("sibling".into()),
                    ));
                }
                for i in children_of(from) {
                    out.push(item(
                        format!(".{}", states[i].key.text),
                        CompletionKind::State,
                        Some("child".into()),
                    ));
                }
            } else {
                for i in children_of(from) {
                    out.push(item(
                        states[i].key.text.clone(),
                        CompletionKind::State,
                        Some("child".into()),
                    ));
                }
            }
            for state in &states {
                if let Some(id) = &state.id {
                    out.push(item(
                        format!("#{}", id.text),
                        CompletionKind::State,
                        Some(format!("state `{}`", state.key.text)),
                    ));
                }
            }
            out
        }
        Place::Event => {
            let mut names: Vec<String> = doc.events.iter().map(|e| e.name.text.clone()).collect();
            for o in symbols::indexed(named).iter() {
                if let symbols::Symbol::Event(name) = &o.symbol
                    && !names.contains(name)
                {
                    names.push(name.clone());
                }
            }
            names
                .into_iter()
                .map(|n| item(n, CompletionKind::Event, None))
                .collect()
        }
        Place::Effect => doc
            .effects
            .iter()
            .map(|e| {
                let detail = e
                    .idempotency
                    .as_ref()
                    .map(|i| format!("idempotency {}", i.text));
                item(e.name.text.clone(), CompletionKind::Effect, detail)
            })
            .collect(),
        Place::Context => doc
            .context
            .iter()
            .map(|c| {
                item(
                    c.name.text.clone(),
                    CompletionKind::Context,
                    Some(format!("initially {}", c.value)),
                )
            })
            .collect(),
        Place::Payload => {
            let event = transition_event(doc, offset as u32);
            doc.events
                .iter()
                .filter(|e| Some(&e.name.text) == event.as_ref())
                .flat_map(|e| e.payload.iter().flatten())
                .map(|(field, ty)| {
                    item(
                        field.text.clone(),
                        CompletionKind::Payload,
                        Some(ty.text.clone()),
                    )
                })
                .collect()
        }
        Place::Key(path) => keys(&path, replace),
    };
    out.retain(|c| c.label.starts_with(partial));
    out.dedup_by(|a, b| a.label == b.label);
    out
}

/// The parent of each state of the tree, by pre-order index.
fn parents(doc: &MachineDoc) -> Vec<Option<StateId>> {
    fn walk(state: &StateDoc, parent: Option<StateId>, out: &mut Vec<Option<StateId>>) {
        let me = StateId(out.len() as u32);
        out.push(parent);
        for child in &state.states {
            walk(child, Some(me), out);
        }
    }
    let mut out = Vec::new();
    walk(&doc.root, None, &mut out);
    out
}

/// The event of the transition written around `offset`, when it takes one.
fn transition_event(doc: &MachineDoc, offset: u32) -> Option<String> {
    let states = symbols::states(doc);
    states
        .iter()
        .flat_map(|s| s.transitions())
        .filter(|t| t.span.start <= offset)
        .max_by_key(|t| t.span.start)
        .and_then(|t| t.event.as_ref())
        .map(|e: &Name| e.text.clone())
        .filter(|e| !e.contains([' ', '*']))
}

/// The characters a name being written may hold.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '#')
}

/// What the cursor writes, and the part of it already written.
fn place<'t>(
    text: &'t str,
    line_start: usize,
    line: &'t str,
    syntax: Syntax,
) -> Option<(Place, &'t str)> {
    let word_start = line.len()
        - line
            .chars()
            .rev()
            .take_while(|&c| is_name_char(c))
            .map(char::len_utf8)
            .sum::<usize>();
    let word = &line[word_start..];
    let before = &line[..word_start];
    // Inside an expression: `context.` or `event.` just before the cursor.
    for (prefix, place) in [("context.", Place::Context), ("event.", Place::Payload)] {
        if let Some(field) = word.strip_prefix(prefix)
            && !field.contains('.')
        {
            return Some((place, field));
        }
    }
    let trimmed = before.trim_end();
    match syntax {
        Syntax::Dsl => {
            let head = trimmed.trim_start();
            if head.contains("->") {
                return Some((Place::Target, word));
            }
            let first = head.split_whitespace().next().unwrap_or("");
            match first {
                "on" => Some((Place::Event, word)),
                "initial" => Some((Place::Initial, word)),
                "raise" | "send" => Some((Place::Event, word)),
                "effect" | "entry" | "exit" => Some((Place::Effect, word)),
                _ => None,
            }
        }
        Syntax::Yaml => {
            // Inside `{ ... }` or `[ ... ]`, the place is the flow
            // collection's; else the line's, read from its indentation.
            if let Some(flow) = flow_at(text, line_start + word_start) {
                return match flow.key {
                    Some(key) => value_place(&key, flow.path.last().map(String::as_str), word),
                    None => item_place(flow.path, flow.sequence, word),
                };
            }
            let path = yaml_path(text, line_start);
            let content = before.trim_start();
            let (dash, content) = match content.strip_prefix("- ") {
                Some(rest) => (true, rest.trim_start()),
                None => (false, content),
            };
            let parent = path.last().map(String::as_str);
            // `key: |`, the value of a key of this line.
            if let Some(key) = content.strip_suffix(':').or_else(|| {
                content
                    .split_once(':')
                    .map(|(k, _)| k)
                    .filter(|_| content.trim_end().ends_with([':', '[', ',']))
            }) {
                return value_place(key.trim().trim_matches('"'), parent, word);
            }
            if !content.is_empty() {
                return None;
            }
            item_place(path, dash, word)
        }
    }
}

/// What the value of `key`, a key under `parent`, names.
fn value_place<'t>(key: &str, parent: Option<&str>, word: &'t str) -> Option<(Place, &'t str)> {
    match (key, parent) {
        ("target", _) => Some((Place::Target, word)),
        ("initial", _) => Some((Place::Initial, word)),
        ("raise" | "send", _) => Some((Place::Event, word)),
        ("effect" | "src" | "entry" | "exit" | "actions", _) => Some((Place::Effect, word)),
        (_, Some("on")) => Some((Place::Target, word)),
        _ => None,
    }
}

/// What a key being written under `path` names, or an item of a list
/// (`dash`) there.
fn item_place(mut path: Vec<String>, dash: bool, word: &str) -> Option<(Place, &str)> {
    match (path.last().map(String::as_str), dash) {
        (Some("on"), false) => Some((Place::Event, word)),
        (Some("entry" | "exit" | "actions"), true) => Some((Place::Effect, word)),
        (Some("states" | "events" | "effects" | "context" | "sources" | "allow"), false) => None,
        _ => {
            if dash {
                path.push("-".into());
            }
            Some((Place::Key(path), word))
        }
    }
}

/// Where a cursor inside a YAML flow collection is.
#[derive(Debug, PartialEq)]
struct Flow {
    /// The keys from the top down to the innermost open collection (`-`
    /// for an item of a list).
    path: Vec<String>,
    /// In a mapping, the key whose value the cursor writes; `None` where it
    /// writes a key (or, in a list, an item).
    key: Option<String>,
    /// Whether the innermost collection is a list.
    sequence: bool,
}

/// One open `{` or `[`.
struct Frame {
    sequence: bool,
    /// In a mapping, the key whose value comes next.
    key: Option<String>,
    /// The scalar being read.
    token: String,
}

/// The flow collection open at `offset`, read from the start of the text
/// (quotes, comments and block scalars skipped); `None` outside every flow
/// collection and inside a quoted string.
fn flow_at(text: &str, offset: usize) -> Option<Flow> {
    let text = &text[..offset];
    let mut frames: Vec<Frame> = Vec::new();
    // Where the outermost collection opened: its line, and the steps that
    // line's own `- ` and key add.
    let mut opened: Option<(usize, Vec<String>)> = None;
    let mut block_scalar: Option<usize> = None;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let here = line_start;
        line_start += line.len();
        let indent = line.len() - line.trim_start_matches(' ').len();
        let mut chars = line.char_indices().peekable();
        if frames.is_empty() {
            if let Some(scalar) = block_scalar {
                if line.trim().is_empty() || indent > scalar {
                    continue;
                }
                block_scalar = None;
            }
            // The block line: its `- ` markers and key, up to a value that
            // opens a collection.
            let mut steps = Vec::new();
            let mut rest = &line[indent..];
            loop {
                if let Some(after) = rest.strip_prefix("- ") {
                    steps.push("-".to_string());
                    rest = after.trim_start_matches(' ');
                    continue;
                }
                if let Some((key, value)) = block_key(rest) {
                    steps.push(key);
                    rest = value.trim_start_matches(' ');
                }
                break;
            }
            match rest.chars().next() {
                Some(c @ ('{' | '[')) => {
                    frames.push(Frame {
                        sequence: c == '[',
                        key: None,
                        token: String::new(),
                    });
                    opened = Some((here, steps));
                    let at = line.len() - rest.len() + 1;
                    chars = line[..].char_indices().peekable();
                    while chars.peek().is_some_and(|&(i, _)| i < at) {
                        chars.next();
                    }
                }
                Some('|' | '>') => {
                    block_scalar = Some(indent);
                    continue;
                }
                _ => continue,
            }
        }
        let mut previous = ' ';
        while let Some((i, c)) = chars.next() {
            let top = frames.last_mut()?;
            match c {
                '\'' | '"' => {
                    let close = quoted_end(&line[i..], c)?;
                    top.token.push_str(&line[i + 1..i + close - 1]);
                    while chars.peek().is_some_and(|&(j, _)| j < i + close) {
                        chars.next();
                    }
                    previous = c;
                    continue;
                }
                '#' if previous.is_whitespace() => break,
                '{' | '[' => frames.push(Frame {
                    sequence: c == '[',
                    key: None,
                    token: String::new(),
                }),
                '}' | ']' => {
                    frames.pop();
                    if frames.is_empty() {
                        opened = None;
                        break;
                    }
                    if let Some(top) = frames.last_mut() {
                        top.token.clear();
                    }
                }
                ',' => {
                    top.key = None;
                    top.token.clear();
                }
                ':' if !top.sequence
                    && (previous == '"'
                        || previous == '\''
                        || chars.peek().is_none_or(|&(_, n)| {
                            n.is_whitespace() || matches!(n, ',' | '}' | ']')
                        })) =>
                {
                    top.key = Some(top.token.trim().to_string());
                    top.token.clear();
                }
                _ => top.token.push(c),
            }
            previous = c;
        }
    }
    let (line, steps) = opened?;
    let mut path = yaml_path(text, line);
    path.extend(steps);
    let (last, outer) = frames.split_last()?;
    // Each collection inside another is an item of a list or the value of
    // the key before it.
    for frame in outer {
        match (&frame.key, frame.sequence) {
            (_, true) => path.push("-".into()),
            (Some(key), false) => path.push(key.clone()),
            (None, false) => return None,
        }
    }
    Some(Flow {
        path,
        key: last.key.clone().filter(|_| !last.sequence),
        sequence: last.sequence,
    })
}

/// A block mapping's key at the start of `line` and the rest after its
/// `:`, a key being a plain or quoted scalar followed by `:` and a space
/// or the end of the line.
fn block_key(line: &str) -> Option<(String, &str)> {
    let (key, rest) = match line.chars().next()? {
        q @ ('\'' | '"') => {
            let end = quoted_end(line, q)?;
            (line[1..end - 1].to_string(), &line[end..])
        }
        _ => {
            let end = line.find(": ").or_else(|| {
                let trimmed = line.trim_end();
                trimmed.ends_with(':').then(|| trimmed.len() - 1)
            })?;
            (line[..end].trim_end().to_string(), &line[end..])
        }
    };
    let value = rest.strip_prefix(':')?;
    (value.is_empty() || value.starts_with([' ', '\n', '\r'])).then_some((key, value))
}

/// The length of the quoted scalar at the start of `text` (quote `q`),
/// closing quote included; `None` when it does not close on its line.
fn quoted_end(text: &str, q: char) -> Option<usize> {
    let mut chars = text.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\n' => return None,
            '\\' if q == '"' => {
                chars.next();
            }
            c if c == q => {
                // `''` in single quotes is an escaped quote.
                if q == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') {
                    chars.next();
                    continue;
                }
                return Some(i + 1);
            }
            _ => {}
        }
    }
    None
}

/// The keys above the line that starts at `line_start`, outermost first,
/// read from the indentation (`-` for a list item).
fn yaml_path(text: &str, line_start: usize) -> Vec<String> {
    let current = &text[line_start..];
    let current = &current[..current.find('\n').unwrap_or(current.len())];
    let indent = current.len() - current.trim_start().len();
    let mut limit = indent;
    let mut path = Vec::new();
    for line in text[..line_start].lines().rev() {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let at = line.len() - content.len();
        let (dash, rest, key_at) = match content.strip_prefix("- ") {
            Some(rest) => (true, rest, at + 2 + (rest.len() - rest.trim_start().len())),
            None => (false, content, at),
        };
        if key_at < limit
            && let Some((key, _)) = rest.trim_start().split_once(':')
        {
            path.push(key.trim().trim_matches('"').to_string());
            limit = key_at;
        }
        if dash && at < limit {
            path.push("-".into());
            limit = at;
        }
        if limit == 0 {
            break;
        }
    }
    path.reverse();
    path
}

/// The keys the format allows at `path`, from its JSON Schema.
fn keys(path: &[String], replace: Span) -> Vec<Completion> {
    let Ok(schema) = serde_json::from_str::<serde_json::Value>(crate::schema::MACHINE_SCHEMA)
    else {
        return Vec::new();
    };
    let mut nodes = vec![&schema];
    for step in path {
        nodes = nodes
            .into_iter()
            .flat_map(|n| alternatives(&schema, n))
            .filter_map(|n| match step.as_str() {
                "-" => n.get("items"),
                key => n
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| n.get("additionalProperties").filter(|a| a.is_object())),
            })
            .collect();
    }
    let mut out: Vec<Completion> = Vec::new();
    for node in nodes.into_iter().flat_map(|n| alternatives(&schema, n)) {
        let Some(properties) = node.get("properties").and_then(|p| p.as_object()) else {
            continue;
        };
        for (key, value) in properties {
            if out.iter().any(|c| &c.label == key) {
                continue;
            }
            let detail = value
                .get("description")
                .and_then(|d| d.as_str())
                .map(str::to_string);
            out.push(Completion {
                label: key.clone(),
                kind: CompletionKind::Key,
                detail,
                replace,
            });
        }
    }
    out
}

/// A schema node with its `$ref` followed and its `oneOf`/`anyOf`
/// alternatives spread.
fn alternatives<'s>(
    schema: &'s serde_json::Value,
    node: &'s serde_json::Value,
) -> Vec<&'s serde_json::Value> {
    let node = match node.get("$ref").and_then(|r| r.as_str()) {
        Some(reference) => reference
            .strip_prefix("#/")
            .map(|p| p.split('/').try_fold(schema, |n, k| n.get(k)))
            .and_then(|n| n)
            .unwrap_or(node),
        None => node,
    };
    let mut out = vec![node];
    for key in ["oneOf", "anyOf"] {
        for alt in node
            .get(key)
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
        {
            out.extend(alternatives(schema, alt));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flow collection open where `‸` stands in `text`.
    fn flow(text: &str) -> Option<Flow> {
        let at = text.find('‸').expect("a cursor");
        flow_at(&text.replace('‸', ""), at)
    }

    fn path(steps: &[&str]) -> Vec<String> {
        steps.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_flow_mapping_on_one_line_gives_its_path_and_key() {
        let text = "machine: m\nstates:\n  a:\n    on: { GO: { target: b, ‸ } }\n";
        assert_eq!(
            flow(text),
            Some(Flow {
                path: path(&["states", "a", "on", "GO"]),
                key: None,
                sequence: false,
            })
        );
        let value = "states:\n  a:\n    on: { GO: { target: ‸\n";
        assert_eq!(flow(value).and_then(|f| f.key), Some("target".into()));
        // Outside every collection, and after one closed.
        assert_eq!(flow("states:\n  a: {}\n  ‸"), None);
        assert_eq!(flow("states:\n  a: { on: {} } ‸"), None);
    }

    #[test]
    fn quotes_comments_lists_and_block_scalars_are_read_as_yaml_reads_them() {
        // A quoted `{` or `,` is text, and so is a comment.
        let quoted = "events:\n  E: { description: \"a { b, c: d\", ‸ }\n";
        assert_eq!(flow(quoted).map(|f| f.path), Some(path(&["events", "E"])));
        let comment = "context: # { not a flow\n  x: ‸";
        assert_eq!(flow(comment), None);
        // Inside a quoted string there is no place.
        assert_eq!(flow("events:\n  E: { description: \"a ‸\n"), None);
        // A list item, and a mapping in one.
        let list = "states:\n  a:\n    entry: [send, ‸]\n";
        assert_eq!(
            flow(list),
            Some(Flow {
                path: path(&["states", "a", "entry"]),
                key: None,
                sequence: true,
            })
        );
        let item = "states:\n  a:\n    entry: [{ ‸ }]\n";
        assert_eq!(
            flow(item).map(|f| f.path),
            Some(path(&["states", "a", "entry", "-"]))
        );
        // A block scalar's `{` is text.
        let scalar = "description: |\n  { a, ‸\n";
        assert_eq!(flow(scalar), None);
        // A collection over several lines.
        let lines = "states:\n  a:\n    on: {\n      GO: {\n        target: b,\n        ‸\n";
        assert_eq!(
            flow(lines).map(|f| f.path),
            Some(path(&["states", "a", "on", "GO"]))
        );
    }
}
