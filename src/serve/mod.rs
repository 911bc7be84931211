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
pub mod effects;
mod metrics;
pub mod problem;
mod routes;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::interp::Chart;
use crate::store::AnyAsyncStore;

pub use effects::{Effects, Endpoint, OnTimeout};
pub use routes::{OPENAPI, ROUTES, router};

/// How the service runs, apart from its store and machines.
#[derive(Clone, Debug)]
pub struct Options {
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// How often the background tasks look for due timers and effects.
    pub poll_interval: Duration,
    /// How often the background task purges what each machine's
    /// `dedup.retention` no longer needs (`runtime::purge`).
    pub purge_interval: Duration,
    pub effects: Effects,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            body_limit: 1 << 20,
            poll_interval: Duration::from_millis(500),
            purge_interval: Duration::from_secs(60),
            effects: Effects::default(),
        }
    }
}

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
    client: reqwest::Client,
}

impl Service {
    pub fn new(
        store: AnyAsyncStore,
        charts: BTreeMap<String, Arc<Chart>>,
        options: Options,
    ) -> Service {
        Service {
            store,
            charts,
            options,
            metrics: metrics::Metrics::default(),
            applying: Mutex::new(HashSet::new()),
            client: reqwest::Client::new(),
        }
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
    let served = axum::serve(listener, router(Arc::clone(&service)))
        .with_graceful_shutdown(shutdown)
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

    /// While a request applies an id, another request for the same id of
    /// the same process is answered 409 at once; once it is done, the id
    /// answers again. The first request is held here by taking its mark.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_id_being_applied_is_answered_409() {
        let machine = crate::syntax::parse(
            "machine: counter\ncontext: { n: 0 }\ninitial: a\nstates:\n  a: { on: { ADD: { actions: [{ assign: { n: \"context.n + 1\" } }] } } }\n",
            crate::syntax::Syntax::Yaml,
        )
        .unwrap();
        let charts = BTreeMap::from([("counter".to_string(), Arc::new(Chart::new(machine)))]);
        let store = AnyAsyncStore::Sqlite(AsyncSqliteStore::in_memory().await.unwrap());
        let service = Arc::new(Service::new(store, charts, Options::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/machines/counter/processes/c/events",
            listener.local_addr().unwrap()
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(Arc::clone(&service), listener, async {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::new();
        let send = || {
            client
                .post(&url)
                .header("Idempotency-Key", "k1")
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
        let other = client
            .post(&url)
            .header("Idempotency-Key", "k2")
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
}
