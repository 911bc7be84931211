//! A machine prepared for running: expressions compiled, targets and
//! subtrees precomputed, so that a step does no lookups by name.

use std::sync::Arc;

use super::host::{ActionFn, GuardFn, Host, Registered};
use crate::expr::{self, Compiled, CompiledAssign, Layout};
use crate::model::{
    Action, Completion, EventDescriptor, EventPattern, Machine, StateId, StateKind, TransitionId,
    Trigger,
};

/// The domain of a transition that exits and re-enters the root itself: the
/// SCXML document around the machine, the parent of the root. It names no
/// state, so it is never looked up; `Chart::below` gives its range.
pub(crate) const OUTSIDE_ROOT: StateId = StateId(u32::MAX);

/// The microstep budget of a chart whose machine sets no `limits.microsteps`.
pub const DEFAULT_MICROSTEP_LIMIT: usize = 100_000;

/// A machine compiled for the interpreter. Cheap to share between actors.
#[derive(Debug)]
pub struct Chart {
    /// Shared with whoever else holds it (the linter's model, a host's).
    pub(crate) machine: Arc<Machine>,
    pub(crate) layout: Layout,
    pub(crate) states: Vec<StateInfo>,
    pub(crate) transitions: Vec<TransitionInfo>,
    /// Whether any state has eventless transitions; lets a step skip looking.
    pub(crate) has_eventless: bool,
    /// Whether any state invokes; lets a step skip looking for completions.
    pub(crate) has_invocations: bool,
    /// Whether the machine runs by XState v5's rules (`semantics: xstate`,
    /// docs/semantics.md) rather than SCXML's.
    pub(crate) xstate: bool,
    /// The names of the events transitions take by exact name, each once,
    /// shared with the transitions' `exact`.
    pub(crate) event_names: Vec<Arc<str>>,
    /// Microsteps one call may take before it is stopped as a livelock.
    pub(crate) microstep_limit: usize,
    /// The host guards' implementations, by declared index (the index a
    /// compiled guard calls), with their names.
    pub(crate) guards: Vec<(Arc<str>, Registered<GuardFn>)>,
    /// The start of the snapshot JSON, the same for every actor of the
    /// chart (`snapshot_json::head`): the writer copies it whole and the
    /// reader recognises it whole.
    pub(crate) snapshot_head: super::snapshot_json::Head,
}

#[derive(Debug)]
pub(crate) struct StateInfo {
    /// Descendants have ids in `id + 1 .. subtree_end`, because states are
    /// numbered in document order, parents first.
    pub subtree_end: u32,
    pub parent: Option<StateId>,
    pub kind: StateKind,
    /// Child states that can be active (history pseudo-states excluded).
    pub children: Vec<StateId>,
    pub history: Vec<StateId>,
    /// Default entry of a compound state, default of a history state.
    pub initial: Vec<StateId>,
    pub entry: Vec<CompiledAction>,
    pub exit: Vec<CompiledAction>,
    /// Event transitions, then eventless ones, in document order.
    pub on: Vec<TransitionId>,
    /// For an atomic state, the event transitions of the state and then of
    /// each ancestor, nearest first: the order in which selection tries
    /// them, without walking up the tree per event. Empty otherwise.
    pub candidates: Vec<TransitionId>,
    pub always: Vec<TransitionId>,
    pub after: Vec<TransitionId>,
    /// `done.state.ID` raised when this state completes.
    pub done_event: Arc<str>,
    /// Started after the entry actions, cancelled after the exit actions.
    pub invoke: Vec<CompiledInvocation>,
}

#[derive(Debug)]
pub(crate) struct CompiledInvocation {
    pub id: Arc<str>,
    pub src: Arc<str>,
    pub input: Vec<(Arc<str>, Compiled)>,
    /// `xstate.error.actor.ID`, raised when the input cannot be evaluated.
    pub error_event: Arc<str>,
}

#[derive(Debug)]
pub(crate) struct TransitionInfo {
    pub source: StateId,
    pub descriptor: Option<EventDescriptor>,
    /// The event's name when the descriptor is one exact name, the common
    /// case, which `accepts` compares without the general matching.
    pub exact: Option<Arc<str>>,
    pub delay: Option<u64>,
    pub guard: Option<Compiled>,
    pub actions: Vec<CompiledAction>,
    /// Empty for a targetless transition, and for an atomic state's
    /// self-target without `reenter`, which XState runs without leaving the
    /// state. A compound or parallel state's self-target is kept: it resets
    /// the state's children (see `Chart::domain_of`).
    pub targets: Vec<StateId>,
    pub reenter: bool,
    /// Whether a target is a history state, whose meaning depends on what
    /// the actor recorded: only then is the domain worked out per step.
    pub history_targets: bool,
    /// The transition domain (see `Chart::domain_of`) when no target is a
    /// history state, which makes it a property of the chart alone.
    pub domain: Option<StateId>,
    /// Whether entering its targets needs no more than their descendants and
    /// ancestors: no target is a history state or the domain itself, and
    /// the domain is not a parallel state whose regions must be completed.
    pub plain_entry: bool,
    /// The states the transition enters, in document order, when the chart
    /// alone decides them (a plain entry that meets no history state): a
    /// microstep of this transition alone from a configuration of one
    /// branch enters them without building the entry set.
    pub entry: Option<Box<[StateId]>>,
}

#[derive(Debug)]
pub(crate) enum CompiledAction {
    Assign(CompiledAssign),
    Raise {
        event: Arc<str>,
        data: Vec<(Arc<str>, Compiled)>,
    },
    Send {
        event: Arc<str>,
        data: Vec<(Arc<str>, Compiled)>,
        delay: Option<u64>,
        id: Option<Arc<str>>,
    },
    Cancel {
        id: Arc<str>,
    },
    Effect {
        name: Arc<str>,
        args: Vec<(Arc<str>, Compiled)>,
    },
    Host {
        name: Arc<str>,
        action: Registered<ActionFn>,
    },
    Log(Compiled),
}

impl Chart {
    /// Prepares `machine` for running, with no host guard or host action
    /// registered: a host action is then only recorded in the step, and a
    /// declared host guard fails when evaluated, raising `error.execution`.
    /// `Chart::builder` registers them.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse("machine m\ninitial a\nstate a", Syntax::Dsl).unwrap();
    /// let chart = Arc::new(Chart::new(machine));
    /// assert_eq!(Actor::new(chart).configuration_paths(), ["a"]);
    /// ```
    pub fn new(machine: impl Into<Arc<Machine>>) -> Chart {
        Chart::compile(machine.into(), Host::default())
    }

    /// Prepares `machine` for running with the host's implementations.
    pub(crate) fn compile(machine: Arc<Machine>, host: Host) -> Chart {
        let layout = Layout::new(machine.context.keys());
        let resolve = |path: &str| machine.find_state(path).map(|s| s.0);
        let guard_index = |name: &str| {
            machine
                .guards
                .iter()
                .position(|g| g.text == name)
                .map(|i| i as u32)
        };
        let compile = |e: &expr::Expr| expr::compile(e, &layout, &resolve);
        let compile_actions = |actions: &[Action]| -> Vec<CompiledAction> {
            actions
                .iter()
                .map(|action| match action {
                    Action::Assign { fields, .. } => CompiledAction::Assign(CompiledAssign::new(
                        fields.iter().map(|(f, a)| (f.as_str(), &a.expr)),
                        &layout,
                        &resolve,
                    )),
                    Action::Raise { event, data, .. } => CompiledAction::Raise {
                        event: event.text.as_str().into(),
                        data: data
                            .iter()
                            .map(|(k, a)| (k.as_str().into(), compile(&a.expr)))
                            .collect(),
                    },
                    Action::Send {
                        event,
                        data,
                        delay,
                        id,
                        ..
                    } => CompiledAction::Send {
                        event: event.text.as_str().into(),
                        data: data
                            .iter()
                            .map(|(k, a)| (k.as_str().into(), compile(&a.expr)))
                            .collect(),
                        delay: delay.map(|d| d.millis),
                        id: id.as_ref().map(|id| id.text.as_str().into()),
                    },
                    Action::Cancel { id, .. } => CompiledAction::Cancel {
                        id: id.text.as_str().into(),
                    },
                    Action::Effect { name, args, .. } => CompiledAction::Effect {
                        name: name.text.as_str().into(),
                        args: args
                            .iter()
                            .map(|(k, a)| (k.as_str().into(), compile(&a.expr)))
                            .collect(),
                    },
                    Action::Host { name, .. } => CompiledAction::Host {
                        name: name.text.as_str().into(),
                        action: Registered(host.action(&name.text).cloned()),
                    },
                    Action::Log { expr, .. } => CompiledAction::Log(compile(expr)),
                })
                .collect()
        };

        let mut subtree_end: Vec<u32> = (1..=machine.states.len() as u32).collect();
        for id in (1..machine.states.len()).rev() {
            if let Some(parent) = machine.states[id].parent {
                subtree_end[parent.index()] = subtree_end[parent.index()].max(subtree_end[id]);
            }
        }
        let states = machine
            .state_ids()
            .map(|id| {
                let state = machine.state(id);
                let (history, children): (Vec<StateId>, Vec<StateId>) = state
                    .children
                    .iter()
                    .partition(|c| matches!(machine.state(**c).kind, StateKind::History(_)));
                let candidates = match children.is_empty() {
                    true => std::iter::successors(Some(id), |s| machine.state(*s).parent)
                        .flat_map(|s| machine.state(s).on.iter().copied())
                        .collect(),
                    false => Vec::new(),
                };
                StateInfo {
                    subtree_end: subtree_end[id.index()],
                    parent: state.parent,
                    kind: state.kind,
                    children,
                    history,
                    initial: default_entry(&machine, id),
                    entry: compile_actions(&state.entry),
                    exit: compile_actions(&state.exit),
                    on: state.on.clone(),
                    candidates,
                    always: state.always.clone(),
                    after: state.after.clone(),
                    done_event: format!("done.state.{}", machine.display_name(id)).into(),
                    invoke: state
                        .invoke
                        .iter()
                        .map(|i| CompiledInvocation {
                            id: i.id.text.as_str().into(),
                            src: i.src.text.as_str().into(),
                            input: i
                                .input
                                .iter()
                                .map(|(k, a)| (k.as_str().into(), compile(&a.expr)))
                                .collect(),
                            error_event: i.event(Completion::Error).into(),
                        })
                        .collect(),
                }
            })
            .collect();
        // One shared copy of each exact name, whatever transitions take it.
        let mut names: std::collections::HashMap<&str, Arc<str>> = std::collections::HashMap::new();
        let transitions = machine
            .transitions
            .iter()
            .map(|t| {
                let mut targets: Vec<StateId> = t.targets.iter().map(|t| t.state).collect();
                if !t.reenter && targets == [t.source] && machine.state(t.source).is_atomic() {
                    targets.clear();
                }
                TransitionInfo {
                    source: t.source,
                    descriptor: match &t.trigger {
                        Trigger::Event(d) => Some(d.clone()),
                        _ => None,
                    },
                    exact: match &t.trigger {
                        Trigger::Event(d) => match d.patterns.as_slice() {
                            [EventPattern::Exact(name)] => Some(Arc::clone(
                                names
                                    .entry(name.as_str())
                                    .or_insert_with(|| name.as_str().into()),
                            )),
                            _ => None,
                        },
                        _ => None,
                    },
                    delay: match &t.trigger {
                        Trigger::After(d) => Some(d.millis),
                        _ => None,
                    },
                    guard: t
                        .guard
                        .as_ref()
                        .map(|g| expr::compile_guard(g, &layout, &resolve, &guard_index)),
                    actions: compile_actions(&t.actions),
                    history_targets: targets
                        .iter()
                        .any(|s| matches!(machine.state(*s).kind, StateKind::History(_))),
                    targets,
                    reenter: t.reenter,
                    domain: None,
                    plain_entry: false,
                    entry: None,
                }
            })
            .collect();
        let has_eventless = machine.states.iter().any(|s| !s.always.is_empty());
        let has_invocations = machine.states.iter().any(|s| !s.invoke.is_empty());
        let microstep_limit = machine
            .limits
            .as_ref()
            .map_or(DEFAULT_MICROSTEP_LIMIT, |l| {
                usize::try_from(l.microsteps).unwrap_or(usize::MAX)
            });
        let event_names = names.into_values().collect();
        let guards = machine
            .guards
            .iter()
            .map(|g| {
                let name: Arc<str> = g.text.as_str().into();
                (name, Registered(host.guard(&g.text).cloned()))
            })
            .collect();
        let snapshot_head = super::snapshot_json::Head::new(&machine);
        let mut chart = Chart {
            layout,
            states,
            transitions,
            has_eventless,
            has_invocations,
            xstate: machine.semantics == crate::model::Semantics::Xstate,
            event_names,
            machine,
            microstep_limit,
            guards,
            snapshot_head,
        };
        let domains: Vec<Option<StateId>> = chart
            .transitions
            .iter()
            .map(|t| match t.history_targets {
                true => None,
                false => chart.domain_of(t.source, t.reenter, &t.targets),
            })
            .collect();
        let parallel: Vec<bool> = chart
            .states
            .iter()
            .map(|s| s.kind == StateKind::Parallel)
            .collect();
        for (t, domain) in chart.transitions.iter_mut().zip(domains) {
            t.domain = domain;
            t.plain_entry = !t.history_targets
                && domain.is_some_and(|d| {
                    !t.targets.contains(&d) && (d == OUTSIDE_ROOT || !parallel[d.index()])
                });
        }
        let entries = super::actor::static_entries(&chart);
        for (t, entry) in chart.transitions.iter_mut().zip(entries) {
            t.entry = entry;
        }
        chart
    }

    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The microstep budget of one call (`with_microstep_limit`).
    pub fn microstep_limit(&self) -> usize {
        self.microstep_limit
    }

    /// Sets how many microsteps one `start`, `send` or `advance_to` may take
    /// before the actor stops it with an error (`Step::unsettled`): a machine
    /// whose own events or eventless transitions never settle would otherwise
    /// hang its host. The default is the machine's `limits.microsteps`, else
    /// `DEFAULT_MICROSTEP_LIMIT` (100,000); this overrides both.
    pub fn with_microstep_limit(mut self, limit: usize) -> Chart {
        self.microstep_limit = limit.max(1);
        self
    }

    /// Whether `a` lies strictly inside `b`.
    pub(crate) fn is_descendant(&self, a: StateId, b: StateId) -> bool {
        b.0 < a.0 && a.0 < self.states[b.index()].subtree_end
    }

    /// The state a transition from `source` to `targets` (history states
    /// already replaced by what they restore) exits and re-enters below.
    /// Without `reenter`, a compound or parallel source whose targets are
    /// itself or lie inside it is kept (XState v5's `reenter: false`; a
    /// target that is the source resets its children). Otherwise it is the
    /// least common compound ancestor of source and targets, as in SCXML;
    /// where there is none inside the machine (a transition between the
    /// regions of a parallel root, or one from the root with `reenter`),
    /// `OUTSIDE_ROOT`: the root itself is exited and re-entered. Under
    /// `semantics: xstate`, the least common ancestor of any kind, and any
    /// source kept. `None` for a targetless transition.
    pub(crate) fn domain_of(
        &self,
        source: StateId,
        reenter: bool,
        targets: &[StateId],
    ) -> Option<StateId> {
        if targets.is_empty() {
            return None;
        }
        // XState keeps any source, an atomic one too: a history target that
        // restores the source itself then enters it again without exiting it.
        if !reenter
            && (self.xstate
                || matches!(
                    self.state(source).kind,
                    StateKind::Compound | StateKind::Parallel
                ))
            && targets
                .iter()
                .all(|&s| s == source || self.is_descendant(s, source))
        {
            return Some(source);
        }
        let mut at = self.state(source).parent;
        while let Some(anc) = at {
            // XState takes the least common ancestor, of any kind.
            let compound = match self.state(anc).kind {
                StateKind::Compound => true,
                StateKind::Parallel => self.xstate,
                // A root without children is atomic; nothing lies below it.
                _ => anc == StateId::ROOT,
            };
            if compound && targets.iter().all(|&s| self.is_descendant(s, anc)) {
                return Some(anc);
            }
            at = self.state(anc).parent;
        }
        // XState keeps the root when no state contains the source and every
        // target (a target is the root itself, or the source is), unless the
        // transition re-enters.
        if self.xstate && !reenter {
            return Some(StateId::ROOT);
        }
        Some(OUTSIDE_ROOT)
    }

    /// The ids of a domain's proper descendants, `start..end`: the states a
    /// transition with that domain may exit. The root's own id for
    /// `OUTSIDE_ROOT`.
    #[inline]
    pub(crate) fn below(&self, domain: StateId) -> (u32, u32) {
        if domain == OUTSIDE_ROOT {
            return (StateId::ROOT.0, self.state(StateId::ROOT).subtree_end);
        }
        (domain.0 + 1, self.state(domain).subtree_end)
    }

    /// The chart's copy of `name`, when a transition takes that name and the
    /// chart has few enough names to look through on each event.
    #[inline]
    pub(crate) fn known_name(&self, name: &Arc<str>) -> Option<&Arc<str>> {
        const LOOKUP_MAX: usize = 8;
        if self.event_names.len() > LOOKUP_MAX {
            return None;
        }
        self.event_names.iter().find(|n| expr::str_eq(n, name))
    }

    /// Whether transition `t` is triggered by the event named `name`.
    #[inline(always)]
    pub(crate) fn accepts(&self, t: TransitionId, name: &Arc<str>) -> bool {
        let info = self.transition(t);
        match &info.exact {
            Some(exact) => expr::str_eq(exact, name),
            None => Self::matches_descriptor(info, name),
        }
    }

    /// The general matching of `accepts`, kept out of the loops that call it.
    #[inline(never)]
    fn matches_descriptor(info: &TransitionInfo, name: &str) -> bool {
        info.descriptor.as_ref().is_some_and(|d| d.matches(name))
    }

    pub(crate) fn state(&self, id: StateId) -> &StateInfo {
        &self.states[id.index()]
    }

    pub(crate) fn transition(&self, id: TransitionId) -> &TransitionInfo {
        &self.transitions[id.index()]
    }
}

/// A state's default entry: a compound state's `initial`, or a history
/// state's default. A history state without one restores its parent's own
/// default entry, as in XState (for a parallel parent, every region).
fn default_entry(machine: &Machine, id: StateId) -> Vec<StateId> {
    let state = machine.state(id);
    if !state.initial.is_empty() || !matches!(state.kind, StateKind::History(_)) {
        return state.initial.iter().map(|t| t.state).collect();
    }
    let Some(parent_id) = state.parent else {
        return Vec::new();
    };
    let parent = machine.state(parent_id);
    match parent.kind {
        StateKind::Parallel => machine.substates(parent_id).collect(),
        _ => parent.initial.iter().map(|t| t.state).collect(),
    }
}
