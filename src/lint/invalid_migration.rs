use super::versions::{ChangeCx, ChangeFinding, field_type};
use super::{Lint, Stage};
use crate::expr::{self, Scope};

declare_lint! {
    /// ### What it does
    ///
    /// Under `lint --baseline OLD`, checks the migration from the old
    /// version against the old machine, which loading alone does not have:
    /// every state path it maps is a state of the old machine, a leaf of the
    /// old configurations maps to a leaf (not to a state with children,
    /// which would be restored with none of them active), and every context
    /// expression type-checks against the old context (the types of its
    /// initial values) and gives the new field's type where both are known.
    ///
    /// ### Why is this bad?
    ///
    /// A mapping of a path the old machine never had moves no process: the
    /// processes in the state meant are still stranded, usually because of
    /// a typo. An expression that reads a field the old context does not
    /// have fails on every stored snapshot.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// # version 1 had `awaiting_payment` and `context: { total: 0 }`
    /// migrations:
    ///   - from: 1
    ///     states: { awaiting_paymnet: awaiting_pay }
    ///     context: { amount: "context.amount" }
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// migrations:
    ///   - from: 1
    ///     states: { awaiting_payment: awaiting_pay }
    ///     context: { amount: "context.total" }
    /// ```
    code: "M009",
    severity: Error,
    stage: Stage::Change(check),
}

fn check(cx: &mut ChangeCx) {
    let Some(migration) = cx.migration else {
        return;
    };
    let old = cx.old.machine;
    let paths: Vec<&str> = old.states.iter().skip(1).map(|s| s.path.as_str()).collect();
    for (path, target) in &migration.states {
        if let Some(state) = old.find_path(path) {
            // A snapshot lists the leaves of its configuration: a leaf that
            // becomes a compound or parallel state would be restored with
            // none of its children active, which is no configuration.
            let to = cx.new.state(target.target.state);
            if old.state(state).is_atomic() && !to.is_atomic() {
                cx.report(
                    Lint::InvalidMigration,
                    ChangeFinding {
                        span: target.target.span,
                        message: format!(
                            "the migration maps `{path}`, a leaf of the configurations of {}, to `{}`, which has children: a process restored there would have none of them active",
                            cx.old_version(),
                            target.target.text
                        ),
                        labels: Vec::new(),
                        help: crate::graph::MachineGraph::new(cx.new)
                            .default_leaves(target.target.state)
                            .first()
                            .map(|&leaf| {
                                format!(
                                    "map it to a leaf inside `{}`, such as its default `{}`",
                                    target.target.text,
                                    cx.new.state(leaf).path
                                )
                            }),
                        witness: Vec::new(),
                        fix: None,
                    },
                );
            }
            continue;
        }
        let help = crate::diagnostic::did_you_mean(path, paths.iter().copied())
            .map(|p| format!("did you mean `{p}`?"));
        cx.report(
            Lint::InvalidMigration,
            ChangeFinding {
                span: target.from_span,
                message: format!(
                    "the migration from {} maps `{path}`, which is no state of the old machine: it moves no process",
                    cx.old_version()
                ),
                labels: Vec::new(),
                help,
                witness: Vec::new(),
                fix: None,
            },
        );
    }
    let scope = Scope {
        context: old
            .context
            .iter()
            .map(|(name, field)| (name.as_str(), expr::Type::of_json(&field.value)))
            .collect(),
        // A migration runs on a snapshot: no event, no host.
        payload: Some(Vec::new()),
        guards: Vec::new(),
    };
    for (field, assignment) in &migration.context {
        let problems = expr::check(&assignment.expr, &scope);
        for problem in problems {
            cx.report(
                Lint::InvalidMigration,
                ChangeFinding {
                    span: problem.span,
                    message: format!(
                        "the migration of `{field}` does not check against the context of {}: {}",
                        cx.old_version(),
                        problem.message
                    ),
                    labels: Vec::new(),
                    help: problem.help.clone(),
                    witness: Vec::new(),
                    fix: None,
                },
            );
        }
        let wanted = cx.new.context.get(field).and_then(|f| field_type(&f.value));
        let given = expr::infer_type(&assignment.expr, &scope);
        if let (Some(wanted), Some(given)) = (wanted, given)
            && !fits(given, wanted)
        {
            cx.report(
                Lint::InvalidMigration,
                ChangeFinding {
                    span: assignment.expr.span,
                    message: format!(
                        "the migration gives `{field}` a {}, but it is a {} in {}",
                        given.as_str(),
                        wanted.as_str(),
                        cx.new_version()
                    ),
                    labels: Vec::new(),
                    help: None,
                    witness: Vec::new(),
                    fix: None,
                },
            );
        }
    }
}

/// Whether a value of type `given` may stand where `wanted` is kept: the
/// same type, numbers of either kind, or a `null` placeholder.
fn fits(given: expr::Type, wanted: expr::Type) -> bool {
    use expr::Type::{Double, Int, Null, Number};
    given == wanted
        || given == Null
        || (matches!(given, Int | Double | Number) && matches!(wanted, Int | Double | Number))
}
