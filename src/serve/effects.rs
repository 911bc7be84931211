//! The effects file (`--effects FILE.toml`): an HTTP endpoint for each
//! effect the service dispatches, and the call of one outbox row to it.
//!
//! ```toml
//! [effects.encolarEnvio]
//! url = "https://shipping.internal/queue"
//! timeout = "5s"        # default 10s
//! max_attempts = 8      # default 8
//! backoff = "1s"        # the first wait; it doubles (default 1s)
//! on_timeout = "retry"  # or "unknown"; default: from the effect's idempotency
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::{Duration as MachineDuration, Idempotency, Machine};
use crate::runtime::{Dispatch, DispatchPolicy, completion_token};
use crate::store::{OutboxItem, StoreSecret};

/// What a timeout tells about an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    /// The receiver deduplicates by the key (or the effect is natural): the
    /// same call again is harmless.
    Retry,
    /// The receiver may have acted: the machine is told, and decides.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointText {
    url: String,
    timeout: Option<String>,
    max_attempts: Option<u32>,
    backoff: Option<String>,
    on_timeout: Option<OnTimeout>,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EffectsText {
    #[serde(default)]
    effects: BTreeMap<String, toml::Spanned<EndpointText>>,
}

/// Where one effect is sent, and how often it is tried.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub url: reqwest::Url,
    pub timeout: Duration,
    pub max_attempts: u32,
    pub backoff_ms: u64,
    /// `None`: as the machine declares the effect's idempotency.
    pub on_timeout: Option<OnTimeout>,
}

/// The endpoints by effect name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    pub endpoints: BTreeMap<String, Endpoint>,
}

impl Effects {
    /// Reads an effects file; errors name the file, and the line and column
    /// where TOML says.
    pub fn load(path: &std::path::Path) -> Result<Effects, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Effects::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses the text of an effects file; an error starts with `LINE:COL: `.
    pub fn parse(text: &str) -> Result<Effects, String> {
        let at = |offset: usize| {
            let line = text[..offset].matches('\n').count() + 1;
            let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{line}:{column}")
        };
        let parsed: EffectsText = toml::from_str(text).map_err(|e| {
            let place = e.span().map_or_else(|| "1:1".to_string(), |s| at(s.start));
            format!("{place}: {}", e.message())
        })?;
        let mut endpoints = BTreeMap::new();
        for (name, spanned) in parsed.effects {
            let place = at(spanned.span().start);
            let endpoint = spanned.into_inner();
            let bad = |what: String| format!("{place}: effect `{name}`: {what}");
            let url = reqwest::Url::parse(&endpoint.url)
                .map_err(|e| bad(format!("bad url `{}`: {e}", endpoint.url)))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(bad(format!("url `{}` is not http or https", endpoint.url)));
            }
            let duration = |field: &str, text: Option<String>, default: u64| match text {
                None => Ok(default),
                Some(text) => MachineDuration::parse(&text)
                    .map(|d| d.millis)
                    .ok_or_else(|| {
                        bad(format!(
                            "`{field} = \"{text}\"`: write a duration such as `500ms`, `5s` or `1m`"
                        ))
                    }),
            };
            let timeout = duration("timeout", endpoint.timeout, 10_000)?;
            let backoff_ms = duration("backoff", endpoint.backoff, 1_000)?;
            let max_attempts = endpoint.max_attempts.unwrap_or(8);
            if max_attempts == 0 || timeout == 0 {
                return Err(bad("`max_attempts` and `timeout` must be above 0".into()));
            }
            endpoints.insert(
                name,
                Endpoint {
                    url,
                    timeout: Duration::from_millis(timeout),
                    max_attempts,
                    backoff_ms,
                    on_timeout: endpoint.on_timeout,
                },
            );
        }
        Ok(Effects { endpoints })
    }

    /// The effects and invocation sources of `machine` this file has an
    /// endpoint for.
    pub fn of<'e>(&'e self, machine: &Machine) -> Vec<(&'e str, &'e Endpoint)> {
        let invoked = |name: &str| {
            machine
                .state_ids()
                .any(|s| machine.state(s).invoke.iter().any(|i| i.src.text == name))
        };
        self.endpoints
            .iter()
            .filter(|(name, _)| machine.effects.contains_key(name.as_str()) || invoked(name))
            .map(|(name, endpoint)| (name.as_str(), endpoint))
            .collect()
    }
}

impl Endpoint {
    /// The dispatch policy of this effect's rows.
    pub fn policy(&self) -> DispatchPolicy {
        DispatchPolicy {
            max_attempts: self.max_attempts,
            base_backoff_ms: self.backoff_ms,
            // The lease outlasts the call, so no other instance takes the
            // row while this one waits for the answer.
            lease_ms: (self.timeout.as_millis() as u64).saturating_mul(2) + 5_000,
            batch: 32,
            ..DispatchPolicy::default()
        }
    }

    /// What a timeout means for `effect` of `machine`: as the file says,
    /// else retry where the receiver recognises the key or a repeat changes
    /// nothing, and unknown where a repeat acts twice.
    pub fn on_timeout(&self, machine: &Machine, effect: &str) -> OnTimeout {
        self.on_timeout.unwrap_or_else(|| {
            match machine.effects.get(effect).map(|e| e.idempotency) {
                Some(Idempotency::None) => OnTimeout::Unknown,
                _ => OnTimeout::Retry,
            }
        })
    }

    /// POSTs the row's arguments with its key, and says what came of it.
    /// An invocation's call also carries `Idempotency-Completion-Token`,
    /// the row's completion token under the store's `secret`: with it, and
    /// only with it, the receiver may answer later through the completion
    /// route (after answering this call 202).
    pub async fn call(
        &self,
        client: &reqwest::Client,
        secret: &StoreSecret,
        item: &OutboxItem,
        on_timeout: OnTimeout,
    ) -> Dispatch {
        let mut request = client
            .post(self.url.clone())
            .timeout(self.timeout)
            .header("Idempotency-Key", &item.key)
            .header("Content-Type", "application/json");
        if item.invocation.is_some() {
            request = request.header(
                "Idempotency-Completion-Token",
                completion_token(secret, &item.key),
            );
        }
        let sent = request.body(item.args.clone()).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(e) if e.is_timeout() => {
                return match on_timeout {
                    OnTimeout::Retry => {
                        Dispatch::Retry(format!("timed out after {:?}", self.timeout))
                    }
                    OnTimeout::Unknown => Dispatch::UnknownOutcome,
                };
            }
            // Not connected, or the connection broke before an answer: the
            // key makes the next try harmless.
            Err(e) => return Dispatch::Retry(format!("{e}")),
        };
        let status = response.status();
        let body = match tokio::time::timeout(self.timeout, response.bytes()).await {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => return Dispatch::Retry(format!("{status}: reading the answer: {e}")),
            Err(_) => {
                return match on_timeout {
                    OnTimeout::Retry => Dispatch::Retry(format!("{status}: the answer timed out")),
                    OnTimeout::Unknown => Dispatch::UnknownOutcome,
                };
            }
        };
        answer(status, &body)
    }
}

/// What an HTTP answer says about an effect or an invocation: 202 is
/// accepted (an invocation's answer comes later, through the completion
/// route); another 2xx is done, with its JSON body as the output (an
/// invocation's done event carries it); a 4xx other than 408 and 429 is a refusal for good, with the
/// body (JSON, else its text) and the status as the error; anything else
/// (5xx, 408, 429, other codes) may pass, so the same call is tried again.
pub fn answer(status: reqwest::StatusCode, body: &[u8]) -> Dispatch {
    let code = status.as_u16();
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    if status == reqwest::StatusCode::ACCEPTED {
        return Dispatch::Accepted;
    }
    if status.is_success() {
        return json.map_or(Dispatch::Done, Dispatch::Output);
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    if status.is_client_error() && code != 408 && code != 429 {
        return Dispatch::Failed(serde_json::json!({
            "status": code,
            "body": json.unwrap_or(serde_json::Value::String(text)),
        }));
    }
    Dispatch::Retry(format!("{status}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_answers_map_onto_dispatch_results() {
        let status = |code| reqwest::StatusCode::from_u16(code).unwrap();
        assert_eq!(
            answer(status(200), br#"{"id": 7}"#),
            Dispatch::Output(serde_json::json!({"id": 7}))
        );
        assert_eq!(answer(status(204), b""), Dispatch::Done);
        assert_eq!(
            answer(status(202), br#"{"queued": true}"#),
            Dispatch::Accepted
        );
        assert_eq!(answer(status(200), b"ok"), Dispatch::Done);
        assert_eq!(
            answer(status(422), br#"{"title": "declined"}"#),
            Dispatch::Failed(serde_json::json!({"status": 422, "body": {"title": "declined"}}))
        );
        assert_eq!(
            answer(status(404), b"no such thing"),
            Dispatch::Failed(serde_json::json!({"status": 404, "body": "no such thing"}))
        );
        for code in [408, 429, 500, 503] {
            assert!(
                matches!(answer(status(code), b"later"), Dispatch::Retry(_)),
                "{code}"
            );
        }
    }

    #[test]
    fn reads_an_effects_file() {
        let effects = Effects::parse(
            "[effects.mail]\nurl = \"http://127.0.0.1:9/mail\"\ntimeout = \"2s\"\nmax_attempts = 3\non_timeout = \"unknown\"\n",
        )
        .unwrap();
        let mail = &effects.endpoints["mail"];
        assert_eq!(mail.timeout, Duration::from_secs(2));
        assert_eq!(mail.max_attempts, 3);
        assert_eq!(mail.backoff_ms, 1_000);
        assert_eq!(mail.on_timeout, Some(OnTimeout::Unknown));
    }

    #[test]
    fn a_bad_effects_file_says_where() {
        let message = |text: &str| Effects::parse(text).unwrap_err();
        assert_eq!(
            message("[effects.mail]\nurl = \"http://x\"\ntimout = \"2s\"\n"),
            "3:1: unknown field `timout`, expected one of `url`, `timeout`, `max_attempts`, `backoff`, `on_timeout`"
        );
        assert_eq!(
            message("[effects.mail]\nurl = \"http://x\"\ntimeout = \"2 s\"\n"),
            "1:1: effect `mail`: `timeout = \"2 s\"`: write a duration such as `500ms`, `5s` or `1m`"
        );
        assert_eq!(
            message("[effects.mail]\nurl = \"ftp://x\"\n"),
            "1:1: effect `mail`: url `ftp://x` is not http or https"
        );
    }
}
