//! The linter: idempotency hazards (I codes) and structural problems (S
//! codes) of a loaded machine, each with its position, and for the
//! idempotency hazards a witness that the interpreter replays; and the
//! breaking changes (M codes) between two versions of a machine, which
//! `lint --baseline` reports for the processes stored under the old one.
//!
//! Every lint lives in its own file with its documentation (`declare_lint!`
//! keeps the doc comment as the text `idemchart explain` prints) and is
//! registered by one line in `lints!` below.
//!
//! Suppressions: `allow: { LINT: reason }` on a state suppresses that lint's
//! findings located in the state and in all its descendants, as Rust's
//! `#[allow]` on a module covers the items inside it. A finding about a
//! transition is located in its source state; one about an action, in the
//! state whose transition, entry or exit holds it; findings about the
//! machine's declarations (events, sources, dedup) are located in the root,
//! so only an `allow` on the root suppresses them. An `allow` written above
//! a transition (XState's `// idemchart-allow` comment) covers only the
//! findings inside that transition's text. An `allow` that
//! suppresses nothing is reported as `unused-suppression` (S009), one that
//! names no lint as `unknown-lint` (S010).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use crate::diagnostic::Fix;
use crate::diagnostic::{Diagnostic, Label, Severity, Verdict};
use crate::graph::{EventId, MachineGraph, Search};
use crate::model::{Machine, StateId, Transition, TransitionId, Trigger};
use crate::span::{SourceFile, Span};
use crate::syntax::edit::Editor;

mod analysis;
mod confirm;
mod fact_note;
mod fold;
mod identity_help;
mod loaded;
mod repeat;
mod versions;
mod witness;

pub use fold::fold_covered;

pub use confirm::REPLAY_WORK;
#[cfg(test)]
pub(crate) use confirm::without_reasoning;
pub(crate) use confirm::{Claim, Shape};
pub use loaded::{fix_xstate, fixable_in_place, lint_loaded};
pub use versions::{Change, changes, lint_change};
pub use witness::{Witness, WitnessEnd, WitnessStep};

/// The metadata a lint file declares.
pub(crate) struct Meta {
    code: &'static str,
    severity: Severity,
    /// The doc comment as captured, one space of indentation per line.
    raw_doc: &'static str,
    stage: Stage,
}

/// When a lint runs.
pub(crate) enum Stage {
    /// Loading reports it (S001, S007, S008): a machine with one does not load.
    Load,
    /// It reads the loaded machine.
    Model(fn(&mut Cx)),
    /// It reads the `allow` entries and what they suppressed (and the
    /// file's editor, for fixes, when the text was given).
    Suppressions(fn(&Machine, &Used, Option<&dyn Editor>, &mut Vec<Finding>)),
    /// It compares the machine with an older version of it (`lint
    /// --baseline`), for the processes stored under the old one.
    Change(fn(&mut versions::ChangeCx)),
}

/// Declares a lint in its file: the doc comment above becomes its
/// documentation, then its code, default severity and check function.
macro_rules! declare_lint {
    (
        $(#[doc = $doc:literal])*
        code: $code:literal,
        severity: $severity:ident,
        stage: $stage:expr $(,)?
    ) => {
        pub(super) const META: $crate::lint::Meta = $crate::lint::Meta {
            code: $code,
            severity: $crate::diagnostic::Severity::$severity,
            raw_doc: concat!($($doc, "\n"),*),
            stage: $stage,
        };
    };
}

/// Registers the lints: one line each, variant => module.
macro_rules! lints {
    ($($variant:ident => $module:ident,)*) => {
        $(mod $module;)*

        /// A lint: stable code and kebab-case name (derived from the variant).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Lint {
            $($variant,)*
        }

        impl Lint {
            /// Every lint, in code order.
            pub const ALL: &'static [Lint] = &[$(Lint::$variant,)*];

            fn meta(self) -> &'static Meta {
                match self {
                    $(Lint::$variant => &$module::META,)*
                }
            }

            fn variant_name(self) -> &'static str {
                match self {
                    $(Lint::$variant => stringify!($variant),)*
                }
            }
        }
    };
}

lints! {
    SelfAcceptingEvent => self_accepting_event,
    ReentryRerunsActions => reentry_reruns_actions,
    CycleReenablesEvent => cycle_reenables_event,
    CumulativeUpdate => cumulative_update,
    EffectWithoutKey => effect_without_key,
    EventWithoutId => event_without_id,
    RetentionBelowRetry => retention_below_retry,
    RetryWithoutVerification => retry_without_verification,
    UnknownTarget => unknown_target,
    UnreachableState => unreachable_state,
    ShadowedTransition => shadowed_transition,
    DeadlockState => deadlock_state,
    UndeclaredEvent => undeclared_event,
    EventlessLoop => eventless_loop,
    InvalidExpression => invalid_expression,
    UnknownContextField => unknown_context_field,
    UnusedSuppression => unused_suppression,
    UnknownLint => unknown_lint,
    OpaqueCode => opaque_code,
    StoredStateRemoved => stored_state_removed,
    ContextFieldChanged => context_field_changed,
    EventIdChanged => event_id_changed,
    PendingEffectRenamed => pending_effect_renamed,
    PendingTimerRemoved => pending_timer_removed,
    RetentionShortened => retention_shortened,
    VersionNotBumped => version_not_bumped,
    VersionBumpedWithoutChange => version_bumped_without_change,
    InvalidMigration => invalid_migration,
}

/// Kebab-case names, derived once from the variant names.
static NAMES: LazyLock<Vec<String>> =
    LazyLock::new(|| Lint::ALL.iter().map(|l| kebab(l.variant_name())).collect());

/// The documentation, derived once from the captured doc comments.
static DOCS: LazyLock<Vec<String>> = LazyLock::new(|| {
    Lint::ALL
        .iter()
        .map(|l| {
            let raw = l.meta().raw_doc;
            let mut doc: String = raw
                .lines()
                .map(|line| line.strip_prefix(' ').unwrap_or(line))
                .collect::<Vec<_>>()
                .join("\n");
            doc.push('\n');
            doc
        })
        .collect()
});

fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Lint {
    pub fn code(self) -> &'static str {
        self.meta().code
    }

    pub fn name(self) -> &'static str {
        NAMES[self as usize].as_str()
    }

    pub fn default_severity(self) -> Severity {
        self.meta().severity
    }

    /// The lint's documentation in markdown: What it does, Why is this bad,
    /// Example, Use instead.
    pub fn doc(self) -> &'static str {
        DOCS[self as usize].as_str()
    }

    /// The lint with this kebab-case name or code (`self-accepting-event`, `I001`).
    pub fn from_name_or_code(text: &str) -> Option<Lint> {
        Lint::ALL
            .iter()
            .copied()
            .find(|l| l.name() == text || l.code().eq_ignore_ascii_case(text))
    }

    /// Whether loading reports this lint (the machine does not load).
    pub fn reported_by_loading(self) -> bool {
        matches!(self.meta().stage, Stage::Load)
    }

    /// Whether it is an idempotency lint, whose findings carry a witness.
    pub fn is_idempotency(self) -> bool {
        self.code().starts_with('I')
    }

    /// Whether it compares two versions of a machine, and so runs only
    /// under `lint --baseline`.
    pub fn compares_versions(self) -> bool {
        matches!(self.meta().stage, Stage::Change(_))
    }
}

/// One finding before suppressions and replay.
pub(crate) struct Finding {
    pub lint: Lint,
    pub span: Span,
    /// Where the finding is located, for `allow`.
    pub state: StateId,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub witness: Option<Witness>,
    /// What a graph hazard claims a redelivery does, for the search of a
    /// run that confirms it when the witness's replay does not.
    pub claim: Option<Claim>,
    /// The edits that remove it, when the file's text was given.
    pub fix: Option<Fix>,
}

impl Finding {
    /// Cuts the finding's strings and vectors to their length
    /// (`crate::fit`): a large machine's findings, by the hundred thousand,
    /// are all held until the replays.
    fn shrink_to_fit(&mut self) {
        use crate::fit;
        fit::vec(&mut self.labels);
        if let Some(fix) = &mut self.fix {
            fit::vec(&mut fix.edits);
        }
        let texts = (self.help.iter_mut())
            .chain(std::iter::once(&mut self.message))
            .chain(self.labels.iter_mut().map(|l| &mut l.message))
            .chain(self.fix.iter_mut().flat_map(|fix| {
                std::iter::once(&mut fix.message)
                    .chain(fix.edits.iter_mut().map(|e| &mut e.replacement))
            }));
        for text in texts {
            fit::string(text);
        }
        if let Some(witness) = &mut self.witness {
            fit::vec(&mut witness.steps);
        }
        if let Some(claim) = &mut self.claim {
            fit::vec(&mut claim.taking);
        }
    }
}

/// A path that drives a sibling region, shared by the witnesses that use it.
type DrivePath = std::rc::Rc<[petgraph::graph::EdgeIndex]>;

/// A memo per transition, keyed by a few values (most transitions have one).
type PerTransition<K, V> = Vec<Vec<(K, V)>>;

/// What the checks share: the machine, its graph views, and what was
/// computed once for all of them.
pub(crate) struct Cx<'m> {
    pub machine: &'m Machine,
    pub graph: MachineGraph<'m>,
    /// Search from the initial configuration.
    pub reach: Search,
    /// Component of every node of the transition graph.
    pub components: Vec<u32>,
    /// What the lints read from each transition.
    pub facts: Vec<repeat::Facts>,
    pub findings: Vec<Finding>,
    /// Each event's declaration, by event.
    decls: Vec<Option<&'m crate::model::EventDecl>>,
    /// By event, the set of seen ids that the first identity guard on it
    /// (in document order) tests: the one a finding's help extends.
    pub identity_sets: Vec<Option<String>>,
    /// Memos per transition: the repeat's acceptor per event, the leaf
    /// that selects it per event.
    immediate: RefCell<PerTransition<EventId, Option<repeat::Acceptor>>>,
    selecting: RefCell<PerTransition<Option<EventId>, Option<StateId>>>,
    scratch: RefCell<crate::graph::Scratch>,
    /// Paths that drive a sibling region to a transition's source, by
    /// region and transition (`Cx::sibling_drive`).
    drives: RefCell<HashMap<(StateId, TransitionId), DrivePath>>,
    /// Two-layer searches left (`repeat::LAYERED_SEARCHES`).
    layered_searches: std::cell::Cell<usize>,
    /// The suppressions that covered uses dropped by `Cx::allows`.
    allowed_uses: Used,
    /// The chart the replays run, compiled on the first replay.
    replay_chart: std::cell::OnceCell<confirm::ReplayChart>,
    /// `machine`, when its caller shares it: the replays' chart holds it
    /// rather than a copy (a large model is many times its file's size).
    shared: Option<Arc<Machine>>,
    /// The file the machine was loaded from, for the lints that attach
    /// fixes, and its editor, made on the first fix (it parses the text).
    source: Option<&'m SourceFile>,
    editor: std::cell::OnceCell<Option<Box<dyn Editor + 'm>>>,
    /// Set by another thread to stop the run (`lint_source_cancellable`).
    cancel: Option<&'m AtomicBool>,
}

/// `Cx::identity_sets`, in one pass over the transitions: reading every
/// transition for each finding made the help quadratic in the machine.
fn identity_sets(graph: &MachineGraph, facts: &[repeat::Facts]) -> Vec<Option<String>> {
    let mut sets = vec![None; graph.events.len()];
    for (t, facts) in facts.iter().enumerate() {
        let Some((_, set)) = facts.identity.first() else {
            continue;
        };
        for event in graph.trigger_events(TransitionId(t as u32)) {
            sets[event.index()].get_or_insert_with(|| set.clone());
        }
    }
    sets
}

impl<'m> Cx<'m> {
    fn new(machine: &'m Machine, source: Option<&'m SourceFile>) -> Cx<'m> {
        let graph = MachineGraph::new(machine);
        let root = graph.enter(StateId::ROOT);
        // History may restore only what was active before, so the search
        // from the start does not use restore edges: what they reach was
        // reached without them. Nor does it use sibling hubs, which reach
        // nothing new either, and whose edges do not count the events that
        // drive the sibling first: distances from the start stay exact.
        let reach = graph.search(
            &[root],
            |_, e| e != crate::graph::Edge::History && e != crate::graph::Edge::Sibling,
            |_| false,
            usize::MAX,
        );
        let components = graph.components();
        let entry_exit = repeat::EntryExitWrites::of(machine);
        let facts: Vec<repeat::Facts> = (0..machine.transitions.len() as u32)
            .map(|t| repeat::Facts::of(&graph, &entry_exit, TransitionId(t)))
            .collect();
        let decls = graph
            .events
            .names
            .iter()
            .map(|name| machine.events.get(name))
            .collect();
        let transitions = machine.transitions.len();
        let identity_sets = identity_sets(&graph, &facts);
        Cx {
            machine,
            graph,
            reach,
            components,
            facts,
            findings: Vec::new(),
            decls,
            identity_sets,
            immediate: RefCell::new(vec![Vec::new(); transitions]),
            selecting: RefCell::new(vec![Vec::new(); transitions]),
            scratch: RefCell::default(),
            drives: RefCell::default(),
            layered_searches: std::cell::Cell::new(repeat::LAYERED_SEARCHES),
            allowed_uses: Used::new(),
            replay_chart: std::cell::OnceCell::new(),
            shared: None,
            source,
            editor: std::cell::OnceCell::new(),
            cancel: None,
        }
    }

    /// Whether the caller asked the run to stop: the replays then end at
    /// their next send, and `run` returns nothing.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// The editor of the file the machine was loaded from, when its text
    /// was given: a lint that can repair its finding writes the fix with it.
    pub fn editor(&self) -> Option<&dyn Editor> {
        self.editor
            .get_or_init(|| self.source.and_then(crate::fix::editor))
            .as_deref()
    }

    /// Whether some run from the start makes the state active.
    pub fn reachable(&self, state: StateId) -> bool {
        self.reach.reached(self.graph.at(state)) || self.reach.reached(self.graph.enter(state))
    }

    /// Whether some run from the start may take the transition.
    pub fn transition_reachable(&self, t: TransitionId) -> bool {
        self.reach
            .reached(self.graph.at(self.machine.transition(t).source))
    }

    /// The transitions on an event that some run from the start may take, in
    /// document order: where a redelivery can do harm.
    pub fn reachable_event_transitions(&self) -> Vec<(TransitionId, &'m Transition)> {
        let machine: &'m Machine = self.machine;
        (0..machine.transitions.len() as u32)
            .map(TransitionId)
            .filter(|&t| self.transition_reachable(t))
            .map(|t| (t, machine.transition(t)))
            .filter(|(_, t)| matches!(t.trigger, Trigger::Event(_)))
            .collect()
    }

    pub fn report(&mut self, mut finding: Finding) {
        finding.shrink_to_fit();
        self.findings.push(finding);
    }

    /// Whether an `allow` of `lint` covers `state`, counted as used when it
    /// does. A finding about a declaration that lists its uses (I005) drops
    /// the uses located in allowed states, as a finding per use would be
    /// suppressed there.
    pub fn allows(&mut self, lint: Lint, state: StateId, span: Span) -> bool {
        match covering(self.machine, lint, state, span) {
            Some(key) => {
                *self.allowed_uses.entry(key).or_default() += 1;
                true
            }
            None => false,
        }
    }

    /// The chart the replays run, shared by every replayer of this lint run.
    pub fn replay_chart(&self) -> &confirm::ReplayChart {
        self.replay_chart.get_or_init(|| match &self.shared {
            Some(shared) => confirm::ReplayChart::new(Arc::clone(shared)),
            None => confirm::ReplayChart::new(Arc::new(self.machine.clone())),
        })
    }

    /// The declaration of an event, if it is declared.
    pub fn decl(&self, event: EventId) -> Option<&'m crate::model::EventDecl> {
        self.decls[event.index()]
    }
}

/// What `lint_with` reports besides the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Also report the graph hazards (I001–I004, I008) that are proved
    /// impossible, with `Verdict::Refuted` and the proof.
    pub show_refuted: bool,
}

/// Whether the lint is a graph hazard, whose findings the replay decides.
pub fn is_graph_hazard(lint: Lint) -> bool {
    matches!(
        lint,
        Lint::SelfAcceptingEvent
            | Lint::ReentryRerunsActions
            | Lint::CycleReenablesEvent
            | Lint::CumulativeUpdate
            | Lint::RetryWithoutVerification
    )
}

/// Every finding of the machine at its lint's default severity, with
/// suppressions applied and witnesses replayed, sorted by position. A graph
/// hazard proved impossible is not reported (see `lint_with`); one that no
/// run of the interpreter shows, unproved, is a note.
///
/// ```
/// use idemchart::syntax::{Syntax, parse};
///
/// // A toggle accepts its own event again: a redelivered TOGGLE undoes the first.
/// let machine = parse(
///     "machine: lamp\ninitial: off\nstates:\n  off: { on: { TOGGLE: on } }\n  on: { on: { TOGGLE: off } }\n",
///     Syntax::Yaml,
/// ).unwrap();
/// let findings = idemchart::lint::lint(&machine);
/// assert!(findings.iter().any(|d| {
///     d.code == "I001" && d.verdict == Some(idemchart::Verdict::Confirmed)
/// }));
/// ```
pub fn lint(machine: &Machine) -> Vec<Diagnostic> {
    lint_with(machine, &Options::default())
}

/// The transitions each step of a finding's witness takes, found by playing
/// the witness on the interpreter from the start (a diagram draws them);
/// an error names a step that is neither an event, a timer nor a loop turn
/// the replay took.
pub fn witness_transitions(
    machine: &Machine,
    finding: &Diagnostic,
) -> Result<Vec<Vec<TransitionId>>, String> {
    let cx = Cx::new(machine, None);
    let retry = Lint::from_name_or_code(finding.code) == Some(Lint::RetryWithoutVerification);
    confirm::Replayer::new(&cx).steps_taken(&finding.witness, retry)
}

/// `lint`, with the refuted findings too when `options` asks for them.
pub fn lint_with(machine: &Machine, options: &Options) -> Vec<Diagnostic> {
    run(machine, None, options, None).unwrap_or_default()
}

/// `lint_with` on a machine loaded from `file`, whose findings carry the
/// fixes that remove them where their lint knows one (`crate::fix`): edits
/// of `file`'s text. A file whose syntax its name does not tell gets no
/// fixes.
///
/// ```
/// use idemchart::span::SourceFile;
///
/// let file = SourceFile::new(
///     "lamp.yaml",
///     "machine: lamp\ninitial: off\nstates:\n  off: { on: { PRESS: on } }\n  on: {}\n",
/// );
/// let machine = idemchart::load::load(&file).unwrap();
/// let findings = idemchart::lint::lint_source(&machine, &file, &Default::default());
/// let undeclared = findings.iter().find(|d| d.code == "S005").unwrap();
/// let fix = undeclared.fix.as_ref().unwrap();
/// let fixed = idemchart::fix::apply(&file.text, &[fix]).text;
/// assert!(fixed.starts_with("machine: lamp\nevents:\n  PRESS: {}\ninitial: off\n"));
/// ```
pub fn lint_source(machine: &Machine, file: &SourceFile, options: &Options) -> Vec<Diagnostic> {
    run(machine, Some(file), options, None).unwrap_or_default()
}

/// `lint_source` that another thread can stop: once `cancel` is set, the
/// run ends at its next check (between lints, findings and replayed
/// events) and gives `None`. The language server sets it when a newer
/// edit makes the run's text stale.
pub fn lint_source_cancellable(
    machine: &Machine,
    file: &SourceFile,
    options: &Options,
    cancel: &AtomicBool,
) -> Option<Vec<Diagnostic>> {
    run(machine, Some(file), options, Some(cancel))
}

/// `lint_source` (stopped by `cancel`, when given) on a machine its caller
/// shares: the chart the replays run holds it instead of a copy of its own.
pub fn lint_source_shared(
    machine: &Arc<Machine>,
    file: &SourceFile,
    options: &Options,
    cancel: Option<&AtomicBool>,
) -> Option<Vec<Diagnostic>> {
    let mut cx = Cx::new(machine, Some(file));
    cx.shared = Some(Arc::clone(machine));
    cx.cancel = cancel;
    run_in(cx, options).map(|(diagnostics, _)| diagnostics)
}

/// `lint_with`, and the interpreter work its replays and searches did, in
/// microsteps as the replay budget counts them (at most `REPLAY_WORK`): for
/// the tests and benchmarks that check the budget holds.
pub fn lint_counting_replay_work(machine: &Machine, options: &Options) -> (Vec<Diagnostic>, usize) {
    run_counted(machine, None, options, None).unwrap_or_default()
}

fn run<'m>(
    machine: &'m Machine,
    source: Option<&'m SourceFile>,
    options: &Options,
    cancel: Option<&'m AtomicBool>,
) -> Option<Vec<Diagnostic>> {
    run_counted(machine, source, options, cancel).map(|(diagnostics, _)| diagnostics)
}

/// What ends the message of a finding the replay did not confirm: where it
/// was not shown, or what it rests on; empty for the others.
fn account_suffix(verdict: Option<Verdict>, account: Option<&str>) -> String {
    match (verdict, account) {
        (Some(Verdict::NotShown), Some(why)) => format!(" (not shown: {why})"),
        (Some(Verdict::Undecided), Some(why)) => format!(" (undecided: {why})"),
        _ => String::new(),
    }
}

/// The findings, and the replays' work (`confirm::ReplayChart::work_done`).
fn run_counted<'m>(
    machine: &'m Machine,
    source: Option<&'m SourceFile>,
    options: &Options,
    cancel: Option<&'m AtomicBool>,
) -> Option<(Vec<Diagnostic>, usize)> {
    run_with(machine, source, None, options, cancel)
}

/// The findings and the replays' work, with the editor of `source` given
/// (`Some`), or made from it when first asked for (`None`).
fn run_with<'m>(
    machine: &'m Machine,
    source: Option<&'m SourceFile>,
    editor: Option<Option<Box<dyn Editor + 'm>>>,
    options: &Options,
    cancel: Option<&'m AtomicBool>,
) -> Option<(Vec<Diagnostic>, usize)> {
    let mut cx = Cx::new(machine, source);
    if let Some(editor) = editor {
        let _ = cx.editor.set(editor);
    }
    cx.cancel = cancel;
    run_in(cx, options)
}

/// The findings of the run `cx` is set up for, and the replays' work.
fn run_in(mut cx: Cx<'_>, options: &Options) -> Option<(Vec<Diagnostic>, usize)> {
    let (machine, source) = (cx.machine, cx.source);
    for lint in Lint::ALL {
        if let Stage::Model(check) = lint.meta().stage {
            if cx.cancelled() {
                return None;
            }
            check(&mut cx);
        }
    }
    let findings = std::mem::take(&mut cx.findings);
    let (mut kept, mut used) = suppress(machine, findings);
    for (key, count) in std::mem::take(&mut cx.allowed_uses) {
        *used.entry(key).or_default() += count;
    }
    let mut about_allows = Vec::new();
    for lint in Lint::ALL {
        if let Stage::Suppressions(check) = lint.meta().stage {
            check(machine, &used, cx.editor(), &mut about_allows);
        }
    }
    let (more, _) = suppress(machine, about_allows);
    kept.extend(more);
    // Every fix is made: the editor and what it read (the YAML node tree)
    // are not held through the replays.
    drop(cx.editor.take());
    if let Some(source) = source {
        source.release_derived();
    }

    // Replays go in the order of the file, so that a budget spent on a
    // large machine covers its first findings.
    kept.sort_by_key(|f| (f.span.start, f.span.end, f.lint));
    // The findings are taken from the end of a reversed buffer, which is
    // cut to its length each time half of it is used: a finding is not
    // held beside the diagnostic it becomes.
    kept.reverse();
    crate::fit::vec(&mut kept);
    let mut replayer = confirm::Replayer::new(&cx);
    let mut diagnostics: Vec<Diagnostic> = Vec::with_capacity(kept.len());
    while let Some(f) = kept.pop() {
        if kept.len() < kept.capacity() / 2 {
            crate::fit::vec(&mut kept);
        }
        if cx.cancelled() {
            return None;
        }
        let replay = replayer.confirm(f.lint, f.witness.as_ref(), f.claim.as_ref());
        let hazard = is_graph_hazard(f.lint);
        if hazard && replay.verdict == Some(Verdict::Refuted) && !options.show_refuted {
            continue;
        }
        // A declaration lint stands without a witness; one whose replay
        // shows no harm is left out rather than shown refuted.
        let unshown =
            !hazard && (replay.verdict == Some(Verdict::Refuted) || replay.showed_nothing());
        let replay = if unshown {
            confirm::Replay::default()
        } else {
            replay
        };
        let witness = match (replay.witness, &f.witness) {
            (Some(found), _) => found,
            (None, Some(w)) if !unshown => w.render(&cx.graph),
            _ => Vec::new(),
        };
        let mut message = f.message;
        let suffix = account_suffix(replay.verdict, replay.account.as_deref());
        // Each diagnostic is kept until the report is written, a large
        // machine's by the hundred thousand: none keeps more room than its
        // text (the finding's was cut when it was reported).
        message.reserve_exact(suffix.len());
        message.push_str(&suffix);
        let mut witness = witness;
        crate::fit::vec(&mut witness);
        let mut replay_account = replay.account;
        if let Some(account) = &mut replay_account {
            crate::fit::string(account);
        }
        // A graph hazard that no run shows, and none is proved impossible,
        // is a note: its reader can declare the fact or raise the bound
        // that its message names, and CI does not fail on it.
        let severity = if fact_note::is_note(machine, f.lint)
            || (hazard && replay.verdict == Some(Verdict::NotShown))
        {
            Severity::Note
        } else {
            f.lint.default_severity()
        };
        diagnostics.push(Diagnostic {
            code: f.lint.code(),
            name: f.lint.name(),
            severity,
            message,
            span: f.span,
            labels: f.labels,
            help: f.help,
            witness,
            verdict: replay.verdict,
            replay: replay_account,
            fix: f.fix,
        });
    }
    let work = cx
        .replay_chart
        .get()
        .map_or(0, confirm::ReplayChart::work_done);
    // The replays' chart and memos are not held through the sort.
    drop(replayer);
    drop(cx);
    diagnostics.sort_by(|a, b| {
        (a.span.start, a.span.end, a.code, &a.message).cmp(&(
            b.span.start,
            b.span.end,
            b.code,
            &b.message,
        ))
    });
    Some((diagnostics, work))
}

/// A suppression in force: the state and the lint name as written.
pub(crate) type Suppression = (StateId, String);

/// How many findings each suppression suppressed.
pub(crate) type Used = HashMap<Suppression, usize>;

/// Drops the findings an `allow` covers; returns the rest and the
/// suppressions that were used. The findings stay in their own buffer: a
/// large machine has a finding per few states, and a second buffer for
/// the kept ones would hold them all twice at once.
fn suppress(machine: &Machine, mut findings: Vec<Finding>) -> (Vec<Finding>, Used) {
    let mut used = Used::new();
    findings.retain(
        |finding| match covering(machine, finding.lint, finding.state, finding.span) {
            Some(key) => {
                *used.entry(key).or_default() += 1;
                false
            }
            None => true,
        },
    );
    (findings, used)
}

/// The `allow` of `lint` on `state` or its nearest ancestor that has one
/// and covers `span` (a finding's or a use's place): all of the state, or
/// the transitions it was written above.
fn covering(machine: &Machine, lint: Lint, state: StateId, span: Span) -> Option<Suppression> {
    std::iter::once(state)
        .chain(machine.ancestors(state))
        .find_map(|s| {
            machine
                .state(s)
                .allow
                .iter()
                .find(|(name, allow)| {
                    Lint::from_name_or_code(name) == Some(lint)
                        && (allow.within.is_empty()
                            || allow
                                .within
                                .iter()
                                .any(|w| w.start <= span.start && span.end <= w.end))
                })
                .map(|(name, _)| (s, name.clone()))
        })
}

#[cfg(test)]
mod tests;
