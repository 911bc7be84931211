//! Confirmation: replaying a witness in the interpreter, on its virtual
//! clock, with and without the repeated delivery, and the verdict of each
//! finding (`Verdict`: confirmed, refuted, not shown, undecided).
//!
//! Every delivery gets a fresh id and a synthesized payload (`deliveries`:
//! the id field set to that id, other fields from their declared types, or
//! from what the guards and actions read). Where a delivery was meant to
//! take a transition, the payloads are tried in turn until one does. When
//! that shows nothing, the witness is played again with the payload the
//! reasoning chose first (`reason`: the guards on the witness's path, read
//! back through the assigns it runs down to the payload fields, solved).
//! The repeat reuses the earlier delivery's id and payload.
//! The finding is confirmed when the repeat changes the configuration or the
//! context or emits an effect; for a retry (I008), when the last step emits
//! the effect again.
//!
//! A host guard is answered by the host alone, which a replay does not
//! have: where a replay asks one (a witness that passes it, or a handler
//! of the repeat behind it), the verdict could be wrong either way, so the
//! finding is undecided.
//!
//! So it is with an opaque part (`model::OpaquePart`: an `assign` or a
//! helper the XState translator could not read), which the replay performs
//! as a host action that does nothing. A run in which one ran that may
//! write what the machine reads, or may do anything, is not the machine's
//! run; and a repeat whose only change is performing one shows nothing.
//! Either way the finding rests on the part, and it is undecided, the part
//! named. A repeat that changes the configuration, the context or performs
//! an effect by translated code alone, in a run where no such part ran,
//! confirms as before.
//!
//! Replays are bounded: at most `MAX_REPLAYS` per lint and machine (the
//! findings nearest the top of the file first) and `MAX_STEPS` steps per
//! witness, past which no replay is made and the finding is not shown, that
//! bound named; and each step at `REPLAY_MICROSTEPS` microsteps, so that a
//! machine that loops on its own stops instead of hanging the linter. That
//! is how an S006 loop is confirmed: the last step of its witness runs out
//! of them. All the replays and searches of one lint run together do at
//! most `REPLAY_WORK` microsteps, counted, not timed; past it a finding is
//! not shown, with that reason.
//!
//! The graph's witness is one path among many, and the graph does not see
//! guards, the context or whether a sibling region really is where a path
//! assumes. When its replay shows nothing, the finding's `Claim` (which
//! transition the first delivery takes, and where the repeat may come) is
//! first checked for a proof that no run shows it (`proof`, `reason::refused`):
//! then it is refuted, and `lint` does not report it. Else it is searched
//! for among the interpreter's own runs (`search`): breadth-first over the
//! configurations the machine reaches from its start (`Explorer`, built once
//! per machine and bounded), then, from each one where the claim's
//! transition can be taken, the reasoned payload, a few synthesized ones and
//! continuations. A run found there replaces the witness and confirms the
//! finding. A search that finds none refutes the claim only where it
//! explored every configuration of a machine blind to payloads
//! (`explored_refutes`); else the finding is not shown, a note that names
//! the bound the search stopped at or the guard no payload passed.

mod deliveries;
mod proof;
mod reason;
mod search;

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Cx;
use super::analysis;
use super::witness::{Witness, WitnessEnd, WitnessStep};
use crate::diagnostic::Verdict;
use crate::expr::{Event, Value};
use crate::graph::EventId;
use crate::interp::{Actor, Chart};
use crate::model::{Duration, PayloadType, StateId, TransitionId};

use deliveries::{ComparedLiterals, for_each_expr};
#[cfg(test)]
pub(crate) use proof::entry_set;

/// Runs `f` with the reasoning about payloads off, as the replay was
/// before it: for the tests that show what it changes.
#[cfg(test)]
pub(crate) fn without_reasoning<T>(f: impl FnOnce() -> T) -> T {
    reason::WITHOUT_REASONING.with(|off| off.set(true));
    let out = f();
    reason::WITHOUT_REASONING.with(|off| off.set(false));
    out
}
use proof::MoveCosts;
use search::Explorer;

const MAX_REPLAYS: usize = 500;
/// One budget per lint.
const LINTS: usize = super::Lint::ALL.len();
const MAX_STEPS: usize = 200;
/// The interpreter's microstep budget per step of a replay.
pub(super) const REPLAY_MICROSTEPS: usize = 1_000;
/// Payload variants tried per delivery.
const VARIANTS: usize = 3;
/// The configurations the explorer reaches from the start, at most, and the
/// moves (deliveries and timers) it takes to reach one.
const EXPLORE_STATES: usize = 2_000;
const EXPLORE_DEPTH: usize = 8;
/// Per claim: the explored configurations tried as the place of the first
/// delivery, and the configurations a continuation visits after it.
const CLAIM_STARTS: usize = 64;
const CONTINUATION_STATES: usize = 48;
const CONTINUATION_DEPTH: usize = 4;
/// The most events the search for one claim sends.
const CLAIM_SENDS: usize = 3_000;
/// The most events the search directed at one claim's sources sends
/// (`Replayer::find_directed`), out of the exploration's.
const DIRECTED_SENDS: usize = 512;
/// Events sent by all searches of one lint run: what bounds the search on a
/// machine with thousands of findings. A send costs about as much as the
/// machine is large, so a large machine gets fewer: `SEARCH_WORK` divided by
/// its number of states, at most `SEARCH_SENDS` (a machine of up to 50
/// states gets them all).
const SEARCH_SENDS: usize = 60_000;
const SEARCH_WORK: usize = 3_000_000;
/// The interpreter's work that all replays and searches of one lint run may
/// do together, in microsteps (`step_work`). Counting sends does not bound
/// it: a send on which the machine loops until its microsteps run out does
/// `REPLAY_MICROSTEPS` times the work of one that takes a transition.
pub const REPLAY_WORK: usize = 250_000;
/// The part of `REPLAY_WORK` past which the searches for other runs stop:
/// the rest is kept for the witnesses replayed after them, each of which
/// costs far less than a search.
const SEARCH_MICROSTEPS: usize = REPLAY_WORK / 2;

/// What a finding claims a redelivery does, for the search of a run that
/// confirms it.
#[derive(Clone, Debug)]
pub(crate) struct Claim {
    pub event: EventId,
    /// The first delivery takes one of these; any transition when empty.
    pub taking: Vec<TransitionId>,
    pub shape: Shape,
    /// For a retry, the effect performed again.
    pub effect: Option<String>,
}

impl Claim {
    /// The states the first delivery is taken in: the sources of `taking`.
    fn sources(&self, m: &crate::model::Machine) -> Vec<StateId> {
        (self.taking.iter())
            .map(|&t| m.transition(t).source)
            .collect()
    }

    /// For a retry, the effect performed again.
    fn retried(&self) -> Option<&str> {
        self.effect
            .as_deref()
            .filter(|_| self.shape == Shape::Retry)
    }
}

/// Where the repeat comes, and what it must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Right after the first delivery (I001).
    Immediate,
    /// After other steps (I003).
    Later,
    /// Either (I004).
    Any,
    /// Anywhere after it, taking this transition (I002).
    Takes(TransitionId),
    /// Not a repeat: the delivery takes one of `taking` and performs the
    /// claim's `effect` again, after a run that performed it (I008).
    Retry,
}

/// What the replay said of a finding.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// `None` when no replay was made.
    pub verdict: Option<Verdict>,
    /// The witness as rendered, when a run other than the graph's confirmed
    /// it, or when the reasoning chose a payload of one of its deliveries.
    pub witness: Option<Vec<String>>,
    /// What refuted the finding, where it was not shown, or why there is
    /// no verdict.
    pub account: Option<String>,
    /// Not shown because a bound stopped the replay before it played the
    /// witness (the work budget, a witness too long), rather than because
    /// the runs it played showed nothing.
    pub bounded: bool,
    /// When the witness was not shown: what the reasoning found of its
    /// path, which names the guard no payload passed (`unsatisfied`), asked
    /// only when the account is written.
    reasoning: Option<reason::Reasoning>,
}

impl Replay {
    fn confirmed(witness: Option<Vec<String>>) -> Replay {
        Replay {
            verdict: Some(Verdict::Confirmed),
            witness,
            ..Replay::default()
        }
    }

    fn refuted(why: impl Into<String>) -> Replay {
        Replay {
            verdict: Some(Verdict::Refuted),
            account: Some(why.into()),
            ..Replay::default()
        }
    }

    /// No run the replay played shows it, for the reason given.
    fn not_shown(why: impl Into<String>) -> Replay {
        Replay {
            verdict: Some(Verdict::NotShown),
            account: Some(why.into()),
            ..Replay::default()
        }
    }

    /// Not shown: a bound stopped the replay before it could play the run.
    fn bounded(why: impl Into<String>) -> Replay {
        Replay {
            bounded: true,
            ..Replay::not_shown(why)
        }
    }

    fn undecided(why: impl Into<String>) -> Replay {
        Replay {
            verdict: Some(Verdict::Undecided),
            account: Some(why.into()),
            ..Replay::default()
        }
    }

    /// Whether the runs played showed nothing (rather than a bound, a host
    /// guard or an opaque part deciding).
    pub(super) fn showed_nothing(&self) -> bool {
        self.verdict == Some(Verdict::NotShown) && !self.bounded
    }
}

/// The chart replays run and the actor in its initial configuration,
/// compiled once per lint run and shared by every `Replayer` of it (the
/// declaration lints replay too): compiling a large machine is not cheap.
pub(crate) struct ReplayChart {
    /// Set by every host guard a replay asks; the chart's stand-ins for
    /// the host's implementations only record that they were asked.
    asked_host: Arc<AtomicBool>,
    /// The actor in its initial configuration, cloned for each replay.
    started: Actor,
    /// Whether starting the machine already asked a host guard.
    start_asked_host: bool,
    /// The work the replayers of this lint run have done, against
    /// `REPLAY_WORK`.
    work_done: Cell<usize>,
}

impl ReplayChart {
    pub fn new(machine: Arc<crate::model::Machine>) -> ReplayChart {
        let asked_host = Arc::new(AtomicBool::new(false));
        let mut builder = Chart::builder(Arc::clone(&machine));
        for guard in &machine.guards {
            let asked = Arc::clone(&asked_host);
            builder = builder.guard(&guard.text, move |_| {
                asked.store(true, Ordering::Relaxed);
                false
            });
        }
        // Every declared guard has its stand-in and no action is
        // registered, so building cannot fail; the plain chart is as good
        // a replay for a machine whose guards it would not ask.
        let chart = builder
            .build()
            .unwrap_or_else(|_| Chart::new(Arc::clone(&machine)));
        // A machine's own lower budget holds in the replay too.
        let limit = chart.microstep_limit().min(REPLAY_MICROSTEPS);
        let chart = Arc::new(chart.with_microstep_limit(limit));
        let started = Actor::new(Arc::clone(&chart));
        let start_asked_host = asked_host.load(Ordering::Relaxed);
        ReplayChart {
            asked_host,
            started,
            start_asked_host,
            work_done: Cell::new(0),
        }
    }

    /// The work the replays of this lint run have done, in microsteps: at
    /// most `REPLAY_WORK` and the few sends that follow its last check.
    pub fn work_done(&self) -> usize {
        self.work_done.get()
    }
}

/// What a step cost the interpreter, as `REPLAY_WORK` counts it: the
/// transitions it took, at least one; all of its microsteps when it ran out
/// of them.
fn step_work(step: &crate::interp::Step) -> usize {
    step.unsettled
        .as_ref()
        .map_or(step.transitions.len(), |u| u.limit)
        .max(1)
}

/// Why a replay the work budget cut short has no verdict.
fn work_spent_account() -> String {
    format!("the replay budget of {REPLAY_WORK} interpreter microsteps per lint run is spent")
}

pub(super) struct Replayer<'a, 'm> {
    cx: &'a Cx<'m>,
    shared: &'a ReplayChart,
    budget: [usize; LINTS],
    asked_host: &'a AtomicBool,
    start_asked_host: bool,
    fields: HashMap<EventId, Vec<(String, Option<PayloadType>)>>,
    /// The configurations reached from the start, breadth-first; started
    /// on the first search.
    explored: Option<Explorer>,
    /// Events the searches may still send.
    sends_left: usize,
    /// Events the searches directed at a claim's sources may still send
    /// (`find_directed`); set with the exploration's.
    directed_left: usize,
    /// Set by `performs_again`: the effect a repeat must perform to confirm.
    performed: Option<String>,
    /// By event, the literals its handlers' guards compare each payload
    /// field with (`compared`).
    compared: Option<HashMap<EventId, ComparedLiterals>>,
    /// Synthesized deliveries by event, index and payload variant: the
    /// searches ask for the same ones again and again.
    events: HashMap<(EventId, usize, usize), Event, foldhash::fast::FixedState>,
    /// `variants`, by event and index: every configuration that accepts
    /// the event asks for them.
    variant_sets: HashMap<(EventId, usize), Rc<[Event]>, foldhash::fast::FixedState>,
    /// `holds_only_ids`, by context field.
    id_sets: HashMap<String, bool>,
    /// `entered_by_new_deliveries`, once asked.
    entered: Option<Rc<[bool]>>,
    /// `fewest_moves_to_enter` and `move_costs`, once asked.
    fewest_moves: Option<Rc<[usize]>>,
    move_costs: Option<Rc<MoveCosts>>,
    /// The machine's opaque parts, by host action name, each with whether
    /// it may write what the machine reads (a run it ran in is not the
    /// machine's); empty for most machines.
    opaque: HashMap<String, (usize, bool)>,
    /// The timers whose delay is computed by code, with their opaque
    /// parts (`Machine::computed_delays`); empty for most machines.
    computed_delays: Vec<(TransitionId, usize)>,
    /// The first opaque part a step performed since `reset_opaque` that
    /// may write what the machine reads, by index.
    opaque_ran: Cell<Option<usize>>,
    /// An opaque part whose performance was the only change a repeat made,
    /// since `reset_opaque`.
    only_opaque: Option<usize>,
    /// What the proofs read of the machine, once asked.
    proof_facts: Option<Rc<reason::Facts>>,
    /// By explored configuration, those its moves lead to, once a proof by
    /// exploration asked (`explored_refutes`).
    successors: Option<Rc<Vec<Vec<usize>>>>,
    /// Whether nothing the machine does reads a payload (`payload_blind`),
    /// once asked.
    blind: Option<bool>,
    /// The context at the start, once the reasoning asked.
    start_context: Option<Value>,
    /// What the reasoning's walks ask again and again.
    memo: reason::Memo,
    /// The bound at which the current claim's search stopped, if one did.
    bound: Option<search::Bound>,
    /// Actors the searches forked and dropped, whose buffers the next fork
    /// reuses (`fork`, `keep`): most forks end in a configuration already
    /// seen.
    spares: Vec<Actor>,
}

/// The spare actors a `Replayer` keeps, at most: a search holds at most
/// two forks at a time.
const SPARES: usize = 4;

impl<'a, 'm> Replayer<'a, 'm> {
    pub fn new(cx: &'a Cx<'m>) -> Self {
        let shared = cx.replay_chart();
        Replayer {
            cx,
            shared,
            budget: [MAX_REPLAYS; LINTS],
            asked_host: &shared.asked_host,
            start_asked_host: shared.start_asked_host,
            fields: HashMap::new(),
            explored: None,
            sends_left: SEARCH_SENDS.min(SEARCH_WORK / cx.machine.states.len().max(1)),
            directed_left: 0,
            performed: None,
            events: HashMap::default(),
            variant_sets: HashMap::default(),
            id_sets: HashMap::new(),
            entered: None,
            fewest_moves: None,
            move_costs: None,
            compared: None,
            opaque: opaque_parts(cx.machine),
            computed_delays: cx.machine.computed_delays(),
            opaque_ran: Cell::new(None),
            only_opaque: None,
            bound: None,
            proof_facts: None,
            successors: None,
            blind: None,
            start_context: None,
            memo: reason::Memo::default(),
            spares: Vec::new(),
        }
    }

    /// Forgets the opaque parts performed so far: a replay starts.
    fn reset_opaque(&mut self) {
        self.opaque_ran.set(None);
        self.only_opaque = None;
    }

    /// Why no verdict rests on the opaque part of that index.
    fn rests_on(&self, index: usize) -> Replay {
        let part = &self.cx.machine.opaque[index];
        Replay::undecided(format!(
            "rests on {}, which idemchart could not read",
            part.what
        ))
    }

    /// The index of the opaque part a host action of this name stands for.
    fn opaque_index(&self, name: &str) -> Option<usize> {
        self.opaque.get(name).map(|&(i, _)| i)
    }

    /// Replays the witness of a finding of `lint` and tells whether its
    /// repeated delivery performs `effect` again (a declared effect or a host
    /// action), rather than whether it changes anything at all: whether the
    /// replay confirms that.
    pub fn performs_again(&mut self, lint: super::Lint, witness: &Witness, effect: &str) -> bool {
        // That the repeat runs an opaque part again shows nothing of what
        // it does.
        if self.opaque_index(effect).is_some() {
            return false;
        }
        self.performed = Some(effect.to_string());
        let verdict = self.confirm(lint, Some(witness), None).verdict;
        self.performed = None;
        verdict == Some(Verdict::Confirmed)
    }

    /// Replays the witness of a finding of `lint`; when it shows nothing,
    /// searches the machine's runs for one that confirms the claim.
    pub fn confirm(
        &mut self,
        lint: super::Lint,
        witness: Option<&Witness>,
        claim: Option<&Claim>,
    ) -> Replay {
        let Some(witness) = witness else {
            return match claim {
                Some(_) => Replay::bounded(format!(
                    "no path of at most {} steps leads to it, the longest a witness is built from",
                    super::witness::MAX_WITNESS_STEPS
                )),
                None => Replay::default(),
            };
        };
        self.asked_host.store(false, Ordering::Relaxed);
        self.reset_opaque();
        let replay = self.replay(lint, witness, claim);
        if self.start_asked_host || self.asked_host.load(Ordering::Relaxed) {
            return Replay::undecided(HOST_GUARDS);
        }
        if let Some(part) = self.opaque_ran.get() {
            return self.rests_on(part);
        }
        if replay.showed_nothing()
            && let Some(part) = self.only_opaque
        {
            return self.rests_on(part);
        }
        if !replay.showed_nothing() {
            return replay;
        }
        let shown = replay.account.unwrap_or_default();
        let reasoning = replay.reasoning;
        let cx = self.cx;
        // The account of a finding not shown names the guard on the path
        // no payload passed, when the reasoning found one.
        let unsatisfied = || match reasoning.as_ref().and_then(|r| r.unsatisfied(cx)) {
            Some(guard) => format!("{shown}: {guard}"),
            None => shown.clone(),
        };
        let Some(claim) = claim else {
            // A declaration lint's witness is dropped when it shows nothing.
            if !super::is_graph_hazard(lint) {
                return Replay::not_shown(shown);
            }
            return Replay::not_shown(unsatisfied());
        };
        // What no run can show, for every payload and every answer of the
        // host: no search is made.
        if let Some(why) = self.refutation(claim) {
            return Replay::refuted(format!("{shown}; {why}"));
        }
        self.reset_opaque();
        match (self.search(claim), self.only_opaque) {
            (Ok(found), _) => found,
            // A run whose repeat changed nothing but what an opaque part
            // does may be the one that shows the harm.
            (Err(_), Some(part)) => self.rests_on(part),
            (Err(end), None) => match self.explored_refutes(claim) {
                Some(why) => Replay::refuted(format!("{shown}; {why}")),
                None => Replay::not_shown(format!("{}; {end}", unsatisfied())),
            },
        }
    }

    fn replay(&mut self, lint: super::Lint, witness: &Witness, claim: Option<&Claim>) -> Replay {
        if self.work_spent() {
            return Replay::bounded(work_spent_account());
        }
        let Some(budget) = self.budget.get_mut(lint as usize) else {
            return Replay::default();
        };
        if *budget == 0 {
            return Replay::bounded(format!(
                "the replay budget of {MAX_REPLAYS} findings of this lint per machine is spent"
            ));
        }
        if witness.steps.len() > MAX_STEPS {
            return Replay::bounded(format!(
                "its witness is longer than the {MAX_STEPS} steps a replay plays"
            ));
        }
        *budget -= 1;
        let retry = matches!(witness.end, WitnessEnd::Retry { .. });
        let Some(prefix) = (if retry {
            witness.steps.len().checked_sub(1)
        } else {
            Some(witness.steps.len())
        }) else {
            return Replay::default();
        };
        let plain = self.play_witness(witness, prefix, &reason::Reasoning::default());
        if !plain.showed_nothing() {
            return plain;
        }
        // The synthesized payloads did not show it: the witness again, with
        // the payloads the reasoning chose for the guards on its path tried
        // first, before them. (Where the synthesized payloads show the harm
        // already, the reasoning is not needed, and not made: it would cost
        // every replay.)
        let reasoning = self.reason_witness(witness, claim);
        if reasoning.is_empty() {
            return Replay {
                reasoning: Some(reasoning),
                ..plain
            };
        }
        if self.work_spent() {
            return Replay::bounded(work_spent_account());
        }
        let again = self.play_witness(witness, prefix, &reasoning);
        if !again.showed_nothing() {
            return again;
        }
        Replay {
            reasoning: Some(reasoning),
            ..again
        }
    }

    /// Plays the witness's first `prefix` steps from the start and tells
    /// what its end shows; each delivery tries the payload the reasoning
    /// chose first, if any, then the synthesized ones.
    fn play_witness(
        &mut self,
        witness: &Witness,
        prefix: usize,
        reasoning: &reason::Reasoning,
    ) -> Replay {
        let mut actor = self.started();
        let repeated = match witness.end {
            WitnessEnd::Repeat(i) if i < prefix => Some(i),
            _ => None,
        };
        let mut sent: Vec<Option<Event>> = Vec::with_capacity(witness.steps.len());
        let mut before_repeated = None;
        let mut missed = None;
        for (i, step) in witness.steps[..prefix].iter().enumerate() {
            if Some(i) == repeated {
                before_repeated = Some(actor.clone());
            }
            let (event, took) = self.play(&mut actor, i, step, 0, reasoning.chosen(i));
            if !took && missed.is_none() {
                missed = Some(i);
            }
            sent.push(event);
            if self.work_spent() {
                return Replay::bounded(work_spent_account());
            }
        }
        let verdict = self.verdict(actor, &sent, witness, reasoning.chosen(prefix));
        if !verdict.showed_nothing() {
            return self.with_payloads(verdict, witness, &sent, reasoning);
        }
        // The repeat carries the payload of the delivery it repeats, so
        // another payload there may pass the guard of the handler that
        // accepts the repeat.
        if let (Some(r), Some(start)) = (repeated, before_repeated) {
            for variant in 1..VARIANTS + usize::from(reasoning.chosen(r).is_some()) {
                if self.work_spent() {
                    return Replay::bounded(work_spent_account());
                }
                let mut actor = start.clone();
                let mut sent = sent[..r].to_vec();
                let chosen = reasoning.chosen(r);
                sent.push(
                    self.play(&mut actor, r, &witness.steps[r], variant, chosen)
                        .0,
                );
                for (i, step) in witness.steps[r + 1..prefix].iter().enumerate() {
                    let i = r + 1 + i;
                    sent.push(self.play(&mut actor, i, step, 0, reasoning.chosen(i)).0);
                }
                let again = self.verdict(actor, &sent, witness, reasoning.chosen(prefix));
                if again.verdict == Some(Verdict::Confirmed) {
                    return self.with_payloads(again, witness, &sent, reasoning);
                }
            }
        }
        let rendered = witness.render(&self.cx.graph);
        let account = match missed {
            // A step that did not go where the path meant explains the
            // verdict better than its end.
            Some(i) => format!(
                "step {} (`{}`) did not take the transition the graph's path meant",
                i + 1,
                rendered.get(i).map(String::as_str).unwrap_or("?")
            ),
            None => verdict.account.unwrap_or_default(),
        };
        Replay::not_shown(account)
    }

    /// A confirmed replay of the witness, with the witness written out
    /// again, each delivery with its payload, where one carried a payload
    /// the reasoning chose that the replay does not synthesize: so the run
    /// can be played again (`idemchart run`).
    fn with_payloads(
        &mut self,
        replay: Replay,
        witness: &Witness,
        sent: &[Option<Event>],
        reasoning: &reason::Reasoning,
    ) -> Replay {
        if replay.verdict != Some(Verdict::Confirmed) || reasoning.is_empty() {
            return replay;
        }
        let mut reasoned = false;
        for (i, event) in sent.iter().enumerate() {
            if let (Some(event), Some(chosen), WitnessStep::Event { event: id, .. }) =
                (event, reasoning.chosen(i), &witness.steps[i])
                && event.data == chosen.data
                && !self.synthesized(*id, i, &event.data)
            {
                reasoned = true;
            }
        }
        if !reasoned {
            return replay;
        }
        let mut rendered = witness.render(&self.cx.graph);
        for (i, event) in sent.iter().enumerate() {
            if let Some(event) = event
                && matches!(witness.steps[i], WitnessStep::Event { .. })
            {
                rendered[i] = written(event);
            }
        }
        Replay {
            witness: Some(rendered),
            ..replay
        }
    }

    /// The transitions each step of a rendered witness takes (`PAGO`,
    /// `after 30s`, the repeat `PAGO*`), played on the interpreter from the
    /// start with the deliveries the replay synthesizes. A delivery written
    /// with its payload (`PAGO {"importe": 5}`) carries it; another gets the
    /// first payload variant that the machine does not ignore. A starred
    /// step repeats the latest earlier delivery of that event, with its id
    /// and payload, except in a retry (`retry`), whose starred last step is
    /// the retried step itself. The turn of a loop (`loop: a -always-> b
    /// -always-> a`) is the transitions of the step before that it names.
    /// Each step's transitions are listed once, in the order first taken.
    pub fn steps_taken(
        &mut self,
        steps: &[String],
        retry: bool,
    ) -> Result<Vec<Vec<TransitionId>>, String> {
        let mut actor = self.started();
        let mut sent: Vec<Event> = Vec::new();
        let mut taken = Vec::with_capacity(steps.len());
        for (i, text) in steps.iter().enumerate() {
            let (name, starred) = match text.strip_suffix('*') {
                Some(name) => (name, true),
                None => (text.as_str(), false),
            };
            let unknown = || format!("step {} `{text}` is neither an event nor a timer", i + 1);
            if let Some(turn) = text.strip_prefix("loop:") {
                // The turn of an S006 loop, which the step before ran into:
                // the transitions that step took whose `source -trigger->`
                // the turn names.
                let machine = self.cx.machine;
                let mut turned: Vec<TransitionId> = Vec::new();
                for &t in &actor.last_step().transitions {
                    let transition = machine.transition(t);
                    let segment = format!(
                        " {} -{}->",
                        machine.display_name(transition.source),
                        transition.trigger
                    );
                    if turn.contains(&segment) && !turned.contains(&t) {
                        turned.push(t);
                    }
                }
                if turned.is_empty() {
                    return Err(format!(
                        "step {} `{text}`: the replay took none of its transitions",
                        i + 1
                    ));
                }
                taken.push(turned);
                continue;
            }
            if let Some(delay) = name.strip_prefix("after ") {
                let delay = Duration::parse(delay).ok_or_else(unknown)?;
                let now = actor.now();
                let step = actor.advance_to(now.saturating_add(delay.millis));
                taken.push(distinct(&step.transitions));
                continue;
            }
            // A delivery written with its payload: `NAME {"field": value}`.
            let (name, payload) = match name.split_once(" {") {
                Some((name, rest)) => (name, Some(format!("{{{rest}"))),
                None => (name, None),
            };
            let repeated = (starred && !retry)
                .then(|| sent.iter().rev().find(|e| &*e.name == name).cloned())
                .flatten();
            let event = match (repeated, payload) {
                (Some(event), _) => event,
                (None, Some(payload)) => {
                    let id = self.cx.graph.events.get(name).ok_or_else(unknown)?;
                    let data: serde_json::Value = serde_json::from_str(&payload)
                        .map_err(|e| format!("step {} `{text}`: its payload: {e}", i + 1))?;
                    let base = self.event(id, i, 0);
                    Event::new(name, base.id, Value::from(&data))
                }
                (None, None) => {
                    let id = self.cx.graph.events.get(name).ok_or_else(unknown)?;
                    let variants = self.variants(id, i);
                    let accepted = variants.iter().find(|e| !actor.clone().send(e).ignored);
                    accepted.or(variants.first()).cloned().ok_or_else(unknown)?
                }
            };
            taken.push(distinct(actor.send(&event).transitions.as_slice()));
            sent.push(event);
        }
        Ok(taken)
    }

    /// The actor in its initial configuration.
    fn started(&self) -> Actor {
        self.shared.started.clone()
    }

    /// Counts a step the interpreter took against the lint run's work budget.
    fn charge(&self, step: &crate::interp::Step) {
        let done = &self.shared.work_done;
        done.set(done.get().saturating_add(step_work(step)));
        if !self.opaque.is_empty() && self.opaque_ran.get().is_none() {
            let ran = (step.effects.iter().filter(|e| e.host))
                .find_map(|e| self.opaque.get(&*e.name).filter(|(_, reads)| *reads));
            if let Some(&(index, _)) = ran {
                self.opaque_ran.set(Some(index));
            }
        }
        if !self.computed_delays.is_empty()
            && self.opaque_ran.get().is_none()
            && let Some(&(_, index)) =
                (self.computed_delays.iter()).find(|(t, _)| step.transitions.contains(t))
        {
            self.opaque_ran.set(Some(index));
        }
    }

    /// Whether the lint run's replays have done all the work they may.
    fn work_spent(&self) -> bool {
        self.shared.work_done.get() >= REPLAY_WORK
    }

    /// Whether the searches have done all the work they may.
    fn search_work_spent(&self) -> bool {
        self.shared.work_done.get() >= SEARCH_MICROSTEPS
    }

    /// Whether the end of the witness changes something, from `actor`
    /// after the steps before it.
    fn verdict(
        &mut self,
        mut actor: Actor,
        sent: &[Option<Event>],
        witness: &Witness,
        last: Option<&Event>,
    ) -> Replay {
        let outcome = match &witness.end {
            WitnessEnd::Repeat(i) => {
                let Some(event) = sent.get(*i).cloned().flatten() else {
                    return Replay::default();
                };
                match &self.performed {
                    Some(effect) => {
                        let step = actor.send(&event);
                        self.charge(step);
                        performs(step, effect).then_some(()).ok_or_else(|| {
                            format!(
                                "the repeated `{}` did not perform {}",
                                event.name,
                                self.cx.machine.host_name(effect)
                            )
                        })
                    }
                    None => self.repeat_changes(&actor, &event, None),
                }
            }
            // The last step, or the start, ran out of microsteps (S006).
            WitnessEnd::Loop { .. } => (actor.last_step().unsettled.is_some())
                .then_some(())
                .ok_or_else(|| "the last step settled".to_string()),
            WitnessEnd::Retry { effect } => {
                let Some(step) = witness.steps.last() else {
                    return Replay::default();
                };
                let last = last.cloned();
                self.play(&mut actor, witness.steps.len() - 1, step, 0, last.as_ref());
                performs(actor.last_step(), effect)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "the last step did not perform {} again",
                            self.cx.machine.host_name(effect)
                        )
                    })
            }
        };
        match outcome {
            Ok(()) => Replay::confirmed(None),
            Err(why) => Replay::not_shown(why),
        }
    }

    /// Whether a repeat of `event` from `actor` changes the configuration
    /// or the context or performs an effect (taking `takes`, when given);
    /// else what it did. The repeat is played on a fork: `actor` stays.
    fn repeat_changes(
        &mut self,
        actor: &Actor,
        event: &Event,
        takes: Option<TransitionId>,
    ) -> Result<(), String> {
        let mut after = self.fork(actor);
        let opaque = &self.opaque;
        let outcome = repeat_outcome(actor, &mut after, event, takes, &|name| {
            opaque.get(name).map(|&(i, _)| i)
        });
        self.charge(after.last_step());
        self.keep(after);
        match outcome {
            Ok(()) => Ok(()),
            Err((why, only_opaque)) => {
                if only_opaque.is_some() && self.only_opaque.is_none() {
                    self.only_opaque = only_opaque;
                }
                Err(why)
            }
        }
    }

    /// A copy of `actor`, made in the buffers of a spare one if there is one.
    fn fork(&mut self, actor: &Actor) -> Actor {
        match self.spares.pop() {
            Some(mut spare) => {
                spare.clone_from(actor);
                spare
            }
            None => actor.clone(),
        }
    }

    /// Keeps a fork the search has done with, for the next `fork`.
    fn keep(&mut self, actor: Actor) {
        if self.spares.len() < SPARES {
            self.spares.push(actor);
        }
    }

    /// Plays one step; returns the event delivered, if any, and whether the
    /// step took the transition it meant. The payload the reasoning chose,
    /// if any, comes first, then the synthesized variants; they are tried
    /// from the `first` on.
    fn play(
        &mut self,
        actor: &mut Actor,
        i: usize,
        step: &WitnessStep,
        first: usize,
        reasoned: Option<&Event>,
    ) -> (Option<Event>, bool) {
        match step {
            WitnessStep::After { delay, transition } => {
                let now = actor.now();
                let step = actor.advance_to(now.saturating_add(delay.millis));
                self.charge(step);
                (None, step.transitions.contains(transition))
            }
            WitnessStep::Event { event, transition } => {
                let count = VARIANTS + usize::from(reasoned.is_some());
                let candidate = |replayer: &mut Self, j: usize| match reasoned {
                    Some(e) if j == 0 => e.clone(),
                    Some(_) => replayer.event(*event, i, j - 1),
                    None => replayer.event(*event, i, j),
                };
                let chosen = candidate(self, first % count);
                let Some(t) = transition else {
                    let step = actor.send(&chosen);
                    self.charge(step);
                    return (Some(chosen), !step.ignored);
                };
                let mut trial = self.fork(actor);
                let step = trial.send(&chosen);
                self.charge(step);
                if step.transitions.contains(t) {
                    self.keep(std::mem::replace(actor, trial));
                    return (Some(chosen), true);
                }
                // Other payloads, for the guards on the way.
                for v in 1..count {
                    let candidate = candidate(self, (first + v) % count);
                    trial.clone_from(actor);
                    let step = trial.send(&candidate);
                    self.charge(step);
                    if step.transitions.contains(t) {
                        self.keep(std::mem::replace(actor, trial));
                        return (Some(candidate), true);
                    }
                }
                self.keep(trial);
                self.charge(actor.send(&chosen));
                (Some(chosen), false)
            }
        }
    }
}

/// The transitions of a step, each once, in the order first taken (a step
/// that loops takes some many times).
fn distinct(transitions: &[TransitionId]) -> Vec<TransitionId> {
    let mut out: Vec<TransitionId> = Vec::with_capacity(transitions.len());
    for &t in transitions {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// A delivery in a witness with its payload, `NAME {"field": value}`, the
/// payload written as the `data` of an `idemchart run` line; its name alone
/// when it has none.
fn written(event: &Event) -> String {
    match &event.data {
        Value::Null => event.name.to_string(),
        data => format!("{} {data}", event.name),
    }
}

const HOST_GUARDS: &str = "the replay asks a host guard, which only the host program answers";

/// The transition the repeat of a claim must take, if any.
fn repeat_must_take(claim: &Claim) -> Option<TransitionId> {
    match claim.shape {
        Shape::Takes(t) => Some(t),
        _ => None,
    }
}

/// The effect names of `before` and those the step performed, each once.
fn effect_names(step: &crate::interp::Step, before: &[Arc<str>]) -> Vec<Arc<str>> {
    let mut out = before.to_vec();
    for e in &step.effects {
        if !out.contains(&e.name) {
            out.push(Arc::clone(&e.name));
        }
    }
    for i in &step.invoked {
        if !out.contains(&i.src) {
            out.push(Arc::clone(&i.src));
        }
    }
    out
}

/// Whether the step performed the effect (or host action) of that name,
/// or started an invocation of it.
fn performs(step: &crate::interp::Step, effect: &str) -> bool {
    step.effects.iter().any(|e| &*e.name == effect)
        || step.invoked.iter().any(|i| &*i.src == effect)
}

/// What a repeat of `event` did to `after`, a copy of `before`: `Ok` when
/// it changed the configuration or the context or performed an effect
/// (taking `takes`, when given), else why not, with the opaque part
/// (`opaque` tells them by name) that it performed when that was all it did.
fn repeat_outcome(
    before: &Actor,
    after: &mut Actor,
    event: &Event,
    takes: Option<TransitionId>,
    opaque: &dyn Fn(&str) -> Option<usize>,
) -> Result<(), (String, Option<usize>)> {
    let step = after.send(event);
    if step.ignored {
        return Err((format!("the repeated `{}` was ignored", event.name), None));
    }
    if let Some(t) = takes
        && !step.transitions.contains(&t)
    {
        return Err((
            format!("the repeated `{}` did not take this transition", event.name),
            None,
        ));
    }
    let effects = (step.effects.iter()).any(|e| !e.host || opaque(&e.name).is_none())
        || !step.invoked.is_empty();
    let performed = step.effects.iter().find_map(|e| opaque(&e.name));
    let moved = !before.active_states().eq(after.active_states());
    if effects || moved || before.context() != after.context() {
        Ok(())
    } else {
        Err((
            format!(
                "the repeated `{}` changed neither the configuration nor the context and performed no effect",
                event.name
            ),
            performed,
        ))
    }
}

/// The machine's opaque parts by host action name: the index of each, and
/// whether a run it ran in may differ from the machine's: it may do
/// anything, or write a context field that a guard or an action reads.
fn opaque_parts(machine: &crate::model::Machine) -> HashMap<String, (usize, bool)> {
    if machine.opaque.is_empty() {
        return HashMap::new();
    }
    let mut read: Vec<String> = Vec::new();
    let mut visit = |e: &crate::expr::Expr| {
        e.walk(&mut |x| {
            if let Some(f) = analysis::context_field(x) {
                read.push(f.to_string());
            }
        })
    };
    for t in &machine.transitions {
        if let Some(g) = &t.guard {
            visit(g);
        }
    }
    for action in machine.actions() {
        for_each_expr(action, &mut visit);
    }
    (machine.opaque.iter().enumerate())
        .map(|(i, part)| {
            let reads_what_it_writes = match &part.kind {
                crate::model::OpaqueKind::Assign(Some(fields)) => {
                    fields.iter().any(|f| read.contains(f))
                }
                // A run in which a timer of made-up duration fires shows
                // nothing of what XState would do.
                crate::model::OpaqueKind::Assign(None)
                | crate::model::OpaqueKind::Actions
                | crate::model::OpaqueKind::Delay => true,
            };
            (part.name.clone(), (i, reads_what_it_writes))
        })
        .collect()
}
