//! Document tree → model: resolves names, parses expressions, and reports every
//! problem of the file at once.

use indexmap::IndexMap;

use super::tree::{
    ActionDoc, ExprText, InvokeDoc, MachineDoc, MigrationDoc, StateDoc, TransitionDoc,
};
use crate::diagnostic::{Diagnostic, Label, LoadError, sole_close_name};
use crate::diagnostic::{Edit, Fix};
use crate::expr::{self, Expr, Scope, Type};
use crate::model::{
    Action, Allow, Assignment, Carry, Completion, ContextField, Dedup, Duration, EffectDecl,
    EventDecl, EventDescriptor, EventPattern, HistoryKeep, HistoryKind, Idempotency, Invocation,
    Limits, Machine, Migration, MigrationTarget, Name, PayloadField, PayloadType, Semantics,
    Source, State, StateId, StateKind, Target, Transition, TransitionId, Trigger, is_event_name,
};
use crate::span::Span;

/// Lowers a document into a model, or returns every problem found in it.
pub fn lower(doc: MachineDoc) -> Result<Machine, Vec<Diagnostic>> {
    let mut cx = Lowering::default();
    let mut machine = cx.machine(doc);
    if cx.errors.is_empty() {
        machine.shrink_to_fit();
        Ok(machine)
    } else {
        cx.errors.sort_by_key(|d| d.span.start);
        Err(cx.errors)
    }
}

#[derive(Default)]
struct Lowering {
    errors: Vec<Diagnostic>,
    /// State ids seen so far, to find a second definition without a scan.
    ids: std::collections::HashMap<String, StateId>,
    /// Targets to resolve once every state exists: (transition or state, index, raw names).
    pending: Vec<Pending>,
    /// Each distinct expression text parsed at offset 0: machines repeat
    /// theirs (`context.n + event.amount` on many transitions), and the
    /// grammar costs more than a copy of the tree.
    parsed: std::collections::HashMap<String, Result<Expr, expr::ExprError>>,
}

enum Pending {
    Transition(TransitionId, Vec<Name>),
    Initial(StateId, Vec<Name>),
    HistoryDefault(StateId, Vec<Name>),
    Verify(String, Name),
}

impl Lowering {
    fn error(&mut self, error: LoadError, span: Span) {
        self.errors.push(error.at(span, []));
    }

    fn error_suggesting<'a>(
        &mut self,
        error: LoadError,
        span: Span,
        candidates: impl IntoIterator<Item = &'a str>,
    ) {
        self.errors.push(error.at(span, candidates));
    }

    fn duration(&mut self, name: &Name) -> Option<Duration> {
        let duration = Duration::parse(&name.text);
        if duration.is_none() {
            self.error(
                LoadError::InvalidDuration {
                    text: name.text.clone(),
                },
                name.span,
            );
        }
        duration
    }

    /// Reports a second definition of the same name.
    fn unique<'a>(&mut self, names: impl IntoIterator<Item = &'a Name>) {
        let mut seen: IndexMap<&str, Span> = IndexMap::new();
        for name in names {
            if let Some(first) = seen.get(name.text.as_str()) {
                self.error(
                    LoadError::Duplicate {
                        key: name.text.clone(),
                        first: *first,
                    },
                    name.span,
                );
            } else {
                seen.insert(&name.text, name.span);
            }
        }
    }

    /// The value of a word from a fixed list, or an error with a suggestion.
    fn word<T: Copy>(
        &mut self,
        kind: &'static str,
        name: &Name,
        words: &[(&'static str, T)],
    ) -> Option<T> {
        let found = words.iter().find(|(w, _)| *w == name.text).map(|(_, v)| *v);
        if found.is_none() {
            let mut diagnostic = LoadError::UnknownReference {
                kind,
                name: name.text.clone(),
            }
            .at(name.span, words.iter().map(|(w, _)| *w));
            // The words are few and fixed: with no near one to suggest, list them.
            if diagnostic.help.is_none() {
                let list: Vec<String> = words.iter().map(|(w, _)| format!("`{w}`")).collect();
                diagnostic.help = Some(format!("write one of {}", list.join(", ")));
            }
            self.errors.push(diagnostic);
        }
        found
    }

    fn machine(&mut self, doc: MachineDoc) -> Machine {
        let name = match doc.name {
            Some(name) => name,
            None => {
                self.error(
                    LoadError::InvalidValue {
                        message: "missing `machine`: every machine file starts with its name"
                            .into(),
                    },
                    Span::default(),
                );
                Name::default()
            }
        };

        self.unique(doc.context.iter().map(|c| &c.name));
        let context: IndexMap<String, ContextField> = doc
            .context
            .into_iter()
            .map(|c| {
                (
                    c.name.text,
                    ContextField {
                        value: c.value,
                        span: c.name.span,
                    },
                )
            })
            .collect();

        self.unique(doc.sources.iter().map(|s| &s.name));
        let mut sources = IndexMap::new();
        for source in doc.sources {
            let retry_horizon = source.retry_horizon.as_ref().and_then(|d| self.duration(d));
            sources.insert(
                source.name.text,
                Source {
                    retry_horizon,
                    description: source.description,
                    span: source.name.span,
                },
            );
        }

        let history = doc.history.and_then(|history| match &history.keep {
            Some(text) => self.duration(text).map(|keep| HistoryKeep {
                keep,
                span: text.span,
            }),
            None => {
                self.error(
                    LoadError::InvalidValue {
                        message: "`history` needs a `keep`".into(),
                    },
                    history.span,
                );
                None
            }
        });

        let dedup = doc.dedup.and_then(|dedup| match &dedup.retention {
            Some(text) => self.duration(text).map(|retention| Dedup {
                retention,
                span: text.span,
            }),
            None => {
                self.error(
                    LoadError::InvalidValue {
                        message: "`dedup` needs a `retention`".into(),
                    },
                    dedup.span,
                );
                None
            }
        });

        let limits = doc.limits.and_then(|limits| match limits.microsteps {
            Some((microsteps, span)) if microsteps > 0 => Some(Limits { microsteps, span }),
            Some((_, span)) => {
                self.error(
                    LoadError::InvalidValue {
                        message: "`limits.microsteps` must be at least 1".into(),
                    },
                    span,
                );
                None
            }
            None => {
                self.error(
                    LoadError::InvalidValue {
                        message: "`limits` needs `microsteps`".into(),
                    },
                    limits.span,
                );
                None
            }
        });

        self.unique(doc.events.iter().map(|e| &e.name));
        let mut events = IndexMap::new();
        for event in doc.events {
            if let Some(source) = &event.source
                && !sources.contains_key(&source.text)
            {
                self.error_suggesting(
                    LoadError::UnknownReference {
                        kind: "source",
                        name: source.text.clone(),
                    },
                    source.span,
                    sources.keys().map(String::as_str),
                );
            }
            let payload = event.payload.map(|fields| {
                self.unique(fields.iter().map(|(f, _)| f));
                let mut payload = IndexMap::new();
                for (field, ty) in fields {
                    let ty = self
                        .word("payload type", &ty, &PayloadType::ALL)
                        .unwrap_or(PayloadType::Any);
                    payload.insert(
                        field.text,
                        PayloadField {
                            ty,
                            span: field.span,
                        },
                    );
                }
                payload
            });
            if let (Some(id), Some(payload)) = (&event.id_field, &payload)
                && !payload.contains_key(&id.text)
            {
                self.error(
                    LoadError::InvalidValue {
                        message: format!(
                            "the id field `{}` is not in the payload of `{}`",
                            id.text, event.name.text
                        ),
                    },
                    id.span,
                );
            }
            events.insert(
                event.name.text,
                EventDecl {
                    id_field: event.id_field,
                    source: event.source,
                    payload,
                    description: event.description,
                    span: event.name.span,
                },
            );
        }

        self.unique(doc.effects.iter().map(|e| &e.name));
        let mut effects = IndexMap::new();
        for effect in doc.effects {
            let idempotency = match &effect.idempotency {
                Some(word) => self
                    .word("idempotency", word, &Idempotency::ALL)
                    .unwrap_or(Idempotency::None),
                None => Idempotency::None,
            };
            if let Some(verify) = effect.verify {
                self.pending
                    .push(Pending::Verify(effect.name.text.clone(), verify));
            }
            effects.insert(
                effect.name.text,
                EffectDecl {
                    idempotency,
                    verify: None,
                    description: effect.description,
                    span: effect.name.span,
                },
            );
        }

        self.unique(doc.guards.iter());
        let mut guards: Vec<Name> = Vec::new();
        for guard in doc.guards {
            if let Some(message) = guard_name_problem(&guard.text) {
                self.error(LoadError::InvalidValue { message }, guard.span);
            }
            if !guards.iter().any(|g| g.text == guard.text) {
                guards.push(guard);
            }
        }

        let semantics = match &doc.semantics {
            None => Semantics::default(),
            Some(written) => Semantics::from_name(&written.text).unwrap_or_else(|| {
                self.error(
                    LoadError::InvalidValue {
                        message: format!(
                            "unknown semantics `{}`: write `scxml` or `xstate`",
                            written.text
                        ),
                    },
                    written.span,
                );
                Semantics::default()
            }),
        };

        let mut machine = Machine {
            name: name.text,
            version: doc.version.map(|(v, _)| v),
            description: doc.description,
            semantics,
            fact_source: doc.fact_source,
            context,
            sources,
            dedup,
            history,
            limits,
            events,
            effects,
            guards,
            opaque: doc.opaque,
            stand_ins: doc.stand_ins,
            migrations: Vec::new(),
            states: Vec::new(),
            transitions: Vec::new(),
            span: name.span,
        };

        let mut root = doc.root;
        root.key = Name {
            text: machine.name.clone(),
            span: machine.span,
        };
        self.state(&mut machine, root, None, String::new());
        self.resolve(&mut machine);
        self.check_expressions(&machine);
        let version = doc.version;
        for doc in doc.migrations {
            if let Some(migration) = self.migration(&machine, version, doc) {
                machine.migrations.push(migration);
            }
        }
        machine
    }

    /// One `migrations:` entry, checked as far as it can be without the old
    /// machine: `from` is below `version`, and once only; every target is a
    /// state of this machine that can be active; every field is one of this
    /// context; every expression parses and reads nothing but the context
    /// (a migration runs on a snapshot, with no event). That the old paths
    /// exist and the expressions type-check against the old context is
    /// checked by `lint --baseline` (M009), which has the old machine.
    fn migration(
        &mut self,
        machine: &Machine,
        version: Option<(u64, Span)>,
        doc: MigrationDoc,
    ) -> Option<Migration> {
        let Some((from, from_span)) = doc.from else {
            self.error(
                LoadError::InvalidValue {
                    message: "a migration needs `from`: the version whose snapshots it moves"
                        .into(),
                },
                doc.span,
            );
            return None;
        };
        match version {
            Some((version, _)) if from < version => {}
            Some((version, _)) => self.error(
                LoadError::InvalidValue {
                    message: format!(
                        "a migration `from: {from}` must name a version below the machine's `version: {version}`"
                    ),
                },
                from_span,
            ),
            None => self.error(
                LoadError::InvalidValue {
                    message: format!(
                        "a migration `from: {from}` needs the machine's `version`, above {from}"
                    ),
                },
                from_span,
            ),
        }
        if let Some(first) = machine.migrations.iter().find(|m| m.from == from) {
            self.error(
                LoadError::Duplicate {
                    key: format!("from: {from}"),
                    first: first.span,
                },
                from_span,
            );
        }
        let mut states = IndexMap::new();
        for (old, new) in doc.states {
            let found = machine
                .find_state(&new.text)
                .filter(|&s| !matches!(machine.state(s).kind, StateKind::History(_)));
            let Some(state) = found.filter(|&s| s != StateId::ROOT) else {
                let candidates = machine
                    .states
                    .iter()
                    .skip(1)
                    .filter(|s| !matches!(s.kind, StateKind::History(_)))
                    .map(|s| s.path.as_str());
                self.error_suggesting(
                    LoadError::UnknownTarget {
                        target: new.text.clone(),
                    },
                    new.span,
                    candidates,
                );
                continue;
            };
            states.insert(
                old.text,
                MigrationTarget {
                    from_span: old.span,
                    target: Target {
                        text: new.text,
                        state,
                        span: new.span,
                    },
                },
            );
        }
        let mut context = IndexMap::new();
        for (field, text) in doc.context {
            if !machine.context.contains_key(&field.text) {
                self.error_suggesting(
                    LoadError::UnknownContextField {
                        field: field.text.clone(),
                    },
                    field.span,
                    machine.context.keys().map(String::as_str),
                );
                continue;
            }
            let Some(expr) = self.expression(&text) else {
                continue;
            };
            let mut event = None;
            expr.walk(&mut |e| {
                if event.is_none() && matches!(&e.kind, expr::ExprKind::Ident(i) if i != "context")
                {
                    event = Some(e.span);
                }
            });
            if let Some(span) = event {
                self.error(
                    LoadError::InvalidExpression {
                        message: "a migration's expression reads only `context`, the old context: it runs on a stored snapshot, with no event".into(),
                    },
                    span,
                );
                continue;
            }
            context.insert(
                field.text,
                Assignment {
                    expr,
                    span: field.span,
                },
            );
        }
        let carry = |this: &mut Self, word: Option<Name>| {
            word.and_then(|w| this.word("setting", &w, &Carry::ALL))
        };
        let timers = carry(self, doc.timers);
        let history = carry(self, doc.history);
        let outbox = carry(self, doc.outbox);
        Some(Migration {
            from,
            states,
            context,
            timers,
            history,
            outbox,
            span: from_span,
        })
    }

    /// Adds a state and its descendants in document order (pre-order).
    fn state(
        &mut self,
        machine: &mut Machine,
        doc: StateDoc,
        parent: Option<StateId>,
        path: String,
    ) -> StateId {
        let id = StateId(machine.states.len() as u32);
        let is_root = parent.is_none();
        let has_children = !doc.states.is_empty();
        let kind = self.state_kind(&doc, is_root, parent.map(|p| machine.state(p).kind));

        if !is_root
            && (doc.key.text.is_empty()
                || doc.key.text.contains('.')
                || doc.key.text.starts_with('#'))
        {
            self.error(
                LoadError::InvalidValue {
                    message: format!("invalid state name `{}`: names may not be empty, contain `.` or start with `#`", doc.key.text),
                },
                doc.key.span,
            );
        }
        if let Some(history) = &doc.history
            && !matches!(kind, StateKind::History(_))
        {
            self.error(
                LoadError::InvalidHistory {
                    message: "`history` belongs to a state of `type: history`".into(),
                },
                history.span,
            );
        }
        if !doc.target.is_empty() && !matches!(kind, StateKind::History(_)) {
            self.error(
                LoadError::InvalidValue {
                    message: "a state has no `target`; write transitions under `on` or `always`"
                        .into(),
                },
                doc.target[0].span,
            );
        }
        if !doc.initial.is_empty() && kind != StateKind::Compound {
            self.error(
                LoadError::InvalidInitial {
                    message: format!(
                        "`initial` belongs to a compound state, and `{}` has no child states",
                        doc.key.text
                    ),
                },
                doc.initial[0].span,
            );
        }
        // A state declared atomic but given children is reported as such, and
        // not also as a compound state without `initial`.
        let declared_atomic = doc.kind.as_ref().is_some_and(|k| k.text == "atomic");
        if kind == StateKind::Compound && doc.initial.is_empty() && has_children && !declared_atomic
        {
            let first = doc
                .states
                .iter()
                .find(|s| s.kind.as_ref().is_none_or(|k| k.text != "history"));
            self.errors.push(Diagnostic {
                help: first.map(|s| format!("add `initial: {}`", s.key.text)),
                ..LoadError::InvalidInitial {
                    message: format!("compound state `{}` has no `initial` state", doc.key.text),
                }
                .at(doc.key.span, [])
            });
        }
        if matches!(kind, StateKind::History(_) | StateKind::Final) {
            let what = if kind == StateKind::Final {
                "a final state"
            } else {
                "a history state"
            };
            let transitions = doc.on.iter().chain(&doc.always).chain(&doc.after).next();
            if let Some(t) = transitions {
                self.error(
                    LoadError::InvalidValue {
                        message: format!("{what} cannot have transitions"),
                    },
                    t.span,
                );
            }
            if let Some(child) = doc.states.first() {
                self.error(
                    LoadError::InvalidValue {
                        message: format!("{what} cannot have child states"),
                    },
                    child.key.span,
                );
            }
        }
        if let StateKind::History(_) = kind
            && let Some(invoke) = doc.invoke.first()
        {
            self.error(
                LoadError::InvalidHistory {
                    message: "a history state cannot invoke".into(),
                },
                invoke.span,
            );
        }
        if let StateKind::History(_) = kind
            && let Some(action) = doc.entry.first().or(doc.exit.first())
        {
            self.error(
                LoadError::InvalidHistory {
                    message: "a history state cannot have actions".into(),
                },
                action_span(action),
            );
        }
        self.unique(doc.allow.iter().map(|(n, _)| n));
        let transition_allows: Vec<(Name, String, Span)> = doc
            .transitions()
            .flat_map(|t| t.allow.iter().cloned())
            .collect();
        let mut allow = IndexMap::new();
        for (lint, reason) in doc.allow {
            if reason.trim().is_empty() {
                self.error(
                    LoadError::InvalidValue {
                        message: format!("`allow {}` needs a reason", lint.text),
                    },
                    lint.span,
                );
            }
            allow.insert(
                lint.text,
                Allow {
                    reason,
                    span: lint.span,
                    within: Vec::new(),
                },
            );
        }
        // A suppression above a transition covers that transition's text,
        // unless one of the same lint covers the whole state.
        for (lint, reason, within) in transition_allows {
            let entry = allow.entry(lint.text).or_insert_with(|| Allow {
                reason,
                span: lint.span,
                within: Vec::new(),
            });
            if entry.span == lint.span || !entry.within.is_empty() {
                entry.within.push(within);
            }
        }

        let entry = self.actions(machine, doc.entry);
        let exit = self.actions(machine, doc.exit);
        machine.states.push(State {
            key: doc.key.text.clone(),
            id: doc.id.as_ref().map(|n| n.text.clone()),
            path: path.clone(),
            kind,
            parent,
            children: Vec::new(),
            initial: Vec::new(),
            entry,
            exit,
            on: Vec::new(),
            always: Vec::new(),
            after: Vec::new(),
            invoke: Vec::new(),
            description: doc.description,
            tags: doc.tags,
            allow,
            span: doc.key.span,
        });
        if let Some(id_name) = &doc.id {
            self.state_id(machine, id_name, id);
        }
        if !doc.initial.is_empty() {
            self.pending.push(Pending::Initial(id, doc.initial));
        }
        if !doc.target.is_empty() {
            self.pending.push(Pending::HistoryDefault(id, doc.target));
        }

        for (triggered, docs) in [(0, doc.on), (1, doc.always), (2, doc.after)] {
            for t in docs {
                let tid = self.transition(machine, id, t);
                if let Some(tid) = tid {
                    let state = &mut machine.states[id.index()];
                    match triggered {
                        0 => state.on.push(tid),
                        1 => state.always.push(tid),
                        _ => state.after.push(tid),
                    }
                }
            }
        }

        let ids: Vec<Name> = doc.invoke.iter().filter_map(invocation_id).collect();
        self.unique(&ids);
        for invoke in doc.invoke {
            if let Some(invocation) = self.invocation(machine, id, invoke) {
                machine.states[id.index()].invoke.push(invocation);
            }
        }

        self.unique(doc.states.iter().map(|s| &s.key));
        for child in doc.states {
            let child_path = if path.is_empty() {
                child.key.text.clone()
            } else {
                format!("{path}.{}", child.key.text)
            };
            let child_id = self.state(machine, child, Some(id), child_path);
            machine.states[id.index()].children.push(child_id);
        }
        id
    }

    /// An invocation and its `onDone`/`onError` handlers, which become
    /// transitions of `state` on its completion events, after those written
    /// under `on`.
    fn invocation(
        &mut self,
        machine: &mut Machine,
        state: StateId,
        doc: InvokeDoc,
    ) -> Option<Invocation> {
        let Some(src) = doc.src.clone() else {
            self.error(
                LoadError::InvalidValue {
                    message: "an invocation needs a `src`: the effect or host service it calls"
                        .into(),
                },
                doc.span,
            );
            return None;
        };
        let id = invocation_id(&doc)?;
        if !is_event_name(&src.text) {
            self.error(
                LoadError::InvalidValue {
                    message: format!(
                        "invalid `src` `{}`: write an effect's name, without a backtick or a line break",
                        src.text
                    ),
                },
                src.span,
            );
        } else if !machine.effects.contains_key(&src.text)
            && let Some(close) = crate::diagnostic::did_you_mean_strictly(
                &src.text,
                machine.effects.keys().map(String::as_str),
            )
        {
            // A name this close to a declared effect is a typo far more
            // often than a host service of its own, and taking it for one
            // would hide the effect's idempotency from the linter.
            self.errors.push(crate::diagnostic::Diagnostic {
                help: Some(format!(
                    "did you mean `{close}`? A host service needs a name unlike every declared effect"
                )),
                ..LoadError::UnknownReference {
                    kind: "effect",
                    name: src.text.clone(),
                }
                .at(src.span, [])
            });
        }
        if !is_event_name(&id.text) {
            self.error(
                LoadError::InvalidValue {
                    message: format!(
                        "invalid invocation id `{}`: it names the completion events, so it \
                         holds no backtick and no line break",
                        id.text
                    ),
                },
                id.span,
            );
            return None;
        }
        let input = self.arguments(doc.input);
        let mut handlers =
            |completion: Completion, docs: Vec<TransitionDoc>| -> Vec<TransitionId> {
                let mut ids = Vec::new();
                for mut t in docs {
                    // The event as a descriptor writes it: an id that is
                    // no plain name is quoted.
                    t.event = Some(Name {
                        text: EventPattern::Exact(completion.event(&id.text)).to_string(),
                        span: t.span,
                    });
                    if let Some(tid) = self.transition(machine, state, t) {
                        machine.states[state.index()].on.push(tid);
                        ids.push(tid);
                    }
                }
                ids
            };
        let on_done = handlers(Completion::Done, doc.on_done);
        let on_error = handlers(Completion::Error, doc.on_error);
        Some(Invocation {
            id,
            src,
            input,
            on_done,
            on_error,
            span: doc.span,
        })
    }

    fn state_id(&mut self, machine: &Machine, id_name: &Name, id: StateId) {
        if id_name.text.is_empty()
            || id_name.text.contains(char::is_whitespace)
            || id_name.text.starts_with('#')
        {
            self.error(
                LoadError::InvalidValue {
                    message: format!("invalid state id `{}`", id_name.text),
                },
                id_name.span,
            );
        }
        let first = *self.ids.entry(id_name.text.clone()).or_insert(id);
        if first != id {
            self.error(
                LoadError::Duplicate {
                    key: id_name.text.clone(),
                    first: machine.state(first).span,
                },
                id_name.span,
            );
        }
    }

    fn state_kind(
        &mut self,
        doc: &StateDoc,
        is_root: bool,
        parent: Option<StateKind>,
    ) -> StateKind {
        let has_children = !doc.states.is_empty();
        let inferred = if has_children {
            StateKind::Compound
        } else {
            StateKind::Atomic
        };
        let Some(word) = &doc.kind else {
            return inferred;
        };
        const KINDS: [(&str, u8); 5] = [
            ("atomic", 0),
            ("compound", 1),
            ("parallel", 2),
            ("final", 3),
            ("history", 4),
        ];
        let kind = match self.word("state type", word, &KINDS) {
            Some(0) if has_children => {
                self.error(
                    LoadError::InvalidValue {
                        message: "an atomic state cannot have child states".into(),
                    },
                    word.span,
                );
                StateKind::Compound
            }
            Some(0) => StateKind::Atomic,
            Some(1) if !has_children => {
                self.error(
                    LoadError::InvalidValue {
                        message: "a compound state needs child states under `states`".into(),
                    },
                    word.span,
                );
                StateKind::Atomic
            }
            Some(1) => StateKind::Compound,
            Some(2) => StateKind::Parallel,
            Some(3) => StateKind::Final,
            Some(4) => {
                let kind = match &doc.history {
                    Some(h) => self
                        .word(
                            "history kind",
                            h,
                            &[
                                ("shallow", HistoryKind::Shallow),
                                ("deep", HistoryKind::Deep),
                            ],
                        )
                        .unwrap_or(HistoryKind::Shallow),
                    None => HistoryKind::Shallow,
                };
                if is_root || !matches!(parent, Some(StateKind::Compound | StateKind::Parallel)) {
                    self.error(
                        LoadError::InvalidHistory {
                            message: "a history state belongs inside a compound or parallel state"
                                .into(),
                        },
                        word.span,
                    );
                }
                StateKind::History(kind)
            }
            _ => inferred,
        };
        if is_root && matches!(kind, StateKind::Final | StateKind::History(_)) {
            self.error(
                LoadError::InvalidValue {
                    message: "the machine itself cannot be final or history".into(),
                },
                word.span,
            );
        }
        kind
    }

    fn transition(
        &mut self,
        machine: &mut Machine,
        source: StateId,
        doc: TransitionDoc,
    ) -> Option<TransitionId> {
        let trigger = if let Some(event) = &doc.event {
            Trigger::Event(self.descriptor(event)?)
        } else if let Some(delay) = &doc.delay {
            Trigger::After(self.duration(delay)?)
        } else {
            Trigger::Always
        };
        if doc.reenter && doc.targets.is_empty() {
            self.error(
                LoadError::InvalidValue {
                    message: "`reenter` needs a target: a targetless transition exits nothing"
                        .into(),
                },
                doc.span,
            );
        }
        let guard = doc.guard.and_then(|g| self.expression(&g));
        let actions = self.actions(machine, doc.actions);
        let id = TransitionId(machine.transitions.len() as u32);
        machine.transitions.push(Transition {
            source,
            trigger,
            targets: Vec::new(),
            guard,
            actions,
            reenter: doc.reenter,
            description: doc.description,
            span: doc.span,
        });
        if !doc.targets.is_empty() {
            self.pending.push(Pending::Transition(id, doc.targets));
        }
        Some(id)
    }

    fn descriptor(&mut self, name: &Name) -> Option<EventDescriptor> {
        let descriptor = EventDescriptor::parse_strict(&name.text);
        if descriptor.is_none() {
            self.error(
                LoadError::InvalidValue {
                    message: format!(
                        "invalid event descriptor `{}`: write event names, `name.*` or `*`, separated by spaces",
                        name.text
                    ),
                },
                name.span,
            );
        }
        descriptor
    }

    /// An event name to raise or send: one name, any text but a pattern
    /// (`*`, `name.*`), a backtick or a line break.
    fn event_name(&mut self, name: &Name) {
        if !is_event_name(&name.text) || name.text == "*" || name.text.ends_with(".*") {
            self.error(
                LoadError::InvalidValue {
                    message: format!("`{}` is not one event name", name.text),
                },
                name.span,
            );
        }
    }

    fn expression(&mut self, text: &ExprText) -> Option<Expr> {
        let parsed = match self.parsed.get(&text.text) {
            Some(parsed) => parsed,
            None => self
                .parsed
                .entry(text.text.clone())
                .or_insert(expr::parse(&text.text, 0)),
        };
        match parsed {
            Ok(e) => {
                let mut e = e.clone();
                e.shift(text.offset);
                Some(e)
            }
            Err(e) => {
                let start = (e.span.start + text.offset) as usize;
                let span = Span::new(start, start + (e.span.end - e.span.start) as usize);
                let message = e.message.clone();
                self.error(LoadError::InvalidExpression { message }, span);
                None
            }
        }
    }

    fn arguments(&mut self, args: Vec<(Name, ExprText)>) -> IndexMap<String, Assignment> {
        self.unique(args.iter().map(|(n, _)| n));
        let mut out = IndexMap::new();
        for (name, text) in args {
            if let Some(expr) = self.expression(&text) {
                out.insert(
                    name.text,
                    Assignment {
                        expr,
                        span: name.span,
                    },
                );
            }
        }
        out
    }

    fn actions(&mut self, machine: &Machine, docs: Vec<ActionDoc>) -> Vec<Action> {
        let mut actions = Vec::new();
        for doc in docs {
            let action = match doc {
                ActionDoc::Assign { fields, span } => {
                    for (field, _) in &fields {
                        if !machine.context.contains_key(&field.text) {
                            self.error_suggesting(
                                LoadError::UnknownContextField {
                                    field: field.text.clone(),
                                },
                                field.span,
                                machine.context.keys().map(String::as_str),
                            );
                        }
                    }
                    Action::Assign {
                        fields: self.arguments(fields),
                        span,
                    }
                }
                ActionDoc::Raise { event, data, span } => {
                    self.event_name(&event);
                    Action::Raise {
                        event,
                        data: self.arguments(data),
                        span,
                    }
                }
                ActionDoc::Send {
                    event,
                    data,
                    delay,
                    id,
                    span,
                } => {
                    self.event_name(&event);
                    let delay = delay.as_ref().and_then(|d| self.duration(d));
                    Action::Send {
                        event,
                        data: self.arguments(data),
                        delay,
                        id,
                        span,
                    }
                }
                ActionDoc::Cancel { id, span } => Action::Cancel { id, span },
                ActionDoc::Effect { name, args, span } => {
                    if !machine.effects.contains_key(&name.text) {
                        self.error_suggesting(
                            LoadError::UnknownReference {
                                kind: "effect",
                                name: name.text.clone(),
                            },
                            name.span,
                            machine.effects.keys().map(String::as_str),
                        );
                    }
                    Action::Effect {
                        name,
                        args: self.arguments(args),
                        span,
                    }
                }
                ActionDoc::Named { name } => {
                    let span = name.span;
                    if machine.effects.contains_key(&name.text) {
                        Action::Effect {
                            name,
                            args: IndexMap::new(),
                            span,
                        }
                    } else {
                        Action::Host { name, span }
                    }
                }
                ActionDoc::Log { expr, span } => match self.expression(&expr) {
                    Some(expr) => Action::Log { expr, span },
                    None => continue,
                },
            };
            actions.push(action);
        }
        actions
    }

    /// Resolves every target now that all states exist.
    fn resolve(&mut self, machine: &mut Machine) {
        let index = StateIndex::new(machine);
        for pending in std::mem::take(&mut self.pending) {
            match pending {
                Pending::Transition(id, names) => {
                    let source = machine.transition(id).source;
                    let targets = self.targets(machine, &index, source, &names, Relative::Siblings);
                    self.check_compatible(machine, &targets);
                    machine.transitions[id.index()].targets = targets;
                }
                Pending::Initial(id, names) => {
                    // A name that is not a child but is a sibling is a state the
                    // author put at the wrong level: say that, not "unknown".
                    let (outside, names): (Vec<Name>, Vec<Name>) =
                        names.into_iter().partition(|name| {
                            resolve_target(machine, &index, id, &name.text, Relative::Children)
                                .is_none()
                                && resolve_target(
                                    machine,
                                    &index,
                                    id,
                                    &name.text,
                                    Relative::Siblings,
                                )
                                .is_some()
                        });
                    for name in outside {
                        self.error(
                            LoadError::InvalidInitial {
                                message: format!(
                                    "the initial state `{}` is not inside `{}`",
                                    name.text,
                                    machine.state(id).key
                                ),
                            },
                            name.span,
                        );
                    }
                    let targets = self.targets(machine, &index, id, &names, Relative::Children);
                    for target in &targets {
                        if target.state == id || !machine.is_descendant_or_self(target.state, id) {
                            self.error(
                                LoadError::InvalidInitial {
                                    message: format!(
                                        "the initial state `{}` is not inside `{}`",
                                        target.text,
                                        machine.state(id).key
                                    ),
                                },
                                target.span,
                            );
                        }
                    }
                    self.check_compatible(machine, &targets);
                    machine.states[id.index()].initial = targets;
                }
                Pending::HistoryDefault(id, names) => {
                    let targets = self.targets(machine, &index, id, &names, Relative::Siblings);
                    let parent = machine.state(id).parent.unwrap_or(StateId::ROOT);
                    for target in &targets {
                        if target.state == parent
                            || !machine.is_descendant_or_self(target.state, parent)
                        {
                            self.error(
                                LoadError::InvalidHistory {
                                    message: format!(
                                        "the default of a history state must lie inside `{}`",
                                        machine.state(parent).key
                                    ),
                                },
                                target.span,
                            );
                        }
                    }
                    machine.states[id.index()].initial = targets;
                }
                Pending::Verify(effect, name) => {
                    let targets = self.targets(
                        machine,
                        &index,
                        StateId::ROOT,
                        std::slice::from_ref(&name),
                        Relative::Children,
                    );
                    if let Some(effect) = machine.effects.get_mut(&effect) {
                        effect.verify = targets.into_iter().next();
                    }
                }
            }
        }
    }

    fn targets(
        &mut self,
        machine: &Machine,
        index: &StateIndex,
        from: StateId,
        names: &[Name],
        relative: Relative,
    ) -> Vec<Target> {
        let mut targets = Vec::new();
        for name in names {
            match resolve_target(machine, index, from, &name.text, relative) {
                Some(state) => targets.push(Target {
                    text: name.text.clone(),
                    state,
                    span: name.span,
                }),
                None => {
                    let candidates = target_candidates(machine, from, relative);
                    let names = || candidates.iter().map(String::as_str);
                    let mut error = LoadError::UnknownTarget {
                        target: name.text.clone(),
                    }
                    .at(name.span, names());
                    // The bare name: `syntax::parse` writes it in the file's syntax.
                    error.fix = sole_close_name(&name.text, names()).map(|close| {
                        Fix::safe_edits(
                            format!("replace `{}` with `{close}`", name.text),
                            vec![Edit::new(name.span, close)],
                        )
                    });
                    self.errors.push(error);
                }
            }
        }
        targets
    }

    /// Several targets must be able to be active together: no one inside
    /// another, and each pair separated by a parallel state.
    fn check_compatible(&mut self, machine: &Machine, targets: &[Target]) {
        for (i, a) in targets.iter().enumerate() {
            for b in &targets[i + 1..] {
                let nested = machine.is_descendant_or_self(a.state, b.state)
                    || machine.is_descendant_or_self(b.state, a.state);
                let common = machine
                    .ancestors(a.state)
                    .find(|&x| machine.is_descendant_or_self(b.state, x));
                let parallel = common.is_some_and(|c| machine.state(c).kind == StateKind::Parallel);
                if nested || !parallel {
                    self.errors.push(Diagnostic {
                        labels: vec![Label {
                            span: a.span,
                            message: "the other target".into(),
                        }],
                        ..LoadError::InvalidValue {
                            message: format!(
                                "the targets `{}` and `{}` cannot be active together",
                                a.text, b.text
                            ),
                        }
                        .at(b.span, [])
                    });
                }
            }
        }
    }

    /// Checks every expression against the context and, for a transition on one
    /// declared event, against that event's payload.
    fn check_expressions(&mut self, machine: &Machine) {
        let context: Vec<(&str, Type)> = machine
            .context
            .iter()
            .map(|(name, field)| (name.as_str(), Type::of_json(&field.value)))
            .collect();
        let guards: Vec<&str> = machine.guards.iter().map(|g| g.text.as_str()).collect();
        let any_event = Scope {
            context: context.clone(),
            payload: None,
            guards: guards.clone(),
        };
        let mut found = Vec::new();
        for state in &machine.states {
            for action in state.entry.iter().chain(&state.exit) {
                check_action(action, &any_event, &mut found);
            }
            for input in state.invoke.iter().flat_map(|i| i.input.values()) {
                found.extend(expr::check(&input.expr, &any_event));
            }
        }
        for transition in &machine.transitions {
            let payload = match &transition.trigger {
                Trigger::Event(d) => match d.patterns.as_slice() {
                    [EventPattern::Exact(name)] => Some(name.as_str()),
                    _ => None,
                },
                _ => None,
            };
            let declared = payload.and_then(|name| machine.events.get(name));
            let completion = payload.and_then(Completion::of_event);
            if let (None, Some((_, id))) = (declared, completion)
                && machine
                    .invocations_completed_by(payload.unwrap_or_default())
                    .next()
                    .is_none()
            {
                let ids: Vec<&str> = machine
                    .states
                    .iter()
                    .flat_map(|s| s.invoke.iter().map(|i| i.id.text.as_str()))
                    .collect();
                found.push(
                    LoadError::UnknownReference {
                        kind: "invocation",
                        name: id.to_string(),
                    }
                    .at(transition.span, ids),
                );
            }
            // A completion carries one field: `output` when done, `error`
            // when failed; reading the other is a mistake the checker names.
            let payload = match (declared, completion) {
                (Some(decl), _) => decl.payload.as_ref().map(|p| {
                    p.iter()
                        .map(|(f, field)| (f.as_str(), payload_type(field.ty)))
                        .collect()
                }),
                (None, Some((kind, _))) => {
                    Some(vec![(kind.field(), payload_type(PayloadType::Any))])
                }
                (None, None) => None,
            };
            let scope = Scope {
                context: context.clone(),
                payload,
                guards: guards.clone(),
            };
            if let Some(guard) = &transition.guard {
                found.extend(expr::check_guard(guard, &scope));
            }
            for action in &transition.actions {
                check_action(action, &scope, &mut found);
            }
        }
        for state in &machine.states {
            let inputs = state
                .invoke
                .iter()
                .flat_map(|i| i.input.values().map(|a| &a.expr));
            let exprs = state
                .entry
                .iter()
                .chain(&state.exit)
                .flat_map(action_exprs)
                .chain(inputs);
            self.check_in_state(machine, exprs, &mut found);
        }
        for transition in &machine.transitions {
            let exprs = transition
                .guard
                .iter()
                .chain(transition.actions.iter().flat_map(action_exprs));
            self.check_in_state(machine, exprs, &mut found);
        }
        self.errors.extend(found);
    }

    fn check_in_state<'a>(
        &self,
        machine: &Machine,
        exprs: impl Iterator<Item = &'a Expr>,
        found: &mut Vec<Diagnostic>,
    ) {
        for e in exprs {
            for (path, span) in expr::in_state_paths(e) {
                if machine.find_state(&path).is_none() {
                    let candidates: Vec<&str> = machine
                        .states
                        .iter()
                        .skip(1)
                        .map(|s| s.path.as_str())
                        .collect();
                    found.push(LoadError::UnknownTarget { target: path }.at(span, candidates));
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Relative {
    /// A transition's targets: `a.b` starts at the source's siblings.
    Siblings,
    /// An `initial`: `a.b` starts at the state's own children.
    Children,
}

/// The state a target names: `#id`, `.child` (inside the source), or a path
/// that starts at the source's siblings (its children for `initial`, and for
/// the root, which has no siblings).
fn resolve_target(
    machine: &Machine,
    index: &StateIndex,
    from: StateId,
    text: &str,
    relative: Relative,
) -> Option<StateId> {
    if let Some(id) = text.strip_prefix('#') {
        return index.ids.get(id).copied();
    }
    let (start, path) = match text.strip_prefix('.') {
        Some(rest) => (from, rest),
        None => match relative {
            Relative::Children => (from, text),
            Relative::Siblings => (machine.state(from).parent.unwrap_or(from), text),
        },
    };
    path.split('.').try_fold(start, |at, key| {
        index.children[at.index()].get(key).copied()
    })
}

/// State lookups by id and by key under a parent, built once, so that
/// resolving targets stays linear in the size of the machine.
struct StateIndex {
    ids: std::collections::HashMap<String, StateId>,
    children: Vec<std::collections::HashMap<String, StateId>>,
}

impl StateIndex {
    fn new(machine: &Machine) -> StateIndex {
        let mut ids = std::collections::HashMap::new();
        let mut children = vec![std::collections::HashMap::new(); machine.states.len()];
        for id in machine.state_ids() {
            let state = machine.state(id);
            if let Some(name) = &state.id {
                ids.entry(name.clone()).or_insert(id);
            }
            if let Some(parent) = state.parent {
                children[parent.index()]
                    .entry(state.key.clone())
                    .or_insert(id);
            }
        }
        StateIndex { ids, children }
    }
}

/// Names a target could have meant, for "did you mean".
fn target_candidates(machine: &Machine, from: StateId, relative: Relative) -> Vec<String> {
    let base = match relative {
        Relative::Children => from,
        Relative::Siblings => machine.state(from).parent.unwrap_or(from),
    };
    let mut names: Vec<String> = machine
        .state(base)
        .children
        .iter()
        .map(|&c| machine.state(c).key.clone())
        .collect();
    names.extend(
        machine
            .states
            .iter()
            .filter_map(|s| s.id.as_ref().map(|id| format!("#{id}"))),
    );
    names
}

/// The invocation's id: as written, or else its `src`.
fn invocation_id(doc: &InvokeDoc) -> Option<Name> {
    doc.id.clone().or_else(|| doc.src.clone())
}

/// Why a declared host guard name cannot be one, if it cannot: a guard
/// expression reads it as a bare identifier, so it must be one and must not
/// be a word the expression language already gives a meaning.
fn guard_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return Some(format!(
            "invalid guard name `{name}`: a host guard is used as a bare name in \
             expressions, so it is a letter or `_` followed by letters, digits or `_`"
        ));
    }
    if expr::RESERVED_NAMES.contains(&name) {
        return Some(format!(
            "`{name}` cannot name a host guard: expressions already read it as a word of their own"
        ));
    }
    None
}

fn payload_type(ty: PayloadType) -> Type {
    match ty {
        PayloadType::String => Type::String,
        PayloadType::Number => Type::Dyn,
        PayloadType::Integer => Type::Int,
        PayloadType::Boolean => Type::Bool,
        PayloadType::List => Type::List,
        PayloadType::Map => Type::Map,
        PayloadType::Any => Type::Dyn,
    }
}

fn action_exprs(action: &Action) -> Box<dyn Iterator<Item = &Expr> + '_> {
    match action {
        Action::Assign { fields, .. } => Box::new(fields.values().map(|a| &a.expr)),
        Action::Raise { data, .. } | Action::Send { data, .. } => {
            Box::new(data.values().map(|a| &a.expr))
        }
        Action::Cancel { .. } => Box::new(std::iter::empty()),
        Action::Effect { args, .. } => Box::new(args.values().map(|a| &a.expr)),
        Action::Host { .. } => Box::new(std::iter::empty()),
        Action::Log { expr, .. } => Box::new(std::iter::once(expr)),
    }
}

fn check_action(action: &Action, scope: &Scope, found: &mut Vec<Diagnostic>) {
    for e in action_exprs(action) {
        found.extend(expr::check(e, scope));
    }
}

fn action_span(action: &ActionDoc) -> Span {
    match action {
        ActionDoc::Assign { span, .. }
        | ActionDoc::Raise { span, .. }
        | ActionDoc::Send { span, .. }
        | ActionDoc::Cancel { span, .. }
        | ActionDoc::Effect { span, .. }
        | ActionDoc::Log { span, .. } => *span,
        ActionDoc::Named { name } => name.span,
    }
}
