//! What one macrostep did.

use std::sync::Arc;

use super::unsettled::Unsettled;
use crate::expr::Value;
use crate::model::{StateId, TransitionId};

/// The record of one macrostep: the external event (or start, or timers), the
/// transitions taken, the states left and entered, and what it asked of the
/// host. The actor reuses its buffers from step to step.
#[derive(Debug, Default, PartialEq)]
pub struct Step {
    /// The external event; `None` for the start and for fired timers.
    pub event: Option<Arc<str>>,
    /// The event enabled no transition and changed nothing.
    pub ignored: bool,
    /// Transitions taken, in order, including eventless ones and those of
    /// internal events that followed.
    pub transitions: Vec<TransitionId>,
    pub exited: Vec<StateId>,
    pub entered: Vec<StateId>,
    /// Effects and host actions, in the order they ran.
    pub effects: Vec<EffectCall>,
    /// Invocations started, in the order their states were entered; the
    /// host answers each with a completion event.
    pub invoked: Vec<Invoked>,
    /// Invocations cancelled because their state was exited, in order,
    /// including any started earlier in this same step.
    pub cancelled: Vec<Cancelled>,
    /// Values of `log` actions.
    pub logs: Vec<Value>,
    /// Expressions that failed; each also raised `error.execution`.
    pub errors: Vec<String>,
    /// Set when the step ran out of its microstep budget and stopped
    /// half-way: an error, not a result (see `Unsettled`).
    pub unsettled: Option<Box<Unsettled>>,
}

// By hand for `clone_from`, which reuses the buffers (see `Core`).
impl Clone for Step {
    fn clone(&self) -> Step {
        let mut step = Step::default();
        step.clone_from(self);
        step
    }

    fn clone_from(&mut self, source: &Step) {
        let Step {
            event,
            ignored,
            transitions,
            exited,
            entered,
            effects,
            invoked,
            cancelled,
            logs,
            errors,
            unsettled,
        } = source;
        self.event.clone_from(event);
        self.ignored = *ignored;
        self.transitions.clone_from(transitions);
        self.exited.clone_from(exited);
        self.entered.clone_from(entered);
        self.effects.clone_from(effects);
        self.invoked.clone_from(invoked);
        self.cancelled.clone_from(cancelled);
        self.logs.clone_from(logs);
        self.errors.clone_from(errors);
        self.unsettled.clone_from(unsettled);
    }
}

/// An effect or host action the machine asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct EffectCall {
    pub name: Arc<str>,
    /// The evaluated `with` arguments as a map, `Null` when there are none.
    pub args: Value,
    /// Its place among the effects of the step, which with the process and
    /// event id makes a stable idempotency key.
    pub position: u32,
    /// A name that is not a declared effect: a host action.
    pub host: bool,
    /// For a host action: whether the chart had its implementation, which
    /// ran during the step (its updates are in the context). An
    /// unregistered one is only recorded here, for the host to carry out.
    pub ran: bool,
}

/// An invocation the machine started: the host performs `src` with
/// `input` and answers with `xstate.done.actor.ID` (payload `output`) or
/// `xstate.error.actor.ID` (payload `error`).
#[derive(Clone, Debug, PartialEq)]
pub struct Invoked {
    pub id: Arc<str>,
    pub src: Arc<str>,
    /// The evaluated input as a map, `Null` when there is none.
    pub input: Value,
    /// The invoking state.
    pub state: StateId,
}

/// An invocation stopped before it completed; its answer, should one come,
/// is ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Cancelled {
    pub id: Arc<str>,
    pub state: StateId,
    /// The key the host bound to it (`Actor::bind_invocation_keys`), if any.
    pub key: Option<Arc<str>>,
}

impl Step {
    #[inline(always)]
    pub(crate) fn clear(&mut self, event: Option<Arc<str>>) {
        self.event = event;
        self.ignored = false;
        self.transitions.clear();
        self.exited.clear();
        self.entered.clear();
        // These hold values with drop code, whose loop is a call even over
        // nothing; they are mostly empty already.
        if !self.effects.is_empty() {
            self.effects.clear();
        }
        if !self.invoked.is_empty() {
            self.invoked.clear();
        }
        if !self.cancelled.is_empty() {
            self.cancelled.clear();
        }
        if !self.logs.is_empty() {
            self.logs.clear();
        }
        if !self.errors.is_empty() {
            self.errors.clear();
        }
        if self.unsettled.is_some() {
            self.unsettled = None;
        }
    }

    /// The step, or the error of a step that did not settle.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::expr::Event;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse(
    ///     "machine m\ninitial a\nstate a { on GO -> b }\n\
    ///      state b { entry raise PING\n on PING -> b reenter }",
    ///     Syntax::Dsl,
    /// )
    /// .unwrap();
    /// let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    /// let error = actor.send(&Event::named("GO")).settled().unwrap_err();
    /// assert_eq!(error.paths, ["b"]);
    /// assert_eq!(error.events, ["PING"]);
    /// ```
    pub fn settled(&self) -> Result<&Step, &Unsettled> {
        match &self.unsettled {
            None => Ok(self),
            Some(unsettled) => Err(unsettled),
        }
    }
}
