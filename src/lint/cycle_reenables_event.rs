use std::collections::HashMap;

use super::{Cx, Finding, Lint, Stage, Witness, WitnessEnd};
use crate::diagnostic::Label;
use crate::graph::EventId;
use crate::model::{TransitionId, Trigger};

/// The other transitions of the cycle on the event that a finding labels,
/// at most.
const MAX_OTHER_PLACES: usize = 8;

declare_lint! {
    /// ### What it does
    ///
    /// Flags an event `E` taken by a transition `S –E→ T` that lies on a
    /// cycle: other events lead from `T` back to `S`, where `E` is taken
    /// again. One finding per event and cycle (strongly connected part of
    /// the transition graph), at its first transition in document order;
    /// the witness stops at the first state of the cycle where the late
    /// repeat is accepted, which is `S` or a state on the way back to it.
    /// Transitions whose repeat is stopped by an identity guard are not
    /// flagged, nor a pure re-entry of the source (see
    /// `reentry-reruns-actions`), nor one whose repeat is accepted at once
    /// (see `self-accepting-event`). Where the same run shows a
    /// `retry-without-verification` at the same place (a retry after an
    /// error is taken again after the cycle), the two are one finding, that
    /// one, whose message says both.
    ///
    /// ### Why is this bad?
    ///
    /// After the cycle the event is legal again, so a late duplicate (one
    /// delivered after the deduplication window, or by a sender that
    /// retries for days) is applied a second time: a refund followed by
    /// an old payment notice marks the order paid and ships it again.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// pendiente:
    ///   on:
    ///     PAGO_CONFIRMADO: { target: pagado, actions: [encolarEnvio] }
    /// pagado:
    ///   on:
    ///     REEMBOLSO: pendiente
    /// ```
    ///
    /// ### Use instead
    ///
    /// Guard the event by identity, so that a payment already applied is
    /// recognised however late it comes back:
    ///
    /// ```yaml
    /// pendiente:
    ///   on:
    ///     PAGO_CONFIRMADO:
    ///       target: pagado
    ///       guard: "!(event.pagoId in context.pagosVistos)"
    ///       actions:
    ///         - assign: { pagosVistos: "context.pagosVistos + [event.pagoId]" }
    ///         - encolarEnvio
    /// ```
    code: "I003",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    // Transitions on each event and cycle, in document order.
    let mut groups: Vec<((EventId, u32), Vec<TransitionId>)> = Vec::new();
    let mut group_of: HashMap<(EventId, u32), usize> = HashMap::new();
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if !matches!(t.trigger, Trigger::Event(_))
            || cx.graph.targets(tid).is_empty()
            || (t.reenter && cx.graph.targets(tid) == [t.source])
            || !cx.transition_reachable(tid)
            || !cx.on_cycle(tid)
        {
            continue;
        }
        for &event in cx.graph.trigger_events(tid) {
            if !cx.graph.events.is_redeliverable(event) {
                continue;
            }
            let Some(leaf) = cx.selecting_leaf(tid, Some(event)) else {
                continue;
            };
            if cx.immediate_acceptor(tid, event).is_some() {
                continue;
            }
            // Back where it was taken, would the repeat be accepted there?
            let first = cx.first_delivery(tid, event);
            if cx
                .accepting(cx.graph.handlers(leaf, event), leaf, &first)
                .is_none()
            {
                continue;
            }
            let component = cx.components[cx.graph.at(t.source).index()];
            let key = (event, component);
            let slot = *group_of.entry(key).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            groups[slot].1.push(tid);
        }
    }
    for ((event, _), transitions) in groups {
        let found = transitions
            .iter()
            .find_map(|&t| cx.cycle_back(t, event).map(|back| (t, back)));
        let Some((primary, (back, acceptor))) = found else {
            continue;
        };
        let t = m.transition(primary);
        let name = cx.graph.events.name(event).to_string();
        let mut labels = Vec::new();
        if acceptor.handler != primary {
            labels.push(Label {
                span: m.transition(acceptor.handler).span,
                message: format!("the late repeat of `{name}` is accepted here"),
            });
        }
        // A few of the other places, not every one: a cycle through a
        // thousand states would print a thousand labels (and its snippet
        // would cost the renderer time in the square of them).
        let others: Vec<TransitionId> = (transitions.iter().copied())
            .filter(|&other| other != primary && other != acceptor.handler)
            .collect();
        let shown = others.len().min(MAX_OTHER_PLACES);
        for (i, &other) in others[..shown].iter().enumerate() {
            let more = others.len() - shown;
            let message = if i + 1 == shown && more > 0 {
                format!("`{name}` is taken on the same cycle here too, and at {more} more places")
            } else {
                format!("`{name}` is taken on the same cycle here too")
            };
            labels.push(Label {
                span: m.transition(other).span,
                message,
            });
        }
        let target = t
            .targets
            .first()
            .map(|x| m.display_name(x.state).to_string())
            .unwrap_or_default();
        let back_home = cx.graph.contains(t.source, acceptor.leaf);
        let message = if back_home {
            format!(
                "`{name}` is accepted again after a cycle: from `{target}` other events lead back to `{}`, so a late repeat is applied again",
                m.display_name(acceptor.leaf)
            )
        } else {
            format!(
                "`{name}` is accepted again on a cycle: from `{target}` other events lead to `{}`, which accepts a late repeat, and on back to `{}`",
                m.display_name(acceptor.leaf),
                m.display_name(t.source)
            )
        };
        let witness = cx.taking(primary, Some(event)).and_then(|(mut steps, taken)| {
            let taken = taken?;
            steps.extend(back);
            Some(Witness {
                steps,
                end: WitnessEnd::Repeat(taken),
            })
        });
        cx.report(Finding {
            lint: Lint::CycleReenablesEvent,
            span: t.span,
            state: t.source,
            message,
            labels,
            help: Some(format!(
                "guard `{name}` with {}, so a repeat is recognised however late",
                cx.identity_guard(event).advice()
            )),
            witness,
            claim: Some(super::Claim {
                event,
                taking: transitions.clone(),
                shape: super::Shape::Later,
                effect: None,
            }),
            fix: None,
        });
    }
}
