use super::versions::{ChangeCx, ChangeFinding};
use super::{Lint, Stage};
use crate::model::{Action, Carry, Machine, StateId};

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags an effect that the old machine
    /// performs in some run and the new machine neither declares nor
    /// performs, and an invocation of a state a process may be in whose id
    /// no state of the new machine invokes, unless the migration from the
    /// old version says `outbox: drop`. The witness leads to the state that
    /// performs it (or whose transition does).
    ///
    /// ### Why is this bad?
    ///
    /// The outbox keeps a pending row under the effect's name and the
    /// invocation's id until it is dispatched. A row written before the
    /// deploy is dispatched after it: a handler that dispatches by the new
    /// names does not know the old one, the effect's `<effect>.unknown`
    /// event finds no handler, and an invocation's completion event
    /// (`xstate.done.actor.ID`) is ignored, so the process waits forever.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1 performed `chargeCard` on entry of `charging`
    /// effects:
    ///   charge: { idempotency: key }
    /// ```
    ///
    /// ### Use instead
    ///
    /// Keep the old name declared (and handled) until no row of it is
    /// pending, then remove it in a later version:
    ///
    /// ```yaml
    /// effects:
    ///   chargeCard: { idempotency: key }
    ///   charge: { idempotency: key }
    /// ```
    ///
    /// Or, where the old rows must not be performed at all, cancel them
    /// when a process is moved: `outbox: drop` cancels its pending rows of
    /// an effect or invocation the new machine lacks (and lets go of the
    /// invocations in flight its states no longer invoke), in the
    /// transaction that writes the migrated snapshot. A cancelled row is an
    /// effect never performed, which is why `keep` is the default:
    ///
    /// ```yaml
    /// migrations: [{ from: 1, outbox: drop }]
    /// ```
    code: "M004",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    // The migration says what becomes of the rows: they are cancelled, and
    // the invocations in flight let go, when a process is moved.
    if cx
        .migration
        .is_some_and(|m| m.outbox == Some(Carry::Drop))
    {
        return;
    }
    let (old, new) = (cx.old.machine, cx.new);
    for name in old.effects.keys() {
        if new.effects.contains_key(name) || performs(new, name) {
            continue;
        }
        let Some(state) = performer(cx, name) else {
            continue;
        };
        let witness = cx.witness_to(state).unwrap_or_default();
        cx.report(
            Lint::PendingEffectRenamed,
            ChangeFinding {
                span: new.span,
                message: format!(
                    "processes stored at {} may have pending outbox rows of the effect `{name}` (performed in `{}`), which {} does not declare: their dispatch and `{name}.unknown` find no handler",
                    cx.old_version(),
                    old.display_name(state),
                    cx.new_version()
                ),
                labels: Vec::new(),
                help: Some(format!(
                    "keep `{name}` declared under `effects:` until no row of it is pending, and remove it in a later version; or, to cancel those rows (the effect is then never performed), {}",
                    cx.migration_help("outbox: drop")
                )),
                witness,
                fix: None,
            },
        );
    }
    let invoked: Vec<&str> = new
        .states
        .iter()
        .flat_map(|s| s.invoke.iter().map(|i| i.id.text.as_str()))
        .collect();
    for s in old.state_ids() {
        if !cx.may_be_in(s) {
            continue;
        }
        for invocation in &old.state(s).invoke {
            let id = invocation.id.text.as_str();
            if invoked.contains(&id) {
                continue;
            }
            let witness = cx.witness_to(s).unwrap_or_default();
            cx.report(
                Lint::PendingEffectRenamed,
                ChangeFinding {
                    span: new.span,
                    message: format!(
                        "processes stored at {} in `{}` may wait for the invocation `{id}`, which no state of {} invokes: its completion `xstate.done.actor.{id}` is ignored",
                        cx.old_version(),
                        old.display_name(s),
                        cx.new_version()
                    ),
                    labels: Vec::new(),
                    help: Some(format!(
                        "keep the invocation's `id: {id}`, or let the state be left first in every stored process; or, to cancel it, {}",
                        cx.migration_help("outbox: drop")
                    )),
                    witness,
                    fix: None,
                },
            );
        }
    }
}

/// Whether some action of the machine performs `name`, as a declared
/// effect or a host action.
fn performs(machine: &Machine, name: &str) -> bool {
    machine.actions().any(|a| match a {
        Action::Effect { name: n, .. } | Action::Host { name: n, .. } => n.text == name,
        _ => false,
    })
}

/// The state nearest the start of the old machine in which the effect is
/// performed: by its entry or exit, by one of its transitions, or by
/// invoking it.
fn performer(cx: &ChangeCx, name: &str) -> Option<StateId> {
    let old = cx.old.machine;
    let does = |actions: &[Action]| {
        actions
            .iter()
            .any(|a| matches!(a, Action::Effect { name: n, .. } if n.text == name))
    };
    old.state_ids()
        .filter(|&s| cx.may_be_in(s))
        .filter(|&s| {
            let state = old.state(s);
            does(&state.entry)
                || does(&state.exit)
                || state.invoke.iter().any(|i| i.src.text == name)
                || state
                    .on
                    .iter()
                    .chain(&state.always)
                    .chain(&state.after)
                    .any(|&t| does(&old.transition(t).actions))
        })
        .min_by_key(|&s| cx.witness_to(s).map_or(usize::MAX, |w| w.len()))
}
