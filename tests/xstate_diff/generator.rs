//! Random machines in the subset that idemchart and XState v5 share, each
//! written twice: as our YAML and as an XState machine config (JSON), with
//! the events to send.
//!
//! Every state logs its entry and exit (`en:PATH`, `ex:PATH`), every
//! transition logs its own label (`tN`), so that comparing the logs compares
//! which states a step left and entered, in what order, and which
//! transitions it took. The only context is a counter `n`; guards read it
//! (`n < K`) and `inc` actions add one to it.
//!
//! Every machine settles: a transition that raises an event, an eventless
//! one and a completion (`onDone`) handler always carry a guard `n < K` and
//! an `inc`, so each can be taken at most K times, and entry and exit actions
//! raise nothing. The exception is a targetless `always` that only logs
//! (issue 27), which XState takes once after each microstep that is not its
//! own, and SCXML without end: under `scxml` only the machines for the test
//! that classifies the differences have it.
//!
//! The shapes issue 27 asked for (`Shape`) are added after the rest of the
//! machine, drawing from a random generator of their own.

use serde_json::{Map, Value, json};

use crate::common::Rng;

/// The events machines handle and the tests send; `E` is handled by none.
const EVENTS: [&str; 5] = ["A", "B", "C", "D", "E"];
/// The largest bound of a guard `n < K`.
const MAX_BOUND: u64 = 4;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Atomic,
    Compound,
    Parallel,
    Final,
    /// A history state; `deep` or shallow.
    History {
        deep: bool,
    },
}

#[derive(Clone, PartialEq)]
enum Act {
    Log(String),
    Inc,
    Raise(&'static str),
}

/// The shapes issue 27 asked the generator for, recorded on the
/// transitions that have them so that a test can count which ones ran.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Shape {
    /// A targetless `always` whose actions only log, with or without a
    /// guard, in a state of the kind named (`docs/semantics.md`, 6).
    LogAlways(&'static str),
    /// A targetless `always` that assigns (`inc`, guarded by `below`).
    AssignAlways(&'static str),
    /// A transition of a state inside a parallel state whose target is the
    /// history of one of its ancestors, which may restore the source itself
    /// (`docs/semantics.md`, 5).
    OwnHistory,
    /// A transition of another region of that parallel state, on the same
    /// event, into the history's parent: taken together with the history
    /// target it leaves two children of one compound state active.
    IntoHistoryParent,
    /// A transition of a state active from the start into that history's
    /// parent, so that the events reach it.
    IntoParallel,
}

impl Kind {
    /// A state of the kind, in words.
    fn name(self) -> &'static str {
        match self {
            Kind::Atomic => "an atomic state",
            Kind::Compound => "a compound state",
            Kind::Parallel => "a parallel state",
            Kind::Final => "a final state",
            Kind::History { .. } => "a history state",
        }
    }
}

#[derive(Clone)]
struct Transition {
    /// The targets as written in both formats; none for a targetless
    /// transition, two for one into two regions of a parallel state.
    targets: Vec<String>,
    /// The guard `n < bound`.
    bound: Option<u64>,
    actions: Vec<Act>,
    reenter: bool,
    shape: Option<Shape>,
}

#[derive(Clone)]
struct Node {
    key: String,
    path: String,
    parent: Option<usize>,
    kind: Kind,
    children: Vec<usize>,
    id: Option<String>,
    /// A history state's default target, a sibling's key.
    default: Option<String>,
    entry: Vec<Act>,
    exit: Vec<Act>,
    /// Event handlers, grouped by event in the order of first appearance.
    on: Vec<(&'static str, Vec<Transition>)>,
    always: Vec<Transition>,
    on_done: Option<Transition>,
}

/// What `Case::difference_prerequisites` names for the sixth difference.
pub const LOG_ONLY_ALWAYS: &str = "a targetless `always` that only logs";

/// A transition with one of issue 27's shapes: its label (the first
/// action's log) and its source's path.
pub struct Shaped {
    pub shape: Shape,
    pub label: String,
    pub source: String,
}

/// One generated case.
#[derive(Clone)]
pub struct Case {
    pub seed: u64,
    pub yaml: String,
    pub xstate: Value,
    pub events: Vec<&'static str>,
    machine: Machine,
}

/// A generated machine, in neither format yet.
#[derive(Clone)]
struct Machine {
    semantics: &'static str,
    /// The states; the root first. A state removed by shrinking stays here,
    /// out of its parent's children.
    nodes: Vec<Node>,
}

/// What the generator may use; each flag widens the subset.
#[derive(Clone, Copy)]
pub struct Features {
    /// The profile the YAML names, `xstate` or `scxml`. Under `scxml` no
    /// transition targets a history state that may restore its own source,
    /// where SCXML and XState differ on purpose (`docs/semantics.md`, 5).
    pub semantics: &'static str,
    /// Parallel states below the root; the other four differences of
    /// `docs/semantics.md` need them.
    pub parallel: bool,
    pub parallel_root: bool,
    pub history: bool,
    /// Transitions with two targets, in two regions of a parallel state.
    pub multiple_targets: bool,
    /// Whether to generate, under `scxml`, the machines where SCXML and
    /// XState differ on purpose (several eventless transitions active
    /// together, a history target that restores its own source, a
    /// targetless `always` that only logs), for a test that classifies
    /// each disagreement. Under `xstate`, and under `scxml` with this, the
    /// machines get issue 27's shapes.
    pub differences: bool,
}

struct Builder {
    rng: Rng,
    features: Features,
    nodes: Vec<Node>,
    labels: usize,
}

pub fn case(seed: u64, features: Features) -> Case {
    let mut b = Builder {
        rng: Rng::new(seed),
        features,
        nodes: Vec::new(),
        labels: 0,
    };
    let root_kind = if features.parallel && features.parallel_root && b.rng.chance(15) {
        Kind::Parallel
    } else {
        Kind::Compound
    };
    b.nodes
        .push(Node::new(String::new(), String::new(), None, root_kind));
    b.grow(0, 0);
    for index in 0..b.nodes.len() {
        b.add_transitions(index);
    }
    let mut events: Vec<&'static str> = (0..3 + b.rng.below(6))
        .map(|_| *b.rng.pick(&EVENTS))
        .collect();
    if features.semantics == "xstate" || features.differences {
        // The shapes added for issue 27 draw from a generator of their own,
        // so that the rest of the machine a seed gives stays what it was.
        b.rng = Rng::new(seed ^ 0x3C6E_F372_FE94_F82B);
        if features.parallel && features.history {
            b.add_parallel_with_regions(&events);
        }
        b.add_targetless_always();
        if features.parallel && features.history {
            for _ in 0..2 {
                b.add_own_history_in_parallel(&mut events);
            }
        }
    }
    let machine = Machine {
        semantics: features.semantics,
        nodes: b.nodes,
    };
    Case::new(seed, machine, events)
}

impl Case {
    fn new(seed: u64, machine: Machine, events: Vec<&'static str>) -> Case {
        Case {
            seed,
            yaml: machine.yaml(),
            xstate: machine.xstate(0),
            events,
            machine,
        }
    }

    /// The same case under another profile.
    pub fn under(&self, semantics: &'static str) -> Case {
        let machine = Machine {
            semantics,
            ..self.machine.clone()
        };
        Case::new(self.seed, machine, self.events.clone())
    }

    /// What the documented differences between SCXML and XState need that
    /// the machine has: parallel states (the first four), history states
    /// (the fifth), a targetless `always` that only logs (the sixth).
    pub fn difference_prerequisites(&self) -> Vec<&'static str> {
        let live = self.machine.live();
        let has = |kind: fn(&Kind) -> bool| live.iter().any(|&i| kind(&self.machine.nodes[i].kind));
        let mut out = Vec::new();
        if has(|k| *k == Kind::Parallel) {
            out.push("parallel states");
        }
        if has(|k| matches!(k, Kind::History { .. })) {
            out.push("history states");
        }
        if self
            .shapes()
            .iter()
            .any(|s| matches!(s.shape, Shape::LogAlways(_)))
        {
            out.push(LOG_ONLY_ALWAYS);
        }
        out
    }

    /// The transitions of the live states that have one of issue 27's
    /// shapes, with their labels and their sources' paths.
    pub fn shapes(&self) -> Vec<Shaped> {
        let mut out = Vec::new();
        for index in self.machine.live() {
            let node = &self.machine.nodes[index];
            let transitions = node
                .on
                .iter()
                .flat_map(|(_, list)| list)
                .chain(&node.always);
            for t in transitions {
                let (Some(shape), Some(Act::Log(label))) = (t.shape, t.actions.first()) else {
                    continue;
                };
                out.push(Shaped {
                    shape,
                    label: label.clone(),
                    source: node.path.clone(),
                });
            }
        }
        out
    }

    /// Whether the active states (dotted paths) hold two children of one
    /// compound state, as a history target that restores its own source
    /// can leave them under XState (`docs/semantics.md`, 5).
    pub fn two_children_active(&self, states: &[String]) -> bool {
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for path in states {
            let Some(mut at) = self.machine.nodes.iter().position(|n| n.path == *path) else {
                continue;
            };
            while let Some(parent) = self.machine.nodes[at].parent {
                if self.machine.nodes[parent].kind == Kind::Compound {
                    if seen.iter().any(|&(p, c)| p == parent && c != at) {
                        return true;
                    }
                    seen.push((parent, at));
                }
                at = parent;
            }
        }
        false
    }

    /// The cases one step smaller than this one: an event fewer, a
    /// transition fewer, a raise or a log fewer, or a state fewer that no
    /// target names. None of them can loop where this one could not: every
    /// guard and counter increment that bounds a transition stays with it.
    pub fn smaller(&self) -> Vec<Case> {
        let mut out = Vec::new();
        for i in 0..self.events.len() {
            let mut events = self.events.clone();
            events.remove(i);
            out.push(Case::new(self.seed, self.machine.clone(), events));
        }
        let mut push =
            |machine: Machine| out.push(Case::new(self.seed, machine, self.events.clone()));
        let live = self.machine.live();
        for &index in &live {
            let node = &self.machine.nodes[index];
            for (e, (_, list)) in node.on.iter().enumerate() {
                for t in 0..list.len() {
                    let mut m = self.machine.clone();
                    let on = &mut m.nodes[index].on;
                    on[e].1.remove(t);
                    if on[e].1.is_empty() {
                        on.remove(e);
                    }
                    push(m);
                }
            }
            for t in 0..node.always.len() {
                let mut m = self.machine.clone();
                m.nodes[index].always.remove(t);
                push(m);
            }
            if node.on_done.is_some() {
                let mut m = self.machine.clone();
                m.nodes[index].on_done = None;
                push(m);
            }
            for (field, actions) in [(0, &node.entry), (1, &node.exit)] {
                for (a, action) in actions.iter().enumerate() {
                    if *action == Act::Inc {
                        continue;
                    }
                    let mut m = self.machine.clone();
                    let node = &mut m.nodes[index];
                    [&mut node.entry, &mut node.exit][field].remove(a);
                    push(m);
                }
            }
            for (e, (_, list)) in node.on.iter().enumerate() {
                for (t, transition) in list.iter().enumerate() {
                    for (a, action) in transition.actions.iter().enumerate() {
                        if *action != Act::Inc {
                            let mut m = self.machine.clone();
                            m.nodes[index].on[e].1[t].actions.remove(a);
                            push(m);
                        }
                    }
                }
            }
            if node.id.is_some() && node.on_done.is_none() && !self.machine.named(&[index]) {
                let mut m = self.machine.clone();
                m.nodes[index].id = None;
                push(m);
            }
            if index != 0 && self.machine.removable(index) {
                let mut m = self.machine.clone();
                let parent = m.nodes[index].parent.expect("not the root");
                m.nodes[parent].children.retain(|&c| c != index);
                push(m);
            }
        }
        out
    }
}

impl Node {
    fn new(key: String, path: String, parent: Option<usize>, kind: Kind) -> Node {
        let label = if path.is_empty() { "(machine)" } else { &path };
        Node {
            entry: vec![Act::Log(format!("en:{label}"))],
            exit: vec![Act::Log(format!("ex:{label}"))],
            key,
            path,
            parent,
            kind,
            children: Vec::new(),
            id: None,
            default: None,
            on: Vec::new(),
            always: Vec::new(),
            on_done: None,
        }
    }
}

impl Builder {
    /// Adds the children of a compound or parallel state.
    fn grow(&mut self, index: usize, depth: usize) {
        let kind = self.nodes[index].kind;
        let count = match kind {
            Kind::Parallel => 2 + self.rng.below(2),
            _ => 1 + self.rng.below(3),
        };
        for _ in 0..count {
            let child_kind = if depth >= 2 {
                *self.rng.pick(&[Kind::Atomic, Kind::Atomic, Kind::Final])
            } else {
                *self.rng.pick(&[
                    Kind::Atomic,
                    Kind::Atomic,
                    Kind::Compound,
                    Kind::Compound,
                    Kind::Parallel,
                    Kind::Final,
                ])
            };
            // A region of a parallel state is no final state of its own.
            let child_kind = match child_kind {
                Kind::Final if kind == Kind::Parallel => Kind::Atomic,
                Kind::Parallel if !self.features.parallel => Kind::Compound,
                other => other,
            };
            let child = self.nodes.len();
            let key = format!("s{child}");
            let parent_path = &self.nodes[index].path;
            let path = if parent_path.is_empty() {
                key.clone()
            } else {
                format!("{parent_path}.{key}")
            };
            let mut node = Node::new(key, path, Some(index), child_kind);
            if self.rng.chance(15) {
                node.entry.push(Act::Inc);
            }
            self.nodes.push(node);
            self.nodes[index].children.push(child);
            if matches!(child_kind, Kind::Compound | Kind::Parallel) {
                self.grow(child, depth + 1);
            }
        }
        if self.features.history && kind == Kind::Compound && self.rng.chance(35) {
            self.add_history(index);
        }
    }

    /// A history child of a compound state, after its other children (so
    /// never its initial), with or without a default target.
    fn add_history(&mut self, index: usize) {
        let child = self.nodes.len();
        let key = format!("h{child}");
        let parent_path = &self.nodes[index].path;
        let path = if parent_path.is_empty() {
            key.clone()
        } else {
            format!("{parent_path}.{key}")
        };
        let deep = self.rng.chance(50);
        let mut node = Node::new(key, path, Some(index), Kind::History { deep });
        node.entry.clear();
        node.exit.clear();
        if self.rng.chance(50) {
            let siblings = &self.nodes[index].children;
            let sibling = siblings[self.rng.below(siblings.len())];
            node.default = Some(self.nodes[sibling].key.clone());
        }
        self.nodes.push(node);
        self.nodes[index].children.push(child);
    }

    fn label(&mut self) -> Act {
        self.labels += 1;
        Act::Log(format!("t{}", self.labels))
    }

    fn add_transitions(&mut self, index: usize) {
        if matches!(self.nodes[index].kind, Kind::Final | Kind::History { .. }) {
            return;
        }
        for _ in 0..self.rng.below(3) {
            let event = *self.rng.pick(&EVENTS[..4]);
            let transition = self.transition(index, false);
            let on = &mut self.nodes[index].on;
            match on.iter_mut().find(|(e, _)| *e == event) {
                Some((_, list)) => list.push(transition),
                None => on.push((event, vec![transition])),
            }
        }
        if self.rng.chance(12) && self.eventless_alone(index) {
            let transition = self.transition(index, true);
            self.nodes[index].always.push(transition);
        }
        let node = &self.nodes[index];
        if index != 0 && matches!(node.kind, Kind::Compound | Kind::Parallel) && self.rng.chance(25)
        {
            let transition = self.transition(index, true);
            // A completion event names the state by its id, which holds no
            // dot, so that no descendant's completion event matches the
            // handler as a prefix (XState matches `onDone` exactly).
            self.nodes[index].id = Some(format!("i{index}"));
            self.nodes[index].on_done = Some(transition);
        }
    }

    /// Whether the state may get eventless transitions: under `xstate`
    /// always; under `scxml`, only when no state that has some can be
    /// active together with it, since SCXML takes the eventless
    /// transitions of one microstep in document order and XState in the
    /// order their states were entered (`docs/semantics.md`, 4), which the
    /// `xstate` profile reproduces, including the order XState keeps when a
    /// microstep changes no state (shrunk from seed 1960; the regression
    /// test is `xstate_keeps_the_order_when_a_microstep_changes_no_state`).
    fn eventless_alone(&self, index: usize) -> bool {
        if self.features.semantics == "xstate" || self.features.differences {
            return true;
        }
        (0..index)
            .filter(|&other| !self.nodes[other].always.is_empty())
            .all(|other| !self.active_together(index, other))
    }

    /// Whether two states can be active at the same time: one contains the
    /// other, or they lie in different regions of a parallel state.
    fn active_together(&self, a: usize, b: usize) -> bool {
        let ancestors = |mut s: usize| {
            let mut chain = vec![s];
            while let Some(p) = self.nodes[s].parent {
                chain.push(p);
                s = p;
            }
            chain
        };
        let (of_a, of_b) = (ancestors(a), ancestors(b));
        if of_a.contains(&b) || of_b.contains(&a) {
            return true;
        }
        let common = *of_a
            .iter()
            .find(|s| of_b.contains(s))
            .expect("the root contains both");
        self.nodes[common].kind == Kind::Parallel
    }

    /// A transition of the state `index`; `bounded` ones carry a guard and
    /// an `inc`, so that they cannot be taken forever.
    fn transition(&mut self, index: usize, bounded: bool) -> Transition {
        let targets = match self.parallel_targets() {
            Some(targets) => targets,
            None => self.target(index).into_iter().collect(),
        };
        let mut actions = vec![self.label()];
        let raises = self.rng.chance(20);
        let bounded = bounded || raises;
        let bound = if bounded || self.rng.chance(30) {
            Some(1 + self.rng.below(MAX_BOUND as usize) as u64)
        } else {
            None
        };
        if bounded || self.rng.chance(25) {
            actions.push(Act::Inc);
        }
        if raises {
            let event = *self.rng.pick(&EVENTS[..4]);
            actions.push(Act::Raise(event));
        }
        let reenter = !targets.is_empty() && self.rng.chance(25);
        Transition {
            targets,
            bound,
            actions,
            reenter,
            shape: None,
        }
    }

    /// In half the machines that have no compound state inside a parallel
    /// one, such a place for the shape of `add_own_history_in_parallel`: a
    /// parallel state whose regions are compound states (each with its
    /// own children, transitions, and now and then a history), the last
    /// child of the root or of another compound state, entered by a
    /// transition of that state on an event the case sends.
    fn add_parallel_with_regions(&mut self, events: &[&'static str]) {
        let has_place = (1..self.nodes.len())
            .any(|i| self.nodes[i].kind == Kind::Compound && self.parallel_ancestor(i).is_some());
        if has_place || !self.rng.chance(80) {
            return;
        }
        let compounds: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].kind == Kind::Compound)
            .collect();
        let Some(&other) = compounds.get(self.rng.below(compounds.len())) else {
            return;
        };
        let host = if self.rng.chance(60) || compounds.is_empty() {
            0
        } else {
            other
        };
        if self.nodes[host].kind != Kind::Compound {
            return;
        }
        let parallel = self.child(host, Kind::Parallel);
        let first_new = parallel;
        for _ in 0..2 + self.rng.below(2) {
            let region = self.child(parallel, Kind::Compound);
            // Now and then a region's children are compound or parallel
            // states themselves (`grow` nests below depth 2).
            let depth = 1 + self.rng.below(2);
            self.grow(region, depth);
        }
        for index in first_new..self.nodes.len() {
            self.add_transitions(index);
        }
        let event = *self.rng.pick(events);
        let event = if EVENTS[..4].contains(&event) {
            event
        } else {
            "A"
        };
        let mut inside = Vec::new();
        self.subtree(parallel, &mut inside);
        let target = if self.rng.chance(50) {
            parallel
        } else {
            *self.rng.pick(&inside)
        };
        let id = self.id_of(target);
        let mut actions = vec![self.label()];
        let bound = self
            .rng
            .chance(30)
            .then(|| 1 + self.rng.below(MAX_BOUND as usize) as u64);
        if bound.is_some() {
            actions.push(Act::Inc);
        }
        let into = Transition {
            targets: vec![format!("#{id}")],
            bound,
            actions,
            reenter: false,
            shape: None,
        };
        self.attach(host, event, false, into);
    }

    /// A new child of a compound or parallel state, last among its
    /// children, with no children of its own yet.
    fn child(&mut self, parent: usize, kind: Kind) -> usize {
        let child = self.nodes.len();
        let key = format!("s{child}");
        let parent_path = &self.nodes[parent].path;
        let path = if parent_path.is_empty() {
            key.clone()
        } else {
            format!("{parent_path}.{key}")
        };
        self.nodes.push(Node::new(key, path, Some(parent), kind));
        self.nodes[parent].children.push(child);
        child
    }

    /// Action-only targetless `always` transitions, now and then in any
    /// state that is not final: one that only logs, unguarded or guarded by
    /// `below` (under `xstate` taken once after each microstep that is not
    /// its own; under `scxml` again and again, which only the test that
    /// classifies the differences generates), or one that assigns, guarded
    /// so that it ends (taken while the guard holds, under both). First or
    /// last among the state's eventless transitions.
    fn add_targetless_always(&mut self) {
        for index in 0..self.nodes.len() {
            let kind = self.nodes[index].kind;
            let percent = if kind == Kind::Parallel { 25 } else { 8 };
            if !matches!(kind, Kind::Atomic | Kind::Compound | Kind::Parallel)
                || !self.rng.chance(percent)
            {
                continue;
            }
            let mut actions = vec![self.label()];
            let assigns = self.rng.chance(40);
            let bound = if assigns || self.rng.chance(40) {
                Some(1 + self.rng.below(MAX_BOUND as usize) as u64)
            } else {
                None
            };
            if assigns {
                actions.push(Act::Inc);
                if self.rng.chance(20) {
                    let event = *self.rng.pick(&EVENTS[..4]);
                    actions.push(Act::Raise(event));
                }
            }
            let shape = if assigns {
                Shape::AssignAlways(kind.name())
            } else {
                Shape::LogAlways(kind.name())
            };
            let transition = Transition {
                targets: Vec::new(),
                bound,
                actions,
                reenter: false,
                shape: Some(shape),
            };
            let first = self.rng.chance(50);
            let always = &mut self.nodes[index].always;
            if first {
                always.insert(0, transition);
            } else {
                always.push(transition);
            }
        }
    }

    /// The shape of `docs/semantics.md`, 5, inside a parallel state, in
    /// most machines that have a compound state `p` inside one: a
    /// transition of a state `s` below `p` whose target is `p`'s history
    /// (added when `p` has none), which restores `s` itself when the history
    /// holds it or `s` is `p`'s default; and often a transition of another
    /// region, on the same event, into `p` or one of its states, which
    /// enters them in the same microstep. Both on an event the case sends
    /// (and sends again, appended to its events), or both eventless
    /// (guarded, with an `inc`). When `p` is not active from the start, a
    /// state that is gets a transition into it first, on an event appended
    /// before those.
    fn add_own_history_in_parallel(&mut self, events: &mut Vec<&'static str>) {
        let candidates: Vec<usize> = (1..self.nodes.len())
            .filter(|&i| {
                self.nodes[i].kind == Kind::Compound && self.parallel_ancestor(i).is_some()
            })
            .collect();
        if candidates.is_empty() || !self.rng.chance(80) {
            return;
        }
        let parent = *self.rng.pick(&candidates);
        let history = match self.nodes[parent]
            .children
            .iter()
            .copied()
            .find(|&c| matches!(self.nodes[c].kind, Kind::History { .. }))
        {
            Some(h) => h,
            None => {
                self.add_history(parent);
                *self.nodes[parent].children.last().expect("the history")
            }
        };
        let history_id = self.id_of(history);
        // The source: `p`'s initial child (its history's default when it
        // has none), or any state below `p` that may take a transition.
        let mut within = Vec::new();
        for &c in &self.nodes[parent].children {
            self.subtree(c, &mut within);
        }
        within.retain(|&s| self.nodes[s].kind != Kind::Final);
        if within.is_empty() {
            return;
        }
        let first = self.nodes[parent].children[0];
        let source = if self.nodes[first].kind != Kind::Final && self.rng.chance(70) {
            first
        } else {
            *self.rng.pick(&within)
        };
        let eventless = self.rng.chance(25);
        let event = *self.rng.pick(&EVENTS[..4]);
        if !self.initially_active(parent) && self.rng.chance(85) {
            let entry_event = *self.rng.pick(&EVENTS[..4]);
            let start = self.default_leaf(0);
            if self.nodes[start].kind != Kind::Final {
                let id = self.id_of(parent);
                let into = self.shaped(vec![format!("#{id}")], false, Shape::IntoParallel);
                self.attach_first(start, entry_event, into);
                events.push(entry_event);
            }
        }
        let own = self.shaped(vec![format!("#{history_id}")], eventless, Shape::OwnHistory);
        self.attach(source, event, eventless, own);
        events.push(event);
        if self.rng.chance(50) {
            events.push(event);
        }
        if !self.rng.chance(75) {
            return;
        }
        // The other region's transition, from the state of that region
        // active after a default entry, or any state of it.
        let parallel = self.parallel_ancestor(parent).expect("a parallel ancestor");
        let regions: Vec<usize> = self.nodes[parallel]
            .children
            .iter()
            .copied()
            .filter(|&r| !self.contains(r, parent))
            .collect();
        if regions.is_empty() {
            return;
        }
        let region = *self.rng.pick(&regions);
        let mut states = Vec::new();
        self.subtree(region, &mut states);
        states.retain(|&s| self.nodes[s].kind != Kind::Final);
        let from = match self.rng.below(3) {
            0 => region,
            1 => self.default_leaf(region),
            _ if !states.is_empty() => *self.rng.pick(&states),
            _ => region,
        };
        if self.nodes[from].kind == Kind::Final {
            return;
        }
        // A state of `p` outside the source, which leaves two of `p`'s
        // children active when both transitions are taken; or one outside
        // `p`'s region, the parallel state itself or beyond, whose exit
        // and default entry then leave `p`'s region out: the restored
        // source stays active without its parent.
        let mut into = vec![parent];
        let mut beside = Vec::new();
        for &c in &self.nodes[parent].children {
            self.subtree(c, &mut into);
            if !self.contains(c, source) {
                self.subtree(c, &mut beside);
            }
        }
        let own_region = self.nodes[parallel]
            .children
            .iter()
            .copied()
            .find(|&r| self.contains(r, parent))
            .expect("the region of the history's parent");
        let mut elsewhere = Vec::new();
        self.subtree(0, &mut elsewhere);
        elsewhere.retain(|&s| s != 0 && !self.contains(own_region, s));
        let target = match self.rng.below(10) {
            0..5 if !beside.is_empty() => *self.rng.pick(&beside),
            0..5 => *self.rng.pick(&into),
            5..7 => *self.rng.pick(&into),
            7 => parallel,
            _ => *self.rng.pick(&elsewhere),
        };
        let target_id = self.id_of(target);
        let partner = self.shaped(
            vec![format!("#{target_id}")],
            eventless,
            Shape::IntoHistoryParent,
        );
        self.attach(from, event, eventless, partner);
    }

    /// The atomic state below `state` that a default entry enters first
    /// (the state itself when it is atomic).
    fn default_leaf(&self, state: usize) -> usize {
        let mut at = state;
        while let Some(&first) = self.nodes[at].children.first() {
            at = first;
        }
        at
    }

    /// Adds `transition` to the state, first among its handlers of `event`.
    fn attach_first(&mut self, state: usize, event: &'static str, transition: Transition) {
        let on = &mut self.nodes[state].on;
        match on.iter_mut().find(|(e, _)| *e == event) {
            Some((_, list)) => list.insert(0, transition),
            None => on.push((event, vec![transition])),
        }
    }

    /// A transition to `targets` with a label, guarded with an `inc` when
    /// eventless, else now and then.
    fn shaped(&mut self, targets: Vec<String>, eventless: bool, shape: Shape) -> Transition {
        let mut actions = vec![self.label()];
        let bounded = eventless || self.rng.chance(30);
        let bound = bounded.then(|| 1 + self.rng.below(MAX_BOUND as usize) as u64);
        if bounded {
            actions.push(Act::Inc);
        }
        Transition {
            targets,
            bound,
            actions,
            reenter: false,
            shape: Some(shape),
        }
    }

    /// Adds `transition` to the state, mostly first among its handlers of
    /// `event` (or its eventless ones), else last.
    fn attach(
        &mut self,
        state: usize,
        event: &'static str,
        eventless: bool,
        transition: Transition,
    ) {
        let first = self.rng.chance(75);
        let node = &mut self.nodes[state];
        let list = if eventless {
            &mut node.always
        } else {
            match node.on.iter().position(|(e, _)| *e == event) {
                Some(i) => &mut node.on[i].1,
                None => {
                    node.on.push((event, Vec::new()));
                    &mut node.on.last_mut().expect("just pushed").1
                }
            }
        };
        if first {
            list.insert(0, transition);
        } else {
            list.push(transition);
        }
    }

    /// The state's id, given one (`i` and its index) if it has none.
    fn id_of(&mut self, state: usize) -> String {
        self.nodes[state]
            .id
            .get_or_insert_with(|| format!("i{state}"))
            .clone()
    }

    /// Whether the state is active once the machine has started: each
    /// compound state above it enters the child on the way to it.
    fn initially_active(&self, state: usize) -> bool {
        let mut at = state;
        while let Some(parent) = self.nodes[at].parent {
            if self.nodes[parent].kind == Kind::Compound && self.nodes[parent].children[0] != at {
                return false;
            }
            at = parent;
        }
        true
    }

    /// The nearest parallel proper ancestor of the state.
    fn parallel_ancestor(&self, state: usize) -> Option<usize> {
        let mut at = self.nodes[state].parent;
        while let Some(a) = at {
            if self.nodes[a].kind == Kind::Parallel {
                return Some(a);
            }
            at = self.nodes[a].parent;
        }
        None
    }

    /// Whether `inner` is `outer` or lies inside it.
    fn contains(&self, outer: usize, inner: usize) -> bool {
        let mut at = Some(inner);
        while let Some(s) = at {
            if s == outer {
                return true;
            }
            at = self.nodes[s].parent;
        }
        false
    }

    /// A target written as both formats read it: a sibling (the state
    /// itself among them), a child, a sibling's child, or any state by `#id`.
    fn target(&mut self, index: usize) -> Option<String> {
        if self.rng.chance(15) {
            return None;
        }
        let node = &self.nodes[index];
        let mut choices: Vec<(String, usize)> = node
            .children
            .iter()
            .map(|&c| (format!(".{}", self.nodes[c].key), c))
            .collect();
        if let Some(parent) = node.parent {
            for &sibling in &self.nodes[parent].children {
                let key = &self.nodes[sibling].key;
                choices.push((key.clone(), sibling));
                for &nephew in &self.nodes[sibling].children {
                    choices.push((format!("{key}.{}", self.nodes[nephew].key), nephew));
                }
            }
        }
        choices.retain(|&(_, target)| !self.excluded_target(index, target));
        if self.rng.chance(30) || choices.is_empty() {
            let other = 1 + self.rng.below(self.nodes.len() - 1);
            if self.excluded_target(index, other) {
                return None;
            }
            let id = self.nodes[other]
                .id
                .get_or_insert_with(|| format!("i{other}"))
                .clone();
            return Some(format!("#{id}"));
        }
        Some(self.rng.pick(&choices).0.clone())
    }

    /// Now and then, when the features allow it and the machine has a
    /// parallel state, two targets by `#id`: states in two of its regions.
    fn parallel_targets(&mut self) -> Option<Vec<String>> {
        if !self.features.multiple_targets || !self.rng.chance(10) {
            return None;
        }
        let parallels: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].kind == Kind::Parallel)
            .collect();
        if parallels.is_empty() {
            return None;
        }
        let parallel = *self.rng.pick(&parallels);
        let mut regions = self.nodes[parallel].children.clone();
        let first = regions.remove(self.rng.below(regions.len()));
        let second = *self.rng.pick(&regions);
        Some(
            [first, second]
                .into_iter()
                .map(|region| {
                    let mut within = Vec::new();
                    self.subtree(region, &mut within);
                    let target = *self.rng.pick(&within);
                    let id = self.nodes[target]
                        .id
                        .get_or_insert_with(|| format!("i{target}"))
                        .clone();
                    format!("#{id}")
                })
                .collect(),
        )
    }

    /// The state and its descendants, history states left out.
    fn subtree(&self, index: usize, out: &mut Vec<usize>) {
        if let Kind::History { .. } = self.nodes[index].kind {
            return;
        }
        out.push(index);
        for &child in &self.nodes[index].children {
            self.subtree(child, out);
        }
    }

    /// Whether a transition of `source` may not target `target`: under
    /// `scxml` (unless the case is for classifying the differences), a
    /// history state whose parent is the source or one of its ancestors,
    /// which may restore the source itself, where SCXML and XState differ
    /// on purpose (`docs/semantics.md`, 5). Under `xstate` every history
    /// target is generated: the profile follows XState there, including
    /// its selection by the snapshot's value where such a target leaves two
    /// children of one compound state active (shrunk from seed 137; the
    /// regression test is `xstate_selects_one_child_of_a_compound_state`).
    fn excluded_target(&self, source: usize, target: usize) -> bool {
        let Kind::History { .. } = self.nodes[target].kind else {
            return false;
        };
        let parent = self.nodes[target]
            .parent
            .expect("a history state has a parent");
        let mut ancestor = Some(source);
        while let Some(a) = ancestor {
            if a == parent {
                return self.features.semantics == "scxml" && !self.features.differences;
            }
            ancestor = self.nodes[a].parent;
        }
        false
    }
}

impl Machine {
    /// The states reachable from the root, in document order.
    fn live(&self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![0];
        while let Some(index) = stack.pop() {
            out.push(index);
            stack.extend(self.nodes[index].children.iter().rev());
        }
        out
    }

    /// Whether the state can go: no target names it or a state inside it,
    /// and its parent keeps a first child that is no history state.
    fn removable(&self, index: usize) -> bool {
        let mut inside = Vec::new();
        let mut stack = vec![index];
        while let Some(s) = stack.pop() {
            inside.push(s);
            stack.extend(&self.nodes[s].children);
        }
        if self.named(&inside) {
            return false;
        }
        let parent = &self.nodes[self.nodes[index].parent.expect("not the root")];
        let left: Vec<usize> = parent
            .children
            .iter()
            .copied()
            .filter(|&c| c != index)
            .collect();
        match left.first() {
            None => false,
            Some(&first) => !matches!(self.nodes[first].kind, Kind::History { .. }),
        }
    }

    /// Whether a target of a live state names one of the states (keys are
    /// unique in the machine, and ids are `i` and the index).
    fn named(&self, inside: &[usize]) -> bool {
        let names = |target: &str| {
            inside.iter().any(|&s| {
                target == format!("#i{s}")
                    || target
                        .trim_start_matches('.')
                        .split('.')
                        .any(|segment| segment == self.nodes[s].key)
            })
        };
        for live in self.live() {
            let node = &self.nodes[live];
            if node.default.as_deref().is_some_and(names) {
                return true;
            }
            let transitions = node
                .on
                .iter()
                .flat_map(|(_, list)| list)
                .chain(&node.always)
                .chain(&node.on_done);
            for t in transitions {
                if t.targets.iter().any(|target| names(target)) {
                    return true;
                }
            }
        }
        false
    }

    fn yaml(&self) -> String {
        let mut out = format!(
            "machine: m\nsemantics: {}\ncontext: {{ n: 0 }}\n",
            self.semantics
        );
        self.yaml_state(0, 0, &mut out);
        out
    }

    fn yaml_state(&self, index: usize, indent: usize, out: &mut String) {
        let node = &self.nodes[index];
        let pad = " ".repeat(indent);
        let line = |out: &mut String, text: String| {
            out.push_str(&pad);
            out.push_str(&text);
            out.push('\n');
        };
        match node.kind {
            Kind::Parallel => line(out, "type: parallel".into()),
            Kind::Final => line(out, "type: final".into()),
            Kind::Compound => {
                let initial = &self.nodes[node.children[0]].key;
                line(out, format!("initial: {initial}"));
            }
            Kind::History { deep } => {
                line(out, "type: history".into());
                if deep {
                    line(out, "history: deep".into());
                }
            }
            Kind::Atomic => {}
        }
        if let Some(id) = &node.id {
            line(out, format!("id: {id}"));
        }
        if let Some(target) = &node.default {
            line(out, format!("target: {target}"));
        }
        if !node.entry.is_empty() {
            line(out, format!("entry: {}", yaml_actions(&node.entry)));
        }
        if !node.exit.is_empty() {
            line(out, format!("exit: {}", yaml_actions(&node.exit)));
        }
        let mut handlers: Vec<(String, &[Transition])> = node
            .on
            .iter()
            .map(|(event, list)| (event.to_string(), list.as_slice()))
            .collect();
        if let Some(done) = &node.on_done {
            let id = node.id.as_ref().expect("a state with onDone has an id");
            handlers.push((format!("done.state.{id}"), std::slice::from_ref(done)));
        }
        if !handlers.is_empty() {
            line(out, "on:".into());
            for (event, list) in handlers {
                line(out, format!("  {event}: {}", yaml_transitions(list)));
            }
        }
        if !node.always.is_empty() {
            line(out, format!("always: {}", yaml_transitions(&node.always)));
        }
        if !node.children.is_empty() {
            line(out, "states:".into());
            for &child in &node.children {
                line(out, format!("  {}:", self.nodes[child].key));
                self.yaml_state(child, indent + 4, out);
            }
        }
    }

    fn xstate(&self, index: usize) -> Value {
        let node = &self.nodes[index];
        let mut config = Map::new();
        if index == 0 {
            config.insert("id".into(), json!("m"));
            config.insert("context".into(), json!({ "n": 0 }));
        }
        match node.kind {
            Kind::Parallel => {
                config.insert("type".into(), json!("parallel"));
            }
            Kind::Final => {
                config.insert("type".into(), json!("final"));
            }
            Kind::Compound => {
                let initial = &self.nodes[node.children[0]].key;
                config.insert("initial".into(), json!(initial));
            }
            Kind::History { deep } => {
                config.insert("type".into(), json!("history"));
                config.insert(
                    "history".into(),
                    json!(if deep { "deep" } else { "shallow" }),
                );
            }
            Kind::Atomic => {}
        }
        if let Some(id) = &node.id {
            config.insert("id".into(), json!(id));
        }
        if let Some(target) = &node.default {
            config.insert("target".into(), json!(target));
        }
        if !node.entry.is_empty() {
            config.insert("entry".into(), xstate_actions(&node.entry));
        }
        if !node.exit.is_empty() {
            config.insert("exit".into(), xstate_actions(&node.exit));
        }
        if !node.on.is_empty() {
            let on: Map<String, Value> = node
                .on
                .iter()
                .map(|(event, list)| (event.to_string(), xstate_transitions(list)))
                .collect();
            config.insert("on".into(), Value::Object(on));
        }
        if !node.always.is_empty() {
            config.insert("always".into(), xstate_transitions(&node.always));
        }
        if let Some(done) = &node.on_done {
            config.insert("onDone".into(), xstate_transition(done));
        }
        if !node.children.is_empty() {
            let states: Map<String, Value> = node
                .children
                .iter()
                .map(|&c| (self.nodes[c].key.clone(), self.xstate(c)))
                .collect();
            config.insert("states".into(), Value::Object(states));
        }
        Value::Object(config)
    }
}

fn yaml_actions(actions: &[Act]) -> String {
    let items: Vec<String> = actions
        .iter()
        .map(|a| match a {
            Act::Log(label) => format!("{{ log: '\"{label}\"' }}"),
            Act::Inc => "{ assign: { n: \"context.n + 1\" } }".into(),
            Act::Raise(event) => format!("{{ raise: {event} }}"),
        })
        .collect();
    if items.is_empty() {
        return "[]".into();
    }
    format!("[ {} ]", items.join(", "))
}

fn yaml_transitions(list: &[Transition]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|t| {
            let mut fields = Vec::new();
            match t.targets.as_slice() {
                [] => {}
                [target] => fields.push(format!("target: \"{target}\"")),
                targets => fields.push(format!("target: [ \"{}\" ]", targets.join("\", \""))),
            }
            if let Some(bound) = t.bound {
                fields.push(format!("guard: \"context.n < {bound}\""));
            }
            fields.push(format!("actions: {}", yaml_actions(&t.actions)));
            if t.reenter {
                fields.push("reenter: true".into());
            }
            format!("{{ {} }}", fields.join(", "))
        })
        .collect();
    format!("[ {} ]", items.join(", "))
}

fn xstate_actions(actions: &[Act]) -> Value {
    actions
        .iter()
        .map(|a| match a {
            Act::Log(label) => json!({ "type": "log", "params": { "label": label } }),
            Act::Inc => json!({ "type": "inc" }),
            Act::Raise(event) => json!({ "type": "raise", "params": { "event": event } }),
        })
        .collect()
}

fn xstate_transition(t: &Transition) -> Value {
    let mut config = Map::new();
    match t.targets.as_slice() {
        [] => {}
        [target] => {
            config.insert("target".into(), json!(target));
        }
        targets => {
            config.insert("target".into(), json!(targets));
        }
    }
    if let Some(bound) = t.bound {
        config.insert(
            "guard".into(),
            json!({ "type": "below", "params": { "n": bound } }),
        );
    }
    config.insert("actions".into(), xstate_actions(&t.actions));
    if t.reenter {
        config.insert("reenter".into(), json!(true));
    }
    Value::Object(config)
}

fn xstate_transitions(list: &[Transition]) -> Value {
    list.iter().map(xstate_transition).collect()
}
