//! JSON text of `Value`s without serde: a writer that produces exactly the
//! bytes `serde_json::to_string` produces, and a recursive-descent reader
//! that accepts exactly what `serde_json::from_str::<Value>` accepts and
//! reads it into the same value.
//!
//! The snapshot codec (`interp::snapshot_json`) reads and writes a snapshot
//! through these directly, skipping serde's visitors and the intermediate
//! `Snapshot`; these functions are its building blocks.
//!
//! What the reader keeps of serde_json's rules: whitespace is space, tab,
//! line feed and carriage return; strings reject raw control characters and
//! need paired surrogates in `\u` escapes; an integer is an `Int` when it fits
//! an i64, else a `Double`, and `-0` is the double `-0.0`; a number that does
//! not fit a double is an error; at most `MAX_DEPTH` lists and maps are open
//! at once; a map may not repeat a key. Numbers with a fraction or exponent
//! are read with Rust's exact `str::parse::<f64>`, so a double written by
//! the writer reads back bit for bit (serde_json without its
//! `float_roundtrip` feature may miss by one unit in the last place on
//! long mantissas).

use std::borrow::Cow;
use std::sync::Arc;

use smol_str::SmolStr;

use super::list::{Items, List};
use super::value::{Map, Value};

/// How many items of a run of plain strings are collected before they are
/// moved to their list.
const RUN: usize = 64;

/// How many lists and maps may be open at once: serde_json's recursion limit
/// of 128 lets 127 nest, counting the snapshot's own object.
pub(crate) const MAX_DEPTH: u32 = 127;

/// A JSON text that does not read: what is wrong, and the byte offset of
/// the offending byte (the text's length for an unexpected end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JsonError {
    pub message: String,
    pub offset: usize,
}

/// The 1-based line and column (in bytes, as serde_json counts them) of a
/// byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.as_bytes().get(..offset).unwrap_or(text.as_bytes());
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, before.len() - start + 1)
}

/// A number as JSON text gives it, before a type decides what it may be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Number {
    /// A non-negative integer that fits a u64.
    U64(u64),
    /// A negative integer that fits an i64.
    I64(i64),
    /// Anything else: a fraction, an exponent, `-0`, or an integer too large.
    F64(f64),
}

impl Number {
    pub(crate) fn to_value(self) -> Value {
        match self {
            Number::U64(n) => i64::try_from(n).map_or(Value::Double(n as f64), Value::Int),
            Number::I64(n) => Value::Int(n),
            Number::F64(d) => Value::Double(d),
        }
    }
}

/// A cursor over JSON text.
pub(crate) struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// Lists and maps open now.
    depth: u32,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            pos: 0,
            depth: 0,
        }
    }

    /// A reader of the same text at `pos`, with `depth` lists and maps open,
    /// to read again a value the first pass skipped over.
    pub(crate) fn at(text: &'a str, pos: usize, depth: u32) -> Reader<'a> {
        Reader { text, pos, depth }
    }

    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The text from the current position on.
    pub(crate) fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    /// Moves past `n` bytes that the caller has read in `rest`, which
    /// open and close no list or map.
    pub(crate) fn skip(&mut self, n: usize) {
        self.pos += n;
    }

    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    pub(crate) fn error(&self, offset: usize, message: impl Into<String>) -> JsonError {
        JsonError {
            message: message.into(),
            offset,
        }
    }

    /// An error at the current byte.
    pub(crate) fn here(&self, message: impl Into<String>) -> JsonError {
        self.error(self.pos, message)
    }

    /// The next byte after whitespace, not consumed; `None` at the end.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        let mut pos = self.pos;
        while let Some(&b) = bytes.get(pos) {
            if b > b' ' || !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                self.pos = pos;
                return Some(b);
            }
            pos += 1;
        }
        self.pos = pos;
        None
    }

    /// Consumes `byte` after whitespace, or fails with `expected`.
    #[inline]
    pub(crate) fn expect(&mut self, byte: u8, expected: &str) -> Result<(), JsonError> {
        match self.peek() {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.here(format!("expected {expected}"))),
            None => Err(self.here(format!("EOF while expecting {expected}"))),
        }
    }

    /// Only whitespace may follow the value.
    pub(crate) fn end(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.here("trailing characters")),
        }
    }

    /// Opens a list or map at the current byte (`[` or `{`), counting it
    /// against the depth limit.
    #[inline]
    pub(crate) fn open(&mut self) -> Result<(), JsonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.here("recursion limit exceeded"));
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    /// Whether another item follows in the list or map whose closing byte
    /// is `close`; consumes the `,` before it, or the closing byte after the
    /// last. `first` says that no item was read yet.
    #[inline]
    pub(crate) fn has_next(&mut self, close: u8, first: &mut bool) -> Result<bool, JsonError> {
        // Compact JSON: the `,` and the next item's first byte, or the
        // closing byte, right at the position.
        let bytes = self.text.as_bytes();
        match bytes.get(self.pos) {
            Some(&b',') if !*first => {
                if let Some(&next) = bytes.get(self.pos + 1)
                    && next > b' '
                    && next != close
                {
                    self.pos += 1;
                    return Ok(true);
                }
            }
            Some(&b) if b == close => {
                self.pos += 1;
                self.depth -= 1;
                return Ok(false);
            }
            // The first item's first byte (what `has_next_spaced` answers
            // for any byte that is not whitespace).
            Some(&b) if *first && b > b' ' => {
                *first = false;
                return Ok(true);
            }
            _ => {}
        }
        self.has_next_spaced(close, first)
    }

    /// `has_next` where whitespace may come first.
    #[inline(never)]
    fn has_next_spaced(&mut self, close: u8, first: &mut bool) -> Result<bool, JsonError> {
        match self.peek() {
            Some(b) if b == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(false)
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            Some(b',') => {
                self.pos += 1;
                match self.peek() {
                    Some(b) if b == close => Err(self.here("trailing comma")),
                    Some(_) => Ok(true),
                    None => Err(self.unclosed(close)),
                }
            }
            Some(_) => Err(self.here(format!("expected `,` or `{}`", close as char))),
            None => Err(self.unclosed(close)),
        }
    }

    #[cold]
    fn unclosed(&self, close: u8) -> JsonError {
        let what = if close == b']' { "list" } else { "map" };
        self.here(format!("EOF while reading a {what}"))
    }

    /// Consumes the key `"name"` when the text at `pos` is exactly that,
    /// without escapes; the `:` after it is left. The fast way to recognise
    /// expected keys (and the usual `status`). `name` must be `plain`
    /// (nothing in it that JSON escapes), so that the bytes matched are one
    /// string.
    #[inline(always)]
    pub(crate) fn plain_key(&mut self, name: &str) -> bool {
        let bytes = self.text.as_bytes();
        let (at, n) = (self.pos, name.len());
        let plain = bytes.get(at) == Some(&b'"')
            && bytes.get(at + 1..at + 1 + n) == Some(name.as_bytes())
            && bytes.get(at + 1 + n) == Some(&b'"');
        if plain {
            self.pos = at + n + 2;
        }
        plain
    }

    /// A map's next key and its `:`, after `has_next` said there is one.
    #[inline]
    pub(crate) fn key(&mut self) -> Result<Cow<'a, str>, JsonError> {
        match self.peek() {
            Some(b'"') => {}
            Some(_) => return Err(self.here("key must be a string")),
            None => return Err(self.here("EOF while reading a map")),
        }
        let key = self.string()?;
        self.expect(b':', "`:`")?;
        Ok(key)
    }

    /// A string, at its opening quote (after `peek` found it): borrowed from
    /// the text when it has no escapes.
    #[inline]
    pub(crate) fn string(&mut self) -> Result<Cow<'a, str>, JsonError> {
        if let Some((text, next)) = self.plain_string_at(self.pos) {
            self.pos = next;
            return Ok(Cow::Borrowed(text));
        }
        let bytes = self.text.as_bytes();
        let start = self.pos + 1;
        let mut i = start;
        loop {
            match bytes.get(i) {
                Some(&b) if !STOP[b as usize] => i += 1,
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(Cow::Borrowed(self.slice(start, i)?));
                }
                Some(b'\\') => break,
                Some(_) => return Err(self.error(i, CONTROL)),
                None => return Err(self.error(i, "EOF while reading a string")),
            }
        }
        let mut out = String::from(self.slice(start, i)?);
        self.pos = i;
        self.escaped_rest(&mut out, true)?;
        Ok(Cow::Owned(out))
    }

    /// A string as a value: one without escapes goes from the text
    /// straight into the value, without a `Cow` on the way.
    #[inline]
    fn string_value(&mut self) -> Result<Value, JsonError> {
        match self.plain_string() {
            Some(value) => Ok(value),
            None => Ok(Value::from(&*self.string()?)),
        }
    }

    /// The string at `pos` (its opening quote) when it has no escapes and
    /// ends; `None`, with nothing consumed, for `string` to read or reject.
    #[inline(always)]
    fn plain_string(&mut self) -> Option<Value> {
        let (text, next) = self.plain_string_at(self.pos)?;
        self.pos = next;
        Some(Value::String(smol(text)))
    }

    /// The string whose opening quote is at `at`, when it has no escapes
    /// and ends: its text, and the position after its closing quote.
    #[inline(always)]
    fn plain_string_at(&self, at: usize) -> Option<(&'a str, usize)> {
        let end = closing_quote(self.text.as_bytes(), at)?;
        Some((self.text.get(at + 1..end)?, end + 1))
    }

    /// `text[start..end]`, where both ends sit next to ASCII bytes the
    /// reader found, so they are always character boundaries.
    fn slice(&self, start: usize, end: usize) -> Result<&'a str, JsonError> {
        self.text
            .get(start..end)
            .ok_or_else(|| self.error(start, "invalid UTF-8 boundary"))
    }

    /// The rest of a string from an escape at `pos`, into `out` (decoded)
    /// when `validate` (paired surrogates required), else only checked as
    /// serde_json checks a string it ignores.
    fn escaped_rest(&mut self, out: &mut String, validate: bool) -> Result<(), JsonError> {
        let bytes = self.text.as_bytes();
        loop {
            let start = self.pos;
            let mut i = start;
            let end = loop {
                match bytes.get(i) {
                    Some(&b @ (b'"' | b'\\')) => break b,
                    Some(&b) if b < 0x20 => return Err(self.error(i, CONTROL)),
                    Some(_) => i += 1,
                    None => return Err(self.error(i, "EOF while reading a string")),
                }
            };
            if validate {
                out.push_str(self.slice(start, i)?);
            }
            self.pos = i + 1;
            if end == b'"' {
                return Ok(());
            }
            let Some(&escape) = bytes.get(self.pos) else {
                return Err(self.here("EOF while reading a string"));
            };
            self.pos += 1;
            let c = match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let n = self.hex4()?;
                    if !validate {
                        continue;
                    }
                    self.unicode(n)?
                }
                _ => return Err(self.error(self.pos - 1, "invalid escape")),
            };
            if validate {
                out.push(c);
            }
        }
    }

    /// The character of a `\u` escape whose four hex digits gave `n`: a
    /// leading surrogate must be followed by a `\u` escape of a trailing one.
    fn unicode(&mut self, n: u16) -> Result<char, JsonError> {
        if (0xDC00..=0xDFFF).contains(&n) {
            return Err(self.error(self.pos - 1, "lone trailing surrogate in hex escape"));
        }
        if !(0xD800..=0xDBFF).contains(&n) {
            return char::from_u32(u32::from(n)).ok_or_else(|| self.here("invalid escape"));
        }
        let bytes = self.text.as_bytes();
        if bytes.get(self.pos) != Some(&b'\\') || bytes.get(self.pos + 1) != Some(&b'u') {
            return Err(self.here("unexpected end of hex escape"));
        }
        self.pos += 2;
        let low = self.hex4()?;
        if !(0xDC00..=0xDFFF).contains(&low) {
            return Err(self.error(self.pos - 1, "lone leading surrogate in hex escape"));
        }
        let c = ((u32::from(n) - 0xD800) << 10 | (u32::from(low) - 0xDC00)) + 0x1_0000;
        char::from_u32(c).ok_or_else(|| self.here("invalid escape"))
    }

    fn hex4(&mut self) -> Result<u16, JsonError> {
        let mut n = 0u16;
        for _ in 0..4 {
            let Some(&b) = self.text.as_bytes().get(self.pos) else {
                return Err(self.here("EOF while reading a string"));
            };
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(self.here("invalid escape")),
            };
            n = n << 4 | u16::from(digit);
            self.pos += 1;
        }
        Ok(n)
    }

    /// The extent of a number at `pos` (after `peek`), checked against the
    /// JSON grammar: whether it has a fraction or exponent, and the value of
    /// its integer digits (`None` when they overflow a u64).
    fn scan_number(&mut self) -> Result<(bool, Option<u64>), JsonError> {
        let bytes = self.text.as_bytes();
        if bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let mut significand = Some(0u64);
        match bytes.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    return Err(self.here("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                while let Some(&b) = bytes.get(self.pos).filter(|b| b.is_ascii_digit()) {
                    significand = significand
                        .and_then(|s| s.checked_mul(10))
                        .and_then(|s| s.checked_add(u64::from(b - b'0')));
                    self.pos += 1;
                }
            }
            Some(_) => return Err(self.here("invalid number")),
            None => return Err(self.here("EOF while reading a value")),
        }
        let mut float = false;
        if bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            self.digits()?;
            float = true;
        }
        if matches!(bytes.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.digits()?;
            float = true;
        }
        Ok((float, significand))
    }

    /// One digit or more.
    fn digits(&mut self) -> Result<(), JsonError> {
        let bytes = self.text.as_bytes();
        match bytes.get(self.pos) {
            Some(b) if b.is_ascii_digit() => {}
            Some(_) => return Err(self.here("invalid number")),
            None => return Err(self.here("EOF while reading a value")),
        }
        while bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        Ok(())
    }

    /// The usual number at `pos`, a non-negative integer of at most 18
    /// digits without fraction or exponent, read in one loop; `None`, with
    /// nothing consumed, for anything else.
    #[inline(always)]
    pub(crate) fn short_unsigned(&mut self) -> Option<u64> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut end = start;
        let mut n = 0u64;
        while let Some(&b) = bytes.get(end).filter(|b| b.is_ascii_digit()) {
            n = n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
            end += 1;
        }
        let digits = end - start;
        let usual = (1..=18).contains(&digits)
            && (bytes[start] != b'0' || digits == 1)
            && !matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
        if usual {
            self.pos = end;
        }
        usual.then_some(n)
    }

    /// A number at `pos` (after `peek` found `-` or a digit).
    #[inline]
    pub(crate) fn number(&mut self) -> Result<Number, JsonError> {
        if let Some(n) = self.short_unsigned() {
            return Ok(Number::U64(n));
        }
        let start = self.pos;
        let negative = self.text.as_bytes().get(start) == Some(&b'-');
        let (float, significand) = self.scan_number()?;
        match significand {
            Some(n) if !float => Ok(if !negative {
                Number::U64(n)
            } else if n == 0 {
                Number::F64(-0.0)
            } else if n <= 1 << 63 {
                Number::I64((n as i64).wrapping_neg())
            } else {
                Number::F64(-(n as f64))
            }),
            _ => {
                let text = self.slice(start, self.pos)?;
                match text.parse::<f64>() {
                    Ok(d) if d.is_finite() => Ok(Number::F64(d)),
                    _ => Err(self.error(start, "number out of range")),
                }
            }
        }
    }

    /// `null`, `true` or `false`, after its first byte was seen.
    fn literal(&mut self, word: &str) -> Result<(), JsonError> {
        for &expected in word.as_bytes() {
            match self.text.as_bytes().get(self.pos) {
                Some(&b) if b == expected => self.pos += 1,
                Some(_) => return Err(self.here("expected ident")),
                None => return Err(self.here("EOF while reading a value")),
            }
        }
        Ok(())
    }

    /// `null` at the current byte, or an error naming what was expected.
    pub(crate) fn null(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            Some(b'n') => self.literal("null"),
            Some(_) => Err(self.here("expected null")),
            None => Err(self.here("EOF while reading a value")),
        }
    }

    /// A value, as `Value`'s `Deserialize` reads it.
    pub(crate) fn value(&mut self) -> Result<Value, JsonError> {
        self.value_checking(true)
    }

    /// A value; `check_duplicates` off reads maps as serde's buffered
    /// content does, where a repeated key is not an error.
    pub(crate) fn value_checking(&mut self, check_duplicates: bool) -> Result<Value, JsonError> {
        match self.peek() {
            Some(b'"') => self.string_value(),
            Some(b'-' | b'0'..=b'9') => Ok(self.number()?.to_value()),
            Some(b'[') => self.list(check_duplicates),
            Some(b'{') => self.map(check_duplicates),
            Some(b'n') => self.literal("null").map(|()| Value::Null),
            Some(b't') => self.literal("true").map(|()| Value::Bool(true)),
            Some(b'f') => self.literal("false").map(|()| Value::Bool(false)),
            Some(_) => Err(self.here("expected value")),
            None => Err(self.here("EOF while reading a value")),
        }
    }

    /// A value, as `value` reads it, into `slot`: a list `slot` alone
    /// holds is emptied and the list read into its memory (a snapshot read
    /// into an actor that held one before, see `Actor::reload_json`).
    pub(crate) fn value_into(&mut self, slot: &mut Value) -> Result<(), JsonError> {
        if self.peek() == Some(b'[')
            && let Value::List(list) = slot
            && let Some(list) = Arc::get_mut(list)
        {
            list.clear();
            return self.list_into(list, true);
        }
        *slot = self.value()?;
        Ok(())
    }

    fn list(&mut self, check_duplicates: bool) -> Result<Value, JsonError> {
        let mut list = List::new();
        self.list_into(&mut list, check_duplicates)?;
        Ok(Value::List(Arc::new(list)))
    }

    /// Reads a list's items into `list`, which is empty.
    fn list_into(&mut self, list: &mut List, check_duplicates: bool) -> Result<(), JsonError> {
        self.open()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        let bytes = self.text.as_bytes();
        loop {
            // A run of strings without escapes in compact JSON (a list of
            // ids, the usual list) goes to the list as it stands in the
            // text: the items' ends are noted as they are found, and a
            // packed list copies the run once (a list of values takes its
            // items one by one). Any other item goes through
            // `value_checking`.
            let mut pos = self.pos;
            // Whether the run ended right after an item, not before one.
            let mut after_item = false;
            // Offsets into the text are kept as `u32`s.
            if bytes.get(pos) == Some(&b'"') && u32::try_from(bytes.len()).is_ok() {
                let mut ends = [0u32; RUN];
                loop {
                    let (count, end, stop) = compact_strings(bytes, pos, &mut ends);
                    // Both ends sit next to a quote, so they are character
                    // boundaries.
                    list.extend_joined(&self.text[pos..end], &ends[..count]);
                    match stop {
                        RunStop::Full => pos = end + 1,
                        RunStop::AfterItem => {
                            pos = end;
                            after_item = true;
                            break;
                        }
                        // An escape, a control character or the end of the
                        // text: `value_checking` reads the item again, or
                        // says what is wrong.
                        RunStop::BeforeItem => {
                            if count > 0 {
                                pos = end + 1;
                            }
                            break;
                        }
                    }
                }
            }
            self.pos = pos;
            if !after_item {
                let item = self.value_checking(check_duplicates)?;
                list.push(item);
            }
            let next = match bytes.get(self.pos) {
                Some(&b) if b > b' ' => Some(b),
                _ => self.peek(),
            };
            match next {
                Some(b',') => {
                    self.pos += 1;
                    if self.peek() == Some(b']') {
                        return Err(self.here("trailing comma"));
                    }
                }
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(_) => return Err(self.here("expected `,` or `]`")),
                None => return Err(self.unclosed(b']')),
            }
        }
    }

    fn map(&mut self, check_duplicates: bool) -> Result<Value, JsonError> {
        self.open()?;
        let mut map = Map::default();
        let mut first = true;
        while self.has_next(b'}', &mut first)? {
            let at = self.pos;
            let key = self.key()?;
            let value = self.value_checking(check_duplicates)?;
            match map.entry(Arc::from(&*key)) {
                indexmap::map::Entry::Occupied(_) if check_duplicates => {
                    return Err(self.error(at, format!("duplicate key `{key}`")));
                }
                indexmap::map::Entry::Occupied(mut entry) => {
                    entry.insert(value);
                }
                indexmap::map::Entry::Vacant(entry) => {
                    entry.insert(value);
                }
            }
        }
        Ok(Value::Map(Arc::new(map)))
    }

    /// Skips a value as serde_json skips one it ignores (an unknown field):
    /// the grammar is checked, but neither the range of numbers, the pairing
    /// of surrogates, repeated keys nor the depth, which has no limit here.
    /// The open lists and maps are kept on a stack of their own, not the
    /// call stack.
    pub(crate) fn ignore(&mut self) -> Result<(), JsonError> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    self.ignore_string()?;
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.scan_number()?;
                }
                Some(b'n') => self.literal("null")?,
                Some(b't') => self.literal("true")?,
                Some(b'f') => self.literal("false")?,
                Some(b @ (b'[' | b'{')) => {
                    self.pos += 1;
                    let close = if b == b'[' { b']' } else { b'}' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                    } else {
                        open.push(close);
                        if close == b'}' {
                            self.ignore_key()?;
                        }
                        continue;
                    }
                }
                Some(_) => return Err(self.here("expected value")),
                None => return Err(self.here("EOF while reading a value")),
            }
            // A value ended: close what it ends, or go on to the next item.
            loop {
                let Some(&close) = open.last() else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b) if b == close => {
                        self.pos += 1;
                        open.pop();
                    }
                    Some(b',') => {
                        self.pos += 1;
                        match self.peek() {
                            Some(b) if b == close => return Err(self.here("trailing comma")),
                            _ => {}
                        }
                        if close == b'}' {
                            self.ignore_key()?;
                        }
                        break;
                    }
                    Some(_) => {
                        return Err(self.here(format!("expected `,` or `{}`", close as char)));
                    }
                    None => return Err(self.here("EOF while reading a value")),
                }
            }
        }
    }

    fn ignore_key(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            Some(b'"') => {}
            Some(_) => return Err(self.here("key must be a string")),
            None => return Err(self.here("EOF while reading a map")),
        }
        self.pos += 1;
        self.ignore_string()?;
        self.expect(b':', "`:`")
    }

    /// The rest of a string after its opening quote, checked only.
    fn ignore_string(&mut self) -> Result<(), JsonError> {
        self.escaped_rest(&mut String::new(), false)
    }
}

/// Why `compact_strings` stopped.
enum RunStop {
    /// It read `RUN` items and another follows.
    Full,
    /// No `,"` follows its last item.
    AfterItem,
    /// The item after its last is not a plain string.
    BeforeItem,
}

/// Reads up to `RUN` plain strings of compact JSON (`"a","b"`) from the
/// opening quote at `open`: where each closing quote is, counted from
/// `open`, goes to `ends`. Returns how many were read, where the last ends
/// (after its closing quote; `open` when none was read) and why it
/// stopped. Kept out of line, so that its loop has the registers to
/// itself. The text must be shorter than 4 GiB.
///
/// An id is short: its closing quote and the `,"` after it are usually
/// among the eleven bytes after its opening quote, which one bounds check
/// reads; any other item goes by `closing_quote` (`compact_by_item`).
#[inline(never)]
fn compact_strings(bytes: &[u8], open: usize, ends: &mut [u32; RUN]) -> (usize, usize, RunStop) {
    let mut at = open;
    let mut end = open;
    let mut count = 0;
    while count < RUN {
        let Some(ahead) = bytes.get(at + 1..).and_then(<[u8]>::first_chunk::<11>) else {
            break;
        };
        let word: [u8; 8] = std::array::from_fn(|i| ahead[i]);
        let marked = stop_mask(u64::from_le_bytes(word));
        if marked == 0 {
            break;
        }
        let close = (marked.trailing_zeros() / 8) as usize;
        if ahead[close] != b'"' {
            return (count, end, RunStop::BeforeItem);
        }
        ends[count] = (at + 1 + close - open) as u32;
        count += 1;
        end = at + 2 + close;
        if ahead[close + 1] != b',' || ahead[close + 2] != b'"' {
            return (count, end, RunStop::AfterItem);
        }
        at = end + 1;
    }
    compact_by_item(bytes, open, at, ends, (count, end))
}

/// `compact_strings` from the item whose opening quote is at `at`, after
/// the `done` items (their count, and where the last ends) read already:
/// one item at a time, whatever its length. Out of line, so that the loop
/// of short items keeps its values in registers.
#[inline(never)]
fn compact_by_item(
    bytes: &[u8],
    open: usize,
    mut at: usize,
    ends: &mut [u32; RUN],
    done: (usize, usize),
) -> (usize, usize, RunStop) {
    let (mut count, mut end) = done;
    while count < RUN {
        let Some(close) = closing_quote(bytes, at) else {
            return (count, end, RunStop::BeforeItem);
        };
        ends[count] = (close - open) as u32;
        count += 1;
        end = close + 1;
        if bytes.get(end..end + 2) != Some(b",\"") {
            return (count, end, RunStop::AfterItem);
        }
        at = end + 1;
    }
    (RUN, end, RunStop::Full)
}

/// The closing quote of the string whose opening quote is at `open`, when
/// it has no escapes (nor control characters) and ends.
#[inline(always)]
fn closing_quote(bytes: &[u8], open: usize) -> Option<usize> {
    // An id is short: its closing quote is usually among the eight bytes
    // after the opening one, which one bounds check reads.
    let stop = match bytes.get(open + 1..open + 9).and_then(<[u8]>::first_chunk) {
        Some(word) => match stop_mask(u64::from_le_bytes(*word)) {
            0 => stop_at(bytes, open + 9)?,
            marked => open + 1 + (marked.trailing_zeros() / 8) as usize,
        },
        None => stop_at(bytes, open + 1)?,
    };
    (bytes.get(stop) == Some(&b'"')).then_some(stop)
}

/// Whether `name` is written in JSON as it is, without escapes.
pub(crate) fn plain(name: &str) -> bool {
    !name.bytes().any(|b| STOP[b as usize])
}

/// Where the plain run of a string from `at` ends (the first byte `STOP`
/// marks), eight bytes at a time while eight are left; `None` at the end of
/// the text.
#[inline(always)]
fn stop_at(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let stops = stop_mask(u64::from_le_bytes(*chunk));
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    Some(at + rest.iter().position(|&b| STOP[b as usize])?)
}

/// The high bit of each byte of `word` (eight bytes of text, the first in
/// the low bits) that `STOP` marks: `"`, `\` or below 0x20. Bits above the
/// lowest may be wrong (a borrow runs on from a marked byte), the lowest is
/// exact, and no bit is set when no byte is marked.
#[inline(always)]
fn stop_mask(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let zero_byte = |w: u64| w.wrapping_sub(ONES) & !w;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (quote | backslash | control) & HIGH
}

/// Builds `text` as a `SmolStr` with `$make`. `SmolStr::new_inline` copies
/// a short text in a loop that compiles to a call to `memcpy` (more than the
/// copy itself for an id of a few bytes); here each length has its own arm,
/// in which the compiler knows the length and copies with a few moves.
macro_rules! by_length {
    ($text:expr, $make:expr) => {
        by_length!($text, $make, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23)
    };
    ($text:expr, $make:expr, $($n:literal)*) => {{
        const _: () = assert!(SmolStr::INLINE_CAP == 23);
        let text: &str = $text;
        match text.len() {
            $($n => $make(SmolStr::new_inline(&text[..$n])),)*
            _ => $make(SmolStr::new(text)),
        }
    }};
}

/// `text` as a `SmolStr`, without a call to `memcpy` when it is short.
#[inline(always)]
pub(crate) fn smol(text: &str) -> SmolStr {
    by_length!(text, |s| s)
}

/// The bytes that end the plain run of a string: its closing quote, an
/// escape, or a control character (an error).
static STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

const CONTROL: &str = "control character (\\u0000-\\u001F) found while parsing a string";

/// `value` as compact JSON text: what `serde_json::to_string` gives, and
/// it cannot fail.
pub(crate) fn to_text(value: &Value) -> String {
    let mut out = String::new();
    Writer::new(&mut out).value(value);
    out
}

/// JSON text appended to a `String`: byte for byte what `serde_json`
/// writes. The writer appends bytes to the string's buffer, taken out of
/// the `String` while it writes, rather than `char`s or `&str`s through
/// `String`'s methods: a short string is put together on the stack and
/// copied whole, which `push_str` (a call to `memcpy` per string) and
/// `push` (a check per character) cost more than. The bytes go back into
/// the `String` when the writer is dropped, after one check that they are
/// UTF-8 (a few hundred instructions for a snapshot), which keeps the codec
/// free of unsafe code.
pub(crate) struct Writer<'s> {
    out: &'s mut String,
    /// The `String`'s bytes, appended to. UTF-8 whenever a method returns,
    /// as every method appends only ASCII bytes and whole `str`s, or pieces
    /// of a `str` cut next to an ASCII byte, which are whole characters.
    bytes: Vec<u8>,
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        *self.out = match String::from_utf8(bytes) {
            Ok(text) => text,
            // Not reached while the invariant above holds; a debug build
            // (the tests) stops on it, a release build keeps the text.
            Err(error) => {
                debug_assert!(false, "the JSON writer broke a character: {error}");
                String::from_utf8_lossy(error.as_bytes()).into_owned()
            }
        };
    }
}

impl<'s> Writer<'s> {
    /// A writer that appends to `out`.
    pub(crate) fn new(out: &'s mut String) -> Writer<'s> {
        let bytes = std::mem::take(out).into_bytes();
        Writer { out, bytes }
    }

    /// Appends `text` as it is (punctuation and keys the caller knows).
    #[inline(always)]
    pub(crate) fn raw(&mut self, text: &str) {
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// Appends one ASCII byte. Callers pass constants, digits and hex
    /// digits only; the check is there to keep the `bytes` invariant were
    /// one to pass anything else.
    #[inline(always)]
    fn ascii(&mut self, byte: u8) {
        debug_assert!(byte.is_ascii());
        if byte.is_ascii() {
            self.bytes.push(byte);
        }
    }

    /// Appends `value` as compact JSON.
    pub(crate) fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.raw("null"),
            Value::Bool(true) => self.raw("true"),
            Value::Bool(false) => self.raw("false"),
            Value::Int(n) => self.i64(*n),
            Value::Double(d) => self.f64(*d),
            Value::String(s) => self.str(s),
            Value::List(items) => self.list(items),
            Value::Map(map) => {
                self.ascii(b'{');
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.ascii(b',');
                    }
                    self.str(key);
                    self.ascii(b':');
                    self.value(item);
                }
                self.ascii(b'}');
            }
        }
    }

    /// A list: a packed one as its text, in one copy; else each item with
    /// the byte before it, `[` or `,`, so that a short string is one copy.
    fn list(&mut self, list: &List) {
        let items = match list.items() {
            Items::Packed(joined) => {
                self.ascii(b'[');
                self.raw(joined);
                return self.ascii(b']');
            }
            Items::Values(items) => items,
        };
        let mut before = b'[';
        for item in items {
            match item {
                Value::String(s) => {
                    let s = s.as_str();
                    if s.len() <= SHORT {
                        self.short_str::<1>(before, s);
                    } else {
                        self.ascii(before);
                        self.long_str(s);
                    }
                }
                _ => {
                    self.ascii(before);
                    self.value(item);
                }
            }
            before = b',';
        }
        if items.is_empty() {
            self.ascii(b'[');
        }
        self.ascii(b']');
    }

    /// A double as serde_json writes it: the shortest text that reads back
    /// to it (through the `zmij` crate serde_json uses), `null` when it is
    /// not finite.
    pub(crate) fn f64(&mut self, d: f64) {
        if d.is_finite() {
            self.raw(zmij::Buffer::new().format_finite(d));
        } else {
            self.raw("null");
        }
    }

    pub(crate) fn i64(&mut self, n: i64) {
        if n < 0 {
            self.ascii(b'-');
        }
        self.u64(n.unsigned_abs());
    }

    pub(crate) fn u64(&mut self, mut n: u64) {
        if n < 10 {
            return self.ascii(b'0' + n as u8);
        }
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &digit in &digits[at..] {
            self.ascii(digit);
        }
    }

    /// A string as serde_json writes it: `"` and `\` and the control
    /// characters below U+0020 escaped (`\b \f \n \r \t`, else `\u00XX` in
    /// lower-case hex), everything else as it is.
    #[inline]
    pub(crate) fn str(&mut self, s: &str) {
        if s.len() <= SHORT {
            self.short_str::<0>(b'"', s);
        } else {
            self.long_str(s);
        }
    }

    /// A string of at most `SHORT` bytes, after the ASCII byte `before` when
    /// `LEAD` is 1. It is put together on the stack and appended whole: a
    /// copy of constant size is a few moves, where a push per byte or a copy
    /// of the exact length (a call to `memcpy`) costs more. The bytes past
    /// the string are cut off again. The buffer holds ASCII bytes and the
    /// whole of `s`, then zeros: UTF-8 at every point.
    #[inline(always)]
    fn short_str<const LEAD: usize>(&mut self, before: u8, s: &str) {
        let bytes = s.as_bytes();
        let mut buffer = [0u8; SHORT + 3];
        if LEAD == 1 {
            buffer[0] = if before.is_ascii() { before } else { b',' };
        }
        buffer[LEAD] = b'"';
        let mut escapes = 0;
        for (slot, &b) in buffer[LEAD + 1..].iter_mut().zip(bytes) {
            escapes |= ESCAPE[b as usize];
            *slot = b;
        }
        if escapes != 0 {
            if LEAD == 1 {
                self.ascii(before);
            }
            return self.escaped(bytes);
        }
        if let Some(last) = buffer.get_mut(LEAD + 1 + bytes.len()) {
            *last = b'"';
        }
        let end = self.bytes.len() + LEAD + bytes.len() + 2;
        self.bytes.extend_from_slice(&buffer);
        self.bytes.truncate(end);
    }

    /// A string longer than `SHORT` bytes.
    #[inline(never)]
    fn long_str(&mut self, s: &str) {
        if s.bytes().any(|b| ESCAPE[b as usize] != 0) {
            return self.escaped(s.as_bytes());
        }
        self.ascii(b'"');
        self.raw(s);
        self.ascii(b'"');
    }

    /// A string with something to escape. `bytes` are a `str`'s, cut at the
    /// ASCII bytes escaped, so each piece is whole characters.
    #[inline(never)]
    fn escaped(&mut self, bytes: &[u8]) {
        self.ascii(b'"');
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escape = ESCAPE[b as usize];
            if escape == 0 {
                continue;
            }
            self.bytes.extend_from_slice(&bytes[start..i]);
            self.ascii(b'\\');
            if escape == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.raw("u00");
                self.ascii(HEX[(b >> 4) as usize]);
                self.ascii(HEX[(b & 0xF) as usize]);
            } else {
                self.ascii(escape);
            }
            start = i + 1;
        }
        self.bytes.extend_from_slice(&bytes[start..]);
        self.ascii(b'"');
    }
}

/// What a byte becomes inside a JSON string, as serde_json escapes it: 0 for
/// itself, `u` for `\u00XX`, else the letter after the backslash.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// The longest string `short_str` assembles on the stack: with the byte
/// before it and its quotes, 32 bytes.
const SHORT: usize = 29;

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Value, JsonError> {
        let mut reader = Reader::new(text);
        let value = reader.value()?;
        reader.end()?;
        Ok(value)
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let value = Value::map([
            (
                "s",
                Value::from("a\"b\\c\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f}é😀/"),
            ),
            (
                "n",
                Value::list(vec![
                    Value::Int(0),
                    Value::Int(-7),
                    Value::Int(i64::MIN),
                    Value::Int(i64::MAX),
                    Value::Double(0.5),
                    Value::Double(-0.0),
                    Value::Double(1e300),
                    Value::Double(1e-7),
                    Value::Double(123456789.0),
                    Value::Double(f64::NAN),
                    Value::Double(f64::INFINITY),
                ]),
            ),
            (
                "m",
                Value::map([("", Value::Null), ("t", Value::Bool(true))]),
            ),
            ("e", Value::list(Vec::new())),
            ("f", Value::Bool(false)),
        ]);
        assert_eq!(to_text(&value), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            r#" { "a" : [ 1 , -2 , 3.5e2 , -0 , 0.0 , 1E-2 ] , "b" : { } , "c" : [ ] } "#,
            r#""\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t""#,
            "18446744073709551615",
            "9223372036854775807",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "[null,true,false]",
        ];
        for text in texts {
            let ours = read(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(to_text(&ours), to_text(&theirs), "{text}");
        }
        assert!(matches!(read("-0"), Ok(Value::Double(d)) if d == 0.0 && d.is_sign_negative()));
        assert!(matches!(read("9223372036854775808"), Ok(Value::Double(_))));
    }

    #[test]
    fn reads_lists_of_every_shape() {
        // Runs of plain strings take a path of their own; every way out of
        // a run must land where the general reader would.
        let texts = [
            r#"["a","b","c"]"#,
            r#"["a","b\n","c",""]"#,
            r#"[ "a" , "b" ]"#,
            "[\n  \"a\",\n  \"b\"\n]",
            r#"["a",1,"b",[],["c","d"],{"k":"v"},null]"#,
            r#"["\u00e9","é😀","a\"b"]"#,
            r#"[[],[[]],"x"]"#,
        ];
        for text in texts {
            let ours = read(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(to_text(&ours), to_text(&theirs), "{text}");
        }
        for text in [
            r#"["a",]"#,
            r#"["a" "b"]"#,
            r#"["a","#,
            r#"["a""#,
            r#"["a"#,
            r#"["a",,"b"]"#,
            "[\"a\u{1}\"]",
            r#"["a"]]"#,
            r#"["a",]]"#,
        ] {
            assert!(read(text).is_err(), "{text:?} should not read");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn rejects_what_serde_json_rejects() {
        let texts = [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "01",
            "-",
            "1.",
            "1e",
            "1e+",
            ".5",
            "+1",
            "nul",
            "tru",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"a\u{1}\"",
            "1e400",
            "-1e400",
            "[",
            "{",
            "\"abc",
            "{\"a\":1,\"a\":2}",
            "[1]x",
            "NaN",
            "Infinity",
        ];
        for text in texts {
            assert!(read(text).is_err(), "{text:?} should not read");
            assert!(
                serde_json::from_str::<Value>(text).is_err(),
                "{text:?} is rejected by serde_json too"
            );
        }
    }

    #[test]
    fn stops_at_the_depth_limit() {
        // The snapshot's object and its context map are two levels already.
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let text = nested(125);
        let mut reader = Reader::at(&text, 0, 2);
        assert!(reader.value().is_ok());
        let text = nested(126);
        let mut reader = Reader::at(&text, 0, 2);
        let error = reader.value().unwrap_err();
        assert_eq!(error.message, "recursion limit exceeded");
        assert_eq!(error.offset, 125);
        // Far deeper input fails the same way instead of overflowing the stack.
        assert!(read(&nested(100_000)).is_err());
        // Ignored values have no depth limit, as in serde_json.
        let mut reader = Reader::new(&text);
        assert!(reader.ignore().is_ok());
        assert_eq!(reader.pos(), text.len());
    }

    #[test]
    fn ignores_as_serde_json_ignores() {
        for text in [
            r#"{"a":[1e999,"\ud800",{"k":1,"k":2}],"b":{}}"#,
            "[]",
            "-0.5e-3",
        ] {
            let mut reader = Reader::new(text);
            assert_eq!(reader.ignore(), Ok(()), "{text}");
            assert_eq!(reader.end(), Ok(()));
        }
        for text in [
            "[1,]", "{\"a\"}", "{\"a\":}", "[01]", "\"\\x\"", "{,}", "[1 2]",
        ] {
            assert!(Reader::new(text).ignore().is_err(), "{text}");
        }
    }

    proptest::proptest! {
        /// Lists of strings, most of them plain, long enough to take more
        /// than one run and with items across word boundaries, read as
        /// serde_json reads them, compact or spaced, and written back alike.
        #[test]
        fn reads_lists_of_strings_as_serde_json_does(
            items in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => "[a-z0-9]{0,20}",
                    1 => "[a-c\"\\\\\n\u{1}é ]{0,10}",
                ],
                0..150,
            ),
        ) {
            let json = serde_json::Value::from(items);
            for text in [json.to_string(), serde_json::to_string_pretty(&json).unwrap()] {
                let read = read(&text).unwrap();
                proptest::prop_assert_eq!(&read, &Value::from(&json));
                proptest::prop_assert_eq!(to_text(&read), json.to_string());
            }
        }
    }

    #[test]
    fn finds_the_end_of_a_plain_run_eight_bytes_at_a_time_as_byte_by_byte() {
        // Every stopping byte at every place in the word, after bytes that
        // sit next to it in value (0x1f/0x20, 0x21/0x22/0x23, 0x5b/0x5c/0x5d,
        // 0x7f/0x80/0xff), which a borrow or a missing one would confuse.
        let fillers = [b'a', b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff, b'0'];
        let stops = [b'"', b'\\', 0x00, 0x01, 0x1f, b'\n'];
        for len in 0..20 {
            for &filler in &fillers {
                for &stop in &stops {
                    for at in 0..len {
                        let mut bytes = vec![filler; len];
                        bytes[at] = stop;
                        // A second stop after the first must not hide it.
                        if at + 1 < len {
                            bytes[at + 1] = b'"';
                        }
                        for start in 0..=len {
                            let expected = bytes[start..]
                                .iter()
                                .position(|&b| STOP[b as usize])
                                .map(|i| start + i);
                            assert_eq!(stop_at(&bytes, start), expected, "{bytes:?} from {start}");
                        }
                    }
                }
                let bytes = vec![filler; len];
                assert_eq!(stop_at(&bytes, 0), None, "{bytes:?}");
            }
        }
    }

    #[test]
    fn reads_runs_of_short_strings_as_item_by_item() {
        // Texts that start with a quote, of items of every length up to
        // twenty bytes, joined by `","` or by something else, with an
        // escape, a control character, a UTF-8 byte, a quote or a comma put
        // at one place, and cut at every length: the reading of short items
        // must give what reading every item by `closing_quote` gives.
        let pieces: [&[u8]; 10] = [
            b"a",
            b"c1",
            b"c12",
            b"order-17",
            b"\\n",
            b"\x01",
            b"\xc3\xa9",
            b"\"",
            b",",
            b"]",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: usize| {
            // xorshift64*: a fixed seed, so the texts are the same each run.
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % below
        };
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for _ in 0..1500 {
            let mut text = b"\"".to_vec();
            for item in 0..next(12) {
                if item > 0 {
                    let separator: &[u8] = if next(8) == 0 { b"\", \"" } else { b"\",\"" };
                    text.extend_from_slice(separator);
                }
                let len = next(21);
                text.extend((0..len).map(|i| b'a' + (i % 26) as u8));
            }
            text.push(b'"');
            if next(3) == 0 {
                let at = next(text.len());
                text.splice(at..at, pieces[next(pieces.len())].iter().copied());
            }
            texts.push(text);
        }
        // A run longer than `RUN` items.
        let long = format!("\"{}\"]", vec!["ab"; RUN + 5].join("\",\""));
        texts.push(long.into_bytes());
        for text in &texts {
            for cut in 1..=text.len() {
                let bytes = &text[..cut];
                let (mut short, mut each) = ([0u32; RUN], [0u32; RUN]);
                let (count, end, stop) = compact_strings(bytes, 0, &mut short);
                let by_item = compact_by_item(bytes, 0, 0, &mut each, (0, 0));
                assert_eq!(
                    (count, end, std::mem::discriminant(&stop)),
                    (by_item.0, by_item.1, std::mem::discriminant(&by_item.2)),
                    "{:?}",
                    String::from_utf8_lossy(bytes)
                );
                assert_eq!(short[..count], each[..count]);
            }
        }
    }

    #[test]
    fn builds_short_strings_of_every_length() {
        let text = "é".repeat(20) + "abcdefghijklmnopqrstuvwxyz0123456789";
        for start in 0..text.len() {
            for end in start..=text.len() {
                if let Some(piece) = text.get(start..end) {
                    assert_eq!(smol(piece), SmolStr::new(piece));
                }
            }
        }
    }

    #[test]
    fn recognises_expected_keys_only_whole() {
        let mut reader = Reader::new(r#""format":1"#);
        assert!(!reader.plain_key("form"));
        assert!(!reader.plain_key("formats"));
        assert!(reader.plain_key("format"));
        assert_eq!(reader.pos(), 8);
        assert!(!Reader::new(r#""\u0066":1"#).plain_key("f"));
        // Names with a quote or a backslash are not looked for this way:
        // `"a"b"` is not one string.
        assert!(plain("format") && plain("é"));
        assert!(!plain("a\"b") && !plain("a\\b") && !plain("a\nb"));
    }

    #[test]
    fn finds_lines_and_columns() {
        let text = "{\n  \"a\": x\n}";
        let error = read(text).unwrap_err();
        assert_eq!(error.message, "expected value");
        assert_eq!(line_col(text, error.offset), (2, 8));
        assert_eq!(line_col("ab", 0), (1, 1));
        assert_eq!(line_col("ab", 2), (1, 3));
        assert_eq!(line_col("a\n", 2), (2, 1));
    }
}
