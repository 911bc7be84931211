//! Time for delayed transitions: the host's clock, real or virtual.
//!
//! An actor keeps its own notion of now and moves only when told
//! (`Actor::advance_to`), so that a snapshot can be restored elsewhere and its
//! timers fire when they are due. A `Clock` (`crate::clock`) says what now is.

use super::actor::{Due, Timer};
use super::{Actor, Step};
use crate::clock::Clock;

impl Actor {
    /// Brings the actor to the clock's time, firing every delayed transition
    /// and delayed send due by then. Call it before `send` when the actor runs
    /// on a real clock, so that new timers count from the right moment.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart, VirtualClock};
    ///
    /// let machine = idemchart::syntax::parse(
    ///     "machine: lamp\ninitial: on\nstates:\n  on: { after: { 30s: off } }\n  off: {}\n",
    ///     idemchart::syntax::Syntax::Yaml,
    /// ).unwrap();
    /// let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    /// let clock = VirtualClock::new(0);
    /// clock.advance(29_999);
    /// actor.tick(&clock);
    /// assert_eq!(actor.configuration_paths(), ["on"]);
    /// clock.advance(1);
    /// actor.tick(&clock);
    /// assert_eq!(actor.configuration_paths(), ["off"]);
    /// ```
    pub fn tick(&mut self, clock: &dyn Clock) -> &Step {
        self.advance_to(clock.now())
    }
}

/// A timer that `Actor::fire_next` fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FiredTimer {
    /// When it was due, on the actor's clock (which it moved there).
    pub due: u64,
    /// Its order of scheduling among the actor's timers, which the snapshot
    /// keeps: two timers of one actor never share it.
    pub seq: u64,
    /// What it was: `after:<state path>[<n>]` for the state's `n`-th delayed
    /// transition, `send:<event>` or `send:<event>#<send id>` for a delayed
    /// send.
    pub label: String,
}

impl Actor {
    /// Fires the earliest timer due by `now` (earliest due time, then
    /// earliest scheduled) as one macrostep of its own, which `last_step`
    /// records, and moves the clock to its due time, not to `now`. `None`
    /// when nothing is due. Calling it until `None` fires what
    /// `advance_to(now)` fires, in the same order, one at a time.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart};
    ///
    /// let machine = idemchart::syntax::parse(
    ///     "machine: lamp\ninitial: on\nstates:\n  on: { after: { 30s: off } }\n  off: {}\n",
    ///     idemchart::syntax::Syntax::Yaml,
    /// ).unwrap();
    /// let mut actor = Actor::new(Arc::new(Chart::new(machine)));
    /// assert_eq!(actor.fire_next(29_999), None);
    /// let fired = actor.fire_next(60_000).unwrap();
    /// assert_eq!((fired.due, fired.label.as_str()), (30_000, "after:on[0]"));
    /// assert_eq!(actor.now(), 30_000);
    /// assert_eq!(actor.configuration_paths(), ["off"]);
    /// ```
    pub fn fire_next(&mut self, now: u64) -> Option<FiredTimer> {
        let timer = self.fire_one(now)?;
        Some(FiredTimer {
            due: timer.due,
            seq: timer.seq,
            label: self.timer_label(&timer),
        })
    }

    fn timer_label(&self, timer: &Timer) -> String {
        let chart = &self.chart;
        match &timer.what {
            Due::Transition(transition) => {
                let (source, index) = super::snapshot::after_index(chart, *transition);
                format!("after:{}[{index}]", chart.machine.state(source).path)
            }
            Due::Send { event, id: None } => format!("send:{}", event.name),
            Due::Send {
                event,
                id: Some(id),
            } => format!("send:{}#{id}", event.name),
        }
    }

    /// Moves the clock forward to `now` without firing anything, so that
    /// timers scheduled next count from `now`; a clock never goes back.
    /// Timers already due stay pending.
    pub fn set_clock(&mut self, now: u64) {
        self.core.now = self.core.now.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> std::sync::Arc<super::super::Chart> {
        let machine = crate::syntax::parse(
            "machine: m\ncontext: { n: 0 }\ninitial: a\nstates:\n  a:\n    entry:\n      - { send: TICK, delay: 1s, id: t }\n      - { send: TICK, delay: 0ms }\n    on:\n      TICK:\n        actions:\n          - assign: { n: \"context.n + 1\" }\n          - { send: TICK, delay: 1s, id: t }\n    after:\n      2500ms: b\n  b: {}\n",
            crate::syntax::Syntax::Yaml,
        )
        .unwrap();
        std::sync::Arc::new(super::super::Chart::new(machine))
    }

    #[test]
    fn firing_one_at_a_time_is_advancing() {
        let mut all_at_once = Actor::new(chart());
        let mut one_by_one = all_at_once.clone();
        all_at_once.advance_to(5_000);
        let mut fired = Vec::new();
        while let Some(timer) = one_by_one.fire_next(5_000) {
            fired.push((timer.due, timer.label));
        }
        assert_eq!(
            fired,
            [
                (0, "send:TICK".to_string()),
                (1_000, "send:TICK#t".to_string()),
                (1_000, "send:TICK#t".to_string()),
                (2_000, "send:TICK#t".to_string()),
                (2_000, "send:TICK#t".to_string()),
                (2_500, "after:a[0]".to_string()),
                (3_000, "send:TICK#t".to_string()),
                (3_000, "send:TICK#t".to_string()),
            ]
        );
        // The clock stays at the last due time until it is set.
        assert_eq!(one_by_one.now(), 3_000);
        one_by_one.set_clock(5_000);
        one_by_one.set_clock(4_000);
        assert_eq!(one_by_one.snapshot(), all_at_once.snapshot());
    }
}
