//! The language server end to end: the real server on a thread, driven by
//! an in-memory client; every answer is an insta JSON snapshot.

use crate::support::lsp_client;

use lsp_client::{Client, apply_edits, position, range};
use lsp_types::{self as lsp, notification, request};
use serde_json::{Value, json};

/// An order whose payments add up: a repeated payment counts twice, and
/// the receipt goes out twice. `RECORDAR` is used but not declared.
const PEDIDO: &str = r#"# Un pedido: cada pago suma su importe.
machine: pedido
context:
  cobrado: 0
sources:
  pasarela: { retry_horizon: 72h }
events:
  PAGO: { id: pagoId, source: pasarela, payload: { pagoId: string, importe: integer } }
  CANCELAR: { id: motivo }
effects:
  enviarRecibo: { idempotency: none }
initial: abierto
states:
  abierto:
    entry: [enviarRecibo]
    on:
      PAGO:
        actions:
          - assign:
              cobrado: "context.cobrado + event.importe"
      CANCELAR: cancelado
      RECORDAR: {}
  cancelado:
    type: final
"#;

/// The same machine in the DSL.
const PEDIDO_CHART: &str = r#"machine pedido
context {
  cobrado = 0
}
event PAGO(pagoId: string, importe: integer) id pagoId
event CANCELAR id motivo
initial abierto
state abierto {
  on PAGO {
    cobrado = context.cobrado + event.importe
  }
  on CANCELAR -> cancelado
}
final cancelado
"#;

fn capabilities() -> Value {
    json!({})
}

/// The value as JSON with the test's directory and the server's lint
/// pages written as placeholders.
fn redacted(client: &Client, value: impl serde::Serialize) -> Value {
    let text = serde_json::to_string(&value).expect("json");
    let dir = client.dir.display().to_string();
    let lints = std::env::temp_dir()
        .join("idemchart-lints-")
        .display()
        .to_string();
    let text = text
        .replace(&dir, "[DIR]")
        .replace(&lints, "[LINT-PAGES]/idemchart-lints-");
    serde_json::from_str(&text).expect("json")
}

macro_rules! snapshot {
    ($client:expr, $name:expr, $value:expr) => {
        insta::assert_json_snapshot!($name, redacted(&$client, &$value))
    };
}

fn code(diagnostic: &lsp::Diagnostic) -> String {
    match &diagnostic.code {
        Some(lsp::NumberOrString::String(code)) => code.clone(),
        _ => String::new(),
    }
}

fn codes(diagnostics: &[lsp::Diagnostic]) -> Vec<String> {
    diagnostics.iter().map(code).collect()
}

#[test]
fn diagnostics_follow_open_change_and_close() {
    let mut client = Client::start("push", capabilities());
    assert_eq!(
        client.initialize.capabilities.position_encoding,
        Some(lsp::PositionEncodingKind::UTF16),
        "UTF-16 when the client offers nothing else"
    );
    let uri = client.open("pedido.yaml", PEDIDO);
    let opened = client.diagnostics(&uri);
    snapshot!(client, "push_opened", opened);

    // Declaring `RECORDAR` (an incremental change) removes its finding.
    client.change(&uri, 1, (9, 0), (9, 0), "  RECORDAR: { id: vez }\n");
    let declared = client.diagnostics(&uri);
    assert!(codes(&opened).contains(&"S005".to_string()));
    assert!(
        !codes(&declared).contains(&"S005".to_string()),
        "{declared:#?}"
    );

    // A file that does not load shows its load errors, not stale findings.
    client.change(&uri, 2, (21, 16), (21, 25), "cancelaado");
    let broken = client.diagnostics(&uri);
    snapshot!(client, "push_load_error", broken);

    client.close(&uri);
    assert_eq!(client.diagnostics(&uri), Vec::new());

    // Other YAML (no top-level `machine:`) gets no diagnostics.
    let other = client.open("compose.yaml", "services:\n  web: { image: nginx }\n");
    assert_eq!(client.diagnostics(&other), Vec::new());
    client.shutdown();
}

#[test]
fn a_newer_edit_replaces_the_pending_run() {
    // A debounce longer than the edits: the first edit after the pause is
    // analysed at once (and published if it ends before the next edit
    // stops it); the second waits in the burst and is replaced by the
    // third, whose text is the one published last.
    let options = idemchart::lsp::Options {
        debounce: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let mut client = Client::start_with("debounce", capabilities(), json!(null), options);
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    for (version, name) in ["RECORDAR1", "RECORDAR2", "RECORDAR3"].iter().enumerate() {
        let written = if version == 0 { 8 } else { 9 };
        client.change(&uri, version as i32 + 1, (21, 6), (21, 6 + written), name);
    }
    let mut published = Vec::new();
    let last = loop {
        let diagnostics = client.diagnostics(&uri);
        let messages: Vec<String> = diagnostics.iter().map(|d| d.message.clone()).collect();
        published.push(messages.clone());
        if messages.iter().any(|m| m.contains("RECORDAR3")) || published.len() == 2 {
            break messages;
        }
    };
    assert!(
        last.iter().any(|m| m.contains("RECORDAR3")),
        "{published:#?}"
    );
    assert!(
        !published.concat().iter().any(|m| m.contains("RECORDAR2")),
        "the pending run was published: {published:#?}"
    );
    client.shutdown();
}

#[test]
fn pulled_diagnostics_when_the_client_offers_them() {
    let mut client = Client::start("pull", json!({ "textDocument": { "diagnostic": {} } }));
    assert!(client.initialize.capabilities.diagnostic_provider.is_some());
    let uri = client.open("pedido.yaml", PEDIDO);
    let report =
        client.request::<request::DocumentDiagnosticRequest>(lsp::DocumentDiagnosticParams {
            text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
            identifier: None,
            previous_result_id: None,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        });
    snapshot!(client, "pull_report", report);
    // No diagnostics are pushed to a client that pulls; closing clears them.
    client.close(&uri);
    assert_eq!(client.diagnostics(&uri), Vec::new());
    client.shutdown();
}

/// A state named `señal`, a comment in Chinese and an emoji before an
/// unknown target on the same line.
const NON_ASCII: &str =
    "machine: m\ninitial: señal\nstates:\n  señal: { on: { GO: 中文😀 } } # 中文 😀\n  otro: {}\n";

#[test]
fn positions_are_right_after_non_ascii_text_in_both_encodings() {
    for (name, offered) in [
        (
            "utf8",
            json!({ "general": { "positionEncodings": ["utf-8", "utf-16"] } }),
        ),
        (
            "utf16",
            json!({ "general": { "positionEncodings": ["utf-16"] } }),
        ),
    ] {
        let mut client = Client::start(name, offered);
        let uri = client.open("m.yaml", NON_ASCII);
        let diagnostics = client.diagnostics(&uri);
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        // `  señal: { on: { GO: ` is 21 UTF-16 units and 22 bytes.
        let start = diagnostics[0].range.start;
        let line = NON_ASCII.lines().nth(3).unwrap();
        let byte = line.find("中文😀").unwrap();
        let expected = match name {
            "utf8" => byte,
            _ => line[..byte].encode_utf16().count(),
        };
        assert_eq!(
            (start.line, start.character as usize),
            (3, expected),
            "{name}"
        );
        snapshot!(client, format!("positions_{name}"), diagnostics);
        // The hover on the state after the non-ASCII key comes back at it.
        let key = line.find("señal").unwrap();
        let at = match name {
            "utf8" => key,
            _ => line[..key].encode_utf16().count(),
        } as u32;
        let hover = client.request::<request::HoverRequest>(lsp::HoverParams {
            text_document_position_params: lsp::TextDocumentPositionParams {
                text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
                position: position(3, at + 1),
            },
            work_done_progress_params: Default::default(),
        });
        assert!(
            hover.is_none(),
            "the machine does not load, so states have no hover: {hover:?}"
        );
        client.shutdown();
    }
}

#[test]
fn a_changed_idemchart_toml_relints_the_open_files() {
    let mut client = Client::start("config", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    let before = client.diagnostics(&uri);
    assert!(codes(&before).contains(&"I005".to_string()));
    std::fs::write(
        client.path("idemchart.toml"),
        "[lints]\neffect-without-key = \"allow\"\n",
    )
    .unwrap();
    client.notify::<notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent {
            uri: client.uri("idemchart.toml"),
            typ: lsp::FileChangeType::CHANGED,
        }],
    });
    let after = client.diagnostics(&uri);
    assert!(!codes(&after).contains(&"I005".to_string()), "{after:#?}");
    assert_eq!(after.len(), before.len() - 1);
    client.shutdown();
}

fn code_actions(
    client: &mut Client,
    uri: &lsp::Uri,
    at: lsp::Range,
    only: Option<Vec<lsp::CodeActionKind>>,
) -> Vec<lsp::CodeAction> {
    let actions = client.request::<request::CodeActionRequest>(lsp::CodeActionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        range: at,
        context: lsp::CodeActionContext {
            diagnostics: Vec::new(),
            only,
            trigger_kind: None,
        },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    actions
        .unwrap_or_default()
        .into_iter()
        .map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => action,
            other => panic!("a command: {other:?}"),
        })
        .collect()
}

fn edits_of(action: &lsp::CodeAction, uri: &lsp::Uri) -> Vec<lsp::TextEdit> {
    action
        .edit
        .as_ref()
        .and_then(|e| e.changes.as_ref())
        .and_then(|c| c.get(uri))
        .cloned()
        .unwrap_or_default()
}

#[test]
fn quick_fixes_are_the_fix_engines() {
    let mut client = Client::start("actions", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    // On `RECORDAR`: its safe fix, preferred, and the allow.
    let actions = code_actions(&mut client, &uri, range((21, 8), (21, 8)), None);
    snapshot!(client, "actions_undeclared_event", actions);
    let declare = &actions[0];
    assert_eq!(declare.is_preferred, Some(true));
    let fixed = apply_edits(PEDIDO, &edits_of(declare, &uri));
    assert!(
        fixed.contains("  CANCELAR: { id: motivo }\n  RECORDAR: {}\n"),
        "{fixed}"
    );

    // On the cumulative update: the unsafe fix, not preferred, then allow.
    let actions = code_actions(
        &mut client,
        &uri,
        range((19, 15), (19, 15)),
        Some(vec![lsp::CodeActionKind::QUICKFIX]),
    );
    snapshot!(client, "actions_cumulative_update", actions);
    let allow = actions
        .iter()
        .find(|a| a.title.starts_with("Allow cumulative-update"))
        .expect("an allow");
    let allowed = apply_edits(PEDIDO, &edits_of(allow, &uri));
    client.change_all(&uri, 1, &allowed);
    let after = client.diagnostics(&uri);
    assert!(
        !codes(&after).contains(&"I004".to_string()),
        "{allowed}\n{after:#?}"
    );
    assert!(
        allowed.contains(
            "    allow:\n      cumulative-update: \"TODO: say why this finding is harmless here\"\n"
        ),
        "{allowed}"
    );

    // Every safe fix at once.
    client.change_all(&uri, 2, PEDIDO);
    client.diagnostics(&uri);
    let all = code_actions(
        &mut client,
        &uri,
        range((0, 0), (0, 0)),
        Some(vec![lsp::CodeActionKind::SOURCE_FIX_ALL]),
    );
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(
        all[0].kind,
        Some(lsp::CodeActionKind::new("source.fixAll.idemchart"))
    );
    let fixed_all = apply_edits(PEDIDO, &edits_of(&all[0], &uri));
    assert_eq!(fixed_all, fixed, "the safe fix, and only it");
    client.shutdown();
}

#[test]
fn allow_here_in_the_dsl() {
    let mut client = Client::start("dsl", capabilities());
    let uri = client.open("pedido.chart", PEDIDO_CHART);
    let diagnostics = client.diagnostics(&uri);
    snapshot!(client, "dsl_diagnostics", diagnostics);
    let i004 = diagnostics
        .iter()
        .find(|d| codes(std::slice::from_ref(d)) == ["I004"])
        .expect("I004");
    let actions = code_actions(&mut client, &uri, i004.range, None);
    let allow = actions
        .iter()
        .find(|a| a.title.starts_with("Allow cumulative-update"))
        .expect("an allow");
    let allowed = apply_edits(PEDIDO_CHART, &edits_of(allow, &uri));
    insta::assert_snapshot!("dsl_allowed", allowed);
    client.change_all(&uri, 1, &allowed);
    let after = client.diagnostics(&uri);
    assert!(!codes(&after).contains(&"I004".to_string()), "{after:#?}");
    client.shutdown();
}

fn at(uri: &lsp::Uri, line: u32, character: u32) -> lsp::TextDocumentPositionParams {
    lsp::TextDocumentPositionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        position: position(line, character),
    }
}

#[test]
fn a_document_whose_analysis_was_dropped_is_analysed_again_when_asked() {
    // One whole analysis kept (the last one always is): opening the second
    // document drops the first's, and a hover on the first analyses it again, without pushing
    // its diagnostics a second time (`shutdown` fails on any unclaimed
    // message).
    let options = idemchart::lsp::Options {
        keep_analyses_of_bytes: 0,
        ..Default::default()
    };
    let mut client = Client::start_with("evict", capabilities(), json!(null), options);
    let first = client.open("pedido.yaml", PEDIDO);
    let pushed = client.diagnostics(&first);
    let second = client.open(
        "otro.yaml",
        &PEDIDO.replace("machine: pedido", "machine: otro"),
    );
    client.diagnostics(&second);
    let hover = client.request::<request::HoverRequest>(lsp::HoverParams {
        text_document_position_params: at(&first, 13, 3),
        work_done_progress_params: Default::default(),
    });
    let hover = serde_json::to_string(&hover).unwrap();
    assert!(hover.contains("abierto"), "{hover}");
    // Asked again, the document's diagnostics are those pushed before.
    let pulled =
        client.request::<request::DocumentDiagnosticRequest>(lsp::DocumentDiagnosticParams {
            text_document: lsp::TextDocumentIdentifier { uri: first.clone() },
            identifier: None,
            previous_result_id: None,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        });
    let lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(report)) =
        pulled
    else {
        panic!("a full report: {pulled:?}");
    };
    assert_eq!(report.full_document_diagnostic_report.items, pushed);
    client.shutdown();
}

#[test]
fn hover_on_findings_states_events_and_effects() {
    let mut client = Client::start("hover", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    let mut hovers = Vec::new();
    // The finding on `cobrado`, the state `abierto`, the event `PAGO` in
    // `on:`, the effect in `entry`, the target `cancelado`.
    for (line, character) in [(19, 16), (13, 3), (16, 7), (14, 13), (20, 18), (7, 3)] {
        let hover = client.request::<request::HoverRequest>(lsp::HoverParams {
            text_document_position_params: at(&uri, line, character),
            work_done_progress_params: Default::default(),
        });
        hovers.push(json!({ "at": [line, character], "hover": hover }));
    }
    snapshot!(client, "hovers", hovers);
    client.shutdown();
}

#[test]
fn hover_and_definition_while_a_line_is_half_written() {
    let mut client = Client::start("half_written", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    let hover = |client: &mut Client, line, character| {
        client.request::<request::HoverRequest>(lsp::HoverParams {
            text_document_position_params: at(&uri, line, character),
            work_done_progress_params: Default::default(),
        })
    };
    let definition = |client: &mut Client, line, character| {
        client.request::<request::GotoDefinition>(lsp::GotoDefinitionParams {
            text_document_position_params: at(&uri, line, character),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    };
    let mut answers = Vec::new();
    // A flow mapping left open (the parse breaks on the next line), and a
    // key without its colon, each above the state `cancelado`.
    for (version, written) in [(1, "      RECORDAR: { id\n"), (2, "    ty\n")] {
        client.change_all(
            &uri,
            version,
            &PEDIDO.replace("      RECORDAR: {}\n", written),
        );
        let diagnostics = client.diagnostics(&uri);
        assert_eq!(codes(&diagnostics), ["E001"], "{diagnostics:#?}");
        // The state `abierto`, and from the target `cancelado` to its state.
        let on_state = hover(&mut client, 13, 3);
        let to_state = definition(&mut client, 20, 18);
        let refused = client
            .request_result(
                "textDocument/rename",
                serde_json::to_value(lsp::RenameParams {
                    text_document_position: at(&uri, 22, 3),
                    new_name: "anulado".into(),
                    work_done_progress_params: Default::default(),
                })
                .unwrap(),
            )
            .unwrap_err();
        answers.push(json!({
            "written": written,
            "diagnostic": diagnostics[0].message,
            "hover": on_state,
            "definition": to_state,
            "rename": refused.message,
        }));
    }
    snapshot!(client, "half_written", answers);
    client.shutdown();
}

#[test]
fn definition_references_symbols_and_rename() {
    let mut client = Client::start("navigation", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    let definition = |client: &mut Client, line, character| {
        client.request::<request::GotoDefinition>(lsp::GotoDefinitionParams {
            text_document_position_params: at(&uri, line, character),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    };
    // From the target `cancelado`, from `PAGO` in `on:`, from the effect in
    // `entry`, from `context.cobrado`.
    let definitions = json!([
        definition(&mut client, 20, 18),
        definition(&mut client, 16, 7),
        definition(&mut client, 14, 13),
        definition(&mut client, 19, 34),
    ]);
    snapshot!(client, "definitions", definitions);

    let references = client.request::<request::References>(lsp::ReferenceParams {
        text_document_position: at(&uri, 22, 3),
        context: lsp::ReferenceContext {
            include_declaration: true,
        },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    snapshot!(client, "references_of_a_state", references);

    let symbols = client.request::<request::DocumentSymbolRequest>(lsp::DocumentSymbolParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    snapshot!(client, "symbols", symbols);

    let rename = |client: &mut Client, line, character, name: &str| {
        client.request_result(
            "textDocument/rename",
            serde_json::to_value(lsp::RenameParams {
                text_document_position: at(&uri, line, character),
                new_name: name.into(),
                work_done_progress_params: Default::default(),
            })
            .unwrap(),
        )
    };
    let renamed: lsp::WorkspaceEdit =
        serde_json::from_value(rename(&mut client, 22, 3, "anulado").unwrap()).unwrap();
    let text = apply_edits(PEDIDO, &renamed.changes.unwrap()[&uri]);
    assert!(
        text.contains("CANCELAR: anulado") && text.contains("  anulado:\n    type: final"),
        "{text}"
    );
    let event: lsp::WorkspaceEdit =
        serde_json::from_value(rename(&mut client, 7, 3, "PAGO_RECIBIDO").unwrap()).unwrap();
    let text = apply_edits(PEDIDO, &event.changes.unwrap()[&uri]);
    assert!(
        text.contains("  PAGO_RECIBIDO: { id: pagoId") && text.contains("      PAGO_RECIBIDO:\n"),
        "{text}"
    );
    // Refused: onto a sibling's name, onto an event that exists.
    let refusals = json!([
        rename(&mut client, 22, 3, "abierto").unwrap_err().message,
        rename(&mut client, 7, 3, "CANCELAR").unwrap_err().message,
        rename(&mut client, 7, 3, "no vale").unwrap_err().message,
    ]);
    snapshot!(client, "rename_refusals", refusals);
    client.shutdown();
}

#[test]
fn prepare_rename_gives_the_name_or_the_refusal_of_rename() {
    let mut client = Client::start("prepare_rename", capabilities());
    assert_eq!(
        client.initialize.capabilities.rename_provider,
        Some(lsp::OneOf::Right(lsp::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        }))
    );
    // `abierto` is also named in an expression, which a rename would miss.
    let guarded = PEDIDO.replace(
        "      CANCELAR: cancelado\n",
        "      CANCELAR: { target: cancelado, guard: 'in_state(\"abierto\")' }\n",
    );
    let uri = client.open("pedido.yaml", &guarded);
    client.diagnostics(&uri);
    let mut prepare = |line, character| {
        let answer = client.request_result(
            "textDocument/prepareRename",
            serde_json::to_value(at(&uri, line, character)).unwrap(),
        );
        let answer = match answer {
            Ok(value) => json!({ "result": value }),
            Err(e) => json!({ "error": { "code": e.code, "message": e.message } }),
        };
        json!({ "at": [line, character], "answer": answer })
    };
    // The state `cancelado`, the target `cancelado`, the event `PAGO`
    // under `events:` and in `on:`, the state `abierto`, a comment, the
    // effect in `entry`.
    let answers: Vec<Value> = [
        (22, 3),
        (20, 28),
        (7, 3),
        (16, 7),
        (13, 3),
        (0, 3),
        (14, 13),
    ]
    .into_iter()
    .map(|(line, character)| prepare(line, character))
    .collect();
    // Each refusal is the one `rename` gives there.
    for (line, character) in [(13, 3), (0, 3), (14, 13)] {
        let refused = client
            .request_result(
                "textDocument/rename",
                serde_json::to_value(lsp::RenameParams {
                    text_document_position: at(&uri, line, character),
                    new_name: "otro".into(),
                    work_done_progress_params: Default::default(),
                })
                .unwrap(),
            )
            .unwrap_err();
        let prepared = answers
            .iter()
            .find(|a| a["at"] == json!([line, character]))
            .unwrap();
        assert_eq!(
            prepared["answer"]["error"]["message"],
            json!(refused.message)
        );
    }
    snapshot!(client, "prepare_rename", answers);
    client.shutdown();
}

#[test]
fn completion_of_targets_events_fields_and_keys() {
    let mut client = Client::start("completion", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    let complete =
        |client: &mut Client, line, character| completions(client, &uri, line, character);
    // After `CANCELAR: can` (a target), inside `context.co`, after
    // `event.im`, a new event under `on:`, a key of a state.
    client.change(&uri, 1, (20, 16), (20, 25), "can");
    let target = complete(&mut client, 20, 19);
    client.diagnostics(&uri);
    client.change(&uri, 2, (20, 16), (20, 19), "cancelado");
    let context = complete(&mut client, 19, 34);
    let payload = complete(&mut client, 19, 50);
    client.diagnostics(&uri);
    client.change(&uri, 3, (21, 0), (21, 0), "      CA\n");
    let event = complete(&mut client, 21, 8);
    client.diagnostics(&uri);
    client.change(&uri, 4, (21, 0), (22, 0), "    ty\n");
    let key = complete(&mut client, 21, 6);
    client.diagnostics(&uri);
    snapshot!(
        client,
        "completions",
        json!({
            "target": target, "context": context, "payload": payload, "event": event, "key": key
        })
    );
    client.shutdown();
}

/// The completions at a place: each label, detail and the columns it
/// replaces.
fn completions(client: &mut Client, uri: &lsp::Uri, line: u32, character: u32) -> Vec<Value> {
    let items = client.request::<request::Completion>(lsp::CompletionParams {
        text_document_position: at(uri, line, character),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: None,
    });
    match items {
        Some(lsp::CompletionResponse::Array(items)) => items
            .into_iter()
            .map(|i| {
                let edit = match i.text_edit {
                    Some(lsp::CompletionTextEdit::Edit(e)) => {
                        json!([e.range.start.character, e.range.end.character])
                    }
                    _ => json!(null),
                };
                json!({ "label": i.label, "kind": i.kind, "detail": i.detail, "replaces": edit })
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn labels(items: &[Value]) -> Vec<&str> {
    items.iter().filter_map(|i| i["label"].as_str()).collect()
}

#[test]
fn completion_of_keys_in_flow_style() {
    let mut client = Client::start("flow_completion", capabilities());
    let uri = client.open("pedido.yaml", PEDIDO);
    client.diagnostics(&uri);
    // A transition written in flow style, being written: its keys after
    // `, `, the states after `target: `; the keys of an event in flow
    // style; the events in `on: { ... }`.
    client.change(
        &uri,
        1,
        (20, 0),
        (21, 0),
        "      CANCELAR: { target: cancelado, gu }\n",
    );
    let transition = completions(&mut client, &uri, 20, 39);
    client.diagnostics(&uri);
    client.change(
        &uri,
        2,
        (20, 0),
        (21, 0),
        "      CANCELAR: { guard: \"true\", target: ca }\n",
    );
    let target = completions(&mut client, &uri, 20, 43);
    client.diagnostics(&uri);
    let event_keys = completions(&mut client, &uri, 7, 10);
    client.change(
        &uri,
        3,
        (15, 0),
        (22, 0),
        "    on: { CANCELAR: cancelado, PA }\n",
    );
    let events = completions(&mut client, &uri, 15, 33);
    client.diagnostics(&uri);
    assert_eq!(labels(&transition), ["guard"], "{transition:#?}");
    assert_eq!(labels(&target), ["cancelado"], "{target:#?}");
    assert!(
        ["id", "source", "payload"]
            .iter()
            .all(|k| labels(&event_keys).contains(k)),
        "{event_keys:#?}"
    );
    assert_eq!(labels(&events), ["PAGO"], "{events:#?}");
    snapshot!(
        client,
        "flow_completions",
        json!({ "transition": transition, "target": target, "event_keys": event_keys, "events": events })
    );
    client.shutdown();
}

#[test]
fn completion_of_keywords_in_the_dsl() {
    let mut client = Client::start("dsl_completion", capabilities());
    let uri = client.open("pedido.chart", PEDIDO_CHART);
    client.diagnostics(&uri);
    // An item of a state body begun; the parts after a transition's target;
    // a new top-level item; an action in a block.
    client.change(&uri, 1, (12, 0), (12, 0), "  ex\n");
    let item = completions(&mut client, &uri, 12, 4);
    client.diagnostics(&uri);
    client.change(&uri, 2, (12, 0), (13, 0), "  on CANCELAR -> cancelado \n");
    let after_target = completions(&mut client, &uri, 12, 27);
    client.diagnostics(&uri);
    client.change(&uri, 3, (12, 0), (13, 0), "");
    client.diagnostics(&uri);
    client.change(&uri, 4, (14, 0), (14, 0), "e\n");
    let top = completions(&mut client, &uri, 14, 1);
    client.diagnostics(&uri);
    client.change(&uri, 5, (14, 0), (15, 0), "");
    client.diagnostics(&uri);
    client.change(&uri, 6, (10, 0), (10, 0), "    ra\n");
    let action = completions(&mut client, &uri, 10, 6);
    client.diagnostics(&uri);
    assert_eq!(labels(&item), ["exit"], "{item:#?}");
    assert!(
        ["if", "reenter", "on", "state"]
            .iter()
            .all(|k| labels(&after_target).contains(k))
            && !labels(&after_target).contains(&"event"),
        "{after_target:#?}"
    );
    assert_eq!(
        labels(&top),
        ["effect", "entry", "event", "exit"],
        "{top:#?}"
    );
    assert_eq!(labels(&action), ["raise"], "{action:#?}");
    snapshot!(
        client,
        "dsl_keyword_completions",
        json!({ "item": item, "after_target": after_target, "top": top, "action": action })
    );
    client.shutdown();
}

#[test]
fn xstate_sources_get_diagnostics() {
    let mut client = Client::start("xstate", capabilities());
    let source = r#"import { createMachine } from "xstate";
export const door = createMachine({
  id: "door",
  initial: "closed",
  states: { closed: { on: { OPEN: "opend" } }, opened: {} },
});
"#;
    let uri = client.open("door.ts", source);
    let diagnostics = client.diagnostics(&uri);
    snapshot!(client, "xstate_diagnostics", diagnostics);
    client.shutdown();
}

/// An XState order: `CANCEL` is not declared, and a repeated `PAY` adds
/// its amount twice.
const ORDER_TS: &str = r#"import { createMachine, assign } from "xstate";

export const order = createMachine({
  id: "order",
  initial: "open",
  context: { paid: 0 },
  meta: {
    idemchart: {
      events: { PAY: { id: "payId" } },
    },
  },
  states: {
    open: {
      on: {
        PAY: {
          actions: assign({ paid: ({ context, event }) => context.paid + event.amount }),
        },
        CANCEL: { target: "cancelled" },
      },
    },
    cancelled: { type: "final" },
  },
});
"#;

/// Each action's title, whether it is preferred, and the text after it.
fn outcomes(actions: &[lsp::CodeAction], uri: &lsp::Uri, text: &str) -> Vec<Value> {
    actions
        .iter()
        .map(|a| {
            json!({
                "title": a.title,
                "preferred": a.is_preferred,
                "text": apply_edits(text, &edits_of(a, uri)),
            })
        })
        .collect()
}

#[test]
fn xstate_sources_get_the_fixes_and_allows_of_lint_fix() {
    let mut client = Client::start("xstate_fixes", capabilities());
    let uri = client.open("order.ts", ORDER_TS);
    let diagnostics = client.diagnostics(&uri);
    // The repeated `PAY` (I001) is folded into the I004 of its counter.
    assert_eq!(codes(&diagnostics), ["I004", "I006", "S005"]);

    // On `CANCEL`: the declaration (preferred), then the allows on `open`.
    let quickfix = || Some(vec![lsp::CodeActionKind::QUICKFIX]);
    let on_cancel = code_actions(&mut client, &uri, range((17, 8), (17, 8)), quickfix());
    snapshot!(
        client,
        "xstate_actions_on_cancel",
        outcomes(&on_cancel, &uri, ORDER_TS)
    );
    let declared = apply_edits(ORDER_TS, &edits_of(&on_cancel[0], &uri));
    assert!(
        declared.contains(r#"events: { PAY: { id: "payId" }, CANCEL: {} },"#),
        "{declared}"
    );

    // Every safe fix at once is what `idemchart lint --fix` writes.
    let all = code_actions(
        &mut client,
        &uri,
        range((0, 0), (0, 0)),
        Some(vec![lsp::CodeActionKind::SOURCE_FIX_ALL]),
    );
    assert_eq!(all.len(), 1, "{all:#?}");
    let path = client.path("order.ts");
    std::fs::write(&path, ORDER_TS).expect("the file written");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["lint", "--fix", "order.ts"])
        .current_dir(&client.dir)
        .output()
        .expect("idemchart runs");
    let by_the_cli = std::fs::read_to_string(&path).expect("the fixed file");
    assert_eq!(
        apply_edits(ORDER_TS, &edits_of(&all[0], &uri)),
        by_the_cli,
        "{status:?}"
    );
    assert_eq!(by_the_cli, declared);

    // The allow of the cumulative update is a comment above `open`, which
    // the next lint honours.
    let on_update = code_actions(&mut client, &uri, range((15, 28), (15, 28)), None);
    let allow = on_update
        .iter()
        .find(|a| a.title == "Allow cumulative-update on `open` with a reason")
        .expect("an allow");
    let allowed = apply_edits(ORDER_TS, &edits_of(allow, &uri));
    assert!(
        allowed.contains(
            "    // idemchart-allow cumulative-update: TODO: say why this finding is harmless here\n    open: {\n"
        ),
        "{allowed}"
    );
    client.change_all(&uri, 1, &allowed);
    let after = client.diagnostics(&uri);
    // Allowed, the update no longer covers the repeat, which stands alone.
    assert_eq!(codes(&after), ["I001", "I006", "S005"], "{after:#?}");

    // A finding on a declaration is allowed for the whole machine, in
    // `meta.idemchart.allow`.
    client.change_all(&uri, 2, &declared);
    let after_fix = client.diagnostics(&uri);
    let i006 = after_fix
        .iter()
        .find(|d| codes(std::slice::from_ref(d)) == ["I006"])
        .expect("I006 on the declaration");
    let on_declaration = code_actions(&mut client, &uri, i006.range, quickfix());
    snapshot!(
        client,
        "xstate_actions_on_a_declaration",
        outcomes(&on_declaration, &uri, &declared)
    );
    let for_machine = on_declaration
        .iter()
        .find(|a| a.title == "Allow event-without-id for the machine with a reason")
        .expect("an allow for the machine");
    let allowed = apply_edits(&declared, &edits_of(for_machine, &uri));
    client.change_all(&uri, 3, &allowed);
    let after = client.diagnostics(&uri);
    assert_eq!(codes(&after), ["I004"], "{allowed}\n{after:#?}");
    client.shutdown();
}

#[test]
fn xstate_json_gets_no_comment() {
    // JSON has no comments: a finding in a state gets no allow there. The
    // machine declares a fact, so its undeclared event is a finding.
    let mut client = Client::start("xstate_json", capabilities());
    let config = r#"{
  "id": "door",
  "meta": { "idemchart": { "dedup": { "retention": "7d" } } },
  "initial": "closed",
  "states": {
    "closed": {
      "on": { "OPEN": "opened" }
    },
    "opened": {}
  }
}
"#;
    let uri = client.open("door.json", config);
    let diagnostics = client.diagnostics(&uri);
    let s005 = diagnostics
        .iter()
        .find(|d| codes(std::slice::from_ref(d)) == ["S005"])
        .expect("S005");
    let actions = code_actions(
        &mut client,
        &uri,
        s005.range,
        Some(vec![lsp::CodeActionKind::QUICKFIX]),
    );
    snapshot!(
        client,
        "xstate_json_actions",
        outcomes(&actions, &uri, config)
    );
    client.shutdown();
}

/// An SCXML document is read as `idemchart lint` reads it: as written,
/// what cannot be imported (a `<script>`, another namespace's attributes)
/// an opaque part with its note, not a load error; the editor shows what
/// the CLI reports, code for code and line for line.
#[test]
fn scxml_documents_are_read_as_lint_reads_them() {
    let path = "tests/scxml/order-approval.scxml";
    let source = std::fs::read_to_string(path).expect("the SCXML fixture");
    let mut client = Client::start("scxml-as-written", capabilities());
    let uri = client.open("order-approval.scxml", &source);
    let mut editor: Vec<(String, u32)> = client
        .diagnostics(&uri)
        .iter()
        .map(|d| (code(d), d.range.start.line + 1))
        .collect();
    editor.sort();
    client.shutdown();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["lint", "--format", "json", path])
        .output()
        .expect("idemchart runs");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let mut cli: Vec<(String, u32)> = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            let code = d["code"].as_str().unwrap().to_string();
            (code, d["line"].as_u64().unwrap() as u32)
        })
        .collect();
    cli.sort();
    assert!(editor.iter().any(|(c, _)| c == "S011"), "{editor:?}");
    assert!(!editor.iter().any(|(c, _)| c == "E003"), "{editor:?}");
    assert_eq!(editor, cli);
}

#[test]
fn scxml_documents_get_diagnostics_and_navigation() {
    let mut client = Client::start("scxml", capabilities());
    let source = r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="a">
  <state id="a">
    <transition event="GO" target="b"/>
    <transition event="BACK" target="nowhere"/>
  </state>
  <state id="b"/>
</scxml>
"#;
    let uri = client.open("door.scxml", source);
    let broken = client.diagnostics(&uri);
    assert_eq!(codes(&broken), ["S001"], "{broken:#?}");
    let fixed = source.replace("nowhere", "a");
    client.change_all(&uri, 1, &fixed);
    client.diagnostics(&uri);
    // From the target `b` to the state `b`.
    let line = fixed
        .lines()
        .position(|l| l.contains("target=\"b\""))
        .unwrap() as u32;
    let character = fixed
        .lines()
        .nth(line as usize)
        .unwrap()
        .find("\"b\"")
        .unwrap() as u32
        + 1;
    let definition = client.request::<request::GotoDefinition>(lsp::GotoDefinitionParams {
        text_document_position_params: at(&uri, line, character),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    snapshot!(client, "scxml_definition", definition);
    client.shutdown();
}

/// `idemchart lsp` as a client's process: writes `input` to its standard
/// input, closes it, and returns the exit code and standard error once it
/// ends (within 10 s, or the test fails).
fn lsp_process(input: &[u8]) -> (Option<i32>, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["lsp", "--max-message-bytes", "1000000"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("idemchart lsp starts");
    // The server may stop reading before the input ends: a refused write is fine.
    let _ = child.stdin.take().unwrap().write_all(input);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("idemchart lsp did not end within 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (status.code(), stderr)
}

/// Absurd and oversized `Content-Length` headers end the connection with an
/// error that names the limit, before anything is allocated for them (the
/// process ends at once: it never reads the announced body); a frame cut
/// short and an input closed after the handshake end it too.
#[test]
fn the_stdio_transport_bounds_what_a_client_can_make_it_read() {
    for length in ["18446744073709551615", "40000000000", "1000001"] {
        let (code, stderr) =
            lsp_process(format!("Content-Length: {length}\r\n\r\n{{}}").as_bytes());
        assert_eq!(code, Some(2), "{length}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "a message of {length} bytes is larger than the limit of 1000000 bytes"
            )),
            "{length}: {stderr}"
        );
    }
    let (code, stderr) = lsp_process(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("the input ended 10 bytes into a message of 50"),
        "{stderr}"
    );

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "capabilities": {} }
    })
    .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}).to_string();
    let mut input = Vec::new();
    for message in [initialize, initialized] {
        input.extend(format!("Content-Length: {}\r\n\r\n{message}", message.len()).bytes());
    }
    let (code, stderr) = lsp_process(&input);
    assert_eq!(
        code,
        Some(0),
        "a closed input after the handshake ends the server: {stderr}"
    );
}
