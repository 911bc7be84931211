//! The JSON Schema (draft 2020-12) of the YAML machine format.
//!
//! Editors use it for completion and for the description of every key; it
//! mirrors `docs/machine-format.md`. The loader does not use it: the YAML
//! front-end and the lowering report errors with positions, which a schema
//! validator cannot give. The schema checks shape only (keys, types, enums,
//! duration syntax), not names, targets or expressions.

/// The schema's text, as shipped in `schema/machine.schema.json`.
pub const MACHINE_SCHEMA: &str = include_str!("../schema/machine.schema.json");
