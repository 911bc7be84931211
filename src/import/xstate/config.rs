//! A machine config into the document tree: states, transitions,
//! invocations, context and the idempotency facts of `meta.idemchart`.
//!
//! The reading is forgiving: a part that cannot be read (a state config
//! bound to a name that cannot be followed, a computed key, a delay that is
//! a function) becomes a note at its place and is left out or made opaque,
//! so that the rest of the machine is still linted.

use std::collections::{HashMap, HashSet};

use oxc_ast::ast::*;
use oxc_span::GetSpan;

use super::eval::number_key;
use super::facts::{Declarations, Facts, Places};
use super::scope::{MAX_DEPTH, Node, Reader, TextId, property};
use super::translate::View;
use super::{LoadedMachine, Settings, Version, note};
use crate::diagnostic::Diagnostic;
use crate::model::{EventPattern, FactSource, ForeignFormat, Name};
use crate::span::Span;
use crate::syntax::tree::{ContextDoc, EventDoc, InvokeDoc, MachineDoc, StateDoc, TransitionDoc};

/// One machine call: `createMachine(config)`, `setup({...}).createMachine`,
/// `Machine(config, options)`, `createTestMachine(config)`, or a JSON file.
pub(super) struct MachineCall<'a> {
    pub config: Node<'a>,
    /// The arguments of `setup(...)`.
    pub setup: Vec<Node<'a>>,
    /// Implementations given beside the config: v4's second argument, v5's
    /// deprecated one, `.provide(...)`.
    pub options: Vec<Node<'a>>,
    /// The variable the machine is assigned to.
    pub name_hint: Option<&'a str>,
    /// The callee, where a machine without a name is named after.
    pub span: Span,
    /// Where the API used says v4 (`Machine`) or v5 (`setup`).
    pub marker_v4: Option<Span>,
    pub marker_v5: Option<Span>,
    /// A JSON file: functions are `{"@code": ...}` objects.
    pub json: bool,
    /// The generic argument that types the events (`createMachine<C, E>`).
    pub event_type: Option<&'a TSType<'a>>,
}

const MACHINE_FUNCTIONS: [&str; 3] = ["createMachine", "Machine", "createTestMachine"];

/// The machine `call` creates, if it is a machine call.
pub(super) fn machine_call<'a>(
    reader: &mut Reader<'a>,
    call: &'a CallExpression<'a>,
    t: TextId,
    name_hint: Option<&'a str>,
) -> Option<MachineCall<'a>> {
    let callee = call.callee.get_inner_expression();
    let (function, object) = match callee {
        Expression::Identifier(id) => (id.name.as_str(), None),
        Expression::StaticMemberExpression(m) => (m.property.name.as_str(), Some(&m.object)),
        _ => return None,
    };
    if !MACHINE_FUNCTIONS.contains(&function) {
        return None;
    }
    let config = call.arguments.first()?.as_expression()?;
    let config = Node { e: config, t };
    let span = reader.span(t, callee.span());
    // Another library's `Machine(...)` is no XState machine: a config is
    // an object literal, or a name bound to one (a const, a JSON module).
    // XState's own `createMachine` given a config made at run time is a
    // machine that cannot be read, which is said.
    let resolved = reader.resolve(config).ok();
    let Some(resolved) = resolved.filter(|r| matches!(r.e, Expression::ObjectExpression(_))) else {
        // `engine.createMachine(definition)`, `engine` a `setup(...)` of
        // this module or an imported one, is XState's too.
        let of_setup = object.is_some_and(|o| {
            matches!(reader.resolve(Node { e: o, t }).ok().map(|r| r.e),
                Some(Expression::CallExpression(setup)) if callee_name(&setup.callee) == Some("setup"))
        });
        if of_setup || reader.is_xstate_name(t, callee) {
            reader
                .unreadable
                .push((name_hint, span, reader.span(t, config.e.span())));
        }
        return None;
    };
    let json = reader.is_json(resolved.t);
    let mut found = MachineCall {
        config,
        setup: Vec::new(),
        options: Vec::new(),
        name_hint,
        span,
        marker_v4: (function == "Machine").then_some(span),
        marker_v5: None,
        json,
        event_type: super::types::generic_event_type(function, call),
    };
    if let Some(options) = call.arguments.get(1).and_then(|a| a.as_expression()) {
        found.options.push(Node { e: options, t });
    }
    // `setup({...}).createMachine(...)`, directly or through a const.
    if let Some(object) = object
        && let Ok(object) = reader.resolve(Node { e: object, t })
        && let Expression::CallExpression(setup) = object.e
        && callee_name(&setup.callee) == Some("setup")
    {
        found.marker_v5 = Some(reader.span(object.t, setup.callee.span()));
        if let Some(arg) = setup.arguments.first().and_then(|a| a.as_expression()) {
            found.setup.push(Node {
                e: arg,
                t: object.t,
            });
        }
    }
    Some(found)
}

/// `f` of `f(...)` or `x.f(...)`.
pub(super) fn callee_name<'a>(callee: &'a Expression<'a>) -> Option<&'a str> {
    match callee.get_inner_expression() {
        Expression::Identifier(id) => Some(id.name.as_str()),
        Expression::StaticMemberExpression(m) => Some(m.property.name.as_str()),
        _ => None,
    }
}

/// One property of an object literal, spreads followed.
#[derive(Clone, Copy)]
pub(super) struct Entry<'a> {
    pub key: &'a str,
    pub key_span: Span,
    /// The key's offset in its text, where `// idemchart-allow` comments
    /// above it are attached.
    pub key_at: (TextId, u32),
    pub value: Node<'a>,
}

/// Named implementations: `setup({ actions, guards, actors, delays })`,
/// v4's second argument and `.provide(...)`.
#[derive(Default)]
pub(super) struct Impls<'a> {
    pub actions: HashMap<&'a str, Node<'a>>,
    pub guards: HashMap<&'a str, Node<'a>>,
    pub actors: HashMap<&'a str, Node<'a>>,
    pub delays: HashMap<&'a str, Node<'a>>,
}

/// What one reading of a machine gave.
pub(super) struct Built {
    pub name: String,
    pub version: Version,
    pub doc: MachineDoc,
    pub notes: Vec<Diagnostic>,
    /// Every translated expression: its offset, the length of its text, and
    /// the key of the JavaScript it came from (where a note would go).
    pub translated: Vec<(u32, u32, u32)>,
}

/// The reading of one machine.
pub(super) struct Cx<'r, 'a> {
    pub reader: &'r mut Reader<'a>,
    pub version: Version,
    pub json: bool,
    pub impls: Impls<'a>,
    pub notes: Vec<Diagnostic>,
    /// Declared effects: an action or actor of one of these names is an effect.
    pub effects: HashSet<String>,
    /// Initial values of the context, for the types translations depend on.
    pub context: HashMap<String, serde_json::Value>,
    /// The context's fields in the order the config declares them.
    pub context_order: Vec<String>,
    /// How many copies function bodies made (`const next = [...list]`),
    /// and those read since, which the body may no longer change.
    pub copies: u32,
    pub read_copies: HashSet<u32>,
    /// Payload types declared in the facts, by event and field.
    pub payloads: HashMap<String, HashMap<String, String>>,
    /// Host guards, by the name written (as declared).
    pub host_guards: Vec<(String, Name)>,
    /// The host actions that stand for code the translator could not read.
    pub opaque: Vec<crate::model::OpaquePart>,
    /// The names made up for parts written in place (`in_place`).
    pub stand_ins: indexmap::IndexMap<String, String>,
    /// How many host actions stand for code not translated so far.
    pub host_actions: usize,
    /// Translations the checker refused in an earlier reading: the key of
    /// the JavaScript and the checker's message.
    pub refused: HashMap<u32, String>,
    pub translated: Vec<(u32, u32, u32)>,
    /// Where v4 and v5 were told apart (`cond`, `internal` / `guard`, `reenter`).
    pub marker_v4: Option<Span>,
    pub marker_v5: Option<Span>,
    /// Transitions made external by v4's default, by span: the final pass
    /// keeps `reenter` only where their targets lie inside their source.
    external_v4: HashSet<(u32, u32)>,
    /// The actions of `initial: { target, actions }`, by the path of their
    /// state, and where they are written: the final pass places them.
    initial_actions: Vec<(String, Vec<crate::syntax::tree::ActionDoc>, Span)>,
    depth: u32,
    /// For SCXML's expressions: the document's data model and states.
    pub scxml: Option<&'r dyn super::translate::DataModel>,
}

/// Marker prefixes of descriptors the final pass resolves: a state's
/// `onDone` (by path) and a `done.state` event named by an XState id.
const DONE_OF_PATH: &str = "\u{0}path:";
const DONE_OF_ID: &str = "\u{0}id:";

impl<'a> Reader<'a> {
    /// Reads and lowers one machine. The checker's refusals of translated
    /// expressions make those parts opaque, and the machine is read again:
    /// a guard the expression checker rejects is still a guard the host can
    /// answer.
    pub(super) fn load_machine(
        &mut self,
        call: &MachineCall<'a>,
        settings: &Settings,
    ) -> LoadedMachine {
        let mut refused: HashMap<u32, String> = HashMap::new();
        loop {
            let built = self.build_machine(call, settings, &refused);
            let lowered = crate::syntax::lower(built.doc);
            let errors = match lowered {
                Ok(machine) => {
                    return LoadedMachine {
                        name: built.name,
                        version: Some(built.version),
                        machine: Ok(machine),
                        notes: built.notes,
                        anchors: self.anchors(call.config),
                    };
                }
                Err(errors) => errors,
            };
            let mut again = false;
            for error in &errors {
                if !matches!(error.code, "S001" | "S007" | "S008") {
                    continue;
                }
                let at = error.span.start;
                let owner = built
                    .translated
                    .iter()
                    .filter(|(offset, len, _)| *offset <= at && at <= offset + len)
                    .max_by_key(|(offset, ..)| *offset);
                if let Some((_, _, key)) = owner
                    && !refused.contains_key(key)
                {
                    refused.insert(*key, error.message.clone());
                    again = true;
                }
            }
            if !again {
                return LoadedMachine {
                    name: built.name,
                    version: Some(built.version),
                    machine: Err(errors),
                    notes: built.notes,
                    anchors: None,
                };
            }
        }
    }

    /// Reads one machine in the version its settings or its API say.
    pub(super) fn build_machine(
        &mut self,
        call: &MachineCall<'a>,
        settings: &Settings,
        refused: &HashMap<u32, String>,
    ) -> Built {
        let name = self.machine_name(call);
        let configured = settings
            .machines
            .get(&name.text)
            .and_then(|m| m.xstate)
            .or(settings.version);
        let first = self.read_machine(call, settings, refused, configured.unwrap_or(Version::V5));
        if configured.is_some() {
            return first.0;
        }
        // Inferred from the API: `setup`, `guard` and `reenter` are v5's,
        // `Machine`, `cond` and `internal` v4's; v5 where nothing tells.
        let (v4, v5) = (first.1, first.2);
        let mut built = match (v4, v5) {
            (Some(_), None) => self.read_machine(call, settings, refused, Version::V4),
            _ => first,
        }
        .0;
        if let (Some(v4), Some(_)) = (v4, v5) {
            built.notes.push(note(
                "this machine mixes XState v4 and v5: read as v5; set `xstate = \"v4\"` under \
                 `[machines.ID]` in idemchart.toml to read it as v4"
                    .into(),
                v4,
            ));
        }
        built
    }

    fn machine_name(&mut self, call: &MachineCall<'a>) -> Name {
        if let Ok(config) = self.resolve(call.config)
            && let Some(id) = property(config.e, "id")
            && let Expression::StringLiteral(s) = id.get_inner_expression()
        {
            return Name {
                text: s.value.to_string(),
                span: self.span(config.t, s.span),
            };
        }
        if let Some(hint) = call.name_hint {
            return Name {
                text: hint.to_string(),
                span: call.span,
            };
        }
        let (line, column) = self.line_col(call.span);
        let path = std::path::Path::new(&self.sources.main().path);
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("machine")
            .split('.')
            .next()
            .unwrap_or("machine")
            .to_string();
        Name {
            text: if call.json {
                stem
            } else {
                format!("{stem}@{line}:{column}")
            },
            span: call.span,
        }
    }

    /// One reading in `version`: what it built, and where it saw each
    /// version's markers.
    fn read_machine(
        &mut self,
        call: &MachineCall<'a>,
        settings: &Settings,
        refused: &HashMap<u32, String>,
        version: Version,
    ) -> (Built, Option<Span>, Option<Span>) {
        let name = self.machine_name(call);
        let mut cx = Cx {
            json: call.json,
            refused: refused.clone(),
            marker_v4: call.marker_v4,
            marker_v5: call.marker_v5,
            ..Cx::new(self, version)
        };
        for setup in &call.setup {
            cx.implementations(*setup);
        }
        for options in &call.options {
            cx.implementations(*options);
        }
        let mut doc = cx.machine(call, name.clone(), settings.machines.get(&name.text));
        if super::facts::repository_declares(settings) {
            doc.fact_source = FactSource::XstateDeclarations;
        }
        // A part read twice (a helper's states built for two events) is
        // noted once.
        let mut notes = cx.notes;
        let mut seen = HashSet::new();
        notes.retain(|n| seen.insert((n.span.start, n.span.end, n.message.clone())));
        let built = Built {
            name: name.text,
            version,
            doc,
            notes,
            translated: cx.translated,
        };
        (built, cx.marker_v4, cx.marker_v5)
    }
}

impl<'r, 'a> Cx<'r, 'a> {
    /// A reading with nothing read yet.
    fn new(reader: &'r mut Reader<'a>, version: Version) -> Cx<'r, 'a> {
        Cx {
            reader,
            version,
            json: false,
            impls: Impls::default(),
            notes: Vec::new(),
            effects: HashSet::new(),
            context: HashMap::new(),
            context_order: Vec::new(),
            copies: 0,
            read_copies: HashSet::new(),
            payloads: HashMap::new(),
            host_guards: Vec::new(),
            opaque: Vec::new(),
            stand_ins: Default::default(),
            host_actions: 0,
            refused: HashMap::new(),
            translated: Vec::new(),
            marker_v4: None,
            marker_v5: None,
            external_v4: HashSet::new(),
            initial_actions: Vec::new(),
            depth: 0,
            scxml: None,
        }
    }

    /// The reading of one SCXML expression, parsed into `reader`.
    pub fn for_scxml(
        reader: &'r mut Reader<'a>,
        model: &'r dyn super::translate::DataModel,
    ) -> Cx<'r, 'a> {
        Cx {
            scxml: Some(model),
            ..Cx::new(reader, Version::V5)
        }
    }
}

impl<'a> Cx<'_, 'a> {
    pub fn note(&mut self, message: String, span: Span) {
        self.notes.push(note(message, span));
    }

    pub fn span(&self, n: Node<'a>) -> Span {
        self.reader.span(n.t, n.e.span())
    }

    /// The properties of an object literal (through names and spreads), in
    /// order, a later key replacing an earlier one's value; `None` with a
    /// note when `n` is no object that can be read.
    pub fn entries(&mut self, n: Node<'a>, what: &str) -> Option<Vec<Entry<'a>>> {
        let resolved = match self.reader.resolve(n) {
            Ok(r) => r,
            Err((name, span)) => {
                self.note(
                    format!("{what} is `{name}`, which cannot be followed to its definition; it is left out"),
                    span,
                );
                return None;
            }
        };
        let mut out: Vec<Entry<'a>> = Vec::new();
        if !matches!(resolved.e, Expression::ObjectExpression(_)) {
            if self.built_entries(resolved, what, &mut out) {
                return Some(out);
            }
            let span = self.span(resolved);
            self.note(
                format!("{what} is not an object literal; it is left out"),
                span,
            );
            return None;
        }
        self.collect_entries(resolved, what, &mut out, 0);
        Some(out)
    }

    /// The entries of an object the program builds from a list
    /// (`Object.fromEntries(list.map(...))`), each key computed; false
    /// where `n` is no such object.
    fn built_entries(&mut self, n: Node<'a>, what: &str, out: &mut Vec<Entry<'a>>) -> bool {
        let Some(pairs) = self.reader.built_entries(n) else {
            return false;
        };
        for (key, value) in pairs {
            let Some((text, key_span)) = self.reader.key_text(key) else {
                let span = self.span(key);
                self.note(
                    format!("a key computed in {what} cannot be read; the property is left out"),
                    span,
                );
                continue;
            };
            let entry = Entry {
                key: self.reader.alloc.alloc_str(&text),
                key_span,
                key_at: (key.t, key.e.span().start),
                value,
            };
            match out.iter_mut().find(|e| e.key == entry.key) {
                Some(earlier) => *earlier = entry,
                None => out.push(entry),
            }
        }
        true
    }

    fn collect_entries(&mut self, n: Node<'a>, what: &str, out: &mut Vec<Entry<'a>>, depth: u32) {
        let Expression::ObjectExpression(o) = n.e else {
            return;
        };
        for p in &o.properties {
            match p {
                ObjectPropertyKind::ObjectProperty(p) => {
                    let key = match (&p.key, p.computed) {
                        (PropertyKey::StaticIdentifier(id), false) => Some(id.name.as_str()),
                        (PropertyKey::StringLiteral(s), _) => Some(s.value.as_str()),
                        (PropertyKey::NumericLiteral(n), _) => {
                            Some(self.reader.alloc.alloc_str(&number_key(n.value)))
                        }
                        (PropertyKey::TemplateLiteral(t), _) if t.single_quasi().is_some() => t
                            .single_quasi()
                            .map(|s| self.reader.alloc.alloc_str(s.as_str())),
                        // `[OrderStatus.CREATED]`, `[RETRY_DELAY_MS]`,
                        // `[event]` of a helper's parameter.
                        (key, true) => key
                            .as_expression()
                            .and_then(|e| self.reader.key_text(Node { e, t: n.t }))
                            .map(|(text, _)| -> &str { self.reader.alloc.alloc_str(&text) }),
                        _ => None,
                    };
                    let key_span = self.reader.span(n.t, p.key.span());
                    let Some(key) = key else {
                        self.note(
                            format!(
                                "a computed key in {what} cannot be read (it is no const, enum member or literal idemchart can follow); the property is left out"
                            ),
                            key_span,
                        );
                        continue;
                    };
                    if p.kind != PropertyKind::Init {
                        self.note(
                            format!(
                                "the accessor `{key}` in {what} cannot be read; it is left out"
                            ),
                            key_span,
                        );
                        continue;
                    }
                    let entry = Entry {
                        key,
                        key_span,
                        key_at: (n.t, p.key.span().start),
                        value: Node {
                            e: &p.value,
                            t: n.t,
                        },
                    };
                    match out.iter_mut().find(|e| e.key == key) {
                        Some(earlier) => *earlier = entry,
                        None => out.push(entry),
                    }
                }
                ObjectPropertyKind::SpreadProperty(s) => {
                    let spread = Node {
                        e: &s.argument,
                        t: n.t,
                    };
                    match self.reader.resolve(spread) {
                        Ok(r) if matches!(r.e, Expression::ObjectExpression(_))
                            && depth < MAX_DEPTH =>
                        {
                            self.collect_entries(r, what, out, depth + 1)
                        }
                        Ok(r) if self.built_entries(r, what, out) => {}
                        Ok(r) => {
                            let span = self.span(r);
                            self.note(
                                format!("a spread in {what} is not an object literal; what it adds is left out"),
                                span,
                            );
                        }
                        Err((name, span)) => self.note(
                            format!("the spread `...{name}` in {what} cannot be followed to its definition; what it adds is left out"),
                            span,
                        ),
                    }
                }
            }
        }
    }

    /// A string literal (through names), or one computed from literals
    /// (a template literal, `+`).
    pub fn string(&mut self, n: Node<'a>) -> Option<(String, Span)> {
        self.reader.string_text(n)
    }

    /// A list of `n`'s items: the elements of an array literal, else `n`.
    pub fn items(&mut self, n: Node<'a>) -> Vec<Node<'a>> {
        match self.reader.resolve(n) {
            Ok(r) => match r.e {
                Expression::ArrayExpression(a) => {
                    let mut out = Vec::new();
                    for el in &a.elements {
                        match el {
                            ArrayExpressionElement::SpreadElement(s) => {
                                let inner = Node {
                                    e: &s.argument,
                                    t: r.t,
                                };
                                if let Ok(inner) = self.reader.resolve(inner)
                                    && matches!(inner.e, Expression::ArrayExpression(_))
                                {
                                    out.extend(self.items(inner));
                                } else {
                                    let span = self.span(inner);
                                    self.note(
                                        "a spread in this list cannot be followed; what it adds is left out".into(),
                                        span,
                                    );
                                }
                            }
                            ArrayExpressionElement::Elision(_) => {}
                            other => {
                                if let Some(e) = other.as_expression() {
                                    out.push(Node { e, t: r.t });
                                }
                            }
                        }
                    }
                    out
                }
                _ => vec![r],
            },
            Err(_) => vec![n],
        }
    }

    fn is_undefined(&mut self, n: Node<'a>) -> bool {
        matches!(self.reader.resolve(n), Ok(r) if r.e.is_undefined() || r.e.is_void_0())
    }

    fn bool(&mut self, n: Node<'a>) -> Option<bool> {
        match self.reader.resolve(n).ok()?.e {
            Expression::BooleanLiteral(b) => Some(b.value),
            _ => None,
        }
    }

    /// The named implementations of one `setup` or options object.
    fn implementations(&mut self, n: Node<'a>) {
        let Some(entries) = self.entries(n, "the implementations") else {
            return;
        };
        for entry in entries {
            let list = match entry.key {
                "actions" => 0,
                "guards" => 1,
                "actors" => 2,
                "services" => {
                    self.marker_v4.get_or_insert(entry.key_span);
                    2
                }
                "delays" => 3,
                _ => continue,
            };
            let what = format!("`{}`", entry.key);
            let Some(named) = self.entries(entry.value, &what) else {
                continue;
            };
            let map = match list {
                0 => &mut self.impls.actions,
                1 => &mut self.impls.guards,
                2 => &mut self.impls.actors,
                _ => &mut self.impls.delays,
            };
            for e in named {
                map.insert(e.key, e.value);
            }
        }
    }

    fn machine(
        &mut self,
        call: &MachineCall<'a>,
        name: Name,
        settings: Option<&super::MachineSettings>,
    ) -> MachineDoc {
        let mut doc = MachineDoc {
            name: Some(name.clone()),
            semantics: Some(Name {
                text: "xstate".into(),
                span: name.span,
            }),
            fact_source: FactSource::Nowhere(ForeignFormat::Xstate),
            ..MachineDoc::default()
        };
        let Some(entries) = self.entries(call.config, "the machine config") else {
            return doc;
        };
        // The facts first: translations need the effects, and the context
        // and payload types.
        let mut declarations = Declarations::default();
        let mut root_allow = Vec::new();
        if let Some(meta) = entries.iter().find(|e| e.key == "meta") {
            self.root_meta(meta.value, &mut declarations, &mut root_allow);
        }
        if let Some(settings) = settings {
            let fallback = name.span;
            declarations.add(
                &settings.facts,
                &Places {
                    spans: &|_| None,
                    fallback,
                },
            );
        }
        // What TypeScript says of the payloads is no declaration of facts:
        // only the author's own (`meta.idemchart`, `[machines.ID]`) are.
        if !declarations.is_empty() {
            doc.fact_source = FactSource::XstateDeclarations;
        }
        super::types::add_event_types(self, call, &entries, &mut declarations);
        self.effects = declarations
            .effects
            .iter()
            .map(|e| e.name.text.clone())
            .collect();
        for event in &declarations.events {
            if let Some(payload) = &event.payload {
                self.payloads.insert(
                    event.name.text.clone(),
                    payload
                        .iter()
                        .map(|(f, t)| (f.text.clone(), t.text.clone()))
                        .collect(),
                );
            }
        }
        if let Some(context) = entries.iter().find(|e| e.key == "context") {
            doc.context = self.context(context.value);
        }
        for field in &doc.context {
            self.context
                .insert(field.name.text.clone(), field.value.clone());
            self.context_order.push(field.name.text.clone());
        }
        if let Some(description) = entries.iter().find(|e| e.key == "description")
            && let Some((text, _)) = self.string(description.value)
        {
            doc.description = Some(text);
        }
        let root_id = entries
            .iter()
            .find(|e| e.key == "id")
            .and_then(|e| self.string(e.value))
            .map(|(text, _)| text)
            .unwrap_or_else(|| "(machine)".into());

        let mut root = self.state_entries(&entries, Name::default(), "", true);
        root.allow.extend(root_allow);
        let predictable = entries
            .iter()
            .find(|e| e.key == "predictableActionArguments")
            .is_some_and(|e| {
                matches!(
                    self.reader.resolve(e.value).map(|r| r.e.get_inner_expression()),
                    Ok(Expression::BooleanLiteral(b)) if b.value
                )
            });
        if self.version == Version::V4 && !predictable && mixes_assigns(&root) {
            self.note(
                "XState v4 without `predictableActionArguments: true` runs every `assign` of a step before the step's other actions; idemchart runs them in the order written, as v4 does with that flag: a finding about an action that reads the context may not hold for this machine".into(),
                name.span,
            );
        }
        self.finish(&mut root, &root_id);
        self.outside_completions(&root, &mut declarations.events);
        doc.root = root;
        doc.events = declarations.events;
        doc.effects = declarations.effects;
        doc.sources = declarations.sources;
        doc.dedup = declarations.dedup;
        doc.guards = self.host_guards.iter().map(|(_, n)| n.clone()).collect();
        doc.opaque = std::mem::take(&mut self.opaque);
        doc.stand_ins = std::mem::take(&mut self.stand_ins);
        self.complete_context(&mut doc);
        doc
    }

    /// `meta.idemchart` of the root: the facts and the root's `allow`.
    fn root_meta(
        &mut self,
        meta: Node<'a>,
        declarations: &mut Declarations,
        allow: &mut Vec<(Name, String)>,
    ) {
        let Some(meta) = self.entries(meta, "`meta`") else {
            return;
        };
        let Some(ours) = meta.iter().find(|e| e.key == "idemchart") else {
            return;
        };
        let Some(sections) = self.entries(ours.value, "`meta.idemchart`") else {
            return;
        };
        let mut spans: HashMap<String, Span> = HashMap::new();
        let mut value = serde_json::Map::new();
        for section in sections {
            if section.key == "allow" {
                allow.extend(self.allow_map(section.value));
                continue;
            }
            spans.insert(section.key.to_string(), section.key_span);
            if let Some(names) = self.entries(section.value, "this section")
                && section.key != "dedup"
            {
                for n in names {
                    spans.insert(format!("{}.{}", section.key, n.key), n.key_span);
                }
            }
            match self.json(section.value) {
                Ok(v) => {
                    value.insert(section.key.to_string(), v);
                }
                Err((why, span)) => self.note(
                    format!(
                        "`meta.idemchart.{}` is not a literal: {why}; it is left out",
                        section.key
                    ),
                    span,
                ),
            }
        }
        match serde_json::from_value::<Facts>(serde_json::Value::Object(value)) {
            Ok(facts) => declarations.add(
                &facts,
                &Places {
                    spans: &|key| spans.get(key).copied(),
                    fallback: ours.key_span,
                },
            ),
            Err(e) => self.note(
                format!("`meta.idemchart` is not what the machine format's top level says: {e}; it is left out"),
                ours.key_span,
            ),
        }
    }

    /// `{ LINT: reason }`, as written.
    fn allow_map(&mut self, n: Node<'a>) -> Vec<(Name, String)> {
        let Some(entries) = self.entries(n, "`allow`") else {
            return Vec::new();
        };
        entries
            .into_iter()
            .map(|e| {
                let reason = self.string(e.value).map(|(s, _)| s).unwrap_or_default();
                (
                    Name {
                        text: e.key.to_string(),
                        span: e.key_span,
                    },
                    reason,
                )
            })
            .collect()
    }

    /// The `// idemchart-allow` comments above a key or element.
    fn comment_allows(&self, at: (TextId, u32)) -> Vec<(Name, String)> {
        self.reader.texts[self.reader.base(at.0)]
            .allows
            .get(&at.1)
            .map(|list| {
                list.iter()
                    .map(|(lint, reason, span)| {
                        (
                            Name {
                                text: lint.clone(),
                                span: *span,
                            },
                            reason.clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The initial context: an object literal, or a function or factory
    /// returning one. A value that is no literal is `null` with a note.
    fn context(&mut self, n: Node<'a>) -> Vec<ContextDoc> {
        let object = match self.returned_object(n) {
            Some(o) => o,
            None => {
                let span = self.span(n);
                self.note(
                    "the context is not an object literal, nor a function returning one; its fields are taken as `null`".into(),
                    span,
                );
                return Vec::new();
            }
        };
        let Some(entries) = self.entries(object, "the context") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries {
            let value = match self.json(e.value) {
                Ok(v) => v,
                Err((why, span)) => {
                    self.note(
                        format!("the initial value of `{}` is not a literal ({why}); it is taken as `null`", e.key),
                        span,
                    );
                    serde_json::Value::Null
                }
            };
            out.push(ContextDoc {
                name: Name {
                    text: e.key.to_string(),
                    span: e.key_span,
                },
                value,
            });
        }
        out
    }

    /// `n` itself when it is an object, else the object a function (or a
    /// call of a function bound in the file) returns.
    fn returned_object(&mut self, n: Node<'a>) -> Option<Node<'a>> {
        let r = self.reader.resolve(n).ok()?;
        if matches!(r.e, Expression::ObjectExpression(_)) {
            return Some(r);
        }
        if let Expression::CallExpression(call) = r.e
            && call.arguments.is_empty()
        {
            let callee = Node {
                e: &call.callee,
                t: r.t,
            };
            let f = self.function_of(callee)?;
            return self.returned(f.0, f.1);
        }
        let f = self.function_of(r)?;
        self.returned(f.0, f.1)
    }

    /// What a function returns, when it returns one object literal.
    fn returned(&mut self, f: super::scope::FnRef<'a>, t: TextId) -> Option<Node<'a>> {
        let e = match f.body() {
            Err(e) => e,
            Ok(statements) => match statements.last()? {
                Statement::ReturnStatement(r) => r.argument.as_ref()?,
                _ => return None,
            },
        };
        let r = self.reader.resolve(Node { e, t }).ok()?;
        matches!(r.e, Expression::ObjectExpression(_)).then_some(r)
    }

    /// A literal as JSON: numbers, strings, booleans, `null`, and arrays and
    /// objects of them, through names and spreads.
    pub fn json(&mut self, n: Node<'a>) -> Result<serde_json::Value, (String, Span)> {
        use serde_json::Value;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(("it nests too deeply".into(), self.span(n)));
        }
        let result = (|| {
            let r = self.reader.resolve(n).map_err(|(name, span)| {
                (
                    format!("`{name}` cannot be followed to its definition"),
                    span,
                )
            })?;
            Ok(match r.e {
                Expression::NumericLiteral(x) => number(x.value),
                Expression::StringLiteral(s) => Value::String(s.value.to_string()),
                Expression::TemplateLiteral(t) if t.single_quasi().is_some() => {
                    Value::String(t.single_quasi().map(|s| s.to_string()).unwrap_or_default())
                }
                Expression::BooleanLiteral(b) => Value::Bool(b.value),
                Expression::NullLiteral(_) => Value::Null,
                Expression::Identifier(id) if id.name == "undefined" => Value::Null,
                Expression::UnaryExpression(u)
                    if u.operator == UnaryOperator::UnaryNegation
                        && matches!(u.argument, Expression::NumericLiteral(_)) =>
                {
                    let Expression::NumericLiteral(x) = &u.argument else {
                        unreachable!("matched above")
                    };
                    number(-x.value)
                }
                Expression::ArrayExpression(_) => {
                    let items = self.items(r);
                    Value::Array(
                        items
                            .into_iter()
                            .map(|i| self.json(i))
                            .collect::<Result<_, _>>()?,
                    )
                }
                Expression::ObjectExpression(_) => {
                    let entries = self.entries(r, "this object").unwrap_or_default();
                    let mut map = serde_json::Map::new();
                    for e in entries {
                        map.insert(e.key.to_string(), self.json(e.value)?);
                    }
                    Value::Object(map)
                }
                _ => return Err(("it is computed".into(), self.span(r))),
            })
        })();
        self.depth -= 1;
        result
    }

    /// A state config into a state (the root when `root`).
    fn state(&mut self, key: Name, n: Node<'a>, path: &str, at: (TextId, u32)) -> StateDoc {
        self.depth += 1;
        let what = format!("the config of state `{}`", key.text);
        let mut doc = if self.depth > MAX_DEPTH {
            self.note(
                "the states nest too deeply; the rest is left out".into(),
                key.span,
            );
            StateDoc {
                key: key.clone(),
                ..StateDoc::default()
            }
        } else {
            match self.entries(n, &what) {
                Some(entries) => self.state_entries(&entries, key, path, false),
                None => StateDoc {
                    key,
                    ..StateDoc::default()
                },
            }
        };
        doc.allow.extend(self.comment_allows(at));
        self.depth -= 1;
        doc
    }

    fn state_entries(
        &mut self,
        entries: &[Entry<'a>],
        key: Name,
        path: &str,
        root: bool,
    ) -> StateDoc {
        let mut doc = StateDoc {
            key,
            ..StateDoc::default()
        };
        for entry in entries {
            let value = entry.value;
            match entry.key {
                "id" if !root => {
                    if let Some((text, span)) = self.string(value) {
                        doc.id = Some(Name { text, span });
                    }
                }
                "initial" => {
                    if let Some((text, span)) = self.string(value) {
                        doc.initial = vec![Name { text, span }];
                    } else if let Ok(r) = self.reader.resolve(value)
                        && let Some(target) = property(r.e, "target")
                    {
                        // `{ target: ['#machine.state.child'] }`, as
                        // `toJSON()` writes it: the child's key.
                        let own = entries
                            .iter()
                            .find(|e| e.key == "id")
                            .and_then(|e| self.string(e.value))
                            .map(|(id, _)| format!("#{id}."));
                        doc.initial = self
                            .targets(Node { e: target, t: r.t })
                            .into_iter()
                            .map(|mut name| {
                                if let Some(own) = &own
                                    && let Some(child) = name.text.strip_prefix(own.as_str())
                                {
                                    name.text = child.to_string();
                                }
                                name
                            })
                            .collect();
                        if let Some(actions) = property(r.e, "actions") {
                            let mut list = Vec::new();
                            self.actions(Node { e: actions, t: r.t }, &mut list, View::Plain);
                            if !list.is_empty() {
                                let span = self.span(r);
                                self.initial_actions.push((path.to_string(), list, span));
                            }
                        }
                    }
                }
                "type" => {
                    if let Some((text, span)) = self.string(value) {
                        doc.kind = Some(Name { text, span });
                    }
                }
                "history" => {
                    if let Some((text, span)) = self.string(value) {
                        doc.history = Some(Name { text, span });
                    } else if self.bool(value) == Some(true) {
                        doc.history = Some(Name {
                            text: "deep".into(),
                            span: entry.key_span,
                        });
                    }
                }
                "target" => doc.target = self.targets(value),
                "states" => {
                    if let Some(children) = self.entries(value, "`states`") {
                        for child in children {
                            let child_path = if path.is_empty() {
                                child.key.to_string()
                            } else {
                                format!("{path}.{}", child.key)
                            };
                            let key = Name {
                                text: child.key.to_string(),
                                span: child.key_span,
                            };
                            let state = self.state(key, child.value, &child_path, child.key_at);
                            doc.states.push(state);
                        }
                    }
                }
                "on" => self.on(value, &mut doc, path),
                "always" => {
                    let list =
                        self.transitions(value, entry.key_span, Trigger::Always, path, View::Plain);
                    doc.always.extend(list);
                }
                "after" => self.after(value, &mut doc, path),
                "entry" | "onEntry" => {
                    let mut actions = Vec::new();
                    self.actions(value, &mut actions, View::Plain);
                    doc.entry.extend(actions);
                }
                "exit" | "onExit" => {
                    let mut actions = Vec::new();
                    self.actions(value, &mut actions, View::Plain);
                    doc.exit.extend(actions);
                }
                "invoke" => {
                    for item in self.items(value) {
                        if let Some(invoke) = self.invoke(item, path) {
                            doc.invoke.push(invoke);
                        }
                    }
                }
                "onDone" => {
                    let trigger = Trigger::Event(format!("{DONE_OF_PATH}{path}"));
                    let list = self.transitions(value, entry.key_span, trigger, path, View::Plain);
                    doc.on.extend(list);
                }
                "tags" => {
                    for item in self.items(value) {
                        if let Some((tag, _)) = self.string(item) {
                            doc.tags.push(tag);
                        }
                    }
                }
                // The root's is the machine's description.
                "description" if !root => doc.description = self.string(value).map(|(s, _)| s),
                "meta" => {
                    if !root
                        && let Ok(meta) = self.reader.resolve(value)
                        && let Some(ours) = property(meta.e, "idemchart")
                        && let Ok(ours) = self.reader.resolve(Node { e: ours, t: meta.t })
                        && let Some(allow) = property(ours.e, "allow")
                    {
                        let allow = self.allow_map(Node {
                            e: allow,
                            t: ours.t,
                        });
                        doc.allow.extend(allow);
                    }
                }
                // Read and without a counterpart in the model: what a final
                // state outputs, and what only XState's types and
                // `toJSON()` write.
                "output"
                | "data"
                | "key"
                | "order"
                | "version"
                | "transitions"
                | "types"
                | "schema"
                | "tsTypes"
                | "delimiter"
                | "strict"
                | "preserveActionOrder" => {}
                "predictableActionArguments" => {
                    self.marker_v4.get_or_insert(entry.key_span);
                }
                "id" | "context" | "description" if root => {}
                other => self.note(
                    format!("`{other}` is not a key of a state config; it is ignored"),
                    entry.key_span,
                ),
            }
        }
        doc
    }

    /// `on`: a map of descriptors (or v4's list of `{ event, ... }`).
    fn on(&mut self, n: Node<'a>, doc: &mut StateDoc, path: &str) {
        if let Ok(r) = self.reader.resolve(n)
            && matches!(r.e, Expression::ArrayExpression(_))
        {
            for item in self.items(r) {
                let event = self
                    .reader
                    .resolve(item)
                    .ok()
                    .and_then(|i| property(i.e, "event").map(|e| Node { e, t: i.t }));
                let Some((event, span)) = event.and_then(|e| self.string(e)) else {
                    let span = self.span(item);
                    self.note(
                        "a transition of `on` without an `event` is left out".into(),
                        span,
                    );
                    continue;
                };
                self.on_entry(&event, span, item, doc, path);
            }
            return;
        }
        let Some(entries) = self.entries(n, "`on`") else {
            return;
        };
        for entry in entries {
            let (on, always) = (doc.on.len(), doc.always.len());
            self.on_entry(entry.key, entry.key_span, entry.value, doc, path);
            // A comment above the key covers the transitions written under it.
            let allow = self.comment_allows(entry.key_at);
            let within = entry.key_span.to(self.span(entry.value));
            allow_transitions(&mut doc.on[on..], allow.clone(), within);
            allow_transitions(&mut doc.always[always..], allow, within);
        }
    }

    fn on_entry(
        &mut self,
        event: &str,
        span: Span,
        value: Node<'a>,
        doc: &mut StateDoc,
        path: &str,
    ) {
        if event.is_empty() {
            // v4's eventless transitions.
            let list = self.transitions(value, span, Trigger::Always, path, View::Plain);
            doc.always.extend(list);
            return;
        }
        let Some(descriptor) = self.descriptor(event, span) else {
            return;
        };
        let name = match EventPattern::parse(&descriptor) {
            EventPattern::Exact(name) => name,
            _ => String::new(),
        };
        let view = if name.starts_with("xstate.done.actor.") {
            View::Done
        } else if name.starts_with("xstate.error.actor.") {
            View::Error
        } else {
            View::Plain
        };
        let list = self.transitions(value, span, Trigger::Event(descriptor), path, view);
        doc.on.extend(list);
    }

    /// An event key in the machine format's terms: v4's `done.invoke.ID`
    /// and `error.platform.ID` are the completion events of invocation
    /// `ID`; a `done.state` event names its state by XState id, resolved at
    /// the end. `None`, with a note, for a name the format cannot write.
    fn descriptor(&mut self, event: &str, span: Span) -> Option<String> {
        let mapped = if let Some(id) = event.strip_prefix("done.invoke.") {
            format!("xstate.done.actor.{id}")
        } else if let Some(id) = event.strip_prefix("error.platform.") {
            format!("xstate.error.actor.{id}")
        } else if let Some(id) = event
            .strip_prefix("xstate.done.state.")
            .or_else(|| event.strip_prefix("done.state."))
        {
            return Some(format!("{DONE_OF_ID}{id}"));
        } else {
            event.to_string()
        };
        // XState's keys are `*`, a prefix `name.*`, or one event's name,
        // whatever its characters (a descriptor quotes the unusual ones).
        let pattern = if mapped == "*" {
            EventPattern::Any
        } else if let Some(prefix) = mapped.strip_suffix(".*") {
            EventPattern::Prefix(prefix.to_string())
        } else {
            EventPattern::Exact(mapped)
        };
        if let EventPattern::Exact(name) | EventPattern::Prefix(name) = &pattern
            && !crate::model::is_event_name(name)
        {
            self.note(
                format!("the event name `{event}` cannot be written in the machine format (it holds a backtick or a line break); its transitions are left out"),
                span,
            );
            return None;
        }
        Some(pattern.to_string())
    }

    /// `after`: a map of delays (ms or a named delay) or v4's list of
    /// `{ delay, ... }`.
    fn after(&mut self, n: Node<'a>, doc: &mut StateDoc, path: &str) {
        let mut pairs: Vec<(Node<'a>, Span, Node<'a>)> = Vec::new();
        if let Ok(r) = self.reader.resolve(n)
            && matches!(r.e, Expression::ArrayExpression(_))
        {
            for item in self.items(r) {
                let delay = self
                    .reader
                    .resolve(item)
                    .ok()
                    .and_then(|i| property(i.e, "delay").map(|e| Node { e, t: i.t }));
                match delay {
                    Some(d) => {
                        let span = self.span(d);
                        pairs.push((d, span, item));
                    }
                    None => {
                        let span = self.span(item);
                        self.note(
                            "a delayed transition without `delay` is left out".into(),
                            span,
                        );
                    }
                }
            }
        } else if let Some(entries) = self.entries(n, "`after`") {
            for entry in entries {
                let allow = self.comment_allows(entry.key_at);
                let within = entry.key_span.to(self.span(entry.value));
                let key: &'a str = entry.key;
                let ms = key.parse::<f64>().ok();
                let duration = match ms {
                    Some(ms) => duration(ms),
                    None if self.delay_is_a_function(key) => {
                        Ok(self.computed_delay(key, entry.key_span, within))
                    }
                    None => self.named_delay(key),
                };
                match duration {
                    Ok(d) => {
                        let mut list = self.transitions(
                            entry.value,
                            entry.key_span,
                            Trigger::After(d),
                            path,
                            View::Plain,
                        );
                        allow_transitions(&mut list, allow, within);
                        doc.after.extend(list);
                    }
                    Err(why) => self.note(
                        format!("the delay `{key}` {why}; its transitions are left out"),
                        entry.key_span,
                    ),
                }
            }
            return;
        }
        for (delay, span, item) in pairs {
            let d = match self.reader.number(delay) {
                Some(ms) => duration(ms),
                None => match self.string(delay) {
                    Some((name, _)) => {
                        let name: &'a str = self.reader.alloc.alloc_str(&name);
                        if self.delay_is_a_function(name) {
                            Ok(self.computed_delay(name, span, self.span(item)))
                        } else {
                            self.named_delay(name)
                        }
                    }
                    None if is_function(self.reader.resolve(delay).ok().map(|r| r.e)) => {
                        Ok(self.computed_delay("", span, self.span(item)))
                    }
                    None => Err("is computed".into()),
                },
            };
            match d {
                Ok(d) => {
                    let list = self.transitions(item, span, Trigger::After(d), path, View::Plain);
                    doc.after.extend(list);
                }
                Err(why) => self.note(
                    format!("this delay {why}; its transitions are left out"),
                    span,
                ),
            }
        }
    }

    /// Whether `setup({ delays })` (or v4's options) computes the delay
    /// `name` by a function.
    fn delay_is_a_function(&mut self, name: &str) -> bool {
        let value = self.impls.delays.get(name).copied();
        value.is_some_and(|v| is_function(self.reader.resolve(v).ok().map(|r| r.e)))
    }

    /// The stand-in duration of timers whose delay a function computes (the
    /// delay `name`, or one written in place when `name` is empty), their
    /// transitions within `transitions`: an opaque part, so that a run in
    /// which one fires rests on it, and a note at `at`. Left out, the
    /// timers' targets would be unreachable.
    fn computed_delay(&mut self, name: &str, at: Span, transitions: Span) -> String {
        let stand_in = crate::model::OpaqueKind::STAND_IN_DELAY;
        // Named where the function is written, not where it is used.
        let defined = match self.impls.delays.get(name).copied() {
            Some(value) if !name.is_empty() => self.span(value),
            _ => at,
        };
        let (code, place) = self.code_and_place(defined);
        let what = match name {
            "" => format!(
                "the delay `{}` at {place}",
                super::translate::abbreviated(&code)
            ),
            name => format!("the delay `{name}` computed at {place}"),
        };
        self.opaque.push(crate::model::OpaquePart {
            name: format!("delay {}", self.opaque.len()),
            what,
            kind: crate::model::OpaqueKind::Delay,
            span: transitions,
        });
        let which = match name {
            "" => "this delay".to_string(),
            name => format!("the delay `{name}`"),
        };
        self.note(
            format!("{which} is computed by a function, which only XState can run; its timers are kept, due after a stand-in {stand_in}, and a finding whose run waits for one is undecided"),
            at,
        );
        stand_in.to_string()
    }

    /// A delay named in `setup({ delays })` or v4's options, when literal.
    pub(super) fn named_delay(&mut self, name: &'a str) -> Result<String, String> {
        let Some(value) = self.impls.delays.get(name).copied() else {
            return Err("names no delay of `setup({ delays })`".into());
        };
        match self.reader.number(value) {
            Some(ms) => duration(ms),
            None => Err("is computed by a function, which only XState can run".into()),
        }
    }

    /// Transitions in any of XState's forms, each with the allows of the
    /// comments above its element.
    fn transitions(
        &mut self,
        n: Node<'a>,
        key_span: Span,
        trigger: Trigger,
        path: &str,
        view: View,
    ) -> Vec<TransitionDoc> {
        let mut out = Vec::new();
        let resolved = match self.reader.resolve(n) {
            Ok(r) => r,
            Err((name, span)) => {
                self.note(
                    format!("the transition `{name}` cannot be followed to its definition; it is left out"),
                    span,
                );
                return out;
            }
        };
        let items = if matches!(resolved.e, Expression::ArrayExpression(_)) {
            self.items(resolved)
        } else {
            vec![resolved]
        };
        let single = items.len() == 1;
        for item in items {
            let item = self.reader.resolve(item).unwrap_or(item);
            let span = if single { key_span } else { self.span(item) };
            let allow = self.comment_allows((item.t, item.e.span().start));
            if let Some(mut t) = self.transition(item, span, &trigger, path, view) {
                allow_transitions(
                    std::slice::from_mut(&mut t),
                    allow,
                    span.to(self.span(item)),
                );
                out.push(t);
            }
        }
        out
    }

    fn transition(
        &mut self,
        n: Node<'a>,
        span: Span,
        trigger: &Trigger,
        path: &str,
        view: View,
    ) -> Option<TransitionDoc> {
        let mut doc = TransitionDoc {
            span,
            ..TransitionDoc::default()
        };
        match trigger {
            Trigger::Event(e) => {
                doc.event = Some(Name {
                    text: e.clone(),
                    span,
                })
            }
            Trigger::After(d) => {
                doc.delay = Some(Name {
                    text: d.clone(),
                    span,
                })
            }
            Trigger::Always | Trigger::Completion => {}
        }
        if self.is_undefined(n) {
            self.note(
                "a transition to `undefined` (v4's forbidden transition) is left out".into(),
                span,
            );
            return None;
        }
        let mut internal: Option<bool> = None;
        match n.e {
            Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => {
                doc.targets = self.targets(n);
            }
            Expression::ObjectExpression(_) => {
                let entries = self.entries(n, "a transition")?;
                let mut guards = Vec::new();
                for entry in entries {
                    match entry.key {
                        "target" => doc.targets = self.targets(entry.value),
                        "guard" => {
                            self.marker_v5.get_or_insert(entry.key_span);
                            guards.push(self.guard(entry.value, view));
                        }
                        "cond" => {
                            self.marker_v4.get_or_insert(entry.key_span);
                            guards.push(self.guard(entry.value, view));
                        }
                        "in" => {
                            if let Some((id, _)) = self.string(entry.value) {
                                let mut text = String::from("in_state(");
                                crate::expr::write_quoted(&id, &mut text).ok();
                                text.push(')');
                                guards.push(Some(crate::syntax::tree::ExprText {
                                    text,
                                    offset: self.span(entry.value).start,
                                }));
                            }
                        }
                        "actions" => self.actions(entry.value, &mut doc.actions, view),
                        "reenter" => {
                            self.marker_v5.get_or_insert(entry.key_span);
                            doc.reenter = self.bool(entry.value) == Some(true);
                        }
                        "internal" => {
                            self.marker_v4.get_or_insert(entry.key_span);
                            internal = self.bool(entry.value);
                        }
                        "description" => doc.description = self.string(entry.value).map(|(s, _)| s),
                        "meta" | "event" | "delay" | "eventType" | "source" | "toJSON" => {}
                        other => self.note(
                            format!("`{other}` is not a key of a transition; it is ignored"),
                            entry.key_span,
                        ),
                    }
                }
                doc.guard = combine_guards(guards.into_iter().flatten().collect());
            }
            _ => {
                let span = self.span(n);
                self.note(
                    "this transition is neither a target nor a transition config; it is left out"
                        .into(),
                    span,
                );
                return None;
            }
        }
        if self.version == Version::V4 && !doc.targets.is_empty() {
            // v4: a transition is external unless it is marked internal or
            // targets the source's own children (`.child`).
            let external = internal.map_or_else(
                || !doc.targets.iter().all(|t| t.text.starts_with('.')),
                |internal| !internal,
            );
            if external && !doc.reenter {
                doc.reenter = true;
                self.external_v4.insert((span.start, span.end));
            }
        }
        let _ = path;
        Some(doc)
    }

    /// Target strings: one, or a list.
    fn targets(&mut self, n: Node<'a>) -> Vec<Name> {
        let mut out = Vec::new();
        for item in self.items(n) {
            if self.is_undefined(item) {
                continue;
            }
            match self.string(item) {
                Some((text, span)) => out.push(Name { text, span }),
                None => {
                    let span = self.span(item);
                    self.note("a target that is not a string is left out".into(), span);
                }
            }
        }
        out
    }

    /// An invocation: `src`, `id`, `input` (v4 `data`), `onDone`, `onError`.
    fn invoke(&mut self, n: Node<'a>, path: &str) -> Option<InvokeDoc> {
        let entries = self.entries(n, "an invocation")?;
        let mut doc = InvokeDoc {
            span: self.span(n),
            ..InvokeDoc::default()
        };
        for entry in &entries {
            match entry.key {
                "src" => doc.src = Some(self.actor_name(entry.value)),
                "id" => {
                    doc.id = self
                        .string(entry.value)
                        .map(|(text, span)| Name { text, span });
                }
                "input" | "data" => doc.input = self.input(entry.value, entry.key == "input"),
                "onDone" | "onError" => {
                    let view = if entry.key == "onDone" {
                        View::Done
                    } else {
                        View::Error
                    };
                    let list = self.transitions(
                        entry.value,
                        entry.key_span,
                        Trigger::Completion,
                        path,
                        view,
                    );
                    if entry.key == "onDone" {
                        doc.on_done = list;
                    } else {
                        doc.on_error = list;
                    }
                }
                "autoForward" | "forward" | "systemId" | "onSnapshot" | "toJSON" | "type" => {}
                other => self.note(
                    format!("`{other}` is not a key of an invocation; it is ignored"),
                    entry.key_span,
                ),
            }
        }
        Some(doc)
    }

    /// The name of an invoked actor: a name of `setup({ actors })` (or v4's
    /// `services`), the name bound to an actor logic, or `inline_LxCy` for
    /// logic written in place. Its idempotency is unknown until declared
    /// under `effects`.
    fn actor_name(&mut self, n: Node<'a>) -> Name {
        if let Some((text, span)) = self.string(n) {
            return Name { text, span };
        }
        if let Ok(r) = self.reader.resolve(n)
            && let Some(t) = property(r.e, "type")
            && let Some((text, span)) = self.string(Node { e: t, t: r.t })
        {
            return Name { text, span };
        }
        if let Expression::Identifier(id) = n.e.get_inner_expression() {
            return Name {
                text: id.name.to_string(),
                span: self.span(n),
            };
        }
        let span = self.span(n);
        let name = self.in_place(span, "actor");
        self.note(
            "this actor is written in place: the linter treats it as a host service whose idempotency is unknown".to_string(),
            span,
        );
        Name { text: name, span }
    }

    /// `inline_L12C7`: the name of a part written in place, which the
    /// author never wrote; recorded with what the author sees instead
    /// (`the action written at src/cart.machine.ts:12:7`), `kind` saying
    /// what it is (`action`, `guard`, `actor`).
    pub fn in_place(&mut self, span: Span, kind: &str) -> String {
        let (line, column) = self.reader.line_col(span);
        let name = format!("inline_L{line}C{column}");
        let (_, place) = self.code_and_place(span);
        self.stand_ins
            .insert(name.clone(), format!("the {kind} written at {place}"));
        name
    }

    /// The final pass, once every state exists: `#` targets and `done.state`
    /// events are resolved to the states XState resolves them to (a state
    /// targeted by XState's default id gets that id), state-level `onDone`
    /// handlers get their event, and v4's external transitions keep
    /// `reenter` only where their targets lie inside their source.
    fn finish(&mut self, root: &mut StateDoc, root_id: &str) {
        // An id that is XState's default (`machine.path`, as `toJSON()`
        // writes every state's) says nothing; the states targeted by it get
        // it back below.
        drop_default_ids(root, root_id, "");
        let mut ids: HashMap<String, String> = HashMap::new();
        let mut explicit_by_path: HashMap<String, String> = HashMap::new();
        collect_ids(root, "", &mut ids, &mut explicit_by_path);
        let mut assigned: HashMap<String, String> = HashMap::new();
        let mut wanted: Vec<String> = Vec::new();
        // `in_state` takes a path: a state it names needs no id.
        let mut by_path_only: HashSet<String> = HashSet::new();
        let mut by_id: HashSet<String> = HashSet::new();
        visit_names(root, &mut |name, kind| {
            match kind {
                NameKind::StateIn => by_path_only.insert(name.to_string()),
                _ => by_id.insert(
                    name.trim_start_matches('#')
                        .trim_start_matches(DONE_OF_ID)
                        .to_string(),
                ),
            };
            let reference = match kind {
                NameKind::Target => name.strip_prefix('#'),
                NameKind::Event => name.strip_prefix(DONE_OF_ID),
                NameKind::StateIn => Some(name),
            };
            if let Some(id) = reference {
                wanted.push(id.to_string());
            }
        });
        let mut resolved: HashMap<String, Option<String>> = HashMap::new();
        for reference in wanted {
            if resolved.contains_key(&reference) {
                continue;
            }
            let path = resolve_xstate_id(root, &reference, root_id, &ids);
            resolved.insert(reference, path);
        }
        // Each resolved state is written as `#its id`, giving it XState's
        // id when it has none of its own.
        let mut target_text: HashMap<String, String> = HashMap::new();
        for (reference, path) in &resolved {
            let Some(path) = path else { continue };
            if by_path_only.contains(reference) && !by_id.contains(reference) {
                continue;
            }
            let id = match explicit_by_path.get(path).or(assigned.get(path)) {
                Some(id) => id.clone(),
                None => {
                    assigned.insert(path.clone(), reference.clone());
                    reference.clone()
                }
            };
            target_text.insert(reference.clone(), id);
        }
        assign_ids(root, "", &assigned);
        let mut done_names: HashMap<String, String> = HashMap::new();
        collect_done_names(root, "", &mut done_names);
        self.place_initial_actions(root);
        let external = std::mem::take(&mut self.external_v4);
        rewrite(root, "", &mut |t, source_path| {
            // `in_state` takes a path from the top, which every state has.
            if let Some(guard) = &mut t.guard {
                let ids: Vec<String> = state_in_ids(&guard.text)
                    .into_iter()
                    .map(String::from)
                    .collect();
                for id in ids {
                    if let Some(Some(path)) = resolved.get(&id) {
                        guard.text = guard.text.replace(
                            &format!("in_state(\"#{id}\")"),
                            &format!("in_state(\"{path}\")"),
                        );
                    }
                }
            }
            for target in &mut t.targets {
                if let Some(reference) = target.text.strip_prefix('#')
                    && let Some(id) = target_text.get(reference)
                {
                    target.text = format!("#{id}");
                }
            }
            if let Some(event) = &mut t.event {
                if let Some(path) = event.text.strip_prefix(DONE_OF_PATH) {
                    let name = done_names
                        .get(path)
                        .cloned()
                        .unwrap_or_else(|| path.to_string());
                    event.text = EventPattern::Exact(format!("done.state.{name}")).to_string();
                } else if let Some(reference) = event.text.strip_prefix(DONE_OF_ID) {
                    let name = resolved
                        .get(reference)
                        .cloned()
                        .flatten()
                        .and_then(|p| done_names.get(&p).cloned())
                        .unwrap_or_else(|| reference.to_string());
                    event.text = EventPattern::Exact(format!("done.state.{name}")).to_string();
                }
            }
            if external.contains(&(t.span.start, t.span.end)) {
                let inside = t.targets.iter().all(|target| {
                    let path = target_path(&target.text, source_path, &ids);
                    path.is_some_and(|p| {
                        p == source_path || p.starts_with(&format!("{source_path}."))
                    })
                });
                t.reenter = inside;
            }
        });
    }

    /// The actions of initial transitions run after their state's entry
    /// actions, when the state is entered by default: they become its last
    /// entry actions where nothing else enters it (a target inside it from
    /// outside, a history state inside it, a deep history state above).
    /// Where something can, they are left out with a note: the machine
    /// format has no actions that run on default entry only.
    fn place_initial_actions(&mut self, root: &mut StateDoc) {
        let pending = std::mem::take(&mut self.initial_actions);
        if pending.is_empty() {
            return;
        }
        let mut ids = HashMap::new();
        collect_ids(root, "", &mut ids, &mut HashMap::new());
        // (source path, target path) of every transition, and the paths of
        // history states with whether they are deep.
        fn walk(
            state: &StateDoc,
            path: &str,
            ids: &HashMap<String, String>,
            moves: &mut Vec<(String, String)>,
            histories: &mut Vec<(String, bool)>,
        ) {
            for t in state.transitions() {
                for target in &t.targets {
                    if let Some(to) = target_path(&target.text, path, ids) {
                        moves.push((path.to_string(), to));
                    }
                }
            }
            if state.kind.as_ref().is_some_and(|k| k.text == "history") {
                let deep = state.history.as_ref().is_some_and(|h| h.text == "deep");
                histories.push((path.to_string(), deep));
            }
            for child in &state.states {
                walk(child, &join(path, &child.key.text), ids, moves, histories);
            }
        }
        let (mut moves, mut histories) = (Vec::new(), Vec::new());
        walk(root, "", &ids, &mut moves, &mut histories);
        let inside = |path: &str, of: &str| of.is_empty() || path.starts_with(&format!("{of}."));
        for (path, actions, span) in pending {
            let targeted = moves
                .iter()
                .any(|(from, to)| inside(to, &path) && from != &path && !inside(from, &path));
            let history = histories.iter().any(|(h, deep)| {
                inside(h, &path) || (*deep && inside(&path, h.rsplit_once('.').map_or("", |p| p.0)))
            });
            if targeted || history {
                self.note(
                    "the actions of this initial transition run only when its state is entered by default, and a transition or a history state here enters it otherwise; they are left out".into(),
                    span,
                );
                continue;
            }
            let mut state = &mut *root;
            for key in path.split('.').filter(|k| !k.is_empty()) {
                match state.states.iter_mut().find(|s| s.key.text == key) {
                    Some(child) => state = child,
                    None => break,
                }
            }
            state.entry.extend(actions);
        }
    }

    /// Completion events handled where no state invokes their actor: those
    /// of the actors an action spawns (`spawn(logic, 'id')`), which reach
    /// the machine like events from outside, and are declared as such so
    /// that the machine loads. One of an id that nothing in the file spawns
    /// is noted too: its actor is made where idemchart cannot see it.
    fn outside_completions(&mut self, root: &StateDoc, events: &mut Vec<EventDoc>) {
        fn walk(state: &StateDoc, invoked: &mut HashSet<String>, handled: &mut Vec<Name>) {
            for invoke in &state.invoke {
                if let Some(id) = invoke.id.as_ref().or(invoke.src.as_ref()) {
                    invoked.insert(id.text.clone());
                }
            }
            for event in state.transitions().filter_map(|t| t.event.as_ref()) {
                for pattern in crate::model::EventDescriptor::parse(&event.text).patterns {
                    if let EventPattern::Exact(name) = pattern {
                        handled.push(Name {
                            text: name,
                            span: event.span,
                        });
                    }
                }
            }
            for child in &state.states {
                walk(child, invoked, handled);
            }
        }
        let (mut invoked, mut handled) = (HashSet::new(), Vec::new());
        walk(root, &mut invoked, &mut handled);
        for event in handled {
            let Some((_, id)) = crate::model::Completion::of_event(&event.text) else {
                continue;
            };
            if invoked.contains(id) || events.iter().any(|e| e.name.text == event.text) {
                continue;
            }
            let description = if self.reader.spawned.contains(id) {
                format!("the completion of the actor spawned as `{id}`")
            } else {
                self.note(
                    format!("no state invokes an actor `{id}` and the file spawns none: `{}` is read as an event from outside", event.text),
                    event.span,
                );
                format!("the completion of the actor `{id}`, made outside the machine")
            };
            events.push(EventDoc {
                name: event,
                id_field: None,
                source: None,
                payload: None,
                description: Some(description),
            });
        }
    }

    /// Context fields that translations read or assign but the context does
    /// not declare (a context made by a function of the input, `{} as
    /// Ctx`): added as `null`, which the checker takes as any type.
    fn complete_context(&mut self, doc: &mut MachineDoc) {
        let mut used: Vec<(String, Span)> = Vec::new();
        let visit = |text: &str, span: Span, used: &mut Vec<(String, Span)>| {
            for field in context_fields(text) {
                used.push((field, span));
            }
        };
        let mut assigned = Vec::new();
        visit_exprs(&doc.root, &mut |e, assign| match assign {
            Some(field) => assigned.push(field.clone()),
            None => visit(
                &e.text,
                Span::new(e.offset as usize, e.offset as usize),
                &mut used,
            ),
        });
        for field in assigned {
            used.push((field.text, field.span));
        }
        for (field, span) in used {
            if !doc.context.iter().any(|c| c.name.text == field) {
                self.note(
                    format!("the context field `{field}` has no initial value in the config; it is taken as `null`"),
                    span,
                );
                doc.context.push(ContextDoc {
                    name: Name { text: field, span },
                    value: serde_json::Value::Null,
                });
            }
        }
    }
}

/// What a transition is taken on.
pub(super) enum Trigger {
    Event(String),
    Always,
    After(String),
    /// An invocation's `onDone`/`onError`, whose event lowering adds.
    Completion,
}

/// Guards of one transition (`guard` and v4's `in`), all of which must hold.
fn combine_guards(
    guards: Vec<crate::syntax::tree::ExprText>,
) -> Option<crate::syntax::tree::ExprText> {
    let mut iter = guards.into_iter();
    let first = iter.next()?;
    Some(iter.fold(first, |acc, g| crate::syntax::tree::ExprText {
        text: format!("({}) && ({})", acc.text, g.text),
        offset: acc.offset,
    }))
}

fn number(value: f64) -> serde_json::Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        serde_json::Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null)
    }
}

/// Milliseconds as a duration of the machine format, in the largest unit
/// that divides them.
pub(super) fn duration(ms: f64) -> Result<String, String> {
    if !(ms.fract() == 0.0 && (0.0..1e15).contains(&ms)) {
        return Err("is not a whole number of milliseconds".into());
    }
    let ms = ms as u64;
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms > 0 && ms.is_multiple_of(size) {
            return Ok(format!("{}{unit}", ms / size));
        }
    }
    Ok(format!("{ms}ms"))
}

fn drop_default_ids(state: &mut StateDoc, root_id: &str, path: &str) {
    if state
        .id
        .as_ref()
        .is_some_and(|id| !path.is_empty() && id.text == format!("{root_id}.{path}"))
    {
        state.id = None;
    }
    for child in &mut state.states {
        let child_path = join(path, &child.key.text);
        drop_default_ids(child, root_id, &child_path);
    }
}

/// The names of all explicit ids, by id → path, and path → id.
fn collect_ids(
    state: &StateDoc,
    path: &str,
    ids: &mut HashMap<String, String>,
    by_path: &mut HashMap<String, String>,
) {
    if let Some(id) = &state.id {
        ids.insert(id.text.clone(), path.to_string());
        by_path.insert(path.to_string(), id.text.clone());
    }
    for child in &state.states {
        let child_path = join(path, &child.key.text);
        collect_ids(child, &child_path, ids, by_path);
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The path of the state XState's `#reference` names: the state with the
/// id of its first segment (the machine's own id for the root), then the
/// rest as a path of children; or a whole id with dots.
fn resolve_xstate_id(
    root: &StateDoc,
    reference: &str,
    root_id: &str,
    ids: &HashMap<String, String>,
) -> Option<String> {
    if let Some(path) = ids.get(reference) {
        return Some(path.clone());
    }
    let mut segments = reference.split('.');
    let first = segments.next()?;
    let start = if first == root_id {
        String::new()
    } else {
        ids.get(first)?.clone()
    };
    let mut path = start;
    for segment in segments {
        path = join(&path, segment);
    }
    find_path(root, &path)
        .then_some(path)
        .filter(|p| !p.is_empty())
}

fn find_path(root: &StateDoc, path: &str) -> bool {
    let mut state = root;
    for key in path.split('.').filter(|k| !k.is_empty()) {
        match state.states.iter().find(|s| s.key.text == key) {
            Some(child) => state = child,
            None => return false,
        }
    }
    true
}

fn assign_ids(state: &mut StateDoc, path: &str, assigned: &HashMap<String, String>) {
    if state.id.is_none()
        && !path.is_empty()
        && let Some(id) = assigned.get(path)
    {
        state.id = Some(Name {
            text: id.clone(),
            span: state.key.span,
        });
    }
    for child in &mut state.states {
        let child_path = join(path, &child.key.text);
        assign_ids(child, &child_path, assigned);
    }
}

/// Each state's name in `done.state.NAME`: its id, else its path.
fn collect_done_names(state: &StateDoc, path: &str, out: &mut HashMap<String, String>) {
    out.insert(
        path.to_string(),
        state
            .id
            .as_ref()
            .map(|i| i.text.clone())
            .unwrap_or_else(|| path.to_string()),
    );
    for child in &state.states {
        collect_done_names(child, &join(path, &child.key.text), out);
    }
}

/// The path a target names from a transition of `source`, where it can be
/// told: `.child`, `#id`, `sibling.child`.
fn target_path(text: &str, source: &str, ids: &HashMap<String, String>) -> Option<String> {
    if let Some(id) = text.strip_prefix('#') {
        return ids.get(id).cloned();
    }
    if let Some(child) = text.strip_prefix('.') {
        return Some(join(source, child));
    }
    let parent = source.rsplit_once('.').map_or("", |(p, _)| p);
    Some(join(parent, text))
}

enum NameKind {
    Target,
    Event,
    /// The `#id` of `stateIn('#id')` (or v4's `in`).
    StateIn,
}

/// The ids of `in_state("#ID")` calls in a guard's text.
fn state_in_ids(text: &str) -> Vec<&str> {
    const OPEN: &str = "in_state(\"#";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        rest = &rest[at + OPEN.len()..];
        if let Some(end) = rest.find("\")") {
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
    out
}

fn visit_names(state: &StateDoc, f: &mut impl FnMut(&str, NameKind)) {
    for t in state.transitions() {
        for target in &t.targets {
            f(&target.text, NameKind::Target);
        }
        if let Some(event) = &t.event {
            f(&event.text, NameKind::Event);
        }
        if let Some(guard) = &t.guard {
            for id in state_in_ids(&guard.text) {
                f(id, NameKind::StateIn);
            }
        }
    }
    for target in &state.target {
        f(&target.text, NameKind::Target);
    }
    for child in &state.states {
        visit_names(child, f);
    }
}

fn rewrite(state: &mut StateDoc, path: &str, f: &mut impl FnMut(&mut TransitionDoc, &str)) {
    for t in state
        .on
        .iter_mut()
        .chain(&mut state.always)
        .chain(&mut state.after)
        .chain(
            state
                .invoke
                .iter_mut()
                .flat_map(|i| i.on_done.iter_mut().chain(&mut i.on_error)),
        )
    {
        f(t, path);
    }
    for child in &mut state.states {
        let child_path = join(path, &child.key.text);
        rewrite(child, &child_path, f);
    }
}

/// Every expression of the tree, with the field it assigns when it is the
/// right-hand side of an `assign`.
fn visit_exprs(
    state: &StateDoc,
    f: &mut impl FnMut(&crate::syntax::tree::ExprText, Option<&Name>),
) {
    use crate::syntax::tree::ActionDoc;
    let actions =
        |list: &[ActionDoc], f: &mut dyn FnMut(&crate::syntax::tree::ExprText, Option<&Name>)| {
            for action in list {
                match action {
                    ActionDoc::Assign { fields, .. } => {
                        for (name, e) in fields {
                            f(e, Some(name));
                            f(e, None);
                        }
                    }
                    ActionDoc::Raise { data, .. }
                    | ActionDoc::Send { data, .. }
                    | ActionDoc::Effect { args: data, .. } => {
                        for (_, e) in data {
                            f(e, None);
                        }
                    }
                    ActionDoc::Log { expr, .. } => f(expr, None),
                    ActionDoc::Cancel { .. } | ActionDoc::Named { .. } => {}
                }
            }
        };
    actions(&state.entry, f);
    actions(&state.exit, f);
    for invoke in &state.invoke {
        for (_, e) in &invoke.input {
            f(e, None);
        }
    }
    for t in state.transitions() {
        if let Some(g) = &t.guard {
            f(g, None);
        }
        actions(&t.actions, f);
    }
    for child in &state.states {
        visit_exprs(child, f);
    }
}

/// The fields `context.NAME` names in CEL text, outside string literals.
fn context_fields(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b'.');
        if boundary && bytes[i..].starts_with(b"context.") {
            let start = i + "context.".len();
            let end = text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(text.len(), |e| start + e);
            if end > start && !out.iter().any(|f: &String| f == &text[start..end]) {
                out.push(text[start..end].to_string());
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

/// Gives each transition the suppressions of a comment written above it,
/// covering `within` (the text of the transition, or of the key it is
/// written under).
fn allow_transitions(transitions: &mut [TransitionDoc], allow: Vec<(Name, String)>, within: Span) {
    for transition in transitions {
        transition.allow.extend(
            allow
                .iter()
                .map(|(lint, reason)| (lint.clone(), reason.clone(), within)),
        );
    }
}

/// Whether a machine has both `assign`s and other actions, whose order v4
/// without `predictableActionArguments` changes.
fn mixes_assigns(root: &StateDoc) -> bool {
    fn kinds(state: &StateDoc, assigns: &mut bool, others: &mut bool) {
        let actions = state
            .entry
            .iter()
            .chain(&state.exit)
            .chain(state.transitions().flat_map(|t| &t.actions));
        for action in actions {
            match action {
                crate::syntax::tree::ActionDoc::Assign { .. } => *assigns = true,
                _ => *others = true,
            }
        }
        for child in &state.states {
            kinds(child, assigns, others);
        }
    }
    let (mut assigns, mut others) = (false, false);
    kinds(root, &mut assigns, &mut others);
    assigns && others
}

/// Whether the expression is a function (arrow or not).
fn is_function(e: Option<&Expression>) -> bool {
    matches!(
        e,
        Some(Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_))
    )
}
