//! The fixes of `idemchart lint --fix` on the fixtures in `tests/fixes/`:
//! each fixture is named after the lint whose fixes it exercises
//! (`s005-...` for S005), and its fixed text is snapshotted with insta. The
//! fixed file must load, must not have that finding any more, and must be
//! the author's text everywhere but at the edits.

use std::path::{Path, PathBuf};

use idemchart::diagnostic::{Applicability, Fix};
use idemchart::fix;
use idemchart::lint::{Options, lint_source};
use idemchart::span::SourceFile;
use idemchart::{Diagnostic, syntax};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixes exists")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| {
            syntax::Syntax::of_path(p).is_some()
                || idemchart::import::xstate::SourceKind::of_path(p).is_some()
        })
        .collect();
    files.sort();
    files
}

/// The fixture as a file named by its path relative to the checkout, so
/// that its syntax is known and messages are stable.
fn read(path: &Path) -> SourceFile {
    let text = std::fs::read_to_string(path).expect("the fixture reads");
    let name = path.file_name().unwrap().to_string_lossy();
    SourceFile::new(format!("tests/fixes/{name}"), text)
}

/// The code a fixture is about: `s005-orders.chart` → `S005`.
fn code_of(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    name.split('-').next().unwrap().to_uppercase()
}

/// Load errors, or the findings of the loaded machine with their fixes.
fn diagnose(file: &SourceFile) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    idemchart::load::load(file).map(|machine| lint_source(&machine, file, &Options::default()))
}

/// Every fix of the fixture's lint applied, safe and unsafe, until none is
/// left; the other lints' fixes are left out so each snapshot shows one.
fn fix_only(file: &SourceFile, code: &str) -> fix::Outcome {
    fix::fix_file(file, true, |file, machine| {
        lint_source(machine, file, &Options::default())
            .into_iter()
            .filter(|d| d.code == code)
            .collect()
    })
}

#[test]
fn every_fixture_is_fixed_and_loads_without_its_finding() {
    let all = fixtures();
    assert!(all.len() >= 12, "{all:?}");
    for path in all {
        let code = code_of(&path);
        let file = read(&path);
        let before = match diagnose(&file) {
            Ok(findings) | Err(findings) => findings,
        };
        let fixable: Vec<&Fix> = before
            .iter()
            .filter(|d| d.code == code)
            .filter_map(|d| d.fix.as_ref())
            .collect();
        assert!(!fixable.is_empty(), "{}: no fix of {code}", file.path);
        // S codes are structural and fixed safely; the I fixes change what
        // the machine or the runtime does.
        let expected = match code.starts_with('S') {
            true => Applicability::Safe,
            false => Applicability::Unsafe,
        };
        assert!(
            fixable.iter().all(|f| f.applicability == expected),
            "{}: {fixable:#?}",
            file.path
        );

        let outcome = fix_only(&file, &code);
        assert!(
            outcome.reverted.is_empty(),
            "{}: {:#?}",
            file.path,
            outcome.reverted
        );
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(name.clone(), outcome.text);

        let fixed = SourceFile::new(file.path.clone(), outcome.text.clone());
        let after = diagnose(&fixed)
            .unwrap_or_else(|errors| panic!("{} does not load once fixed: {errors:#?}", file.path));
        let left: Vec<&Diagnostic> = after.iter().filter(|d| d.code == code).collect();
        // A fixture may keep a finding of its lint that no fix can guess
        // (an event with two id-like fields, or none): it says so here.
        let expected_left = match name.as_str() {
            "i006-webhooks.yaml" | "i006-no-ids.yaml" => 1,
            _ => 0,
        };
        assert_eq!(left.len(), expected_left, "{}: {left:#?}", file.path);
        assert!(left.iter().all(|d| d.fix.is_none()), "{}", file.path);
        assert_eq!(
            outcome.fixed,
            fixable.len(),
            "{}: findings fixed",
            file.path
        );
    }
}

/// The fixed text is the author's text with the edits in it and nothing
/// else: every segment between two edits is kept byte for byte, and so is
/// every comment.
fn assert_only_edits_changed(original: &str, fixes: &[&Fix]) {
    let applied = fix::apply(original, fixes);
    assert_eq!(
        applied.applied.len(),
        fixes.len(),
        "the fixes do not conflict"
    );
    let mut edits: Vec<_> = fixes.iter().flat_map(|f| &f.edits).collect();
    edits.sort_by_key(|e| (e.span.start, e.span.end));
    let (mut from, mut at) = (0usize, 0usize);
    for edit in &edits {
        let kept = &original[from..edit.span.start as usize];
        assert_eq!(
            &applied.text[at..at + kept.len()],
            kept,
            "text before an edit"
        );
        at += kept.len();
        assert_eq!(
            &applied.text[at..at + edit.replacement.len()],
            edit.replacement,
            "the edit's text"
        );
        at += edit.replacement.len();
        from = edit.span.end as usize;
        // An edit changes part of one line, or removes whole lines (an
        // entry with its value): it never rewrites a block.
        let removed = &original[edit.span.range()];
        let whole_lines = (edit.span.start == 0
            || original.as_bytes()[edit.span.start as usize - 1] == b'\n')
            && removed.ends_with('\n')
            && edit.replacement.is_empty();
        assert!(
            removed.lines().count() <= 1 || whole_lines,
            "an edit removes {removed:?}"
        );
    }
    assert_eq!(
        &applied.text[at..],
        &original[from..],
        "text after the edits"
    );
    for line in original.lines() {
        let comment = line.trim_start();
        let removed_with_its_item = edits
            .iter()
            .any(|e| original[e.span.range()].contains(line));
        if (comment.starts_with('#') || comment.starts_with("//")) && !removed_with_its_item {
            assert!(applied.text.contains(line), "comment lost: {line}");
        }
    }
}

/// A fix's edits as values: spans compare equal whatever they hold.
fn edits_of(fix: &Fix) -> Vec<(u32, u32, &str)> {
    fix.edits
        .iter()
        .map(|e| (e.span.start, e.span.end, e.replacement.as_str()))
        .collect()
}

/// The fixture named `name` in `tests/fixes/`.
fn fixture(name: &str) -> SourceFile {
    read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixes")
            .join(name),
    )
}

/// The fixes of the fixture's first pass that do not conflict, each once
/// (two findings may share one fix).
fn first_pass(file: &SourceFile) -> Vec<Fix> {
    let findings = diagnose(file).expect("it loads");
    let mut chosen: Vec<&Fix> = Vec::new();
    for fix in findings.iter().filter_map(|d| d.fix.as_ref()) {
        let probe: Vec<&Fix> = chosen.iter().copied().chain([fix]).collect();
        let shared = chosen.iter().any(|c| edits_of(c) == edits_of(fix));
        if !shared && fix::apply(&file.text, &probe).applied.len() == probe.len() {
            chosen.push(fix);
        }
    }
    assert!(!chosen.is_empty(), "{}: no fix", file.path);
    chosen.into_iter().cloned().collect()
}

#[test]
fn a_commented_yaml_file_is_unchanged_outside_the_edits() {
    for name in [
        "s005-subscription-events.yaml",
        "s009-order-allows.yaml",
        "i004-checkout-payments.yaml",
        "i007-order-sources.yaml",
    ] {
        let file = fixture(name);
        let fixes = first_pass(&file);
        assert_only_edits_changed(&file.text, &fixes.iter().collect::<Vec<_>>());
    }
}

/// An XState source keeps its comments, quotes and commas: the fixes add
/// entries to `meta.idemchart` and touch nothing else.
#[test]
fn a_commented_typescript_machine_is_unchanged_outside_the_edits() {
    for name in ["s005-cart.ts", "s005-signup.ts", "i006-payments.ts"] {
        let file = fixture(name);
        let fixes = first_pass(&file);
        assert_only_edits_changed(&file.text, &fixes.iter().collect::<Vec<_>>());
    }
}

/// What an XState source cannot say exactly gets no fix: the context,
/// guards and assigns are JavaScript, and a `meta` imported from elsewhere
/// is not written in the file.
#[test]
fn an_xstate_source_gets_no_fix_it_cannot_write_exactly() {
    let file = fixture("s005-cart.ts");
    let findings = diagnose(&file).expect("it loads");
    let unfixed: Vec<&str> = findings
        .iter()
        .filter(|d| d.fix.is_none())
        .map(|d| d.code)
        .collect();
    // I004 would add a guard and a context list: not in JavaScript.
    assert!(unfixed.contains(&"I004"), "{findings:#?}");
    // A `meta` bound to a `const` of the file is edited where it is
    // written; one imported from a module that is not there, nowhere.
    let machine = "createMachine({ id: 'm', meta, initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });";
    let local = SourceFile::new(
        "tests/fixes/local-meta.ts",
        format!(
            "import {{ createMachine }} from 'xstate';\n\
             const meta = {{ idemchart: {{ dedup: {{ retention: '7d' }}, events: {{}} }} }};\n\
             export const m = {machine}\n"
        ),
    );
    let findings = diagnose(&local).expect("it loads");
    let fix = findings
        .iter()
        .find(|d| d.code == "S005")
        .and_then(|d| d.fix.as_ref())
        .expect("a fix in the const");
    assert_eq!(
        fix::apply(&local.text, &[fix]).text.lines().nth(1),
        Some("const meta = { idemchart: { dedup: { retention: '7d' }, events: { GO: {} } } };")
    );
    let bound = SourceFile::new(
        "tests/fixes/bound-meta.ts",
        format!(
            "import {{ createMachine }} from 'xstate';\n\
             import {{ meta }} from './no-such-module';\n\
             export const m = {machine}\n"
        ),
    );
    // Its facts cannot be read, so the machine gets the notes that say how
    // to declare them, and nothing carries an edit of a `meta` not there.
    let findings = diagnose(&bound).expect("it loads");
    assert!(findings.iter().any(|d| d.code == "I006"), "{findings:#?}");
    assert!(findings.iter().all(|d| d.fix.is_none()), "{findings:#?}");
}

#[test]
fn a_dsl_file_is_unchanged_outside_the_edits() {
    for name in [
        "s005-orders.chart",
        "s009-subscription.chart",
        "i004-orders.chart",
        "i007-orders.chart",
    ] {
        let file = fixture(name);
        let fixes = first_pass(&file);
        assert_only_edits_changed(&file.text, &fixes.iter().collect::<Vec<_>>());
    }
}

#[test]
fn a_typo_is_not_declared_as_an_event() {
    // `PAGO_CONFIRMDO` is close to the declared `PAGO_CONFIRMADO`: declaring
    // it would keep the typo, so S005 offers no fix there.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lints/s005-undeclared.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let file = SourceFile::new("s005-undeclared.yaml", text);
    let findings = diagnose(&file).unwrap();
    let s005: Vec<&Diagnostic> = findings.iter().filter(|d| d.code == "S005").collect();
    assert_eq!(s005.len(), 1);
    assert!(s005[0].fix.is_none());
}

#[test]
fn a_fix_that_breaks_loading_is_reverted_and_the_others_kept() {
    // `dne` has one close name, `done`, but `[done, done]` cannot be
    // active together; `ss` → `s` is fine.
    let file = SourceFile::new(
        "m.yaml",
        "machine: m\ninitial: ss\nstates:\n  s:\n    on:\n      GO: { target: [done, dne] }\n  done: { type: final }\n",
    );
    let outcome = fix::fix_file(&file, false, |_, _| Vec::new());
    assert_eq!(
        outcome.text,
        file.text.replace("initial: ss", "initial: s"),
        "the good fix is kept"
    );
    assert_eq!(outcome.fixed, 1);
    assert_eq!(outcome.reverted.len(), 1);
    let reverted = &outcome.reverted[0];
    assert_eq!(reverted.code, "S001");
    assert!(
        reverted.error.contains("cannot be active together"),
        "{}",
        reverted.error
    );
    // The finding stays, without the fix it no longer offers.
    let s001: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.code == "S001")
        .collect();
    assert_eq!(s001.len(), 1);
    assert!(s001[0].fix.is_none());
}

#[test]
fn without_the_text_there_are_no_fixes() {
    let file = fixture("s009-order-allows.yaml");
    let machine = idemchart::load::load(&file).unwrap();
    let findings = idemchart::lint::lint(&machine);
    assert!(findings.iter().any(|d| d.code == "S009"));
    assert!(findings.iter().all(|d| d.fix.is_none()));
}
