//! An in-memory client of the language server, after ruff's e2e harness:
//! the real server runs on a thread over `Connection::memory()`; the test
//! sends typed requests and notifications and awaits typed answers. Every
//! message the server sends must be claimed by the test: one left over
//! when the client shuts down fails it.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{self as lsp, notification, request};
use serde_json::{Value, json};

/// How long the client waits for one message before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

pub struct Client {
    connection: Connection,
    server: Option<JoinHandle<Result<(), String>>>,
    /// Messages received and not yet claimed, in arrival order.
    unclaimed: VecDeque<Message>,
    next_id: i32,
    pub dir: PathBuf,
    pub initialize: lsp::InitializeResult,
}

impl Client {
    /// Starts a server with the client capabilities `capabilities` (JSON
    /// of `ClientCapabilities`) in a fresh directory named after the test.
    pub fn start(name: &str, capabilities: Value) -> Client {
        Client::start_with(
            name,
            capabilities,
            json!(null),
            idemchart::lsp::Options::default(),
        )
    }

    pub fn start_with(
        name: &str,
        capabilities: Value,
        initialization_options: Value,
        options: idemchart::lsp::Options,
    ) -> Client {
        let dir = std::env::temp_dir().join(format!("idemchart-lsp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("test directory");
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || idemchart::lsp::run(server, options));
        let mut client = Client {
            connection: client,
            server: Some(handle),
            unclaimed: VecDeque::new(),
            next_id: 0,
            dir,
            initialize: lsp::InitializeResult::default(),
        };
        let params = json!({
            "processId": null,
            "rootUri": null,
            "capabilities": capabilities,
            "initializationOptions": initialization_options,
        });
        let result: Value = client.request_raw(request::Initialize::METHOD, params);
        client.initialize = serde_json::from_value(result).expect("an InitializeResult");
        client.notify::<notification::Initialized>(lsp::InitializedParams {});
        client
    }

    /// The `file:` URI of `name` in the test's directory.
    pub fn uri(&self, name: &str) -> lsp::Uri {
        let path = self.dir.join(name);
        format!("file://{}", path.display())
            .parse()
            .expect("a file URI")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn notify<N: lsp::notification::Notification>(&self, params: N::Params) {
        let message = Notification::new(N::METHOD.to_string(), params);
        self.connection
            .sender
            .send(message.into())
            .expect("the server is running");
    }

    pub fn open(&self, name: &str, text: &str) -> lsp::Uri {
        let uri = self.uri(name);
        let language = match Path::new(name).extension().and_then(|e| e.to_str()) {
            Some("chart") => "idemchart",
            Some("yaml" | "yml") => "yaml",
            Some(other) => other,
            None => "plaintext",
        };
        self.notify::<notification::DidOpenTextDocument>(lsp::DidOpenTextDocumentParams {
            text_document: lsp::TextDocumentItem {
                uri: uri.clone(),
                language_id: language.into(),
                version: 0,
                text: text.into(),
            },
        });
        uri
    }

    /// Replaces the range `start..end` (line, character) with `text`.
    pub fn change(
        &self,
        uri: &lsp::Uri,
        version: i32,
        start: (u32, u32),
        end: (u32, u32),
        text: &str,
    ) {
        self.notify::<notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
            text_document: lsp::VersionedTextDocumentIdentifier {
                uri: uri.clone(),
                version,
            },
            content_changes: vec![lsp::TextDocumentContentChangeEvent {
                range: Some(range(start, end)),
                range_length: None,
                text: text.into(),
            }],
        });
    }

    /// Replaces the whole text.
    pub fn change_all(&self, uri: &lsp::Uri, version: i32, text: &str) {
        self.notify::<notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
            text_document: lsp::VersionedTextDocumentIdentifier {
                uri: uri.clone(),
                version,
            },
            content_changes: vec![lsp::TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: text.into(),
            }],
        });
    }

    pub fn close(&self, uri: &lsp::Uri) {
        self.notify::<notification::DidCloseTextDocument>(lsp::DidCloseTextDocumentParams {
            text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
        });
    }

    fn receive(&mut self) -> Message {
        match self.connection.receiver.recv_timeout(PATIENCE) {
            Ok(message) => message,
            Err(e) => panic!(
                "no message from the server in {PATIENCE:?} ({e}); unclaimed: {:?}",
                self.unclaimed
            ),
        }
    }

    /// Claims the first message (received or still to come) that `wanted`
    /// picks. The message is handed over whole: its caller reads it once,
    /// as an editor does.
    fn claim(&mut self, wanted: impl Fn(&Message) -> bool) -> Message {
        if let Some(i) = self.unclaimed.iter().position(&wanted) {
            return self.unclaimed.remove(i).expect("found");
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(
                Instant::now() < deadline,
                "the awaited message never came; unclaimed: {:?}",
                self.unclaimed
            );
            let message = self.receive();
            if wanted(&message) {
                return message;
            }
            self.unclaimed.push_back(message);
        }
    }

    /// Whether a notification `method` was received and not yet claimed:
    /// after claiming an answer, whether one came before it.
    pub fn has_unclaimed(&self, method: &str) -> bool {
        self.unclaimed
            .iter()
            .any(|m| matches!(m, Message::Notification(n) if n.method == method))
    }

    fn request_raw(&mut self, method: &str, params: Value) -> Value {
        match self.request_result(method, params) {
            Ok(value) => value,
            Err(error) => panic!("{method} failed: {error:?}"),
        }
    }

    /// Sends a request and awaits its answer: the result, or the error.
    pub fn request_result(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Value, lsp_server::ResponseError> {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        let message = Request::new(id.clone(), method.to_string(), params);
        self.connection
            .sender
            .send(message.into())
            .expect("the server is running");
        match self.claim(|m| matches!(m, Message::Response(r) if r.id == id)) {
            Message::Response(response) => response.response_result,
            _ => unreachable!("claimed a response"),
        }
    }

    pub fn request<R: lsp::request::Request>(&mut self, params: R::Params) -> R::Result {
        let value = self.request_raw(R::METHOD, serde_json::to_value(params).expect("params"));
        serde_json::from_value(value).expect("a typed result")
    }

    /// The params of notification `message`, read once into their type
    /// (every string copied, as reading the message's text makes them).
    fn params<P: serde::de::DeserializeOwned>(message: Message) -> P {
        match message {
            Message::Notification(n) => P::deserialize(&n.params).expect("typed params"),
            _ => unreachable!("claimed a notification"),
        }
    }

    /// Awaits the next notification of kind `N`.
    pub fn await_notification<N: lsp::notification::Notification>(&mut self) -> N::Params {
        let message =
            self.claim(|m| matches!(m, Message::Notification(n) if n.method == N::METHOD));
        Client::params(message)
    }

    /// Awaits the diagnostics published for `uri`.
    pub fn diagnostics(&mut self, uri: &lsp::Uri) -> Vec<lsp::Diagnostic> {
        let message = self.claim(|m| {
            matches!(m, Message::Notification(n)
                if n.method == notification::PublishDiagnostics::METHOD
                    && n.params.get("uri").and_then(Value::as_str) == Some(uri.as_str()))
        });
        Client::params::<lsp::PublishDiagnosticsParams>(message).diagnostics
    }

    /// Awaits a request of kind `R` from the server and answers it with `result`.
    pub fn answer<R: lsp::request::Request>(&mut self, result: R::Result) -> R::Params {
        let request =
            match self.claim(|m| matches!(m, Message::Request(r) if r.method == R::METHOD)) {
                Message::Request(request) => request,
                _ => unreachable!("claimed a request"),
            };
        let response = Response::new_ok(request.id, result);
        self.connection
            .sender
            .send(response.into())
            .expect("the server is running");
        serde_json::from_value(request.params).expect("typed params")
    }

    /// Shuts the server down; fails on any message left unclaimed.
    pub fn shutdown(mut self) {
        self.request_raw(request::Shutdown::METHOD, json!(null));
        self.notify::<notification::Exit>(());
        let server = self.server.take().expect("running");
        server
            .join()
            .expect("the server thread")
            .expect("the server ended cleanly");
        while let Ok(message) = self.connection.receiver.try_recv() {
            self.unclaimed.push_back(message);
        }
        assert!(
            self.unclaimed.is_empty(),
            "unclaimed messages: {:#?}",
            self.unclaimed
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn position(line: u32, character: u32) -> lsp::Position {
    lsp::Position { line, character }
}

pub fn range(start: (u32, u32), end: (u32, u32)) -> lsp::Range {
    lsp::Range {
        start: position(start.0, start.1),
        end: position(end.0, end.1),
    }
}

/// Applies text edits (as the client would) to `text`, in UTF-16 positions.
pub fn apply_edits(text: &str, edits: &[lsp::TextEdit]) -> String {
    let offset = |p: lsp::Position| {
        let mut at = 0;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if i == p.line as usize {
                let mut units = 0;
                for (j, c) in line.char_indices() {
                    if units >= p.character as usize {
                        return at + j;
                    }
                    units += c.len_utf16();
                }
                return at + line.trim_end_matches('\n').len();
            }
            at += line.len();
        }
        text.len()
    };
    let mut edits: Vec<&lsp::TextEdit> = edits.iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse((e.range.start.line, e.range.start.character)));
    let mut out = text.to_string();
    for edit in edits {
        let (start, end) = (offset(edit.range.start), offset(edit.range.end));
        out.replace_range(start..end, &edit.new_text);
    }
    out
}
