//! Rustc-style diagnostics with a source snippet.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use crate::diagnostic::{Diagnostic, Severity};
use crate::span::SourceFile;

/// Renders one diagnostic of `file`; `color` adds ANSI colours for a terminal.
pub fn render(diagnostic: &Diagnostic, file: &SourceFile, color: bool) -> String {
    let level = match diagnostic.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
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
    let mut report = vec![
        level
            .primary_title(title)
            .id(diagnostic.code)
            .element(snippet),
    ];
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

/// A range the renderer can show: inside the text, on character boundaries,
/// and one character wide at least so the caret is visible (unless it sits
/// at a line break, which is shown as a caret after the line's end).
fn visible(range: std::ops::Range<usize>, file: &SourceFile) -> std::ops::Range<usize> {
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
