//! The identity guard a finding's help suggests, in the machine's own names,
//! so the advice can be pasted: the event's declared id field and a set of
//! seen ids that the machine already tests for the event, or a new one.

use crate::graph::EventId;

use super::Cx;

/// `!(event.ID in context.SEEN)` with the names filled in.
pub struct IdentityGuard {
    /// `event.cobroId`, or `event.id` when the event declares no id field.
    pub id: String,
    /// The context field holding the seen ids.
    pub set: String,
    /// Whether the machine was read from XState, whose author writes the
    /// guard and the assign in JavaScript.
    pub xstate: bool,
}

impl IdentityGuard {
    /// "guard … with `!(event.F in context.S)` and add `event.F` to `S` in
    /// the same assign", in JavaScript for a machine read from XState.
    pub fn advice(&self) -> String {
        let (id, set) = (&self.id, &self.set);
        if self.xstate {
            return format!(
                "`({{ context, event }}) => !context.{set}.includes({id})` and add `{id}` to `{set}` in the same assign (`{set}: ({{ context, event }}) => [...context.{set}, {id}]`)"
            );
        }
        format!("`!({id} in context.{set})` and add `{id}` to `{set}` in the same assign")
    }
}

impl Cx<'_> {
    /// The identity guard to suggest for redeliveries of `event`.
    pub fn identity_guard(&self, event: EventId) -> IdentityGuard {
        let decl = self.decl(event);
        let id = match decl.and_then(|d| d.id_field.as_ref()) {
            Some(field) => format!("event.{}", field.text),
            None => "event.id".to_string(),
        };
        // A set some guard on this event already tests is the one to extend.
        let set = match &self.identity_sets[event.index()] {
            Some(set) => set.clone(),
            None => seen_set_name(self.graph.events.name(event)),
        };
        let xstate = matches!(
            self.machine.fact_source,
            crate::model::FactSource::XstateDeclarations
                | crate::model::FactSource::Nowhere(crate::model::ForeignFormat::Xstate)
        );
        IdentityGuard { id, set, xstate }
    }
}

/// `PAGO_RECIBIDO` → `seenPagoRecibido`, `payment.received` → `seenPaymentReceived`.
fn seen_set_name(event: &str) -> String {
    let mut out = String::from("seen");
    for word in event.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars.map(|c| c.to_ascii_lowercase()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::seen_set_name;

    #[test]
    fn set_names_are_camel_case_after_seen() {
        assert_eq!(seen_set_name("PAGO_RECIBIDO"), "seenPagoRecibido");
        assert_eq!(seen_set_name("payment.received"), "seenPaymentReceived");
        assert_eq!(seen_set_name("*"), "seen");
    }
}
