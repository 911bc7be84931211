//! SCXML → the document tree, which the lowering turns into a machine.
//!
//! What is imported, and how:
//!
//! - `<scxml>` is the root: its `initial` (one or more ids) or else its first
//!   child state, its `name` (else `scxml`). `<state>`, `<parallel>`,
//!   `<final>` and `<history>` (with `type` and its default `<transition>`)
//!   become states. A compound state's initial is its `initial` attribute, its
//!   `<initial>` element, or else its first child state, always written out.
//! - Each state's key is its SCXML id, with `.` (not allowed in keys) replaced
//!   by `_`; such a state keeps the SCXML id as its `id`. A target that is the
//!   source or a sibling of it is written as the key, a child of the source as
//!   `.key`, anything else as `#id`, and the state gets the SCXML id as its
//!   `id`. Nested compound and parallel states always keep their id, so that
//!   their `done.state.ID` events carry the SCXML name.
//! - `<transition>`: `event` → the descriptor, each SCXML descriptor `foo`
//!   (which matches `foo.bar` too) written as `foo.*`, and `*` as `*`; no
//!   event → `always`; `cond` → guard; `target` → targets. A transition that
//!   SCXML runs by leaving and re-entering its source (an external one into
//!   the source's subtree, or any to the source itself) gets `reenter: true`;
//!   a `type="internal"` one into a compound source's descendants does not,
//!   while one into a parallel source's does, since SCXML runs it as
//!   external.
//! - The transitions of one descriptor are kept together, as the machine
//!   format does; where that would let a transition overtake an earlier one
//!   that takes the same events, the import fails at it.
//! - `<onentry>`, `<onexit>`, and the content of an `<initial>` transition,
//!   which runs after the state's entry actions and only when the state is
//!   entered by default: it becomes the state's last entry actions, where no
//!   target, history state or deep history above can enter the state
//!   otherwise, and an error where one can.
//! - `<raise>`, `<send>` (`event`, `delay`, `id`, `<param>`, `namelist`; to
//!   the external queue, `target="#_internal"` raises), `<cancel sendid>`,
//!   `<log>` (with a `label`, the logged value is `{"label": value}`; an
//!   expression that cannot be translated logs its text, marked
//!   `untranslated: `, because a log has no effect on the machine),
//!   `<assign location expr>` and `<datamodel>`/`<data>` (context fields with
//!   literal initial values). Expressions are parsed with oxc and translated
//!   by the XState front-end's translator (`xstate::scxml_to_cel`), the one
//!   JavaScript → CEL translation: data model variables as `context.NAME`,
//!   `_event.name` as `event.type`, `_event.data.F` as `event.F`, `In('id')`
//!   as `in_state("path")`, `x.length` as `size(x)`.
//! - A `<send>` that SCXML defines to fail is imported as the failure: an
//!   unknown `type` or a `target` that is no session raise `error.execution`,
//!   and end the block as an execution error does (the rest of the block is
//!   never run, so it is not imported); a target `#_scxml_ID` of another
//!   session raises `error.communication`.
//! - An `<if>` whose conditions are known where its block runs is replaced by
//!   the branch taken: in a state's entry and exit actions, `In()` of the
//!   state or an ancestor is true and `In()` of a descendant is false (SCXML
//!   enters ancestors first and exits descendants first); literal `true` and
//!   `false` are known everywhere. The branches not taken never run and are
//!   not imported.
//!
//! Everything else is an error at the element or attribute that cannot be
//! converted: `<script>`, `<invoke>`, `<foreach>`, any other `<if>`, `<donedata>`,
//! `<content>`, attributes computed at run time (`eventexpr`, `delayexpr`,
//! ...), expressions outside the translated subset, late binding, unknown
//! elements and attributes. Nothing is dropped silently. An error inside a
//! translated expression is placed at its place in the attribute, and the
//! lowering's errors about a translated expression at the attribute's start.
//!
//! That is the strict import (`import`), for machines that run. Read as
//! written (`import_as_written`, for `check` and `lint`), what cannot be
//! converted is opaque or left out, each with a note (S011), as the XState
//! front-end does (`docs/machine-format.md`, "SCXML documents"): a condition
//! is the host guard `cond_LxCy`; an element of executable content with
//! anything untranslatable inside is the host action `ELEMENT_LxCy`;
//! `<invoke>` is an invocation, its `done.invoke.ID` transitions its
//! `onDone`, the invoking state's error transitions copied into its
//! `onError`; unknown attributes, foreign elements and attributes,
//! `<donedata>`, `<finalize>` and the document's `<script>` are left out.
//! What is wrong in the document itself stays an error.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::xml::{self, Attribute, Element};
use super::xstate::{self, DataModel, View};
use crate::diagnostic::{Diagnostic, LoadError};
use crate::model::{EventDescriptor, EventPattern, Name, OpaqueKind, OpaquePart};
use crate::span::{SourceFile, Span};
use crate::syntax::tree::{
    ActionDoc, ContextDoc, ExprText, InvokeDoc, MachineDoc, StateDoc, TransitionDoc,
};

/// Converts an SCXML document to the syntax-neutral document tree, or
/// reports everything in it that cannot be converted.
pub fn import(text: &str) -> Result<MachineDoc, Vec<Diagnostic>> {
    import_with("", text, Mode::Strict).0
}

/// Converts an SCXML document as it is written, for the linter: what the
/// machine format cannot say is made opaque (host guards, actions and
/// services) or left out, each with a note, given with the document. What
/// is wrong in the document itself is still an error.
pub fn import_as_written(
    file: &SourceFile,
) -> (Result<MachineDoc, Vec<Diagnostic>>, Vec<Diagnostic>) {
    import_with(&file.path, &file.text, Mode::AsWritten)
}

/// How an importer treats what the machine format cannot say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    /// An error at its place: the machine can be run as imported.
    #[default]
    Strict,
    /// Opaque or left out, with a note: the machine can be linted.
    AsWritten,
}

/// Imports the document `text` of the file `path` (which names the
/// places of opaque parts for people).
fn import_with(
    path: &str,
    text: &str,
    mode: Mode,
) -> (Result<MachineDoc, Vec<Diagnostic>>, Vec<Diagnostic>) {
    // Its JavaScript goes through oxc and the XState front-end's translator,
    // which recurse per level of an expression, up to `expr::MAX_DEPTH`.
    let levels = crate::expr::MAX_DEPTH;
    crate::stack::with_stack(crate::stack::for_scripts(levels), || {
        import_on_this_stack(path, text, mode)
    })
}

fn import_on_this_stack(
    path: &str,
    text: &str,
    mode: Mode,
) -> (Result<MachineDoc, Vec<Diagnostic>>, Vec<Diagnostic>) {
    let root = match xml::parse(text) {
        Ok(root) => root,
        Err(d) => return (Err(vec![*d]), Vec::new()),
    };
    if root.name != "scxml" || !in_scxml(&root) {
        let error = LoadError::InvalidValue {
            message: format!(
                "the root element is `<{}>`; an SCXML document starts with `<scxml>`",
                root.name
            ),
        }
        .at(root.span, []);
        return (Err(vec![error]), Vec::new());
    }
    let mut importer = Importer {
        mode,
        lines: SourceFile::new(path, text),
        ..Importer::default()
    };
    importer.collect(&root, None);
    importer.assign_keys();
    let doc = importer.document(&root);
    let mut notes = importer.notes;
    notes.sort_by_key(|d| d.span.start);
    let mut errors = importer.errors;
    errors.append(&mut importer.untranslated);
    if errors.is_empty() {
        (Ok(doc), notes)
    } else {
        errors.sort_by_key(|d| d.span.start);
        (Err(errors), notes)
    }
}

const SCXML_PROCESSOR: [&str; 2] = ["http://www.w3.org/TR/scxml/#SCXMLEventProcessor", "scxml"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Root,
    State,
    Parallel,
    Final,
    History { deep: bool },
}

/// One state of the document, numbered in document order (the root first).
struct Node {
    scxml_id: Option<String>,
    key: String,
    parent: Option<usize>,
    children: Vec<usize>,
    kind: Kind,
    /// The `id` attribute's value, else the start tag.
    span: Span,
    /// Some target names it as `#id`.
    targeted_by_id: bool,
}

#[derive(Default)]
struct Importer {
    mode: Mode,
    /// The document's lines, for the names of opaque parts (`cond_L3C5`).
    lines: SourceFile,
    /// What is wrong in the document.
    errors: Vec<Diagnostic>,
    /// What the machine format cannot say: errors, except where the
    /// importer takes the document as written and makes the part around
    /// them opaque.
    untranslated: Vec<Diagnostic>,
    notes: Vec<Diagnostic>,
    /// Host guards made for conditions that cannot be translated.
    host_guards: Vec<Name>,
    /// The host actions that stand for executable content not imported.
    opaque: Vec<OpaquePart>,
    /// The names made up for opaque parts, with what the author sees.
    stand_ins: IndexMap<String, String>,
    /// What `_event.data` is where expressions are translated: the event's
    /// payload, or the output or error in the handlers of an invocation's
    /// completion.
    event_data: View,
    /// The invocations by SCXML id (`id` attribute), with their state.
    invoke_ids: HashMap<String, usize>,
    nodes: Vec<Node>,
    index: HashMap<*const Element, usize>,
    by_id: HashMap<String, usize>,
    /// Data model variables in document order, with their `<data>` elements.
    data: IndexMap<String, Element>,
    /// Every resolved target: (the state whose transition, initial or
    /// history default names it, the state named).
    targets: Vec<(usize, usize)>,
    /// States whose `<initial>` transition has actions, with its place.
    initial_actions: Vec<(usize, Span)>,
}

/// How a target is written: relative to what.
#[derive(Clone, Copy)]
enum Relative {
    Transition,
    Initial,
    HistoryDefault,
}

/// Where a block of executable content runs.
#[derive(Clone, Copy)]
enum Place {
    Entry(usize),
    Exit(usize),
    Transition,
}

/// What one `<send>` turns into.
enum Sent {
    Action(ActionDoc),
    /// An action that raises an execution error: the rest of the block is
    /// not run.
    Fails(ActionDoc),
}

impl DataModel for Importer {
    fn is_data(&self, name: &str) -> bool {
        self.data.contains_key(name)
    }

    fn state_path(&self, id: &str) -> Option<String> {
        self.by_id.get(id).map(|&n| self.path(n))
    }

    fn view(&self) -> View {
        self.event_data
    }
}

const SCXML_NAMESPACE: &str = "http://www.w3.org/2005/07/scxml";

/// The elements of SCXML that are no executable content.
const SCXML_ELEMENTS: [&str; 16] = [
    "scxml",
    "state",
    "parallel",
    "final",
    "history",
    "initial",
    "transition",
    "onentry",
    "onexit",
    "datamodel",
    "data",
    "donedata",
    "content",
    "param",
    "invoke",
    "finalize",
];

/// Whether an element is SCXML's: in its namespace, or in none.
fn in_scxml(element: &Element) -> bool {
    element
        .namespace
        .as_deref()
        .is_none_or(|ns| ns == SCXML_NAMESPACE)
}

fn is_state_element(element: &Element) -> bool {
    in_scxml(element)
        && matches!(
            element.name.as_str(),
            "state" | "parallel" | "final" | "history"
        )
}

impl Importer {
    fn error(&mut self, message: String, span: Span) {
        self.errors
            .push(LoadError::InvalidValue { message }.at(span, []));
    }

    /// Something the machine format cannot say.
    fn cannot(&mut self, message: String, span: Span) {
        self.untranslated
            .push(LoadError::InvalidValue { message }.at(span, []));
    }

    fn note(&mut self, message: String, span: Span) {
        self.notes.push(super::note(message, span));
    }

    fn unsupported(&mut self, element: &Element, why: &str) {
        self.cannot(
            format!("`<{}>` cannot be imported: {why}", element.name),
            element.span,
        );
    }

    /// An element of another namespace: an error, or as written a note (a
    /// processor may ignore it).
    fn foreign(&mut self, element: &Element) {
        let message = format!(
            "unknown element `<{}>` of the namespace `{}`",
            element.name,
            element.namespace.as_deref().unwrap_or_default()
        );
        match self.mode {
            Mode::Strict => self.error(message, element.span),
            Mode::AsWritten => self.note(format!("{message} is not imported"), element.span),
        }
    }

    /// The name of an opaque part made for `what` at `span`: `what_LxCy`.
    fn opaque_name(&self, what: &str, span: Span) -> String {
        let (line, column) = self.lines.line_col(span.start);
        format!("{what}_L{line}C{column}")
    }

    /// `path:line:column` of a place, for people.
    fn place(&self, span: Span) -> String {
        let (line, column) = self.lines.line_col(span.start);
        format!("{}:{line}:{column}", self.lines.path)
    }

    /// The name of an opaque part made for `what` at `span`, recorded with
    /// what the author sees instead (`the `<if>` at chart.scxml:26:9`):
    /// `seen` with the place filled in.
    fn stand_in(&mut self, what: &str, span: Span, seen: &str) -> String {
        let name = self.opaque_name(what, span);
        let place = self.place(span);
        self.stand_ins
            .insert(name.clone(), format!("{seen} at {place}"));
        name
    }

    /// Numbers the states and gathers ids and data model variables.
    fn collect(&mut self, element: &Element, parent: Option<usize>) {
        let index = self.nodes.len();
        let kind = match element.name.as_str() {
            "scxml" => Kind::Root,
            "parallel" => Kind::Parallel,
            "final" => Kind::Final,
            "history" => Kind::History {
                deep: element.attribute("type").is_some_and(|t| t.value == "deep"),
            },
            _ => Kind::State,
        };
        let id = element.attribute("id");
        self.nodes.push(Node {
            scxml_id: id.map(|a| a.value.clone()),
            key: String::new(),
            parent,
            children: Vec::new(),
            kind,
            span: id.map_or(element.span, |a| a.span),
            targeted_by_id: false,
        });
        self.index.insert(element as *const Element, index);
        if let Some(parent) = parent {
            self.nodes[parent].children.push(index);
        }
        if let Some(id) = id {
            if let Some(&first) = self.by_id.get(&id.value) {
                let first = self.nodes[first].span;
                self.errors.push(
                    LoadError::Duplicate {
                        key: id.value.clone(),
                        first,
                    }
                    .at(id.span, []),
                );
            } else {
                self.by_id.insert(id.value.clone(), index);
            }
        }
        for child in &element.children {
            if is_state_element(child) {
                self.collect(child, Some(index));
            } else if child.name == "invoke" && in_scxml(child) {
                if let Some(id) = child.attribute("id") {
                    self.invoke_ids.insert(id.value.clone(), index);
                }
            } else if child.name == "datamodel" && in_scxml(child) {
                for data in &child.children {
                    if data.name != "data" || !in_scxml(data) {
                        self.error(
                            format!("unexpected `<{}>` inside `<datamodel>`", data.name),
                            data.span,
                        );
                        continue;
                    }
                    let Some(id) = self.required(data, "id") else {
                        continue;
                    };
                    if let Some(first) = self.data.get(&id.value) {
                        let first = first.attribute("id").map_or(first.span, |a| a.span);
                        self.errors.push(
                            LoadError::Duplicate {
                                key: id.value.clone(),
                                first,
                            }
                            .at(id.span, []),
                        );
                    } else {
                        self.data.insert(id.value.clone(), data.clone());
                    }
                }
            }
        }
    }

    /// Gives each state a key unique among its siblings: its SCXML id where
    /// that is a valid key, else the id with `_` for `.`, or a made-up name
    /// for a state without an id.
    fn assign_keys(&mut self) {
        for parent in 0..self.nodes.len() {
            let children = self.nodes[parent].children.clone();
            let mut taken: Vec<String> = children
                .iter()
                .filter_map(|&c| self.nodes[c].scxml_id.clone())
                .filter(|id| !id.contains('.'))
                .collect();
            for (position, &child) in children.iter().enumerate() {
                let node = &self.nodes[child];
                let base = match &node.scxml_id {
                    Some(id) if !id.contains('.') => {
                        self.nodes[child].key = id.clone();
                        continue;
                    }
                    Some(id) => id.replace('.', "_"),
                    None => {
                        let kind = match node.kind {
                            Kind::Parallel => "parallel",
                            Kind::Final => "final",
                            Kind::History { .. } => "history",
                            _ => "state",
                        };
                        format!("{kind}{}", position + 1)
                    }
                };
                let mut key = base.clone();
                let mut n = 2;
                while taken.contains(&key) {
                    key = format!("{base}_{n}");
                    n += 1;
                }
                taken.push(key.clone());
                self.nodes[child].key = key;
            }
        }
    }

    fn path(&self, node: usize) -> String {
        let mut keys = Vec::new();
        let mut at = Some(node);
        while let Some(n) = at {
            if self.nodes[n].kind != Kind::Root {
                keys.push(self.nodes[n].key.as_str());
            }
            at = self.nodes[n].parent;
        }
        keys.reverse();
        keys.join(".")
    }

    fn is_proper_descendant(&self, a: usize, b: usize) -> bool {
        let mut at = self.nodes[a].parent;
        while let Some(n) = at {
            if n == b {
                return true;
            }
            at = self.nodes[n].parent;
        }
        false
    }

    fn is_compound(&self, node: usize) -> bool {
        matches!(self.nodes[node].kind, Kind::State | Kind::Root)
            && self.nodes[node]
                .children
                .iter()
                .any(|&c| !matches!(self.nodes[c].kind, Kind::History { .. }))
    }

    /// Reports attributes that are not `allowed`; `unsupported` ones with the
    /// reason they cannot be imported.
    fn check_attributes(
        &mut self,
        element: &Element,
        allowed: &[&str],
        unsupported: &[(&str, &str)],
    ) {
        for attribute in &element.attributes {
            let name = attribute.name.as_str();
            if name == "xmlns" || name.starts_with("xmlns:") || allowed.contains(&name) {
                continue;
            }
            match unsupported.iter().find(|(n, _)| *n == name) {
                Some((_, why)) => self.cannot(
                    format!(
                        "the attribute `{name}` of `<{}>` cannot be imported: {why}",
                        element.name
                    ),
                    attribute.span,
                ),
                None if self.mode == Mode::AsWritten => {
                    let what = if name.contains(':') {
                        "of another namespace"
                    } else {
                        "unknown to SCXML"
                    };
                    self.note(
                        format!(
                            "the attribute `{name}` of `<{}>` is {what}: it is not imported",
                            element.name
                        ),
                        attribute.span,
                    );
                }
                None => self.error(
                    format!("unknown attribute `{name}` on `<{}>`", element.name),
                    attribute.span,
                ),
            }
        }
    }

    fn required<'e>(&mut self, element: &'e Element, name: &str) -> Option<&'e Attribute> {
        let found = element.attribute(name);
        if found.is_none() {
            self.error(
                format!("`<{}>` needs the attribute `{name}`", element.name),
                element.span,
            );
        }
        found
    }

    fn no_text(&mut self, element: &Element) {
        if let Some(span) = element.text_span {
            self.error(format!("unexpected text inside `<{}>`", element.name), span);
        }
    }

    fn document(&mut self, root: &Element) -> MachineDoc {
        self.check_attributes(
            root,
            &["initial", "name", "version", "datamodel", "binding"],
            &[("exmode", "the machine format has no strict mode")],
        );
        if let Some(model) = root.attribute("datamodel")
            && !matches!(model.value.as_str(), "ecmascript" | "null")
        {
            self.cannot(
                format!(
                    "the `{}` data model cannot be imported: expressions are translated from ECMAScript",
                    model.value
                ),
                model.span,
            );
        }
        if let Some(binding) = root.attribute("binding")
            && binding.value == "late"
        {
            let nested = root
                .children
                .iter()
                .filter(|c| is_state_element(c))
                .any(has_datamodel);
            if nested {
                self.cannot(
                    "late binding of data inside states cannot be imported: context fields exist from the start".into(),
                    binding.span,
                );
            }
        }
        let name = match root.attribute("name") {
            Some(a) => Name {
                text: a.value.clone(),
                span: a.span,
            },
            None => Name {
                text: "scxml".into(),
                span: root.span,
            },
        };
        let context = self.context();
        let mut top = StateDoc::default();
        self.state_body(root, 0, &mut top);
        self.check_initial_actions();
        self.set_ids(&mut top, &mut 0);
        MachineDoc {
            name: Some(name),
            // SCXML has no place for idempotency facts.
            fact_source: crate::model::FactSource::Nowhere(crate::model::ForeignFormat::Scxml),
            context,
            guards: std::mem::take(&mut self.host_guards),
            opaque: std::mem::take(&mut self.opaque),
            stand_ins: std::mem::take(&mut self.stand_ins),
            root: top,
            ..MachineDoc::default()
        }
    }

    fn context(&mut self) -> Vec<ContextDoc> {
        let data = std::mem::take(&mut self.data);
        let mut context = Vec::new();
        for (id, element) in &data {
            self.check_attributes(
                element,
                &["id", "expr"],
                &[("src", "the machine format loads no data from elsewhere")],
            );
            if let Some(child) = element.children.first() {
                self.unsupported(child, "data given as XML has no counterpart in the context");
            }
            let value = match (element.attribute("expr"), &element.text_span) {
                (Some(expr), Some(_)) => {
                    self.error(
                        "a `<data>` has an `expr` or content, not both".into(),
                        expr.span,
                    );
                    continue;
                }
                (Some(expr), None) => match xstate::scxml_to_json(&expr.value) {
                    Ok(value) => value,
                    Err(e) => {
                        self.expr_error(expr, &e);
                        continue;
                    }
                },
                (None, Some(_)) => {
                    xstate::scxml_to_json(element.text.trim()).unwrap_or_else(|_| {
                        serde_json::Value::String(
                            element
                                .text
                                .split_whitespace()
                                .collect::<Vec<_>>()
                                .join(" "),
                        )
                    })
                }
                (None, None) => serde_json::Value::Null,
            };
            let span = element.attribute("id").map_or(element.span, |a| a.span);
            context.push(ContextDoc {
                name: Name {
                    text: id.clone(),
                    span,
                },
                value,
            });
        }
        self.data = data;
        context
    }

    fn expr_error(&mut self, attribute: &Attribute, error: &xstate::JsError) {
        let at = attribute.span.start as usize + error.at.min(attribute.value.len());
        self.untranslated.push(
            LoadError::InvalidExpression {
                message: format!(
                    "the expression `{}` cannot be imported: {}",
                    attribute.value, error.message
                ),
            }
            .at(Span::new(at, at + 1), []),
        );
    }

    /// An expression attribute translated to CEL, placed at the attribute.
    fn expression(&mut self, attribute: &Attribute) -> Option<ExprText> {
        match xstate::scxml_to_cel(&attribute.value, self) {
            Ok(text) => Some(ExprText {
                text,
                offset: attribute.span.start,
            }),
            Err(e) => {
                self.expr_error(attribute, &e);
                None
            }
        }
    }

    /// A transition's condition; as written, one that cannot be translated
    /// is a host guard named after its place, with a note.
    fn guard(&mut self, cond: &Attribute) -> Option<ExprText> {
        if self.mode == Mode::Strict {
            return self.expression(cond);
        }
        let why = match xstate::scxml_to_cel(&cond.value, self) {
            Ok(text) => {
                return Some(ExprText {
                    text,
                    offset: cond.span.start,
                });
            }
            Err(why) => why,
        };
        let name = self.stand_in("cond", cond.span, "the condition");
        if !self.host_guards.iter().any(|g| g.text == name) {
            self.host_guards.push(Name {
                text: name.clone(),
                span: cond.span,
            });
        }
        self.note(
            format!(
                "the condition `{}` cannot be translated: {}; the linter treats it as a host guard, whose answer it does not know",
                cond.value, why.message
            ),
            cond.span,
        );
        Some(ExprText {
            text: name,
            offset: cond.span.start,
        })
    }

    fn state(&mut self, element: &Element) -> StateDoc {
        let node = self.index[&(element as *const Element)];
        let kind = self.nodes[node].kind;
        let mut doc = StateDoc {
            key: Name {
                text: self.nodes[node].key.clone(),
                span: self.nodes[node].span,
            },
            ..StateDoc::default()
        };
        match kind {
            Kind::State => {
                self.check_attributes(element, &["id", "initial"], &[]);
            }
            Kind::Parallel => {
                self.check_attributes(element, &["id"], &[]);
                doc.kind = Some(word("parallel", element.span));
            }
            Kind::Final => {
                self.check_attributes(element, &["id"], &[]);
                doc.kind = Some(word("final", element.span));
            }
            Kind::History { .. } => {
                self.check_attributes(element, &["id", "type"], &[]);
                doc.kind = Some(word("history", element.span));
                if let Some(ty) = element.attribute("type") {
                    doc.history = Some(Name {
                        text: ty.value.clone(),
                        span: ty.span,
                    });
                }
                self.history_default(element, node, &mut doc);
                return doc;
            }
            Kind::Root => {}
        }
        self.state_body(element, node, &mut doc);
        doc
    }

    /// The children, actions, transitions and initial of a state or the root.
    fn state_body(&mut self, element: &Element, node: usize, doc: &mut StateDoc) {
        self.no_text(element);
        let kind = self.nodes[node].kind;
        let mut initial_element = None;
        // As written, the invocations of the state (by their ids here), and
        // the transitions that become their completion handlers.
        let invocations: Vec<String> = match self.mode {
            Mode::Strict => Vec::new(),
            Mode::AsWritten => element
                .children
                .iter()
                .filter(|c| c.name == "invoke" && in_scxml(c))
                .map(|c| self.invoke_id(c))
                .collect(),
        };
        let mut on_done: Vec<(String, TransitionDoc)> = Vec::new();
        let mut on_error: Vec<TransitionDoc> = Vec::new();
        for child in &element.children {
            if !in_scxml(child) {
                self.foreign(child);
                continue;
            }
            match (child.name.as_str(), kind) {
                ("state" | "parallel" | "history", Kind::Root | Kind::State | Kind::Parallel)
                | ("final", Kind::Root | Kind::State) => {
                    if kind == Kind::Root && child.name == "history" {
                        self.error("a history state belongs inside a state".into(), child.span);
                        continue;
                    }
                    let state = self.state(child);
                    doc.states.push(state);
                }
                ("onentry", Kind::State | Kind::Parallel | Kind::Final) => {
                    self.check_attributes(child, &[], &[]);
                    let actions = self.block(child, Place::Entry(node));
                    doc.entry.extend(actions);
                }
                ("onexit", Kind::State | Kind::Parallel | Kind::Final) => {
                    self.check_attributes(child, &[], &[]);
                    let actions = self.block(child, Place::Exit(node));
                    doc.exit.extend(actions);
                }
                ("transition", Kind::State | Kind::Parallel) => {
                    let event = child.attribute("event").map(|e| e.value.as_str());
                    if let Some(id) = event.and_then(|e| self.completion(e, &invocations)) {
                        self.event_data = View::Done;
                        let transition = self.transition(child, node);
                        self.event_data = View::Plain;
                        if let Some(mut transition) = transition {
                            if invocations.contains(&id) {
                                on_done.push((id, transition));
                            } else {
                                let span = transition.event.as_ref().map_or(child.span, |e| e.span);
                                transition.event = Some(Name {
                                    text: format!("xstate.done.actor.{id}"),
                                    span,
                                });
                                doc.on.push(transition);
                            }
                        }
                        continue;
                    }
                    if !invocations.is_empty() && event.is_some_and(takes_errors) {
                        // The same transition again, reading the error of
                        // an invocation: its notes and errors are given once.
                        let marks = (self.notes.len(), self.errors.len(), self.untranslated.len());
                        self.event_data = View::Error;
                        let handler = self.transition(child, node);
                        self.event_data = View::Plain;
                        self.notes.truncate(marks.0);
                        self.errors.truncate(marks.1);
                        self.untranslated.truncate(marks.2);
                        on_error.extend(handler);
                    }
                    if let Some(transition) = self.transition(child, node) {
                        if transition.event.is_some() {
                            doc.on.push(transition);
                        } else {
                            doc.always.push(transition);
                        }
                    }
                }
                ("invoke", Kind::State | Kind::Parallel) if self.mode == Mode::AsWritten => {
                    let invocation = self.invoke(child);
                    doc.invoke.push(invocation);
                }
                ("initial", Kind::State) => {
                    if initial_element.is_some() {
                        self.error("a state has one `<initial>`".into(), child.span);
                    }
                    initial_element = Some(child);
                }
                ("datamodel", Kind::Root | Kind::State | Kind::Parallel) => {
                    self.check_attributes(child, &[], &[]);
                    self.no_text(child);
                }
                ("script", Kind::Root) if self.mode == Mode::AsWritten => self.note(
                    "the document's `<script>` is not imported: it runs once, before the machine starts, and what it defines is unknown to the linter".into(),
                    child.span,
                ),
                ("script", _) => self.unsupported(child, "the machine format runs no scripts"),
                ("invoke", _) => {
                    self.unsupported(child, "the machine format has no invoked sessions")
                }
                ("donedata", _) if self.mode == Mode::AsWritten => self.note(
                    "`<donedata>` is not imported: `done.state` events of the machine format carry no data".into(),
                    child.span,
                ),
                ("donedata", _) => self.unsupported(
                    child,
                    "`done.state` events of the machine format carry no data",
                ),
                (name, _) => {
                    let element_name = &element.name;
                    self.error(
                        format!("unexpected `<{name}>` inside `<{element_name}>`"),
                        child.span,
                    );
                }
            }
        }
        if matches!(kind, Kind::Root | Kind::State) {
            self.initial(element, node, initial_element, doc);
        }
        doc.on = self.grouped(std::mem::take(&mut doc.on));
        for invocation in &mut doc.invoke {
            let id = invocation.id.as_ref().map(|i| i.text.as_str());
            invocation.on_done = on_done
                .iter()
                .filter(|(done, _)| Some(done.as_str()) == id)
                .map(|(_, t)| t.clone())
                .collect();
            invocation.on_error = on_error.clone();
        }
    }

    /// As written, the invocation whose completion `event` (an SCXML
    /// descriptor) takes: `done.invoke.ID` of a known invocation, or
    /// `done.invoke` in a state with one invocation.
    fn completion(&self, event: &str, invocations: &[String]) -> Option<String> {
        if self.mode != Mode::AsWritten {
            return None;
        }
        let [token] = event.split_whitespace().collect::<Vec<_>>()[..] else {
            return None;
        };
        let token = token.strip_suffix(".*").unwrap_or(token);
        match token.strip_prefix("done.invoke") {
            Some("") => match invocations {
                [only] => Some(only.clone()),
                _ => None,
            },
            Some(rest) => rest
                .strip_prefix('.')
                .filter(|id| {
                    self.invoke_ids.contains_key(*id) || invocations.iter().any(|i| i == id)
                })
                .map(str::to_string),
            None => None,
        }
    }

    /// The id of an `<invoke>` here: its `id`, else a name made from its place.
    fn invoke_id(&self, element: &Element) -> String {
        match element.attribute("id") {
            Some(id) => id.value.clone(),
            None => self.opaque_name("invoke", element.span),
        }
    }

    /// An `<invoke>`, as written: a host service (or a declared effect of
    /// its `src`) started when the state is entered. What the machine
    /// format has no counterpart for is noted.
    fn invoke(&mut self, element: &Element) -> InvokeDoc {
        self.check_attributes(
            element,
            &[
                "type",
                "typeexpr",
                "src",
                "srcexpr",
                "id",
                "idlocation",
                "namelist",
                "autoforward",
            ],
            &[],
        );
        self.no_text(element);
        let id = self.invoke_id(element);
        let inline = element
            .children
            .iter()
            .any(|c| c.name == "content" && in_scxml(c));
        let src = match element.attribute("src") {
            Some(src) if !src.value.is_empty() && !src.value.contains(char::is_whitespace) => {
                name_of(src)
            }
            _ => {
                let why = if element.attribute("srcexpr").is_some() {
                    "the service it starts is computed (`srcexpr`)"
                } else if inline {
                    "the service it starts is written inline, in `<content>`, which is not imported"
                } else {
                    "it names no service (`src`)"
                };
                let service =
                    self.stand_in("invoke", element.span, "the service of the `<invoke>`");
                self.note(
                    format!("the service of this `<invoke>` has no name: {why}; the linter treats it as a host service whose idempotency is unknown"),
                    element.span,
                );
                Name {
                    text: service,
                    span: element.span,
                }
            }
        };
        if let Some(ty) = element.attribute("typeexpr") {
            self.note(
                "the type of this `<invoke>` is computed (`typeexpr`): it is not imported".into(),
                ty.span,
            );
        }
        if element.attribute("id").is_none() {
            // A made-up id: named by its place, as its service may be.
            let place = self.place(element.span);
            self.stand_ins
                .entry(id.clone())
                .or_insert_with(|| format!("the `<invoke>` at {place}"));
        }
        let id = match (element.attribute("id"), element.attribute("idlocation")) {
            (Some(written), _) => name_of(written),
            (None, Some(location)) => {
                self.note(
                    format!("the id of this invocation is made at run time and stored in `{}`, which is not assigned here; as written, `done.invoke` of this state takes its completion", location.value),
                    location.span,
                );
                Name {
                    text: id,
                    span: location.span,
                }
            }
            (None, None) => Name {
                text: id,
                span: element.span,
            },
        };
        if let Some(forward) = element.attribute("autoforward")
            && forward.value == "true"
        {
            self.note(
                "`autoforward` is not imported: the machine format forwards no events to an invoked service".into(),
                forward.span,
            );
        }
        let mut input = Vec::new();
        for (field, attribute) in namelist(element) {
            self.input(&mut input, field, |importer| {
                importer.expression(&attribute)
            });
        }
        for child in &element.children {
            if !in_scxml(child) {
                self.foreign(child);
                continue;
            }
            match child.name.as_str() {
                "param" => {
                    let field = child.attribute("name").map(name_of).unwrap_or_else(|| Name {
                        text: String::new(),
                        span: child.span,
                    });
                    self.input(&mut input, field, |importer| {
                        importer.param(child).map(|(_, value)| value)
                    });
                }
                // Noted with the service above.
                "content" => {}
                "finalize" => self.note(
                    "`<finalize>` is not imported: it runs on the events an invoked session sends, which the machine format does not route through the invocation".into(),
                    child.span,
                ),
                name => self.error(
                    format!("unexpected `<{name}>` inside `<invoke>`"),
                    child.span,
                ),
            }
        }
        InvokeDoc {
            src: Some(src),
            id: Some(id),
            input,
            on_done: Vec::new(),
            on_error: Vec::new(),
            span: element.span,
        }
    }

    /// One field of an invocation's input; one that cannot be translated
    /// is left out, with a note.
    fn input(
        &mut self,
        input: &mut Vec<(Name, ExprText)>,
        field: Name,
        value: impl FnOnce(&mut Importer) -> Option<ExprText>,
    ) {
        let mark = self.untranslated.len();
        let value = value(self);
        if let Some(why) = self.untranslated.split_off(mark).into_iter().next() {
            self.note(
                format!("the input `{}` is left out: {}", field.text, why.message),
                why.span,
            );
        } else if let Some(value) = value {
            input.push((field, value));
        }
    }

    /// The transitions of one descriptor together, at its first appearance,
    /// as the machine format keeps them (docs/dsl.md, "Grouping"). Where that
    /// moves a transition before an earlier one that can take the same
    /// events, another transition would be chosen: that is an error.
    fn grouped(&mut self, on: Vec<TransitionDoc>) -> Vec<TransitionDoc> {
        let text = |t: &TransitionDoc| t.event.as_ref().map(|e| e.text.clone()).unwrap_or_default();
        let group: Vec<usize> = (0..on.len())
            .map(|j| (0..=j).find(|&k| text(&on[k]) == text(&on[j])).unwrap_or(j))
            .collect();
        for j in 0..on.len() {
            let overtaken = (0..j).find(|&i| {
                group[j] < group[i]
                    && overlap(
                        &EventDescriptor::parse(&text(&on[i])),
                        &EventDescriptor::parse(&text(&on[j])),
                    )
            });
            if let Some(i) = overtaken {
                self.cannot(
                    format!(
                        "this transition cannot be imported in its place: the machine format keeps the transitions of one event descriptor together, which would put it before the earlier `{}` transition that takes the same events",
                        text(&on[i])
                    ),
                    on[j].span,
                );
            }
        }
        let mut order: Vec<usize> = (0..on.len()).collect();
        order.sort_by_key(|&j| group[j]);
        let mut slots: Vec<Option<TransitionDoc>> = on.into_iter().map(Some).collect();
        order.into_iter().filter_map(|j| slots[j].take()).collect()
    }

    fn initial(
        &mut self,
        element: &Element,
        node: usize,
        initial_element: Option<&Element>,
        doc: &mut StateDoc,
    ) {
        let attribute = element.attribute("initial");
        if let (Some(attribute), Some(initial)) = (attribute, initial_element) {
            self.error(
                "a state has an `initial` attribute or an `<initial>` element, not both".into(),
                attribute.span.to(initial.span),
            );
        }
        if let Some(attribute) = attribute {
            doc.initial = self.targets(attribute, node, Relative::Initial);
        } else if let Some(initial) = initial_element {
            self.check_attributes(initial, &[], &[]);
            self.no_text(initial);
            let transitions: Vec<&Element> = initial.children.iter().collect();
            let [transition] = transitions.as_slice() else {
                self.error(
                    "`<initial>` holds exactly one `<transition>`".into(),
                    initial.span,
                );
                return;
            };
            if transition.name != "transition" {
                self.error(
                    format!("unexpected `<{}>` inside `<initial>`", transition.name),
                    transition.span,
                );
                return;
            }
            self.check_attributes(transition, &["target"], &[]);
            if let Some(target) = self.required(transition, "target") {
                doc.initial = self.targets(target, node, Relative::Initial);
            }
            // These actions run right after the state's entry actions.
            let actions = self.block(transition, Place::Entry(node));
            if !actions.is_empty() {
                self.initial_actions.push((node, transition.span));
                doc.entry.extend(actions);
            }
        } else if let Some(&first) = self.nodes[node]
            .children
            .iter()
            .find(|&&c| !matches!(self.nodes[c].kind, Kind::History { .. }))
        {
            doc.initial = vec![Name {
                text: self.nodes[first].key.clone(),
                span: element.span,
            }];
        }
    }

    /// The default transition of a history state.
    fn history_default(&mut self, element: &Element, node: usize, doc: &mut StateDoc) {
        self.no_text(element);
        let mut transition = None;
        for child in &element.children {
            if child.name == "transition" && in_scxml(child) && transition.is_none() {
                transition = Some(child);
            } else {
                self.error(
                    format!(
                        "unexpected `<{}>` inside `<history>`: it holds one `<transition>`",
                        child.name
                    ),
                    child.span,
                );
            }
        }
        let Some(transition) = transition else {
            self.error(
                "a `<history>` needs a `<transition>` to its default states".into(),
                element.span,
            );
            return;
        };
        self.check_attributes(transition, &["target", "type"], &[]);
        if let Some(target) = self.required(transition, "target") {
            doc.target = self.targets(target, node, Relative::HistoryDefault);
        }
        if let Some(first) = transition.children.first() {
            self.unsupported(
                first,
                "the default transition of a history state has no actions in the machine format",
            );
        }
    }

    /// The ids of a `target` or `initial` attribute, written relative to `from`.
    fn targets(&mut self, attribute: &Attribute, from: usize, relative: Relative) -> Vec<Name> {
        let mut names = Vec::new();
        for (id, span) in tokens(attribute) {
            let Some(&to) = self.by_id.get(id) else {
                let candidates: Vec<String> = self.by_id.keys().cloned().collect();
                self.errors.push(
                    LoadError::UnknownTarget {
                        target: id.to_string(),
                    }
                    .at(span, candidates.iter().map(String::as_str)),
                );
                continue;
            };
            let parent_of = |n: usize| self.nodes[n].parent;
            let text = match relative {
                Relative::Transition if to == from || parent_of(to) == parent_of(from) => {
                    self.nodes[to].key.clone()
                }
                Relative::Transition if parent_of(to) == Some(from) => {
                    format!(".{}", self.nodes[to].key)
                }
                Relative::Initial if parent_of(to) == Some(from) => self.nodes[to].key.clone(),
                Relative::HistoryDefault if parent_of(to) == parent_of(from) => {
                    self.nodes[to].key.clone()
                }
                _ => {
                    self.nodes[to].targeted_by_id = true;
                    format!("#{id}")
                }
            };
            self.targets.push((from, to));
            names.push(Name { text, span });
        }
        names
    }

    fn transition(&mut self, element: &Element, source: usize) -> Option<TransitionDoc> {
        self.check_attributes(element, &["event", "cond", "target", "type"], &[]);
        let before = self.targets.len();
        let targets = match element.attribute("target") {
            Some(target) => self.targets(target, source, Relative::Transition),
            None => Vec::new(),
        };
        let resolved: Vec<usize> = self.targets[before..].iter().map(|(_, t)| *t).collect();
        let internal = match element.attribute("type") {
            None => false,
            Some(t) if t.value == "external" => false,
            Some(t) if t.value == "internal" => true,
            Some(t) => {
                self.error(
                    format!(
                        "unknown transition type `{}`: write `internal` or `external`",
                        t.value
                    ),
                    t.span,
                );
                false
            }
        };
        let into_children = !resolved.is_empty()
            && resolved
                .iter()
                .all(|&t| self.is_proper_descendant(t, source));
        let to_itself = !resolved.is_empty() && resolved.iter().all(|&t| t == source);
        // SCXML keeps the source only for an internal transition of a
        // compound state; an internal one of a parallel state runs as an
        // external one (W3C test 533), which `reenter: false` would not.
        let kept = internal && self.is_compound(source);
        let reenter = (into_children && !kept) || to_itself;
        let event = element.attribute("event").map(|e| Name {
            text: descriptor(&e.value),
            span: e.span,
        });
        if let Some(event) = &event
            && event.text.is_empty()
        {
            self.error(
                "an empty `event` attribute: leave it out for an eventless transition".into(),
                event.span,
            );
        }
        let guard = element.attribute("cond").and_then(|c| self.guard(c));
        let actions = self.block(element, Place::Transition);
        Some(TransitionDoc {
            event,
            targets,
            guard,
            actions,
            reenter,
            span: element.span,
            ..TransitionDoc::default()
        })
    }

    /// The executable content of a block that runs at `place`.
    fn block(&mut self, element: &Element, place: Place) -> Vec<ActionDoc> {
        self.no_text(element);
        let mut actions = Vec::new();
        self.content(&element.children, &element.name, place, &mut actions);
        actions
    }

    /// Translates executable content into `actions`; `true` where it ends
    /// with an action that fails, after which SCXML runs nothing more of the
    /// block.
    fn content(
        &mut self,
        elements: &[Element],
        parent: &str,
        place: Place,
        actions: &mut Vec<ActionDoc>,
    ) -> bool {
        for child in elements {
            let marks = (self.untranslated.len(), self.notes.len(), actions.len());
            let fails = self.executable(child, parent, place, actions);
            if self.mode == Mode::AsWritten
                && let Some(why) = self.untranslated.split_off(marks.0).into_iter().next()
            {
                // The element is opaque: what was made of its parts goes.
                self.notes.truncate(marks.1);
                actions.truncate(marks.2);
                let name =
                    self.stand_in(&child.name, child.span, &format!("the `<{}>`", child.name));
                self.note(
                    format!("{}; as written, the linter treats it as a host action whose idempotency is unknown, and a finding that rests on it as undecided", why.message),
                    child.span,
                );
                let kind = match child.name.as_str() {
                    // An assign writes its location's variable, and nothing else.
                    "assign" => OpaqueKind::Assign(child.attribute("location").map(|l| {
                        vec![
                            l.value
                                .split(['.', '['])
                                .next()
                                .unwrap_or_default()
                                .trim()
                                .to_string(),
                        ]
                    })),
                    _ => OpaqueKind::Actions,
                };
                let code = self.lines.text.get(child.span.range()).unwrap_or_default();
                self.opaque.push(OpaquePart {
                    name: name.clone(),
                    what: format!("`{}` at {}", abbreviated(code), self.place(child.span)),
                    kind,
                    span: child.span,
                });
                actions.push(ActionDoc::Named {
                    name: Name {
                        text: name,
                        span: child.span,
                    },
                });
                continue;
            }
            if fails {
                return true;
            }
        }
        false
    }

    /// One element of executable content; `true` where it fails.
    fn executable(
        &mut self,
        child: &Element,
        parent: &str,
        place: Place,
        actions: &mut Vec<ActionDoc>,
    ) -> bool {
        {
            if !in_scxml(child) {
                self.foreign(child);
                return false;
            }
            match child.name.as_str() {
                "raise" => {
                    self.check_attributes(child, &["event"], &[]);
                    self.no_children(child);
                    if let Some(event) = self.required(child, "event") {
                        actions.push(ActionDoc::Raise {
                            event: name_of(event),
                            data: Vec::new(),
                            span: child.span,
                        });
                    }
                }
                "send" => match self.send(child) {
                    Some(Sent::Action(action)) => actions.push(action),
                    Some(Sent::Fails(action)) => {
                        actions.push(action);
                        return true;
                    }
                    None => {}
                },
                "cancel" => {
                    self.check_attributes(
                        child,
                        &["sendid"],
                        &[(
                            "sendidexpr",
                            "the machine format cancels sends by a fixed id",
                        )],
                    );
                    self.no_children(child);
                    if let Some(id) = self.required(child, "sendid") {
                        actions.push(ActionDoc::Cancel {
                            id: name_of(id),
                            span: child.span,
                        });
                    }
                }
                "log" => {
                    self.check_attributes(child, &["expr", "label"], &[]);
                    self.no_children(child);
                    actions.push(self.log(child));
                }
                "assign" => {
                    if let Some(action) = self.assign(child) {
                        actions.push(action);
                    }
                }
                "if" => {
                    return self.conditional(child, place, actions);
                }
                "elseif" | "else" => self.error(
                    format!("`<{}>` belongs inside `<if>`", child.name),
                    child.span,
                ),
                "foreach" => self.unsupported(child, "the machine format has no loops"),
                "script" => self.unsupported(child, "the machine format runs no scripts"),
                name => {
                    let message = if SCXML_ELEMENTS.contains(&name) {
                        format!(
                            "`<{name}>` is no executable content: SCXML does not allow it inside `<{parent}>`"
                        )
                    } else {
                        format!("unknown executable content `<{name}>` inside `<{parent}>`")
                    };
                    // Found in the wild (an `<invoke>` in `<onentry>`): as
                    // written, some processor runs it, so it is opaque.
                    match self.mode {
                        Mode::Strict => self.error(message, child.span),
                        Mode::AsWritten => self.cannot(message, child.span),
                    }
                }
            }
        }
        false
    }

    /// An `<if>` whose conditions are known where its block runs: the branch
    /// taken is imported in its place. The machine format has no conditional
    /// actions, so any other `<if>` is an error.
    fn conditional(
        &mut self,
        element: &Element,
        place: Place,
        actions: &mut Vec<ActionDoc>,
    ) -> bool {
        self.check_attributes(element, &["cond"], &[]);
        self.no_text(element);
        // Branches: the condition (`None` for `<else>`) and its content.
        let mut branches: Vec<(Option<&Attribute>, &Element, Vec<Element>)> = Vec::new();
        let Some(cond) = self.required(element, "cond") else {
            return false;
        };
        branches.push((Some(cond), element, Vec::new()));
        for child in &element.children {
            let separator = in_scxml(child) && matches!(child.name.as_str(), "elseif" | "else");
            if !separator {
                if let Some(branch) = branches.last_mut() {
                    branch.2.push(child.clone());
                }
                continue;
            }
            self.no_children(child);
            if branches.last().is_some_and(|(c, _, _)| c.is_none()) {
                self.error(format!("`<{}>` after `<else>`", child.name), child.span);
            }
            if child.name == "else" {
                self.check_attributes(child, &[], &[]);
                branches.push((None, child, Vec::new()));
            } else {
                self.check_attributes(child, &["cond"], &[]);
                let Some(cond) = self.required(child, "cond") else {
                    return false;
                };
                branches.push((Some(cond), child, Vec::new()));
            }
        }
        for (cond, at, content) in branches {
            let known = match cond {
                None => Some(true),
                Some(cond) => xstate::scxml_fold(&cond.value, &|id| self.known_in(id, place)),
            };
            match known {
                Some(true) => return self.content(&content, &element.name, place, actions),
                Some(false) => continue,
                None => {
                    self.cannot(
                        format!(
                            "`<{}>` cannot be imported: the machine format has no conditional actions, and the condition is not known where the block runs",
                            at.name
                        ),
                        at.span,
                    );
                    return false;
                }
            }
        }
        false
    }

    /// Whether the state with this id is active where a block at `place`
    /// runs, where that is known: a state's entry and exit actions run while
    /// it and its ancestors are active and none of its descendants is.
    fn known_in(&self, id: &str, place: Place) -> Option<bool> {
        let (Place::Entry(state) | Place::Exit(state)) = place else {
            return None;
        };
        let other = *self.by_id.get(id)?;
        if other == state || self.is_proper_descendant(state, other) {
            Some(true)
        } else if self.is_proper_descendant(other, state) {
            Some(false)
        } else {
            None
        }
    }

    fn no_children(&mut self, element: &Element) {
        self.no_text(element);
        if let Some(child) = element.children.first() {
            self.error(
                format!("unexpected `<{}>` inside `<{}>`", child.name, element.name),
                child.span,
            );
        }
    }

    /// A `<log>`; with a `label`, the value logged is `{"label": value}`. An
    /// expression outside the translated subset logs its own text, marked
    /// `untranslated: `, since a log changes nothing in the machine.
    fn log(&mut self, element: &Element) -> ActionDoc {
        let label = element.attribute("label");
        let (value, offset) = match element.attribute("expr") {
            Some(expr) => {
                let value = xstate::scxml_to_cel(&expr.value, self).unwrap_or_else(|_| {
                    let mut text = String::new();
                    quote(&format!("untranslated: {}", expr.value), &mut text);
                    text
                });
                (Some(value), expr.span.start)
            }
            None => (None, element.span.start),
        };
        let text = match (label, value) {
            (Some(label), Some(value)) => {
                let mut key = String::new();
                quote(&label.value, &mut key);
                format!("{{{key}: {value}}}")
            }
            (None, Some(value)) => value,
            (Some(label), None) => {
                let mut text = String::new();
                quote(&label.value, &mut text);
                text
            }
            (None, None) => "\"\"".to_string(),
        };
        ActionDoc::Log {
            expr: ExprText { text, offset },
            span: element.span,
        }
    }

    fn assign(&mut self, element: &Element) -> Option<ActionDoc> {
        self.check_attributes(
            element,
            &["location", "expr"],
            &[
                ("type", "XPath assignments have no counterpart"),
                ("attr", "XPath assignments have no counterpart"),
            ],
        );
        let location = self.required(element, "location")?;
        if location.value.contains(['.', '[']) {
            self.cannot(
                format!(
                    "the location `{}` cannot be imported: an assign replaces a whole data model variable",
                    location.value
                ),
                location.span,
            );
            return None;
        }
        if !self.data.contains_key(&location.value) {
            let candidates: Vec<String> = self.data.keys().cloned().collect();
            self.untranslated.push(
                LoadError::UnknownContextField {
                    field: location.value.clone(),
                }
                .at(location.span, candidates.iter().map(String::as_str)),
            );
            return None;
        }
        if let Some(child) = element.children.first() {
            self.unsupported(child, "XML values have no counterpart in the context");
            return None;
        }
        let value = match (element.attribute("expr"), element.text_span) {
            (Some(expr), None) => self.expression(expr)?,
            (None, Some(span)) => {
                let literal = element.text.trim().to_string();
                let attribute = Attribute {
                    name: "content".into(),
                    value: literal,
                    span,
                };
                self.expression(&attribute)?
            }
            (Some(expr), Some(_)) => {
                self.error(
                    "an `<assign>` has an `expr` or content, not both".into(),
                    expr.span,
                );
                return None;
            }
            (None, None) => {
                self.error(
                    "an `<assign>` needs an `expr` or content".into(),
                    element.span,
                );
                return None;
            }
        };
        Some(ActionDoc::Assign {
            fields: vec![(name_of(location), value)],
            span: element.span,
        })
    }

    fn send(&mut self, element: &Element) -> Option<Sent> {
        const AT_RUN_TIME: &str = "the machine format computes no send attributes at run time";
        self.check_attributes(
            element,
            &["event", "target", "type", "id", "delay", "namelist"],
            &[
                ("eventexpr", AT_RUN_TIME),
                ("targetexpr", AT_RUN_TIME),
                ("typeexpr", AT_RUN_TIME),
                ("delayexpr", AT_RUN_TIME),
                (
                    "idlocation",
                    "the machine format keeps no generated send ids",
                ),
            ],
        );
        self.no_text(element);
        let span = element.span;
        let mut data = Vec::new();
        for child in &element.children {
            match child.name.as_str() {
                "param" if in_scxml(child) => {
                    if let Some(param) = self.param(child) {
                        data.push(param);
                    }
                }
                "content" => self.unsupported(
                    child,
                    "events of the machine format carry named fields, given with `<param>`",
                ),
                name => self.error(format!("unexpected `<{name}>` inside `<send>`"), child.span),
            }
        }
        for (field, attribute) in namelist(element) {
            if let Some(value) = self.expression(&attribute) {
                data.push((field, value));
            }
        }
        if element.attribute("eventexpr").is_some() {
            // Already reported: the event name is computed at run time.
            return None;
        }
        let event = name_of(self.required(element, "event")?);
        let fails = |error: &str| {
            Some(Sent::Fails(ActionDoc::Raise {
                event: Name {
                    text: error.into(),
                    span,
                },
                data: Vec::new(),
                span,
            }))
        };
        if let Some(ty) = element.attribute("type")
            && !SCXML_PROCESSOR.contains(&ty.value.as_str())
        {
            // SCXML: an unsupported type places error.execution on the internal queue.
            return fails("error.execution");
        }
        let delay = element.attribute("delay").and_then(|d| self.delay(d));
        let id = element.attribute("id").map(name_of);
        match element.attribute("target").map(|t| t.value.as_str()) {
            None => Some(Sent::Action(ActionDoc::Send {
                event,
                data,
                delay,
                id,
                span,
            })),
            Some("#_internal") => {
                if let Some(delay) = element.attribute("delay") {
                    self.cannot(
                        "a delayed send to `#_internal` cannot be imported: raised events are not delayed".into(),
                        delay.span,
                    );
                }
                Some(Sent::Action(ActionDoc::Raise { event, data, span }))
            }
            Some(target) if target.starts_with("#_scxml_") => {
                // SCXML: a session that cannot be found makes error.communication.
                Some(Sent::Action(ActionDoc::Raise {
                    event: Name {
                        text: "error.communication".into(),
                        span,
                    },
                    data: Vec::new(),
                    span,
                }))
            }
            Some(target) if target.starts_with("#_") => {
                let target_span = element.attribute("target").map_or(span, |t| t.span);
                self.cannot(
                    format!("the send target `{target}` cannot be imported: the machine format has no parent or invoked sessions"),
                    target_span,
                );
                None
            }
            // SCXML: a target the processor cannot address places error.execution on the internal queue.
            Some(_) => fails("error.execution"),
        }
    }

    fn param(&mut self, element: &Element) -> Option<(Name, ExprText)> {
        self.check_attributes(element, &["name", "expr", "location"], &[]);
        self.no_children(element);
        let name = self.required(element, "name")?;
        let value = match (element.attribute("expr"), element.attribute("location")) {
            (Some(expr), None) => self.expression(expr)?,
            (None, Some(location)) => self.expression(location)?,
            _ => {
                self.error(
                    "a `<param>` needs an `expr` or a `location`, not both".into(),
                    element.span,
                );
                return None;
            }
        };
        Some((name_of(name), value))
    }

    /// A CSS2 time (`1s`, `200ms`, `1.5s`) as a duration of the machine format.
    fn delay(&mut self, attribute: &Attribute) -> Option<Name> {
        let text = attribute.value.trim();
        let (number, unit) = if let Some(n) = text.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = text.strip_suffix('s') {
            (n, 1000.0)
        } else {
            ("", 0.0)
        };
        let valid = !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit() || c == '.')
            && number.chars().filter(|&c| c == '.').count() <= 1;
        let millis = number
            .parse::<f64>()
            .ok()
            .filter(|_| valid)
            .map(|n| n * unit);
        match millis {
            Some(ms) if ms.fract() == 0.0 && ms >= 0.0 => {
                let whole = !number.contains('.');
                let text = if whole {
                    text.to_string()
                } else {
                    format!("{}ms", ms as u64)
                };
                Some(Name {
                    text,
                    span: attribute.span,
                })
            }
            _ => {
                self.error(
                    format!(
                        "the delay `{}` cannot be imported: write a time such as `1s`, `200ms` or `1.5s`, in whole milliseconds",
                        attribute.value
                    ),
                    attribute.span,
                );
                None
            }
        }
    }

    /// Where `<initial>` actions were moved to a state's entry, checks that
    /// the state is entered by default whenever it is entered.
    fn check_initial_actions(&mut self) {
        for (state, span) in std::mem::take(&mut self.initial_actions) {
            let targeted_inside = self
                .targets
                .iter()
                .any(|&(from, to)| from != state && self.is_proper_descendant(to, state));
            let history_inside = (0..self.nodes.len()).any(|n| {
                matches!(self.nodes[n].kind, Kind::History { .. })
                    && self.is_proper_descendant(n, state)
            });
            let deep_history_above = (0..self.nodes.len()).any(|n| {
                self.nodes[n].kind == Kind::History { deep: true }
                    && self.nodes[n]
                        .parent
                        .is_some_and(|p| self.is_proper_descendant(state, p))
            });
            if targeted_inside || history_inside || deep_history_above {
                self.cannot(
                    format!(
                        "the actions of this `<initial>` transition cannot be imported: they run only when `{}` is entered by default, and it can also be entered through its descendants here",
                        self.nodes[state].scxml_id.as_deref().unwrap_or("the state")
                    ),
                    span,
                );
            }
        }
    }

    /// Gives states their SCXML id where a target names it, where the key
    /// differs from it, and on nested compound and parallel states (whose
    /// `done.state` events name it).
    fn set_ids(&self, doc: &mut StateDoc, next: &mut usize) {
        let node = &self.nodes[*next];
        *next += 1;
        if let Some(id) = &node.scxml_id {
            let nested_parent = node.parent.is_some_and(|p| p != 0)
                && (node.kind == Kind::Parallel || !node.children.is_empty());
            if node.targeted_by_id || node.key != *id || nested_parent {
                doc.id = Some(Name {
                    text: id.clone(),
                    span: node.span,
                });
            }
        }
        for child in &mut doc.states {
            self.set_ids(child, next);
        }
    }
}

/// Whether some event matches both descriptors.
fn overlap(a: &EventDescriptor, b: &EventDescriptor) -> bool {
    a.patterns.iter().any(|p| {
        b.patterns.iter().any(|q| match (p, q) {
            (EventPattern::Any, _) | (_, EventPattern::Any) => true,
            (EventPattern::Exact(x), EventPattern::Exact(y)) => x == y,
            (EventPattern::Exact(x), prefix @ EventPattern::Prefix(_))
            | (prefix @ EventPattern::Prefix(_), EventPattern::Exact(x)) => prefix.matches(x),
            (EventPattern::Prefix(x), EventPattern::Prefix(y)) => {
                EventPattern::Prefix(x.clone()).matches(y)
                    || EventPattern::Prefix(y.clone()).matches(x)
            }
        })
    })
}

fn has_datamodel(element: &Element) -> bool {
    element.children.iter().any(|c| {
        (c.name == "datamodel" && in_scxml(c)) || (is_state_element(c) && has_datamodel(c))
    })
}

fn word(text: &str, span: Span) -> Name {
    Name {
        text: text.into(),
        span,
    }
}

fn name_of(attribute: &Attribute) -> Name {
    Name {
        text: attribute.value.clone(),
        span: attribute.span,
    }
}

/// The space-separated words of an attribute, each with its place where the
/// value was written without references.
fn tokens(attribute: &Attribute) -> Vec<(&str, Span)> {
    let exact = (attribute.span.end - attribute.span.start) as usize == attribute.value.len();
    let mut out = Vec::new();
    let mut rest = attribute.value.as_str();
    let mut offset = 0;
    while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
        let token_rest = &rest[start..];
        let len = token_rest
            .find(char::is_whitespace)
            .unwrap_or(token_rest.len());
        let token = &token_rest[..len];
        let at = attribute.span.start as usize + offset + start;
        let span = if exact {
            Span::new(at, at + len)
        } else {
            attribute.span
        };
        out.push((token, span));
        offset += start + len;
        rest = &token_rest[len..];
    }
    out
}

/// An SCXML event descriptor in the machine format: every name also
/// matches its dotted descendants, as `foo.*` does.
fn descriptor(text: &str) -> String {
    text.split_whitespace()
        .map(|token| {
            let name = token
                .strip_suffix(".*")
                .or_else(|| token.strip_suffix('.'))
                .unwrap_or(token);
            if name == "*" || name.is_empty() {
                "*".to_string()
            } else {
                format!("{name}.*")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The names of an element's `namelist`, each with an expression
/// attribute of its own (the variable it names) at its place.
fn namelist(element: &Element) -> Vec<(Name, Attribute)> {
    let Some(namelist) = element.attribute("namelist") else {
        return Vec::new();
    };
    tokens(namelist)
        .into_iter()
        .map(|(name, span)| {
            let field = Name {
                text: name.to_string(),
                span,
            };
            let attribute = Attribute {
                name: "namelist".into(),
                value: name.to_string(),
                span,
            };
            (field, attribute)
        })
        .collect()
}

/// Whether an SCXML descriptor takes the errors an invocation that fails
/// raises: `error`, `error.execution` or `error.communication`.
fn takes_errors(event: &str) -> bool {
    event.split_whitespace().any(|token| {
        let name = token.strip_suffix(".*").unwrap_or(token);
        matches!(name, "error" | "error.execution" | "error.communication")
    })
}

/// A CEL string literal.
fn quote(s: &str, out: &mut String) {
    // Writing to a `String` cannot fail.
    let _ = crate::expr::write_quoted(s, out);
}

/// A short excerpt of an element's start tag, for people.
fn abbreviated(code: &str) -> String {
    let first = code.trim().lines().next().unwrap_or_default();
    let mut cut: String = first.chars().take(40).collect();
    if cut.len() < code.trim().len() {
        cut.push_str("...");
    }
    cut
}
