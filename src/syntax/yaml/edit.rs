//! Fixes written into a YAML machine file: entries inserted among their
//! siblings in the mapping's own style (a line of their own at the
//! siblings' indentation in a block mapping, `, key: value` in a flow one),
//! entries removed with their lines, scalars replaced inside their quotes.
//!
//! The editor reads the file into the same node tree as the front-end, so
//! every place it changes is one the loader read; what it writes is checked
//! again by loading the fixed text (`fix::fix_file`).

use crate::diagnostic::Edit;
use crate::span::{SourceFile, Span};
use crate::syntax::edit as shared;

use super::format::scalar;
use super::node::{Kind, Node};
use super::{EVENT_KEYS, MACHINE_KEYS, ROOT_STATE_KEYS, STATE_KEYS, TRANSITION_KEYS};

/// A file's node tree, with what the edits need to know of its layout.
pub(crate) struct YamlEditor<'t> {
    text: &'t str,
    /// The file's node tree, as the loader parsed it (`yaml::node_tree`);
    /// only a tree that parsed makes an editor.
    tree: std::sync::Arc<Result<Node, Vec<crate::diagnostic::Diagnostic>>>,
    /// Spaces a nested block mapping is indented by in this file.
    unit: usize,
}

/// A value to insert: a scalar already in its written form, or a mapping.
enum Value {
    Text(String),
    Map(Vec<(String, Value)>),
}

impl Value {
    /// The value in flow style: `x`, `{ a: x, b: {} }`.
    fn flow(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Map(entries) if entries.is_empty() => "{}".to_string(),
            Value::Map(entries) => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.flow()))
                    .collect();
                format!("{{ {} }}", entries.join(", "))
            }
        }
    }
}

/// Whether the node's text may hold the offset `at`: a mapping or a
/// sequence spans its children, so a search for a key or an item at `at`
/// need not look inside the nodes that do not hold it (which keeps a fix's
/// search from walking the whole file).
fn holds(node: &Node, at: u32) -> bool {
    node.span.start <= at && at <= node.span.end
}

/// The entries of a mapping from the first that does not end before `at`:
/// entries are in document order, so those before it cannot hold `at`, and
/// a search through a large `states:` map skips them by bisection instead
/// of trying each (the fixes of a 100,000-state file took most of its lint).
fn entries_from(entries: &[(Node, Node)], at: u32) -> &[(Node, Node)] {
    let first = entries.partition_point(|(key, value)| key.span.end.max(value.span.end) < at);
    &entries[first..]
}

/// The items of a sequence from the first that does not end before `at`.
fn items_from(items: &[Node], at: u32) -> &[Node] {
    &items[items.partition_point(|item| item.span.end < at)..]
}

/// Where to insert an entry: into a mapping, or under a key whose value was
/// left empty.
enum Place<'n> {
    Map(&'n Node),
    Empty(&'n Node),
}

/// A map entry found by its key: the mappings from the root down to it,
/// each with the index of the entry taken there.
type Path<'n> = Vec<(&'n Node, usize)>;

impl<'t> YamlEditor<'t> {
    #[cfg(test)]
    fn new(text: &'t str) -> Option<YamlEditor<'t>> {
        let tree = super::node_tree(&SourceFile::new("", text));
        YamlEditor::with_tree(text, tree)
    }

    /// The editor of a file, on the node tree its loading parsed.
    pub fn of_file(file: &'t SourceFile) -> Option<YamlEditor<'t>> {
        YamlEditor::with_tree(&file.text, super::node_tree(file))
    }

    fn with_tree(
        text: &'t str,
        tree: std::sync::Arc<Result<Node, Vec<crate::diagnostic::Diagnostic>>>,
    ) -> Option<YamlEditor<'t>> {
        tree.as_ref().as_ref().ok()?;
        let mut editor = YamlEditor {
            text,
            tree,
            unit: 2,
        };
        editor.unit = editor.indent_unit().unwrap_or(2);
        Some(editor)
    }

    fn root(&self) -> &Node {
        match self.tree.as_ref() {
            Ok(root) => root,
            Err(_) => unreachable!("an editor is made of a tree that parsed"),
        }
    }

    /// The indentation of the first block mapping nested in another one,
    /// relative to its parent's key.
    fn indent_unit(&self) -> Option<usize> {
        let mut stack = vec![self.root()];
        while let Some(node) = stack.pop() {
            let Kind::Map(entries) = &node.kind else {
                if let Kind::Seq(items) = &node.kind {
                    stack.extend(items.iter().rev());
                }
                continue;
            };
            for (key, value) in entries {
                if let Kind::Map(inner) = &value.kind
                    && let Some((first, _)) = inner.first()
                    && !self.is_flow(value)
                {
                    let unit = self.column(first.span.start as usize) as isize
                        - self.column(key.span.start as usize) as isize;
                    if unit > 0 {
                        return Some(unit as usize);
                    }
                }
            }
            stack.extend(entries.iter().rev().map(|(_, v)| v));
        }
        None
    }

    /// The column of an offset, in characters from the start of its line.
    fn column(&self, at: usize) -> usize {
        self.text[shared::line_start(self.text, at)..at]
            .chars()
            .count()
    }

    /// Whether a mapping or a sequence is written in flow style.
    fn is_flow(&self, node: &Node) -> bool {
        matches!(
            self.text.as_bytes().get(node.span.start as usize),
            Some(b'{' | b'[')
        )
    }

    /// Just after the bracket that closes a flow collection, looking from
    /// `from` past spaces, commas and comments.
    fn closing(&self, from: usize, bracket: char) -> Option<usize> {
        let mut rest = self.text[from..].char_indices();
        while let Some((i, c)) = rest.next() {
            match c {
                c if c == bracket => return Some(from + i + 1),
                ' ' | '\t' | '\r' | '\n' | ',' => {}
                '#' => {
                    for (_, c) in rest.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                _ => return None,
            }
        }
        None
    }

    /// Where a node's text ends: after the closing bracket of a flow
    /// collection and the closing quote of a scalar, before the blank lines
    /// a block scalar keeps.
    fn end(&self, node: &Node) -> Option<usize> {
        match &node.kind {
            Kind::Scalar(_) => {
                let written = &self.text[node.span.range()];
                Some(node.span.start as usize + written.trim_end().len())
            }
            Kind::Map(entries) => {
                let last = match entries.last() {
                    Some(_) => self.entry_end(node, entries.len() - 1)?,
                    None => node.span.start as usize + 1,
                };
                match self.is_flow(node) {
                    true => self.closing(last, '}'),
                    false => Some(last),
                }
            }
            Kind::Seq(items) => {
                let last = match items.last() {
                    Some(item) => self.end(item)?,
                    None => node.span.start as usize + 1,
                };
                match self.is_flow(node) {
                    true => self.closing(last, ']'),
                    false => Some(last),
                }
            }
        }
    }

    /// Where entry `i` of a mapping ends: its value's end, or its key's when
    /// the value was left empty.
    fn entry_end(&self, map: &Node, i: usize) -> Option<usize> {
        let Kind::Map(entries) = &map.kind else {
            return None;
        };
        let (key, value) = &entries[i];
        Some(self.end(key)?.max(self.end(value)?))
    }

    fn root_map(&self) -> Option<&Node> {
        matches!(self.root().kind, Kind::Map(_)).then_some(self.root())
    }

    /// The entry whose key starts at `at`, with the mappings above it.
    fn path_to_key(&self, at: u32) -> Option<Path<'_>> {
        fn search<'n>(node: &'n Node, at: u32, path: &mut Path<'n>) -> bool {
            match &node.kind {
                Kind::Map(entries) => {
                    let skipped = entries.len() - entries_from(entries, at).len();
                    for (i, (key, value)) in entries.iter().enumerate().skip(skipped) {
                        if key.span.start > at {
                            break;
                        }
                        path.push((node, i));
                        if key.span.start == at || (holds(value, at) && search(value, at, path)) {
                            return true;
                        }
                        path.pop();
                    }
                    false
                }
                Kind::Seq(items) => items_from(items, at)
                    .iter()
                    .take_while(|item| item.span.start <= at)
                    .any(|item| holds(item, at) && search(item, at, path)),
                Kind::Scalar(_) => false,
            }
        }
        let mut path = Vec::new();
        search(self.root(), at, &mut path).then_some(path)
    }

    /// The mapping of the transition written at `at`: an item of a list of
    /// transitions, or the value of its event's key.
    fn transition_map(&self, at: u32) -> Option<&Node> {
        fn search(node: &Node, at: u32) -> Option<&Node> {
            match &node.kind {
                Kind::Seq(items) => items_from(items, at)
                    .iter()
                    .take_while(|item| item.span.start <= at)
                    .filter(|item| holds(item, at))
                    .find_map(|item| {
                        if item.span.start == at && matches!(item.kind, Kind::Map(_)) {
                            Some(item)
                        } else {
                            search(item, at)
                        }
                    }),
                Kind::Map(entries) => (entries_from(entries, at).iter())
                    .take_while(|(key, _)| key.span.start <= at)
                    .find_map(|(key, value)| {
                        if key.span.start == at && matches!(value.kind, Kind::Map(_)) {
                            Some(value)
                        } else if holds(value, at) {
                            search(value, at)
                        } else {
                            None
                        }
                    }),
                Kind::Scalar(_) => None,
            }
        }
        search(self.root(), at)
    }

    /// The index of the entry named `key`.
    fn entry(map: &Node, key: &str) -> Option<usize> {
        match &map.kind {
            Kind::Map(entries) => entries.iter().position(|(k, _)| k.text() == Some(key)),
            _ => None,
        }
    }

    /// The indentation of a block mapping's keys, as spaces.
    fn key_indent(&self, key: &Node) -> String {
        " ".repeat(self.column(key.span.start as usize))
    }

    /// `key: value` as lines of a block mapping indented by `indent`.
    fn block_entry(&self, key: &str, value: &Value, indent: &str) -> String {
        match value {
            Value::Map(entries) if !entries.is_empty() => {
                let inner = format!("{indent}{}", " ".repeat(self.unit));
                let mut out = format!("{indent}{key}:");
                for (k, v) in entries {
                    out.push('\n');
                    out.push_str(&self.block_entry(k, v, &inner));
                }
                out
            }
            _ => format!("{indent}{key}: {}", value.flow()),
        }
    }

    /// Inserts `key: value` into a mapping, before entry `before` when it is
    /// given and starts a line of a block mapping (or sits in a flow one),
    /// else after the last entry.
    fn insert(&self, into: Place, before: Option<usize>, key: &str, value: Value) -> Option<Edit> {
        let text = self.text;
        match into {
            Place::Map(map) => {
                let Kind::Map(entries) = &map.kind else {
                    return None;
                };
                if self.is_flow(map) {
                    let entry = format!("{key}: {}", value.flow());
                    return Some(match (entries.is_empty(), before) {
                        (true, _) => {
                            let start = map.span.start as usize;
                            let end = self.closing(start + 1, '}')?;
                            Edit::new(Span::new(start, end), format!("{{ {entry} }}"))
                        }
                        (false, Some(i)) => {
                            Edit::insert(entries[i].0.span.start as usize, format!("{entry}, "))
                        }
                        (false, None) => Edit::insert(
                            self.entry_end(map, entries.len() - 1)?,
                            format!(", {entry}"),
                        ),
                    });
                }
                let (first, _) = entries.first()?;
                let indent = self.key_indent(first);
                match before.map(|i| entries[i].0.span.start as usize) {
                    Some(at) if shared::starts_line(text, at) => {
                        let at = shared::above_comments(text, at, "#");
                        let lines = self.block_entry(key, &value, &indent);
                        Some(Edit::insert(at, format!("{lines}\n")))
                    }
                    _ => {
                        let end = self.entry_end(map, entries.len() - 1)?;
                        let (at, own_line) = shared::after_item(text, end, "#");
                        own_line.then(|| {
                            let lines = self.block_entry(key, &value, &indent);
                            Edit::insert(at, format!("\n{lines}"))
                        })
                    }
                }
            }
            Place::Empty(key_node) => {
                let end = self.end(key_node)?;
                // A flow mapping would need the value after the colon, which
                // never happens in the files these fixes meet.
                if !shared::starts_line(text, key_node.span.start as usize) {
                    return None;
                }
                let indent = format!("{}{}", self.key_indent(key_node), " ".repeat(self.unit));
                let lines = self.block_entry(key, &value, &indent);
                Some(Edit::insert(
                    shared::line_end(text, end),
                    format!("\n{lines}"),
                ))
            }
        }
    }

    /// Inserts `key: value` where the canonical `order` of keys puts it:
    /// before the first entry that comes after it, else last.
    fn insert_ordered(&self, map: &Node, key: &str, value: Value, order: &[&str]) -> Option<Edit> {
        let Kind::Map(entries) = &map.kind else {
            return None;
        };
        let rank = |k: &str| order.iter().position(|o| *o == k);
        let own = rank(key)?;
        let before = entries
            .iter()
            .position(|(k, _)| k.text().and_then(rank).is_some_and(|r| r > own));
        self.insert(Place::Map(map), before, key, value)
    }

    /// Inserts into the value of `map`'s entry `i`: a mapping, or nothing.
    fn insert_under(&self, map: &Node, i: usize, key: &str, value: Value) -> Option<Edit> {
        let Kind::Map(entries) = &map.kind else {
            return None;
        };
        let (k, v) = &entries[i];
        match &v.kind {
            Kind::Map(_) => self.insert(Place::Map(v), None, key, value),
            _ if v.is_null() => self.insert(Place::Empty(k), None, key, value),
            _ => None,
        }
    }

    /// Adds `name: value` to the top-level `section`, made where the format
    /// puts it when the file has none.
    fn add_to_section(&self, section: &str, name: &str, value: &str) -> Option<Vec<Edit>> {
        let root = self.root_map()?;
        let key = scalar(name);
        let value = Value::Text(value.to_string());
        let edit = match Self::entry(root, section) {
            Some(i) => self.insert_under(root, i, &key, value)?,
            None => {
                let new = Value::Map(vec![(key, value)]);
                self.insert_ordered(root, section, new, &top_level_keys())?
            }
        };
        Some(vec![edit])
    }

    /// Removes entry `i` of a mapping: its lines in a block mapping, the
    /// entry and one comma in a flow one.
    fn remove(&self, map: &Node, i: usize) -> Option<Edit> {
        let Kind::Map(entries) = &map.kind else {
            return None;
        };
        let key_start = entries[i].0.span.start as usize;
        if self.is_flow(map) {
            let span = if entries.len() == 1 {
                let start = map.span.start as usize;
                return Some(Edit::new(Span::new(start, self.end(map)?), "{}"));
            } else if i + 1 < entries.len() {
                Span::new(key_start, entries[i + 1].0.span.start as usize)
            } else {
                Span::new(self.entry_end(map, i - 1)?, self.entry_end(map, i)?)
            };
            return Some(Edit::delete(span));
        }
        if !shared::starts_line(self.text, key_start) {
            return None;
        }
        let end = self.entry_end(map, i)?;
        Some(Edit::delete(shared::removal(
            self.text, key_start, end, "#",
        )))
    }
}

/// A string as a double-quoted YAML scalar: JSON's escapes are YAML's.
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Writes `name` over the scalar at `span`, inside its quotes if it has them.
pub(crate) fn rename(text: &str, span: Span, name: &str) -> Edit {
    let replacement = match text.as_bytes().get(span.start as usize) {
        Some(b'\'') => format!("'{}'", name.replace('\'', "''")),
        Some(b'"') => quoted(name),
        _ => scalar(name),
    };
    Edit::new(span, replacement)
}

impl shared::Editor for YamlEditor<'_> {
    fn replace_duration(&self, span: Span, duration: &str) -> Option<Edit> {
        Some(rename(self.text, span, duration))
    }

    fn declare_event(&self, name: &str) -> Option<Vec<Edit>> {
        self.add_to_section("events", name, "{}")
    }

    fn remove_allow(&self, lint: Span, all_of_state: bool) -> Option<Vec<Edit>> {
        let path = self.path_to_key(lint.start)?;
        let &[.., (state, allow_entry), (allows, i)] = path.as_slice() else {
            return None;
        };
        let Kind::Map(entries) = &allows.kind else {
            return None;
        };
        let edit = if all_of_state || entries.len() == 1 {
            self.remove(state, allow_entry)?
        } else {
            self.remove(allows, i)?
        };
        Some(vec![edit])
    }

    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>> {
        let path = self.path_to_key(event.start)?;
        let &(events, i) = path.last()?;
        let Kind::Map(entries) = &events.kind else {
            return None;
        };
        let (key, value) = &entries[i];
        let id = Value::Text(scalar(field));
        let edit = match &value.kind {
            Kind::Map(_) => self.insert_ordered(value, "id", id, &EVENT_KEYS)?,
            _ if value.is_null() => self.insert(Place::Empty(key), None, "id", id)?,
            _ => return None,
        };
        Some(vec![edit])
    }

    fn add_context_list(&self, name: &str) -> Option<Vec<Edit>> {
        self.add_to_section("context", name, "[]")
    }

    fn add_guard(&self, transition: Span, test: &str) -> Option<Vec<Edit>> {
        let map = self.transition_map(transition.start)?;
        let Kind::Map(entries) = &map.kind else {
            return None;
        };
        let edit = match Self::entry(map, "guard") {
            Some(i) => {
                let (key, value) = &entries[i];
                let old = value.text()?;
                let (start, end) = (value.span.start as usize, self.end(value)?);
                // A block scalar (`guard: >-`) is left alone: its indicator
                // lies before the node, and rewriting it is not worth the risk.
                let between = &self.text[key.span.end as usize..start];
                if between.contains(['|', '>']) || self.text[start..end].contains('\n') {
                    return None;
                }
                Edit::new(Span::new(start, end), quoted(&format!("{test} && ({old})")))
            }
            None => {
                self.insert_ordered(map, "guard", Value::Text(quoted(test)), &TRANSITION_KEYS)?
            }
        };
        Some(vec![edit])
    }

    fn add_assign_field(&self, field: Span, name: &str, expr: &str) -> Option<Vec<Edit>> {
        let path = self.path_to_key(field.start)?;
        let &(fields, _) = path.last()?;
        let value = Value::Text(quoted(expr));
        Some(vec![self.insert(
            Place::Map(fields),
            None,
            &scalar(name),
            value,
        )?])
    }

    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>> {
        let (map, order): (&Node, &[&str]) = match state {
            None => (self.root_map()?, &ROOT_STATE_KEYS),
            Some(key) => {
                let path = self.path_to_key(key.start)?;
                let &(states, i) = path.last()?;
                let Kind::Map(entries) = &states.kind else {
                    return None;
                };
                let (key, value) = &entries[i];
                let entry = Value::Map(vec![(scalar(lint), Value::Text(quoted(reason)))]);
                if value.is_null() {
                    return Some(vec![self.insert(
                        Place::Empty(key),
                        None,
                        "allow",
                        entry,
                    )?]);
                }
                (value, &STATE_KEYS)
            }
        };
        let reason = Value::Text(quoted(reason));
        let edit = match Self::entry(map, "allow") {
            Some(i) => self.insert_under(map, i, &scalar(lint), reason)?,
            None => {
                let entry = Value::Map(vec![(scalar(lint), reason)]);
                self.insert_ordered(map, "allow", entry, order)?
            }
        };
        Some(vec![edit])
    }

    fn set_version(&self, version: u64) -> Option<Vec<Edit>> {
        let root = self.root_map()?;
        let Kind::Map(entries) = &root.kind else {
            return None;
        };
        let edit = match Self::entry(root, "version") {
            Some(i) => {
                let value = &entries[i].1;
                value.scalar()?;
                Edit::new(
                    Span::new(value.span.start as usize, self.end(value)?),
                    version.to_string(),
                )
            }
            None => self.insert_ordered(
                root,
                "version",
                Value::Text(version.to_string()),
                &top_level_keys(),
            )?,
        };
        Some(vec![edit])
    }

    fn add_migration(
        &self,
        from: u64,
        states: &[(String, String)],
        context: &[(String, String)],
    ) -> Option<Vec<Edit>> {
        let root = self.root_map()?;
        if Self::entry(root, "migrations").is_some() {
            return None;
        }
        // One flow item on one line: a skeleton the author reads at a
        // glance and extends, in any block layout of the file.
        let map = |pairs: &[(String, String)], value: &dyn Fn(&str) -> String| {
            let entries: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), value(v)))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        };
        let mut item = format!("from: {from}");
        if !states.is_empty() {
            item.push_str(&format!(", states: {}", map(states, &|v| scalar(v))));
        }
        if !context.is_empty() {
            item.push_str(&format!(", context: {}", map(context, &|v| quoted(v))));
        }
        let edit = self.insert_ordered(
            root,
            "migrations",
            Value::Text(format!("[{{ {item} }}]")),
            &top_level_keys(),
        )?;
        Some(vec![edit])
    }
}

/// The keys of a machine file's top level, in the order the format prints
/// them.
fn top_level_keys() -> Vec<&'static str> {
    MACHINE_KEYS
        .iter()
        .chain(&ROOT_STATE_KEYS)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::tests::{edited, span_of};
    use crate::syntax::edit::Editor;

    #[test]
    fn sets_the_version_and_declares_a_migration() {
        let text = "machine: m\nversion: 1 # the first\ninitial: a\nstates:\n  a: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.set_version(2)),
            "machine: m\nversion: 2 # the first\ninitial: a\nstates:\n  a: {}\n"
        );
        let states = [("old.x".to_string(), "a".to_string())];
        let context = [("total".to_string(), "context.total * 2".to_string())];
        assert_eq!(
            edited(text, editor.add_migration(1, &states, &context)),
            "machine: m\nversion: 1 # the first\nmigrations: [{ from: 1, states: { old.x: a }, context: { total: \"context.total * 2\" } }]\ninitial: a\nstates:\n  a: {}\n"
        );
        let text = "machine: m\ninitial: a\nstates:\n  a: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.set_version(1)),
            "machine: m\nversion: 1\ninitial: a\nstates:\n  a: {}\n"
        );
        let text = "machine: m\nversion: 2\nmigrations: []\nstates: {}\n";
        assert!(
            YamlEditor::new(text)
                .unwrap()
                .add_migration(1, &[], &[])
                .is_none()
        );
    }

    #[test]
    fn declares_events_in_the_block_style_of_the_file() {
        let text =
            "machine: m\nevents:\n    A: { id: a }   # first\n# states\nstates:\n    s: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("B")),
            "machine: m\nevents:\n    A: { id: a }   # first\n    B: {}\n# states\nstates:\n    s: {}\n"
        );
    }

    #[test]
    fn declares_events_in_a_flow_mapping_and_creates_the_section() {
        let text = "machine: m\nevents: { A: {} }\ninitial: s\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("B")),
            "machine: m\nevents: { A: {}, B: {} }\ninitial: s\n"
        );
        let text = "machine: m\n# the states\ninitial: s\nstates:\n   s: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("pago.ok")),
            "machine: m\nevents:\n   pago.ok: {}\n# the states\ninitial: s\nstates:\n   s: {}\n"
        );
        let text = "machine: m\nevents:\ninitial: s\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("B")),
            "machine: m\nevents:\n  B: {}\ninitial: s\n"
        );
    }

    #[test]
    fn adds_an_allow_to_the_state_its_section_or_the_top_level() {
        let text = "machine: m\nstates:\n  s:\n    on: { E: t }\n  t: {}\n  u:\n";
        let editor = YamlEditor::new(text).unwrap();
        let key = |name: &str| {
            let at = text.find(&format!("\n  {name}:")).unwrap() + 3;
            Span::new(at, at + name.len())
        };
        assert_eq!(
            edited(text, editor.add_allow(Some(key("s")), "x-y", "why")),
            "machine: m\nstates:\n  s:\n    on: { E: t }\n    allow:\n      x-y: \"why\"\n  t: {}\n  u:\n"
        );
        // A state written `{}` in flow style, and one left empty.
        assert_eq!(
            edited(text, editor.add_allow(Some(key("t")), "x-y", "why")),
            "machine: m\nstates:\n  s:\n    on: { E: t }\n  t: { allow: { x-y: \"why\" } }\n  u:\n"
        );
        assert_eq!(
            edited(text, editor.add_allow(Some(key("u")), "x-y", "why")),
            "machine: m\nstates:\n  s:\n    on: { E: t }\n  t: {}\n  u:\n    allow:\n      x-y: \"why\"\n"
        );
        // The top level, last as the format prints it; an existing
        // section grows.
        let text = "machine: m\nstates:\n  s: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.add_allow(None, "x-y", "why")),
            "machine: m\nstates:\n  s: {}\nallow:\n  x-y: \"why\"\n"
        );
        let text = "s:\n  allow:\n    a: \"x\"\n  on: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.add_allow(Some(span_of(text, "s:")), "b", "y")),
            "s:\n  allow:\n    a: \"x\"\n    b: \"y\"\n  on: {}\n"
        );
    }

    #[test]
    fn removes_an_allow_entry_or_the_section() {
        let text = "s:\n  allow:\n    a: \"x\"\n    b: >\n      y\n  on: {}\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.remove_allow(span_of(text, "b:"), false)),
            "s:\n  allow:\n    a: \"x\"\n  on: {}\n"
        );
        assert_eq!(
            edited(text, editor.remove_allow(span_of(text, "a:"), true)),
            "s:\n  on: {}\n"
        );
        let text = "s: { allow: { a: x, b: y }, on: {} }\n";
        let editor = YamlEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.remove_allow(span_of(text, "a:"), false)),
            "s: { allow: { b: y }, on: {} }\n"
        );
        assert_eq!(
            edited(text, editor.remove_allow(span_of(text, "b:"), false)),
            "s: { allow: { a: x }, on: {} }\n"
        );
        assert_eq!(
            edited(text, editor.remove_allow(span_of(text, "b:"), true)),
            "s: { on: {} }\n"
        );
    }

    #[test]
    fn guards_and_assigns_keep_their_style() {
        let text = "on:\n  E:\n    target: b\n    actions:\n      - assign: { n: \"context.n + 1\" }\n  F:\n    guard: 'context.ok'\n    actions: []\n";
        let editor = YamlEditor::new(text).unwrap();
        let e = span_of(text, "E:");
        let f = span_of(text, "F:");
        assert_eq!(
            edited(text, editor.add_guard(e, "!(event.k in context.seen)")),
            "on:\n  E:\n    target: b\n    guard: \"!(event.k in context.seen)\"\n    actions:\n      - assign: { n: \"context.n + 1\" }\n  F:\n    guard: 'context.ok'\n    actions: []\n"
        );
        assert_eq!(
            edited(text, editor.add_guard(f, "!(event.k in context.seen)")),
            "on:\n  E:\n    target: b\n    actions:\n      - assign: { n: \"context.n + 1\" }\n  F:\n    guard: \"!(event.k in context.seen) && (context.ok)\"\n    actions: []\n"
        );
        let n = span_of(text, "n: \"context");
        assert_eq!(
            edited(
                text,
                editor.add_assign_field(n, "seen", "context.seen + [event.k]")
            ),
            "on:\n  E:\n    target: b\n    actions:\n      - assign: { n: \"context.n + 1\", seen: \"context.seen + [event.k]\" }\n  F:\n    guard: 'context.ok'\n    actions: []\n"
        );
    }

    #[test]
    fn guards_a_transition_of_a_list() {
        let text = "on:\n  E:\n    - target: a\n      guard: context.ok\n    - target: b\n      actions: []\n";
        let editor = YamlEditor::new(text).unwrap();
        let second = span_of(text, "target: b");
        assert_eq!(
            edited(text, editor.add_guard(second, "!(event.k in context.seen)")),
            text.replace(
                "      actions: []",
                "      guard: \"!(event.k in context.seen)\"\n      actions: []"
            )
        );
        let first = span_of(text, "target: a");
        assert_eq!(
            edited(text, editor.add_guard(first, "!(event.k in context.seen)")),
            text.replace(
                "guard: context.ok",
                "guard: \"!(event.k in context.seen) && (context.ok)\""
            )
        );
    }

    #[test]
    fn renames_inside_the_quotes() {
        let text = "a: 'x'\nb: \"y\"\nc: z\n";
        assert_eq!(rename(text, span_of(text, "'x'"), "#w").replacement, "'#w'");
        assert_eq!(
            rename(text, span_of(text, "\"y\""), "w").replacement,
            "\"w\""
        );
        assert_eq!(rename(text, span_of(text, "z"), "#w").replacement, "'#w'");
    }
}
