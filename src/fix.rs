//! Fixes: text edits on the author's file that remove a finding.
//!
//! A [`Fix`] is a few [`Edit`]s, each a byte range of the file as loaded and
//! the text that replaces it, so comments, key order and layout stay as the
//! author wrote them: a fix changes the text it names and nothing else. The
//! lints that can repair what they report attach one to their
//! [`Diagnostic`] when they are given the file's text
//! ([`crate::lint::lint_source`]); the front-end of the file's syntax
//! (`syntax::yaml::edit`, `syntax::dsl::edit`) decides where an insertion
//! goes and how it is written there, block or flow, indented like its
//! siblings.
//!
//! [`apply`] applies a set of fixes in one pass: their edits sorted, and a
//! fix whose edits touch those of a fix already taken left for the next
//! pass. [`fix_file`] repeats lint and apply until nothing more applies (at
//! most [`MAX_PASSES`] times, as ruff does), and never keeps a fix after
//! which the file has a load error it did not have before.

use std::collections::HashSet;
use std::path::Path;

use crate::diagnostic::Diagnostic;
use crate::model::Machine;
use crate::span::{SourceFile, Span};
use crate::syntax::{self, Syntax};

/// Whether a fix may be applied without review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Applicability {
    /// It keeps what the machine does: `--fix` applies it.
    Safe,
    /// It changes what the machine or the runtime does, as the finding
    /// asks, in a way the author should review: only `--unsafe-fixes`
    /// applies it.
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// One replacement: the text at `span` (a byte range of the file the fix was
/// computed on; empty for an insertion) becomes `replacement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub span: Span,
    pub replacement: String,
}

impl Edit {
    pub fn new(span: Span, replacement: impl Into<String>) -> Edit {
        Edit {
            span,
            replacement: replacement.into(),
        }
    }

    /// `replacement` inserted at `offset`.
    pub fn insert(offset: usize, replacement: impl Into<String>) -> Edit {
        Edit::new(Span::new(offset, offset), replacement)
    }

    /// The text at `span` removed.
    pub fn delete(span: Span) -> Edit {
        Edit::new(span, "")
    }

    /// The edit as a comparable value: spans compare equal whatever they
    /// hold (`Span`'s `PartialEq`), so identity goes through this.
    fn key(&self) -> (u32, u32, &str) {
        (self.span.start, self.span.end, &self.replacement)
    }

    fn is_insertion(&self) -> bool {
        self.span.start == self.span.end
    }
}

/// What to change in the file to remove one finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// What the fix does, as an imperative: "declare `PAGO` under `events:`".
    pub message: String,
    /// Non-overlapping edits of one file.
    pub edits: Vec<Edit>,
}

impl Fix {
    pub fn safe_edits(message: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix {
            applicability: Applicability::Safe,
            message: message.into(),
            edits,
        }
    }

    pub fn unsafe_edits(message: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix {
            applicability: Applicability::Unsafe,
            message: message.into(),
            edits,
        }
    }

    /// Whether `--fix`, with `--unsafe-fixes` or without, applies it.
    pub fn applies(&self, unsafe_fixes: bool) -> bool {
        self.applicability == Applicability::Safe || unsafe_fixes
    }

    /// The edits, sorted, as comparable values.
    fn keys(&self) -> Vec<(u32, u32, &str)> {
        let mut keys: Vec<_> = self.edits.iter().map(Edit::key).collect();
        keys.sort();
        keys
    }

    /// Whether an edit of one fix lies in, or touches, one of the other's:
    /// applying both at once would leave their order to chance, so the
    /// second waits for the next pass. Two replacements that only meet at
    /// a boundary do not conflict.
    fn conflicts(&self, other: &Fix) -> bool {
        self.edits.iter().any(|a| {
            other.edits.iter().any(|b| {
                let (a0, a1, b0, b1) = (a.span.start, a.span.end, b.span.start, b.span.end);
                let apart = a1 < b0 || b1 < a0;
                let meeting = (a1 == b0 || b1 == a0) && !a.is_insertion() && !b.is_insertion();
                !apart && !meeting
            })
        })
    }
}

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
    fix_file_with(file, unsafe_fixes, syntax::load, lint)
}

/// `fix_file`, with the machine read by `load` (an XState source with the
/// settings of `idemchart.toml`, say) instead of as `syntax::load` reads it.
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

/// The editor of a file in the syntax its name says, for the lints that
/// attach fixes: they say what to change, the editor where and how. `None`
/// when the name says no syntax or the text does not parse.
pub fn editor(file: &SourceFile) -> Option<Box<dyn Editor + '_>> {
    let text = file.text.as_str();
    let path = Path::new(&file.path);
    if let Some(kind) = crate::import::xstate::SourceKind::of_path(path) {
        // The file's one machine, read again for the places of its config.
        let loaded = crate::import::xstate::load(file.clone(), &Default::default());
        let [machine] = &loaded.machines[..] else {
            return None;
        };
        let config = machine.anchors.clone()?;
        let json = kind == crate::import::xstate::SourceKind::Json;
        let editor = Box::new(crate::import::xstate::edit::XStateEditor::new(
            text, config, json,
        ));
        return Some(match text.contains("\r\n") {
            true => Box::new(Crlf(editor)),
            false => editor,
        });
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

/// The edits a fix is made of, written in one syntax. Each anchor is a span
/// the model keeps (a name, a key, a transition); `None` when the text is
/// not shaped as the editor can change safely (an alias, a block scalar).
pub trait Editor {
    /// Writes a duration over the one at `span`. Each method gives `None`
    /// where the file's syntax cannot say the change exactly.
    fn replace_duration(&self, span: Span, duration: &str) -> Option<Edit>;
    /// Declares the event with nothing but its name, with the other
    /// declarations, or in a new section where there are none.
    fn declare_event(&self, name: &str) -> Option<Vec<Edit>>;
    /// Removes the `allow` of the lint named at `lint`; the whole `allow`
    /// section of its state when `all_of_state` (every entry goes).
    fn remove_allow(&self, lint: Span, all_of_state: bool) -> Option<Vec<Edit>>;
    /// Gives the event declared at `event` the id field `field`.
    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>>;
    /// Adds a context field whose initial value is the empty list.
    fn add_context_list(&self, name: &str) -> Option<Vec<Edit>>;
    /// Makes `test` a condition of the transition at `transition`: its
    /// guard, or the first conjunct of the guard it has.
    fn add_guard(&self, transition: Span, test: &str) -> Option<Vec<Edit>>;
    /// Adds `name: expr` to the assign that holds the field at `field`.
    fn add_assign_field(&self, field: Span, name: &str, expr: &str) -> Option<Vec<Edit>>;
    /// Allows the lint `lint` with `reason` on the state whose key is at
    /// `state` (the machine's top level when `None`).
    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>>;
}

/// Writes the suggested targets of the unknown-target fixes that lowering
/// made (lowering knows no syntax, so it suggests the bare name) in the
/// file's syntax, quoted where needed.
pub(crate) fn spell_targets(diagnostics: &mut [Diagnostic], text: &str, syntax: Syntax) {
    for d in diagnostics {
        let Some(fix) = d.fix.as_mut() else {
            continue;
        };
        for edit in &mut fix.edits {
            *edit = match syntax {
                Syntax::Yaml => syntax::yaml::edit::rename(text, edit.span, &edit.replacement),
                Syntax::Dsl => syntax::dsl::edit::rename_target(edit.span, &edit.replacement),
            };
        }
    }
}

/// Shared by the editors: the byte offset of the line start before `at`.
pub(crate) fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The offset of the line break at or after `at` (of its `\r` in a
/// `\r\n`), or the end of the text.
pub(crate) fn line_end(text: &str, at: usize) -> usize {
    match text[at..].find('\n') {
        Some(i) if i > 0 && text.as_bytes()[at + i - 1] == b'\r' => at + i - 1,
        Some(i) => at + i,
        None => text.len(),
    }
}

/// Just after the line break at `at` (`\n` or `\r\n`), or `at` at the end.
fn after_break(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + if rest.starts_with("\r\n") {
        2
    } else {
        usize::from(rest.starts_with('\n'))
    }
}

/// The indentation (leading spaces and tabs) of the line holding `at`.
pub(crate) fn indentation(text: &str, at: usize) -> &str {
    let start = line_start(text, at);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Whether only spaces and tabs lie between the start of the line and `at`.
pub(crate) fn starts_line(text: &str, at: usize) -> bool {
    text[line_start(text, at)..at]
        .chars()
        .all(|c| c == ' ' || c == '\t')
}

/// Where a removal of a whole item that starts at `start` and ends at `end`
/// should begin and end: its whole lines, line break included, when nothing
/// else is on them but a trailing comment (`comment` is the syntax's marker);
/// else the item itself with the spaces after it.
pub(crate) fn removal(text: &str, start: usize, end: usize, comment: &str) -> Span {
    let rest = text[end..line_end(text, end)].trim_start_matches([' ', '\t']);
    let alone = starts_line(text, start) && (rest.is_empty() || rest.starts_with(comment));
    if alone {
        let to = after_break(text, line_end(text, end));
        Span::new(line_start(text, start), to)
    } else {
        let spaces = text[end..].len() - text[end..].trim_start_matches([' ', '\t']).len();
        Span::new(start, end + spaces)
    }
}

/// Where to insert an item after one that ends at `end`: at the end of its
/// line, on a line of its own, when only a comment follows it there;
/// right after it, on the same line, when something else does. The flag
/// says whether the insertion starts a new line.
pub(crate) fn after_item(text: &str, end: usize, comment: &str) -> (usize, bool) {
    let eol = line_end(text, end);
    let rest = text[end..eol].trim_start_matches([' ', '\t']);
    if rest.is_empty() || rest.starts_with(comment) {
        (eol, true)
    } else {
        (end, false)
    }
}

/// The start of the comment lines directly above the line at `at` (no
/// blank line between), so that an insertion before an item does not come
/// between the item and the comment about it.
pub(crate) fn above_comments(text: &str, at: usize, comment: &str) -> usize {
    let mut start = line_start(text, at);
    while start > 0 {
        let previous = line_start(text, start - 1);
        if text[previous..start].trim_start().starts_with(comment) {
            start = previous;
        } else {
            break;
        }
    }
    start
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
        assert_eq!(line_end(text, 0), 10);
    }

    #[test]
    fn line_helpers_find_whole_lines_and_comments() {
        let text = "a: 1\n  # about b\n  b: 2 # two\nc: 3";
        let b = text.find("b: 2").unwrap();
        assert_eq!(indentation(text, b), "  ");
        assert!(starts_line(text, b));
        let end = b + "b: 2".len();
        let removed = removal(text, b, end, "#");
        assert_eq!(&text[removed.range()], "  b: 2 # two\n");
        assert_eq!(&text[above_comments(text, b, "#")..b], "  # about b\n  ");
        assert_eq!(after_item(text, end, "#"), (line_end(text, end), true));
        let one_line = "x { a = 1 }";
        assert_eq!(after_item(one_line, 9, "//"), (9, false));
    }
}
