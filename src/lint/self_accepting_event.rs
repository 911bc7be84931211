use super::{Cx, Finding, Lint, Stage};
use crate::diagnostic::Label;

declare_lint! {
    /// ### What it does
    ///
    /// Flags a transition on an event `E` that leads to a configuration where
    /// `E` is accepted again: by the target, by an ancestor's handler (which
    /// applies in every descendant, behind the descendant's own), by a
    /// default-entered child, or by a region that the transition enters. It
    /// counts only when taking `E` again would change the configuration,
    /// change the context or emit an effect, and no identity guard stops it.
    /// Where the harm the same run shows is a `cumulative-update` of that
    /// transition, the two are one finding, that one, whose message says both.
    ///
    /// ### Why is this bad?
    ///
    /// Senders redeliver. When the state an event leads to does not accept
    /// that event, a second delivery finds no transition and is dropped: the
    /// graph protects itself. This transition gives that protection up, so a
    /// redelivered `E` is applied twice.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// pendiente:
    ///   on:
    ///     PAGO_CONFIRMADO: { target: pagado, actions: [encolarEnvio] }
    /// pagado:
    ///   on:
    ///     PAGO_CONFIRMADO: { actions: [encolarEnvio] }   # the repeat queues again
    /// ```
    ///
    /// ### Use instead
    ///
    /// Drop the handler in the target, or guard it by identity, recording the
    /// id in the same `assign`:
    ///
    /// ```yaml
    /// pagado:
    ///   on:
    ///     PAGO_CONFIRMADO:
    ///       guard: "!(event.pagoId in context.pagosVistos)"
    ///       actions:
    ///         - assign: { pagosVistos: "context.pagosVistos + [event.pagoId]" }
    ///         - encolarEnvio
    /// ```
    code: "I001",
    severity: Warning,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for (tid, t) in cx.reachable_event_transitions() {
        for &event in cx.graph.trigger_events(tid) {
            if !cx.graph.events.is_redeliverable(event) || cx.selecting_leaf(tid, Some(event)).is_none() {
                continue;
            }
            let Some(acceptor) = cx.immediate_acceptor(tid, event) else {
                continue;
            };
            let name = cx.graph.events.name(event);
            let handler = m.transition(acceptor.handler);
            let mut message = if acceptor.handler == tid {
                format!("a repeated `{name}` takes this transition again")
            } else {
                format!(
                    "after this transition a repeated `{name}` is accepted again in `{}`",
                    m.display_name(acceptor.leaf)
                )
            };
            let mut labels = Vec::new();
            // An ancestor's handler leading back into the active leaf exits
            // and re-enters it: say what that re-runs.
            let rerun = cx.reentered_inside(acceptor.handler, acceptor.leaf);
            if !rerun.is_empty() {
                let mut states: Vec<String> = Vec::new();
                let mut whats: Vec<String> = Vec::new();
                for (s, entry, action, what) in &rerun {
                    let state = format!("`{}`", m.display_name(*s));
                    labels.push(Label {
                        span: action.span(),
                        message: format!(
                            "{} of {state} runs this again",
                            if *entry { "entry" } else { "exit" }
                        ),
                    });
                    if !states.contains(&state) {
                        states.push(state);
                    }
                    if !whats.contains(what) {
                        whats.push(what.clone());
                    }
                }
                states.reverse();
                message.push_str(&format!(
                    ", which exits and re-enters {} and runs {} again",
                    states.join(", "),
                    whats.join(", ")
                ));
            }
            if acceptor.handler != tid {
                let whose = if handler.source == acceptor.leaf {
                    "the repeat is accepted here".to_string()
                } else {
                    format!(
                        "the repeat is accepted here, by `{}`'s handler",
                        m.display_name(handler.source)
                    )
                };
                labels.push(Label {
                    span: handler.span,
                    message: whose,
                });
            }
            let advice = cx.identity_guard(event).advice();
            let help = if handler.guard.is_some() {
                format!("its guard does not tell a repeat from a new delivery: guard it with {advice}")
            } else {
                format!("remove the handler where the event leads, or guard it with {advice}")
            };
            // A leaf that only history restores must have been active before.
            let restored = !cx.graph.targets(tid).is_empty()
                && !cx.graph.leaves_after(tid, false).contains(&acceptor.leaf);
            let witness = if restored {
                cx.witness_through(acceptor.leaf, tid, event)
            } else {
                cx.taking(tid, Some(event)).and_then(|(steps, taken)| {
                    Some(super::Witness {
                        steps,
                        end: super::WitnessEnd::Repeat(taken?),
                    })
                })
            };
            cx.report(Finding {
                lint: Lint::SelfAcceptingEvent,
                span: t.span,
                state: t.source,
                message,
                labels,
                help: Some(help),
                witness,
                claim: Some(super::Claim {
                    event,
                    taking: vec![tid],
                    shape: super::Shape::Immediate,
                    effect: None,
                }),
                fix: None,
            });
            break;
        }
    }
}
