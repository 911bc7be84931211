//! The machine model: one representation for YAML and DSL files.
//!
//! States and transitions live in two arenas in document order (a parent before
//! its children, children in the order written), so `StateId` and
//! `TransitionId` are dense indices that the graph views reuse as node indices.
//! Every element keeps the span where it was written. The model knows nothing of
//! YAML or pest; the `syntax` module builds it and checks it.

use indexmap::IndexMap;

use crate::expr::Expr;
use crate::span::Span;

mod duration;
pub use duration::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransitionId(pub u32);

impl StateId {
    /// The root state, which holds the machine's top-level states.
    pub const ROOT: StateId = StateId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl TransitionId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The rules a machine runs by where SCXML and XState v5 differ
/// (`docs/semantics.md`): SCXML's, the default of our own formats, or
/// XState v5's, quirks included, so that an XState machine replays as XState
/// runs it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Semantics {
    #[default]
    Scxml,
    Xstate,
}

impl Semantics {
    /// Every profile, in the order documentation lists them.
    pub const ALL: [Semantics; 2] = [Semantics::Scxml, Semantics::Xstate];

    /// The name written in machine files.
    pub fn as_str(self) -> &'static str {
        match self {
            Semantics::Scxml => "scxml",
            Semantics::Xstate => "xstate",
        }
    }

    /// Whether this is the default profile, which files and snapshots
    /// leave unwritten.
    pub fn is_default(&self) -> bool {
        *self == Semantics::default()
    }

    /// The profile a machine file names, if it names one.
    pub fn from_name(name: &str) -> Option<Semantics> {
        Semantics::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Semantics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    pub name: String,
    pub version: Option<u64>,
    pub description: Option<String>,
    /// The rules the machine runs by (`docs/semantics.md`).
    pub semantics: Semantics,
    /// Where the machine's idempotency facts are declared, which decides
    /// whether each missing one is a finding of its own.
    pub fact_source: FactSource,
    pub context: IndexMap<String, ContextField>,
    pub sources: IndexMap<String, Source>,
    pub dedup: Option<Dedup>,
    /// `history: { keep: 30d }`: the runtime stores each applied event's
    /// payload, for `idemchart history` and `replay`; `None` stores none.
    pub history: Option<HistoryKeep>,
    pub limits: Option<Limits>,
    pub events: IndexMap<String, EventDecl>,
    pub effects: IndexMap<String, EffectDecl>,
    /// Host guards: names the host implements (`Chart::builder(..).guard`),
    /// usable as booleans in guard expressions, in declaration order.
    pub guards: Vec<Name>,
    /// The host actions that stand for code a front-end could not read
    /// (`OpaquePart`), in the order read; empty for our own formats.
    pub opaque: Vec<OpaquePart>,
    /// The names a front-end made up for host actions, guards and services
    /// written in place, which the author never wrote (`inline_L46C20`,
    /// SCXML's `if_L26C9`), each with what the author sees instead: `the
    /// action written at src/cart.machine.ts:46:20`. Messages name such a
    /// part so (`Machine::host_name`); empty for our own formats.
    pub stand_ins: IndexMap<String, String>,
    /// All states, the root first; `StateId` indexes this.
    pub states: Vec<State>,
    /// All transitions, grouped by source state in document order.
    pub transitions: Vec<Transition>,
    /// How a process stored at an older version continues on this one
    /// (`migrations:`), in the order written.
    pub migrations: Vec<Migration>,
    /// Where the `machine` name was written.
    pub span: Span,
}

/// A declared migration: how a snapshot stored at version `from` becomes
/// one of this machine. The runtime applies it lazily to a stored process
/// on first touch (`runtime::migrate`); `lint --baseline` reads it as the
/// answer to a break, and loading checks what it can without the old machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Migration {
    /// The version whose snapshots it moves, below the machine's own.
    pub from: u64,
    /// Old state path → the state of this machine it becomes, in the order
    /// written. The keys name states of the old machine, which loading does
    /// not know, so they are kept as written.
    pub states: IndexMap<String, MigrationTarget>,
    /// New context field → the expression over the old context (`context.f`)
    /// that gives its value.
    pub context: IndexMap<String, Assignment>,
    /// What becomes of the pending timers; `None` where it is not written.
    pub timers: Option<Carry>,
    /// What becomes of the recorded history; `None` where it is not written.
    pub history: Option<Carry>,
    /// What becomes of the pending outbox rows of an effect or invocation
    /// this machine lacks; `None` where it is not written (they are kept).
    pub outbox: Option<Carry>,
    /// Where the entry was written (its `from`).
    pub span: Span,
}

/// One `old.path: new.path` entry of a migration's `states`.
#[derive(Clone, Debug, PartialEq)]
pub struct MigrationTarget {
    /// Where the old path was written.
    pub from_span: Span,
    /// The state of this machine, resolved as a path from the top (or `#id`).
    pub target: Target,
}

/// Whether a migration keeps what a process holds (timers, history, outbox
/// rows), moved along its state mapping, or drops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Carry {
    Keep,
    Drop,
}

impl Carry {
    pub const ALL: [(&'static str, Carry); 2] = [("keep", Carry::Keep), ("drop", Carry::Drop)];

    pub fn as_str(self) -> &'static str {
        match self {
            Carry::Keep => "keep",
            Carry::Drop => "drop",
        }
    }
}

impl Migration {
    /// The state of this machine an old state path becomes, if the
    /// migration maps it or one of its ancestors: a mapped compound state
    /// carries its descendants along under the same relative path when the
    /// new machine has them.
    pub fn maps_state(&self, machine: &Machine, old_path: &str) -> Option<StateId> {
        if let Some(t) = self.states.get(old_path) {
            return Some(t.target.state);
        }
        let (parent, rest) = old_path.rsplit_once('.')?;
        let base = self.maps_state(machine, parent)?;
        let path = match machine.state(base).path.as_str() {
            "" => rest.to_string(),
            p => format!("{p}.{rest}"),
        };
        machine.find_path(&path)
    }
}

/// A host action that stands for code a front-end could not read: an
/// XState `assign` whose value is JavaScript outside the translated subset,
/// a call of a helper that returns actions (`raiseAndAssign(...)`),
/// `enqueueActions`. Unlike a host action the author names (an effect of
/// unknown idempotency), it may change the context or do anything an action
/// can, so what a replay shows through it shows nothing: a finding whose
/// harm rests on it is undecided.
#[derive(Clone, Debug, PartialEq)]
pub struct OpaquePart {
    /// The host action's name (`inline_L12C7`, or the implementation's).
    pub name: String,
    /// For people: the code and where it is, as the front-end read it
    /// (`` `raiseAndAssign(...)` at src/form.machine.ts:41:7 ``).
    pub what: String,
    pub kind: OpaqueKind,
    pub span: Span,
}

/// What is known of an opaque part.
#[derive(Clone, Debug, PartialEq)]
pub enum OpaqueKind {
    /// An `assign` of these context fields, with values that were not
    /// read; `None` when which fields it writes is not known either. It
    /// performs no effect.
    Assign(Option<Vec<String>>),
    /// Any actions: it may write any field, raise or send events and
    /// perform effects.
    Actions,
    /// The delay of timers, computed by code (XState's `delays: { retry:
    /// ({ context }) => ... }`): the timers are kept, due after
    /// [`OpaqueKind::STAND_IN_DELAY`], so that what they lead to stays
    /// reachable; a run in which one fires rests on that made-up duration.
    /// `span` covers the delayed transitions (`Machine::computed_delays`).
    Delay,
}

impl OpaqueKind {
    /// The duration a delay computed by code stands in with.
    pub const STAND_IN_DELAY: Duration = Duration::from_millis(1000);
}

impl OpaquePart {
    /// Whether it may write the context field `field`.
    pub fn may_write(&self, field: &str) -> bool {
        match &self.kind {
            OpaqueKind::Assign(Some(fields)) => fields.iter().any(|f| f == field),
            OpaqueKind::Assign(None) | OpaqueKind::Actions => true,
            OpaqueKind::Delay => false,
        }
    }
}

/// Where a machine's idempotency facts (event ids, effects and their
/// idempotency, sources, retention) are declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FactSource {
    /// In declarations the author keeps at the top level of our own
    /// formats. Each missing fact is a finding of its own.
    #[default]
    Declarations,
    /// For a machine read from XState, in `meta.idemchart` of its config or
    /// `idemchart.toml`'s `[machines.ID]`, once the repository declares
    /// facts there. Each missing fact is a finding of its own, whose help
    /// says to declare it there.
    XstateDeclarations,
    /// Nowhere: the machine was read from a format that has no place for
    /// them and its repository declares none. The declaration lints say
    /// once per machine how to declare them.
    Nowhere(ForeignFormat),
}

/// A format machines are read from as written, which has no place for
/// idempotency facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForeignFormat {
    /// `meta.idemchart` or `idemchart.toml`'s `[machines.ID]` would hold them.
    Xstate,
    /// Only the machine format would: `idemchart import` converts the chart.
    Scxml,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ContextField {
    pub value: serde_json::Value,
    pub span: Span,
}

/// A sender of events and how long it may redeliver one.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub retry_horizon: Option<Duration>,
    pub description: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Dedup {
    /// How long applied event ids are remembered.
    pub retention: Duration,
    pub span: Span,
}

/// How long the runtime keeps the payloads of applied events.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryKeep {
    /// How long each applied event's payload is kept; `purge` clears it
    /// after that.
    pub keep: Duration,
    pub span: Span,
}

/// Bounds on what one call of the interpreter may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Microsteps one `start`, `send` or `advance_to` may take before it
    /// stops with an error (`Chart::with_microstep_limit`); at least 1.
    pub microsteps: u64,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EventDecl {
    /// The payload field that identifies one delivery.
    pub id_field: Option<Name>,
    pub source: Option<Name>,
    /// The declared payload; `None` when the event declares none, so any field
    /// may be read.
    pub payload: Option<IndexMap<String, PayloadField>>,
    pub description: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PayloadField {
    pub ty: PayloadType,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PayloadType {
    String,
    Number,
    Integer,
    Boolean,
    List,
    Map,
    Any,
}

impl PayloadType {
    pub const ALL: [(&'static str, PayloadType); 7] = [
        ("string", PayloadType::String),
        ("number", PayloadType::Number),
        ("integer", PayloadType::Integer),
        ("boolean", PayloadType::Boolean),
        ("list", PayloadType::List),
        ("map", PayloadType::Map),
        ("any", PayloadType::Any),
    ];

    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map(|(s, _)| *s)
            .unwrap_or("any")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct EffectDecl {
    pub idempotency: Idempotency,
    /// The state that asks the receiver whether the effect already happened.
    pub verify: Option<Target>,
    pub description: Option<String>,
    pub span: Span,
}

/// What the receiver of an effect does with a repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Idempotency {
    /// It recognises the idempotency key the outbox sends.
    Key,
    /// Repeating it changes nothing.
    Natural,
    /// A repeat acts twice.
    None,
}

impl Idempotency {
    pub const ALL: [(&'static str, Idempotency); 3] = [
        ("key", Idempotency::Key),
        ("natural", Idempotency::Natural),
        ("none", Idempotency::None),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Idempotency::Key => "key",
            Idempotency::Natural => "natural",
            Idempotency::None => "none",
        }
    }
}

/// A name as written, with its place.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// The key under its parent (`encendida`); the machine name for the root.
    pub key: String,
    /// Machine-wide id, targeted as `#id`.
    pub id: Option<String>,
    /// Dotted path from the top level (`funcionando.encendida`); empty for the root.
    pub path: String,
    pub kind: StateKind,
    pub parent: Option<StateId>,
    pub children: Vec<StateId>,
    /// Compound states: the default entry (a child, or states deeper down).
    /// History states: the default when no history was recorded yet.
    /// Empty for the others.
    pub initial: Vec<Target>,
    pub entry: Vec<Action>,
    pub exit: Vec<Action>,
    /// Event transitions in document order.
    pub on: Vec<TransitionId>,
    /// Eventless transitions in document order.
    pub always: Vec<TransitionId>,
    /// Delayed transitions in document order.
    pub after: Vec<TransitionId>,
    /// Calls started when the state is entered and cancelled when it is
    /// exited, in document order.
    pub invoke: Vec<Invocation>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    /// Suppressed lints (kebab-case name) with the reason given.
    pub allow: IndexMap<String, Allow>,
    /// Where the state's key was written.
    pub span: Span,
}

/// A call the state makes while it is active (XState's `invoke`): started
/// after the state's entry actions, cancelled when the state is exited, and
/// answered by one completion event, `xstate.done.actor.ID` (payload
/// `output`) or `xstate.error.actor.ID` (payload `error`).
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// Unique among the state's invocations; names its completion events.
    /// The `src` where none was written.
    pub id: Name,
    /// A declared effect, or else a host service whose idempotency is unknown.
    pub src: Name,
    /// Evaluated when the invocation starts.
    pub input: IndexMap<String, Argument>,
    /// The handlers of the completion events, which are also in the state's
    /// `on` (after the transitions written there), where the interpreter
    /// and the analysis find them as any other.
    pub on_done: Vec<TransitionId>,
    pub on_error: Vec<TransitionId>,
    /// Where the invocation was written.
    pub span: Span,
}

/// How an invocation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Completion {
    Done,
    Error,
}

impl Completion {
    const DONE_PREFIX: &'static str = "xstate.done.actor.";
    const ERROR_PREFIX: &'static str = "xstate.error.actor.";

    /// The completion event's name for the invocation `id`.
    pub fn event(self, id: &str) -> String {
        match self {
            Completion::Done => format!("{}{id}", Self::DONE_PREFIX),
            Completion::Error => format!("{}{id}", Self::ERROR_PREFIX),
        }
    }

    /// The payload field the completion carries: `output` or `error`.
    pub fn field(self) -> &'static str {
        match self {
            Completion::Done => "output",
            Completion::Error => "error",
        }
    }

    /// Whether `event` is a completion event, and of which invocation id.
    pub fn of_event(event: &str) -> Option<(Completion, &str)> {
        if let Some(id) = event.strip_prefix(Self::DONE_PREFIX) {
            Some((Completion::Done, id))
        } else {
            event
                .strip_prefix(Self::ERROR_PREFIX)
                .map(|id| (Completion::Error, id))
        }
        .filter(|(_, id)| !id.is_empty())
    }
}

impl Invocation {
    /// The declared effect that performs the call; `None` for a host service.
    pub fn effect<'m>(&self, machine: &'m Machine) -> Option<&'m EffectDecl> {
        machine.effects.get(&self.src.text)
    }

    /// The name of the completion event of this invocation.
    pub fn event(&self, completion: Completion) -> String {
        completion.event(&self.id.text)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateKind {
    Atomic,
    Compound,
    Parallel,
    Final,
    History(HistoryKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HistoryKind {
    Shallow,
    Deep,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Allow {
    pub reason: String,
    pub span: Span,
    /// The text it covers where it was written above transitions (an
    /// XState `// idemchart-allow` comment): findings inside one of these
    /// spans only; empty for the whole state and its descendants.
    pub within: Vec<Span>,
}

/// A resolved reference to a state, as written (`sibling`, `.child`, `#id`).
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub text: String,
    pub state: StateId,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub source: StateId,
    pub trigger: Trigger,
    /// Empty for a targetless transition.
    pub targets: Vec<Target>,
    pub guard: Option<Expr>,
    pub actions: Vec<Action>,
    /// XState v5's `reenter`: a transition to the source or its descendants
    /// exits and re-enters the source.
    pub reenter: bool,
    pub description: Option<String>,
    pub span: Span,
}

impl Transition {
    /// An unguarded transition without actions, `reenter` or description,
    /// written nowhere. For building machines in code.
    pub fn new(source: StateId, trigger: Trigger, targets: Vec<Target>) -> Transition {
        Transition {
            source,
            trigger,
            targets,
            guard: None,
            actions: Vec::new(),
            reenter: false,
            description: None,
            span: Span::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Trigger {
    Event(EventDescriptor),
    Always,
    After(Duration),
}

/// The `on` key: one or more patterns separated by spaces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventDescriptor {
    pub patterns: Vec<EventPattern>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventPattern {
    /// `PAGO`: exactly that event.
    Exact(String),
    /// `foo.*`: `foo` and every event whose dot-separated tokens start with `foo`.
    Prefix(String),
    /// `*`: any event.
    Any,
}

/// Whether `name` is written as it is in a descriptor: letters, digits,
/// `_`, `-` and `:`, in parts separated by `.`. Any other event name is
/// written in backticks there (`` `send syn` ``).
pub fn is_plain_event_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-:".contains(c))
        })
}

/// Whether `name` can name an event (or an invocation) at all: any text
/// but the empty one, a backtick (which quotes names in descriptors) and
/// a line break.
pub fn is_event_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['`', '\n', '\r'])
}

/// `name` as a descriptor writes it: as it is, or in backticks.
fn write_event_name(name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    if is_plain_event_name(name) {
        f.write_str(name)
    } else {
        write!(f, "`{name}`")
    }
}

impl EventPattern {
    /// One pattern of a descriptor, leniently: `*`, `name.*`, `` `name` ``,
    /// `` `name`.* `` or a name. [`EventDescriptor::parse_strict`] says
    /// which texts are valid.
    pub fn parse(text: &str) -> EventPattern {
        if text == "*" {
            return EventPattern::Any;
        }
        if let Some(quoted) = text.strip_prefix('`')
            && let Some((name, rest)) = quoted.split_once('`')
        {
            return match rest {
                ".*" => EventPattern::Prefix(name.to_string()),
                _ => EventPattern::Exact(name.to_string()),
            };
        }
        if let Some(prefix) = text.strip_suffix(".*") {
            EventPattern::Prefix(prefix.to_string())
        } else {
            EventPattern::Exact(text.to_string())
        }
    }

    /// A valid pattern's text: `*`, a plain name or a quoted one (any event
    /// name), either followed by `.*` for a prefix; `None` otherwise.
    fn parse_strict(text: &str) -> Option<EventPattern> {
        if text == "*" {
            return Some(EventPattern::Any);
        }
        if let Some(quoted) = text.strip_prefix('`') {
            let (name, rest) = quoted.split_once('`')?;
            if !is_event_name(name) {
                return None;
            }
            return match rest {
                "" => Some(EventPattern::Exact(name.to_string())),
                ".*" => Some(EventPattern::Prefix(name.to_string())),
                _ => None,
            };
        }
        let (name, prefix) = match text.strip_suffix(".*") {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        if !is_plain_event_name(name) {
            return None;
        }
        Some(if prefix {
            EventPattern::Prefix(name.to_string())
        } else {
            EventPattern::Exact(name.to_string())
        })
    }

    pub fn matches(&self, event: &str) -> bool {
        match self {
            EventPattern::Exact(name) => name == event,
            EventPattern::Prefix(prefix) => event
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.')),
            EventPattern::Any => true,
        }
    }
}

impl EventPattern {
    /// Whether this pattern matches every event `other` matches, named in
    /// the machine or not.
    pub fn covers(&self, other: &EventPattern) -> bool {
        match other {
            EventPattern::Exact(name) => self.matches(name),
            EventPattern::Prefix(prefix) => {
                !matches!(self, EventPattern::Exact(_)) && self.matches(prefix)
            }
            EventPattern::Any => matches!(self, EventPattern::Any),
        }
    }
}

impl std::fmt::Display for EventPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventPattern::Exact(name) => write_event_name(name, f),
            EventPattern::Prefix(prefix) => {
                write_event_name(prefix, f)?;
                f.write_str(".*")
            }
            EventPattern::Any => f.write_str("*"),
        }
    }
}

impl EventDescriptor {
    pub fn parse(text: &str) -> EventDescriptor {
        EventDescriptor {
            patterns: tokens(text).map(EventPattern::parse).collect(),
        }
    }

    /// The descriptor `text` writes, or `None` where a pattern is not
    /// valid (`EventPattern::parse_strict`) or there is none.
    pub fn parse_strict(text: &str) -> Option<EventDescriptor> {
        let patterns = tokens(text)
            .map(EventPattern::parse_strict)
            .collect::<Option<Vec<_>>>()?;
        (!patterns.is_empty()).then_some(EventDescriptor { patterns })
    }

    pub fn matches(&self, event: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(event))
    }
}

/// The patterns of a descriptor: separated by white space, but for the
/// white space inside backticks.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        let mut quoted = false;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                if c == '`' {
                    quoted = !quoted;
                }
                !quoted && c.is_whitespace()
            })
            .map_or(rest.len(), |(i, _)| i);
        let (token, after) = rest.split_at(end);
        rest = after;
        Some(token)
    })
}

/// What a transition is taken on, as messages name it: its event
/// descriptor, `always`, or `after 5s`.
impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Event(descriptor) => descriptor.fmt(f),
            Trigger::Always => f.write_str("always"),
            Trigger::After(delay) => write!(f, "after {delay}"),
        }
    }
}

impl std::fmt::Display for EventDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, pattern) in self.patterns.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{pattern}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Context update; every right-hand side sees the context as it was before.
    Assign {
        fields: IndexMap<String, Assignment>,
        span: Span,
    },
    /// An internal event, processed before the next external one.
    Raise {
        event: Name,
        data: IndexMap<String, Argument>,
        span: Span,
    },
    /// An event for the machine's own external queue, now or after a delay
    /// (SCXML `<send>`); a delayed one can be cancelled by its `id`.
    Send {
        event: Name,
        data: IndexMap<String, Argument>,
        delay: Option<Duration>,
        id: Option<Name>,
        span: Span,
    },
    /// Cancels the pending delayed sends with this id (SCXML `<cancel>`).
    Cancel {
        id: Name,
        span: Span,
    },
    /// A declared effect, dispatched through the outbox.
    Effect {
        name: Name,
        args: IndexMap<String, Argument>,
        span: Span,
    },
    /// A name that is not a declared effect: a host action registered at run
    /// time, whose idempotency is unknown.
    Host {
        name: Name,
        span: Span,
    },
    Log {
        expr: Expr,
        span: Span,
    },
}

impl Action {
    pub fn span(&self) -> Span {
        match self {
            Action::Assign { span, .. }
            | Action::Raise { span, .. }
            | Action::Send { span, .. }
            | Action::Cancel { span, .. }
            | Action::Effect { span, .. }
            | Action::Host { span, .. }
            | Action::Log { span, .. } => *span,
        }
    }
}

/// One `field: expression` of an assign.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub expr: Expr,
    /// Where the field name was written.
    pub span: Span,
}

/// One `name: expression` argument of a raise or an effect.
pub type Argument = Assignment;

impl Machine {
    /// Cuts every vector of the model to its length (`crate::fit`): a
    /// front-end grows them a push at a time (a transition's one action in
    /// room for four), and a large machine's model is kept through the
    /// whole lint, so lowering ends with this.
    pub fn shrink_to_fit(&mut self) {
        use crate::fit;
        fn actions(actions: &mut Vec<Action>) {
            fit::vec(actions);
            for action in actions {
                match action {
                    Action::Assign { fields, .. } => fields.shrink_to_fit(),
                    Action::Raise { data, .. } | Action::Send { data, .. } => data.shrink_to_fit(),
                    Action::Effect { args, .. } => args.shrink_to_fit(),
                    _ => {}
                }
            }
        }
        fit::vec(&mut self.states);
        fit::vec(&mut self.transitions);
        for state in &mut self.states {
            fit::vec(&mut state.children);
            fit::vec(&mut state.initial);
            actions(&mut state.entry);
            actions(&mut state.exit);
            fit::vec(&mut state.on);
            fit::vec(&mut state.always);
            fit::vec(&mut state.after);
            fit::vec(&mut state.invoke);
            fit::vec(&mut state.tags);
        }
        for transition in &mut self.transitions {
            fit::vec(&mut transition.targets);
            actions(&mut transition.actions);
        }
    }

    pub fn state(&self, id: StateId) -> &State {
        &self.states[id.index()]
    }

    pub fn transition(&self, id: TransitionId) -> &Transition {
        &self.transitions[id.index()]
    }

    pub fn root(&self) -> &State {
        &self.states[0]
    }

    /// A host action, guard or service as the author knows it: `` `name` ``
    /// as written, or for one written in place, where it is (`the action
    /// written at src/cart.machine.ts:46:20`).
    pub fn host_name(&self, name: &str) -> String {
        match self.stand_ins.get(name) {
            Some(what) => what.clone(),
            None => format!("`{name}`"),
        }
    }

    /// Whether the name is one a front-end made up for a part written in
    /// place, which the author cannot declare facts of by name.
    pub fn is_stand_in(&self, name: &str) -> bool {
        self.stand_ins.contains_key(name)
    }

    /// The delayed transitions whose delay is computed by code, each with
    /// the index of its opaque part (`OpaqueKind::Delay`).
    pub fn computed_delays(&self) -> Vec<(TransitionId, usize)> {
        let mut found = Vec::new();
        for (i, part) in self.opaque.iter().enumerate() {
            if part.kind != OpaqueKind::Delay {
                continue;
            }
            for (index, t) in self.transitions.iter().enumerate() {
                if matches!(t.trigger, Trigger::After(_))
                    && part.span.start <= t.span.start
                    && t.span.end <= part.span.end
                {
                    found.push((TransitionId(index as u32), i));
                }
            }
        }
        found
    }

    /// The opaque part a host action of this name stands for, if any.
    pub fn opaque_part(&self, name: &str) -> Option<&OpaquePart> {
        self.opaque.iter().find(|p| p.name == name)
    }

    pub fn state_ids(&self) -> impl Iterator<Item = StateId> + '_ {
        (0..self.states.len() as u32).map(StateId)
    }

    /// Every action of the machine: the states' entry and exit actions,
    /// then the transitions'.
    pub fn actions(&self) -> impl Iterator<Item = &Action> + '_ {
        (self.states.iter())
            .flat_map(|s| s.entry.iter().chain(&s.exit))
            .chain(self.transitions.iter().flat_map(|t| &t.actions))
    }

    /// The state's ancestors, nearest first, the root last.
    pub fn ancestors(&self, id: StateId) -> impl Iterator<Item = StateId> + '_ {
        std::iter::successors(self.state(id).parent, |p| self.state(*p).parent)
    }

    /// The state's children that can be active: all but its history
    /// pseudo-states, in document order.
    pub fn substates(&self, id: StateId) -> impl Iterator<Item = StateId> + '_ {
        self.state(id)
            .children
            .iter()
            .copied()
            .filter(|&c| !matches!(self.state(c).kind, StateKind::History(_)))
    }

    /// Whether `a` is `b` or lies inside it.
    pub fn is_descendant_or_self(&self, a: StateId, b: StateId) -> bool {
        a == b || self.ancestors(a).any(|x| x == b)
    }

    /// The state's name for people: its `id` where set, else its dotted path.
    pub fn display_name(&self, id: StateId) -> &str {
        let state = self.state(id);
        state.id.as_deref().unwrap_or(if id == StateId::ROOT {
            &self.name
        } else {
            &state.path
        })
    }

    /// The invocations that can complete with `event`, with their states:
    /// every invocation whose completion event it is.
    pub fn invocations_completed_by<'m>(
        &'m self,
        event: &'m str,
    ) -> impl Iterator<Item = (StateId, &'m Invocation, Completion)> + 'm {
        let completion = Completion::of_event(event);
        self.state_ids()
            .flat_map(move |s| self.state(s).invoke.iter().map(move |i| (s, i)))
            .filter_map(move |(s, i)| {
                let (kind, id) = completion?;
                (i.id.text == id).then_some((s, i, kind))
            })
    }

    /// Whether the transition handles an invocation's completion, written
    /// as its `onDone` or `onError`.
    pub fn completion_handler(&self, t: TransitionId) -> Option<(&Invocation, Completion)> {
        let source = self.state(self.transition(t).source);
        source.invoke.iter().find_map(|i| {
            if i.on_done.contains(&t) {
                Some((i, Completion::Done))
            } else if i.on_error.contains(&t) {
                Some((i, Completion::Error))
            } else {
                None
            }
        })
    }

    /// The state an `in_state` argument names: `#id` or a dotted path from
    /// the top.
    pub fn find_state(&self, text: &str) -> Option<StateId> {
        match text.strip_prefix('#') {
            // One scan: building an index would cost more for a single lookup.
            Some(id) => self
                .state_ids()
                .find(|&s| self.state(s).id.as_deref() == Some(id)),
            None => self.find_path(text),
        }
    }

    /// The migration that moves snapshots of version `from`, if declared.
    pub fn migration_from(&self, from: u64) -> Option<&Migration> {
        self.migrations.iter().find(|m| m.from == from)
    }

    /// The state with this dotted path (`funcionando.encendida`).
    pub fn find_path(&self, path: &str) -> Option<StateId> {
        self.state_ids()
            .find(|&id| self.state(id).path == path && id != StateId::ROOT)
    }
}

impl State {
    /// A state with nothing in it yet: no children, actions, transitions,
    /// id, description, tags or allows, written nowhere. For building
    /// machines in code (tests, generators); the loader fills every field.
    pub fn new(key: &str, path: &str, kind: StateKind, parent: Option<StateId>) -> State {
        State {
            key: key.to_string(),
            id: None,
            path: path.to_string(),
            kind,
            parent,
            children: Vec::new(),
            initial: Vec::new(),
            entry: Vec::new(),
            exit: Vec::new(),
            on: Vec::new(),
            always: Vec::new(),
            after: Vec::new(),
            invoke: Vec::new(),
            description: None,
            tags: Vec::new(),
            allow: IndexMap::new(),
            span: Span::default(),
        }
    }

    pub fn is_atomic(&self) -> bool {
        matches!(self.kind, StateKind::Atomic | StateKind::Final)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_match_as_in_scxml() {
        let d = EventDescriptor::parse("foo.* BAR");
        assert!(d.matches("foo"));
        assert!(d.matches("foo.bar.baz"));
        assert!(!d.matches("foobar"));
        assert!(d.matches("BAR"));
        assert!(!d.matches("BAR.x"));
        assert!(EventDescriptor::parse("*").matches("anything"));
        assert_eq!(d.to_string(), "foo.* BAR");
    }

    #[test]
    fn any_event_name_is_written_in_backticks_where_it_is_not_plain() {
        let d = EventDescriptor::parse_strict("`send syn` BAR `a b`.*").expect("valid");
        assert_eq!(
            d.patterns,
            [
                EventPattern::Exact("send syn".into()),
                EventPattern::Exact("BAR".into()),
                EventPattern::Prefix("a b".into()),
            ]
        );
        assert!(d.matches("send syn") && d.matches("a b.c") && !d.matches("send"));
        assert_eq!(d.to_string(), "`send syn` BAR `a b`.*");
        assert_eq!(EventDescriptor::parse(&d.to_string()), d);
        for bad in ["", "a b*", "`a", "``", "`a`b", "ABRIR*", "a..b"] {
            assert!(EventDescriptor::parse_strict(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn completion_events_name_their_invocation() {
        assert_eq!(Completion::Done.event("cobro"), "xstate.done.actor.cobro");
        assert_eq!(
            Completion::of_event("xstate.error.actor.a.b"),
            Some((Completion::Error, "a.b"))
        );
        assert_eq!(Completion::of_event("xstate.done.actor."), None);
        assert_eq!(Completion::of_event("done.state.a"), None);
    }

    #[test]
    fn patterns_cover_what_they_match_and_no_more() {
        let covers = |a: &str, b: &str| EventPattern::parse(a).covers(&EventPattern::parse(b));
        assert!(covers("*", "*") && covers("*", "foo.*") && covers("*", "BAR"));
        assert!(covers("foo.*", "foo.*") && covers("foo.*", "foo.bar.*"));
        assert!(covers("foo.*", "foo") && covers("foo.*", "foo.bar"));
        assert!(covers("BAR", "BAR"));
        assert!(!covers("foo.*", "*") && !covers("foo.*", "foobar.*"));
        assert!(!covers("foo.bar.*", "foo.*"));
        assert!(!covers("foo", "foo.*") && !covers("BAR", "*") && !covers("BAR", "BAZ"));
    }
}
