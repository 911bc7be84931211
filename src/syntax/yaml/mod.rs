//! The YAML front-end: machine files (`*.yaml`, `*.yml`) → `MachineDoc`, and
//! the canonical printer back.
//!
//! Parsing checks only what YAML decides: syntax, the shape of each value and
//! the names of keys. Names, durations, kinds and expressions are kept as
//! written, with their places; the lowering resolves and checks them, so that
//! YAML and DSL files get the same checks.

pub(crate) mod comments;
pub(crate) mod edit;
mod format;
mod node;
mod plain;

pub use format::{format, format_with};

use crate::diagnostic::{Diagnostic, LoadError};
use crate::model::Name;
use crate::span::{SourceFile, Span};
use crate::syntax::tree::{
    ActionDoc, ContextDoc, DedupDoc, EffectDoc, EventDoc, ExprText, HistoryDoc, InvokeDoc,
    LimitsDoc, MachineDoc, MigrationDoc, SourceDoc, StateDoc, TransitionDoc,
};

use node::{Kind, Node, ScalarValue};

/// Keys of the machine itself, before the root state's keys.
const MACHINE_KEYS: [&str; 13] = [
    "machine",
    "version",
    "description",
    "semantics",
    "context",
    "sources",
    "dedup",
    "history",
    "limits",
    "events",
    "effects",
    "guards",
    "migrations",
];
/// Keys a state may have at the top level, as the root state.
/// (`description` is the machine's, read with the machine keys.)
const ROOT_STATE_KEYS: [&str; 12] = [
    "type", "initial", "id", "entry", "exit", "on", "always", "after", "invoke", "states", "tags",
    "allow",
];
/// Keys of a state below the root: the root's, and the history state's.
const STATE_KEYS: [&str; 15] = [
    "type",
    "initial",
    "history",
    "target",
    "id",
    "entry",
    "exit",
    "on",
    "always",
    "after",
    "invoke",
    "states",
    "description",
    "tags",
    "allow",
];
const INVOKE_KEYS: [&str; 5] = ["src", "id", "input", "onDone", "onError"];
const TRANSITION_KEYS: [&str; 5] = ["target", "guard", "actions", "reenter", "description"];
const ACTION_KINDS: [&str; 6] = ["assign", "raise", "send", "cancel", "effect", "log"];
const ACTION_KEYS: [&str; 10] = [
    "assign", "raise", "send", "data", "delay", "id", "cancel", "effect", "with", "log",
];
const SOURCE_KEYS: [&str; 2] = ["retry_horizon", "description"];
const DEDUP_KEYS: [&str; 1] = ["retention"];
const HISTORY_KEYS: [&str; 1] = ["keep"];
const LIMITS_KEYS: [&str; 1] = ["microsteps"];
const MIGRATION_KEYS: [&str; 6] = ["from", "states", "context", "timers", "history", "outbox"];
const EVENT_KEYS: [&str; 4] = ["id", "source", "payload", "description"];
const EFFECT_KEYS: [&str; 3] = ["idempotency", "verify", "description"];

/// Reads a machine file written in YAML into the document tree.
///
/// Every problem found is reported, each at its place; a YAML syntax error
/// stops the reading, since nothing after it can be trusted.
pub fn parse(text: &str) -> Result<MachineDoc, Vec<Diagnostic>> {
    parse_file(&SourceFile::new("", text))
}

/// `parse` of a file's text, whose node tree the file keeps
/// (`SourceFile::derived`) for the fix editor.
pub fn parse_file(file: &SourceFile) -> Result<MachineDoc, Vec<Diagnostic>> {
    let root = node_tree(file);
    let root = root.as_ref().as_ref().map_err(Clone::clone)?;
    let mut reader = Reader::default();
    let doc = reader.machine(root);
    if reader.errors.is_empty() {
        Ok(doc)
    } else {
        Err(reader.errors)
    }
}

/// The file's YAML node tree, parsed once per file.
fn node_tree(file: &SourceFile) -> std::sync::Arc<Result<Node, Vec<Diagnostic>>> {
    file.derived(node::read)
}

#[derive(Default)]
struct Reader {
    errors: Vec<Diagnostic>,
}

impl Reader {
    fn invalid(&mut self, span: Span, message: String) {
        self.errors
            .push(LoadError::InvalidValue { message }.at(span, []));
    }

    fn unknown_key(&mut self, key: &Node, text: &str, allowed: &[&str]) {
        let mut diagnostic = LoadError::UnknownKey {
            key: text.to_string(),
        }
        .at(key.span, allowed.iter().copied());
        // Old XState spellings get their new name even where the edit
        // distance is too large for "did you mean".
        let renamed = match text {
            "cond" => Some("`cond` is XState v4's name for `guard`"),
            "internal" => Some("write `reenter: true` for an external transition"),
            "context" | "events" | "effects" | "sources" | "dedup" | "limits" | "machine"
            | "version" | "guards" | "semantics" | "migrations"
                if !allowed.contains(&text) =>
            {
                Some("this key belongs at the top level of the file")
            }
            _ => None,
        };
        if let Some(help) = renamed {
            diagnostic.help = Some(help.to_string());
        }
        if diagnostic.help.is_none() {
            diagnostic.help = Some(format!("expected one of {}", list(allowed)));
        }
        self.errors.push(diagnostic);
    }

    /// Where to point at a value: at the key when the value was left empty,
    /// since an empty value has no text of its own.
    fn place(key: &Node, value: &Node) -> Span {
        if value.is_null() && value.span.start == value.span.end {
            key.span
        } else {
            value.span
        }
    }

    /// The entries of a mapping; nothing, when the value was left empty.
    fn map<'n>(&mut self, key: &Node, value: &'n Node, what: &str) -> &'n [(Node, Node)] {
        match &value.kind {
            Kind::Map(entries) => entries,
            _ if value.is_null() => &[],
            _ => {
                self.invalid(
                    Self::place(key, value),
                    format!(
                        "`{}` must be {what}, found {}",
                        key_text(key),
                        value.describe()
                    ),
                );
                &[]
            }
        }
    }

    /// The text of a key, or an error when the key is a list or a mapping.
    fn key_name(&mut self, key: &Node) -> Option<Name> {
        match key.text() {
            Some(text) => Some(Name {
                text: text.to_string(),
                span: key.span,
            }),
            None => {
                self.invalid(
                    key.span,
                    format!("a key must be a name, found {}", key.describe()),
                );
                None
            }
        }
    }

    /// A name given as the value of `key`.
    fn name(&mut self, key: &Node, value: &Node, what: &str) -> Option<Name> {
        match value.text() {
            Some(text) => Some(Name {
                text: text.to_string(),
                span: value.span,
            }),
            None => {
                self.invalid(
                    Self::place(key, value),
                    format!(
                        "`{}` must be {what}, found {}",
                        key_text(key),
                        value.describe()
                    ),
                );
                None
            }
        }
    }

    /// One name, or a list of names.
    fn names(&mut self, key: &Node, value: &Node, what: &str) -> Vec<Name> {
        match &value.kind {
            Kind::Seq(items) => items
                .iter()
                .filter_map(|item| self.name(key, item, what))
                .collect(),
            _ => self.name(key, value, what).into_iter().collect(),
        }
    }

    /// Free text: any scalar, as written.
    fn text(&mut self, key: &Node, value: &Node) -> Option<String> {
        self.name(key, value, "text").map(|name| name.text)
    }

    fn expr(&mut self, key: &Node, value: &Node) -> Option<ExprText> {
        match (&value.kind, value.text()) {
            (Kind::Scalar(scalar), Some(_)) => {
                let (text, offset) = scalar.content();
                Some(ExprText {
                    text: text.to_string(),
                    offset,
                })
            }
            (Kind::Scalar(_), None) => {
                self.invalid(
                    Self::place(key, value),
                    format!("`{}` needs an expression", key_text(key)),
                );
                None
            }
            _ => {
                self.invalid(
                    value.span,
                    format!(
                        "`{}` must be an expression, found {}: quote an expression \
                         that starts with `[` or `{{`",
                        key_text(key),
                        value.describe()
                    ),
                );
                None
            }
        }
    }

    /// `FIELD: EXPR` pairs, in document order.
    fn fields(&mut self, key: &Node, value: &Node) -> Vec<(Name, ExprText)> {
        let entries = self.map(key, value, "a mapping of field → expression");
        entries
            .iter()
            .filter_map(|(k, v)| {
                let name = self.key_name(k)?;
                let expr = self.expr(k, v)?;
                Some((name, expr))
            })
            .collect()
    }

    fn machine(&mut self, root: &Node) -> MachineDoc {
        let mut doc = MachineDoc::default();
        let entries = match &root.kind {
            Kind::Map(entries) => entries,
            _ if root.is_null() => {
                self.invalid(
                    Span::new(0, 0),
                    "the file is empty: a machine file is a YAML mapping that starts with \
                     `machine: NAME`"
                        .to_string(),
                );
                return doc;
            }
            _ => {
                self.invalid(
                    Span::new(0, 0),
                    format!(
                        "a machine file is a YAML mapping (`machine: NAME`, `states: ...`), \
                         but this document is {}",
                        root.describe()
                    ),
                );
                return doc;
            }
        };
        // The tree is copied without its repeated keys only where it has
        // some: most files have none, and a large file's tree is large.
        let deduplicated;
        let entries = if has_duplicates(entries) {
            deduplicated = self.without_duplicates(entries);
            &deduplicated[..]
        } else {
            entries
        };
        let mut state = StateDoc::default();
        for (key, value) in entries {
            let Some(text) = key.text() else {
                self.key_name(key);
                continue;
            };
            match text {
                "machine" => doc.name = self.name(key, value, "the machine's name"),
                "version" => doc.version = self.version(key, value),
                "description" => doc.description = self.text(key, value),
                "semantics" => {
                    doc.semantics = self.name(key, value, "`scxml` or `xstate`");
                }
                "context" => doc.context = self.context(key, value),
                "sources" => doc.sources = self.sources(key, value),
                "dedup" => doc.dedup = self.dedup(key, value),
                "history" => doc.history = self.history(key, value),
                "limits" => doc.limits = self.limits(key, value),
                "events" => doc.events = self.events(key, value),
                "effects" => doc.effects = self.effects(key, value),
                "migrations" => doc.migrations = self.migrations(key, value),
                "guards" if value.is_null() => {}
                "guards" => doc.guards = self.names(key, value, "a list of host guard names"),
                _ => {
                    if !(ROOT_STATE_KEYS.contains(&text) && self.state_key(&mut state, key, value))
                    {
                        let allowed: Vec<&str> = MACHINE_KEYS
                            .iter()
                            .chain(&ROOT_STATE_KEYS)
                            .copied()
                            .collect();
                        self.unknown_key(key, text, &allowed);
                    }
                }
            }
        }
        doc.root = state;
        doc
    }

    /// Drops every repeated key of every mapping in the tree, reporting each
    /// at the repetition with the first place as a label.
    fn without_duplicates(&mut self, entries: &[(Node, Node)]) -> Vec<(Node, Node)> {
        let mut kept: Vec<(Node, Node)> = Vec::with_capacity(entries.len());
        // An index, not a scan of the keys kept so far: a mapping of many
        // keys (the states of a large machine) would take quadratic time.
        let mut index: std::collections::HashMap<String, Span> = std::collections::HashMap::new();
        for (key, value) in entries {
            let value = self.dedup_node(value);
            let key = self.dedup_node(key);
            let first = key
                .text()
                .and_then(|text| match index.entry(text.to_string()) {
                    std::collections::hash_map::Entry::Occupied(first) => Some(*first.get()),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(key.span);
                        None
                    }
                });
            match first {
                Some(first) => self.errors.push(
                    LoadError::Duplicate {
                        key: key_text(&key).to_string(),
                        first,
                    }
                    .at(key.span, []),
                ),
                None => kept.push((key, value)),
            }
        }
        kept
    }

    fn dedup_node(&mut self, node: &Node) -> Node {
        let kind = match &node.kind {
            Kind::Map(entries) => Kind::Map(self.without_duplicates(entries)),
            Kind::Seq(items) => Kind::Seq(items.iter().map(|i| self.dedup_node(i)).collect()),
            scalar => scalar.clone(),
        };
        Node {
            kind,
            span: node.span,
        }
    }

    fn version(&mut self, key: &Node, value: &Node) -> Option<(u64, Span)> {
        self.whole_number(key, value, "`version`", "`1`")
    }

    /// A whole number (`what` must be one, such as `example`).
    fn whole_number(
        &mut self,
        key: &Node,
        value: &Node,
        what: &str,
        example: &str,
    ) -> Option<(u64, Span)> {
        let number = match value.scalar().map(|s| s.value) {
            Some(ScalarValue::UInt(v)) => Some(v),
            Some(ScalarValue::Int(v)) => u64::try_from(v).ok(),
            _ => None,
        };
        if number.is_none() {
            self.invalid(
                Self::place(key, value),
                format!(
                    "{what} must be a whole number such as {example}, found {}",
                    value.describe()
                ),
            );
        }
        number.map(|v| (v, value.span))
    }

    fn limits(&mut self, key: &Node, value: &Node) -> Option<LimitsDoc> {
        let mut limits = LimitsDoc {
            microsteps: None,
            span: key.span,
        };
        for (k, v) in self.map(key, value, "a mapping such as `{ microsteps: 1000 }`") {
            match key_text(k) {
                "microsteps" => {
                    limits.microsteps = self.whole_number(k, v, "`microsteps`", "`1000`")
                }
                other => self.unknown_key(k, other, &LIMITS_KEYS),
            }
        }
        Some(limits)
    }

    /// `migrations: [{ from, states, context, timers, history, outbox }]`.
    fn migrations(&mut self, key: &Node, value: &Node) -> Vec<MigrationDoc> {
        let items: &[Node] = match &value.kind {
            Kind::Seq(items) => items,
            _ if value.is_null() => &[],
            _ => {
                self.invalid(
                    Self::place(key, value),
                    format!(
                        "`migrations` must be a list such as `[{{ from: 1, states: {{ old: new }} }}]`, found {}",
                        value.describe()
                    ),
                );
                &[]
            }
        };
        let mut out = Vec::new();
        for item in items {
            let mut migration = MigrationDoc {
                from: None,
                states: Vec::new(),
                context: Vec::new(),
                timers: None,
                history: None,
                outbox: None,
                span: item.span,
            };
            for (k, v) in self.map(key, item, "a list of mappings such as `{ from: 1 }`") {
                match key_text(k) {
                    "from" => migration.from = self.whole_number(k, v, "`from`", "`1`"),
                    "states" => {
                        for (old, new) in self.map(k, v, "a mapping of old state path → new state")
                        {
                            if let (Some(old), Some(new)) =
                                (self.key_name(old), self.name(old, new, "a state path"))
                            {
                                migration.states.push((old, new));
                            }
                        }
                    }
                    "context" => migration.context = self.fields(k, v),
                    "timers" => migration.timers = self.name(k, v, "`keep` or `drop`"),
                    "history" => migration.history = self.name(k, v, "`keep` or `drop`"),
                    "outbox" => migration.outbox = self.name(k, v, "`keep` or `drop`"),
                    other => self.unknown_key(k, other, &MIGRATION_KEYS),
                }
            }
            out.push(migration);
        }
        out
    }

    fn context(&mut self, key: &Node, value: &Node) -> Vec<ContextDoc> {
        let entries = self.map(key, value, "a mapping of field → initial value");
        entries
            .iter()
            .filter_map(|(k, v)| {
                let name = self.key_name(k)?;
                let value = self.json(v)?;
                Some(ContextDoc { name, value })
            })
            .collect()
    }

    /// A YAML value as JSON, keeping the order of mapping keys.
    fn json(&mut self, node: &Node) -> Option<serde_json::Value> {
        use serde_json::Value;
        Some(match &node.kind {
            Kind::Scalar(scalar) => match scalar.value {
                ScalarValue::Null => Value::Null,
                ScalarValue::Bool(b) => Value::Bool(b),
                ScalarValue::Int(i) => Value::from(i),
                ScalarValue::UInt(u) => Value::from(u),
                ScalarValue::Float(f) => match serde_json::Number::from_f64(f) {
                    Some(n) => Value::Number(n),
                    None => {
                        self.invalid(
                            node.span,
                            format!("`{}` is not a finite number", scalar.text),
                        );
                        return None;
                    }
                },
                ScalarValue::Str => Value::String(scalar.text.to_string()),
            },
            Kind::Seq(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.json(item)?);
                }
                Value::Array(values)
            }
            Kind::Map(entries) => {
                let mut object = serde_json::Map::new();
                for (k, v) in entries {
                    let name = self.key_name(k)?;
                    object.insert(name.text, self.json(v)?);
                }
                Value::Object(object)
            }
        })
    }

    /// A mapping of NAME → a mapping of fields (`sources`, `events`,
    /// `effects`): one `T` per entry whose key is a name, made by `new` and
    /// filled by `field` for each of its fields.
    fn declarations<T>(
        &mut self,
        (key, value): (&Node, &Node),
        (what, entry_what): (&str, &str),
        new: impl Fn(Name) -> T,
        mut field: impl FnMut(&mut Self, &mut T, &Node, &Node),
    ) -> Vec<T> {
        let mut out = Vec::new();
        for (k, v) in self.map(key, value, what) {
            let Some(name) = self.key_name(k) else {
                continue;
            };
            let mut item = new(name);
            for (fk, fv) in self.map(k, v, entry_what) {
                field(self, &mut item, fk, fv);
            }
            out.push(item);
        }
        out
    }

    fn sources(&mut self, key: &Node, value: &Node) -> Vec<SourceDoc> {
        self.declarations(
            (key, value),
            (
                "a mapping of sender name → `{ retry_horizon }`",
                "a mapping such as `{ retry_horizon: 72h }`",
            ),
            |name| SourceDoc {
                name,
                retry_horizon: None,
                description: None,
            },
            |this, source, fk, fv| match key_text(fk) {
                "retry_horizon" => {
                    source.retry_horizon = this.name(fk, fv, "a duration such as `72h`")
                }
                "description" => source.description = this.text(fk, fv),
                other => this.unknown_key(fk, other, &SOURCE_KEYS),
            },
        )
    }

    fn dedup(&mut self, key: &Node, value: &Node) -> Option<DedupDoc> {
        let mut dedup = DedupDoc {
            retention: None,
            span: key.span,
        };
        for (k, v) in self.map(key, value, "a mapping such as `{ retention: 7d }`") {
            match key_text(k) {
                "retention" => dedup.retention = self.name(k, v, "a duration such as `7d`"),
                other => self.unknown_key(k, other, &DEDUP_KEYS),
            }
        }
        Some(dedup)
    }

    fn history(&mut self, key: &Node, value: &Node) -> Option<HistoryDoc> {
        let mut history = HistoryDoc {
            keep: None,
            span: key.span,
        };
        for (k, v) in self.map(key, value, "a mapping such as `{ keep: 30d }`") {
            match key_text(k) {
                "keep" => history.keep = self.name(k, v, "a duration such as `30d`"),
                other => self.unknown_key(k, other, &HISTORY_KEYS),
            }
        }
        Some(history)
    }

    fn events(&mut self, key: &Node, value: &Node) -> Vec<EventDoc> {
        self.declarations(
            (key, value),
            (
                "a mapping of event name → `{ id, source, payload }`",
                "a mapping such as `{ id: pagoId }`",
            ),
            |name| EventDoc {
                name,
                id_field: None,
                source: None,
                payload: None,
                description: None,
            },
            |this, event, fk, fv| match key_text(fk) {
                "id" => event.id_field = this.name(fk, fv, "a payload field name"),
                "source" => event.source = this.name(fk, fv, "a source name"),
                "payload" => {
                    let fields = this.map(fk, fv, "a mapping of field → type");
                    let payload = fields
                        .iter()
                        .filter_map(|(pk, pv)| {
                            let field = this.key_name(pk)?;
                            let ty = this.name(pk, pv, "a type such as `string`")?;
                            Some((field, ty))
                        })
                        .collect();
                    event.payload = Some(payload);
                }
                "description" => event.description = this.text(fk, fv),
                other => this.unknown_key(fk, other, &EVENT_KEYS),
            },
        )
    }

    fn effects(&mut self, key: &Node, value: &Node) -> Vec<EffectDoc> {
        self.declarations(
            (key, value),
            (
                "a mapping of effect name → `{ idempotency }`",
                "a mapping such as `{ idempotency: key }`",
            ),
            |name| EffectDoc {
                name,
                idempotency: None,
                verify: None,
                description: None,
            },
            |this, effect, fk, fv| match key_text(fk) {
                "idempotency" => {
                    effect.idempotency = this.name(fk, fv, "`key`, `natural` or `none`")
                }
                "verify" => effect.verify = this.name(fk, fv, "a state"),
                "description" => effect.description = this.text(fk, fv),
                other => this.unknown_key(fk, other, &EFFECT_KEYS),
            },
        )
    }

    fn state(&mut self, key: &Node, value: &Node) -> Option<StateDoc> {
        let name = self.key_name(key)?;
        let mut state = StateDoc {
            key: name,
            ..StateDoc::default()
        };
        let entries: &[(Node, Node)] = match &value.kind {
            Kind::Map(entries) => entries,
            _ if value.is_null() => &[],
            _ => {
                self.invalid(
                    Self::place(key, value),
                    format!(
                        "state `{}` must be a mapping of its keys (such as `{{ type: final }}` \
                         or `{{}}`), found {}",
                        key_text(key),
                        value.describe()
                    ),
                );
                return Some(state);
            }
        };
        for (k, v) in entries {
            let Some(text) = k.text() else {
                self.key_name(k);
                continue;
            };
            if !self.state_key(&mut state, k, v) {
                self.unknown_key(k, text, &STATE_KEYS);
            }
        }
        Some(state)
    }

    /// `on` and `after`: a mapping of an event or a delay → transitions, each
    /// starting from the `template` its key makes.
    fn keyed_transitions(
        &mut self,
        (key, value): (&Node, &Node),
        what: &str,
        template: impl Fn(Name) -> TransitionDoc,
        out: &mut Vec<TransitionDoc>,
    ) {
        for (k, v) in self.map(key, value, what) {
            let Some(name) = self.key_name(k) else {
                continue;
            };
            self.transitions(k, v, Some(k), &template(name), out);
        }
    }

    /// Reads one key of a state; false when the key is not a state key.
    fn state_key(&mut self, state: &mut StateDoc, key: &Node, value: &Node) -> bool {
        match key_text(key) {
            "type" => state.kind = self.name(key, value, "a state type such as `final`"),
            "initial" => state.initial = self.names(key, value, "a state or a list of states"),
            "history" => state.history = self.name(key, value, "`shallow` or `deep`"),
            "target" => state.target = self.names(key, value, "a state or a list of states"),
            "id" => state.id = self.name(key, value, "an id"),
            "entry" => state.entry = self.actions(key, value),
            "exit" => state.exit = self.actions(key, value),
            "on" => self.keyed_transitions(
                (key, value),
                "a mapping of event → transitions",
                |event| TransitionDoc {
                    event: Some(event),
                    ..TransitionDoc::default()
                },
                &mut state.on,
            ),
            "always" => {
                let template = TransitionDoc::default();
                if !value.is_null() {
                    self.transitions(key, value, None, &template, &mut state.always);
                }
            }
            "after" => self.keyed_transitions(
                (key, value),
                "a mapping of duration → transitions",
                |delay| TransitionDoc {
                    delay: Some(delay),
                    ..TransitionDoc::default()
                },
                &mut state.after,
            ),
            "invoke" => match &value.kind {
                Kind::Seq(items) => {
                    for item in items {
                        if let Some(invoke) = self.invocation(key, item) {
                            state.invoke.push(invoke);
                        }
                    }
                }
                _ if value.is_null() => {}
                _ => state.invoke.extend(self.invocation(key, value)),
            },
            "states" => {
                let entries = self.map(key, value, "a mapping of state name → state");
                for (k, v) in entries {
                    if let Some(child) = self.state(k, v) {
                        state.states.push(child);
                    }
                }
            }
            "description" => state.description = self.text(key, value),
            "tags" => {
                state.tags = match &value.kind {
                    Kind::Seq(items) => items.iter().filter_map(|i| self.text(key, i)).collect(),
                    _ if value.is_null() => Vec::new(),
                    _ => {
                        self.invalid(
                            Self::place(key, value),
                            format!(
                                "`tags` must be a list of strings, found {}",
                                value.describe()
                            ),
                        );
                        Vec::new()
                    }
                }
            }
            "allow" => {
                let entries = self.map(key, value, "a mapping of lint name → reason");
                for (k, v) in entries {
                    let Some(lint) = self.key_name(k) else {
                        continue;
                    };
                    match v.text() {
                        Some(reason) if !reason.trim().is_empty() => {
                            state.allow.push((lint, reason.to_string()))
                        }
                        Some(_) | None if v.scalar().is_some() => self.invalid(
                            Self::place(k, v),
                            format!(
                                "allowing `{}` needs a reason: say why the lint does not \
                                 apply here",
                                lint.text
                            ),
                        ),
                        _ => self.invalid(
                            v.span,
                            format!(
                                "the reason for allowing `{}` must be a string, found {}",
                                lint.text,
                                v.describe()
                            ),
                        ),
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// One invocation: `{ src, id, input, onDone, onError }`.
    fn invocation(&mut self, key: &Node, value: &Node) -> Option<InvokeDoc> {
        let Kind::Map(entries) = &value.kind else {
            self.invalid(
                Self::place(key, value),
                format!(
                    "an invocation must be a mapping (`{{ src, id, input, onDone, onError }}`), \
                     found {}",
                    value.describe()
                ),
            );
            return None;
        };
        let mut invoke = InvokeDoc {
            span: value.span,
            ..InvokeDoc::default()
        };
        let template = TransitionDoc::default();
        for (k, v) in entries {
            match key_text(k) {
                "src" => invoke.src = self.name(k, v, "the name of an effect"),
                "id" => invoke.id = self.name(k, v, "an id"),
                "input" => invoke.input = self.fields(k, v),
                "onDone" => self.transitions(k, v, Some(k), &template, &mut invoke.on_done),
                "onError" => self.transitions(k, v, Some(k), &template, &mut invoke.on_error),
                other => self.unknown_key(k, other, &INVOKE_KEYS),
            }
        }
        Some(invoke)
    }

    /// The transitions under one `on` or `after` key, or under `always`: a
    /// target, a transition mapping, or a list of those.
    fn transitions(
        &mut self,
        key: &Node,
        value: &Node,
        trigger: Option<&Node>,
        template: &TransitionDoc,
        out: &mut Vec<TransitionDoc>,
    ) {
        // A transition written right under its key is placed from the key on;
        // one in a list, at its item.
        let whole = |value: &Node| match trigger {
            Some(trigger) => trigger.span.to(value.span),
            None => value.span,
        };
        match &value.kind {
            Kind::Seq(items) => {
                for item in items {
                    if let Some(t) = self.transition(key, item, item.span, template) {
                        out.push(t);
                    }
                }
            }
            _ => {
                if let Some(t) = self.transition(key, value, whole(value), template) {
                    out.push(t);
                }
            }
        }
    }

    fn transition(
        &mut self,
        key: &Node,
        value: &Node,
        span: Span,
        template: &TransitionDoc,
    ) -> Option<TransitionDoc> {
        let mut transition = TransitionDoc {
            span,
            ..template.clone()
        };
        match &value.kind {
            Kind::Map(entries) => {
                for (k, v) in entries {
                    match key_text(k) {
                        "target" => {
                            transition.targets = self.names(k, v, "a state or a list of states")
                        }
                        "guard" => transition.guard = self.expr(k, v),
                        "actions" => transition.actions = self.actions(k, v),
                        "reenter" => match v.scalar().map(|s| s.value) {
                            Some(ScalarValue::Bool(b)) => transition.reenter = b,
                            _ => self.invalid(
                                Self::place(k, v),
                                format!(
                                    "`reenter` must be `true` or `false`, found {}",
                                    v.describe()
                                ),
                            ),
                        },
                        "description" => transition.description = self.text(k, v),
                        other => self.unknown_key(k, other, &TRANSITION_KEYS),
                    }
                }
                Some(transition)
            }
            _ => match value.text() {
                Some(target) => {
                    transition.targets = vec![Name {
                        text: target.to_string(),
                        span: value.span,
                    }];
                    Some(transition)
                }
                None => {
                    self.invalid(
                        Self::place(key, value),
                        format!(
                            "`{}` must be a target, a transition mapping (`{{ target, guard, \
                             actions }}`) or a list of them, found {}",
                            key_text(key),
                            value.describe()
                        ),
                    );
                    None
                }
            },
        }
    }

    /// `entry`, `exit` or `actions`: one action or a list of them.
    fn actions(&mut self, key: &Node, value: &Node) -> Vec<ActionDoc> {
        match &value.kind {
            Kind::Seq(items) => items.iter().filter_map(|i| self.action(key, i)).collect(),
            _ if value.is_null() => Vec::new(),
            _ => self.action(key, value).into_iter().collect(),
        }
    }

    fn action(&mut self, key: &Node, value: &Node) -> Option<ActionDoc> {
        let entries = match &value.kind {
            Kind::Map(entries) => entries,
            Kind::Scalar(scalar) if matches!(scalar.value, ScalarValue::Str) => {
                return Some(ActionDoc::Named {
                    name: Name {
                        text: scalar.text.to_string(),
                        span: value.span,
                    },
                });
            }
            _ => {
                self.invalid(
                    Self::place(key, value),
                    format!(
                        "an action in `{}` must be a name or a mapping with one of {}, found {}",
                        key_text(key),
                        list(&ACTION_KINDS),
                        value.describe()
                    ),
                );
                return None;
            }
        };
        let mut kind: Option<(&Node, &Node)> = None;
        let mut data: Option<(&Node, &Node)> = None;
        let mut with: Option<(&Node, &Node)> = None;
        let mut delay: Option<(&Node, &Node)> = None;
        let mut id: Option<(&Node, &Node)> = None;
        let mut ok = true;
        for (k, v) in entries {
            let text = key_text(k);
            match text {
                "assign" | "raise" | "send" | "cancel" | "effect" | "log" => match kind {
                    Some((first, _)) => {
                        self.invalid(
                            k.span,
                            format!(
                                "an action does one thing: `{}` and `{text}` must be two items \
                                 of the action list",
                                key_text(first)
                            ),
                        );
                        ok = false;
                    }
                    None => kind = Some((k, v)),
                },
                "data" => data = Some((k, v)),
                "with" => with = Some((k, v)),
                "delay" => delay = Some((k, v)),
                "id" => id = Some((k, v)),
                _ => {
                    self.unknown_key(k, text, &ACTION_KEYS);
                    ok = false;
                }
            }
        }
        let Some((kind_key, kind_value)) = kind else {
            // An unknown key already explains a mapping that names no action.
            if ok {
                self.invalid(
                    value.span,
                    format!("an action needs one of {}", list(&ACTION_KINDS)),
                );
            }
            return None;
        };
        let kind_text = key_text(kind_key);
        if let Some((k, _)) = data.filter(|_| kind_text != "raise" && kind_text != "send") {
            self.invalid(
                k.span,
                "`data` belongs to a `raise` or `send` action".to_string(),
            );
            ok = false;
        }
        for (what, entry) in [("delay", delay), ("id", id)] {
            if let Some((k, _)) = entry.filter(|_| kind_text != "send") {
                self.invalid(k.span, format!("`{what}` belongs to a `send` action"));
                ok = false;
            }
        }
        if let Some((k, _)) = with.filter(|_| kind_text != "effect") {
            self.invalid(k.span, "`with` belongs to an `effect` action".to_string());
            ok = false;
        }
        let span = value.span;
        let action = match kind_text {
            "assign" => ActionDoc::Assign {
                fields: self.fields(kind_key, kind_value),
                span,
            },
            "raise" => ActionDoc::Raise {
                event: self.name(kind_key, kind_value, "an event name")?,
                data: data.map(|(k, v)| self.fields(k, v)).unwrap_or_default(),
                span,
            },
            "send" => ActionDoc::Send {
                event: self.name(kind_key, kind_value, "an event name")?,
                data: data.map(|(k, v)| self.fields(k, v)).unwrap_or_default(),
                delay: match delay {
                    Some((k, v)) => Some(self.name(k, v, "a duration")?),
                    None => None,
                },
                id: match id {
                    Some((k, v)) => Some(self.name(k, v, "a send id")?),
                    None => None,
                },
                span,
            },
            "cancel" => ActionDoc::Cancel {
                id: self.name(kind_key, kind_value, "a send id")?,
                span,
            },
            "effect" => ActionDoc::Effect {
                name: self.name(kind_key, kind_value, "an effect name")?,
                args: with.map(|(k, v)| self.fields(k, v)).unwrap_or_default(),
                span,
            },
            _ => ActionDoc::Log {
                expr: self.expr(kind_key, kind_value)?,
                span,
            },
        };
        ok.then_some(action)
    }
}

/// A key's text for messages and matching; a list or mapping key matches nothing.
/// Whether the mapping, or one anywhere in its keys and values, repeats a
/// key.
fn has_duplicates(entries: &[(Node, Node)]) -> bool {
    fn within(node: &Node) -> bool {
        match &node.kind {
            Kind::Map(entries) => has_duplicates(entries),
            Kind::Seq(items) => items.iter().any(within),
            Kind::Scalar(_) => false,
        }
    }
    repeats_a_key(entries) || entries.iter().any(|(k, v)| within(k) || within(v))
}

/// Whether the mapping itself (not its values) repeats a key.
fn repeats_a_key(entries: &[(Node, Node)]) -> bool {
    // A few keys are compared with each other; the states of a large
    // machine go through a set.
    const SCAN: usize = 8;
    let mut keys = entries.iter().filter_map(|(k, _)| k.text());
    if entries.len() <= SCAN {
        let keys: Vec<&str> = keys.collect();
        return keys.iter().enumerate().any(|(i, k)| keys[..i].contains(k));
    }
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    keys.any(|k| !seen.insert(k))
}

fn key_text(key: &Node) -> &str {
    key.text().unwrap_or("")
}

/// "`a`, `b` or `c`".
fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests;
