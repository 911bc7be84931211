//! Diagnostics out: for people (`human`) and for machines.

mod human;

pub use human::render;
