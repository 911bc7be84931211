//! Tests of the XState front-end's translations, each on a small machine;
//! whole fixtures are in `tests/xstate.rs`.

use super::*;
use crate::diagnostic::Severity;

/// The machine of `setup` and a state `a` whose `GO` transition has the
/// given guard, read as the version the API says.
fn with_guard(setup: &str, guard: &str) -> (MachineDoc, Vec<Diagnostic>) {
    let text = format!(
        "import {{ setup, createMachine, and, or, not }} from 'xstate';\n\
         const LIMIT = 10;\n\
         export const m = {setup}({{\n\
           id: 'm',\n\
           initial: 'a',\n\
           context: {{ total: 0, items: [], name: 'x', seen: [] }},\n\
           states: {{ a: {{ on: {{ GO: {{ target: 'b', {guard} }} }} }}, b: {{}} }},\n\
         }});\n"
    );
    let mut extracted = extract(SourceFile::new("m.ts", text), &Settings::default());
    assert!(extracted.errors.is_empty(), "{:?}", extracted.errors);
    let (_, _, doc, notes) = extracted.machines.remove(0);
    (doc, notes)
}

fn guard_text(doc: &MachineDoc) -> String {
    doc.root.states[0].on[0]
        .guard
        .as_ref()
        .map(|g| g.text.clone())
        .unwrap_or_default()
}

#[test]
fn v5_guards_translate_where_the_meaning_is_exact() {
    for (js, cel) in [
        ("({ context }) => context.total > 5", "context.total > 5"),
        (
            "({ context, event }) => event.amount === context.total",
            "event.amount == context.total",
        ),
        ("(args) => args.context.total !== 0", "context.total != 0"),
        (
            "({ context: { items } }) => items.length > 0",
            "size(context.items) > 0",
        ),
        (
            "({ context, event }) => context.items.includes(event.sku)",
            "event.sku in context.items",
        ),
        (
            "({ context, event }) => !context.seen.includes(event.id) && context.total < LIMIT",
            "!(event.id in context.seen) && context.total < 10",
        ),
        (
            "({ event }) => (event.count ?? 0) >= 2",
            "(has(event.count) && event.count != null ? event.count : 0) >= 2",
        ),
        (
            "({ context }) => { const t = context.total + 1; return t > 2; }",
            "context.total + 1 > 2",
        ),
        (
            "({ context }) => Math.max(context.total, 3) > 4",
            "(context.total > 3 ? context.total : 3) > 4",
        ),
        (
            "({ context }) => context.total % 2 == 0 || !(context.total > 9)",
            "context.total % 2 == 0 || !(context.total > 9)",
        ),
    ] {
        let (doc, notes) = with_guard("createMachine", &format!("guard: {js}"));
        assert_eq!(guard_text(&doc), cel, "{js}");
        assert!(notes.is_empty(), "{js}: {notes:?}");
    }
}

#[test]
fn v4_functions_take_context_and_event() {
    let (doc, notes) = with_guard(
        "createMachine",
        "cond: (ctx, e) => ctx.total + e.amount > 3",
    );
    assert_eq!(guard_text(&doc), "context.total + event.amount > 3");
    assert!(notes.is_empty(), "{notes:?}");
    let (doc, _) = with_guard(
        "createMachine",
        "cond: ({ total }, { amount }) => total < amount",
    );
    assert_eq!(guard_text(&doc), "context.total < event.amount");
}

#[test]
fn combinators_and_named_guards_with_params() {
    let setup = "setup({ guards: { over: ({ context }, params) => context.total > params.min, \
                 risky: () => window.risk() } }).createMachine";
    let (doc, notes) = with_guard(
        setup,
        "guard: and([{ type: 'over', params: { min: 3 } }, not('risky'), or(['over', 'risky'])])",
    );
    // `over` without params has nothing to read `params.min` from: opaque.
    assert_eq!(
        guard_text(&doc),
        "(context.total > 3) && !risky && (over || risky)"
    );
    let declared: Vec<&str> = doc.guards.iter().map(|g| g.text.as_str()).collect();
    assert_eq!(declared, ["risky", "over"]);
    assert!(notes.iter().all(|n| n.severity == Severity::Note));
}

#[test]
fn what_has_no_exact_meaning_is_a_host_guard_named_by_its_place() {
    for js in [
        "({ context }) => context.items.some((i) => i.late)",
        "({ context }) => context.name.length > 2",
        "({ context }) => context.total / 2 > 1",
        "({ event }) => event.at > Date.now()",
        "({ context }) => context.order?.paid",
        "({ context }) => `${context.name}` === 'x'",
    ] {
        let (doc, notes) = with_guard("createMachine", &format!("guard: {js}"));
        assert_eq!(guard_text(&doc), "inline_L7C48", "{js}");
        assert_eq!(doc.guards.len(), 1, "{js}");
        // The name is made up: the note and the messages about the guard
        // say where it is written instead.
        assert!(
            notes
                .iter()
                .any(|n| n.message.starts_with("this guard cannot be translated")
                    && n.message.contains("treats it as a host guard")
                    && !n.message.contains("inline_L")),
            "{js}: {notes:?}"
        );
        assert_eq!(
            doc.stand_ins.get("inline_L7C48").map(String::as_str),
            Some("the guard written at m.ts:7:48"),
            "{js}"
        );
    }
}

#[test]
fn host_guard_names_are_made_identifiers() {
    let (doc, _) = with_guard("createMachine", "guard: and(['is-paid', 'in', '2fa'])");
    let declared: Vec<&str> = doc.guards.iter().map(|g| g.text.as_str()).collect();
    assert_eq!(declared, ["is_paid", "_in", "_2fa"]);
    assert_eq!(guard_text(&doc), "is_paid && _in && _2fa");
}

#[test]
fn a_translation_the_checker_refuses_becomes_a_host_guard() {
    let text = "import { createMachine } from 'xstate';\n\
                export const m = createMachine({\n\
                  initial: 'a',\n\
                  context: { name: 'x' },\n\
                  states: { a: { on: { GO: { target: 'b', guard: ({ context }) => context.name - 1 > 0 } } }, b: {} },\n\
                });\n";
    let loaded = load(SourceFile::new("m.ts", text), &Settings::default());
    let machine = &loaded.machines[0];
    let model = machine
        .machine
        .as_ref()
        .expect("loads, with the guard opaque");
    assert_eq!(model.guards[0].text, "inline_L5C48");
    assert!(
        machine
            .notes
            .iter()
            .any(|n| n.message.contains("expression checker refused")),
        "{:?}",
        machine.notes
    );
}

#[test]
fn actions_translate_or_become_host_actions() {
    let text = "import { assign, createMachine, raise, log, cancel, sendTo, enqueueActions } from 'xstate';\n\
                export const m = createMachine({\n\
                  initial: 'a',\n\
                  context: { n: 0, seen: [] },\n\
                  states: { a: { entry: [\n\
                    assign({ n: ({ context }) => context.n + 1 }),\n\
                    assign(({ context, event }) => ({ ...context, seen: [...context.seen, event.id] })),\n\
                    raise({ type: 'PING', at: 1 }),\n\
                    raise({ type: 'LATER' }, { delay: 1500, id: 't' }),\n\
                    cancel('t'),\n\
                    log('entered'),\n\
                    sendTo('child', { type: 'X' }),\n\
                    enqueueActions(({ enqueue }) => enqueue('x')),\n\
                    'track',\n\
                  ] } },\n\
                });\n";
    let mut extracted = extract(SourceFile::new("m.ts", text), &Settings::default());
    let (_, _, doc, notes) = extracted.machines.remove(0);
    let entry: Vec<String> = doc.root.states[0]
        .entry
        .iter()
        .map(|a| {
            format!("{a:?}")
                .split(['{', '('])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect();
    assert_eq!(
        entry,
        [
            "Assign", "Assign", "Raise", "Send", "Cancel", "Log", "Named", "Named", "Named"
        ]
    );
    let opaque = notes
        .iter()
        .filter(|n| n.message.contains("host action"))
        .count();
    assert_eq!(opaque, 2, "{notes:?}");
    let crate::syntax::tree::ActionDoc::Send { delay, .. } = &doc.root.states[0].entry[3] else {
        panic!("a send");
    };
    assert_eq!(delay.as_ref().map(|d| d.text.as_str()), Some("1500ms"));
}

#[test]
fn delays_take_the_largest_unit_that_divides_them() {
    use super::config::duration;
    assert_eq!(duration(1500.0).as_deref(), Ok("1500ms"));
    assert_eq!(duration(30000.0).as_deref(), Ok("30s"));
    assert_eq!(duration(3_600_000.0).as_deref(), Ok("1h"));
    assert_eq!(duration(172_800_000.0).as_deref(), Ok("2d"));
    assert!(duration(1.5).is_err());
}

#[test]
fn every_form_of_machine_call_is_found_and_named() {
    let text = "import * as xstate from 'xstate';\n\
                import { createTestMachine } from '@xstate/graph';\n\
                const initialContext = () => ({ count: 0, tags: ['a'] });\n\
                const base = xstate.setup({ guards: { big: ({ context }) => context.count > 2 } });\n\
                export const counter = base.createMachine({ initial: 'a', context: initialContext(), states: { a: { on: { INC: { guard: 'big' } } } } });\n\
                export const tested = createTestMachine({ id: 'probe', initial: 'x', states: { x: {} } });\n\
                export const provided = xstate.createMachine({ initial: 'a', states: { a: { entry: 'hello' } } })\n\
                  .provide({ actions: { hello: xstate.assign({}) } });\n\
                function Machine(n: number) { return n; }\n\
                Machine(3);\n";
    let extracted = extract(SourceFile::new("forms.ts", text), &Settings::default());
    let found: Vec<(&str, Version)> = extracted
        .machines
        .iter()
        .map(|(name, version, ..)| (name.as_str(), *version))
        .collect();
    assert_eq!(
        found,
        [
            ("counter", Version::V5),
            ("probe", Version::V5),
            ("provided", Version::V5)
        ]
    );
    let counter = &extracted.machines[0].2;
    let context: Vec<(&str, String)> = counter
        .context
        .iter()
        .map(|c| (c.name.text.as_str(), c.value.to_string()))
        .collect();
    assert_eq!(context, [("count", "0".into()), ("tags", "[\"a\"]".into())]);
    assert_eq!(
        counter.root.states[0].on[0]
            .guard
            .as_ref()
            .map(|g| g.text.as_str()),
        Some("(context.count > 2)")
    );
    // `.provide` gave `hello` an implementation: an empty assign.
    let provided = &extracted.machines[2].2;
    assert!(matches!(
        provided.root.states[0].entry.as_slice(),
        [crate::syntax::tree::ActionDoc::Assign { .. }]
    ));
}

#[test]
fn cycles_and_deep_nesting_end_with_notes() {
    let deep = format!(
        "{}{{}}{}",
        "{ states: { s: ".repeat(150),
        " } }".repeat(150)
    );
    for text in [
        // Names bound to each other, a spread of itself, a state that is
        // the config.
        "import { createMachine } from 'xstate';\nconst a = b;\nconst b = a;\nconst s = { ...s, x: {} };\nconst c = { initial: 'x', states: { x: c, ...s, y: a } };\nexport const m = createMachine(c);\n".to_string(),
        format!("import {{ createMachine }} from 'xstate';\nexport const m = createMachine({{ initial: 's', states: {{ s: {deep} }} }});\n"),
        "import { createMachine } from 'xstate';\nexport const m = createMachine({ initial: 'a', context: { ñ: 'é' }, states: { a: { entry: assign({ ñ: ({ context }) => context.ñ + 'ü' }) } } });\n".to_string(),
    ] {
        let loaded = load(SourceFile::new("cycle.ts", text), &Settings::default());
        for machine in &loaded.machines {
            assert!(!machine.notes.is_empty() || machine.machine.is_ok());
        }
    }
}

/// v4 runs a step's assigns first unless `predictableActionArguments` says
/// otherwise: a machine whose actions that order would change gets a note.
#[test]
fn v4_without_predictable_action_arguments_is_noted_where_assigns_mix() {
    let machine = |flag: &str, actions: &str| {
        let text = format!(
            "import {{ Machine, assign }} from 'xstate';\n\
             export const m = Machine({{ id: 'm', {flag} initial: 'a', context: {{ n: 0 }},\n\
               states: {{ a: {{ on: {{ GO: {{ target: 'b', actions: [{actions}] }} }} }}, b: {{}} }} }});\n"
        );
        let mut extracted = extract(SourceFile::new("m.js", text), &Settings::default());
        assert!(extracted.errors.is_empty(), "{:?}", extracted.errors);
        let (_, version, _, notes) = extracted.machines.remove(0);
        assert_eq!(version, Version::V4);
        notes
            .iter()
            .filter(|n| n.message.contains("predictableActionArguments"))
            .count()
    };
    let mixed = "'notify', assign({ n: (c) => c.n + 1 })";
    assert_eq!(machine("", mixed), 1);
    assert_eq!(machine("predictableActionArguments: true,", mixed), 0);
    // Only assigns, or none: the order changes nothing.
    assert_eq!(machine("", "assign({ n: (c) => c.n + 1 })"), 0);
    assert_eq!(machine("", "'notify'"), 0);
}

/// The nesting scan counts the levels oxc recurses over, and nothing that
/// strings, comments, template text or regular expressions hold.
#[test]
fn the_nesting_scan_counts_levels_outside_literals() {
    let depth = |text: &str| scope::script_depth(text, 500).unwrap();
    assert_eq!(depth("f(a[0], { b: [1] })"), 3);
    assert_eq!(
        depth("const s = '((((' + \"[[[[\" + `{{{{`; // ((((\n/* [[[[ */"),
        1
    );
    assert_eq!(depth("const r = /[(]{2}\\(/g; const q = a / b / (c)"), 2);
    assert_eq!(depth("`a ${ b ? `c ${ d } e` : f } g`"), 3);
    assert_eq!(depth("a = b = c => d => e"), 4);
    assert_eq!(depth("x ** y ** z"), 2);
    assert_eq!(depth("!!!-x"), 4);
    // Optional chaining, `??` and TypeScript's optional marks nest nothing.
    assert_eq!(
        depth("a?.b ?? c; interface I { a?: string; b?: number }; function f(x?: T) {}"),
        1
    );
    // `,`, `;` and a line break between two operands end the chain.
    assert_eq!(depth("a = 1, b = 2; c = 3\nd = 4\nexport const e = 5"), 1);
    assert_eq!(depth("f = () =>\n  () =>\n  1"), 3);
}

/// Past the limit, the scan names the token that passes it.
#[test]
fn the_nesting_scan_stops_at_the_limit() {
    assert_eq!(scope::script_depth(&"(".repeat(10), 4), Err(4));
    assert_eq!(scope::script_depth(&"a = ".repeat(10), 4), Err(18));
    assert_eq!(scope::script_depth(&"!".repeat(10), 4), Err(4));
    // A template is refused at the backtick that opens the substitution.
    assert_eq!(
        scope::script_depth("`${`${`${`${`${x}`}`}`}`}`", 4),
        Err(12)
    );
}

/// The one machine of `text`, loaded; panics with its errors otherwise.
fn loaded_machine(text: &str) -> (crate::model::Machine, Vec<Diagnostic>) {
    let mut loaded = load(SourceFile::new("m.ts", text), &Settings::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let machine = loaded.machines.remove(0);
    (
        machine.machine.unwrap_or_else(|e| panic!("{e:#?}")),
        machine.notes,
    )
}

#[test]
fn valid_xstate_of_any_names_loads_and_round_trips() {
    let text = "import { createMachine, fromPromise, assign, spawn } from 'xstate';\n\
        enum OrderStatus { CREATED = 'created', PAID = 'paid' }\n\
        const RETRY_DELAY_MS = 5000;\n\
        const confirm = (events: string[]) => ({\n\
          confirming: { on: Object.fromEntries(events.map((e) => [e, 'created'])) },\n\
        });\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          initial: { target: OrderStatus.CREATED, actions: 'logStart' },\n\
          states: {\n\
            [OrderStatus.CREATED]: {\n\
              invoke: { id: 'send syn', src: 'send syn', onDone: 'confirming' },\n\
              on: { 'pay now': OrderStatus.PAID, 'done.invoke.kid': 'confirming' },\n\
              after: { [RETRY_DELAY_MS]: 'confirming' },\n\
              entry: assign({ kid: () => spawn('child', 'kid') }),\n\
            },\n\
            ...confirm(['SUBMIT', 'send again']),\n\
            [OrderStatus.PAID]: { type: 'final', invoke: { src: 'receipt', onDone: '#m.created' } },\n\
          },\n\
        });\n";
    let (machine, notes) = loaded_machine(text);
    let paths: Vec<&str> = machine.states.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["", "created", "confirming", "paid"], "{notes:?}");
    let triggers: Vec<String> = machine
        .transitions
        .iter()
        .map(|t| t.trigger.to_string())
        .collect();
    for expected in [
        "`pay now`",
        "xstate.done.actor.kid",
        "after 5s",
        "SUBMIT",
        "`send again`",
        "`xstate.done.actor.send syn`",
        "xstate.done.actor.receipt",
    ] {
        assert!(
            triggers.iter().any(|t| t == expected),
            "{expected}: {triggers:?}"
        );
    }
    // The spawned actor's completion is declared as an event from outside.
    assert!(machine.events.contains_key("xstate.done.actor.kid"));
    // The initial transition's action runs after the root's entry.
    assert!(matches!(
        machine.state(crate::model::StateId::ROOT).entry.last(),
        Some(crate::model::Action::Host { name, .. }) if name.text == "logStart"
    ));
    for text in [
        crate::syntax::yaml::format(&machine),
        crate::syntax::dsl::format(&machine),
    ] {
        let syntax = if text.starts_with("machine:") {
            crate::syntax::Syntax::Yaml
        } else {
            crate::syntax::Syntax::Dsl
        };
        let again =
            crate::syntax::parse(&text, syntax).unwrap_or_else(|e| panic!("{text}\n{e:#?}"));
        assert_eq!(again.transitions, machine.transitions, "{text}");
    }
}

#[test]
fn a_config_made_at_run_time_is_a_machine_that_is_not_read_with_a_note() {
    let text = "import { createMachine } from 'xstate';\n\
                export function build(config) { return createMachine(config); }\n";
    let loaded = load(SourceFile::new("m.ts", text), &Settings::default());
    assert!(loaded.is_machine_file);
    let [machine] = &loaded.machines[..] else {
        panic!("{:?}", loaded.machines)
    };
    let notes = machine.machine.as_ref().expect_err("not read");
    assert_eq!(notes[0].code, "S011");
    assert_eq!(notes[0].severity, Severity::Note);
}

/// The findings of the one machine of `text` (a file `m.ts`).
fn lint_ts(text: &str) -> Vec<Diagnostic> {
    let loaded = load(
        SourceFile::new("m.ts", text.to_string()),
        &Settings::default(),
    );
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let machine = loaded.machines[0]
        .machine
        .as_ref()
        .expect("the machine loads");
    crate::lint::lint(machine)
}

fn finding<'d>(found: &'d [Diagnostic], code: &str, line_text: &str, text: &str) -> &'d Diagnostic {
    let at = text.find(line_text).expect("the text is there") as u32;
    found
        .iter()
        .find(|d| d.code == code && d.span.start <= at + line_text.len() as u32 && d.span.end >= at)
        .unwrap_or_else(|| panic!("no {code} at `{line_text}` in {found:#?}"))
}

#[test]
fn a_repeat_whose_only_change_is_an_unread_assign_is_undecided_and_names_it() {
    let text = "import { assign, createMachine } from 'xstate';\n\
        import { format } from './format';\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          context: { label: '' },\n\
          initial: 'a',\n\
          states: { a: { on: {\n\
            RENAMED: { actions: assign({ label: ({ event }) => format(event.value) }) },\n\
          } } },\n\
        });\n";
    let found = lint_ts(text);
    let i001 = finding(&found, "I001", "RENAMED", text);
    assert_eq!(i001.verdict, Some(crate::Verdict::Undecided), "{i001:#?}");
    assert_eq!(
        i001.replay.as_deref(),
        Some("rests on `format(...)` at m.ts:8:52, which idemchart could not read")
    );
    // An assign is no effect, unread or not.
    assert!(!found.iter().any(|d| d.code == "I005"), "{found:#?}");
}

#[test]
fn a_harm_shown_by_translated_code_alone_stays_confirmed() {
    // The unread assign writes `label`, which nothing reads: the counter
    // beside it shows the harm.
    let text = "import { assign, createMachine } from 'xstate';\n\
        import { format } from './format';\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          context: { label: '', renames: 0 },\n\
          initial: 'a',\n\
          states: { a: { on: {\n\
            RENAMED: { actions: [\n\
              assign({ label: ({ event }) => format(event.value) }),\n\
              assign({ renames: ({ context }) => context.renames + 1 }),\n\
            ] },\n\
          } } },\n\
        });\n";
    let found = lint_ts(text);
    let i004 = finding(&found, "I004", "renames: (", text);
    assert_eq!(i004.verdict, Some(crate::Verdict::Confirmed), "{i004:#?}");
    assert_eq!(
        finding(&found, "I001", "RENAMED", text).verdict,
        Some(crate::Verdict::Confirmed)
    );
}

#[test]
fn a_run_through_an_unread_assign_of_what_a_guard_reads_is_undecided() {
    // The replay cannot know what `status` is after `CHECKED`, so neither
    // the counter's repeat nor its refusal is the machine's.
    let text = "import { assign, createMachine } from 'xstate';\n\
        import { classify } from './risk';\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          context: { status: 'new', approvals: 0 },\n\
          initial: 'a',\n\
          states: {\n\
            a: { on: { CHECKED: { target: 'b', actions: assign({ status: ({ event }) => classify(event) }) } } },\n\
            b: { on: { APPROVED: {\n\
              guard: ({ context }) => context.status === 'ok',\n\
              actions: assign({ approvals: ({ context }) => context.approvals + 1 }),\n\
            } } },\n\
          },\n\
        });\n";
    let found = lint_ts(text);
    let i004 = finding(&found, "I004", "approvals: (", text);
    assert_eq!(i004.verdict, Some(crate::Verdict::Undecided), "{i004:#?}");
    let why = i004.replay.as_deref().unwrap_or_default();
    assert!(
        why.starts_with("rests on `classify(...)` at m.ts:8:"),
        "{why}"
    );
}

/// A helper that builds its actions by mutating a list is beyond the
/// partial evaluator (one that returns a literal list is read).
#[test]
fn a_helper_that_returns_actions_stands_for_anything() {
    let text = "import { assign, createMachine, raise } from 'xstate';\n\
        function raiseAndAssign(type, values) { const all = []; all.push(raise({ type })); all.push(assign(values)); return all; }\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          context: { submitted: false },\n\
          initial: 'a',\n\
          states: { a: { on: {\n\
            SUBMIT: { actions: raiseAndAssign('VALIDATE', { submitted: true }) },\n\
            VALIDATE: {},\n\
          } } },\n\
        });\n";
    let loaded = load(
        SourceFile::new("m.ts", text.to_string()),
        &Settings::default(),
    );
    let machine = loaded.machines[0]
        .machine
        .as_ref()
        .expect("the machine loads");
    let part = &machine.opaque[0];
    assert_eq!(part.kind, crate::model::OpaqueKind::Actions);
    assert_eq!(part.what, "`raiseAndAssign(...)` at m.ts:8:20");
    let found = crate::lint::lint(machine);
    let i001 = finding(&found, "I001", "SUBMIT", text);
    assert_eq!(i001.verdict, Some(crate::Verdict::Undecided), "{i001:#?}");
}

/// Delays and keys a program computes from number literals, as timing
/// constants are written (`15 * 60 * 1000`), are read: left out, the
/// state they lead to would be unreachable.
#[test]
fn delays_computed_from_number_literals_are_read() {
    let text = "import { createMachine, setup } from 'xstate';\n\
        const HOLD_TTL_MS = 15 * 60 * 1000;\n\
        const GRACE = HOLD_TTL_MS / 3 - -(2 ** 3) * 1000 % 7000;\n\
        export const m = setup({ delays: { retry: 2 * 30_000 } }).createMachine({\n\
          id: 'm',\n\
          initial: 'held',\n\
          states: {\n\
            held: { after: { [HOLD_TTL_MS]: 'expired', retry: 'retried' } },\n\
            retried: { after: [{ delay: GRACE, target: 'expired' }] },\n\
            expired: { type: 'final' },\n\
          },\n\
        });\n";
    let (machine, notes) = loaded_machine(text);
    assert!(notes.is_empty(), "{notes:#?}");
    let triggers: Vec<String> = machine
        .transitions
        .iter()
        .map(|t| t.trigger.to_string())
        .collect();
    // 15m / 3 = 300s, minus -8 * 1000 % 7000 = -1s.
    assert_eq!(
        triggers,
        ["after 15m", "after 1m", "after 301s"],
        "{triggers:?}"
    );
    assert!(crate::lint::lint(&machine).iter().all(|d| d.code != "S002"));
}

/// A delay a function computes keeps its timers, due after a stand-in,
/// with a note at the delay: the states they lead to stay reachable (no
/// false S002), and a finding whose run waits for one is undecided, naming
/// the delay.
#[test]
fn delays_computed_by_functions_keep_their_timers_and_decide_nothing() {
    let text = "import { assign, setup } from 'xstate';\n\
        export const m = setup({\n\
          delays: { backoff: ({ context }) => context.attempts * 1000 },\n\
        }).createMachine({\n\
          id: 'm',\n\
          initial: 'idle',\n\
          context: { attempts: 0, charged: 0 },\n\
          states: {\n\
            idle: { on: { FAIL: 'waiting' } },\n\
            waiting: { after: { backoff: 'retrying' } },\n\
            retrying: {\n\
              after: [{ delay: ({ context }) => context.attempts * 5, target: 'done' }],\n\
              on: { CHARGE: { actions: assign({ charged: ({ context }) => context.charged + 1 }) } },\n\
            },\n\
            done: { type: 'final' },\n\
          },\n\
        });\n";
    let (machine, notes) = loaded_machine(text);
    let triggers: Vec<String> = (machine.transitions.iter())
        .filter(|t| matches!(t.trigger, crate::model::Trigger::After(_)))
        .map(|t| t.trigger.to_string())
        .collect();
    assert_eq!(triggers, ["after 1s", "after 1s"]);
    let said: Vec<&str> = notes.iter().map(|n| n.message.as_str()).collect();
    assert_eq!(
        said,
        [
            "the delay `backoff` is computed by a function, which only XState can run; its timers are kept, due after a stand-in 1s, and a finding whose run waits for one is undecided",
            "this delay is computed by a function, which only XState can run; its timers are kept, due after a stand-in 1s, and a finding whose run waits for one is undecided",
        ]
    );
    assert_eq!(machine.computed_delays().len(), 2);
    let found = crate::lint::lint(&machine);
    assert!(found.iter().all(|d| d.code != "S002"), "{found:#?}");
    let i004 = (found.iter())
        .find(|d| d.code == "I004")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert_eq!(i004.verdict, Some(crate::Verdict::Undecided), "{i004:#?}");
    let why = i004.replay.as_deref().unwrap_or_default();
    assert!(
        why.contains("rests on the delay `backoff` computed at m.ts:3:"),
        "{why}"
    );
}

/// The identity guard a finding's help gives for an XState machine is
/// JavaScript that the translator reads back as one: pasted as written,
/// the findings are gone.
#[test]
fn the_identity_guard_help_of_an_xstate_machine_pastes_as_javascript() {
    let machine = |guard: &str, append: &str| {
        format!(
            "import {{ assign, setup }} from 'xstate';\n\
            export const cart = setup({{\n\
              types: {{}} as {{ events: {{ type: 'ADD_ITEM'; id: string; qty: number }} }},\n\
            }}).createMachine({{\n\
              id: 'cart',\n\
              context: {{ count: 0, seenAddItem: [] }},\n\
              initial: 'open',\n\
              states: {{\n\
                open: {{ on: {{ ADD_ITEM: {{\n\
                  {guard}\n\
                  actions: assign({{ count: ({{ context, event }}) => context.count + event.qty, {append} }}),\n\
                }} }} }},\n\
              }},\n\
            }});\n"
        )
    };
    let (unguarded, _) = loaded_machine(&machine("", ""));
    let found = crate::lint::lint(&unguarded);
    let i004 = (found.iter())
        .find(|d| d.code == "I004")
        .unwrap_or_else(|| panic!("{found:#?}"));
    let help = i004.help.as_deref().unwrap_or_default();
    // `guard the transition with `GUARD` and add ... (`FIELD: APPEND`)`.
    let quoted: Vec<&str> = help.split('`').skip(1).step_by(2).collect();
    let (guard, append) = (quoted[0], quoted[quoted.len() - 1]);
    assert_eq!(
        guard,
        "({ context, event }) => !context.seenAddItem.includes(event.id)"
    );
    assert_eq!(
        append,
        "seenAddItem: ({ context, event }) => [...context.seenAddItem, event.id]"
    );
    let (guarded, notes) = loaded_machine(&machine(&format!("guard: {guard},"), append));
    assert!(notes.is_empty(), "{notes:#?}");
    let found = crate::lint::lint(&guarded);
    assert!(
        found.iter().all(|d| !matches!(d.code, "I001" | "I004")),
        "{found:#?}"
    );
}

/// States a helper builds twice (for two flows) with the same unreadable
/// part are noted once, at the part.
#[test]
fn a_part_a_helper_builds_twice_is_noted_once() {
    let text = "import { assign, createMachine } from 'xstate';\n\
        const step = (event: string) => ({ on: { [event]: { actions: assign({ error: ({ event }) => String(event.error) }) } } });\n\
        export const m = createMachine({\n\
          id: 'm',\n\
          context: { error: '' },\n\
          initial: 'a',\n\
          states: { a: { ...step('A') }, b: { ...step('B') } },\n\
        });\n";
    let (_, notes) = loaded_machine(text);
    let at = text.find("String(").expect("there") as u32;
    let here: Vec<&Diagnostic> = notes.iter().filter(|n| n.span.start == at).collect();
    assert_eq!(here.len(), 1, "{notes:#?}");
}

/// The completion of an actor the machine spawns comes from XState once
/// per actor, as an invocation's does: no redelivery hazard rests on it.
#[test]
fn a_spawned_actors_completion_is_never_a_repeat() {
    let text = "import { assign, createMachine } from 'xstate';\n\
        import { signInMachine } from './signIn';\n\
        export const m = createMachine({\n\
          id: 'authenticator',\n\
          predictableActionArguments: true,\n\
          context: { ref: null },\n\
          initial: 'signIn',\n\
          states: {\n\
            signIn: {\n\
              entry: assign({ ref: ({ spawn }) => spawn(signInMachine, 'signInActor') }),\n\
              on: { 'done.invoke.signInActor': 'authenticated' },\n\
            },\n\
            authenticated: { on: { SIGN_OUT: 'signIn' } },\n\
          },\n\
        });\n";
    let found = lint_ts(text);
    let on_completion: Vec<&Diagnostic> = found
        .iter()
        .filter(|d| d.message.contains("xstate.done.actor.signInActor"))
        .collect();
    assert!(on_completion.is_empty(), "{on_completion:#?}");
    // The event from outside still is one.
    assert!(
        found
            .iter()
            .any(|d| d.code == "I003" && d.message.contains("SIGN_OUT")),
        "{found:#?}"
    );
}

/// A repository on disk for the tests that follow imports: `files` written
/// under a fresh directory, which is returned.
fn repository(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("idemchart-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("written");
    }
    root
}

/// The file at `path` under `root`, loaded.
fn load_at(root: &std::path::Path, path: &str) -> Loaded {
    let path = root.join(path);
    let text = std::fs::read_to_string(&path).expect("readable");
    load(
        SourceFile::new(path.to_string_lossy(), text),
        &Settings::default(),
    )
}

/// States spread from a module that the tsconfig's `paths` names (`import
/// { idleStates } from '@bookings/flow'`) are read whole, and a finding in
/// them is reported in that module.
#[test]
fn states_spread_from_a_tsconfig_alias_are_read() {
    let root = repository(
        "alias",
        &[
            (
                "tsconfig.json",
                "{\n  // the app's aliases\n  \"compilerOptions\": { \"baseUrl\": \".\", \"paths\": { \"@bookings/flow\": [\"src/flow/index.ts\"], \"@bookings/*\": [\"src/*\"] } },\n}\n",
            ),
            ("src/flow/index.ts", "export * from './idle';\n"),
            (
                "src/flow/idle.ts",
                "export const idleStates = { idle: { on: { SEARCH: 'searching' } } };\n",
            ),
            ("src/domain/timing.ts", "export const DEBOUNCE_MS = 300;\n"),
            (
                "src/machines/search.machine.ts",
                "import { assign, createMachine } from 'xstate';\n\
                 import { idleStates } from '@bookings/flow';\n\
                 import { DEBOUNCE_MS } from '@bookings/domain/timing';\n\
                 export const m = createMachine({\n\
                   id: 'search',\n\
                   context: { searches: 0 },\n\
                   initial: 'idle',\n\
                   states: {\n\
                     ...idleStates,\n\
                     searching: {\n\
                       entry: assign({ searches: ({ context }) => context.searches + 1 }),\n\
                       after: { [DEBOUNCE_MS]: 'idle' },\n\
                     },\n\
                   },\n\
                 });\n",
            ),
        ],
    );
    let loaded = load_at(&root, "src/machines/search.machine.ts");
    let machine = loaded.machines[0].machine.as_ref().expect("loads");
    assert!(
        loaded.machines[0].notes.is_empty(),
        "{:#?}",
        loaded.machines[0].notes
    );
    let paths: Vec<&str> = machine.states.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["", "idle", "searching"]);
    let triggers: Vec<String> = machine
        .transitions
        .iter()
        .map(|t| t.trigger.to_string())
        .collect();
    assert_eq!(triggers, ["SEARCH", "after 300ms"]);
    // The repeated SEARCH re-enters `searching` from `idle`, in the aliased module.
    let found = crate::lint::lint(machine);
    let by_file = loaded.sources.split(found);
    assert!(
        by_file
            .iter()
            .any(|(file, found)| file.path.ends_with("src/flow/idle.ts")
                && found.iter().any(|d| d.code == "I003")),
        "{by_file:#?}"
    );
    std::fs::remove_dir_all(&root).ok();
}

/// A `setup(...)` exported by one module and made into machines by others
/// (`engine.createMachine(definition)`): a JSON definition is read with
/// the implementations of the setup, and a definition made at run time is
/// a machine that is not read, with a note.
#[test]
fn machines_of_an_imported_setup_are_xstates() {
    let root = repository(
        "setup",
        &[
            (
                "src/engine/setup.ts",
                "import { assign, setup } from 'xstate';\n\
                 export const engine = setup({\n\
                   actions: { appendLine: assign({ lines: ({ context, event }) => [...context.lines, event.line] }) },\n\
                 });\n",
            ),
            (
                "definitions/invoice.json",
                "{ \"id\": \"invoice\", \"initial\": \"open\", \"context\": { \"lines\": [] },\n  \"states\": { \"open\": { \"on\": { \"line item added\": { \"actions\": \"appendLine\" } } } } }\n",
            ),
            (
                "src/workflows/invoice.ts",
                "import definition from '../../definitions/invoice.json' with { type: 'json' };\n\
                 import { engine } from '../engine/setup.js';\n\
                 export const invoiceMachine = engine.createMachine(definition);\n",
            ),
            (
                "src/workflows/registry.ts",
                "import { engine } from '../engine/setup.js';\n\
                 export const build = (definition: unknown) => engine.createMachine(definition as never);\n",
            ),
        ],
    );
    let loaded = load_at(&root, "src/workflows/invoice.ts");
    let machine = loaded.machines[0].machine.as_ref().expect("loads");
    assert_eq!(machine.name, "invoice");
    let found = crate::lint::lint(machine);
    let i004 = found
        .iter()
        .find(|d| d.code == "I004")
        .expect("the append is read");
    assert_eq!(
        i004.verdict,
        Some(crate::diagnostic::Verdict::Confirmed),
        "{i004:#?}"
    );
    let loaded = load_at(&root, "src/workflows/registry.ts");
    assert!(loaded.is_machine_file);
    let notes = loaded.machines[0].machine.as_ref().expect_err("not read");
    assert!(notes[0].message.contains("made at run time"), "{notes:#?}");
    std::fs::remove_dir_all(&root).ok();
}

/// A handler that reads a field of a payload field (`event.line.amountCents`)
/// gets an object of those fields in the replay's payloads (a field a guard
/// compares with a literal taking it), so that the repeat it applies is
/// shown, not refused by a failing expression.
#[test]
fn a_payload_field_of_fields_is_made_for_the_replay() {
    let text = "import { assign, createMachine } from 'xstate';\n\
        export const m = createMachine({\n\
          id: 'invoice',\n\
          context: { lines: [], totalCents: 0 },\n\
          initial: 'open',\n\
          states: { open: { on: {\n\
            'line item added': { actions: assign({\n\
              lines: ({ context, event }) => [...context.lines, event.line],\n\
              totalCents: ({ context, event }) => context.totalCents + event.line.amountCents,\n\
            }) },\n\
            'note added': { guard: ({ event }) => event.note.kind === 'billing', actions: assign({\n\
              notes: ({ context, event }) => [...context.notes, event.note],\n\
            }) },\n\
          } } },\n\
        });\n";
    let text = &text.replace("totalCents: 0 }", "totalCents: 0, notes: [] }");
    let found = lint_ts(text);
    for field in ["lines: (", "totalCents: (", "notes: ("] {
        let i004 = finding(&found, "I004", field, text);
        assert_eq!(
            i004.verdict,
            Some(crate::diagnostic::Verdict::Confirmed),
            "{i004:#?}"
        );
    }
}
