//! A set of states as bits, iterated in document order.

use crate::model::StateId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StateSet {
    words: Vec<u64>,
}

impl StateSet {
    pub fn with_capacity(states: usize) -> StateSet {
        StateSet {
            words: vec![0; states.div_ceil(64)],
        }
    }

    pub fn contains(&self, id: StateId) -> bool {
        let i = id.index();
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn insert(&mut self, id: StateId) -> bool {
        let i = id.index();
        let word = &mut self.words[i / 64];
        let fresh = *word & (1 << (i % 64)) == 0;
        *word |= 1 << (i % 64);
        fresh
    }

    pub fn remove(&mut self, id: StateId) {
        let i = id.index();
        self.words[i / 64] &= !(1 << (i % 64));
    }

    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Whether any state with an id in `start..end` is in the set.
    pub fn any_in(&self, start: u32, end: u32) -> bool {
        self.iter_from(start).next().is_some_and(|id| id.0 < end)
    }

    pub fn intersects(&self, other: &StateSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Members in document order.
    pub fn iter(&self) -> impl Iterator<Item = StateId> + '_ {
        self.iter_from(0)
    }

    /// Members with an id of at least `start`, in document order.
    pub fn iter_from(&self, start: u32) -> impl Iterator<Item = StateId> + '_ {
        let first_word = start as usize / 64;
        let mask = if first_word < self.words.len() {
            !0u64 << (start % 64)
        } else {
            0
        };
        self.words
            .iter()
            .enumerate()
            .skip(first_word)
            .flat_map(move |(i, &word)| {
                let mut word = if i == first_word { word & mask } else { word };
                std::iter::from_fn(move || {
                    if word == 0 {
                        return None;
                    }
                    let bit = word.trailing_zeros();
                    word &= word - 1;
                    Some(StateId(i as u32 * 64 + bit))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterates_in_order_from_a_start() {
        let mut set = StateSet::with_capacity(200);
        for i in [3, 64, 65, 130, 199] {
            set.insert(StateId(i));
        }
        let all: Vec<u32> = set.iter().map(|s| s.0).collect();
        assert_eq!(all, [3, 64, 65, 130, 199]);
        let from: Vec<u32> = set.iter_from(65).map(|s| s.0).collect();
        assert_eq!(from, [65, 130, 199]);
        assert!(set.any_in(4, 65));
        assert!(!set.any_in(4, 64));
        assert!(!set.any_in(200, 300));
        set.remove(StateId(64));
        assert!(!set.contains(StateId(64)));
    }
}
