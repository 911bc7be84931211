//! Witnesses: the shortest event sequences from the initial configuration
//! that show a hazard, found by breadth-first search on the transition graph.

use std::rc::Rc;

use petgraph::graph::{EdgeIndex, NodeIndex};

use super::Cx;
use crate::graph::{Cost, Edge, EventId, MachineGraph};
use crate::model::{Duration, Machine, StateId, TransitionId, Trigger};

/// The longest prefix a witness is built from.
pub const MAX_WITNESS_STEPS: u32 = 500;

/// One step of a witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WitnessStep {
    /// A delivery of the event, meant to take the transition.
    Event {
        event: EventId,
        transition: Option<TransitionId>,
    },
    /// Time passes until the delayed transition fires.
    After {
        delay: Duration,
        transition: TransitionId,
    },
}

/// What the witness ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WitnessEnd {
    /// A second delivery of step `i` (same id and payload), written `E*`.
    Repeat(usize),
    /// The last step runs the effect again (a retry, not a redelivery),
    /// written with a trailing `*` on that step.
    Retry { effect: String },
    /// The last step (the start, when there is none) never settles: the
    /// machine takes `turn`, in order, again and again by itself.
    Loop { turn: Vec<TransitionId> },
}

/// An event sequence that shows a hazard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    pub steps: Vec<WitnessStep>,
    pub end: WitnessEnd,
}

impl Witness {
    /// The spec's form: event names, `after 30s` for timers, the repeated
    /// or retried delivery last with a trailing `*`: a repeat is written
    /// once more at the end, a retry is the last step itself.
    pub fn render(&self, graph: &MachineGraph) -> Vec<String> {
        let mut out = render_steps(graph, &self.steps);
        match &self.end {
            WitnessEnd::Repeat(i) => {
                if let Some(step) = out.get(*i).cloned() {
                    out.push(format!("{step}*"));
                }
            }
            WitnessEnd::Retry { .. } => {
                if let Some(last) = out.last_mut() {
                    last.push('*');
                }
            }
            WitnessEnd::Loop { turn } => out.push(render_turn(graph.machine, turn)),
        }
        out
    }
}

/// The steps as witnesses write them: event names, `after 30s` for timers.
pub fn render_steps(graph: &MachineGraph, steps: &[WitnessStep]) -> Vec<String> {
    steps
        .iter()
        .map(|s| match s {
            WitnessStep::Event { event, .. } => graph.events.name(*event).to_string(),
            WitnessStep::After { delay, .. } => format!("after {delay}"),
        })
        .collect()
}

/// One turn of a loop as `loop: a -always-> b -PING-> a`: the state each
/// transition is taken in and what it is taken on, back to the first.
fn render_turn(machine: &Machine, turn: &[TransitionId]) -> String {
    let mut text = String::from("loop:");
    for &t in turn {
        let transition = machine.transition(t);
        let source = machine.display_name(transition.source);
        text.push_str(&format!(" {source} -{}->", transition.trigger));
    }
    if let Some(&first) = turn.first() {
        let source = machine.transition(first).source;
        text.push_str(&format!(" {}", machine.display_name(source)));
    }
    text
}

impl Cx<'_> {
    /// The steps along a path of edges.
    pub fn steps_of(&self, path: &[EdgeIndex]) -> Vec<WitnessStep> {
        let mut steps = Vec::new();
        for &e in path {
            let edge = self.graph.steps[e];
            if let (Edge::Transition(t), Some((from, _))) =
                (edge, self.graph.steps.edge_endpoints(e))
            {
                steps.extend(self.drive_sibling(from, t));
            }
            steps.extend(self.step_of_edge(edge));
        }
        steps
    }

    /// When `t` is taken from a sibling hub, the steps that first drive
    /// the sibling region that holds its source there, so that the replay
    /// can take it; no steps otherwise. Should the region have moved
    /// elsewhere earlier in the witness, the replay does not confirm it.
    pub fn drive_sibling(&self, from: NodeIndex, t: TransitionId) -> Vec<WitnessStep> {
        // The path stays inside the region and passes no hub, so this
        // recursion is one level deep.
        self.sibling_drive(from, t)
            .map(|path| self.steps_of(&path))
            .unwrap_or_default()
    }

    /// The states a witness passes through in a sibling region when `t`
    /// is taken from the hub `from` (see `drive_sibling`): those of the
    /// drive and `t`'s source; none for an edge out of any other node.
    pub fn driven_states(&self, from: NodeIndex, t: TransitionId) -> Vec<StateId> {
        let Some(path) = self.sibling_drive(from, t) else {
            return Vec::new();
        };
        let mut states: Vec<StateId> = path
            .iter()
            .filter_map(|&e| self.graph.steps.edge_endpoints(e))
            .map(|(_, to)| self.graph.node_state(to))
            .collect();
        states.push(self.machine.transition(t).source);
        states
    }

    /// For `t` taken from the hub `from`, the path that drives the sibling
    /// region holding its source there (`MachineGraph::drive`); `None` for
    /// an edge out of any other node. Remembered by region and transition:
    /// witnesses and I008's search ask for the same ones again.
    fn sibling_drive(&self, from: NodeIndex, t: TransitionId) -> Option<Rc<[EdgeIndex]>> {
        let region = self.graph.sibling_region(from, t)?;
        if let Some(path) = self.drives.borrow().get(&(region, t)) {
            return Some(Rc::clone(path));
        }
        let path: Rc<[EdgeIndex]> = self
            .graph
            .drive(&mut self.scratch.borrow_mut(), region, t)
            .unwrap_or_default()
            .into();
        self.drives
            .borrow_mut()
            .insert((region, t), Rc::clone(&path));
        Some(path)
    }

    fn step_of_edge(&self, edge: Edge) -> Option<WitnessStep> {
        let Edge::Transition(t) = edge else {
            return None;
        };
        match self.graph.cost(edge) {
            Cost::Free => None,
            Cost::Event(event) => Some(WitnessStep::Event {
                event,
                transition: Some(t),
            }),
            Cost::After => match self.machine.transition(t).trigger {
                Trigger::After(delay) => Some(WitnessStep::After {
                    delay,
                    transition: t,
                }),
                _ => None,
            },
        }
    }

    /// The shortest steps from the start to `node`.
    /// `None` past `MAX_WITNESS_STEPS`: such a sequence helps no one, and
    /// building one per finding would cost the square of the machine's size.
    pub fn prefix(&self, node: NodeIndex) -> Option<Vec<WitnessStep>> {
        let dist = *self.reach.dist.get(node.index())?;
        (dist <= MAX_WITNESS_STEPS)
            .then(|| self.steps_of(&self.reach.path(&self.graph.steps, node)))
    }

    /// The step that takes the transition.
    pub fn step_taking(&self, t: TransitionId, event: Option<EventId>) -> Option<WitnessStep> {
        match self.machine.transition(t).trigger {
            Trigger::After(delay) => Some(WitnessStep::After {
                delay,
                transition: t,
            }),
            Trigger::Always => None,
            Trigger::Event(_) => {
                let event = event.or(self.graph.representative(t))?;
                self.graph
                    .events
                    .is_external(event)
                    .then_some(WitnessStep::Event {
                        event,
                        transition: Some(t),
                    })
            }
        }
    }

    /// Whether, with `leaf` active, the interpreter may choose `t` for
    /// `event`: no unguarded handler comes before it.
    pub fn selects(&self, leaf: StateId, t: TransitionId, event: EventId) -> bool {
        for h in self.graph.handlers(leaf, event) {
            if h == t {
                return true;
            }
            if self.machine.transition(h).guard.is_none() {
                return false;
            }
        }
        false
    }

    /// The reachable leaf, nearest the start, in which `t` may be chosen
    /// for `event` (any reachable leaf under its source for `always` and
    /// `after`).
    pub fn selecting_leaf(&self, t: TransitionId, event: Option<EventId>) -> Option<StateId> {
        let known = self.selecting.borrow()[t.index()]
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, l)| *l);
        if let Some(known) = known {
            return known;
        }
        let found = self.find_selecting_leaf(t, event);
        self.selecting.borrow_mut()[t.index()].push((event, found));
        found
    }

    fn find_selecting_leaf(&self, t: TransitionId, event: Option<EventId>) -> Option<StateId> {
        let source = self.machine.transition(t).source;
        if !self.reach.reached(self.graph.at(source)) {
            return None;
        }
        let ok = |leaf: StateId| event.is_none_or(|e| self.selects(leaf, t, e));
        // The search reached the source through one of its leaves; most
        // often that leaf will do.
        let mut at = self.graph.at(source);
        while let Some(e) = self.reach.pred[at.index()] {
            if self.graph.steps[e] != Edge::Up {
                break;
            }
            at = self.graph.steps.edge_endpoints(e)?.0;
        }
        if let crate::graph::Node::At(leaf) = self.graph.node(at)
            && self.graph.is_leaf(leaf)
            && ok(leaf)
        {
            return Some(leaf);
        }
        self.graph
            .subtree(source)
            .filter(|&l| self.graph.is_leaf(l) && self.reach.reached(self.graph.at(l)) && ok(l))
            .min_by_key(|&l| self.reach.dist[self.graph.at(l).index()])
    }

    /// The shortest steps from the start to taking `t` on `event`, and the
    /// index of the step that takes it.
    pub fn taking(
        &self,
        t: TransitionId,
        event: Option<EventId>,
    ) -> Option<(Vec<WitnessStep>, Option<usize>)> {
        let leaf = self.selecting_leaf(t, event)?;
        let mut steps = self.prefix(self.graph.at(leaf))?;
        let taken = self.step_taking(t, event).map(|step| {
            steps.push(step);
            steps.len() - 1
        });
        Some((steps, taken))
    }

    /// The last delivered event among the steps.
    pub fn last_delivery(steps: &[WitnessStep]) -> Option<usize> {
        steps
            .iter()
            .rposition(|s| matches!(s, WitnessStep::Event { .. }))
    }
}
