//! Host guards and host actions: what a machine leaves to the program that
//! runs it, as XState's named guards and actions (`setup({ guards, actions })`).
//!
//! A machine declares its host guards (`guards: [isValid]`) and names host
//! actions where it writes a bare action name that is not a declared effect.
//! The host registers their implementations on the chart before it shares
//! it, with [`Chart::builder`]. They live on the chart, not in an actor's
//! state, so snapshots hold none of them and restore as before.

use std::fmt;
use std::sync::Arc;

use crate::diagnostic::did_you_mean;
use crate::expr::{Event, Layout, Value};
use crate::model::{Action, Machine};

use super::chart::Chart;

/// What a host action's failure carries: any error, so that `?` works in it.
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) type GuardFn = Arc<dyn Fn(&HostCall) -> bool + Send + Sync>;
pub(crate) type ActionFn = Arc<dyn Fn(&HostCall) -> Result<Updates, HostError> + Send + Sync>;

/// What a host guard or action sees: its name, the context and the event
/// being processed, read-only.
pub struct HostCall<'a> {
    pub(crate) name: &'a str,
    pub(crate) layout: &'a Layout,
    pub(crate) context: &'a [Value],
    pub(crate) event: Option<&'a Event>,
}

impl<'a> HostCall<'a> {
    /// The guard's or action's name, as the machine writes it.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The context field's current value.
    pub fn context(&self, field: &str) -> Option<&'a Value> {
        let slot = self.layout.slot(field)?;
        self.context.get(slot as usize)
    }

    /// The whole context as a map.
    pub fn context_map(&self) -> Value {
        self.layout.to_map(self.context)
    }

    /// The event being processed; `None` at the start and for an eventless
    /// transition taken outside any event (a fired timer).
    pub fn event(&self) -> Option<&'a Event> {
        self.event
    }
}

impl fmt::Debug for HostCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostCall")
            .field("name", &self.name)
            .field("context", &self.context_map())
            .field("event", &self.event)
            .finish()
    }
}

/// The context updates a host action returns. They apply as one `assign`
/// does: all of them or, when one names a field the context lacks, none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Updates {
    fields: Vec<(String, Value)>,
}

impl Updates {
    /// No update: the action only acted outside the machine.
    pub fn new() -> Updates {
        Updates::default()
    }

    /// Sets `field` to `value`; a field set twice keeps the last value.
    pub fn set(mut self, field: impl Into<String>, value: impl Into<Value>) -> Updates {
        let field = field.into();
        self.fields.retain(|(f, _)| *f != field);
        self.fields.push((field, value.into()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The updates in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.fields.iter().map(|(f, v)| (f.as_str(), v))
    }
}

/// An implementation the host may or may not have registered; its `Debug`
/// says which, since a closure has nothing else to show.
#[derive(Clone)]
pub(crate) struct Registered<F>(pub Option<F>);

impl<F> fmt::Debug for Registered<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "registered",
            None => "unregistered",
        })
    }
}

/// The implementations registered for a chart, by name.
#[derive(Clone, Default)]
pub(crate) struct Host {
    pub guards: Vec<(String, GuardFn)>,
    pub actions: Vec<(String, ActionFn)>,
}

impl Host {
    pub fn guard(&self, name: &str) -> Option<&GuardFn> {
        self.guards.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }

    pub fn action(&self, name: &str) -> Option<&ActionFn> {
        self.actions.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// Builds a [`Chart`] with host guards and actions registered on it.
///
/// ```
/// use std::sync::Arc;
/// use idemchart::expr::{Event, Value};
/// use idemchart::interp::{Actor, Chart, Updates};
/// use idemchart::syntax::{Syntax, parse};
///
/// let yaml = r#"
/// machine: door
/// context: { opened: 0 }
/// guards: [unlocked]
/// initial: closed
/// states:
///   closed: { on: { OPEN: { target: opened, guard: unlocked, actions: [count] } } }
///   opened: {}
/// "#;
/// let machine = parse(yaml, Syntax::Yaml).unwrap();
/// let chart = Chart::builder(machine)
///     .guard("unlocked", |_| true)
///     .action("count", |cx| {
///         let opened = cx.context("opened").and_then(|v| match v {
///             Value::Int(n) => Some(*n),
///             _ => None,
///         });
///         Ok(Updates::new().set("opened", opened.unwrap_or(0) + 1))
///     })
///     .build()
///     .unwrap();
/// let mut actor = Actor::new(Arc::new(chart));
/// let step = actor.send(&Event::named("OPEN"));
/// assert!(step.effects[0].host && step.effects[0].ran);
/// assert_eq!(actor.context_value("opened"), Some(&Value::Int(1)));
/// ```
pub struct ChartBuilder {
    machine: Arc<Machine>,
    host: Host,
}

impl fmt::Debug for ChartBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn names<F>(list: &[(String, F)]) -> Vec<&str> {
            list.iter().map(|(n, _)| n.as_str()).collect()
        }
        f.debug_struct("ChartBuilder")
            .field("machine", &self.machine.name)
            .field("guards", &names(&self.host.guards))
            .field("actions", &names(&self.host.actions))
            .finish()
    }
}

impl Chart {
    /// Starts a chart whose host guards and actions the host registers
    /// before `build`. A machine without them needs none: `Chart::new`
    /// does the same then.
    ///
    /// ```
    /// use idemchart::interp::Chart;
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse(
    ///     "machine m\nguards ready\ninitial a\nstate a { on GO -> b if ready }\nstate b",
    ///     Syntax::Dsl,
    /// )
    /// .unwrap();
    /// // Every declared guard needs its implementation.
    /// let error = Chart::builder(machine.clone()).build().unwrap_err();
    /// assert_eq!(error.unregistered_guards, ["ready"]);
    /// assert!(Chart::builder(machine).guard("ready", |_| true).build().is_ok());
    /// ```
    pub fn builder(machine: impl Into<Arc<Machine>>) -> ChartBuilder {
        ChartBuilder {
            machine: machine.into(),
            host: Host::default(),
        }
    }
}

impl ChartBuilder {
    /// Registers the implementation of the host guard `name`, which the
    /// machine declares under `guards`. It answers from the context and
    /// the event; a second registration of a name replaces the first.
    ///
    /// ```
    /// use idemchart::expr::Value;
    /// use idemchart::interp::Chart;
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse(
    ///     "machine m\nguards big\ncontext { n = 5 }\ninitial a\n\
    ///      state a { always -> b if big }\nstate b",
    ///     Syntax::Dsl,
    /// )
    /// .unwrap();
    /// let chart = Chart::builder(machine)
    ///     .guard("big", |cx| matches!(cx.context("n"), Some(Value::Int(n)) if *n > 3))
    ///     .build();
    /// assert!(chart.is_ok());
    /// ```
    pub fn guard(
        mut self,
        name: &str,
        guard: impl Fn(&HostCall) -> bool + Send + Sync + 'static,
    ) -> ChartBuilder {
        self.host.guards.retain(|(n, _)| n != name);
        self.host.guards.push((name.to_string(), Arc::new(guard)));
        self
    }

    /// Registers the implementation of the host action `name`: a bare
    /// action name of the machine that is not a declared effect. It runs
    /// where the machine runs the action; the updates it returns apply as
    /// an `assign`, and an error it returns raises `error.execution` and
    /// ends the action block, as a failing expression does.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::expr::Event;
    /// use idemchart::interp::{Actor, Chart, Updates};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let machine = parse("machine m\ninitial a\nstate a { on GO { audit } }", Syntax::Dsl).unwrap();
    /// let chart = Chart::builder(machine)
    ///     .action("audit", |cx| match cx.event() {
    ///         Some(event) if &*event.name == "GO" => Ok(Updates::new()),
    ///         _ => Err("audit runs on GO only".into()),
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let mut actor = Actor::new(Arc::new(chart));
    /// assert!(actor.send(&Event::named("GO")).errors.is_empty());
    /// ```
    pub fn action(
        mut self,
        name: &str,
        action: impl Fn(&HostCall) -> Result<Updates, HostError> + Send + Sync + 'static,
    ) -> ChartBuilder {
        self.host.actions.retain(|(n, _)| n != name);
        self.host.actions.push((name.to_string(), Arc::new(action)));
        self
    }

    /// The chart, or what does not fit: every declared guard left without
    /// an implementation, and every registered name the machine does not
    /// use as a host guard or host action.
    pub fn build(self) -> Result<Chart, BuildError> {
        let machine = &self.machine;
        let mut error = BuildError::default();
        for guard in &machine.guards {
            if self.host.guard(&guard.text).is_none() {
                error.unregistered_guards.push(guard.text.clone());
            }
        }
        let declared: Vec<&str> = machine.guards.iter().map(|g| g.text.as_str()).collect();
        for (name, _) in &self.host.guards {
            if !declared.contains(&name.as_str()) {
                error
                    .unknown
                    .push(unknown("guard", name, &machine.name, &declared));
            }
        }
        let actions = host_action_names(machine);
        for (name, _) in &self.host.actions {
            if machine.effects.contains_key(name) {
                error.unknown.push(format!(
                    "`{name}` is a declared effect of `{}`, which the outbox dispatches: it cannot be a host action",
                    machine.name
                ));
            } else if !actions.contains(&name.as_str()) {
                error
                    .unknown
                    .push(unknown("action", name, &machine.name, &actions));
            }
        }
        if error.unregistered_guards.is_empty() && error.unknown.is_empty() {
            Ok(Chart::compile(self.machine, self.host))
        } else {
            Err(error)
        }
    }
}

fn unknown(kind: &str, name: &str, machine: &str, names: &[&str]) -> String {
    let mut message = format!("`{name}` is not a host {kind} of `{machine}`");
    if let Some(near) = did_you_mean(name, names.iter().copied()) {
        message.push_str(&format!(" (did you mean `{near}`?)"));
    }
    message
}

/// The bare action names of the machine that are not declared effects.
fn host_action_names(machine: &Machine) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for action in machine.actions() {
        if let Action::Host { name, .. } = action
            && !names.contains(&name.text.as_str())
        {
            names.push(&name.text);
        }
    }
    names
}

/// Why `ChartBuilder::build` refused: each list names every case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildError {
    /// Declared host guards without an implementation, in declaration order.
    pub unregistered_guards: Vec<String>,
    /// Registered names the machine has no use for, one sentence each.
    pub unknown: Vec<String>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sentences = Vec::new();
        if !self.unregistered_guards.is_empty() {
            let names: Vec<String> = self
                .unregistered_guards
                .iter()
                .map(|g| format!("`{g}`"))
                .collect();
            sentences.push(format!(
                "no implementation is registered for the host guard{} {}",
                if names.len() > 1 { "s" } else { "" },
                names.join(", ")
            ));
        }
        sentences.extend(self.unknown.iter().cloned());
        f.write_str(&sentences.join("; "))
    }
}

impl std::error::Error for BuildError {}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::expr::Event;
    use crate::interp::Actor;
    use crate::syntax::{Syntax, parse};

    const SHOP: &str = "
machine shop
context { stock = 2  sold = 0  note = \"\" }
guards inStock vip
initial open
state open {
  on BUY if inStock && context.sold < 5 { sold = context.sold + 1  audit  ship }
  on BUY -> closed
  on VIP if vip { log \"vip\" }
}
final closed
";

    fn machine() -> Machine {
        parse(SHOP, Syntax::Dsl).unwrap_or_else(|e| panic!("{e:#?}"))
    }

    fn stock(cx: &HostCall) -> bool {
        matches!(cx.context("stock"), Some(Value::Int(n)) if *n > 0)
    }

    fn audit(cx: &HostCall) -> Result<Updates, HostError> {
        let Some(Value::Int(stock)) = cx.context("stock") else {
            return Err("no stock field".into());
        };
        Ok(Updates::new().set("stock", stock - 1))
    }

    #[test]
    fn a_registered_guard_and_action_run_in_the_step() {
        let chart = Chart::builder(machine())
            .guard("inStock", stock)
            .guard("vip", |cx| {
                cx.event().is_some_and(|e| e.field("tier").is_some())
            })
            .action("audit", audit)
            .build()
            .unwrap();
        let mut actor = Actor::new(Arc::new(chart));
        let step = actor.send(&Event::named("BUY")).clone();
        assert!(step.errors.is_empty(), "{:?}", step.errors);
        // `audit` ran and wrote the context; `ship` has no implementation
        // and is only recorded, for the host to carry out.
        let effects: Vec<(&str, bool, bool)> = step
            .effects
            .iter()
            .map(|e| (&*e.name, e.host, e.ran))
            .collect();
        assert_eq!(effects, [("audit", true, true), ("ship", true, false)]);
        assert_eq!(actor.context_value("stock"), Some(&Value::Int(1)));
        actor.send(&Event::named("BUY"));
        // Out of stock: the guard is false and the second transition wins.
        actor.send(&Event::named("BUY"));
        assert_eq!(actor.configuration_paths(), ["closed"]);
        assert_eq!(actor.context_value("sold"), Some(&Value::Int(2)));
    }

    #[test]
    fn the_guard_sees_the_event() {
        let chart = Chart::builder(machine())
            .guard("inStock", stock)
            .guard("vip", |cx| {
                cx.event().is_some_and(|e| e.field("tier").is_some())
            })
            .build()
            .unwrap();
        let mut actor = Actor::new(Arc::new(chart));
        assert!(actor.send(&Event::named("VIP")).ignored);
        let vip = Event::new("VIP", None, Value::map([("tier", Value::from("gold"))]));
        assert_eq!(actor.send(&vip).logs, [Value::from("vip")]);
    }

    #[test]
    fn an_unregistered_guard_raises_error_execution() {
        let mut actor = Actor::new(Arc::new(Chart::new(machine())));
        let step = actor.send(&Event::named("BUY")).clone();
        assert_eq!(
            step.errors,
            [
                "the host guard `inStock` has no implementation: register one with \
              `Chart::builder(machine).guard(\"inStock\", ..)`"
            ]
        );
        // The guard counted as false, so the next transition was taken.
        assert_eq!(actor.configuration_paths(), ["closed"]);
    }

    #[test]
    fn an_ignored_events_guard_error_stays_in_its_step() {
        let machine = parse(
            "machine m\nguards ready\ninitial a\nstate a {\n  on GO -> b if ready\n  \
             on error.execution { log \"handled\" }\n}\nstate b",
            Syntax::Dsl,
        )
        .unwrap();
        let mut actor = Actor::new(Arc::new(Chart::new(machine)));
        for _ in 0..2 {
            let step = actor.send(&Event::named("GO"));
            // The event is ignored, and the error it raised is handled in
            // the same step, once, whatever came before.
            assert!(step.ignored);
            assert_eq!(step.errors.len(), 1, "{:?}", step.errors);
            assert_eq!(step.logs, [Value::from("handled")]);
        }
    }

    #[test]
    fn a_chart_with_host_functions_is_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Chart>();
        shared::<ChartBuilder>();
    }

    #[test]
    fn a_failing_action_ends_its_block_and_writes_nothing() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let chart = Chart::builder(machine())
            .guard("inStock", |_| true)
            .guard("vip", |_| false)
            .action("audit", move |_| {
                counted.fetch_add(1, Ordering::Relaxed);
                Err("the ledger is closed".into())
            })
            .build()
            .unwrap();
        let mut actor = Actor::new(Arc::new(chart));
        let step = actor.send(&Event::named("BUY")).clone();
        assert_eq!(
            step.errors,
            ["the host action `audit` failed: the ledger is closed"]
        );
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // The assign before it stands; `ship` after it did not run.
        assert!(step.effects.is_empty());
        assert_eq!(actor.context_value("sold"), Some(&Value::Int(1)));
    }

    #[test]
    fn updates_of_unknown_fields_write_nothing() {
        let chart = Chart::builder(machine())
            .guard("inStock", |_| true)
            .guard("vip", |_| false)
            .action("audit", |_| {
                Ok(Updates::new().set("stock", 9).set("stok", 1))
            })
            .build()
            .unwrap();
        let mut actor = Actor::new(Arc::new(chart));
        let step = actor.send(&Event::named("BUY")).clone();
        assert_eq!(
            step.errors,
            ["the host action `audit` updated `stok`, which is not a context field"]
        );
        assert_eq!(actor.context_value("stock"), Some(&Value::Int(2)));
    }

    #[test]
    fn build_names_every_problem() {
        let error = Chart::builder(machine())
            .guard("inStok", |_| true)
            .action("audti", |_| Ok(Updates::new()))
            .build()
            .unwrap_err();
        assert_eq!(error.unregistered_guards, ["inStock", "vip"]);
        assert_eq!(
            error.to_string(),
            "no implementation is registered for the host guards `inStock`, `vip`; \
             `inStok` is not a host guard of `shop` (did you mean `inStock`?); \
             `audti` is not a host action of `shop` (did you mean `audit`?)"
        );
        let effect = parse(
            "machine m\neffect mail idempotent key\ninitial a\nstate a { entry mail }",
            Syntax::Dsl,
        )
        .unwrap();
        let error = Chart::builder(effect)
            .action("mail", |_| Ok(Updates::new()))
            .build()
            .unwrap_err();
        assert_eq!(
            error.unknown,
            [
                "`mail` is a declared effect of `m`, which the outbox dispatches: it cannot be a host action"
            ]
        );
    }

    #[test]
    fn snapshots_restore_onto_a_chart_with_its_host() {
        let build = || {
            Arc::new(
                Chart::builder(machine())
                    .guard("inStock", stock)
                    .guard("vip", |_| false)
                    .action("audit", audit)
                    .build()
                    .unwrap(),
            )
        };
        let mut direct = Actor::new(build());
        direct.send(&Event::named("BUY"));
        let json = serde_json::to_string(&direct.snapshot()).unwrap();
        let mut restored = Actor::restore(build(), &serde_json::from_str(&json).unwrap()).unwrap();
        for _ in 0..2 {
            assert_eq!(
                restored.send(&Event::named("BUY")),
                direct.send(&Event::named("BUY"))
            );
        }
        assert_eq!(restored.context(), direct.context());
        assert_eq!(restored.configuration_paths(), ["closed"]);
    }
}
