//! `idemchart migrate`'s logic: every stored process of a machine at
//! another version, moved through the migration the machine declares from
//! that version (`migrate.rs`), one process per transaction.
//!
//! Each move writes the process row through the write `apply` uses, under
//! its revision check: a concurrent `apply` that wins makes the move start
//! over from what it wrote, where the process is usually current already
//! (the apply migrated it lazily) and is skipped. A process already at the
//! machine's version is skipped, so a second run changes nothing.

use std::sync::Arc;

use super::RuntimeError;
use super::driver::{self, Attempt, Driver, SyncDriver, Work};
use super::migrate::{self, Dropped, knows, needs_migration, timer_name};
use crate::interp::{Chart, Snapshot};
use crate::ready::finish;
use crate::store::{AsyncTransaction, OutboxItem, Store, StoreSecret};

/// How many ids `migrate_stored` reads from the store at a time.
const PAGE: usize = 100;

/// What became of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveStatus {
    Migrated,
    /// Already at the machine's version: nothing was written.
    Skipped,
    /// A dry run's answer: it would be migrated; nothing was written.
    WouldMigrate,
    /// It cannot be moved (no migration from its version, or the declared
    /// one fails on it); nothing was written.
    Error,
}

impl MoveStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MoveStatus::Migrated => "migrated",
            MoveStatus::Skipped => "skipped",
            MoveStatus::WouldMigrate => "would-migrate",
            MoveStatus::Error => "error",
        }
    }
}

/// What a process holds, as the report shows it before and after a move.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    pub configuration: Vec<String>,
    pub context: serde_json::Value,
    /// The pending timers, named as `Dropped` names them.
    pub timers: Vec<String>,
}

impl Held {
    fn of(snapshot: &Snapshot) -> Held {
        Held {
            configuration: snapshot.configuration.clone(),
            context: snapshot.context.to_json(),
            timers: snapshot.timers.iter().map(timer_name).collect(),
        }
    }
}

/// The report of one process's move.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessMove {
    pub process: String,
    /// The version the process was stored at.
    pub from: Option<u64>,
    /// The machine's version.
    pub to: Option<u64>,
    pub before: Held,
    /// What it holds after the move (or would, in a dry run); `None` when
    /// it cannot be moved.
    pub after: Option<Held>,
    /// What the move dropped; under `outbox: drop`, `dropped.outbox` holds
    /// the pending rows it cancelled (or would, in a dry run).
    pub dropped: Dropped,
    /// Pending outbox rows of an effect or invocation that the new machine
    /// neither declares nor performs, kept because the migration says
    /// `outbox: keep` (the default): named here for an operator, since a
    /// handler that dispatches by the new names may not know them.
    pub unknown_outbox: Vec<OutboxItem>,
    pub status: MoveStatus,
    /// The process row's revision after the move.
    pub revision: u64,
    /// Why it cannot be moved, for `MoveStatus::Error`: the message
    /// `RuntimeError::Migration` gives.
    pub error: Option<String>,
}

/// What one process's move gave: its report, or the error that kept it
/// from being read or written (a store failure, a corrupt row).
#[derive(Debug)]
pub struct Moved {
    pub process: String,
    pub result: Result<ProcessMove, RuntimeError>,
}

/// Moves `process` onto `chart`'s machine, or only says what the move
/// would do when `dry_run`. `None` when the store has no such process.
pub fn migrate_process<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    dry_run: bool,
) -> Result<Option<ProcessMove>, RuntimeError> {
    finish(migrate_process_with(
        &mut SyncDriver(store),
        chart,
        process,
        dry_run,
    ))
}

/// Moves every process of `chart`'s machine stored at another version, in
/// id order, each in its own transaction, handing each report to `report`
/// once its transaction has ended; one that cannot be moved is reported
/// and the others still are.
pub fn migrate_stored<S: Store>(
    store: &mut S,
    chart: &Arc<Chart>,
    dry_run: bool,
    report: impl FnMut(Moved),
) -> Result<(), RuntimeError> {
    finish(migrate_stored_with(
        &mut SyncDriver(store),
        chart,
        dry_run,
        report,
    ))
}

/// `migrate_process` through either driver: the one implementation of it.
pub(super) async fn migrate_process_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    process: &str,
    dry_run: bool,
) -> Result<Option<ProcessMove>, RuntimeError> {
    let mut work = MoveOne {
        chart,
        process,
        dry_run,
    };
    driver::with_retries(driver, &mut work).await
}

/// `migrate_stored` through either driver: the one implementation of it.
pub(super) async fn migrate_stored_with<D: Driver>(
    driver: &mut D,
    chart: &Arc<Chart>,
    dry_run: bool,
    mut report: impl FnMut(Moved),
) -> Result<(), RuntimeError> {
    let machine = chart.machine();
    let mut after: Option<String> = None;
    loop {
        let page = driver
            .stale_processes(&machine.name, machine.version, after.as_deref(), PAGE)
            .await?;
        let Some(last) = page.last().cloned() else {
            return Ok(());
        };
        for process in page {
            let result = match migrate_process_with(driver, chart, &process, dry_run).await {
                Ok(Some(moved)) => Ok(moved),
                // The id was listed a moment ago; a process deleted since
                // has nothing left to move.
                Ok(None) => continue,
                Err(e) => Err(e),
            };
            report(Moved { process, result });
        }
        after = Some(last);
    }
}

/// One process's move: its transaction's reads, decision and write.
struct MoveOne<'a> {
    chart: &'a Arc<Chart>,
    process: &'a str,
    dry_run: bool,
}

impl Work for MoveOne<'_> {
    type Output = Option<ProcessMove>;

    async fn run<T: AsyncTransaction>(
        &mut self,
        tx: &mut T,
        _secret: &StoreSecret,
    ) -> Result<Option<ProcessMove>, Attempt> {
        let (chart, process) = (self.chart, self.process);
        let machine = chart.machine();
        let Some(row) = tx.process(process).await? else {
            return Ok(None);
        };
        if row.machine != machine.name {
            return Err(RuntimeError::WrongMachine {
                process: process.to_string(),
                expected: machine.name.clone(),
                found: row.machine,
            }
            .into());
        }
        let snapshot: Snapshot = serde_json::from_str(&row.snapshot)
            .map_err(|e| RuntimeError::BadSnapshot(process.to_string(), e.to_string()))?;
        let before = Held::of(&snapshot);
        let mut report = ProcessMove {
            process: process.to_string(),
            from: snapshot.version,
            to: machine.version,
            before: before.clone(),
            after: None,
            dropped: Dropped::default(),
            unknown_outbox: Vec::new(),
            status: MoveStatus::Skipped,
            revision: row.revision,
            error: None,
        };
        if !needs_migration(chart, &snapshot) {
            report.after = Some(before);
            return Ok(Some(report));
        }
        let (actor, mut dropped, drop) = match migrate::migrate(chart, process, &snapshot) {
            Ok(moved) => moved,
            Err(e) => {
                report.status = MoveStatus::Error;
                report.error = Some(RuntimeError::Migration(e).to_string());
                return Ok(Some(report));
            }
        };
        report.after = Some(Held::of(&actor.snapshot()));
        for item in tx.pending_outbox(process).await? {
            match &drop {
                Some(drop) if drop.cancels(machine, &item) => dropped.outbox.push(item),
                _ if !knows(machine, &item) => report.unknown_outbox.push(item),
                _ => {}
            }
        }
        report.dropped = dropped;
        if self.dry_run {
            report.status = MoveStatus::WouldMigrate;
            return Ok(Some(report));
        }
        let written = tx
            .update_process(
                process,
                row.revision,
                &actor.snapshot_json(),
                actor.next_due(),
            )
            .await?;
        if !written {
            return Err(Attempt::Lost);
        }
        // In the transaction that wrote the snapshot: a crash or a lost
        // race leaves both the rows and the snapshot as they were.
        for item in &report.dropped.outbox {
            tx.cancel_outbox(&item.key).await?;
        }
        report.status = MoveStatus::Migrated;
        report.revision = row.revision + 1;
        Ok(Some(report))
    }

    fn contended(&self) -> String {
        self.process.to_string()
    }
}
