//! Runtime values: what expressions compute and what the context holds.
//!
//! Lists and maps sit behind `Arc`, so cloning a value never copies their
//! contents and a value can cross threads (the durable runtime runs on
//! several). A list that is owned by one holder alone can still grow in place
//! through `Arc::make_mut`, which is how an assign appends to a list without
//! copying it. A list of strings is kept packed as its JSON text (`List`).
//!
//! Strings are `SmolStr`s: up to 23 bytes are stored inside the value itself,
//! longer ones behind an `Arc`, so cloning stays cheap either way.

use std::cmp::Ordering;
use std::fmt::{self, Write};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

use super::list::List;
pub use smol_str::SmolStr;

/// The map of a `Value::Map`: string keys in insertion order, as JSON objects.
pub type Map = IndexMap<Arc<str>, Value>;

/// A runtime value, shaped like JSON with integers kept apart from doubles.
///
/// Equality follows CEL: values of different kinds are unequal, except that
/// numbers compare by value across `Int` and `Double` (`1 == 1.0`); `NaN`
/// equals nothing; maps are equal when they hold the same keys with equal
/// values, whatever their order.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    String(SmolStr),
    List(Arc<List>),
    Map(Arc<Map>),
}

/// Maps at most this long are searched by comparing keys one by one: for the
/// few fields of a payload that is faster than hashing the key.
const LINEAR_LOOKUP_MAX: usize = 8;

impl Value {
    /// The kind's name as CEL writes its type: `int`, `string`, `list`...
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }

    /// The kind with its article, for messages: `an int`, `a string`, `null`.
    pub fn described(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a bool",
            Value::Int(_) => "an int",
            Value::Double(_) => "a double",
            Value::String(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a map",
        }
    }

    /// A list of `items` (packed when they are all plain strings, see `List`).
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(List::from(items)))
    }

    pub fn map<K: Into<Arc<str>>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(Arc::new(
            entries.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ))
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(map) => Some(map),
            _ => None,
        }
    }

    /// The value under `key` when this is a map that has it.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map().and_then(|map| map_get(map, key))
    }

    /// Plain JSON; doubles that JSON cannot hold (NaN, infinities) become `null`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::from(self)
    }
}

/// Looks `key` up in `map`, comparing keys directly when the map is small.
#[inline]
pub fn map_get<'m>(map: &'m Map, key: &str) -> Option<&'m Value> {
    map_entry(map, key).map(|(_, v)| v)
}

/// Where `key` is in `map`, and its value: keys compared one by one when the
/// map is small, hashed when not.
#[inline]
fn map_entry<'m>(map: &'m Map, key: &str) -> Option<(usize, &'m Value)> {
    if map.len() <= LINEAR_LOOKUP_MAX {
        map.iter()
            .position(|(k, _)| bytes_eq(k.as_bytes(), key.as_bytes()))
            .map(|at| (at, &map[at]))
    } else {
        map.get_full(key).map(|(at, _, v)| (at, v))
    }
}

/// `map_get` that first tries the entry at position `near`: `Ok` when the
/// key is there, else `Err` with where the key is (and its value), if
/// anywhere.
#[inline(always)]
pub(crate) fn map_get_near<'m>(
    map: &'m Map,
    key: &str,
    near: usize,
) -> Result<&'m Value, Option<(usize, &'m Value)>> {
    if let Some((k, v)) = map.get_index(near)
        && bytes_eq(k.as_bytes(), key.as_bytes())
    {
        return Ok(v);
    }
    Err(map_find(map, key))
}

/// `map_entry` kept out of line, as the path taken when a guess missed.
#[inline(never)]
fn map_find<'m>(map: &'m Map, key: &str) -> Option<(usize, &'m Value)> {
    map_entry(map, key)
}

/// Equality of shared strings (event names) that first asks whether both
/// are the same allocation: an event's name is often the very string the
/// chart holds, so most matches end without reading a byte.
/// The pointer and the lengths are compared inline, the bytes out of line:
/// inlined into a loop, their comparison's setup for a loop-invariant name
/// would be paid before the loop even when no length matches.
#[inline(always)]
pub fn str_eq(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || (a.len() == b.len() && bytes_eq_outlined(a.as_bytes(), b.as_bytes()))
}

#[inline(never)]
fn bytes_eq_outlined(a: &[u8], b: &[u8]) -> bool {
    bytes_eq(a, b)
}

/// Byte equality that compares short strings (ids, mostly) with two
/// overlapping word loads instead of a call to `memcmp`, which costs more
/// than the comparison itself at these lengths.
#[inline(always)]
pub(super) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1 => a[0] == b[0],
        2..=3 => word::<2>(a, 0) == word::<2>(b, 0) && word::<2>(a, n - 2) == word::<2>(b, n - 2),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        _ => a == b,
    }
}

/// The `N` bytes of `s` from `at`; the callers keep `at + N <= s.len()`.
#[inline(always)]
pub(super) fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&s[at..at + N]);
    out
}

/// Whether the int `i` and the double `d` are the same number, exactly
/// (`i as f64` would round large integers).
fn int_eq_double(i: i64, d: f64) -> bool {
    cmp_int_double(i, d) == Some(Ordering::Equal)
}

/// Exact order of an int and a double; `None` when the double is NaN.
pub(crate) fn cmp_int_double(i: i64, d: f64) -> Option<Ordering> {
    // 2^63 as a double: every int is below it, and at or above -2^63.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if d.is_nan() {
        return None;
    }
    if d >= LIMIT {
        return Some(Ordering::Less);
    }
    if d < -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = d.trunc();
    Some(i.cmp(&(whole as i64)).then_with(|| {
        // Same whole part: the fraction of `d` decides.
        if d > whole {
            Ordering::Less
        } else if d < whole {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }))
}

/// CEL ordering for `< <= > >=`: numbers (across int and double), strings
/// (by bytes, which is code point order), bools (`false < true`). `None` for
/// any other pair, and for NaN.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Double(y)) => cmp_int_double(*x, *y),
        (Value::Double(x), Value::Int(y)) => cmp_int_double(*y, *x).map(Ordering::reverse),
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Int(x), Value::Int(y)) => x == y,
            (Value::Double(x), Value::Double(y)) => x == y,
            (Value::Int(i), Value::Double(d)) | (Value::Double(d), Value::Int(i)) => {
                int_eq_double(*i, *d)
            }
            (Value::String(x), Value::String(y)) => x == y,
            // No pointer shortcut for lists and maps: a list holding NaN is
            // not equal to itself.
            (Value::List(x), Value::List(y)) => x == y,
            (Value::Map(x), Value::Map(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| map_get(y, k).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Double(n)
    }
}

impl From<&str> for Value {
    #[inline]
    fn from(s: &str) -> Value {
        Value::String(small_str(s))
    }
}

/// `s` as a `SmolStr`, copied inline by a loop the compiler unrolls rather
/// than by `SmolStr::new`'s call to `memcpy`, which costs more than the copy
/// itself for a short id.
#[inline]
fn small_str(s: &str) -> SmolStr {
    if s.len() <= SmolStr::INLINE_CAP {
        SmolStr::new_inline(s)
    } else {
        SmolStr::new(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s.into())
    }
}

impl From<Arc<str>> for Value {
    fn from(s: Arc<str>) -> Value {
        Value::String(s.into())
    }
}

/// A shared name (an event's) as a value: copied inline when short, the
/// allocation shared when not, without touching its count for a short one.
impl From<&Arc<str>> for Value {
    fn from(s: &Arc<str>) -> Value {
        if s.len() <= SmolStr::INLINE_CAP {
            Value::String(small_str(s))
        } else {
            Value::String(Arc::clone(s).into())
        }
    }
}

impl From<SmolStr> for Value {
    fn from(s: SmolStr) -> Value {
        Value::String(s)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::list(items)
    }
}

impl From<&serde_json::Value> for Value {
    fn from(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                // Integers beyond i64 (large u64) keep their magnitude as doubles.
                None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(items) => Value::list(items.iter().map(Value::from).collect()),
            serde_json::Value::Object(map) => Value::Map(Arc::new(
                map.iter()
                    .map(|(k, v)| (Arc::from(k.as_str()), Value::from(v)))
                    .collect(),
            )),
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Value {
        Value::from(&json)
    }
}

impl From<&Value> for serde_json::Value {
    fn from(value: &Value) -> serde_json::Value {
        match value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Double(d) => serde_json::Number::from_f64(*d)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(items) => serde_json::Value::Array(
                items
                    .iter()
                    .map(|item| serde_json::Value::from(&*item))
                    .collect(),
            ),
            Value::Map(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
                    .collect(),
            ),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Int(i) => serializer.serialize_i64(*i),
            Value::Double(d) => serializer.serialize_f64(*d),
            Value::String(s) => serializer.serialize_str(s),
            Value::List(items) => serializer.collect_seq(items.iter()),
            Value::Map(map) => serializer.collect_map(map.iter().map(|(k, v)| (&**k, v))),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Int(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(i64::try_from(n).map_or(Value::Double(n as f64), Value::Int))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Double(n))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::from(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // JSON gives no length up front; starting at 16 instead of 4 spares
        // a few dozen items two of the copies of growing (`Value::list`
        // then packs them if they are plain strings). An empty list
        // allocates nothing.
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            if items.is_empty() {
                items.reserve(seq.size_hint().unwrap_or(16).min(1024));
            }
            items.push(item);
        }
        Ok(Value::list(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::with_capacity(access.size_hint().unwrap_or(0).min(1024));
        while let Some((Key(key), value)) = access.next_entry::<Key, Value>()? {
            match map.entry(key) {
                indexmap::map::Entry::Occupied(entry) => {
                    let key = entry.key();
                    return Err(de::Error::custom(format!("duplicate key `{key}`")));
                }
                indexmap::map::Entry::Vacant(entry) => {
                    entry.insert(value);
                }
            }
        }
        Ok(Value::Map(Arc::new(map)))
    }
}

/// A map key read straight into the `Arc<str>` the map keeps, without an
/// owned `String` on the way.
struct Key(Arc<str>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                Ok(Key(Arc::from(s)))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Writes `s` as a CEL string literal.
pub(crate) fn write_quoted(s: &str, f: &mut impl Write) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if c.is_control() => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// CEL literal syntax, for messages and debugging: `"s"`, `1.0`, `[1, 2]`, `{"k": v}`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 1e15 => {
                write!(f, "{d:.1}")
            }
            Value::Double(d) => write!(f, "{d:?}"),
            Value::String(s) => write_quoted(s, f),
            Value::List(items) => {
                f.write_char('[')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char(']')
            }
            Value::Map(map) => {
                f.write_char('{')?;
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_quoted(key, f)?;
                    write!(f, ": {value}")?;
                }
                f.write_char('}')
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_shared_across_threads_and_small() {
        assert_send_sync::<Value>();
        // An inline string fills the value, and the other kinds fit beside
        // its length byte: cloning and moving stay cheap.
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }

    #[test]
    fn keeps_short_strings_inline_and_shares_long_ones() {
        let long = "an id longer than twenty-three bytes";
        let (Value::String(short), Value::String(shared)) = (Value::from("c1"), Value::from(long))
        else {
            panic!("two strings expected");
        };
        assert!(!short.is_heap_allocated());
        assert!(shared.is_heap_allocated());
        // A clone of the long string shares its bytes rather than copying them.
        assert_eq!(shared.clone().as_ptr(), shared.as_ptr());
        assert_eq!(Value::from(Arc::<str>::from(long)), Value::from(long));
        assert_eq!(Value::from(Arc::<str>::from("c1")), Value::from("c1"));
    }

    #[test]
    fn equality_follows_cel() {
        assert_eq!(Value::Int(1), Value::Double(1.0));
        assert_eq!(Value::Double(1.0), Value::Int(1));
        assert_ne!(Value::Int(1), Value::Double(1.5));
        assert_ne!(Value::Int(1), Value::from("1"));
        assert_ne!(Value::Null, Value::Bool(false));
        assert_ne!(Value::Double(f64::NAN), Value::Double(f64::NAN));
        // 2^53 + 1 is not representable as a double: no rounding into equality.
        assert_ne!(
            Value::Int((1 << 53) + 1),
            Value::Double((1u64 << 53) as f64)
        );
        // i64::MAX rounds up to 2^63 as a double, which no int equals.
        assert_ne!(Value::Int(i64::MAX), Value::Double(i64::MAX as f64));
        let a = Value::map([("x", Value::Int(1)), ("y", Value::from("s"))]);
        let b = Value::map([("y", Value::from("s")), ("x", Value::Double(1.0))]);
        assert_eq!(a, b);
        assert_ne!(a, Value::map([("x", Value::Int(1))]));
        assert_eq!(
            Value::list(vec![Value::Int(1), Value::Null]),
            Value::list(vec![Value::Double(1.0), Value::Null])
        );
    }

    #[test]
    fn orders_numbers_exactly_across_kinds() {
        assert_eq!(
            compare(&Value::Int(1), &Value::Double(1.5)),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&Value::Double(-0.5), &Value::Int(0)),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&Value::Int(-1), &Value::Double(-1.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Value::Int(i64::MAX), &Value::Double(1e19)),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&Value::Int(i64::MIN), &Value::Double(-1e19)),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(&Value::Int(1), &Value::Double(f64::NAN)), None);
        assert_eq!(
            compare(&Value::from("a"), &Value::from("b")),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&Value::from("a"), &Value::Int(1)), None);
    }

    #[test]
    fn round_trips_through_json() {
        let text =
            r#"{"total":100,"cobrado":12.5,"vistos":["c1","c2"],"meta":{"a":null,"b":true}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        let json: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(Value::from(&json), value);
        assert_eq!(value.to_json(), json);
        assert_eq!(
            Value::from(&serde_json::json!(u64::MAX)),
            Value::Double(u64::MAX as f64)
        );
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert!(matches!(big, Value::Double(_)));
        assert!(serde_json::from_str::<Value>(r#"{"a":1,"a":2}"#).is_err());
    }

    #[test]
    fn displays_as_cel_literals() {
        let value = Value::map([
            (
                "n",
                Value::list(vec![Value::Int(1), Value::Double(2.0), Value::Double(0.5)]),
            ),
            ("s", Value::from("a\"b\n")),
            ("z", Value::Null),
        ]);
        assert_eq!(
            value.to_string(),
            r#"{"n": [1, 2.0, 0.5], "s": "a\"b\n", "z": null}"#
        );
    }

    #[test]
    fn finds_keys_in_small_and_large_maps() {
        let small = Value::map((0..3).map(|i| (format!("k{i}"), Value::Int(i))));
        let large = Value::map((0..30).map(|i| (format!("k{i}"), Value::Int(i))));
        assert_eq!(small.get("k2"), Some(&Value::Int(2)));
        assert_eq!(small.get("k9"), None);
        assert_eq!(large.get("k29"), Some(&Value::Int(29)));
        assert_eq!(large.get("x"), None);
    }

    #[test]
    fn compares_bytes_of_every_length() {
        let text = "abcdefghijklmnopqrstuvwxyz";
        for n in 0..text.len() {
            let a = &text.as_bytes()[..n];
            assert!(bytes_eq(a, a), "{n}");
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] = b'#';
                assert!(!bytes_eq(a, &b), "{n} differs at {i}");
            }
        }
        assert!(!bytes_eq(b"ab", b"abc"));
    }
}
