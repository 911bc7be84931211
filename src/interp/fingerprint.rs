//! A hash of what an actor's snapshot holds, for searches that visit each
//! configuration once (the linter's replays): the same actor state always
//! gives the same hash, without writing its snapshot JSON.

use std::hash::{BuildHasher, Hash, Hasher};

use super::actor::{Actor, Due, Status};
use crate::expr::Value;
use crate::expr::list::Items;

impl Actor {
    /// A hash of the configuration, context, history, timers, invocations,
    /// status and clock: what the snapshot holds, apart from the machine's
    /// name. Two actors with equal snapshots have equal fingerprints; two
    /// that differ collide with the odds of a 64-bit hash. The seed is
    /// fixed, so a search visits the same configurations on every run.
    pub fn fingerprint(&self) -> u64 {
        let core = &self.core;
        let mut h = foldhash::quality::FixedState::default().build_hasher();
        core.active.hash_words(&mut h);
        matches!(core.status, Status::Done).hash(&mut h);
        core.now.hash(&mut h);
        for (history, states) in &core.history {
            (history.0, states.len()).hash(&mut h);
            states.iter().for_each(|s| s.0.hash(&mut h));
        }
        0xffu8.hash(&mut h);
        for value in &core.context {
            hash_value(value, &mut h);
        }
        for timer in &core.timers {
            (timer.due, timer.seq).hash(&mut h);
            match &timer.what {
                Due::Transition(t) => (0u8, t.0).hash(&mut h),
                Due::Send { event, id } => {
                    1u8.hash(&mut h);
                    event.name.hash(&mut h);
                    hash_value(&event.data, &mut h);
                    id.hash(&mut h);
                }
            }
        }
        0xfeu8.hash(&mut h);
        for running in &core.invocations {
            (running.state.0, running.index).hash(&mut h);
            hash_value(&running.input, &mut h);
            running.key.hash(&mut h);
        }
        h.finish()
    }
}

fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, *b).hash(h),
        Value::Int(i) => (2u8, *i).hash(h),
        Value::Double(d) => (3u8, d.to_bits()).hash(h),
        Value::String(s) => (4u8, s.as_str()).hash(h),
        Value::List(list) => {
            (5u8, list.len()).hash(h);
            match list.items() {
                Items::Packed(text) => text.hash(h),
                Items::Values(items) => items.iter().for_each(|v| hash_value(v, h)),
            }
        }
        Value::Map(map) => {
            (6u8, map.len()).hash(h);
            for (key, value) in map.iter() {
                key.hash(h);
                hash_value(value, h);
            }
        }
    }
}
