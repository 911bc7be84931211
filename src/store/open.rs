//! Opening a store from a store string: `sqlite:PATH`, a PostgreSQL URL
//! (`postgres://…`, `postgresql://…`) or `postgres:` with libpq `KEY=VALUE`
//! pairs. A host program that reads its store from configuration gets the
//! same strings, checks and messages as `idemchart apply --store`.

use std::path::Path;

use super::async_sqlite::AsyncSqliteTransaction;
#[cfg(feature = "postgres")]
use super::postgres::AsyncPostgresTransaction;
use super::{
    AppliedEvent, AsyncSqliteStore, AsyncStore, AsyncTransaction, AttemptRecord, OutboxItem,
    OutboxStatus, ProcessRow, RowReads, RowWrites, SqliteOptions, SqliteStore, Store, StoreError,
    StoreSecret, StoreStats, Transaction,
};
#[cfg(feature = "postgres")]
use super::{AsyncPostgresStore, PostgresStore};

/// How long a PostgreSQL connection attempt may take when the store string
/// does not say (`connect_timeout`): an unreachable server is then an error
/// within seconds instead of after the system's TCP timeout.
#[cfg(feature = "postgres")]
const CONNECT_TIMEOUT_SECONDS: u32 = 10;

const STORE_FORMS: &str = "`sqlite:PATH`, `postgres://…` or `postgres:KEY=VALUE …`";

/// Why a store string cannot be opened. No message repeats the string past
/// its scheme: the rest may hold a password.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("a store string needs a scheme: write {STORE_FORMS}")]
    NoScheme,
    #[error("unknown store scheme `{0}`: write {STORE_FORMS}")]
    UnknownScheme(String),
    #[error("`sqlite:` needs a path after the colon")]
    NoPath,
    #[error(
        "`postgres:` needs libpq `KEY=VALUE` pairs after the colon (`postgres:host=… dbname=…`), or write a `postgres://` URL"
    )]
    NoPairs,
    /// `path` is set when SQLite's message does not name the file itself.
    #[error("cannot open the SQLite store{}: {message}", quoted(.path))]
    Sqlite {
        path: Option<String>,
        message: String,
    },
    #[error("bad PostgreSQL store string: {0}")]
    PostgresString(String),
    #[error("cannot open the PostgreSQL store: {0}")]
    Postgres(String),
    #[error(
        "this idemchart was built without PostgreSQL support: build it with the `postgres` feature (on by default) to use a `postgres` store"
    )]
    NoPostgresSupport,
}

/// The path in backquotes after a space, or nothing.
fn quoted(path: &Option<String>) -> String {
    path.as_ref().map(|p| format!(" `{p}`")).unwrap_or_default()
}

/// A store string, read but not yet opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreAddress<'a> {
    Sqlite(&'a str),
    /// What tokio-postgres connects with: a URL or `KEY=VALUE` pairs.
    Postgres(&'a str),
}

impl<'a> StoreAddress<'a> {
    /// Reads a store string without touching the store.
    pub fn parse(text: &'a str) -> Result<StoreAddress<'a>, OpenError> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(OpenError::NoPath);
            }
            return Ok(StoreAddress::Sqlite(path));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(StoreAddress::Postgres(text));
        }
        if let Some(params) = text.strip_prefix("postgres:") {
            if !params.contains('=') {
                return Err(OpenError::NoPairs);
            }
            return Ok(StoreAddress::Postgres(params));
        }
        Err(match text.split_once(':') {
            Some((scheme, _)) if !scheme.is_empty() => OpenError::UnknownScheme(scheme.into()),
            _ => OpenError::NoScheme,
        })
    }

    /// Opens (and migrates) the store; `sqlite` applies to a SQLite store
    /// only. Inside a tokio runtime this works too, but holds the thread
    /// while it waits: use [`StoreAddress::open_async`] there.
    pub fn open(self, sqlite: &SqliteOptions) -> Result<AnyStore, OpenError> {
        match self {
            StoreAddress::Sqlite(path) => SqliteStore::open(Path::new(path), sqlite)
                .map(AnyStore::Sqlite)
                .map_err(|e| sqlite_error(path, e)),
            StoreAddress::Postgres(params) => open_postgres(params),
        }
    }

    /// Opens (and migrates) the store for the async API; `sqlite` applies
    /// to a SQLite store only.
    pub async fn open_async(self, sqlite: &SqliteOptions) -> Result<AnyAsyncStore, OpenError> {
        match self {
            StoreAddress::Sqlite(path) => AsyncSqliteStore::open(Path::new(path), sqlite)
                .await
                .map(AnyAsyncStore::Sqlite)
                .map_err(|e| sqlite_error(path, e)),
            StoreAddress::Postgres(params) => open_postgres_async(params).await,
        }
    }
}

fn sqlite_error(path: &str, error: StoreError) -> OpenError {
    // SQLite names the file in some messages, not in others.
    let message = store_message(error);
    OpenError::Sqlite {
        path: (!message.contains(path)).then(|| path.to_string()),
        message,
    }
}

/// Opens the store a store string names, SQLite with its default options.
///
/// ```
/// use idemchart::store::{OpenError, open};
///
/// let dir = std::env::temp_dir().join(format!("idemchart-open-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("orders.db");
/// let mut store = open(&format!("sqlite:{}", path.display())).unwrap();
/// # use idemchart::store::Store;
/// assert_eq!(store.process("order-1").unwrap(), None);
///
/// let error = open("mysql://root:secret@db/orders").unwrap_err();
/// assert_eq!(error, OpenError::UnknownScheme("mysql".into()));
/// assert!(!error.to_string().contains("secret"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn open(text: &str) -> Result<AnyStore, OpenError> {
    StoreAddress::parse(text)?.open(&SqliteOptions::default())
}

/// `open` for the async API: the store a store string names, as a
/// cloneable handle on a pool of connections.
pub async fn open_async(text: &str) -> Result<AnyAsyncStore, OpenError> {
    StoreAddress::parse(text)?
        .open_async(&SqliteOptions::default())
        .await
}

/// The text of a store error without `StoreError`'s `store:` prefix, which
/// the open error's own words replace.
fn store_message(error: StoreError) -> String {
    match error {
        StoreError::Backend(m) | StoreError::Race(m) | StoreError::Corrupt(m) => m,
    }
}

/// The connection string to connect with: `params`, checked, with the
/// default `connect_timeout` unless it has one.
#[cfg(feature = "postgres")]
fn postgres_params(params: &str) -> Result<String, OpenError> {
    let config: tokio_postgres::Config = params.parse().map_err(|e: tokio_postgres::Error| {
        OpenError::PostgresString(match std::error::Error::source(&e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        })
    })?;
    Ok(if config.get_connect_timeout().is_some() {
        params.to_string()
    } else {
        with_connect_timeout(params)
    })
}

#[cfg(feature = "postgres")]
fn open_postgres(params: &str) -> Result<AnyStore, OpenError> {
    PostgresStore::connect(&postgres_params(params)?)
        .map(|store| AnyStore::Postgres(Box::new(store)))
        .map_err(|e| OpenError::Postgres(store_message(e)))
}

#[cfg(feature = "postgres")]
async fn open_postgres_async(params: &str) -> Result<AnyAsyncStore, OpenError> {
    AsyncPostgresStore::connect(&postgres_params(params)?)
        .await
        .map(AnyAsyncStore::Postgres)
        .map_err(|e| OpenError::Postgres(store_message(e)))
}

/// `params` with the default `connect_timeout` added in the string's own
/// syntax, so that the store connects with exactly what the user wrote plus
/// this one setting.
#[cfg(feature = "postgres")]
fn with_connect_timeout(params: &str) -> String {
    if params.contains("://") {
        let separator = if params.contains('?') { '&' } else { '?' };
        format!("{params}{separator}connect_timeout={CONNECT_TIMEOUT_SECONDS}")
    } else {
        format!("{params} connect_timeout={CONNECT_TIMEOUT_SECONDS}")
    }
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_params: &str) -> Result<AnyStore, OpenError> {
    Err(OpenError::NoPostgresSupport)
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres_async(_params: &str) -> Result<AnyAsyncStore, OpenError> {
    Err(OpenError::NoPostgresSupport)
}

/// Either store. `Store::transaction` is generic, so `Store` is not object
/// safe and cannot be boxed as `dyn Store`; this enum forwards each call to
/// the store it holds, so that a program picks its store at run time.
pub enum AnyStore {
    Sqlite(SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(Box<PostgresStore>),
}

/// Names the kind of store; the connections themselves have nothing to show.
impl std::fmt::Debug for AnyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AnyStore::Sqlite(_) => "AnyStore::Sqlite",
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(_) => "AnyStore::Postgres",
        })
    }
}

/// Runs `$call` on the store inside `$self`, bound to `$store`.
macro_rules! forward {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::Sqlite($store) => $call,
            #[cfg(feature = "postgres")]
            AnyStore::Postgres($store) => $call,
        }
    };
}

impl Store for AnyStore {
    fn secret(&self) -> &StoreSecret {
        forward!(self, store => store.secret())
    }

    fn transaction<R, E>(
        &mut self,
        body: impl FnOnce(&mut dyn Transaction) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        forward!(self, store => store.transaction(body))
    }

    fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        forward!(self, store => store.process(id))
    }

    fn outbox(&mut self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        forward!(self, store => store.outbox(status))
    }

    fn claim_due_of(
        &mut self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        forward!(self, store => store.claim_due_of(now, lease_ms, limit, machine, effects))
    }

    fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        forward!(self, store => store.finish_attempt(attempt))
    }

    fn due_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        forward!(self, store => store.due_processes(machine, version, now, limit))
    }

    fn stale_processes(
        &mut self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        forward!(self, store => store.stale_processes(machine, version, after, limit))
    }

    fn purge_applied(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.purge_applied(machine, before))
    }

    fn purge_outbox(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.purge_outbox(machine, before))
    }

    fn requeue_dead(&mut self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.requeue_dead(key, now))
    }

    fn applied_count(&mut self, process: &str) -> Result<usize, StoreError> {
        forward!(self, store => store.applied_count(process))
    }

    fn purge_payloads(&mut self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward!(self, store => store.purge_payloads(machine, before))
    }

    fn applied_events(
        &mut self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        forward!(self, store => store.applied_events(process, offset, limit))
    }
}

/// Either async store, picked at run time like [`AnyStore`]; cloning it
/// clones the handle, not the pool.
#[derive(Clone, Debug)]
pub enum AnyAsyncStore {
    Sqlite(AsyncSqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(AsyncPostgresStore),
}

/// A transaction of an [`AnyAsyncStore`].
pub enum AnyAsyncTransaction {
    Sqlite(AsyncSqliteTransaction),
    #[cfg(feature = "postgres")]
    Postgres(AsyncPostgresTransaction),
}

/// Runs `$call` on the transaction inside `$self`, bound to `$tx`, and
/// awaits it.
macro_rules! forward_tx {
    ($self:ident, $tx:ident => $call:expr) => {
        match $self {
            AnyAsyncTransaction::Sqlite($tx) => $call.await,
            #[cfg(feature = "postgres")]
            AnyAsyncTransaction::Postgres($tx) => $call.await,
        }
    };
}

impl AsyncTransaction for AnyAsyncTransaction {
    async fn applied_event(
        &mut self,
        process: &str,
        event_id: &str,
    ) -> Result<Option<AppliedEvent>, StoreError> {
        forward_tx!(self, tx => tx.applied_event(process, event_id))
    }

    async fn process(&mut self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        forward_tx!(self, tx => tx.process(id))
    }

    async fn insert_process(&mut self, row: &ProcessRow) -> Result<bool, StoreError> {
        forward_tx!(self, tx => tx.insert_process(row))
    }

    async fn update_process(
        &mut self,
        id: &str,
        revision: u64,
        snapshot: &str,
        next_timer_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        forward_tx!(self, tx => tx.update_process(id, revision, snapshot, next_timer_at))
    }

    async fn insert_applied_event(&mut self, row: &AppliedEvent) -> Result<(), StoreError> {
        forward_tx!(self, tx => tx.insert_applied_event(row))
    }

    async fn insert_outbox(&mut self, item: &OutboxItem) -> Result<(), StoreError> {
        forward_tx!(self, tx => tx.insert_outbox(item))
    }

    async fn cancel_outbox(&mut self, key: &str) -> Result<(), StoreError> {
        forward_tx!(self, tx => tx.cancel_outbox(key))
    }

    async fn finish_attempt(&mut self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        forward_tx!(self, tx => tx.finish_attempt(attempt))
    }

    async fn outbox_item(&mut self, key: &str) -> Result<Option<OutboxItem>, StoreError> {
        forward_tx!(self, tx => tx.outbox_item(key))
    }

    async fn pending_outbox(&mut self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        forward_tx!(self, tx => tx.pending_outbox(process))
    }

    async fn read_rows(
        &mut self,
        marks: &[(&str, &str)],
        processes: &[&str],
    ) -> Result<RowReads, StoreError> {
        forward_tx!(self, tx => tx.read_rows(marks, processes))
    }

    async fn write_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        forward_tx!(self, tx => tx.write_rows(rows))
    }

    async fn write_last_rows(&mut self, rows: &RowWrites) -> Result<Option<String>, StoreError> {
        forward_tx!(self, tx => tx.write_last_rows(rows))
    }
}

/// Runs `$call` on the store inside `$self`, bound to `$store`, and awaits
/// it.
macro_rules! forward_async {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyAsyncStore::Sqlite($store) => $call.await,
            #[cfg(feature = "postgres")]
            AnyAsyncStore::Postgres($store) => $call.await,
        }
    };
}

/// A transaction begun on one store and ended on the other is a bug of the
/// caller's; it is refused, and the transaction rolled back as it drops.
#[cfg(feature = "postgres")]
fn mismatched() -> StoreError {
    StoreError::Backend("a transaction ended on another store than it began on".into())
}

impl AsyncStore for AnyAsyncStore {
    type Transaction = AnyAsyncTransaction;

    fn secret(&self) -> &StoreSecret {
        match self {
            AnyAsyncStore::Sqlite(store) => store.secret(),
            #[cfg(feature = "postgres")]
            AnyAsyncStore::Postgres(store) => store.secret(),
        }
    }

    async fn begin(&self) -> Result<AnyAsyncTransaction, StoreError> {
        Ok(match self {
            AnyAsyncStore::Sqlite(store) => AnyAsyncTransaction::Sqlite(store.begin().await?),
            #[cfg(feature = "postgres")]
            AnyAsyncStore::Postgres(store) => AnyAsyncTransaction::Postgres(store.begin().await?),
        })
    }

    async fn commit(&self, tx: AnyAsyncTransaction) -> Result<(), StoreError> {
        match (self, tx) {
            (AnyAsyncStore::Sqlite(store), AnyAsyncTransaction::Sqlite(tx)) => {
                store.commit(tx).await
            }
            #[cfg(feature = "postgres")]
            (AnyAsyncStore::Postgres(store), AnyAsyncTransaction::Postgres(tx)) => {
                store.commit(tx).await
            }
            #[cfg(feature = "postgres")]
            _ => Err(mismatched()),
        }
    }

    async fn rollback(&self, tx: AnyAsyncTransaction) {
        match (self, tx) {
            (AnyAsyncStore::Sqlite(store), AnyAsyncTransaction::Sqlite(tx)) => {
                store.rollback(tx).await
            }
            #[cfg(feature = "postgres")]
            (AnyAsyncStore::Postgres(store), AnyAsyncTransaction::Postgres(tx)) => {
                store.rollback(tx).await
            }
            #[cfg(feature = "postgres")]
            _ => {}
        }
    }

    async fn process(&self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        forward_async!(self, store => store.process(id))
    }

    async fn outbox(&self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        forward_async!(self, store => store.outbox(status))
    }

    async fn claim_due_of(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        forward_async!(self, store => store.claim_due_of(now, lease_ms, limit, machine, effects))
    }

    async fn finish_attempt(&self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        forward_async!(self, store => store.finish_attempt(attempt))
    }

    async fn due_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        forward_async!(self, store => store.due_processes(machine, version, now, limit))
    }

    async fn stale_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        forward_async!(self, store => store.stale_processes(machine, version, after, limit))
    }

    async fn processes_of(
        &self,
        machine: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ProcessRow>, StoreError> {
        forward_async!(self, store => store.processes_of(machine, after, limit))
    }

    async fn outbox_of(&self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        forward_async!(self, store => store.outbox_of(process))
    }

    async fn purge_applied(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward_async!(self, store => store.purge_applied(machine, before))
    }

    async fn purge_outbox(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward_async!(self, store => store.purge_outbox(machine, before))
    }

    async fn purge_payloads(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        forward_async!(self, store => store.purge_payloads(machine, before))
    }

    async fn requeue_dead(&self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        forward_async!(self, store => store.requeue_dead(key, now))
    }

    async fn applied_count(&self, process: &str) -> Result<usize, StoreError> {
        forward_async!(self, store => store.applied_count(process))
    }

    async fn applied_events(
        &self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        forward_async!(self, store => store.applied_events(process, offset, limit))
    }

    async fn stats(&self, now: u64) -> Result<StoreStats, StoreError> {
        forward_async!(self, store => store.stats(now))
    }
}

#[cfg(test)]
mod tests {
    use super::{OpenError, StoreAddress};

    #[test]
    fn store_strings_name_their_store() {
        let parse = StoreAddress::parse;
        assert_eq!(parse("sqlite:a/b.db"), Ok(StoreAddress::Sqlite("a/b.db")));
        assert_eq!(
            parse("postgres://u@h:5432/d"),
            Ok(StoreAddress::Postgres("postgres://u@h:5432/d"))
        );
        assert_eq!(
            parse("postgresql://h/d"),
            Ok(StoreAddress::Postgres("postgresql://h/d"))
        );
        assert_eq!(
            parse("postgres:host=h dbname=d"),
            Ok(StoreAddress::Postgres("host=h dbname=d"))
        );
    }

    #[test]
    fn bad_store_strings_name_the_scheme_but_not_the_rest() {
        let parse = StoreAddress::parse;
        let error = parse("mysql://root:secret@h/d").unwrap_err();
        assert_eq!(error, OpenError::UnknownScheme("mysql".into()));
        assert!(!error.to_string().contains("secret"), "{error}");
        assert_eq!(parse("orders.db"), Err(OpenError::NoScheme));
        assert_eq!(parse(":x"), Err(OpenError::NoScheme));
        assert_eq!(parse("sqlite:"), Err(OpenError::NoPath));
        assert_eq!(parse("postgres:h"), Err(OpenError::NoPairs));
    }

    /// The default timeout is added in the syntax of the string, and
    /// parses back as the timeout.
    #[cfg(feature = "postgres")]
    #[test]
    fn the_default_connect_timeout_fits_each_syntax() {
        use super::with_connect_timeout;
        use std::time::Duration;

        for (params, expected) in [
            ("postgres://u@h/d", "postgres://u@h/d?connect_timeout=10"),
            (
                "postgres://u@h/d?sslmode=disable",
                "postgres://u@h/d?sslmode=disable&connect_timeout=10",
            ),
            ("host=h dbname=d", "host=h dbname=d connect_timeout=10"),
        ] {
            let with = with_connect_timeout(params);
            assert_eq!(with, expected);
            let config: tokio_postgres::Config = with.parse().unwrap();
            assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(10)));
        }
    }

    /// A server that accepts the connection and then says nothing is an
    /// error once the string's `connect_timeout` passes, not a hang.
    #[cfg(feature = "postgres")]
    #[test]
    fn a_silent_server_is_an_error_after_the_connect_timeout() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Keep the accepted connection open and unanswered for longer than
        // the timeout; closing it sooner would end the attempt with a reset.
        let silent = std::thread::spawn(move || {
            let held = listener.accept();
            std::thread::sleep(std::time::Duration::from_secs(3));
            drop(held);
        });
        let text = format!("postgres://u@127.0.0.1:{port}/d?connect_timeout=1");
        let error = super::open(&text).unwrap_err();
        assert!(matches!(error, OpenError::Postgres(_)), "{error}");
        assert_eq!(
            error.to_string(),
            "cannot open the PostgreSQL store: no answer from the server within 1 s"
        );
        silent.join().unwrap();
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_build_without_postgres_refuses_postgres_stores() {
        let address = StoreAddress::parse("postgres://h/d").unwrap();
        assert!(matches!(
            address.open(&Default::default()),
            Err(OpenError::NoPostgresSupport)
        ));
    }
}
