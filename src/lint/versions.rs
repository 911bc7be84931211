//! What the breaking-change lints (M codes) share: the old machine with its
//! reachability (a `Cx`, whose search from the start gives each witness),
//! the new machine, the migration the new one declares from the old
//! version, and the list of changes that `idemchart diff` prints.
//!
//! A process stored under the old machine holds what a snapshot holds: its
//! configuration and history (state paths), its context (field names and
//! values), its pending timers (`after:PATH[i]`) and invocations; the
//! outbox holds its pending effects by name, and the dedup marks its
//! applied ids for `dedup.retention`. A change to one of these can break a
//! process that reached, before the deploy, a configuration in which it
//! holds the changed thing: that configuration is what a finding names, and
//! the shortest event path to it in the old machine is its witness.

use std::cell::OnceCell;

use super::{Cx, Lint, Stage};
use crate::diagnostic::{Diagnostic, Edit, Fix, Label};
use crate::expr::{Expr, Type};
use crate::model::{Action, Machine, Migration, StateId, StateKind};
use crate::span::{SourceFile, Span};
use crate::syntax::edit::Editor;

/// What the M lints read.
pub(crate) struct ChangeCx<'m> {
    /// The old machine, with its search from the start.
    pub old: Cx<'m>,
    pub new: &'m Machine,
    /// The migration the new machine declares from the old version: only
    /// it applies to the processes stored under the old machine.
    pub migration: Option<&'m Migration>,
    source: Option<&'m SourceFile>,
    editor: OnceCell<Option<Box<dyn Editor + 'm>>>,
    found: Vec<Diagnostic>,
}

impl<'m> ChangeCx<'m> {
    fn new(old: &'m Machine, new: &'m Machine, source: Option<&'m SourceFile>) -> ChangeCx<'m> {
        let migration = match (old.version, new.version) {
            (Some(from), Some(to)) if from != to => new.migration_from(from),
            _ => None,
        };
        ChangeCx {
            old: Cx::new(old, None),
            new,
            migration,
            source,
            editor: OnceCell::new(),
            found: Vec::new(),
        }
    }

    /// The editor of the new machine's file, when its text was given.
    pub fn editor(&self) -> Option<&dyn Editor> {
        self.editor
            .get_or_init(|| self.source.and_then(crate::fix::editor))
            .as_deref()
    }

    /// `version 1` as messages name a version; `no version` for none.
    pub fn version_name(version: Option<u64>) -> String {
        match version {
            Some(v) => format!("version {v}"),
            None => "no version".into(),
        }
    }

    /// The old version, as messages name it: `version 1`, or `version 1
    /// as it was` where the new machine kept the number.
    pub fn old_version(&self) -> String {
        let name = Self::version_name(self.old.machine.version);
        if self.old.machine.version == self.new.version {
            format!("{name} as it was")
        } else {
            name
        }
    }

    /// The new version, as messages name it: `version 2`, or `version 1
    /// as changed` where it kept the old number.
    pub fn new_version(&self) -> String {
        let name = Self::version_name(self.new.version);
        if self.old.machine.version == self.new.version {
            format!("{name} as changed")
        } else {
            name
        }
    }

    /// Whether a process of the old machine may be in `state`: some run
    /// from its start enters it.
    pub fn may_be_in(&self, state: StateId) -> bool {
        self.old.reachable(state)
    }

    /// The shortest event path in the old machine that makes `state`
    /// active, as witnesses are written; empty for the initial
    /// configuration, `None` where no run enters it or the path is too
    /// long to help.
    pub fn witness_to(&self, state: StateId) -> Option<Vec<String>> {
        let graph = &self.old.graph;
        let node = [graph.at(state), graph.enter(state)]
            .into_iter()
            .filter(|&n| self.old.reach.reached(n))
            .min_by_key(|n| self.old.reach.dist[n.index()])?;
        let steps = self.old.prefix(node)?;
        Some(super::witness::render_steps(graph, &steps))
    }

    /// The new machine's state that an old state becomes: the one the
    /// migration maps it to, else the state at the same path.
    pub fn counterpart(&self, old: StateId) -> Option<StateId> {
        let path = &self.old.machine.state(old).path;
        self.migration
            .and_then(|m| m.maps_state(self.new, path))
            .or_else(|| self.new.find_path(path))
            .filter(|&s| !matches!(self.new.state(s).kind, StateKind::History(_)))
    }

    pub fn report(&mut self, lint: Lint, finding: ChangeFinding) {
        self.found.push(Diagnostic {
            code: lint.code(),
            name: lint.name(),
            severity: lint.default_severity(),
            message: finding.message,
            span: finding.span,
            labels: finding.labels,
            help: finding.help,
            witness: finding.witness,
            verdict: None,
            replay: None,
            fix: finding.fix,
        });
    }

    /// The old states that the new machine has no place for: a process of
    /// the old machine may be in them, no state of the new machine has
    /// their path, and the migration maps neither them nor an ancestor.
    /// Only the outermost of a removed subtree is listed.
    pub fn stranded_states(&self) -> Vec<StateId> {
        let old = self.old.machine;
        old.state_ids()
            .filter(|&s| s != StateId::ROOT && !self.old.graph.is_history(s))
            .filter(|&s| self.may_be_in(s) && self.counterpart(s).is_none())
            .filter(|&s| {
                let parent = old.state(s).parent.unwrap_or(StateId::ROOT);
                parent == StateId::ROOT || self.counterpart(parent).is_some()
            })
            .collect()
    }

    /// The new states whose paths the old machine does not have, where an
    /// old state may have gone by another name.
    pub fn new_paths(&self) -> Vec<&'m str> {
        let new: &'m Machine = self.new;
        new.states
            .iter()
            .skip(1)
            .filter(|s| !matches!(s.kind, StateKind::History(_)))
            .filter(|s| self.old.machine.find_path(&s.path).is_none())
            .map(|s| s.path.as_str())
            .collect()
    }

    /// The one state of the new machine a stranded state was likely renamed
    /// to: the only new path close to its path or its key.
    pub fn renamed_to(&self, old: StateId) -> Option<&'m str> {
        let state = self.old.machine.state(old);
        let candidates = self.new_paths();
        crate::diagnostic::sole_close_name(&state.path, candidates.iter().copied()).or_else(|| {
            let keys = candidates
                .iter()
                .copied()
                .filter(|p| p.rsplit('.').next() != Some(p));
            let by_key: Vec<&str> = keys
                .filter(|p| {
                    let key = p.rsplit('.').next().unwrap_or(p);
                    strsim::jaro_winkler(&state.key, key) > 0.85
                })
                .collect();
            match by_key.as_slice() {
                [one] => Some(*one),
                _ => None,
            }
        })
    }

    /// The one fix that answers every break a migration can answer: a
    /// migration from the old version that maps each stranded state with
    /// one likely new name, with the version bumped when it was not. `None`
    /// where a stranded state has no likely new name (the mapping is the
    /// author's), the file declares migrations already, or the versions
    /// are unknown.
    pub fn migration_fix(&self) -> Option<Fix> {
        let from = self.old.machine.version?;
        if self.migration.is_some() {
            return None;
        }
        let mut states = Vec::new();
        for s in self.stranded_states() {
            let to = self.renamed_to(s)?;
            states.push((self.old.machine.state(s).path.clone(), to.to_string()));
        }
        let editor = self.editor()?;
        let mut edits: Vec<Edit> = Vec::new();
        let to = match self.new.version {
            Some(v) if v > from => v,
            _ => {
                edits.extend(editor.set_version(from + 1)?);
                from + 1
            }
        };
        edits.extend(editor.add_migration(from, &states, &[])?);
        let mapped: Vec<String> = states
            .iter()
            .map(|(a, b)| format!("`{a}` to `{b}`"))
            .collect();
        let mut message = format!("declare a migration from version {from} to {to}");
        if !mapped.is_empty() {
            message.push_str(&format!(" that maps {}", mapped.join(", ")));
        }
        // A migration changes what becomes of every stored process: the
        // author reviews the mapping before the deploy.
        Some(Fix::unsafe_edits(message, edits))
    }

    /// The help line for a break a migration answers; `entry` is what the
    /// migration says besides `from` (empty where `from` alone answers it).
    pub fn migration_help(&self, entry: &str) -> String {
        let entry = match entry {
            "" => String::new(),
            entry => format!(", {entry}"),
        };
        match self.old.machine.version {
            Some(from) => format!(
                "declare what becomes of the stored processes: `migrations: [{{ from: {from}{entry} }}]`"
            ),
            None => format!(
                "give both versions a `version`, then declare what becomes of the stored processes: `migrations: [{{ from: N{entry} }}]`"
            ),
        }
    }
}

/// A finding of an M lint, before its code and severity.
pub(crate) struct ChangeFinding {
    pub span: Span,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub witness: Vec<String>,
    pub fix: Option<Fix>,
}

/// The breaking-change findings of moving the processes of `old` to `new`,
/// at their lints' default severities, sorted by position; the positions
/// are in `new`'s file (`source`, which also gives the fixes, when given).
pub fn lint_change(old: &Machine, new: &Machine, source: Option<&SourceFile>) -> Vec<Diagnostic> {
    let mut cx = ChangeCx::new(old, new, source);
    for lint in Lint::ALL {
        if let Stage::Change(check) = lint.meta().stage {
            check(&mut cx);
        }
    }
    let mut found = cx.found;
    found.sort_by(|a, b| {
        (a.span.start, a.code, &a.message).cmp(&(b.span.start, b.code, &b.message))
    });
    found
}

/// The type of a context field as a snapshot holds it: that of its initial
/// value, where a `null` says nothing (a placeholder for a value to come).
pub fn field_type(value: &serde_json::Value) -> Option<Type> {
    match Type::of_json(value) {
        Type::Null => None,
        ty => Some(ty),
    }
}

/// Every expression of the machine: guards, the expressions of every
/// action, and invocation inputs.
pub fn expressions(machine: &Machine) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = machine
        .transitions
        .iter()
        .filter_map(|t| t.guard.as_ref())
        .collect();
    for action in machine.actions() {
        match action {
            Action::Assign { fields, .. } => out.extend(fields.values().map(|a| &a.expr)),
            Action::Raise { data, .. } | Action::Send { data, .. } => {
                out.extend(data.values().map(|a| &a.expr))
            }
            Action::Effect { args, .. } => out.extend(args.values().map(|a| &a.expr)),
            Action::Log { expr, .. } => out.push(expr),
            Action::Cancel { .. } | Action::Host { .. } => {}
        }
    }
    for state in &machine.states {
        for invocation in &state.invoke {
            out.extend(invocation.input.values().map(|a| &a.expr));
        }
    }
    out
}

/// One difference between two versions of a machine, as `idemchart diff`
/// prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `+` added, `-` removed, `~` changed.
    pub sign: char,
    /// What changed, for people: `state `paid``, `context `total`: int → string`.
    pub what: String,
    /// Whether a stored snapshot holds it (its configuration, history,
    /// context, timers, invocations, semantics): a change of shape, for
    /// which the version is bumped.
    pub shape: bool,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.sign, self.what)
    }
}

/// Every difference between `old` and `new` that the M lints read, in the
/// order of the file's sections: the version, semantics, context, dedup,
/// the history's `keep`, events' ids, effects, states (with their timers and invocations), and
/// the migrations declared.
pub fn changes(old: &Machine, new: &Machine) -> Vec<Change> {
    let mut out = Vec::new();
    let mut push = |sign: char, what: String, shape: bool| out.push(Change { sign, what, shape });
    if old.version != new.version {
        push(
            '~',
            format!(
                "version: {} → {}",
                ChangeCx::version_name(old.version),
                ChangeCx::version_name(new.version)
            ),
            false,
        );
    }
    if old.semantics != new.semantics {
        push(
            '~',
            format!("semantics: {} → {}", old.semantics, new.semantics),
            true,
        );
    }
    for (name, field) in &old.context {
        match new.context.get(name) {
            None => push('-', format!("context `{name}`"), true),
            Some(now) => {
                let (a, b) = (field_type(&field.value), field_type(&now.value));
                if let (Some(a), Some(b)) = (a, b)
                    && a != b
                {
                    push(
                        '~',
                        format!("context `{name}`: {} → {}", a.as_str(), b.as_str()),
                        true,
                    );
                }
            }
        }
    }
    for name in new.context.keys().filter(|n| !old.context.contains_key(*n)) {
        push('+', format!("context `{name}`"), true);
    }
    match (&old.dedup, &new.dedup) {
        (Some(a), Some(b)) if a.retention != b.retention => push(
            '~',
            format!("dedup.retention: {} → {}", a.retention, b.retention),
            false,
        ),
        (Some(a), None) => push('-', format!("dedup.retention {}", a.retention), false),
        (None, Some(b)) => push('+', format!("dedup.retention {}", b.retention), false),
        _ => {}
    }
    // Not a break (a payload is for the history, not the snapshot), but a
    // change of what the store keeps, which `diff` shows.
    match (&old.history, &new.history) {
        (Some(a), Some(b)) if a.keep != b.keep => {
            push('~', format!("history.keep: {} → {}", a.keep, b.keep), false)
        }
        (Some(a), None) => push('-', format!("history.keep {}", a.keep), false),
        (None, Some(b)) => push('+', format!("history.keep {}", b.keep), false),
        _ => {}
    }
    for (name, event) in &old.events {
        let Some(now) = new.events.get(name) else {
            continue;
        };
        let id = |e: &crate::model::EventDecl| {
            e.id_field
                .as_ref()
                .map_or_else(|| "no id".to_string(), |n| format!("`{}`", n.text))
        };
        if id(event) != id(now) {
            push(
                '~',
                format!("event `{name}` id: {} → {}", id(event), id(now)),
                false,
            );
        }
    }
    for name in old.effects.keys().filter(|n| !new.effects.contains_key(*n)) {
        push('-', format!("effect `{name}`"), false);
    }
    for name in new.effects.keys().filter(|n| !old.effects.contains_key(*n)) {
        push('+', format!("effect `{name}`"), false);
    }
    let kind = |m: &Machine, s: StateId| match m.state(s).kind {
        StateKind::Atomic | StateKind::Compound => "state",
        StateKind::Parallel => "parallel state",
        StateKind::Final => "final state",
        StateKind::History(_) => "history state",
    };
    for s in old.state_ids().skip(1) {
        let state = old.state(s);
        let Some(now) = new.find_path(&state.path) else {
            push('-', format!("{} `{}`", kind(old, s), state.path), true);
            continue;
        };
        if kind(old, s) != kind(new, now) {
            push(
                '~',
                format!("`{}`: {} → {}", state.path, kind(old, s), kind(new, now)),
                true,
            );
        }
        let timers = |m: &Machine, s: StateId| m.state(s).after.len();
        if timers(old, s) != timers(new, now) {
            push(
                '~',
                format!(
                    "`{}` timers: {} → {}",
                    state.path,
                    timers(old, s),
                    timers(new, now)
                ),
                true,
            );
        }
        let ids = |m: &Machine, s: StateId| -> Vec<String> {
            m.state(s)
                .invoke
                .iter()
                .map(|i| i.id.text.clone())
                .collect()
        };
        for id in ids(old, s).iter().filter(|i| !ids(new, now).contains(i)) {
            push('-', format!("invocation `{id}` of `{}`", state.path), true);
        }
        for id in ids(new, now).iter().filter(|i| !ids(old, s).contains(i)) {
            push('+', format!("invocation `{id}` of `{}`", state.path), true);
        }
    }
    for s in new.state_ids().skip(1) {
        let state = new.state(s);
        if old.find_path(&state.path).is_none() {
            push('+', format!("{} `{}`", kind(new, s), state.path), true);
        }
    }
    for m in &new.migrations {
        if old.migration_from(m.from).is_none() {
            push('+', format!("migration from version {}", m.from), false);
        }
    }
    // Transitions, guards and actions change what a process does next, not
    // what a stored one holds: they are counted, not listed one by one.
    let behaviour = |m: &Machine| {
        m.transitions
            .iter()
            .map(|t| {
                (
                    m.state(t.source).path.clone(),
                    t.trigger.to_string(),
                    t.targets
                        .iter()
                        .map(|x| m.state(x.state).path.clone())
                        .collect::<Vec<_>>(),
                    t.guard.as_ref().map(|g| g.to_string()),
                    t.actions.len(),
                )
            })
            .collect::<Vec<_>>()
    };
    if behaviour(old) != behaviour(new) {
        push(
            '~',
            "transitions (targets, guards or actions)".into(),
            false,
        );
    }
    out
}
