//! The service's own work: firing due timers and dispatching the outbox
//! rows of the effects the effects file names, in rounds every poll
//! interval until the service stops, and purging, every purge interval,
//! the marks and settled rows each machine's `dedup.retention` no longer
//! needs.
//!
//! Several instances on one PostgreSQL store may run these at once: a timer
//! fires under the revision check, so only one firing of it is written, and
//! an outbox row is leased by the claim (`FOR UPDATE SKIP LOCKED`), so only
//! one instance calls it at a time.

use std::sync::Arc;

use tokio::sync::watch;

use super::Service;
use crate::runtime::{self, nonblocking};
use crate::store::{AsyncStore, DispatchOnly};

/// Processes advanced per machine in one round.
const TIMER_BATCH: usize = 100;

pub(super) async fn run(service: Arc<Service>, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(service.options.poll_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first round purges too: a service restarted often would
    // otherwise never reach its first interval.
    let mut last_purge: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => return,
        }
        // A round is not cancelled midway: its transactions end before the
        // service stops.
        fire_timers(&service).await;
        dispatch_effects(&service).await;
        if last_purge.is_none_or(|at| at.elapsed() >= service.options.purge_interval) {
            purge(&service).await;
            last_purge = Some(tokio::time::Instant::now());
        }
        if *stop.borrow() {
            return;
        }
    }
}

async fn fire_timers(service: &Service) {
    for (machine, chart) in &service.charts {
        let now = runtime::now_millis();
        let due = match nonblocking::advance_due(&service.store, chart, now, TIMER_BATCH).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(%machine, error = %e, "cannot look for due timers");
                continue;
            }
        };
        for process in due {
            match process.result {
                Ok(advanced) => {
                    service.metrics.fired(advanced.fired.len());
                    for fired in &advanced.fired {
                        tracing::info!(%machine, process = %process.process, event_id = %fired.id, "timer fired");
                    }
                    if !advanced.fired.is_empty() {
                        service.changed(machine, &process.process);
                    }
                }
                Err(e) => {
                    tracing::warn!(%machine, process = %process.process, error = %e, "timer not fired")
                }
            }
        }
    }
}

/// Purges each machine's applied-event marks and settled outbox rows older
/// than its `dedup.retention` (a machine without one keeps everything), and
/// the payloads older than its `history.keep` (`runtime::purge`).
/// Several instances may purge at once: a row deleted twice is deleted once.
async fn purge(service: &Service) {
    for (machine, chart) in &service.charts {
        let machine_of = chart.machine();
        if machine_of.dedup.is_none() && machine_of.history.is_none() {
            continue;
        }
        match nonblocking::purge(&service.store, chart, runtime::now_millis()).await {
            Ok(purged) if purged.applied + purged.outbox + purged.payloads > 0 => {
                tracing::info!(%machine, applied = purged.applied, outbox = purged.outbox, payloads = purged.payloads, "purged")
            }
            Ok(_) => tracing::debug!(%machine, "nothing to purge"),
            Err(e) => tracing::warn!(%machine, error = %e, "cannot purge"),
        }
    }
}

async fn dispatch_effects(service: &Service) {
    for (machine, chart) in &service.charts {
        for (effect, endpoint) in service.options.effects.of(chart.machine()) {
            let only = DispatchOnly::new(&service.store, machine, vec![effect.to_string()]);
            let on_timeout = endpoint.on_timeout(chart.machine(), effect);
            let client = &service.client;
            let secret = service.store.secret();
            // The processes whose rows were called, told once the rows are
            // settled (after the dispatch's transactions).
            let called = std::sync::Mutex::new(std::collections::BTreeSet::new());
            let called = &called;
            let report = nonblocking::dispatch(
                &only,
                chart,
                runtime::now_millis(),
                &endpoint.policy(),
                |item| async move {
                    called
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(item.process.clone());
                    let answer = endpoint.call(client, secret, &item, on_timeout).await;
                    tracing::info!(%machine, process = %item.process, event_id = %item.event_id, key = %item.key, %effect, ?answer, "effect dispatched");
                    answer
                },
            )
            .await;
            for process in called.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                service.changed(machine, process);
            }
            match report {
                Ok(report) => service.metrics.dispatched(&report),
                Err(e) => tracing::warn!(%machine, %effect, error = %e, "cannot dispatch"),
            }
        }
    }
}
