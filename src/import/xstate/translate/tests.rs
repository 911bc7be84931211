//! JS → CEL
