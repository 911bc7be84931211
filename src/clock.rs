//! Clocks: where "now" comes from, in milliseconds.
//!
//! Both the interpreter (an actor's timers) and the stores (the time of a
//! schema upgrade) read the time, so the clock sits below both of them and
//! depends on nothing else in the crate.

use std::sync::atomic::{AtomicU64, Ordering};

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

/// Milliseconds since the Unix epoch by the system clock.
pub fn now_millis() -> u64 {
    SystemClock.now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_is_after_2020() {
        assert!(SystemClock.now() > 1_577_836_800_000);
    }

    #[test]
    fn a_virtual_clock_moves_only_when_told() {
        let clock = VirtualClock::new(5);
        assert_eq!(clock.now(), 5);
        clock.advance(10);
        assert_eq!(clock.now(), 15);
    }
}
