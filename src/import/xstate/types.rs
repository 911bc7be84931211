//! Event payload types where TypeScript (or a JSON schema) states them:
//! `types: {} as { events: E }`, `setup({ types: { events: {} as E } })`,
//! v4's `schema: { events: {} as E }`, the machine's generic arguments
//! (`createMachine<C, E>`), and `schemas: { events: { E: { properties } } }`.
//! `E` is a union of object types written in place or named by a type
//! alias or interface of the same module.
//!
//! Each event read whole becomes a declared event with its payload fields
//! and their types, and no id: a field named like an id is no fact about
//! identity, which only the author states (`meta.idemchart`,
//! `idemchart.toml`). The replay's payload search then synthesizes values
//! of the declared types, and the translator types `event.f` by them. An
//! event whose shape cannot be read whole (an imported type, an index
//! signature, a generic) is left undeclared, as if no type were written:
//! a payload declared in part would refuse the fields it leaves out.

use std::collections::HashMap;

use oxc_ast::ast::*;

use super::config::{Cx, Entry, MachineCall};
use super::facts::Declarations;
use super::scope::{Node, Reader, TextId, property};
use crate::model::{Completion, Name};
use crate::syntax::tree::EventDoc;

/// How deep names are followed inside a type: far beyond an honest event
/// union, short of a cycle (`type A = B; type B = A`).
const MAX_TYPE_DEPTH: u32 = 16;

/// The generic argument of a machine call that types its events: the
/// second of `createMachine<TContext, TEvent>` (v4 and v5) and
/// `createTestMachine`, the third of v4's `Machine<TContext, TStateSchema,
/// TEvent>`.
pub(super) fn generic_event_type<'a>(
    function: &str,
    call: &'a CallExpression<'a>,
) -> Option<&'a TSType<'a>> {
    let index = if function == "Machine" { 2 } else { 1 };
    call.type_arguments.as_ref()?.params.get(index)
}

/// One event as a type states it: its name where `type` is written, and
/// its other fields with their payload types.
struct TypedEvent {
    name: Name,
    fields: Vec<(Name, Name)>,
}

/// Adds the events that the machine's types state to `declarations`: an
/// event not declared there is declared with its payload and no id; one
/// declared without a payload gets the typed one, unless its id field is
/// not among the typed fields (the author's declaration stands as written).
pub(super) fn add_event_types<'a>(
    cx: &mut Cx<'_, 'a>,
    call: &MachineCall<'a>,
    entries: &[Entry<'a>],
    declarations: &mut Declarations,
) {
    let mut typed: Vec<TypedEvent> = Vec::new();
    let mut add = |found: Vec<TypedEvent>| {
        for event in found {
            if !typed.iter().any(|e| e.name.text == event.name.text) {
                typed.push(event);
            }
        }
    };
    let config = |key: &str| entries.iter().find(|e| e.key == key).map(|e| e.value);
    let setup: Vec<Node<'a>> = call
        .setup
        .iter()
        .filter_map(|s| cx.reader.resolve(*s).ok())
        .filter(|s| matches!(s.e, Expression::ObjectExpression(_)))
        .collect();
    let in_setup = |key: &str| -> Vec<Node<'a>> {
        setup
            .iter()
            .filter_map(|s| property(s.e, key).map(|e| Node { e, t: s.t }))
            .collect()
    };
    let typings: Vec<Node<'a>> = config("types")
        .into_iter()
        .chain(in_setup("types"))
        .chain(config("schema"))
        .collect();
    for typing in typings {
        if let Some((ty, t)) = events_type(cx, typing) {
            add(Types::of(cx.reader, t).events(ty));
        }
    }
    if let Some(ty) = call.event_type {
        add(Types::of(cx.reader, call.config.t).events(ty));
    }
    for schemas in config("schemas").into_iter().chain(in_setup("schemas")) {
        add(schema_events(cx, schemas));
    }

    for event in typed {
        if Completion::of_event(&event.name.text).is_some() || event.name.text.contains('*') {
            continue;
        }
        match declarations
            .events
            .iter_mut()
            .find(|d| d.name.text == event.name.text)
        {
            Some(declared) => {
                let id_typed = declared
                    .id_field
                    .as_ref()
                    .is_none_or(|id| event.fields.iter().any(|(f, _)| f.text == id.text));
                if declared.payload.is_none() && id_typed {
                    declared.payload = Some(event.fields);
                }
            }
            None => declarations.events.push(EventDoc {
                name: event.name,
                id_field: None,
                source: None,
                payload: Some(event.fields),
                description: None,
            }),
        }
    }
}

/// The type a value is asserted to have: `{} as T`, `<T>{}`.
fn asserted<'a>(e: &'a Expression<'a>) -> Option<&'a TSType<'a>> {
    match e {
        Expression::TSAsExpression(a) => Some(&a.type_annotation),
        Expression::TSTypeAssertion(a) => Some(&a.type_annotation),
        Expression::ParenthesizedExpression(p) => asserted(&p.expression),
        _ => None,
    }
}

/// The events' type in a `types` (or v4 `schema`) value: the `events`
/// member of the type the whole value is asserted to have
/// (`{} as { events: E }`), or the type asserted of its `events` property
/// (`{ events: {} as E }`).
fn events_type<'a>(cx: &mut Cx<'_, 'a>, value: Node<'a>) -> Option<(&'a TSType<'a>, TextId)> {
    if let Some(whole) = asserted(value.e) {
        let events = Types::of(cx.reader, value.t)
            .shape(whole, 0)?
            .into_iter()
            .find(|m| m.key == "events")?
            .ty?;
        return Some((events, value.t));
    }
    let object = cx.reader.resolve(value).ok()?;
    let events = property(object.e, "events")?;
    Some((asserted(events)?, object.t))
}

/// `schemas: { events: { NAME: { properties: { f: { type } } } } }`: JSON
/// schemas of the events' payloads, by event name.
fn schema_events<'a>(cx: &mut Cx<'_, 'a>, schemas: Node<'a>) -> Vec<TypedEvent> {
    let Ok(schemas) = cx.reader.resolve(schemas) else {
        return Vec::new();
    };
    let Some(events) = property(schemas.e, "events") else {
        return Vec::new();
    };
    let Ok(events) = cx.reader.resolve(Node {
        e: events,
        t: schemas.t,
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, span, schema) in static_properties(events.e) {
        let Ok(serde_json::Value::Object(schema)) = cx.json(Node {
            e: schema,
            t: events.t,
        }) else {
            continue;
        };
        let span = cx.reader.span(events.t, span);
        let named = |text: &str| Name {
            text: text.to_string(),
            span,
        };
        let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
            continue;
        };
        let fields = properties
            .iter()
            .filter(|(field, _)| field.as_str() != "type")
            .map(|(field, p)| {
                let word = match p.get("type").and_then(|t| t.as_str()) {
                    Some("string") => "string",
                    Some("number") => "number",
                    Some("integer") => "integer",
                    Some("boolean") => "boolean",
                    Some("array") => "list",
                    Some("object") => "map",
                    _ => "any",
                };
                (named(field), named(word))
            })
            .collect();
        out.push(TypedEvent {
            name: named(name),
            fields,
        });
    }
    out
}

/// The properties of an object literal whose keys are written plainly.
fn static_properties<'a>(
    object: &'a Expression<'a>,
) -> Vec<(&'a str, oxc_span::Span, &'a Expression<'a>)> {
    let Expression::ObjectExpression(o) = object else {
        return Vec::new();
    };
    o.properties
        .iter()
        .filter_map(|p| match p {
            ObjectPropertyKind::ObjectProperty(p) if !p.computed => Some((
                static_key(&p.key)?,
                oxc_span::GetSpan::span(&p.key),
                &p.value,
            )),
            _ => None,
        })
        .collect()
}

fn static_key<'a>(key: &'a PropertyKey<'a>) -> Option<&'a str> {
    match key {
        PropertyKey::StaticIdentifier(id) => Some(id.name.as_str()),
        PropertyKey::StringLiteral(s) => Some(s.value.as_str()),
        _ => None,
    }
}

/// A type alias or an interface of the module.
#[derive(Clone, Copy)]
enum Named<'a> {
    Alias(&'a TSTypeAliasDeclaration<'a>),
    Interface(&'a TSInterfaceDeclaration<'a>),
}

/// One property of an object type: its key, where it is written, and its
/// type (`None` when written without one, which TypeScript reads as `any`).
struct Member<'a> {
    key: &'a str,
    span: oxc_span::Span,
    ty: Option<&'a TSType<'a>>,
}

/// The named types of one module, for reading the types written in it.
struct Types<'r, 'a> {
    reader: &'r Reader<'a>,
    t: TextId,
    named: HashMap<&'a str, Named<'a>>,
}

impl<'r, 'a> Types<'r, 'a> {
    /// The type aliases and interfaces declared at the top level of text
    /// `t`, exported or not.
    fn of(reader: &'r Reader<'a>, t: TextId) -> Types<'r, 'a> {
        let mut named = HashMap::new();
        for statement in reader.texts[t].program.iter().flat_map(|p| &p.body) {
            let declaration = match statement {
                Statement::ExportDeclaration(export) => &export.declaration,
                other => match other.as_declaration() {
                    Some(d) => d,
                    None => continue,
                },
            };
            match declaration {
                Declaration::TSTypeAliasDeclaration(a) => {
                    named.insert(a.id.name.as_str(), Named::Alias(a));
                }
                Declaration::TSInterfaceDeclaration(i) => {
                    named.insert(i.id.name.as_str(), Named::Interface(i));
                }
                _ => {}
            }
        }
        Types { reader, t, named }
    }

    fn name(&self, text: &str, span: oxc_span::Span) -> Name {
        Name {
            text: text.to_string(),
            span: self.reader.span(self.t, span),
        }
    }

    /// The local alias or interface a name refers to, if it takes no type
    /// arguments.
    fn lookup(&self, name: &TSTypeName<'a>, arguments: bool) -> Option<Named<'a>> {
        let TSTypeName::IdentifierReference(id) = name else {
            return None;
        };
        let named = *self.named.get(id.name.as_str())?;
        let generic = match named {
            Named::Alias(a) => a.type_parameters.is_some(),
            Named::Interface(i) => i.type_parameters.is_some(),
        };
        (!generic && !arguments).then_some(named)
    }

    /// The events of a union of event object types, each read whole.
    fn events(&self, ty: &'a TSType<'a>) -> Vec<TypedEvent> {
        let mut members = Vec::new();
        self.union_members(ty, 0, &mut members);
        members.into_iter().flat_map(|m| self.event(m)).collect()
    }

    /// The members of a union, unions and aliases of unions flattened.
    fn union_members(&self, ty: &'a TSType<'a>, depth: u32, out: &mut Vec<&'a TSType<'a>>) {
        if depth > MAX_TYPE_DEPTH {
            return;
        }
        match ty {
            TSType::TSUnionType(u) => {
                for member in &u.types {
                    self.union_members(member, depth + 1, out);
                }
            }
            TSType::TSParenthesizedType(p) => {
                self.union_members(&p.type_annotation, depth + 1, out)
            }
            TSType::TSTypeReference(r) => {
                match self.lookup(&r.type_name, r.type_arguments.is_some()) {
                    Some(Named::Alias(a)) => self.union_members(&a.type_annotation, depth + 1, out),
                    _ => out.push(ty),
                }
            }
            _ => out.push(ty),
        }
    }

    /// The events one object type of the union states: one per name its
    /// `type` may have (`type: 'A' | 'B'` states two), with the same fields.
    fn event(&self, ty: &'a TSType<'a>) -> Vec<TypedEvent> {
        let Some(members) = self.shape(ty, 0) else {
            return Vec::new();
        };
        let Some(names) = members
            .iter()
            .find(|m| m.key == "type")
            .and_then(|m| m.ty)
            .and_then(string_literals)
        else {
            return Vec::new();
        };
        let fields: Vec<(Name, Name)> = members
            .iter()
            .filter(|m| m.key != "type")
            .map(|m| {
                let word = m.ty.map_or("any", |t| self.payload_type(t, 0));
                (self.name(m.key, m.span), self.name(word, m.span))
            })
            .collect();
        names
            .into_iter()
            .map(|(text, span)| TypedEvent {
                name: self.name(text, span),
                fields: fields.clone(),
            })
            .collect()
    }

    /// The properties of an object type, read whole: a type literal, an
    /// intersection of such, or a local alias or interface (with what it
    /// extends). `None` where some part cannot be read: an index or method
    /// signature, a computed key, a type of another module, a generic.
    fn shape(&self, ty: &'a TSType<'a>, depth: u32) -> Option<Vec<Member<'a>>> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        match ty {
            TSType::TSTypeLiteral(l) => signatures(&l.members),
            TSType::TSParenthesizedType(p) => self.shape(&p.type_annotation, depth + 1),
            TSType::TSIntersectionType(i) => {
                let mut out = Vec::new();
                for part in &i.types {
                    merge(&mut out, self.shape(part, depth + 1)?);
                }
                Some(out)
            }
            TSType::TSTypeReference(r) => self.named_shape(
                self.lookup(&r.type_name, r.type_arguments.is_some())?,
                depth,
            ),
            _ => None,
        }
    }

    /// The properties of a local alias or interface; an interface's own
    /// after those of what it extends.
    fn named_shape(&self, named: Named<'a>, depth: u32) -> Option<Vec<Member<'a>>> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        match named {
            Named::Alias(a) => self.shape(&a.type_annotation, depth + 1),
            Named::Interface(i) => {
                let mut out = Vec::new();
                for heritage in &i.extends {
                    let parent =
                        self.lookup(&heritage.type_name, heritage.type_arguments.is_some())?;
                    merge(&mut out, self.named_shape(parent, depth + 1)?);
                }
                merge(&mut out, signatures(&i.body.body)?);
                Some(out)
            }
        }
    }

    /// The machine format's payload type of a field's TypeScript type;
    /// `null` and `undefined` in a union are dropped (an optional field is
    /// typed by what it holds when present), and a union of several types
    /// is `any`.
    fn payload_type(&self, ty: &'a TSType<'a>, depth: u32) -> &'static str {
        if depth > MAX_TYPE_DEPTH {
            return "any";
        }
        match ty {
            TSType::TSStringKeyword(_) | TSType::TSTemplateLiteralType(_) => "string",
            TSType::TSNumberKeyword(_) => "number",
            TSType::TSBooleanKeyword(_) => "boolean",
            TSType::TSLiteralType(l) => match &l.literal {
                TSLiteral::StringLiteral(_) | TSLiteral::TemplateLiteral(_) => "string",
                TSLiteral::NumericLiteral(_) | TSLiteral::UnaryExpression(_) => "number",
                TSLiteral::BooleanLiteral(_) => "boolean",
                TSLiteral::BigIntLiteral(_) => "any",
            },
            TSType::TSArrayType(_) | TSType::TSTupleType(_) => "list",
            TSType::TSTypeOperatorType(o) => match o.operator {
                TSTypeOperatorOperator::Readonly => {
                    self.payload_type(&o.type_annotation, depth + 1)
                }
                _ => "any",
            },
            TSType::TSTypeLiteral(_) | TSType::TSMappedType(_) => "map",
            TSType::TSParenthesizedType(p) => self.payload_type(&p.type_annotation, depth + 1),
            TSType::TSUnionType(u) => {
                let mut words = u
                    .types
                    .iter()
                    .filter(|t| {
                        !matches!(t, TSType::TSNullKeyword(_) | TSType::TSUndefinedKeyword(_))
                    })
                    .map(|t| self.payload_type(t, depth + 1));
                match words.next() {
                    Some(first) if words.all(|w| w == first) => first,
                    _ => "any",
                }
            }
            TSType::TSTypeReference(r) => {
                if let TSTypeName::IdentifierReference(id) = &r.type_name {
                    match id.name.as_str() {
                        "Array" | "ReadonlyArray" => return "list",
                        "Record" => return "map",
                        _ => {}
                    }
                }
                match self.lookup(&r.type_name, r.type_arguments.is_some()) {
                    Some(Named::Alias(a)) => self.payload_type(&a.type_annotation, depth + 1),
                    Some(Named::Interface(_)) => "map",
                    None => "any",
                }
            }
            _ => "any",
        }
    }
}

/// `more` added to `members`, a property of `more` replacing one of the
/// same key: in an intersection or an interface that extends another, the
/// later one narrows the earlier (`{ type: string } & { type: 'PAY' }` is
/// `'PAY'`).
fn merge<'a>(members: &mut Vec<Member<'a>>, more: Vec<Member<'a>>) {
    for member in more {
        members.retain(|m| m.key != member.key);
        members.push(member);
    }
}

/// The property signatures of an object type; `None` when it has another
/// kind of member or a key that is not written plainly.
fn signatures<'a>(members: &'a [TSSignature<'a>]) -> Option<Vec<Member<'a>>> {
    members
        .iter()
        .map(|m| match m {
            TSSignature::TSPropertySignature(p) if !p.computed => Some(Member {
                key: static_key(&p.key)?,
                span: oxc_span::GetSpan::span(&p.key),
                ty: p.type_annotation.as_ref().map(|a| &a.type_annotation),
            }),
            _ => None,
        })
        .collect()
}

/// The strings a `type` member may be: a string literal, or a union of
/// them; `None` for anything else (`string`, a template).
fn string_literals<'a>(ty: &'a TSType<'a>) -> Option<Vec<(&'a str, oxc_span::Span)>> {
    match ty {
        TSType::TSLiteralType(l) => match &l.literal {
            TSLiteral::StringLiteral(s) => Some(vec![(s.value.as_str(), s.span)]),
            _ => None,
        },
        TSType::TSParenthesizedType(p) => string_literals(&p.type_annotation),
        TSType::TSUnionType(u) => {
            let mut out = Vec::new();
            for member in &u.types {
                out.extend(string_literals(member)?);
            }
            Some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::import::xstate::{MachineSettings, Settings, extract, load};
    use crate::model::{FactSource, ForeignFormat, Machine, PayloadType};
    use crate::span::SourceFile;
    use crate::syntax::tree::MachineDoc;

    fn doc(text: &str) -> MachineDoc {
        let mut read = extract(SourceFile::new("m.ts", text), &Settings::default());
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        read.machines.remove(0).2
    }

    fn machine_with(text: &str, settings: &Settings) -> Machine {
        let mut read = load(SourceFile::new("m.ts", text), settings);
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        read.machines.remove(0).machine.expect("loads")
    }

    fn machine(text: &str) -> Machine {
        machine_with(text, &Settings::default())
    }

    /// Each declared event with its payload fields as `field: type`.
    fn payloads(doc: &MachineDoc) -> Vec<(String, Option<String>, Vec<String>)> {
        doc.events
            .iter()
            .map(|e| {
                let fields = e
                    .payload
                    .iter()
                    .flatten()
                    .map(|(f, t)| format!("{}: {}", f.text, t.text))
                    .collect();
                (
                    e.name.text.clone(),
                    e.id_field.as_ref().map(|i| i.text.clone()),
                    fields,
                )
            })
            .collect()
    }

    fn names_and_fields(doc: &MachineDoc) -> Vec<String> {
        payloads(doc)
            .into_iter()
            .map(|(name, _, fields)| format!("{name}({})", fields.join(", ")))
            .collect()
    }

    /// A machine whose `on` handles PAY and CANCEL, with `head` before it
    /// and `types` in the config.
    fn with_types(head: &str, call: &str, types: &str) -> String {
        format!(
            "import {{ createMachine, setup, Machine }} from 'xstate';\n{head}\n\
             export const m = {call}({{\n  id: 'm',\n  {types}\n  initial: 'a',\n  \
             states: {{ a: {{ on: {{ PAY: 'b', CANCEL: 'b' }} }}, b: {{}} }},\n}});\n"
        )
    }

    const ORDER_EVENT: &str = "type OrderEvent =\n  \
        | { type: 'PAY'; paymentId: string; amount: number; note?: string | null; \
            items: string[]; tags: ReadonlyArray<string>; card: { last4: string }; \
            express: boolean; method: 'card' | 'sepa'; at: Date }\n  \
        | { type: 'CANCEL' };";

    #[test]
    fn a_type_alias_of_the_module_types_the_events_in_each_place_xstate_reads_them() {
        let expected = [
            "PAY(paymentId: string, amount: number, note: string, items: list, tags: list, \
             card: map, express: boolean, method: string, at: any)",
            "CANCEL()",
        ];
        for (call, types) in [
            ("createMachine", "types: {} as { events: OrderEvent },"),
            ("createMachine", "types: { events: {} as OrderEvent },"),
            ("createMachine", "schema: { events: {} as OrderEvent },"),
            ("createMachine<{ n: number }, OrderEvent>", ""),
            ("Machine<{ n: number }, any, OrderEvent>", ""),
            (
                "setup({ types: { events: {} as OrderEvent } }).createMachine",
                "",
            ),
            (
                "setup({ types: {} as { context: {}; events: OrderEvent } }).createMachine",
                "",
            ),
        ] {
            let doc = doc(&with_types(ORDER_EVENT, call, types));
            assert_eq!(names_and_fields(&doc), expected, "{call} {types}");
            // A field named like an id is no id fact.
            assert!(payloads(&doc).iter().all(|(_, id, _)| id.is_none()));
        }
    }

    #[test]
    fn interfaces_intersections_and_names_of_several_events_are_read_whole() {
        let head = "interface Base { requestId: string }\n\
                    interface Pay extends Base { type: 'PAY'; amount: number }\n\
                    type Cancel = Base & { type: 'CANCEL' | 'ABORT'; reason: string };";
        let text = with_types(
            head,
            "createMachine",
            "types: {} as { events: Pay | Cancel },",
        );
        assert_eq!(
            names_and_fields(&doc(&text)),
            [
                "PAY(requestId: string, amount: number)",
                "CANCEL(requestId: string, reason: string)",
                "ABORT(requestId: string, reason: string)",
            ]
        );
    }

    #[test]
    fn an_event_not_read_whole_stays_undeclared() {
        let head = "import type { Audit } from './audit';\n\
                    type Ev =\n  \
                      | ({ type: 'PAY'; amount: number } & Audit)\n  \
                      | { type: 'CANCEL'; [key: string]: unknown }\n  \
                      | { type: 'RETRY'; attempt: number };";
        let text = with_types(head, "createMachine", "types: {} as { events: Ev },");
        assert_eq!(names_and_fields(&doc(&text)), ["RETRY(attempt: number)"]);
        // An imported union: nothing is known of its events.
        let imported = with_types(
            "import type { OrderEvent } from './events';",
            "createMachine",
            "types: {} as { events: OrderEvent },",
        );
        assert!(doc(&imported).events.is_empty());
    }

    #[test]
    fn json_schemas_type_the_payloads() {
        let text = with_types(
            "",
            "createMachine",
            "schemas: { events: { PAY: { type: 'object', properties: { amount: { type: 'number' }, \
             ref: { type: 'string' }, lines: { type: 'array' } } } } },",
        );
        assert_eq!(
            names_and_fields(&doc(&text)),
            ["PAY(amount: number, ref: string, lines: list)"]
        );
    }

    #[test]
    fn the_authors_facts_win_and_are_completed_by_the_types() {
        let meta = "meta: { idemchart: { events: { \
                      PAY: { id: 'paymentId' }, \
                      CANCEL: { id: 'cancelId' }, \
                      REFUND: { id: 'refundId', payload: { refundId: 'string' } } } } },\n  \
                    types: {} as { events: \
                      | { type: 'PAY'; paymentId: string; amount: number } \
                      | { type: 'CANCEL'; reason: string } \
                      | { type: 'REFUND'; refundId: string; amount: number } },";
        let doc = doc(&with_types("", "createMachine", meta));
        let got = payloads(&doc);
        // PAY gets the typed payload; CANCEL's id is not among its typed
        // fields, so its declaration stands as written; REFUND declares
        // its own payload.
        assert_eq!(
            got,
            [
                (
                    "PAY".into(),
                    Some("paymentId".into()),
                    vec!["paymentId: string".into(), "amount: number".into()]
                ),
                ("CANCEL".into(), Some("cancelId".into()), vec![]),
                (
                    "REFUND".into(),
                    Some("refundId".into()),
                    vec!["refundId: string".into()]
                ),
            ]
        );
        assert!(doc.events[1].payload.is_none());
    }

    #[test]
    fn facts_come_from_declarations_only_where_the_author_wrote_some() {
        let typed = with_types(
            ORDER_EVENT,
            "createMachine",
            "types: {} as { events: OrderEvent },",
        );
        // Types alone are no declaration of facts.
        assert_eq!(
            machine(&typed).fact_source,
            FactSource::Nowhere(ForeignFormat::Xstate)
        );
        let declared = with_types(
            "",
            "createMachine",
            "meta: { idemchart: { effects: { charge: { idempotency: 'key' } } } },",
        );
        assert_eq!(machine(&declared).fact_source, FactSource::Declarations);
        // An `allow` is no fact.
        let allowed = with_types(
            "",
            "createMachine",
            "meta: { idemchart: { allow: { 'cycle-reenables-event': 'on purpose' } } },",
        );
        assert_eq!(
            machine(&allowed).fact_source,
            FactSource::Nowhere(ForeignFormat::Xstate)
        );
        // Facts of another machine in idemchart.toml opt the repository in.
        let mut settings = Settings::default();
        let mut other = MachineSettings::default();
        other
            .facts
            .events
            .insert("PAY".into(), super::super::facts::EventFact::default());
        settings.machines.insert("another".into(), other);
        assert_eq!(
            machine_with(&typed, &settings).fact_source,
            FactSource::Declarations
        );
    }

    /// A deposit is counted only when it covers what is due, a field of the
    /// context: the replay's synthesized payloads pass that guard only with
    /// a number large enough, which they try for a field typed `number`;
    /// the reasoning about payloads chooses the amount due either way.
    #[test]
    fn typed_payload_fields_reach_the_replays_payload_search() {
        let booking = |types: &str| {
            format!(
                "import {{ assign, createMachine }} from 'xstate';\n\
                 type BookingEvent = {{ type: 'PAY_DEPOSIT'; paymentId: string; amount: number }};\n\
                 export const m = createMachine({{\n  id: 'booking',\n  {types}\n  \
                 initial: 'open',\n  context: {{ depositDue: 150, paid: 0 }},\n  states: {{ open: {{ on: {{\n    \
                 PAY_DEPOSIT: {{ guard: ({{ context, event }}) => event.amount >= context.depositDue,\n      \
                 actions: assign({{ paid: ({{ context, event }}) => context.paid + event.amount }}) }},\n  \
                 }} }} }},\n}});\n"
            )
        };
        let cumulative = |m: &Machine| {
            crate::lint::lint(m)
                .into_iter()
                .filter(|d| d.code == "I004")
                .collect::<Vec<_>>()
        };
        let typed = machine(&booking("types: {} as { events: BookingEvent },"));
        assert_eq!(
            typed.events["PAY_DEPOSIT"].payload.as_ref().unwrap()["amount"].ty,
            PayloadType::Number
        );
        let untyped = machine(&booking(""));
        let found = crate::lint::without_reasoning(|| cumulative(&typed));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].verdict, Some(crate::Verdict::Confirmed));
        assert_eq!(found[0].witness, ["PAY_DEPOSIT", "PAY_DEPOSIT*"]);
        // Without the type, no synthesized payload passes the guard, and no
        // run shows the hazard: a note.
        let found = crate::lint::without_reasoning(|| cumulative(&untyped));
        assert_eq!(found[0].verdict, Some(crate::Verdict::NotShown));
        assert_eq!(found[0].severity, crate::Severity::Note);
        // With the reasoning, the typed machine needs none (a synthesized
        // payload passes); the untyped one gets the amount due, read from
        // the guard and the context.
        let found = cumulative(&typed);
        assert_eq!(found[0].witness, ["PAY_DEPOSIT", "PAY_DEPOSIT*"]);
        let found = cumulative(&untyped);
        assert_eq!(found[0].verdict, Some(crate::Verdict::Confirmed));
        assert_eq!(
            found[0].witness,
            [r#"PAY_DEPOSIT {"amount": 150}"#, "PAY_DEPOSIT*"]
        );
    }
}
