//! idemchart: a statechart interpreter and linter for backends where every
//! event may arrive twice.
//!
//! The pipeline is `syntax` (YAML or DSL text) → `model` → `graph`/`lint` and
//! `interp` → `runtime` → `store`; each arrow goes one way.

pub mod config;
pub mod diagnostic;
pub mod diagram;
pub mod expr;
pub mod graph;
pub mod import;
pub mod interp;
pub mod lint;
pub mod model;
pub mod report;
pub mod runtime;
pub mod schema;
pub mod span;
pub mod store;
pub mod syntax;

pub use diagnostic::{Diagnostic, Severity};
pub use model::Machine;
pub use span::{SourceFile, Span};
