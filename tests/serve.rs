//! `idemchart serve` over real HTTP: the built binary on a free port of
//! 127.0.0.1, a reqwest client, curl (one shell test) and Node (the example
//! host). Every status the service answers, duplicates byte for byte,
//! concurrent clients, SIGKILL and SIGTERM, timers, and effects POSTed to an
//! endpoint that fails, then answers, or times out after doing the work.
//!
//! The PostgreSQL runs are ignored unless asked for (`scripts/test` runs them
//! with `IDEMCHART_PG` set), each on a fresh schema.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

const MACHINES: &str = "tests/data/serve/machines";

static NEXT: AtomicU64 = AtomicU64::new(0);

fn unique(name: &str) -> String {
    format!(
        "{name}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("idemchart-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// A fresh SQLite store, as a `--store` string.
fn sqlite_store(name: &str) -> String {
    format!("sqlite:{}", scratch().join(unique(name) + ".db").display())
}

/// A fresh schema of the server `IDEMCHART_PG` names, as a `--store` string.
fn postgres_store(name: &str) -> String {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    let schema = unique(name);
    // The sync client runs a runtime of its own, which may not start on a
    // thread of the test's runtime.
    let (server, create) = (base.clone(), format!("CREATE SCHEMA {schema}"));
    std::thread::spawn(move || {
        ::postgres::Client::connect(&server, ::postgres::NoTls)
            .expect("connect to PostgreSQL")
            .batch_execute(&create)
            .expect("create schema");
    })
    .join()
    .expect("create the schema");
    format!("postgres:{base} options='-c search_path={schema}'")
}

use crate::support::serve_server;
use serve_server::Server;

impl Server {
    /// Starts the binary on a port the system picks, and waits until it
    /// listens (it logs the address).
    fn start(store: &str, extra: &[&str]) -> Server {
        Server::start_serving(MACHINES, store, extra)
    }

    /// [`Server::start`] with the machines of `machines`.
    fn start_serving(machines: &str, store: &str, extra: &[&str]) -> Server {
        Server::spawn(
            Command::new(env!("CARGO_BIN_EXE_idemchart")),
            machines,
            "127.0.0.1:0",
            store,
            extra,
        )
    }
}

/// One answer: status, the headers that matter here, and the body's bytes.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    status: StatusCode,
    content_type: String,
    replayed: bool,
    body: String,
}

impl Answer {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

async fn read(response: reqwest::Response) -> Answer {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let content_type = header("content-type").unwrap_or_default();
    let replayed = match header("idempotent-replayed").as_deref() {
        None => false,
        Some("true") => true,
        Some(other) => panic!("Idempotent-Replayed: {other}"),
    };
    let status = response.status();
    let body = response.text().await.expect("read the body");
    Answer {
        status,
        content_type,
        replayed,
        body,
    }
}

async fn try_post(
    client: &reqwest::Client,
    url: &str,
    body: &str,
    key: Option<&str>,
) -> reqwest::Result<Answer> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    Ok(read(request.send().await?).await)
}

async fn post(client: &reqwest::Client, url: &str, body: &str, key: Option<&str>) -> Answer {
    try_post(client, url, body, key).await.expect("POST")
}

async fn get(client: &reqwest::Client, url: &str) -> Answer {
    read(client.get(url).send().await.expect("GET")).await
}

/// POSTs until the answer is not 409 (another request applying the same id).
async fn post_settled(
    client: &reqwest::Client,
    url: &str,
    body: &str,
    key: Option<&str>,
) -> Answer {
    loop {
        let answer = post(client, url, body, key).await;
        if answer.status != StatusCode::CONFLICT {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn pay(id: &str, amount: f64) -> String {
    serde_json::json!({"type": "PAY", "data": {"payId": id, "amount": amount}}).to_string()
}

const ADD: &str = r#"{"type": "ADD"}"#;

fn problem(answer: &Answer, status: u16) -> String {
    assert_eq!(answer.status.as_u16(), status, "{}", answer.body);
    assert_eq!(answer.content_type, "application/problem+json");
    let doc = answer.json();
    assert_eq!(doc["status"], status);
    answer.body.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_over_http() {
    let server = Server::start(&sqlite_store("statuses"), &["--max-body", "512"]);
    let client = reqwest::Client::new();
    let order = server.url("/machines/order/processes/o1/events");

    let first = post(&client, &order, &pay("p1", 5.0), None).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.content_type, "application/json");
    assert!(!first.replayed);
    let response = first.json();
    assert_eq!(response["outcome"], "applied");
    assert_eq!(response["revision"], 1);
    assert_eq!(response["configuration"], serde_json::json!(["paid"]));
    // The same payload with its keys in another order and other spacing is
    // the same event.
    let again = post(
        &client,
        &order,
        r#"{"data":{"amount":5.0,"payId":"p1"},   "type":"PAY"}"#,
        None,
    )
    .await;
    assert_eq!((again.status, again.replayed), (StatusCode::OK, true));
    assert_eq!(again.body, first.body, "a duplicate gets the same bytes");

    let reused = post(&client, &order, &pay("p1", 6.0), None).await;
    insta::assert_snapshot!("id_reused_422", problem(&reused, 422));
    let bad_type = post(
        &client,
        &order,
        r#"{"type": "PAY", "data": {"payId": "p2", "amount": "five"}}"#,
        None,
    )
    .await;
    insta::assert_snapshot!("bad_payload_422", problem(&bad_type, 422));
    let missing = post(
        &client,
        &order,
        r#"{"type": "PAY", "data": {"payId": "p3"}}"#,
        None,
    )
    .await;
    insta::assert_snapshot!("payload_field_missing_422", problem(&missing, 422));
    // The declared id field is missing and there is no header: no id.
    let no_id = post(
        &client,
        &order,
        r#"{"type": "PAY", "data": {"amount": 1}}"#,
        None,
    )
    .await;
    insta::assert_snapshot!("declared_id_missing_400", problem(&no_id, 400));

    let counter = server.url("/machines/counter/processes/c1/events");
    let no_id = post(&client, &counter, ADD, None).await;
    insta::assert_snapshot!("no_id_400", problem(&no_id, 400));
    let not_json = post(&client, &counter, "{\"type\": ", Some("k")).await;
    insta::assert_snapshot!("not_json_400", problem(&not_json, 400));
    let reserved = post(&client, &counter, ADD, Some("timer:x")).await;
    insta::assert_snapshot!("reserved_id_400", problem(&reserved, 400));
    let too_big = format!(
        r#"{{"type": "ADD", "data": {{"pad": "{}"}}}}"#,
        "x".repeat(600)
    );
    let too_big = post(&client, &counter, &too_big, Some("big")).await;
    insta::assert_snapshot!("body_too_large_413", problem(&too_big, 413));
    let unknown = post(
        &client,
        &server.url("/machines/nope/processes/c1/events"),
        ADD,
        Some("k"),
    )
    .await;
    insta::assert_snapshot!("unknown_machine_404", problem(&unknown, 404));
    // o1 runs `order`: the counter cannot take it over.
    let wrong = post(
        &client,
        &server.url("/machines/counter/processes/o1/events"),
        ADD,
        Some("k"),
    )
    .await;
    insta::assert_snapshot!("wrong_machine_409", problem(&wrong, 409));

    // The Idempotency-Key header is the id of an event without a declared
    // id field.
    let mut bodies = Vec::new();
    for key in ["k1", "k2", "k3"] {
        let answer = post(&client, &counter, ADD, Some(key)).await;
        assert_eq!((answer.status, answer.replayed), (StatusCode::OK, false));
        bodies.push(answer.body);
    }
    let replay = post(&client, &counter, ADD, Some("k2")).await;
    assert_eq!((replay.status, replay.replayed), (StatusCode::OK, true));
    assert_eq!(replay.body, bodies[1]);

    let state = get(&client, &server.url("/machines/counter/processes/c1")).await;
    assert_eq!(state.status, StatusCode::OK);
    assert_eq!(
        state.json(),
        serde_json::json!({"process": "c1", "machine": "counter", "revision": 3,
            "configuration": ["counting"], "context": {"n": 3}, "next_timer_at": null})
    );
    let absent = get(&client, &server.url("/machines/counter/processes/c9")).await;
    insta::assert_snapshot!("unknown_process_404", problem(&absent, 404));
    let other = get(&client, &server.url("/machines/counter/processes/o1")).await;
    problem(&other, 404);

    // Paged applied events, each with the response its sender got.
    let events = server.url("/machines/counter/processes/c1/events");
    let page = get(&client, &format!("{events}?limit=2")).await.json();
    assert_eq!(page["next_offset"], 2);
    let rest = get(&client, &format!("{events}?offset=2&limit=2"))
        .await
        .json();
    assert_eq!(rest["next_offset"], serde_json::Value::Null);
    let listed: Vec<(String, String)> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["events"].as_array().unwrap())
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["response"].to_string(),
            )
        })
        .collect();
    let sent: Vec<(String, String)> = ["k1", "k2", "k3"]
        .iter()
        .zip(&bodies)
        .map(|(k, b)| {
            (
                k.to_string(),
                serde_json::from_str::<serde_json::Value>(b)
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(listed, sent);
    let bad_query = get(&client, &format!("{events}?limit=many")).await;
    problem(&bad_query, 400);

    let health = get(&client, &server.url("/healthz")).await;
    assert_eq!(
        (health.status, health.body.as_str()),
        (StatusCode::OK, r#"{"status":"ok"}"#)
    );
    let metrics = get(&client, &server.url("/metrics")).await;
    assert!(
        metrics
            .content_type
            .starts_with("text/plain; version=0.0.4")
    );
    for line in [
        "idemchart_events_total{outcome=\"applied\"} 4",
        "idemchart_events_total{outcome=\"duplicate\"} 2",
        "idemchart_events_total{outcome=\"conflict\"} 1",
        "idemchart_events_total{outcome=\"ignored\"} 0",
        "idemchart_apply_duration_seconds_count 7",
        // The PAY left `notify` in the outbox, and no endpoint takes it.
        "idemchart_outbox_pending 1",
        "idemchart_outbox_dead 0",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "no `{line}` in\n{}",
            metrics.body
        );
    }
    let log = server.log();
    assert!(
        log.contains("process=o1 event_id=p1 event=PAY") && log.contains("outcome=\"duplicate\""),
        "the log names the process and the event id:\n{log}"
    );
}

/// Every `(method, path)` of the router is in the OpenAPI document and the
/// other way round, the service serves the document, and each documented
/// operation answers one of its documented statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_matches_the_routes() {
    let doc: serde_json::Value = serde_json::from_str(idemchart::serve::OPENAPI).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: HashSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "parameters")
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let routed: HashSet<(String, String)> = idemchart::serve::ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, routed);
    insta::assert_json_snapshot!("openapi", doc);

    let server = Server::start(&sqlite_store("openapi"), &[]);
    let client = reqwest::Client::new();
    let served = get(&client, &server.url("/openapi.json")).await;
    assert_eq!(served.body, idemchart::serve::OPENAPI);
    for (method, path) in idemchart::serve::ROUTES {
        let concrete = path
            .replace("{machine}", "counter")
            .replace("{process}", "c1");
        let answer = match method {
            "post" => post(&client, &server.url(&concrete), ADD, Some("k")).await,
            _ => get(&client, &server.url(&concrete)).await,
        };
        let statuses = doc["paths"][path][method]["responses"].as_object().unwrap();
        assert!(
            statuses.contains_key(answer.status.as_str()),
            "{method} {concrete} answered {}, documented: {:?}",
            answer.status,
            statuses.keys().collect::<Vec<_>>()
        );
    }
}

/// 8 clients send every event twice, interleaved, to one process: each
/// event is applied once, and every answer to an id has the same bytes.
async fn eight_clients_send_every_event_twice(store: &str) {
    let server = Arc::new(Server::start(store, &[]));
    let client = reqwest::Client::new();
    let url = server.url("/machines/counter/processes/shared/events");
    const EVENTS: usize = 60;
    let mut tasks = Vec::new();
    for c in 0..8 {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            // Each client walks the ids in its own order, each id twice.
            for i in 0..EVENTS * 2 {
                let id = format!("e{}", (i / 2 * 7 + c * 11) % EVENTS);
                let answer = post_settled(&client, &url, ADD, Some(&id)).await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
                answers.push((id, answer));
            }
            answers
        }));
    }
    let mut by_id: HashMap<String, Vec<Answer>> = HashMap::new();
    for task in tasks {
        for (id, answer) in task.await.unwrap() {
            by_id.entry(id).or_default().push(answer);
        }
    }
    assert_eq!(by_id.len(), EVENTS);
    for (id, answers) in &by_id {
        assert_eq!(answers.len(), 16);
        assert_eq!(
            answers.iter().filter(|a| !a.replayed).count(),
            1,
            "{id} applied once"
        );
        assert!(
            answers.iter().all(|a| a.body == answers[0].body),
            "{id}: one answer"
        );
    }
    let state = get(&client, &server.url("/machines/counter/processes/shared"))
        .await
        .json();
    assert_eq!(state["context"]["n"], EVENTS);
    assert_eq!(state["revision"], EVENTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_send_every_event_twice_sqlite() {
    eight_clients_send_every_event_twice(&sqlite_store("eight")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn eight_clients_send_every_event_twice_postgres() {
    eight_clients_send_every_event_twice(&postgres_store("eight")).await;
}

/// Clients send events to 4 processes while the service is stopped: by
/// SIGKILL, or by SIGTERM (graceful). A restarted service on the same store
/// gets every event again: those answered before answer the same bytes,
/// and every process counts each of its events once.
async fn stop_under_load_then_resend(store: &str, graceful: bool) {
    const PER_PROCESS: usize = 40;
    let mut server = Server::start(store, &[]);
    let client = reqwest::Client::new();
    let answered: Arc<Mutex<BTreeMap<(usize, usize), String>>> = Arc::default();
    let mut tasks = Vec::new();
    for p in 0..4 {
        let (client, answered) = (client.clone(), Arc::clone(&answered));
        let url = server.url(&format!("/machines/counter/processes/load{p}/events"));
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_PROCESS {
                match try_post(&client, &url, ADD, Some(&format!("e{i}"))).await {
                    Ok(answer) if answer.status == StatusCode::OK => {
                        answered.lock().unwrap().insert((p, i), answer.body);
                    }
                    // A 5xx would say the service answered without an answer.
                    Ok(answer) => panic!("{}: {}", answer.status, answer.body),
                    // The service went away mid-request.
                    Err(_) => return,
                }
            }
        }));
    }
    let started = Instant::now();
    while answered.lock().unwrap().len() < 30 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    if graceful {
        let status = server.terminate();
        assert!(
            status.success(),
            "SIGTERM exit: {status:?}\n{}",
            server.log()
        );
        assert!(server.log().contains("stopped"), "{}", server.log());
    } else {
        server.kill();
    }
    for task in tasks {
        task.await.unwrap();
    }
    let before = answered.lock().unwrap().clone();
    assert!(
        before.len() >= 30 && before.len() < 4 * PER_PROCESS,
        "{}",
        before.len()
    );

    let server = Server::start(store, &[]);
    for p in 0..4 {
        let url = server.url(&format!("/machines/counter/processes/load{p}/events"));
        for i in 0..PER_PROCESS {
            let answer = post(&client, &url, ADD, Some(&format!("e{i}"))).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            if let Some(body) = before.get(&(p, i)) {
                assert!(answer.replayed);
                assert_eq!(&answer.body, body, "load{p} e{i} answers as before");
            }
        }
        let state = get(
            &client,
            &server.url(&format!("/machines/counter/processes/load{p}")),
        )
        .await;
        assert_eq!(
            state.json()["context"]["n"],
            PER_PROCESS,
            "load{p}: nothing lost, nothing twice"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_load_then_restart_sqlite() {
    stop_under_load_then_resend(&sqlite_store("sigkill"), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_finishes_requests_sqlite() {
    stop_under_load_then_resend(&sqlite_store("sigterm"), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn sigkill_under_load_then_restart_postgres() {
    stop_under_load_then_resend(&postgres_store("sigkill"), false).await;
}

/// Waits until `process` (`machine/process`) is in `state`; its state then.
async fn wait_for(
    client: &reqwest::Client,
    server: &Server,
    process: &str,
    state: &str,
) -> serde_json::Value {
    let (machine, process) = process.split_once('/').expect("machine/process");
    let url = server.url(&format!("/machines/{machine}/processes/{process}"));
    server
        .until(async || {
            let answer = get(client, &url).await.json();
            match answer["configuration"] == serde_json::json!([state]) {
                true => Ok(answer),
                false => Err(format!("{process} never reached {state}: {answer}")),
            }
        })
        .await
}

/// The timer firings among the applied events of `process`.
async fn firings(client: &reqwest::Client, server: &Server, process: &str) -> Vec<String> {
    let url = server.url(&format!("/machines/order/processes/{process}/events"));
    get(client, &url).await.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .filter(|id| id.starts_with("timer:"))
        .collect()
}

/// The service fires due timers itself, each once, also with several
/// instances on one store.
async fn timers_fire_once(stores: [&str; 2]) {
    let servers = [Server::start(stores[0], &[]), Server::start(stores[1], &[])];
    let client = reqwest::Client::new();
    for n in 0..10 {
        let server = &servers[n % 2];
        let url = server.url(&format!("/machines/order/processes/t{n}/events"));
        let answer = post(&client, &url, &pay(&format!("pay{n}"), 1.0), None).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(answer.json()["configuration"] == serde_json::json!(["paid"]));
    }
    for n in 0..10 {
        wait_for(&client, &servers[0], &format!("order/t{n}"), "closed").await;
        assert_eq!(
            firings(&client, &servers[1], &format!("t{n}")).await.len(),
            1
        );
    }
    let state = get(&client, &servers[0].url("/machines/order/processes/t0"))
        .await
        .json();
    assert_eq!(state["next_timer_at"], serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_fire_once_sqlite() {
    // Two services on one SQLite file: its write lock and the revision
    // check keep each firing single there too.
    let store = sqlite_store("timers");
    timers_fire_once([&store, &store]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn two_instances_on_one_postgres_fire_each_timer_once() {
    let store = postgres_store("timers");
    timers_fire_once([&store, &store]).await;
}

/// A receiver of effects on 127.0.0.1 that records every call by its
/// `Idempotency-Key` and does the work once per key: `/flaky` answers 500
/// to a key's first call, `/slow` does the work and then answers too late
/// for the caller's timeout the first time, `/reject` answers 400, `/score`
/// answers a score in JSON.
#[derive(Default)]
struct Receiver {
    calls: Mutex<Vec<(String, String, String)>>,
    done: Mutex<HashSet<String>>,
    /// The `Idempotency-Completion-Token` of each key's call, if it had one.
    tokens: Mutex<HashMap<String, String>>,
}

async fn receive(
    axum::extract::State(receiver): axum::extract::State<Arc<Receiver>>,
    axum::extract::Path(mode): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
    body: String,
) -> (axum::http::StatusCode, String) {
    let key = headers
        .get("idempotency-key")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    if let Some(token) = headers.get("idempotency-completion-token") {
        let token = token.to_str().unwrap().to_string();
        receiver.tokens.lock().unwrap().insert(key.clone(), token);
    }
    let first = {
        let mut calls = receiver.calls.lock().unwrap();
        let first = !calls.iter().any(|(_, k, _)| *k == key);
        calls.push((mode.clone(), key.clone(), body.clone()));
        first
    };
    match mode.as_str() {
        "flaky" if first => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "try later".into(),
        ),
        "slow" if first => {
            receiver.done.lock().unwrap().insert(key);
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            (axum::http::StatusCode::OK, r#"{"late": true}"#.into())
        }
        // Taken: the answer comes later, through the completion route.
        "accept" => (axum::http::StatusCode::ACCEPTED, String::new()),
        "reject" => (
            axum::http::StatusCode::BAD_REQUEST,
            r#"{"error": "no such customer"}"#.into(),
        ),
        "score" => {
            receiver.done.lock().unwrap().insert(key);
            (
                axum::http::StatusCode::OK,
                format!(r#"{{"score": 42, "asked": {body}}}"#),
            )
        }
        _ => {
            receiver.done.lock().unwrap().insert(key);
            (axum::http::StatusCode::OK, r#"{"ok": true}"#.into())
        }
    }
}

async fn start_receiver() -> (Arc<Receiver>, String) {
    let receiver = Arc::new(Receiver::default());
    let app = axum::Router::new()
        .route("/{mode}", axum::routing::post(receive))
        .with_state(Arc::clone(&receiver));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (receiver, format!("http://{address}"))
}

/// An effects file that sends `effect` to `url`, with short waits.
fn effects_file_for(name: &str, effect: &str, url: &str) -> String {
    effects_file_waiting(name, effect, url, "50ms")
}

/// An effects file that sends `effect` to `url` and waits `backoff` before
/// it sends again.
pub(crate) fn effects_file_waiting(name: &str, effect: &str, url: &str, backoff: &str) -> String {
    let path = scratch().join(unique(name) + ".toml");
    std::fs::write(
        &path,
        format!(
            "[effects.{effect}]\nurl = \"{url}\"\ntimeout = \"300ms\"\nbackoff = \"{backoff}\"\nmax_attempts = 5\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn effects_file(name: &str, notify_url: &str) -> String {
    effects_file_for(name, "notify", notify_url)
}

/// Waits until the service's metrics show `line`.
async fn wait_for_metric(client: &reqwest::Client, server: &Server, line: &str) -> String {
    server
        .until(async || {
            let metrics = get(client, &server.url("/metrics")).await.body;
            match metrics.lines().any(|l| l == line) {
                true => Ok(metrics),
                false => Err(format!("no `{line}` in\n{metrics}")),
            }
        })
        .await
}

/// The outbox rows of a SQLite store, as `idemchart outbox` lists them.
fn outbox(store: &str) -> Vec<serde_json::Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["outbox", "--store", store])
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_answered_500_then_200_is_done_under_one_key() {
    let (receiver, base) = start_receiver().await;
    let store = sqlite_store("flaky");
    let effects = effects_file("flaky", &format!("{base}/flaky"));
    let server = Server::start(&store, &["--effects", &effects]);
    let client = reqwest::Client::new();
    let answer = post(
        &client,
        &server.url("/machines/order/processes/f1/events"),
        &pay("f1", 7.0),
        None,
    )
    .await;
    let key = answer.json()["effects"][0]["key"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for_metric(
        &client,
        &server,
        "idemchart_effects_dispatched_total{result=\"done\"} 1",
    )
    .await;
    let calls = receiver.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [
            (
                "flaky".to_string(),
                key.clone(),
                r#"{"amount":7.0}"#.to_string()
            ),
            (
                "flaky".to_string(),
                key.clone(),
                r#"{"amount":7.0}"#.to_string()
            ),
        ]
    );
    let rows = outbox(&store);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["attempts"].as_u64()),
        (Some("done"), Some(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_that_times_out_after_doing_the_work_is_done_once() {
    let (receiver, base) = start_receiver().await;
    let store = sqlite_store("slow");
    let effects = effects_file("slow", &format!("{base}/slow"));
    let server = Server::start(&store, &["--effects", &effects]);
    let client = reqwest::Client::new();
    post(
        &client,
        &server.url("/machines/order/processes/s1/events"),
        &pay("s1", 3.0),
        None,
    )
    .await;
    wait_for_metric(
        &client,
        &server,
        "idemchart_effects_dispatched_total{result=\"done\"} 1",
    )
    .await;
    let metrics = get(&client, &server.url("/metrics")).await.body;
    assert!(
        metrics.contains("idemchart_effects_dispatched_total{result=\"retried\"} 1\n"),
        "{metrics}"
    );
    // Two calls, one key, and the work done once: the key made the retry
    // harmless.
    let calls = receiver.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, calls[1].1);
    assert_eq!(receiver.done.lock().unwrap().len(), 1);
}

/// An invocation's endpoint answers 200 with JSON: the done event carries
/// it as its output. Another answers 400: the error event carries the
/// status and the body, and the row is not tried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invocation_completes_with_the_endpoint_answer() {
    let (receiver, base) = start_receiver().await;
    let client = reqwest::Client::new();
    let ask = r#"{"type": "ASK", "data": {"askId": "a1", "amount": 12}}"#;

    let scoring = effects_file_for("score", "score", &format!("{base}/score"));
    let server = Server::start(&sqlite_store("score"), &["--effects", &scoring]);
    let url = server.url("/machines/lookup/processes/l1/events");
    let asked = post(&client, &url, ask, None).await;
    assert_eq!(asked.json()["configuration"], serde_json::json!(["asking"]));
    let state = wait_for(&client, &server, "lookup/l1", "scored").await;
    assert_eq!(state["context"]["score"], 42);
    let events = get(&client, &format!("{url}?limit=10")).await.json();
    let done = &events["events"][1];
    assert!(done["id"].as_str().is_some(), "{events}");
    assert_eq!(
        done["response"]["configuration"],
        serde_json::json!(["scored"])
    );

    let refusing = effects_file_for("reject", "score", &format!("{base}/reject"));
    let store = sqlite_store("reject");
    let server = Server::start(&store, &["--effects", &refusing]);
    let url = server.url("/machines/lookup/processes/l2/events");
    post(&client, &url, ask, None).await;
    let state = wait_for(&client, &server, "lookup/l2", "refused").await;
    assert_eq!(state["context"]["status"], 400);
    wait_for_metric(
        &client,
        &server,
        "idemchart_effects_dispatched_total{result=\"failed\"} 1",
    )
    .await;
    let calls = receiver.calls.lock().unwrap().clone();
    assert_eq!(
        calls.iter().filter(|c| c.0 == "reject").count(),
        1,
        "a refusal is not retried"
    );
    assert_eq!(
        calls.iter().find(|c| c.0 == "score").unwrap().2,
        r#"{"amount":12}"#
    );
}

/// An effect without an endpoint stays in the outbox, untouched, for the
/// host's own dispatcher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_without_an_endpoint_stays_in_the_outbox() {
    let (_receiver, base) = start_receiver().await;
    let store = sqlite_store("unserved");
    let effects = effects_file("unserved", &format!("{base}/ok"));
    let server = Server::start(&store, &["--effects", &effects]);
    let client = reqwest::Client::new();
    let url = server.url("/machines/order/processes/u1/events");
    post(&client, &url, &pay("u1", 1.0), None).await;
    let shipped = post(&client, &url, r#"{"type": "SHIP"}"#, Some("ship-1")).await;
    assert_eq!(
        shipped.json()["configuration"],
        serde_json::json!(["shipped"])
    );
    wait_for_metric(
        &client,
        &server,
        "idemchart_effects_dispatched_total{result=\"done\"} 1",
    )
    .await;
    // Several more rounds of the dispatcher.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rows = outbox(&store);
    let archive: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["effect"] == "archive").collect();
    assert_eq!(archive.len(), 1);
    assert_eq!(archive[0]["status"], "pending");
    assert_eq!(archive[0]["attempts"], 0);
}

#[test]
fn a_machine_that_does_not_load_stops_startup() {
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args([
            "serve",
            "--machines",
            "tests/data/serve/broken",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--store", &sqlite_store("broken")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!(
        "broken_machine_stderr",
        String::from_utf8(output.stderr).unwrap()
    );
}

#[test]
fn a_bad_effects_file_stops_startup() {
    let path = scratch().join(unique("bad-effects") + ".toml");
    std::fs::write(
        &path,
        "[effects.notify]\nurl = \"http://127.0.0.1:1/\"\ntimout = \"1s\"\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["serve", "--machines", MACHINES, "--listen", "127.0.0.1:0"])
        .args(["--store", &sqlite_store("bad-effects"), "--effects"])
        .arg(&path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.replace(&path.display().to_string(), "EFFECTS"),
        "error: EFFECTS:3:1: unknown field `timout`, expected one of `url`, `timeout`, `max_attempts`, `backoff`, `on_timeout`\n"
    );
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program ARGS` against a fresh service, whose base URL is the
/// last argument and `IDEMCHART_URL`; its standard output once it succeeds,
/// or `None` (with a message) where `program` is not installed.
fn host_run(program: &str, args: &[&str], store: &str) -> Option<String> {
    if !has(program) {
        eprintln!("skipped: {program} is not installed");
        return None;
    }
    let server = Server::start(store, &[]);
    let output = Command::new(program)
        .args(args)
        .arg(&server.base)
        .env("IDEMCHART_URL", &server.base)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(stdout)
}

/// `tests/serve_curl.sh`: curl sends an event twice and compares the bytes.
#[test]
fn curl_sends_an_event_twice() {
    // The script checks the bytes itself; bash runs it where curl is.
    if !has("curl") {
        eprintln!("skipped: curl is not installed");
        return;
    }
    if let Some(stdout) = host_run("bash", &["tests/serve_curl.sh"], &sqlite_store("curl")) {
        // A key is an HMAC under the store's random secret: its bytes
        // differ on every run (the script itself checks that both answers
        // carry the same bytes).
        insta::with_settings!({filters => vec![(r#""key":"[0-9a-f]{64}""#, r#""key":"[key]""#)]}, {
            insta::assert_snapshot!("curl_transcript", stdout);
        });
    }
}

/// `examples/node/send-twice.mjs`: a host in another language.
#[test]
fn a_node_host_gets_the_same_answer_twice() {
    let store = sqlite_store("node");
    if let Some(stdout) = host_run("node", &["examples/node/send-twice.mjs"], &store) {
        insta::assert_snapshot!("node_output", stdout);
    }
}

/// Two files of one machine name stop startup with one error that names
/// both, and nothing else: no "does not load", which is not what happened.
#[test]
fn two_files_of_one_machine_name_are_the_only_error() {
    let dir = scratch().join(unique("twins"));
    std::fs::create_dir_all(&dir).expect("the machines directory");
    let order = std::fs::read_to_string(format!("{MACHINES}/order.yaml")).expect("order.yaml");
    std::fs::write(dir.join("order.yaml"), &order).expect("the first file");
    std::fs::write(dir.join("order-copy.yaml"), &order).expect("the second file");
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["serve", "--machines"])
        .arg(&dir)
        .args(["--store", &sqlite_store("twins"), "--listen", "127.0.0.1:0"])
        .output()
        .expect("idemchart runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("machine `order` is in ")
            && errors[0].contains("order-copy.yaml")
            && errors[0].contains("each name serves one machine"),
        "{stderr}"
    );
}

/// Waits until the service's log has a line with `text`.
fn wait_for_log(server: &Server, text: &str) {
    let started = Instant::now();
    while !server.log().contains(text) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no `{text}` in the log:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 29: the service purges by itself. With a retention of 1 s and a
/// purge every 100 ms, an applied id is replayed at first, and once the
/// purge has taken its mark the same id is a new event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_purges_what_the_retention_no_longer_needs() {
    let machines = scratch().join(unique("retained"));
    std::fs::create_dir_all(&machines).unwrap();
    std::fs::write(
        machines.join("counter.yaml"),
        "machine: counter\ncontext: { n: 0 }\ndedup: { retention: 1s }\ninitial: counting\nstates:\n  counting:\n    on:\n      ADD:\n        actions:\n          - assign: { n: \"context.n + 1\" }\n",
    )
    .unwrap();
    let server = Server::start_serving(
        &machines.display().to_string(),
        &sqlite_store("purge"),
        &["--purge-ms", "100"],
    );
    let client = reqwest::Client::new();
    let url = server.url("/machines/counter/processes/c1/events");
    let first = post(&client, &url, r#"{"type":"ADD"}"#, Some("e1")).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.json()["revision"], 1);
    let again = post(&client, &url, r#"{"type":"ADD"}"#, Some("e1")).await;
    assert!(again.replayed, "inside the retention, a duplicate");
    assert_eq!(again.body, first.body);
    wait_for_log(&server, "purged machine=counter applied=1");
    let after = post(&client, &url, r#"{"type":"ADD"}"#, Some("e1")).await;
    assert_eq!(after.status, StatusCode::OK);
    assert!(!after.replayed, "the mark is gone: {}", server.log());
    assert_eq!(after.json()["revision"], 2);
    assert_eq!(after.json()["context"]["n"], 2);
}

/// Issue 29: a store that never answers stops startup after
/// `--store-wait-secs`, with exit 2, each attempt logged.
#[test]
fn a_store_that_never_answers_is_exit_2_after_the_wait() {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["serve", "--machines", MACHINES, "--listen", "127.0.0.1:0"])
        .args(["--store", "sqlite:/nonexistent-dir/orders.db"])
        .args(["--store-wait-secs", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("the store did not answer within --store-wait-secs 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the store does not answer; trying again"),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(1), "it waited: {took:?}");
    assert!(took < Duration::from_secs(20), "and no longer: {took:?}");
}

/// Forwards every connection to `127.0.0.1:<to>` from a listener on
/// `port`, once `port` is free: the store's server, appearing late.
async fn forward(port: u16, to: u16) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the proxy's port");
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
}

/// Issue 29: an instance started while PostgreSQL does not answer waits,
/// and serves once it does. The server "appears" as a proxy on a port that
/// refused connections when the service started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: IDEMCHART_PG"]
async fn serve_waits_for_a_postgres_that_comes_up_late() {
    let store = postgres_store("late");
    let port_of = |text: &str| -> u16 {
        let at = text.find("port=").expect("a port in IDEMCHART_PG") + 5;
        text[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let real = port_of(&store);
    // A free port, closed again: nothing answers there yet.
    let late = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let through = store.replace(&format!("port={real}"), &format!("port={late}"));
    let waiting = std::thread::spawn(move || Server::start(&through, &["--store-wait-secs", "60"]));
    // The service tries, finds nothing, and waits (its first pauses are
    // 100 and 200 ms); then the store comes up.
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(!waiting.is_finished(), "it started before the store was up");
    forward(late, real).await;
    let server = tokio::task::spawn_blocking(move || waiting.join().unwrap())
        .await
        .unwrap();
    assert!(
        server
            .log()
            .contains("the store does not answer; trying again"),
        "{}",
        server.log()
    );
    let client = reqwest::Client::new();
    let url = server.url("/machines/counter/processes/late/events");
    let answer = post(&client, &url, r#"{"type":"ADD"}"#, Some("l1")).await;
    assert_eq!(answer.status, StatusCode::OK);
}

/// POSTs `body` as the completion of `key` of `lookup/{process}`, with
/// `token` as its completion token when there is one.
async fn complete(
    client: &reqwest::Client,
    server: &Server,
    process: &str,
    key: &str,
    token: Option<&str>,
    body: &str,
) -> Answer {
    let url = server.url(&format!(
        "/machines/lookup/processes/{process}/completions/{key}"
    ));
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.header("Idempotency-Completion-Token", token);
    }
    read(request.send().await.expect("POST")).await
}

/// Waits until the receiver has the completion token of `key`'s call.
async fn token_of(receiver: &Receiver, key: &str) -> String {
    let started = Instant::now();
    loop {
        if let Some(token) = receiver.tokens.lock().unwrap().get(key) {
            return token.clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no call of {key}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue 29: a completion needs its row's token. The key alone (shown in
/// the answer to the event that started the invocation), a wrong token or
/// the token of another row are refused 403 and change nothing: the process
/// still waits and its row is still pending. The receiver's own answer,
/// with the token its call carried, completes the process; the same answer
/// again is a duplicate, and another answer afterwards is refused 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_completion_is_refused_and_the_real_one_completes() {
    let (receiver, base) = start_receiver().await;
    let client = reqwest::Client::new();
    // The rows wait a minute before they are sent again, so that the test,
    // however slow the machine, sees each sent once and both still pending.
    let accepting = effects_file_waiting("accept", "score", &format!("{base}/accept"), "60s");
    let server = Server::start(&sqlite_store("complete"), &["--effects", &accepting]);
    let ask = |id: &str| format!(r#"{{"type": "ASK", "data": {{"askId": "{id}", "amount": 3}}}}"#);
    let events =
        |process: &str| server.url(&format!("/machines/lookup/processes/{process}/events"));
    let asked = post(&client, &events("f1"), &ask("a1"), None).await;
    let key = asked.json()["invocations"][0]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let other = post(&client, &events("f2"), &ask("a2"), None).await;
    let other_key = other.json()["invocations"][0]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let token = token_of(&receiver, &key).await;
    let other_token = token_of(&receiver, &other_key).await;
    assert_ne!(token, key, "the token is not the key");
    wait_for_metric(
        &client,
        &server,
        "idemchart_effects_dispatched_total{result=\"retried\"} 2",
    )
    .await;

    let forged = r#"{"output": {"score": 99, "receipt": "FORGED"}}"#;
    let wrong = "0".repeat(64);
    for attempt in [
        None,
        Some(key.as_str()),
        Some(wrong.as_str()),
        Some(other_token.as_str()),
    ] {
        let refused = complete(&client, &server, "f1", &key, attempt, forged).await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{attempt:?}: {}",
            refused.body
        );
        assert_eq!(refused.content_type, "application/problem+json");
        assert_eq!(
            refused.json()["type"],
            "https://idemchart.dev/problems/bad-completion-token"
        );
    }
    let state = get(&client, &server.url("/machines/lookup/processes/f1"))
        .await
        .json();
    assert_eq!(state["configuration"], serde_json::json!(["asking"]));
    assert_eq!(state["revision"], 1);
    let metrics = get(&client, &server.url("/metrics")).await.body;
    assert!(metrics.contains("idemchart_outbox_pending 2"), "{metrics}");

    let real = r#"{"output": {"score": 7}}"#;
    let done = complete(&client, &server, "f1", &key, Some(&token), real).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert!(!done.replayed);
    assert_eq!(done.json()["configuration"], serde_json::json!(["scored"]));
    assert_eq!(done.json()["context"]["score"], 7);
    let again = complete(&client, &server, "f1", &key, Some(&token), real).await;
    assert!(again.replayed, "{}", again.body);
    assert_eq!(again.body, done.body);
    let late = complete(&client, &server, "f1", &key, Some(&token), forged).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.body);
    // A token for another process's row does not reach this one either.
    let elsewhere = complete(&client, &server, "f1", &other_key, Some(&other_token), real).await;
    assert_eq!(
        elsewhere.status,
        StatusCode::NOT_FOUND,
        "{}",
        elsewhere.body
    );
    let state = get(&client, &server.url("/machines/lookup/processes/f2"))
        .await
        .json();
    assert_eq!(state["configuration"], serde_json::json!(["asking"]));
    let metrics = get(&client, &server.url("/metrics")).await.body;
    assert!(metrics.contains("idemchart_outbox_pending 1"), "{metrics}");
}
