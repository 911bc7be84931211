//! The keys an outbox row is sent with, and the tokens that let its receiver
//! answer it.
//!
//! A key is an HMAC-SHA-256, under the store's secret
//! ([`StoreSecret`]), of everything that tells the row apart: the machine,
//! the effect (or the invocation's source, state and id), the process, the
//! event id and, for an effect, its position in the step. Two machines, two
//! effects or two stores therefore never share a key, so a receiver that
//! deduplicates by it never drops a different call; and the same step always
//! yields the same key, so every retry of a row, from any instance of one
//! store, sends the same one.
//!
//! The input is unambiguous: a label naming the kind of value, then each
//! part as its length in bytes (8 bytes, big-endian) followed by its bytes;
//! an effect's position is 4 bytes, big-endian, last. The key is the MAC in
//! lowercase hex.
//!
//! A completion token is the HMAC of a row's key under another label. The
//! service sends it to the receiver with the call, and the completion route
//! accepts an answer only with it, so knowing a key (it is in responses and
//! logs) is not enough to complete an invocation.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::store::StoreSecret;

type HmacSha256 = Hmac<Sha256>;

/// The labels of the three kinds of value; a new derivation gets a new label.
const EFFECT: &str = "idemchart-effect-v2";
const INVOCATION: &str = "idemchart-invoke-v2";
const COMPLETION: &str = "idemchart-completion-v1";

/// The MAC of `label` and `parts` (each length-prefixed), then `tail`.
fn mac(secret: &StoreSecret, label: &str, parts: &[&str], tail: &[u8]) -> HmacSha256 {
    // Any key length is accepted by HMAC; 32 bytes always are.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC accepts a key of any length");
    for part in std::iter::once(&label).chain(parts) {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    mac.update(tail);
    mac
}

fn hex_mac(mac: HmacSha256) -> String {
    super::hex(&mac.finalize().into_bytes())
}

/// The keys of the rows one store writes for one machine's processes.
#[derive(Clone, Copy)]
pub(super) struct RowKeys<'a> {
    pub(super) secret: &'a StoreSecret,
    pub(super) machine: &'a str,
}

impl RowKeys<'_> {
    pub(super) fn effect(
        &self,
        effect: &str,
        process: &str,
        event_id: &str,
        position: u32,
    ) -> String {
        idempotency_key(
            self.secret,
            self.machine,
            effect,
            process,
            event_id,
            position,
        )
    }

    pub(super) fn invocation(
        &self,
        src: &str,
        process: &str,
        event_id: &str,
        state: &str,
        invocation: &str,
    ) -> String {
        invocation_key(
            self.secret,
            self.machine,
            src,
            process,
            event_id,
            state,
            invocation,
        )
    }
}

/// The idempotency key of the effect `effect` at `position` of the step of
/// machine `machine` that applied `event_id` (an event's id, or a timer
/// firing's) to `process`, in the store whose secret is `secret`.
pub fn idempotency_key(
    secret: &StoreSecret,
    machine: &str,
    effect: &str,
    process: &str,
    event_id: &str,
    position: u32,
) -> String {
    let parts = [machine, effect, process, event_id];
    hex_mac(mac(secret, EFFECT, &parts, &position.to_be_bytes()))
}

/// The outbox key of the invocation `invocation` (its id) of source `src`
/// that the step of `event_id` started in the state at path `state` of
/// `process`, a process of `machine`: the receiver deduplicates by it, and
/// the invocation's completion event carries it as its id.
pub fn invocation_key(
    secret: &StoreSecret,
    machine: &str,
    src: &str,
    process: &str,
    event_id: &str,
    state: &str,
    invocation: &str,
) -> String {
    let parts = [machine, src, process, event_id, state, invocation];
    hex_mac(mac(secret, INVOCATION, &parts, &[]))
}

/// The token that lets the receiver of the row with `key` answer it
/// through the completion route.
pub fn completion_token(secret: &StoreSecret, key: &str) -> String {
    hex_mac(mac(secret, COMPLETION, &[key], &[]))
}

/// Whether `token` is the completion token of `key`, compared in constant
/// time (the MAC's own comparison), so that the time of a refusal tells
/// nothing about how much of a guess was right.
pub fn completion_token_matches(secret: &StoreSecret, key: &str, token: &str) -> bool {
    let Some(bytes) = unhex(token) else {
        return false;
    };
    mac(secret, COMPLETION, &[key], &[])
        .verify_slice(&bytes)
        .is_ok()
}

/// The bytes of lowercase or uppercase hex text, or `None`.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(byte: u8) -> StoreSecret {
        StoreSecret::from_bytes([byte; 32])
    }

    /// The derivation is the documented one, and stays it across upgrades
    /// (a key stored before an upgrade must match its redelivery after):
    /// these values were computed apart from this code, with Python's
    /// `hmac` over the encoding the module describes.
    #[test]
    fn keys_are_the_documented_hmacs() {
        let s = secret(7);
        assert_eq!(
            idempotency_key(&s, "fx", "notify", "x1", "g1", 0),
            "19c3aa2f0462a5f981d03da104553323e8647ed9bdac5518c897513ac5120721"
        );
        assert_eq!(
            invocation_key(&s, "m", "charge", "p", "e", "s", "ch"),
            "e17ae8edec884eee9dd0a73bf65139d7843879fecbcbd11ce8eef9d5e3ea3df6"
        );
        assert_eq!(
            completion_token(&s, "k1"),
            "fb5433777859bd996269d3c39a15db1d5a21ff4f9e4cb3ec6b895692d74752d3"
        );
    }

    /// Every part, and the secret, moves the key; moving bytes from one part
    /// to the next does too (the lengths keep the parts apart).
    #[test]
    fn every_part_counts() {
        let base = idempotency_key(&secret(1), "fx", "notify", "x1", "g1", 0);
        for other in [
            idempotency_key(&secret(2), "fx", "notify", "x1", "g1", 0),
            idempotency_key(&secret(1), "other", "notify", "x1", "g1", 0),
            idempotency_key(&secret(1), "fx", "ship", "x1", "g1", 0),
            idempotency_key(&secret(1), "fx", "notify", "x2", "g1", 0),
            idempotency_key(&secret(1), "fx", "notify", "x1", "g2", 0),
            idempotency_key(&secret(1), "fx", "notify", "x1", "g1", 1),
            idempotency_key(&secret(1), "fxn", "otify", "x1", "g1", 0),
        ] {
            assert_ne!(base, other);
        }
        let invoked = invocation_key(&secret(1), "m", "charge", "p", "e", "s", "ch");
        assert_ne!(
            invoked,
            invocation_key(&secret(1), "m", "charge", "p", "e", "s", "ci")
        );
        assert_ne!(
            invoked,
            invocation_key(&secret(1), "m", "refund", "p", "e", "s", "ch")
        );
    }

    #[test]
    fn a_token_matches_its_key_only() {
        let s = secret(3);
        let token = completion_token(&s, "k1");
        assert!(completion_token_matches(&s, "k1", &token));
        assert!(completion_token_matches(&s, "k1", &token.to_uppercase()));
        assert!(!completion_token_matches(&s, "k2", &token));
        assert!(!completion_token_matches(&secret(4), "k1", &token));
        assert!(!completion_token_matches(&s, "k1", "k1"));
        assert!(!completion_token_matches(&s, "k1", &token[..62]));
        assert!(!completion_token_matches(&s, "k1", ""));
        assert!(!completion_token_matches(&s, "k1", "é"));
        // A token is not the key: knowing the key does not give it.
        assert_ne!(token, "k1");
    }
}
