use super::{Cx, Stage};

declare_lint! {
    /// ### What it does
    ///
    /// Notes a part of an XState machine that idemchart could not translate
    /// into the machine format: a guard or action that runs JavaScript of
    /// its own (`enqueueActions`, a call of an outside function,
    /// `Date.now()`), a delay computed by a function, a config bound to a
    /// name that cannot be followed. The guard becomes a host guard and the
    /// action a host action, named by the implementation's name or
    /// `inline_LxCy` (its line and column) for one written in place. The
    /// XState front-end reports it, at note level, when it reads the file;
    /// so does the SCXML importer reading a document as written (`check`,
    /// `lint`), for a condition over a host variable (the host guard
    /// `cond_LxCy`), a `<script>` (the host action `script_LxCy`), an
    /// `<invoke>` whose service is computed, and what it leaves out.
    ///
    /// ### Why is this bad?
    ///
    /// It is not bad in itself, but the linter cannot see inside an opaque
    /// part: it treats a host guard as unknown (no identity guard, no
    /// verdict on a replay that evaluates it) and a host action as an
    /// effect of unknown idempotency (`effect-without-key`).
    ///
    /// ### Example
    ///
    /// ```ts
    /// guard: ({ context }) => context.items.some((i) => i.backordered),
    /// ```
    ///
    /// ### Use instead
    ///
    /// Write the condition in the translated subset (`docs/xstate.md`), or
    /// declare what the part does: an effect with its idempotency under
    /// `meta.idemchart.effects`. `--allow opaque-code` hides the notes.
    code: "S011",
    severity: Note,
    stage: Stage::Model(check),
}

/// The notes come from the front-ends; the loaded model has nothing
/// left to find.
fn check(_: &mut Cx) {}
