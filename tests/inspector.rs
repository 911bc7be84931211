//! The inspector of `idemchart serve` (`/ui`): the built binary on a free
//! port, filled by real requests (events, one delivered twice, an effect
//! whose endpoint refuses it so that its row goes dead), read as plain HTML
//! (no JavaScript: the tables and the highlighted diagram are in the page),
//! its operator actions POSTed as forms, and driven in headless Chromium by
//! `tests/inspector/inspector.mjs` (skipped where Chromium or Node is
//! missing).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::serve_server::Server;
use crate::support::stores::{scratch, sqlite_store, unique};

const MACHINES: &str = "tests/data/inspector/machines";
const PROCESS: &str = "o-1";
/// An event id a sender chose to be hostile: the pages must show it as text.
const HOSTILE: &str = "<img src=x onerror=alert(1)>";

fn start(store: &str, extra: &[&str]) -> Server {
    Server::spawn(
        Command::new(env!("CARGO_BIN_EXE_idemchart")),
        MACHINES,
        "127.0.0.1:0",
        store,
        extra,
    )
}

/// An endpoint that refuses the first call of the run (400: the row goes
/// dead at once) and takes every later one.
async fn start_warehouse() -> (Arc<AtomicUsize>, String) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/warehouse",
        axum::routing::post(move || {
            let calls = Arc::clone(&counted);
            async move {
                match calls.fetch_add(1, Ordering::SeqCst) {
                    0 => (axum::http::StatusCode::BAD_REQUEST, "no such warehouse"),
                    _ => (axum::http::StatusCode::OK, "{}"),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (calls, format!("http://{address}/warehouse"))
}

fn effects_file(url: &str) -> String {
    crate::serve::effects_file_waiting("inspector", "notifyWarehouse", url, "50ms")
}

async fn send(client: &reqwest::Client, server: &Server, event: serde_json::Value) -> bool {
    let response = client
        .post(server.url(&format!("/machines/order/processes/{PROCESS}/events")))
        .header("content-type", "application/json")
        .body(event.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    response.headers().get("idempotent-replayed").is_some()
}

/// Five entries (three items, a checkout, a payment whose effect goes
/// dead), the payment delivered twice.
async fn fill(client: &reqwest::Client, server: &Server) {
    let item = |id: &str, price: u64| serde_json::json!({"type": "ADD_ITEM", "data": {"itemId": id, "price": price}});
    assert!(!send(client, server, item("i-1", 5)).await);
    assert!(!send(client, server, item(HOSTILE, 7)).await);
    assert!(!send(client, server, item("i-3", 3)).await);
    let checkout = serde_json::json!({"type": "CHECKOUT", "data": {"requestId": "r-1"}});
    assert!(!send(client, server, checkout).await);
    let pay = serde_json::json!({"type": "PAY", "data": {"paymentId": "p-1", "amount": 15}});
    assert!(!send(client, server, pay.clone()).await);
    assert!(
        send(client, server, pay).await,
        "the second delivery is a duplicate"
    );
}

async fn get(client: &reqwest::Client, url: &str) -> (u16, String) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Reads `url` until `done` holds of the page (a background round has run).
async fn page_until(
    client: &reqwest::Client,
    server: &Server,
    url: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    server
        .until(async || match get(client, url).await {
            (200, page) if done(&page) => Ok(page),
            (_, page) => Err(format!("never: {page}")),
        })
        .await
}

/// The states the page marks active in its diagram, in document order.
fn active_states(page: &str) -> Vec<String> {
    let mut states: Vec<String> = page
        .split("data-state=\"")
        .skip(1)
        .filter(|rest| {
            rest.split_once('"')
                .is_some_and(|(_, after)| after.starts_with(" class=\"active"))
        })
        .filter_map(|rest| rest.split_once('"').map(|(path, _)| path.to_string()))
        .collect();
    states.dedup();
    states
}

fn process_url(server: &Server) -> String {
    server.url(&format!("/ui/machines/order/processes/{PROCESS}"))
}

/// A form POST as a page of the service sends it.
async fn post_form(
    client: &reqwest::Client,
    server: &Server,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(server.url(path))
        .header("origin", &server.base)
        .form(form)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_read_without_javascript_sqlite() {
    pages_read_without_javascript(&sqlite_store("inspector_html")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set IDEMCHART_PG (scripts/start-postgres)"]
async fn pages_read_without_javascript_postgres() {
    // The schema is made with the sync client, which may not run on a
    // thread of the test's runtime.
    let store = std::thread::spawn(|| crate::support::stores::postgres_store("inspector_html"))
        .join()
        .unwrap();
    pages_read_without_javascript(&store).await;
}

async fn pages_read_without_javascript(store: &str) {
    let (calls, url) = start_warehouse().await;
    let server = start(store, &["--effects", &effects_file(&url)]);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    fill(&client, &server).await;

    // The machines: the version, the count by state and the lint summary.
    let (status, machines) = get(&client, &server.url("/ui")).await;
    assert_eq!(status, 200);
    assert!(
        machines.contains(r#"<a href="/ui/machines/order">order</a>"#),
        "{machines}"
    );
    assert!(machines.contains("checkout.paid: 1"), "{machines}");
    assert!(
        machines.contains("0 error(s), 2 warning(s), 0 note(s)"),
        "{machines}"
    );

    // The machine: its diagram, each state named, the findings marked.
    let (_, machine) = get(&client, &server.url("/ui/machines/order")).await;
    for state in [
        "cart",
        "checkout",
        "checkout.awaiting_payment",
        "checkout.paid",
        "shipped",
    ] {
        assert!(
            machine.contains(&format!("data-state=\"{state}\"")),
            "{state}"
        );
    }
    assert!(machine.contains("I004"), "the findings are listed");
    assert!(
        machine.contains("#d97706"),
        "a warning is drawn in its colour"
    );

    // The search: by id, by state, by a stuck effect (once the row is dead).
    let list = |query: &str| server.url(&format!("/ui/machines/order/processes?{query}"));
    let (_, found) = get(&client, &list("q=o-&state=checkout")).await;
    assert!(
        found.contains(r#"href="/ui/machines/order/processes/o-1""#),
        "{found}"
    );
    let (_, none) = get(&client, &list("q=o-&state=cart")).await;
    assert!(none.contains("0 of 1 process(es) match"), "{none}");
    page_until(&client, &server, &list("stuck=on"), |p| {
        p.contains(">o-1</a>")
    })
    .await;

    // The process: its configuration marked, its tables, its hostile id
    // shown as text.
    let page = page_until(&client, &server, &process_url(&server), |p| {
        p.contains("status-dead")
    })
    .await;
    assert_eq!(active_states(&page), ["checkout", "checkout.paid"]);
    assert!(
        page.contains("After entry <span id=\"step\">5</span> of 5"),
        "{page}"
    );
    assert!(!page.contains(HOSTILE), "a stored id is escaped");
    assert!(
        page.contains("&#60;img src=x onerror=alert(1)&#62;"),
        "{page}"
    );
    assert!(page.contains("no such warehouse"), "the row's last error");
    assert!(
        page.contains(r#"<td class="duplicates">1 (first "#),
        "{page}"
    );
    assert_eq!(page.matches(r#"<td class="duplicates">0</td>"#).count(), 4);
    // The checkout's timer went with its state.
    assert!(page.contains("None pending."), "{page}");
    let (_, stepped) = get(&client, &format!("{}?step=4", process_url(&server))).await;
    assert_eq!(
        active_states(&stepped),
        ["checkout", "checkout.awaiting_payment"]
    );
    assert!(stepped.contains(r#"rel="prev""#) && stepped.contains(r#"rel="next""#));
    let (_, first) = get(&client, &format!("{}?step=1", process_url(&server))).await;
    assert_eq!(active_states(&first), ["cart"]);

    // The replay: under the same file nothing diverges; under a stricter
    // guard the payment is not taken, and the page says where.
    let replay = format!("/ui/machines/order/processes/{PROCESS}/replay");
    let same = std::fs::read_to_string(Path::new(MACHINES).join("order.yaml")).unwrap();
    let stricter = same.replace("event.amount >= context.total", "event.amount > 100");
    assert_ne!(same, stricter);
    let replayed = post_form(&client, &server, &replay, &[("machine", &same)]).await;
    let replayed = replayed.text().await.unwrap();
    assert!(
        replayed.contains("No divergence over 5 entries."),
        "{replayed}"
    );
    let diverged = post_form(&client, &server, &replay, &[("machine", &stricter)]).await;
    let diverged = diverged.text().await.unwrap();
    assert!(diverged.contains("Diverges at entry 5 of 5"), "{diverged}");
    assert!(
        diverged.contains(r#"class="current diverged""#),
        "{diverged}"
    );
    let broken = post_form(&client, &server, &replay, &[("machine", "machine: [")]).await;
    assert!(
        broken
            .text()
            .await
            .unwrap()
            .contains("The machine file does not load.")
    );

    // The retry: refused from another site, asked about, then done.
    let key = page
        .split("<tr data-key=\"")
        .nth(1)
        .and_then(|rest| rest.split_once('"'))
        .map(|(key, _)| key.to_string())
        .unwrap();
    let retry = format!("/ui/machines/order/processes/{PROCESS}/outbox/{key}/retry");
    let forged = client
        .post(server.url(&retry))
        .header("origin", "http://evil.example")
        .form(&[("confirmed", "yes")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let asked = post_form(&client, &server, &retry, &[("confirmed", "no")]).await;
    assert_eq!(asked.status(), 200);
    assert!(asked.text().await.unwrap().contains("Yes, do it"));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "nothing was sent before the yes"
    );
    let done = post_form(&client, &server, &retry, &[("confirmed", "yes")]).await;
    assert_eq!(done.status(), 303);
    assert_eq!(
        done.headers()["location"],
        format!("/ui/machines/order/processes/{PROCESS}#outbox")
    );
    page_until(&client, &server, &process_url(&server), |p| {
        p.contains(r#"class="status-done""#)
    })
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(server.log().contains("operator: dead outbox row requeued"));
    let again = post_form(&client, &server, &retry, &[("confirmed", "yes")]).await;
    assert_eq!(again.status(), 409, "a row that is not dead is not retried");
}

/// A timer that is due and not yet fired is fired from the page, through
/// the runtime's firing. The background round runs at startup and then
/// once an hour here, so the timer, due half a second after its event, is
/// left for the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_timer_is_fired_from_the_page() {
    let store = sqlite_store("inspector_timer");
    let server = Server::spawn(
        Command::new(env!("CARGO_BIN_EXE_idemchart")),
        "tests/data/inspector/timers",
        "127.0.0.1:0",
        &store,
        &["--poll-ms", "3600000"],
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .post(server.url("/machines/reminder/processes/r-1/events"))
        .header("content-type", "application/json")
        .header("idempotency-key", "start-1")
        .body(r#"{"type": "START"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let url = server.url("/ui/machines/reminder/processes/r-1");
    let page = page_until(&client, &server, &url, |p| p.contains("Fire now")).await;
    let due = page
        .split("name=\"due\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split_once('"'))
        .map(|(due, _)| due.to_string())
        .unwrap();
    let fire = "/ui/machines/reminder/processes/r-1/timers/fire";
    let fired = post_form(
        &client,
        &server,
        fire,
        &[("confirmed", "yes"), ("due", &due)],
    )
    .await;
    assert_eq!(fired.status(), 303);
    let (_, after) = get(&client, &url).await;
    assert_eq!(active_states(&after), ["reminded"]);
    assert!(after.contains("timer after:waiting[0]"), "{after}");
    assert!(server.log().contains("operator: timer fired"));
    let stale = post_form(
        &client,
        &server,
        fire,
        &[("confirmed", "yes"), ("due", &due)],
    )
    .await;
    assert_eq!(stale.status(), 409, "a fired timer is not fired twice");
}

/// On a non-loopback address behind `--no-auth` the inspector is off
/// unless asked for; with a token file it needs the token, as the API does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_is_served_where_it_is_guarded() {
    let client = reqwest::Client::new();
    let open = Server::spawn(
        Command::new(env!("CARGO_BIN_EXE_idemchart")),
        MACHINES,
        "0.0.0.0:0",
        &sqlite_store("inspector_open"),
        &["--no-auth"],
    );
    let port = open.address.rsplit(':').next().unwrap();
    let (status, _) = get(&client, &format!("http://127.0.0.1:{port}/ui")).await;
    assert_eq!(status, 404);
    let tokens = scratch().join(unique("tokens") + ".txt");
    std::fs::write(&tokens, "s3cret\n").unwrap();
    let guarded = start(
        &sqlite_store("inspector_guarded"),
        &["--auth-token-file", tokens.to_str().unwrap()],
    );
    // A browser without the token is asked for it, and signs in with it.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let asked = browser.get(guarded.url("/ui")).send().await.unwrap();
    assert_eq!(asked.status(), 303);
    assert_eq!(asked.headers()["location"], "/ui/login");
    let (status, login) = get(&browser, &guarded.url("/ui/login")).await;
    assert_eq!(status, 200);
    assert!(login.contains(r#"type="password" name="token""#), "{login}");
    let sign_in = |token: &'static str| {
        browser
            .post(guarded.url("/ui/login"))
            .header("origin", &guarded.base)
            .form(&[("token", token)])
            .send()
    };
    assert_eq!(sign_in("guess").await.unwrap().status(), 401);
    let signed = sign_in("s3cret").await.unwrap();
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("Path=/ui; HttpOnly; SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let with_cookie = |path: &str| {
        browser
            .get(guarded.url(path))
            .header("cookie", &pair)
            .send()
    };
    assert_eq!(with_cookie("/ui").await.unwrap().status(), 200);
    // The cookie is the inspector's: the API still wants the header.
    assert_eq!(
        with_cookie("/machines/order/processes/o-1")
            .await
            .unwrap()
            .status(),
        401
    );
    let forged = browser
        .get(guarded.url("/ui"))
        .header("cookie", "idemchart_token=guess")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 303, "a wrong cookie is asked again");
    let allowed = client
        .get(guarded.url("/ui"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    assert!(
        allowed.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
}

/// Why the browser test cannot run here, if it cannot.
fn missing_browser(dir: &Path) -> Option<String> {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !runs("node") {
        return Some("`node` is not on the PATH".into());
    }
    if !Path::new("/usr/bin/chromium").exists() {
        return Some("/usr/bin/chromium is missing (apt-get install chromium)".into());
    }
    if !dir.join("node_modules/playwright-core").is_dir() {
        return Some(format!(
            "{} is missing (run `npm ci` there)",
            dir.join("node_modules").display()
        ));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_steps_through_a_process() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("tests/inspector");
    if let Some(reason) = missing_browser(&dir) {
        println!("skipping the inspector's browser test: {reason}");
        return;
    }
    let (_, url) = start_warehouse().await;
    let store = sqlite_store("inspector_browser");
    let server = start(&store, &["--effects", &effects_file(&url)]);
    let client = reqwest::Client::new();
    fill(&client, &server).await;
    // The row is dead before the browser looks (the first call refuses it).
    page_until(&client, &server, &process_url(&server), |p| {
        p.contains("status-dead")
    })
    .await;
    let config = serde_json::json!({
        "base": server.base,
        "machine": "order",
        "process": PROCESS,
        "screenshots": root.join("target/inspector-screenshots"),
        "ship": {"type": "SHIP", "data": {"shipmentId": "s-1"}},
        "shipped": "shipped",
    });
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("inspector.mjs")
            .arg(config.to_string())
            .current_dir(&dir)
            .output()
            .expect("run node")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| {
            panic!(
                "no result from the browser:\n{stdout}\n{}\n{}",
                String::from_utf8_lossy(&output.stderr),
                server.log()
            )
        });
    assert_eq!(result["ok"], true, "{result:#}\n{}", server.log());
    assert_eq!(result["errors"], serde_json::json!([]));
    let checks = result["checks"].as_array().unwrap();
    assert!(checks.len() >= 15, "{result:#}");
    println!("the browser test took {:?}", started.elapsed());
}

/// SIGTERM while a page follows the service's events: the stream ends, and
/// the service exits 0 (an event stream does not hold the shutdown up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_event_stream_ends_at_shutdown() {
    let mut server = start(&sqlite_store("inspector_sse"), &[]);
    let client = reqwest::Client::new();
    let mut stream = client.get(server.url("/ui/events")).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let item = serde_json::json!({"type": "ADD_ITEM", "data": {"itemId": "i-1", "price": 1}});
    send(&client, &server, item).await;
    let first = stream.chunk().await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&first).into_owned();
    assert!(text.contains("event: change"), "{text}");
    assert!(text.contains(r#""process":"o-1""#), "{text}");
    let exited = tokio::task::spawn_blocking(move || server.terminate());
    let status = tokio::time::timeout(Duration::from_secs(30), exited)
        .await
        .expect("serve exits while a stream is open")
        .unwrap();
    assert!(status.success(), "{status:?}");
    // The stream was ended by the service, not cut.
    while let Some(chunk) = stream.chunk().await.unwrap() {
        assert!(!chunk.is_empty());
    }
}
