use super::{Stage};

declare_lint! {
    /// ### What it does
    ///
    /// Reports a transition target, `initial`, history default or `verify`
    /// state that names no state. Loading reports it: a machine with an
    /// unknown target does not load, so `idemchart lint` shows it as a load
    /// error with its position and the closest name.
    ///
    /// ### Why is this bad?
    ///
    /// The machine cannot be built: where would the transition go?
    ///
    /// ### Example
    ///
    /// ```yaml
    /// pendiente:
    ///   on:
    ///     PAGO_CONFIRMADO: pagdo
    /// ```
    ///
    /// ### Use instead
    ///
    /// Name a sibling (`pagado`), a child (`.hijo`), a sibling's child
    /// (`pagado.enviado`) or a state's `id` (`#pagado`):
    ///
    /// ```yaml
    /// pendiente:
    ///   on:
    ///     PAGO_CONFIRMADO: pagado
    /// ```
    code: "S001",
    severity: Error,
    stage: Stage::Load,
}
