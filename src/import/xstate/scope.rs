//! The files a machine is read from: parsing, what names mean, and where the
//! machines are.
//!
//! Names are followed the way a reader of the file would follow them: a
//! top-level `const` (or function declaration) of the same file, and, from
//! the file being linted, a `const` that a relative `import` brings in from
//! a sibling module (its own imports are not followed further). Everything
//! else stays unresolved, which the config reader turns into a note.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_span::{GetSpan, SourceType};

use super::config::MachineCall;
use super::sources::{Mapping, Sources};
use super::{LoadedMachine, Settings, SourceKind, Version};
use crate::diagnostic::{Diagnostic, LoadError};
use crate::span::{SourceFile, Span};

/// Which parsed text a node belongs to.
pub(super) type TextId = usize;

/// An expression and the text it was written in.
#[derive(Clone, Copy)]
pub(super) struct Node<'a> {
    pub e: &'a Expression<'a>,
    pub t: TextId,
}

/// A function: an arrow, a function expression or a declaration.
#[derive(Clone, Copy)]
pub(super) enum FnRef<'a> {
    Arrow(&'a ArrowFunctionExpression<'a>),
    Func(&'a Function<'a>),
}

impl<'a> FnRef<'a> {
    pub fn params(self) -> &'a FormalParameters<'a> {
        match self {
            FnRef::Arrow(f) => &f.params,
            FnRef::Func(f) => &f.params,
        }
    }

    pub fn span(self) -> oxc_span::Span {
        match self {
            FnRef::Arrow(f) => f.span,
            FnRef::Func(f) => f.span,
        }
    }

    /// The statements of a block body, or the expression of an arrow's.
    pub fn body(self) -> Result<&'a [Statement<'a>], &'a Expression<'a>> {
        match self {
            FnRef::Arrow(f) => match &f.body {
                ArrowFunctionBody::FunctionBody(b) => Ok(&b.statements),
                other => match other.as_expression() {
                    Some(e) => Err(e),
                    None => Ok(&[]),
                },
            },
            FnRef::Func(f) => Ok(f.body.as_ref().map_or(&[][..], |b| &b.statements)),
        }
    }
}

/// How a name was imported.
#[derive(Clone, Copy)]
pub(super) enum Imported<'a> {
    Named(&'a str),
    Default,
    Namespace,
}

/// One parsed text: a file, or the code of a JSON `@code` string.
pub(super) struct Text<'a> {
    pub map: Mapping,
    /// For files: the path, to find the modules it imports.
    path: Option<PathBuf>,
    consts: HashMap<&'a str, &'a Expression<'a>>,
    functions: HashMap<&'a str, &'a Function<'a>>,
    enums: HashMap<&'a str, &'a TSEnumDeclaration<'a>>,
    imports: HashMap<&'a str, (&'a str, Imported<'a>)>,
    /// Exported names → the local const (or the default export).
    exports: HashMap<&'a str, &'a Expression<'a>>,
    /// Exported names of local functions and enums → their local names.
    export_locals: HashMap<&'a str, &'a str>,
    /// `export { x as y } from './m'` and `export * as y from './m'`: the
    /// exported name → the module and what of it.
    reexports: HashMap<&'a str, (&'a str, Imported<'a>)>,
    /// `export * from './m'`.
    star_exports: Vec<&'a str>,
    /// For a function's body being evaluated: the text it is written in,
    /// whose names it sees beneath its own.
    pub parent: Option<TextId>,
    /// Parameters and local consts of that body, each bound to a node of
    /// whichever text wrote its value.
    pub bound: HashMap<&'a str, Node<'a>>,
    /// `// idemchart-allow LINT: reason` comments, by the offset of the token
    /// they stand above: (lint, reason, span of the comment).
    pub allows: HashMap<u32, Vec<(String, String, Span)>>,
    /// Whether its relative imports are followed (the linted file only).
    follows_imports: bool,
    pub program: Option<&'a Program<'a>>,
    /// The root expression of a JSON file or a `@code` string.
    pub root: Option<&'a Expression<'a>>,
}

impl<'a> Text<'a> {
    /// A text with nothing read from it.
    fn empty(map: Mapping) -> Text<'a> {
        Text {
            map,
            path: None,
            consts: HashMap::new(),
            functions: HashMap::new(),
            enums: HashMap::new(),
            imports: HashMap::new(),
            exports: HashMap::new(),
            export_locals: HashMap::new(),
            reexports: HashMap::new(),
            star_exports: Vec::new(),
            parent: None,
            bound: HashMap::new(),
            allows: HashMap::new(),
            follows_imports: false,
            program: None,
            root: None,
        }
    }

    /// The scope of a function body written in text `parent`, with
    /// nothing bound yet.
    pub fn scope(parent: TextId, map: Mapping) -> Text<'a> {
        Text {
            parent: Some(parent),
            ..Text::empty(map)
        }
    }

    /// A text of one expression (a JSON file, a `@code` string), without
    /// bindings of its own.
    fn expression(map: Mapping, root: &'a Expression<'a>) -> Text<'a> {
        Text {
            root: Some(root),
            ..Text::empty(map)
        }
    }
}

/// The error of a file that nests deeper than `MAX_SCRIPT_DEPTH`, at the
/// token past the limit (`at`, in the file's own offsets).
fn too_deep(map: &Mapping, at: usize) -> Diagnostic {
    LoadError::Syntax {
        message: format!("the file nests more than {MAX_SCRIPT_DEPTH} levels deep"),
    }
    .at(map.span(oxc_span::Span::new(at as u32, at as u32 + 1)), [])
}

/// How deep names, spreads and nested configs are followed before the
/// reader gives up on them: far beyond any honest machine, and short of a
/// stack overflow on a hostile one.
pub(super) const MAX_DEPTH: u32 = 64;

pub(super) struct Reader<'a> {
    pub alloc: &'a Allocator,
    pub sources: Sources,
    pub texts: Vec<Text<'a>>,
    modules: HashMap<PathBuf, Option<TextId>>,
    /// Problems of the file itself.
    pub errors: Vec<Diagnostic>,
    /// Machine calls found, in document order.
    calls: Vec<MachineCall<'a>>,
    is_machine_file: bool,
    /// The ids of actors the file spawns (`spawn(logic, 'id')`,
    /// `spawnChild(logic, { id })`), whose completions a machine may handle.
    pub spawned: HashSet<&'a str>,
    /// The resolver of the file names that imports name.
    pub(super) module_names: super::modules::Modules,
    /// Calls of XState's `createMachine` whose config is made at run time:
    /// the variable assigned, the callee's place and the config's.
    pub(super) unreadable: Vec<(Option<&'a str>, Span, Span)>,
    /// How many more function calls the partial evaluator may make for
    /// this file: a bound on helpers that call themselves over and over.
    pub(super) evaluations: u32,
}

impl<'a> Reader<'a> {
    /// A reader of `file` that resolves module names with `module_names`, a
    /// resolver that may have read the repository's tsconfigs and
    /// workspaces for other files of the run already.
    pub fn with_modules(
        alloc: &'a Allocator,
        file: SourceFile,
        kind: SourceKind,
        module_names: super::modules::Modules,
    ) -> Reader<'a> {
        let text: &'a str = alloc.alloc_str(&file.text);
        let path = PathBuf::from(&file.path);
        let mut reader = Reader {
            alloc,
            sources: Sources::new(file),
            texts: Vec::new(),
            modules: HashMap::new(),
            errors: Vec::new(),
            calls: Vec::new(),
            is_machine_file: false,
            spawned: HashSet::new(),
            module_names,
            unreadable: Vec::new(),
            evaluations: super::eval::MAX_EVALUATIONS,
        };
        match kind {
            SourceKind::Script => {
                let (id, errors) = reader.parse_file(text, &path, 0, true);
                reader.errors = errors;
                if reader.errors.is_empty() {
                    reader.find_machines(id);
                }
                reader.is_machine_file = !reader.calls.is_empty()
                    || !reader.unreadable.is_empty()
                    || !reader.errors.is_empty();
            }
            SourceKind::Json => reader.read_json(text),
        }
        reader
    }

    /// A reader of one ECMAScript expression (an SCXML `cond` or `expr`),
    /// with its node; or the parser's message and the offset it names.
    pub fn expression(
        alloc: &'a Allocator,
        text: &str,
    ) -> Result<(Reader<'a>, Node<'a>), (String, u32)> {
        // The translation goes no deeper than a CEL expression may nest.
        let depth = crate::expr::MAX_DEPTH;
        if let Err(at) = script_depth(text, depth) {
            return Err((
                format!("the expression nests more than {depth} levels deep"),
                at as u32,
            ));
        }
        let code: &'a str = alloc.alloc_str(text);
        let parsed = oxc_parser::Parser::new(alloc, code, SourceType::mjs())
            .parse_expression()
            .map_err(|diagnostics| {
                let first = diagnostics.first();
                let message = first.map_or_else(
                    || "it does not parse".to_string(),
                    |d| d.message.to_string(),
                );
                let at = first
                    .and_then(|d| d.labels.first().map(|l| l.offset()))
                    .unwrap_or(0);
                (message, at)
            })?;
        let expr: &'a Expression<'a> = alloc.alloc(parsed);
        let mut reader = Reader {
            alloc,
            sources: Sources::new(SourceFile::new(String::new(), text)),
            texts: Vec::new(),
            modules: HashMap::new(),
            errors: Vec::new(),
            calls: Vec::new(),
            is_machine_file: false,
            spawned: HashSet::new(),
            module_names: Default::default(),
            unreadable: Vec::new(),
            evaluations: super::eval::MAX_EVALUATIONS,
        };
        reader.texts.push(Text::expression(Mapping::Base(0), expr));
        Ok((reader, Node { e: expr, t: 0 }))
    }

    /// The files, the file's own problems, and whether it holds machines.
    /// What the reader read, and its module resolver back for the next
    /// file.
    pub fn finish_with_modules(
        self,
    ) -> ((Sources, Vec<Diagnostic>, bool), super::modules::Modules) {
        (
            (self.sources, self.errors, self.is_machine_file),
            self.module_names,
        )
    }

    /// The machines, lowered; a machine whose config is made at run time
    /// is one that does not load, with a note that says why.
    pub fn machines(&mut self, settings: &Settings) -> Vec<LoadedMachine> {
        let calls = std::mem::take(&mut self.calls);
        let mut machines: Vec<LoadedMachine> = calls
            .iter()
            .map(|call| self.load_machine(call, settings))
            .collect();
        for (hint, callee, config) in std::mem::take(&mut self.unreadable) {
            let name = match hint {
                Some(hint) => hint.to_string(),
                None => {
                    let (line, column) = self.line_col(callee);
                    let path = Path::new(&self.sources.main().path);
                    let stem = path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or("machine");
                    format!("{}@{line}:{column}", stem.split('.').next().unwrap_or(stem))
                }
            };
            let note = super::note(
                "this machine's config is made at run time (it is no object literal, const or JSON module idemchart can follow), so the machine is not read".into(),
                config,
            );
            machines.push(LoadedMachine {
                name,
                version: None,
                machine: Err(vec![note]),
                notes: Vec::new(),
                anchors: None,
            });
        }
        machines
    }

    /// The machines' documents.
    pub fn documents(
        &mut self,
        settings: &Settings,
    ) -> Vec<(
        String,
        Version,
        crate::syntax::tree::MachineDoc,
        Vec<Diagnostic>,
    )> {
        let calls = std::mem::take(&mut self.calls);
        calls
            .iter()
            .map(|call| {
                let built = self.build_machine(call, settings, &Default::default());
                (built.name, built.version, built.doc, built.notes)
            })
            .collect()
    }

    /// Parses a script at `base`; its text id and its syntax errors.
    fn parse_file(
        &mut self,
        text: &'a str,
        path: &Path,
        base: u32,
        follows_imports: bool,
    ) -> (TextId, Vec<Diagnostic>) {
        let source_type = SourceType::from_path(path)
            .unwrap_or_default()
            .with_typescript(matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("ts" | "tsx" | "mts" | "cts")
            ));
        let map = Mapping::Base(base);
        if let Err(at) = script_depth(text, MAX_SCRIPT_DEPTH) {
            let error = too_deep(&map, at);
            self.texts.push(Text {
                path: Some(path.to_path_buf()),
                follows_imports,
                ..Text::empty(map)
            });
            return (self.texts.len() - 1, vec![error]);
        }
        let parsed = oxc_parser::Parser::new(self.alloc, text, source_type).parse();
        let errors: Vec<Diagnostic> = parsed
            .diagnostics
            .iter()
            .map(|d| {
                let span = d
                    .labels
                    .first()
                    .map(|l| map.span(l.span()))
                    .unwrap_or(Span::new(base as usize, base as usize));
                let mut diagnostic = LoadError::Syntax {
                    message: d.message.to_string(),
                }
                .at(span, []);
                diagnostic.help = d.help.as_ref().map(|h| h.to_string());
                diagnostic
            })
            .collect();
        let program: &'a Program<'a> = self.alloc.alloc(parsed.program);
        let mut scope = Text {
            path: Some(path.to_path_buf()),
            follows_imports,
            program: Some(program),
            ..Text::empty(map)
        };
        collect_bindings(program, &mut scope);
        collect_allows(program, text, &mut scope);
        self.texts.push(scope);
        (self.texts.len() - 1, errors)
    }

    /// A JSON file: one machine config (or `machine.toJSON()` output); a
    /// file that is no machine config is no machine file.
    fn read_json(&mut self, text: &'a str) {
        if let Err(at) = script_depth(text, MAX_SCRIPT_DEPTH) {
            self.is_machine_file = true;
            self.errors.push(too_deep(&Mapping::Base(0), at));
            return;
        }
        let parsed =
            oxc_parser::Parser::new(self.alloc, text, SourceType::mjs()).parse_expression();
        let expr = match parsed {
            Ok(expr) => &*self.alloc.alloc(expr),
            Err(diagnostics) => {
                // Text that is not even JSON is no machine config, unless it
                // promised to be one.
                self.is_machine_file = text.contains("\"states\"");
                if self.is_machine_file {
                    let map = Mapping::Base(0);
                    self.errors.extend(diagnostics.iter().take(1).map(|d| {
                        let span = d
                            .labels
                            .first()
                            .map(|l| map.span(l.span()))
                            .unwrap_or_default();
                        LoadError::Syntax {
                            message: d.message.to_string(),
                        }
                        .at(span, [])
                    }));
                }
                return;
            }
        };
        self.texts.push(Text::expression(Mapping::Base(0), expr));
        let node = Node { e: expr, t: 0 };
        // A machine of our own format written as JSON: YAML reads JSON, so
        // the file only needs another name.
        if let Some(Expression::StringLiteral(_)) = property(expr, "machine") {
            let span = match expr.get_inner_expression() {
                Expression::ObjectExpression(o) => o
                    .properties
                    .iter()
                    .filter_map(|p| p.as_property())
                    .find(|p| p.key.is_specific_static_name("machine"))
                    .map_or(Span::default(), |p| {
                        Span::new(p.key.span().start as usize, p.key.span().end as usize)
                    }),
                _ => Span::default(),
            };
            self.is_machine_file = true;
            let mut error = LoadError::InvalidValue {
                message: "a .json file is read as an XState machine config, and this one is an idemchart machine file (`machine` is no XState key)".into(),
            }
            .at(span, []);
            error.help = Some("name it *.yaml: YAML reads JSON as it is".into());
            self.errors.push(error);
            return;
        }
        let is_config = match expr.get_inner_expression() {
            Expression::ObjectExpression(o) => o.properties.iter().any(|p| {
                p.as_property().is_some_and(|p| {
                    p.key.is_specific_static_name("states")
                        && matches!(p.value, Expression::ObjectExpression(_))
                })
            }),
            _ => false,
        };
        if is_config {
            self.is_machine_file = true;
            self.calls.push(MachineCall {
                config: node,
                setup: Vec::new(),
                options: Vec::new(),
                name_hint: None,
                span: Span::default(),
                marker_v4: None,
                marker_v5: None,
                json: true,
                event_type: None,
            });
        }
    }

    /// Parses the code of a JSON `@code` string: its text id.
    pub fn parse_code(&mut self, raw: &str, at: u32) -> Result<TextId, String> {
        let (code, table) = super::sources::unescape_json(raw, at)
            .ok_or_else(|| "the string has an escape JSON does not have".to_string())?;
        let text: &'a str = self.alloc.alloc_str(&code);
        let depth = crate::expr::MAX_DEPTH;
        if script_depth(text, depth).is_err() {
            return Err(format!("the code nests more than {depth} levels deep"));
        }
        let parsed = oxc_parser::Parser::new(self.alloc, text, SourceType::mjs())
            .parse_expression()
            .map_err(|d| {
                d.first()
                    .map(|d| d.message.to_string())
                    .unwrap_or_else(|| "it does not parse".into())
            })?;
        let expr = &*self.alloc.alloc(parsed);
        self.texts
            .push(Text::expression(Mapping::Table(table), expr));
        Ok(self.texts.len() - 1)
    }

    /// A span of text `t` in the offset space of the load.
    pub fn span(&self, t: TextId, span: oxc_span::Span) -> Span {
        self.texts[t].map.span(span)
    }

    /// The 1-based line and column of a span's start in its file, for the
    /// names of opaque parts (`inline_L12C7`).
    pub fn line_col(&self, span: Span) -> (usize, usize) {
        let split = self.sources.split(vec![super::note(String::new(), span)]);
        split
            .iter()
            .find(|(_, d)| !d.is_empty())
            .map(|(file, d)| file.line_col(d[0].span.start))
            .unwrap_or((1, 1))
    }

    /// `node` with names followed to what they are bound to, through
    /// parentheses and TypeScript's `as`, `satisfies` and `!`, members of
    /// modules, const objects and enums, `require`, and calls the partial
    /// evaluator can follow (`eval.rs`); `None` for a name that cannot be
    /// followed (its text and place).
    pub fn resolve(&mut self, node: Node<'a>) -> Result<Node<'a>, (String, Span)> {
        let mut node = node;
        for _ in 0..MAX_DEPTH {
            let e = node.e.get_inner_expression();
            node = Node { e, t: node.t };
            match e {
                Expression::Identifier(id) => {
                    if id.name == "undefined" {
                        return Ok(node);
                    }
                    match self.lookup(node.t, id.name.as_str()) {
                        Some(found) => node = found,
                        None => {
                            let name = id.name.as_str();
                            if self.function(node.t, name).is_some()
                                || self.enum_named(node.t, name).is_some()
                            {
                                return Ok(node);
                            }
                            return Err((id.name.to_string(), self.span(node.t, id.span)));
                        }
                    }
                }
                Expression::StaticMemberExpression(m) => {
                    match self.member(node, &m.object, m.property.name.as_str())? {
                        Some(found) => node = found,
                        None => return Ok(node),
                    }
                }
                Expression::ComputedMemberExpression(m) => {
                    // `Status['PAID']`, `steps[FIRST]`.
                    let key = self.key_text(Node {
                        e: &m.expression,
                        t: node.t,
                    });
                    let Some((key, _)) = key else {
                        return Ok(node);
                    };
                    let key: &'a str = self.alloc.alloc_str(&key);
                    match self.member(node, &m.object, key)? {
                        Some(found) => node = found,
                        None => return Ok(node),
                    }
                }
                Expression::CallExpression(call) => match self.evaluate_call(node, call) {
                    Some(found) => node = found,
                    None => return Ok(node),
                },
                _ => return Ok(node),
            }
        }
        Err((
            "a name bound too many times over".into(),
            self.span(node.t, node.e.span()),
        ))
    }

    /// `object.name` where `object` is a namespace import, a const object
    /// or an enum: the member's node, `None` where it cannot be told, an
    /// error for a module that does not export it.
    #[allow(clippy::type_complexity)]
    fn member(
        &mut self,
        node: Node<'a>,
        object: &'a Expression<'a>,
        name: &'a str,
    ) -> Result<Option<Node<'a>>, (String, Span)> {
        let object = Node {
            e: object,
            t: node.t,
        };
        if let Some((t, decl)) = self.enum_of(object) {
            return Ok(self.enum_member(t, decl, name));
        }
        let Ok(object) = self.resolve_namespace(object) else {
            return Ok(None);
        };
        match object {
            Ok(module) => match self.export(module, name, 0) {
                Some(found) => Ok(Some(found)),
                None => Err((name.to_string(), self.span(node.t, node.e.span()))),
            },
            Err(obj) => Ok(property(obj.e, name).map(|value| Node { e: value, t: obj.t })),
        }
    }

    /// The module a namespace import (or re-export) names, or the object
    /// a const names.
    #[allow(clippy::type_complexity)]
    fn resolve_namespace(&mut self, node: Node<'a>) -> Result<Result<TextId, Node<'a>>, ()> {
        let Expression::Identifier(id) = node.e.get_inner_expression() else {
            return match self.resolve(node) {
                Ok(obj) if matches!(obj.e, Expression::ObjectExpression(_)) => Ok(Err(obj)),
                _ => Err(()),
            };
        };
        let name = id.name.as_str();
        let base = self.base(node.t);
        if self.bound_in_scope(node.t, name).is_none()
            && let Some((source, imported)) = self.texts[base].imports.get(name).copied()
        {
            let module = self.module(base, source).ok_or(())?;
            match imported {
                Imported::Namespace => return Ok(Ok(module)),
                Imported::Named(n) => {
                    if let Some(namespace) = self.export_namespace(module, n, 0) {
                        return Ok(Ok(namespace));
                    }
                }
                Imported::Default => {}
            }
        }
        match self.resolve(node) {
            Ok(obj) if matches!(obj.e, Expression::ObjectExpression(_)) => Ok(Err(obj)),
            _ => Err(()),
        }
    }

    /// Whether text `t` is a JSON file (or module), whose functions are
    /// `{"@code": ...}` objects.
    pub fn is_json(&self, t: TextId) -> bool {
        let base = self.base(t);
        self.texts[base].program.is_none()
            && self.texts[base].root.is_some()
            && (base == 0
                || self.texts[base]
                    .path
                    .as_ref()
                    .is_some_and(|p| p.extension().is_some_and(|e| e == "json")))
    }

    /// Whether a callee (`createMachine`, `xstate.createMachine`) is
    /// imported from XState (`xstate`, `@xstate/*`).
    pub fn is_xstate_name(&self, t: TextId, callee: &Expression<'a>) -> bool {
        let name = match callee.get_inner_expression() {
            Expression::Identifier(id) => id.name.as_str(),
            Expression::StaticMemberExpression(m) => match m.object.get_inner_expression() {
                Expression::Identifier(id) => id.name.as_str(),
                _ => return false,
            },
            _ => return false,
        };
        self.texts[self.base(t)]
            .imports
            .get(name)
            .is_some_and(|(source, _)| *source == "xstate" || source.starts_with("@xstate/"))
    }

    /// The text a scope is written in: itself, or the file of a function
    /// body's scope.
    pub fn base(&self, mut t: TextId) -> TextId {
        while let Some(parent) = self.texts[t].parent {
            t = parent;
        }
        t
    }

    /// What a function body's scope binds `name` to, in `t` or the scopes
    /// around it.
    fn bound_in_scope(&self, mut t: TextId, name: &str) -> Option<Node<'a>> {
        loop {
            if let Some(found) = self.texts[t].bound.get(name) {
                return Some(*found);
            }
            t = self.texts[t].parent?;
        }
    }

    /// What `name` is bound to in text `t`.
    fn lookup(&mut self, t: TextId, name: &str) -> Option<Node<'a>> {
        if let Some(found) = self.bound_in_scope(t, name) {
            return Some(found);
        }
        let t = self.base(t);
        if let Some(e) = self.texts[t].consts.get(name) {
            return Some(Node { e, t });
        }
        let (source, imported) = self.texts[t].imports.get(name).copied()?;
        let module = self.module(t, source)?;
        let exported = match imported {
            Imported::Named(n) => n,
            Imported::Default => "default",
            Imported::Namespace => return None,
        };
        self.export(module, exported, 0)
    }

    /// What module `m` exports as `name`: its own binding, a re-export, or
    /// one of its `export *` modules', followed to any depth (the module
    /// table ends a cycle, `depth` a chain too long).
    fn export(&mut self, m: TextId, name: &str, depth: u32) -> Option<Node<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(e) = self.texts[m].exports.get(name).copied() {
            return Some(Node { e, t: m });
        }
        if let Some(local) = self.texts[m].export_locals.get(name).copied() {
            return Some(self.name_node(m, local));
        }
        if let Some((source, imported)) = self.texts[m].reexports.get(name).copied() {
            let target = self.module(m, source)?;
            return match imported {
                Imported::Named(n) => self.export(target, n, depth + 1),
                Imported::Default => self.export(target, "default", depth + 1),
                Imported::Namespace => None,
            };
        }
        if name == "default" {
            return None;
        }
        let stars = self.texts[m].star_exports.clone();
        for source in stars {
            if let Some(target) = self.module(m, source)
                && let Some(found) = self.export(target, name, depth + 1)
            {
                return Some(found);
            }
        }
        None
    }

    /// The module that module `m` exports as the namespace `name`
    /// (`export * as name from './x'`), through its `export *` modules.
    fn export_namespace(&mut self, m: TextId, name: &str, depth: u32) -> Option<TextId> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some((source, Imported::Namespace)) = self.texts[m].reexports.get(name).copied() {
            return self.module(m, source);
        }
        if let Some((source, Imported::Named(n))) = self.texts[m].reexports.get(name).copied() {
            let target = self.module(m, source)?;
            return self.export_namespace(target, n, depth + 1);
        }
        if self.texts[m].exports.contains_key(name)
            || self.texts[m].export_locals.contains_key(name)
        {
            return None;
        }
        let stars = self.texts[m].star_exports.clone();
        for source in stars {
            if let Some(target) = self.module(m, source)
                && let Some(found) = self.export_namespace(target, name, depth + 1)
            {
                return Some(found);
            }
        }
        None
    }

    /// A node that names `name` in text `t`: how a function or an enum of
    /// another module is passed on, to be found again by its name there.
    fn name_node(&self, t: TextId, name: &'a str) -> Node<'a> {
        let span = self.texts[t]
            .functions
            .get(name)
            .map(|f| f.span)
            .or_else(|| self.texts[t].enums.get(name).map(|e| e.id.span))
            .unwrap_or_default();
        let builder = oxc_ast::builder::AstBuilder::new(self.alloc);
        let e: &'a Expression<'a> = self
            .alloc
            .alloc(Expression::new_identifier(span, name, &builder));
        Node { e, t }
    }

    /// A function declaration `name` seen from text `t`.
    pub fn function(&self, t: TextId, name: &str) -> Option<&'a Function<'a>> {
        self.texts[self.base(t)].functions.get(name).copied()
    }

    /// An enum declaration `name` seen from text `t`.
    pub(super) fn enum_named(&self, t: TextId, name: &str) -> Option<&'a TSEnumDeclaration<'a>> {
        self.texts[self.base(t)].enums.get(name).copied()
    }

    /// The enum `node` names, here or imported, and the text it is in.
    pub(super) fn enum_of(
        &mut self,
        node: Node<'a>,
    ) -> Option<(TextId, &'a TSEnumDeclaration<'a>)> {
        let Expression::Identifier(id) = node.e.get_inner_expression() else {
            return None;
        };
        let name = id.name.as_str();
        if self.bound_in_scope(node.t, name).is_some() {
            return None;
        }
        if let Some(decl) = self.enum_named(node.t, name) {
            return Some((self.base(node.t), decl));
        }
        let found = self.lookup(node.t, name)?;
        match found.e {
            Expression::Identifier(other) if other.name != id.name || found.t != node.t => {
                self.enum_of(found)
            }
            _ => None,
        }
    }

    /// The module `source` imported from text `t`, parsed: one that
    /// `modules::Modules` names (relative, tsconfig-mapped, a workspace
    /// package), a script or a JSON file; `None` for a package, or a module that cannot
    /// be read or does not parse (its errors are those of a file of its
    /// own, linted on its own).
    pub(super) fn module(&mut self, t: TextId, source: &str) -> Option<TextId> {
        let t = self.base(t);
        if !self.texts[t].follows_imports {
            return None;
        }
        let dir = self.texts[t].path.as_ref()?.parent()?.to_path_buf();
        let path = self.module_names.resolve(&dir, source)?;
        if let Some(known) = self.modules.get(&path) {
            return *known;
        }
        self.modules.insert(path.clone(), None);
        let text = std::fs::read_to_string(&path).ok()?;
        let file = SourceFile::new(path.display().to_string(), text);
        let text: &'a str = self.alloc.alloc_str(&file.text);
        let base = self.sources.add(file);
        let id = if path.extension().is_some_and(|e| e == "json") {
            self.parse_json_module(text, &path, base)
        } else {
            let (id, errors) = self.parse_file(text, &path, base, true);
            errors.is_empty().then_some(id)
        };
        self.modules.insert(path, id);
        id
    }

    /// A JSON module: its value is its default export.
    fn parse_json_module(&mut self, text: &'a str, path: &Path, base: u32) -> Option<TextId> {
        script_depth(text, MAX_SCRIPT_DEPTH).ok()?;
        let parsed = oxc_parser::Parser::new(self.alloc, text, SourceType::mjs())
            .parse_expression()
            .ok()?;
        let root: &'a Expression<'a> = self.alloc.alloc(parsed);
        let mut module = Text::expression(Mapping::Base(base), root);
        module.path = Some(path.to_path_buf());
        module.exports.insert("default", root);
        self.texts.push(module);
        Some(self.texts.len() - 1)
    }

    /// Walks the linted file for machine calls.
    fn find_machines(&mut self, t: TextId) {
        let Some(program) = self.texts[t].program else {
            return;
        };
        let mut finder = Finder {
            reader: self,
            t,
            depth: 0,
        };
        for statement in &program.body {
            finder.statement(statement);
        }
    }
}

/// How many levels a file of script may nest: far beyond an honest machine
/// file (a state nested 100 deep is about 200 levels of braces), and within
/// what oxc's parser reads on a 2 MiB stack in a debug build (about 630
/// levels of object literals, the costliest construct; see
/// `docs/machine-format.md`).
pub(super) const MAX_SCRIPT_DEPTH: u32 = 500;

/// How deeply `text` (a script, a JSON file or one expression) nests as
/// oxc's parser recurses over it, which has no limit of its own: the
/// deepest level, or the offset of the token past `limit`. Brackets (`(`,
/// `[`, `{`) and template substitutions (`${`) each open a level; within
/// a level, the right-nested operators of one expression (`=` and the
/// compound assignments, `=>`, `**`, a conditional's `?`) and a run of
/// prefix operators (`!`, `~`, unary `-` and `+`, `typeof`, `void`,
/// `delete`, `new`, `await`) add theirs. Strings, comments, template text
/// and regular expression literals are skipped, so that a bracket inside
/// one never counts; `,` and `;` end an expression, and so does a line
/// break between two operands, as JavaScript's semicolon insertion has it.
pub(super) fn script_depth(text: &str, limit: u32) -> Result<u32, usize> {
    let bytes = text.as_bytes();
    // Per open level: whether it is a template substitution (whose `}`
    // resumes the template's text), and the operator chain outside it.
    let mut levels: Vec<(bool, u32)> = Vec::new();
    // The operator chain of the current level, and the levels open in all
    // (brackets and the chains around them).
    let (mut chain, mut depth, mut deepest) = (0u32, 0u32, 0u32);
    let mut prefix_run = 0u32;
    // Whether the last token ends an operand (after which `/` divides, `-`
    // is binary, and a line break may end the statement).
    let mut after_operand = false;
    let mut line_break = false;
    let mut i = 0;
    // Skips template text from `i` (just past a backtick or a substitution's
    // `}`) to the closing backtick, or opens the substitution it reaches.
    let template = |i: &mut usize, levels: &mut Vec<(bool, u32)>, chain: &mut u32| -> bool {
        while *i < bytes.len() {
            match bytes[*i] {
                b'\\' => *i += 2,
                b'`' => {
                    *i += 1;
                    return false;
                }
                b'$' if bytes.get(*i + 1) == Some(&b'{') => {
                    *i += 2;
                    levels.push((true, std::mem::take(chain)));
                    return true;
                }
                _ => *i += 1,
            }
        }
        false
    };
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        i += 1;
        if c == b'\n' {
            line_break = true;
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        let starts_operand = c.is_ascii_alphanumeric()
            || matches!(c, b'_' | b'$' | b'"' | b'\'' | b'`' | b'(' | b'[' | b'{')
            || c >= 0x80;
        if std::mem::take(&mut line_break) && after_operand && starts_operand {
            depth -= chain;
            chain = 0;
        }
        match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' | b'0'..=b'9' | 0x80.. => {
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || matches!(bytes[i], b'_' | b'$' | 0x80..))
                {
                    i += 1;
                }
                match &text.as_bytes()[start..i] {
                    b"typeof" | b"void" | b"delete" | b"new" | b"await" => {
                        prefix_run += 1;
                        after_operand = false;
                    }
                    b"return" | b"case" | b"do" | b"else" | b"in" | b"of" | b"instanceof"
                    | b"throw" | b"yield" | b"extends" => after_operand = false,
                    _ => {
                        prefix_run = 0;
                        after_operand = true;
                    }
                }
            }
            b'"' | b'\'' => {
                while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                prefix_run = 0;
                after_operand = true;
            }
            b'/' if bytes.get(i) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i) == Some(&b'*') => {
                i += 1;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    line_break |= bytes[i] == b'\n';
                    i += 1;
                }
                i += 2;
            }
            b'/' if after_operand => after_operand = false,
            b'/' => {
                // A regular expression literal, up to its unescaped `/`
                // outside a class, then its flags.
                let mut class = false;
                while i < bytes.len() && bytes[i] != b'\n' {
                    match bytes[i] {
                        b'\\' => i += 1,
                        b'[' => class = true,
                        b']' => class = false,
                        b'/' if !class => break,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                prefix_run = 0;
                after_operand = true;
            }
            b'`' => {
                if template(&mut i, &mut levels, &mut chain) {
                    depth += 1;
                    after_operand = false;
                } else {
                    after_operand = true;
                }
                prefix_run = 0;
            }
            b'(' | b'[' | b'{' => {
                levels.push((false, std::mem::take(&mut chain)));
                depth += 1;
                prefix_run = 0;
                after_operand = false;
            }
            b')' | b']' | b'}' => {
                let Some((substitution, outer)) = levels.pop() else {
                    continue;
                };
                depth -= chain + 1;
                chain = outer;
                after_operand = true;
                if substitution && template(&mut i, &mut levels, &mut chain) {
                    depth += 1;
                    after_operand = false;
                }
            }
            b';' | b',' => {
                depth -= chain;
                chain = 0;
                prefix_run = 0;
                after_operand = false;
            }
            // Comparisons, which do not nest.
            b'=' | b'!' | b'<' | b'>' if bytes.get(i) == Some(&b'=') => {
                while bytes.get(i) == Some(&b'=') {
                    i += 1;
                }
                after_operand = false;
            }
            b'!' | b'~' => {
                prefix_run += 1;
                after_operand = false;
            }
            b'-' | b'+' if !after_operand => prefix_run += 1,
            // Optional chaining, `??`, and TypeScript's optional marks
            // (`a?: T`, `(a?)`) are no conditionals.
            b'?' if matches!(bytes.get(i), Some(b'.' | b'?' | b':' | b')' | b',' | b'=')) => {
                i += 1;
                after_operand = false;
            }
            b'=' | b'?' => {
                if bytes.get(i) == Some(&b'>') {
                    i += 1;
                }
                chain += 1;
                depth += 1;
                after_operand = false;
            }
            b'*' if bytes.get(i) == Some(&b'*') => {
                i += 1;
                chain += 1;
                depth += 1;
                after_operand = false;
            }
            _ => after_operand = false,
        }
        if depth + prefix_run > limit {
            return Err(start);
        }
        deepest = deepest.max(depth + prefix_run);
    }
    Ok(deepest)
}

/// A property's value in an object literal, by its static name.
pub(super) fn property<'a>(object: &'a Expression<'a>, name: &str) -> Option<&'a Expression<'a>> {
    let Expression::ObjectExpression(o) = object.get_inner_expression() else {
        return None;
    };
    o.properties
        .iter()
        .rev()
        .filter_map(|p| p.as_property())
        .find(|p| !p.computed && p.key.is_specific_static_name(name))
        .map(|p| &p.value)
}

/// The top-level bindings of a program: consts, function declarations,
/// enums, imports and exports (re-exports too).
fn collect_bindings<'a>(program: &'a Program<'a>, scope: &mut Text<'a>) {
    let mut exported_locals: Vec<(&'a str, &'a str)> = Vec::new();
    let declaration = |d: &'a Declaration<'a>, scope: &mut Text<'a>, export: bool| match d {
        Declaration::VariableDeclaration(v) => add_consts(v, scope, export),
        Declaration::FunctionDeclaration(f) => {
            if let Some(id) = &f.id {
                scope.functions.insert(id.name.as_str(), f);
                if export {
                    scope
                        .export_locals
                        .insert(id.name.as_str(), id.name.as_str());
                }
            }
        }
        Declaration::TSEnumDeclaration(e) => {
            scope.enums.insert(e.id.name.as_str(), e);
            if export {
                scope
                    .export_locals
                    .insert(e.id.name.as_str(), e.id.name.as_str());
            }
        }
        _ => {}
    };
    for statement in &program.body {
        match statement {
            Statement::VariableDeclaration(v) => add_consts(v, scope, false),
            Statement::FunctionDeclaration(f) => {
                if let Some(id) = &f.id {
                    scope.functions.insert(id.name.as_str(), f);
                }
            }
            Statement::TSEnumDeclaration(e) => {
                scope.enums.insert(e.id.name.as_str(), e);
            }
            Statement::ExportDeclaration(export) => declaration(&export.declaration, scope, true),
            Statement::ExportNamedDeclaration(export) => {
                for s in &export.specifiers {
                    if let (Some(local), Some(exported)) =
                        (module_name(&s.local), module_name(&s.exported))
                    {
                        exported_locals.push((local, exported));
                    }
                }
            }
            Statement::ExportFromDeclaration(export) => {
                let source = export.source.value.as_str();
                for s in &export.specifiers {
                    if let (Some(local), Some(exported)) =
                        (module_name(&s.local), module_name(&s.exported))
                    {
                        let imported = if local == "default" {
                            Imported::Default
                        } else {
                            Imported::Named(local)
                        };
                        scope.reexports.insert(exported, (source, imported));
                    }
                }
            }
            Statement::ExportAllDeclaration(export) => {
                let source = export.source.value.as_str();
                match export.exported.as_ref().and_then(module_name) {
                    Some(name) => {
                        scope.reexports.insert(name, (source, Imported::Namespace));
                    }
                    None => scope.star_exports.push(source),
                }
            }
            Statement::ExportDefaultDeclaration(export) => {
                if let Some(e) = export.declaration.as_expression() {
                    scope.exports.insert("default", e);
                } else if let ExportDefaultDeclarationKind::FunctionDeclaration(f) =
                    &export.declaration
                    && let Some(id) = &f.id
                {
                    scope.functions.insert(id.name.as_str(), f);
                    scope.export_locals.insert("default", id.name.as_str());
                }
            }
            Statement::ImportDeclaration(import) => {
                let source = import.source.value.as_str();
                for s in import.specifiers.iter().flatten() {
                    let (local, imported) = match s {
                        ImportDeclarationSpecifier::ImportSpecifier(s) => {
                            let Some(name) = module_name(&s.imported) else {
                                continue;
                            };
                            (s.local.name.as_str(), Imported::Named(name))
                        }
                        ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                            (s.local.name.as_str(), Imported::Default)
                        }
                        ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                            (s.local.name.as_str(), Imported::Namespace)
                        }
                    };
                    scope.imports.insert(local, (source, imported));
                }
            }
            _ => {}
        }
    }
    for (local, exported) in exported_locals {
        if let Some(e) = scope.consts.get(local).copied() {
            scope.exports.insert(exported, e);
        } else if scope.functions.contains_key(local) || scope.enums.contains_key(local) {
            scope.export_locals.insert(exported, local);
        } else if let Some(import) = scope.imports.get(local).copied() {
            // `import { a } from './x'; export { a }`: a re-export.
            scope.reexports.insert(exported, import);
        }
    }
}

fn module_name<'a>(name: &ModuleExportName<'a>) -> Option<&'a str> {
    match name {
        ModuleExportName::IdentifierName(n) => Some(n.name.as_str()),
        ModuleExportName::IdentifierReference(n) => Some(n.name.as_str()),
        ModuleExportName::StringLiteral(s) => Some(s.value.as_str()),
    }
}

fn add_consts<'a>(v: &'a VariableDeclaration<'a>, scope: &mut Text<'a>, export: bool) {
    if v.kind != VariableDeclarationKind::Const {
        return;
    }
    for d in &v.declarations {
        if let (BindingPattern::BindingIdentifier(id), Some(init)) = (&d.id, &d.init) {
            scope.consts.insert(id.name.as_str(), init);
            if export {
                scope.exports.insert(id.name.as_str(), init);
            }
        }
    }
}

/// `// idemchart-allow LINT: reason` (or `/* ... */`), by the token it
/// stands above.
fn collect_allows<'a>(program: &'a Program<'a>, text: &'a str, scope: &mut Text<'a>) {
    for comment in &program.comments {
        let content = comment.content_span();
        let body = text
            .get(content.start as usize..content.end as usize)
            .unwrap_or_default()
            .trim();
        let Some(rest) = body.strip_prefix("idemchart-allow") else {
            continue;
        };
        let (lint, reason) = match rest.split_once(':') {
            Some((lint, reason)) => (lint.trim(), reason.trim()),
            None => (rest.trim(), ""),
        };
        scope.allows.entry(comment.attached_to).or_default().push((
            lint.to_string(),
            reason.to_string(),
            scope.map.span(comment.span),
        ));
    }
}

/// The one walk over a file's syntax tree that finds the machine calls.
struct Finder<'r, 'a> {
    reader: &'r mut Reader<'a>,
    t: TextId,
    depth: u32,
}

impl<'a> Finder<'_, 'a> {
    fn statement(&mut self, s: &'a Statement<'a>) {
        if self.depth > 200 {
            return;
        }
        self.depth += 1;
        match s {
            Statement::VariableDeclaration(v) => self.declaration(v),
            Statement::ExpressionStatement(e) => self.expression(&e.expression, None),
            Statement::ReturnStatement(r) => {
                if let Some(e) = &r.argument {
                    self.expression(e, None);
                }
            }
            Statement::BlockStatement(b) => self.statements(&b.body),
            Statement::IfStatement(i) => {
                self.expression(&i.test, None);
                self.statement(&i.consequent);
                if let Some(a) = &i.alternate {
                    self.statement(a);
                }
            }
            Statement::TryStatement(t) => {
                self.statements(&t.block.body);
                if let Some(h) = &t.handler {
                    self.statements(&h.body.body);
                }
                if let Some(f) = &t.finalizer {
                    self.statements(&f.body);
                }
            }
            Statement::ForStatement(f) => self.statement(&f.body),
            Statement::ForOfStatement(f) => self.statement(&f.body),
            Statement::ForInStatement(f) => self.statement(&f.body),
            Statement::WhileStatement(w) => self.statement(&w.body),
            Statement::DoWhileStatement(w) => self.statement(&w.body),
            Statement::LabeledStatement(l) => self.statement(&l.body),
            Statement::SwitchStatement(s) => {
                for case in &s.cases {
                    self.statements(&case.consequent);
                }
            }
            Statement::FunctionDeclaration(f) => self.function(f),
            Statement::ClassDeclaration(c) => self.class(c),
            Statement::ExportDeclaration(e) => match &e.declaration {
                Declaration::VariableDeclaration(v) => self.declaration(v),
                Declaration::FunctionDeclaration(f) => self.function(f),
                Declaration::ClassDeclaration(c) => self.class(c),
                _ => {}
            },
            Statement::ExportDefaultDeclaration(e) => match &e.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(f) => self.function(f),
                ExportDefaultDeclarationKind::ClassDeclaration(c) => self.class(c),
                other => {
                    if let Some(e) = other.as_expression() {
                        self.expression(e, None);
                    }
                }
            },
            _ => {}
        }
        self.depth -= 1;
    }

    fn statements(&mut self, list: &'a [Statement<'a>]) {
        for s in list {
            self.statement(s);
        }
    }

    fn declaration(&mut self, v: &'a VariableDeclaration<'a>) {
        for d in &v.declarations {
            let name = match &d.id {
                BindingPattern::BindingIdentifier(id) => Some(id.name.as_str()),
                _ => None,
            };
            if let Some(init) = &d.init {
                self.expression(init, name);
            }
        }
    }

    fn function(&mut self, f: &'a Function<'a>) {
        if let Some(body) = &f.body {
            self.statements(&body.statements);
        }
    }

    fn class(&mut self, c: &'a Class<'a>) {
        for element in &c.body.body {
            match element {
                ClassElement::MethodDefinition(m) => self.function(&m.value),
                ClassElement::PropertyDefinition(p) => {
                    if let Some(v) = &p.value {
                        let name = p.key.static_name();
                        self.expression(v, name.as_deref().map(|n| self.reader.alloc.alloc_str(n)));
                    }
                }
                _ => {}
            }
        }
    }

    fn arguments(&mut self, args: &'a [Argument<'a>]) {
        for a in args {
            match a {
                Argument::SpreadElement(s) => self.expression(&s.argument, None),
                other => {
                    if let Some(e) = other.as_expression() {
                        self.expression(e, None);
                    }
                }
            }
        }
    }

    /// Visits an expression; `name` is the variable it is assigned to,
    /// passed on through what only wraps a machine (parentheses, `as`, a
    /// call chained on it such as `.provide(...)`).
    fn expression(&mut self, e: &'a Expression<'a>, name: Option<&'a str>) {
        if self.depth > 200 {
            return;
        }
        self.depth += 1;
        match e {
            Expression::CallExpression(call) => {
                if let Some(id) = spawned_id(call) {
                    self.reader.spawned.insert(id);
                }
                if let Some(found) = super::config::machine_call(self.reader, call, self.t, name) {
                    self.reader.calls.push(found);
                    // Machines inside a machine's config (an inline child
                    // machine) are read as machines of their own.
                    self.arguments(&call.arguments);
                } else if let Some(inner) = provided_machine(call) {
                    if let Some(mut found) =
                        super::config::machine_call(self.reader, inner, self.t, name)
                    {
                        // `createMachine(...).provide({ ... })`: the
                        // implementations provided count as the machine's.
                        if let Some(options) =
                            call.arguments.first().and_then(|a| a.as_expression())
                        {
                            found.options.push(Node {
                                e: options,
                                t: self.t,
                            });
                        }
                        self.reader.calls.push(found);
                        self.arguments(&inner.arguments);
                    } else {
                        self.expression(&call.callee, name);
                    }
                    self.arguments(&call.arguments);
                } else {
                    self.expression(&call.callee, name);
                    self.arguments(&call.arguments);
                }
            }
            Expression::ParenthesizedExpression(p) => self.expression(&p.expression, name),
            Expression::TSAsExpression(x) => self.expression(&x.expression, name),
            Expression::TSSatisfiesExpression(x) => self.expression(&x.expression, name),
            Expression::TSNonNullExpression(x) => self.expression(&x.expression, name),
            Expression::StaticMemberExpression(m) => self.expression(&m.object, name),
            Expression::ComputedMemberExpression(m) => self.expression(&m.object, None),
            Expression::AwaitExpression(a) => self.expression(&a.argument, None),
            Expression::NewExpression(n) => self.arguments(&n.arguments),
            Expression::ArrowFunctionExpression(f) => match &f.body {
                ArrowFunctionBody::FunctionBody(b) => self.statements(&b.statements),
                other => {
                    if let Some(e) = other.as_expression() {
                        self.expression(e, None);
                    }
                }
            },
            Expression::FunctionExpression(f) => self.function(f),
            Expression::ClassExpression(c) => self.class(c),
            Expression::ObjectExpression(o) => {
                for p in &o.properties {
                    match p {
                        ObjectPropertyKind::ObjectProperty(p) => {
                            let key = p.key.static_name();
                            let key = key.as_deref().map(|n| self.reader.alloc.alloc_str(n));
                            self.expression(&p.value, key);
                        }
                        ObjectPropertyKind::SpreadProperty(s) => self.expression(&s.argument, None),
                    }
                }
            }
            Expression::ArrayExpression(a) => {
                for el in &a.elements {
                    match el {
                        ArrayExpressionElement::SpreadElement(s) => {
                            self.expression(&s.argument, None)
                        }
                        other => {
                            if let Some(e) = other.as_expression() {
                                self.expression(e, None);
                            }
                        }
                    }
                }
            }
            Expression::ConditionalExpression(c) => {
                self.expression(&c.test, None);
                self.expression(&c.consequent, name);
                self.expression(&c.alternate, name);
            }
            Expression::LogicalExpression(l) => {
                self.expression(&l.left, None);
                self.expression(&l.right, None);
            }
            Expression::BinaryExpression(b) => {
                self.expression(&b.left, None);
                self.expression(&b.right, None);
            }
            Expression::AssignmentExpression(a) => {
                let target = match &a.left {
                    AssignmentTarget::AssignmentTargetIdentifier(id) => Some(id.name.as_str()),
                    _ => None,
                };
                self.expression(&a.right, target);
            }
            Expression::SequenceExpression(s) => {
                for e in &s.expressions {
                    self.expression(e, None);
                }
            }
            Expression::TemplateLiteral(t) => {
                for e in &t.expressions {
                    self.expression(e, None);
                }
            }
            Expression::JSXElement(el) => self.jsx(el),
            _ => {}
        }
        self.depth -= 1;
    }

    fn jsx(&mut self, el: &'a JSXElement<'a>) {
        for attribute in &el.opening_element.attributes {
            if let JSXAttributeItem::Attribute(a) = attribute
                && let Some(JSXAttributeValue::ExpressionContainer(c)) = &a.value
                && let Some(e) = c.expression.as_expression()
            {
                self.expression(e, None);
            }
        }
        for child in &el.children {
            match child {
                JSXChild::Element(el) => self.jsx(el),
                JSXChild::ExpressionContainer(c) => {
                    if let Some(e) = c.expression.as_expression() {
                        self.expression(e, None);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The id a `spawn` or `spawnChild` call gives its actor, when written as
/// a literal: v4's `spawn(logic, 'id')` and `spawn(logic, { name })`, v5's
/// `spawn(logic, { id })` and `spawnChild(logic, { id })`.
fn spawned_id<'a>(call: &'a CallExpression<'a>) -> Option<&'a str> {
    if !matches!(
        super::config::callee_name(&call.callee),
        Some("spawn" | "spawnChild")
    ) {
        return None;
    }
    let options = call.arguments.get(1)?.as_expression()?;
    let id = match options.get_inner_expression() {
        Expression::StringLiteral(s) => s,
        other => match property(other, "id").or_else(|| property(other, "name"))? {
            Expression::StringLiteral(s) => s,
            _ => return None,
        },
    };
    Some(id.value.as_str())
}

/// The machine call that `.provide(...)` or `.withConfig(...)` is chained on.
fn provided_machine<'a>(call: &'a CallExpression<'a>) -> Option<&'a CallExpression<'a>> {
    let Expression::StaticMemberExpression(m) = call.callee.get_inner_expression() else {
        return None;
    };
    if !matches!(m.property.name.as_str(), "provide" | "withConfig") {
        return None;
    }
    match m.object.get_inner_expression() {
        Expression::CallExpression(inner) => Some(inner),
        _ => None,
    }
}
