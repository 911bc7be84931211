use super::{Cx, Finding, Lint, Stage};
use crate::diagnostic::Label;
use crate::graph::EventId;
use crate::model::{EventPattern, Machine, StateId, TransitionId, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a transition of a state that is never taken because an
    /// earlier unguarded transition of the same state handles every event
    /// it handles (or, for `always`, because an earlier unguarded `always`
    /// exists), or because every state inside it handles those events first
    /// with an unguarded transition of its own. Transitions are tried from
    /// the active atomic states outwards, each state's in document order,
    /// and the first enabled one wins. A wildcard or prefix (`*`, `foo.*`)
    /// counts as shadowed only where earlier patterns cover it, since it
    /// also matches events the machine never names.
    ///
    /// ### Why is this bad?
    ///
    /// The later transition is dead code, usually because its guard was
    /// meant for the earlier one.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// on:
    ///   RESUELTO:
    ///     - target: fallido
    ///     - target: cobrado
    ///       guard: "event.cobrado"
    /// ```
    ///
    /// ### Use instead
    ///
    /// Put the guarded transition first:
    ///
    /// ```yaml
    /// on:
    ///   RESUELTO:
    ///     - target: cobrado
    ///       guard: "event.cobrado"
    ///     - target: fallido
    /// ```
    code: "S003",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for s in m.state_ids() {
        let state = m.state(s);
        for &t in &state.on {
            let events = cx.graph.trigger_events(t);
            if events.is_empty() {
                continue;
            }
            // The earliest unguarded transition before `t` for each of its events.
            let winners: Vec<Option<TransitionId>> = events
                .iter()
                .map(|&e| {
                    cx.graph
                        .own_handlers(s, e)
                        .take_while(|&h| h != t)
                        .find(|&h| m.transition(h).guard.is_none())
                })
                .collect();
            if winners.iter().all(Option::is_some)
                && covered_before(m, &state.on, t)
                && let Some(Some(winner)) = winners.first()
            {
                report(cx, t, *winner, Shadow::Earlier);
                continue;
            }
            // A wildcard or prefix may also match events the machine never
            // names, which no state inside handles; only exact names are
            // known to be caught inside.
            if !only_exact_names(m, t) {
                continue;
            }
            // The first event's handler inside, when every event has one.
            let inner: Option<Vec<TransitionId>> = events
                .iter()
                .map(|&e| handled_inside(cx, s, e))
                .collect();
            if let Some(&winner) = inner.as_deref().and_then(<[_]>::first) {
                report(cx, t, winner, Shadow::Inside);
            }
        }
        if let Some(&first) = state
            .always
            .iter()
            .find(|&&t| m.transition(t).guard.is_none())
        {
            for &t in state.always.iter().skip_while(|&&t| t != first).skip(1) {
                report(cx, t, first, Shadow::Earlier);
            }
        }
    }
}

/// An unguarded transition for `event` that is selected before any of
/// `state`'s own, whichever of its children is active: one of every child,
/// or of every region of a parallel state. `None` when some child may let
/// the event through to `state` (an atomic or final child without such a
/// transition, or one whose handlers are guarded).
fn handled_inside(cx: &Cx, state: StateId, event: EventId) -> Option<TransitionId> {
    let m = cx.machine;
    let mut first = None;
    for child in m.substates(state) {
        let own = cx
            .graph
            .own_handlers(child, event)
            .find(|&h| m.transition(h).guard.is_none());
        let winner = own.or_else(|| handled_inside(cx, child, event))?;
        first.get_or_insert(winner);
    }
    first
}

/// Whether the wildcards and prefixes of `t`'s descriptor are covered by
/// the patterns of unguarded transitions before it in `on`: they also match
/// events the machine never names, which the per-event check cannot see.
fn covered_before(m: &Machine, on: &[TransitionId], t: TransitionId) -> bool {
    let Trigger::Event(descriptor) = &m.transition(t).trigger else {
        return false;
    };
    let earlier: Vec<&EventPattern> = on
        .iter()
        .take_while(|&&h| h != t)
        .filter(|&&h| m.transition(h).guard.is_none())
        .filter_map(|&h| match &m.transition(h).trigger {
            Trigger::Event(d) => Some(&d.patterns),
            _ => None,
        })
        .flatten()
        .collect();
    descriptor
        .patterns
        .iter()
        .filter(|p| !matches!(p, EventPattern::Exact(_)))
        .all(|p| earlier.iter().any(|q| q.covers(p)))
}

/// Whether every pattern of `t`'s event descriptor is an exact name.
fn only_exact_names(m: &Machine, t: TransitionId) -> bool {
    match &m.transition(t).trigger {
        Trigger::Event(descriptor) => descriptor
            .patterns
            .iter()
            .all(|p| matches!(p, EventPattern::Exact(_))),
        _ => false,
    }
}

/// Why a transition is never taken.
enum Shadow {
    /// An earlier transition of the same state always wins.
    Earlier,
    /// Every state inside the source handles the event first.
    Inside,
}

fn report(cx: &mut Cx, t: TransitionId, winner: TransitionId, shadow: Shadow) {
    let m = cx.machine;
    let (message, label, help) = match shadow {
        Shadow::Earlier => (
            "this transition is never taken: an earlier unguarded one always wins".to_string(),
            "this one is tried first and always enabled",
            "put the guarded transitions first, or remove this one",
        ),
        Shadow::Inside => (
            format!(
                "this transition is never taken: every state inside `{}` handles its events first, unguarded",
                m.display_name(m.transition(t).source)
            ),
            "for example this one, which is tried before the enclosing state's",
            "guard the inner transitions, or remove this one",
        ),
    };
    cx.report(Finding {
        lint: Lint::ShadowedTransition,
        span: m.transition(t).span,
        state: m.transition(t).source,
        message,
        labels: vec![Label {
            span: m.transition(winner).span,
            message: label.into(),
        }],
        help: Some(help.into()),
        witness: None,
        claim: None,
        fix: None,
    });
}
