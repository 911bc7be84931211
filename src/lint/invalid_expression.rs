use super::{Stage};

declare_lint! {
    /// ### What it does
    ///
    /// Reports a guard, assign or argument expression that does not parse
    /// or does not type-check (a guard that is not a bool, `+` between a
    /// number and a list, an unknown function, a payload field its event
    /// does not declare). Loading reports it, with the position inside the
    /// expression.
    ///
    /// ### Why is this bad?
    ///
    /// An expression that cannot be evaluated would fail at run time, and
    /// a failing guard counts as false, silently.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// guard: "context.cobrado >= "
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    /// guard: "context.cobrado >= context.total"
    /// ```
    code: "S007",
    severity: Error,
    stage: Stage::Load,
}
