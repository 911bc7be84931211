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
//! raise nothing.

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

#[derive(Clone)]
struct Transition {
    /// The targets as written in both formats; none for a targetless
    /// transition, two for one into two regions of a parallel state.
    targets: Vec<String>,
    /// The guard `n < bound`.
    bound: Option<u64>,
    actions: Vec<Act>,
    reenter: bool,
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
    /// together, a history target that restores its own source), for a
    /// test that classifies each disagreement.
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
    let events = (0..3 + b.rng.below(6))
        .map(|_| *b.rng.pick(&EVENTS))
        .collect();
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

    /// The kinds of state the documented differences between SCXML and
    /// XState need that the machine has: `parallel` (the first four) and
    /// `history` (the fifth).
    pub fn difference_prerequisites(&self) -> Vec<&'static str> {
        let live = self.machine.live();
        let has = |kind: fn(&Kind) -> bool| live.iter().any(|&i| kind(&self.machine.nodes[i].kind));
        let mut out = Vec::new();
        if has(|k| *k == Kind::Parallel) {
            out.push("parallel");
        }
        if has(|k| matches!(k, Kind::History { .. })) {
            out.push("history");
        }
        out
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
        }
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
