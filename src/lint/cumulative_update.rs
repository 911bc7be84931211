use super::analysis::{BlockUpdates, Update};
use super::{Cx, Finding, Lint, Stage, Witness, analysis};
use crate::diagnostic::Label;
use crate::diagnostic::Fix;
use crate::graph::{Edge, EventId, Node};
use crate::model::{Action, StateId, Transition};

declare_lint! {
    /// ### What it does
    ///
    /// Flags an `assign` on a transition taken by a delivered event whose
    /// new value, when the same event is applied twice, differs from the one
    /// it gave once: a running total, a counter, an append of the event's
    /// data. It does not count when the transition has an identity guard: a
    /// guard `!(event.ID in context.SEEN)` together with an assign that adds
    /// `event.ID` to the same `SEEN`. A guard on one set with an append to
    /// another does not count. Entry and exit actions see the event too: an
    /// update there that reads the event is flagged unless every transition
    /// that enters the state has an identity guard.
    ///
    /// An update applied twice gives what it gave once, and is not flagged,
    /// when its value is a constant (`ready: "true"`), a copy of the event
    /// (`status: "event.status"`), a field that the same actions do not
    /// change, a map of such values and of the old values at the same keys
    /// (`{"name": event.name, "phone": context.profile.phone}`), a
    /// conditional on the event choosing between them
    /// (`has(event.x) ? event.x : context.x`), a maximum or minimum
    /// (`event.bid > context.best ? event.bid : context.best`), a first
    /// write (`context.x == null ? event.x : context.x`), or an append
    /// guarded by membership (`event.id in context.ids ? context.ids :
    /// context.ids + [event.id]`). The fields of one `assign` read the
    /// context before it; a later `assign` reads what an earlier one wrote.
    /// An update of another shape that reads what the actions change is
    /// flagged, and the replay decides.
    ///
    /// ### Why is this bad?
    ///
    /// The graph can protect the configuration, never the context. A
    /// counter cannot know whether it already added an amount, so a
    /// redelivered event adds it twice. A set of seen ids can.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// abierto:
    ///   on:
    ///     COBRO_PARCIAL:
    ///       actions:
    ///         - assign: { cobrado: "context.cobrado + event.importe" }
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// abierto:
    ///   on:
    ///     COBRO_PARCIAL:
    ///       guard: "!(event.cobroId in context.cobrosVistos)"
    ///       actions:
    ///         - assign:
    ///             cobrosVistos: "context.cobrosVistos + [event.cobroId]"
    ///             cobrado: "context.cobrado + event.importe"
    /// ```
    code: "I004",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    check_transitions(cx);
    check_states(cx);
}

fn check_transitions(cx: &mut Cx) {
    for (tid, t) in cx.reachable_event_transitions() {
        let external: Vec<_> = cx
            .graph
            .trigger_events(tid)
            .iter()
            .copied()
            .filter(|&e| cx.graph.events.is_redeliverable(e))
            .collect();
        if external.is_empty() {
            continue;
        }
        let marks = cx.facts[tid.index()].marks.clone();
        let protected = external.iter().all(|&e| {
            analysis::protected_by(t.guard.as_ref(), &marks, cx.decl(e)).is_some()
        });
        if protected {
            continue;
        }
        let tested: Vec<String> = cx.facts[tid.index()]
            .identity
            .iter()
            .map(|(_, set)| set.clone())
            .collect();
        let updates = BlockUpdates::of(&t.actions);
        // One fix for the transition, so that its findings share it and it
        // is applied once.
        let fix = match tested.first() {
            None => identity_fix(cx, t, &updates, &external),
            Some(_) => None,
        };
        for action in &t.actions {
            let Action::Assign { fields, .. } = action else {
                continue;
            };
            for (field, assignment) in fields {
                let class = updates.class(field);
                if class == Update::Idempotent {
                    continue;
                }
                let help = match tested.first() {
                    Some(set) if !marks.iter().any(|(_, s)| s == set) => format!(
                        "the guard tests `{set}`, but no assign here adds the event's id to `{set}`: record it in the set the guard tests"
                    ),
                    Some(set) => format!(
                        "the guard tests `{set}` with a field that is not the event's id: test the declared `id` field"
                    ),
                    None => format!(
                        "guard the transition with {}",
                        cx.identity_guard(external[0]).advice()
                    ),
                };
                let witness = cx.repeat_witness(tid, external[0]);
                cx.report(Finding {
                    lint: Lint::CumulativeUpdate,
                    span: assignment.span,
                    state: t.source,
                    message: format!(
                        "`{field}` is {} without an identity guard: {}",
                        derivation(class, &assignment.expr),
                        consequence(class, "a repeat")
                    ),
                    labels: vec![Label {
                        span: t.span,
                        message: "on this transition".into(),
                    }],
                    help: Some(help),
                    witness,
                    claim: Some(super::Claim {
                        event: external[0],
                        taking: vec![tid],
                        shape: super::Shape::Any,
                        effect: None,
                    }),
                    fix: fix.clone(),
                });
            }
        }
    }
}

/// The identity guard the help describes, as a fix: the set of seen ids in
/// the context (added as an empty list when it is new), the membership test
/// as the guard (or its first conjunct), and the id appended to the set in
/// the assign of the first update that a repeat would apply again. Offered
/// when every event of the transition declares the same `id` field, which
/// is what the runtime tells deliveries apart by.
fn identity_fix(
    cx: &Cx,
    t: &Transition,
    updates: &BlockUpdates,
    external: &[EventId],
) -> Option<Fix> {
    let editor = cx.editor()?;
    let id_field = |&e: &EventId| cx.decl(e)?.id_field.as_ref().map(|f| f.text.as_str());
    let first = id_field(external.first()?)?;
    if !external.iter().all(|e| id_field(e) == Some(first)) {
        return None;
    }
    let guard = cx.identity_guard(external[0]);
    let (id, set) = (&guard.id, &guard.set);
    let mut edits = Vec::new();
    match cx.machine.context.get(set) {
        Some(field) if field.value.is_array() => {}
        Some(_) => return None,
        None => edits.extend(editor.add_context_list(set)?),
    }
    let test = format!("!({id} in context.{set})");
    edits.extend(editor.add_guard(t.span, &test)?);
    let assign = t.actions.iter().find_map(|action| match action {
        Action::Assign { fields, .. }
            if fields.keys().any(|f| updates.class(f) != Update::Idempotent) =>
        {
            fields.values().next().map(|first| first.span)
        }
        _ => None,
    })?;
    edits.extend(editor.add_assign_field(assign, set, &format!("context.{set} + [{id}]"))?);
    // The guard drops repeats, and every delivery with an id already seen:
    // what the author wants, but not what the machine did.
    Some(Fix::unsafe_edits(
        format!("guard the transition with {}", guard.advice()),
        edits,
    ))
}

/// What a non-idempotent update is computed from, for the message.
fn derivation(class: Update, expr: &crate::expr::Expr) -> &'static str {
    match (class, analysis::reads_event(expr)) {
        (Update::Cumulative, true) => "derived from its old value and the event",
        (Update::Cumulative, false) => "derived from its old value",
        (_, true) => "computed from the event and context that this update changes",
        (_, false) => "computed from context that this update changes",
    }
}

/// What a repeat does to a cumulative update, or may do to one that the
/// analysis cannot decide.
fn consequence(class: Update, repeat: &str) -> String {
    match class {
        Update::Cumulative => format!("{repeat} applies it twice"),
        _ => format!("{repeat} may give it another value"),
    }
}

/// Cumulative updates in entry and exit actions, which run with the event
/// that entered or left the state.
fn check_states(cx: &mut Cx) {
    let m = cx.machine;
    for s in m.state_ids() {
        if !cx.reachable(s) {
            continue;
        }
        let state = m.state(s);
        for (actions, entry) in [(&state.entry, true), (&state.exit, false)] {
            let updates = BlockUpdates::of(actions);
            for action in actions {
                let Action::Assign { fields, .. } = action else {
                    continue;
                };
                for (field, assignment) in fields {
                    // An update that does not read the event counts entries
                    // or exits, whatever the event: a re-run is judged by
                    // `reentry-reruns-actions`.
                    let class = updates.class(field);
                    if class == Update::Idempotent
                        || !analysis::reads_event(&assignment.expr)
                        || (entry && entered_only_by_identity(cx, s))
                    {
                        continue;
                    }
                    let witness: Option<Witness> = if entry {
                        super::effect_without_key::entry_witness(cx, s)
                    } else {
                        super::effect_without_key::exit_witness(cx, s)
                    };
                    let when = if entry { "entry" } else { "exit" };
                    cx.report(Finding {
                        lint: Lint::CumulativeUpdate,
                        span: assignment.span,
                        state: s,
                        message: format!(
                            "`{field}` is {} in the {when} of `{}`: {}",
                            derivation(class, &assignment.expr),
                            m.display_name(s),
                            consequence(class, "a repeat that runs it again")
                        ),
                        labels: Vec::new(),
                        help: Some(format!(
                            "move the update onto the transitions that {} `{}`, each guarded by its event's id with the id added to the guarded set in the same assign",
                            if entry { "enter" } else { "leave" },
                            m.display_name(s)
                        )),
                        witness,
                        claim: None,
                        fix: None,
                    });
                }
            }
        }
    }
}

/// Whether every transition that can enter the state (targeting it, or a
/// state whose default entry leads into it) has an identity guard.
fn entered_only_by_identity(cx: &Cx, s: StateId) -> bool {
    use petgraph::visit::EdgeRef;
    let mut stack = vec![cx.graph.enter(s)];
    let mut seen = Vec::new();
    let mut any = false;
    while let Some(node) = stack.pop() {
        if seen.contains(&node) {
            continue;
        }
        seen.push(node);
        for e in cx.graph.steps.edges_directed(node, petgraph::Direction::Incoming) {
            match *e.weight() {
                Edge::Transition(t) => {
                    any = true;
                    let marks = &cx.facts[t.index()].marks;
                    let guard = cx.machine.transition(t).guard.as_ref();
                    let events = cx.graph.trigger_events(t);
                    let protected = !events.is_empty()
                        && events
                            .iter()
                            .all(|&ev| analysis::protected_by(guard, marks, cx.decl(ev)).is_some());
                    if !protected {
                        return false;
                    }
                }
                Edge::Default | Edge::History => {
                    if matches!(cx.graph.node(e.source()), Node::Enter(_)) {
                        stack.push(e.source());
                    }
                }
                Edge::Up | Edge::Sibling => {}
            }
        }
    }
    // The start enters the initial states without a delivery.
    any && !cx.graph.default_entered(StateId::ROOT).contains(&s)
}
