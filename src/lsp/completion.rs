//! Completion: what may be written at the cursor.
//!
//! Targets valid from the transition's source (`sibling`, `.child`,
//! `#id`), event names, effect names, context fields and `event.` payload
//! fields inside expressions, and in YAML the keys of the format (from its
//! JSON Schema, with their descriptions). The place is read from the text
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
    let (place, partial) = match place(text, line_start, line, syntax) {
        Some(found) => found,
        None => return Vec::new(),
    };
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
            for o in symbols::occurrences(named) {
                if let symbols::Symbol::Event(name) = o.symbol
                    && !names.contains(&name)
                {
                    names.push(name);
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
                let key = key.trim().trim_matches('"');
                return match (key, parent) {
                    ("target", _) => Some((Place::Target, word)),
                    ("initial", _) => Some((Place::Initial, word)),
                    ("raise" | "send", _) => Some((Place::Event, word)),
                    ("effect" | "src" | "entry" | "exit" | "actions", _) => {
                        Some((Place::Effect, word))
                    }
                    (_, Some("on")) => Some((Place::Target, word)),
                    _ => None,
                };
            }
            if !content.is_empty() {
                return None;
            }
            // A key being written, or an item of a list.
            match (parent, dash) {
                (Some("on"), false) => Some((Place::Event, word)),
                (Some("entry" | "exit" | "actions"), true) => Some((Place::Effect, word)),
                (
                    Some("states" | "events" | "effects" | "context" | "sources" | "allow"),
                    false,
                ) => None,
                _ => {
                    let mut path = path;
                    if dash {
                        path.push("-".into());
                    }
                    Some((Place::Key(path), word))
                }
            }
        }
    }
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
