//! A call of the interpreter that ran out of its microstep budget: the
//! error a host gets instead of a finished step.

use std::fmt;
use std::sync::Arc;

use super::chart::Chart;
use crate::model::{StateId, TransitionId};

/// The longest turn of a loop looked for; a longer one is reported as the
/// last transitions taken, which still pass through the loop.
const MAX_TURN: usize = 1_000;

/// A step that did not settle: its microsteps ran out while the machine
/// kept taking transitions by itself (eventless ones, events it raised or
/// sent itself, timers that schedule timers). The step stopped half-way,
/// so it must not be taken as a result: the durable runtime writes nothing
/// and answers an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsettled {
    /// The external event of the step, `None` for the start and for timers
    /// (as `Step::event`).
    pub event: Option<Arc<str>>,
    /// The budget that ran out (`Chart::microstep_limit`).
    pub limit: usize,
    /// One turn of the loop: the last transitions taken, from the latest
    /// earlier repetition of the same sequence, in order.
    pub transitions: Vec<TransitionId>,
    /// The states of that turn (the transitions' sources and targets), in
    /// document order.
    pub states: Vec<StateId>,
    /// Their dotted paths, in the same order.
    pub paths: Vec<String>,
    /// What the turn's transitions were taken on, each once, in the order
    /// of the turn: event descriptors, `always`, or `after DURATION`.
    pub events: Vec<String>,
}

impl Unsettled {
    /// The error of a step that spent `limit` microsteps and took
    /// `transitions`.
    pub(crate) fn new(
        chart: &Chart,
        event: Option<Arc<str>>,
        limit: usize,
        transitions: &[TransitionId],
    ) -> Unsettled {
        let turn = last_turn(transitions).to_vec();
        let machine = &chart.machine;
        let mut states: Vec<StateId> = Vec::new();
        let mut events: Vec<String> = Vec::new();
        for &t in &turn {
            let transition = machine.transition(t);
            states.push(transition.source);
            states.extend(transition.targets.iter().map(|target| target.state));
            let on = transition.trigger.to_string();
            if !events.contains(&on) {
                events.push(on);
            }
        }
        states.sort_unstable();
        states.dedup();
        let paths = states
            .iter()
            .map(|&s| match s {
                StateId::ROOT => machine.name.clone(),
                s => machine.state(s).path.clone(),
            })
            .collect();
        Unsettled {
            event,
            limit,
            transitions: turn,
            states,
            paths,
            events,
        }
    }
}

/// The shortest suffix of `taken` that repeats right before itself: one
/// turn of the loop that took them. When no suffix of up to `MAX_TURN`
/// transitions repeats (a loop whose turns differ, or a short budget), the
/// transitions since the last one was taken before, or the last `MAX_TURN`.
fn last_turn(taken: &[TransitionId]) -> &[TransitionId] {
    let n = taken.len();
    let Some(&last) = taken.last() else {
        return taken;
    };
    for period in 1..=MAX_TURN.min(n / 2) {
        if taken[n - period..] == taken[n - 2 * period..n - period] {
            return &taken[n - period..];
        }
    }
    let start = n.saturating_sub(MAX_TURN + 1);
    match taken[start..n - 1].iter().rposition(|&t| t == last) {
        Some(i) => &taken[start + i + 1..],
        None => &taken[n.saturating_sub(MAX_TURN)..],
    }
}

impl fmt::Display for Unsettled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the machine did not settle after {} microsteps",
            self.limit
        )?;
        if let Some(event) = &self.event {
            write!(f, " of event `{event}`")?;
        }
        if self.paths.is_empty() {
            return Ok(());
        }
        let quoted = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            ": it loops through {} on {}",
            quoted(&self.paths),
            quoted(&self.events)
        )
    }
}

impl std::error::Error for Unsettled {}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[u32]) -> Vec<TransitionId> {
        list.iter().map(|&t| TransitionId(t)).collect()
    }

    #[test]
    fn a_turn_is_the_shortest_suffix_that_repeats() {
        assert_eq!(last_turn(&ids(&[0, 1, 2, 1, 2, 1, 2])), ids(&[1, 2]));
        assert_eq!(last_turn(&ids(&[0, 3, 3, 3])), ids(&[3]));
        // A turn that repeats only once before itself is still found.
        assert_eq!(last_turn(&ids(&[5, 1, 2, 3, 1, 2, 3])), ids(&[1, 2, 3]));
        // No repetition yet: back to the last transition's earlier use.
        assert_eq!(last_turn(&ids(&[0, 1, 2, 1])), ids(&[2, 1]));
        assert_eq!(last_turn(&ids(&[0, 1])), ids(&[0, 1]));
        assert_eq!(last_turn(&[]), ids(&[]));
    }
}
