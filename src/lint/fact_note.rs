//! The declaration lints on a machine whose facts have no place
//! (`FactSource::Nowhere`: read from XState or SCXML, in a repository that
//! declares none): instead of a warning per event and per effect, which
//! the author has nowhere to answer, one note per lint and machine that
//! names what is missing and says where the facts go.

use super::{Finding, Lint};
use crate::model::{FactSource, ForeignFormat, Machine, StateId};

/// How many names a note lists before it counts the rest.
const LISTED: usize = 8;

/// The format the machine was read from, when its facts have no place.
pub(super) fn undeclared(m: &Machine) -> Option<ForeignFormat> {
    match m.fact_source {
        FactSource::Nowhere(format) => Some(format),
        FactSource::Declarations => None,
    }
}

/// Whether a finding of `lint` on `m` is such a note, reported at note
/// severity: it asks for facts, and no finding was made per fact.
pub(super) fn is_note(m: &Machine, lint: Lint) -> bool {
    undeclared(m).is_some() && matches!(lint, Lint::EffectWithoutKey | Lint::EventWithoutId)
}

/// The items joined with commas and, past `LISTED`, `and N more`.
pub(super) fn listed(items: &[String]) -> String {
    let mut out: Vec<&str> = items.iter().take(LISTED).map(String::as_str).collect();
    let more = format!("and {} more", items.len().saturating_sub(LISTED));
    if items.len() > LISTED {
        out.push(&more);
    }
    out.join(", ")
}

/// The note of `lint` at the machine's name: `message`, and the help that
/// says where facts of `section` (`events`, `effects`) go, with `example`
/// as one entry of that section in TOML (`PAY = { id = "paymentId" }`)
/// and `meaning` saying what its values mean.
pub(super) fn note(
    m: &Machine,
    format: ForeignFormat,
    lint: Lint,
    message: String,
    (section, example, meaning): (&str, String, &str),
) -> Finding {
    let help = match format {
        ForeignFormat::Xstate => format!(
            "XState has no place for these facts: declare them in idemchart.toml under `[machines.{}]` (`{section} = {{ {example} }}`) or in `meta.idemchart.{section}` on the root config, where {meaning}; each missing one is then reported on its own (docs/xstate.md, \"Idempotency facts\")",
            toml_key(&m.name)
        ),
        ForeignFormat::Scxml => format!(
            "SCXML has no place for these facts: convert the chart with `idemchart import --to yaml` and declare them under `{section}:`, where {meaning} (docs/machine-format.md)"
        ),
    };
    Finding {
        lint,
        span: m.span,
        state: StateId::ROOT,
        message,
        labels: Vec::new(),
        help: Some(help),
        witness: None,
        claim: None,
        fix: None,
    }
}

/// A TOML key for a name: bare when TOML allows it, else quoted.
pub(super) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::{listed, toml_key};

    #[test]
    fn long_lists_are_counted_past_the_first_names() {
        assert_eq!(listed(&["`A`".into(), "`B`".into()]), "`A`, `B`");
        let ten: Vec<String> = (1..=10).map(|i| format!("E{i}")).collect();
        assert_eq!(listed(&ten), "E1, E2, E3, E4, E5, E6, E7, E8, and 2 more");
    }

    #[test]
    fn toml_keys_are_quoted_only_where_needed() {
        assert_eq!(toml_key("kyc"), "kyc");
        assert_eq!(toml_key("order-flow_2"), "order-flow_2");
        assert_eq!(toml_key("send syn"), "\"send syn\"");
        assert_eq!(toml_key("a.b"), "\"a.b\"");
    }
}
