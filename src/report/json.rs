//! The JSON document of `idemchart lint --format json` (see the "Lints"
//! section of the machine-format spec).

use std::io::Write;

use serde::Serialize;

use super::{FileReport, Region, Summary, portable_path};
use crate::diagnostic::{Diagnostic, Fix, Verdict};
use crate::span::SourceFile;

#[derive(Serialize)]
struct Document<'a> {
    diagnostics: Diagnostics<'a>,
    summary: Summary,
}

/// Every diagnostic of the reports, each made into its JSON shape as it is
/// written: a large run's document is never held whole.
struct Diagnostics<'a>(&'a [FileReport]);

impl Serialize for Diagnostics<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().flat_map(|report| {
            let file = portable_path(&report.file.path);
            report
                .diagnostics
                .iter()
                .map(move |d| JsonDiagnostic::of(d, &report.file, file.clone()))
        }))
    }
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    lint: &'a str,
    severity: &'a str,
    file: String,
    line: usize,
    column: usize,
    message: &'a str,
    witness: &'a [String],
    /// `true` when the replay confirmed the finding, `false` when it is
    /// refuted, `null` otherwise: `verdict` says which.
    confirmed: Option<bool>,
    /// `confirmed`, `refuted`, `not-shown` or `undecided`; absent where no
    /// replay was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'static str>,
    /// Why the replay did not confirm: what refuted it, where it was not
    /// shown, or why it could not decide.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<&'a str>,
    /// The fix that removes the finding, `null` where there is none.
    fix: Option<JsonFix<'a>>,
}

/// A fix as ruff's JSON writes one: applicability, message, edits.
#[derive(Serialize)]
struct JsonFix<'a> {
    applicability: &'a str,
    message: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

/// One edit: the text from `start` to `end` (exclusive; equal for an
/// insertion) becomes `content`.
#[derive(Serialize)]
struct JsonEdit<'a> {
    start: Position,
    end: Position,
    content: &'a str,
}

/// A place in the file: 1-based line and column (in characters, as the
/// diagnostics count them) and the byte offset.
#[derive(Serialize)]
struct Position {
    line: usize,
    column: usize,
    offset: u32,
}

impl<'a> JsonFix<'a> {
    fn of(fix: &'a Fix, file: &SourceFile) -> JsonFix<'a> {
        let position = |offset: u32| {
            let (line, column) = file.line_col(offset);
            Position {
                line,
                column,
                offset,
            }
        };
        JsonFix {
            applicability: fix.applicability.as_str(),
            message: &fix.message,
            edits: fix
                .edits
                .iter()
                .map(|e| JsonEdit {
                    start: position(e.span.start),
                    end: position(e.span.end),
                    content: &e.replacement,
                })
                .collect(),
        }
    }
}

impl<'a> JsonDiagnostic<'a> {
    fn of(d: &'a Diagnostic, file: &SourceFile, path: String) -> JsonDiagnostic<'a> {
        let region = Region::of(d.span, file);
        JsonDiagnostic {
            code: d.code,
            lint: d.name,
            severity: d.severity.as_str(),
            file: path,
            line: region.start_line,
            column: region.start_column,
            message: &d.message,
            witness: &d.witness,
            confirmed: Verdict::confirmed(d.verdict),
            verdict: d.verdict.map(Verdict::as_str),
            replay: d.replay.as_deref(),
            fix: d.fix.as_ref().map(|f| JsonFix::of(f, file)),
        }
    }
}

/// One JSON document with every diagnostic, load errors included, and the
/// summary; pretty-printed, with a final newline.
pub fn json(reports: &[FileReport]) -> String {
    super::to_text(|out| write_json(reports, out))
}

/// `json`, written to `out` as it is made.
pub fn write_json(reports: &[FileReport], out: &mut dyn Write) -> std::io::Result<()> {
    let document = Document {
        diagnostics: Diagnostics(reports),
        summary: Summary::of(reports),
    };
    super::write_pretty_json(&document, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::reports;

    #[test]
    fn json_document_has_the_spec_shape() {
        let text = json(&reports());
        insta::assert_snapshot!(text);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["summary"]["errors"], 2);
        assert_eq!(value["diagnostics"][1]["witness"][1], "PAGO*");
        assert_eq!(value["diagnostics"][2]["lint"], "syntax-error");
        assert_eq!(
            value["diagnostics"][2]["confirmed"],
            serde_json::Value::Null
        );
        let fix = &value["diagnostics"][0]["fix"];
        assert_eq!(fix["applicability"], "unsafe");
        assert_eq!(fix["edits"][0]["start"], fix["edits"][0]["end"]);
        assert_eq!(
            fix["edits"][0]["start"]["offset"],
            crate::report::tests::PEDIDO.len()
        );
        assert_eq!(value["diagnostics"][1]["fix"], serde_json::Value::Null);
    }
}
