//! An event as senders write it in JSON, `{"type": "E", "id": "...",
//! "data": {...}}`, read for one machine: its id (given, or the payload field
//! the machine declares for the event), and its payload checked against the
//! types the machine declares. `idemchart apply` and `idemchart serve` read
//! events through here, so both refuse the same events with the same words.

use crate::expr::{Event, Value};
use crate::model::{Machine, PayloadType};

/// Why an event cannot be applied as sent. Nothing is written for it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EventJsonError {
    #[error("the event is not JSON: line {line}, column {column}: {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("the event must be an object {{\"type\": ..., \"data\": {{...}}}}")]
    NotObject,
    #[error("unknown key `{0}`: an event has `type`, `id` and `data`")]
    UnknownKey(String),
    #[error("an event needs a string `type`")]
    NoType,
    #[error("`data` must be an object")]
    DataNotObject,
    /// The payload does not have the types the machine declares.
    #[error("event `{event}` does not have the payload machine `{machine}` declares: {}", list(.mismatches))]
    Payload {
        machine: String,
        event: String,
        mismatches: Vec<FieldMismatch>,
    },
}

/// One declared payload field the event does not fill as declared.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FieldMismatch {
    pub field: String,
    /// The declared type (`string`, `number`, …).
    pub expected: &'static str,
    /// What the event holds there: a JSON type name, or `missing`.
    pub found: &'static str,
}

fn list(mismatches: &[FieldMismatch]) -> String {
    mismatches
        .iter()
        .map(|m| format!("`{}` should be {}, found {}", m.field, m.expected, m.found))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads the JSON text of an event; see [`event_from_json`].
pub fn parse_event(
    text: &str,
    machine: &Machine,
    fallback_id: Option<&str>,
) -> Result<Event, EventJsonError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's message ends with the place, which is said apart.
        let message = e.to_string();
        let place = format!(" at line {} column {}", e.line(), e.column());
        EventJsonError::NotJson {
            line: e.line(),
            column: e.column(),
            message: message.strip_suffix(&place).unwrap_or(&message).to_string(),
        }
    })?;
    event_from_json(&value, machine, fallback_id)
}

/// Reads `{"type", "id", "data"}` for `machine`. The id is the `id` given,
/// else the payload field the machine declares for the event, else
/// `fallback_id` (an HTTP `Idempotency-Key`); with none of them the event
/// has no id, which `apply` refuses. A declared payload is checked: each
/// declared field must be present with its type (the id field may be
/// missing, when the fallback gives the id).
pub fn event_from_json(
    value: &serde_json::Value,
    machine: &Machine,
    fallback_id: Option<&str>,
) -> Result<Event, EventJsonError> {
    let serde_json::Value::Object(object) = value else {
        return Err(EventJsonError::NotObject);
    };
    if let Some(key) = object
        .keys()
        .find(|k| !["type", "id", "data"].contains(&k.as_str()))
    {
        return Err(EventJsonError::UnknownKey(key.clone()));
    }
    let Some(name) = object.get("type").and_then(|t| t.as_str()) else {
        return Err(EventJsonError::NoType);
    };
    let data = object.get("data").unwrap_or(&serde_json::Value::Null);
    if !data.is_null() && !data.is_object() {
        return Err(EventJsonError::DataNotObject);
    }
    let declared = machine.events.get(name);
    let id_field = declared.and_then(|d| d.id_field.as_ref()).map(|f| &*f.text);
    if let Some(fields) = declared.and_then(|d| d.payload.as_ref()) {
        let mismatches: Vec<FieldMismatch> = fields
            .iter()
            .filter_map(|(field, decl)| {
                let found = data.get(field);
                // A missing id field is a missing id, which the fallback
                // may supply, not a payload of the wrong shape.
                if found.is_none() && id_field == Some(field.as_str()) {
                    return None;
                }
                (!found.is_some_and(|v| has_type(v, decl.ty))).then(|| FieldMismatch {
                    field: field.clone(),
                    expected: decl.ty.as_str(),
                    found: found.map_or("missing", json_type),
                })
            })
            .collect();
        if !mismatches.is_empty() {
            return Err(EventJsonError::Payload {
                machine: machine.name.clone(),
                event: name.to_string(),
                mismatches,
            });
        }
    }
    let data = Value::from(data);
    let id = object
        .get("id")
        .map(Value::from)
        .or_else(|| {
            let field = declared?.id_field.as_ref()?;
            data.get(&field.text).cloned()
        })
        .or_else(|| fallback_id.map(Value::from));
    Ok(Event::new(name, id, data))
}

fn has_type(value: &serde_json::Value, ty: PayloadType) -> bool {
    use serde_json::Value as J;
    match ty {
        PayloadType::Any => true,
        PayloadType::String => value.is_string(),
        PayloadType::Number => value.is_number(),
        // The machine's integers are 64-bit signed: a larger one reaches
        // its expressions as a double, which an `integer` field is not.
        PayloadType::Integer => value.is_i64(),
        PayloadType::Boolean => value.is_boolean(),
        PayloadType::List => matches!(value, J::Array(_)),
        PayloadType::Map => matches!(value, J::Object(_)),
    }
}

fn json_type(value: &serde_json::Value) -> &'static str {
    use serde_json::Value as J;
    match value {
        J::Null => "null",
        J::Bool(_) => "boolean",
        J::Number(n) if n.is_i64() => "integer",
        J::Number(_) => "number",
        J::String(_) => "string",
        J::Array(_) => "list",
        J::Object(_) => "map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        crate::syntax::parse(
            "machine: pay\nevents:\n  PAY: { id: payId, payload: { payId: string, amount: number, n: integer } }\n  PING: {}\ninitial: a\nstates:\n  a: { on: { PAY: a, PING: a } }\n",
            crate::syntax::Syntax::Yaml,
        )
        .unwrap()
    }

    #[test]
    fn the_id_is_given_else_declared_else_the_fallback() {
        let m = machine();
        let declared = parse_event(
            r#"{"type": "PAY", "data": {"payId": "p1", "amount": 2.5, "n": 3}}"#,
            &m,
            Some("header"),
        )
        .unwrap();
        assert_eq!(declared.id, Some(Value::from("p1")));
        let fallback = parse_event(r#"{"type": "PING"}"#, &m, Some("header")).unwrap();
        assert_eq!(fallback.id, Some(Value::from("header")));
        let given = parse_event(r#"{"type": "PING", "id": "x"}"#, &m, Some("h")).unwrap();
        assert_eq!(given.id, Some(Value::from("x")));
        assert_eq!(
            parse_event(r#"{"type": "PING"}"#, &m, None).unwrap().id,
            None
        );
    }

    #[test]
    fn a_payload_off_its_declared_types_names_each_field() {
        let error = parse_event(
            r#"{"type": "PAY", "data": {"payId": 7, "n": 1.5}}"#,
            &machine(),
            None,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "event `PAY` does not have the payload machine `pay` declares: `payId` should be string, found integer; `amount` should be number, found missing; `n` should be integer, found number"
        );
        let too_large = parse_event(
            r#"{"type": "PAY", "data": {"payId": "p", "amount": 1, "n": 9223372036854775808}}"#,
            &machine(),
            None,
        )
        .unwrap_err();
        assert!(
            too_large
                .to_string()
                .ends_with("`n` should be integer, found number"),
            "{too_large}"
        );
        let no_id = parse_event(
            r#"{"type": "PAY", "data": {"amount": 1, "n": 2}}"#,
            &machine(),
            Some("h"),
        );
        assert_eq!(no_id.unwrap().id, Some(Value::from("h")));
    }

    #[test]
    fn malformed_events_say_what_is_wrong() {
        let m = machine();
        let message = |text: &str| parse_event(text, &m, None).unwrap_err().to_string();
        assert_eq!(
            message("{\"type\": "),
            "the event is not JSON: line 1, column 9: EOF while parsing a value"
        );
        assert_eq!(
            message("[]"),
            "the event must be an object {\"type\": ..., \"data\": {...}}"
        );
        assert_eq!(
            message(r#"{"kind": 1}"#),
            "unknown key `kind`: an event has `type`, `id` and `data`"
        );
        assert_eq!(message(r#"{"data": {}}"#), "an event needs a string `type`");
        assert_eq!(
            message(r#"{"type": "PING", "data": 3}"#),
            "`data` must be an object"
        );
    }
}
