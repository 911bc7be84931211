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

use super::value::{Map, Value};

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
    #[inline]
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
        Some(Value::from(text))
    }

    /// The string whose opening quote is at `at`, when it has no escapes
    /// and ends: its text, and the position after its closing quote.
    #[inline(always)]
    fn plain_string_at(&self, at: usize) -> Option<(&'a str, usize)> {
        let bytes = self.text.as_bytes();
        let start = at + 1;
        let rest = bytes.get(start..)?;
        let end = start + rest.iter().position(|&b| STOP[b as usize])?;
        if bytes.get(end) != Some(&b'"') {
            return None;
        }
        Some((self.text.get(start..end)?, end + 1))
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

    /// A number at `pos` (after `peek` found `-` or a digit).
    #[inline]
    pub(crate) fn number(&mut self) -> Result<Number, JsonError> {
        let start = self.pos;
        // The usual number, a short non-negative integer, in one loop.
        let bytes = self.text.as_bytes();
        let mut end = start;
        let mut n = 0u64;
        while let Some(&b) = bytes.get(end).filter(|b| b.is_ascii_digit()) {
            n = n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
            end += 1;
        }
        let digits = end - start;
        if (1..=18).contains(&digits)
            && (bytes[start] != b'0' || digits == 1)
            && !matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
        {
            self.pos = end;
            return Ok(Number::U64(n));
        }
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

    fn list(&mut self, check_duplicates: bool) -> Result<Value, JsonError> {
        self.open()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::list(Vec::new()));
        }
        // JSON gives no length up front; 16 spares a list of a few dozen
        // items most of the copies growing from 4 would take, as in
        // `Value`'s `Deserialize`.
        let mut items = Vec::with_capacity(16);
        let bytes = self.text.as_bytes();
        loop {
            // A run of strings without escapes in compact JSON (a list of
            // ids, the usual list) is read in a tight loop on a local
            // position; any other item goes through `value_checking`.
            let mut pos = self.pos;
            // Whether the run ended right after an item, not before one.
            let mut after_item = false;
            while bytes.get(pos) == Some(&b'"') {
                let Some((item, next)) = self.plain_string_at(pos) else {
                    break;
                };
                push_item(&mut items, Value::from(item));
                pos = next;
                if bytes.get(pos) == Some(&b',') && bytes.get(pos + 1) == Some(&b'"') {
                    pos += 1;
                } else {
                    after_item = true;
                    break;
                }
            }
            self.pos = pos;
            if !after_item {
                let item = self.value_checking(check_duplicates)?;
                push_item(&mut items, item);
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
                    return Ok(Value::list(items));
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

/// Whether `name` is written in JSON as it is, without escapes.
pub(crate) fn plain(name: &str) -> bool {
    !name.bytes().any(|b| STOP[b as usize])
}

/// Appends a list item, growing the list four times over rather than twice
/// when it is full: a list of a few dozen ids then takes one copy instead of
/// two.
#[inline(always)]
fn push_item(items: &mut Vec<Value>, item: Value) {
    if items.len() == items.capacity() {
        items.reserve(items.len() * 3);
    }
    items.push(item);
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

/// Appends `value` as compact JSON, byte for byte what `serde_json`
/// writes for it. The writers append bytes (always UTF-8: ASCII and whole
/// `str`s), which costs less per byte than `String::push`.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(n) => write_i64(out, *n),
        Value::Double(d) => write_f64(out, *d),
        Value::String(s) => write_str(out, s),
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // Strings, the usual items, without the recursive call.
                match item {
                    Value::String(s) => write_str(out, s),
                    _ => write_value(out, item),
                }
            }
            out.push(b']');
        }
        Value::Map(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// The text the writers appended, as a `String`. It is always UTF-8; were
/// it not, the offending bytes would be replaced rather than panic.
pub(crate) fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// A double as serde_json writes it: the shortest text that reads back to
/// it (through the `zmij` crate serde_json uses), `null` when it is not
/// finite.
pub(crate) fn write_f64(out: &mut Vec<u8>, d: f64) {
    if d.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(d).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

pub(crate) fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

pub(crate) fn write_u64(out: &mut Vec<u8>, mut n: u64) {
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
    push_bytes(out, &digits[at..]);
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

/// The longest string `write_str` assembles on the stack.
const SHORT: usize = 30;

/// A string as serde_json writes it: `"` and `\` and the control characters
/// below U+0020 escaped (`\b \f \n \r \t`, else `\u00XX` in lower-case hex),
/// everything else as it is.
#[inline(always)]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if bytes.len() <= SHORT {
        // A short string (an id) is put together on the stack and appended
        // whole: a copy of constant size is a few moves, where a push per
        // byte or a copy of the exact length (a call to `memcpy`) costs
        // more. The bytes past the string are cut off again.
        let mut buffer = [0u8; SHORT + 2];
        buffer[0] = b'"';
        for (slot, &b) in buffer[1..].iter_mut().zip(bytes) {
            if ESCAPE[b as usize] != 0 {
                return write_escaped(out, bytes);
            }
            *slot = b;
        }
        buffer[bytes.len() + 1] = b'"';
        let end = out.len() + bytes.len() + 2;
        out.extend_from_slice(&buffer);
        out.truncate(end);
    } else {
        write_long(out, bytes);
    }
}

/// A string longer than `SHORT` bytes.
#[inline(never)]
fn write_long(out: &mut Vec<u8>, bytes: &[u8]) {
    let mark = out.len();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // One pass that copies and checks; a string with something to escape
    // (rare) is written again by `write_escaped`.
    for &b in bytes {
        if ESCAPE[b as usize] != 0 {
            out.truncate(mark);
            return write_escaped(out, bytes);
        }
        out.push(b);
    }
    out.push(b'"');
}

/// A string with something to escape.
#[inline(never)]
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPE[b as usize];
        if escape == 0 {
            continue;
        }
        push_bytes(out, &bytes[start..i]);
        out.push(b'\\');
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xF) as usize]);
        } else {
            out.push(escape);
        }
        start = i + 1;
    }
    push_bytes(out, &bytes[start..]);
    out.push(b'"');
}

/// Appends `bytes`; short ones one by one, which costs less than the call
/// to `memcpy` that `extend_from_slice` makes (ids are short).
#[inline(always)]
fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() <= 16 {
        for &b in bytes {
            out.push(b);
        }
    } else {
        out.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Value, JsonError> {
        let mut reader = Reader::new(text);
        let value = reader.value()?;
        reader.end()?;
        Ok(value)
    }

    fn written(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        into_string(out)
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
        assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
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
            assert_eq!(written(&ours), written(&theirs), "{text}");
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
            assert_eq!(written(&ours), written(&theirs), "{text}");
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
