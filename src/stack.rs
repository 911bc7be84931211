//! Stack for the readers that recurse once per level of their input: pest's
//! grammars and the expression builder, serde-saphyr, oxc and the XState
//! translation. Each knows how deep its input may nest (the limits in
//! `docs/machine-format.md`) and asks here for the stack that takes; when
//! the thread has less left, the read runs on a segment allocated for it
//! (`stacker`, as rustc does), so that a machine within the limits loads on
//! any thread, also a test's or a tokio worker's 2 MiB one.
//!
//! The figures per level were measured by reading ever deeper inputs on
//! 2 and 8 MiB threads until the stack overflowed, before this module
//! existed (`fuzz/README.md`, "Stack"); they are taken with a quarter or
//! more to spare. A debug build takes several times what a release build
//! does.

/// Runs `read` with at least `bytes` of stack left: on this thread's stack
/// when it has that much, else on a fresh segment of that size.
pub(crate) fn with_stack<R>(bytes: usize, read: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(bytes, bytes, read)
}

/// What a load takes beside the levels it nests.
const BASE: usize = 256 << 10;

/// The figure for this build: an optimised one takes the release figure,
/// unless it is a fuzzing build (`cfg(fuzzing)`, which cargo-fuzz sets),
/// whose AddressSanitizer frames take several times a release build's (a
/// 195-level expression overflowed its 8 MiB main thread).
const fn by_build(debug: usize, release: usize) -> usize {
    if cfg!(any(debug_assertions, fuzzing)) {
        debug
    } else {
        release
    }
}

/// One level of brackets or `?` in an expression, or of blocks and
/// brackets in a DSL file: the grammar and the builder (measured: 123 KiB
/// in debug, 16 KiB in release).
const BRACKET_LEVEL: usize = by_build(160 << 10, 24 << 10);

/// One level of YAML nesting in serde-saphyr (measured: 42 KiB in debug,
/// under 13 KiB in release, where 1 MiB reads to the limit).
const YAML_LEVEL: usize = by_build(56 << 10, 16 << 10);

/// How deep serde-saphyr lets YAML nest.
pub(crate) const YAML_DEPTH: usize = 64;

/// One level of a script in oxc's parser (measured: 3.3 KiB in debug, for
/// object literals, the costliest construct; 1.7 KiB in release).
const SCRIPT_LEVEL: usize = by_build(5 << 10, 3 << 10);

/// One level of the JavaScript → CEL translation (measured: 14.7 KiB in
/// debug; in release a 1 MiB thread reaches the limit).
const TRANSLATE_LEVEL: usize = by_build(20 << 10, 8 << 10);

/// The stack an expression or DSL text nesting `levels` deep takes.
pub(crate) fn for_brackets(levels: u32) -> usize {
    BASE + levels as usize * BRACKET_LEVEL
}

/// The stack YAML nesting `levels` deep takes.
pub(crate) fn for_yaml(levels: usize) -> usize {
    BASE + levels * YAML_LEVEL
}

/// The stack a script takes to `levels` deep, and its translation to the
/// depth CEL expressions may have.
pub(crate) fn for_scripts(levels: u32) -> usize {
    BASE + levels as usize * SCRIPT_LEVEL + crate::expr::MAX_DEPTH as usize * TRANSLATE_LEVEL
}
