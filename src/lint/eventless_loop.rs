use std::collections::BTreeMap;

use super::{Cx, Finding, Lint, Stage, analysis};
use crate::diagnostic::Label;
use crate::model::{TransitionId, Trigger};

declare_lint! {
    /// ### What it does
    ///
    /// Flags `always` transitions that can cycle without end: a cycle of
    /// eventless moves (through targets, default entry and ancestors) on
    /// which no guard reads a context field that the cycle's actions or
    /// entry and exit actions write, nor asks `in_state`; and a targetless
    /// `always` whose guard its own actions cannot make false.
    ///
    /// ### Why is this bad?
    ///
    /// Eventless transitions are taken until none is enabled. If a guard
    /// that let the cycle start cannot change, the machine never reaches a
    /// stable configuration and never takes the next event.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// a: { always: b }
    /// b: { always: a }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Guard one of the moves on something the cycle changes, or let an
    /// event drive one of them:
    ///
    /// ```yaml
    /// a: { always: { target: b, guard: "context.pendientes > 0" } }
    /// b:
    ///   always:
    ///     target: a
    ///     actions: [ { assign: { pendientes: "context.pendientes - 1" } } ]
    /// ```
    code: "S006",
    severity: Error,
    stage: Stage::Model(check),
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    let components = cx.graph.eventless_components();
    // The `always` transitions inside each eventless cycle, in document order.
    let mut cycles: BTreeMap<u32, Vec<TransitionId>> = BTreeMap::new();
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if t.trigger != Trigger::Always || !cx.transition_reachable(tid) {
            continue;
        }
        if cx.graph.targets(tid).is_empty() {
            let mut read = Vec::new();
            let in_state = t.guard.as_ref().is_some_and(|g| analysis::reads(g, &mut read));
            let mut written = Vec::new();
            analysis::writes(&t.actions, &mut written);
            if !in_state && !read.iter().any(|f| written.contains(f)) {
                cx.report(Finding {
                    lint: Lint::EventlessLoop,
                    span: t.span,
                    state: t.source,
                    message: "this targetless `always` is taken again and again: nothing it does can make its guard false".into(),
                    labels: Vec::new(),
                    help: Some("guard it on a field its actions change, or give it a target".into()),
                    witness: None,
                    claim: None,
                });
            }
            continue;
        }
        let from = cx.graph.at(t.source).index();
        if cx
            .transition_targets(tid)
            .iter()
            .any(|n| components[n.index()] == components[from])
        {
            cycles.entry(components[from]).or_default().push(tid);
        }
    }
    for (component, transitions) in cycles {
        let mut read = Vec::new();
        let mut in_state = false;
        let mut written = Vec::new();
        for &t in &transitions {
            let t = m.transition(t);
            if let Some(g) = &t.guard {
                in_state |= analysis::reads(g, &mut read);
            }
            analysis::writes(&t.actions, &mut written);
        }
        for (i, c) in components.iter().enumerate() {
            if *c == component {
                let s = cx.graph.node_state(petgraph::graph::NodeIndex::new(i));
                analysis::writes(&m.state(s).entry, &mut written);
                analysis::writes(&m.state(s).exit, &mut written);
            }
        }
        if in_state || read.iter().any(|f| written.contains(f)) {
            continue;
        }
        let first = m.transition(transitions[0]);
        let labels = transitions[1..]
            .iter()
            .map(|&t| Label {
                span: m.transition(t).span,
                message: "and this one, on the same cycle".into(),
            })
            .collect();
        cx.report(Finding {
            lint: Lint::EventlessLoop,
            span: first.span,
            state: first.source,
            message: "these `always` transitions can cycle without end: no guard on the cycle reads anything the cycle changes".into(),
            labels,
            help: Some("guard one of them on a field the cycle changes, or let an event drive one of the moves".into()),
            witness: None,
            claim: None,
        });
    }
}
