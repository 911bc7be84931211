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
    for text in [
        "!".repeat(150) + "true",
        "1 + ".repeat(150) + "1",
        "[".repeat(150) + &"]".repeat(150),
        "(".repeat(150) + "1" + &")".repeat(150),
        "size(context.seen)".to_string() + &" + 1".repeat(150),
    ] {
        parse_check_and_evaluate(&text);
    }
}

/// Parses, checks, compiles and evaluates `text` over a context with a list
/// `seen`.
fn parse_check_and_evaluate(text: &str) {
    let scope = Scope {
        context: vec![("seen", Type::List)],
        payload: None,
        guards: vec![],
    };
    let layout = Layout::new(["seen"]);
    let context = [Value::list(vec![Value::from("x")])];
    let event = Event::new("E", None, Value::map::<&str>([]));
    let expr = parse(text, 0).unwrap_or_else(|e| panic!("{}…: {e:?}", &text[..20]));
    let _ = check(&expr, &scope);
    let compiled = compile(&expr, &layout, &|_| None);
    eval(&compiled, &context, Some(&event), &|_| false).unwrap();
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

/// Event bodies whose numbers serde_json read one unit in the last place
/// off (without its `float_roundtrip` feature): the double the machine got
/// was not the one written, and the event written back read as another.
/// Each number is read as Rust's exact `str::parse` reads it, and the event
/// written back (`Value::to_json`) reads back equal.
#[test]
fn event_numbers_read_exactly_and_back() {
    let machine = idemchart::syntax::parse(
        "machine: m\ninitial: a\nstates:\n  a: {}\n",
        idemchart::syntax::Syntax::Yaml,
    )
    .unwrap();
    fn doubles(value: &serde_json::Value, out: &mut Vec<f64>) {
        match value {
            serde_json::Value::Number(n) if n.as_i64().is_none() => out.push(n.as_f64().unwrap()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| doubles(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| doubles(v, out)),
            _ => {}
        }
    }
    for (name, text) in inputs("serve") {
        let event = idemchart::runtime::parse_event(&text, &machine, Some("k"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut read = Vec::new();
        doubles(&event.data.to_json(), &mut read);
        let exact: Vec<f64> = text
            .split(|c: char| !(c.is_ascii_digit() || "+-.e".contains(c)))
            .filter(|word| word.contains(|c: char| c.is_ascii_digit()))
            .map(|word| word.parse::<f64>().unwrap())
            .collect();
        assert_eq!(read, exact, "{name}");
        let written = serde_json::json!({"type": &*event.name, "data": event.data.to_json()});
        let again =
            idemchart::runtime::parse_event(&written.to_string(), &machine, Some("k")).unwrap();
        assert_eq!(again.data, event.data, "{name}: written back as {written}");
    }
}

/// Loads `text` as the XState file `name` on a thread with a test's 2 MiB
/// of stack, and gives back its errors.
fn xstate_errors(name: &str, text: String) -> Vec<idemchart::Diagnostic> {
    let path = format!("/nonexistent/fuzz/{name}");
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let loaded = idemchart::import::xstate::load(
                idemchart::span::SourceFile::new(path, text),
                &Default::default(),
            );
            loaded.errors
        })
        .unwrap()
        .join()
        .unwrap()
}

/// Scripts and JSON files nesting brackets, templates, arrows, prefix or
/// right-nested operators deeper than oxc's parser recurses (about 100,000
/// levels overflowed it even on 8 MiB) are refused before oxc reads them,
/// with one error at the token past the limit. The kept files pass it by
/// one level; the same forms 100,000 deep are made here.
#[test]
fn deep_scripts_are_refused_before_oxc_reads_them() {
    let head = "import { createMachine } from 'xstate';\nconst x = ";
    let tail = ";\nexport const m = createMachine({ id: 'm', initial: 'a', states: { a: {} } });\n";
    let n = 100_000;
    let mut cases = inputs("xstate");
    for (name, body) in [
        ("parens.ts", "(".repeat(n) + "1" + &")".repeat(n)),
        ("lists.ts", "[".repeat(n) + &"]".repeat(n)),
        ("templates.ts", "`${".repeat(n) + "1" + &"}`".repeat(n)),
        ("arrows.ts", "() => ".repeat(n) + "1"),
        ("nots.ts", "!".repeat(n) + "1"),
        ("assignments.ts", "y = ".repeat(n) + "1"),
        ("conditionals.ts", "c ? 1 : ".repeat(n) + "1"),
    ] {
        cases.push((format!("{n}-{name}"), format!("{head}{body}{tail}")));
    }
    // A JSON file is read when it may hold a machine config.
    cases.push((
        format!("{n}-lists.json"),
        format!("{{\"states\": {}{}}}", "[".repeat(n), "]".repeat(n)),
    ));
    for (name, text) in cases {
        // The deep part starts after `const x = ` (or at once, in JSON).
        let deep_from = text.find("const x = ").map_or(0, |at| at + 10);
        let len = text.len();
        let errors = xstate_errors(&name, text);
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        assert_eq!(
            errors[0].message, "the file nests more than 500 levels deep",
            "{name}"
        );
        let at = errors[0].span.start as usize;
        assert!(at > deep_from && at < len, "{name}: {:?}", errors[0].span);
    }
}

/// Runs `f` on a thread with the 2 MiB of stack a test's thread (or a
/// tokio worker) has.
fn on_2_mib(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// The deepest expressions the limits accept parse, check, compile and
/// evaluate on a 2 MiB thread, in a debug build too, where the grammar and
/// the builder take over 100 KiB a bracket: the parser grows the stack for
/// the levels it meets.
#[test]
fn the_deepest_accepted_expressions_evaluate_on_a_2_mib_thread() {
    on_2_mib(|| {
        for text in [
            "[".repeat(200) + &"]".repeat(200),
            "(".repeat(200) + "1" + &")".repeat(200),
            "{\"k\": ".repeat(199) + "1" + &"}".repeat(199),
            "true ? 1 : ".repeat(199) + "2",
            "!".repeat(199) + "true",
            "size(context.seen)".to_string() + &" + 1".repeat(197),
        ] {
            parse_check_and_evaluate(&text);
        }
    });
}

/// The deepest DSL, YAML and SCXML machines the limits accept load and
/// start on a 2 MiB thread: DSL states, context lists and guards nesting to
/// 200 levels with their blocks, YAML to its 64 levels (31 states), SCXML
/// states and conditions to 200.
#[test]
fn the_deepest_accepted_machines_load_on_a_2_mib_thread() {
    use idemchart::syntax::{Syntax, parse};
    on_2_mib(|| {
        let mut states = "machine m\ninitial s0\n".to_string();
        for i in 0..199 {
            states += &format!("state s{i} {{\ninitial s{}\n", i + 1);
        }
        states += "state s199 {}\n";
        states += &"}\n".repeat(199);
        let list = format!(
            "machine m\ncontext {{ x = {}{} }}\ninitial a\nstate a {{}}\n",
            "[".repeat(199),
            "]".repeat(199)
        );
        let guard = format!(
            "machine m\ncontext {{ x = true }}\ninitial a\nstate a {{ on E -> a if {}context.x{} }}\n",
            "(".repeat(198),
            ")".repeat(198)
        );
        let mut yaml = "machine: m\ninitial: s0\nstates:\n".to_string();
        for i in 0..31 {
            let pad = "  ".repeat(2 * i + 1);
            yaml += &format!("{pad}s{i}:\n");
            if i < 30 {
                yaml += &format!("{pad}  initial: s{}\n{pad}  states:\n", i + 1);
            }
        }
        let yaml_guard = format!(
            "machine: m\ncontext: {{ x: true }}\ninitial: a\nstates:\n  a: {{ on: {{ E: {{ target: a, guard: \"{}context.x{}\" }} }} }}\n",
            "(".repeat(199),
            ")".repeat(199)
        );
        for (name, text, syntax) in [
            ("states", states, Syntax::Dsl),
            ("list", list, Syntax::Dsl),
            ("guard", guard, Syntax::Dsl),
            ("yaml states", yaml, Syntax::Yaml),
            ("yaml guard", yaml_guard, Syntax::Yaml),
        ] {
            let machine = parse(&text, syntax).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            start(name, machine);
        }
        // SCXML: states 199 deep, and a condition whose translation nests
        // to the limit: `x + 1 + … > 0` with 197 additions is the longest
        // that translates.
        let scxml =
            "<scxml xmlns=\"http://www.w3.org/2005/07/scxml\" version=\"1.0\" initial=\"s0\">";
        let mut states = scxml.to_string();
        for i in 0..199 {
            states += &format!("<state id=\"s{i}\">");
        }
        states += &"</state>".repeat(199);
        states += "</scxml>";
        let cond = format!(
            "{}<datamodel><data id=\"x\" expr=\"1\"/></datamodel><state id=\"a\"><transition event=\"E\" target=\"a\" cond=\"x{} &gt; 0\"/></state></scxml>",
            scxml.replace("s0", "a"),
            " + 1".repeat(197)
        );
        for (name, text) in [("scxml states", states), ("scxml cond", cond)] {
            let machine =
                idemchart::import::load_scxml(&text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            start(name, machine);
        }
    });
}

fn start(name: &str, machine: idemchart::Machine) {
    let chart = std::sync::Arc::new(idemchart::interp::Chart::new(machine));
    let actor = idemchart::interp::Actor::new(chart);
    assert!(!actor.snapshot().configuration.is_empty(), "{name}");
}

/// Expressions within the limits that the `expr` target found to overflow
/// the stack: a run of 192 `-` prints with a parenthesis for each, and
/// reading that back took a fuzzing build's 8 MiB, whose AddressSanitizer
/// frames the stack growth had not counted. Each parses, prints, and reads
/// back to the same text, on a 2 MiB thread.
#[test]
fn deep_accepted_expressions_print_and_read_back() {
    for (name, text) in inputs("expr-accepted") {
        on_2_mib(move || {
            let expr = parse(&text, 0).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let printed = expr.to_string();
            let reparsed = parse(&printed, 0).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(reparsed.to_string(), printed, "{name}");
        });
    }
}

/// Machines of the `machines` target that took seconds under
/// AddressSanitizer (`fuzz/slow/`, written out as YAML): their lint's
/// replays stay within the lint run's work budget, which is counted in the
/// interpreter's microsteps, never timed. The budget is checked before each send of a
/// search and each step of a witness, so the sends after the last check
/// (at most ten, of at most 1,000 microsteps each) may pass it.
#[test]
fn machines_whose_sends_loop_are_linted_within_the_replay_budget() {
    use idemchart::lint::{REPLAY_WORK, lint_counting_replay_work};
    for (name, text) in inputs("machines") {
        let machine = idemchart::syntax::parse(&text, idemchart::syntax::Syntax::Yaml)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let (findings, work) = lint_counting_replay_work(&machine, &Default::default());
        assert!(work <= REPLAY_WORK + 10_000, "{name}: {work} microsteps");
        use idemchart::Verdict::{Confirmed, NotShown};
        let verdicts: Vec<(&str, Option<idemchart::Verdict>)> =
            findings.iter().map(|d| (d.code, d.verdict)).collect();
        // The searches stop at half the budget, so the loop's witness,
        // replayed after them, is still confirmed; the one finding whose
        // search that stopped is not shown (a note), not refuted.
        let expected: &[(&str, Option<idemchart::Verdict>)] = match name.as_str() {
            "lint-replay.yaml" => &[
                ("I001", Some(Confirmed)),
                ("I001", Some(Confirmed)),
                ("I004", Some(Confirmed)),
                ("I004", Some(Confirmed)),
                ("I003", Some(Confirmed)),
                ("I001", Some(NotShown)),
                ("S006", Some(Confirmed)),
            ],
            "loop-grows-context.yaml" => &[
                ("I001", Some(Confirmed)),
                ("I001", Some(Confirmed)),
                ("S006", Some(Confirmed)),
                ("S003", None),
            ],
            other => panic!("{other}: no findings written down for it"),
        };
        assert_eq!(verdicts, expected, "{name}");
    }
}

/// The machine of a `machines` input that passed the timeout: a `D` loops,
/// growing `seen` by every turn. Its `limits` (which the target now writes)
/// stop the step at 1,000 microsteps, in memory and in the durable apply,
/// which answers both deliveries with the same error and writes nothing.
#[test]
fn a_loop_that_grows_the_context_stops_at_the_machines_microsteps() {
    use std::sync::Arc;

    use idemchart::interp::{Actor, Chart};
    let (_, text) = inputs("machines")
        .into_iter()
        .find(|(name, _)| name == "loop-grows-context.yaml")
        .expect("the kept machine");
    let machine = idemchart::syntax::parse(&text, idemchart::syntax::Syntax::Yaml).unwrap();
    let chart = Arc::new(Chart::new(machine));
    assert_eq!(chart.microstep_limit(), 1_000);
    let event = Event::new(
        "D",
        Some(Value::from("k2")),
        Value::map([("k", Value::from("k2")), ("v", Value::Int(3))]),
    );
    let mut actor = Actor::new(Arc::clone(&chart));
    let step = actor.send(&event);
    let unsettled = step.unsettled.as_ref().expect("the loop does not settle");
    assert_eq!(unsettled.limit, 1_000);

    let mut store = idemchart::store::SqliteStore::in_memory().unwrap();
    let now = 1_700_000_000_000;
    let first = idemchart::runtime::apply_at(&mut store, &chart, "p", &event, now);
    let second = idemchart::runtime::apply_at(&mut store, &chart, "p", &event, now);
    let (Err(first), Err(second)) = (first, second) else {
        panic!("an unsettled step is an error");
    };
    assert_eq!(first.to_string(), second.to_string());
}
