use super::*;
use crate::expr;

const PEDIDO: &str = include_str!("../../../tests/data/spec/pedido.yaml");
const LAMPARA: &str = include_str!("../../../tests/data/spec/lampara.yaml");

/// `line:col` of a byte offset in `src`.
fn at(src: &str, offset: u32) -> String {
    let (line, column) = SourceFile::new("t", src).line_col(offset);
    format!("{line}:{column}")
}

fn parse_ok(src: &str) -> MachineDoc {
    match parse(src) {
        Ok(doc) => doc,
        Err(errors) => panic!("{src}\n{errors:#?}"),
    }
}

fn names(names: &[Name]) -> Vec<&str> {
    names.iter().map(|n| n.text.as_str()).collect()
}

fn state<'d>(parent: &'d StateDoc, key: &str) -> &'d StateDoc {
    parent
        .states
        .iter()
        .find(|s| s.key.text == key)
        .unwrap_or_else(|| panic!("no state {key}"))
}

/// An expression's text must sit at its offset in the file, character for
/// character, whenever the scalar holds no escapes.
fn assert_in_place(src: &str, e: &ExprText) {
    let start = e.offset as usize;
    assert_eq!(src.get(start..start + e.text.len()), Some(e.text.as_str()));
}

#[test]
fn reads_pedido() {
    let doc = parse_ok(PEDIDO);
    let name = doc.name.as_ref().unwrap();
    assert_eq!(name.text, "pedido");
    assert_eq!(at(PEDIDO, name.span.start), "1:10");
    let (version, version_span) = doc.version.unwrap();
    assert_eq!(
        (version, at(PEDIDO, version_span.start)),
        (1, "2:10".into())
    );
    assert_eq!(doc.description.as_deref(), Some("Order payment lifecycle."));
    assert_eq!(doc.root.description, None);

    let context: Vec<(&str, String)> = doc
        .context
        .iter()
        .map(|c| (c.name.text.as_str(), c.value.to_string()))
        .collect();
    assert_eq!(
        context,
        [
            ("total", "100".into()),
            ("cobrado", "0".into()),
            ("cobrosVistos", "[]".into())
        ]
    );

    let [source] = &doc.sources[..] else {
        panic!("{:?}", doc.sources)
    };
    assert_eq!(source.name.text, "pasarela");
    let horizon = source.retry_horizon.as_ref().unwrap();
    assert_eq!(
        (horizon.text.as_str(), at(PEDIDO, horizon.span.start)),
        ("72h", "11:30".into())
    );
    let dedup = doc.dedup.as_ref().unwrap();
    assert_eq!(dedup.retention.as_ref().unwrap().text, "7d");
    assert_eq!(at(PEDIDO, dedup.span.start), "13:1");

    let events: Vec<&str> = doc.events.iter().map(|e| e.name.text.as_str()).collect();
    assert_eq!(
        events,
        ["PAGO_CONFIRMADO", "COBRO_PARCIAL", "ENVIADO", "CANCELAR"]
    );
    assert_eq!(at(PEDIDO, doc.events[0].name.span.start), "17:3");
    let cobro = &doc.events[1];
    assert_eq!(cobro.id_field.as_ref().unwrap().text, "cobroId");
    assert_eq!(cobro.source.as_ref().unwrap().text, "pasarela");
    let payload: Vec<(&str, &str)> = cobro
        .payload
        .as_ref()
        .unwrap()
        .iter()
        .map(|(f, t)| (f.text.as_str(), t.text.as_str()))
        .collect();
    assert_eq!(payload, [("cobroId", "string"), ("importe", "number")]);
    assert!(doc.events[0].payload.is_none());

    let [effect] = &doc.effects[..] else {
        panic!("{:?}", doc.effects)
    };
    assert_eq!(effect.name.text, "encolarEnvio");
    assert_eq!(effect.idempotency.as_ref().unwrap().text, "key");

    assert_eq!(names(&doc.root.initial), ["pendiente"]);
    let keys: Vec<&str> = doc
        .root
        .states
        .iter()
        .map(|s| s.key.text.as_str())
        .collect();
    assert_eq!(keys, ["pendiente", "pagado", "enviado", "cancelado"]);

    let pendiente = state(&doc.root, "pendiente");
    assert_eq!(at(PEDIDO, pendiente.key.span.start), "30:3");
    let on: Vec<(&str, Vec<&str>)> = pendiente
        .on
        .iter()
        .map(|t| (t.event.as_ref().unwrap().text.as_str(), names(&t.targets)))
        .collect();
    assert_eq!(
        on,
        [
            ("PAGO_CONFIRMADO", vec!["pagado"]),
            ("COBRO_PARCIAL", vec![]),
            ("CANCELAR", vec!["cancelado"])
        ]
    );
    let pago = &pendiente.on[0];
    assert_eq!(at(PEDIDO, pago.event.as_ref().unwrap().span.start), "32:7");
    assert_eq!(at(PEDIDO, pago.span.start), "32:7");
    assert_eq!(at(PEDIDO, pago.targets[0].span.start), "32:24");

    let cobro = &pendiente.on[1];
    let guard = cobro.guard.as_ref().unwrap();
    assert_eq!(guard.text, "!(event.cobroId in context.cobrosVistos)");
    assert_eq!(at(PEDIDO, guard.offset), "34:17");
    assert_in_place(PEDIDO, guard);
    let [ActionDoc::Assign { fields, span }] = &cobro.actions[..] else {
        panic!("{:?}", cobro.actions)
    };
    assert_eq!(at(PEDIDO, span.start), "36:13");
    let fields: Vec<(&str, &str, String)> = fields
        .iter()
        .map(|(n, e)| (n.text.as_str(), e.text.as_str(), at(PEDIDO, e.offset)))
        .collect();
    assert_eq!(
        fields,
        [
            (
                "cobrosVistos",
                "context.cobrosVistos + [event.cobroId]",
                "37:30".into()
            ),
            ("cobrado", "context.cobrado + event.importe", "38:25".into())
        ]
    );

    let [always] = &pendiente.always[..] else {
        panic!("{:?}", pendiente.always)
    };
    assert_eq!(names(&always.targets), ["pagado"]);
    assert!(always.event.is_none() && always.delay.is_none());
    assert_eq!(at(PEDIDO, always.span.start), "41:9");
    assert_in_place(PEDIDO, always.guard.as_ref().unwrap());

    let pagado = state(&doc.root, "pagado");
    let [ActionDoc::Named { name }] = &pagado.entry[..] else {
        panic!("{:?}", pagado.entry)
    };
    assert_eq!(
        (name.text.as_str(), at(PEDIDO, name.span.start)),
        ("encolarEnvio", "44:13".into())
    );
    let enviado = state(&doc.root, "enviado");
    assert_eq!(enviado.kind.as_ref().unwrap().text, "final");
    assert!(enviado.states.is_empty() && enviado.on.is_empty());
}

#[test]
fn reads_lampara() {
    let doc = parse_ok(LAMPARA);
    assert_eq!(doc.name.as_ref().unwrap().text, "lampara");
    assert!(doc.version.is_none());
    assert_eq!(doc.context[0].value, serde_json::json!(0));
    let keys: Vec<&str> = doc
        .root
        .states
        .iter()
        .map(|s| s.key.text.as_str())
        .collect();
    assert_eq!(keys, ["funcionando", "averiada", "panel"]);

    let funcionando = state(&doc.root, "funcionando");
    assert_eq!(names(&funcionando.initial), ["apagada"]);
    let children: Vec<&str> = funcionando
        .states
        .iter()
        .map(|s| s.key.text.as_str())
        .collect();
    assert_eq!(children, ["apagada", "encendida", "recuerdo"]);

    let encendida = state(funcionando, "encendida");
    let [ActionDoc::Assign { fields, .. }] = &encendida.entry[..] else {
        panic!("{:?}", encendida.entry)
    };
    assert_eq!(fields[0].0.text, "encendidos");
    assert_eq!(fields[0].1.text, "context.encendidos + 1");
    assert_eq!(at(LAMPARA, fields[0].1.offset), "22:36");
    let [ActionDoc::Log { expr, .. }] = &encendida.exit[..] else {
        panic!("{:?}", encendida.exit)
    };
    assert_eq!(expr.text, "\"apagando\"");
    assert_eq!(at(LAMPARA, expr.offset), "24:19");
    assert_in_place(LAMPARA, expr);

    let refrescar = &encendida.on[1];
    assert_eq!(refrescar.event.as_ref().unwrap().text, "REFRESCAR");
    assert_eq!(names(&refrescar.targets), ["encendida"]);
    assert!(refrescar.reenter);
    assert!(!encendida.on[0].reenter);
    let [after] = &encendida.after[..] else {
        panic!("{:?}", encendida.after)
    };
    let delay = after.delay.as_ref().unwrap();
    assert_eq!(
        (delay.text.as_str(), at(LAMPARA, delay.span.start)),
        ("30m", "29:11".into())
    );
    assert!(after.event.is_none());
    assert_eq!(names(&after.targets), ["apagada"]);
    let [(lint, reason)] = &encendida.allow[..] else {
        panic!("{:?}", encendida.allow)
    };
    assert_eq!(lint.text, "reentry-reruns-actions");
    assert_eq!(reason, "the counter measures refreshes on purpose");

    let recuerdo = state(funcionando, "recuerdo");
    assert_eq!(recuerdo.kind.as_ref().unwrap().text, "history");
    assert_eq!(recuerdo.history.as_ref().unwrap().text, "deep");
    assert!(recuerdo.target.is_empty());

    let averiada = state(&doc.root, "averiada");
    let [
        ActionDoc::Effect { name, args, .. },
        ActionDoc::Raise { event, data, .. },
    ] = &averiada.entry[..]
    else {
        panic!("{:?}", averiada.entry)
    };
    assert_eq!(name.text, "avisarTecnico");
    assert_eq!(
        (args[0].0.text.as_str(), args[0].1.text.as_str()),
        ("motivo", "\"fallo\"")
    );
    assert_in_place(LAMPARA, &args[0].1);
    assert_eq!(event.text, "DIAGNOSTICAR");
    assert!(data.is_empty());
    let diagnosticar = &averiada.on[0];
    assert!(diagnosticar.targets.is_empty());
    assert!(matches!(&diagnosticar.actions[..], [ActionDoc::Log { .. }]));
    assert_eq!(names(&averiada.on[1].targets), ["funcionando.recuerdo"]);

    let panel = state(&doc.root, "panel");
    assert_eq!(panel.kind.as_ref().unwrap().text, "parallel");
    let clara = state(state(panel, "pantalla"), "clara");
    assert!(clara.on.is_empty() && clara.kind.is_none());
    let oscura = state(state(panel, "pantalla"), "oscura");
    assert_eq!(oscura.on[0].event.as_ref().unwrap().text, "PULSAR");
    let guard = panel.always[0].guard.as_ref().unwrap();
    assert_eq!(guard.text, "in_state(\"averiada\")");
    assert_in_place(LAMPARA, guard);
}

#[test]
fn reads_every_transition_shorthand_in_document_order() {
    let src = "\
machine: m
states:
  a:
    on:
      '*': x
      E: [b, { target: c, guard: ok }, d]
      foo.* BAR: { target: [p.q, '#r'], reenter: false, description: both }
      NOTHING: []
    always: e
    after:
      1s: [f]
      500ms: { target: g }
  b:
    always: { target: h, actions: log_it }
";
    let doc = parse_ok(src);
    let a = state(&doc.root, "a");
    let on: Vec<(&str, Vec<&str>, bool)> =
        a.on.iter()
            .map(|t| {
                let event = t.event.as_ref().unwrap().text.as_str();
                (event, names(&t.targets), t.guard.is_some())
            })
            .collect();
    assert_eq!(
        on,
        [
            ("*", vec!["x"], false),
            ("E", vec!["b"], false),
            ("E", vec!["c"], true),
            ("E", vec!["d"], false),
            ("foo.* BAR", vec!["p.q", "#r"], false),
        ]
    );
    // A transition in a list is placed at its item, one under its key at the key.
    assert_eq!(at(src, a.on[2].span.start), "6:14");
    assert_eq!(at(src, a.on[4].span.start), "7:7");
    assert_eq!(a.on[4].description.as_deref(), Some("both"));
    assert_eq!(names(&a.always[0].targets), ["e"]);
    let after: Vec<(&str, Vec<&str>)> = a
        .after
        .iter()
        .map(|t| (t.delay.as_ref().unwrap().text.as_str(), names(&t.targets)))
        .collect();
    assert_eq!(after, [("1s", vec!["f"]), ("500ms", vec!["g"])]);
    let b = state(&doc.root, "b");
    assert!(
        matches!(&b.always[0].actions[..], [ActionDoc::Named { name }] if name.text == "log_it")
    );
}

#[test]
fn reads_action_and_state_shorthands() {
    let src = "\
machine: m
context:
  b: { z: 1, a: [1, 'x', null, true, 1.5] }
  a: 2
initial: [p.x, q.y]
type: parallel
id: top
tags: []
states:
  p:
    entry: hello
    exit: { log: 'size(context.b)' }
    states:
      x:
  q:
    id: cola
    tags: [slow, 'needs review']
    description: 42
    states:
      y:
        entry:
          - assign: { cobrado: 0, flag: true }
          - raise: PING
            data: { n: 1 }
          - effect: charge
            with: { amount: context.a }
      h: { type: history, target: [y] }
";
    let doc = parse_ok(src);
    let keys: Vec<&str> = doc.context.iter().map(|c| c.name.text.as_str()).collect();
    assert_eq!(keys, ["b", "a"]);
    assert_eq!(
        doc.context[0].value.to_string(),
        r#"{"z":1,"a":[1,"x",null,true,1.5]}"#
    );
    assert_eq!(names(&doc.root.initial), ["p.x", "q.y"]);
    assert_eq!(doc.root.kind.as_ref().unwrap().text, "parallel");
    assert_eq!(doc.root.id.as_ref().unwrap().text, "top");
    let p = state(&doc.root, "p");
    assert!(matches!(&p.entry[..], [ActionDoc::Named { name }] if name.text == "hello"));
    assert!(matches!(&p.exit[..], [ActionDoc::Log { expr, .. }] if expr.text == "size(context.b)"));
    // A state left empty (`x:`) is a state without keys.
    assert!(state(p, "x").states.is_empty());
    let q = state(&doc.root, "q");
    assert_eq!(q.tags, ["slow", "needs review"]);
    assert_eq!(q.description.as_deref(), Some("42"));
    let y = state(q, "y");
    let [
        ActionDoc::Assign { fields, .. },
        ActionDoc::Raise { event, data, .. },
        ActionDoc::Effect { name, args, .. },
    ] = &y.entry[..]
    else {
        panic!("{:?}", y.entry)
    };
    // Numbers and booleans where an expression goes are expressions as written.
    let assign: Vec<(&str, &str, String)> = fields
        .iter()
        .map(|(n, e)| (n.text.as_str(), e.text.as_str(), at(src, e.offset)))
        .collect();
    assert_eq!(
        assign,
        [
            ("cobrado", "0", "22:32".into()),
            ("flag", "true", "22:41".into())
        ]
    );
    assert_eq!(
        (event.text.as_str(), data[0].1.text.as_str()),
        ("PING", "1")
    );
    assert_eq!(
        (name.text.as_str(), args[0].1.text.as_str()),
        ("charge", "context.a")
    );
    assert_eq!(names(&state(q, "h").target), ["y"]);
}

#[test]
fn places_expressions_at_their_first_character() {
    // Plain, double-quoted, single-quoted with a doubled quote, a block scalar
    // after a blank line, and an alias (whose text is at its anchor).
    let src = "\
machine: m
states:
  a:
    on:
      A: { guard: context.x > 1 }
      B: { guard: \"context.x > 2\" }
      C: { guard: 'context.s == \"it''s\"' }
      D:
        guard: |

          context.x > 3
      E: { guard: &g 'context.x > 4' }
      F: { guard: *g }
";
    let doc = parse_ok(src);
    let a = state(&doc.root, "a");
    let guards: Vec<(&str, String)> =
        a.on.iter()
            .map(|t| {
                let g = t.guard.as_ref().unwrap();
                // The character at `offset + i` is the text's `i`th whenever the
                // text starts with content.
                let first = g.text.trim_start();
                let first_at = g.offset as usize + (g.text.len() - first.len());
                assert_eq!(src[first_at..].chars().next(), first.chars().next());
                (g.text.as_str(), at(src, g.offset))
            })
            .collect();
    assert_eq!(
        guards,
        [
            ("context.x > 1", "5:19".into()),
            ("context.x > 2", "6:20".into()),
            ("context.s == \"it's\"", "7:20".into()),
            ("context.x > 3\n", "11:11".into()),
            ("context.x > 4", "12:23".into()),
            ("context.x > 4", "12:23".into()),
        ]
    );
}

#[test]
fn expression_errors_point_into_the_quoted_guard() {
    let src = "machine: m\nstates:\n  a:\n    on:\n      E: { guard: \"context.x >= )\" }\n";
    let doc = parse_ok(src);
    let guard = state(&doc.root, "a").on[0].guard.clone().unwrap();
    let error = expr::parse(&guard.text, guard.offset).unwrap_err();
    assert_eq!(error.message, "unexpected `)` in expression");
    assert_eq!(at(src, error.span.start), "5:33");
    assert_eq!(&src[error.span.range()], ")");
}

/// Parses `src`, expecting it to fail with exactly `expected`: one line per
/// diagnostic, `CODE LINE:COL message`, then `| help: ...` and
/// `| first defined here at LINE:COL` where the diagnostic has them.
/// Returns the mismatch, so that one run shows every failing case.
fn check_error(src: &str, expected: &str) -> Result<(), String> {
    let errors = match parse(src) {
        Ok(doc) => return Err(format!("expected errors for {src:?}, got {doc:?}")),
        Err(errors) => errors,
    };
    let actual: Vec<String> = errors
        .iter()
        .map(|d| {
            let mut line = format!("{} {} {}", d.code, at(src, d.span.start), d.message);
            if let Some(help) = &d.help {
                line.push_str(&format!(" | help: {help}"));
            }
            for label in &d.labels {
                line.push_str(&format!(
                    " | {} at {}",
                    label.message,
                    at(src, label.span.start)
                ));
            }
            line
        })
        .collect();
    let actual = actual.join("\n");
    if actual == expected.trim() {
        Ok(())
    } else {
        Err(format!(
            "{src:?}\n  expected: {expected}\n  actual:   {actual}"
        ))
    }
}

#[test]
fn reports_malformed_files_at_their_place() {
    let cases: &[(&str, &str)] = &[
        // A key out of place in an invocation.
        (
            "machine: m\ninitial: a\nstates:\n  a: { invoke: { src: s, onDon: b } }\n  b: {}\n",
            "E002 4:26 unknown key `onDon` | help: did you mean `onDone`?",
        ),
        // Unknown keys, with the closest allowed key.
        (
            "machine: m\nstats: {}\n",
            "E002 2:1 unknown key `stats` | help: did you mean `states`?",
        ),
        (
            "machine: m\nstates:\n  a:\n    entyr: [x]\n",
            "E002 4:5 unknown key `entyr` | help: did you mean `entry`?",
        ),
        (
            "machine: m\nevents:\n  E: { ids: eId }\n",
            "E002 3:8 unknown key `ids` | help: did you mean `id`?",
        ),
        (
            "machine: m\nstates:\n  a:\n    on:\n      E: { target: b, cond: x }\n",
            "E002 5:23 unknown key `cond` | help: `cond` is XState v4's name for `guard`",
        ),
        (
            "machine: m\nstates:\n  a:\n    context: {}\n",
            "E002 4:5 unknown key `context` | help: this key belongs at the top level of the file",
        ),
        (
            "machine: m\nstates:\n  a:\n    zzz: 1\n",
            "E002 4:5 unknown key `zzz` | help: expected one of `type`, `initial`, `history`, \
             `target`, `id`, `entry`, `exit`, `on`, `always`, `after`, `invoke`, `states`, \
             `description`, `tags` or `allow`",
        ),
        // Duplicate keys, at the repetition, with the first place.
        (
            "machine: m\nstates:\n  a: {}\n  b: {}\n  a: {}\n",
            "E004 5:3 `a` is defined twice | first defined here at 3:3",
        ),
        (
            "machine: m\nmachine: n\n",
            "E004 2:1 `machine` is defined twice | first defined here at 1:1",
        ),
        // Deep in a list too, where the rest of the file repeats nothing.
        (
            "machine: m\nstates:\n  a:\n    entry:\n      - assign: { x: 1, x: 2 }\n",
            "E004 5:25 `x` is defined twice | first defined here at 5:19",
        ),
        // Values of the wrong shape.
        (
            "machine: m\ninitial: { x: 1 }\n",
            "E003 2:10 `initial` must be a state or a list of states, found a mapping",
        ),
        (
            "machine: m\nversion: one\n",
            "E003 2:10 `version` must be a whole number such as `1`, found a string",
        ),
        (
            "machine: m\nstates:\n  a: final\n",
            "E003 3:6 state `a` must be a mapping of its keys (such as `{ type: final }` or \
             `{}`), found a string",
        ),
        (
            "machine: m\nstates:\n  a:\n    on:\n      E: { target: b, reenter: yes }\n",
            "E003 5:32 `reenter` must be `true` or `false`, found a string",
        ),
        (
            "machine: m\nstates:\n  a:\n    on:\n      E:\n",
            "E003 5:7 `E` must be a target, a transition mapping (`{ target, guard, actions }`) \
             or a list of them, found nothing",
        ),
        (
            "machine: m\nstates:\n  a:\n    on:\n      E: { guard: [1] }\n",
            "E003 5:19 `guard` must be an expression, found a list: quote an expression that \
             starts with `[` or `{`",
        ),
        (
            "machine: m\nstates:\n  a:\n    tags: slow\n",
            "E003 4:11 `tags` must be a list of strings, found a string",
        ),
        (
            "machine: m\n? [a, b]\n: c\n",
            "E003 2:3 a key must be a name, found a list",
        ),
        // Actions.
        (
            "machine: m\nstates:\n  a:\n    entry:\n      - { assign: { x: '1' }, log: '2' }\n",
            "E003 5:31 an action does one thing: `assign` and `log` must be two items of the \
             action list",
        ),
        (
            "machine: m\nstates:\n  a:\n    entry:\n      - { frobnicate: x }\n",
            "E002 5:11 unknown key `frobnicate` | help: expected one of `assign`, `raise`, \
             `send`, `data`, `delay`, `id`, `cancel`, `effect`, `with` or `log`",
        ),
        (
            "machine: m\nstates:\n  a:\n    entry:\n      - {}\n",
            "E003 5:9 an action needs one of `assign`, `raise`, `send`, `cancel`, `effect` or `log`",
        ),
        (
            "machine: m\nstates:\n  a:\n    entry:\n      - raise: X\n        with: { a: b }\n",
            "E003 6:9 `with` belongs to an `effect` action",
        ),
        (
            "machine: m\nstates:\n  a:\n    exit: [ 5 ]\n",
            "E003 4:13 an action in `exit` must be a name or a mapping with one of `assign`, \
             `raise`, `send`, `cancel`, `effect` or `log`, found a number",
        ),
        // Suppressions need their reason.
        (
            "machine: m\nstates:\n  a:\n    allow:\n      self-accepting-event: ''\n      \
             event-without-id:\n",
            "E003 5:29 allowing `self-accepting-event` needs a reason: say why the lint does \
             not apply here\n\
             E003 6:7 allowing `event-without-id` needs a reason: say why the lint does not \
             apply here",
        ),
        // YAML syntax.
        (
            "machine: \"m\nstates: {}\n",
            "E001 1:10 invalid YAML: unclosed quote",
        ),
        (
            "machine: m\nstates:\n  a:\n    on:\n     E: b\n   F: c\n",
            "E001 6:4 invalid YAML: while parsing a block mapping, did not find expected key \
             | help: check the indentation: the keys of one mapping and the items of one list \
             start in the same column",
        ),
        // A tab is reported at the tab itself, with advice about tabs.
        (
            "machine: m\nstates:\n  a:\n\ton: {}\n",
            "E001 4:1 invalid YAML: tabs disallowed within this context (block indentation) \
             | help: indent with spaces; YAML does not allow tabs for indentation",
        ),
        (
            "machine: m\nstates: [a, b\n",
            "E001 2:9 invalid YAML: unclosed bracket '['",
        ),
        (
            "machine: m\nstates: *nowhere\n",
            "E001 2:9 invalid YAML: reference to unknown value",
        ),
        (
            "machine: m\n---\nmachine: n\n",
            "E001 3:1 invalid YAML: only single YAML document expected but multiple found",
        ),
        // Documents that are not a machine.
        (
            "",
            "E003 1:1 the file is empty: a machine file is a YAML mapping that starts with \
             `machine: NAME`",
        ),
        (
            "# nothing yet\n",
            "E003 1:1 the file is empty: a machine file is a YAML mapping that starts with \
             `machine: NAME`",
        ),
        (
            "- machine: m\n",
            "E003 1:1 a machine file is a YAML mapping (`machine: NAME`, `states: ...`), but \
             this document is a list",
        ),
        // Several problems are reported together, in document order.
        (
            "machine: m\nstats: {}\nstates:\n  a:\n    on:\n      E: { target: b, reenter: 1 }\n",
            "E002 2:1 unknown key `stats` | help: did you mean `states`?\n\
             E003 6:32 `reenter` must be `true` or `false`, found a number",
        ),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(src, expected)| check_error(src, expected).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

mod printing {
    use indexmap::IndexMap;

    use super::*;
    use crate::model::*;

    fn expr(text: &str) -> crate::expr::Expr {
        expr::parse(text, 0).unwrap()
    }

    fn name(text: &str) -> Name {
        Name {
            text: text.to_string(),
            span: Span::default(),
        }
    }

    fn target(text: &str, state: u32) -> Target {
        Target {
            text: text.to_string(),
            state: StateId(state),
            span: Span::default(),
        }
    }

    fn args(pairs: &[(&str, &str)]) -> IndexMap<String, Argument> {
        pairs
            .iter()
            .map(|(field, e)| {
                let assignment = Assignment {
                    expr: expr(e),
                    span: Span::default(),
                };
                (field.to_string(), assignment)
            })
            .collect()
    }

    fn new_state(key: &str, path: &str, kind: StateKind, parent: Option<u32>) -> State {
        State::new(key, path, kind, parent.map(StateId))
    }

    fn transition(source: u32, trigger: Trigger, targets: Vec<Target>) -> Transition {
        Transition::new(StateId(source), trigger, targets)
    }

    fn on(event: &str) -> Trigger {
        Trigger::Event(EventDescriptor::parse(event))
    }

    /// A machine that uses every construct the printer knows.
    pub(super) fn sample() -> Machine {
        let span = Span::default();
        let mut states = vec![
            new_state("demo", "", StateKind::Compound, None),
            new_state("main", "main", StateKind::Compound, Some(0)),
            new_state("idle", "main.idle", StateKind::Atomic, Some(1)),
            new_state("busy", "main.busy", StateKind::Atomic, Some(1)),
            new_state(
                "hist",
                "main.hist",
                StateKind::History(HistoryKind::Deep),
                Some(1),
            ),
            new_state("checking", "checking", StateKind::Atomic, Some(0)),
            new_state("fin", "fin", StateKind::Final, Some(0)),
            new_state("on", "on", StateKind::Parallel, Some(0)),
            new_state("r", "on.r", StateKind::Atomic, Some(7)),
        ];
        states[0].children = vec![StateId(1), StateId(5), StateId(6), StateId(7)];
        states[0].initial = vec![target("main", 1)];
        states[1].children = vec![StateId(2), StateId(3), StateId(4)];
        states[1].initial = vec![target("idle", 2)];
        states[1].description = Some("Where the work happens.".into());
        states[4].initial = vec![target("idle", 2)];
        states[6].id = Some("fin".into());
        states[7].children = vec![StateId(8)];

        let mut guarded = transition(2, on("GO"), vec![target("busy", 3)]);
        guarded.guard = Some(expr("event.amount > 0 && !(event.goId in context.seen)"));
        guarded.actions = vec![Action::Assign {
            fields: args(&[
                ("n", "context.n + event.amount"),
                ("seen", "context.seen + [event.goId]"),
            ]),
            span,
        }];
        let mut reenter = transition(3, on("REFRESH"), vec![target("busy", 3)]);
        reenter.reenter = true;
        let mut always = transition(3, Trigger::Always, vec![target("idle", 2)]);
        always.guard = Some(expr("in_state(\"fin\")"));
        let mut targetless = transition(3, on("foo.* *"), vec![]);
        targetless.actions = vec![Action::Log {
            expr: expr("\"it's \\\"odd\\\"\""),
            span,
        }];
        targetless.description = Some("two\nlines".into());
        let transitions = vec![
            guarded,
            transition(2, on("GO"), vec![target("hist", 4)]),
            transition(2, on("STOP"), vec![target("#fin", 6)]),
            reenter,
            targetless,
            always,
            transition(
                3,
                Trigger::After(Duration::from_millis(1_800_000)),
                vec![target("idle", 2)],
            ),
        ];
        states[2].on = vec![TransitionId(0), TransitionId(1), TransitionId(2)];
        states[3].on = vec![TransitionId(3), TransitionId(4)];
        states[3].always = vec![TransitionId(5)];
        states[3].after = vec![TransitionId(6)];
        states[3].entry = vec![
            Action::Effect {
                name: name("charge"),
                args: IndexMap::new(),
                span,
            },
            Action::Host {
                name: name("notify"),
                span,
            },
        ];
        states[3].exit = vec![Action::Log {
            expr: expr("\"bye\""),
            span,
        }];
        states[3].tags = vec!["hot".into(), "yes".into()];
        states[3].allow.insert(
            "reentry-reruns-actions".into(),
            Allow {
                reason: "on purpose: refreshes count".into(),
                span,
                within: Vec::new(),
            },
        );
        states[5].entry = vec![
            Action::Effect {
                name: name("charge"),
                args: args(&[("amount", "context.n")]),
                span,
            },
            Action::Raise {
                event: name("PING"),
                data: args(&[("k", "1")]),
                span,
            },
            Action::Raise {
                event: name("PONG"),
                data: IndexMap::new(),
                span,
            },
        ];

        let mut context = IndexMap::new();
        for (field, value) in [
            ("n", serde_json::json!(0)),
            ("seen", serde_json::json!([])),
            ("label", serde_json::json!("yes")),
            ("ratio", serde_json::json!(1.5)),
            ("nested", serde_json::json!({"a": [1, "x, y"], "b": null})),
        ] {
            context.insert(field.to_string(), ContextField { value, span });
        }
        let mut events = IndexMap::new();
        events.insert(
            "GO".to_string(),
            EventDecl {
                id_field: Some(name("goId")),
                source: Some(name("web")),
                payload: Some(
                    [
                        ("goId", PayloadType::String),
                        ("amount", PayloadType::Number),
                    ]
                    .into_iter()
                    .map(|(f, ty)| (f.to_string(), PayloadField { ty, span }))
                    .collect(),
                ),
                description: None,
                span,
            },
        );
        events.insert(
            "STOP".to_string(),
            EventDecl {
                id_field: None,
                source: None,
                payload: None,
                description: Some("Stops.".into()),
                span,
            },
        );
        let mut effects = IndexMap::new();
        effects.insert(
            "charge".to_string(),
            EffectDecl {
                idempotency: Idempotency::None,
                verify: Some(target("checking", 5)),
                description: None,
                span,
            },
        );
        let mut sources = IndexMap::new();
        sources.insert(
            "web".to_string(),
            Source {
                retry_horizon: Duration::parse("72h"),
                description: None,
                span,
            },
        );
        Machine {
            name: "demo".into(),
            version: Some(2),
            description: Some("Demo: every construct".into()),
            semantics: crate::model::Semantics::Xstate,
            fact_source: crate::model::FactSource::default(),
            context,
            sources,
            dedup: Some(Dedup {
                retention: Duration::parse("7d").unwrap(),
                span,
            }),
            history: Some(crate::model::HistoryKeep {
                keep: Duration::parse("30d").unwrap(),
                span,
            }),
            limits: Some(Limits {
                microsteps: 500,
                span,
            }),
            events,
            effects,
            guards: Vec::new(),
            opaque: Vec::new(),
            stand_ins: Default::default(),
            migrations: Vec::new(),
            states,
            transitions,
            span,
        }
    }

    const SAMPLE: &str = r#"machine: demo
version: 2
description: 'Demo: every construct'
semantics: xstate
context:
  'n': 0
  seen: []
  label: 'yes'
  ratio: 1.5
  nested:
    a: [1, 'x, y']
    b: null
sources:
  web: { retry_horizon: 72h }
dedup: { retention: 7d }
history: { keep: 30d }
limits: { microsteps: 500 }
events:
  GO:
    id: goId
    source: web
    payload: { goId: string, amount: number }
  STOP: { description: Stops. }
effects:
  charge: { idempotency: none, verify: checking }
initial: main
states:
  main:
    initial: idle
    states:
      idle:
        on:
          GO:
            - target: busy
              guard: event.amount > 0 && !(event.goId in context.seen)
              actions:
                - assign:
                    'n': context.n + event.amount
                    seen: 'context.seen + [event.goId]'
            - hist
          STOP: '#fin'
      busy:
        entry: [charge, notify]
        exit:
          - log: '"bye"'
        on:
          REFRESH: { target: busy, reenter: true }
          foo.* *:
            actions:
              - log: '"it''s \"odd\""'
            description: "two\nlines"
        always:
          - target: idle
            guard: in_state("fin")
        after:
          30m: idle
        tags: [hot, 'yes']
        allow:
          reentry-reruns-actions: 'on purpose: refreshes count'
      hist: { type: history, history: deep, target: idle }
    description: Where the work happens.
  checking:
    entry:
      - effect: charge
        with: { amount: context.n }
      - raise: PING
        data: { k: 1 }
      - raise: PONG
  fin: { type: final, id: fin }
  'on':
    type: parallel
    states:
      r: {}
"#;

    #[test]
    fn prints_canonical_yaml() {
        let text = format(&sample());
        assert_eq!(text, SAMPLE, "\n{text}");
    }

    #[test]
    fn printed_text_reads_back() {
        let text = format(&sample());
        let doc = parse_ok(&text);
        assert_eq!(doc.name.unwrap().text, "demo");
        assert_eq!(doc.description.as_deref(), Some("Demo: every construct"));
        assert_eq!(doc.context[2].value, serde_json::json!("yes"));
        assert_eq!(
            doc.context[4].value,
            serde_json::json!({"a": [1, "x, y"], "b": null})
        );
        let main = state(&doc.root, "main");
        let busy = state(main, "busy");
        let odd = &busy.on[1];
        assert_eq!(odd.event.as_ref().unwrap().text, "foo.* *");
        let [ActionDoc::Log { expr: log, .. }] = &odd.actions[..] else {
            panic!("{:?}", odd.actions)
        };
        assert_eq!(
            expr::parse(&log.text, log.offset).unwrap(),
            expr("\"it's \\\"odd\\\"\"")
        );
        assert_eq!(odd.description.as_deref(), Some("two\nlines"));
        assert_eq!(busy.tags, ["hot", "yes"]);
        let idle = state(main, "idle");
        let guard = idle.on[0].guard.as_ref().unwrap();
        assert_eq!(
            expr::parse(&guard.text, guard.offset).unwrap(),
            expr("event.amount > 0 && !(event.goId in context.seen)")
        );
        assert_eq!(names(&idle.on[2].targets), ["#fin"]);
        let on = state(&doc.root, "on");
        assert_eq!(on.key.text, "on");
        assert_eq!(on.kind.as_ref().unwrap().text, "parallel");
        assert!(state(on, "r").kind.is_none());
    }

    #[test]
    fn quotes_strings_only_where_yaml_needs_it() {
        let cases = [
            ("pagado", "pagado"),
            ("30m", "30m"),
            ("foo.* BAR", "foo.* BAR"),
            ("context.a >= 1", "context.a >= 1"),
            ("*", "'*'"),
            ("#id", "'#id'"),
            ("1", "'1'"),
            ("1.5", "'1.5'"),
            ("0x1F", "'0x1F'"),
            ("null", "'null'"),
            ("~", "'~'"),
            ("true", "'true'"),
            ("No", "'No'"),
            ("", "''"),
            (" padded", "' padded'"),
            ("a: b", "'a: b'"),
            ("a #b", "'a #b'"),
            ("- x", "'- x'"),
            ("[x]", "'[x]'"),
            ("it's", "it's"),
            ("'q'", "'''q'''"),
            ("tab\there", "\"tab\\there\""),
        ];
        for (text, written) in cases {
            assert_eq!(super::super::format::scalar(text), written, "{text:?}");
            // Whatever the form, it reads back as the same string.
            let doc = parse_ok(&format!("machine: m\ndescription: {written}\n"));
            assert_eq!(doc.description.as_deref(), Some(text), "{written}");
        }
    }
}

#[test]
fn reads_the_hazard_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hazards");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            if let Err(errors) = parse(&text) {
                panic!("{}: {errors:#?}", path.display());
            }
            read += 1;
        }
    }
    assert_eq!(read, 10);
}

mod round_trip {
    use super::*;
    use crate::model::Machine;
    use crate::syntax::Syntax;

    fn load(text: &str) -> Machine {
        crate::syntax::parse(text, Syntax::Yaml).unwrap_or_else(|e| panic!("{text}\n{e:#?}"))
    }

    /// Format, read back, lower: the same model; format again: the same text.
    fn check_round_trip(what: &str, machine: &Machine) {
        let text = format(machine);
        let back = crate::syntax::parse(&text, Syntax::Yaml)
            .unwrap_or_else(|e| panic!("{what}: the printed text does not load\n{text}\n{e:#?}"));
        assert_eq!(&back, machine, "{what}\n{text}");
        assert_eq!(format(&back), text, "{what}: format is not idempotent");
    }

    #[test]
    fn spec_machines_survive_format_and_reload() {
        check_round_trip("pedido", &load(PEDIDO));
        check_round_trip("lampara", &load(LAMPARA));
    }

    #[test]
    fn every_shipped_machine_survives_format_and_reload() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut checked = 0;
        for dir in ["tests/data/hazards", "machines"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    check_round_trip(&path.display().to_string(), &load(&text));
                    checked += 1;
                }
            }
        }
        assert!(checked >= 14, "{checked}");
    }

    #[test]
    fn the_printer_sample_survives_lowering() {
        check_round_trip("sample", &super::printing::sample());
    }

    /// The canonical form differs from the spec's file only in its layout
    /// (no blank lines, no column of comments: `format` is given none) and
    /// its quotes: nothing is quoted that YAML reads the same without quotes.
    /// `72h` stays as written.
    #[test]
    fn pedido_prints_in_canonical_form() {
        let expected = r#"machine: pedido
version: 1
description: Order payment lifecycle.
context:
  total: 100
  cobrado: 0
  cobrosVistos: []
sources:
  pasarela: { retry_horizon: 72h }
dedup: { retention: 7d }
events:
  PAGO_CONFIRMADO: { id: pagoId, source: pasarela }
  COBRO_PARCIAL:
    id: cobroId
    source: pasarela
    payload: { cobroId: string, importe: number }
  ENVIADO: { id: envioId }
  CANCELAR: { id: solicitudId }
effects:
  encolarEnvio: { idempotency: key }
initial: pendiente
states:
  pendiente:
    on:
      PAGO_CONFIRMADO: pagado
      COBRO_PARCIAL:
        guard: '!(event.cobroId in context.cobrosVistos)'
        actions:
          - assign:
              cobrosVistos: 'context.cobrosVistos + [event.cobroId]'
              cobrado: context.cobrado + event.importe
      CANCELAR: cancelado
    always:
      - target: pagado
        guard: context.cobrado >= context.total
  pagado:
    entry: [encolarEnvio]
    on:
      ENVIADO: enviado
  enviado: { type: final }
  cancelado: { type: final }
"#;
        assert_eq!(format(&load(PEDIDO)), expected);
    }
}

mod host_guards {
    use super::at;
    use crate::syntax::{Syntax, parse, yaml};

    /// `CODE LINE:COL message | help` per problem of loading `src`.
    fn load_errors(src: &str) -> Vec<String> {
        let errors = parse(src, Syntax::Yaml).expect_err("the machine does not load");
        errors
            .iter()
            .map(|d| {
                let mut line = format!("{} {} {}", d.code, at(src, d.span.start), d.message);
                if let Some(help) = &d.help {
                    line.push_str(&format!(" | {help}"));
                }
                line
            })
            .collect()
    }

    #[test]
    fn declared_guards_load_and_print_back() {
        let src = "machine: m\nguards: [isValid, hasStock]\ninitial: a\nstates:\n  \
                   a: { on: { GO: { target: b, guard: \"isValid && !hasStock\" } } }\n  b: {}\n";
        let machine = parse(src, Syntax::Yaml).unwrap();
        let names: Vec<&str> = machine.guards.iter().map(|g| g.text.as_str()).collect();
        assert_eq!(names, ["isValid", "hasStock"]);
        let printed = yaml::format(&machine);
        assert!(
            printed.contains("\nguards: [isValid, hasStock]\n"),
            "{printed}"
        );
        assert_eq!(parse(&printed, Syntax::Yaml).unwrap(), machine);
        // One name alone is a list of one, as for `initial`.
        let one = parse("machine: m\nguards: ok\n", Syntax::Yaml).unwrap();
        assert_eq!(one.guards[0].text, "ok");
    }

    #[test]
    fn guard_names_are_checked_where_written() {
        assert_eq!(
            load_errors("machine: m\nguards: [ok, ready, ok]\n"),
            ["E004 2:21 `ok` is defined twice"]
        );
        assert_eq!(
            load_errors("machine: m\nguards: [is-valid, event]\n"),
            [
                "E003 2:10 invalid guard name `is-valid`: a host guard is used as a bare name \
                 in expressions, so it is a letter or `_` followed by letters, digits or `_`",
                "E003 2:20 `event` cannot name a host guard: expressions already read it as a \
                 word of their own"
            ]
        );
        assert_eq!(
            load_errors("machine: m\nguards: { ok: {} }\n"),
            ["E003 2:9 `guards` must be a list of host guard names, found a mapping"]
        );
    }

    #[test]
    fn host_guards_are_for_guards() {
        let src = "machine: m\ncontext: { n: 0 }\nguards: [isValid]\ninitial: a\nstates:\n  a:\n    \
                   on:\n      GO: { guard: isVald, actions: [ { assign: { n: isValid } } ] }\n";
        assert_eq!(
            load_errors(src),
            [
                "S007 8:20 unknown name `isVald`: values are read as `context.<field>` or \
                 `event.<field>`, and host guards are declared under `guards` | did you mean \
                 the host guard `isValid`?",
                "S007 8:54 the host guard `isValid` can only be used in a guard: the host \
                 answers it when a transition is chosen"
            ]
        );
    }
}

mod semantics {
    use super::at;
    use crate::model::Semantics;
    use crate::syntax::{Syntax, dsl, parse, yaml};

    #[test]
    fn the_profile_loads_prints_and_defaults_to_scxml() {
        let plain = parse("machine: m\ninitial: a\nstates:\n  a: {}\n", Syntax::Yaml).unwrap();
        assert_eq!(plain.semantics, Semantics::Scxml);
        assert!(!yaml::format(&plain).contains("semantics"));
        let src = "machine: m\nsemantics: xstate\ninitial: a\nstates:\n  a: {}\n";
        let machine = parse(src, Syntax::Yaml).unwrap();
        assert_eq!(machine.semantics, Semantics::Xstate);
        assert_eq!(yaml::format(&machine), src);
        let dsl_text = dsl::format(&machine);
        assert!(dsl_text.contains("\nsemantics xstate\n"), "{dsl_text}");
        assert_eq!(parse(&dsl_text, Syntax::Dsl).unwrap(), machine);
    }

    #[test]
    fn an_unknown_profile_is_an_error_at_its_value() {
        let src = "machine: m\nsemantics: xstat\ninitial: a\nstates:\n  a: {}\n";
        let errors = parse(src, Syntax::Yaml).expect_err("does not load");
        let found: Vec<String> = errors
            .iter()
            .map(|d| format!("{} {} {}", d.code, at(src, d.span.start), d.message))
            .collect();
        assert_eq!(
            found,
            ["E003 2:12 unknown semantics `xstat`: write `scxml` or `xstate`"]
        );
        let dsl_src = "machine m\nsemantics xstat\ninitial a\nstate a\n";
        let errors = parse(dsl_src, Syntax::Dsl).expect_err("does not load");
        assert_eq!(
            errors
                .iter()
                .map(|d| at(dsl_src, d.span.start))
                .collect::<Vec<_>>(),
            ["2:11"]
        );
        let twice = "machine m\nsemantics xstate\nsemantics scxml\ninitial a\nstate a\n";
        let errors = parse(twice, Syntax::Dsl).expect_err("does not load");
        assert_eq!(errors[0].code, "E004", "{errors:?}");
    }
}

/// The node limit scales with the text: an honest machine of more nodes
/// than serde-saphyr's default 250,000 loads, while an alias bomb, whose
/// nodes come from expansions rather than text, is refused with the
/// position of the breach.
#[test]
fn large_machines_load_and_alias_bombs_do_not() {
    // About 14 nodes a state: some 266,000 nodes, past the default 250,000.
    let states = 19_000;
    let mut text = String::from("machine: big\ninitial: s0\nstates:\n");
    for i in 0..states {
        let next = (i + 1) % states;
        text.push_str(&format!(
            "  s{i}: {{ entry: [ a, b ], on: {{ GO: s{next}, BACK: {{ target: s{i} }} }} }}\n"
        ));
    }
    let doc = parse_ok(&text);
    assert_eq!(doc.root.states.len(), states);

    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for level in b'b'..=b'h' {
        let previous = (level - 1) as char;
        let level = level as char;
        bomb.push_str(&format!(
            "{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, \
             *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
        ));
    }
    let errors = parse(&bomb).expect_err("an alias bomb is refused");
    assert_eq!(errors[0].code, "E001");
    assert!(
        errors[0].message.contains("limits breached"),
        "{}",
        errors[0].message
    );
}

/// A second definition of a key is found in a mapping of many keys too.
#[test]
fn a_repeated_key_among_many_is_reported() {
    let mut text = String::from("machine: m\ninitial: s0\nstates:\n");
    for i in 0..40 {
        text.push_str(&format!("  s{i}: {{}}\n"));
    }
    text.push_str("  s7: {}\n");
    let errors = parse(&text).expect_err("the repeat");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, "E004");
    assert_eq!(at(&text, errors[0].labels[0].span.start), "11:3");
}

#[test]
fn the_fix_editor_reads_the_tree_the_loader_parsed() {
    let file = SourceFile::new(
        "pedido.yaml",
        "machine: pedido\ninitial: a\nstates:\n  a: {}\n",
    );
    parse_file(&file).unwrap();
    let loaded = node_tree(&file);
    assert!(std::sync::Arc::ptr_eq(&loaded, &node_tree(&file.clone())));
    // A file with a syntax error makes no editor.
    let broken = SourceFile::new("roto.yaml", "machine: [\n");
    assert!(parse_file(&broken).is_err());
    assert!(super::edit::YamlEditor::of_file(&broken).is_none());
}

/// A migration is checked at load as far as it can be without the old
/// machine, each problem at its place; a good one loads and prints back.
#[test]
fn migrations_are_checked_at_their_place() {
    let file = |migrations: &str| {
        format!(
            "machine: m\nversion: 2\ncontext: {{ n: 0 }}\nmigrations: {migrations}\ninitial: a\nstates:\n  a: {{}}\n  h: {{ type: history }}\n"
        )
    };
    let cases: &[(&str, &str)] = &[
        (
            "[{ states: { x: a } }]",
            "E003 4:14 a migration needs `from`: the version whose snapshots it moves",
        ),
        (
            "[{ from: 2 }]",
            "E003 4:22 a migration `from: 2` must name a version below the machine's `version: 2`",
        ),
        (
            "[{ from: 1 }, { from: 1 }]",
            "E004 4:35 `from: 1` is defined twice | first defined here at 4:22",
        ),
        (
            "[{ from: 1, states: { old: b } }]",
            "S001 4:40 unknown target `b`",
        ),
        (
            "[{ from: 1, states: { old: h } }]",
            "S001 4:40 unknown target `h`",
        ),
        (
            "[{ from: 1, context: { m: \"1\" } }]",
            "S008 4:36 unknown context field `m`",
        ),
        (
            "[{ from: 1, context: { n: \"event.n\" } }]",
            "S007 4:40 a migration's expression reads only `context`, the old context: it runs on a stored snapshot, with no event",
        ),
        (
            "[{ from: 1, context: { n: \"1 +\" } }]",
            "S007 4:43 the expression ends too early",
        ),
        (
            "[{ from: 1, timers: later }]",
            "E008 4:33 unknown setting `later` | help: write one of `keep`, `drop`",
        ),
        (
            "[{ from: 1, outbox: cancel }]",
            "E008 4:33 unknown setting `cancel` | help: write one of `keep`, `drop`",
        ),
        (
            "{ from: 1 }",
            "E003 4:13 `migrations` must be a list such as `[{ from: 1, states: { old: new } }]`, found a mapping",
        ),
    ];
    let mut failures = Vec::new();
    for (migrations, expected) in cases {
        let text = file(migrations);
        let errors = crate::syntax::parse(&text, crate::syntax::Syntax::Yaml)
            .err()
            .unwrap_or_default();
        let actual: Vec<String> = errors
            .iter()
            .map(|d| {
                let mut line = format!("{} {} {}", d.code, at(&text, d.span.start), d.message);
                if let Some(help) = &d.help {
                    line.push_str(&format!(" | help: {help}"));
                }
                for label in &d.labels {
                    line.push_str(&format!(
                        " | {} at {}",
                        label.message,
                        at(&text, label.span.start)
                    ));
                }
                line
            })
            .collect();
        let actual = actual.join("\n");
        if actual != *expected {
            failures.push(format!(
                "{migrations}:\n  expected {expected}\n  got      {actual}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let good = file(
        "[{ from: 1, states: { old.x: a }, context: { n: \"context.n * 2\" }, timers: drop, history: keep, outbox: drop }]",
    );
    let machine = crate::syntax::parse(&good, crate::syntax::Syntax::Yaml).expect("loads");
    assert_eq!(
        machine.migrations[0].outbox,
        Some(crate::model::Carry::Drop)
    );
    let printed = format(&machine);
    assert!(printed.contains("    outbox: drop\n"), "{printed}");
    assert!(
        printed.contains("migrations:\n  - from: 1\n    states: { old.x: a }\n"),
        "{printed}"
    );
    assert_eq!(
        crate::syntax::parse(&printed, crate::syntax::Syntax::Yaml).unwrap(),
        machine
    );
}
