//! Confirmation: replaying a witness in the interpreter, on its virtual
//! clock, with and without the repeated delivery.
//!
//! Every delivery gets a fresh id and a synthesized payload (the id field
//! set to that id, other fields from their declared types, or from what the
//! guards and actions read). Where a delivery was meant to take a
//! transition, a few payload variants are tried until one does, so that
//! guards such as `event.ok` or `event.amount > 0` can pass. The repeat
//! reuses the earlier delivery's id and payload. The finding is confirmed
//! when the repeat changes the configuration or the context or emits an
//! effect; for a retry (I008), when the last step emits the effect again.
//!
//! A host guard is answered by the host alone, which a replay does not
//! have: where a replay asks one (a witness that passes it, or a handler
//! of the repeat behind it), the verdict could be wrong either way, so no
//! verdict is given (`None`).
//!
//! So it is with an opaque part (`model::OpaquePart`: an `assign` or a
//! helper the XState translator could not read), which the replay performs
//! as a host action that does nothing. A run in which one ran that may
//! write what the machine reads, or may do anything, is not the machine's
//! run; and a repeat whose only change is performing one shows nothing.
//! Either way the finding rests on the part, and no verdict is given, the
//! part named. A repeat that changes the configuration, the context or
//! performs an effect by translated code alone, in a run where no such
//! part ran, confirms as before.
//!
//! Replays are bounded: at most `MAX_REPLAYS` per lint and machine (the
//! findings nearest the top of the file first) and `MAX_STEPS` steps per
//! witness, past which no replay is made and `confirmed` stays `None`; and
//! each step at `REPLAY_MICROSTEPS` microsteps, so that a machine that
//! loops on its own stops instead of hanging the linter. That is how an
//! S006 loop is confirmed: the last step of its witness runs out of them.
//! All the replays and searches of one lint run together do at most
//! `REPLAY_WORK` microsteps, counted, not timed; past it a replay is
//! undecided, with that reason.
//!
//! The graph's witness is one path among many, and the graph does not see
//! guards, the context or whether a sibling region really is where a path
//! assumes. When its replay shows nothing, the finding's `Claim` (which
//! transition the first delivery takes, and where the repeat may come) is
//! searched for among the interpreter's own runs: breadth-first over the
//! configurations the machine reaches from its start (`Explorer`, built once
//! per machine and bounded), then, from each one where the claim's
//! transition can be taken, a few payload variants and continuations. A run
//! found there replaces the witness and confirms the finding; a finding that
//! no run confirms stays refuted, and `lint` does not report it.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Cx;
use super::analysis;
use super::witness::{Witness, WitnessEnd, WitnessStep};
use crate::expr::{Event, Value};
use crate::graph::{self, EventId, MachineGraph};
use crate::interp::{Actor, Chart};
use crate::model::{Action, Completion, Duration, PayloadType, StateId, TransitionId, Trigger};

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
    pub confirmed: Option<bool>,
    /// The witness as rendered, when a run other than the graph's confirmed it.
    pub witness: Option<Vec<String>>,
    /// Why there is no verdict, or what refuted the witness.
    pub account: Option<String>,
}

impl Replay {
    fn undecided(why: impl Into<String>) -> Replay {
        Replay {
            confirmed: None,
            witness: None,
            account: Some(why.into()),
        }
    }
}

/// What is taken instead of a transition written after it.
#[derive(Clone, Copy)]
enum Instead {
    /// A transition without a guard.
    Unguarded,
    /// One whose guard only tests that the delivery's id is new.
    NewId,
}

impl Instead {
    fn why(self) -> &'static str {
        match self {
            Instead::Unguarded => "which has no guard",
            Instead::NewId => "whose guard only tests that the delivery's id is new",
        }
    }
}

/// Payload fields and the literals guards compare them with.
type ComparedLiterals = Vec<(String, Vec<Value>)>;

/// One move of a run the search plays: a delivery, or the clock moved to
/// the next due timer.
#[derive(Clone, Debug)]
enum Move {
    Send(Event),
    Advance(u64),
}

/// What trying a configuration as the place of a claim's first delivery
/// gave: a run, nothing (try the next), or the end of the search's budget.
enum Start {
    Found((Vec<Move>, usize)),
    Next,
    Stop,
}

/// The configurations reached from the start, breadth-first, grown as far
/// as the searches read them (`Replayer::grow`): a claim that finds its run,
/// or its starts, among the first ones leaves the rest unexplored.
struct Explorer {
    nodes: Vec<Explored>,
    /// The fingerprints of the nodes (`Actor::fingerprint`): two states
    /// that collide only make the exploration skip one, never report
    /// anything.
    seen: Fingerprints,
    /// The next node whose moves are tried.
    at: usize,
    /// Sends the exploration may still make: the half of the search budget
    /// it was given on the first search.
    left: usize,
    /// What the exploration did not use, once it ended, for the claims.
    released: usize,
}

/// The moves from the start to node `k` of a search's `nodes`.
fn moves_to(nodes: &[Explored], mut k: usize) -> Vec<Move> {
    let mut moves = Vec::with_capacity(nodes[k].depth);
    while let Some((parent, m)) = &nodes[k].from {
        moves.push(m.clone());
        k = *parent;
    }
    moves.reverse();
    moves
}

/// A set of `Actor::fingerprint`s, which are hashes already.
type Fingerprints = HashSet<u64, foldhash::fast::FixedState>;

/// A configuration a search reached, and how.
struct Explored {
    /// Its state alone (`Actor::clone_state`): `last_step` is empty.
    actor: Actor,
    /// The node it was reached from and the move from there (none for the
    /// start): the moves from the start are read back only for the nodes a
    /// search starts from, so each node keeps one.
    from: Option<(usize, Move)>,
    /// The number of moves from the start.
    depth: usize,
    /// The effects the moves performed, the start's included (kept by the
    /// breadth-first exploration alone).
    performed: Vec<Arc<str>>,
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
    pub fn new(machine: &crate::model::Machine) -> ReplayChart {
        let asked_host = Arc::new(AtomicBool::new(false));
        let mut builder = Chart::builder(machine.clone());
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
            .unwrap_or_else(|_| Chart::new(machine.clone()));
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
    /// The first opaque part a step performed since `reset_opaque` that
    /// may write what the machine reads, by index.
    opaque_ran: Cell<Option<usize>>,
    /// An opaque part whose performance was the only change a repeat made,
    /// since `reset_opaque`.
    only_opaque: Option<usize>,
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
            opaque_ran: Cell::new(None),
            only_opaque: None,
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
    /// action), rather than whether it changes anything at all; `None` when
    /// the replay cannot decide.
    pub fn performs_again(
        &mut self,
        lint: super::Lint,
        witness: &Witness,
        effect: &str,
    ) -> Option<bool> {
        // That the repeat runs an opaque part again shows nothing of what
        // it does.
        if self.opaque_index(effect).is_some() {
            return None;
        }
        self.performed = Some(effect.to_string());
        let verdict = self.confirm(lint, Some(witness), None).confirmed;
        self.performed = None;
        verdict
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
                Some(_) => Replay::undecided(format!(
                    "no run of at most {} steps shows it",
                    super::witness::MAX_WITNESS_STEPS
                )),
                None => Replay::default(),
            };
        };
        self.asked_host.store(false, Ordering::Relaxed);
        self.reset_opaque();
        let replay = self.replay(lint, witness);
        if self.start_asked_host || self.asked_host.load(Ordering::Relaxed) {
            return Replay::undecided(HOST_GUARDS);
        }
        if let Some(part) = self.opaque_ran.get() {
            return self.rests_on(part);
        }
        if replay.confirmed == Some(false)
            && let Some(part) = self.only_opaque
        {
            return self.rests_on(part);
        }
        if replay.confirmed != Some(false) {
            return replay;
        }
        let Some(claim) = claim else {
            return replay;
        };
        let refuted = replay.account.unwrap_or_default();
        // No search can find a run whose first delivery takes what such a
        // delivery never takes.
        if let Some(why) = self.never_taken_first(claim) {
            return Replay {
                confirmed: Some(false),
                witness: None,
                account: Some(format!("{refuted}; {why}")),
            };
        }
        self.reset_opaque();
        match (self.search(claim), self.only_opaque) {
            (Some(found), _) => found,
            // A run whose repeat changed nothing but what an opaque part
            // does may be the one that shows the harm.
            (None, Some(part)) => self.rests_on(part),
            (None, None) => Replay {
                confirmed: Some(false),
                witness: None,
                account: Some(format!(
                    "{refuted}; no other run of up to {EXPLORE_DEPTH} moves the search tried shows it"
                )),
            },
        }
    }

    /// Why no search can find a run for the claim: its first delivery must
    /// take one of `taking`, and no delivery that is not a repeat (all the
    /// search sends before the claim's repeat) takes any of them, because
    /// their states are entered only by transitions such deliveries never
    /// take, or because one written before each of them in its state on the
    /// same trigger is taken instead (`taken_instead`). `None` when one of
    /// them may be taken, or the claim takes any transition.
    pub(super) fn never_taken_first(&mut self, claim: &Claim) -> Option<String> {
        if claim.taking.is_empty() {
            return None;
        }
        let m = self.cx.machine;
        let sources = claim.sources(m);
        let entered = self.entered_by_new_deliveries();
        if !sources.iter().any(|s| entered[s.index()]) {
            return Some(format!(
                "`{}` is entered only by transitions that no delivery but a repeat takes",
                m.display_name(sources[0])
            ));
        }
        let mut why = None;
        for &t in &claim.taking {
            let instead = self.taken_instead(t, Some(claim.event))?;
            why = Some(format!(
                "a first delivery of `{}` in `{}` takes the transition written before this one, {}",
                self.cx.graph.events.name(claim.event),
                m.display_name(m.transition(t).source),
                instead.why()
            ));
        }
        why
    }

    /// The transition written before `t` in its state on the same trigger
    /// that a delivery of `event` which is not a repeat takes whenever it
    /// could take `t` (for an eventless or delayed `t`, `event` is `None`
    /// and only an unguarded one counts).
    fn taken_instead(&mut self, t: TransitionId, event: Option<EventId>) -> Option<Instead> {
        let m = self.cx.machine;
        let transition = m.transition(t);
        let state = m.state(transition.source);
        let alternatives = match transition.trigger {
            Trigger::Event(_) => &state.on,
            Trigger::Always => &state.always,
            Trigger::After(_) => &state.after,
        };
        for &before in alternatives {
            if before == t {
                return None;
            }
            let earlier = m.transition(before);
            if earlier.trigger != transition.trigger {
                continue;
            }
            match (&earlier.guard, event) {
                (None, _) => return Some(Instead::Unguarded),
                (Some(guard), Some(event)) if self.passes_for_new_ids(guard, event) => {
                    return Some(Instead::NewId);
                }
                _ => {}
            }
        }
        None
    }

    /// Whether a transition is taken in no run whose deliveries are all new:
    /// for each event that triggers it, or for its timer or eventless
    /// trigger, another is taken instead.
    fn never_taken_by_new_deliveries(&mut self, t: TransitionId) -> bool {
        match self.cx.machine.transition(t).trigger {
            Trigger::Event(_) => {
                let events = self.cx.graph.trigger_events(t);
                !events.is_empty()
                    && events
                        .iter()
                        .all(|&e| self.taken_instead(t, Some(e)).is_some())
            }
            _ => self.taken_instead(t, None).is_some(),
        }
    }

    /// By state, whether a run whose deliveries are all new may enter it:
    /// the states active at the start, and then, from the states entered,
    /// what the transitions such runs may take enter (`entry_set`, over the
    /// edges of `move_costs`): all a step may enter, and more where a
    /// history is restored.
    fn entered_by_new_deliveries(&mut self) -> Rc<[bool]> {
        if let Some(known) = &self.entered {
            return known.clone();
        }
        let costs = self.move_costs();
        let mut never_taken: Vec<Option<bool>> = vec![None; self.cx.machine.transitions.len()];
        let mut entered = vec![false; self.cx.machine.states.len()];
        let mut queue: Vec<StateId> = Vec::new();
        // The start's configuration is known exactly.
        for s in self.shared.started.active_states() {
            entered[s.index()] = true;
            queue.push(s);
        }
        while let Some(s) = queue.pop() {
            for &(u, _, t) in &costs.0[s.index()] {
                if entered[u.index()]
                    || *never_taken[t.index()]
                        .get_or_insert_with(|| self.never_taken_by_new_deliveries(t))
                {
                    continue;
                }
                entered[u.index()] = true;
                queue.push(u);
            }
        }
        let entered: Rc<[bool]> = entered.into();
        self.entered = Some(entered.clone());
        entered
    }

    /// By state, at least how many moves of a search (deliveries of outside
    /// events, timers) a run takes before the state is active (see
    /// `move_costs`).
    pub(super) fn fewest_moves_to_enter(&mut self) -> Rc<[usize]> {
        if let Some(known) = &self.fewest_moves {
            return known.clone();
        }
        let (forward, _) = &*self.move_costs();
        let active: Vec<StateId> = self.shared.started.active_states().collect();
        let fewest: Rc<[usize]> = fewest_moves(forward, &active).into();
        self.fewest_moves = Some(fewest.clone());
        fewest
    }

    /// By state, at least how many moves a run takes from a configuration
    /// where the state is active to one where one of `targets` is.
    fn fewest_moves_from_to(&mut self, targets: &[StateId]) -> Vec<usize> {
        let (_, backward) = &*self.move_costs();
        fewest_moves(backward, targets)
    }

    /// The moves a transition costs, as edges between states, forward and
    /// backward: from its source to each state it may enter (`entry_set`),
    /// one where only outside events the machine never raises or sends
    /// itself trigger it, or a timer of more than 0 ms, and none else (it
    /// may come in the same step); guards ignored. A state is active after
    /// a move only if entered by a transition from a state active before
    /// it, or in the same step by one that costs nothing, so the cheapest
    /// way over these edges never costs more moves than a run takes.
    fn move_costs(&mut self) -> Rc<MoveCosts> {
        if let Some(known) = &self.move_costs {
            return known.clone();
        }
        let m = self.cx.machine;
        let graph = &self.cx.graph;
        let costs_a_move = |t: TransitionId| match &m.transition(t).trigger {
            Trigger::Event(descriptor) => {
                descriptor.patterns.iter().all(|p| !graph::may_match_own(p))
                    && !graph.trigger_events(t).is_empty()
                    && graph
                        .trigger_events(t)
                        .iter()
                        .all(|&e| graph.events.is_external(e) && !graph.events.is_raised(e))
            }
            Trigger::After(delay) => delay.millis > 0,
            Trigger::Always => false,
        };
        let mut forward: Vec<Vec<MoveEdge>> = vec![Vec::new(); m.states.len()];
        let mut backward: Vec<Vec<MoveEdge>> = vec![Vec::new(); m.states.len()];
        let mut entering: Vec<StateId> = Vec::new();
        for s in m.state_ids() {
            let state = m.state(s);
            for &t in state.on.iter().chain(&state.always).chain(&state.after) {
                let cost = usize::from(costs_a_move(t));
                for target in &m.transition(t).targets {
                    entry_set(graph, target.state, &mut entering);
                }
                entering.sort_unstable();
                entering.dedup();
                for u in entering.drain(..) {
                    forward[s.index()].push((u, cost, t));
                    backward[u.index()].push((s, cost, t));
                }
            }
        }
        let costs = Rc::new((forward, backward));
        self.move_costs = Some(costs.clone());
        costs
    }

    /// Whether the guard holds for every first delivery of `event` in a
    /// replay: it only tests `!(event.ID in context.S)`, where ID is the
    /// event's id field, a string, unique to each delivery of a run, and
    /// every set S starts empty and is only ever extended with ids.
    fn passes_for_new_ids(&mut self, guard: &crate::expr::Expr, event: EventId) -> bool {
        let Some(decl) = self.cx.decl(event) else {
            return false;
        };
        // An event the machine raises or sends itself carries whatever id
        // its action gives it, a repeated one too.
        if self.cx.graph.events.is_raised(event) {
            return false;
        }
        let Some(id_field) = decl.id_field.as_ref().map(|n| n.text.as_str()) else {
            return false;
        };
        let id_is_number = decl
            .payload
            .as_ref()
            .and_then(|p| p.get(id_field))
            .is_some_and(|f| matches!(f.ty, PayloadType::Number | PayloadType::Integer));
        let tests = analysis::identity_tests(guard);
        if id_is_number || tests.len() != analysis::conjuncts(guard).len() {
            return false;
        }
        tests
            .iter()
            .all(|(field, set)| field == id_field && self.holds_only_ids(set))
    }

    /// Whether the context field starts as an empty list and every assign
    /// of the machine that writes it appends event fields that some event
    /// declares as its id (`S: context.S + [event.ID]`), in a machine
    /// without host actions, which could write anything.
    fn holds_only_ids(&mut self, set: &str) -> bool {
        if let Some(&known) = self.id_sets.get(set) {
            return known;
        }
        let m = self.cx.machine;
        let starts_empty = m
            .context
            .get(set)
            .is_some_and(|f| f.value.as_array().is_some_and(|a| a.is_empty()));
        let id_fields: Vec<&str> = m
            .events
            .values()
            .filter_map(|d| d.id_field.as_ref().map(|n| n.text.as_str()))
            .collect();
        let appends_ids = |expr: &crate::expr::Expr| {
            use crate::expr::{BinaryOp, ExprKind};
            let ExprKind::Binary(BinaryOp::Add, a, b) = &expr.kind else {
                return false;
            };
            let list = match (analysis::context_field(a), analysis::context_field(b)) {
                (Some(f), _) if f == set => b,
                (_, Some(f)) if f == set => a,
                _ => return false,
            };
            let ExprKind::List(items) = &list.kind else {
                return false;
            };
            items
                .iter()
                .all(|item| analysis::event_field(item).is_some_and(|f| id_fields.contains(&f)))
        };
        let mut only_ids = starts_empty;
        for action in m.actions() {
            match action {
                Action::Host { .. } => only_ids = false,
                Action::Assign { fields, .. } => {
                    if let Some(assignment) = fields.get(set) {
                        only_ids &= appends_ids(&assignment.expr);
                    }
                }
                _ => {}
            }
            if !only_ids {
                break;
            }
        }
        self.id_sets.insert(set.to_string(), only_ids);
        only_ids
    }

    fn replay(&mut self, lint: super::Lint, witness: &Witness) -> Replay {
        if self.work_spent() {
            return Replay::undecided(work_spent_account());
        }
        let Some(budget) = self.budget.get_mut(lint as usize) else {
            return Replay::default();
        };
        if *budget == 0 {
            return Replay::undecided(format!(
                "the replay budget of {MAX_REPLAYS} findings of this lint per machine is spent"
            ));
        }
        if witness.steps.len() > MAX_STEPS {
            return Replay::undecided(format!(
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
            let (event, took) = self.play(&mut actor, i, step, 0);
            if !took && missed.is_none() {
                missed = Some(i);
            }
            sent.push(event);
            if self.work_spent() {
                return Replay::undecided(work_spent_account());
            }
        }
        let verdict = self.verdict(actor, &sent, witness);
        if verdict.confirmed != Some(false) {
            return verdict;
        }
        // The repeat carries the payload of the delivery it repeats, so
        // another payload there may pass the guard of the handler that
        // accepts the repeat.
        if let (Some(r), Some(start)) = (repeated, before_repeated) {
            for variant in 1..VARIANTS {
                if self.work_spent() {
                    return Replay::undecided(work_spent_account());
                }
                let mut actor = start.clone();
                let mut sent = sent[..r].to_vec();
                sent.push(self.play(&mut actor, r, &witness.steps[r], variant).0);
                for (i, step) in witness.steps[r + 1..prefix].iter().enumerate() {
                    sent.push(self.play(&mut actor, r + 1 + i, step, 0).0);
                }
                let again = self.verdict(actor, &sent, witness);
                if again.confirmed == Some(true) {
                    return again;
                }
            }
        }
        let rendered = witness.render(&self.cx.graph);
        match missed {
            // A step that did not go where the path meant explains the
            // verdict better than its end.
            Some(i) => Replay {
                confirmed: Some(false),
                witness: None,
                account: Some(format!(
                    "step {} (`{}`) did not take the transition the graph's path meant",
                    i + 1,
                    rendered.get(i).map(String::as_str).unwrap_or("?")
                )),
            },
            None => verdict,
        }
    }

    /// The transitions each step of a rendered witness takes (`PAGO`,
    /// `after 30s`, the repeat `PAGO*`), played on the interpreter from the
    /// start with the deliveries the replay synthesizes. A delivery gets the
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
            let repeated = (starred && !retry)
                .then(|| sent.iter().rev().find(|e| &*e.name == name).cloned())
                .flatten();
            let event = match repeated {
                Some(event) => event,
                None => {
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
    fn verdict(&mut self, mut actor: Actor, sent: &[Option<Event>], witness: &Witness) -> Replay {
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
                self.play(&mut actor, witness.steps.len() - 1, step, 0);
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
            Ok(()) => Replay {
                confirmed: Some(true),
                ..Replay::default()
            },
            Err(why) => Replay {
                confirmed: Some(false),
                witness: None,
                account: Some(why),
            },
        }
    }

    /// A run of the interpreter that confirms the claim, replayed once more
    /// from the start to be sure of it, as a `Replay` with its witness.
    pub(super) fn search(&mut self, claim: &Claim) -> Option<Replay> {
        let (moves, first) = self.find_run(claim)?;
        // Played again on its own, so that a host guard asked on the way
        // is seen (the search asked many), and an opaque part performed.
        self.asked_host.store(false, Ordering::Relaxed);
        let only_opaque = self.only_opaque;
        self.reset_opaque();
        let mut actor = self.started();
        for m in &moves {
            self.apply_move(&mut actor, m);
        }
        let Move::Send(event) = &moves[first] else {
            return None;
        };
        let event = event.clone();
        let retry = claim.shape == Shape::Retry;
        // A retry's last move is the retry itself, played above.
        if retry {
            let effect = claim.effect.as_deref()?;
            performs(actor.last_step(), effect).then_some(())?;
        } else {
            self.repeat_changes(&actor, &event, repeat_must_take(claim))
                .ok()?;
        }
        let mut rendered: Vec<String> = Vec::with_capacity(moves.len() + 1);
        let mut now = 0u64;
        for m in &moves {
            match m {
                Move::Send(e) => rendered.push(e.name.to_string()),
                Move::Advance(to) => {
                    rendered.push(format!(
                        "after {}",
                        Duration::from_millis(to.saturating_sub(now))
                    ));
                    now = *to;
                }
            }
        }
        if retry {
            rendered.last_mut()?.push('*');
        } else {
            rendered.push(format!("{}*", event.name));
        }
        if let Some(part) = self.opaque_ran.get() {
            return Some(self.rests_on(part));
        }
        self.only_opaque = only_opaque;
        let asked = self.start_asked_host || self.asked_host.load(Ordering::Relaxed);
        Some(Replay {
            confirmed: (!asked).then_some(true),
            witness: Some(rendered),
            account: asked.then(|| HOST_GUARDS.to_string()),
        })
    }

    /// The moves of a run that confirms the claim, and the index of the
    /// delivery that the run's end repeats.
    fn find_run(&mut self, claim: &Claim) -> Option<(Vec<Move>, usize)> {
        // The explored configurations are at most `EXPLORE_DEPTH` moves
        // from the start: none has the first delivery's source active if
        // every source takes more moves to enter.
        let sources = claim.sources(self.cx.machine);
        if !sources.is_empty() {
            let fewest = self.fewest_moves_to_enter();
            if sources.iter().all(|s| fewest[s.index()] > EXPLORE_DEPTH) {
                return None;
            }
        }
        self.explore();
        // Each claim gets a share of what is left, so that the first
        // findings of a file cannot spend it all.
        let left = self.sends_left;
        self.sends_left = left.min(CLAIM_SENDS);
        let allowance = self.sends_left;
        let found = self.find_in(claim, &sources);
        let released = self
            .explored
            .as_mut()
            .map_or(0, |e| std::mem::take(&mut e.released));
        self.sends_left = left - (allowance - self.sends_left) + released;
        found
    }

    fn find_in(&mut self, claim: &Claim, sources: &[StateId]) -> Option<(Vec<Move>, usize)> {
        let retried = claim.retried();
        if retried.is_none()
            && !sources.is_empty()
            && let Some(found) = self.find_directed(claim, sources)
        {
            return Some(found);
        }
        let mut starts = 0;
        let mut k = 0;
        loop {
            let explored = self.explored.as_ref()?;
            if k == explored.nodes.len() {
                if self.grow() {
                    continue;
                }
                break;
            }
            let node = &explored.nodes[k];
            let at = k;
            k += 1;
            if !sources.is_empty() && !sources.iter().any(|&s| node.actor.is_active(s)) {
                continue;
            }
            if let Some(effect) = retried
                && !node.performed.iter().any(|p| &**p == effect)
            {
                continue;
            }
            if starts == CLAIM_STARTS {
                break;
            }
            starts += 1;
            let (start, before) = (node.actor.clone(), moves_to(&explored.nodes, at));
            match self.try_start(claim, &start, before) {
                Start::Found(found) => return Some(found),
                Start::Stop => return None,
                Start::Next => {}
            }
        }
        None
    }

    /// The first deliveries of the claim's event from one configuration, and
    /// what follows them, reached by the moves `before`.
    fn try_start(&mut self, claim: &Claim, start: &Actor, before: Vec<Move>) -> Start {
        let takes = repeat_must_take(claim);
        let retried = claim.retried();
        let i = before.len();
        let variants = self.variants(claim.event, i);
        for event in variants.iter() {
            if self.sends_left == 0 || self.search_work_spent() || self.cx.cancelled() {
                return Start::Stop;
            }
            self.sends_left -= 1;
            let mut actor = self.fork(start);
            let step = actor.send(event);
            self.charge(step);
            if step.ignored
                || (!claim.taking.is_empty()
                    && !claim.taking.iter().any(|t| step.transitions.contains(t)))
            {
                self.keep(actor);
                continue;
            }
            let mut moves = before.clone();
            moves.push(Move::Send(event.clone()));
            if let Some(effect) = retried {
                if performs(step, effect) {
                    return Start::Found((moves, i));
                }
                self.keep(actor);
                continue;
            }
            if claim.shape != Shape::Later {
                self.sends_left = self.sends_left.saturating_sub(1);
                if self.repeat_changes(&actor, event, takes).is_ok() {
                    return Start::Found((moves, i));
                }
            }
            if claim.shape == Shape::Immediate {
                self.keep(actor);
                continue;
            }
            if let Some(found) = self.continue_after(actor, moves, i, event, takes) {
                return Start::Found(found);
            }
        }
        Start::Next
    }

    /// A run for the claim from configurations found by a search directed
    /// at its sources, when the breadth-first exploration has not reached
    /// them yet (growing it there would cost every configuration on the
    /// way). The search is A*: a configuration's distance is its moves from
    /// the start plus the fewest moves from its active states to a source
    /// (`fewest_moves_from_to`), which is never more than a run takes, so
    /// the first configurations it reaches with a source active are among
    /// the nearest. `None` when those it tried confirm nothing; the
    /// breadth-first search then tries its own.
    fn find_directed(&mut self, claim: &Claim, sources: &[StateId]) -> Option<(Vec<Move>, usize)> {
        if self.directed_left == 0 {
            return None;
        }
        let explored = self.explored.as_ref()?;
        let reached = |n: &Explored| sources.iter().any(|&s| n.actor.is_active(s));
        if explored.at >= explored.nodes.len() || explored.nodes.iter().any(reached) {
            return None;
        }
        // Its moves come from a pool of their own, as many as the
        // exploration was given, so that neither starves the other.
        let mut left = self.directed_left.min(DIRECTED_SENDS);
        let allowance = left;
        let claim_left = self.sends_left;
        let to_source = self.fewest_moves_from_to(sources);
        let distance = |actor: &Actor| {
            actor
                .active_states()
                .map(|s| to_source[s.index()])
                .min()
                .unwrap_or(usize::MAX)
        };
        let start = self.started();
        let mut seen = Fingerprints::default();
        seen.insert(start.fingerprint());
        let h = distance(&start);
        if h > EXPLORE_DEPTH {
            return None;
        }
        let mut nodes = vec![Explored {
            actor: start,
            from: None,
            depth: 0,
            performed: Vec::new(),
        }];
        // By the least estimate, then the most moves made (the nearest to
        // a source first), then the order reached.
        let mut open = std::collections::BinaryHeap::new();
        open.push(std::cmp::Reverse((h, usize::MAX, 0usize)));
        let mut starts = 0;
        let found = loop {
            let Some(std::cmp::Reverse((_, _, at))) = open.pop() else {
                break None;
            };
            if sources.iter().any(|&s| nodes[at].actor.is_active(s)) {
                if starts == CLAIM_STARTS {
                    break None;
                }
                starts += 1;
                let start = nodes[at].actor.clone();
                match self.try_start(claim, &start, moves_to(&nodes, at)) {
                    Start::Found(found) => break Some(found),
                    Start::Stop => break None,
                    // Configurations after it may have the source active
                    // too, with another context.
                    Start::Next => {}
                }
            }
            let depth = nodes[at].depth + 1;
            if depth > EXPLORE_DEPTH {
                continue;
            }
            let mut spent = false;
            for next in self.moves_from(&nodes[at].actor, depth - 1) {
                if left == 0
                    || nodes.len() >= EXPLORE_STATES
                    || self.search_work_spent()
                    || self.cx.cancelled()
                {
                    spent = true;
                    break;
                }
                left -= 1;
                let Some(actor) = self.move_to_unseen(&nodes[at].actor, &next, &mut seen) else {
                    continue;
                };
                let h = distance(&actor);
                if depth.saturating_add(h) > EXPLORE_DEPTH {
                    self.keep(actor);
                    continue;
                }
                open.push(std::cmp::Reverse((
                    depth + h,
                    usize::MAX - depth,
                    nodes.len(),
                )));
                nodes.push(Explored {
                    actor: actor.clone_state(),
                    from: Some((at, next)),
                    depth,
                    performed: Vec::new(),
                });
                self.keep(actor);
            }
            if spent {
                break None;
            }
        };
        self.directed_left -= allowance - left;
        if found.is_none() {
            // What its starts sent, in vain, is the pool's too: the
            // breadth-first search after it has the claim's whole share.
            let tried = claim_left - self.sends_left;
            self.directed_left = self.directed_left.saturating_sub(tried);
            self.sends_left = claim_left;
        }
        found
    }

    /// A continuation after the first delivery (`moves[first]`) at whose end
    /// its repeat changes something.
    fn continue_after(
        &mut self,
        actor: Actor,
        moves: Vec<Move>,
        first: usize,
        event: &Event,
        takes: Option<TransitionId>,
    ) -> Option<(Vec<Move>, usize)> {
        let mut seen = Fingerprints::default();
        seen.insert(actor.fingerprint());
        let mut queue = std::collections::VecDeque::from([(actor, moves)]);
        let mut visited = 0;
        while let Some((actor, moves)) = queue.pop_front() {
            if moves.len() - first > CONTINUATION_DEPTH {
                continue;
            }
            for next in self.moves_from(&actor, moves.len()) {
                if self.sends_left == 0
                    || visited == CONTINUATION_STATES
                    || self.search_work_spent()
                    || self.cx.cancelled()
                {
                    return None;
                }
                self.sends_left -= 1;
                let Some(after) = self.move_to_unseen(&actor, &next, &mut seen) else {
                    continue;
                };
                visited += 1;
                let mut moves = moves.clone();
                moves.push(next);
                self.sends_left = self.sends_left.saturating_sub(1);
                if self.repeat_changes(&after, event, takes).is_ok() {
                    return Some((moves, first));
                }
                queue.push_back((after, moves));
            }
        }
        None
    }

    /// How many configurations the explorer has reached so far (none
    /// before a search starts it).
    #[cfg(test)]
    pub fn explored_so_far(&self) -> usize {
        self.explored.as_ref().map_or(0, |e| e.nodes.len())
    }

    /// The explorer's configurations, explored to the end: by each, its
    /// number of moves from the start and its active states.
    #[cfg(test)]
    pub fn explored_configurations(&mut self) -> Vec<(usize, Vec<StateId>)> {
        self.explore();
        while self.grow() {}
        let nodes = self.explored.as_ref().map_or(&[][..], |e| &e.nodes[..]);
        (nodes.iter())
            .map(|n| (n.depth, n.actor.active_states().collect()))
            .collect()
    }

    /// How many configurations the explorer reaches, explored to the end.
    #[cfg(test)]
    pub fn explored_len(&mut self) -> usize {
        self.explore();
        while self.grow() {}
        self.explored.as_ref().map_or(0, |e| e.nodes.len())
    }

    /// Starts the explorer on the first search: the start configuration,
    /// and half of what the searches may send.
    fn explore(&mut self) {
        if self.explored.is_some() {
            return;
        }
        let start = self.started();
        let mut seen = Fingerprints::default();
        seen.insert(start.fingerprint());
        let performed = effect_names(start.last_step(), &[]);
        // The exploration takes at most half of what the searches may
        // send, so that the claims have the other half.
        let left = self.sends_left - self.sends_left / 2;
        self.sends_left -= left;
        self.directed_left = left;
        self.explored = Some(Explorer {
            nodes: vec![Explored {
                actor: start,
                from: None,
                depth: 0,
                performed,
            }],
            seen,
            at: 0,
            left,
            released: 0,
        });
    }

    /// Tries the moves of the explorer's next configuration, in
    /// breadth-first order; `false` once the exploration has ended (its
    /// depth, its number of configurations or its sends reached), when what
    /// it did not send is released to the claims.
    fn grow(&mut self) -> bool {
        let Some(mut explorer) = self.explored.take() else {
            return false;
        };
        let grew = self.grow_in(&mut explorer);
        if !grew {
            // An ended exploration has nothing left, so it stays ended.
            explorer.released += std::mem::take(&mut explorer.left);
        }
        self.explored = Some(explorer);
        grew
    }

    fn grow_in(&mut self, ex: &mut Explorer) -> bool {
        loop {
            if ex.at >= ex.nodes.len()
                || ex.nodes.len() >= EXPLORE_STATES
                || ex.left == 0
                || self.search_work_spent()
                || self.cx.cancelled()
            {
                return false;
            }
            if ex.nodes[ex.at].depth < EXPLORE_DEPTH {
                break;
            }
            ex.at += 1;
        }
        let at = ex.at;
        ex.at += 1;
        let depth = ex.nodes[at].depth + 1;
        let moves = self.moves_from(&ex.nodes[at].actor, depth - 1);
        for next in moves {
            if ex.left == 0
                || ex.nodes.len() == EXPLORE_STATES
                || self.search_work_spent()
                || self.cx.cancelled()
            {
                break;
            }
            ex.left -= 1;
            let Some(actor) = self.move_to_unseen(&ex.nodes[at].actor, &next, &mut ex.seen) else {
                continue;
            };
            let performed = effect_names(actor.last_step(), &ex.nodes[at].performed);
            // The node keeps the state alone; the fork's buffers go to the
            // next fork.
            ex.nodes.push(Explored {
                actor: actor.clone_state(),
                from: Some((at, next)),
                depth,
                performed,
            });
            self.keep(actor);
        }
        true
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

    /// Plays a move, charged to the work budget; `false` when it changed
    /// nothing (an ignored event, or no timer due), so that a search does
    /// not count it.
    fn apply_move(&self, actor: &mut Actor, m: &Move) -> bool {
        let step = match m {
            Move::Send(event) => actor.send(event),
            Move::Advance(to) => actor.advance_to(*to),
        };
        self.charge(step);
        !step.ignored
    }

    /// The configuration a move leads to from `from`, played on a fork,
    /// when it changed something and is not in `seen` (then added); else
    /// the fork goes back to the spares.
    fn move_to_unseen(&mut self, from: &Actor, m: &Move, seen: &mut Fingerprints) -> Option<Actor> {
        let mut actor = self.fork(from);
        if self.apply_move(&mut actor, m) && seen.insert(actor.fingerprint()) {
            Some(actor)
        } else {
            self.keep(actor);
            None
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

    /// The moves worth trying from the actor's configuration: every payload
    /// variant of each outside event that an active state handles, and the
    /// next due timer. `i` numbers the delivery, for its id.
    fn moves_from(&mut self, actor: &Actor, i: usize) -> Vec<Move> {
        let cx = self.cx;
        let mut events: Vec<EventId> = Vec::new();
        for s in actor.active_states() {
            for &t in &cx.machine.state(s).on {
                for &e in cx.graph.trigger_events(t) {
                    if cx.graph.events.is_external(e) && !events.contains(&e) {
                        events.push(e);
                    }
                }
            }
        }
        let mut moves = Vec::with_capacity(events.len() * VARIANTS + 1);
        for e in events {
            moves.extend(self.variants(e, i).iter().cloned().map(Move::Send));
        }
        moves.extend(actor.next_due().map(Move::Advance));
        moves
    }

    /// Plays one step; returns the event delivered, if any, and whether the
    /// step took the transition it meant. Payload variants are tried from
    /// `first` on.
    fn play(
        &mut self,
        actor: &mut Actor,
        i: usize,
        step: &WitnessStep,
        first: usize,
    ) -> (Option<Event>, bool) {
        match step {
            WitnessStep::After { delay, transition } => {
                let now = actor.now();
                let step = actor.advance_to(now.saturating_add(delay.millis));
                self.charge(step);
                (None, step.transitions.contains(transition))
            }
            WitnessStep::Event { event, transition } => {
                let chosen = self.event(*event, i, first);
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
                for v in 1..VARIANTS {
                    let candidate = self.event(*event, i, (first + v) % VARIANTS);
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

    /// The distinct payload variants of delivery `i` of the event (an
    /// event whose payload has only strings has one).
    fn variants(&mut self, event: EventId, i: usize) -> Rc<[Event]> {
        if let Some(known) = self.variant_sets.get(&(event, i)) {
            return known.clone();
        }
        let mut out: Vec<Event> = Vec::with_capacity(VARIANTS);
        for variant in 0..VARIANTS {
            let e = self.event(event, i, variant);
            if !out.iter().any(|o| o.data == e.data && o.id == e.id) {
                out.push(e);
            }
        }
        let out: Rc<[Event]> = out.into();
        self.variant_sets.insert((event, i), out.clone());
        out
    }

    /// Delivery `i` of the event, payload variant `variant`.
    fn event(&mut self, event: EventId, i: usize, variant: usize) -> Event {
        if let Some(known) = self.events.get(&(event, i, variant)) {
            return known.clone();
        }
        let made = self.make_event(event, i, variant);
        self.events.insert((event, i, variant), made.clone());
        made
    }

    fn make_event(&mut self, event: EventId, i: usize, variant: usize) -> Event {
        let name = self.cx.graph.events.name(event).to_string();
        if let Some((completion, _)) = Completion::of_event(&name)
            && self.cx.graph.events.is_completion(event)
        {
            return self.completion_event(event, name, completion, i, variant);
        }
        let decl = self.cx.decl(event);
        let id_field = decl
            .and_then(|d| d.id_field.as_ref())
            .map(|n| n.text.clone());
        let id_type = decl
            .and_then(|d| d.payload.as_ref())
            .zip(id_field.as_ref())
            .and_then(|(p, f)| p.get(f))
            .map(|f| f.ty);
        let id = match id_type {
            Some(PayloadType::Number | PayloadType::Integer) => Value::Int(i as i64 + 1),
            _ => Value::from(format!("{name}-{}", i + 1)),
        };
        let fields = self.fields(event).to_vec();
        let mut data: Vec<(String, Value)> = Vec::new();
        for (field, ty) in fields {
            if Some(&field) == id_field.as_ref() {
                continue;
            }
            let fresh = Value::from(format!("{field}-{}", i + 1));
            // The values the guards compare the field with come first, so
            // that `event.status == "active"` can pass.
            if let Some(value) = self.compared(event, &field).get(variant) {
                data.push((field, value.clone()));
                continue;
            }
            // A field whose own fields the handlers read (`event.line.amount`)
            // is an object of them, each made as an untyped field is, the
            // literals the guards compare it with first.
            let inner = match ty {
                None | Some(PayloadType::Map | PayloadType::Any) => self.nested(event, &field),
                _ => Vec::new(),
            };
            if !inner.is_empty() {
                let mut made = Vec::with_capacity(inner.len());
                for sub in inner {
                    let compared = self.compared(event, &format!("{field}.{sub}"));
                    let value = match (compared.get(variant), variant) {
                        (Some(value), _) => value.clone(),
                        (None, 0) => Value::from(format!("{sub}-{}", i + 1)),
                        (None, 1) => Value::Int(1),
                        (None, _) => Value::Bool(true),
                    };
                    made.push((sub, value));
                }
                data.push((field, Value::map(made)));
                continue;
            }
            let value = match (ty, variant) {
                (Some(PayloadType::String | PayloadType::Any), _) => fresh,
                (Some(PayloadType::Number | PayloadType::Integer), 0) => Value::Int(1),
                (Some(PayloadType::Number | PayloadType::Integer), 1) => Value::Int(0),
                (Some(PayloadType::Number | PayloadType::Integer), _) => Value::Int(1_000_000),
                (Some(PayloadType::Boolean), v) => Value::Bool(v != 1),
                (Some(PayloadType::List), _) => Value::list(Vec::new()),
                (Some(PayloadType::Map), _) => Value::map(Vec::<(String, Value)>::new()),
                (None, 0) => fresh,
                (None, 1) => Value::Int(1),
                (None, _) => Value::Bool(true),
            };
            data.push((field, value));
        }
        if let Some(f) = &id_field {
            data.push((f.clone(), id.clone()));
        }
        let data = if data.is_empty() {
            Value::Null
        } else {
            Value::map(data)
        };
        Event::new(name, Some(id), data)
    }

    /// Delivery `i` of an invocation's completion, as the runtime would
    /// deliver the call's answer: its id the invocation's, and its payload
    /// `{output: {..}}` or `{error: {..}}` with the fields the handlers read
    /// there (`event.output.receipt`).
    fn completion_event(
        &mut self,
        event: EventId,
        name: String,
        completion: Completion,
        i: usize,
        variant: usize,
    ) -> Event {
        let key = completion.field();
        let cx = self.cx;
        let mut nested: Vec<String> = Vec::new();
        for_each_handler_expr(cx, event, |x| {
            if let crate::expr::ExprKind::Member(base, field) = &x.kind
                && analysis::event_field(base) == Some(key)
                && !nested.contains(field)
            {
                nested.push(field.clone());
            }
        });
        let fields: Vec<(String, Value)> = nested
            .into_iter()
            .map(|field| {
                // The values the guards compare the field with come first,
                // so that `event.error.reason == "unknown-outcome"` can pass.
                let compared = self.compared(event, &format!("{key}.{field}"));
                let value = match (compared.get(variant), variant) {
                    (Some(value), _) => value.clone(),
                    (None, 0) => Value::from(format!("{field}-{}", i + 1)),
                    (None, 1) => Value::Int(1),
                    (None, _) => Value::Bool(true),
                };
                (field, value)
            })
            .collect();
        let data = Value::map([(key, Value::map(fields))]);
        Event::new(
            name.as_str(),
            Some(Value::from(format!("{name}-{}", i + 1))),
            data,
        )
    }

    /// The literals that the guards of the event's handlers compare the
    /// payload field with (`event.f == "x"`, `event.f in ["a", "b"]`), in
    /// document order, each once.
    fn compared(&mut self, event: EventId, field: &str) -> Vec<Value> {
        let cx = self.cx;
        // Built for every event in one pass over the transitions: one pass
        // per event would cost events × transitions on a large machine.
        let table = self.compared.get_or_insert_with(|| {
            let mut table: HashMap<EventId, ComparedLiterals> = HashMap::new();
            for (index, t) in cx.machine.transitions.iter().enumerate() {
                let Some(guard) = &t.guard else {
                    continue;
                };
                let mut found = Vec::new();
                guard.walk(&mut |e| found.extend(compared_literals(e)));
                if found.is_empty() {
                    continue;
                }
                let tid = crate::model::TransitionId(index as u32);
                for &event in cx.graph.trigger_events(tid) {
                    let by_field = table.entry(event).or_default();
                    for (f, value) in &found {
                        match by_field.iter_mut().find(|(g, _)| g == f) {
                            Some((_, values)) if !values.contains(value) => {
                                values.push(value.clone())
                            }
                            Some(_) => {}
                            None => by_field.push((f.clone(), vec![value.clone()])),
                        }
                    }
                }
            }
            table
        });
        table
            .get(&event)
            .and_then(|by_field| by_field.iter().find(|(f, _)| f == field))
            .map(|(_, values)| values.clone())
            .unwrap_or_default()
    }

    /// The fields of the payload field `field` that the event's handlers
    /// read (`event.line.amount`: `amount`), in document order.
    fn nested(&self, event: EventId, field: &str) -> Vec<String> {
        let mut nested: Vec<String> = Vec::new();
        for_each_handler_expr(self.cx, event, |x| {
            if let crate::expr::ExprKind::Member(base, sub) = &x.kind
                && analysis::event_field(base) == Some(field)
                && !nested.contains(sub)
            {
                nested.push(sub.clone());
            }
        });
        nested
    }

    /// The payload fields of an event: as declared, else those that the
    /// guards and actions of its handlers read.
    fn fields(&mut self, event: EventId) -> &[(String, Option<PayloadType>)] {
        let cx = self.cx;
        self.fields.entry(event).or_insert_with(|| {
            if let Some(payload) = cx.decl(event).and_then(|d| d.payload.as_ref()) {
                return payload
                    .iter()
                    .map(|(f, p)| (f.clone(), Some(p.ty)))
                    .collect();
            }
            let mut read: Vec<String> = Vec::new();
            for_each_handler_expr(cx, event, |x| {
                if let Some(f) = analysis::event_field(x)
                    && f != "id"
                    && f != "type"
                    && !read.iter().any(|r| r == f)
                {
                    read.push(f.to_string());
                }
            });
            read.into_iter().map(|f| (f, None)).collect()
        })
    }
}

/// An edge of `Replayer::move_costs`: the state at its other end, its cost
/// in moves, and the transition it stands for.
type MoveEdge = (StateId, usize, TransitionId);

/// The edges of `Replayer::move_costs`, by state: forward (to the states a
/// transition from it may enter) and backward.
type MoveCosts = (Vec<Vec<MoveEdge>>, Vec<Vec<MoveEdge>>);

/// By state, the cheapest way from one of `from` over the edges, a 0-1
/// breadth-first search (what costs nothing goes to the front).
fn fewest_moves(edges: &[Vec<MoveEdge>], from: &[StateId]) -> Vec<usize> {
    let mut fewest = vec![usize::MAX; edges.len()];
    let mut queue: std::collections::VecDeque<(StateId, usize)> = Default::default();
    for &s in from {
        fewest[s.index()] = 0;
        queue.push_back((s, 0));
    }
    while let Some((s, moves)) = queue.pop_front() {
        if moves > fewest[s.index()] {
            continue;
        }
        for &(u, cost, _) in &edges[s.index()] {
            if moves + cost < fewest[u.index()] {
                fewest[u.index()] = moves + cost;
                if cost == 0 {
                    queue.push_front((u, moves));
                } else {
                    queue.push_back((u, moves + 1));
                }
            }
        }
    }
    fewest
}

/// The states a transition to `target` may enter, into `out` (with
/// repeats): the target's default entry (`MachineGraph::default_entered`),
/// its ancestors, and the default entry of the other regions of a parallel
/// ancestor; for a history target, all of its parent, which covers what it
/// restores and its default.
pub(super) fn entry_set(graph: &MachineGraph, target: StateId, out: &mut Vec<StateId>) {
    let m = graph.machine;
    let base = if graph.is_history(target) {
        let parent = m.state(target).parent.unwrap_or(target);
        out.extend(graph.subtree(parent));
        parent
    } else {
        out.extend(graph.default_entered(target));
        target
    };
    let mut below = base;
    for a in m.ancestors(base) {
        out.push(a);
        if m.state(a).kind == crate::model::StateKind::Parallel {
            for region in m.substates(a).filter(|&r| r != below) {
                out.extend(graph.default_entered(region));
            }
        }
        below = a;
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

const HOST_GUARDS: &str = "the replay asks a host guard, which only the host program answers";

/// The payload fields an expression compares with a literal, and the
/// literal: `event.f == "x"` (either way round, any comparison) and
/// `event.f in ["a", "b"]`.
/// `f` for `event.f`, and `f.g` for `event.f.g` (a completion's
/// `event.error.reason`): the payload field an expression reads.
fn event_path(expr: &crate::expr::Expr) -> Option<String> {
    if let Some(field) = analysis::event_field(expr) {
        return Some(field.to_string());
    }
    match &expr.kind {
        crate::expr::ExprKind::Member(base, field) => {
            analysis::event_field(base).map(|outer| format!("{outer}.{field}"))
        }
        _ => None,
    }
}

fn compared_literals(expr: &crate::expr::Expr) -> Vec<(String, Value)> {
    use crate::expr::{BinaryOp, ExprKind};
    let literal = |e: &crate::expr::Expr| match &e.kind {
        ExprKind::String(s) => Some(Value::from(s.clone())),
        ExprKind::Int(i) => Some(Value::Int(*i)),
        ExprKind::Bool(b) => Some(Value::Bool(*b)),
        _ => None,
    };
    let ExprKind::Binary(op, a, b) = &expr.kind else {
        return Vec::new();
    };
    match op {
        BinaryOp::In => match (event_path(a), &b.kind) {
            (Some(f), ExprKind::List(items)) => items
                .iter()
                .filter_map(|i| literal(i).map(|v| (f.clone(), v)))
                .collect(),
            _ => Vec::new(),
        },
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            match (event_path(a), literal(b), event_path(b), literal(a)) {
                (Some(f), Some(v), _, _) | (_, _, Some(f), Some(v)) => vec![(f, v)],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

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
                crate::model::OpaqueKind::Assign(None) | crate::model::OpaqueKind::Actions => true,
            };
            (part.name.clone(), (i, reads_what_it_writes))
        })
        .collect()
}

/// Every subexpression of the guards and actions of the transitions the
/// event triggers.
fn for_each_handler_expr(cx: &Cx, event: EventId, mut f: impl FnMut(&crate::expr::Expr)) {
    for (index, t) in cx.machine.transitions.iter().enumerate() {
        let tid = crate::model::TransitionId(index as u32);
        if !cx.graph.trigger_events(tid).contains(&event) {
            continue;
        }
        let mut visit = |e: &crate::expr::Expr| e.walk(&mut f);
        if let Some(g) = &t.guard {
            visit(g);
        }
        for action in &t.actions {
            for_each_expr(action, &mut visit);
        }
    }
}

fn for_each_expr(action: &Action, f: &mut impl FnMut(&crate::expr::Expr)) {
    match action {
        Action::Assign { fields, .. } => fields.values().for_each(|a| f(&a.expr)),
        Action::Raise { data, .. } | Action::Send { data, .. } => {
            data.values().for_each(|a| f(&a.expr))
        }
        Action::Effect { args, .. } => args.values().for_each(|a| f(&a.expr)),
        Action::Log { expr, .. } => f(expr),
        Action::Cancel { .. } | Action::Host { .. } => {}
    }
}
