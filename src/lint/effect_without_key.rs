use super::{Cx, Finding, Lint, Stage, Witness, WitnessStep, analysis};
use crate::graph::{Cost, Edge};
use crate::model::{Action, Idempotency, StateId, TransitionId, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags every effect with `idempotency: none`, and every host action (a
    /// name that is not a declared effect, whose idempotency is unknown), in
    /// a transition, entry or exit that a run of the machine can reach. The
    /// witness shows the shortest run that performs it, then a repeat of the
    /// delivery that did; the replay tells whether the machine itself keeps
    /// that repeat from performing it again.
    ///
    /// ### Why is this bad?
    ///
    /// Internal deduplication protects the state, not an effect whose
    /// acknowledgement was lost. The outbox retries with an idempotency key;
    /// a receiver that ignores keys acts twice.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// effects:
    ///   cobrar: { idempotency: none }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Use a receiver that honours keys (`idempotency: key`); where there is
    /// none, name a `verify` state that asks before any retry, and `allow`
    /// this lint in the state with the reason:
    ///
    /// ```yaml
    /// effects:
    ///   cobrar: { idempotency: none, verify: verificando }
    /// ```
    code: "I005",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if !cx.transition_reachable(tid) {
            continue;
        }
        for action in &t.actions {
            if let Some(message) = unkeyed(cx, action) {
                let witness = transition_witness(cx, tid);
                report(cx, action, t.source, message, witness);
            }
        }
    }
    for s in m.state_ids() {
        if !cx.reachable(s) {
            continue;
        }
        let state = m.state(s);
        for action in &state.entry {
            if let Some(message) = unkeyed(cx, action) {
                let witness = entry_witness(cx, s);
                report(cx, action, s, message, witness);
            }
        }
        for action in &state.exit {
            if let Some(message) = unkeyed(cx, action) {
                let witness = exit_witness(cx, s);
                report(cx, action, s, message, witness);
            }
        }
    }
}

fn unkeyed(cx: &Cx, action: &Action) -> Option<String> {
    let (name, idempotency) = analysis::effect_idempotency(cx.machine, action)?;
    match (action, idempotency) {
        (Action::Host { .. }, _) => Some(format!(
            "host action `{name}` is not a declared effect, so nothing says what a repeat does"
        )),
        (_, Idempotency::None) => Some(format!(
            "effect `{name}` has `idempotency: none`: performing it again acts twice"
        )),
        _ => None,
    }
}

fn report(cx: &mut Cx, action: &Action, state: StateId, message: String, witness: Option<Witness>) {
    let help = match action {
        Action::Host { name, .. } => format!(
            "declare `{}` under `effects:` with the idempotency its receiver has",
            name.text
        ),
        _ => "use a receiver that honours idempotency keys (`idempotency: key`); where there is none, name a `verify` state and `allow` this lint with the reason".to_string(),
    };
    cx.report(Finding {
        lint: Lint::EffectWithoutKey,
        span: action.span(),
        state,
        message,
        labels: Vec::new(),
        help: Some(help),
        witness,
        claim: None,
    });
}

/// A run that takes the transition, then repeats the delivery that took it
/// (or the last one before it, for an eventless or delayed transition).
fn transition_witness(cx: &Cx, t: TransitionId) -> Option<Witness> {
    if matches!(cx.machine.transition(t).trigger, Trigger::Event(_))
        && let Some(event) = cx
            .graph
            .trigger_events(t)
            .iter()
            .copied()
            .find(|&e| cx.graph.events.is_external(e))
        && let Some(w) = cx.repeat_witness(t, event)
    {
        return Some(w);
    }
    let (steps, _) = cx.taking(t, None)?;
    cx.repeat_last(steps)
}

/// The shortest run that enters the state after some delivery, then a
/// repeat of the last delivery (that of the transition that entered it, when
/// that was a delivered event).
pub(super) fn entry_witness(cx: &Cx, s: StateId) -> Option<Witness> {
    let target = cx.graph.enter(s);
    let found = cx.after_delivery(
        |t| match cx.graph.cost(Edge::Transition(t)) {
            Cost::Event(event) => Some(event),
            _ => None,
        },
        |node| node == target,
    );
    // Without a search left: the shortest entry, whatever delivered.
    let steps = match found {
        Some((steps, _)) => steps,
        None => cx.prefix(target)?,
    };
    let last = Cx::last_delivery(&steps)?;
    if last == steps.len() - 1
        && let WitnessStep::Event {
            event,
            transition: Some(t),
        } = steps[last]
        && let Some(w) = cx.repeat_witness(t, event)
    {
        return Some(w);
    }
    Some(Witness {
        steps,
        end: super::WitnessEnd::Repeat(last),
    })
}

/// The shortest run that leaves the state by a delivered event, then a
/// repeat of that delivery.
pub(super) fn exit_witness(cx: &Cx, s: StateId) -> Option<Witness> {
    let m = cx.machine;
    std::iter::once(s)
        .chain(m.ancestors(s))
        .flat_map(|a| m.state(a).on.iter().copied())
        .filter(|&t| {
            cx.graph
                .domain(t)
                .is_some_and(|d| cx.graph.is_strict_descendant(s, d))
        })
        .find_map(|t| {
            let Cost::Event(event) = cx.graph.cost(Edge::Transition(t)) else {
                return None;
            };
            cx.repeat_witness(t, event)
        })
}
