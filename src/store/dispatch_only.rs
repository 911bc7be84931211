//! A view of an async store whose outbox claims take the rows of some
//! effects (or invocation sources) of one machine's processes only, so that
//! a dispatcher serving those (the HTTP service, with an endpoint for each)
//! leaves every other row where it is for the host's own dispatcher: not
//! leased, not attempted, not counted.

use super::{
    AppliedEvent, AsyncStore, AttemptRecord, OutboxItem, OutboxStatus, ProcessRow, StoreError,
    StoreSecret, StoreStats,
};

/// `store`, where [`claim_due`](AsyncStore::claim_due) claims the rows of
/// `effects` of the processes of `machine` only. Everything else goes to
/// `store` as it is.
pub struct DispatchOnly<'s, S> {
    store: &'s S,
    machine: String,
    effects: Vec<String>,
}

impl<'s, S: AsyncStore> DispatchOnly<'s, S> {
    pub fn new(store: &'s S, machine: &str, effects: Vec<String>) -> DispatchOnly<'s, S> {
        DispatchOnly {
            store,
            machine: machine.to_string(),
            effects,
        }
    }
}

impl<S: AsyncStore> AsyncStore for DispatchOnly<'_, S> {
    type Transaction = S::Transaction;

    fn secret(&self) -> &StoreSecret {
        self.store.secret()
    }

    async fn begin(&self) -> Result<S::Transaction, StoreError> {
        self.store.begin().await
    }

    async fn commit(&self, tx: S::Transaction) -> Result<(), StoreError> {
        self.store.commit(tx).await
    }

    async fn rollback(&self, tx: S::Transaction) {
        self.store.rollback(tx).await
    }

    async fn process(&self, id: &str) -> Result<Option<ProcessRow>, StoreError> {
        self.store.process(id).await
    }

    async fn outbox(&self, status: Option<OutboxStatus>) -> Result<Vec<OutboxItem>, StoreError> {
        self.store.outbox(status).await
    }

    /// Both restrictions hold: nothing of another machine, and only the
    /// effects named in both (all of this view's when the caller names none,
    /// as the provided `claim_due` does).
    async fn claim_due_of(
        &self,
        now: u64,
        lease_ms: u64,
        limit: usize,
        machine: Option<&str>,
        effects: Option<&[String]>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let machine = machine.unwrap_or(&self.machine);
        let both: Vec<String> = self
            .effects
            .iter()
            .filter(|name| machine == self.machine && effects.is_none_or(|e| e.contains(name)))
            .cloned()
            .collect();
        self.store
            .claim_due_of(now, lease_ms, limit, Some(machine), Some(&both))
            .await
    }

    async fn finish_attempt(&self, attempt: &AttemptRecord<'_>) -> Result<(), StoreError> {
        self.store.finish_attempt(attempt).await
    }

    async fn due_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        now: u64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.store.due_processes(machine, version, now, limit).await
    }

    async fn stale_processes(
        &self,
        machine: &str,
        version: Option<u64>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.store
            .stale_processes(machine, version, after, limit)
            .await
    }

    async fn processes_of(
        &self,
        machine: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ProcessRow>, StoreError> {
        self.store.processes_of(machine, after, limit).await
    }

    async fn outbox_of(&self, process: &str) -> Result<Vec<OutboxItem>, StoreError> {
        self.store.outbox_of(process).await
    }

    async fn purge_applied(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.store.purge_applied(machine, before).await
    }

    async fn purge_payloads(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.store.purge_payloads(machine, before).await
    }

    async fn purge_outbox(&self, machine: &str, before: u64) -> Result<usize, StoreError> {
        self.store.purge_outbox(machine, before).await
    }

    async fn requeue_dead(&self, key: Option<&str>, now: u64) -> Result<usize, StoreError> {
        self.store.requeue_dead(key, now).await
    }

    async fn applied_count(&self, process: &str) -> Result<usize, StoreError> {
        self.store.applied_count(process).await
    }

    async fn applied_events(
        &self,
        process: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AppliedEvent>, StoreError> {
        self.store.applied_events(process, offset, limit).await
    }

    async fn stats(&self, now: u64) -> Result<StoreStats, StoreError> {
        self.store.stats(now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AsyncSqliteStore;

    fn row(key: &str, effect: &str) -> OutboxItem {
        OutboxItem {
            process: "p".into(),
            event_id: key.into(),
            position: 0,
            key: key.into(),
            effect: effect.into(),
            args: "{}".into(),
            status: OutboxStatus::Pending,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            invocation: None,
        }
    }

    /// Only the rows of the named effects of the machine's processes are
    /// claimed; the others stay pending and unleased, so the store's own
    /// claim still finds them.
    #[tokio::test]
    async fn claims_only_the_named_effects() {
        let store = AsyncSqliteStore::in_memory().await.unwrap();
        let mut tx = store.begin().await.unwrap();
        let process = ProcessRow {
            id: "p".into(),
            machine: "m".into(),
            version: None,
            snapshot: "{}".into(),
            revision: 1,
            next_timer_at: None,
        };
        crate::store::AsyncTransaction::insert_process(&mut tx, &process)
            .await
            .unwrap();
        for (key, effect) in [("k1", "mail"), ("k2", "charge"), ("k3", "mail")] {
            crate::store::AsyncTransaction::insert_outbox(&mut tx, &row(key, effect))
                .await
                .unwrap();
        }
        store.commit(tx).await.unwrap();
        let other = DispatchOnly::new(&store, "n", vec!["mail".into()]);
        assert!(other.claim_due(10, 1_000, 10).await.unwrap().is_empty());
        let only = DispatchOnly::new(&store, "m", vec!["mail".into()]);
        let keys = |items: Vec<OutboxItem>| -> Vec<String> {
            items.into_iter().map(|item| item.key).collect()
        };
        assert_eq!(
            keys(only.claim_due(10, 1_000, 10).await.unwrap()),
            ["k1", "k3"]
        );
        assert!(only.claim_due(10, 1_000, 10).await.unwrap().is_empty());
        assert_eq!(keys(store.claim_due(10, 1_000, 10).await.unwrap()), ["k2"]);
    }
}
