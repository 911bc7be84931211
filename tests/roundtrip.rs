//! Every model survives model → YAML → model and model → DSL → model.

mod common;

use idemchart::syntax::{self, Syntax};
use proptest::prelude::*;

#[track_caller]
fn check(seed: u64) {
    let machine = common::machine(seed);
    for (syntax, text) in [
        (Syntax::Yaml, syntax::yaml::format(&machine)),
        (Syntax::Dsl, syntax::dsl::format(&machine)),
    ] {
        let back = syntax::parse(&text, syntax)
            .unwrap_or_else(|e| panic!("seed {seed}, {syntax:?}:\n{text}\n{e:#?}"));
        assert_eq!(back, machine, "seed {seed}, {syntax:?}:\n{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn random_models_survive_both_syntaxes(seed in any::<u64>()) {
        check(seed);
    }
}

#[test]
fn the_spec_pairs_are_equal_models() {
    for name in ["pedido", "lampara"] {
        let yaml = std::fs::read_to_string(format!("tests/data/spec/{name}.yaml")).unwrap();
        let dsl = std::fs::read_to_string(format!("tests/data/spec/{name}.chart")).unwrap();
        let from_yaml = syntax::parse(&yaml, Syntax::Yaml).unwrap();
        let from_dsl = syntax::parse(&dsl, Syntax::Dsl).unwrap();
        assert_eq!(from_yaml, from_dsl, "{name}");
        assert_eq!(
            syntax::yaml::format(&from_yaml),
            syntax::yaml::format(&from_dsl),
            "{name}"
        );
    }
}

#[test]
fn random_models_are_varied() {
    use idemchart::model::StateKind;
    let machines: Vec<_> = (0..200).map(common::machine).collect();
    let kinds = |k: fn(&StateKind) -> bool| {
        machines
            .iter()
            .filter(|m| m.states.iter().any(|s| k(&s.kind)))
            .count()
    };
    assert!(kinds(|k| *k == StateKind::Parallel) > 10);
    assert!(kinds(|k| matches!(k, StateKind::History(_))) > 10);
    assert!(kinds(|k| *k == StateKind::Final) > 10);
    assert!(machines.iter().filter(|m| m.transitions.len() > 5).count() > 50);
}
