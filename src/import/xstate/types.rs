//! Event payload types where TypeScript (or a JSON schema) states them:
//! `types: {} as { events: E }`, `setup({ types: { events: {} as E } })`,
//! v4's `schema: { events: {} as E }`, the machine's generic arguments
//! (`createMachine<C, E>`), and `schemas: { events: { E: { properties } } }`.
//! `E` is a union of object types written in place or named by type
//! aliases and interfaces, of the same module or imported from another
//! (`import type { OrderEvent } from './events'`, through tsconfig aliases
//! and workspace packages as values are, re-exports and `export *`
//! followed), to a depth bound.
//!
//! Each event read whole becomes a declared event with its payload fields
//! and their types, and no id: a field named like an id is no fact about
//! identity, which only the author states (`meta.idemchart`,
//! `idemchart.toml`). The replay's payload search then synthesizes values
//! of the declared types, and the translator types `event.f` by them. An
//! event whose shape cannot be read whole (a type of a package or of a
//! module that cannot be followed, an index signature, a generic) is left
//! undeclared, as if no type were written: a payload declared in part
//! would refuse the fields it leaves out.

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
            add(Types::new(cx.reader).events(ty, t));
        }
    }
    if let Some(ty) = call.event_type {
        add(Types::new(cx.reader).events(ty, call.config.t));
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
        let events = Types::new(cx.reader)
            .shape(whole, value.t, 0)?
            .into_iter()
            .find(|m| m.key == "events")?;
        return Some((events.ty?, events.t));
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

/// A type alias, an interface or an enum, and the text it is written in.
#[derive(Clone, Copy)]
enum Named<'a> {
    Alias(&'a TSTypeAliasDeclaration<'a>),
    Interface(&'a TSInterfaceDeclaration<'a>),
    Enum(&'a TSEnumDeclaration<'a>),
}

/// One property of an object type: its key, where it is written (in text
/// `t`), and its type (`None` when written without one, which TypeScript
/// reads as `any`).
struct Member<'a> {
    key: &'a str,
    span: oxc_span::Span,
    t: TextId,
    ty: Option<&'a TSType<'a>>,
}

/// What a module exports under a name, as far as types go.
#[derive(Clone, Copy)]
enum Export<'a> {
    /// A name of its own (declared, or imported and passed on).
    Local(&'a str),
    /// `export { a as b } from './m'`: the module and its name there.
    From(&'a str, &'a str),
}

/// The names of types one module declares, imports and exports.
#[derive(Default)]
struct TypeScope<'a> {
    declared: HashMap<&'a str, Named<'a>>,
    /// Local name → (module, its name there; `None` for `* as local`).
    imports: HashMap<&'a str, (&'a str, Option<&'a str>)>,
    exports: HashMap<&'a str, Export<'a>>,
    /// `export * from './m'`.
    stars: Vec<&'a str>,
}

impl<'a> TypeScope<'a> {
    fn of(program: &'a Program<'a>) -> TypeScope<'a> {
        let mut scope = TypeScope::default();
        let declare = |d: &'a Declaration<'a>, scope: &mut TypeScope<'a>, export: bool| {
            let (name, named) = match d {
                Declaration::TSTypeAliasDeclaration(a) => (a.id.name.as_str(), Named::Alias(a)),
                Declaration::TSInterfaceDeclaration(i) => (i.id.name.as_str(), Named::Interface(i)),
                Declaration::TSEnumDeclaration(e) => (e.id.name.as_str(), Named::Enum(e)),
                _ => return,
            };
            scope.declared.insert(name, named);
            if export {
                scope.exports.insert(name, Export::Local(name));
            }
        };
        for statement in &program.body {
            match statement {
                Statement::ExportDeclaration(export) => {
                    declare(&export.declaration, &mut scope, true)
                }
                Statement::ExportNamedDeclaration(export) => {
                    for s in &export.specifiers {
                        if let (Some(local), Some(exported)) =
                            (export_name(&s.local), export_name(&s.exported))
                        {
                            scope.exports.insert(exported, Export::Local(local));
                        }
                    }
                }
                Statement::ExportFromDeclaration(export) => {
                    for s in &export.specifiers {
                        if let (Some(local), Some(exported)) =
                            (export_name(&s.local), export_name(&s.exported))
                        {
                            scope.exports.insert(
                                exported,
                                Export::From(export.source.value.as_str(), local),
                            );
                        }
                    }
                }
                Statement::ExportAllDeclaration(export) => match &export.exported {
                    // `export * as ns from './m'` names a namespace, no type.
                    Some(_) => {}
                    None => scope.stars.push(export.source.value.as_str()),
                },
                Statement::ImportDeclaration(import) => {
                    let source = import.source.value.as_str();
                    for s in import.specifiers.iter().flatten() {
                        match s {
                            ImportDeclarationSpecifier::ImportSpecifier(s) => {
                                if let Some(name) = export_name(&s.imported) {
                                    scope
                                        .imports
                                        .insert(s.local.name.as_str(), (source, Some(name)));
                                }
                            }
                            ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                                scope.imports.insert(s.local.name.as_str(), (source, None));
                            }
                            ImportDeclarationSpecifier::ImportDefaultSpecifier(_) => {}
                        }
                    }
                }
                other => {
                    if let Some(d) = other.as_declaration() {
                        declare(d, &mut scope, false);
                    }
                }
            }
        }
        scope
    }
}

fn export_name<'a>(name: &ModuleExportName<'a>) -> Option<&'a str> {
    match name {
        ModuleExportName::IdentifierName(n) => Some(n.name.as_str()),
        ModuleExportName::IdentifierReference(n) => Some(n.name.as_str()),
        ModuleExportName::StringLiteral(s) => Some(s.value.as_str()),
    }
}

/// The named types of the modules types are read in: those written in
/// the machine's module, and those its imports name, followed through
/// re-exports and `export *` (by the reader's one resolver of module
/// names: relative, tsconfig `paths`/`baseUrl`, workspace packages) to
/// `MAX_TYPE_DEPTH`.
struct Types<'r, 'a> {
    reader: &'r mut Reader<'a>,
    scopes: HashMap<TextId, TypeScope<'a>>,
}

impl<'r, 'a> Types<'r, 'a> {
    fn new(reader: &'r mut Reader<'a>) -> Types<'r, 'a> {
        Types {
            reader,
            scopes: HashMap::new(),
        }
    }

    /// The type names of text `t` (of the file a function body is in).
    fn scope(&mut self, t: TextId) -> (TextId, &TypeScope<'a>) {
        let t = self.reader.base(t);
        let program = self.reader.texts[t].program;
        let scope = self.scopes.entry(t).or_insert_with(|| match program {
            Some(program) => TypeScope::of(program),
            None => TypeScope::default(),
        });
        (t, scope)
    }

    fn name(&self, text: &str, span: oxc_span::Span, t: TextId) -> Name {
        Name {
            text: text.to_string(),
            span: self.reader.span(t, span),
        }
    }

    /// The alias, interface or enum a name refers to in text `t`, if it
    /// takes no type arguments, and the text it is written in: declared
    /// there, or imported (`import type { E } from './events'`, `import {
    /// type E }`, `Ns.E` of `import type * as Ns`).
    fn lookup(
        &mut self,
        name: &TSTypeName<'a>,
        arguments: bool,
        t: TextId,
        depth: u32,
    ) -> Option<(Named<'a>, TextId)> {
        let (named, at) = match name {
            TSTypeName::IdentifierReference(id) => self.named(t, id.name.as_str(), depth)?,
            TSTypeName::QualifiedName(q) => {
                let TSTypeName::IdentifierReference(ns) = &q.left else {
                    return None;
                };
                let (t, scope) = self.scope(t);
                let (source, None) = *scope.imports.get(ns.name.as_str())? else {
                    return None;
                };
                let module = self.reader.module(t, source)?;
                self.exported(module, q.right.name.as_str(), depth + 1)?
            }
            TSTypeName::ThisExpression(_) => return None,
        };
        let generic = match named {
            Named::Alias(a) => a.type_parameters.is_some(),
            Named::Interface(i) => i.type_parameters.is_some(),
            Named::Enum(_) => false,
        };
        (!generic && !arguments).then_some((named, at))
    }

    /// What `name` names in text `t`: its own declaration, or an import.
    fn named(&mut self, t: TextId, name: &str, depth: u32) -> Option<(Named<'a>, TextId)> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        let (t, scope) = self.scope(t);
        if let Some(&named) = scope.declared.get(name) {
            return Some((named, t));
        }
        let (source, Some(imported)) = *scope.imports.get(name)? else {
            return None;
        };
        let module = self.reader.module(t, source)?;
        self.exported(module, imported, depth + 1)
    }

    /// What module `m` exports as the type `name`.
    fn exported(&mut self, m: TextId, name: &str, depth: u32) -> Option<(Named<'a>, TextId)> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        let (m, scope) = self.scope(m);
        let export = scope.exports.get(name).copied();
        let stars = scope.stars.clone();
        match export {
            Some(Export::Local(local)) => return self.named(m, local, depth + 1),
            Some(Export::From(source, there)) => {
                let module = self.reader.module(m, source)?;
                return self.exported(module, there, depth + 1);
            }
            None => {}
        }
        stars.into_iter().find_map(|source| {
            let module = self.reader.module(m, source)?;
            self.exported(module, name, depth + 1)
        })
    }

    /// The events of a union of event object types, each read whole.
    fn events(&mut self, ty: &'a TSType<'a>, t: TextId) -> Vec<TypedEvent> {
        let mut members = Vec::new();
        self.union_members(ty, t, 0, &mut members);
        members
            .into_iter()
            .flat_map(|(m, t)| self.event(m, t))
            .collect()
    }

    /// The members of a union, unions and aliases of unions flattened,
    /// each with the text it is written in.
    fn union_members(
        &mut self,
        ty: &'a TSType<'a>,
        t: TextId,
        depth: u32,
        out: &mut Vec<(&'a TSType<'a>, TextId)>,
    ) {
        if depth > MAX_TYPE_DEPTH {
            return;
        }
        match ty {
            TSType::TSUnionType(u) => {
                for member in &u.types {
                    self.union_members(member, t, depth + 1, out);
                }
            }
            TSType::TSParenthesizedType(p) => {
                self.union_members(&p.type_annotation, t, depth + 1, out)
            }
            TSType::TSTypeReference(r) => {
                match self.lookup(&r.type_name, r.type_arguments.is_some(), t, depth) {
                    Some((Named::Alias(a), at)) => {
                        self.union_members(&a.type_annotation, at, depth + 1, out)
                    }
                    _ => out.push((ty, t)),
                }
            }
            _ => out.push((ty, t)),
        }
    }

    /// The events one object type of the union states: one per name its
    /// `type` may have (`type: 'A' | 'B'` states two), with the same fields.
    fn event(&mut self, ty: &'a TSType<'a>, t: TextId) -> Vec<TypedEvent> {
        let Some(members) = self.shape(ty, t, 0) else {
            return Vec::new();
        };
        let Some((names, at)) = members
            .iter()
            .find(|m| m.key == "type")
            .and_then(|m| Some((string_literals(m.ty?)?, m.t)))
        else {
            return Vec::new();
        };
        let fields: Vec<(Name, Name)> = members
            .iter()
            .filter(|m| m.key != "type")
            .map(|m| {
                let word = match m.ty {
                    Some(ty) => self.payload_type(ty, m.t, 0),
                    None => "any",
                };
                (self.name(m.key, m.span, m.t), self.name(word, m.span, m.t))
            })
            .collect();
        names
            .into_iter()
            .map(|(text, span)| TypedEvent {
                name: self.name(text, span, at),
                fields: fields.clone(),
            })
            .collect()
    }

    /// The properties of an object type, read whole: a type literal, an
    /// intersection of such, or an alias or interface, here or imported
    /// (with what it extends). `None` where some part cannot be read: an
    /// index or method signature, a computed key, a type of a module that
    /// cannot be followed, a generic.
    fn shape(&mut self, ty: &'a TSType<'a>, t: TextId, depth: u32) -> Option<Vec<Member<'a>>> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        match ty {
            TSType::TSTypeLiteral(l) => signatures(&l.members, t),
            TSType::TSParenthesizedType(p) => self.shape(&p.type_annotation, t, depth + 1),
            TSType::TSIntersectionType(i) => {
                let mut out = Vec::new();
                for part in &i.types {
                    merge(&mut out, self.shape(part, t, depth + 1)?);
                }
                Some(out)
            }
            TSType::TSTypeReference(r) => {
                let (named, at) =
                    self.lookup(&r.type_name, r.type_arguments.is_some(), t, depth)?;
                self.named_shape(named, at, depth)
            }
            _ => None,
        }
    }

    /// The properties of an alias or interface written in text `t`; an
    /// interface's own after those of what it extends.
    fn named_shape(&mut self, named: Named<'a>, t: TextId, depth: u32) -> Option<Vec<Member<'a>>> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        match named {
            Named::Alias(a) => self.shape(&a.type_annotation, t, depth + 1),
            Named::Interface(i) => {
                let mut out = Vec::new();
                for heritage in &i.extends {
                    let (parent, at) = self.lookup(
                        &heritage.type_name,
                        heritage.type_arguments.is_some(),
                        t,
                        depth + 1,
                    )?;
                    merge(&mut out, self.named_shape(parent, at, depth + 1)?);
                }
                merge(&mut out, signatures(&i.body.body, t)?);
                Some(out)
            }
            Named::Enum(_) => None,
        }
    }

    /// The machine format's payload type of a field's TypeScript type;
    /// `null` and `undefined` in a union are dropped (an optional field is
    /// typed by what it holds when present), and a union of several types
    /// is `any`.
    fn payload_type(&mut self, ty: &'a TSType<'a>, t: TextId, depth: u32) -> &'static str {
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
                    self.payload_type(&o.type_annotation, t, depth + 1)
                }
                _ => "any",
            },
            TSType::TSTypeLiteral(_) | TSType::TSMappedType(_) => "map",
            TSType::TSParenthesizedType(p) => self.payload_type(&p.type_annotation, t, depth + 1),
            TSType::TSUnionType(u) => {
                let mut words = Vec::new();
                for member in &u.types {
                    if !matches!(
                        member,
                        TSType::TSNullKeyword(_) | TSType::TSUndefinedKeyword(_)
                    ) {
                        words.push(self.payload_type(member, t, depth + 1));
                    }
                }
                match words.split_first() {
                    Some((first, rest)) if rest.iter().all(|w| w == first) => first,
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
                match self.lookup(&r.type_name, r.type_arguments.is_some(), t, depth) {
                    Some((Named::Alias(a), at)) => {
                        self.payload_type(&a.type_annotation, at, depth + 1)
                    }
                    Some((Named::Interface(_), _)) => "map",
                    Some((Named::Enum(e), _)) => enum_type(e),
                    None => "any",
                }
            }
            _ => "any",
        }
    }
}

/// The payload type of an enum's values: `string` when every member is
/// a string, `number` when every one is a number or unset (counted on
/// from the one before), else `any`.
fn enum_type(e: &TSEnumDeclaration<'_>) -> &'static str {
    let strings = e.body.members.iter().all(|m| {
        matches!(
            m.initializer,
            Some(Expression::StringLiteral(_) | Expression::TemplateLiteral(_))
        )
    });
    let numbers = e.body.members.iter().all(|m| {
        matches!(
            m.initializer,
            None | Some(Expression::NumericLiteral(_) | Expression::UnaryExpression(_))
        )
    });
    match (strings, numbers) {
        (true, false) => "string",
        (false, true) => "number",
        _ => "any",
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

/// The property signatures of an object type written in text `t`; `None`
/// when it has another kind of member or a key that is not written plainly.
fn signatures<'a>(members: &'a [TSSignature<'a>], t: TextId) -> Option<Vec<Member<'a>>> {
    members
        .iter()
        .map(|m| match m {
            TSSignature::TSPropertySignature(p) if !p.computed => Some(Member {
                key: static_key(&p.key)?,
                span: oxc_span::GetSpan::span(&p.key),
                t,
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
        // A union imported from a module that cannot be read: nothing is
        // known of its events.
        let imported = with_types(
            "import type { OrderEvent } from './events';",
            "createMachine",
            "types: {} as { events: OrderEvent },",
        );
        assert!(doc(&imported).events.is_empty());
    }

    /// A repository in a fresh directory: its files, by path. Dropped, it
    /// is removed.
    struct Repo(std::path::PathBuf);

    impl Repo {
        fn new(name: &str, files: &[(&str, &str)]) -> Repo {
            let root =
                std::env::temp_dir().join(format!("idemchart-types-{name}-{}", std::process::id()));
            for (path, text) in files {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
                std::fs::write(path, text).expect("write");
            }
            Repo(root)
        }

        /// The events a machine file of the repository declares.
        fn events(&self, file: &str) -> Vec<String> {
            let path = self.0.join(file);
            let text = std::fs::read_to_string(&path).expect("machine file");
            let mut read = extract(
                SourceFile::new(path.display().to_string(), text),
                &Settings::default(),
            );
            assert!(read.errors.is_empty(), "{:?}", read.errors);
            names_and_fields(&read.machines.remove(0).2)
        }
    }

    impl Drop for Repo {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    #[test]
    fn types_imported_from_other_modules_are_followed() {
        let machine = |head: &str, call: &str, types: &str| with_types(head, call, types);
        let repo = Repo::new(
            "imported",
            &[
                (
                    "tsconfig.json",
                    r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@app/*": ["packages/*/src"] } } }"#,
                ),
                // A package of shared types, re-exported from its index.
                (
                    "packages/types/src/index.ts",
                    "export * from './events';\n\
                     export type { Machine as MachineTypes } from './machine';\n",
                ),
                (
                    "packages/types/src/base.ts",
                    "export interface Base { requestId: string }\n\
                     export enum Currency { Eur = 'EUR', Usd = 'USD' }\n",
                ),
                (
                    "packages/types/src/events.ts",
                    "import type { Base, Currency } from './base';\n\
                     interface Pay extends Base { type: 'PAY'; amount: number; currency: Currency }\n\
                     type Cancel = Base & { type: 'CANCEL'; reason: string };\n\
                     export type Events = Pay | Cancel;\n\
                     export { Pay as PayEvent };\n",
                ),
                (
                    "packages/types/src/machine.ts",
                    "import type { Events } from './events';\n\
                     export interface Machine { context: {}; events: Events }\n",
                ),
                // A module of the app's own, and a declaration file.
                (
                    "src/events.ts",
                    "export type OrderEvent = { type: 'PAY'; paymentId: string } | { type: 'CANCEL' };\n",
                ),
                (
                    "src/legacy.d.ts",
                    "export type LegacyEvent = { type: 'PAY'; cents: number };\n",
                ),
                (
                    "src/v5.ts",
                    &machine(
                        "import type { OrderEvent } from './events';",
                        "createMachine",
                        "types: {} as { events: OrderEvent },",
                    ),
                ),
                (
                    "src/alias.ts",
                    &machine(
                        "import { type Events } from '@app/types';",
                        "setup({ types: { events: {} as Events } }).createMachine",
                        "",
                    ),
                ),
                (
                    "src/whole.ts",
                    &machine(
                        "import type { MachineTypes } from '@app/types';",
                        "setup({ types: {} as MachineTypes }).createMachine",
                        "",
                    ),
                ),
                (
                    "src/generic.ts",
                    &machine(
                        "import type * as types from '@app/types';",
                        "createMachine<{}, types.PayEvent | types.Events>",
                        "",
                    ),
                ),
                (
                    "src/old.ts",
                    &machine(
                        "import type { LegacyEvent } from './legacy';",
                        "createMachine",
                        "schema: { events: {} as LegacyEvent },",
                    ),
                ),
            ],
        );
        assert_eq!(
            repo.events("src/v5.ts"),
            ["PAY(paymentId: string)", "CANCEL()"]
        );
        let shared = [
            "PAY(requestId: string, amount: number, currency: string)",
            "CANCEL(requestId: string, reason: string)",
        ];
        assert_eq!(repo.events("src/alias.ts"), shared);
        assert_eq!(repo.events("src/whole.ts"), shared);
        assert_eq!(repo.events("src/generic.ts"), shared);
        assert_eq!(repo.events("src/old.ts"), ["PAY(cents: number)"]);
    }

    #[test]
    fn imports_that_go_round_in_a_cycle_end() {
        let repo = Repo::new(
            "cycle",
            &[
                (
                    "src/a.ts",
                    "export * from './b';\nimport type { B } from './b';\nexport type A = B;\n",
                ),
                (
                    "src/b.ts",
                    "export * from './a';\nimport type { A } from './a';\nexport type B = A;\n",
                ),
                (
                    "src/m.ts",
                    &with_types(
                        "import type { A, Missing } from './a';",
                        "createMachine",
                        "types: {} as { events: A | Missing | { type: 'PAY' } },",
                    ),
                ),
            ],
        );
        assert_eq!(repo.events("src/m.ts"), ["PAY()"]);
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
        assert_eq!(
            machine(&declared).fact_source,
            FactSource::XstateDeclarations
        );
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
            FactSource::XstateDeclarations
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
