use super::{Cx, Finding, Lint, Stage};
use crate::diagnostic::Label;
use crate::graph::EventId;
use crate::model::{StateId, TransitionId};

declare_lint! {
    /// ### What it does
    ///
    /// Flags a declared event that the machine accepts somewhere when its
    /// declaration names no `id` field.
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

fn check(cx: &mut Cx) {
    let m = cx.machine;
    for (name, decl) in &m.events {
        if decl.id_field.is_some() {
            continue;
        }
        let Some(event) = cx.graph.events.get(name) else {
            continue;
        };
        let Some(t) = nearest_handler(cx, event) else {
            continue;
        };
        let witness = cx.repeat_witness(t, event);
        cx.report(Finding {
            lint: Lint::EventWithoutId,
            span: decl.span,
            state: StateId::ROOT,
            message: format!(
                "event `{name}` declares no `id` field, so a repeat cannot be told from a new delivery"
            ),
            labels: vec![Label {
                span: m.transition(t).span,
                message: format!("`{name}` is accepted here"),
            }],
            help: Some(format!(
                "add `id: FIELD` to `{name}`, naming the payload field its sender fills with a stable id"
            )),
            witness,
            claim: None,
        });
    }
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
