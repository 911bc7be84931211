//! Fix edits in XState sources: entries added to the object literals of a
//! machine config (`meta.idemchart.events` and the events in it), at their
//! oxc spans, in the layout of the file; every other byte stays.
//!
//! Only what a config literal says exactly is edited: a declared event
//! (S005), an event's id field (I006), and the `allow`s the editor adds
//! (a `// idemchart-allow` comment above a state, an entry of the root's
//! `meta.idemchart.allow`). Everything else, and any object
//! that is not written as a literal in the linted file (a `meta` bound to
//! a name, a spread, an object of a sibling module), gets no fix.

use oxc_ast::ast::{Expression, ObjectPropertyKind};
use oxc_span::GetSpan;

use super::scope::{Node, Reader};
use crate::diagnostic::Edit;
use crate::span::Span;
use crate::syntax::edit::Editor;

/// An object literal of the linted file, with the entries a fix may look
/// into.
#[derive(Clone, Debug)]
pub struct ObjectAt {
    /// From `{` to `}`.
    pub span: Span,
    /// The last property, after which an entry is added.
    pub last: Option<Span>,
    /// Each property's static key, the key's place and, where the fix may
    /// look into it, its value's object literal.
    pub entries: Vec<(String, Span, Option<ObjectAt>)>,
}

impl ObjectAt {
    fn get(&self, key: &str) -> Option<&(String, Span, Option<ObjectAt>)> {
        self.entries.iter().rev().find(|(k, _, _)| k == key)
    }
}

/// The path under the config whose objects a fix edits: `meta`, then
/// `idemchart`, then `events`, then each event.
const PATH: [&str; 3] = ["meta", "idemchart", "events"];

/// The root's suppressions, `meta.idemchart.allow`, beside the events.
const ALLOW_PATH: [&str; 3] = ["meta", "idemchart", "allow"];

impl<'a> Reader<'a> {
    /// The config's object literal and those along `PATH` in it, where the
    /// linted file writes them in place.
    pub(super) fn anchors(&mut self, config: Node<'a>) -> Option<ObjectAt> {
        self.object_at(config, 0)
    }

    fn object_at(&mut self, n: Node<'a>, depth: usize) -> Option<ObjectAt> {
        let n = self.resolve(n).ok()?;
        let Expression::ObjectExpression(o) = n.e.get_inner_expression() else {
            return None;
        };
        let span = self.span(n.t, o.span);
        // Only the linted file (offset 0 onwards) is edited.
        if span.end as usize > self.sources.main().text.len() {
            return None;
        }
        let mut entries = Vec::new();
        let mut last = None;
        for p in &o.properties {
            last = Some(self.span(n.t, p.span()));
            let ObjectPropertyKind::ObjectProperty(p) = p else {
                continue;
            };
            let Some(key) = p.key.static_name().filter(|_| !p.computed) else {
                continue;
            };
            let descend = match PATH.get(depth) {
                Some(step) => *step == key.as_ref() || ALLOW_PATH[depth] == key.as_ref(),
                None => depth == PATH.len(),
            };
            let value = if descend {
                self.object_at(
                    Node {
                        e: &p.value,
                        t: n.t,
                    },
                    depth + 1,
                )
            } else {
                None
            };
            entries.push((key.to_string(), self.span(n.t, p.key.span()), value));
        }
        Some(ObjectAt {
            span,
            last,
            entries,
        })
    }
}

/// Writes fixes into one machine's config.
pub struct XStateEditor<'t> {
    text: &'t str,
    config: ObjectAt,
    /// JSON quotes every key and string with `"`.
    json: bool,
    quote: char,
}

impl<'t> XStateEditor<'t> {
    pub fn new(text: &'t str, config: ObjectAt, json: bool) -> XStateEditor<'t> {
        // Strings are written in the quotes the file uses most.
        let single = text.matches('\'').count();
        let double = text.matches('"').count();
        let quote = if json || double > single { '"' } else { '\'' };
        XStateEditor {
            text,
            config,
            json,
            quote,
        }
    }

    fn key(&self, name: &str) -> String {
        if is_identifier(name) && !self.json {
            name.to_string()
        } else {
            self.string(name)
        }
    }

    fn string(&self, text: &str) -> String {
        let q = self.quote;
        let escaped = text.replace('\\', "\\\\").replace(q, &format!("\\{q}"));
        format!("{q}{escaped}{q}")
    }

    /// The edit that adds `key: value` to `object`, after its last entry,
    /// on a line of its own where the object spreads over lines, keeping
    /// a trailing comma where the object has one.
    fn insert(&self, object: &ObjectAt, key: &str, value: &str) -> Option<Edit> {
        let (start, end) = (object.span.start as usize, object.span.end as usize);
        let whole = self.text.get(start..end)?;
        if !whole.starts_with('{') || !whole.ends_with('}') {
            return None;
        }
        let entry = format!("{}: {value}", self.key(key));
        let Some(last) = object.last else {
            // `{}`: written whole, unless something (a comment) is inside.
            if !whole[1..whole.len() - 1].trim().is_empty() {
                return None;
            }
            return Some(Edit::new(object.span, format!("{{ {entry} }}")));
        };
        let after = last.end as usize;
        let rest = self.text.get(after..end - 1)?;
        let comma = rest
            .trim_start()
            .starts_with(',')
            .then(|| after + rest.find(',').unwrap_or(0) + 1);
        let multiline = whole.contains('\n');
        let (at, text) = match (multiline, comma) {
            (true, Some(comma)) => {
                // After the comma's line, so that a comment on it stays there.
                let line_end = crate::syntax::edit::line_end(self.text, comma).min(end - 1);
                (
                    line_end,
                    format!("\n{}{entry},", self.indent_of(last.start)),
                )
            }
            (true, None) => (after, format!(",\n{}{entry}", self.indent_of(last.start))),
            (false, Some(comma)) => (comma, format!(" {entry},")),
            (false, None) => (after, format!(", {entry}")),
        };
        Some(Edit::new(Span::new(at, at), text))
    }

    /// The white space that starts the line holding `at`.
    fn indent_of(&self, at: u32) -> String {
        let line_start = crate::syntax::edit::line_start(self.text, at as usize);
        self.text[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect()
    }

    /// `{ events: { NAME: {} } }` from the steps of `PATH` not yet written.
    fn nested(&self, steps: &[&str], leaf: &str) -> String {
        steps.iter().rev().fold(leaf.to_string(), |inner, step| {
            format!("{{ {}: {inner} }}", self.key(step))
        })
    }
}

impl Editor for XStateEditor<'_> {
    /// A duration of `meta.idemchart.dedup` is a string the declaration's
    /// span does not name: no fix.
    fn replace_duration(&self, _: Span, _: &str) -> Option<Edit> {
        None
    }

    fn declare_event(&self, name: &str) -> Option<Vec<Edit>> {
        self.add_under(&PATH, name, "{}")
    }

    /// Comments and `meta.idemchart.allow` are not edited yet: no fix.
    fn remove_allow(&self, _: Span, _: bool) -> Option<Vec<Edit>> {
        None
    }

    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>> {
        let mut object = &self.config;
        for step in PATH {
            object = object.get(step)?.2.as_ref()?;
        }
        let (_, _, value) = object
            .entries
            .iter()
            .find(|(_, key, _)| key.start == event.start)?;
        let value = value.as_ref()?;
        if value.get("id").is_some() {
            return None;
        }
        Some(vec![self.insert(value, "id", &self.string(field))?])
    }

    /// The context, guards and assigns are JavaScript: no fix.
    fn add_context_list(&self, _: &str) -> Option<Vec<Edit>> {
        None
    }

    fn add_guard(&self, _: Span, _: &str) -> Option<Vec<Edit>> {
        None
    }

    fn add_assign_field(&self, _: Span, _: &str, _: &str) -> Option<Vec<Edit>> {
        None
    }

    /// On a state, the comment `// idemchart-allow LINT: reason` on a line
    /// of its own above the state's key, which must start its line (JSON
    /// has no comments: no action there); on the machine, an entry of the
    /// root's `meta.idemchart.allow`.
    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>> {
        let Some(key) = state else {
            return self.add_under(&ALLOW_PATH, lint, &self.string(reason));
        };
        let at = key.start as usize;
        if self.json
            || reason.contains(['\n', '\r'])
            || !crate::syntax::edit::starts_line(self.text, at)
        {
            return None;
        }
        let start = crate::syntax::edit::line_start(self.text, at);
        let indent = self.indent_of(key.start);
        Some(vec![Edit::insert(
            start,
            format!("{indent}// idemchart-allow {lint}: {reason}\n"),
        )])
    }
}

impl XStateEditor<'_> {
    /// Adds `name: value` to the object at `path` under the config, writing
    /// the objects of the path that are missing; `None` where one is
    /// written but not as a literal here, or `name` is there already.
    fn add_under(&self, path: &[&str], name: &str, value: &str) -> Option<Vec<Edit>> {
        let mut object = &self.config;
        for (depth, step) in path.iter().enumerate() {
            match object.get(step) {
                // Written, but not as a literal here: no fix.
                Some((_, _, None)) => return None,
                Some((_, _, Some(inner))) => object = inner,
                None => {
                    let value = self.nested(&path[depth + 1..], &self.nested(&[name], value));
                    return Some(vec![self.insert(object, step, &value)?]);
                }
            }
        }
        if object.get(name).is_some() {
            return None;
        }
        Some(vec![self.insert(object, name, value)?])
    }
}

/// Whether `name` may stand bare as a JavaScript property key (ASCII
/// identifiers only, which is all a fix writes unquoted).
pub(crate) fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Fix;
    use crate::fix::{apply, editor};
    use crate::span::{SourceFile, Span};

    /// The text after the editor allows `lint` on the state whose key is
    /// the first `state` in the text (the machine when `None`).
    fn allowed(path: &str, text: &str, state: Option<&str>) -> Option<String> {
        let file = SourceFile::new(path, text);
        let key = state.map(|s| {
            let at = text.find(s).expect("the state's key");
            Span::new(at, at + s.len())
        });
        let edits = editor(&file)?.add_allow(key, "cumulative-update", "why")?;
        Some(apply(text, &[&Fix::safe_edits("allow", edits)]).text)
    }

    const MACHINE: &str = "import { createMachine } from 'xstate';\n\
        export const m = createMachine({\n  initial: 'a',\n  states: {\n    a: { on: { GO: 'b' } },\n    b: {},\n  },\n});\n";

    #[test]
    fn a_state_gets_a_comment_above_its_key() {
        let text = allowed("m.ts", MACHINE, Some("b: {}")).unwrap();
        assert!(
            text.contains("    // idemchart-allow cumulative-update: why\n    b: {},\n"),
            "{text}"
        );
        let crlf = MACHINE.replace('\n', "\r\n");
        let text = allowed("m.ts", &crlf, Some("b: {}")).unwrap();
        assert!(
            text.contains("    // idemchart-allow cumulative-update: why\r\n    b: {},\r\n"),
            "{text}"
        );
    }

    #[test]
    fn a_key_that_does_not_start_its_line_or_json_gets_none() {
        let one_line = MACHINE.replace("{\n    a: { on: { GO: 'b' } },\n", "{ a: {},\n");
        assert_eq!(allowed("m.ts", &one_line, Some("a: {}")), None);
        let json = "{\n  \"initial\": \"a\",\n  \"states\": {\n    \"a\": {}\n  }\n}\n";
        assert_eq!(allowed("m.json", json, Some("\"a\": {}")), None);
        // The machine's `allow` is JSON like the rest.
        let text = allowed("m.json", json, None).unwrap();
        assert!(
            text.contains(
                "\"meta\": { \"idemchart\": { \"allow\": { \"cumulative-update\": \"why\" } } }"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_machine_gets_an_entry_of_its_meta_allow() {
        let with_allow = MACHINE.replace(
            "  initial: 'a',\n",
            "  meta: { idemchart: { allow: { 'unused-suppression': 'ok' } } },\n  initial: 'a',\n",
        );
        let text = allowed("m.ts", &with_allow, None).unwrap();
        assert!(
            text.contains(
                "meta: { idemchart: { allow: { 'unused-suppression': 'ok', 'cumulative-update': 'why' } } },"
            ),
            "{text}"
        );
        // Allowed already: nothing to add.
        assert_eq!(
            allowed("m.ts", &text, None),
            None,
            "the lint is there already"
        );
    }
}
