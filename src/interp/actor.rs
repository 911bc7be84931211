//! A running machine: the W3C SCXML algorithm (Recommendation, Appendix D)
//! over a `Chart`, with XState's `reenter` flag and delayed transitions.

use std::collections::VecDeque;
use std::sync::Arc;

use super::bits::{MarkedSet, StateSet};
use super::chart::{Chart, CompiledAction, OUTSIDE_ROOT};
use super::host::{HostCall, Updates};
use super::step::{Cancelled, EffectCall, Invoked, Step};
use super::unsettled::Unsettled;
use crate::expr::{self, CompiledAssign, Event, Value};
use crate::model::{Completion, StateId, StateKind, TransitionId};

/// Whether the machine still accepts events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    /// A final child of the machine was entered; every event is now ignored.
    Done,
}

/// Something due at `due` (milliseconds on the actor's clock).
#[derive(Clone, Debug)]
pub(crate) struct Timer {
    pub due: u64,
    /// Order of scheduling, which breaks ties between equal due times.
    pub seq: u64,
    pub what: Due,
}

#[derive(Clone, Debug)]
pub(crate) enum Due {
    /// A delayed transition, cancelled when its state is exited.
    Transition(TransitionId),
    /// A delayed send, cancelled by its id.
    Send { event: Event, id: Option<Arc<str>> },
}

/// An invocation in flight: the `index`-th of `state`'s invocations.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Running {
    pub state: StateId,
    pub index: u32,
    pub input: Value,
    /// Bound by the host (`Actor::bind_invocation_keys`): a completion
    /// that carries another id belongs to an earlier, cancelled start.
    pub key: Option<Arc<str>>,
}

/// An invocation in flight, as `Actor::invocations` lists it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningInvocation<'a> {
    pub id: &'a str,
    pub src: &'a str,
    pub state: StateId,
    pub input: &'a Value,
    pub key: Option<&'a str>,
}

/// One running instance of a chart.
#[derive(Debug)]
pub struct Actor {
    pub(crate) chart: Arc<Chart>,
    /// Everything a step changes, apart from the chart it reads, so that a
    /// step can borrow both without taking a count on the `Arc` (two atomic
    /// updates per event).
    pub(crate) core: Core,
}

/// `clone_from` makes the actor a copy of another in the buffers it already
/// has: a search that forks an actor per move and drops most of the forks
/// (the linter's replay) allocates nothing for those.
impl Clone for Actor {
    fn clone(&self) -> Actor {
        Actor {
            chart: self.chart.clone(),
            core: self.core.clone(),
        }
    }

    fn clone_from(&mut self, source: &Actor) {
        if !Arc::ptr_eq(&self.chart, &source.chart) {
            self.chart = source.chart.clone();
        }
        self.core.clone_from(&source.core);
    }
}

/// An actor's configuration, context, history, timers and queues, and the
/// buffers its steps reuse.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) active: StateSet,
    pub(crate) context: Vec<Value>,
    /// Recorded history, by history state: the states to restore.
    pub(crate) history: Vec<(StateId, Vec<StateId>)>,
    pub(crate) timers: Vec<Timer>,
    /// Invocations in flight, in the order they started.
    pub(crate) invocations: Vec<Running>,
    pub(crate) status: Status,
    pub(crate) now: u64,
    pub(crate) next_seq: u64,
    internal: VecDeque<Event>,
    /// Events the machine sent itself, processed after the current one.
    external: VecDeque<Event>,
    step: Step,
    enabled: Vec<TransitionId>,
    pub(crate) exit_set: MarkedSet,
    enter_set: MarkedSet,
    default_entry: MarkedSet,
    scratch: Vec<StateId>,
    /// Buffers kept from step to step, so that a step allocates nothing:
    /// the effective targets a history target stands for, the enabled
    /// transitions with their exit ranges while conflicts are resolved, and
    /// the states being exited or entered, in order.
    domain_targets: Vec<StateId>,
    filtered: Vec<(TransitionId, ExitRange)>,
    exiting: Vec<StateId>,
    entering: Vec<StateId>,
    guard_errors: Vec<String>,
    /// The parallel states one `enter` completed (XState raises each one's
    /// `done.state` once).
    completed: Vec<StateId>,
    /// Under `semantics: xstate`, the active states in the order of
    /// XState's set of nodes (the snapshot's `_nodes`): the order they were
    /// entered in, which XState's eventless selection follows (its atomic
    /// states) and its snapshot's value (the order of a state's children);
    /// empty otherwise.
    pub(crate) entry_order: Vec<StateId>,
    /// Under `semantics: xstate`, whether the active states are a
    /// configuration SCXML could not reach, which XState's snapshot value
    /// shows otherwise than they are: a history target that restored its
    /// own source left a compound state with two active children, or a
    /// state active without its parent (docs/semantics.md, 5). Events are
    /// then selected by that value, worked out as XState does.
    pub(crate) irregular: bool,
    /// Under `semantics: xstate`, whether the current microstep changed
    /// what XState's snapshot holds (its set of active states, its history,
    /// its context by any `assign`, its children by an invocation started
    /// or stopped): XState selects eventless transitions again after an
    /// eventless microstep only when it did.
    changed: bool,
    /// Microsteps left in the current call (`start`, `send`, `advance_to`).
    budget: usize,
    /// The only active atomic state, when `select_on_event` found the
    /// configuration to be one branch; taken by the microstep that follows.
    leaf: Option<StateId>,
    /// Takes the general path wherever there is a fast one, so that tests
    /// can compare the two.
    #[cfg(test)]
    pub(crate) general: bool,
}

impl Core {
    /// A copy of the state alone: the buffers a step reuses start empty, as
    /// in a new actor, and so does the record of the last step.
    fn clone_state(&self) -> Core {
        Core {
            active: self.active.clone(),
            context: self.context.clone(),
            history: self.history.clone(),
            timers: self.timers.clone(),
            invocations: self.invocations.clone(),
            status: self.status,
            now: self.now,
            next_seq: self.next_seq,
            internal: self.internal.clone(),
            external: self.external.clone(),
            step: Step::default(),
            enabled: Vec::new(),
            exit_set: MarkedSet::default(),
            enter_set: MarkedSet::default(),
            default_entry: MarkedSet::default(),
            scratch: Vec::new(),
            domain_targets: Vec::new(),
            filtered: Vec::new(),
            exiting: Vec::new(),
            entering: Vec::new(),
            guard_errors: Vec::new(),
            completed: Vec::new(),
            entry_order: self.entry_order.clone(),
            irregular: self.irregular,
            changed: self.changed,
            budget: self.budget,
            leaf: self.leaf,
            #[cfg(test)]
            general: self.general,
        }
    }
}

impl Clone for Core {
    fn clone(&self) -> Core {
        Core {
            active: self.active.clone(),
            context: self.context.clone(),
            history: self.history.clone(),
            timers: self.timers.clone(),
            invocations: self.invocations.clone(),
            status: self.status,
            now: self.now,
            next_seq: self.next_seq,
            internal: self.internal.clone(),
            external: self.external.clone(),
            step: self.step.clone(),
            enabled: self.enabled.clone(),
            exit_set: self.exit_set.clone(),
            enter_set: self.enter_set.clone(),
            default_entry: self.default_entry.clone(),
            scratch: self.scratch.clone(),
            domain_targets: self.domain_targets.clone(),
            filtered: self.filtered.clone(),
            exiting: self.exiting.clone(),
            entering: self.entering.clone(),
            guard_errors: self.guard_errors.clone(),
            completed: self.completed.clone(),
            entry_order: self.entry_order.clone(),
            irregular: self.irregular,
            changed: self.changed,
            budget: self.budget,
            leaf: self.leaf,
            #[cfg(test)]
            general: self.general,
        }
    }

    fn clone_from(&mut self, source: &Core) {
        // Every field, so that one added later cannot be forgotten here.
        let Core {
            active,
            context,
            history,
            timers,
            invocations,
            status,
            now,
            next_seq,
            internal,
            external,
            step,
            enabled,
            exit_set,
            enter_set,
            default_entry,
            scratch,
            domain_targets,
            filtered,
            exiting,
            entering,
            guard_errors,
            completed,
            entry_order,
            irregular,
            changed,
            budget,
            leaf,
            #[cfg(test)]
            general,
        } = source;
        self.active.clone_from(active);
        self.context.clone_from(context);
        self.history.clone_from(history);
        self.timers.clone_from(timers);
        self.invocations.clone_from(invocations);
        self.status = *status;
        self.now = *now;
        self.next_seq = *next_seq;
        self.internal.clone_from(internal);
        self.external.clone_from(external);
        self.step.clone_from(step);
        self.enabled.clone_from(enabled);
        self.exit_set.clone_from(exit_set);
        self.enter_set.clone_from(enter_set);
        self.default_entry.clone_from(default_entry);
        self.scratch.clone_from(scratch);
        self.domain_targets.clone_from(domain_targets);
        self.filtered.clone_from(filtered);
        self.exiting.clone_from(exiting);
        self.entering.clone_from(entering);
        self.guard_errors.clone_from(guard_errors);
        self.completed.clone_from(completed);
        self.entry_order.clone_from(entry_order);
        self.irregular = *irregular;
        self.changed = *changed;
        self.budget = *budget;
        self.leaf = *leaf;
        #[cfg(test)]
        {
            self.general = *general;
        }
    }
}

/// The ids `start..end` of a transition's domain's proper descendants: its
/// exit set is the active states among them. `None` for a targetless one.
type ExitRange = Option<(u32, u32)>;

impl Actor {
    /// A new actor at rest before its initial configuration; `start` enters it.
    pub(crate) fn idle(chart: Arc<Chart>, context: Vec<Value>, now: u64) -> Actor {
        let core = Core::new(chart.states.len(), context, now);
        Actor { chart, core }
    }

    /// Enters the initial configuration and runs to a stable one.
    pub(crate) fn start(&mut self) -> &Step {
        self.core.start(&self.chart);
        &self.core.step
    }

    /// Processes one external event as a macrostep: the transitions it
    /// enables, then eventless transitions and internal events until the
    /// configuration is stable. An event that enables nothing is `ignored`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::expr::{Event, Value};
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse(
    ///     "machine m\neffect mail idempotent key\ninitial a\n\
    ///      state a { on GO -> b }\nstate b { entry mail }",
    ///     Syntax::Dsl,
    /// )
    /// .unwrap();
    /// let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    /// let go = Event::new("GO", Some(Value::from("go-1")), Value::Null);
    /// let step = actor.send(&go);
    /// assert_eq!(&*step.effects[0].name, "mail");
    /// assert!(actor.send(&go).ignored);
    /// ```
    pub fn send(&mut self, event: &Event) -> &Step {
        self.core.send(&self.chart, event);
        &self.core.step
    }

    /// Moves the clock to `now` and fires every delayed transition due by
    /// then, in order of due time.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse("machine m\ninitial a\nstate a { after 5s -> b }\nstate b", Syntax::Dsl).unwrap();
    /// let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    /// assert_eq!(actor.next_due(), Some(5_000));
    /// actor.advance_to(4_999);
    /// assert_eq!(actor.configuration_paths(), ["a"]);
    /// actor.advance_to(5_000);
    /// assert_eq!(actor.configuration_paths(), ["b"]);
    /// ```
    pub fn advance_to(&mut self, now: u64) -> &Step {
        self.core.advance_to(&self.chart, now);
        &self.core.step
    }
}

impl Core {
    /// A core at rest before its initial configuration, for a chart of
    /// `states` states. Inlined, so that a restored actor's core is built
    /// where the caller keeps it rather than copied there.
    #[inline(always)]
    fn new(states: usize, context: Vec<Value>, now: u64) -> Core {
        Core {
            active: StateSet::with_capacity(states),
            context,
            history: Vec::new(),
            timers: Vec::new(),
            invocations: Vec::new(),
            status: Status::Active,
            now,
            next_seq: 0,
            internal: VecDeque::new(),
            external: VecDeque::new(),
            step: Step::default(),
            enabled: Vec::new(),
            // These grow when a step first needs them: an actor restored to
            // take one targetless transition never does.
            exit_set: MarkedSet::default(),
            enter_set: MarkedSet::default(),
            default_entry: MarkedSet::default(),
            scratch: Vec::new(),
            domain_targets: Vec::new(),
            filtered: Vec::new(),
            exiting: Vec::new(),
            entering: Vec::new(),
            guard_errors: Vec::new(),
            completed: Vec::new(),
            entry_order: Vec::new(),
            irregular: false,
            changed: false,
            budget: 0,
            leaf: None,
            #[cfg(test)]
            general: false,
        }
    }
}

impl Core {
    /// Makes the core what `Core::new` gives, the context aside, in the
    /// memory it already has: the vectors keep their capacity, and the
    /// context keeps its values for a reader to overwrite (a list the
    /// context alone holds is read into its own memory).
    pub(crate) fn reset(&mut self) {
        // Every field, so that one added later cannot be forgotten here.
        let Core {
            active,
            context: _,
            history,
            timers,
            invocations,
            status,
            now,
            next_seq,
            internal,
            external,
            step,
            enabled,
            exit_set,
            enter_set,
            default_entry,
            scratch,
            domain_targets,
            filtered,
            exiting,
            entering,
            guard_errors,
            completed,
            entry_order,
            irregular,
            changed,
            budget,
            leaf,
            #[cfg(test)]
            general,
        } = self;
        active.clear();
        history.clear();
        timers.clear();
        invocations.clear();
        *status = Status::Active;
        *now = 0;
        *next_seq = 0;
        internal.clear();
        external.clear();
        step.clear(None);
        enabled.clear();
        exit_set.clear();
        enter_set.clear();
        default_entry.clear();
        scratch.clear();
        domain_targets.clear();
        filtered.clear();
        exiting.clear();
        entering.clear();
        guard_errors.clear();
        completed.clear();
        entry_order.clear();
        *irregular = false;
        *changed = false;
        *budget = 0;
        *leaf = None;
        #[cfg(test)]
        {
            *general = false;
        }
    }
}

/// For each transition of `chart`, the states it enters in document order
/// when that is a property of the chart alone (see `TransitionInfo::entry`):
/// worked out by the general path's own entry-set construction on an empty
/// core. `None` for a targetless transition, one whose entry is not plain,
/// one that enters a history state's recorded states (a compound state whose
/// default entry is a history state), and under `semantics: xstate`.
pub(crate) fn static_entries(chart: &Chart) -> Vec<Option<Box<[StateId]>>> {
    let mut core = Core::new(chart.states.len(), Vec::new(), 0);
    let mut targets = Vec::new();
    (0..chart.transitions.len())
        .map(|index| {
            let t = TransitionId(index as u32);
            let info = chart.transition(t);
            let domain = info.domain?;
            if chart.xstate || !info.plain_entry || info.targets.is_empty() {
                return None;
            }
            core.enter_set.clear();
            core.default_entry.clear();
            for &target in &info.targets {
                core.add_descendants(chart, target);
            }
            core.effective_targets(chart, t, &mut targets);
            for &s in &targets {
                core.add_ancestors(chart, s, domain);
            }
            let entered = core.enter_set.sorted();
            let through_history = entered.iter().any(|&s| {
                chart
                    .state(s)
                    .initial
                    .iter()
                    .any(|&i| matches!(chart.state(i).kind, StateKind::History(_)))
            });
            (!through_history).then(|| entered.into())
        })
        .collect()
}

impl Core {
    fn start(&mut self, chart: &Chart) {
        self.step.clear(None);
        self.budget = chart.microstep_limit;
        self.enter_set.clear();
        self.default_entry.clear();
        self.add_descendants(chart, StateId::ROOT);
        self.enter(chart, None);
        self.run_to_completion(chart);
        self.drain_external(chart);
    }

    fn send(&mut self, chart: &Chart, event: &Event) {
        // The name already recorded is kept when it is the same, which
        // spares two atomic count updates on the event's name. A new name
        // that the chart knows is recorded as the chart's own copy, which
        // its transitions then match by pointer.
        let name = match self.step.event.take() {
            Some(name) if expr::str_eq(&name, &event.name) => name,
            _ => Arc::clone(chart.known_name(&event.name).unwrap_or(&event.name)),
        };
        self.step.clear(None);
        self.budget = chart.microstep_limit;
        if self.status == Status::Done
            || (chart.has_invocations && !self.take_completion(chart, event))
        {
            self.step.event = Some(name);
            self.step.ignored = true;
            return;
        }
        if self.fast() {
            self.enabled.clear();
            self.select_on_event(chart, event, &name);
        } else {
            self.select(chart, Some(event));
        }
        self.step.event = Some(name);
        if self.enabled.is_empty() && self.eventless_after_any_event(chart) {
            // XState's macrostep selects eventless transitions after any
            // event; those that changed nothing last time are taken again.
            self.run_to_completion(chart);
            self.step.ignored = self.step.transitions.is_empty();
        } else if self.enabled.is_empty() {
            self.step.ignored = true;
            // A guard that failed on the way raised `error.execution`,
            // which is processed now, as any internal event.
            if !self.internal.is_empty() {
                self.run_to_completion(chart);
            }
        } else {
            self.microstep(chart, Some(event));
            self.run_to_completion(chart);
        }
        self.drain_external(chart);
    }

    /// Processes the events the machine sent itself, each as a macrostep.
    #[inline(always)]
    fn drain_external(&mut self, chart: &Chart) {
        if self.skip_idle_loop(self.external.is_empty()) {
            return;
        }
        self.drain_queued(chart);
    }

    /// Whether the macrostep loop about to run can be skipped because it is
    /// `idle` (it would find nothing to do): its first check spends one
    /// microstep of the budget and stops, which is done here instead, in
    /// line. Not on the budget's last microstep, where the loop reports the
    /// error.
    #[inline(always)]
    fn skip_idle_loop(&mut self, idle: bool) -> bool {
        if !(self.fast() && idle && self.budget > 1) {
            return false;
        }
        if self.status == Status::Active {
            self.budget -= 1;
        }
        true
    }

    fn drain_queued(&mut self, chart: &Chart) {
        while self.status == Status::Active && self.spend(chart) {
            let Some(event) = self.external.pop_front() else {
                break;
            };
            self.macrostep(chart, &event);
        }
    }

    fn macrostep(&mut self, chart: &Chart, event: &Event) {
        if chart.has_invocations && !self.take_completion(chart, event) {
            return;
        }
        self.select(chart, Some(event));
        if !self.enabled.is_empty() {
            self.microstep(chart, Some(event));
        }
        if !self.enabled.is_empty()
            || !self.internal.is_empty()
            || self.eventless_after_any_event(chart)
        {
            self.run_to_completion(chart);
        }
    }

    /// Whether a macrostep selects eventless transitions even after an
    /// event that enabled nothing: under `semantics: xstate`, as XState's
    /// `macrostep` does. Under SCXML the configuration was stable before
    /// the event and nothing changed it.
    #[inline(always)]
    fn eventless_after_any_event(&self, chart: &Chart) -> bool {
        chart.xstate && chart.has_eventless
    }

    fn advance_to(&mut self, chart: &Chart, now: u64) {
        self.step.clear(None);
        self.budget = chart.microstep_limit;
        // Each firing counts against the budget: timers that schedule more
        // timers could otherwise multiply without end.
        while self.status == Status::Active
            && self.spend(chart)
            && self.fire_next(chart, now).is_some()
        {}
        self.now = self.now.max(now);
    }

    /// Fires the earliest timer due by `now` (earliest due time, then
    /// earliest scheduled) with the events it makes the machine send itself,
    /// and returns it; `None` when nothing is due.
    fn fire_next(&mut self, chart: &Chart, now: u64) -> Option<Timer> {
        let (index, _) = self
            .timers
            .iter()
            .enumerate()
            .filter(|(_, t)| t.due <= now)
            .min_by_key(|(_, t)| (t.due, t.seq))?;
        let timer = self.timers.remove(index);
        self.now = self.now.max(timer.due);
        match &timer.what {
            Due::Transition(t) => {
                if !self.active.contains(chart.transition(*t).source)
                    || !self.guard(chart, *t, None)
                {
                    // A failing guard raised `error.execution`: processed now.
                    self.flush_errors();
                    if !self.internal.is_empty() || self.eventless_after_any_event(chart) {
                        self.run_to_completion(chart);
                    }
                } else {
                    self.enabled.clear();
                    self.enabled.push(*t);
                    self.leaf = None;
                    self.microstep(chart, None);
                    self.run_to_completion(chart);
                }
            }
            Due::Send { event, .. } => self.macrostep(chart, event),
        }
        self.drain_external(chart);
        Some(timer)
    }
}

impl Actor {
    /// Fires only the earliest timer due by `now`, as one macrostep of its
    /// own (`last_step` records it), with the clock at its due time; `None`,
    /// with an empty step, when nothing is due or the machine is done. The
    /// durable runtime fires timers one by one so that each firing has an
    /// identity of its own.
    pub(crate) fn fire_one(&mut self, now: u64) -> Option<Timer> {
        self.core.step.clear(None);
        self.core.budget = self.chart.microstep_limit;
        if self.core.status != Status::Active {
            return None;
        }
        self.core.fire_next(&self.chart, now)
    }
}

impl Actor {
    /// The time of the next pending delayed transition.
    pub fn next_due(&self) -> Option<u64> {
        self.core.timers.iter().map(|t| t.due).min()
    }

    pub fn status(&self) -> Status {
        self.core.status
    }

    /// The actor's clock, in milliseconds.
    pub fn now(&self) -> u64 {
        self.core.now
    }

    pub fn chart(&self) -> &Arc<Chart> {
        &self.chart
    }

    /// Whether the state is active.
    pub fn is_active(&self, state: StateId) -> bool {
        self.core.active.contains(state)
    }

    /// Active states in document order.
    pub fn active_states(&self) -> impl Iterator<Item = StateId> + '_ {
        self.core.active.iter()
    }

    /// The active atomic states as a snapshot lists them: in document order,
    /// or under `semantics: xstate` in the order they were entered.
    pub(crate) fn snapshot_leaves(&self) -> impl Iterator<Item = StateId> + '_ {
        // One order or the other, chosen once: a chain of both, each
        // filtered by the semantics, cost W5 a test per state of either.
        match self.chart.xstate {
            true => Leaves::Entered(
                self.core
                    .entry_order
                    .iter()
                    .copied()
                    .filter(|&s| self.chart.state(s).children.is_empty()),
            ),
            false => Leaves::Active(self.configuration()),
        }
    }

    /// Active atomic states (the leaves of the configuration) in document order.
    pub fn configuration(&self) -> impl Iterator<Item = StateId> + '_ {
        self.core
            .active
            .iter()
            .filter(|s| self.chart.state(*s).children.is_empty())
    }

    /// The context field's current value.
    pub fn context_value(&self, field: &str) -> Option<&Value> {
        self.chart
            .layout
            .slot(field)
            .map(|slot| &self.core.context[slot as usize])
    }

    /// The whole context as a map.
    pub fn context(&self) -> Value {
        self.chart.layout.to_map(&self.core.context)
    }
}

impl Core {
    /// Whether to take the fast paths: always, except in tests that compare
    /// them with the general ones.
    #[inline(always)]
    fn fast(&self) -> bool {
        #[cfg(test)]
        return !self.general;
        #[cfg(not(test))]
        true
    }

    /// Counts one microstep against the budget of the current call. A machine
    /// whose eventless transitions or own events never settle would hang the
    /// host; it is stopped with an error instead.
    #[inline]
    fn spend(&mut self, chart: &Chart) -> bool {
        if self.budget > 1 {
            self.budget -= 1;
            return true;
        }
        self.exhausted(chart)
    }

    /// The budget's last microstep: the call stops with an error, once.
    #[cold]
    fn exhausted(&mut self, chart: &Chart) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget = 0;
        self.step.unsettled = Some(Box::new(Unsettled::new(
            chart,
            self.step.event.clone(),
            chart.microstep_limit,
            &self.step.transitions,
        )));
        self.internal.clear();
        self.external.clear();
        false
    }

    #[inline(always)]
    fn run_to_completion(&mut self, chart: &Chart) {
        if self.skip_idle_loop(!chart.has_eventless && self.internal.is_empty()) {
            return;
        }
        self.complete_macrostep(chart);
    }

    fn complete_macrostep(&mut self, chart: &Chart) {
        // Under `semantics: xstate`, an eventless microstep that changed
        // nothing XState's snapshot holds is not followed by another
        // eventless selection, but by the next internal event (XState's
        // `macrostep` compares the snapshots by identity): so an action-only
        // targetless `always` runs once, not without end.
        let mut eventless = true;
        while self.status == Status::Active && self.spend(chart) {
            if chart.has_eventless && eventless {
                self.select(chart, None);
                if !self.enabled.is_empty() {
                    self.microstep(chart, None);
                    eventless = !chart.xstate || self.changed;
                    continue;
                }
            }
            eventless = true;
            let Some(event) = self.internal.pop_front() else {
                break;
            };
            if chart.has_invocations && !self.take_completion(chart, &event) {
                continue;
            }
            self.select(chart, Some(&event));
            if !self.enabled.is_empty() {
                self.microstep(chart, Some(&event));
            }
        }
        if self.status == Status::Done {
            self.internal.clear();
        }
    }

    /// The optimal enabled transition set: for each active atomic state in
    /// document order, the first enabled transition of it or its nearest
    /// ancestor; then conflicts resolved in favour of descendants.
    fn select(&mut self, chart: &Chart, event: Option<&Event>) {
        self.enabled.clear();
        self.leaf = None;
        if let Some(event) = event
            && chart.xstate
        {
            self.select_xstate(chart, event, &event.name);
            return;
        }
        if let Some(event) = event
            && self.fast()
        {
            self.select_on_event(chart, event, &event.name);
            return;
        }
        let fast = self.fast();
        if chart.xstate && event.is_none() {
            // XState takes eventless transitions in the order their states
            // were entered, not in document order.
            for &leaf in &self.entry_order {
                if !chart.state(leaf).children.is_empty() {
                    continue;
                }
                walk_up(
                    chart,
                    leaf,
                    None,
                    fast,
                    (&self.context, &self.active),
                    &mut self.guard_errors,
                    &mut self.enabled,
                );
            }
        } else {
            for state in self.active.iter() {
                if chart.state(state).children.is_empty() {
                    walk_up(
                        chart,
                        state,
                        event,
                        fast,
                        (&self.context, &self.active),
                        &mut self.guard_errors,
                        &mut self.enabled,
                    );
                }
            }
        }
        if self.enabled.len() > 1 {
            self.remove_conflicts(chart);
        }
        // A failing guard raises `error.execution` when it is evaluated, as
        // SCXML says, so the event goes before any the actions raise.
        if !self.guard_errors.is_empty() {
            self.flush_errors();
        }
    }

    /// `select` for an event on the fast path: each atomic state's
    /// candidates come listed by the chart (its own transitions, then its
    /// ancestors'). `name` is the event's name, or the chart's copy of it.
    fn select_on_event(&mut self, chart: &Chart, event: &Event, name: &Arc<str>) {
        self.leaf = None;
        if chart.xstate {
            self.select_xstate(chart, event, name);
            return;
        }
        // One atomic state and nothing active after it, as in any
        // configuration without parallel regions (ancestors come first in
        // document order): its first enabled transition, with nothing to
        // conflict.
        let leaf = self
            .active
            .iter()
            .find(|&s| chart.state(s).children.is_empty());
        if let Some(leaf) = leaf
            && self.active.none_after(leaf)
        {
            let found = first_enabled(
                chart,
                leaf,
                event,
                name,
                &self.context,
                &self.active,
                &mut self.guard_errors,
            );
            self.enabled.extend(found);
            self.leaf = Some(leaf);
            if !self.guard_errors.is_empty() {
                self.flush_errors();
            }
            return;
        }
        for state in self.active.iter() {
            if !chart.state(state).children.is_empty() {
                continue;
            }
            let found = first_enabled(
                chart,
                state,
                event,
                name,
                &self.context,
                &self.active,
                &mut self.guard_errors,
            );
            if let Some(t) = found
                && !self.enabled.contains(&t)
            {
                self.enabled.push(t);
            }
        }
        if self.enabled.len() > 1 {
            self.remove_conflicts(chart);
        }
        if !self.guard_errors.is_empty() {
            self.flush_errors();
        }
    }

    /// XState v5's selection for an event: from the root down, a state's
    /// own transitions are looked at only when nothing below it is enabled;
    /// a parallel state gathers what each of its regions enables, and looks
    /// at its own only when no region enables anything. Conflicts are then
    /// resolved as in SCXML.
    fn select_xstate(&mut self, chart: &Chart, event: &Event, name: &Arc<str>) {
        if self.irregular {
            self.select_by_value(chart, event, name);
        } else {
            self.visit_xstate(chart, StateId::ROOT, event, name);
        }
        if self.enabled.len() > 1 {
            self.remove_conflicts(chart);
        }
        if !self.guard_errors.is_empty() {
            self.flush_errors();
        }
    }

    /// Adds what the active `state` enables for the event (XState's
    /// `transitionNode`); whether it enabled anything.
    fn visit_xstate(
        &mut self,
        chart: &Chart,
        state: StateId,
        event: &Event,
        name: &Arc<str>,
    ) -> bool {
        let info = chart.state(state);
        let mut found = false;
        if info.kind == StateKind::Compound {
            // One active child: the configuration is regular.
            let child = info
                .children
                .iter()
                .copied()
                .find(|&c| self.active.contains(c));
            if let Some(child) = child {
                found = self.visit_xstate(chart, child, event, name);
            }
        } else {
            for &child in &info.children {
                if self.active.contains(child) {
                    found |= self.visit_xstate(chart, child, event, name);
                }
            }
        }
        found || self.own_xstate(chart, state, event, name)
    }

    /// Adds the state's first own transition that the event enables
    /// (XState's `StateNode.next`); whether there was one.
    fn own_xstate(
        &mut self,
        chart: &Chart,
        state: StateId,
        event: &Event,
        name: &Arc<str>,
    ) -> bool {
        let own = chart.state(state).on.iter().copied().find(|&t| {
            chart.accepts(t, name)
                && guard_passes(
                    chart,
                    t,
                    &self.context,
                    &self.active,
                    Some(event),
                    &mut self.guard_errors,
                )
        });
        self.enabled.extend(own);
        own.is_some()
    }

    /// XState's selection for an event where the configuration is
    /// irregular: by the snapshot's value, made as XState makes it from its
    /// set of nodes (`getAllStateNodes`, then `getValueFromAdj`), and
    /// walked as `transitionNode` walks it. The value adds what the set
    /// lacks: every ancestor of an active state, a default entry below an
    /// active compound state without an active child and for each region of
    /// an active parallel state that is not active. A state's children in
    /// the value come in the set's order; a compound state's value is its
    /// first child when that child is atomic, and otherwise all of them, as
    /// if it were parallel.
    #[cold]
    fn select_by_value(&mut self, chart: &Chart, event: &Event, name: &Arc<str>) {
        let n = chart.states.len();
        let mut config = self.entry_order.clone();
        let mut member = vec![false; n];
        let mut has_child = vec![false; n];
        for &s in &config {
            member[s.0 as usize] = true;
            if let Some(p) = chart.state(s).parent {
                has_child[p.0 as usize] = true;
            }
        }
        let mut i = 0;
        while i < config.len() {
            let s = config[i];
            let info = chart.state(s);
            match info.kind {
                StateKind::Compound if !has_child[s.0 as usize] => {
                    initial_with_ancestors(chart, s, &mut config, &mut member);
                }
                StateKind::Parallel => {
                    for &c in &info.children {
                        if !matches!(chart.state(c).kind, StateKind::History(_))
                            && !member[c.0 as usize]
                        {
                            initial_with_ancestors(chart, c, &mut config, &mut member);
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let mut i = 0;
        while i < config.len() {
            let mut at = chart.state(config[i]).parent;
            while let Some(p) = at {
                if !member[p.0 as usize] {
                    member[p.0 as usize] = true;
                    config.push(p);
                }
                at = chart.state(p).parent;
            }
            i += 1;
        }
        let mut adjacent: Vec<Vec<StateId>> = vec![Vec::new(); n];
        for &s in &config {
            if let Some(p) = chart.state(s).parent {
                adjacent[p.0 as usize].push(s);
            }
        }
        self.visit_value(chart, &adjacent, StateId::ROOT, event, name);
    }

    /// `transitionNode` over the value below `state`, whose children in the
    /// value are `adjacent`; whether it enabled anything.
    fn visit_value(
        &mut self,
        chart: &Chart,
        adjacent: &[Vec<StateId>],
        state: StateId,
        event: &Event,
        name: &Arc<str>,
    ) -> bool {
        let children = &adjacent[state.0 as usize];
        let found = match children.first() {
            Some(&first)
                if chart.state(state).kind == StateKind::Compound
                    && chart.state(first).children.is_empty() =>
            {
                self.own_xstate(chart, first, event, name)
            }
            _ => {
                let mut found = false;
                for &child in children {
                    found |= self.visit_value(chart, adjacent, child, event, name);
                }
                found
            }
        };
        found || self.own_xstate(chart, state, event, name)
    }

    /// Whether the active states form a configuration as SCXML defines it:
    /// each one's parent active, one active child of each active compound
    /// state, every region of each active parallel state.
    pub(crate) fn regular(&self, chart: &Chart) -> bool {
        self.active.iter().all(|s| {
            let info = chart.state(s);
            if info.parent.is_some_and(|p| !self.active.contains(p)) {
                return false;
            }
            let active = |c: &&StateId| self.active.contains(**c);
            match info.kind {
                StateKind::Compound => info.children.iter().filter(active).count() == 1,
                StateKind::Parallel => info.children.iter().all(|&c| {
                    matches!(chart.state(c).kind, StateKind::History(_)) || self.active.contains(c)
                }),
                _ => true,
            }
        })
    }

    fn guard(&mut self, chart: &Chart, t: TransitionId, event: Option<&Event>) -> bool {
        guard_passes(
            chart,
            t,
            &self.context,
            &self.active,
            event,
            &mut self.guard_errors,
        )
    }

    /// SCXML's removeConflictingTransitions. A transition conflicts with an
    /// earlier one when their exit sets intersect: it replaces those it
    /// conflicts with when its source lies inside each of theirs, else it is
    /// preempted. Exit sets are compared as ranges of ids over the active
    /// set, which needs no set per transition.
    fn remove_conflicts(&mut self, chart: &Chart) {
        let enabled = std::mem::take(&mut self.enabled);
        let mut filtered = std::mem::take(&mut self.filtered);
        filtered.clear();
        for &t1 in &enabled {
            let exit1 = self.exit_range(chart, t1);
            let source1 = chart.transition(t1).source;
            // Preempted by any conflicting transition whose source does not
            // contain t1's; otherwise t1 replaces every one it conflicts with.
            let mut conflicts = false;
            let mut preempted = false;
            for &(t2, exit2) in &filtered {
                if self.conflict(chart, (t1, exit1), (t2, exit2)) {
                    conflicts = true;
                    if !chart.is_descendant(source1, chart.transition(t2).source) {
                        preempted = true;
                        break;
                    }
                }
            }
            if !preempted {
                if conflicts {
                    filtered.retain(|&(t2, exit2)| !self.conflict(chart, (t1, exit1), (t2, exit2)));
                }
                filtered.push((t1, exit1));
            }
        }
        self.enabled = enabled;
        self.enabled.clear();
        self.enabled.extend(filtered.iter().map(|&(t, _)| t));
        self.filtered = filtered;
    }

    fn exit_range(&mut self, chart: &Chart, t: TransitionId) -> ExitRange {
        let domain = self.domain(chart, t)?;
        Some(chart.below(domain))
    }

    /// Whether the exit sets of two transitions share a state.
    #[inline]
    fn conflict(
        &self,
        chart: &Chart,
        (t1, exit1): (TransitionId, ExitRange),
        (t2, exit2): (TransitionId, ExitRange),
    ) -> bool {
        if self.fast() {
            return self.exits_intersect(exit1, exit2);
        }
        let (set1, set2) = (self.exit_set_of(chart, t1), self.exit_set_of(chart, t2));
        set1.iter().any(|s| set2.contains(s))
    }

    /// A transition's exit set as SCXML defines it: the active states below
    /// its domain, worked out from its targets each time. The general path.
    fn exit_set_of(&self, chart: &Chart, t: TransitionId) -> StateSet {
        let info = chart.transition(t);
        let mut targets = Vec::new();
        self.effective_targets(chart, t, &mut targets);
        let mut set = StateSet::with_capacity(chart.states.len());
        if let Some(domain) = chart.domain_of(info.source, info.reenter, &targets) {
            let (start, end) = chart.below(domain);
            for s in self.active.iter_from(start).take_while(|s| s.0 < end) {
                set.insert(s);
            }
        }
        set
    }

    /// Whether two exit sets share an active state. Ranges of subtrees are
    /// nested or disjoint, so the shared part is their overlap.
    fn exits_intersect(&self, a: ExitRange, b: ExitRange) -> bool {
        match (a, b) {
            (Some((start1, end1)), Some((start2, end2))) => {
                let (start, end) = (start1.max(start2), end1.min(end2));
                start < end && self.active.any_in(start, end)
            }
            _ => false,
        }
    }

    /// The states a transition targets, with history states replaced by what
    /// they would restore.
    #[inline]
    fn effective_targets(&self, chart: &Chart, t: TransitionId, out: &mut Vec<StateId>) {
        out.clear();
        let info = chart.transition(t);
        if !info.history_targets && self.fast() {
            for &s in &info.targets {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            return;
        }
        let mut stack: Vec<StateId> = chart.transition(t).targets.iter().rev().copied().collect();
        while let Some(s) = stack.pop() {
            if let StateKind::History(_) = chart.state(s).kind {
                let restored = self
                    .history
                    .iter()
                    .find(|(h, _)| *h == s)
                    .map(|(_, v)| v.as_slice());
                let next = restored.unwrap_or(&chart.state(s).initial);
                stack.extend(next.iter().rev());
            } else if !out.contains(&s) {
                out.push(s);
            }
        }
    }

    /// The state a transition exits and re-enters below (`Chart::domain_of`).
    /// The chart knows it unless a target is a history state.
    #[inline]
    fn domain(&mut self, chart: &Chart, t: TransitionId) -> Option<StateId> {
        let info = chart.transition(t);
        if !info.history_targets && self.fast() {
            return info.domain;
        }
        let mut targets = std::mem::take(&mut self.domain_targets);
        self.effective_targets(chart, t, &mut targets);
        let domain = chart.domain_of(info.source, info.reenter, &targets);
        self.domain_targets = targets;
        domain
    }

    #[inline(always)]
    fn microstep(&mut self, chart: &Chart, event: Option<&Event>) {
        self.changed = false;
        let leaf = self.leaf.take();
        if self.fast()
            && let [t] = self.enabled[..]
        {
            let info = chart.transition(t);
            // One targetless transition, the most common microstep: its
            // actions alone, as below, without taking the list apart.
            if info.targets.is_empty() {
                self.step.transitions.push(t);
                self.run_actions(chart, &info.actions, event);
                return;
            }
            if let (Some(leaf), Some(entry)) = (leaf, &info.entry)
                && self.microstep_on_branch(chart, t, leaf, entry, event)
            {
                return;
            }
        }
        self.microstep_general(chart, event);
    }

    /// The microstep of one transition `t` taken where the configuration is
    /// the branch of `leaf`, its only active atomic state, and where the
    /// chart lists what `t` enters (`TransitionInfo::entry`): it exits the
    /// leaf and its ancestors below the domain, deepest first, as the
    /// general path's exit set in reverse document order would, without
    /// building the exit and entry sets. False, with nothing done, when a
    /// state to exit records history (the general path records it).
    #[inline(never)]
    fn microstep_on_branch(
        &mut self,
        chart: &Chart,
        t: TransitionId,
        leaf: StateId,
        entry: &[StateId],
        event: Option<&Event>,
    ) -> bool {
        let info = chart.transition(t);
        let Some(domain) = info.domain else {
            return false;
        };
        if domain != OUTSIDE_ROOT && !chart.is_descendant(leaf, domain) {
            return false;
        }
        let mut exiting = std::mem::take(&mut self.exiting);
        exiting.clear();
        let mut at = Some(leaf);
        while let Some(s) = at
            && s != domain
        {
            if !chart.state(s).history.is_empty() {
                self.exiting = exiting;
                return false;
            }
            exiting.push(s);
            at = chart.state(s).parent;
        }
        for &s in &exiting {
            self.exit_state(chart, s, event);
        }
        self.exiting = exiting;
        self.step.transitions.push(t);
        self.run_actions(chart, &info.actions, event);
        self.enter_states(chart, entry, event);
        true
    }

    fn microstep_general(&mut self, chart: &Chart, event: Option<&Event>) {
        let enabled = std::mem::take(&mut self.enabled);
        if self.fast()
            && enabled
                .iter()
                .all(|&t| chart.transition(t).targets.is_empty())
        {
            // Targetless transitions exit and enter nothing: only their
            // actions run, which spares the exit and entry sets.
            for &t in &enabled {
                self.step.transitions.push(t);
                self.run_actions(chart, &chart.transition(t).actions, event);
            }
            self.enabled = enabled;
            return;
        }
        // XState keeps the order of its active states when a microstep
        // leaves their set as it was and records no history (its
        // `microstep` returns the old snapshot's nodes then), and the next
        // eventless selection follows that order.
        let before = chart
            .xstate
            .then(|| (self.active.clone(), self.entry_order.clone()));
        self.exit(chart, &enabled, event);
        for &t in &enabled {
            self.step.transitions.push(t);
            self.run_actions(chart, &chart.transition(t).actions, event);
        }
        self.enter_set.clear();
        self.default_entry.clear();
        for &t in &enabled {
            let Some(domain) = self.domain(chart, t) else {
                continue;
            };
            // Most transitions need none of the checks below (the chart
            // knows), which spares a step of a flat machine their cost.
            let plain = chart.transition(t).plain_entry;
            let source = chart.transition(t).source;
            for &target in &chart.transition(t).targets {
                // A target that is the domain is a kept source's self-target:
                // the source stays, its children take their default entry.
                // (Under `xstate` the domain is also the kept root a
                // transition of another state targets, which is entered
                // again, as XState enters every target but a kept source.)
                if !plain && target == domain && (source == domain || !chart.xstate) {
                    self.add_default_children(chart, target);
                } else {
                    self.add_descendants(chart, target);
                }
            }
            let mut targets = std::mem::take(&mut self.scratch);
            self.effective_targets(chart, t, &mut targets);
            for &s in &targets {
                if plain || s != domain {
                    self.add_ancestors(chart, s, domain);
                }
            }
            self.scratch = targets;
            // A kept parallel source had all its regions exited: those the
            // targets do not enter take their default entry.
            if !plain && domain != OUTSIDE_ROOT && chart.state(domain).kind == StateKind::Parallel {
                self.add_default_children(chart, domain);
            }
        }
        self.enabled = enabled;
        self.enter(chart, event);
        if let Some((active, order)) = before {
            let history = self
                .exit_set
                .sorted()
                .iter()
                .any(|&s| !chart.state(s).history.is_empty());
            if active == self.active && !history {
                self.entry_order = order;
            } else {
                self.changed = true;
            }
            // Only a history target can make the configuration irregular
            // (a source it restores is entered again in place), and only a
            // microstep can make it regular again.
            if self.irregular
                || self
                    .enabled
                    .iter()
                    .any(|&t| chart.transition(t).history_targets)
            {
                self.irregular = !self.regular(chart);
            }
        }
    }

    /// Exits the states the enabled transitions leave, deepest last in
    /// document order first, recording history before any exit runs. Exit
    /// actions see the event being processed, as in SCXML.
    fn exit(&mut self, chart: &Chart, enabled: &[TransitionId], event: Option<&Event>) {
        self.exit_set.clear();
        for &t in enabled {
            if let Some(domain) = self.domain(chart, t) {
                let (start, end) = chart.below(domain);
                for s in self.active.iter_in(start, end) {
                    self.exit_set.insert(s);
                }
            }
        }
        if self.exit_set.is_empty() {
            return;
        }
        let mut exiting = std::mem::take(&mut self.exiting);
        exiting.clear();
        exiting.extend_from_slice(self.exit_set.sorted());
        for &s in &exiting {
            for &h in &chart.state(s).history {
                let deep = matches!(
                    chart.state(h).kind,
                    StateKind::History(crate::model::HistoryKind::Deep)
                );
                let end = chart.state(s).subtree_end;
                let recorded: Vec<StateId> = self
                    .active
                    .iter_from(s.0 + 1)
                    .take_while(|x| x.0 < end)
                    .filter(|&x| {
                        if deep {
                            chart.state(x).children.is_empty()
                        } else {
                            chart.state(x).parent == Some(s)
                        }
                    })
                    .collect();
                match self.history.iter_mut().find(|(k, _)| *k == h) {
                    Some((_, v)) => *v = recorded,
                    None => self.history.push((h, recorded)),
                }
            }
        }
        for &s in exiting.iter().rev() {
            self.exit_state(chart, s, event);
        }
        self.exiting = exiting;
    }

    /// Exits one state: its exit actions, then its invocations and delayed
    /// transitions cancelled. History is recorded before, by the caller.
    #[inline(always)]
    fn exit_state(&mut self, chart: &Chart, s: StateId, event: Option<&Event>) {
        self.run_actions(chart, &chart.state(s).exit, event);
        if !self.invocations.is_empty() {
            self.cancel_invocations(chart, s);
        }
        if !self.timers.is_empty() {
            self.timers.retain(|timer| !matches!(timer.what, Due::Transition(t) if chart.transition(t).source == s));
        }
        self.active.remove(s);
        if chart.xstate {
            self.entry_order.retain(|&x| x != s);
            // XState stops each of the state's children, which makes a
            // new snapshot.
            self.changed |= !chart.state(s).invoke.is_empty();
        }
        self.step.exited.push(s);
    }

    fn add_descendants(&mut self, chart: &Chart, state: StateId) {
        let info = chart.state(state);
        if let StateKind::History(_) = info.kind {
            let parent = info.parent.unwrap_or(StateId::ROOT);
            let restored = self
                .history
                .iter()
                .find(|(h, _)| *h == state)
                .map(|(_, v)| v.clone());
            let states = restored.unwrap_or_else(|| info.initial.clone());
            for &s in &states {
                self.add_descendants(chart, s);
            }
            for &s in &states {
                self.add_ancestors(chart, s, parent);
            }
            return;
        }
        self.enter_set.insert(state);
        // Most states entered are atomic: they spare the call.
        if matches!(info.kind, StateKind::Compound | StateKind::Parallel) {
            self.add_default_children(chart, state);
        }
    }

    /// Adds the default entry below `state`: a compound state's initial
    /// states, or every region of a parallel state that the enter set does
    /// not enter yet.
    fn add_default_children(&mut self, chart: &Chart, state: StateId) {
        let info = chart.state(state);
        match info.kind {
            StateKind::Compound => {
                self.default_entry.insert(state);
                let initial = if info.initial.is_empty() {
                    &info.children[..1]
                } else {
                    &info.initial[..]
                };
                for &s in initial {
                    self.add_descendants(chart, s);
                }
                for &s in initial {
                    self.add_ancestors(chart, s, state);
                }
            }
            StateKind::Parallel => {
                for &child in &info.children {
                    if !self
                        .enter_set
                        .any_in(child.0, chart.state(child).subtree_end)
                    {
                        self.add_descendants(chart, child);
                    }
                }
            }
            _ => {}
        }
    }

    /// Adds the ancestors of `state` below `ancestor`, completing any parallel
    /// state among them with its other regions.
    fn add_ancestors(&mut self, chart: &Chart, state: StateId, ancestor: StateId) {
        let mut at = chart.state(state).parent;
        while let Some(anc) = at {
            if anc == ancestor {
                break;
            }
            self.enter_set.insert(anc);
            if chart.state(anc).kind == StateKind::Parallel {
                self.add_default_children(chart, anc);
            }
            at = chart.state(anc).parent;
        }
    }

    /// Enters the states of the enter set in document order; entry actions
    /// see the event being processed, as in SCXML.
    fn enter(&mut self, chart: &Chart, event: Option<&Event>) {
        let mut entering = std::mem::take(&mut self.entering);
        entering.clear();
        entering.extend_from_slice(self.enter_set.sorted());
        self.enter_states(chart, &entering, event);
        self.entering = entering;
    }

    /// Enters `states`, given in document order.
    fn enter_states(&mut self, chart: &Chart, states: &[StateId], event: Option<&Event>) {
        let was_active = self.status == Status::Active;
        self.completed.clear();
        for &s in states {
            // A state entered again without an exit (XState's history
            // quirk) keeps its place, as in XState's set of nodes.
            if chart.xstate && !self.active.contains(s) {
                self.entry_order.push(s);
            }
            self.active.insert(s);
            self.step.entered.push(s);
            self.run_actions(chart, &chart.state(s).entry, event);
            if !chart.state(s).invoke.is_empty() {
                self.start_invocations(chart, s, event);
            }
            for &t in &chart.state(s).after {
                if let Some(delay) = chart.transition(t).delay {
                    self.schedule(delay, Due::Transition(t));
                }
            }
            if chart.state(s).kind == StateKind::Final {
                self.complete(chart, s);
            }
        }
        if was_active && self.status == Status::Done {
            self.exit_interpreter(chart, event);
        }
    }

    /// Runs the exit actions of every active state, deepest last in document
    /// order first, when the machine is done (SCXML's exitInterpreter; XState
    /// does the same). The configuration is kept, so that the actor still
    /// shows the final state it ended in.
    fn exit_interpreter(&mut self, chart: &Chart, event: Option<&Event>) {
        let mut exiting = std::mem::take(&mut self.exiting);
        exiting.clear();
        exiting.extend(self.active.iter());
        for &s in exiting.iter().rev() {
            self.run_actions(chart, &chart.state(s).exit, event);
            if !self.invocations.is_empty() {
                self.cancel_invocations(chart, s);
            }
        }
        self.exiting = exiting;
    }

    /// Starts the state's invocations, after its entry actions (as XState
    /// does). An input that cannot be evaluated fails the invocation: its
    /// error event is raised, for `onError` to handle.
    #[inline(never)]
    fn start_invocations(&mut self, chart: &Chart, state: StateId, event: Option<&Event>) {
        // XState spawns a child for each, which makes a new snapshot.
        self.changed = true;
        for (index, invocation) in chart.state(state).invoke.iter().enumerate() {
            let active = &self.active;
            let is_active = |s: u32| active.contains(StateId(s));
            let input = evaluate_map(&invocation.input, &self.context, event, &is_active);
            let running = Running {
                state,
                index: index as u32,
                input: Value::Null,
                key: None,
            };
            match input {
                Ok(input) => {
                    self.step.invoked.push(Invoked {
                        id: Arc::clone(&invocation.id),
                        src: Arc::clone(&invocation.src),
                        input: input.clone(),
                        state,
                    });
                    self.invocations.push(Running { input, ..running });
                }
                Err(message) => {
                    let mut data = expr::Map::default();
                    data.insert("error".into(), Value::from(message.as_str()));
                    self.step.errors.push(message);
                    self.invocations.push(running);
                    self.internal.push_back(Event::new(
                        Arc::clone(&invocation.error_event),
                        None,
                        Value::Map(Arc::new(data)),
                    ));
                }
            }
        }
    }

    /// Cancels the invocations of a state being exited.
    #[inline(never)]
    fn cancel_invocations(&mut self, chart: &Chart, state: StateId) {
        let step = &mut self.step;
        self.invocations.retain(|running| {
            if running.state != state {
                return true;
            }
            step.cancelled.push(Cancelled {
                id: Arc::clone(&chart.state(state).invoke[running.index as usize].id),
                state,
                key: running.key.clone(),
            });
            false
        });
    }

    /// Whether the event is to be processed: any event but a completion,
    /// a completion of an actor no state invokes, and a completion of an
    /// invocation in flight, which it ends. A
    /// completion of an invocation that was cancelled or never started (or
    /// whose bound key is not the event's id) is ignored.
    #[inline(never)]
    fn take_completion(&mut self, chart: &Chart, event: &Event) -> bool {
        let Some((_, id)) = Completion::of_event(&event.name) else {
            return true;
        };
        // The completion of an actor no state invokes (one an action
        // spawned) is an event like any other.
        if chart
            .machine
            .invocations_completed_by(&event.name)
            .next()
            .is_none()
        {
            return true;
        }
        let event_id = event.id.as_ref().and_then(Value::as_str);
        let found = self.invocations.iter().position(|running| {
            &*chart.state(running.state).invoke[running.index as usize].id == id
                && match (&running.key, event_id) {
                    (Some(key), Some(event_id)) => &**key == event_id,
                    _ => true,
                }
        });
        match found {
            Some(index) => {
                self.invocations.remove(index);
                true
            }
            None => false,
        }
    }

    /// Raises `done.state` events for a final state, or ends the machine when
    /// the final state is one of its top-level states.
    fn complete(&mut self, chart: &Chart, state: StateId) {
        let Some(parent) = chart.state(state).parent else {
            return;
        };
        if chart.xstate {
            self.complete_xstate(chart, parent);
            return;
        }
        if parent == StateId::ROOT && chart.state(parent).kind != StateKind::Parallel {
            self.status = Status::Done;
            self.timers.clear();
            return;
        }
        self.internal.push_back(Event::new(
            Arc::clone(&chart.state(parent).done_event),
            None,
            Value::Null,
        ));
        if let Some(grand) = chart.state(parent).parent
            && chart.state(grand).kind == StateKind::Parallel
            && chart
                .state(grand)
                .children
                .iter()
                .all(|&c| self.in_final(chart, c))
        {
            if grand == StateId::ROOT {
                self.status = Status::Done;
                self.timers.clear();
            } else {
                self.internal.push_back(Event::new(
                    Arc::clone(&chart.state(grand).done_event),
                    None,
                    Value::Null,
                ));
            }
        }
    }

    /// XState v5's completion of a final state whose parent is `parent`:
    /// `done.state` for a compound parent, then for every parallel ancestor
    /// up the chain whose regions are all final, however deep; the machine
    /// is done when the chain passes the root.
    fn complete_xstate(&mut self, chart: &Chart, parent: StateId) {
        if chart.state(parent).kind == StateKind::Compound {
            self.raise_done(chart, parent);
        }
        let mut marker = match chart.state(parent).kind {
            StateKind::Parallel => Some(parent),
            _ => chart.state(parent).parent,
        };
        while let Some(m) = marker
            && chart.state(m).kind == StateKind::Parallel
            && !self.completed.contains(&m)
            && self.in_final(chart, m)
        {
            self.completed.push(m);
            self.raise_done(chart, m);
            marker = chart.state(m).parent;
        }
        if marker.is_none() {
            self.status = Status::Done;
            self.timers.clear();
        }
    }

    fn raise_done(&mut self, chart: &Chart, state: StateId) {
        self.internal.push_back(Event::new(
            Arc::clone(&chart.state(state).done_event),
            None,
            Value::Null,
        ));
    }

    fn schedule(&mut self, delay: u64, what: Due) {
        self.timers.push(Timer {
            due: self.now + delay,
            seq: self.next_seq,
            what,
        });
        self.next_seq += 1;
    }

    fn in_final(&self, chart: &Chart, state: StateId) -> bool {
        let info = chart.state(state);
        match info.kind {
            StateKind::Compound => info
                .children
                .iter()
                .any(|&c| chart.state(c).kind == StateKind::Final && self.active.contains(c)),
            StateKind::Parallel => info.children.iter().all(|&c| self.in_final(chart, c)),
            _ => false,
        }
    }

    /// Runs a block of actions; the first failing action raises
    /// `error.execution` and ends the block, as in SCXML. Inlined, so that
    /// the many empty blocks cost no call.
    #[inline]
    fn run_actions(&mut self, chart: &Chart, actions: &[CompiledAction], event: Option<&Event>) {
        for action in actions {
            // An `assign`, the most common action, is run here; the others
            // out of line, whose setup would otherwise come first each time.
            let done = match action {
                CompiledAction::Assign(assign) => self.assign(assign, event),
                _ => self.run_action(chart, action, event),
            };
            if let Err(message) = done {
                self.step.errors.push(message);
                self.internal
                    .push_back(Event::new("error.execution", None, Value::Null));
                break;
            }
        }
    }

    #[inline(always)]
    fn assign(&mut self, assign: &CompiledAssign, event: Option<&Event>) -> Result<(), String> {
        // XState's `assign` makes a new snapshot whatever it writes.
        self.changed = true;
        let active = &self.active;
        let is_active = |s: u32| active.contains(StateId(s));
        assign
            .apply(&mut self.context, event, &is_active)
            .map_err(|e| e.message)
    }

    #[inline(never)]
    fn run_action(
        &mut self,
        chart: &Chart,
        action: &CompiledAction,
        event: Option<&Event>,
    ) -> Result<(), String> {
        let active = &self.active;
        let is_active = |s: u32| active.contains(StateId(s));
        match action {
            CompiledAction::Assign(assign) => self.assign(assign, event)?,
            CompiledAction::Raise { event: name, data } => {
                let data = evaluate_map(data, &self.context, event, &is_active)?;
                self.internal
                    .push_back(Event::new(Arc::clone(name), None, data));
            }
            CompiledAction::Send {
                event: name,
                data,
                delay,
                id,
            } => {
                let data = evaluate_map(data, &self.context, event, &is_active)?;
                let sent = Event::new(Arc::clone(name), None, data);
                match delay {
                    Some(delay) => self.schedule(
                        *delay,
                        Due::Send {
                            event: sent,
                            id: id.clone(),
                        },
                    ),
                    None => self.external.push_back(sent),
                }
            }
            CompiledAction::Cancel { id } => {
                self.timers
                    .retain(|t| !matches!(&t.what, Due::Send { id: Some(x), .. } if x == id));
            }
            CompiledAction::Effect { name, args } => {
                let args = evaluate_map(args, &self.context, event, &is_active)?;
                let position = self.step.effects.len() as u32;
                self.step.effects.push(EffectCall {
                    name: Arc::clone(name),
                    args,
                    position,
                    host: false,
                    ran: false,
                });
            }
            CompiledAction::Host { name, action } => {
                let ran = match &action.0 {
                    Some(implementation) => {
                        let call = HostCall {
                            name,
                            layout: &chart.layout,
                            context: &self.context,
                            event,
                        };
                        let updates = implementation(&call)
                            .map_err(|e| format!("the host action `{name}` failed: {e}"))?;
                        self.apply_updates(chart, name, &updates)?;
                        true
                    }
                    None => false,
                };
                let position = self.step.effects.len() as u32;
                self.step.effects.push(EffectCall {
                    name: Arc::clone(name),
                    args: Value::Null,
                    position,
                    host: true,
                    ran,
                });
            }
            CompiledAction::Log(expr) => {
                let value =
                    expr::eval(expr, &self.context, event, &is_active).map_err(|e| e.message)?;
                self.step.logs.push(value);
            }
        }
        Ok(())
    }

    /// Writes a host action's updates as an `assign` does: every field must
    /// be in the context, else nothing is written.
    fn apply_updates(
        &mut self,
        chart: &Chart,
        name: &str,
        updates: &Updates,
    ) -> Result<(), String> {
        if updates.is_empty() {
            return Ok(());
        }
        self.changed = true;
        let mut slots = Vec::new();
        for (field, value) in updates.iter() {
            let slot = chart.layout.slot(field).ok_or_else(|| {
                format!("the host action `{name}` updated `{field}`, which is not a context field")
            })?;
            slots.push((slot as usize, value));
        }
        for (slot, value) in slots {
            self.context[slot] = value.clone();
        }
        Ok(())
    }

    /// Records the guards' errors and raises `error.execution` for each,
    /// once per step: a guard evaluated again after every microstep (an
    /// eventless one) would otherwise raise errors without end.
    fn flush_errors(&mut self) {
        for message in self.guard_errors.drain(..) {
            if self.step.errors.contains(&message) {
                continue;
            }
            self.step.errors.push(message);
            self.internal
                .push_back(Event::new("error.execution", None, Value::Null));
        }
    }
}

/// Adds the first enabled transition of the atomic state `leaf` or of its
/// nearest ancestor that has one (SCXML's selection, for an event or, with
/// `None`, eventless), unless it is already enabled through another leaf.
#[inline(always)]
fn walk_up(
    chart: &Chart,
    leaf: StateId,
    event: Option<&Event>,
    fast: bool,
    (context, active): (&[Value], &StateSet),
    errors: &mut Vec<String>,
    enabled: &mut Vec<TransitionId>,
) {
    let mut at = Some(leaf);
    while let Some(s) = at {
        let info = chart.state(s);
        let candidates = if event.is_some() {
            &info.on
        } else {
            &info.always
        };
        for &t in candidates {
            let matches = match event {
                Some(e) if fast => chart.accepts(t, &e.name),
                Some(e) => chart
                    .transition(t)
                    .descriptor
                    .as_ref()
                    .is_some_and(|d| d.matches(&e.name)),
                None => true,
            };
            if matches && guard_passes(chart, t, context, active, event, errors) {
                if !enabled.contains(&t) {
                    enabled.push(t);
                }
                return;
            }
        }
        at = info.parent;
    }
}

/// Adds to XState's value nodes what `getInitialStateNodesWithTheirAncestors`
/// gives for `state`: the state and its default entry, in that order.
fn initial_with_ancestors(
    chart: &Chart,
    state: StateId,
    config: &mut Vec<StateId>,
    member: &mut [bool],
) {
    let mut add = |s: StateId, config: &mut Vec<StateId>| {
        if !member[s.0 as usize] {
            member[s.0 as usize] = true;
            config.push(s);
        }
    };
    let mut stack = vec![state];
    let mut initial = Vec::new();
    while let Some(s) = stack.pop() {
        add(s, config);
        let info = chart.state(s);
        match info.kind {
            StateKind::Compound => {
                let first = info.initial.first().or(info.children.first()).copied();
                if let Some(first) = first {
                    initial.push(first);
                    stack.push(first);
                }
            }
            StateKind::Parallel => stack.extend(
                info.children
                    .iter()
                    .rev()
                    .copied()
                    .filter(|&c| !matches!(chart.state(c).kind, StateKind::History(_))),
            ),
            _ => {}
        }
    }
    // An initial state below a child of its compound state brings the
    // states between.
    for s in initial {
        let mut at = chart.state(s).parent;
        while let Some(a) = at
            && a != state
        {
            add(a, config);
            at = chart.state(a).parent;
        }
    }
}

/// The first of the atomic state `leaf`'s candidates that `name` triggers
/// and whose guard passes.
#[inline(always)]
fn first_enabled(
    chart: &Chart,
    leaf: StateId,
    event: &Event,
    name: &Arc<str>,
    context: &[Value],
    active: &StateSet,
    errors: &mut Vec<String>,
) -> Option<TransitionId> {
    chart.state(leaf).candidates.iter().copied().find(|&t| {
        chart.accepts(t, name) && guard_passes(chart, t, context, active, Some(event), errors)
    })
}

/// Evaluates a guard; an error counts as false and is kept in `errors`, to be
/// raised as `error.execution` as in SCXML. Kept out of line: inlined, its
/// setup would sit in the prologue of the loops that call it, whose every
/// pass does not need it.
#[inline(never)]
fn guard_passes(
    chart: &Chart,
    t: TransitionId,
    context: &[Value],
    active: &StateSet,
    event: Option<&Event>,
    errors: &mut Vec<String>,
) -> bool {
    let Some(guard) = &chart.transition(t).guard else {
        return true;
    };
    let is_active = |s: u32| active.contains(StateId(s));
    let host = |index: u32| {
        let (name, guard) = chart.guards.get(index as usize)?;
        let call = HostCall {
            name,
            layout: &chart.layout,
            context,
            event,
        };
        guard.0.as_ref().map(|guard| guard(&call))
    };
    expr::eval_guard_with_host(guard, context, event, &is_active, &host).unwrap_or_else(|error| {
        errors.push(error.message);
        false
    })
}

fn evaluate_map(
    entries: &[(Arc<str>, expr::Compiled)],
    context: &[Value],
    event: Option<&Event>,
    active: &dyn Fn(u32) -> bool,
) -> Result<Value, String> {
    if entries.is_empty() {
        return Ok(Value::Null);
    }
    let mut map = expr::Map::default();
    for (key, compiled) in entries {
        let value = expr::eval(compiled, context, event, active).map_err(|e| e.message)?;
        map.insert(Arc::clone(key), value);
    }
    Ok(Value::Map(Arc::new(map)))
}

impl Actor {
    /// The invocations in flight, in the order they started.
    pub fn invocations(&self) -> impl Iterator<Item = RunningInvocation<'_>> + '_ {
        self.core.invocations.iter().map(|running| {
            let invocation = &self.chart.state(running.state).invoke[running.index as usize];
            RunningInvocation {
                id: &invocation.id,
                src: &invocation.src,
                state: running.state,
                input: &running.input,
                key: running.key.as_deref(),
            }
        })
    }

    /// Gives each invocation in flight that has no key yet the key `key`
    /// makes of it. The durable runtime binds the outbox key, which the
    /// completion then carries as its event id, so that a late answer to
    /// an earlier, cancelled start of the same invocation is ignored.
    pub fn bind_invocation_keys(&mut self, mut key: impl FnMut(RunningInvocation<'_>) -> String) {
        for running in &mut self.core.invocations {
            if running.key.is_some() {
                continue;
            }
            let invocation = &self.chart.state(running.state).invoke[running.index as usize];
            let bound = key(RunningInvocation {
                id: &invocation.id,
                src: &invocation.src,
                state: running.state,
                input: &running.input,
                key: None,
            });
            running.key = Some(bound.into());
        }
    }

    /// The record of the latest macrostep (the start, a send or timers).
    pub fn last_step(&self) -> &Step {
        &self.core.step
    }

    /// A copy of the actor's state without the buffers its steps reuse or
    /// the record of its last step (`last_step` is empty): it continues
    /// exactly as the original, and costs less to keep and to drop, for a
    /// search that holds thousands (the linter's replay).
    pub(crate) fn clone_state(&self) -> Actor {
        Actor {
            chart: self.chart.clone(),
            core: self.core.clone_state(),
        }
    }
}

/// The leaves of `Actor::snapshot_leaves`: in the order entered (XState) or
/// in document order (SCXML).
enum Leaves<E, A> {
    Entered(E),
    Active(A),
}

impl<E: Iterator<Item = StateId>, A: Iterator<Item = StateId>> Iterator for Leaves<E, A> {
    type Item = StateId;

    fn next(&mut self) -> Option<StateId> {
        match self {
            Leaves::Entered(entered) => entered.next(),
            Leaves::Active(active) => active.next(),
        }
    }
}
