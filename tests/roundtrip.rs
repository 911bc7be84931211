//! Every model survives model → YAML → model and model → DSL → model.

use crate::common;

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
    let migrating = |f: fn(&idemchart::model::Migration) -> bool| {
        machines
            .iter()
            .filter(|m| m.migrations.iter().any(f))
            .count()
    };
    assert!(migrating(|m| !m.states.is_empty()) > 10);
    assert!(migrating(|m| !m.context.is_empty()) > 10);
    assert!(migrating(|m| m.timers.is_some() && m.history.is_some()) > 10);
    assert!(migrating(|m| m.outbox.is_some()) > 10);
}

/// The machine files of the repository: the shipped machines, the examples,
/// the lint fixtures and the spec's pairs.
fn corpus() -> Vec<(std::path::PathBuf, Syntax)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Syntax)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() {
                walk(&path, out);
            } else if let Some(syntax) = Syntax::of_path(&path) {
                out.push((path, syntax));
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["machines", "examples", "tests/lints", "tests/data/spec"] {
        walk(std::path::Path::new(dir), &mut files);
    }
    files
}

/// A text's machine and its comments, in the order of the text.
fn read(text: &str, syntax: Syntax, what: &str) -> (idemchart::Machine, Vec<String>) {
    let machine = syntax::parse(text, syntax)
        .unwrap_or_else(|e| panic!("{what} does not load:\n{text}\n{e:#?}"));
    let file = idemchart::span::SourceFile::new("", text);
    let comments = syntax::comments(&file, syntax, &machine);
    let texts = comments.texts().into_iter().map(String::from).collect();
    (machine, texts)
}

/// `fmt` of every machine file of the repository, to its own syntax and to
/// the other, keeps every comment in order and the model; formatting the
/// output again changes nothing, and converting it back keeps both too.
#[test]
fn fmt_keeps_the_comments_and_models_of_the_corpus() {
    let mut files = 0;
    let mut commented = 0;
    for (path, from) in corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        // Lint fixtures include files that do not load, on purpose.
        if syntax::parse(&text, from).is_err() {
            continue;
        }
        let name = path.display().to_string();
        let (machine, comments) = read(&text, from, &name);
        let file = idemchart::span::SourceFile::new("", text.as_str());
        let attached = syntax::comments(&file, from, &machine);
        files += 1;
        commented += usize::from(!comments.is_empty());
        for to in [Syntax::Yaml, Syntax::Dsl] {
            let what = format!("{name} --to {to:?}");
            let out = syntax::format(&machine, to, &attached);
            let (out_machine, out_comments) = read(&out, to, &what);
            assert_eq!(out_machine, machine, "{what}:\n{out}");
            assert_eq!(out_comments, comments, "{what}:\n{out}");

            let out_file = idemchart::span::SourceFile::new("", out.as_str());
            let out_attached = syntax::comments(&out_file, to, &out_machine);
            let again = syntax::format(&out_machine, to, &out_attached);
            assert_eq!(again, out, "{what}: formatting the output changes it");

            let back = syntax::format(&out_machine, from, &out_attached);
            let (back_machine, back_comments) = read(&back, from, &what);
            assert_eq!(back_machine, machine, "{what} and back:\n{back}");
            assert_eq!(back_comments, comments, "{what} and back:\n{back}");
        }
    }
    // Below what the corpus held when this was written, so that a walk that
    // lost its directories fails rather than passes on nothing.
    assert!(files >= 40, "{files} machine files read");
    assert!(commented >= 5, "{commented} files with comments");
}

/// A duration keeps the unit it was written in, in both syntaxes, where the
/// model holds only its length.
#[test]
fn durations_keep_their_units() {
    let yaml = "machine: m\nsources:\n  s: { retry_horizon: 72h }\ndedup: { retention: 90s }\ninitial: a\nstates:\n  a:\n    after:\n      120m: b\n  b: {}\n";
    let machine = syntax::parse(yaml, Syntax::Yaml).unwrap();
    let dsl = syntax::dsl::format(&machine);
    for written in ["retry 72h", "retention 90s", "after 120m"] {
        assert!(dsl.contains(written), "{written}:\n{dsl}");
    }
    let back = syntax::parse(&dsl, Syntax::Dsl).unwrap();
    assert_eq!(back, machine);
    assert_eq!(syntax::yaml::format(&back), yaml);
}
