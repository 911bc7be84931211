use super::{Cx, Finding, Lint, Stage, fact_note};
use crate::diagnostic::Fix;
use crate::model::{EventPattern, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags an event name in an `on:` key that is neither declared under
    /// `events:` nor raised or sent by the machine itself (`done.state.*`
    /// and `error.*` come from the interpreter and need no declaration).
    /// Wildcards (`*`, `foo.*`) are not checked. Events that a machine's
    /// TypeScript types state are declared. A machine read from XState or
    /// SCXML in a repository that declares no facts is not checked: the note
    /// of `event-without-id` names its events and where to declare them.
    /// Once the repository declares facts, an XState machine's finding says
    /// to declare the event in `meta.idemchart.events` of its config or in
    /// idemchart.toml, with both shapes.
    ///
    /// ### Why is this bad?
    ///
    /// Usually a misspelt event, which then never fires. And an undeclared
    /// event has no `id` field and no `source`, so it can be neither
    /// deduplicated nor checked against a retry horizon.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// events:
    ///   PAGO_CONFIRMADO: { id: pagoId }
    /// states:
    ///   pendiente:
    ///     on:
    ///       PAGO_CONFIRMDO: pagado
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    ///     on:
    ///       PAGO_CONFIRMADO: pagado
    /// ```
    code: "S005",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    // Where the machine's facts have no place, the note of
    // `event-without-id` names its events and where to declare them.
    if fact_note::undeclared(m).is_some() {
        return;
    }
    for t in &m.transitions {
        let Trigger::Event(descriptor) = &t.trigger else {
            continue;
        };
        for pattern in &descriptor.patterns {
            let EventPattern::Exact(name) = pattern else {
                continue;
            };
            let own = cx
                .graph
                .events
                .get(name)
                .is_some_and(|e| {
                    !cx.graph.events.is_external(e) || cx.graph.events.is_completion(e)
                });
            if own || m.events.contains_key(name) {
                continue;
            }
            let declared: Vec<&str> = m.events.keys().map(String::as_str).collect();
            let close = crate::diagnostic::did_you_mean(name, declared);
            let place = fact_note::xstate_place(m, "events", name, &[("id", "FIELD")]);
            let help = match (close, &place) {
                (Some(close), _) => format!("did you mean `{close}`?"),
                (None, Some(place)) => format!("declare it with its `id` field {place}"),
                (None, None) => format!("declare it under `events:` with its `id` field: `{name}: {{ id: FIELD }}`"),
            };
            let declared_where = if place.is_some() {
                "in `meta.idemchart.events` or idemchart.toml"
            } else {
                "under `events:`"
            };
            // Declaring a likely typo would keep it: only a name close to no
            // declared one is declared. A declaration without payload or id
            // changes nothing the interpreter does.
            let fix = cx
                .editor()
                .filter(|_| close.is_none())
                .and_then(|e| e.declare_event(name))
                .map(|edits| Fix::safe_edits(format!("declare event `{name}`"), edits));
            cx.report(Finding {
                lint: Lint::UndeclaredEvent,
                span: t.span,
                state: t.source,
                message: format!("event `{name}` is not declared {declared_where} and the machine does not raise it"),
                labels: Vec::new(),
                help: Some(help),
                witness: None,
                claim: None,
                fix,
            });
        }
    }
}
