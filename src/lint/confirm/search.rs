//! The search of the machine's own runs for one that confirms a claim:
//! breadth-first from the start (`Explorer`), directed at the claim's
//! sources (`find_directed`), then payload variants and continuations
//! from each configuration where the claim's transition can be taken.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{
    CLAIM_SENDS, CLAIM_STARTS, CONTINUATION_DEPTH, CONTINUATION_STATES, Claim, DIRECTED_SENDS,
    EXPLORE_DEPTH, EXPLORE_STATES, HOST_GUARDS, Replay, Replayer, SEARCH_MICROSTEPS, Shape,
    VARIANTS, effect_names, performs, repeat_must_take,
};
use crate::expr::Event;
use crate::interp::Actor;
use std::collections::HashSet;

use crate::graph::EventId;
use crate::model::{Duration, StateId, TransitionId};

impl<'a, 'm> Replayer<'a, 'm> {
    /// A run of the interpreter that confirms the claim, replayed once more
    /// from the start to be sure of it, as a `Replay` with its witness.
    /// A run of the interpreter that confirms the claim, replayed once more
    /// from the start to be sure of it, as a `Replay` with its witness; else
    /// why no run was found, naming the bound the search stopped at.
    pub(crate) fn search(&mut self, claim: &Claim) -> Result<Replay, String> {
        self.bound = None;
        let found = self.find_run(claim);
        let bound =
            (self.bound.take()).or_else(|| self.explored.as_ref().and_then(|e| e.cut.clone()));
        let unfound = || {
            match bound {
            Some(bound) => format!(
                "no other run the search tried shows it: {}",
                bound.account()
            ),
            None => "no other run the search tried shows it, though it tried every configuration it reached with the payloads it synthesizes".to_string(),
        }
        };
        let Some((moves, first)) = found else {
            return Err(unfound());
        };
        self.confirm_found(claim, moves, first).ok_or_else(unfound)
    }

    /// The run the search found, played again (see `search`).
    fn confirm_found(&mut self, claim: &Claim, moves: Vec<Move>, first: usize) -> Option<Replay> {
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
        // Each delivery with its payload where one carries a payload the
        // reasoning chose, so that the run can be played again.
        let mut reasoned = false;
        for (i, m) in moves.iter().enumerate() {
            if let Move::Send(e) = m
                && let Some(id) = self.cx.graph.events.get(&e.name)
                && !self.synthesized(id, i, &e.data)
            {
                reasoned = true;
            }
        }
        let mut rendered: Vec<String> = Vec::with_capacity(moves.len() + 1);
        let mut now = 0u64;
        for m in &moves {
            match m {
                Move::Send(e) if reasoned => rendered.push(super::written(e)),
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
        if asked {
            return Some(Replay::undecided(HOST_GUARDS));
        }
        Some(Replay::confirmed(Some(rendered)))
    }

    /// The moves of a run that confirms the claim, and the index of the
    /// delivery that the run's end repeats.
    pub(super) fn find_run(&mut self, claim: &Claim) -> Option<(Vec<Move>, usize)> {
        // The explored configurations are at most `EXPLORE_DEPTH` moves
        // from the start: none has the first delivery's source active if
        // every source takes more moves to enter.
        let sources = claim.sources(self.cx.machine);
        if !sources.is_empty() {
            let fewest = self.fewest_moves_to_enter();
            if sources.iter().all(|s| fewest[s.index()] > EXPLORE_DEPTH) {
                let nearest = (sources.iter())
                    .min_by_key(|s| fewest[s.index()])
                    .copied()
                    .unwrap_or(sources[0]);
                let name = self.cx.machine.display_name(nearest).to_string();
                self.bound = Some(Bound::Entered(name, fewest[nearest.index()]));
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

    pub(super) fn find_in(
        &mut self,
        claim: &Claim,
        sources: &[StateId],
    ) -> Option<(Vec<Move>, usize)> {
        let retried = claim.retried();
        if retried.is_none() && !sources.is_empty() {
            // Where the directed search stopped does not say why no run was
            // found: the breadth-first search after it decides that.
            let bound = self.bound.take();
            let found = self.find_directed(claim, sources);
            self.bound = bound;
            if found.is_some() {
                return found;
            }
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
            if let Some(effect) = retried
                && !node.performed.iter().any(|p| &**p == effect)
            {
                continue;
            }
            let mut places = Vec::new();
            if sources.is_empty() || sources.iter().any(|&s| node.actor.is_active(s)) {
                places.push((node.actor.clone(), moves_to(&explored.nodes, at)));
            } else if retried.is_some() {
                // The configuration a failure returns to may be one the
                // exploration reached before the effect was performed, and
                // so did not keep again: one move on from where it was
                // performed.
                let (actor, before) = (node.actor.clone(), moves_to(&explored.nodes, at));
                places = self.returns_to(&actor, &before, sources);
            }
            for (start, before) in places {
                if starts == CLAIM_STARTS {
                    self.bound.get_or_insert(Bound::Starts);
                    return None;
                }
                starts += 1;
                match self.try_start(claim, &start, before) {
                    Start::Found(found) => return Some(found),
                    Start::Stop => return None,
                    Start::Next => {}
                }
            }
        }
        None
    }

    /// The configurations one move from `actor` (reached by `before`) in
    /// which a source is active, each with the moves there.
    fn returns_to(
        &mut self,
        actor: &Actor,
        before: &[Move],
        sources: &[StateId],
    ) -> Vec<(Actor, Vec<Move>)> {
        let mut found = Vec::new();
        for next in self.moves_from(actor, before.len()) {
            if self.sends_left == 0 || self.search_work_spent() || self.cx.cancelled() {
                self.stopped();
                break;
            }
            self.sends_left -= 1;
            let mut after = self.fork(actor);
            if self.apply_move(&mut after, &next) && sources.iter().any(|&s| after.is_active(s)) {
                let mut moves = before.to_vec();
                moves.push(next);
                found.push((after, moves));
            } else {
                self.keep(after);
            }
        }
        found
    }

    /// The first deliveries of the claim's event from one configuration, and
    /// what follows them, reached by the moves `before`.
    pub(super) fn try_start(&mut self, claim: &Claim, start: &Actor, before: Vec<Move>) -> Start {
        let i = before.len();
        let variants = self.variants(claim.event, i);
        // The payload the reasoning chose for the claim's guards, first.
        let reasoned = self.reason_start(claim, start, i);
        if reasoned.is_none()
            && let Some(mut moves) = self.reason_prefix(claim, &before)
            && let Some(Move::Send(first)) = moves.pop()
        {
            // The run there with the payloads the reasoning chose for the
            // deliveries before it, whose handlers the claim's guards read.
            let mut actor = self.started();
            for m in &moves {
                self.apply_move(&mut actor, m);
            }
            match self.try_events(claim, &actor, moves, std::iter::once(&first)) {
                Start::Next => {}
                decided => return decided,
            }
        }
        self.try_events(claim, start, before, reasoned.iter().chain(variants.iter()))
    }

    /// The deliveries `events` of the claim's event from one configuration
    /// (each the first delivery), and what follows them.
    fn try_events<'e>(
        &mut self,
        claim: &Claim,
        start: &Actor,
        before: Vec<Move>,
        events: impl Iterator<Item = &'e Event>,
    ) -> Start {
        let takes = repeat_must_take(claim);
        let retried = claim.retried();
        let i = before.len();
        for event in events {
            if self.sends_left == 0 || self.search_work_spent() || self.cx.cancelled() {
                self.stopped();
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
    pub(super) fn find_directed(
        &mut self,
        claim: &Claim,
        sources: &[StateId],
    ) -> Option<(Vec<Move>, usize)> {
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
    pub(super) fn continue_after(
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
                self.bound.get_or_insert(Bound::Continuations);
                continue;
            }
            for next in self.moves_from(&actor, moves.len()) {
                if visited == CONTINUATION_STATES {
                    self.bound.get_or_insert(Bound::Continuations);
                    return None;
                }
                if self.sends_left == 0 || self.search_work_spent() || self.cx.cancelled() {
                    self.stopped();
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
    pub(super) fn explore(&mut self) {
        if self.explored.is_some() {
            return;
        }
        let start = self.started();
        let performed = effect_names(start.last_step(), &[]);
        let mut seen = Fingerprints::default();
        seen.insert(start.fingerprint());
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
            cut: None,
        });
    }

    /// Tries the moves of the explorer's next configuration, in
    /// breadth-first order; `false` once the exploration has ended (its
    /// depth, its number of configurations or its sends reached), when what
    /// it did not send is released to the claims.
    pub(super) fn grow(&mut self) -> bool {
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

    pub(super) fn grow_in(&mut self, ex: &mut Explorer) -> bool {
        loop {
            if ex.at >= ex.nodes.len() {
                return false;
            }
            let cut = if ex.nodes.len() >= EXPLORE_STATES {
                Some(Bound::Configurations)
            } else if ex.left == 0 {
                Some(Bound::Sends)
            } else {
                self.spent()
            };
            if let Some(cut) = cut {
                ex.cut.get_or_insert(cut);
                return false;
            }
            if ex.nodes[ex.at].depth < EXPLORE_DEPTH {
                break;
            }
            // Its moves are not tried: runs longer than the search's.
            ex.cut.get_or_insert(Bound::Moves);
            ex.at += 1;
        }
        let at = ex.at;
        ex.at += 1;
        let depth = ex.nodes[at].depth + 1;
        let moves = self.moves_from(&ex.nodes[at].actor, depth - 1);
        for next in moves {
            let cut = if ex.nodes.len() == EXPLORE_STATES {
                Some(Bound::Configurations)
            } else if ex.left == 0 {
                Some(Bound::Sends)
            } else {
                self.spent()
            };
            if let Some(cut) = cut {
                ex.cut.get_or_insert(cut);
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

    /// Plays a move, charged to the work budget; `false` when it changed
    /// nothing (an ignored event, or no timer due), so that a search does
    /// not count it.
    pub(super) fn apply_move(&self, actor: &mut Actor, m: &Move) -> bool {
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
    pub(super) fn move_to_unseen(
        &mut self,
        from: &Actor,
        m: &Move,
        seen: &mut Fingerprints,
    ) -> Option<Actor> {
        let mut actor = self.fork(from);
        if self.apply_move(&mut actor, m) && seen.insert(actor.fingerprint()) {
            Some(actor)
        } else {
            self.keep(actor);
            None
        }
    }

    /// The moves worth trying from the actor's configuration: every payload
    /// variant of each outside event that an active state handles, and the
    /// next due timer. `i` numbers the delivery, for its id.
    pub(super) fn moves_from(&mut self, actor: &Actor, i: usize) -> Vec<Move> {
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
}

/// One move of a run the search plays: a delivery, or the clock moved to
/// the next due timer.
#[derive(Clone, Debug)]
pub(super) enum Move {
    Send(Event),
    Advance(u64),
}

/// What trying a configuration as the place of a claim's first delivery
/// gave: a run, nothing (try the next), or the end of the search's budget.
pub(super) enum Start {
    Found((Vec<Move>, usize)),
    Next,
    Stop,
}

/// The configurations reached from the start, breadth-first, grown as far
/// as the searches read them (`Replayer::grow`): a claim that finds its run,
/// or its starts, among the first ones leaves the rest unexplored.
pub(super) struct Explorer {
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
    /// The bound that stopped the exploration short of every configuration
    /// the machine reaches, if one did.
    cut: Option<Bound>,
}

/// The moves from the start to node `k` of a search's `nodes`.
pub(super) fn moves_to(nodes: &[Explored], mut k: usize) -> Vec<Move> {
    let mut moves = Vec::with_capacity(nodes[k].depth);
    while let Some((parent, m)) = &nodes[k].from {
        moves.push(m.clone());
        k = *parent;
    }
    moves.reverse();
    moves
}

/// A set of `Actor::fingerprint`s, which are hashes already.
pub(super) type Fingerprints = HashSet<u64, foldhash::fast::FixedState>;

/// A configuration a search reached, and how.
pub(super) struct Explored {
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

/// A bound at which a search stopped short of every run it could try.
#[derive(Clone, Debug)]
pub(super) enum Bound {
    /// The claim's state (its display name) takes at least this many moves
    /// to enter, more than the search makes.
    Entered(String, usize),
    /// Runs of more than `EXPLORE_DEPTH` moves from the start.
    Moves,
    /// `EXPLORE_STATES` configurations.
    Configurations,
    /// The events the searches may send.
    Sends,
    /// The interpreter work the searches may do.
    Work,
    /// `CLAIM_STARTS` configurations tried as the place of the first delivery.
    Starts,
    /// What a continuation after the first delivery may visit.
    Continuations,
    /// The lint run was cancelled.
    Cancelled,
}

impl Bound {
    /// What stopped the search, for the finding's account.
    pub(super) fn account(&self) -> String {
        match self {
            Bound::Entered(state, fewest) => format!(
                "`{state}` takes at least {fewest} moves to enter, more than the {EXPLORE_DEPTH} the search makes"
            ),
            Bound::Moves => {
                format!("it stopped at its bound of {EXPLORE_DEPTH} moves from the start")
            }
            Bound::Configurations => {
                format!("it stopped at its bound of {EXPLORE_STATES} configurations")
            }
            Bound::Sends => {
                "it stopped when its share of the events the searches may send was spent".into()
            }
            Bound::Work => format!(
                "it stopped when the searches' budget of {SEARCH_MICROSTEPS} interpreter microsteps was spent"
            ),
            Bound::Starts => format!(
                "it stopped after trying {CLAIM_STARTS} configurations as the place of the first delivery"
            ),
            Bound::Continuations => format!(
                "it stopped at its bound of {CONTINUATION_DEPTH} moves and {CONTINUATION_STATES} configurations after the first delivery"
            ),
            Bound::Cancelled => "the lint run was cancelled".into(),
        }
    }
}

impl Replayer<'_, '_> {
    /// The work budget of the searches, when it is spent (or the run
    /// cancelled).
    fn spent(&self) -> Option<Bound> {
        if self.search_work_spent() {
            Some(Bound::Work)
        } else if self.cx.cancelled() {
            Some(Bound::Cancelled)
        } else {
            None
        }
    }

    /// Notes the spent budget that stopped a claim's search.
    fn stopped(&mut self) {
        let bound = match self.spent() {
            Some(bound) => bound,
            None => Bound::Sends,
        };
        self.bound.get_or_insert(bound);
    }
}

/// The most configurations a proof by exploration reads (`explored_refutes`):
/// it plays every move from each.
const PROOF_STATES: usize = 500;

/// Whether nothing the machine does depends on an event's payload or id,
/// or on the host: no expression reads `event`, no guard is the host's, no
/// host action or opaque part may write the context, and nothing is
/// invoked (a completion carries its output). Then a repeat does what any
/// other delivery of its event does, and the configurations the search
/// reaches with one payload per event are all the machine can reach.
fn payload_blind(m: &crate::model::Machine) -> bool {
    use super::super::analysis::reads_event;
    let blind = m.guards.is_empty()
        && m.opaque.is_empty()
        && m.states.iter().all(|s| s.invoke.is_empty())
        && (m.transitions.iter()).all(|t| t.guard.as_ref().is_none_or(|g| !reads_event(g)));
    if !blind {
        return false;
    }
    m.actions().all(|action| {
        let mut reads = matches!(action, crate::model::Action::Host { .. });
        if !reads {
            super::deliveries::for_each_expr(action, &mut |e| reads |= reads_event(e));
        }
        !reads
    })
}

impl Replayer<'_, '_> {
    /// Why no run shows the claim, proved by exploring every configuration
    /// the machine can reach: in a machine blind to payloads
    /// (`payload_blind`) whose exploration ended with no bound cut, the
    /// claim's first delivery is played from each configuration, and its
    /// repeat from each configuration reachable after it. `None` when that
    /// is not proved.
    pub(super) fn explored_refutes(&mut self, claim: &Claim) -> Option<String> {
        if claim.shape == Shape::Retry {
            return None;
        }
        let machine = self.cx.machine;
        if !*self.blind.get_or_insert_with(|| payload_blind(machine)) {
            return None;
        }
        self.explore();
        while self.grow() {}
        let ex = self.explored.as_ref()?;
        if ex.cut.is_some() || ex.at < ex.nodes.len() || ex.nodes.len() > PROOF_STATES {
            return None;
        }
        let actors: Vec<Actor> = ex.nodes.iter().map(|n| n.actor.clone()).collect();
        let index: std::collections::HashMap<u64, usize> = (actors.iter().enumerate())
            .map(|(i, a)| (a.fingerprint(), i))
            .collect();
        // The configurations each move leads to: all explored, since the
        // exploration ended by itself.
        let next = match &self.successors {
            Some(next) => next.clone(),
            None => {
                let mut next: Vec<Vec<usize>> = Vec::with_capacity(actors.len());
                for a in &actors {
                    let mut out = Vec::new();
                    for m in self.moves_from(a, 0) {
                        let mut b = self.fork(a);
                        let changed = self.apply_move(&mut b, &m);
                        let at = index.get(&b.fingerprint()).copied();
                        self.keep(b);
                        match (changed, at) {
                            (false, _) => {}
                            (true, Some(j)) => out.push(j),
                            (true, None) => return None,
                        }
                    }
                    next.push(out);
                    if self.spent().is_some() {
                        return None;
                    }
                }
                let next = std::rc::Rc::new(next);
                self.successors = Some(next.clone());
                next
            }
        };
        let event = self.event(claim.event, 0, 0);
        let takes = repeat_must_take(claim);
        let mut harmful: Vec<Option<bool>> = vec![None; actors.len()];
        let sources = claim.sources(self.cx.machine);
        let mut firsts = 0;
        for a in &actors {
            if !sources.is_empty() && !sources.iter().any(|&s| a.is_active(s)) {
                continue;
            }
            let mut b = self.fork(a);
            let step = b.send(&event);
            self.charge(step);
            let taken = !step.ignored
                && (claim.taking.is_empty()
                    || claim.taking.iter().any(|t| step.transitions.contains(t)));
            let at = index.get(&b.fingerprint()).copied();
            self.keep(b);
            if !taken {
                continue;
            }
            firsts += 1;
            let j = at?;
            // The configurations where the repeat may come.
            let mut reach: Vec<usize> = match claim.shape {
                Shape::Immediate => vec![j],
                Shape::Later => next[j].clone(),
                _ => std::iter::once(j).chain(next[j].iter().copied()).collect(),
            };
            let mut seen = vec![false; actors.len()];
            while let Some(d) = reach.pop() {
                if std::mem::replace(&mut seen[d], true) {
                    continue;
                }
                let changes = *harmful[d]
                    .get_or_insert_with(|| self.repeat_changes(&actors[d], &event, takes).is_ok());
                if changes {
                    return None;
                }
                if claim.shape != Shape::Immediate {
                    reach.extend(&next[d]);
                }
            }
            if self.spent().is_some() {
                return None;
            }
        }
        let name = self.cx.graph.events.name(claim.event);
        Some(if firsts == 0 {
            format!(
                "in none of the {} configurations the machine can reach, every one explored, does a first `{name}` take this transition",
                actors.len()
            )
        } else {
            format!(
                "the machine reaches {} configurations, every one explored, and its payloads decide nothing: in none where a repeat of `{name}` may come does it change anything",
                actors.len()
            )
        })
    }
}
