//! The XState front-end on fixtures written as real XState machines
//! (`tests/xstate/fixtures/`): the extracted model (as YAML), the notes and
//! the lint findings of each machine, snapshotted.

use std::path::{Path, PathBuf};

use idemchart::SourceFile;
use idemchart::diagnostic::{Diagnostic, Verdict};
use idemchart::import::xstate::{self, MachineSettings, Settings, Version};
use idemchart::syntax::{Syntax, parse};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xstate/fixtures")
}

/// The fixture at `name`, its path relative to the repository.
fn read(name: &str) -> SourceFile {
    let path = fixture_dir().join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    SourceFile::new(format!("tests/xstate/fixtures/{name}"), text)
}

/// Each machine of a file: its name, version, model as YAML, notes and
/// lint findings, one line each with file:line:col.
fn describe(name: &str) -> String {
    describe_with(name, &Settings::default())
}

fn describe_with(name: &str, settings: &Settings) -> String {
    let loaded = xstate::load(read(name), settings);
    let mut out = String::new();
    let line = |d: &idemchart::diagnostic::Diagnostic, out: &mut String| {
        for (file, found) in loaded.sources.split(vec![d.clone()]) {
            for d in found {
                let (l, c) = file.line_col(d.span.start);
                out.push_str(&format!(
                    "{}:{l}:{c}: {}[{}] {}: {}\n",
                    file.path,
                    d.severity.as_str(),
                    d.code,
                    d.name,
                    d.message
                ));
                if !d.witness.is_empty() {
                    out.push_str(&format!(
                        "    witness: {} (confirmed: {:?})\n",
                        d.witness.join(" → "),
                        idemchart::Verdict::confirmed(d.verdict)
                    ));
                }
            }
        }
    };
    for e in &loaded.errors {
        line(e, &mut out);
    }
    for m in &loaded.machines {
        out.push_str(&format!(
            "== machine {} ({})\n",
            m.name,
            m.version.map_or("", |v| v.as_str())
        ));
        for n in &m.notes {
            line(n, &mut out);
        }
        match &m.machine {
            Ok(machine) => {
                out.push_str(&idemchart::syntax::yaml::format(machine));
                out.push_str("-- lint\n");
                for d in idemchart::lint::lint(machine) {
                    line(&d, &mut out);
                }
            }
            Err(errors) => {
                out.push_str("-- does not load\n");
                for e in errors {
                    line(e, &mut out);
                }
            }
        }
    }
    out
}

/// The fixtures a snapshot is taken of: every machine file, not the stage
/// modules and support code they import.
#[test]
fn fixtures() {
    insta::glob!("xstate/fixtures/**/*.{ts,mjs,json}", |path| {
        let name = path
            .strip_prefix(fixture_dir())
            .expect("inside the fixtures")
            .to_str()
            .expect("UTF-8")
            .to_string();
        if name.starts_with("support/") || name.contains("/stages/") {
            return;
        }
        insta::assert_snapshot!(describe(&name));
    });
}

/// The machines of a fixture, each loaded.
fn machines(name: &str) -> Vec<idemchart::Machine> {
    let loaded = xstate::load(read(name), &Settings::default());
    assert!(loaded.errors.is_empty(), "{name}: {:?}", loaded.errors);
    loaded
        .machines
        .into_iter()
        .map(|m| {
            m.machine
                .unwrap_or_else(|e| panic!("{name} {}: {e:?}", m.name))
        })
        .collect()
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<&'static str> {
    diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn a_partial_charge_that_adds_to_the_total_is_a_confirmed_cumulative_update() {
    let [order] = machines("order-partial-charges.mjs")
        .try_into()
        .expect("one machine");
    assert_eq!(order.semantics, idemchart::model::Semantics::Xstate);
    let findings = idemchart::lint::lint(&order);
    let i004 = findings
        .iter()
        .find(|d| d.code == "I004")
        .expect("the running total is a cumulative update");
    assert_eq!(
        i004.verdict,
        Some(idemchart::Verdict::Confirmed),
        "{i004:?}"
    );
    assert_eq!(i004.witness, ["CHARGE_SUCCEEDED", "CHARGE_SUCCEEDED*"]);
}

#[test]
fn the_same_flow_behind_a_set_of_charge_ids_has_no_cumulative_update() {
    let [order] = machines("order-charge-ids.mjs")
        .try_into()
        .expect("one machine");
    let findings = idemchart::lint::lint(&order);
    assert!(!codes(&findings).contains(&"I004"), "{findings:#?}");
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The idioms of real assigns (`tests/xstate/fixtures/idioms/`): merges,
/// sets, removals and branches on the event are idempotent; appends,
/// `concat`, `push` on a copy and counters are cumulative, confirmed by
/// the replay; what stays unread leaves its findings undecided.
#[test]
fn the_idioms_of_real_assigns_get_the_right_findings() {
    let [profile] = machines("idioms/idempotent.mjs")
        .try_into()
        .expect("one machine");
    let findings = idemchart::lint::lint(&profile);
    assert_eq!(codes(&findings), ["I006"], "{findings:#?}");

    let [payment] = machines("idioms/cumulative.mjs")
        .try_into()
        .expect("one machine");
    let findings = idemchart::lint::lint(&payment);
    let i004: Vec<&Diagnostic> = findings.iter().filter(|d| d.code == "I004").collect();
    assert_eq!(i004.len(), 5, "{findings:#?}");
    assert!(
        i004.iter().all(|d| d.verdict == Some(Verdict::Confirmed)),
        "{i004:#?}"
    );

    let [ledger] = machines("idioms/opaque.mjs")
        .try_into()
        .expect("one machine");
    let findings = idemchart::lint::lint(&ledger);
    let i001: Vec<&Diagnostic> = findings.iter().filter(|d| d.code == "I001").collect();
    assert_eq!(i001.len(), 3, "{findings:#?}");
    for d in i001 {
        assert_eq!(d.verdict, Some(Verdict::Undecided), "{d:#?}");
        assert!(
            d.replay
                .as_deref()
                .is_some_and(|r| r.contains("which idemchart could not read")),
            "{d:#?}"
        );
    }
}

/// XState source → model → YAML (and DSL) → model gives the same model,
/// but for the reach of suppressions written above transitions.
#[test]
fn every_fixture_round_trips_through_both_syntaxes() {
    for name in [
        "order-partial-charges.mjs",
        "order-charge-ids.mjs",
        "checkout.ts",
        "subscription-v4.ts",
        "document-review.mjs",
        "several.ts",
        "approvals/machine.ts",
        "order-tojson.json",
        "refund-export.json",
        "idioms/idempotent.mjs",
        "idioms/cumulative.mjs",
        "idioms/opaque.mjs",
    ] {
        for machine in machines(name) {
            // The machine format has no `allow` on a transition: the export
            // writes one on the transition's source state, which covers more.
            let mut machine = machine;
            // Nor has it opaque parts: an export writes them as the host
            // actions they stand for.
            machine.opaque.clear();
            machine.stand_ins.clear();
            // The machine format has a place for every fact: read back,
            // its facts come from declarations, however few.
            machine.fact_source = idemchart::model::FactSource::Declarations;
            for state in &mut machine.states {
                for allow in state.allow.values_mut() {
                    allow.within.clear();
                }
            }
            for (syntax, text) in [
                (Syntax::Yaml, idemchart::syntax::yaml::format(&machine)),
                (Syntax::Dsl, idemchart::syntax::dsl::format(&machine)),
            ] {
                let again = parse(&text, syntax)
                    .unwrap_or_else(|e| panic!("{name} as {syntax:?}:\n{text}\n{e:#?}"));
                for (a, b) in again.states.iter().zip(&machine.states) {
                    assert_eq!(a, b, "{name} as {syntax:?}: state {}", b.path);
                }
                for (a, b) in again.transitions.iter().zip(&machine.transitions) {
                    assert_eq!(a, b, "{name} as {syntax:?}: transition of {}", b.source.0);
                }
                assert_eq!(again, machine, "{name} as {syntax:?}:\n{text}");
            }
        }
    }
}

#[test]
fn a_file_may_hold_several_machines_each_named() {
    let loaded = xstate::load(read("several.ts"), &Settings::default());
    let names: Vec<&str> = loaded.machines.iter().map(|m| m.name.as_str()).collect();
    // The first has no id: it is named after its variable.
    assert_eq!(names, ["notification", "passwordReset"]);
}

#[test]
fn the_version_is_inferred_from_the_api_and_can_be_set() {
    let v4 = xstate::load(read("subscription-v4.ts"), &Settings::default());
    assert_eq!(v4.machines[0].version, Some(Version::V4));
    let v5 = xstate::load(read("checkout.ts"), &Settings::default());
    assert_eq!(v5.machines[0].version, Some(Version::V5));

    // Read as v5, the v4 self-transition keeps its state: no re-entry.
    let mut settings = Settings::default();
    settings.machines.insert(
        "subscription".into(),
        MachineSettings {
            xstate: Some(Version::V5),
            ..MachineSettings::default()
        },
    );
    let as_v5 = xstate::load(read("subscription-v4.ts"), &settings);
    let machine = as_v5.machines[0].machine.as_ref().expect("loads");
    assert!(machine.transitions.iter().all(|t| !t.reenter));
    let machine = v4.machines[0].machine.as_ref().expect("loads");
    assert!(machine.transitions.iter().any(|t| t.reenter));
}

#[test]
fn facts_can_come_from_idemchart_toml() {
    let root = std::env::temp_dir().join(format!("idemchart-xstate-toml-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("temp dir");
    let file = SourceFile::new(
        "idemchart.toml",
        r#"
[xstate]
version = "v5"

[machines.notification]
events = { SEND = { id = "sendId" }, FAILED = { id = "attemptId" }, DELIVERED = { id = "receiptId" } }
effects = { deliver = { idempotency = "key" } }
"#,
    );
    let registry: Vec<idemchart::config::LintInfo> = Vec::new();
    let config = idemchart::config::Config::parse(&file, root, &registry).expect("valid");
    let text = describe_with("several.ts", &config.xstate);
    let notification = text
        .split("== machine passwordReset")
        .next()
        .expect("first");
    assert!(
        notification.contains("SEND: { id: sendId }"),
        "{notification}"
    );
    assert!(
        notification.contains("deliver: { idempotency: key }"),
        "{notification}"
    );
    assert!(!notification.contains("I006"), "{notification}");
}

/// A comment above a transition covers that transition, not its siblings
/// in the same state; one that covers nothing is reported as unused.
#[test]
fn a_comment_above_a_transition_suppresses_that_transition_only() {
    let text = "import { createMachine, assign } from 'xstate';\n\
                export const cart = createMachine({\n\
                  id: 'cart',\n\
                  context: { items: 0 },\n\
                  initial: 'open',\n\
                  states: {\n\
                    open: {\n\
                      on: {\n\
                        // idemchart-allow cumulative-update: every click counts, on purpose\n\
                        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },\n\
                        REMOVE: { actions: assign({ items: ({ context }) => context.items - 1 }) },\n\
                        // idemchart-allow self-accepting-event: nothing to suppress here\n\
                        CHECKOUT: 'done',\n\
                      },\n\
                    },\n\
                    done: { type: 'final' },\n\
                  },\n\
                });\n";
    let file = SourceFile::new("cart.ts", text);
    let loaded = xstate::load(file.clone(), &Settings::default());
    let [cart] = &loaded.machines[..] else {
        panic!("{:?}", loaded.errors)
    };
    let machine = cart.machine.as_ref().expect("the cart loads");
    let found: Vec<(&str, usize)> = idemchart::lint::lint(machine)
        .iter()
        .filter(|d| matches!(d.code, "I004" | "I001" | "S009"))
        .map(|d| (d.code, file.line_col(d.span.start).0))
        .collect();
    assert_eq!(
        found,
        [
            // ADD's I004 is allowed; REMOVE's, in the same state, is not.
            ("I001", 10),
            ("I001", 11),
            ("I004", 11),
            ("S009", 12),
        ]
    );
}

#[test]
fn a_comment_above_a_transition_suppresses_its_finding() {
    let [checkout] = machines("checkout.ts").try_into().expect("one machine");
    let findings = idemchart::lint::lint(&checkout);
    // The retry of a declined card is allowed by the comment above it.
    assert!(
        !findings
            .iter()
            .any(|d| d.code == "I003" && d.message.contains("RETRY")),
        "{findings:#?}"
    );
    assert!(!codes(&findings).contains(&"S009"), "{findings:#?}");
}

#[test]
fn what_cannot_be_read_is_a_note_not_an_error() {
    let source = SourceFile::new(
        "inline.ts",
        "import { createMachine } from 'xstate';\n\
         import { stages } from 'some-package';\n\
         export const m = createMachine({\n\
           initial: 'a',\n\
           states: { a: { on: { GO: { target: 'b', guard: ({ context }) => context.items.some(Boolean) } } }, ...stages, b: {} },\n\
         });\n",
    );
    let loaded = xstate::load(source, &Settings::default());
    let [machine] = loaded.machines.try_into().expect("one machine");
    assert!(machine.machine.is_ok(), "{:?}", machine.machine);
    let notes: Vec<String> = machine.notes.iter().map(|n| n.message.clone()).collect();
    assert!(notes.iter().any(|n| n.contains("`...stages`")), "{notes:?}");
    // A guard written in place is named by its place, never by the name
    // made up for it.
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("this guard cannot be translated")
                && n.contains("host guard")
                && !n.contains("inline_L")),
        "{notes:?}"
    );
    assert!(
        machine
            .notes
            .iter()
            .all(|n| n.severity == idemchart::Severity::Note)
    );
}

#[test]
fn a_file_that_does_not_parse_is_an_error_at_its_line_and_column() {
    let source = SourceFile::new(
        "broken.ts",
        "import { createMachine } from 'xstate';\nexport const m = createMachine({\n  initial: 'a',\n  states: { a: { on: { GO: } } },\n});\n",
    );
    let loaded = xstate::load(source, &Settings::default());
    assert!(loaded.machines.is_empty());
    let error = loaded.errors.first().expect("a syntax error");
    assert_eq!(error.code, "E001");
    let (line, column) = loaded.sources.main().line_col(error.span.start);
    // At the `}` where a value was expected.
    assert_eq!((line, column), (4, 28), "{error:?}");
}

#[test]
fn files_without_a_machine_are_no_machine_files() {
    for (name, text) in [
        (
            "util.ts",
            "export const add = (a: number, b: number) => a + b;\n",
        ),
        (
            "package.json",
            "{ \"name\": \"shop\", \"dependencies\": { \"xstate\": \"5\" } }\n",
        ),
        (
            "settings.json",
            "{ \"states\": [\"CA\", \"NY\"], \"Machine\": 1 }\n",
        ),
        (
            "other.ts",
            "class Machine {}\nnew Machine();\nMachine(42);\n",
        ),
    ] {
        let loaded = xstate::load(SourceFile::new(name, text), &Settings::default());
        assert!(!loaded.is_machine_file, "{name}");
        assert!(loaded.errors.is_empty(), "{name}: {:?}", loaded.errors);
    }
}

/// The JavaScript fixtures are real XState: XState v5.33.3 loads them and,
/// sent the same events, goes through the same states as idemchart's
/// replay of the model read from them. Needs Node and `npm ci` in
/// `tests/xstate`; without them it says why and passes.
#[test]
fn javascript_fixtures_run_alike_in_xstate() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::sync::Arc;

    use idemchart::expr::{Event, Value as ExprValue};
    use idemchart::interp::{Actor, Chart};
    use serde_json::{Value, json};

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xstate");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) || !dir.join("node_modules/xstate").is_dir() {
        eprintln!("skipped: needs `node` and `npm ci` in {}", dir.display());
        return;
    }
    let charge = |id: &str, amount: i64| json!({ "type": "CHARGE_SUCCEEDED", "chargeId": id, "amount": amount });
    let cases = [
        (
            "order-partial-charges.mjs",
            vec![
                charge("c1", 60),
                charge("c1", 60),
                json!({ "type": "CANCEL", "requestId": "r" }),
            ],
        ),
        (
            "order-charge-ids.mjs",
            vec![charge("c1", 60), charge("c1", 60), charge("c2", 40)],
        ),
        (
            "document-review.mjs",
            vec![
                json!({ "type": "EDIT", "editId": "e1" }),
                json!({ "type": "COMMENT", "commentId": "k1" }),
                json!({ "type": "PAUSE", "requestId": "p1" }),
                json!({ "type": "RESUME", "requestId": "p2" }),
                json!({ "type": "SIGN_OFF", "signOffId": "s1", "by": "ana" }),
                json!({ "type": "EDIT", "editId": "e2" }),
            ],
        ),
        // The idioms, each event twice: the context after each delivery
        // is XState's.
        (
            "idioms/idempotent.mjs",
            twice(&[
                json!({ "type": "FIELD_CHANGED", "name": "city", "value": "Lyon" }),
                json!({ "type": "FIELD_CHANGED", "name": "zip", "value": "69001" }),
                json!({ "type": "ADDRESS_CHANGED", "address": { "city": "Lyon", "line1": "1 rue" } }),
                json!({ "type": "ADDRESS_CHANGED", "address": { "city": "Paris" } }),
                json!({ "type": "ADDRESS_CHANGED", "address": null }),
                json!({ "type": "BILLING_SAME_AS_SHIPPING" }),
                json!({ "type": "SETTINGS_LOADED", "data": { "theme": "dark", "email": "a@b.c" } }),
                json!({ "type": "TAGGED", "tag": "vip" }),
                json!({ "type": "TAGGED", "tag": "new" }),
                json!({ "type": "ITEM_SEEN", "itemId": "i1" }),
                json!({ "type": "ITEM_ADDED", "itemId": "i2" }),
                json!({ "type": "ITEM_ADDED", "itemId": "i1" }),
                json!({ "type": "LINE_REMOVED", "sku": "a" }),
                json!({ "type": "LINE_DROPPED", "sku": "b" }),
                json!({ "type": "UNTAGGED", "tag": "vip" }),
                json!({ "type": "CONTACT_CHANGED", "field": "email", "value": "x@y.z" }),
                json!({ "type": "CONTACT_CHANGED", "field": "phone", "value": "123" }),
                json!({ "type": "THEME_PICKED", "theme": "light" }),
                json!({ "type": "THEME_PICKED", "theme": "dark" }),
            ]),
        ),
        (
            "idioms/cumulative.mjs",
            twice(&[
                json!({ "type": "PAYMENT_FAILED", "error": "declined" }),
                json!({ "type": "COUPON_APPLIED", "code": "SPRING" }),
                json!({ "type": "NOTE_ADDED", "note": "gift" }),
                json!({ "type": "RETRY_REQUESTED" }),
                json!({ "type": "AUDITED", "entry": { "by": "ana" } }),
                json!({ "type": "PAYMENT_SUCCEEDED" }),
            ]),
        ),
    ];
    let input: Vec<Value> = cases
        .iter()
        .map(|(file, events)| json!({ "file": fixture_dir().join(file), "events": events }))
        .collect();
    let mut child = Command::new("node")
        .arg("fixtures.mjs")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&serde_json::to_vec(&input).expect("JSON"))
        .expect("node reads");
    let output = child.wait_with_output().expect("node runs");
    assert!(output.status.success(), "fixtures.mjs failed");
    // XState's `log` prints to standard output too: the results are the
    // last line.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let results: Vec<Value> =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    for ((file, events), result) in cases.iter().zip(&results) {
        assert!(result.get("error").is_none(), "{file}: {result}");
        let theirs = &result["machines"];
        let ours = machines(file);
        assert_eq!(theirs.as_array().map(Vec::len), Some(ours.len()), "{file}");
        for (machine, theirs) in ours.into_iter().zip(theirs.as_array().expect("a list")) {
            assert_eq!(theirs["id"], machine.name.as_str(), "{file}");
            let mut actor = Actor::new(Arc::new(Chart::new(machine)));
            let mut steps = vec![sorted(actor.configuration_paths())];
            let mut contexts = vec![actor.context().to_json()];
            for event in events {
                let name = event["type"].as_str().expect("a type");
                actor.send(&Event::new(name, None, ExprValue::from(event)));
                steps.push(sorted(actor.configuration_paths()));
                contexts.push(actor.context().to_json());
            }
            let their_steps: Vec<Vec<String>> =
                serde_json::from_value(theirs["steps"].clone()).expect("steps");
            assert_eq!(
                steps, their_steps,
                "{file}: idemchart (left) and XState (right)"
            );
            let their_contexts: Vec<Value> =
                serde_json::from_value(theirs["contexts"].clone()).expect("contexts");
            for (i, (ours, theirs)) in contexts.iter().zip(&their_contexts).enumerate() {
                let after = if i == 0 {
                    json!("the start")
                } else {
                    events[i - 1].clone()
                };
                assert_eq!(
                    ours, theirs,
                    "{file}: the context after {after}: idemchart (left) and XState (right)"
                );
            }
        }
    }
}

/// Each event, then the same again: a redelivery.
fn twice(events: &[serde_json::Value]) -> Vec<serde_json::Value> {
    events.iter().flat_map(|e| [e.clone(), e.clone()]).collect()
}

fn sorted(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths
}
