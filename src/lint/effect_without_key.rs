use indexmap::IndexMap;

use super::confirm::Replayer;
use super::{Cx, Finding, Lint, Stage, Witness, WitnessStep, analysis, fact_note};
use crate::diagnostic::Label;
use crate::graph::{Cost, Edge};
use crate::model::{Action, ForeignFormat, Idempotency, Machine, StateId, TransitionId, Trigger};
use crate::span::Span;

declare_lint! {
    /// ### What it does
    ///
    /// Flags every effect with `idempotency: none`, and every host action (a
    /// name that is not a declared effect, whose idempotency is unknown),
    /// that a transition, entry or exit reachable from the start performs,
    /// or that a reachable state invokes (`invoke: { src }`; an undeclared
    /// src is a host service).
    /// One finding per effect, at its declaration, with every place that
    /// performs it as a label; for a host action, which has no declaration,
    /// at its first use, the other uses as labels. A use in a state that
    /// `allow`s this lint is left out; with every use left out, there is no
    /// finding.
    ///
    /// The finding holds without a witness: an outbox that retries after a
    /// lost acknowledgement performs the effect again whatever the machine
    /// does. It carries one only when it shows harm in the machine itself:
    /// a run, replayed on the interpreter, in which a repeated delivery
    /// performs the effect a second time (`confirmed: true`). Where no use
    /// has such a run, the finding has no witness.
    ///
    /// A machine read from XState or SCXML in a repository that declares no
    /// facts gets one note instead, at its `id`, naming every such action
    /// and invoked actor and where their idempotency is declared
    /// (`idemchart.toml`'s `[machines.ID]`, `meta.idemchart`); once the
    /// repository declares facts, one finding per name, as above. An action
    /// or actor written in place is named by where it is (`the action
    /// written at src/cart.ts:46:20`), never by the name made up for it.
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

/// Where an action that performs an effect sits.
#[derive(Clone, Copy)]
enum Place {
    Transition(TransitionId),
    Entry(StateId),
    Exit(StateId),
    /// An invocation of the state, which starts when it is entered.
    Invoke(StateId),
}

/// One action or invocation that performs an unkeyed effect, a host
/// action or a host service.
struct Use {
    /// Where the action or invocation is written.
    span: Span,
    place: Place,
}

impl Use {
    /// The state whose `allow` covers the use.
    fn state(&self, m: &Machine) -> StateId {
        match self.place {
            Place::Transition(t) => m.transition(t).source,
            Place::Entry(s) | Place::Exit(s) | Place::Invoke(s) => s,
        }
    }

    fn witness(&self, cx: &Cx) -> Option<Witness> {
        match self.place {
            Place::Transition(t) => transition_witness(cx, t),
            Place::Entry(s) | Place::Invoke(s) => entry_witness(cx, s),
            Place::Exit(s) => exit_witness(cx, s),
        }
    }
}

fn check(cx: &mut Cx) {
    let m = cx.machine;
    let mut findings = Vec::new();
    for (name, mut uses) in uses(cx) {
        uses.retain(|u| !cx.allows(Lint::EffectWithoutKey, u.state(m), u.span));
        if uses.is_empty() {
            continue;
        }
        uses.sort_by_key(|u| u.span.start);
        findings.push((name, uses));
    }
    if findings.is_empty() {
        // Building a replayer compiles the whole machine: not for nothing.
        return;
    }
    if let Some(format) = fact_note::undeclared(m) {
        cx.report(undeclared_note(m, format, &findings));
        return;
    }
    let mut replayer = Replayer::new(cx);
    let reported: Vec<Finding> = findings
        .into_iter()
        .map(|(name, uses)| {
            let witness = uses.iter().find_map(|u| {
                let w = u.witness(cx)?;
                replayer
                    .performs_again(Lint::EffectWithoutKey, &w, name)
                    .then_some(w)
            });
            finding(m, name, &uses, witness)
        })
        .collect();
    drop(replayer);
    for f in reported {
        cx.report(f);
    }
}

/// The one note of a machine whose facts have no place: what it performs
/// or invokes whose idempotency nothing declares, as the author knows it
/// (by name, or where it is written).
fn undeclared_note(m: &Machine, format: ForeignFormat, found: &[(&str, Vec<Use>)]) -> Finding {
    let names: Vec<String> = found
        .iter()
        .map(|(name, uses)| {
            if uses.iter().all(|u| matches!(u.place, Place::Invoke(_))) {
                format!("{} (invoked)", m.host_name(name))
            } else {
                m.host_name(name)
            }
        })
        .collect();
    let list = fact_note::listed(&names);
    // The example names a part the author can declare by name, if any.
    let example = found
        .iter()
        .map(|(name, _)| *name)
        .find(|name| !m.is_stand_in(name))
        .unwrap_or("NAME");
    let mut note = fact_note::note(
        m,
        format,
        Lint::EffectWithoutKey,
        format!(
            "machine `{}` has no idempotency facts, so nothing says whether performing {list} again acts twice",
            m.name
        ),
        (
            "effects",
            example,
            &[("idempotency", "key")],
            "`idempotency` is `key` when its receiver recognises a repeated request by its idempotency key, `natural` when a repeat changes nothing, `none` when it acts twice",
        ),
    );
    if format == ForeignFormat::Xstate
        && found.iter().any(|(name, _)| m.is_stand_in(name))
        && let Some(help) = &mut note.help
    {
        help.push_str(&format!("; {IN_PLACE}"));
    }
    note
}

/// What an author does to declare the idempotency of code written in
/// place, which has no name to declare it by.
const IN_PLACE: &str = "an action or actor written in place has no name to declare it by: give it one in `setup({ actions })` or `setup({ actors })` (v4: the machine's options) and use it by that name";

/// The one finding of an effect or host action and its uses.
fn finding(m: &Machine, name: &str, uses: &[Use], witness: Option<Witness>) -> Finding {
    let places = match uses.len() {
        1 => String::new(),
        n => format!(" (performed in {n} places)"),
    };
    let shown = m.host_name(name);
    let (span, message, help, labelled) = match m.effects.get(name) {
        Some(decl) => (
            decl.span,
            format!(
                "effect `{name}` has `idempotency: none`: performing it again acts twice{places}"
            ),
            match fact_note::xstate_place(m, "effects", name, &[("idempotency", "none"), ("verify", "STATE")]) {
                Some(place) => format!(
                    "use a receiver that honours idempotency keys (`idempotency: 'key'`); where there is none, name a `verify` state {place} and allow this lint with the reason (`// idemchart-allow effect-without-key: REASON` above the state)"
                ),
                None => "use a receiver that honours idempotency keys (`idempotency: key`); where there is none, name a `verify` state and `allow` this lint with the reason".to_string(),
            },
            uses,
        ),
        None => {
            let kind = match uses[0].place {
                Place::Invoke(_) => "host service",
                _ => "host action",
            };
            // One written in place is named by its place, which says what
            // it is (`the action written at …`).
            let what = if m.is_stand_in(name) {
                shown.clone()
            } else {
                format!("{kind} {shown}")
            };
            let help = match fact_note::xstate_place(m, "effects", name, &[("idempotency", "key")]) {
                Some(_) if m.is_stand_in(name) => format!(
                    "{IN_PLACE}, then declare that name {} with the idempotency its receiver has",
                    fact_note::xstate_place(m, "effects", "NAME", &[("idempotency", "key")])
                        .unwrap_or_default()
                ),
                Some(place) => {
                    format!("declare `{name}` {place}, with the idempotency its receiver has")
                }
                None => format!("declare `{name}` under `effects:` with the idempotency its receiver has"),
            };
            (
                uses[0].span,
                format!("{what} is not a declared effect, so nothing says what a repeat does{places}"),
                help,
                &uses[1..],
            )
        }
    };
    let labels = labelled
        .iter()
        .map(|u| Label {
            span: u.span,
            message: match u.place {
                Place::Invoke(_) => format!("{shown} is invoked here"),
                _ => format!("{shown} is performed here"),
            },
        })
        .collect();
    Finding {
        lint: Lint::EffectWithoutKey,
        span,
        // A finding about a declaration is located in the root; its uses
        // were checked against the `allow`s of their own states above.
        state: StateId::ROOT,
        message,
        labels,
        help: Some(help),
        witness,
        claim: None,
        fix: None,
    }
}

/// The uses of each unkeyed effect and host action reachable from the
/// start, by name, in the order the names are first met.
fn uses<'m>(cx: &Cx<'m>) -> IndexMap<&'m str, Vec<Use>> {
    let m: &'m Machine = cx.machine;
    let mut uses: IndexMap<&'m str, Vec<Use>> = IndexMap::new();
    let mut add = |actions: &'m [Action], place: Place| {
        for action in actions {
            if let Some(name) = unkeyed(m, action) {
                uses.entry(name).or_default().push(Use {
                    span: action.span(),
                    place,
                });
            }
        }
    };
    for (index, t) in m.transitions.iter().enumerate() {
        let tid = TransitionId(index as u32);
        if cx.transition_reachable(tid) {
            add(&t.actions, Place::Transition(tid));
        }
    }
    for s in m.state_ids() {
        if cx.reachable(s) {
            add(&m.state(s).entry, Place::Entry(s));
            add(&m.state(s).exit, Place::Exit(s));
        }
    }
    // Invocations after the actions, so that an effect both performed and
    // invoked is reported at its first action, as before invocations.
    for s in m.state_ids() {
        if !cx.reachable(s) {
            continue;
        }
        for invocation in &m.state(s).invoke {
            let unkeyed = invocation
                .effect(m)
                .is_none_or(|e| e.idempotency == Idempotency::None);
            if unkeyed {
                uses.entry(&invocation.src.text).or_default().push(Use {
                    span: invocation.span,
                    place: Place::Invoke(s),
                });
            }
        }
    }
    uses
}

/// The name of the effect with `idempotency: none` or the host action
/// that the action performs.
fn unkeyed<'a>(m: &Machine, action: &'a Action) -> Option<&'a str> {
    let (_, idempotency) = analysis::effect_idempotency(m, action)?;
    match action {
        Action::Host { name, .. } => Some(&name.text),
        Action::Effect { name, .. } if idempotency == Idempotency::None => Some(&name.text),
        _ => None,
    }
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
            .find(|&e| cx.graph.events.is_redeliverable(e))
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
