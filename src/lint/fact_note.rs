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
    use crate::diagnostic::{Diagnostic, Severity};
    use crate::import::xstate::{Settings, load};
    use crate::span::SourceFile;

    /// The findings of a v5 machine with two events, a host action and an
    /// invoked actor, `meta` written in its config.
    fn lint_xstate(meta: &str) -> Vec<Diagnostic> {
        let text = format!(
            "import {{ createMachine, fromPromise }} from 'xstate';\n\
             export const m = createMachine({{\n  id: 'orders',\n  {meta}\n  \
             initial: 'a',\n  states: {{\n    \
             a: {{ on: {{ PAY: 'b' }} }},\n    \
             b: {{ entry: 'notifyWarehouse', invoke: {{ src: 'charge', onDone: 'c' }}, on: {{ CANCEL: 'c' }} }},\n    \
             c: {{ type: 'final' }},\n  }},\n}});\n"
        );
        let mut read = load(SourceFile::new("orders.ts", text), &Settings::default());
        let machine = read.machines.remove(0).machine.expect("loads");
        crate::lint::lint(&machine)
    }

    fn codes(found: &[Diagnostic], code: &str) -> Vec<(Severity, String)> {
        found
            .iter()
            .filter(|d| d.code == code)
            .map(|d| (d.severity, d.message.clone()))
            .collect()
    }

    #[test]
    fn a_machine_without_facts_gets_one_note_per_lint_and_no_undeclared_event() {
        let found = lint_xstate("");
        assert_eq!(
            codes(&found, "I005"),
            [(
                Severity::Note,
                "machine `orders` has no idempotency facts, so nothing says whether performing \
                 `notifyWarehouse`, `charge` (invoked) again acts twice"
                    .to_string()
            )]
        );
        assert_eq!(
            codes(&found, "I006"),
            [(
                Severity::Note,
                "machine `orders` has no idempotency facts, so a redelivered `PAY`, `CANCEL` \
                 cannot be told from a new delivery"
                    .to_string()
            )]
        );
        assert!(codes(&found, "S005").is_empty(), "{found:?}");
        let help = found
            .iter()
            .find(|d| d.code == "I006")
            .and_then(|d| d.help.clone());
        assert!(
            help.is_some_and(
                |h| h.contains("`[machines.orders]`") && h.contains("meta.idemchart.events")
            ),
            "{found:?}"
        );
    }

    #[test]
    fn a_machine_with_facts_is_asked_for_each_missing_one() {
        let found = lint_xstate("meta: { idemchart: { events: { PAY: { id: 'paymentId' } } } },");
        assert_eq!(
            codes(&found, "I005")
                .iter()
                .map(|(s, _)| *s)
                .collect::<Vec<_>>(),
            [Severity::Warning, Severity::Warning]
        );
        assert_eq!(
            codes(&found, "I006").len(),
            1,
            "CANCEL has no id: {found:?}"
        );
        assert_eq!(
            codes(&found, "S005").len(),
            1,
            "CANCEL is undeclared: {found:?}"
        );
    }

    #[test]
    fn our_own_formats_keep_a_finding_per_fact() {
        let machine = crate::syntax::parse(
            "machine: m\ninitial: a\nstates:\n  a: { on: { PAY: b, CANCEL: b } }\n  b: {}\n",
            crate::syntax::Syntax::Yaml,
        )
        .expect("loads");
        let found = crate::lint::lint(&machine);
        assert_eq!(codes(&found, "S005").len(), 2, "{found:?}");
        assert!(
            found.iter().all(|d| d.severity != Severity::Note),
            "{found:?}"
        );
    }

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
