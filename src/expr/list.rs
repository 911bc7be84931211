//! The items of a list value.
//!
//! A list whose items are all strings that JSON writes without escapes (ids,
//! what a context's list mostly holds) is kept packed: one text, the items
//! quoted and joined by commas exactly as the list's compact JSON has them
//! between its brackets, and where each item ends. Reading such a list from
//! JSON and writing it back are then one copy per run of items, dropping
//! it is a few frees, and a membership test compares one 8-byte key per
//! item. Any other
//! list keeps its items as values; a packed list turns into one when an
//! item that cannot be packed is added.
//!
//! The representation does not show: items come out as `Value::String`s,
//! and two lists with equal items are equal however each is kept.

use std::borrow::Cow;
use std::fmt;

use super::json::plain;
use super::value::{Value, bytes_eq, word};

/// From the closing quote of a packed item to the first byte of the next.
const SEPARATOR: usize = "\",\"".len();

/// A list value's items, in order. How they are kept does not show:
///
/// ```
/// use idemchart::expr::{List, Value};
///
/// let mut seen = List::from(vec![Value::from("c0")]);
/// seen.push(Value::from("c1"));
/// assert!(seen.contains(&Value::from("c1")) && !seen.contains(&Value::from("c2")));
/// // A number among the strings: the list now keeps values, and is equal
/// // to the same items however they were put together.
/// seen.push(Value::Int(2));
/// let items = vec![Value::from("c0"), Value::from("c1"), Value::Int(2)];
/// assert_eq!(seen, List::from(items));
/// assert_eq!(Value::List(seen.into()).to_string(), r#"["c0", "c1", 2]"#);
/// ```
#[derive(Clone)]
pub struct List(Repr);

#[derive(Clone)]
enum Repr {
    Packed(Packed),
    Values(Vec<Value>),
}

/// Plain strings, each in quotes, joined by commas: `"c0","c1"`.
#[derive(Clone, Default)]
struct Packed {
    text: String,
    /// Where each item's closing quote is in `text`. Item `i` starts
    /// `SEPARATOR` bytes after item `i - 1` ends, the first at 1. Offsets
    /// are `u32`s (a list longer than 4 GiB is kept as values) to halve
    /// their size.
    ends: Vec<u32>,
    /// The keys (see `key_at`) of the first items, which a membership
    /// test reads instead of the text: those added one at a time to a list
    /// that has the keys of all before them. An item read from compact
    /// JSON has none, as computing it would cost a reader more than the one
    /// test the list usually gets before it is written again.
    keys: Vec<u64>,
    /// Where the keys are, once there are `TABLE_FROM` of them: a table
    /// of positions in `keys` plus one (0 for a free slot), open-addressed
    /// by the key's hash with linear probing, a power of two long and at
    /// most half full. A membership test then reads the few keys that hash
    /// alike instead of every key. Empty below `TABLE_FROM` keys.
    table: Vec<u32>,
}

/// How many keys a list has before they get a table (`Packed::table`):
/// below it, reading every key costs less than hashing.
const TABLE_FROM: usize = 16;

/// A list's items as they are kept, for the JSON codec.
pub(crate) enum Items<'a> {
    /// Plain strings, quoted and joined by commas: the list's JSON without
    /// its brackets.
    Packed(&'a str),
    Values(&'a [Value]),
}

impl Default for List {
    fn default() -> List {
        List::new()
    }
}

impl List {
    /// An empty list. It allocates nothing.
    pub fn new() -> List {
        List(Repr::Packed(Packed::default()))
    }

    /// How many items the list has.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed(packed) => packed.ends.len(),
            Repr::Values(items) => items.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `index`: borrowed when kept as a value, built (without
    /// an allocation for up to 23 bytes) when packed.
    pub fn get(&self, index: usize) -> Option<Cow<'_, Value>> {
        match &self.0 {
            Repr::Packed(packed) => packed.get(index).map(|s| Cow::Owned(Value::from(s))),
            Repr::Values(items) => items.get(index).map(Cow::Borrowed),
        }
    }

    /// The last item, as `get` gives it.
    pub fn last(&self) -> Option<Cow<'_, Value>> {
        self.len().checked_sub(1).and_then(|last| self.get(last))
    }

    /// The items in order, as `get` gives them.
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.0 {
            Repr::Packed(packed) => IterRepr::Packed(packed.strings()),
            Repr::Values(items) => IterRepr::Values(items.iter()),
        })
    }

    /// The items as values, copied out when packed.
    pub fn to_vec(&self) -> Vec<Value> {
        self.iter().map(Cow::into_owned).collect()
    }

    pub(crate) fn items(&self) -> Items<'_> {
        match &self.0 {
            Repr::Packed(packed) => Items::Packed(&packed.text),
            Repr::Values(items) => Items::Values(items),
        }
    }

    /// Appends `item`.
    #[inline]
    pub fn push(&mut self, item: Value) {
        if let Repr::Packed(packed) = &mut self.0
            && let Value::String(s) = &item
            && packed.push(s)
        {
            return;
        }
        self.values().push(item);
    }

    /// Removes every item. A packed list keeps its memory for the items
    /// that come next (a set of seen ids reset, then filled again).
    pub fn clear(&mut self) {
        match &mut self.0 {
            Repr::Packed(packed) => {
                packed.text.clear();
                packed.ends.clear();
                packed.keys.clear();
                packed.table.clear();
            }
            Repr::Values(_) => *self = List::new(),
        }
    }

    /// Appends the items of `tail`.
    pub fn append(&mut self, tail: &List) {
        if let (Repr::Packed(packed), Repr::Packed(more)) = (&mut self.0, &tail.0)
            && packed.append(more)
        {
            return;
        }
        self.extend(tail.iter().map(Cow::into_owned));
    }

    /// Whether `needle` is an item, by CEL equality.
    pub fn contains(&self, needle: &Value) -> bool {
        match (&self.0, needle) {
            (Repr::Packed(packed), Value::String(s)) => packed.contains(s),
            // A string equals only a string.
            (Repr::Packed(_), _) => false,
            // The common case, a string id in a list of ids, skips the
            // general comparison and its match on both kinds.
            (Repr::Values(items), Value::String(s)) => values_contain_str(items, s.as_bytes()),
            (Repr::Values(items), _) => items.iter().any(|v| v == needle),
        }
    }

    /// The items kept as values, unpacking them first if they are packed.
    fn values(&mut self) -> &mut Vec<Value> {
        if let Repr::Packed(packed) = &self.0 {
            let mut items = Vec::with_capacity(packed.ends.len() + 1);
            items.extend(packed.strings().map(Value::from));
            self.0 = Repr::Values(items);
        }
        match &mut self.0 {
            Repr::Values(items) => items,
            Repr::Packed(_) => unreachable!("unpacked just above"),
        }
    }

    /// Appends plain strings given as their compact JSON: `joined` holds
    /// them quoted and joined by commas, without escapes, and `ends` says
    /// where each closing quote is in it.
    pub(crate) fn extend_joined(&mut self, joined: &str, ends: &[u32]) {
        if let Repr::Packed(packed) = &mut self.0
            && packed.append_joined(joined, ends)
        {
            return;
        }
        // Kept as values, or too long to stay packed: item by item.
        self.extend(Strings::new(joined, ends).map(Value::from));
    }
}

/// Room for this many more items, and this many more bytes, is left when
/// a packed list grows by a run (one read from JSON, say): a list read
/// from a snapshot is often appended to next, and growing an exact
/// allocation would copy it.
const SPARE_ITEMS: usize = 8;
const SPARE_BYTES: usize = 64;

/// `length` as an offset, when the packed text may grow to it.
fn fits(length: usize) -> Option<u32> {
    u32::try_from(length).ok()
}

impl Packed {
    /// Where item `index` starts and ends in `text`.
    #[inline(always)]
    fn bounds(&self, index: usize) -> Option<(usize, usize)> {
        let end = *self.ends.get(index)? as usize;
        let start = match index.checked_sub(1) {
            Some(before) => self.ends[before] as usize + SEPARATOR,
            None => 1,
        };
        Some((start, end))
    }

    fn get(&self, index: usize) -> Option<&str> {
        let (start, end) = self.bounds(index)?;
        Some(&self.text[start..end])
    }

    fn strings(&self) -> Strings<'_> {
        Strings::new(&self.text, &self.ends)
    }

    /// Appends `s` when it is plain and fits; `false` (and no item added)
    /// when not.
    #[inline]
    fn push(&mut self, s: &str) -> bool {
        if self.ends.capacity() == 0 {
            // A list that gets one item usually gets more.
            self.ends.reserve(SPARE_ITEMS * 2);
            self.keys.reserve(SPARE_ITEMS * 2);
            self.text.reserve(SPARE_BYTES * 2);
        }
        let comma = !self.ends.is_empty();
        let Some(end) = fits(self.text.len() + usize::from(comma) + s.len() + 1) else {
            return false;
        };
        if !plain(s) {
            return false;
        }
        if comma {
            self.text.push(',');
        }
        self.text.push('"');
        self.text.push_str(s);
        self.text.push('"');
        self.ends.push(end);
        if self.keys.len() + 1 == self.ends.len() {
            let key = key_at(self.text.as_bytes(), end as usize, s.len());
            self.keys.push(key);
            if self.keys.len() >= TABLE_FROM {
                self.index_key(self.keys.len() - 1, key);
            }
        }
        true
    }

    /// Enters key `at` in the table, which grows (and is filled with every
    /// key) when it would be more than half full.
    #[inline]
    fn index_key(&mut self, at: usize, key: u64) {
        if 2 * self.keys.len() > self.table.len() {
            let size = (4 * self.keys.len()).next_power_of_two();
            self.table.clear();
            self.table.resize(size, 0);
            for (at, &key) in self.keys.iter().enumerate() {
                table_insert(&mut self.table, at, key);
            }
            return;
        }
        table_insert(&mut self.table, at, key);
    }

    /// Appends the items of `more`, when they fit.
    fn append(&mut self, more: &Packed) -> bool {
        self.append_joined(&more.text, &more.ends)
    }

    /// Appends the items `joined` holds, quoted and joined by commas, their
    /// closing quotes where `ends` says, when they fit.
    fn append_joined(&mut self, joined: &str, ends: &[u32]) -> bool {
        if ends.is_empty() {
            return true;
        }
        let comma = !self.ends.is_empty();
        let base = self.text.len() + usize::from(comma);
        let Some(offset) = fits(base + joined.len()).and(fits(base)) else {
            return false;
        };
        self.text
            .reserve(usize::from(comma) + joined.len() + SPARE_BYTES);
        if comma {
            self.text.push(',');
        }
        self.text.push_str(joined);
        self.ends.reserve(ends.len() + SPARE_ITEMS);
        self.ends.extend(ends.iter().map(|&end| offset + end));
        true
    }

    /// Membership of a string: the needle's key is compared with the
    /// items' keys, which decides it for a needle of up to six bytes, and
    /// picks the items to compare in full for a longer one. An item without
    /// a stored key has its bytes read as its key would be, masked to the
    /// needle's length.
    fn contains(&self, needle: &str) -> bool {
        if !plain(needle) {
            return false;
        }
        let needle = needle.as_bytes();
        let n = needle.len();
        let key = needle_key(needle);
        let text = self.text.as_bytes();
        let whole = |end: u32| n <= 6 || is_item(text, end as usize, needle);
        let (keyed, rest) = self.ends.split_at(self.keys.len());
        if !self.table.is_empty() {
            let mask = self.table.len() - 1;
            let mut slot = table_slot(key, self.table.len());
            loop {
                let at = match self.table[slot] {
                    0 => break,
                    plus_one => plus_one as usize - 1,
                };
                if self.keys[at] == key && whole(keyed[at]) {
                    return true;
                }
                slot = (slot + 1) & mask;
            }
            return scan_unkeyed(text, rest, n, key, whole);
        }
        // Four keys a round, compared without a jump between them.
        let mut rounds = self.keys.chunks_exact(4);
        let mut at = 0;
        for four in &mut rounds {
            if (four[0] == key) | (four[1] == key) | (four[2] == key) | (four[3] == key)
                && (at..at + 4).any(|i| self.keys[i] == key && whole(keyed[i]))
            {
                return true;
            }
            at += 4;
        }
        (at..keyed.len()).any(|i| self.keys[i] == key && whole(keyed[i]))
            || scan_unkeyed(text, rest, n, key, whole)
    }
}

/// Whether one of the items whose closing quotes are at `ends` in `text`,
/// which have no stored key, has the needle's `key` (the needle is `n`
/// bytes long) and is the needle by `whole`. (Four a round, as the keys
/// are read, cost more here: each item's key is worked out first.)
#[inline(always)]
fn scan_unkeyed(
    text: &[u8],
    ends: &[u32],
    n: usize,
    key: u64,
    whole: impl Fn(u32) -> bool,
) -> bool {
    ends.iter()
        .any(|&end| key_at(text, end as usize, n) == key && whole(end))
}

/// Where key `key` is looked for first in a table of `len` slots (a power
/// of two, at least 2).
#[inline(always)]
fn table_slot(key: u64, len: usize) -> usize {
    // Fibonacci hashing: the top bits of the product depend on every byte
    // of the key, where an id's varied bytes are at the top.
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - len.trailing_zeros())) as usize
}

/// Enters position `at` of key `key` in the first free slot from its own.
fn table_insert(table: &mut [u32], at: usize, key: u64) {
    let mask = table.len() - 1;
    let mut slot = table_slot(key, table.len());
    while table[slot] != 0 {
        slot = (slot + 1) & mask;
    }
    // Positions fit: a packed list's offsets, and so its items, are `u32`s.
    table[slot] = at as u32 + 1;
}

/// An item's key: the last (up to) eight bytes of the item in quotes, at
/// the top of a little-endian word, zeros below. Plain strings hold
/// neither zeros nor quotes, so two items of up to six bytes are equal
/// exactly when their keys are; longer items with equal keys end alike.
/// Ids that share a prefix (`c1`, `c12`, `order-17`) differ at their end.
/// This is the key of the item of `len` bytes whose closing quote is at
/// `close` in `text`.
#[inline(always)]
fn key_at(text: &[u8], close: usize, len: usize) -> u64 {
    let word = match close
        .checked_sub(7)
        .and_then(|start| text.get(start..))
        .and_then(<[u8]>::first_chunk)
    {
        Some(word) => u64::from_le_bytes(*word),
        // Fewer than eight bytes up to the closing quote: zeros before.
        None => {
            let mut word = [0u8; 8];
            let start = text.get(..=close).unwrap_or_default();
            word[8 - start.len().min(8)..].copy_from_slice(&start[start.len().saturating_sub(8)..]);
            u64::from_le_bytes(word)
        }
    };
    word & (u64::MAX << (8 * (8 - (len + 2).min(8))))
}

/// The key (see `key_at`) that an item equal to `needle` has: its closing
/// quote in the top byte, its last (up to) seven bytes below, then its
/// opening quote if it fits.
fn needle_key(needle: &[u8]) -> u64 {
    let mut key = u64::from(b'"') << 56;
    for (i, &b) in needle.iter().rev().take(7).enumerate() {
        key |= u64::from(b) << (8 * (6 - i));
    }
    if let Some(open) = 6usize.checked_sub(needle.len()) {
        key |= u64::from(b'"') << (8 * open);
    }
    key
}

/// Whether the packed item whose closing quote is at `end` is `needle`
/// (which has no quote, so a quote just before it is the item's opening
/// one).
#[inline(never)]
fn is_item(text: &[u8], end: usize, needle: &[u8]) -> bool {
    let n = needle.len();
    end > n && text[end - n - 1] == b'"' && &text[end - n..end] == needle
}

/// Membership of a string among values: as `Packed::contains`, with the
/// length read first because `SmolStr` has it without telling an inline
/// string from a shared one, which reading the bytes must do.
fn values_contain_str(items: &[Value], needle: &[u8]) -> bool {
    let n = needle.len();
    match n {
        0 => scan_values(items, n, |_| true),
        1 => scan_values(items, n, |t| t[0] == needle[0]),
        2..=3 => {
            let (first, last) = (word::<2>(needle, 0), word::<2>(needle, n - 2));
            scan_values(items, n, |t| {
                word::<2>(t, n - 2) == last && word::<2>(t, 0) == first
            })
        }
        4..=7 => {
            let (first, last) = (word::<4>(needle, 0), word::<4>(needle, n - 4));
            scan_values(items, n, |t| {
                word::<4>(t, n - 4) == last && word::<4>(t, 0) == first
            })
        }
        8..=16 => {
            let (first, last) = (word::<8>(needle, 0), word::<8>(needle, n - 8));
            scan_values(items, n, |t| {
                word::<8>(t, n - 8) == last && word::<8>(t, 0) == first
            })
        }
        _ => scan_values(items, n, |t| bytes_eq(t, needle)),
    }
}

#[inline(always)]
fn scan_values(items: &[Value], n: usize, same_bytes: impl Fn(&[u8]) -> bool) -> bool {
    let matches = |v: &Value| match v {
        Value::String(t) => t.len() == n && same_bytes(t.as_bytes()),
        _ => false,
    };
    // Four items a round: the loop's own count and jump are a good part of
    // an item's few instructions.
    let mut rounds = items.chunks_exact(4);
    for four in &mut rounds {
        if matches(&four[0]) || matches(&four[1]) || matches(&four[2]) || matches(&four[3]) {
            return true;
        }
    }
    rounds.remainder().iter().any(matches)
}

/// A list of `items`, packed when every item is a plain string.
impl From<Vec<Value>> for List {
    fn from(items: Vec<Value>) -> List {
        let mut packed = Packed::default();
        for item in &items {
            match item {
                Value::String(s) if packed.push(s) => {}
                _ => return List(Repr::Values(items)),
            }
        }
        List(Repr::Packed(packed))
    }
}

impl FromIterator<Value> for List {
    fn from_iter<I: IntoIterator<Item = Value>>(items: I) -> List {
        List::from(items.into_iter().collect::<Vec<_>>())
    }
}

impl Extend<Value> for List {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

/// Item by item, by CEL equality (so a list holding NaN is not equal to
/// itself); two packed lists compare their texts.
impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        match (&self.0, &other.0) {
            (Repr::Packed(a), Repr::Packed(b)) => a.ends == b.ends && a.text == b.text,
            _ => self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b),
        }
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The items of a `List`, in order.
pub struct Iter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Packed(Strings<'a>),
    Values(std::slice::Iter<'a, Value>),
}

/// The items of packed text, given with where each closing quote is.
struct Strings<'a> {
    text: &'a str,
    ends: std::slice::Iter<'a, u32>,
    /// Where the next item starts.
    start: usize,
}

impl<'a> Strings<'a> {
    fn new(text: &'a str, ends: &'a [u32]) -> Strings<'a> {
        Strings {
            text,
            ends: ends.iter(),
            start: 1,
        }
    }
}

impl<'a> Iterator for Strings<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let end = *self.ends.next()? as usize;
        let s = &self.text[self.start..end];
        self.start = end + SEPARATOR;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cow<'a, Value>;

    #[inline]
    fn next(&mut self) -> Option<Cow<'a, Value>> {
        match &mut self.0 {
            IterRepr::Packed(strings) => strings.next().map(|s| Cow::Owned(Value::from(s))),
            IterRepr::Values(items) => items.next().map(Cow::Borrowed),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            IterRepr::Packed(strings) => strings.ends.len(),
            IterRepr::Values(items) => items.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a List {
    type Item = Cow<'a, Value>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::expr::json::{Reader, to_text};

    fn is_packed(list: &List) -> bool {
        matches!(list.0, Repr::Packed(_))
    }

    /// The same items kept as values, whatever they are.
    fn unpacked(items: &[Value]) -> List {
        List(Repr::Values(items.to_vec()))
    }

    /// `items` as a list kept every way there is: packed with keys,
    /// packed without (read from JSON), packed with keys for the first
    /// half only, and as values.
    fn every_way(items: &[Value]) -> Vec<List> {
        let read_list = |items: &[Value]| {
            let value = read(&to_text(&Value::list(items.to_vec())));
            value.as_list().unwrap().clone()
        };
        let half = items.len() / 2;
        let mut halves = List::from(items[..half].to_vec());
        halves.append(&read_list(&items[half..]));
        vec![
            List::from(items.to_vec()),
            read_list(items),
            halves,
            unpacked(items),
        ]
    }

    fn strings(items: &[&str]) -> Vec<Value> {
        items.iter().map(|&s| Value::from(s)).collect()
    }

    fn read(text: &str) -> Value {
        let mut reader = Reader::new(text);
        let value = reader.value().unwrap();
        reader.end().unwrap();
        value
    }

    #[test]
    fn packs_plain_strings_and_keeps_anything_else_as_values() {
        assert!(is_packed(&List::new()));
        assert!(is_packed(&List::from(strings(&["c0", "", "é", "a b"]))));
        assert!(!is_packed(&List::from(strings(&["c0", "a\"b"]))));
        assert!(!is_packed(&List::from(strings(&["tab\there"]))));
        assert!(!is_packed(&List::from(vec![Value::Int(1)])));

        // An item that cannot be packed unpacks the list, in order.
        let mut list = List::from(strings(&["c0", "c1"]));
        list.push(Value::from("back\\slash"));
        assert!(!is_packed(&list));
        assert_eq!(list.to_vec(), strings(&["c0", "c1", "back\\slash"]));
        let mut list = List::new();
        list.push(Value::from("c0"));
        list.push(Value::Null);
        assert_eq!(list.to_vec(), vec![Value::from("c0"), Value::Null]);
    }

    #[test]
    fn finds_items_between_the_separators() {
        let list = List::from(strings(&["", "a", "", "long id of more than 23 bytes"]));
        assert!(is_packed(&list));
        let items: Vec<Value> = list.iter().map(Cow::into_owned).collect();
        assert_eq!(
            items,
            strings(&["", "a", "", "long id of more than 23 bytes"])
        );
        assert_eq!(list.get(1).as_deref(), Some(&Value::from("a")));
        assert_eq!(list.get(2).as_deref(), Some(&Value::from("")));
        assert_eq!(list.get(4), None);
        assert_eq!(
            list.last().as_deref(),
            Some(&Value::from("long id of more than 23 bytes"))
        );
        assert_eq!(List::new().last(), None);
        assert_eq!(format!("{list:?}"), format!("{items:?}"));
    }

    #[test]
    fn keys_a_needle_as_its_item_is_keyed() {
        let text = "abcdefghijklmnopqrstuvwxyz";
        for n in 0..text.len() {
            let needle = &text[..n];
            let quoted = format!("\"{needle}\"");
            assert_eq!(
                needle_key(needle.as_bytes()),
                key_at(quoted.as_bytes(), n + 1, n),
                "{needle}"
            );
        }
    }

    /// Past `TABLE_FROM` keys a membership test looks its key up in the
    /// table: it still answers as equality, for ids that differ anywhere,
    /// long ones whose keys are equal, and items read without keys after.
    #[test]
    fn looks_keys_up_in_a_table_once_there_are_many() {
        let ids: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("c{i}"),
                // Equal keys: the same last seven bytes.
                1 => format!("order-{}-tail-{}", i / 3, "abcdefg"),
                _ => format!("{i}-x"),
            })
            .collect();
        let mut list = List::new();
        for (i, id) in ids.iter().enumerate() {
            let needle = Value::from(id.as_str());
            assert!(!list.contains(&needle), "{id} before it was added");
            list.push(needle.clone());
            assert!(list.contains(&needle), "{id} once added");
            if i + 1 == TABLE_FROM {
                assert!(matches!(&list.0, Repr::Packed(p) if !p.table.is_empty()));
            }
        }
        let Repr::Packed(packed) = &list.0 else {
            panic!("a list of plain strings is packed");
        };
        assert_eq!(packed.keys.len(), ids.len());
        assert!(2 * packed.keys.len() <= packed.table.len());
        // Items read from JSON have no keys; they are scanned after the table.
        list.append(&read_list(&["late-1", "c0x"]));
        for id in ids.iter().map(String::as_str).chain(["late-1", "c0x"]) {
            assert!(list.contains(&Value::from(id)), "{id}");
        }
        for absent in ["c1000", "order-1-tail-abcdefh", "x", "", "late-2", "0-x1"] {
            assert!(!list.contains(&Value::from(absent)), "{absent}");
        }
        list.clear();
        assert!(list.is_empty() && !list.contains(&Value::from("c0")));
        list.push(Value::from("c0"));
        assert!(list.contains(&Value::from("c0")));
    }

    fn read_list(items: &[&str]) -> List {
        read(&to_text(&Value::list(strings(items))))
            .as_list()
            .unwrap()
            .clone()
    }

    #[test]
    fn keeps_keys_for_items_added_one_at_a_time() {
        let keys = |list: &List| match &list.0 {
            Repr::Packed(packed) => packed.keys.len(),
            Repr::Values(_) => 0,
        };
        let mut list = List::from(strings(&["c0", "c1"]));
        assert_eq!(keys(&list), 2);
        list.push(Value::from("c2"));
        assert_eq!(keys(&list), 3);
        let mut read = read(&to_text(&Value::List(Arc::new(list.clone()))))
            .as_list()
            .unwrap()
            .clone();
        assert_eq!(keys(&read), 0);
        // An item after one without a key gets none either: keys cover a
        // prefix of the items.
        read.push(Value::from("c3"));
        assert_eq!(keys(&read), 0);
        list.append(&read);
        assert_eq!((list.len(), keys(&list)), (7, 3));
        assert!(list.contains(&Value::from("c3")) && list.contains(&Value::from("c1")));
    }

    #[test]
    fn reads_long_lists_in_runs() {
        // More items than a run collects on the stack, compact and spaced,
        // with an escaped item in the middle that ends the packing.
        let ids: Vec<Value> = (0..150).map(|i| Value::from(format!("c{i}"))).collect();
        let packed = Value::list(ids.clone());
        let text = to_text(&packed);
        assert_eq!(read(&text), packed);
        assert_eq!(to_text(&read(&text)), text);
        assert!(is_packed(read(&text).as_list().unwrap()));
        let spaced = serde_json::to_string_pretty(&packed).unwrap();
        assert_eq!(to_text(&read(&spaced)), text);
        let mut lists = Vec::new();
        // Exactly one run, two runs, and more.
        for n in [63, 64, 65, 128, 150] {
            lists.push(ids[..n].to_vec());
        }
        // An escape right where a run is full, in the middle of one, and
        // first; a list of values before its runs of strings.
        for at in [0, 64, 100] {
            let mut mixed = ids.clone();
            mixed.insert(at, Value::from("a\"b"));
            lists.push(mixed);
        }
        let mut values = vec![Value::Int(1)];
        values.extend(ids[..70].iter().cloned());
        lists.push(values);
        for items in lists {
            let value = Value::list(items.clone());
            let text = to_text(&value);
            assert_eq!(text, serde_json::Value::from(&value).to_string());
            let read = read(&text);
            assert_eq!(read.as_list().unwrap().to_vec(), items);
            assert_eq!(to_text(&read), text);
        }
    }

    #[test]
    fn is_equal_whichever_way_it_is_kept() {
        let items = strings(&["c0", "", "c12"]);
        let packed = List::from(items.clone());
        assert!(is_packed(&packed));
        assert_eq!(packed, unpacked(&items));
        assert_eq!(unpacked(&items), packed);
        assert_ne!(packed, unpacked(&items[..2]));
        assert_ne!(packed, List::from(strings(&["c0", "", "c13"])));
        // `["", ""]` and `[""]` have different texts and counts.
        assert_ne!(List::from(strings(&["", ""])), List::from(strings(&[""])));
        assert_ne!(List::from(strings(&[""])), List::new());
        assert_eq!(
            Value::List(Arc::new(packed.clone())).to_string(),
            Value::List(Arc::new(unpacked(&items))).to_string()
        );
        assert_eq!(
            Value::List(Arc::new(packed)),
            Value::list(vec![Value::from("c0"), Value::from(""), Value::from("c12")])
        );
    }

    #[test]
    fn appends_lists_kept_either_way() {
        let a = strings(&["c0", ""]);
        let b = vec![Value::from("c1"), Value::Int(2)];
        let c = strings(&["", "c3"]);
        for (head, tail) in [(&a, &c), (&a, &b), (&b, &a), (&c, &c), (&vec![], &a)] {
            let expected: Vec<Value> = head.iter().chain(tail.iter()).cloned().collect();
            for list in [List::from(head.clone()), unpacked(head)] {
                for more in [List::from(tail.clone()), unpacked(tail)] {
                    let mut grown = list.clone();
                    grown.append(&more);
                    assert_eq!(grown.to_vec(), expected, "{list:?} + {more:?}");
                }
            }
            let mut list = List::from(head.clone());
            list.extend(tail.iter().cloned());
            assert_eq!(list.to_vec(), expected);
        }
    }

    #[test]
    fn membership_compares_strings_by_content_too() {
        let long = "an id longer than the 23 bytes kept inline";
        let shared: Arc<str> = Arc::from(long);
        for list in every_way(&[Value::from("c0"), Value::from(shared.clone())]) {
            assert!(list.contains(&Value::from(shared.clone())));
            assert!(list.contains(&Value::from(long.to_string())));
            assert!(list.contains(&Value::from("c0")));
            assert!(!list.contains(&Value::from("c2")));
            assert!(!list.contains(&Value::Int(0)));
        }
        assert!(List::from(vec![Value::Int(1)]).contains(&Value::Double(1.0)));
        // Needles of seven bytes and more are keyed by their last seven:
        // an item that ends the same way is compared in full.
        for (items, needle, expected) in [
            (&["xabcdefg"][..], "abcdefg", false),
            (&["zzz", "xabcdefgh"], "abcdefgh", false),
            (&["abcdefg"], "xabcdefg", false),
            (&["zzz", "abcdefgh"], "abcdefgh", true),
            (&["abcdef", "xabcdef"], "xabcdef", true),
        ] {
            for list in every_way(&strings(items)) {
                assert_eq!(
                    list.contains(&Value::from(needle)),
                    expected,
                    "{needle} in {list:?}"
                );
            }
        }
        // A comma, and an item that ends where another starts, match only
        // as whole items.
        let commas = List::from(strings(&["a", ",", "b"]));
        assert!(commas.contains(&Value::from(",")));
        assert!(!commas.contains(&Value::from("a\",\"b")));
        assert!(!List::from(strings(&["a", "b"])).contains(&Value::from(",")));
        assert!(!List::from(strings(&["xabc", "bc"])).contains(&Value::from("abc")));
        assert!(!List::from(strings(&["a", "bc"])).contains(&Value::from("\",\"bc")));
    }

    /// The string scans (by length class) answer as the general comparison
    /// does, wherever the needle is and whatever else the list holds, for
    /// packed lists and lists of values.
    #[test]
    fn membership_agrees_with_equality() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        let strings: Vec<Value> = (0..text.len())
            .flat_map(|n| {
                // Same length, one byte off: at the end, at the start.
                let mut last = text[..n].to_string().into_bytes();
                let mut first = last.clone();
                if n > 0 {
                    last[n - 1] = b'#';
                    first[0] = b'#';
                }
                let [last, first] = [last, first].map(|b| String::from_utf8(b).unwrap());
                [
                    Value::from(&text[..n]),
                    Value::from(last),
                    Value::from(first),
                ]
            })
            .collect();
        let long: Arc<str> = Arc::from(text);
        let others = [Value::Int(7), Value::Null, Value::from(long)];
        for needle in strings.iter().chain(&others) {
            for len in 0..11 {
                let mixed: Vec<Value> = (0..len)
                    .map(|i| match i % 3 {
                        0 => strings[(i * 7) % strings.len()].clone(),
                        1 => others[i % others.len()].clone(),
                        _ => strings[(i * 5 + 3) % strings.len()].clone(),
                    })
                    .collect();
                let only_strings: Vec<Value> = (0..len)
                    .map(|i| strings[(i * 7 + len) % strings.len()].clone())
                    .collect();
                for mut items in [mixed, only_strings] {
                    let expected = items.iter().any(|v| v == needle);
                    for list in every_way(&items) {
                        assert_eq!(list.contains(needle), expected, "{needle} in {list:?}");
                    }
                    for at in 0..=len {
                        items.insert(at, needle.clone());
                        for list in every_way(&items) {
                            assert!(list.contains(needle), "{needle} at {at} of {list:?}");
                        }
                        items.remove(at);
                    }
                }
            }
        }
    }

    fn item() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => "[a-c\"\\\\\né ]{0,4}".prop_map(Value::from),
            1 => any::<i64>().prop_map(Value::Int),
            1 => Just(Value::Null),
        ]
    }

    proptest! {
        /// However a list is built (at once, an item at a time, appended,
        /// read from compact or spaced JSON), it holds the same items,
        /// writes serde_json's bytes and answers membership as equality.
        #[test]
        fn builds_the_same_list_every_way(
            items in prop::collection::vec(item(), 0..12),
            split in 0usize..12,
        ) {
            let whole = List::from(items.clone());
            prop_assert_eq!(whole.to_vec(), items.clone());
            prop_assert_eq!(&whole, &unpacked(&items));

            let mut pushed = List::new();
            for item in &items {
                pushed.push(item.clone());
            }
            prop_assert_eq!(&pushed, &whole);

            let split = split.min(items.len());
            let mut appended = List::from(items[..split].to_vec());
            appended.append(&List::from(items[split..].to_vec()));
            prop_assert_eq!(appended.to_vec(), items.clone());
            prop_assert_eq!(&appended, &whole);

            let value = Value::List(Arc::new(whole));
            let json = serde_json::Value::from(&value);
            let compact = serde_json::to_string(&json).unwrap();
            prop_assert_eq!(&to_text(&value), &compact);
            for text in [compact.clone(), serde_json::to_string_pretty(&json).unwrap()] {
                let read = read(&text);
                prop_assert_eq!(read.as_list().unwrap().to_vec(), items.clone());
                prop_assert_eq!(&to_text(&read), &compact);
            }

            for needle in items.iter().chain([&Value::from("a"), &Value::from("")]) {
                let expected = items.iter().any(|v| v == needle);
                for list in every_way(&items) {
                    prop_assert_eq!(list.contains(needle), expected);
                }
            }
        }
    }
}
