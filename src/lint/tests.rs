//! The lint registry: codes, names, severities and documentation.

use super::*;
use crate::diagnostic::Verdict;
use crate::syntax::{Syntax, parse};

#[test]
fn codes_names_and_severities_match_the_spec_table() {
    let table: Vec<(&str, &str, Severity)> = Lint::ALL
        .iter()
        .map(|l| (l.code(), l.name(), l.default_severity()))
        .collect();
    use Severity::{Error, Note, Warning};
    assert_eq!(
        table,
        [
            ("I001", "self-accepting-event", Warning),
            ("I002", "reentry-reruns-actions", Warning),
            ("I003", "cycle-reenables-event", Warning),
            ("I004", "cumulative-update", Warning),
            ("I005", "effect-without-key", Warning),
            ("I006", "event-without-id", Warning),
            ("I007", "retention-below-retry", Error),
            ("I008", "retry-without-verification", Warning),
            ("S001", "unknown-target", Error),
            ("S002", "unreachable-state", Warning),
            ("S003", "shadowed-transition", Warning),
            ("S004", "deadlock-state", Warning),
            ("S005", "undeclared-event", Warning),
            ("S006", "eventless-loop", Error),
            ("S007", "invalid-expression", Error),
            ("S008", "unknown-context-field", Error),
            ("S009", "unused-suppression", Warning),
            ("S010", "unknown-lint", Warning),
            ("S011", "opaque-code", Note),
            ("M001", "stored-state-removed", Error),
            ("M002", "context-field-changed", Error),
            ("M003", "event-id-changed", Error),
            ("M004", "pending-effect-renamed", Error),
            ("M005", "pending-timer-removed", Error),
            ("M006", "retention-shortened", Warning),
            ("M007", "version-not-bumped", Error),
            ("M008", "version-bumped-without-change", Warning),
            ("M009", "invalid-migration", Error),
        ]
    );
}

#[test]
fn lints_are_found_by_name_or_code() {
    for &lint in Lint::ALL {
        assert_eq!(Lint::from_name_or_code(lint.name()), Some(lint));
        assert_eq!(Lint::from_name_or_code(lint.code()), Some(lint));
        assert_eq!(
            Lint::from_name_or_code(&lint.code().to_lowercase()),
            Some(lint)
        );
    }
    assert_eq!(Lint::from_name_or_code("self_accepting_event"), None);
    assert_eq!(Lint::from_name_or_code("I999"), None);
    assert_eq!(Lint::from_name_or_code(""), None);
}

/// The `///` lines inside `declare_lint!` of a rule file, as `doc()` gives them.
fn doc_comment_of(source: &str) -> String {
    let start = source
        .find("declare_lint!")
        .expect("declare_lint! in the rule file");
    let mut doc = String::new();
    for line in source[start..].lines().skip(1) {
        let line = line.trim_start();
        let Some(text) = line.strip_prefix("///") else {
            break;
        };
        doc.push_str(text.strip_prefix(' ').unwrap_or(text));
        doc.push('\n');
    }
    doc
}

#[test]
fn docs_are_the_rule_files_doc_comments() {
    for &lint in Lint::ALL {
        let file = format!(
            "{}/src/lint/{}.rs",
            env!("CARGO_MANIFEST_DIR"),
            lint.name().replace('-', "_")
        );
        let source = std::fs::read_to_string(&file).expect("one file per lint");
        assert_eq!(lint.doc(), doc_comment_of(&source), "{file}");
        for section in [
            "### What it does\n",
            "### Why is this bad?\n",
            "### Example\n",
            "### Use instead\n",
        ] {
            assert!(lint.doc().contains(section), "{}: {section}", lint.name());
        }
        assert!(!lint.doc().starts_with(' '), "{}", lint.name());
    }
}

#[test]
fn load_errors_carry_the_registered_codes_and_names() {
    let cases = [
        (
            "machine: m\ninitial: a\nstates:\n  a: { on: { GO: b } }\n",
            Lint::UnknownTarget,
        ),
        (
            "machine: m\ninitial: a\nstates:\n  a: { on: { GO: { target: a, guard: \"1 +\" } } }\n",
            Lint::InvalidExpression,
        ),
        (
            "machine: m\ninitial: a\nstates:\n  a: { on: { GO: { actions: [ { assign: { x: \"1\" } } ] } } }\n",
            Lint::UnknownContextField,
        ),
    ];
    for (text, lint) in cases {
        assert!(lint.reported_by_loading());
        let errors = parse(text, Syntax::Yaml).expect_err("does not load");
        assert!(
            errors
                .iter()
                .any(|e| e.code == lint.code() && e.name == lint.name()),
            "{lint:?}: {errors:?}"
        );
    }
    let loading: Vec<&str> = Lint::ALL
        .iter()
        .filter(|l| l.reported_by_loading())
        .map(|l| l.code())
        .collect();
    assert_eq!(loading, ["S001", "S007", "S008"]);
}

fn lint_yaml(text: &str) -> Vec<Diagnostic> {
    lint(&parse(text, Syntax::Yaml).expect("loads"))
}

#[test]
fn an_allow_names_a_lint_by_name_or_code_and_covers_descendants() {
    let machine = |allow: &str| {
        format!(
            "machine: m\nevents:\n  E: {{ id: eid }}\ninitial: p\nstates:\n  p:\n    initial: a\n{allow}    states:\n      a: {{ on: {{ E: b }} }}\n      b: {{ on: {{ E: a }} }}\n"
        )
    };
    let codes = |d: &[Diagnostic]| d.iter().map(|d| d.code).collect::<Vec<_>>();
    assert_eq!(codes(&lint_yaml(&machine(""))), ["I001", "I001"]);
    for allow in [
        "    allow: { self-accepting-event: \"toggle\" }\n",
        "    allow: { I001: \"toggle\" }\n",
    ] {
        assert_eq!(
            codes(&lint_yaml(&machine(allow))),
            Vec::<&str>::new(),
            "{allow}"
        );
    }
    let unused = lint_yaml(&machine(
        "    allow: { I001: \"toggle\", cumulative-update: \"none here\" }\n",
    ));
    assert_eq!(codes(&unused), ["S009"]);
    assert_eq!(
        unused[0].message,
        "`allow cumulative-update` suppresses nothing"
    );
}

#[test]
fn suppression_findings_can_be_suppressed_from_an_ancestor() {
    let diagnostics = lint_yaml(
        "machine: m\nallow: { unknown-lint: \"kept for an older linter\" }\ninitial: a\nstates:\n  a:\n    type: final\n    allow: { not-a-lint: \"x\" }\n",
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
}

/// Graph hazards carry a witness and a verdict (or the reason there is
/// none); declaration lints carry a witness only where it shows harm; the
/// rest carry none.
#[test]
fn graph_hazards_carry_a_witness_and_a_verdict() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hazards");
    for entry in std::fs::read_dir(dir).expect("the corpus") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        for d in lint(&parse(&text, Syntax::Yaml).expect("loads")) {
            let lint = Lint::from_name_or_code(d.code).expect("a lint");
            if is_graph_hazard(lint) {
                assert!(!d.witness.is_empty(), "{}: {d:?}", path.display());
                assert!(
                    d.verdict == Some(Verdict::Confirmed)
                        || (d.verdict.is_some() && d.replay.is_some()),
                    "{}: {d:?}",
                    path.display()
                );
            } else if lint.is_idempotency() {
                assert!(
                    d.witness.is_empty() || d.verdict == Some(Verdict::Confirmed),
                    "{}: {d:?}",
                    path.display()
                );
            } else if lint == Lint::EventlessLoop {
                // One turn of the loop, confirmed when the replay runs out of
                // microsteps.
                assert!(
                    d.witness.is_empty() || d.verdict == Some(Verdict::Confirmed),
                    "{d:?}"
                );
            } else {
                assert!(d.witness.is_empty() && d.verdict.is_none(), "{d:?}");
            }
        }
    }
}

#[test]
fn help_names_the_declared_id_and_the_set_the_machine_already_tests() {
    // `PAGO` is guarded by identity in `a` but not in `b`: the advice for `b`
    // extends the set `a` already tests, with the declared id field.
    let machine = "machine: m\ncontext: { vistos: [], total: 0 }\nevents:\n  PAGO: { id: pagoId }\ninitial: a\nstates:\n  a:\n    on:\n      PAGO:\n        target: b\n        guard: \"!(event.pagoId in context.vistos)\"\n        actions:\n          - assign: { vistos: \"context.vistos + [event.pagoId]\" }\n  b:\n    on:\n      PAGO:\n        actions:\n          - assign: { total: \"context.total + event.importe\" }\n";
    let i004_helps = |text: &str| -> Vec<String> {
        lint_yaml(text)
            .into_iter()
            .filter(|d| d.code == "I004")
            .filter_map(|d| d.help)
            .collect()
    };
    assert_eq!(
        i004_helps(machine),
        [
            "guard the transition with `!(event.pagoId in context.vistos)` and add `event.pagoId` to `vistos` in the same assign"
        ]
    );
    // Without a declared id or a tested set, the names are derived.
    let plain = "machine: m\ncontext: { total: 0 }\ninitial: a\nstates:\n  a:\n    on:\n      PAGO_RECIBIDO:\n        actions:\n          - assign: { total: \"context.total + event.importe\" }\n";
    assert_eq!(
        i004_helps(plain),
        [
            "guard the transition with `!(event.id in context.seenPagoRecibido)` and add `event.id` to `seenPagoRecibido` in the same assign"
        ]
    );
}

#[test]
fn an_eventless_loop_behind_a_host_guard_is_not_reported() {
    // The host may answer `more` differently once the log is written, as
    // the loop's guard may change with `in_state`: the linter cannot tell.
    let codes = |guard: &str| -> Vec<&str> {
        let text = format!(
            "machine: m\nguards: [more]\ninitial: a\nstates:\n  a:\n    always:\n      \
             - guard: \"{guard}\"\n        actions: [ {{ log: '\"again\"' }} ]\n"
        );
        lint(&parse(&text, Syntax::Yaml).expect("loads"))
            .iter()
            .map(|d| d.code)
            .collect()
    };
    assert!(!codes("more").contains(&"S006"));
    assert!(codes("true").contains(&"S006"));
}

/// The search from the start does not go through sibling hubs, whose edges
/// do not count the events that drive the sibling: a witness's prefix to a
/// state left through a sibling's transition counts those events too, so
/// that the cap on witness length holds.
#[test]
fn prefixes_count_the_events_that_drive_a_sibling() {
    let text = "
machine: prefix
events:
  RECHAZO: { id: r }
  FALLO: { id: f }
initial: pedido
states:
  pedido:
    type: parallel
    states:
      pago:
        initial: pendiente
        states:
          pendiente: { on: { RECHAZO: fallido } }
          fallido: { on: { FALLO: '#cancelado' } }
      envio:
        initial: quieto
        states:
          quieto: {}
  cancelado: { id: cancelado }
";
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let cx = Cx::new(&machine, None);
    let cancelado = machine
        .state_ids()
        .find(|&s| machine.state(s).path == "cancelado")
        .expect("cancelado");
    let prefix = cx.prefix(cx.graph.enter(cancelado)).expect("a prefix");
    assert_eq!(prefix.len(), 2, "RECHAZO then FALLO: {prefix:?}");
    assert_eq!(cx.reach.dist[cx.graph.enter(cancelado).index()], 2);
}

#[test]
fn a_cancelled_run_gives_nothing_and_stops_its_search() {
    // A checkout whose refund handler's repeat the graph claims and the
    // replay refutes, so the search explores the machine's runs.
    let text = "machine: checkout\ncontext: { total: 0 }\ninitial: cart\nstates:\n  cart:\n    on:\n      ADD: { actions: [{ assign: { total: context.total + event.amount } }] }\n      PAY: paid\n  paid:\n    on: { REFUND: cart }\n";
    let file = SourceFile::new("checkout.yaml", text);
    let machine = crate::load::load(&file).unwrap();
    let options = Options::default();
    let cancel = AtomicBool::new(false);
    let whole = lint_source_cancellable(&machine, &file, &options, &cancel);
    assert_eq!(
        whole.as_deref().map(<[Diagnostic]>::len),
        Some(lint_source(&machine, &file, &options).len())
    );
    cancel.store(true, Ordering::Relaxed);
    assert!(lint_source_cancellable(&machine, &file, &options, &cancel).is_none());

    // Set while the replayer runs: the exploration stops at its next send.
    let uncancelled = Cx::new(&machine, None);
    let explored = confirm::Replayer::new(&uncancelled).explored_len();
    assert!(explored > 10, "{explored}");
    let mut cx = Cx::new(&machine, None);
    cx.cancel = Some(&cancel);
    let mut replayer = confirm::Replayer::new(&cx);
    assert_eq!(replayer.explored_len(), 1);
}

#[test]
fn replays_past_the_work_budget_are_undecided_with_the_reason() {
    // Loops that each run a replay out of its microsteps: the first ones
    // spend the lint run's work budget, and the rest are not replayed.
    let loops = REPLAY_WORK / confirm::REPLAY_MICROSTEPS + 40;
    let mut text = String::from("machine: loops\nevents:\n");
    for i in 0..loops {
        text += &format!("  GO{i}: {{ id: goId }}\n");
    }
    text += "initial: hub\nstates:\n  hub:\n    on:\n";
    for i in 0..loops {
        text += &format!("      GO{i}: loop{i}\n");
    }
    for i in 0..loops {
        text += &format!(
            "  loop{i}:\n    entry: [{{ raise: PING{i} }}]\n    on: {{ PING{i}: {{ target: loop{i}, reenter: true }} }}\n"
        );
    }
    let machine = parse(&text, Syntax::Yaml).unwrap();
    let (findings, work) = lint_counting_replay_work(&machine, &Options::default());
    let loops_found: Vec<&Diagnostic> = findings.iter().filter(|d| d.code == "S006").collect();
    assert_eq!(loops_found.len(), loops);
    // Each confirmation ran a step out of its 1,000 microsteps; the budget
    // is checked before each step, so the last one may pass it.
    let confirmed = loops_found
        .iter()
        .take_while(|d| d.verdict == Some(Verdict::Confirmed))
        .count();
    let per_loop = confirm::REPLAY_MICROSTEPS;
    assert!(
        (REPLAY_WORK / per_loop - 2..=REPLAY_WORK / per_loop).contains(&confirmed),
        "{confirmed} confirmed"
    );
    assert!(
        (REPLAY_WORK..REPLAY_WORK + 2 * per_loop).contains(&work),
        "{work} microsteps"
    );
    let reason = "the replay budget of 250000 interpreter microsteps per lint run is spent";
    for undecided in &loops_found[confirmed..] {
        assert_eq!(
            undecided.verdict,
            Some(Verdict::NotShown),
            "{}",
            undecided.message
        );
        assert_eq!(undecided.replay.as_deref(), Some(reason));
        assert!(
            undecided
                .message
                .ends_with(&format!("(not shown: {reason})")),
            "{}",
            undecided.message
        );
    }
}

/// A payment handler whose second alternative takes the deliveries the
/// first one has seen: `first_guard` guards the first alternative and
/// `seen` is the set's initial value.
fn payments(first_guard: &str, seen: &str) -> String {
    let guard = match first_guard {
        "" => String::new(),
        guard => format!("          guard: '{guard}'\n"),
    };
    format!(
        "machine: payments
context: {{ seen: {seen}, total: 0, duplicates: 0 }}
events:
  PAYMENT: {{ id: paymentId, payload: {{ paymentId: string, amount: number }} }}
  CLOSE: {{ id: closeId }}
initial: open
states:
  open:
    on:
      PAYMENT:
        - target: paid
{guard}          actions: [{{ assign: {{ seen: 'context.seen + [event.paymentId]', total: 'context.total + event.amount' }} }}]
        - duplicate
  paid:
    on: {{ CLOSE: open }}
  duplicate:
    on:
      PAYMENT: {{ actions: [{{ assign: {{ duplicates: 'context.duplicates + 1' }} }}] }}
"
    )
}

/// The I001 finding on the second alternative of `open`'s `PAYMENT`.
fn on_the_fallback(text: &str) -> Diagnostic {
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let findings = lint_with(&machine, &Options { show_refuted: true });
    let at = text.find("- duplicate").expect("the fallback") as u32 + 2;
    findings
        .into_iter()
        .find(|d| d.code == "I001" && d.span.start <= at && at < d.span.end)
        .unwrap_or_else(|| panic!("no I001 at byte {at}"))
}

#[test]
fn a_transition_only_repeats_take_is_refuted_without_a_search() {
    let new_id = "!(event.paymentId in context.seen)";
    let refuted = on_the_fallback(&payments(new_id, "[]"));
    assert_eq!(refuted.verdict, Some(Verdict::Refuted));
    let account = refuted.replay.as_deref().unwrap_or_default();
    assert!(
        account.ends_with(
            "a first delivery of `PAYMENT` in `open` takes the transition written before this one, \
             whose guard only tests that the delivery's id is new"
        ),
        "{account}"
    );

    // Behind an unguarded alternative (which the graph proposes nothing
    // for here), it is never taken at all.
    let machine = parse(&payments("", "[]"), Syntax::Yaml).expect("loads");
    let cx = Cx::new(&machine, None);
    let payment = cx.graph.events.get("PAYMENT").expect("declared");
    let open = &machine.states[machine.states.iter().position(|s| s.key == "open").unwrap()];
    let claim = |t| confirm::Claim {
        event: payment,
        taking: vec![t],
        shape: confirm::Shape::Immediate,
        effect: None,
    };
    let mut replayer = confirm::Replayer::new(&cx);
    let why = replayer.never_taken_first(&claim(open.on[1]));
    assert!(why.is_some_and(|w| w.ends_with("which has no guard")));
    assert_eq!(replayer.never_taken_first(&claim(open.on[0])), None);

    // A guard that tests more than the id: a first delivery of amount 0
    // takes the fallback, and the search finds it.
    let more = on_the_fallback(&payments(&format!("{new_id} && event.amount > 0"), "[]"));
    assert_eq!(more.verdict, Some(Verdict::Confirmed), "{:?}", more.replay);

    // A set that does not start empty may hold a first delivery's id (here
    // the replay's first one), so the search runs, and finds that run.
    let preset = on_the_fallback(&payments(new_id, "['PAYMENT-1']"));
    assert_eq!(
        preset.verdict,
        Some(Verdict::Confirmed),
        "{:?}",
        preset.replay
    );
}

/// The findings of `codes` on the machine (refuted ones shown), each
/// asserted refuted with an account that ends with `reason`: how many.
fn refuted_with(machine: &Machine, codes: &[&str], reason: &str) -> usize {
    with_verdict(machine, codes, Verdict::Refuted, reason)
}

/// The findings of `codes` on the machine (refuted ones shown), each
/// asserted to have the verdict, with an account that ends with `reason`:
/// how many.
fn with_verdict(machine: &Machine, codes: &[&str], verdict: Verdict, reason: &str) -> usize {
    let findings = lint_with(machine, &Options { show_refuted: true });
    let chosen: Vec<&Diagnostic> = (findings.iter())
        .filter(|d| codes.contains(&d.code))
        .collect();
    for d in &chosen {
        assert_eq!(d.verdict, Some(verdict), "{}", d.message);
        let account = d.replay.as_deref().unwrap_or_default();
        assert!(account.ends_with(reason), "{account}");
    }
    chosen.len()
}

#[test]
fn a_state_entered_only_by_transitions_never_taken_refutes_without_a_search() {
    let text = "machine: shadowed
context: { total: 0 }
events:
  GO: { id: goId }
  ADD: { id: addId, payload: { addId: string, amount: number } }
initial: idle
states:
  idle:
    on:
      GO: [ready, hidden]
  ready: {}
  hidden:
    on:
      ADD: { actions: [{ assign: { total: 'context.total + event.amount' } }] }
";
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let reason = "`hidden` is entered only by transitions that no delivery but a repeat takes";
    assert!(refuted_with(&machine, &["I001", "I004"], reason) > 0);

    // An event the machine raises itself may carry a seen id, so the
    // guard that tests its id does not make the alternative after it dead.
    let raising = payments("!(event.paymentId in context.seen)", "[]")
        .replace("  paid:\n", "  paid:\n    entry: [{ raise: PAYMENT }]\n");
    let searched = on_the_fallback(&raising);
    let account = searched.replay.as_deref().unwrap_or_default();
    assert!(!account.contains("written before this one"), "{account}");
}

#[test]
fn entering_a_state_enters_its_default_entry_and_the_other_regions_defaults() {
    let text = "machine: flow
context: { total: 0 }
events:
  GO: { id: goId }
  NEXT: { id: nextId }
  ADD: { id: addId, payload: { addId: string, amount: number } }
initial: idle
states:
  idle:
    on: { GO: flow }
  flow:
    initial: first
    states:
      first:
        on: { NEXT: [second, hidden] }
      second: {}
      hidden:
        on:
          ADD: { actions: [{ assign: { total: 'context.total + event.amount' } }] }
  both:
    type: parallel
    states:
      a:
        initial: a1
        states: { a1: {}, a2: {} }
      b:
        initial: b1
        states: { b1: {}, b2: {} }
";
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let graph = crate::graph::MachineGraph::new(&machine);
    let id = |path: &str| machine.find_path(path).expect(path);
    let entered = |target: &str| {
        let mut out = Vec::new();
        confirm::entry_set(&graph, id(target), &mut out);
        let mut paths: Vec<&str> = out
            .iter()
            .map(|&s| machine.state(s).path.as_str())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    assert_eq!(entered("flow"), ["", "flow", "flow.first"]);
    assert_eq!(
        entered("both.a.a2"),
        ["", "both", "both.a", "both.a.a2", "both.b", "both.b.b1"]
    );

    // `hidden` is a child of a state the machine enters, but only a
    // transition written after an unguarded one leads there.
    let reason = "`flow.hidden` is entered only by transitions that no delivery but a repeat takes";
    assert!(refuted_with(&machine, &["I001", "I004"], reason) > 0);
}

#[test]
fn a_claim_whose_state_takes_more_moves_than_the_search_makes_is_not_searched() {
    // A return that reaches the warehouse nine deliveries after the order:
    // `paid` moves on by itself and `ready` raises `SHIP` (which a sender
    // could deliver too), so neither costs a move. The refund's guard keys the seen set by a derived string,
    // which the graph does not take for an identity guard; the replay of
    // its witness refutes it.
    let text = "machine: returns
context: { refunded: 0, seen: [] }
events:
  PLACE: { id: orderId }
  PAY: { id: paymentId }
  PICK: { id: taskId }
  PACK: { id: taskId }
  SHIP: { id: shipmentId }
  DELIVER: { id: shipmentId }
  REQUEST_RETURN: { id: returnId }
  LABEL: { id: labelId }
  HANDED_OVER: { id: scanId }
  ARRIVED: { id: scanId }
  RETURN_RECEIVED: { id: returnId, payload: { returnId: string, amount: number } }
initial: cart
states:
  cart: { on: { PLACE: placed } }
  placed: { on: { PAY: paid } }
  paid: { always: picking }
  picking: { on: { PICK: packing } }
  packing: { on: { PACK: ready } }
  ready: { entry: [{ raise: SHIP }], on: { SHIP: shipped } }
  shipped: { on: { DELIVER: delivered } }
  delivered: { on: { REQUEST_RETURN: returning } }
  returning:
    initial: labelling
    states:
      labelling: { on: { LABEL: awaiting } }
      awaiting: { on: { HANDED_OVER: inTransit } }
      inTransit: { on: { ARRIVED: atWarehouse } }
      atWarehouse:
        on:
          RETURN_RECEIVED:
            target: '#refunded'
            guard: \"!(event.returnId + '-received' in context.seen)\"
            actions:
              - assign:
                  seen: \"context.seen + [event.returnId + '-received']\"
                  refunded: 'context.refunded + event.amount'
  refunded: { id: refunded, on: { PLACE: placed } }
";
    let machine = parse(text, Syntax::Yaml).expect("loads");
    // (`refunded` is no final state: a repeat after one is refuted, the
    // machine having ended.)
    // One finding for each field the assign derives: not shown, since the
    // search stops short of the state, and so not refuted, but reported
    // as notes that name the bound.
    let reason =
        "`returning.atWarehouse` takes at least 9 moves to enter, more than the 8 the search makes";
    assert_eq!(
        with_verdict(&machine, &["I004"], Verdict::NotShown, reason),
        2
    );
    for d in lint(&machine).iter().filter(|d| d.code == "I004") {
        assert_eq!(d.severity, Severity::Note, "{}", d.message);
        assert!(d.message.ends_with(&format!("{reason})")), "{}", d.message);
    }

    let cx = Cx::new(&machine, None);
    let state = |path: &str| machine.find_path(path).expect(path).index();
    let claim_on = |path: &str, event: &str| confirm::Claim {
        event: cx.graph.events.get(event).expect("declared"),
        taking: vec![machine.states[state(path)].on[0]],
        shape: confirm::Shape::Any,
        effect: None,
    };
    let mut replayer = confirm::Replayer::new(&cx);
    let fewest = replayer.fewest_moves_to_enter();
    assert_eq!(fewest[state("picking")], 2, "`always` costs no move");
    assert_eq!(fewest[state("shipped")], 4, "a raised event costs no move");
    assert_eq!(
        fewest[state("returning.labelling")],
        6,
        "entered with its parent"
    );
    assert_eq!(fewest[state("returning.atWarehouse")], 9);
    let receipt = claim_on("returning.atWarehouse", "RETURN_RECEIVED");
    assert_eq!(replayer.never_taken_first(&receipt), None);
    let unfound = replayer.search(&receipt).expect_err("no run");
    assert!(unfound.ends_with(reason), "{unfound}");
    assert_eq!(replayer.explored_so_far(), 0, "no configuration explored");

    // One move less deep, the search runs (and finds that a repeated
    // `ARRIVED` is ignored).
    assert!(
        replayer
            .search(&claim_on("returning.inTransit", "ARRIVED"))
            .is_err()
    );
    assert!(replayer.explored_so_far() > 1);
}

#[test]
fn no_run_enters_a_state_in_fewer_moves_than_its_bound() {
    // `fewest_moves_to_enter` lets the search skip claims, so it must never
    // be more than a run takes: checked on every configuration the explorer
    // reaches in each machine of the repository.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        root.join("tests"),
        root.join("machines"),
        root.join("bench"),
    ];
    let mut checked = 0;
    let mut deep = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("node_modules") {
                    dirs.push(path);
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let file = SourceFile::new(path.to_string_lossy(), text);
            let Ok(machine) = crate::load::load(&file) else {
                continue;
            };
            let cx = Cx::new(&machine, None);
            let mut replayer = confirm::Replayer::new(&cx);
            let fewest = replayer.fewest_moves_to_enter();
            for (moves, active) in replayer.explored_configurations() {
                for s in active {
                    assert!(
                        fewest[s.index()] <= moves,
                        "{}: `{}` is active after {moves} moves, bound {}",
                        file.path,
                        machine.state(s).path,
                        fewest[s.index()]
                    );
                    deep += usize::from(fewest[s.index()] >= 3);
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 300, "{checked} machines");
    assert!(deep > 100, "{deep} states at least 3 moves deep");
}

#[test]
fn a_search_directed_at_a_deep_state_finds_its_run_without_exploring_the_rest() {
    // An approval four steps deep, behind edits that each make a new
    // configuration: the breadth-first exploration would visit every
    // number of edits before the escalation.
    let text = "machine: approval
context: { edits: 0, comments: 0 }
events:
  EDIT: { id: editId }
  SUBMIT: { id: submissionId }
  ASSIGN: { id: assignmentId }
  REVIEW: { id: reviewId }
  ESCALATE: { id: escalationId }
  COMMENT: { id: commentId }
initial: draft
states:
  draft:
    on:
      EDIT: { actions: [{ assign: { edits: 'context.edits + 1' } }] }
      SUBMIT: submitted
  submitted:
    on:
      EDIT: { target: draft, actions: [{ assign: { edits: 'context.edits + 1' } }] }
      ASSIGN: assigned
  assigned: { on: { REVIEW: inReview } }
  inReview: { on: { ESCALATE: escalated } }
  escalated:
    on:
      COMMENT: { actions: [{ assign: { comments: 'context.comments + 1' } }] }
";
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let cx = Cx::new(&machine, None);
    let escalated = machine.find_path("escalated").expect("escalated").index();
    let claim = confirm::Claim {
        event: cx.graph.events.get("COMMENT").expect("declared"),
        taking: vec![machine.states[escalated].on[0]],
        shape: confirm::Shape::Immediate,
        effect: None,
    };
    let mut replayer = confirm::Replayer::new(&cx);
    let found = replayer.search(&claim).expect("a run");
    assert_eq!(found.verdict, Some(Verdict::Confirmed));
    assert_eq!(
        found.witness.as_deref(),
        Some(
            &[
                "SUBMIT", "ASSIGN", "REVIEW", "ESCALATE", "COMMENT", "COMMENT*"
            ]
            .map(String::from)[..]
        )
    );
    assert_eq!(replayer.explored_so_far(), 1, "only the start explored");
}

/// The fixtures of the reasoning about payloads, each with the lint and
/// place (a text of the file) of its hazard and what the witness's first
/// delivery carries.
const REASONED: &[(&str, &str, &str, &str)] = &[
    (
        include_str!("../../tests/lints/reason-nested-payload.yaml"),
        "I004",
        "charged: \"context.charged",
        r#"xstate.done.actor.loadSubscription {"output": {"subscription": {"status": "active"}}}"#,
    ),
    (
        include_str!("../../tests/lints/reason-map-literal.yaml"),
        "I004",
        "loans: \"context.loans",
        r#""status": "onloan""#,
    ),
    (
        include_str!("../../tests/lints/reason-ternary.yaml"),
        "I004",
        "drawn: \"context.drawn",
        r#""plan": "gold""#,
    ),
    (
        include_str!("../../tests/lints/reason-threshold.yaml"),
        "I004",
        "perks: \"context.perks",
        r#"TOP_UP {"amount": 99"#,
    ),
    (
        include_str!("../../tests/lints/reason-has.yaml"),
        "I004",
        "welcomes: \"context.welcomes",
        r#""profile": {"email": "email-1"}"#,
    ),
    // The graph's path has no delivery whose payload the guard reads: the
    // reasoning walks a run the search made with one before the claim.
    (
        include_str!("../../tests/lints/reason-summed-before.yaml"),
        "I001",
        "{ target: second,",
        r#"LINE_ADDED {"line": {"amountCents": 1000001}"#,
    ),
];

/// The finding of `code` at the first place `at` is written.
fn finding_at<'d>(text: &str, found: &'d [Diagnostic], code: &str, at: &str) -> &'d Diagnostic {
    let offset = text.find(at).expect("the place is in the file") as u32;
    (found.iter())
        .find(|d| d.code == code && d.span.start == offset)
        .unwrap_or_else(|| panic!("no {code} at `{at}`: {found:#?}"))
}

#[test]
fn the_reasoning_confirms_each_fixture_with_the_payload_it_chose() {
    for &(text, code, at, payload) in REASONED {
        let machine = parse(text, Syntax::Yaml).expect("loads");
        let found = lint(&machine);
        let d = finding_at(text, &found, code, at);
        assert_eq!(d.verdict, Some(Verdict::Confirmed), "{d:#?}");
        assert_eq!(d.severity, Severity::Warning);
        assert!(
            d.witness.iter().any(|step| step.contains(payload)),
            "{:?} lacks {payload}",
            d.witness
        );
        // Without the reasoning the same finding is not shown: a note that
        // says where (it was refuted before the verdict had three values).
        let without = without_reasoning(|| lint(&machine));
        let d = finding_at(text, &without, code, at);
        assert_eq!(d.verdict, Some(Verdict::NotShown), "{d:#?}");
        assert_eq!(d.severity, Severity::Note);
        assert!(d.message.contains("(not shown: "), "{}", d.message);
        assert!(
            d.witness.iter().all(|step| !step.contains('{')),
            "{:?}",
            d.witness
        );
    }
}

/// A repeat after a transition into a final state at the top is refused:
/// the machine ended. Both `APPROVED` transitions into `paying` say so.
#[test]
fn a_machine_that_ended_refutes_the_repeat() {
    let text = include_str!("../../tests/lints/reason-summed-before.yaml");
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let all = lint_with(&machine, &Options { show_refuted: true });
    let refuted: Vec<&Diagnostic> = (all.iter())
        .filter(|d| d.verdict == Some(Verdict::Refuted))
        .collect();
    assert_eq!(refuted.len(), 2, "{all:#?}");
    for d in refuted {
        assert_eq!(d.code, "I004");
        let why = d.replay.as_deref().unwrap_or_default();
        assert!(
            why.ends_with("the first `APPROVED` ends the machine in its final state `paying`, and a machine that ended takes no event"),
            "{why}"
        );
    }
    assert!(
        lint(&machine)
            .iter()
            .all(|d| d.verdict != Some(Verdict::Refuted))
    );
}

/// A submit that raises the event which ends the machine, in the same
/// macrostep, is refused as a transition into the final state is; with an
/// eventless transition that could come first, nothing is proved.
#[test]
fn a_raise_that_ends_the_machine_refutes_the_repeat() {
    let form = |always: &str| {
        format!(
            "machine: contact
events:
  SUBMIT: {{ id: submitId }}
  VALIDATE: {{ id: validateId }}
initial: editing
states:
  editing:
    {always}on:
      SUBMIT: {{ actions: [{{ raise: VALIDATE }}] }}
      VALIDATE: sent
  sent: {{ type: final }}
"
        )
    };
    let machine = parse(&form(""), Syntax::Yaml).expect("loads");
    let i001 = (lint_with(&machine, &Options { show_refuted: true }).into_iter())
        .find(|d| d.code == "I001" && d.message.contains("`SUBMIT`"))
        .expect("an I001 on SUBMIT");
    assert_eq!(i001.verdict, Some(Verdict::Refuted), "{i001:#?}");
    assert!(
        (i001.replay.as_deref().unwrap_or_default())
            .ends_with("the first `SUBMIT` ends the machine in its final state `sent`, and a machine that ended takes no event"),
        "{i001:#?}"
    );
    let guarded = form("always: [{ target: sent, guard: \"false\" }]\n    ");
    let machine = parse(&guarded, Syntax::Yaml).expect("loads");
    let i001 = (lint_with(&machine, &Options { show_refuted: true }).into_iter())
        .find(|d| d.code == "I001" && d.message.contains("`SUBMIT`"));
    assert!(
        i001.as_ref().is_none_or(|d| !d
            .replay
            .as_deref()
            .unwrap_or_default()
            .contains("ends the machine")),
        "{i001:#?}"
    );
}

#[test]
fn refuted_is_never_said_of_a_claim_the_search_did_not_reach() {
    // Twelve TICKs unlock `unlocked`; the search makes at most 8 moves.
    let text = include_str!("../../tests/lints/not-shown-deep-counter.yaml");
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let all = lint_with(&machine, &Options { show_refuted: true });
    assert!(
        all.iter().all(|d| d.verdict != Some(Verdict::Refuted)),
        "{all:#?}"
    );
    let open: Vec<&Diagnostic> = (all.iter())
        .filter(|d| d.witness.iter().any(|s| s.starts_with("OPEN")))
        .collect();
    assert_eq!(open.len(), 2, "{all:#?}");
    for d in open {
        assert_eq!(d.verdict, Some(Verdict::NotShown));
        let why = d.replay.as_deref().unwrap_or_default();
        assert!(
            why.contains("`context.ticks >= 12`")
                && why.ends_with("it stopped at its bound of 8 moves from the start"),
            "{why}"
        );
        assert_eq!(d.severity, Severity::Note);
    }
    // Reported by default, as notes.
    let reported = lint(&machine);
    assert_eq!(
        (reported.iter())
            .filter(|d| d.verdict == Some(Verdict::NotShown))
            .count(),
        2
    );
}

#[test]
fn a_repeat_refused_for_every_payload_is_refuted_and_one_merely_unfound_is_not() {
    // The repeat of a rejected review meets a guard that wants it approved:
    // no payload passes both, so the claim is refuted and not reported.
    let text = include_str!("../../tests/lints/search-review-decision.yaml");
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let all = lint_with(&machine, &Options { show_refuted: true });
    let refuted: Vec<&Diagnostic> = (all.iter())
        .filter(|d| d.verdict == Some(Verdict::Refuted))
        .collect();
    assert_eq!(refuted.len(), 1, "{all:#?}");
    assert!(
        (refuted[0].replay.as_deref().unwrap_or_default())
            .contains("which passed `event.decision == \"rejected\"`")
    );
    assert!(
        lint(&machine)
            .iter()
            .all(|d| d.verdict != Some(Verdict::Refuted))
    );

    // The same guards with a host guard on the repeat's handler: what the
    // host answers is not known, so nothing is proved.
    let host = text
        .replace("machine: kyc", "machine: kyc\nguards: [rereview]")
        .replace(
            "REVISION: { target: aprobado, guard: \"event.decision == \\\"approved\\\"\" }",
            "REVISION: { target: aprobado, guard: \"rereview\" }",
        );
    let machine = parse(&host, Syntax::Yaml).expect("loads");
    let all = lint_with(&machine, &Options { show_refuted: true });
    assert!(
        all.iter().all(|d| d.verdict != Some(Verdict::Refuted)),
        "{all:#?}"
    );
}

#[test]
fn a_witness_written_with_payloads_replays_with_them() {
    // `idemchart graph --witness` replays a witness to draw it: the
    // payloads it is written with take the path.
    let text = include_str!("../../tests/lints/reason-nested-payload.yaml");
    let machine = parse(text, Syntax::Yaml).expect("loads");
    let found = lint(&machine);
    let d = (found.iter())
        .find(|d| d.code == "I004")
        .expect("the charge counted twice");
    let taken = witness_transitions(&machine, d).expect("its steps replay");
    assert_eq!(taken.len(), d.witness.len());
    // The answer takes `onDone`, then the eventless choice of `active`.
    assert_eq!(taken[0].len(), 2, "{taken:?}");
    assert_eq!(taken[1], taken[2], "the repeat takes the charge again");
}

/// A cycle through many states labels a few of its other transitions, the
/// last saying how many more, not every one.
#[test]
fn a_long_cycle_labels_a_few_of_its_places() {
    let mut text = String::from(
        "machine: ring\nevents:\n  GO: { id: goId }\n  NEXT: { id: nextId }\ninitial: s0\nstates:\n",
    );
    for i in 0..20 {
        text.push_str(&format!(
            "  s{i}: {{ on: {{ GO: t{i} }} }}\n  t{i}: {{ on: {{ NEXT: s{} }} }}\n",
            (i + 1) % 20
        ));
    }
    let machine = parse(&text, Syntax::Yaml).expect("loads");
    let found = lint(&machine);
    let cycle = (found.iter())
        .find(|d| d.code == "I003")
        .unwrap_or_else(|| panic!("{found:#?}"));
    let places: Vec<&str> = (cycle.labels.iter())
        .map(|l| l.message.as_str())
        .filter(|m| m.starts_with("`GO` is taken on the same cycle here too"))
        .collect();
    assert_eq!(places.len(), 8, "{:#?}", cycle.labels);
    let more = 20 - 1 - cycle.labels.len();
    assert_eq!(
        places[7],
        format!("`GO` is taken on the same cycle here too, and at {more} more places")
    );
}
