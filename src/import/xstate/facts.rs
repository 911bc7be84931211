//! The idempotency facts XState has no place for: event ids, effects and
//! their idempotency, sources with their retry horizons, retention. They
//! are written with the keys and meanings of the machine format's top
//! level, under `meta: { idemchart: { ... } }` on the root config or under
//! `[machines.ID]` in `idemchart.toml`.

use indexmap::IndexMap;
use serde::Deserialize;

use crate::model::Name;
use crate::span::Span;
use crate::syntax::tree::{DedupDoc, EffectDoc, EventDoc, SourceDoc};

/// The facts of one machine, as written (`meta.idemchart` or TOML).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    #[serde(default)]
    pub events: IndexMap<String, EventFact>,
    #[serde(default)]
    pub effects: IndexMap<String, EffectFact>,
    #[serde(default)]
    pub sources: IndexMap<String, SourceFact>,
    pub dedup: Option<DedupFact>,
}

impl Facts {
    /// Whether these facts declare anything: an event, an effect, a source
    /// or a retention.
    pub fn declare_any(&self) -> bool {
        !self.events.is_empty()
            || !self.effects.is_empty()
            || !self.sources.is_empty()
            || self.dedup.is_some()
    }
}

/// Whether the repository opts in to declarations: its `idemchart.toml`
/// declares facts for some machine. Then every machine it holds is asked
/// for each missing fact, as a machine file of our own is.
pub(super) fn repository_declares(settings: &super::Settings) -> bool {
    settings.machines.values().any(|m| m.facts.declare_any())
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventFact {
    pub id: Option<String>,
    pub source: Option<String>,
    pub payload: Option<IndexMap<String, String>>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectFact {
    pub idempotency: Option<String>,
    pub verify: Option<String>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFact {
    pub retry_horizon: Option<String>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DedupFact {
    pub retention: Option<String>,
}

/// Where each fact was written: the span of a name, by `section.name`
/// (`events.PAY`, `effects.charge`, `dedup`), else `fallback`.
pub(super) struct Places<'p> {
    pub spans: &'p dyn Fn(&str) -> Option<Span>,
    pub fallback: Span,
}

impl Places<'_> {
    fn at(&self, key: &str) -> Span {
        (self.spans)(key).unwrap_or(self.fallback)
    }

    fn name(&self, key: &str, text: &str) -> Name {
        Name {
            text: text.to_string(),
            span: self.at(key),
        }
    }
}

/// The declarations the facts make, later ones replacing earlier ones of
/// the same name (TOML after `meta`).
#[derive(Default)]
pub(super) struct Declarations {
    pub events: Vec<EventDoc>,
    pub effects: Vec<EffectDoc>,
    pub sources: Vec<SourceDoc>,
    pub dedup: Option<DedupDoc>,
}

impl Declarations {
    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.effects.is_empty()
            && self.sources.is_empty()
            && self.dedup.is_none()
    }

    pub fn add(&mut self, facts: &Facts, places: &Places) {
        for (name, e) in &facts.events {
            let key = format!("events.{name}");
            let doc = EventDoc {
                name: places.name(&key, name),
                id_field: e.id.as_ref().map(|id| places.name(&key, id)),
                source: e.source.as_ref().map(|s| places.name(&key, s)),
                payload: e.payload.as_ref().map(|fields| {
                    fields
                        .iter()
                        .map(|(f, ty)| (places.name(&key, f), places.name(&key, ty)))
                        .collect()
                }),
                description: e.description.clone(),
            };
            replace(&mut self.events, doc, |d| &d.name.text);
        }
        for (name, e) in &facts.effects {
            let key = format!("effects.{name}");
            let doc = EffectDoc {
                name: places.name(&key, name),
                idempotency: e.idempotency.as_ref().map(|i| places.name(&key, i)),
                verify: e.verify.as_ref().map(|v| places.name(&key, v)),
                description: e.description.clone(),
            };
            replace(&mut self.effects, doc, |d| &d.name.text);
        }
        for (name, s) in &facts.sources {
            let key = format!("sources.{name}");
            let doc = SourceDoc {
                name: places.name(&key, name),
                retry_horizon: s.retry_horizon.as_ref().map(|r| places.name(&key, r)),
                description: s.description.clone(),
            };
            replace(&mut self.sources, doc, |d| &d.name.text);
        }
        if let Some(dedup) = &facts.dedup {
            let span = places.at("dedup");
            self.dedup = Some(DedupDoc {
                retention: dedup.retention.as_ref().map(|r| Name {
                    text: r.clone(),
                    span,
                }),
                span,
            });
        }
    }
}

fn replace<T>(list: &mut Vec<T>, item: T, name: impl Fn(&T) -> &String) {
    match list.iter().position(|d| name(d) == name(&item)) {
        Some(i) => list[i] = item,
        None => list.push(item),
    }
}
