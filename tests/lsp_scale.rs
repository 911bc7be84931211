//! The language server on large files (issue 31): hover, definition and
//! the outline answered while the lint runs, a cap on the diagnostics sent,
//! and what the server holds after a close. Every assertion is on the order
//! or the content of messages, none on how long anything took.

use lsp_types::{self as lsp, request};
use serde_json::{Value, json};

use crate::support::lsp_client::{Client, position};
use crate::support::machines::regions;

/// A `regions` machine whose lint takes seconds in a debug build and its
/// parse a small part of that: long enough that a request sent with the
/// open is read by the server long before the lint could end.
const LARGE: usize = 6_000;

fn text_position(uri: &lsp::Uri, line: u32, character: u32) -> lsp::TextDocumentPositionParams {
    lsp::TextDocumentPositionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        position: position(line, character),
    }
}

/// The line of the first line of `text` that is `line` exactly.
fn line_of(text: &str, line: &str) -> u32 {
    text.lines()
        .position(|l| l == line)
        .expect("the line is in the text") as u32
}

fn status(client: &mut Client) -> Value {
    client
        .request_result("idemchart/status", json!(null))
        .expect("the server's status")
}

#[test]
fn hover_definition_and_symbols_answer_before_the_lint_ends() {
    let mut client = Client::start("scale_hover", json!({}));
    let text = regions(LARGE);
    let uri = client.open("regions.yaml", &text);
    let g0 = line_of(&text, "  g0:");
    // `E1: b` in g0's first state: its target is g0's `b`.
    let target = line_of(&text, "          E1: b");
    let b = line_of(&text, "      b:");
    let hover = client.request::<request::HoverRequest>(lsp::HoverParams {
        text_document_position_params: text_position(&uri, g0, 3),
        work_done_progress_params: Default::default(),
    });
    assert!(
        !client.has_unclaimed("textDocument/publishDiagnostics"),
        "the hover waited for the lint"
    );
    let Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(markup),
        ..
    }) = hover
    else {
        panic!("no hover on g0: {hover:?}");
    };
    assert!(
        markup.value.contains("state `g0` (compound)"),
        "{}",
        markup.value
    );
    let definition = client.request::<request::GotoDefinition>(lsp::GotoDefinitionParams {
        text_document_position_params: text_position(&uri, target, 14),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let Some(lsp::GotoDefinitionResponse::Scalar(location)) = definition else {
        panic!("no definition of b: {definition:?}");
    };
    assert_eq!(location.range.start, position(b, 6));
    let symbols = client.request::<request::DocumentSymbolRequest>(lsp::DocumentSymbolParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let Some(lsp::DocumentSymbolResponse::Nested(symbols)) = symbols else {
        panic!("no outline: {symbols:?}");
    };
    assert_eq!(
        symbols
            .iter()
            .filter(|s| s.kind == lsp::SymbolKind::CLASS)
            .count(),
        LARGE / 5,
        "one outline entry a region"
    );
    assert!(
        !client.has_unclaimed("textDocument/publishDiagnostics"),
        "the outline waited for the lint"
    );
    // The lint's findings come after, and a request that needs them (the
    // pulled diagnostics, code actions, ...) still waits for them.
    assert!(!client.diagnostics(&uri).is_empty());
    client.shutdown();
}

/// A machine with many findings: the same lints fire in every region.
fn findings_machine() -> String {
    regions(25)
}

#[test]
fn diagnostics_past_the_cap_are_counted_in_one() {
    let text = findings_machine();
    // The whole list, with no cap to speak of.
    let mut client = Client::start_with(
        "scale_cap",
        json!({}),
        json!({ "maxDiagnostics": 1_000_000 }),
        idemchart::lsp::Options::default(),
    );
    let uri = client.open("regions.yaml", &text);
    let all = client.diagnostics(&uri);
    client.shutdown();
    assert!(all.len() > 3, "{} diagnostics", all.len());
    let mut client = Client::start_with(
        "scale_cap",
        json!({}),
        json!({ "maxDiagnostics": 3 }),
        idemchart::lsp::Options::default(),
    );
    let uri = client.open("regions.yaml", &text);
    let capped = client.diagnostics(&uri);
    client.shutdown();
    assert_eq!(capped.len(), 4);
    assert_eq!(capped[..3], all[..3]);
    let summary = &capped[3];
    assert_eq!(summary.severity, Some(lsp::DiagnosticSeverity::INFORMATION));
    assert_eq!(summary.range, lsp::Range::default());
    assert_eq!(summary.code, None);
    let more = all.len() - 3;
    assert!(
        summary.message.starts_with(&format!(
            "{more} more diagnostics are not shown: the editor is sent the first 3 of {}.",
            all.len()
        )),
        "{}",
        summary.message
    );
    assert!(
        summary.message.contains("`idemchart lint ") && summary.message.contains("regions.yaml`"),
        "{}",
        summary.message
    );
}

#[test]
fn pulled_diagnostics_have_the_cap_too() {
    let text = findings_machine();
    let mut client = Client::start_with(
        "scale_cap_pull",
        json!({ "textDocument": { "diagnostic": {} } }),
        json!({ "maxDiagnostics": 2 }),
        idemchart::lsp::Options::default(),
    );
    let uri = client.open("regions.yaml", &text);
    let report =
        client.request::<request::DocumentDiagnosticRequest>(lsp::DocumentDiagnosticParams {
            text_document: lsp::TextDocumentIdentifier { uri },
            identifier: None,
            previous_result_id: None,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        });
    let lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(report)) =
        report
    else {
        panic!("not a full report: {report:?}");
    };
    let items = report.full_document_diagnostic_report.items;
    assert_eq!(items.len(), 3);
    assert_eq!(
        items[2].severity,
        Some(lsp::DiagnosticSeverity::INFORMATION)
    );
    assert!(items[2].message.contains("more diagnostics are not shown"));
    client.shutdown();
}

#[test]
fn a_closed_document_leaves_nothing_held() {
    let mut client = Client::start("scale_close", json!({}));
    let before = status(&mut client);
    let uri = client.open("regions.yaml", &findings_machine());
    let other = client.open("other.yaml", "machine: m\ninitial: a\nstates:\n  a: {}\n");
    client.diagnostics(&uri);
    client.diagnostics(&other);
    let open = status(&mut client);
    assert_eq!(
        (open["documents"].as_u64(), open["analyses"].as_u64()),
        (Some(2), Some(2)),
        "{open}"
    );
    assert_eq!(open["configs"], 1, "{open}");
    client.close(&uri);
    assert!(client.diagnostics(&uri).is_empty());
    let one = status(&mut client);
    assert_eq!(
        (one["documents"].as_u64(), one["trees"].as_u64()),
        (Some(1), Some(1)),
        "{one}"
    );
    assert_eq!(one["configs"], 1, "{one}");
    client.close(&other);
    assert!(client.diagnostics(&other).is_empty());
    let closed = status(&mut client);
    for held in [
        "documents",
        "textBytes",
        "analyses",
        "trees",
        "waiting",
        "configs",
        "running",
    ] {
        assert_eq!(closed[held], 0, "{held} after every close: {closed}");
        assert_eq!(before[held], 0, "{held} before any open: {before}");
    }
    client.shutdown();
}

#[test]
fn a_close_stops_the_lint_of_the_document() {
    let mut client = Client::start("scale_close_running", json!({}));
    let text = regions(LARGE);
    let uri = client.open("regions.yaml", &text);
    // Answered once the text is parsed, before the lint ends: the lint is
    // running when the close comes.
    client.request::<request::HoverRequest>(lsp::HoverParams {
        text_document_position_params: text_position(&uri, line_of(&text, "  g0:"), 3),
        work_done_progress_params: Default::default(),
    });
    assert!(!client.has_unclaimed("textDocument/publishDiagnostics"));
    client.close(&uri);
    assert!(client.diagnostics(&uri).is_empty());
    // The worker reports back once the lint stopped.
    let done = loop {
        let now = status(&mut client);
        if now["running"] == 0 {
            break now;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(done["cancelled"], 1, "the lint ran to its end: {done}");
    assert_eq!(done["documents"], 0, "{done}");
    client.shutdown();
}
