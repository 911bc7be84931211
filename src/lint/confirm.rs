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
//! Replays are bounded: at most `MAX_REPLAYS` per lint and machine (the
//! findings nearest the top of the file first) and `MAX_STEPS` steps per
//! witness, past which no replay is made and `confirmed` stays `None`; and
//! each step at `REPLAY_MICROSTEPS` microsteps, so that a machine that
//! loops on its own stops instead of hanging the linter. That is how an
//! S006 loop is confirmed: the last step of its witness runs out of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Cx;
use super::analysis;
use super::witness::{Witness, WitnessEnd, WitnessStep};
use crate::expr::{Event, Value};
use crate::graph::EventId;
use crate::interp::{Actor, Chart};
use crate::model::{Action, PayloadType};

const MAX_REPLAYS: usize = 500;
/// One budget per lint.
const LINTS: usize = super::Lint::ALL.len();
const MAX_STEPS: usize = 200;
/// The interpreter's microstep budget per step of a replay.
pub(super) const REPLAY_MICROSTEPS: usize = 1_000;
/// Payload variants tried per delivery.
const VARIANTS: usize = 3;

pub(super) struct Replayer<'a, 'm> {
    cx: &'a Cx<'m>,
    chart: Arc<Chart>,
    budget: [usize; LINTS],
    /// The actor in its initial configuration, cloned for each replay.
    started: Option<Actor>,
    /// Set by every host guard the replay asks; the chart's stand-ins for
    /// the host's implementations only record that they were asked.
    asked_host: Arc<AtomicBool>,
    /// Whether starting the machine already asked a host guard.
    start_asked_host: bool,
    fields: HashMap<EventId, Vec<(String, Option<PayloadType>)>>,
}

impl<'a, 'm> Replayer<'a, 'm> {
    pub fn new(cx: &'a Cx<'m>) -> Self {
        let asked_host = Arc::new(AtomicBool::new(false));
        let mut builder = Chart::builder(cx.machine.clone());
        for guard in &cx.machine.guards {
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
            .unwrap_or_else(|_| Chart::new(cx.machine.clone()));
        // A machine's own lower budget holds in the replay too.
        let limit = chart.microstep_limit().min(REPLAY_MICROSTEPS);
        let chart = chart.with_microstep_limit(limit);
        Replayer {
            cx,
            chart: Arc::new(chart),
            budget: [MAX_REPLAYS; LINTS],
            started: None,
            asked_host,
            start_asked_host: false,
            fields: HashMap::new(),
        }
    }

    /// Replays the witness of a finding of `lint`; `None` when no replay was
    /// made, or when the replay asked a host guard.
    pub fn confirm(&mut self, lint: super::Lint, witness: &Witness) -> Option<bool> {
        self.asked_host.store(false, Ordering::Relaxed);
        let verdict = self.replay(lint, witness);
        if self.start_asked_host || self.asked_host.load(Ordering::Relaxed) {
            return None;
        }
        verdict
    }

    fn replay(&mut self, lint: super::Lint, witness: &Witness) -> Option<bool> {
        let budget = self.budget.get_mut(lint as usize)?;
        if *budget == 0 || witness.steps.len() > MAX_STEPS {
            return None;
        }
        *budget -= 1;
        let retry = matches!(witness.end, WitnessEnd::Retry { .. });
        let prefix = if retry {
            witness.steps.len().checked_sub(1)?
        } else {
            witness.steps.len()
        };
        if self.started.is_none() {
            self.started = Some(Actor::new(Arc::clone(&self.chart)));
            self.start_asked_host = self.asked_host.load(Ordering::Relaxed);
        }
        let mut actor = self.started.clone()?;
        let repeated = match witness.end {
            WitnessEnd::Repeat(i) if i < prefix => Some(i),
            _ => None,
        };
        let mut sent: Vec<Option<Event>> = Vec::with_capacity(witness.steps.len());
        let mut before_repeated = None;
        for (i, step) in witness.steps[..prefix].iter().enumerate() {
            if Some(i) == repeated {
                before_repeated = Some(actor.clone());
            }
            sent.push(self.play(&mut actor, i, step, 0));
        }
        let verdict = self.verdict(actor, &sent, witness);
        if verdict != Some(false) {
            return verdict;
        }
        // The repeat carries the payload of the delivery it repeats, so
        // another payload there may pass the guard of the handler that
        // accepts the repeat.
        let (Some(r), Some(start)) = (repeated, before_repeated) else {
            return verdict;
        };
        for variant in 1..VARIANTS {
            let mut actor = start.clone();
            let mut sent = sent[..r].to_vec();
            sent.push(self.play(&mut actor, r, &witness.steps[r], variant));
            for (i, step) in witness.steps[r + 1..prefix].iter().enumerate() {
                sent.push(self.play(&mut actor, r + 1 + i, step, 0));
            }
            if self.verdict(actor, &sent, witness) == Some(true) {
                return Some(true);
            }
        }
        verdict
    }

    /// Whether the end of the witness changes something, from `actor`
    /// after the steps before it.
    fn verdict(
        &mut self,
        mut actor: Actor,
        sent: &[Option<Event>],
        witness: &Witness,
    ) -> Option<bool> {
        match &witness.end {
            WitnessEnd::Repeat(i) => {
                let event = sent.get(*i)?.clone()?;
                let before = actor.clone();
                let step = actor.send(&event);
                if step.ignored {
                    return Some(false);
                }
                let effects = !step.effects.is_empty();
                let moved = !before.active_states().eq(actor.active_states());
                Some(effects || moved || before.context() != actor.context())
            }
            // The last step, or the start, ran out of microsteps (S006).
            WitnessEnd::Loop { .. } => Some(actor.last_step().unsettled.is_some()),
            WitnessEnd::Retry { effect } => {
                let step = witness.steps.last()?;
                self.play(&mut actor, witness.steps.len() - 1, step, 0);
                Some(
                    actor
                        .last_step()
                        .effects
                        .iter()
                        .any(|e| &*e.name == effect.as_str()),
                )
            }
        }
    }

    /// Plays one step; returns the event delivered, if any.
    /// Payload variants are tried from `first` on.
    fn play(
        &mut self,
        actor: &mut Actor,
        i: usize,
        step: &WitnessStep,
        first: usize,
    ) -> Option<Event> {
        match step {
            WitnessStep::After { delay, .. } => {
                let now = actor.now();
                actor.advance_to(now.saturating_add(delay.millis));
                None
            }
            WitnessStep::Event { event, transition } => {
                let chosen = self.event(*event, i, first);
                let Some(t) = transition else {
                    actor.send(&chosen);
                    return Some(chosen);
                };
                let mut trial = actor.clone();
                if trial.send(&chosen).transitions.contains(t) {
                    *actor = trial;
                    return Some(chosen);
                }
                // Other payloads, for the guards on the way.
                for v in 1..VARIANTS {
                    let candidate = self.event(*event, i, (first + v) % VARIANTS);
                    let mut trial = actor.clone();
                    if trial.send(&candidate).transitions.contains(t) {
                        *actor = trial;
                        return Some(candidate);
                    }
                }
                actor.send(&chosen);
                Some(chosen)
            }
        }
    }

    /// Delivery `i` of the event, payload variant `variant`.
    fn event(&mut self, event: EventId, i: usize, variant: usize) -> Event {
        let name = self.cx.graph.events.name(event).to_string();
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
            for (index, t) in cx.machine.transitions.iter().enumerate() {
                let tid = crate::model::TransitionId(index as u32);
                if !cx.graph.trigger_events(tid).contains(&event) {
                    continue;
                }
                let mut visit = |e: &crate::expr::Expr| {
                    e.walk(&mut |x| {
                        if let Some(f) = analysis::event_field(x)
                            && f != "id"
                            && f != "type"
                            && !read.iter().any(|r| r == f)
                        {
                            read.push(f.to_string());
                        }
                    })
                };
                if let Some(g) = &t.guard {
                    visit(g);
                }
                for action in &t.actions {
                    for_each_expr(action, &mut visit);
                }
            }
            read.into_iter().map(|f| (f, None)).collect()
        })
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
