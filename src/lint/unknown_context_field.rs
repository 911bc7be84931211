use super::{Stage};

declare_lint! {
    /// ### What it does
    ///
    /// Reports an expression or an `assign` that names a field missing from
    /// `context`. Loading reports it, with the closest field name.
    ///
    /// ### Why is this bad?
    ///
    /// The context is declared whole, with initial values, so that
    /// snapshots and the analysis know every field. A misspelt field would
    /// otherwise read as missing at run time.
    ///
    /// ### Example
    ///
    /// ```yaml
    /// context: { cobrado: 0 }
    /// ...
    ///       - assign: { cobrdo: "context.cobrado + event.importe" }
    /// ```
    ///
    /// ### Use instead
    ///
    /// ```yaml
    ///       - assign: { cobrado: "context.cobrado + event.importe" }
    /// ```
    code: "S008",
    severity: Error,
    stage: Stage::Load,
}
