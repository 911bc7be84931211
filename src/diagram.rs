//! Machine → diagram text: Graphviz DOT and Mermaid `stateDiagram-v2`.
//!
//! Both show the same things: the state tree (compound and parallel states as
//! boxes around their children), the default entries, and one arrow per
//! transition target, labelled `EVENT [guard]`, `always` or `after 30m`.
//!
//! Choices shared by both outputs:
//! - A state is labelled with its key (or its `id` where the author gave one):
//!   the enclosing boxes already show the path.
//! - A targetless transition (actions only, no exit or entry) is drawn as a
//!   loop on its source state. Omitting it would hide exactly the transitions
//!   that accept an event again without leaving the state, which is what the
//!   idempotency lints are about.
//! - A transition with `reenter: true` says so in its label, `(reenter)`,
//!   because re-entry re-runs entry and exit actions.
//! - A state's label lists its entry and exit actions (`entry / charge,
//!   assign total`) and its invocations (`invoke / cobro: cobrarTarjeta`):
//!   re-entry re-runs them, which is what I002 is about.
//! - Both outputs are deterministic: states and transitions in document order.
//!
//! An `Overlay` adds what the linter says: the states and transitions of each
//! finding are coloured by severity (a finding sits on the elements whose
//! source text holds its span or one of its labels' spans), the findings on
//! no drawn element are listed in a legend, and a witness is written as
//! numbered steps on the transitions that replaying it takes.

mod svg;

use std::collections::HashSet;
use std::fmt::Write;

use petgraph::Graph;
use petgraph::dot::{Config, Dot, RankDir};
use petgraph::visit::EdgeRef;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{
    Action, HistoryKind, Machine, StateId, StateKind, Transition, TransitionId, Trigger,
};
use crate::span::Span;

pub(crate) use svg::attribute as xml_attribute;
pub use svg::svg_with;

/// Colours of the marks: findings by severity, and the witness path.
const ERROR_COLOUR: &str = "#dc2626";
const WARNING_COLOUR: &str = "#d97706";
const WITNESS_COLOUR: &str = "#2563eb";

fn severity_colour(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => ERROR_COLOUR,
        Severity::Warning | Severity::Note => WARNING_COLOUR,
    }
}

/// One finding as a diagram shows it: its number in the lint's order, its
/// severity, and `I001 self-accepting-event: message`.
#[derive(Clone, Debug)]
struct Mark {
    number: usize,
    severity: Severity,
    text: String,
}

/// What a diagram draws on top of the machine: the findings of the linter
/// and one finding's witness. The default draws nothing.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    /// Every finding, in the lint's order, with the elements it sits on.
    findings: Vec<(Mark, Vec<Place>)>,
    /// The numbered witness steps each transition takes (`1. PAGO`).
    steps: Vec<(TransitionId, String)>,
}

/// A drawn element of the machine that a finding can sit on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    State(StateId),
    Transition(TransitionId),
}

impl Overlay {
    /// The findings marked on the states and transitions their spans and
    /// labels lie in; those that lie in none are listed in the legend.
    pub fn findings(machine: &Machine, findings: &[Diagnostic]) -> Overlay {
        let findings = findings
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mark = Mark {
                    number: i + 1,
                    severity: d.severity,
                    text: format!("{} {}: {}", d.code, d.name, d.message),
                };
                let mut places = Vec::new();
                let spans = std::iter::once(d.span).chain(d.labels.iter().map(|l| l.span));
                for place in spans.filter_map(|span| place_of(machine, span)) {
                    if !places.contains(&place) {
                        places.push(place);
                    }
                }
                (mark, places)
            })
            .collect();
        Overlay {
            findings,
            steps: Vec::new(),
        }
    }

    /// Adds a witness: its rendered steps (`PAGO`, `PAGO*`, `after 30s`)
    /// with the transitions each one took (`lint::witness_transitions`).
    pub fn with_witness(mut self, steps: &[String], taken: &[Vec<TransitionId>]) -> Overlay {
        for (i, (step, transitions)) in steps.iter().zip(taken).enumerate() {
            // A loop turn names its transitions, which the edges show; a
            // delivery is drawn by its name, without the payload a witness
            // may write after it (`PAGO {"importe": 5}`).
            let step = if step.starts_with("loop:") {
                "loop".to_string()
            } else {
                match step.split_once(" {") {
                    Some((name, rest)) if rest.ends_with('*') => format!("{name}*"),
                    Some((name, _)) => name.to_string(),
                    None => step.clone(),
                }
            };
            for &t in transitions {
                self.steps.push((t, format!("{}. {step}", i + 1)));
            }
        }
        self
    }

    fn marks_on(&self, place: Place) -> impl Iterator<Item = &Mark> + '_ {
        self.findings
            .iter()
            .filter(move |(_, places)| places.contains(&place))
            .map(|(mark, _)| mark)
    }

    /// The highest severity among the findings on `place`.
    fn severity_on(&self, place: Place) -> Option<Severity> {
        self.marks_on(place).map(|m| m.severity).max()
    }

    /// The witness steps on a transition, joined: `1. PAGO, 2. PAGO*`.
    fn steps_on(&self, transition: TransitionId) -> Option<String> {
        let steps: Vec<&str> = self
            .steps
            .iter()
            .filter(|(t, _)| *t == transition)
            .map(|(_, s)| s.as_str())
            .collect();
        (!steps.is_empty()).then(|| steps.join(", "))
    }

    /// The findings on no drawn element.
    fn unplaced(&self) -> impl Iterator<Item = &Mark> + '_ {
        self.findings
            .iter()
            .filter(|(_, places)| places.is_empty())
            .map(|(mark, _)| mark)
    }
}

/// The drawn element whose source text most narrowly holds `span`: a
/// state's key or one of its entry or exit actions, a transition or one of
/// its actions. The root is drawn as no element of its own (the whole
/// diagram is it), so a finding there goes to the legend.
fn place_of(machine: &Machine, span: Span) -> Option<Place> {
    let holds =
        |outer: Span| outer.start < outer.end && outer.start <= span.start && span.end <= outer.end;
    let mut best: Option<(u32, Place)> = None;
    let mut consider = |outer: Span, place: Place| {
        if holds(outer) && best.is_none_or(|(width, _)| outer.end - outer.start < width) {
            best = Some((outer.end - outer.start, place));
        }
    };
    for id in machine.state_ids().skip(1) {
        let state = machine.state(id);
        consider(state.span, Place::State(id));
        for action in state.entry.iter().chain(&state.exit) {
            consider(action.span(), Place::State(id));
        }
        for invocation in &state.invoke {
            consider(invocation.span, Place::State(id));
        }
    }
    for (index, transition) in machine.transitions.iter().enumerate() {
        let place = Place::Transition(TransitionId(index as u32));
        consider(transition.span, place);
        for action in &transition.actions {
            consider(action.span(), place);
        }
    }
    best.map(|(_, place)| place)
}

/// What one action does, as a state's label lists it (and a hover).
pub(crate) fn action_summary(action: &Action) -> String {
    match action {
        Action::Assign { fields, .. } => {
            let names: Vec<&str> = fields.keys().map(String::as_str).collect();
            format!("assign {}", names.join(", "))
        }
        Action::Raise { event, .. } => format!("raise {}", event.text),
        Action::Send { event, .. } => format!("send {}", event.text),
        Action::Cancel { id, .. } => format!("cancel {}", id.text),
        Action::Effect { name, .. } | Action::Host { name, .. } => name.text.clone(),
        Action::Log { .. } => "log".to_string(),
    }
}

/// The lines under a state's name: `entry / …`, `exit / …` and
/// `invoke / …` (each invocation's id and src, or its src alone where that
/// is its id), each present only when the state has such.
fn action_lines(machine: &Machine, id: StateId) -> Vec<String> {
    let state = machine.state(id);
    let mut lines: Vec<String> = [("entry", &state.entry), ("exit", &state.exit)]
        .into_iter()
        .filter(|(_, actions)| !actions.is_empty())
        .map(|(kind, actions)| {
            let summaries: Vec<String> = actions.iter().map(action_summary).collect();
            format!("{kind} / {}", summaries.join(", "))
        })
        .collect();
    if !state.invoke.is_empty() {
        let calls: Vec<String> = state
            .invoke
            .iter()
            .map(|i| match i.id.text == i.src.text {
                true => i.src.text.clone(),
                false => format!("{}: {}", i.id.text, i.src.text),
            })
            .collect();
        lines.push(format!("invoke / {}", calls.join(", ")));
    }
    lines
}

/// The label of a transition's arrow: its trigger, then its guard in brackets.
fn transition_label(transition: &Transition) -> String {
    let mut label = match &transition.trigger {
        Trigger::Event(descriptor) => descriptor.to_string(),
        Trigger::Always => "always".to_string(),
        Trigger::After(delay) => format!("after {delay}"),
    };
    if let Some(guard) = &transition.guard {
        let _ = write!(label, " [{guard}]");
    }
    if transition.reenter {
        label.push_str(" (reenter)");
    }
    label
}

/// The name a state is shown under inside its parent's box.
fn state_label(machine: &Machine, id: StateId) -> &str {
    let state = machine.state(id);
    match &state.id {
        Some(explicit) => explicit,
        None if id == StateId::ROOT => &machine.name,
        None => &state.key,
    }
}

fn is_container(kind: StateKind) -> bool {
    matches!(kind, StateKind::Compound | StateKind::Parallel)
}

fn history_marker(kind: HistoryKind) -> &'static str {
    match kind {
        HistoryKind::Shallow => "H",
        HistoryKind::Deep => "H*",
    }
}

// ---------------------------------------------------------------------------
// DOT
// ---------------------------------------------------------------------------

/// What a node of the DOT graph stands for.
#[derive(Clone, Copy, Debug)]
enum DotNode {
    /// A state; node `i` is `StateId(i)`.
    State(StateId),
    /// The initial marker of a compound state (or of the root), pointing at
    /// its default entry.
    Initial(StateId),
}

impl DotNode {
    /// The state the node belongs to.
    fn state(self) -> StateId {
        match self {
            DotNode::State(id) | DotNode::Initial(id) => id,
        }
    }
}

/// What an arrow of the DOT graph stands for.
#[derive(Clone, Copy, Debug)]
enum DotEdge {
    /// From a compound state's initial marker to its default entry.
    Initial,
    /// From a history state to the default it uses before any history exists.
    HistoryDefault,
    /// One target of a transition (the source itself for a targetless one).
    Transition(TransitionId),
}

/// Renders the machine as a Graphviz digraph.
///
/// The graph is a `petgraph::Graph` whose first nodes are the states (node
/// index = `StateId` index), followed by one initial marker per compound
/// state, and whose edges are the transitions and default entries;
/// `petgraph::dot::Dot` writes its nodes and edges. Petgraph has no notion of
/// clusters, so the state tree is written around that output as nested
/// `subgraph cluster_N` blocks that only name their member nodes. A compound
/// or parallel state is drawn as its cluster; its own node is an invisible
/// point inside the cluster that anchors the arrows from and to the state,
/// which `lhead`/`ltail` clip at the cluster's border. The initial marker is a
/// separate node, so that an arrow from a state to its own child does not look
/// like a default entry.
pub fn dot(machine: &Machine) -> String {
    dot_with(machine, &Overlay::default())
}

/// `dot` with the overlay's findings and witness drawn: a marked state or
/// transition is drawn in its severity's colour, with the findings in its
/// tooltip; the witness steps are added to the labels of the transitions
/// they take, drawn in blue where no finding colours them; the findings on
/// no drawn element are listed under the graph's title. Every finding is
/// also written as a comment, numbered as `--witness` counts them.
pub fn dot_with(machine: &Machine, overlay: &Overlay) -> String {
    let mut graph: Graph<DotNode, DotEdge> =
        Graph::with_capacity(machine.states.len(), machine.transitions.len());
    let nodes: Vec<_> = machine
        .state_ids()
        .map(|id| graph.add_node(DotNode::State(id)))
        .collect();
    let mut markers = vec![None; machine.states.len()];

    for id in machine.state_ids() {
        let state = machine.state(id);
        let (from, edge) = match state.kind {
            StateKind::Compound if !state.initial.is_empty() => {
                let marker = graph.add_node(DotNode::Initial(id));
                markers[id.index()] = Some(marker.index());
                (marker, DotEdge::Initial)
            }
            StateKind::History(_) => (nodes[id.index()], DotEdge::HistoryDefault),
            _ => continue,
        };
        for target in &state.initial {
            graph.add_edge(from, nodes[target.state.index()], edge);
        }
    }
    for (index, transition) in machine.transitions.iter().enumerate() {
        let edge = DotEdge::Transition(TransitionId(index as u32));
        let source = nodes[transition.source.index()];
        if transition.targets.is_empty() {
            graph.add_edge(source, source, edge);
        }
        for target in &transition.targets {
            graph.add_edge(source, nodes[target.state.index()], edge);
        }
    }

    let config = [
        Config::GraphContentOnly,
        Config::NodeNoLabel,
        Config::EdgeNoLabel,
        Config::RankDir(RankDir::LR),
    ];
    let body = format!(
        "{:?}",
        Dot::with_attr_getters(
            &graph,
            &config,
            &|g, edge| {
                let (source, target) = (g[edge.source()].state(), g[edge.target()].state());
                dot_edge_attributes(machine, overlay, source, target, *edge.weight())
            },
            &|_, (_, &node)| dot_node_attributes(machine, overlay, node),
        )
    );

    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", dot_string(&machine.name));
    for (mark, _) in &overlay.findings {
        let _ = writeln!(out, "    // {}. {}", mark.number, one_line(&mark.text));
    }
    out.push_str("    compound=true\n");
    let mut title = vec![state_label(machine, StateId::ROOT).to_string()];
    title.extend(action_lines(machine, StateId::ROOT));
    title.extend(
        overlay
            .unplaced()
            .map(|m| format!("{}. {}", m.number, m.text)),
    );
    let _ = writeln!(
        out,
        "    label={} labelloc=t",
        dot_string(&title.join("\n"))
    );
    out.push_str("    node [shape=box style=rounded]\n");
    dot_clusters(machine, overlay, &markers, StateId::ROOT, 1, &mut out);
    out.push_str(&body);
    out.push_str("}\n");
    out
}

/// Writes the cluster blocks of `parent`'s container children, recursively.
fn dot_clusters(
    machine: &Machine,
    overlay: &Overlay,
    markers: &[Option<usize>],
    parent: StateId,
    depth: usize,
    out: &mut String,
) {
    let indent = "    ".repeat(depth);
    for &child in &machine.state(parent).children {
        let state = machine.state(child);
        if is_container(state.kind) {
            let style = if state.kind == StateKind::Parallel {
                "rounded,dashed"
            } else {
                "rounded"
            };
            let _ = writeln!(out, "{indent}subgraph cluster_{} {{", child.index());
            let _ = writeln!(
                out,
                "{indent}    label={} style=\"{style}\"{}",
                dot_string(&dot_state_label(machine, child)),
                dot_marks(overlay, Place::State(child))
            );
            let _ = writeln!(out, "{indent}    {}", child.index());
            if let Some(marker) = markers[child.index()] {
                let _ = writeln!(out, "{indent}    {marker}");
            }
            dot_clusters(machine, overlay, markers, child, depth + 1, out);
            let _ = writeln!(out, "{indent}}}");
        } else if parent != StateId::ROOT {
            let _ = writeln!(out, "{indent}{}", child.index());
        }
    }
}

/// A state's name with its entry and exit actions, one per line.
fn dot_state_label(machine: &Machine, id: StateId) -> String {
    let mut lines = vec![state_label(machine, id).to_string()];
    lines.extend(action_lines(machine, id));
    lines.join("\n")
}

/// The colour, pen width and tooltip of a marked element, with a leading
/// space; empty for an unmarked one. The tooltip names the element and
/// lists its findings.
fn dot_marks(overlay: &Overlay, place: Place) -> String {
    let Some(severity) = overlay.severity_on(place) else {
        return String::new();
    };
    let texts: Vec<&str> = overlay.marks_on(place).map(|m| m.text.as_str()).collect();
    format!(
        " color={colour} fontcolor={colour} penwidth=2 tooltip={}",
        dot_string(&texts.join("\n")),
        colour = dot_string(severity_colour(severity))
    )
}

/// Text on one line, for a comment.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

fn dot_node_attributes(machine: &Machine, overlay: &Overlay, node: DotNode) -> String {
    let id = match node {
        DotNode::State(id) => id,
        DotNode::Initial(_) => {
            return "label = \"\" tooltip = \"initial\" shape = point width = 0.15 ".into();
        }
    };
    let label = dot_string(&dot_state_label(machine, id));
    let mut tooltip = vec![machine.display_name(id)];
    tooltip.extend(overlay.marks_on(Place::State(id)).map(|m| m.text.as_str()));
    let tooltip = dot_string(&tooltip.join("\n"));
    let mark = match overlay.severity_on(Place::State(id)) {
        Some(severity) => format!(
            "color = {colour} fontcolor = {colour} penwidth = 2 ",
            colour = dot_string(severity_colour(severity))
        ),
        None => String::new(),
    };
    match machine.state(id).kind {
        StateKind::Atomic => format!("label = {label} tooltip = {tooltip} {mark}"),
        StateKind::Final => {
            format!("label = {label} tooltip = {tooltip} shape = doublecircle {mark}")
        }
        StateKind::History(kind) => format!(
            "label = {} tooltip = {tooltip} shape = circle ",
            dot_string(history_marker(kind))
        ),
        StateKind::Compound | StateKind::Parallel => {
            format!("label = \"\" tooltip = {tooltip} shape = point style = invis ")
        }
    }
}

fn dot_edge_attributes(
    machine: &Machine,
    overlay: &Overlay,
    source: StateId,
    target: StateId,
    edge: DotEdge,
) -> String {
    let mut attributes = String::new();
    match edge {
        DotEdge::Initial => {}
        DotEdge::HistoryDefault => attributes.push_str("style = dotted "),
        DotEdge::Transition(id) => {
            let transition = machine.transition(id);
            let mut label = transition_label(transition);
            let steps = overlay.steps_on(id);
            if let Some(steps) = &steps {
                let _ = write!(label, "\n{steps}");
            }
            let _ = write!(attributes, "label = {} ", dot_string(&label));
            if transition.targets.is_empty() {
                attributes.push_str("style = dashed ");
            }
            let place = Place::Transition(id);
            let colour = match overlay.severity_on(place) {
                Some(severity) => Some(severity_colour(severity)),
                None => steps.as_ref().map(|_| WITNESS_COLOUR),
            };
            if let Some(colour) = colour {
                let colour = dot_string(colour);
                let _ = write!(
                    attributes,
                    "color = {colour} fontcolor = {colour} penwidth = 2 "
                );
            }
            let texts: Vec<&str> = overlay.marks_on(place).map(|m| m.text.as_str()).collect();
            if !texts.is_empty() {
                let _ = write!(attributes, "tooltip = {} ", dot_string(&texts.join("\n")));
            }
        }
    }
    // Clip at a cluster's border only where the other end lies outside it;
    // Graphviz ignores (and warns about) a clip the other end is inside of.
    let clusters = |id: StateId| id != StateId::ROOT && is_container(machine.state(id).kind);
    if clusters(source)
        && !matches!(edge, DotEdge::Initial)
        && !machine.is_descendant_or_self(target, source)
    {
        let _ = write!(attributes, "ltail = cluster_{} ", source.index());
    }
    if clusters(target) && !machine.is_descendant_or_self(source, target) {
        let _ = write!(attributes, "lhead = cluster_{} ", target.index());
    }
    attributes
}

/// A DOT double-quoted string.
fn dot_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------
// Mermaid
// ---------------------------------------------------------------------------

/// Words Mermaid's state-diagram lexer reads as keywords where an id stands.
const MERMAID_KEYWORDS: [&str; 13] = [
    "state",
    "note",
    "end",
    "as",
    "class",
    "classdef",
    "style",
    "click",
    "href",
    "default",
    "direction",
    "scale",
    "hide",
];

/// Renders the machine as a Mermaid `stateDiagram-v2`, which GitHub renders.
///
/// Mermaid adds a state to the block where it is first mentioned, so every
/// state is declared in its parent's block before any arrow mentions it, and
/// each arrow is written in the innermost block that contains both of its ends
/// (never inside a parallel state, whose block is split into regions by
/// `--`). Mermaid has no history pseudo-state: a history state is a state
/// labelled `H` or `H*` with a note naming it. A final state is a state with an
/// arrow to its parent's `[*]`. A parallel root becomes a state named after
/// the machine, because regions can only be separated inside a state; so does
/// a root with machine-wide transitions, which need a state to start from.
/// Mermaid draws no line between a composite state and a state inside it (the
/// label floats alone), so such a transition, from a parent to its child or
/// back, is drawn as a loop on its source whose label ends in `→ TARGET`.
/// Mermaid also draws only one loop per state, so all the loops on a state
/// share one arrow, one label per line.
///
/// ```
/// use idemchart::syntax::{Syntax, parse};
///
/// let machine = parse(
///     "machine: door\ninitial: closed\nstates:\n  closed: { on: { OPEN: opened } }\n  opened: {}\n",
///     Syntax::Yaml,
/// ).unwrap();
/// let text = idemchart::diagram::mermaid(&machine);
/// assert!(text.starts_with("stateDiagram-v2"));
/// assert!(text.contains("closed --> opened : OPEN"));
/// ```
pub fn mermaid(machine: &Machine) -> String {
    mermaid_with(machine, &Overlay::default())
}

/// `mermaid` with the overlay's findings and witness drawn: every finding
/// is written as a `%%` comment, numbered as `--witness` counts them, those
/// on no drawn element marked so; a marked state gets the `classDef` of its
/// severity through `class`; a marked arrow's label names the findings'
/// codes; the witness steps are added to the labels of the transitions
/// they take.
pub fn mermaid_with(machine: &Machine, overlay: &Overlay) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    for (mark, places) in &overlay.findings {
        let place = if places.is_empty() {
            " (on no state or transition)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    %% {}. {}{place}",
            mark.number,
            one_line(&mark.text)
        );
    }
    let mut writer = MermaidWriter {
        machine,
        overlay,
        ids: mermaid_ids(machine),
        arrows: vec![Vec::new(); machine.states.len() + 1],
        out,
    };
    writer.collect_arrows();
    // The root is drawn as a state only where it must be: to hold regions, or
    // to carry the machine-wide transitions as loops.
    let wrapped = machine.root().kind == StateKind::Parallel
        || machine
            .transitions
            .iter()
            .any(|t| t.source == StateId::ROOT);
    if wrapped {
        writer.declare(StateId::ROOT, 1);
        let line = format!("[*] --> {}", writer.ids[StateId::ROOT.index()]);
        writer.line(1, &line);
    } else {
        writer.block(StateId::ROOT, 1);
    }
    writer.write_arrows(writer.top(), 1);
    writer.write_styles();
    writer.out
}

struct MermaidWriter<'m> {
    machine: &'m Machine,
    overlay: &'m Overlay,
    /// The Mermaid id of each state, indexed by `StateId`.
    ids: Vec<String>,
    /// The arrow lines to write in each state's block, indexed by `StateId`,
    /// and last those to write outside every block.
    arrows: Vec<Vec<String>>,
    out: String,
}

/// Unique Mermaid identifiers: the dotted path with every character outside
/// `[A-Za-z0-9_]` replaced by `_`, suffixed where that collides.
fn mermaid_ids(machine: &Machine) -> Vec<String> {
    let mut taken = HashSet::new();
    let mut ids = Vec::with_capacity(machine.states.len());
    for id in machine.state_ids() {
        let source = if id == StateId::ROOT {
            machine.name.as_str()
        } else {
            machine.state(id).path.as_str()
        };
        let mut base: String = source
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, 's');
        }
        if MERMAID_KEYWORDS.contains(&base.to_ascii_lowercase().as_str()) {
            base.push('_');
        }
        let mut candidate = base.clone();
        let mut suffix = 2;
        while !taken.insert(candidate.to_ascii_lowercase()) {
            candidate = format!("{base}_{suffix}");
            suffix += 1;
        }
        ids.push(candidate);
    }
    ids
}

impl MermaidWriter<'_> {
    /// Sorts every arrow into the block that will hold it.
    fn collect_arrows(&mut self) {
        let machine = self.machine;
        for id in machine.state_ids() {
            if let StateKind::History(_) = machine.state(id).kind {
                for target in &machine.state(id).initial {
                    let line = format!(
                        "{} --> {}",
                        self.ids[id.index()],
                        self.ids[target.state.index()]
                    );
                    let scope = self.scope(id, target.state);
                    self.arrows[scope].push(line);
                }
            }
        }
        // Mermaid draws a single loop per state, so the loops on a state
        // share one arrow, one label per line.
        let mut loops: Vec<Vec<String>> = vec![Vec::new(); machine.states.len()];
        for (index, transition) in machine.transitions.iter().enumerate() {
            let id = TransitionId(index as u32);
            let steps = self.arrow_steps(id);
            let label = format!("{}{steps}", self.arrow_label(id));
            let source = transition.source;
            if transition.targets.is_empty() {
                loops[source.index()].push(label.clone());
            }
            for target in &transition.targets {
                let to = target.state;
                if to == source {
                    loops[source.index()].push(label.clone());
                } else if machine.is_descendant_or_self(to, source)
                    || machine.is_descendant_or_self(source, to)
                {
                    // Mermaid draws no line between a composite state and a
                    // state inside it, so the arrow becomes a loop that names
                    // its target.
                    let to = mermaid_label(&target.text);
                    let base = self.arrow_label(id);
                    loops[source.index()].push(format!("{base} → {to}{steps}"));
                } else {
                    let line = format!(
                        "{} --> {} : {label}",
                        self.ids[source.index()],
                        self.ids[to.index()]
                    );
                    let scope = self.scope(source, to);
                    self.arrows[scope].push(line);
                }
            }
        }
        for id in machine.state_ids() {
            let labels = &loops[id.index()];
            if !labels.is_empty() {
                let from = &self.ids[id.index()];
                let line = format!("{from} --> {from} : {}", labels.join("<br>"));
                let scope = self.scope(id, id);
                self.arrows[scope].push(line);
            }
        }
    }

    /// A transition's label: its trigger and guard, and the codes of the
    /// findings on it.
    fn arrow_label(&self, id: TransitionId) -> String {
        let mut label = mermaid_label(&transition_label(self.machine.transition(id)));
        let codes: Vec<&str> = self
            .overlay
            .marks_on(Place::Transition(id))
            .filter_map(|m| m.text.split(' ').next())
            .collect();
        if !codes.is_empty() {
            let _ = write!(label, " ⚠ {}", codes.join(", "));
        }
        label
    }

    /// The witness steps that take a transition, as the end of its label.
    fn arrow_steps(&self, id: TransitionId) -> String {
        match self.overlay.steps_on(id) {
            Some(steps) => format!("<br>{}", mermaid_label(&steps)),
            None => String::new(),
        }
    }

    /// The `classDef` and `class` lines of the marks. Arrows carry their
    /// marks in their labels only: a state diagram has no `linkStyle`
    /// (Mermaid refuses the whole diagram with one, mermaid-js/mermaid#1352).
    fn write_styles(&mut self) {
        let overlay = self.overlay;
        for severity in [Severity::Warning, Severity::Error] {
            let marked: Vec<&str> = self
                .machine
                .state_ids()
                .filter(|&id| overlay.severity_on(Place::State(id)) == Some(severity))
                .map(|id| self.ids[id.index()].as_str())
                .collect();
            if marked.is_empty() {
                continue;
            }
            let (name, colour) = (severity.as_str(), severity_colour(severity));
            let lines = [
                format!("classDef {name} stroke:{colour},stroke-width:3px,color:{colour}"),
                format!("class {} {name}", marked.join(",")),
            ];
            for line in lines {
                self.line(1, &line);
            }
        }
    }

    /// Where the arrows outside every block go in `arrows`.
    fn top(&self) -> usize {
        self.machine.states.len()
    }

    /// The innermost non-parallel state whose block contains both ends, as an
    /// index into `arrows`; `top()` when no block does.
    fn scope(&self, source: StateId, target: StateId) -> usize {
        let machine = self.machine;
        let mut scope = machine
            .ancestors(source)
            .find(|&a| a != target && machine.is_descendant_or_self(target, a));
        while let Some(state) = scope {
            if machine.state(state).kind != StateKind::Parallel {
                return state.index();
            }
            scope = machine.state(state).parent;
        }
        self.top()
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Declares a state in its parent's block, with its own block if it has one.
    fn declare(&mut self, id: StateId, depth: usize) {
        let machine = self.machine;
        let state = machine.state(id);
        let mermaid_id = self.ids[id.index()].clone();
        let mut lines = vec![mermaid_text(match state.kind {
            StateKind::History(kind) => history_marker(kind),
            _ => state_label(machine, id),
        })];
        lines.extend(action_lines(machine, id).iter().map(|l| mermaid_text(l)));
        let label = lines.join("<br>");
        if label != mermaid_id {
            let line = format!("state \"{label}\" as {mermaid_id}");
            self.line(depth, &line);
        } else if !is_container(state.kind) {
            // A container is declared by its block below.
            self.line(depth, &mermaid_id);
        }
        if let StateKind::History(kind) = state.kind {
            let kind = match kind {
                HistoryKind::Shallow => "shallow",
                HistoryKind::Deep => "deep",
            };
            // A note's text ends at any `:`.
            let line = format!(
                "note right of {mermaid_id} : {kind} history ({})",
                mermaid_label(&state.key).replace(':', " ")
            );
            self.line(depth, &line);
        }
        if is_container(state.kind) {
            self.line(depth, &format!("state {mermaid_id} {{"));
            self.block(id, depth + 1);
            self.line(depth, "}");
        }
    }

    /// Writes the inside of a state's block.
    fn block(&mut self, id: StateId, depth: usize) {
        let machine = self.machine;
        let state = machine.state(id);
        if state.kind == StateKind::Parallel {
            for (i, &region) in state.children.iter().enumerate() {
                if i > 0 {
                    self.line(depth, "--");
                }
                self.declare(region, depth);
                self.write_final(region, depth);
            }
            return;
        }
        for &child in &state.children {
            self.declare(child, depth);
        }
        for target in &state.initial {
            let line = format!("[*] --> {}", self.ids[target.state.index()]);
            self.line(depth, &line);
        }
        self.write_arrows(id.index(), depth);
        for &child in &state.children {
            self.write_final(child, depth);
        }
    }

    fn write_arrows(&mut self, scope: usize, depth: usize) {
        for line in std::mem::take(&mut self.arrows[scope]) {
            self.line(depth, &line);
        }
    }

    fn write_final(&mut self, id: StateId, depth: usize) {
        if self.machine.state(id).kind == StateKind::Final {
            let line = format!("{} --> [*]", self.ids[id.index()]);
            self.line(depth, &line);
        }
    }
}

/// Text for a Mermaid label that runs to the end of the line.
///
/// Mermaid ends a label at `;` and at `::`, and reads `<b` as an HTML tag; its
/// entity codes (`#59;`) are not decoded in state-diagram labels. So `;` is
/// written as the look-alike U+037E, `::` gets a space, and `<` before a letter
/// gets a space. Only string literals inside guards can contain these.
fn mermaid_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => out.push('\u{037E}'),
            '\n' | '\r' => out.push(' '),
            ':' if chars.peek() == Some(&':') => out.push_str(": "),
            '<' if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')) =>
            {
                out.push_str("< ")
            }
            _ => out.push(c),
        }
    }
    out
}

/// Text for a Mermaid double-quoted state description, which cannot hold `"`.
fn mermaid_text(text: &str) -> String {
    mermaid_label(text).replace('"', "'")
}

#[cfg(test)]
mod tests {
    use indexmap::IndexMap;

    use super::*;
    use crate::model::{Duration, EventDescriptor, State, Target};
    use crate::span::Span;

    /// Builds a machine by hand, in document order, as the lowering would.
    struct Builder {
        machine: Machine,
    }

    impl Builder {
        fn new(name: &str, root: StateKind) -> Builder {
            let mut builder = Builder {
                machine: Machine {
                    name: name.to_string(),
                    version: None,
                    description: None,
                    semantics: crate::model::Semantics::default(),
                    fact_source: crate::model::FactSource::default(),
                    context: IndexMap::new(),
                    sources: IndexMap::new(),
                    dedup: None,
                    history: None,
                    limits: None,
                    events: IndexMap::new(),
                    effects: IndexMap::new(),
                    guards: Vec::new(),
                    opaque: Vec::new(),
                    stand_ins: Default::default(),
                    migrations: Vec::new(),
                    states: Vec::new(),
                    transitions: Vec::new(),
                    span: Span::default(),
                },
            };
            builder.push_state(None, name, root);
            builder
        }

        fn push_state(&mut self, parent: Option<StateId>, key: &str, kind: StateKind) -> StateId {
            let id = StateId(self.machine.states.len() as u32);
            let path = match parent {
                Some(p) if p != StateId::ROOT => format!("{}.{key}", self.machine.state(p).path),
                Some(_) => key.to_string(),
                None => String::new(),
            };
            self.machine
                .states
                .push(State::new(key, &path, kind, parent));
            if let Some(p) = parent {
                self.machine.states[p.index()].children.push(id);
            }
            id
        }

        fn state(&mut self, parent: StateId, key: &str, kind: StateKind) -> StateId {
            self.push_state(Some(parent), key, kind)
        }

        fn initial(&mut self, state: StateId, target: StateId) {
            let text = self.machine.state(target).key.clone();
            self.machine.states[state.index()].initial.push(Target {
                text,
                state: target,
                span: Span::default(),
            });
        }

        fn transition(
            &mut self,
            source: StateId,
            trigger: Trigger,
            targets: &[StateId],
            guard: Option<&str>,
            reenter: bool,
        ) {
            let id = TransitionId(self.machine.transitions.len() as u32);
            let targets = targets
                .iter()
                .map(|&t| Target {
                    text: self.machine.state(t).path.clone(),
                    state: t,
                    span: Span::default(),
                })
                .collect();
            let kind = trigger.clone();
            self.machine.transitions.push(Transition {
                guard: guard.map(|g| crate::expr::parse(g, 0).expect("test guard parses")),
                reenter,
                ..Transition::new(source, trigger, targets)
            });
            let state = &mut self.machine.states[source.index()];
            match kind {
                Trigger::Event(_) => state.on.push(id),
                Trigger::Always => state.always.push(id),
                Trigger::After(_) => state.after.push(id),
            }
        }
    }

    fn on(descriptor: &str) -> Trigger {
        Trigger::Event(EventDescriptor::parse(descriptor))
    }

    /// A small lamp: nesting, deep history, a delayed and a guarded eventless
    /// transition, a targetless one, re-entry and a parallel state.
    fn lamp() -> Machine {
        let root = StateId::ROOT;
        let mut b = Builder::new("lamp", StateKind::Compound);
        let working = b.state(root, "working", StateKind::Compound);
        let off = b.state(working, "off", StateKind::Atomic);
        let on_ = b.state(working, "on", StateKind::Atomic);
        let memory = b.state(working, "memory", StateKind::History(HistoryKind::Deep));
        let broken = b.state(root, "broken", StateKind::Atomic);
        let panel = b.state(root, "panel", StateKind::Parallel);
        let screen = b.state(panel, "screen", StateKind::Compound);
        let dark = b.state(screen, "dark", StateKind::Atomic);
        let sound = b.state(panel, "sound", StateKind::Compound);
        let mute = b.state(sound, "mute", StateKind::Atomic);
        let scrapped = b.state(root, "scrapped", StateKind::Final);
        b.initial(root, working);
        b.initial(working, off);
        b.initial(memory, off);
        b.initial(screen, dark);
        b.initial(sound, mute);
        b.transition(working, on("FAIL"), &[broken], None, false);
        b.transition(off, on("PRESS"), &[on_], None, false);
        b.transition(on_, on("PRESS"), &[off], None, false);
        b.transition(on_, on("REFRESH"), &[on_], None, true);
        b.transition(
            on_,
            Trigger::After(Duration::from_millis(1_800_000)),
            &[off],
            None,
            false,
        );
        b.transition(broken, on("REPAIRED"), &[memory], None, false);
        b.transition(broken, on("NOTE.*"), &[], Some("context.notes < 3"), false);
        b.transition(broken, on("SCRAP"), &[scrapped], None, false);
        b.transition(
            panel,
            Trigger::Always,
            &[broken],
            Some(r#"in_state("broken")"#),
            false,
        );
        b.machine
    }

    #[test]
    fn dot_draws_clusters_and_labels() {
        insta::assert_snapshot!(dot(&lamp()));
    }

    #[test]
    fn mermaid_nests_blocks_and_places_arrows() {
        insta::assert_snapshot!(mermaid(&lamp()));
    }

    #[test]
    fn mermaid_ids_are_unique_identifiers() {
        let root = StateId::ROOT;
        let mut b = Builder::new("9 lives", StateKind::Parallel);
        let dotted = b.state(root, "a", StateKind::Compound);
        let inner = b.state(dotted, "b", StateKind::Atomic);
        let flat = b.state(root, "a_b", StateKind::Compound);
        let keyword = b.state(flat, "end", StateKind::Atomic);
        let dashed = b.state(flat, "x-y", StateKind::Final);
        b.initial(dotted, inner);
        b.initial(flat, keyword);
        b.transition(
            keyword,
            on("GO"),
            &[dashed],
            Some(r#"event.s == "a;b::c <b>""#),
            false,
        );
        b.transition(keyword, on("SPLIT"), &[inner], None, false);
        let machine = b.machine;
        let ids = mermaid_ids(&machine);
        assert_eq!(ids, ["s9_lives", "a", "a_b", "a_b_2", "a_b_end", "a_b_x_y"]);
        let text = mermaid(&machine);
        // A parallel root is wrapped in a state named after the machine.
        assert!(text.contains("[*] --> s9_lives\n"), "{text}");
        assert!(text.contains("state \"9 lives\" as s9_lives\n"), "{text}");
        assert!(
            text.contains("a_b_end --> a_b_x_y : GO [event.s == \"a\u{37e}b: :c < b>\"]"),
            "{text}"
        );
        // An arrow between regions is written outside the parallel state.
        let arrow = text.find("a_b_end --> a_b : SPLIT").expect(&text);
        assert!(
            arrow > text.rfind("    }").expect("the root's block"),
            "{text}"
        );
    }

    #[test]
    fn dot_clips_arrows_at_clusters_only_from_outside() {
        let machine = lamp();
        let text = dot(&machine);
        // working (1) -> broken (5) leaves the working cluster.
        assert!(
            text.contains("1 -> 5 [ label = \"FAIL\" ltail = cluster_1 ]"),
            "{text}"
        );
        // broken (5) -> memory (4) enters it, but memory is no cluster.
        assert!(text.contains("5 -> 4 [ label = \"REPAIRED\" ]"), "{text}");
        // The root's initial marker points into the working cluster.
        // (the markers follow the twelve states).
        assert!(text.contains("12 -> 1 [ lhead = cluster_1 ]"), "{text}");
        for id in machine.state_ids() {
            assert!(
                text.contains(&format!("\n    {} [ ", id.index())),
                "node {id:?}"
            );
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }
}
