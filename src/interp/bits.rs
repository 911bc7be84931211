//! Sets of states as bits, iterated in document order.

use crate::model::StateId;

#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct StateSet {
    words: Vec<u64>,
}

// By hand for `clone_from`, which the replay's search uses to fork actors
// into ones it has already allocated.
impl Clone for StateSet {
    fn clone(&self) -> StateSet {
        StateSet {
            words: self.words.clone(),
        }
    }

    fn clone_from(&mut self, source: &StateSet) {
        self.words.clone_from(&source.words);
    }
}

impl StateSet {
    pub fn with_capacity(states: usize) -> StateSet {
        StateSet {
            words: vec![0; states.div_ceil(64)],
        }
    }

    /// Removes every member, keeping the memory.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Feeds the set's bits to a hasher (`Actor::fingerprint`).
    pub fn hash_words(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        self.words.hash(h);
    }

    pub fn contains(&self, id: StateId) -> bool {
        let i = id.index();
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn insert(&mut self, id: StateId) -> bool {
        let i = id.index();
        if i / 64 >= self.words.len() {
            // A set made empty (`default`) takes memory when first used.
            self.words.resize(i / 64 + 1, 0);
        }
        let word = &mut self.words[i / 64];
        let fresh = *word & (1 << (i % 64)) == 0;
        *word |= 1 << (i % 64);
        fresh
    }

    pub fn remove(&mut self, id: StateId) {
        let i = id.index();
        if let Some(word) = self.words.get_mut(i / 64) {
            *word &= !(1 << (i % 64));
        }
    }

    /// Whether any state with an id in `start..end` is in the set.
    pub fn any_in(&self, start: u32, end: u32) -> bool {
        self.iter_in(start, end).next().is_some()
    }

    /// Whether no state with an id above `id` is in the set; reads the words
    /// whole, without listing members.
    pub fn none_after(&self, id: StateId) -> bool {
        let next = id.index() + 1;
        let Some(first) = self.words.get(next / 64) else {
            return true;
        };
        let above = first & (!0u64 << (next % 64));
        above == 0 && self.words[next / 64 + 1..].iter().all(|&w| w == 0)
    }

    /// Members in document order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Members with an id of at least `start`, in document order.
    pub fn iter_from(&self, start: u32) -> Iter<'_> {
        Iter::new(&self.words, start)
    }

    /// Members with an id in `start..end`, in document order; reads only
    /// the words that hold them.
    pub fn iter_in(&self, start: u32, end: u32) -> impl Iterator<Item = StateId> + '_ {
        let words = (end as usize).div_ceil(64).min(self.words.len());
        Iter::new(&self.words[..words], start).take_while(move |s| s.0 < end)
    }
}

/// The members of a `StateSet` in document order: the current word's bits,
/// lowest first, then the next non-zero word.
pub(crate) struct Iter<'a> {
    words: &'a [u64],
    index: usize,
    word: u64,
}

impl<'a> Iter<'a> {
    fn new(words: &'a [u64], start: u32) -> Iter<'a> {
        let index = start as usize / 64;
        let word = words.get(index).map_or(0, |w| w & (!0u64 << (start % 64)));
        Iter { words, index, word }
    }
}

impl Iterator for Iter<'_> {
    type Item = StateId;

    #[inline]
    fn next(&mut self) -> Option<StateId> {
        while self.word == 0 {
            self.index += 1;
            self.word = *self.words.get(self.index)?;
        }
        let bit = self.word.trailing_zeros();
        self.word &= self.word - 1;
        Some(StateId(self.index as u32 * 64 + bit))
    }
}

/// A set that also lists its members, for the sets one microstep builds and
/// throws away (the states to exit, to enter): clearing it costs as much as
/// its few members, not as much as the machine's states, and so does
/// listing them in a large machine.
#[derive(Debug, Default)]
pub(crate) struct MarkedSet {
    bits: StateSet,
    /// The members in the order they came.
    members: Vec<StateId>,
}

impl Clone for MarkedSet {
    fn clone(&self) -> MarkedSet {
        MarkedSet {
            bits: self.bits.clone(),
            members: self.members.clone(),
        }
    }

    fn clone_from(&mut self, source: &MarkedSet) {
        self.bits.clone_from(&source.bits);
        self.members.clone_from(&source.members);
    }
}

/// Up to this many words, reading the bits back lists the members in
/// document order faster than sorting them would.
const SCAN_WORDS: usize = 4;

impl MarkedSet {
    pub fn insert(&mut self, id: StateId) -> bool {
        let fresh = self.bits.insert(id);
        if fresh {
            self.members.push(id);
        }
        fresh
    }

    pub fn clear(&mut self) {
        if self.bits.words.len() <= SCAN_WORDS {
            // Zeroing a few words beats clearing bits one by one in the
            // same word, each waiting for the store before it.
            self.bits.words.fill(0);
        } else {
            for &id in &self.members {
                self.bits.remove(id);
            }
        }
        self.members.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether any state with an id in `start..end` is in the set.
    pub fn any_in(&self, start: u32, end: u32) -> bool {
        self.bits.any_in(start, end)
    }

    /// The members in document order.
    pub fn sorted(&mut self) -> &[StateId] {
        if self.bits.words.len() <= SCAN_WORDS {
            self.members.clear();
            self.members.extend(self.bits.iter());
        } else {
            self.members.sort_unstable();
        }
        &self.members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(states: impl IntoIterator<Item = StateId>) -> Vec<u32> {
        states.into_iter().map(|s| s.0).collect()
    }

    #[test]
    fn iterates_in_order_from_a_start() {
        let mut set = StateSet::with_capacity(200);
        for i in [3, 64, 65, 130, 199] {
            set.insert(StateId(i));
        }
        assert_eq!(ids(set.iter()), [3, 64, 65, 130, 199]);
        assert_eq!(ids(set.iter_from(65)), [65, 130, 199]);
        assert_eq!(set.iter_from(200).next(), None);
        assert_eq!(set.iter_from(900).next(), None);
        assert!(set.any_in(4, 65));
        assert!(!set.any_in(4, 64));
        assert!(!set.any_in(200, 300));
        assert!(!set.any_in(5, 5) && !set.any_in(9, 2));
        set.remove(StateId(64));
        set.remove(StateId(64));
        assert!(!set.contains(StateId(64)));
        set.remove(StateId(900));
        assert_eq!(ids(set.iter()), [3, 65, 130, 199]);
        assert_eq!(ids(set.iter_in(0, 66)), [3, 65]);
    }

    /// `none_after` agrees with listing the members after the id, for ids
    /// on both sides of word boundaries.
    #[test]
    fn tells_whether_anything_follows() {
        for members in [
            &[][..],
            &[0],
            &[63],
            &[64],
            &[0, 63],
            &[62, 127],
            &[5, 128],
            &[191],
        ] {
            let mut set = StateSet::with_capacity(192);
            for &m in members {
                set.insert(StateId(m));
            }
            for id in 0..200 {
                let expected = set.iter_from(id + 1).next().is_none();
                assert_eq!(
                    set.none_after(StateId(id)),
                    expected,
                    "{members:?} after {id}"
                );
            }
        }
        assert!(StateSet::default().none_after(StateId(3)));
    }

    #[test]
    fn iterates_a_range_only() {
        let mut set = StateSet::with_capacity(300);
        for i in [1, 63, 64, 127, 128, 250] {
            set.insert(StateId(i));
        }
        assert_eq!(ids(set.iter_in(1, 128)), [1, 63, 64, 127]);
        assert_eq!(ids(set.iter_in(2, 129)), [63, 64, 127, 128]);
        assert_eq!(ids(set.iter_in(64, 64)), Vec::<u32>::new());
        assert_eq!(ids(set.iter_in(129, 900)), [250]);
    }

    #[test]
    fn grows_when_made_empty() {
        let mut set = StateSet::default();
        set.remove(StateId(70));
        assert!(!set.contains(StateId(70)) && set.iter().next().is_none());
        assert!(set.insert(StateId(70)) && set.contains(StateId(70)));
        assert_eq!(ids(set.iter_in(0, 100)), [70]);
    }

    #[test]
    fn marked_set_lists_members_in_order_and_clears_them() {
        // A small set (read back from its bits) and a large one (sorted).
        for states in [200, 2000] {
            let mut set = MarkedSet::default();
            for i in [130, 3, 199, 64, 3] {
                set.insert(StateId(i));
            }
            set.insert(StateId(states as u32 - 1));
            let last = states as u32 - 1;
            let mut expected = vec![3, 64, 130, 199, last];
            expected.dedup();
            assert_eq!(ids(set.sorted().iter().copied()), expected, "{states}");
            assert!(set.any_in(100, 131) && !set.any_in(4, 64));
            set.clear();
            assert!(set.is_empty() && !set.any_in(0, last + 1));
            assert!(set.insert(StateId(64)));
            assert_eq!(ids(set.sorted().iter().copied()), [64]);
        }
    }
}
