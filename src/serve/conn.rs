//! The connections of `idemchart serve`: an accept loop over hyper's HTTP/1
//! connections in place of `axum::serve`, which has no header timeout, no
//! idle timeout and no limit on connections, and which retries a failed
//! accept (out of file descriptors) at once, over and over.
//!
//! - At most `max_connections` are open; one more is accepted, answered a
//!   503 problem document with `Retry-After`, and closed, so that a client
//!   learns why instead of waiting in the kernel's backlog.
//! - A request's head must arrive within `header_timeout` from the moment
//!   the connection waits for it (hyper's timer, which also runs while a
//!   kept-alive connection waits for its next request), so a client that
//!   trickles its head is dropped.
//! - A connection with no request in flight and no bytes coming in for
//!   `idle_timeout` is closed.
//! - A failed accept (EMFILE, ENFILE, ENOBUFS) waits before the next try,
//!   growing the wait up to a second, and is logged once per burst.
//! - A head hyper's parser refuses (bytes that are not HTTP, a target over
//!   its 64 KiB, more headers than its limit) gets hyper's own bare status
//!   with no body; the stream below hyper rewrites that answer into the
//!   same status as a problem document, so that every error is one.
//! - On shutdown the listener is dropped, each connection finishes the
//!   request it is answering and closes, and `serve` returns once all have.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use super::Options;
use super::problem::Problem;

/// The limits of connections, from the service's options.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    /// hyper's own limit on a request's headers, above the service's
    /// (`routes.rs` answers a problem document for those between).
    pub parser_max_headers: usize,
}

impl Limits {
    pub fn of(options: &Options) -> Limits {
        Limits {
            max_connections: options.max_connections.max(1),
            header_timeout: options.header_timeout,
            idle_timeout: options.idle_timeout,
            parser_max_headers: (options.max_headers * 4).max(100),
        }
    }
}

/// What a connection has been doing: when bytes last came in or went out,
/// and how many requests it is answering.
struct Activity {
    start: Instant,
    /// Milliseconds after `start`.
    last: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last.store(now, Ordering::Relaxed);
    }

    /// How long the connection has been idle, or `None` while it answers.
    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        Some(self.start.elapsed().saturating_sub(last))
    }
}

/// A TCP stream that records its activity, and that rewrites hyper's
/// bare answer to a head it could not parse (see [`parser_refusal`]).
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
    /// The problem answer being written in place of hyper's bare one: its
    /// bytes, how many are written, and how many of hyper's it stands for.
    rewrite: Option<(Vec<u8>, usize, usize)>,
}

/// The answer hyper writes for a head its parser refuses is a status line
/// and `content-length: 0`, with no `content-type`; every answer of the
/// router has one, since every error of the router is a problem document.
/// Returns the same status as a problem document, written whole, and
/// closing the connection as hyper's did.
fn parser_refusal(written: &[u8]) -> Option<Vec<u8>> {
    // Every answer passes here: a body or a long head is told apart by its
    // length and its ends before any of it is read as text.
    if written.len() > 256 || !written.starts_with(b"HTTP/1.1 4") || !written.ends_with(b"\r\n\r\n")
    {
        return None;
    }
    let head = std::str::from_utf8(written)
        .ok()?
        .strip_suffix("\r\n\r\n")?;
    let code: u16 = head.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    if !matches!(code, 400 | 414 | 431) || head.to_ascii_lowercase().contains("content-type:") {
        return None;
    }
    let status = axum::http::StatusCode::from_u16(code).ok()?;
    let problem = match code {
        400 => Problem::new(
            status,
            "bad-request",
            "Bad request",
            "the request cannot be read as HTTP/1.1",
        ),
        _ => super::problem::for_status(status),
    };
    Some(raw_answer(&problem, ""))
}

/// `problem` as the bytes of a whole HTTP/1.1 answer that closes the
/// connection, with `extra` header lines (each ending in CRLF).
fn raw_answer(problem: &Problem, extra: &str) -> Vec<u8> {
    let body = problem.document().to_string();
    let status = problem.status;
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/problem+json\r\n{extra}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl Tracked {
    /// Writes the rest of a rewritten answer; once all of it is out, tells
    /// hyper its own bytes were written. A later write of hyper's (there is
    /// none: it closes after such an answer) goes through as it is.
    fn write_rewrite(
        &mut self,
        cx: &mut Context<'_>,
        answer: Vec<u8>,
        mut written: usize,
        stands_for: usize,
    ) -> Poll<io::Result<usize>> {
        while written < answer.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &answer[written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    written += n;
                    self.activity.touch();
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => {
                    self.rewrite = Some((answer, written, stands_for));
                    return Poll::Pending;
                }
            }
        }
        tracing::debug!("answered a head the HTTP parser refused with a problem document");
        Poll::Ready(Ok(stands_for))
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.rewrite.is_none()
            && let Some(answer) = parser_refusal(buf)
        {
            self.rewrite = Some((answer, 0, buf.len()));
        }
        if let Some((answer, written, stands_for)) = self.rewrite.take() {
            return self.write_rewrite(cx, answer, written, stands_for);
        }
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for
/// the open connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let limits = within_open_files(limits);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // A burst of failures is logged once, at its first; the
                // wait grows so that the loop does not spin while the
                // process is out of descriptors.
                if backoff.is_zero() {
                    tracing::warn!(%error, "cannot accept a connection; waiting before the next try");
                }
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                tokio::select! {
                    () = tokio::time::sleep(backoff) => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        if !backoff.is_zero() {
            tracing::info!("accepting connections again");
            backoff = Duration::ZERO;
        }
        let _ = stream.set_nodelay(true);
        match Arc::clone(&connections).try_acquire_owned() {
            Ok(permit) => {
                let app = app.clone();
                let stopping = stopping.clone();
                tokio::spawn(async move {
                    connection(stream, app, limits, stopping).await;
                    drop(permit);
                });
            }
            Err(_) => {
                tokio::spawn(refuse(stream, limits.max_connections));
            }
        }
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit until it has closed.
    let _ = connections
        .acquire_many(limits.max_connections as u32)
        .await;
    Ok(())
}

/// Descriptors kept for everything but connections: the listener, the
/// store's files or sockets, the log, effect calls, and the connections
/// being refused with a 503.
const RESERVED_FILES: u64 = 64;

/// `limits` with at most as many connections as the process may open
/// files, less [`RESERVED_FILES`]: past that, accepting fails (EMFILE) and
/// no client gets an answer, where one over `max_connections` gets a 503.
fn within_open_files(mut limits: Limits) -> Limits {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes only `limit`.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
        if read && limit.rlim_cur != libc::RLIM_INFINITY {
            let allowed = (limit.rlim_cur.saturating_sub(RESERVED_FILES)).max(1);
            if (limits.max_connections as u64) > allowed {
                tracing::warn!(
                    configured = limits.max_connections,
                    open_files = limit.rlim_cur,
                    allowed,
                    "fewer connections than --max-connections: the limit of open files allows no more"
                );
                limits.max_connections = allowed as usize;
            }
        }
    }
    limits
}

/// Answers a connection over the limit with a 503 problem and closes it.
async fn refuse(mut stream: TcpStream, limit: usize) {
    let problem = Problem::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "Too many connections",
        format!("the service has its limit of {limit} connections open; retry"),
    )
    .with("limit", limit);
    let answer = raw_answer(&problem, "retry-after: 1\r\n");
    let write = async {
        stream.write_all(&answer).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
    tracing::warn!(limit, "refused a connection: too many open");
}

/// One connection, until it closes, idles out or the service stops.
async fn connection(
    stream: TcpStream,
    app: Router,
    limits: Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        stream,
        activity: Arc::clone(&activity),
        rewrite: None,
    });
    let counted = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut app = app.clone();
        let activity = Arc::clone(&counted);
        activity.busy.fetch_add(1, Ordering::Relaxed);
        async move {
            let response =
                tower_service::Service::call(&mut app, request.map(axum::body::Body::new))
                    .await
                    .unwrap_or_else(|never| match never {});
            activity.busy.fetch_sub(1, Ordering::Relaxed);
            activity.touch();
            Ok::<_, std::convert::Infallible>(response.into_response())
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_headers(limits.parser_max_headers)
        .keep_alive(true);
    let mut served = std::pin::pin!(builder.serve_connection(io, service));
    let check = (limits.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut closing = *stopping.borrow();
    if closing {
        served.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection closed");
                }
                return;
            }
            changed = stopping.changed(), if !closing => {
                // A dropped sender is a stop too.
                if changed.is_err() || *stopping.borrow() {
                    closing = true;
                    served.as_mut().graceful_shutdown();
                }
            }
            () = tokio::time::sleep(check), if !closing => {
                if activity.idle_for().is_some_and(|idle| idle >= limits.idle_timeout) {
                    tracing::debug!("closing an idle connection");
                    closing = true;
                    served.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
