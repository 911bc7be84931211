//! How the contract reaches the runtime. A store's [`Api`] defaults to the
//! sync API (`idemchart::runtime`); the async backends override every method
//! with `runtime::nonblocking`, so that the same contract holds both APIs to
//! the same answers. The free functions have the sync API's signatures, so
//! the contract reads as a user of either would write it.

use std::sync::Arc;

use idemchart::expr::Event;
use idemchart::interp::Chart;
use idemchart::runtime::{
    self, Advanced, Dispatch, DispatchPolicy, DispatchReport, DueProcess, Moved, Outcome,
    ProcessMove, Purged, RuntimeError,
};
use idemchart::store::{OutboxItem, Store};

pub type Batch = Vec<Result<Outcome, RuntimeError>>;

/// The runtime's functions on one store.
pub trait Api: Store + Sized {
    fn apply_at(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        event: &Event,
        now: u64,
    ) -> Result<Outcome, RuntimeError> {
        runtime::apply_at(self, chart, process, event, now)
    }

    fn apply_batch_at(
        &mut self,
        chart: &Arc<Chart>,
        events: &[(String, Event)],
        now: u64,
    ) -> Result<Batch, RuntimeError> {
        runtime::apply_batch_at(self, chart, events, now)
    }

    fn advance(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        now: u64,
    ) -> Result<Advanced, RuntimeError> {
        runtime::advance(self, chart, process, now)
    }

    fn advance_due(
        &mut self,
        chart: &Arc<Chart>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<DueProcess>, RuntimeError> {
        runtime::advance_due(self, chart, now, limit)
    }

    fn dispatch(
        &mut self,
        chart: &Arc<Chart>,
        now: u64,
        policy: &DispatchPolicy,
        handler: &mut (dyn FnMut(&OutboxItem) -> Dispatch + Send),
    ) -> Result<DispatchReport, RuntimeError> {
        runtime::dispatch(self, chart, now, policy, handler)
    }

    fn inspect(&mut self, process: &str) -> Result<Option<serde_json::Value>, RuntimeError> {
        runtime::inspect(self, process)
    }

    fn purge(&mut self, chart: &Chart, now: u64) -> Result<Purged, RuntimeError> {
        runtime::purge(self, chart, now)
    }

    fn migrate_process(
        &mut self,
        chart: &Arc<Chart>,
        process: &str,
        dry_run: bool,
    ) -> Result<Option<ProcessMove>, RuntimeError> {
        runtime::migrate_process(self, chart, process, dry_run)
    }

    fn migrate_stored(
        &mut self,
        chart: &Arc<Chart>,
        dry_run: bool,
    ) -> Result<Vec<Moved>, RuntimeError> {
        let mut moved = Vec::new();
        runtime::migrate_stored(self, chart, dry_run, |m| moved.push(m))?;
        Ok(moved)
    }
}

pub fn apply_at<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    event: &Event,
    now: u64,
) -> Result<Outcome, RuntimeError> {
    store.apply_at(chart, process, event, now)
}

pub fn apply_batch_at<S: Api, P: AsRef<str>>(
    store: &mut S,
    chart: &Arc<Chart>,
    events: &[(P, Event)],
    now: u64,
) -> Result<Batch, RuntimeError> {
    let events: Vec<(String, Event)> = events
        .iter()
        .map(|(process, event)| (process.as_ref().to_string(), event.clone()))
        .collect();
    store.apply_batch_at(chart, &events, now)
}

pub fn advance<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    now: u64,
) -> Result<Advanced, RuntimeError> {
    store.advance(chart, process, now)
}

pub fn advance_due<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    now: u64,
    limit: usize,
) -> Result<Vec<DueProcess>, RuntimeError> {
    store.advance_due(chart, now, limit)
}

pub fn dispatch<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    now: u64,
    policy: &DispatchPolicy,
    mut handler: impl FnMut(&OutboxItem) -> Dispatch + Send,
) -> Result<DispatchReport, RuntimeError> {
    store.dispatch(chart, now, policy, &mut handler)
}

pub fn inspect<S: Api>(
    store: &mut S,
    process: &str,
) -> Result<Option<serde_json::Value>, RuntimeError> {
    store.inspect(process)
}

pub fn purge<S: Api>(store: &mut S, chart: &Chart, now: u64) -> Result<Purged, RuntimeError> {
    store.purge(chart, now)
}

pub fn migrate_process<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    process: &str,
    dry_run: bool,
) -> Result<Option<ProcessMove>, RuntimeError> {
    store.migrate_process(chart, process, dry_run)
}

pub fn migrate_stored<S: Api>(
    store: &mut S,
    chart: &Arc<Chart>,
    dry_run: bool,
) -> Result<Vec<Moved>, RuntimeError> {
    store.migrate_stored(chart, dry_run)
}
