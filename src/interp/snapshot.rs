//! Snapshots: an actor at rest as plain serde data, and back.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::actor::{Actor, Due, Running, Status, Timer};
use super::bits::StateSet;
use super::chart::Chart;
use crate::expr::{Event, Value};
use crate::model::{Semantics, StateId, TransitionId};

/// The snapshot layout; bumped when it changes incompatibly.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// An actor at rest: everything needed to continue it later, elsewhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub format: u32,
    pub machine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    pub status: Status,
    /// Active atomic states by dotted path, in document order (under
    /// `semantics: xstate`, in the order they were entered, which XState's
    /// eventless selection follows).
    pub configuration: Vec<String>,
    /// Recorded history: history state path → the paths it restores.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub history: IndexMap<String, Vec<String>>,
    pub context: Value,
    /// Pending delayed transitions, which fire after a restore as they would have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timers: Vec<TimerSnapshot>,
    /// Invocations in flight, in the order they started: a restored actor
    /// still accepts their completions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invocations: Vec<InvocationSnapshot>,
    /// The actor's clock, in milliseconds.
    #[serde(default)]
    pub now: u64,
    /// The rules the machine ran by (`docs/semantics.md`); a snapshot
    /// continues only under the same. Written only when not the default.
    #[serde(default, skip_serializing_if = "Semantics::is_default")]
    pub semantics: Semantics,
}

/// A pending timer; `seq` orders timers that are due at the same time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TimerSnapshot {
    /// A delayed transition of `state`: its `after`-th, in document order.
    After {
        state: String,
        after: u32,
        due: u64,
        seq: u64,
    },
    /// An event the machine sent itself with a delay.
    Send {
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        due: u64,
        seq: u64,
    },
}

impl TimerSnapshot {
    /// When it is due, in the actor's clock.
    pub fn due(&self) -> u64 {
        match self {
            TimerSnapshot::After { due, .. } | TimerSnapshot::Send { due, .. } => *due,
        }
    }

    /// Its label, as its firing's id spells it (`after:a.b[0]`,
    /// `send:PING#id`).
    pub fn label(&self) -> String {
        match self {
            TimerSnapshot::After { state, after, .. } => format!("after:{state}[{after}]"),
            TimerSnapshot::Send {
                event, id: None, ..
            } => format!("send:{event}"),
            TimerSnapshot::Send {
                event,
                id: Some(id),
                ..
            } => format!("send:{event}#{id}"),
        }
    }
}

/// An invocation in flight: the invocation `id` of the state at `state`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvocationSnapshot {
    pub state: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Why a snapshot cannot continue on a chart.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("snapshot format {found} is not supported (this build reads format {SNAPSHOT_FORMAT})")]
    Format { found: u32 },
    #[error("the snapshot is of machine `{found}`, not `{expected}`")]
    Machine { expected: String, found: String },
    #[error(
        "the snapshot is of version {found:?} of `{machine}`, which is now at version {expected:?}"
    )]
    Version {
        machine: String,
        expected: Option<u64>,
        found: Option<u64>,
    },
    #[error(
        "the snapshot of `{machine}` was taken under `semantics: {found}`, but the machine now runs by `{expected}`"
    )]
    Semantics {
        machine: String,
        expected: Semantics,
        found: Semantics,
    },
    #[error("the snapshot names state `{0}`, which the machine does not have")]
    UnknownState(String),
    #[error("the snapshot's context does not fit the machine: {0}")]
    Context(String),
    #[error(
        "the snapshot has invocation `{id}` of state `{state}` in flight, which the machine does not have there"
    )]
    UnknownInvocation { state: String, id: String },
}

impl Actor {
    /// The actor at rest as plain data.
    pub fn snapshot(&self) -> Snapshot {
        let chart = &self.chart;
        let path = |s: StateId| chart.machine.state(s).path.clone();
        Snapshot {
            format: SNAPSHOT_FORMAT,
            machine: chart.machine.name.clone(),
            version: chart.machine.version,
            status: self.core.status,
            configuration: self.snapshot_leaves().map(path).collect(),
            history: self
                .core
                .history
                .iter()
                .map(|(h, states)| (path(*h), states.iter().map(|s| path(*s)).collect()))
                .collect(),
            context: chart.layout.to_map(&self.core.context),
            timers: self
                .core
                .timers
                .iter()
                .map(|t| match &t.what {
                    Due::Transition(transition) => {
                        let (source, after) = after_index(chart, *transition);
                        TimerSnapshot::After {
                            state: path(source),
                            after,
                            due: t.due,
                            seq: t.seq,
                        }
                    }
                    Due::Send { event, id } => TimerSnapshot::Send {
                        event: event.name.to_string(),
                        data: (event.data != Value::Null).then(|| event.data.clone()),
                        id: id.as_ref().map(|id| id.to_string()),
                        due: t.due,
                        seq: t.seq,
                    },
                })
                .collect(),
            invocations: self
                .core
                .invocations
                .iter()
                .map(|running| invocation_snapshot(chart, running))
                .collect(),
            now: self.core.now,
            semantics: chart.machine.semantics,
        }
    }

    /// Continues a snapshot on `chart`, which must be the same machine at the
    /// same version, running by the same semantics. Use `restore_migrating`
    /// to accept another version or semantics.
    pub fn restore(chart: Arc<Chart>, snapshot: &Snapshot) -> Result<Actor, RestoreError> {
        check_version(&chart, snapshot.version)?;
        check_semantics(&chart, snapshot.semantics)?;
        Actor::restore_migrating(chart, snapshot)
    }

    /// Continues a snapshot of any version of the machine, as long as every
    /// state it names still exists: the explicit, checked way to move a
    /// process to a new version.
    pub fn restore_migrating(
        chart: Arc<Chart>,
        snapshot: &Snapshot,
    ) -> Result<Actor, RestoreError> {
        check_header(&chart, snapshot.format, &snapshot.machine)?;
        let context = chart
            .layout
            .from_map(&snapshot.context)
            .map_err(RestoreError::Context)?;
        let mut actor = Actor::idle(Arc::clone(&chart), context, snapshot.now);
        actor.core.status = snapshot.status;
        actor.core.active.insert(StateId::ROOT);
        for path in &snapshot.configuration {
            let core = &mut actor.core;
            activate(
                &chart,
                (&mut core.active, &mut core.entry_order),
                state(&chart, path)?,
            );
        }
        actor.core.irregular = chart.xstate && !actor.core.regular(&chart);
        actor.core.history = restore_history(&chart, &snapshot.history)?;
        actor.core.timers = snapshot
            .timers
            .iter()
            .map(|timer| restore_timer(&chart, timer))
            .collect::<Result<_, _>>()?;
        actor.core.next_seq = next_seq(&actor.core.timers);
        actor.core.invocations = snapshot
            .invocations
            .iter()
            .map(|invocation| restore_invocation(&chart, invocation))
            .collect::<Result<_, _>>()?;
        Ok(actor)
    }
}

// The steps of a restore, shared with the JSON codec (`snapshot_json.rs`),
// which checks the same things in the same order.

/// The state a delayed transition belongs to, and its index among that
/// state's delayed transitions.
pub(super) fn after_index(chart: &Chart, transition: TransitionId) -> (StateId, u32) {
    let source = chart.transition(transition).source;
    let after = chart
        .state(source)
        .after
        .iter()
        .position(|a| *a == transition)
        .unwrap_or(0);
    (source, after as u32)
}

/// A snapshot continues only on the version of the machine it was taken of.
pub(super) fn check_version(chart: &Chart, found: Option<u64>) -> Result<(), RestoreError> {
    if found != chart.machine.version {
        return Err(RestoreError::Version {
            machine: chart.machine.name.clone(),
            expected: chart.machine.version,
            found,
        });
    }
    Ok(())
}

/// A snapshot continues only under the rules it was taken under: a step
/// under others would not be the one the actor would have taken.
pub(super) fn check_semantics(chart: &Chart, found: Semantics) -> Result<(), RestoreError> {
    if found != chart.machine.semantics {
        return Err(RestoreError::Semantics {
            machine: chart.machine.name.clone(),
            expected: chart.machine.semantics,
            found,
        });
    }
    Ok(())
}

/// The snapshot's format and machine must be this build's and the chart's.
pub(super) fn check_header(chart: &Chart, format: u32, machine: &str) -> Result<(), RestoreError> {
    if format != SNAPSHOT_FORMAT {
        return Err(RestoreError::Format { found: format });
    }
    if machine != chart.machine.name {
        return Err(RestoreError::Machine {
            expected: chart.machine.name.clone(),
            found: machine.to_string(),
        });
    }
    Ok(())
}

/// The state at a dotted path of the snapshot.
pub(super) fn state(chart: &Chart, path: &str) -> Result<StateId, RestoreError> {
    chart
        .state_by_path(path)
        .ok_or_else(|| RestoreError::UnknownState(path.to_string()))
}

/// Marks an active atomic state of the configuration and its ancestors active.
/// Under `semantics: xstate`, `order` gets the atomic states in the order
/// the snapshot lists them, which is the order they were entered.
pub(super) fn activate(
    chart: &Chart,
    (active, order): (&mut StateSet, &mut Vec<StateId>),
    leaf: StateId,
) {
    if chart.xstate && !active.contains(leaf) {
        // XState's order of nodes: the root first, each state after its
        // parent, leaves in the order the snapshot lists them.
        if order.is_empty() {
            order.push(StateId::ROOT);
        }
        let start = order.len();
        let mut at = Some(leaf);
        while let Some(s) = at
            && s != StateId::ROOT
            && !active.contains(s)
        {
            order.push(s);
            at = chart.state(s).parent;
        }
        order[start..].reverse();
    }
    active.insert(leaf);
    let mut at = chart.state(leaf).parent;
    while let Some(s) = at {
        active.insert(s);
        at = chart.state(s).parent;
    }
}

pub(super) fn restore_history(
    chart: &Chart,
    history: &IndexMap<String, Vec<String>>,
) -> Result<Vec<(StateId, Vec<StateId>)>, RestoreError> {
    history
        .iter()
        .map(|(h, paths)| {
            let states = paths
                .iter()
                .map(|p| state(chart, p))
                .collect::<Result<_, _>>()?;
            Ok((state(chart, h)?, states))
        })
        .collect()
}

pub(super) fn restore_timer(chart: &Chart, timer: &TimerSnapshot) -> Result<Timer, RestoreError> {
    Ok(match timer {
        TimerSnapshot::After {
            state: path,
            after,
            due,
            seq,
        } => {
            let source = state(chart, path)?;
            let transition = chart
                .state(source)
                .after
                .get(*after as usize)
                .copied()
                .ok_or_else(|| {
                    RestoreError::UnknownState(format!("{path} (delayed transition {after})"))
                })?;
            Timer {
                due: *due,
                seq: *seq,
                what: Due::Transition(transition),
            }
        }
        TimerSnapshot::Send {
            event,
            data,
            id,
            due,
            seq,
        } => Timer {
            due: *due,
            seq: *seq,
            what: Due::Send {
                event: Event::new(event.as_str(), None, data.clone().unwrap_or(Value::Null)),
                id: id.as_deref().map(Arc::from),
            },
        },
    })
}

pub(super) fn invocation_snapshot(chart: &Chart, running: &Running) -> InvocationSnapshot {
    InvocationSnapshot {
        state: chart.machine.state(running.state).path.clone(),
        id: chart.state(running.state).invoke[running.index as usize]
            .id
            .to_string(),
        input: (running.input != Value::Null).then(|| running.input.clone()),
        key: running.key.as_deref().map(str::to_string),
    }
}

pub(super) fn restore_invocation(
    chart: &Chart,
    invocation: &InvocationSnapshot,
) -> Result<Running, RestoreError> {
    let unknown = || RestoreError::UnknownInvocation {
        state: invocation.state.clone(),
        id: invocation.id.clone(),
    };
    let at = chart.state_by_path(&invocation.state).ok_or_else(unknown)?;
    let index = chart
        .state(at)
        .invoke
        .iter()
        .position(|i| *i.id == *invocation.id)
        .ok_or_else(unknown)?;
    Ok(Running {
        state: at,
        index: index as u32,
        input: invocation.input.clone().unwrap_or(Value::Null),
        key: invocation.key.as_deref().map(Arc::from),
    })
}

/// The next scheduling number: past every restored timer's.
pub(super) fn next_seq(timers: &[Timer]) -> u64 {
    timers.iter().map(|t| t.seq + 1).max().unwrap_or(0)
}
