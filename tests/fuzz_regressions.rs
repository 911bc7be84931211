//! Inputs the fuzz targets in `fuzz/` (or probes beside them) found to crash,
//! hang or exhaust memory, kept in `tests/data/fuzz/TARGET/` and run here
//! the way the target runs them, so that plain `cargo test` guards the fixes
//! without a fuzzer.

use std::fs;
use std::path::PathBuf;

use idemchart::expr::{Event, Layout, Scope, Type, Value, check, compile, eval, parse};

/// The inputs kept for `target`, with their file names.
fn inputs(target: &str) -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// Expressions that nest deeper than the checker and evaluator can recurse
/// are refused by the parser with an error at the expression, not a stack
/// overflow; the limit's message names it.
#[test]
fn deep_expressions_are_refused_at_parse_time() {
    for (name, text) in inputs("expr") {
        let Err(error) = parse(&text, 0) else {
            panic!(
                "{name}: a {}-byte expression nesting this deep parsed",
                text.len()
            );
        };
        assert!(
            error.message.contains("nests more than 200 levels"),
            "{name}: {}",
            error.message
        );
    }
}

/// The same inputs cut down below the limit parse, check and evaluate: the
/// limit refuses depth, not these forms.
#[test]
fn expressions_below_the_depth_limit_still_evaluate() {
    let scope = Scope {
        context: vec![("seen", Type::List)],
        payload: None,
        guards: vec![],
    };
    let layout = Layout::new(["seen"]);
    let context = [Value::list(vec![Value::from("x")])];
    let event = Event::new("E", None, Value::map::<&str>([]));
    for text in [
        "!".repeat(150) + "true",
        "1 + ".repeat(150) + "1",
        // Brackets stay shallow here: in a debug build on a test thread's
        // 2 MiB stack the grammar itself overflows near 24 nested lists.
        "[".repeat(12) + &"]".repeat(12),
        "(".repeat(12) + "1" + &")".repeat(12),
        "size(context.seen)".to_string() + &" + 1".repeat(150),
    ] {
        let expr = parse(&text, 0).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        let _ = check(&expr, &scope);
        let compiled = compile(&expr, &layout, &|_| None);
        eval(&compiled, &context, Some(&event), &|_| false).unwrap();
    }
}

/// DSL files that nest blocks or brackets deeper than the grammar and the
/// builder can recurse get one syntax error at the bracket past the limit.
/// They load on a thread with the main thread's usual 8 MiB of stack, where
/// the grammar reads them whole and the builder used to overflow.
#[test]
fn deep_dsl_files_are_refused_with_a_position() {
    for (name, text) in inputs("dsl") {
        let result = std::thread::Builder::new()
            .stack_size(8 * 1024 * 1024)
            .spawn(move || {
                idemchart::syntax::parse(&text, idemchart::syntax::Syntax::Dsl).map(|_| ())
            })
            .unwrap()
            .join()
            .unwrap();
        let Err(errors) = result else {
            panic!("{name}: a file nesting this deep loaded");
        };
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        let message = &errors[0].message;
        assert!(
            message.contains("more than 200 levels"),
            "{name}: {message}"
        );
        assert!(errors[0].span.start > 0, "{name}: {:?}", errors[0].span);
    }
}

/// SCXML documents whose elements or JavaScript conditions nest deeper than
/// the importer can recurse are refused with an error, not a stack overflow.
#[test]
fn deep_scxml_documents_are_refused() {
    for (name, text) in inputs("scxml") {
        let result = std::thread::Builder::new()
            .stack_size(8 * 1024 * 1024)
            .spawn(move || idemchart::import::load_scxml(&text).map(|_| ()))
            .unwrap()
            .join()
            .unwrap();
        let Err(errors) = result else {
            panic!("{name}: a document nesting this deep imported");
        };
        assert!(
            errors.iter().any(|e| e.message.contains("more than 200")),
            "{name}: {errors:?}"
        );
    }
}
