//! Fixes applied: the engine above the editors of every syntax.
//!
//! A [`Fix`] (plain data, beside [`Diagnostic`] in `crate::diagnostic`) is a
//! few [`Edit`]s, each a byte range of the file as loaded and the text that
//! replaces it, so comments, key order and layout stay as the author wrote
//! them: a fix changes the text it names and nothing else. The lints that
//! can repair what they report attach one to their [`Diagnostic`] when they
//! are given the file's text ([`crate::lint::lint_source`]); the [`Editor`]
//! of the file's syntax (`syntax::yaml::edit`, `syntax::dsl::edit`,
//! `import::xstate::edit`), which [`editor`] chooses, decides where an
//! insertion goes and how it is written there, block or flow, indented like
//! its siblings.
//!
//! [`apply`] applies a set of fixes in one pass: their edits sorted, and a
//! fix whose edits touch those of a fix already taken left for the next
//! pass. [`fix_file`] repeats lint and apply until nothing more applies (at
//! most [`MAX_PASSES`] times, as ruff does), and never keeps a fix after
//! which the file has a load error it did not have before.

use std::collections::HashSet;
use std::path::Path;

use crate::model::Machine;
use crate::span::{SourceFile, Span};
use crate::syntax::{self, Syntax};

use crate::diagnostic::Diagnostic;

// What a fix is and who writes it, for the lints and tools that apply fixes.
use crate::diagnostic::{Edit, Fix};
use crate::syntax::edit::Editor;

/// The result of [`apply`]: the new text, and which of the fixes given are
/// in it (a fix identical to one applied counts as applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub applied: Vec<usize>,
}

/// Applies the fixes that do not conflict, in one pass over `text`: in the
/// order given, a fix whose edits overlap or touch those of a fix already
/// taken is left out (the caller may apply it on the text that results),
/// and a fix identical to one taken is taken with it. Edits must lie on
/// character boundaries of `text`; a fix with one that does not is left out.
pub fn apply(text: &str, fixes: &[&Fix]) -> Applied {
    let mut taken: Vec<&Fix> = Vec::new();
    let mut applied = Vec::new();
    for (i, fix) in fixes.iter().enumerate() {
        if taken.iter().any(|t| t.keys() == fix.keys()) {
            applied.push(i);
            continue;
        }
        let inside = fix.edits.iter().all(|e| {
            e.span.start <= e.span.end
                && text.is_char_boundary(e.span.start as usize)
                && text.is_char_boundary(e.span.end as usize)
        });
        let own_overlap = fix
            .edits
            .iter()
            .enumerate()
            .any(|(j, a)| fix.edits[j + 1..].iter().any(|b| overlaps(a, b)));
        if !inside || own_overlap || taken.iter().any(|t| t.conflicts(fix)) {
            continue;
        }
        taken.push(fix);
        applied.push(i);
    }
    let mut edits: Vec<&Edit> = taken.iter().flat_map(|f| &f.edits).collect();
    // A stable sort keeps the order a fix gives two insertions at one place.
    edits.sort_by_key(|e| (e.span.start, e.span.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for edit in edits {
        out.push_str(&text[at..edit.span.start as usize]);
        out.push_str(&edit.replacement);
        at = edit.span.end as usize;
    }
    out.push_str(&text[at..]);
    Applied { text: out, applied }
}

/// Whether two edits of one fix overlap (touching is fine inside one fix,
/// whose author put them in order).
fn overlaps(a: &Edit, b: &Edit) -> bool {
    a.span.start < b.span.end && b.span.start < a.span.end
}

/// The most lint-and-apply passes [`fix_file`] makes: a fix left out for a
/// conflict is applied on a later pass, and each pass lints the file again.
pub const MAX_PASSES: usize = 10;

/// What [`fix_file`] did to a file.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The text with every fix applied.
    pub text: String,
    /// How many findings had their fix applied (two findings with one fix
    /// count twice).
    pub fixed: usize,
    /// The fixes that were not applied because the file would not load
    /// after them, on the text of the pass that tried them.
    pub reverted: Vec<Reverted>,
    /// The text's diagnostics, lint findings or load errors, after the last
    /// pass: what is left to report.
    pub diagnostics: Vec<Diagnostic>,
}

/// A fix left out because the file would not have loaded after it.
#[derive(Clone, Debug)]
pub struct Reverted {
    /// The finding's code.
    pub code: &'static str,
    pub message: String,
    /// The file as it was when the fix was tried, and where the finding is
    /// in it.
    pub file: SourceFile,
    pub span: Span,
    /// The first load error the fix would have caused.
    pub error: String,
}

/// Lints `file` and applies its fixes (the unsafe ones too when
/// `unsafe_fixes`) until no more apply, at most [`MAX_PASSES`] times.
///
/// `lint` gives the findings of the loaded machine, at the levels in force:
/// a finding it leaves out is not fixed. Before any fix of a pass is kept,
/// the text after it is loaded again; a fix after which the file has a load
/// error it did not have before (with the same code and message) is left out
/// and reported in [`Outcome::reverted`], and the others are kept, so a file
/// that loaded still loads.
pub fn fix_file(
    file: &SourceFile,
    unsafe_fixes: bool,
    lint: impl FnMut(&SourceFile, &Machine) -> Vec<Diagnostic>,
) -> Outcome {
    fix_file_with(file, unsafe_fixes, crate::load::load, lint)
}

/// `fix_file`, with the machine read by `load` (an XState source with the
/// settings of `idemchart.toml`, say) instead of as `load::load` reads it.
pub fn fix_file_with(
    file: &SourceFile,
    unsafe_fixes: bool,
    load: impl Fn(&SourceFile) -> Result<Machine, Vec<Diagnostic>>,
    mut lint: impl FnMut(&SourceFile, &Machine) -> Vec<Diagnostic>,
) -> Outcome {
    let mut current = file.clone();
    let mut fixed = 0;
    let mut reverted = Vec::new();
    // Fixes already refused, by code and message: a later pass proposes
    // them again, at other offsets, after the other fixes moved the text.
    let mut refused: HashSet<(&'static str, String)> = HashSet::new();
    let mut diagnose = |file: &SourceFile| match load(file) {
        Ok(machine) => (lint(file, &machine), Vec::new()),
        Err(errors) => (errors.clone(), errors),
    };
    let (mut diagnostics, mut load_errors) = diagnose(&current);
    for _ in 0..MAX_PASSES {
        let candidates: Vec<(&Diagnostic, &Fix)> = diagnostics
            .iter()
            .filter_map(|d| d.fix.as_ref().map(|f| (d, f)))
            .filter(|(d, f)| f.applies(unsafe_fixes) && !refused.contains(&key(d, f)))
            .collect();
        if candidates.is_empty() {
            break;
        }
        let fixes: Vec<&Fix> = candidates.iter().map(|(_, f)| *f).collect();
        let batch = apply(&current.text, &fixes);
        let mut kept = batch.applied.clone();
        if new_load_error(&load, &current, &batch.text, &load_errors).is_some() {
            // Some fix of the pass breaks the file: try them one at a time,
            // each on top of those kept so far.
            kept.clear();
            for &i in &batch.applied {
                let mut trial: Vec<&Fix> = kept.iter().map(|&k| fixes[k]).collect();
                trial.push(fixes[i]);
                let attempt = apply(&current.text, &trial);
                match new_load_error(&load, &current, &attempt.text, &load_errors) {
                    None => kept.push(i),
                    Some(error) => {
                        let (d, f) = candidates[i];
                        refused.insert(key(d, f));
                        reverted.push(Reverted {
                            code: d.code,
                            message: f.message.clone(),
                            file: current.clone(),
                            span: d.span,
                            error,
                        });
                    }
                }
            }
        }
        if kept.is_empty() {
            break;
        }
        let chosen: Vec<&Fix> = kept.iter().map(|&k| fixes[k]).collect();
        let text = apply(&current.text, &chosen).text;
        fixed += kept.len();
        if text == current.text {
            break;
        }
        current = SourceFile::new(current.path.clone(), text);
        (diagnostics, load_errors) = diagnose(&current);
    }
    // A fix refused is no longer offered: the finding stays, without it.
    for d in &mut diagnostics {
        if d.fix.as_ref().is_some_and(|f| refused.contains(&key(d, f))) {
            d.fix = None;
        }
    }
    Outcome {
        text: current.text,
        fixed,
        reverted,
        diagnostics,
    }
}

fn key(d: &Diagnostic, f: &Fix) -> (&'static str, String) {
    (d.code, f.message.clone())
}

/// The first load error of `text` (read as `file` is) that `before` does not
/// have, by code and message.
fn new_load_error(
    load: &impl Fn(&SourceFile) -> Result<Machine, Vec<Diagnostic>>,
    file: &SourceFile,
    text: &str,
    before: &[Diagnostic],
) -> Option<String> {
    let after = SourceFile::new(file.path.clone(), text);
    let errors = load(&after).err()?;
    let mut old: Vec<(&str, &str)> = before
        .iter()
        .map(|d| (d.code, d.message.as_str()))
        .collect();
    errors.into_iter().find_map(|e| {
        match old.iter().position(|&(c, m)| c == e.code && m == e.message) {
            Some(i) => {
                old.swap_remove(i);
                None
            }
            None => Some(format!("{} {}", e.code, e.message)),
        }
    })
}

/// The editor of an XState source whose machine config is at `config`, as
/// its reader found it: `lint_loaded` gives it the places it already read,
/// so that a run does not read the file, and every module it imports, again.
pub fn xstate_editor(
    file: &SourceFile,
    config: crate::import::xstate::edit::ObjectAt,
) -> Option<Box<dyn Editor + '_>> {
    let text = file.text.as_str();
    let kind = crate::import::xstate::SourceKind::of_path(Path::new(&file.path))?;
    let json = kind == crate::import::xstate::SourceKind::Json;
    let editor = Box::new(crate::import::xstate::edit::XStateEditor::new(
        text, config, json,
    ));
    Some(match text.contains("\r\n") {
        true => Box::new(Crlf(editor)),
        false => editor,
    })
}

/// The editor of a file in the syntax its name says, for the lints that
/// attach fixes: they say what to change, the editor where and how. `None`
/// when the name says no syntax or the text does not parse.
pub fn editor(file: &SourceFile) -> Option<Box<dyn Editor + '_>> {
    let text = file.text.as_str();
    let path = Path::new(&file.path);
    if crate::import::xstate::SourceKind::of_path(path).is_some() {
        // The file's one machine, read again for the places of its config.
        let loaded = crate::import::xstate::load(file.clone(), &Default::default());
        let [machine] = &loaded.machines[..] else {
            return None;
        };
        return xstate_editor(file, machine.anchors.clone()?);
    }
    let editor: Box<dyn Editor + '_> = match Syntax::of_path(path)? {
        Syntax::Yaml => Box::new(syntax::yaml::edit::YamlEditor::of_file(file)?),
        Syntax::Dsl => Box::new(syntax::dsl::edit::DslEditor::new(text)?),
    };
    // The editors write `\n`; a file with `\r\n` line breaks gets its own.
    Some(match text.contains("\r\n") {
        true => Box::new(Crlf(editor)),
        false => editor,
    })
}

/// An editor whose insertions break lines with `\r\n`.
struct Crlf<'a>(Box<dyn Editor + 'a>);

impl Crlf<'_> {
    fn crlf(edits: Option<Vec<Edit>>) -> Option<Vec<Edit>> {
        let mut edits = edits?;
        for edit in &mut edits {
            edit.replacement = edit.replacement.replace('\n', "\r\n");
        }
        Some(edits)
    }
}

impl Editor for Crlf<'_> {
    fn replace_duration(&self, span: Span, duration: &str) -> Option<Edit> {
        self.0.replace_duration(span, duration)
    }
    fn declare_event(&self, name: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.declare_event(name))
    }
    fn remove_allow(&self, lint: Span, all_of_state: bool) -> Option<Vec<Edit>> {
        Self::crlf(self.0.remove_allow(lint, all_of_state))
    }
    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.add_event_id(event, field))
    }
    fn add_context_list(&self, name: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.add_context_list(name))
    }
    fn add_guard(&self, transition: Span, test: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.add_guard(transition, test))
    }
    fn add_assign_field(&self, field: Span, name: &str, expr: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.add_assign_field(field, name, expr))
    }
    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>> {
        Self::crlf(self.0.add_allow(state, lint, reason))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `text` with the editor's edits applied, as one fix.
    pub(crate) fn edited(text: &str, edits: Option<Vec<Edit>>) -> String {
        let fix = Fix::safe_edits("test", edits.expect("the editor has edits"));
        let applied = apply(text, &[&fix]);
        assert_eq!(applied.applied, [0], "the edits apply");
        applied.text
    }

    /// The span of the first `needle` in `text`.
    pub(crate) fn span_of(text: &str, needle: &str) -> Span {
        let start = text.find(needle).expect("the needle is in the text");
        Span::new(start, start + needle.len())
    }

    fn fix(edits: &[(usize, usize, &str)]) -> Fix {
        Fix::safe_edits(
            "test",
            edits
                .iter()
                .map(|&(s, e, r)| Edit::new(Span::new(s, e), r))
                .collect(),
        )
    }

    #[test]
    fn applies_sorted_edits_in_one_pass() {
        let a = fix(&[(6, 11, "there"), (0, 0, "> ")]);
        let b = fix(&[(11, 11, "!")]);
        // `b` touches `a`'s replacement: it waits for the next pass.
        let applied = apply("hello world", &[&a, &b]);
        assert_eq!(applied.text, "> hello there");
        assert_eq!(applied.applied, [0]);
        let applied = apply(&applied.text, &[&fix(&[(13, 13, "!")])]);
        assert_eq!(applied.text, "> hello there!");
    }

    #[test]
    fn identical_fixes_apply_once_and_count_for_both() {
        let a = fix(&[(0, 5, "HELLO")]);
        let applied = apply("hello world", &[&a, &a.clone()]);
        assert_eq!(applied.text, "HELLO world");
        assert_eq!(applied.applied, [0, 1]);
    }

    #[test]
    fn replacements_that_meet_do_not_conflict() {
        let a = fix(&[(0, 5, "HELLO")]);
        let b = fix(&[(5, 6, "_")]);
        assert_eq!(apply("hello world", &[&a, &b]).text, "HELLO_world");
        let overlapping = fix(&[(4, 7, "")]);
        assert_eq!(apply("hello world", &[&a, &overlapping]).applied, [0]);
    }

    #[test]
    fn edits_off_character_boundaries_are_refused() {
        let bad = fix(&[(1, 2, "x")]);
        assert_eq!(apply("ñu", &[&bad]).applied, Vec::<usize>::new());
    }

    #[test]
    fn files_with_crlf_breaks_keep_them() {
        let text = "machine: m\r\nevents:\r\n  A: {}\r\ninitial: s\r\nstates:\r\n  s:\r\n    allow:\r\n      deadlock-state: \"x\"\r\n      unreachable-state: \"y\"\r\n    on: { A: s, B: s }\r\n";
        let file = SourceFile::new("m.yaml", text);
        let editor = editor(&file).unwrap();
        let declared = tests::edited(text, editor.declare_event("B"));
        assert!(
            declared.contains("  A: {}\r\n  B: {}\r\ninitial"),
            "{declared:?}"
        );
        let removed = tests::edited(
            text,
            editor.remove_allow(tests::span_of(text, "deadlock"), false),
        );
        assert!(
            removed.contains("    allow:\r\n      unreachable-state"),
            "{removed:?}"
        );
        assert_eq!(crate::syntax::edit::line_end(text, 0), 10);
    }
}
