use proptest::prelude::*;

use super::*;
use crate::span::SourceFile;
use crate::syntax::tree::{ActionDoc, StateDoc, TransitionDoc};

const PEDIDO: &str = include_str!("../../../tests/data/spec/pedido.chart");
const LAMPARA: &str = include_str!("../../../tests/data/spec/lampara.chart");

/// Every field of a document, one element a line, so a test pins the whole
/// tree at once.
fn outline(doc: &MachineDoc) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(format!(
        "machine {} version={:?} description={:?}",
        doc.name.as_ref().map_or("-", |n| n.text.as_str()),
        doc.version.map(|(v, _)| v),
        doc.description
    ));
    for c in &doc.context {
        line(format!("context {} = {}", c.name.text, c.value));
    }
    for s in &doc.sources {
        line(format!(
            "source {} retry={} {:?}",
            s.name.text,
            opt(&s.retry_horizon),
            s.description
        ));
    }
    if let Some(d) = &doc.dedup {
        line(format!("dedup retention={}", opt(&d.retention)));
    }
    for e in &doc.events {
        let payload = e.payload.as_ref().map(|fields| {
            fields
                .iter()
                .map(|(f, t)| format!("{}:{}", f.text, t.text))
                .collect::<Vec<_>>()
                .join(",")
        });
        line(format!(
            "event {} payload={:?} id={} from={} {:?}",
            e.name.text,
            payload,
            opt(&e.id_field),
            opt(&e.source),
            e.description
        ));
    }
    for e in &doc.effects {
        line(format!(
            "effect {} idempotency={} verify={} {:?}",
            e.name.text,
            opt(&e.idempotency),
            opt(&e.verify),
            e.description
        ));
    }
    state_outline(&doc.root, 0, &mut line);
    out
}

fn opt(name: &Option<Name>) -> &str {
    name.as_ref().map_or("-", |n| n.text.as_str())
}

fn names(names: &[Name]) -> String {
    names
        .iter()
        .map(|n| n.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn state_outline(state: &StateDoc, depth: usize, line: &mut impl FnMut(String)) {
    let pad = "  ".repeat(depth);
    let mut head = format!("{pad}[{}] {}", opt(&state.kind), state.key.text);
    if let Some(id) = &state.id {
        head.push_str(&format!(" #{}", id.text));
    }
    if !state.initial.is_empty() {
        head.push_str(&format!(" initial={}", names(&state.initial)));
    }
    if let Some(h) = &state.history {
        head.push_str(&format!(" history={}", h.text));
    }
    if !state.target.is_empty() {
        head.push_str(&format!(" target={}", names(&state.target)));
    }
    if let Some(d) = &state.description {
        head.push_str(&format!(" {d:?}"));
    }
    if !state.tags.is_empty() {
        head.push_str(&format!(" tags={:?}", state.tags));
    }
    line(head);
    for a in &state.entry {
        line(format!("{pad}  entry {}", action_outline(a)));
    }
    for a in &state.exit {
        line(format!("{pad}  exit {}", action_outline(a)));
    }
    for t in &state.on {
        line(format!("{pad}  on {}", transition_outline(t)));
    }
    for t in &state.always {
        line(format!("{pad}  always {}", transition_outline(t)));
    }
    for t in &state.after {
        line(format!("{pad}  after {}", transition_outline(t)));
    }
    for (lint, reason) in &state.allow {
        line(format!("{pad}  allow {} {reason:?}", lint.text));
    }
    for child in &state.states {
        state_outline(child, depth + 1, line);
    }
}

fn transition_outline(t: &TransitionDoc) -> String {
    let mut s = String::new();
    if let Some(e) = &t.event {
        s.push_str(&format!("<{}>", e.text));
    }
    if let Some(d) = &t.delay {
        s.push_str(&format!("<{}>", d.text));
    }
    s.push_str(&format!(" -> [{}]", names(&t.targets)));
    if t.reenter {
        s.push_str(" reenter");
    }
    if let Some(g) = &t.guard {
        s.push_str(&format!(" if <{}>", g.text));
    }
    if let Some(d) = &t.description {
        s.push_str(&format!(" {d:?}"));
    }
    for a in &t.actions {
        s.push_str(&format!(" | {}", action_outline(a)));
    }
    s
}

fn fields(fields: &[(Name, ExprText)]) -> String {
    fields
        .iter()
        .map(|(n, e)| format!("{}=<{}>", n.text, e.text))
        .collect::<Vec<_>>()
        .join(", ")
}

fn action_outline(a: &ActionDoc) -> String {
    match a {
        ActionDoc::Assign { fields: f, .. } => format!("assign({})", fields(f)),
        ActionDoc::Raise { event, data, .. } => format!("raise {}({})", event.text, fields(data)),
        ActionDoc::Send {
            event,
            data,
            delay,
            id,
            ..
        } => format!(
            "send {}({}) after {:?} id {:?}",
            event.text,
            fields(data),
            delay.as_ref().map(|d| &d.text),
            id.as_ref().map(|i| &i.text)
        ),
        ActionDoc::Cancel { id, .. } => format!("cancel {}", id.text),
        ActionDoc::Effect { name, args, .. } => format!("effect {}({})", name.text, fields(args)),
        ActionDoc::Named { name } => format!("named {}", name.text),
        ActionDoc::Log { expr, .. } => format!("log <{}>", expr.text),
    }
}

#[track_caller]
fn parse_ok(text: &str) -> MachineDoc {
    parse(text).unwrap_or_else(|e| panic!("{e:#?}"))
}

/// The 1-based line and column where `span` starts.
fn at(text: &str, span: Span) -> (usize, usize) {
    SourceFile::new("test.chart", text).line_col(span.start)
}

#[test]
fn reads_the_pedido_example() {
    let doc = parse_ok(PEDIDO);
    assert_eq!(
        outline(&doc),
        r#"machine pedido version=Some(1) description=Some("Order payment lifecycle.")
context total = 100
context cobrado = 0
context cobrosVistos = []
source pasarela retry=72h None
dedup retention=7d
event PAGO_CONFIRMADO payload=None id=pagoId from=pasarela None
event COBRO_PARCIAL payload=Some("cobroId:string,importe:number") id=cobroId from=pasarela None
event ENVIADO payload=None id=envioId from=- None
event CANCELAR payload=None id=solicitudId from=- None
effect encolarEnvio idempotency=key verify=- None
[-]  initial=pendiente
  [-] pendiente
    on <PAGO_CONFIRMADO> -> [pagado]
    on <COBRO_PARCIAL> -> [] if <!(event.cobroId in context.cobrosVistos)> | assign(cobrosVistos=<context.cobrosVistos + [event.cobroId]>, cobrado=<context.cobrado + event.importe>)
    on <CANCELAR> -> [cancelado]
    always  -> [pagado] if <context.cobrado >= context.total>
  [-] pagado
    entry named encolarEnvio
    on <ENVIADO> -> [enviado]
  [final] enviado
  [final] cancelado
"#
    );

    // Positions point at the names as written.
    let states = &doc.root.states;
    assert_eq!(at(PEDIDO, doc.name.as_ref().unwrap().span), (1, 9));
    assert_eq!(at(PEDIDO, doc.version.unwrap().1), (1, 24));
    assert_eq!(at(PEDIDO, doc.context[2].name.span), (7, 3));
    assert_eq!(
        at(PEDIDO, doc.events[1].payload.as_ref().unwrap()[1].0.span),
        (14, 38)
    );
    assert_eq!(at(PEDIDO, states[0].key.span), (22, 7));
    assert_eq!(at(PEDIDO, states[0].on[1].span), (24, 3));
    assert_eq!(at(PEDIDO, states[0].always[0].targets[0].span), (29, 13));
    assert_eq!(at(PEDIDO, states[3].kind.as_ref().unwrap().span), (38, 1));
    // An expression's offset is where its text starts, and its text is exactly
    // the file's text there.
    let guard = states[0].on[1].guard.as_ref().unwrap();
    assert_eq!(at(PEDIDO, Span::new(guard.offset as usize, 0)), (24, 23));
    let start = guard.offset as usize;
    assert_eq!(&PEDIDO[start..start + guard.text.len()], guard.text);
}

#[test]
fn reads_the_lampara_example() {
    let doc = parse_ok(LAMPARA);
    assert_eq!(
        outline(&doc),
        r#"machine lampara version=None description=None
context encendidos = 0
event PULSAR payload=None id=pulsacionId from=- None
event FALLO payload=None id=falloId from=- None
event REPARADA payload=None id=ordenId from=- None
event REFRESCAR payload=None id=refrescoId from=- None
effect avisarTecnico idempotency=key verify=- None
[-]  initial=funcionando
  [-] funcionando initial=apagada
    on <FALLO> -> [averiada]
    [-] apagada
      on <PULSAR> -> [encendida]
    [-] encendida
      entry assign(encendidos=<context.encendidos + 1>)
      exit log <"apagando">
      on <PULSAR> -> [apagada]
      on <REFRESCAR> -> [encendida] reenter
      after <30m> -> [apagada]
      allow reentry-reruns-actions "the counter measures refreshes on purpose"
    [history] recuerdo history=deep
  [-] averiada
    entry effect avisarTecnico(motivo=<"fallo">)
    entry raise DIAGNOSTICAR()
    on <DIAGNOSTICAR> -> [] | log <"diagnosticando">
    on <REPARADA> -> [funcionando.recuerdo]
  [parallel] panel
    always  -> [averiada] if <in_state("averiada")>
    [-] pantalla initial=oscura
      [-] oscura
        on <PULSAR> -> [clara]
      [-] clara
    [-] sonido initial=mudo
      [-] mudo
"#
    );
    let funcionando = &doc.root.states[0];
    let encendida = &funcionando.states[1];
    assert_eq!(
        at(LAMPARA, encendida.after[0].delay.as_ref().unwrap().span),
        (26, 11)
    );
    assert_eq!(at(LAMPARA, encendida.allow[0].0.span), (27, 11));
    assert_eq!(
        at(
            LAMPARA,
            funcionando.states[2].history.as_ref().unwrap().span
        ),
        (29, 20)
    );
    let averiada = &doc.root.states[1];
    let ActionDoc::Effect { span, args, .. } = &averiada.entry[0] else {
        panic!("{:?}", averiada.entry[0]);
    };
    assert_eq!(at(LAMPARA, *span), (34, 5));
    assert_eq!(at(LAMPARA, args[0].0.span), (34, 26));
    assert_eq!(at(LAMPARA, averiada.on[1].targets[0].span), (38, 18));
}

/// Everything the YAML can say, in one file.
const EVERYTHING: &str = r#"
parallel machine bench #top version 3 "Eight regions, abbreviated."

context {
  n = -1
  `in` = 0
  ratio = -2.5
  flags = [true, false, null]
  m = {"a": 1, "b": [1.5e3, "x\n"]}
}

source gateway retry 72h "The payment gateway."
source queue
dedup retention 7d

event PAY(payId: string, amount: number) id payId from gateway "A payment."
event PING()
event done.state.`weird name`
effect charge idempotent none verify r1.check "Charges the card."
effect note

entry log "root entry"
exit { raise STOPPED }
on * -> r1.a r2.c "catch-all"
allow unreachable-state "a benchmark"
tags "bench" "w3"

state r1 #first "Region one." {
  initial a.x
  entry { effect charge(amount: event.amount, tries: 1,) note log 1 `in` n = 1 }
  exit note
  state a {
    initial x
    on PAY PING foo.* -> .x reenter if event.amount > 0 && context.n < 2 "paid" {
      n = context.n + 1
      ratio = 0.5 // a comment between two fields
      assign { n = 2 }
      assign {}
      raise done.state.a(code: 1)
      send TICK(n: context.n) after 5s id tick
      send TOCK
      cancel tick
      log "paid"
      charge
    }
    on `state` -> b
    always if context.n > 1 { log 1 }
    after 500ms -> b
    state x
  }
  final b { entry note }
  state check
}
parallel r2 {
  history h shallow -> c "remembers"
  history deep_h #dh deep
  state c
}
"#;

#[test]
fn reads_every_construct() {
    let doc = parse_ok(EVERYTHING);
    assert_eq!(
        outline(&doc),
        r#"machine bench version=Some(3) description=Some("Eight regions, abbreviated.")
context n = -1
context in = 0
context ratio = -2.5
context flags = [true,false,null]
context m = {"a":1,"b":[1500.0,"x\n"]}
source gateway retry=72h Some("The payment gateway.")
source queue retry=- None
dedup retention=7d
event PAY payload=Some("payId:string,amount:number") id=payId from=gateway Some("A payment.")
event PING payload=Some("") id=- from=- None
event done.state.weird name payload=None id=- from=- None
effect charge idempotency=none verify=r1.check Some("Charges the card.")
effect note idempotency=- verify=- None
[parallel]  #top tags=["bench", "w3"]
  entry log <"root entry">
  exit raise STOPPED()
  on <*> -> [r1.a r2.c] "catch-all"
  allow unreachable-state "a benchmark"
  [-] r1 #first initial=a.x "Region one."
    entry effect charge(amount=<event.amount>, tries=<1>)
    entry named note
    entry log <1>
    entry named in
    entry assign(n=<1>)
    exit named note
    [-] a initial=x
      on <PAY PING foo.*> -> [.x] reenter if <event.amount > 0 && context.n < 2> "paid" | assign(n=<context.n + 1>, ratio=<0.5>) | assign(n=<2>) | assign() | raise done.state.a(code=<1>) | send TICK(n=<context.n>) after Some("5s") id Some("tick") | send TOCK() after None id None | cancel tick | log <"paid"> | named charge
      on <state> -> [b]
      always  -> [] if <context.n > 1> | log <1>
      after <500ms> -> [b]
      [-] x
    [final] b
      entry named note
    [-] check
  [parallel] r2
    [history] h history=shallow target=c "remembers"
    [history] deep_h #dh history=deep
    [-] c
"#
    );
}

#[test]
fn groups_transitions_of_one_descriptor_where_it_first_appears() {
    let doc = parse_ok(
        "machine m
         state s {
           on A -> a if context.x
           on B -> b
           after 1s -> a
           on A B -> c
           after 2s -> b
           on A -> d
           after 1s -> c
           always -> a
         }",
    );
    let s = &doc.root.states[0];
    let on: Vec<String> = s.on.iter().map(transition_outline).collect();
    assert_eq!(
        on,
        [
            "<A> -> [a] if <context.x>",
            "<A> -> [d]",
            "<B> -> [b]",
            "<A B> -> [c]"
        ]
    );
    let after: Vec<String> = s.after.iter().map(transition_outline).collect();
    assert_eq!(after, ["<1s> -> [a]", "<1s> -> [c]", "<2s> -> [b]"]);
}

#[test]
fn descriptors_are_normalised_to_single_spaces() {
    let doc = parse_ok("machine m\non A // first\n  b.*\n\t* -> x");
    let event = doc.root.on[0].event.as_ref().unwrap();
    assert_eq!(event.text, "A b.* *");
    assert_eq!(
        at("machine m\non A // first\n  b.*\n\t* -> x", event.span),
        (2, 4)
    );
}

#[test]
fn expression_texts_stop_at_their_last_token() {
    let text = "machine m\nstate s {\n  on A if (context.a + 1) // why\n    { log [context.b]   // note\n  }\n  always if f(x)\n}\n";
    let doc = parse_ok(text);
    let s = &doc.root.states[0];
    let guard = s.on[0].guard.as_ref().unwrap();
    assert_eq!(guard.text, "(context.a + 1)");
    assert_eq!(at(text, Span::new(guard.offset as usize, 0)), (3, 11));
    let ActionDoc::Log { expr, span } = &s.on[0].actions[0] else {
        panic!()
    };
    assert_eq!(expr.text, "[context.b]");
    assert_eq!(&text[span.range()], "log [context.b]");
    assert_eq!(s.always[0].guard.as_ref().unwrap().text, "f(x)");
    assert_eq!(&text[s.on[0].span.range()].lines().count(), &3);
}

#[test]
fn quoted_names_may_be_keywords() {
    let doc = parse_ok(
        "machine `state`\ncontext { `on` = 1 }\nstate `final` { on `event`.x -> `final`.`if` #`id` }",
    );
    assert_eq!(doc.name.unwrap().text, "state");
    assert_eq!(doc.context[0].name.text, "on");
    let s = &doc.root.states[0];
    assert_eq!(s.key.text, "final");
    assert_eq!(s.on[0].event.as_ref().unwrap().text, "event.x");
    assert_eq!(names(&s.on[0].targets), "final.if #id");
}

#[test]
fn keywords_after_a_dot_or_hash_are_names() {
    let doc = parse_ok("machine m\non done.state.final -> a.state #on");
    let on = &doc.root.on[0];
    assert_eq!(on.event.as_ref().unwrap().text, "done.state.final");
    assert_eq!(names(&on.targets), "a.state #on");
}

#[test]
fn context_values_must_be_literals() {
    let text = "machine m\ncontext {\n  a = context.b\n  b = {1: 2}\n  c = -x\n  d = 1 +\n}";
    // The last one is a syntax error, which stops the parse alone.
    let errors = parse(text).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(at(text, errors[0].span), (7, 1));

    let text = "machine m\ncontext {\n  a = context.b\n  b = {1: 2}\n  c = -x\n  d = 1\n}";
    let errors = parse(text).unwrap_err();
    let found: Vec<(&str, (usize, usize))> =
        errors.iter().map(|e| (e.code, at(text, e.span))).collect();
    assert_eq!(
        found,
        [("E003", (3, 7)), ("E003", (4, 8)), ("E003", (5, 7))]
    );
}

/// Parses `text`, expects exactly one error, and checks its code, message and
/// line:col.
#[track_caller]
fn check_error(text: &str, code: &str, message: &str, line_col: (usize, usize)) {
    let errors = match parse(text) {
        Ok(doc) => panic!("{text:?} parsed: {doc:#?}"),
        Err(errors) => errors,
    };
    assert_eq!(errors.len(), 1, "{text:?}: {errors:#?}");
    let error = &errors[0];
    assert_eq!(
        (error.code, error.message.as_str(), at(text, error.span)),
        (code, message, line_col),
        "{text:?}"
    );
}

#[test]
fn malformed_files_give_one_clear_error() {
    let cases: &[(&str, &str, &str, (usize, usize))] = &[
        (
            "",
            "E001",
            "the file is empty: a machine file starts with `machine NAME`",
            (1, 1),
        ),
        (
            "// only a comment\n\n",
            "E001",
            "the file is empty: a machine file starts with `machine NAME`",
            (3, 1),
        ),
        (
            "state a {}",
            "E001",
            "a machine file starts with `machine NAME`, found `state`",
            (1, 1),
        ),
        (
            "machine m\nstate a { on X -> }",
            "E001",
            "expected a target state after `state a { on X ->`, found `}`",
            (2, 19),
        ),
        (
            "machine m\non PAGO !!",
            "E001",
            "expected `->`, `reenter`, `if`, `{`, a new item or the end of the file after `on PAGO`, found `!`",
            (2, 9),
        ),
        (
            "machine m\nstate a {\n  on X -> y\n",
            "E001",
            "expected a target state, `reenter`, `if`, `{`, a new item or `}` after `on X -> y`, found the end of the file",
            (4, 1),
        ),
        (
            "machine m\nstate a {\n  on X -> y\n}\n}\n",
            "E001",
            "unexpected `}` after `}`: no block is open here",
            (5, 1),
        ),
        (
            "machine m\nstat a {}",
            "E001",
            "unknown word `stat`: expected `#id`, `version`, a string, a new item or the end of the file after `machine m`",
            (2, 1),
        ),
        (
            "machine m\nstate state {}",
            "E001",
            "expected a name after `state`, found the keyword `state`",
            (2, 7),
        ),
        (
            "machine m\nstate a {\n  on X if\n}",
            "E001",
            "expected an expression after `on X if`, found `}`",
            (4, 1),
        ),
        (
            "machine m\nstate abc { always -> b if context.alpha + context.beta * }",
            "E001",
            "expected an expression after `…-> b if context.alpha + context.beta *`, found `}`",
            (2, 59),
        ),
        (
            "machine m\nevent A(x string)",
            "E001",
            "expected `:` after `event A(x`, found `string`",
            (2, 11),
        ),
        (
            "machine m\neffect e idempotent\n",
            "E001",
            "expected `key`, `natural` or `none` after `effect e idempotent`, found the end of the file",
            (3, 1),
        ),
        (
            "machine m\nstate a { entry { foo(x: 1) } }",
            "E001",
            "expected an action, `=` or `}` after `state a { entry { foo`, found `(`",
            (2, 22),
        ),
        (
            "machine m version x",
            "E001",
            "expected a whole number after `machine m version`, found `x`",
            (1, 19),
        ),
        (
            "machine m\nstate a { allow foo }",
            "E001",
            "expected a string after `state a { allow foo`, found `}`",
            (2, 21),
        ),
        (
            "machine m\nsource s retry 'x'",
            "E001",
            "expected a duration such as `30s` after `source s retry`, found `'`",
            (2, 16),
        ),
        (
            "machine m\nstate a { on -> b }",
            "E001",
            "expected an event name after `state a { on`, found `->`",
            (2, 14),
        ),
        (
            "machine m\nstate a { on X -> b { raise } }",
            "E001",
            "expected an event name after `state a { on X -> b { raise`, found `}`",
            (2, 29),
        ),
        (
            "machine m\nstate a { on X { x = } }",
            "E001",
            "expected an expression after `state a { on X { x =`, found `}`",
            (2, 22),
        ),
        (
            "machine m\nstate a { on X -> #1 }",
            "E001",
            "expected a name after `state a { on X -> #`, found `1`",
            (2, 20),
        ),
        (
            "machine m\nstate a { \"text\" }",
            "E001",
            "expected a new item or `}` after `state a {`, found `\"text\"`",
            (2, 11),
        ),
        (
            "machine m\ncontext { total = 100 cobrado: 0 }",
            "E001",
            "expected `=` after `context { total = 100 cobrado`, found `:`",
            (2, 30),
        ),
        (
            "machine m\nstate a { entry }",
            "E001",
            "expected an action or `{` after `state a { entry`, found `}`",
            (2, 17),
        ),
        (
            "machine m\ndedup retention 1d\ndedup retention 2d",
            "E004",
            "`dedup` is defined twice",
            (3, 1),
        ),
        (
            "machine m\nstate s { initial a\n initial b }",
            "E004",
            "`initial` is defined twice",
            (3, 2),
        ),
        (
            "machine m\ncontext { a = 99999999999999999999 }",
            "S007",
            "integer `99999999999999999999` is too large",
            (2, 15),
        ),
        (
            "machine m version 99999999999999999999",
            "E003",
            "version `99999999999999999999` is too large",
            (1, 19),
        ),
        (
            "machine m\nstate a { on X -> b \"unterminated }",
            "E001",
            "expected a target state, `reenter`, `if`, `{`, a new item or `}` after `state a { on X -> b`, found `\"unterminated }`",
            (2, 21),
        ),
        (
            "machine m\nstate a {\n  on A if context.x -> b\n}",
            "E001",
            "unexpected `->` after `on A if context.x`: targets come before `if`",
            (3, 21),
        ),
    ];
    for (text, code, message, line_col) in cases {
        check_error(text, code, message, *line_col);
    }
}

#[test]
fn errors_carry_help_where_it_helps() {
    let help = |text: &str| parse(text).unwrap_err()[0].help.clone();
    assert_eq!(
        help("machine m\nstat a {}").as_deref(),
        Some("did you mean `state`?")
    );
    assert_eq!(
        help("machine m\nstate state {}").as_deref(),
        Some("write `` `state` `` to use `state` as a name")
    );
    assert_eq!(
        help("machine m\nstate a {").as_deref(),
        Some("a block opened with `{` is not closed")
    );
    assert_eq!(
        help("machine m\nstate a { entry { foo(x: 1) } }").as_deref(),
        Some("to pass arguments, write `effect NAME(field: value)` or `raise EVENT(field: value)`")
    );
    assert_eq!(
        help("machine m\nstate a { \"text\" }").as_deref(),
        Some("a description goes at the end of the line it describes, before any `{`")
    );
    assert_eq!(
        help("machine m\nstate a {\n  allow self-accepting-event\n}").as_deref(),
        Some("`allow` needs a reason: say in a string why the lint does not apply here")
    );
    assert_eq!(
        help("machine m\nstate a { entry { log \"closing }\n}").as_deref(),
        Some("this string is not closed: end it with `\"` on the same line")
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let depth = 20_000;
    let text = format!(
        "machine m\n{}{}",
        "state a {\n".repeat(depth),
        "}\n".repeat(depth)
    );
    // Run on a thread with a known, small stack so the limit is reached.
    let result = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || parse(&text).map(|_| ()).map_err(|e| e[0].message.clone()))
        .unwrap()
        .join()
        .unwrap();
    let message = result.unwrap_err();
    assert!(message.contains("nested too deeply"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Cutting or splicing the examples anywhere gives a model or an error,
    /// never a panic, and an error's span lies inside the file.
    #[test]
    fn damaged_files_never_panic(
        cut in 0usize..2000,
        len in 0usize..40,
        insert in "[ -~\n]{0,8}",
        lampara: bool,
    ) {
        let source = if lampara { LAMPARA } else { PEDIDO };
        let mut cut = cut.min(source.len());
        while !source.is_char_boundary(cut) { cut -= 1; }
        let mut end = (cut + len).min(source.len());
        while !source.is_char_boundary(end) { end -= 1; }
        let text = format!("{}{}{}", &source[..cut], insert, &source[end..]);
        if let Err(errors) = parse(&text) {
            prop_assert!(!errors.is_empty());
            for error in errors {
                prop_assert!(error.span.end as usize <= text.len());
                prop_assert!(!error.message.is_empty());
            }
        }
    }
}

mod printer {
    //! The printer on hand-built models, before any lowering: the exact text,
    //! and that the text reads back.

    use indexmap::IndexMap;

    use super::*;
    use crate::expr::Expr;
    use crate::model::*;

    fn expr(text: &str) -> Expr {
        crate::expr::parse(text, 0).unwrap()
    }

    fn name(text: &str) -> Name {
        Name {
            text: text.into(),
            span: Span::default(),
        }
    }

    fn target(text: &str, state: u32) -> Target {
        Target {
            text: text.into(),
            state: StateId(state),
            span: Span::default(),
        }
    }

    fn state(key: &str, kind: StateKind, parent: Option<u32>, children: &[u32]) -> State {
        State {
            children: children.iter().map(|&c| StateId(c)).collect(),
            ..State::new(key, "", kind, parent.map(StateId))
        }
    }

    fn assign(fields: &[(&str, &str)]) -> Action {
        Action::Assign {
            fields: fields
                .iter()
                .map(|(f, e)| {
                    (
                        f.to_string(),
                        Assignment {
                            expr: expr(e),
                            span: Span::default(),
                        },
                    )
                })
                .collect(),
            span: Span::default(),
        }
    }

    fn transition(source: u32, trigger: Trigger, targets: Vec<Target>) -> Transition {
        Transition::new(StateId(source), trigger, targets)
    }

    fn machine() -> Machine {
        let mut root = state("w3", StateKind::Parallel, None, &[1, 4]);
        root.id = Some("top".into());
        root.on = vec![TransitionId(0)];
        root.tags = vec!["bench".into()];
        let mut r1 = state("state", StateKind::Compound, Some(0), &[2, 3]);
        r1.initial = vec![target("a", 2)];
        r1.entry = vec![Action::Host {
            name: name("note"),
            span: Span::default(),
        }];
        r1.exit = vec![Action::Log {
            expr: expr("\"bye\""),
            span: Span::default(),
        }];
        r1.description = Some("first \"region\"".into());
        let mut a = state("a", StateKind::Atomic, Some(1), &[]);
        a.on = vec![TransitionId(1), TransitionId(2)];
        a.after = vec![TransitionId(3)];
        a.allow.insert(
            "self-accepting-event".into(),
            Allow {
                reason: "on purpose".into(),
                span: Span::default(),
                within: Vec::new(),
            },
        );
        let mut h = state("h", StateKind::History(HistoryKind::Deep), Some(1), &[]);
        h.initial = vec![target("a", 2)];
        let r2 = state("r2", StateKind::Final, Some(0), &[]);

        let mut t0 = transition(
            0,
            Trigger::Event(EventDescriptor::parse("* done.state.x.*")),
            vec![target("#top", 0)],
        );
        t0.description = Some("anything".into());
        let mut t1 = transition(
            2,
            Trigger::Event(EventDescriptor::parse("PAY")),
            vec![target("a", 2), target("#top", 0)],
        );
        t1.reenter = true;
        t1.guard = Some(expr("context.n<2"));
        t1.actions = vec![
            assign(&[("n", "context.n+1"), ("log", "1")]),
            assign(&[("n", "2")]),
            assign(&[]),
            Action::Raise {
                event: name("DONE"),
                data: [(
                    "code".to_string(),
                    Assignment {
                        expr: expr("1"),
                        span: Span::default(),
                    },
                )]
                .into_iter()
                .collect(),
                span: Span::default(),
            },
            Action::Effect {
                name: name("charge"),
                args: IndexMap::new(),
                span: Span::default(),
            },
        ];
        let t2 = transition(2, Trigger::Event(EventDescriptor::parse("PAY")), vec![]);
        let t3 = transition(
            2,
            Trigger::After(Duration::from_millis(259_200_000)),
            vec![],
        );

        let mut context = IndexMap::new();
        for (field, value) in [
            ("n", serde_json::json!(-1)),
            ("m", serde_json::json!({"a": [1.5, "x\n", null, true]})),
        ] {
            context.insert(
                field.to_string(),
                ContextField {
                    value,
                    span: Span::default(),
                },
            );
        }
        let mut effects = IndexMap::new();
        effects.insert(
            "charge".to_string(),
            EffectDecl {
                idempotency: Idempotency::None,
                verify: Some(target("state.a", 2)),
                description: None,
                span: Span::default(),
            },
        );
        let mut events = IndexMap::new();
        events.insert(
            "PAY".to_string(),
            EventDecl {
                id_field: Some(name("payId")),
                source: None,
                payload: Some(
                    [(
                        "payId".to_string(),
                        PayloadField {
                            ty: PayloadType::String,
                            span: Span::default(),
                        },
                    )]
                    .into_iter()
                    .collect(),
                ),
                description: Some("a payment".into()),
                span: Span::default(),
            },
        );
        Machine {
            name: "w3".into(),
            version: Some(2),
            description: Some("Abbreviated.".into()),
            semantics: crate::model::Semantics::Xstate,
            fact_source: crate::model::FactSource::default(),
            context,
            sources: IndexMap::new(),
            dedup: Some(Dedup {
                retention: Duration::from_millis(604_800_000),
                span: Span::default(),
            }),
            history: Some(crate::model::HistoryKeep {
                keep: Duration::parse("30d").unwrap(),
                span: Span::default(),
            }),
            limits: Some(Limits {
                microsteps: 500,
                span: Span::default(),
            }),
            events,
            effects,
            guards: Vec::new(),
            opaque: Vec::new(),
            stand_ins: Default::default(),
            migrations: Vec::new(),
            states: vec![root, r1, a, h, r2],
            transitions: vec![t0, t1, t2, t3],
            span: Span::default(),
        }
    }

    #[test]
    fn prints_a_model_canonically() {
        let text = format(&machine());
        assert_eq!(
            text,
            r#"parallel machine w3 #top version 2
"Abbreviated."
semantics xstate

context {
  n = -1
  m = {"a": [1.5, "x\n", null, true]}
}

dedup retention 7d
history keep 30d
limits microsteps 500

event PAY(payId: string) id payId "a payment"

effect charge idempotent none verify `state`.a

on * done.state.x.* -> #top "anything"
tags "bench"

state `state` "first \"region\"" {
  initial a
  entry note
  exit { log "bye" }

  state a {
    on PAY -> a #top reenter if context.n < 2 {
      n = context.n + 1
      `log` = 1
      assign { n = 2 }
      assign {}
      raise DONE(code: 1)
      charge
    }
    on PAY
    after 3d
    allow self-accepting-event "on purpose"
  }
  history h deep -> a
}

final r2
"#
        );
        // The text reads back, with the two assigns kept apart.
        let doc = parse_ok(&text);
        let a = &doc.root.states[0].states[0];
        assert_eq!(
            transition_outline(&a.on[0]),
            "<PAY> -> [a #top] reenter if <context.n < 2> | assign(n=<context.n + 1>, log=<1>) \
             | assign(n=<2>) | assign() | raise DONE(code=<1>) | named charge"
        );
    }
}

/// The printer quotes exactly the words the grammar reserves.
#[test]
fn the_keyword_list_matches_the_grammar() {
    let grammar = include_str!("../../../grammar/chart.pest");
    let start = grammar.find("keyword = @{").unwrap();
    let end = start + grammar[start..].find('}').unwrap();
    let mut in_grammar: Vec<&str> = grammar[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|word| *word != "_")
        .collect();
    let mut listed = errors::KEYWORDS.to_vec();
    in_grammar.sort_unstable();
    listed.sort_unstable();
    assert_eq!(in_grammar, listed);
    for keyword in errors::KEYWORDS {
        let text = format!("machine m\nstate `{keyword}`\nstate {keyword}");
        assert!(parse(&text).is_err(), "{keyword} is not reserved");
        parse_ok(&format!("machine m\nstate `{keyword}`"));
    }
}

mod lowered {
    //! Through the lowering: the examples load, and printing a model reads
    //! back as the same model.

    use super::*;
    use crate::model::{Duration, HistoryKind, Machine, StateKind, Trigger};
    use crate::syntax::{self, Syntax};

    #[track_caller]
    fn load(text: &str) -> Machine {
        syntax::parse(text, Syntax::Dsl).unwrap_or_else(|e| panic!("{text}\n{e:#?}"))
    }

    fn paths(machine: &Machine) -> Vec<(String, StateKind)> {
        machine
            .states
            .iter()
            .map(|s| (s.path.clone(), s.kind))
            .collect()
    }

    #[test]
    fn the_examples_load() {
        let pedido = load(PEDIDO);
        assert_eq!((pedido.name.as_str(), pedido.version), ("pedido", Some(1)));
        assert_eq!(
            paths(&pedido),
            [
                (String::new(), StateKind::Compound),
                ("pendiente".into(), StateKind::Atomic),
                ("pagado".into(), StateKind::Atomic),
                ("enviado".into(), StateKind::Final),
                ("cancelado".into(), StateKind::Final),
            ]
        );
        assert_eq!(pedido.transitions.len(), 5);
        assert_eq!(
            pedido.dedup.as_ref().unwrap().retention,
            Duration::parse("7d").unwrap()
        );
        assert_eq!(pedido.context["cobrosVistos"].value, serde_json::json!([]));

        let lampara = load(LAMPARA);
        assert_eq!(
            paths(&lampara),
            [
                (String::new(), StateKind::Compound),
                ("funcionando".into(), StateKind::Compound),
                ("funcionando.apagada".into(), StateKind::Atomic),
                ("funcionando.encendida".into(), StateKind::Atomic),
                (
                    "funcionando.recuerdo".into(),
                    StateKind::History(HistoryKind::Deep)
                ),
                ("averiada".into(), StateKind::Atomic),
                ("panel".into(), StateKind::Parallel),
                ("panel.pantalla".into(), StateKind::Compound),
                ("panel.pantalla.oscura".into(), StateKind::Atomic),
                ("panel.pantalla.clara".into(), StateKind::Atomic),
                ("panel.sonido".into(), StateKind::Compound),
                ("panel.sonido.mudo".into(), StateKind::Atomic),
            ]
        );
        let delayed: Vec<&Trigger> = lampara
            .transitions
            .iter()
            .map(|t| &t.trigger)
            .filter(|t| matches!(t, Trigger::After(_)))
            .collect();
        assert_eq!(delayed, [&Trigger::After(Duration::parse("30m").unwrap())]);
        let reentering = lampara.transitions.iter().filter(|t| t.reenter).count();
        assert_eq!(reentering, 1);
    }

    #[test]
    fn printing_reads_back_as_the_same_model_and_is_stable() {
        for text in [PEDIDO, LAMPARA, EVERYTHING] {
            let machine = load(text);
            let printed = format(&machine);
            let again = load(&printed);
            assert_eq!(again, machine, "{printed}");
            assert_eq!(format(&again), printed);
        }
    }

    #[test]
    fn the_hazard_corpus_converts_from_yaml() {
        let mut count = 0;
        for entry in std::fs::read_dir("tests/data/hazards").unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let yaml = std::fs::read_to_string(&path).unwrap();
            let machine = syntax::parse(&yaml, Syntax::Yaml).unwrap();
            let printed = format(&machine);
            assert_eq!(load(&printed), machine, "{}:\n{printed}", path.display());
            count += 1;
        }
        assert!(count >= 10, "{count}");
    }

    /// The DSL may repeat a descriptor; YAML cannot. Both mean the same.
    #[test]
    fn repeated_descriptors_equal_one_yaml_key() {
        let dsl = load(
            "machine m
             context { n = 0 }
             initial a
             state a {
               on X -> b if context.n > 0
               on Y -> c
               on X -> c
               after 1s -> b
               on Z -> b
               after 2s -> c
               after 1s -> c
             }
             state b
             state c",
        );
        let yaml = syntax::parse(
            "machine: m
context: { n: 0 }
initial: a
states:
  a:
    on:
      X:
        - { target: b, guard: context.n > 0 }
        - c
      Y: c
      Z: b
    after:
      1s: [b, c]
      2s: c
  b: {}
  c: {}
",
            Syntax::Yaml,
        )
        .unwrap();
        assert_eq!(dsl, yaml);
    }

    #[test]
    fn the_canonical_form_of_pedido() {
        assert_eq!(
            format(&load(PEDIDO)),
            r#"machine pedido version 1
"Order payment lifecycle."

context {
  total = 100
  cobrado = 0
  cobrosVistos = []
}

source pasarela retry 72h
dedup retention 7d

event PAGO_CONFIRMADO id pagoId from pasarela
event COBRO_PARCIAL(cobroId: string, importe: number) id cobroId from pasarela
event ENVIADO id envioId
event CANCELAR id solicitudId

effect encolarEnvio idempotent key

initial pendiente

state pendiente {
  on PAGO_CONFIRMADO -> pagado
  on COBRO_PARCIAL if !(event.cobroId in context.cobrosVistos) {
    cobrosVistos = context.cobrosVistos + [event.cobroId]
    cobrado = context.cobrado + event.importe
  }
  on CANCELAR -> cancelado
  always -> pagado if context.cobrado >= context.total
}

state pagado {
  entry encolarEnvio
  on ENVIADO -> enviado
}

final enviado
final cancelado
"#
        );
    }

    #[test]
    fn an_unknown_word_lists_the_words() {
        let errors = syntax::parse("machine m\neffect e idempotent nada", Syntax::Dsl)
            .expect_err("`nada` is no idempotency");
        assert_eq!(errors[0].message, "unknown idempotency `nada`");
        assert_eq!(
            errors[0].help.as_deref(),
            Some("write one of `key`, `natural`, `none`")
        );
        let errors = syntax::parse("machine m\neffect e idempotent keyed", Syntax::Dsl)
            .expect_err("`keyed` is no idempotency");
        assert_eq!(errors[0].help.as_deref(), Some("did you mean `key`?"));
    }
}

#[test]
fn host_guards_are_declared_at_the_top_level() {
    let text = "machine m\nguards isValid `hasStock`\nguards late\ninitial a\n\
                state a { on GO -> b if isValid && !late }\nstate b\n";
    let doc = parse_ok(text);
    let names: Vec<&str> = doc.guards.iter().map(|g| g.text.as_str()).collect();
    assert_eq!(names, ["isValid", "hasStock", "late"]);
    assert_eq!(at(text, doc.guards[1].span), (2, 16));
    let machine = crate::syntax::parse(text, crate::syntax::Syntax::Dsl).unwrap();
    let printed = format(&machine);
    assert!(
        printed.contains("\nguards isValid hasStock late\n"),
        "{printed}"
    );
    assert_eq!(
        crate::syntax::parse(&printed, crate::syntax::Syntax::Dsl).unwrap(),
        machine
    );
    // `guards` is reserved: without it a target list would swallow the
    // declaration that follows (`initial a guards x`).
    check_error(
        "machine m\nstate guards",
        "E001",
        "expected a name after `state`, found the keyword `guards`",
        (2, 7),
    );
    check_error(
        "machine m\nguards\ninitial a",
        "E001",
        "expected a name after `guards`, found the keyword `initial`",
        (3, 1),
    );
}

/// `outbox keep | drop` in a migration reads, prints and reads back; another
/// word is an error at the word; `outbox` is no keyword elsewhere.
#[test]
fn a_migration_says_what_becomes_of_the_outbox() {
    let text =
        "machine m version 2\nmigration from 1 { timers drop  outbox drop }\ninitial a\nstate a\n";
    let doc = parse_ok(text);
    assert_eq!(
        doc.migrations[0].outbox.as_ref().map(|w| w.text.as_str()),
        Some("drop")
    );
    let machine = crate::syntax::parse(text, crate::syntax::Syntax::Dsl).unwrap();
    assert_eq!(
        machine.migrations[0].outbox,
        Some(crate::model::Carry::Drop)
    );
    let printed = format(&machine);
    assert!(
        printed.contains("migration from 1 {\n  timers drop\n  outbox drop\n}\n"),
        "{printed}"
    );
    assert_eq!(
        crate::syntax::parse(&printed, crate::syntax::Syntax::Dsl).unwrap(),
        machine
    );
    let bad = "machine m version 2\nmigration from 1 { outbox later }\ninitial a\nstate a\n";
    let errors = crate::syntax::parse(bad, crate::syntax::Syntax::Dsl).unwrap_err();
    let found: Vec<_> = errors
        .iter()
        .map(|e| (e.code, e.message.as_str(), at(bad, e.span)))
        .collect();
    assert_eq!(found, [("E008", "unknown setting `later`", (2, 27))]);
    parse_ok("machine m\ninitial outbox\nstate outbox\n");
}

#[test]
fn the_keywords_at_the_end_are_those_the_grammar_expects_there() {
    let words = |before: &str| keywords_at_end(before).join(" ");
    // A state body: its items and nothing of the top level.
    assert_eq!(
        words("machine m\nstate a {\n  "),
        "after allow always entry exit final history initial invoke on parallel state tags"
    );
    // After a transition's targets: its optional parts, or the next item.
    let after_targets = words("machine m\nstate a {\n  on GO -> b ");
    assert!(
        after_targets.contains("if") && after_targets.contains("reenter"),
        "{after_targets}"
    );
    assert!(!after_targets.contains("event"), "{after_targets}");
    // An action block, an invoke body, an event's declaration.
    assert_eq!(
        words("machine m\nstate a {\n  on GO -> b {\n    "),
        "assign cancel effect log raise send"
    );
    assert_eq!(
        words("machine m\nstate a {\n  invoke x {\n    "),
        "done error"
    );
    let event = words("machine m\nevent E(a: string) ");
    assert!(
        event.contains("id") && event.contains("from") && event.contains("state"),
        "{event}"
    );
    // A text that fails before its end says nothing about the cursor.
    assert_eq!(words("machine m\nstate a {\n  on -> ) "), "");
    assert_eq!(words("machine m\nstate a \"unclosed "), "");
}

/// Comments are found between the tokens only: `//` in a string or a quoted
/// name is text, and the header and the unnamed declarations are keys.
#[test]
fn comments_are_found_between_tokens() {
    let text = "// top\nmachine m \"a // b\"  // after\ncontext { x = \"//\" }\ninitial `s//t` // first\nstate `s//t`\n// end\n";
    let (found, keys) = comments(text);
    let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, [" top", " after", " first", " end"]);
    let keys: Vec<&str> = keys.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(keys, ["machine", "context", "initial"]);
}
