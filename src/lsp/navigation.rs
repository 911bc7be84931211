//! Navigation: go to definition, find references, the outline, rename.

use crate::diagnostic::Edit;
use crate::model::StateId;
use crate::span::Span;

use super::symbols::{self, Occurrence, Symbol};
use super::{Analysis, Kind};

/// Where the symbol under `offset` is declared: a target's state, an
/// event's, effect's or context field's entry.
pub fn definition(analysis: &Analysis, offset: u32) -> Option<Span> {
    let occurrences = symbols::indexed(analysis);
    let symbol = &occurrences.at(offset)?.symbol;
    occurrences
        .iter()
        .filter(|o| o.declaration && &o.symbol == symbol)
        .map(|o| o.span)
        .min_by_key(|s| s.start)
}

/// Every place the symbol under `offset` is written, in document order;
/// its declarations too when `declaration`.
pub fn references(analysis: &Analysis, offset: u32, declaration: bool) -> Vec<Span> {
    let occurrences = symbols::indexed(analysis);
    let Some(symbol) = occurrences.at(offset).map(|o| o.symbol.clone()) else {
        return Vec::new();
    };
    let mut spans: Vec<Span> = occurrences
        .iter()
        .filter(|o| o.symbol == symbol && (declaration || !o.declaration))
        .map(|o| o.span)
        .collect();
    spans.sort_by_key(|s| (s.start, s.end));
    spans.dedup_by_key(|s| (s.start, s.end));
    spans
}

/// What an outline entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    State,
    Event,
    Effect,
}

/// One entry of the outline.
#[derive(Clone, Debug)]
pub struct DocumentSymbol {
    pub name: String,
    pub detail: Option<String>,
    pub kind: SymbolKind,
    pub span: Span,
    pub children: Vec<DocumentSymbol>,
}

/// The outline: the declared events and effects, then the state tree.
pub fn symbols(analysis: &Analysis) -> Vec<DocumentSymbol> {
    let Some(doc) = &analysis.doc else {
        return Vec::new();
    };
    let leaf = |name: &crate::model::Name, kind, detail: Option<String>| DocumentSymbol {
        name: name.text.clone(),
        detail,
        kind,
        span: name.span,
        children: Vec::new(),
    };
    let mut out: Vec<DocumentSymbol> = Vec::new();
    for event in &doc.events {
        let detail = event.id_field.as_ref().map(|f| format!("id {}", f.text));
        out.push(leaf(&event.name, SymbolKind::Event, detail));
    }
    for effect in &doc.effects {
        let detail = effect.idempotency.as_ref().map(|i| i.text.clone());
        out.push(leaf(&effect.name, SymbolKind::Effect, detail));
    }
    fn state(doc: &crate::syntax::tree::StateDoc) -> DocumentSymbol {
        DocumentSymbol {
            name: doc.key.text.clone(),
            detail: doc.kind.as_ref().map(|k| k.text.clone()),
            kind: SymbolKind::State,
            span: doc.key.span,
            children: doc.states.iter().map(state).collect(),
        }
    }
    out.extend(doc.root.states.iter().map(state));
    out
}

/// Whether `name` can be written as a state key or an event name in either
/// syntax without quotes; events may be dotted.
fn plain_name(name: &str, dots: bool) -> bool {
    !name.is_empty()
        && !name.starts_with(['.', '-'])
        && !name.ends_with('.')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || (dots && c == '.'))
}

/// What a rename at an offset would rename: the symbol, its name, where it
/// is written under the cursor, and every place the rename edits.
struct Renamable<'a> {
    machine: &'a crate::model::Machine,
    occurrences: &'a symbols::Occurrences,
    symbol: Symbol,
    name: String,
    at: Span,
    spans: Vec<Span>,
}

/// The state or event under `offset` and its name, written at the span
/// given, for `textDocument/prepareRename`; or why any rename of it would be
/// refused, with the message `rename` gives.
pub fn prepare_rename(analysis: &Analysis, offset: u32) -> Result<(Span, String), String> {
    renamable(analysis, offset).map(|r| (r.at, r.name))
}

/// The checks of a rename that do not depend on the new name.
fn renamable(analysis: &Analysis, offset: u32) -> Result<Renamable<'_>, String> {
    if !matches!(analysis.kind, Kind::Machine(_)) {
        return Err("rename works in YAML and DSL machine files only".into());
    }
    let occurrences = symbols::indexed(analysis);
    let Some(under) = occurrences.at(offset) else {
        return Err("no state or event here".into());
    };
    let (symbol, at) = (under.symbol.clone(), under.span);
    let (Some(machine), true) = (&analysis.machine, analysis.left_out.is_empty()) else {
        return Err(
            "the machine does not load: fix its errors first, so that every target is known".into(),
        );
    };
    let file = &analysis.file;
    let (name, spans) = match &symbol {
        Symbol::State(id) => {
            let state = machine.state(*id);
            if let Some(at) = mentioned_in_expression(analysis, &state.key) {
                let (line, column) = file.line_col(at);
                return Err(format!(
                    "`{}` is named in an expression at {line}:{column} (`in_state`): rename it there by hand",
                    state.key
                ));
            }
            // A `#id` occurrence names the id, which the rename leaves alone.
            let spans = spans_of(occurrences, &symbol, |o| {
                file.text[o.span.range()] == state.key
            });
            (state.key.clone(), spans)
        }
        Symbol::Event(name) => (name.clone(), spans_of(occurrences, &symbol, |_| true)),
        _ => return Err("only states and events can be renamed".into()),
    };
    if spans.is_empty() {
        return Err(format!("`{name}` is not written anywhere in this file"));
    }
    Ok(Renamable {
        machine,
        occurrences,
        at,
        symbol,
        name,
        spans,
    })
}

/// The edits that rename the state or event under `offset` to `new_name`
/// everywhere it is written, or why the rename is refused.
pub fn rename(analysis: &Analysis, offset: u32, new_name: &str) -> Result<Vec<Edit>, String> {
    let Renamable {
        machine,
        occurrences,
        symbol,
        name: old,
        spans,
        ..
    } = renamable(analysis, offset)?;
    let file = &analysis.file;
    match &symbol {
        Symbol::State(id) => {
            if !plain_name(new_name, false) {
                return Err(format!(
                    "`{new_name}` is not a state name: use letters, digits, `_` and `-`"
                ));
            }
            let parent = machine.state(*id).parent.unwrap_or(StateId::ROOT);
            if machine
                .state(parent)
                .children
                .iter()
                .any(|&c| c != *id && machine.state(c).key == new_name)
            {
                return Err(format!(
                    "`{}` already has a state named `{new_name}`",
                    machine.display_name(parent)
                ));
            }
        }
        _ => {
            if !plain_name(new_name, true) {
                return Err(format!(
                    "`{new_name}` is not an event name: use letters, digits, `_`, `-` and `.`"
                ));
            }
            if new_name != old
                && (machine.events.contains_key(new_name)
                    || occurrences
                        .iter()
                        .any(|o| o.symbol == Symbol::Event(new_name.to_string())))
            {
                return Err(format!(
                    "an event named `{new_name}` exists already: the two would merge"
                ));
            }
            // A wildcard descriptor that takes one name and not the other
            // would change which transitions the event takes.
            if let Some(t) = machine.transitions.iter().find(|t| match &t.trigger {
                Trigger::Event(d) => d.patterns.iter().any(|p| {
                    !matches!(p, EventPattern::Exact(_)) && p.matches(&old) != p.matches(new_name)
                }),
                _ => false,
            }) {
                let (line, column) = file.line_col(t.span.start);
                return Err(format!(
                    "the transition `{}` at {line}:{column} matches `{old}` by a wildcard: renaming would change what it takes",
                    t.trigger
                ));
            }
        }
    }
    Ok(spans
        .into_iter()
        .map(|span| Edit::new(span, new_name))
        .collect())
}

use crate::model::{EventPattern, Trigger};

fn spans_of(
    occurrences: &symbols::Occurrences,
    symbol: &Symbol,
    keep: impl Fn(&Occurrence) -> bool,
) -> Vec<Span> {
    let mut spans: Vec<Span> = occurrences
        .iter()
        .filter(|o| &o.symbol == symbol && keep(o))
        .map(|o| o.span)
        .collect();
    spans.sort_by_key(|s| (s.start, s.end));
    spans.dedup_by_key(|s| (s.start, s.end));
    spans
}

/// Where an expression names a state by its key inside a string
/// (`in_state("a.b")`), which the index does not follow.
fn mentioned_in_expression(analysis: &Analysis, key: &str) -> Option<u32> {
    let text = &analysis.file.text;
    text.match_indices("in_state(").find_map(|(at, _)| {
        let rest = &text[at..];
        let call = &rest[..rest.find(')').unwrap_or(rest.len())];
        call.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|word| word == key)
            .then_some(at as u32)
    })
}
