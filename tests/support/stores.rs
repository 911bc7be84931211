//! Fresh stores for the tests that run the CLI or the library on one:
//! SQLite files in a scratch directory of the run, and PostgreSQL schemas
//! of the server `IDEMCHART_PG` names.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A unique name for a store of this test run. PostgreSQL cuts identifiers
/// at 63 bytes, so the scenario's name is cut first, keeping the part that
/// makes the name unique.
pub fn unique(name: &str) -> String {
    let short = &name[..name.len().min(32)];
    format!(
        "{short}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The run's scratch directory, made if missing.
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("idemchart-stores-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// A fresh SQLite store, as a `--store` string.
pub fn sqlite_store(name: &str) -> String {
    format!("sqlite:{}", scratch().join(unique(name) + ".db").display())
}

/// A fresh schema of the server `IDEMCHART_PG` names: the server's
/// connection string and the schema's name.
#[cfg(feature = "postgres")]
pub fn postgres_schema(name: &str) -> (String, String) {
    let base = std::env::var("IDEMCHART_PG")
        .expect("IDEMCHART_PG must name a PostgreSQL server (run scripts/start-postgres)");
    let schema = unique(name).to_lowercase();
    ::postgres::Client::connect(&base, ::postgres::NoTls)
        .expect("connect to PostgreSQL")
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("create schema");
    (base, schema)
}

/// A fresh schema of the server `IDEMCHART_PG` names, as a `--store` string.
#[cfg(feature = "postgres")]
pub fn postgres_store(name: &str) -> String {
    let (base, schema) = postgres_schema(name);
    format!("postgres:{base} options='-c search_path={schema}'")
}
