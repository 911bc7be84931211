//! Hover: what is under the cursor, in Markdown.
//!
//! On a finding, its code, name, message, witness and what its lint does;
//! on a state, its kind, actions, invocations and the events it accepts;
//! on an event, its declaration; on an effect, its idempotency and where
//! it is performed; on a context field, its initial value.

use crate::lint::Lint;
use crate::model::{Action, Machine, StateId, StateKind, Trigger};
use crate::span::Span;

use super::Analysis;
use super::symbols::{self, Symbol};

/// The hover at byte `offset`: the span it is about and its Markdown.
pub fn hover(analysis: &Analysis, offset: u32) -> Option<(Span, String)> {
    let findings: Vec<String> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.span.start <= offset && offset <= d.span.end)
        .map(finding)
        .collect();
    let symbol = symbols::indexed(analysis).at(offset);
    let about = symbol.and_then(|o| describe(analysis, &o.symbol));
    let span = match (
        symbol,
        analysis
            .diagnostics
            .iter()
            .find(|d| d.span.start <= offset && offset <= d.span.end),
    ) {
        (Some(o), _) if about.is_some() => o.span,
        (_, Some(d)) => d.span,
        _ => return None,
    };
    let mut parts = findings;
    parts.extend(about);
    (!parts.is_empty()).then(|| (span, parts.join("\n\n---\n\n")))
}

/// A finding: `**S001** unknown-target (error)`, its message, witness and
/// help, and the first section of its lint's documentation.
fn finding(d: &crate::diagnostic::Diagnostic) -> String {
    let mut out = format!(
        "**{}** `{}` ({})\n\n{}",
        d.code,
        d.name,
        d.severity.as_str(),
        d.message
    );
    if let Some(witness) = crate::report::witness_line(d) {
        out.push_str(&format!("\n\nwitness: {witness}"));
    }
    if let Some(help) = &d.help {
        out.push_str(&format!("\n\nhelp: {help}"));
    }
    if let Some(what) = Lint::from_name_or_code(d.code).and_then(|l| what_it_does(l.doc())) {
        out.push_str(&format!("\n\n{what}"));
    }
    out
}

/// The "What it does" section of a lint's documentation, without its heading.
fn what_it_does(doc: &str) -> Option<String> {
    let rest = doc.split_once("### What it does")?.1;
    let section = rest.split("\n### ").next()?.trim();
    Some(section.to_string())
}

fn describe(analysis: &Analysis, symbol: &Symbol) -> Option<String> {
    let machine = analysis.machine.as_ref()?;
    Some(match symbol {
        Symbol::State(id) => state(machine, *id),
        Symbol::Event(name) => event(machine, name),
        Symbol::Effect(name) => effect(machine, name)?,
        Symbol::Context(name) => {
            let field = machine.context.get(name)?;
            format!("context field `{name}`, initially `{}`", field.value)
        }
        Symbol::Payload { event, field } => {
            let ty = machine
                .events
                .get(event)
                .and_then(|e| e.payload.as_ref()?.get(field))
                .map_or("undeclared", |f| f.ty.as_str());
            format!("payload field `{field}` of `{event}`: {ty}")
        }
        Symbol::Source(name) => {
            let source = machine.sources.get(name)?;
            match &source.retry_horizon {
                Some(h) => format!("source `{name}`: redelivers for up to {h}"),
                None => format!("source `{name}`: no retry horizon declared"),
            }
        }
    })
}

fn kind(kind: StateKind) -> &'static str {
    match kind {
        StateKind::Atomic => "atomic",
        StateKind::Compound => "compound",
        StateKind::Parallel => "parallel",
        StateKind::Final => "final",
        StateKind::History(crate::model::HistoryKind::Shallow) => "shallow history",
        StateKind::History(crate::model::HistoryKind::Deep) => "deep history",
    }
}

fn actions(list: &[Action]) -> String {
    list.iter()
        .map(crate::diagram::action_summary)
        .collect::<Vec<_>>()
        .join("; ")
}

fn state(machine: &Machine, id: StateId) -> String {
    let s = machine.state(id);
    let mut out = format!("state `{}` ({})", s.path, kind(s.kind));
    if let Some(state_id) = &s.id {
        out.push_str(&format!(", id `#{state_id}`"));
    }
    if let Some(description) = &s.description {
        out.push_str(&format!("\n\n{description}"));
    }
    let mut facts = Vec::new();
    if !s.entry.is_empty() {
        facts.push(format!("entry: {}", actions(&s.entry)));
    }
    if !s.exit.is_empty() {
        facts.push(format!("exit: {}", actions(&s.exit)));
    }
    for invoke in &s.invoke {
        facts.push(format!(
            "invokes `{}` as `{}`",
            invoke.src.text, invoke.id.text
        ));
    }
    // The events it accepts: its own transitions' and its ancestors'.
    let mut accepted: Vec<String> = Vec::new();
    for owner in std::iter::once(id).chain(machine.ancestors(id)) {
        for &t in &machine.state(owner).on {
            if let Trigger::Event(descriptor) = &machine.transition(t).trigger {
                let text = descriptor.to_string();
                let text = if owner == id {
                    text
                } else {
                    format!("{text} (from `{}`)", machine.display_name(owner))
                };
                if !accepted.contains(&text) {
                    accepted.push(text);
                }
            }
        }
    }
    facts.push(match accepted.is_empty() {
        true => "accepts no event".to_string(),
        false => format!("accepts: {}", accepted.join(", ")),
    });
    out.push_str(&format!("\n\n- {}", facts.join("\n- ")));
    out
}

fn event(machine: &Machine, name: &str) -> String {
    let Some(decl) = machine.events.get(name) else {
        return format!("event `{name}`, not declared under `events:`");
    };
    let mut out = format!("event `{name}`");
    if let Some(description) = &decl.description {
        out.push_str(&format!("\n\n{description}"));
    }
    match &decl.id_field {
        Some(field) => out.push_str(&format!("\n\n- id field: `{}`", field.text)),
        None => out.push_str("\n\n- no id field: a redelivery cannot be told apart"),
    }
    if let Some(source) = &decl.source {
        let horizon = machine
            .sources
            .get(&source.text)
            .and_then(|s| s.retry_horizon.as_ref())
            .map_or("no retry horizon".to_string(), |h| {
                format!("retries for up to {h}")
            });
        out.push_str(&format!("\n- source: `{}` ({horizon})", source.text));
    }
    if let Some(payload) = &decl.payload {
        let fields: Vec<String> = payload
            .iter()
            .map(|(f, p)| format!("`{f}`: {}", p.ty.as_str()))
            .collect();
        out.push_str(&format!("\n- payload: {}", fields.join(", ")));
    }
    out
}

fn effect(machine: &Machine, name: &str) -> Option<String> {
    let decl = machine.effects.get(name)?;
    let mut out = format!(
        "effect `{name}`: idempotency `{}`",
        decl.idempotency.as_str()
    );
    if let Some(verify) = &decl.verify {
        out.push_str(&format!(", verified in `{}`", verify.text));
    }
    if let Some(description) = &decl.description {
        out.push_str(&format!("\n\n{description}"));
    }
    let performs = |list: &[Action]| {
        list.iter()
            .any(|a| matches!(a, Action::Effect { name: n, .. } if n.text == name))
    };
    let mut places = Vec::new();
    for id in machine.state_ids() {
        let s = machine.state(id);
        let shown = machine.display_name(id);
        if performs(&s.entry) {
            places.push(format!("entry of `{shown}`"));
        }
        if performs(&s.exit) {
            places.push(format!("exit of `{shown}`"));
        }
        for invoke in s.invoke.iter().filter(|i| i.src.text == name) {
            places.push(format!("invoked by `{shown}` as `{}`", invoke.id.text));
        }
        for &t in s.on.iter().chain(&s.always).chain(&s.after) {
            let transition = machine.transition(t);
            if performs(&transition.actions) {
                places.push(format!("`{}` of `{shown}`", transition.trigger));
            }
        }
    }
    match places.is_empty() {
        true => out.push_str("\n\n- performed nowhere"),
        false => out.push_str(&format!("\n\n- performed in: {}", places.join(", "))),
    }
    Some(out)
}
