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
        FactSource::Declarations | FactSource::XstateDeclarations => None,
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
/// says where facts of `section` (`events`, `effects`) go, with one entry
/// `key` of `fields` as the example of their shape (`PAY` with `id`) and
/// `meaning` saying what its values mean.
pub(super) fn note(
    m: &Machine,
    format: ForeignFormat,
    lint: Lint,
    message: String,
    (section, key, fields, meaning): (&str, &str, &[(&str, &str)], &str),
) -> Finding {
    let help = match format {
        ForeignFormat::Xstate => format!(
            "XState has no place for these facts: declare them {}, where {meaning}; each missing one is then reported on its own (docs/xstate.md, \"Idempotency facts\")",
            xstate_shapes(&m.name, section, key, fields)
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

/// Whether the machine was read from XState, whose author declares facts
/// beside its config rather than at the top of a machine file.
pub(super) fn from_xstate(m: &Machine) -> bool {
    matches!(
        m.fact_source,
        FactSource::XstateDeclarations | FactSource::Nowhere(ForeignFormat::Xstate)
    )
}

/// For a machine read from XState, where one entry of the facts'
/// `section` (`events`, `effects`) is written, with its exact shape:
/// `key` with `fields` (a field and its text value each), in
/// `meta.idemchart` of the machine config or in idemchart.toml, both
/// written out. `None` for a machine file, whose findings say
/// ``under `events:` ``.
pub(super) fn xstate_place(
    m: &Machine,
    section: &str,
    key: &str,
    fields: &[(&str, &str)],
) -> Option<String> {
    from_xstate(m).then(|| xstate_shapes(&m.name, section, key, fields))
}

/// ``in `meta.idemchart.events` of the machine config (`meta: { … }`) or
/// in idemchart.toml under `[machines.ID]` (`events = { … }`)``.
fn xstate_shapes(machine: &str, section: &str, key: &str, fields: &[(&str, &str)]) -> String {
    let join = |field: &dyn Fn(&str, &str) -> String| {
        fields
            .iter()
            .map(|(f, v)| field(f, v))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "in `meta.idemchart.{section}` of the machine config (`meta: {{ idemchart: {{ {section}: {{ {}: {{ {} }} }} }} }}`) or in idemchart.toml under `[machines.{}]` (`{section} = {{ {} = {{ {} }} }}`)",
        js_key(key),
        join(&|f, v| format!("{f}: '{v}'")),
        toml_key(machine),
        toml_key(key),
        join(&|f, v| format!("{f} = \"{v}\"")),
    )
}

/// A JavaScript property key for a name: bare when it is an identifier,
/// else quoted.
fn js_key(name: &str) -> String {
    if crate::import::xstate::edit::is_identifier(name) {
        name.to_string()
    } else {
        format!("'{}'", name.replace('\\', "\\\\").replace('\'', "\\'"))
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

    /// Once the repository declares facts, each missing one is asked for
    /// where an XState author writes it: in `meta.idemchart` of the
    /// machine config or in idemchart.toml, with both shapes, never under
    /// the machine format's `events:` or `effects:`.
    #[test]
    fn an_xstate_machine_is_told_to_declare_where_its_author_writes_facts() {
        let found = lint_xstate("meta: { idemchart: { events: { PAY: { id: 'paymentId' } } } },");
        let help = |code: &str| -> Vec<String> {
            found
                .iter()
                .filter(|d| d.code == code)
                .filter_map(|d| d.help.clone())
                .collect()
        };
        let s005 = found.iter().find(|d| d.code == "S005").expect("S005");
        assert_eq!(
            s005.message,
            "event `CANCEL` is not declared in `meta.idemchart.events` or idemchart.toml and the machine does not raise it"
        );
        assert_eq!(
            help("S005"),
            [
                "declare it with its `id` field in `meta.idemchart.events` of the machine config \
              (`meta: { idemchart: { events: { CANCEL: { id: 'FIELD' } } } }`) or in idemchart.toml \
              under `[machines.orders]` (`events = { CANCEL = { id = \"FIELD\" } }`)"
            ]
        );
        assert!(
            help("I005").iter().any(|h| h.starts_with(
                "declare `notifyWarehouse` in `meta.idemchart.effects` of the machine config \
                 (`meta: { idemchart: { effects: { notifyWarehouse: { idempotency: 'key' } } } }`) \
                 or in idemchart.toml under `[machines.orders]` \
                 (`effects = { notifyWarehouse = { idempotency = \"key\" } }`)"
            )),
            "{found:?}"
        );
        for d in &found {
            let text = format!("{} {}", d.message, d.help.clone().unwrap_or_default());
            assert!(
                !text.contains("under `events:`") && !text.contains("under `effects:`"),
                "{d:?}"
            );
        }
    }

    /// An action written in place is named where it is written, never by
    /// the name made up for it, and the help says how to give it a name to
    /// declare.
    #[test]
    fn an_action_written_in_place_is_named_by_its_place() {
        let text = "import { createMachine } from 'xstate';\n\
                    export const m = createMachine({\n  id: 'orders',\n  initial: 'a',\n  \
                    states: {\n    a: { entry: ['notifyWarehouse', () => track('a')], on: { PAY: 'b' } },\n    \
                    b: {},\n  },\n});\n";
        let mut read = load(SourceFile::new("src/orders.ts", text), &Settings::default());
        let machine = read.machines.remove(0).machine.expect("loads");
        let found = crate::lint::lint(&machine);
        let note = found.iter().find(|d| d.code == "I005").expect("I005");
        assert_eq!(
            note.message,
            "machine `orders` has no idempotency facts, so nothing says whether performing \
             `notifyWarehouse`, the action written at src/orders.ts:6:37 again acts twice"
        );
        let help = note.help.clone().unwrap_or_default();
        assert!(
            help.contains("notifyWarehouse: { idempotency: 'key' }"),
            "{help}"
        );
        assert!(
            help.contains("an action or actor written in place has no name"),
            "{help}"
        );
        for d in &found {
            assert!(!format!("{d:?}").contains("inline_L"), "{d:?}");
        }
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
