//! A declared migration applied to a stored snapshot: the one logic that
//! moves a process of an older version onto the machine's own.
//!
//! Every `from: N` entry of `migrations:` resolves its targets in the file
//! that declares it, so it maps version N straight to the machine's version.
//! A chain 1 → 2 → 3 is therefore what a store goes through across deploys
//! (the version-2 file moves 1 to 2, the version-3 file moves 2 to 3), and a
//! version-3 file that still declares `from: 1` moves a process of version 1
//! in one step. A version with no entry is refused, never guessed.

use std::sync::Arc;

use indexmap::IndexMap;

use crate::expr::{self, Layout, Value};
use crate::interp::{Actor, Chart, InvocationSnapshot, RestoreError, Snapshot, TimerSnapshot};
use crate::model::{Action, Carry, Machine, Migration};
use crate::store::OutboxItem;

/// Why a snapshot cannot be moved onto the machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MigrationError {
    #[error(
        "process {process} runs version {found}; machine {machine} is version {expected} and declares no migration from {found}"
    )]
    NoPath {
        process: String,
        machine: String,
        expected: String,
        found: String,
    },
    #[error(
        "process {process}: the migration from version {from} cannot place state `{state}`: {reason}"
    )]
    State {
        process: String,
        from: u64,
        state: String,
        reason: String,
    },
    #[error(
        "process {process}: the migration from version {from} cannot compute `{field}`: {reason}"
    )]
    Context {
        process: String,
        from: u64,
        field: String,
        reason: String,
    },
    #[error("process {process}: the migrated snapshot does not restore: {source}")]
    Restore {
        process: String,
        #[source]
        source: RestoreError,
    },
}

/// A snapshot moved onto the machine, and what the move left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Migrated {
    pub snapshot: Snapshot,
    /// What was dropped, one entry a thing (`timer after:a[0]`,
    /// `history h`, `invocation i of a`), for the report. The outbox rows an
    /// `outbox: drop` cancels are in the store, not the snapshot: the
    /// runtime cancels them where it writes the move.
    pub dropped: Vec<String>,
}

/// What a move dropped, by kind: the pending timers (`after:a[0]`,
/// `send E`), the history states whose recorded values went, the
/// invocations in flight an `outbox: drop` let go, and the outbox rows it
/// cancelled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dropped {
    pub timers: Vec<String>,
    pub history: Vec<String>,
    /// Invocations in flight whose state (as mapped) no longer invokes
    /// them, dropped under `outbox: drop`; without it they fail the restore.
    pub invocations: Vec<InvocationSnapshot>,
    /// The pending outbox rows cancelled under `outbox: drop`. Only a move
    /// that reads the store fills it (`migrate_stored`); the snapshot alone
    /// does not name them.
    pub outbox: Vec<OutboxItem>,
}

impl Dropped {
    /// One entry a thing, as [`Migrated::dropped`] lists them.
    fn listed(self) -> Vec<String> {
        let timers = self.timers.into_iter().map(|t| format!("timer {t}"));
        let history = self.history.into_iter().map(|h| format!("history {h}"));
        let invocations = self
            .invocations
            .into_iter()
            .map(|i| format!("invocation {} of {}", i.id, i.state));
        timers.chain(history).chain(invocations).collect()
    }
}

/// The outbox rows a move under `outbox: drop` cancels, decided from the
/// snapshot: the rows themselves are read in the transaction that writes
/// the move, so that the cancel and the snapshot are committed together.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxDrop {
    pub process: String,
    /// The keys of the invocations in flight the move dropped.
    pub invocations: Vec<String>,
}

impl OutboxDrop {
    fn of(process: &str, migration: &Migration, dropped: &Dropped) -> Option<OutboxDrop> {
        (migration.outbox == Some(Carry::Drop)).then(|| OutboxDrop {
            process: process.to_string(),
            invocations: dropped
                .invocations
                .iter()
                .filter_map(|i| i.key.clone())
                .collect(),
        })
    }

    /// Whether the pending row `item` of the process is cancelled: it is
    /// of an effect or invocation `machine` does not know, or of an
    /// invocation in flight the move dropped. A row of what the machine
    /// still performs is never touched.
    pub fn cancels(&self, machine: &Machine, item: &OutboxItem) -> bool {
        !knows(machine, item) || self.invocations.contains(&item.key)
    }
}

/// Whether `machine` knows what the outbox row `item` performs: an
/// invocation some state of it invokes under the row's id and source, or
/// an effect it declares or an action of it performs.
pub(super) fn knows(machine: &Machine, item: &OutboxItem) -> bool {
    match &item.invocation {
        Some(id) => machine
            .states
            .iter()
            .flat_map(|s| &s.invoke)
            .any(|i| i.id.text == *id && i.src.text == item.effect),
        None => {
            machine.effects.contains_key(&item.effect)
                || machine.actions().any(|a| match a {
                    Action::Effect { name, .. } | Action::Host { name, .. } => {
                        name.text == item.effect
                    }
                    _ => false,
                })
        }
    }
}

/// Whether the state at `invocation.state` of `machine` invokes its id.
fn invokes(machine: &Machine, invocation: &InvocationSnapshot) -> bool {
    machine.find_path(&invocation.state).is_some_and(|s| {
        machine
            .state(s)
            .invoke
            .iter()
            .any(|i| i.id.text == invocation.id)
    })
}

/// Whether `snapshot` needs moving onto `chart`'s machine: it names another
/// version. Semantics are part of the version (M007), so they are not
/// compared here.
pub fn needs_migration(chart: &Chart, snapshot: &Snapshot) -> bool {
    snapshot.version != chart.machine().version
}

/// Moves `snapshot` of `process` onto `chart`'s machine through the
/// migration it declares from the snapshot's version, and checks that the
/// result restores. A snapshot already at the machine's version is given
/// back unchanged.
pub fn migrate_snapshot(
    chart: &Arc<Chart>,
    process: &str,
    snapshot: &Snapshot,
) -> Result<Migrated, MigrationError> {
    if !needs_migration(chart, snapshot) {
        return Ok(Migrated {
            snapshot: snapshot.clone(),
            dropped: Vec::new(),
        });
    }
    let (actor, dropped, _) = migrate(chart, process, snapshot)?;
    Ok(Migrated {
        snapshot: actor.snapshot(),
        dropped: dropped.listed(),
    })
}

/// The actor that continues `snapshot` of `process`, of another version
/// than `chart`'s machine, moved through the migration declared from it:
/// what `apply` continues, restored once; with the outbox rows the write
/// of the move must cancel, under `outbox: drop`.
pub fn migrate_actor(
    chart: &Arc<Chart>,
    process: &str,
    snapshot: &Snapshot,
) -> Result<(Actor, Option<OutboxDrop>), MigrationError> {
    migrate(chart, process, snapshot).map(|(actor, _, drop)| (actor, drop))
}

/// The moved actor, what the move dropped, and what its write cancels in
/// the outbox. `snapshot` must be of another version than the machine's
/// ([`needs_migration`]).
pub(super) fn migrate(
    chart: &Arc<Chart>,
    process: &str,
    snapshot: &Snapshot,
) -> Result<(Actor, Dropped, Option<OutboxDrop>), MigrationError> {
    let machine = chart.machine();
    let shown = |v: Option<u64>| v.map_or_else(|| "none".to_string(), |v| v.to_string());
    let no_path = || MigrationError::NoPath {
        process: process.to_string(),
        machine: machine.name.clone(),
        expected: shown(machine.version),
        found: shown(snapshot.version),
    };
    let (Some(from), Some(to)) = (snapshot.version, machine.version) else {
        return Err(no_path());
    };
    if from >= to {
        return Err(no_path());
    }
    let migration = machine.migration_from(from).ok_or_else(no_path)?;
    let mut dropped = Dropped::default();
    let place = |path: &str| place(machine, migration, process, path);
    let configuration = snapshot
        .configuration
        .iter()
        .map(|p| place(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = std::collections::HashSet::new();
    let configuration = configuration
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect();
    let history = match migration.history.unwrap_or(Carry::Keep) {
        Carry::Keep => snapshot
            .history
            .iter()
            .map(|(h, paths)| {
                let paths = paths.iter().map(|p| place(p)).collect::<Result<_, _>>()?;
                Ok((place(h)?, paths))
            })
            .collect::<Result<IndexMap<_, _>, MigrationError>>()?,
        Carry::Drop => {
            dropped.history.extend(snapshot.history.keys().cloned());
            IndexMap::new()
        }
    };
    let timers = match migration.timers.unwrap_or(Carry::Keep) {
        Carry::Keep => snapshot
            .timers
            .iter()
            .map(|t| match t {
                TimerSnapshot::After {
                    state,
                    after,
                    due,
                    seq,
                } => Ok(TimerSnapshot::After {
                    state: place(state)?,
                    after: *after,
                    due: *due,
                    seq: *seq,
                }),
                other => Ok(other.clone()),
            })
            .collect::<Result<_, MigrationError>>()?,
        Carry::Drop => {
            dropped
                .timers
                .extend(snapshot.timers.iter().map(timer_name));
            Vec::new()
        }
    };
    let context = migrate_context(machine, migration, process, &snapshot.context)?;
    // Invocations in flight move with their state. One whose state the new
    // machine does not invoke it in fails the restore below, by name,
    // unless `outbox: drop` lets it go with its outbox row.
    let drop_outbox = migration.outbox == Some(Carry::Drop);
    let mut invocations = Vec::new();
    for invocation in &snapshot.invocations {
        let mut invocation = invocation.clone();
        invocation.state = place(&invocation.state)?;
        if drop_outbox && !invokes(machine, &invocation) {
            dropped.invocations.push(invocation);
        } else {
            invocations.push(invocation);
        }
    }
    let moved = Snapshot {
        format: snapshot.format,
        machine: snapshot.machine.clone(),
        version: machine.version,
        status: snapshot.status,
        configuration,
        history,
        context,
        timers,
        invocations,
        now: snapshot.now,
        semantics: machine.semantics,
    };
    // The restore checks every state, timer and invocation the result names,
    // and gives the snapshot in the machine's own order.
    let actor = Actor::restore_migrating(Arc::clone(chart), &moved).map_err(|source| {
        MigrationError::Restore {
            process: process.to_string(),
            source,
        }
    })?;
    let drop = OutboxDrop::of(process, migration, &dropped);
    Ok((actor, dropped, drop))
}

/// The path of the new machine an old state path becomes: the mapped state
/// (or the mapped ancestor's descendant), else the same path where the new
/// machine has it.
pub(super) fn place(
    machine: &Machine,
    migration: &Migration,
    process: &str,
    path: &str,
) -> Result<String, MigrationError> {
    let state = migration
        .maps_state(machine, path)
        .or_else(|| machine.find_path(path))
        .ok_or_else(|| MigrationError::State {
            process: process.to_string(),
            from: migration.from,
            state: path.to_string(),
            reason: "it is not mapped and the machine has no state at that path".into(),
        })?;
    Ok(machine.state(state).path.clone())
}

/// The new context: each field the migration computes, from the old
/// context; each other field the old context holds, as it was; each new
/// one, its initial value.
pub(super) fn migrate_context(
    machine: &Machine,
    migration: &Migration,
    process: &str,
    old: &Value,
) -> Result<Value, MigrationError> {
    let failed = |field: &str, reason: String| MigrationError::Context {
        process: process.to_string(),
        from: migration.from,
        field: field.to_string(),
        reason,
    };
    let entries = old
        .as_map()
        .ok_or_else(|| failed("context", format!("it is {}", old.described())))?;
    let layout = Layout::new(entries.keys().map(|k| k.as_ref()));
    let slots: Vec<Value> = entries.values().cloned().collect();
    let mut new = expr::Map::new();
    for (name, field) in &machine.context {
        let value = match migration.context.get(name) {
            Some(assignment) => {
                let compiled = expr::compile(&assignment.expr, &layout, &|_| None);
                expr::eval(&compiled, &slots, None, &|_| false)
                    .map_err(|e| failed(name, e.to_string()))?
            }
            None => match expr::map_get(entries, name) {
                Some(value) => value.clone(),
                None => Value::from(&field.value),
            },
        };
        new.insert(Arc::from(name.as_str()), value);
    }
    Ok(Value::Map(Arc::new(new)))
}

/// A pending timer as the reports name it: `after:STATE[i]`, `send E`.
pub(super) fn timer_name(timer: &TimerSnapshot) -> String {
    match timer {
        TimerSnapshot::After { state, after, .. } => format!("after:{state}[{after}]"),
        TimerSnapshot::Send { event, .. } => format!("send {event}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(text: &str) -> Arc<Chart> {
        let machine = crate::syntax::parse(text, crate::syntax::Syntax::Yaml).unwrap();
        Arc::new(Chart::builder(machine).build().unwrap())
    }

    const V1: &str = "machine: order\nversion: 1\ncontext: { total: 5 }\ninitial: awaiting_payment\nstates:\n  awaiting_payment:\n    after: { 24h: expired }\n    on: { PAY: paid }\n  paid: {}\n  expired: {}\n";

    fn v2(extra: &str) -> String {
        format!(
            "machine: order\nversion: 2\ncontext: {{ total: 0, cents: 0 }}\nmigrations:\n  - from: 1\n    states: {{ awaiting_payment: awaiting_pay }}\n    context: {{ total: \"context.total + 1\", cents: \"context.total * 100\" }}\n{extra}initial: awaiting_pay\nstates:\n  awaiting_pay:\n    after: {{ 24h: expired }}\n    on: {{ PAY: paid }}\n  paid: {{}}\n  expired: {{}}\n"
        )
    }

    fn started(chart: &Arc<Chart>) -> Snapshot {
        Actor::new(Arc::clone(chart)).snapshot()
    }

    /// A renamed state with a pending timer moves with its timer, and the
    /// context is computed from the old one; the result is what the new
    /// machine gives for the same (no) events, up to the context mapping.
    #[test]
    fn a_renamed_state_moves_with_its_timer_and_context() {
        let (old, new) = (chart(V1), chart(&v2("")));
        let before = started(&old);
        let after = migrate_snapshot(&new, "o-1", &before).unwrap();
        assert_eq!(after.snapshot.version, Some(2));
        assert_eq!(after.snapshot.configuration, vec!["awaiting_pay"]);
        assert_eq!(after.snapshot.timers.len(), 1);
        assert_eq!(
            crate::expr::json::to_text(&after.snapshot.context),
            r#"{"total":6,"cents":500}"#
        );
        assert!(after.dropped.is_empty());
        let fresh = started(&new);
        assert_eq!(after.snapshot.timers, fresh.timers);
        // Idempotent: a migrated snapshot is current and is left alone.
        assert_eq!(
            migrate_snapshot(&new, "o-1", &after.snapshot)
                .unwrap()
                .snapshot,
            after.snapshot
        );
    }

    #[test]
    fn timers_drop_is_reported() {
        let (old, new) = (chart(V1), chart(&v2("    timers: drop\n")));
        let after = migrate_snapshot(&new, "o-1", &started(&old)).unwrap();
        assert!(after.snapshot.timers.is_empty());
        assert_eq!(after.dropped, vec!["timer after:awaiting_payment[0]"]);
    }

    const INVOKING_V1: &str = "machine: order\nversion: 1\ninitial: a\nstates:\n  a:\n    invoke: { src: checker, id: check }\n    on: { GO: b }\n  b: {}\n";

    /// An invocation in flight that the new state no longer invokes fails
    /// the move under `outbox: keep` (the default), and is let go, named,
    /// under `outbox: drop`, with its key for the cancel of its row.
    #[test]
    fn outbox_drop_lets_go_of_an_invocation_the_new_state_lacks() {
        let old = chart(INVOKING_V1);
        let mut actor = Actor::new(Arc::clone(&old));
        actor.bind_invocation_keys(|_| "k-check".to_string());
        let before = actor.snapshot();
        assert_eq!(before.invocations.len(), 1);
        let v2 = |entry: &str| {
            format!(
                "machine: order\nversion: 2\nmigrations: [{{ from: 1{entry} }}]\ninitial: a\nstates:\n  a:\n    invoke: {{ src: checker, id: verify }}\n    on: {{ GO: b }}\n  b: {{}}\n"
            )
        };
        let kept = migrate(&chart(&v2("")), "o-1", &before).unwrap_err();
        assert!(matches!(kept, MigrationError::Restore { .. }), "{kept}");
        let (actor, dropped, drop) =
            migrate(&chart(&v2(", outbox: drop")), "o-1", &before).unwrap();
        assert!(actor.snapshot().invocations.is_empty());
        assert_eq!(dropped.clone().listed(), vec!["invocation check of a"]);
        let drop = drop.expect("outbox: drop");
        assert_eq!(drop.invocations, vec!["k-check"]);
        // Under `keep` written out, nothing is cancelled.
        let unchanged = chart(&v2(", outbox: keep").replace("verify", "check"));
        assert!(migrate(&unchanged, "o-1", &before).unwrap().2.is_none());
    }

    /// A row is cancelled when the machine lacks its effect or invocation,
    /// or when its invocation was let go; a row of what the machine still
    /// performs never is.
    #[test]
    fn outbox_drop_cancels_only_what_the_machine_lacks() {
        let machine = chart(
            "machine: m\nversion: 2\neffects: { ship: {} }\ninitial: a\nstates:\n  a:\n    entry: [ship, notify]\n    invoke: { src: checker, id: check }\n",
        );
        let machine = machine.machine();
        let row = |effect: &str, invocation: Option<&str>, key: &str| OutboxItem {
            process: "p".into(),
            event_id: "e".into(),
            position: 0,
            key: key.into(),
            effect: effect.into(),
            args: "null".into(),
            status: crate::store::OutboxStatus::Pending,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            invocation: invocation.map(str::to_string),
        };
        let drop = OutboxDrop {
            process: "p".into(),
            invocations: vec!["k-gone".into()],
        };
        let cancelled = |item: OutboxItem| drop.cancels(machine, &item);
        assert!(!cancelled(row("ship", None, "k1")));
        assert!(!cancelled(row("notify", None, "k2")), "a host action");
        assert!(!cancelled(row("checker", Some("check"), "k3")));
        assert!(cancelled(row("remind", None, "k4")));
        assert!(cancelled(row("checker", Some("verify"), "k5")));
        assert!(
            cancelled(row("charger", Some("check"), "k6")),
            "another source"
        );
        assert!(cancelled(row("checker", Some("check"), "k-gone")));
    }

    #[test]
    fn a_version_without_a_migration_is_refused_by_name() {
        let new = chart(
            &v2("")
                .replace("version: 2", "version: 3")
                .replace("from: 1", "from: 2"),
        );
        let error = migrate_snapshot(&new, "o-1", &started(&chart(V1))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "process o-1 runs version 1; machine order is version 3 and declares no migration from 1"
        );
    }

    #[test]
    fn a_failing_expression_is_an_error_naming_the_field() {
        let text = v2("").replace("context.total * 100", "context.total / 0");
        let error = migrate_snapshot(&chart(&text), "o-1", &started(&chart(V1))).unwrap_err();
        assert!(
            matches!(error, MigrationError::Context { ref field, .. } if field == "cents"),
            "{error}"
        );
    }
}
