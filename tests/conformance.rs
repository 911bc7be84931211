//! SCXML conformance: every test of the SCION suite (with the W3C tests in
//! `w3c-ecma`) in `tests/data/scion`, imported and run in the interpreter.
//!
//! A test is `X.scxml` with `X.json`: the active atomic states after the start
//! and after each event. Each event may say `after: N`: the virtual clock
//! moves N milliseconds on (firing what falls due) before the event is sent;
//! an event with an empty name only moves the clock. The FULL set of active
//! atomic states, by SCXML id, must equal the expected set at every step.
//!
//! W3C tests are judged by where they end, `pass`: a W3C test without events
//! runs to completion (the clock moves on until no timer is left), and the
//! configuration SCION's runner saw right after the start is not compared,
//! because SCION samples it before the events a machine sends itself at the
//! start are processed, and the actor processes them as part of the start.
//!
//! `tests/conformance-report.md` lists the results per group and the reason
//! for every test that does not pass. The test compares the report with what
//! it finds; `IDEMCHART_WRITE_CONFORMANCE=1` writes it anew instead. The test
//! fails when a required test fails (those that need no JavaScript, listed
//! below), or when the report is out of date.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use idemchart::SourceFile;
use idemchart::expr::Event;
use idemchart::import::load_scxml;
use idemchart::interp::{Actor, Chart, Status};

/// Groups whose every test must pass.
const REQUIRED_GROUPS: [&str; 16] = [
    "actionSend",
    "atom3-basic-tests",
    "basic",
    "default-initial-state",
    "delayedSend",
    "documentOrder",
    "hierarchy",
    "hierarchy+documentOrder",
    "in",
    "misc",
    "multiple-events-per-transition",
    "parallel",
    "parallel+interrupt",
    "scxml-prefix-event-name-matching",
    "history",
    "more-parallel",
];

/// Tests of the required groups that need JavaScript (`<datamodel>`, `<assign>`).
const NOT_REQUIRED: [&str; 3] = [
    "history/history6",
    "more-parallel/test10",
    "more-parallel/test10b",
];

/// W3C tests that need no JavaScript, all required.
const REQUIRED_W3C: [u32; 30] = [
    144, 189, 193, 194, 199, 200, 310, 348, 355, 364, 375, 377, 387, 399, 404, 405, 406, 411, 412,
    413, 416, 417, 419, 421, 436, 451, 495, 496, 521, 576,
];

/// Why a test that does not pass is expected not to, where that is not the
/// importer's message: shown beside it in the report.
const NOTES: [(&str, &str); 2] = [
    ("more-parallel/test10", PARALLEL_DOMAIN),
    ("more-parallel/test10b", PARALLEL_DOMAIN),
];
const PARALLEL_DOMAIN: &str = "SCION expects the transition `a -> a` inside the parallel state `p` to \
     exit and re-enter `a` alone; W3C SCXML's `findLCCA` (Appendix D) looks only at compound \
     ancestors, so `p` is exited and re-entered too, as the interpreter does";

const SUITE: &str = "tests/data/scion";
const REPORT: &str = "tests/conformance-report.md";

struct Case {
    /// `basic/basic1`, `w3c-ecma/test144.txml`, `test-ext/node/require/require`.
    name: String,
    group: String,
    scxml: PathBuf,
    json: PathBuf,
}

impl Case {
    fn required(&self) -> bool {
        if NOT_REQUIRED.contains(&self.name.as_str()) {
            return false;
        }
        if REQUIRED_GROUPS.contains(&self.group.as_str()) {
            return true;
        }
        self.group == "w3c-ecma"
            && REQUIRED_W3C
                .iter()
                .any(|n| self.name == format!("w3c-ecma/test{n}.txml"))
    }
}

#[derive(Debug)]
enum Outcome {
    Pass,
    /// The document does not import: the first error, at line:col.
    Unsupported(String),
    /// It imports, and a step ends in other states than expected.
    Mismatch(String),
}

#[derive(serde::Deserialize)]
struct Expectation {
    #[serde(rename = "initialConfiguration")]
    initial: Vec<String>,
    events: Vec<Step>,
}

#[derive(serde::Deserialize)]
struct Step {
    event: EventName,
    after: Option<u64>,
    #[serde(rename = "nextConfiguration")]
    next: Vec<String>,
}

#[derive(serde::Deserialize)]
struct EventName {
    name: String,
}

fn cases() -> Vec<Case> {
    let mut jsons = Vec::new();
    collect_json(Path::new(SUITE), &mut jsons);
    jsons.sort();
    jsons
        .into_iter()
        .map(|json| {
            let relative = json
                .strip_prefix(SUITE)
                .expect("inside the suite")
                .with_extension("");
            let relative = relative.to_string_lossy().replace('\\', "/");
            let name = relative
                .strip_prefix("test/")
                .unwrap_or(&relative)
                .to_string();
            let group = name.rsplit_once('/').map_or("", |(g, _)| g).to_string();
            let scxml = json.with_extension("scxml");
            assert!(scxml.exists(), "{} has no .scxml beside it", json.display());
            Case {
                name,
                group,
                scxml,
                json,
            }
        })
        .collect()
}

fn collect_json(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the suite is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect_json(&path, found);
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
}

fn run(case: &Case) -> Outcome {
    let text = std::fs::read_to_string(&case.scxml).expect("readable .scxml");
    let expectation: Expectation =
        serde_json::from_str(&std::fs::read_to_string(&case.json).expect("readable .json"))
            .expect("a well-formed test .json");
    let machine = match load_scxml(&text) {
        Ok(machine) => machine,
        Err(errors) => {
            let file = SourceFile::new(case.scxml.display().to_string(), text.as_str());
            let first = &errors[0];
            let (line, column) = file.line_col(first.span.start);
            let more = match errors.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return Outcome::Unsupported(format!(
                "{line}:{column}: {}{more}",
                first.message.replace('\n', " ")
            ));
        }
    };
    let chart = Arc::new(Chart::new(machine));
    let mut actor = Actor::new(Arc::clone(&chart));
    let w3c = case.group == "w3c-ecma";
    if w3c && expectation.events.is_empty() {
        run_timers(&mut actor);
    }
    if (!w3c || expectation.events.is_empty())
        && let Some(mismatch) = compare(&actor, &expectation.initial, "after the start")
    {
        return Outcome::Mismatch(mismatch);
    }
    for (i, step) in expectation.events.iter().enumerate() {
        if let Some(after) = step.after {
            let now = actor.now();
            actor.advance_to(now + after);
        }
        if !step.event.name.is_empty() {
            actor.send(&Event::named(&step.event.name));
        }
        let when = match step.after {
            Some(after) => format!("after {after} ms and event {} `{}`", i + 1, step.event.name),
            None => format!("after event {} `{}`", i + 1, step.event.name),
        };
        if let Some(mismatch) = compare(&actor, &step.next, &when) {
            return Outcome::Mismatch(mismatch);
        }
    }
    Outcome::Pass
}

/// Fires every pending timer in order of due time, as a test that runs to
/// completion in real time would see them.
fn run_timers(actor: &mut Actor) {
    for _ in 0..10_000 {
        if actor.status() != Status::Active {
            return;
        }
        let Some(due) = actor.next_due() else { return };
        actor.advance_to(due);
    }
}

fn compare(actor: &Actor, expected: &[String], when: &str) -> Option<String> {
    let machine = actor.chart().machine();
    let mut actual: Vec<String> = actor
        .configuration()
        .map(|s| {
            let state = machine.state(s);
            state.id.clone().unwrap_or_else(|| state.key.clone())
        })
        .collect();
    actual.sort();
    let mut expected = expected.to_vec();
    expected.sort();
    (actual != expected).then(|| {
        format!(
            "{when}: expected [{}], got [{}]",
            expected.join(", "),
            actual.join(", ")
        )
    })
}

fn report(results: &[(&Case, Outcome)]) -> String {
    let mut groups: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (case, outcome) in results {
        let counts = groups.entry(case.group.as_str()).or_default();
        counts.1 += 1;
        if matches!(outcome, Outcome::Pass) {
            counts.0 += 1;
        }
    }
    let required: Vec<&(&Case, Outcome)> = results.iter().filter(|(c, _)| c.required()).collect();
    let required_passed = required
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Pass))
        .count();
    let passed = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Pass))
        .count();

    let mut out = String::new();
    out.push_str("# SCXML conformance report\n\n");
    out.push_str(
        "The SCION SCXML test suite with the W3C tests (`tests/data/scion`), imported with\n\
         `idemchart::import` and run in the interpreter by `tests/conformance.rs`, which\n\
         describes how tests are run. Regenerate with\n\
         `IDEMCHART_WRITE_CONFORMANCE=1 cargo test --test it conformance::`.\n\n",
    );
    let _ = writeln!(
        out,
        "Passed: {passed} of {} tests. Required (no JavaScript needed): {required_passed} of {}.\n",
        results.len(),
        required.len()
    );
    out.push_str("| group | passed | tests |\n| --- | ---: | ---: |\n");
    for (group, (p, total)) in &groups {
        let _ = writeln!(out, "| {group} | {p} | {total} |");
    }
    let _ = writeln!(out, "| **all** | **{passed}** | **{}** |", results.len());

    out.push_str("\n## Required tests that do not pass\n\n");
    let mut any = false;
    for (case, outcome) in &required {
        if let Some(reason) = reason(outcome) {
            any = true;
            let _ = writeln!(out, "- `{}`: {reason}", case.name);
        }
    }
    if !any {
        out.push_str("None.\n");
    }

    out.push_str("\n## Other tests that do not pass\n");
    let mut current = "";
    for (case, outcome) in results.iter().filter(|(c, _)| !c.required()) {
        let Some(reason) = reason(outcome) else {
            continue;
        };
        if case.group != current {
            current = &case.group;
            let _ = write!(out, "\n### {current}\n\n");
        }
        let test = case
            .name
            .rsplit_once('/')
            .map_or(case.name.as_str(), |(_, t)| t);
        let note = NOTES
            .iter()
            .find(|(n, _)| *n == case.name)
            .map_or(String::new(), |(_, note)| format!(" (note: {note})"));
        let _ = writeln!(out, "- `{test}`: {reason}{note}");
    }
    out
}

fn reason(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Pass => None,
        Outcome::Unsupported(why) => Some(format!("not imported: {why}")),
        Outcome::Mismatch(why) => Some(format!("runs differently: {why}")),
    }
}

#[test]
fn scxml_suite() {
    let cases = cases();
    // Every test of the suite runs: 317 JSON files, each with its document.
    assert_eq!(cases.len(), 317, "the suite changed: update this test");
    let results: Vec<(&Case, Outcome)> = cases.iter().map(|c| (c, run(c))).collect();
    assert_eq!(
        results.iter().filter(|(c, _)| c.required()).count(),
        122,
        "the required tests are the 122 that need no JavaScript"
    );

    let text = report(&results);
    let failed: Vec<String> = results
        .iter()
        .filter(|(c, _)| c.required())
        .filter_map(|(c, o)| reason(o).map(|r| format!("{}: {r}", c.name)))
        .collect();

    if std::env::var_os("IDEMCHART_WRITE_CONFORMANCE").is_some() {
        std::fs::write(REPORT, &text).expect("the report is writable");
    } else {
        let committed = std::fs::read_to_string(REPORT).unwrap_or_default();
        if committed != text {
            println!("{text}");
            panic!(
                "{REPORT} is out of date: the results changed. Check them, then run \
                 `IDEMCHART_WRITE_CONFORMANCE=1 cargo test --test it conformance::` to write it anew"
            );
        }
    }
    assert!(
        failed.is_empty(),
        "required SCXML tests fail:\n{}",
        failed.join("\n")
    );
}

/// Every machine the importer makes prints in both syntaxes, and each print
/// loads back into the same machine.
#[test]
fn imported_machines_print_and_load_back() {
    use idemchart::syntax::{self, Syntax};
    let mut imported = 0;
    for case in cases() {
        let text = std::fs::read_to_string(&case.scxml).expect("readable .scxml");
        let Ok(machine) = load_scxml(&text) else {
            continue;
        };
        imported += 1;
        // The machine format has a place for every fact: read back, its
        // facts come from declarations, however few (SCXML has none).
        let mut expected = machine.clone();
        expected.fact_source = idemchart::model::FactSource::Declarations;
        for (syntax, printed) in [
            (Syntax::Yaml, syntax::yaml::format(&machine)),
            (Syntax::Dsl, syntax::dsl::format(&machine)),
        ] {
            let loaded = syntax::parse(&printed, syntax).unwrap_or_else(|e| {
                panic!(
                    "{} as {syntax:?} does not load: {e:?}\n{printed}",
                    case.name
                )
            });
            assert!(
                loaded == expected,
                "{} as {syntax:?} loads as another machine\n{printed}",
                case.name
            );
        }
    }
    assert!(imported >= 122, "only {imported} documents imported");
}
