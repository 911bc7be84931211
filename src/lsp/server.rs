//! The main loop: messages in, analyses scheduled, answers out.
//!
//! The loop is synchronous (rust-analyzer's and ruff's pattern): one thread
//! reads the client's messages and never waits for a lint. An edit changes
//! the document's text at once and schedules its analysis: at once after a
//! pause, or after a short debounce when it follows another edit closely.
//! The analysis runs on one of a few worker threads, at most one per
//! document at a time. A newer edit cancels the old run: a queued one is
//! skipped, a running lint stops at its next check (between findings and
//! replayed events) and its result is dropped; so does a close. Requests
//! about a document wait for the analysis of its current text, which they
//! start without debounce, so every position they read and write is in
//! that text. Hover, definition and the outline wait only for that text's
//! tree and model: a worker hands them over before the lint starts, which
//! on a large machine takes far longer than the parse.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use serde_json::Value;

use crate::config::Config;

use super::convert::{self, PositionEncoding};
use super::{Analysis, Kind};

/// How the server schedules its work.
#[derive(Clone, Debug)]
pub struct Options {
    /// An edit that follows the previous one of its document within this
    /// time waits this long before its analysis starts (a burst of edits is
    /// analysed once); the first edit after a pause is analysed at once.
    pub debounce: Duration,
    /// The whole analyses (tree, model, diagnostics) of the documents used
    /// last are kept while their texts add up to at most this many bytes
    /// (the last one always); the others keep only their text, and a request
    /// about one analyses it again. An analysis takes about 40 times its
    /// text: 13 MB for a 1,000-state machine of 348 KB.
    pub keep_analyses_of_bytes: usize,
    /// Called on a worker that has no job left and on the main loop after
    /// it dropped analyses: where the binary's allocator can hand freed
    /// pages back to the system, which an idle server would otherwise keep.
    pub release_memory: Option<fn()>,
    /// The largest message the stdio transport reads; a larger one ends the
    /// connection with an error before anything is allocated for it.
    pub max_message_bytes: usize,
    /// At most this many diagnostics of a file are sent (published or
    /// pulled), and one more that says how many were left out; the
    /// client's initialization option `maxDiagnostics` overrides it.
    pub max_diagnostics: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            debounce: Duration::from_millis(20),
            keep_analyses_of_bytes: 1 << 20,
            release_memory: None,
            max_message_bytes: 64 << 20,
            max_diagnostics: 5_000,
        }
    }
}

/// Serves the protocol on standard input and output until the client
/// shuts the server down.
pub fn run_stdio(options: Options) -> Result<(), String> {
    let (connection, io) =
        super::transport::stdio(options.max_message_bytes, options.release_memory);
    let served = run(connection, options);
    // The reader's error (a message over the limit, a broken frame) is why
    // the loop ended, so it comes first.
    io.join()
        .map_err(|e| format!("the connection closed: {e}"))?;
    served
}

/// Serves the protocol on `connection` (standard I/O, or an in-memory pair
/// in tests): the initialize handshake, then the main loop until shutdown.
pub fn run(connection: Connection, mut options: Options) -> Result<(), String> {
    let (id, params) = connection
        .initialize_start()
        .map_err(|e| format!("no initialize request: {e}"))?;
    let params: lsp::InitializeParams =
        serde_json::from_value(params).map_err(|e| format!("a bad initialize request: {e}"))?;
    let encoding = PositionEncoding::negotiate(&params.capabilities);
    let pull = params
        .capabilities
        .text_document
        .as_ref()
        .is_some_and(|t| t.diagnostic.is_some());
    let result = lsp::InitializeResult {
        capabilities: capabilities(encoding, pull),
        server_info: Some(lsp::ServerInfo {
            name: "idemchart".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    let result = serde_json::to_value(result).map_err(|e| e.to_string())?;
    connection
        .initialize_finish(id, result)
        .map_err(|e| format!("the initialize handshake failed: {e}"))?;
    let lint_docs = params
        .initialization_options
        .as_ref()
        .and_then(|o| o.get("lintDocs"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(cap) = params
        .initialization_options
        .as_ref()
        .and_then(|o| o.get("maxDiagnostics"))
        .and_then(Value::as_u64)
    {
        options.max_diagnostics = usize::try_from(cap).unwrap_or(usize::MAX);
    }
    let (done_tx, done_rx) = crossbeam_channel::unbounded();
    let (jobs, jobs_rx) = crossbeam_channel::unbounded();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let mut release = Vec::with_capacity(workers);
    for n in 0..workers {
        let (jobs_rx, done_tx) = (jobs_rx.clone(), done_tx.clone());
        // One pending call is enough: it releases all that was freed before it.
        let (release_tx, release_rx) = crossbeam_channel::bounded(1);
        release.push(release_tx);
        // The parsers' depth limits (200 levels) are sized for the 8 MiB
        // main thread the CLI lints on; a default 2 MiB thread holds far
        // fewer levels of a nested expression in a debug build.
        std::thread::Builder::new()
            .name(format!("lint-{n}"))
            .stack_size(8 << 20)
            .spawn(move || worker(jobs_rx, release_rx, done_tx, options.release_memory))
            .map_err(|e| format!("cannot start a lint worker: {e}"))?;
    }
    let mut server = Server {
        sender: connection.sender.clone(),
        encoding,
        pull,
        refresh: params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.diagnostic.as_ref())
            .and_then(|d| d.refresh_support)
            .unwrap_or(false),
        lint_docs: convert::LintDocs::new(lint_docs),
        options,
        documents: HashMap::new(),
        configs: HashMap::new(),
        jobs,
        release,
        next_request: 0,
        clock: 0,
        running: 0,
        cancelled: 0,
    };
    server.watch_config(&params.capabilities);
    server.main_loop(&connection, &done_rx)
}

fn capabilities(encoding: PositionEncoding, pull: bool) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        rename_provider: Some(lsp::OneOf::Right(lsp::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![".".into(), "#".into(), " ".into()]),
            ..Default::default()
        }),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
            lsp::CodeActionOptions {
                code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX, fix_all_kind()]),
                ..Default::default()
            },
        )),
        diagnostic_provider: pull.then(|| {
            lsp::DiagnosticServerCapabilities::Options(lsp::DiagnosticOptions {
                identifier: Some("idemchart".into()),
                inter_file_dependencies: false,
                workspace_diagnostics: false,
                work_done_progress_options: Default::default(),
            })
        }),
        ..Default::default()
    }
}

fn fix_all_kind() -> lsp::CodeActionKind {
    lsp::CodeActionKind::new("source.fixAll.idemchart")
}

/// A request that waits for the analysis of its document's current text.
struct Waiting {
    id: RequestId,
    method: String,
    params: Value,
}

/// One open document.
struct Document {
    uri: lsp::Uri,
    path: PathBuf,
    kind: Kind,
    text: String,
    /// Bumped by every change; an analysis is of one generation.
    generation: u64,
    /// Set when `generation` is bumped, which stops the analysis of the
    /// older text, queued or running; each generation gets a new one.
    stale: Arc<AtomicBool>,
    /// When the text last changed, which tells a burst of edits (debounced)
    /// from a first keystroke (analysed at once).
    changed: Option<Instant>,
    /// When the document was last edited or asked about, on the server's
    /// clock: the least recently used lose their analyses first.
    used: u64,
    /// The generation whose diagnostics were last pushed: an analysis made
    /// again after its eviction is not pushed twice.
    published: Option<u64>,
    /// The analysis of the current text, once it is done.
    analysis: Option<Arc<Analysis>>,
    /// The last analysis whose text parsed, for completion in text that
    /// does not; while the lint of the current text runs, its tree and
    /// model without findings, for hover and navigation.
    last_parsed: Option<Arc<Analysis>>,
    /// The generation `last_parsed` is of.
    last_parsed_generation: u64,
    /// When the analysis of the current text is to start.
    due: Option<Instant>,
    /// Whether an analysis (of this or an older generation) is running.
    running: bool,
    waiting: Vec<Waiting>,
}

impl Document {
    /// The text changed (or the levels did): the analysis of the old text
    /// is stopped and dropped.
    fn new_generation(&mut self) {
        self.generation += 1;
        self.stale.store(true, Ordering::Release);
        self.stale = Arc::new(AtomicBool::new(false));
        self.analysis = None;
    }
}

/// What a worker reports about a job.
enum Report {
    /// The tree and model of the job's text, before its lint starts.
    Parsed {
        uri: lsp::Uri,
        generation: u64,
        analysis: Analysis,
    },
    Done(Done),
}

/// An analysis that finished on a worker; `None` when a newer edit or a
/// close made its text stale before it started or while it ran.
struct Done {
    uri: lsp::Uri,
    generation: u64,
    analysis: Option<Analysis>,
}

/// Whether requests of `method` are answered from the tree and model of
/// the current text, without waiting for its lint: those whose answer
/// holds no finding.
fn from_tree(method: &str) -> bool {
    use lsp::request::Request as _;
    use lsp::request::*;
    [
        HoverRequest::METHOD,
        GotoDefinition::METHOD,
        DocumentSymbolRequest::METHOD,
    ]
    .contains(&method)
}

/// The server's own request that says what it holds: for tests and for
/// looking at a running server's memory.
const STATUS: &str = "idemchart/status";

/// An analysis to run: the text of one generation of a document.
struct Job {
    uri: lsp::Uri,
    generation: u64,
    /// Set by the main loop when a newer edit makes this text stale: a
    /// worker skips the job, or the lint stops at its next check.
    stale: Arc<AtomicBool>,
    path: PathBuf,
    kind: Kind,
    text: String,
    config: Arc<Config>,
}

/// Runs jobs until the server ends, each on a fresh thread (see
/// [`on_fresh_heap`]). A message on `release` calls `release_memory` on
/// this thread, whose heap holds what the jobs' channels and reports made.
fn worker(
    jobs: Receiver<Job>,
    release: Receiver<()>,
    done: Sender<Report>,
    release_memory: Option<fn()>,
) {
    loop {
        let job = select! {
            recv(jobs) -> job => match job {
                Ok(job) => job,
                Err(_) => return,
            },
            recv(release) -> asked => {
                if asked.is_err() {
                    return;
                }
                if let Some(release) = release_memory {
                    release();
                }
                continue;
            }
        };
        let run = || {
            let text = job.text.clone();
            let parsed = |analysis: Analysis| {
                // Made here, so that no hover on the main loop waits for
                // the index of a large file.
                super::symbols::indexed(&analysis);
                let _ = done.send(Report::Parsed {
                    uri: job.uri.clone(),
                    generation: job.generation,
                    analysis,
                });
            };
            super::analyze_in_steps(&job.path, text, job.kind, &job.config, &job.stale, parsed)
        };
        // A job made stale before it started is skipped.
        let analysis = match job.stale.load(Ordering::Acquire) {
            true => None,
            false => on_fresh_heap(run).unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Some(internal_error(&job, &what))
            }),
        };
        let finished = Done {
            uri: job.uri,
            generation: job.generation,
            analysis,
        };
        if done.send(Report::Done(finished)).is_err() {
            return;
        }
        // The text is freed before the memory is released.
        drop(job.text);
        if jobs.is_empty()
            && let Some(release) = release_memory
        {
            release();
        }
    }
}

/// The analysis of a document whose lint panicked: one error that says so,
/// rather than a server that stops answering.
fn internal_error(job: &Job, what: &str) -> Analysis {
    let diagnostic = crate::diagnostic::LoadError::Syntax {
        message: format!(
            "internal error: idemchart could not analyse this file ({what}); please report it"
        ),
    }
    .at(crate::span::Span::default(), []);
    Analysis {
        kind: job.kind,
        file: crate::span::SourceFile::new(job.path.display().to_string(), job.text.clone()),
        doc: None,
        machine: None,
        diagnostics: vec![diagnostic],
        left_out: Vec::new(),
        occurrences: Default::default(),
    }
}

struct Server {
    sender: Sender<Message>,
    encoding: PositionEncoding,
    /// Whether the client pulls diagnostics (`textDocument/diagnostic`)
    /// rather than being sent them.
    pull: bool,
    /// Whether the client can be asked to pull again (`workspace/diagnostic/refresh`).
    refresh: bool,
    /// Where the diagnostics' codes link to.
    lint_docs: convert::LintDocs,
    options: Options,
    documents: HashMap<lsp::Uri, Document>,
    /// Configurations by the directory of the files they govern.
    configs: HashMap<PathBuf, Arc<Config>>,
    jobs: Sender<Job>,
    /// One a worker: asks it to release the memory freed in its heap.
    release: Vec<Sender<()>>,
    next_request: i32,
    /// Counts edits and requests, for `Document::used`.
    clock: u64,
    /// Jobs sent to the workers and not yet done, closed documents' too.
    running: usize,
    /// Jobs that ended without an analysis (made stale by an edit or a
    /// close), since the server started.
    cancelled: u64,
}

impl Server {
    fn main_loop(
        &mut self,
        connection: &Connection,
        done: &Receiver<Report>,
    ) -> Result<(), String> {
        loop {
            let timeout = self
                .documents
                .values()
                .filter(|d| !d.running)
                .filter_map(|d| d.due)
                .min()
                .map(|due| due.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_secs(3600));
            select! {
                recv(connection.receiver) -> message => {
                    let Ok(message) = message else { return Ok(()) };
                    match message {
                        Message::Request(request) => {
                            if connection.handle_shutdown(&request).map_err(|e| e.to_string())? {
                                return Ok(());
                            }
                            self.request(request);
                        }
                        Message::Notification(notification) => self.notification(notification),
                        // Answers to our own requests (registrations, refreshes).
                        Message::Response(_) => {}
                    }
                }
                recv(done) -> report => match report {
                    Ok(Report::Parsed { uri, generation, analysis }) => {
                        self.parsed(uri, generation, analysis);
                    }
                    Ok(Report::Done(finished)) => self.finished(finished),
                    Err(_) => {}
                },
                default(timeout) => {}
            }
            self.start_due();
        }
    }

    fn send(&self, message: impl Into<Message>) {
        // A closed channel means the client is gone; the loop ends on the
        // next receive.
        let _ = self.sender.send(message.into());
    }

    fn notify<N: lsp::notification::Notification>(&self, params: N::Params) {
        self.send(Notification::new(N::METHOD.to_string(), params));
    }

    fn ask<R: lsp::request::Request>(&mut self, params: R::Params) {
        self.next_request += 1;
        let id = RequestId::from(format!("idemchart-{}", self.next_request));
        self.send(Request::new(id, R::METHOD.to_string(), params));
    }

    /// Asks the client to tell us when an `idemchart.toml` changes, where
    /// it can register for that.
    fn watch_config(&mut self, capabilities: &lsp::ClientCapabilities) {
        let dynamic = capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false);
        if !dynamic {
            return;
        }
        let options = lsp::DidChangeWatchedFilesRegistrationOptions {
            watchers: vec![lsp::FileSystemWatcher {
                glob_pattern: lsp::GlobPattern::String("**/idemchart.toml".into()),
                kind: None,
            }],
        };
        self.ask::<lsp::request::RegisterCapability>(lsp::RegistrationParams {
            registrations: vec![lsp::Registration {
                id: "idemchart-config".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: serde_json::to_value(options).ok(),
            }],
        });
    }

    fn config(&mut self, path: &Path) -> Arc<Config> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(config) = self.configs.get(&dir) {
            return Arc::clone(config);
        }
        let config = match super::config_for(path) {
            Ok(config) => config,
            Err(message) => {
                self.notify::<lsp::notification::ShowMessage>(lsp::ShowMessageParams {
                    typ: lsp::MessageType::ERROR,
                    message: format!("idemchart: {message}; the default levels apply"),
                });
                Config::defaults(dir.clone())
            }
        };
        let config = Arc::new(config);
        self.configs.insert(dir, Arc::clone(&config));
        config
    }

    fn notification(&mut self, notification: Notification) {
        use lsp::notification::Notification as _;
        use lsp::notification::*;
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp::DidOpenTextDocumentParams>(notification.params)
                else {
                    return;
                };
                let uri = params.text_document.uri;
                let Some(path) = convert::path_of(&uri) else {
                    return;
                };
                let Some(kind) = Kind::of_path(&path) else {
                    return;
                };
                let document = Document {
                    uri: uri.clone(),
                    path,
                    kind,
                    // A copy made here: the reader thread's allocation is
                    // freed at once, where the reader releases it, rather than
                    // at the close, long after.
                    text: params.text_document.text.as_str().to_owned(),
                    generation: 0,
                    stale: Arc::new(AtomicBool::new(false)),
                    changed: None,
                    used: self.tick(),
                    published: None,
                    analysis: None,
                    last_parsed: None,
                    last_parsed_generation: 0,
                    due: Some(Instant::now()),
                    running: false,
                    waiting: Vec::new(),
                };
                self.documents.insert(uri, document);
            }
            DidChangeTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp::DidChangeTextDocumentParams>(notification.params)
                else {
                    return;
                };
                let encoding = self.encoding;
                let debounce = self.options.debounce;
                let used = self.tick();
                if let Some(document) = self.documents.get_mut(&params.text_document.uri) {
                    document.used = used;
                    for change in params.content_changes {
                        convert::apply_change(&mut document.text, change, encoding);
                    }
                    document.new_generation();
                    // The first edit after a pause is analysed at once (a
                    // newer one stops that run); an edit that follows
                    // another within the debounce waits for the burst to end.
                    let now = Instant::now();
                    let burst = document
                        .changed
                        .is_some_and(|changed| now.duration_since(changed) < debounce);
                    document.changed = Some(now);
                    document.due = Some(if burst { now + debounce } else { now });
                }
            }
            DidCloseTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp::DidCloseTextDocumentParams>(notification.params)
                else {
                    return;
                };
                if let Some(document) = self.documents.remove(&params.text_document.uri) {
                    // A lint still running on the text stops at its next
                    // check rather than finishing for nobody.
                    document.stale.store(true, Ordering::Release);
                    self.forget_unused_configs();
                    for waiting in document.waiting {
                        self.send(Response::new_err(
                            waiting.id,
                            ErrorCode::ContentModified as i32,
                            "the document was closed".into(),
                        ));
                    }
                    self.notify::<PublishDiagnostics>(lsp::PublishDiagnosticsParams {
                        uri: document.uri,
                        diagnostics: Vec::new(),
                        version: None,
                    });
                    // Its text, tree, model and findings go back to the
                    // allocator here (unless a worker still holds the text).
                    drop(document.text);
                    drop(document.analysis);
                    drop(document.last_parsed);
                    self.release_memory();
                }
            }
            DidSaveTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp::DidSaveTextDocumentParams>(notification.params)
                else {
                    return;
                };
                if is_config(&params.text_document.uri) {
                    self.config_changed();
                }
            }
            DidChangeWatchedFiles::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp::DidChangeWatchedFilesParams>(notification.params)
                else {
                    return;
                };
                if params.changes.iter().any(|c| is_config(&c.uri)) {
                    self.config_changed();
                }
            }
            _ => {}
        }
    }

    /// Drops the configurations of directories no open document is in.
    fn forget_unused_configs(&mut self) {
        let open: Vec<PathBuf> = (self.documents.values())
            .map(|d| d.path.parent().map(Path::to_path_buf).unwrap_or_default())
            .collect();
        self.configs.retain(|dir, _| open.contains(dir));
    }

    /// An `idemchart.toml` changed: every open file is analysed again with
    /// the levels now in force.
    fn config_changed(&mut self) {
        self.configs.clear();
        let now = Instant::now();
        for document in self.documents.values_mut() {
            document.new_generation();
            document.due = Some(now);
        }
        if self.pull && self.refresh {
            self.ask::<lsp::request::WorkspaceDiagnosticRefresh>(());
        }
    }

    /// Starts the analyses that are due, one per document at a time.
    fn start_due(&mut self) {
        let now = Instant::now();
        let due: Vec<lsp::Uri> = self
            .documents
            .values()
            .filter(|d| !d.running && d.due.is_some_and(|due| due <= now))
            .map(|d| d.uri.clone())
            .collect();
        for uri in due {
            let path = self.documents[&uri].path.clone();
            let config = self.config(&path);
            let Some(document) = self.documents.get_mut(&uri) else {
                continue;
            };
            document.due = None;
            document.running = true;
            let job = Job {
                uri,
                generation: document.generation,
                stale: Arc::clone(&document.stale),
                path,
                kind: document.kind,
                text: document.text.clone(),
                config,
            };
            // The workers end only with the server.
            let _ = self.jobs.send(job);
            self.running += 1;
        }
    }

    /// The tree and model of a text whose lint now starts: the requests
    /// that need no findings are answered from them at once.
    fn parsed(&mut self, uri: lsp::Uri, generation: u64, analysis: Analysis) {
        let Some(document) = self.documents.get_mut(&uri) else {
            return;
        };
        if generation != document.generation {
            return;
        }
        let replaced = document.last_parsed.replace(Arc::new(analysis));
        document.last_parsed_generation = generation;
        let (now, later): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut document.waiting)
            .into_iter()
            .partition(|w| from_tree(&w.method));
        document.waiting = later;
        for request in now {
            self.answer(request);
        }
        drop(replaced);
    }

    fn finished(&mut self, done: Done) {
        self.running = self.running.saturating_sub(1);
        if done.analysis.is_none() {
            self.cancelled += 1;
        }
        let Some(document) = self.documents.get_mut(&done.uri) else {
            return;
        };
        document.running = false;
        if done.generation != document.generation {
            // A newer edit came: its analysis starts when its debounce ends,
            // or now if that already passed while this one ran.
            return;
        }
        let Some(analysis) = done.analysis else {
            return;
        };
        let analysis = Arc::new(analysis);
        // The analyses replaced are dropped once the diagnostics are out:
        // freeing a large one takes a while.
        let mut replaced = Vec::with_capacity(2);
        if analysis.doc.is_some() {
            replaced.extend(document.last_parsed.replace(Arc::clone(&analysis)));
            document.last_parsed_generation = done.generation;
        }
        replaced.extend(document.analysis.replace(Arc::clone(&analysis)));
        let waiting = std::mem::take(&mut document.waiting);
        let uri = document.uri.clone();
        let again = document.published == Some(done.generation);
        document.published = Some(done.generation);
        if !self.pull && !again {
            use lsp::notification::Notification as _;
            let envelope = lsp::PublishDiagnosticsParams {
                uri: uri.clone(),
                diagnostics: Vec::new(),
                version: None,
            };
            let (cap, encoding, docs) =
                (self.options.max_diagnostics, self.encoding, &self.lint_docs);
            let make = || {
                let diagnostics = diagnostics_of(cap, encoding, docs, &uri, &analysis);
                convert::with_diagnostics(envelope, "diagnostics", &diagnostics)
            };
            // Thousands of diagnostics are megabytes of small blocks, made
            // apart from the main loop's heap for the same reason as an
            // analysis. A small file's too: measured, making those on the
            // main loop left more of the large file's pages resident.
            let made = on_fresh_heap(make);
            if let Ok(Ok(params)) = made {
                // The params are JSON already: `Notification::new` would
                // copy them whole.
                self.send(Notification {
                    method: lsp::notification::PublishDiagnostics::METHOD.to_string(),
                    params,
                });
            }
        }
        for request in waiting {
            self.answer(request);
        }
        drop(replaced);
        self.evict();
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Keeps the whole analyses of the documents used last, up to
    /// `keep_analyses_of_bytes` of their text; the others are analysed again
    /// when asked about.
    fn evict(&mut self) {
        let mut kept: Vec<&mut Document> = self
            .documents
            .values_mut()
            .filter(|d| d.analysis.is_some() && !d.running && d.waiting.is_empty())
            .collect();
        kept.sort_by_key(|d| std::cmp::Reverse(d.used));
        let mut bytes = 0;
        let mut dropped = false;
        for (i, document) in kept.into_iter().enumerate() {
            bytes += document.text.len();
            if i > 0 && bytes > self.options.keep_analyses_of_bytes {
                document.analysis = None;
                document.last_parsed = None;
                dropped = true;
            }
        }
        if dropped {
            self.release_memory();
        }
    }

    /// Hands the memory freed back to the system, where the binary's
    /// allocator can: this thread's and each worker's.
    fn release_memory(&self) {
        let Some(release) = self.options.release_memory else {
            return;
        };
        release();
        for worker in &self.release {
            // A full channel has a call pending already.
            let _ = worker.try_send(());
        }
    }

    /// The diagnostics sent for `analysis`: at most `max_diagnostics` of
    /// them, in its order, and then one that counts the others. Tens of
    /// thousands of findings make a message of hundreds of megabytes that
    /// no editor shows usefully; the CLI reports them all.
    fn diagnostics<'a>(
        &self,
        uri: &'a lsp::Uri,
        analysis: &'a Analysis,
    ) -> Vec<convert::ProtocolDiagnostic<'a>> {
        diagnostics_of(
            self.options.max_diagnostics,
            self.encoding,
            &self.lint_docs,
            uri,
            analysis,
        )
    }

    /// What the server holds, for `idemchart/status`.
    fn status(&self) -> Value {
        let documents = self.documents.values();
        serde_json::json!({
            "documents": self.documents.len(),
            "textBytes": documents.clone().map(|d| d.text.len()).sum::<usize>(),
            "analyses": documents.clone().filter(|d| d.analysis.is_some()).count(),
            "trees": documents.clone().filter(|d| d.last_parsed.is_some()).count(),
            "waiting": documents.map(|d| d.waiting.len()).sum::<usize>(),
            "configs": self.configs.len(),
            "running": self.running,
            "cancelled": self.cancelled,
        })
    }

    fn request(&mut self, request: Request) {
        if request.method == STATUS {
            self.send(Response::new_ok(request.id, self.status()));
            return;
        }
        let uri = request
            .params
            .get("textDocument")
            .and_then(|t| t.get("uri"))
            .and_then(|u| serde_json::from_value::<lsp::Uri>(u.clone()).ok());
        let waiting = Waiting {
            id: request.id,
            method: request.method,
            params: request.params,
        };
        let used = self.tick();
        let Some(document) = uri.and_then(|uri| self.documents.get_mut(&uri)) else {
            let error = match waiting.method.as_str() {
                m if m.starts_with("textDocument/") => {
                    (ErrorCode::InvalidParams, "the document is not open")
                }
                _ => (ErrorCode::MethodNotFound, "unknown method"),
            };
            self.send(Response::new_err(
                waiting.id,
                error.0 as i32,
                error.1.into(),
            ));
            return;
        };
        document.used = used;
        if answerable(document, &waiting.method).is_some() {
            self.answer(waiting);
        } else {
            // Asked about the text now: no debounce.
            document.waiting.push(waiting);
            document.due = Some(Instant::now());
        }
    }

    /// Answers a request about a document whose analysis is current.
    fn answer(&mut self, request: Waiting) {
        let result = self.result(&request.method, request.params);
        self.send(match result {
            Ok(value) => Response::new_ok(request.id, value),
            Err((code, message)) => Response::new_err(request.id, code as i32, message),
        });
    }

    fn result(&mut self, method: &str, params: Value) -> Result<Value, (ErrorCode, String)> {
        use lsp::request::Request as _;
        use lsp::request::*;
        let bad = |e: serde_json::Error| (ErrorCode::InvalidParams, e.to_string());
        let uri: lsp::Uri = params
            .get("textDocument")
            .and_then(|t| t.get("uri"))
            .and_then(|u| serde_json::from_value(u.clone()).ok())
            .ok_or((ErrorCode::InvalidParams, "no textDocument.uri".to_string()))?;
        let document = &self.documents[&uri];
        let analysis = answerable(document, method).expect("answered once analysed");
        let file = &analysis.file;
        let encoding = self.encoding;
        let at = |position: lsp::Position| convert::offset(file, position, encoding);
        let range = |span| convert::range(file, span, encoding);
        let location = |span| lsp::Location {
            uri: uri.clone(),
            range: range(span),
        };
        let json = |value: Result<Value, serde_json::Error>| {
            value.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match method {
            DocumentDiagnosticRequest::METHOD => {
                let report = lsp::DocumentDiagnosticReportResult::Report(
                    lsp::DocumentDiagnosticReport::Full(lsp::RelatedFullDocumentDiagnosticReport {
                        related_documents: None,
                        full_document_diagnostic_report: lsp::FullDocumentDiagnosticReport {
                            result_id: None,
                            items: Vec::new(),
                        },
                    }),
                );
                let items = self.diagnostics(&uri, &analysis);
                json(convert::with_diagnostics(report, "items", &items))
            }
            HoverRequest::METHOD => {
                let params: lsp::HoverParams = serde_json::from_value(params).map_err(bad)?;
                let hover =
                    super::hover(&analysis, at(params.text_document_position_params.position)).map(
                        |(span, text)| lsp::Hover {
                            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                                kind: lsp::MarkupKind::Markdown,
                                value: text,
                            }),
                            range: Some(range(span)),
                        },
                    );
                json(serde_json::to_value(hover))
            }
            GotoDefinition::METHOD => {
                let params: lsp::GotoDefinitionParams =
                    serde_json::from_value(params).map_err(bad)?;
                let found =
                    super::definition(&analysis, at(params.text_document_position_params.position));
                json(serde_json::to_value(found.map(|span| {
                    lsp::GotoDefinitionResponse::Scalar(location(span))
                })))
            }
            References::METHOD => {
                let params: lsp::ReferenceParams = serde_json::from_value(params).map_err(bad)?;
                let spans = super::references(
                    &analysis,
                    at(params.text_document_position.position),
                    params.context.include_declaration,
                );
                json(serde_json::to_value(
                    spans.into_iter().map(location).collect::<Vec<_>>(),
                ))
            }
            DocumentSymbolRequest::METHOD => {
                #[allow(deprecated)]
                fn symbol(
                    s: super::DocumentSymbol,
                    range: &dyn Fn(crate::span::Span) -> lsp::Range,
                ) -> lsp::DocumentSymbol {
                    lsp::DocumentSymbol {
                        name: s.name,
                        detail: s.detail,
                        kind: match s.kind {
                            super::SymbolKind::State => lsp::SymbolKind::CLASS,
                            super::SymbolKind::Event => lsp::SymbolKind::EVENT,
                            super::SymbolKind::Effect => lsp::SymbolKind::FUNCTION,
                        },
                        tags: None,
                        deprecated: None,
                        range: range(s.span),
                        selection_range: range(s.span),
                        children: (!s.children.is_empty())
                            .then(|| s.children.into_iter().map(|c| symbol(c, range)).collect()),
                    }
                }
                let symbols: Vec<lsp::DocumentSymbol> = super::symbols(&analysis)
                    .into_iter()
                    .map(|s| symbol(s, &range))
                    .collect();
                json(serde_json::to_value(lsp::DocumentSymbolResponse::Nested(
                    symbols,
                )))
            }
            PrepareRenameRequest::METHOD => {
                let params: lsp::TextDocumentPositionParams =
                    serde_json::from_value(params).map_err(bad)?;
                let (span, name) = super::prepare_rename(&analysis, at(params.position))
                    .map_err(|message| (ErrorCode::RequestFailed, message))?;
                json(serde_json::to_value(
                    lsp::PrepareRenameResponse::RangeWithPlaceholder {
                        range: range(span),
                        placeholder: name,
                    },
                ))
            }
            Rename::METHOD => {
                let params: lsp::RenameParams = serde_json::from_value(params).map_err(bad)?;
                let offset = at(params.text_document_position.position);
                let edits = super::rename(&analysis, offset, &params.new_name)
                    .map_err(|message| (ErrorCode::RequestFailed, message))?;
                json(serde_json::to_value(convert::workspace_edit(
                    &uri, file, &edits, encoding,
                )))
            }
            Completion::METHOD => {
                let params: lsp::CompletionParams = serde_json::from_value(params).map_err(bad)?;
                let offset = at(params.text_document_position.position);
                let items: Vec<lsp::CompletionItem> =
                    super::complete(&analysis, document.last_parsed.as_deref(), offset)
                        .into_iter()
                        .map(|c| lsp::CompletionItem {
                            label: c.label.clone(),
                            kind: Some(match c.kind {
                                super::CompletionKind::State => lsp::CompletionItemKind::CLASS,
                                super::CompletionKind::Event => lsp::CompletionItemKind::EVENT,
                                super::CompletionKind::Effect => lsp::CompletionItemKind::FUNCTION,
                                super::CompletionKind::Context | super::CompletionKind::Payload => {
                                    lsp::CompletionItemKind::FIELD
                                }
                                super::CompletionKind::Key => lsp::CompletionItemKind::PROPERTY,
                                super::CompletionKind::Keyword => lsp::CompletionItemKind::KEYWORD,
                            }),
                            detail: c.detail,
                            text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                                range: range(c.replace),
                                new_text: c.label,
                            })),
                            ..Default::default()
                        })
                        .collect();
                json(serde_json::to_value(lsp::CompletionResponse::Array(items)))
            }
            CodeActionRequest::METHOD => {
                let params: lsp::CodeActionParams = serde_json::from_value(params).map_err(bad)?;
                let wanted = |kind: &lsp::CodeActionKind| {
                    params.context.only.as_ref().is_none_or(|only| {
                        only.iter().any(|o| {
                            kind.as_str() == o.as_str()
                                || kind.as_str().starts_with(&format!("{}.", o.as_str()))
                        })
                    })
                };
                let mut actions: Vec<lsp::CodeActionOrCommand> = Vec::new();
                if wanted(&lsp::CodeActionKind::QUICKFIX) {
                    let span = convert::span(file, params.range, encoding);
                    for action in super::code_actions(&analysis, span) {
                        let diagnostics = action.diagnostic.map(|i| {
                            vec![
                                convert::diagnostic(
                                    &uri,
                                    file,
                                    &analysis.diagnostics[i],
                                    encoding,
                                    &self.lint_docs,
                                )
                                .typed(),
                            ]
                        });
                        actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                            title: action.title,
                            kind: Some(lsp::CodeActionKind::QUICKFIX),
                            diagnostics,
                            edit: Some(convert::workspace_edit(
                                &uri,
                                file,
                                &action.edits,
                                encoding,
                            )),
                            is_preferred: Some(action.preferred),
                            ..Default::default()
                        }));
                    }
                }
                if wanted(&fix_all_kind()) {
                    let path = document.path.clone();
                    let config = self.config(&path);
                    if let Some(edits) = super::fix_all(&analysis, &config) {
                        actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                            title: "Apply every safe idemchart fix".into(),
                            kind: Some(fix_all_kind()),
                            edit: Some(convert::workspace_edit(&uri, file, &edits, encoding)),
                            ..Default::default()
                        }));
                    }
                }
                json(serde_json::to_value(actions))
            }
            _ => Err((
                ErrorCode::MethodNotFound,
                format!("unknown method {method}"),
            )),
        }
    }
}

/// The analysis a request of `method` about `document` is answered from:
/// that of the current text, or for a request that needs no findings the
/// current text's tree while its lint runs; `None` while it must wait.
fn answerable(document: &Document, method: &str) -> Option<Arc<Analysis>> {
    if let Some(analysis) = &document.analysis {
        return Some(Arc::clone(analysis));
    }
    document
        .last_parsed
        .as_ref()
        .filter(|_| document.last_parsed_generation == document.generation && from_tree(method))
        .map(Arc::clone)
}

fn is_config(uri: &lsp::Uri) -> bool {
    uri.as_str().ends_with("/idemchart.toml")
}

/// A Markdown page with the documentation of lint `code`, written once per
/// server under the temporary directory, for the diagnostics' links when
/// the client names no other place (`lintDocs`).
pub(super) fn lint_page(code: &str) -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("idemchart-lints-{}", env!("CARGO_PKG_VERSION")));
        std::fs::create_dir_all(&dir).ok()?;
        for info in crate::config::registry() {
            let page = format!("# {} {}\n\n{}", info.code, info.name, info.doc);
            std::fs::write(dir.join(format!("{}.md", info.code)), page).ok()?;
        }
        Some(dir)
    });
    let page = dir.as_ref()?.join(format!("{code}.md"));
    page.exists().then_some(page)
}

/// Runs `work` on a thread of its own and waits for it; a panic comes back
/// as the `Err`, as from `catch_unwind`. What a large analysis allocates
/// fills the free room of every page of the heap it is made on, and a page
/// that keeps one live block stays resident: made on a fresh thread's heap,
/// it takes pages that go back to the system whole once it is dropped,
/// rather than leaving the long-lived threads' pages full of holes. Where no
/// thread can be started, `work` runs here.
fn on_fresh_heap<T: Send>(work: impl FnOnce() -> T + Send) -> std::thread::Result<T> {
    let mut work = Some(work);
    let joined = std::thread::scope(|scope| {
        // The parsers' depth limits want the stack the workers have.
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn_scoped(scope, || work.take().map(|work| work()))
            .ok()
            .map(|thread| thread.join())
    });
    // A thread that did not start left the work here.
    if let Some(work) = work.take() {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    }
    match joined {
        Some(Ok(Some(done))) => Ok(done),
        Some(Err(panic)) => Err(panic),
        Some(Ok(None)) | None => unreachable!("a thread that started took the work"),
    }
}

/// What `Server::diagnostics` sends, made where the caller likes.
fn diagnostics_of<'a>(
    cap: usize,
    encoding: PositionEncoding,
    lint_docs: &convert::LintDocs,
    uri: &'a lsp::Uri,
    analysis: &'a Analysis,
) -> Vec<convert::ProtocolDiagnostic<'a>> {
    let mut out: Vec<convert::ProtocolDiagnostic<'a>> = analysis
        .diagnostics
        .iter()
        .take(cap)
        .map(|d| convert::diagnostic(uri, &analysis.file, d, encoding, lint_docs))
        .collect();
    let more = analysis.diagnostics.len().saturating_sub(cap);
    if more > 0 {
        out.push(convert::left_out(
            more,
            analysis.diagnostics.len(),
            &analysis.file.path,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "machine: m\ninitial: a\nstates:\n  a: {}\n";

    fn document(name: &str, used: u64) -> Document {
        let text = TEXT.to_string();
        let path = PathBuf::from(name);
        let kind = Kind::of_path(&path).unwrap();
        let never = AtomicBool::new(false);
        let config = Config::defaults(PathBuf::from("."));
        let analysis = super::super::analyze(&path, text.clone(), kind, &config, &never);
        let analysis = Arc::new(analysis.unwrap());
        Document {
            uri: format!("file:///{name}").parse().unwrap(),
            path,
            kind,
            text,
            generation: 0,
            stale: Arc::new(AtomicBool::new(false)),
            changed: None,
            used,
            published: Some(0),
            analysis: Some(Arc::clone(&analysis)),
            last_parsed: Some(analysis),
            last_parsed_generation: 0,
            due: None,
            running: false,
            waiting: Vec::new(),
        }
    }

    #[test]
    fn the_least_recently_used_analyses_are_dropped() {
        let (sender, _client) = crossbeam_channel::unbounded();
        let (jobs, _workers) = crossbeam_channel::unbounded();
        let mut server = Server {
            sender,
            encoding: PositionEncoding::Utf16,
            pull: false,
            refresh: false,
            lint_docs: convert::LintDocs::default(),
            options: Options {
                keep_analyses_of_bytes: 2 * TEXT.len(),
                ..Options::default()
            },
            documents: HashMap::new(),
            configs: HashMap::new(),
            jobs,
            release: Vec::new(),
            next_request: 0,
            clock: 0,
            running: 0,
            cancelled: 0,
        };
        for (name, used) in [("a.yaml", 3), ("b.yaml", 1), ("c.yaml", 4), ("d.yaml", 2)] {
            let document = document(name, used);
            server.documents.insert(document.uri.clone(), document);
        }
        // A document with a request waiting keeps its analysis, however old.
        let waiting = "file:///d.yaml".parse().unwrap();
        server
            .documents
            .get_mut(&waiting)
            .unwrap()
            .waiting
            .push(Waiting {
                id: RequestId::from(1),
                method: "textDocument/hover".into(),
                params: Value::Null,
            });
        server.evict();
        let mut kept: Vec<&str> = server
            .documents
            .values()
            .filter(|d| d.analysis.is_some())
            .map(|d| d.path.to_str().unwrap())
            .collect();
        kept.sort();
        assert_eq!(kept, ["a.yaml", "c.yaml", "d.yaml"]);
        let dropped = &server.documents[&"file:///b.yaml".parse().unwrap()];
        assert!(dropped.last_parsed.is_none() && dropped.text.starts_with("machine: m"));
    }
}
