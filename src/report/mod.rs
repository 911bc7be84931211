//! Diagnostics out: for people (`human`) and for machines (`json`, `sarif`,
//! `github`).
//!
//! Every format reads the same [`FileReport`]s, so they agree on positions and
//! counts. The JSON and SARIF documents and the GitHub lines are stable; the
//! human text is not.

mod github;
mod human;
mod json;
pub(crate) mod sarif;
mod statistics;

pub use github::{escape_data, escape_property, github};
pub use human::{human, human_with, render, write_human};
pub use json::{json, write_json};
pub use sarif::{sarif, write_sarif};
pub use statistics::{CodeCount, statistics, statistics_json, statistics_table};

use serde::Serialize;

use crate::diagnostic::{Diagnostic, Severity, Verdict};
use crate::span::{SourceFile, Span};

/// One file and what was found in it, at the severities in force.
#[derive(Clone, Debug)]
pub struct FileReport {
    pub file: SourceFile,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileReport {
    /// The report of `file`, its diagnostics in the order they appear in it.
    pub fn new(file: SourceFile, mut diagnostics: Vec<Diagnostic>) -> FileReport {
        diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
        FileReport { file, diagnostics }
    }
}

/// The counts printed at the end of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
}

/// What a run read beyond its reports: how many machines, and how many
/// files it passed over because they hold none. The human summary says
/// both; the JSON and SARIF documents stay as they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    pub machines: usize,
    pub without_machine: usize,
}

impl Summary {
    pub fn of(reports: &[FileReport]) -> Summary {
        let all = || reports.iter().flat_map(|r| &r.diagnostics);
        Summary {
            files: reports.len(),
            errors: all().filter(|d| d.severity == Severity::Error).count(),
            warnings: all().filter(|d| d.severity == Severity::Warning).count(),
        }
    }

    /// `linted 4 machines in 3 files: 1 error, 2 warnings; 12 files hold
    /// no machine` (the last part only when some file was passed over).
    pub fn line(&self, reach: Reach) -> String {
        let plural = |n: usize, noun: &str| {
            if n == 1 {
                format!("{n} {noun}")
            } else {
                format!("{n} {noun}s")
            }
        };
        let mut line = format!(
            "linted {} in {}: {}, {}",
            plural(reach.machines, "machine"),
            plural(self.files, "file"),
            plural(self.errors, "error"),
            plural(self.warnings, "warning")
        );
        if reach.without_machine > 0 {
            let verb = if reach.without_machine == 1 {
                "holds"
            } else {
                "hold"
            };
            line.push_str(&format!(
                "; {} {verb} no machine",
                plural(reach.without_machine, "file")
            ));
        }
        line
    }
}

/// How a finding's fix is applied, as ruff marks it (`[*]` where `--fix`
/// applies it here): the words every output gives after a fixable finding.
pub(crate) fn fixable_with(fix: &crate::diagnostic::Fix, unsafe_fixes: bool) -> &'static str {
    use crate::diagnostic::Applicability;
    match (fix.applicability, unsafe_fixes) {
        (Applicability::Safe, _) => "[*] fixable with `--fix`",
        (Applicability::Unsafe, true) => "[*] fixable with `--fix` (unsafe)",
        (Applicability::Unsafe, false) => "fixable with `--fix --unsafe-fixes`",
    }
}

/// The line that counts the fixable findings, in ruff's words:
/// `[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with
/// the `--unsafe-fixes` option).` An unsafe fix is hidden unless
/// `unsafe_fixes`; `None` when no finding has a fix.
pub fn fixable_line(reports: &[FileReport], unsafe_fixes: bool) -> Option<String> {
    let fixes = || {
        reports
            .iter()
            .flat_map(|r| &r.diagnostics)
            .filter_map(|d| d.fix.as_ref())
    };
    let fixable = fixes().filter(|f| f.applies(unsafe_fixes)).count();
    let hidden = fixes().count() - fixable;
    let hidden = match hidden {
        0 => None,
        1 => Some("1 hidden fix can be enabled with the `--unsafe-fixes` option".to_string()),
        n => Some(format!(
            "{n} hidden fixes can be enabled with the `--unsafe-fixes` option"
        )),
    };
    match (fixable, hidden) {
        (0, None) => None,
        (0, Some(hidden)) => Some(format!("No fixes available ({hidden}).")),
        (n, None) => Some(format!("[*] {n} fixable with the `--fix` option.")),
        (n, Some(hidden)) => Some(format!(
            "[*] {n} fixable with the `--fix` option ({hidden})."
        )),
    }
}

/// A document of the JSON outputs, pretty-printed, with a final newline.
pub(crate) fn pretty_json(document: &impl serde::Serialize) -> String {
    to_text(|out| write_pretty_json(document, out))
}

/// `pretty_json`, written to `out` as it is made.
pub(crate) fn write_pretty_json(
    document: &impl serde::Serialize,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, document).map_err(std::io::Error::from)?;
    out.write_all(b"\n")
}

/// What a writer of an output writes, as text: each writes UTF-8 only, and
/// writing to memory does not fail.
pub(crate) fn to_text(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> String {
    let mut bytes = Vec::new();
    write(&mut bytes).expect("writing to memory does not fail");
    String::from_utf8(bytes).expect("the outputs write UTF-8")
}

/// The witness as one line: `ENVIAR → RECIBIR → ENVIAR*`, and what the
/// replay said of it.
pub fn witness_line(diagnostic: &Diagnostic) -> Option<String> {
    if diagnostic.witness.is_empty() {
        return None;
    }
    let mut line = diagnostic.witness.join(" → ");
    match diagnostic.verdict {
        Some(Verdict::Confirmed) => line.push_str(" (confirmed by replay)"),
        Some(Verdict::Refuted) => match &diagnostic.replay {
            Some(why) => line.push_str(&format!(" (refuted by replay: {why})")),
            None => line.push_str(" (refuted by replay)"),
        },
        // The message says where it was not shown.
        Some(Verdict::NotShown) => line.push_str(" (not shown by replay)"),
        Some(Verdict::Undecided) | None => {}
    }
    Some(line)
}

/// Where a diagnostic sits: 1-based lines and columns in characters, the end
/// column being that of the character after the last one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub start_line: usize,
    pub start_column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

impl Region {
    /// Exactly `span`: empty where it is empty, an insertion point, as the
    /// edits of a fix need it (`of` widens it to a visible mark).
    pub fn exact(span: Span, file: &SourceFile) -> Region {
        let (start_line, start_column) = file.line_col(span.start);
        let (end_line, end_column) = file.line_col(span.end);
        Region {
            start_line,
            start_column,
            end_line,
            end_column,
        }
    }

    pub fn of(span: Span, file: &SourceFile) -> Region {
        let range = visible(span.range(), file);
        let (start_line, start_column) = file.line_col(range.start as u32);
        let (end_line, end_column) = file.line_col(range.end as u32);
        Region {
            start_line,
            start_column,
            end_line,
            end_column,
        }
    }
}

/// A range that can be shown: inside the text, on character boundaries, and
/// one character wide at least so that it marks something (unless it sits at
/// a line break, which is shown as a caret after the line's end).
pub(crate) fn visible(range: std::ops::Range<usize>, file: &SourceFile) -> std::ops::Range<usize> {
    let text = &file.text;
    let mut start = range.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = range.end.clamp(start, text.len());
    // A line break is not widened into: the caret would span two lines.
    if end == start && start < text.len() && !text[start..].starts_with(['\n', '\r']) {
        end = start + text[start..].chars().next().map_or(0, char::len_utf8);
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// A path as the machine formats print it: `/` between components on every
/// system, so that the same checkout gives the same document.
pub(crate) fn portable_path(path: &str) -> String {
    if std::path::MAIN_SEPARATOR == '\\' {
        path.replace('\\', "/")
    } else {
        path.to_string()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::LintInfo;
    use crate::diagnostic::Label;
    use crate::diagnostic::{Edit, Fix};

    /// A machine file with a finding on its transition and the handler that
    /// accepts the repeat.
    pub const PEDIDO: &str = "machine: pedido\ninitial: pendiente\nstates:\n  pendiente:\n    on:\n      PAGO: { target: pagado, actions: [encolarEnvio] }\n  pagado:\n    on:\n      PAGO: { actions: [encolarEnvio] }\n";

    /// Lint descriptions for the tests; the real registry lives in `lint`.
    pub const REGISTRY: &[LintInfo] = &[
        LintInfo {
            code: "I001",
            name: "self-accepting-event",
            default_severity: Severity::Warning,
            doc: "### What it does\nFlags a transition on an event that leads to a configuration where the same event is taken again. A second delivery then runs the actions again.\n\n### Why is this bad\nQueues deliver at least once.\n",
            reported_by_loading: false,
        },
        LintInfo {
            code: "I007",
            name: "retention-below-retry",
            default_severity: Severity::Error,
            doc: "Flags a dedup retention shorter than the retry horizon.",
            reported_by_loading: false,
        },
    ];

    fn span_of(text: &str, needle: &str, nth: usize) -> Span {
        let start = text
            .match_indices(needle)
            .nth(nth)
            .expect("the needle is in the text")
            .0;
        Span::new(start, start + needle.len())
    }

    /// A report with a confirmed finding, a plain warning and an error.
    pub fn reports() -> Vec<FileReport> {
        let file = SourceFile::new("machines/pedido.yaml", PEDIDO);
        let finding = Diagnostic {
            code: "I001",
            name: "self-accepting-event",
            severity: Severity::Warning,
            message: "`PAGO` is accepted again in `pagado`".to_string(),
            span: span_of(PEDIDO, "PAGO", 0),
            labels: vec![Label {
                span: span_of(PEDIDO, "PAGO", 1),
                message: "the repeat is taken here".to_string(),
            }],
            help: Some("guard the handler with `not seen.contains(event.id)`".to_string()),
            witness: vec!["PAGO".to_string(), "PAGO*".to_string()],
            verdict: Some(Verdict::Confirmed),
            replay: None,
            fix: None,
        };
        let error = Diagnostic {
            code: "I007",
            name: "retention-below-retry",
            severity: Severity::Error,
            message: "retention 1h, retries for 3d".to_string(),
            span: span_of(PEDIDO, "pendiente", 1),
            labels: Vec::new(),
            help: None,
            witness: Vec::new(),
            verdict: None,
            replay: None,
            fix: Some(Fix::unsafe_edits(
                "keep event ids for 5d",
                vec![Edit::insert(PEDIDO.len(), "dedup: { retention: 5d }\n")],
            )),
        };
        let broken = SourceFile::new("machines/roto.yaml", "machine: roto\nstates: [\n");
        let load_error = crate::diagnostic::LoadError::Syntax {
            message: "unclosed sequence".to_string(),
        }
        .at(Span::new(22, 22), []);
        vec![
            FileReport::new(file, vec![error, finding]),
            FileReport::new(broken, vec![load_error]),
        ]
    }

    #[test]
    fn summary_counts_and_pluralises() {
        let summary = Summary::of(&reports());
        assert_eq!(
            summary,
            Summary {
                files: 2,
                errors: 2,
                warnings: 1
            }
        );
        let reach = Reach {
            machines: 3,
            without_machine: 0,
        };
        assert_eq!(
            summary.line(reach),
            "linted 3 machines in 2 files: 2 errors, 1 warning"
        );
        let one = Summary {
            files: 1,
            errors: 0,
            warnings: 0,
        };
        let passed_over = |without_machine| Reach {
            machines: 1,
            without_machine,
        };
        assert_eq!(
            one.line(passed_over(1)),
            "linted 1 machine in 1 file: 0 errors, 0 warnings; 1 file holds no machine"
        );
        assert_eq!(
            one.line(passed_over(412)),
            "linted 1 machine in 1 file: 0 errors, 0 warnings; 412 files hold no machine"
        );
    }

    #[test]
    fn diagnostics_are_sorted_by_position() {
        let reports = reports();
        let codes: Vec<_> = reports[0].diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["I007", "I001"]);
    }

    #[test]
    fn regions_are_one_based_and_end_after_the_last_character() {
        let file = SourceFile::new("a", "ab\ncñd\n");
        let region = Region::of(Span::new(4, 6), &file);
        assert_eq!(
            region,
            Region {
                start_line: 2,
                start_column: 2,
                end_line: 2,
                end_column: 3
            }
        );
        let empty = Region::of(Span::new(0, 0), &file);
        assert_eq!((empty.start_column, empty.end_column), (1, 2));
        let at_end = Region::of(Span::new(8, 8), &file);
        assert_eq!((at_end.start_line, at_end.end_line), (3, 3));
    }

    #[test]
    fn witness_line_says_what_the_replay_showed() {
        let mut diagnostic = reports()[0].diagnostics[1].clone();
        assert_eq!(
            witness_line(&diagnostic).as_deref(),
            Some("PAGO → PAGO* (confirmed by replay)")
        );
        diagnostic.verdict = Some(Verdict::NotShown);
        assert_eq!(
            witness_line(&diagnostic).as_deref(),
            Some("PAGO → PAGO* (not shown by replay)")
        );
        diagnostic.verdict = Some(Verdict::Refuted);
        diagnostic.replay = Some("the repeat is refused".into());
        assert_eq!(
            witness_line(&diagnostic).as_deref(),
            Some("PAGO → PAGO* (refuted by replay: the repeat is refused)")
        );
        diagnostic.verdict = None;
        assert_eq!(witness_line(&diagnostic).as_deref(), Some("PAGO → PAGO*"));
        diagnostic.witness.clear();
        assert_eq!(witness_line(&diagnostic), None);
    }
}
