//! `idemchart serve`: loads every machine of `--machines DIR`, opens the
//! store, and serves `idemchart::serve` on `--listen` until SIGTERM or
//! Ctrl-C. A machine that does not load stops startup with its diagnostics
//! (exit 1); a store or address that cannot be opened exits 2.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use idemchart::interp::Chart;
use idemchart::serve::{Effects, Options, Service};
use idemchart::store::StoreAddress;
use idemchart::{Severity, SourceFile};

use super::CommandResult;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Where the processes live: `sqlite:PATH`, a PostgreSQL URL, or
    /// `postgres:` followed by libpq `KEY=VALUE` pairs.
    #[arg(long, default_value = "sqlite:idemchart.db")]
    store: String,
    /// `PRAGMA synchronous` for SQLite: `full` (the default) or `normal`.
    #[arg(long)]
    synchronous: Option<String>,
    /// The directory of machine files; each machine is served under its name.
    #[arg(long)]
    machines: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// A TOML file mapping effect names to HTTP endpoints (`docs/serve.md`).
    #[arg(long)]
    effects: Option<PathBuf>,
    /// How often to look for due timers and effects, in milliseconds (the
    /// last one given counts).
    #[arg(long, default_value_t = 500, overrides_with = "poll_ms")]
    poll_ms: u64,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    max_body: usize,
    /// How often to purge what each machine's `dedup.retention` no longer
    /// needs, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    purge_ms: u64,
    /// How long to wait for the store at startup, in seconds, trying again
    /// with a doubling pause; 0 tries once.
    #[arg(long, default_value_t = 30)]
    store_wait_secs: u64,
    /// A file of bearer tokens, one a line; every route but `/healthz` then
    /// needs `Authorization: Bearer <one of them>`.
    #[arg(long)]
    auth_token_file: Option<PathBuf>,
    /// Serve a non-loopback address without `--auth-token-file` (behind a
    /// proxy that authenticates, say).
    #[arg(long, conflicts_with = "auth_token_file")]
    no_auth: bool,
    /// The most connections open at once; one more is answered 503.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// The most requests answered at once; one more is answered 503.
    #[arg(long, default_value_t = 256)]
    max_in_flight: usize,
    /// How long a client has to send a request's head, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// How long a connection may sit with no request, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    idle_timeout_ms: u64,
    /// Serve the inspector under `/ui` where it is off by default: a
    /// non-loopback address with `--no-auth`, whose proxy authenticates.
    #[arg(long, conflicts_with = "no_inspector")]
    inspector: bool,
    /// Do not serve the inspector.
    #[arg(long)]
    no_inspector: bool,
}

/// The tokens of an `--auth-token-file`: each non-empty line, trimmed.
fn read_tokens(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(bad) = tokens
        .iter()
        .position(|t| !t.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(format!(
            "token {} of {} is not visible ASCII, which a bearer token is",
            bad + 1,
            path.display()
        ));
    }
    if tokens.is_empty() {
        return Err(format!("the token file {} holds no token", path.display()));
    }
    Ok(tokens)
}

/// Whether every address `listen` names is a loopback address, which only
/// this machine reaches.
fn is_loopback(listen: &str) -> Result<bool, String> {
    let addresses: Vec<std::net::SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(listen)
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?
        .collect();
    Ok(!addresses.is_empty() && addresses.iter().all(|a| a.ip().is_loopback()))
}

pub fn serve(args: ServeArgs) -> CommandResult {
    let Some(charts) = load_charts(&args.machines)? else {
        return Ok(ExitCode::from(1));
    };
    let effects = match &args.effects {
        Some(path) => Effects::load(path)?,
        None => Effects::default(),
    };
    let address = StoreAddress::parse(&args.store).map_err(|e| e.to_string())?;
    let sqlite = super::apply::sqlite_options(args.synchronous.as_deref())?;
    let auth_tokens = match &args.auth_token_file {
        Some(path) => read_tokens(path)?,
        None => Vec::new(),
    };
    let loopback = is_loopback(&args.listen)?;
    if auth_tokens.is_empty() && !args.no_auth && !loopback {
        return Err(format!(
            "not serving {} without authentication: it is reachable from other machines; give --auth-token-file FILE, or --no-auth when a proxy in front authenticates",
            args.listen
        )
        .into());
    }
    // On where only this machine reaches it or a token guards it; behind
    // `--no-auth` on another address, only when asked for.
    let inspector = !args.no_inspector && (args.inspector || loopback || !auth_tokens.is_empty());
    let options = Options {
        body_limit: args.max_body,
        poll_interval: Duration::from_millis(args.poll_ms.max(1)),
        purge_interval: Duration::from_millis(args.purge_ms.max(1)),
        effects,
        auth_tokens,
        max_connections: args.max_connections.max(1),
        max_in_flight: args.max_in_flight.max(1),
        header_timeout: Duration::from_millis(args.header_timeout_ms.max(1)),
        idle_timeout: Duration::from_millis(args.idle_timeout_ms.max(1)),
        inspector,
        ..Options::default()
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let wait = Duration::from_secs(args.store_wait_secs);
        let store = open_store(address, &sqlite, wait).await?;
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let service = Arc::new(Service::new(store, charts, options));
        idemchart::serve::serve(service, listener, shutdown_signal())
            .await
            .map_err(|e| format!("serving: {e}"))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Opens the store, trying again while it does not answer (a PostgreSQL
/// server still starting, a network not yet up) until `wait` has passed:
/// pauses of 100 ms doubling up to 5 s, each failed attempt logged. The
/// error after the last attempt says how long it waited.
async fn open_store(
    address: StoreAddress<'_>,
    sqlite: &idemchart::store::SqliteOptions,
    wait: Duration,
) -> Result<idemchart::store::AnyAsyncStore, String> {
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    let mut attempt = 0u64;
    loop {
        attempt += 1;
        let error = match address.open_async(sqlite).await {
            Ok(store) => {
                if attempt > 1 {
                    tracing::info!(attempt, "the store answers");
                }
                return Ok(store);
            }
            Err(e) => e.to_string(),
        };
        let left = wait.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(if wait.is_zero() {
                error
            } else {
                format!(
                    "{error} (the store did not answer within --store-wait-secs {})",
                    wait.as_secs()
                )
            });
        }
        let next = pause.min(left);
        tracing::warn!(attempt, error = %error, retry_in_ms = next.as_millis() as u64, "the store does not answer; trying again");
        tokio::time::sleep(next).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// Every machine of the files under `dir`, by name; `None` after printing
/// the diagnostics when any does not load, or two share a name.
fn load_charts(dir: &std::path::Path) -> Result<Option<BTreeMap<String, Arc<Chart>>>, String> {
    let config = super::project_config()?;
    let mut charts = BTreeMap::new();
    let mut where_from: BTreeMap<String, String> = BTreeMap::new();
    // A machine that does not load and two machines of one name are told
    // apart: each is said once, and only the first needs the closing line.
    let mut failed = false;
    let mut name_clash = false;
    let mut resolver = idemchart::load::Resolver::default();
    for candidate in super::candidates(&[dir.to_path_buf()], &config)? {
        let path = &candidate.path;
        let Some(loaded) = super::load_candidate(&candidate, &config, &mut resolver)? else {
            continue;
        };
        let mut diagnostics = loaded.errors;
        for machine in loaded.machines {
            diagnostics.extend(machine.notes);
            match machine.machine {
                Ok(machine) => {
                    if let Some(first) = where_from.get(&machine.name) {
                        super::errln(format_args!(
                            "error: machine `{}` is in {} and in {}: each name serves one machine",
                            machine.name,
                            first,
                            path.display()
                        ));
                        name_clash = true;
                        continue;
                    }
                    where_from.insert(machine.name.clone(), path.display().to_string());
                    charts.insert(machine.name.clone(), Arc::new(Chart::new(machine)));
                }
                Err(errors) => diagnostics.extend(errors),
            }
        }
        failed |= diagnostics.iter().any(|d| d.severity == Severity::Error);
        for (file, found) in loaded.sources.split(diagnostics) {
            let file: &SourceFile = &file;
            for diagnostic in &found {
                super::errln(format_args!(
                    "{}\n",
                    idemchart::report::render(diagnostic, file, false)
                ));
            }
        }
    }
    if failed {
        super::errln(format_args!(
            "error: not serving: a machine of {} does not load",
            dir.display()
        ));
        return Ok(None);
    }
    if name_clash {
        return Ok(None);
    }
    if charts.is_empty() {
        return Err(format!("{} holds no machine", dir.display()));
    }
    Ok(Some(charts))
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown signal: finishing the requests in flight");
}
