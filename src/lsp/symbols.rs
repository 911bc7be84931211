//! Every place a document names something: the index that hover,
//! navigation, rename and completion read.
//!
//! The document tree gives the places (it has a span for every name
//! written, and exists as soon as the text parses); the model, when the
//! machine loads, says which state a target resolves to. States of the
//! tree in pre-order are the model's states in id order (both are in
//! document order, a parent before its children), which pairs them.

use crate::model::{Machine, StateId};
use crate::span::Span;
use crate::syntax::tree::{ActionDoc, ExprText, MachineDoc, StateDoc, TransitionDoc};

use super::Analysis;

/// What a name stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Symbol {
    State(StateId),
    Event(String),
    Effect(String),
    Context(String),
    /// A payload field of an event, read as `event.FIELD`.
    Payload {
        event: String,
        field: String,
    },
    Source(String),
}

/// One place a symbol is written.
#[derive(Clone, Debug)]
pub struct Occurrence {
    pub symbol: Symbol,
    pub span: Span,
    /// Whether this is where the symbol is declared (a state's key, an
    /// event under `events:`).
    pub declaration: bool,
}

/// The states of the tree in pre-order, the root first: index `i` is the
/// model's `StateId(i)`.
pub(super) fn states(doc: &MachineDoc) -> Vec<&StateDoc> {
    fn walk<'d>(state: &'d StateDoc, out: &mut Vec<&'d StateDoc>) {
        out.push(state);
        for child in &state.states {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    walk(&doc.root, &mut out);
    out
}

/// The actions of a state: entry, exit, then those of its transitions.
fn actions(state: &StateDoc) -> impl Iterator<Item = &ActionDoc> {
    state
        .entry
        .iter()
        .chain(&state.exit)
        .chain(state.transitions().flat_map(|t| &t.actions))
}

/// The expressions of a transition: its guard and its actions' values.
fn expressions(transition: &TransitionDoc) -> impl Iterator<Item = &ExprText> {
    transition
        .guard
        .iter()
        .chain(transition.actions.iter().flat_map(action_expressions))
}

fn action_expressions(action: &ActionDoc) -> Vec<&ExprText> {
    match action {
        ActionDoc::Assign { fields, .. }
        | ActionDoc::Raise { data: fields, .. }
        | ActionDoc::Send { data: fields, .. }
        | ActionDoc::Effect { args: fields, .. } => fields.iter().map(|(_, e)| e).collect(),
        ActionDoc::Log { expr, .. } => vec![expr],
        ActionDoc::Cancel { .. } | ActionDoc::Named { .. } => Vec::new(),
    }
}

/// The state whose region holds byte `offset`: a state's region runs from
/// its key to the key of the next state that is not its descendant.
pub(super) fn enclosing_state(doc: &MachineDoc, offset: u32) -> StateId {
    fn walk(state: &StateDoc, depth: usize, out: &mut Vec<(u32, usize)>) {
        out.push((state.key.span.start, depth));
        for child in &state.states {
            walk(child, depth + 1, out);
        }
    }
    let mut order = Vec::new();
    walk(&doc.root, 0, &mut order);
    innermost(&order, offset)
}

/// `enclosing_state` over the model, for a source that keeps no document
/// tree (an XState source): its states are in the same document order,
/// each at its key.
pub(super) fn enclosing_model_state(machine: &Machine, offset: u32) -> StateId {
    let order: Vec<(u32, usize)> = (0..machine.states.len())
        .map(|i| {
            let id = StateId(i as u32);
            (machine.state(id).span.start, machine.ancestors(id).count())
        })
        .collect();
    innermost(&order, offset)
}

/// The innermost state open at `offset`, of the states given in document
/// order by where they start and how deep they are (the root first).
fn innermost(order: &[(u32, usize)], offset: u32) -> StateId {
    // The states open at the offset, outermost first: a state closes
    // where a later one of its depth or less starts.
    let mut open: Vec<(usize, usize)> = Vec::new();
    for (i, &(start, depth)) in order.iter().enumerate().skip(1) {
        if start > offset {
            break;
        }
        while open.last().is_some_and(|&(_, d)| d >= depth) {
            open.pop();
        }
        open.push((i, depth));
    }
    open.last()
        .map_or(StateId::ROOT, |&(i, _)| StateId(i as u32))
}

/// Splits the words of an event descriptor (`A B.*`) written at `name`.
fn descriptor_words(name: &crate::model::Name) -> impl Iterator<Item = (String, Span)> + '_ {
    let base = name.span.start as usize + written_offset(name);
    name.text.split_whitespace().map(move |word| {
        let at = word.as_ptr() as usize - name.text.as_ptr() as usize;
        (
            word.to_string(),
            Span::new(base + at, base + at + word.len()),
        )
    })
}

/// Where a name's text starts inside its span: 1 when the span holds it in
/// quotes, else 0.
fn written_offset(name: &crate::model::Name) -> usize {
    let len = (name.span.end - name.span.start) as usize;
    usize::from(len == name.text.len() + 2)
}

/// The names read as `prefix.NAME` in an expression's text (`context.x`,
/// `event.y`), each with its span in the file.
pub(super) fn member_reads<'e>(
    expr: &'e ExprText,
    prefix: &'e str,
) -> impl Iterator<Item = (String, Span)> + 'e {
    let text = expr.text.as_str();
    let dotted = format!("{prefix}.");
    text.match_indices(&dotted)
        .filter(move |(at, _)| {
            !text[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        })
        .filter_map(move |(at, _)| {
            let start = at + prefix.len() + 1;
            let len = text[start..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(text.len() - start);
            (len > 0).then(|| {
                let from = expr.offset as usize + start;
                (
                    text[start..start + len].to_string(),
                    Span::new(from, from + len),
                )
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
}

/// The segments of a target written at `name` that name states, each with
/// the state it names: `a.b` names `a` and `b`, `.b` names `b`, `#id` the
/// state with that id. A segment names the ancestor of the resolved
/// state as many levels up as segments follow it.
fn target_segments(
    machine: &Machine,
    name: &crate::model::Name,
    resolved: StateId,
) -> Vec<(StateId, Span)> {
    let base = name.span.start as usize + written_offset(name);
    let text = name.text.as_str();
    if let Some(id) = text.strip_prefix('#') {
        return vec![(resolved, Span::new(base + 1, base + 1 + id.len()))];
    }
    let (skip, path) = match text.strip_prefix('.') {
        Some(rest) => (1, rest),
        None => (0, text),
    };
    let mut out = Vec::new();
    let mut state = Some(resolved);
    let mut end = base + skip + path.len();
    for segment in path.rsplit('.') {
        let Some(s) = state else { break };
        out.push((s, Span::new(end - segment.len(), end)));
        end = end.saturating_sub(segment.len() + 1);
        state = machine.state(s).parent;
    }
    out
}

/// The occurrences of a document sorted by where they start, with the
/// longest one's length, so that the one under an offset is found without
/// reading them all: hover and navigation on a large file ask this on
/// every request.
#[derive(Debug, Default)]
pub struct Occurrences {
    sorted: Vec<Occurrence>,
    longest: u32,
}

impl Occurrences {
    fn new(mut all: Vec<Occurrence>) -> Occurrences {
        all.sort_by_key(|o| (o.span.start, o.span.end));
        let longest = all.iter().map(|o| o.span.end - o.span.start).max();
        Occurrences {
            sorted: all,
            longest: longest.unwrap_or(0),
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Occurrence> {
        self.sorted.iter()
    }

    /// The occurrence under byte `offset`, the innermost (shortest) where
    /// several hold it, the first written where several are as short.
    pub fn at(&self, offset: u32) -> Option<&Occurrence> {
        // Those that hold `offset` start at most `longest` bytes before it.
        let end = self.sorted.partition_point(|o| o.span.start <= offset);
        let from = offset.saturating_sub(self.longest);
        let begin = self.sorted[..end].partition_point(|o| o.span.start < from);
        self.sorted[begin..end]
            .iter()
            .filter(|o| offset <= o.span.end)
            .min_by_key(|o| o.span.end - o.span.start)
    }
}

/// The occurrences of the analysis's tree and model, made once for them:
/// the analysis before the lint and the one after share them.
pub fn indexed(analysis: &Analysis) -> &Occurrences {
    analysis
        .occurrences
        .0
        .get_or_init(|| Occurrences::new(occurrences(analysis)))
}

/// Where `Analysis` keeps its `Occurrences`: made when first asked, and
/// shared by the analyses that share a tree and model.
#[derive(Clone, Debug, Default)]
pub struct OccurrenceIndex(std::sync::Arc<std::sync::OnceLock<Occurrences>>);

/// Every occurrence in the document, in no particular order.
fn occurrences(analysis: &Analysis) -> Vec<Occurrence> {
    let Some(doc) = &analysis.doc else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |symbol: Symbol, span: Span, declaration: bool| {
        out.push(Occurrence {
            symbol,
            span,
            declaration,
        })
    };
    for event in &doc.events {
        push(
            Symbol::Event(event.name.text.clone()),
            event.name.span,
            true,
        );
        if let Some(source) = &event.source {
            push(Symbol::Source(source.text.clone()), source.span, false);
        }
        for (field, _) in event.payload.iter().flatten() {
            let symbol = Symbol::Payload {
                event: event.name.text.clone(),
                field: field.text.clone(),
            };
            push(symbol, field.span, true);
        }
    }
    for effect in &doc.effects {
        push(
            Symbol::Effect(effect.name.text.clone()),
            effect.name.span,
            true,
        );
    }
    for field in &doc.context {
        push(
            Symbol::Context(field.name.text.clone()),
            field.name.span,
            true,
        );
    }
    for source in &doc.sources {
        push(
            Symbol::Source(source.name.text.clone()),
            source.name.span,
            true,
        );
    }
    let declared_effect = |name: &str| doc.effects.iter().any(|e| e.name.text == name);
    let states = states(doc);
    for (i, state) in states.iter().enumerate() {
        if i > 0 {
            push(Symbol::State(StateId(i as u32)), state.key.span, true);
        }
        for invoke in &state.invoke {
            if let Some(src) = invoke.src.as_ref().filter(|s| declared_effect(&s.text)) {
                push(Symbol::Effect(src.text.clone()), src.span, false);
            }
        }
        for action in actions(state) {
            match action {
                ActionDoc::Raise { event, .. } | ActionDoc::Send { event, .. } => {
                    push(Symbol::Event(event.text.clone()), event.span, false)
                }
                ActionDoc::Effect { name, .. } => {
                    push(Symbol::Effect(name.text.clone()), name.span, false)
                }
                ActionDoc::Named { name } if declared_effect(&name.text) => {
                    push(Symbol::Effect(name.text.clone()), name.span, false)
                }
                ActionDoc::Assign { fields, .. } => {
                    for (field, _) in fields {
                        push(Symbol::Context(field.text.clone()), field.span, false);
                    }
                }
                _ => {}
            }
            for expr in action_expressions(action) {
                for (field, span) in member_reads(expr, "context") {
                    push(Symbol::Context(field), span, false);
                }
            }
        }
        for transition in state.transitions() {
            let mut events = Vec::new();
            if let Some(event) = &transition.event {
                for (word, span) in descriptor_words(event) {
                    if !word.contains('*') {
                        push(Symbol::Event(word.clone()), span, false);
                        events.push(word);
                    }
                }
            }
            if let Some(guard) = &transition.guard {
                for (field, span) in member_reads(guard, "context") {
                    push(Symbol::Context(field), span, false);
                }
            }
            // `event.FIELD` belongs to the payload of the one event the
            // transition takes, when it takes exactly one.
            if let [event] = events.as_slice() {
                for expr in expressions(transition) {
                    for (field, span) in member_reads(expr, "event") {
                        let symbol = Symbol::Payload {
                            event: event.clone(),
                            field,
                        };
                        push(symbol, span, false);
                    }
                }
            }
        }
    }
    // Targets resolve through the model.
    if let Some(machine) = &analysis.machine {
        for (i, state) in states.iter().enumerate() {
            let id = StateId(i as u32);
            if let (Some(name), Some(_)) = (&state.id, machine.states.get(i)) {
                push(Symbol::State(id), name.span, true);
            }
            let Some(model) = machine.states.get(i) else {
                continue;
            };
            let mut targets: Vec<&crate::model::Target> = model.initial.iter().collect();
            for &t in model.on.iter().chain(&model.always).chain(&model.after) {
                targets.extend(&machine.transition(t).targets);
            }
            for invoke in &model.invoke {
                for &t in invoke.on_done.iter().chain(&invoke.on_error) {
                    targets.extend(&machine.transition(t).targets);
                }
            }
            for target in targets {
                let name = crate::model::Name {
                    text: target.text.clone(),
                    span: target.span,
                };
                for (state, span) in target_segments(machine, &name, target.state) {
                    push(Symbol::State(state), span, false);
                }
            }
        }
        for effect in machine.effects.values() {
            if let Some(verify) = &effect.verify {
                let name = crate::model::Name {
                    text: verify.text.clone(),
                    span: verify.span,
                };
                for (state, span) in target_segments(machine, &name, verify.state) {
                    push(Symbol::State(state), span, false);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::lsp::Kind;
    use crate::syntax::Syntax;

    /// The occurrence under `offset` as read from all of them, in the order
    /// they were made: what the index must find without reading them all.
    fn by_reading_all(all: &[Occurrence], offset: u32) -> Option<&Occurrence> {
        all.iter()
            .filter(|o| o.span.start <= offset && offset <= o.span.end)
            .min_by_key(|o| o.span.end - o.span.start)
    }

    #[test]
    fn the_index_finds_at_every_offset_what_reading_all_occurrences_finds() {
        let config = crate::config::Config::defaults(PathBuf::from("."));
        let never = AtomicBool::new(false);
        for (name, syntax) in [
            ("machines/checkout.yaml", Syntax::Yaml),
            ("machines/suscripcion.yaml", Syntax::Yaml),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
            let text = std::fs::read_to_string(&path).unwrap();
            let analysis =
                crate::lsp::analyze(&path, text.clone(), Kind::Machine(syntax), &config, &never)
                    .unwrap();
            let all = occurrences(&analysis);
            let index = indexed(&analysis);
            assert!(all.len() > 20, "{name}: {} occurrences", all.len());
            for offset in 0..=text.len() as u32 + 1 {
                let expected = by_reading_all(&all, offset).map(|o| (o.span.range(), &o.symbol));
                let found = index.at(offset).map(|o| (o.span.range(), &o.symbol));
                assert_eq!(found, expected, "{name} at byte {offset}");
            }
        }
    }
}
