//! The DSL front-end: `*.chart` text → `MachineDoc`.
//!
//! The grammar is `grammar/chart.pest`, compiled together with the expression
//! grammar so that guards and values are parsed in place. This module only
//! builds the document tree; names, durations and kinds stay as written and the
//! lowering checks them, exactly as for YAML. `docs/dsl.md` describes the
//! language.

use pest::Parser;
use pest::iterators::Pair;
use pest_derive::Parser;

use crate::diagnostic::{Diagnostic, LoadError};
use crate::expr::ExprKind;
use crate::model::Name;
use crate::span::Span;
use crate::syntax::tree::{
    ActionDoc, ContextDoc, DedupDoc, EffectDoc, EventDoc, ExprText, HistoryDoc, InvokeDoc,
    LimitsDoc, MachineDoc, MigrationDoc, SourceDoc, StateDoc, TransitionDoc,
};

pub(crate) mod edit;
mod errors;
pub mod format;

pub use format::{format, format_with};

#[derive(Parser)]
#[grammar = "../grammar/expr.pest"]
#[grammar = "../grammar/chart.pest"]
struct ChartParser;

/// Parses a `*.chart` file into the document tree.
///
/// A syntax error stops the parse and is reported alone, at its position;
/// context values that are not literals are all reported together.
pub fn parse(text: &str) -> Result<MachineDoc, Vec<Diagnostic>> {
    // The grammar and the builder recurse per block and per bracket, so a
    // text that nests deeper than they can is refused before either runs,
    // and one within the limit is read on a stack with room for its levels.
    let levels = crate::expr::bracket_depth(text).map_err(|at| {
        vec![
            LoadError::Syntax {
                message: format!(
                    "the file is nested too deeply: more than {} levels of blocks, brackets and conditionals",
                    crate::expr::MAX_DEPTH
                ),
            }
            .at(Span::new(at, at + 1), []),
        ]
    })?;
    crate::stack::with_stack(crate::stack::for_brackets(levels), || {
        parse_within_limit(text)
    })
}

/// The words the grammar accepts at the end of `before` (a file's text up
/// to a cursor), sorted: the keywords pest expected where the text ends. Empty
/// where the text fails to parse before its end (the cursor's place is
/// then unknown), or nests too deeply to read.
pub fn keywords_at_end(before: &str) -> Vec<String> {
    // Pest collects the tokens it expected only while its error detail is
    // on, a switch of the whole process: one caller at a time turns it on
    // for one parse, and other parses meanwhile only collect more.
    static DETAIL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let Ok(levels) = crate::expr::bracket_depth(before) else {
        return Vec::new();
    };
    // A character no rule accepts stops the parse where the text ends.
    let text = format!("{before}\u{1}");
    let error = crate::stack::with_stack(crate::stack::for_brackets(levels), || {
        let _one = DETAIL.lock().unwrap_or_else(|e| e.into_inner());
        pest::set_error_detail(true);
        let parsed = ChartParser::parse(Rule::chart, &text);
        pest::set_error_detail(false);
        parsed.err()
    });
    let Some(error) = error else {
        return Vec::new();
    };
    let at_end = match error.location {
        pest::error::InputLocation::Pos(at) => at == before.len(),
        pest::error::InputLocation::Span((at, _)) => at == before.len(),
    };
    let Some(attempts) = error.parse_attempts().filter(|_| at_end) else {
        return Vec::new();
    };
    // The grammar's words are its keywords (and in an expression, its
    // literals and operators such as `true` and `in`); the other tokens are
    // punctuation.
    let mut words: Vec<String> = attempts
        .expected_tokens()
        .into_iter()
        .map(|token| token.to_string())
        .filter(|token| token.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .filter(|token| token.len() > 1)
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// The comments of a `*.chart` file, in order, and the offsets of its
/// top-level declarations that have no name of their own (the header is
/// `machine`; the others go by their YAML keys); nothing where the text does
/// not parse.
///
/// The grammar's comments are silent, so they are found between the
/// tokens: every character of the file is inside a token (a leaf of the
/// parse) or between two, and between two there is only whitespace, the
/// punctuation of silent rules, and comments.
pub(crate) fn comments(text: &str) -> (Vec<crate::syntax::comments::Found>, Vec<(u32, String)>) {
    let Ok(levels) = crate::expr::bracket_depth(text) else {
        return (Vec::new(), Vec::new());
    };
    crate::stack::with_stack(crate::stack::for_brackets(levels), || {
        let Ok(mut pairs) = ChartParser::parse(Rule::chart, text) else {
            return (Vec::new(), Vec::new());
        };
        let Some(chart) = pairs.next() else {
            return (Vec::new(), Vec::new());
        };
        let mut keys = Vec::new();
        for item in chart.clone().into_inner() {
            let decl = match item.as_rule() {
                Rule::top_item => item.into_inner().next(),
                _ => Some(item),
            };
            let Some(decl) = decl else { continue };
            let decl = match decl.as_rule() {
                Rule::state_item => match decl.into_inner().next() {
                    Some(inner) => inner,
                    None => continue,
                },
                _ => decl,
            };
            let key = match decl.as_rule() {
                Rule::header => "machine",
                Rule::semantics_decl => "semantics",
                Rule::context_block => "context",
                Rule::dedup_decl => "dedup",
                Rule::history_keep_decl => "history",
                Rule::limits_decl => "limits",
                Rule::guards_decl => "guards",
                Rule::initial_decl => "initial",
                Rule::entry_decl => "entry",
                Rule::exit_decl => "exit",
                Rule::tags_decl => "tags",
                Rule::allow_decl => "allow",
                _ => continue,
            };
            keys.push((decl.as_span().start() as u32, key.to_string()));
        }
        let mut found = Vec::new();
        let mut at = 0usize;
        for pair in chart.into_inner().flatten() {
            if pair.clone().into_inner().next().is_some() {
                continue;
            }
            let span = pair.as_span();
            if span.start() > at {
                gap_comments(text, at, span.start(), &mut found);
            }
            at = at.max(span.end());
        }
        gap_comments(text, at, text.len(), &mut found);
        (found, keys)
    })
}

/// The `// ...` comments of `text[from..to]`, a stretch between tokens.
fn gap_comments(
    text: &str,
    from: usize,
    to: usize,
    found: &mut Vec<crate::syntax::comments::Found>,
) {
    let mut at = from;
    while let Some(i) = text[at..to].find("//") {
        let start = at + i;
        let end = text[start..to].find('\n').map_or(to, |n| start + n);
        found.push(crate::syntax::comments::Found {
            start: start as u32,
            text: text[start + 2..end].trim_end_matches('\r').to_string(),
        });
        at = end;
    }
}

/// `parse` of a text whose levels stay within the limit, on a stack with
/// room for them.
fn parse_within_limit(text: &str) -> Result<MachineDoc, Vec<Diagnostic>> {
    let chart = match ChartParser::parse(Rule::chart, text) {
        Ok(mut pairs) => pairs.next(),
        Err(error) => return Err(vec![errors::syntax_error(&error, text)]),
    };
    let Some(chart) = chart else {
        return Err(vec![
            LoadError::Syntax {
                message: "the file holds no machine".into(),
            }
            .at(Span::default(), []),
        ]);
    };
    let mut builder = Builder::default();
    let doc = builder.chart(chart);
    if builder.errors.is_empty() {
        Ok(doc)
    } else {
        Err(builder.errors)
    }
}

#[derive(Default)]
struct Builder {
    errors: Vec<Diagnostic>,
}

impl Builder {
    fn chart(&mut self, chart: Pair<Rule>) -> MachineDoc {
        let mut doc = MachineDoc::default();
        let mut root = StateDoc::default();
        let mut seen = Seen::default();
        for item in chart.into_inner() {
            match item.as_rule() {
                Rule::header => self.header(item, &mut doc, &mut root),
                Rule::top_item => {
                    for decl in item.into_inner() {
                        self.top_item(decl, &mut doc, &mut root, &mut seen);
                    }
                }
                _ => {}
            }
        }
        group_transitions(&mut root);
        doc.root = root;
        doc
    }

    fn header(&mut self, header: Pair<Rule>, doc: &mut MachineDoc, root: &mut StateDoc) {
        for part in header.into_inner() {
            match part.as_rule() {
                Rule::kw_parallel => root.kind = Some(name_of(&part)),
                Rule::name => doc.name = Some(name_of(&part)),
                Rule::state_id => root.id = Some(state_id(part)),
                Rule::version => {
                    for number in part.into_inner().filter(|p| p.as_rule() == Rule::integer) {
                        match number.as_str().parse::<u64>() {
                            Ok(version) => doc.version = Some((version, span_of(&number))),
                            Err(_) => self.errors.push(
                                LoadError::InvalidValue {
                                    message: format!("version `{}` is too large", number.as_str()),
                                }
                                .at(span_of(&number), []),
                            ),
                        }
                    }
                }
                Rule::description => doc.description = self.description(part),
                _ => {}
            }
        }
    }

    fn top_item(
        &mut self,
        decl: Pair<Rule>,
        doc: &mut MachineDoc,
        root: &mut StateDoc,
        seen: &mut Seen,
    ) {
        match decl.as_rule() {
            Rule::context_block => {
                for field in decl.into_inner() {
                    if field.as_rule() == Rule::context_field
                        && let Some(context) = self.context_field(field)
                    {
                        doc.context.push(context);
                    }
                }
            }
            Rule::source_decl => {
                let mut source = SourceDoc {
                    name: Name::default(),
                    retry_horizon: None,
                    description: None,
                };
                for part in decl.into_inner() {
                    match part.as_rule() {
                        Rule::name => source.name = name_of(&part),
                        Rule::retry => source.retry_horizon = last_named(part, Rule::duration),
                        Rule::description => source.description = self.description(part),
                        _ => {}
                    }
                }
                doc.sources.push(source);
            }
            Rule::semantics_decl => {
                let span = keyword_span(&decl);
                if let Some(first) = seen.semantics {
                    self.duplicate("semantics", span, first);
                }
                seen.semantics = Some(span);
                doc.semantics = last_named(decl, Rule::name);
            }
            Rule::dedup_decl => {
                let span = keyword_span(&decl);
                if let Some(first) = seen.dedup {
                    self.duplicate("dedup", span, first);
                }
                seen.dedup = Some(span);
                let retention = decl
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::retention)
                    .and_then(|p| last_named(p, Rule::duration));
                doc.dedup = Some(DedupDoc { retention, span });
            }
            Rule::history_keep_decl => {
                let span = keyword_span(&decl);
                if let Some(first) = seen.history {
                    self.duplicate("history", span, first);
                }
                seen.history = Some(span);
                let keep = last_named(decl, Rule::duration);
                doc.history = Some(HistoryDoc { keep, span });
            }
            Rule::limits_decl => {
                let span = keyword_span(&decl);
                if let Some(first) = seen.limits {
                    self.duplicate("limits", span, first);
                }
                seen.limits = Some(span);
                let mut microsteps = None;
                for number in decl.into_inner().flat_map(|p| p.into_inner()) {
                    if number.as_rule() != Rule::integer {
                        continue;
                    }
                    match number.as_str().parse::<u64>() {
                        Ok(n) => microsteps = Some((n, span_of(&number))),
                        Err(_) => self.errors.push(
                            LoadError::InvalidValue {
                                message: format!("`{}` microsteps is too many", number.as_str()),
                            }
                            .at(span_of(&number), []),
                        ),
                    }
                }
                doc.limits = Some(LimitsDoc { microsteps, span });
            }
            Rule::migration_decl => doc.migrations.push(self.migration_decl(decl)),
            Rule::event_decl => doc.events.push(self.event_decl(decl)),
            Rule::effect_decl => {
                let mut effect = EffectDoc {
                    name: Name::default(),
                    idempotency: None,
                    verify: None,
                    description: None,
                };
                for part in decl.into_inner() {
                    match part.as_rule() {
                        Rule::name => effect.name = name_of(&part),
                        Rule::idempotency => {
                            effect.idempotency = last_named(part, Rule::idempotency_kind)
                        }
                        Rule::verify => effect.verify = last_named(part, Rule::target),
                        Rule::description => effect.description = self.description(part),
                        _ => {}
                    }
                }
                doc.effects.push(effect);
            }
            Rule::guards_decl => doc.guards.extend(
                decl.into_inner()
                    .filter(|p| p.as_rule() == Rule::name)
                    .map(|p| name_of(&p)),
            ),
            Rule::state_item => {
                for item in decl.into_inner() {
                    self.state_item(item, root, &mut seen.root_initial);
                }
            }
            _ => {}
        }
    }

    /// `migration from N { ... }`; loading checks what it says.
    fn migration_decl(&mut self, decl: Pair<Rule>) -> MigrationDoc {
        let span = keyword_span(&decl);
        let mut migration = MigrationDoc {
            from: None,
            states: Vec::new(),
            context: Vec::new(),
            timers: None,
            history: None,
            outbox: None,
            span,
        };
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::integer => match part.as_str().parse::<u64>() {
                    Ok(n) => migration.from = Some((n, span_of(&part))),
                    Err(_) => self.errors.push(
                        LoadError::InvalidValue {
                            message: format!("version `{}` is too large", part.as_str()),
                        }
                        .at(span_of(&part), []),
                    ),
                },
                Rule::migration_body => {
                    for item in part
                        .into_inner()
                        .filter(|p| p.as_rule() == Rule::migration_item)
                    {
                        let Some(item) = item.into_inner().next() else {
                            continue;
                        };
                        match item.as_rule() {
                            Rule::migration_state => {
                                let paths: Vec<Name> = item
                                    .into_inner()
                                    .filter(|p| p.as_rule() == Rule::target)
                                    .map(|p| name_of(&p))
                                    .collect();
                                if let [old, new] = &paths[..] {
                                    migration.states.push((old.clone(), new.clone()));
                                }
                            }
                            Rule::migration_context => {
                                let mut field = None;
                                let mut value = None;
                                for p in item.into_inner() {
                                    match p.as_rule() {
                                        Rule::name => field = Some(name_of(&p)),
                                        Rule::expression => value = Some(expression_text(&p)),
                                        _ => {}
                                    }
                                }
                                if let (Some(field), Some(value)) = (field, value) {
                                    migration.context.push((field, value));
                                }
                            }
                            Rule::migration_timers => {
                                migration.timers = last_named(item, Rule::carry);
                            }
                            Rule::migration_history => {
                                migration.history = last_named(item, Rule::carry);
                            }
                            Rule::migration_outbox => {
                                migration.outbox = last_named(item, Rule::carry);
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        migration
    }

    fn event_decl(&mut self, decl: Pair<Rule>) -> EventDoc {
        let mut event = EventDoc {
            name: Name::default(),
            id_field: None,
            source: None,
            payload: None,
            description: None,
        };
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::event_name => event.name = name_of(&part),
                Rule::payload => {
                    let fields = part
                        .into_inner()
                        .filter(|p| p.as_rule() == Rule::payload_field)
                        .filter_map(|field| {
                            let mut field_name = None;
                            let mut type_name = None;
                            for p in field.into_inner() {
                                match p.as_rule() {
                                    Rule::name => field_name = Some(name_of(&p)),
                                    Rule::type_name => type_name = Some(name_of(&p)),
                                    _ => {}
                                }
                            }
                            Some((field_name?, type_name?))
                        })
                        .collect();
                    event.payload = Some(fields);
                }
                Rule::id_field => event.id_field = last_named(part, Rule::name),
                Rule::event_source => event.source = last_named(part, Rule::name),
                Rule::description => event.description = self.description(part),
                _ => {}
            }
        }
        event
    }

    fn context_field(&mut self, field: Pair<Rule>) -> Option<ContextDoc> {
        let mut name = None;
        let mut value = None;
        for part in field.into_inner() {
            match part.as_rule() {
                Rule::name => name = Some(name_of(&part)),
                Rule::expression => value = self.literal(&expression_text(&part)),
                _ => {}
            }
        }
        Some(ContextDoc {
            name: name?,
            value: value?,
        })
    }

    /// A context value: an expression made of literals only, as JSON.
    fn literal(&mut self, text: &ExprText) -> Option<serde_json::Value> {
        match crate::expr::parse(&text.text, text.offset) {
            Ok(expr) => match literal_value(&expr) {
                Ok(value) => Some(value),
                Err(span) => {
                    self.errors.push(
                        LoadError::InvalidValue {
                            message: "a context value must be a literal: null, true, false, \
                                      a number, a string, a list or a map with string keys"
                                .into(),
                        }
                        .at(span, []),
                    );
                    None
                }
            },
            Err(error) => {
                self.errors.push(
                    LoadError::InvalidExpression {
                        message: error.message,
                    }
                    .at(error.span, []),
                );
                None
            }
        }
    }

    /// One item of a state body (or of the top level, for the root state).
    /// `initial_seen` remembers where `initial` was first given in this state.
    fn state_item(
        &mut self,
        item: Pair<Rule>,
        state: &mut StateDoc,
        initial_seen: &mut Option<Span>,
    ) {
        match item.as_rule() {
            Rule::state_decl | Rule::history_decl => {
                let child = self.state_decl(item);
                state.states.push(child);
            }
            Rule::initial_decl => {
                let span = keyword_span(&item);
                if let Some(first) = *initial_seen {
                    self.duplicate("initial", span, first);
                }
                *initial_seen = Some(span);
                state.initial.extend(
                    item.into_inner()
                        .filter(|p| p.as_rule() == Rule::target)
                        .map(|p| name_of(&p)),
                );
            }
            Rule::entry_decl => state.entry.extend(self.action_body(item)),
            Rule::exit_decl => state.exit.extend(self.action_body(item)),
            Rule::on_decl => state.on.push(self.transition(item)),
            Rule::always_decl => state.always.push(self.transition(item)),
            Rule::after_decl => state.after.push(self.transition(item)),
            Rule::invoke_decl => state.invoke.push(self.invocation(item)),
            Rule::tags_decl => {
                for tag in item.into_inner().filter(|p| p.as_rule() == Rule::string) {
                    if let Some(text) = self.string(&tag) {
                        state.tags.push(text);
                    }
                }
            }
            Rule::allow_decl => {
                let mut lint = None;
                let mut reason = None;
                for part in item.into_inner() {
                    match part.as_rule() {
                        Rule::lint_name => lint = Some(name_of(&part)),
                        Rule::reason => reason = self.description(part),
                        _ => {}
                    }
                }
                if let (Some(lint), Some(reason)) = (lint, reason) {
                    state.allow.push((lint, reason));
                }
            }
            _ => {}
        }
    }

    fn state_decl(&mut self, decl: Pair<Rule>) -> StateDoc {
        let mut state = StateDoc::default();
        let mut initial_seen = None;
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::state_kind => {
                    // `state` leaves the kind to be inferred from the children.
                    state.kind = part
                        .into_inner()
                        .find(|k| k.as_rule() != Rule::kw_state)
                        .map(|k| name_of(&k));
                }
                Rule::kw_history => state.kind = Some(name_of(&part)),
                Rule::name => state.key = name_of(&part),
                Rule::state_id => state.id = Some(state_id(part)),
                Rule::history_kind => state.history = Some(name_of(&part)),
                Rule::targets => state.target = targets(part),
                Rule::description => state.description = self.description(part),
                Rule::state_body => {
                    for item in part
                        .into_inner()
                        .filter(|p| p.as_rule() == Rule::state_item)
                    {
                        for inner in item.into_inner() {
                            self.state_item(inner, &mut state, &mut initial_seen);
                        }
                    }
                }
                _ => {}
            }
        }
        group_transitions(&mut state);
        state
    }

    fn invocation(&mut self, decl: Pair<Rule>) -> InvokeDoc {
        let mut invoke = InvokeDoc {
            span: trimmed_span(&decl),
            ..InvokeDoc::default()
        };
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::name => invoke.src = Some(name_of(&part)),
                Rule::arguments => invoke.input = arguments(part),
                Rule::invoke_id => invoke.id = last_named(part, Rule::name),
                Rule::invoke_body => {
                    for handler in part
                        .into_inner()
                        .filter(|p| p.as_rule() == Rule::invoke_handler)
                    {
                        let done = handler
                            .clone()
                            .into_inner()
                            .next()
                            .is_some_and(|k| k.as_rule() == Rule::kw_done);
                        let transition = self.transition(handler);
                        if done {
                            invoke.on_done.push(transition);
                        } else {
                            invoke.on_error.push(transition);
                        }
                    }
                }
                _ => {}
            }
        }
        invoke
    }

    fn transition(&mut self, decl: Pair<Rule>) -> TransitionDoc {
        let mut transition = TransitionDoc {
            span: trimmed_span(&decl),
            ..TransitionDoc::default()
        };
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::descriptor => {
                    // Patterns are joined by one space whatever separated them
                    // (newlines, comments), so the text is the YAML key's.
                    let patterns: Vec<String> = part
                        .clone()
                        .into_inner()
                        .map(|p| pattern_text(&p))
                        .collect();
                    transition.event = Some(Name {
                        text: patterns.join(" "),
                        span: trimmed_span(&part),
                    });
                }
                Rule::duration => transition.delay = Some(name_of(&part)),
                Rule::targets | Rule::handler_targets => transition.targets = targets(part),
                Rule::reenter => transition.reenter = true,
                Rule::guard => {
                    transition.guard = part
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::expression)
                        .map(|p| expression_text(&p));
                }
                Rule::description => transition.description = self.description(part),
                Rule::action_block => transition.actions = self.actions(part),
                _ => {}
            }
        }
        transition
    }

    /// The actions after `entry` or `exit`: a block or a single action.
    fn action_body(&mut self, decl: Pair<Rule>) -> Vec<ActionDoc> {
        let mut actions = Vec::new();
        for part in decl.into_inner() {
            match part.as_rule() {
                Rule::action_block => actions.extend(self.actions(part)),
                Rule::single_action => {
                    for action in part.into_inner() {
                        actions.extend(self.action(action));
                    }
                }
                _ => {}
            }
        }
        actions
    }

    /// The actions of a `{ ... }` block; a run of `field = EXPR` lines is one
    /// assign.
    fn actions(&mut self, block: Pair<Rule>) -> Vec<ActionDoc> {
        let mut actions = Vec::new();
        let mut run: Vec<(Name, ExprText)> = Vec::new();
        let mut run_span: Option<Span> = None;
        for action in block.into_inner().filter(|p| p.as_rule() == Rule::action) {
            for inner in action.into_inner() {
                if inner.as_rule() == Rule::assign_field {
                    let span = trimmed_span(&inner);
                    run_span = Some(run_span.map_or(span, |s| s.to(span)));
                    run.extend(assign_field(inner));
                    continue;
                }
                if let Some(span) = run_span.take() {
                    actions.push(ActionDoc::Assign {
                        fields: std::mem::take(&mut run),
                        span,
                    });
                }
                actions.extend(self.action(inner));
            }
        }
        if let Some(span) = run_span {
            actions.push(ActionDoc::Assign { fields: run, span });
        }
        actions
    }

    fn action(&mut self, action: Pair<Rule>) -> Option<ActionDoc> {
        let span = trimmed_span(&action);
        match action.as_rule() {
            Rule::assign_block => Some(ActionDoc::Assign {
                fields: action
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::assign_field)
                    .filter_map(assign_field)
                    .collect(),
                span,
            }),
            Rule::assign_field => Some(ActionDoc::Assign {
                fields: assign_field(action).into_iter().collect(),
                span,
            }),
            Rule::raise_action => {
                let mut event = None;
                let mut data = Vec::new();
                for part in action.into_inner() {
                    match part.as_rule() {
                        Rule::event_name => event = Some(name_of(&part)),
                        Rule::arguments => data = arguments(part),
                        _ => {}
                    }
                }
                Some(ActionDoc::Raise {
                    event: event?,
                    data,
                    span,
                })
            }
            Rule::send_action => {
                let mut event = None;
                let mut data = Vec::new();
                let mut delay = None;
                let mut id = None;
                for part in action.into_inner() {
                    match part.as_rule() {
                        Rule::event_name => event = Some(name_of(&part)),
                        Rule::arguments => data = arguments(part),
                        Rule::send_delay => delay = last_named(part, Rule::duration),
                        Rule::send_id => id = last_named(part, Rule::name),
                        _ => {}
                    }
                }
                Some(ActionDoc::Send {
                    event: event?,
                    data,
                    delay,
                    id,
                    span,
                })
            }
            Rule::cancel_action => Some(ActionDoc::Cancel {
                id: last_named(action, Rule::name)?,
                span,
            }),
            Rule::effect_action => {
                let mut name = None;
                let mut args = Vec::new();
                for part in action.into_inner() {
                    match part.as_rule() {
                        Rule::name => name = Some(name_of(&part)),
                        Rule::arguments => args = arguments(part),
                        _ => {}
                    }
                }
                Some(ActionDoc::Effect {
                    name: name?,
                    args,
                    span,
                })
            }
            Rule::log_action => {
                let expr = action
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::expression)
                    .map(|p| expression_text(&p))?;
                Some(ActionDoc::Log { expr, span })
            }
            Rule::named_action => Some(ActionDoc::Named {
                name: last_named(action, Rule::name)?,
            }),
            _ => None,
        }
    }

    /// The text of a `description` or `reason`, which hold one string.
    fn description(&mut self, pair: Pair<Rule>) -> Option<String> {
        let string = pair.into_inner().find(|p| p.as_rule() == Rule::string)?;
        self.string(&string)
    }

    /// The value of a string literal, with its escapes resolved the way the
    /// expression language resolves them.
    fn string(&mut self, pair: &Pair<Rule>) -> Option<String> {
        let offset = pair.as_span().start() as u32;
        match crate::expr::parse(pair.as_str(), offset) {
            Ok(expr) => match expr.kind {
                ExprKind::String(text) => Some(text),
                _ => None,
            },
            Err(error) => {
                self.errors.push(
                    LoadError::Syntax {
                        message: error.message,
                    }
                    .at(error.span, []),
                );
                None
            }
        }
    }

    fn duplicate(&mut self, key: &str, span: Span, first: Span) {
        self.errors.push(
            LoadError::Duplicate {
                key: key.to_string(),
                first,
            }
            .at(span, []),
        );
    }
}

/// Where single-valued items were first given, to report a second one.
#[derive(Default)]
struct Seen {
    dedup: Option<Span>,
    history: Option<Span>,
    limits: Option<Span>,
    semantics: Option<Span>,
    root_initial: Option<Span>,
}

/// Puts the transitions of one descriptor (or one delay) together, at the
/// place where it first appears: a YAML map holds each key once, so this is
/// how the same machine written in YAML orders them.
fn group_transitions(state: &mut StateDoc) {
    state.on = group_by(std::mem::take(&mut state.on), |t| {
        t.event.as_ref().map(|n| n.text.clone())
    });
    state.after = group_by(std::mem::take(&mut state.after), |t| {
        t.delay.as_ref().map(|n| n.text.clone())
    });
}

fn group_by(
    transitions: Vec<TransitionDoc>,
    key: impl Fn(&TransitionDoc) -> Option<String>,
) -> Vec<TransitionDoc> {
    let mut groups: Vec<(Option<String>, Vec<TransitionDoc>)> = Vec::new();
    for transition in transitions {
        let k = key(&transition);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, group)) => group.push(transition),
            None => groups.push((k, vec![transition])),
        }
    }
    groups.into_iter().flat_map(|(_, group)| group).collect()
}

fn assign_field(field: Pair<Rule>) -> Option<(Name, ExprText)> {
    let mut name = None;
    let mut expr = None;
    for part in field.into_inner() {
        match part.as_rule() {
            Rule::name => name = Some(name_of(&part)),
            Rule::expression => expr = Some(expression_text(&part)),
            _ => {}
        }
    }
    Some((name?, expr?))
}

fn arguments(list: Pair<Rule>) -> Vec<(Name, ExprText)> {
    list.into_inner()
        .filter(|p| p.as_rule() == Rule::argument)
        .filter_map(assign_field)
        .collect()
}

fn targets(list: Pair<Rule>) -> Vec<Name> {
    list.into_inner()
        .filter(|p| p.as_rule() == Rule::target)
        .map(|p| name_of(&p))
        .collect()
}

fn state_id(pair: Pair<Rule>) -> Name {
    pair.into_inner()
        .find(|p| p.as_rule() == Rule::segment)
        .map(|p| name_of(&p))
        .unwrap_or_default()
}

/// The name inside the last pair of `rule` among `pair`'s children.
fn last_named(pair: Pair<Rule>, rule: Rule) -> Option<Name> {
    pair.into_inner()
        .filter(|p| p.as_rule() == rule)
        .last()
        .map(|p| name_of(&p))
}

/// A name as written, without the backticks that quote it. Dotted names and
/// targets keep their dots and their leading `.` or `#`.
fn name_of(pair: &Pair<Rule>) -> Name {
    let span = trimmed_span(pair);
    Name {
        text: unquoted(pair),
        span,
    }
}

fn unquoted(pair: &Pair<Rule>) -> String {
    match pair.as_rule() {
        Rule::quoted_text | Rule::word | Rule::carry => pair.as_str().to_string(),
        Rule::name | Rule::event_word | Rule::segment | Rule::quoted | Rule::lint_name => pair
            .clone()
            .into_inner()
            .next()
            .map(|inner| unquoted(&inner))
            .unwrap_or_else(|| pair.as_str().to_string()),
        Rule::state_id => format!(
            "#{}",
            pair.clone()
                .into_inner()
                .next()
                .map(|p| unquoted(&p))
                .unwrap_or_default()
        ),
        Rule::event_name | Rule::target => {
            let parts: Vec<String> = pair.clone().into_inner().map(|p| unquoted(&p)).collect();
            let lead = if pair.as_str().starts_with('.') {
                "."
            } else {
                ""
            };
            format!("{lead}{}", parts.join("."))
        }
        _ => pair.as_str().trim().to_string(),
    }
}

fn pattern_text(pattern: &Pair<Rule>) -> String {
    match pattern.clone().into_inner().next() {
        None => "*".to_string(),
        Some(name) => {
            // `a*` is kept as written, so the lowering rejects it as YAML's `"a*"` is.
            let suffix = if pattern.as_str().ends_with(".*") {
                ".*"
            } else if pattern.as_str().ends_with('*') {
                "*"
            } else {
                ""
            };
            // A name of other characters than a plain one's is quoted as
            // a descriptor quotes it, so that its spaces do not split it.
            let name = unquoted(&name);
            if suffix != "*" && !crate::model::is_plain_event_name(&name) {
                format!("`{name}`{suffix}")
            } else {
                format!("{name}{suffix}")
            }
        }
    }
}

/// The span of the keyword that starts a declaration.
fn keyword_span(pair: &Pair<Rule>) -> Span {
    pair.clone()
        .into_inner()
        .next()
        .map(|p| span_of(&p))
        .unwrap_or_else(|| span_of(pair))
}

fn span_of(pair: &Pair<Rule>) -> Span {
    let span = pair.as_span();
    Span::new(span.start(), span.end())
}

/// The pair's span without the whitespace and comments that pest leaves at
/// the end of a rule whose last part is optional.
fn trimmed_span(pair: &Pair<Rule>) -> Span {
    let start = pair.as_span().start();
    Span::new(start, start + trimmed_len(pair))
}

/// The length of `pair`'s text up to its last token. After the last inner
/// pair only literal punctuation (`)`, `]`, `}`, `.*`, a backtick) can
/// follow, never a string, so a comment marker there really starts a comment.
fn trimmed_len(pair: &Pair<Rule>) -> usize {
    let text = pair.as_str();
    let start = pair.as_span().start();
    let base = match pair.clone().into_inner().last() {
        Some(last) => last.as_span().start() - start + trimmed_len(&last),
        None => return text.len(),
    };
    let mut end = base;
    let mut rest = text[base..].char_indices().peekable();
    while let Some((i, c)) = rest.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '/' && rest.peek().is_some_and(|&(_, n)| n == '/') {
            for (_, c) in rest.by_ref() {
                if c == '\n' {
                    break;
                }
            }
            continue;
        }
        end = base + i + c.len_utf8();
    }
    end
}

/// The exact text of an expression and where it starts in the file.
fn expression_text(pair: &Pair<Rule>) -> ExprText {
    let start = pair.as_span().start();
    ExprText {
        text: pair.as_str()[..trimmed_len(pair)].to_string(),
        offset: start as u32,
    }
}

/// The JSON value of a literal expression, or the span of its first part that
/// is not a literal.
fn literal_value(expr: &crate::expr::Expr) -> Result<serde_json::Value, Span> {
    use crate::expr::UnaryOp;
    use serde_json::Value;
    Ok(match &expr.kind {
        ExprKind::Null => Value::Null,
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::Int(n) => Value::from(*n),
        ExprKind::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or(expr.span)?,
        ExprKind::String(s) => Value::String(s.clone()),
        ExprKind::List(items) => Value::Array(
            items
                .iter()
                .map(literal_value)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        ExprKind::Map(entries) => {
            let mut map = serde_json::Map::new();
            for (key, value) in entries {
                let ExprKind::String(key) = &key.kind else {
                    return Err(key.span);
                };
                map.insert(key.clone(), literal_value(value)?);
            }
            Value::Object(map)
        }
        ExprKind::Unary(UnaryOp::Neg, operand) => match &operand.kind {
            ExprKind::Int(n) => Value::from(n.checked_neg().ok_or(expr.span)?),
            ExprKind::Float(f) => serde_json::Number::from_f64(-f)
                .map(Value::Number)
                .ok_or(expr.span)?,
            _ => return Err(expr.span),
        },
        _ => return Err(expr.span),
    })
}

#[cfg(test)]
mod tests;
