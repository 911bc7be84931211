//! Diagrams of loaded machines: snapshots of the spec examples and of a
//! parallel machine, and a structural check of the Mermaid text on every
//! shipped and every random machine; the findings and a witness drawn on
//! machines with hazards, and the DOT parsed by Graphviz where it is installed.

use crate::common;

use std::collections::HashSet;
use std::path::Path;

use idemchart::Machine;
use idemchart::diagram::{Overlay, dot, dot_with, mermaid, mermaid_with};
use idemchart::syntax::{self, Syntax};
use proptest::prelude::*;

fn load(path: &str) -> Machine {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    let syntax = Syntax::of_path(&full).expect("a machine file extension");
    syntax::parse(&text, syntax).unwrap_or_else(|e| panic!("{path}: {e:#?}"))
}

/// What Mermaid needs of the text: ids it can lex, every state declared
/// before an arrow mentions it (Mermaid puts a state in the block where it is
/// first mentioned), balanced blocks, region separators only inside a block,
/// no line between a composite state and a state inside it (Mermaid draws
/// none), at most one loop per state (Mermaid draws one), and labels free of
/// what ends a label early (`;`, `::`).
#[track_caller]
fn assert_plausible_mermaid(text: &str) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("stateDiagram-v2"));
    let is_id = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    // Each declared id with the blocks it lies in, innermost last.
    let mut declared: Vec<(String, Vec<String>)> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    let mut loops = HashSet::new();
    let blocks_of = |declared: &[(String, Vec<String>)], id: &str| {
        declared
            .iter()
            .find(|(d, _)| d == id)
            .map(|(_, blocks)| blocks.clone())
    };
    for line in lines {
        let line = line.trim();
        if line.starts_with("%% ") {
            continue;
        } else if let Some(rest) = line.strip_prefix("classDef ") {
            assert!(
                rest.split_once(' ').is_some(),
                "classDef name style: {line}"
            );
            continue;
        } else if let Some(rest) = line.strip_prefix("class ") {
            let (ids, _) = rest.split_once(' ').expect("class ids name");
            for id in ids.split(',') {
                assert!(
                    blocks_of(&declared, id).is_some(),
                    "class of undeclared {id}"
                );
            }
            continue;
        }
        // A state diagram has no `linkStyle`: Mermaid refuses the whole
        // diagram with one (mermaid-js/mermaid#1352).
        assert!(!line.starts_with("linkStyle"), "{line}");
        if let Some(rest) = line.strip_prefix("state \"") {
            let (label, id) = rest.split_once("\" as ").expect("state \"label\" as id");
            assert!(!label.contains('"'), "{line}");
            assert!(is_id(id), "{line}");
            declared.push((id.to_string(), open.clone()));
        } else if let Some(rest) = line.strip_prefix("state ") {
            let id = rest.strip_suffix(" {").expect("state id {");
            assert!(is_id(id), "{line}");
            if blocks_of(&declared, id).is_none() {
                declared.push((id.to_string(), open.clone()));
            }
            open.push(id.to_string());
        } else if line == "}" {
            assert!(open.pop().is_some(), "a }} closes no block");
        } else if line == "--" {
            assert!(!open.is_empty(), "a region separator outside a block");
        } else if let Some(rest) = line.strip_prefix("note right of ") {
            let (id, note) = rest.split_once(" : ").expect("note right of id : text");
            assert!(
                blocks_of(&declared, id).is_some(),
                "note on undeclared {id}"
            );
            assert!(!note.contains(':') && !note.contains(';'), "{line}");
        } else if let Some((from, rest)) = line.split_once(" --> ") {
            let (to, label) = match rest.split_once(" : ") {
                Some((to, label)) => (to, Some(label)),
                None => (rest, None),
            };
            for end in [from, to] {
                assert!(
                    end == "[*]" || blocks_of(&declared, end).is_some(),
                    "undeclared {end}: {line}"
                );
            }
            if from != "[*]" && to != "[*]" {
                let inside =
                    |a: &str, b: &str| blocks_of(&declared, a).unwrap().contains(&b.to_string());
                assert!(
                    !inside(from, to) && !inside(to, from),
                    "a line across a border: {line}"
                );
                if from == to {
                    assert!(loops.insert(from.to_string()), "a second loop on {from}");
                }
            }
            if let Some(label) = label {
                assert!(!label.contains(';') && !label.contains("::"), "{line}");
            }
        } else {
            assert!(is_id(line), "unexpected line {line:?}");
            declared.push((line.to_string(), open.clone()));
        }
    }
    assert!(open.is_empty(), "unclosed block");
}

/// Balanced braces and one node line per state, in state order.
#[track_caller]
fn assert_plausible_dot(machine: &Machine, text: &str) {
    assert!(text.starts_with("digraph "), "{text}");
    assert_eq!(
        text.matches('{').count(),
        text.matches('}').count(),
        "{text}"
    );
    let mut at = 0;
    for id in machine.state_ids() {
        let node = format!("\n    {} [ ", id.index());
        let found = text[at..]
            .find(&node)
            .unwrap_or_else(|| panic!("no node {id:?}:\n{text}"));
        at += found + node.len();
    }
}

#[test]
fn the_order_diagrams() {
    let machine = load("tests/data/spec/pedido.yaml");
    let (dot_text, mermaid_text) = (dot(&machine), mermaid(&machine));
    assert_plausible_dot(&machine, &dot_text);
    assert_plausible_mermaid(&mermaid_text);
    insta::assert_snapshot!("pedido_dot", dot_text);
    insta::assert_snapshot!("pedido_mermaid", mermaid_text);
}

#[test]
fn the_lamp_diagrams() {
    let machine = load("tests/data/spec/lampara.yaml");
    let (dot_text, mermaid_text) = (dot(&machine), mermaid(&machine));
    assert_plausible_dot(&machine, &dot_text);
    assert_plausible_mermaid(&mermaid_text);
    insta::assert_snapshot!("lampara_dot", dot_text);
    insta::assert_snapshot!("lampara_mermaid", mermaid_text);
}

#[test]
fn both_syntaxes_draw_the_same_diagram() {
    for name in ["pedido", "lampara"] {
        let yaml = load(&format!("tests/data/spec/{name}.yaml"));
        let dsl = load(&format!("tests/data/spec/{name}.chart"));
        assert_eq!(dot(&yaml), dot(&dsl), "{name}");
        assert_eq!(mermaid(&yaml), mermaid(&dsl), "{name}");
    }
}

/// A parallel root, a transition from a state to its own child, a
/// transition from a child to its ancestor, two loops on one state, a history
/// state with a default, a target into another region.
const PARALLEL: &str = r##"
machine: reproductor
type: parallel
events:
  PLAY: { id: i }
  PAUSE: { id: i }
  STOP: { id: i }
  MUTE: { id: i }
  VOLUME: { id: i }
  RESET: { id: i }
states:
  playback:
    id: playback
    initial: stopped
    on:
      RESET: .stopped
    states:
      stopped:
        on:
          PLAY: playing
      playing:
        on:
          PAUSE: paused
          STOP: "#playback"
          VOLUME: { guard: "event.level >= 0", actions: [ { log: "event.level" } ] }
          MUTE: "#muted"
      paused:
        on:
          PLAY: playing
          STOP: { target: stopped, reenter: true }
      last: { type: history, target: stopped }
  audio:
    initial: loud
    states:
      loud:
        on:
          MUTE: muted
      muted:
        id: muted
        on:
          MUTE: loud
        after:
          1h: loud
"##;

#[test]
fn a_parallel_machine() {
    let machine = syntax::parse(PARALLEL, Syntax::Yaml).expect("the parallel machine loads");
    let (dot_text, mermaid_text) = (dot(&machine), mermaid(&machine));
    assert_plausible_dot(&machine, &dot_text);
    assert_plausible_mermaid(&mermaid_text);
    insta::assert_snapshot!("parallel_dot", dot_text);
    insta::assert_snapshot!("parallel_mermaid", mermaid_text);
}

#[test]
fn every_shipped_machine_draws() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("machines");
    let mut drawn = 0;
    for entry in std::fs::read_dir(&dir).expect("machines/") {
        let path = entry.expect("directory entry").path();
        if Syntax::of_path(&path).is_none() {
            continue;
        }
        let name = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
        let machine = load(name.to_str().expect("a UTF-8 path"));
        assert_plausible_dot(&machine, &dot(&machine));
        assert_plausible_mermaid(&mermaid(&machine));
        drawn += 1;
    }
    assert!(drawn >= 5, "only {drawn} machines");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn random_machines_draw(seed in any::<u64>()) {
        let machine = common::machine(seed);
        assert_plausible_dot(&machine, &dot(&machine));
        assert_plausible_mermaid(&mermaid(&machine));
    }
}

/// A retry after an invocation's failure: the invoking state's label names
/// the invocation, and the witness runs along the failure and the timer
/// back into the state.
#[test]
fn an_invocation_retry_drawn() {
    let (_, dot_text, mermaid_text) = hazards("tests/lints/i008-invoke-retry.yaml", 2);
    assert!(
        mermaid_text.contains("transfiriendo<br>invoke / transferencia: transferir"),
        "{mermaid_text}"
    );
    assert!(
        dot_text.contains("invoke / transferencia: transferir"),
        "{dot_text}"
    );
    insta::assert_snapshot!("invocation_retry_dot", dot_text);
    insta::assert_snapshot!("invocation_retry_mermaid", mermaid_text);
}

/// The findings of a machine with hazards and the witness of its finding
/// `n`, drawn in both formats.
fn hazards(path: &str, n: usize) -> (Machine, String, String) {
    let machine = load(path);
    let findings = idemchart::lint::lint(&machine);
    let finding = &findings[n - 1];
    let taken = idemchart::lint::witness_transitions(&machine, finding).expect("a witness");
    let overlay = Overlay::findings(&machine, &findings).with_witness(&finding.witness, &taken);
    let (dot_text, mermaid_text) = (
        dot_with(&machine, &overlay),
        mermaid_with(&machine, &overlay),
    );
    assert_plausible_dot(&machine, &dot_text);
    assert_plausible_mermaid(&mermaid_text);
    (machine, dot_text, mermaid_text)
}

/// A repeated ESCALAR from the root re-enters `revision`: the transition on
/// the root and the state whose entry notifies again are marked, and both
/// deliveries of the witness are on the root's transition.
#[test]
fn a_reentry_hazard_drawn() {
    let (_, dot_text, mermaid_text) = hazards("tests/lints/i001-root-reentry.yaml", 2);
    assert!(
        mermaid_text.contains("ESCALAR ⚠ I001 → .revision<br>1. ESCALAR, 2. ESCALAR*"),
        "{mermaid_text}"
    );
    assert!(
        mermaid_text.contains("class revision warning"),
        "{mermaid_text}"
    );
    insta::assert_snapshot!("root_reentry_hazard_dot", dot_text);
    insta::assert_snapshot!("root_reentry_hazard_mermaid", mermaid_text);
}

/// The checkout whose declined payment can be placed again: four I003 and
/// an I008 on its transitions, and the witness of the first I003 numbered
/// along the cycle the replay takes (the cart's ADD_ITEM is a loop).
#[test]
fn a_cycle_hazard_drawn() {
    let (_, dot_text, mermaid_text) = hazards("tests/lints/search-checkout-cart.yaml", 2);
    assert!(
        mermaid_text.contains("paying --> declined : PAYMENT_DECLINED ⚠ I003<br>3. PAYMENT_DECLINED, 5. PAYMENT_DECLINED*"),
        "{mermaid_text}"
    );
    insta::assert_snapshot!("checkout_cart_hazard_dot", dot_text);
    insta::assert_snapshot!("checkout_cart_hazard_mermaid", mermaid_text);
}

/// Graphviz parses what `dot_with` writes, marks and witness included.
/// Skipped, with a note, where `dot` is not installed (`scripts/test`
/// installs it).
#[test]
fn graphviz_renders_the_marked_dot() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    if Command::new("dot").arg("-V").output().is_err() {
        eprintln!("note: Graphviz `dot` is not installed; the DOT was not rendered");
        return;
    }
    for (path, n) in [
        ("tests/lints/i001-root-reentry.yaml", 2),
        ("tests/lints/search-checkout-cart.yaml", 2),
    ] {
        let (_, dot_text, _) = hazards(path, n);
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dot starts");
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(dot_text.as_bytes())
            .expect("dot reads the graph");
        let output = child.wait_with_output().expect("dot runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{path}: dot failed: {stderr}\n{dot_text}"
        );
        let svg = String::from_utf8_lossy(&output.stdout);
        assert!(svg.contains("<svg"), "{path}: no SVG:\n{svg}");
    }
}

/// A finding on no state or transition (a retention under `dedup:`) is
/// listed under the DOT title and flagged in the Mermaid comments, and
/// colours nothing.
#[test]
fn a_finding_on_nothing_drawn_goes_to_the_legend() {
    let machine = load("tests/lints/i007-two-sources.yaml");
    let findings = idemchart::lint::lint(&machine);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let overlay = Overlay::findings(&machine, &findings);
    let dot_text = dot_with(&machine, &overlay);
    assert!(
        dot_text.contains("label=\"two-sources\\n1. I007 retention-below-retry: "),
        "{dot_text}"
    );
    assert!(!dot_text.contains("color"), "{dot_text}");
    let mermaid_text = mermaid_with(&machine, &overlay);
    assert!(
        mermaid_text.contains("%% 1. I007 retention-below-retry: ")
            && mermaid_text.contains("(on no state or transition)"),
        "{mermaid_text}"
    );
    assert!(!mermaid_text.contains("classDef"), "{mermaid_text}");
}

/// The turn of an S006 loop is drawn on the transitions of the loop that
/// the step before ran into, each step once per transition.
#[test]
fn a_loop_witness_drawn() {
    let (_, _, mermaid_text) = hazards("tests/lints/s006-raise-loop.yaml", 1);
    assert!(
        mermaid_text.contains("b --> b : PING (reenter) ⚠ S006<br>1. GO, 2. loop\n"),
        "{mermaid_text}"
    );
}
