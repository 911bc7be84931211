//! Fixes written into a DSL machine file (`*.chart`): items inserted after
//! their siblings on a line of their own at the siblings' indentation,
//! clauses inserted where the grammar's fixed clause order puts them
//! (`id` after the payload, `if` after the targets), items removed with
//! their lines.
//!
//! The editor parses the file with the front-end's grammar and finds each
//! place by the span the model kept for it.

use pest::Parser;
use pest::iterators::Pair;

use crate::diagnostic::Edit;
use crate::span::Span;
use crate::syntax::edit as shared;

use super::format::{dotted, name, string, target};
use super::{ChartParser, Rule, trimmed_len};

/// A DSL file's parse tree.
pub(crate) struct DslEditor<'t> {
    text: &'t str,
    chart: Pair<'t, Rule>,
}

/// Where a pair's text starts.
fn start(pair: &Pair<Rule>) -> usize {
    pair.as_span().start()
}

/// Where a pair's text ends, before the spaces and comments pest leaves in
/// a rule whose last part is optional.
fn end(pair: &Pair<Rule>) -> usize {
    start(pair) + trimmed_len(pair)
}

/// The first pair below `pair`, depth first, that `wanted` accepts.
fn find<'t>(pair: &Pair<'t, Rule>, wanted: &dyn Fn(&Pair<Rule>) -> bool) -> Option<Pair<'t, Rule>> {
    pair.clone().into_inner().find_map(|inner| {
        if wanted(&inner) {
            Some(inner)
        } else {
            find(&inner, wanted)
        }
    })
}

/// The first direct child of `pair` whose rule is `rule`.
fn child<'t>(pair: &Pair<'t, Rule>, rule: Rule) -> Option<Pair<'t, Rule>> {
    pair.clone().into_inner().find(|p| p.as_rule() == rule)
}

/// Writes a target in the DSL, with the parts that need it quoted.
pub(crate) fn rename_target(span: Span, new: &str) -> Edit {
    Edit::new(span, target(new))
}

impl<'t> DslEditor<'t> {
    pub fn new(text: &'t str) -> Option<DslEditor<'t>> {
        let chart = ChartParser::parse(Rule::chart, text).ok()?.next()?;
        Some(DslEditor { text, chart })
    }

    /// The declarations and items of the top level, in the order written.
    fn top_items(&self) -> Vec<Pair<'t, Rule>> {
        self.chart
            .clone()
            .into_inner()
            .filter(|p| p.as_rule() == Rule::top_item)
            .filter_map(|p| p.into_inner().next())
            .collect()
    }

    /// `line` inserted after the item ending at `at`: on a line of its own
    /// at `indent` when the item ends its line, else after it on its line.
    fn after(&self, at: usize, indent: &str, line: &str) -> Edit {
        match shared::after_item(self.text, at, "//") {
            (at, true) => Edit::insert(at, format!("\n{indent}{line}")),
            (at, false) => Edit::insert(at, format!(" {line}")),
        }
    }

    /// `lines` inserted before the top-level item `item`, above the comments
    /// about it, followed by a blank line; inline when it shares its line.
    fn before(&self, item: &Pair<Rule>, lines: &str) -> Edit {
        let at = start(item);
        if shared::starts_line(self.text, at) {
            Edit::insert(
                shared::above_comments(self.text, at, "//"),
                format!("{lines}\n\n"),
            )
        } else {
            Edit::insert(at, format!("{} ", lines.replace('\n', " ")))
        }
    }

    /// A new top-level item: after the last top-level item whose rule is
    /// `after` when there is one, else before the first whose rule is in
    /// `before`, else at the end.
    fn top_level(&self, line: &str, after: Rule, before: &[Rule]) -> Edit {
        let items = self.top_items();
        let kind = |p: &Pair<Rule>| p.as_rule();
        if let Some(last) = items.iter().rev().find(|p| kind(p) == after) {
            let indent = shared::indentation(self.text, start(last));
            return self.after(end(last), indent, line);
        }
        if let Some(first) = items.iter().find(|p| before.contains(&kind(p))) {
            return self.before(first, line);
        }
        let last_end = items
            .last()
            .or(child(&self.chart, Rule::header).as_ref())
            .map_or(self.text.len(), end);
        Edit::insert(last_end, format!("\n\n{line}"))
    }

    /// The transition whose text starts at `at`.
    fn transition(&self, at: usize) -> Option<Pair<'t, Rule>> {
        find(&self.chart, &|p| {
            matches!(
                p.as_rule(),
                Rule::on_decl | Rule::always_decl | Rule::after_decl
            ) && start(p) == at
        })
    }
}

impl shared::Editor for DslEditor<'_> {
    fn replace_duration(&self, span: Span, duration: &str) -> Option<Edit> {
        Some(Edit::new(span, duration))
    }

    fn declare_event(&self, event: &str) -> Option<Vec<Edit>> {
        let line = format!("event {}", dotted(event));
        let before = [Rule::effect_decl, Rule::guards_decl, Rule::state_item];
        Some(vec![self.top_level(&line, Rule::event_decl, &before)])
    }

    fn remove_allow(&self, lint: Span, _all_of_state: bool) -> Option<Vec<Edit>> {
        // Each `allow` is an item of its own: removing every one removes all.
        let decl = find(&self.chart, &|p| {
            p.as_rule() == Rule::allow_decl
                && child(p, Rule::lint_name).is_some_and(|n| start(&n) == lint.start as usize)
        })?;
        let span = shared::removal(self.text, start(&decl), end(&decl), "//");
        Some(vec![Edit::delete(span)])
    }

    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>> {
        let decl = find(&self.chart, &|p| {
            p.as_rule() == Rule::event_decl
                && child(p, Rule::event_name).is_some_and(|n| start(&n) == event.start as usize)
        })?;
        if child(&decl, Rule::id_field).is_some() {
            return None;
        }
        // The grammar's order: name, payload, `id`, `from`, description.
        let before = child(&decl, Rule::payload).or_else(|| child(&decl, Rule::event_name))?;
        Some(vec![Edit::insert(
            end(&before),
            format!(" id {}", name(field)),
        )])
    }

    fn add_context_list(&self, field: &str) -> Option<Vec<Edit>> {
        let field = format!("{} = []", name(field));
        let items = self.top_items();
        let Some(context) = items
            .iter()
            .rev()
            .find(|p| p.as_rule() == Rule::context_block)
        else {
            let block = format!("context {{\n  {field}\n}}");
            let edit = match items.first() {
                Some(first) => self.before(first, &block),
                None => self.top_level(&block, Rule::context_block, &[]),
            };
            return Some(vec![edit]);
        };
        let fields: Vec<Pair<Rule>> = context
            .clone()
            .into_inner()
            .filter(|p| p.as_rule() == Rule::context_field)
            .collect();
        let edit = match fields.last() {
            Some(last) => {
                let indent = shared::indentation(self.text, start(last));
                self.after(end(last), indent, &field)
            }
            None => Edit::insert(end(&child(context, Rule::open)?), format!(" {field} ")),
        };
        Some(vec![edit])
    }

    fn add_guard(&self, transition: Span, test: &str) -> Option<Vec<Edit>> {
        let decl = self.transition(transition.start as usize)?;
        if let Some(guard) = child(&decl, Rule::guard) {
            let expr = child(&guard, Rule::expression)?;
            let (from, to) = (start(&expr), end(&expr));
            let old = &self.text[from..to];
            return Some(vec![Edit::new(
                Span::new(from, to),
                format!("{test} && ({old})"),
            )]);
        }
        // The grammar's order: trigger, targets, `reenter`, `if`, description.
        let last = decl
            .clone()
            .into_inner()
            .filter(|p| {
                matches!(
                    p.as_rule(),
                    Rule::kw_on
                        | Rule::kw_always
                        | Rule::kw_after
                        | Rule::descriptor
                        | Rule::duration
                        | Rule::targets
                        | Rule::reenter
                )
            })
            .last()?;
        Some(vec![Edit::insert(end(&last), format!(" if {test}"))])
    }

    fn add_assign_field(&self, field: Span, new: &str, expr: &str) -> Option<Vec<Edit>> {
        let at = field.start as usize;
        let is_field = |p: &Pair<Rule>| {
            p.as_rule() == Rule::assign_field
                && child(p, Rule::name).is_some_and(|n| start(&n) == at)
        };
        // The assign's last field: the last of an `assign { ... }` block, or
        // the last of the run of `f = E` lines the field is in.
        let holder = find(&self.chart, &|p| {
            matches!(p.as_rule(), Rule::assign_block | Rule::action_block)
                && p.clone().into_inner().any(|c| {
                    is_field(&c)
                        || (c.as_rule() == Rule::action
                            && child(&c, Rule::assign_field).is_some_and(|f| is_field(&f)))
                })
        })?;
        let last = if holder.as_rule() == Rule::assign_block {
            holder
                .clone()
                .into_inner()
                .filter(|p| p.as_rule() == Rule::assign_field)
                .last()?
        } else {
            let fields: Vec<Option<Pair<Rule>>> = holder
                .clone()
                .into_inner()
                .filter(|p| p.as_rule() == Rule::action)
                .map(|a| child(&a, Rule::assign_field))
                .collect();
            let i = fields
                .iter()
                .position(|f| f.as_ref().is_some_and(is_field))?;
            fields[i..].iter().map_while(Option::as_ref).last()?.clone()
        };
        let indent = shared::indentation(self.text, start(&last));
        let line = format!("{} = {expr}", name(new));
        Some(vec![self.after(end(&last), indent, &line)])
    }

    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>> {
        let line = format!("allow {lint} {}", string(reason));
        let Some(key) = state else {
            // At the top level, before the first state, where the format
            // writes the root's items.
            let items = self.top_items();
            let first_state = items.iter().find(|p| {
                p.as_rule() == Rule::state_item
                    && Pair::clone(p).into_inner().next().is_some_and(|i| {
                        matches!(i.as_rule(), Rule::state_decl | Rule::history_decl)
                    })
            });
            return Some(vec![match first_state {
                Some(item) => self.before(item, &line),
                None => self.top_level(&line, Rule::state_item, &[]),
            }]);
        };
        let decl = find(&self.chart, &|p| {
            matches!(p.as_rule(), Rule::state_decl | Rule::history_decl)
                && child(p, Rule::name).is_some_and(|n| start(&n) == key.start as usize)
        })?;
        let indent = shared::indentation(self.text, start(&decl));
        let Some(body) = child(&decl, Rule::state_body) else {
            return Some(vec![Edit::insert(end(&decl), format!(" {{ {line} }}"))]);
        };
        let open = child(&body, Rule::open)?;
        let items: Vec<Pair<Rule>> = body
            .clone()
            .into_inner()
            .filter(|p| p.as_rule() == Rule::state_item)
            .collect();
        // After the state's own items, before its child states.
        let own = items.iter().take_while(|p| {
            Pair::clone(p)
                .into_inner()
                .next()
                .is_some_and(|i| !matches!(i.as_rule(), Rule::state_decl | Rule::history_decl))
        });
        let inner = match items.first() {
            Some(first) => shared::indentation(self.text, start(first)).to_string(),
            None => format!("{indent}  "),
        };
        Some(vec![match own.last() {
            Some(last) => self.after(end(last), &inner, &line),
            None => self.after(end(&open), &inner, &line),
        }])
    }

    fn set_version(&self, version: u64) -> Option<Vec<Edit>> {
        let header = child(&self.chart, Rule::header)?;
        if let Some(written) = child(&header, Rule::version) {
            let number = child(&written, Rule::integer)?;
            return Some(vec![Edit::new(
                Span::new(start(&number), end(&number)),
                version.to_string(),
            )]);
        }
        // `version` comes after the name and the root's id in the header.
        let before = child(&header, Rule::state_id).or_else(|| child(&header, Rule::name))?;
        Some(vec![Edit::insert(
            end(&before),
            format!(" version {version}"),
        )])
    }

    fn add_migration(
        &self,
        from: u64,
        states: &[(String, String)],
        context: &[(String, String)],
    ) -> Option<Vec<Edit>> {
        if self
            .top_items()
            .iter()
            .any(|p| p.as_rule() == Rule::migration_decl)
        {
            return None;
        }
        let mut body: Vec<String> = states
            .iter()
            .map(|(old, new)| format!("  state {} -> {}", target(old), target(new)))
            .collect();
        body.extend(
            context
                .iter()
                .map(|(field, expr)| format!("  context {} = {expr}", name(field))),
        );
        // As the printer writes a block: one short item on the head's line.
        let head = format!("migration from {from}");
        let lines = match body.as_slice() {
            [] => head,
            [one] if head.len() + one.trim_start().len() + 6 <= super::format::INLINE_WIDTH => {
                format!("{head} {{ {} }}", one.trim_start())
            }
            _ => format!("{head} {{\n{}\n}}", body.join("\n")),
        };
        // Where the printer puts migrations: after the declarations, before
        // the root state's items.
        Some(vec![self.top_level(
            &lines,
            Rule::migration_decl,
            &[Rule::state_item],
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::tests::{edited, span_of};
    use crate::syntax::edit::Editor;

    #[test]
    fn declares_events_after_the_others_or_before_the_states() {
        let text = "machine m\n\nevent A id a // first\n\nstate s\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("B")),
            "machine m\n\nevent A id a // first\nevent B\n\nstate s\n"
        );
        let text = "machine m\n\n// the states\nstate s\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.declare_event("final.ok")),
            "machine m\n\nevent `final`.ok\n\n// the states\nstate s\n"
        );
    }

    #[test]
    fn sets_the_version_and_declares_a_migration() {
        let text = "machine m #top \"text\"\n\nstate a\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.set_version(2)),
            "machine m #top version 2 \"text\"\n\nstate a\n"
        );
        let text = "machine m version 1\n\nguards ok\n\ninitial a\nstate a\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.set_version(3)),
            "machine m version 3\n\nguards ok\n\ninitial a\nstate a\n"
        );
        let states = [("old".to_string(), "a".to_string())];
        assert_eq!(
            edited(text, editor.add_migration(1, &states, &[])),
            "machine m version 1\n\nguards ok\n\nmigration from 1 { state old -> a }\n\ninitial a\nstate a\n"
        );
        let text = "machine m version 2\nmigration from 1\nstate a\n";
        let editor = DslEditor::new(text).unwrap();
        assert!(editor.add_migration(1, &[], &[]).is_none());
    }

    #[test]
    fn adds_an_allow_after_the_states_own_items() {
        let text = "machine m\ninitial s\nstate s {\n  on E -> t\n  state c\n}\nstate t\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(
                text,
                editor.add_allow(Some(span_of(text, "s {")), "x-y", "why")
            ),
            "machine m\ninitial s\nstate s {\n  on E -> t\n  allow x-y \"why\"\n  state c\n}\nstate t\n"
        );
        // A state without a body gets one; the top level gets the item
        // before its first state.
        assert_eq!(
            edited(
                text,
                editor.add_allow(
                    Some(Span::new(text.rfind('t').unwrap(), text.len() - 1)),
                    "x-y",
                    "why"
                )
            ),
            "machine m\ninitial s\nstate s {\n  on E -> t\n  state c\n}\nstate t { allow x-y \"why\" }\n"
        );
        assert_eq!(
            edited(text, editor.add_allow(None, "x-y", "why")),
            "machine m\ninitial s\nallow x-y \"why\"\n\nstate s {\n  on E -> t\n  state c\n}\nstate t\n"
        );
    }

    #[test]
    fn removes_an_allow_with_its_line() {
        let text = "machine m\nstate s {\n  allow unreachable-state \"x\" // old\n  on E -> s\n}\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(
                text,
                editor.remove_allow(span_of(text, "unreachable"), false)
            ),
            "machine m\nstate s {\n  on E -> s\n}\n"
        );
        let text = "machine m\nstate s { allow unreachable-state \"x\" on E -> s }\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(
                text,
                editor.remove_allow(span_of(text, "unreachable"), false)
            ),
            "machine m\nstate s { on E -> s }\n"
        );
    }

    #[test]
    fn adds_clauses_in_the_grammar_order() {
        let text = "machine m\nevent E(orderId: string) from s \"x\"\nevent F\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.add_event_id(span_of(text, "E("), "orderId")),
            "machine m\nevent E(orderId: string) id orderId from s \"x\"\nevent F\n"
        );
        let text = "machine m\nstate s {\n  on E -> s reenter \"text\" {\n    n = context.n + 1\n    m = 1\n    log \"x\"\n  }\n  on F if context.ok { n = 2 }\n}\n";
        let editor = DslEditor::new(text).unwrap();
        let e = span_of(text, "on E");
        assert_eq!(
            edited(text, editor.add_guard(e, "!(event.k in context.seen)")),
            text.replace(
                "reenter \"text\"",
                "reenter if !(event.k in context.seen) \"text\""
            )
        );
        let f = span_of(text, "on F");
        assert_eq!(
            edited(text, editor.add_guard(f, "!(event.k in context.seen)")),
            text.replace(
                "if context.ok",
                "if !(event.k in context.seen) && (context.ok)"
            )
        );
        let n = span_of(text, "n = context");
        assert_eq!(
            edited(
                text,
                editor.add_assign_field(n, "seen", "context.seen + [event.k]")
            ),
            text.replace("m = 1\n", "m = 1\n    seen = context.seen + [event.k]\n")
        );
        let n2 = span_of(text, "n = 2");
        assert_eq!(
            edited(text, editor.add_assign_field(n2, "seen", "[]")),
            text.replace("n = 2 }", "n = 2 seen = [] }")
        );
    }

    #[test]
    fn adds_to_an_assign_block() {
        let text = "machine m\nstate s {\n  on E {\n    assign {\n      n = context.n + 1\n    }\n    log \"x\"\n  }\n}\n";
        let editor = DslEditor::new(text).unwrap();
        let n = span_of(text, "n = context");
        assert_eq!(
            edited(
                text,
                editor.add_assign_field(n, "seen", "context.seen + [event.k]")
            ),
            text.replace("n + 1\n", "n + 1\n      seen = context.seen + [event.k]\n")
        );
    }

    #[test]
    fn adds_context_fields_to_the_block_or_a_new_one() {
        let text = "machine m\ncontext {\n  n = 0\n}\nstate s\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.add_context_list("seen")),
            "machine m\ncontext {\n  n = 0\n  seen = []\n}\nstate s\n"
        );
        let text = "machine m\n\nstate s\n";
        let editor = DslEditor::new(text).unwrap();
        assert_eq!(
            edited(text, editor.add_context_list("seen")),
            "machine m\n\ncontext {\n  seen = []\n}\n\nstate s\n"
        );
    }
}
