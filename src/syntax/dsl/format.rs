//! Model → canonical DSL text, the inverse of the DSL parser.
//!
//! The layout is fixed (two-space indent, the order of the spec's examples),
//! so formatting a model always gives the same text and formatting the text's
//! model gives it again. The comments of the file the model was read from, if
//! given, are written as `//` lines above the node they were attached to, or at
//! the end of its first line.

use crate::expr::{Expr, ExprKind};
use crate::model::{
    Action, Assignment, EventPattern, HistoryKind, Invocation, Machine, Semantics, State, StateId,
    StateKind, Target, Transition, TransitionId, Trigger,
};
use crate::span::Span;
use crate::syntax::comments::{Anchor, Attached, Comments, Pending};

use super::errors::KEYWORDS;

/// A block whose single line is no longer than this is written on one line,
/// as in `state oscura { on PULSAR -> clara }`.
pub(super) const INLINE_WIDTH: usize = 100;

/// The canonical DSL text of `machine`.
pub fn format(machine: &Machine) -> String {
    format_with(machine, &Comments::default())
}

/// The canonical DSL text of `machine`, with the comments of the file it was
/// read from (`syntax::comments`).
pub fn format_with(machine: &Machine, comments: &Comments) -> String {
    let pending = Pending::new(comments);
    let p = &pending;
    let root = machine.root();
    let mut sections: Vec<Vec<String>> = Vec::new();

    let mut header = String::new();
    if root.kind == StateKind::Parallel {
        header.push_str("parallel ");
    }
    header.push_str("machine ");
    header.push_str(&name(&machine.name));
    if let Some(id) = &root.id {
        header.push_str(&format!(" #{}", segment(id)));
    }
    if let Some(version) = machine.version {
        header.push_str(&format!(" version {version}"));
    }
    let mut head = commented(p, Anchor::Key("machine".into()), vec![header]);
    if let Some(description) = &machine.description {
        head.push(string(description));
    }
    // The YAML keys that the header holds have no line of their own here.
    for key in ["version", "description", "type", "id"] {
        head.extend(comment_lines(p.take_key(key)));
    }
    if machine.semantics != Semantics::default() {
        let line = format!("semantics {}", machine.semantics);
        head.extend(commented(p, Anchor::Key("semantics".into()), vec![line]));
    }
    sections.push(head);

    if !machine.context.is_empty() {
        let fields: Vec<String> = machine
            .context
            .iter()
            .flat_map(|(field, value)| {
                let line = format!("{} = {}", name(field), value_expr(&value.value));
                commented(p, Anchor::Context(field.clone()), vec![line])
            })
            .collect();
        let lines = block("context".into(), fields);
        sections.push(commented(p, Anchor::Key("context".into()), lines));
    }

    let mut senders = comment_lines(p.take_key("sources"));
    senders.extend(machine.sources.iter().flat_map(|(source_name, source)| {
        let mut line = format!("source {}", name(source_name));
        if let Some(horizon) = source.retry_horizon {
            line.push_str(&format!(" retry {horizon}"));
        }
        push_description(&mut line, &source.description);
        commented(p, Anchor::Source(source_name.clone()), vec![line])
    }));
    if let Some(dedup) = &machine.dedup {
        let line = format!("dedup retention {}", dedup.retention);
        senders.extend(commented(p, Anchor::Key("dedup".into()), vec![line]));
    }
    if let Some(history) = &machine.history {
        let line = format!("history keep {}", history.keep);
        senders.extend(commented(p, Anchor::Key("history".into()), vec![line]));
    }
    if let Some(limits) = &machine.limits {
        let line = format!("limits microsteps {}", limits.microsteps);
        senders.extend(commented(p, Anchor::Key("limits".into()), vec![line]));
    }
    sections.push(senders);

    let mut events = comment_lines(p.take_key("events"));
    events.extend(machine.events.iter().flat_map(|(event_name, event)| {
        let mut line = format!("event {}", dotted(event_name));
        if let Some(payload) = &event.payload {
            let fields: Vec<String> = payload
                .iter()
                .map(|(field, ty)| format!("{}: {}", name(field), ty.ty.as_str()))
                .collect();
            line.push_str(&format!("({})", fields.join(", ")));
        }
        if let Some(id) = &event.id_field {
            line.push_str(&format!(" id {}", name(&id.text)));
        }
        if let Some(source) = &event.source {
            line.push_str(&format!(" from {}", name(&source.text)));
        }
        push_description(&mut line, &event.description);
        commented(p, Anchor::Event(event_name.clone()), vec![line])
    }));
    sections.push(events);

    let mut effects = comment_lines(p.take_key("effects"));
    effects.extend(machine.effects.iter().flat_map(|(effect_name, effect)| {
        let mut line = format!(
            "effect {} idempotent {}",
            name(effect_name),
            effect.idempotency.as_str()
        );
        if let Some(verify) = &effect.verify {
            line.push_str(&format!(" verify {}", target(&verify.text)));
        }
        push_description(&mut line, &effect.description);
        commented(p, Anchor::Effect(effect_name.clone()), vec![line])
    }));
    sections.push(effects);

    if !machine.guards.is_empty() {
        let names: Vec<String> = machine.guards.iter().map(|g| name(&g.text)).collect();
        let line = format!("guards {}", names.join(" "));
        sections.push(commented(p, Anchor::Key("guards".into()), vec![line]));
    }

    let mut migrations = comment_lines(p.take_key("migrations"));
    for migration in &machine.migrations {
        let mut body: Vec<String> = migration
            .states
            .iter()
            .map(|(old, t)| format!("state {} -> {}", target(old), target(&t.target.text)))
            .collect();
        body.extend(
            migration
                .context
                .iter()
                .map(|(field, a)| format!("context {} = {}", name(field), a.expr)),
        );
        if let Some(timers) = migration.timers {
            body.push(format!("timers {}", timers.as_str()));
        }
        if let Some(history) = migration.history {
            body.push(format!("history {}", history.as_str()));
        }
        if let Some(outbox) = migration.outbox {
            body.push(format!("outbox {}", outbox.as_str()));
        }
        migrations.extend(block(format!("migration from {}", migration.from), body));
    }
    sections.push(migrations);

    sections.push(items(machine, root, p));

    // At the top level a blank line sets apart every state of more than one
    // line; one-line states stay together (`final enviado`, `final cancelado`).
    let mut states = comment_lines(p.take_key("states"));
    let mut previous_multiline = false;
    for &child in &root.children {
        let lines = state_block(machine, child, p);
        let multiline = lines.len() > 1;
        if !states.is_empty() && (multiline || previous_multiline) {
            states.push(String::new());
        }
        previous_multiline = multiline;
        states.extend(lines);
    }
    sections.push(states);
    // What no printed node took (the comments after the last node, and those
    // of keys this syntax has no place for) ends the file.
    sections.push(comment_lines(p.rest()));

    let mut out = String::new();
    for section in sections.iter().filter(|s| !s.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        for line in section {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A state and its body, unindented.
fn state_block(machine: &Machine, id: StateId, p: &Pending) -> Vec<String> {
    let state = machine.state(id);
    let mut header = match state.kind {
        StateKind::Atomic | StateKind::Compound => "state",
        StateKind::Parallel => "parallel",
        StateKind::Final => "final",
        StateKind::History(_) => "history",
    }
    .to_string();
    header.push(' ');
    header.push_str(&name(&state.key));
    if let Some(id) = &state.id {
        header.push_str(&format!(" #{}", segment(id)));
    }
    if let StateKind::History(kind) = state.kind {
        if kind == HistoryKind::Deep {
            header.push_str(" deep");
        }
        if !state.initial.is_empty() {
            header.push_str(&format!(" -> {}", targets(&state.initial)));
        }
    }
    push_description(&mut header, &state.description);

    let attached = p.take(&Anchor::State(state.path.clone()));
    let mut body = items(machine, state, p);
    if !body.is_empty() && !state.children.is_empty() {
        body.push(String::new());
    }
    for &child in &state.children {
        body.extend(state_block(machine, child, p));
    }
    around(attached, block(header, body))
}

/// The items of a state body, in the canonical order. The root's items take
/// the comments of the top-level YAML keys they stand for.
fn items(machine: &Machine, state: &State, p: &Pending) -> Vec<String> {
    let is_root = state.parent.is_none();
    let key = |key: &str, lines: Vec<String>| {
        if is_root {
            commented(p, Anchor::Key(key.into()), lines)
        } else {
            lines
        }
    };
    let key_lines = |key: &str| {
        if is_root {
            comment_lines(p.take_key(key))
        } else {
            Vec::new()
        }
    };
    let mut lines = Vec::new();
    if !state.initial.is_empty() && !matches!(state.kind, StateKind::History(_)) {
        let line = format!("initial {}", targets(&state.initial));
        lines.extend(key("initial", vec![line]));
    }
    lines.extend(key("entry", entry_exit("entry", &state.entry)));
    lines.extend(key("exit", entry_exit("exit", &state.exit)));
    for (section, ids) in [
        ("on", &state.on),
        ("always", &state.always),
        ("after", &state.after),
    ] {
        let mut first = true;
        for &t in ids {
            // The handlers of invocations are printed with their invocation.
            if machine.completion_handler(t).is_none() {
                if first {
                    lines.extend(key_lines(section));
                    first = false;
                }
                lines.extend(transition(machine, t, p));
            }
        }
    }
    if !state.invoke.is_empty() {
        lines.extend(key_lines("invoke"));
    }
    for invocation in &state.invoke {
        lines.extend(invoke(machine, invocation, p));
    }
    if !state.tags.is_empty() {
        let tags: Vec<String> = state.tags.iter().map(|t| string(t)).collect();
        lines.extend(key("tags", vec![format!("tags {}", tags.join(" "))]));
    }
    if !state.allow.is_empty() {
        lines.extend(key_lines("allow"));
    }
    for (lint, allow) in &state.allow {
        lines.push(format!(
            "allow {} {}",
            lint_name(lint),
            string(&allow.reason)
        ));
    }
    lines
}

/// `lines`, the text of a node, with the comments attached to `anchor`.
fn commented(p: &Pending, anchor: Anchor, lines: Vec<String>) -> Vec<String> {
    around(p.take(&anchor), lines)
}

/// `lines` with `attached` above them and at the end of their first line.
fn around(attached: Attached, mut lines: Vec<String>) -> Vec<String> {
    let mut out = comment_lines(attached.before);
    match (attached.trailing, lines.first_mut()) {
        (Some(trailing), Some(first)) => {
            first.push_str("  //");
            first.push_str(&trailing);
        }
        (Some(trailing), None) => out.push(format!("//{trailing}")),
        (None, _) => {}
    }
    out.extend(lines);
    out
}

fn comment_lines(texts: Vec<String>) -> Vec<String> {
    texts.into_iter().map(|text| format!("//{text}")).collect()
}

fn entry_exit(keyword: &str, actions: &[Action]) -> Vec<String> {
    match actions {
        [] => Vec::new(),
        [single] if bare_name(single).is_some() => {
            vec![format!(
                "{keyword} {}",
                bare_name(single).unwrap_or_default()
            )]
        }
        _ => block(keyword.to_string(), action_lines(actions)),
    }
}

/// `invoke SRC (INPUT) id ID { done ... error ... }`.
fn invoke(machine: &Machine, invocation: &Invocation, p: &Pending) -> Vec<String> {
    let mut head = format!("invoke {}", name(&invocation.src.text));
    head.push_str(&arguments(&invocation.input));
    if invocation.id.text != invocation.src.text {
        head.push_str(&format!(" id {}", name(&invocation.id.text)));
    }
    let handlers = [
        ("done", &invocation.on_done),
        ("error", &invocation.on_error),
    ];
    let body: Vec<String> = handlers
        .into_iter()
        .flat_map(|(keyword, ids)| {
            ids.iter().flat_map(move |&t| {
                let transition = machine.transition(t);
                let lines = transition_lines(keyword.to_string(), transition, handler_target);
                commented(p, Anchor::Transition(transition.span.start), lines)
            })
        })
        .collect();
    block(head, body)
}

fn transition(machine: &Machine, id: TransitionId, p: &Pending) -> Vec<String> {
    let transition = machine.transition(id);
    let head = match &transition.trigger {
        Trigger::Event(descriptor) => {
            let patterns: Vec<String> = descriptor
                .patterns
                .iter()
                .map(|p| match p {
                    EventPattern::Any => "*".to_string(),
                    EventPattern::Prefix(prefix) => format!("{}.*", dotted(prefix)),
                    EventPattern::Exact(event) => dotted(event),
                })
                .collect();
            format!("on {}", patterns.join(" "))
        }
        Trigger::Always => "always".to_string(),
        Trigger::After(delay) => format!("after {delay}"),
    };
    let lines = transition_lines(head, transition, target);
    commented(p, Anchor::Transition(transition.span.start), lines)
}

/// A target of an invocation's handler: where `done` or `error` would
/// start the next handler, it is quoted.
fn handler_target(text: &str) -> String {
    let first = text.split('.').next().unwrap_or_default();
    if first == "done" || first == "error" {
        path_segments(text, quoted)
    } else {
        target(text)
    }
}

/// A transition's lines after its trigger, which `head` holds.
fn transition_lines(
    mut head: String,
    transition: &Transition,
    target: fn(&str) -> String,
) -> Vec<String> {
    if !transition.targets.is_empty() {
        let texts: Vec<String> = transition.targets.iter().map(|t| target(&t.text)).collect();
        head.push_str(&format!(" -> {}", texts.join(" ")));
    }
    if transition.reenter {
        head.push_str(" reenter");
    }
    if let Some(guard) = &transition.guard {
        head.push_str(&format!(" if {guard}"));
    }
    push_description(&mut head, &transition.description);
    if transition.actions.is_empty() {
        return vec![head];
    }
    block(head, action_lines(&transition.actions))
}

/// The lines of an action block's content. An assign right after another
/// assign is written `assign { ... }`, because consecutive `field = value`
/// lines would read back as one assign.
fn action_lines(actions: &[Action]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut previous_assign = false;
    for action in actions {
        match action {
            Action::Assign { fields, .. } => {
                let assignments: Vec<String> = fields
                    .iter()
                    .map(|(field, assignment)| assignment_line(field, assignment))
                    .collect();
                if assignments.is_empty() {
                    lines.push("assign {}".into());
                } else if previous_assign {
                    lines.extend(block("assign".into(), assignments));
                } else {
                    lines.extend(assignments);
                }
            }
            Action::Raise { event, data, .. } => {
                lines.push(format!("raise {}{}", dotted(&event.text), arguments(data)));
            }
            Action::Send {
                event,
                data,
                delay,
                id,
                ..
            } => {
                let mut line = format!("send {}{}", dotted(&event.text), arguments(data));
                if let Some(delay) = delay {
                    line.push_str(&format!(" after {delay}"));
                }
                if let Some(id) = id {
                    line.push_str(&format!(" id {}", name(&id.text)));
                }
                lines.push(line);
            }
            Action::Cancel { id, .. } => lines.push(format!("cancel {}", name(&id.text))),
            Action::Effect {
                name: effect, args, ..
            } if !args.is_empty() => {
                lines.push(format!("effect {}{}", name(&effect.text), arguments(args)));
            }
            Action::Effect { .. } | Action::Host { .. } => {
                lines.push(bare_name(action).unwrap_or_default());
            }
            Action::Log { expr, .. } => lines.push(format!("log {expr}")),
        }
        previous_assign = matches!(action, Action::Assign { .. });
    }
    lines
}

/// The bare-name form of an action that has one: a host action, or an effect
/// without arguments.
fn bare_name(action: &Action) -> Option<String> {
    match action {
        Action::Host { name: host, .. } => Some(name(&host.text)),
        Action::Effect {
            name: effect, args, ..
        } if args.is_empty() => Some(name(&effect.text)),
        _ => None,
    }
}

fn assignment_line(field: &str, assignment: &Assignment) -> String {
    format!("{} = {}", name(field), assignment.expr)
}

fn arguments(args: &indexmap::IndexMap<String, Assignment>) -> String {
    if args.is_empty() {
        return String::new();
    }
    let list: Vec<String> = args
        .iter()
        .map(|(field, arg)| format!("{}: {}", name(field), arg.expr))
        .collect();
    format!("({})", list.join(", "))
}

/// `head { line }` when the body is one short line, `head` alone when there
/// is none, and the body indented between braces otherwise. A line that may
/// end in a comment is never followed by the closing brace, which the comment
/// would swallow; `//` in a string keeps its block open too, which costs
/// only a line.
fn block(head: String, body: Vec<String>) -> Vec<String> {
    match body.as_slice() {
        [] => vec![head],
        [line] if head.len() + line.len() + 6 <= INLINE_WIDTH && !line.contains("//") => {
            vec![format!("{head} {{ {line} }}")]
        }
        _ => {
            let mut lines = Vec::with_capacity(body.len() + 2);
            lines.push(format!("{head} {{"));
            lines.extend(body.into_iter().map(|line| {
                if line.is_empty() {
                    line
                } else {
                    format!("  {line}")
                }
            }));
            lines.push("}".into());
            lines
        }
    }
}

fn push_description(line: &mut String, description: &Option<String>) {
    if let Some(text) = description {
        line.push(' ');
        line.push_str(&string(text));
    }
}

fn targets(targets: &[Target]) -> String {
    let texts: Vec<String> = targets.iter().map(|t| target(&t.text)).collect();
    texts.join(" ")
}

/// A target as written in the model (`a.b`, `.child`, `#id`), with the parts
/// that need it quoted.
pub(super) fn target(text: &str) -> String {
    if let Some(id) = text.strip_prefix('#') {
        return format!("#{}", segment(id));
    }
    if let Some(path) = text.strip_prefix('.') {
        return format!(".{}", path_segments(path, segment));
    }
    dotted(text)
}

/// A dotted name (`done.state.a`): its first part cannot be a keyword, the
/// parts after a dot can.
pub(super) fn dotted(text: &str) -> String {
    path_segments(text, name)
}

fn path_segments(text: &str, first: fn(&str) -> String) -> String {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return quoted(text);
    }
    let mut out = first(parts[0]);
    for part in &parts[1..] {
        out.push('.');
        out.push_str(&segment(part));
    }
    out
}

fn is_word(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name where a keyword would be read as one: quoted when it is a keyword
/// or not a plain word. `in` is quoted too: after an expression it would read
/// as the operator (`log x` then an action named `in`).
pub(super) fn name(text: &str) -> String {
    if is_word(text) && !KEYWORDS.contains(&text) && text != "in" {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// A name after `.` or `#`, where keywords are names.
fn segment(text: &str) -> String {
    if is_word(text) {
        text.to_string()
    } else {
        quoted(text)
    }
}

fn lint_name(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        text.to_string()
    } else {
        quoted(text)
    }
}

fn quoted(text: &str) -> String {
    format!("`{text}`")
}

pub(super) fn string(text: &str) -> String {
    literal(ExprKind::String(text.to_string())).to_string()
}

fn literal(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

/// A JSON value as the CEL literal that reads back as it.
fn value_expr(value: &serde_json::Value) -> Expr {
    use serde_json::Value;
    literal(match value {
        Value::Null => ExprKind::Null,
        Value::Bool(b) => ExprKind::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => ExprKind::Int(i),
            // Integers beyond i64 have no CEL literal here; a float is the closest.
            None => ExprKind::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => ExprKind::String(s.clone()),
        Value::Array(items) => ExprKind::List(items.iter().map(value_expr).collect()),
        Value::Object(map) => ExprKind::Map(
            map.iter()
                .map(|(k, v)| (literal(ExprKind::String(k.clone())), value_expr(v)))
                .collect(),
        ),
    })
}
