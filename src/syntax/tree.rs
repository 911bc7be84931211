//! The document tree both front-ends produce: what was written, in the order
//! it was written, with spans, before any name is resolved or checked.
//!
//! `lower` turns it into the model and reports every problem at once, so the
//! checks live in one place whichever syntax a machine was written in.

use crate::model::Name;
use crate::span::Span;

#[derive(Clone, Debug, Default)]
pub struct MachineDoc {
    pub name: Option<Name>,
    pub version: Option<(u64, Span)>,
    pub description: Option<String>,
    /// `semantics: scxml | xstate`, as written.
    pub semantics: Option<Name>,
    /// Set by the front-ends that read machines as written; never written
    /// in a machine file.
    pub fact_source: crate::model::FactSource,
    pub context: Vec<ContextDoc>,
    pub sources: Vec<SourceDoc>,
    pub dedup: Option<DedupDoc>,
    /// `history: { keep: 30d }`, as written.
    pub history: Option<HistoryDoc>,
    pub limits: Option<LimitsDoc>,
    pub events: Vec<EventDoc>,
    pub effects: Vec<EffectDoc>,
    /// Host guard names, as declared (`guards: [a, b]`, `guards a b`).
    pub guards: Vec<Name>,
    /// What a front-end could not read, among the host actions it wrote.
    pub opaque: Vec<crate::model::OpaquePart>,
    /// The names it made up for parts written in place, with what the
    /// author sees instead (`Machine::stand_ins`).
    pub stand_ins: indexmap::IndexMap<String, String>,
    /// `migrations:`, in the order written.
    pub migrations: Vec<MigrationDoc>,
    /// The root state: top-level `initial`, `type`, `states`, `on`, ...; its
    /// `key` is unused.
    pub root: StateDoc,
}

#[derive(Clone, Debug)]
pub struct ContextDoc {
    pub name: Name,
    pub value: serde_json::Value,
}

#[derive(Clone, Debug)]
pub struct SourceDoc {
    pub name: Name,
    /// Duration text as written (`72h`).
    pub retry_horizon: Option<Name>,
    pub description: Option<String>,
}

#[derive(Clone, Debug)]
pub struct DedupDoc {
    pub retention: Option<Name>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct HistoryDoc {
    /// Duration text as written (`30d`).
    pub keep: Option<Name>,
    pub span: Span,
}

/// One entry of `migrations:`, as written.
#[derive(Clone, Debug)]
pub struct MigrationDoc {
    pub from: Option<(u64, Span)>,
    /// Old state path → new state, both as written.
    pub states: Vec<(Name, Name)>,
    /// New context field → expression over the old context.
    pub context: Vec<(Name, ExprText)>,
    /// `keep` or `drop`, as written.
    pub timers: Option<Name>,
    pub history: Option<Name>,
    pub outbox: Option<Name>,
    /// Where the entry starts.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct LimitsDoc {
    pub microsteps: Option<(u64, Span)>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct EventDoc {
    pub name: Name,
    pub id_field: Option<Name>,
    pub source: Option<Name>,
    /// `None` when no payload is declared; `Some(vec![])` for an empty one.
    pub payload: Option<Vec<(Name, Name)>>,
    pub description: Option<String>,
}

#[derive(Clone, Debug)]
pub struct EffectDoc {
    pub name: Name,
    /// `key`, `natural` or `none`, as written.
    pub idempotency: Option<Name>,
    pub verify: Option<Name>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct StateDoc {
    pub key: Name,
    /// `atomic`, `compound`, `parallel`, `final` or `history`, as written.
    pub kind: Option<Name>,
    pub id: Option<Name>,
    pub initial: Vec<Name>,
    /// `shallow` or `deep`, for history states.
    pub history: Option<Name>,
    /// The default target of a history state.
    pub target: Vec<Name>,
    pub entry: Vec<ActionDoc>,
    pub exit: Vec<ActionDoc>,
    pub on: Vec<TransitionDoc>,
    pub always: Vec<TransitionDoc>,
    pub after: Vec<TransitionDoc>,
    pub invoke: Vec<InvokeDoc>,
    pub states: Vec<StateDoc>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    /// Lint name and reason.
    pub allow: Vec<(Name, String)>,
}

impl StateDoc {
    /// Every transition of the state as written: `on`, `always`, `after`
    /// and the completion handlers of its invocations.
    pub fn transitions(&self) -> impl Iterator<Item = &TransitionDoc> {
        self.on.iter().chain(&self.always).chain(&self.after).chain(
            self.invoke
                .iter()
                .flat_map(|i| i.on_done.iter().chain(&i.on_error)),
        )
    }
}

/// One invocation of a state (`invoke`).
#[derive(Clone, Debug, Default)]
pub struct InvokeDoc {
    pub src: Option<Name>,
    pub id: Option<Name>,
    pub input: Vec<(Name, ExprText)>,
    /// Transitions without a trigger: lowering gives them the completion
    /// events of the invocation.
    pub on_done: Vec<TransitionDoc>,
    pub on_error: Vec<TransitionDoc>,
    pub span: Span,
}

#[derive(Clone, Debug, Default)]
pub struct TransitionDoc {
    /// The descriptor as written (`on` key), for event transitions.
    pub event: Option<Name>,
    /// The duration as written (`after` key), for delayed transitions.
    pub delay: Option<Name>,
    pub targets: Vec<Name>,
    pub guard: Option<ExprText>,
    pub actions: Vec<ActionDoc>,
    pub reenter: bool,
    pub description: Option<String>,
    pub span: Span,
    /// Lint, reason, and the text the suppression covers: the transition
    /// as written, with its guard and actions.
    pub allow: Vec<(Name, String, Span)>,
}

#[derive(Clone, Debug)]
pub enum ActionDoc {
    Assign {
        fields: Vec<(Name, ExprText)>,
        span: Span,
    },
    Raise {
        event: Name,
        data: Vec<(Name, ExprText)>,
        span: Span,
    },
    /// `{ send: EVENT, data: ..., delay: DURATION, id: ID }`: to the machine's
    /// own external queue, after the delay if one is given.
    Send {
        event: Name,
        data: Vec<(Name, ExprText)>,
        delay: Option<Name>,
        id: Option<Name>,
        span: Span,
    },
    /// `{ cancel: ID }`
    Cancel {
        id: Name,
        span: Span,
    },
    /// `{ effect: NAME, with: ... }`: must name a declared effect.
    Effect {
        name: Name,
        args: Vec<(Name, ExprText)>,
        span: Span,
    },
    /// A bare `NAME`: a declared effect, or else a host action.
    Named {
        name: Name,
    },
    Log {
        expr: ExprText,
        span: Span,
    },
}

/// Expression source as written, with the byte offset in the file where its
/// text starts, so that positions inside it map to the file.
#[derive(Clone, Debug)]
pub struct ExprText {
    pub text: String,
    pub offset: u32,
}
