//! The machine drawn as SVG, laid out in Rust by `layout-rs`, for the
//! inspector of `idemchart serve` (a server need not have Graphviz).
//!
//! `layout-rs` has no clusters, so the state tree is drawn flat: every
//! state but the root is a node labelled with its path, a compound state's
//! node points at its default entry with a dotted arrow, and a parallel
//! state's at each of its regions. Labels, colours and witness steps are
//! those of the DOT writer. Each state's shapes carry
//! `data-state="PATH"` (its path as a snapshot's configuration spells it)
//! and the class `state`, so that a page can mark the active states.

use std::collections::HashMap;

use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use super::{
    Overlay, Place, WITNESS_COLOUR, action_lines, history_marker, is_container, severity_colour,
    transition_label,
};
use crate::model::{Machine, StateId, StateKind, TransitionId};

const FONT_SIZE: usize = 14;

/// The machine as an SVG element (no XML prolog, no style element), with the overlay's findings in their
/// severity's colour and its witness steps on the arrows they take.
/// `None` when the layout fails (`layout-rs` asserts on shapes it cannot
/// place): a page shows its tables without the picture then.
pub fn svg_with(machine: &Machine, overlay: &Overlay) -> Option<String> {
    // The layout is foreign code that asserts; an assertion of it is a
    // missing picture, never a failed request.
    std::panic::catch_unwind(|| render(machine, overlay)).ok()
}

fn render(machine: &Machine, overlay: &Overlay) -> String {
    let direction = Orientation::LeftToRight;
    let mut graph = VisualGraph::new(direction);
    let mut nodes = HashMap::new();
    for id in machine.state_ids().filter(|&id| id != StateId::ROOT) {
        let element = state_element(machine, overlay, id, direction);
        nodes.insert(id, graph.add_node(element));
    }
    let root = machine.state(StateId::ROOT);
    if root.kind == StateKind::Parallel {
        // The regions of a parallel root are all active: a start marker
        // points at each.
        for &child in &root.children {
            let start = graph.add_node(start_element(direction));
            graph.add_edge(plain_arrow(LineStyleKind::Normal, ""), start, nodes[&child]);
        }
    } else if !root.initial.is_empty() {
        let start = graph.add_node(start_element(direction));
        for target in &root.initial {
            graph.add_edge(
                plain_arrow(LineStyleKind::Normal, ""),
                start,
                nodes[&target.state],
            );
        }
    }
    for id in machine.state_ids().filter(|&id| id != StateId::ROOT) {
        let state = machine.state(id);
        let targets: Vec<StateId> = match state.kind {
            StateKind::Parallel => state.children.clone(),
            StateKind::Compound | StateKind::History(_) => {
                state.initial.iter().map(|t| t.state).collect()
            }
            _ => Vec::new(),
        };
        for target in targets {
            if let Some(&to) = nodes.get(&target) {
                graph.add_edge(plain_arrow(LineStyleKind::Dotted, ""), nodes[&id], to);
            }
        }
    }
    for (index, transition) in machine.transitions.iter().enumerate() {
        let id = TransitionId(index as u32);
        // A transition of the root (machine-wide) is drawn from nowhere
        // here: it has no node of its own; its findings are listed apart.
        let Some(&from) = nodes.get(&transition.source) else {
            continue;
        };
        let mut label = transition_label(transition);
        let steps = overlay.steps_on(id);
        if let Some(steps) = &steps {
            label.push('\n');
            label.push_str(steps);
        }
        let colour = match overlay.severity_on(Place::Transition(id)) {
            Some(severity) => Some(severity_colour(severity)),
            None => steps.as_ref().map(|_| WITNESS_COLOUR),
        };
        let style = if transition.targets.is_empty() {
            LineStyleKind::Dashed
        } else {
            LineStyleKind::Normal
        };
        let arrow = Arrow::new(
            LineEndKind::None,
            LineEndKind::Arrow,
            style,
            &label,
            &look(colour, colour.map_or(1, |_| 2), None, 0),
            &None,
            &None,
        );
        if transition.targets.is_empty() {
            graph.add_edge(arrow.clone(), from, from);
        }
        for target in &transition.targets {
            if let Some(&to) = nodes.get(&target.state) {
                graph.add_edge(arrow.clone(), from, to);
            }
        }
    }
    let mut writer = SVGWriter::new();
    graph.do_it(false, false, false, &mut writer);
    embeddable(&writer.finalize())
}

/// The `<svg>` element alone, for a page to hold: no XML prolog, and no
/// `<style>` element (a page's content security policy may refuse inline
/// styles; its stylesheet sets the labels' font, `FONT_SIZE` pixels).
fn embeddable(document: &str) -> String {
    let svg = &document[document.find("<svg").unwrap_or(0)..];
    match (svg.find("<style>"), svg.find("</style>")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &svg[..start], &svg[end + "</style>".len()..])
        }
        _ => svg.to_string(),
    }
}

fn look(colour: Option<&str>, width: usize, fill: Option<&str>, rounded: usize) -> StyleAttr {
    StyleAttr::new(
        Color::fast(colour.unwrap_or("black")),
        width,
        fill.map(Color::fast),
        rounded,
        FONT_SIZE,
    )
}

fn plain_arrow(style: LineStyleKind, label: &str) -> Arrow {
    Arrow::new(
        LineEndKind::None,
        LineEndKind::Arrow,
        style,
        label,
        &look(None, 1, None, 0),
        &None,
        &None,
    )
}

/// The filled dot an initial arrow starts from.
fn start_element(direction: Orientation) -> Element {
    let shape = ShapeKind::new_circle("");
    let size = layout::core::geometry::Point::splat(12.);
    Element::create(shape, look(None, 1, Some("black"), 0), direction, size)
}

/// A state's node: a box (rounded for a compound, dashed-looking grey for
/// a parallel), a double circle for a final state, a circle for history.
fn state_element(
    machine: &Machine,
    overlay: &Overlay,
    id: StateId,
    direction: Orientation,
) -> Element {
    let state = machine.state(id);
    let mut lines = vec![state.path.clone()];
    lines.extend(action_lines(machine, id));
    let label = lines.join("\n");
    let colour = overlay.severity_on(Place::State(id)).map(severity_colour);
    let width = colour.map_or(1, |_| 3);
    let (shape, fill, rounded) = match state.kind {
        StateKind::Final => (ShapeKind::new_double_circle(&label), "white", 0),
        StateKind::History(kind) => (
            ShapeKind::new_circle(&format!("{}\n{}", state.path, history_marker(kind))),
            "white",
            0,
        ),
        StateKind::Parallel => (ShapeKind::new_box(&label), "#f3f4f6", 12),
        StateKind::Compound => (ShapeKind::new_box(&label), "#f9fafb", 12),
        StateKind::Atomic => (ShapeKind::new_box(&label), "white", 6),
    };
    let round = matches!(state.kind, StateKind::Final | StateKind::History(_));
    let size = get_shape_size(direction.flip(), &shape, FONT_SIZE, round);
    let kind = if is_container(state.kind) {
        "state container"
    } else {
        "state"
    };
    let properties = format!("data-state=\"{}\" class=\"{kind}\"", attribute(&state.path));
    Element::create_with_properties(
        shape,
        look(colour, width, Some(fill), rounded),
        direction,
        size,
        properties,
    )
}

/// Text for a double-quoted XML attribute.
pub(crate) fn attribute(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{Syntax, parse};

    fn machine(text: &str) -> Machine {
        parse(text, Syntax::Yaml).unwrap()
    }

    /// Every state but the root is drawn once, named by its path, and a
    /// compound state's children are reached.
    #[test]
    fn every_state_carries_its_path() {
        let m = machine(
            "machine: m\ninitial: a\nstates:\n  a: { on: { GO: b } }\n  b:\n    initial: x\n    states:\n      x: { on: { NEXT: y } }\n      y: { type: final }\n",
        );
        let svg = svg_with(&m, &Overlay::default()).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(!svg.contains("<style"), "{svg}");
        for path in ["a", "b", "b.x", "b.y"] {
            assert!(
                svg.contains(&format!("data-state=\"{path}\"")),
                "{path} in {svg}"
            );
        }
        assert!(svg.contains("class=\"state container\""));
        assert!(svg.contains(">GO<") && svg.contains(">NEXT<"), "{svg}");
    }

    /// A finding colours its state as `graph --lint` does.
    #[test]
    fn findings_colour_their_state() {
        let m = machine(
            "machine: lamp\ninitial: off\nstates:\n  off: { on: { TOGGLE: on } }\n  on: { on: { TOGGLE: off } }\n",
        );
        let findings = crate::lint::lint(&m);
        let svg = svg_with(&m, &Overlay::findings(&m, &findings)).unwrap();
        let plain = svg_with(&m, &Overlay::default()).unwrap();
        let warning = Color::fast(super::super::WARNING_COLOUR).to_web_color();
        assert!(svg.contains(&warning), "{svg}");
        assert!(!plain.contains(&warning));
    }

    #[test]
    fn attributes_are_escaped() {
        assert_eq!(attribute(r#"a"<&>'"#), "a&quot;&lt;&amp;&gt;&apos;");
    }
}
