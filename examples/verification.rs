//! End to end: a payment gateway without idempotency keys that sometimes
//! charges and then times out. The checkout invokes the charge
//! (`machines/cobro-verificado.yaml`); the dispatcher reports a timeout as
//! an unknown outcome, which reaches the machine as the invocation's error
//! `{"reason": "unknown-outcome"}`, so the machine invokes a lookup
//! (`verificando`) and charges again only on a "no". The dispatcher
//! delivers every answer as the invocation's completion, in the transaction
//! that settles the outbox row. No order is charged twice.
//!
//! Run with `cargo run --example verification`.

use std::collections::HashMap;
use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::Chart;
use idemchart::runtime::{self, Dispatch, DispatchPolicy, apply_at, dispatch};
use idemchart::store::{SqliteStore, Store};

const MACHINE: &str = include_str!("../machines/cobro-verificado.yaml");

/// A provider without idempotency keys: every `charge` call it applies
/// is a new charge. It can be asked whether an order was charged.
struct FakeProvider {
    charges: HashMap<String, u32>,
    seed: u64,
}

enum ChargeResult {
    Charged,
    /// The call timed out: the caller cannot tell whether it charged.
    TimedOut,
}

impl FakeProvider {
    fn random(&mut self, below: u64) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed % below
    }

    fn charge(&mut self, order: &str) -> ChargeResult {
        match self.random(10) {
            // Charged and answered.
            0..=3 => {
                *self.charges.entry(order.to_string()).or_default() += 1;
                ChargeResult::Charged
            }
            // Charged, but the answer was lost.
            4..=6 => {
                *self.charges.entry(order.to_string()).or_default() += 1;
                ChargeResult::TimedOut
            }
            // Timed out before charging.
            _ => ChargeResult::TimedOut,
        }
    }

    fn was_charged(&self, order: &str) -> bool {
        self.charges.get(order).copied().unwrap_or(0) > 0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let machine = idemchart::syntax::parse(MACHINE, idemchart::syntax::Syntax::Yaml)
        .map_err(|d| format!("machine does not load: {d:?}"))?;
    let chart = Arc::new(Chart::new(machine));
    let mut store = SqliteStore::in_memory()?;
    let mut provider = FakeProvider {
        charges: HashMap::new(),
        seed: 0x2545_f491_4f6c_dd1d,
    };
    let orders: Vec<String> = (0..200).map(|i| format!("order-{i}")).collect();
    let mut now = 1_700_000_000_000u64;
    for order in &orders {
        let data = serde_json::json!({ "pedidoId": order, "importe": 30 });
        let placed = Event::new(
            "PEDIDO",
            Some(Value::from(order.as_str())),
            Value::from(&data),
        );
        apply_at(&mut store, &chart, order, &placed, now)?;
    }
    let (mut calls, mut timeouts, mut lookups) = (0, 0, 0);
    let policy = DispatchPolicy::default();
    for _round in 0..100 {
        // Each answer goes back to its order as the invocation's
        // completion: the charge's done or error, the lookup's output.
        let report = dispatch(&mut store, &chart, now, &policy, |item| {
            match item.invocation.as_deref() {
                Some("cobro") => {
                    calls += 1;
                    match provider.charge(&item.process) {
                        ChargeResult::Charged => Dispatch::Done,
                        ChargeResult::TimedOut => {
                            timeouts += 1;
                            Dispatch::UnknownOutcome
                        }
                    }
                }
                Some("consulta") => {
                    lookups += 1;
                    let charged = provider.was_charged(&item.process);
                    Dispatch::Output(serde_json::json!({ "cobrado": charged }))
                }
                other => Dispatch::Retry(format!("no handler for `{}` ({other:?})", item.effect)),
            }
        })?;
        now += 1_000;
        if report == runtime::DispatchReport::default() {
            break;
        }
    }
    let mut finished = 0;
    for order in &orders {
        let state = runtime::inspect(&mut store, order)?.ok_or("process vanished")?;
        let charged = provider.charges.get(order).copied().unwrap_or(0);
        assert_eq!(charged, 1, "{order} was charged {charged} times");
        assert_eq!(
            state["configuration"],
            serde_json::json!(["cobrado"]),
            "{order}"
        );
        finished += 1;
    }
    let pending = store
        .outbox(Some(idemchart::store::OutboxStatus::Pending))?
        .len();
    assert_eq!(pending, 0);
    println!(
        "{finished} orders charged exactly once: {calls} charge calls, \
         {timeouts} timeouts, {lookups} verifications, no double charge"
    );
    Ok(())
}
