//! Rustc-style diagnostics with a source snippet.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use super::{
    FileReport, Reach, Summary, fixable_line, statistics, statistics_table, visible, witness_line,
};
use crate::diagnostic::{Diagnostic, Severity};
use crate::span::SourceFile;

/// Renders one diagnostic of `file`; `color` adds ANSI colours for a terminal.
///
/// The labels (the transition, the handler that takes the repeat) mark their
/// places in the snippet; the witness follows as a `= witness:` note, then
/// the help. A fix is not shown: the commands other than `lint` (`check`,
/// `fmt`) do not apply fixes.
pub fn render(diagnostic: &Diagnostic, file: &SourceFile, color: bool) -> String {
    render_with(diagnostic, file, color, None)
}

/// `render` for `lint`, with the finding's fix as a note: `[*]` when
/// `--fix` applies it, an unsafe one counting as such when `unsafe_fixes`
/// (the run was given `--unsafe-fixes`).
fn render_with(
    diagnostic: &Diagnostic,
    file: &SourceFile,
    color: bool,
    unsafe_fixes: Option<bool>,
) -> String {
    let level = match diagnostic.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    };
    let title = format!("{} [{}]", diagnostic.message, diagnostic.name);
    let primary = visible(diagnostic.span.range(), file);
    let labels: Vec<_> = diagnostic
        .labels
        .iter()
        .map(|label| (visible(label.span.range(), file), label.message.as_str()))
        .collect();
    // The renderer is given the lines the annotations are on, not the
    // whole file, which it would scan for every diagnostic: tens of
    // thousands of findings in a large file took minutes that way. Places
    // far apart (a cycle's transitions across a large file) are shown in
    // snippets of their own, so that no snippet spans the file between.
    let mut places: Vec<(&std::ops::Range<usize>, Option<&str>)> = vec![(&primary, None)];
    places.extend(
        labels
            .iter()
            .map(|(range, message)| (range, Some(*message))),
    );
    places.sort_by_key(|(range, _)| range.start);
    let mut clusters: Vec<Vec<(&std::ops::Range<usize>, Option<&str>)>> = Vec::new();
    for place in places {
        match clusters.last_mut() {
            Some(cluster)
                if line_of(file, place.0.start)
                    <= line_of(file, cluster.iter().map(|(r, _)| r.end).max().unwrap_or(0))
                        + SNIPPET_GAP =>
            {
                cluster.push(place)
            }
            _ => clusters.push(vec![place]),
        }
    }
    let mut group = Group::with_title(level.primary_title(title).id(diagnostic.code));
    for cluster in clusters {
        let (window, first_line) = lines_of(file, cluster.iter().map(|(range, _)| *range));
        let shift =
            |range: &std::ops::Range<usize>| range.start - window.start..range.end - window.start;
        let mut snippet = Snippet::source(&file.text[window.clone()])
            .path(file.path.as_str())
            .line_start(first_line);
        for (range, message) in cluster {
            snippet = snippet.annotation(match message {
                None => AnnotationKind::Primary.span(shift(range)),
                Some(message) => AnnotationKind::Context.span(shift(range)).label(message),
            });
        }
        group = group.element(snippet);
    }
    if let Some(witness) = witness_line(diagnostic) {
        group = group.element(Level::NOTE.with_name("witness").message(witness));
    }
    if let (Some(fix), Some(unsafe_fixes)) = (&diagnostic.fix, unsafe_fixes) {
        let how = super::fixable_with(fix, unsafe_fixes);
        group = group.element(Level::NOTE.with_name(how).message(fix.message.as_str()));
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

/// How many lines may lie between two places of a diagnostic shown in one
/// snippet; farther apart, each gets a snippet of its own.
const SNIPPET_GAP: usize = 200;

/// The 1-based line of a byte offset.
fn line_of(file: &SourceFile, offset: usize) -> usize {
    file.line_col(offset.min(file.text.len()) as u32).0
}

/// The whole lines that hold the ranges, as a byte range of the file, and
/// the 1-based number of the first.
fn lines_of<'r>(
    file: &SourceFile,
    ranges: impl Iterator<Item = &'r std::ops::Range<usize>>,
) -> (std::ops::Range<usize>, usize) {
    let (mut lo, mut hi) = (usize::MAX, 0);
    for range in ranges {
        lo = lo.min(range.start);
        hi = hi.max(range.end);
    }
    let lo = lo.min(hi);
    // The end of a file that ends with a line break is shown at the end of
    // its last line, as the renderer places it.
    let at = match lo == file.text.len() && file.text.ends_with('\n') {
        true => lo - 1,
        false => lo,
    };
    let (first_line, _) = file.line_col(at as u32);
    let start = file.offset(first_line, 1) as usize;
    let end = file.text[hi..]
        .find('\n')
        .map_or(file.text.len(), |i| hi + i);
    (start..end, first_line)
}

/// Every diagnostic of a run, a blank line after each, then the findings
/// counted by code (`statistics_table`), the summary line and the count of
/// fixable findings (`fixable_line`); `reach` is what the run read.
pub fn human(reports: &[FileReport], reach: Reach, color: bool) -> String {
    human_with(reports, reach, color, false)
}

/// `human` for a run given `--unsafe-fixes` when `unsafe_fixes`: its unsafe
/// fixes are fixable with `--fix`, not hidden.
pub fn human_with(reports: &[FileReport], reach: Reach, color: bool, unsafe_fixes: bool) -> String {
    super::to_text(|out| write_human(reports, reach, color, unsafe_fixes, out))
}

/// `human_with`, written to `out` a diagnostic at a time.
pub fn write_human(
    reports: &[FileReport],
    reach: Reach,
    color: bool,
    unsafe_fixes: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for report in reports {
        for diagnostic in &report.diagnostics {
            let shown = render_with(diagnostic, &report.file, color, Some(unsafe_fixes));
            out.write_all(shown.as_bytes())?;
            out.write_all(b"\n\n")?;
        }
    }
    out.write_all(statistics_table(&statistics(reports)).as_bytes())?;
    writeln!(out, "{}", Summary::of(reports).line(reach))?;
    if let Some(line) = fixable_line(reports, unsafe_fixes) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::reports;

    #[test]
    fn human_output_shows_labels_witness_and_help() {
        let reach = Reach {
            machines: 2,
            without_machine: 0,
        };
        insta::assert_snapshot!(human(&reports(), reach, false));
    }

    #[test]
    fn places_far_apart_get_snippets_of_their_own() {
        let text: String = (1..=400).map(|i| format!("line {i}\n")).collect();
        let file = SourceFile::new("big.yaml", text.clone());
        let at = |needle: &str| {
            let start = text.find(needle).unwrap();
            crate::Span::new(start, start + needle.len())
        };
        let mut diagnostic = crate::diagnostic::LoadError::Syntax {
            message: "far".into(),
        }
        .at(at("line 2\n"), []);
        diagnostic.labels.push(crate::diagnostic::Label {
            span: at("line 390"),
            message: "and here".into(),
        });
        let shown = render(&diagnostic, &file, false);
        assert!(shown.contains("::: big.yaml:390:1"), "{shown}");
        assert!(shown.lines().count() < 20, "{shown}");
    }

    #[test]
    fn colour_only_when_asked() {
        let reports = reports();
        assert!(!human(&reports, Reach::default(), false).contains('\u{1b}'));
        assert!(human(&reports, Reach::default(), true).contains('\u{1b}'));
    }
}
