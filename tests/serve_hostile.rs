//! `idemchart serve` against hostile and careless clients (issue 29): the
//! built binary on a free port of 127.0.0.1, reqwest and raw TCP. Every
//! refused request gets a 4xx problem document naming its rule, writes
//! nothing to the store (read back with SQLite), and puts no raw control
//! character in the log; idle and trickling connections are closed; tokens
//! are checked; random requests never get a 5xx nor stop the service.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MACHINES: &str = "tests/data/serve/machines";
const TYPE_BASE: &str = "https://idemchart.dev/problems/";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh SQLite file and its `--store` string.
fn sqlite_store(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("idemchart-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "{name}_{}.db",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let store = format!("sqlite:{}", path.display());
    (path, store)
}

use crate::support::serve_server;
use serve_server::Server;

impl Server {
    fn start_plain(store: &str, extra: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", store, extra)
    }

    fn start_at(listen: &str, store: &str, extra: &[&str]) -> Server {
        Server::spawn(
            Command::new(env!("CARGO_BIN_EXE_idemchart")),
            MACHINES,
            listen,
            store,
            extra,
        )
    }

    /// The binary under `ulimit -n open_files`, started through `sh`.
    fn start_with_open_files(open_files: u32, store: &str, extra: &[&str]) -> Server {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("ulimit -n {open_files} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_idemchart"),
        ]);
        Server::spawn(command, MACHINES, "127.0.0.1:0", store, extra)
    }
}

/// Rows of the store's tables of processes and applied events.
fn counts(path: &std::path::Path) -> (i64, i64) {
    let db = rusqlite::Connection::open(path).unwrap();
    let count = |table: &str| -> i64 {
        db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    (count("processes"), count("applied_events"))
}

/// A raw HTTP/1.1 exchange: writes `request`, reads until the server
/// closes or `Connection: close` ends the answer; the status and the text.
fn raw(address: &str, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// Checks that a raw answer is a problem document of `kind` and `status`.
fn raw_problem(answer: &(u16, String), status: u16, kind: &str) {
    let (got, text) = answer;
    assert_eq!(*got, status, "{text}");
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(doc["type"], format!("{TYPE_BASE}{kind}"), "{text}");
    assert!(doc["title"].is_string());
    assert_eq!(doc["status"], status);
}

struct Answer {
    status: u16,
    content_type: String,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("send");
    let headers = response.headers().clone();
    Answer {
        status: response.status().as_u16(),
        content_type: headers
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default(),
        headers,
        body: response.text().await.unwrap(),
    }
}

/// Checks a problem document of `kind` and `status`; its body.
fn problem(answer: &Answer, status: u16, kind: &str) -> serde_json::Value {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.content_type, "application/problem+json");
    let doc: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(doc["type"], format!("{TYPE_BASE}{kind}"), "{}", answer.body);
    assert!(doc["title"].is_string());
    assert_eq!(doc["status"], status);
    doc
}

fn post(
    client: &reqwest::Client,
    url: &str,
    body: &str,
    key: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request
}

const ADD: &str = r#"{"type": "ADD"}"#;

/// Each input error of the issue: a 4xx problem naming its rule, the
/// store unchanged, the log clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_errors_are_4xx_problems_that_write_nothing() {
    let (path, store) = sqlite_store("inputs");
    let server = Server::start_plain(&store, &[]);
    let client = reqwest::Client::new();
    let counter =
        |process: &str| server.url(&format!("/machines/counter/processes/{process}/events"));
    let order = |process: &str| server.url(&format!("/machines/order/processes/{process}/events"));
    let lookup = server.url("/machines/lookup/processes/l1/events");

    // (what, the request, status, kind)
    let long_key = "k".repeat(6000);
    let key_256 = "k".repeat(256);
    let long_process = "p".repeat(5000);
    let cases: Vec<(&str, reqwest::RequestBuilder, u16, &str)> = vec![
        (
            "a NUL in a payload string",
            post(
                &client,
                &order("n1"),
                r#"{"type":"PAY","data":{"payId":"a\u0000b","amount":1}}"#,
                None,
            ),
            400,
            "nul-in-event",
        ),
        (
            "a NUL nested deep",
            post(
                &client,
                &counter("n2"),
                r#"{"type":"ADD","data":{"a":[{"b":["x\u0000"]}]}}"#,
                Some("k"),
            ),
            400,
            "nul-in-event",
        ),
        (
            "a 6,000-byte key",
            post(&client, &counter("k1"), ADD, Some(&long_key)),
            400,
            "bad-idempotency-key",
        ),
        (
            "a 256-byte key",
            post(&client, &counter("k2"), ADD, Some(&key_256)),
            400,
            "bad-idempotency-key",
        ),
        (
            "an empty key",
            post(&client, &counter("k3"), ADD, Some("")),
            400,
            "bad-idempotency-key",
        ),
        (
            "an empty quoted key",
            post(&client, &counter("k4"), ADD, Some("\"\"")),
            400,
            "bad-idempotency-key",
        ),
        (
            "an unclosed quoted key",
            post(&client, &counter("k5"), ADD, Some("\"abc")),
            400,
            "bad-idempotency-key",
        ),
        (
            "two keys",
            post(&client, &counter("k6"), ADD, Some("a")).header("Idempotency-Key", "b"),
            400,
            "bad-idempotency-key",
        ),
        (
            "a %00 process id",
            post(&client, &counter("a%00b"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "a 5 KB process id",
            post(&client, &counter(&long_process), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "a process id with %2F",
            post(&client, &counter("a%2Fb"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "a dotted path in a process id",
            post(&client, &counter("..%2F..%2Fetc"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "U+202E in a process id",
            post(&client, &counter("a%E2%80%AEb"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "a newline in a process id",
            post(&client, &counter("x%0AFORGED%20line"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "ESC in a process id",
            post(&client, &counter("x%1B%5B2J"), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "an empty process id",
            post(&client, &counter(""), ADD, Some("k")),
            400,
            "bad-process-id",
        ),
        (
            "text/plain",
            client
                .post(counter("t1"))
                .header("content-type", "text/plain")
                .header("Idempotency-Key", "k")
                .body(ADD),
            415,
            "unsupported-media-type",
        ),
        (
            "no content type",
            client
                .post(counter("t2"))
                .header("Idempotency-Key", "k")
                .body(ADD),
            415,
            "unsupported-media-type",
        ),
        (
            "a form",
            client
                .post(counter("t3"))
                .header("content-type", "application/x-www-form-urlencoded")
                .header("Idempotency-Key", "k")
                .body("a=1"),
            415,
            "unsupported-media-type",
        ),
        (
            "an unknown event type",
            post(&client, &counter("u1"), r#"{"type":"NOPE"}"#, Some("k")),
            422,
            "unknown-event",
        ),
        (
            "an empty event type",
            post(&client, &counter("u2"), r#"{"type":""}"#, Some("k")),
            422,
            "unknown-event",
        ),
        (
            "a type with a NUL",
            post(
                &client,
                &counter("u3"),
                r#"{"type":"ADD\u0000"}"#,
                Some("k"),
            ),
            422,
            "unknown-event",
        ),
        (
            "a type with ESC",
            post(
                &client,
                &counter("u4"),
                r#"{"type":"ADD\u001b[2J"}"#,
                Some("k"),
            ),
            422,
            "unknown-event",
        ),
        (
            "a completion from outside",
            post(
                &client,
                &lookup,
                r#"{"type":"xstate.done.actor.risk","data":{"output":{"score":9}}}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "an error event from outside",
            post(
                &client,
                &lookup,
                r#"{"type":"xstate.error.actor.risk"}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "done.invoke from outside",
            post(
                &client,
                &counter("i1"),
                r#"{"type":"done.invoke.x"}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "done.state from outside",
            post(
                &client,
                &counter("i2"),
                r#"{"type":"done.state.a"}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "error.execution from outside",
            post(
                &client,
                &counter("i3"),
                r#"{"type":"error.execution"}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "a declared unknown outcome from outside",
            post(
                &client,
                &order("i4"),
                r#"{"type":"notify.unknown"}"#,
                Some("k"),
            ),
            403,
            "internal-event",
        ),
        (
            "a body id against the declared field",
            post(
                &client,
                &order("d1"),
                r#"{"type":"PAY","id":"other","data":{"payId":"same","amount":1}}"#,
                None,
            ),
            422,
            "id-mismatch",
        ),
        (
            "a key against the declared field",
            post(
                &client,
                &order("d2"),
                r#"{"type":"PAY","data":{"payId":"same","amount":1}}"#,
                Some("other"),
            ),
            422,
            "id-mismatch",
        ),
        (
            "a body id against the key",
            post(
                &client,
                &counter("d3"),
                r#"{"type":"ADD","id":"a"}"#,
                Some("b"),
            ),
            422,
            "id-mismatch",
        ),
        (
            "an empty body id",
            post(&client, &counter("d4"), r#"{"type":"ADD","id":""}"#, None),
            400,
            "bad-event-id",
        ),
        (
            "a 6,000-byte declared id",
            post(
                &client,
                &order("d5"),
                &format!(
                    r#"{{"type":"PAY","data":{{"payId":"{}","amount":1}}}}"#,
                    "x".repeat(6000)
                ),
                None,
            ),
            400,
            "bad-event-id",
        ),
        (
            "a newline in a body id",
            post(
                &client,
                &counter("d6"),
                r#"{"type":"ADD","id":"a\nFORGED"}"#,
                None,
            ),
            400,
            "bad-event-id",
        ),
        (
            "DELETE",
            client.delete(counter("m1")),
            405,
            "method-not-allowed",
        ),
        (
            "PUT",
            client.put(counter("m2")).body(ADD),
            405,
            "method-not-allowed",
        ),
        (
            "an unknown route",
            client.get(server.url("/nope")),
            404,
            "not-found",
        ),
        (
            "a GET of a bad process id",
            client.get(server.url("/machines/counter/processes/a%00b")),
            400,
            "bad-process-id",
        ),
        (
            "%FF in the path",
            client.get(server.url("/machines/counter/processes/%FF")),
            400,
            "bad-request",
        ),
        (
            "a 9,000-byte target",
            client.get(server.url(&format!("/machines/counter/processes/{}", "p".repeat(9000)))),
            414,
            "uri-too-long",
        ),
        (
            "a 40 KB header",
            client
                .get(server.url("/healthz"))
                .header("x-pad", "p".repeat(40_000)),
            431,
            "headers-too-large",
        ),
    ];
    for (what, request, status, kind) in cases {
        let answer = send(request).await;
        assert!(
            answer.status == status,
            "{what}: {} {}",
            answer.status,
            answer.body
        );
        let doc = problem(&answer, status, kind);
        assert!(
            !answer.body.contains("store:") && !answer.body.contains("sqlite"),
            "{what}: {}",
            answer.body
        );
        if status == 405 {
            assert!(answer.headers.contains_key("allow"), "{what}");
        }
        let _ = doc;
        assert_eq!(counts(&path), (0, 0), "{what} wrote to the store");
    }
    // A 400 for a percent-encoding hyper takes but a path cannot: raw.
    let bad_path = raw(
        &server.address,
        b"GET /machines/counter/processes/%C3%28 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    raw_problem(&bad_path, 400, "bad-request");
    // A client resolves `..` itself; sent as it is, it is refused.
    let dots = format!(
        "POST /machines/counter/processes/%2E%2E/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nidempotency-key: k\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ADD}",
        ADD.len()
    );
    raw_problem(
        &raw(&server.address, dots.as_bytes()),
        400,
        "bad-process-id",
    );
    assert_eq!(counts(&path), (0, 0));

    // The rules take what they should: a 255-byte key, a quoted key that is
    // the bare key, `application/json; charset=utf-8`, a body id agreeing
    // with the declared field.
    let ok = send(post(&client, &counter("c1"), ADD, Some(&"k".repeat(255)))).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let quoted = send(post(&client, &counter("c1"), ADD, Some("\"abc\""))).await;
    assert_eq!(quoted.status, 200);
    let bare = send(post(&client, &counter("c1"), ADD, Some("abc"))).await;
    assert_eq!(bare.status, 200);
    assert_eq!(
        bare.headers["idempotent-replayed"], "true",
        "\"abc\" is abc"
    );
    assert_eq!(bare.body, quoted.body);
    let charset = send(
        client
            .post(counter("c1"))
            .header("content-type", "Application/JSON; charset=utf-8")
            .header("Idempotency-Key", "k3")
            .body(ADD),
    )
    .await;
    assert_eq!(charset.status, 200, "{}", charset.body);
    let agreeing = send(post(
        &client,
        &order("o1"),
        r#"{"type":"PAY","id":"same","data":{"payId":"same","amount":1}}"#,
        Some("same"),
    ))
    .await;
    assert_eq!(agreeing.status, 200, "{}", agreeing.body);
    // The same charge under another body id is not a second charge.
    let again = send(post(
        &client,
        &order("o1"),
        r#"{"type":"PAY","id":"same2","data":{"payId":"same","amount":1}}"#,
        None,
    ))
    .await;
    problem(&again, 422, "id-mismatch");
    // An event a known state ignores is `ignored`, as before: SHIP in `paid`
    // is taken, but no state takes ADD-like `SHIP` in `open`.
    let ignored = send(post(
        &client,
        &order("o2"),
        r#"{"type":"SHIP"}"#,
        Some("s1"),
    ))
    .await;
    assert_eq!(ignored.status, 200, "{}", ignored.body);
    assert!(
        ignored.body.contains("\"outcome\":\"ignored\""),
        "{}",
        ignored.body
    );
    // The completion route takes the same rules, before any token is
    // checked: its body is JSON, its process id and key are bounded, and
    // neither reaches the log raw.
    let completion = |process: &str, key: &str| {
        server.url(&format!(
            "/machines/counter/processes/{process}/completions/{key}"
        ))
    };
    let output = r#"{"output": {"ok": true}}"#;
    let plain = send(
        client
            .post(completion("c1", "k"))
            .header("content-type", "text/plain")
            .body(output),
    )
    .await;
    problem(&plain, 415, "unsupported-media-type");
    let bad_process = send(post(&client, &completion("a%0Ab", "k"), output, None)).await;
    problem(&bad_process, 400, "bad-process-id");
    let long_key = "k".repeat(300);
    let bad_key = send(post(&client, &completion("c1", &long_key), output, None)).await;
    problem(&bad_key, 400, "bad-completion-key");
    let forged_line = send(post(&client, &completion("c1", "k%0Aforged"), output, None)).await;
    problem(&forged_line, 400, "bad-completion-key");
    // A process of another machine is not found under this one.
    let elsewhere = send(
        post(&client, &completion("o1", "k"), output, None)
            .header("Idempotency-Completion-Token", "0".repeat(64)),
    )
    .await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
    // c1: three events (k…, abc, k3); o1: one; o2: the ignored SHIP.
    assert_eq!(counts(&path), (3, 5));
    server.assert_clean_log();
}

/// Every answer of the service to random bytes, headers and paths over raw
/// TCP is an HTTP answer below 500, or a closed connection, and the service
/// answers a normal request after them all.
#[test]
fn random_requests_never_get_a_5xx() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    let (_path, store) = sqlite_store("random");
    let server = Server::start_plain(
        &store,
        &["--header-timeout-ms", "300", "--max-body", "4096"],
    );
    let address = server.address.clone();
    let method = prop_oneof![
        Just("GET".to_string()),
        Just("POST".to_string()),
        Just("DELETE".to_string()),
        "[A-Z]{1,8}",
        "[ -~]{0,8}",
    ];
    let path = prop_oneof![
        Just("/machines/counter/processes/p/events".to_string()),
        "/machines/(counter|order|lookup|x)/processes/[ -~]{0,20}(/events)?",
        "/[%0-9A-Fa-f/.]{0,40}",
        "[ -~]{0,30}",
    ];
    let header = prop_oneof![
        Just("content-type: application/json".to_string()),
        Just("content-type: text/plain".to_string()),
        "idempotency-key: [ -~]{0,300}",
        "authorization: [ -~]{0,40}",
        "[a-zA-Z-]{1,20}: [ -~]{0,40}",
        "[ -~]{0,40}",
        "transfer-encoding: (chunked|gzip|[a-z]{0,6})",
        "content-length: (-1|0|5|999999|[0-9a-z]{0,5})",
    ];
    let body = prop_oneof![
        Just(ADD.as_bytes().to_vec()),
        Just(br#"{"type":"PAY","data":{"payId":"x\u0000","amount":1}}"#.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..200),
    ];
    let raw_bytes = proptest::collection::vec(any::<u8>(), 0..300);
    let request = prop_oneof![
        (method, path, proptest::collection::vec(header, 0..6), body).prop_map(
            |(method, path, headers, body)| {
                let mut text = format!("{method} {path} HTTP/1.1\r\nhost: x\r\n");
                for header in headers {
                    text.push_str(&header);
                    text.push_str("\r\n");
                }
                text.push_str(&format!(
                    "content-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                ));
                let mut bytes = text.into_bytes();
                bytes.extend_from_slice(&body);
                bytes
            }
        ),
        raw_bytes.prop_map(|mut bytes| {
            bytes.extend_from_slice(b"\r\n\r\n");
            bytes
        }),
    ];
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let started = Instant::now();
    runner
        .run(&request, |bytes| {
            let mut stream = TcpStream::connect(&address).expect("the service takes connections");
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // A server that has answered and closed may refuse the rest.
            let _ = stream.write_all(&bytes);
            let mut answer = Vec::new();
            let read = stream.read_to_end(&mut answer);
            prop_assert!(
                !matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
                "no answer within 5 s"
            );
            if !answer.is_empty() {
                let text = String::from_utf8_lossy(&answer);
                prop_assert!(text.starts_with("HTTP/1.1 "), "{text}");
                let status: u16 = text[9..12].parse().unwrap();
                prop_assert!(status < 500, "{status} for {:?}:\n{text}", String::from_utf8_lossy(&bytes));
                // Every error is a problem document, hyper's parser's too.
                let head = text.split("\r\n\r\n").next().unwrap_or("").to_ascii_lowercase();
                prop_assert!(
                    status < 400 || head.contains("content-type: application/problem+json"),
                    "{status} without a problem document for {:?}:\n{text}",
                    String::from_utf8_lossy(&bytes)
                );
            }
            Ok(())
        })
        .unwrap();
    let health = raw(
        &address,
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(health.0, 200, "{}", health.1);
    eprintln!("200 random requests in {:?}", started.elapsed());
    server.assert_clean_log();
}

/// Raises this process's limit of open files to its hard limit (the
/// server, started after, inherits it); the limit in force.
fn raise_open_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only `limit`.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max.min(65_536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// 1,000 idle connections (or what the limit of open files allows) and a
/// trickling one do not keep a normal client from its answers, and the
/// service closes them all within its timeouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_do_not_starve_others() {
    let limit = raise_open_files();
    // The server needs a descriptor for each too, and both need some of
    // their own.
    let held = 1000.min(limit.saturating_sub(100) as usize);
    assert!(held >= 100, "the open-file limit {limit} allows too few");
    let (_path, store) = sqlite_store("idle");
    let server = Server::start_plain(
        &store,
        &[
            "--max-connections",
            "2000",
            "--idle-timeout-ms",
            "1500",
            "--header-timeout-ms",
            "2000",
        ],
    );
    let client = reqwest::Client::new();
    let url = server.url("/machines/counter/processes/busy/events");
    // The same requests with no idle connection open, to compare.
    let alone = Instant::now();
    for n in 0..20 {
        let answer = send(post(&client, &url, ADD, Some(&format!("a{n}")))).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    let alone = alone.elapsed();
    let started = Instant::now();
    let mut idle: Vec<TcpStream> = (0..held)
        .map(|_| TcpStream::connect(&server.address).unwrap())
        .collect();
    // One connection sends its head a byte at a time, within the idle
    // timeout each, so that only the header timeout can end it.
    let trickle_address = server.address.clone();
    let trickler = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(trickle_address).unwrap();
        let started = Instant::now();
        for byte in b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: "
            .iter()
            .cycle()
        {
            if stream.write_all(&[*byte]).is_err() {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(100));
            if started.elapsed() > Duration::from_secs(20) {
                break;
            }
        }
        started.elapsed()
    });
    let opened = started.elapsed();
    for n in 0..20 {
        let answer = send(post(&client, &url, ADD, Some(&format!("k{n}")))).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    let served = started.elapsed() - opened;
    // Each idle connection ends in EOF or a reset, within the timeouts.
    for stream in &mut idle {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        match stream.read(&mut byte) {
            Ok(0) => {}
            Ok(_) => panic!("an idle connection got bytes"),
            Err(e) => assert!(
                e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut,
                "an idle connection was left open: {e}"
            ),
        }
    }
    // Counted from the last one opened: opening a thousand takes seconds
    // on a busy machine.
    let closed = started.elapsed() - opened;
    assert!(closed < Duration::from_secs(8), "closed after {closed:?}");
    let trickled = trickler.join().unwrap();
    assert!(
        trickled < Duration::from_secs(6),
        "a trickling head was cut only after {trickled:?}"
    );
    eprintln!(
        "{held} idle connections opened in {opened:?}; 20 requests answered in {served:?} ({alone:?} with none open); all closed {closed:?} after the last was opened; a trickling head cut after {trickled:?}"
    );
    server.assert_clean_log();
}

/// Past `--max-connections`, a connection is answered 503 with
/// `Retry-After` and closed; once one closes, another is taken.
#[test]
fn a_connection_over_the_limit_is_answered_503() {
    let (_path, store) = sqlite_store("full");
    let server = Server::start_plain(&store, &["--max-connections", "4"]);
    let held: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(&server.address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let refused = raw(
        &server.address,
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    raw_problem(&refused, 503, "overloaded");
    assert!(refused.1.to_ascii_lowercase().contains("retry-after: 1"));
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    let taken = raw(
        &server.address,
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(taken.0, 200, "{}", taken.1);
}

/// A head that hyper's own parser refuses, before the router sees it, is
/// answered with a problem document too, and the service goes on.
#[test]
fn heads_the_parser_refuses_are_problem_documents() {
    let (path, store) = sqlite_store("parser");
    let server = Server::start_plain(&store, &[]);
    let get = |target: &str, headers: &str| {
        format!("GET {target} HTTP/1.1\r\nhost: x\r\n{headers}connection: close\r\n\r\n")
    };
    let cases: [(&str, Vec<u8>, u16, &str); 5] = [
        (
            "a TLS hello on the plain port",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a request line that is no HTTP",
            b"HELLO THERE\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a 70,000-byte target, past the parser's 64 KiB",
            get(&format!("/{}", "p".repeat(70_000)), "").into_bytes(),
            414,
            "uri-too-long",
        ),
        (
            "500 headers, past the parser's count",
            get("/healthz", &"x-h: 1\r\n".repeat(500)).into_bytes(),
            431,
            "headers-too-large",
        ),
        (
            "a 500 KB header, past the parser's buffer",
            get("/healthz", &format!("x-pad: {}\r\n", "p".repeat(500_000))).into_bytes(),
            431,
            "headers-too-large",
        ),
    ];
    for (what, request, status, kind) in cases {
        let answer = raw(&server.address, &request);
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        raw_problem(&answer, status, kind);
    }
    assert_eq!(counts(&path), (0, 0));
    let health = raw(&server.address, get("/healthz", "").as_bytes());
    assert_eq!(health.0, 200, "{}", health.1);
    server.assert_clean_log();
}

/// With `--auth-token-file`, a request without the token or with another
/// is 401 with `WWW-Authenticate`, with it is answered, and `/healthz`
/// needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_are_required_when_configured() {
    let (path, store) = sqlite_store("auth");
    let tokens = path.with_extension("tokens");
    std::fs::write(&tokens, "first-token\n\n  second-token  \n").unwrap();
    let server = Server::start_plain(&store, &["--auth-token-file", tokens.to_str().unwrap()]);
    let client = reqwest::Client::new();
    let url = server.url("/machines/counter/processes/a1/events");
    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("Bearer first-toke"),
        Some("Basic first-token"),
        Some("Bearer "),
    ] {
        let mut request = post(&client, &url, ADD, Some("k"));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let answer = send(request).await;
        problem(&answer, 401, "unauthorized");
        assert!(
            answer.headers["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer"),
            "{authorization:?}"
        );
        assert_eq!(counts(&path), (0, 0));
    }
    let state = send(client.get(server.url("/machines/counter/processes/a1"))).await;
    problem(&state, 401, "unauthorized");
    let health = send(client.get(server.url("/healthz"))).await;
    assert_eq!(health.status, 200);
    for token in ["first-token", "second-token"] {
        let answer = send(
            post(&client, &url, ADD, Some(&token.replace("-token", "-key")))
                .header("authorization", format!("bearer {token}")),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    assert_eq!(counts(&path), (1, 2));
    let log = server.log();
    assert!(
        !log.contains("first-token") && !log.contains("second-token"),
        "{log}"
    );
}

/// A non-loopback address without a token file is refused (exit 2) unless
/// `--no-auth` says so.
#[test]
fn a_public_address_needs_a_token_file_or_no_auth() {
    let (_path, store) = sqlite_store("public");
    let output = Command::new(env!("CARGO_BIN_EXE_idemchart"))
        .args(["serve", "--machines", MACHINES, "--store", &store])
        .args(["--listen", "0.0.0.0:0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("without authentication") && stderr.contains("--auth-token-file"),
        "{stderr}"
    );
    let server = Server::start_at("0.0.0.0:0", &store, &["--no-auth"]);
    assert!(server.address.starts_with("0.0.0.0:"), "{}", server.address);
}

/// Under `ulimit -n 256`, 373 idle connections (the issue's numbers) do not
/// exhaust the service's descriptors: it keeps its connections below the
/// limit, answers those past it 503 at once, closes the idle ones after the
/// idle timeout, and a normal client is answered then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_open_file_limit_answers_503_not_silence() {
    raise_open_files();
    let (_path, store) = sqlite_store("ulimit");
    // The held connections stay open 5 s, so the ones past the limit meet
    // them however slowly a loaded machine accepts (at 1 s, the first ones
    // could close before the last were accepted, and none was refused).
    let server = Server::start_with_open_files(
        256,
        &store,
        &["--idle-timeout-ms", "5000", "--header-timeout-ms", "5000"],
    );
    let started = Instant::now();
    let mut streams: Vec<TcpStream> = (0..373)
        .map(|_| TcpStream::connect(&server.address).unwrap())
        .collect();
    let (mut refused, mut closed) = (0, 0);
    for stream in &mut streams {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = Vec::new();
        match stream.read_to_end(&mut answer) {
            Ok(_) if answer.is_empty() => closed += 1,
            Ok(_) => {
                let text = String::from_utf8_lossy(&answer);
                assert!(text.starts_with("HTTP/1.1 503"), "{text}");
                assert!(text.contains("overloaded"), "{text}");
                refused += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            Err(e) => panic!("a connection was neither answered nor closed: {e}"),
        }
    }
    let settled = started.elapsed();
    assert!(refused > 0, "none past the limit was answered 503");
    assert!(closed >= 150, "only {closed} were taken and then closed");
    let client = reqwest::Client::new();
    let answer = send(post(
        &client,
        &server.url("/machines/counter/processes/after/events"),
        ADD,
        Some("k"),
    ))
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let log = server.log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("the limit of open files allows no more")),
        "{log:?}"
    );
    let failed_accepts = log.iter().filter(|l| l.contains("cannot accept")).count();
    assert!(
        failed_accepts <= 5,
        "{failed_accepts} accept failures logged"
    );
    eprintln!(
        "ulimit -n 256, 373 connections: {refused} answered 503, {closed} taken and closed by the idle timeout, all within {settled:?}"
    );
    server.assert_clean_log();
}

/// A body that does not arrive within the header timeout (a
/// `Content-Length` never filled) is answered 408 and the connection
/// closed; nothing is written.
#[test]
fn a_body_that_never_arrives_is_answered_408() {
    let (path, store) = sqlite_store("slow-body");
    let server = Server::start_plain(&store, &["--header-timeout-ms", "500"]);
    let started = Instant::now();
    let answer = raw(
        &server.address,
        b"POST /machines/counter/processes/s1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nidempotency-key: k\r\ncontent-length: 100\r\n\r\n{\"type\":",
    );
    let took = started.elapsed();
    raw_problem(&answer, 408, "request-timeout");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(counts(&path), (0, 0));
}
