//! Model → canonical YAML text.
//!
//! The output is deterministic: keys in the order of the spec's tables,
//! two-space indentation, and the shorthands wherever they say exactly the same
//! (`E: target`, `entry: [name]`, a bare name for an effect without arguments).
//! A mapping or list whose items are all scalars is written in flow style
//! (`{ id: pagoId }`) when it fits on its line. Reading the text back and
//! lowering it gives a model equal to the one printed. The comments of the
//! file the model was read from, if given, are written as `#` lines above the
//! key or item they were attached to, or at the end of its first line; a
//! value with comments inside is written in block style, where they fit.

use indexmap::IndexMap;

use crate::model::{
    Action, Argument, HistoryKind, Invocation, Machine, Semantics, State, StateId, StateKind,
    Target, Transition, TransitionId, Trigger,
};

use crate::expr::Expr;
use crate::syntax::comments::{Anchor, Attached, Comments, Pending};

use super::node::{reads_as_string, reads_as_text};

/// Lines longer than this switch a flow collection to block style.
const WIDTH: usize = 80;

/// A YAML value to write; scalars and keys are already in their written form.
enum Yaml {
    Scalar(String),
    List(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
    /// A section of the file (`states`, `on`, `context`, ...): always in block
    /// style, so that each of its entries starts a line.
    Section(Vec<(String, Yaml)>),
    /// A value with the comments of its node, written around its key or its
    /// list item's dash; never in flow style.
    Commented(Attached, Box<Yaml>),
}

/// `value` with the comments attached to `anchor`, if it has any.
fn commented(p: &Pending, anchor: Anchor, value: Yaml) -> Yaml {
    let attached = p.take(&anchor);
    if attached == Attached::default() {
        value
    } else {
        Yaml::Commented(attached, Box::new(value))
    }
}

/// Entries of a mapping under construction, skipping absent values.
#[derive(Default)]
struct Entries(Vec<(String, Yaml)>);

impl Entries {
    /// Adds a value under one of the format's own keys, which need no quotes.
    fn add(&mut self, key: &str, value: Yaml) {
        self.0.push((key.to_string(), value));
    }

    fn add_opt(&mut self, key: &str, value: Option<Yaml>) {
        if let Some(value) = value {
            self.add(key, value);
        }
    }

    fn into_yaml(self) -> Yaml {
        Yaml::Map(self.0)
    }
}

/// The canonical YAML text of a machine.
pub fn format(machine: &Machine) -> String {
    format_with(machine, &Comments::default())
}

/// The canonical YAML text of a machine, with the comments of the file it
/// was read from (`syntax::comments`).
pub fn format_with(machine: &Machine, comments: &Comments) -> String {
    let pending = Pending::new(comments);
    let p = &pending;
    let mut top = Entries::default();
    top.add("machine", text(&machine.name));
    top.add_opt(
        "version",
        machine.version.map(|v| Yaml::Scalar(v.to_string())),
    );
    top.add_opt("description", machine.description.as_deref().map(text));
    if machine.semantics != Semantics::default() {
        top.add("semantics", Yaml::Scalar(machine.semantics.to_string()));
    }
    if !machine.context.is_empty() {
        let fields = machine
            .context
            .iter()
            .map(|(name, field)| {
                let value = commented(p, Anchor::Context(name.clone()), json(&field.value));
                (scalar(name), value)
            })
            .collect();
        top.add("context", Yaml::Section(fields));
    }
    if !machine.sources.is_empty() {
        let sources = machine.sources.iter().map(|(name, source)| {
            let mut e = Entries::default();
            e.add_opt(
                "retry_horizon",
                source.retry_horizon.map(|d| text(&d.to_string())),
            );
            e.add_opt("description", source.description.as_deref().map(text));
            let value = commented(p, Anchor::Source(name.clone()), e.into_yaml());
            (scalar(name), value)
        });
        top.add("sources", Yaml::Section(sources.collect()));
    }
    if let Some(dedup) = &machine.dedup {
        let mut e = Entries::default();
        e.add("retention", text(&dedup.retention.to_string()));
        top.add("dedup", e.into_yaml());
    }
    if let Some(history) = &machine.history {
        let mut e = Entries::default();
        e.add("keep", text(&history.keep.to_string()));
        top.add("history", e.into_yaml());
    }
    if let Some(limits) = &machine.limits {
        let mut e = Entries::default();
        e.add("microsteps", Yaml::Scalar(limits.microsteps.to_string()));
        top.add("limits", e.into_yaml());
    }
    if !machine.events.is_empty() {
        let events = machine.events.iter().map(|(name, event)| {
            let mut e = Entries::default();
            e.add_opt("id", event.id_field.as_ref().map(|n| text(&n.text)));
            e.add_opt("source", event.source.as_ref().map(|n| text(&n.text)));
            e.add_opt(
                "payload",
                event.payload.as_ref().map(|payload| {
                    Yaml::Map(
                        payload
                            .iter()
                            .map(|(field, p)| (scalar(field), text(p.ty.as_str())))
                            .collect(),
                    )
                }),
            );
            e.add_opt("description", event.description.as_deref().map(text));
            let value = commented(p, Anchor::Event(name.clone()), e.into_yaml());
            (scalar(name), value)
        });
        top.add("events", Yaml::Section(events.collect()));
    }
    if !machine.effects.is_empty() {
        let effects = machine.effects.iter().map(|(name, effect)| {
            let mut e = Entries::default();
            e.add("idempotency", text(effect.idempotency.as_str()));
            e.add_opt("verify", effect.verify.as_ref().map(|t| text(&t.text)));
            e.add_opt("description", effect.description.as_deref().map(text));
            let value = commented(p, Anchor::Effect(name.clone()), e.into_yaml());
            (scalar(name), value)
        });
        top.add("effects", Yaml::Section(effects.collect()));
    }
    if !machine.guards.is_empty() {
        let guards = machine.guards.iter().map(|g| text(&g.text)).collect();
        top.add("guards", Yaml::List(guards));
    }
    if !machine.migrations.is_empty() {
        let migrations = machine.migrations.iter().map(|m| {
            let mut e = Entries::default();
            e.add("from", Yaml::Scalar(m.from.to_string()));
            if !m.states.is_empty() {
                let states = m
                    .states
                    .iter()
                    .map(|(old, t)| (scalar(old), text(&t.target.text)));
                e.add("states", Yaml::Map(states.collect()));
            }
            if !m.context.is_empty() {
                let fields = m
                    .context
                    .iter()
                    .map(|(f, a)| (scalar(f), expression(&a.expr)));
                e.add("context", Yaml::Map(fields.collect()));
            }
            e.add_opt("timers", m.timers.map(|c| text(c.as_str())));
            e.add_opt("history", m.history.map(|c| text(c.as_str())));
            e.add_opt("outbox", m.outbox.map(|c| text(c.as_str())));
            e.into_yaml()
        });
        top.add("migrations", Yaml::List(migrations.collect()));
    }
    state_entries(machine, machine.root(), StateId::ROOT, &mut top, p);
    let top: Vec<(String, Yaml)> = top
        .0
        .into_iter()
        .map(|(key, value)| {
            let value = commented(p, Anchor::Key(key.clone()), value);
            (key, value)
        })
        .collect();

    let mut out = String::new();
    write_block_map(&mut out, &top, 0);
    // What no printed node took (the comments after the last node, and those
    // of keys this syntax has no place for) ends the file.
    for comment in p.rest() {
        out.push('#');
        out.push_str(&comment);
        out.push('\n');
    }
    out
}

/// The keys of a state, in the order of the spec's table.
fn state_entries(machine: &Machine, state: &State, id: StateId, e: &mut Entries, p: &Pending) {
    let has_children = !state.children.is_empty();
    // Compound and atomic follow from having children; the type is written
    // only where it says something else.
    let kind = match state.kind {
        StateKind::Atomic if has_children => Some("atomic"),
        StateKind::Compound if !has_children => Some("compound"),
        StateKind::Atomic | StateKind::Compound => None,
        StateKind::Parallel => Some("parallel"),
        StateKind::Final => Some("final"),
        StateKind::History(_) => Some("history"),
    };
    e.add_opt("type", kind.map(text));
    let is_history = matches!(state.kind, StateKind::History(_));
    if !is_history && !state.initial.is_empty() {
        e.add("initial", targets(&state.initial));
    }
    if let StateKind::History(HistoryKind::Deep) = state.kind {
        e.add("history", text("deep"));
    }
    if is_history && !state.initial.is_empty() {
        e.add("target", targets(&state.initial));
    }
    e.add_opt("id", state.id.as_deref().map(text));
    if !state.entry.is_empty() {
        e.add("entry", actions(&state.entry));
    }
    if !state.exit.is_empty() {
        e.add("exit", actions(&state.exit));
    }
    // The handlers of invocations are printed with their invocation.
    let written_on: Vec<TransitionId> = state
        .on
        .iter()
        .copied()
        .filter(|&t| machine.completion_handler(t).is_none())
        .collect();
    if !written_on.is_empty() {
        let on = grouped(written_on.iter().map(|&t| machine.transition(t)), p);
        e.add("on", on);
    }
    if !state.always.is_empty() {
        let always = state
            .always
            .iter()
            .map(|&t| commented_transition(machine.transition(t), p))
            .collect();
        e.add("always", Yaml::List(always));
    }
    if !state.after.is_empty() {
        let after = grouped(state.after.iter().map(|&t| machine.transition(t)), p);
        e.add("after", after);
    }
    if !state.invoke.is_empty() {
        let mut invocations: Vec<Yaml> = state
            .invoke
            .iter()
            .map(|i| invocation(machine, i, p))
            .collect();
        let value = if invocations.len() == 1 {
            invocations.remove(0)
        } else {
            Yaml::List(invocations)
        };
        e.add("invoke", value);
    }
    if has_children {
        let children = state.children.iter().map(|&child| {
            let child_state = machine.state(child);
            let mut ce = Entries::default();
            state_entries(machine, child_state, child, &mut ce, p);
            let value = commented(p, Anchor::State(child_state.path.clone()), ce.into_yaml());
            (scalar(&child_state.key), value)
        });
        e.add("states", Yaml::Section(children.collect()));
    }
    if id != StateId::ROOT {
        e.add_opt("description", state.description.as_deref().map(text));
    }
    if !state.tags.is_empty() {
        e.add(
            "tags",
            Yaml::List(state.tags.iter().map(|t| text(t)).collect()),
        );
    }
    if !state.allow.is_empty() {
        let allow = state
            .allow
            .iter()
            .map(|(lint, allow)| (scalar(lint), text(&allow.reason)))
            .collect();
        e.add("allow", Yaml::Section(allow));
    }
}

/// Transitions under their `on` or `after` keys, in order of first
/// appearance: one transition alone, several as a list.
///
/// A YAML mapping holds each key once, so transitions of one trigger are
/// written together even where another trigger came between them.
fn grouped<'m>(transitions: impl Iterator<Item = &'m Transition>, p: &Pending) -> Yaml {
    let mut groups: IndexMap<String, Vec<Yaml>> = IndexMap::new();
    for t in transitions {
        let key = match &t.trigger {
            Trigger::Event(descriptor) => descriptor.to_string(),
            Trigger::After(delay) => delay.to_string(),
            Trigger::Always => String::new(),
        };
        groups
            .entry(key)
            .or_default()
            .push(commented_transition(t, p));
    }
    Yaml::Section(
        groups
            .into_iter()
            .map(|(key, mut list)| {
                let value = if list.len() == 1 {
                    list.remove(0)
                } else {
                    Yaml::List(list)
                };
                (scalar(&key), value)
            })
            .collect(),
    )
}

fn invocation(machine: &Machine, invocation: &Invocation, p: &Pending) -> Yaml {
    let mut e = Entries::default();
    e.add("src", text(&invocation.src.text));
    if invocation.id.text != invocation.src.text {
        e.add("id", text(&invocation.id.text));
    }
    if !invocation.input.is_empty() {
        e.add("input", arguments(&invocation.input));
    }
    for (key, handlers) in [
        ("onDone", &invocation.on_done),
        ("onError", &invocation.on_error),
    ] {
        let mut list: Vec<Yaml> = handlers
            .iter()
            .map(|&t| commented_transition(machine.transition(t), p))
            .collect();
        match list.len() {
            0 => {}
            1 => e.add(key, list.remove(0)),
            _ => e.add(key, Yaml::List(list)),
        }
    }
    e.into_yaml()
}

/// A transition with its comments, which are keyed by where it was written.
fn commented_transition(t: &Transition, p: &Pending) -> Yaml {
    commented(p, Anchor::Transition(t.span.start), transition(t))
}

/// A transition: its target alone when it has nothing else.
fn transition(t: &Transition) -> Yaml {
    if t.targets.len() == 1
        && t.guard.is_none()
        && t.actions.is_empty()
        && !t.reenter
        && t.description.is_none()
    {
        return text(&t.targets[0].text);
    }
    let mut e = Entries::default();
    if !t.targets.is_empty() {
        e.add("target", targets(&t.targets));
    }
    e.add_opt("guard", t.guard.as_ref().map(expression));
    if !t.actions.is_empty() {
        e.add("actions", actions(&t.actions));
    }
    if t.reenter {
        e.add("reenter", Yaml::Scalar("true".to_string()));
    }
    e.add_opt("description", t.description.as_deref().map(text));
    e.into_yaml()
}

/// One target as a name, several as a list.
fn targets(targets: &[Target]) -> Yaml {
    match targets {
        [one] => text(&one.text),
        _ => Yaml::List(targets.iter().map(|t| text(&t.text)).collect()),
    }
}

fn actions(actions: &[Action]) -> Yaml {
    Yaml::List(actions.iter().map(action).collect())
}

fn action(action: &Action) -> Yaml {
    let mut e = Entries::default();
    match action {
        Action::Effect { name, args, .. } if args.is_empty() => return text(&name.text),
        Action::Host { name, .. } => return text(&name.text),
        Action::Effect { name, args, .. } => {
            e.add("effect", text(&name.text));
            e.add("with", arguments(args));
        }
        Action::Assign { fields, .. } => e.add("assign", arguments(fields)),
        Action::Raise { event, data, .. } => {
            e.add("raise", text(&event.text));
            if !data.is_empty() {
                e.add("data", arguments(data));
            }
        }
        Action::Send {
            event,
            data,
            delay,
            id,
            ..
        } => {
            e.add("send", text(&event.text));
            if !data.is_empty() {
                e.add("data", arguments(data));
            }
            if let Some(delay) = delay {
                e.add("delay", text(&delay.to_string()));
            }
            if let Some(id) = id {
                e.add("id", text(&id.text));
            }
        }
        Action::Cancel { id, .. } => e.add("cancel", text(&id.text)),
        Action::Log { expr, .. } => e.add("log", expression(expr)),
    }
    e.into_yaml()
}

fn arguments(args: &IndexMap<String, Argument>) -> Yaml {
    Yaml::Map(
        args.iter()
            .map(|(field, arg)| (scalar(field), expression(&arg.expr)))
            .collect(),
    )
}

/// A context value. Numbers, booleans and null keep their JSON spelling,
/// which YAML reads the same; strings are quoted where YAML needs it.
fn json(value: &serde_json::Value) -> Yaml {
    use serde_json::Value;
    match value {
        Value::Null => Yaml::Scalar("null".to_string()),
        Value::Bool(b) => Yaml::Scalar(b.to_string()),
        Value::Number(n) => Yaml::Scalar(n.to_string()),
        Value::String(s) => text(s),
        Value::Array(items) => Yaml::List(items.iter().map(json).collect()),
        Value::Object(entries) => Yaml::Map(
            entries
                .iter()
                .map(|(key, value)| (scalar(key), json(value)))
                .collect(),
        ),
    }
}

fn text(s: &str) -> Yaml {
    Yaml::Scalar(scalar(s))
}

/// An expression in canonical CEL. The reader takes a number or a boolean
/// where an expression goes as its text, so `1` and `true` need no quotes.
fn expression(expr: &Expr) -> Yaml {
    let s = expr.to_string();
    if is_plain_syntax(&s) && !is_yaml11_bool(&s) && reads_as_text(&s) {
        Yaml::Scalar(s)
    } else {
        text(&s)
    }
}

/// `s` as a YAML scalar that reads back as the string `s`: plain where that
/// is safe in block and flow context alike, else single-quoted, else (for
/// control characters) double-quoted with JSON escapes, which YAML shares.
pub(super) fn scalar(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_string()
    } else if !s.chars().any(char::is_control) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        serde_json::Value::String(s.to_string()).to_string()
    }
}

fn is_plain_safe(s: &str) -> bool {
    is_plain_syntax(s)
        && !is_yaml11_bool(s)
        && !matches!(s.to_ascii_lowercase().as_str(), "true" | "false")
        && reads_as_string(s)
}

/// Whether `s` can be a plain scalar in block and flow context alike: no
/// indicator first, no flow punctuation, no `: ` or ` #`, no edge spaces.
fn is_plain_syntax(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    !"-?:,[]{}#&*!|>'\"%@`".contains(first)
        && !first.is_whitespace()
        && !s.ends_with(char::is_whitespace)
        && !s.contains([',', '[', ']', '{', '}', ':', '#'])
        && !s.chars().any(char::is_control)
}

/// `yes`, `on` and friends are booleans to YAML 1.1 readers, so they are
/// quoted for those even though this crate reads them as strings.
fn is_yaml11_bool(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "yes" | "no" | "on" | "off" | "y" | "n"
    )
}

/// The one-line flow form of a value whose items are all scalars or empty.
fn flow(value: &Yaml) -> Option<String> {
    match value {
        Yaml::Scalar(s) => Some(s.clone()),
        Yaml::Section(entries) if entries.is_empty() => Some("{}".to_string()),
        Yaml::Section(_) | Yaml::Commented(..) => None,
        Yaml::List(items) if items.is_empty() => Some("[]".to_string()),
        Yaml::Map(entries) if entries.is_empty() => Some("{}".to_string()),
        Yaml::List(items) => {
            let items: Option<Vec<String>> = items.iter().map(flat).collect();
            Some(format!("[{}]", items?.join(", ")))
        }
        Yaml::Map(entries) => {
            let entries: Option<Vec<String>> = entries
                .iter()
                .map(|(k, v)| flat(v).map(|v| format!("{k}: {v}")))
                .collect();
            Some(format!("{{ {} }}", entries?.join(", ")))
        }
    }
}

/// A scalar or an empty collection: what may stand inside a flow collection.
fn flat(value: &Yaml) -> Option<String> {
    match value {
        Yaml::Scalar(s) => Some(s.clone()),
        Yaml::List(items) if items.is_empty() => Some("[]".to_string()),
        Yaml::Map(entries) | Yaml::Section(entries) if entries.is_empty() => Some("{}".to_string()),
        _ => None,
    }
}

/// The flow form, if it fits after `column` characters of its line.
fn fitting_flow(value: &Yaml, column: usize) -> Option<String> {
    let text = flow(value)?;
    let always = matches!(value, Yaml::Scalar(_)) || flat(value).is_some();
    (always || column + text.len() <= WIDTH).then_some(text)
}

/// A value's comments apart from it: those above it and its trailing one.
fn uncommented(value: &Yaml) -> (&[String], Option<&str>, &Yaml) {
    match value {
        Yaml::Commented(attached, inner) => (
            &attached.before,
            attached.trailing.as_deref(),
            inner.as_ref(),
        ),
        _ => (&[], None, value),
    }
}

fn write_comments(out: &mut String, comments: &[String], indent: usize) {
    for comment in comments {
        out.push_str(&" ".repeat(indent));
        out.push('#');
        out.push_str(comment);
        out.push('\n');
    }
}

/// Ends the line being written, with `trailing` as its comment.
fn end_line(out: &mut String, trailing: Option<&str>) {
    if let Some(comment) = trailing {
        out.push_str("  #");
        out.push_str(comment);
    }
    out.push('\n');
}

fn write_block_map(out: &mut String, entries: &[(String, Yaml)], indent: usize) {
    for (key, value) in entries {
        let (before, trailing, value) = uncommented(value);
        write_comments(out, before, indent);
        out.push_str(&" ".repeat(indent));
        out.push_str(key);
        out.push(':');
        let column = indent + key.len() + 2;
        match fitting_flow(value, column) {
            Some(text) => {
                out.push(' ');
                out.push_str(&text);
                end_line(out, trailing);
            }
            None => {
                end_line(out, trailing);
                write_block(out, value, indent + 2);
            }
        }
    }
}

fn write_block_list(out: &mut String, items: &[Yaml], indent: usize) {
    for item in items {
        let (before, trailing, item) = uncommented(item);
        write_comments(out, before, indent);
        // A mapping in a list reads best as `- key: value` lines.
        let flow = match item {
            Yaml::Map(entries) if !entries.is_empty() => None,
            _ => fitting_flow(item, indent + 2),
        };
        match flow {
            Some(text) => {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&text);
                end_line(out, trailing);
            }
            None => {
                // The item is written one level deeper, then its first
                // line's indentation becomes the dash, and its trailing
                // comment ends that line.
                let mut inner = String::new();
                write_block(&mut inner, item, indent + 2);
                let first = inner.find('\n').unwrap_or(inner.len());
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&inner[indent + 2..first]);
                end_line(out, trailing);
                out.push_str(inner.get(first + 1..).unwrap_or_default());
            }
        }
    }
}

fn write_block(out: &mut String, value: &Yaml, indent: usize) {
    match value {
        // Only entries and items carry comments; one elsewhere is written
        // above its value all the same.
        Yaml::Commented(attached, inner) => {
            write_comments(out, &attached.before, indent);
            write_comments(out, attached.trailing.as_slice(), indent);
            write_block(out, inner, indent);
        }
        Yaml::Map(entries) | Yaml::Section(entries) => write_block_map(out, entries, indent),
        Yaml::List(items) => write_block_list(out, items, indent),
        Yaml::Scalar(s) => {
            out.push_str(&" ".repeat(indent));
            out.push_str(s);
            out.push('\n');
        }
    }
}
