//! GitHub Actions workflow commands: one `::error` or `::warning` line per
//! diagnostic, which the runner turns into annotations on the file.
//!
//! GitHub shows only the first ten annotations of each level per step, so
//! errors come first; the exit code, not the annotations, fails the job.

use super::{FileReport, Region, portable_path, witness_line};
use crate::diagnostic::Severity;

/// The workflow-command lines for a run, errors before warnings; a
/// fixable finding says how it is fixed, as the human output does.
pub fn github(reports: &[FileReport], unsafe_fixes: bool) -> String {
    let mut lines: Vec<(Severity, String)> = Vec::new();
    for report in reports {
        for d in &report.diagnostics {
            let region = Region::of(d.span, &report.file);
            let mut message = d.message.clone();
            if let Some(witness) = witness_line(d) {
                message.push_str("\nwitness: ");
                message.push_str(&witness);
            }
            if let Some(help) = &d.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            if let Some(fix) = &d.fix {
                message.push('\n');
                message.push_str(super::fixable_with(fix, unsafe_fixes));
                message.push_str(": ");
                message.push_str(&fix.message);
            }
            // GitHub's level for what is only worth knowing is `notice`.
            let level = match d.severity {
                Severity::Note => "notice",
                other => other.as_str(),
            };
            let line = format!(
                "::{} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
                level,
                escape_property(&portable_path(&report.file.path)),
                region.start_line,
                region.start_column,
                region.end_line,
                region.end_column,
                escape_property(&format!("{} {}", d.code, d.name)),
                escape_data(&message),
            );
            lines.push((d.severity, line));
        }
    }
    // A stable sort keeps the file order within each level.
    lines.sort_by_key(|(severity, _)| std::cmp::Reverse(*severity));
    lines.into_iter().map(|(_, line)| line).collect()
}

/// Escapes a command's message: `%`, carriage return and line feed.
pub fn escape_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a property value: what `escape_data` escapes, and `:` and `,`,
/// which would end the value.
pub fn escape_property(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in escape_data(text).chars() {
        match c {
            ':' => out.push_str("%3A"),
            ',' => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::reports;

    #[test]
    fn data_escapes_percent_and_line_breaks_only() {
        assert_eq!(escape_data("100% done"), "100%25 done");
        assert_eq!(escape_data("a\r\nb\nc"), "a%0D%0Ab%0Ac");
        assert_eq!(escape_data("a: b, c"), "a: b, c");
        // The percent is escaped first, so an escape in the text is kept as text.
        assert_eq!(escape_data("%0A"), "%250A");
    }

    #[test]
    fn properties_also_escape_colons_and_commas() {
        assert_eq!(escape_property("C:\\m,1.yaml"), "C%3A\\m%2C1.yaml");
        assert_eq!(escape_property("a%b\nc"), "a%25b%0Ac");
        assert_eq!(
            escape_property("I001 self-accepting-event"),
            "I001 self-accepting-event"
        );
    }

    #[test]
    fn github_lines_put_errors_first() {
        let text = github(&reports(), false);
        insta::assert_snapshot!(text);
        let levels: Vec<_> = text
            .lines()
            .map(|line| line.split(' ').next().unwrap())
            .collect();
        assert_eq!(levels, ["::error", "::error", "::warning"]);
        // The fixable finding says so, as the human output does; with
        // `--unsafe-fixes`, its unsafe fix is applied by `--fix`.
        assert!(text.contains("%0Afixable with `--fix --unsafe-fixes`: keep event ids for 5d\n"));
        let with_unsafe = github(&reports(), true);
        assert!(
            with_unsafe.contains("%0A[*] fixable with `--fix` (unsafe): keep event ids for 5d\n")
        );
    }

    #[test]
    fn one_line_per_diagnostic_even_with_line_breaks_in_messages() {
        let mut reports = reports();
        reports[0].diagnostics[0].message = "two\nlines, 100%".to_string();
        let text = github(&reports, false);
        assert_eq!(text.lines().count(), 3);
        assert!(
            text.contains("::two%0Alines, 100%25%0Afixable with `--fix --unsafe-fixes`: "),
            "{text}"
        );
    }
}
