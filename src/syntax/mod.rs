//! Source text → model: the YAML and DSL front-ends, and the lowering that
//! resolves names and checks the machine.

pub mod dsl;
pub mod tree;
pub mod yaml;
