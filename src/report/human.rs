//! Rustc-style diagnostics with a source snippet.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use super::{FileReport, Summary, statistics, statistics_table, visible, witness_line};
use crate::diagnostic::{Diagnostic, Severity};
use crate::span::SourceFile;

/// Renders one diagnostic of `file`; `color` adds ANSI colours for a terminal.
///
/// The labels (the transition, the handler that takes the repeat) mark their
/// places in the snippet; the witness follows as a `= witness:` note, then
/// the help.
pub fn render(diagnostic: &Diagnostic, file: &SourceFile, color: bool) -> String {
    let level = match diagnostic.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    };
    let title = format!("{} [{}]", diagnostic.message, diagnostic.name);
    let mut snippet = Snippet::source(file.text.as_str())
        .path(file.path.as_str())
        .line_start(1);
    snippet =
        snippet.annotation(AnnotationKind::Primary.span(visible(diagnostic.span.range(), file)));
    for label in &diagnostic.labels {
        snippet = snippet.annotation(
            AnnotationKind::Context
                .span(visible(label.span.range(), file))
                .label(&label.message),
        );
    }
    let mut group = level
        .primary_title(title)
        .id(diagnostic.code)
        .element(snippet);
    if let Some(witness) = witness_line(diagnostic) {
        group = group.element(Level::NOTE.with_name("witness").message(witness));
    }
    let mut report = vec![group];
    if let Some(help) = &diagnostic.help {
        report.push(Group::with_title(
            Level::HELP.secondary_title(help.as_str()),
        ));
    }
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    renderer.render(&report)
}

/// Every diagnostic of a run, a blank line after each, then the findings
/// counted by code (`statistics_table`) and the summary line.
pub fn human(reports: &[FileReport], color: bool) -> String {
    let mut out = String::new();
    for report in reports {
        for diagnostic in &report.diagnostics {
            out.push_str(&render(diagnostic, &report.file, color));
            out.push_str("\n\n");
        }
    }
    out.push_str(&statistics_table(&statistics(reports)));
    out.push_str(&Summary::of(reports).line());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::reports;

    #[test]
    fn human_output_shows_labels_witness_and_help() {
        insta::assert_snapshot!(human(&reports(), false));
    }

    #[test]
    fn colour_only_when_asked() {
        let reports = reports();
        assert!(!human(&reports, false).contains('\u{1b}'));
        assert!(human(&reports, true).contains('\u{1b}'));
    }
}
