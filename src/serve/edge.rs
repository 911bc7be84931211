//! What the service accepts at its edge, checked before anything reaches
//! the store: process ids, `Idempotency-Key` headers, event ids, event
//! types and payload strings. A request that breaks one of these rules is
//! a permanent error of the client's, so it is answered 4xx (a retry cannot
//! help) and nothing is written; the store never sees it, so its own error
//! text (a NUL PostgreSQL cannot store, an index row too large) is never
//! reached, let alone sent back.

use std::fmt;

/// The longest process id, `Idempotency-Key` and event id, in bytes: far
/// above any id a sender makes up, and far below what an index row holds.
pub const MAX_ID_BYTES: usize = 255;

/// The characters of a process id besides ASCII letters and digits. A
/// process id is a path segment, so `/`, `%`, `?` and `#` are left out (an
/// id sent as `a%2Fb` is not `a/b`), and so is every character a log or a
/// terminal could read as anything but itself.
pub const PROCESS_ID_PUNCTUATION: &str = "-_.~:@+=";

/// Why an id or a name is refused; the text says which rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a process id of a request path (already percent-decoded).
pub fn process_id(id: &str) -> Result<(), Refusal> {
    if id.is_empty() {
        return Err(Refusal("the process id is empty".into()));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(Refusal(format!(
            "the process id is {} bytes long; the limit is {MAX_ID_BYTES}",
            id.len()
        )));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !c.is_ascii_alphanumeric() && !PROCESS_ID_PUNCTUATION.contains(*c))
    {
        return Err(Refusal(format!(
            "the process id has the character {}: a process id is ASCII letters, digits and `{PROCESS_ID_PUNCTUATION}`",
            Escaped(&c.to_string())
        )));
    }
    // Clients and proxies resolve `.` and `..` segments away, so such an id
    // would name another path than the one it was sent on.
    if id.bytes().all(|b| b == b'.') {
        return Err(Refusal(
            "the process id is only dots, which URLs resolve away".into(),
        ));
    }
    Ok(())
}

/// The key an `Idempotency-Key` header value carries. The IETF draft makes
/// the header a structured-field string (`"abc"`, with `\"` and `\\`
/// escapes); a bare token (`abc`) is taken too, as most clients send it,
/// and both spellings name the same key. The key itself is 1 to
/// [`MAX_ID_BYTES`] visible ASCII characters.
pub fn idempotency_key(value: &[u8]) -> Result<String, Refusal> {
    let key = match value.first() {
        Some(b'"') => unquote(value)?,
        _ => value.to_vec(),
    };
    if key.is_empty() {
        return Err(Refusal("the Idempotency-Key is empty".into()));
    }
    if key.len() > MAX_ID_BYTES {
        return Err(Refusal(format!(
            "the Idempotency-Key is {} bytes long; the limit is {MAX_ID_BYTES}",
            key.len()
        )));
    }
    if key.iter().any(|b| !b.is_ascii_graphic()) {
        return Err(Refusal(
            "the Idempotency-Key has a character that is not visible ASCII (0x21 to 0x7E)".into(),
        ));
    }
    // Only visible ASCII is left, which is UTF-8.
    Ok(String::from_utf8(key).unwrap_or_default())
}

/// The content of a structured-field string (RFC 8941, section 4.2.5).
fn unquote(value: &[u8]) -> Result<Vec<u8>, Refusal> {
    let bad = |why: &str| {
        Refusal(format!(
            "the Idempotency-Key is not a valid quoted string: {why}"
        ))
    };
    let mut key = Vec::with_capacity(value.len());
    let mut bytes = value[1..].iter();
    loop {
        match bytes.next() {
            None => return Err(bad("it has no closing quote")),
            Some(b'\\') => match bytes.next() {
                Some(&c @ (b'"' | b'\\')) => key.push(c),
                _ => return Err(bad("a backslash escapes only `\"` and `\\`")),
            },
            Some(b'"') => break,
            Some(&c) => key.push(c),
        }
    }
    if bytes.next().is_some() {
        return Err(bad("something follows the closing quote"));
    }
    Ok(key)
}

/// Checks an event id, wherever it came from (the body's `id`, the payload
/// field the machine declares, the header).
pub fn event_id(id: &str) -> Result<(), Refusal> {
    if id.is_empty() {
        return Err(Refusal("the event id is empty".into()));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(Refusal(format!(
            "the event id is {} bytes long; the limit is {MAX_ID_BYTES}",
            id.len()
        )));
    }
    if id.chars().any(is_hidden) {
        return Err(Refusal(
            "the event id has a control or bidirectional formatting character".into(),
        ));
    }
    Ok(())
}

/// Checks the text of an event's `type` before it is looked up.
pub fn event_type(name: &str) -> Result<(), Refusal> {
    if name.is_empty() {
        return Err(Refusal("the event type is empty".into()));
    }
    if name.len() > MAX_ID_BYTES {
        return Err(Refusal(format!(
            "the event type is {} bytes long; the limit is {MAX_ID_BYTES}",
            name.len()
        )));
    }
    if name.chars().any(is_hidden) {
        return Err(Refusal(
            "the event type has a control or bidirectional formatting character".into(),
        ));
    }
    Ok(())
}

/// Whether `name` is an event the interpreter or the runtime sends itself:
/// completions of invocations (`xstate.done.actor.*`, `xstate.error.actor.*`,
/// SCXML's `done.invoke.*`), the interpreter's own (`done.state.*`,
/// `error.*`, XState's `xstate.*`), and the runtime's `<effect>.unknown`
/// for an effect whose outcome is unknown. Sent from outside, such an event
/// would forge an answer no one gave.
pub fn is_internal_event(name: &str) -> bool {
    name.starts_with("xstate.")
        || name.starts_with("done.")
        || name.starts_with("error.")
        || name == "done"
        || name == "error"
        || name.ends_with(".unknown")
}

/// The path of the first string (or object key) of `value` that holds a
/// NUL, which no store keeps as sent.
pub fn nul_in(value: &serde_json::Value) -> Option<String> {
    fn walk(value: &serde_json::Value, path: &mut String) -> bool {
        match value {
            serde_json::Value::String(s) => s.contains('\0'),
            serde_json::Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            serde_json::Value::Object(members) => members.iter().any(|(key, item)| {
                let len = path.len();
                path.push('/');
                path.push_str(&Escaped(key).to_string());
                let found = key.contains('\0') || walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(value, &mut path).then(|| if path.is_empty() { "/".into() } else { path })
}

/// Characters that would not be seen as themselves: C0 and C1 controls,
/// DEL, and the bidirectional formatting characters that reorder what
/// follows them on screen (U+202E makes `gpj.exe` read `exe.jpg`).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Text from a request, written so that it cannot pass for anything else in
/// a log line or a message: every control, bidirectional formatting
/// character and backslash is written as a Rust escape (`\n`, `\u{1b}`).
/// The `fmt` layer of tracing writes a `%` field's `Display` as it is, a
/// newline included, so request text reaches the log only through this.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if is_hidden(c) || c == '\\' {
                write!(f, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_ids_are_plain_path_segments() {
        for good in [
            "o1",
            "order-1",
            "user:42",
            "a.b_c~d@e+f=g",
            &"x".repeat(255),
        ] {
            assert_eq!(process_id(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "..",
            ".",
            "../../etc",
            "a/b",
            "a\u{202E}b",
            "a\nb",
            "a\u{1b}[31m",
            "a%00",
            "a b",
            &"x".repeat(256),
        ] {
            assert!(process_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_idempotency_key_is_a_token_or_a_quoted_string() {
        assert_eq!(idempotency_key(b"abc").unwrap(), "abc");
        assert_eq!(idempotency_key(b"\"abc\"").unwrap(), "abc");
        assert_eq!(idempotency_key(b"\"a\\\"b\"").unwrap(), "a\"b");
        assert_eq!(idempotency_key(&[b'k'; 255]).unwrap().len(), 255);
        for bad in [
            &b""[..],
            b"\"\"",
            b"\"abc",
            b"\"abc\"x",
            b"\"a\\nb\"",
            b"\"a b\"",
            b"a b",
            b"a\x01",
            "é".as_bytes(),
            &[b'k'; 256],
            &[b'k'; 6000],
        ] {
            assert!(
                idempotency_key(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn event_ids_and_types_are_bounded_and_visible() {
        assert_eq!(event_id("pago 1 é"), Ok(()));
        assert!(event_id("").is_err());
        assert!(event_id("a\0b").is_err());
        assert!(event_id(&"x".repeat(6000)).is_err());
        assert!(event_type("").is_err());
        assert!(event_type("A\0").is_err());
        assert_eq!(event_type("PAY"), Ok(()));
    }

    #[test]
    fn internal_events_are_the_runtimes() {
        for name in [
            "xstate.done.actor.risk",
            "xstate.error.actor.risk",
            "done.invoke.x",
            "done.state.a",
            "error.execution",
            "notify.unknown",
        ] {
            assert!(is_internal_event(name), "{name}");
        }
        for name in ["PAY", "undone", "errors", "unknown", "notify.unknownish"] {
            assert!(!is_internal_event(name), "{name}");
        }
    }

    #[test]
    fn a_nul_is_found_at_any_depth() {
        let value = serde_json::json!({"a": [1, {"b": "x\u{0}y"}]});
        assert_eq!(nul_in(&value).as_deref(), Some("/a[1]/b"));
        assert_eq!(
            nul_in(&serde_json::json!({"k\u{0}": 1})).as_deref(),
            Some("/k\\u{0}")
        );
        assert_eq!(nul_in(&serde_json::json!({"a": ["x", 2]})), None);
    }

    #[test]
    fn escaped_text_has_no_control_characters() {
        let text = Escaped("a\nb\u{1b}[31m\u{202E}\\").to_string();
        assert_eq!(text, "a\\nb\\u{1b}[31m\\u{202e}\\\\");
        assert!(!text.chars().any(|c| c.is_control()));
    }
}

#[cfg(test)]
mod log_tests {
    use super::Escaped;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(write: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, write);
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    /// The `fmt` layer writes a `%` field's newline as it is, which would
    /// start a forged line; through `Escaped` the line stays one line.
    #[test]
    fn a_logged_id_cannot_forge_a_line() {
        let id = "x\nINFO forged=1 \u{1b}[2J";
        let raw = logged(|| tracing::info!(process = %id, "answered"));
        assert!(
            raw.contains('\n') && raw.trim_end().contains('\n'),
            "{raw:?}"
        );
        let escaped = logged(|| tracing::info!(process = %Escaped(id), "answered"));
        let line = escaped.strip_suffix('\n').unwrap();
        assert!(!line.chars().any(|c| c.is_control()), "{escaped:?}");
        assert!(
            line.contains("process=x\\nINFO forged=1 \\u{1b}[2J"),
            "{escaped:?}"
        );
    }
}
