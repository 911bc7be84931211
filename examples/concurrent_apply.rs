//! Throughput of `apply` with eight concurrent writers: the sync API (eight
//! threads, a store each) beside the async API (eight tasks sharing one
//! pooled store on a two-worker tokio runtime), on PostgreSQL and SQLite.
//!
//! Two workloads of the same events (`ADD` on the ledger machine, one
//! transaction per event): `apart`, where each writer has processes of its
//! own (writer `w` sends to `p{w}`, `p{w+8}`, … of 64), and `together`, where
//! every writer sends to all of 8 processes, so writers of one process meet
//! at its revision check and retry. Each mode runs `ROUNDS` times on a fresh
//! store (a new schema, or a new file) and the best round counts.
//!
//! Run with `cargo run --release --example concurrent_apply [EVENTS] [--pg
//! CONNECTION] [--workers N]`; PostgreSQL is measured when `--pg` or
//! `IDEMCHART_PG` names a server (each round's schema is dropped
//! afterwards). The tokio runtime has `N` worker threads (2, the cores of
//! this machine, by default); on a machine shared with other work, eight
//! sync threads get a larger share of the CPU than two workers do, which
//! `--workers 8` evens out.

use std::sync::Arc;
use std::time::Instant;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, Outcome, nonblocking};
use idemchart::store::{
    AsyncSqliteStore, AsyncStore, SqliteOptions, SqliteStore, Store, Synchronous,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

const MACHINE: &str = include_str!("../tests/data/runtime/ledger.yaml");
const WRITERS: usize = 8;
const ROUNDS: usize = 3;
const NOW: u64 = 1_700_000_000_000;

#[derive(Clone, Copy)]
enum Workload {
    Apart,
    Together,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Apart => "apart (64 processes, 8 per writer)",
            Workload::Together => "together (8 processes, all writers on each)",
        }
    }

    /// Each writer's `(process, event)` pairs, in the order it sends them.
    fn shares(self, events: usize) -> Vec<Vec<(String, Event)>> {
        let mut shares = vec![Vec::new(); WRITERS];
        for i in 0..events {
            let id = format!("e{i}");
            let data = serde_json::json!({ "addId": id, "amount": i % 17 });
            let event = Event::new("ADD", Some(Value::from(id.as_str())), Value::from(&data));
            let (process, writer) = match self {
                Workload::Apart => (i % 64, i % WRITERS),
                Workload::Together => (i % 8, (i / 8) % WRITERS),
            };
            shares[writer].push((format!("p{process}"), event));
        }
        shares
    }
}

fn check(outcome: &Outcome) -> Result<(), Error> {
    match outcome {
        Outcome::Applied { .. } => Ok(()),
        other => Err(format!("expected applied, got {other:?}").into()),
    }
}

/// Events per second of eight threads, each with its own sync store.
fn sync_writers<S: Store + Send>(
    chart: &Arc<Chart>,
    shares: &[Vec<(String, Event)>],
    connect: impl Fn() -> Result<S, Error> + Sync,
) -> Result<f64, Error> {
    let stores: Vec<S> = (0..WRITERS).map(|_| connect()).collect::<Result<_, _>>()?;
    let started = Instant::now();
    std::thread::scope(|scope| {
        let writers: Vec<_> = stores
            .into_iter()
            .zip(shares)
            .map(|(mut store, share)| {
                scope.spawn(move || -> Result<(), Error> {
                    for (process, event) in share {
                        check(&runtime::apply_at(&mut store, chart, process, event, NOW)?)?;
                    }
                    Ok(())
                })
            })
            .collect();
        writers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| Error::from("a writer panicked"))?)
    })?;
    let events: usize = shares.iter().map(Vec::len).sum();
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

/// Events per second of eight tasks sharing one async store.
async fn async_writers<S: AsyncStore + Clone + 'static>(
    chart: &Arc<Chart>,
    shares: &[Vec<(String, Event)>],
    store: S,
) -> Result<f64, Error> {
    let started = Instant::now();
    let writers: Vec<_> = shares
        .iter()
        .map(|share| {
            let (store, chart, share) = (store.clone(), Arc::clone(chart), share.clone());
            tokio::spawn(async move {
                for (process, event) in &share {
                    check(&nonblocking::apply_at(&store, &chart, process, event, NOW).await?)?;
                }
                Ok::<(), Error>(())
            })
        })
        .collect();
    for writer in writers {
        writer.await??;
    }
    let events: usize = shares.iter().map(Vec::len).sum();
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

/// The best of `ROUNDS` runs of `run(round)`.
fn best(mut run: impl FnMut(usize) -> Result<f64, Error>) -> Result<f64, Error> {
    let mut best: f64 = 0.0;
    for round in 0..ROUNDS {
        best = best.max(run(round)?);
    }
    Ok(best)
}

fn row(store: &str, workload: Workload, mode: &str, rate: f64, base: f64) {
    println!(
        "| {store} | {} | {mode} | {rate:.0} | {:.2} |",
        workload.name(),
        rate / base
    );
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let events: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(2_000);
    let pg = args
        .iter()
        .position(|a| a == "--pg")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var("IDEMCHART_PG").ok());
    let machine = idemchart::syntax::parse(MACHINE, idemchart::syntax::Syntax::Yaml)
        .map_err(|e| format!("{e:?}"))?;
    let chart = Arc::new(Chart::new(machine));
    let workers: usize = args
        .iter()
        .position(|a| a == "--workers")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(2);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    println!(
        "{events} events, {WRITERS} writers, {workers} tokio workers, best of {ROUNDS} rounds\n"
    );
    println!("| store | workload | mode | events/s | vs sync |");
    println!("| --- | --- | --- | ---: | ---: |");
    for workload in [Workload::Apart, Workload::Together] {
        let shares = workload.shares(events);
        if let Some(base) = &pg {
            postgres(&tokio, &chart, &shares, workload, base)?;
        }
        sqlite(&tokio, &chart, &shares, workload)?;
    }
    Ok(())
}

fn sqlite(
    tokio: &tokio::runtime::Runtime,
    chart: &Arc<Chart>,
    shares: &[Vec<(String, Event)>],
    workload: Workload,
) -> Result<(), Error> {
    let dir = std::env::temp_dir().join(format!("idemchart-concurrent-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let options = |connections| SqliteOptions {
        synchronous: Synchronous::Normal,
        connections,
        ..SqliteOptions::default()
    };
    let path = |mode: &str, round: usize| dir.join(format!("{mode}-{round}.db"));
    let sync = best(|round| {
        let path = path("sync", round);
        sync_writers(chart, shares, || Ok(SqliteStore::open(&path, &options(1))?))
    })?;
    row("SQLite NORMAL", workload, "sync, 8 threads", sync, sync);
    for connections in [1, 4] {
        let rate = best(|round| {
            let path = path(&format!("async{connections}"), round);
            tokio.block_on(async {
                let store = AsyncSqliteStore::open(&path, &options(connections)).await?;
                async_writers(chart, shares, store).await
            })
        })?;
        let mode = format!("async, 8 tasks, {connections} connection(s)");
        row("SQLite NORMAL", workload, &mode, rate, sync);
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[cfg(feature = "postgres")]
fn postgres(
    tokio: &tokio::runtime::Runtime,
    chart: &Arc<Chart>,
    shares: &[Vec<(String, Event)>],
    workload: Workload,
    base: &str,
) -> Result<(), Error> {
    use idemchart::store::{AsyncPostgresStore, PostgresStore};

    // The admin client is synchronous; it runs outside the tokio runtime.
    let admin = |sql: String| -> Result<(), Error> {
        postgres::Client::connect(base, postgres::NoTls)?.batch_execute(&sql)?;
        Ok(())
    };
    let mut n = 0;
    let mut in_schema = |run: &mut dyn FnMut(&str) -> Result<f64, Error>| -> Result<f64, Error> {
        n += 1;
        let schema = format!("concurrent_{}_{n}", std::process::id());
        admin(format!("CREATE SCHEMA {schema}"))?;
        let rate = run(&format!("{base} options='-c search_path={schema}'"));
        admin(format!("DROP SCHEMA {schema} CASCADE"))?;
        rate
    };
    let sync = best(|_| {
        in_schema(&mut |handle| sync_writers(chart, shares, || Ok(PostgresStore::connect(handle)?)))
    })?;
    row("PostgreSQL", workload, "sync, 8 threads", sync, sync);
    let rate = best(|_| {
        in_schema(&mut |handle| {
            tokio.block_on(async {
                let store = AsyncPostgresStore::with_connections(handle, WRITERS).await?;
                async_writers(chart, shares, store).await
            })
        })
    })?;
    row(
        "PostgreSQL",
        workload,
        "async, 8 tasks, 8 connections",
        rate,
        sync,
    );
    Ok(())
}

#[cfg(not(feature = "postgres"))]
fn postgres(
    _: &tokio::runtime::Runtime,
    _: &Arc<Chart>,
    _: &[Vec<(String, Event)>],
    _: Workload,
    _: &str,
) -> Result<(), Error> {
    eprintln!("built without the `postgres` feature: PostgreSQL is not measured");
    Ok(())
}
