use super::confirm::Replayer;
use super::{Cx, Finding, Lint, Stage, Witness};
use crate::diagnostic::Label;
use crate::graph::EventId;
use crate::model::{EventPattern, Machine, StateId, TransitionId, Trigger};
use crate::span::Span;

declare_lint! {
    /// ### What it does
    ///
    /// Flags an event that the machine accepts somewhere (a delivered
    /// event, not one the machine raises itself) when it names no `id`
    /// field: once per event, at its declaration, or at its first use in
    /// `on:` when it is not declared. A machine that declares no ids at all
    /// gets one finding instead, at its `machine:` name, listing the events.
    ///
    /// The finding holds without a witness: whatever the machine does with
    /// a repeat, the runtime cannot recognise it. It carries one only when
    /// it shows harm: a run, replayed on the interpreter, in which a repeat
    /// of the event changes the configuration or the context or performs an
    /// effect (`confirmed: true`). Otherwise it has no witness.
    ///
    /// ### Why is this bad?
    ///
    /// The runtime deduplicates by identity: it records the id of every
    /// applied event and answers a repeat with the first response. An
    /// event without an id cannot be told from a new one, so every repeat
    /// is applied.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// events:
    ///   ALTA: {}
    /// ```
    ///
    /// ### Use instead
    ///
    /// Name the payload field its sender fills with a stable id:
    ///
    /// ```yaml
    /// events:
    ///   ALTA: { id: altaId }
    /// ```
    code: "I006",
    severity: Warning,
    stage: Stage::Model(check),
}

/// An accepted event without an id.
struct Missing<'m> {
    name: &'m str,
    event: EventId,
    /// Its declaration, or else its first use.
    span: Span,
    declared: bool,
    /// The handler the shortest run reaches.
    handler: TransitionId,
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    let mut missing: Vec<Missing> = (0..cx.graph.events.len() as u32)
        .map(EventId)
        .filter(|&e| cx.graph.events.is_redeliverable(e))
        .filter_map(|event| {
            let decl = cx.decl(event);
            if decl.is_some_and(|d| d.id_field.is_some()) {
                return None;
            }
            let handler = nearest_handler(cx, event)?;
            let name = cx.graph.events.name(event);
            Some(Missing {
                name,
                event,
                span: decl.map_or_else(|| first_use(cx, event, handler), |d| d.span),
                declared: decl.is_some(),
                handler,
            })
        })
        .collect();
    if missing.is_empty() {
        return;
    }
    missing.sort_by_key(|e| e.span.start);

    let mut replayer = Replayer::new(cx);
    let mut harmful_repeat = |e: &Missing| {
        let w = cx.repeat_witness(e.handler, e.event)?;
        (replayer.confirm(Lint::EventWithoutId, Some(&w), None).confirmed == Some(true)).then_some(w)
    };
    let findings: Vec<Finding> = if m.events.values().any(|d| d.id_field.is_some()) {
        missing
            .iter()
            .map(|e| event_finding(m, e, harmful_repeat(e)))
            .collect()
    } else {
        let witness = missing.iter().find_map(&mut harmful_repeat);
        vec![machine_finding(m, &missing, witness)]
    };
    drop(replayer);
    for f in findings {
        cx.report(f);
    }
}

/// The finding of one event without an id.
fn event_finding(m: &Machine, e: &Missing, witness: Option<Witness>) -> Finding {
    let name = e.name;
    let (message, help, labels) = if e.declared {
        (
            format!(
                "event `{name}` declares no `id` field, so a repeat cannot be told from a new delivery"
            ),
            format!(
                "add `id: FIELD` to `{name}`, naming the payload field its sender fills with a stable id"
            ),
            vec![Label {
                span: m.transition(e.handler).span,
                message: format!("`{name}` is accepted here"),
            }],
        )
    } else {
        (
            format!(
                "event `{name}` is not declared, so it has no `id` field and a repeat cannot be told from a new delivery"
            ),
            format!(
                "declare `{name}` under `events:` with `id: FIELD`, naming the payload field its sender fills with a stable id"
            ),
            Vec::new(),
        )
    };
    Finding {
        lint: Lint::EventWithoutId,
        span: e.span,
        state: StateId::ROOT,
        message,
        labels,
        help: Some(help),
        witness,
        claim: None,
    }
}

/// The one finding of a machine that declares no event ids at all.
fn machine_finding(m: &Machine, missing: &[Missing], witness: Option<Witness>) -> Finding {
    let names: Vec<String> = missing.iter().map(|e| format!("`{}`", e.name)).collect();
    let labels = missing
        .iter()
        .map(|e| Label {
            span: e.span,
            message: if e.declared {
                format!("`{}` is declared without `id`", e.name)
            } else {
                format!("`{}` is accepted here, undeclared", e.name)
            },
        })
        .collect();
    Finding {
        lint: Lint::EventWithoutId,
        span: m.span,
        state: StateId::ROOT,
        message: format!(
            "machine `{}` declares no event ids, so a repeat of {} cannot be told from a new delivery",
            m.name,
            names.join(", ")
        ),
        labels,
        help: Some(
            "give each event `id: FIELD` under `events:`, naming the payload field its sender fills with a stable id"
                .to_string(),
        ),
        witness,
        claim: None,
    }
}

/// Where an undeclared event is first named in `on:`; the handler when no
/// transition names it exactly (it is matched by a wildcard only).
fn first_use(cx: &Cx, event: EventId, handler: TransitionId) -> Span {
    let name = cx.graph.events.name(event);
    cx.machine
        .transitions
        .iter()
        .filter(|t| match &t.trigger {
            Trigger::Event(d) => d.patterns.contains(&EventPattern::Exact(name.to_string())),
            _ => false,
        })
        .map(|t| t.span)
        .min_by_key(|span| span.start)
        .unwrap_or(cx.machine.transition(handler).span)
}

/// The handler of `event` that the shortest run reaches.
pub(super) fn nearest_handler(cx: &Cx, event: EventId) -> Option<TransitionId> {
    (0..cx.machine.transitions.len() as u32)
        .map(TransitionId)
        .filter(|&t| cx.graph.trigger_events(t).contains(&event))
        .filter_map(|t| {
            let leaf = cx.selecting_leaf(t, Some(event))?;
            Some((cx.reach.dist[cx.graph.at(leaf).index()], t))
        })
        .min()
        .map(|(_, t)| t)
}
