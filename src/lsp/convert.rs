//! Between our types (byte offsets, spans, edits, diagnostics) and the
//! protocol's: the one place that knows `lsp-types`, apart from the loop.
//!
//! A protocol position is a line and a character offset in that line, in
//! the units the client and the server agreed on: UTF-8 bytes when the
//! client offers them, else UTF-16 code units (the protocol's default).

use std::path::{Path, PathBuf};

use lsp_types as lsp;

use crate::diagnostic::Edit;
use crate::diagnostic::{Diagnostic, Severity};
use crate::span::{SourceFile, Span};

/// The units of the character offset of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionEncoding {
    Utf8,
    Utf16,
}

impl PositionEncoding {
    /// UTF-8 when the client offers it (no conversion at all), else UTF-16,
    /// which every client understands.
    pub(super) fn negotiate(capabilities: &lsp::ClientCapabilities) -> PositionEncoding {
        let offered = capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref());
        match offered {
            Some(kinds) if kinds.contains(&lsp::PositionEncodingKind::UTF8) => {
                PositionEncoding::Utf8
            }
            _ => PositionEncoding::Utf16,
        }
    }

    pub(super) fn kind(self) -> lsp::PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => lsp::PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => lsp::PositionEncodingKind::UTF16,
        }
    }

    /// The length of `text` in these units.
    fn len(self, text: &str) -> usize {
        match self {
            PositionEncoding::Utf8 => text.len(),
            PositionEncoding::Utf16 => text.encode_utf16().count(),
        }
    }
}

/// The position of byte `offset` of `file`.
pub(super) fn position(
    file: &SourceFile,
    offset: u32,
    encoding: PositionEncoding,
) -> lsp::Position {
    let offset = offset.min(file.text.len() as u32);
    let starts = file.line_starts();
    let line = starts.partition_point(|&s| s <= offset) - 1;
    let start = starts[line] as usize;
    let mut end = offset as usize;
    while !file.text.is_char_boundary(end) {
        end -= 1;
    }
    lsp::Position {
        line: line as u32,
        character: encoding.len(&file.text[start..end]) as u32,
    }
}

/// The byte offset of `position` in `text` (whose line starts are
/// `starts`): a character past the end of its line means the line's end,
/// a line past the last means the end of the text, and an offset inside a
/// character (half of a UTF-16 pair) the character's start.
fn offset_in(
    text: &str,
    starts: &[u32],
    position: lsp::Position,
    encoding: PositionEncoding,
) -> usize {
    let Some(&start) = starts.get(position.line as usize) else {
        return text.len();
    };
    let start = start as usize;
    let line_end = starts
        .get(position.line as usize + 1)
        .map(|&s| s as usize - 1)
        .unwrap_or(text.len());
    let line = &text[start..line_end];
    let wanted = position.character as usize;
    let mut units = 0;
    for (i, c) in line.char_indices() {
        let width = match encoding {
            PositionEncoding::Utf8 => c.len_utf8(),
            PositionEncoding::Utf16 => c.len_utf16(),
        };
        if units + width > wanted {
            return start + i;
        }
        units += width;
    }
    // A `\r` before the `\n` belongs to the line ending, not to the line.
    start + line.strip_suffix('\r').map_or(line.len(), str::len)
}

/// The byte offset of `position` in `file`.
pub(super) fn offset(
    file: &SourceFile,
    position: lsp::Position,
    encoding: PositionEncoding,
) -> u32 {
    offset_in(&file.text, file.line_starts(), position, encoding) as u32
}

pub(super) fn range(file: &SourceFile, span: Span, encoding: PositionEncoding) -> lsp::Range {
    lsp::Range {
        start: position(file, span.start, encoding),
        end: position(file, span.end, encoding),
    }
}

pub(super) fn span(file: &SourceFile, range: lsp::Range, encoding: PositionEncoding) -> Span {
    Span::new(
        offset(file, range.start, encoding) as usize,
        offset(file, range.end, encoding) as usize,
    )
}

/// Applies one change of `textDocument/didChange` to `text`: the whole new
/// text, or a range replaced (incremental sync).
pub(super) fn apply_change(
    text: &mut String,
    change: lsp::TextDocumentContentChangeEvent,
    encoding: PositionEncoding,
) {
    match change.range {
        // Copied, as the opened text is (`server.rs`): the reader thread's
        // allocation goes back to it at once.
        None => *text = change.text.as_str().to_owned(),
        Some(range) => {
            let mut starts = vec![0u32];
            starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
            let start = offset_in(text, &starts, range.start, encoding);
            let end = offset_in(text, &starts, range.end, encoding).max(start);
            text.replace_range(start..end, &change.text);
        }
    }
}

pub(super) fn text_edits(
    file: &SourceFile,
    edits: &[Edit],
    encoding: PositionEncoding,
) -> Vec<lsp::TextEdit> {
    edits
        .iter()
        .map(|edit| lsp::TextEdit {
            range: range(file, edit.span, encoding),
            new_text: edit.replacement.clone(),
        })
        .collect()
}

/// A workspace edit of one document.
// lsp-types keys the changes by `Uri`, whose parsed form clippy takes for
// interior mutability; nothing mutates it.
#[allow(clippy::mutable_key_type)]
pub(super) fn workspace_edit(
    uri: &lsp::Uri,
    file: &SourceFile,
    edits: &[Edit],
    encoding: PositionEncoding,
) -> lsp::WorkspaceEdit {
    let mut changes = std::collections::HashMap::new();
    changes.insert(uri.clone(), text_edits(file, edits, encoding));
    lsp::WorkspaceEdit {
        changes: Some(changes),
        ..Default::default()
    }
}

/// Where the documentation of each lint is, as the diagnostics link it:
/// the template of the client's `lintDocs` option (`{code}` and `{name}`
/// replaced), else the page the server wrote for the lint. Each link is
/// made once per server: a publish links every finding, and finding the
/// page asks the file system.
#[derive(Debug, Default)]
pub(super) struct LintDocs {
    template: Option<String>,
    links: std::sync::Mutex<std::collections::HashMap<&'static str, Option<lsp::Uri>>>,
}

impl LintDocs {
    pub(super) fn new(template: Option<String>) -> LintDocs {
        LintDocs {
            template,
            links: Default::default(),
        }
    }

    /// The link of lint `code` named `name` (a code has one name).
    fn link(&self, code: &'static str, name: &str) -> Option<lsp::Uri> {
        self.links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(code)
            .or_insert_with(|| self.make(code, name))
            .clone()
    }

    fn make(&self, code: &str, name: &str) -> Option<lsp::Uri> {
        let text = match &self.template {
            Some(template) => template.replace("{code}", code).replace("{name}", name),
            None => {
                let page = super::server::lint_page(code)?;
                uri_of(&page)?.as_str().to_string()
            }
        };
        text.parse().ok()
    }
}

/// The protocol's diagnostic for ours, as it is written: the fields, names
/// and order of `lsp::Diagnostic`, borrowed from ours rather than copied
/// into that type (a publish writes every finding of the file). The code
/// links to its lint's documentation, the witness and the help are in the
/// message, the labels are the related information.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProtocolDiagnostic<'a> {
    range: lsp::Range,
    severity: lsp::DiagnosticSeverity,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code_description: Option<lsp::CodeDescription>,
    source: &'static str,
    message: std::borrow::Cow<'a, str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    related_information: Vec<RelatedInformation<'a>>,
}

/// `lsp::DiagnosticRelatedInformation`, borrowed.
#[derive(serde::Serialize)]
struct RelatedInformation<'a> {
    location: Location<'a>,
    message: &'a str,
}

/// `lsp::Location`, borrowed.
#[derive(serde::Serialize)]
struct Location<'a> {
    uri: &'a lsp::Uri,
    range: lsp::Range,
}

impl ProtocolDiagnostic<'_> {
    /// The diagnostic as the protocol's type, for the answers that hold
    /// one (a quick fix names the diagnostic it fixes).
    pub(super) fn typed(&self) -> lsp::Diagnostic {
        // Both sides are the protocol's shape (the tests below): no
        // diagnostic fails this.
        serde_json::to_value(self)
            .and_then(serde_json::from_value)
            .expect("a diagnostic in the protocol's shape")
    }
}

pub(super) fn diagnostic<'a>(
    uri: &'a lsp::Uri,
    file: &SourceFile,
    diagnostic: &'a Diagnostic,
    encoding: PositionEncoding,
    docs: &LintDocs,
) -> ProtocolDiagnostic<'a> {
    let witness = crate::report::witness_line(diagnostic);
    let message = match (witness, &diagnostic.help) {
        (None, None) => std::borrow::Cow::Borrowed(diagnostic.message.as_str()),
        (witness, help) => {
            let mut message = diagnostic.message.clone();
            if let Some(witness) = witness {
                message.push_str("\nwitness: ");
                message.push_str(&witness);
            }
            if let Some(help) = help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            std::borrow::Cow::Owned(message)
        }
    };
    ProtocolDiagnostic {
        range: range(file, diagnostic.span, encoding),
        severity: match diagnostic.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            Severity::Note => lsp::DiagnosticSeverity::INFORMATION,
        },
        code: Some(diagnostic.code),
        code_description: docs
            .link(diagnostic.code, diagnostic.name)
            .map(|href| lsp::CodeDescription { href }),
        source: "idemchart",
        message,
        related_information: diagnostic
            .labels
            .iter()
            .map(|label| RelatedInformation {
                location: Location {
                    uri,
                    range: range(file, label.span, encoding),
                },
                message: &label.message,
            })
            .collect(),
    }
}

/// The diagnostic sent after the first `total - more` of a file's `total`
/// in place of the `more` others: at the top of the file, with the command
/// that reports them all.
pub(super) fn left_out(more: usize, total: usize, path: &str) -> ProtocolDiagnostic<'static> {
    ProtocolDiagnostic {
        range: lsp::Range::default(),
        severity: lsp::DiagnosticSeverity::INFORMATION,
        code: None,
        code_description: None,
        source: "idemchart",
        message: std::borrow::Cow::Owned(format!(
            "{more} more diagnostics are not shown: the editor is sent the first {} of {total}. \
             `idemchart lint {path}` reports them all (the limit is the server's \
             `maxDiagnostics` option).",
            total - more
        )),
        related_information: Vec::new(),
    }
}

/// The JSON of `envelope`, a protocol structure whose list of diagnostics
/// (its member `member`) is left empty, with `diagnostics` as that list:
/// the protocol's types shape the message, ours its diagnostics.
pub(super) fn with_diagnostics(
    envelope: impl serde::Serialize,
    member: &str,
    diagnostics: &[ProtocolDiagnostic],
) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(envelope)?;
    // The member keeps its place among the others.
    value[member] = serde_json::to_value(diagnostics)?;
    Ok(value)
}

/// The local path of a `file:` URI, percent-escapes decoded.
pub(super) fn path_of(uri: &lsp::Uri) -> Option<PathBuf> {
    let text = uri.as_str();
    let rest = text.strip_prefix("file://")?;
    // `file:///path` on Unix; a host part other than empty or localhost is
    // not a local file.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = rest
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            decoded.push(byte);
            i += 3;
            continue;
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    let path = String::from_utf8(decoded).ok()?;
    // Windows paths come as `/C:/...`.
    let path = match path.as_bytes() {
        [b'/', drive, b':', ..] if drive.is_ascii_alphabetic() && cfg!(windows) => {
            path[1..].to_string()
        }
        _ => path,
    };
    Some(PathBuf::from(path))
}

/// The `file:` URI of an absolute path, escaped as SARIF reports write it.
pub(super) fn uri_of(path: &Path) -> Option<lsp::Uri> {
    let text = path.to_str()?;
    if !text.starts_with('/') {
        return None;
    }
    crate::report::sarif::uri(text).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, character: u32) -> lsp::Position {
        lsp::Position { line, character }
    }

    #[test]
    fn columns_count_bytes_or_utf16_units() {
        // `ñ` is 2 bytes and 1 UTF-16 unit; `😀` is 4 bytes and 2 units;
        // `中` 3 bytes and 1 unit.
        let file = SourceFile::new("m.yaml", "a: señal\n# 中文 😀 x\n");
        let x = file.text.find('x').unwrap() as u32;
        assert_eq!(position(&file, x, PositionEncoding::Utf8), at(1, 14));
        assert_eq!(position(&file, x, PositionEncoding::Utf16), at(1, 8));
        for encoding in [PositionEncoding::Utf8, PositionEncoding::Utf16] {
            for (at, _) in file.text.char_indices() {
                let p = position(&file, at as u32, encoding);
                assert_eq!(offset(&file, p, encoding), at as u32, "{encoding:?} {p:?}");
            }
        }
        // Past the end of a line is the line's end; past the last line, the end.
        assert_eq!(offset(&file, at(0, 99), PositionEncoding::Utf16), 9);
        assert_eq!(
            offset(&file, at(9, 0), PositionEncoding::Utf16),
            file.text.len() as u32
        );
    }

    #[test]
    fn diagnostics_are_written_as_the_protocols_type_writes_them() {
        // A workflow with findings that have witnesses, help and labels,
        // and a machine whose load errors have neither.
        let texts = [
            include_str!("../../bench/machines/fulfilment.yaml"),
            "machine: m\ninitial: a\nstates:\n  a: { on: { E: { target: nowhere } } }\n  b: 3\n",
        ];
        let path = Path::new("m.yaml");
        let config = crate::config::Config::defaults(PathBuf::from("."));
        let never = std::sync::atomic::AtomicBool::new(false);
        let kind = super::super::Kind::of_path(path).unwrap();
        let analyses: Vec<_> = texts
            .iter()
            .map(|text| super::super::analyze(path, text.to_string(), kind, &config, &never))
            .map(Option::unwrap)
            .collect();
        let found: Vec<_> = analyses.iter().flat_map(|a| &a.diagnostics).collect();
        assert!(found.iter().any(|d| !d.witness.is_empty()));
        assert!(found.iter().any(|d| d.help.is_some()));
        assert!(found.iter().any(|d| !d.labels.is_empty()));
        assert!(
            found
                .iter()
                .any(|d| d.labels.is_empty() && d.help.is_none())
        );
        let uri: lsp::Uri = "file:///w/m.yaml".parse().unwrap();
        for docs in [
            LintDocs::default(),
            LintDocs::new(Some("https://d/{code}".into())),
        ] {
            for analysis in &analyses {
                for d in &analysis.diagnostics {
                    let ours = diagnostic(&uri, &analysis.file, d, PositionEncoding::Utf16, &docs);
                    let json = serde_json::to_string(&ours).unwrap();
                    // The protocol's type reads every member and writes them
                    // back in its own order.
                    assert_eq!(serde_json::to_string(&ours.typed()).unwrap(), json);
                }
                // A publish, the whole message: the envelope's members
                // keep their places.
                let ours: Vec<_> = (analysis.diagnostics.iter())
                    .map(|d| diagnostic(&uri, &analysis.file, d, PositionEncoding::Utf16, &docs))
                    .collect();
                let publish = |diagnostics| lsp::PublishDiagnosticsParams {
                    uri: uri.clone(),
                    diagnostics,
                    version: Some(3),
                };
                let written = with_diagnostics(publish(Vec::new()), "diagnostics", &ours).unwrap();
                let typed = publish(ours.iter().map(ProtocolDiagnostic::typed).collect());
                assert_eq!(
                    serde_json::to_string(&written).unwrap(),
                    serde_json::to_string(&typed).unwrap()
                );
            }
        }
    }

    #[test]
    fn incremental_changes_replace_their_range() {
        let mut text = "estado: señal\nx: 1\n".to_string();
        let change = lsp::TextDocumentContentChangeEvent {
            range: Some(lsp::Range {
                start: at(0, 11),
                end: at(0, 13),
            }),
            range_length: None,
            text: "es".into(),
        };
        apply_change(&mut text, change, PositionEncoding::Utf16);
        assert_eq!(text, "estado: señes\nx: 1\n");
    }

    #[test]
    fn file_uris_round_trip() {
        let path = Path::new("/tmp/a b/señal#1.yaml");
        let uri = uri_of(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20b/se%C3%B1al%231.yaml");
        assert_eq!(path_of(&uri).unwrap(), path);
        assert_eq!(path_of(&"untitled:1".parse().unwrap()), None);
    }
}
