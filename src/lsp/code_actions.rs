//! Code actions: the fixes of `idemchart lint --fix` as quick fixes, an
//! `allow` of the lint on the finding's state, and every safe fix at once
//! (`source.fixAll.idemchart`), all through the one fix engine.

use std::path::Path;

use crate::config::Config;
use crate::diagnostic::Diagnostic;
use crate::diagnostic::{Applicability, Edit};
use crate::fix;
use crate::lint::Lint;
use crate::model::StateId;
use crate::span::Span;

use super::symbols::{enclosing_model_state, enclosing_state};
use super::{Analysis, Kind};

/// The reason an `allow` added by the editor says until the author writes one.
pub const PLACEHOLDER_REASON: &str = "TODO: say why this finding is harmless here";

/// One action: its title, its edits of the document, and the diagnostic
/// (an index into `Analysis::diagnostics`) it resolves.
#[derive(Clone, Debug)]
pub struct CodeAction {
    pub title: String,
    pub edits: Vec<Edit>,
    /// Whether the client may apply it without asking: a safe fix.
    pub preferred: bool,
    pub diagnostic: Option<usize>,
}

/// The actions for the diagnostics that touch `span`: each one's fix, safe
/// ones preferred, then an `allow` of its lint on its state.
pub fn code_actions(analysis: &Analysis, span: Span) -> Vec<CodeAction> {
    let mut fixes = Vec::new();
    let mut allows = Vec::new();
    for (i, d) in analysis.diagnostics.iter().enumerate() {
        if d.span.end < span.start || span.end < d.span.start {
            continue;
        }
        if let Some(f) = &d.fix {
            fixes.push(CodeAction {
                title: match f.applicability {
                    Applicability::Safe => format!("{} ({})", capitalized(&f.message), d.code),
                    Applicability::Unsafe => {
                        format!(
                            "{} ({}, unsafe: review it)",
                            capitalized(&f.message),
                            d.code
                        )
                    }
                },
                edits: f.edits.clone(),
                preferred: f.applicability == Applicability::Safe,
                diagnostic: Some(i),
            });
        }
        if let Some(mut allow) = allow_here(analysis, d) {
            allow.diagnostic = Some(i);
            allows.push(allow);
        }
    }
    fixes.sort_by_key(|a| !a.preferred);
    fixes.extend(allows);
    fixes
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "Allow LINT here": an `allow:` entry of the finding's lint, with a
/// placeholder reason, on the state that holds the finding (the machine's
/// top level for a finding outside every state). `None` for a load error,
/// which no `allow` silences, in SCXML, and where the text cannot be
/// edited.
pub fn allow_here(analysis: &Analysis, d: &Diagnostic) -> Option<CodeAction> {
    if analysis.kind == Kind::Scxml {
        return None;
    }
    let lint = Lint::from_name_or_code(d.code)?;
    if lint.reported_by_loading() || lint == Lint::UnusedSuppression {
        return None;
    }
    // A tree read without the lines that broke the parse is not edited.
    let machine = analysis
        .machine
        .as_ref()
        .filter(|_| analysis.left_out.is_empty())?;
    let state = match &analysis.doc {
        Some(doc) => enclosing_state(doc, d.span.start),
        None => enclosing_model_state(machine, d.span.start),
    };
    let key = (state != StateId::ROOT).then(|| machine.state(state).span);
    let edits = fix::editor(&analysis.file)?.add_allow(key, lint.name(), PLACEHOLDER_REASON)?;
    let place = match key {
        Some(_) => format!("on `{}`", machine.state(state).key),
        None => "for the machine".to_string(),
    };
    Some(CodeAction {
        title: format!("Allow {} {place} with a reason", lint.name()),
        edits,
        preferred: false,
        diagnostic: None,
    })
}

/// Every safe fix of the document, applied as `idemchart lint --fix` does
/// (pass after pass, no fix that breaks loading): one edit over the whole
/// text, or `None` when nothing changes.
pub fn fix_all(analysis: &Analysis, config: &Config) -> Option<Vec<Edit>> {
    let path = Path::new(&analysis.file.path);
    let options = crate::lint::Options::default();
    let outcome = match analysis.kind {
        Kind::Machine(_) => fix::fix_file(&analysis.file, false, |file, machine| {
            config.apply(path, crate::lint::lint_source(machine, file, &options))
        }),
        // As `idemchart lint --fix` does: an XState source of one machine,
        // all in the file, and no other.
        Kind::Xstate => {
            let loaded = crate::import::xstate::load(analysis.file.clone(), &config.xstate);
            if !crate::lint::fixable_in_place(&loaded) {
                return None;
            }
            crate::lint::fix_xstate(&analysis.file, &config.xstate, false, &options, |found| {
                config.apply(path, found)
            })
        }
        Kind::Scxml => return None,
    };
    (outcome.text != analysis.file.text).then(|| {
        vec![Edit::new(
            Span::new(0, analysis.file.text.len()),
            outcome.text,
        )]
    })
}
