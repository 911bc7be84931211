//! Time for delayed transitions: the host's clock, real or virtual.
//!
//! An actor keeps its own notion of now and moves only when told
//! (`Actor::advance_to`), so that a snapshot can be restored elsewhere and its
//! timers fire when they are due. A `Clock` says what now is.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Actor, Step};

/// A source of the current time in milliseconds.
pub trait Clock {
    fn now(&self) -> u64;
}

/// Wall-clock time: milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        since_epoch.as_millis() as u64
    }
}

/// A clock that moves only when told to, for tests and replays.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: AtomicU64,
}

impl VirtualClock {
    pub fn new(now: u64) -> VirtualClock {
        VirtualClock {
            now: AtomicU64::new(now),
        }
    }

    /// Moves the clock forward by `millis`.
    pub fn advance(&self, millis: u64) {
        self.now.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_is_after_2020() {
        assert!(SystemClock.now() > 1_577_836_800_000);
    }
}
