use super::versions::{ChangeCx, ChangeFinding, expressions, field_type};
use super::{Lint, Stage, analysis};

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, flags a context field that the new
    /// machine removed or added, when no migration from the old version
    /// rebuilds the context, and a field whose type changed (the type of
    /// its initial value) while an expression of the new machine reads it,
    /// when no migration gives it a value of the new type.
    ///
    /// ### Why is this bad?
    ///
    /// Every stored process holds the context of the old version. A
    /// snapshot with a field the machine does not know, or without one it
    /// needs, is refused on restore; one whose field holds a string where
    /// the new guards compare a number makes them fail at run time, long
    /// after the deploy.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1 had `context: { total: 0 }`
    /// version: 2
    /// context: { total: "0.00" }
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// version: 2
    /// context: { total: "0.00" }
    /// migrations: [{ from: 1, context: { total: "string(context.total)" } }]
    /// ```
    code: "M002",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let (old, new) = (cx.old.machine, cx.new);
    let fix = cx.migration_fix();
    // Every stored process holds the context, from the start on.
    let witness: Vec<String> = Vec::new();
    for (name, field) in &old.context {
        let Some(now) = new.context.get(name) else {
            if cx.migration.is_some() {
                continue;
            }
            cx.report(
                Lint::ContextFieldChanged,
                ChangeFinding {
                    span: new.span,
                    message: format!(
                        "every process stored at {} holds the context field `{name}`, which {} does not have: its snapshot is refused on restore",
                        cx.old_version(),
                        cx.new_version()
                    ),
                    labels: Vec::new(),
                    help: Some(cx.migration_help("")),
                    witness: witness.clone(),
                    fix: fix.clone(),
                },
            );
            continue;
        };
        let (Some(was), Some(is)) = (field_type(&field.value), field_type(&now.value)) else {
            continue;
        };
        if was == is || cx.migration.is_some_and(|m| m.context.contains_key(name)) {
            continue;
        }
        let read = expressions(new)
            .into_iter()
            .any(|e| analysis::reads_field(e, name));
        if !read {
            continue;
        }
        cx.report(
            Lint::ContextFieldChanged,
            ChangeFinding {
                span: now.span,
                message: format!(
                    "the context field `{name}` was {} at {} and is {} at {}, and the new machine reads it: every stored process holds a value of type {} there",
                    was.as_str(),
                    cx.old_version(),
                    is.as_str(),
                    cx.new_version(),
                    was.as_str()
                ),
                labels: Vec::new(),
                help: Some(cx.migration_help(&format!(
                    "context: {{ {name}: \"EXPRESSION OVER context.{name}\" }}"
                ))),
                witness: witness.clone(),
                fix: None,
            },
        );
    }
    for (name, now) in &new.context {
        if old.context.contains_key(name) || cx.migration.is_some() {
            continue;
        }
        cx.report(
            Lint::ContextFieldChanged,
            ChangeFinding {
                span: now.span,
                message: format!(
                    "no process stored at {} holds the new context field `{name}`: its snapshot is refused on restore",
                    cx.old_version()
                ),
                labels: Vec::new(),
                help: Some(format!(
                    "{} (a field the migration does not compute takes its initial value)",
                    cx.migration_help("")
                )),
                witness: witness.clone(),
                fix: fix.clone(),
            },
        );
    }
}
