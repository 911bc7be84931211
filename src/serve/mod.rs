//! `idemchart serve`: the durable runtime over HTTP, a thin shell over
//! [`runtime::nonblocking`](crate::runtime::nonblocking).
//!
//! One [`Service`] holds the store, the machines by name, the effect
//! endpoints and the counters; the handlers (`routes.rs`) turn requests into
//! calls of the async API and its answers into statuses, and the background
//! tasks (`background.rs`) fire due timers and dispatch the outbox. Statuses
//! follow the IETF httpapi `Idempotency-Key` draft; errors are problem
//! documents (`problem.rs`). `docs/serve.md` is the reference.

mod background;
mod conn;
pub mod edge;
pub mod effects;
mod group;
mod inspector;
mod metrics;
pub mod problem;
mod routes;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::interp::Chart;
use crate::store::AnyAsyncStore;

pub use effects::{Effects, Endpoint, OnTimeout};
pub use routes::{OPENAPI, ROUTES, router};

/// How the service runs, apart from its store and machines.
#[derive(Clone)]
pub struct Options {
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// How often the background tasks look for due timers and effects.
    pub poll_interval: Duration,
    /// How often the background task purges what each machine's
    /// `dedup.retention` no longer needs (`runtime::purge`).
    pub purge_interval: Duration,
    pub effects: Effects,
    /// The bearer tokens any of which a request needs (but for `/healthz`);
    /// empty, no request needs one.
    pub auth_tokens: Vec<String>,
    /// The most connections open at once; one more is answered 503 and
    /// closed.
    pub max_connections: usize,
    /// The most requests being answered at once; one more is answered 503.
    pub max_in_flight: usize,
    /// How long a client has to send a request's head, from the moment the
    /// connection waits for one (also on a kept-alive connection).
    pub header_timeout: Duration,
    /// How long a connection may stay open with no request in flight and
    /// no bytes coming in.
    pub idle_timeout: Duration,
    /// The longest request target (path and query), in bytes.
    pub max_uri_bytes: usize,
    /// The most headers of a request, and their largest total size.
    pub max_headers: usize,
    pub max_header_bytes: usize,
    /// Whether the inspector is served under `/ui`
    /// (`src/serve/inspector/`).
    pub inspector: bool,
    /// How many groups of one machine's events are committed at once, each
    /// in a transaction of its own (`group.rs`); the requests that arrive
    /// while all are busy wait and form the next group.
    pub committers: usize,
}

impl std::fmt::Debug for Options {
    /// Everything but the tokens, which must not reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("body_limit", &self.body_limit)
            .field("poll_interval", &self.poll_interval)
            .field("effects", &self.effects)
            .field("auth_tokens", &self.auth_tokens.len())
            .field("max_connections", &self.max_connections)
            .field("max_in_flight", &self.max_in_flight)
            .field("header_timeout", &self.header_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_uri_bytes", &self.max_uri_bytes)
            .field("max_headers", &self.max_headers)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("inspector", &self.inspector)
            .field("committers", &self.committers)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            body_limit: 1 << 20,
            poll_interval: Duration::from_millis(500),
            purge_interval: Duration::from_secs(60),
            effects: Effects::default(),
            auth_tokens: Vec::new(),
            max_connections: 1024,
            max_in_flight: 256,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_uri_bytes: 8 << 10,
            max_headers: 100,
            max_header_bytes: 32 << 10,
            inspector: true,
            committers: DEFAULT_COMMITTERS,
        }
    }
}

/// `Options::committers` unless told: a few transactions at once keep the
/// store busy while each gathers the requests that queued during the
/// others' commits.
pub const DEFAULT_COMMITTERS: usize = 4;

/// Everything the handlers and the background tasks share.
pub struct Service {
    pub store: AnyAsyncStore,
    /// The machines, by name.
    pub charts: BTreeMap<String, Arc<Chart>>,
    pub options: Options,
    metrics: metrics::Metrics,
    /// The `(process, event id)` pairs being applied by a request of this
    /// instance: a second request for one of them is answered 409 at once.
    applying: Mutex<HashSet<(String, String)>>,
    /// One permit per request being answered (`--max-in-flight`).
    in_flight: Arc<tokio::sync::Semaphore>,
    /// The queue of each machine's events, by machine (group commit).
    groups: BTreeMap<String, group::Group>,
    client: reqwest::Client,
    /// A message for each process something was written for (an event, a
    /// completion, a timer, a dispatched effect, an operator's action):
    /// the inspector's pages follow them.
    changes: tokio::sync::broadcast::Sender<Change>,
    /// The duplicates this instance answered, by `(process, event id)`.
    duplicates: Mutex<HashMap<(String, String), Duplicates>>,
    /// Set when the service stops taking connections, so that the
    /// inspector's event streams end and let the connections close.
    closing: tokio::sync::watch::Sender<bool>,
    inspector: inspector::Views,
}

/// A process of a machine that something was written for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub machine: String,
    pub process: String,
}

/// How often, and when first and last, an applied event id was delivered
/// again and answered with its frozen response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Duplicates {
    pub count: u64,
    /// Milliseconds since the Unix epoch.
    pub first: u64,
    pub last: u64,
}

/// The most event ids whose duplicates are counted; past it, new ids are
/// not counted (the memory of a long-running instance stays bounded).
const MAX_COUNTED_IDS: usize = 100_000;

impl Service {
    pub fn new(
        store: AnyAsyncStore,
        charts: BTreeMap<String, Arc<Chart>>,
        options: Options,
    ) -> Service {
        let inspector = inspector::Views::new(charts.keys());
        let groups = charts
            .keys()
            .map(|machine| (machine.clone(), group::Group::new()))
            .collect();
        Service {
            store,
            charts,
            groups,
            options: options.clone(),
            metrics: metrics::Metrics::default(),
            applying: Mutex::new(HashSet::new()),
            in_flight: Arc::new(tokio::sync::Semaphore::new(options.max_in_flight.max(1))),
            client: reqwest::Client::new(),
            changes: tokio::sync::broadcast::channel(1024).0,
            duplicates: Mutex::new(HashMap::new()),
            closing: tokio::sync::watch::channel(false).0,
            inspector,
        }
    }

    /// Tells the inspector's pages that `process` of `machine` changed.
    fn changed(&self, machine: &str, process: &str) {
        // No page is listening: nothing to make.
        if self.changes.receiver_count() == 0 {
            return;
        }
        let _ = self.changes.send(Change {
            machine: machine.to_string(),
            process: process.to_string(),
        });
    }

    /// Counts a duplicate of `(process, id)` answered at `now`.
    fn duplicate_answered(&self, process: &str, id: &str, now: u64) {
        let mut duplicates = self.duplicates.lock().unwrap_or_else(|e| e.into_inner());
        let key = (process.to_string(), id.to_string());
        if let Some(seen) = duplicates.get_mut(&key) {
            seen.count += 1;
            seen.last = now;
        } else if duplicates.len() < MAX_COUNTED_IDS {
            duplicates.insert(
                key,
                Duplicates {
                    count: 1,
                    first: now,
                    last: now,
                },
            );
        }
    }

    /// The duplicates of `(process, id)` this instance answered.
    fn duplicates_of(&self, process: &str, id: &str) -> Option<Duplicates> {
        let duplicates = self.duplicates.lock().unwrap_or_else(|e| e.into_inner());
        duplicates
            .get(&(process.to_string(), id.to_string()))
            .copied()
    }

    /// Marks `(process, id)` as being applied until the guard drops;
    /// `None` when another request is applying it.
    fn begin_applying(&self, process: &str, id: &str) -> Option<Applying<'_>> {
        let key = (process.to_string(), id.to_string());
        let mut applying = self.applying.lock().unwrap_or_else(|e| e.into_inner());
        // The guard is made only for a mark this call inserted: a guard
        // dropped here would remove the other request's mark (and lock the
        // set it is holding).
        if !applying.insert(key.clone()) {
            return None;
        }
        drop(applying);
        Some(Applying { service: self, key })
    }
}

/// A `(process, event id)` pair being applied; released on drop, also when
/// the request's task is cancelled.
struct Applying<'s> {
    service: &'s Service,
    key: (String, String),
}

impl Drop for Applying<'_> {
    fn drop(&mut self) {
        let mut applying = self
            .service
            .applying
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        applying.remove(&self.key);
    }
}

/// Serves on `listener` until `shutdown` completes; then stops taking
/// connections, lets the requests in flight finish, stops the background
/// tasks after their current round (a transaction is committed or rolled
/// back, never left half written), and returns.
pub async fn serve(
    service: Arc<Service>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let background = tokio::spawn(background::run(Arc::clone(&service), stopped));
    let address = listener.local_addr()?;
    tracing::info!(%address, machines = ?service.charts.keys().collect::<Vec<_>>(), "listening");
    let closing = Arc::clone(&service);
    let served = conn::serve(
        listener,
        router(Arc::clone(&service)),
        conn::Limits::of(&service.options),
        async move {
            shutdown.await;
            // The inspector's event streams never end by themselves.
            closing.closing.send_replace(true);
        },
    )
    .await;
    tracing::info!("stopping: requests finished, stopping the background tasks");
    let _ = stop.send(true);
    let _ = background.await;
    tracing::info!("stopped");
    served
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AsyncSqliteStore;

    /// A service of one counter machine on an in-memory store, serving on
    /// a free port until `stop` is sent: the service, its address, the
    /// sender and the server's task.
    pub(super) async fn counter_service(
        options: Options,
    ) -> (
        Arc<Service>,
        std::net::SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<std::io::Result<()>>,
    ) {
        let machine = crate::syntax::parse(
            "machine: counter\ncontext: { n: 0 }\ninitial: a\nstates:\n  a: { on: { ADD: { actions: [{ assign: { n: \"context.n + 1\" } }] } } }\n",
            crate::syntax::Syntax::Yaml,
        )
        .unwrap();
        let charts = BTreeMap::from([("counter".to_string(), Arc::new(Chart::new(machine)))]);
        let store = AnyAsyncStore::Sqlite(AsyncSqliteStore::in_memory().await.unwrap());
        let service = Arc::new(Service::new(store, charts, options));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(Arc::clone(&service), listener, async {
            let _ = stopped.await;
        }));
        (service, address, stop, server)
    }

    /// While a request applies an id, another request for the same id of
    /// the same process is answered 409 at once; once it is done, the id
    /// answers again. The first request is held here by taking its mark.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_id_being_applied_is_answered_409() {
        let (service, address, stop, server) = counter_service(Options::default()).await;
        let url = format!("http://{address}/machines/counter/processes/c/events");
        let client = reqwest::Client::new();
        let send = || {
            client
                .post(&url)
                .header("Idempotency-Key", "k1")
                .header("content-type", "application/json")
                .body(r#"{"type": "ADD"}"#)
                .send()
        };
        let held = service.begin_applying("c", "k1").unwrap();
        let refused = send().await.unwrap();
        assert_eq!(refused.status(), 409);
        assert_eq!(
            refused.headers()["content-type"],
            "application/problem+json"
        );
        // The id is answered once the other request is done: a second.
        assert_eq!(refused.headers()["retry-after"], "1");
        let other = client
            .post(&url)
            .header("Idempotency-Key", "k2")
            .header("content-type", "application/json")
            .body(r#"{"type": "ADD"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 200, "another id is not held up");
        drop(held);
        let applied = send().await.unwrap();
        assert_eq!(applied.status(), 200);
        assert!(applied.headers().get("idempotent-replayed").is_none());
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    /// With every in-flight permit taken, a request is answered 503 with
    /// `Retry-After` at once, and answered again once one is free.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_past_the_in_flight_limit_is_answered_503() {
        let options = Options {
            max_in_flight: 2,
            ..Options::default()
        };
        let (service, address, stop, server) = counter_service(options).await;
        let url = format!("http://{address}/healthz");
        let client = reqwest::Client::new();
        let held = Arc::clone(&service.in_flight)
            .try_acquire_many_owned(2)
            .unwrap();
        let refused = client.get(&url).send().await.unwrap();
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()["retry-after"], "1");
        assert_eq!(
            refused.headers()["content-type"],
            "application/problem+json"
        );
        let doc: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
        assert_eq!(doc["type"], "https://idemchart.dev/problems/overloaded");
        assert_eq!(doc["limit"], 2);
        drop(held);
        assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }
}
