//! idemchart: a statechart interpreter and linter for backends where every
//! event may arrive twice.
//!
//! The pipeline is `syntax` (YAML or DSL text) → `model` → `graph`/`lint` and
//! `interp` → `runtime` → `store`; each arrow goes one way, and `clock` sits
//! below `interp` and `store` both.
//!
//! A host program loads a machine, lints it, runs it, and saves and restores
//! its state between events:
//!
//! ```
//! use std::sync::Arc;
//! use idemchart::expr::{Event, Value};
//! use idemchart::interp::{Actor, Chart};
//! use idemchart::syntax::{Syntax, parse};
//!
//! let text = r#"
//! machine: pedido
//! version: 1
//! context: { cobrado: 0, vistos: [] }
//! events:
//!   PAGO: { id: pagoId, payload: { pagoId: string, importe: integer } }
//! initial: abierto
//! states:
//!   abierto:
//!     on:
//!       PAGO:
//!         guard: "!(event.pagoId in context.vistos)"
//!         actions:
//!           - assign:
//!               vistos: "context.vistos + [event.pagoId]"
//!               cobrado: "context.cobrado + event.importe"
//! "#;
//! let machine = parse(text, Syntax::Yaml).map_err(|errors| format!("{errors:?}"))?;
//! // The guard makes a redelivered payment harmless, so the linter is quiet.
//! assert!(idemchart::lint::lint(&machine).is_empty());
//!
//! let chart = Arc::new(Chart::new(machine));
//! let mut actor = Actor::new(Arc::clone(&chart));
//! let pago = Event::new(
//!     "PAGO",
//!     None,
//!     Value::from(&serde_json::json!({ "pagoId": "p1", "importe": 30 })),
//! );
//! assert!(!actor.send(&pago).ignored);
//!
//! // Between events the state lives in a snapshot, here as JSON (the same
//! // text as `serde_json::to_string(&actor.snapshot())`).
//! let saved = actor.snapshot_json();
//! let mut actor = Actor::restore_json(chart, &saved)?;
//!
//! // The same payment again changes nothing: the guard rejects it.
//! assert!(actor.send(&pago).ignored);
//! assert_eq!(actor.context_value("cobrado"), Some(&Value::from(&serde_json::json!(30))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod clock;
pub mod config;
pub mod diagnostic;
pub mod diagram;
pub mod expr;
mod fit;
pub mod fix;
pub mod graph;
pub mod import;
pub mod interp;
pub mod lint;
pub mod load;
pub mod lsp;
pub mod model;
mod ready;
pub mod report;
pub mod runtime;
pub mod schema;
pub mod serve;
pub mod span;
mod stack;
pub mod store;
pub mod syntax;
mod walk;

pub use diagnostic::{Diagnostic, Severity, Verdict};
pub use model::Machine;
pub use span::{SourceFile, Span};
