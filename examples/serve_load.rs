//! Load on `idemchart serve` beside a bare axum handler that does the same
//! writes: N concurrent HTTP clients, each posting events to processes of
//! its own, on SQLite (`synchronous` FULL and NORMAL) and PostgreSQL.
//!
//! The service is the real one (`idemchart::serve`, the router and the
//! async runtime API) on 127.0.0.1, measured twice: as it runs (group
//! commit: the requests that arrive while a commit is in flight share the
//! next transaction), and with as many committers as clients, so that every
//! request has a transaction of its own. The bare handler reads the event
//! id's mark and the process row and writes the process row and the mark in
//! one transaction per request, through the same store and its statements,
//! with no interpreter, no event parsing beyond the id, and no metrics: what
//! the service costs over the writes it cannot avoid, beside the second. Both serve on one tokio runtime of 2 workers
//! in this process, the clients on another.
//!
//! `cargo run --release --example serve_load [REQUESTS] [--clients N]
//! [--committers N] [--only-pg] [--pg CONNECTION]`; PostgreSQL is measured when `--pg` or `IDEMCHART_PG`
//! names a server (each run on a fresh schema, dropped afterwards).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use idemchart::interp::Chart;
use idemchart::serve::{Options, Service};
use idemchart::store::{
    AnyAsyncStore, AppliedEvent, AsyncSqliteStore, AsyncStore, AsyncTransaction, ProcessRow,
    ProcessUpdate, RowWrites, SqliteOptions, Synchronous,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

const MACHINE: &str = include_str!("../tests/data/serve/machines/counter.yaml");

struct Figures {
    requests: usize,
    seconds: f64,
    p50: Duration,
    p99: Duration,
}

/// `clients` tasks post `requests` events in all, client `c` to processes
/// `c-0` … `c-7` in turn, each event with a fresh `Idempotency-Key`.
async fn drive(base: &str, requests: usize, clients: usize) -> Result<Figures, Error> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (client, base) = (client.clone(), base.to_string());
        let share = requests / clients + usize::from(c < requests % clients);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            for i in 0..share {
                let url = format!("{base}/machines/counter/processes/c{c}-{}/events", i % 8);
                let sent = Instant::now();
                let response = client
                    .post(&url)
                    .header("Idempotency-Key", format!("k{c}-{i}"))
                    .header("content-type", "application/json")
                    .body(r#"{"type": "ADD"}"#)
                    .send()
                    .await?;
                let status = response.status();
                response.bytes().await?;
                if status != StatusCode::OK {
                    return Err(format!("{url}: {status}").into());
                }
                latencies.push(sent.elapsed());
            }
            Ok::<_, Error>(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(requests);
    for task in tasks {
        latencies.extend(task.await??);
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Ok(Figures {
        requests: latencies.len(),
        seconds,
        p50: at(0.50),
        p99: at(0.99),
    })
}

/// The bare handler: the same rows, in one transaction per request,
/// nothing else; read and written as the service's store does (the reads
/// together, the writes together).
async fn bare(
    State(store): State<Arc<AnyAsyncStore>>,
    Path((machine, process)): Path<(String, String)>,
    headers: HeaderMap,
    _body: String,
) -> (StatusCode, String) {
    let id = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let response = r#"{"outcome":"applied"}"#.to_string();
    let result: Result<(), idemchart::store::StoreError> = async {
        let mut tx = store.begin().await?;
        let read = tx.read_rows(&[(&process, &id)], &[&process]).await?;
        if read.applied.is_empty() {
            let mut rows = RowWrites::default();
            let revision = match read.processes.first() {
                Some(row) => {
                    rows.updates.push(ProcessUpdate {
                        id: process.clone(),
                        read: row.revision,
                        revision: row.revision + 1,
                        snapshot: r#"{"n":1}"#.into(),
                        next_timer_at: None,
                    });
                    row.revision + 1
                }
                None => {
                    rows.inserts.push(ProcessRow {
                        id: process.clone(),
                        machine,
                        version: None,
                        snapshot: r#"{"n":1}"#.into(),
                        revision: 1,
                        next_timer_at: None,
                    });
                    1
                }
            };
            rows.applied.push(AppliedEvent {
                process: process.clone(),
                event_id: id.clone(),
                payload_hash: "0".repeat(64),
                response: response.clone(),
                revision,
                applied_at: idemchart::runtime::now_millis(),
                // This baseline measures the store's writes without a history.
                payload: None,
            });
            if let Some(moved) = tx.write_last_rows(&rows).await? {
                store.rollback(tx).await;
                return Err(idemchart::store::StoreError::Race(moved));
            }
        }
        store.commit(tx).await
    }
    .await;
    match result {
        Ok(()) => (StatusCode::OK, response),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// Serves `app` on a free port of 127.0.0.1 on `runtime`; its base URL.
fn spawn(runtime: &tokio::runtime::Runtime, app: axum::Router) -> Result<String, Error> {
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let base = format!("http://{}", listener.local_addr()?);
    runtime.spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

fn row(label: &str, what: &str, figures: &Figures, baseline: Option<f64>) {
    let rate = figures.requests as f64 / figures.seconds;
    let ratio = baseline.map_or(String::new(), |b| format!("{:.2}", rate / b));
    println!(
        "| {label} | {what} | {:.0} | {:.2} | {:.2} | {ratio} |",
        rate,
        figures.p50.as_secs_f64() * 1e3,
        figures.p99.as_secs_f64() * 1e3,
    );
}

/// How much load, and how the service takes it.
#[derive(Clone, Copy)]
struct Load {
    requests: usize,
    clients: usize,
    /// `Options::committers` of the service with group commit.
    committers: usize,
}

fn measure(
    label: &str,
    open: &dyn Fn(&tokio::runtime::Runtime) -> Result<AnyAsyncStore, Error>,
    load: Load,
) -> Result<(), Error> {
    let Load {
        requests,
        clients,
        committers,
    } = load;
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let clients_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let machine = idemchart::syntax::parse(MACHINE, idemchart::syntax::Syntax::Yaml)
        .map_err(|e| format!("counter.yaml does not load: {e:?}"))?;
    let charts = BTreeMap::from([("counter".to_string(), Arc::new(Chart::new(machine)))]);
    let grouped = Options {
        committers,
        ..Options::default()
    };
    let service = Arc::new(Service::new(open(&server)?, charts.clone(), grouped));
    let served = spawn(&server, idemchart::serve::router(service))?;
    // As many committers as clients: every request is a group of one, in a
    // transaction of its own, as the bare handler's.
    let alone = Options {
        committers: clients,
        ..Options::default()
    };
    let alone = Arc::new(Service::new(open(&server)?, charts, alone));
    let alone = spawn(&server, idemchart::serve::router(alone))?;
    let bare_store = Arc::new(open(&server)?);
    let bare_app = axum::Router::new()
        .route(
            "/machines/{machine}/processes/{process}/events",
            axum::routing::post(bare),
        )
        .with_state(bare_store);
    let bare_base = spawn(&server, bare_app)?;
    // A warm-up of each, then the timed runs.
    clients_rt.block_on(drive(&bare_base, requests / 10, clients))?;
    clients_rt.block_on(drive(&served, requests / 10, clients))?;
    clients_rt.block_on(drive(&alone, requests / 10, clients))?;
    let baseline = clients_rt.block_on(drive(&bare_base, requests, clients))?;
    let apart = clients_rt.block_on(drive(&alone, requests, clients))?;
    let figures = clients_rt.block_on(drive(&served, requests, clients))?;
    row(label, "bare handler, a transaction each", &baseline, None);
    let rate = baseline.requests as f64 / baseline.seconds;
    row(
        label,
        "idemchart serve, a transaction each",
        &apart,
        Some(rate),
    );
    row(label, "idemchart serve, group commit", &figures, Some(rate));
    server.shutdown_background();
    Ok(())
}

fn sqlite(
    synchronous: Synchronous,
) -> impl Fn(&tokio::runtime::Runtime) -> Result<AnyAsyncStore, Error> {
    let dir = std::env::temp_dir().join(format!("idemchart-serve-load-{}", std::process::id()));
    move |runtime| {
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}.db", idemchart::runtime::now_millis()));
        std::thread::sleep(Duration::from_millis(2));
        let options = SqliteOptions {
            synchronous,
            ..SqliteOptions::default()
        };
        let store = runtime.block_on(AsyncSqliteStore::open(&path, &options))?;
        Ok(AnyAsyncStore::Sqlite(store))
    }
}

#[cfg(feature = "postgres")]
fn postgres(base: String) -> impl Fn(&tokio::runtime::Runtime) -> Result<AnyAsyncStore, Error> {
    move |runtime| {
        let schema = format!(
            "serve_load_{}_{}",
            std::process::id(),
            idemchart::runtime::now_millis()
        );
        std::thread::sleep(Duration::from_millis(2));
        let mut admin = postgres::Client::connect(&base, postgres::NoTls)?;
        admin.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
        let params = format!("{base} options='-c search_path={schema}'");
        let store = runtime.block_on(idemchart::store::AsyncPostgresStore::connect(&params))?;
        Ok(AnyAsyncStore::Postgres(store))
    }
}

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let mut requests = 4_000;
    let mut clients = 16;
    let mut committers = idemchart::serve::DEFAULT_COMMITTERS;
    let mut only_pg = false;
    let mut pg = std::env::var("IDEMCHART_PG").ok();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--clients" => clients = args.next().ok_or("--clients N")?.parse()?,
            "--committers" => committers = args.next().ok_or("--committers N")?.parse()?,
            "--only-pg" => only_pg = true,
            "--pg" => pg = Some(args.next().ok_or("--pg CONNECTION")?),
            n => requests = n.parse()?,
        }
    }
    println!(
        "{requests} requests from {clients} concurrent clients, each to 8 processes of its own\n"
    );
    println!("| store | server | requests/s | p50 ms | p99 ms | of bare |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    let load = Load {
        requests,
        clients,
        committers,
    };
    if !only_pg {
        measure("SQLite FULL", &sqlite(Synchronous::Full), load)?;
        measure("SQLite NORMAL", &sqlite(Synchronous::Normal), load)?;
    }
    #[cfg(feature = "postgres")]
    if let Some(base) = pg {
        measure("PostgreSQL", &postgres(base), load)?;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = pg;
    Ok(())
}
