//! The JSON Schema of the YAML format accepts every machine the project ships
//! and rejects malformed ones.

use crate::common;

use std::path::{Path, PathBuf};

use idemchart::schema::MACHINE_SCHEMA;
use idemchart::syntax;
use proptest::prelude::*;
use serde_json::Value;

/// The compiled schema, built once per test binary.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(MACHINE_SCHEMA).expect("the schema is JSON");
        jsonschema::meta::validate(&schema).expect("the schema is a valid draft 2020-12 schema");
        jsonschema::validator_for(&schema).expect("the schema compiles")
    })
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str::<Value>(text).expect("the test document is YAML")
}

/// The errors, one per line, with the place in the document each is about.
fn errors(validator: &jsonschema::Validator, document: &Value) -> Vec<String> {
    validator
        .iter_errors(document)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_machine_matches_the_schema() {
    let validator = validator();
    let mut checked = 0;
    for dir in ["tests/data/spec", "tests/data/hazards", "machines"] {
        let files = yaml_files(dir);
        assert!(!files.is_empty(), "no YAML machine in {dir}");
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable machine file");
            let document = serde_saphyr::from_str::<Value>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let found = errors(validator, &document);
            assert!(
                found.is_empty(),
                "{}:\n{}",
                path.display(),
                found.join("\n")
            );
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} machines checked");
}

/// The version fixtures, whose new and fixed machines declare migrations,
/// match the schema; a migration without `from`, or with a word other than
/// `keep` or `drop`, does not.
#[test]
fn migrations_match_the_schema() {
    let validator = validator();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/versions");
    let mut with_migrations = 0;
    for dir in std::fs::read_dir(&root).expect("tests/versions") {
        let dir = dir.expect("an entry").path();
        for name in ["old.yaml", "new.yaml", "fixed.yaml"] {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            with_migrations += usize::from(text.contains("migrations:"));
            let found = errors(validator, &yaml(&text));
            assert!(
                found.is_empty(),
                "{}/{name}:\n{}",
                dir.display(),
                found.join("\n")
            );
        }
    }
    assert!(
        with_migrations >= 4,
        "only {with_migrations} files declare migrations"
    );
    for bad in [
        "machine: m\nmigrations: [{ states: { a: b } }]\n",
        "machine: m\nmigrations: [{ from: 1, timers: later }]\n",
        "machine: m\nmigrations: { from: 1 }\n",
    ] {
        assert!(!errors(validator, &yaml(bad)).is_empty(), "{bad}");
    }
}

const VALID: &str = r#"
machine: m
dedup: { retention: 7d }
events:
  GO: { id: goId }
initial: a
states:
  a:
    on:
      GO: b
  b: { type: final }
"#;

#[test]
fn the_base_of_the_malformed_cases_is_valid() {
    let validator = validator();
    assert_eq!(errors(validator, &yaml(VALID)), Vec::<String>::new());
}

/// Each case changes the valid document in one place; the schema must reject
/// it and point at that place.
#[test]
fn malformed_documents_are_rejected() {
    let cases: [(&str, &str, &str, &str); 12] = [
        ("unknown top-level key", "dedup:", "dedupe:", ""),
        (
            "unknown state key",
            "  a:\n",
            "  a:\n    entri: [x]\n",
            "/states/a",
        ),
        (
            "bad duration",
            "retention: 7d",
            "retention: 7 days",
            "/dedup/retention",
        ),
        (
            "duration unit",
            "retention: 7d",
            "retention: 7w",
            "/dedup/retention",
        ),
        (
            "wrong type for the id",
            "id: goId",
            "id: [goId]",
            "/events/GO/id",
        ),
        (
            "state type",
            "type: final",
            "type: terminal",
            "/states/b/type",
        ),
        ("target must be a name", "GO: b", "GO: 3", "/states/a/on/GO"),
        (
            "unknown action key",
            "GO: b",
            "GO: { actions: [ { asign: { x: 1 } } ] }",
            "/states/a/on/GO",
        ),
        (
            "raise without its event",
            "GO: b",
            "GO: { actions: [ { data: { x: 1 } } ] }",
            "/states/a/on/GO",
        ),
        (
            "after key is a duration",
            "      GO: b",
            "      GO: b\n    after:\n      soon: b",
            "/states/a/after",
        ),
        (
            "history outside a history state",
            "b: { type: final }",
            "b: { history: deep }",
            "/states/b",
        ),
        (
            "allow names a lint",
            "  a:\n",
            "  a:\n    allow: { no-such-lint: because }\n",
            "/states/a/allow",
        ),
    ];
    let validator = validator();
    for (what, from, to, place) in cases {
        assert!(VALID.contains(from), "{what}: the base has no {from:?}");
        let document = yaml(&VALID.replacen(from, to, 1));
        let found = errors(validator, &document);
        assert!(!found.is_empty(), "{what}: accepted");
        assert!(
            found.iter().any(|e| e.starts_with(&format!("{place}: "))),
            "{what}: no error at {place:?}: {found:?}"
        );
    }
}

#[test]
fn effects_take_a_known_idempotency() {
    let validator = validator();
    let with = |effects: &str| yaml(&format!("{VALID}effects:\n{effects}\n"));
    assert!(errors(validator, &with("  charge: { idempotency: key }")).is_empty());
    assert!(
        errors(
            validator,
            &with("  charge: { idempotency: none, verify: checking }")
        )
        .is_empty()
    );
    assert!(!errors(validator, &with("  charge: { idempotency: maybe }")).is_empty());
    // Without `idempotency` the loader takes `none`.
    assert!(errors(validator, &with("  charge: { verify: checking }")).is_empty());
    assert!(!errors(validator, &with("  charge: { idempotent: key }")).is_empty());
}

/// The shorthand forms the YAML front-end accepts: an empty state, one action
/// without a list, a list mixing target names and transitions, a YAML number
/// as an expression, several targets, empty maps.
#[test]
fn shorthand_forms_are_accepted() {
    let document = yaml(
        r#"
machine: short
context: { n: 0 }
events:
  GO:
  STOP: { id: stopId }
initial: a
states:
  a:
    entry: bump
    exit:
    on:
      GO:
        - b
        - { target: [b], guard: "context.n > 1", actions: { assign: { n: 0 } } }
      STOP: { actions: [ { log: '"stop"' }, { raise: GO, data: { x: 1 } }, { cancel: t1 } ] }
    always:
    after:
      500ms: b
  b:
    entry:
      - { send: GO, data: { x: "1" }, delay: 5s, id: t1 }
  h: { type: history, history: deep, target: a }
  p:
    type: parallel
    states:
      r1: { initial: x, states: { x: } }
      r2: { initial: z, states: { z: {} } }
"#,
    );
    let validator = validator();
    assert_eq!(errors(validator, &document), Vec::<String>::new());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Whatever the YAML printer writes for a valid machine, the schema accepts.
    #[test]
    fn printed_random_machines_match_the_schema(seed in any::<u64>()) {
        let text = syntax::yaml::format(&common::machine(seed));
        let document = serde_saphyr::from_str::<Value>(&text).expect("the printer writes YAML");
        let found = errors(validator(), &document);
        prop_assert!(found.is_empty(), "seed {}:\n{}\n{}", seed, text, found.join("\n"));
    }
}
