//! Tests of the XState front-end.
