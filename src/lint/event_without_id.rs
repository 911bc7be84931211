use super::confirm::Replayer;
use super::{Cx, Finding, Lint, Stage, Witness, fact_note};
use crate::diagnostic::{Label, Verdict};
use crate::graph::EventId;
use crate::diagnostic::Fix;
use crate::model::{
    EventPattern, ForeignFormat, Machine, PayloadType, StateId, TransitionId, Trigger,
};
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
    /// A machine read from XState or SCXML in a repository that declares no
    /// facts gets one note instead, at its `id`, naming the events and where
    /// their ids are declared (`idemchart.toml`'s `[machines.ID]`,
    /// `meta.idemchart`); once the repository declares facts, the findings
    /// above. Payload fields read from TypeScript types declare no id: a
    /// field named like one is still not the author's word.
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
    if let Some(format) = fact_note::undeclared(m) {
        cx.report(undeclared_note(m, format, &missing));
        return;
    }

    let mut replayer = Replayer::new(cx);
    let mut harmful_repeat = |e: &Missing| {
        let w = cx.repeat_witness(e.handler, e.event)?;
        let verdict = replayer.confirm(Lint::EventWithoutId, Some(&w), None).verdict;
        (verdict == Some(Verdict::Confirmed)).then_some(w)
    };
    let findings: Vec<Finding> = if m.events.values().any(|d| d.id_field.is_some()) {
        missing
            .iter()
            .map(|e| Finding {
                fix: id_fix(cx, std::slice::from_ref(e)),
                ..event_finding(m, e, harmful_repeat(e))
            })
            .collect()
    } else {
        let witness = missing.iter().find_map(&mut harmful_repeat);
        vec![Finding {
            fix: id_fix(cx, &missing),
            ..machine_finding(m, &missing, witness)
        }]
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
            match fact_note::xstate_place(m, "events", name, &[("id", "FIELD")]) {
                Some(place) => format!(
                    "give `{name}` its `id` {place}, naming the payload field its sender fills with a stable id"
                ),
                None => format!(
                    "add `id: FIELD` to `{name}`, naming the payload field its sender fills with a stable id"
                ),
            },
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
            match fact_note::xstate_place(m, "events", name, &[("id", "FIELD")]) {
                Some(place) => format!(
                    "declare `{name}` with its `id` {place}, naming the payload field its sender fills with a stable id"
                ),
                None => format!(
                    "declare `{name}` under `events:` with `id: FIELD`, naming the payload field its sender fills with a stable id"
                ),
            },
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
        fix: None,
    }
}

/// The one note of a machine whose facts have no place: the events it
/// accepts, none of which has an id.
fn undeclared_note(m: &Machine, format: ForeignFormat, missing: &[Missing]) -> Finding {
    let names: Vec<String> = missing.iter().map(|e| format!("`{}`", e.name)).collect();
    fact_note::note(
        m,
        format,
        Lint::EventWithoutId,
        format!(
            "machine `{}` has no idempotency facts, so a redelivered {} cannot be told from a new delivery",
            m.name,
            fact_note::listed(&names)
        ),
        (
            "events",
            missing[0].name,
            &[("id", "FIELD")],
            "`id` names the payload field its sender fills with a stable id",
        ),
    )
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
            match fact_note::xstate_place(m, "events", missing[0].name, &[("id", "FIELD")]) {
                Some(place) => format!(
                    "give each event its `id` {place}, naming the payload field its sender fills with a stable id"
                ),
                None => "give each event `id: FIELD` under `events:`, naming the payload field its sender fills with a stable id".to_string(),
            },
        ),
        witness,
        claim: None,
        fix: None,
    }
}

/// The fix that names an id field for each of the events that declare a
/// payload with exactly one field that looks like an id (`looks_like_id`);
/// `None` when no event does.
fn id_fix(cx: &Cx, missing: &[Missing]) -> Option<Fix> {
    let editor = cx.editor()?;
    let mut edits = Vec::new();
    let mut named = Vec::new();
    for e in missing {
        let Some(decl) = cx.decl(e.event) else {
            continue;
        };
        let candidates: Vec<&str> = decl
            .payload
            .iter()
            .flatten()
            .filter(|(field, f)| looks_like_id(field) && can_identify(f.ty))
            .map(|(field, _)| field.as_str())
            .collect();
        let &[field] = candidates.as_slice() else {
            continue;
        };
        if let Some(more) = editor.add_event_id(decl.span, field) {
            edits.extend(more);
            named.push(format!("`id: {field}` to `{}`", e.name));
        }
    }
    // The runtime will drop a delivery whose id it has seen: right only if
    // the sender fills the field with one stable id per delivery, which the
    // author knows and the linter guesses.
    (!edits.is_empty()).then(|| Fix::unsafe_edits(format!("add {}", named.join(", ")), edits))
}

/// Whether a payload field's name says it holds an id: its last word is
/// `id`, `uuid` or `guid`, in any case, words being split at `_`, `-`, `.`
/// and where a lowercase letter or digit meets an uppercase one. So `id`,
/// `orderId`, `order_id`, `ORDER-ID`, `paymentUUID` look like ids; `paid`,
/// `valid` and `identity` do not.
fn looks_like_id(field: &str) -> bool {
    let mut last_word = String::new();
    let mut previous: Option<char> = None;
    for c in field.chars() {
        if matches!(c, '_' | '-' | '.') {
            last_word.clear();
        } else {
            let boundary = c.is_uppercase()
                && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit());
            if boundary {
                last_word.clear();
            }
            last_word.push(c);
        }
        previous = Some(c);
    }
    matches!(last_word.to_lowercase().as_str(), "id" | "uuid" | "guid")
}

/// Whether a payload field of this type can hold an id: a string or a
/// number, not a flag or a collection.
fn can_identify(ty: PayloadType) -> bool {
    matches!(
        ty,
        PayloadType::String | PayloadType::Integer | PayloadType::Number | PayloadType::Any
    )
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

#[cfg(test)]
mod tests {
    use super::looks_like_id;

    #[test]
    fn id_fields_are_named_so() {
        for yes in ["id", "ID", "orderId", "order_id", "ORDER-ID", "orderID", "paymentUUID", "event.guid", "pago2Id"] {
            assert!(looks_like_id(yes), "{yes}");
        }
        for no in ["paid", "valid", "identity", "ideas", "pagoid", "amount", "idx"] {
            assert!(!looks_like_id(no), "{no}");
        }
    }
}
