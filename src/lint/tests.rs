//! Unit tests of the lint registry.
