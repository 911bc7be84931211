//! SCXML documents as they are written for real processors
//! (`tests/scxml/*.scxml`: host variables in conditions, `<script>`,
//! `<invoke>`, vendor namespaces), through the commands a user runs on
//! them: `check`, `lint` and `import` read them as written, with notes for
//! what became opaque; `import --strict` and `run` refuse them at each
//! part the machine format cannot say.

use crate::support::run;

use run::{Run, idemchart, manifest_dir};

/// The exit code, standard output and standard error of one run.
fn shown(run: &Run) -> String {
    format!(
        "exit: {:?}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    )
}

/// A fixture of `tests/scxml`, named as the CLI names it.
fn scxml_file(name: &str) -> idemchart::SourceFile {
    let path = format!("tests/scxml/{name}.scxml");
    let text = std::fs::read_to_string(manifest_dir().join(&path)).expect("fixture");
    idemchart::SourceFile::new(path, text)
}

fn relative(path: &std::path::Path) -> String {
    path.strip_prefix(manifest_dir())
        .expect("the fixture lies in the crate")
        .display()
        .to_string()
}

#[test]
fn check_reads_scxml_as_written_with_notes() {
    insta::glob!("scxml/*.scxml", |path| {
        let file = relative(path);
        let run = idemchart(&["check", "--color", "never", &file]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(run.stdout.contains("note[S011]"), "{}", run.stdout);
        insta::assert_snapshot!(shown(&run));
    });
}

#[test]
fn lint_reports_the_opaque_parts_as_unknown() {
    insta::glob!("scxml/*.scxml", |path| {
        let file = relative(path);
        let run = idemchart(&["lint", "--color", "never", &file]);
        // Host actions and services are unknown, never safe: SCXML has no
        // place to declare them, so one I005 note names them.
        assert!(run.stdout.contains("note[I005]"), "{}", run.stdout);
        insta::assert_snapshot!(shown(&run));
    });
}

/// The imported machine loads as a machine file, and keeps the opaque
/// parts as host guards, actions and services.
#[test]
fn import_converts_scxml_as_written() {
    insta::glob!("scxml/*.scxml", |path| {
        let file = relative(path);
        let run = idemchart(&["import", &file]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        if let Err(errors) = idemchart::syntax::parse(&run.stdout, idemchart::syntax::Syntax::Yaml)
        {
            panic!("the imported machine does not load: {errors:#?}");
        }
        insta::assert_snapshot!(shown(&run));
    });
}

#[test]
fn import_strict_and_run_refuse_what_has_no_counterpart() {
    insta::glob!("scxml/*.scxml", |path| {
        let file = relative(path);
        let strict = idemchart(&["import", "--strict", &file]);
        assert_eq!(strict.code, Some(1), "{}", strict.stderr);
        assert_eq!(strict.stdout, "");
        let run = idemchart(&["run", &file, "--events", "-"]);
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        // `run` reports the strict import's errors, and no note.
        assert_eq!(run.stderr, strict.stderr);
        insta::assert_snapshot!(shown(&strict));
    });
}

/// The order workflow's payment is an invocation whose `done.invoke.payment`
/// handler reads the service's output, and whose failure is handled by the
/// state's `error.execution` transitions.
#[test]
fn invoke_maps_onto_the_invocation_and_its_completion_handlers() {
    let (machine, notes) = idemchart::import::load_scxml_as_written(&scxml_file("order-approval"));
    let machine = machine.expect("the workflow loads as written");
    assert!(notes.iter().all(|n| n.code == "S011"));
    let charging = machine.find_path("charging").expect("charging");
    let invocation = &machine.state(charging).invoke[0];
    assert_eq!(invocation.id.text, "payment");
    assert_eq!(invocation.src.text, "payments.charge");
    let input: Vec<&str> = invocation.input.keys().map(String::as_str).collect();
    assert_eq!(input, ["order", "amount"]);
    assert_eq!(invocation.on_done.len(), 1);
    assert_eq!(invocation.on_error.len(), 2);
    let done = machine.transition(invocation.on_done[0]);
    assert_eq!(
        machine.state(done.targets[0].state).path,
        "paid",
        "done.invoke.payment goes where the document says"
    );
}

/// The graph hazards (I001–I004) of a machine, as what each says and
/// the replay's verdict, in the order reported.
fn hazards(machine: &idemchart::Machine) -> Vec<String> {
    idemchart::lint::lint(machine)
        .into_iter()
        .filter(|d| matches!(d.code, "I001" | "I002" | "I003" | "I004"))
        .map(|d| {
            format!(
                "{} {} [{}] {}",
                d.code,
                d.message,
                d.witness.join(" → "),
                d.verdict.map_or("no verdict", |v| v.as_str())
            )
        })
        .collect()
}

/// SCXML's `event="match"` is the descriptor `match.*`, which takes a
/// delivery of `match` itself: the settlement chart as written has the
/// hazards of its translation by hand into the machine format, where each
/// descriptor is the one event its sender sends, and so does the machine
/// `idemchart import` writes (with `match.*`).
#[test]
fn scxml_descriptors_take_their_own_name_as_the_translation_does() {
    let (machine, _) = idemchart::import::load_scxml_as_written(&scxml_file("settlement"));
    let as_written = hazards(&machine.expect("the chart loads as written"));
    assert!(
        as_written.iter().any(
            |h| h.starts_with("I003 `match` is accepted again after a cycle")
                && h.contains("[instruct → match → fail → retry → match*] confirmed")
        ),
        "{as_written:#?}"
    );
    let twin = std::fs::read_to_string(manifest_dir().join("tests/scxml/twins/settlement.yaml"))
        .expect("twin");
    let twin =
        idemchart::syntax::parse(&twin, idemchart::syntax::Syntax::Yaml).expect("twin loads");
    assert_eq!(as_written, hazards(&twin));

    let imported = idemchart(&["import", "tests/scxml/settlement.scxml"]);
    assert!(imported.stdout.contains("match.*"), "{}", imported.stdout);
    let imported = idemchart::syntax::parse(&imported.stdout, idemchart::syntax::Syntax::Yaml)
        .expect("the import loads");
    assert_eq!(as_written, hazards(&imported));
}

/// An `<invoke>` written inside `<onentry>` is no executable content, but
/// some processor runs it: as written it is an opaque part with a note at
/// its place, and what rests on it is undecided; strictly it is an error.
#[test]
fn misplaced_executable_content_is_an_opaque_part_as_written() {
    let (machine, notes) = idemchart::import::load_scxml_as_written(&scxml_file("firmware-update"));
    let machine = machine.expect("the chart loads as written");
    let part = machine.opaque_part("invoke_L20C7").expect("an opaque part");
    assert_eq!(part.kind, idemchart::model::OpaqueKind::Actions);
    assert!(
        part.what
            .ends_with("at tests/scxml/firmware-update.scxml:20:7"),
        "{}",
        part.what
    );
    assert!(
        notes
            .iter()
            .any(|n| n.code == "S011"
                && n.message.starts_with("`<invoke>` is no executable content")),
        "{notes:#?}"
    );
    let downloading = machine.find_path("downloading").expect("downloading");
    assert!(machine.state(downloading).invoke.is_empty());
    let found = idemchart::lint::lint(&machine);
    let cycle = found.iter().find(|d| d.code == "I003").expect("an I003");
    assert_eq!(
        cycle.verdict,
        Some(idemchart::diagnostic::Verdict::Undecided),
        "{cycle:#?}"
    );
    let strict = idemchart::import::load_scxml(&scxml_file("firmware-update").text);
    assert!(strict.is_err());
}
