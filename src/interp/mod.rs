//! The interpreter: W3C SCXML semantics over the model.
//!
//! ```
//! use std::sync::Arc;
//! use idemchart::interp::{Actor, Chart};
//! use idemchart::expr::Event;
//!
//! let machine = idemchart::syntax::parse(
//!     "machine: door\ninitial: closed\nstates:\n  closed: { on: { OPEN: opened } }\n  opened: { on: { CLOSE: closed } }\n",
//!     idemchart::syntax::Syntax::Yaml,
//! ).unwrap();
//! let chart = Arc::new(Chart::new(machine));
//! let mut actor = Actor::new(Arc::clone(&chart));
//! let step = actor.send(&Event::named("OPEN"));
//! assert!(!step.ignored);
//! assert_eq!(actor.configuration_paths(), ["opened"]);
//! assert!(actor.send(&Event::named("OPEN")).ignored);
//! ```
//!
//! A snapshot is plain serde data; it continues on a chart of the same
//! machine (name and version are checked), wherever it was taken:
//!
//! ```
//! use std::sync::Arc;
//! use idemchart::expr::Event;
//! use idemchart::interp::{Actor, Chart, Snapshot};
//! use idemchart::syntax::{Syntax, parse};
//!
//! let text = "machine door version 2\ninitial closed\n\
//!             state closed { on OPEN -> opened }\nstate opened { after 1m -> closed }";
//! let chart = Arc::new(Chart::new(parse(text, Syntax::Dsl).unwrap()));
//! let mut actor = Actor::new(Arc::clone(&chart));
//! actor.send(&Event::named("OPEN"));
//! let json = serde_json::to_string(&actor.snapshot()).unwrap();
//!
//! let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
//! let mut restored = Actor::restore(chart, &snapshot).unwrap();
//! assert_eq!(restored.configuration_paths(), ["opened"]);
//! // The pending timer came along.
//! restored.advance_to(60_000);
//! assert_eq!(restored.configuration_paths(), ["closed"]);
//! ```
//!
//! `Actor::snapshot_json` and `Actor::restore_json` do the same round trip
//! straight between the actor and the JSON text, with the same bytes and
//! the same accepted texts, faster (see `snapshot_json.rs`).
//!
//! Host guards and host actions (what expressions cannot say) are
//! registered with `Chart::builder`; see `ChartBuilder`.

mod actor;
mod bits;
mod chart;
mod clock;
mod fingerprint;
mod host;
mod snapshot;
mod snapshot_json;
mod step;
mod unsettled;

#[cfg(test)]
mod fast_path_tests;
#[cfg(test)]
mod invoke_tests;
#[cfg(test)]
mod scxml_tests;
#[cfg(test)]
mod semantics_tests;

pub use actor::{Actor, RunningInvocation, Status};
pub use chart::{Chart, DEFAULT_MICROSTEP_LIMIT};
pub use clock::FiredTimer;
// The clocks live below the interpreter (the stores read them too); they
// are named here as well, where an actor's host looks for them.
pub use crate::clock::{Clock, SystemClock, VirtualClock};
pub use host::{BuildError, ChartBuilder, HostCall, HostError, Updates};
pub use snapshot::{InvocationSnapshot, RestoreError, SNAPSHOT_FORMAT, Snapshot, TimerSnapshot};
pub use snapshot_json::SnapshotJsonError;
pub use step::{Cancelled, EffectCall, Invoked, Step};
pub use unsettled::Unsettled;

use std::sync::Arc;

use crate::expr::Value;
use crate::model::StateId;

impl Chart {
    /// The state at a dotted path; the empty path is the machine itself.
    pub fn state_by_path(&self, path: &str) -> Option<StateId> {
        if path.is_empty() {
            Some(StateId::ROOT)
        } else {
            self.machine.find_path(path)
        }
    }
}

impl Actor {
    /// Starts a new actor of `chart` with the machine's initial context, its
    /// clock at 0. One chart serves any number of actors.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse("machine m\ncontext { n = 1 }\ninitial a\nstate a", Syntax::Dsl).unwrap();
    /// let chart = Arc::new(Chart::new(machine));
    /// let actor = Actor::new(Arc::clone(&chart));
    /// assert_eq!(actor.configuration_paths(), ["a"]);
    /// assert_eq!(actor.context().to_string(), r#"{"n": 1}"#);
    /// ```
    pub fn new(chart: Arc<Chart>) -> Actor {
        let context = chart
            .machine
            .context
            .values()
            .map(|f| Value::from(&f.value))
            .collect();
        let mut actor = Actor::idle(chart, context, 0);
        actor.start();
        actor
    }

    /// Starts a new actor with some context fields given by the host (the
    /// rest keep their initial values) and its clock at `now` milliseconds.
    pub fn with_context(
        chart: Arc<Chart>,
        context: &Value,
        now: u64,
    ) -> Result<Actor, RestoreError> {
        let mut values: Vec<Value> = chart
            .machine
            .context
            .values()
            .map(|f| Value::from(&f.value))
            .collect();
        if let Some(map) = context.as_map() {
            for (key, value) in map.iter() {
                let slot = chart.layout.slot(key).ok_or_else(|| {
                    RestoreError::Context(format!("unknown context field `{key}`"))
                })?;
                values[slot as usize] = value.clone();
            }
        } else if *context != Value::Null {
            return Err(RestoreError::Context("the context must be a map".into()));
        }
        let mut actor = Actor::idle(chart, values, now);
        actor.start();
        Ok(actor)
    }

    /// Active atomic states by dotted path.
    pub fn configuration_paths(&self) -> Vec<String> {
        self.configuration()
            .map(|s| self.chart.machine.state(s).path.clone())
            .collect()
    }
}

impl crate::expr::Event {
    /// An event with a name and nothing else.
    pub fn named(name: &str) -> crate::expr::Event {
        crate::expr::Event::new(name, None, Value::Null)
    }
}
